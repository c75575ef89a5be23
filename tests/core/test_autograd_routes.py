"""The two routes of an op's autograd formula: the wrappers' eager route (an
``autograd.Function`` made of the registered setup and backward, which skips
torch.library's Python layer) and the registered one (``torch.ops.kernforge``
callers, ``torch.compile``). Both must give the same outputs and gradients,
bit for bit, and each must be the one taken where it should be."""

from __future__ import annotations

import copy
import io
import warnings

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import every_op
import kernforge
from kernforge import reference

ops = torch.ops.kernforge
CORE_OPS = ["mul", "add", "fused_relu_add", "lltm"]
ALL_OPS = [*CORE_OPS, "round_ste"]


class _Registered:
    """The ops called through torch.ops, with every_op's calling convention."""

    mul = staticmethod(lambda a, b: ops.mul(a, b))
    add = staticmethod(lambda a, b, alpha: ops.add(a, b, alpha))
    fused_relu_add = staticmethod(lambda x, y, bias: ops.fused_relu_add(x, y, bias))
    lltm = staticmethod(lambda *args: ops.lltm_forward(*args)[:2])
    round_ste = staticmethod(lambda x: torch.ops.kernforge_legacy.round_ste(x))


def _gen(device):
    return torch.Generator(device=device).manual_seed(41)


@pytest.mark.parametrize("op", ALL_OPS)
def test_eager_route_matches_the_registered_formula(op, device):
    args = every_op.inputs(op, _gen(device), device)
    out = every_op.call(kernforge, op, every_op.leaves(args))[0]
    assert type(out.grad_fn).__name__.startswith("kernforge_"), type(out.grad_fn).__name__
    registered = every_op.call(_Registered, op, every_op.leaves(args))[0]
    assert type(registered.grad_fn).__name__.startswith("GeneratedBackwardFor_kernforge_")
    got = every_op.forward_backward(kernforge, op, every_op.leaves(args))
    want = every_op.forward_backward(_Registered, op, every_op.leaves(args))
    assert len(got) == len(want) == len(every_op.call(kernforge, op, args)) + len(args)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("op", ALL_OPS)
def test_no_graph_without_a_gradient_to_track(op, device):
    args = every_op.leaves(every_op.inputs(op, _gen(device), device))
    with torch.no_grad():
        assert every_op.call(kernforge, op, args)[0].grad_fn is None
    detached = [a.detach() for a in args]
    assert every_op.call(kernforge, op, detached)[0].grad_fn is None


def test_compiled_graph_holds_the_op_not_the_function():
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    args = every_op.leaves(every_op.inputs("lltm", _gen("cpu"), "cpu"))
    h, c = torch.compile(kernforge.lltm, backend=record, fullgraph=True)(*args)
    (h.sum() + c.sum()).backward()
    targets = [n.target for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert ops.lltm_forward.default in targets, targets
    assert all("autograd_function" not in str(t) for t in targets), targets
    assert all(a.grad is not None for a in args)


@pytest.mark.parametrize("op", ALL_OPS)
def test_jit_trace_records_the_op(op, device):
    # torch.jit.trace checks its trace by tracing again under no_grad: the
    # graph must hold the op itself whatever the grad mode, not the eager
    # route's autograd.Function (a PythonOp, which a saved trace cannot hold).
    args = every_op.leaves(every_op.inputs(op, _gen(device), device))
    traced = torch.jit.trace(lambda *a: tuple(every_op.call(kernforge, op, a)), tuple(args))
    kinds = [n.kind() for n in traced.graph.nodes()]
    assert any(k.startswith(("kernforge::", "kernforge_legacy::")) for k in kinds), kinds
    assert "prim::PythonOp" not in kinds, kinds
    want = every_op.call(kernforge, op, args)
    for g, w in zip(traced(*args), want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_jit_traced_sequence_saves_loads_and_trains(device, bidirectional):
    gen = _gen(device)
    model = kernforge.nn.LLTMSequence(4, 6, 2, bidirectional=bidirectional, device=device)
    x = torch.randn(5, 3, 4, device=device, generator=gen)
    traced = torch.jit.trace(model, (x,))
    ops_in_graph = [n.kind() for n in traced.graph.nodes() if n.kind().startswith("kernforge")]
    assert ops_in_graph == ["kernforge::lltm_sequence_forward"] * (4 if bidirectional else 2)
    buffer = io.BytesIO()
    torch.jit.save(traced, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer, map_location=device)
    x2 = torch.randn(7, 2, 4, device=device, generator=gen)  # another length and batch
    got, want = loaded(x2), model(x2)
    for g, w in zip((got[0], *got[1]), (want[0], *want[1]), strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    (got[0].sum() + got[1][0].sum()).backward()
    (want[0].sum() + want[1][0].sum()).backward()
    loaded_params = dict(loaded.named_parameters())
    for name, p in model.named_parameters():
        torch.testing.assert_close(loaded_params[name].grad, p.grad, rtol=0, atol=0)


def test_exported_sequence_saves_and_loads(device):
    # torch.export (torch's successor to jit.trace): the program holds the
    # layers' op, and a saved program loads and runs with the module's results.
    gen = _gen(device)
    model = kernforge.nn.LLTMSequence(4, 6, 2, device=device).eval()
    x = torch.randn(5, 3, 4, device=device, generator=gen)
    program = torch.export.export(model, (x,))
    assert "kernforge.lltm_sequence_forward" in str(program.graph_module.code)
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    buffer.seek(0)
    loaded = torch.export.load(buffer).module()
    got, want = loaded(x), model(x)
    for g, w in zip((got[0], *got[1]), (want[0], *want[1]), strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non_strict"])
def test_exported_without_gradients_holds_the_forward_op(device, strict):
    # Exported where no gradient can flow (under no_grad), the program still
    # holds the forward op, with its autograd formula, as under jit.trace:
    # only torch.compile's graph takes the inference ops there. (torch
    # 2.11's dynamo answers torch.compiler.is_exporting() with True under
    # torch.compile too; the check must tell the two apart on every torch.)
    gen = _gen(device)
    model = kernforge.nn.LLTMSequence(4, 6, 2, bidirectional=True, device=device).eval()
    x = torch.randn(5, 3, 4, device=device, generator=gen)
    with torch.no_grad():
        program = torch.export.export(model, (x,), strict=strict)
        want = model(x)
    code = str(program.graph_module.code)
    assert "kernforge.lltm_sequence_forward" in code and "inference" not in code, code
    got = program.module()(x)
    for g, w in zip((got[0], *got[1]), (want[0], *want[1]), strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


class _Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = kernforge.nn.LLTMSequence(4, 6, 2)
        self.out = torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.out(self.rnn(x)[0])


def test_dynamic_quantization_quantizes_the_linears_and_leaves_the_layer():
    # torch.ao's quantize_dynamic has quantized modules for nn.LSTM and
    # nn.Linear, none for kernforge's: asked for both (as code written for
    # nn.LSTM asks, with the name bound), it quantizes the Linear and leaves
    # the LLTM in float, running as before.
    gen = torch.Generator().manual_seed(5)
    model = _Tagger().eval()
    quantized = torch.ao.quantization.quantize_dynamic(
        model, {kernforge.nn.LLTMSequence, torch.nn.Linear}, dtype=torch.qint8
    )
    assert type(quantized.rnn) is kernforge.nn.LLTMSequence
    assert isinstance(quantized.out, torch.ao.nn.quantized.dynamic.Linear)
    x = torch.randn(5, 3, 4, generator=gen)
    with torch.no_grad():
        torch.testing.assert_close(quantized.rnn(x), model.rnn(x), rtol=0, atol=0)
        torch.testing.assert_close(quantized(x), model(x), rtol=0, atol=0.05)


class _EveryModule(torch.nn.Module):
    """A model that calls each kernforge module once."""

    def __init__(self, device):
        super().__init__()
        self.rnn = kernforge.nn.LLTMSequence(4, 6, 2, bidirectional=True, device=device)
        self.cell = kernforge.nn.LLTM(12, 6, device=device)
        self.join = kernforge.nn.FusedReLUAdd(6, device=device)
        self.round = kernforge.nn.RoundSTE()

    def forward(self, x, h):
        out, (h_n, _) = self.rnn(x)
        h1, c1 = self.cell(out[-1], (h, h))
        return self.join(h1, c1) + self.round(torch.sigmoid(h1)), h_n


def test_fx_symbolic_trace_keeps_the_modules_whole(device):
    # torch.fx keeps torch.nn's modules (nn.LSTM) as one node each; kernforge's
    # are one call each too, not traced into (their checks refused the proxies).
    gen = _gen(device)
    model = _EveryModule(device)
    traced = torch.fx.symbolic_trace(model)
    calls = [
        n.args[0].target
        for n in traced.graph.nodes
        if n.op == "call_function" and n.target is kernforge.nn._traced_call
    ]
    assert calls == ["rnn", "cell", "join", "round"]
    x = torch.randn(5, 3, 4, device=device, generator=gen, requires_grad=True)
    h = torch.randn(3, 6, device=device, generator=gen)
    for run in (traced, copy.deepcopy(traced)):
        got, want = run(x, h), model(x, h)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=0)
        names = [name for name, _ in model.named_parameters()]
        params_got, params_want = dict(run.named_parameters()), dict(model.named_parameters())
        loss = lambda outs: outs[0].sum() + outs[1].sum()
        grads_got = torch.autograd.grad(loss(got), [x, *(params_got[n] for n in names)])
        grads_want = torch.autograd.grad(loss(want), [x, *(params_want[n] for n in names)])
        for g, w in zip(grads_got, grads_want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=0)


def _scripted_and_loaded(module):
    """torch.jit.script of module (its deprecation warning silenced), and the
    same saved and loaded."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(module)
        buffer = io.BytesIO()
        torch.jit.save(scripted, buffer)
        buffer.seek(0)
        return scripted, torch.jit.load(buffer)


def _assert_same_results(got, want, params_got, params_want, inputs):
    """Outputs (nested tuples) equal bit for bit, and so are the gradients of
    a weighted sum of them for the inputs and each module's parameters."""
    got, want = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    loss = lambda outs: sum((o * (k + 2)).sum() for k, o in enumerate(outs))
    grads_got = torch.autograd.grad(loss(got), [*inputs, *params_got])
    grads_want = torch.autograd.grad(loss(want), [*inputs, *params_want])
    for g, w in zip(grads_got, grads_want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["FusedReLUAdd", "LLTM", "RoundSTE"])
def test_jit_script_of_the_modules(name, device):
    # torch.jit.script (deprecated by torch, still in older deployment code):
    # the scripted forward calls the registered op, whose autograd formula
    # gives the eager module's gradients; the script saves and loads.
    gen = _gen(device)
    randn = lambda *shape: torch.randn(*shape, device=device, generator=gen, requires_grad=True)
    if name == "FusedReLUAdd":
        module, inputs = kernforge.nn.FusedReLUAdd(8, device=device), (randn(5, 8), randn(5, 8))
        with torch.no_grad():
            module.bias.normal_(generator=gen)
    elif name == "LLTM":
        module, inputs = kernforge.nn.LLTM(4, 6, device=device), (randn(3, 4), (randn(3, 6), randn(3, 6)))
    else:
        module, inputs = kernforge.nn.RoundSTE(), (randn(5, 8),)
    scripted, loaded = _scripted_and_loaded(module)
    kinds = [n.kind() for n in scripted.inlined_graph.nodes()]
    assert any(k.startswith(("kernforge::", "kernforge_legacy::")) for k in kinds), kinds
    leaves = torch.utils._pytree.tree_leaves(inputs)
    params = list(module.parameters())
    for run in (scripted, loaded):
        _assert_same_results(run(*inputs), module(*inputs), list(run.parameters()), params, leaves)


class _Holder(torch.nn.Module):
    """A model calling its layer as code written for nn.LSTM does: TorchScript
    compiles the layer's forward for each input type it is called with, and
    (as for nn.LSTM) the scripted layer is called through its model."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x: torch.Tensor, hx: tuple[torch.Tensor, torch.Tensor] | None = None):
        return self.rnn(x, hx)


class _PackedHolder(_Holder):
    def forward(
        self, x: torch.Tensor, lengths: torch.Tensor, hx: tuple[torch.Tensor, torch.Tensor] | None = None
    ):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        output, (h_n, c_n) = self.rnn(packed, hx)
        return pad_packed_sequence(output, batch_first=True)[0], h_n, c_n


@pytest.mark.parametrize(
    ("layers", "bidirectional", "bias", "batch_first"),
    [(1, False, True, False), (2, False, True, True), (2, True, True, False), (2, True, False, True)],
    ids=["1-layer", "2-layers-batch-first", "bi", "bi-no-bias-batch-first"],
)
def test_jit_scripted_sequence_equals_the_module(layers, bidirectional, bias, batch_first, device):
    gen = _gen(device)
    randn = lambda *shape: torch.randn(*shape, device=device, generator=gen, requires_grad=True)
    model = kernforge.nn.LLTMSequence(
        4, 6, layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional, device=device
    )
    eager = _Holder(model)
    scripted, loaded = _scripted_and_loaded(eager)
    graph = str(scripted.inlined_graph)  # the op sits in the layers' loop
    assert "kernforge::lltm_sequence_forward" in graph and "kernforge::lltm_sequence_inference" in graph
    x = randn(3, 5, 4) if batch_first else randn(5, 3, 4)
    states = (2 if bidirectional else 1) * layers
    hx = (randn(states, 3, 6), randn(states, 3, 6))
    params = list(model.parameters())
    for run in (scripted, loaded):
        _assert_same_results(run(x), eager(x), list(run.parameters()), params, [x])
        _assert_same_results(run(x, hx), eager(x, hx), list(run.parameters()), params, [x, *hx])
        with torch.no_grad():  # the inference op; unbatched input
            single = x[0] if batch_first else x[:, 0]
            state = (hx[0][:, 0], hx[1][:, 0])
            for g, w in zip(
                torch.utils._pytree.tree_leaves(run(single, state)),
                torch.utils._pytree.tree_leaves(eager(single, state)),
                strict=True,
            ):
                torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_jit_scripted_sequence_takes_packed_input(bidirectional, device):
    # A scripted tagger packs its padded batch (lengths unsorted): the layer's
    # packed forward, the state in the caller's order, as the eager module's.
    gen = _gen(device)
    randn = lambda *shape: torch.randn(*shape, device=device, generator=gen, requires_grad=True)
    model = kernforge.nn.LLTMSequence(4, 6, 2, bidirectional=bidirectional, batch_first=True, device=device)
    eager = _PackedHolder(model)
    scripted, loaded = _scripted_and_loaded(eager)
    x, lengths = randn(4, 7, 4), torch.tensor([3, 7, 5, 1])
    states = 4 if bidirectional else 2
    hx = (randn(states, 4, 6), randn(states, 4, 6))
    params = list(model.parameters())
    for run in (scripted, loaded):
        _assert_same_results(run(x, lengths), eager(x, lengths), list(run.parameters()), params, [x])
        got, want = run(x, lengths, hx), eager(x, lengths, hx)
        _assert_same_results(got, want, list(run.parameters()), params, [x, *hx])
        with torch.no_grad():
            for g, w in zip(run(x, lengths, hx), eager(x, lengths, hx), strict=True):
                torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_jit_scripted_model_holding_a_sequence(device):
    # A model written for nn.LSTM and scripted whole: the layer is scripted in
    # place, trains (dropout between the layers), and names bad input.
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 8)
            self.rnn = kernforge.nn.LLTMSequence(8, 16, 2, dropout=0.5)
            self.out = torch.nn.Linear(16, 50)

        def forward(self, tokens, hidden: tuple[torch.Tensor, torch.Tensor]):
            output, hidden = self.rnn(self.embed(tokens), hidden)
            return self.out(output), hidden

    model = Model().to(device)
    scripted, _ = _scripted_and_loaded(model)
    gen = _gen(device)
    tokens = torch.randint(0, 50, (7, 2), device=device, generator=gen)
    hidden = (torch.randn(2, 2, 16, device=device, generator=gen),) * 2
    for mode in ("eval", "train"):
        getattr(model, mode)()
        getattr(scripted, mode)()
        torch.manual_seed(3)  # the same dropout masks for both
        got = scripted(tokens, hidden)
        torch.manual_seed(3)
        want = model(tokens, hidden)
        _assert_same_results(got, want, list(scripted.parameters()), list(model.parameters()), [])
    one_layer, _ = _scripted_and_loaded(_Holder(kernforge.nn.LLTMSequence(8, 16).to(device)))
    with pytest.raises(
        torch.jit.Error, match=r"input_size = 8 features in its last dimension, got \[7, 2, 5"
    ):
        one_layer(torch.randn(7, 2, 5, device=device))
    with pytest.raises(torch.jit.Error, match=r"h_0 and c_0 must be .* = \[1, 2, 16\], got \[2, 2, 16\]"):
        one_layer(torch.randn(7, 2, 8, device=device), hidden)
    unbatched = r"hidden_size\] for unbatched input = \[1, 16\], got \[1, 1, 16\]"
    state = torch.zeros(1, 1, 16, device=device)
    with pytest.raises(torch.jit.Error, match=unbatched):
        one_layer(torch.randn(7, 8, device=device), (state, state))


def test_double_backward_through_the_eager_route(device):
    a, b = every_op.leaves(every_op.inputs("mul", _gen(device), device))
    (grad_a,) = torch.autograd.grad(kernforge.mul(a, b).sum(), a, create_graph=True)
    (grad_b,) = torch.autograd.grad((grad_a * a).sum(), b)
    torch.testing.assert_close(grad_b, a, rtol=0, atol=0)  # d/db sum(b * a) = a


# ----------------------------------------------------------------------------- torch.func
# torch.func's transforms take only an autograd.Function with a setup_context
# of its own; the wrappers switch to such a twin of each formula under them.

POINTWISE_OPS = ["mul", "add", "fused_relu_add", "round_ste"]


@pytest.mark.parametrize("op", ALL_OPS)
def test_torch_func_grad_equals_autograd(op, device):
    args = every_op.inputs(op, _gen(device), device)
    want = every_op.forward_backward(kernforge, op, every_op.leaves(args))[-len(args) :]

    def loss(*inputs):
        return every_op.forward_backward_loss(kernforge, op, inputs)

    got = torch.func.grad(loss, argnums=tuple(range(len(args))))(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)


# vmap: the pointwise ops (and their backward ops) have batching rules, one
# call over the batch; torch's fallback, which loops over the examples,
# warns, and that warning is an error here. The LLTM's forward ops (the cell,
# the sequence, the layers) have theirs, the examples as more rows of one
# call; its backward ops have none.
PERFORMANCE_DROP = "There is a performance drop"


@pytest.mark.parametrize("op", ALL_OPS)
def test_torch_func_vmap_equals_the_op_per_example(op, device):
    gen = _gen(device)
    examples = [every_op.inputs(op, gen, device) for _ in range(3)]
    stacked = [torch.stack(parts) for parts in zip(*examples, strict=True)]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", PERFORMANCE_DROP)
        got = torch.func.vmap(lambda *a: tuple(every_op.call(kernforge, op, a)))(*stacked)
        # the first input batched along its last dimension, the others shared
        shared = examples[0][1:]
        got_shared = torch.func.vmap(lambda a: tuple(every_op.call(kernforge, op, (a, *shared))), in_dims=-1)(
            stacked[0].movedim(0, -1)
        )
    for i, ex in enumerate(examples):
        for g, w in zip(got, every_op.call(kernforge, op, ex), strict=True):
            torch.testing.assert_close(g[i], w, rtol=0, atol=0)
        for g, w in zip(got_shared, every_op.call(kernforge, op, (ex[0], *shared)), strict=True):
            torch.testing.assert_close(g[i], w, rtol=0, atol=0)


@pytest.mark.parametrize("op", POINTWISE_OPS)
def test_per_sample_gradients_of_the_pointwise_ops(op, device):
    # vmap over grad: the backward ops under vmap (fused_relu_add's with a
    # bias per example, one call an example for its column sums)
    gen = _gen(device)
    examples = [every_op.inputs(op, gen, device) for _ in range(3)]
    stacked = [torch.stack(parts) for parts in zip(*examples, strict=True)]
    argnums = tuple(range(len(stacked)))

    def loss(*inputs):
        return every_op.forward_backward_loss(kernforge, op, inputs)

    with warnings.catch_warnings():
        warnings.filterwarnings("error", PERFORMANCE_DROP)
        got = torch.func.vmap(torch.func.grad(loss, argnums=argnums))(*stacked)
    for i, ex in enumerate(examples):
        want = every_op.forward_backward(kernforge, op, every_op.leaves(ex))[-len(ex) :]
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g[i], w, rtol=0, atol=0)


def test_second_derivatives_under_torch_func(device):
    a, b = every_op.inputs("mul", _gen(device), device)
    # d/db sum(d/da sum(a * b) * a) = d/db sum(b * a) = a, as with autograd's create_graph
    grad_b = torch.func.grad(lambda b: (torch.func.grad(lambda a: kernforge.mul(a, b).sum())(a) * a).sum())(b)
    torch.testing.assert_close(grad_b, a, rtol=0, atol=0)
    x, W, bias = (torch.randn(*s, device=device) for s in ((3, 2, 4), (9, 7), (9,)))

    def first(W):
        return torch.func.grad(lambda W: kernforge.lltm_sequence(x, W, bias)[0].sum())(W).sum()

    with pytest.raises(
        NotImplementedError, match="kernforge::lltm_sequence: double backward is not implemented"
    ):
        torch.func.grad(first)(W)


def _sequence_loss(model, params, x, lengths):
    """A classifier's loss over one example x [T, F] (or, with lengths, the
    packed batch of x [T, B, F]): the squares of the outputs at every step."""
    if lengths is None:
        out, (h, _) = torch.func.functional_call(model, params, (x.unsqueeze(1),))
        return out.pow(2).sum() + h.sum()
    packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
    out, (h, _) = torch.func.functional_call(model, params, (packed,))
    return out.data.pow(2).sum() + h.sum()


@pytest.mark.parametrize(
    ("layers", "bidirectional"), [(1, False), (3, False), (2, True)], ids=["1", "3", "2-bi"]
)
def test_per_sample_gradients_of_a_sequence_model(layers, bidirectional, device):
    # the functorch recipe (vmap over grad with the parameters shared), and
    # grad over a packed batch, against autograd one example at a time
    torch.manual_seed(5)
    model = kernforge.nn.LLTMSequence(5, 6, num_layers=layers, bidirectional=bidirectional, device=device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs = torch.randn(4, 7, 5, device=device)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "There is a performance drop")
        per_sample = torch.func.vmap(
            torch.func.grad(lambda p, x: _sequence_loss(model, p, x, None)), in_dims=(None, 0)
        )(params, xs)
    for i in range(len(xs)):
        model.zero_grad()
        out, (h, _) = model(xs[i].unsqueeze(1))
        (out.pow(2).sum() + h.sum()).backward()
        for name, p in model.named_parameters():
            torch.testing.assert_close(per_sample[name][i], p.grad, rtol=1e-4, atol=1e-5)
    lengths = torch.tensor([7, 3, 5, 1])
    batch = xs.transpose(0, 1)
    got = torch.func.grad(lambda p: _sequence_loss(model, p, batch, lengths))(params)
    model.zero_grad()
    _sequence_loss(model, dict(model.named_parameters()), batch, lengths).backward()
    for name, p in model.named_parameters():
        torch.testing.assert_close(got[name], p.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("layers", "bidirectional"), [(1, False), (3, False), (2, True)], ids=["1", "3", "2-bi"]
)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_vmap_over_a_sequence_model_equals_the_batch(layers, bidirectional, grad, device):
    # vmap over the batch dimension (each example [T, F] with its own state):
    # no_grad runs the inference ops (the layers in one call where
    # unidirectional), grad the forward op; each through its batching rule,
    # one call for all examples, equal to the batched call row for row
    torch.manual_seed(6)
    model = kernforge.nn.LLTMSequence(5, 6, num_layers=layers, bidirectional=bidirectional, device=device)
    model.double()
    directions = 2 if bidirectional else 1
    x = torch.randn(7, 4, 5, dtype=torch.float64, device=device)
    h0, c0 = (torch.randn(directions * layers, 4, 6, dtype=torch.float64, device=device) for _ in range(2))
    with torch.set_grad_enabled(grad), warnings.catch_warnings():
        warnings.filterwarnings("error", PERFORMANCE_DROP)
        out, (h, c) = torch.func.vmap(lambda x, h, c: model(x, (h, c)), in_dims=1, out_dims=(1, 1))(x, h0, c0)
        want, (want_h, want_c) = model(x, (h0, c0))
        # the state shared by every example
        shared, _ = torch.func.vmap(lambda x: model(x, (h0[:, 0], c0[:, 0])), in_dims=1, out_dims=(1, 1))(x)
        want_shared, _ = model(x, (h0[:, :1].expand(-1, 4, -1), c0[:, :1].expand(-1, 4, -1)))
    for g, w in ((out, want), (h, want_h), (c, want_c), (shared, want_shared)):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


def test_vmap_over_packed_batches_and_ensembles(device):
    # the op over packed data, one packed batch an example; and an ensemble
    # (weights by example, torch.func.stack_module_state), one call a model
    gen = _gen(device)
    W = torch.randn(18, 11, generator=gen, dtype=torch.float64, device=device)
    b = torch.randn(18, generator=gen, dtype=torch.float64, device=device)
    sizes = [3, 3, 2, 1]
    xs = torch.randn(4, 9, 5, generator=gen, dtype=torch.float64, device=device)
    hs = torch.randn(4, 3, 6, generator=gen, dtype=torch.float64, device=device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("error", PERFORMANCE_DROP)
        got, (got_h, got_c) = torch.func.vmap(
            lambda x, h: kernforge.lltm_sequence(x, W, b, h, h.flip(0), batch_sizes=sizes)
        )(xs, hs)
    for i in range(len(xs)):
        want, (want_h, want_c) = kernforge.lltm_sequence(xs[i], W, b, hs[i], hs[i].flip(0), batch_sizes=sizes)
        for g, w in ((got[i], want), (got_h[i], want_h), (got_c[i], want_c)):
            torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)

    models = [kernforge.nn.LLTMSequence(5, 6, num_layers=2, device=device) for _ in range(3)]
    params, buffers = torch.func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    x = torch.randn(7, 2, 5, device=device)
    with torch.no_grad():
        got = torch.func.vmap(lambda p, buf: torch.func.functional_call(base, (p, buf), (x,))[0])(
            params, buffers
        )
        for i, m in enumerate(models):
            torch.testing.assert_close(got[i], m(x)[0], rtol=1e-6, atol=1e-6)


def test_vmap_over_an_empty_batch(device):
    # examples of no rows, and no examples: empty outputs of the right shapes
    W, b = torch.randn(18, 11, device=device), torch.randn(18, device=device)
    with torch.no_grad():
        out, (h, c) = torch.func.vmap(lambda x: kernforge.lltm_sequence(x, W, b))(
            torch.randn(0, 4, 3, 5, device=device)
        )
        assert out.shape == (0, 4, 3, 6) and h.shape == c.shape == (0, 3, 6)
        out, (h, c) = torch.func.vmap(lambda x: kernforge.lltm_sequence(x, W, b))(
            torch.randn(2, 4, 0, 5, device=device)
        )
    assert out.shape == (2, 4, 0, 6) and h.shape == c.shape == (2, 0, 6)


def test_vmap_names_an_examples_shapes_in_its_errors(device):
    W, b = torch.randn(18, 11, device=device), torch.randn(18, device=device)
    x, h0 = torch.randn(2, 4, 3, 5, device=device), torch.randn(2, 5, 6, device=device)
    with torch.no_grad(), pytest.raises(RuntimeError, match=r"\[3, 6\], got x: \[4, 3, 5\].*h0: \[5, 6\]"):
        torch.func.vmap(lambda x, h: kernforge.lltm_sequence(x, W, b, h, None))(x, h0)


@pytest.mark.parametrize("op", ALL_OPS)
def test_eager_route_is_not_the_transformable_twin(op, device):
    args = every_op.leaves(every_op.inputs(op, _gen(device), device))
    name = type(every_op.call(kernforge, op, args)[0].grad_fn).__name__
    assert name.startswith("kernforge_") and "transformable" not in name.lower(), name


# Forward mode: the pointwise ops' twins have jvp formulas; the LLTM's
# ops have none and raise, where torch would give zero tangents.


def _jvp(module, op, args, tangents):
    return torch.func.jvp(lambda *a: tuple(every_op.call(module, op, a)), tuple(args), tuple(tangents))


@pytest.mark.parametrize("op", POINTWISE_OPS)
def test_forward_mode_ad_equals_the_reference(op, device):
    gen = _gen(device)
    args = every_op.inputs(op, gen, device)
    tangents = [torch.randn(a.shape, device=device, generator=gen) for a in args]
    if op == "round_ste":  # straight through, forward as backward: the tangent itself
        want = tuple(every_op.call(reference, op, args)), tuple(tangents)
    else:
        want = _jvp(reference, op, args, tangents)
    tol = {"rtol": 1e-5, "atol": 1e-6}
    got = _jvp(kernforge, op, args, tangents)
    for g, w in zip((*got[0], *got[1]), (*want[0], *want[1]), strict=True):
        torch.testing.assert_close(g, w, **tol)
    for i in range(len(args)):  # one input's tangent at a time, the others none
        only = [t if j == i else torch.zeros_like(t) for j, t in enumerate(tangents)]
        want_i = want[1][0] if op == "round_ste" else _jvp(reference, op, args, only)[1][0]

        def one(x, i=i):
            return every_op.call(kernforge, op, (*args[:i], x, *args[i + 1 :]))[0]

        torch.testing.assert_close(torch.func.jvp(one, (args[i],), (tangents[i],))[1], want_i, **tol)
    with torch.autograd.forward_ad.dual_level():
        duals = [torch.autograd.forward_ad.make_dual(a, t) for a, t in zip(args, tangents, strict=True)]
        out = every_op.call(kernforge, op, duals)[0]
        torch.testing.assert_close(torch.autograd.forward_ad.unpack_dual(out).tangent, want[1][0], **tol)
        inside = every_op.call(kernforge, op, args)  # no tangent: runs as outside
    for i, o in zip(inside, every_op.call(kernforge, op, args), strict=True):
        torch.testing.assert_close(i, o, rtol=0, atol=0)


def test_hessian_through_the_pointwise_ops(device):
    # torch.func.hessian is forward mode over reverse mode: the jvp formulas
    # of the backward ops (add_backward, fused_relu_add_backward) too
    gen = _gen(device)
    x, w = (torch.randn(6, device=device, dtype=torch.float64, generator=gen) for _ in range(2))

    def f(impl, x):
        z = impl.add(impl.mul(x, x), x, alpha=0.5)
        return impl.mul(impl.fused_relu_add(z, impl.mul(x, w), w), x).sum()

    with warnings.catch_warnings():
        warnings.filterwarnings("error", PERFORMANCE_DROP)  # jacfwd's vmap takes the batching rules
        got = torch.func.hessian(lambda x: f(kernforge, x))(x)
    torch.testing.assert_close(got, torch.func.hessian(lambda x: f(reference, x))(x))


def test_forward_mode_ad_of_the_lltm_raises(device):
    args = every_op.inputs("lltm", _gen(device), device)
    match = "lltm: forward-mode AD .* is not implemented"
    with pytest.raises(NotImplementedError, match=match):
        torch.func.jvp(lambda a: every_op.call(kernforge, "lltm", (a, *args[1:]))[0], args[:1], args[:1])
    with torch.autograd.forward_ad.dual_level():
        dual = torch.autograd.forward_ad.make_dual(args[0], torch.ones_like(args[0]))
        with pytest.raises(NotImplementedError, match=match):
            every_op.call(kernforge, "lltm", (dual, *args[1:]))
        inside = every_op.call(kernforge, "lltm", args)  # no tangent: runs as outside
    for i, o in zip(inside, every_op.call(kernforge, "lltm", args), strict=True):
        torch.testing.assert_close(i, o, rtol=0, atol=0)


@pytest.mark.parametrize("layers", [1, 2])
def test_forward_mode_ad_of_the_sequence_raises(layers, device):
    model = kernforge.nn.LLTMSequence(5, 6, num_layers=layers, device=device)
    x = torch.randn(4, 3, 5, device=device)
    for grad in (True, False):  # with and without a gradient to track
        with torch.set_grad_enabled(grad), pytest.raises(NotImplementedError, match="forward-mode AD"):
            torch.func.jacfwd(lambda x: model(x)[0].sum())(x)
