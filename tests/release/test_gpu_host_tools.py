"""The GPU host's tooling that runs without a GPU: the commands of
`nox -s sanitize` and reading compute-sanitizer's logs (ci/sanitizer.py),
the GPU each pytest-xdist worker takes on a host of several
(tests/conftest.py), and the bench's regression baseline written from two
hosts' runs (benchmarks/report.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import build_folder, gpu_order_for_worker, threads_for_worker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "ci"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import lanes
import report
import sanitizer

START = (
    "========= COMPUTE-SANITIZER\n"
    "============================= test session starts ==============================\n"
    "bringing up nodes...\n........ [100%]\n"
)
OOB = (
    "========= Invalid __global__ write of size 4 bytes\n"
    "=========     at oob+0x60\n"
    "=========     by thread (96,0,0) in block (0,0,0)\n"
)


def _race(*kernels: str) -> str:
    return "".join(
        f"========= Error: Race reported between Write access at {k}+0x4a0 in k.cu:10\n"
        f"=========     and Read access at {k}+0x3c0 in k.cu:12 [128 hazards]\n"
        for k in kernels
    )


def test_a_clean_run_reads_clean():
    log = START + "266 passed, 3 warnings in 312.40s (0:05:12)\n========= ERROR SUMMARY: 0 errors\n"
    assert sanitizer.verdict("memcheck", log) == (
        True,
        "memcheck: ERROR SUMMARY: 0 errors | 266 passed, 3 warnings in 312.40s (0:05:12)",
    )
    # the summary run into a worker's last line reads the same
    clean = sanitizer.CLEAN["racecheck"]
    log = START + f"[gw3] [100%] PASSED tests/s.py::test_one ========= {clean}\n1 passed in 9.00s\n"
    assert sanitizer.verdict("racecheck", log) == (
        True,
        f"racecheck: {clean} | 1 passed in 9.00s",
    )


def test_errors_past_the_print_limit_name_their_count():
    # The sanitizer's own last line then says how many it did not print.
    log = (
        START
        + OOB * 3
        + "1 failed, 6 passed in 33.31s\n"
        + "========= Target application returned an error\n"
        + "========= ERROR SUMMARY: 1014 errors\n"
        + "========= ERROR SUMMARY: 914 errors were not printed. Use --print-limit option to adjust\n"
    )
    clean, line = sanitizer.verdict("memcheck", log)
    assert not clean
    assert line == "memcheck: ERROR SUMMARY: 1014 errors | 1 failed, 6 passed in 33.31s"


@pytest.mark.parametrize(
    "result", ["1 failed, 265 passed in 300.00s", "265 passed, 1 error in 300.00s", "no tests ran in 1.00s"]
)
def test_a_clean_summary_with_failed_tests_fails(result):
    clean, line = sanitizer.verdict("synccheck", START + result + "\n========= ERROR SUMMARY: 0 errors\n")
    assert not clean and line.startswith("synccheck: ERROR SUMMARY: 0 errors | ")


def test_a_run_cut_short_has_no_summary():
    # e.g. killed by a timeout or a crash of the sanitizer itself
    assert sanitizer.verdict("initcheck", "========= COMPUTE-SANITIZER\nbringing up nodes...\n") == (
        False,
        "initcheck: no summary (the sanitizer did not finish) | no pytest result",
    )


def test_racecheck_hazards_only_inside_cublas_read_clean():
    log = (
        START
        + _race("nvjet_sm90_tst_128x64_64x4", "nvjet_sm90_hsh_256x128")
        + "12 passed in 80.00s\n"
        + "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n"
    )
    clean, line = sanitizer.verdict("racecheck", log)
    assert clean
    assert line == (
        "racecheck: RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings) outside cuBLAS; "
        "RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings) in nvjet_* | 12 passed in 80.00s"
    )


def test_a_racecheck_hazard_in_kernforge_fails():
    log = (
        START
        + _race("nvjet_sm90_tst_128x64_64x4", "kernforge_lltm_sequence_step")
        + "12 passed in 80.00s\n"
        + "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n"
    )
    assert sanitizer.verdict("racecheck", log)[0] is False
    # memcheck errors are never excused, wherever they lie
    log = START + "3 passed in 1.00s\n========= ERROR SUMMARY: 1 error\n"
    assert sanitizer.verdict("memcheck", log)[0] is False


def _hazard(kernel: str, block: str) -> str:
    # racecheck's report with --racecheck-report=all, as compute-sanitizer
    # prints it: a hazard, both threads' frames, the launch's host frames,
    # and a line of the prefix alone (with its space)
    return (
        f"========= Error: Potential WAR hazard detected at __shared__ 0x36458 in block ({block}) :\n"
        f"=========     Read Thread (32,0,0) at {kernel}+0xa60\n"
        f"=========     Write Thread (256,0,0) at {kernel}+0x2f30\n"
        "=========     Current Value : 0, Incoming Value : 1\n"
        "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
        "=========         Host Frame: cublasGemmEx [0xe178d] in libcublas.so.13\n"
        "=========         Host Frame: forward in ops.py:142\n"
        "========= \n"
    )


def test_the_digest_of_a_stopped_run_names_the_kernels_its_reports_lie_in(tmp_path):
    """A run killed at a call's deadline prints no summary; its digest still
    counts its tests and says in which kernels its reports lie, demangled
    names with spaces included, and whether any lies outside cuBLAS."""
    kernel = "void kernforge::seq::forward_kernel<float, 4>(kernforge::seq::Args)"
    log = (
        START
        + "[gw1] [  1%] PASSED tests/s.py::test_layout[cuda-(3, 8, 4, 256)-float16] \n"
        + _hazard("nvjet_sm90_tst_128x64_64x4", "1,58,0")
        # and a sanitizer's line that ran into a worker's
        + "[gw2] [  2%] PASSED tests/s.py::test_third "
        + "=========         Host Frame:  [0x32c9090] in libcublasLt.so.13\n"
        # a worker's line that the report's first line interleaved with
        + "tests/s.py::test_layout[cuda-(3, 8, 4, 256)-bfloat16] "
        + _hazard("nvjet_sm90_tst_128x64_64x4", "0,27,0")
        + "[gw0] [  2%] FAILED tests/s.py::test_layout[cuda-(3, 8, 4, 256)-bfloat16] \n"
        + _hazard(kernel, "3,0,0")
        + "tests/s.py::test_other PASSED     [ 50%]\n"
    )
    assert sanitizer.reports_by_kernel(log) == {"nvjet_sm90_tst_128x64_64x4": 2, kernel: 1}
    assert sanitizer.tests_reported(log) == [
        "tests/s.py::test_layout[cuda-(3, 8, 4, 256)-float16]",
        "tests/s.py::test_third",
        "tests/s.py::test_other",
    ]
    assert sanitizer.digest(log) == (
        "3 passed, 1 failed; 3 reports (1 outside nvjet_*), "
        f"in nvjet_sm90_tst_128x64_64x4 (2), {kernel} (1); "
        "no summary (stopped before the sanitizer's end)"
    )
    only_cublas = START + _hazard("nvjet_sm90_hsh_256x128", "0,0,0") + "1 passed in 9.00s\n"
    assert sanitizer.digest(only_cublas).startswith("0 passed, 0 failed; 1 reports, all in nvjet_*: nvjet_")
    # memcheck's reports, and a finished clean run
    assert sanitizer.reports_by_kernel(START + OOB * 3 + "========= ERROR SUMMARY: 3 errors\n") == {"oob": 3}
    clean = START + "[gw0] [100%] PASSED tests/s.py::test_one \n"
    clean += "========= RACECHECK SUMMARY: 0 hazards displayed\n"
    assert sanitizer.digest(clean) == "1 passed, 0 failed; no report; RACECHECK SUMMARY: 0 hazards displayed"
    # the command line: a line a log, named by its folder (a lane's) and tool
    (tmp_path / "sanitize-d").mkdir()
    path = tmp_path / "sanitize-d" / "racecheck.log"
    path.write_text(log)
    out = subprocess.run(
        [sys.executable, str(Path(sanitizer.__file__)), "digest", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == f"sanitize-d racecheck: {sanitizer.digest(log)}\n"


def test_racecheck_runs_the_ops_whose_kernels_share_memory():
    root = Path(__file__).resolve().parents[2]
    assert sanitizer.racecheck_scope(root) == "fused_relu_add or lltm or lltm_sequence or test_thcunn"


def test_racecheck_takes_the_legacy_tests_whose_kernels_share_memory(tmp_path):
    for op, kernel in [("mul", "out[i] = a[i] * b[i];"), ("lltm", "__shared__ float tile[32];")]:
        (tmp_path / "packages" / "kernforge-core" / "csrc" / op).mkdir(parents=True)
        (tmp_path / "packages" / "kernforge-core" / "csrc" / op / f"{op}_cuda.cu").write_text(kernel)
    legacy = tmp_path / "tests" / "legacy"
    (legacy / "fixtures" / "k").mkdir(parents=True)
    (legacy / "test_ffi.py").write_text('SRC = FIXTURES / "other"\n')
    (legacy / "test_th_api.py").write_text('SRC = FIXTURES / "k" / "src"\n')
    (legacy / "conftest.py").write_text('"k"\n')
    (legacy / "fixtures" / "k" / "k.cu").write_text("__global__ void k() {}")
    assert sanitizer.racecheck_scope(tmp_path) == "lltm"
    # a fixture's kernel: the test modules that build that fixture
    (legacy / "fixtures" / "k" / "k.cu").write_text("__global__ void k() { __shared__ int s; }")
    assert sanitizer.racecheck_scope(tmp_path) == "lltm or test_th_api"
    # the package's own kernels: every legacy test module
    runtime = tmp_path / "packages" / "kernforge-legacy" / "src" / "kernforge_legacy" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "THCTensorMath.cu").write_text("__global__ void add() { __shared__ float t[8]; }")
    assert sanitizer.racecheck_scope(tmp_path) == "lltm or test_ffi or test_th_api"


def test_each_tool_runs_its_flags_and_tests_and_is_read(tmp_path):
    """What `nox -s sanitize -- initcheck racecheck -k lltm -n 4` runs and
    concludes, with a stand-in for the sanitizer: initcheck's log is clean,
    racecheck's reports a hazard in a kernforge kernel."""
    root = Path(__file__).resolve().parents[2]
    logs = {"initcheck": "========= ERROR SUMMARY: 0 errors\n", "racecheck": _race("lltm_sequence_forward")}
    ran = []

    def run(command, out):
        ran.append(command)
        tool = command[1].removeprefix("--tool=")
        out.write(START + "4 passed in 2.00s\n" + logs[tool])
        if tool == "racecheck":
            out.write("========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")

    verdicts = sanitizer.run_tools(
        run,
        "/cuda/bin/compute-sanitizer",
        ["initcheck", "racecheck"],
        ["-k", "lltm", "-n", "4"],
        tmp_path / "logs",
        root,
    )
    initcheck, racecheck = ran
    assert initcheck[:4] == [
        "/cuda/bin/compute-sanitizer",
        "--tool=initcheck",
        "--error-exitcode=1",
        "--report-api-errors=no",
    ]
    n = 4 + len(sanitizer.PYTEST)
    assert initcheck[4:n] == sanitizer.PYTEST
    assert initcheck[n:] == [
        "-m",
        "cuda and sanitize",
        "-k",
        "(lltm) and not ((lltm and float16) or geev)",
        "-n",
        "4",
    ]
    assert racecheck[3] == "--racecheck-report=all"
    assert racecheck[-6:] == [
        "-m",
        "cuda and sanitize and not long_for_racecheck",
        "-k",
        "(lltm) and (fused_relu_add or lltm or lltm_sequence or test_thcunn)",
        "-n",
        "4",
    ]
    assert verdicts == [
        (True, "initcheck: ERROR SUMMARY: 0 errors | 4 passed in 2.00s"),
        (False, "racecheck: RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings) | 4 passed in 2.00s"),
    ]
    assert (tmp_path / "logs" / "racecheck.log").read_text().endswith("(1 error, 0 warnings)\n")


def test_racecheck_takes_the_three_step_sequences_for_the_long_ones():
    # what racecheck's selection collects, against memcheck's (every test marked sanitize)
    root = Path(__file__).resolve().parents[2]

    def collected(tool):
        args = sanitizer.selection(tool, ["-k", "lltm_sequence"], root)
        command = [sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider", "--collect-only", "-q"]
        listing = subprocess.run([*command, *args], cwd=root, capture_output=True, text=True, check=True)
        return {line for line in listing.stdout.splitlines() if "::" in line}

    every, race = collected("memcheck"), collected("racecheck")
    long = {t for t in every if "matches_a_loop" in t or "inference_equals_the_forward" in t}
    repeated = {t for t in every if "run_to_run_bitwise" in t}  # four runs of each sequence op
    three = {t for t in every if "each_layout_over_three_steps" in t}
    assert long and len(repeated) == 6 and len(three) == 168  # 42 sizes x 4 dtypes
    assert race == every - long - repeated
    assert all(re.search(r"[[-]cuda[]-]", t) for t in every)


def test_the_legacy_fixtures_build_first_without_the_sanitizer():
    # the legacy tests that the session's tools will run, run plainly (they build the fixtures)
    root = Path(__file__).resolve().parents[2]
    prebuild = sanitizer.prebuild_command(
        ["memcheck", "racecheck"], ["-n", "4", "-k", "gather or not gather"], root
    )
    assert prebuild[:4] == ["python", "-m", "pytest", "tests/legacy"]
    assert prebuild[-6:] == ["-m", "cuda and sanitize", "-n", "4", "-k", "gather or not gather"]

    def collected(command):
        command = [sys.executable, *command[1:], "--collect-only", "-qq"]  # with -v: one line a test
        listing = subprocess.run(command, cwd=root, capture_output=True, text=True, check=True)
        return {line for line in listing.stdout.splitlines() if "::" in line}

    def legacy_of(tool):
        return {
            t
            for t in collected([*sanitizer.PYTEST, *sanitizer.selection(tool, [], root)])
            if t.startswith("tests/legacy/")
        }

    every = legacy_of("memcheck")
    assert collected(sanitizer.prebuild_command(list(sanitizer.TOOLS), [], root)) == every
    assert any("test_my_lib_add[cuda]" in t for t in every)
    # one tool alone: only the legacy tests it runs (racecheck's are thcunn's)
    race = collected(sanitizer.prebuild_command(["racecheck"], [], root))
    assert race == legacy_of("racecheck")
    assert race and len(race) < len(every) and all("test_thcunn" in t for t in race)


def test_fixtures_build_where_kernforge_test_builds_says(tmp_path, tmp_path_factory, monkeypatch):
    monkeypatch.delenv("KERNFORGE_TEST_BUILDS", raising=False)
    run = build_folder(tmp_path_factory)
    assert run in tmp_path.parents
    monkeypatch.setenv("KERNFORGE_TEST_BUILDS", str(tmp_path / "kept" / "builds"))
    assert build_folder(tmp_path_factory) == tmp_path / "kept" / "builds"
    assert (tmp_path / "kept" / "builds").is_dir()


def test_a_stopped_run_resumes_with_what_it_did_not_finish(tmp_path):
    """Two racecheck runs stopped at a call's limit (one under xdist, one
    not): `deselect-passed` over their logs gives pytest an @FILE that
    leaves out what passed, ids with spaces included, and nothing else."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # ids relative to tmp_path, wherever it lies
    module = tmp_path / "test_m.py"
    module.write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('size', [(3, 8, 4, 256), (5, 33, 7, 300), (2, 0, 3, 4)], ids=str)\n"
        "@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])\n"
        "def test_layout(size, dtype):\n    pass\n"
    )
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    first.write_text(
        START
        + "[gw1] [ 16%] PASSED test_m.py::test_layout[float32-(3, 8, 4, 256)] \n"
        + "[gw0] [ 33%] FAILED test_m.py::test_layout[bfloat16-(3, 8, 4, 256)] \n"
        + "test_m.py::test_layout[float32-(5, 33, 7, 300)] \n"
    )
    second.write_text(
        "test_m.py::test_layout[float32-(5, 33, 7, 300)] PASSED            [ 50%]\n"
        "test_m.py::test_layout[float32-(3, 8, 4, 256)] PASSED             [100%]\n"
    )
    assert sanitizer.tests_reported(first.read_text()) == ["test_m.py::test_layout[float32-(3, 8, 4, 256)]"]
    args = tmp_path / "args.txt"
    made = subprocess.run(
        [sys.executable, str(Path(sanitizer.__file__)), "deselect-passed", str(first), str(second)],
        capture_output=True,
        text=True,
        check=True,
    )
    args.write_text(made.stdout)
    assert made.stdout.splitlines() == [
        "--deselect",
        "test_m.py::test_layout[float32-(3, 8, 4, 256)]",
        "--deselect",
        "test_m.py::test_layout[float32-(5, 33, 7, 300)]",
    ]
    collect = [sys.executable, "-m", "pytest", "test_m.py", "--collect-only", "-q", "-p", "no:cacheprovider"]
    left = subprocess.run(
        [*collect, f"@{args}"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert sorted(line for line in left.splitlines() if "::" in line) == [
        "test_m.py::test_layout[bfloat16-(2, 0, 3, 4)]",
        "test_m.py::test_layout[bfloat16-(3, 8, 4, 256)]",
        "test_m.py::test_layout[bfloat16-(5, 33, 7, 300)]",
        "test_m.py::test_layout[float32-(2, 0, 3, 4)]",
    ]
    usage = subprocess.run([sys.executable, str(Path(sanitizer.__file__))], capture_output=True, text=True)
    assert usage.returncode == 1 and "deselect-passed LOG" in usage.stderr


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_each_test_s_line_and_its_own_time(tmp_path, workers):
    """The sanitize session's pytest prints each test's line as it ends,
    which tests_reported reads (with and without xdist, ids with spaces),
    and ci/pytest_times.py a line of its time: its own, also where xdist's
    workers end tests side by side (pytest's times style summed the
    reports of several tests there, and printed most as microseconds)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_m.py").write_text(
        "import time\n"
        "import pytest\n"
        "@pytest.mark.parametrize('size', [(3, 8, 4, 256), (5, 33, 7, 300)], ids=str)\n"
        "def test_layout(size):\n    time.sleep(0.6)\n    assert size[0] == 3\n"
        "def test_other():\n    time.sleep(0.3)\n"
        "def test_quick():\n    pass\n"
    )
    flags = sanitizer.PYTEST[sanitizer.PYTEST.index("-v") :]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "test_m.py", *flags, *workers],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},  # ci.pytest_times
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert sorted(sanitizer.tests_reported(run.stdout)) == [
        "test_m.py::test_layout[(3, 8, 4, 256)]",
        "test_m.py::test_other",
        "test_m.py::test_quick",
    ]
    assert sanitizer.tests_reported(run.stdout, "FAILED") == ["test_m.py::test_layout[(5, 33, 7, 300)]"]
    times = {m[2]: float(m[1]) for m in re.finditer(r"^\[time\] ([\d.]+) s (.+)$", run.stdout, re.M)}
    assert sorted(times) == sorted(
        [*sanitizer.tests_reported(run.stdout), "test_m.py::test_layout[(5, 33, 7, 300)]"]
    )
    assert times["test_m.py::test_quick"] < 0.25, times
    assert 0.3 <= times["test_m.py::test_other"] < 0.6, times
    for size in ("(3, 8, 4, 256)", "(5, 33, 7, 300)"):
        assert 0.6 <= times[f"test_m.py::test_layout[{size}]"] < 0.9, times


def test_a_stopped_run_that_passed_nothing_resumes_with_everything(tmp_path):
    """A run stopped before any test passed: `deselect-passed` writes an
    empty @FILE, which leaves pytest's selection as it was (an empty line
    would be an argument "", the whole folder)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_m.py").write_text("def test_one():\n    pass\n")
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n")
    log = tmp_path / "stopped.log"
    log.write_text(START + "test_m.py::test_one \n")
    made = subprocess.run(
        [sys.executable, str(Path(sanitizer.__file__)), "deselect-passed", str(log)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert made.stdout == ""
    args = tmp_path / "args.txt"
    args.write_text(made.stdout)
    collect = [sys.executable, "-m", "pytest", "test_m.py", "--collect-only", "-q", "-p", "no:cacheprovider"]
    left = subprocess.run(
        [*collect, f"@{args}"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert [line for line in left.splitlines() if "::" in line] == ["test_m.py::test_one"]


def test_logs_go_where_the_session_is_told():
    default = Path("sanitize-logs")
    assert sanitizer.split_logs_arg(["racecheck", "-n", "4"], default) == (default, ["racecheck", "-n", "4"])
    assert sanitizer.split_logs_arg(["racecheck", "--logs", "/tmp/half1", "-k", "lltm"], default) == (
        Path("/tmp/half1"),
        ["racecheck", "-k", "lltm"],
    )
    for args in (["racecheck", "--logs"], ["--logs", "-k", "lltm"]):
        with pytest.raises(ValueError, match="--logs needs a folder"):
            sanitizer.split_logs_arg(args, default)


def test_a_tool_with_no_k_gets_its_own_and_memcheck_all_tests():
    root = Path(__file__).resolve().parents[2]
    assert sanitizer.selection("memcheck", ["-x"], root) == ["-m", "cuda and sanitize", "-x"]
    assert sanitizer.selection("initcheck", [], root) == [
        "-m",
        "cuda and sanitize",
        "-k",
        "not ((lltm and float16) or geev)",
    ]


@pytest.mark.parametrize(
    "worker,gpus,visible,order",
    [
        ("gw0", 2, None, "0,1"),
        ("gw1", 2, None, "1,0"),
        ("gw3", 2, None, "1,0"),
        ("gw2", 4, "3,5,6,7", "6,7,3,5"),  # rotates what the host made visible
        ("gw1", 2, "2", None),  # one GPU visible: nothing to spread
        ("gw1", 1, None, None),
        ("", 2, None, None),  # not an xdist worker
        ("master", 2, None, None),
    ],
)
def test_each_xdist_worker_takes_its_own_gpu(worker, gpus, visible, order):
    assert gpu_order_for_worker(worker, gpus, visible) == order


def _sh(script: str) -> list[str]:
    return ["bash", "-c", script]


def test_lanes_run_jobs_side_by_side_each_on_its_gpu(tmp_path):
    # a and b wait for each other: they pass only if two lanes run them at once
    meet = tmp_path / "meet"
    meet.mkdir()
    met = f"[ -e {meet}/a ] && [ -e {meet}/b ]"
    wait = f"touch {meet}/$0; for i in $(seq 200); do {met} && exit 0; sleep 0.1; done"
    jobs = [
        ("a", ["bash", "-c", f"{wait}; exit 1", "a"]),
        ("b", ["bash", "-c", f"{wait}; exit 1", "b"]),
        ("c", _sh('echo "gpu $CUDA_VISIBLE_DEVICES"; exit 3')),
    ]
    outcomes = lanes.run(jobs, ["4", "7"], deadline=60, logs=tmp_path / "logs")
    assert [(o.name, o.rc, o.killed) for o in outcomes] == [("a", 0, False), ("b", 0, False), ("c", 3, False)]
    assert {outcomes[0].gpu, outcomes[1].gpu} == {"4", "7"}
    assert (tmp_path / "logs" / "c.log").read_text() == f"gpu {outcomes[2].gpu}\n"
    assert outcomes[2].line().startswith(f"c: rc=3, GPU {outcomes[2].gpu}, from ")


def test_lanes_kill_a_job_whole_at_the_deadline_and_start_nothing_after(tmp_path):
    # the job leaves a child of its own running, as nox leaves the sanitizer and pytest's workers
    pid = tmp_path / "child.pid"
    jobs = [("slow", _sh(f"sleep 300 & echo $! > {pid}; wait")), ("late", _sh("echo ran"))]
    outcomes = lanes.run(jobs, ["0"], deadline=2, logs=tmp_path / "logs")
    slow, late = outcomes
    assert slow.killed and slow.rc == -9 and 1.5 < slow.end < 30
    assert slow.line().startswith("slow: killed at the deadline, GPU 0")
    assert late.rc is None and late.line() == "late: not started before the deadline"
    assert not (tmp_path / "logs" / "late.log").exists()
    child = int(pid.read_text())
    for _ in range(50):  # the child is gone (or a zombie reaped by init)
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if Path(f"/proc/{child}/stat").read_text().split(") ")[1].startswith("Z"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the job's child {child} outlived the deadline")


def test_lanes_command_line(tmp_path, capsys):
    logs = str(tmp_path / "logs")
    assert lanes.main(["--gpus", "0", "--deadline", "30", "--logs", logs, "--job", "ok=true"]) == 0
    assert capsys.readouterr().out.startswith("ok: rc=0, GPU 0, from ")
    assert (
        lanes.main(
            ["--gpus", "0,1", "--deadline", "30", "--logs", logs, "--job", "ok=true", "--job", "no=false"]
        )
        == 1
    )
    for bad in ("=true", "name", "two words=true", "x="):
        with pytest.raises(ValueError, match="--job needs NAME=COMMAND"):
            lanes.parse_job(bad)
    with pytest.raises(ValueError, match="job names must differ"):
        lanes.run([("a", ["true"]), ("a", ["true"])], ["0"], 30, tmp_path / "logs")


@pytest.mark.parametrize(
    ("cpus", "workers", "threads"), [(16, 16, 1), (16, 4, 4), (2, 2, 1), (2, 0, 2), (3, 2, 1)]
)
def test_each_worker_takes_its_share_of_the_cores(cpus, workers, threads):
    assert threads_for_worker(cpus, workers) == threads


def _bench(name: str, fastest: float, median: float) -> dict:
    return {"fullname": name, "stats": {"min": fastest, "median": median, "iqr": 0.01 * median}}


def test_widened_baseline_keeps_each_row_from_the_slower_host():
    old = [_bench("a", 1.0, 1.1), _bench("b", 2.0, 2.1), _bench("gone", 3.0, 3.1)]
    new = [_bench("a", 1.2, 1.3), _bench("b", 1.9, 2.0), _bench("added", 4.0, 4.1)]
    widened = {b["fullname"]: b["stats"]["min"] for b in report.widen(old, new)}
    assert widened == {"a": 1.2, "added": 4.0, "b": 2.0, "gone": 3.0}


def test_the_gate_takes_the_rows_whose_fastest_round_is_past_ten_percent(tmp_path):
    # nox -s bench measures these again by themselves; a row the baseline
    # lacks is not gated, and the medians do not count.
    baseline = [_bench("a", 1.0, 1.0), _bench("b", 2.0, 2.0), _bench("c", 3.0, 3.0)]
    run = [_bench("a", 1.11, 1.12), _bench("b", 2.19, 9.0), _bench("c", 2.0, 2.0), _bench("new", 9.0, 9.0)]
    assert report.regressed(run, baseline) == ["a"]
    assert report.regressed(run, baseline, limit=0.05) == ["a", "b"]
    files = []
    for name, rows in (("run", run), ("baseline", baseline)):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps({"benchmarks": rows}))
    command = [sys.executable, str(Path(report.__file__)), str(files[0]), "--regressed", str(files[1])]
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert printed.splitlines() == ["a"]
    files[0].write_text(json.dumps({"benchmarks": run[1:]}))
    assert subprocess.run(command, capture_output=True, text=True, check=True).stdout.split() == []
