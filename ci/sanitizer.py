"""For `nox -s sanitize`: which tests racecheck runs, and how the log of one
compute-sanitizer tool over a pytest run reads: clean or not, and one line
that says why.

The sanitizer follows every process of the run (pytest and, under
pytest-xdist, each worker) and ends with one summary for all of them; past
its print limit it adds a second line, "ERROR SUMMARY: N errors were not
printed". The run is clean when the summary is clean and pytest's last line
reports passes and no failure or error (a worker that dies takes its test
down as failed).
"""

from __future__ import annotations

import re
from pathlib import Path

CLEAN = {
    "memcheck": "ERROR SUMMARY: 0 errors",
    "initcheck": "ERROR SUMMARY: 0 errors",
    "synccheck": "ERROR SUMMARY: 0 errors",
    "racecheck": "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)",
}


def racecheck_scope(root: Path) -> str:
    """racecheck finds hazards on shared memory only, so it runs the tests of
    the kernels that use it: a -k of each kernforge-core op whose csrc/<op>/
    says __shared__ (lltm also takes lltm_sequence), and the legacy test
    modules when kernforge-legacy's kernels or its fixtures' do. Today mul,
    add and the legacy kernels have none: their tests would only give
    racecheck torch's and cuBLAS's kernels to read, at its slowest."""

    def shares(folder: Path) -> bool:
        return any("__shared__" in f.read_text() for f in folder.rglob("*.cu*"))

    core = root / "packages" / "kernforge-core" / "csrc"
    scope = sorted(d.name for d in core.iterdir() if d.is_dir() and shares(d))
    legacy, tests = root / "packages" / "kernforge-legacy", root / "tests" / "legacy"
    if any(shares(d) for d in (legacy / "csrc", legacy / "src" / "kernforge_legacy" / "runtime", tests)):
        scope += sorted(t.stem for t in tests.glob("test_*.py"))
    return " or ".join(scope)


def summary(log: str) -> str | None:
    """The run's summary line ("ERROR SUMMARY: 0 errors"), or None when the
    sanitizer did not finish."""
    lines = [
        line.strip("= ").strip()
        for line in log.splitlines()
        if "SUMMARY: " in line and "not printed" not in line
    ]
    return lines[-1] if lines else None


def hazards_only_in_cublas(log: str) -> bool:
    """True when racecheck reported hazards and every one lies inside
    cuBLAS's own Hopper GEMM kernels (nvjet_*): they stage tiles in shared
    memory with asynchronous copies that racecheck reports as WAR hazards
    (seen in the GEMMs kernforge's sequence op runs through torch's mm, bf16
    and fp16). Excluding them from instrumentation instead
    (--kernel-name-exclude) made the sanitizer fail on a hardware exception."""
    reports = log.split("Error: ")[1:]
    kernels = [re.findall(r"(?:Thread \([^)]*\)|access) at (\S+?)\+0x", r) for r in reports]
    return bool(reports) and all(k and all(name.startswith("nvjet_") for name in k) for k in kernels)


def verdict(tool: str, log: str) -> tuple[bool, str]:
    """(clean, "tool: the sanitizer's summary | pytest's last line")."""
    said = summary(log)
    if said is None:
        said, clean = "no summary (the sanitizer did not finish)", False
    elif said == CLEAN[tool]:
        clean = True
    elif tool == "racecheck" and hazards_only_in_cublas(log):
        said, clean = f"{CLEAN[tool]} outside cuBLAS; {said} in nvjet_*", True
    else:
        clean = False
    result = next(
        (line.strip("= ") for line in reversed(log.splitlines()) if re.search(r"\d+ (passed|failed)", line)),
        "no pytest result",
    )
    tests_ok = " passed" in result and not re.search(r"\d+ (failed|errors?)\b", result)
    return clean and tests_ok, f"{tool}: {said} | {result}"
