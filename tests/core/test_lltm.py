"""The LLTM cell against its pure-PyTorch reference on the CPU (CUDA kernels
are not written yet): forward, every gradient, opcheck, gradcheck,
torch.compile over an unrolled sequence, and bad input."""

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


def _inputs(batch, features, state, dtype, gen):
    x = random((batch, features), dtype, "cpu", gen)
    W = random((3 * state, state + features), dtype, "cpu", gen) * (state + features) ** -0.5
    b = random((3 * state,), dtype, "cpu", gen)
    h = random((batch, state), dtype, "cpu", gen)
    c = random((batch, state), dtype, "cpu", gen)
    return [t.to(dtype) for t in (x, W, b, h, c)]


@pytest.mark.parametrize("dtype", list(TOL), ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("size", [(1, 1, 1), (5, 7, 3), (16, 32, 128)], ids=str)
def test_forward_and_gradients_match_reference(dtype, size):
    gen = torch.Generator().manual_seed(31)
    ins = _inputs(*size, dtype, gen)
    ours = [t.clone().requires_grad_() for t in ins]
    refs = [t.double().requires_grad_() for t in ins]
    h, c = kernforge.lltm(*ours)
    rh, rc = reference.lltm(*refs)
    close(h, rh.to(dtype), **TOL[dtype])
    close(c, rc.to(dtype), **TOL[dtype])
    gh, gc = random(h.shape, dtype, "cpu", gen), random(c.shape, dtype, "cpu", gen)
    torch.autograd.backward((h, c), (gh, gc))
    torch.autograd.backward((rh, rc), (gh.double(), gc.double()))
    for name, o, r in zip("xWbhc", ours, refs, strict=True):
        assert o.grad is not None, name
        close(o.grad, r.grad.to(dtype), **TOL[dtype])


def test_only_the_cell_gradient_flows():
    gen = torch.Generator().manual_seed(37)
    x, W, b, h, c = _inputs(4, 3, 5, torch.float64, gen)
    c.requires_grad_()
    _, c_new = kernforge.lltm(x, W, b, h, c)
    c_new.sum().backward()  # h' unused: its gradient is zero
    assert torch.all(c.grad == 1)


def test_gradcheck():
    gen = torch.Generator().manual_seed(41)
    ins = [t.requires_grad_() for t in _inputs(3, 4, 5, torch.float64, gen)]
    assert torch.autograd.gradcheck(kernforge.lltm, ins)


def test_opcheck():
    gen = torch.Generator().manual_seed(43)
    ins = _inputs(3, 4, 5, torch.float32, gen)
    torch.library.opcheck(torch.ops.kernforge.lltm_forward.default, tuple(t.requires_grad_() for t in ins))
    x, W, b, h, c = (t.detach() for t in ins)
    h_new, c_new, gates = torch.ops.kernforge.lltm_forward(x, W, b, h, c)
    torch.library.opcheck(
        torch.ops.kernforge.lltm_backward.default,
        (torch.randn_like(h_new), torch.randn_like(c_new), x, W, h, c_new, gates),
    )


def test_compile_unrolled_sequence_forward_and_backward():
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(47)
    cell = kernforge.nn.LLTM(6, 8, dtype=torch.float64)
    xs = random((5, 4, 6), torch.float64, "cpu", gen)
    h0, c0 = torch.zeros(4, 8, dtype=torch.float64), torch.zeros(4, 8, dtype=torch.float64)

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


def test_module_init_and_reference():
    torch.manual_seed(0)
    cell = kernforge.nn.LLTM(10, 16)
    bound = 16**-0.5
    for p in cell.parameters():
        assert p.abs().max() <= bound and p.std() > bound / 4
    assert repr(cell) == "LLTM(input_features=10, state_size=16)"
    with pytest.raises(ValueError, match="must be positive"):
        kernforge.nn.LLTM(0, 4)


def test_training_loss_matches_the_reference_module():
    # A few hundred steps on a synthetic sequence task, once through the
    # kernels and once through the reference, from the same initial weights.
    def train(use_reference: bool) -> list[float]:
        torch.manual_seed(1)
        cell = kernforge.nn.LLTM(4, 8, dtype=torch.float64)
        head = torch.nn.Linear(8, 1, dtype=torch.float64)
        opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-2)
        data = torch.Generator().manual_seed(2)
        step = cell.reference if use_reference else cell
        losses = []
        for _ in range(200):
            xs = torch.randn(6, 16, 4, generator=data, dtype=torch.float64)
            target = xs[..., 0].sum(0, keepdim=True).T  # the running sum of feature 0
            h = c = torch.zeros(16, 8, dtype=torch.float64)
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
