"""The binary is built the way the design promises: on the stable ABI (no
at::, c10:: or torch:: C++ symbols among its undefined symbols) and, when
built ahead of time, against CPython's limited API (an abi3 module); and
its sources print nothing."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import kernforge_core


def _undefined_symbols(path: str) -> list[str]:
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", "-C", path], capture_output=True, text=True, check=True
    ).stdout
    return [line.split(None, 1)[-1] for line in out.splitlines() if line.strip()]


def test_only_stable_c_shims_are_undefined():
    symbols = _undefined_symbols(kernforge_core.LIBRARY_PATH)
    assert any(s.startswith("aoti_torch_") for s in symbols), "expected the stable C shims"
    cxx_torch = [s for s in symbols if re.search(r"\b(at|c10|torch)::", s)]
    assert cxx_torch == [], f"unstable C++ symbols: {cxx_torch[:10]}"


def test_ahead_of_time_binary_is_abi3():
    if kernforge_core.BUILD != "aot":
        pytest.skip("the just-in-time build is not a Python module")
    assert kernforge_core.LIBRARY_PATH.endswith(".abi3.so")


# A write to the process's stdout or stderr from host or device code.
_PRINTS = re.compile(r"\b(?:std::)?(?:f?printf|puts|fputs|perror)\s*\(|\bstd::(?:cout|cerr|clog)\b")


def test_the_core_sources_print_nothing():
    # The core reports through exceptions (STD_TORCH_CHECK) and warnings
    # (TORCH_WARN), never to the user's terminal: a print left in a kernel's
    # launch would run on every call, in every user's process.
    csrc = Path(__file__).resolve().parents[2] / "packages" / "kernforge-core" / "csrc"
    sources = [p for p in csrc.rglob("*") if p.suffix in {".h", ".cpp", ".cu", ".cuh"}]
    assert len(sources) > 10, csrc
    found = [
        f"{p.relative_to(csrc)}:{n}: {line.strip()}"
        for p in sources
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if _PRINTS.search(line.split("//", 1)[0])
    ]
    assert found == [], "\n".join(found)
