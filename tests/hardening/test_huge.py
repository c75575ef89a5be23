"""Inputs of more than 2^31 elements: every op, forward and backward, on
bfloat16 tensors of 2^31 + 17 elements (or, for the LLTM, state and cell of
more than 2^31), compared in chunks with the result computed another way.
A 32-bit index anywhere on the way would wrap and write the wrong elements;
outputs start as NaN, so an element never written shows too.

Each test needs tens of GiB of GPU memory and is skipped, saying how much,
where less is free."""

from __future__ import annotations

import pytest
import torch

import kernforge
from conftest import poison_allocator
from kernforge import reference

pytestmark = [pytest.mark.cuda, pytest.mark.huge]

N = 2**31 + 17
GiB = 2**30
CHUNK = 2**27


def _need(gib: float) -> None:
    free, _ = torch.cuda.mem_get_info()
    if free < gib * GiB:
        pytest.skip(f"needs {gib:.0f} GiB of free GPU memory, {free / GiB:.1f} GiB free")


@pytest.fixture(autouse=True)
def _release_memory():
    yield
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def _random(shape, gen, uniform=False) -> torch.Tensor:
    """bfloat16 values, normal (or uniform in [0, 1)), made in chunks."""
    out = torch.empty(shape, dtype=torch.bfloat16, device="cuda")
    flat = out.view(-1)
    draw = torch.rand if uniform else torch.randn
    for start in range(0, flat.numel(), CHUNK):
        part = flat[start : start + CHUNK]
        part.copy_(draw(part.numel(), device="cuda", generator=gen))
    return out


def _assert_equal_chunks(actual: torch.Tensor, expected_fn, what: str) -> None:
    """`actual` (flat) equals expected_fn(start, stop) chunk by chunk, bit for bit."""
    flat = actual.reshape(-1)
    assert flat.numel() > 2**31
    for start in range(0, flat.numel(), CHUNK):
        stop = min(start + CHUNK, flat.numel())
        with torch.no_grad():
            got, want = flat[start:stop], expected_fn(start, stop)
        if not torch.equal(got, want):
            bad = (got != want).nonzero()[0].item() + start
            expected = want.reshape(-1)[bad - start].item()
            raise AssertionError(f"{what}: element {bad} is {flat[bad].item()}, expected {expected}")


def _by_rows(fn, cols: int):
    """An expected_fn over flat ranges from `fn(r0, r1)`, the expected rows r0:r1."""

    def expected(i, j):
        r0, r1 = i // cols, (j + cols - 1) // cols
        return fn(r0, r1).reshape(-1)[i - r0 * cols : j - r0 * cols]

    return expected


def test_mul_and_its_gradients():
    _need(26)
    gen = torch.Generator(device="cuda").manual_seed(0)
    a, b = _random(N, gen).requires_grad_(), _random(N, gen).requires_grad_()
    poison_allocator(a)
    out = kernforge.mul(a, b)
    _assert_equal_chunks(out, lambda i, j: a[i:j].detach() * b[i:j].detach(), "mul")
    del out
    grad = _random(N, gen)
    poison_allocator(a)
    ga, gb = torch.autograd.grad(kernforge.mul(a, b), (a, b), grad)
    _assert_equal_chunks(ga, lambda i, j: grad[i:j] * b[i:j].detach(), "mul grad a")
    _assert_equal_chunks(gb, lambda i, j: grad[i:j] * a[i:j].detach(), "mul grad b")


def test_mul_strided_path_with_a_stride_zero_input():
    _need(14)
    gen = torch.Generator(device="cuda").manual_seed(1)
    cols = 1031
    rows = N // cols + 1
    a = _random((rows, cols), gen)
    row = _random((1, cols), gen)
    poison_allocator(a)
    out = kernforge.mul(a, row.expand(rows, cols))
    _assert_equal_chunks(out, _by_rows(lambda r0, r1: a[r0:r1] * row, cols), "mul strided")


def test_add_and_its_gradients():
    _need(26)
    gen = torch.Generator(device="cuda").manual_seed(2)
    a, b = _random(N, gen).requires_grad_(), _random(N, gen).requires_grad_()
    poison_allocator(a)
    out = kernforge.add(a, b, alpha=0.5)
    # a + 0.5 b: the product is exact, so one rounding either way.
    _assert_equal_chunks(out, lambda i, j: torch.add(a[i:j].detach(), b[i:j].detach(), alpha=0.5), "add")
    del out
    grad = _random(N, gen)
    poison_allocator(a)
    ga, gb = torch.autograd.grad(kernforge.add(a, b, alpha=0.5), (a, b), grad)
    assert torch.equal(ga, grad)
    _assert_equal_chunks(gb, lambda i, j: grad[i:j] * 0.5, "add grad b")


def test_fused_relu_add_with_bias_and_its_gradients():
    _need(30)
    gen = torch.Generator(device="cuda").manual_seed(3)
    cols = 1031
    rows = N // cols + 1
    x, y = _random((rows, cols), gen).requires_grad_(), _random((rows, cols), gen)
    bias = _random(cols, gen).requires_grad_()
    poison_allocator(y)
    out = kernforge.fused_relu_add(x, y, bias)

    def expected(r0, r1):  # in float32, in the kernel's order, rounded once
        return (torch.relu(x[r0:r1].detach().float()) + y[r0:r1].float() + bias.detach().float()).bfloat16()

    _assert_equal_chunks(out, _by_rows(expected, cols), "fused_relu_add")
    del out
    grad = _random((rows, cols), gen)
    poison_allocator(grad)
    gx, gbias = torch.autograd.grad(kernforge.fused_relu_add(x, y, bias), (x, bias), grad)
    relu_grad = lambda r0, r1: torch.where(x[r0:r1].detach() > 0, grad[r0:r1], 0)
    _assert_equal_chunks(gx, _by_rows(relu_grad, cols), "fused_relu_add grad x")
    want = torch.zeros(cols, dtype=torch.float64, device="cuda")
    for r in range(0, rows, CHUNK // cols):
        want += grad[r : r + CHUNK // cols].double().sum(0)
    torch.testing.assert_close(gbias.double(), want, rtol=1e-2, atol=1e-2 * want.abs().max().item())


def test_round_ste_and_its_gradient():
    _need(18)
    gen = torch.Generator(device="cuda").manual_seed(4)
    x = _random(N, gen, uniform=True).requires_grad_()
    poison_allocator(x)
    out = kernforge.round_ste(x)
    _assert_equal_chunks(out, lambda i, j: (x[i:j].detach() >= 0.5).bfloat16(), "round_ste")
    del out
    grad = _random(N, gen)
    (gx,) = torch.autograd.grad(kernforge.round_ste(x), (x,), grad)
    assert torch.equal(gx, grad)


def test_lltm_state_of_more_than_2_31_elements():
    """h and c of [2^28 + 3, 8] (2^31 + 24 elements), gates of three times
    that: forward and backward of h'.sum() + c'.sum(); rows at the start, the
    middle and the end (past element 2^31) against the reference on those
    rows alone, d_W and d_b against the reference summed over chunks."""
    _need(70)
    gen = torch.Generator(device="cuda").manual_seed(5)
    batch, features, state = 2**28 + 3, 1, 8
    assert batch * state > 2**31
    x = _random((batch, features), gen).requires_grad_()
    h = _random((batch, state), gen).requires_grad_()
    c = _random((batch, state), gen).requires_grad_()
    W = (_random((3 * state, state + features), gen) / 4).requires_grad_()
    b = _random(3 * state, gen).requires_grad_()
    h_new, c_new = kernforge.lltm(x, W, b, h, c)
    dx, dW, db, dh, dc = torch.autograd.grad(h_new.sum() + c_new.sum(), (x, W, b, h, c))

    def ref(rows):
        leaves = [t[rows].detach().float().requires_grad_() for t in (x, h, c)]
        w = [W.detach().float().requires_grad_(), b.detach().float().requires_grad_()]
        hn, cn = reference.lltm(leaves[0], w[0], w[1], leaves[1], leaves[2])
        grads = torch.autograd.grad(hn.sum() + cn.sum(), (*leaves, *w))
        return hn.detach(), cn.detach(), *grads

    tol = {"rtol": 3e-2, "atol": 3e-2}
    last = batch - 4096
    for rows in (slice(0, 4096), slice(batch // 2, batch // 2 + 4096), slice(last, batch)):
        want_h, want_c, want_dx, want_dh, want_dc, _, _ = ref(rows)
        for got, want in ((h_new, want_h), (c_new, want_c), (dx, want_dx), (dh, want_dh), (dc, want_dc)):
            assert not torch.isnan(got[rows]).any()
            torch.testing.assert_close(got[rows].float(), want, **tol)
    want_dW = torch.zeros_like(W, dtype=torch.float64)
    want_db = torch.zeros_like(b, dtype=torch.float64)
    for start in range(0, batch, 2**24):
        *_, part_dW, part_db = ref(slice(start, start + 2**24))
        want_dW += part_dW.double()
        want_db += part_db.double()
    for got, want in ((dW, want_dW), (db, want_db)):
        torch.testing.assert_close(got.double(), want, rtol=2e-2, atol=2e-2 * want.abs().max().item())
