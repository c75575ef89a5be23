"""2017-style autograd functions on today's autograd.

The Python side of an ffi extension subclassed ``torch.autograd.Function``
with instance methods, kept its arguments on ``self`` and was called through
an instance::

    from torch.autograd import Function               # before
    from kernforge_legacy.autograd import Function    # after

    class RoIPool(Function):
        def __init__(self, pooled_height, pooled_width, spatial_scale):
            self.pooled_height = pooled_height
            ...

        def forward(self, features, rois):
            output = features.new(...).zero_()
            my_lib.roi_pool_forward(self.pooled_height, ..., features, rois, output)
            self.save_for_backward(rois)
            self.feature_size = features.size()
            return output

        def backward(self, grad_output):
            (rois,) = self.saved_tensors
            ...
            return grad_input, None

    out = RoIPool(7, 7, 1 / 16)(features, rois)

Modern torch refuses such a class (``forward`` must be a staticmethod taking
a context). With this base class it runs unchanged: calling an instance runs
``forward(self, *inputs)`` inside a modern ``torch.autograd.Function`` and,
in the backward pass, ``backward(self, *grad_outputs)``, with these members
of the context on ``self``: :meth:`Function.save_for_backward`,
:attr:`Function.saved_tensors` (also under its old name ``saved_variables``),
:attr:`Function.needs_input_grad`, :meth:`Function.mark_dirty`,
:meth:`Function.mark_non_differentiable`. Anything else ``forward`` puts on
``self`` is there in ``backward``.

``backward`` runs as it did in 2017: outside autograd (its gradients are
differentiable once; a second derivative raises), with :attr:`saved_tensors`
as plain tensors, so it may change one in place and restore it (a numerical
gradient does) without torch counting the graph's saved state as modified.

An instance may be called again, as 2017 code did: a module that makes its
Function once in ``__init__`` and calls it in every ``forward``, or
``gradcheck(MyFunction(options), inputs)``, which calls it many times. Each
call keeps what its ``forward`` left on ``self``, and its ``backward`` runs
with exactly that: the gradient of every call is its own. (The old autograd
shared one ``self`` between the calls, so a later call's state overwrote an
earlier one's before its backward.)
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

__all__ = ["Function"]


class Function:
    """Base class of a 2017-style autograd function; see the module's text.

    A subclass defines ``forward(self, *inputs)`` returning a tensor or a
    tuple of tensors, and ``backward(self, *grad_outputs)`` returning one
    gradient (or None) per input of ``forward``, a single one bare; extra
    Nones after those are dropped, as torch's autograd drops them. Inputs may
    also be numbers or None; they get no gradient.

    Raises:
        RuntimeError: when ``backward`` returns the wrong number of gradients
            (naming the class, the count it returned and the count expected).
        TypeError: when called with keyword arguments (2017 functions took
            their options in ``__init__``).
    """

    def __call__(self, *inputs, **kwargs):
        if kwargs:
            raise TypeError(
                f"{type(self).__name__}: a legacy autograd function takes its inputs by position; "
                f"got keyword arguments {sorted(kwargs)} (pass options to __init__)"
            )
        return _Bridge.apply(self, *inputs)

    # The context's members, as the 2017 Function had them on self.
    def save_for_backward(self, *tensors: torch.Tensor) -> None:
        self._legacy_ctx.save_for_backward(*tensors)

    @property
    def saved_tensors(self) -> tuple[torch.Tensor, ...]:
        # As the 2017 backward had them: the tensors alone, apart from the
        # graph, so that one it changes in place and restores (a numerical
        # gradient) does not count as changed when the graph runs again.
        return tuple(t if t is None else t.data for t in self._legacy_ctx.saved_tensors)

    saved_variables = saved_tensors  # the name 2017 code used

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        return self._legacy_ctx.needs_input_grad[1:]  # the bridge's first input is self

    def mark_dirty(self, *tensors: torch.Tensor) -> None:
        self._legacy_ctx.mark_dirty(*tensors)

    def mark_non_differentiable(self, *tensors: torch.Tensor) -> None:
        self._legacy_ctx.mark_non_differentiable(*tensors)

    @property
    def _legacy_ctx(self):
        try:
            return self.__dict__["_legacy_context"]
        except KeyError:
            raise RuntimeError(
                f"{type(self).__name__}: the autograd context exists only during forward and backward; "
                "call the instance on its inputs"
            ) from None


class _Bridge(torch.autograd.Function):
    """The modern Function each legacy call runs through; its first input is
    the legacy instance. The instance sees the context only while its forward
    or backward runs: kept on it, the context (which holds the instance and
    the saved tensors) would form a cycle that only the garbage collector
    frees. The context keeps a shallow copy of the instance's attributes as
    its forward left them, which the backward puts back: another call of the
    same instance in between changes nothing for this one."""

    @staticmethod
    def forward(ctx, legacy: Function, *inputs):
        ctx.legacy = legacy
        ctx.n_inputs = len(inputs)
        legacy._legacy_context = ctx
        try:
            output = legacy.forward(*inputs)
        finally:
            del legacy._legacy_context
        ctx.state = dict(legacy.__dict__)
        return output

    @staticmethod
    @once_differentiable  # as every 2017 function was: its backward runs outside autograd
    def backward(ctx, *grad_outputs):
        legacy = ctx.legacy
        legacy.__dict__.clear()
        legacy.__dict__.update(ctx.state)
        legacy._legacy_context = ctx
        try:
            grads = legacy.backward(*grad_outputs)
        finally:
            del legacy._legacy_context
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) > ctx.n_inputs and all(g is None for g in grads[ctx.n_inputs :]):
            grads = grads[: ctx.n_inputs]  # extra Nones, as torch's autograd has always taken them
        if len(grads) != ctx.n_inputs:
            raise RuntimeError(
                f"{type(legacy).__name__}.backward returned {len(grads)} gradient(s); "
                f"forward took {ctx.n_inputs} input(s), and backward must return one for each (None for "
                "an input that needs none)"
            )
        return (None, *grads)
