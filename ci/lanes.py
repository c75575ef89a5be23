"""Runs jobs side by side on a host of several GPUs, one lane per GPU: each
lane takes the next job waiting as soon as its last one ends, with
CUDA_VISIBLE_DEVICES set to its GPU. For `nox -s sanitize` runs that would
not fit one after another in a GPU host's call: e.g. racecheck over two
halves of its tests, memcheck, synccheck and initcheck, four jobs on two GPUs.

    python ci/lanes.py --gpus 0,1 --deadline 540 --logs DIR \\
        --job "race1=python3 -m nox -s sanitize -- racecheck -k ..." --job ...

Each job's output goes to DIR/NAME.log. A job runs in a process group of its
own, killed whole at the deadline (seconds from the start): the sanitizer and
pytest's workers would outlive a killed nox. A job that could not start
before the deadline is reported as such. Prints a line per job and exits
non-zero unless every job ran and returned 0.
"""

from __future__ import annotations

import argparse
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Outcome:
    name: str
    gpu: str
    rc: int | None  # None: not started (the deadline came first)
    start: float  # seconds from the run's start
    end: float
    killed: bool = False

    def line(self) -> str:
        if self.rc is None:
            return f"{self.name}: not started before the deadline"
        what = "killed at the deadline" if self.killed else f"rc={self.rc}"
        return f"{self.name}: {what}, GPU {self.gpu}, from {self.start:.0f} s to {self.end:.0f} s"


def parse_job(text: str) -> tuple[str, list[str]]:
    """'NAME=COMMAND' as (NAME, the command's words)."""
    name, sep, command = text.partition("=")
    if not sep or not name.isidentifier() or not command.strip():
        raise ValueError(f"--job needs NAME=COMMAND (NAME a Python identifier), got {text!r}")
    return name, shlex.split(command)


def run(jobs: list[tuple[str, list[str]]], gpus: list[str], deadline: float, logs: Path) -> list[Outcome]:
    """Every job, over one lane per GPU; the outcomes in the jobs' order."""
    if len({name for name, _ in jobs}) < len(jobs):
        raise ValueError("job names must differ: each names its log")
    logs.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    waiting: queue.Queue[tuple[str, list[str]]] = queue.Queue()
    for job in jobs:
        waiting.put(job)
    outcomes: dict[str, Outcome] = {}

    def lane(gpu: str) -> None:
        while True:
            try:
                name, command = waiting.get_nowait()
            except queue.Empty:
                return
            begun = time.monotonic() - start
            if begun >= deadline:
                outcomes[name] = Outcome(name, gpu, None, begun, begun)
                continue
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
            with open(logs / f"{name}.log", "w") as log:
                process = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=env, start_new_session=True,
                )  # fmt: skip
                try:
                    rc, killed = process.wait(timeout=deadline - begun), False
                except subprocess.TimeoutExpired:
                    killed = True
                finally:
                    try:  # the whole group, also after a clean end: nothing it started runs on
                        os.killpg(process.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                if killed:
                    rc = process.wait()
            outcomes[name] = Outcome(name, gpu, rc, begun, time.monotonic() - start, killed)

    threads = [threading.Thread(target=lane, args=(gpu,)) for gpu in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [outcomes[name] for name, _ in jobs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", required=True, help="the GPUs, one lane each: 0,1")
    parser.add_argument("--deadline", type=float, required=True, help="seconds from the start")
    parser.add_argument("--logs", type=Path, required=True, help="each job's output into LOGS/NAME.log")
    parser.add_argument("--job", action="append", default=[], help="NAME=COMMAND, as many as wanted")
    args = parser.parse_args(argv)
    try:
        jobs = [parse_job(j) for j in args.job]
    except ValueError as e:
        parser.error(str(e))
    gpus = [g for g in args.gpus.split(",") if g]
    if not jobs or not gpus:
        parser.error("give at least one --job and one GPU")
    outcomes = run(jobs, gpus, args.deadline, args.logs)
    for o in outcomes:
        print(o.line())
    return 0 if all(o.rc == 0 for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
