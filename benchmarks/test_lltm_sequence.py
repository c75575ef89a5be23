"""The LLTM over whole sequences (kernforge.nn.LLTMSequence) against cuDNN's
GRU (its gate GEMMs have the LLTM's shape, 3S x (S + F)) and LSTM (4/3 of
the FLOPs), and a Python loop over kernforge's cell, in one process.
"train" is forward + backward of output.sum() with the input and the
weights needing gradients; "infer" is the forward under no_grad. TF32 off.
On a GPU each training row also records the step's peak memory above what
was allocated before it (extra_info peak_bytes)."""

from __future__ import annotations

import math

import pytest
import torch

import kernforge
from conftest import DEVICE
from cuda_timer import synchronized_clock

# (B, F, S, T)
SIZES = (
    [(16, 32, 128, 64)]
    if DEVICE == "cpu"
    else [(16, 32, 128, 64), (64, 256, 512, 64), (256, 512, 1024, 32), (8, 64, 256, 512)]
)
DTYPES = [torch.float32] if DEVICE == "cpu" else [torch.float32, torch.bfloat16]
CASES = [(size, dtype, mode) for size in SIZES for dtype in DTYPES for mode in ("train", "infer")]
# (impl, case); the loop over the cell at the smallest size, fp32 training.
RUNS = [(impl, case) for case in CASES for impl in ("kernforge", "gru", "lstm")] + [
    ("loop", ((16, 32, 128, 64), torch.float32, "train"))
]


def _case_id(case):
    (batch, features, state, steps), dtype, mode = case
    return f"{batch}x{features}x{state}xT{steps}-{str(dtype).removeprefix('torch.')}-{mode}"


class _CellLoop(torch.nn.Module):
    """What users wrote before the sequence op: the cell stepped from Python."""

    def __init__(self, features, state, dtype):
        super().__init__()
        self.cell = kernforge.nn.LLTM(features, state, device=DEVICE, dtype=dtype)

    def forward(self, x):
        h = c = x.new_zeros(x.shape[1], self.cell.state_size)
        outs = []
        for x_t in x:
            h, c = self.cell(x_t, (h, c))
            outs.append(h)
        return torch.stack(outs), (h, c)


def _describe(benchmark, case, impl, dtype, n, size, host_bound=False):
    """The row's fields that benchmarks/report.py reads (a recurrent row: no
    bytes to hold against the copy's bandwidth)."""
    benchmark.extra_info.update(
        case=case,
        impl=impl,
        dtype=str(dtype).removeprefix("torch."),
        n=n,
        size=size,
        bytes=0,
        device=DEVICE,
        kind="recurrent",
        host_bound=host_bound,
    )


def _model(impl, features, state, dtype, **layer_args):
    """kernforge's layer, cuDNN's GRU or LSTM (`layer_args`: num_layers,
    bidirectional), or the loop over the cell."""
    if impl == "loop":
        return _CellLoop(features, state, dtype)
    cls = {"kernforge": kernforge.nn.LLTMSequence, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[impl]
    model = cls(features, state, device=DEVICE, dtype=dtype, **layer_args)
    if impl != "kernforge":
        model.flatten_parameters()
    return model


@pytest.mark.parametrize(("impl", "case"), RUNS, ids=lambda v: v if isinstance(v, str) else _case_id(v))
def test_lltm_sequence(benchmark, impl, case):
    (batch, features, state, steps), dtype, mode = case
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    x = torch.randn(steps, batch, features, device=DEVICE, generator=gen).to(dtype)
    model = _model(impl, features, state, dtype)
    if mode == "train":
        x.requires_grad_()

        def step():
            out, _ = model(x)
            out.sum().backward()
    else:

        def step():
            with torch.no_grad():
                model(x)

    size = f"{batch}x{features}x{state}xT{steps}"
    _describe(
        benchmark, f"lltm_sequence_{mode}", impl, dtype, steps * batch * state, size, batch * state < 1 << 14
    )
    step()  # cuDNN plans, allocator blocks, cuBLAS handles
    if DEVICE == "cuda" and mode == "train":
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        benchmark.extra_info["peak_bytes"] = torch.cuda.max_memory_allocated() - before
    _timed(benchmark, step)


# Packed batches as NLP code feeds them: sentences of lengths drawn from
# [T/10, T], unsorted, packed inside the timed step (pack_padded_sequence,
# enforce_sorted=False) for every implementation. (B, F, S, T, directions).
PACKED = (
    [(64, 32, 128, 100, 1)]
    if DEVICE == "cpu"
    else [(64, 256, 512, 100, 1), (64, 256, 512, 100, 2), (256, 128, 256, 50, 1)]
)
PACKED_CASES = [(size, dtype, mode) for size in PACKED for dtype in DTYPES for mode in ("train", "infer")]
# On the CPU, the same layer on the padded batch instead of cuDNN's RNNs.
PACKED_IMPLS = ("kernforge", "padded") if DEVICE == "cpu" else ("kernforge", "gru", "lstm")
PACKED_RUNS = [(impl, case) for case in PACKED_CASES for impl in PACKED_IMPLS]


def _packed_id(case):
    (batch, features, state, steps, directions), dtype, mode = case
    bi = "-bi" if directions == 2 else ""
    return f"{batch}x{features}x{state}xT{steps}{bi}-{str(dtype).removeprefix('torch.')}-{mode}"


def _timed(benchmark, step):
    """Warm-up, then rounds of about a second in all."""
    step()
    start = synchronized_clock()
    step()
    once = synchronized_clock() - start
    warmup = max(2, math.ceil(0.3 / once))
    rounds = max(7, min(30, math.ceil(1.0 / once)))
    benchmark.pedantic(step, rounds=rounds, iterations=1, warmup_rounds=warmup)


@pytest.mark.parametrize(
    ("impl", "case"), PACKED_RUNS, ids=lambda v: v if isinstance(v, str) else _packed_id(v)
)
def test_lltm_sequence_packed(benchmark, impl, case):
    (batch, features, state, steps, directions), dtype, mode = case
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    x = torch.randn(steps, batch, features, device=DEVICE, generator=gen).to(dtype)
    lengths = torch.randint(steps // 10, steps + 1, (batch,), generator=torch.Generator().manual_seed(1))
    cls = {"kernforge": kernforge.nn.LLTMSequence, "padded": kernforge.nn.LLTMSequence}.get(impl)
    cls = cls or {"gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[impl]
    model = cls(features, state, bidirectional=directions == 2, device=DEVICE, dtype=dtype)
    pack = torch.nn.utils.rnn.pack_padded_sequence
    if mode == "train":
        x.requires_grad_()

    def run():
        if impl == "padded":
            return model(x)[0].sum()
        return model(pack(x, lengths, enforce_sorted=False))[0].data.sum()

    def step():
        if mode == "train":
            run().backward()
        else:
            with torch.no_grad():
                run()

    bi = "_bi" if directions == 2 else ""
    n = batch * features * state * steps * directions
    _describe(
        benchmark, f"lltm_sequence_packed{bi}_{mode}", impl, dtype, n, f"{batch}x{features}x{state}xT{steps}"
    )
    _timed(benchmark, step)


def _padded_step(model, x, mode):
    """The timed step on a padded batch: forward and backward of output.sum()
    (x needing its gradient) in training, else the forward under no_grad."""
    if mode == "train":
        x.requires_grad_()
        return lambda: model(x)[0].sum().backward()

    def infer():
        with torch.no_grad():
            model(x)

    return infer


# A stacked bidirectional layer on a padded batch, as a sentiment classifier
# runs it: d2l's "Sentiment Analysis: Using Recurrent Neural Networks" (2
# bidirectional layers of S = 100 over 100-wide embeddings, B = 64, T = 500
# words), the one shape of common NLP code where kernforge's training step
# once lost to cuDNN's LSTM. (B, F, S, T, layers); fp32.
STACKED = [(64, 100, 100, 500, 2)]


@pytest.mark.skipif(DEVICE == "cpu", reason="a GPU benchmark: a 500-step batch against cuDNN's")
@pytest.mark.parametrize("mode", ["train", "infer"])
@pytest.mark.parametrize("size", STACKED, ids=lambda s: f"{s[0]}x{s[1]}x{s[2]}xT{s[3]}-L{s[4]}")
@pytest.mark.parametrize("impl", ["kernforge", "gru", "lstm"])
def test_lltm_sequence_stacked_bidirectional(benchmark, impl, size, mode):
    batch, features, state, steps, layers = size
    model = _model(impl, features, state, torch.float32, num_layers=layers, bidirectional=True)
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    x = torch.randn(steps, batch, features, device=DEVICE, generator=gen)
    step = _padded_step(model, x, mode)
    n = batch * features * state * steps * layers * 2
    _describe(
        benchmark,
        f"lltm_sequence_stacked_bi_{mode}",
        impl,
        torch.float32,
        n,
        f"{batch}x{features}x{state}xT{steps}",
    )
    _timed(benchmark, step)


# A float16 layer of S = 1024, as GNMT v2 (NVIDIA's DeepLearningExamples,
# 1024 units, trained in float16 by default) runs its encoder's layers: B =
# 128 sentences of T = 50 words. cuDNN's LSTM has a fast float16 path.
# kernforge's forward here is one tensor-core grid kernel; its backward
# steps with a cuBLAS GEMM and a gate kernel per step, bound by the host
# (benchmarks/PERFORMANCE.md, fifty-second session). A tracked row, with no
# target yet. (B, F, S, T).
HALF_LARGE = [(128, 1024, 1024, 50)]


@pytest.mark.skipif(DEVICE == "cpu", reason="a GPU benchmark: cuDNN's float16 LSTM")
@pytest.mark.parametrize("mode", ["train", "infer"])
@pytest.mark.parametrize("size", HALF_LARGE, ids=lambda s: f"{s[0]}x{s[1]}x{s[2]}xT{s[3]}")
@pytest.mark.parametrize("impl", ["kernforge", "gru", "lstm"])
def test_lltm_sequence_half_large(benchmark, impl, size, mode):
    batch, features, state, steps = size
    model = _model(impl, features, state, torch.float16)
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    x = torch.randn(steps, batch, features, device=DEVICE, generator=gen).half()
    step = _padded_step(model, x, mode)
    n = batch * features * state * steps
    _describe(
        benchmark,
        f"lltm_sequence_half_large_{mode}",
        impl,
        torch.float16,
        n,
        f"{batch}x{features}x{state}xT{steps}",
    )
    _timed(benchmark, step)


# Text generated one token at a time: B = 1, T = 1, 2 layers of S = F,
# the state carried from call to call, under no_grad; the median is per
# token, over 100 tokens back to back. A token costs tens of microseconds of
# host time, so a benchmark of 30 rounds lasted about 0.15 s and its median
# moved with the host's state: 1000 tokens of warm-up and 100 rounds (a
# second or two a row at cuDNN's speed) give the steady state of a long
# generation loop.
GENERATE = [200, 650]
TOKENS = 100


@pytest.mark.skipif(DEVICE == "cpu", reason="a GPU benchmark: host time per call against cuDNN's")
@pytest.mark.parametrize("state", GENERATE)
@pytest.mark.parametrize("impl", ["kernforge", "gru", "lstm"])
def test_lltm_sequence_generate(benchmark, impl, state):
    model = _model(impl, state, state, torch.float32, num_layers=2).eval()
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    x = torch.randn(1, 1, state, device=DEVICE, generator=gen)
    hidden = [None]

    def token():
        _, hidden[0] = model(x, hidden[0])

    _describe(
        benchmark, "lltm_sequence_generate", impl, torch.float32, 2 * state, f"1x{state}x{state}xT1", True
    )
    with torch.no_grad():
        for _ in range(10):
            token()
        benchmark.pedantic(token, rounds=100, iterations=TOKENS, warmup_rounds=10)


# A decoder's step replayed from a CUDA graph, as speech recognizers'
# greedy transducer decoding runs its prediction network: T = 1, one layer
# of S = F = 640, B rows, the state carried from step to step, under
# no_grad. The graph holds GRAPH_STEPS steps; the median is per replay.
# Replayed, a step costs no host time, only the GPU's.
GRAPH_STEP = [(16, torch.float32), (64, torch.float32), (16, torch.bfloat16), (64, torch.bfloat16)]
GRAPH_STEPS = 10


@pytest.mark.skipif(DEVICE == "cpu", reason="a CUDA graph's replay")
@pytest.mark.parametrize(
    ("batch", "dtype"), GRAPH_STEP, ids=lambda v: v if isinstance(v, int) else str(v).removeprefix("torch.")
)
@pytest.mark.parametrize("impl", ["kernforge", "gru", "lstm"])
def test_lltm_sequence_graph_step(benchmark, impl, batch, dtype):
    state = 640
    model = _model(impl, state, state, dtype).eval()
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    x = torch.randn(1, batch, state, device=DEVICE, generator=gen).to(dtype)
    h0 = torch.randn(1, batch, state, device=DEVICE, generator=gen).to(dtype)
    hidden = h0 if impl == "gru" else (h0, torch.randn_like(h0))
    _describe(
        benchmark,
        "lltm_sequence_graph_step",
        impl,
        dtype,
        GRAPH_STEPS * batch * state,
        f"{batch}x{state}x{state}xT1",
    )
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside the capture
            model(x, hidden)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            h = hidden
            for _ in range(GRAPH_STEPS):
                _, h = model(x, h)
    _timed(benchmark, graph.replay)
