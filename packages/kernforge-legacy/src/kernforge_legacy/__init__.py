"""kernforge-legacy: 2017-era ``torch.utils.ffi`` + THC extension code on modern PyTorch.

* :mod:`kernforge_legacy.ffi`: ``create_extension``, the old build entry point,
  with the TH/THC compatibility headers (:func:`kernforge_legacy.ffi.include_dir`).
"""

from . import ffi

__version__ = "0.1.0"

__all__ = ["ffi"]
