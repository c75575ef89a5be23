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


class LLTMSequence(nn.Module):
    """The LLTM cell run over sequences, layer upon layer, shaped like
    ``torch.nn.LSTM`` (see :func:`kernforge.functional.lltm_sequence`).

    Args:
        input_size: F, the size of each input.
        hidden_size: S, the size of the hidden and cell state.
        num_layers: layers stacked; layer k > 0 takes layer k - 1's output.
        bias: whether the layers have a bias (else the gates have none).
        batch_first: input and output are ``[B, T, ...]``.
        device, dtype: of the parameters.

    Parameters ``weight_l{k} [3S, S + F_k]`` (F_0 = input_size, else S) and
    ``bias_l{k} [3S]``, uniform in ``(-1/sqrt(S), 1/sqrt(S))``: a trained
    :class:`LLTM` cell's ``weight`` and ``bias`` load into layer 0 unchanged.

    Shape:
        forward(input, hx=None) -> (output, (h_n, c_n)): input ``[T, B, F]``
        (``[B, T, F]`` with batch_first; ``[T, F]`` unbatched) or a
        ``torch.nn.utils.rnn.PackedSequence``; hx ``(h_0, c_0)``, each
        ``[num_layers, B, S]`` (zeros when None); output ``[T, B, S]`` (or a
        PackedSequence for one), h_n and c_n ``[num_layers, B, S]``, taken at
        each sequence's own last step.

    Raises:
        ValueError: for sizes below 1. The forward raises as
            :func:`kernforge.functional.lltm_sequence`, and ValueError for an
            hx of the wrong shape.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if input_size < 1 or hidden_size < 1 or num_layers < 1:
            raise ValueError(
                "input_size, hidden_size and num_layers must be positive, got "
                f"{input_size}, {hidden_size} and {num_layers}"
            )
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        kw = {"device": device, "dtype": dtype}
        for k in range(num_layers):
            features = input_size if k == 0 else hidden_size
            self.register_parameter(
                f"weight_l{k}", nn.Parameter(torch.empty(3 * hidden_size, hidden_size + features, **kw))
            )
            self.register_parameter(
                f"bias_l{k}", nn.Parameter(torch.empty(3 * hidden_size, **kw)) if bias else None
            )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def _layers(self):
        for k in range(self.num_layers):
            weight = getattr(self, f"weight_l{k}")
            bias = getattr(self, f"bias_l{k}")
            yield weight, (weight.new_zeros(weight.shape[:1]) if bias is None else bias)

    def _run(self, fn, x: Tensor, h0: Tensor | None, c0: Tensor | None):
        """All layers over time-major x [T, B, F] from h0, c0 [num_layers, B, S]
        (None: zeros, which each layer gets as None): (output, h_n, c_n)."""
        h_n, c_n = [], []
        for k, (weight, bias) in enumerate(self._layers()):
            x, (h, c) = fn(x, weight, bias, None if h0 is None else h0[k], None if c0 is None else c0[k])
            h_n.append(h)
            c_n.append(c)
        if len(h_n) == 1:  # no copies (two launches) for the common single layer
            return x, h_n[0].unsqueeze(0), c_n[0].unsqueeze(0)
        return x, torch.stack(h_n), torch.stack(c_n)

    def _state(self, hx, batch: int, batched: bool) -> tuple[Tensor | None, Tensor | None]:
        """hx as [num_layers, B, S] each, checked; (None, None) for zeros."""
        shape = (self.num_layers, batch, self.hidden_size)
        if hx is None:
            return None, None
        h0, c0 = hx
        if not batched:
            h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        for name, t in (("h_0", h0), ("c_0", c0)):
            if tuple(t.shape) != shape:
                raise ValueError(
                    f"LLTMSequence: {name} must be [num_layers, batch, hidden_size] = {list(shape)}, "
                    f"got {list(t.shape)}"
                )
        return h0, c0

    def forward(self, input, hx=None):
        return self._forward(F.lltm_sequence, input, hx)

    def reference(self, input, hx=None):
        """The same layers in plain PyTorch (:func:`kernforge.reference.lltm_sequence`)."""
        from . import reference

        return self._forward(reference.lltm_sequence, input, hx)

    def _forward(self, fn, input, hx):
        if isinstance(input, nn.utils.rnn.PackedSequence):
            return self._forward_packed(fn, input, hx)
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"LLTMSequence: input must be 2-D (unbatched) or 3-D, got {list(input.shape)}")
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        h0, c0 = self._state(hx, x.shape[1], batched)
        output, h_n, c_n = self._run(fn, x, h0, c0)
        if not batched:
            return output.squeeze(1), (h_n.squeeze(1), c_n.squeeze(1))
        return (output.transpose(0, 1) if self.batch_first else output), (h_n, c_n)

    def _forward_packed(self, fn, packed, hx):
        # Sequences of one length run together, time-major: each group's h_n
        # and c_n are its own last step's, and padding never enters a step.
        x, lengths = nn.utils.rnn.pad_packed_sequence(packed)  # [T, B, F], the caller's order
        h0, c0 = self._state(hx, x.shape[1], True)
        output = x.new_zeros((x.shape[0], x.shape[1], self.hidden_size))
        h_n = x.new_empty((self.num_layers, x.shape[1], self.hidden_size))
        c_n = torch.empty_like(h_n)
        for length in torch.unique(lengths).tolist():
            rows = (lengths == length).nonzero().squeeze(1).to(x.device)
            state = (None, None) if h0 is None else (h0[:, rows], c0[:, rows])
            out, h, c = self._run(fn, x[:length, rows], *state)
            output = output.index_copy(1, rows, nn.functional.pad(out, (0, 0, 0, 0, 0, x.shape[0] - length)))
            h_n, c_n = h_n.index_copy(1, rows, h), c_n.index_copy(1, rows, c)
        order = packed.sorted_indices  # the packing's order, ties included
        if order is not None:
            output, lengths = output.index_select(1, order), lengths[order.cpu()]
        data = nn.utils.rnn.pack_padded_sequence(output, lengths).data
        return (
            nn.utils.rnn.PackedSequence(
                data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
            ),
            (h_n, c_n),
        )

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        return text


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
