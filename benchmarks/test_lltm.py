"""The LLTM cell, forward + backward of (h'.sum() + c'.sum()), TF32 off:
kernforge against eager PyTorch (kernforge.reference.lltm) and torch.compile
of it, in one process. fp32 at every size; on a GPU also bf16 at the two
larger sizes, and fp32 with only the weights needing gradients (a module's
training step as the original tutorial timed it: no d_x, d_h)."""

from __future__ import annotations

import functools
import math

import pytest
import torch

import kernforge
from conftest import DEVICE
from cuda_timer import synchronized_clock
from kernforge import reference

CASES = (
    [((16, 32, 128), torch.float32), ((256, 256, 512), torch.float32)]
    if DEVICE == "cpu"
    else [
        ((16, 32, 128), torch.float32),
        ((1024, 512, 1024), torch.float32),
        ((8192, 1024, 2048), torch.float32),
        ((1024, 512, 1024), torch.bfloat16),
        ((8192, 1024, 2048), torch.bfloat16),
        ((1024, 512, 1024), torch.float32, "weights"),
        ((8192, 1024, 2048), torch.float32, "weights"),
    ]
)
HAS_KERNELS = torch._C._dispatch_has_kernel_for_dispatch_key("kernforge::lltm_forward", DEVICE.upper())
IMPLS = (["kernforge"] if HAS_KERNELS else []) + ["eager", "compile"]


@functools.cache
def _compiled():
    return torch.compile(reference.lltm, fullgraph=True, dynamic=False)


def _step(fn, inputs):
    h, c = fn(*inputs)
    return torch.autograd.grad(h.sum() + c.sum(), [t for t in inputs if t.requires_grad])


def _case_id(case):
    size, dtype, *grads = case
    return (
        "x".join(map(str, size)) + "-" + str(dtype).removeprefix("torch.") + "".join(f"-{g}" for g in grads)
    )


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_lltm(benchmark, impl, case):
    size, dtype, *grads = case
    weights_only = grads == ["weights"]
    batch, features, state = size
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    r = lambda *s: torch.randn(*s, device=DEVICE, generator=gen).to(dtype)
    inputs = [
        r(batch, features),
        r(3 * state, state + features) * (state + features) ** -0.5,
        r(3 * state),
        r(batch, state),
        r(batch, state),
    ]
    # x, h and c need gradients too unless only the weights (W, b) do.
    inputs = [t.requires_grad_(not weights_only or k in (1, 2)) for k, t in enumerate(inputs)]
    fn = {"kernforge": kernforge.lltm, "eager": reference.lltm, "compile": _compiled()}[impl]
    benchmark.extra_info.update(
        case="lltm_weights" if weights_only else "lltm",
        impl=impl,
        dtype=str(dtype).removeprefix("torch."),
        n=batch,
        size="x".join(map(str, size)),
        bytes=0,
        device=DEVICE,
    )
    step = functools.partial(_step, fn, inputs)
    step()  # compilation, allocator blocks, cuBLAS handles
    # Several steps per round where a step is short, so that the GPU queue
    # stays fed and the round's one synchronization is spread over them.
    work = batch * state * (state + features)
    # The Python and dispatch path dominates, or weighs enough that a slow
    # host moves the median: on one H100 host, (1024, 512, 1024) took 1313 us
    # (eager 1499) against 788 (884) on another the same day.
    benchmark.extra_info["host_bound"] = work < 1 << 32
    rounds, iterations = (20, 1) if work >= 1 << 32 else (30, 5) if work >= 1 << 28 else (50, 10)
    # Warm-up rounds for about half a second, for every implementation alike.
    # Three rounds were 15 ms at the middle size, and the first timed rounds
    # after them ran up to 1.3x slower than the rest (H100, 2026-11-22).
    start = synchronized_clock()
    step()
    once = synchronized_clock() - start
    warmup = max(3, math.ceil(0.5 / (once * iterations)))
    benchmark.pedantic(step, rounds=rounds, iterations=iterations, warmup_rounds=warmup)
