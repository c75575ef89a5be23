"""kernforge_legacy.ffi: extensions written in the 2017 torch.utils.ffi style
(tests/legacy/fixtures, kept as such code was written; their build.py differs
from the original only in the import line), built through create_extension
and checked against references: on the CPU everywhere, on CUDA on a GPU host.

- my_lib: the classic example: two inputs, an output resized in C.
- gather: an int tensor of indices, THError from C, THCudaMalloc (the 2017
  three-argument form), a .cu source written with the Caffe macros.
- probe: every TH/THC function once, and each way an error surfaces.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import warnings
import zipfile
from pathlib import Path

import pytest
import torch

from conftest import build_folder, built_once, random
from kernforge_legacy import ffi

FIXTURES = Path(__file__).parent / "fixtures"
CUDA = torch.cuda.is_available()
# Every CUDA test here but the one that provokes CUDA errors runs under nox -s sanitize.
DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.sanitize])]


def _load(package: Path, alias: str):
    """Imports a built extension package under a name of its own (two fixtures
    are both called _ext.<name>, as legacy projects were)."""
    spec = importlib.util.spec_from_file_location(alias, package / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    """A scratch folder which the run's pytest-xdist workers share (each
    fixture below builds into it once: built_once; see build_folder); the
    build cache inside it, for this process and the build scripts it runs."""
    root = build_folder(tmp_path_factory) / "legacy"
    root.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TORCH_EXTENSIONS_DIR", str(root / "cache"))
        yield root


def _run(cmd, cwd: Path, **env) -> str:
    result = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert result.returncode == 0, result.stdout
    return result.stdout


def _add_in_new_process(package: str, cwd: Path) -> str:
    """`from <package> import my_lib` and one add, in a fresh interpreter in `cwd`."""
    code = (
        f"import torch\nfrom {package} import my_lib\nout = torch.empty(0)\n"
        "print(my_lib.my_lib_add_forward(torch.ones(2), torch.ones(2), out), out.tolist())"
    )
    return _run([sys.executable, "-c", code], cwd).strip()


def _build_fixture(workdir: Path, name: str):
    """Copies a fixture, runs its make.sh (CUDA objects) and build.py as a
    2017 user did, and loads the result (built once a run: the first worker
    to get here builds, the others load its build)."""
    with built_once(workdir / name) as src:
        if not (src / "_ext" / name / f"_{name}.so").exists():
            shutil.copytree(FIXTURES / name, src, dirs_exist_ok=True)
            if CUDA and (src / "make.sh").exists():
                _run(["bash", "make.sh"], src, ARCH="sm_{}{}".format(*torch.cuda.get_device_capability()))
            _run([sys.executable, "build.py"], src)
    return _load(src / "_ext" / name, f"fixture_{name}")


@pytest.fixture(scope="session")
def my_lib(workdir):
    return _build_fixture(workdir, "my_lib")


@pytest.fixture(scope="session")
def gather(workdir):
    return _build_fixture(workdir, "gather")


@pytest.fixture(scope="session")
def probe(workdir):
    src = FIXTURES / "probe" / "src"
    with built_once(workdir / "probe") as folder:
        ext = ffi.create_extension(
            "probe",
            headers=[src / "probe.h", *([src / "probe_cuda.h"] if CUDA else [])],
            sources=[
                src / "probe.c",
                *(
                    [src / "probe_cuda.c", src / "probe_kernel.cu", src / "probe_warp_kernel.cu"]
                    if CUDA
                    else []
                ),
            ],
            with_cuda=CUDA,
            relative_to=str(folder / "build.py"),
            verbose=False,
        )
        package = ext.build()
    return _load(package, "fixture_probe")


def _suffix(device):
    return "_cuda" if device == "cuda" else ""


# -- my_lib: the old example, output resized in C ---------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_my_lib_add(my_lib, device):
    gen = torch.Generator().manual_seed(0)
    a, b = random((37, 65), torch.float32, device, gen), random((37, 65), torch.float32, device, gen)
    out = a.new()  # empty: the C function resizes it, and Python sees that
    assert getattr(my_lib, "my_lib_add_forward" + _suffix(device))(a, b, out) == 1
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)

    grad = a.new()
    assert getattr(my_lib, "my_lib_add_backward" + _suffix(device))(out, grad) == 1
    assert torch.equal(grad, torch.ones_like(a))


@pytest.mark.parametrize("device", DEVICES)
def test_my_lib_returns_the_c_result(my_lib, device):
    a = torch.randn(3, 4, device=device)
    out = torch.full((2,), 7.0, device=device)
    assert getattr(my_lib, "my_lib_add_forward" + _suffix(device))(a, torch.randn(5, device=device), out) == 0
    assert torch.equal(out, torch.full((2,), 7.0, device=device))  # untouched


def test_my_lib_checks_tensor_types(my_lib):
    # ArgumentTypeError: a TypeError as cffi raised (and 2018 code caught), and a RuntimeError
    a = torch.randn(3)
    with pytest.raises(
        ffi.ArgumentTypeError,
        match=r"my_lib_add_forward: argument 2 \(input2, THFloatTensor\*\): "
        r"expected a cpu tensor of float32, got a cpu tensor of float64",
    ) as raised:
        my_lib.my_lib_add_forward(a, a.double(), a.new())
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, RuntimeError)
    # several wrong: the first is named, as the arguments are checked in their order
    with pytest.raises(ffi.ArgumentTypeError, match=r"argument 1 \(input1, THFloatTensor\*\)"):
        my_lib.my_lib_add_forward(a.double(), a.double(), a.new().int())
    # the schema parser's errors, in the function's own words (not the op's namespace)
    with pytest.raises(
        ffi.ArgumentTypeError,
        match=r"^my_lib_add_forward: argument 2 \(input2\): expected a tensor \(or None for NULL\), "
        r"got float$",
    ):
        my_lib.my_lib_add_forward(a, 1.0, a.new())
    wrong_kind = ffi.ArgumentTypeError
    with pytest.raises(wrong_kind, match=r"argument 1 \(input1\): expected a tensor .*, got ndarray"):
        my_lib.my_lib_add_forward(a.numpy(), a, a.new())
    with pytest.raises(
        ffi.ArgumentTypeError, match=r"^my_lib_add_forward\(input1, input2, output\) takes 3 arguments, got 2"
    ):
        my_lib.my_lib_add_forward(a, a)
    with pytest.raises(ffi.ArgumentTypeError, match=r"takes 3 arguments, got 4$"):
        my_lib.my_lib_add_forward(a, a, a.new(), a)
    with pytest.raises(ffi.ArgumentTypeError, match=r"got an unexpected keyword argument 'out'$"):
        my_lib.my_lib_add_forward(a, a, out=a.new())
    assert my_lib.my_lib_add_forward.__name__ == "my_lib_add_forward"


@pytest.mark.cuda
@pytest.mark.sanitize
def test_my_lib_cuda_function_rejects_cpu_tensors(my_lib):
    a = torch.randn(3)
    with pytest.raises(RuntimeError, match=r"expected a cuda tensor of float32, got a cpu tensor of float32"):
        my_lib.my_lib_add_forward_cuda(a, a, a.new())


def test_build_script_and_import_line_work_as_before(my_lib, workdir):
    """`from _ext import my_lib` in the project folder, as the old wrappers did."""
    assert (workdir / "my_lib" / "_ext" / "__init__.py").exists()
    assert (workdir / "my_lib" / "_ext" / "my_lib" / "_my_lib.so").exists()
    assert _add_in_new_process("_ext", workdir / "my_lib") == "1 [2.0, 2.0]"


# -- gather: an int tensor of indices ---------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_gather_rows(gather, device):
    gen = torch.Generator().manual_seed(1)
    x = random((50, 33), torch.float32, device, gen)
    index = torch.randint(0, 50, (77,), generator=gen, dtype=torch.int32).to(device)
    out = torch.full((3, 3), float("nan"), device=device)  # resized and every element written
    assert getattr(gather, "gather_rows_forward" + _suffix(device))(x, index, out) == 1
    assert torch.equal(out, x[index.long()])

    grad_out = random((77, 33), torch.float32, device, gen)
    grad_in = torch.empty(0, device=device)
    assert getattr(gather, "gather_rows_backward" + _suffix(device))(grad_out, index, 50, grad_in) == 1
    expected = torch.zeros(50, 33, dtype=torch.float64, device=device).index_add_(
        0, index.long(), grad_out.double()
    )
    torch.testing.assert_close(grad_in, expected.float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_gather_errors_raised_in_c(gather, device):
    fn = getattr(gather, "gather_rows_forward" + _suffix(device))
    x, out = torch.randn(5, 3, device=device), torch.empty(0, device=device)
    message = r"index 7 out of range for 5 rows \(.*gather(_cuda)?\.c:\d+\)"
    with pytest.raises(RuntimeError, match=message) as raised:
        fn(x, torch.tensor([1, 7], dtype=torch.int32, device=device), out)
    assert type(raised.value) is RuntimeError  # THError's, not taken for an argument error
    with pytest.raises(RuntimeError, match=r"invalid argument 1: input must be 2-D \(.*\.c:\d+\)"):
        fn(x[0], torch.tensor([1], dtype=torch.int32, device=device), out)
    int_type = "THCudaIntTensor" if device == "cuda" else "THIntTensor"
    with pytest.raises(
        RuntimeError, match=rf"argument 2 \(index, {int_type}\*\): expected a {device} tensor of int32"
    ):
        fn(x, torch.tensor([1], device=device), out)
    # the extension still works afterwards
    assert fn(x, torch.tensor([4], dtype=torch.int32, device=device), out) == 1
    assert torch.equal(out, x[4:5])


def test_int_arguments_must_fit_the_c_type(gather):
    with pytest.raises(OverflowError, match=r"argument 3 \(num_rows, int\): 1099511627776 does not fit"):
        gather.gather_rows_backward(
            torch.randn(1, 2), torch.zeros(1, dtype=torch.int32), 2**40, torch.empty(0)
        )


# -- probe: the TH/THC API, function by function -----------------------------------------


def test_sizes_strides_and_contiguity(probe):
    t = torch.randn(4, 6)[:, ::2]
    out = torch.empty(0, dtype=torch.int64)
    probe.probe_shape(t, out)
    assert out.tolist() == [2, 12, 0, 4, 3, 6, 2]
    probe.probe_shape(torch.randn(2, 3, 5), out)
    assert out.tolist() == [3, 30, 1, 2, 3, 5, 15, 5, 1]
    assert probe.probe_size(t, 1) == 3
    with pytest.raises(RuntimeError, match=r"THFloatTensor_size: dimension 2 out of range of a 2-D tensor"):
        probe.probe_size(t, 2)


@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5])
def test_resize(probe, ndim):
    t = torch.empty(0, dtype=torch.float64)
    shape = [2, 3, 4, 5, 6][:ndim]
    probe.probe_resize(t, ndim, *(shape + [0] * (5 - ndim)))
    assert list(t.shape) == shape and t.is_contiguous()
    src = torch.empty(3, 7, dtype=torch.int32)
    t = torch.empty(1, dtype=torch.int32)
    probe.probe_resize_as(t, src)
    assert t.shape == src.shape
    with pytest.raises(RuntimeError, match=r"THDoubleTensor_resize1d: negative size -2"):
        probe.probe_resize(torch.empty(0, dtype=torch.float64), 1, -2, 0, 0, 0, 0)


def test_fill_and_zero(probe):
    t = torch.randint(-9, 9, (5, 3), dtype=torch.int32)
    probe.probe_fill(t, -123)
    assert torch.equal(t, torch.full((5, 3), -123, dtype=torch.int32))
    h = torch.randn(7, dtype=torch.float16)
    probe.probe_fill_half(h, 2.5)
    assert torch.equal(h, torch.full((7,), 2.5, dtype=torch.float16))
    b = torch.randn(7, dtype=torch.bfloat16)
    probe.probe_fill_bfloat16(b, -1.25)
    assert torch.equal(b, torch.full((7,), -1.25, dtype=torch.bfloat16))
    u = torch.randint(1, 255, (9,), dtype=torch.uint8)
    probe.probe_zero(u)
    assert not u.any()


def test_scalars_in_and_out(probe):
    x = torch.randn(100, dtype=torch.float64)
    assert probe.probe_sum(x, 0.5) == pytest.approx(float(x.sum()) * 0.5)
    assert probe.probe_narrow(255) == 255
    with pytest.raises(
        RuntimeError, match=r"probe_narrow: argument 1 \(value, unsigned char\): 256 does not fit"
    ):
        probe.probe_narrow(256)
    assert probe.probe_size_t(2**40) == 2**40  # a 64-bit unsigned parameter
    with pytest.raises(RuntimeError, match=r"probe_size_t: argument 1 \(value, size_t\): -1 does not fit"):
        probe.probe_size_t(-1)
    # beyond the op's int64, where torch's parser says "expected int, found int"
    with pytest.raises(
        ffi.ArgumentOverflowError, match=rf"^probe_size_t: argument 1 \(value\): {2**70} does not fit"
    ):
        probe.probe_size_t(2**70)
    with pytest.raises(
        ffi.ArgumentOverflowError, match=rf"^probe_narrow: argument 1 \(value\): {-(2**63) - 1} does"
    ):
        probe.probe_narrow(value=-(2**63) - 1)
    wrong_kind = ffi.ArgumentTypeError
    with pytest.raises(wrong_kind, match=r"^probe_narrow: argument 1 \(value\): expected an int, got float"):
        probe.probe_narrow(2.5)
    with pytest.raises(wrong_kind, match=r"^probe_sum: argument 2 \(\w+\): expected a number, got str"):
        probe.probe_sum(x, "0.5")


def test_const_tensors_are_not_mutable_in_the_schema(probe):
    schema = str(probe.probe_sum.op._schema)
    assert "Tensor? t," in schema and "Tensor(a!)? t" not in schema
    assert "Tensor(a!)? t" in str(probe.probe_fill.op._schema)


def test_views_of_a_storage_write_through(probe):
    """newWithStorage2d as THNN's convolutions used it (strides -1), on a
    tensor at a storage offset, and setStorage1d with a stride of its own."""
    base = torch.zeros(11)
    assert probe.probe_storage_view(base[5:], 2, 3) == 3
    assert torch.equal(base[5:].view(2, 3), torch.tensor([[0.0, 1, 2], [100, 101, 102]]))
    assert torch.equal(base[:5], torch.zeros(5))
    src = torch.zeros(9)
    assert probe.probe_set_storage(src[1:], 1, 3, 2, 7.0) == 3
    assert torch.equal(src, torch.tensor([0.0, 0, 7, 0, 7, 0, 7, 0, 0]))
    with pytest.raises(
        RuntimeError, match=r"setStorage1d: the view .*last element 10.* outside the storage of 9"
    ):
        probe.probe_set_storage(src[1:], 1, 5, 2, 1.0)


def test_none_passes_null_as_cffi_did(probe):
    """2017 code left optional tensors NULL (a convolution's bias) and its
    Python passed None for them."""
    out, bias = torch.randn(2, 3), torch.randn(2, 3)
    expected = out + bias
    assert probe.probe_optional(bias, out) == 1
    assert torch.equal(out, expected)
    before = out.clone()
    assert probe.probe_optional(None, out) == 0
    assert torch.equal(out, before)
    assert probe.probe_optional(None, None) == 0
    assert "Tensor(a!)? bias, Tensor(b!)? out" in str(probe.probe_optional.op._schema)


def test_th_error_and_arg_check(probe):
    with pytest.raises(RuntimeError, match=r"^probe failed with code 7 \(.*probe\.c:\d+\)"):
        probe.probe_error(7)
    with pytest.raises(
        RuntimeError, match=r"^invalid argument 1: ok must be positive, got -3 \(.*probe\.c:\d+\)"
    ):
        probe.probe_argcheck(-3)
    assert probe.probe_argcheck(4) == 4


@pytest.mark.cuda
@pytest.mark.sanitize
def test_current_stream_and_device(probe):
    t = torch.randn(3, device="cuda")
    assert probe.probe_stream(t) == torch.cuda.current_stream().cuda_stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert probe.probe_stream(t) == side.cuda_stream
    assert probe.probe_device(t) == t.device.index


@pytest.mark.cuda
@pytest.mark.sanitize
def test_thcuda_malloc_and_copy(probe):
    src = torch.randn(1000, device="cuda")
    dst = torch.empty(0, device="cuda")
    probe.probe_copy(src, dst)
    assert torch.equal(dst, src)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_cuda_resize_and_fill(probe):
    t = torch.empty(0, dtype=torch.int64, device="cuda")
    probe.probe_fill_cuda(t, 2, 3, 4, -(2**40))
    assert torch.equal(t, torch.full((2, 3, 4), -(2**40), dtype=torch.int64, device="cuda"))


@pytest.mark.cuda
def test_cuda_errors_raise(probe):
    t = torch.randn(4, device="cuda")
    with pytest.raises(
        RuntimeError,
        match=r"CUDA kernel launch failed in BadLaunch \(.*probe_kernel\.cu:\d+\): "
        r"cudaError(InvalidConfiguration|InvalidValue): invalid (configuration )?argument",
    ):
        probe.probe_bad_launch(t)
    with pytest.raises(
        RuntimeError, match=r"CUDA error: cudaErrorInvalidValue: invalid argument \(.*probe_cuda\.c"
    ):
        probe.probe_check(1)
    # neither error is sticky: the next kernels run
    assert float((t + 1).sum()) == pytest.approx(float(t.sum()) + 4, rel=1e-5)


@pytest.mark.cuda
@pytest.mark.sanitize
def test_warp_intrinsics_and_thread_calls_cuda_13_removed(probe):
    """probe_warp_kernel.cu shuffles and votes without a mask and its host
    code calls cudaThreadSynchronize, in a .cu file that includes no TH
    header: the build puts THC/kfl_removed_cuda.h before it."""
    x = torch.randn(256, device="cuda", generator=torch.Generator(device="cuda").manual_seed(3))
    scan = torch.full((1,), float("nan"), device="cuda")
    sums, votes = torch.empty(0, device="cuda"), torch.empty(0, dtype=torch.int32, device="cuda")
    assert probe.probe_warp_cuda(x, scan, sums, votes) == 1
    w = x.view(-1, 32)
    torch.testing.assert_close(scan, w.cumsum(1).view(-1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sums[:, 0], w.sum(1), rtol=1e-5, atol=1e-5)  # __shfl_down
    torch.testing.assert_close(sums[:, 1], w.sum(1), rtol=1e-5, atol=1e-5)  # __shfl_xor
    assert torch.equal(sums[:, 2], w[:, 0])  # __shfl from lane 0
    bits = ((w > 0).long() << torch.arange(32, device="cuda")).sum(1)
    assert votes[:, 0].tolist() == ((bits + 2**31) % 2**32 - 2**31).tolist()  # __ballot, as int32
    assert votes[:, 1].tolist() == (w > 2).any(1).int().tolist()
    assert votes[:, 2].tolist() == (w < 3).all(1).int().tolist()
    assert 0 < votes[:, 1].sum() < len(votes), "x must give both answers of __any"


@pytest.mark.skipif(ffi._nvcc() is None, reason="needs nvcc (no GPU)")
def test_removed_cuda_header_turns_2017_warp_code_into_sync_forms(tmp_path):
    """Compiles only, for sm_90: without the header nvcc 13 refuses the
    fixture's kernel file; with it the shuffles and votes come out as their
    .sync instructions."""
    src = FIXTURES / "probe" / "src" / "probe_warp_kernel.cu"
    header = Path(ffi.include_dir()) / "THC" / "kfl_removed_cuda.h"
    ptx = tmp_path / "k.ptx"
    cmd = [ffi._nvcc(), "-ptx", "-arch=sm_90", "-o", str(ptx), str(src)]
    bare = subprocess.run(cmd, capture_output=True, text=True)
    assert bare.returncode != 0 and "cudaThreadSynchronize" in bare.stdout + bare.stderr
    done = subprocess.run([*cmd[:1], "-include", str(header), *cmd[1:]], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    text = ptx.read_text()
    for op in ["shfl.sync.down", "shfl.sync.bfly", "shfl.sync.up", "shfl.sync.idx", "vote.sync.ballot"]:
        assert op in text, op
    assert "vote.sync.any" in text and "vote.sync.all" in text and "activemask" in text


UNIQUE = FIXTURES / "unique" / "src"


def _stub_thc_libraries(folder: Path) -> Path:
    """cuBLAS's and cuSPARSE's headers, which THC.h includes, stubbed for a
    compile where the toolkit lacks them (the CPU machines)."""
    folder.mkdir(exist_ok=True)
    (folder / "cublas_v2.h").write_text(
        "typedef struct cublasContext *cublasHandle_t;\ntypedef int cublasStatus_t;\n"
    )
    (folder / "cusparse.h").write_text(
        "typedef struct cusparseContext *cusparseHandle_t;\ntypedef int cusparseStatus_t;\n"
    )
    return folder


@pytest.mark.skipif(ffi._nvcc() is None, reason="needs nvcc (no GPU)")
def test_a_kernel_that_includes_thrust_after_thc_h_compiles(tmp_path):
    """Compiles only, for sm_90: a .cu file that includes thrust after THC.h,
    as torch_unique's did, with the header the build puts before every .cu
    source. CUDA's C++ library (cuda::std, under thrust) declares a struct
    __any with a constructor __any(...), which a function-like __any macro
    rewrote; the vote without a mask still comes out as its .sync form."""
    inc = Path(ffi.include_dir())
    ptx = tmp_path / "k.ptx"
    cmd = [ffi._nvcc(), "-ptx", "-arch=sm_90", "-std=c++17", "-DKERNFORGE_LEGACY_WITH_CUDA", "-o", str(ptx)]
    cmd += ["-include", str(inc / "THC" / "kfl_removed_cuda.h")]
    cmd += [f"-I{d}" for d in (inc, inc / "TH", inc / "THC", _stub_thc_libraries(tmp_path / "stubs"))]
    done = subprocess.run([*cmd, str(UNIQUE / "unique_kernel.cu")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "vote.sync.any" in ptx.read_text()


def _unique_extension(folder: Path):
    """The fixture as torch_unique's build.py made its extension: its
    sources' folder, with its cuda.h, passed as an include folder."""
    return ffi.create_extension(
        "_ext.unique",
        headers=[UNIQUE / "cuda.h"],
        sources=[UNIQUE / "unique_cuda.c", UNIQUE / "unique_kernel.cu"],
        include_dirs=[UNIQUE],
        with_cuda=True,
        relative_to=str(folder / "build.py"),
        verbose=False,
    )


@pytest.mark.skipif(ffi._nvcc() is None, reason="needs nvcc (no GPU)")
def test_an_extension_header_named_as_cudas_does_not_hide_it(tmp_path, monkeypatch):
    """torch_unique declared its functions in its own src/cuda.h and passed
    src as an include folder. torch.utils.ffi put CUDA's folder before the
    extension's, so THC.h's <cuda.h> was CUDA's; the extension's C source,
    compiled with the build's own flags, finds both. Compiles only (the
    CUDA build of torch and cuBLAS's headers stood in for)."""
    stubs = _stub_thc_libraries(tmp_path / "stubs")
    monkeypatch.setattr(ffi, "_require_cuda", lambda: None)
    monkeypatch.setattr(ffi, "_thc_libraries", lambda cuda_home: ([f"-I{stubs}"], []))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    flags = _unique_extension(tmp_path)._flags(tmp_path / "libruntime.so", str(tmp_path))
    cmd = [
        "cc",
        "-fsyntax-only",
        "-Werror",
        *flags["defines"],
        *flags["includes"],
        str(UNIQUE / "unique_cuda.c"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def unique(workdir):
    with built_once(workdir / "unique") as folder:
        _unique_extension(folder).build()
    return _load(folder / "_ext" / "unique", "fixture_unique")


@pytest.mark.cuda
@pytest.mark.sanitize
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_thrust_on_thcs_stream_with_its_memory_resizes_the_callers_tensor(unique, dtype):
    """The fixture's kernels sort and unique in place with thrust on THC's
    stream, their scratch from THCudaMalloc, then resize1d the tensor
    Python passed in, as torch_unique's did; torch_unique's own header is
    called cuda.h and its .cu includes thrust after THC.h."""
    g = torch.Generator().manual_seed(7)
    values = torch.randint(-50, 50, (3000,), generator=g).to("cuda", dtype)
    expected = torch.unique(values)  # sorted
    assert 40 < len(expected) < len(values)
    call = unique.unique_cuda_Float if dtype == torch.float32 else unique.unique_cuda_Long
    assert call(values) == 1
    assert torch.equal(values, expected)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # THC's current stream is the caller's
        again = torch.randint(0, 5, (70000,), generator=g).to("cuda", dtype)
        assert call(again) == 1
    side.synchronize()
    assert again.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.cuda
@pytest.mark.sanitize
def test_a_warp_vote_without_a_mask_beside_thrust(unique):
    x = torch.randn(1000, generator=torch.Generator().manual_seed(8)).abs().cuda()
    x[torch.tensor([5, 40, 999])] = -1.0  # warps 0, 1 and 31
    flags = torch.full((7,), -3, dtype=torch.int32, device="cuda")
    assert unique.warp_any_negative_cuda(x, flags) == 1
    expected = torch.zeros(32, dtype=torch.int32)
    expected[[0, 1, 31]] = 1
    assert flags.tolist() == expected.tolist()


def test_a_c_source_compiles_against_the_th_folder_alone(tmp_path):
    """A 2017 Makefile or make.sh named torch's header folders themselves
    (`-I $TORCH/lib/include/TH`) and included `<TH.h>`: the headers find each
    other from there, without their parent folder."""
    _write(
        tmp_path,
        {
            "k.c": "#include <TH.h>\n#include <THTensor.h>\n#include <THStorage.h>\n"
            "int n(THFloatTensor *t) { return (int)THFloatTensor_nElement(t); }\n"
        },
    )
    inc = Path(ffi.include_dir())
    cc = subprocess.run(
        ["cc", "-c", f"-I{inc / 'TH'}", "k.c", "-o", "k.o"], cwd=tmp_path, capture_output=True, text=True
    )
    assert cc.returncode == 0, cc.stderr


def test_generic_names_redefined_in_ths_words_compile_without_a_warning(tmp_path):
    """PyTorch-Encoding's generic kernel files (2017) define THCTensor and
    THCTensor_ again, in THC's words, after including THC.h: a redefinition
    that differs by a space is a warning (an error under -Werror)."""
    _write(
        tmp_path,
        {
            "k.c": "#include <TH/TH.h>\n"
            "#define THTensor          TH_CONCAT_3(TH,Real,Tensor)\n"
            "#define THTensor_(NAME)   TH_CONCAT_4(TH,Real,Tensor_,NAME)\n"
            "#define THStorage        TH_CONCAT_3(TH,Real,Storage)\n"
            "#define THStorage_(NAME) TH_CONCAT_4(TH,Real,Storage_,NAME)\n"
            "int n(THFloatTensor *t) { return (int)THFloatTensor_nElement(t); }\n"
        },
    )
    cc = subprocess.run(
        ["cc", "-c", "-Werror", f"-I{ffi.include_dir()}", "k.c", "-o", "k.o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert cc.returncode == 0 and "redefined" not in cc.stderr, cc.stderr


def _thc_include() -> list[str]:
    from torch.utils.cpp_extension import CUDA_HOME

    return ffi._thc_libraries(Path(CUDA_HOME or "/usr/local/cuda"))[0]


@pytest.mark.cuda  # THC.h includes cuBLAS's header, which a CUDA host has
def test_a_kernel_file_compiles_against_the_th_and_thc_folders_alone(tmp_path):
    """FlowNet2's make.sh (2017): `nvcc -c ... -I ${TORCH}/lib/include/TH -I
    ${TORCH}/lib/include/THC` over a kernel file that includes `<THC.h>` and
    `<THCGeneral.h>`; the port points those two folders at include_dir().
    THC.h brings in cuda.h, as THC's did: CUDA_VERSION is defined (nnutils'
    kernels define their own double atomicAdd where it is below 8000)."""
    _write(
        tmp_path,
        {
            "k.cu": "#include <THC.h>\n#include <THCGeneral.h>\n"
            "#define THCTensor          TH_CONCAT_3(TH,CReal,Tensor)\n"  # PyTorch-Encoding's, 2017
            "#define THCTensor_(NAME)   TH_CONCAT_4(TH,CReal,Tensor_,NAME)\n"
            "#if !defined(CUDA_VERSION) || CUDA_VERSION < 8000\n"  # nnutils' utils.h (2018) tested it
            "__device__ void atomicAdd(double *address, double val) {}\n"
            "#endif\n"
            "__global__ void k(float *x) { x[threadIdx.x] = 1; }\n"
            "void run(THCState *state, THCudaTensor *t) {\n"
            "  k<<<1, 32, 0, THCState_getCurrentStream(state)>>>(THCudaTensor_data(state, t));\n}\n"
        },
    )
    inc = Path(ffi.include_dir())
    cmd = [ffi._nvcc(), "-c", "-arch=sm_90", "-Xcompiler", "-fPIC", f"-I{inc / 'TH'}", f"-I{inc / 'THC'}"]
    nvcc = subprocess.run(
        [*cmd, *_thc_include(), "k.cu", "-o", "k.o"], cwd=tmp_path, capture_output=True, text=True
    )
    assert nvcc.returncode == 0 and "redefined" not in nvcc.stdout + nvcc.stderr, nvcc.stdout + nvcc.stderr


# -- what create_extension refuses, and how a failed build reads ------------------------


def _write(dir: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (dir / name).parent.mkdir(parents=True, exist_ok=True)
        (dir / name).write_text(text)


def _extension(dir: Path, header: str, source: str, **kw):
    _write(dir, {"f.h": header, "f.c": source})
    return ffi.create_extension("f", headers="f.h", sources=["f.c"], relative_to=str(dir / "build.py"), **kw)


def test_openmp_sources_link_the_openmp_runtime(tmp_path, workdir):
    """XNOR-net's binop passed extra_compile_args=[..., "-fopenmp", ...] and
    no link flag: its OpenMP calls must not be left undefined."""
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *x, THFloatTensor *out);",
        "#include <TH/TH.h>\n#include <omp.h>\n"
        "int f(THFloatTensor *x, THFloatTensor *out) {\n"
        "  long i, n = THFloatTensor_nElement(x);\n"
        "  float *a = THFloatTensor_data(x), *o = THFloatTensor_data(out);\n"
        "#pragma omp parallel for\n"
        "  for (i = 0; i < n; i++) o[i] = 2 * a[i];\n"
        "  return omp_get_max_threads();\n}\n",
        extra_compile_args=["-std=c99", "-fopenmp"],
        verbose=False,
    )
    f = _load(ext.build(), "fixture_openmp")
    x = torch.randn(1000)
    out = torch.full_like(x, float("nan"))
    assert f.f(x, out) >= 1
    assert torch.equal(out, 2 * x)


def test_an_extra_object_compiled_with_openmp_links_the_openmp_runtime(tmp_path, workdir):
    """SparseConvNet's setup.py compiles init.cpp with `g++ -fopenmp` and
    passes only the object, with extra_compile_args=['-std=c99']: the link
    adds the OpenMP runtime, as torch's libgomp answered those calls in 2017."""
    _write(
        tmp_path,
        {
            "k.c": "#include <omp.h>\nint threads_seen(void) {\n  int n = 0;\n"
            "#pragma omp parallel reduction(+ : n)\n  n += 1;\n  return n;\n}\n"
        },
    )
    _run(["cc", "-c", "-fPIC", "-fopenmp", "k.c", "-o", "k.o"], tmp_path)
    ext = _extension(
        tmp_path,
        "int f(void);",
        "int threads_seen(void);\nint f(void) { return threads_seen(); }\n",
        extra_compile_args=["-std=c99"],
        verbose=False,
    )
    ext.extra_objects.append(str(tmp_path / "k.o"))
    assert _load(ext.build(), "fixture_openmp_object").f() >= 1


def test_an_extra_object_compiled_with_openmp_links_the_openmp_runtime_in_setuptools(tmp_path, workdir):
    """The same object in a setup.py's build (distutils_extension(); cffi's
    hook builds the same way): setuptools links once, and that link adds
    the OpenMP runtime too."""
    _write(
        tmp_path,
        {
            "k.c": "#include <omp.h>\nint threads_seen(void) {\n  int n = 0;\n"
            "#pragma omp parallel reduction(+ : n)\n  n += 1;\n  return n;\n}\n",
            "src/f.h": "int f(void);",
            "src/f.c": "int threads_seen(void);\nint f(void) { return threads_seen(); }\n",
            "build.py": "from kernforge_legacy.ffi import create_extension\n"
            "ffi = create_extension('_ext.f', headers=['src/f.h'], sources=['src/f.c'],\n"
            "                       extra_objects=['k.o'], relative_to=__file__, verbose=False)\n",
            "setup.py": "from setuptools import setup\nfrom build import ffi\n"
            "setup(name='f', version='0.1', packages=['_ext', '_ext.f'],\n"
            "      ext_modules=[ffi.distutils_extension()])\n",
        },
    )
    _run(["cc", "-c", "-fPIC", "-fopenmp", "k.c", "-o", "k.o"], tmp_path)
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], tmp_path)
    assert int(_run([sys.executable, "-c", "from _ext import f\nprint(f.f())"], tmp_path).split()[-1]) >= 1


def test_compiler_errors_surface_with_the_compilers_message(tmp_path, workdir):
    ext = _extension(
        tmp_path, "int f(THFloatTensor *x);", "#include <TH/TH.h>\nint f(THFloatTensor *x) { return y; }\n"
    )
    # gcc's words, then clang's
    undeclared = r"(.y. undeclared|use of undeclared identifier .y.)"
    with pytest.raises(ffi.BuildError, match=rf"(?s)building f failed:.*f\.c.*error: {undeclared}"):
        ext.build()


def test_missing_extra_objects_and_sources_are_named(tmp_path, workdir):
    """longcw/yolo2-pytorch's build.py links the .cu.o that its make.sh makes
    with nvcc; run alone, the build must say which file is missing."""
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *x);",
        "#include <TH/TH.h>\nint f(THFloatTensor *x) { return 1; }\n",
        extra_objects=["src/kernel.cu.o"],
    )
    with pytest.raises(
        ffi.BuildError,
        match=r"building f: not found: extra_objects \S*src/kernel\.cu\.o \(a 2017 make\.sh compiled",
    ):
        ext.build()
    (tmp_path / "f.c").unlink()
    with pytest.raises(ffi.BuildError, match=r"not found: sources \S*f\.c; extra_objects \S*kernel\.cu\.o"):
        ext.build()


def _archives_in_the_wrong_order(dir: Path) -> list[str]:
    """liba.a, then libb.a whose code calls liba.a's: one pass over them in
    that order leaves libb's call undefined."""
    _write(
        dir,
        {
            "a.c": "int helper_a(int x) { return x + 1; }\n",
            "b.c": "int helper_a(int x);\nint helper_b(int x) { return 2 * helper_a(x); }\n",
        },
    )
    for lib in ("a", "b"):
        subprocess.run(["cc", "-fPIC", "-c", f"{lib}.c", "-o", f"{lib}.o"], cwd=dir, check=True)
        subprocess.run(["ar", "rcs", f"lib{lib}.a", f"{lib}.o"], cwd=dir, check=True)
    return ["liba.a", "libb.a"]


def test_static_libraries_among_the_extra_objects_link_in_any_order(tmp_path, workdir):
    """Pointnet2_PyTorch's 2018 build_ffi.py adds glob('/usr/local/cuda/lib64/*.a')
    to its extra objects, in the file system's order; on a host where
    libculibos.a came before the library that calls it, the link failed
    on culibosLoadLibrary. The extra objects link as one group."""
    ext = _extension(
        tmp_path,
        "int f(int x);",
        "int helper_b(int x);\nint f(int x) { return helper_b(x); }\n",
        extra_objects=_archives_in_the_wrong_order(tmp_path),
        verbose=False,
    )
    assert _load(ext.build(), "fixture_archives").f(20) == 42


def test_a_shared_library_among_the_extra_objects_calls_th_through_the_runtime(tmp_path, workdir):
    """defusr's MYTH (2019): its build.sh makes lib/libMYTH_cu.so with
    `nvcc --shared`, code that calls THC and leaves those calls to be
    answered when the library loads, and its build.py links that library as
    an extra object, with relative_to a folder (`<script dir>/../`, so the
    paths and the module are relative to the folder above). The module
    loads the library by the path it was linked with, and the library's TH
    calls find the runtime."""
    project = tmp_path / "code" / "MYTH"
    _write(
        project,
        {
            "src/kernel.c": "#include <TH/TH.h>\n"
            "void count_gpu(THFloatTensor *x, THLongTensor *out) {\n"
            "  THLongTensor_fill(out, (long)THFloatTensor_nElement(x));\n}\n",
            "include/MYTH.h": "void count_gpu(THFloatTensor *x, THLongTensor *out);",
            "src/MYTH.c": '#include <TH/TH.h>\n#include "MYTH.h"\n',
        },
    )
    (project / "lib").mkdir()
    cc = ["cc", "-shared", "-fPIC", f"-I{ffi.include_dir()}"]
    _run([*cc, "-o", "lib/libMYTH_k.so", "src/kernel.c"], project)
    base = str(project) + "/../"
    ext = ffi.create_extension(
        "MYTH",
        headers=["MYTH/include/MYTH.h"],
        sources=["MYTH/src/MYTH.c"],
        include_dirs=[base + "MYTH/include/"],
        relative_to=base,
        extra_objects=[base + "MYTH/lib/libMYTH_k.so"],
        verbose=False,
    )
    assert ext.build() == project
    out = _run(
        [sys.executable, "-c", "import torch, MYTH\nout = torch.zeros(1, dtype=torch.long)\n"
         "MYTH.count_gpu(torch.ones(3, 4), out)\nprint(out.item())"],
        tmp_path / "code",
    )  # fmt: skip
    assert out.split()[-1] == "12"


def test_static_libraries_link_in_any_order_through_setuptools(tmp_path, workdir):
    """The same extra objects through ffi.distutils_extension() and setuptools."""
    project = tmp_path / "project"
    project.mkdir()
    archives = _archives_in_the_wrong_order(project)
    _write(
        project,
        {
            "f.h": "int f(int x);",
            "f.c": "int helper_b(int x);\nint f(int x) { return helper_b(x); }\n",
            "build.py": "from kernforge_legacy.ffi import create_extension\n"
            f"ffi = create_extension('_ext.f', headers='f.h', sources=['f.c'], extra_objects={archives!r},\n"
            "                       relative_to=__file__, verbose=False)\n",
            "setup.py": "from setuptools import setup\nfrom build import ffi\n"
            "setup(name='f_ext', version='0.1', packages=['_ext', '_ext.f'],\n"
            "      ext_modules=[ffi.distutils_extension()])\n",
        },
    )
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project)
    out = _run([sys.executable, "-c", "from _ext import f; print(f.f(20))"], project)
    assert out.strip().splitlines()[-1] == "42"


def test_unsupported_th_functions_fail_with_one_message_naming_each(tmp_path, workdir):
    """A build that calls TH functions kernforge-legacy lacks fails with a
    message naming each one and the sources that call it (TH/THC ones apart
    from the code's own missing functions), not the linker's text."""
    _write(
        tmp_path,
        {
            "g.c": "#include <TH/TH.h>\n"
            "void THFloatLapack_gels(THFloatTensor *, THFloatTensor *, long, float, float);\n"
            "int g(THFloatTensor *x) { THFloatLapack_gels(x, x, 4, 0.0f, 1.0f); return 1; }\n",
        },
    )
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *x);",
        "#include <TH/TH.h>\n"
        "void THFloatLapack_gels(THFloatTensor *, THFloatTensor *, long, float, float);\n"
        "void THMapAllocator_new(THFloatTensor *, THFloatTensor *, THFloatTensor *, int);\n"
        "int helper_of_mine(int);\n"
        "int f(THFloatTensor *x) {\n  THFloatLapack_gels(x, x, 4, 0.0f, 1.0f);\n"
        "  THMapAllocator_new(x, x, x, 0);\n  return helper_of_mine(1);\n}\n",
        verbose=False,
    )
    ext.sources.append(tmp_path / "g.c")
    with pytest.raises(ffi.BuildError) as info:
        ext.build()
    assert str(info.value) == (
        "building f failed: functions the code calls are defined nowhere\n"
        "TH/THC functions kernforge-legacy does not provide (see its porting guide):\n"
        "  THFloatLapack_gels  (called in f.c, g.c)\n"
        "  THMapAllocator_new  (called in f.c)\n"
        "other functions, in no source or library of the build:\n"
        "  helper_of_mine  (called in f.c)"
    )


def _link_error_with_object(tmp_path, kernel_c: str) -> tuple[str, Path]:
    """The BuildError message of a CPU extension whose f calls k_launcher,
    defined in k.cu.o: `kernel_c` compiled by cc, standing in for nvcc's."""
    _write(tmp_path, {"k.c": kernel_c})
    _run(["cc", "-c", "-fPIC", "k.c", "-o", "k.cu.o"], tmp_path)
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *x);",
        "#include <TH/TH.h>\nvoid k_launcher(float *p);\n"
        "int f(THFloatTensor *x) { k_launcher(THFloatTensor_data(x)); return 1; }\n",
        verbose=False,
    )
    ext.extra_objects.append(str(tmp_path / "k.cu.o"))
    with pytest.raises(ffi.BuildError) as info:
        ext.build()
    return str(info.value), tmp_path / "k.cu.o"


def _cuda_in_a_cpu_build(obj: Path) -> str:
    return (
        f"{obj}: CUDA code, and a build without with_cuda=True does not link CUDA's runtime: build with "
        "create_extension(..., with_cuda=True) where CUDA is, or leave CUDA's objects out of a CPU build"
    )


def test_an_object_from_an_nvcc_before_9_2_fails_with_a_message_saying_compile_it_again(tmp_path, workdir):
    """2017 repositories shipped the .cu.o their make.sh had built (PartNet's
    pytorch_ops): its kernel launches call cudaConfigureCall, cudaSetupArgument
    and cudaLaunch, which today's CUDA runtime lacks. The message names the
    object and says to compile the .cu files again."""
    message, obj = _link_error_with_object(
        tmp_path,
        "int cudaConfigureCall(int, int, unsigned long, void *);\n"
        "int cudaSetupArgument(const void *, unsigned long, unsigned long);\n"
        "int cudaLaunch(const void *);\n"
        "void k_launcher(float *p) {\n  if (cudaConfigureCall(1, 32, 0, 0) == 0) {\n"
        "    cudaSetupArgument(&p, sizeof p, 0);\n    cudaLaunch((const void *)k_launcher);\n  }\n}\n",
    )
    assert message == (
        "building f failed: functions the code calls are defined nowhere\n"
        "other functions, in no source or library of the build:\n"
        f"  cudaConfigureCall  (called in {obj})\n"
        f"  cudaLaunch  (called in {obj})\n"
        f"  cudaSetupArgument  (called in {obj})\n"
        f"{_cuda_in_a_cpu_build(obj)}\n"
        "cudaConfigureCall, cudaLaunch, cudaSetupArgument: kernel launches as an nvcc before CUDA 9.2 "
        "compiled them, which this CUDA's runtime no longer has; compile the .cu files again with this "
        f"CUDA's nvcc ({obj} came from an older one)"
    )


def test_c_that_gcc_14_refuses_builds_with_warnings_as_in_2017(tmp_path, workdir, monkeypatch):
    """gcc 14 made a pointer of another type an error in C (DenseFusion's C
    calls THCudaLongTensor_size on a THCudaTensor*; medicaldetectiontoolkit's
    THLongTensor_isContiguous on a THFloatTensor*), where 2017's compilers
    warned. A build asks the compiler once which flag gives the warnings
    back. Here a stand-in for gcc 14: gcc with those errors on unless
    -fpermissive is given."""
    gcc14 = tmp_path / "gcc14"
    gcc14.write_text(
        "#!/bin/bash\nargs=()\n"
        "strict=(-Werror=incompatible-pointer-types -Werror=implicit-function-declaration\n"
        "        -Werror=int-conversion)\n"
        'for a in "$@"; do if [ "$a" = -fpermissive ]; then strict=(); else args+=("$a"); fi; done\n'
        'exec gcc "${strict[@]}" "${args[@]}"\n'
    )
    gcc14.chmod(0o755)
    monkeypatch.setenv("CC", str(gcc14))
    monkeypatch.setattr(ffi, "_c_flags_seen", {})
    source = "#include <TH/TH.h>\nint f(THFloatTensor *x) { return THLongTensor_isContiguous(x); }\n"
    _write(tmp_path, {"f.h": "int f(THFloatTensor *x);", "f.c": source})
    syntax = [str(gcc14), "-fsyntax-only", f"-I{ffi.include_dir()}", "f.c"]
    refused = subprocess.run(syntax, cwd=tmp_path, capture_output=True, text=True)
    assert refused.returncode != 0 and "incompatible-pointer-types" in refused.stderr
    assert ffi._c_as_in_2017() == ("-fpermissive",)
    ext = ffi.create_extension("f", headers="f.h", sources=["f.c"], relative_to=str(tmp_path / "build.py"))
    m = _load(ext.build(), "fixture_gcc14")
    assert m.f(torch.zeros(2, 3)) == 1 and m.f(torch.zeros(2, 3).t()) == 0


def test_inline_functions_that_c99_leaves_undefined_link_as_gnu89_gave_them(tmp_path, workdir):
    """A function defined `inline`, not `static`, has no out-of-line copy in
    C99, and a call the compiler leaves out of line (a recursive one) is an
    undefined reference; gcc before 5 (GNU89's rules) gave each such
    definition one. SmoothParticleNets' common_funcs.h has them, through a
    macro. The build gives the function one copy, in the first source that
    defines it (two here: no duplicate), and says so."""
    _write(
        tmp_path,
        {
            "util.h": "#define DEVICE_FUNC inline\n"
            "DEVICE_FUNC int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
            "inline int twice(int n) { return 2 * n; }\n",
            "f.h": "int fa(int n);\nint fb(int n);",
            "a.c": '#include "util.h"\nint fa(int n) { return fib(n); }\n',
            "b.c": '#include "util.h"\nint fb(int n) { return fib(n) + twice(n); }\n',
        },
    )
    ext = ffi.create_extension(
        "f", headers="f.h", sources=["a.c", "b.c"], relative_to=str(tmp_path / "build.py"), verbose=False
    )
    with pytest.warns(UserWarning) as seen:
        m = _load(ext.build(), "fixture_inline")
    assert [str(w.message) for w in seen] == [
        "f: fib: defined `inline` (not `static`) in a.c or a header it includes, and called out of line; "
        "C99 gives such a function no out-of-line copy (gcc before 5, by GNU89's rules, did), so the "
        "build adds one"
    ]
    assert (m.fa(20), m.fb(10)) == (6765, 75)
    # a function defined nowhere is still named, and the inline one is not
    _write(
        tmp_path,
        {"b.c": '#include "util.h"\nint nowhere(int);\nint fb(int n) { return fib(n) + nowhere(n); }\n'},
    )
    with pytest.raises(ffi.BuildError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ext.build()
    assert str(info.value) == (
        "building f failed: functions the code calls are defined nowhere\n"
        "other functions, in no source or library of the build:\n"
        "  nowhere  (called in b.c)"
    )


def test_inline_functions_that_c99_leaves_undefined_link_in_setuptools(tmp_path, workdir):
    """The same sources in a setup.py's build (distutils_extension(); cffi's
    hook builds the same way), which links once: the copies are found before
    it, by compiling each C source unoptimized (every call out of line), so
    `twice` gets one too (in b.c, the source that calls it). CFLAGS=-O0:
    setuptools' own compile leaves every call out of line too."""
    _write(
        tmp_path,
        {
            "src/util.h": "#define DEVICE_FUNC inline\n"
            "DEVICE_FUNC int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
            "inline int twice(int n) { return 2 * n; }\n",
            "src/f.h": "int fa(int n);\nint fb(int n);",
            "src/a.c": '#include "util.h"\nint fa(int n) { return fib(n); }\n',
            "src/b.c": '#include "util.h"\nint fb(int n) { return fib(n) + twice(n); }\n',
            "build.py": "from kernforge_legacy.ffi import create_extension\n"
            "ffi = create_extension('_ext.f', headers=['src/f.h'], sources=['src/a.c', 'src/b.c'],\n"
            "                       relative_to=__file__, verbose=False)\n",
            "setup.py": "from setuptools import setup\nfrom build import ffi\n"
            "setup(name='f', version='0.1', packages=['_ext', '_ext.f'],\n"
            "      ext_modules=[ffi.distutils_extension()])\n",
        },
    )
    out = _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], tmp_path, CFLAGS="-O0")
    for function, source in (("fib", "a.c"), ("twice", "b.c")):
        assert (
            f"_ext.f: {function}: defined `inline` (not `static`) in src/{source} or a header it includes, "
            "and called out of line; C99 gives such a function no out-of-line copy (gcc before 5, by GNU89's "
            "rules, did), so the build adds one"
        ) in out
    out = _run([sys.executable, "-c", "from _ext import f\nprint(f.fa(20), f.fb(10))"], tmp_path)
    assert out.split() == ["6765", "75"]


def test_c99_bool_in_a_header(tmp_path, workdir):
    """C99's `_Bool` as a parameter, a pointee and a return type (SparseConvNet's
    generated headers have `_Bool train`): the generated C++ source calls it
    as C++'s `bool`, the same type to the ABI."""
    ext = _extension(
        tmp_path,
        "_Bool above(THFloatTensor *x, float t, _Bool strict, _Bool *any);",
        "#include <TH/TH.h>\n"
        "_Bool above(THFloatTensor *x, float t, _Bool strict, _Bool *any) {\n"
        "  float *p = THFloatTensor_data(x);\n  _Bool all = 1;\n"
        "  for (long i = 0; i < THFloatTensor_nElement(x); i++) {\n"
        "    _Bool up = strict ? p[i] > t : p[i] >= t;\n    all = all && up;\n    *any = *any || up;\n  }\n"
        "  return all;\n}\n",
        verbose=False,
    )
    m = _load(ext.build(), "fixture_bool")
    x = torch.tensor([1.0, 2.0, 3.0])
    any_ = (ctypes.c_bool * 1)(False)
    assert m.above(x, 1.0, False, any_) is True and any_[0]
    any_[0] = False
    assert m.above(x, 1.0, True, any_) is False and any_[0]
    any_[0] = False
    assert m.above(x, 5.0, True, any_) is False and not any_[0]


def test_thtensor_outside_a_generic_file_is_the_float_tensor(tmp_path, workdir):
    """torch 0.4.1's name: torch's own ffi test of that time took and returned
    `THTensor *` outside any generic file and called THFloatTensor_ functions
    on it. It is THFloatTensor (THStorage THFloatStorage), without a warning
    (-Werror), in the header and the sources; a double tensor is refused."""
    ext = _extension(
        tmp_path,
        "void scale_add(THTensor *t, int a, float b);\nTHTensor *filled(int n);\nfloat first(THStorage *s);",
        "#include <TH/TH.h>\n"
        "void scale_add(THTensor *t, int a, float b) {\n"
        "  THFloatTensor_mul(t, t, a);\n  THFloatTensor_add(t, t, b);\n}\n"
        "THTensor *filled(int n) {\n"
        "  THTensor *t = THFloatTensor_newWithSize2d(n, n);\n  THFloatTensor_fill(t, n);\n  return t;\n}\n"
        "float first(THStorage *s) { return THFloatStorage_data(s)[0]; }\n",
        extra_compile_args=["-Werror"],
        verbose=False,
    )
    m = _load(ext.build(), "fixture_thtensor")
    t = torch.randn(2, 3)
    expected = t * 2 + 1.5
    m.scale_add(t, 2, 1.5)
    assert torch.equal(t, expected)
    assert torch.equal(m.filled(4), torch.full((4, 4), 4.0))
    assert m.first(t.untyped_storage()) == t[0, 0].item()
    with pytest.raises(
        TypeError, match=r"scale_add: argument 1 \(t, THFloatTensor\*\): expected a cpu tensor of float32"
    ):
        m.scale_add(t.double(), 2, 1.5)


@pytest.mark.cuda
def test_thctensor_outside_a_generic_file_is_the_cuda_float_tensor(tmp_path, workdir):
    """THC's side of torch 0.4.1's name: `THCTensor *` outside a generic file
    is THCudaTensor, in the header and the sources (-Werror)."""
    ext = _extension(
        tmp_path,
        "void scale_add(THCTensor *t, int a, float b);",
        "#include <THC/THC.h>\nextern THCState *state;\n"
        "void scale_add(THCTensor *t, int a, float b) {\n"
        "  THCudaTensor_mul(state, t, t, a);\n  THCudaTensor_add(state, t, t, b);\n}\n",
        with_cuda=True,
        extra_compile_args=["-Werror"],
        verbose=False,
    )
    m = _load(ext.build(), "fixture_thctensor")
    t = torch.randn(2, 3, device="cuda")
    expected = t * 2 + 1.5
    m.scale_add(t, 2, 1.5)
    assert torch.equal(t, expected)
    with pytest.raises(TypeError, match=r"expected a cuda tensor of float32, got a cpu tensor of float32"):
        m.scale_add(t.cpu(), 2, 1.5)


# C++ in torch 0.4.1's words, where every tensor type was one C type: one
# type's shape queries on tensors of other types.
ANY_TENSOR_CPP = """
#include <TH/TH.h>
extern "C" int shapes(THDoubleTensor *d, THFloatTensor *f, THLongTensor *out) {
  THLongTensor_resize1d(out, 8);
  int64_t *o = THLongTensor_data(out);
  o[0] = THFloatTensor_size(d, 1);
  o[1] = THFloatTensor_stride(d, 0);
  o[2] = THLongTensor_nElement(d);
  o[3] = THIntTensor_nDimension(f);
  o[4] = THByteTensor_isContiguous(d);
  o[5] = THFloatTensor_isSameSizeAs(f, d);
  o[6] = THShortTensor_storageOffset(d);
  o[7] = THCharTensor_sizeDesc(d).str[1];
  return 1;
}
"""


def test_cpp_calls_one_types_shape_queries_on_another_as_torch_0_4_1_let_it(tmp_path):
    """torch 0.4.1 made every TH and THC tensor type one C type, and C++
    written for it called THFloatTensor_size on a THCudaTensor
    (warp-transducer's binding, 2018); C++ refused the call here. The
    queries that read no element take a tensor of any type."""
    _write(
        tmp_path,
        {
            "f.h": "int shapes(THDoubleTensor *d, THFloatTensor *f, THLongTensor *out);",
            "f.cpp": ANY_TENSOR_CPP,
        },
    )
    ext = ffi.create_extension(
        "any_tensor", headers="f.h", sources=["f.cpp"], relative_to=str(tmp_path / "build.py"), verbose=False
    )
    module = _load(ext.build(), "fixture_any_tensor")
    g = torch.Generator().manual_seed(4)
    d = torch.randn(4, 6, 3, dtype=torch.float64, generator=g)[1:, :, 1]  # (3, 6), strides (18, 3), offset 19
    f = torch.randn(6, 3, generator=g).t()
    out = torch.full((2,), -7, dtype=torch.int64)
    assert module.shapes(d, f, out) == 1
    assert out.tolist() == [6, 18, 18, 2, 0, 1, 19, ord("3")]


def test_cpp_includes_th_h_inside_its_own_extern_c_block(tmp_path):
    """C++ of that time included C headers inside `extern "C" { }`; the C++
    parts of TH.h (the shape queries across types) keep C++ linkage there."""
    source = 'extern "C" {\n#include <TH/TH.h>\n}\n' + ANY_TENSOR_CPP.replace("#include <TH/TH.h>", "")
    _write(
        tmp_path,
        {"f.h": "int shapes(THDoubleTensor *d, THFloatTensor *f, THLongTensor *out);", "f.cpp": source},
    )
    ext = ffi.create_extension(
        "any_tensor_c",
        headers="f.h",
        sources=["f.cpp"],
        relative_to=str(tmp_path / "build.py"),
        verbose=False,
    )
    module = _load(ext.build(), "fixture_any_tensor_c")
    out = torch.full((2,), -7, dtype=torch.int64)
    assert module.shapes(torch.randn(2, 3, dtype=torch.float64), torch.randn(3, 2), out) == 1
    assert out.tolist() == [3, 3, 6, 2, 1, 0, 0, ord("2")]


@pytest.mark.skipif(ffi._nvcc() is None, reason="needs nvcc (no GPU)")
def test_a_kernel_file_includes_thc_h_inside_its_own_extern_c_block(tmp_path):
    """Compiles only, for sm_90: THC.h inside `extern "C" { }` in a .cu file,
    then thrust. CUDA's headers, which THC.h includes, declare templates and
    classes, which C linkage refuses."""
    _write(
        tmp_path,
        {
            "k.cu": 'extern "C" {\n#include <THC/THC.h>\n}\n#include <thrust/sort.h>\n'
            "__global__ void Votes(float *x) { x[threadIdx.x] = __any(x[threadIdx.x] > 0.f); }\n"
            "long size_of(THCState *state, THCudaTensor *t, THFloatTensor *f) {\n"
            "  return THFloatTensor_size(t, 0) + THCudaTensor_size(state, f, 0);\n}\n"
        },
    )
    inc = Path(ffi.include_dir())
    cmd = [ffi._nvcc(), "-ptx", "-arch=sm_90", "-std=c++17", "-o", "k.ptx", f"-I{inc}"]
    cmd += [f"-I{_stub_thc_libraries(tmp_path / 'stubs')}", "k.cu"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "vote.sync.any" in (tmp_path / "k.ptx").read_text()


@pytest.mark.cuda
@pytest.mark.sanitize
def test_cpp_reads_a_cuda_tensors_sizes_through_th_queries_as_warp_transducer_did(tmp_path):
    """warp-transducer's binding (2018): `THFloatTensor_size(trans_acts, 1)`
    on a THCudaTensor, and a THC query on a CPU tensor."""
    _write(
        tmp_path,
        {
            "f.h": "int shapes_cuda(THCudaTensor *acts, THIntTensor *lengths, THLongTensor *out);",
            "f.cpp": "#include <THC/THC.h>\nextern THCState *state;\n"
            'extern "C" int shapes_cuda(THCudaTensor *acts, THIntTensor *lengths, THLongTensor *out) {\n'
            "  THLongTensor_resize1d(out, 4);\n  int64_t *o = THLongTensor_data(out);\n"
            "  o[0] = THFloatTensor_size(acts, 1);\n  o[1] = THFloatTensor_size(acts, 2);\n"
            "  o[2] = THCudaTensor_nElement(state, lengths);\n"
            "  o[3] = THCudaTensor_isSameSizeAs(state, acts, lengths);\n  return 1;\n}\n",
        },
    )
    ext = ffi.create_extension(
        "any_tensor_cuda", headers="f.h", sources=["f.cpp"], relative_to=str(tmp_path / "build.py"),
        with_cuda=True, verbose=False,
    )  # fmt: skip
    module = _load(ext.build(), "fixture_any_tensor_cuda")
    out = torch.full((2,), -7, dtype=torch.int64)
    acts = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(5)).cuda()
    assert module.shapes_cuda(acts, torch.arange(9, dtype=torch.int32), out) == 1
    assert out.tolist() == [5, 7, 9, 0]


def test_enums_opaque_pointers_and_wide_strings(tmp_path, workdir):
    """pytorch-ctc's header (2017): a `typedef enum` parameter, objects of
    the C code's own returned as `void *` and passed back (its decoders and
    scorers), labels as `const wchar_t *` from a Python str."""
    ext = _extension(
        tmp_path,
        "typedef enum { SUM, COUNT } Kind;\nenum Scale { ONE = 1, TEN = 10 };\n"
        "void *make_counter(const wchar_t *labels, int n, Kind kind);\n"
        "int count(void *counter, const wchar_t *text, enum Scale scale);\n"
        "void free_counter(void *counter);\nvoid *nothing(void);\nKind kind_of(void *counter);",
        "#include <stdlib.h>\n#include <wchar.h>\n"
        "typedef enum { SUM, COUNT } Kind;\nenum Scale { ONE = 1, TEN = 10 };\n"
        "struct counter { wchar_t labels[16]; Kind kind; };\n"
        "void *make_counter(const wchar_t *labels, int n, Kind kind) {\n"
        "  struct counter *c = calloc(1, sizeof *c);\n  wcsncpy(c->labels, labels, 15);\n"
        "  c->kind = kind;\n  return n == (int)wcslen(labels) ? c : NULL;\n}\n"
        "int count(void *counter, const wchar_t *text, enum Scale scale) {\n"
        "  struct counter *c = counter;\n  int total = 0;\n"
        "  for (; *text; text++) {\n    wchar_t *at = wcschr(c->labels, *text);\n"
        "    if (at) total += c->kind == SUM ? (int)(at - c->labels) : 1;\n  }\n"
        "  return total * scale;\n}\n"
        "void free_counter(void *counter) { free(counter); }\n"
        "void *nothing(void) { return NULL; }\n"
        "Kind kind_of(void *counter) { return ((struct counter *)counter)->kind; }\n",
        verbose=False,
    )
    m = _load(ext.build(), "fixture_opaque")
    labels = "_aé☃"  # beyond Latin-1: wchar_t's 4 bytes
    summing = m.make_counter(labels, len(labels), 0)
    assert isinstance(summing, ffi.Pointer) and summing and summing != None  # noqa: E711
    counting = m.make_counter(labels, len(labels), 1)
    assert m.count(summing, "a☃é", 1) == 1 + 3 + 2
    assert m.count(counting, "a☃é", 10) == 30
    assert m.kind_of(summing) == 0 and m.kind_of(counting) == 1
    missing = m.make_counter(labels, 2, 0)  # NULL: the C code refused
    assert not missing and missing == None and m.nothing() == None  # noqa: E711
    assert summing != counting and summing == ffi.Pointer(summing.address)
    for p in (summing, counting):
        m.free_counter(p)
    with pytest.raises(ffi.ArgumentTypeError, match=r"count: argument 1 \(counter, void\*\)"):
        m.count(5, "a", 1)


def test_the_headers_integer_constants_are_the_modules_as_cffis_were(tmp_path, workdir):
    """cffi's module gave Python a header's enum values and integer
    #defines beside its functions (torch.utils.ffi's wrapper exported every
    name of `lib`): `my_lib.CTC_KENLM`, `my_lib.lib.MAX_LABELS`."""
    ext = _extension(
        tmp_path,
        "#ifndef F_H\n#define F_H\n#define MAX_LABELS 28u\n#define FLAGS (1 << 3 | 0x1)\n"
        '#define NAME "f"\n#define HALF (-7 / 2)\n#define OCTAL 010\n'
        "typedef enum { CTC, CTC_KENLM = 5, BEAM } DecodeType;\n"
        "enum Scale { ONE = 1, TEN = ONE * 10, ELEVEN };\nint pick(DecodeType t);\n#endif\n",
        "int pick(int t) { return 2 * t; }\n",
        verbose=False,
    )
    m = _load(ext.build(), "fixture_constants")
    want = {"MAX_LABELS": 28, "FLAGS": 9, "HALF": -3, "OCTAL": 8, "CTC": 0, "CTC_KENLM": 5, "BEAM": 6,
            "ONE": 1, "TEN": 10, "ELEVEN": 11}  # fmt: skip
    assert {n: getattr(m, n) for n in want} == want
    assert {n: getattr(m.lib, n) for n in want} == want
    assert set(want) < set(m.__all__) and not hasattr(m, "NAME") and not hasattr(m, "F_H")
    assert m.pick(m.BEAM) == 12


def test_a_cuda_object_in_a_cpu_build_fails_with_a_message_saying_with_cuda(tmp_path, workdir):
    """medicaldetectiontoolkit's nms build.py links its kernel object also
    when torch has no CUDA (with_cuda=False): the message says that object
    is CUDA code, which a CPU build cannot link."""
    message, obj = _link_error_with_object(
        tmp_path,
        "int cudaLaunchKernel(const void *, int, int, void **, unsigned long, void *);\n"
        "void k_launcher(float *p) {\n  void *args[] = {&p};\n"
        "  cudaLaunchKernel((const void *)k_launcher, 1, 32, args, 0, 0);\n}\n",
    )
    assert message == (
        "building f failed: functions the code calls are defined nowhere\n"
        "other functions, in no source or library of the build:\n"
        f"  cudaLaunchKernel  (called in {obj})\n"
        f"{_cuda_in_a_cpu_build(obj)}"
    )


def test_a_header_function_with_cpp_linkage_fails_with_a_message_saying_extern_c(tmp_path, workdir):
    """The header's functions have C linkage, as under cffi, whose wrapper
    was C even with language='c++': a .cpp source that defines one without
    extern "C" leaves it undefined, and the message says so."""
    _write(tmp_path, {"f.h": "int f(int n);", "f.cpp": "int f(int n) { return n; }\n"})
    ext = ffi.create_extension(
        "f", headers="f.h", sources=["f.cpp"], relative_to=str(tmp_path / "build.py"), verbose=False,
        language="c++",
    )  # fmt: skip
    with pytest.raises(ffi.BuildError) as info:
        ext.build()
    assert str(info.value) == (
        "building f failed: functions the code calls are defined nowhere\n"
        "functions of the headers that no source defines with C linkage (as under "
        'torch.utils.ffi, a C++ source defines them extern "C"):\n'
        "  f"
    )


def test_cc_a_cxx_compiler_builds_cxx_in_c_sources(tmp_path, workdir, monkeypatch):
    """`CC=g++ python build.py`, as 2017 READMEs had it for .c sources that
    include C++ (a CUDA kernel's templates): the .c sources compile as C++
    and the header's functions have C++ linkage, as cffi's wrapper had when
    CC compiled it too. A generic file (THGenerateFloatTypes.h) compiles the
    same way."""
    monkeypatch.setenv("CC", "g++")
    _write(
        tmp_path,
        {
            "twice.h": "template <typename T> T twice(T x) { return 2 * x; }\n",
            "generic/fill.c": '#ifndef TH_GENERIC_FILE\n#define TH_GENERIC_FILE "generic/fill.c"\n#else\n'
            "void TH_CONCAT_2(fill_, Real)(THTensor *t) { THTensor_(fill)(t, twice<real>(3)); }\n#endif\n",
        },
    )
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *x, THDoubleTensor *y);",
        '#include <TH/TH.h>\n#include "twice.h"\n'
        '#include "generic/fill.c"\n#include "THGenerateFloatTypes.h"\n'
        "int f(THFloatTensor *x, THDoubleTensor *y) { fill_Float(x); fill_Double(y); return twice(21); }\n",
        verbose=False,
    )
    module = _load(ext.build(), "fixture_cc_cxx")
    x, y = torch.full((3,), float("nan")), torch.full((2,), float("nan"), dtype=torch.float64)
    assert module.f(x, y) == 42
    assert x.tolist() == [6.0] * 3 and y.tolist() == [6.0] * 2


def test_a_function_compiled_as_cxx_that_flows_off_its_end_returns(tmp_path, workdir, monkeypatch):
    """DepthAwareCNN's depthavgpooling_forward_cuda (2018, built with
    `CC=g++`) ends without a return. gcc 8 and later compile such an end of
    a C++ function as unreachable, and the call ran on into the code after
    it; gcc 5 returned, and so does the build now."""
    monkeypatch.setenv("CC", "g++")
    _write(
        tmp_path,
        {
            "f.h": "int f(THFloatTensor *x, int n);\nint after(THFloatTensor *x);\nint g(THFloatTensor *x);",
            "f.c": "#include <TH/TH.h>\n"
            "int f(THFloatTensor *x, int n) {\n  THFloatTensor_fill(x, n);\n}\n"
            "int after(THFloatTensor *x) {\n  THFloatTensor_fill(x, -1);\n  return 99;\n}\n",
            "g.cpp": "#include <TH/TH.h>\nint g(THFloatTensor *x) {\n  THFloatTensor_fill(x, 5);\n}\n",
        },
    )
    ext = ffi.create_extension(
        "f", headers="f.h", sources=["f.c", "g.cpp"], relative_to=str(tmp_path / "build.py"), verbose=False
    )
    module = _load(ext.build(), "fixture_flows_off")
    x = torch.full((4,), float("nan"))
    module.f(x, 3)  # what it returns is undefined, as in 2017
    assert x.tolist() == [3.0] * 4
    module.g(x)  # a .cpp source: C++ whatever CC is
    assert x.tolist() == [5.0] * 4


def test_cc_a_cxx_compiler_and_an_extern_c_definition_fail_with_a_message(tmp_path, workdir, monkeypatch):
    monkeypatch.setenv("CC", "g++")
    ext = _extension(tmp_path, "int f(int n);", 'extern "C" int f(int n) { return n; }\n', verbose=False)
    with pytest.raises(
        ffi.BuildError, match=r"(?s)no source defines with C\+\+ linkage \(CC=g\+\+ compiles.*\n  f$"
    ):
        ext.build()


def test_resizing_the_data_of_a_tensor_warns_that_the_tensor_keeps_its_size(tmp_path, workdir):
    """FlowNet2's correlation backward (2018) made `grad = Variable(x.new())`
    and passed `grad.data` for the C code to resize. `v.data` was then v's
    own tensor; today it is a second tensor over v's storage, so v stays
    empty and autograd refuses the gradient. The call warns, naming the
    argument, and says to pass v itself, which works."""
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *x, THFloatTensor *out);",
        "#include <TH/TH.h>\n"
        "int f(THFloatTensor *x, THFloatTensor *out) {\n"
        "  THFloatTensor_resizeAs(out, x);\n  THFloatTensor_copy(out, x);\n  return 1;\n}\n",
        verbose=False,
    )
    f = _load(ext.build(), "fixture_resize_data")
    x = random((2, 3), torch.float32, "cpu", torch.Generator().manual_seed(2))
    v = torch.empty(0)
    with pytest.warns(
        UserWarning,
        match=r"^f: argument 2 \(out\) was resized from \[0\] to \[2, 3\], and another tensor over the "
        r"same storage keeps its old size\. If you passed v\.data, pass v itself",
    ):
        f.f(x, v.data)
    assert v.shape == (0,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.f(x, v)  # the tensor itself: resized, no warning
        out = torch.empty(0)
        f.f(x, out=out)  # by keyword too
        f.f(x, out)  # a resize to the same shape
    assert torch.equal(v, x) and torch.equal(out, x)


@pytest.mark.parametrize("op", ["cmul", "exp", "clamp", "div"])
def test_fields_follow_the_resize_of_a_result(tmp_path, workdir, op):
    """A math function resizes its result r (an empty tensor here); r->size,
    r->stride and r->nDimension, which 2017 code read, then say the new
    shape."""
    calls = {
        "cmul": "THFloatTensor_cmul(r, a, a);",
        "exp": "THFloatTensor_exp(r, a);",
        "clamp": "THFloatTensor_clamp(r, a, -1, 1);",
        "div": "THIntTensor *n = THIntTensor_new(), *q = THIntTensor_new();\n"
        "  THIntTensor_resize2d(n, 3, 4); THIntTensor_fill(n, 7); THIntTensor_div(q, n, 2);\n"
        "  THFloatTensor_resize2d(r, 3, 4); THFloatTensor_fill(r, (float)THIntTensor_get2d(q, 2, 3));\n"
        "  code = q->nDimension * 100 + (int)(q->size[0] * 10 + q->size[1]) * 1000 + (int)q->stride[0];\n"
        "  THIntTensor_free(n); THIntTensor_free(q);",
    }
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *r, THFloatTensor *a);",
        "#include <TH/TH.h>\n"
        "int f(THFloatTensor *r, THFloatTensor *a) {\n"
        f"  int code = 0;\n  {calls[op]}\n"
        "  return code ? code : r->nDimension * 100 + (int)(r->size[0] * 10 + r->size[1]) * 1000"
        " + (int)r->stride[0];\n}\n",
        verbose=False,
    )
    module = _load(ext.build(), f"fixture_fields_{op}")
    r, a = torch.empty(0), torch.randn(3, 4)
    assert module.f(r, a) == 2 * 100 + 34 * 1000 + 4  # 2-D, 3 x 4, row stride 4
    assert r.shape == (3, 4)
    if op == "div":
        assert torch.equal(r, torch.full((3, 4), 3.0))


def test_an_empty_tensor_has_no_dimensions_as_in_th(tmp_path, workdir):
    """TH counted a tensor's sizes up to the first zero, so the empty
    torch.FloatTensor() that 2017 Python passed for an absent bias had
    nDimension 0, and C code tested `bias->nDimension` (the XNOR-Net ffi
    extension's binary convolution does); TH_TENSOR_APPLY visits nothing."""
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *t);",
        "#include <TH/TH.h>\n#include <TH/THTensorApply.h>\n"
        "int f(THFloatTensor *t) {\n"
        "  int visits = 0;\n"
        "  TH_TENSOR_APPLY(float, t, visits++;);\n"
        "  return t->nDimension * 10000 + THFloatTensor_nDimension(t) * 1000 + visits;\n}\n",
        verbose=False,
    )
    module = _load(ext.build(), "fixture_empty_dims")
    assert module.f(torch.FloatTensor()) == 0
    assert module.f(torch.empty(3, 0, 4)) == 1 * 10000 + 1 * 1000 + 0  # sizes before the zero
    assert module.f(torch.ones(3, 4)) == 2 * 10000 + 2 * 1000 + 12
    assert module.f(torch.ones(5)[::2]) == 1 * 10000 + 1 * 1000 + 3


def test_headers_at_their_old_paths(tmp_path, workdir):
    """2017 code included TH's headers with and without their folder, and by
    their own names; each resolves to what kernforge-legacy provides."""
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *x);",
        '#include "TH.h"\n#include <TH/TH.h>\n#include "THTensor.h"\n#include <TH/THGeneral.h>\n'
        '#include "THStorage.h"\nint f(THFloatTensor *x) { return (int)THFloatTensor_nElement(x); }\n',
        verbose=False,
    )
    module = _load(ext.build(), "fixture_headers")
    assert module.f(torch.ones(3, 4)) == 12


@pytest.mark.parametrize(
    "header, message",
    [
        (
            "int f(THCudaTensor *x);",
            r"f takes a THCudaTensor \*, which needs create_extension\(..., with_cuda=True\)",
        ),
        (
            "void THNN_(Abs_updateOutput)(int n);",
            r"cannot read 'void THNN_\(Abs_updateOutput\)\(int n\)' as a function",
        ),
    ],
)
def test_unsupported_prototypes_are_refused_by_name(tmp_path, header, message):
    with pytest.raises(ValueError, match=message):
        _extension(tmp_path, header, "")


def test_a_prototype_python_cannot_call_leaves_the_rest_built(tmp_path, workdir):
    """cffi wrapped every prototype of the header, and 2017 headers declared
    helpers among the exported functions that Python cannot call (a pointer
    to a pointer, a char * returned): the extension builds, with a warning,
    and only calling such a function raises. A helper over an array of
    numbers (EmbraceLife's my_lib.h: THSize_isSameSizeAs over int64_t
    arrays) takes one from ctypes or cffi."""
    header = (
        "int f(THFloatTensor *x);\n"
        "int sum_of(const int64_t *values, int64_t n);\n"
        "int g(THFloatStorage **s);\n"
        "char *make(int n);\n"
    )
    source = (
        "#include <TH/TH.h>\n"
        "int f(THFloatTensor *x) { return (int)THFloatTensor_nElement(x); }\n"
        "int sum_of(const int64_t *values, int64_t n) {\n"
        "  int64_t s = 0;\n  while (n--) s += values[n];\n  return (int)s;\n}\n"
        "int g(THFloatStorage **s) { return (int)THFloatStorage_size(*s); }\n"
        "char *make(int n) { return NULL; }\n"
    )
    with pytest.warns(UserWarning) as caught:
        ext = _extension(tmp_path, header, source, verbose=False)
    reasons = [str(w.message) for w in caught]
    assert not any("sum_of" in r for r in reasons)
    assert any("parameter 1 of g ('THFloatStorage **s') cannot be passed" in r for r in reasons)
    assert any("make returns 'char *'" in r for r in reasons)
    module = _load(ext.build(), "fixture_unwrapped")
    assert module.f(torch.ones(2, 5)) == 10
    assert module.sum_of((ctypes.c_int64 * 4)(1, 2, 3, 4), 4) == 10
    for name, what in (("g", "parameter 1 of g"), ("make", "make returns")):
        with pytest.raises(TypeError, match=rf"{what}.*built the extension without a Python function for it"):
            getattr(module, name)(None)
    assert sorted(module.__all__) == ["f", "g", "make", "sum_of"]


_POINTERS_H = "int bump(int *n, float *out, const double *scale, void *raw, long count);"
_POINTERS_C = (
    "#include <TH/TH.h>\n"
    "int bump(int *n, float *out, const double *scale, void *raw, long count) {\n"
    "  if (n == NULL) return -1;\n  *n += 1;\n"
    "  for (long i = 0; i < count; i++) out[i] = (float)(i * *scale);\n"
    "  if (raw) ((unsigned char *)raw)[0] = 7;\n  return *n;\n}\n"
)


def test_pointers_to_numbers_take_ctypes_memory(tmp_path, workdir):
    """A parameter that points to a C number (stn.pytorch's `int *device`, an
    output array `float *out`) takes the memory of a ctypes number, array or
    pointer of that kind and size (any, for void *), or None for NULL; the C
    code's writes land there. Anything else is an ArgumentTypeError naming
    the argument."""
    m = _load(_extension(tmp_path, _POINTERS_H, _POINTERS_C, verbose=False).build(), "fixture_pointers")
    n, out, scale = ctypes.c_int(41), (ctypes.c_float * 3)(), ctypes.c_double(2.5)
    raw = (ctypes.c_ubyte * 1)()
    assert m.bump(n, out, scale, raw, 3) == 42
    assert n.value == 42 and list(out) == [0.0, 2.5, 5.0] and raw[0] == 7
    assert m.bump(ctypes.pointer(n), out, ctypes.pointer(scale), None, 0) == 43 and n.value == 43
    assert m.bump(None, out, scale, raw, 3) == -1
    for bad, got in ((ctypes.c_long(1), "c_long"), (5, "int"), (torch.zeros(1, dtype=torch.int32), "Tensor")):
        with pytest.raises(
            ffi.ArgumentTypeError,
            match=rf"^bump: argument 1 \(n, int\*\): expected a pointer to int \(cffi's ffi.new\('int \*'\), "
            rf"a ctypes int or an array of them\) or None for NULL, got {got}$",
        ):
            m.bump(bad, out, scale, raw, 3)
    with pytest.raises(ffi.ArgumentTypeError, match=r"argument 2 \(out, float\*\): .* got c_double_Array_3"):
        m.bump(n, (ctypes.c_double * 3)(), scale, raw, 3)


def test_pointers_to_numbers_take_cffi_memory_as_2017_code_passed_it(tmp_path, workdir):
    """stn.pytorch (2017) passes `ffi.new("int *")` for its CUDA functions'
    `int *device`: cffi's pointers and arrays of the parameter's kind and
    size are taken, others refused."""
    cffi = pytest.importorskip("cffi")  # the tests' requirements install it
    ffi_ = cffi.FFI()
    m = _load(_extension(tmp_path, _POINTERS_H, _POINTERS_C, verbose=False).build(), "fixture_pointers_cffi")
    n, out, scale = ffi_.new("int *", 41), ffi_.new("float[3]"), ffi_.new("double *", 2.5)
    raw = ffi_.new("char[1]")
    assert m.bump(n, out, scale, raw, 3) == 42
    assert n[0] == 42 and list(out) == [0.0, 2.5, 5.0] and raw[0] == b"\x07"
    with pytest.raises(ffi.ArgumentTypeError, match=r"argument 1 \(n, int\*\): .* got cffi long \*$"):
        m.bump(ffi_.new("long *"), out, scale, raw, 3)


def test_pointers_to_pointers_take_memory_holding_pointers(tmp_path, workdir):
    """SparseConvNet (2017) keeps its metadata behind `void **m`, passed as
    cffi's `ffi.new("void *[1]")`: a pointer to a pointer takes cffi's or
    ctypes' memory that holds pointers (an array of them, a c_void_p, a
    pointer to one), and the C code's writes land there."""
    cffi = pytest.importorskip("cffi")  # the tests' requirements install it
    ffi_ = cffi.FFI()
    m = _load(
        _extension(
            tmp_path,
            "long read_ptr(void **ptr);\nvoid write_ptr(long p, void **ptr);\n"
            "int scale_rows(float **rows, int n);\nvoid release(void **ptr);",
            "#include <stdio.h>\n"
            'void release(void **ptr) { printf("released %ld\\n", (long)ptr[0]); fflush(stdout); }\n'
            "long read_ptr(void **ptr) { return ptr ? (long)ptr[0] : -1; }\n"
            "void write_ptr(long p, void **ptr) { ptr[0] = (void *)p; }\n"
            "int scale_rows(float **rows, int n) {\n"
            "  for (int i = 0; i < n; i++) rows[i][0] *= 2;\n  return n;\n}\n",
            verbose=False,
        ).build(),
        "fixture_pointer_pointers",
    )
    handle = ffi_.new("void *[1]")
    m.write_ptr(123456, handle)
    assert m.read_ptr(handle) == 123456 and int(ffi_.cast("long", handle[0])) == 123456
    p = ctypes.c_void_p()
    m.write_ptr(777, p)
    assert p.value == 777 and m.read_ptr(ctypes.pointer(p)) == 777
    pair = (ctypes.c_void_p * 2)(5, 6)
    assert m.read_ptr(pair) == 5
    a, b = (ctypes.c_float * 1)(1.5), (ctypes.c_float * 1)(-3.0)
    rows = (ctypes.POINTER(ctypes.c_float) * 2)(a, b)
    assert m.scale_rows(rows, 2) == 2 and (a[0], b[0]) == (3.0, -6.0)
    with pytest.raises(
        ffi.ArgumentTypeError,
        match=r"^read_ptr: argument 1 \(ptr, void \*\*\): expected a pointer to void \* \(cffi's "
        r"ffi.new\('void \*\[1\]'\), a ctypes c_void_p or an array of them\) or None for NULL, got c_int$",
    ):
        m.read_ptr(ctypes.c_int(1))
    with pytest.raises(ffi.ArgumentTypeError, match=r"argument 1 \(ptr, void \*\*\): .* got cffi int \*$"):
        m.read_ptr(ffi_.new("int *"))
    assert m.read_ptr(ffi_.NULL) == -1  # cffi's NULL is NULL, as None is
    # a handle freed by cffi's ffi.gc as the interpreter exits, as SparseConvNet's metadata is
    code = (
        "import importlib.util, cffi\n"
        f"spec = importlib.util.spec_from_file_location('f', {str(tmp_path / 'f' / '__init__.py')!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "class Metadata: pass\n"  # in a cycle: freed by the collector at the very end of the exit
        "md = Metadata(); md.me = md; md.ffi = cffi.FFI()\n"
        "md.handle = md.ffi.gc(md.ffi.new('void *[1]'), m.release); m.write_ptr(42, md.handle)\n"
    )
    out = _run([sys.executable, "-c", code], tmp_path)
    assert "released 42" in out and "Exception ignored" not in out, out


def test_bytes_pass_as_a_c_string(tmp_path, workdir):
    """torchaudio's first reader (2017) takes `const char *file_name`, which its
    Python passed as bytes (`str(filepath).encode("utf-8")`), as cffi took
    them: a NUL-terminated copy for the call. A str is refused, saying so."""
    m = _load(
        _extension(
            tmp_path,
            "long length_of(const char *s);\nint shout(char *s);",
            "#include <string.h>\nlong length_of(const char *s) { return (long)strlen(s); }\n"
            "int shout(char *s) { s[0] = 'X'; return s[1]; }\n",
            verbose=False,
        ).build(),
        "fixture_c_strings",
    )
    name = "/tmp/a b/\u00e9t\u00e9.wav".encode()
    assert m.length_of(name) == len(name) and m.length_of(b"") == 0
    word = b"quiet"
    assert m.shout(word) == ord("u") and word == b"quiet"  # the C code wrote to its own copy
    with pytest.raises(
        ffi.ArgumentTypeError,
        match=r"^length_of: argument 1 \(s, char\*\): expected a pointer to char "
        r"\(cffi's ffi.new\('char \*'\), a ctypes char, bytes for a C string or an array of them\) "
        r"or None for NULL, got str "
        r"\(a C string is bytes: s.encode\(\)\)$",
    ):
        m.length_of("abc")


def test_cffi_null_passes_null_for_a_tensor(probe):
    """SparseConvNet passes cffi's NULL (`nullptr = ffi.NULL`) for an absent
    bias: NULL, as None."""
    cffi = pytest.importorskip("cffi")
    ffi_ = cffi.FFI()
    out = torch.randn(2, 3)
    before = out.clone()
    assert (
        probe.probe_optional(ffi_.NULL, out) == 0 and probe.probe_optional(ffi_.cast("float *", 0), out) == 0
    )
    assert torch.equal(out, before)
    with pytest.raises(
        ffi.ArgumentTypeError, match=r"probe_optional: argument 1 \(bias\): expected a tensor"
    ):
        probe.probe_optional(ffi_.new("float *"), out)  # a pointer that is not NULL is no tensor


def test_storages_in_and_tensors_and_storages_out(tmp_path, workdir):
    """As the old ffi wrapped them: a storage argument (``x.storage()``) reaches
    the C code as TH's storage (data and size of all of it); a tensor or
    storage the C function makes and returns (its new reference) comes back
    as a torch tensor or ``TypedStorage`` (Fleuret's svrt: its generator
    returns a THByteTensor, compress and uncompress a THByteStorage)."""
    header = (
        "THFloatTensor *scaled(THFloatTensor *x, float a);\n"
        "THByteStorage *doubled(THByteStorage *s);\n"
        "THFloatStorage *storage_of(THFloatTensor *t);\n"
        "long size_of(const THDoubleStorage *s);\n"
        "THFloatTensor *nothing(int n);\n"
    )
    source = (
        "#include <TH/TH.h>\n"
        "THFloatTensor *scaled(THFloatTensor *x, float a) {\n"
        "  THFloatTensor *r =\n"
        "      THFloatTensor_newWithSize2d(THFloatTensor_size(x, 0), THFloatTensor_size(x, 1));\n"
        "  THFloatTensor_copy(r, x);\n  THFloatTensor_mul(r, r, a);\n  return r;\n}\n"
        "THByteStorage *doubled(THByteStorage *s) {\n"
        "  long i;\n  THByteStorage *r = THByteStorage_newWithSize(2 * s->size);\n"
        "  for (i = 0; i < s->size; i++) r->data[2 * i] = r->data[2 * i + 1] = s->data[i];\n"
        "  s->data[0] = 99;\n  return r;\n}\n"
        "THFloatStorage *storage_of(THFloatTensor *t) {\n"
        "  THFloatStorage *s = THFloatTensor_storage(t);\n  THFloatStorage_retain(s);\n  return s;\n}\n"
        "long size_of(const THDoubleStorage *s) { return (long)s->size; }\n"
        "THFloatTensor *nothing(int n) { return NULL; }\n"
    )
    m = _load(_extension(tmp_path, header, source, verbose=False).build(), "fixture_storages")
    x = torch.randn(3, 4)
    y = m.scaled(x, 2.5)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and torch.equal(y, x * 2.5)
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    b = torch.tensor([1, 2, 3], dtype=torch.uint8)
    d = m.doubled(b.untyped_storage())
    assert isinstance(d, torch.TypedStorage) and d.dtype == torch.uint8 and d.tolist() == [1, 1, 2, 2, 3, 3]
    assert b.tolist() == [99, 2, 3]  # the C code wrote through the storage it was given
    typed = torch.tensor([5, 6], dtype=torch.uint8)[1:].storage()  # the whole storage, from element 0
    assert m.doubled(typed).tolist() == [5, 5, 6, 6]
    t = torch.zeros(2, 3)[1]
    s = m.storage_of(t)
    assert isinstance(s, torch.TypedStorage) and s.size() == 6
    s[4] = 7.0  # the tensor's own memory
    assert t.tolist() == [0.0, 7.0, 0.0]
    assert m.size_of(torch.zeros(5, dtype=torch.float64).untyped_storage()) == 5
    assert m.size_of(torch.zeros(6, dtype=torch.float32).untyped_storage()) == 3  # its bytes as doubles
    with pytest.raises(
        ffi.ArgumentTypeError, match=r"^doubled: argument 1 \(s, THByteStorage\*\): expected a storage"
    ):
        m.doubled(b)
    with pytest.raises(
        ffi.ArgumentTypeError,
        match=r"^size_of: argument 1 \(s, THDoubleStorage\*\): expected a cpu storage of float64, got a cpu "
        r"storage of float32",
    ):
        m.size_of(torch.zeros(5).storage())
    with pytest.raises(RuntimeError, match=r"^nothing returned NULL where it returns a tensor"):
        m.nothing(1)
    assert m.scaled(torch.ones(1, 1), 3.0).item() == 3.0  # and the module goes on working


@pytest.mark.cuda
def test_a_kernel_launch_the_c_code_left_unchecked_raises_naming_the_function(tmp_path, workdir, monkeypatch):
    """2017 kernels were launched unchecked: a launch that fails (too many
    threads, no kernel for this GPU) raises from the function that made it,
    not from torch's next op, which then runs. A launch that works is
    unchanged."""
    header = "int fill(THCudaTensor *x, int threads);"
    source = (
        "#include <THC/THC.h>\nextern THCState *state;\nvoid k_fill(float *p, int n, int threads);\n"
        "int fill(THCudaTensor *x, int threads) {\n"
        "  k_fill(THCudaTensor_data(state, x), (int)THCudaTensor_nElement(state, x), threads);\n"
        "  return 1;\n}\n"
    )
    kernel = (
        "__global__ void k(float *p, int n) { int i = threadIdx.x; if (i < n) p[i] = 7; }\n"
        'extern "C" void k_fill(float *p, int n, int threads) { k<<<1, threads>>>(p, n); }\n'
    )
    _write(tmp_path, {"k.cu": kernel})
    ext = _extension(tmp_path, header, source, with_cuda=True, verbose=False)
    ext.sources.append(tmp_path / "k.cu")
    m = _load(ext.build(), "fixture_unchecked_launch")
    x = torch.full((32,), -1.0, device="cuda")
    assert m.fill(x, 32) == 1 and torch.equal(x, torch.full_like(x, 7))
    with pytest.raises(
        RuntimeError,
        match=r"^fill: a CUDA kernel it launched did not run: cudaErrorInvalid(Value|Configuration): ",
    ):
        m.fill(x, 4096)  # above the 1024 threads a block may have (CUDA 13 says InvalidValue)
    assert torch.equal(torch.ones(3, device="cuda") * 2, torch.full((3,), 2.0, device="cuda"))

    # kernels for another GPU only (SASS of another major version, no PTX to compile)
    major, minor = torch.cuda.get_device_capability()
    other = "9.0" if major == 8 else "8.0"
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", other)
    (tmp_path / "build").mkdir()
    _write(tmp_path / "build", {"k.cu": kernel})
    ext = _extension(tmp_path / "build", header, source, with_cuda=True, verbose=False)
    ext.sources.append(tmp_path / "build" / "k.cu")
    m = _load(ext.build(), "fixture_other_gpu")
    with pytest.raises(
        RuntimeError,
        match=rf"fill: a CUDA kernel it launched did not run: cudaErrorNoKernelImageForDevice: .* \(its "
        rf"kernels were compiled for other GPUs: compile the \.cu files with -arch=sm_{major}{minor} "
        r"for this one\)",
    ):
        m.fill(x, 32)
    assert torch.equal(x, torch.full_like(x, 7))  # untouched by the failed launch, and torch goes on


@pytest.mark.cuda
@pytest.mark.sanitize
def test_cuda_storages_in_and_tensors_and_storages_out(tmp_path, workdir):
    """The same on CUDA: THC's storages and tensors, made in C and returned."""
    header = (
        "THCudaTensor *scaled(THCudaTensor *x, float a);\n"
        "THCudaByteStorage *copied(THCudaByteStorage *s);\n"
        "long size_of(const THCudaDoubleStorage *s);\n"
    )
    source = (
        "#include <THC/THC.h>\nextern THCState *state;\n"
        "THCudaTensor *scaled(THCudaTensor *x, float a) {\n"
        "  THCudaTensor *r = THCudaTensor_newWithSize2d(state, THCudaTensor_size(state, x, 0),\n"
        "                                               THCudaTensor_size(state, x, 1));\n"
        "  THCudaTensor_copy(state, r, x);\n  THCudaTensor_mul(state, r, r, a);\n  return r;\n}\n"
        "THCudaByteStorage *copied(THCudaByteStorage *s) {\n"
        "  THCudaByteStorage *r = THCudaByteStorage_newWithSize(state, s->size);\n"
        "  THCudaByteStorage_copy(state, r, s);\n  THCudaByteStorage_fill(state, s, 7);\n  return r;\n}\n"
        "long size_of(const THCudaDoubleStorage *s) { return (long)s->size; }\n"
    )
    m = _load(
        _extension(tmp_path, header, source, with_cuda=True, verbose=False).build(), "fixture_cuda_storages"
    )
    x = torch.randn(3, 4, device="cuda")
    y = m.scaled(x, 2.5)
    assert y.device.type == "cuda" and torch.equal(y, x * 2.5)
    b = torch.tensor([1, 2, 3], dtype=torch.uint8, device="cuda")
    c = m.copied(b.untyped_storage())
    assert isinstance(c, torch.TypedStorage) and c.device.type == "cuda" and c.tolist() == [1, 2, 3]
    assert b.tolist() == [7, 7, 7]
    assert m.size_of(torch.zeros(5, dtype=torch.float64, device="cuda").untyped_storage()) == 5
    with pytest.raises(
        ffi.ArgumentTypeError, match=r"expected a cuda storage of float64, got a cpu storage of float64"
    ):
        m.size_of(torch.zeros(5, dtype=torch.float64).untyped_storage())


def test_unsupported_arguments_are_refused(tmp_path):
    with pytest.raises(TypeError, match=r"unsupported argument\(s\) \['extra_cuda_cflags'\]"):
        _extension(tmp_path, "int f(int n);", "", extra_cuda_cflags=["-G"])
    _write(tmp_path, {"k.cu": ""})
    with pytest.raises(ValueError, match=r"k\.cu is CUDA; build it with with_cuda=True"):
        ffi.create_extension("f", headers="f.h", sources=["k.cu"], relative_to=str(tmp_path / "b.py"))


def test_header_parsing_refuses_or_sets_aside_what_python_cannot_call():
    with pytest.raises(ValueError, match=r"parameter 1 of f \('float \*\*\*buf'\) cannot be passed from"):
        ffi.parse_header("int f(float ***buf);", "f.h", False)
    skipped = []
    header = (
        "int f(float ***buf);\nint g(int n, unsigned char *bytes, const void *p, void **m, float **rows);\n"
        "char *h(int n);\nint k(THFloatTensor **t);"
    )
    protos = ffi.parse_header(header, "f.h", False, skipped)
    # addresses; a `void *` takes a tensor too, listed last
    assert [p.schema for p in protos] == [
        "g(int n, int bytes, int p, int m, int rows, Tensor(g!)?[] void_tensors) -> int"
    ]
    decls = [p.c_decl for p in protos[0].params]
    assert decls == ["int", "unsigned char *", "const void *", "void * *", "float * *"]
    assert [name for name, _ in skipped] == ["f", "h", "k"]
    assert "h returns 'char *'" in skipped[1][1]


def test_header_parsing():
    protos = ffi.parse_header(
        "/* exported */\n#ifndef X\nint a(THFloatTensor *x, const THIntTensor* idx, long n,\n"
        "      double s);  // one\nvoid b(void);\nfloat c(unsigned int, THDoubleTensor *);\n#endif\n"
        "THFloatTensor *make(int n);\n"
        "struct THByteStorage *pack(const THByteStorage *s, THLongStorage *out);\n",
        "h.h",
        with_cuda=False,
    )
    assert [p.schema for p in protos] == [
        "a(Tensor(a!)? x, Tensor? idx, int n, float s) -> int",
        "b() -> ()",
        "c(int arg0, Tensor(b!)? arg1) -> float",
        "make(int n) -> Tensor",  # a tensor or storage the C function made
        "pack(Tensor? s, Tensor(b!)? out) -> Tensor",
    ]
    assert [p.returned_handle for p in protos] == [None, None, None, "THFloatTensor", "THByteStorage"]
    assert [q.is_storage for q in protos[0].params + protos[4].params] == [False] * 4 + [True] * 2
    with pytest.raises(
        ValueError, match=r"f returns a THCudaTensor \*, which needs create_extension\(\.\.\., with_cuda"
    ):
        ffi.parse_header("THCudaTensor *f(int n);", "f.h", False)


def test_header_typedefs_name_the_types_they_stand_for():
    """ORN's headers (2017) declare `typedef unsigned char uint8;` and the
    like before prototypes taking them; cffi read any typedef. A struct's
    name is no type Python can pass: its functions are set aside."""
    skipped = []
    protos = ffi.parse_header(
        "typedef unsigned long uint64;\ntypedef unsigned char uint8;\ntypedef uint8 level;\n"
        "typedef THFloatTensor *tensor_ptr;\ntypedef struct { int n; float w; } Box;\n"
        "struct Pair { int a; };\n"
        "int f(THFloatTensor *x, const uint8 n, uint64 m, level l);\nuint8 g(tensor_ptr t);\n"
        "int h(Box *b);\nint k(struct Pair *p);\n",
        "f.h",
        False,
        skipped,
    )
    schemas = ["f(Tensor(a!)? x, int n, int m, int l) -> int", "g(Tensor(a!)? t) -> int"]
    assert [p.schema for p in protos] == schemas
    decls = ["THFloatTensor *", "const unsigned char", "unsigned long", "unsigned char"]
    assert [p.c_decl for p in protos[0].params] == decls
    assert protos[1].returns == "unsigned char"
    assert [name for name, _ in skipped] == ["h", "k"]


def test_a_variadic_function_takes_tensors_after_its_parameters(tmp_path, workdir):
    """nv-wavenet's ffi wrapper (2018): `int infer(..., int implementation,
    ...)` reads its layers' weights with va_arg; the Python wrapper passed
    them as `*self.layers`, each a tensor that cffi got as its handle."""
    ext = _extension(
        tmp_path,
        "int sums(THFloatTensor *out, int n, ...);",
        "#include <stdarg.h>\n#include <TH/TH.h>\n"
        "int sums(THFloatTensor *out, int n, ...) {\n"
        "  va_list ap;\n  va_start(ap, n);\n  THFloatTensor_resize1d(out, n);\n"
        "  float *o = THFloatTensor_data(out);\n  int nulls = 0;\n"
        "  for (int i = 0; i < n; i++) {\n"
        "    THFloatTensor *t = va_arg(ap, THFloatTensor *);\n"
        "    if (!t) { o[i] = -1; nulls++; continue; }\n"
        "    o[i] = THFloatTensor_sumall(t);\n    THFloatTensor_fill(t, i);\n  }\n"
        "  va_end(ap);\n  return nulls;\n}\n",
        verbose=False,
    )
    m = _load(ext.build(), "fixture_variadic")
    assert m.sums.op._schema.arguments[-1].name == "variadic"
    g = torch.Generator().manual_seed(3)
    for n in (0, 3, 40, 512):  # the C call's counts: 8, 8, 128, 512
        tensors = [torch.randn(2 + i % 3, generator=g) for i in range(n)]
        want = [float(t.sum()) for t in tensors]
        out = torch.full((1,), float("nan"))
        args = [None if i == 1 else t for i, t in enumerate(tensors)]
        assert m.sums(out, n, *args) == (1 if n > 1 else 0)
        want[1:2] = [-1.0] if n > 1 else []
        assert out.tolist() == pytest.approx(want)
        assert all(t.eq(i).all() for i, t in enumerate(tensors) if i != 1)
    not_a_tensor = r"sums: argument 4 \(\.\.\.\): expected a tensor \(or None for NULL\), .* got int"
    with pytest.raises(ffi.ArgumentTypeError, match=not_a_tensor):
        m.sums(torch.empty(0), 2, torch.ones(1), 7)
    with pytest.raises(ffi.ArgumentTypeError, match=r"sums: at most 512 tensors go to its \.\.\., got 513"):
        m.sums(torch.empty(0), 513, *[torch.ones(1)] * 513)


def test_a_cxx_wrapper_over_void_pointers_reads_its_tensors_through_aten(tmp_path, workdir):
    """fairseq-py's first ConvTBC (2017): create_extension(...,
    source_extension='.cpp', extra_compile_args=['-std=c++11']) over a .cpp
    that defines its functions without extern "C" (cffi compiled the wrapper
    as C++), takes its tensors as `void *` (torch.utils.ffi gave each as its
    own type's pointer) and reads them through ATen:
    at::getType(at::kCPU, at::kFloat).unsafeTensorFromTH(p, true). The
    module's package is written when create_extension runs, as the old one
    made its folder, for the setup.py's find_packages()."""
    header = (
        "void scale(const char *dtype, void *input, void *output, float k);\n"
        "int fresh(void);\nint blob(void);\n"
    )
    source = (
        '#include <string.h>\n#include <stdexcept>\n#include <ATen/ATen.h>\n#include "f.h"\n'
        "static at::Type& type_of(const char* dtype) {\n"
        '  if (strcmp(dtype, "torch.FloatTensor") == 0) return at::getType(at::kCPU, at::kFloat);\n'
        '  if (strcmp(dtype, "torch.DoubleTensor") == 0) return at::getType(at::Backend::CPU, at::kDouble);\n'
        '  throw std::runtime_error(std::string("Unsupported data type: ") + dtype);\n}\n'
        "void scale(const char* dtype, void* input, void* output, float k) {\n"
        "  auto& type = type_of(dtype);\n"
        "  at::Tensor in = type.unsafeTensorFromTH(input, true);\n"
        "  at::Tensor out = type.unsafeTensorFromTH(output, true);\n"
        "  out.copy_(in.mul(k).t());\n}\n"
        "int fresh(void) {  // retain=false takes over the new handle's reference\n"
        "  long before = kfl_live_handles();\n"
        "  {\n    THFloatTensor* h = THFloatTensor_newWithSize1d(5);\n"
        "    at::Tensor t = at::getType(at::kCPU, at::kFloat).unsafeTensorFromTH(h, false);\n"
        "    if (t.numel() != 5) return -1;\n  }\n"
        "  return (int)(kfl_live_handles() - before);\n}\n"
        "static int freed = 0;\n"
        "int blob(void) {  // 0.4's tensorFromBlob: over the caller's memory, with its deleter\n"
        "  float* data = new float[6]{1, 2, 3, 4, 5, 6};\n"
        "  {\n    at::Tensor t = at::getType(at::kCPU, at::kFloat).tensorFromBlob(\n"
        "        data, {2, 3}, {1, 2}, [](void* p) { delete[] static_cast<float*>(p); freed++; });\n"
        "    if (t.sum().item<float>() != 21 || t[1][0].item<float>() != 2 || freed) return -1;\n  }\n"
        "  return freed;\n}\n"
    )
    _write(tmp_path, {"pkg/__init__.py": "", "f.h": header, "f.cpp": source})
    ext = ffi.create_extension(
        "pkg.conv", headers="f.h", sources=["f.cpp"], relative_to=str(tmp_path / "setup.py"),
        source_extension=".cpp", extra_compile_args=["-std=c++11"], verbose=False,
    )  # fmt: skip
    assert (tmp_path / "pkg" / "conv" / "__init__.py").exists()  # before the build
    kw = {"relative_to": str(tmp_path / "setup.py"), "source_extension": ".cpp"}
    ffi.create_extension("elsewhere.conv", headers="f.h", sources=["f.cpp"], **kw)
    assert not (tmp_path / "elsewhere").exists()  # no package there: written by the build
    m = _load(ext.build(), "fixture_aten")
    assert m.scale.op._schema.arguments[-1].name == "void_tensors"
    g = torch.Generator().manual_seed(5)
    for dtype in (torch.float32, torch.float64):
        x = random((3, 4), dtype, "cpu", g)
        out = torch.full((4, 3), float("nan"), dtype=dtype)
        m.scale(x.type().encode("utf-8"), x, out, 2.5)
        assert torch.equal(out, (x * 2.5).t())
    assert m.fresh() == 0
    assert m.blob() == 1
    # torch 2.15 writes ATen's type names in errors as Python's (torch.FloatTensor)
    mismatch = r"handle holds a cpu tensor of Double, not a (CPUFloatType|torch\.FloatTensor)$"
    with pytest.raises(RuntimeError, match=mismatch):
        m.scale(b"torch.FloatTensor", torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2), 1.0)
    with pytest.raises(RuntimeError, match=r"Unsupported data type: torch\.HalfTensor"):
        m.scale(b"torch.HalfTensor", torch.ones(2, 2), torch.ones(2, 2), 1.0)
    with pytest.raises(
        ffi.ArgumentTypeError,
        match=r"^scale: argument 3 \(output, void\*\): expected a tensor \(passed as its TH handle\), "
        r"cffi's or ctypes' memory, or None for NULL, got str$",
    ):
        m.scale(b"torch.FloatTensor", torch.ones(2, 2), "out", 1.0)
    with pytest.raises(
        ValueError, match=r"source_extension must be one of \['\.c', '\.cpp', '\.cc', '\.cxx'\]"
    ):
        ffi.create_extension("g", headers="f.h", sources=["f.cpp"], **{**kw, "source_extension": ".m"})


def test_a_list_of_numbers_passes_as_a_c_array(tmp_path, workdir):
    """cffi took a Python list for an `int *` or `float w[]` parameter (C's
    array parameter is a pointer), copied into a C array for the call."""
    ext = _extension(
        tmp_path,
        "float weigh(const float w[], const int *idx, int n, bool flags[2]);",
        "#include <stdbool.h>\n"
        "float weigh(const float w[], const int *idx, int n, bool flags[2]) {\n"
        "  float s = 0;\n  for (int i = 0; i < n; i++) s += w[idx[i]];\n"
        "  return flags[0] && !flags[1] ? s : -s;\n}\n",
        verbose=False,
    )
    m = _load(ext.build(), "fixture_lists")
    assert m.weigh([0.5, 1.5, 2.0], (2, 0, 2), 3, [True, False]) == 4.5
    assert m.weigh((1, 2), [1], 1, [True, True]) == -2.0  # ints where floats go, as in C
    with pytest.raises(
        ffi.ArgumentOverflowError,
        match=r"weigh: argument 2 \(idx, int\*\): item 1 of the list: 1099511627776 does not fit",
    ):
        m.weigh([0.5], [0, 2**40], 1, [True, False])
    with pytest.raises(
        ffi.ArgumentTypeError, match=r"argument 1 \(w, float\*\): item 0 of the list: .* got str"
    ):
        m.weigh(["a"], [0], 1, [True, False])


def test_a_typedef_parameter_is_checked_against_its_type(tmp_path, workdir):
    """ORN's `const uint8 nOrientation`: the C function gets the number, and
    one its type cannot hold is refused before the call, as cffi refused it."""
    header = "typedef unsigned char uint8;\nint rotate(THFloatTensor *x, const uint8 turns);\n"
    ext = _extension(
        tmp_path,
        header,
        '#include <TH/TH.h>\n#include "f.h"\n'
        "int rotate(THFloatTensor *x, const uint8 turns) {\n"
        "  THFloatTensor_fill(x, turns);\n  return turns;\n}\n",
        verbose=False,
    )
    m = _load(ext.build(), "fixture_typedef")
    x = torch.randn(3)
    assert m.rotate(x, 255) == 255 and x.tolist() == [255.0] * 3
    with pytest.raises(OverflowError, match=r"rotate: argument 2 \(turns, unsigned char\)"):
        m.rotate(x, 256)


def test_parameters_named_like_a_schema_keyword_get_an_underscore():
    """`in`, `def`, `is` ... are C names but words of torch's schema language:
    as they were, registering the op ended the process at import."""
    (proto,) = ffi.parse_header("int f(THFloatTensor *in, int def, float is, int in_);", "f.h", False)
    assert proto.schema == "f(Tensor(a!)? arg0, int arg1, float arg2, int arg3) -> int"  # in_ twice
    (proto,) = ffi.parse_header("int g(const THFloatTensor *in, long pass);", "g.h", False)
    assert proto.schema == "g(Tensor? in_, int pass_) -> int"


def test_rebuild_is_incremental(tmp_path, workdir):
    ext = _extension(tmp_path, "int f(int n);", "int f(int n) { return 2 * n; }\n", verbose=False)
    first = _load(ext.build(), "fixture_f")
    assert first.f(21) == 42
    log = (
        Path(os.environ["TORCH_EXTENSIONS_DIR"])
        / "kernforge_legacy"
        / ext.namespace(ext.target_dir())
        / ".ninja_log"
    )
    lines = len(log.read_text().splitlines())
    ext.build()  # nothing changed: nothing compiled or linked again
    assert len(log.read_text().splitlines()) == lines


def _cmdclass_project(root: Path) -> Path:
    """A legacy package's setup.py, with cmdclass={"build_py": build_py(ffi)}
    where it had cffi_modules=[...]."""
    project = root / "project"
    (project / "my_package" / "src").mkdir(parents=True)
    for f in ("my_lib.c", "my_lib.h"):
        shutil.copy(FIXTURES / "my_lib" / "src" / f, project / "my_package" / "src" / f)
    _write(
        project,
        {
            "setup.py": "from setuptools import setup, find_packages\n"
            "from kernforge_legacy.ffi import build_py\n"
            "from my_package.build import ffi\n"
            "setup(name='my_package', version='0.1', packages=find_packages(),\n"
            "      cmdclass={'build_py': build_py(ffi)})\n",
        },
    )
    _write(
        project / "my_package",
        {
            "__init__.py": "",
            "build.py": "from kernforge_legacy.ffi import create_extension\n"
            "ffi = create_extension('_ext.my_lib', package=True, headers=['src/my_lib.h'],\n"
            "                       sources=['src/my_lib.c'], relative_to=__file__, verbose=False)\n",
        },
    )
    return project


def test_package_setup_builds_into_the_package(tmp_path, workdir):
    """The extension lands in the package of its build script."""
    out = tmp_path / "out"
    _run([sys.executable, "setup.py", "-q", "build", "--build-lib", str(out)], _cmdclass_project(tmp_path))
    assert (out / "my_package" / "_ext" / "my_lib" / "_my_lib.so").exists()
    assert _add_in_new_process("my_package._ext", out) == "1 [2.0, 2.0]"


def test_package_setup_builds_in_place_for_an_editable_install(tmp_path, workdir):
    """pip install -e . (an editable wheel, PEP 660) imports the package from
    its source folder, so the library is built there, as build_ext builds
    ext_modules in place for it; it went to a build folder that was then
    thrown away, and the import failed."""
    project = _cmdclass_project(tmp_path)
    dist = tmp_path / "dist"
    code = f"from setuptools import build_meta\nprint(build_meta.build_editable({str(dist)!r}))"
    wheel = dist / _run([sys.executable, "-c", code], project).split()[-1]
    with zipfile.ZipFile(wheel) as z:
        assert not [n for n in z.namelist() if n.endswith(".so")], z.namelist()
    assert _add_in_new_process("my_package._ext", project) == "1 [2.0, 2.0]"


def test_package_setup_makes_a_wheel_for_the_platform(tmp_path, workdir):
    """The wheel holds a compiled library: it is tagged for this platform, not
    py3-none-any (which pip would install anywhere), and its files sit at the
    root, as platlib; installed, the extension works."""
    dist, project = tmp_path / "dist", _cmdclass_project(tmp_path)
    _run([sys.executable, "setup.py", "-q", "bdist_wheel", "--dist-dir", str(dist)], project)
    (wheel,) = dist.glob("*.whl")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert wheel.name.endswith(f"-{platform}.whl") and "-none-any" not in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert "my_package/_ext/my_lib/_my_lib.so" in names, names
        assert "Root-Is-Purelib: false" in z.read("my_package-0.1.dist-info/WHEEL").decode()
        z.extractall(tmp_path / "site")
    assert _add_in_new_process("my_package._ext", tmp_path / "site") == "1 [2.0, 2.0]"


def test_cffi_modules_in_setup_py_builds_as_torch_utils_ffi_package_example(tmp_path, workdir):
    """torch.utils.ffi's package example: setup(cffi_modules=["build.py:ffi"])
    over a build.py at the top whose extension sits in the package
    ('my_package._ext.my_lib', package=True). With only the import line
    changed, its wheel holds the library, tagged for the platform, and the
    installed package works."""
    pytest.importorskip("cffi")  # the tests' requirements install it; the hook is cffi's
    project = tmp_path / "project"
    (project / "my_package" / "src").mkdir(parents=True)
    for f in ("my_lib.c", "my_lib.h"):
        shutil.copy(FIXTURES / "my_lib" / "src" / f, project / "my_package" / "src" / f)
    _write(project / "my_package", {"__init__.py": ""})
    _write(
        project,
        {
            "build.py": "from kernforge_legacy.ffi import create_extension\n"
            "ffi = create_extension('my_package._ext.my_lib', package=True,\n"
            "                       headers=['my_package/src/my_lib.h'],\n"
            "                       sources=['my_package/src/my_lib.c'],\n"
            "                       relative_to=__file__, verbose=False)\n",
            "setup.py": "import os\nfrom setuptools import setup, find_packages\nimport build\n"
            "this_file = os.path.dirname(__file__)\n"
            "setup(name='my_package', version='0.1', packages=find_packages(exclude=['build']),\n"
            "      ext_package='', cffi_modules=[os.path.join(this_file, 'build.py:ffi')])\n",
        },
    )
    dist = tmp_path / "dist"
    _run([sys.executable, "setup.py", "-q", "bdist_wheel", "--dist-dir", str(dist)], project)
    (wheel,) = dist.glob("*.whl")
    assert "-none-any" not in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as z:
        libraries = [n for n in z.namelist() if n.startswith("my_package/_ext/my_lib/_my_lib")]
        assert len(libraries) == 1 and libraries[0].endswith(".so"), z.namelist()
        z.extractall(tmp_path / "site")
    assert _add_in_new_process("my_package._ext", tmp_path / "site") == "1 [2.0, 2.0]"


# -- create_extension as 2017 setup.py files used it ---------------------------------------


def _my_lib_project(root: Path) -> Path:
    """The official example's layout: build.py beside src/, at the project's top."""
    project = root / "project"
    (project / "src").mkdir(parents=True)
    for f in ("my_lib.c", "my_lib.h"):
        shutil.copy(FIXTURES / "my_lib" / "src" / f, project / "src" / f)
    _write(
        project,
        {
            "build.py": "import os\nfrom kernforge_legacy.ffi import create_extension\n"
            "ffi = create_extension('_ext.my_lib', headers=['src/my_lib.h'], sources=['src/my_lib.c'],\n"
            "                       relative_to=__file__, verbose=False, package=False,\n"
            "                       define_macros=[], extra_compile_args=['-O2'], libraries=[])\n"
            "if __name__ == '__main__':\n    ffi.build()\n",
            "setup.py": "from setuptools import setup\nfrom build import ffi\n"
            "setup(name='my_lib_ext', version='0.1', packages=['_ext', '_ext.my_lib'],\n"
            "      ext_modules=[ffi.distutils_extension()])\n",
        },
    )
    return project


def test_distutils_extension_with_build_ext_inplace(tmp_path, workdir):
    """`setup(ext_modules=[ffi.distutils_extension()])`, then
    `python setup.py build_ext --inplace`: setuptools compiles it and
    `from _ext import my_lib` works in the project folder."""
    project = _my_lib_project(tmp_path)
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project)
    built = list((project / "_ext" / "my_lib").glob("_my_lib*.so"))
    assert len(built) == 1 and built[0].name != "_my_lib.so", built  # setuptools' name, with its suffix
    assert _add_in_new_process("_ext", project) == "1 [2.0, 2.0]"


def test_a_package_that_wraps_the_cffi_module_itself(tmp_path, workdir):
    """pytorch-ctc's setup.py (2017) renames the Extension to the package's
    own module (`ffi.name = 'pkg._f'`), and its __init__.py imports that
    module's `lib` and `ffi` and wraps each function with torch.utils.ffi's
    `_wrap_function`: with the import lines changed, the library is that
    module, and the package's functions take tensors."""
    project = tmp_path / "project"
    _write(
        project,
        {
            "src/f.h": "int fill(THFloatTensor *x, float value);",
            "src/f.c": '#include "TH.h"\nint fill(THFloatTensor *x, float value) {\n'
            "  THFloatTensor_fill(x, value);\n  return (int)THFloatTensor_nElement(x);\n}\n",
            "pkg/__init__.py": "from kernforge_legacy.ffi import _wrap_function\n"
            "from ._f import lib as _lib, ffi as _ffi\n__all__ = []\n"
            "for symbol in dir(_lib):\n"
            "    globals()['_' + symbol] = _wrap_function(getattr(_lib, symbol), _ffi)\n"
            "    __all__.append('_' + symbol)\n",
            "setup.py": "from setuptools import setup\nfrom kernforge_legacy.ffi import create_extension\n"
            "ffi = create_extension('f', package=True, headers=['src/f.h'], sources=['src/f.c'],\n"
            "                       verbose=False)\n"
            "ffi = ffi.distutils_extension()\nffi.name = 'pkg._f'\n"
            "setup(name='pkg', version='0.1', packages=['pkg'], ext_modules=[ffi])\n",
        },
    )
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project)
    code = (
        "import torch, pkg\nx = torch.full((2, 3), float('nan'))\n"
        "print(pkg.__all__, pkg._fill(x, 1.5), x.tolist(), pkg._f.__name__)"
    )
    out = _run([sys.executable, "-c", code], project).strip().splitlines()[-1]
    assert out == "['_fill'] 6 [[1.5, 1.5, 1.5], [1.5, 1.5, 1.5]] pkg._f"


@pytest.mark.slow  # needs pip, which the matrix cells' and conda prefixes' environments lack
def test_distutils_extension_with_pip_install(tmp_path, workdir):
    project = _my_lib_project(tmp_path)
    target = tmp_path / "site"
    _run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
         "--target", str(target), str(project)],
        tmp_path,
    )  # fmt: skip
    assert _add_in_new_process("_ext", target) == "1 [2.0, 2.0]"


def test_distutils_extension_keeps_the_extensions_cxx_standard(tmp_path, workdir, monkeypatch):
    """ctcdecode's build.py (2018) passed extra_compile_args=['-std=c++11',
    '-fPIC', '-std=c99'] with language='c++' over kenlm's sources, whose
    dynamic exception specifications (``throw(E)``) C++17 refuses. setuptools
    compiles every source with that one list, so the generated op source,
    which needs C++17, is compiled apart: the list stays as given (no warning)
    and such a source builds. With g++, as ctcdecode was built: clang++
    refuses a C++ source under -std=c99."""
    monkeypatch.setenv("CC", "gcc")
    monkeypatch.setenv("CXX", "g++")
    project = tmp_path / "project"
    build = (
        "from kernforge_legacy.ffi import create_extension\n"
        "ffi = create_extension('pkg._b', package=True, language='c++', headers=['src/b.h'],\n"
        "                       sources=['src/b.cpp'], relative_to=__file__, verbose=False,\n"
        "                       extra_compile_args=['-std=c++11', '-fPIC', '-std=c99'])\n"
    )
    _write(
        project,
        {
            "src/b.h": "int count(THFloatTensor *x, int k);",
            "src/b.cpp": '#include <stdexcept>\n#include <vector>\n#include "TH.h"\n'
            "static void check(int k) throw(std::invalid_argument) {\n"
            '  if (k < 0) throw std::invalid_argument("k");\n}\n'
            'extern "C" int count(THFloatTensor *x, int k) {\n'
            "  check(k);\n"
            "  float *p = THFloatTensor_data(x);\n"
            "  std::vector<float> v(p, p + THFloatTensor_nElement(x));\n"
            "  return (int)v.size() * k;\n}\n",
            "build.py": build,
            "setup.py": "from setuptools import setup\nfrom build import ffi\n"
            "setup(name='b', version='0.1', packages=['pkg', 'pkg._b'],\n"
            "      ext_modules=[ffi.distutils_extension()])\n",
            "pkg/__init__.py": "",
        },
    )
    monkeypatch.chdir(project)
    spec = importlib.util.spec_from_file_location("fixture_b_build", project / "build.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ext = script.ffi.distutils_extension()
    assert ext.extra_compile_args[-3:] == ["-std=c++11", "-fPIC", "-std=c99"]
    assert not any(s.endswith(("ops.cpp", "pymodule.cpp")) for s in ext.sources)
    objects = [Path(o) for o in ext.extra_objects]
    assert [o.name for o in objects] == ["ops.o", "pymodule.o"] and all(o.exists() for o in objects)
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project)
    code = "import torch\nfrom pkg._b import count\nprint(count(torch.ones(2, 3), 2))"
    assert _run([sys.executable, "-c", code], project).strip().splitlines()[-1] == "12"


def test_distutils_extension_of_c99_sources_builds_with_a_cxx_compiler_that_refuses_c99(
    tmp_path, workdir, monkeypatch
):
    """2017 build scripts gave extra_compile_args=['-std=c99'] for their C
    sources. setuptools gives every source of an Extension that list, and
    the Python module kernforge generates is C++: g++ warns that -std=c99 is
    not for C++, clang++ stops (`invalid argument '-std=c99' not allowed
    with 'C++'`). So that module is compiled apart, with its own flags. Here
    a stand-in for clang++ as CXX: g++ that refuses -std=c99."""
    strict = tmp_path / "strict-cxx"
    strict.write_text(
        '#!/bin/bash\nfor a in "$@"; do if [ "$a" = -std=c99 ]; then\n'
        "  echo \"error: invalid argument '-std=c99' not allowed with 'C++'\" >&2; exit 1\nfi; done\n"
        'exec g++ "$@"\n'
    )
    strict.chmod(0o755)
    monkeypatch.setenv("CXX", str(strict))
    syntax = [str(strict), "-std=c99", "-x", "c++", "-fsyntax-only", "-"]
    refused = subprocess.run(syntax, input="", text=True, capture_output=True)
    assert refused.returncode != 0 and "not allowed with 'C++'" in refused.stderr
    project = tmp_path / "project"
    _write(
        project,
        {
            "src/c.h": "int twice_sum(THFloatTensor *x);",
            "src/c.c": "#include <TH/TH.h>\nint twice_sum(THFloatTensor *x) {\n"
            "  float s = 0; float *p = THFloatTensor_data(x);\n"
            "  for (long i = 0; i < THFloatTensor_nElement(x); i++) s += p[i];\n"
            "  return (int)(2 * s);\n}\n",
            "build.py": "from kernforge_legacy.ffi import create_extension\n"
            "ffi = create_extension('pkg._c', package=True, headers=['src/c.h'], sources=['src/c.c'],\n"
            "                       relative_to=__file__, extra_compile_args=['-std=c99'])\n",
            "setup.py": "from setuptools import setup\nfrom build import ffi\n"
            "setup(name='c', version='0.1', packages=['pkg', 'pkg._c'],\n"
            "      ext_modules=[ffi.distutils_extension()])\n",
            "pkg/__init__.py": "",
        },
    )
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project)
    code = "import torch\nfrom pkg._c import twice_sum\nprint(twice_sum(torch.ones(2, 3)))"
    assert _run([sys.executable, "-c", code], project).strip().splitlines()[-1] == "12"


def test_distutils_extension_of_extra_objects_alone_builds(tmp_path, workdir, monkeypatch):
    """An extension whose code all comes as extra_objects (a make.sh's) and
    no source: setuptools wants one, so it compiles the generated Python
    module's (elsewhere compiled apart)."""
    project = tmp_path / "project"
    _write(
        project,
        {
            "src/d.h": "int thrice(int n);",
            "src/d.c": "int thrice(int n) { return 3 * n; }\n",
            "build.py": "from kernforge_legacy.ffi import create_extension\n"
            "ffi = create_extension('pkg._d', package=True, headers=['src/d.h'], sources=[],\n"
            "                       extra_objects=['src/d.o'], relative_to=__file__)\n",
            "setup.py": "from setuptools import setup\nfrom build import ffi\n"
            "setup(name='d', version='0.1', packages=['pkg', 'pkg._d'],\n"
            "      ext_modules=[ffi.distutils_extension()])\n",
            "pkg/__init__.py": "",
        },
    )
    _run(["gcc", "-c", "-fPIC", "-o", "src/d.o", "src/d.c"], project)
    monkeypatch.chdir(project)
    spec = importlib.util.spec_from_file_location("fixture_d_build", project / "build.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    ext = script.ffi.distutils_extension()
    assert [Path(s).name for s in ext.sources] == ["pymodule.cpp"]
    assert [Path(o).name for o in ext.extra_objects] == ["ops.o"]
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project)
    code = "from pkg._d import thrice\nprint(thrice(14))"
    assert _run([sys.executable, "-c", code], project).strip().splitlines()[-1] == "42"


def test_distutils_extension_refuses_cuda_sources(tmp_path):
    _write(tmp_path, {"f.h": "int f(int n);", "k.cu": ""})
    ext = ffi.Extension("f", "f.h", [], verbose=False, with_cuda=False, relative_to=str(tmp_path / "b.py"))
    # as with_cuda=True would take it, which needs nvcc and a CUDA torch to construct
    ext.sources = [tmp_path / "k.cu"]
    with pytest.raises(
        ValueError,
        match=r"^f: a setuptools build .* does not compile CUDA sources .*k\.cu.*extra_objects.*'nvcc'.*"
        r"cpp_extension\.BuildExtension",
    ):
        ext.distutils_extension()


def _per_compiler_project(root: Path, nvcc: list[str], cuda: bool) -> Path:
    """nnutils' pytorch/setup.py (2018) in small: create_extension with
    language='c++', extra_compile_args in torch.utils.cpp_extension's dict
    form, .cu sources where CUDA is, and that module's BuildExtension."""
    project = root / "project"
    cuda_files = {
        "src/k.h": "int twice_cuda(THCudaTensor *x);",
        "src/k.cu": "#include <THC/THC.h>\nextern THCState *state;\n"
        "__global__ void twice(float *p, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) p[i] *= 2;\n}\n"
        'extern "C" int twice_cuda(THCudaTensor *x) {\n'
        "  int n = THCudaTensor_nElement(state, x);\n"
        "  cudaStream_t s = THCState_getCurrentStream(state);\n"
        "  twice<<<(n + 255) / 256, 256, 0, s>>>(THCudaTensor_data(state, x), n);\n"
        "  return SCALE;\n}\n",
    }
    _write(
        project,
        {
            "src/f.h": "int scaled_count(THFloatTensor *x);",
            "src/f.cc": '#include <vector>\n#include "TH.h"\n'
            'extern "C" int scaled_count(THFloatTensor *x) {\n'
            "  float *p = THFloatTensor_data(x);\n"
            "  std::vector<float> v(p, p + THFloatTensor_nElement(x));\n"
            "  return (int)v.size() * SCALE;\n}\n",
            **(cuda_files if cuda else {}),
            "pkg/__init__.py": "",
            "setup.py": "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension\n"
            "from kernforge_legacy.ffi import create_extension\n"
            f"cuda = {cuda}\n"
            "ffi = create_extension('pkg._f', package=True, language='c++',\n"
            "    headers=['src/f.h'] + (['src/k.h'] if cuda else []),\n"
            "    sources=['src/f.cc'] + (['src/k.cu'] if cuda else []),\n"
            "    with_cuda=cuda, relative_to=__file__, verbose=False,\n"
            f"    extra_compile_args={{'cxx': ['-std=c++11', '-DSCALE=3'], 'nvcc': {nvcc!r}}})\n"
            "setup(name='f', version='0.1', packages=['pkg', 'pkg._f'],\n"
            "      ext_modules=[ffi.distutils_extension()], cmdclass={'build_ext': BuildExtension})\n",
        },
    )
    return project


def test_extra_compile_args_in_cpp_extensions_dict_form(tmp_path, workdir):
    """{'cxx': [...], 'nvcc': [...]}: 'cxx' for the C and C++ sources, kept
    as given for setuptools (as with a list), and the Extension's flags in the
    same form for BuildExtension, 'cxx' starting with C++17 (a 2018 copy of
    BuildExtension added -std=c++11 where none was given)."""
    project = _per_compiler_project(tmp_path, ["-DSCALE=3"], cuda=False)
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project)
    code = "import torch\nfrom pkg._f import scaled_count\nprint(scaled_count(torch.ones(2, 3)))"
    assert _run([sys.executable, "-c", code], project).strip().splitlines()[-1] == "18"
    ext = ffi.create_extension(
        "f", headers=str(project / "src/f.h"), sources=[str(project / "src/f.cc")], language="c++",
        relative_to=str(tmp_path / "b.py"), verbose=False,
        extra_compile_args={"cxx": ["-std=c++11", "-DSCALE=3"], "nvcc": ["-O2"]},
    )  # fmt: skip
    args = ext.distutils_extension().extra_compile_args
    assert set(args) == {"cxx", "nvcc"} and args["cxx"][0] == "-std=c++17"
    assert args["cxx"][-2:] == ["-std=c++11", "-DSCALE=3"] and args["nvcc"] == []  # no CUDA: nothing for nvcc
    # .build() takes the dict too: 'cxx' for its C and C++ sources
    assert _load(ext.build(), "fixture_dict_form").scaled_count(torch.ones(5)) == 15
    with pytest.raises(TypeError, match=r"takes the keys 'cxx' and 'nvcc'.*got \['c', 'cxx'\]"):
        ffi.create_extension("f", headers=[], sources=[], extra_compile_args={"cxx": [], "c": []})


def test_nvcc_flags_of_the_dict_form(tmp_path, monkeypatch):
    """'nvcc' flags follow kernforge's own (C++17, THC's headers, the
    architectures); a C++ standard below 17 is left out with a warning, one
    of 17 or above replaces kernforge's."""
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    _write(tmp_path, {"f.h": "int f(int n);"})
    ext = ffi.Extension("f", "f.h", [], verbose=False, with_cuda=False, relative_to=str(tmp_path / "b.py"))
    flags = {"defines": ["-DD"], "includes": ["-II"]}
    ext.extra_nvcc_args = ["-std=c++11", "--expt-extended-lambda"]
    with pytest.warns(UserWarning, match=r"f: nvcc flags \['-std=c\+\+11'\] left out: .* C\+\+17"):
        nvcc = ext._nvccflags(flags)
    assert nvcc[0] == "-std=c++17" and nvcc[-1] == "--expt-extended-lambda" and "-std=c++11" not in nvcc
    assert "-gencode=arch=compute_90,code=sm_90" in nvcc and {"-DD", "-II"} <= set(nvcc)
    ext.extra_nvcc_args = ["-std=c++20"]
    assert [f for f in ext._nvccflags(flags) if f.startswith("-std=")] == ["-std=c++20"]


@pytest.mark.cuda
def test_cuda_sources_through_build_extension_in_the_dict_form(tmp_path, workdir):
    """nnutils' setup.py builds its .cu sources with BuildExtension: with the
    dict form, distutils_extension() hands them on, with nvcc's flags."""
    project = _per_compiler_project(tmp_path, ["-std=c++11", "-DSCALE=3"], cuda=True)
    _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], project)
    code = (
        "import torch\nfrom pkg._f import twice_cuda\nx = torch.arange(1000.0, device='cuda')\n"
        "print(twice_cuda(x), torch.equal(x, 2 * torch.arange(1000.0, device='cuda')))"
    )
    assert _run([sys.executable, "-c", code], project).strip().splitlines()[-1] == "3 True"


def test_language_cpp_and_the_other_setuptools_keywords(tmp_path, workdir):
    """language='c++': a .cpp source defines the header's functions
    extern "C", as under cffi; undef_macros, depends (a change rebuilds),
    runtime_library_dirs, export_symbols, swig_opts, optional and
    py_limited_api are taken."""
    _write(
        tmp_path,
        {
            "f.h": "int twice(int n);\nint flag(void);\n",
            "f.cpp": "#include <vector>\n"
            'extern "C" int twice(int n) { std::vector<int> v(2, n); return v[0] + v[1]; }\n'
            '#ifdef FLAG\nextern "C" int flag(void) { return 1; }\n'
            '#else\nextern "C" int flag(void) { return 0; }\n#endif\n',
            "version.txt": "1\n",
        },
    )
    ext = ffi.create_extension(
        "cpp_ext", headers=["f.h"], sources=["f.cpp"], relative_to=str(tmp_path / "build.py"), verbose=False,
        language="c++", define_macros=[("FLAG", None)], undef_macros=["FLAG"], depends=["version.txt"],
        runtime_library_dirs=["lib"], export_symbols=["twice"], swig_opts=[], optional=False,
        py_limited_api=False,
    )  # fmt: skip
    module = _load(ext.build(), "fixture_cpp_ext")
    assert module.twice(21) == 42 and module.flag() == 0  # FLAG defined, then undefined
    log = (
        Path(os.environ["TORCH_EXTENSIONS_DIR"])
        / "kernforge_legacy"
        / ext.namespace(ext.target_dir())
        / ".ninja_log"
    )
    compiled = len(log.read_text().splitlines())
    ext.build()
    assert len(log.read_text().splitlines()) == compiled  # nothing changed
    (tmp_path / "version.txt").write_text("2\n")
    ext.build()
    assert len(log.read_text().splitlines()) > compiled  # a `depends` file changed: rebuilt
    with pytest.raises(ValueError, match=r"language must be 'c' or 'c\+\+', got 'fortran'"):
        ffi.create_extension(
            "x", headers=["f.h"], sources=[], relative_to=str(tmp_path / "b.py"), language="fortran"
        )


def test_c_flags_of_the_build_script_reach_only_its_sources(tmp_path, workdir, capfd):
    """The official example passes extra_compile_args=["-std=c99"]: for its C
    sources, not for the C++ op wrappers and TH runtime built beside them."""
    ext = _extension(
        tmp_path,
        "int f(THFloatTensor *x);",
        "#include <TH/TH.h>\nint f(THFloatTensor *x) { return (int)THFloatTensor_nElement(x); }\n",
        extra_compile_args=["-std=c99"],
    )
    assert _load(ext.build(), "fixture_c99").f(torch.ones(5)) == 5
    output = capfd.readouterr().out
    assert "-std=c99" in output and "valid for C/ObjC but not for C++" not in output, output


def test_two_builds_of_one_folder_wait_for_each_other(tmp_path, monkeypatch):
    """Two processes building at once (pytest-xdist's workers, two pip
    builds) share the runtime's build folder: each holds it alone while it
    writes the build file and runs ninja there, or one links objects the
    other is writing (undefined references to TH functions, seen in a
    setuptools test under -n 2). ninja's run is recorded here, not run."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    ran = []
    monkeypatch.setattr(ffi, "_run_ninja", lambda folder, name, verbose: ran.append(folder))
    folder = ffi.build_runtime(False).parent
    done = threading.Event()
    second = threading.Thread(target=lambda: (ffi.build_runtime(False), done.set()))
    with ffi._exclusive(folder):
        second.start()
        assert not done.wait(1.0)  # waits while another holds the folder
    second.join(30)
    assert done.is_set() and ran == [folder, folder]


def test_a_wheel_build_leaves_out_the_other_variants_runtime(tmp_path, monkeypatch):
    # kernforge-legacy's own build (with_runtime) into a build/ that still holds
    # a CUDA runtime from an earlier build: a CPU wheel must not ship it, or its
    # extensions would load it and need libtorch_cuda. The runtime's compile (a
    # minute here) is left to the wheels session; this records what was asked for.
    from setuptools.dist import Distribution

    def build_runtime(with_cuda, into):
        built.append(with_cuda)
        (Path(into) / ffi.RUNTIME_LIBS[with_cuda]).write_text("built")
        return Path(into) / ffi.RUNTIME_LIBS[with_cuda]

    built = []
    monkeypatch.setattr(ffi, "build_runtime", build_runtime)
    monkeypatch.chdir(tmp_path)
    lib = tmp_path / "build" / "lib" / "kernforge_legacy" / "lib"
    lib.mkdir(parents=True)
    (lib / ffi.RUNTIME_LIBS[True]).write_text("stale")
    cmd = ffi.build_py(with_runtime=True)(Distribution({"name": "probe", "packages": []}))
    cmd.build_lib = str(tmp_path / "build" / "lib")
    cmd.ensure_finalized()
    cmd.run()
    assert built == [False] and sorted(p.name for p in lib.iterdir()) == [ffi.RUNTIME_LIBS[False]]
