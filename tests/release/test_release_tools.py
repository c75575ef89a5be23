"""The release tooling in ci/: the wheel audit's checks, the per-variant
package index, the matrix plan, and the variant label of the installed build."""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import torch

import kernforge_core

CI = Path(__file__).resolve().parents[2] / "ci"
sys.path.insert(0, str(CI))
import audit_wheels  # noqa: E402
import build_progress  # noqa: E402
import make_index  # noqa: E402


def test_arch_list_gives_sass_and_ptx():
    sass, ptx = audit_wheels.expected_archs("7.5;8.0 9.0;12.0+PTX")
    assert sass == {"sm_75", "sm_80", "sm_90", "sm_120"}
    assert ptx == {"sm_120"}


def test_installed_library_leaves_only_allowed_symbols_undefined():
    cuda_major = torch.version.cuda.split(".")[0] if kernforge_core.has_cuda_kernels() else None
    assert audit_wheels.symbol_problems(Path(kernforge_core.LIBRARY_PATH), cuda_major) == []


def test_torch_cxx_symbols_are_caught(tmp_path):
    # A library calling a C++ function of c10 (as code built against torch's
    # C++ API would) instead of a stable C shim.
    src = tmp_path / "bad.cpp"
    src.write_text(
        "namespace c10 { void warn_once(int); }\n"
        'extern "C" int aoti_torch_get_numel(void*, long*);\n'
        'extern "C" void f(void* t, long* n) { c10::warn_once(1); aoti_torch_get_numel(t, n); }\n'
    )
    lib = tmp_path / "libbad.so"
    subprocess.run(["g++", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    assert audit_wheels.symbol_problems(lib, None) == ["_ZN3c109warn_onceEi"]


def test_a_statically_linked_libstdcxx_passes_and_torch_symbols_are_still_caught(tmp_path):
    # Linking libstdc++ in (-static-libstdc++, or a compiler configured so)
    # leaves weak references to the transactional-memory runtime.
    src = tmp_path / "static.cpp"
    src.write_text(
        "#include <stdexcept>\n#include <vector>\n"
        "namespace c10 { void warn_once(int); }\n"
        'extern "C" int f(int n) { std::vector<int> v(n); if (n < 0) throw std::logic_error("n");'
        " c10::warn_once(n); return v.size(); }\n"
    )
    lib = tmp_path / "libstatic.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-static-libstdc++", str(src), "-o", str(lib)], check=True)
    weak = [name for name, _, kind in audit_wheels.undefined_symbols(lib) if kind == "w"]
    assert any(name.startswith("_ITM_R") for name in weak), weak
    assert audit_wheels.symbol_problems(lib, None) == ["_ZN3c109warn_onceEi"]


def test_installed_version_carries_the_variant():
    label = version("kernforge-core").partition("+")[2]
    expected = f"cu{torch.version.cuda.split('.')[0]}" if kernforge_core.has_cuda_kernels() else "cpu"
    assert label == expected
    assert version("kernforge-legacy").partition("+")[2] == expected


def test_index_lists_each_project_with_its_hash(tmp_path, monkeypatch):
    wheelhouse = tmp_path / "wheelhouse" / "wheelhouse-cu13"
    wheelhouse.mkdir(parents=True)
    names = [
        "kernforge_core-0.1.0+cu13-cp310-abi3-manylinux_2_28_x86_64.whl",
        "kernforge-0.1.0-py3-none-any.whl",
    ]
    for i, name in enumerate(names):
        (wheelhouse / name).write_bytes(b"wheel %d" % i)
    monkeypatch.setattr(sys, "argv", ["make_index.py", str(tmp_path / "wheelhouse"), str(tmp_path / "site")])
    assert make_index.main() == 0
    root = tmp_path / "site" / "whl" / "cu13"
    assert '<a href="kernforge-core/">' in (root / "index.html").read_text()
    page = (root / "kernforge-core" / "index.html").read_text()
    digest = hashlib.sha256(b"wheel 0").hexdigest()
    assert f'href="kernforge_core-0.1.0+cu13-cp310-abi3-manylinux_2_28_x86_64.whl#sha256={digest}"' in page
    assert (root / "kernforge" / names[1]).read_bytes() == b"wheel 1"


@pytest.mark.parametrize("corners", [False, True])
def test_matrix_plan(tmp_path, corners):
    # ci/run_matrix.py runs under nox's interpreter; it reads ci/matrix.toml with
    # tomllib (3.11+), which the matrix's Python 3.10 cells do not have.
    pytest.importorskip("tomllib", reason="ci/run_matrix.py needs Python 3.11+ (tomllib)")
    import run_matrix

    args = argparse.Namespace(torch=None, python=None, corners=corners, dist=tmp_path)
    cells, excluded = run_matrix.plan(args)
    pairs = [(c.torch, c.python) for c in cells]
    assert not set(pairs) & set(excluded)
    torches, pythons = run_matrix.MATRIX["torch"]["versions"], run_matrix.MATRIX["python"]["versions"]
    if corners:
        assert pairs == [(torches[0], pythons[0]), (torches[-1], pythons[-1])]
    else:
        assert len(pairs) == len(torches) * len(pythons) - len(excluded)
        assert {c.variant for c in cells} == {"cpu"}  # no CUDA wheels in dist: no CUDA cells


def test_builds_run_side_by_side_and_a_failure_shows_its_log(tmp_path, capsys):
    # Each job waits for the other's file and fails without it: both must run at once.
    def job(name, other, code):
        script = (
            "import pathlib, sys, time; "
            f"pathlib.Path({str(tmp_path / name)!r}).touch(); "
            f"other = pathlib.Path({str(tmp_path / other)!r}); "
            "[time.sleep(0.05) for _ in range(200) if not other.exists()]; "
            f"print('[1/2] c++ -c csrc/{name}.cpp -o {name}.o'); print('Successfully built {name}'); "
            f"print('the last words of {name}'); sys.exit({code} if other.exists() else 9)"
        )
        return f"--job={name}={sys.executable} -c {script!r}"

    logs = tmp_path / "logs"
    assert build_progress.main(["--logs", str(logs), job("core", "legacy", 0), job("legacy", "core", 0)]) == 0
    out = capsys.readouterr().out
    assert "  core [1/2] compile csrc/core.cpp" in out and "  legacy: Successfully built legacy" in out
    assert "built in " in out and "the last words" not in out
    assert "the last words of core" in (logs / "core.log").read_text()

    (tmp_path / "core").unlink()
    (tmp_path / "legacy").unlink()
    assert build_progress.main(["--logs", str(logs), job("core", "legacy", 0), job("legacy", "core", 3)]) == 1
    err = capsys.readouterr().err
    assert "the last words of legacy" in err and "legacy: build failed (exit 3)" in err
    assert "core: build failed" not in err
    with pytest.raises(ValueError, match="--job needs NAME=COMMAND"):
        build_progress.parse_job("no_command=")
