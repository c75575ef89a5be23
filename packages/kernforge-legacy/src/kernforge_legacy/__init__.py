"""kernforge-legacy: 2017-era ``torch.utils.ffi`` + THC extension code on modern PyTorch.

* :mod:`kernforge_legacy.ffi`: ``create_extension``, the old build entry point,
  with the TH/THC compatibility headers (:func:`kernforge_legacy.ffi.include_dir`)
  and the TH/THC runtime library every extension links.
* :mod:`kernforge_legacy.autograd`: ``Function``, on which 2017-style
  autograd functions (instance ``forward``/``backward``) run unchanged.
* :func:`round_ste`: the straight-through round op
  (``torch.ops.kernforge_legacy.round_ste``), its kernels kept in the legacy
  style and built through ``create_extension``.

The submodules load on first use: a build script's
``from kernforge_legacy.ffi import create_extension`` does not import torch.
"""

import importlib

__version__ = "0.1.0"

__all__ = ["autograd", "ffi", "ops", "round_ste"]


def __getattr__(name):
    if name in ("autograd", "ffi", "ops"):
        return importlib.import_module(f".{name}", __name__)
    if name == "round_ste":
        return importlib.import_module(".ops", __name__).round_ste
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
