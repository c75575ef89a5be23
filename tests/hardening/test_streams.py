"""Every op, forward and backward, runs on the caller's current stream and
never synchronizes the device; several Python threads, each on its own
stream, get correct results at once."""

from __future__ import annotations

import threading
import time

import pytest
import torch

import kernforge
from kernforge import reference

pytestmark = pytest.mark.cuda

# About 0.5 s of GPU time on current GPUs (the clock rate varies; the tests
# only need the sleep to outlast the host's calls by a wide margin).
SLEEP_CYCLES = 1_000_000_000


def _inputs(op: str, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Random float32 CUDA inputs of `op`, the float ones requiring grad."""
    randn = lambda *shape: torch.randn(*shape, device="cuda", generator=gen)
    if op == "lltm":
        batch, features, state = 64, 48, 96
        return (randn(batch, features), randn(3 * state, state + features) / 10, randn(3 * state),
                randn(batch, state), randn(batch, state))  # fmt: skip
    if op == "fused_relu_add":
        return randn(256, 384), randn(256, 384), randn(384)
    if op == "round_ste":
        return (torch.rand(256, 384, device="cuda", generator=gen),)
    return randn(256, 384), randn(256, 384)


def _call(module, op: str, args: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    """The op's outputs, forward through `module` (kernforge or its reference)."""
    if op == "add":
        return [module.add(*args, alpha=0.5)]
    if op == "lltm":
        return list(module.lltm(*args))
    return [getattr(module, op)(*args)]


def _forward_backward(module, op: str, args: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    """Outputs and the gradients of sum(output * weight) for every input.
    Weights not all 1: a wrong gradient layout would not cancel out."""
    outs = _call(module, op, args)
    weights = [torch.linspace(-1, 2, o.numel(), device=o.device).view_as(o) for o in outs]
    loss = sum((o * w).sum() for o, w in zip(outs, weights, strict=True))
    return [o.detach() for o in outs] + list(torch.autograd.grad(loss, args))


OPS = ["mul", "add", "fused_relu_add", "round_ste", "lltm"]


@pytest.mark.parametrize("op", OPS)
def test_runs_on_the_current_stream_without_synchronizing(op):
    gen = torch.Generator(device="cuda").manual_seed(0)
    args = _inputs(op, gen)
    expected = _forward_backward(reference, op, [a.detach().requires_grad_() for a in args])
    _forward_backward(kernforge, op, [a.detach().requires_grad_() for a in args])  # warm-up: cuBLAS handles
    # Copies filled with NaN now, and with the inputs only on the side stream
    # after its sleep: an op on any other stream would read the NaNs.
    staged = [torch.full_like(a, float("nan")) for a in args]
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        for s, a in zip(staged, args, strict=True):
            s.copy_(a)
        inputs = [s.requires_grad_() for s in staged]
        start = time.perf_counter()
        got = _forward_backward(kernforge, op, inputs)
        host_seconds = time.perf_counter() - start
        still_busy = not side.query()
    assert still_busy, "the side stream finished while the op was called: something synchronized"
    assert host_seconds < 0.1, f"the call took {host_seconds:.3f} s of host time: it waited for the GPU"
    side.synchronize()
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)


def test_threads_each_on_its_own_stream():
    """Four threads, each on its own stream, call every op 10 times on their
    own inputs; every result matches the reference."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    cases = [(op, _inputs(op, gen)) for op in OPS for _ in range(4)]
    fresh = lambda args: [a.detach().requires_grad_() for a in args]
    expected = [_forward_backward(reference, op, fresh(args)) for op, args in cases]
    for op, args in cases[::4]:  # warm-up, one case per op, before the threads start
        _forward_backward(kernforge, op, fresh(args))
    torch.cuda.synchronize()
    results: dict[int, list[list[torch.Tensor]]] = {}
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.default_stream())
            with torch.cuda.stream(stream):
                for _ in range(10):
                    got = [_forward_backward(kernforge, op, fresh(args)) for op, args in cases[index::4]]
            stream.synchronize()
            results[index] = got
        except BaseException as e:  # re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    for index in range(4):
        for got, exp in zip(results[index], expected[index::4], strict=True):
            for g, e in zip(got, exp, strict=True):
                torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)
