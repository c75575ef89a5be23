"""round_ste (kernforge_legacy, kernels in the legacy C/CUDA style) against
``(x >= 0.5).to(x.dtype)`` on every device, float dtype and layout; the
straight-through gradient, opcheck, torch.compile and bad input. (No
gradcheck: a straight-through gradient is by design not the numerical one.)"""

from __future__ import annotations

import pytest
import torch

import kernforge
from conftest import FLOAT_DTYPES, make, poison_allocator, random
from kernforge import reference


def _expected(x):
    return (x >= 0.5).to(x.dtype)


@pytest.mark.parametrize("shape", [(37, 65), (3, 5, 129), (1,), (7,), (2**20 + 3,)])
def test_forward(device, float_dtype, layout, shape):
    gen = torch.Generator().manual_seed(len(shape) * 100 + shape[0])
    x = make(shape, float_dtype, device, layout, gen) + 0.5  # about half on each side
    poison_allocator(x)
    y = kernforge.round_ste(x)
    assert y.shape == x.shape and y.dtype == x.dtype and y.device == x.device and y.is_contiguous()
    assert torch.equal(y, _expected(x))  # NaN-poisoned output: an element not written fails here


def test_edge_values(device, float_dtype):
    x = torch.tensor([0.5, 0.4999, -0.0, 1.0, 2.5, -3.0, float("inf"), float("-inf"), float("nan")])
    x = x.to(float_dtype).to(device)
    y = kernforge.round_ste(x)
    assert torch.equal(y, _expected(x))
    assert y[0] == 1 and y[-1] == 0  # ties go up (torch.round(0.5) is 0); NaN gives 0


def test_empty(device, float_dtype):
    y = kernforge.round_ste(torch.empty(0, 3, dtype=float_dtype, device=device))
    assert y.shape == (0, 3)


def test_gradient_passes_straight_through(device, float_dtype):
    gen = torch.Generator().manual_seed(3)
    x = random((33, 17), float_dtype, device, gen).requires_grad_()
    grad = random((33, 17), float_dtype, device, gen)
    y = kernforge.round_ste(x)
    y.backward(grad)
    assert torch.equal(x.grad, grad)
    ref_x = x.detach().clone().requires_grad_()
    reference.round_ste(ref_x).backward(grad)
    assert torch.equal(ref_x.grad, grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_opcheck(device, dtype):
    x = torch.randn(4, 9, dtype=dtype, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.kernforge_legacy.round_ste.default, (x,))


def test_compile_fullgraph(device):
    fn = torch.compile(lambda t: kernforge.round_ste(t * 2) + t, fullgraph=True)
    x = torch.randn(64, 33, device=device, requires_grad=True)
    y = fn(x)
    torch.testing.assert_close(y, _expected(x * 2) + x)
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 3.0))


def test_module(device):
    x = torch.randn(5, 8, device=device)
    assert torch.equal(kernforge.nn.RoundSTE()(x), _expected(x))


@pytest.mark.parametrize(
    "x",
    [
        torch.arange(4, dtype=torch.int32),
        torch.ones(3, dtype=torch.bool),
        torch.ones(3, dtype=torch.complex64),
    ],
    ids=["int32", "bool", "complex64"],
)
@pytest.mark.parametrize("where", ["eager", "fake"])
def test_bad_dtype(x, where):
    if where == "fake":
        x = x.to("meta")
    dtype = str(x.dtype).removeprefix("torch.")
    with pytest.raises(
        RuntimeError,
        match=rf"kernforge_legacy::round_ste: expected a dense float16, bfloat16, float32 or float64 CPU or "
        rf"CUDA tensor, got {dtype} torch.strided on {x.device}",
    ):
        torch.ops.kernforge_legacy.round_ste(x)


def test_sparse_input_is_refused():
    with pytest.raises(RuntimeError, match=r"round_ste"):
        kernforge.round_ste(torch.eye(3).to_sparse())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_reference_fallback_matches(dtype):
    x = torch.randn(100, dtype=dtype)
    assert torch.equal(reference.round_ste(x), kernforge.round_ste(x))
