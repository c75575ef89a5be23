"""The straight-through round op, ``torch.ops.kernforge_legacy.round_ste``.

Its kernels are legacy code: ``csrc/round`` holds C functions over
``THFloatTensor*`` / ``THCudaTensor*`` (and the double, half and bfloat16
types) and a CUDA kernel written with Caffe's macros, built by this package's
own :func:`kernforge_legacy.ffi.create_extension` into
``kernforge_legacy._ext.round`` when the package is built. This module
registers the op over them, with its fake kernel and autograd formula, and,
when kernforge-core is installed (``kernforge`` depends on it), the formula
``torch.compile`` fuses with its neighbours in place of the kernel
(:mod:`kernforge_core.fusion`).
"""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as _forward_ad
from torch import Tensor

try:
    from ._ext import round as _ext
except ModuleNotFoundError as e:
    raise ImportError(
        "kernforge_legacy: the round_ste extension (kernforge_legacy._ext.round) is not built; "
        "install the package with pip (it builds csrc/round)"
    ) from e
except OSError as e:  # the library is there but does not load with this torch
    from importlib.metadata import version

    raise ImportError(
        f"kernforge_legacy: kernforge-legacy {version('kernforge-legacy')} cannot load its round_ste "
        f"library with torch {torch.__version__} ({e}). A +cuNN build needs a torch built with CUDA NN: "
        "install the variant (+cpu, +cu12, +cu13) that matches your torch"
    ) from e

try:
    from kernforge_core import fusion
except ImportError:  # kernforge-legacy alone: round_ste stays one opaque kernel under torch.compile
    fusion = None

_SUFFIX = {torch.float32: "", torch.float64: "_double", torch.float16: "_half", torch.bfloat16: "_bfloat16"}

torch.library.define("kernforge_legacy::round_ste", "(Tensor x) -> Tensor")
_op = torch.ops.kernforge_legacy.round_ste.default
_below_autograd = torch._C._AutoDispatchBelowAutograd


def round_ste(x: Tensor) -> Tensor:
    """Straight-through rounding: 1 where ``x >= 0.5``, 0 elsewhere (NaN gives
    0); the backward passes the gradient through unchanged.

    Ties go up: 0.5 rounds to 1 and 2.5 is not a concern (values above 1 give
    1 too), unlike ``torch.round``, which rounds half to even (0.5 -> 0) and
    keeps integers.

    Args:
        x: a float16, bfloat16, float32 or float64 tensor, CPU or CUDA, any
            shape and layout.

    Returns:
        A contiguous tensor of ``x``'s shape, dtype and device.

    Raises:
        RuntimeError: for another dtype, a sparse tensor or another device,
            naming what it got.
    """
    if not torch.jit.is_scripting():  # TorchScript compiles this function (kernforge.nn.RoundSTE)
        if torch._C._are_functorch_transforms_active() or (
            _forward_ad._current_level >= 0 and _forward_ad.unpack_dual(x).tangent is not None
        ):
            return _TransformableRoundSTE.apply(x)
        if isinstance(x, Tensor) and not (torch.compiler.is_compiling() or torch.jit.is_tracing()):
            # Eager: past torch.library's Python autograd layer (a third of
            # the call's host time), straight to the kernel when no gradient
            # can flow. Traced or compiled, the graph holds the op itself.
            if torch.is_grad_enabled() and x.requires_grad:
                return _RoundSTE.apply(x)
            with _below_autograd():
                return _op(x)
    return torch.ops.kernforge_legacy.round_ste(x)


def _check(x: Tensor) -> None:
    if x.dtype not in _SUFFIX or x.layout != torch.strided or x.device.type not in ("cpu", "cuda", "meta"):
        raise RuntimeError(
            "kernforge_legacy::round_ste: expected a dense float16, bfloat16, float32 or float64 CPU or "
            f"CUDA tensor, got {str(x.dtype).removeprefix('torch.')} {x.layout} on {x.device}"
        )


def _forward(x: Tensor) -> Tensor:
    _check(x)
    name = f"round_ste_forward{'_cuda' if x.is_cuda else ''}{_SUFFIX[x.dtype]}"
    fn = getattr(_ext, name, None)
    if fn is None:
        raise RuntimeError("kernforge_legacy::round_ste: this build of kernforge-legacy has no CUDA kernels")
    x = x.contiguous()
    out = torch.empty_like(x)
    fn.op(x, out)  # the extension's op itself: its Python wrapper's checks are for C callers' inputs
    return out


torch.library.impl("kernforge_legacy::round_ste", "CPU", _forward)
torch.library.impl("kernforge_legacy::round_ste", "CUDA", _forward)


@torch.library.register_fake("kernforge_legacy::round_ste")
def _round_ste_fake(x: Tensor) -> Tensor:
    if fusion is not None:
        fusion.activate()
    _check(x)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _round_ste_formula(x: Tensor) -> Tensor:
    return (x >= 0.5).to(x.dtype).contiguous()


if fusion is not None:
    fusion.formula(torch.ops.kernforge_legacy.round_ste.default)(_round_ste_formula)


def _round_ste_backward(ctx, grad: Tensor) -> Tensor:
    return grad


torch.library.register_autograd("kernforge_legacy::round_ste", _round_ste_backward)


@torch.library.register_vmap("kernforge_legacy::round_ste")
def _round_ste_vmap(info, in_dims, x: Tensor):
    # pointwise: one call over the whole batch, the batch dimension where it was
    return _op(x), in_dims[0]


def _round_ste_forward(ctx, x: Tensor) -> Tensor:
    with _below_autograd():
        return _op(x)


# round_ste's formula for eager calls (its grad_fn: kernforge_legacy_round_steBackward).
# forward takes ``ctx`` itself: a Function with a setup_context binds every
# apply's arguments through inspect, microseconds a call.
_RoundSTE = type(
    "kernforge_legacy_round_ste",
    (torch.autograd.Function,),
    {"forward": staticmethod(_round_ste_forward), "backward": staticmethod(_round_ste_backward)},
)


class _TransformableRoundSTE(torch.autograd.Function):
    """round_ste under torch.func's transforms (grad, vmap, jvp, ...), which
    take only a Function with a setup_context of its own (torch.library's
    formula has none), and in forward-mode AD: the tangent passes through
    unchanged, as the gradient does (the straight-through estimator's
    derivative is the identity, both ways)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor) -> Tensor:
        with _below_autograd():
            return _op(x)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        pass

    backward = staticmethod(_round_ste_backward)

    @staticmethod
    def jvp(ctx, tangent: Tensor) -> Tensor:
        return tangent
