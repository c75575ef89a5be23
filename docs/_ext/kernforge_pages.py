"""Pages rendered at build time, so that the site never restates a fact kept
elsewhere: the support matrix from ci/matrix.toml, the benchmark report of
each stored run (benchmarks/results/<device>.json, written by
``nox -s bench -- --publish``) with benchmarks/report.py, plots included, and
kernforge-legacy's coverage of the 2017 TH/THC API, read from its own
headers. All land in docs/_generated/, which the pages include."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tempfile
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


LEGACY = ROOT / "packages" / "kernforge-legacy"


def th_coverage() -> list[tuple[str, str, str | None]]:
    """(2017 header, function, how kernforge-legacy provides it) for every
    function of the 2017 TH/THC headers (th_api_2017.tsv, written by
    ci/th_api_2017.py): "declared" by its TH/TH.h or THC/THC.h after the C
    preprocessor (the X-macro lists expanded), "macro" where one of its
    headers defines it as a function-like macro (THCudaMalloc), else None."""
    include = LEGACY / "src" / "kernforge_legacy" / "include"
    with tempfile.TemporaryDirectory() as tmp:
        # only CUDA's, cuBLAS's and cuSPARSE's type names are needed to read the declarations
        (Path(tmp) / "cuda_runtime_api.h").write_text(
            "typedef struct CUstream_st *cudaStream_t;\ntypedef int cudaError_t;\n"
        )
        (Path(tmp) / "cublas_v2.h").write_text(
            "typedef struct cublasContext *cublasHandle_t;\ntypedef int cublasStatus_t;\n"
        )
        (Path(tmp) / "cusparse.h").write_text(
            "typedef struct cusparseContext *cusparseHandle_t;\ntypedef int cusparseStatus_t;\n"
        )
        (Path(tmp) / "cuda.h").write_text("")
        declarations = subprocess.run(
            ["cc", "-E", "-P", "-x", "c", f"-I{tmp}", f"-I{include}", "-DKERNFORGE_LEGACY_WITH_CUDA", "-"],
            input="#include <TH/TH.h>\n#include <THC/THC.h>\n",
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    # TH's names, and its underscored ones (_THError, __THCudaCheck)
    declared = set(re.findall(r"(?<![\w])(_{0,2}TH\w*)\s*\(", declarations))
    macros = set()
    for header in include.rglob("*.h"):
        macros |= set(re.findall(r"^#define\s+(_{0,2}TH\w*)\(", header.read_text(), re.M))
    rows = [line.split("\t") for line in (LEGACY / "th_api_2017.tsv").read_text().splitlines()]
    how = {**{n: "macro" for n in macros}, **{n: "declared" for n in declared}}
    return [(header, name, how.get(name)) for header, name in rows]


def render_th_coverage() -> str:
    """The porting page's table: per 2017 header, how many of its functions
    kernforge-legacy provides, and which."""
    rows = th_coverage()
    headers: dict[str, list[tuple[str, bool]]] = {}
    for header, name, how in rows:
        headers.setdefault(header, []).append((name, how is not None))
    supported = sum(how is not None for _, _, how in rows)
    lines = [
        f"kernforge-legacy provides **{supported} of the {len(rows)} functions** that the 2017 TH and THC "
        "headers declared (TH of torch7 at 2017-09-26 and THC of cutorch at 2017-09-11, which PyTorch 0.2 "
        "vendored; each generic function counted once per element type, as the linker sees it). This "
        "table is read from kernforge-legacy's own headers when the site is built.",
        "",
        "| 2017 header | provided | provided functions |",
        "| --- | ---: | --- |",
    ]
    order = sorted(headers, key=lambda h: (-sum(ok for _, ok in headers[h]), h))
    for header in order:
        names = headers[header]
        have = [n for n, ok in names if ok]
        listed = ", ".join(f"`{n}`" for n in have) if have else "none"
        lines.append(f"| `{header}` | {len(have)} / {len(names)} | {listed} |")
    lines += [
        "",
        "Functions not provided, by header (a build that calls one fails with "
        "`kernforge_legacy.ffi.BuildError` naming it and its caller):",
        "",
    ]
    for header in order:
        missing = [n for n, ok in headers[header] if not ok]
        if missing:
            lines.append(f"- `{header}` ({len(missing)}): " + ", ".join(f"`{n}`" for n in missing))
    return "\n".join(lines) + "\n"


def generate(app) -> None:
    GENERATED.mkdir(exist_ok=True)
    (GENERATED / "matrix.md").write_text(render_matrix())
    (GENERATED / "th_coverage.md").write_text(render_th_coverage())
    report = _load("kernforge_bench_report", ROOT / "benchmarks" / "report.py")
    for results in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        report.write_report(json.loads(results.read_text()), GENERATED / "performance")


def setup(app):
    app.connect("builder-inited", generate)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
