"""The LLTM cell, forward + backward of (h'.sum() + c'.sum()), fp32, TF32
off: kernforge against eager PyTorch (kernforge.reference.lltm) and
torch.compile of it, in one process. kernforge is timed where its LLTM
kernels exist for the device (CPU today)."""

from __future__ import annotations

import functools

import pytest
import torch

import kernforge
from conftest import DEVICE
from kernforge import reference

SIZES = (
    [(16, 32, 128), (256, 256, 512)]
    if DEVICE == "cpu"
    else [(16, 32, 128), (1024, 512, 1024), (8192, 1024, 2048)]
)
HAS_KERNELS = torch._C._dispatch_has_kernel_for_dispatch_key("kernforge::lltm_forward", DEVICE.upper())
IMPLS = (["kernforge"] if HAS_KERNELS else []) + ["eager", "compile"]


@functools.cache
def _compiled():
    return torch.compile(reference.lltm, fullgraph=True, dynamic=False)


def _step(fn, inputs):
    h, c = fn(*inputs)
    return torch.autograd.grad(h.sum() + c.sum(), inputs)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_lltm(benchmark, impl, size):
    batch, features, state = size
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    r = lambda *s: torch.randn(*s, device=DEVICE, generator=gen)
    inputs = [
        r(batch, features),
        r(3 * state, state + features) * (state + features) ** -0.5,
        r(3 * state),
        r(batch, state),
        r(batch, state),
    ]
    inputs = [t.requires_grad_() for t in inputs]
    fn = {"kernforge": kernforge.lltm, "eager": reference.lltm, "compile": _compiled()}[impl]
    benchmark.extra_info.update(
        case="lltm",
        impl=impl,
        dtype="float32",
        n=batch,
        size="x".join(map(str, size)),
        bytes=0,
        device=DEVICE,
    )
    step = functools.partial(_step, fn, inputs)
    step()  # warm-up (and compilation)
    big = batch * state >= 1 << 20
    benchmark.pedantic(step, rounds=20 if big else 50, iterations=1 if big else 10, warmup_rounds=3)
