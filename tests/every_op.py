"""Every public kernforge op behind one calling convention, for the tests that
must hold for all of them (streams, graphs, determinism, sanitizers):
random inputs, the call through ``kernforge`` or its reference, and the
forward outputs with the gradients of every input."""

from __future__ import annotations

import torch

OPS = [
    "mul",
    "add",
    "fused_relu_add",
    "round_ste",
    "lltm",
    "lltm_sequence",
    "lltm_sequence_packed",
    "lltm_sequence_layers",
]

# The sequence ops: (T, B, F, S). Small: the cluster kernel (forward and
# backward); large: a batch over clusters of its rows in both directions.
SEQUENCE_SIZES = {False: (5, 16, 32, 128), True: (5, 256, 32, 128)}


def batch_sizes(batch: int, steps: int = 9) -> list[int]:
    """The packed layout (a PackedSequence's batch_sizes) of `batch`
    sequences of lengths from `steps` down to 1: each step has fewer rows
    than the one before."""
    return [max(1, batch - (batch * t) // steps) for t in range(steps)]


def inputs(
    op: str, gen: torch.Generator, device="cuda", dtype=torch.float32, large=False
) -> tuple[torch.Tensor, ...]:
    """Random inputs of `op` (never zeros), not requiring grad. `large`: the
    sizes where the CUDA kernels take their many-block paths (the LLTM
    through cuBLAS, the bias gradient over many partial sums)."""
    randn = lambda *shape: torch.randn(*shape, device=device, dtype=dtype, generator=gen)
    rows, cols = (4096, 1024) if large else (256, 384)
    if op.startswith("lltm_sequence"):
        steps, batch, features, state = SEQUENCE_SIZES[large]
        weight = lambda inputs: randn(3 * state, state + inputs) * (state + inputs) ** -0.5
        layers = 2 if op == "lltm_sequence_layers" else 1
        x = randn(steps, batch, features)
        if op == "lltm_sequence_packed":
            x = randn(sum(batch_sizes(batch)), features)
        params = [t for k in range(layers) for t in (weight(state if k else features), randn(3 * state))]
        state_shape = (layers, batch, state) if op == "lltm_sequence_layers" else (batch, state)
        return (x, *params, randn(*state_shape), randn(*state_shape))
    if op == "lltm":
        batch, features, state = (1024, 512, 1024) if large else (64, 48, 96)
        return (randn(batch, features), randn(3 * state, state + features) / 10, randn(3 * state),
                randn(batch, state), randn(batch, state))  # fmt: skip
    if op == "fused_relu_add":
        return randn(rows, cols), randn(rows, cols), randn(cols)
    if op == "round_ste":
        return (torch.rand(rows, cols, device=device, dtype=dtype, generator=gen),)
    return randn(rows, cols), randn(rows, cols)


def call(module, op: str, args) -> list[torch.Tensor]:
    """The op's outputs, forward through `module` (kernforge or its reference)."""
    if op == "add":
        return [module.add(*args, alpha=0.5)]
    if op == "lltm":
        return list(module.lltm(*args))
    if op == "lltm_sequence":
        output, state = module.lltm_sequence(*args)
        return [output, *state]
    if op == "lltm_sequence_packed":
        output, state = module.lltm_sequence(*args, batch_sizes=batch_sizes(args[-1].shape[0]))
        return [output, *state]
    if op == "lltm_sequence_layers":
        x, *params, h0, c0 = args
        layers = getattr(module, "functional", module).lltm_sequence_layers  # not in kernforge's namespace
        output, state = layers(x, params[::2], params[1::2], h0, c0)
        return [output, *state]
    return [getattr(module, op)(*args)]


def forward_backward(module, op: str, args) -> list[torch.Tensor]:
    """Outputs and the gradients of :func:`forward_backward_loss` for every
    input in `args` (which must require grad)."""
    outs = call(module, op, args)
    loss = _weighted_sum(outs)
    return [o.detach() for o in outs] + list(torch.autograd.grad(loss, args))


def forward_backward_loss(module, op: str, args) -> torch.Tensor:
    """sum(output * weight) over the op's outputs. The weights cycle through
    five values, none of them 1 (a wrong gradient layout would not cancel
    out), each exact in every float dtype (the float64 reference gets the
    same ones)."""
    return _weighted_sum(call(module, op, args))


def _weighted_sum(outs) -> torch.Tensor:
    weights = [
        ((torch.arange(o.numel(), device=o.device) % 5 - 2.5) / 2).to(o.dtype).view_as(o) for o in outs
    ]
    return sum((o * w).sum() for o, w in zip(outs, weights, strict=True))


def leaves(args) -> list[torch.Tensor]:
    """Fresh leaf copies of `args` that require grad."""
    return [a.detach().clone().requires_grad_() for a in args]


def leaf_view(t: torch.Tensor) -> torch.Tensor:
    """A tensor with `t`'s values, sizes, strides and storage offset over a
    fresh leaf that requires grad: gradients reach the leaf through the view,
    and the op sees `t`'s layout (``clone`` would make some layouts contiguous)."""
    storage = t.new_empty(0).set_(t.untyped_storage())
    leaf = storage.detach().clone().requires_grad_()
    return leaf.as_strided(t.shape, t.stride(), t.storage_offset())
