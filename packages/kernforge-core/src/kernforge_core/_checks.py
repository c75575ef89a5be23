"""Argument checks for the fake (meta) kernels, so that traced and compiled
code fails the way eager code does. They mirror csrc/common/checks.h word for
word; tests/core/test_errors.py checks that both give the same message."""

from __future__ import annotations

import torch
from torch import Tensor

FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
FLOATING_AND_INT = (*FLOATING, torch.int32, torch.int64)
_DTYPES_TEXT = {
    FLOATING: "float16, bfloat16, float32 or float64",
    FLOATING_AND_INT: "float16, bfloat16, float32, float64, int32 or int64",
}


def describe(name: str, t: Tensor) -> str:
    """``"a: [3, 4] float32 cuda:0"``"""
    return f"{name}: {list(t.shape)} {str(t.dtype).removeprefix('torch.')} {t.device}"


def fail(op: str, what: str, **tensors: Tensor):
    got = ", ".join(describe(n, t) for n, t in tensors.items())
    raise RuntimeError(f"kernforge::{op}: {what}, got {got}")


def same(op: str, allowed: tuple[torch.dtype, ...], **tensors: Tensor) -> None:
    """Dense tensors on one CPU/CUDA device, of one allowed dtype and one shape."""
    compatible(op, allowed, **tensors)
    ref = next(iter(tensors.values()))
    if any(t.shape != ref.shape for t in tensors.values()):
        fail(op, "expected tensors of equal shape", **tensors)


def compatible(op: str, allowed: tuple[torch.dtype, ...], **tensors: Tensor) -> None:
    """Dense tensors on one CPU/CUDA device, of one allowed dtype."""
    for n, t in tensors.items():
        if t.layout != torch.strided:
            fail(op, "expected dense (strided) tensors", **{n: t})
        if t.device.type not in ("cpu", "cuda", "meta"):
            fail(op, "expected CPU or CUDA tensors", **{n: t})
        if t.dtype not in allowed:
            fail(op, f"unsupported dtype: expected {_DTYPES_TEXT[allowed]}", **{n: t})
    ref = next(iter(tensors.values()))
    if any(t.device != ref.device for t in tensors.values()):
        fail(op, "expected all tensors on one device", **tensors)
    if any(t.dtype != ref.dtype for t in tensors.values()):
        fail(op, "expected tensors of one dtype", **tensors)


def row_vector(op: str, row_name: str, row: Tensor, like_name: str, like: Tensor) -> None:
    """``row`` is a 1-D tensor broadcast over the last dimension of ``like``."""
    pair = {like_name: like, row_name: row}
    if row.layout != torch.strided:
        fail(op, "expected dense (strided) tensors", **{row_name: row})
    if row.device != like.device:
        fail(op, "expected all tensors on one device", **pair)
    if row.dtype != like.dtype:
        fail(op, "expected tensors of one dtype", **pair)
    if like.dim() == 0:
        fail(op, f"a tensor {row_name} needs {like_name} with at least one dimension", **pair)
    last = like.shape[-1]
    if row.dim() != 1 or row.shape[0] != last:
        fail(
            op,
            f"{row_name} must be 1-D with {last} elements (the size of the last dimension of {like_name})",
            **pair,
        )


def alpha(op: str, t: Tensor, value: float) -> None:
    """Integer tensors take only an integral alpha."""
    if t.dtype in (torch.int32, torch.int64) and not float(value).is_integer():
        raise RuntimeError(
            f"kernforge::{op}: alpha must be an integer for "
            f"{str(t.dtype).removeprefix('torch.')} tensors, got {value:f}"
        )


def _weight(op: str, W: Tensor, x: Tensor, h: Tensor) -> None:
    """W [3S, S+F] for x [B, F] and h [B, S]; mirrors check_weight."""
    state, features = h.shape[1], x.shape[1]
    if tuple(W.shape) != (3 * state, state + features):
        fail(
            op, f"W must be [3 * state, state + features] = [{3 * state}, {state + features}]", W=W, x=x, h=h
        )


def lltm(x: Tensor, W: Tensor, b: Tensor, h: Tensor, c: Tensor) -> None:
    """x [B, F], W [3S, S+F], b [3S], h [B, S], c [B, S]; mirrors check_lltm."""
    op = "lltm"
    for name, t in (("x", x), ("W", W), ("b", b), ("h", h), ("c", c)):
        want = 1 if name == "b" else 2
        if t.dim() != want:
            fail(op, f"{name} must be {want}-D", **{name: t})
    compatible(op, FLOATING, x=x, W=W, h=h, c=c)
    if b.device != x.device:
        fail(op, "expected all tensors on one device", x=x, b=b)
    if b.dtype != x.dtype:
        fail(op, "expected tensors of one dtype", x=x, b=b)
    batch, state = x.shape[0], h.shape[1]
    if h.shape[0] != batch or c.shape[0] != batch:
        fail(op, "x, h and c must have one batch size", x=x, h=h, c=c)
    if c.shape[1] != state:
        fail(op, "h and c must have one state size", h=h, c=c)
    _weight(op, W, x, h)
    if b.shape[0] != 3 * state:
        fail(op, f"b must be [3 * state] = [{3 * state}]", b=b, h=h)


def lltm_backward(grad_h, grad_c, x, W, h, c_new, gates, output_mask) -> None:
    """grad_h, grad_c, h, c_new [B, S], x [B, F], W [3S, S+F], gates [B, 3S],
    4 mask entries; mirrors check_lltm_backward."""
    op = "lltm_backward"
    if len(output_mask) != 4:
        raise RuntimeError(
            f"kernforge::{op}: output_mask must have 4 entries (x, W, b, h), got {len(output_mask)}"
        )
    same(op, FLOATING, grad_h=grad_h, grad_c=grad_c, h=h, c_new=c_new)
    compatible(op, FLOATING, h=h, x=x, W=W, gates=gates)
    if h.dim() != 2 or x.dim() != 2 or x.shape[0] != h.shape[0]:
        fail(op, "h must be [B, S] and x [B, F]", x=x, h=h)
    _weight(op, W, x, h)
    batch, state = h.shape
    if tuple(gates.shape) != (batch, 3 * state):
        fail(op, f"gates must be [batch, 3 * state] = [{batch}, {3 * state}]", gates=gates, h=h)


def lltm_sequence(x, W, b, h0, c0, steps: bool = True) -> None:
    """x [T, B, F] (T >= 1 with ``steps``), W [3S, S+F], b [3S], h0 and c0
    [B, S] or None (zeros); mirrors seq::check."""
    op = "lltm_sequence"
    for name, t, want in (("x", x, 3), ("weight", W, 2), ("bias", b, 1), ("h0", h0, 2), ("c0", c0, 2)):
        if t is not None and t.dim() != want:
            fail(op, f"{name} must be {want}-D", **{name: t})
    compatible(op, FLOATING, x=x, weight=W, bias=b)
    for name, t in (("h0", h0), ("c0", c0)):
        if t is not None:
            compatible(op, FLOATING, x=x, **{name: t})
    if steps and x.shape[0] == 0:
        fail(op, "x must have at least one step", x=x)
    _, batch, features = x.shape
    state = h0.shape[1] if h0 is not None else W.shape[0] // 3
    for name, t in (("h0", h0), ("c0", c0)):
        if t is not None and tuple(t.shape) != (batch, state):
            fail(op, f"h0 and c0 must be [batch, hidden_size] = [{batch}, {state}]", x=x, **{name: t})
    if tuple(W.shape) != (3 * state, state + features):
        fail(
            op,
            f"weight must be [3 * hidden_size, hidden_size + input_size] = [{3 * state}, {state + features}]",
            weight=W,
            x=x,
        )
    if b.shape[0] != 3 * state:
        fail(op, f"bias must be [3 * hidden_size] = [{3 * state}]", bias=b, weight=W)


def lltm_sequence_backward(grad_output, grad_cn, x, W, h0, output, cells, gates, output_mask) -> None:
    """The backward's arguments as the forward made them (h0 None: zeros);
    mirrors seq::check_backward."""
    op = "lltm_sequence_backward"
    if len(output_mask) != 5:
        entries = "5 entries (x, weight, bias, h0, c0)"
        raise RuntimeError(f"kernforge::{op}: output_mask must have {entries}, got {len(output_mask)}")
    compatible(op, FLOATING, x=x, weight=W, output=output, gates=gates)
    if h0 is not None:
        compatible(op, FLOATING, x=x, h0=h0)
    if x.dim() != 3 or W.dim() != 2 or x.shape[0] == 0 or W.shape[0] % 3:
        fail(op, "expected x [T >= 1, B, F] and weight [3S, S + F]", x=x, weight=W)
    steps, batch, features = x.shape
    state = W.shape[0] // 3
    if W.shape[1] != state + features:
        fail(op, "weight does not match x", x=x, weight=W)
    if h0 is not None and tuple(h0.shape) != (batch, state):
        fail(op, "h0 must be [B, S] or None", x=x, weight=W, h0=h0)
    cell = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    if (
        tuple(output.shape) != (steps, batch, state)
        or tuple(gates.shape) != (steps, batch, 3 * state)
        or tuple(cells.shape) != (steps, batch, state)
        or cells.device != x.device
        or cells.dtype != cell
    ):
        fail(
            op,
            "output, cells and gates must be the forward's ([T, B, S], [T, B, S], [T, B, 3S])",
            output=output,
            cells=cells,
            gates=gates,
        )
    if grad_output is not None:
        compatible(op, FLOATING, x=x, grad_output=grad_output)
        if tuple(grad_output.shape) != (steps, batch, state):
            fail(op, "grad_output must be [T, B, S]", grad_output=grad_output)
    if grad_cn is not None:
        compatible(op, FLOATING, x=x, grad_cn=grad_cn)
        if tuple(grad_cn.shape) != (batch, state):
            fail(op, "grad_cn must be [B, S]", grad_cn=grad_cn)
