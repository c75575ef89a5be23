"""``torch.nn`` modules over the kernforge ops."""

import math
import numbers
import re
import typing
import warnings

import torch
from torch import Tensor, nn
from torch.fx import Proxy
from torch.nn.utils.rnn import PackedSequence

from . import functional as F


@torch.fx.wrap
def _traced_call(module: nn.Module, *args):
    """``module(*args)`` as one node of a ``torch.fx`` graph, as torch.fx
    keeps torch.nn's own modules (``nn.LSTM``): its symbolic tracer would
    otherwise go into the module, whose checks need tensors, not its
    proxies. A module's forward hands itself here when its first argument
    is a proxy."""
    return module(*args)


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
        if torch.jit.is_scripting():
            return torch.ops.kernforge.fused_relu_add(x, y, self.bias)
        if isinstance(x, Proxy):
            return _traced_call(self, x, y)
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
        if torch.jit.is_scripting():
            h, c = state
            h, c, _ = torch.ops.kernforge.lltm_forward(x, self.weight, self.bias, h, c)
            return h, c
        if isinstance(x, Proxy):
            return _traced_call(self, x, state)
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
    The model is the LLTM's, not the LSTM's: with no forget gate its cell
    state only adds, and ``tanh(c)`` saturates as a sequence goes on. It is
    not an ``nn.LSTM`` subclass (``torch.compile`` graph-breaks on those), so
    ``isinstance(m, nn.LSTM)`` is False; the README's limits say how code
    that checks it can use the layer.

    Args:
        input_size: F, the size of each input.
        hidden_size: S, the size of the hidden and cell state.
        num_layers: layers stacked; layer k > 0 takes layer k - 1's output.
        bias: whether the layers have a bias (else the gates have none).
        batch_first: input and output are ``[B, T, ...]``.
        dropout: as ``nn.LSTM``'s: in training, dropout of this probability
            on the output of every layer but the last.
        bidirectional: each layer also runs over the reversed sequence (D = 2
            directions, else 1), and its output is both directions' h side by
            side, ``[..., 2S]``.
        proj_size: 0 only, as code written for ``nn.LSTM`` may pass it.
        device, dtype: of the parameters.

    Parameters ``weight_l{k} [3S, S + F_k]`` (F_0 = input_size, else D * S)
    and ``bias_l{k} [3S]``, with ``weight_l{k}_reverse`` and
    ``bias_l{k}_reverse`` for the reverse direction, uniform in
    ``(-1/sqrt(S), 1/sqrt(S))``: a trained :class:`LLTM` cell's ``weight``
    and ``bias`` load into layer 0 unchanged. For code that initializes
    ``nn.LSTM``'s parameters by name, ``weight_hh_l{k}[_reverse]`` and
    ``weight_ih_l{k}[_reverse]`` are views of the weight's first S and last
    F_k columns (``[3S, S]``, ``[3S, F_k]``: three gates, where the LSTM
    has four), and ``bias_ih_l{k}[_reverse]`` and ``bias_hh_l{k}[_reverse]``
    are both the layer's one bias; an in-place ``nn.init`` on a view
    changes the weight. ``_all_weights`` and ``all_weights`` list those
    names and tensors as ``nn.LSTM``'s do, layer by layer and direction by
    direction, and ``_flat_weights_names`` and ``_flat_weights`` in one
    list; ``_parameters[name]`` of such a name is the bias, or a Parameter
    over the weight's columns (their storage), for code that initializes
    it in place or takes it over (``torch.nn.utils.spectral_norm``).
    ``named_parameters()`` lists only the weights and biases above.
    ``mode`` is ``"LSTM"``, as ``nn.LSTM``'s, for code that picks the
    state's form by it: the state is ``(h, c)``, as the LSTM's.
    Setting ``weight_hh_l{k}`` or ``weight_ih_l{k}`` to a tensor (a
    Parameter, or a tensor made before each forward, as weight-dropout
    code does) runs the forward on it in place of those columns, until the
    name is deleted; the biases' names take no tensor (the LLTM has one
    bias: set ``bias_l{k}``). Deleting a weight name (``del
    layer.weight_hh_l0``, or ``del layer._parameters["weight_hh_l0"]`` as
    torchnlp's and awd-lstm-lm's weight dropout and
    ``torch.nn.utils.weight_norm`` and ``spectral_norm`` do) gives the
    layer's weight storage of its own: a raw copy made from the view read
    before trains apart from the weight (``torch.nn.utils.prune`` on those
    names keeps the columns as the Parameter ``<name>_orig`` so; a state
    dict with a Parameter under one of those names, as ``prune.remove``
    leaves, loads into a layer without one). Setting a
    name back to what was read from it (as ``torch.func.functional_call``
    does after its call) gives the columns back. ``torch.nn.utils.parametrize``
    (``parametrizations.weight_norm``, ``orthogonal``) takes the layer's
    own ``weight_l{k}``; it refuses the LSTM's names, which are views.
    ``torch.nn.utils.prune.global_unstructured`` takes ``weight_l{k}`` too:
    on the LSTM's names its ``view(-1)`` of a view of columns fails.

    Shape:
        forward(input, hx=None) -> (output, (h_n, c_n)): input ``[T, B, F]``
        (``[B, T, F]`` with batch_first; ``[T, F]`` unbatched) or a
        ``torch.nn.utils.rnn.PackedSequence``; hx ``(h_0, c_0)``, each
        ``[D * num_layers, B, S]`` (``[D * num_layers, S]`` for unbatched
        input; zeros when None); output ``[T, B, D * S]`` (or a
        PackedSequence for one), h_n and c_n ``[D * num_layers, B, S]``,
        layer by layer, the forward direction first, as ``nn.LSTM``'s. Each
        sequence's h_n and c_n are taken at its own last step (forward) and
        first step (reverse); they are tensors of their own, not views, so
        they may be detached or changed in place.

    ``torch.jit.script`` compiles it for tensor and packed input, as
    ``nn.LSTM``: the scripted layer is called through the scripted model
    that holds it.

    Raises:
        ValueError: for sizes below 1 or a dropout outside [0, 1]. The forward
            raises as :func:`kernforge.functional.lltm_sequence`, and
            ValueError for an input of the wrong rank or feature size, or an
            hx of the wrong shape.
    """

    mode = "LSTM"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.__dict__["_parameters"] = _LayerParameters()
        self._replaced: set[str] = set()  # nn.LSTM weight names set to a tensor (__setattr__)
        if proj_size != 0:
            raise ValueError(
                f"LLTMSequence: proj_size must be 0 (the LLTM has no projection), got {proj_size!r}"
            )
        if input_size < 1 or hidden_size < 1 or num_layers < 1:
            raise ValueError(
                "input_size, hidden_size and num_layers must be positive, got "
                f"{input_size}, {hidden_size} and {num_layers}"
            )
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0 <= dropout <= 1:
            raise ValueError(f"dropout must be a probability in [0, 1], got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "LLTMSequence: dropout acts after every layer but the last, so a dropout of "
                f"{dropout} with num_layers=1 does nothing",
                UserWarning,
                stacklevel=2,
            )
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, 0
        directions = 2 if bidirectional else 1
        kw = {"device": device, "dtype": dtype}
        self._names = self._parameter_names()
        for k, names in enumerate(self._names):
            features = input_size if k == 0 else directions * hidden_size
            for weight_name, bias_name, _ in names:
                weight = torch.empty(3 * hidden_size, hidden_size + features, **kw)
                self.register_parameter(weight_name, nn.Parameter(weight))
                self.register_parameter(
                    bias_name, nn.Parameter(torch.empty(3 * hidden_size, **kw)) if bias else None
                )
        self.reset_parameters()

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if _LSTM_NAME.fullmatch(name) is None:
                raise
        kind, k, sfx = self._lstm_name(name)
        if kind.startswith("bias"):  # the LLTM's one bias answers both of the LSTM's
            return getattr(self, f"bias_l{k}{sfx}")
        return _lstm_columns(getattr(self, f"weight_l{k}{sfx}"), kind)

    def __setattr__(self, name: str, value) -> None:
        # A tensor set under nn.LSTM's weight names (a Parameter, or a tensor
        # made each forward, as weight-dropout code does) replaces those
        # columns of the layer's weight in the forward; deleting the name
        # gives them back. Set, not silently kept beside the weight.
        if "_replaced" in self.__dict__ and _LSTM_NAME.fullmatch(name):
            kind, k, sfx = self._lstm_name(name)
            if kind.startswith("bias"):
                raise AttributeError(
                    f"LLTMSequence: {name} is the layer's one bias, bias_l{k}{sfx}: change it in "
                    f"place, or set bias_l{k}{sfx}"
                )
            if value is None:
                self.__delattr__(name)
                return
            if not isinstance(value, Tensor):
                raise TypeError(f"LLTMSequence: {name} must be a Tensor, got {type(value).__name__}")
            weight = getattr(self, f"weight_l{k}{sfx}")
            if _is_own_columns(value, weight, kind):
                # What reading the name gave, set back (torch.func.functional_call
                # and code that saves and restores it): the columns are the
                # weight's own again, nothing kept beside it.
                if name in self._replaced:
                    self.__delattr__(name)
                return
            S = self.hidden_size
            columns = S if kind == "weight_hh" else weight.shape[1] - S
            if tuple(value.shape) != (3 * S, columns):
                raise ValueError(
                    f"LLTMSequence: {name} must be [3 * hidden_size, {columns}] = [{3 * S}, {columns}] "
                    f"(the LLTM's three gates, where the LSTM has four), got {list(value.shape)}"
                )
            if isinstance(value, nn.Parameter):
                # as register_parameter would, which takes the name for taken
                self.__dict__.pop(name, None)
                self._parameters[name] = value
            else:
                # a Parameter set before (weight-dropout code's raw weight,
                # set as it is in eval) gives way to the tensor
                self._parameters.pop(name, None)
                super().__setattr__(name, value)
            self._replaced.add(name)
            return
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if "_replaced" in self.__dict__ and _LSTM_NAME.fullmatch(name):
            kind, k, sfx = self._lstm_name(name)  # an AttributeError for a name the module lacks
            if name in self._replaced:
                self._replaced.discard(name)
                super().__delattr__(name)
            elif kind.startswith("weight"):
                _own_storage(self._parameters.get(f"weight_l{k}{sfx}"))
            return
        super().__delattr__(name)

    def _lstm_name(self, name: str) -> tuple[str, int, str]:
        """(kind, layer, suffix) of one of nn.LSTM's parameter names; an
        AttributeError for one this module has no counterpart of."""
        alias = _LSTM_NAME.fullmatch(name)
        kind, k, sfx = alias.group(1), int(alias.group(2)), alias.group(3) or ""
        if (
            k >= self.num_layers
            or (sfx and not self.bidirectional)
            or (kind.startswith("bias") and not self.bias)
        ):
            raise AttributeError(f"'LLTMSequence' object has no attribute '{name}'")
        return kind, k, sfx

    def _weight(self, k: int, reverse: bool, weight: Tensor) -> Tensor:
        """Layer k's weight [3S, S + F_k] in the forward: the columns set
        under nn.LSTM's names (see __setattr__) in place of its own."""
        sfx = "_reverse" if reverse else ""
        recurrent, inputs = f"weight_hh_l{k}{sfx}", f"weight_ih_l{k}{sfx}"
        if recurrent not in self._replaced and inputs not in self._replaced:
            return weight
        S = self.hidden_size
        return torch.cat(
            [
                getattr(self, recurrent) if recurrent in self._replaced else weight[:, :S],
                getattr(self, inputs) if inputs in self._replaced else weight[:, S:],
            ],
            dim=1,
        )

    @property
    def _all_weights(self) -> list[list[str]]:
        """``nn.LSTM``'s parameter names, a list a layer and direction, as
        code written for it walks them (e.g. to initialize the biases)."""
        kinds = ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if self.bias else ("weight_ih", "weight_hh")
        return [
            [f"{kind}_l{k}{sfx}" for kind in kinds]
            for k in range(self.num_layers)
            for sfx in self._suffixes()
        ]

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The tensors of ``_all_weights``' names (views of the weights;
        the bias itself), as ``nn.LSTM.all_weights``."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights_names(self) -> list[str]:
        """``_all_weights`` in one list, as ``nn.LSTM``'s (code that
        initializes an RNN walks it and reads ``_parameters[name]``)."""
        return [name for names in self._all_weights for name in names]

    @property
    def _flat_weights(self) -> list[Tensor]:
        """The tensors of ``_flat_weights_names``, as ``nn.LSTM``'s."""
        return [getattr(self, name) for name in self._flat_weights_names]

    def register_parameter(self, name: str, param: nn.Parameter | None) -> None:
        # torch.nn.utils.remove_spectral_norm registers the LSTM's name back
        if "_replaced" in self.__dict__ and _LSTM_NAME.fullmatch(name):
            self.__setattr__(name, param)
            return
        # torch.nn.utils.prune registers what it read under one of the
        # LSTM's names (here a view of a weight's columns) as `<name>_orig`,
        # then deletes the name, which gives the weight storage of its own:
        # the Parameter keeps the columns.
        if isinstance(param, Tensor) and not isinstance(param, nn.Parameter):
            alias = _LSTM_NAME.fullmatch(name.removesuffix("_orig"))
            weight = self._parameters.get(f"weight_{_layer(alias)}") if alias else None
            if weight is not None and _is_own_columns(param, weight, alias.group(1)):
                param = nn.Parameter(param.detach(), requires_grad=weight.requires_grad)
        super().register_parameter(name, param)

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        # A state dict saved with a Parameter under one of the LSTM's weight
        # names (what prune.remove leaves) loads into a layer without one:
        # its values go into those columns of the weight, loaded first.
        for key, value in state_dict.items():
            name = key[len(prefix) :] if key.startswith(prefix) else None
            alias = _LSTM_NAME.fullmatch(name) if name else None
            if alias is None or not alias.group(1).startswith("weight") or name in self._replaced:
                continue
            weight = self._parameters.get(f"weight_{_layer(alias)}")
            if weight is None:
                continue
            columns = _lstm_columns(weight, alias.group(1))
            if tuple(value.shape) != tuple(columns.shape):
                # e.g. an nn.LSTM's checkpoint: an error, as torch's for any
                # shape that differs (also with strict=False), not weights
                # silently left as they were
                lstm = value.dim() == 2 and value.shape[0] == 4 * self.hidden_size
                why = (
                    ": an nn.LSTM's weights (4 gates of hidden_size rows) do not load into "
                    "LLTMSequence, whose LLTM cell has 3"
                )
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {columns.shape}{why if lstm else ''}."
                )
                continue
            with torch.no_grad():
                columns.copy_(value)
            if key in unexpected_keys:
                unexpected_keys.remove(key)

    def _suffixes(self) -> tuple[str, ...]:
        return ("", "_reverse") if self.bidirectional else ("",)

    def _parameter_names(self) -> list[list[tuple[str, str, bool]]]:
        """Each layer's (weight name, bias name, reverse) for its directions."""
        return [
            [(f"weight_l{k}{sfx}", f"bias_l{k}{sfx}", sfx == "_reverse") for sfx in self._suffixes()]
            for k in range(self.num_layers)
        ]

    def __getstate__(self):
        state = super().__getstate__()
        state["_parameters"] = dict(state["_parameters"])
        return state

    def __setstate__(self, state):
        # a module pickled whole before the names (and proj_size) were kept
        super().__setstate__(state)
        if "_names" not in self.__dict__:
            self._names = self._parameter_names()
        self.__dict__.setdefault("proj_size", 0)
        self.__dict__.setdefault("_replaced", set())
        self.__dict__["_parameters"] = _LayerParameters(self._parameters)

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def flatten_parameters(self) -> None:
        """Nothing to do: for code written for ``nn.LSTM``, whose cuDNN path
        wants its weights in one buffer; the LLTM's kernels read each layer's
        ``weight`` where it is."""

    def _run(self, impl, x: Tensor, h0: Tensor | None, c0: Tensor | None, packed=None):
        """All layers over time-major x [T, B, F] from h0, c0 [D * num_layers,
        B, S] (None: zeros, which each layer gets as None): (output, h_n, c_n).
        ``impl`` is :mod:`kernforge.functional` or :mod:`kernforge.reference`.
        The reverse direction runs over x flipped in time. With ``packed``,
        (batch_sizes as ints, the reversing row order or None), x is packed
        [N, F], and the reverse direction runs over each sequence reversed
        within its own length: a packed sequence of the same batch_sizes."""
        # A small layer is bound by the host, and this is all the Python
        # before its kernel's launch: the names made once, the parameters
        # straight from the dict (getattr costs microseconds), else as a
        # parametrization makes them.
        params = self._parameters
        sizes, order = packed if packed is not None else (None, None)
        if sizes is None and not self.bidirectional:
            # Layers of one direction: all in one call, as one autograd node
            # where a gradient can flow, in one op call where none can and no
            # dropout runs between them (a generated token pays one call's
            # host time, not one per layer; h_n and c_n come as [L, B, S]).
            # Without bias, every layer's is one tensor of zeros (3S each)
            # that needs no gradient.
            weights, biases, zeros = [], [], None
            for k, ((weight_name, bias_name, _),) in enumerate(self._names):
                weight = params[weight_name] if weight_name in params else getattr(self, weight_name)
                weight = self._weight(k, False, weight) if self._replaced else weight
                bias = params[bias_name] if bias_name in params else getattr(self, bias_name)
                if bias is None:
                    bias = zeros = weight.new_zeros(weight.shape[:1]) if zeros is None else zeros
                weights.append(weight)
                biases.append(bias)
            dropout = self.dropout if self.training else 0.0
            output, (h_n, c_n) = impl.lltm_sequence_layers(x, weights, biases, h0, c0, dropout)
            return output, h_n, c_n
        h_n, c_n = [], []
        # unbind, not h0[i]: one stack in the backward, not zeros, a copy and
        # a sum a layer and direction (a decoder calls this once a token)
        h0s = None if h0 is None else h0.unbind(0)
        c0s = None if c0 is None else c0.unbind(0)
        # A bidirectional layer of fixed length runs its reverse direction on
        # a side stream, beside the forward one (each alone leaves most of
        # the GPU idle at small sizes; packed layers gained nothing).
        side = _side_stream(x) if self.bidirectional and sizes is None and impl is F else None
        zeros = None  # without bias, one tensor of zeros for every layer and direction
        for k, directions in enumerate(self._names):
            if k > 0 and self.dropout > 0 and self.training:
                x = nn.functional.dropout(x, self.dropout, training=True)
            layer = []
            for weight_name, bias_name, reverse in directions:
                weight = params[weight_name] if weight_name in params else getattr(self, weight_name)
                if self._replaced:
                    weight = self._weight(k, reverse, weight)
                bias = params[bias_name] if bias_name in params else getattr(self, bias_name)
                if bias is None:
                    bias = zeros = weight.new_zeros(weight.shape[:1]) if zeros is None else zeros
                i = len(h_n) + len(layer)
                layer.append((weight, bias, None if h0 is None else h0s[i], None if c0 is None else c0s[i]))
            if side is not None:
                outputs, hs, cs = _both_directions(side, impl, x, *layer)
            else:
                outputs, hs, cs = [], [], []
                for (weight, bias, *state), (_, _, reverse) in zip(layer, directions, strict=True):
                    if sizes is None:
                        out, (h, c) = impl.lltm_sequence(x.flip(0) if reverse else x, weight, bias, *state)
                        out = out.flip(0) if reverse else out
                    else:
                        xr = _reorder_rows(x, order) if reverse else x
                        out, (h, c) = impl.lltm_sequence(xr, weight, bias, *state, batch_sizes=sizes)
                        out = _reorder_rows(out, order) if reverse else out
                    outputs.append(out)
                    hs.append(h)
                    cs.append(c)
            h_n += hs
            c_n += cs
            x = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=-1)
        if len(h_n) == 1 and x.shape[0] > 0:
            # A single packed layer: no copies (two launches). Its h_n and
            # c_n are the op's, which nothing else holds, as [1, B, S] in
            # their storage and not views, as nn.LSTM's are tensors of their
            # own (code detaches them in place, which a view refuses).
            return x, _unsafe_view(h_n[0], (1, *h_n[0].shape)), _unsafe_view(c_n[0], (1, *c_n[0].shape))
        return x, torch.stack(h_n), torch.stack(c_n)

    def _state(self, hx, batch: int, batched: bool) -> tuple[Tensor | None, Tensor | None]:
        """hx as [D * num_layers, B, S] each, checked; (None, None) for zeros."""
        if hx is None:
            return None, None
        shape = (len(self._suffixes()) * self.num_layers, batch, self.hidden_size)
        pair = isinstance(hx, (tuple, list)) and len(hx) == 2
        if not (pair and isinstance(hx[0], Tensor) and isinstance(hx[1], Tensor)):
            got = type(hx).__name__
            if isinstance(hx, (tuple, list)):
                got += f" ({', '.join(type(t).__name__ for t in hx)})"
            raise TypeError(
                f"LLTMSequence: hx must be a tuple (h_0, c_0) of two tensors, as nn.LSTM's, got {got}"
            )
        h0, c0 = hx
        # checked as given: an unbatched input's state has no batch dimension
        form = "[num_directions * num_layers, batch, hidden_size]"
        if not batched:
            shape = (shape[0], shape[2])
            form = "[num_directions * num_layers, hidden_size] for unbatched input"
        for name, t in (("h_0", h0), ("c_0", c0)):
            if tuple(t.shape) != shape:
                raise ValueError(f"LLTMSequence: {name} must be {form} = {list(shape)}, got {list(t.shape)}")
        if not batched:
            h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        return h0, c0

    # TorchScript compiles forward once per signature (as nn.LSTM's): tensor
    # or packed input.
    @typing.overload
    @torch._jit_internal._overload_method
    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]: ...

    @typing.overload
    @torch._jit_internal._overload_method
    def forward(
        self, input: PackedSequence, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[PackedSequence, tuple[Tensor, Tensor]]: ...

    def forward(self, input, hx=None):
        if torch.jit.is_scripting():
            if isinstance(input, PackedSequence):
                return self._scripted_packed(input, hx)
            return self._scripted_forward(input, hx)
        if isinstance(input, Proxy):
            return _traced_call(self, input, hx)
        return self._forward(F, input, hx)

    # torch.jit.script compiles forward's scripted branch; these are Python's.
    __jit_unused_properties__ = ("_all_weights", "all_weights", "_flat_weights_names", "_flat_weights")

    def __prepare_scriptable__(self):
        # torch.jit.script calls this first. TorchScript has no getattr by a
        # computed name: the scripted forward takes the parameters (the same
        # tensors) from this list, layer by layer, direction by direction.
        if self._replaced:
            raise RuntimeError(
                "LLTMSequence: torch.jit.script runs the layers' own weights, and "
                f"{', '.join(sorted(self._replaced))} replace some of their columns"
            )
        self._scripted_parameters = [
            getattr(self, name)
            for directions in self._names
            for weight_name, bias_name, _ in directions
            for name in ((weight_name, bias_name) if self.bias else (weight_name,))
        ]
        return self

    def _scripted_state(
        self, hx: tuple[Tensor, Tensor] | None, batch: int, batched: bool
    ) -> tuple[Tensor | None, Tensor | None]:
        """_state under torch.jit.script."""
        if hx is None:
            return None, None
        h0, c0 = hx
        rows = (2 if self.bidirectional else 1) * self.num_layers
        if not batched:
            shape = [rows, self.hidden_size]
            if h0.shape != shape or c0.shape != shape:
                raise ValueError(
                    "LLTMSequence: h_0 and c_0 must be [num_directions * num_layers, hidden_size] for "
                    f"unbatched input = {shape}, got {h0.shape} and {c0.shape}"
                )
            return h0.unsqueeze(1), c0.unsqueeze(1)
        shape = [rows, batch, self.hidden_size]
        if h0.shape != shape or c0.shape != shape:
            raise ValueError(
                "LLTMSequence: h_0 and c_0 must be [num_directions * num_layers, batch, hidden_size] "
                f"= {shape}, got {h0.shape} and {c0.shape}"
            )
        return h0, c0

    def _scripted_forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """forward under torch.jit.script for tensor input."""
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"LLTMSequence: input must be 2-D (unbatched) or 3-D, got {input.shape}")
        self._check_features(input)
        batched = input.dim() == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        h0, c0 = self._scripted_state(hx, x.size(1), batched)
        x, h_n, c_n = self._scripted_run(x, h0, c0, None)
        if not batched:
            return x.squeeze(1), (h_n.squeeze(1), c_n.squeeze(1))
        return (x.transpose(0, 1) if self.batch_first else x), (h_n, c_n)

    def _scripted_packed(
        self, input: PackedSequence, hx: tuple[Tensor, Tensor] | None
    ) -> tuple[PackedSequence, tuple[Tensor, Tensor]]:
        """forward under torch.jit.script for packed input, as _forward_packed."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        self._check_features(data)
        sizes: list[int] = batch_sizes.tolist()
        h0, c0 = self._scripted_state(hx, sizes[0], True)
        if h0 is not None and c0 is not None:
            h0, c0 = self.permute_hidden((h0, c0), sorted_indices)
        output, h_n, c_n = self._scripted_run(data, h0, c0, sizes)
        return (
            PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
            self.permute_hidden((h_n, c_n), unsorted_indices),
        )

    def _scripted_run(
        self, x: Tensor, h0: Tensor | None, c0: Tensor | None, sizes: list[int] | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """_run under torch.jit.script: each layer and direction one call of
        the registered op (its autograd formula in training), over x [T, B,
        F], or packed data [N, F] with batch_sizes `sizes`."""
        # packed: the order reversing each sequence (the reverse direction's input)
        order: Tensor | None = None
        if sizes is not None and self.bidirectional:
            order = torch.ops.kernforge.packed_reversed_rows(x.detach(), sizes)
        directions = 2 if self.bidirectional else 1
        per = 2 if self.bias else 1
        grad = torch.is_grad_enabled()
        h_n: list[Tensor] = []
        c_n: list[Tensor] = []
        for k in range(self.num_layers):
            if k > 0 and self.dropout > 0 and self.training:
                x = torch.dropout(x, self.dropout, True)
            outputs: list[Tensor] = []
            for d in range(directions):
                i = len(h_n)
                weight = self._scripted_parameters[per * i]
                bias = (
                    self._scripted_parameters[per * i + 1] if self.bias else weight.new_zeros(weight.size(0))
                )
                h: Tensor | None = None if h0 is None else h0[i]
                c: Tensor | None = None if c0 is None else c0[i]
                xd = x
                if d == 1:
                    xd = x.flip(0) if order is None else x.index_select(0, order)
                if grad:
                    out, h_last, c_last, _, _ = torch.ops.kernforge.lltm_sequence_forward(
                        xd, weight, bias, h, c, sizes
                    )
                else:
                    out, h_last, c_last = torch.ops.kernforge.lltm_sequence_inference(
                        xd, weight, bias, h, c, sizes
                    )
                if d == 1:
                    out = out.flip(0) if order is None else out.index_select(0, order)
                outputs.append(out)
                h_n.append(h_last)
                c_n.append(c_last)
            x = outputs[0] if directions == 1 else torch.cat(outputs, -1)
        return x, torch.stack(h_n), torch.stack(c_n)

    def reference(self, input, hx=None):
        """The same layers in plain PyTorch (:func:`kernforge.reference.lltm_sequence`)."""
        from . import reference

        return self._forward(reference, input, hx)

    def _forward(self, impl, input, hx):
        if isinstance(input, PackedSequence):
            self._check_features(input.data)
            return self._forward_packed(impl, input, hx)
        dim = input.dim()
        batched = dim == 3
        if dim not in (2, 3):
            raise ValueError(f"LLTMSequence: input must be 2-D (unbatched) or 3-D, got {list(input.shape)}")
        self._check_features(input)
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        h0, c0 = self._state(hx, x.size(1), batched)
        output, h_n, c_n = self._run(impl, x, h0, c0)
        if not batched:
            return output.squeeze(1), (h_n.squeeze(1), c_n.squeeze(1))
        return (output.transpose(0, 1) if self.batch_first else output), (h_n, c_n)

    def _check_features(self, input: Tensor) -> None:
        # Here, not in the op: the op would name layer 0's weight, not the input.
        # (TorchScript compiles it too, for the scripted forward.)
        if input.size(-1) != self.input_size:
            raise ValueError(
                f"LLTMSequence: input must have input_size = {self.input_size} features in its last "
                f"dimension, got {list(input.shape)}"
            )

    # Under torch.compile, eager: a graph break, as nn.LSTM's. Traced, the
    # lengths (batch_sizes, Python ints) would be constants of the graph, so
    # each batch of new lengths compiled again, until dynamo's limit.
    @torch.compiler.disable
    def _forward_packed(self, impl, packed, hx):
        # One call per layer and direction over the packed rows, as the
        # packing sorted them (longest first); hx and the state returned are
        # in the caller's order, as nn.LSTM's.
        sizes = packed.batch_sizes.tolist()
        h0, c0 = self._state(hx, sizes[0], True)
        if h0 is not None:
            h0, c0 = self.permute_hidden((h0, c0), packed.sorted_indices)
        order = impl.packed_reversed_rows(packed.data, sizes) if self.bidirectional else None
        output, h_n, c_n = self._run(impl, packed.data, h0, c0, (sizes, order))
        return (
            PackedSequence(output, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices),
            self.permute_hidden((h_n, c_n), packed.unsorted_indices),
        )

    def permute_hidden(self, hx: tuple[Tensor, Tensor], permutation: Tensor | None) -> tuple[Tensor, Tensor]:
        """``hx = (h, c)`` with the batch (dimension 1) in ``permutation``'s
        order (None: hx unchanged), as ``nn.LSTM.permute_hidden``: a packed
        batch's state between the caller's order and the packing's."""
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


# A tensor of another shape over the same storage that autograd does not
# track as a view, for a tensor that nothing else holds.
_unsafe_view = torch.ops.aten._unsafe_view.default
# nn.LSTM's parameter names that LLTMSequence answers with views (both biases: its one bias)
_LSTM_NAME = re.compile(r"(weight_ih|weight_hh|bias_ih|bias_hh)_l(\d+)(_reverse)?")


def _layer(alias: re.Match) -> str:
    """The layer-and-direction part of LLTMSequence's own names (``l1_reverse``)
    for a match of _LSTM_NAME."""
    return f"l{alias.group(2)}{alias.group(3) or ''}"


def _lstm_columns(weight: Tensor, kind: str) -> Tensor:
    """The view of a layer's weight [3S, S + F_k] that nn.LSTM's ``kind``
    names: ``weight_hh`` the first S columns, ``weight_ih`` the rest."""
    S = weight.shape[0] // 3
    return weight[:, :S] if kind == "weight_hh" else weight[:, S:]


def _is_own_columns(value: Tensor, weight: Tensor, kind: str) -> bool:
    """Whether ``value`` is the view of ``weight`` that reading nn.LSTM's
    ``kind`` name gives (not a Parameter made from it, not a copy)."""
    if isinstance(value, nn.Parameter) or value._base is not weight:
        return False
    columns = _lstm_columns(weight, kind)
    return (value.data_ptr(), value.shape, value.stride()) == (
        columns.data_ptr(),
        columns.shape,
        columns.stride(),
    )


def _own_storage(weight: Tensor | None) -> None:
    """Gives a layer's weight storage of its own, the same values. Code
    written for ``nn.LSTM`` removes ``weight_hh_l{k}`` after reading it and
    trains a copy made from what it read (weight dropout's raw weight):
    here that is a view of ``weight_l{k}``'s columns, and without this the
    copy and the weight would share them (each optimizer step, weight
    decay and all, applied to them twice)."""
    if weight is not None:
        weight.data = weight.data.clone()


class _LayerParameters(dict):
    """LLTMSequence's ``_parameters``, where ``del module._parameters[name]``
    of one of nn.LSTM's weight names, as torchnlp's and awd-lstm-lm's
    weight dropout run it, is ``del module.name`` (see ``__delattr__``),
    not a KeyError. The module pickles it as a plain dict (``torch.load``'s
    weights_only loads it with the module alone allowed)."""

    def __missing__(self, key: str) -> nn.Parameter:
        # self[key] of one of nn.LSTM's names, as code written for it reads
        # them (to initialize them in place, or to take one over as
        # torch.nn.utils.spectral_norm does): the bias itself, or a Parameter
        # over the weight's columns, sharing their storage.
        alias = _LSTM_NAME.fullmatch(key)
        weight = None if alias is None else self.get(f"weight_{_layer(alias)}")
        if weight is None:
            raise KeyError(key)
        if alias.group(1).startswith("bias"):
            bias = self.get(f"bias_{_layer(alias)}")
            if bias is None:
                raise KeyError(key)
            return bias
        return nn.Parameter(_lstm_columns(weight.data, alias.group(1)), requires_grad=weight.requires_grad)

    def __delitem__(self, key: str) -> None:
        alias = None if key in self else _LSTM_NAME.fullmatch(key)
        weight = None if alias is None else self.get(f"weight_{_layer(alias)}")
        if weight is None or not alias.group(1).startswith("weight"):
            super().__delitem__(key)
        else:
            _own_storage(weight)


class _ReorderRows(torch.autograd.Function):
    """``x.index_select(0, order)`` for an order that is its own inverse: the
    backward gathers by the same order (index_select's own backward scatters
    with atomic adds, which took a bfloat16 layer 2x longer)."""

    @staticmethod
    def forward(ctx, x: Tensor, order: Tensor) -> Tensor:
        ctx.save_for_backward(order)
        return x.index_select(0, order)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (order,) = ctx.saved_tensors
        return grad.index_select(0, order), None


class _TransformableReorderRows(torch.autograd.Function):
    """_ReorderRows under torch.func's transforms (grad, vmap, ...), which take
    only a Function with a setup_context of its own (in eager it costs more:
    see kernforge_core.ops._register_autograd)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor, order: Tensor) -> Tensor:
        return x.index_select(0, order)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(inputs[1])

    backward = staticmethod(_ReorderRows.backward)


def _both_directions(side: torch.cuda.Stream, impl, x: Tensor, forward, reverse):
    """A bidirectional layer over fixed-length x [T, B, F], its reverse
    direction queued on ``side``: ([output, reversed output], [h_n, h_n
    reversed], [c_n, c_n reversed]). ``forward`` and ``reverse`` are each
    direction's (weight, bias, h0, c0)."""
    weight, bias, *state = reverse
    x_side = x
    if torch.is_grad_enabled():
        # Views made first, on the caller's stream: the gradients of x and of
        # the parameters reach their accumulators from it, as every other
        # layer's do (an accumulator that DDP, or a graph still alive, made
        # there would warn of a stream mismatch); and the autograd engine,
        # which runs later nodes first, runs the forward direction's backward
        # beside the reverse one's before it joins the streams here.
        x_side, weight, bias = x.view_as(x), weight.view_as(weight), bias.view_as(bias)
    # What the side stream reads was made on the caller's: recorded, so that
    # the caller's stream gets that memory again only once the side stream is
    # done with it (the backward included).
    for t in (x_side, weight, bias, *state):
        if t is not None:
            t.record_stream(side)
    caller = torch.cuda.current_stream(x.device)
    side.wait_stream(caller)
    out, (h, c) = impl.lltm_sequence(x, *forward)
    with torch.cuda.stream(side):
        out_r, (h_r, c_r) = impl.lltm_sequence(x_side.flip(0), weight, bias, *state)
        out_r = out_r.flip(0)
    caller.wait_stream(side)
    return [out, out_r], [h, h_r], [c, c_r]


# One side stream a device, made on first use.
_SIDE_STREAMS: dict[int, torch.cuda.Stream] = {}


def _side_stream(x: Tensor) -> torch.cuda.Stream | None:
    """The stream for a bidirectional layer's reverse direction over ``x``,
    or None where it runs on the caller's stream: off CUDA, and where a
    second stream is not what the caller traces or records (torch.func's
    transforms, torch.compile, torch.jit.trace, CUDA graph capture, tensor
    subclasses such as fake tensors)."""
    if (
        type(x) is not Tensor
        or not x.is_cuda
        or torch._C._are_functorch_transforms_active()
        or torch.compiler.is_compiling()
        or torch.jit.is_tracing()
        or torch.cuda.is_current_stream_capturing()
    ):
        return None
    side = _SIDE_STREAMS.get(x.device.index)
    if side is None:
        side = _SIDE_STREAMS[x.device.index] = torch.cuda.Stream(x.device)
    return side


def _reorder_rows(x: Tensor, order: Tensor) -> Tensor:
    if torch._C._are_functorch_transforms_active():
        return _TransformableReorderRows.apply(x, order)
    return _ReorderRows.apply(x, order)


class RoundSTE(nn.Module):
    """Straight-through rounding (:func:`kernforge.functional.round_ste`): 1 where
    ``x >= 0.5``, else 0, in the forward; the identity in the backward. The
    binarization step of quantization-aware and binary networks.

    Shape:
        x: any shape, float16, bfloat16, float32 or float64; output: the same
        shape and dtype, contiguous.
    """

    def forward(self, x: Tensor) -> Tensor:
        if not torch.jit.is_scripting():
            if isinstance(x, Proxy):
                return _traced_call(self, x)
        return F.round_ste(x)
