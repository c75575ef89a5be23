"""Pages rendered at build time, so that the site never restates a fact kept
elsewhere: the support matrix from ci/matrix.toml, and the benchmark report
of each stored run (benchmarks/results/<device>.json, written by
``nox -s bench -- --publish``) with benchmarks/report.py, plots included.
Both land in docs/_generated/, which the pages include."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "docs" / "_generated"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def render_matrix() -> str:
    """Markdown tables of ci/matrix.toml: the torch x Python cells that
    `nox -s matrix` runs (ci/run_matrix.py's own plan), then the variants."""
    run_matrix = _load("kernforge_run_matrix", ROOT / "ci" / "run_matrix.py")
    matrix = run_matrix.MATRIX
    cuda_variants = [name for name, v in matrix["variants"].items() if "cuda" in v]
    cells, excluded = run_matrix.cells(None, None, cuda_variants)
    pythons = matrix["python"]["versions"]
    lines = [
        "| torch | " + " | ".join(f"Python {p}" for p in pythons) + " |",
        "| --- |" + " --- |" * len(pythons),
    ]
    for torch in matrix["torch"]["versions"]:
        row = []
        for python in pythons:
            found = [c.variant for c in cells if (c.torch, c.python) == (torch, python)]
            row.append(", ".join(found) if found else f"none: {excluded.get((torch, python), 'not run')}")
        lines.append(f"| {torch} | " + " | ".join(row) + " |")
    lines += [
        "",
        "Each cell names the wheel variants `nox -s matrix` installs and tests there, with the newest "
        "torch release of that minor version: the CPU suite, and for a CUDA wheel a check that it loads "
        f"and registers its CUDA kernels. `nox -s test-cpu` uses torch {matrix['torch']['cpu-default']}; "
        f"the GPU host has torch {matrix['torch']['gpu-host']}. Every binary wheel is tagged "
        f"`{matrix['python']['abi3-floor']}-abi3`.",
        "",
        "| variant | built against torch | CUDA | architectures (TORCH_CUDA_ARCH_LIST) | loads with torch |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, v in matrix["variants"].items():
        loads = ", ".join(v["torch-versions"]) if "torch-versions" in v else "every version above"
        arch = v.get("arch-list", "none").replace(";", ", ")
        lines.append(f"| `{name}` | {v['torch']} | {v.get('cuda', 'none')} | {arch} | {loads} |")
    requires = ", ".join(f"`{r}`" for r in matrix["tests"]["requires"])
    lines += ["", f"Every test run also installs {requires}."]
    return "\n".join(lines) + "\n"


def generate(app) -> None:
    GENERATED.mkdir(exist_ok=True)
    (GENERATED / "matrix.md").write_text(render_matrix())
    report = _load("kernforge_bench_report", ROOT / "benchmarks" / "report.py")
    for results in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        report.write_report(json.loads(results.read_text()), GENERATED / "performance")


def setup(app):
    app.connect("builder-inited", generate)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
