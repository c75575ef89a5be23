"""A DDP training run of kernforge.nn.LLTM stepped over a sequence ("cell")
or of kernforge.nn.LLTMSequence ("sequence"), for tests/hardening/test_ddp.py:
one process per GPU (NCCL, "cuda"), processes sharing GPU 0 (Gloo, which
NCCL refuses: "one-gpu"), or processes on the CPU (Gloo, "cpu"):

    python -m torch.distributed.run --standalone --nproc-per-node=N \
        ddp_lltm.py OUT.pt {cell,sequence} {cuda,one-gpu,cpu}

Every process runs the same global batches; each takes its 1/N of the rows,
so the averaged gradients, and with them every step, match a run in one
process. Rank 0 saves the loss of every step, the last step's gradients, the
final parameters, and for each rank the kernforge ops its last step ran and
the GPUs its kernforge kernels ran on."""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from torch.autograd import DeviceType
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity
from torch.utils._python_dispatch import TorchDispatchMode

import kernforge

BATCH, FEATURES, STATE, STEPS, SEQ = 64, 24, 48, 60, 6


class Model(torch.nn.Module):
    """An LLTM over a sequence, then a linear readout of the last state (of
    both directions' for the sequence layer, whose reverse direction runs on
    a side stream on GPUs: DDP's gradient hooks then see gradients made on
    two streams)."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        if kind == "cell":
            self.cell = kernforge.nn.LLTM(FEATURES, STATE)
        else:
            self.sequence = kernforge.nn.LLTMSequence(FEATURES, STATE, bidirectional=True)
        self.readout = torch.nn.Linear(STATE if kind == "cell" else 2 * STATE, 1)

    def forward(self, xs):
        if self.kind == "cell":
            h = xs.new_zeros(xs.shape[1], STATE)
            c = xs.new_zeros(xs.shape[1], STATE)
            for x in xs:
                h, c = self.cell(x, (h, c))
        else:
            _, (h_n, _) = self.sequence(xs)
            h = torch.cat([h_n[0], h_n[1]], dim=1)
        return self.readout(h).squeeze(1)


def _last_step_on_gpus(model, xs) -> dict:
    """The kernforge ops a training step ran, and the GPUs their kernels ran on."""
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        model(xs).sum().backward()
        torch.cuda.synchronize()
    events = prof.events()
    return {
        "ops": sorted({e.name for e in events if e.name.startswith("kernforge::")}),
        "gpus": sorted(
            {e.device_index for e in events if e.device_type == DeviceType.CUDA and "kernforge" in e.name}
        ),
    }


class _Ops(TorchDispatchMode):
    """Collects the name of every op dispatched on this thread (a CPU
    backward runs on the thread that calls it)."""

    def __init__(self):
        super().__init__()
        self.names = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func._schema.name)
        return func(*args, **(kwargs or {}))


def _last_step_on_cpu(model, xs) -> dict:
    """The kernforge ops a training step ran, read at dispatch: torch 2.15's
    profiler, on a machine without a GPU, sometimes aborted a rank as it
    stopped ("terminate called without an active exception")."""
    with _Ops() as ops:
        model(xs).sum().backward()
    return {"ops": sorted(n for n in ops.names if n.startswith("kernforge::")), "gpus": []}


def main(out: str, kind: str, where: str) -> None:
    cuda = where in ("cuda", "one-gpu")
    dist.init_process_group("nccl" if where == "cuda" else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ["LOCAL_RANK"]) if where == "cuda" else 0
    if cuda:
        torch.cuda.set_device(local)
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    model = DistributedDataParallel(Model(kind).to(device), device_ids=[local] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    data = torch.Generator().manual_seed(1)  # the same global batches on every rank
    rows = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
    losses = []
    for _ in range(STEPS):
        xs = torch.randn(SEQ, BATCH, FEATURES, generator=data)
        target = torch.tanh(xs.sum(dim=(0, 2)) / 4)  # something the model can learn
        xs, target = xs[:, rows].to(device), target[rows].to(device)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xs), target)
        loss.backward()
        last_grads = {n: p.grad.detach().clone() for n, p in model.module.named_parameters()}
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(total.item() / world)
    ran = _last_step_on_gpus(model, xs) if cuda else _last_step_on_cpu(model, xs)
    gathered = [None] * world
    dist.all_gather_object(gathered, ran)
    if rank == 0:
        torch.save(
            {
                "world_size": world,
                "losses": losses,
                "grads": {n: g.cpu() for n, g in last_grads.items()},
                "params": {n: p.detach().cpu() for n, p in model.module.named_parameters()},
                "ranks": gathered,
            },
            out,
        )
    if not cuda:
        # torch 2.15's Gloo teardown sometimes aborted a rank at exit ("terminate
        # called without an active exception") after the results were saved: the
        # ranks wait for rank 0's file and leave without tearing the group down.
        dist.barrier()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:4])
