"""``create_extension``: the 2017 ``torch.utils.ffi`` entry point, on modern PyTorch.

A legacy build script changes one line::

    from torch.utils.ffi import create_extension        # before
    from kernforge_legacy.ffi import create_extension   # after

and the rest works as it did: ``create_extension(name, headers, sources, ...)``
returns an object whose ``.build()`` compiles the C, C++ and CUDA sources (and
``extra_objects``) with ninja against the TH/THC compatibility headers of
:func:`include_dir`, into the package layout the old one made (``_ext.my_lib``
becomes ``_ext/my_lib/__init__.py`` and ``_ext/my_lib/_my_lib.so`` next to the
build script). ``from _ext import my_lib`` then gives the header's functions;
they take torch tensors, storages, ints and floats, and return the C
function's int (or float, or bool), or the tensor or storage it made.

How: each prototype of the headers becomes a torch operator in a namespace of
the extension's own, registered through PyTorch's stable C ABI, so an
extension built once loads on every torch from 2.10 on, with any Python. The
op checks each tensor against its C parameter type (``THFloatTensor*`` takes a
float32 CPU tensor, ``THCudaLongTensor*`` an int64 CUDA tensor, ...) and
passes it on as it is (its strides and storage offset too); the C function
works on the caller's tensor, so a resize in C is seen in Python.

This module imports nothing from its package: ``setup.py`` loads it by path.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import dataclasses
import fcntl
import functools
import hashlib
import importlib.util
import keyword
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ArgumentOverflowError",
    "ArgumentTypeError",
    "BuildError",
    "Extension",
    "Param",
    "Prototype",
    "build_py",
    "create_extension",
    "include_dir",
    "load_runtime",
    "runtime_library",
]

_HERE = Path(__file__).resolve().parent

# The stable ABI target, as kernforge-core's: torch 2.10.
TORCH_TARGET_VERSION = "0x020a000000000000"

# The OpenMP runtime's functions, which code compiled with -fopenmp calls (gcc's; OpenACC's).
_OPENMP_RUNTIME = ("GOMP_", "omp_", "GOACC_")

# Every compiler's flags but nvcc's, besides the defines and include folders.
_COMMON_FLAGS = ("-O3", "-fPIC", "-fvisibility=hidden")

# C++ standards below 17, which nvcc's flags cannot take (CUDA 13's thrust and CUB need 17).
_CXX_BELOW_17 = re.compile(r"-std=(c|gnu)\+\+(98|03|0x|11|1y|14)")

# Architectures a CUDA build embeds when TORCH_CUDA_ARCH_LIST is unset and no GPU is visible.
DEFAULT_CUDA_ARCH_LIST = "8.0;9.0;10.0;12.0+PTX"


def include_dir() -> str:
    """The folder with ``TH/TH.h``, ``THC/THC.h`` and ``caffe/cuda_macros.h``
    (add it with ``-I`` when a Makefile compiles kernels that include them)."""
    return str(_HERE / "include")


class BuildError(RuntimeError):
    """The compiler or linker failed; the message carries their output."""


# The TH/THC runtime (runtime/TH*.cpp; THC*.cpp and *.cu in a CUDA build),
# one shared library that every extension links, as 2017 extensions linked
# torch's own TH and THC: built once, with the package (kernforge_legacy/lib/)
# or, where the package has none that fits, into the build root on first use.
# A CUDA build serves CPU extensions too.
RUNTIME_LIBS = {False: "libkernforge_legacy_th.so", True: "libkernforge_legacy_thc.so"}

# The runtime calls that nvcc before CUDA 9.2 compiled each kernel launch into;
# an object of that age (2017 repositories shipped their make.sh's .cu.o)
# cannot link against today's CUDA runtime.
_OLD_NVCC_LAUNCH = ("cudaConfigureCall", "cudaSetupArgument", "cudaLaunch")


def runtime_library(with_cuda: bool = False) -> Path:
    """The runtime library an extension links: the package's own CUDA build
    for any extension, else its CPU build for a CPU extension, else one
    built now (once; ninja keeps it up to date) into the build root."""
    packaged = _HERE / "lib"
    for cuda in (True, False) if not with_cuda else (True,):
        if (packaged / RUNTIME_LIBS[cuda]).exists():
            return packaged / RUNTIME_LIBS[cuda]
    return build_runtime(with_cuda)


_loaded_runtimes: dict[str, ctypes.CDLL] = {}


def load_runtime(with_cuda: bool = False) -> Path:
    """Loads the runtime library (once a process), before an extension that
    links it: the extension's dependency then resolves to this copy, whatever
    its run path says."""
    path = runtime_library(with_cuda)
    if str(path) not in _loaded_runtimes:
        _loaded_runtimes[str(path)] = ctypes.CDLL(str(path))
    return path


def build_runtime(with_cuda: bool, into: str | os.PathLike | None = None, verbose: bool = False) -> Path:
    """Compiles the runtime library (ninja: only what changed) in the build
    root, and copies it into the folder `into` when given. Returns its path."""
    torch_root = _torch_root()
    key = hashlib.sha1(f"{torch_root}|{_HERE}".encode()).hexdigest()[:10]
    build_dir = _build_root() / f"runtime-{'cuda' if with_cuda else 'cpu'}-{key}"
    lib = RUNTIME_LIBS[with_cuda]
    with _exclusive(build_dir):
        _write_if_changed(build_dir / "build.ninja", _runtime_ninja(with_cuda, lib))
        _run_ninja(build_dir, "the kernforge-legacy runtime", verbose)
    if into is None:
        return build_dir / lib
    Path(into).mkdir(parents=True, exist_ok=True)
    target = Path(into) / lib
    tmp = target.with_name(f".{lib}.tmp")
    shutil.copyfile(build_dir / lib, tmp)
    os.replace(tmp, target)
    return target


def _runtime_sources(with_cuda: bool) -> list[Path]:
    runtime = _HERE / "runtime"
    sources = sorted(p for p in runtime.glob("TH*.cpp") if with_cuda or not p.name.startswith("THC"))
    return sources + (sorted(runtime.glob("*.cu")) if with_cuda else [])


def _runtime_ninja(with_cuda: bool, lib: str) -> str:
    flags = _toolchain_flags(with_cuda)
    cxxflags = ["-std=c++17", "-O3", "-fPIC", *flags["defines"], *flags["includes"], *flags["cxx"]]
    ldflags = [
        "-shared",
        f"-Wl,-soname,{lib}",
        f"-Wl,--version-script={_HERE / 'runtime' / 'runtime.map'}",
        *flags["link"],
    ]
    rules = _ninja_header(cxxflags=cxxflags, ldflags=ldflags, nvccflags=flags["nvcc"], with_cuda=with_cuda)
    objects = []
    for src in _runtime_sources(with_cuda):
        obj = f"obj/{src.stem}{'_cu' if src.suffix == '.cu' else ''}.o"
        objects.append(obj)
        rules.append(f"build {obj}: {'nvcc' if src.suffix == '.cu' else 'cxx'} {_esc(src)}")
    # the version script is an input too: a change to what it exports relinks
    rules.append(f"build {lib}: link {' '.join(objects)} | {_esc(_HERE / 'runtime' / 'runtime.map')}")
    rules.append(f"default {lib}")
    return "\n".join(rules) + "\n"


def _toolchain_flags(with_cuda: bool) -> dict[str, list[str]]:
    """What the runtime and every extension compile and link with: the
    headers' folders, torch's, CUDA's; the stable ABI target; torch's and
    CUDA's libraries."""
    torch_root = _torch_root()
    inc = Path(include_dir())
    # the folders too, for the old `#include "TH.h"` / `"THCTensor.h"` / `"THCUNN.h"`
    includes = [f"-I{inc / d}" for d in ("", "TH", "THC", "THCUNN")]
    defines: list[str] = []
    cxx = [f"-I{torch_root / 'include'}", f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}"]
    link = ["-Wl,--no-undefined", f"-L{torch_root / 'lib'}", "-lc10", "-ltorch_cpu", "-ltorch"]
    nvcc: list[str] = []
    if with_cuda:
        cuda_home = _cuda_home()
        defines.append("-DKERNFORGE_LEGACY_WITH_CUDA")
        libraries_include, libraries_link = _thc_libraries(cuda_home)
        includes += [f"-I{cuda_home / 'include'}", *libraries_include]
        cxx.append("-DUSE_CUDA")
        link += ["-lc10_cuda", "-ltorch_cuda", f"-L{cuda_home / 'lib64'}", "-lcudart", *libraries_link]
        nvcc = [
            "-std=c++17", "-O3", "-Xcompiler=-fPIC", *defines, *includes,
            # 2017 kernels call what CUDA 13 and sm_70 took away, without including THC.h
            "-include", str(_HERE / "include" / "THC" / "kfl_removed_cuda.h"),
            *_cuda_arch_flags(),
        ]  # fmt: skip
    return {"defines": defines, "includes": includes, "cxx": cxx, "link": [*link, "-lm"], "nvcc": nvcc}


def _ninja_header(*, cxxflags, ldflags, nvccflags, with_cuda, cflags=(), own_cxxflags=()) -> list[str]:
    """The variables and rules of a build.ninja (cc, cxx, own_cxx, nvcc, link)."""
    return [
        "ninja_required_version = 1.3",
        f"cc = {os.environ.get('CC', 'cc')}",
        f"cxx = {os.environ.get('CXX', 'c++')}",
        f"nvcc = {_nvcc() if with_cuda else ''}",
        f"cflags = {_join(cflags)}",
        f"cxxflags = {_join(cxxflags)}",
        f"own_cxxflags = {_join(own_cxxflags)}",
        f"nvccflags = {_join(nvccflags)}",
        f"ldflags = {_join(ldflags)}",
        "",
        "rule cc",
        "  command = $cc -MMD -MF $out.d $cflags -c $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "rule cxx",
        "  command = $cxx -MMD -MF $out.d $cxxflags -c $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "rule own_cxx",
        "  command = $cxx -MMD -MF $out.d $own_cxxflags -c $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "rule nvcc",
        "  command = $nvcc -MD -MF $out.d $nvccflags -c $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "rule link",
        "  command = $cxx $in $archives $ldflags -o $out",
        "",
    ]


class ArgumentTypeError(TypeError, RuntimeError):
    """An extension function called with an argument of the wrong type: a
    tensor of another dtype or device than its C parameter takes, or a Python
    value where a tensor goes. A TypeError, which the cffi wrappers raised
    then and 2018 code caught (DCNv2's test.py falls back from its float64
    gradient check on one), and a RuntimeError, which torch ops raise."""


class ArgumentOverflowError(OverflowError, RuntimeError):
    """An extension function called with an int that its C parameter cannot
    hold: an OverflowError, as cffi raised, and a RuntimeError."""


_ARGUMENT_ERRORS = (
    (re.compile(r"^\w+: argument \d+ \([^)]*\): expected a "), ArgumentTypeError),
    (re.compile(r"^\w+: argument \d+ \([^)]*\): -?\d+ does not fit"), ArgumentOverflowError),
)

# torch's schema parser, on arguments of the wrong kind or number; its text
# names the op by its generated namespace, which legacy_function replaces.
_WRONG_KIND = re.compile(
    r"Expected a value of type '([^']*)' for argument '(\w+)' but instead found type '([^']*)'"
)
_WRONG_COUNT = re.compile(r"expected at most \d+ argument\(s\)|is missing value for argument")
_KINDS = {"Optional[Tensor]": "a tensor (or None for NULL)", "int": "an int", "float": "a number"}


def _parser_error(name: str, params, args, kwargs, text: str) -> ArgumentTypeError | None:
    """The legacy function's own words for a schema parser error, or None."""
    names = [p.name for p in params]
    signature = f"{name}({', '.join(names)})"
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        return ArgumentTypeError(f"{signature} got an unexpected keyword argument {unknown[0]!r}")
    wrong = _WRONG_KIND.search(text)
    if wrong:
        kind, arg, got = wrong.groups()
        where = f"argument {names.index(arg) + 1} ({arg})" if arg in names else f"argument {arg}"
        return ArgumentTypeError(f"{name}: {where}: expected {_KINDS.get(kind, kind)}, got {got}")
    if _WRONG_COUNT.search(text):
        given = len(args) + len(kwargs)
        return ArgumentTypeError(f"{signature} takes {len(names)} arguments, got {given}")
    return None


@functools.cache
def _cffi_backend():
    """cffi's module, imported when the first cffi value comes and kept: at
    exit an import fails, and cffi's ffi.gc destructors call extension
    functions then (SparseConvNet frees its metadata so)."""
    import _cffi_backend

    return _cffi_backend


def _cffi_null(value) -> bool:
    """Whether `value` is cffi's NULL (`ffi.NULL`, or a null pointer of any
    type), which 2017 code passed for an absent tensor (SparseConvNet's
    `nullptr`) where None is passed now: it passes NULL, as None does."""
    if type(value).__module__ != "_cffi_backend":
        return False
    cffi = _cffi_backend()
    if cffi.typeof(value).kind != "pointer":
        return False
    return int(cffi.cast(cffi.new_primitive_type("uintptr_t"), value)) == 0


class _CffiLib:
    """An extension module's `lib`, as cffi's module had one: its C functions
    by name, each the module's Python function (dir() lists them)."""

    def __init__(self, functions: dict):
        self.__dict__.update(functions)

    def __dir__(self):
        return sorted(self.__dict__)


def _cffi_ffi():
    """An extension module's `ffi`: a cffi FFI (`ffi.new("int *")`,
    `ffi.NULL`) where cffi is installed, else None."""
    try:
        import cffi
    except ImportError:
        return None
    return cffi.FFI()


def _wrap_function(function, ffi):
    """torch.utils.ffi's wrapper of a function of a cffi module's `lib`, for
    packages that wrapped the module themselves (`locals[name] =
    _wrap_function(getattr(lib, name), ffi)`): the functions of `lib` take
    tensors already, and are returned as they are."""
    del ffi
    return function


def _module_of_library(spec, path: str, source: str):
    """The Python module of an extension library setuptools built (its
    create slot calls this with the import's spec): the wrapper module's
    source run with the library as its __file__."""
    import types

    module = types.ModuleType(spec.name)
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module


class Pointer:
    """A `void *` an extension function returned: an object of the C code's
    own (pytorch-ctc's decoders and scorers), passed back to its functions as
    cffi's pointer was. False and equal to None and cffi's NULL when NULL."""

    __slots__ = ("address",)

    def __init__(self, address: int):
        self.address = address

    def __int__(self) -> int:
        return self.address

    def __bool__(self) -> bool:
        return self.address != 0

    def __eq__(self, other) -> bool:
        if isinstance(other, Pointer):
            return self.address == other.address
        if other is None or _cffi_null(other):
            return self.address == 0
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.address)

    def __repr__(self) -> str:
        return f"<kernforge_legacy.ffi.Pointer 'void *' 0x{self.address:x}>"


def _address(name: str, i: int, param: str, c_type: str, value) -> int:
    """The address a pointer parameter (`c_type *`) gets: None is NULL; else
    the memory of a cffi pointer or array (`ffi.new("int *")`, as 2017 code
    passed to the cffi wrapper), or of a ctypes number, array or pointer, of
    the same kind and size (any, for `void *`). A pointer to a pointer
    (`void **m`, c_type "void *") takes memory that holds pointers:
    SparseConvNet's `ffi.new("void *[1]")`, ctypes' `c_void_p` or an array of
    pointers."""
    if value is None:
        return 0
    if isinstance(value, Pointer):  # what a C function of the extension returned, passed back
        return value.address
    got, pointee, address = type(value).__name__, None, None
    variable = False  # a ctypes c_void_p or c_char_p: for `void *`, its value or its address?
    if type(value).__module__ == "_cffi_backend":  # cffi's CData; its module is loaded if one exists
        cffi = _cffi_backend()
        ctype = cffi.typeof(value)
        got = f"cffi {ctype.cname}"
        if ctype.kind in ("pointer", "array"):
            address = int(cffi.cast(cffi.new_primitive_type("uintptr_t"), value))
            if ctype.item.kind == "primitive":
                kind = "float" if ctype.item.cname in ("float", "double", "long double") else "int"
                pointee = (kind, cffi.sizeof(ctype.item))
            elif ctype.item.kind == "pointer":
                pointee = ("pointer", cffi.sizeof(ctype.item))
    elif isinstance(value, (ctypes.Array, ctypes._Pointer, ctypes._SimpleCData)):
        item = type(value) if isinstance(value, ctypes._SimpleCData) else value._type_
        if isinstance(value, ctypes._Pointer):
            address = ctypes.cast(value, ctypes.c_void_p).value or 0
        else:
            address = ctypes.addressof(value)
            variable = isinstance(value, ctypes._SimpleCData) and item._type_ in "zZPO"
        if isinstance(item, type) and issubclass(item, ctypes._SimpleCData) and item._type_ not in "zZPO":
            pointee = ("float" if item._type_ in "fdg" else "int", ctypes.sizeof(item))
        elif isinstance(item, type) and (issubclass(item, ctypes._Pointer) or item._type_ in "zZP"):
            pointee = ("pointer", ctypes.sizeof(item))
    if c_type.endswith("*"):
        expected, what = (
            ("pointer", ctypes.sizeof(ctypes.c_void_p)),
            "ffi.new('void *[1]'), a ctypes c_void_p",
        )
    else:
        expected, what = _POINTEE_SIZES.get(c_type), f"ffi.new('{c_type} *'), a ctypes {c_type}"
    if address is not None and (pointee == expected or (c_type == "void" and not variable)):
        return address
    if c_type == "void":
        raise ArgumentTypeError(
            f"{name}: argument {i + 1} ({param}, void*): expected a tensor (passed as its TH handle), "
            f"cffi's or ctypes' memory, or None for NULL, got {got}"
        )
    if c_type in _BYTE_TYPES:
        what = f"{what}, bytes for a C string"
        got += " (a C string is bytes: s.encode())" if isinstance(value, str) else ""
    raise ArgumentTypeError(
        f"{name}: argument {i + 1} ({param}, {c_type}*): expected a pointer to {c_type} (cffi's "
        f"{what} or an array of them) or None for NULL, got {got}"
    )


def _c_array(name: str, i: int, param: str, c_type: str, values) -> ctypes.Array:
    """`values` as a ctypes array of `c_type`, each checked to fit, as cffi
    made a temporary array of a list passed to a pointer parameter."""
    array = (_C_NUMBERS[c_type] * len(values))()
    for j, v in enumerate(values):
        where = f"{name}: argument {i + 1} ({param}, {c_type}*): item {j} of the list"
        kinds = (int, float) if c_type in _FLOAT_TYPES else (int,)
        if not isinstance(v, kinds) or (isinstance(v, bool) and c_type not in _BOOL_TYPES):
            raise ArgumentTypeError(f"{where}: expected a number of the C type, got {type(v).__name__}")
        array[j] = v
        if c_type not in _FLOAT_TYPES and array[j] != v:
            raise ArgumentOverflowError(f"{where}: {v} does not fit")
    return array


def legacy_function(
    op,
    name: str,
    storages: dict[int, str] | None = None,
    returns_storage: bool = False,
    pointers: dict[int, str] | None = None,
    returns_pointer: bool = False,
    variadic: bool = False,
):
    """The Python function an extension module exports for the op of the C
    function `name` (the op is its ``.op``): the op, with its argument errors raised as
    :class:`ArgumentTypeError` or :class:`ArgumentOverflowError` (each also a
    RuntimeError); what the C code raises (THError, ...) passes unchanged.
    ``storages`` maps the index of each storage parameter (``THFloatStorage *``)
    to its C type: a torch storage passed there reaches the op as a 1-D tensor
    over all of it (a ``TypedStorage`` of its dtype, an ``UntypedStorage``'s
    bytes as the C type's elements). With ``returns_storage`` the C function returns a storage,
    which comes back as a ``torch.TypedStorage``, as the old ffi returned one. ``pointers``
    maps the index of each pointer parameter (``int *``) to the C type it points to: the op
    takes the address of the cffi or ctypes memory passed there (:func:`_address`); a
    ``void *`` also takes a tensor, as its handle (the op's last argument lists them). With
    ``returns_pointer`` the C function returns a ``void *``, which comes back as a
    :class:`Pointer`. A ``variadic`` C function (its parameters end in ``...``) takes
    tensors after its parameters, each passed as its handle (None and cffi's NULL: NULL),
    as cffi passed the tensors torch.utils.ffi gave it."""
    import torch

    storages = storages or {}
    pointers = pointers or {}
    params = op._schema.arguments
    position = {p.name: i for i, p in enumerate(params)}
    # a `void *` takes a tensor too: the op's last argument is the list of those passed
    takes_void_tensors = "void" in pointers.values()
    if takes_void_tensors:
        params = params[:-1]
        del position[_VOID_TENSORS]
    if variadic:  # the op's last argument is the list of them, not a parameter of the C function
        params = params[:-1]
        del position[_VARIADIC]

    def as_variadic(args):
        fixed = args[: len(params)]
        rest = [None if _cffi_null(a) else a for a in args[len(params) :]]
        if len(rest) > _VARIADIC_COUNTS[-1]:
            raise ArgumentTypeError(
                f"{name}: at most {_VARIADIC_COUNTS[-1]} tensors go to its ..., got {len(rest)}"
            )
        for j, value in enumerate(rest):
            if value is not None and not isinstance(value, torch.Tensor):
                raise ArgumentTypeError(
                    f"{name}: argument {len(params) + j + 1} (...): expected a tensor (or None for "
                    f"NULL), passed as its TH handle, got {type(value).__name__}"
                )
        return (*fixed, rest) if len(args) >= len(params) else args

    def as_tensor(i, value):
        if value is None or i not in storages:
            return value
        if isinstance(value, torch.TypedStorage):
            return torch.empty(0, dtype=value.dtype, device=value.device).set_(value._untyped_storage)
        if isinstance(value, torch.UntypedStorage):  # its bytes as the C type's elements
            dtype = getattr(torch, _STORAGE_DTYPES[storages[i]])
            size = value.nbytes() // dtype.itemsize
            return torch.empty(0, dtype=dtype, device=value.device).set_(value, 0, (size,))
        raise ArgumentTypeError(
            f"{name}: argument {i + 1} ({params[i].name}, {storages[i]}*): expected a storage "
            f"(tensor.untyped_storage(), torch.FloatStorage(...)), got {type(value).__name__}"
        )

    def as_argument(i, value, keep, void_tensors):
        if _cffi_null(value):
            value = None
        if i in pointers:
            if pointers[i] == "void" and isinstance(value, torch.Tensor):
                # its handle, of its own type, as torch.utils.ffi gave cffi a tensor for a
                # `void *` (fairseq-py's TemporalConvolutionTBC): -(k + 1) names the k-th
                void_tensors.append(value)
                return -len(void_tensors)
            if isinstance(value, bytes) and pointers[i] in _BYTE_TYPES:
                # a C string, as cffi passed bytes to a char * (torchaudio's file names):
                # a NUL-terminated copy, alive for the call
                value = ctypes.create_string_buffer(value)
                keep.append(value)
            elif isinstance(value, str) and pointers[i] == "wchar_t":
                # a wide C string, as cffi passed a str to a wchar_t * (pytorch-ctc's labels)
                value = ctypes.create_unicode_buffer(value)
                keep.append(value)
            elif isinstance(value, (list, tuple)) and pointers[i] in _C_NUMBERS.keys() - {"char", "wchar_t"}:
                # numbers, as cffi passed a list to an `int *`: a C array of them for the call
                value = _c_array(name, i, params[i].name, pointers[i], value)
                keep.append(value)
            return _address(name, i, params[i].name, pointers[i], value)
        return as_tensor(i, value)

    def call(*args, **kwargs):
        keep = []  # the C strings made of bytes, until the C function has returned
        void_tensors = []  # the tensors passed to `void *` parameters
        if variadic:
            args = as_variadic(args)
        args = tuple(as_argument(i, a, keep, void_tensors) for i, a in enumerate(args))
        kwargs = {k: as_argument(position.get(k, -1), v, keep, void_tensors) for k, v in kwargs.items()}
        # the empty tensors (not the storage arguments), which C code resizes as
        # outputs: after the call, one it grew in place is checked for another
        # tensor over its storage
        given = [*enumerate(args), *((position[k], v) for k, v in kwargs.items() if k in position)]
        empty = [
            (i, t, t.shape, _storage_of(t))
            for i, t in given
            if isinstance(t, torch.Tensor) and i not in storages and t.numel() == 0
        ]
        try:
            result = op(*args, **kwargs, **({_VOID_TENSORS: void_tensors} if takes_void_tensors else {}))
        except RuntimeError as e:
            text = str(e)
            too_big = _beyond_int64(params, args, kwargs) if "found type 'int'" in text else None
            if too_big:  # torch's parser says "expected int, found int"
                i, value = too_big
                raise ArgumentOverflowError(
                    f"{name}: argument {i + 1} ({params[i].name}): {value} does not fit in int64"
                ) from None
            clear = _parser_error(name, params, args, kwargs, text)
            if clear is not None:
                raise clear from None
            for pattern, error in _ARGUMENT_ERRORS:
                if pattern.search(text):
                    raise error(text) from None
            raise
        for i, t, shape, storage in empty:
            if t.shape != shape:
                _warn_if_shared(name, i, params[i].name, shape, storage, t)
        if returns_storage:
            return torch.TypedStorage(
                wrap_storage=result.untyped_storage(), dtype=result.dtype, _internal=True
            )
        if returns_pointer:
            return Pointer(result)
        return result

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{op._schema}"
    call.op = op  # the torch op itself (opcheck, torch.compile, its schema)
    return call


def _storage_of(t) -> tuple[int, int]:
    """(the storage's identity, its size in bytes)."""
    storage = t.untyped_storage()
    return storage._cdata, storage.nbytes()


def _warn_if_shared(name: str, i: int, param: str, shape, storage: tuple[int, int], t) -> None:
    """A C function resized argument i, an empty tensor: where it grew the
    storage in place and another tensor shares that storage (more than t and the storage
    object asked for here hold it), warn that the other keeps its old size.
    2017 code passed `v.data` to be resized (FlowNet2's correlation backward:
    `grad = Variable(x.new())`, then `grad.data`); `v.data` was then v's own
    tensor, and today it is a second tensor over v's storage. A view made in
    place (a transpose, a narrow, a set to another tensor's storage) grows
    no storage of its own, and is left alone."""
    import torch

    use_count = getattr(torch._C, "_storage_Use_Count", None)
    now = t.untyped_storage()
    if use_count is None or now._cdata != storage[0] or now.nbytes() <= storage[1]:
        return
    if use_count(now._cdata) <= 2:
        return
    warnings.warn(
        f"{name}: argument {i + 1} ({param}) was resized from {list(shape)} to {list(t.shape)}, "
        "and another tensor over the same storage keeps its old size. If you passed v.data, pass v "
        "itself: in 2017 v.data was v's own tensor, today it is a second tensor over v's storage.",
        stacklevel=3,
    )


def _beyond_int64(params, args, kwargs) -> tuple[int, int] | None:
    """(index, value) of the first int argument beyond int64, which the op takes ints as."""
    position = {p.name: i for i, p in enumerate(params)}
    given = [*enumerate(args), *((position.get(k, -1), v) for k, v in kwargs.items())]
    for i, value in given:
        if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
            return i, value
    return None


def unwrapped_function(name: str, reason: str):
    """The Python function an extension module exports for a C function whose
    prototype cannot be called from Python (a pointer to a tensor pointer or a struct, a
    pointer returned): the extension builds, as cffi built it, and calling it raises
    TypeError with the reason."""

    def call(*args, **kwargs):
        raise TypeError(f"{reason}; kernforge_legacy built the extension without a Python function for it")

    call.__name__ = call.__qualname__ = name
    call.__doc__ = reason
    return call


class _Unwrappable(ValueError):
    """A prototype that cannot be called from Python (its parameters or return)."""


# The C number types an extension function may take, return, or take a pointer
# to, as ctypes spells them (for their sizes).
_C_NUMBERS = {
    "int": ctypes.c_int, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint, "signed": ctypes.c_int,
    "signed int": ctypes.c_int, "long": ctypes.c_long, "long int": ctypes.c_long,
    "unsigned long": ctypes.c_ulong, "unsigned long int": ctypes.c_ulong, "long long": ctypes.c_longlong,
    "unsigned long long": ctypes.c_ulonglong, "short": ctypes.c_short, "unsigned short": ctypes.c_ushort,
    "char": ctypes.c_char, "signed char": ctypes.c_byte, "unsigned char": ctypes.c_ubyte,
    "size_t": ctypes.c_size_t, "ptrdiff_t": ctypes.c_ssize_t, "int8_t": ctypes.c_int8,
    "int16_t": ctypes.c_int16, "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64,
    "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64, "float": ctypes.c_float, "double": ctypes.c_double,
    "bool": ctypes.c_bool, "_Bool": ctypes.c_bool, "wchar_t": ctypes.c_wchar,
}  # fmt: skip
_FLOAT_TYPES = {"float", "double"}
_BOOL_TYPES = {"bool", "_Bool"}
_INT_TYPES = set(_C_NUMBERS) - _FLOAT_TYPES - _BOOL_TYPES
_BYTE_TYPES = {"char", "signed char", "unsigned char"}  # a pointer to one takes bytes: a C string
# What a pointer parameter (int *device, float *out) may point to: (kind, size
# in bytes). cffi's or ctypes' memory of the same kind and size is passed.
_POINTEE_SIZES = {
    name: ("float" if name in _FLOAT_TYPES else "int", ctypes.sizeof(ct)) for name, ct in _C_NUMBERS.items()
}
_TYPE_WORDS = {"unsigned", "signed", "int", "long", "short", "char", "float", "double", "void", *_BOOL_TYPES}
_CPU_TENSORS = {
    "THByteTensor": "uint8", "THCharTensor": "int8", "THShortTensor": "int16", "THIntTensor": "int32",
    "THLongTensor": "int64", "THFloatTensor": "float32", "THDoubleTensor": "float64",
    "THHalfTensor": "float16", "THBFloat16Tensor": "bfloat16",
    "THTensor": "float32",  # torch 0.4.1's name, written outside generic files (TH/TH.h)
}  # fmt: skip
_CUDA_TENSORS = {
    "THCudaByteTensor": "uint8", "THCudaCharTensor": "int8", "THCudaShortTensor": "int16",
    "THCudaIntTensor": "int32", "THCudaLongTensor": "int64", "THCudaTensor": "float32",
    "THCudaDoubleTensor": "float64", "THCudaHalfTensor": "float16", "THCudaBFloat16Tensor": "bfloat16",
    "THCTensor": "float32",
}  # fmt: skip
# Each tensor type's storage (THFloatStorage, THCudaStorage, ...), of its dtype.
_CPU_STORAGES = {t.replace("Tensor", "Storage"): d for t, d in _CPU_TENSORS.items()}
_CUDA_STORAGES = {t.replace("Tensor", "Storage"): d for t, d in _CUDA_TENSORS.items()}
_CPU_HANDLES = {**_CPU_TENSORS, **_CPU_STORAGES}
_CUDA_HANDLES = {**_CUDA_TENSORS, **_CUDA_STORAGES}
_STORAGE_DTYPES = {**_CPU_STORAGES, **_CUDA_STORAGES}
# The setuptools Extension keywords the old create_extension passed on (through
# cffi's set_source). The last four change nothing in a Linux build: the
# library's symbols are not exported by list, SWIG is not involved, a failed
# build is always an error, and the ops do not use Python's C API at all.
_BUILD_KWARGS = {
    "define_macros", "undef_macros", "include_dirs", "extra_objects", "extra_compile_args",
    "extra_link_args", "libraries", "library_dirs", "runtime_library_dirs", "depends", "language",
    "export_symbols", "swig_opts", "optional", "py_limited_api", "source_extension",
}  # fmt: skip
# cffi's set_source(..., source_extension=...): the file extension its wrapper
# source was compiled as, C's or one of C++'s
_SOURCE_EXTENSIONS = (".c", ".cpp", ".cc", ".cxx")


# The words torch's operator schemas cannot take as an argument's name (its
# parser's keywords), which C code may use as a parameter's: `THFloatTensor *in`.
_SCHEMA_KEYWORDS = {
    "False", "None", "True", "and", "as", "assert", "break", "class", "continue", "def", "del",
    "elif", "else", "for", "global", "if", "import", "in", "is", "not", "or", "pass", "raise",
    "return", "while", "with",
}  # fmt: skip


@dataclass(frozen=True)
class Param:
    c_type: str  # as written, without const: "THFloatTensor", "int", "unsigned long"
    name: str  # the C name, or argN when the prototype has none
    is_tensor: bool  # a handle: a tensor or a storage (passed as a tensor over all of it)
    is_const: bool
    # a pointer to a C number (int *, float *, void *) or to a pointer (void **: c_type "void *"): its address
    is_pointer: bool = False

    @property
    def is_storage(self) -> bool:
        return self.is_tensor and self.c_type.endswith("Storage")

    @property
    def schema_type(self) -> str:
        if self.is_tensor:  # None passes NULL, as cffi passed it for any pointer
            return "Tensor?"
        if self.is_pointer:  # the address of cffi's or ctypes' memory; 0 is NULL
            return "int"
        if self.c_type in _FLOAT_TYPES:
            return "float"
        return "bool" if self.c_type in _BOOL_TYPES else "int"

    @property
    def c_decl(self) -> str:
        star = " *" if self.is_tensor or self.is_pointer else ""
        return f"{'const ' if self.is_const else ''}{self.c_type}{star}"


@dataclass(frozen=True)
class Prototype:
    name: str
    returns: str  # "int", "float", "void", ... (_INT/_FLOAT/_BOOL_TYPES or void), or "THFloatTensor *", ...
    params: tuple[Param, ...]
    header: str
    variadic: bool = False  # a `...` after the parameters: tensors, each as its handle

    @property
    def returned_handle(self) -> str | None:
        """The tensor or storage type the C function returns a new one of
        (TH's new reference, the caller's), or None."""
        handle = self.returns[:-2] if self.returns.endswith(" *") else None
        return handle if handle in _CPU_HANDLES or handle in _CUDA_HANDLES else None

    @property
    def returns_pointer(self) -> bool:
        """Whether the C function returns a `void *` (an opaque object of its
        own, which Python passes back: a :class:`Pointer`)."""
        return self.returns == "void *"

    @property
    def takes_void_tensors(self) -> bool:
        """Whether a parameter is a `void *`, which takes a tensor too (as its
        TH handle: torch.utils.ffi gave cffi each tensor as its own type's
        pointer, which a `void *` took; fairseq-py's TemporalConvolutionTBC)."""
        return any(p.is_pointer and p.c_type == "void" for p in self.params)

    @property
    def schema(self) -> str:
        """The torch op schema: a tensor the C function may write (not const)
        is a mutable alias, each in its own alias set; every tensor may be
        None (the C function gets NULL)."""
        args = []
        for i, p in enumerate(self.params):
            t = p.schema_type
            if p.is_tensor and not p.is_const:
                t = f"Tensor({_alias_name(i)}!)?"
            args.append(f"{t} {p.name}")
        if self.variadic:  # the C function may write any of them
            args.append(f"Tensor({_alias_name(len(self.params))}!)?[] {_VARIADIC}")
        if self.takes_void_tensors:  # the C function may write any of them
            args.append(f"Tensor({_alias_name(len(self.params) + 1)}!)?[] {_VOID_TENSORS}")
        ret = {"void": "()", **dict.fromkeys(_FLOAT_TYPES, "float"), **dict.fromkeys(_BOOL_TYPES, "bool")}
        ret = "Tensor" if self.returned_handle else ret.get(self.returns, "int")
        return f"{self.name}({', '.join(args)}) -> {ret}"


# The name of a variadic function's last schema argument: the tensors passed
# after its parameters (nv-wavenet's `int infer(..., int implementation, ...)`
# takes its layers' weights so). A C call takes a number of them fixed when
# it is compiled: the generated op calls with the smallest of these counts
# that holds them, the rest NULL, which a function that reads its own count
# of them (va_arg) never reads.
_VARIADIC = "variadic"
_VARIADIC_COUNTS = (8, 32, 128, 512)
# The name of the last schema argument of a function with `void *` parameters:
# the tensors passed to them. Such a parameter's own (int) argument is then
# -(k + 1) for the k-th of them, where else it holds an address, which on
# Linux is never negative, or 0 for NULL.
_VOID_TENSORS = "void_tensors"


def _alias_name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


def parse_header(
    text: str, header: str, with_cuda: bool, skipped: list[tuple[str, str]] | None = None
) -> list[Prototype]:
    """The function prototypes of a header that holds only those (as the old
    ``torch.utils.ffi`` required) and the enums, structs and typedefs they
    use; comments and preprocessor lines are skipped.
    A prototype Python cannot call (a pointer to a tensor pointer or a struct, a pointer
    returned other than a tensor's or a storage's) raises ValueError, or with
    ``skipped`` given is appended to it as (name, reason) and left out."""
    text = _without_comments(text)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    # enums (`typedef enum { CTC, CTC_KENLM } DecodeType;`, `enum Mode {...};`):
    # their names and tags are C's int to the functions that take them
    enums = set()
    for m in re.finditer(r"\benum\s*(\w*)\s*\{[^{}]*\}\s*(\w*)\s*;", text):
        enums.update(n for n in m.groups() if n)
    text = re.sub(r"(?:\btypedef\s+)?\benum\s*\w*\s*\{[^{}]*\}\s*\w*\s*;", ";", text)
    # other typedefs (ORN's `typedef unsigned char uint8;`): a name for a type,
    # written as that type in the declarations after it. A struct's members
    # are dropped, its name stays a type Python cannot pass, and a function
    # pointer's typedef is skipped, so a function taking either is set aside
    text = re.sub(r"\b(struct|union)\s*(\w*)\s*\{[^{}]*\}", lambda s: f"{s[1]} {s[2] or 'unnamed'}", text)
    aliases: dict[str, str] = {}
    protos = []
    for decl in text.split(";"):
        decl = " ".join(decl.split())
        if aliases:
            decl = re.sub(r"\b(?:" + "|".join(aliases) + r")\b", lambda a: aliases[a[0]], decl)
        if not decl:
            continue
        if re.match(r"typedef\b", decl):
            alias = re.fullmatch(r"typedef\s+([\w\s*]+?)\s*(\w+)", decl)
            if alias:
                aliases[alias[2]] = alias[1]
            continue
        if re.fullmatch(r"(?:struct|union) \w+", decl):  # a struct declared, or defined above
            continue
        m = re.fullmatch(
            r"(?:extern\s+)?(?P<ret>[A-Za-z_][\w\s*]*?)\s*(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)",
            decl,
        )
        if not m:
            raise ValueError(f"{header}: cannot read {decl!r} as a function prototype")
        name, ret = m["name"], " ".join(m["ret"].replace("*", " * ").split())
        try:
            ret = _without_enums(" ".join(w for w in ret.split() if w not in ("const", "struct")), enums)
            handle = ret[:-2] if ret.endswith(" *") and ret.count("*") == 1 else None
            if handle in _CUDA_HANDLES and not with_cuda:
                raise ValueError(
                    f"{header}: {name} returns a {handle} *, which needs "
                    "create_extension(..., with_cuda=True)"
                )
            if handle not in _CPU_HANDLES | _CUDA_HANDLES and (
                ret not in ("void", "void *") and ret not in _INT_TYPES | _FLOAT_TYPES | _BOOL_TYPES
            ):
                raise _Unwrappable(
                    f"{header}: {name} returns {ret!r}; an extension function may return void, an "
                    "integer, float, double, bool, a tensor or storage it made (THFloatTensor *, "
                    "THByteStorage *, ...), or a void * of its own"
                )
            raw = m["params"].strip()
            pieces = [] if raw in ("", "void") else [p.strip() for p in raw.split(",")]
            variadic = len(pieces) > 1 and pieces[-1] == "..."
            pieces = pieces[:-1] if variadic else pieces
            params = tuple(
                _parse_param(_without_enums(p, enums), i, name, header, with_cuda)
                for i, p in enumerate(pieces)
            )
        except _Unwrappable as e:
            if skipped is None:
                raise
            skipped.append((name, str(e)))
            continue
        # a C name that is a word of torch's schema language (`in`, `def`, ...) gets a `_`
        params = tuple(
            dataclasses.replace(p, name=p.name + "_") if p.name in _SCHEMA_KEYWORDS else p for p in params
        )
        if len({p.name for p in params} | ({_VARIADIC} if variadic else set())) != len(params) + variadic:
            params = tuple(dataclasses.replace(p, name=f"arg{i}") for i, p in enumerate(params))
        protos.append(Prototype(name, ret, params, header, variadic))
    return protos


def _without_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", " ", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def header_constants(text: str) -> dict[str, int]:
    """The integer constants of a header: its enums' values and its
    `#define NAME <integer expression>` lines, which cffi's module gave
    Python beside the functions (`my_lib.CTC_KENLM`). A value Python cannot
    work out (a macro's other text, a name not defined before) is left out."""
    text = _without_comments(text)
    constants: dict[str, int] = {}
    for m in re.finditer(r"^\s*#\s*define\s+([A-Za-z_]\w*)[ \t]+([^\n]+)$", text, re.M):
        value = _c_integer(m[2], constants)
        if value is not None:
            constants[m[1]] = value
    for body in re.findall(r"\benum\s*\w*\s*\{([^{}]*)\}", text):
        value = -1
        for item in (i.strip() for i in body.split(",")):
            name, _, expr = item.partition("=")
            if not name.strip():
                continue
            value = _c_integer(expr, constants) if expr.strip() else value + 1
            if value is None:  # the rest count from a value not known here
                break
            constants[name.strip()] = value
    return constants


# C's integer operators, as Python's (C's `/` truncates toward zero)
_C_OPERATORS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: int(a / b), ast.Mod: lambda a, b: a - int(a / b) * b,
    ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b, ast.BitOr: lambda a, b: a | b,
    ast.BitAnd: lambda a, b: a & b, ast.BitXor: lambda a, b: a ^ b,
    ast.USub: lambda a: -a, ast.UAdd: lambda a: a, ast.Invert: lambda a: ~a,
}  # fmt: skip


def _c_integer(expr: str, known: dict[str, int]) -> int | None:
    """A C integer constant expression (literals with their U and L
    suffixes, names of `known`, arithmetic), or None."""
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", r"\1", expr.strip())
    expr = re.sub(r"\b0([0-7]+)\b", r"0o\1", expr)  # C's octal
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in known:
            return known[node.id]
        if isinstance(node, ast.UnaryOp) and type(node.op) in _C_OPERATORS:
            return _C_OPERATORS[type(node.op)](value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _C_OPERATORS:
            return _C_OPERATORS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(expr)

    try:
        return value(tree)
    except (ValueError, ZeroDivisionError, TypeError):
        return None


def _without_enums(text: str, enums: set[str]) -> str:
    """A declaration with its enum types (`DecodeType`, `enum Mode`) written
    as C's int, which a C enum is to the ABI (gcc's, for values an int holds)."""
    text = re.sub(r"\benum\s+\w+", "int", text)
    return re.sub(r"\b(?:" + "|".join(map(re.escape, enums)) + r")\b", "int", text) if enums else text


def _parse_param(text: str, index: int, fn: str, header: str, with_cuda: bool) -> Param:
    # an array parameter (`const float w[]`, `int idx[4]`) is a pointer in C
    array = re.fullmatch(r"(.*?)(\w*)\s*\[\s*\w*\s*\]", text)
    tokens = re.findall(r"[A-Za-z_]\w*|\*|\S", f"{array[1]} * {array[2]}" if array else text)
    is_const = "const" in tokens
    tokens = [t for t in tokens if t not in ("const", "volatile", "restrict", "__restrict__", "struct")]
    stars = tokens.count("*")
    unsupported = (
        f"{header}: parameter {index + 1} of {fn} ({text!r}) cannot be passed from Python: an "
        "extension function takes tensor and storage handles (THFloatTensor *, THCudaTensor *, "
        "THByteStorage *, ...), integers, float, double and bool, pointers to those (int *, "
        "float *, void *, ...) and pointers to such pointers (void **, float **, ...)"
    )
    if stars > 2 or any(not re.fullmatch(r"[A-Za-z_]\w*|\*", t) for t in tokens):
        raise _Unwrappable(unsupported)
    if stars == 2:  # void **m, float **rows: memory holding pointers (SparseConvNet's ffi.new("void *[1]"))
        first = tokens.index("*")
        base, rest = tokens[:first], tokens[first + 2 :]
        if tokens[first + 1] != "*" or len(rest) > 1 or " ".join(base) not in {*_POINTEE_SIZES, "void"}:
            raise _Unwrappable(unsupported)
        name = rest[0] if rest else f"arg{index}"
        return Param(" ".join(base) + " *", name, is_tensor=False, is_const=is_const, is_pointer=True)
    if stars == 1:
        star = tokens.index("*")
        base, rest = tokens[:star], tokens[star + 1 :]
        if not base or len(rest) > 1:
            raise _Unwrappable(unsupported)
        c_type, name = " ".join(base), (rest[0] if rest else f"arg{index}")
        if c_type in _POINTEE_SIZES or c_type == "void":  # int *device, float *out: cffi's ffi.new(...)
            return Param(c_type, name, is_tensor=False, is_const=is_const, is_pointer=True)
        if c_type in _CUDA_HANDLES and not with_cuda:
            raise ValueError(
                f"{header}: {fn} takes a {c_type} *, which needs create_extension(..., with_cuda=True)"
            )
        if c_type not in _CPU_HANDLES and c_type not in _CUDA_HANDLES:
            raise _Unwrappable(unsupported)
        return Param(c_type, name, is_tensor=True, is_const=is_const)
    if len(tokens) > 1 and tokens[-1] not in _TYPE_WORDS:
        base, name = tokens[:-1], tokens[-1]
    else:
        base, name = tokens, f"arg{index}"
    c_type = " ".join(base)
    if c_type not in _INT_TYPES | _FLOAT_TYPES | _BOOL_TYPES:
        raise _Unwrappable(unsupported)
    return Param(c_type, name, is_tensor=False, is_const=is_const)


class Extension:
    """What :func:`create_extension` returns: call :meth:`build`, or pass
    :meth:`distutils_extension` to setuptools."""

    def __init__(self, name, headers, sources, *, verbose, with_cuda, relative_to, package=False, **kwargs):
        unknown = set(kwargs) - _BUILD_KWARGS
        if unknown:
            raise TypeError(
                f"create_extension: unsupported argument(s) {sorted(unknown)}; "
                f"supported besides the named ones: {sorted(_BUILD_KWARGS)}"
            )
        self.name = name.strip(".")
        self.base_path = Path(os.path.abspath(os.path.dirname(relative_to)))
        self.verbose = verbose
        self.with_cuda = with_cuda
        if with_cuda:
            _require_cuda()
        headers = [headers] if isinstance(headers, (str, os.PathLike)) else list(headers)
        self.sources = [self._path(s) for s in sources]
        for src in self.sources:
            if src.suffix not in (".c", ".cpp", ".cc", ".cxx", ".cu"):
                raise ValueError(f"create_extension: {src} is not a .c, .cpp, .cc, .cxx or .cu source")
            if src.suffix == ".cu" and not with_cuda:
                raise ValueError(f"create_extension: {src} is CUDA; build it with with_cuda=True")
        self.functions: list[Prototype] = []
        # (name, reason): declared, but Python cannot call them; cffi wrapped
        # them anyway, and 2017 headers declared such helpers (EmbraceLife's
        # my_lib.h: THSize_isSameSizeAs over int64_t arrays)
        self.unwrapped: list[tuple[str, str]] = []
        self.constants: dict[str, int] = {}  # the headers' enum values and integer #defines
        for h in headers:
            text = self._path(h).read_text()
            self.functions += parse_header(text, str(h), with_cuda, self.unwrapped)
            self.constants.update(header_constants(text))
        for _, reason in self.unwrapped:
            warnings.warn(f"{reason}; calling it from Python raises TypeError", stacklevel=2)
        names = [f.name for f in self.functions] + [n for n, _ in self.unwrapped]
        if len(set(names)) != len(names):
            raise ValueError(f"create_extension: a function is declared twice in {headers}")
        self.language = kwargs.get("language") or "c"
        if self.language not in ("c", "c++"):
            raise ValueError(f"create_extension: language must be 'c' or 'c++', got {self.language!r}")
        self.source_extension = kwargs.get("source_extension") or ".c"
        if self.source_extension not in _SOURCE_EXTENSIONS:
            raise ValueError(
                f"create_extension: source_extension must be one of {list(_SOURCE_EXTENSIONS)}, "
                f"got {self.source_extension!r}"
            )
        self.define_macros = list(kwargs.get("define_macros", []))
        self.undef_macros = list(kwargs.get("undef_macros", []))
        self.depends = [self._path(d) for d in kwargs.get("depends", [])]
        self.runtime_library_dirs = [self._path(d) for d in kwargs.get("runtime_library_dirs", [])]
        self.include_dirs = [self._path(d) for d in kwargs.get("include_dirs", [])]
        self.extra_objects = [self._path(o) for o in kwargs.get("extra_objects", [])]
        args = kwargs.get("extra_compile_args", [])
        # torch.utils.cpp_extension's form, {"cxx": [...], "nvcc": [...]}, which 2018
        # setup.py files passed along with its BuildExtension (nnutils' pytorch/setup.py)
        self.per_compiler_args = isinstance(args, dict)
        if self.per_compiler_args and set(args) - {"cxx", "nvcc"}:
            raise TypeError(
                "create_extension: extra_compile_args as a dict takes the keys 'cxx' and 'nvcc' "
                f"(torch.utils.cpp_extension's form), got {sorted(args)}"
            )
        self.extra_compile_args = list(args.get("cxx", []) if self.per_compiler_args else args)
        self.extra_nvcc_args = list(args.get("nvcc", []) if self.per_compiler_args else [])
        # whether the link adds gcc's OpenMP runtime (-fopenmp): for sources compiled with
        # it, and for extra objects that call it (found when a link without it fails)
        self.links_openmp = any(a.startswith("-fopenmp") for a in self.extra_compile_args)
        self.extra_link_args = list(kwargs.get("extra_link_args", []))
        self.libraries = list(kwargs.get("libraries", []))
        self.library_dirs = [self._path(d) for d in kwargs.get("library_dirs", [])]
        # The module's package now, as torch.utils.ffi made its folder, so
        # that a setup.py that runs the build script before setup() finds it
        # with find_packages(), before the library is built into it: with
        # package=True (torch.utils.ffi's package example), and where the
        # module goes into a package that is there (fairseq-py's setup.py,
        # whose build_py builds `fairseq.temporal_convolution_tbc`).
        target = self.target_dir()
        if package or (target.parent != self.base_path and (target.parent / "__init__.py").exists()):
            self._write_package(target, self.namespace(target), f"_{self.module_name}.so", self.base_path)

    def _path(self, p) -> Path:
        return self.base_path / p  # an absolute p stays as it is

    @property
    def module_name(self) -> str:
        return self.name.rpartition(".")[2]

    def target_dir(self, base_path: Path | None = None) -> Path:
        return Path(base_path or self.base_path).joinpath(*self.name.split("."))

    def namespace(self, target_dir: Path) -> str:
        """The torch op namespace: the name and where it is built, so two
        extensions of one name in different places can both be loaded."""
        digest = hashlib.sha1(str(target_dir).encode()).hexdigest()[:10]
        return "kfl_" + re.sub(r"\W", "_", self.name) + "_" + digest

    def build(self, base_path: str | os.PathLike | None = None, runtime: Path | None = None) -> Path:
        """Compiles and links the extension, and writes its package
        (``<base>/<name as folders>/__init__.py`` and ``_<name>.so``; the base
        is the build script's folder unless given). Returns the package folder.
        Raises :class:`BuildError` with the compiler's output on failure.
        The TH/THC functions come from the runtime library
        (:func:`runtime_library`, or `runtime`), which is not compiled again."""
        self._check_inputs_exist()
        target = self.target_dir(Path(base_path) if base_path else None)
        ns = self.namespace(target)
        build_dir = _build_root() / ns
        so = f"_{self.module_name}.so"
        if runtime is None:
            runtime = runtime_library(self.with_cuda)
            rpath = str(runtime.parent)
        else:  # one that travels with the module (in the same wheel)
            runtime = Path(runtime).resolve()
            rpath = "$ORIGIN/" + os.path.relpath(runtime.parent, target.resolve())
        with _exclusive(build_dir):
            _write_if_changed(build_dir / "ops.cpp", self._ops_source(ns))
            _write_if_changed(build_dir / "build.ninja", self._ninja(build_dir, so, runtime, rpath))
            try:
                _run_ninja(build_dir, self.name, self.verbose)
            except BuildError as e:
                self._build_again(str(e), build_dir, so, runtime, rpath)
            self._write_package(target, ns, so, Path(base_path or self.base_path))
            tmp = target / f".{so}.tmp"
            shutil.copyfile(build_dir / so, tmp)
            os.replace(tmp, target / so)  # a copy already loaded in this process keeps its file
        return target

    def _check_inputs_exist(self) -> None:
        """BuildError naming each source or extra object that is not there
        (ninja would say only "missing and no known rule to make it")."""
        missing = [
            f"{kind} {path}"
            for kind, paths in (("sources", self.sources), ("extra_objects", self.extra_objects))
            for path in paths
            if not Path(path).exists()
        ]
        if missing:
            hint = (
                " (a 2017 make.sh compiled the .cu files into the extra objects with nvcc first)"
                if any(m.startswith("extra_objects") for m in missing)
                else ""
            )
            raise BuildError(f"building {self.name}: not found: " + "; ".join(missing) + hint)

    def _cxx_linkage(self) -> bool:
        """Whether the header's functions have C++ linkage. They have C's, with
        language="c++" too: cffi compiled its wrapper, which held the headers,
        as C (language only chose the linker), so a .cpp source defines them
        extern "C". The wrapper was C++ with source_extension=".cpp"
        (fairseq-py's), and with a C++ compiler as CC (`CC=g++ python
        build.py`), which compiled the .c sources as C++ too."""
        return self.source_extension != ".c" or _cc_is_cxx()

    def _ops_source(self, ns: str) -> str:
        linkage = [] if self._cxx_linkage() else ['extern "C" {']
        lines = [
            f"// Generated by kernforge_legacy.ffi.create_extension for {self.name}: the torch ops",
            "// over the C functions of its headers. Do not edit.",
            "#include <kernforge_legacy/glue.h>",
            "",
            *linkage,
        ]
        for f in self.functions:
            decls = [p.c_decl for p in f.params] + (["..."] if f.variadic else [])
            lines.append(_cxx(f"{f.returns} {f.name}({', '.join(decls) or 'void'});"))
        lines += ["}" if linkage else "", "", "namespace {", "using torch::stable::Tensor;", ""]
        for f in self.functions:
            sig, args = [], []
            for i, p in enumerate(f.params):
                where = f'"{f.name}", {i + 1}, "{p.name}"'
                if p.is_tensor:
                    sig.append(f"std::optional<Tensor> a{i}")
                    kind = "storage_arg" if p.is_storage else "tensor_arg"
                    args.append(f"kernforge_legacy::{kind}<{p.c_type}>(a{i}, {where})")
                elif p.is_pointer and p.c_type == "void":  # an address, or a tensor's handle
                    sig.append(f"int64_t a{i}")
                    args.append(f"kernforge_legacy::void_arg(a{i}, vt, {where})")
                elif p.is_pointer:  # an address legacy_function took from cffi's or ctypes' memory
                    sig.append(f"int64_t a{i}")
                    const = "const " if p.is_const else ""
                    args.append(f"reinterpret_cast<{const}{_cxx(p.c_type)} *>(static_cast<uintptr_t>(a{i}))")
                else:
                    boxed = {"float": "double", "bool": "bool"}.get(p.schema_type, "int64_t")
                    sig.append(f"{boxed} a{i}")
                    args.append(
                        f'kernforge_legacy::scalar_arg<{_cxx(p.c_type)}>(a{i}, {where}, "{p.c_type}")'
                    )
            if f.variadic:
                sig.append("std::vector<std::optional<Tensor>> va")
            if f.takes_void_tensors:
                sig.append("std::vector<std::optional<Tensor>> vt")
            ret = {"void": "void", "float": "double", "double": "double", "bool": "bool"}.get(
                f.returns, "Tensor" if f.returned_handle else "int64_t"
            )
            lines.append(f"{ret} op_{f.name}({', '.join(sig)}) {{")
            lines.append("  kernforge_legacy::CallScope scope;  // storages the call borrowed end with it")
            tensors = [f"a{i} ? a{i}->get() : nullptr" for i, p in enumerate(f.params) if p.is_tensor]
            if f.takes_void_tensors:
                tensors.append("kernforge_legacy::first_cuda_tensor(vt)")
            if self.with_cuda and tensors:
                lines.append(f"  kernforge_legacy::DeviceGuard guard{{{', '.join(tensors)}}};")
            # one local per argument: the checks run, and report, in the argument order
            # (a call's own arguments are evaluated in no set order; gcc goes right to left)
            lines += [f"  auto c{i} = {arg};" for i, arg in enumerate(args)]
            call = f"{f.name}({', '.join(f'c{i}' for i in range(len(args)))})"
            if f.variadic:
                lines += self._variadic_handles(f)
                fixed = "".join(f"c{i}, " for i in range(len(args)))
                calls = [
                    f"va.size() <= {n} ? {f.name}({fixed}{', '.join(f'v[{j}]' for j in range(n))})"
                    for n in _VARIADIC_COUNTS
                ]
                call = f'({" : ".join(calls)} : throw std::logic_error("checked above"))'
            if f.returned_handle:  # the handle's reference, taken over by the returned tensor
                storage = "true" if f.returned_handle.endswith("Storage") else "false"
                call = f'Tensor(kernforge_legacy::returned_tensor({call}, {storage}, "{f.name}"))'
            elif f.returns_pointer:  # its address; Python makes it a Pointer
                call = f"static_cast<int64_t>(reinterpret_cast<intptr_t>({call}))"
            if self.with_cuda and tensors:  # a launch the C code left unchecked raises, naming f
                check = f'  if (guard.on_cuda()) kernforge_legacy::check_launches("{f.name}");'
                if f.returns == "void":
                    lines += [f"  {call};", check, "}", ""]
                else:
                    lines += [f"  auto r = {call};", check, "  return r;", "}", ""]
            else:
                lines += [f"  {'' if f.returns == 'void' else 'return '}{call};", "}", ""]
        lines += ["}  // namespace", "", f"STABLE_TORCH_LIBRARY({ns}, m) {{"]
        lines += [f'  m.def("{f.schema}");' for f in self.functions]
        lines += ["}", "", f"STABLE_TORCH_LIBRARY_IMPL({ns}, CompositeExplicitAutograd, m) {{"]
        lines += [f'  m.impl("{f.name}", TORCH_BOX(&op_{f.name}));' for f in self.functions]
        lines.append("}")
        return "\n".join(lines) + "\n"

    @staticmethod
    def _variadic_handles(f: Prototype) -> list[str]:
        """The lines of f's op that make the handles of its variadic tensors
        (any dtype: the C code reads each as the type it expects, as cffi
        passed each as its own type's pointer), `v[j]`, NULL after them."""
        where = f'"{f.name}", {len(f.params) + 1}, "..."'
        most = _VARIADIC_COUNTS[-1]
        return [
            f"  if (va.size() > {most})",
            f'    kernforge_legacy::bad_argument({where}, "tensor", "at most {most} tensors '
            'go to ..., got " + std::to_string(va.size()));',
            f"  std::vector<void*> v({most}, nullptr);",
            "  for (size_t j = 0; j < va.size(); j++)",
            "    if (va[j]) v[j] = kernforge_legacy::call_handle(va[j]->get());",
        ]

    def _module_source(self, ns: str, so: str) -> str:
        names = [f.name for f in self.functions] + [n for n, _ in self.unwrapped]
        # the headers' constants, as cffi's module had them beside the functions
        constants = {
            n: v for n, v in self.constants.items()
            if n not in {*names, "lib", "ffi"} and not keyword.iskeyword(n) and not n.startswith("_")
        }  # fmt: skip
        lines = [
            f'"""{self.name}: built by kernforge_legacy.ffi.create_extension. Do not edit.',
            "",
            "Each function is the torch op of the C function of the same name:",
            "",
            *(f"    {f.schema}" for f in self.functions),
            '"""',
            "",
            "import os as _os",
            "from importlib.machinery import EXTENSION_SUFFIXES as _SUFFIXES",
            "",
            "import torch as _torch",
            "from kernforge_legacy.ffi import legacy_function as _legacy_function",
            "from kernforge_legacy.ffi import load_runtime as _load_runtime",
            "from kernforge_legacy.ffi import unwrapped_function as _unwrapped_function",
            "",
            "# built by .build() as _NAME.so, or by setuptools (distutils_extension()) as _NAME<suffix>",
            "_here = _os.path.dirname(__file__)",
            f"_names = [{so!r}] + [{so.removesuffix('.so')!r} + s for s in _SUFFIXES]",
            "_paths = [_os.path.join(_here, n) for n in _names]",
            f"_load_runtime({self.with_cuda!r})  # the TH/THC functions the library calls",
            "_torch.ops.load_library(next((p for p in _paths if _os.path.exists(p)), _paths[0]))",
            f"_ops = getattr(_torch.ops, {ns!r})",
            "",
            *(f"{f.name} = _legacy_function({', '.join(self._function_args(f))})" for f in self.functions),
            *(f"{n} = _unwrapped_function({n!r}, {reason!r})" for n, reason in self.unwrapped),
            *(f"{n} = {v!r}" for n, v in constants.items()),
            "",
            f"__all__ = {names + list(constants)!r}",
            "# what the cffi module gave to code that wrapped it itself (`from ._my_lib import lib, ffi`)",
            "lib = _CffiLib({n: globals()[n] for n in __all__})",
            "ffi = _cffi_ffi()",
        ]
        lines.insert(lines.index("from kernforge_legacy.ffi import load_runtime as _load_runtime"),
                     "from kernforge_legacy.ffi import _CffiLib, _cffi_ffi")  # fmt: skip
        return "\n".join(lines) + "\n"

    def _python_module_source(self, ns: str, so: str) -> str:
        """For setuptools' build: the library as a Python module of its own,
        `_NAME`, as cffi's module was, so that a setup.py that renamed the
        Extension (`ffi.name = "my_package._my_lib"`, pytorch-ctc's) and a
        package that imports it itself (`from ._my_lib import lib, ffi`) work:
        importing it runs the wrapper module's source over the library."""
        source, init, name = (
            self._module_source(ns, so),
            f"PyInit__{self.module_name}",
            f"_{self.module_name}",
        )
        return "\n".join([
            "// Generated by kernforge_legacy.ffi.create_extension: the library as a Python module",
            "// (multi-phase initialization, whose create slot may give any module). Python's types",
            "// come from its header; its functions are looked up at import, so that the library",
            "// links without Python, whose symbols the interpreter gives its extension modules.",
            "#include <Python.h>",
            "#include <dlfcn.h>",
            "",
            f'static const char kfl_module_source[] = R"kfl_source({source})kfl_source";',
            "",
            "template <class F>",
            "static F kfl_python(const char* name) {",
            "  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));",
            "}",
            "",
            "static PyObject* kfl_create(PyObject* spec, PyModuleDef*) {",
            '  auto import = kfl_python<PyObject* (*)(const char*)>("PyImport_ImportModule");',
            "  using CallMethod = PyObject* (*)(PyObject*, const char*, const char*, ...);",
            '  auto call = kfl_python<CallMethod>("PyObject_CallMethod");',
            '  auto decref = kfl_python<void (*)(PyObject*)>("Py_DecRef");',
            "  if (import == nullptr || call == nullptr || decref == nullptr) return nullptr;",
            "  Dl_info info;  // this library's path, the module's __file__",
            '  const char* path = dladdr(reinterpret_cast<void*>(&kfl_create), &info) ? info.dli_fname : "";',
            '  PyObject* ffi = import("kernforge_legacy.ffi");',
            "  if (ffi == nullptr) return nullptr;",
            '  PyObject* module = call(ffi, "_module_of_library", "Oss", spec, path, kfl_module_source);',
            "  decref(ffi);",
            "  return module;",
            "}",
            "",
            "static PyModuleDef_Slot kfl_slots[] = {",
            "    {Py_mod_create, reinterpret_cast<void*>(&kfl_create)}, {0, nullptr}};",
            "static PyModuleDef kfl_module = {",
            f'    PyModuleDef_HEAD_INIT, "{name}", nullptr, 0, nullptr, kfl_slots}};',
            "",
            f'extern "C" __attribute__((visibility("default"))) PyObject* {init}(void) {{',
            '  auto init = kfl_python<PyObject* (*)(PyModuleDef*)>("PyModuleDef_Init");',
            "  return init == nullptr ? nullptr : init(&kfl_module);",
            "}",
            "",
        ])  # fmt: skip

    @staticmethod
    def _function_args(f: Prototype) -> list[str]:
        """legacy_function's arguments for f, as Python source."""
        args = [f"_ops.{f.name}.default", repr(f.name)]
        storages = {i: p.c_type for i, p in enumerate(f.params) if p.is_storage}
        if storages:
            args.append(f"storages={storages!r}")
        pointers = {i: p.c_type for i, p in enumerate(f.params) if p.is_pointer}
        if pointers:
            args.append(f"pointers={pointers!r}")
        if f.returned_handle and f.returned_handle.endswith("Storage"):
            args.append("returns_storage=True")
        if f.returns_pointer:
            args.append("returns_pointer=True")
        if f.variadic:
            args.append("variadic=True")
        return args

    def _flags(self, runtime: Path, rpath: str) -> dict[str, list[str]]:
        """The compiler and linker flags of both builds: "defines" and
        "includes" (every compiler, nvcc too), "c" and "cxx" (each language's
        own), "link" (the runtime library, found at `rpath` when loaded
        outside Python, and the other libraries, after the objects)."""
        tool = _toolchain_flags(self.with_cuda)
        defines = [f"-D{n}" if v is None else f"-D{n}={v}" for n, v in self.define_macros]
        defines += [f"-U{n}" for n in self.undef_macros] + tool["defines"]
        # the compatibility headers' folders and CUDA's, then the extension's
        # own, as torch.utils.ffi ordered them (an extension's own "cuda.h",
        # as torch_unique's, does not hide CUDA's from THC.h), then (last) the
        # sources' own folders: TH's generic headers include the generic file
        # ("generic/foo.c", TH_GENERIC_FILE) by its path from there
        includes = tool["includes"] + [f"-I{d}" for d in self.include_dirs]
        includes += [f"-I{d}" for d in dict.fromkeys(Path(s).parent for s in self.sources)]
        link = [f"-L{runtime.parent}", f"-l:{runtime.name}", f"-Wl,-rpath,{rpath}", *tool["link"]]
        link += [f"-L{d}" for d in self.library_dirs] + [f"-l{lib}" for lib in self.libraries]
        # Sources compiled with -fopenmp (and extra objects compiled so, found by
        # _build_again) call the OpenMP runtime. The 2017 link
        # left those calls open and the libgomp torch had loaded answered them
        # at import; this link leaves nothing open, so it links gcc's runtime
        # itself, as torch.utils.cpp_extension does.
        if self.links_openmp:
            link.append("-fopenmp")
        link += [f"-Wl,-rpath,{d}" for d in self.runtime_library_dirs] + self.extra_link_args
        # -fexceptions: THError, THArgCheck and THCudaCheck raise through C frames;
        # -fcommon: a source that defines `THCState *state;` itself still links.
        return {
            "defines": defines,
            "includes": includes,
            "c": ["-fexceptions", "-fcommon", *_c_as_in_2017()],
            "cxx": tool["cxx"],
            "link": link,
        }

    def distutils_extension(self, tmpdir=None, verbose=None):
        """A setuptools ``Extension`` of this extension, for a legacy
        ``setup.py``: ``setup(ext_modules=[ffi.distutils_extension()])``,
        built by ``python setup.py build_ext --inplace`` or ``pip install .``
        (``tmpdir`` and ``verbose`` as cffi took them, unused: setuptools
        compiles, into its own build folder).

        It writes the generated op source and the package's ``__init__.py``
        files now, as the old ``create_extension`` wrote its wrapper, and the
        setuptools module is ``<package of the build script>.<name>._<name>``.
        Sources are C and C++, compiled with the extension's own
        ``extra_compile_args`` as given (``-std=c++11``, as 2017 scripts gave,
        stays; without one, the compiler's default standard); CUDA code comes
        in as ``extra_objects`` built by nvcc (a 2017 ``make.sh``), or as
        ``.cu`` sources when ``extra_compile_args`` is torch.utils.cpp_extension's
        dict (``{"cxx": [...], "nvcc": [...]}``, as 2018 ``setup.py`` files gave
        it with that module's ``BuildExtension`` as ``build_ext``, which
        compiles them): then the Extension's flags are such a dict. A ``.cu``
        source with a list raises ValueError.

        setuptools compiles every source with one list of flags, but the
        generated op source needs C++17 and the extension's own sources may
        need their older standard (kenlm's dynamic exception specifications
        in ctcdecode): so the op source and the Python module's are compiled
        now, apart, with ninja, and setuptools links their objects."""
        del tmpdir, verbose
        from setuptools import Extension as SetuptoolsExtension

        name, kwargs = self._setuptools_extension(python_module=True)
        return SetuptoolsExtension(name=name, **kwargs)

    def _setuptools_extension(self, python_module: bool) -> tuple[str, dict]:
        """The name and keyword arguments of the setuptools Extension that
        builds the library: with its own Python module (distutils_extension)
        or without one, for cffi's, whose source calls Python directly, so
        that the link then leaves Python's symbols to the interpreter."""
        cuda = [str(s) for s in self.sources if s.suffix == ".cu"]
        if cuda and not self.per_compiler_args:
            raise ValueError(
                f"{self.name}: a setuptools build (distutils_extension(), cffi_modules) does not compile "
                f"CUDA sources {cuda}: build them with nvcc into extra_objects, build with ffi.build() or "
                "cmdclass={'build_py': build_py(ffi)}, or give extra_compile_args as "
                "{'cxx': [...], 'nvcc': [...]} and build with torch.utils.cpp_extension.BuildExtension"
            )
        target = self.target_dir()
        ns = self.namespace(target)
        build_dir = _build_root() / ns
        build_dir.mkdir(parents=True, exist_ok=True)
        _write_if_changed(build_dir / "ops.cpp", self._ops_source(ns))
        self._write_package(target, ns, f"_{self.module_name}.so", Path(self.base_path))
        package = os.path.relpath(self.base_path, os.getcwd())
        prefix = "" if package == "." or package.startswith("..") else package.replace(os.sep, ".") + "."
        runtime = runtime_library(self.with_cuda)
        # setuptools links once, so an extra object's OpenMP calls are found
        # now (ffi.build() finds them when its first link fails)
        self.links_openmp = self.links_openmp or _calls_openmp(self.extra_objects)
        flags = self._flags(runtime, str(runtime.parent))
        own_args = self.extra_compile_args  # as given: the generated sources are compiled apart
        # setuptools gives C and C++ one list: the flags both languages take
        c_and_cxx = ["-fvisibility=hidden", *flags["defines"], *flags["includes"], *flags["c"], *flags["cxx"]]
        c_and_cxx += _cxx_as_in_2017(os.environ.get("CC", "cc"))
        if self.per_compiler_args:  # for a BuildExtension, which adds -std=c++11 (2018) where none is given
            compile_args = {"cxx": ["-std=c++17", *c_and_cxx, *own_args]}
            compile_args["nvcc"] = self._nvccflags(flags) if self.with_cuda else []
        else:
            compile_args = [*c_and_cxx, *own_args]
        if any(s.suffix in (".cpp", ".cc", ".cxx") and _includes_aten(s) for s in self.sources):
            # the standard today's ATen needs (gcc warns that a C source ignores it)
            aten = _aten_standard(own_args)
            (compile_args["cxx"] if self.per_compiler_args else compile_args).append(aten)
        # and so the out-of-line copies of `inline` functions that a C source
        # needs are found now too (ffi.build() finds them when its first link fails)
        units = self._units(build_dir)
        wrapped = self._with_inline_copies(self._inline_unprovided(units, flags), units, build_dir)
        sources = [str(wrapped.get(i, u)) for i, u in enumerate(self.sources)]
        link = flags["link"]
        module = None
        if python_module:
            module = build_dir / "pymodule.cpp"
            _write_if_changed(module, self._python_module_source(ns, f"_{self.module_name}.so"))
            if not sources:  # (setuptools wants one source: it takes the module's)
                sources.append(str(module))
                module = None
        else:
            link = [a for a in link if a != "-Wl,--no-undefined"]
        objects = self._generated_objects(build_dir, flags, module)
        inline_copies = [units[i] for i in wrapped]
        return f"{prefix}{self.name}._{self.module_name}", {
            "sources": sources,
            "extra_compile_args": compile_args,
            "extra_objects": [str(o) for o in objects],
            # setuptools puts extra_objects before its -l flags and these after
            # them: here too, the group ahead of the libraries
            "extra_link_args": [*self._grouped_extra_objects(), *link],
            "depends": [str(d) for d in [*self.depends, *self.extra_objects, *inline_copies, *objects]],
            "language": "c++",
        }

    def _generated_objects(self, build_dir: Path, flags: dict, module: Path | None) -> list[Path]:
        """The generated sources compiled, for a setuptools build: the op
        source and, where given, the Python module's (`module`). setuptools
        would compile them with the extension's own flags, for its C: a
        -std=c99 there, which g++ ignores for C++, stops clang++. So ninja
        compiles them with their own flags, in a folder of their own
        (ffi.build()'s build.ninja stays), and again only when one or a
        header it includes changed."""
        folder = build_dir / "setuptools"
        own = [*_own_cxxflags(flags), f"-I{sysconfig.get_paths()['include']}"]
        rules = _ninja_header(cxxflags=[], ldflags=[], nvccflags=[], with_cuda=False, own_cxxflags=own)
        sources = {"ops.o": build_dir / "ops.cpp", **({"pymodule.o": module} if module else {})}
        rules += [f"build {o}: own_cxx {_esc(src)}" for o, src in sources.items()]
        rules.append(f"default {' '.join(sources)}")
        with _exclusive(folder):
            _write_if_changed(folder / "build.ninja", "\n".join(rules) + "\n")
            _run_ninja(folder, self.name, verbose=False)
        return [folder / o for o in sources]

    def _grouped_extra_objects(self) -> list[str]:
        """The extra objects as one linker group: static libraries then
        resolve each other in any order. A 2017 build.py globbed CUDA's
        static libraries (Pointnet2_PyTorch: ``glob('/usr/local/cuda/lib64/*.a')``),
        whose order is the file system's, and a library that another needs
        could come first."""
        if not self.extra_objects:
            return []
        return ["-Wl,--start-group", *map(str, self.extra_objects), "-Wl,--end-group"]

    def _units(self, build_dir: Path) -> list[Path]:
        """Every source the build compiles, in the order of its objects: the
        extension's own, then its op wrappers."""
        return [*self.sources, build_dir / "ops.cpp"]

    def _inline_left_out(self, output: str, build_dir: Path, flags: dict) -> dict[int, list[str]]:
        """For a link that failed on undefined references: the missing
        functions that a C source defines `inline` (not `static`), by the
        source that is to hold each one's out-of-line copy.

        C99 and later emit no out-of-line copy of such a function: a call left
        out of line (a recursive one, a large one) is an undefined reference
        unless some source also declares it `extern`. gcc before 5 compiled C
        by GNU89's rules, where each `inline` definition was also an external
        one, and 2017 code relied on that (SmoothParticleNets'
        common_funcs.h)."""
        if _cc_is_cxx():
            return {}
        units = self._units(build_dir)
        missing: dict[int, set[str]] = {}
        for function, objects in _undefined_references(output).items():
            for obj in objects:
                ours = re.fullmatch(r"obj/(\d+)_[^/]*\.o", obj)
                if ours and units[int(ours.group(1))].suffix == ".c":
                    missing.setdefault(int(ours.group(1)), set()).add(function)
        return self._inline_holders(missing, units, flags)

    def _inline_unprovided(self, units: list[Path], flags: dict) -> dict[int, list[str]]:
        """_inline_left_out for a setuptools build, which links once: found
        before it, from each C source compiled without optimization (where
        no call is inlined): the functions it calls that no C source
        defines by C99's rules."""
        nm = shutil.which("nm")
        c = [i for i, u in enumerate(units) if u.suffix == ".c"]
        if _cc_is_cxx() or not nm or not c:
            return {}
        calls: dict[int, set[str]] = {}
        defined: set[str] = set()
        with tempfile.TemporaryDirectory() as tmp:
            for i in c:
                obj = Path(tmp) / f"{i}.o"
                compiled = subprocess.run(
                    [*shlex.split(os.environ.get("CC", "cc")), "-c", "-o", str(obj), *self._cflags(flags),
                     "-O0", str(units[i])],
                    capture_output=True, text=True,
                )  # fmt: skip
                if compiled.returncode != 0:  # setuptools' own compile reports the error
                    return {}
                symbols = subprocess.run([nm, "-P", "-g", str(obj)], capture_output=True, text=True).stdout
                for name, kind, *_ in (line.split() for line in symbols.splitlines() if line.strip()):
                    if kind == "U":
                        calls.setdefault(i, set()).add(name)
                    else:
                        defined.add(name)
        return self._inline_holders({i: names - defined for i, names in calls.items()}, units, flags)

    def _inline_holders(self, missing: dict, units: list[Path], flags: dict) -> dict[int, list[str]]:
        """Which of each C source's `missing` functions it defines `inline`
        (not `static`): those its compile by GNU89's rules defines, each held
        by the first source that defines it, by source."""
        holder: dict[str, int] = {}  # one copy each, in the first source that defines it
        for i in sorted(missing):
            asm = subprocess.run(
                [*shlex.split(os.environ.get("CC", "cc")), "-S", "-o", "-", *self._cflags(flags),
                 "-fgnu89-inline", str(units[i])],
                capture_output=True, text=True,
            )  # fmt: skip
            for function in re.findall(r"^\s*\.globa?l\s+(\w+)\s*$", asm.stdout, re.M):
                if function in missing[i]:
                    holder.setdefault(function, i)
        copies: dict[int, list[str]] = {}
        for function, i in sorted(holder.items()):
            copies.setdefault(i, []).append(function)
        return copies

    def _with_inline_copies(self, copies: dict[int, list[str]], units: list[Path], build_dir: Path) -> dict:
        """Each source of `copies` as a file that includes it and then declares
        its functions `extern`, which by C99's rules makes their `inline`
        definitions external ones; says so. The files, by source."""
        wrapped = {}
        for i, functions in sorted(copies.items()):
            wrapped[i] = build_dir / "inline" / f"{i}_{units[i].name}"
            wrapped[i].parent.mkdir(exist_ok=True)
            path = str(units[i]).replace("\\", "\\\\").replace('"', '\\"')
            lines = [
                f"// Generated by kernforge_legacy.ffi.create_extension: {units[i].name} with an out-of-line",
                "// copy of the functions it defines `inline` and calls out of line. Do not edit.",
                f'#include "{path}"',
                *[f"extern __typeof__({f}) {f};" for f in functions],
            ]
            _write_if_changed(wrapped[i], "\n".join(lines) + "\n")
            warnings.warn(
                f"{self.name}: {', '.join(functions)}: defined `inline` (not `static`) in "
                f"{os.path.relpath(units[i], self.base_path)} or a header it includes, and called out "
                "of line; C99 gives such a function no out-of-line copy (gcc before 5, by GNU89's rules, "
                "did), so the build adds one",
                stacklevel=4,
            )
        return wrapped

    def _build_again(self, output: str, build_dir: Path, so: str, runtime: Path, rpath: str) -> None:
        """After a link that failed on undefined references, builds again
        when a 2017 toolchain gave some of those functions (a second failure
        names what is still missing): the OpenMP runtime, which an extra object compiled
        with -fopenmp calls (SparseConvNet's init.cpp.o; the 2017 link left
        those calls open, and torch's libgomp answered them at import), and
        an out-of-line copy of a function defined `inline` (_inline_left_out,
        _with_inline_copies). Else raises the failure's BuildError."""
        openmp = not self.links_openmp and any(
            f.startswith(_OPENMP_RUNTIME) for f in _undefined_references(output)
        )
        copies = self._inline_left_out(output, build_dir, self._flags(runtime, rpath))
        if not openmp and not copies:
            raise BuildError(self._undefined_functions(output) or output) from None
        self.links_openmp |= openmp
        wrapped = self._with_inline_copies(copies, self._units(build_dir), build_dir)
        _write_if_changed(build_dir / "build.ninja", self._ninja(build_dir, so, runtime, rpath, wrapped))
        try:
            _run_ninja(build_dir, self.name, self.verbose)
        except BuildError as e:
            raise BuildError(self._undefined_functions(str(e)) or str(e)) from None

    def _undefined_functions(self, output: str) -> str | None:
        """For a link that failed on undefined references: one message naming
        each missing function with the sources that call it, TH/THC functions
        (which kernforge-legacy does not provide) first. None for other failures."""
        units = self._units(Path("."))

        def source(obj: str) -> str:  # obj/<i>_<stem>.o is units[i]; an extra object is itself
            ours = re.fullmatch(r"obj/(\d+)_[^/]*\.o", obj)
            return os.path.relpath(units[int(ours.group(1))], self.base_path) if ours else obj

        calls = {
            function: {source(obj) for obj in objects}
            for function, objects in _undefined_references(output).items()
        }
        if not calls:
            return None
        declared = {f.name for f in self.functions}
        own = sorted(f for f in calls if f in declared)
        th = sorted(f for f in calls if f.startswith("TH") and f not in declared)
        other = sorted(f for f in calls if not f.startswith("TH") and f not in declared)
        lines = [f"building {self.name} failed: functions the code calls are defined nowhere"]
        if own and _cc_is_cxx():
            lines.append(
                f"functions of the headers that no source defines with C++ linkage (CC={os.environ['CC']} "
                'compiles the .c sources as C++; one defined extern "C" needs the default CC):'
            )
        elif own and self._cxx_linkage():
            lines.append(
                "functions of the headers that no source defines with C++ linkage (source_extension="
                f'{self.source_extension!r} compiled the wrapper as C++; one defined extern "C" needs '
                "the default, '.c'):"
            )
        elif own:
            lines.append(
                "functions of the headers that no source defines with C linkage (as under "
                'torch.utils.ffi, a C++ source defines them extern "C"):'
            )
        lines += [f"  {f}" for f in own]
        if th:
            lines.append("TH/THC functions kernforge-legacy does not provide (see its porting guide):")
            lines += [f"  {f}  (called in {', '.join(sorted(calls[f]))})" for f in th]
        if other:
            lines.append("other functions, in no source or library of the build:")
            lines += [f"  {f}  (called in {', '.join(sorted(calls[f]))})" for f in other]
        cuda = sorted({caller for f in other if f.startswith(("cuda", "__cuda")) for caller in calls[f]})
        if cuda and not self.with_cuda:
            lines.append(
                f"{', '.join(cuda)}: CUDA code, and a build without with_cuda=True does not link CUDA's "
                "runtime: build with create_extension(..., with_cuda=True) where CUDA is, or leave CUDA's "
                "objects out of a CPU build"
            )
        stale = sorted({caller for f in other if f in _OLD_NVCC_LAUNCH for caller in calls[f]})
        if stale:
            lines.append(
                f"{', '.join(f for f in other if f in _OLD_NVCC_LAUNCH)}: kernel launches as an nvcc "
                "before CUDA 9.2 compiled them, which this CUDA's runtime no longer has; compile the .cu "
                f"files again with this CUDA's nvcc ({', '.join(stale)} came from an older one)"
            )
        return "\n".join(lines)

    def _write_package(self, target: Path, ns: str, so: str, root: Path) -> None:
        """The module's ``__init__.py``, and empty ones in the folders above it."""
        target.mkdir(parents=True, exist_ok=True)
        for depth in range(1, len(self.name.split("."))):
            init = root.joinpath(*self.name.split(".")[:depth], "__init__.py")
            if not init.exists():
                init.touch()
        _write_if_changed(target / "__init__.py", self._module_source(ns, so))

    def __call__(self):
        """What cffi's setuptools hook calls (``setup(cffi_modules=["build.py:ffi"])``,
        torch.utils.ffi's package example) when what it names is no cffi FFI:
        a ``cffi.FFI`` whose module is this extension's library, which
        setuptools then builds as it builds :meth:`distutils_extension`'s,
        with cffi's module source in place of this one's own."""
        import cffi

        name, kwargs = self._setuptools_extension(python_module=False)
        ffi = cffi.FFI()
        ffi.set_source(name, "", **kwargs)
        return ffi

    def _nvccflags(self, flags: dict[str, list[str]]) -> list[str]:
        """nvcc's flags: C++17 (CUDA 13's thrust and CUB need it; a lower
        standard among the extension's own nvcc flags is left out, with a
        warning), then the extension's own."""
        own = _without_cxx_below_17(
            self.extra_nvcc_args,
            f"{self.name}: nvcc flags",
            "the .cu sources compile as C++17, which CUDA 13's thrust and CUB need",
            stacklevel=4,
        )
        return [
            *([] if any(a.startswith("-std=") for a in own) else ["-std=c++17"]),
            "-O3", "-Xcompiler=-fPIC", "-Xcompiler=-fvisibility=hidden",
            *flags["defines"], *flags["includes"],
            # 2017 kernels call what CUDA 13 and sm_70 took away, without including THC.h
            "-include", str(_HERE / "include" / "THC" / "kfl_removed_cuda.h"),
            *_cuda_arch_flags(), *own,
        ]  # fmt: skip

    def _cflags(self, flags: dict[str, list[str]]) -> list[str]:
        # a C++ compiler as CC compiles the .c sources as C++, in its own standard,
        # with a function that ends without a return returning (_cxx_as_in_2017)
        language = _cxx_as_in_2017(os.environ.get("CC", "cc")) if _cc_is_cxx() else ("-std=gnu11",)
        return [
            *language,
            *_COMMON_FLAGS,
            *flags["defines"],
            *flags["includes"],
            *flags["c"],
            *self.extra_compile_args,
        ]

    def _ninja(self, build_dir: Path, so: str, runtime: Path, rpath: str, wrapped: dict | None = None) -> str:
        """The build file; a source of `wrapped` is compiled through the file
        it maps to, into an object of its own (so neither build's objects
        are compiled again by the other)."""
        flags = self._flags(runtime, rpath)
        wrapped = wrapped or {}
        own_cxxflags = _own_cxxflags(flags)
        cxx_as_in_2017 = _cxx_as_in_2017(os.environ.get("CXX", "c++"))
        rules = _ninja_header(
            cflags=self._cflags(flags),
            cxxflags=[*own_cxxflags, *cxx_as_in_2017, *self.extra_compile_args],
            own_cxxflags=own_cxxflags,
            nvccflags=self._nvccflags(flags) if self.with_cuda else [],
            ldflags=["-shared", *flags["link"]],
            with_cuda=self.with_cuda,
        )
        objects = []
        for i, src in enumerate(self._units(build_dir)):
            rule = {".c": "cc", ".cu": "nvcc"}.get(src.suffix, "cxx" if i < len(self.sources) else "own_cxx")
            obj = f"obj/{i}_{src.stem}{'.inline' if i in wrapped else ''}.o"
            objects.append(obj)
            implicit = f" | {' '.join(_esc(d) for d in self.depends)}" if self.depends else ""
            rules.append(f"build {obj}: {rule} {_esc(wrapped.get(i, src))}{implicit}")
            if rule == "cxx" and _includes_aten(src):
                # the standard today's ATen needs, whatever the 2017 flags gave (fairseq-py's -std=c++11)
                rules.append(f"  cxxflags = $cxxflags {_aten_standard(self.extra_compile_args)}")
        extra = f" | {' '.join(_esc(o) for o in self.extra_objects)}" if self.extra_objects else ""
        rules.append(f"build {so}: link {' '.join(objects)}{extra}")
        rules.append(f"  archives = {_join(self._grouped_extra_objects())}")
        rules.append(f"default {so}")
        return "\n".join(rules) + "\n"


def create_extension(
    name, headers, sources, verbose=True, with_cuda=False, package=False, relative_to=".", **kwargs
) -> Extension:
    """Configures a legacy extension; ``.build()`` compiles it.

    Args:
        name: the module to build, dotted for a package (``"_ext.my_lib"``).
        headers: header file(s) holding only the prototypes of the functions to
            export, over ``TH*Tensor *`` / ``THCuda*Tensor *``, integer, float,
            double and bool parameters, returning int (or void, float, double).
        sources: .c, .cpp and (with ``with_cuda``) .cu files.
        verbose: print the compiler's output.
        with_cuda: make ``THC/THC.h`` available, compile .cu sources with nvcc,
            link the CUDA runtime.
        package: a module of a package that a ``setup.py`` builds (cffi's
            hook, ``cffi_modules``): its package folder and ``__init__.py``
            are written now, as the old one made the folder, so that the
            ``setup.py``'s ``find_packages()`` finds them. They are also
            written now where the module goes into a package that is there
            (``"fairseq.temporal_convolution_tbc"``). The build is the same.
        relative_to: the build script (``__file__``): paths are relative to its
            folder, and the module is written there.
        **kwargs: the setuptools ``Extension`` keywords the old one passed
            on: ``define_macros``, ``undef_macros``, ``include_dirs``,
            ``extra_objects``, ``extra_compile_args`` (C and C++; or
            torch.utils.cpp_extension's ``{"cxx": [...], "nvcc": [...]}``),
            ``extra_link_args``, ``libraries``, ``library_dirs``,
            ``runtime_library_dirs`` (an rpath), ``depends`` (files whose
            change rebuilds every source), ``language`` (``"c"`` or ``"c++"``,
            which chose the linker: the header's functions have C linkage,
            defined in .cpp sources ``extern "C"``), cffi's
            ``source_extension`` (``".cpp"``, ``".cc"`` or ``".cxx"``
            compiled its wrapper as C++: the header's functions have C++
            linkage, defined without ``extern "C"``); ``export_symbols``,
            ``swig_opts``, ``optional`` and ``py_limited_api`` are accepted
            and change nothing on Linux. Anything else is a TypeError.

    The result also has :meth:`Extension.distutils_extension`, for a
    ``setup.py`` that passed ``ffi.distutils_extension()`` to
    ``setup(ext_modules=[...])``.
    """
    return Extension(
        name,
        headers,
        sources,
        verbose=verbose,
        with_cuda=with_cuda,
        relative_to=relative_to,
        package=package,
        **kwargs,
    )


def build_py(*extensions: Extension, with_runtime: bool = False):
    """A setuptools ``build_py`` command that also builds ``extensions`` into
    the wheel: what ``cffi_modules=[...]`` did in a legacy ``setup.py``, with
    no need of cffi (``cmdclass={"build_py": build_py(ffi)}``). An extension whose build
    script sits in a package lands in that package (``my_package/build.py``
    with ``"_ext.my_lib"`` gives ``my_package._ext.my_lib``). With
    `with_runtime` (kernforge-legacy's own setup.py) the runtime library is
    built into the wheel too (``kernforge_legacy/lib/``, with CUDA when an
    extension has it), and the extensions link that copy. The distribution
    then counts as one with compiled code (as it did with cffi's modules):
    its wheel is tagged for the platform and installs into platlib."""
    from setuptools.command.build_py import build_py as _base

    class BuildPy(_base):
        def run(self):
            # Without ext_modules bdist_wheel took the distribution for pure
            # before the build; it reads root_is_pure again to install and tag.
            self.distribution.has_ext_modules = lambda: True
            wheel = self.distribution.command_obj.get("bdist_wheel")
            if wheel is not None:
                wheel.root_is_pure = False
            super().run()
            runtime = None
            if with_runtime:
                cuda = any(ext.with_cuda for ext in extensions)
                lib = self._placed(Path(self.build_lib, "kernforge_legacy", "lib"))
                # build/ may hold the other variant's runtime from an earlier
                # build; in this wheel it would be loaded instead of this one.
                (lib / RUNTIME_LIBS[not cuda]).unlink(missing_ok=True)
                runtime = build_runtime(cuda, into=lib)
            for ext in extensions:
                target = self._placed(self._build_base(ext.base_path).joinpath(*ext.name.split(".")))
                ext.build(base_path=target.parents[ext.name.count(".")], runtime=runtime)

        def _build_base(self, src: Path) -> Path:
            for pkg in self.packages or []:
                if Path(self.get_package_dir(pkg)).resolve() == src:
                    return Path(self.build_lib, *pkg.split("."))
            return Path(self.build_lib) / os.path.relpath(src)

        def _placed(self, path: Path) -> Path:
            """`path`, in build_lib; in an editable install, which imports
            each package from its source folder (where build_ext builds in
            place), the same place in the source folder of its package."""
            if not getattr(self, "editable_mode", False):
                return path
            parts = path.relative_to(self.build_lib).parts
            for i in range(len(parts), 0, -1):
                if ".".join(parts[:i]) in (self.packages or []):
                    return Path(self.get_package_dir(".".join(parts[:i]))).resolve().joinpath(*parts[i:])
            return Path(self.get_package_dir("")).resolve().joinpath(*parts)

    return BuildPy


def _require_cuda() -> None:
    import torch

    if torch.version.cuda is None:
        raise RuntimeError(
            f"create_extension(with_cuda=True) needs a CUDA build of torch, not {torch.__version__}"
        )
    if _nvcc() is None:
        raise RuntimeError(
            "create_extension(with_cuda=True): nvcc was not found (set CUDA_HOME, or put nvcc on PATH)"
        )


def _cuda_home() -> Path:
    """The CUDA toolkit: the first of $CUDA_HOME, $CUDA_PATH, torch's
    CUDA_HOME, the folder above nvcc's and /usr/local/cuda that holds
    include/cuda_runtime_api.h. torch takes the folder above the first nvcc
    on PATH, which for a wrapper script (/usr/local/bin/nvcc that execs the
    toolkit's) is /usr/local, without CUDA's headers."""
    from torch.utils.cpp_extension import CUDA_HOME

    nvcc = shutil.which("nvcc")
    candidates = [
        os.environ.get("CUDA_HOME"),
        os.environ.get("CUDA_PATH"),
        CUDA_HOME,
        nvcc and Path(nvcc).resolve().parents[1],
        "/usr/local/cuda",
    ]
    for home in candidates:
        if home and (Path(home) / "include" / "cuda_runtime_api.h").exists():
            return Path(home)
    raise RuntimeError(
        "create_extension(with_cuda=True): CUDA's headers (include/cuda_runtime_api.h) are in none of "
        f"{[str(c) for c in candidates if c]}; set CUDA_HOME to the CUDA toolkit"
    )


# C that compilers of 2017 warned of, and gcc 14 and clang 16 refuse in C99 and
# later: a pointer of another type (DenseFusion's THCudaLongTensor_size on a
# THCudaTensor*), a function called undeclared, an int where a pointer goes.
_C_2017 = "int *f(long *p) { return p; }\nint g(void) { return undeclared(); }\nint *h(void) { return 1; }\n"
_C_2017_FLAGS = (
    (),
    ("-fpermissive",),  # gcc 14 and later: those errors are warnings again
    (  # clang
        "-Wno-error=incompatible-pointer-types",
        "-Wno-error=implicit-function-declaration",
        "-Wno-error=int-conversion",
    ),
)
_c_flags_seen: dict[str, tuple[str, ...]] = {}


def _c_as_in_2017() -> tuple[str, ...]:
    """The flags with which $CC warns, as 2017's compilers did, where it now
    stops with an error (none for gcc 13 and older); found once per compiler
    by compiling a line of each kind. A C++ compiler as CC takes none."""
    cc = os.environ.get("CC", "cc")
    if _cc_is_cxx():
        return ()
    if cc not in _c_flags_seen:
        _c_flags_seen[cc] = ()
        for flags in _C_2017_FLAGS:
            try:
                probe = subprocess.run(
                    [*shlex.split(cc), "-x", "c", "-std=gnu11", "-fsyntax-only", *flags, "-"],
                    input=_C_2017, capture_output=True, text=True,
                )  # fmt: skip
            except OSError:  # no such compiler: the build says so
                break
            if probe.returncode == 0 and "not for C" not in probe.stderr:
                _c_flags_seen[cc] = flags
                break
    return _c_flags_seen[cc]


# A C++ function that ends without returning its value: gcc 8 and later,
# and clang, compile that end as unreachable, so a call runs on into the
# code laid out after it (DepthAwareCNN's depthavgpooling_forward_cuda, a
# .c source built with CC=g++, crashed so); gcc 5, 2017's, returned. The
# flags with which a compiler returns, as then: clang's, then gcc's (which
# leave out the unreachable end when -fsanitize=unreachable is on; an
# explicit __builtin_unreachable() then traps, with no runtime library).
_CXX_2017_FLAGS = (
    ("-fno-strict-return",),
    ("-fsanitize=unreachable", "-fsanitize-undefined-trap-on-error"),
)
_cxx_flags_seen: dict[str, tuple[str, ...]] = {}


def _cxx_as_in_2017(compiler: str) -> tuple[str, ...]:
    """The flags of _CXX_2017_FLAGS that `compiler` takes for C++, found
    once per compiler; none for one that takes neither."""
    if compiler not in _cxx_flags_seen:
        _cxx_flags_seen[compiler] = ()
        for flags in _CXX_2017_FLAGS:
            try:
                probe = subprocess.run(
                    [*shlex.split(compiler), "-x", "c++", "-c", "-o", os.devnull, *flags, "-"],
                    input="int f(int n) { return n; }\n", capture_output=True, text=True,
                )  # fmt: skip
            except OSError:  # no such compiler: the build says so
                break
            if probe.returncode == 0 and not probe.stderr.strip():
                _cxx_flags_seen[compiler] = flags
                break
    return _cxx_flags_seen[compiler]


def _includes_aten(source: Path) -> bool:
    """Whether a C++ source includes ATen itself (fairseq-py's 2017 ffi
    source: `#include <ATen/ATen.h>`)."""
    return re.search(r'^\s*#\s*include\s*[<"]ATen/', source.read_text(errors="replace"), re.M) is not None


@functools.cache
def _aten_cxx_version() -> str:
    """The C++ standard the installed torch's ATen needs ("17", or "20" from
    torch 2.14 on), as its ATen/ATen.h checks it."""
    header = _torch_root() / "include" / "ATen" / "ATen.h"
    text = header.read_text() if header.exists() else ""
    m = re.search(r"__cplusplus\s*<\s*(\d{4})\d\dL", text)
    return {"2017": "17", "2020": "20"}.get(m.group(1), "20") if m else "17"


def _aten_standard(flags: list[str]) -> str:
    """The -std flag for a source that includes ATen: the standard ATen needs,
    in GNU's dialect where the last -std of `flags` is one of GNU's."""
    std = [f for f in flags if f.startswith("-std=")]
    gnu = bool(std) and std[-1].startswith("-std=gnu")
    return f"-std={'gnu' if gnu else 'c'}++{_aten_cxx_version()}"


def _cc_is_cxx() -> bool:
    """Whether $CC is a C++ compiler (g++, clang++, c++), which compiles .c
    sources as C++: 2017 extensions with C++ in their .c files (templates in
    a CUDA kernel's header) were built with `CC=g++ python build.py`."""
    cc = shlex.split(os.environ.get("CC", "cc"))
    return bool(cc) and Path(cc[0]).name.endswith("++")


# What THC/THC.h includes besides CUDA's runtime (as THC's own headers did, so
# that code calling the libraries itself built) and the runtime's THC handles
# need: (header, library).
_THC_LIBRARIES = (("cublas_v2.h", "cublas"), ("cusparse.h", "cusparse"))


def _thc_libraries(cuda_home: Path) -> tuple[list[str], list[str]]:
    """The include and link flags for cuBLAS and cuSPARSE: the toolkit's,
    else those of the nvidia wheel torch runs on (a toolkit without them, as a
    conda nvcc alone). At run time each library resolves to the one torch has
    loaded (one soname)."""
    includes: list[str] = []
    links: list[str] = []
    spec = importlib.util.find_spec("nvidia")
    for header, lib in _THC_LIBRARIES:
        if (cuda_home / "include" / header).exists():
            links.append(f"-l{lib}")
            continue
        for root in spec.submodule_search_locations if spec else []:
            found = [
                (h, libs[0])
                for h in sorted(Path(root).glob(f"*/include/{header}"))
                if (libs := sorted(h.parents[1].glob(f"lib/lib{lib}.so.*")))
            ]
            if found:
                h, so = found[0]
                includes += [f"-I{h.parent}"] if f"-I{h.parent}" not in includes else []
                links += [f"-L{so.parent}", f"-l:{so.name}"]
                break
        else:
            raise RuntimeError(
                f"create_extension(with_cuda=True): lib{lib} (include/{header}, which THC/THC.h includes) "
                f"is neither in the CUDA toolkit at {cuda_home} nor in an nvidia wheel; install the "
                f"toolkit's {lib}"
            )
    return includes, links


def _nvcc() -> str | None:
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME is not None and (Path(CUDA_HOME) / "bin" / "nvcc").exists():
        return str(Path(CUDA_HOME) / "bin" / "nvcc")
    return shutil.which("nvcc")


def _cuda_arch_flags() -> list[str]:
    """-gencode flags for TORCH_CUDA_ARCH_LIST ("8.0;9.0+PTX"), else the visible
    GPU's architecture, else DEFAULT_CUDA_ARCH_LIST."""
    import torch

    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if not arch_list:
        if torch.cuda.is_available():
            arch_list = "{}.{}".format(*torch.cuda.get_device_capability())
        else:
            arch_list = DEFAULT_CUDA_ARCH_LIST
    flags = []
    for entry in re.split(r"[;\s]+", arch_list.strip()):
        arch = entry.removesuffix("+PTX").replace(".", "")
        flags.append(f"-gencode=arch=compute_{arch},code=sm_{arch}")
        if entry.endswith("+PTX"):
            flags.append(f"-gencode=arch=compute_{arch},code=compute_{arch}")
    return flags


def _build_root() -> Path:
    """torch's extension build root ($TORCH_EXTENSIONS_DIR, else the user's
    cache folder), found without importing torch: a build that has nothing
    to do takes well under a second."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        root = os.path.realpath(os.path.join(cache, "torch_extensions"))
    return Path(root) / "kernforge_legacy"


def _torch_root() -> Path:
    """torch's package folder (headers and libraries), without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("kernforge_legacy.ffi builds against torch, which is not installed")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _own_cxxflags(flags: dict[str, list[str]]) -> list[str]:
    """The generated op source's flags: C++17, for torch's stable ABI headers.
    The extension's own extra_compile_args are for its sources, not for the
    op wrappers (a -std=c99 or -std=c++11 there would break them)."""
    return ["-std=c++17", *_COMMON_FLAGS, *flags["defines"], *flags["includes"], *flags["cxx"]]


def _without_cxx_below_17(args: list[str], what: str, why: str, stacklevel: int) -> list[str]:
    """`args` less any C++ standard below 17, with a warning naming those left out."""
    kept = [a for a in args if not _CXX_BELOW_17.fullmatch(a)]
    if len(kept) < len(args):
        warnings.warn(
            f"kernforge_legacy.ffi: {what} {sorted(set(args) - set(kept))} left out: {why}",
            stacklevel=stacklevel,
        )
    return kept


def _cxx(c_text: str) -> str:
    """C types written for the generated C++ source: C99's `_Bool` is C++'s
    `bool` (the same type to the ABI), which C++ has no other name for."""
    return re.sub(r"\b_Bool\b", "bool", c_text)


def _calls_openmp(objects: list[Path]) -> bool:
    """Whether an object or archive calls the OpenMP runtime (nm's undefined
    symbols; False where there is no nm, and the link says what is missing)."""
    nm = shutil.which("nm")
    for obj in objects if nm else []:
        out = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True).stdout
        if any(line.split()[-1].startswith(_OPENMP_RUNTIME) for line in out.splitlines() if line.strip()):
            return True
    return False


def _undefined_references(output: str) -> dict[str, set[str]]:
    """The functions a failed link found undefined, each with the objects
    that call it (as the linker names them; "the link" where it names none)."""
    calls: dict[str, set[str]] = {}
    caller = "the link"
    for line in output.splitlines():
        # "ld: obj/0_f.o: in function `f':", then "f.c:(.text+0x9): undefined reference to `g'",
        # or both in one line: "ld: obj/0_f.o:(.data+0x0): undefined reference to `g'"
        where = re.search(r"(\S+\.o):(?: in function|\()", line)
        if where:
            caller = where.group(1).removeprefix("ld: ")
        missing = re.search(r"undefined reference to [`'\"]([A-Za-z_]\w*)", line)
        if missing:
            calls.setdefault(missing.group(1), set()).add(caller)
    return calls


@contextlib.contextmanager
def _exclusive(build_dir: Path):
    """`build_dir` (made if missing), held by this process alone while the
    block writes its build file and runs ninja there: two processes building
    at once (two pip builds, pytest-xdist's workers) share the runtime's
    folder, and two ninjas in one folder link objects the other is writing."""
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run_ninja(build_dir: Path, name: str, verbose: bool) -> None:
    beside = Path(sys.executable).parent / "ninja"  # the ninja package of a venv not on PATH
    ninja = shutil.which("ninja") or (str(beside) if beside.exists() else None)
    if ninja is None:
        raise RuntimeError("create_extension builds with ninja, which was not found: pip install ninja")
    result = subprocess.run(
        [ninja, "-C", str(build_dir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if result.returncode != 0:
        raise BuildError(f"building {name} failed:\n{result.stdout}")
    if verbose:
        print(result.stdout, end="")


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _esc(path) -> str:
    return str(path).replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _join(flags) -> str:
    return " ".join(shlex.quote(f).replace("$", "$$") for f in flags)
