"""Two GPUs: every op runs on its tensors' device whichever device is
current (the kernels' device guard), inputs on two devices get a clear error,
and a DDP training run of kernforge.nn.LLTM on two GPUs (torchrun, NCCL)
matches the same run on one GPU step by step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import kernforge
from conftest import close
from every_op import OPS, forward_backward, inputs, leaves
from kernforge import reference

pytestmark = [pytest.mark.cuda, pytest.mark.multi_gpu]

DDP_SCRIPT = Path(__file__).with_name("ddp_lltm.py")


def _our_kernels(fn) -> list[tuple[str, int]]:
    """(name, device index) of every kernforge kernel `fn` launches."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)
    return [
        (e.name, e.device_index)
        for e in prof.events()
        if e.device_type == DeviceType.CUDA and ("kernforge" in e.name or "RoundSTE" in e.name)
    ]


@pytest.mark.parametrize("current,target", [(0, 1), (1, 0)])
@pytest.mark.parametrize("op", OPS)
def test_runs_on_the_tensors_device(op, current, target):
    gen = torch.Generator(device=f"cuda:{target}").manual_seed(0)
    args = inputs(op, gen, device=f"cuda:{target}")
    expected = forward_backward(reference, op, leaves(args))
    with torch.cuda.device(current):
        forward_backward(kernforge, op, leaves(args))  # warm-up: cuBLAS handles, profiler
        got = []
        kernels = _our_kernels(lambda: got.extend(forward_backward(kernforge, op, leaves(args))))
        assert torch.cuda.current_device() == current, "the op left another device current"
    assert kernels, "the profiler saw no kernforge kernel"
    assert {device for _, device in kernels} == {target}, kernels
    for g, e in zip(got, expected, strict=True):
        assert g.device == torch.device("cuda", target)
        close(g, e, rtol=1e-4, atol=1e-4)


MIXED = {
    "mul": lambda a, b: kernforge.mul(a, b),
    "add": lambda a, b: kernforge.add(a, b),
    "fused_relu_add": lambda a, b: kernforge.fused_relu_add(a, b),
    "fused_relu_add bias": lambda a, b: kernforge.fused_relu_add(a, a.clone(), b[0]),
}


@pytest.mark.parametrize("case", MIXED)
def test_mixed_devices_are_refused(case):
    a = torch.randn(4, 5, device="cuda:0")
    b = torch.randn(4, 5, device="cuda:1")
    with pytest.raises(RuntimeError, match="expected all tensors on one device") as info:
        MIXED[case](a, b)
    assert "cuda:0" in str(info.value) and "cuda:1" in str(info.value)


@pytest.mark.parametrize("moved", ["x", "W", "b", "h", "c"])
def test_lltm_mixed_devices_are_refused(moved):
    gen = torch.Generator(device="cuda:0").manual_seed(2)
    args = dict(zip("x W b h c".split(), inputs("lltm", gen, device="cuda:0"), strict=True))
    args[moved] = args[moved].to("cuda:1")
    with pytest.raises(RuntimeError, match="expected all tensors on one device") as info:
        kernforge.lltm(*args.values())
    assert "cuda:1" in str(info.value)


def _train(nproc: int, out: Path, kind: str) -> dict:
    env = dict(os.environ)
    # NVLink multicast stays off (the hosts' GPUs are shared; see KINDS of the GPU host).
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               str(DDP_SCRIPT), str(out), kind]  # fmt: skip
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (
        f"torchrun with {nproc} processes failed:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    )
    return torch.load(out)


@pytest.mark.parametrize("kind", ["cell", "sequence"])
def test_ddp_on_two_gpus_matches_one(tmp_path, kind):
    # "sequence": kernforge.nn.LLTMSequence, its rows split over the ranks.
    one = _train(1, tmp_path / "one.pt", kind)
    two = _train(2, tmp_path / "two.pt", kind)
    assert two["world_size"] == 2 and one["world_size"] == 1
    assert two["kernels_on"] == [0, 1], "each rank must run the kernforge kernels on its own GPU"
    losses_one, losses_two = torch.tensor(one["losses"]), torch.tensor(two["losses"])
    assert losses_one[-1] < 0.7 * losses_one[0], "the run did not learn: nothing to compare"
    torch.testing.assert_close(losses_two, losses_one, rtol=1e-4, atol=1e-6)
    for name in one["grads"]:
        torch.testing.assert_close(two["grads"][name], one["grads"][name], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(two["params"][name], one["params"][name], rtol=1e-4, atol=1e-6)
