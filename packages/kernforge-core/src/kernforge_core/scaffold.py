"""``nox -s new-op -- NAME``: a new elementwise op across the kernforge layout.

    python packages/kernforge-core/src/kernforge_core/scaffold.py NAME [--root CHECKOUT]

The op starts as ``NAME(a, b) = (a - b) ** 2`` on two tensors of one shape, with
its gradients, and is complete from the first build: a schema line, CPU and
CUDA files on the shared elementwise launcher, the Python wrapper with its fake
kernel and autograd formula, a pure-PyTorch reference, the functional export,
parametrized tests (reference on every device, dtype and layout, gradients,
gradcheck, opcheck, torch.compile, bad input), the every-op hardening lists
and a benchmark case. Then replace the math: the three functors in
``csrc/NAME/NAME_math.h``, the two formulas in ``ops.py`` (the same math in
torch ops, which ``torch.compile`` fuses with the op's neighbours in place of
the kernels; a generated test checks they agree) and
``kernforge.reference.NAME``.

New files are written whole; existing files get lines inserted at places
found by their structure (the schema block, the end of ops.py, sorted
``__all__`` entries), never by markers. Nothing is written unless every edit
applies. This module uses only the standard library and imports nothing from
the package (which would load the compiled library), so it runs from a
checkout before anything is built.
"""

from __future__ import annotations

import argparse
import builtins
import keyword
import re
import shutil
import subprocess
import sys
from pathlib import Path
from string import Template

CPP_KEYWORDS = set(
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t "
    "char32_t class compl concept const consteval constexpr constinit const_cast continue co_await "
    "co_return co_yield decltype default delete do double dynamic_cast else enum explicit export "
    "extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq "
    "nullptr operator or or_eq private protected public register reinterpret_cast requires return "
    "short signed sizeof static static_assert static_cast struct switch template this thread_local "
    "throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while "
    "xor xor_eq".split()
)
# torch.ops.kernforge.name is the namespace's own name, not an op.
TORCH_RESERVED = {"name"}

CORE = Path("packages/kernforge-core")
REGISTRATION = CORE / "csrc" / "registration.cpp"
OPS_PY = CORE / "src" / "kernforge_core" / "ops.py"
KF = Path("packages/kernforge/src/kernforge")
# Where an existing name would clash with the new op's or its helpers' names
# (with csrc/common/*: the helpers in namespace kernforge the op's entries sit beside).
NAME_SOURCES = [REGISTRATION, OPS_PY, KF / "functional.py", KF / "reference.py", KF / "nn.py"]


class ScaffoldError(Exception):
    """A name the generator refuses, or a checkout it cannot edit."""


# ----------------------------------------------------------------------------- the checks


def check_name(name: str, root: Path) -> None:
    """Raises ScaffoldError, saying why, unless `name` can be a new op in `root`."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ScaffoldError(
            f"{name!r} is not a valid op name: use a lowercase identifier "
            "(letters, digits and underscores, starting with a letter), e.g. squared_difference"
        )
    for words, what in (
        (set(keyword.kwlist) | set(keyword.softkwlist), "a Python keyword"),
        (set(dir(builtins)), "a Python builtin"),
        (CPP_KEYWORDS, "a C++ keyword"),
        (TORCH_RESERVED, "reserved by torch.ops (the namespace's own attribute)"),
    ):
        if name in words:
            raise ScaffoldError(f"{name!r} is {what}: choose another op name")
    existing = [root / CORE / "csrc" / name, root / "tests" / "core" / f"test_{name}.py"]
    for path in existing:
        if path.exists():
            raise ScaffoldError(f"op {name!r} exists: {path.relative_to(root)} is already there")
    common = sorted((root / CORE / "csrc" / "common").iterdir())
    for rel in [*NAME_SOURCES, *(p.relative_to(root) for p in common)]:
        text = (root / rel).read_text()
        for word in (name, f"{name}_backward"):
            if re.search(rf"\b{word}\b", text):
                raise ScaffoldError(
                    f"op {name!r} exists, or clashes with a name in use: {word!r} appears in {rel}"
                )


# ----------------------------------------------------------------------------- new files

MATH_H = Template("""\
// ${name}(a, b) = (a - b)^2 and its gradients: the math, and the entries both
// backends instantiate. Written by `nox -s new-op`: put your op's math in the
// three functors (and in kernforge.reference.${name}); the entries need no change
// for another op of two same-shape float tensors.
#pragma once

#include <tuple>

#include "common/checks.h"
#include "common/elementwise_op.h"

namespace kernforge {

// The forward, in the opmath type T (float for float16 and bfloat16).
struct ${camel}Fn {
  template <class T>
  C10_HOST_DEVICE T operator()(T a, T b) const {
    const T d = a - b;
    return d * d;
  }
};

// The gradient of a: grad * d(out)/da.
struct ${camel}GradAFn {
  template <class T>
  C10_HOST_DEVICE T operator()(T grad, T a, T b) const {
    return T(2) * grad * (a - b);
  }
};

// The gradient of b: grad * d(out)/db.
struct ${camel}GradBFn {
  template <class T>
  C10_HOST_DEVICE T operator()(T grad, T a, T b) const {
    return T(-2) * grad * (a - b);
  }
};

template <class Launcher>
Tensor ${name}(const Tensor& a, const Tensor& b) {
  const ScalarType dtype = check_same("${name}", Dtypes::Floating, {{"a", &a}, {"b", &b}});
  typename Launcher::Guard guard(a);
  const auto make = [](auto) { return ${camel}Fn{}; };
  return run_elementwise<Launcher, Dtypes::Floating>(dtype, a, {a, b}, make);
}

// (grad_a, grad_b): one pass of the shared launcher for each. A kernel that
// writes both from one read of (grad, a, b) would move 5 tensors instead of 8.
template <class Launcher>
std::tuple<Tensor, Tensor> ${name}_backward(const Tensor& grad, const Tensor& a, const Tensor& b) {
  const ScalarType dtype = check_same("${name}_backward", Dtypes::Floating,
                                      {{"grad", &grad}, {"a", &a}, {"b", &b}});
  typename Launcher::Guard guard(a);
  const auto make_a = [](auto) { return ${camel}GradAFn{}; };
  const auto make_b = [](auto) { return ${camel}GradBFn{}; };
  Tensor grad_a = run_elementwise<Launcher, Dtypes::Floating>(dtype, grad, {grad, a, b}, make_a);
  Tensor grad_b = run_elementwise<Launcher, Dtypes::Floating>(dtype, grad, {grad, a, b}, make_b);
  return {grad_a, grad_b};
}

}  // namespace kernforge
""")

BACKEND_FILE = Template("""\
#include <torch/csrc/stable/library.h>

#include "${launcher_header}"
#include "${name}/${name}_math.h"

STABLE_TORCH_LIBRARY_IMPL(kernforge, ${key}, m) {
  m.impl("${name}", TORCH_BOX(&kernforge::${name}<kernforge::${ns}::Launcher>));
  m.impl("${name}_backward", TORCH_BOX(&kernforge::${name}_backward<kernforge::${ns}::Launcher>));
}
""")

TEST_PY = Template('''\
"""kernforge.${name} against kernforge.reference.${name} on every device, dtype
and layout: forward, gradients, gradcheck, opcheck, torch.compile, bad input.
Written by `nox -s new-op`; the every-op hardening tests (tests/hardening)
cover ${name} too."""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import kernforge
from conftest import close, make, poison_allocator, random
from kernforge import reference

SHAPES = [(37, 65), (3, 5, 129), (1000,)]
# (rtol, atol) against the float64 reference, rounded once to the dtype.
TOL = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1e-2), torch.float32: (1e-5, 1e-5),
       torch.float64: (1e-7, 1e-7)}  # fmt: skip


def _inputs(shape, dtype, device, layout, seed):
    gen = torch.Generator().manual_seed(seed)
    return make(shape, dtype, device, layout, gen), make(shape, dtype, device, layout, gen)


def _reference(*args, dtype):
    """The reference, computed in float64 on the CPU and rounded once to `dtype`."""
    return reference.${name}(*(t.detach().cpu().double() for t in args)).to(dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward_matches_reference(shape, device, float_dtype, layout):
    a, b = _inputs(shape, float_dtype, device, layout, seed=1)
    before = a.clone(), b.clone()
    poison_allocator(a)  # the output starts as NaN: every element must be written
    out = kernforge.${name}(a, b)
    assert out.shape == a.shape and out.dtype == float_dtype and out.device == a.device
    assert out.is_contiguous()
    rtol, atol = TOL[float_dtype]
    close(out.cpu(), _reference(a, b, dtype=float_dtype), rtol=rtol, atol=atol)
    assert torch.equal(a, before[0]) and torch.equal(b, before[1])  # inputs untouched


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_gradients_match_reference(device, dtype, layout):
    a, b = _inputs((29, 70), dtype, device, layout, seed=2)
    grad = random((29, 70), dtype, device, torch.Generator().manual_seed(3))
    ours = [a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()]
    refs = [a.detach().double().requires_grad_(), b.detach().double().requires_grad_()]
    poison_allocator(grad)
    kernforge.${name}(*ours).backward(grad)
    reference.${name}(*refs).backward(grad.double())
    rtol, atol = (4e-2, 4e-2) if dtype == torch.bfloat16 else (1e-5, 1e-5)
    for o, r in zip(ours, refs, strict=True):
        close(o.grad, r.grad.to(dtype), rtol=rtol, atol=atol)


def test_only_the_needed_gradient(device):
    a, b = _inputs((8, 5), torch.float64, device, "contiguous", seed=4)
    b_ref = b.clone().requires_grad_()
    b.requires_grad_()
    kernforge.${name}(a, b).sum().backward()
    (expected,) = torch.autograd.grad(reference.${name}(a, b_ref).sum(), b_ref)
    assert a.grad is None
    close(b.grad, expected)


def test_gradcheck(device):
    a, b = _inputs((4, 6), torch.float64, device, "contiguous", seed=5)
    assert torch.autograd.gradcheck(kernforge.${name}, (a.requires_grad_(), b.requires_grad_()))


def test_double_backward_is_refused(device):
    a, b = _inputs((4, 6), torch.float64, device, "contiguous", seed=6)
    a.requires_grad_()
    (grad_a,) = torch.autograd.grad(kernforge.${name}(a, b).sum(), a, create_graph=True)
    with pytest.raises(NotImplementedError, match="kernforge::${name}: double backward"):
        grad_a.sum().backward()


def test_opcheck(device):
    gen = torch.Generator().manual_seed(7)
    r = lambda *shape: random(shape, torch.float32, device, gen)
    ops = torch.ops.kernforge
    # requires_grad on the inputs exercises the autograd registration
    torch.library.opcheck(ops.${name}.default, (r(5, 7).requires_grad_(), r(5, 7).requires_grad_()))
    torch.library.opcheck(ops.${name}.default, (r(7, 5).t(), r(5, 7)))
    torch.library.opcheck(ops.${name}_backward.default, (r(5, 7), r(5, 7), r(5, 7)))


def test_compile_fullgraph_dynamic(device):
    torch._dynamo.reset()
    compiled = torch.compile(kernforge.${name}, fullgraph=True, dynamic=True)
    for seed, shape in enumerate([(6, 10), (9, 3)]):  # two shapes: one graph with symbolic sizes
        a, b = _inputs(shape, torch.float32, device, "contiguous", seed=10 + seed)
        ours = [a.clone().requires_grad_(), b.clone().requires_grad_()]
        refs = [a.clone().requires_grad_(), b.clone().requires_grad_()]
        out, expected = compiled(*ours), reference.${name}(*refs)
        close(out, expected)
        out.sum().backward()
        expected.sum().backward()
        for o, r in zip(ours, refs, strict=True):
            close(o.grad, r.grad)


def test_compiled_chain_fuses_and_matches_eager(device):
    """Under torch.compile the op's formulas (forward and backward) stand in
    for its kernels and fuse with the ops around it: no kernforge call is
    left in the generated code, and the results equal eager's, which ran the
    kernels (so the formulas and csrc/${name}/${name}_math.h agree)."""
    a, b = _inputs((12, 20), torch.float32, device, "contiguous", seed=12)
    grad = random((12,), torch.float32, device, torch.Generator().manual_seed(13))
    chain = lambda a, b: (kernforge.${name}(a, b) * 0.5 + 1).sum(dim=-1)
    results = []
    for fn in (chain, torch.compile(chain, fullgraph=True)):
        ours = [a.clone().requires_grad_(), b.clone().requires_grad_()]
        with torch._inductor.config.patch(force_disable_caches=True):
            out, code = run_and_get_code(fn, *ours)
            _, backward_code = run_and_get_code(lambda: out.backward(grad))  # noqa: B023
        results.append((out, *(t.grad for t in ours), code + backward_code))
    (*eager, _), (*compiled, code) = results
    # (comments in the code may name the op: inductor notes where a fused kernel came from)
    assert code and not any("torch.ops.kernforge" in c for c in code), code
    for c, e in zip(compiled, eager, strict=True):
        close(c, e)


def test_bad_input(device):
    a = torch.randn(3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"kernforge::${name}: expected tensors of equal shape"):
        kernforge.${name}(a, torch.randn(4, device=device))
    with pytest.raises(RuntimeError, match=r"kernforge::${name}: .*float16, bfloat16, float32 or float64"):
        kernforge.${name}(a.int(), a.int())
    with pytest.raises(TypeError, match=r"kernforge::${name}: b must be a Tensor, got float"):
        kernforge.${name}(a, 1.0)
''')

OPS_SECTION = Template('''\


# ----------------------------------------------------------------------------- ${name}


def ${name}(a: Tensor, b: Tensor) -> Tensor:
    """Elementwise ``(a - b) ** 2``.

    Args:
        a, b: tensors of one shape (any strides), one dtype (float16, bfloat16,
            float32 or float64) and one device (CPU or CUDA).

    Returns:
        A new contiguous tensor of that shape and dtype. Half and bfloat16
        compute in float32 and round once.

    Gradients: ``2 * grad * (a - b)`` for a and its negative for b, from
    ``kernforge::${name}_backward``; no double backward.

    Raises:
        RuntimeError: naming the offending argument with its shape, dtype and
            device, for mixed devices or dtypes, unsupported dtypes or unequal shapes.
        TypeError: naming the argument, for one that is not a tensor.
    """
    if _needs_autograd("${name}", a=a, b=b):
        return _with_autograd("${name}", a, b)
    with _below_autograd():
        return _ops.${name}.default(a, b)


@torch.library.register_fake("kernforge::${name}")
def _(a, b):
    fusion.activate()
    _checks.same("${name}", _checks.FLOATING, a=a, b=b)
    return a.new_empty(a.shape)


@fusion.formula(_ops.${name}.default)
def _(a, b):
    # The same math in torch ops, which torch.compile fuses with its neighbours.
    return ((a - b) * (a - b)).contiguous()


def _${name}_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _${name}_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a, grad_b = _call("${name}_backward", grad, a, b)
    return (grad_a if ctx.needs_input_grad[0] else None, grad_b if ctx.needs_input_grad[1] else None)


_register_autograd("${name}", _${name}_backward, _${name}_setup)


@torch.library.register_fake("kernforge::${name}_backward")
def _(grad, a, b):
    fusion.activate()
    _checks.same("${name}_backward", _checks.FLOATING, grad=grad, a=a, b=b)
    return grad.new_empty(grad.shape), grad.new_empty(grad.shape)


@fusion.formula(_ops.${name}_backward.default)
def _(grad, a, b):
    grad_a = (2 * grad * (a - b)).contiguous()
    return grad_a, -grad_a


def _${name}_double_backward(ctx, grad_a, grad_b):
    raise NotImplementedError(
        "kernforge::${name}: double backward is not implemented "
        "(register an autograd formula for kernforge::${name}_backward)"
    )


_register_autograd("${name}_backward", _${name}_double_backward, _keeps_nothing)
''')

REFERENCE_FN = Template('''\


def ${name}(a: Tensor, b: Tensor) -> Tensor:
    """``(a - b) ** 2``."""
    return (a - b) * (a - b)
''')

BENCH_CASE = Template("""\
    "${name}": (
        3,
        {
            "kernforge": lambda a, b, bias: kernforge.${name}(a, b),
            "eager": lambda a, b, bias: reference.${name}(a, b),
        },
    ),
""")


# ----------------------------------------------------------------------------- edits of existing files


def _insert_schema(text: str, name: str) -> str:
    """The two schema lines at the end of the STABLE_TORCH_LIBRARY block."""
    block = re.search(r"^STABLE_TORCH_LIBRARY\(kernforge, m\) \{\n.*?^\}", text, re.M | re.S)
    if block is None:
        raise ScaffoldError(f"no `STABLE_TORCH_LIBRARY(kernforge, m) {{ ... }}` block in {REGISTRATION}")
    lines = (
        f'  m.def("{name}(Tensor a, Tensor b) -> Tensor");\n'
        f'  m.def("{name}_backward(Tensor grad, Tensor a, Tensor b) -> (Tensor, Tensor)");\n'
    )
    end = block.end() - 1  # the closing brace
    return text[:end] + lines + text[end:]


def _insert_sorted_item(text: str, opener: str, closer: str, item: str, where: Path) -> str:
    """`item` (e.g. ``"name",``) into the one-per-line block after the line
    `opener`, before the first lowercase entry that sorts after it."""
    start = text.find(opener + "\n")
    if start < 0:
        raise ScaffoldError(f"no line `{opener}` in {where} (one entry per line is expected)")
    body_start = start + len(opener) + 1
    body_end = text.find("\n" + closer, body_start)
    if body_end < 0:
        raise ScaffoldError(f"the block after `{opener}` in {where} does not end with `{closer}`")
    entries = text[body_start:body_end].split("\n")
    key = item.strip().strip('",')
    at = len(entries)
    for i, entry in enumerate(entries):
        word = entry.strip().strip('",')
        if word[:1].islower() and word > key:
            at = i
            break
    indent = re.match(r"\s*", entries[0]).group(0) if entries else "    "
    entries.insert(at, indent + item)
    return text[:body_start] + "\n".join(entries) + text[body_end:]


def _insert_after_last(text: str, pattern: str, line: str, where: Path) -> str:
    found = list(re.finditer(pattern, text, re.M))
    if not found:
        raise ScaffoldError(f"no line matching {pattern!r} in {where}")
    end = text.index("\n", found[-1].end()) + 1
    return text[:end] + line + text[end:]


def _insert_bench_case(text: str, name: str, where: Path) -> str:
    block = re.search(r"^CASES = \{\n.*?^\}", text, re.M | re.S)
    if block is None:
        raise ScaffoldError(f"no `CASES = {{ ... }}` block in {where}")
    end = block.end() - 1
    text = text[:end] + BENCH_CASE.substitute(name=name) + text[end:]
    if "from kernforge import reference\n" not in text:
        text = _insert_after_last(text, r"^import kernforge$", "from kernforge import reference\n", where)
    return text


def plan(name: str, root: Path) -> dict[Path, str]:
    """Every file the new op writes or changes: path (relative to `root`) -> new text."""
    check_name(name, root)
    camel = "".join(part.capitalize() for part in name.split("_"))
    csrc = CORE / "csrc" / name
    files = {
        csrc / f"{name}_math.h": MATH_H.substitute(name=name, camel=camel),
        csrc / f"{name}_cpu.cpp": BACKEND_FILE.substitute(
            name=name, key="CPU", ns="cpu", launcher_header="common/elementwise_cpu.h"
        ),
        csrc / f"{name}_cuda.cu": BACKEND_FILE.substitute(
            name=name, key="CUDA", ns="cuda", launcher_header="common/elementwise_cuda.cuh"
        ),
        Path("tests") / "core" / f"test_{name}.py": TEST_PY.substitute(name=name),
    }

    def edit(rel: Path, change) -> None:
        files[rel] = change(files.get(rel) or (root / rel).read_text(), rel)

    edit(REGISTRATION, lambda t, rel: _insert_schema(t, name))
    edit(OPS_PY, lambda t, rel: t.rstrip("\n") + "\n" + OPS_SECTION.substitute(name=name))
    edit(KF / "reference.py", lambda t, rel: t.rstrip("\n") + "\n" + REFERENCE_FN.substitute(name=name))
    functional = KF / "functional.py"
    edit(
        functional,
        lambda t, rel: _insert_after_last(t, r"^\w+ = _impl\.\w+$", f"{name} = _impl.{name}\n", rel),
    )
    edit(functional, lambda t, rel: _insert_sorted_item(t, "__all__ = [", "]", f'"{name}",', rel))
    init = KF / "__init__.py"
    edit(init, lambda t, rel: _insert_sorted_item(t, "from .functional import (", ")", f"{name},", rel))
    edit(init, lambda t, rel: _insert_sorted_item(t, "__all__ = [", "]", f'"{name}",', rel))
    edit(Path("tests/every_op.py"), lambda t, rel: _insert_sorted_item(t, "OPS = [", "]", f'"{name}",', rel))
    layouts = Path("tests/hardening/test_layouts.py")
    edit(layouts, lambda t, rel: _insert_sorted_item(t, "ELEMENTWISE = {", "}", f'"{name}": 2,', rel))
    edit(Path("benchmarks/test_elementwise.py"), lambda t, rel: _insert_bench_case(t, name, rel))
    return files


# What a checkout holds that the build, the tests and the linters read.
CHECKOUT = ["packages", "tests", "benchmarks", "pyproject.toml", ".clang-format"]
BUILD_OUTPUTS = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.so", ".pytest_cache")


def copy_checkout(root: Path, dest: Path) -> Path:
    """A scratch copy of the checkout at `root` (sources only, no build
    outputs), to try the generator in without touching `root`."""
    for name in CHECKOUT:
        if (root / name).is_dir():
            shutil.copytree(root / name, dest / name, ignore=BUILD_OUTPUTS)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, dest / name)
    return dest


def write(name: str, root: Path) -> list[Path]:
    """Writes the new op into the checkout at `root`; returns the paths written."""
    files = plan(name, root)  # every edit is computed before anything is written
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return sorted(files)


def formatters() -> dict[str, str]:
    """The paths of ruff and clang-format, which `nox -s lint` checks the files with."""
    tools = {tool: shutil.which(tool) for tool in ("ruff", "clang-format")}
    missing = [tool for tool, path in tools.items() if path is None]
    if missing:
        raise ScaffoldError(
            f"{' and '.join(missing)} not found on PATH: run `nox -s new-op -- NAME`, which installs them"
        )
    return tools


def format_files(root: Path, written: list[Path], tools: dict[str, str]) -> None:
    """ruff (the import order, then the format) and clang-format over `written`."""
    python = [str(root / p) for p in written if p.suffix == ".py"]
    native = [str(root / p) for p in written if p.suffix in (".h", ".cpp", ".cu")]
    subprocess.run([tools["ruff"], "check", "-q", "--fix", "--select", "I", *python], cwd=root, check=True)
    subprocess.run([tools["ruff"], "format", "-q", *python], cwd=root, check=True)
    subprocess.run([tools["clang-format"], "-i", *native], cwd=root, check=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="the op's name, a lowercase identifier (e.g. squared_difference)")
    p.add_argument("--root", type=Path, default=Path.cwd(), help="the kernforge checkout (default: here)")
    p.add_argument("--into", type=Path, help="copy the checkout to this new folder and write the op there")
    p.add_argument(
        "--no-format", action="store_true", help="leave the files unformatted (no ruff, clang-format)"
    )
    args = p.parse_args(argv)
    root = args.root.resolve()
    try:
        tools = None if args.no_format else formatters()
        if args.into:
            check_name(args.name, root)
            root = copy_checkout(root, args.into.resolve())
        written = write(args.name, root)
        if tools:
            format_files(root, written, tools)
    except ScaffoldError as e:
        print(f"new-op: {e}", file=sys.stderr)
        return 2
    print(f"new op kernforge.{args.name}, (a - b) ** 2 to start with; written in {root}:")
    for rel in written:
        print(f"  {rel}")
    print(
        f"next: `nox -s test-cpu` builds and tests it; then put your math in "
        f"{CORE / 'csrc' / args.name / (args.name + '_math.h')} and kernforge.reference.{args.name}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
