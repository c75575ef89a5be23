"""Storage offsets of 1, 2 and 3 elements, odd sizes, every transposed and
sliced view, channels-last and expanded (stride 0) inputs: every op, forward
and backward, gives the reference's result with every output element
written. On CUDA the 16-byte vectorized kernels must run exactly when every
full-size pointer is 16-byte aligned and contiguous; the tests read which
kernel ran off the names the profiler records."""

from __future__ import annotations

import itertools
import re

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import kernforge
from conftest import DEVICES, close, poison_allocator
from every_op import forward_backward, leaf_view
from kernforge import reference

SHAPE = (5, 37, 33)  # odd everywhere: 6105 elements, no multiple of any vector width
SHAPE_4D = (2, 5, 7, 9)  # for channels-last


# A layout builds a tensor of a logical shape from `fill(stored_shape)`, the
# values of the storage it views.


def _offset(k: int):
    def build(shape, fill):
        return fill((torch.Size(shape).numel() + k,))[k:].view(shape)

    return build


def _permuted(perm):
    def build(shape, fill):
        return fill([shape[p] for p in perm]).permute(*[perm.index(d) for d in range(len(shape))])

    return build


def _step2(dim: int):
    def build(shape, fill):
        stored = list(shape)
        stored[dim] *= 2
        return fill(stored)[(slice(None),) * dim + (slice(None, None, 2),)]

    return build


def _narrowed(dim: int):
    def build(shape, fill):  # one element cut off each end of `dim`
        stored = list(shape)
        stored[dim] += 2
        return fill(stored).narrow(dim, 1, shape[dim])

    return build


def _expanded(dim: int):
    def build(shape, fill):
        stored = list(shape)
        stored[dim] = 1
        return fill(stored).expand(shape)

    return build


def _channels_last(offset: int):
    def build(shape, fill):  # NCHW logical shape, stored as NHWC from `offset` on
        n, c, h, w = shape
        return _offset(offset)((n, h, w, c), fill).permute(0, 3, 1, 2)

    return build


def _families(ndim: int) -> dict:
    """Every layout of an `ndim`-dimensional tensor this file tries."""
    layouts = {f"offset{k}": _offset(k) for k in (0, 1, 2, 3)}
    for perm in itertools.permutations(range(ndim)):
        if list(perm) != list(range(ndim)):
            layouts["permute" + "".join(map(str, perm))] = _permuted(list(perm))
    for d in range(ndim):
        layouts[f"step2_dim{d}"] = _step2(d)
        layouts[f"narrow_dim{d}"] = _narrowed(d)
        layouts[f"expand_dim{d}"] = _expanded(d)
    return layouts


LAYOUTS = {name: (SHAPE, build) for name, build in _families(3).items()}
LAYOUTS["channels_last"] = (SHAPE_4D, _channels_last(0))
LAYOUTS["channels_last_offset1"] = (SHAPE_4D, _channels_last(1))
# An offset of 16 bytes keeps the pointer aligned: the vectorized path may run.
ALIGNED_OFFSET = {torch.float16: 8, torch.bfloat16: 8, torch.float32: 4, torch.float64: 2}
FLOATS = list(ALIGNED_OFFSET)
# op: inputs of full size
ELEMENTWISE = {
    "mul": 2,
    "add": 2,
    "fused_relu_add": 2,
    "round_ste": 1,
}


def _fill(op, dtype, device, gen):
    """Values for `op`'s inputs: normal, or uniform in [0, 1) around
    round_ste's threshold."""
    draw = torch.rand if op == "round_ste" else torch.randn
    return lambda shape: draw(shape, generator=gen, dtype=torch.float64).to(dtype=dtype, device=device)


def _elementwise_args(op, layout, which, dtype, device) -> list[torch.Tensor]:
    """`op`'s inputs, the first (`which` = "first") or every full-size one
    ("all") laid out as `layout`, the others contiguous; fused_relu_add's
    bias is a contiguous row."""
    gen = torch.Generator().manual_seed(7)
    fill = _fill(op, dtype, device, gen)
    if layout.startswith("aligned_offset"):
        shape, build = SHAPE, _offset(ALIGNED_OFFSET[dtype])
    else:
        shape, build = LAYOUTS[layout]
    args = [build(shape, fill) if i == 0 or which == "all" else fill(shape) for i in range(ELEMENTWISE[op])]
    if op == "fused_relu_add":
        args.append(fill((shape[-1],)))
    return args


# (rtol, atol) against the float64 reference: one rounding apart, plus the
# rounding of the weighted loss's gradient in the low-precision types.
TOL = {torch.float16: (4e-3, 1e-3), torch.bfloat16: (3e-2, 1e-2), torch.float32: (1e-5, 1e-5),
       torch.float64: (1e-7, 1e-7)}  # fmt: skip


def _check_forward_backward(op, args, tol=None):
    """kernforge's outputs and input gradients, with `args`' layouts, equal
    the reference's computed in float64, with every output element written."""
    dtype = args[0].dtype
    rtol, atol = tol or TOL[dtype]
    expected = forward_backward(reference, op, [a.detach().double().requires_grad_() for a in args])
    views = [leaf_view(a) for a in args]
    for e in expected:
        poison_allocator(e.to(dtype))
    got = forward_backward(kernforge, op, views)
    for g, e in zip(got, expected, strict=True):
        close(g, e.to(dtype), rtol=rtol, atol=atol)


# The reduced selection nox -s sanitize runs: each path (vectorized with a
# tail, flat, strided with stride 0 and with permuted and stepped strides),
# in a 4-byte and a 2-byte type.
SANITIZE_LAYOUTS = {"offset0", "offset1", "permute210", "step2_dim2", "expand_dim0", "channels_last_offset1"}
SANITIZE = pytest.mark.sanitize


def _sanitized(layout, dtype):
    return [SANITIZE] if layout in SANITIZE_LAYOUTS and dtype in (torch.float32, torch.float16) else []


def _elementwise_cases(sanitize: bool) -> list:
    """(op, layout, which, dtype) params; with `sanitize`, the reduced
    selection carries the sanitize mark."""
    return [
        pytest.param(
            op,
            layout,
            which,
            dtype,
            id=f"{op}-{layout}-{which}-{str(dtype).removeprefix('torch.')}",
            marks=_sanitized(layout, dtype) if sanitize else [],
        )
        for op, arity in ELEMENTWISE.items()
        for layout in [*LAYOUTS, "aligned_offset"]
        for which in (["first", "all"] if arity > 1 else ["all"])
        for dtype in (FLOATS if "offset" in layout else [torch.float32])
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,layout,which,dtype", _elementwise_cases(sanitize=True))
def test_elementwise_layouts(device, op, layout, which, dtype):
    _check_forward_backward(op, _elementwise_args(op, layout, which, dtype, device))


LLTM_SIZES = {"small": (13, 11, 19), "gemm": (70, 33, 300)}  # (batch, features, state)
LLTM_LAYOUTS = {
    **{(arg, name): build for arg in ("x", "W", "h", "c") for name, build in _families(2).items()},
    **{("b", f"offset{k}"): _offset(k) for k in (1, 2, 3)},
    ("b", "step2_dim0"): _step2(0),
    ("b", "expand_dim0"): _expanded(0),
}
LLTM_SANITIZE = {
    ("x", "offset1"),
    ("W", "permute10"),
    ("h", "expand_dim0"),
    ("c", "step2_dim1"),
    ("b", "offset1"),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", LLTM_SIZES)
@pytest.mark.parametrize(
    "arg,layout",
    [
        pytest.param(
            arg, layout, id=f"{arg}-{layout}", marks=[SANITIZE] if (arg, layout) in LLTM_SANITIZE else []
        )
        for arg, layout in LLTM_LAYOUTS
    ],
)
def test_lltm_layouts(device, size, arg, layout):
    batch, features, state = LLTM_SIZES[size]
    shapes = {"x": (batch, features), "W": (3 * state, state + features), "b": (3 * state,),
              "h": (batch, state), "c": (batch, state)}  # fmt: skip
    gen = torch.Generator().manual_seed(11)
    fill = _fill("lltm", torch.float32, device, gen)
    args = [
        LLTM_LAYOUTS[arg, layout](shape, fill) if name == arg else fill(shape)
        for name, shape in shapes.items()
    ]
    args[1] = args[1] / 10  # W: keep the gates away from saturation
    _check_forward_backward("lltm", args, tol=(1e-4, 1e-5))


# --------------------------------------------------------------- which kernel ran


def _launched_paths(fn) -> set[str]:
    """The paths of the kernforge elementwise kernels `fn` launches:
    "vectorized" (16-byte packs), "flat" (one element a step, contiguous) or
    "strided", read off the kernel names the CUDA profiler records."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    paths = set()
    for name in {e.key for e in prof.key_averages()}:
        vec = re.search(r"(?:flat_kernel|backward_with_bias_kernel)<[^,<>]+, (\d+)[,>]", name)
        if vec:
            paths.add("vectorized" if int(vec[1]) > 1 else "flat")
        elif "strided_kernel<" in name:
            paths.add("strided")
        elif "RoundSTEForwardPacked<" in name:
            paths.add("vectorized")
        elif "RoundSTEForward<" in name:
            paths.add("flat")
    return paths


def _safe_path(op: str, full: list[torch.Tensor]) -> str:
    """The only path that may run for these full-size inputs (the output is a
    fresh allocation, 16-byte aligned): strided unless all are contiguous,
    vectorized only when every pointer is also 16-byte aligned. round_ste
    copies a non-contiguous input first, and the copy is aligned."""
    if not all(t.is_contiguous() for t in full):
        return "vectorized" if op == "round_ste" else "strided"
    return "vectorized" if all(t.data_ptr() % 16 == 0 for t in full) else "flat"


@pytest.mark.cuda
@pytest.mark.parametrize("op,layout,which,dtype", _elementwise_cases(sanitize=False))
def test_vectorized_path_only_when_safe(op, layout, which, dtype):
    args = _elementwise_args(op, layout, which, dtype, "cuda")
    full = args[: ELEMENTWISE[op]]
    expected = _safe_path(op, full)
    if op == "add":
        paths = _launched_paths(lambda: kernforge.add(*args, alpha=0.5))
    else:
        paths = _launched_paths(lambda: getattr(kernforge, op)(*args))
    assert paths == {expected}
    # Neither path is vacuous: aligned offsets vectorize, an offset of one
    # element never does.
    if layout in ("offset0", "aligned_offset"):
        assert expected == "vectorized"
    elif layout == "offset1":
        assert expected == "flat"


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("offset", [0, 1, 2, 3, "aligned"])
def test_bias_gradient_kernel_vectorized_only_when_safe(dtype, offset):
    """fused_relu_add's backward with a bias gradient has its own kernel,
    vectorized over columns: only when x is 16-byte aligned and the row
    length a multiple of the pack."""
    k = ALIGNED_OFFSET[dtype] if offset == "aligned" else offset
    gen = torch.Generator().manual_seed(5)
    fill = _fill("fused_relu_add", dtype, "cuda", gen)
    shape = (3, 5, 64)
    x = leaf_view(_offset(k)(shape, fill))
    y, bias = fill(shape), fill((64,)).requires_grad_()
    out = kernforge.fused_relu_add(x, y, bias)
    grad = fill(shape)
    paths = _launched_paths(lambda: torch.autograd.grad(out, (x, bias), grad))
    assert paths == {"vectorized" if x.data_ptr() % 16 == 0 else "flat"}
    assert (x.data_ptr() % 16 == 0) == (k * x.element_size() % 16 == 0)
