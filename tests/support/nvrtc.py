"""NVRTC from the package index through ctypes, and the options CuPy 14.2 compiles a ``RawModule`` with.

This lets a machine without a GPU (CI) compile ``kernels/*.cu`` exactly as
``cupy.RawModule(code=..., options=...)`` does on a GPU. NVRTC needs no GPU
and no driver: only ``libnvrtc.so``, which NVIDIA publishes as wheels:

* CUDA 12: ``nvidia-cuda-nvrtc-cu12`` (``nvidia/cuda_nvrtc/lib/libnvrtc.so.12``),
  the NVRTC of ``cupy-cuda12x[ctk]``;
* CUDA 13: ``nvidia-cuda-nvrtc`` (``nvidia/cu13/lib/libnvrtc.so.13``), the
  NVRTC of ``cupy-cuda13x[ctk]`` (``nvidia-cuda-nvrtc-cu13`` on the index is an
  empty placeholder that says to use this one).

``pip install -e ".[nvrtc]"`` installs both.

What CuPy 14.2 adds to a ``RawModule``'s own options (``cupy_options``),
for the NVRTC backend, in order:

1. ``cupy/_core/core.pyx``, ``assemble_cupy_compiler_options``:
   ``--std=c++17`` unless an option already names a standard; ``-I`` options
   for the CCCL CuPy bundles (before the user's options), for CuPy's own
   headers and for the CUDA runtime headers (after them).
2. ``cupy/cuda/compiler.py``, ``_compile_with_cache_cuda``: ``-ftz=true``
   (and ``--device-debug --generate-line-info`` only under
   ``CUPY_CUDA_COMPILE_WITH_DEBUG=1``).
3. ``cupy/cuda/compiler.py``, ``_compile_using_nvrtc_no_warning`` with
   ``_get_arch_for_options_for_nvrtc``: ``-arch=sm_XX`` and a CUBIN, or
   ``-arch=compute_XX`` and PTX under ``CUPY_COMPILE_WITH_PTX=1`` (or for a GPU
   newer than the NVRTC knows, never the case for sm_80 and sm_90); then
   ``--device-as-default-execution-space`` (and ``--pch`` only under
   ``CUPY_NVRTC_USE_PCH=1``).

The ``-I`` options are left out here: they only name directories that
``#include`` searches, and shardarray's kernels include no header (the test
checks that), so they cannot change what is compiled.

Example (no NVRTC needed):
    >>> cupy_options(("--std=c++17",), 90)
    ('--std=c++17', '-ftz=true', '-arch=sm_90', '--device-as-default-execution-space')
    >>> cupy_options((), 80, ptx=True)
    ('--std=c++17', '-ftz=true', '-arch=compute_80', '--device-as-default-execution-space')
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The wheels that ship libnvrtc, by CUDA major version.
DISTRIBUTIONS = {12: "nvidia-cuda-nvrtc-cu12", 13: "nvidia-cuda-nvrtc"}

_LIBRARY = re.compile(r"libnvrtc\.so\.\d+")  # libnvrtc.so.12, not libnvrtc.alt.so.12 nor libnvrtc-builtins
_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$][\w$]*)", re.MULTILINE)


def cupy_options(options: Sequence[str], arch: int, *, ptx: bool = False) -> tuple[str, ...]:
    """The options CuPy 14.2 passes to ``nvrtcCompileProgram`` for ``RawModule(code=..., options=options)``.

    Args:
        options: the ``RawModule``'s own ``options``.
        arch: the GPU's compute capability as CuPy writes it (80: A100, 90: H100).
        ptx: PTX (``-arch=compute_XX``, CuPy under ``CUPY_COMPILE_WITH_PTX=1``)
            instead of a CUBIN (``-arch=sm_XX``, CuPy's default).

    Returns:
        The options in CuPy's order, without its ``-I`` options (see the module docstring).
    """
    out = tuple(options)
    if not any("-std=" in o for o in out):  # core.pyx: use_default_std
        out += ("--std=c++17",)
    out += ("-ftz=true",)  # compiler.py: _compile_with_cache_cuda
    out += (f"-arch=compute_{arch}" if ptx else f"-arch=sm_{arch}",)  # compiler.py: _get_arch_for_options_for_nvrtc
    return out + ("--device-as-default-execution-space",)  # compiler.py: _compile_using_nvrtc_no_warning


class NvrtcError(RuntimeError):
    """An NVRTC call other than the compilation itself failed (the compilation's failure is a ``Compiled``)."""


@dataclass(frozen=True)
class Compiled:
    """What one ``nvrtcCompileProgram`` gave.

    Attributes:
        ok: whether it compiled (``NVRTC_SUCCESS``).
        status: NVRTC's name for the result (``NVRTC_SUCCESS``, ``NVRTC_ERROR_COMPILATION``, ...).
        log: the program log: errors, warnings and remarks; empty for a clean compile.
        binary: the CUBIN (``-arch=sm_XX``) or the PTX (``-arch=compute_XX``); empty when ``ok`` is False.
        ptx: whether ``binary`` is PTX.
    """

    ok: bool
    status: str
    log: str
    binary: bytes
    ptx: bool

    def kernels(self) -> set[str]:
        """The names of the kernels the CUBIN or PTX defines: what ``cuModuleGetFunction`` finds."""
        return ptx_kernels(self.binary.decode()) if self.ptx else cubin_kernels(self.binary)


class Nvrtc:
    """One libnvrtc, loaded with ctypes.

    Args:
        path: the ``libnvrtc.so.<major>`` file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        lib = ctypes.CDLL(str(path))
        c_int_p, c_size_p, prog_p = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p
        strings = ctypes.POINTER(ctypes.c_char_p)
        signatures: dict[str, list[type]] = {
            "nvrtcVersion": [c_int_p, c_int_p],
            "nvrtcCreateProgram": [
                ctypes.POINTER(prog_p),
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_int,
                strings,
                strings,
            ],
            "nvrtcDestroyProgram": [ctypes.POINTER(prog_p)],
            "nvrtcCompileProgram": [prog_p, ctypes.c_int, strings],
            "nvrtcGetProgramLogSize": [prog_p, c_size_p],
            "nvrtcGetProgramLog": [prog_p, ctypes.c_char_p],
            "nvrtcGetPTXSize": [prog_p, c_size_p],
            "nvrtcGetPTX": [prog_p, ctypes.c_char_p],
            "nvrtcGetCUBINSize": [prog_p, c_size_p],
            "nvrtcGetCUBIN": [prog_p, ctypes.c_char_p],
            "nvrtcGetNumSupportedArchs": [c_int_p],
            "nvrtcGetSupportedArchs": [c_int_p],
        }
        for name, argtypes in signatures.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        lib.nvrtcGetErrorString.argtypes, lib.nvrtcGetErrorString.restype = [ctypes.c_int], ctypes.c_char_p
        self._lib = lib

    def _check(self, result: int, call: str) -> None:
        if result != 0:
            raise NvrtcError(f"{call}: {self._status(result)} ({self.path})")

    def _status(self, result: int) -> str:
        return (self._lib.nvrtcGetErrorString(result) or b"NVRTC error %d" % result).decode()

    @property
    def version(self) -> tuple[int, int]:
        """NVRTC's (major, minor) version, as ``nvrtcVersion`` gives it (CuPy's ``nvrtc.getVersion()``)."""
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self._lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        return major.value, minor.value

    @property
    def supported_archs(self) -> list[int]:
        """The compute capabilities this NVRTC compiles for (80 for sm_80, ...)."""
        n = ctypes.c_int()
        self._check(self._lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
        archs = (ctypes.c_int * n.value)()
        self._check(self._lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
        return list(archs)

    def compile(self, source: str, options: Sequence[str], name: str = "kern.cu") -> Compiled:
        """Compile ``source`` with ``options``, as CuPy's ``_NVRTCProgram`` does (no headers, no name expressions).

        Args:
            source: the CUDA C++ text.
            options: NVRTC's options, as given (``cupy_options`` makes CuPy's).
            name: the program's file name, as the log quotes it.

        Returns:
            The result, log and binary: a CUBIN unless an option is ``-arch=compute_XX`` (then PTX).

        Raises:
            NvrtcError: a call other than ``nvrtcCompileProgram`` failed.
        """
        ptx = any(o.startswith(("-arch=compute_", "--gpu-architecture=compute_")) for o in options)
        prog = ctypes.c_void_p()
        self._check(
            self._lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
            "nvrtcCreateProgram",
        )
        try:
            argv = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
            result = self._lib.nvrtcCompileProgram(prog, len(options), argv)
            log = self._read(prog, "nvrtcGetProgramLog").rstrip(b"\0").decode(errors="replace")
            binary = b""
            if result == 0:
                binary = self._read(prog, "nvrtcGetPTX" if ptx else "nvrtcGetCUBIN")
                binary = binary.rstrip(b"\0") if ptx else binary
            return Compiled(result == 0, self._status(result), log, binary, ptx)
        finally:
            self._check(self._lib.nvrtcDestroyProgram(ctypes.byref(prog)), "nvrtcDestroyProgram")

    def _read(self, prog: ctypes.c_void_p, getter: str) -> bytes:
        """The bytes ``getter`` (``nvrtcGetProgramLog``, ``nvrtcGetPTX``, ``nvrtcGetCUBIN``) fills, sized by its
        ``...Size`` call."""
        size = ctypes.c_size_t()
        self._check(getattr(self._lib, f"{getter}Size")(prog, ctypes.byref(size)), f"{getter}Size")
        buf = ctypes.create_string_buffer(size.value)
        self._check(getattr(self._lib, getter)(prog, buf), getter)
        return buf.raw


@dataclass(frozen=True)
class Installed:
    """A libnvrtc wheel found in this environment.

    Attributes:
        cuda: the CUDA major version it belongs to (12, 13).
        distribution: the wheel's name.
        version: the wheel's version (NVRTC's, e.g. ``12.9.86``).
        path: its ``libnvrtc.so.<major>``.
    """

    cuda: int
    distribution: str
    version: str
    path: Path


def installed(cuda: int) -> Installed | None:
    """The libnvrtc of ``DISTRIBUTIONS[cuda]`` when that wheel is installed, else None.

    Args:
        cuda: 12 or 13.

    Raises:
        FileNotFoundError: the wheel is installed but holds no ``libnvrtc.so.<major>`` (a broken install).
    """
    name = DISTRIBUTIONS[cuda]
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if _LIBRARY.fullmatch(file.name):
            return Installed(cuda, name, dist.version, Path(str(dist.locate_file(file))))
    raise FileNotFoundError(f"{name} {dist.version} is installed but lists no libnvrtc.so.<major>; reinstall it")


def ptx_kernels(ptx: str) -> set[str]:
    """The ``.entry`` names of a PTX text: its kernels.

    Example:
        >>> sorted(ptx_kernels(".visible .entry gelu_fwd_f32(\\n.param .u64 a\\n)\\n.func helper()"))
        ['gelu_fwd_f32']
    """
    return set(_PTX_ENTRY.findall(ptx))


def cubin_kernels(cubin: bytes) -> set[str]:
    """The global function symbols of a CUBIN (an ELF64 file, little-endian): its kernels, with
    ``extern "C"`` names unmangled.

    Raises:
        ValueError: ``cubin`` is not a little-endian ELF64 file.
    """
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not a little-endian ELF64 file (a CUBIN)")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", cubin, 0x3A)
    # section header: name, type, flags, addr, offset, size, link, info, addralign, entsize
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        for at in range(offset, offset + size, entsize):
            st_name, st_info, _, shndx = struct.unpack_from("<IBBH", cubin, at)
            if st_info >> 4 == 1 and st_info & 0xF == 2 and shndx != 0:  # STB_GLOBAL, STT_FUNC, defined
                end = cubin.index(b"\0", strtab + st_name)
                names.add(cubin[strtab + st_name : end].decode())
    return names
