"""kernforge-legacy: 2017-era ``torch.utils.ffi`` + THC extension code on modern PyTorch.

* :mod:`kernforge_legacy.ffi`: ``create_extension``, the old build entry point,
  with the TH/THC compatibility headers (:func:`kernforge_legacy.ffi.include_dir`).
* :mod:`kernforge_legacy.autograd`: ``Function``, on which 2017-style
  autograd functions (instance ``forward``/``backward``) run unchanged.
* :func:`round_ste`: the straight-through round op
  (``torch.ops.kernforge_legacy.round_ste``), its kernels kept in the legacy
  style and built through ``create_extension``.
"""

from . import autograd, ffi, ops
from .ops import round_ste

__version__ = "0.1.0"

__all__ = ["autograd", "ffi", "ops", "round_ste"]
