"""Every op, forward and backward, runs on the caller's current stream and
never synchronizes the device; producer and consumer streams that differ
work when the caller records its streams; several Python threads, each on
its own stream, get correct results at once."""

from __future__ import annotations

import threading
import time

import pytest
import torch

import kernforge
from every_op import OPS, forward_backward, inputs, leaves
from kernforge import reference

pytestmark = pytest.mark.cuda

# About 0.5 s of GPU time on current GPUs (the clock rate varies; the tests
# only need the sleep to outlast the host's calls by a wide margin).
SLEEP_CYCLES = 1_000_000_000


@pytest.mark.parametrize("op", OPS)
def test_runs_on_the_current_stream_without_synchronizing(op):
    gen = torch.Generator(device="cuda").manual_seed(0)
    args = inputs(op, gen)
    expected = forward_backward(reference, op, leaves(args))
    forward_backward(kernforge, op, leaves(args))  # warm-up: cuBLAS handles
    # Copies filled with NaN now, and with the inputs only on the side stream
    # after its sleep: an op on any other stream would read the NaNs.
    staged = [torch.full_like(a, float("nan")) for a in args]
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        for s, a in zip(staged, args, strict=True):
            s.copy_(a)
        staged_leaves = [s.requires_grad_() for s in staged]
        start = time.perf_counter()
        got = forward_backward(kernforge, op, staged_leaves)
        host_seconds = time.perf_counter() - start
        still_busy = not side.query()
    assert still_busy, "the side stream finished while the op was called: something synchronized"
    assert host_seconds < 0.1, f"the call took {host_seconds:.3f} s of host time: it waited for the GPU"
    side.synchronize()
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", OPS)
def test_producer_and_consumer_streams_differ(op):
    """Inputs made on a late producer stream, the op run on a consumer stream
    that waits for it, the caller recording the inputs on the consumer and
    dropping them at once, the results read back on the producer: correct.
    Memory the producer allocates next is filled with NaN; had the op read
    its inputs on any stream but the consumer, or had the recorded inputs
    been handed out again too early, the NaN would show in the results."""
    gen = torch.Generator(device="cuda").manual_seed(2)
    args = inputs(op, gen)
    expected = forward_backward(reference, op, leaves(args))
    forward_backward(kernforge, op, leaves(args))  # warm-up
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    producer.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(producer):
        torch.cuda._sleep(SLEEP_CYCLES // 5)
        made = [a.clone() for a in args]
    consumer.wait_stream(producer)
    with torch.cuda.stream(consumer):
        for m in made:
            m.record_stream(consumer)
        got = forward_backward(kernforge, op, [m.requires_grad_() for m in made])
    del made
    with torch.cuda.stream(producer):
        reused = [torch.full_like(a, float("nan")) for a in args]
    producer.wait_stream(consumer)
    with torch.cuda.stream(producer):
        results = [g.clone() for g in got]
    torch.cuda.synchronize()
    del reused
    for r, e in zip(results, expected, strict=True):
        torch.testing.assert_close(r, e, rtol=1e-4, atol=1e-4)


def test_threads_each_on_its_own_stream():
    """Four threads, each on its own stream, call every op 10 times on their
    own inputs; every result matches the reference."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    cases = [(op, inputs(op, gen)) for op in OPS for _ in range(4)]
    expected = [forward_backward(reference, op, leaves(args)) for op, args in cases]
    for op, args in cases[::4]:  # warm-up, one case per op, before the threads start
        forward_backward(kernforge, op, leaves(args))
    torch.cuda.synchronize()
    results: dict[int, list[list[torch.Tensor]]] = {}
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.default_stream())
            with torch.cuda.stream(stream):
                for _ in range(10):
                    got = [forward_backward(kernforge, op, leaves(args)) for op, args in cases[index::4]]
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
