"""mul, add and fused_relu_add against the pure-PyTorch references, on every
device, dtype and layout; autograd, opcheck, torch.compile and CUDA graphs."""

from __future__ import annotations

import pytest
import torch

import kernforge
import kernforge_core
from conftest import FLOAT_DTYPES, INT_DTYPES, close, make, poison_allocator, random
from kernforge import reference

SHAPES = [(37, 65), (3, 5, 129), (1000,)]


def _ref(fn, *args, dtype, **kw):
    """The reference computed in float64 on the CPU, cast back to `dtype`."""
    up = [a.double().cpu() if isinstance(a, torch.Tensor) and a.dtype.is_floating_point else a for a in args]
    up = [a.cpu() if isinstance(a, torch.Tensor) else a for a in up]
    return fn(*up, **kw).to(dtype)


# (name, kernforge op, reference op, builds the inputs from (shape, dtype, device, layout, gen))
def _binary(shape, dtype, device, layout, gen):
    return (make(shape, dtype, device, layout, gen), make(shape, dtype, device, layout, gen)), {}


def _add_args(shape, dtype, device, layout, gen):
    return (make(shape, dtype, device, layout, gen), make(shape, dtype, device, layout, gen), -1.5), {}


def _relu_scalar(shape, dtype, device, layout, gen):
    return (make(shape, dtype, device, layout, gen), make(shape, dtype, device, "contiguous", gen), 0.75), {}


def _relu_tensor(shape, dtype, device, layout, gen):
    x = make(shape, dtype, device, layout, gen)
    return (x, make(shape, dtype, device, layout, gen), random((shape[-1],), dtype, device, gen)), {}


def _relu_strided_bias(shape, dtype, device, layout, gen):
    x = make(shape, dtype, device, layout, gen)
    bias = random((2 * shape[-1],), dtype, device, gen)[::2]
    return (x, make(shape, dtype, device, "contiguous", gen), bias), {}


CASES = {
    "mul": (kernforge.mul, reference.mul, _binary),
    "add": (kernforge.add, reference.add, _add_args),
    "fused_relu_add_scalar": (kernforge.fused_relu_add, reference.fused_relu_add, _relu_scalar),
    "fused_relu_add_tensor": (kernforge.fused_relu_add, reference.fused_relu_add, _relu_tensor),
    "fused_relu_add_strided_bias": (kernforge.fused_relu_add, reference.fused_relu_add, _relu_strided_bias),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward_matches_reference(case, shape, device, float_dtype, layout):
    op, ref, build = CASES[case]
    gen = torch.Generator().manual_seed(hash((case, shape, layout)) % 2**31)
    args, _ = build(shape, float_dtype, device, layout, gen)
    before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    poison_allocator(args[0])
    out = op(*args)
    assert out.shape == args[0].shape and out.dtype == float_dtype and out.device == args[0].device
    assert out.is_contiguous()
    close(out.cpu(), _ref(ref, *args, dtype=float_dtype))
    for a, b in zip(args, before, strict=True):  # nothing is written into the inputs
        if isinstance(a, torch.Tensor):
            assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_add_integers(device, dtype, layout):
    gen = torch.Generator().manual_seed(7)
    a = make((33, 17), dtype, device, layout, gen)
    b = make((33, 17), dtype, device, layout, gen)
    torch.testing.assert_close(kernforge.add(a, b, -3), a - 3 * b, rtol=0, atol=0)
    torch.testing.assert_close(kernforge.add(a, b), a + b, rtol=0, atol=0)


def test_large_vectorized_with_tail(device):
    # Enough elements for many blocks and grid-stride iterations, plus a tail
    # that is not a multiple of the vector width.
    gen = torch.Generator().manual_seed(3)
    a = random((1 << 20) + 3, torch.float32, device, gen)
    b = random((1 << 20) + 3, torch.float32, device, gen)
    poison_allocator(a)
    close(kernforge.mul(a, b), a * b, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(0,), (4, 0), (0, 3)], ids=str)
def test_empty(shape, device):
    a = torch.empty(shape, device=device)
    assert kernforge.mul(a, a).shape == shape
    assert kernforge.add(a, a, 2).shape == shape
    assert kernforge.fused_relu_add(a, a, 1.0).shape == shape
    if shape[-1] > 0:
        bias = torch.randn(shape[-1], device=device, requires_grad=True)
        x = a.clone().requires_grad_()
        out = kernforge.fused_relu_add(x, a, bias)
        out.sum().backward()
        assert out.shape == shape and torch.equal(bias.grad, torch.zeros_like(bias))


def test_zero_dim(device):
    a = torch.tensor(-1.5, device=device)
    b = torch.tensor(2.25, device=device)
    assert kernforge.mul(a, b).item() == -3.375
    assert kernforge.add(a, b, 2).item() == 3.0
    assert kernforge.fused_relu_add(a, b, 0.5).item() == 2.75


def test_more_dims_than_the_plan_holds(device):
    # 10 dimensions that cannot be merged: the strided plan holds 8, so the op
    # falls back to contiguous copies and must still be right.
    gen = torch.Generator().manual_seed(5)
    a = random((2,) * 10 + (3,), torch.float32, device, gen).permute(*reversed(range(11)))
    b = random((3,) + (2,) * 10, torch.float32, device, gen)
    close(kernforge.mul(a, b), a * b)


def test_nan_propagates_like_torch(device):
    x = torch.tensor([float("nan"), -1.0, 2.0], device=device, requires_grad=True)
    y = torch.tensor([1.0, 1.0, 1.0], device=device)
    out = kernforge.fused_relu_add(x, y, 0.0)
    torch.testing.assert_close(out, torch.relu(x.detach()) + y, equal_nan=True)
    out.backward(torch.ones_like(out))
    x2 = x.detach().clone().requires_grad_()
    (torch.relu(x2) + y).backward(torch.ones_like(out))
    torch.testing.assert_close(x.grad, x2.grad)


# ----------------------------------------------------------------------------- autograd

GRAD_CASES = {
    "mul": (lambda a, b, c: kernforge.mul(a, b), lambda a, b, c: a * b),
    "add": (lambda a, b, c: kernforge.add(a, b, 0.5), lambda a, b, c: a + 0.5 * b),
    "fused_relu_add_scalar": (
        lambda a, b, c: kernforge.fused_relu_add(a, b, -0.25),
        lambda a, b, c: torch.relu(a) + b - 0.25,
    ),
    "fused_relu_add_tensor": (
        lambda a, b, c: kernforge.fused_relu_add(a, b, c),
        lambda a, b, c: torch.relu(a) + b + c,
    ),
}


@pytest.mark.parametrize("case", GRAD_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_backward_matches_reference(case, device, dtype, layout):
    op, ref = GRAD_CASES[case]
    gen = torch.Generator().manual_seed(11)
    shape = (29, 70)
    ins = [
        make(shape, dtype, device, layout, gen),
        make(shape, dtype, device, layout, gen),
        random((shape[-1],), dtype, device, gen),
    ]
    ours = [t.detach().clone().requires_grad_() for t in ins]
    refs = [t.detach().double().requires_grad_() for t in ins]
    grad = random(shape, dtype, device, gen)
    op(*ours).backward(grad)
    ref(*refs).backward(grad.double())
    for o, r in zip(ours, refs, strict=True):
        if r.grad is None:
            assert o.grad is None
        else:
            close(
                o.grad,
                r.grad.to(dtype),
                rtol=2e-2 if dtype == torch.bfloat16 else 1e-5,
                atol=2e-2 if dtype == torch.bfloat16 else 1e-4,
            )


@pytest.mark.parametrize("case", GRAD_CASES)
def test_gradcheck_and_gradgradcheck(case, device):
    op, _ = GRAD_CASES[case]
    gen = torch.Generator().manual_seed(13)
    ins = [random((4, 6), torch.float64, device, gen).requires_grad_() for _ in range(2)]
    ins.append(random((6,), torch.float64, device, gen).requires_grad_())
    assert torch.autograd.gradcheck(op, ins)
    assert torch.autograd.gradgradcheck(op, ins)


def test_backward_only_what_is_needed(device):
    x = torch.randn(8, 5, device=device)
    y = torch.randn(8, 5, device=device, requires_grad=True)
    bias = torch.randn(5, device=device)
    kernforge.fused_relu_add(x, y, bias).sum().backward()
    assert torch.equal(y.grad, torch.ones_like(y))


@pytest.mark.parametrize("shape", [(8, 5), (2, 3, 5), (5,)], ids=str)
def test_bias_gradient_alone_runs_no_relu_backward(device, shape):
    # Only the bias needs a gradient: its column sum, and no pass of the
    # kernel that writes grad_x (the profiler sees no fused_relu_add_backward).
    gen = torch.Generator().manual_seed(19)
    x, y, grad = (random(shape, torch.float32, device, gen) for _ in range(3))
    bias = random(shape[-1:], torch.float32, device, gen).requires_grad_()
    out = kernforge.fused_relu_add(x, y, bias)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out.backward(grad)
    assert not any("fused_relu_add_backward" in e.key for e in prof.key_averages())
    close(bias.grad, grad.double().reshape(-1, shape[-1]).sum(0).float())


# ----------------------------------------------------------------------------- opcheck, compile, graphs


def _opcheck_cases(device):
    gen = torch.Generator().manual_seed(17)
    r = lambda *s: random(s, torch.float32, device, gen)
    ops = torch.ops.kernforge
    return [
        (ops.mul.default, (r(5, 7), r(5, 7))),
        (ops.mul.default, (r(7, 5).t(), r(5, 7))),
        (ops.add.default, (r(5, 7), r(5, 7), 2.0)),
        (ops.add_backward.default, (r(5, 7), -3.0)),
        (ops.fused_relu_add.default, (r(5, 7), r(5, 7), None, 0.5)),
        (ops.fused_relu_add.default, (r(5, 7), r(5, 7), r(7), 0.0)),
        (ops.fused_relu_add_backward.default, (r(5, 7), r(5, 7), True)),
        (ops.fused_relu_add_backward.default, (r(5, 7), r(5, 7), False)),
    ]


def test_opcheck(device):
    for op, args in _opcheck_cases(device):
        # requires_grad on the float inputs exercises the autograd registration
        args = tuple(a.requires_grad_() if isinstance(a, torch.Tensor) else a for a in args)
        torch.library.opcheck(op, args)


@pytest.mark.parametrize("case", GRAD_CASES)
def test_compile_fullgraph_dynamic(case, device):
    op, ref = GRAD_CASES[case]
    torch._dynamo.reset()
    compiled = torch.compile(op, fullgraph=True, dynamic=True)
    gen = torch.Generator().manual_seed(19)
    for shape in [(6, 10), (9, 3)]:  # two shapes: one graph with symbolic sizes
        ins = [random(shape, torch.float32, device, gen) for _ in range(2)]
        ins.append(random((shape[-1],), torch.float32, device, gen))
        a = [t.clone().requires_grad_() for t in ins]
        b = [t.clone().requires_grad_() for t in ins]
        out = compiled(*a)
        expected = ref(*b)
        close(out, expected)
        out.sum().backward()
        expected.sum().backward()
        for ga, gb in zip(a, b, strict=True):
            if gb.grad is not None:
                close(ga.grad, gb.grad)


@pytest.mark.cuda
@pytest.mark.parametrize("case", GRAD_CASES)
def test_cuda_graph_capture_and_replay(case):
    op, ref = GRAD_CASES[case]
    gen = torch.Generator().manual_seed(23)
    static = [random((64, 48), torch.float32, "cuda", gen).requires_grad_() for _ in range(2)]
    static.append(random((48,), torch.float32, "cuda", gen).requires_grad_())
    grad = random((64, 48), torch.float32, "cuda", gen)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up on a side stream, as capture requires
        for _ in range(2):
            op(*static).backward(grad)
    torch.cuda.current_stream().wait_stream(s)
    for t in static:
        t.grad = None
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = op(*static)
        out.backward(grad)
    for _ in range(2):  # replay with new data
        fresh = [random(t.shape, torch.float32, "cuda", gen) for t in static]
        with torch.no_grad():
            for t, f in zip(static, fresh, strict=True):
                t.copy_(f)
        g.replay()
        torch.cuda.synchronize()
        check = [f.clone().requires_grad_() for f in fresh]
        expected = ref(*check)
        expected.backward(grad)
        close(out, expected)
        for t, c in zip(static, check, strict=True):
            if c.grad is not None:
                close(t.grad, c.grad)


@pytest.mark.cuda
def test_cuda_kernels_registered():
    # A GPU machine must run the CUDA kernels, not skip them: a CPU-only
    # build there is a failure.
    assert kernforge_core.has_cuda_kernels()


def test_dtype_coverage_matches_the_docs(device):
    for dtype in FLOAT_DTYPES:
        a = torch.ones(3, dtype=dtype, device=device)
        kernforge.mul(a, a)
        kernforge.fused_relu_add(a, a, 1.0)
    for dtype in FLOAT_DTYPES + INT_DTYPES:
        a = torch.ones(3, dtype=dtype, device=device)
        kernforge.add(a, a)
