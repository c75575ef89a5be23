"""Benchmark fixtures: the device, the sizes, and the machine facts saved with
every run (GPU name, torch, CUDA)."""

from __future__ import annotations

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# Large enough to stream from memory: 2^28 elements (1 GiB per fp32 tensor)
# on a GPU, 2^24 on a CPU.
LARGE = 1 << 28 if DEVICE == "cuda" else 1 << 24
SMALL = 1 << 12  # host-bound: the cost of a call


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info["torch"] = torch.__version__
    machine_info["cuda"] = torch.version.cuda
    machine_info["device"] = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu"
    machine_info["torch_threads"] = torch.get_num_threads()


@pytest.fixture(autouse=True)
def _no_tf32():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
