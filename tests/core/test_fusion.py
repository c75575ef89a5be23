"""kernforge ops under torch.compile: the pointwise ops (and their backward
ops) fuse with their neighbours through their formulas
(kernforge_core.fusion), so the generated code holds no kernforge call and as
many kernels as the same chain in plain torch; results and gradients equal
eager kernforge; the LLTM stays one external kernel per direction with its
surroundings fused; every compile mode and dynamic shapes work."""

from __future__ import annotations

import re

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import kernforge
from conftest import close, random
from kernforge_core import fusion

# name -> (kernforge op, the same op in plain torch, builds its inputs (shape, dtype, device, gen))
_bias = lambda s, dt, dev, g: (random(s, dt, dev, g), random(s, dt, dev, g), random(s[-1:], dt, dev, g))
_two = lambda s, dt, dev, g: (random(s, dt, dev, g), random(s, dt, dev, g))
OPS = {
    "mul": (kernforge.mul, torch.mul, _two),
    "add": (lambda a, b: kernforge.add(a, b, alpha=-0.75), lambda a, b: torch.add(a, b, alpha=-0.75), _two),
    "fused_relu_add": (kernforge.fused_relu_add, lambda x, y, b: torch.relu(x) + y + b, _bias),
    "fused_relu_add_scalar": (
        lambda x, y: kernforge.fused_relu_add(x, y, 0.25),
        lambda x, y: torch.relu(x) + y + 0.25,
        _two,
    ),
    "round_ste": (
        kernforge.round_ste,
        lambda x: x + ((x >= 0.5).to(x.dtype) - x).detach(),  # the same forward and straight-through gradient
        lambda s, dt, dev, g: (torch.rand(s, generator=g).to(dev, dt),),
    ),
}
# what follows the op in the chain: two pointwise ops, or two and a reduction
TAILS = {
    "pointwise": lambda out: out * 0.5 + 1,
    "reduction": lambda out: (out * 0.5 + 1).sum(dim=-1),
}


@pytest.fixture(autouse=True)
def _no_compile_caches():
    """Every compile generates its code: a cache hit (from an earlier test or
    run) would leave nothing to inspect."""
    with torch._inductor.config.patch(force_disable_caches=True):
        yield


def _calls_kernforge(code: str) -> bool:
    """Whether generated code calls a kernforge op (its comments may name one:
    inductor notes which ops a fused kernel came from)."""
    return "torch.ops.kernforge" in code


def _kernels(code: str) -> list[str]:
    """The kernels inductor generated (C++ or Triton), by name."""
    return re.findall(r"^(\w+) = async_compile\.", code, re.M)


def _compile_and_run(fn, args, **compile_kw):
    """fn compiled, run forward and backward: (output, input gradients,
    generated code of the forward, of the backward)."""
    torch._dynamo.reset()
    leaves = [a.detach().clone().requires_grad_() for a in args]
    compiled = torch.compile(fn, fullgraph=True, **compile_kw)
    out, (forward_code, *_) = run_and_get_code(compiled, *leaves)
    upstream = random(out.shape, out.dtype, out.device, torch.Generator().manual_seed(5))
    _, (backward_code, *_) = run_and_get_code(lambda: out.backward(upstream))
    return out.detach(), [a.grad for a in leaves], forward_code, backward_code


def _eager(fn, args):
    leaves = [a.detach().clone().requires_grad_() for a in args]
    out = fn(*leaves)
    out.backward(random(out.shape, out.dtype, out.device, torch.Generator().manual_seed(5)))
    return out.detach(), [a.grad for a in leaves]


def test_fusion_is_active_for_every_op():
    """Fails when torch changes the private table the formulas go into: then
    the ops would silently compile as barriers again."""
    torch._dynamo.reset()
    torch.compile(kernforge.mul, fullgraph=True)(torch.randn(3), torch.randn(3))
    assert fusion.status() == "active", fusion.status()
    from torch._inductor.decomposition import select_decomp_table

    version = tuple(int(v) for v in torch.__version__.split(".")[:2])
    assert fusion.TESTED[0] <= version <= fusion.TESTED[1], (
        f"torch {torch.__version__} is outside kernforge_core.fusion.TESTED {fusion.TESTED}: "
        "check the decomposition table there and widen TESTED"
    )
    table = select_decomp_table()
    ops = torch.ops.kernforge
    expected = [ops.mul, ops.add, ops.add_backward, ops.fused_relu_add, ops.fused_relu_add_backward]
    for op in [*(o.default for o in expected), torch.ops.kernforge_legacy.round_ste.default]:
        assert op in table, f"{op} has no formula in inductor's decomposition table"


@pytest.mark.parametrize("tail", TAILS)
@pytest.mark.parametrize("name", OPS)
def test_compiled_chain_fuses_like_plain_torch(name, tail, device):
    op, plain, build = OPS[name]
    args = build((24, 40), torch.float32, device, torch.Generator().manual_seed(1))
    chain = lambda *a: TAILS[tail](op(*a))
    out, grads, forward_code, backward_code = _compile_and_run(chain, args)
    # no kernforge call left, forward or backward
    assert not _calls_kernforge(forward_code + backward_code), forward_code + backward_code
    # as many kernels as the plain-torch chain compiled: the op costs no pass of its own
    *_, plain_forward, plain_backward = _compile_and_run(lambda *a: TAILS[tail](plain(*a)), args)
    assert len(_kernels(forward_code)) == len(_kernels(plain_forward)) >= 1
    assert len(_kernels(backward_code)) == len(_kernels(plain_backward))
    # and the same results as eager kernforge, which runs the kernels
    expected, expected_grads = _eager(chain, args)
    close(out, expected)
    for g, e in zip(grads, expected_grads, strict=True):
        close(g, e)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", OPS)
def test_compiled_half_precision_matches_eager(name, dtype, device):
    """Inductor computes the formula in float32 and rounds once, as the kernels
    do. It also skips the rounding between the op and its neighbours that
    eager does (the backward's ``3 * grad`` is not rounded before the bias
    gradient sums it): a few units in the last place, hence the tolerance."""
    op, _, build = OPS[name]
    args = build((16, 33), dtype, device, torch.Generator().manual_seed(2))
    chain = lambda *a: op(*a) * 3
    out, grads, *_ = _compile_and_run(chain, args)
    expected, expected_grads = _eager(chain, args)
    tol = {torch.float16: 5e-3, torch.bfloat16: 4e-2}[dtype]
    close(out, expected)
    for g, e in zip(grads, expected_grads, strict=True):
        close(g, e, rtol=tol, atol=tol)


def test_integer_add_fuses(device):
    a = torch.randint(-50, 50, (9, 7), device=device)
    b = torch.randint(-50, 50, (9, 7), device=device)
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: kernforge.add(a, b, alpha=-3) * 2, fullgraph=True)
    out, (code, *_) = run_and_get_code(f, a, b)
    assert not _calls_kernforge(code), code
    assert out.dtype == torch.int64
    torch.testing.assert_close(out, (a - 3 * b) * 2, rtol=0, atol=0)


@pytest.mark.parametrize("alpha", [1, 2.5])
def test_add_backward_runs_only_for_an_alpha_other_than_one(alpha, device):
    """With alpha 1, b's gradient is the incoming gradient itself, as for
    torch.add: no kernel in eager, and no buffer to write in compiled code
    (in the train chain above that was a 1.2x slowdown on an H100)."""
    a, b = (torch.randn(6, 5, device=device, requires_grad=True) for _ in range(2))
    grad = torch.randn(6, 5, device=device)
    with torch.profiler.profile() as prof:
        kernforge.add(a, b, alpha=alpha).backward(grad)
    ran = "kernforge::add_backward" in {e.name for e in prof.events()}
    assert ran == (alpha != 1)
    close(a.grad, grad)
    close(b.grad, grad * alpha)


def test_ops_called_through_torch_ops_fuse_too():
    x, y, b = torch.randn(8, 6), torch.randn(8, 6), torch.randn(6)
    torch._dynamo.reset()
    f = torch.compile(lambda x, y, b: torch.ops.kernforge.fused_relu_add(x, y, b) + 1, fullgraph=True)
    out, (code, *_) = run_and_get_code(f, x, y, b)
    assert not _calls_kernforge(code) and len(_kernels(code)) == 1, code
    close(out, kernforge.fused_relu_add(x, y, b) + 1)


def test_eager_calls_run_the_kernels():
    x, y = torch.randn(8, 6), torch.randn(8, 6)
    with torch.profiler.profile() as prof:
        kernforge.mul(x, y)
        kernforge.fused_relu_add(x, y, 0.5)
    names = {e.name for e in prof.events()}
    assert {"kernforge::mul", "kernforge::fused_relu_add"} <= names, names


def test_the_graph_a_backend_gets_still_holds_the_op():
    """Only inductor's lowering takes the formula: dynamo's graph (and so
    torch.export and other backends) keeps the op."""
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(lambda a, b: kernforge.mul(a, b) + 1, backend=record, fullgraph=True)(
        torch.randn(4), torch.randn(4)
    )
    assert "kernforge.mul" in graphs[0].code


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune-no-cudagraphs"])
@pytest.mark.parametrize("name", OPS)
def test_compile_modes(name, mode, device):
    op, _, build = OPS[name]
    args = build((32, 16), torch.float32, device, torch.Generator().manual_seed(3))
    chain = lambda *a: torch.tanh(op(*a))
    expected, expected_grads = _eager(chain, args)
    for _ in range(2):  # reduce-overhead records a CUDA graph on the second call
        out, grads, *_ = _compile_and_run(chain, args, mode=mode)
    close(out, expected)
    for g, e in zip(grads, expected_grads, strict=True):
        close(g, e)


@pytest.mark.parametrize("name", OPS)
def test_dynamic_shapes_compile_once(name, device):
    op, _, build = OPS[name]
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: op(*a) * 2, fullgraph=True, dynamic=True)
    gen = torch.Generator().manual_seed(4)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for shape in [(5, 12), (17, 3), (33, 7)]:  # one rank; sizes 0 and 1 specialize
            args = build(shape, torch.float32, device, gen)
            close(compiled(*args), op(*args) * 2)


def test_lltm_stays_one_kernel_with_its_surroundings_fused(device):
    """The LLTM is no pointwise op: it stays one external call per direction,
    and what is around it (an activation, a scaled add, a sum) fuses into one
    kernel each way, with d_x and d_h returned as views of d_X, not copies."""
    gen = torch.Generator().manual_seed(6)
    batch, features, state = 16, 32, 64
    args = (
        random((batch, features), torch.float32, device, gen),
        random((3 * state, state + features), torch.float32, device, gen) / 10,
        random((3 * state,), torch.float32, device, gen),
        random((batch, state), torch.float32, device, gen),
        random((batch, state), torch.float32, device, gen),
    )

    def step(x, W, b, h, c):
        h_new, c_new = kernforge.lltm(x, W, b, h, c)
        return torch.relu(h_new) + 0.5 * c_new

    out, grads, forward_code, backward_code = _compile_and_run(step, args)
    assert forward_code.count("torch.ops.kernforge.lltm_forward.default(") == 1
    assert backward_code.count("torch.ops.kernforge.lltm_backward.default(") == 1
    assert len(_kernels(forward_code)) == 1 and len(_kernels(backward_code)) == 1
    assert re.search(r"return \(reinterpret_tensor\(buf\d+, \(16, 32\)", backward_code), backward_code
    expected, expected_grads = _eager(step, args)
    close(out, expected)
    for g, e in zip(grads, expected_grads, strict=True):
        close(g, e, rtol=1e-4, atol=1e-4)
