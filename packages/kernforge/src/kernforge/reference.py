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


def lltm(x: Tensor, W: Tensor, b: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """One LLTM step in plain PyTorch: ``(h', c')`` (see :func:`kernforge.functional.lltm`)."""
    gates = torch.nn.functional.linear(torch.cat([h, x], dim=1), W, b)
    g0, g1, g2 = gates.chunk(3, dim=1)
    i, o, z = torch.sigmoid(g0), torch.sigmoid(g1), torch.nn.functional.elu(g2)
    c_new = c + z * i
    return torch.tanh(c_new) * o, c_new


def round_ste(x: Tensor) -> Tensor:
    """``(x >= 0.5)`` in ``x``'s dtype, with the gradient passed straight through."""
    hard = (x >= 0.5).to(x.dtype)
    return x + (hard - x).detach() if x.requires_grad else hard
