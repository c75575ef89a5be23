"""Ahead-of-time build of kernforge_core._C (metadata lives in pyproject.toml).

CPU-only when torch has no CUDA or KERNFORGE_CUDA=0; CUDA when torch has CUDA
and nvcc is found; KERNFORGE_CUDA=1 forces CUDA or fails with a clear message.
Sources and flags come from src/kernforge_core/_sources.py, shared with the
just-in-time build. The version is ``__version__`` with the variant as its
local label: 0.1.0+cpu, or 0.1.0+cu13 for a CUDA 13 build. Build with
`pip install --no-build-isolation` so the extension compiles against the
torch you run.
"""

import importlib.util
import os
import sys
from pathlib import Path

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_sources", HERE / "src/kernforge_core/_sources.py")
_sources = sys.modules["_sources"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sources)

cuda = _sources.cuda_build_requested()
if cuda:
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", _sources.DEFAULT_CUDA_ARCH_LIST)
cfg = _sources.build_config(cuda, csrc=HERE / "csrc", relative_to=HERE)
version = _sources.variant_version(HERE / "src/kernforge_core/__init__.py", cuda)
Extension = CUDAExtension if cuda else CppExtension

setup(
    version=version,
    ext_modules=[
        Extension(
            "kernforge_core._C",
            cfg.sources,
            include_dirs=[str(HERE / "csrc")],
            extra_compile_args={"cxx": cfg.cxx_flags, "nvcc": cfg.nvcc_flags},
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
