"""The functional API: each name is the kernel-backed op from
:mod:`kernforge_core.ops` (``round_ste``: :mod:`kernforge_legacy.ops`),
documented there, or the pure-PyTorch version from :mod:`kernforge.reference`
when ``KERNFORGE_REFERENCE=1`` or the compiled kernels cannot be loaded (a
RuntimeWarning says why)."""

from __future__ import annotations

import importlib
import os
import warnings

from . import reference


def _kernels(module: str):
    """The ops module of a kernel package, or :mod:`kernforge.reference`."""
    if os.environ.get("KERNFORGE_REFERENCE") == "1":
        return reference
    try:
        return importlib.import_module(module)
    except ImportError as e:
        warnings.warn(
            f"kernforge: the compiled kernels of {module} could not be loaded ({e}); "
            "using the pure-PyTorch reference implementations",
            RuntimeWarning,
            stacklevel=3,
        )
        return reference


_impl = _kernels("kernforge_core.ops")
_legacy = _kernels("kernforge_legacy.ops")

#: "kernels" when every name below is kernel-backed, else "reference".
BACKEND = "reference" if reference in (_impl, _legacy) else "kernels"

mul = _impl.mul
add = _impl.add
fused_relu_add = _impl.fused_relu_add
lltm = _impl.lltm
lltm_sequence = _impl.lltm_sequence
lltm_sequence_layers = _impl.lltm_sequence_layers
packed_reversed_rows = _impl.packed_reversed_rows
round_ste = _legacy.round_ste

__all__ = [
    "BACKEND",
    "add",
    "fused_relu_add",
    "lltm",
    "lltm_sequence",
    "lltm_sequence_layers",
    "mul",
    "packed_reversed_rows",
    "round_ste",
]
