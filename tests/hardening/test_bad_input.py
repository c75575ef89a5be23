"""Every bad input docs/hardening.md lists, tried: each gets the clear
exception or the defined result the table says, never a crash or a hang,
and never a write into an input. A property-based test (hypothesis) then
draws shapes, layouts, dtypes and values and compares every op with its
reference. The table and CASES are kept in step by a test here."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

import kernforge
from conftest import DEVICES
from every_op import leaf_view
from kernforge import reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "hardening.md"
NAN, INF = float("nan"), float("inf")


def _t(*shape, device="cpu", dtype=torch.float32):
    gen = torch.Generator().manual_seed(sum(shape) + 1)
    return torch.randn(shape, generator=gen, dtype=dtype).to(device)


def _lltm_args(device, B=2, F=3, S=4, **replace):
    args = {"x": _t(B, F, device=device), "W": _t(3 * S, S + F, device=device), "b": _t(3 * S, device=device),
            "h": _t(B, S, device=device), "c": _t(B, S, device=device)}  # fmt: skip
    args.update({k: v(device) if callable(v) else v for k, v in replace.items()})
    return args


def _lltm(device, S=4, **replace):
    return kernforge.lltm(**_lltm_args(device, S=S, **replace))


# (case id, call(device) -> result, expected). expected is (exception type,
# regex of its message) or a check(result, device) for a defined result.
# Cases whose id ends in "@cuda" run only where there is a GPU.
def _nan_like_torch(out, device):
    a = torch.tensor([NAN, INF, -INF, 1.0], device=device)
    torch.testing.assert_close(out, a * torch.tensor([2.0, 0.0, 2.0, INF], device=device), equal_nan=True)


def _round_ste_nan_inf(out, device):
    assert out.tolist() == [0.0, 1.0, 0.0]


def _lltm_nan_rows(out, device):
    h, c = out
    assert torch.isnan(h[0]).all() and torch.isnan(c[0]).all(), "row 0 had a NaN input"
    assert torch.isfinite(h[1]).all() and torch.isfinite(c[1]).all(), "row 1 must not see row 0's NaN"


def _empty(shape):
    def check(out, device):
        assert out.shape == torch.Size(shape) and out.device.type == device

    return check


def _zero_dim(out, device):
    assert out.shape == () and out.item() == pytest.approx(6.0)


def _lltm_empty_state(out, device):
    assert [t.shape for t in out] == [torch.Size([2, 0])] * 2


def _ones(d, dtype):
    return torch.ones(3, dtype=dtype, device=d)


def _vec(d, *values):
    return torch.tensor(values, device=d)


UNSUPPORTED = r"unsupported dtype: expected float16, bfloat16, float32 or float64, got a: \[3\] "
DEVICES_DIFFER = r"expected all tensors on one device, got "
CASES = {
    "mixed devices@cuda": (
        lambda d: kernforge.mul(_t(3, device="cpu"), _t(3, device="cuda")),
        (
            RuntimeError,
            r"mul: " + DEVICES_DIFFER + r"a: \[3\] float32 cpu, b: \[3\] float32 cuda:0",
        ),
    ),
    "lltm mixed devices@cuda": (
        lambda d: _lltm("cuda", W=_t(12, 7)),
        (RuntimeError, r"kernforge::lltm: " + DEVICES_DIFFER + r".*W: \[12, 7\] float32 cpu"),
    ),
    "mixed dtypes": (
        lambda d: kernforge.mul(_t(3, device=d), _t(3, device=d, dtype=torch.float64)),
        (
            RuntimeError,
            r"mul: expected tensors of one dtype, got a: \[3\] float32 \S+, b: \[3\] float64",
        ),
    ),
    "integer tensors for a float op": (
        lambda d: kernforge.mul(_ones(d, torch.int32), _ones(d, torch.int32)),
        (RuntimeError, r"kernforge::mul: " + UNSUPPORTED + "int32"),
    ),
    "bool tensors": (
        lambda d: kernforge.add(_ones(d, torch.bool), _ones(d, torch.bool)),
        (RuntimeError, r"kernforge::add: unsupported dtype: expected .*, int32 or int64, got a: \[3\] bool"),
    ),
    "complex tensors": (
        lambda d: kernforge.mul(_ones(d, torch.complex64), _ones(d, torch.complex64)),
        (RuntimeError, r"kernforge::mul: " + UNSUPPORTED + "complex64"),
    ),
    "integer tensor with requires_grad": (
        lambda d: _ones(d, torch.int64).requires_grad_(),
        (RuntimeError, r"only Tensors of floating point dtype can require gradients"),
    ),
    "non-integral alpha with integer tensors": (
        lambda d: kernforge.add(_ones(d, torch.int32), _ones(d, torch.int32), alpha=0.5),
        (RuntimeError, r"kernforge::add: .*alpha"),
    ),
    "unequal shapes": (
        lambda d: kernforge.mul(_t(3, 4, device=d), _t(4, 3, device=d)),
        (
            RuntimeError,
            r"mul: expected tensors of equal shape, got a: \[3, 4\] float32 \S+, b: \[4, 3\]",
        ),
    ),
    "shapes that would broadcast": (
        lambda d: kernforge.mul(_t(3, 4, device=d), _t(4, device=d)),
        (RuntimeError, r"kernforge::mul: expected tensors of equal shape"),
    ),
    "bias of the wrong length": (
        lambda d: kernforge.fused_relu_add(_t(3, 4, device=d), _t(3, 4, device=d), _t(3, device=d)),
        (
            RuntimeError,
            r"bias must be 1-D with 4 elements \(the size of the last dimension of x\)",
        ),
    ),
    "bias of rank 2": (
        lambda d: kernforge.fused_relu_add(_t(3, 4, device=d), _t(3, 4, device=d), _t(1, 4, device=d)),
        (RuntimeError, r"kernforge::fused_relu_add: bias must be 1-D with 4 elements"),
    ),
    "tensor bias with 0-dim x": (
        lambda d: kernforge.fused_relu_add(_t(device=d), _t(device=d), _t(device=d)),
        (RuntimeError, r"kernforge::fused_relu_add: a tensor bias needs x with at least one dimension"),
    ),
    "lltm x of rank 1": (
        lambda d: _lltm(d, x=lambda d: _t(3, device=d)),
        (RuntimeError, r"kernforge::lltm: x must be 2-D, got x: \[3\]"),
    ),
    "lltm W not [3S, S + F]": (
        lambda d: _lltm(d, W=lambda d: _t(13, 7, device=d)),
        (RuntimeError, r"lltm: W must be \[3 \* state, state \+ features\] = \[12, 7\], got W: \[13, 7\]"),
    ),
    "lltm b not [3S]": (
        lambda d: _lltm(d, b=lambda d: _t(4, device=d)),
        (RuntimeError, r"kernforge::lltm: b must be \[3 \* state\] = \[12\], got b: \[4\]"),
    ),
    "lltm batch sizes differ": (
        lambda d: _lltm(d, h=lambda d: _t(3, 4, device=d)),
        (RuntimeError, r"kernforge::lltm: x, h and c must have one batch size"),
    ),
    "lltm h and c state sizes differ": (
        lambda d: _lltm(d, c=lambda d: _t(2, 5, device=d)),
        (RuntimeError, r"kernforge::lltm: h and c must have one state size"),
    ),
    "lltm mixed dtypes": (
        lambda d: _lltm(d, W=lambda d: _t(12, 7, device=d, dtype=torch.float64)),
        (RuntimeError, r"kernforge::lltm: expected tensors of one dtype"),
    ),
    "None for a tensor": (
        lambda d: kernforge.mul(_t(3, device=d), None),
        (TypeError, r"kernforge::mul: b must be a Tensor, got NoneType"),
    ),
    "None for the LLTM's cell": (
        lambda d: _lltm(d, c=lambda d: None),
        (TypeError, r"kernforge::lltm: c must be a Tensor, got NoneType"),
    ),
    "a list for a tensor": (
        lambda d: kernforge.mul([1.0, 2.0, 3.0], _t(3, device=d)),
        (TypeError, r"kernforge::mul: a must be a Tensor, got list"),
    ),
    "a string for fused_relu_add's bias": (
        lambda d: kernforge.fused_relu_add(_t(3, device=d), _t(3, device=d), "1"),
        (TypeError, r"kernforge::fused_relu_add: bias must be a Tensor or a number, got str"),
    ),
    "a string for alpha": (
        lambda d: kernforge.add(_t(3, device=d), _t(3, device=d), alpha="2"),
        (RuntimeError, r"Expected a value of type 'float' for argument 'alpha' but instead found type 'str'"),
    ),
    "sparse tensors": (
        lambda d: kernforge.mul(_t(2, 2, device=d).to_sparse(), _t(2, 2, device=d).to_sparse()),
        (NotImplementedError, r"Could not run 'kernforge::mul' with arguments from the 'Sparse(CPU|CUDA)'"),
    ),
    "round_ste of integers": (
        lambda d: kernforge.round_ste(_ones(d, torch.int32)),
        (
            RuntimeError,
            r"round_ste: expected a dense float16, bfloat16, float32 or float64 CPU or CUDA",
        ),
    ),
    "NaN and Inf values": (
        lambda d: kernforge.mul(_vec(d, NAN, INF, -INF, 1.0), _vec(d, 2.0, 0.0, 2.0, INF)),
        _nan_like_torch,
    ),
    "round_ste of NaN and Inf": (lambda d: kernforge.round_ste(_vec(d, NAN, INF, -INF)), _round_ste_nan_inf),
    "lltm with a NaN in one row": (
        lambda d: _lltm(d, x=lambda d: torch.tensor([[NAN, 0.0, 0.0], [0.5, -0.5, 1.0]], device=d)),
        _lltm_nan_rows,
    ),
    "empty tensors": (
        lambda d: kernforge.fused_relu_add(_t(4, 0, device=d), _t(4, 0, device=d), _t(0, device=d)),
        _empty((4, 0)),
    ),
    "0-dim tensors": (lambda d: kernforge.mul(_vec(d, 2.0)[0], _vec(d, 3.0)[0]), _zero_dim),
    "lltm state size 0": (
        lambda d: _lltm(d, S=0),
        _lltm_empty_state,
    ),
}


def _params():
    for case in CASES:
        for device in DEVICES:
            device_name = device if isinstance(device, str) else device.values[0]
            if case.endswith("@cuda") and device_name == "cpu":
                continue
            marks = [pytest.mark.cuda] if device_name == "cuda" else []
            yield pytest.param(case, device_name, marks=marks, id=f"{case}-{device_name}")


@pytest.mark.parametrize("case,device", list(_params()))
def test_bad_input(case, device):
    call, expected = CASES[case]
    if isinstance(expected, tuple):
        exc, pattern = expected
        with pytest.raises(exc, match=pattern):
            call(device)
    else:
        expected(call(device), device)


def test_no_input_is_written():
    """The calls above build their inputs inside; here the same ops get
    inputs we keep, bad and good, and the inputs must come back unchanged."""
    a = torch.tensor([NAN, INF, -INF, 1.0, 0.5])
    b = torch.tensor([2.0, 0.0, 2.0, INF, -0.5])
    keep = [a.clone(), b.clone()]
    (
        kernforge.mul(a, b),
        kernforge.add(a, b, alpha=-2),
        kernforge.fused_relu_add(a, b, a),
        kernforge.round_ste(a),
    )
    for bad in (lambda: kernforge.mul(a, b[:3]), lambda: kernforge.fused_relu_add(a, b, b[:2])):
        with pytest.raises(RuntimeError):
            bad()
    for t, k in zip((a, b), keep, strict=True):
        torch.testing.assert_close(t, k, equal_nan=True, rtol=0, atol=0)


# --------------------------------------------------------------- the docs table


def _doc_rows() -> list[tuple[str, str]]:
    """(first cell, last cell) of every row of the bad-input table."""
    text = DOC.read_text()
    table = text[text.index("<!-- bad-input table -->") : text.index("<!-- end bad-input table -->")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows[1:]]
    return [(c[0], c[-1]) for c in cells]


def test_the_docs_table_lists_every_case_and_names_a_real_test():
    rows = _doc_rows()
    listed = {first.strip("`") for first, _ in rows}
    assert listed >= {case.removesuffix("@cuda") for case in CASES}, "a case missing from docs/hardening.md"
    tests_dir = Path(__file__).resolve().parents[1]
    for first, where in rows:
        match = re.fullmatch(r"`(tests/[\w/]+\.py)::(\w+)`", where)
        assert match, f"row {first}: the last cell must name a test, got {where!r}"
        path, name = match.groups()
        source = (tests_dir.parent / path).read_text()
        assert f"def {name}(" in source, f"row {first}: {path} has no {name}"
        if path.endswith("test_bad_input.py"):
            case = first.strip("`")
            assert case in CASES or case + "@cuda" in CASES, f"row {first}: not a case of {path}"


# --------------------------------------------------------------- property-based

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5, torch.float64: 1e-12}


@st.composite
def _laid_out(draw, shape, dtype, device, values):
    """A tensor of `shape` with values drawn from `values`, in a drawn
    layout: a permutation of a contiguous tensor, stepped slices, a storage
    offset of 0 to 3 elements, or stride 0 in a size-1-stored dimension."""
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim))) if ndim else []
    steps = [draw(st.integers(1, 3)) for _ in range(ndim)]
    expand = [draw(st.booleans()) and draw(st.booleans()) for _ in range(ndim)]  # about 1 in 4
    offset = draw(st.integers(0, 3))
    stored = [1 if expand[d] else (shape[d] - 1) * steps[d] + 1 if shape[d] else 0 for d in range(ndim)]
    stored_perm = [stored[p] for p in perm]
    n = math.prod(stored_perm)
    flat = draw(st.lists(values, min_size=n + offset, max_size=n + offset))
    base = torch.tensor(flat, dtype=torch.float64).to(dtype=dtype, device=device)[offset:]
    t = base.view(stored_perm).permute(*[perm.index(d) for d in range(ndim)]) if ndim else base.view(())
    index = tuple(slice(None, None, s) for s in steps)
    t = t[index] if ndim else t
    return t.expand(shape) if ndim else t


FINITE = st.floats(-8, 8, allow_nan=False, width=16)
SPECIAL = st.sampled_from([NAN, INF, -INF, 0.0, -0.0, 0.5, 65504.0])


@hypothesis.settings(max_examples=150, deadline=None, derandomize=True, database=None)
@hypothesis.given(data=st.data())
@pytest.mark.parametrize("device", DEVICES)
def test_every_op_matches_its_reference_on_drawn_inputs(device, data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape = tuple(data.draw(st.lists(st.integers(0, 6), max_size=4), label="shape"))
    values = st.one_of(FINITE, SPECIAL) if data.draw(st.booleans(), label="special values") else FINITE
    a = data.draw(_laid_out(shape, dtype, device, values), label="a")
    b = data.draw(_laid_out(shape, dtype, device, values), label="b")
    up = lambda t: t.double()
    checks = [
        (kernforge.mul(a, b), up(a) * up(b)),
        (kernforge.add(a, b, alpha=-0.5), up(a) - 0.5 * up(b)),
        (kernforge.round_ste(a), (up(a) >= 0.5).double()),
    ]
    if shape:
        bias = data.draw(_laid_out(shape[-1:], dtype, device, values), label="bias")
        checks.append((kernforge.fused_relu_add(a, b, bias), torch.relu(up(a)) + up(b) + up(bias)))
    for got, want in checks:
        assert got.shape == shape and got.dtype == dtype and got.is_contiguous()
        torch.testing.assert_close(got, want.to(dtype), rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True)


@hypothesis.settings(max_examples=40, deadline=None, derandomize=True, database=None)
@hypothesis.given(data=st.data())
@pytest.mark.parametrize("device", DEVICES)
def test_lltm_matches_its_reference_on_drawn_inputs(device, data):
    B, F, S = (data.draw(st.integers(0, 9), label=n) for n in "BFS")
    B, F, S = B, F + 1, S + 1  # features and state at least 1: x and W must have columns
    values = st.floats(-2, 2, allow_nan=False, width=32)
    shapes = {"x": (B, F), "W": (3 * S, S + F), "b": (3 * S,), "h": (B, S), "c": (B, S)}
    args = {k: data.draw(_laid_out(s, torch.float64, device, values), label=k) for k, s in shapes.items()}
    views = {k: leaf_view(v) for k, v in args.items()}  # gradients flow through the drawn layouts
    refs = {k: v.detach().clone().requires_grad_() for k, v in args.items()}
    got = kernforge.lltm(**views)
    want = reference.lltm(**refs)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-10)
    if B:
        gg = torch.autograd.grad(sum(o.sum() for o in got), list(views.values()))
        gw = torch.autograd.grad(sum(o.sum() for o in want), list(refs.values()))
        for g, w in zip(gg, gw, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-9)
