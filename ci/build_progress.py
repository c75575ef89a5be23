"""Runs a build command (pip installing the packages) and shows its progress:
ninja's ``[done/total]`` steps, each named by the source it compiles, and
pip's own milestones, instead of pages of compiler command lines. The whole
output goes to a log file; when the command fails, its last lines are printed.

    python ci/build_progress.py --log FILE -- COMMAND...
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

NINJA_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s+(.*)$")
SOURCE = re.compile(r"(?:^|\s)(?:-c\s+)?(\S+\.(?:cpp|cu|c))(?:\s|$)")
MILESTONES = re.compile(
    r"^\s*(building '[^']+' extension|Successfully installed .*|Building wheels? for .*)$"
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log", type=Path, required=True, help="where the whole output goes")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("no command given")
    root = Path.cwd().resolve()
    start = time.monotonic()
    args.log.parent.mkdir(parents=True, exist_ok=True)
    with args.log.open("w") as log:
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        for line in proc.stdout:
            log.write(line)
            step = NINJA_STEP.match(line)
            if step:
                done, total, what = step.groups()
                print(f"  [{done}/{total}] {describe_step(what, root)}", flush=True)
            elif MILESTONES.match(line):
                print(f"  {line.strip()}", flush=True)
        code = proc.wait()
    elapsed = time.monotonic() - start
    if code != 0:
        tail = args.log.read_text().splitlines()[-60:]
        print("\n".join(tail), file=sys.stderr)
        print(f"build failed (exit {code}) after {elapsed:.0f} s; the whole log: {args.log}", file=sys.stderr)
        return code
    print(f"  built in {elapsed:.0f} s (log: {args.log})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
