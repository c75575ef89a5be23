"""`nox -s new-op -- NAME` (kernforge_core/scaffold.py): the names it refuses,
and a generated op that builds and passes its own tests at once, in a
temporary copy of the checkout."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCAFFOLD = ROOT / "packages" / "kernforge-core" / "src" / "kernforge_core" / "scaffold.py"


def _load_scaffold():
    spec = importlib.util.spec_from_file_location("kernforge_scaffold", SCAFFOLD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scaffold = _load_scaffold()


def _copy_checkout(dest: Path) -> Path:
    return scaffold.copy_checkout(ROOT, dest)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "name,message",
    [
        ("mul", "op 'mul' exists: packages/kernforge-core/csrc/mul is already there"),
        (
            "lltm_forward",
            "op 'lltm_forward' exists, or clashes with a name in use: 'lltm_forward' appears in",
        ),
        (
            "add_backward",
            "op 'add_backward' exists, or clashes with a name in use: 'add_backward' appears in",
        ),
        ("dispatch", "'dispatch' appears in packages/kernforge-core/csrc/common/"),
        ("Mul2", "'Mul2' is not a valid op name: use a lowercase identifier"),
        ("2x", "'2x' is not a valid op name"),
        ("my-op", "'my-op' is not a valid op name"),
        ("_hidden", "'_hidden' is not a valid op name"),
        ("", "'' is not a valid op name"),
        ("lambda", "'lambda' is a Python keyword"),
        ("sum", "'sum' is a Python builtin"),
        ("delete", "'delete' is a C++ keyword"),
        ("name", "'name' is reserved by torch.ops"),
    ],
)
def test_refuses_a_name_that_exists_or_is_not_valid(tmp_path, name, message):
    root = _copy_checkout(tmp_path)
    before = _snapshot(root)
    with pytest.raises(scaffold.ScaffoldError) as err:
        scaffold.write(name, root)
    assert message in str(err.value)
    assert _snapshot(root) == before  # nothing written


def test_command_line_refusal_exits_2_with_the_message(tmp_path):
    root = _copy_checkout(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(SCAFFOLD), "mul", "--root", str(root), "--no-format"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("new-op: op 'mul' exists")


def test_refuses_a_checkout_it_cannot_edit(tmp_path):
    root = _copy_checkout(tmp_path)
    registration = root / "packages" / "kernforge-core" / "csrc" / "registration.cpp"
    registration.write_text(registration.read_text().replace("STABLE_TORCH_LIBRARY(kernforge, m)", "X"))
    before = _snapshot(root)
    with pytest.raises(scaffold.ScaffoldError, match="no `STABLE_TORCH_LIBRARY"):
        scaffold.write("gated_mul", root)
    assert _snapshot(root) == before


@pytest.mark.slow  # a build: test-cpu runs it; the installed-wheel cells (no pip, no compiler) do not
def test_generated_op_builds_and_passes_its_tests(tmp_path):
    """The generated op, built (with the CUDA kernels where a GPU is there)
    and installed from the copy, passes its own tests and the every-op
    hardening tests it joined; the existing ops still pass theirs."""
    name = "gated_scale"
    root = _copy_checkout(tmp_path / "checkout")
    written = scaffold.write(name, root)
    assert Path("tests/core/test_gated_scale.py") in written
    cuda = torch.cuda.is_available()
    site = tmp_path / "site"
    env = dict(os.environ, KERNFORGE_CUDA="1" if cuda else "0")
    if cuda:
        env.setdefault("TORCH_CUDA_ARCH_LIST", "{}.{}".format(*torch.cuda.get_device_capability()))
    # The op touches kernforge-core and kernforge; kernforge-legacy comes from
    # this session's install (its runtime is not built a second time).
    packages = [str(root / "packages" / p) for p in ("kernforge-core", "kernforge")]
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
         "--target", str(site), *packages],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    env["PYTHONPATH"] = str(site)
    marks = "not slow and not huge and not multi_gpu" if cuda else "not cuda"
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", marks,
         f"tests/core/test_{name}.py", "tests/hardening", "tests/core/test_elementwise.py", "-k",
         f"{name} or mul"],
        cwd=root, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    summary = tests.stdout.strip().splitlines()[-1]
    print(f"generated op's tests, {'CUDA' if cuda else 'CPU'} build: {summary}")  # shown by pytest -rP
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary
    # The new op's own tests ran, the hardening tests picked it up, and the
    # installed kernforge is the copy's, not this checkout's.
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", "tests",
         "-k", name],
        cwd=root, env=env, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert f"tests/core/test_{name}.py::test_forward_matches_reference" in collected
    assert (
        "tests/hardening/test_determinism.py" in collected and "tests/hardening/test_layouts.py" in collected
    )
    assert str(site) in subprocess.run(
        [sys.executable, "-c", f"import kernforge; print(kernforge.{name}.__module__, kernforge.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
