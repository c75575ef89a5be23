"""CUDA graphs: every op's forward and backward captured once and replayed
on new input data, and every op under torch.compile(mode="reduce-overhead"),
which runs the compiled forward and backward as CUDA graphs."""

from __future__ import annotations

import pytest
import torch

import kernforge
from conftest import close
from every_op import OPS, call, forward_backward, inputs, leaves
from kernforge import reference

pytestmark = pytest.mark.cuda

TOL = {"rtol": 1e-4, "atol": 1e-4}


@pytest.mark.parametrize("op", OPS)
def test_forward_and_backward_captured_and_replayed(op):
    gen = torch.Generator(device="cuda").manual_seed(0)
    static = leaves(inputs(op, gen))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as capture requires
        for _ in range(2):
            forward_backward(kernforge, op, static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        results = forward_backward(kernforge, op, static)
    for _ in range(3):
        fresh = inputs(op, gen)
        with torch.no_grad():
            for s, f in zip(static, fresh, strict=True):
                s.copy_(f)
            for r in results:  # a replay that skipped an output would leave NaN
                r.fill_(float("nan"))
        graph.replay()
        expected = forward_backward(reference, op, leaves(fresh))
        for got, want in zip(results, expected, strict=True):
            close(got, want, **TOL)


@pytest.mark.parametrize("op", OPS)
def test_compile_reduce_overhead(op):
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(lambda *args: call(kernforge, op, args), mode="reduce-overhead", fullgraph=True)
    gen = torch.Generator(device="cuda").manual_seed(1)
    for _ in range(4):  # the first calls record, the later ones replay
        fresh = inputs(op, gen)
        args = leaves(fresh)
        outs = compiled(*args)
        weights = [torch.full_like(o, 0.75) for o in outs]
        grads = torch.autograd.grad(sum((o * w).sum() for o, w in zip(outs, weights, strict=True)), args)
        got = [o.detach().clone() for o in outs] + [g.clone() for g in grads]
        ref_args = leaves(fresh)
        ref_outs = call(reference, op, ref_args)
        ref_loss = sum((o * 0.75).sum() for o in ref_outs)
        expected = [o.detach() for o in ref_outs] + list(torch.autograd.grad(ref_loss, ref_args))
        for g, e in zip(got, expected, strict=True):
            close(g, e, **TOL)
    skips = dict(torch._dynamo.utils.counters["inductor"])
    assert not any(k.startswith("cudagraph_skips") and v for k, v in skips.items()), skips
