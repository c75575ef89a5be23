"""The LLTM cell against its pure-PyTorch reference on the CPU and CUDA:
forward, every gradient, opcheck, gradcheck, torch.compile over an unrolled
sequence, CUDA-graph capture of a training step, and bad input.

On CUDA, problems with B * 3S * (S + F) <= 2^22 (and no dimension above 2048)
run one fused GEMM + gates kernel per direction; larger ones run cuBLAS GEMMs
around fused pointwise kernels. The sizes below cover both paths and tile
edges (sizes that are not multiples of 32 or 8)."""

from __future__ import annotations

import re

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import kernforge
from conftest import close, random
from kernforge import reference

TOL = {
    torch.float64: {"rtol": 1e-10, "atol": 1e-10},
    torch.float32: {"rtol": 1e-4, "atol": 1e-5},
    torch.bfloat16: {"rtol": 4e-2, "atol": 4e-2},
    torch.float16: {"rtol": 1e-2, "atol": 1e-2},
}
DTYPES = pytest.mark.parametrize("dtype", list(TOL), ids=lambda d: str(d).removeprefix("torch."))
SMALL_SIZES = [(1, 1, 1), (5, 7, 3), (16, 32, 128), (33, 40, 70)]
# Past the fused path: by the product, by the batch, by the state. On the
# CPU, (300, 8, 256) is three chunks of rows, the last one short.
GEMM_SIZES = [(64, 256, 512), (2100, 3, 5), (2, 3, 700), (300, 8, 256)]
ALL = [True] * 4  # lltm_backward's output_mask: every gradient (x, W, b, h)


def _inputs(batch, features, state, dtype, gen, device="cpu"):
    x = random((batch, features), dtype, device, gen)
    W = random((3 * state, state + features), dtype, device, gen) * (state + features) ** -0.5
    b = random((3 * state,), dtype, device, gen)
    h = random((batch, state), dtype, device, gen)
    c = random((batch, state), dtype, device, gen)
    return [t.to(dtype) for t in (x, W, b, h, c)]


def _poison(device, *shapes):
    """On CUDA, frees NaN-filled blocks of the outputs' sizes so that the op's
    outputs likely start as NaN; close() then catches unwritten elements."""
    if device == "cuda":
        blocks = [torch.full(s, float("nan"), device=device) for s in shapes]
        del blocks


def _check_against_reference(ins, dtype, device, gen, tol):
    ours = [t.clone().requires_grad_() for t in ins]
    refs = [t.double().requires_grad_() for t in ins]
    batch, state = ins[3].shape
    _poison(device, (batch, state), (batch, state), (batch, 3 * state))
    h, c = kernforge.lltm(*ours)
    rh, rc = reference.lltm(*refs)
    close(h, rh.to(dtype), **tol)
    close(c, rc.to(dtype), **tol)
    gh, gc = random(h.shape, dtype, device, gen), random(c.shape, dtype, device, gen)
    _poison(device, *(t.shape for t in ins))
    torch.autograd.backward((h, c), (gh, gc))
    torch.autograd.backward((rh, rc), (gh.double(), gc.double()))
    for name, o, r in zip("xWbhc", ours, refs, strict=True):
        assert o.grad is not None, name
        close(o.grad, r.grad.to(dtype), **tol)


@DTYPES
@pytest.mark.parametrize("size", SMALL_SIZES + GEMM_SIZES, ids=str)
def test_forward_and_gradients_match_reference(device, dtype, size):
    gen = torch.Generator().manual_seed(31)
    ins = _inputs(*size, dtype, gen, device)
    tol = TOL[dtype]
    if dtype in (torch.float16, torch.bfloat16):
        # Inputs of every product are rounded to 8 or 11 bits: the absolute
        # error of a sum of n terms grows like sqrt(n) (n = batch for d_W and
        # d_b, S + F for the gates and d_X).
        n = max(size[0], size[1] + size[2])
        tol = {"rtol": tol["rtol"], "atol": tol["atol"] * max(1.0, (n / 32) ** 0.5)}
    _check_against_reference(ins, dtype, device, gen, tol)


# Gates at the ends of their range: pre-activations from -100 to 100 (the
# sigmoid's exp overflows to inf at -100, the ELU's exp at 100) and within
# 1e-6 of zero on either side (the ELU's exp(x) - 1 near 0). In float32 on
# the device the sigmoid divides by the reciprocal instruction and the ELU
# is exp(x) - 1 (lltm_math.h): every output and gradient stays finite and
# within float32's tolerance of the float64 reference, its absolute part
# scaled by 30: z reaches 100, so d_gates reach about 25 where i is 1/2,
# and d_W sums B of them (at B = 64 on the CPU: 9.4e-5 off).
@pytest.mark.parametrize("size", [(5, 7, 24), (64, 256, 512)], ids=str)
def test_saturated_gates_match_reference(device, size):
    gen = torch.Generator().manual_seed(37)
    batch, features, state = size
    x, W, b, h, c = _inputs(batch, features, state, torch.float32, gen, device)
    ends = torch.tensor([-100.0, -30.0, -9.0, -1e-3, -1e-6, 1e-6, 1e-3, 9.0, 30.0, 100.0])
    pick = torch.randint(0, len(ends), (3 * state,), generator=gen)
    b = (ends[pick] * (1 + 0.01 * torch.rand(3 * state, generator=gen))).to(device)
    W = W * 1e-7  # the pre-activations are the bias's, give or take 1e-6
    tol = {"rtol": TOL[torch.float32]["rtol"], "atol": 30 * TOL[torch.float32]["atol"]}
    _check_against_reference([x, W, b, h, c], torch.float32, device, gen, tol)


@pytest.mark.parametrize("layout", ["W transposed", "x sliced", "h expanded"])
def test_non_contiguous_inputs(device, layout):
    gen = torch.Generator().manual_seed(33)
    x, W, b, h, c = _inputs(6, 5, 9, torch.float64, gen, device)
    if layout == "W transposed":
        W = W.T.contiguous().T
    elif layout == "x sliced":
        x = torch.cat([x, x], 1)[:, ::2]
    else:
        h = h[:1].expand_as(h)
    assert not all(t.is_contiguous() for t in (x, W, h))
    _check_against_reference([x, W, b, h, c], torch.float64, device, gen, TOL[torch.float64])


@pytest.mark.parametrize("size", [(0, 3, 4), (2, 3, 0), (0, 0, 2)], ids=str)
def test_empty(device, size):
    gen = torch.Generator().manual_seed(35)
    ins = [t.requires_grad_() for t in _inputs(*size, torch.float32, gen, device)]
    h, c = kernforge.lltm(*ins)
    assert h.shape == c.shape == (size[0], size[2])
    grads = torch.autograd.grad(h.sum() + c.sum(), ins)
    for g, t in zip(grads, ins, strict=True):
        assert g.shape == t.shape
        assert torch.all(g == 0)  # an empty batch or state: every gradient is an empty sum


@pytest.mark.parametrize("size", [(5, 7, 3), (64, 256, 512)], ids=str)
def test_backward_reads_strided_gradients_in_place(device, size):
    # In a sequence, grad_h is the h block of the next step's d_X = [d_h, d_x]:
    # rows with a stride; from h'.sum(), one value expanded to [B, S]. Those,
    # a transposed gradient and rows or columns expanded must give what
    # contiguous copies give.
    gen = torch.Generator().manual_seed(39)
    x, W, b, h, c = _inputs(*size, torch.float32, gen, device)
    batch, _, state = size
    _, c_new, gates = torch.ops.kernforge.lltm_forward(x, W, b, h, c)
    wide = random((batch, 2 * state + 1), torch.float32, device, gen)
    for grad_h, grad_c in [
        (wide[:, :state], wide[:, state + 1 :]),
        (random((state, batch), torch.float32, device, gen).T, wide[:1, :state].expand(batch, state)),
        (wide[:, :1].expand(batch, state), wide[0, 0].expand(batch, state)),
    ]:
        got = torch.ops.kernforge.lltm_backward(grad_h, grad_c, x, W, h, c_new, gates, ALL)
        want = torch.ops.kernforge.lltm_backward(
            grad_h.contiguous(), grad_c.contiguous(), x, W, h, c_new, gates, ALL
        )
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=0)


MASKS = [[x, W, b, h] for x in (0, 1) for W in (0, 1) for b in (0, 1) for h in (0, 1)]


@pytest.mark.parametrize("size", [(5, 7, 3), (33, 40, 70), (64, 256, 512), (0, 3, 4)], ids=str)
def test_output_mask_computes_only_what_it_asks_for(device, size):
    # Each mask's outputs equal the matching parts of the full backward's, and
    # what it does not ask for is empty: [B, 0] columns of d_X, [0] d_W / d_b.
    # Sizes: the small-problem kernel on CUDA (tile edges), then the GEMM path.
    gen = torch.Generator().manual_seed(49)
    x, W, b, h, c = _inputs(*size, torch.float32, gen, device)
    batch, features, state = size
    _, c_new, gates = torch.ops.kernforge.lltm_forward(x, W, b, h, c)
    grad_h, grad_c = (random(c_new.shape, torch.float32, device, gen) for _ in range(2))
    d_X, d_W, d_b, d_c = torch.ops.kernforge.lltm_backward(grad_h, grad_c, x, W, h, c_new, gates, ALL)
    for mask in MASKS:
        need_x, need_W, need_b, need_h = map(bool, mask)
        _poison(device, (batch, state + features), tuple(W.shape), (3 * state,), (batch, state))
        got = torch.ops.kernforge.lltm_backward(
            grad_h, grad_c, x, W, h, c_new, gates, [bool(m) for m in mask]
        )
        columns = [d_X[:, :state]] * need_h + [d_X[:, state:]] * need_x
        want_X = torch.cat(columns, 1) if columns else d_X.new_empty((batch, 0))
        tol = {"rtol": 1e-5, "atol": 1e-6}  # a GEMM over fewer columns may sum in another order
        torch.testing.assert_close(got[0], want_X, **tol)
        torch.testing.assert_close(got[1], d_W if need_W else W.new_empty((0,)), **tol)
        torch.testing.assert_close(got[2], d_b if need_b else W.new_empty((0,)), **tol)
        torch.testing.assert_close(got[3], d_c, rtol=0, atol=0)


@pytest.mark.parametrize(
    "needs", ["W b", "x", "h", "c", "x W b h c", "W", "b c"], ids=lambda n: n.replace(" ", "")
)
def test_gradients_only_where_needed(device, needs):
    # Autograd asks only for the gradients of inputs that require them; those
    # equal the reference's. On the GEMM path, the profiler counts the GEMMs
    # the backward ran: one for d_X when x or h needs it, one for d_W.
    gen = torch.Generator().manual_seed(51)
    ins = _inputs(64, 256, 512, torch.float32, gen, device)
    ours = [t.clone().requires_grad_(n in needs.split()) for n, t in zip("xWbhc", ins, strict=True)]
    refs = [t.double().requires_grad_(o.requires_grad) for o, t in zip(ours, ins, strict=True)]
    h, c = kernforge.lltm(*ours)
    rh, rc = reference.lltm(*refs)
    gh, gc = random(h.shape, torch.float32, device, gen), random(c.shape, torch.float32, device, gen)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.autograd.backward((h, c), (gh, gc))
    torch.autograd.backward((rh, rc), (gh.double(), gc.double()))
    for name, o, r in zip("xWbhc", ours, refs, strict=True):
        if o.requires_grad:
            close(o.grad, r.grad.float(), **TOL[torch.float32])
        else:
            assert o.grad is None, name
    gemms = sum(e.count for e in prof.key_averages() if e.key in ("aten::mm", "aten::addmm"))
    assert gemms == ("x" in needs or "h" in needs) + ("W" in needs)


def test_double_backward_raises(device):
    # First derivatives with create_graph=True equal the reference's; a second
    # backward through the op raises instead of returning zeros.
    gen = torch.Generator().manual_seed(53)
    ins = [t.requires_grad_() for t in _inputs(5, 7, 3, torch.float64, gen, device)]
    refs = [t.detach().clone().requires_grad_() for t in ins]
    h, c = kernforge.lltm(*ins)
    rh, rc = reference.lltm(*refs)
    grads = torch.autograd.grad((h * h).sum() + c.sum(), ins, create_graph=True)
    want = torch.autograd.grad((rh * rh).sum() + rc.sum(), refs)
    for g, r in zip(grads, want, strict=True):
        close(g, r, **TOL[torch.float64])
    with pytest.raises(NotImplementedError, match="kernforge::lltm: double backward is not implemented"):
        sum(g.sum() for g in grads).backward()


@pytest.mark.parametrize("size", [(300, 8, 256), (8200, 2, 256)], ids=str)
def test_cpu_bias_gradient_is_the_same_for_any_thread_count(size):
    # The CPU backward adds d_b up per chunk of rows, then over the chunks in
    # order. The chunks are set by the sizes alone (128 rows here, at most 64
    # chunks: (8200, 2, 256) has 64 of 129 rows), not by the thread count.
    gen = torch.Generator().manual_seed(45)
    ins = _inputs(*size, torch.float32, gen)
    _, c_new, gates = torch.ops.kernforge.lltm_forward(*ins)
    x, W, _, h, _ = ins
    grad_h, grad_c = (random(c_new.shape, torch.float32, "cpu", gen) for _ in range(2))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = torch.ops.kernforge.lltm_backward(grad_h, grad_c, x, W, h, c_new, gates, ALL)
    finally:
        torch.set_num_threads(threads)
    several = torch.ops.kernforge.lltm_backward(grad_h, grad_c, x, W, h, c_new, gates, ALL)
    # d_b and d_c (MKL's GEMMs for d_X and d_W may split their sums by thread).
    for a, b in zip(one[2:], several[2:], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    refs = [t.double().requires_grad_() for t in ins]
    torch.autograd.backward(reference.lltm(*refs), (grad_h.double(), grad_c.double()))
    close(several[2], refs[2].grad.float(), **TOL[torch.float32])


def test_only_the_cell_gradient_flows(device):
    gen = torch.Generator().manual_seed(37)
    x, W, b, h, c = _inputs(4, 3, 5, torch.float64, gen, device)
    c.requires_grad_()
    _, c_new = kernforge.lltm(x, W, b, h, c)
    c_new.sum().backward()  # h' unused: its gradient is zero
    assert torch.all(c.grad == 1)


@pytest.mark.parametrize("size", [(3, 4, 5), (2, 2, 3)], ids=str)
def test_gradcheck(device, size):
    gen = torch.Generator().manual_seed(41)
    ins = [t.requires_grad_() for t in _inputs(*size, torch.float64, gen, device)]
    assert torch.autograd.gradcheck(kernforge.lltm, ins)


@pytest.mark.parametrize("size", [(3, 4, 5), (64, 256, 512)], ids=str)
def test_opcheck(device, size):
    gen = torch.Generator().manual_seed(43)
    ins = _inputs(*size, torch.float32, gen, device)
    torch.library.opcheck(torch.ops.kernforge.lltm_forward.default, tuple(t.requires_grad_() for t in ins))
    x, W, b, h, c = (t.detach() for t in ins)
    h_new, c_new, gates = torch.ops.kernforge.lltm_forward(x, W, b, h, c)
    torch.library.opcheck(
        torch.ops.kernforge.lltm_backward.default,
        (torch.randn_like(h_new), torch.randn_like(c_new), x, W, h, c_new, gates, ALL),
    )
    torch.library.opcheck(
        torch.ops.kernforge.lltm_backward.default,
        (torch.randn_like(h_new), torch.randn_like(c_new), x, W, h, c_new, gates, [False, True, False, True]),
    )


def test_compile_unrolled_sequence_forward_and_backward(device):
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(47)
    cell = kernforge.nn.LLTM(6, 8, device=device, dtype=torch.float64)
    xs = random((5, 4, 6), torch.float64, device, gen)
    h0 = c0 = torch.zeros(4, 8, dtype=torch.float64, device=device)

    def run(step, xs):
        h, c = h0, c0
        for t in range(xs.shape[0]):
            h, c = step(xs[t], (h, c))
        return h.sum() + c.sum()

    compiled = torch.compile(lambda xs: run(cell, xs), fullgraph=True)
    loss = compiled(xs)
    grads = torch.autograd.grad(loss, list(cell.parameters()))
    ref_loss = run(cell.reference, xs)
    ref_grads = torch.autograd.grad(ref_loss, list(cell.parameters()))
    close(loss, ref_loss)
    for g, r in zip(grads, ref_grads, strict=True):
        close(g, r)


def _t(*shape, dtype=torch.float32):
    return torch.randn(shape, dtype=torch.float64).to(dtype)


ERRORS = [
    (
        "x_rank",
        lambda: (_t(2, 3, 1), _t(12, 7), _t(12), _t(2, 4), _t(2, 4)),
        "x must be 2-D, got x: [2, 3, 1]",
    ),
    ("b_rank", lambda: (_t(2, 3), _t(12, 7), _t(1, 12), _t(2, 4), _t(2, 4)), "b must be 1-D, got b: [1, 12]"),
    (
        "W_shape",
        lambda: (_t(2, 3), _t(12, 6), _t(12), _t(2, 4), _t(2, 4)),
        "W must be [3 * state, state + features] = [12, 7], got W: [12, 6] float32 cpu",
    ),
    ("b_size", lambda: (_t(2, 3), _t(12, 7), _t(11), _t(2, 4), _t(2, 4)), "b must be [3 * state] = [12]"),
    (
        "batch",
        lambda: (_t(3, 3), _t(12, 7), _t(12), _t(2, 4), _t(2, 4)),
        "x, h and c must have one batch size",
    ),
    (
        "dtype",
        lambda: (_t(2, 3), _t(12, 7, dtype=torch.float64), _t(12), _t(2, 4), _t(2, 4)),
        "expected tensors of one dtype",
    ),
    (
        "int",
        lambda: (torch.ones(2, 3, dtype=torch.int32), _t(12, 7), _t(12), _t(2, 4), _t(2, 4)),
        "unsupported dtype",
    ),
]


@pytest.mark.parametrize("name,build,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_input(name, build, message):
    args = build()
    with pytest.raises(RuntimeError, match=re.escape(f"kernforge::lltm: {message}")):
        kernforge.lltm(*args)
    mode = FakeTensorMode()
    with mode, pytest.raises(RuntimeError, match=re.escape(f"kernforge::lltm: {message}")):
        torch.ops.kernforge.lltm_forward(*[mode.from_tensor(a) for a in args])


@pytest.mark.cuda
def test_mixed_devices():
    x, W, b, h, c = (_t(2, 3), _t(12, 7), _t(12), _t(2, 4), _t(2, 4))
    with pytest.raises(RuntimeError, match=re.escape("kernforge::lltm: expected all tensors on one device")):
        kernforge.lltm(x.cuda(), W.cuda(), b.cuda(), h, c.cuda())
    with pytest.raises(RuntimeError, match=re.escape("kernforge::lltm: expected all tensors on one device")):
        kernforge.lltm(x.cuda(), W.cuda(), b, h.cuda(), c.cuda())


BACKWARD_ERRORS = [
    ("gates", {"gates": _t(2, 11)}, "gates must be [batch, 3 * state] = [2, 12], got gates: [2, 11]"),
    ("W", {"W": _t(12, 8)}, "W must be [3 * state, state + features] = [12, 7], got W: [12, 8]"),
    ("x", {"x": _t(3, 3)}, "h must be [B, S] and x [B, F], got x: [3, 3]"),
    ("grad_c", {"grad_c": _t(2, 5)}, "expected tensors of equal shape"),
    ("dtype", {"gates": _t(2, 12, dtype=torch.float64)}, "expected tensors of one dtype"),
]


@pytest.mark.parametrize("name,change,message", BACKWARD_ERRORS, ids=[e[0] for e in BACKWARD_ERRORS])
def test_bad_backward_input(device, name, change, message):
    args = {"grad_h": _t(2, 4), "grad_c": _t(2, 4), "x": _t(2, 3), "W": _t(12, 7), "h": _t(2, 4)}
    args |= {"c_new": _t(2, 4), "gates": _t(2, 12)}
    args = {k: v.to(device) for k, v in (args | change).items()}
    expected = re.escape(f"kernforge::lltm_backward: {message}")
    with pytest.raises(RuntimeError, match=expected):
        torch.ops.kernforge.lltm_backward(*args.values(), ALL)
    mode = FakeTensorMode()
    with mode, pytest.raises(RuntimeError, match=expected):
        torch.ops.kernforge.lltm_backward(*[mode.from_tensor(a) for a in args.values()], ALL)


@pytest.mark.parametrize("mask", [[True] * 3, [True] * 5], ids=["3", "5"])
def test_bad_output_mask(device, mask):
    args = [_t(2, 4), _t(2, 4), _t(2, 3), _t(12, 7), _t(2, 4), _t(2, 4), _t(2, 12)]
    expected = re.escape(
        f"kernforge::lltm_backward: output_mask must have 4 entries (x, W, b, h), got {len(mask)}"
    )
    with pytest.raises(RuntimeError, match=expected):
        torch.ops.kernforge.lltm_backward(*[a.to(device) for a in args], mask)
    mode = FakeTensorMode()
    with mode, pytest.raises(RuntimeError, match=expected):
        torch.ops.kernforge.lltm_backward(*[mode.from_tensor(a) for a in args], mask)


def test_module_init_and_reference():
    torch.manual_seed(0)
    cell = kernforge.nn.LLTM(10, 16)
    bound = 16**-0.5
    for p in cell.parameters():
        assert p.abs().max() <= bound and p.std() > bound / 4
    assert repr(cell) == "LLTM(input_features=10, state_size=16)"
    with pytest.raises(ValueError, match="must be positive"):
        kernforge.nn.LLTM(0, 4)


def test_training_loss_matches_the_reference_module(device):
    # A few hundred steps on a synthetic sequence task, once through the
    # kernels and once through the reference, from the same initial weights.
    def train(use_reference: bool) -> list[float]:
        torch.manual_seed(1)
        kw = {"device": device, "dtype": torch.float64}
        cell = kernforge.nn.LLTM(4, 8, **kw)
        head = torch.nn.Linear(8, 1, **kw)
        opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-2)
        data = torch.Generator().manual_seed(2)
        step = cell.reference if use_reference else cell
        losses = []
        for _ in range(200):
            xs = torch.randn(6, 16, 4, generator=data, dtype=torch.float64).to(device)
            target = xs[..., 0].sum(0, keepdim=True).T  # the running sum of feature 0
            h = c = torch.zeros(16, 8, **kw)
            for t in range(xs.shape[0]):
                h, c = step(xs[t], (h, c))
            loss = (head(h) - target).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    ours, ref = train(False), train(True)
    assert ours[-1] < 0.2 * ours[0]  # it learns
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(ref), rtol=1e-6, atol=1e-8)


@pytest.mark.cuda
@pytest.mark.parametrize("size", [(16, 32, 128), (64, 256, 512)], ids=str)
def test_cuda_graph_training_step(size):
    # Forward, backward and an SGD step captured once, replayed on new data;
    # the same steps run eagerly through the reference module must agree.
    batch, features, state = size
    torch.manual_seed(3)
    kw = {"device": "cuda", "dtype": torch.float64}  # float64: the two sides differ by rounding only
    cell = kernforge.nn.LLTM(features, state, **kw)
    ref = kernforge.nn.LLTM(features, state, **kw)
    ref.load_state_dict(cell.state_dict())
    opt = torch.optim.SGD(cell.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    static = [torch.randn(batch, s, **kw) for s in (features, state, state)]

    def step():
        opt.zero_grad(set_to_none=False)
        h, c = cell(static[0], (static[1], static[2]))
        (h.square().sum() + c.sum()).backward()
        opt.step()

    with torch.no_grad():
        snapshot = [p.clone() for p in cell.parameters()]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: .grad tensors, cuBLAS handles, autograd state
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    with torch.no_grad():  # start both modules level
        for p, s in zip(cell.parameters(), snapshot, strict=True):
            p.copy_(s)
    for _ in range(3):
        data = [torch.randn_like(t) for t in static]
        for t, d in zip(static, data, strict=True):
            t.copy_(d)
        graph.replay()
        ref_opt.zero_grad()
        h, c = ref.reference(data[0], (data[1], data[2]))
        (h.square().sum() + c.sum()).backward()
        ref_opt.step()
        torch.cuda.synchronize()
        for p, r in zip(cell.parameters(), ref.parameters(), strict=True):
            torch.testing.assert_close(p, r, rtol=1e-9, atol=1e-9)
            torch.testing.assert_close(p.grad, r.grad, rtol=1e-9, atol=1e-9)
