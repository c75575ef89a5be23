"""Python entry points of the kernforge ops, with their fake kernels (for
``torch.compile`` and tracing) and autograd formulas. The schemas live in
``csrc/registration.cpp``; the kernels in ``csrc/<op>/``.

Every backward runs on kernforge's own kernels. The pointwise ops' backward
ops have autograd formulas of their own, so double backward works where the
math allows; the LLTM's backward ops raise on a second backward.
The pointwise ops and their backward ops also have a formula in torch
operations, which ``torch.compile`` fuses with the work around them in place
of the kernel (:mod:`kernforge_core.fusion`); eager calls run the kernels.
"""

from __future__ import annotations

import numbers
import typing

import torch
import torch.autograd.forward_ad as _forward_ad
from torch import Tensor

from . import _checks, fusion

_ops = torch.ops.kernforge
_below_autograd = torch._C._AutoDispatchBelowAutograd


def _tracing() -> bool:
    """Compiling (dynamo, export) or under ``torch.jit.trace``: the graph must
    hold the op itself, with its registered autograd formula, whatever the
    grad mode (the trace's check runs again under ``no_grad``), except as
    :func:`_compiled_inference` says."""
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


def _compiled_inference(grad: bool) -> bool:
    """Compiled by ``torch.compile`` (not exported, not jit-traced) where no
    gradient can flow: dynamo guards its graph on the grad mode and on each
    input's requires_grad, so the graph may hold the inference ops, as eager
    runs them (one call for all the layers of a generated token, nothing
    kept for a backward); it compiles again when a gradient can flow."""
    return not grad and torch.compiler.is_dynamo_compiling() and not _exporting()


def _exporting() -> bool:
    """``torch.export`` (strict or not) is tracing. The flag that
    ``torch.compiler.is_exporting()`` returns: torch 2.11's dynamo folds
    that call to True under ``torch.compile`` too (2.13's reads the flag).
    Without the flag (a torch that moved it): taken as exporting, so the
    graph keeps the forward op, which is always correct."""
    return getattr(torch.compiler, "_is_exporting_flag", True)


def _needs_autograd(op: str, **tensors: Tensor) -> bool:
    """False when no gradient can flow: the wrappers then call the op below the
    autograd key, skipping its autograd kernel (microseconds per call for small
    tensors). Tracing and compiling always take :func:`_with_autograd`.

    Raises TypeError, naming the argument, for anything that is not a tensor:
    the dispatcher would take None for an undefined tensor, which the kernels
    cannot describe."""
    grad = False
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"kernforge::{op}: {name} must be a Tensor, got {type(t).__name__}")
        grad = grad or t.requires_grad
    if _forward_ad._current_level >= 0 and _tangents(op, *tensors.values()):
        return True
    return (grad and torch.is_grad_enabled()) or _tracing()


def _tangents(op: str, *tensors) -> bool:
    """Whether a tensor carries a forward-mode tangent (called only inside a
    dual level): then the op must run with its formulas, whose forward-mode
    one (jvp) gives the output's tangent. An op without one raises
    NotImplementedError, where torch would silently give zero tangents."""
    if not any(isinstance(t, Tensor) and _forward_ad.unpack_dual(t).tangent is not None for t in tensors):
        return False
    route = _eager_autograd.get(op)
    if route is not None and route.transformable_jvp:
        return True
    raise NotImplementedError(
        f"kernforge::{op}: forward-mode AD (torch.func.jvp, jacfwd, hessian, "
        "torch.autograd.forward_ad) is not implemented; reverse mode is (torch.func.grad, "
        "vjp, jacrev), and kernforge.reference has both"
    )


def _with_autograd(name: str, *args):
    """``kernforge::<name>(*args)`` with its autograd formula. Traced or
    compiled: through the op, so that the graph holds the op with its
    registered formula and fake kernel. Eager: through the op's
    ``autograd.Function`` twin (see :func:`_register_autograd`), with the
    arguments left out filled in from the schema's defaults; under a
    torch.func transform (grad, vmap, jacrev, ...) or inside a forward-mode
    dual level, through its twin for those, which they require to have a
    setup_context of its own (and a jvp, for forward mode)."""
    if _tracing():
        return getattr(_ops, name).default(*args)
    route = _eager_autograd[name]
    transform = _transforming() or _forward_ad._current_level >= 0
    apply = route.transformable if transform else route.apply
    return apply(*args, *route.defaults[len(args) :])


_transforming = torch._C._are_functorch_transforms_active


def _call(name: str, *args):
    """``kernforge::<name>(*args)`` from inside an autograd formula. A
    first-order backward (grad mode off) calls it below the autograd key,
    paying no Python layer; a backward with ``create_graph=True`` (torch.func
    runs its backward so) with the op's own formula, so that its derivative
    is taken, or raises where there is none, instead of being zeros; and so
    does a formula run inside a forward-mode dual level (a tangent through
    the backward: torch.func.hessian)."""
    if torch.is_grad_enabled() or _forward_ad._current_level >= 0:
        return _with_autograd(name, *args)
    with _below_autograd():
        return _eager_autograd[name].op(*args)


class _Route(typing.NamedTuple):
    op: torch._ops.OpOverload
    apply: typing.Callable
    transformable: typing.Callable
    defaults: tuple
    transformable_jvp: bool  # the transformable twin has a forward-mode formula


_eager_autograd: dict[str, _Route] = {}


def _register_autograd(name: str, backward, setup_context, jvp=None) -> None:
    """Registers ``setup_context`` and ``backward`` as the autograd formula of
    ``kernforge::<name>`` (``torch.library.register_autograd``), and the same
    two functions as ``autograd.Function`` twins for the wrappers' eager
    calls: one plain, one for torch.func's transforms and forward-mode AD.
    ``jvp(inputs, *tangents)``, where given, is the forward-mode formula:
    the output's tangent from the op's inputs and their tangents (None for
    an input without one); torch.library has no place for it, so
    ``torch.ops.kernforge`` callers get zero tangents.

    The registered formula serves ``torch.ops.kernforge`` callers, ``opcheck``
    and ``torch.compile``. Through it, every call also pays torch.library's
    Python layer (default arguments filled in, a redispatch from Python):
    27-39 us of a host-bound LLTM step on an H200 (see
    benchmarks/PERFORMANCE.md). The twins run the op below the autograd key
    and skip that layer. The plain one calls setup_context from its forward
    rather than having it as a staticmethod: with one, every apply binds the
    arguments to forward's signature through inspect (21 us more a call on
    this project's CPU). torch.func takes only a Function with that
    staticmethod; vmap runs it through the rule torch generates, which
    calls the op under vmap: its batching rule where it has one (the
    pointwise ops, :func:`_register_pointwise_vmap`), else once per example."""
    op = getattr(_ops, name).default
    torch.library.register_autograd(f"kernforge::{name}", backward, setup_context=setup_context)

    def forward(ctx, *args):
        with _below_autograd():
            output = op(*args)
        setup_context(ctx, args, output)
        return output

    def transformed_forward(*args):
        with _below_autograd():
            return op(*args)

    def transformed_setup(ctx, inputs, output):
        setup_context(ctx, inputs, output)
        # jvp's inputs: the tensors saved for it, the rest kept as they are
        ctx.save_for_forward(*(a for a in inputs if isinstance(a, Tensor)))
        ctx.forward_inputs = tuple(_SAVED if isinstance(a, Tensor) else a for a in inputs)

    def transformed_jvp(ctx, *tangents):
        saved = iter(ctx.saved_tensors)
        inputs = tuple(next(saved) if a is _SAVED else a for a in ctx.forward_inputs)
        return jvp(inputs, *tangents)

    plain = type(
        f"kernforge_{name}",
        (torch.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )
    methods = {
        "forward": staticmethod(transformed_forward),
        "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward),
        "generate_vmap_rule": True,
    }
    if jvp is not None:
        methods.update(setup_context=staticmethod(transformed_setup), jvp=staticmethod(transformed_jvp))
    transformable = type(f"kernforge_{name}_transformable", (torch.autograd.Function,), methods)
    defaults = tuple(a.default_value for a in op._schema.arguments)
    _eager_autograd[name] = _Route(op, plain.apply, transformable.apply, defaults, jvp is not None)


_SAVED = object()  # in ctx.forward_inputs, a tensor input saved for jvp


def _sum_tangents(*tangents):
    """The sum of the tangents given (None: an input without one), through
    ``add`` so that a transform above sees it; None where none is given."""
    out = None
    for t in tangents:
        if t is not None:
            out = t if out is None else _call("add", out, t, 1.0)
    return out


def _no_double_backward(name: str) -> None:
    """Registers, as the autograd formula of ``kernforge::<name>_backward``, an
    error naming the op: without one, torch runs a second backward through it
    as if its outputs did not depend on its inputs (zeros, and a warning)."""

    def backward(ctx, *grads):
        raise NotImplementedError(
            f"kernforge::{name}: double backward is not implemented (first derivatives are, "
            f"with create_graph=True too); for second derivatives use kernforge.reference"
        )

    _register_autograd(f"{name}_backward", backward, _keeps_nothing)


def _keeps_nothing(ctx, inputs, output) -> None:
    """The setup_context of a formula that needs nothing from the forward."""


def _batched(info, in_dims, args) -> list:
    """vmap's arguments with the batch dimension first: moved where a tensor
    has one, expanded (a view: the ops take any strides) where it has none."""
    out = []
    for a, d in zip(args, in_dims, strict=True):
        if d is not None:
            a = a.movedim(d, 0)
        elif isinstance(a, Tensor):
            a = a.expand(info.batch_size, *a.shape)
        out.append(a)
    return out


def _register_pointwise_vmap(name: str) -> None:
    """The batching rule of a pointwise op whose tensor arguments share one
    shape: one call over the whole batch (without one, ``torch.func.vmap``
    calls the op once per example)."""
    op = getattr(_ops, name).default

    def rule(info, in_dims, *args):
        return op(*_batched(info, in_dims, args)), 0

    torch.library.register_vmap(f"kernforge::{name}", rule)


# ----------------------------------------------------------------------------- mul


def mul(a: Tensor, b: Tensor) -> Tensor:
    """Elementwise product ``a * b``.

    Args:
        a, b: tensors of one shape (any strides), one dtype (float16, bfloat16,
            float32 or float64) and one device (CPU or CUDA).

    Returns:
        A new contiguous tensor of that shape and dtype.

    Raises:
        RuntimeError: naming the offending argument with its shape, dtype and
            device, for mixed devices or dtypes, unsupported dtypes or unequal shapes.
        TypeError: naming the argument, for one that is not a tensor.
    """
    if _needs_autograd("mul", a=a, b=b):
        return _with_autograd("mul", a, b)
    with _below_autograd():
        return _ops.mul.default(a, b)


@torch.library.register_fake("kernforge::mul")
def _(a, b):
    fusion.activate()
    _checks.same("mul", _checks.FLOATING, a=a, b=b)
    return a.new_empty(a.shape)


@fusion.formula(_ops.mul.default)
def _(a, b):
    return (a * b).contiguous()


def _mul_setup(ctx, inputs, output):
    a, b = inputs
    ctx.save_for_backward(a, b)


def _mul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = _call("mul", grad, b) if ctx.needs_input_grad[0] else None
    grad_b = _call("mul", grad, a) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def _mul_jvp(inputs, tangent_a, tangent_b):
    a, b = inputs
    return _sum_tangents(
        None if tangent_a is None else _call("mul", tangent_a, b),
        None if tangent_b is None else _call("mul", a, tangent_b),
    )


_register_autograd("mul", _mul_backward, _mul_setup, _mul_jvp)
_register_pointwise_vmap("mul")


# ----------------------------------------------------------------------------- add


def add(a: Tensor, b: Tensor, alpha: float = 1) -> Tensor:
    """Elementwise ``a + alpha * b``.

    Args:
        a, b: tensors of one shape (any strides), one dtype (float16, bfloat16,
            float32, float64, int32 or int64) and one device (CPU or CUDA).
        alpha: a Python number; it must be integral for integer tensors.

    Returns:
        A new contiguous tensor of that shape and dtype.

    Raises:
        RuntimeError: as :func:`mul`, and for a non-integral ``alpha`` with
            integer tensors.
    """
    # Arguments left at their schema default cost nothing to convert: on a
    # host-bound call, leaving alpha out saves about half a microsecond.
    args = (a, b) if alpha == 1 else (a, b, alpha)
    if _needs_autograd("add", a=a, b=b):
        return _with_autograd("add", *args)
    with _below_autograd():
        return _ops.add.default(*args)


@torch.library.register_fake("kernforge::add")
def _(a, b, alpha=1):
    fusion.activate()
    _checks.same("add", _checks.FLOATING_AND_INT, a=a, b=b)
    _checks.alpha("add", a, alpha)
    return a.new_empty(a.shape)


def _alpha(t: Tensor, alpha: float) -> float | int:
    """The schema's float alpha as torch.add wants it: an int for integer tensors."""
    return alpha if t.is_floating_point() else int(alpha)


@fusion.formula(_ops.add.default)
def _(a, b, alpha=1):
    return torch.add(a, b, alpha=_alpha(a, alpha)).contiguous()


def _add_setup(ctx, inputs, output):
    ctx.alpha = inputs[2]


def _add_backward(ctx, grad):
    grad_b = None
    if ctx.needs_input_grad[1]:
        # alpha 1: b's gradient is grad itself, as torch.add's is; no pass over
        # memory, in eager or in compiled code.
        grad_b = grad if ctx.alpha == 1 else _call("add_backward", grad, ctx.alpha)
    return grad, grad_b, None


def _add_jvp(inputs, tangent_a, tangent_b, _):
    alpha = inputs[2]
    if tangent_a is not None and tangent_b is not None:
        return _call("add", tangent_a, tangent_b, alpha)
    if tangent_b is not None and alpha != 1:
        return _call("add_backward", tangent_b, alpha)
    return tangent_a if tangent_a is not None else tangent_b


_register_autograd("add", _add_backward, _add_setup, _add_jvp)
_register_pointwise_vmap("add")


@torch.library.register_fake("kernforge::add_backward")
def _(grad, alpha):
    fusion.activate()
    _checks.same("add_backward", _checks.FLOATING_AND_INT, grad=grad)
    _checks.alpha("add_backward", grad, alpha)
    return grad.new_empty(grad.shape)


@fusion.formula(_ops.add_backward.default)
def _(grad, alpha):
    return (grad * _alpha(grad, alpha)).contiguous()


def _add_backward_setup(ctx, inputs, output):
    ctx.alpha = inputs[1]


def _add_backward_backward(ctx, grad):
    return _call("add_backward", grad, ctx.alpha), None


def _add_backward_jvp(inputs, tangent_grad, _):
    return _call("add_backward", tangent_grad, inputs[1])


_register_autograd("add_backward", _add_backward_backward, _add_backward_setup, _add_backward_jvp)
_register_pointwise_vmap("add_backward")


# ----------------------------------------------------------------------------- fused_relu_add


def fused_relu_add(x: Tensor, y: Tensor, bias: Tensor | float = 0.0) -> Tensor:
    """``relu(x) + y + bias`` in one pass over memory.

    Args:
        x, y: tensors of one shape (any strides), one dtype (float16, bfloat16,
            float32 or float64) and one device (CPU or CUDA).
        bias: a Python number, or a 1-D tensor of ``x.shape[-1]`` elements (same
            dtype and device) broadcast over the last dimension.

    Returns:
        A new contiguous tensor of ``x``'s shape and dtype. Half and bfloat16
        compute in float32 and round once.

    Gradients: ``grad * (x > 0)`` for x (NaN in x passes the gradient, as in
    torch's relu), ``grad`` for y, and ``grad`` summed over all but the last
    dimension for a tensor bias, all from one fused pass.

    Raises:
        RuntimeError: as :func:`mul`, and for a bias of the wrong shape.
        TypeError: for x or y not a tensor, or a bias neither a tensor nor a number.
    """
    if isinstance(bias, Tensor):
        args, tensors = (x, y, bias), {"x": x, "y": y, "bias": bias}
    elif isinstance(bias, numbers.Real):
        args, tensors = (x, y, None, float(bias)), {"x": x, "y": y}
    else:
        raise TypeError(
            f"kernforge::fused_relu_add: bias must be a Tensor or a number, got {type(bias).__name__}"
        )
    if _needs_autograd("fused_relu_add", **tensors):
        return _with_autograd("fused_relu_add", *args)
    with _below_autograd():
        return _ops.fused_relu_add.default(*args)


@torch.library.register_fake("kernforge::fused_relu_add")
def _(x, y, bias=None, bias_scalar=0.0):
    fusion.activate()
    _checks.same("fused_relu_add", _checks.FLOATING, x=x, y=y)
    if bias is not None:
        _checks.row_vector("fused_relu_add", "bias", bias, "x", x)
    return x.new_empty(x.shape)


@fusion.formula(_ops.fused_relu_add.default)
def _(x, y, bias=None, bias_scalar=0.0):
    out = torch.relu(x) + y
    return (out + bias_scalar if bias is None else out + (bias + bias_scalar)).contiguous()


def _fused_relu_add_setup(ctx, inputs, output):
    x, _, bias, _ = inputs
    ctx.bias_grad = bias is not None and ctx.needs_input_grad[2]
    ctx.save_for_backward(x)


def _fused_relu_add_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    grad_x = grad_bias = None
    if ctx.needs_input_grad[0]:
        grad_x, grad_bias = _call("fused_relu_add_backward", grad, x, ctx.bias_grad)
    elif ctx.bias_grad:  # the bias alone: a column sum, no pass writing grad_x
        grad_bias = grad.sum(tuple(range(grad.dim() - 1))) if grad.dim() > 1 else grad.clone()
    return (
        grad_x if ctx.needs_input_grad[0] else None,
        grad if ctx.needs_input_grad[1] else None,
        grad_bias if ctx.bias_grad else None,
        None,
    )


def _fused_relu_add_jvp(inputs, tangent_x, tangent_y, tangent_bias, _tangent_scalar):
    # relu's derivative, where x > 0 (NaN passes, as in the backward), times
    # x's tangent; y's and the bias's (broadcast over rows) pass as they are
    x = inputs[0]
    if tangent_x is not None:
        tangent_x = _call("fused_relu_add_backward", tangent_x, x, False)[0]
    if tangent_bias is not None:
        tangent_bias = tangent_bias.expand(x.shape)
        if tangent_x is None and tangent_y is None:
            return tangent_bias.contiguous()
    return _sum_tangents(tangent_x, tangent_y, tangent_bias)


_register_autograd("fused_relu_add", _fused_relu_add_backward, _fused_relu_add_setup, _fused_relu_add_jvp)


@torch.library.register_vmap("kernforge::fused_relu_add")
def _(info, in_dims, x, y, bias=None, bias_scalar=0.0):
    # a bias shared by the batch broadcasts over its rows as over any; a bias
    # per example does not fit the op's one row: an op call an example
    x, y = _batched(info, in_dims[:2], (x, y))
    if bias is None or in_dims[2] is None:
        return _ops.fused_relu_add.default(x, y, bias, bias_scalar), 0
    bias = bias.movedim(in_dims[2], 0)
    rows = [_ops.fused_relu_add.default(x[i], y[i], bias[i], bias_scalar) for i in range(info.batch_size)]
    return torch.stack(rows), 0


@torch.library.register_fake("kernforge::fused_relu_add_backward")
def _(grad, x, bias_grad):
    fusion.activate()
    _checks.same("fused_relu_add_backward", _checks.FLOATING, grad=grad, x=x)
    if bias_grad and x.dim() == 0:
        _checks.fail(
            "fused_relu_add_backward",
            "a bias gradient needs x with at least one dimension",
            x=x,
        )
    return x.new_empty(x.shape), x.new_empty((x.shape[-1],) if bias_grad else (0,))


@fusion.formula(_ops.fused_relu_add_backward.default)
def _(grad, x, bias_grad):
    grad_x = torch.where(x <= 0, 0, grad).contiguous()  # NaN in x passes grad, as relu's backward
    if not bias_grad:
        return grad_x, grad.new_empty((0,))
    rows = tuple(range(grad.dim() - 1))
    return grad_x, grad.sum(rows) if rows else grad.clone(memory_format=torch.contiguous_format)


def _fused_relu_add_backward_setup(ctx, inputs, output):
    _, x, bias_grad = inputs
    ctx.bias_grad = bias_grad
    ctx.save_for_backward(x)


def _fused_relu_add_backward_backward(ctx, grad_grad_x, grad_grad_bias):
    # grad_x = mask(x) * grad is linear in grad, and grad_bias = sum(grad): the
    # gradient for grad is mask(x) * gg_x + gg_bias broadcast; x gets none (the
    # mask is piecewise constant).
    (x,) = ctx.saved_tensors
    if not ctx.needs_input_grad[0]:
        return None, None, None
    out, _ = _call("fused_relu_add_backward", grad_grad_x, x, False)
    if ctx.bias_grad:
        out = _call("add", out, grad_grad_bias.expand(out.shape), 1.0)
    return out, None, None


def _fused_relu_add_backward_jvp(inputs, tangent_grad, _tangent_x, _):
    # linear in grad; x's tangent moves nothing (the mask is piecewise constant)
    _, x, bias_grad = inputs
    if tangent_grad is not None:
        return _call("fused_relu_add_backward", tangent_grad, x, bias_grad)
    return torch.zeros_like(x), x.new_zeros((x.shape[-1],) if bias_grad else (0,))


_register_autograd(
    "fused_relu_add_backward",
    _fused_relu_add_backward_backward,
    _fused_relu_add_backward_setup,
    _fused_relu_add_backward_jvp,
)


@torch.library.register_vmap("kernforge::fused_relu_add_backward")
def _(info, in_dims, grad, x, bias_grad):
    # each example's bias gradient is its own column sums: an op call an
    # example, as without the batch; without one, one call
    grad, x = _batched(info, in_dims[:2], (grad, x))
    op = _ops.fused_relu_add_backward.default
    if not bias_grad:
        grad_x, empty = op(grad, x, False)
        return (grad_x, empty), (0, None)
    grad_x, grad_bias = zip(*(op(grad[i], x[i], True) for i in range(info.batch_size)), strict=True)
    return (torch.stack(grad_x), torch.stack(grad_bias)), (0, 0)


# ----------------------------------------------------------------------------- vmap over rows
# The LLTM's ops (the cell, the sequence, the layers) never mix rows, so
# with the weights shared, vmap's examples become more rows of one call:
# row r of example v is row r * V + v. (Packed data too: the rows of a step
# stay one block, batch_sizes times V, and each sequence keeps its row.)
# Weights that differ by example (an ensemble) run one call an example.


def _fold_rows(t, dim, rows, size):
    """t [..., R, ...] with vmap's dimension `dim` (None: shared) folded
    into its dimension `rows` (counted without vmap's) as R * size rows."""
    if t is None:
        return None
    t = (
        t.unsqueeze(rows + 1).expand(*t.shape[: rows + 1], size, *t.shape[rows + 1 :])
        if dim is None
        else t.movedim(dim, rows + 1)
    )
    return t.reshape(*t.shape[:rows], t.shape[rows] * size, *t.shape[rows + 2 :])


def _unfold_rows(t, rows, size):
    """_fold_rows undone: t [..., R * size, ...] as [..., R, size, ...], and
    vmap's dimension (rows + 1)."""
    return t.reshape(*t.shape[:rows], t.shape[rows] // size, size, *t.shape[rows + 1 :]), rows + 1


def _example(args, in_dims, i):
    """vmap's example i of the arguments (lists of tensors too); where vmap
    has no example (a batch of 0), zeros of an example's shape."""

    def pick(a, d):
        if isinstance(a, (list, tuple)):
            return [pick(t, e) for t, e in zip(a, d, strict=True)]
        if d is None:
            return a
        return a.select(d, i) if a.shape[d] else a.new_zeros(a.shape[:d] + a.shape[d + 1 :])

    return [pick(a, d) for a, d in zip(args, in_dims, strict=True)]


def _register_rows_vmap(name: str, check, plan) -> None:
    """The batching rule of ``kernforge::<name>``, whose arguments 1 and 2
    are the weights (tensors or lists of them). ``plan(args, V)`` gives the
    rows dimension of each argument (None: not folded), of each output, and
    the arguments to call with. ``check`` runs on one example first, so that
    errors name its shapes, not the folded ones."""
    op = getattr(_ops, name).default

    def rule(info, in_dims, *args, **kwargs):
        # arguments given by keyword (batch_sizes can be) come without in_dims
        args = (*args, *(kwargs.get(a.name, a.default_value) for a in op._schema.arguments[len(args) :]))
        in_dims = (*in_dims, *[None] * (len(args) - len(in_dims)))
        example = _example(args, in_dims, 0)
        check(*example)
        if info.batch_size == 0:  # the outputs' shapes, from an example of zeros
            return tuple(t.new_empty((0, *t.shape)) for t in op(*example)), 0
        weights = [d for w in in_dims[1:3] for d in (w if isinstance(w, (list, tuple)) else [w])]
        if any(d is not None for d in weights):
            outputs = [op(*_example(args, in_dims, i)) for i in range(info.batch_size)]
            return tuple(torch.stack(parts) for parts in zip(*outputs, strict=True)), 0
        v = info.batch_size
        args_rows, outputs_rows, args = plan(args, v)
        folded = [
            a if r is None else _fold_rows(a, d, r, v)
            for a, d, r in zip(args, in_dims, args_rows, strict=True)
        ]
        unfolded = [_unfold_rows(t, r, v) for t, r in zip(op(*folded), outputs_rows, strict=True)]
        return tuple(t for t, _ in unfolded), tuple(d for _, d in unfolded)

    torch.library.register_vmap(f"kernforge::{name}", rule)


# ----------------------------------------------------------------------------- lltm


def lltm(x: Tensor, W: Tensor, b: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """One step of the LLTM cell: ``(h', c')``.

    ``X = [h, x]``; ``[g0, g1, g2] = X @ W.T + b``; ``i = sigmoid(g0)``,
    ``o = sigmoid(g1)``, ``z = elu(g2)``; ``c' = c + z * i``; ``h' = tanh(c') * o``.

    Args:
        x: ``[B, F]`` input. W: ``[3S, S + F]`` weights. b: ``[3S]`` bias.
        h, c: ``[B, S]`` hidden and cell state. One floating dtype (half and
            bfloat16 compute the gates in float32) and one device.

    Returns:
        ``(h', c')``, each ``[B, S]``. Differentiable in every input; the
        backward computes only the gradients of the inputs that need them
        (no d_x GEMM when neither x nor h does, only d_h's columns when x
        does not, no d_W GEMM when W does not). Once differentiable: a
        second backward (through gradients taken with ``create_graph=True``)
        raises NotImplementedError, as cuDNN's RNNs do.

    Raises:
        RuntimeError: naming the argument, for wrong ranks or sizes, or mixed
            dtypes or devices, before any kernel runs.
        TypeError: naming the argument, for one that is not a tensor.
    """
    if _needs_autograd("lltm", x=x, W=W, b=b, h=h, c=c):
        h_new, c_new, _ = _with_autograd("lltm_forward", x, W, b, h, c)
    else:
        with _below_autograd():
            h_new, c_new, _ = _ops.lltm_forward.default(x, W, b, h, c)
    return h_new, c_new


@torch.library.register_fake("kernforge::lltm_forward")
def _(x, W, b, h, c):
    _checks.lltm(x, W, b, h, c)
    batch, state = h.shape
    return h.new_empty((batch, state)), h.new_empty((batch, state)), h.new_empty((batch, 3 * state))


# (h', c', gates): rows first, as x, h and c
_register_rows_vmap("lltm_forward", _checks.lltm, lambda args, v: ((0, None, None, 0, 0), (0, 0, 0), args))


def _lltm_setup(ctx, inputs, output):
    x, W, _, h, _ = inputs
    _, c_new, gates = output
    ctx.save_for_backward(x, W, h, c_new, gates)
    ctx.set_materialize_grads(False)  # gates never gets a gradient: no zero-filled tensor for it


def _lltm_backward(ctx, grad_h, grad_c, _grad_gates):
    x, W, h, c_new, gates = ctx.saved_tensors
    need_x, need_W, need_b, need_h, need_c = ctx.needs_input_grad
    if grad_h is None:
        grad_h = torch.zeros_like(c_new)
    if grad_c is None:
        grad_c = torch.zeros_like(c_new)
    # Only the GEMMs whose gradients are asked for run: d_X holds the d_h and
    # d_x column blocks that are.
    d_X, d_W, d_b, d_c = _call(
        "lltm_backward", grad_h, grad_c, x, W, h, c_new, gates, [need_x, need_W, need_b, need_h]
    )
    state = h.shape[1] if need_h else 0
    return (
        d_X[:, state:] if need_x else None,
        d_W if need_W else None,
        d_b if need_b else None,
        d_X[:, :state] if need_h else None,
        d_c if need_c else None,
    )


_register_autograd("lltm_forward", _lltm_backward, _lltm_setup)
_no_double_backward("lltm")


@torch.library.register_fake("kernforge::lltm_backward")
def _(grad_h, grad_c, x, W, h, c_new, gates, output_mask):
    _checks.lltm_backward(grad_h, grad_c, x, W, h, c_new, gates, output_mask)
    need_x, need_W, need_b, need_h = output_mask
    batch, state = h.shape
    return (
        x.new_empty((batch, (state if need_h else 0) + (x.shape[1] if need_x else 0))),
        W.new_empty(W.shape if need_W else (0,)),
        W.new_empty(W.shape[:1] if need_b else (0,)),
        h.new_empty(h.shape),
    )


# ----------------------------------------------------------------------------- lltm_sequence


def lltm_sequence(
    x: Tensor,
    weight: Tensor,
    bias: Tensor,
    h0: Tensor | None = None,
    c0: Tensor | None = None,
    batch_first: bool = False,
    batch_sizes: Tensor | list[int] | None = None,
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """The LLTM cell (:func:`lltm`) run over a whole sequence in one call.

    All tensors have one floating dtype and one device. Half and bfloat16 run
    the GEMMs in that dtype with float accumulation, and keep the cell state
    in float between steps. Under autocast, the inputs are cast to the
    autocast dtype first.

    Args:
        x: ``[T, B, F]`` inputs (``[B, T, F]`` with ``batch_first``); with
            ``batch_sizes``, the ``[N, F]`` data of a
            ``torch.nn.utils.rnn.PackedSequence``.
        weight: ``[3S, S + F]``, exactly as the cell's.
        bias: ``[3S]``, exactly as the cell's.
        h0, c0: ``[B, S]`` initial hidden and cell state; zeros when None
            (passed to the op as None: no tensor of zeros is made).
        batch_first: x and output are ``[B, T, ...]`` (ignored with
            ``batch_sizes``, as ``nn.LSTM`` ignores it for packed input).
        batch_sizes: a PackedSequence's ``batch_sizes`` (1-D integer CPU
            tensor, or ints): step t runs on the first ``batch_sizes[t]``
            rows only (positive, non-increasing, summing to N; B is the
            first). The sequences are in the packing's order, longest first.
            Under ``torch.compile`` a tensor runs the call eagerly (a graph
            break, as ``nn.LSTM``'s), so batches of new lengths do not
            compile again; ints are traced as constants of the graph.

    Returns:
        ``(output, (h_n, c_n))``: output ``[T, B, S]`` (``[B, T, S]`` with
        ``batch_first``; packed: ``[N, S]``, laid out as x), every step's h;
        h_n and c_n ``[B, S]``, each sequence's at its own last step. T = 0
        gives an empty output and ``(h0, c0)``.

    Gradients flow to x, weight, bias, h0 and c0, each computed only when it
    is needed. Where none can flow (``torch.no_grad()``, or no input needing
    one), nothing is kept for a backward: output, h_n and c_n are all it
    makes, h_n written by the recurrence itself.
    The input projection of all steps is one GEMM (on CUDA, small float
    sequences with up to 64 features make it inside their recurrent kernel);
    each step runs the recurrent GEMM and one fused gate pass (on CUDA, at a
    batch up to 64, the whole recurrence is one kernel); the backward's d_x,
    d_W and d_b are one GEMM or reduction each over all rows (on CUDA, for
    small sequences, all three in one kernel). A packed batch is one call
    like any other, and no padding is computed. Once differentiable: a
    second backward raises NotImplementedError, as cuDNN's RNNs do
    (``kernforge.reference.lltm_sequence`` has second derivatives).

    Raises:
        RuntimeError: naming the argument, for wrong ranks or sizes, bad
            ``batch_sizes``, or mixed dtypes or devices, before any kernel
            runs.
        TypeError: naming the argument, for one that is not a tensor.
    """
    # Bound by the host at small sizes: each check here is a few hundred ns,
    # and the op's C++ checks the rest with the arguments' names.
    if not (
        isinstance(x, Tensor)
        and isinstance(weight, Tensor)
        and isinstance(bias, Tensor)
        and (h0 is None or isinstance(h0, Tensor))
        and (c0 is None or isinstance(c0, Tensor))
    ):
        for name, t in (("x", x), ("weight", weight), ("bias", bias), ("h0", h0), ("c0", c0)):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"kernforge::lltm_sequence: {name} must be a Tensor, got {type(t).__name__}")
    if batch_sizes is not None:
        if isinstance(batch_sizes, Tensor):
            return _lltm_sequence_packed_eagerly(x, weight, bias, h0, c0, batch_sizes)
        return _lltm_sequence_packed(x, weight, bias, h0, c0, _checks.batch_sizes_list(batch_sizes))
    if x.dim() != 3:
        _checks.fail("lltm_sequence", "x must be 3-D", x=x)
    if weight.dim() != 2 or weight.shape[0] % 3:
        _checks.fail("lltm_sequence", "weight must be 2-D with 3 * hidden_size rows", weight=weight)
    xs = x.transpose(0, 1) if batch_first else x
    if torch._C._is_any_autocast_enabled() and torch.is_autocast_enabled(xs.device.type):
        xs, weight, bias, h0, c0 = _autocast(xs, weight, bias, h0, c0)
    if xs.shape[0] == 0:
        batch, state = xs.shape[1], weight.shape[0] // 3
        _checks.lltm_sequence(xs, weight, bias, h0, c0, steps=False)
        output = xs.new_empty((0, batch, state))
        h0 = xs.new_zeros((batch, state)) if h0 is None else h0
        c0 = xs.new_zeros((batch, state)) if c0 is None else c0
        return (output.transpose(0, 1) if batch_first else output), (h0, c0)
    output, h_n, c_n = _lltm_sequence_call(xs, weight, bias, h0, c0, None)
    return (output.transpose(0, 1) if batch_first else output), (h_n, c_n)


def _autocast(*tensors):
    """The tensors (None stays None) in the autocast dtype of the first's device."""
    dtype = torch.get_autocast_dtype(tensors[0].device.type)
    return tuple(None if t is None else t.to(dtype) for t in tensors)


def _lltm_sequence_call(x, weight, bias, h0, c0, batch_sizes):
    """(output, h_n, c_n) of the forward op, with autograd where a gradient
    can flow; else of the inference op (an absent h0 or c0 goes to the op as
    None: zeros, with no tensor made)."""
    grad = torch.is_grad_enabled() and (
        x.requires_grad
        or weight.requires_grad
        or bias.requires_grad
        or (h0 is not None and h0.requires_grad)
        or (c0 is not None and c0.requires_grad)
    )
    if _forward_ad._current_level >= 0:
        _tangents("lltm_sequence", x, weight, bias, h0, c0)  # raises on a tangent
    if grad or _tracing():
        if _compiled_inference(grad):
            return _ops.lltm_sequence_inference.default(x, weight, bias, h0, c0, batch_sizes)
        output, h_n, c_n, _, _ = _with_autograd("lltm_sequence_forward", x, weight, bias, h0, c0, batch_sizes)
        return output, h_n, c_n
    # No backward to come: the op that keeps no gates or cells for one.
    with _below_autograd():
        return _ops.lltm_sequence_inference.default(x, weight, bias, h0, c0, batch_sizes)


@torch.compiler.disable
def _lltm_sequence_packed_eagerly(x, weight, bias, h0, c0, batch_sizes: Tensor):
    """_lltm_sequence_packed with a PackedSequence's batch_sizes tensor,
    eager under torch.compile (a graph break, as nn.LSTM's): traced, the
    values read from it would be constants of the graph, and each batch of
    new lengths would compile again, until dynamo's recompile limit."""
    return _lltm_sequence_packed(x, weight, bias, h0, c0, _checks.batch_sizes_list(batch_sizes))


def _lltm_sequence_packed(x, weight, bias, h0, c0, sizes: list[int]):
    """lltm_sequence over packed data x [N, F] with batch_sizes `sizes`: h_n
    is each sequence's output at its own last step. The op checks the
    arguments (and the fake kernel under tracing), as for fixed length."""
    if torch._C._is_any_autocast_enabled() and torch.is_autocast_enabled(x.device.type):
        x, weight, bias, h0, c0 = _autocast(x, weight, bias, h0, c0)
    output, h_n, c_n = _lltm_sequence_call(x, weight, bias, h0, c0, sizes)
    return output, (h_n, c_n)


def _cell_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _sequence_shape(x, batch_sizes, columns):
    """A per-step output's shape: [T, B, C], or [N, C] packed."""
    return (x.shape[0], columns) if batch_sizes is not None else (x.shape[0], x.shape[1], columns)


def _checked_sequence(x, W, b, h0, c0, batch_sizes):
    """The sequence ops' checks, then their output [T, B, S] (or [N, S]
    packed) and the batch B and state size S."""
    _checks.lltm_sequence(x, W, b, h0, c0, batch_sizes=batch_sizes)
    batch = batch_sizes[0] if batch_sizes is not None else x.shape[1]
    state = W.shape[0] // 3
    return x.new_empty(_sequence_shape(x, batch_sizes, state)), batch, state


@torch.library.register_fake("kernforge::lltm_sequence_forward")
def _(x, W, b, h0, c0, batch_sizes=None):
    output, batch, state = _checked_sequence(x, W, b, h0, c0, batch_sizes)
    return (
        output,
        x.new_empty((batch, state)),
        x.new_empty((batch, state)),
        x.new_empty(_sequence_shape(x, batch_sizes, 3 * state)),
        x.new_empty(_sequence_shape(x, batch_sizes, state), dtype=_cell_dtype(x.dtype)),
    )


@torch.library.register_fake("kernforge::lltm_sequence_inference")
def _(x, W, b, h0, c0, batch_sizes=None):
    output, batch, state = _checked_sequence(x, W, b, h0, c0, batch_sizes)
    return output, x.new_empty((batch, state)), x.new_empty((batch, state))


def _lltm_sequence_setup(ctx, inputs, output):
    x, W, _, h0, _, batch_sizes = inputs
    out, _, _, gates, cells = output
    ctx.save_for_backward(x, W, h0, out, cells, gates)
    ctx.batch_sizes = batch_sizes
    ctx.set_materialize_grads(False)  # gates and cells never get a gradient


def _lltm_sequence_backward(ctx, grad_output, grad_hn, grad_cn, _grad_gates, _grad_cells):
    mask = list(ctx.needs_input_grad[:5])
    grads = _call(
        "lltm_sequence_backward", grad_output, grad_cn, *ctx.saved_tensors, mask, ctx.batch_sizes, grad_hn
    )
    return *(g if m else None for g, m in zip(grads, mask, strict=True)), None


_register_autograd("lltm_sequence_forward", _lltm_sequence_backward, _lltm_sequence_setup)
_no_double_backward("lltm_sequence")


# (output, h_n, c_n, gates, cells) and (output, h_n, c_n): the rows dimension
# of each, of x [T, B, F] (packed: [N, F], batch_sizes times V) and of h0, c0


def _sequence_rows(outputs_rows, packed_rows):
    def plan(args, v):
        x, W, b, h0, c0, batch_sizes = args
        if batch_sizes is None:
            return (1, None, None, 0, 0, None), outputs_rows, args
        return (0, None, None, 0, 0, None), packed_rows, (x, W, b, h0, c0, [n * v for n in batch_sizes])

    return plan


def _check_sequence(x, W, b, h0, c0, batch_sizes=None):
    _checks.lltm_sequence(x, W, b, h0, c0, batch_sizes=batch_sizes)


_register_rows_vmap("lltm_sequence_forward", _check_sequence, _sequence_rows((1, 0, 0, 1, 1), (0,) * 5))
_register_rows_vmap("lltm_sequence_inference", _check_sequence, _sequence_rows((1, 0, 0), (0, 0, 0)))


@torch.library.register_fake("kernforge::lltm_sequence_backward")
def _(grad_output, grad_cn, x, W, h0, output, cells, gates, output_mask, batch_sizes=None, grad_hn=None):
    _checks.lltm_sequence_backward(
        grad_output, grad_cn, x, W, h0, output, cells, gates, output_mask, batch_sizes, grad_hn
    )
    batch = batch_sizes[0] if batch_sizes is not None else x.shape[1]
    state = W.shape[0] // 3
    shapes = (tuple(x.shape), tuple(W.shape), (3 * state,), (batch, state), (batch, state))
    return tuple(x.new_empty(s if m else (0,)) for s, m in zip(shapes, output_mask, strict=True))


def packed_reversed_rows(x: Tensor, batch_sizes: Tensor | list[int]) -> Tensor:
    """The row order that reverses every sequence of packed data within its
    own length: what the reverse direction of a bidirectional layer runs on.

    Args:
        x: ``[N, F]``, a ``torch.nn.utils.rnn.PackedSequence``'s data (only
            its device and N are read).
        batch_sizes: the PackedSequence's ``batch_sizes`` (1-D integer CPU
            tensor, or ints: positive, non-increasing, summing to N).

    Returns:
        int64 ``[N]`` on x's device: ``x.index_select(0, order)`` is the
        packed data of each sequence reversed, with the same batch_sizes
        (row (t, b) takes row (L_b - 1 - t, b), L_b the length of sequence
        b). The order is its own inverse. It is made on the host in one call
        (on CUDA, copied from pinned memory without waiting for the device).

    Raises:
        RuntimeError: naming the argument, for bad ``batch_sizes`` or an x
            that is not 2-D.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"kernforge::packed_reversed_rows: x must be a Tensor, got {type(x).__name__}")
    return _ops.packed_reversed_rows.default(x.detach(), _checks.batch_sizes_list(batch_sizes))


@torch.library.register_fake("kernforge::packed_reversed_rows")
def _(x, batch_sizes):
    _checks.sequence_steps("packed_reversed_rows", x, batch_sizes)
    return x.new_empty((x.shape[0],), dtype=torch.int64)


# ----------------------------------------------------------------------------- lltm_sequence_layers


def lltm_sequence_layers(
    x: Tensor,
    weights: list[Tensor],
    biases: list[Tensor],
    h0: Tensor | None = None,
    c0: Tensor | None = None,
    dropout: float = 0.0,
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Layers of the LLTM over a sequence, layer k > 0 taking layer k - 1's
    output: what :class:`kernforge.nn.LLTMSequence` runs for one direction.

    Args:
        x: ``[T, B, F]`` inputs; T = 0 gives an empty output and h_n, c_n
            the state given (zeros where None), with or without gradients.
        weights, biases: one per layer, ``[3S, S + F_k]`` and ``[3S]`` (F_0 =
            F, else S).
        h0, c0: ``[L, B, S]`` initial states, or None (zeros).
        dropout: the probability of zeroing each element of a layer's output
            before the next layer takes it (the survivors scaled by
            ``1 / (1 - dropout)``), as ``nn.LSTM``'s dropout in training
            mode; 0 (the default) for none. The masks are torch's dropout's
            for the same seed.

    Returns:
        ``(output, (h_n, c_n))``: output ``[T, B, S]`` of the last layer, h_n
        and c_n ``[L, B, S]``. Where no gradient can flow (``no_grad``, or
        no input needing one) and without dropout, all layers run in one op
        call (``lltm_sequence_layers_inference``): token-by-token generation
        pays one call's host time, not one per layer. Where one can, all
        layers are one autograd node, whose forward and backward call each
        layer's ops directly (a decoder stepping one token a call under
        autograd pays no Python wrapper and no graph node per layer).

    Raises:
        RuntimeError: naming the argument, as :func:`lltm_sequence`, and for
            weights and biases of different counts, a layer of another hidden
            size than layer 0's, or h0 and c0 of another dtype or device than
            x; before any layer runs.
        ValueError: for a dropout outside [0, 1].
    """
    weights, biases = list(weights), list(biases)
    if not 0.0 <= dropout <= 1.0:
        raise ValueError(f"kernforge::lltm_sequence_layers: dropout must be in [0, 1], got {dropout}")
    if torch._C._is_any_autocast_enabled() and torch.is_autocast_enabled(x.device.type):
        x, h0, c0, *params = _autocast(x, h0, c0, *weights, *biases)
        weights, biases = params[: len(weights)], params[len(weights) :]
    layers = len(weights)
    dropout = float(dropout) if layers > 1 else 0.0  # only between layers
    grad = torch.is_grad_enabled() and (
        x.requires_grad
        or any(w.requires_grad for w in weights)
        or any(b.requires_grad for b in biases)
        or (h0 is not None and h0.requires_grad)
        or (c0 is not None and c0.requires_grad)
    )
    tangents = _forward_ad._current_level >= 0
    if not grad and not _tracing():
        if tangents:
            _tangents("lltm_sequence_layers", x, *weights, *biases, h0, c0)  # raises on a tangent
        steps = x.dim() != 3 or x.shape[0] > 0  # (no steps: as with gradients, below)
        if steps and dropout == 0.0:  # (the op names what is wrong)
            with _below_autograd():
                output, h_n, c_n = _ops.lltm_sequence_layers_inference.default(x, weights, biases, h0, c0)
            return output, (h_n, c_n)
        if steps:  # dropout between the layers: a call a layer, nothing kept
            _check_later_layers(x, weights, biases, h0, c0)
            return LLTMSequenceLayers.run(
                _ops.lltm_sequence_inference.default, x, h0, c0, dropout, weights, biases
            )[:2]
    elif _compiled_inference(grad) and not tangents and dropout == 0.0 and (x.dim() != 3 or x.shape[0] > 0):
        output, h_n, c_n = _ops.lltm_sequence_layers_inference.default(x, weights, biases, h0, c0)
        return output, (h_n, c_n)
    elif not (_tracing() or tangents or _transforming()) and x.dim() == 3 and x.shape[0] > 0:
        _check_later_layers(x, weights, biases, h0, c0)
        output, h_n, c_n = LLTMSequenceLayers.apply(x, h0, c0, dropout, *weights, *biases)
        return output, (h_n, c_n)
    # Traced, compiled (but for the inference above), under torch.func or
    # forward-mode AD, or no steps (an empty output, h_n and c_n the state
    # given, or zeros): each layer lltm_sequence, the op with its registered
    # formula (compiled where no gradient can flow, the inference op).
    if any(t is not None and (t.dim() != 3 or t.shape[0] != layers) for t in (h0, c0)):
        _checks.lltm_sequence_layers(x, weights, biases, h0, c0, op="lltm_sequence_layers")
    h_n, c_n = [], []
    # unbind, not h0[k]: its backward is one stack, where each h0[k]'s would
    # be a tensor of zeros, a copy and a sum a layer.
    h0s = [None] * layers if h0 is None else h0.unbind(0)
    c0s = [None] * layers if c0 is None else c0.unbind(0)
    for k, (W, b, h_0, c_0) in enumerate(zip(weights, biases, h0s, c0s, strict=True)):
        if k > 0 and dropout > 0.0:
            x = torch.nn.functional.dropout(x, dropout, training=True)
        x, (h, c) = lltm_sequence(x, W, b, h_0, c_0)
        h_n.append(h)
        c_n.append(c)
    if layers == 1 and x.shape[0] > 0:
        # No copies (two launches) for the common single layer: its h_n and
        # c_n are the op's, which nothing else holds, as [1, B, S] in their
        # storage and not views, as nn.LSTM's are tensors of their own (code
        # detaches them in place, which a view refuses).
        return x, (_unsafe_view(h_n[0], (1, *h_n[0].shape)), _unsafe_view(c_n[0], (1, *c_n[0].shape)))
    return x, (torch.stack(h_n), torch.stack(c_n))


def _check_later_layers(x, weights, biases, h0, c0) -> None:
    """Raises, naming the argument, before layer 0 runs, for what no
    layer's op would catch: a layer past the first of another hidden size,
    or h0 or c0 not [L, B, S]; each layer's op checks the rest."""
    layers = len(weights)
    rows = weights[0].shape[0] if layers > 0 and weights[0].dim() == 2 else -1
    state = (layers, x.shape[1], rows // 3) if x.dim() == 3 else ()
    if (
        rows < 0
        or len(biases) != layers
        or (h0 is not None and h0.shape != state)
        or (c0 is not None and c0.shape != state)
        or any(W.dim() != 2 or W.shape[0] != rows for W in weights[1:])
    ):
        _checks.lltm_sequence_layers(x, weights, biases, h0, c0, op="lltm_sequence_layers")


class LLTMSequenceLayers(torch.autograd.Function):
    """lltm_sequence_layers where a gradient can flow, in eager mode: all
    layers one autograd node. Its forward calls each layer's forward op and
    its backward each layer's backward op below the autograd key, in place
    of a wrapper, an op with its formula, an unbind and a stack a layer; the
    dropout between the layers is torch's fused dropout, its masks kept."""

    @staticmethod
    def run(forward, x, h0, c0, dropout, weights, biases):
        """(output, (h_n, c_n), kept): each layer through ``forward`` (the
        forward or the inference op) below the autograd key, its input
        dropped out past the first; kept: what the forward op returned for
        the backward, with each layer's input and the masks."""
        layers = len(weights)
        h_n, c_n, kept, masks = [], [], [], []
        with _below_autograd():
            h0s = (None,) * layers if h0 is None else h0.unbind(0)
            c0s = (None,) * layers if c0 is None else c0.unbind(0)
            for k in range(layers):
                if k > 0 and dropout > 0.0:
                    x, mask = torch.native_dropout(x, dropout, True)
                    masks.append(mask)
                out, h, c, *rest = forward(x, weights[k], biases[k], h0s[k], c0s[k], None)
                h_n.append(h)
                c_n.append(c)
                kept += (x, out, *rest)
                x = out
            if layers == 1:  # the op's own h_n and c_n as [1, B, S], no copies
                return x, (_unsafe_view(h, (1, *h.shape)), _unsafe_view(c, (1, *c.shape))), kept
        # (stacked above the autograd key: below it, stack's result is a view
        # of a cat's, which code written for nn.LSTM could not detach in place)
        return x, (torch.stack(h_n), torch.stack(c_n)), kept + masks

    @staticmethod
    def forward(ctx, x, h0, c0, dropout, *params):
        # (forward(ctx, ...) with no setup_context: apply then binds no
        # arguments through inspect, microseconds a call)
        layers = len(params) // 2
        output, (h_n, c_n), kept = LLTMSequenceLayers.run(
            _ops.lltm_sequence_forward.default, x, h0, c0, dropout, params[:layers], params[layers:]
        )
        ctx.save_for_backward(h0, *params[:layers], *kept)
        ctx.dropout = dropout
        ctx.set_materialize_grads(False)
        return output, h_n, c_n

    @staticmethod
    def backward(ctx, grad_output, grad_hn, grad_cn):
        need_x, need_h0, need_c0, _, *need_params = ctx.needs_input_grad
        layers = len(need_params) // 2
        h0, *saved = ctx.saved_tensors
        weights, kept, masks = saved[:layers], saved[layers : 5 * layers], saved[5 * layers :]
        h0s = (None,) * layers if h0 is None else h0.unbind(0)
        p = ctx.dropout
        scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
        d_W, d_b, d_h0, d_c0 = [None] * layers, [None] * layers, [None] * layers, [None] * layers
        grad, d_x = grad_output, None
        for k in range(layers - 1, -1, -1):
            # layer k's input: x, or what reaches every parameter and state below it
            below = (
                need_x or need_h0 or need_c0 or any(need_params[:k]) or any(need_params[layers : layers + k])
            )
            mask = [need_x if k == 0 else below, need_params[k], need_params[layers + k], need_h0, need_c0]
            if not any(mask):
                break
            inp, out, gates, cells = kept[4 * k : 4 * k + 4]
            d_x, d_W[k], d_b[k], d_h0[k], d_c0[k] = _call(
                "lltm_sequence_backward",
                grad,
                None if grad_cn is None else grad_cn[k],
                inp,
                weights[k],
                h0s[k],
                out,
                cells,
                gates,
                mask,
                None,
                None if grad_hn is None else grad_hn[k],
            )
            if k > 0 and mask[0]:
                grad = d_x if p == 0.0 else torch.ops.aten.native_dropout_backward(d_x, masks[k - 1], scale)
        return (
            d_x if need_x else None,
            torch.stack(d_h0) if need_h0 else None,
            torch.stack(d_c0) if need_c0 else None,
            None,
            *(g if n else None for g, n in zip(d_W + d_b, need_params, strict=True)),
        )


# A tensor of another shape over the same storage that autograd does not
# track as a view, for a tensor that nothing else holds.
_unsafe_view = torch.ops.aten._unsafe_view.default


def _check_layers(x, weights, biases, h0, c0) -> None:
    """lltm_sequence_layers_inference's checks, each layer's included."""
    _checks.lltm_sequence_layers(x, weights, biases, h0, c0)
    for k, (W, b) in enumerate(zip(weights, biases, strict=True)):
        features = x.shape[2] if k == 0 else W.shape[0] // 3
        _checks.lltm_sequence(x.new_empty((x.shape[0], x.shape[1], features)), W, b, None, None)


@torch.library.register_fake("kernforge::lltm_sequence_layers_inference")
def _(x, weights, biases, h0, c0):
    _check_layers(x, weights, biases, h0, c0)
    steps, batch, _ = x.shape
    state, layers = weights[0].shape[0] // 3, len(weights)
    return (
        x.new_empty((steps, batch, state)),
        x.new_empty((layers, batch, state)),
        x.new_empty((layers, batch, state)),
    )


# output [T, B, S], h_n and c_n [L, B, S]: rows at dimension 1, as x's, h0's and c0's
_register_rows_vmap(
    "lltm_sequence_layers_inference", _check_layers, lambda args, v: ((1, None, None, 1, 1), (1, 1, 1), args)
)
