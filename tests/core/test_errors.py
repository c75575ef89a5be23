"""Bad input: a RuntimeError naming the op, the argument, its shape, dtype and
device, before any kernel runs; the fake kernels (tracing, torch.compile) give
the very same message as the real ones."""

from __future__ import annotations

import re

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import kernforge

ops = torch.ops.kernforge


def _t(*shape, dtype=torch.float32, device="cpu"):
    return torch.randn(shape, dtype=torch.float64).to(dtype=dtype, device=device)


CASES = [
    (
        "shape",
        lambda: (ops.mul.default, (_t(3, 4), _t(4))),
        "kernforge::mul: expected tensors of equal shape, got a: [3, 4] float32 cpu, b: [4] float32 cpu",
    ),
    (
        "dtype_mismatch",
        lambda: (ops.add.default, (_t(3), _t(3, dtype=torch.float64), 1.0)),
        "kernforge::add: expected tensors of one dtype, got a: [3] float32 cpu, b: [3] float64 cpu",
    ),
    (
        "int_mul",
        lambda: (ops.mul.default, (torch.ones(2, dtype=torch.int32), torch.ones(2, dtype=torch.int32))),
        "kernforge::mul: unsupported dtype: expected float16, bfloat16, float32 or float64, "
        "got a: [2] int32 cpu",
    ),
    (
        "bool_add",
        lambda: (ops.add.default, (torch.ones(2, dtype=torch.bool), torch.ones(2, dtype=torch.bool), 1.0)),
        "kernforge::add: unsupported dtype: expected float16, bfloat16, float32, float64, int32 or int64, "
        "got a: [2] bool cpu",
    ),
    (
        "complex",
        lambda: (ops.mul.default, (_t(2), torch.ones(2, dtype=torch.complex64))),
        "kernforge::mul: unsupported dtype: expected float16, bfloat16, float32 or float64, "
        "got b: [2] complex64 cpu",
    ),
    (
        "int_fused",
        lambda: (ops.fused_relu_add.default, (torch.ones(2, dtype=torch.int64),) * 2 + (None, 0.0)),
        "kernforge::fused_relu_add: unsupported dtype: expected float16, bfloat16, float32 or float64, "
        "got x: [2] int64 cpu",
    ),
    (
        "bias_size",
        lambda: (ops.fused_relu_add.default, (_t(2, 5), _t(2, 5), _t(4), 0.0)),
        "kernforge::fused_relu_add: bias must be 1-D with 5 elements (the size of the last dimension "
        "of x), got x: [2, 5] float32 cpu, bias: [4] float32 cpu",
    ),
    (
        "bias_rank",
        lambda: (ops.fused_relu_add.default, (_t(2, 5), _t(2, 5), _t(1, 5), 0.0)),
        "kernforge::fused_relu_add: bias must be 1-D with 5 elements (the size of the last dimension "
        "of x), got x: [2, 5] float32 cpu, bias: [1, 5] float32 cpu",
    ),
    (
        "bias_dtype",
        lambda: (ops.fused_relu_add.default, (_t(2, 5), _t(2, 5), _t(5, dtype=torch.float16), 0.0)),
        "kernforge::fused_relu_add: expected tensors of one dtype, got x: [2, 5] float32 cpu, "
        "bias: [5] float16 cpu",
    ),
    (
        "bias_zero_dim_x",
        lambda: (ops.fused_relu_add.default, (_t(), _t(), _t(1), 0.0)),
        "kernforge::fused_relu_add: a tensor bias needs x with at least one dimension, "
        "got x: [] float32 cpu, bias: [1] float32 cpu",
    ),
    (
        "int_alpha",
        lambda: (ops.add.default, (torch.ones(2, dtype=torch.int32), torch.ones(2, dtype=torch.int32), 0.5)),
        "kernforge::add: alpha must be an integer for int32 tensors, got 0.500000",
    ),
]


@pytest.mark.parametrize("name,build,message", CASES, ids=[c[0] for c in CASES])
def test_eager_error_message(name, build, message):
    op, args = build()
    before = [a.clone() if isinstance(a, torch.Tensor) and a.layout == torch.strided else a for a in args]
    with pytest.raises(RuntimeError, match=re.escape(message)):
        op(*args)
    for a, b in zip(args, before, strict=True):  # nothing written into the inputs
        if isinstance(b, torch.Tensor):
            assert torch.equal(a, b)


@pytest.mark.parametrize(
    "name,build,message",
    [c for c in CASES if c[0] != "sparse"],
    ids=[c[0] for c in CASES if c[0] != "sparse"],
)
def test_fake_kernel_gives_the_same_message(name, build, message):
    op, args = build()
    mode = FakeTensorMode()
    fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
    with mode, pytest.raises(RuntimeError, match=re.escape(message)):
        op(*fake)


@pytest.mark.cuda
def test_cpu_cuda_mix():
    a, b = _t(3), _t(3, device="cuda")
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "kernforge::mul: expected all tensors on one device, "
            "got a: [3] float32 cpu, b: [3] float32 cuda:0"
        ),
    ):
        kernforge.mul(a, b)
    bias = _t(3)
    with pytest.raises(RuntimeError, match="expected all tensors on one device"):
        kernforge.fused_relu_add(b, b, bias)


@pytest.mark.cuda
@pytest.mark.multi_gpu
def test_two_gpus_mix():
    message = "got a: [3] float32 cuda:0, b: [3] float32 cuda:1"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        kernforge.mul(_t(3, device="cuda:0"), _t(3, device="cuda:1"))


def test_sparse_is_refused_by_the_dispatcher():
    a = _t(2, 2).to_sparse()
    with pytest.raises(
        NotImplementedError, match="Could not run 'kernforge::mul' with arguments from the 'SparseCPU'"
    ):
        kernforge.mul(a, a)


def test_non_tensor_argument():
    with pytest.raises((TypeError, RuntimeError), match="b"):
        kernforge.mul(_t(3), [1.0, 2.0, 3.0])


def test_compile_raises_the_same_error():
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: kernforge.mul(a, b), fullgraph=True)
    with pytest.raises(Exception, match=re.escape("expected tensors of equal shape")):
        f(_t(3, 4), _t(4))
