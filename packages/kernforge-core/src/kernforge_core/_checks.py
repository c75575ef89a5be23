"""Argument checks for the fake (meta) kernels, so that traced and compiled
code fails the way eager code does. They mirror csrc/common/checks.h word for
word; tests/core/test_errors.py checks that both give the same message."""

from __future__ import annotations

import operator

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


def batch_sizes_list(batch_sizes) -> list[int]:
    """A PackedSequence's batch_sizes (a 1-D integer tensor, or ints) as a list."""
    if isinstance(batch_sizes, torch.Tensor):
        if batch_sizes.dim() != 1 or batch_sizes.dtype.is_floating_point or batch_sizes.is_complex():
            raise TypeError(
                "kernforge::lltm_sequence: batch_sizes must be a 1-D integer tensor (a PackedSequence's), "
                f"got {list(batch_sizes.shape)} {str(batch_sizes.dtype).removeprefix('torch.')}"
            )
        return batch_sizes.tolist()
    try:
        return [operator.index(n) for n in batch_sizes]
    except TypeError:
        raise TypeError(
            f"kernforge::lltm_sequence: batch_sizes must be a 1-D integer tensor or ints, got {batch_sizes!r}"
        ) from None


def sequence_steps(op: str, x, batch_sizes) -> tuple[int, int, int]:
    """(T, B, N) of x [T, B, F], or of packed x [N, F] with batch_sizes (each
    positive, none above the one before, summing to N); mirrors seq::steps_of."""
    if batch_sizes is None:
        if x.dim() != 3:
            fail(op, "x must be 3-D", x=x)
        return x.shape[0], x.shape[1], x.shape[0] * x.shape[1]
    if x.dim() != 2:
        fail(op, "x must be 2-D [sum(batch_sizes), input_size] with batch_sizes", x=x)
    if len(batch_sizes) == 0:
        raise RuntimeError(f"kernforge::{op}: batch_sizes must have at least one step, got []")
    for t, n in enumerate(batch_sizes):
        if n < 1 or (t > 0 and n > batch_sizes[t - 1]):
            after = f" after {batch_sizes[t - 1]}" if t > 0 else ""
            raise RuntimeError(
                f"kernforge::{op}: batch_sizes must be positive and non-increasing (a PackedSequence's), "
                f"got {n} at step {t}{after}"
            )
    total = sum(batch_sizes)
    if total != x.shape[0]:
        fail(op, f"batch_sizes sum to {total} rows, but x has {x.shape[0]}", x=x)
    return len(batch_sizes), batch_sizes[0], total


def lltm_sequence(x, W, b, h0, c0, steps: bool = True, batch_sizes=None) -> None:
    """x [T, B, F] (T >= 1 with ``steps``; packed: [N, F] with batch_sizes),
    W [3S, S+F], b [3S], h0 and c0 [B, S] or None (zeros); mirrors seq::check."""
    op = "lltm_sequence"
    for name, t, want in (("weight", W, 2), ("bias", b, 1), ("h0", h0, 2), ("c0", c0, 2)):
        if t is not None and t.dim() != want:
            fail(op, f"{name} must be {want}-D", **{name: t})
    count, batch, _ = sequence_steps(op, x, batch_sizes)
    compatible(op, FLOATING, x=x, weight=W, bias=b)
    for name, t in (("h0", h0), ("c0", c0)):
        if t is not None:
            compatible(op, FLOATING, x=x, **{name: t})
    if steps and count == 0:
        fail(op, "x must have at least one step", x=x)
    features = x.shape[-1]
    state = h0.shape[1] if h0 is not None else W.shape[0] // 3
    which = "batch_sizes[0]" if batch_sizes is not None else "batch"
    for name, t in (("h0", h0), ("c0", c0)):
        if t is not None and tuple(t.shape) != (batch, state):
            fail(op, f"h0 and c0 must be [{which}, hidden_size] = [{batch}, {state}]", x=x, **{name: t})
    if tuple(W.shape) != (3 * state, state + features):
        fail(
            op,
            f"weight must be [3 * hidden_size, hidden_size + input_size] = [{3 * state}, {state + features}]",
            weight=W,
            x=x,
        )
    if b.shape[0] != 3 * state:
        fail(op, f"bias must be [3 * hidden_size] = [{3 * state}]", bias=b, weight=W)


def lltm_sequence_backward(
    grad_output, grad_cn, x, W, h0, output, cells, gates, output_mask, batch_sizes=None, grad_hn=None
) -> None:
    """The backward's arguments as the forward made them (h0 None: zeros);
    mirrors seq::check_backward."""
    op = "lltm_sequence_backward"
    if len(output_mask) != 5:
        entries = "5 entries (x, weight, bias, h0, c0)"
        raise RuntimeError(f"kernforge::{op}: output_mask must have {entries}, got {len(output_mask)}")
    compatible(op, FLOATING, x=x, weight=W, output=output, gates=gates)
    if h0 is not None:
        compatible(op, FLOATING, x=x, h0=h0)
    steps, batch, _ = sequence_steps(op, x, batch_sizes)
    if W.dim() != 2 or steps == 0 or W.shape[0] % 3:
        fail(op, "expected x [T >= 1, B, F] (packed: [N, F]) and weight [3S, S + F]", x=x, weight=W)
    features = x.shape[-1]
    state = W.shape[0] // 3
    if W.shape[1] != state + features:
        fail(op, "weight does not match x", x=x, weight=W)
    if h0 is not None and tuple(h0.shape) != (batch, state):
        fail(op, "h0 must be [B, S] or None", x=x, weight=W, h0=h0)
    cell = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    lead = tuple(x.shape[:-1])
    if (
        tuple(output.shape) != (*lead, state)
        or tuple(gates.shape) != (*lead, 3 * state)
        or tuple(cells.shape) != (*lead, state)
        or cells.device != x.device
        or cells.dtype != cell
    ):
        fail(
            op,
            "output, cells and gates must be the forward's ([T, B, S], [T, B, S], [T, B, 3S]; "
            "packed [N, S], [N, S], [N, 3S])",
            output=output,
            cells=cells,
            gates=gates,
        )
    if grad_output is not None:
        compatible(op, FLOATING, x=x, grad_output=grad_output)
        if tuple(grad_output.shape) != (*lead, state):
            fail(op, "grad_output must be [T, B, S] (packed: [N, S])", grad_output=grad_output)
    for name, grad in (("grad_hn", grad_hn), ("grad_cn", grad_cn)):
        if grad is not None:
            compatible(op, FLOATING, x=x, **{name: grad})
            if tuple(grad.shape) != (batch, state):
                fail(op, f"{name} must be [B, S]", **{name: grad})


def lltm_sequence_layers(x, weights, biases, h0, c0, op: str = "lltm_sequence_layers_inference") -> None:
    """The layer list and the states of lltm_sequence_layers_inference;
    mirrors its C++ checks (each layer's are lltm_sequence's). ``op`` names
    the caller in the errors."""
    if len(weights) == 0 or len(biases) != len(weights):
        raise RuntimeError(
            f"kernforge::{op}: weights and biases must be one per layer (at least one), "
            f"got {len(weights)} and {len(biases)}"
        )
    if x.dim() != 3:
        fail(op, "x must be 3-D", x=x)
    if weights[0].dim() != 2 or weights[0].shape[0] % 3:
        fail(op, "weights[0] must be 2-D with 3 * hidden_size rows", **{"weights[0]": weights[0]})
    shape = (len(weights), x.shape[1], weights[0].shape[0] // 3)
    for k, W in enumerate(weights[1:], 1):
        if W.dim() != 2 or W.shape[0] != 3 * shape[2]:
            fail(op, f"weights[{k}] must be 2-D with 3 * hidden_size = {3 * shape[2]} rows, as weights[0]",
                 **{f"weights[{k}]": W, "weights[0]": weights[0]})  # fmt: skip
    for name, t in (("h0", h0), ("c0", c0)):
        if t is not None and tuple(t.shape) != shape:
            fail(op, f"h0 and c0 must be [num_layers, batch, hidden_size] = {list(shape)}", x=x, **{name: t})
    for name, t in (("h0", h0), ("c0", c0)):
        if t is not None:
            compatible(op, FLOATING, x=x, **{name: t})
    if x.shape[0] == 0:
        fail(op, "x must have at least one step", x=x)
