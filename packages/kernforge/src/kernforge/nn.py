"""``torch.nn`` modules over the kernforge ops."""

from __future__ import annotations

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
