"""Shared fixtures: devices, dtypes and layouts every op test is parametrized
over, and the helpers that make inputs in each layout."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
from pathlib import Path


def gpu_order_for_worker(worker: str, gpus: int, visible: str | None) -> str | None:
    """The CUDA_VISIBLE_DEVICES that puts pytest-xdist worker `worker`
    ("gw3") on its own GPU of `gpus`: the visible list rotated by the
    worker's number, so its "cuda" is GPU k mod n and a test still sees every
    GPU. None outside a worker or with fewer than two GPUs."""
    ids = visible.split(",") if visible else [str(i) for i in range(gpus)]
    if not worker.startswith("gw") or len(ids) < 2:
        return None
    k = int(worker[2:]) % len(ids)
    return ",".join(ids[k:] + ids[:k])


# The noxfile's GPU sessions set KERNFORGE_SPREAD_GPUS to the host's GPU count,
# so that parallel workers share the GPUs; it must act before CUDA starts.
if int(os.environ.get("KERNFORGE_SPREAD_GPUS") or 0) > 1:
    _order = gpu_order_for_worker(
        os.environ.get("PYTEST_XDIST_WORKER", ""),
        int(os.environ["KERNFORGE_SPREAD_GPUS"]),
        os.environ.get("CUDA_VISIBLE_DEVICES"),
    )
    if _order is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = _order


def threads_for_worker(cpus: int, workers: int) -> int:
    """Intra-op threads for one of `workers` pytest-xdist workers on `cpus`
    cores: an equal share. Each worker's torch would otherwise take every
    core, and OpenMP's spinning threads, `workers` times over, made a CPU
    torch.compile test that takes 2 s alone take 190 s beside 15 others."""
    return max(1, cpus // max(1, workers))


# Before torch starts, so that its threads and those of the processes a test
# starts (OMP_NUM_THREADS is inherited) take the worker's share. Inductor's
# compile pool too: by default each worker would start one process per core
# (16 workers x 16 processes on a 16-core host); at a share of 1 it compiles
# in the worker itself.
_threads = None
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = threads_for_worker(len(os.sched_getaffinity(0)), int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    if "OMP_NUM_THREADS" not in os.environ:
        _threads = _share
        os.environ["OMP_NUM_THREADS"] = str(_share)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(_share))

import pytest  # noqa: E402
import torch  # noqa: E402

if _threads is not None:  # in case a plugin imported torch first
    torch.set_num_threads(_threads)

FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INT_DTYPES = [torch.int32, torch.int64]

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]

# Each layout is a way to build a tensor of a given logical shape.
LAYOUTS = ["contiguous", "transposed", "sliced", "offset", "expanded"]


def pytest_collection_modifyitems(config, items):
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for item in items:
        if "cuda" in item.keywords and gpus == 0:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
        elif "multi_gpu" in item.keywords and gpus < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs two CUDA GPUs, {gpus} here"))


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(params=FLOAT_DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def float_dtype(request):
    return request.param


@pytest.fixture(params=LAYOUTS)
def layout(request):
    return request.param


def random(shape, dtype, device, gen: torch.Generator) -> torch.Tensor:
    """Random values (never zeros): normal floats, or integers in [-100, 100)."""
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=gen, dtype=torch.float64)
    else:
        t = torch.randint(-100, 100, shape, generator=gen, dtype=torch.int64)
    return t.to(dtype=dtype, device=device)


def make(shape, dtype, device, layout: str, gen: torch.Generator) -> torch.Tensor:
    """A random tensor of logical `shape` laid out as `layout`."""
    shape = tuple(shape)
    if layout == "contiguous" or len(shape) < 2:
        return random(shape, dtype, device, gen)
    if layout == "transposed":  # every dimension reversed
        return random(shape[::-1], dtype, device, gen).permute(*reversed(range(len(shape))))
    if layout == "sliced":  # every other element of the last dimension
        big = random((*shape[:-1], 2 * shape[-1]), dtype, device, gen)
        return big[..., ::2]
    if layout == "offset":  # contiguous, storage offset of one element (misaligned)
        n = 1
        for s in shape:
            n *= s
        return random((n + 1,), dtype, device, gen)[1:].view(shape)
    if layout == "expanded":  # stride 0 in the first dimension
        return random((1, *shape[1:]), dtype, device, gen).expand(shape)
    raise ValueError(layout)


def poison_allocator(like: torch.Tensor) -> None:
    """Frees a NaN-filled block of `like`'s size, so that the next allocation
    of that size (the op's output, through torch's caching allocator) starts
    out as NaN: an element the kernel never writes stays NaN."""
    if like.dtype.is_floating_point and like.numel() > 0:
        torch.full(like.shape, float("nan"), dtype=like.dtype, device=like.device)


def close(actual: torch.Tensor, expected: torch.Tensor, **kw) -> None:
    """assert_close, after checking that every element was written (no NaN)."""
    if actual.dtype.is_floating_point:
        assert not torch.isnan(actual).any(), "an output element was never written"
    torch.testing.assert_close(actual, expected, **kw)


def build_folder(tmp_path_factory) -> Path:
    """Where the legacy tests build their fixtures: $KERNFORGE_TEST_BUILDS
    when set, kept across test runs (`nox -s sanitize` builds them there
    before the sanitizer runs the same tests; a fixture whose sources
    changed needs the folder emptied), else this run's temporary folder, the
    same for all its pytest-xdist workers (each worker's own is
    <run>/popen-gwN)."""
    if os.environ.get("KERNFORGE_TEST_BUILDS"):
        folder = Path(os.environ["KERNFORGE_TEST_BUILDS"]).resolve()  # sources' paths are absolute
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def built_once(folder: Path):
    """`folder` (made if missing), held under a lock file beside it while the
    block runs, for an extension the block builds into it: the first
    pytest-xdist worker to get there builds, the others wait and find the
    build done (ninja up to date, or the block's own check), so a fixture
    compiles once a run, not once a worker."""
    with open(folder.with_name(folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        folder.mkdir(exist_ok=True)
        yield folder


def built_extension(tmp_path_factory, name: str, headers: list, sources: list, with_cuda: bool):
    """A legacy test fixture: `create_extension(name, headers, sources)` built
    once a run into build_folder()/name (built_once), imported as
    fixture_<name>."""
    from kernforge_legacy import ffi

    with built_once(build_folder(tmp_path_factory) / name) as root, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TORCH_EXTENSIONS_DIR", str(root / "cache"))
        ext = ffi.create_extension(
            name,
            headers=headers,
            sources=sources,
            with_cuda=with_cuda,
            relative_to=str(root / "build.py"),
            verbose=False,
        )
        package = ext.build()
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", package / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
