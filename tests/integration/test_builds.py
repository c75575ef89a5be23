"""The just-in-time flavour (builds from the source checkout into torch's
extension cache, incrementally after an edit) and the pure-PyTorch fallback,
each in a fresh interpreter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "packages" / "kernforge-core"

CHECK = """
import torch, kernforge_core
assert kernforge_core.BUILD == "jit", kernforge_core.BUILD
a, b = torch.randn(100), torch.randn(100)
torch.testing.assert_close(kernforge_core.mul(a, b), a * b)
print(kernforge_core.LIBRARY_PATH)
"""


def _run(code: str, env: dict, cwd: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _compiled_objects(build_dir: Path) -> int:
    """How many objects ninja compiled so far (.ninja_log: start, end, mtime, output, hash)."""
    lines = (build_dir / ".ninja_log").read_text().splitlines()
    return sum(1 for line in lines if not line.startswith("#") and line.split("\t")[3].endswith(".o"))


@pytest.mark.slow
def test_jit_builds_then_rebuilds_only_what_changed(tmp_path):
    # A private copy of the sources, so the test can edit one.
    src = tmp_path / "kernforge-core"
    shutil.copytree(CORE / "csrc", src / "csrc")
    shutil.copytree(CORE / "src", src / "src")
    env = dict(
        os.environ,
        KERNFORGE_JIT="1",
        KERNFORGE_CUDA="0",
        TORCH_EXTENSIONS_DIR=str(tmp_path / "cache"),
        PYTHONPATH=str(src / "src"),
    )
    lib = Path(_run(CHECK, env, tmp_path).strip().splitlines()[-1])
    build_dir = lib.parent
    first = _compiled_objects(build_dir)
    assert first == len(list((src / "csrc").glob("*.cpp"))) + len(list((src / "csrc").glob("*/*_cpu.cpp")))

    _run(CHECK, env, tmp_path)  # nothing changed: nothing recompiled
    assert _compiled_objects(build_dir) == first

    edited = src / "csrc" / "mul" / "mul_cpu.cpp"
    edited.write_text(edited.read_text() + "\n// edited\n")
    _run(CHECK, env, tmp_path)  # one source changed: one object recompiled
    assert _compiled_objects(build_dir) == first + 1


def test_reference_fallback_on_request():
    env = dict(os.environ, KERNFORGE_REFERENCE="1")
    out = _run(
        "import torch, kernforge\n"
        "assert kernforge.functional.BACKEND == 'reference'\n"
        "assert kernforge.mul is kernforge.reference.mul\n"
        "a = torch.randn(5)\n"
        "print(float((kernforge.fused_relu_add(a, a, 1.0) - (a.relu() + a + 1)).abs().max()))\n",
        env,
        ROOT,
    )
    assert float(out.strip()) == 0.0


def test_kernels_are_the_default():
    out = _run("import kernforge\nprint(kernforge.functional.BACKEND)\n", dict(os.environ), ROOT)
    assert out.strip() == "kernels"
