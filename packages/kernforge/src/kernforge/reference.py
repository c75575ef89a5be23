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


def lltm_sequence(
    x: Tensor,
    weight: Tensor,
    bias: Tensor,
    h0: Tensor | None = None,
    c0: Tensor | None = None,
    batch_first: bool = False,
    batch_sizes=None,
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """The LLTM cell over a sequence in plain PyTorch, a loop over :func:`lltm`:
    ``(output, (h_n, c_n))`` (see :func:`kernforge.functional.lltm_sequence`).
    With ``batch_sizes``, x is packed and step t runs on its first
    ``batch_sizes[t]`` rows; the other rows keep their state."""
    state = weight.shape[0] // 3
    if batch_sizes is not None:
        sizes = [int(n) for n in batch_sizes]
        h = x.new_zeros((sizes[0], state)) if h0 is None else h0
        c = x.new_zeros((sizes[0], state)) if c0 is None else c0
        steps, offset = [], 0
        for n in sizes:
            h_t, c_t = lltm(x[offset : offset + n], weight, bias, h[:n], c[:n])
            steps.append(h_t)
            h, c = torch.cat([h_t, h[n:]]), torch.cat([c_t, c[n:]])
            offset += n
        return torch.cat(steps), (h, c)
    xs = x.transpose(0, 1) if batch_first else x
    h = xs.new_zeros((xs.shape[1], state)) if h0 is None else h0
    c = xs.new_zeros((xs.shape[1], state)) if c0 is None else c0
    steps = []
    for t in range(xs.shape[0]):
        h, c = lltm(xs[t], weight, bias, h, c)
        steps.append(h)
    output = torch.stack(steps) if steps else xs.new_empty((0, xs.shape[1], state))
    return (output.transpose(0, 1) if batch_first else output), (h, c)


def packed_reversed_rows(x: Tensor, batch_sizes) -> Tensor:
    """The row order that reverses every sequence of packed x within its own
    length, in plain PyTorch (see :func:`kernforge.functional.packed_reversed_rows`)."""
    sizes = torch.as_tensor([int(n) for n in batch_sizes], dtype=torch.int64)
    offsets = torch.cumsum(sizes, 0) - sizes
    lengths = (sizes.unsqueeze(1) > torch.arange(int(sizes[0]))).sum(0)
    t, b = (torch.arange(len(sizes)).unsqueeze(1) < lengths).nonzero(as_tuple=True)
    return (offsets[lengths[b] - 1 - t] + b).to(x.device)


def lltm_sequence_layers(
    x: Tensor, weights, biases, h0: Tensor | None = None, c0: Tensor | None = None, dropout: float = 0.0
):
    """Layers of :func:`lltm_sequence` in plain PyTorch, layer k > 0 taking
    layer k - 1's output (dropped out with probability ``dropout``):
    ``(output, (h_n, c_n))``, h_n and c_n ``[L, B, S]`` (see
    :func:`kernforge.functional.lltm_sequence_layers`)."""
    h_n, c_n = [], []
    for k, (W, b) in enumerate(zip(weights, biases, strict=True)):
        if k > 0 and dropout > 0:
            x = torch.nn.functional.dropout(x, dropout, training=True)
        x, (h, c) = lltm_sequence(x, W, b, None if h0 is None else h0[k], None if c0 is None else c0[k])
        h_n.append(h)
        c_n.append(c)
    if len(h_n) == 1:  # no copies (two launches) for the common single layer
        return x, (h_n[0].unsqueeze(0), c_n[0].unsqueeze(0))
    return x, (torch.stack(h_n), torch.stack(c_n))


def round_ste(x: Tensor) -> Tensor:
    """``(x >= 0.5)`` in ``x``'s dtype, with the gradient passed straight through."""
    hard = (x >= 0.5).to(x.dtype)
    return x + (hard - x).detach() if x.requires_grad else hard
