"""The TH C API that 2017 extensions called, built from a fixture written in
that style (tests/legacy/fixtures/th_api), against torch on random data:
tensors made and freed in C with TH's reference counts, views, copies,
storages, math. The CPU here; the THC side shares the same definitions."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
import torch

from conftest import close
from kernforge_legacy import ffi

FIXTURE = Path(__file__).parent / "fixtures" / "th_api" / "src"


@pytest.fixture(scope="module")
def th(tmp_path_factory):
    root = tmp_path_factory.mktemp("th_api")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TORCH_EXTENSIONS_DIR", str(root / "cache"))
        ext = ffi.create_extension(
            "th_api",
            headers=[FIXTURE / "th_api.h"],
            sources=[FIXTURE / "th_api.c"],
            relative_to=str(root / "build.py"),
            verbose=False,
        )
        package = ext.build()
    spec = importlib.util.spec_from_file_location("fixture_th_api", package / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rand(*shape, dtype=torch.float64, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


MATH = {  # which -> the same in torch, of (a, b, value)
    0: lambda a, b, v: a + v,
    1: lambda a, b, v: a * v,
    2: lambda a, b, v: a / v,
    3: lambda a, b, v: a + v * b,
    4: lambda a, b, v: a - v * b,
    5: lambda a, b, v: a * b,
    6: lambda a, b, v: a / b,
    7: lambda a, b, v: a.abs(),
    8: lambda a, b, v: a.exp(),
    9: lambda a, b, v: a.abs().sqrt(),
    10: lambda a, b, v: a.clamp(-v, v),
    11: lambda a, b, v: torch.full_like(a, v),
    12: lambda a, b, v: torch.zeros_like(a),
}


@pytest.mark.parametrize("which", MATH)
def test_math_matches_torch(th, which):
    a, b = _rand(5, 7, seed=1), _rand(5, 7, seed=2)
    if which == 9:
        a = a.abs()
    out = torch.full((2,), float("nan"), dtype=torch.float64)  # wrong size, poisoned: resized and written
    if which in (11, 12):
        out = torch.full((5, 7), float("nan"), dtype=torch.float64)
    assert th.math_op(out, a, b, which, 0.75) == 1
    close(out, MATH[which](a, b, 0.75))


def test_math_writes_into_an_input_and_through_strides(th):
    a, b = _rand(6, 4, seed=3), _rand(4, 6, seed=4).t()  # b not contiguous
    expected = a + 2.5 * b
    assert th.math_op(a, a, b, 3, 2.5) == 1  # r is t: in place
    close(a, expected)


def test_float_cadd_as_the_official_example_calls_it(th):
    a, b = _rand(3, 4, dtype=torch.float32, seed=5), _rand(3, 4, dtype=torch.float32, seed=6)
    out = torch.empty(0)
    th.math_op_float(out, a, b, 3, 1.0)
    close(out, a + b)


@pytest.mark.parametrize("which, fn", [(0, torch.sum), (1, torch.max), (2, torch.min)])
def test_reductions(th, which, fn):
    a = _rand(9, 11, seed=7)
    assert th.reduce_op(a, a, which) == pytest.approx(fn(a).item(), rel=1e-12)


def test_dot(th):
    a, b = _rand(31, seed=8), _rand(31, seed=9)
    assert th.reduce_op(a, b, 3) == pytest.approx(torch.dot(a, b).item(), rel=1e-12)


@pytest.mark.parametrize("in_place", [0, 1])
def test_addmm(th, in_place):
    t, m1, m2 = _rand(4, 5, seed=10), _rand(4, 3, seed=11), _rand(3, 5, seed=12)
    expected = 0.5 * t + 2.0 * (m1 @ m2)
    r = torch.empty(0, dtype=torch.float64)
    th.gemm_op(r, t, m1, m2, 0.5, 2.0, in_place)
    close(r, expected)


def test_addmv(th):
    t, mat, vec = _rand(4, seed=13), _rand(4, 6, seed=14), _rand(6, seed=15)
    r = torch.empty(0, dtype=torch.float64)
    th.gemv_op(r, t, mat, vec, -1.0, 3.0)
    close(r, -t + 3.0 * (mat @ vec))


def test_storage_fill_initialises_the_whole_storage(th):
    base = torch.zeros(10)
    view = base[2:8]
    assert th.init_storage(view, -1.0) == 10  # the storage's size, not the view's
    assert torch.equal(base, torch.full((10,), -1.0))


def test_storage_of_an_empty_tensor_is_null(th):
    assert th.has_storage(torch.empty(0)) == 0
    assert th.has_storage(torch.ones(3)) == 1


def test_storage_offset_and_data(th):
    base = torch.arange(20, dtype=torch.float32)
    info = torch.empty(0, dtype=torch.int64)
    th.storage_info(base[5:12], info)
    assert info.tolist() == [5, 20, 1]


def test_new_tensors_from_views(th):
    src = _rand(3, 4, dtype=torch.float32, seed=16)
    outs = [torch.empty(0) for _ in range(4)]
    assert th.new_views(src, *outs) == 1
    for out, expected in zip(outs, [src[1], src[:, 1:3], src.t(), src.t().contiguous()], strict=True):
        assert torch.equal(out, expected)


@pytest.mark.parametrize(
    "which, view",
    [
        (0, lambda s: s[1]),
        (1, lambda s: s[:, 1:3]),
        (2, lambda s: s.t()),
        (3, lambda s: s.unsqueeze(0)),
        (4, lambda s: s),
    ],
)
def test_in_place_views_are_seen_by_python(th, which, view):
    src = _rand(3, 4, dtype=torch.float32, seed=17)
    self = torch.empty(0)
    assert th.inplace_view(self, src, which) == 1
    expected = view(src)
    assert self.shape == expected.shape and self.stride() == expected.stride()
    assert self.data_ptr() == expected.data_ptr()  # a view of src's memory, not a copy
    src.mul_(2)
    assert torch.equal(self, view(src))


def test_a_tensor_made_in_c_is_returned_through_an_argument(th):
    out = torch.empty(0)
    th.make_in_c(out, 2, 3, 7.0)
    assert torch.equal(out, torch.full((2, 3), 7.0))


def test_copy_between_shapes_and_reference_counts(th):
    src = torch.arange(12, dtype=torch.int64).view(3, 4)
    dst = torch.zeros(2, 6, dtype=torch.int64)
    th.copy_between(dst, src)
    assert torch.equal(dst, src.reshape(2, 6))


def test_no_handle_outlives_its_references(th):
    """10,000 calls that make, retain and free tensors and storages, and
    10,000 that borrow an argument's storage: nothing stays alive."""
    before = th.live_handles()
    src, dst = torch.arange(4), torch.empty(4, dtype=torch.int64)
    for _ in range(10_000):
        th.churn(1)
        th.has_storage(torch.ones(2))
        th.copy_between(dst, src)  # retains and frees an argument too
    assert th.live_handles() == before == 0


def test_errors_name_the_function(th):
    with pytest.raises(RuntimeError, match=r"THLongTensor_copy: sizes do not match: 3 and 12 elements"):
        th.copy_between(torch.zeros(3, dtype=torch.int64), torch.zeros(3, 4, dtype=torch.int64))
    # the C code's own tensor, made before the error, is not freed: an error
    # leaves C without running its cleanup, as TH's did
    assert th.live_handles() == 1


def test_rss_stays_flat_over_many_calls(th):
    """The handles' memory: churn makes a 4 KiB tensor per call."""
    statm = Path("/proc/self/statm")
    if not statm.exists():
        pytest.fail("needs /proc/self/statm (Linux)")
    th.churn(1000)
    before = int(statm.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    th.churn(20_000)  # 80 MB if nothing were freed
    after = int(statm.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    assert after - before < 16 * 2**20, (before, after)


def _column_major(buf, rows, cols, ld):
    """The rows x cols matrix stored column-major in buf with leading dimension ld."""
    return buf[: ld * cols].view(cols, ld)[:, :rows].t()


@pytest.mark.parametrize("transa, transb", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("beta", [0.0, -0.5])
def test_blas_gemm_column_major(th, transa, transb, beta):
    m, n, k = 5, 4, 3
    lda, ldb, ldc = 7, 6, 8  # padded leading dimensions
    a_rows, a_cols = (k, m) if transa else (m, k)
    b_rows, b_cols = (n, k) if transb else (k, n)
    a, b, c = _rand(lda * a_cols, seed=20), _rand(ldb * b_cols, seed=21), _rand(ldc * n, seed=22)
    if beta == 0.0:
        _column_major(c, m, n, ldc).fill_(float("nan"))  # ignored, as BLAS does with beta 0
    op_a = _column_major(a, a_rows, a_cols, lda)
    op_b = _column_major(b, b_rows, b_cols, ldb)
    op_a, op_b = (op_a.t() if transa else op_a), (op_b.t() if transb else op_b)
    before = c.clone()
    expected = 1.5 * op_a @ op_b + (beta * _column_major(before, m, n, ldc) if beta else 0)
    th.blas_gemm(c, a, b, transa, transb, m, n, k, lda, ldb, ldc, 1.5, beta)
    close(_column_major(c, m, n, ldc), expected)
    pad = _column_major(c, ldc, n, ldc)[m:]  # the padding rows stay as they were
    assert torch.equal(pad, _column_major(before, ldc, n, ldc)[m:])


@pytest.mark.parametrize("trans", [0, 1])
def test_blas_gemv_strided(th, trans):
    m, n, lda, incx, incy = 5, 3, 6, 2, 3
    a = _rand(lda * n, dtype=torch.float32, seed=23)
    len_x, len_y = (m, n) if trans else (n, m)
    x, y = (
        _rand(len_x * incx, dtype=torch.float32, seed=24),
        _rand(len_y * incy, dtype=torch.float32, seed=25),
    )
    op_a = _column_major(a, m, n, lda)
    op_a = op_a.t() if trans else op_a
    expected = 2.0 * op_a @ x[::incx] + 0.25 * y[::incy]
    before = y.clone()
    th.blas_gemv(y, a, x, trans, m, n, lda, incx, incy, 2.0, 0.25)
    close(y[::incy], expected)
    mask = torch.ones_like(y, dtype=torch.bool)
    mask[::incy] = False
    assert torch.equal(y[mask], before[mask])


def test_blas_rejects_a_bad_leading_dimension(th):
    a = _rand(16, seed=26)
    with pytest.raises(RuntimeError, match=r"THDoubleBlas_gemm: leading dimension 2 is less than the 4 rows"):
        th.blas_gemm(a.clone(), a, a, 0, 0, 4, 2, 2, 2, 2, 4, 1.0, 0.0)


# -- an im2col + GEMM convolution, as deformable-convolution extensions wrote it ------------


@pytest.fixture(scope="module")
def conv(tmp_path_factory):
    root = tmp_path_factory.mktemp("conv")
    src = Path(__file__).parent / "fixtures" / "conv" / "src"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TORCH_EXTENSIONS_DIR", str(root / "cache"))
        ext = ffi.create_extension(
            "conv", headers=[src / "conv.h"], sources=[src / "conv.c"], relative_to=str(root / "build.py"),
            verbose=False,
        )  # fmt: skip
        package = ext.build()
    spec = importlib.util.spec_from_file_location("fixture_conv", package / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _conv_function(conv):
    from kernforge_legacy.autograd import Function

    class Conv2d(Function):  # the Python side, as 2017 wrote it
        def __init__(self, pad, stride):
            self.pad, self.stride = pad, stride

        def forward(self, input, weight):
            self.save_for_backward(input, weight)
            output = input.new()
            conv.conv_forward(input, weight, output, self.pad, self.stride)
            return output

        def backward(self, grad_output):
            input, weight = self.saved_tensors
            grad_input, grad_weight = input.new(), weight.new()
            conv.conv_backward(input, weight, grad_output, grad_input, grad_weight, self.pad, self.stride)
            return grad_input, grad_weight

    return Conv2d


@pytest.mark.parametrize("pad, stride", [(0, 1), (1, 1), (2, 2)])
def test_im2col_gemm_convolution_equals_conv2d(conv, pad, stride):
    x = _rand(2, 3, 9, 8, dtype=torch.float32, seed=30)
    w = _rand(5, 3, 3, 3, dtype=torch.float32, seed=31)
    ours = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    refs = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    out = _conv_function(conv)(pad, stride)(*ours)
    expected = torch.nn.functional.conv2d(*refs, padding=pad, stride=stride)
    close(out, expected, rtol=1e-4, atol=1e-4)
    grad = _rand(*expected.shape, dtype=torch.float32, seed=32)
    out.backward(grad)
    expected.backward(grad)
    for o, r in zip(ours, refs, strict=True):
        close(o.grad, r.grad, rtol=1e-4, atol=1e-4)
    assert conv.conv_live_handles() == 0  # every buffer, view and copy made in C was freed
