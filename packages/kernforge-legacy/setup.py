"""Builds kernforge-legacy (metadata lives in pyproject.toml): the Python
package, its TH/THC headers and runtime source, and the straight-through round
op, whose legacy C/CUDA sources in csrc/round are built by the package's own
create_extension into kernforge_legacy/_ext/round, as a 2017 setup.py built
them with torch.utils.ffi.

CUDA as for kernforge-core: KERNFORGE_CUDA=0 never, =1 always (or a clear
error), unset when torch has CUDA and nvcc is found. Build with
`pip install --no-build-isolation` so it links against the torch you run.
The version carries the variant as kernforge-core's does (0.1.0+cu13).
"""

import importlib.util
import os
import re
import sys
from pathlib import Path

import torch
from setuptools import setup

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("kernforge_legacy_ffi", HERE / "src/kernforge_legacy/ffi.py")
ffi = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ffi)

setting = os.environ.get("KERNFORGE_CUDA", "")
if setting not in ("", "0", "1"):
    raise RuntimeError(f"KERNFORGE_CUDA must be 0 or 1, got {setting!r}")
cuda = setting == "1" or (setting == "" and torch.version.cuda is not None and ffi._nvcc() is not None)
base = re.search(r'^__version__ = "([^"+]+)"$', (HERE / "src/kernforge_legacy/__init__.py").read_text(), re.M)
variant = f"cu{torch.version.cuda.split('.')[0]}" if cuda else "cpu"

ROUND = HERE / "csrc" / "round"
round_ste = ffi.create_extension(
    "kernforge_legacy._ext.round",
    headers=[ROUND / "round.h", *([ROUND / "round_cuda.h"] if cuda else [])],
    sources=[ROUND / "round.c", *([ROUND / "round_cuda.c", ROUND / "round_kernel.cu"] if cuda else [])],
    with_cuda=cuda,
    verbose=False,
)


setup(
    version=f"{base.group(1)}+{variant}",
    # build_py tags the wheel for the platform: it holds compiled libraries.
    cmdclass={"build_py": ffi.build_py(round_ste, with_runtime=True)},
    # The library uses no Python API (it is loaded with torch.ops.load_library).
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
