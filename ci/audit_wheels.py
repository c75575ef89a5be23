"""Audits a folder of kernforge wheels for one build variant (nox -s wheels).

    python ci/audit_wheels.py --variant cu13 --arch-list "7.5;9.0;12.0+PTX" dist/cu13
    python ci/audit_wheels.py --check-nvcc 13

For every wheel: the version's local label is the variant (pure-Python wheels
excepted), binary wheels are tagged cp310-abi3, and every shared library
leaves undefined only
  * symbols of the C and C++ runtimes (versioned GLIBC_, GLIBCXX_, CXXABI_,
    GCC_; and std:: symbols, unversioned where torch's libraries, linked
    first, export the same template instance),
  * Python's (Py*: abi3audit checks that they are in the limited API),
  * the CUDA runtime's (versioned libcudart.so.N, N the variant's major), and
  * torch's stable C shims (aoti_torch_*, torch_*): no C++ symbol of torch,
    so a torch upgrade cannot break the binary with "undefined symbol";
  * what another library of the same wheel exports (kernforge-legacy's
    extensions link its TH/THC runtime library);
and for a CUDA variant, the SASS and PTX that cuobjdump finds in each library
are exactly those TORCH_CUDA_ARCH_LIST asks for. Prints a table of the wheels
(size, tag, architectures); exits 1 with every problem listed.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

RUNTIME_VERSIONS = ("GLIBC_", "GLIBCXX_", "CXXABI_", "GCC_")
STABLE_SHIM = re.compile(r"^(aoti_torch_|torch_)\w+$")
CXX_STD = re.compile(r"^_Z(N|NK|T[VIS]N?)?St")  # std::..., and its vtables and typeinfo
PYTHON = re.compile(r"^_?Py")
# Linker and toolchain hooks every shared library may reference weakly. A
# toolchain that links libstdc++ into the library (as the GPU host's compiler
# did, 2026-11-22) adds weak references to the transactional-memory runtime:
# _ITM_* and the transaction clones of operator new and delete (_ZGTt*), and
# to __cxa_pure_virtual. Weak: resolved only where that runtime is loaded.
WEAK_HOOKS = {"__gmon_start__", "__cxa_finalize", "__cxa_pure_virtual"}
WEAK_HOOK_PREFIXES = ("_ITM_", "_ZGTt")


def expected_archs(arch_list: str) -> tuple[set[str], set[str]]:
    """SASS and PTX targets for a TORCH_CUDA_ARCH_LIST ("8.0;9.0;12.0+PTX")."""
    sass, ptx = set(), set()
    for item in filter(None, re.split(r"[;\s]+", arch_list)):
        arch = "sm_" + item.removesuffix("+PTX").replace(".", "")
        sass.add(arch)
        if item.endswith("+PTX"):
            ptx.add(arch)
    return sass, ptx


def found_archs(library: Path) -> tuple[set[str], set[str]]:
    """SASS and PTX targets inside a library, as cuobjdump lists them."""

    def listed(flag: str) -> set[str]:
        proc = subprocess.run([_cuda_tool("cuobjdump"), flag, str(library)], capture_output=True, text=True)
        if proc.returncode != 0 and "does not contain device code" not in proc.stderr + proc.stdout:
            raise RuntimeError(f"cuobjdump {flag} {library.name}: {proc.stderr.strip()}")
        return set(re.findall(r"\.(sm_\d+a?)\.", proc.stdout))

    return listed("--list-elf"), listed("--list-ptx")


def _cuda_tool(name: str) -> str:
    """A CUDA toolkit program: CUDA_HOME's, on PATH, the standard location's, or
    from NVIDIA's PyPI packages (nvidia-cuda-cuobjdump: nvidia/cu13/bin)."""
    folders = [Path(os.environ["CUDA_HOME"], "bin")] if os.environ.get("CUDA_HOME") else []
    folders += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    folders += [Path("/usr/local/cuda/bin")]
    folders += [Path(f) for entry in sys.path if entry for f in sorted(glob.glob(f"{entry}/nvidia/*/bin"))]
    for folder in folders:
        if (folder / name).is_file():
            return str(folder / name)
    raise FileNotFoundError(f"{name} not found: install nvidia-cuda-cuobjdump, or set CUDA_HOME to a toolkit")


def undefined_symbols(library: Path) -> list[tuple[str, str, str]]:
    """(symbol, version, nm type) for each undefined dynamic symbol."""
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", "--with-symbol-versions", str(library)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    symbols = []
    for line in out.splitlines():
        kind, _, name = line.strip().partition(" ")
        name, _, version = name.partition("@")
        symbols.append((name, version.lstrip("@"), kind))
    return symbols


def defined_symbols(library: Path) -> set[str]:
    """The dynamic symbols a library exports."""
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1].partition("@")[0] for line in out.splitlines() if line.strip()}


def symbol_problems(library: Path, cuda_major: str | None, beside: set[str] = frozenset()) -> list[str]:
    """The undefined symbols of `library` that none of the allowed sources
    answers (`beside`: what the wheel's other libraries export)."""
    bad = []
    for name, version, kind in undefined_symbols(library):
        if name in beside:
            continue
        weak_hook = kind == "w" and (name in WEAK_HOOKS or name.startswith(WEAK_HOOK_PREFIXES))
        if version.startswith(RUNTIME_VERSIONS) or weak_hook:
            continue
        if cuda_major and version == f"libcudart.so.{cuda_major}":
            continue
        if not version and (STABLE_SHIM.match(name) or CXX_STD.match(name) or PYTHON.match(name)):
            continue
        bad.append(f"{name}{'@' + version if version else ''}")
    return bad


def audit(wheels: Path, variant: str, arch_list: str | None) -> list[str]:
    problems: list[str] = []
    cuda_major = variant.removeprefix("cu") if variant.startswith("cu") else None
    sass_wanted, ptx_wanted = expected_archs(arch_list) if arch_list else (set(), set())
    found = sorted(wheels.glob("*.whl"))
    if not found:
        return [f"no wheels in {wheels}"]
    rows = []
    for whl in found:
        dist, version, *_, python, abi, platform = whl.name.removesuffix(".whl").split("-")
        binary = abi != "none"
        if binary and version.partition("+")[2] != variant:
            problems.append(f"{whl.name}: version {version} should carry the variant, +{variant}")
        if binary and (python, abi) != ("cp310", "abi3"):
            problems.append(f"{whl.name}: tagged {python}-{abi}, expected cp310-abi3")
        archs = ""
        with tempfile.TemporaryDirectory() as tmp:
            with zipfile.ZipFile(whl) as zf:
                zf.extractall(tmp)
            libraries = sorted(p for p in Path(tmp).rglob("*.so*") if ".libs" not in p.parts[-2])
            if binary and not libraries:
                problems.append(f"{whl.name}: a platform wheel with no shared library")
            exports = {lib: defined_symbols(lib) for lib in libraries}
            for lib in libraries:
                where = f"{whl.name}: {lib.relative_to(tmp)}"
                beside = set().union(*(s for other, s in exports.items() if other != lib))
                bad = symbol_problems(lib, cuda_major, beside)
                if bad:
                    problems.append(
                        f"{where}: undefined symbols beyond the stable C shims: {', '.join(bad[:8])}"
                    )
                if cuda_major:
                    sass, ptx = found_archs(lib)
                    if (sass, ptx) != (sass_wanted, ptx_wanted):
                        problems.append(
                            f"{where}: SASS {sorted(sass)} PTX {sorted(ptx)}, but the arch list "
                            f"{arch_list!r} asks for SASS {sorted(sass_wanted)} PTX {sorted(ptx_wanted)}"
                        )
                    archs = "SASS " + " ".join(_arch_sort(sass)) + "; PTX " + " ".join(_arch_sort(ptx))
        size = whl.stat().st_size
        size_text = f"{size / 2**20:.2f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"
        rows.append(f"| {dist} | {version} | {python}-{abi}-{platform} | {size_text} | {archs or '-'} |")
    print(f"\nwheels for variant {variant} ({wheels}):\n")
    print("| distribution | version | tag | size | CUDA architectures |\n| --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    return problems


def _arch_sort(archs: set[str]) -> list[str]:
    return sorted(archs, key=lambda a: int(re.sub(r"\D", "", a)))


def check_nvcc(major: str) -> list[str]:
    """nvcc must be the variant's CUDA major version (torch's CUDA_HOME first)."""
    from torch.utils.cpp_extension import CUDA_HOME

    nvcc = Path(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else None
    nvcc = str(nvcc) if nvcc and nvcc.exists() else shutil.which("nvcc")
    if nvcc is None:
        return [f"no nvcc found: a cu{major} build needs the CUDA {major} toolkit (set CUDA_HOME)"]
    release = re.search(
        r"release (\d+)\.(\d+)", subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    )
    if release is None or release.group(1) != major:
        got = f"{release.group(1)}.{release.group(2)}" if release else "an unknown version"
        return [f"{nvcc} is CUDA {got}: a cu{major} build needs the CUDA {major} toolkit (set CUDA_HOME)"]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("wheels", nargs="?", type=Path, help="folder of .whl files")
    parser.add_argument("--variant", help="cpu, cu12 or cu13")
    parser.add_argument("--arch-list", help="TORCH_CUDA_ARCH_LIST of a CUDA variant")
    parser.add_argument("--check-nvcc", metavar="MAJOR", help="only check nvcc's CUDA major version")
    args = parser.parse_args()
    if args.check_nvcc:
        problems = check_nvcc(args.check_nvcc)
    else:
        if args.wheels is None or args.variant is None:
            parser.error("give a wheel folder and --variant")
        if args.variant != "cpu" and not args.arch_list:
            parser.error("a CUDA variant needs --arch-list")
        problems = audit(args.wheels, args.variant, args.arch_list)
    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
