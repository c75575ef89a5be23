"""DistributedDataParallel training of kernforge.nn.LLTM (stepped over a
sequence) and of kernforge.nn.LLTMSequence, run by torchrun (ddp_lltm.py):
two processes, each on its half of every batch, train as one process does on
the whole batch, step by step. On the CPU over Gloo (in `nox -s test-cpu`),
on two GPUs over NCCL (where two GPUs are present), and on one GPU that both
processes share, over Gloo (the CUDA kernels and DDP's gradient hooks on
CUDA tensors, without NCCL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

DDP_SCRIPT = Path(__file__).with_name("ddp_lltm.py")

# The ops a training step of each model runs (forward and backward).
OPS = {
    "cell": {"kernforge::lltm_forward", "kernforge::lltm_backward"},
    "sequence": {"kernforge::lltm_sequence_forward", "kernforge::lltm_sequence_backward"},
}


def _train(nproc: int, out: Path, kind: str, where: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # NVLink multicast stays off (the hosts' GPUs are shared; see KINDS of the GPU host).
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               str(DDP_SCRIPT), str(out), kind, where]  # fmt: skip
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (
        f"torchrun with {nproc} processes failed:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    )
    return torch.load(out)


def _two_match_one(tmp_path: Path, kind: str, where: str) -> dict:
    one = _train(1, tmp_path / "one.pt", kind, where)
    two = _train(2, tmp_path / "two.pt", kind, where)
    assert two["world_size"] == 2 and one["world_size"] == 1
    for rank in two["ranks"]:
        assert OPS[kind] <= set(rank["ops"]), f"a rank did not run the kernforge ops: {rank['ops']}"
    losses_one, losses_two = torch.tensor(one["losses"]), torch.tensor(two["losses"])
    assert losses_one[-1] < 0.7 * losses_one[0], "the run did not learn: nothing to compare"
    torch.testing.assert_close(losses_two, losses_one, rtol=1e-4, atol=1e-6)
    for name in one["grads"]:
        torch.testing.assert_close(two["grads"][name], one["grads"][name], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(two["params"][name], one["params"][name], rtol=1e-4, atol=1e-6)
    return two


@pytest.mark.parametrize("kind", ["cell", "sequence"])
def test_ddp_on_two_cpu_processes_matches_one(tmp_path, kind):
    two = _two_match_one(tmp_path, kind, "cpu")
    assert all(rank["gpus"] == [] for rank in two["ranks"])


@pytest.mark.cuda
@pytest.mark.multi_gpu
@pytest.mark.parametrize("kind", ["cell", "sequence"])
def test_ddp_on_two_gpus_matches_one(tmp_path, kind):
    # "sequence": kernforge.nn.LLTMSequence, its rows split over the ranks.
    two = _two_match_one(tmp_path, kind, "cuda")
    assert [rank["gpus"] for rank in two["ranks"]] == [[0], [1]], (
        "each rank must run the kernforge kernels on its own GPU"
    )


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["cell", "sequence"])
def test_ddp_on_two_processes_sharing_one_gpu_matches_one(tmp_path, kind):
    two = _two_match_one(tmp_path, kind, "one-gpu")
    assert [rank["gpus"] for rank in two["ranks"]] == [[0], [0]]
