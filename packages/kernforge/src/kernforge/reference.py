"""Pure-PyTorch implementations of every kernforge op.

The tests compare the kernels against these (in float64), and
:mod:`kernforge.functional` falls back to them when the compiled kernels cannot
be loaded or ``KERNFORGE_REFERENCE=1``. They follow torch's usual broadcasting
and type promotion, so they accept more than the kernels, which want inputs of
one shape, dtype and device.
"""

from __future__ import annotations

import torch
from torch import Tensor


def mul(a: Tensor, b: Tensor) -> Tensor:
    """``a * b``."""
    return a * b


def add(a: Tensor, b: Tensor, alpha: float = 1) -> Tensor:
    """``a + alpha * b``."""
    return torch.add(a, b, alpha=alpha)


def fused_relu_add(x: Tensor, y: Tensor, bias: Tensor | float = 0.0) -> Tensor:
    """``relu(x) + y + bias``; a tensor bias broadcasts over the last dimension."""
    return torch.relu(x) + y + bias
