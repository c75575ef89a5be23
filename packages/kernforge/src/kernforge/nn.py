"""``torch.nn`` modules over the kernforge ops."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from . import functional as F


class FusedReLUAdd(nn.Module):
    """``relu(x) + y + bias`` with a learnable per-feature bias, in one pass
    (forward) and one fused pass for the gradients (backward): the residual
    join of a block, ``relu(branch) + skip + bias``.

    Args:
        features: size of the last dimension of the inputs.
        device, dtype: of the bias parameter (initialized to zeros).

    Shape:
        x, y: ``(*, features)``, of one dtype and device; output: the same.

    Raises:
        ValueError: for ``features`` below 1. The forward raises as
            :func:`kernforge.functional.fused_relu_add`.
    """

    def __init__(self, features: int, device=None, dtype=None):
        super().__init__()
        if features < 1:
            raise ValueError(f"features must be positive, got {features}")
        self.features = features
        self.bias = nn.Parameter(torch.zeros(features, device=device, dtype=dtype))

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        return F.fused_relu_add(x, y, self.bias)

    def extra_repr(self) -> str:
        return f"features={self.features}"


class LLTM(nn.Module):
    """The LLTM recurrent cell: an LSTM-like cell without a forget gate, with an
    ELU candidate (see :func:`kernforge.functional.lltm` for the equations).

    Args:
        input_features: F, the size of each input.
        state_size: S, the size of the hidden and cell state.
        device, dtype: of the parameters.

    Parameters ``weight [3S, S + F]`` and ``bias [3S]`` start uniform in
    ``(-1/sqrt(S), 1/sqrt(S))``.

    Shape:
        forward(x ``[B, F]``, (h ``[B, S]``, c ``[B, S]``)) -> (h', c'), each ``[B, S]``.

    Raises:
        ValueError: for ``input_features`` or ``state_size`` below 1. The
            forward raises as :func:`kernforge.functional.lltm`.
    """

    def __init__(self, input_features: int, state_size: int, device=None, dtype=None):
        super().__init__()
        if input_features < 1 or state_size < 1:
            raise ValueError(
                f"input_features and state_size must be positive, got {input_features} and {state_size}"
            )
        self.input_features = input_features
        self.state_size = state_size
        kw = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(3 * state_size, state_size + input_features, **kw))
        self.bias = nn.Parameter(torch.empty(3 * state_size, **kw))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.state_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        h, c = state
        return F.lltm(x, self.weight, self.bias, h, c)

    def reference(self, x: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """The same step in plain PyTorch (:func:`kernforge.reference.lltm`)."""
        from . import reference

        h, c = state
        return reference.lltm(x, self.weight, self.bias, h, c)

    def extra_repr(self) -> str:
        return f"input_features={self.input_features}, state_size={self.state_size}"


class RoundSTE(nn.Module):
    """Straight-through rounding (:func:`kernforge.functional.round_ste`): 1 where
    ``x >= 0.5``, else 0, in the forward; the identity in the backward. The
    binarization step of quantization-aware and binary networks.

    Shape:
        x: any shape, float16, bfloat16, float32 or float64; output: the same
        shape and dtype, contiguous.
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.round_ste(x)
