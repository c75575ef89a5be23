"""The one source list and the compile flags, for both builds of the library.

``setup.py`` (ahead of time: ``pip install``, wheels) and ``_jit.py`` (just in
time, into torch's extension cache) both call :func:`build_config`. File names
drive the build: ``csrc/*.cpp`` and ``csrc/<op>/<op>_cpu.cpp`` always,
``csrc/<op>/<op>_cuda.cu`` in CUDA builds. This module imports nothing from
the package, so ``setup.py`` can load it by path.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

# Source checkout layout: packages/kernforge-core/{csrc, src/kernforge_core}.
CSRC = Path(__file__).resolve().parents[2] / "csrc"

# The stable ABI target: torch 2.10 (TORCH_VERSION_2_10_0 in torch/csrc/stable/version.h).
TORCH_TARGET_VERSION = "0x020a000000000000"

# Architectures a CUDA build embeds unless TORCH_CUDA_ARCH_LIST says otherwise.
DEFAULT_CUDA_ARCH_LIST = "8.0;9.0;10.0;12.0+PTX"

_COMMON = ["-O3", "-std=c++17", f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}"]


@dataclass(frozen=True)
class BuildConfig:
    cuda: bool
    sources: list[str]
    include_dirs: list[str]
    cxx_flags: list[str]
    nvcc_flags: list[str]


def cuda_build_requested() -> bool:
    """Whether to build the CUDA kernels.

    ``KERNFORGE_CUDA=0``: never. ``KERNFORGE_CUDA=1``: always, or a clear error
    when the installed torch has no CUDA or nvcc cannot be found. Unset: when
    torch has CUDA and nvcc is found.
    """
    import torch

    setting = os.environ.get("KERNFORGE_CUDA", "")
    if setting == "0":
        return False
    missing = []
    if torch.version.cuda is None:
        missing.append(f"the installed torch {torch.__version__} is a CPU-only build")
    if _nvcc() is None:
        missing.append("nvcc was not found (set CUDA_HOME, or put nvcc on PATH)")
    if setting == "1" and missing:
        raise RuntimeError("KERNFORGE_CUDA=1 asks for a CUDA build, but " + "; ".join(missing))
    if setting not in ("", "0", "1"):
        raise RuntimeError(f"KERNFORGE_CUDA must be 0 or 1, got {setting!r}")
    return not missing


def _nvcc() -> str | None:
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME is not None:
        nvcc = Path(CUDA_HOME) / "bin" / "nvcc"
        if nvcc.exists():
            return str(nvcc)
    return shutil.which("nvcc")


def build_config(cuda: bool, csrc: Path = CSRC, relative_to: Path | None = None) -> BuildConfig:
    """Sources and flags for a CPU (``cuda=False``) or CUDA build.

    ``relative_to`` makes the source paths relative (setuptools wants that).
    """
    files = sorted(csrc.glob("*.cpp")) + sorted(csrc.glob("*/*_cpu.cpp"))
    if cuda:
        files += sorted(csrc.glob("*/*_cuda.cu"))
    if not files:
        raise FileNotFoundError(f"no kernforge sources under {csrc}")
    sources = [str(f.relative_to(relative_to) if relative_to else f) for f in files]
    return BuildConfig(
        cuda=cuda,
        sources=sources,
        include_dirs=[str(csrc)],
        # -fno-trapping-math: no kernel relies on floating-point exception
        # flags, and without it GCC keeps branches in loops with comparisons
        # (clamps, selects), so the LLTM gate loops did not vectorize.
        cxx_flags=[*_COMMON, "-fvisibility=hidden", "-fno-trapping-math"] + (["-DUSE_CUDA"] if cuda else []),
        nvcc_flags=[*_COMMON, "-DUSE_CUDA", "-Xcompiler=-fvisibility=hidden", "-lineinfo"],
    )


def variant_version(init_py: Path, cuda: bool) -> str:
    """``__version__`` of ``init_py`` with the build variant as its local
    label: ``0.1.0+cpu``, or ``0.1.0+cu13`` when built with CUDA 13. Installers
    select a variant by that label (``kernforge-core==0.1.0+cu13``), or by the
    variant's index, as for torch's own ``+cpu`` and ``+cu130`` builds."""
    import torch

    found = re.search(r'^__version__ = "([^"+]+)"$', init_py.read_text(), re.M)
    if found is None:
        raise RuntimeError(f'no __version__ = "..." line in {init_py}')
    variant = f"cu{torch.version.cuda.split('.')[0]}" if cuda else "cpu"
    return f"{found.group(1)}+{variant}"
