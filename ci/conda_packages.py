"""kernforge's conda packages, assembled from the built wheels by the metadata
conda-recipe/recipe.yaml renders to (nox -s conda), and the recipe check (nox -s lint).

    python ci/conda_packages.py check
    python ci/conda_packages.py build [--variants cpu cu13] [--dist dist] [--work .nox/conda-work]

`check` renders the recipe with rattler-build's own parser for every variant
of ci/matrix.toml (variants x Python versions) and fails unless each binary
output renders once per variant and Python and `kernforge` once (noarch).

`build` does, for each variant whose wheels are in dist/VARIANT/:
  1. renders the recipe; each output's name, version, build string, depends
     (pin_subpackage resolved) and run_exports come from there;
  2. assembles the .conda packages from the wheels' files (rattler-build's
     package assembler; run_exports.json added to info/): kernforge-core and
     kernforge-legacy per Python under lib/pythonX.Y/site-packages, kernforge
     noarch: python. Depends are the recipe's run requirements plus python's
     own run_export (python >=3.11,<3.12.0a0); the toolchain's run_exports
     (libgcc, libstdcxx, __glibc, cuda-version) come only from a real build;
  3. indexes a local channel (py-rattler) and solves `kernforge` from it (py-rattler)
     against the test environment's own python, pytorch, ninja and setuptools
     as locked records, so the recipe's pins must hold for that environment;
  4. installs the solved kernforge packages into that environment with
     py-rattler and runs the CPU test suite there.
No conda channel is reachable from the machines this runs on, so the test
environment (the prefix) is a venv: the variant's torch from the package index
(a CPU build for cpu, a CUDA build for cuXX), and the python, pytorch, ninja
and setuptools it holds are recorded in its conda-meta as the installed
packages py-rattler links against.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import rattler
import rattler_build as rb
import tomllib
import zstandard

ROOT = Path(__file__).resolve().parents[1]
MATRIX = tomllib.loads((ROOT / "ci" / "matrix.toml").read_text())
RECIPE = ROOT / "conda-recipe" / "recipe.yaml"
PLATFORM = "linux-64"
# What conda-forge's global pinning would supply for a linux-64 build.
TOOLCHAIN = {
    "c_compiler": ["gcc"],
    "cxx_compiler": ["gxx"],
    "cuda_compiler": ["cuda-nvcc"],
    "c_stdlib": ["sysroot"],
    "c_stdlib_version": ["2.28"],
}


@dataclass
class Output:
    name: str
    version: str
    build: str
    variant: str  # cpu, cu12, cu13
    python: str | None  # None: noarch
    depends: list[str]
    run_exports: dict[str, list[str]] = field(default_factory=dict)

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.version}-{self.build}.conda"


def variant_config(variants: list[str]) -> rb.VariantConfig:
    """The recipe's variant keys, from ci/matrix.toml."""
    specs = [MATRIX["variants"][v] for v in variants]
    return rb.VariantConfig(
        {
            "kernforge_variant": variants,
            "cuda_compiler_version": [s.get("cuda", "None") for s in specs],
            "cuda_arch_list": [s.get("arch-list", "") for s in specs],
            "python": MATRIX["python"]["versions"],
            "python_min": [MATRIX["python"]["versions"][0]],
            "pytorch": [MATRIX["torch"]["versions"][0]],
            **TOOLCHAIN,
        },
        zip_keys=[["kernforge_variant", "cuda_compiler_version", "cuda_arch_list"]],
    )


def _pin(spec: dict, versions: dict[str, str]) -> str:
    """A resolved pin_subpackage: name >=lower,<upper (conda's x.x bounds)."""
    name = spec["name"]
    parts = versions[name].split(".")
    lower = ".".join(parts[: spec["lower_bound"].count("x")])
    n = spec["upper_bound"].count("x")
    upper = [*parts[: n - 1], str(int(parts[n - 1]) + 1)] if n <= len(parts) else parts
    return f"{name} >={lower},<{'.'.join(upper)}.0a0"


def render(variants: list[str]) -> list[Output]:
    recipe = rb.Stage0Recipe.from_file(RECIPE)
    config = rb.RenderConfig(platform=rb.PlatformConfig(target_platform=PLATFORM))
    rendered = [
        v.recipe.to_dict() | {"_variant": v.variant} for v in recipe.render(variant_config(variants), config)
    ]
    versions = {r["package"]["name"]: r["package"]["version"] for r in rendered}
    outputs = []
    for r in rendered:
        req = r.get("requirements", {})
        resolve = lambda items: [
            _pin(i["pin_subpackage"], versions) if isinstance(i, dict) else i for i in items
        ]
        python = None if r["build"].get("noarch") == "python" else r["_variant"]["python"]
        depends = resolve(req.get("run", []))
        if python is not None:  # python's own run_export, which a real build adds from the host env
            major, minor = python.split(".")
            depends = [d for d in depends if d != "python"] + [
                f"python >={python},<{major}.{int(minor) + 1}.0a0"
            ]
        outputs.append(
            Output(
                name=r["package"]["name"],
                version=r["package"]["version"],
                build=r["build"]["string"],
                variant=r["_variant"].get("kernforge_variant", ""),
                python=python,
                depends=depends,
                run_exports={k: resolve(v) for k, v in (req.get("run_exports") or {}).items()},
            )
        )
    return outputs


def check() -> int:
    variants = list(MATRIX["variants"])
    outputs = render(variants)
    pythons = MATRIX["python"]["versions"]
    problems = []
    for name in ("kernforge-core", "kernforge-legacy"):
        got = sorted((o.variant, o.python) for o in outputs if o.name == name)
        want = sorted((v, p) for v in variants for p in pythons)
        if got != want:
            problems.append(f"{name}: rendered for {got}, expected every variant x Python {want}")
        for o in (o for o in outputs if o.name == name):
            if not o.build.startswith(f"{o.variant}_py{o.python.replace('.', '')}"):
                problems.append(f"{name}: build string {o.build} does not start with {o.variant}_py...")
            if not o.run_exports.get("weak"):
                problems.append(f"{name}: no run_exports")
    meta = next(o for o in outputs if o.name == "kernforge")
    head, last = meta.version.rsplit(".", 1)
    for name in ("kernforge-core", "kernforge-legacy"):  # pin_subpackage(upper_bound="x.x.x")
        pin = f"{name} >={meta.version},<{head}.{int(last) + 1}.0a0"
        if pin not in meta.depends:
            problems.append(f"kernforge: depends {meta.depends} lack {pin!r}")
    noarch = {o.build for o in outputs if o.name == "kernforge"}
    if len(noarch) != 1:
        problems.append(f"kernforge: {len(noarch)} distinct noarch builds ({sorted(noarch)}), expected one")
    for file_name, o in {o.file_name: o for o in outputs}.items():
        print(f"{file_name:55} depends: {', '.join(o.depends)}")
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    print(f"recipe {RECIPE.relative_to(ROOT)}: {len(outputs)} outputs rendered, {len(problems)} problems")
    return 1 if problems else 0


def _wheel(dist: Path, variant: str, name: str) -> Path:
    found = sorted((dist / variant).glob(f"{name.replace('-', '_')}-*.whl"))
    if len(found) != 1:
        raise SystemExit(f"expected one {name} wheel in {dist / variant}, found {[f.name for f in found]}")
    return found[0]


def assemble(output: Output, wheel: Path, channel: Path, staging: Path) -> Path:
    shutil.rmtree(staging, ignore_errors=True)
    site = staging / (
        "site-packages" if output.python is None else f"lib/python{output.python}/site-packages"
    )
    site.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    for so in site.rglob("*.so"):  # zip extraction drops the mode bits
        so.chmod(0o755)
    subdir = "noarch" if output.python is None else PLATFORM
    built = rb.assemble_package(
        name=output.name,
        version=output.version,
        target_platform=subdir,
        build_string=output.build,
        output_dir=channel / subdir,
        files_dir=staging,
        depends=output.depends,
        noarch="python" if output.python is None else None,
        license="BSD-3-Clause",
        summary="Fast custom PyTorch operators in C++ and CUDA, on torch's stable ABI",
        homepage="https://github.com/kernforge/kernforge",
        timestamp=None,
    ).path
    if output.run_exports:
        _add_info_file(built, "info/run_exports.json", json.dumps(output.run_exports, indent=2).encode())
    return built


def _add_info_file(package: Path, name: str, data: bytes) -> None:
    """Adds a file to the info-*.tar.zst inside a .conda archive."""
    with zipfile.ZipFile(package) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    info_name = next(n for n in members if n.startswith("info-"))
    tar_bytes = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(members[info_name])).read()
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as src, tarfile.open(fileobj=out, mode="w") as dst:
        for member in src.getmembers():
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        entry = tarfile.TarInfo(name)
        entry.size, entry.mode = len(data), 0o644
        dst.addfile(entry, io.BytesIO(data))
    members[info_name] = zstandard.ZstdCompressor(level=19).compress(out.getvalue())
    with zipfile.ZipFile(package, "w", zipfile.ZIP_STORED) as zf:
        for member, content in members.items():
            zf.writestr(member, content)


def _venv_python(prefix: Path) -> Path:
    return prefix / "bin" / "python"


def make_prefix(prefix: Path, variant: str, python: str) -> dict[str, str]:
    """A venv holding the variant's torch; returns what it holds (name -> version)."""
    shutil.rmtree(prefix, ignore_errors=True)
    torch = MATRIX["variants"][variant]["torch"]
    subprocess.run([sys.executable, "-m", "venv", str(prefix)], check=True)
    pip = [str(_venv_python(prefix)), "-m", "pip", "install", "-q"]
    tests = MATRIX["tests"]["requires"]
    subprocess.run([*pip, f"torch=={torch}", "ninja", "setuptools>=64", *tests], check=True)
    probe = (
        "import sys, torch, ninja, setuptools; from importlib.metadata import version as v\n"
        "print(f'{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}')\n"
        "print(torch.__version__.split('+')[0], torch.version.cuda or '')\n"
        "print(v('ninja'), v('setuptools'))\n"
    )
    lines = subprocess.run(
        [_venv_python(prefix), "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    py_version, torch_line, tools = lines.splitlines()
    torch_version, cuda = torch_line.split(" ") if " " in torch_line else (torch_line, "")
    ninja_version, setuptools_version = tools.split()
    if python != ".".join(py_version.split(".")[:2]):
        raise SystemExit(f"{prefix} has Python {py_version}, expected {python}")
    return {
        "python": py_version,
        "pytorch": torch_version,
        "pytorch-build": f"cuda{cuda.replace('.', '')}_pypi_0" if cuda else "cpu_pypi_0",
        "ninja": ninja_version,
        "setuptools": setuptools_version,
    }


def _env_records(env: dict[str, str], prefix: Path) -> list[rattler.RepoDataRecord]:
    """Records of what the venv holds, as a conda installer would have them."""
    builds = {"pytorch": env["pytorch-build"]}
    records = []
    for name in ("python", "pytorch", "ninja", "setuptools"):
        build = builds.get(name, "pypi_0")
        package = rattler.PackageRecord(
            name=name, version=env[name], build=rattler.BuildString(build), build_number=0, subdir=PLATFORM
        )
        file_name = f"{name}-{env[name]}-{build}.conda"
        url = (prefix.resolve() / "conda-meta" / file_name).as_uri()
        records.append(rattler.RepoDataRecord(package, file_name, url, prefix.resolve().as_uri()))
    return records


async def _solve_and_install(channel: Path, env: dict[str, str], prefix: Path) -> list[str]:
    locked = _env_records(env, prefix)
    local = rattler.Channel(channel.resolve().as_uri())
    sources = [
        rattler.SparseRepoData(local, sub, channel / sub / "repodata.json") for sub in ("noarch", PLATFORM)
    ]
    solved = await rattler.solve(
        sources, ["kernforge"], platforms=[PLATFORM, "noarch"], locked_packages=locked, pinned_packages=locked
    )
    # The venv already holds its own packages: the transaction leaves them
    # alone, links kernforge's, and takes the Python version for the noarch one
    # from the solved python record.
    await rattler.install(
        solved, prefix, installed_packages=[], ignored_packages={r.name.normalized for r in locked},
        show_progress=False,
    )  # fmt: skip
    return [f"{r.name.normalized}-{r.version}-{r.build}" for r in solved]


def build(variants: list[str], dist: Path, work: Path, full: bool = False) -> int:
    channel = work / "channel"
    shutil.rmtree(channel, ignore_errors=True)
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    failed = []
    for variant in variants:
        outputs = [o for o in render([variant]) if o.python in (None, python) or o.name != "kernforge"]
        for output in outputs:
            if output.name == "kernforge" and (channel / "noarch" / output.file_name).exists():
                continue
            path = assemble(output, _wheel(dist, variant, output.name), channel, work / "staging")
            print(f"assembled {path.relative_to(work)}")
        asyncio.run(rattler.index.index_fs(channel, force=True))
        prefix = work / f"prefix-{variant}"
        env = make_prefix(prefix, variant, python)
        print(f"{variant}: test prefix {prefix} holds " + ", ".join(f"{k} {v}" for k, v in env.items()))
        solved = asyncio.run(_solve_and_install(channel, env, prefix))
        print(f"{variant}: solved and installed: {', '.join(solved)}")
        check_load = (
            "import kernforge, kernforge_core, kernforge_legacy, sys\n"
            f"assert kernforge_core.__file__.startswith({str(prefix)!r}), kernforge_core.__file__\n"
            f"assert kernforge_core.has_cuda_kernels() == {variant != 'cpu'}\n"
            "print('loaded', kernforge_core.LIBRARY_PATH)\n"
        )
        py = str(_venv_python(prefix))
        selection = ["tests"] if full else MATRIX["tests"]["smoke"]
        pytest = [py, "-m", "pytest", *selection, "-m", "not cuda and not slow", "-n", "auto", "-q"]
        steps = [[py, "-c", check_load], pytest]
        env_vars = {k: v for k, v in os.environ.items() if not k.startswith(("KERNFORGE_", "PYTHONPATH"))}
        env_vars["TORCH_EXTENSIONS_DIR"] = str(work / f"torch_extensions-{variant}")
        for step in steps:
            if subprocess.run(step, cwd=ROOT, env=env_vars).returncode != 0:
                failed.append(variant)
                break
    print("conda packages:", ", ".join(sorted(p.name for p in channel.rglob("*.conda"))))
    if failed:
        print(f"FAIL: the CPU suite failed against the conda prefix of {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["check", "build"])
    parser.add_argument("--variants", nargs="+", help="default: every variant with wheels in dist/")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist")
    parser.add_argument("--work", type=Path, default=ROOT / ".nox" / "conda-work")
    parser.add_argument("--full", action="store_true", help="the whole CPU suite, not the smoke set")
    args = parser.parse_args()
    if args.command == "check":
        return check()
    variants = args.variants or [v for v in MATRIX["variants"] if any((args.dist / v).glob("*.whl"))]
    if not variants:
        raise SystemExit(f"no wheels under {args.dist}: run `nox -s wheels -- cpu` first")
    unknown = [v for v in variants if v not in MATRIX["variants"]]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}: ci/matrix.toml has {list(MATRIX['variants'])}")
    return build(variants, args.dist, args.work, args.full)


if __name__ == "__main__":
    sys.exit(main())
