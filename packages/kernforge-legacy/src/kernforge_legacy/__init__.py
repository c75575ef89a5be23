"""kernforge-legacy: 2017-era torch.utils.ffi + THC extension code on modern
PyTorch. Not written yet: the package exports only its version."""

__version__ = "0.1.0"
