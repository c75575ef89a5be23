"""The functional API: each name is the kernel-backed op from
:mod:`kernforge_core.ops` (documented there), or the pure-PyTorch version from
:mod:`kernforge.reference` when ``KERNFORGE_REFERENCE=1`` or the compiled
kernels cannot be loaded (a RuntimeWarning says why)."""

from __future__ import annotations

import os
import warnings

from . import reference

if os.environ.get("KERNFORGE_REFERENCE") == "1":
    _impl = reference
else:
    try:
        from kernforge_core import ops as _impl
    except ImportError as e:
        warnings.warn(
            f"kernforge: the compiled kernels could not be loaded ({e}); "
            "using the pure-PyTorch reference implementations",
            RuntimeWarning,
            stacklevel=2,
        )
        _impl = reference

#: "kernels" or "reference": which implementation the names below are.
BACKEND = "reference" if _impl is reference else "kernels"

mul = _impl.mul
add = _impl.add
fused_relu_add = _impl.fused_relu_add
lltm = _impl.lltm

__all__ = ["BACKEND", "add", "fused_relu_add", "lltm", "mul"]
