"""Repairs a kernforge binary wheel with auditwheel, leaving out the libraries
it must find at run time in the user's environment: torch's own (the stable C
shims live there) and the CUDA runtime that torch loads; and kernforge-legacy's
TH/THC runtime, which the wheel already holds (kernforge_legacy/lib/) and which
must stay one library of that name that every extension shares.

    python ci/repair_wheel.py WHEEL DEST_DIR

Used by `nox -s wheels` and by cibuildwheel's repair-wheel-command.
"""

from __future__ import annotations

import subprocess
import sys

EXCLUDE = [
    "libtorch.so",
    "libtorch_cpu.so",
    "libtorch_cuda.so",
    "libc10.so",
    "libc10_cuda.so",
    "libcudart.so.12",
    "libcudart.so.13",
    "libkernforge_legacy_th.so",
    "libkernforge_legacy_thc.so",
]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    wheel, dest = sys.argv[1:]
    excludes = [arg for lib in EXCLUDE for arg in ("--exclude", lib)]
    return subprocess.run(["auditwheel", "repair", "-w", dest, *excludes, wheel]).returncode


if __name__ == "__main__":
    sys.exit(main())
