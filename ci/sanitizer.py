"""For `nox -s sanitize`: the command each compute-sanitizer tool runs (its
flags, the tests it takes), and how the log of one tool over a pytest run
reads: clean or not, and one line that says why.

The sanitizer follows every process of the run (pytest and, under
pytest-xdist, each worker) and ends with one summary for all of them; past
its print limit it adds a second line, "ERROR SUMMARY: N errors were not
printed". The run is clean when the summary is clean and pytest's last line
reports passes and no failure or error (a worker that dies takes its test
down as failed).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO

# Each tool's flags. Without torch's caching allocator (the noxfile turns it
# off) every tensor is its own allocation, so memcheck sees an access past any
# tensor's end, and initcheck any read of memory never written. kernforge
# checks every CUDA call it makes and raises (tests cover that), so API
# errors, which torch's own probes cause, are not reported; kernel faults,
# races and uninitialized reads are.
TOOLS = {
    "memcheck": ["--leak-check=no", "--report-api-errors=no"],
    "racecheck": ["--racecheck-report=all"],
    "initcheck": ["--report-api-errors=no"],
    "synccheck": [],
}
# The tests: those marked `sanitize` (every op, forward and backward, on each
# path, at small sizes; the legacy ffi path).
# -v: a line for each test as it ends, so that a run stopped before its end
# (a GPU host's time limit) still says which tests ran, and ci/pytest_times.py
# how long each took; --durations: where a finished tool's time went, to
# split it across GPUs.
PYTEST = [
    "python", "-m", "pytest", "tests", "-v", "-p", "ci.pytest_times", "--durations=25",
    "-p", "no:cacheprovider",
]  # fmt: skip
MARKS = "cuda and sanitize"
# racecheck reads every shared-memory access: one of the sequence op's long
# tests takes it minutes. Those are marked `long_for_racecheck` and left out
# of it; a three-step test runs each of their kernels' layouts for it.
RACECHECK_LEAVES_OUT = "long_for_racecheck"
# initcheck does not see what torch's own 16-bit cuBLAS GEMMs write: `a @ b`
# in bfloat16 or float16 followed by `.cpu()` reports every element of the
# product as an uninitialized read (3072 of 3072; float32: none; H100,
# torch 2.11.0+cu130, probe of 2026-11-24). The LLTM tests whose 16-bit data
# goes through those GEMMs (cell and sequence) stay out of initcheck; the
# other tools run them. Likewise cuSOLVER's geev, under torch.linalg.eig
# (the legacy THC geev's test): its own gebal_singleton_kernel reads 100
# doubles of its workspace that nothing wrote (H100, torch 2.11.0+cu130,
# 2026-11-27); memcheck and the other tools still run that test.
INITCHECK_BLIND = "(lltm and float16) or geev"  # -k: float16 covers bfloat16

# The legacy tests' ffi fixtures compile (gcc and nvcc; my_lib's and gather's
# build.py in a Python process of its own, which starts CUDA) once before any
# tool runs, without the sanitizer, into $KERNFORGE_TEST_BUILDS, where the
# tools' runs find them built (tests/conftest.py, build_folder). Under the
# sanitizer those builds ran in the tools' time: with 14 workers a tool on one
# H200, gather's fixture took about 280 s and my_lib's held its worker's
# tests past a 10-minute call, the only tests memcheck, synccheck and
# initcheck had left (2026-11-26).
LEGACY_TESTS = "tests/legacy"


def prebuild_command(tools: list[str], pytest_args: list[str], root: Path) -> list[str]:
    """The run that builds the fixtures: the legacy tests that `tools` will
    run, without the sanitizer, so that they also pass once as plain tests
    first (pytest's exit code 5 when none are selected). One tool: its own
    selection (racecheck alone runs thcunn's tests, not the 260 legacy tests
    of memcheck's, which took 209 s a session with sixteen sessions on two
    H200s, 2026-11-30); several: the plain selection, which holds each's."""
    args = selection(tools[0], pytest_args, root) if len(tools) == 1 else ["-m", MARKS, *pytest_args]
    return [*PYTEST[:3], LEGACY_TESTS, *PYTEST[4:], *args]


CLEAN = {
    "memcheck": "ERROR SUMMARY: 0 errors",
    "initcheck": "ERROR SUMMARY: 0 errors",
    "synccheck": "ERROR SUMMARY: 0 errors",
    "racecheck": "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)",
}


def racecheck_scope(root: Path) -> str:
    """racecheck finds hazards on shared memory only, so it runs the tests of
    the kernels that use it: a -k of each kernforge-core op whose csrc/<op>/
    says __shared__ (lltm also takes lltm_sequence); every legacy test
    module when kernforge-legacy's own kernels do, else the legacy test
    modules that name a fixture folder (tests/legacy/fixtures/<name>) whose
    kernels do. Today mul, add and the legacy package's kernels have none
    (their tests would only give racecheck torch's and cuBLAS's kernels to
    read, at its slowest); of the fixtures, thcunn's block sums do."""

    def shares(folder: Path) -> bool:
        return any("__shared__" in f.read_text() for f in folder.rglob("*.cu*"))

    core = root / "packages" / "kernforge-core" / "csrc"
    scope = sorted(d.name for d in core.iterdir() if d.is_dir() and shares(d))
    legacy, tests = root / "packages" / "kernforge-legacy", root / "tests" / "legacy"
    modules = sorted(tests.glob("test_*.py"))
    if any(shares(d) for d in (legacy / "csrc", legacy / "src" / "kernforge_legacy" / "runtime")):
        return " or ".join(scope + [t.stem for t in modules])
    fixtures = [d.name for d in sorted((tests / "fixtures").glob("*")) if d.is_dir() and shares(d)]
    scope += [t.stem for t in modules if any(f'"{name}"' in t.read_text() for name in fixtures)]
    return " or ".join(scope)


def selection(tool: str, pytest_args: list[str], root: Path) -> list[str]:
    """The pytest arguments `tool` runs with: the tests marked MARKS and the
    given arguments, narrowed for initcheck (INITCHECK_BLIND) and racecheck
    (racecheck_scope, less RACECHECK_LEAVES_OUT)."""
    if tool == "initcheck":
        return ["-m", MARKS, *and_k(pytest_args, f"not ({INITCHECK_BLIND})")]
    if tool == "racecheck":
        marks = f"{MARKS} and not {RACECHECK_LEAVES_OUT}"
        return ["-m", marks, *and_k(pytest_args, f"({racecheck_scope(root)})")]
    return ["-m", MARKS, *pytest_args]


def split_logs_arg(args: list[str], default: Path) -> tuple[Path, list[str]]:
    """`--logs DIR` taken out of the session's arguments: the folder of the
    tools' logs (`default` without it), so that sessions run side by side,
    e.g. racecheck over two halves of its tests by -k, a GPU each, do not
    write the same file."""
    if "--logs" not in args:
        return default, list(args)
    i = args.index("--logs")
    if i + 1 == len(args) or args[i + 1].startswith("-"):
        raise ValueError("--logs needs a folder: --logs DIR")
    return Path(args[i + 1]), args[:i] + args[i + 2 :]


def and_k(args: list[str], expression: str) -> list[str]:
    """pytest arguments with `expression` and-ed into their -k (or as one)."""
    out, given = list(args), None
    for i, a in enumerate(out[:-1]):
        if a == "-k":
            given = i + 1
    if given is None:
        return [*out, "-k", expression]
    out[given] = f"({out[given]}) and {expression}"
    return out


def run_tools(
    run: Callable[[list[str], IO[str]], None],
    binary: str,
    tools: list[str],
    pytest_args: list[str],
    logs: Path,
    root: Path,
) -> list[tuple[bool, str]]:
    """Each tool over the tests, one after another: `run(command, out)` runs
    the command with its output into `out`, the open logs/<tool>.log. Returns
    each tool's verdict."""
    logs.mkdir(exist_ok=True)
    verdicts = []
    for tool in tools:
        log = logs / f"{tool}.log"
        command = [binary, f"--tool={tool}", "--error-exitcode=1", *TOOLS[tool], *PYTEST]
        with log.open("w") as out:
            run([*command, *selection(tool, pytest_args, root)], out)
        verdicts.append(verdict(tool, log.read_text()))
    return verdicts


# The sanitizer's prefix: nine "="s, alone (pytest's banners run longer), at
# a line's start or after a worker's output that the sanitizer's line ran
# into ("ID ========= Error: ...", "PASSED ID ========= RACECHECK SUMMARY").
PREFIX = re.compile(r"(?<!=)=========(?!=) ?")


def _sanitizer_text(line: str) -> str | None:
    """What follows the sanitizer's prefix in a log line; None where the
    line has no prefix (pytest's own)."""
    prefix = PREFIX.search(line)
    return None if prefix is None else line[prefix.end() :]


def summary(log: str) -> str | None:
    """The run's summary line ("ERROR SUMMARY: 0 errors"), or None when the
    sanitizer did not finish."""
    texts = (_sanitizer_text(line) for line in log.splitlines())
    lines = [t.strip() for t in texts if t and "SUMMARY: " in t and "not printed" not in t]
    return lines[-1] if lines else None


def reports_by_kernel(log: str) -> dict[str, int]:
    """How many of the sanitizer's reports lie in each kernel (the first
    frame of each, "at NAME+0x..."; "(no frame)" where it names none), most
    first. A report starts at a line of the sanitizer's with no indent after
    its prefix ("Error: Potential WAR hazard ...", "Invalid __global__ write
    ..."), past its banner and summaries, and ends at the prefix's empty
    line. Both threads of a racecheck hazard lie in one kernel: shared
    memory is its blocks'."""
    names: list[str | None] = []  # a report's kernel, None until a frame names it
    in_report = False
    for line in log.splitlines():
        text = _sanitizer_text(line)
        if text is None:
            continue
        if not text.strip():  # the empty line that closes a report
            in_report = False
            continue
        if not text.startswith(" "):
            in_report = not re.match(r"(COMPUTE-SANITIZER|\w+ SUMMARY|Target application)", text)
            if in_report:
                names.append(None)
        found = re.search(r" at (.+?)\+0x[0-9a-f]+", text)  # demangled names hold spaces
        if in_report and names[-1] is None and found:
            names[-1] = found.group(1)
    return dict(Counter(name or "(no frame)" for name in names).most_common())


def hazards_only_in_cublas(log: str) -> bool:
    """True when racecheck reported hazards and every one lies inside
    cuBLAS's own Hopper GEMM kernels (nvjet_*): they stage tiles in shared
    memory with asynchronous copies that racecheck reports as WAR hazards
    (seen in the GEMMs kernforge's sequence op runs through torch's mm, bf16
    and fp16). Excluding them from instrumentation instead
    (--kernel-name-exclude) made the sanitizer fail on a hardware exception."""
    kernels = reports_by_kernel(log)
    return bool(kernels) and all(name.startswith("nvjet_") for name in kernels)


def digest(log: str) -> str:
    """One line on a tool's log, finished or stopped before its end (a GPU
    host's deadline): the tests passed and failed, the reports by kernel,
    and the summary or that there is none. For a stopped run, this is all
    it tells: whether any report lay outside cuBLAS's GEMMs (nvjet_*)."""
    passed = len(tests_reported(log))
    failed = len(tests_reported(log, "FAILED"))
    counts = reports_by_kernel(log)
    if counts:
        where = ", ".join(f"{name} ({n})" for name, n in counts.items())
        outside = sum(n for name, n in counts.items() if not name.startswith("nvjet_"))
        reports = (
            f"{sum(counts.values())} reports ({outside} outside nvjet_*), in {where}"
            if outside
            else f"{sum(counts.values())} reports, all in nvjet_*: {where}"
        )
    else:
        reports = "no report"
    said = summary(log) or "no summary (stopped before the sanitizer's end)"
    return f"{passed} passed, {failed} failed; {reports}; {said}"


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


def tests_reported(log: str, outcome: str = "PASSED") -> list[str]:
    """The node ids that a tool's log (pytest -v) reports as passed (or
    another outcome: "FAILED"), in the order they finished: `[gw0] [ 33%]
    PASSED ID` under pytest-xdist, `ID PASSED [ 33%]` without it. Ids may
    hold spaces ("(3, 8, 4, 256)"). A sanitizer's line that a worker's
    output ran into is cut off ("PASSED ID =========  Host Frame: ...")."""
    ids = []
    for line in log.splitlines():
        line = PREFIX.split(line, maxsplit=1)[0]
        xdist = re.match(rf"\[gw\d+\] \[ *\d+%\] {outcome} (\S.*?)\s*$", line)
        plain = re.match(rf"(\S+::.+?) {outcome}\b", line)
        if xdist or plain:
            ids.append((xdist or plain).group(1))
    return ids


def deselect_passed(logs: list[Path]) -> list[str]:
    """pytest arguments that leave out every test these logs report as
    passed: run a stopped tool again with them (one a line in a file, given
    to pytest as @FILE) and it runs only what the stopped runs did not
    finish, on a host whose calls end before racecheck's whole scope does."""
    ids = dict.fromkeys(i for log in logs for i in tests_reported(log.read_text(errors="replace")))
    return [arg for i in ids for arg in ("--deselect", i)]


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] not in (["deselect-passed"], ["digest"]) or len(sys.argv) < 3:
        sys.exit(
            "usage: python ci/sanitizer.py deselect-passed LOG... > FILE; "
            "then nox -s sanitize -- TOOL @FILE\n"
            "       python ci/sanitizer.py digest LOG...: a line on each tool log, finished or stopped"
        )
    if sys.argv[1] == "digest":
        for path in sys.argv[2:]:
            log = Path(path)
            print(f"{log.parent.name} {log.stem}: {digest(log.read_text(errors='replace'))}")
        sys.exit(0)
    # No line at all where nothing passed: pytest reads an empty line of an
    # @FILE as the argument "", the whole folder.
    sys.stdout.write("".join(f"{arg}\n" for arg in deselect_passed([Path(p) for p in sys.argv[2:]])))
