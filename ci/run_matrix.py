"""Tests the built wheels on every torch x Python of ci/matrix.toml (nox -s matrix).

    python ci/run_matrix.py [--torch 2.10 2.15] [--python 3.10 3.13] [--corners]
    python ci/run_matrix.py --github-cells      (the cells, as JSON for a CI job matrix)

Each cell is a fresh venv (made with uv) holding the cell's interpreter, the
newest torch of the cell's minor version from the package index, a variant's
wheels from dist/VARIANT/ (never the source tree) and the test requirements. The cell
first checks that the packages load their installed binaries (and, for a CUDA
wheel, that its CUDA kernels registered), then runs the CPU test suite from
the checkout: the [tests] smoke modules of ci/matrix.toml, or with `--full`
the whole CPU suite (`pytest tests -m "not cuda and not slow"`).

The cpu wheels run on every torch x Python; a CUDA variant's wheels, where
dist/ has them, run on each torch of that variant (ci/matrix.toml) with
[matrix] cuda-wheel-python. `--corners` keeps two cells: the oldest torch with
the oldest Python and the newest with the newest (CI's slice). Prints a table
(also written to dist/matrix.md); exits 1 if any cell failed.

Downloads are cached per torch version under the work folder and dropped once
that version's cells are done: the CUDA builds of torch with their CUDA
libraries take several GB per version.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
MATRIX = tomllib.loads((ROOT / "ci" / "matrix.toml").read_text())

# Run inside a cell's venv: the packages must come from its site-packages.
LOAD_CHECK = """
import sys, sysconfig
from importlib.metadata import version
import torch, kernforge, kernforge_core, kernforge_legacy
from kernforge_legacy.ops import _ext
variant = sys.argv[1]
site = sysconfig.get_paths()["platlib"]
for mod in (kernforge, kernforge_core, kernforge_legacy):
    assert mod.__file__.startswith(site), f"{mod.__name__} imported from {mod.__file__}, not {site}"
assert kernforge_core.BUILD == "aot", kernforge_core.BUILD
label = version("kernforge-core").partition("+")[2]
assert label == variant == version("kernforge-legacy").partition("+")[2], (label, variant)
cuda = variant != "cpu"
assert kernforge_core.has_cuda_kernels() == cuda, "kernforge-core CUDA kernels registered: " + str(not cuda)
assert hasattr(_ext, "round_ste_forward_cuda") == cuda, "kernforge-legacy CUDA functions: " + str(not cuda)
assert kernforge.functional.BACKEND == "kernels", kernforge.functional.BACKEND
print("loaded", "torch", torch.__version__, "kernforge-core", version("kernforge-core"))
"""


@dataclass
class Cell:
    variant: str
    torch: str  # minor version, "2.10"
    python: str  # "3.10"
    status: str = "not run"
    detail: str = ""
    torch_installed: str = ""
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.variant}-torch{self.torch}-py{self.python}"


def find_python(version: str) -> str:
    """An interpreter of that version: on PATH, else under pyenv's versions."""
    candidates = [shutil.which(f"python{version}")]
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True)
    for exe in filter(None, candidates):
        probe = subprocess.run(
            [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return exe
    raise SystemExit(f"no Python {version} found (on PATH or under {pyenv_root}/versions)")


def plan(args: argparse.Namespace) -> tuple[list[Cell], dict[tuple[str, str], str]]:
    """The cells to run: those of `cells` for the variants whose wheels are in dist/."""
    built = [
        v for v, spec in MATRIX["variants"].items() if "cuda" in spec and any((args.dist / v).glob("*.whl"))
    ]
    return cells(args.torch, args.python, built, corners=args.corners)


def cells(
    torches: list[str] | None, pythons: list[str] | None, cuda_variants: list[str], corners: bool = False
) -> tuple[list[Cell], dict[tuple[str, str], str]]:
    """(the cells, the excluded (torch, python) pairs with why): the cpu wheels
    on every torch x Python, each CUDA variant of `cuda_variants` on each torch
    of that variant with [matrix] cuda-wheel-python. The docs' support matrix
    renders the full set."""
    torches = torches or MATRIX["torch"]["versions"]
    pythons = pythons or MATRIX["python"]["versions"]
    excluded = {(e["torch"], e["python"]): e["why"] for e in MATRIX["matrix"]["exclude"]}
    out = [Cell("cpu", t, p) for t in torches for p in pythons if (t, p) not in excluded]
    if corners:
        out = [out[0], out[-1]]
    else:
        py = MATRIX["matrix"]["cuda-wheel-python"]
        for variant in cuda_variants:
            out += [
                Cell(variant, t, py) for t in MATRIX["variants"][variant]["torch-versions"] if t in torches
            ]
    return sorted(out, key=lambda c: (tuple(map(int, c.torch.split("."))), c.variant, c.python)), excluded


STEPS = ["venv", "install", "load check", "tests"]


def test_selection(full: bool) -> list[str]:
    """pytest's arguments for a cell: the smoke modules, or every CPU test."""
    return [*(["tests"] if full else MATRIX["tests"]["smoke"]), "-m", "not cuda and not slow"]


def run_cell(cell: Cell, args: argparse.Namespace, cache: Path, tag: str) -> None:
    """Runs one cell's steps, printing each as it starts (`tag`: [k/N])."""
    work = args.work / cell.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = args.work / f"{cell.name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KERNFORGE_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(UV_CACHE_DIR=str(cache), TORCH_EXTENSIONS_DIR=str(work / "torch_extensions"))
    venv = work / "venv"
    python = venv / "bin" / "python"
    wheels = sorted(str(w) for w in (args.dist / cell.variant).glob("*.whl"))
    steps = [
        ["uv", "venv", "-q", "-p", find_python(cell.python), str(venv)],
        [
            "uv",
            "pip",
            "install",
            "-q",
            "-p",
            str(python),
            f"torch=={cell.torch}.*",
            *wheels,
            *MATRIX["tests"]["requires"],
        ],
        [str(python), "-c", LOAD_CHECK, cell.variant],
        [
            str(python),
            "-m",
            "pytest",
            *test_selection(args.full),
            "-n",
            "auto",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
    ]
    free = shutil.disk_usage(work).free / 2**30  # a torch CUDA build with its libraries takes about 7 GiB
    print(f"{tag} {cell.name}: {free:.1f} GiB free on the work folder's disk", flush=True)
    start = time.monotonic()
    with log.open("w") as out:
        for i, step in enumerate(steps):
            print(f"{tag} {cell.name}: {STEPS[i]} ({time.monotonic() - start:.0f} s)", flush=True)
            shown = [*step[:2], "LOAD_CHECK", *step[3:]] if step[1] == "-c" else step
            out.write(f"$ {' '.join(shown)}\n")
            out.flush()
            proc = subprocess.run(step, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                cell.status = "FAIL"
                cell.detail = STEPS[i]
                break
        else:
            cell.status = "pass"
    cell.seconds = time.monotonic() - start
    text = log.read_text()
    found = re.search(r"^loaded torch (\S+)", text, re.M)
    cell.torch_installed = found.group(1) if found else ""
    summary = re.findall(r"^=*\s*(\d+ (?:passed|failed).*?)\s*(?:in [\d.]+s.*)?=*$", text, re.M)
    if summary:
        counts = re.sub(r",? \d+ (deselected|warnings?)", "", summary[-1])
        cell.detail = counts if cell.status == "pass" else f"{cell.detail}: {counts}"
    shutil.rmtree(work, ignore_errors=True)  # the venv: several GB of hard links and copies
    print(f"{tag} {cell.name}: {cell.status} {cell.detail} ({cell.seconds:.0f} s, log {log})", flush=True)
    if cell.status != "pass":  # CI keeps only this output, not the log: say what failed
        failed = re.findall(r"^(?:FAILED|ERROR) .*$", text, re.M)
        print("\n".join(failed or text.splitlines()[-40:]), flush=True)
        report = text.find("= FAILURES =")  # pytest's report, from the first failure
        if report >= 0:
            print(text[report : report + 6000], flush=True)


def table(cells: list[Cell], excluded: dict[tuple[str, str], str]) -> str:
    pythons = MATRIX["python"]["versions"]
    rows = {}
    for cell in cells:
        rows.setdefault((cell.torch, cell.variant), {})[cell.python] = cell
    lines = [
        "| torch | wheels | " + " | ".join(f"Python {p}" for p in pythons) + " |",
        "| --- | --- | " + " | ".join("---" for _ in pythons) + " |",
    ]
    for (torch_minor, variant), by_python in rows.items():
        installed = {c.torch_installed for c in by_python.values() if c.torch_installed}
        label = f"{torch_minor} ({', '.join(sorted(installed))})" if installed else torch_minor
        entries = []
        for p in pythons:
            if p in by_python:
                c = by_python[p]
                entries.append(f"{'pass' if c.status == 'pass' else '**FAIL**'}: {c.detail}")
            elif (torch_minor, p) in excluded and variant == "cpu":
                entries.append(f"n/a: {excluded[(torch_minor, p)]}")
            else:
                entries.append("-")
        lines.append(f"| {label} | {variant} | " + " | ".join(entries) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--torch", nargs="+", help="torch minor versions (default: all in ci/matrix.toml)")
    parser.add_argument("--python", nargs="+", help="Python versions (default: all in ci/matrix.toml)")
    parser.add_argument("--corners", action="store_true", help="only oldest/oldest and newest/newest (cpu)")
    parser.add_argument("--full", action="store_true", help="the whole CPU suite, not the smoke set")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where dist/VARIANT/*.whl are")
    parser.add_argument("--github-cells", action="store_true", help="print cells=JSON for a CI job matrix")
    parser.add_argument("--work", type=Path, default=ROOT / ".nox" / "matrix-cells", help="venvs and logs")
    args = parser.parse_args()
    if not args.github_cells and not any((args.dist / "cpu").glob("*.whl")):
        raise SystemExit(f"no wheels in {args.dist / 'cpu'}: run `nox -s wheels -- cpu` first")
    cells, excluded = plan(args)
    if args.github_cells:  # one CI job per cell of the cpu wheels
        cpu_cells = [{"torch": c.torch, "python": c.python} for c in cells if c.variant == "cpu"]
        print("cells=" + json.dumps(cpu_cells))
        return 0
    print(f"{len(cells)} cells: " + ", ".join(c.name for c in cells), flush=True)
    done = 0
    for torch_minor in dict.fromkeys(c.torch for c in cells):
        cache = args.work / "uv-cache" / torch_minor
        for cell in (c for c in cells if c.torch == torch_minor):
            done += 1
            run_cell(cell, args, cache, f"[{done}/{len(cells)}]")
        shutil.rmtree(cache, ignore_errors=True)
    report = table(cells, excluded)
    (args.dist / "matrix.md").write_text(report + "\n")
    print("\n" + report)
    failed = [c.name for c in cells if c.status != "pass"]
    if failed:
        print(f"\n{len(failed)} of {len(cells)} cells failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
