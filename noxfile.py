"""Every kernforge workflow is a nox session; CI and people call the same ones.

    nox -s lint         ruff, and clang-format for the C++/CUDA sources
    nox -s build        wheels of the three packages into dist/
    nox -s test-cpu     fresh venv, torch from ci/matrix.toml, packages built and
                        installed, every test that needs no GPU
    nox -s test-cuda    on a GPU host: the whole suite, CUDA tests included
    nox -s bench        benchmarks and the table of speedups, on whatever device is there

Sessions that need a CUDA torch (test-cuda, and bench when one is there) reuse
the torch of the interpreter running nox, linked into the session's venv:
a GPU host has torch preinstalled and may have no network. Everything else
installs torch ``cpu-default`` from ci/matrix.toml.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from pathlib import Path

import nox
import tomllib

ROOT = Path(__file__).resolve().parent
MATRIX = tomllib.loads((ROOT / "ci" / "matrix.toml").read_text())
PACKAGES = ["packages/kernforge-core", "packages/kernforge-legacy", "packages/kernforge"]
LEGACY = ROOT / "packages" / "kernforge-legacy"
# The C, C++ and CUDA sources clang-format keeps (tests/legacy/fixtures stay as 2017 wrote them).
C_SOURCES = [
    ROOT / "packages" / "kernforge-core" / "csrc",
    LEGACY / "csrc",
    LEGACY / "src" / "kernforge_legacy" / "include",
    LEGACY / "src" / "kernforge_legacy" / "runtime",
]
BUILD_DEPS = ["setuptools>=77", "wheel", "ninja"]
TEST_DEPS = ["pytest", "numpy"]

nox.options.sessions = ["lint", "test-cpu"]
nox.options.reuse_venv = "no"


def _install_pinned_torch(session: nox.Session) -> None:
    session.install(f"torch=={MATRIX['torch']['cpu-default']}")


def _link_running_torch(session: nox.Session) -> None:
    """Makes the torch of the interpreter running nox importable in the
    session's venv (a .pth file pointing at that interpreter's site-packages)."""
    purelib = session.run(
        "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", silent=True
    ).strip()
    outer = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "_kernforge_outer_site.pth").write_text("\n".join(sorted(outer)) + "\n")


def _running_torch_has_cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.version.cuda is not None


def _install_packages(session: nox.Session, *, offline: bool = False) -> None:
    """Builds kernforge-core against the venv's torch and installs all three."""
    flags = ["--no-build-isolation", "--no-deps"]
    if offline:
        flags.append("--no-index")
    session.run("python", "-m", "pip", "install", "-q", *flags, *PACKAGES)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff", "clang-format")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    sources = sorted(
        str(p) for d in C_SOURCES for ext in ("*.h", "*.cuh", "*.c", "*.cpp", "*.cu") for p in d.rglob(ext)
    )
    session.run("clang-format", "--dry-run", "-Werror", *sources)


@nox.session
def build(session: nox.Session) -> None:
    """Wheels of the three packages into dist/ (kernforge-core: an abi3
    binary for the installed torch's variant; KERNFORGE_CUDA picks the build)."""
    _install_pinned_torch(session)
    session.install(*BUILD_DEPS, "build")
    for pkg in PACKAGES:
        session.run("python", "-m", "build", "--wheel", "--no-isolation", "--outdir", "dist", pkg)


@nox.session(name="test-cpu")
def test_cpu(session: nox.Session) -> None:
    _install_pinned_torch(session)
    session.install(*BUILD_DEPS, *TEST_DEPS)
    session.env["KERNFORGE_CUDA"] = "0"
    _install_packages(session)
    session.run("python", "-m", "pytest", "tests", "-m", "not cuda", *session.posargs)


@nox.session(name="test-cuda")
def test_cuda(session: nox.Session) -> None:
    if not _running_torch_has_cuda():
        session.error(
            f"test-cuda needs a CUDA build of torch in the interpreter running nox ({sys.executable})"
        )
    _link_running_torch(session)
    session.env["KERNFORGE_CUDA"] = "1"
    session.env.setdefault("TORCH_CUDA_ARCH_LIST", _local_gpu_arch(session))
    _install_packages(session, offline=True)
    session.run(
        "python", "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no GPU visible')"
    )
    session.run("python", "-m", "pytest", "tests", "-m", "not slow", *session.posargs)


def _local_gpu_arch(session: nox.Session) -> str:
    """The GPU's own architecture: a test build need not compile for the others."""
    return session.run(
        "python", "-c", "import torch; print('%d.%d' % torch.cuda.get_device_capability())", silent=True
    ).strip()


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks on the GPU when there is one, else on the CPU; prints the
    table of speedups and fails on a >10% median regression against
    benchmarks/baselines/<device>.json when that file exists.
    `nox -s bench -- --save-baseline` writes that file from this run."""
    save_baseline = "--save-baseline" in session.posargs
    posargs = [a for a in session.posargs if a != "--save-baseline"]
    if _running_torch_has_cuda():
        _link_running_torch(session)
        session.env["KERNFORGE_CUDA"] = "1"
        session.env.setdefault("TORCH_CUDA_ARCH_LIST", _local_gpu_arch(session))
        _install_packages(session, offline=True)
    else:
        _install_pinned_torch(session)
        session.install(*BUILD_DEPS, *TEST_DEPS, "pytest-benchmark")
        session.env["KERNFORGE_CUDA"] = "0"
        _install_packages(session)
    device = session.run(
        "python", str(ROOT / "benchmarks" / "report.py"), "--device-slug", silent=True
    ).strip()
    results = ROOT / "bench-results"
    results.mkdir(exist_ok=True)
    out_json = results / f"{device}.json"
    baseline = ROOT / "benchmarks" / "baselines" / f"{device}.json"
    compare = []
    if baseline.exists() and not save_baseline:
        compare = [f"--benchmark-compare={baseline}", "--benchmark-compare-fail=median:10%"]
    else:
        session.log(f"no baseline for {device} ({baseline.relative_to(ROOT)}): nothing to compare against")
    session.env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")])
    )
    session.run(
        "python",
        "-m",
        "pytest",
        "benchmarks",
        "-p",
        "no:cacheprovider",
        "--benchmark-only",
        "--benchmark-timer=cuda_timer.synchronized_clock",
        "--benchmark-disable-gc",  # as timeit does: no collector pauses inside a timed round
        f"--benchmark-json={out_json}",
        "--benchmark-columns=median,iqr,rounds,iterations",
        "--benchmark-sort=fullname",
        *compare,
        *posargs,
    )
    report = ["python", str(ROOT / "benchmarks" / "report.py"), str(out_json)]
    if save_baseline:
        report += ["--baseline-out", str(baseline)]
    session.run(*report)
