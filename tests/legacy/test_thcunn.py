"""THCUNN's and THC's device headers (THCUNN.h, common.h,
THCHalfAutoNumerics.cuh, THCDeviceTensor.cuh, THCDeviceTensorUtils.cuh,
THCDeviceUtils.cuh, THCNumerics.cuh, THCAtomics.cuh), through a module
written as THCUNN's were (tests/legacy/fixtures/thcunn): C functions that
pass the state on to a generic .cu compiled for half, float and double."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import torch

from conftest import built_extension, close
from kernforge_legacy import ffi

FIXTURE = Path(__file__).parent / "fixtures" / "thcunn" / "src"


def _ptx(tmp_path: Path, source: Path) -> str:
    """`source` compiled to PTX for sm_90 (so that the headers are checked
    where there is no GPU), with cuBLAS's and cuSPARSE's headers, which THC.h
    includes, stubbed; the PTX's text."""
    (tmp_path / "cublas_v2.h").write_text(
        "typedef struct cublasContext *cublasHandle_t;\ntypedef int cublasStatus_t;\n"
    )
    (tmp_path / "cusparse.h").write_text(
        "typedef struct cusparseContext *cusparseHandle_t;\ntypedef int cusparseStatus_t;\n"
    )
    inc = Path(ffi.include_dir())
    ptx = tmp_path / "k.ptx"
    cmd = [ffi._nvcc(), "-ptx", "-arch=sm_90", "-DKERNFORGE_LEGACY_WITH_CUDA", "-o", str(ptx)]
    cmd += [f"-I{d}" for d in (inc, inc / "TH", inc / "THC", inc / "THCUNN", tmp_path, FIXTURE)]
    done = subprocess.run([*cmd, str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return ptx.read_text()


@pytest.mark.skipif(ffi._nvcc() is None, reason="needs nvcc (no GPU)")
def test_the_module_compiles_for_every_float_type(tmp_path):
    text = _ptx(tmp_path, FIXTURE / "thcunn_kernel.cu")
    # one instantiation per type: half (6__half), float, double
    kernels = set(re.findall(r"\.entry\s+(\w*PlaneStats_kernel\w*)", text))
    assert len(kernels) == 3 and any("__half" in k for k in kernels), kernels
    assert "shfl.sync.bfly" in text  # WARP_SHFL_XOR
    assert "atom.global.cas" in text and "atom.global.add.u64" in text  # narrow and 64-bit atomicAdd


@pytest.mark.skipif(ffi._nvcc() is None, reason="needs nvcc (no GPU)")
def test_thc_h_alone_names_the_shape_buffer_as_thc_did(tmp_path):
    """GenRe-ShapeHD's kernels (2018) include only THC.h and copy THCUNN's
    shape checks, which keep THCudaTensor_sizeDesc's result in a
    THCDescBuff: THC's own THCTensor.h defined it, not THCUNN."""
    source = tmp_path / "shape_check.cu"
    source.write_text(
        "#include <THC.h>\n"
        "int described(THCState *state, THCudaTensor *t) {\n"
        "  THCDescBuff s = THCudaTensor_sizeDesc(state, t);\n"
        "  return sizeof(s.str) == THC_DESC_BUFF_LEN && s.str[0] == '[';\n"
        "}\n"
    )
    _ptx(tmp_path, source)


@pytest.fixture(scope="module")
def thcunn(tmp_path_factory):
    return built_extension(
        tmp_path_factory,
        "thcunn",
        headers=[FIXTURE / "thcunn.h"],
        sources=[FIXTURE / "thcunn.c", FIXTURE / "thcunn_kernel.cu"],
        with_cuda=True,
    )


SUFFIX = {torch.float32: "", torch.float64: "_double", torch.float16: "_half"}
TOLERANCE = {torch.float32: 2e-6, torch.float64: 1e-12, torch.float16: 2e-3}


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("dtype", list(SUFFIX))
def test_plane_statistics_over_device_tensors(thcunn, dtype):
    x = torch.randn(6, 5, 300, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    x = (x * 2 + torch.arange(5, dtype=torch.float64).view(1, 5, 1)).to("cuda", dtype)
    x = x.transpose(0, 2).contiguous().transpose(0, 2)  # strided: the device tensor takes the strides
    mean = torch.full((2,), float("nan"), dtype=dtype, device="cuda")
    var = torch.full((2,), float("nan"), dtype=dtype, device="cuda")
    assert getattr(thcunn, "plane_stats" + SUFFIX[dtype])(x, mean, var) == 1
    ref = x.double()
    close(mean.double(), ref.mean((0, 2)), rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    close(var.double(), ref.var((0, 2), unbiased=False), rtol=TOLERANCE[dtype] * 4, atol=TOLERANCE[dtype])


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("dtype", list(SUFFIX))
def test_affine_writes_through_sub_tensors(thcunn, dtype):
    gen = torch.Generator().manual_seed(2)
    x, w, b = (torch.randn(*s, generator=gen, dtype=torch.float64) for s in ((3, 4, 70), (4,), (4,)))
    x, w, b = (t.to("cuda", dtype) for t in (x, w, b))
    out = torch.full_like(x, float("nan"))
    assert getattr(thcunn, "affine" + SUFFIX[dtype])(x, w, b, out) == 1
    # in the accumulator type, rounded to the element type, then the bias added in it
    acc = torch.float32 if dtype == torch.float16 else dtype
    expected = ((x.to(acc) * w.to(acc).view(1, 4, 1)).to(dtype) + b.view(1, 4, 1)).to(dtype)
    close(out, expected, rtol=0, atol=0)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thcunn_checks_name_both_shapes(thcunn):
    x = torch.randn(3, 4, 70, device="cuda")
    w, b = torch.randn(4, device="cuda"), torch.randn(4, device="cuda")
    with pytest.raises(RuntimeError, match=r"input_ and output_ shapes do not match: input_ \[3 x 4 x 70\], "
                       r"output_ \[3 x 4 x 69\]"):  # fmt: skip
        thcunn.affine(x, w, b, torch.empty(3, 4, 69, device="cuda"))
    with pytest.raises(RuntimeError, match=r"Need weight_ of dimension 1 and weight_.size\[0\] == 4 but got "
                       r"weight_ to be of shape: \[5\]"):  # fmt: skip
        thcunn.affine(x, torch.randn(5, device="cuda"), torch.randn(5, device="cuda"), torch.empty_like(x))
    with pytest.raises(RuntimeError, match=r"3D input tensor expected but got: \[4 x 70\]"):
        thcunn.plane_stats(x[0], torch.empty(0, device="cuda"), torch.empty(0, device="cuda"))


@pytest.mark.cuda
@pytest.mark.sanitize
def test_atomic_adds_of_every_width(thcunn):
    # 40,000 values over 37 bins: many threads add to the same int64, int16 and
    # uint8 (four of which share a 32-bit word) at once
    values = torch.randint(0, 37, (40000,), generator=torch.Generator().manual_seed(3)).cuda()
    # The int16 and uint8 adds swap the aligned 4 bytes around the element
    # (THCAtomics.cuh): their buffers end on a 4-byte boundary, as torch's
    # allocations always do (compute-sanitizer, with the caching allocator
    # off, sees each tensor as allocated to its exact size).
    counts = torch.zeros(37, dtype=torch.int64, device="cuda")
    shorts = torch.zeros(38, dtype=torch.int16, device="cuda")
    bytes_ = torch.zeros(40, dtype=torch.uint8, device="cuda")
    assert thcunn.count(values, counts, shorts, bytes_) == 1
    expected = torch.bincount(values, minlength=37)
    assert torch.equal(counts, expected)
    assert torch.equal(shorts[:37].long(), expected) and not shorts[37:].any()  # under 2^15 each
    assert torch.equal(bytes_[:37].long(), expected % 256) and not bytes_[37:].any()  # uint8 wraps, as C's
