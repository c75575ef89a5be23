"""Elementwise ops against eager PyTorch, torch.compile and the device copy.

Every case records the bytes it must move (each input read once, each output
written once) so report.py can turn medians into bandwidth and ratios.
"""

from __future__ import annotations

import functools

import pytest
import torch

import kernforge
from conftest import DEVICE, LARGE, SMALL

# (dtype, elements): fp32 from cache-resident to streaming sizes, for the
# bandwidth plot; on a GPU bf16 at the streaming size too.
SIZES = [(torch.float32, n) for n in sorted({1 << 20, 1 << 24, LARGE})]
if DEVICE == "cuda":
    SIZES.append((torch.bfloat16, LARGE))
ROWS = 1 << 12  # columns of the [rows, cols] inputs, for the bias cases
IMPLS = ["kernforge", "eager", "compile"]


@functools.cache
def inputs(n: int, dtype: torch.dtype):
    """Random inputs shaped [rows, cols] (never zeros), shared by all cases of a size."""
    rows, cols = (n // ROWS, ROWS) if n >= ROWS else (1, n)
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    a = torch.randn(rows, cols, device=DEVICE, generator=gen).to(dtype)
    b = torch.randn(rows, cols, device=DEVICE, generator=gen).to(dtype)
    bias = torch.randn(cols, device=DEVICE, generator=gen).to(dtype)
    return a, b, bias


def eager_relu_add_backward(g, x):
    return g * (x > 0), g.sum(0)


# case -> (tensors read+written per element, {impl: fn(a, b, bias)})
CASES = {
    "copy": (2, {"eager": lambda a, b, bias, out: out.copy_(a)}),
    "mul": (3, {"kernforge": lambda a, b, bias: kernforge.mul(a, b), "eager": lambda a, b, bias: a * b}),
    "add": (3, {"kernforge": lambda a, b, bias: kernforge.add(a, b), "eager": lambda a, b, bias: a + b}),
    "fused_relu_add": (
        3,
        {
            "kernforge": lambda a, b, bias: kernforge.fused_relu_add(a, b, 1.0),
            "eager": lambda a, b, bias: torch.relu(a) + b + 1.0,
        },
    ),
    "fused_relu_add_bias": (
        3,
        {
            "kernforge": lambda a, b, bias: kernforge.fused_relu_add(a, b, bias),
            "eager": lambda a, b, bias: torch.relu(a) + b + bias,
        },
    ),
    "round_ste": (
        2,
        {
            "kernforge": lambda a, b, bias: kernforge.round_ste(a),
            "eager": lambda a, b, bias: (a >= 0.5).to(a.dtype),
        },
    ),
    "fused_relu_add_backward_bias": (
        3,
        {
            "kernforge": lambda a, b, bias: torch.ops.kernforge.fused_relu_add_backward(a, b, True),
            "eager": lambda a, b, bias: eager_relu_add_backward(a, b),
        },
    ),
}


def _params():
    for case, (_, impls) in CASES.items():
        for impl in IMPLS:
            if impl == "compile" and "eager" in impls and case != "copy":
                yield case, impl
            elif impl in impls:
                yield case, impl


@functools.cache
def _compiled(case: str):
    return torch.compile(CASES[case][1]["eager"], fullgraph=True, dynamic=False)


def _size_id(p) -> str:
    return f"2^{p.bit_length() - 1}" if isinstance(p, int) else str(p).removeprefix("torch.")


@pytest.mark.parametrize("dtype,n", SIZES, ids=_size_id)
@pytest.mark.parametrize("case,impl", list(_params()), ids=lambda p: p)
def test_large(benchmark, case, impl, dtype, n):
    tensors, fns = CASES[case]
    a, b, bias = inputs(n, dtype)
    if case == "copy":
        out = torch.empty_like(a)
        fn = functools.partial(fns["eager"], a, b, bias, out)
    else:
        f = _compiled(case) if impl == "compile" else fns[impl]
        fn = functools.partial(f, a, b, bias)
    benchmark.extra_info.update(
        case=case,
        impl=impl,
        dtype=str(dtype).removeprefix("torch."),
        n=n,
        bytes=tensors * n * a.element_size(),
        device=DEVICE,
        # On a GPU, 2^20 elements are shorter than a launch: the row is the
        # host's per-call cost, which moved 2x between runs on one H100 host.
        host_bound=DEVICE == "cuda" and n <= 1 << 20,
    )
    with torch.no_grad():
        fn()  # warm-up (and compilation)
        benchmark.pedantic(
            fn,
            rounds=20 if DEVICE == "cuda" else 30,
            # a round of at least ~1 ms on a GPU, so the one synchronization is noise
            iterations=max(5, (1 << 27) // n) if DEVICE == "cuda" else 1,
            warmup_rounds=2,
        )


SMALL_CASES = ["mul", "add", "fused_relu_add"]


@pytest.mark.parametrize("case", SMALL_CASES)
@pytest.mark.parametrize("impl", ["kernforge", "eager"])
def test_small_call_cost(benchmark, case, impl):
    """Cost of one call at 2^12 elements, many calls back to back, no grad."""
    a, b, bias = inputs(SMALL, torch.float32)
    fn = functools.partial(CASES[case][1][impl], a, b, bias)
    benchmark.extra_info.update(
        case=f"{case}_call",
        impl=impl,
        dtype="float32",
        n=SMALL,
        bytes=3 * SMALL * 4,
        device=DEVICE,
        host_bound=True,
    )
    with torch.no_grad():
        fn()
        benchmark.pedantic(fn, rounds=100, iterations=200, warmup_rounds=5)
