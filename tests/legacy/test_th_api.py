"""The TH C API that 2017 extensions called, built from a fixture written in
that style (tests/legacy/fixtures/th_api), against torch on random data:
tensors made and freed in C with TH's reference counts, views, copies,
storages, math, BLAS. The same C (generic/th_api.c) runs on TH's CPU types
and, on a GPU, on THC's CUDA types, with THC's own functions besides."""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import built_extension, close

FIXTURE = Path(__file__).parent / "fixtures" / "th_api" / "src"
CUDA = torch.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.sanitize])]


@pytest.fixture(scope="module")
def th(tmp_path_factory):
    return built_extension(
        tmp_path_factory,
        "th_api",
        headers=[FIXTURE / "th_api.h", *([FIXTURE / "th_api_cuda.h"] if CUDA else [])],
        sources=[FIXTURE / "th_api.c", *([FIXTURE / "th_api_cuda.c"] if CUDA else [])],
        with_cuda=CUDA,
    )


def _fn(th, name, device):
    """The fixture's function `name` for TH's types, or its THC twin."""
    return getattr(th, name + ("_cuda" if device == "cuda" else ""))


def _rand(*shape, dtype=torch.float64, seed=0, device="cpu"):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype).to(device)


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


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("which", MATH)
def test_math_matches_torch(th, which, device):
    a, b = _rand(5, 7, seed=1, device=device), _rand(5, 7, seed=2, device=device)
    if which == 9:
        a = a.abs()
    # wrong size, poisoned: resized and written
    out = torch.full(
        (2,) if which not in (11, 12) else (5, 7), float("nan"), dtype=torch.float64, device=device
    )
    assert _fn(th, "math_op", device)(out, a, b, which, 0.75) == 1
    close(out, MATH[which](a, b, 0.75))


@pytest.mark.parametrize("device", DEVICES)
def test_math_writes_into_an_input_and_through_strides(th, device):
    a, b = _rand(6, 4, seed=3, device=device), _rand(4, 6, seed=4, device=device).t()  # b not contiguous
    expected = a + 2.5 * b
    assert _fn(th, "math_op", device)(a, a, b, 3, 2.5) == 1  # r is t: in place
    close(a, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [12, 4099])  # 4099: not a multiple of any vector width
def test_float_cadd_as_the_official_example_calls_it(th, device, n):
    a, b = (
        _rand(n, dtype=torch.float32, seed=5, device=device),
        _rand(n, dtype=torch.float32, seed=6, device=device),
    )
    out = torch.empty(0, device=device)
    _fn(th, "math_op_float", device)(out, a, b, 3, 1.0)
    close(out, a + b)
    # an output of the right size is written where it is: a view into a larger buffer
    buf = torch.full((n + 1,), float("nan"), device=device)
    _fn(th, "math_op_float", device)(buf[1:], a, b, 3, -2.0)
    close(buf[1:], a - 2.0 * b)
    assert buf[0].isnan()


INT_MATH = {  # which -> the same in torch, of (a, b, value); division truncates as C's
    0: lambda a, b, v: a + v,
    1: lambda a, b, v: a * v,
    2: lambda a, b, v: torch.div(a, v, rounding_mode="trunc"),
    3: lambda a, b, v: a + v * b,
    4: lambda a, b, v: a - v * b,
    5: lambda a, b, v: a * b,
    6: lambda a, b, v: torch.div(a, b, rounding_mode="trunc"),
    7: lambda a, b, v: a.abs(),
    8: lambda a, b, v: a.clamp(-v, v),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("which", INT_MATH)
def test_integer_math_matches_torch(th, which, layout, device):
    gen = torch.Generator().manual_seed(40 + which)
    a = torch.randint(-1000, 1000, (6, 5), generator=gen).to(device)
    b = torch.randint(1, 50, (5, 6), generator=gen).to(device).t()  # no zero divisors
    if layout == "contiguous":
        b = b.contiguous()
    b = b * torch.where(torch.rand(6, 5, generator=gen) < 0.5, -1, 1).to(device)  # negative quotients too
    out = torch.full((3,), -7, dtype=torch.int64, device=device)  # wrong size, poisoned
    assert _fn(th, "int_math_op", device)(out, a, b, which, 7) == 1
    expected = INT_MATH[which](a, b, 7)
    assert out.dtype == torch.int64 and torch.equal(out, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("which, fn", [(0, torch.sum), (1, torch.max), (2, torch.min)])
def test_integer_reductions_are_exact(th, which, fn, device):
    a = torch.randint(-(2**40), 2**40, (50,), generator=torch.Generator().manual_seed(49)).to(device)
    assert _fn(th, "int_reduce_op", device)(a, which) == fn(a).item()


@pytest.mark.parametrize("device", DEVICES)
def test_integer_product_is_exact(th, device):
    # prodall as SparseConvNet multiplies spatial sizes; a strided view, no zero
    gen = torch.Generator().manual_seed(50)
    sign = torch.where(torch.rand(4, 3, generator=gen) < 0.5, -1, 1)
    a = torch.randint(1, 10, (4, 3), generator=gen) * sign
    a = a.to(device).t()
    assert _fn(th, "int_reduce_op", device)(a, 3) == int(torch.prod(a).item()) != 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "which, fn, scale", [(0, torch.sum, 1.0), (1, torch.max, 1.0), (2, torch.min, 1.0), (4, torch.prod, 0.1)]
)
def test_reductions(th, which, fn, scale, device):
    a = 1 + scale * _rand(9, 11, seed=7, device=device)  # near 1 for prod: neither 0 nor inf
    assert _fn(th, "reduce_op", device)(a, a, which) == pytest.approx(fn(a).item(), rel=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_dot(th, device):
    a, b = _rand(31, seed=8, device=device), _rand(31, seed=9, device=device)
    assert _fn(th, "reduce_op", device)(a, b, 3) == pytest.approx(torch.dot(a, b).item(), rel=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("in_place", [0, 1])
def test_addmm(th, in_place, device):
    t, m1, m2 = (
        _rand(*shape, seed=seed, device=device) for shape, seed in [((4, 5), 10), ((4, 3), 11), ((3, 5), 12)]
    )
    expected = 0.5 * t + 2.0 * (m1 @ m2)
    r = torch.empty(0, dtype=torch.float64, device=device)
    _fn(th, "gemm_op", device)(r, t, m1, m2, 0.5, 2.0, in_place)
    close(r, expected)


@pytest.mark.parametrize("device", DEVICES)
def test_addmv(th, device):
    t, mat, vec = (
        _rand(*shape, seed=seed, device=device) for shape, seed in [((4,), 13), ((4, 6), 14), ((6,), 15)]
    )
    r = torch.empty(0, dtype=torch.float64, device=device)
    _fn(th, "gemv_op", device)(r, t, mat, vec, -1.0, 3.0)
    close(r, -t + 3.0 * (mat @ vec))


@pytest.mark.parametrize("device", DEVICES)
def test_storage_fill_initialises_the_whole_storage(th, device):
    base = torch.zeros(10, device=device)
    view = base[2:8]
    assert _fn(th, "init_storage", device)(view, -1.0) == 10  # the storage's size, not the view's
    assert torch.equal(base, torch.full((10,), -1.0, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_storage_of_an_empty_tensor_is_null(th, device):
    assert _fn(th, "has_storage", device)(torch.empty(0, device=device)) == 0
    assert _fn(th, "has_storage", device)(torch.ones(3, device=device)) == 1


@pytest.mark.parametrize("device", DEVICES)
def test_storage_offset_and_data(th, device):
    base = torch.arange(20, dtype=torch.float32, device=device)
    info = torch.empty(0, dtype=torch.int64)
    _fn(th, "storage_info", device)(base[5:12], info)
    assert info.tolist() == [5, 20, 1]


@pytest.mark.parametrize("device", DEVICES)
def test_fields_read_directly_follow_the_tensor(th, device):
    # t->size[d], t->stride[d], t->nDimension, t->storageOffset and the
    # storage's data and size, read as 2017 code did; then after an in-place
    # transpose of t and a resize of out, made through the functions.
    base = torch.arange(40, dtype=torch.float32, device=device)
    t = base[4:].view(4, 9)[:, 1:7]  # [4, 6], strides (9, 1), offset 5
    out = torch.full((5,), float("nan"), device=device)
    info = torch.empty(0, dtype=torch.int64)
    assert _fn(th, "fields", device)(t, out, info) == 1
    assert info.tolist() == [2, 4, 9, 6, 1, 5, 40, 1, 6, 1, 3, 234, 12]
    assert t.shape == (6, 4) and t.stride() == (1, 9) and out.shape == (2, 3, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_what_thgeneral_gave_besides_tensors(th, device):
    # _nDimension of [2, 3] and of an empty tensor (0.4's legacy count, 0;
    # nDimension, TH's count, 0 too), floor(-2.5) with no math.h included, THMin and
    # THMax, TH_INDEX_BASE, the sum 1..8 through THAlloc and THRealloc, and
    # THAlloc(0) giving NULL.
    info = torch.empty(0, dtype=torch.int64)
    t, empty = _rand(2, 3, dtype=torch.float32, device=device), torch.empty(0, device=device)
    assert _fn(th, "general", device)(t, empty, info) == 1
    assert info.tolist() == [2, 0, 0, -3, 37, 0, 36, 1]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 3, 2, 3)], ids=["1d", "2d", "3d", "4d"])
def test_get_and_set_one_element_at_a_time(th, shape, device):
    # read through strides (a transposed view), written into a poisoned output
    t = _rand(*reversed(shape), seed=40, device=device).permute(*reversed(range(len(shape))))
    out = torch.full(shape, float("nan"), dtype=torch.float64, device=device)
    assert _fn(th, "get_set", device)(t, out, -1) == 1
    torch.testing.assert_close(out, 2 * t + 1, rtol=0, atol=0)
    name = f"{'THCudaDouble' if device == 'cuda' else 'THDouble'}Tensor_get{len(shape)}d"
    for dim, size in enumerate(shape):
        with pytest.raises(
            RuntimeError, match=rf"{name}: index {size} out of range of dimension {dim} \(size {size}\)"
        ):
            _fn(th, "get_set", device)(t, out, dim)


@pytest.mark.parametrize("device", DEVICES)
def test_shapes_in_long_storages(th, device):
    t = _rand(3, 4, 5, seed=43, device=device)
    out = torch.full((2,), float("nan"), dtype=torch.float64, device=device)
    view_out = torch.empty(0, dtype=torch.float64, device=device)
    info = torch.empty(0, dtype=torch.int64)
    before = th.live_handles()
    assert _fn(th, "shapes", device)(t, out, view_out, info, 1, 7) == 1
    assert out.shape == (3, 7, 5)  # t's sizes, dimension 1 set to 7
    assert view_out.shape == (3, 20) and view_out.data_ptr() == t.data_ptr()  # a view, -1 inferred
    torch.testing.assert_close(view_out, t.view(3, 20), rtol=0, atol=0)
    # column-major [2, 3, 4] strides; contiguous [4, 6] after resizeNd; two strides
    assert info.tolist() == [1, 2, 6, 6, 1, 2]
    assert th.live_handles() == before  # every storage and tensor made in C was freed


@pytest.mark.parametrize("device", DEVICES)
def test_storages_made_in_c(th, device):
    before = th.live_handles()
    assert _fn(th, "storages", device)() == 514.5
    assert th.live_handles() == before


GENERIC_NAMES = {torch.float32: "Float", torch.float64: "Double", torch.int64: "Long", torch.uint8: "Byte"}


@pytest.mark.parametrize("dtype", GENERIC_NAMES, ids=str)
def test_th_generic_file_and_apply_loops(th, dtype):
    """generic/apply.c compiled once per type (THGenerateAllTypes.h), with
    TH_TENSOR_APPLY3 and TH_TENSOR_DIM_APPLY2 over strided tensors."""
    name = GENERIC_NAMES[dtype]
    g = torch.Generator().manual_seed(44)
    a = torch.randint(0, 40, (5, 4, 3), generator=g).to(dtype).permute(2, 0, 1)  # [3, 5, 4], strided
    b = torch.randint(0, 40, (4, 3, 5), generator=g).to(dtype).permute(1, 2, 0)  # strided another way
    if dtype.is_floating_point:
        a, b = a + torch.rand(a.shape, generator=g, dtype=dtype), b - 0.5
    out = torch.full((2,), 99, dtype=dtype)
    assert getattr(th, f"generic_apply_{name}")(out, a, b) == 1
    torch.testing.assert_close(out, (2 * a + b).to(dtype), rtol=0, atol=0)
    for dim in range(3):
        sums = torch.full((1,), 99, dtype=dtype)
        assert getattr(th, f"generic_dim_sum_{name}")(sums, a, dim) == 1
        expected = a.double().sum(dim, keepdim=True).to(dtype)
        torch.testing.assert_close(sums, expected, rtol=1e-6, atol=0)
    view = a[1:, 2:]  # storage->data + storageOffset is the view's first element
    assert getattr(th, f"generic_first_{name}")(view) == view[0, 0, 0].item()
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size: 60 and 59 elements"):
        getattr(th, f"generic_apply_{name}")(out, a, b.flatten()[1:])


def test_arg_check_with_cleanup_and_thgeneral_macros(th):
    info = torch.empty(0, dtype=torch.int64)
    freed = th.cleanup_check(1, info)
    assert info.tolist() == [freed - 1, 3141592, 1]  # M_PI, TH_CONCAT_STRING_4
    with pytest.raises(RuntimeError, match=r"invalid argument 1: ok is 0 \(.*th_api\.c:\d+\)"):
        th.cleanup_check(0, info)
    th.cleanup_check(1, info)
    assert info[0] == freed + 1  # the failing call freed its buffer before raising


def test_storage_field_of_a_view(th):
    base = _rand(20, dtype=torch.float32, seed=45)
    assert th.storage_field(base[3:10], 0) == pytest.approx(base[3].item() + 1000 * 20)
    with pytest.raises(RuntimeError, match=r"THFloatStorage_retain: t->storage is not reference counted"):
        th.storage_field(base[3:10], 1)


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize(
    "dtype, name", [(torch.float16, "Half"), (torch.float32, "Float"), (torch.float64, "Double")]
)
def test_thc_generic_file(th, dtype, name):
    t = torch.full((4, 5), float("nan"), dtype=dtype, device="cuda")[1:, 2:]  # a view at an offset
    assert getattr(th, f"thc_generic_fill_{name}")(t, 2.5) == 2.5
    assert (t == 2.5).all()


@pytest.mark.parametrize("device", DEVICES)
def test_get_with_the_wrong_number_of_indices_raises(th, device):
    with pytest.raises(RuntimeError, match=r"Tensor_get2d: the tensor must have 2 dimension\(s\), it has 3"):
        _fn(th, "get_wrong_rank", device)(_rand(2, 3, 4, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_shapes_described_in_messages(th, device):
    fn = _fn(th, "check_same_shape", device)
    a = _rand(2, 3, 4, dtype=torch.float32, device=device)
    assert fn(a, _rand(2, 3, 4, dtype=torch.float32, seed=1, device=device)) == 1
    for b, shape in [(_rand(4, 6, dtype=torch.float32, device=device), "[4 x 6]"), (a.new_empty(0), "[0]")]:
        with pytest.raises(
            RuntimeError, match=rf"^a and b shapes do not match: a \[2 x 3 x 4\], b {re.escape(shape)} \("
        ):
            fn(a, b)


def test_a_long_shape_is_cut_to_the_description_buffer(th):
    # THLongStorage_sizeDesc: TH's 64-byte buffer, a longer shape ending in "...]"
    with pytest.raises(RuntimeError, match=r"^\[1 x 2 x 3\] \("):
        th.long_storage_desc(3)
    whole = "[" + " x ".join(str(i) for i in range(1, 31)) + "]"
    with pytest.raises(RuntimeError) as raised:
        th.long_storage_desc(30)
    text = str(raised.value).split(" (")[0]
    assert len(whole) > 63 and text == whole[:59] + "...]"


def test_th_assert_and_assert_msg(th):
    assert th.assertions(1) == 1
    with pytest.raises(RuntimeError, match=r"Assertion `value > 0' failed\. +\(.*th_api\.c:\d+\)"):
        th.assertions(0)
    with pytest.raises(RuntimeError, match=r"Assertion `value != 2' failed\. value 2 is two \("):
        th.assertions(2)


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
def test_cublas_called_itself_on_thc_handle(th):
    a = _rand(33, 17, dtype=torch.float32, seed=41, device="cuda")
    b = _rand(17, 9, dtype=torch.float32, seed=42, device="cuda")
    c = torch.full((2,), float("nan"), device="cuda")
    info = torch.empty(0, dtype=torch.int64)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the handle must come on this stream, not the default one
        th.cublas_itself_cuda(c, a, b, 0, info)
        expected = a @ b
    torch.cuda.synchronize()
    close(c, expected, rtol=1e-5, atol=1e-5)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    # handles: 1, or more where another test reserved them in this process
    assert info.tolist()[:3] == [1, 1, 1] and info[3] >= 1
    assert info.tolist()[4:] == [props.multi_processor_count, 32]
    with pytest.raises(
        RuntimeError, match=r"cuBLAS error: CUBLAS_STATUS_INVALID_VALUE: .*th_api_cuda\.c:\d+"
    ):
        th.cublas_itself_cuda(c, a, b, 1, info)


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
def test_cusparse_called_itself_on_thc_handle(th):
    """THC.h gives cuSPARSE's types and THC's sparse handles, as THCGeneral.h
    did: a COO to CSR conversion on the handle, on the current stream."""
    m = 9
    rows = torch.sort(torch.randint(0, m, (40,), generator=torch.Generator().manual_seed(43)))[0]
    rows = rows.to(torch.int32).cuda()
    offsets = torch.full((3,), -7, dtype=torch.int32, device="cuda")  # resized and overwritten
    info = torch.empty(0, dtype=torch.int64)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the handle must come on this stream
        th.cusparse_itself_cuda(rows, offsets, m, 0, info)
    torch.cuda.synchronize()
    counts = torch.bincount(rows.long().cpu(), minlength=m)
    expected = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]).to(torch.int32)
    assert torch.equal(offsets.cpu(), expected)
    # handles: 1, or more where another test reserved them in this process
    assert info.tolist()[:2] == [1, 1] and info[2] >= 1 and info[3] == 1
    with pytest.raises(
        RuntimeError, match=r"cuSPARSE error: CUSPARSE_STATUS_INVALID_VALUE: .*th_api_cuda\.c:\d+"
    ):
        th.cusparse_itself_cuda(rows, offsets, m, 1, info)


def _csr(dense):
    """A dense matrix's CSR arrays as cuSPARSE takes them: int32 offsets and
    columns, the values."""
    s = dense.to_sparse_csr()
    return s.crow_indices().int(), s.col_indices().int(), s.values()


def _sparse_matrix(rows, cols, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    dense = torch.rand(rows, cols, generator=g, dtype=dtype) + 0.5
    return (dense * (torch.rand(rows, cols, generator=g) < 0.3)).cuda()


def _from_csr(row, col, val, rows, cols):
    return torch.sparse_csr_tensor(row.long(), col.long(), val, (rows, cols)).to_dense()


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
def test_cusparse_functions_cuda_removed(th):
    """csrmv, csr2csc, gthr, csrgeam and csrgemm with their Nnz steps, which
    CUDA 11 and 12 removed (mgharbi's automatting calls them all), against
    torch's dense math; the counts of the Nnz steps in host and device
    memory."""
    a = _sparse_matrix(13, 9, 51)
    a_row, a_col, a_val = _csr(a)
    x = torch.randn(9, device="cuda")
    y0 = torch.randn(13, device="cuda")
    y = y0.clone()
    th.removed_csrmv_cuda(a_row, a_col, a_val, 13, 9, 0, 2.0, x, 0.5, y)
    close(y, 2.0 * (a @ x) + 0.5 * y0, rtol=1e-5, atol=1e-5)
    xt, yt = torch.randn(13, device="cuda"), torch.full((9,), float("nan"), device="cuda")
    th.removed_csrmv_cuda(a_row, a_col, a_val, 13, 9, 1, 1.0, xt, 0.0, yt)  # beta 0: y is not read
    close(yt, a.t() @ xt, rtol=1e-5, atol=1e-5)
    a64 = a.double()
    x64, y64 = x.double(), torch.full((13,), float("nan"), dtype=torch.float64, device="cuda")
    th.removed_csrmv_double_cuda(a_row, a_col, a64.to_sparse_csr().values(), 13, 9, x64, y64)
    close(y64, a64 @ x64, rtol=1e-12, atol=1e-12)

    row_ind, col_ptr, csc_val = (torch.full((2,), -7, dtype=dtype, device="cuda") for dtype in
                                 (torch.int32, torch.int32, torch.float32))  # fmt: skip
    th.removed_csr2csc_cuda(a_row, a_col, a_val, 13, 9, row_ind, col_ptr, csc_val)
    t_row, t_col, t_val = _csr(a.t().contiguous())
    assert torch.equal(col_ptr, t_row) and torch.equal(row_ind, t_col) and torch.equal(csc_val, t_val)

    ind = torch.tensor([5, 0, 8, 8, 3], dtype=torch.int32, device="cuda")
    out = torch.empty(0, device="cuda")
    th.removed_gthr_cuda(x, ind, out)
    assert torch.equal(out, x[ind.long()])

    b = _sparse_matrix(13, 9, 52)
    b_row, b_col, b_val = _csr(b)
    expected = 1.5 * a - 0.25 * b
    union = int(((a != 0) | (b != 0)).sum())
    for on_device in (0, 1):
        c = [torch.full((1,), -7, dtype=t, device="cuda") for t in (torch.int32, torch.int32, torch.float32)]
        nnz = th.removed_csrgeam_cuda(
            a_row, a_col, a_val, 1.5, b_row, b_col, b_val, -0.25, 13, 9, *c, on_device
        )
        assert nnz == union == c[2].numel()
        close(_from_csr(*c, 13, 9), expected, rtol=1e-5, atol=1e-6)

    m2 = _sparse_matrix(9, 11, 53)
    m_row, m_col, m_val = _csr(m2)
    for on_device in (0, 1):
        c = [torch.full((1,), -7, dtype=t, device="cuda") for t in (torch.int32, torch.int32, torch.float32)]
        nnz = th.removed_csrgemm_cuda(a_row, a_col, a_val, m_row, m_col, m_val, 13, 11, 9, 0, *c, on_device)
        assert nnz == c[2].numel() >= int(((a @ m2) != 0).sum())
        close(_from_csr(*c, 13, 11), a @ m2, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match=r"cuSPARSE error: CUSPARSE_STATUS_NOT_SUPPORTED"):
        th.removed_csrgemm_cuda(a_row, a_col, a_val, m_row, m_col, m_val, 9, 11, 13, 1, *c, 0)

    # automatting's size, 100000 x 100000 of 10000 entries each, which
    # cusparseSpGEMM's default algorithm refused (INSUFFICIENT_RESOURCES)
    n = 100000
    g = torch.Generator().manual_seed(54)
    big = [
        torch.sparse_coo_tensor(
            torch.randint(0, n, (2, 10000), generator=g), torch.rand(10000, generator=g) + 0.5, (n, n)
        ).coalesce()
        for _ in range(2)
    ]
    (p_row, p_col, p_val), (q_row, q_col, q_val) = (
        (t.crow_indices().int().cuda(), t.col_indices().int().cuda(), t.values().cuda())
        for t in (b.to_sparse_csr() for b in big)
    )
    c = [torch.empty(0, dtype=t, device="cuda") for t in (torch.int32, torch.int32, torch.float32)]
    nnz = th.removed_csrgemm_cuda(p_row, p_col, p_val, q_row, q_col, q_val, n, n, n, 0, *c, 0)
    expected = torch.sparse.mm(big[0], big[1]).coalesce().to_sparse_csr()
    assert nnz == expected.values().numel() > 0
    assert torch.equal(c[0].cpu(), expected.crow_indices().int()) and torch.equal(
        c[1].cpu(), expected.col_indices().int()
    )
    close(c[2].cpu(), expected.values(), rtol=1e-5, atol=1e-6)


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
def test_thc_assert_same_gpu_and_check_warn(th, capfd):
    a, b = torch.randn(3, device="cuda"), torch.randn(3, device="cuda")
    assert th.same_gpu_cuda(a, b, 0) == 1
    assert th.same_gpu_cuda(a, b, 1) == 1  # the warning is printed, nothing raised
    assert "THCudaCheckWarn FAIL" in capfd.readouterr().err and th.same_gpu_cuda(a, b, 0) == 1
    if torch.cuda.device_count() > 1:
        # the first CUDA tensor's device is current during a call, whichever device was before
        with torch.cuda.device(1):
            assert th.same_gpu_cuda(a, b, 0) == 1 and torch.cuda.current_device() == 1
        with pytest.raises(RuntimeError, match="arguments are located on different"):
            th.same_gpu_cuda(a, b.to("cuda:1"), 0)


@pytest.mark.parametrize("device", DEVICES)
def test_new_tensors_from_views(th, device):
    src = _rand(3, 4, dtype=torch.float32, seed=16, device=device)
    outs = [torch.empty(0, device=device) for _ in range(4)]
    assert _fn(th, "new_views", device)(src, *outs) == 1
    for out, expected in zip(outs, [src[1], src[:, 1:3], src.t(), src.t().contiguous()], strict=True):
        assert torch.equal(out, expected)


@pytest.mark.parametrize("device", DEVICES)
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
def test_in_place_views_are_seen_by_python(th, which, view, device):
    src = _rand(3, 4, dtype=torch.float32, seed=17, device=device)
    self = torch.empty(0, device=device)
    assert _fn(th, "inplace_view", device)(self, src, which) == 1
    expected = view(src)
    assert self.shape == expected.shape and self.stride() == expected.stride()
    assert self.data_ptr() == expected.data_ptr()  # a view of src's memory, not a copy
    src.mul_(2)
    assert torch.equal(self, view(src))


@pytest.mark.parametrize("device", DEVICES)
def test_a_tensor_made_in_c_is_returned_through_an_argument(th, device):
    out = torch.empty(0, device=device)
    _fn(th, "make_in_c", device)(out, 2, 3, 7.0)
    assert torch.equal(out, torch.full((2, 3), 7.0, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_copy_between_shapes_and_reference_counts(th, device):
    src = torch.arange(12, dtype=torch.int64, device=device).view(3, 4)
    dst = torch.zeros(2, 6, dtype=torch.int64, device=device)
    _fn(th, "copy_between", device)(dst, src)
    assert torch.equal(dst, src.reshape(2, 6))


def test_copies_between_types(th):
    long = torch.randint(-1000, 1000, (3, 5), generator=torch.Generator().manual_seed(18))
    f, d, i = torch.empty(3, 5), torch.empty(15, dtype=torch.float64), torch.empty(5, 3, dtype=torch.int32)
    th.copy_types(f, long, d, i)  # same number of elements, converted in order
    assert torch.equal(f, long.float()) and torch.equal(d, long.double().flatten())
    assert torch.equal(i, long.int().reshape(5, 3))


@pytest.mark.cuda
@pytest.mark.sanitize
def test_copies_between_types_and_devices(th):
    long = torch.randint(-1000, 1000, (4, 6), generator=torch.Generator().manual_seed(19))
    f, d = torch.empty(4, 6, device="cuda"), torch.empty(24, dtype=torch.float64, device="cuda")
    back, again = torch.empty(4, 6), torch.full((4, 6), float("nan"), device="cuda")
    th.copy_types_cuda(long, f, d, back, again)
    assert torch.equal(f.cpu(), long.float()) and torch.equal(d.cpu(), long.double().flatten())
    assert torch.equal(back, long.float()) and torch.equal(again.cpu(), long.float())


# 30,000 calls: not under compute-sanitizer, where they would take many minutes
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_no_handle_outlives_its_references(th, device):
    """10,000 calls that make, retain and free tensors and storages, and
    10,000 that borrow an argument's storage: nothing stays alive."""
    before = th.live_handles()
    src, dst = torch.arange(4, device=device), torch.empty(4, dtype=torch.int64, device=device)
    churn, has_storage, copy_between = (_fn(th, n, device) for n in ("churn", "has_storage", "copy_between"))
    for _ in range(10_000):
        churn(1)
        has_storage(torch.ones(2, device=device))
        copy_between(dst, src)  # retains and frees an argument too
    assert th.live_handles() == before  # one count for every extension, as TH's


@pytest.mark.parametrize("device", DEVICES)
def test_errors_name_the_function(th, device):
    name = "THCudaLongTensor_copy" if device == "cuda" else "THLongTensor_copy"
    before = th.live_handles()
    with pytest.raises(RuntimeError, match=rf"{name}: sizes do not match: 3 and 12 elements"):
        _fn(th, "copy_between", device)(
            torch.zeros(3, dtype=torch.int64, device=device),
            torch.zeros(3, 4, dtype=torch.int64, device=device),
        )
    # the C code's own tensor, made before the error, is not freed: an error
    # leaves C without running its cleanup, as TH's did
    assert th.live_handles() == before + 1


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


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("transa, transb", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("beta", [0.0, -0.5])
def test_blas_gemm_column_major(th, transa, transb, beta, device):
    m, n, k = 5, 4, 3
    lda, ldb, ldc = 7, 6, 8  # padded leading dimensions
    a_rows, a_cols = (k, m) if transa else (m, k)
    b_rows, b_cols = (n, k) if transb else (k, n)
    a, b, c = (
        _rand(size, seed=seed, device=device)
        for size, seed in [(lda * a_cols, 20), (ldb * b_cols, 21), (ldc * n, 22)]
    )
    if beta == 0.0:
        _column_major(c, m, n, ldc).fill_(float("nan"))  # ignored, as BLAS does with beta 0
    op_a = _column_major(a, a_rows, a_cols, lda)
    op_b = _column_major(b, b_rows, b_cols, ldb)
    op_a, op_b = (op_a.t() if transa else op_a), (op_b.t() if transb else op_b)
    before = c.clone()
    expected = 1.5 * op_a @ op_b + (beta * _column_major(before, m, n, ldc) if beta else 0)
    _fn(th, "blas_gemm", device)(c, a, b, transa, transb, m, n, k, lda, ldb, ldc, 1.5, beta)
    close(_column_major(c, m, n, ldc), expected)
    pad = _column_major(c, ldc, n, ldc)[m:]  # the padding rows stay as they were
    assert torch.equal(pad, _column_major(before, ldc, n, ldc)[m:])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("trans", [0, 1])
def test_blas_gemv_strided(th, trans, device):
    m, n, lda, incx, incy = 5, 3, 6, 2, 3
    a = _rand(lda * n, dtype=torch.float32, seed=23, device=device)
    len_x, len_y = (m, n) if trans else (n, m)
    x, y = (
        _rand(len_x * incx, dtype=torch.float32, seed=24, device=device),
        _rand(len_y * incy, dtype=torch.float32, seed=25, device=device),
    )
    op_a = _column_major(a, m, n, lda)
    op_a = op_a.t() if trans else op_a
    expected = 2.0 * op_a @ x[::incx] + 0.25 * y[::incy]
    before = y.clone()
    _fn(th, "blas_gemv", device)(y, a, x, trans, m, n, lda, incx, incy, 2.0, 0.25)
    close(y[::incy], expected)
    mask = torch.ones_like(y, dtype=torch.bool)
    mask[::incy] = False
    assert torch.equal(y[mask], before[mask])


@pytest.mark.parametrize("device", DEVICES)
def test_blas_rejects_a_bad_leading_dimension(th, device):
    a = _rand(16, seed=26, device=device)
    name = "THCudaBlas_Dgemm" if device == "cuda" else "THDoubleBlas_gemm"
    with pytest.raises(RuntimeError, match=rf"{name}: leading dimension 2 is less than the 4 rows"):
        _fn(th, "blas_gemm", device)(a.clone(), a, a, 0, 0, 4, 2, 2, 2, 2, 4, 1.0, 0.0)


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["pointer-array", "strided", "pointers-unordered"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_batched_gemm(th, mode, beta):
    a = _rand(5, 3, 4, dtype=torch.float32, seed=27, device="cuda")
    b = _rand(5, 4, 6, dtype=torch.float32, seed=28, device="cuda")
    c = _rand(5, 3, 6, dtype=torch.float32, seed=29, device="cuda")
    if beta == 0.0:
        c.fill_(float("nan"))  # ignored with beta 0
    expected = 2.0 * a @ b + (beta * c if beta else 0)
    th.gemm_batched_cuda(c, a, b, mode, 2.0, beta)
    close(c, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_hgemm(th):
    a = _rand(33, 17, dtype=torch.float16, seed=30, device="cuda")
    b = _rand(17, 9, dtype=torch.float16, seed=31, device="cuda")
    c = torch.empty(0, dtype=torch.float16, device="cuda")
    th.hgemm_cuda(c, a, b)
    close(c, a @ b)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_devices_and_check_gpu(th):
    a, b = torch.ones(2, device="cuda"), torch.ones(3, device="cuda")
    info = torch.empty(0, dtype=torch.int64)
    th.device_info_cuda(a, b, info)
    current = torch.cuda.current_device()
    assert info.tolist() == [a.device.index, 1, current, torch.cuda.device_count()]


@pytest.mark.cuda
@pytest.mark.multi_gpu
def test_check_gpu_sees_a_tensor_on_another_device(th):
    a, b = torch.ones(2, device="cuda:0"), torch.ones(2, device="cuda:1")
    info = torch.empty(0, dtype=torch.int64)
    th.device_info_cuda(a, b, info)
    assert info.tolist()[:2] == [0, 0]


# -- an im2col + GEMM convolution, as deformable-convolution extensions wrote it ------------


@pytest.fixture(scope="module")
def conv(tmp_path_factory):
    src = Path(__file__).parent / "fixtures" / "conv" / "src"
    return built_extension(
        tmp_path_factory,
        "conv",
        headers=[src / "conv.h", *([src / "conv_cuda.h"] if CUDA else [])],
        sources=[src / "conv.c", *([src / "conv_cuda.c", src / "conv_kernel.cu"] if CUDA else [])],
        with_cuda=CUDA,
    )


def _conv_function(conv):
    from kernforge_legacy.autograd import Function

    class Conv2d(Function):  # the Python side, as 2017 wrote it
        def __init__(self, pad, stride):
            self.pad, self.stride = pad, stride

        def forward(self, input, weight):
            self.save_for_backward(input, weight)
            output = input.new()
            if input.is_cuda:
                conv.conv_forward_cuda(input, weight, output, self.pad, self.stride)
            else:
                conv.conv_forward(input, weight, output, self.pad, self.stride)
            return output

        def backward(self, grad_output):
            input, weight = self.saved_tensors
            grad_input, grad_weight = input.new(), weight.new()
            args = (input, weight, grad_output, grad_input, grad_weight, self.pad, self.stride)
            if input.is_cuda:
                conv.conv_backward_cuda(*args)
            else:
                conv.conv_backward(*args)
            return grad_input, grad_weight

    return Conv2d


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pad, stride", [(0, 1), (1, 1), (2, 2)])
def test_im2col_gemm_convolution_equals_conv2d(conv, pad, stride, device):
    before = conv.conv_live_handles()  # the runtime's count, shared by every extension
    x = _rand(2, 3, 9, 8, dtype=torch.float32, seed=30, device=device)
    w = _rand(5, 3, 3, 3, dtype=torch.float32, seed=31, device=device)
    ours = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    refs = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):  # the reference in full fp32
        out = _conv_function(conv)(pad, stride)(*ours)
        expected = torch.nn.functional.conv2d(*refs, padding=pad, stride=stride)
        close(out, expected, rtol=1e-4, atol=1e-4)
        grad = _rand(*expected.shape, dtype=torch.float32, seed=32, device=device)
        out.backward(grad)
        expected.backward(grad)
    for o, r in zip(ours, refs, strict=True):
        close(o.grad, r.grad, rtol=1e-4, atol=1e-4)
    assert conv.conv_live_handles() == before  # every buffer, view and copy made in C was freed


# -- the coverage table on the porting page ----------------------------------------------


def _pages():
    spec = importlib.util.spec_from_file_location(
        "kernforge_pages", Path(__file__).parents[2] / "docs" / "_ext" / "kernforge_pages.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_coverage_table_reads_the_headers():
    rows = _pages().th_coverage()
    how = {name: h for _, name, h in rows}
    assert len(rows) == len(how) == 4912  # the 2017 headers' functions, each once
    for name in ("THFloatTensor_cadd", "THCudaTensor_cadd", "THCudaBlas_Sgemm", "THCudaBlas_SgemmBatched",
                 "THCudaTensor_copyCudaDouble", "THDoubleTensor_copyCudaFloat", "THFloatStorage_fill",
                 "THCState_getCurrentStreamOnDevice", "THLongTensor_newSelect", "THIntTensor_cadd",
                 "THCudaByteTensor_sumall", "THDoubleTensor_get4d", "THCudaHalfTensor_set1d",
                 "THCState_getCurrentBlasHandle", "THCState_getCurrentDeviceProperties",
                 "THLongStorage_newWithSize4", "THCudaTensor_resize", "THFloatTensor_newSizeOf",
                 "THCudaStorage_get", "THFloatTensor_addcmul", "THCudaTensor_indexSelect",
                 "THDoubleTensor_ltValue", "THCudaLongTensor_max", "THFloatTensor_sigmoid",
                 "THFloatTensor_renorm", "THCudaTensor_topk", "THIntTensor_range",
                 "THCudaLongTensor_nonzero", "THFloatTensor_histc", "THCudaTensor_cross",
                 "THIntTensor_cbitxor", "THCudaDoubleTensor_ltValueT", "THFloatTensor_lshift",
                 "THIntTensor_cpow", "THDoubleStorage_copyFloat", "THFloatVector_cadd",
                 "THDoubleTensor_potrf", "THCudaTensor_gesv", "THFloatTensor_geev", "THCudaTensor_gels",
                 "THDoubleTensor_pstrf", "THCudaDoubleTensor_btrifact", "THFloatTensor_multinomial",
                 "THCudaHalfTensor_multinomialAliasDraw", "THCStream_new",
                 "THCState_setCurrentStreamIndex", "THFloatLapack_gesv", "THDoubleLapack_syev",
                 "THCudaTensor_indexSelect_long", "THCudaIntTensor_addmm", "THC_float2half",
                 "THCudaStorage_getDevice", "THCState_getCurrentSparseHandle",
                 "__THCusparseCheck"):  # fmt: skip
        assert how[name] == "declared", name
    assert how["THCudaMalloc"] == "macro"
    missing = (
        "THMapAllocatorContext_new",
        "THCudaStorage_newWithData",
        "THFloatLapack_gels",
        "THFloatStorage_newWithMapping",
    )
    for name in missing:
        assert how[name] is None, name
    page = _pages().render_th_coverage()
    provided = sum(h is not None for _, _, h in rows)
    assert f"provides **{provided} of the 4912 functions**" in page


@pytest.mark.parametrize("device", DEVICES)
def test_every_provided_function_is_defined(th, device):
    """What the table calls provided is in the runtime library the extensions
    link: every declared TH function (and on a CUDA build every THC one) is
    a symbol it exports, not only a prototype."""

    from kernforge_legacy import ffi

    library = ffi.runtime_library(with_cuda=device == "cuda")
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    defined = set(re.findall(r"^[0-9a-f]+ [TtWw] (_{0,2}TH\w+)$", symbols, re.M))
    wanted = {
        name
        for header, name, how in _pages().th_coverage()
        if how == "declared" and (device == "cuda" or header.startswith("TH/"))
    }
    assert wanted and not wanted - defined, sorted(wanted - defined)[:20]


# -- TH's other math, dimension reductions, indexing and comparisons --------------------


def _round_half_away(a):
    return torch.where(a >= 0, torch.floor(a + 0.5), torch.ceil(a - 0.5))


FLOAT_MATH = {  # which -> (the same in torch of (a, b, value), the domain a is drawn in)
    0: (lambda a, b, v: torch.sigmoid(a), "any"),
    1: (lambda a, b, v: torch.log(a), "positive"),
    2: (lambda a, b, v: torch.log1p(a), "positive"),
    3: (lambda a, b, v: torch.lgamma(a), "positive"),
    4: (lambda a, b, v: torch.cos(a), "any"),
    5: (lambda a, b, v: torch.acos(a), "unit"),
    6: (lambda a, b, v: torch.cosh(a), "any"),
    7: (lambda a, b, v: torch.sin(a), "any"),
    8: (lambda a, b, v: torch.asin(a), "unit"),
    9: (lambda a, b, v: torch.sinh(a), "any"),
    10: (lambda a, b, v: torch.tan(a), "unit"),
    11: (lambda a, b, v: torch.atan(a), "any"),
    12: (lambda a, b, v: torch.tanh(a), "any"),
    13: (lambda a, b, v: torch.erf(a), "any"),
    14: (lambda a, b, v: torch.erfinv(a), "unit"),
    15: (lambda a, b, v: torch.rsqrt(a), "positive"),
    16: (lambda a, b, v: torch.ceil(a), "scaled"),
    17: (lambda a, b, v: torch.floor(a), "scaled"),
    18: (lambda a, b, v: torch.trunc(a), "scaled"),
    19: (lambda a, b, v: torch.frac(a), "scaled"),
    20: (lambda a, b, v: _round_half_away(a), "halves"),  # C's round: 2.5 -> 3, -0.5 -> -1
    21: (lambda a, b, v: 1 / a, "any"),
    22: (lambda a, b, v: -a, "any"),
    23: (lambda a, b, v: torch.sign(a), "any"),
    24: (lambda a, b, v: torch.atan2(a, b), "any"),
    25: (lambda a, b, v: a**v, "positive"),
    26: (lambda a, b, v: v**a, "any"),
    27: (lambda a, b, v: a**b, "positive"),
    28: (lambda a, b, v: torch.lerp(a, b, v), "any"),
    29: (lambda a, b, v: a + v * a * b, "any"),
    30: (lambda a, b, v: a + v * a / b, "any"),
    31: (lambda a, b, v: a - v, "any"),
    32: (lambda a, b, v: torch.fmod(a, v), "scaled"),
    33: (lambda a, b, v: torch.remainder(a, v), "scaled"),
    34: (lambda a, b, v: torch.fmod(a, b), "scaled"),
    35: (lambda a, b, v: torch.remainder(a, b), "scaled"),
    36: (lambda a, b, v: torch.maximum(a, b), "any"),
    37: (lambda a, b, v: torch.minimum(a, b), "any"),
    38: (lambda a, b, v: a.clamp(min=v), "any"),
    39: (lambda a, b, v: a.clamp(max=v), "any"),
}


def _in_domain(a, domain):
    if domain == "positive":
        return a.abs() + 0.1
    if domain == "unit":
        return a.tanh() * 0.9
    if domain == "scaled":
        return a * 4
    if domain == "halves":  # every half from -2.5 to 2.5, and ordinary values
        halves = torch.arange(-2.5, 3.0, 1.0, dtype=a.dtype, device=a.device)
        return torch.cat([halves, (a * 4).flatten()[halves.numel() :]]).view(a.shape)
    return a


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("which", FLOAT_MATH)
def test_float_math_matches_torch(th, which, device):
    fn, domain = FLOAT_MATH[which]
    a = _in_domain(_rand(5, 6, seed=60, device=device), domain)
    b = _rand(6, 5, seed=61, device=device).t()  # strided
    b = b.sign() * (b.abs() + 0.5)  # no zero divisors
    r = torch.full((2,), float("nan"), dtype=torch.float64, device=device)  # wrong size, poisoned
    assert _fn(th, "float_math_op", device)(r, a, b, 0.7, which) == 1
    close(r, fn(a, b, 0.7), rtol=1e-12, atol=1e-12)


DIM_MATH = {  # which -> torch's (values, or (values, indices)) over dim
    0: lambda t, d, k: t.sum(d, keepdim=k),
    1: lambda t, d, k: t.prod(d, keepdim=k),
    2: lambda t, d, k: t.mean(d, keepdim=k),
    3: lambda t, d, k: t.max(d, keepdim=k),
    4: lambda t, d, k: t.min(d, keepdim=k),
    5: lambda t, d, k: t.cumsum(d),
    6: lambda t, d, k: t.cumprod(d),
    7: lambda t, d, k: t.std(d, keepdim=k),  # unbiased: TH's biased = 0
    8: lambda t, d, k: t.var(d, unbiased=False, keepdim=k),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keepdim", [0, 1])
@pytest.mark.parametrize("which", DIM_MATH)
def test_dimension_math_matches_torch(th, which, keepdim, device):
    t = 1 + 0.1 * _rand(6, 4, 5, seed=62, device=device).permute(1, 0, 2)  # strided, near 1 for prod
    r = torch.full((3,), float("nan"), dtype=torch.float64, device=device)
    indices = torch.full((3,), -1, dtype=torch.int64, device=device)
    assert _fn(th, "dim_op", device)(r, indices, t, 1, keepdim, which) == 1
    expected = DIM_MATH[which](t, 1, bool(keepdim))
    if which in (3, 4):
        close(r, expected.values, rtol=0, atol=0)
        assert torch.equal(indices, expected.indices)
    else:
        close(r, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_integer_dimension_math_is_exact(th, device):
    t = torch.randint(-(2**40), 2**40, (3, 4), generator=torch.Generator().manual_seed(63)).to(device)
    r, indices = (torch.empty(0, dtype=torch.int64, device=device) for _ in range(2))
    op = _fn(th, "int_dim_op", device)
    assert op(r, indices, t, 0, 0) == 4 and torch.equal(r, t.sum(0))
    assert op(r, indices, t, 1, 1) == 3 and torch.equal(r, t.max(1, keepdim=True).values)
    assert torch.equal(indices, t.max(1, keepdim=True).indices)
    assert op(r, indices, t, 1, 2) == 12 and torch.equal(r, t.cumsum(1))
    assert op(r, indices, t, 0, 3) == 12 and torch.equal(r, t.clamp(min=5))
    assert op(r, indices, t, 0, 4) == 12 and torch.equal(r, torch.remainder(t, -7))


@pytest.mark.parametrize("device", DEVICES)
def test_whole_tensor_statistics(th, device):
    t = _rand(7, 9, seed=64, device=device)
    op = _fn(th, "all_op", device)
    assert op(t, 0) == pytest.approx(t.mean().item(), rel=1e-12)
    assert op(t, 1) == pytest.approx(t.var().item(), rel=1e-12)  # biased = 0: n - 1
    assert op(t, 2) == pytest.approx(t.std(unbiased=False).item(), rel=1e-12)


INDEXING = [  # which -> torch's, of (t, a copy to change in place; src, index, mask, dim, value)
    lambda t, src, i, m, d, v: src.index_select(d, i),
    lambda t, src, i, m, d, v: t.index_copy_(d, i, src),
    lambda t, src, i, m, d, v: t.index_add_(d, i, src),
    lambda t, src, i, m, d, v: t.index_fill_(d, i, v),
    lambda t, src, i, m, d, v: src.gather(d, i),
    lambda t, src, i, m, d, v: t.scatter_(d, i, src),
    lambda t, src, i, m, d, v: t.scatter_add_(d, i, src),
    lambda t, src, i, m, d, v: t.scatter_(d, i, v),
    lambda t, src, i, m, d, v: t.masked_fill_(m.bool(), v),
    lambda t, src, i, m, d, v: t.masked_scatter_(m.bool(), src),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("which", range(len(INDEXING)))
def test_indexing_matches_torch(th, which, device):
    gen = torch.Generator().manual_seed(65 + which)
    t = _rand(4, 6, seed=66, device=device)
    dim = 1
    if which in (0, 1, 2, 3):  # a 1-D index along dim, repeated entries for indexAdd
        index = torch.tensor([4, 0, 4, 2] if which in (0, 2, 3) else [5, 0, 3], device=device)
        src = (
            _rand(4, index.numel(), seed=67, device=device)
            if which in (1, 2)
            else _rand(4, 6, seed=67, device=device)
        )
    else:  # gather / scatter: an index shaped like src
        src = _rand(4, 3, seed=67, device=device)
        index = torch.stack([torch.randperm(6, generator=gen)[:3] for _ in range(4)]).to(device)
    mask = (torch.rand(4, 6, generator=gen) < 0.5).to(torch.uint8).to(device)
    if which in (4, 9):  # gather reads, maskedCopy takes, a src the size of t
        src = _rand(4, 6, seed=68, device=device)
    expected = INDEXING[which](t.clone(), src, index, mask, dim, 2.5)
    r = torch.full((3,), float("nan"), dtype=torch.float64, device=device)
    assert _fn(th, "index_op", device)(t, r, src, index, mask, dim, 2.5, which) == 1
    close(r if which in (0, 4) else t, expected, rtol=0, atol=1e-15)


COMPARISONS = [torch.lt, torch.le, torch.gt, torch.ge, torch.ne, torch.eq]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("which", range(12))
def test_comparisons_write_bytes(th, which, device):
    a = torch.round(_rand(5, 6, seed=69, device=device) * 2)  # ties with b and the value
    b = torch.round(_rand(5, 6, seed=70, device=device) * 2)
    r = torch.full((2,), 7, dtype=torch.uint8, device=device)
    assert _fn(th, "compare_op", device)(r, a, b, 1.0, which) == 1
    other = 1.0 if which < 6 else b
    expected = COMPARISONS[which % 6](a, other).to(torch.uint8)
    assert r.dtype == torch.uint8 and torch.equal(r, expected)
    assert 0 < int(expected.sum()) < expected.numel()


MAKE = {  # which -> torch's, of (a, b, c)
    0: lambda a, b, c: torch.zeros(3, 4, dtype=a.dtype, device=a.device),
    1: lambda a, b, c: torch.ones(3, 4, dtype=a.dtype, device=a.device),
    2: lambda a, b, c: torch.zeros_like(a),
    3: lambda a, b, c: torch.ones_like(a),
    4: lambda a, b, c: torch.eye(3, 5, dtype=a.dtype, device=a.device),
    5: lambda a, b, c: torch.diag(a, 1),
    6: lambda a, b, c: torch.tril(a, -1),
    7: lambda a, b, c: torch.triu(a, 1),
    8: lambda a, b, c: torch.cat([a, b], 0),
    9: lambda a, b, c: torch.cat([a, b, c], 1),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("which", MAKE)
def test_tensors_made_and_joined(th, which, device):
    a, b, c = (_rand(4, 4, seed=71 + i, device=device) for i in range(3))
    r = torch.full((2,), float("nan"), dtype=torch.float64, device=device)
    assert _fn(th, "make_op", device)(r, a, b, c, which) == 1
    close(r, MAKE[which](a, b, c), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("beta", [0.5, 0.0])
@pytest.mark.parametrize("which", range(3))
def test_addr_addbmm_baddbmm(th, which, beta, device):
    shapes = [((3, 4), (3,), (4,)), ((3, 5), (2, 3, 4), (2, 4, 5)), ((2, 3, 5), (2, 3, 4), (2, 4, 5))][which]
    t, x, y = (_rand(*shape, seed=75 + i, device=device) for i, shape in enumerate(shapes))
    t[0] = float("nan")  # beta = 0: TH's BLAS left t out, NaN and all
    r = torch.full((1,), float("nan"), dtype=torch.float64, device=device)
    assert _fn(th, "blas_like_op", device)(r, t, x, y, beta, 2.0, which) == 1
    product = torch.outer(x, y) if which == 0 else (x @ y).sum(0) if which == 1 else x @ y
    if beta == 0:
        close(r, 2.0 * product)  # no NaN: t left out
    else:
        torch.testing.assert_close(r, beta * t + 2.0 * product, equal_nan=True)


@pytest.mark.parametrize("device", DEVICES)
def test_trace_and_equal(th, device):
    a = _rand(5, 5, seed=78, device=device)
    op = _fn(th, "trace_or_equal", device)
    assert op(a, a, 0) == pytest.approx(torch.trace(a).item(), rel=1e-12)
    assert op(a, a.clone(), 1) == 1
    b = a.clone()
    b[2, 3] += 1e-9
    assert op(a, b, 1) == 0 and op(a, a[:4], 1) == 0


ORDER = {  # which -> torch's (values, indices) along dim
    0: lambda t, d: torch.sort(t, d),
    1: lambda t, d: torch.sort(t, d, descending=True),
    2: lambda t, d: torch.topk(t, 2, d),
    3: lambda t, d: torch.topk(t, 2, d, largest=False),
    4: lambda t, d: torch.kthvalue(t, 2, d),
    5: lambda t, d: torch.median(t, d, keepdim=True),
    6: lambda t, d: torch.mode(t, d),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("which", ORDER)
def test_orderings_match_torch(th, which, device):
    t = _rand(5, 7, 4, seed=80, device=device).permute(2, 0, 1)  # [4, 5, 7], strided, no ties
    if which == 6:  # mode: values that repeat
        t = torch.round(t * 1.5)
    r = torch.full((3,), float("nan"), dtype=torch.float64, device=device)
    indices = torch.full((3,), -1, dtype=torch.int64, device=device)
    assert _fn(th, "order_op", device)(r, indices, t, 2, which) == 1
    expected = ORDER[which](t, 2)
    assert torch.equal(r, expected.values)
    if which == 6:  # which of the repeats is reported is torch's choice
        assert torch.equal(t.gather(2, indices.unsqueeze(2)).squeeze(2), r)
    else:
        assert torch.equal(indices, expected.indices)


@pytest.mark.parametrize("device", DEVICES)
def test_nonzero_and_masked_select(th, device):
    t = torch.round(_rand(4, 6, seed=81, device=device)).t()  # [6, 4], strided, zeros among the values
    mask = (torch.rand(6, 4, generator=torch.Generator().manual_seed(82)) < 0.5).to(torch.uint8).to(device)
    subscript = torch.full((1,), -1, dtype=torch.int64, device=device)
    r = torch.full((2,), float("nan"), dtype=torch.float64, device=device)
    expected = torch.nonzero(t)
    assert 0 < expected.shape[0] < t.numel()
    assert _fn(th, "select_op", device)(subscript, r, t, mask) == expected.numel()
    assert torch.equal(subscript, expected)
    assert torch.equal(r, t[mask.bool()])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, math.inf])
def test_norms_match_torch(th, p, device):
    t = torch.round(_rand(4, 5, 6, seed=83, device=device) * 2) / 2  # zeros among the values, for p = 0
    assert 0 < int((t == 0).sum()) < t.numel()
    b = _rand(20, 6, seed=84, device=device).t()  # as many elements, another shape, strided
    r = torch.full((2,), float("nan"), dtype=torch.float64, device=device)
    op, whole = _fn(th, "norm_op", device), _fn(th, "norm_all_op", device)
    assert op(r, t, p, 1, 0) == 1
    close(r, torch.linalg.vector_norm(t, p, dim=1, keepdim=True), rtol=1e-12, atol=1e-12)
    longs = torch.zeros(1, dtype=torch.int64, device=device)
    assert whole(t, b, longs, p, 0) == pytest.approx(torch.linalg.vector_norm(t, p).item(), rel=1e-12)
    distance = torch.linalg.vector_norm(t.flatten() - b.flatten(), p).item()  # each in its own order
    assert whole(t, b, longs, p, 1) == pytest.approx(distance, rel=1e-12)
    if p > 0:
        assert op(r, t, p, 1, 1) == 1
        expected = torch.renorm(t, p, 1, 1.5)
        assert not torch.equal(expected, t)  # some slices scaled
        close(r, expected, rtol=1e-12, atol=1e-12)
    else:
        name = "THCudaDoubleTensor_renorm" if device == "cuda" else "THDoubleTensor_renorm"
        with pytest.raises(RuntimeError, match=rf"{name}: the norm's p must be positive"):
            op(r, t, p, 1, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_renorm_needs_two_dimensions_and_medians_take_the_lower(th, device):
    r = torch.full((2,), float("nan"), dtype=torch.float64, device=device)
    with pytest.raises(RuntimeError, match="_renorm: needs a tensor of 2 dimensions or more, got 1"):
        _fn(th, "norm_op", device)(r, _rand(5, device=device), 2.0, 0, 1)
    t = _rand(6, 4, seed=85, device=device)  # an even count: the lower of the middle two
    longs = torch.randint(-100, 100, (10,), generator=torch.Generator().manual_seed(86)).to(device)
    whole = _fn(th, "norm_all_op", device)
    assert whole(t, t, longs, 2.0, 2) == torch.median(t).item() == torch.sort(t.flatten()).values[11].item()
    assert whole(t, t, longs, 2.0, 3) == torch.median(longs).item()


@pytest.mark.parametrize("device", DEVICES)
def test_sequences_match_torch(th, device):
    r = torch.full((2,), float("nan"), dtype=torch.float64, device=device)
    longs = torch.full((2,), -1, dtype=torch.int64, device=device)
    op = _fn(th, "sequence_op", device)
    f64 = {"dtype": torch.float64, "device": device}
    assert op(r, longs, 1.0, 2.0, 0.25, 0) == 5  # range: the end included
    close(r, torch.arange(1.0, 2.25, 0.25, **f64), rtol=0, atol=0)
    assert op(r, longs, 1.0, 2.0, 0.25, 1) == 4  # arange: left out
    close(r, torch.arange(1.0, 2.0, 0.25, **f64), rtol=0, atol=0)
    assert op(r, longs, 3.0, -1.0, -0.5, 0) == 9
    close(r, torch.arange(3.0, -1.25, -0.5, **f64), rtol=0, atol=0)
    assert op(r, longs, -1.0, 2.0, 7, 2) == 7
    close(r, torch.linspace(-1.0, 2.0, 7, **f64), rtol=1e-15, atol=1e-15)
    assert op(r, longs, -1.0, 2.0, 4, 3) == 4
    close(r, torch.logspace(-1.0, 2.0, 4, **f64), rtol=1e-14, atol=0)
    assert op(r, longs, 10, 1, -3, 4) == 4
    assert torch.equal(longs, torch.tensor([10, 7, 4, 1], device=device))
    assert op(r, longs, 0, 10, 3, 5) == 4
    assert torch.equal(longs, torch.tensor([0, 3, 6, 9], device=device))
    with pytest.raises(RuntimeError, match="DoubleTensor_range: upper bound and larger bound inconsistent"):
        op(r, longs, 0.0, 1.0, -1.0, 0)
    with pytest.raises(RuntimeError, match="DoubleTensor_arange: step must be nonzero"):
        op(r, longs, 0.0, 1.0, 0.0, 1)


MORE_VIEWS = {  # which -> (src's shape, torch's view of src)
    0: ((1, 3, 1, 2), lambda s: s.squeeze()),
    1: ((2, 7), lambda s: s.unfold(1, 3, 2)),
    2: ((2, 7), lambda s: s.unfold(1, 3, 2)),
    3: ((1, 3, 1), lambda s: s.expand(2, 3, 4)),
    4: ((1, 3, 1), lambda s: s.expand(2, 3, 4)),
    5: ((4, 6), lambda s: s.as_strided((2, 3, 2), (1, 4, 2), 1)),
    6: ((4, 6), lambda s: s.as_strided((2, 2, 2, 3), (12, 6, 3, 1), 0)),
    7: ((4, 6), lambda s: s.as_strided((2, 3, 2), (1, 4, 2), 2)),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("which", MORE_VIEWS)
def test_more_views_are_views(th, which, device):
    shape, view = MORE_VIEWS[which]
    src = _rand(*shape, seed=90 + which, device=device)
    self = torch.full((5,), float("nan"), dtype=torch.float64, device=device)
    assert _fn(th, "more_views", device)(self, src, which) == 1
    expected = view(src)
    assert self.shape == expected.shape and self.stride() == expected.stride()
    assert torch.equal(self, expected)
    src.add_(1.0)  # the same elements: a change to src shows through self
    assert torch.equal(self, view(src))


@pytest.mark.parametrize("device", DEVICES)
def test_squeeze_keeps_one_dimension_and_is_size_and_set_to(th, device):
    op = _fn(th, "more_views", device)
    self = torch.empty(0, dtype=torch.float64, device=device)
    ones = _rand(1, 1, device=device)
    assert op(self, ones, 0) == 1 and self.shape == (1,) and self.item() == ones.item()  # TH had no 0-D
    src = _rand(4, 6, seed=95, device=device)
    assert op(self, src, 8) == 1 and op(self, src.t(), 8) == 0
    assert op(self, src, 9) == 1  # self := src: set to it
    assert op(self, src, 10) == 0  # a narrower view of the same storage is not
    assert op(src.clone(), src, 11) == 0  # equal elements, another storage
    assert op(torch.empty(0, dtype=torch.float64, device=device), src, 11) == 0


def test_a_generator_gives_the_mersenne_twister_numbers_of_its_seed(th):
    raw = torch.zeros(10000, dtype=torch.int64)
    assert th.random_op(torch.empty(0, dtype=torch.float64), raw, 0, 0) == 1  # TH's default seed, 5489
    # MT19937 seeded with 5489 (TH's default): its first and its 10000th number
    assert raw[0].item() == 3499211612 and raw[-1].item() == 4123659995
    again = torch.zeros(10000, dtype=torch.int64)
    th.random_op(torch.empty(0, dtype=torch.float64), again, 5489, 0)
    assert torch.equal(raw, again)
    th.random_op(torch.empty(0, dtype=torch.float64), again, 5490, 0)
    assert not torch.equal(raw, again)
    assert th.random_op(torch.empty(0, dtype=torch.float64), raw, 0, 10) == 5489
    assert th.random_op(torch.empty(0, dtype=torch.float64), raw, 77, 10) == 77
    with pytest.raises(RuntimeError, match="THRandom_normal: standard deviation must be strictly positive"):
        th.random_op(torch.empty(0, dtype=torch.float64), raw, 1, 11)


def _random_moments(values, which):
    """(what was measured, what TH's distribution gives) for random_op's `which`."""
    values = values.double()
    if which == 1:  # uniform on [-2, 3)
        assert -2 <= values.min() and values.max() < 3
        return (values.mean(), values.var()), (0.5, 25 / 12)
    if which in (2, 9):  # normal
        mean, std = (1.5, 2.0) if which == 2 else (0.0, 1.0)
        return (values.mean(), values.std()), (mean, std)
    if which == 3:  # exponential, lambda 2
        return (values.mean(), values.std()), (0.5, 0.5)
    if which == 4:  # cauchy: median 1, quartiles 1 -+ 0.5
        q = torch.quantile(values[:100000], torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
        return tuple(q), (0.5, 1.0, 1.5)
    if which == 5:  # TH's logNormal: this mean and standard deviation of its own
        return (values.mean(), values.std()), (2.0, 0.5)
    if which == 6:  # TH's geometric, p = 0.25 the chance of going on: mean 1 / (1 - p)
        assert values.min() == 1
        return (values.mean(),), (4 / 3,)
    if which == 7:  # bernoulli 0.3
        assert set(values.unique().tolist()) <= {0.0, 1.0}
        return (values.mean(),), (0.3,)
    assert 0 <= values.min() and values.max() < 2**32  # random: TH's 32-bit numbers
    return (values.mean() / 2**32,), (0.5,)


@pytest.mark.parametrize("source", ["generator", "torch"])
@pytest.mark.parametrize("which", [1, 2, 3, 4, 5, 6, 7, 8])
def test_random_tensors_follow_th_distributions(th, which, source):
    t = torch.full((200000,), float("nan"), dtype=torch.float64)
    longs = torch.full((200000,), -1, dtype=torch.int64)
    seed = 1234 if source == "generator" else -1
    torch.manual_seed(0)
    assert th.random_op(t, longs, seed, which) == 1
    values = longs if which in (6, 7, 8) else t
    measured, expected = _random_moments(values, which)
    for m, e in zip(measured, expected, strict=True):
        assert float(m) == pytest.approx(e, rel=0.02, abs=0.01)
    # the same stream again: the same numbers
    again_t, again_l = torch.empty_like(t), torch.empty_like(longs)
    torch.manual_seed(0)
    th.random_op(again_t, again_l, seed, which)
    assert torch.equal(again_l if which in (6, 7, 8) else again_t, longs if which in (6, 7, 8) else t)


def test_randn_resizes_and_draws_the_generators_normal_numbers(th):
    normal = torch.empty(15, dtype=torch.float64)
    th.random_op(normal, torch.empty(0, dtype=torch.int64), 99, 2)  # 1.5 + 2 z
    r = torch.full((2,), float("nan"), dtype=torch.float64)
    assert th.random_op(r, torch.empty(0, dtype=torch.int64), 99, 9) == 1
    assert r.shape == (3, 5)
    close(r.flatten(), (normal - 1.5) / 2, rtol=1e-12, atol=1e-12)
    assert th.random_op(r, torch.empty(0, dtype=torch.int64), -1, 9) == 1  # torch's generator
    assert r.shape == (3, 5) and torch.isfinite(r).all() and r.unique().numel() == 15


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("which", [1, 2, 3, 4, 5, 6, 7, 9])
def test_thc_random_tensors(th, which):
    t = torch.full((200000,), float("nan"), dtype=torch.float64, device="cuda")
    longs = torch.full((200000,), -1, dtype=torch.int64, device="cuda")
    torch.manual_seed(0)
    assert th.random_op_cuda(t, longs, which) == 1
    values = (longs if which in (6, 7) else t).cpu()
    if which == 5:  # THC's logNormal: the mean and stdv of its logarithm
        measured, expected = (values.log().mean(), values.log().std()), (0.5, 0.25)
    elif which == 6:  # THC's geometric: p = 0.75 the chance of stopping
        assert values.min() == 1
        measured, expected = (values.double().mean(),), (4 / 3,)
    elif which == 9:
        assert t.shape == (3, 5) and torch.isfinite(t).all()
        return
    else:
        measured, expected = _random_moments(values, which)
    for m, e in zip(measured, expected, strict=True):
        assert float(m) == pytest.approx(e, rel=0.02, abs=0.01)
    again = torch.empty_like(t), torch.empty_like(longs)
    torch.manual_seed(0)
    th.random_op_cuda(*again, which)
    assert torch.equal(again[1] if which in (6, 7) else again[0], longs if which in (6, 7) else t)


# -- TH's comparisons into T, bitwise operations, shifts, cross, histc ----------------------

LOGIC = Path(__file__).parent / "fixtures" / "th_logic" / "src"


@pytest.fixture(scope="module")
def logic(tmp_path_factory):
    return built_extension(
        tmp_path_factory, "th_logic", [LOGIC / "th_logic.h"], [LOGIC / "th_logic.c"], False
    )


FLOAT_LOGIC = {  # which -> the same in torch of (a, b, value)
    0: lambda a, b, v: (a < v).float(),
    1: lambda a, b, v: (a <= v).float(),
    2: lambda a, b, v: (a > v).float(),
    3: lambda a, b, v: (a >= v).float(),
    4: lambda a, b, v: (a != v).float(),
    5: lambda a, b, v: (a == v).float(),
    6: lambda a, b, v: (a < b).float(),
    7: lambda a, b, v: (a >= b).float(),
    8: lambda a, b, v: (a == b).float(),
    9: lambda a, b, v: a * 2**v,
    10: lambda a, b, v: a / 2**v,
    11: lambda a, b, v: a * torch.pow(2.0, b),
}


@pytest.mark.parametrize("which", sorted(FLOAT_LOGIC))
def test_float_comparisons_into_t_and_shifts(logic, which):
    a = _rand(4, 5, dtype=torch.float32, seed=40).round()
    b = _rand(4, 5, dtype=torch.float32, seed=41).round()
    a[0, :2] = b[0, :2]  # some equal elements
    value = 1.0 if which < 9 else 3.0
    r = torch.full((2,), float("nan"))
    assert logic.float_logic(r, a, b, which, value) == 1
    assert r.dtype == torch.float32 and r.shape == a.shape
    close(r, FLOAT_LOGIC[which](a, b, value))


INT_LOGIC = {
    0: lambda a, b, v: a & v,
    1: lambda a, b, v: a | v,
    2: lambda a, b, v: a ^ v,
    3: lambda a, b, v: a & b,
    4: lambda a, b, v: a | b,
    5: lambda a, b, v: a ^ b,
    6: lambda a, b, v: a << v,
    7: lambda a, b, v: a >> v,
    8: lambda a, b, v: a << b,
    9: lambda a, b, v: a >> b,
    10: lambda a, b, v: (a > v).int(),
}


@pytest.mark.parametrize("which", sorted(INT_LOGIC))
def test_int_bitwise_and_shifts(logic, which):
    gen = torch.Generator().manual_seed(42)
    a = torch.randint(0, 1 << 20, (3, 7), generator=gen, dtype=torch.int32)
    b = torch.randint(0, 8, (3, 7), generator=gen, dtype=torch.int32)
    value = 5
    r = torch.full((1,), -7, dtype=torch.int32)
    assert logic.int_logic(r, a, b, which, value) == 1
    assert torch.equal(r, INT_LOGIC[which](a, b, value))


def test_cross_along_the_named_or_first_dimension_of_size_3(logic):
    a, b = _rand(4, 3, dtype=torch.float32, seed=43), _rand(4, 3, dtype=torch.float32, seed=44)
    r = torch.empty(0)
    assert logic.float_logic(r, a, b, 12, 1.0) == 1
    close(r, torch.linalg.cross(a, b, dim=1))
    ai = torch.randint(-9, 9, (3, 2), generator=torch.Generator().manual_seed(45), dtype=torch.int32)
    bi = torch.randint(-9, 9, (3, 2), generator=torch.Generator().manual_seed(46), dtype=torch.int32)
    ri = torch.empty(0, dtype=torch.int32)
    assert logic.int_logic(ri, ai, bi, 11, -1) == 1  # -1: the first dimension of size 3
    assert torch.equal(ri, torch.linalg.cross(ai, bi, dim=0))
    with pytest.raises(RuntimeError, match=r"THFloatTensor_cross: dimension 0 has size 4, not 3"):
        logic.float_logic(r, a, b, 12, 0.0)


def test_bitwise_on_a_floating_type_is_refused_in_ths_words(logic):
    a = _rand(3, dtype=torch.float32, seed=47)
    with pytest.raises(RuntimeError, match=r"THFloatTensor_bitand: bitand is only supported for integer"):
        logic.float_logic(torch.empty(0), a, a, 13, 1.0)


@pytest.mark.parametrize("lo, hi", [(-2.0, 2.0), (0.0, 0.0)])
def test_histc_counts_in_equal_bins(logic, lo, hi):
    t = _rand(1000, dtype=torch.float32, seed=48)
    hist = torch.full((3,), float("nan"))
    assert logic.float_histc(hist, t, 7, lo, hi) == 1
    lo_, hi_ = (t.min().item(), t.max().item()) if lo == hi else (lo, hi)
    close(hist, torch.histc(t, bins=7, min=lo_, max=hi_))
    with pytest.raises(RuntimeError, match=r"THFloatTensor_histc: nbins must be positive, got 0"):
        logic.float_histc(hist, t, 0, lo, hi)


STORAGE = Path(__file__).parent / "fixtures" / "th_storage" / "src"


@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    return built_extension(
        tmp_path_factory, "th_storage", [STORAGE / "th_storage.h"], [STORAGE / "th_storage.c"], False
    )


def test_storage_copies_raw_memory_and_between_types(storage):
    x = _rand(2, 7, dtype=torch.float32, seed=49)
    out = torch.full((3,), float("nan"), dtype=torch.float64)
    assert storage.storage_roundtrip(out, x) == 4 + 100 * 8  # the element sizes
    assert torch.equal(out, x.flatten().double())


def test_storage_copy_of_another_size_is_refused(storage):
    with pytest.raises(RuntimeError, match=r"THFloatStorage_copyDouble: size mismatch, 3 and 4 elements"):
        storage.storage_mismatch(3, 4)
    assert storage.storage_mismatch(5, 5) == 1  # and the extension goes on working


VECTOR = {  # which -> the same in torch of (x, y, c)
    0: lambda x, y, c: torch.full_like(x, c),
    1: lambda x, y, c: x + c * y,
    2: lambda x, y, c: x + c,
    3: lambda x, y, c: x * y,
    4: lambda x, y, c: x * c,
    5: lambda x, y, c: x / y,
    6: lambda x, y, c: x / c,
    7: lambda x, y, c: x.clone(),
}


@pytest.mark.parametrize("which", sorted(VECTOR))
def test_vector_loops_over_raw_memory(storage, which):
    x, y = _rand(5, 3, dtype=torch.float32, seed=50), _rand(5, 3, dtype=torch.float32, seed=51)
    z = torch.full_like(x, float("nan"))
    assert storage.vector_op(z, x, y, which, 2.5) == 1
    close(z, VECTOR[which](x, y, 2.5))


def test_vector_integer_division_truncates_and_refuses_zero(storage):
    x = torch.tensor([7, -7, 9, 100], dtype=torch.int32)
    z = torch.zeros(4, dtype=torch.int32)
    assert storage.int_divide(z, x, torch.tensor([2, 2, -4, 7], dtype=torch.int32)) == 1
    assert z.tolist() == [3, -3, -2, 14]  # C's division
    with pytest.raises(RuntimeError, match=r"THIntVector_cdiv: integer division by 0"):
        storage.int_divide(z, x, torch.tensor([1, 0, 1, 1], dtype=torch.int32))


INT_ARITH = {  # which -> the same in torch of (a, b, value), C's integer arithmetic
    12: lambda a, b, v: a + v * a * b,
    13: lambda a, b, v: a + torch.div(v * a, b, rounding_mode="trunc"),
    14: lambda a, b, v: a**b,
}


@pytest.mark.parametrize("which", sorted(INT_ARITH))
def test_int_addcmul_addcdiv_and_cpow(logic, which):
    gen = torch.Generator().manual_seed(52)
    a = torch.randint(-20, 20, (4, 6), generator=gen, dtype=torch.int32)
    b = torch.randint(1, 5, (4, 6), generator=gen, dtype=torch.int32) * torch.tensor([1, -1]).repeat(3).int()
    if which == 14:
        b = b.abs()  # no negative integer powers
    r = torch.full((1,), -7, dtype=torch.int32)
    assert logic.int_logic(r, a, b, which, 3) == 1
    assert torch.equal(r, INT_ARITH[which](a, b, 3).int())


@pytest.mark.parametrize("seed", [7, -1], ids=["ths-generator", "torchs-generator"])
def test_random_integers_in_a_range(logic, seed):
    out = torch.full((40, 50), float("nan"), dtype=torch.float64)
    none = torch.empty(0, dtype=torch.float64)
    assert logic.random_more(out, none, none, torch.empty(0), 0, seed) == 1  # clampedRandom(-5, 5)
    assert out.min() >= -5 and out.max() <= 4 and torch.equal(out, out.round())
    assert out.unique().numel() == 10  # every value of the range, 2000 draws
    assert logic.random_more(out, none, none, torch.empty(0), 1, seed) == 1  # cappedRandom(3)
    assert set(out.unique().tolist()) == {0.0, 1.0, 2.0}
    if seed >= 0:  # TH's numbers: the same seed, the same draws
        again = torch.empty_like(out)
        logic.random_more(again, none, none, torch.empty(0), 1, seed)
        assert torch.equal(again, out)


@pytest.mark.parametrize("seed", [7, -1], ids=["ths-generator", "torchs-generator"])
def test_bernoulli_with_a_probability_per_element(logic, seed):
    p = torch.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    out = torch.full((2, 3), float("nan"), dtype=torch.float64)
    none = torch.empty(0, dtype=torch.float64)
    assert logic.random_more(out, none, none, p, 2, seed) == 1
    assert torch.equal(out, p.double())
    with pytest.raises(RuntimeError, match=r"THDoubleTensor_bernoulli_FloatTensor: p has 4 elements, self 6"):
        logic.random_more(out, none, none, torch.ones(4), 2, seed)


def test_normal_with_means_and_stddevs_per_element(logic):
    means = _rand(3, 4, seed=53)
    draws = torch.empty(3, 4, dtype=torch.float64)
    out = torch.empty(0, dtype=torch.float64)
    assert logic.random_more(out, means, draws, torch.empty(0), 3, 11) == 1
    close(out, means + draws)  # TH's composition: normal(0, stddev) + means
    stddevs = _rand(3, 4, seed=54).abs() + 0.5
    assert logic.random_more(out, means, stddevs, torch.empty(0), 4, -1) == 1
    assert out.shape == means.shape and torch.isfinite(out).all() and not torch.equal(out, means)


def _multinomial(logic, prob, n, replacement, which, seed, out_shape=(1,)):
    out = torch.full(out_shape, -7, dtype=torch.int64)
    J, q = torch.full((1,), -7, dtype=torch.int64), torch.full((1,), float("nan"), dtype=torch.float64)
    assert logic.multinomial_op(out, J, q, prob, n, replacement, which, seed) == 1
    return out, J, q


@pytest.mark.parametrize("seed", [5, -1], ids=["generator", "torch"])
def test_multinomial_draws_each_category_by_its_weight(logic, seed):
    torch.manual_seed(0)
    prob = torch.tensor([[0.0, 1.0, 2.0, 0.0, 3.0], [4.0, 0.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    draws, _, _ = _multinomial(logic, prob, 2, False, 0, seed)  # without replacement
    assert draws.shape == (2, 2)
    assert set(draws[0].tolist()) <= {1, 2, 4} and len(set(draws[0].tolist())) == 2
    assert sorted(draws[1].tolist()) == [0, 3]
    many, _, _ = _multinomial(logic, prob[0], 30000, True, 0, seed)  # 1-D: [n_sample]
    assert many.shape == (30000,)
    freq = torch.bincount(many, minlength=5).double() / 30000
    close(freq, prob[0] / prob[0].sum(), atol=0.015, rtol=0)
    if seed >= 0:  # a THGenerator's seed gives the same draws
        again, _, _ = _multinomial(logic, prob[0], 30000, True, 0, seed)
        assert torch.equal(again, many)


@pytest.mark.parametrize("seed", [6, -1], ids=["generator", "torch"])
def test_alias_method_draws_each_category_by_its_weight(logic, seed):
    torch.manual_seed(1)
    prob = torch.tensor([0.5, 0.0, 2.0, 1.0, 0.5], dtype=torch.float64)
    draws, J, q = _multinomial(logic, prob, 0, True, 1, seed, out_shape=(200, 150))
    assert J.shape == (5,) and q.shape == (5,) and ((q >= 0) & (q <= 1)).all()
    table = q / 5  # the table's distribution, from its slots
    table = table.index_add(0, J, (1 - q) / 5)
    close(table, prob / prob.sum())
    freq = torch.bincount(draws.flatten(), minlength=5).double() / draws.numel()
    close(freq, prob / prob.sum(), atol=0.015, rtol=0)


def test_multinomial_bad_distributions_say_why(logic):
    bad = torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64)
    with pytest.raises(
        RuntimeError,
        match=r"THDoubleTensor_multinomial: invalid multinomial distribution \(encountering probability "
        r"entry < 0",
    ):
        _multinomial(logic, bad, 1, True, 0, 3)
    with pytest.raises(
        RuntimeError,
        match=r"THDoubleTensor_multinomial: invalid multinomial distribution \(sum of probabilities <= 0\)",
    ):
        _multinomial(logic, torch.zeros(3, dtype=torch.float64), 1, True, 0, 3)
    with pytest.raises(
        RuntimeError,
        match=r"THDoubleTensor_multinomial: cannot sample n_sample > prob_dist size\(0\) = 3 samples "
        r"without replacement, got 4",
    ):
        _multinomial(logic, bad.abs(), 4, False, 0, 3)


def test_th_blas_level1_ger_and_integer_products(logic):
    gen = torch.Generator().manual_seed(68)
    x0, y0 = _rand(5, seed=69), _rand(5, seed=70)
    a0 = _rand(4, 5, seed=71)  # column-major 5 x 4
    none = torch.zeros(1, dtype=torch.int32)

    def run(which, x=x0, y=y0, a=a0, ia=none, ib=none, ic=none):
        x, y, a = x.clone(), y.clone(), a.clone()
        assert logic.blas_op(x, y, a, ia, ib, ic, which) == 1
        return x, y, a

    close(run(0)[1], y0 + 2 * x0)  # axpy
    scaled = x0.clone()
    scaled[::2] *= 3
    close(run(1)[0], scaled)  # scal, every other element
    close(run(2)[1], x0.flip(0))  # copy into y read backwards (inc -1)
    close(run(3)[1][0], x0 @ y0)  # dot
    x, y, _ = run(4)  # swap
    assert torch.equal(x, y0) and torch.equal(y, x0)
    y4 = _rand(4, seed=72)
    close(run(5, y=y4)[2], a0 + 2 * torch.outer(y4, x0))  # ger: the [n, m] view of A += 2 x y^T
    ia = torch.randint(-9, 9, (3, 4), generator=gen, dtype=torch.int32)  # column-major 4 x 3
    ib = torch.randint(-9, 9, (2, 3), generator=gen, dtype=torch.int32)  # column-major 3 x 2
    ic = torch.full((2, 4), 77, dtype=torch.int32)
    assert logic.blas_op(x0, y0, a0, ia, ib, ic, 6) == 1
    assert torch.equal(ic.T, 2 * (ia.T @ ib.T))  # exact, in int32
    yv = torch.randint(-9, 9, (3,), generator=gen, dtype=torch.int32)
    xv = torch.randint(-9, 9, (4,), generator=gen, dtype=torch.int32)
    want = yv + ia @ xv  # op(A) = A^T: 3 x 4 times x of 4
    assert logic.blas_op(x0, y0, a0, ia, xv, yv, 7) == 1
    assert torch.equal(yv, want)
    with pytest.raises(RuntimeError, match=r"THDoubleBlas_axpy: x is NULL for 3 elements"):
        run(8)
    with pytest.raises(
        RuntimeError, match=r"THIntBlas_gemm: leading dimension of a 2 is less than its 4 rows"
    ):
        logic.blas_op(x0, y0, a0, ia, ia, ic, 9)


def test_th_general_functions_by_name(logic):
    with pytest.raises(RuntimeError, match=r"^bad value 7 \(.*th_logic.c:\d+\)"):
        logic.general_op(0, 7)
    assert logic.general_op(1, 1) == 1
    with pytest.raises(RuntimeError, match=r"^invalid argument 2: must be positive \("):
        logic.general_op(1, 0)
    assert logic.general_op(2, 0) == 1  # a handler of this thread: called, then the raise
    before = logic.general_op(4, 0)
    with pytest.raises(RuntimeError, match=r"^bad value 3"):
        logic.general_op(0, 3)
    assert logic.general_op(4, 0) == before + 1 and logic.general_op(5, 0) == 1
    assert logic.general_op(3, 0) == 1  # removed
    with pytest.raises(RuntimeError, match=r"^bad value 4"):
        logic.general_op(0, 4)
    assert logic.general_op(4, 0) == before + 1
    threads = torch.get_num_threads()
    try:
        assert logic.general_op(6, 1) == 1 and torch.get_num_threads() == 1  # torch's own
    finally:
        torch.set_num_threads(threads)
    with pytest.raises(RuntimeError, match=r"THSetNumThreads: num_threads must be positive, got 0"):
        logic.general_op(6, 0)
    assert logic.general_op(7, 0) == 1


def _misc(logic, which, a=None, b=None, value=0, byte=None):
    r = torch.full((1,), float("nan"), dtype=torch.float64)
    lr = torch.full((1,), -7, dtype=torch.int64)
    a = torch.zeros(1, dtype=torch.float64) if a is None else a
    b = torch.zeros(1, dtype=torch.float64) if b is None else b
    byte = torch.zeros(1, dtype=torch.uint8) if byte is None else byte
    ok = logic.misc_op(r, a, b, byte, lr, which, value)
    return ok, r, lr, byte


def test_randperm_reshape_match_bhistc_and_logical_reductions(logic):
    _, _, perm, _ = _misc(logic, 0, value=3)
    assert sorted(perm.tolist()) == list(range(10)) and perm.tolist() != list(range(10))
    assert torch.equal(_misc(logic, 0, value=3)[2], perm)  # the generator's seed
    torch.manual_seed(4)
    _, _, perm, _ = _misc(logic, 1)  # torch's generator
    torch.manual_seed(4)
    assert torch.equal(perm, torch.randperm(10))
    a = _rand(3, 4, seed=73)
    _, r, _, _ = _misc(logic, 2, a)
    assert r.shape == (6, 2) and torch.equal(r, a.reshape(6, 2))
    b = _rand(5, 4, seed=74)
    _, r, _, _ = _misc(logic, 3, a, b)
    close(r, 0.5 * torch.cdist(a, b) ** 2)
    _, r, _, _ = _misc(logic, 4, a)
    want = torch.stack([torch.histc(row, bins=4, min=a.min().item(), max=a.max().item()) for row in a])
    close(r, want.double())
    assert _misc(logic, 5, byte=torch.tensor([1, 2, 3], dtype=torch.uint8))[0] == 3
    assert _misc(logic, 5, byte=torch.tensor([0, 2, 3], dtype=torch.uint8))[0] == 1
    assert _misc(logic, 5, byte=torch.zeros(3, dtype=torch.uint8))[0] == 0
    assert _misc(logic, 6, a)[0] == 1  # desc


def test_rng_state_shapes_and_small_helpers(logic):
    assert _misc(logic, 7, value=5)[0] == 1  # getRNGState / setRNGState round trip
    with pytest.raises(RuntimeError, match=r"THByteTensor_setRNGState: RNG state is invalid"):
        _misc(logic, 8, byte=torch.tensor([1, 2, 3], dtype=torch.uint8))
    assert (
        _misc(logic, 9)[0] == 1
    )  # inferSize2 / N, newInferSize, inferExpandGeometry, THSize, THLogAdd, half bits
    assert _misc(logic, 10)[0] == 1  # a storage resized
    with pytest.raises(RuntimeError, match=r"THLongStorage_newInferSize: only one dimension can be inferred"):
        _misc(logic, 11)


def _conv(logic, which, t, k, s1=1, s2=1, beta=0.0, r=None):
    r = torch.full((1,), float("nan"), dtype=torch.float64) if r is None else r
    assert logic.conv_op(r, t, k, which, s1, s2, beta) == 1
    return r


def test_conv2d_families_match_torch(logic):
    F = torch.nn.functional
    t, k = _rand(3, 9, 8, seed=75), _rand(4, 3, 3, 2, seed=76)  # input [I, H, W], kernel [O, I, kh, kw]
    close(_conv(logic, 0, t, k, 2, 1), 2 * F.conv2d(t[None], k, stride=(2, 1))[0])  # valid correlation
    close(_conv(logic, 1, t, k), 2 * F.conv2d(t[None], k.flip(2, 3))[0])  # valid convolution
    full = 2 * F.conv_transpose2d(t[None], k.transpose(0, 1), stride=(2, 1))[0]
    close(_conv(logic, 2, t, k, 2, 1), full)  # full convolution: each input scatters the kernel
    close(
        _conv(logic, 3, t, k, 2, 1),
        2 * F.conv_transpose2d(t[None], k.flip(2, 3).transpose(0, 1), stride=(2, 1))[0],
    )
    # beta: r of as many elements is scaled and added to
    r0 = _rand(4, 7, 7, seed=77)
    close(_conv(logic, 0, t, k, 1, 1, 0.5, r0.clone()), 0.5 * r0 + 2 * F.conv2d(t[None], k)[0])
    kk = _rand(5, 3, 2, seed=78)  # ger: kernel planes [K, kh, kw] -> [K, I, ...]
    close(_conv(logic, 4, t, kk), 2 * F.conv2d(t[:, None], kk[:, None]).transpose(0, 1))
    close(_conv(logic, 5, t, kk, 2, 2), 2 * F.conv2d(t[:, None], kk[:, None], dilation=2).transpose(0, 1))
    batch, bk = _rand(2, 3, 9, 8, seed=79), _rand(2, 5, 3, 2, seed=80)
    want = sum(F.conv2d(batch[b][:, None], bk[b][:, None], dilation=1).transpose(0, 1) for b in range(2))
    close(_conv(logic, 11, batch, bk), 2 * want)  # Revgerm: summed over the batch
    close(_conv(logic, 6, batch, k), 2 * F.conv2d(batch, k))  # mm
    close(_conv(logic, 7, t[0], k[0, 0]), 2 * F.conv2d(t[0][None, None], k[0, 0][None, None])[0, 0])  # mul
    close(_conv(logic, 8, t, k[0]), 2 * F.conv2d(t[None], k[0][:, None], groups=3)[0])  # cmul
    vol, vk = _rand(2, 6, 7, 8, seed=81), _rand(3, 2, 2, 3, 2, seed=82)
    close(_conv(logic, 9, vol, vk, 2, 1), 2 * F.conv3d(vol[None], vk, stride=(2, 2, 1))[0])
    full3 = 2 * F.conv_transpose3d(vol[:, None], vk[:, 0][None]).transpose(0, 1)
    close(_conv(logic, 13, vol, vk[:, 0]), full3)  # 3D ger, full convolution: [K, I, ...]
    r = torch.ones(7, 7, dtype=torch.float64)  # the raw kernel accumulates
    close(
        _conv(logic, 10, t[0], k[0, 0], 1, 1, r=r),
        1 + 2 * F.conv2d(t[0][None, None], k[0, 0][None, None])[0, 0],
    )
    with pytest.raises(
        RuntimeError, match=r"THDoubleTensor_conv2Dmv: type of convolution can be 'V' or 'F', got \"Q\""
    ):
        _conv(logic, 12, t, k)
    with pytest.raises(RuntimeError, match=r"THDoubleTensor_conv2Dmv: invalid number of input planes"):
        _conv(logic, 0, t, _rand(4, 2, 3, 2, seed=83))
    with pytest.raises(RuntimeError, match=r"THDoubleTensor_conv2Dmv: Input image is smaller than kernel"):
        _conv(logic, 0, t, _rand(4, 3, 10, 2, seed=84))
    ti = torch.randint(-5, 5, (2, 6, 6), dtype=torch.int32)
    ki = torch.randint(-5, 5, (3, 2, 3, 3), dtype=torch.int32)
    ri = torch.zeros(1, dtype=torch.int32)
    assert logic.conv_int(ri, ti, ki) == 1
    assert torch.equal(ri, F.conv2d(ti[None].double(), ki.double())[0].int())  # exact in int32


def test_th_files_in_memory_and_on_disk(logic):
    text = torch.zeros(1, dtype=torch.uint8)
    assert logic.file_op(text, 0) == 1  # ASCII in memory, read back
    assert bytes(text.tolist()) == b"1 -2 30\n2.5\n"  # TH's text: spaced, a newline a call
    assert logic.file_op(text, 1) == 1  # binary on disk, big-endian, 4-byte longs
    with pytest.raises(RuntimeError, match=r"THFile_readIntRaw: read error: read 1 blocks instead of 3"):
        logic.file_op(text, 2)
    assert logic.file_op(text, 3) == 1  # quiet: the count and the error flag
    with pytest.raises(RuntimeError, match=r"THFile_writeIntScalar: attempt to write in a read-only file"):
        logic.file_op(text, 4)


def test_th_atomics(logic):
    assert logic.atomic_op(0) == 1
    with pytest.raises(RuntimeError, match=r"THAtomicGet: a is NULL"):
        logic.atomic_op(1)


def test_integer_products_dot_and_cinv(logic):
    gen = torch.Generator().manual_seed(85)

    def ints(*shape):
        return torch.randint(-9, 10, shape, generator=gen, dtype=torch.int32)

    def run(which, t, a, b):
        r = torch.full((1,), -7, dtype=torch.int32)
        assert logic.int_product_op(r, t, a, b, which) == 1
        return r

    m1, m2, v, w = ints(3, 4), ints(4, 5), ints(4), ints(5)
    assert torch.equal(run(0, ints(3, 5) * 0 + 1, m1, m2), 2 + 3 * (m1 @ m2))  # addmm, exact
    t = ints(3)
    assert torch.equal(run(1, t, m1, v), 2 * t + 3 * (m1 @ v))  # addmv
    t = ints(4, 5)
    assert torch.equal(run(2, t, v, w), 2 * t + 3 * torch.outer(v, w))  # addr
    b1, b2, t = ints(2, 3, 4), ints(2, 4, 5), ints(3, 5)
    assert torch.equal(run(3, t, b1, b2), 2 * t + 3 * (b1 @ b2).sum(0))  # addbmm
    t = ints(2, 3, 5)
    assert torch.equal(run(4, t, b1, b2), 2 * t + 3 * (b1 @ b2))  # baddbmm
    assert logic.int_product_op(t, t, v, v, 5) == int((v * v).sum())  # dot
    d = torch.tensor([1, -1, 2, 7], dtype=torch.int32)
    assert torch.equal(run(6, t, d, d), torch.tensor([1, -1, 0, 0], dtype=torch.int32))  # cinv, C's division
    with pytest.raises(
        RuntimeError,
        match=r"THIntTensor_addmm: matrices \[n, k\] and \[k, p\] expected, got \[3 x 4\] and \[3 x 4\]",
    ):
        run(0, ints(3, 4), m1, m1)
    with pytest.raises(RuntimeError, match=r"THIntTensor_addmm: t must be \[3 x 5\], got \[2 x 5\]"):
        run(0, ints(2, 5), m1, m2)
    with pytest.raises(RuntimeError, match=r"THIntTensor_cinv: integer division by 0"):
        run(6, t, torch.zeros(2, dtype=torch.int32), d)


def test_expand_nd_broadcasts_every_tensor_to_one_shape(logic):
    a, b = _rand(3, 1, dtype=torch.float32, seed=55), _rand(4, dtype=torch.float32, seed=56)
    ra, rb = torch.empty(0), torch.empty(0)
    assert logic.expand_pair(ra, rb, a, b) == 1
    assert torch.equal(ra, a.expand(3, 4)) and torch.equal(rb, b.expand(3, 4))
    assert ra.stride() == (1, 0) and rb.stride() == (0, 1)  # views, as TH's expand made
    with pytest.raises(
        RuntimeError, match=r"THFloatTensor_expandNd: the sizes of tensor 1, \[4\], do not broadcast"
    ):
        logic.expand_pair(ra, rb, _rand(3, dtype=torch.float32), b)


def test_free_copy_to_copies_then_frees(logic, th):
    src, dst = _rand(2, 5, dtype=torch.float32, seed=57), torch.zeros(2, 5)
    before = th.live_handles()  # the runtime's one count, whichever extension asks
    assert logic.free_copy(dst, src) == 1
    assert torch.equal(dst, src) and th.live_handles() == before


def _lapack(logic, which, b, a):
    outs = [torch.full((1,), float("nan"), dtype=torch.float64) for _ in range(3)]
    assert logic.lapack_op(*outs, b, a, which) == 1
    return outs


def test_lapack_solves_and_factors_like_torch_linalg(logic):
    gen = torch.Generator().manual_seed(58)
    a = torch.randn(5, 5, generator=gen, dtype=torch.float64) + 5 * torch.eye(5, dtype=torch.float64)
    b = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    spd = a @ a.T
    x, lu, _ = _lapack(logic, 0, b, a)  # gesv
    close(a @ x, b)
    close(lu, torch.linalg.lu_factor(a).LU)
    up = torch.triu(a)
    x, ra, _ = _lapack(logic, 1, b, up)  # trtrs U N N
    close(up @ x, b)
    assert torch.equal(ra, up)
    low = torch.tril(a)
    x, _, _ = _lapack(logic, 2, b, low)  # trtrs L T U: low's transpose, unit diagonal
    unit = low - torch.diag(torch.diag(low)) + torch.eye(5, dtype=torch.float64)
    close(unit.T @ x, b)
    e, v, _ = _lapack(logic, 3, b, spd)  # syev V U
    close(spd @ v, v * e)
    assert (e[1:] >= e[:-1]).all()
    u, s, v = _lapack(logic, 4, b, a[:, :4])  # gesvd S: a = u diag(s) v^T
    close(u @ torch.diag(s) @ v.T, a[:, :4])
    inv, _, _ = _lapack(logic, 5, b, a)  # getri
    close(inv @ a, torch.eye(5, dtype=torch.float64))
    uf, _, _ = _lapack(logic, 6, b, spd)  # potrf U
    close(uf.T @ uf, spd)
    assert torch.equal(uf, torch.triu(uf))
    lf, _, _ = _lapack(logic, 7, b, spd)  # potrf L
    close(lf @ lf.T, spd)
    x, _, _ = _lapack(logic, 8, b, uf)  # potrs U, with the factor
    close(spd @ x, b)
    inv, _, _ = _lapack(logic, 9, b, uf)  # potri U
    close(inv @ spd, torch.eye(5, dtype=torch.float64))
    q, r, _ = _lapack(logic, 10, b, a[:, :3])  # qr
    close(q @ r, a[:, :3])
    close(q.T @ q, torch.eye(3, dtype=torch.float64))


def test_lapack_flags_are_checked(logic):
    a = torch.eye(3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r'THDoubleTensor_potrf: uplo must be one of "UL", got "X"'):
        _lapack(logic, 11, a, a)
    with pytest.raises(RuntimeError, match=r"THDoubleTensor_potrf: uplo is NULL"):
        _lapack(logic, 12, a, a)


def _lapack_more(logic, which, b, a):
    outs = [torch.full((1,), float("nan"), dtype=torch.float64) for _ in range(3)]
    piv = torch.full((1,), -7, dtype=torch.int32)
    assert logic.lapack_more(*outs, b, a, piv, which) == 1
    return (*outs, piv)


def test_gels_solves_least_squares_as_lapack_left_it(logic):
    gen = torch.Generator().manual_seed(61)
    a = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    b = torch.randn(6, 2, generator=gen, dtype=torch.float64)
    rb, ra, _, _ = _lapack_more(logic, 0, b, a)
    x = torch.linalg.lstsq(a, b).solution
    assert rb.shape == (6, 2)  # max(m, n) rows: the solution, then Q^T b's rest
    close(rb[:3], x)
    close((rb[3:] ** 2).sum(0), ((a @ x - b) ** 2).sum(0))  # each column's residual
    close(ra, torch.geqrf(a).a)
    wide = a.T.contiguous()  # 3 x 6: the minimal-norm solution
    rb, _, _, _ = _lapack_more(logic, 0, b[:3].contiguous(), wide)
    close(rb, torch.linalg.pinv(wide) @ b[:3])
    with pytest.raises(RuntimeError, match=r"THDoubleTensor_gels: b must have a's 6 rows, got \[5 x 2\]"):
        _lapack_more(logic, 0, b[:5].contiguous(), a)


def test_geev_packs_complex_eigenvectors_as_lapack(logic):
    gen = torch.Generator().manual_seed(62)
    a = torch.randn(5, 5, generator=gen, dtype=torch.float64)
    values = torch.linalg.eigvals(a)
    assert (values.imag != 0).any()  # a pair to pack
    re, rv, _, _ = _lapack_more(logic, 1, a, a)
    assert re.shape == (5, 2)
    close(torch.complex(re[:, 0], re[:, 1]), values)
    j = 0
    while j < 5:  # each real vector, and each pair from its two columns
        lam = torch.complex(re[j, 0], re[j, 1])
        v = rv[:, j].to(torch.complex128) if re[j, 1] == 0 else torch.complex(rv[:, j], rv[:, j + 1])
        close(a.to(torch.complex128) @ v, lam * v)
        close(torch.linalg.vector_norm(v), torch.tensor(1.0, dtype=torch.float64))
        j += 1 if re[j, 1] == 0 else 2
    before = torch.full((1,), float("nan"), dtype=torch.float64)
    outs = [torch.empty(0, dtype=torch.float64), before]
    assert logic.lapack_more(*outs, before.clone(), a, a, torch.empty(0, dtype=torch.int32), 2) == 1
    close(torch.complex(outs[0][:, 0], outs[0][:, 1]), values)
    assert outs[1].isnan().all() and outs[1].shape == (1,)  # jobvr "N": rv untouched


def test_gesvd2_geqrf_orgqr_ormqr(logic):
    gen = torch.Generator().manual_seed(63)
    a = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    b = torch.randn(5, 2, generator=gen, dtype=torch.float64)
    copy = torch.empty(0, dtype=torch.float64)
    u, s, v, _ = _lapack_more(logic, 3, copy, a)
    close(u @ torch.diag(s) @ v.T, a)
    assert torch.equal(copy, a)
    qr, _, q, _ = _lapack_more(logic, 4, b, a)
    close(q @ torch.triu(qr[:3]), a)
    close(q.T @ q, torch.eye(3, dtype=torch.float64))
    _, _, qtb, _ = _lapack_more(logic, 5, b, a)
    close(qtb, torch.ormqr(*torch.geqrf(a), b, left=True, transpose=True))
    with pytest.raises(RuntimeError, match=r'THDoubleTensor_ormqr: side must be one of "LR", got "X"'):
        _lapack_more(logic, 9, b, a)


@pytest.mark.parametrize("which, upper", [(6, True), (7, False)])
def test_pstrf_pivots_the_largest_diagonal_first(logic, which, upper):
    gen = torch.Generator().manual_seed(64)
    m = torch.randn(5, 5, generator=gen, dtype=torch.float64)
    spd = m @ m.T + 0.1 * torch.eye(5, dtype=torch.float64)
    spd[3, 3] += 50  # pivoted first
    f, _, _, piv = _lapack_more(logic, which, spd, spd)
    p = piv.long() - 1  # 1-based, as LAPACK's
    assert p[0] == 3 and sorted(p.tolist()) == list(range(5))
    if upper:
        assert torch.equal(f, torch.triu(f))
        close(f.T @ f, spd[p][:, p])
    else:
        assert torch.equal(f, torch.tril(f))
        close(f @ f.T, spd[p][:, p])
    rank2 = m[:, :2] @ m[:, :2].T
    with pytest.raises(
        RuntimeError,
        match=r"THDoubleTensor_pstrf: matrix is rank deficient or not positive semidefinite \(rank 2 of 5\)",
    ):
        _lapack_more(logic, which, rank2, rank2)


def test_btrifact_and_btrisolve_solve_a_batch(logic):
    gen = torch.Generator().manual_seed(65)
    a = torch.randn(3, 4, 4, generator=gen, dtype=torch.float64)
    b = torch.randn(3, 4, 2, generator=gen, dtype=torch.float64)
    lu, x, _, piv = _lapack_more(logic, 8, b, a)
    ref = torch.linalg.lu_factor(a)
    close(lu, ref.LU)
    assert torch.equal(piv, ref.pivots)  # 1-based, as LAPACK's getrf
    close(x, torch.linalg.solve(a, b))
    _, x, _, _ = _lapack_more(logic, 8, b[:, :, 0].contiguous(), a)  # b [B, n]: one right-hand side each
    close(x, torch.linalg.solve(a, b[:, :, :1]).squeeze(2))
    singular = a.clone()
    singular[1] = 0
    with pytest.raises(
        RuntimeError, match=r"THDoubleTensor_btrifact: failed to factorize batch element 1 \(info == 1\)"
    ):
        _lapack_more(logic, 8, b, singular)


# -- the same families' THC forms --------------------------------------------------------


@pytest.fixture(scope="module")
def logic_cuda(tmp_path_factory):
    return built_extension(
        tmp_path_factory, "th_logic_cuda", [LOGIC / "th_logic_cuda.h"], [LOGIC / "th_logic_cuda.c"], True
    )


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_comparisons_shifts_cross_histc_random_and_lapack(logic_cuda):
    gen = torch.Generator().manual_seed(59)
    a = torch.randn(4, 3, generator=gen).cuda()
    b = torch.randn(4, 3, generator=gen).cuda()

    def run(which, x, y, shape=(1,)):
        r = torch.full(shape, float("nan"), device="cuda")
        assert logic_cuda.cuda_float_op(r, x, y, which) == 1
        return r

    close(run(0, a, b), (a < 0.5).float())
    close(run(1, a, b), (a >= b).float())
    close(run(2, a, b), a * 4)
    close(run(3, a, b), torch.linalg.cross(a, b, dim=1))
    close(run(4, a, b), torch.histc(a, bins=5, min=-2, max=2))
    close(run(5, a, b), a, atol=1e-6, rtol=0)  # normal_means with a vanishing stddev
    p = torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]], device="cuda")
    # bernoulli_FloatTensor with certain outcomes; as THC's, self must have p's
    # number of elements (it is not resized)
    close(run(6, a, p, p.shape), p)
    spd = a.T @ a + torch.eye(3, device="cuda")
    u = run(7, spd, b)
    close(u.T @ u, spd, rtol=1e-4, atol=1e-4)
    close(run(8, spd, b) @ spd, torch.eye(3, device="cuda"), rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_gels_geev_btrifact_btrisolve(logic_cuda):
    gen = torch.Generator().manual_seed(66)

    def run(which, b, a):
        outs = [torch.full((1,), float("nan"), dtype=torch.float64, device="cuda") for _ in range(2)]
        piv = torch.full((1,), -7, dtype=torch.int32, device="cuda")
        assert logic_cuda.cuda_lapack_more(*outs, b.cuda(), a.cuda(), piv, which) == 1
        return [t.cpu() for t in (*outs, piv)]

    a = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    b = torch.randn(6, 2, generator=gen, dtype=torch.float64)
    rb, ra, _ = run(0, b, a)
    close(rb[:3], torch.linalg.lstsq(a, b).solution)
    close(ra, torch.geqrf(a).a)
    sq = torch.randn(4, 4, generator=gen, dtype=torch.float64)
    re, rv, _ = run(1, sq, sq)
    close(torch.complex(re[:, 0], re[:, 1]), torch.linalg.eigvals(sq))
    if (re[:, 1] == 0).all():
        close(sq @ rv, rv * re[:, 0])
    batch = torch.randn(2, 4, 4, generator=gen, dtype=torch.float64)
    rhs = torch.randn(2, 4, 3, generator=gen, dtype=torch.float64)
    lu, x, _ = run(2, rhs, batch)
    close(lu, torch.linalg.lu_factor(batch).LU)
    close(x, torch.linalg.solve(batch, rhs))


def _thc_full_padded(x, kh, kw, srow, scol):
    """THC's full convolution's input: zero-padded by kh - 1 (kw - 1) before
    and to ((H - 1) srow + kh - 1) srow + kh rows in all."""
    h, w = x.shape[-2:]
    oh, ow = (h - 1) * srow + kh, (w - 1) * scol + kw
    ph, pw = (oh - 1) * srow + kh, (ow - 1) * scol + kw
    return torch.nn.functional.pad(x, (kw - 1, pw - w - (kw - 1), kh - 1, ph - h - (kh - 1)))


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_convolutions(logic_cuda):
    gen = torch.Generator().manual_seed(70)
    conv2d = torch.nn.functional.conv2d

    def rand(*shape):
        return torch.randn(*shape, generator=gen).cuda()

    def run(which, t, k, r=None, beta=0.0, alpha=1.0, s1=1, s2=1, table=None, fanin=1):
        r = torch.full((1,), float("nan"), device="cuda") if r is None else r
        table = torch.zeros(1, device="cuda") if table is None else table
        assert logic_cuda.cuda_thc_conv(r, t, k, table, which, beta, alpha, s1, s2, fanin) == 1
        return r

    x, w = rand(2, 7, 8), rand(3, 2, 3, 2)
    for which, typ in enumerate(["vx", "vc", "fx", "fc"]):
        for s1, s2 in [(1, 1), (2, 3)]:
            kernel = w.flip(2, 3) if typ[1] == "c" else w
            inp = _thc_full_padded(x, 3, 2, s1, s2) if typ[0] == "f" else x
            expected = conv2d(inp[None], kernel, stride=(s1, s2))[0]
            close(run(which, x, w, s1=s1, s2=s2), expected, rtol=1e-4, atol=1e-4)
    # beta keeps the output where its size stays
    old = rand(3, 5, 7)
    close(run(0, x, w, r=old.clone(), beta=0.5), 0.5 * old + conv2d(x[None], w)[0], rtol=1e-4, atol=1e-4)
    xb = rand(4, 2, 7, 8)
    close(run(4, xb, w, s1=2), conv2d(xb, w.flip(2, 3), stride=(2, 1)), rtol=1e-4, atol=1e-4)
    # Rev forms: the gradient of a strided correlation's kernel, as TH's
    g, gb = rand(2, 3, 2), rand(4, 2, 3, 2)
    rev = conv2d(x[:, None], g[:, None], dilation=(2, 1)).transpose(0, 1)
    close(run(5, x, g, beta=0.0, alpha=2.0, s1=2), 2.0 * rev, rtol=1e-4, atol=1e-4)
    revm = conv2d(xb.transpose(0, 1), gb.transpose(0, 1), dilation=(1, 2)).transpose(0, 1)
    close(run(6, xb, gb, s2=2), revm, rtol=1e-4, atol=1e-4)
    # conv2Dmap: two output planes of two (input plane, kernel) pairs each
    kernels = rand(4, 3, 2)
    table = torch.tensor([[1.0, 1.0], [2.0, 2.0], [2.0, 3.0], [1.0, 4.0]], device="cuda")
    out = run(7, x, kernels, r=torch.zeros(2, 5, 4, device="cuda"), s1=2, s2=1, table=table, fanin=2)
    pairs = conv2d(x[[0, 1, 1, 0]][None], kernels[:, None], stride=(1, 2), groups=4)[0]
    close(out, pairs.view(2, 2, 5, 4).sum(1), rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match=r"^THCudaTensor_conv2Dmv: type of convolution can be 'v' or 'f'"):
        run(8, x, w)
    with pytest.raises(RuntimeError, match=r"^THCudaTensor_conv2Dmv: kernel: 4D Tensor expected"):
        run(0, x, g)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_advanced_indexing_offsets(logic_cuda):
    gen = torch.Generator().manual_seed(69)
    x = torch.randn(6, 5, 4, generator=gen).cuda().transpose(0, 2)  # [4, 5, 6], strides (1, 4, 20)
    i0 = torch.tensor([3, 0, 2], device="cuda")
    i1 = torch.tensor([4, 4, 1], device="cuda")
    s0, s1, s2 = x.stride()

    def run(mask, n, base=7):
        out = torch.full((n,), -1, dtype=torch.int64, device="cuda")
        assert logic_cuda.cuda_advanced_offsets(out, x, i0, i1, i1, mask, base) == 1
        return out.cpu()

    # x[i0, i1, :]: the two indexers step together, the last dimension counts
    c = torch.arange(6)
    expected = 7 + (i0.cpu() * s0 + i1.cpu() * s1)[:, None] + c[None, :] * s2
    assert torch.equal(run(0b011, 18), expected.flatten())
    # x[:, i1, :]
    a = torch.arange(4)
    expected = 7 + a[:, None, None] * s0 + (i1.cpu() * s1)[None, :, None] + c[None, None, :] * s2
    assert torch.equal(run(0b010, 72), expected.flatten())
    # the offsets address the indexed elements
    storage = x.as_strided((x.untyped_storage().nbytes() // 4,), (1,), 0)
    assert torch.equal(storage[run(0b011, 18, 0).cuda()].view(3, 6), x[i0, i1, :])
    with pytest.raises(
        RuntimeError,
        match=r"^THCudaTensor_calculateAdvancedIndexingOffsets: index out of range: 4 is not in \[0, 4\) "
        r"along dimension 0",
    ):
        i0[0] = 4
        run(0b011, 18)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_integer_mean_meanall_and_dist(logic_cuda):
    gen = torch.Generator().manual_seed(68)
    a = torch.randint(-50, 50, (3, 5), generator=gen, dtype=torch.int32)
    b = torch.randint(-50, 50, (3, 5), generator=gen, dtype=torch.int32)
    r = torch.full((1,), -7, dtype=torch.int32, device="cuda")
    info = torch.full((1,), -7, dtype=torch.int64)
    assert logic_cuda.cuda_int_mean_dist(r, a.cuda(), b.cuda(), info, 0) == 1
    # C's integer division truncates toward zero, as Python's int() of the quotient
    assert torch.equal(r.cpu(), torch.div(a.sum(1), 5, rounding_mode="trunc").to(torch.int32))
    assert info.tolist() == [
        int(a.sum().item() / 15),
        int(torch.dist(a.double(), b.double(), 2)),
        int(torch.dist(a.double(), b.double(), 1)),
    ]
    with pytest.raises(RuntimeError, match=r"^THCudaIntTensor_meanall: empty Tensor"):
        logic_cuda.cuda_int_mean_dist(r, a.cuda(), b.cuda(), info, 1)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_blas_handles_scratch_space_gc_handler_and_textures(logic_cuda):
    info = torch.full((1,), -7, dtype=torch.int64)
    assert logic_cuda.cuda_resources(info, 0) == 1
    torch.cuda.synchronize()
    assert info.tolist() == [3, 2, 1, 16, 1, 1, 1]  # 4 floats (16 bytes) per SM
    with pytest.raises(
        RuntimeError,
        match=r"^THCState_setCurrentBlasHandleIndex: 9 is not a valid handle, valid range is: \(1, 3\)",
    ):
        logic_cuda.cuda_resources(info, 1)
    logic_cuda.cuda_resources(info, 3)
    calls = info[0].item()
    with pytest.raises(RuntimeError, match=r"THCudaMalloc"):
        logic_cuda.cuda_resources(info, 2)
    logic_cuda.cuda_resources(info, 3)
    assert info[0].item() == calls + 1  # the handler ran once, then the allocation was tried again
    logic_cuda.cuda_resources(info, 4)
    assert info.tolist()[:2] == [1, 40]  # over the tensor's memory, 10 floats
    with pytest.raises(
        RuntimeError,
        match=r"^THCudaIntTensor_getTextureObject: THC made texture objects of float tensors "
        r"\(THCudaTensor\) only",
    ):
        logic_cuda.cuda_resources(info, 5)


@pytest.mark.cuda
def test_thc_malloc_before_the_process_made_a_cuda_tensor(logic_cuda):
    # torch sets its caching allocator up with its first CUDA tensor; an
    # extension's first THCudaMalloc (here the scratch space's) may come first
    code = (
        "import importlib.util, sys, torch\n"
        "spec = importlib.util.spec_from_file_location('fixture_th_logic_cuda', sys.argv[1])\n"
        "m = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        "info = torch.full((1,), -7, dtype=torch.int64)\n"
        "assert not torch.cuda.is_initialized()\n"
        "print(m.cuda_resources(info, 0), info.tolist())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, logic_cuda.__file__], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "1" and "[3, 2, 1, 16, 1, 1, 1]" in done.stdout, done.stdout


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_batched_lu_over_arrays_of_device_pointers(logic_cuda):
    gen = torch.Generator().manual_seed(67)
    A = torch.randn(3, 4, 4, generator=gen, dtype=torch.float64)
    B = torch.randn(3, 4, 2, generator=gen, dtype=torch.float64)

    def run(which, mats):
        # each matrix stored column-major, as cuBLAS reads it: the transpose, row-major
        a = mats.transpose(1, 2).contiguous().cuda()
        b = B.transpose(1, 2).contiguous().cuda()
        c = torch.full((3, 4, 4), float("nan"), dtype=torch.float64, device="cuda")
        piv = torch.full((3, 4), -7, dtype=torch.int32, device="cuda")
        info = torch.full((3,), -7, dtype=torch.int32, device="cuda")
        rc = logic_cuda.cuda_batched_lu(a, b, c, piv, info, which)
        back = [t.transpose(1, 2).cpu() for t in (a, b, c)]
        return rc, *back, piv.cpu(), info.cpu()

    _, lu, _, _, piv, info = run(0, A)
    ref = torch.linalg.lu_factor_ex(A)
    close(lu, ref.LU)
    assert torch.equal(piv, ref.pivots) and info.tolist() == [0, 0, 0]
    _, lu, _, _, piv, _ = run(1, A)  # no pivoting: A = L U, the pivots untouched
    close((torch.tril(lu, -1) + torch.eye(4, dtype=torch.float64)) @ torch.triu(lu), A)
    assert (piv == -7).all()
    solved, _, x, _, _, _ = run(2, A)
    assert solved == 0
    close(x, torch.linalg.solve(A, B))
    singular = A.clone()
    singular[2, :, 0] = 0
    _, _, _, inverse, _, info = run(3, singular)
    close(inverse[:2], torch.linalg.inv(A[:2]))
    assert info.tolist() == [0, 0, 1]
    with pytest.raises(RuntimeError, match=r"^THCudaBlas_Dgetrs: trans must be 'n', 't' or 'c', got 'x'"):
        run(4, A)
    with pytest.raises(
        RuntimeError, match=r"^THCudaBlas_Sgetrf: the arrays of matrices are NULL for a batch of 1"
    ):
        run(5, A)
    with pytest.raises(
        RuntimeError,
        match=r"^THCudaIntTensor_btrifact: btrifact for CUDA tensors is only supported for floats and "
        r"doubles",
    ):
        run(6, A)


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("which", [0, 1], ids=["multinomial", "alias"])
def test_thc_multinomial_draws_each_category_by_its_weight(logic_cuda, which):
    torch.manual_seed(2)
    prob = torch.tensor([0.5, 0.0, 2.0, 1.0, 0.5], dtype=torch.float64, device="cuda")
    out = torch.full((200, 150) if which else (1,), -7, dtype=torch.int64, device="cuda")
    J = torch.full((1,), -7, dtype=torch.int64, device="cuda")
    q = torch.full((1,), float("nan"), dtype=torch.float64, device="cuda")
    assert logic_cuda.cuda_multinomial(out, J, q, prob, 30000, which) == 1
    freq = torch.bincount(out.flatten().cpu(), minlength=5).double() / out.numel()
    close(freq, (prob / prob.sum()).cpu(), atol=0.015, rtol=0)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_streams_of_ones_own_and_reserved(logic_cuda):
    a = torch.randn(64, 33, generator=torch.Generator().manual_seed(67)).cuda()
    r = torch.full((1,), float("nan"), device="cuda")
    before = torch.cuda.current_stream()
    assert logic_cuda.cuda_streams(r, a, 0) == 1
    torch.cuda.synchronize()
    assert torch.equal(r, a * 2)
    assert torch.cuda.current_stream() == before  # index 0: torch's stream again
    with pytest.raises(
        RuntimeError,
        match=r"THCState_setCurrentStreamIndex: 3 is not a valid stream, valid range is: \(0, 2\)",
    ):
        logic_cuda.cuda_streams(r, a, 1)
    with pytest.raises(
        RuntimeError,
        match=r"THCStream_new: flags must be cudaStreamDefault \(0\) or cudaStreamNonBlocking \(1\), got 7",
    ):
        logic_cuda.cuda_streams(r, a, 2)
    assert torch.equal((a * 3).cpu(), a.cpu() * 3)  # torch's next launch sees no stale error


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_bitwise_shifts_and_integer_addc(logic_cuda):
    gen = torch.Generator().manual_seed(60)
    a = torch.randint(1, 1000, (3, 5), generator=gen, dtype=torch.int32).cuda()
    b = torch.randint(1, 6, (3, 5), generator=gen, dtype=torch.int32).cuda()
    expected = [a ^ b, a >> b, a + 3 * a * b, a + torch.div(3 * a, b, rounding_mode="trunc")]
    for which, want in enumerate(expected):
        r = torch.full((1,), -7, dtype=torch.int32, device="cuda")
        assert logic_cuda.cuda_int_op(r, a, b, which) == 1
        assert torch.equal(r, want), which


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_storage_copies_between_host_and_device_types(logic_cuda):
    x = _rand(3, 4, dtype=torch.float32, seed=61)
    out = torch.full((2,), float("nan"))
    assert logic_cuda.cuda_storage_roundtrip(out, x) == 4  # THCudaStorage's element size
    assert torch.equal(out, x.flatten())


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_index_and_mask_forms_with_a_cpu_index_or_mask_and_reshape(logic_cuda):
    gen = torch.Generator().manual_seed(71)
    t = torch.randn(5, 3, generator=gen).cuda()
    base = torch.randn(6, 3, generator=gen).cuda()
    index = torch.tensor([4, 0, 2, 5, 1])  # a THLongTensor, on the CPU
    mask = torch.randint(0, 2, (6, 3), generator=gen, dtype=torch.uint8)  # a THByteTensor
    mask[0, 0], mask[1, 1] = 1, 0

    def run(which, r, src=t, m=mask):
        assert logic_cuda.cuda_host_index(r, src, index, m, which) == 1
        return r

    close(run(0, torch.full((1,), float("nan"), device="cuda"), base), base[index.cuda()])
    close(run(1, base.clone()), base.clone().index_copy_(0, index.cuda(), t))
    close(run(2, base.clone()), base.clone().index_add_(0, index.cuda(), t))
    close(run(3, base.clone()), base.clone().index_fill_(0, index.cuda(), 2.5))
    on_gpu = mask.bool().cuda()
    close(run(4, base.clone()), base.clone().masked_fill_(on_gpu, -1.0))
    src = torch.randn(6, 3, generator=gen).cuda()
    close(run(5, base.clone(), src), base.clone().masked_scatter_(on_gpu, src))
    close(run(6, torch.full((1,), float("nan"), device="cuda"), base), base[on_gpu])
    close(run(7, torch.full((2, 2), float("nan"), device="cuda")), t.flatten())
    with pytest.raises(
        RuntimeError, match=r"THCudaTensor_indexSelect_long: argument 4 \(index, THLongTensor\*\) is NULL"
    ):
        logic_cuda.cuda_host_index(base, t, None, mask, 0)
    # torch's reason where the running torch tells it (2.13 on), else that the sizes do not fit
    with pytest.raises(RuntimeError, match=r"THCudaTensor_maskedFillByte: .*(shape|size)"):
        run(4, base.clone(), m=mask[:2])
    with pytest.raises(RuntimeError, match=r"THCudaTensor_indexCopy_long: .*(index|size)"):
        run(1, torch.randn(2, 3, device="cuda"))


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("descending", [0, 1])
def test_thc_sort_key_value_permutes_the_values_as_the_keys(logic_cuda, descending):
    gen = torch.Generator().manual_seed(72)
    key = torch.randn(4, 37, generator=gen).cuda()
    value = torch.randint(-1000, 1000, (4, 37), generator=gen).cuda()
    want_key, order = key.sort(dim=1, descending=bool(descending))
    want_value = value.gather(1, order)
    assert logic_cuda.cuda_sort_key_value(key, value, 1, descending) == 1
    assert torch.equal(key, want_key) and torch.equal(value, want_value)
    with pytest.raises(
        RuntimeError,
        match=r"THCudaTensor_sortKeyValueInplace: key tensor must have same size as value tensor",
    ):
        logic_cuda.cuda_sort_key_value(key, value[:, :5], 1, descending)
    with pytest.raises(
        RuntimeError, match=r"THCudaTensor_sortKeyValueInplace: dimension 5 out of range of a 2-D tensor"
    ):
        logic_cuda.cuda_sort_key_value(key, value, 5, descending)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_integer_products_and_logical(logic_cuda):
    gen = torch.Generator().manual_seed(73)

    def ints(*shape):
        return torch.randint(-50, 50, shape, generator=gen, dtype=torch.int32)

    a, b, v, w = ints(4, 6), ints(6, 5), ints(6), ints(5)
    ba, bb = ints(3, 4, 6), ints(3, 6, 5)
    cases = [
        (0, ints(4, 5), a, b, a.long() @ b.long()),
        (1, ints(4), a, v, a.long() @ v.long()),
        (2, ints(6, 5), v, w, torch.outer(v.long(), w.long())),
        (3, ints(4, 5), ba, bb, (ba.long() @ bb.long()).sum(0)),
        (4, ints(3, 4, 5), ba, bb, ba.long() @ bb.long()),
    ]
    for which, t, x, y, product in cases:
        r = torch.full((1,), -7, dtype=torch.int32, device="cuda")
        assert logic_cuda.cuda_int_products(r, t.cuda(), x.cuda(), y.cuda(), which) == 1
        assert torch.equal(r.cpu(), (2 * t.long() + 3 * product).int()), which
    r = torch.full((1,), -7, dtype=torch.int32, device="cuda")
    assert logic_cuda.cuda_int_products(r, r, v.cuda(), v.cuda(), 5) == 1
    assert r.item() == int((v.long() * v.long()).sum())
    with pytest.raises(RuntimeError, match=r"THCudaIntTensor_addmm: .*\[n, k\] and \[k, p\]"):
        logic_cuda.cuda_int_products(r, ints(4, 5).cuda(), a.cuda(), a.cuda(), 0)
    m = torch.ones(3, 4, dtype=torch.uint8, device="cuda")
    assert logic_cuda.cuda_logical(m, 0) == 1 and logic_cuda.cuda_logical(m, 1) == 1
    m[1, 2] = 0
    assert logic_cuda.cuda_logical(m, 0) == 0 and logic_cuda.cuda_logical(m, 1) == 1
    assert logic_cuda.cuda_logical(torch.zeros_like(m), 1) == 0


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_thc_blas_dot_and_ger_over_raw_device_memory(logic_cuda, dtype):
    run = logic_cuda.cuda_blas_level1 if dtype == torch.float32 else logic_cuda.cuda_blas_level1_double
    gen = torch.Generator().manual_seed(74)
    x = torch.randn(9, generator=gen, dtype=dtype).cuda()
    y = torch.randn(8, generator=gen, dtype=dtype).cuda()
    r = torch.full((1,), float("nan"), dtype=dtype, device="cuda")
    assert run(r, x, y, r, 0) == 1
    close(r, (x[0:8:2] * y[:4].flip(0)).sum().reshape(1))  # x 2 apart, y from its far end
    a = torch.randn(4, 5, generator=gen, dtype=dtype).cuda()  # 4 columns of lda 5, column-major
    want = a.clone()
    want[:, :3] += 0.5 * torch.outer(y[0:8:2].flip(0), x[:3])  # A^T += 0.5 y x^T
    assert run(r, x, y, a, 1) == 1
    close(a, want)
    if dtype == torch.float32:
        with pytest.raises(RuntimeError, match=r"THCudaBlas_Sdot: x is NULL for 4 elements"):
            run(r, x, y, a, 2)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_half_conversions_sleep_and_memory_info(logic_cuda):
    f = torch.randn(37, generator=torch.Generator().manual_seed(75)).cuda()
    h = torch.full((37,), float("nan"), dtype=torch.float16, device="cuda")
    assert logic_cuda.cuda_half_and_general(f, h, 0) == 1
    assert torch.equal(h, f.half())
    back = torch.full((37,), float("nan"), device="cuda")
    assert logic_cuda.cuda_half_and_general(back, h, 1) == 1
    assert torch.equal(back, h.float())
    assert logic_cuda.cuda_half_and_general(f, h, 2) == 1
    assert logic_cuda.cuda_half_and_general(back, h, 3) == 1
    close(back, torch.full_like(back, float((h.float() * h.float()).sum().half())), rtol=1e-2, atol=0)
    major, minor = torch.cuda.get_device_capability()
    native, fast = major > 5 or (major, minor) == (5, 3), (major, minor) == (6, 0)
    assert logic_cuda.cuda_half_and_general(f, h, 4) == 2 * native + fast
    assert logic_cuda.cuda_half_and_general(f, h, 5) == 1
    with pytest.raises(RuntimeError, match=r"THC_sleep: cycles must be >= 0, got -1"):
        logic_cuda.cuda_half_and_general(f, h, 6)
    assert logic_cuda.cuda_half_and_general(f, h, 7) == 1
    with pytest.raises(RuntimeError, match=r"THCFloat2Half: out is NULL for 37 elements"):
        logic_cuda.cuda_half_and_general(f, h, 8)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thc_state_of_ones_own_peer_access_and_pinned_memory(logic_cuda):
    t = torch.randn(3, 5, generator=torch.Generator().manual_seed(76)).cuda()
    before = t.clone()
    assert logic_cuda.cuda_state_and_host_memory(t, 0) == 1
    assert torch.equal(t, before * 2)
    assert logic_cuda.cuda_state_and_host_memory(t, 1) == 1
    assert logic_cuda.cuda_state_and_host_memory(t, 2) == 1
    torch.cuda.synchronize()
    assert torch.equal(t.cpu(), torch.arange(15, dtype=torch.float32).reshape(3, 5))
    with pytest.raises(RuntimeError, match=r"THCState_getPeerToPeerAccess: \d+ is not a device"):
        logic_cuda.cuda_state_and_host_memory(t, 3)
    assert logic_cuda.cuda_state_and_host_memory(t, 4) == 1


def test_raw_lapack_on_column_major_memory(logic):
    gen = torch.Generator().manual_seed(77)
    n, k = 5, 3
    A = torch.randn(n, n, generator=gen, dtype=torch.float64) + 4 * torch.eye(n, dtype=torch.float64)
    B = torch.randn(n, k, generator=gen, dtype=torch.float64)

    def column_major(m):  # the tensor whose memory holds m column by column
        return m.t().contiguous()

    def run(which, a, b=None, w=None):
        a, b = column_major(a), column_major(B if b is None else b)
        ipiv = torch.full((n,), -7, dtype=torch.int32)
        w = torch.full((n,), float("nan"), dtype=torch.float64) if w is None else w
        return logic.lapack_raw(a, b, ipiv, w, which), a.t(), b.t(), ipiv, w

    LU, pivots = torch.linalg.lu_factor(A)
    info, a, b, ipiv, _ = run(0, A)  # gesv
    assert info == 0 and torch.equal(ipiv, pivots)
    close(a, LU)
    close(b, torch.linalg.solve(A, B))
    info, a, _, ipiv, _ = run(1, A)  # getrf
    assert info == 0 and torch.equal(ipiv, pivots)
    close(a, LU)

    def from_lu(which, b=None):
        a, bm = column_major(LU), column_major(B if b is None else b)
        ipiv = pivots.clone()
        return logic.lapack_raw(a, bm, ipiv, torch.zeros(n, dtype=torch.float64), which), a.t(), bm.t()

    info, _, b = from_lu(2)  # getrs, transposed
    assert info == 0
    close(b, torch.linalg.solve(A.t(), B))
    info, a, _ = from_lu(3)  # getri
    assert info == 0
    close(a, torch.linalg.inv(A))
    U = A.triu()
    info, _, b, _, _ = run(4, U)  # trtrs
    assert info == 0
    close(b, torch.linalg.solve_triangular(U, B, upper=True))
    singular = U.clone()
    singular[2, 2] = 0
    info, _, b, _, _ = run(4, singular)
    assert info == 3 and torch.equal(b, B)  # nothing solved, as LAPACK
    S = A + A.t()
    info, vectors, _, _, w = run(5, S)  # syev, from the lower triangle
    assert info == 0
    close(w, torch.linalg.eigvalsh(S))
    close(S @ vectors, vectors * w)
    assert run(6, S)[0] == 3 * n - 1  # the workspace query
    with pytest.raises(RuntimeError, match=r"THDoubleLapack_gesv: lda must be >= 5, got 4"):
        run(7, A)
    with pytest.raises(RuntimeError, match=r"THDoubleLapack_trtrs: uplo must be one of \"UL\", got 'X'"):
        run(8, A)
    assert run(9, A)[0] == 1  # THFloatLapack_gesv
