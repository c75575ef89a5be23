"""kernforge_legacy.autograd.Function: 2017-style autograd functions (instance
forward and backward, state on self, called through an instance) on today's
autograd, compared with torch's own gradients."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from conftest import close
from kernforge_legacy.autograd import Function


class ScaledLinear(Function):
    """Written as 2017 code was: options in __init__, tensors saved with
    save_for_backward, other state kept on self, needs_input_grad honoured."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, weight, bias):
        self.save_for_backward(x, weight)
        self.batch = x.size(0)  # kept on self for the backward
        return x.mm(weight.t()).add_(bias) * self.scale

    def backward(self, grad_output):
        x, weight = self.saved_variables  # the old name
        assert self.batch == x.size(0)
        grad = grad_output * self.scale
        grad_x = grad.mm(weight) if self.needs_input_grad[0] else None
        grad_w = grad.t().mm(x) if self.needs_input_grad[1] else None
        grad_b = grad.sum(0) if self.needs_input_grad[2] else None
        self.computed = (grad_x is not None, grad_w is not None, grad_b is not None)
        return grad_x, grad_w, grad_b


def _reference(x, weight, bias, scale):
    return (x @ weight.t() + bias) * scale


def test_forward_and_gradients_match_torch(device):
    gen = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*s, generator=gen).to(device) for s in ((5, 3), (4, 3), (4,)))
    ours = [t.clone().requires_grad_() for t in (x, w, b)]
    refs = [t.clone().requires_grad_() for t in (x, w, b)]
    grad = torch.randn(5, 4, generator=gen).to(device)
    out = ScaledLinear(0.5)(*ours)
    expected = _reference(*refs, 0.5)
    close(out, expected)
    out.backward(grad)
    expected.backward(grad)
    for o, r in zip(ours, refs, strict=True):
        close(o.grad, r.grad)


def test_gradcheck():
    gen = torch.Generator().manual_seed(1)
    shapes = ((3, 2), (4, 2), (4,))
    args = [torch.randn(*s, generator=gen, dtype=torch.float64, requires_grad=True) for s in shapes]
    assert torch.autograd.gradcheck(lambda *a: ScaledLinear(-1.5)(*a), args)


def test_needs_input_grad_is_per_input_of_forward():
    fn = ScaledLinear(2.0)
    x = torch.randn(3, 2)
    w = torch.randn(4, 2, requires_grad=True)
    b = torch.randn(4)
    fn(x, w, b).sum().backward()
    assert fn.computed == (False, True, False)
    assert w.grad is not None and x.grad is None


def test_an_instance_called_again_keeps_each_calls_state():
    """Two calls of one instance, then their backwards in reverse order: each
    backward sees its own forward's state (self.batch, asserted in backward)
    and gives its own gradients."""
    fn = ScaledLinear(0.5)
    gen = torch.Generator().manual_seed(2)
    calls = []
    for batch in (3, 5):
        args = [torch.randn(*s, generator=gen).requires_grad_() for s in ((batch, 2), (4, 2), (4,))]
        calls.append((args, fn(*args), torch.randn(batch, 4, generator=gen)))
    for args, out, grad in reversed(calls):
        refs = [a.detach().clone().requires_grad_() for a in args]
        out.backward(grad)
        _reference(*refs, 0.5).backward(grad)
        for a, r in zip(args, refs, strict=True):
            close(a.grad, r.grad)
        assert fn.batch == args[0].shape[0]  # backward ran with its own call's state


def test_a_module_calls_its_function_every_step():
    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(4, 3))
            self.bias = torch.nn.Parameter(torch.randn(4))
            self.fn = ScaledLinear(2.0)  # made once, as 2017 modules did

        def forward(self, x):
            return self.fn(x, self.weight, self.bias)

    layer = Layer()
    weight, bias = (p.detach().clone().requires_grad_() for p in (layer.weight, layer.bias))
    for step in range(3):
        x = torch.randn(step + 2, 3)
        layer(x).square().sum().backward()
        _reference(x, weight, bias, 2.0).square().sum().backward()
        close(layer.weight.grad, weight.grad)
        close(layer.bias.grad, bias.grad)


def test_gradcheck_of_an_instance():
    """gradcheck(instance, inputs) calls the one instance many times."""
    gen = torch.Generator().manual_seed(3)
    shapes = ((3, 2), (4, 2), (4,))
    args = [torch.randn(*s, generator=gen, dtype=torch.float64, requires_grad=True) for s in shapes]
    assert torch.autograd.gradcheck(ScaledLinear(0.75), args)


def test_wrong_number_of_gradients_names_the_class():
    class Twice(Function):
        def forward(self, a, b):
            return a * 2 + b

        def backward(self, grad):
            return grad * 2  # forgets b's

    a, b = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Twice.backward returned 1 gradient\(s\); forward took 2 input"):
        Twice()(a, b).sum().backward()


def test_extra_gradients_that_are_none_are_dropped_as_torch_does():
    """PartNet's SampleFunction(npoints) takes one input and its backward
    returns (grad, None), for its index output: torch's autograd drops
    trailing Nones beyond the inputs, and always has. A tensor there is
    still an error."""

    class Sample(Function):
        def __init__(self, k):  # calls no super().__init__(), as PartNet's
            self.k = k

        def forward(self, x):
            idx = torch.arange(self.k)
            self.save_for_backward(idx)
            self.n = x.size(0)
            return x[idx] * 3, idx

        def backward(self, grad_out, grad_idx):
            (idx,) = self.saved_tensors
            return torch.zeros(self.n, dtype=grad_out.dtype).index_add_(0, idx, grad_out * 3), None

    x = torch.randn(5, requires_grad=True)
    out, idx = Sample(3)(x)
    assert torch.equal(idx, torch.arange(3))
    g = torch.randn(3)
    (grad,) = torch.autograd.grad((out * g).sum(), x)
    assert torch.equal(grad, torch.cat([g * 3, torch.zeros(2)]))

    class Extra(Function):
        def forward(self, x):
            return x * 2

        def backward(self, grad):
            return grad * 2, grad

    with pytest.raises(RuntimeError, match=r"Extra.backward returned 2 gradient\(s\); forward took 1 input"):
        Extra()(torch.randn(3, requires_grad=True)).sum().backward()


def test_keyword_arguments_are_refused():
    with pytest.raises(TypeError, match=r"ScaledLinear: a legacy autograd function takes its inputs by"):
        ScaledLinear(1.0)(x=torch.randn(2, 2))


def test_context_members_outside_forward_and_backward():
    with pytest.raises(RuntimeError, match=r"ScaledLinear: the autograd context exists only during forward"):
        ScaledLinear(1.0).saved_tensors  # noqa: B018


def test_mark_dirty_in_place():
    class AddOneInPlace(Function):
        def forward(self, x):
            x.add_(1)
            self.mark_dirty(x)
            return x

        def backward(self, grad):
            return grad

    leaf = torch.randn(4, requires_grad=True)
    x = leaf.clone()
    before = x.detach().clone()
    out = AddOneInPlace()(x)
    assert out is x and torch.equal(out.detach(), before + 1)
    (out * 3).sum().backward()
    close(leaf.grad, torch.full((4,), 3.0))


def test_mark_non_differentiable_and_two_outputs():
    class MaxWithIndex(Function):
        def forward(self, x):
            values, index = x.max(dim=1)
            self.mark_non_differentiable(index)
            self.save_for_backward(index)
            self.shape = x.shape
            return values, index

        def backward(self, grad_values, grad_index):
            (index,) = self.saved_tensors
            grad = grad_values.new_zeros(self.shape)
            grad.scatter_(1, index.unsqueeze(1), grad_values.unsqueeze(1))
            return grad

    x = torch.randn(5, 7, requires_grad=True)
    values, index = MaxWithIndex()(x)
    assert not index.requires_grad and values.requires_grad
    values.sum().backward()
    x_ref = x.detach().clone().requires_grad_()
    x_ref.max(dim=1).values.sum().backward()
    close(x.grad, x_ref.grad)


def test_non_tensor_inputs_get_no_gradient():
    class Scale(Function):
        def forward(self, x, factor):
            self.factor = factor
            return x * factor

        def backward(self, grad):
            return grad * self.factor, None

    x = torch.randn(3, requires_grad=True)
    Scale()(x, 2.5).sum().backward()
    close(x.grad, torch.full((3,), 2.5))


STEP = 2**-10


class SquareNumerically(Function):
    """x * x, with a backward that takes a numerical gradient as
    SmoothParticleNets' ConvSDF does: it moves a saved input in place, runs
    the forward again and moves it back."""

    def forward(self, x):
        self.save_for_backward(x)
        return x * x

    def backward(self, grad):
        (x,) = self.saved_tensors
        base = self.forward(x)
        x += STEP
        numerical = (self.forward(x) - base) / STEP
        x -= STEP
        return grad * numerical


def test_backward_may_change_a_saved_tensor_in_place_and_restore_it():
    """The 2017 backward had its saved tensors apart from the graph: the
    graph may run again (retain_graph) and with create_graph (SmoothParticleNets'
    gradcheck), and the input is as it was."""
    # multiples of 2**-20: x + STEP - STEP is x exactly
    x = (torch.randn(6, dtype=torch.float64) * 2**20).round().div(2**20).requires_grad_()
    before = x.detach().clone()
    out = SquareNumerically()(x)
    g = torch.randn(6, dtype=torch.float64)
    for create_graph in (False, True, False):
        (grad,) = torch.autograd.grad(out, x, g, retain_graph=True, create_graph=create_graph)
        close(grad, g * (2 * before + STEP))
    assert torch.equal(x.detach(), before)


def test_a_second_derivative_through_a_legacy_function_raises():
    """A 2017 backward ran outside autograd (its C calls are not in any
    graph): a second derivative through it raises, rather than coming out
    without the C code's part."""
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    out = ScaledLinear(2.0)(
        x.view(2, 2), torch.eye(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
    )
    (grad,) = torch.autograd.grad((out * out).sum(), x, create_graph=True)
    close(grad, 8 * x.detach())
    with pytest.raises(
        RuntimeError, match="differentiate twice a function that was marked with @once_differentiable"
    ):
        grad.sum().backward()


@pytest.mark.parametrize("backward", [False, True], ids=["graph_dropped", "after_backward"])
def test_nothing_kept_alive(backward):
    """The context is not left on the instance: no cycle keeps the graph node
    and its saved tensors once the output is gone, without waiting for the
    garbage collector (a graph dropped unused, or after its backward)."""
    gc.disable()
    try:
        x = torch.randn(64, 8, requires_grad=True)
        w = torch.randn(8, 8, requires_grad=True)
        out = ScaledLinear(1.0)(x, w, torch.zeros(8))
        node = weakref.ref(out.grad_fn)
        if backward:
            out.sum().backward()
        del out
        assert node() is None
    finally:
        gc.enable()
