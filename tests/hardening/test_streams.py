"""Every op, forward and backward, runs on the caller's current stream and
never synchronizes the device; producer and consumer streams that differ
work when the caller records its streams; several Python threads, each on
its own stream, get correct results at once. A bidirectional LLTMSequence,
whose reverse direction runs on a stream of its own (fixed-length input),
orders it after the caller's stream and the caller's stream after it."""

from __future__ import annotations

import threading
import time
import warnings

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence

import kernforge
from conftest import close
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


@pytest.mark.parametrize("packed", [False, True], ids=["fixed", "packed"])
def test_bidirectional_layers_on_the_callers_stream(packed):
    """Two bidirectional layers (packed: both directions on the caller's
    stream), forward and backward, queued on a caller's stream behind a
    sleep: nothing synchronizes, the inputs copied in after the sleep are the
    ones read, the results are complete when the caller's stream is (read on
    it at once, no other synchronization), and memory the caller's stream
    allocates next, filled with NaN, is no longer read by the side stream."""
    torch.manual_seed(3)
    model = kernforge.nn.LLTMSequence(24, 64, num_layers=2, bidirectional=True, device="cuda")
    T, B = 12, 16
    x = torch.randn(T, B, 24, device="cuda")
    hx = [torch.randn(4, B, 64, device="cuda") for _ in range(2)]
    # sorted: unsorted packing copies its order to the GPU, which waits for the caller's stream
    lengths = torch.randint(1, T + 1, (B,), generator=torch.Generator().manual_seed(4)).sort(descending=True)[
        0
    ]
    weights = [torch.randn(T, B, 128, device="cuda"), torch.randn(4, B, 64, device="cuda")]

    def step(forward, x, h0, c0):
        inputs = [x.requires_grad_(), h0.requires_grad_(), c0.requires_grad_()]
        data = pack_padded_sequence(x, lengths) if packed else x
        out, (h_n, c_n) = forward(data, (h0, c0))
        out = out.data if packed else out
        w_out = weights[0].view(-1, 128)[: out.shape[0]] if packed else weights[0]
        loss = (out * w_out).sum() + ((h_n + c_n) * weights[1]).sum()
        grads = torch.autograd.grad(loss, [*inputs, *model.parameters()])
        return [out.detach(), h_n.detach(), c_n.detach(), *grads]

    expected = step(model.reference, x.clone(), *(h.clone() for h in hx))
    step(model, x.clone(), *(h.clone() for h in hx))  # warm-up
    torch.cuda.synchronize()
    caller = torch.cuda.Stream()
    with torch.cuda.stream(caller):
        staged = [torch.full_like(t, float("nan")) for t in (x, *hx)]
        torch.cuda._sleep(SLEEP_CYCLES)
        for s, t in zip(staged, (x, *hx), strict=True):
            s.copy_(t)
        start = time.perf_counter()
        got = step(model, *staged)
        host_seconds = time.perf_counter() - start
        del staged
        reused = [torch.full_like(t, float("nan")) for t in (x, *hx) for _ in range(4)]
        results = [g.clone() for g in got]
        still_busy = not caller.query()
    assert still_busy, "the caller's stream finished while the layers were called: something synchronized"
    assert host_seconds < 0.1, f"the step took {host_seconds:.3f} s of host time: it waited for the GPU"
    caller.synchronize()
    del reused
    for r, e in zip(results, expected, strict=True):
        close(r, e, rtol=1e-4, atol=1e-4)


def test_bidirectional_training_warns_of_no_stream_mismatch():
    """The parameters' gradient accumulators made on the caller's stream
    before training (as DDP makes them) and kept alive, and each step's loss
    alive while the next forward runs: every gradient reaches its
    accumulator from the caller's stream, and autograd warns of no stream
    mismatch."""
    torch.manual_seed(5)
    model = kernforge.nn.LLTMSequence(8, 16, num_layers=2, bidirectional=True, device="cuda")
    accumulators = [p.view_as(p).grad_fn.next_functions[0][0] for p in model.parameters()]
    x = torch.randn(10, 4, 8, device="cuda", requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            loss = model(x)[0].square().sum()
            loss.backward()
        torch.cuda.synchronize()
    mismatches = [str(w.message) for w in caught if "stream" in str(w.message)]
    assert not mismatches, mismatches[0]
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    assert len(accumulators) == 8
