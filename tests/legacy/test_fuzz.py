"""Every function the TH/THC runtime provides, called from a built extension
with bad arguments: NULL for every handle; then fresh handles (2 x 3 tensors
of zeros, storages of 6) with every integer 7 (a dimension or index out of
range, sizes that do not match); then tensors of sevens with every integer 0
(index tensors whose values are out of range, probabilities above 1, on the
GPU what torch's kernels would meet with a device-side assert, which ends
every later CUDA call of the process). Nothing may crash; a NULL where a handle is
needed must raise an error naming the function, and every error must name
the function that raised it. The calls run in a child process, one line of
output each, so a crash is reported with the function that caused it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import build_folder, built_extension, built_once

# Functions that take NULL for their handles, as TH's did: freeing NULL does
# nothing; isValid answers whether a generator is NULL; newWithStorage1d-4d
# with a NULL storage make a tensor of new storage.
TAKES_NULL = re.compile(r"_(free|isValid|newWithStorage\dd)$")
# Functions whose index tensor's values are positions along a dimension.
# THC's functions (THCharTensor is the CPU's char tensor).
CUDA_HALF = re.compile(r"THC(?!har)")
INDEX_VALUES = re.compile(r"Tensor_(index(Select|Copy|Add|Fill)(_long)?|gather|scatter(Add|Fill)?)$")

PROTOTYPE = re.compile(r"^(?:extern\s+)?(?P<ret>[\w\s\*]+?)\s*\b(?P<name>TH\w+)\s*\((?P<params>[^()]*)\)$")
HANDLE = re.compile(r"^(?:const\s+)?(?:struct\s+)?(TH\w*(?:Tensor|Storage)|THGenerator|THCState)\s*\*\s*\w*$")
SCALARS = {
    "int", "long", "char", "int64_t", "uint64_t", "ptrdiff_t", "size_t", "float", "double", "unsigned",
    "THHalf", "THBFloat16", "int8_t", "uint8_t", "int16_t", "int32_t",
}  # fmt: skip


def _exported(with_cuda: bool) -> set[str]:
    from kernforge_legacy import ffi

    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(ffi.runtime_library(with_cuda))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-1].startswith("TH")}


def _prototypes(with_cuda: bool) -> list[tuple[str, str, list[str]]]:
    """(return type, name, parameter types) of every function the headers
    declare and the runtime exports, read from the preprocessed headers."""
    from kernforge_legacy import ffi

    inc = Path(ffi.include_dir())
    flags = [f"-I{inc}", f"-I{inc / 'TH'}", f"-I{inc / 'THC'}"]
    source = "#include <TH/TH.h>\n"
    if with_cuda:
        cuda_home = ffi._cuda_home()
        libraries = ffi._thc_libraries(cuda_home)[0]
        flags += ["-DKERNFORGE_LEGACY_WITH_CUDA", f"-I{cuda_home / 'include'}", *libraries]
        source += "#include <THC/THC.h>\n"
    text = subprocess.run(
        ["cc", "-E", "-P", *flags, "-x", "c", "-"], input=source, capture_output=True, text=True, check=True
    ).stdout
    exported = _exported(with_cuda)
    found = {}
    for decl in " ".join(text.split()).split(";"):
        m = PROTOTYPE.match(decl.strip())
        if not m or m["name"] not in exported or m["name"] in found:
            continue
        params = [p.strip() for p in m["params"].split(",")]
        params = [] if params in ([""], ["void"]) else params
        if "..." in params:  # printf-like (THCudaCheck's helpers): nothing to fuzz
            continue
        if all(HANDLE.match(p) or _scalar(p) or "*" in p for p in params):
            found[m["name"]] = (" ".join(m["ret"].split()), m["name"], params)
    return sorted(found.values(), key=lambda f: f[1])


def _scalar(param: str) -> str | None:
    if "*" in param or "[" in param:
        return None
    words = [w for w in re.findall(r"\w+", param) if w != "const"]
    if not words:
        return None
    base = " ".join(words[:-1]) if len(words) > 1 else " ".join(words)
    return base if base in SCALARS or base.split()[-1] in SCALARS else None


def _handle_type(param: str) -> str | None:
    m = HANDLE.match(param)
    return m.group(1) if m else None


def _maker(kind: str, with_state: bool) -> list[str]:
    """A C function making NULL (mode 0) or a fresh handle of `kind`: a
    tensor of zeros (mode 1) or of sevens (mode 2; zeros for the 16-bit
    float types, whose C values are not numbers), a storage of 6 zeros."""
    st = "state, " if with_state else ""
    if kind == "THGenerator":
        body = "return THGenerator_new();"
    elif kind == "THLongStorage":
        body = "return THLongStorage_newWithSize2(2, 3);"
    elif kind.endswith("Storage"):
        # zeros, not new memory: a copy from it would read memory nothing wrote
        zero = "(THBFloat16){0}" if "BFloat16" in kind else "(THHalf){0}" if "Half" in kind else "0"
        if kind.startswith("THCudaHalf"):
            zero = "(KFL_CUDA_HALF){0}"
        body = f"{kind}* s = {kind}_newWithSize({st}6); {kind}_fill({st}s, {zero}); return s;"
    elif "Half" in kind or "BFloat16" in kind:
        body = f"{kind}* t = {kind}_newWithSize2d({st}2, 3); {kind}_zero({st}t); return t;"
    else:
        body = (
            f"{kind}* t = {kind}_newWithSize2d({st}2, 3); "
            f"if (mode == 2) {kind}_fill({st}t, 7); else {kind}_zero({st}t); return t;"
        )
    return [f"static {kind}* make_{kind}(int mode) {{ if (!mode) return NULL; {body} }}"]


def _source(functions, with_cuda: bool) -> str:
    lines = ["#include <TH/TH.h>"]
    if with_cuda:
        lines += ["#include <THC/THC.h>", "extern THCState* state;"]
    kinds = sorted({k for _, _, ps in functions for p in ps if (k := _handle_type(p)) and k != "THCState"})
    for kind in kinds:
        lines += _maker(kind, with_cuda and kind.startswith("THCuda"))
    lines += ["int fuzz_call(int index, int mode) {", "  switch (index) {"]
    for i, (_, name, params) in enumerate(functions):
        args = []
        for p in params:
            kind = _handle_type(p)
            if kind == "THCState":
                args.append("state")
            elif kind:
                args.append(f"make_{kind}(mode)")
            elif _scalar(p):
                base = _scalar(p)
                args.append(f"({base}){{0}}" if base in ("THHalf", "THBFloat16") else "(mode == 1 ? 7 : 0)")
            else:  # raw memory: NULL
                args.append("NULL")
        lines.append(f"    case {i}: (void){name}({', '.join(args)}); return 1;")
    lines += ["  }", "  return 0;", "}"]
    return "\n".join(lines) + "\n"


def _build(tmp_path_factory, with_cuda: bool):
    """The fuzz extension over the CPU API, or over THC's alone: the CUDA
    runtime's CPU functions are the CPU test's (on a CUDA install it runs
    on that runtime), and under the sanitizer every call costs."""
    functions = _prototypes(with_cuda)
    if with_cuda:
        functions = [f for f in functions if CUDA_HALF.match(f[1])]
    name = "fuzz_cuda" if with_cuda else "fuzz"
    # Written under a lock and only where they differ: another pytest-xdist
    # worker may be reading them for its build (a header truncated under it
    # gave a module without fuzz_call).
    with built_once(build_folder(tmp_path_factory) / f"{name}-src") as src:
        files = {
            f"{name}.h": "int fuzz_call(int index, int mode);\n",
            f"{name}.c": _source(functions, with_cuda),
        }
        for file, text in files.items():
            if not (src / file).exists() or (src / file).read_text() != text:
                (src / file).write_text(text)
    module = built_extension(
        tmp_path_factory, name, [src / f"{name}.h"], [src / f"{name}.c"], with_cuda=with_cuda
    )
    return module, functions


RUNNER = """
import importlib.util, json, sys
import torch
spec = importlib.util.spec_from_file_location("fuzz", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
mode, count = int(sys.argv[2]), int(sys.argv[3])
for i in range(count):
    print(json.dumps(["call", i]), flush=True)
    try:
        module.fuzz_call(i, mode)
        print(json.dumps(["ok", i]), flush=True)
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else ""
        print(json.dumps(["error", i, type(e).__name__, first]), flush=True)
    if {cuda}:
        torch.cuda.synchronize()
"""


def _run(module, functions, mode: int, with_cuda: bool) -> dict[str, tuple[str, str] | None]:
    """{function: None (returned) or (error type, first line)}; fails naming
    the function whose call ended the process."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "0"}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            RUNNER.format(cuda=with_cuda),
            module.__file__,
            str(mode),
            str(len(functions)),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    results, last = {}, None
    for line in proc.stdout.splitlines():
        event = json.loads(line)
        name = functions[event[1]][1]
        if event[0] == "call":
            last = name
        elif event[0] == "ok":
            results[name] = None
        else:
            results[name] = (event[2], event[3])
    if proc.returncode != 0:
        pytest.fail(
            f"mode {mode}: the process ended (exit {proc.returncode}) in {last}:\n{proc.stderr[-2000:]}"
        )
    assert len(results) == len(functions)
    return results


def _check(results, functions, mode: int) -> None:
    unnamed = [
        f"{name}: {err}" for name, err in results.items() if err is not None and not err[1].startswith(name)
    ]
    assert not unnamed, f"{len(unnamed)} errors do not name their function, e.g. {unnamed[:10]}"
    if mode == 0:
        needs_handle = [
            name
            for _, name, params in functions
            if any(_handle_type(p) not in (None, "THCState") for p in params) and not TAKES_NULL.search(name)
        ]
        silent = [name for name in needs_handle if results[name] is None]
        assert not silent, f"{len(silent)} functions took NULL handles without an error: {silent[:20]}"
    if mode == 2:
        indexing = [name for _, name, _ in functions if INDEX_VALUES.search(name)]
        assert indexing
        unchecked = [
            f"{n}: {results[n]}" for n in indexing if "index out of range: 7 " not in str(results[n])
        ]
        assert not unchecked, f"{len(unchecked)} took an index of sevens: {unchecked[:10]}"


@pytest.mark.parametrize("mode", [0, 1, 2], ids=["null-handles", "out-of-range", "bad-values"])
def test_every_function_survives_bad_arguments(tmp_path_factory, mode):
    module, functions = _build(tmp_path_factory, with_cuda=False)
    assert len(functions) > 1500  # the CPU API, all of it
    _check(_run(module, functions, mode, with_cuda=False), functions, mode)


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["null-handles", "out-of-range", "bad-values"])
def test_every_cuda_function_survives_bad_arguments(tmp_path_factory, mode):
    module, functions = _build(tmp_path_factory, with_cuda=True)
    assert len(functions) > 500  # THC's API, all of it
    _check(_run(module, functions, mode, with_cuda=True), functions, mode)


@pytest.mark.parametrize(
    "name, mode, message",
    [
        ("THFloatTensor_cadd", 0, "THFloatTensor_cadd: argument 1 (r, THFloatTensor*) is NULL"),
        ("THFloatStorage_fill", 0, "THFloatStorage_fill: argument 1 (self, THFloatStorage*) is NULL"),
        ("THRandom_normal", 0, "THRandom_normal: argument 1 (gen, THGenerator*) is NULL"),
        ("THFloatTensor_narrow", 1, "THFloatTensor_narrow: dimension 7 out of range of a 2-D tensor"),
        ("THFloatTensor_select", 1, "THFloatTensor_select: dimension 7 out of range of a 2-D tensor"),
        ("THFloatTensor_get2d", 1, "THFloatTensor_get2d: index 7 out of range of dimension 0 (size 2)"),
        ("THFloatTensor_resizeNd", 1, "THFloatTensor_resizeNd: size is NULL for 7 dimensions"),
        (
            "THFloatTensor_catArray",
            1,
            "THFloatTensor_catArray: needs at least one tensor, got 7 (inputs is NULL)",
        ),
        ("THFloatTensor_indexSelect", 1, "THFloatTensor_indexSelect: "),
        (
            "THFloatTensor_indexSelect",
            2,
            "THFloatTensor_indexSelect: index out of range: 7 is not in [0, 2) along dimension 0",
        ),
        ("THFloatTensor_addmm", 1, "THFloatTensor_addmm: "),
    ],
)
def test_each_class_of_bad_argument_says_why(tmp_path_factory, name, mode, message):
    """The error each class of bad argument gives, in this process, which
    goes on working afterwards."""
    module, functions = _build(tmp_path_factory, with_cuda=False)
    index = [f[1] for f in functions].index(name)
    with pytest.raises(RuntimeError) as error:
        module.fuzz_call(index, mode)
    assert str(error.value).startswith(message), str(error.value)
    assert "aoti_torch" not in str(error.value) and "torch_call_dispatcher" not in str(error.value)
    a = torch.randn(3)
    assert torch.equal(a + a, 2 * a)  # and the process goes on
