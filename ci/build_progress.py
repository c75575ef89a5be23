"""Runs build commands side by side (pip building each package's wheel) and
shows their progress: ninja's ``[done/total]`` steps, each named by the source
it compiles, and pip's own milestones, each line led by its job's name,
instead of pages of compiler command lines. Each job's whole output goes to
LOGS/NAME.log; when a job fails, its last lines are printed.

    python ci/build_progress.py --logs DIR --job NAME=COMMAND [--job NAME=COMMAND ...]

The packages build at once because one compiled package's last and longest
source (kernforge-core's sequence kernels) would otherwise leave every other
core idle while the next package waits its turn.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from lanes import parse_job  # NAME=COMMAND, as ci/lanes.py reads it

NINJA_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s+(.*)$")
SOURCE = re.compile(r"(?:^|\s)(?:-c\s+)?(\S+\.(?:cpp|cu|c))(?:\s|$)")
MILESTONES = re.compile(
    r"^\s*(building '[^']+' extension|Successfully (?:installed|built) .*|Building wheels? for .*)$"
)


def describe_step(command: str, root: Path) -> str:
    """What one ninja step does, in a few words: the source it compiles, or a link."""
    found = SOURCE.search(command)
    if found:
        path = Path(found.group(1))
        try:
            return f"compile {path.resolve().relative_to(root)}"
        except ValueError:
            return f"compile {path.name}"
    return "link" if " -shared " in command or " -o " in command else command[:80]


def follow(name: str, command: list[str], log_path: Path, root: Path, say) -> int:
    """Runs one job to its end, its output into `log_path`, its progress through `say`."""
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        for line in proc.stdout:
            log.write(line)
            step = NINJA_STEP.match(line)
            if step:
                done, total, what = step.groups()
                say(f"  {name} [{done}/{total}] {describe_step(what, root)}")
            elif MILESTONES.match(line):
                say(f"  {name}: {line.strip()}")
        return proc.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--logs", type=Path, required=True, help="the folder of each job's whole output")
    p.add_argument("--job", action="append", default=[], help="NAME=COMMAND, run beside the others")
    args = p.parse_args(argv)
    try:
        jobs = [parse_job(j) for j in args.job]
    except ValueError as e:
        p.error(str(e))
    if not jobs:
        p.error("no --job given")
    if len({name for name, _ in jobs}) < len(jobs):
        p.error("job names must differ: each names its log")
    root = Path.cwd().resolve()
    args.logs.mkdir(parents=True, exist_ok=True)
    printing = threading.Lock()

    def say(line: str) -> None:
        with printing:
            print(line, flush=True)

    start = time.monotonic()
    codes: dict[str, int] = {}
    ended: dict[str, float] = {}

    def run(name: str, command: list[str]) -> None:
        try:
            codes[name] = follow(name, command, args.logs / f"{name}.log", root, say)
        except OSError as e:  # the command could not start
            (args.logs / f"{name}.log").write_text(f"{e}\n")
            codes[name] = 127
        ended[name] = time.monotonic() - start

    threads = [threading.Thread(target=run, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [name for name, _ in jobs if codes[name] != 0]
    for name in failed:
        log = args.logs / f"{name}.log"
        print("\n".join(log.read_text().splitlines()[-60:]), file=sys.stderr)
        print(
            f"{name}: build failed (exit {codes[name]}) after {ended[name]:.0f} s; the whole log: {log}",
            file=sys.stderr,
        )
    if failed:
        return 1
    each = ", ".join(f"{name} {ended[name]:.0f} s" for name, _ in jobs)
    print(f"  built in {time.monotonic() - start:.0f} s ({each}; logs: {args.logs})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
