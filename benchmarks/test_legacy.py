"""kernforge-legacy's TH/THC calls from C, against the torch call that does
the same, in one process: THCudaBlas_Sgemm (THFloatBlas_gemm on the CPU) at
4096^3 (1024^3 on the CPU) against torch.mm, and the official example's
THCudaTensor_cadd (THFloatTensor_cadd) at 2^26 elements (2^24) into a
preallocated output against torch.add(out=). fp32, TF32 off."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from conftest import DEVICE

SRC = Path(__file__).parent / "legacy"
CUDA = DEVICE == "cuda"
GEMM = 4096 if CUDA else 1024
ADD = 1 << 26 if CUDA else 1 << 24


@pytest.fixture(scope="module")
def th(tmp_path_factory):
    from kernforge_legacy import ffi

    root = tmp_path_factory.mktemp("bench_th")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TORCH_EXTENSIONS_DIR", str(root / "cache"))
        ext = ffi.create_extension(
            "bench_th",
            headers=[SRC / "bench_th.h", *([SRC / "bench_th_cuda.h"] if CUDA else [])],
            sources=[SRC / "bench_th.c", *([SRC / "bench_th_cuda.c"] if CUDA else [])],
            with_cuda=CUDA,
            relative_to=str(root / "build.py"),
            verbose=False,
        )
        package = ext.build()
    spec = importlib.util.spec_from_file_location("bench_th", package / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rand(*shape, seed):
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    return torch.randn(*shape, device=DEVICE, generator=gen)


def _suffix(name):
    return name + ("_cuda" if CUDA else "")


@pytest.mark.parametrize("impl", ["kernforge", "eager"])
def test_legacy_sgemm(benchmark, th, impl):
    a, b = _rand(GEMM, GEMM, seed=0) * GEMM**-0.5, _rand(GEMM, GEMM, seed=1)
    c = torch.empty(GEMM, GEMM, device=DEVICE)
    gemm = getattr(th, _suffix("sgemm"))
    call = (lambda: gemm(c, a, b)) if impl == "kernforge" else (lambda: torch.mm(a, b, out=c))
    call()
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)  # the timed call computes the product
    benchmark.extra_info.update(
        case="legacy_sgemm", impl=impl, dtype="float32", n=GEMM**3, size=f"{GEMM}^3", bytes=0, device=DEVICE
    )
    benchmark.pedantic(call, rounds=20, iterations=3 if CUDA else 1, warmup_rounds=3)


@pytest.mark.parametrize("impl", ["kernforge", "eager"])
def test_legacy_cadd(benchmark, th, impl):
    a, b = _rand(ADD, seed=2), _rand(ADD, seed=3)
    out = torch.empty(ADD, device=DEVICE)
    cadd = getattr(th, _suffix("cadd"))
    call = (lambda: cadd(out, a, b)) if impl == "kernforge" else (lambda: torch.add(a, b, out=out))
    call()
    torch.testing.assert_close(out, a + b)
    benchmark.extra_info.update(
        case="legacy_cadd", impl=impl, dtype="float32", n=ADD, size=f"2^{ADD.bit_length() - 1}",
        bytes=3 * 4 * ADD, device=DEVICE,
    )  # fmt: skip
    benchmark.pedantic(call, rounds=30, iterations=10 if CUDA else 2, warmup_rounds=3)
