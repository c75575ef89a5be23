"""Just-in-time build: compiles the library from the source checkout with
ninja into torch's extension cache (``TORCH_EXTENSIONS_DIR``) on first import,
and incrementally after an edit. Used when ``KERNFORGE_JIT=1``, or when no
ahead-of-time binary is installed next to this package."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import _sources


def build_and_load() -> str:
    """Builds (if stale) and loads the library; returns its path."""
    import torch
    from torch.utils import cpp_extension

    if not _sources.CSRC.is_dir():
        raise ImportError(
            f"kernforge_core: a just-in-time build needs the source checkout, and "
            f"{_sources.CSRC} does not exist. Install a built wheel, or unset KERNFORGE_JIT."
        )
    cuda = _sources.cuda_build_requested()
    if cuda:
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", _sources.DEFAULT_CUDA_ARCH_LIST)
    cfg = _sources.build_config(cuda)
    name = "kernforge_core_cuda" if cuda else "kernforge_core_cpu"
    tag = f"torch{torch.__version__}-py{sys.version_info.major}{sys.version_info.minor}"
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or cpp_extension.get_default_build_root()
    build_dir = Path(root) / f"{name}-{tag}"
    build_dir.mkdir(parents=True, exist_ok=True)
    cpp_extension.load(
        name=name,
        sources=cfg.sources,
        extra_cflags=cfg.cxx_flags,
        extra_cuda_cflags=cfg.nvcc_flags,
        extra_include_paths=cfg.include_dirs,
        with_cuda=cuda,
        build_directory=str(build_dir),
        is_python_module=False,
        verbose=os.environ.get("KERNFORGE_VERBOSE") == "1",
    )
    return str(build_dir / f"{name}.so")
