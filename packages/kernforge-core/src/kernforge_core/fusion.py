"""Pointwise ops that ``torch.compile`` fuses with their neighbours.

In eager mode every kernforge op runs its own kernel. Inside a compiled graph
an opaque kernel is a fusion barrier: inductor writes its inputs to memory,
calls it, and reads its output back, so a chain such as
``kernforge.fused_relu_add(x, y, b) * 0.5 + 1`` compiled costs two passes
where plain torch compiled costs one. So each pointwise op (and its backward)
also has a *formula*: the same math in torch operations, which inductor uses
in place of the kernel when it compiles a graph, and fuses with the pointwise
and reduction work around it. Graphs keep the op until then (``torch.export``
and the FX graphs dynamo hands a backend hold ``kernforge::mul``); only
inductor's lowering sees the formula.

Register one with :func:`formula`, and call :func:`activate` from the op's
fake kernel (every trace runs it before inductor looks at the graph)::

    @fusion.formula(torch.ops.kernforge.mul.default)
    def _(a, b):
        return (a * b).contiguous()

The formula must return what the kernel returns: the same dtype, and new
contiguous tensors, as the kernforge ops promise. Half and bfloat16 formulas
can be written in the tensors' own dtype: inductor computes pointwise chains
in float32 and rounds once at the store, as the kernels do.

The mechanism is inductor's decomposition table
(``torch._inductor.decomposition``), which is not a public API. It is tested
on the torch versions in ``TESTED``; on another, :func:`activate` still
tries it, and if torch has changed it, warns once and leaves the ops as
opaque kernels: correct, unfused. ``tests/core/test_fusion.py`` fails when
that happens on a version the project supports.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

#: Oldest and newest torch (major, minor) whose inductor this module was tested with.
TESTED = ((2, 10), (2, 15))

_formulas: dict[torch._ops.OpOverload, Callable] = {}
_table: dict | None = None  # inductor's decomposition table, once activate() found it
_failure: str | None = None  # why activate() could not use it


def formula(op: torch._ops.OpOverload) -> Callable[[Callable], Callable]:
    """Decorator: ``fn`` computes ``op`` in torch operations, and inductor
    uses it in place of the op's kernel. ``fn`` takes the op's arguments as
    the schema orders them (defaults included)."""

    def register(fn: Callable) -> Callable:
        _formulas[op] = fn
        if _table is not None:
            _install({op: fn})
        return fn

    return register


def activate() -> bool:
    """Puts every registered formula into inductor's decomposition table; a
    no-op after the first call. Called from the fake kernels, so it runs
    whenever an op is traced, and never in eager code: importing inductor
    takes seconds. Returns whether the formulas are in use."""
    global _table, _failure
    if _table is not None or _failure is not None:
        return _table is not None
    try:
        from torch._inductor import decomposition

        table, select = decomposition.decompositions, decomposition.fast_random_decomps
        if not isinstance(table, dict) or not hasattr(select, "cache_clear"):
            raise TypeError("decompositions is no longer a dict and fast_random_decomps no longer a cache")
    except (ImportError, AttributeError, TypeError) as e:
        _failure = f"torch {torch.__version__} changed inductor's decomposition table ({e})"
        warnings.warn(
            f"kernforge: {_failure}; kernforge ops stay opaque kernels under torch.compile "
            f"(correct, not fused; fusion is tested on torch {TESTED[0][0]}.{TESTED[0][1]} to "
            f"{TESTED[1][0]}.{TESTED[1][1]})",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    _table = table
    _install(_formulas)
    return True


def status() -> str:
    """``"active"``, ``"inactive"`` (no op traced yet) or why fusion is unavailable."""
    return "active" if _table is not None else (_failure or "inactive")


def _install(formulas: dict) -> None:
    from torch._inductor import decomposition

    _table.update(formulas)
    # select_decomp_table() serves a cached copy of the table: drop it so the
    # next compile sees the new entries.
    decomposition.fast_random_decomps.cache_clear()
