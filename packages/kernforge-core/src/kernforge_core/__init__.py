"""kernforge-core: the C++/CUDA kernels behind kernforge, as ``torch.ops.kernforge.*``.

Importing this package loads the compiled library, which registers the ops
with torch's dispatcher (CPU kernels, and CUDA kernels in a CUDA build), then
registers their fake kernels and autograd formulas (:mod:`kernforge_core.ops`).

The library comes from one of two builds of the same sources:

* ahead of time: the ``kernforge_core._C`` binary of a wheel or ``pip install``;
* just in time: ``KERNFORGE_JIT=1``, or a source checkout with no binary, builds
  into torch's extension cache on first import (ninja; incremental after edits).
"""

from __future__ import annotations

import importlib.util
import os

import torch

__version__ = "0.1.0"


def _load_library() -> tuple[str, str]:
    if os.environ.get("KERNFORGE_JIT") != "1" and importlib.util.find_spec("kernforge_core._C"):
        try:
            from . import _C
        except ImportError as e:  # e.g. a +cu13 build under a torch built with CUDA 12
            from importlib.metadata import version

            raise ImportError(
                f"kernforge_core: kernforge-core {version('kernforge-core')} cannot load its library with "
                f"torch {torch.__version__} ({e}). A +cuNN build needs a torch built with CUDA NN: "
                "install the variant (+cpu, +cu12, +cu13) that matches your torch"
            ) from e
        return "aot", _C.__file__
    from . import _jit

    return "jit", _jit.build_and_load()


#: How the library was built ("aot" or "jit") and where it was loaded from.
BUILD, LIBRARY_PATH = _load_library()


def has_cuda_kernels() -> bool:
    """True when the loaded library registered CUDA kernels (a CUDA build)."""
    return torch._C._dispatch_has_kernel_for_dispatch_key("kernforge::mul", "CUDA")


from . import ops  # noqa: E402  (registers fake kernels and autograd once the library is loaded)
from .ops import add, fused_relu_add, mul  # noqa: E402

__all__ = ["BUILD", "LIBRARY_PATH", "add", "fused_relu_add", "has_cuda_kernels", "mul", "ops"]
