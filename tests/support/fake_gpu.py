"""A host-memory stand-in for the parts of CuPy that shardarray's GPU path calls, to test that path without a GPU.

``FakeCupy(gpus=2).install(monkeypatch)`` puts a module named ``cupy`` (and
``cupy.cuda``) in ``sys.modules`` for one test and empties shardarray's GPU
caches. Arrays are NumPy arrays (``FakeArray``) that remember the GPU that
was current when they were made and expose ``.data.ptr`` and ``.device.id``
like CuPy's; every other ``cupy.<function>`` is NumPy's. What it records,
so tests can check the contracts a real GPU would enforce silently:

* ``Device``/``Stream`` scopes: the current GPU and stream (``current()``);
  ``Device(g).__enter__`` on a GPU that does not exist raises.
* ``RawModule``: every ``compile()`` with the GPU current at the time
  (``compiles``), every ``get_function`` (``functions``) and every launch
  with its grid, block, stream and argument types (``launches``). The
  source is run through the C preprocessor (``cpp``), so a kernel name the
  source does not define raises, and so does a launch whose arguments do
  not match the kernel's parameters (count, dtype of every pointer and
  scalar, contiguity), or one from another GPU than the module's.
* ``cuda.cublas``: one handle per GPU, its pointer mode, every
  ``setPointerMode`` (``pointer_mode_sets``) and ``gemmStridedBatchedEx``
  carried out in NumPy on the raw addresses, column-major as cuBLAS reads
  them (op N or T, float16/bfloat16/float32/float64), accumulated in the
  type ``computeType`` says
  (``gemms``). A host ``alpha`` read in device pointer mode raises.
* ``cuda.nccl``: ``tests/support/fake_nccl.py``.

``FakeCupy(gpus, strict=True)`` (or any ``FakeCupy(...)`` while
``FakeCupy.default_strict`` is True, as under ``pytest --backend=cupy``)
builds the strict stand-in of ``tests/support/strict_cupy.py`` instead:
arrays that are not NumPy arrays, CuPy 14.2's namespace, kernels that run.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import shutil
import subprocess
import sys
import time
import types
from typing import Any

import ml_dtypes  # noqa: F401  (registers np.dtype("bfloat16"))
import numpy as np

import fake_nccl

CUDA_R_16F, CUDA_R_32F, CUDA_R_64F, CUDA_R_16BF = 2, 0, 1, 14
_GEMM_TYPES = {CUDA_R_16F: np.dtype(np.float16), CUDA_R_16BF: np.dtype("bfloat16"),  # ml_dtypes registers the name
               CUDA_R_32F: np.dtype(np.float32), CUDA_R_64F: np.dtype(np.float64)}
CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_POINTER_MODE_HOST, CUBLAS_POINTER_MODE_DEVICE = 0, 1, 0, 1
CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT = 64, 68, 70, -1
#: the compute types each data type may use (cuBLAS's table for cublasGemmEx), their accumulator and alpha/beta type
_COMPUTE = {CUDA_R_16F: (CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_16F), CUDA_R_16BF: (CUBLAS_COMPUTE_32F,),
            CUDA_R_32F: (CUBLAS_COMPUTE_32F,), CUDA_R_64F: (CUBLAS_COMPUTE_64F,)}
_ACCUMULATOR = {CUBLAS_COMPUTE_16F: np.float16, CUBLAS_COMPUTE_32F: np.float32, CUBLAS_COMPUTE_64F: np.float64}


class FakeArray(np.ndarray):
    """A NumPy array standing for a CuPy array on one GPU."""

    _gpu: int = 0

    def __array_finalize__(self, obj: Any) -> None:
        self._gpu = getattr(obj, "_gpu", FakeCupy.active.device if FakeCupy.active else 0)

    @property
    def data(self) -> Any:  # CuPy's MemoryPointer: .ptr is the device address
        return types.SimpleNamespace(ptr=self.ctypes.data)

    @property
    def device(self) -> Any:
        return types.SimpleNamespace(id=self._gpu)

    def get(self, stream: Any = None) -> np.ndarray:
        return np.array(self)


def _fake(value: Any) -> Any:
    if isinstance(value, np.ndarray) and not isinstance(value, FakeArray):
        out = value.view(FakeArray)
        out._gpu = FakeCupy.active.device
        return out
    if isinstance(value, tuple):
        return tuple(_fake(v) for v in value)
    if isinstance(value, list):
        return [_fake(v) for v in value]
    return value


class _Module(types.ModuleType):
    """``cupy``: NumPy's functions, returning FakeArrays."""

    def __getattr__(self, name: str) -> Any:
        obj = getattr(np, name)
        if isinstance(obj, (type, np.ufunc)) or not callable(obj):
            return obj

        def call(*args: Any, **kwargs: Any) -> Any:
            return _fake(obj(*args, **kwargs))

        return call


class FakeCupy:
    """One fake CUDA machine with ``gpus`` GPUs (see the module docstring)."""

    active: FakeCupy | None = None
    #: whether ``FakeCupy(...)`` builds the strict stand-in (``strict_cupy.StrictCupy``) by default
    default_strict: bool = False

    def __new__(cls, gpus: int = 2, strict: bool | None = None) -> FakeCupy:
        if cls is FakeCupy and (FakeCupy.default_strict if strict is None else strict):
            from strict_cupy import StrictCupy

            cls = StrictCupy
        return super().__new__(cls)

    def __init__(self, gpus: int = 2, strict: bool | None = None) -> None:
        self.gpus = gpus
        self.strict = bool(strict)
        self.device = 0
        self.stream = 0  # the legacy default stream
        self._ptrs = itertools.count(0x7000)
        self.compiles: list[tuple[int, str]] = []  # (current GPU, first kernel name in the source)
        self.functions: list[tuple[int, str]] = []
        self.launches: list[dict[str, Any]] = []
        self.streams_made: list[tuple[int, int]] = []  # (GPU, stream)
        self.synchronized: list[int] = []
        self.waits: list[tuple[int, int]] = []  # (waiting stream, stream of the event)
        self.events: list[int] = []  # the stream of every recorded event
        self.pointer_modes: dict[int, int] = {}
        self.pointer_mode_sets: list[tuple[int, int]] = []
        self.gemms: list[dict[str, Any]] = []
        self.capturing: int | None = None  # the stream a CUDA graph capture records, if any
        self.captures: list[int] = []  # the stream of every capture begun
        self.graph_launches: list[int] = []  # the stream of every graph launch
        self.allocators: list[Any] = []  # every allocator made current with cupy.cuda.using_allocator
        self.module = self._build()

    # ------------------------------------------------------------ install
    def install(self, monkeypatch: Any) -> FakeCupy:
        """Make ``import cupy`` give this fake for one test, with shardarray's GPU caches emptied."""
        from shardarray.backend import cublas, cuda_kernels, cupy_backend

        monkeypatch.setitem(sys.modules, "cupy", self.module)
        monkeypatch.setitem(sys.modules, "cupy.cuda", self.module.cuda)
        monkeypatch.setattr(FakeCupy, "active", self)
        monkeypatch.setattr(cupy_backend, "_ON_DEVICES", {})
        for cache in ("_MODULES", "_FUNCTIONS", "_BROKEN"):
            monkeypatch.setattr(cuda_kernels, cache, {})
        monkeypatch.setattr(cublas, "_HOST_MODE", set(), raising=False)
        monkeypatch.setattr(cublas, "STATS", {k: 0 for k in getattr(cublas, "STATS", {})}, raising=False)
        monkeypatch.setattr(cublas, "_RAW", [_RawCublas(self)], raising=False)  # what sa.graphed's capture calls
        monkeypatch.setattr(cublas, "CAPTURING", [False], raising=False)
        from shardarray import backend

        monkeypatch.setattr(backend, "_BACKENDS", {k: v for k, v in backend._BACKENDS.items() if k != "cupy"})
        return self

    def refuse_in_capture(self, what: str) -> None:
        """Raise as CUDA does for what a stream capture cannot record (a host transfer, a synchronisation)."""
        if self.capturing is not None:
            raise RuntimeError(f"cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing "
                               f"({what})")

    def current(self) -> tuple[int, int]:
        """(current GPU, current stream)."""
        return self.device, self.stream

    # ------------------------------------------------------------ the module
    def _array_namespace(self) -> Any:
        """The module ``import cupy`` gives, before ``cuda`` and ``RawModule`` are added: NumPy's functions."""
        cupy = _Module("cupy")
        cupy.ndarray = FakeArray
        cupy.asnumpy = lambda a, stream=None: np.array(a)
        return cupy

    def _launch_arg(self, arg: Any) -> tuple[str, int | None, bool]:
        """(dtype or type name, GPU, C-contiguous) of a kernel argument (GPU None: not an array)."""
        if isinstance(arg, np.ndarray):
            return arg.dtype.name, getattr(arg, "_gpu", None), arg.flags.c_contiguous
        return type(arg).__name__, None, True

    def _run_kernel(self, name: str, args: tuple) -> None:
        """Carry out a launch. The lenient fake launches nothing (outputs keep what ``empty`` left), except the
        matrix addresses of a batched gemm, which the fake's cuBLAS then reads (garbage would crash it), and the
        adds and casts of ``kernels/elementwise.cu``, which every ``+`` and ``astype`` of CuPy blocks takes."""
        if name == "batch_pointers":
            np.asarray(args[0]).reshape(-1)[...] = batch_pointers(*args[1:])
        elif name.startswith(("add_vec_", "add_rows_", "cast_")):
            _elementwise(name, [np.asarray(a) if isinstance(a, np.ndarray) else a for a in args])

    def _build(self) -> Any:
        fake = self
        cupy = self._array_namespace()
        cupy.__stand_in__ = True  # not a real CuPy (helpers.gpu_available)

        class Device:
            def __init__(self, device: int | None = None) -> None:
                self.id = fake.device if device is None else int(device)
                self._saved: list[int] = []

            def __enter__(self) -> Device:
                if not 0 <= self.id < fake.gpus:
                    raise RuntimeError(f"cudaErrorInvalidDevice: GPU {self.id} of {fake.gpus}")
                self._saved.append(fake.device)
                fake.device = self.id
                return self

            def __exit__(self, *exc: Any) -> None:
                fake.device = self._saved.pop()

            def use(self) -> None:
                fake.device = self.id

            def synchronize(self) -> None:  # the whole GPU
                fake.refuse_in_capture("cudaDeviceSynchronize")
                fake.synchronized.append(-1 - self.id)

        class Stream:
            null: Any = None

            def __init__(self, null: bool = False, non_blocking: bool = False) -> None:
                self.ptr = 0 if null else next(fake._ptrs)
                self.device_id = fake.device
                self._saved: list[int] = []
                if not null:
                    fake.streams_made.append((fake.device, self.ptr))

            def __enter__(self) -> Stream:
                if self.ptr and self.device_id != fake.device:
                    raise RuntimeError(f"stream {self.ptr:#x} of GPU {self.device_id} used on GPU {fake.device}")
                self._saved.append(fake.stream)
                fake.stream = self.ptr
                return self

            def __exit__(self, *exc: Any) -> None:
                fake.stream = self._saved.pop()

            def synchronize(self) -> None:
                fake.refuse_in_capture("cudaStreamSynchronize")
                fake.synchronized.append(self.ptr)

            def record(self, event: Any = None) -> Any:
                event = Event() if event is None else event
                event.record(self)
                return event

            def wait_event(self, event: Any) -> None:
                if event.stream is None:
                    raise RuntimeError("waiting on an event that was never recorded")
                fake.waits.append((self.ptr, event.stream))

            def begin_capture(self, mode: Any = None) -> None:
                if self.ptr == 0:
                    raise RuntimeError("cudaErrorStreamCaptureUnsupported: the legacy default stream cannot capture")
                if fake.capturing is not None:
                    raise RuntimeError("cudaErrorIllegalState: a capture is already under way")
                fake.capturing = self.ptr
                fake.captures.append(self.ptr)

            def is_capturing(self) -> bool:
                return fake.capturing == self.ptr

            def end_capture(self) -> Graph:
                if fake.capturing != self.ptr:
                    raise RuntimeError("cudaErrorIllegalState: the stream is not capturing")
                fake.capturing = None
                return Graph(self.ptr)

        class Graph:
            """A captured graph. The fake ran the captured work when it was enqueued; a launch is only counted."""

            def __init__(self, stream: int) -> None:
                self.stream = stream

            def launch(self, stream: Any = None) -> None:
                fake.refuse_in_capture("cudaGraphLaunch")
                fake.graph_launches.append(fake.stream if stream is None else stream.ptr)

        class MemoryPool:
            def malloc(self, size: int) -> Any:  # the fake's arrays are host memory: never called for them
                raise RuntimeError("the fake GPU allocates no device memory")

        class _Allocator:
            def __init__(self, allocator: Any) -> None:
                self.allocator = allocator

            def __enter__(self) -> None:
                fake.allocators.append(self.allocator)

            def __exit__(self, *exc: Any) -> None:
                return None

        Stream.null = Stream(null=True)

        class Kernel:
            def __init__(self, name: str, device: int, params: list[tuple[str, bool]]) -> None:
                self.name, self.device, self.params = name, device, params

            def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
                if fake.device != self.device:
                    raise RuntimeError(f"kernel {self.name} of GPU {self.device} launched on GPU {fake.device}")
                if not all(0 < b <= 1024 for b in block) or not all(0 < g < 2**31 for g in grid):
                    raise RuntimeError(f"kernel {self.name}: invalid launch grid {grid} block {block}")
                info = [fake._launch_arg(a) for a in args]
                got = [name for name, _, _ in info]
                for i, ((_, gpu, contiguous), (ctype, pointer)) in enumerate(zip(info, self.params)):
                    if pointer and gpu is not None and gpu != fake.device:
                        raise RuntimeError(f"kernel {self.name}: argument {i} lives on GPU {gpu}")
                    if pointer and not contiguous:
                        raise RuntimeError(f"kernel {self.name}: argument {i} ({ctype}*) is not contiguous")
                want = [_C_TYPES[t] for t, _ in self.params]
                if self.params and got != want:
                    raise RuntimeError(f"kernel {self.name} takes {want} but was launched with {got}")
                fake.launches.append({"name": self.name, "device": fake.device, "stream": fake.stream,
                                      "grid": grid, "block": block, "args": got})
                fake._run_kernel(self.name, args)

        class RawModule:
            def __init__(self, code: str, options: tuple = ()) -> None:
                self.code, self.device = code, None
                self.kernels = _signatures(code)

            def compile(self) -> None:
                self.device = fake.device
                fake.compiles.append((fake.device, sorted(self.kernels)[0]))

            def get_function(self, name: str) -> Kernel:
                if self.device is None:
                    self.compile()
                if name not in self.kernels:
                    raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: {name} is not in the module ({sorted(self.kernels)})")
                fake.functions.append((fake.device, name))
                return Kernel(name, self.device, self.kernels[name])

        cupy.RawModule = RawModule

        def get_pointer_mode(handle: int) -> int:
            return fake.pointer_modes.setdefault(handle, CUBLAS_POINTER_MODE_HOST)

        def set_pointer_mode(handle: int, mode: int) -> None:
            fake.pointer_mode_sets.append((handle, mode))
            fake.pointer_modes[handle] = mode

        cublas = types.SimpleNamespace(
            CUBLAS_OP_N=CUBLAS_OP_N, CUBLAS_OP_T=CUBLAS_OP_T, CUBLAS_POINTER_MODE_HOST=CUBLAS_POINTER_MODE_HOST,
            CUBLAS_POINTER_MODE_DEVICE=CUBLAS_POINTER_MODE_DEVICE, CUBLAS_COMPUTE_32F=CUBLAS_COMPUTE_32F,
            CUBLAS_COMPUTE_16F=CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_64F=CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT=CUBLAS_GEMM_DEFAULT,
            getPointerMode=get_pointer_mode, setPointerMode=set_pointer_mode,
            gemmStridedBatchedEx=lambda *args: fake._cupy_gemm(*args),
        )  # no gemmBatchedEx: CuPy 14.2 binds none (AttributeError on an H200); shardarray calls it through ctypes
        runtime = types.SimpleNamespace(CUDA_R_16F=CUDA_R_16F, CUDA_R_32F=CUDA_R_32F, CUDA_R_64F=CUDA_R_64F,
                                        CUDA_R_16BF=CUDA_R_16BF,
                                        getDeviceCount=lambda: fake.gpus,
                                        getDeviceProperties=lambda gpu: {"name": b"Fake GPU (tests/support/fake_gpu.py)"})

        class Event:
            def __init__(self) -> None:
                self.stream: int | None = None
                self.time: float | None = None

            def record(self, stream: Any = None) -> None:
                self.stream = fake.stream if stream is None else stream.ptr
                self.time = time.perf_counter()
                fake.events.append(self.stream)

            def synchronize(self) -> None:
                fake.synchronized.append(self.stream)

        class _Current(Stream):
            """``cupy.cuda.get_current_stream()``: the current stream as a Stream (no new one is made)."""

            def __init__(self) -> None:
                self.ptr, self.device_id, self._saved = fake.stream, fake.device, []

        def get_elapsed_time(start: Event, end: Event) -> float:  # milliseconds, as CuPy's
            if start.time is None or end.time is None:
                raise RuntimeError("cudaErrorInvalidResourceHandle: an event that was never recorded")
            return 1e3 * (end.time - start.time)

        device = types.SimpleNamespace(get_cublas_handle=lambda: 1000 + fake.device)
        cupy.cuda = types.SimpleNamespace(
            Device=Device, Stream=Stream, Event=Event, runtime=runtime, device=device, cublas=cublas,
            nccl=fake_nccl, get_current_stream=_Current, get_elapsed_time=get_elapsed_time,
            MemoryPool=MemoryPool, using_allocator=_Allocator, graph=types.SimpleNamespace(Graph=Graph),
        )
        cupy.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
        return cupy

    # ------------------------------------------------------------ cuBLAS
    def _cupy_gemm(self, *args: Any) -> None:
        """CuPy's ``cublas.gemmStridedBatchedEx``: it refuses a capturing stream before calling cuBLAS."""
        if self.capturing is not None:
            raise NotImplementedError("calling cuBLAS API during stream capture is currently unsupported")
        self._gemm(*args)

    def _gemm_batched(self, handle: int, transa: int, transb: int, m: int, n: int, k: int, alpha: int, a: int,
                      atype: int, lda: int, b: int, btype: int, ldb: int, beta: int, c: int, ctype: int, ldc: int,
                      batch: int, compute: int, algo: int) -> None:
        """``cublasGemmBatchedEx``: the matrices' addresses are read from the three pointer arrays (device memory,
        here host memory), then each product is carried out as ``_gemm`` does; recorded as one call."""
        ptrs = [np.frombuffer((ctypes.c_char * (8 * batch)).from_address(p), np.uint64) if batch else []
                for p in (a, b, c)]
        before = len(self.gemms)
        for pa, pb, pc in zip(*ptrs):
            self._gemm(handle, transa, transb, m, n, k, alpha, int(pa), atype, lda, 0, int(pb), btype, ldb, 0,
                       beta, int(pc), ctype, ldc, 0, 1, compute, algo)
        record = dict(self.gemms[before]) if batch else {"m": m, "n": n, "k": k, "compute": compute}
        del self.gemms[before:]
        self.gemms.append({**record, "batch": batch, "pointers": True})

    def _gemm(self, handle: int, transa: int, transb: int, m: int, n: int, k: int, alpha: int, a: int, atype: int,
              lda: int, stride_a: int, b: int, btype: int, ldb: int, stride_b: int, beta: int, c: int, ctype: int,
              ldc: int, stride_c: int, batch: int, compute: int, algo: int) -> None:
        if handle != 1000 + self.device:
            raise RuntimeError(f"cuBLAS handle {handle} of another GPU used on GPU {self.device}")
        if self.pointer_modes.get(handle, CUBLAS_POINTER_MODE_HOST) != CUBLAS_POINTER_MODE_HOST:
            raise RuntimeError("alpha/beta are host addresses but the handle is in device pointer mode")
        ops = (CUBLAS_OP_N, CUBLAS_OP_T)
        wide = ctype == CUDA_R_32F and atype in (CUDA_R_16F, CUDA_R_16BF)  # 16-bit in, float32 out (cuBLAS's table)
        if (transa not in ops or transb not in ops or atype != btype or atype not in _GEMM_TYPES
                or (ctype != atype and not wide)):
            raise RuntimeError(f"the fake gemm takes N/T products of one float type (16-bit ones may write float32), "
                               f"got {transa, transb, atype, btype, ctype}")
        dt = _GEMM_TYPES[atype]
        ct = _GEMM_TYPES[ctype]
        # op(A) is m x k: stored m x k (N, lda >= m) or k x m (T, lda >= k); op(B) is k x n likewise
        rows_a, cols_a = (m, k) if transa == CUBLAS_OP_N else (k, m)
        rows_b, cols_b = (k, n) if transb == CUBLAS_OP_N else (n, k)
        if compute not in _COMPUTE[atype] or lda < max(1, rows_a) or ldb < max(1, rows_b) or ldc < max(1, m):
            raise RuntimeError(f"CUBLAS_STATUS_INVALID_VALUE: compute {compute}, lda {lda}, ldb {ldb}, ldc {ldc}")
        acc = _ACCUMULATOR[compute]
        size = 8 if compute == CUBLAS_COMPUTE_64F else 4  # alpha and beta: double for 64F compute, else float
        scale = [float(np.frombuffer((ctypes.c_char * size).from_address(p), np.float64 if size == 8 else np.float32)[0])
                 for p in (alpha, beta)]
        it = dt.itemsize
        for i in range(batch):
            ma = _column_major(a + it * i * stride_a, rows_a, cols_a, lda, dt)
            mb = _column_major(b + it * i * stride_b, rows_b, cols_b, ldb, dt)
            ma, mb = (ma if transa == CUBLAS_OP_N else ma.T), (mb if transb == CUBLAS_OP_N else mb.T)
            mc = _column_major(c + ct.itemsize * i * stride_c, m, n, ldc, ct)
            if acc == np.float16:  # accumulate in float16, one rank-1 update at a time
                total = np.zeros((m, n), acc)
                for j in range(k):
                    total = (total + np.outer(ma[:, j].astype(np.float32), mb[j].astype(np.float32)).astype(acc)).astype(acc)
            else:
                total = ma.astype(acc) @ mb.astype(acc)
            out = scale[0] * total.astype(np.float64)
            if scale[1] != 0:  # cuBLAS does not read C when beta is 0 (it may be uninitialized)
                out = out + scale[1] * mc.astype(np.float64)
            mc[...] = out.astype(ct)
        self.gemms.append({"m": m, "n": n, "k": k, "batch": batch, "compute": compute, "stream": self.stream,
                           "dtype": dt.name, "out_dtype": ct.name, "ops": (transa, transb)})


def batch_pointers(nb: Any, n2: Any, *bases_and_strides: Any) -> np.ndarray:
    """What ``kernels/gemm_pointers.cu``'s ``batch_pointers`` writes: for each (base, s1, s2) of A, B and C,
    ``base + (i // n2) * s1 + (i % n2) * s2`` for ``i < nb``, one after the other (uint64)."""
    i = np.arange(int(nb), dtype=np.int64)
    j, k = i // int(n2), i % int(n2)
    triples = zip(bases_and_strides[0::3], bases_and_strides[1::3], bases_and_strides[2::3])
    return np.concatenate([np.uint64(b) + (j * int(s1) + k * int(s2)).astype(np.uint64) for b, s1, s2 in triples])


class _RawCublas:
    """``cublas.RawCublas`` (cuBLAS through ctypes, used while a graph is captured) on the fake: its gemm."""

    def __init__(self, fake: FakeCupy) -> None:
        self.fake = fake
        self.calls = 0
        self.captured = 0  # the calls made while a stream was capturing

    def _count(self) -> None:
        self.calls += 1
        self.captured += self.fake.capturing is not None

    def gemmStridedBatchedEx(self, handle: int, *args: Any) -> None:
        self._count()
        self.fake._gemm(handle, *args)

    def gemmBatchedEx(self, handle: int, *args: Any) -> None:
        self._count()
        self.fake._gemm_batched(handle, *args)


def _elementwise(name: str, args: list) -> None:
    """``add_vec``, ``add_rows`` and the casts of ``kernels/elementwise.cu`` on the lenient fake's arrays: the sum in
    float32 (float64 for float64) rounded once, the cast by NumPy's ``astype``."""
    if name.startswith("cast_"):
        x, y = args[0], args[1]
        y.reshape(-1)[...] = x.reshape(-1).astype(y.dtype)
        return
    a, b, y = args[0], args[1], args[2]
    acc = np.float64 if a.dtype == np.float64 else np.float32
    total = a.reshape(-1, b.size if name.startswith("add_rows_") else a.size).astype(acc) + b.reshape(-1).astype(acc)
    y.reshape(-1)[...] = total.reshape(-1).astype(y.dtype)


def _column_major(ptr: int, rows: int, cols: int, ld: int, dtype: Any = np.float16) -> np.ndarray:
    """A writable (rows, cols) view of a column-major matrix with leading dimension ``ld`` (only its own bytes)."""
    dtype = np.dtype(dtype)
    count = ld * (cols - 1) + rows if cols and rows else 0
    flat = np.frombuffer((ctypes.c_char * (dtype.itemsize * count)).from_address(ptr), dtype)
    return np.lib.stride_tricks.as_strided(flat, (rows, cols), (dtype.itemsize, dtype.itemsize * ld), writeable=True)


#: C parameter types of the kernels -> the dtype (or NumPy scalar type) an argument must have
_C_TYPES = {"uptr_t": "uint64", "half_t": "float16", "bf16_t": "bfloat16", "Acc<bf16_t>::type": "float32", "float": "float32", "double": "float64", "index_t": "int64",
            "Acc<half_t>::type": "float32", "Acc<float>::type": "float32", "Acc<double>::type": "float64"}


def _signatures(code: str) -> dict[str, list[tuple[str, bool]]]:
    """``{kernel: [(C type, is a pointer), ...]}`` of the ``extern "C"`` kernels, macros expanded by ``cpp``.

    Without ``cpp`` the names come from the macro text and the parameters are not checked (empty lists).
    """
    if shutil.which("cpp") is None:
        return {name: [] for name in _kernel_names(code)}
    run = subprocess.run(["cpp", "-P"], input=code, capture_output=True, text=True, check=True)
    out = {}
    for name, params in re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', run.stdout):
        out[name] = []
        for p in params.split(","):
            p = p.strip().removeprefix("const ").rsplit(" ", 1)[0].strip()
            out[name].append((p.rstrip("*").strip(), p.endswith("*")))
    return out


def _kernel_names(code: str) -> set[str]:
    """The ``extern "C"`` kernels a source defines, macros expanded for the three float suffixes."""
    names = set(re.findall(r'extern "C" __global__ void (\w+)\(', code))
    for macro, body in re.findall(r"#define (\w+)\(S, [^)]*\)((?:.*\\\n)*.*)", code):
        if re.search(rf"^(?:FOR_FLOATS\({macro}\)|{macro}\((?:f16|f32|f64),)", code, re.M) is None:
            continue
        for base in re.findall(r"__global__ void (\w+)_##S\(", body):
            names |= {f"{base}_{s}" for s in ("f16", "f32", "f64")
                      if re.search(rf"^(?:FOR_FLOATS\({macro}\)|{macro}\({s},)", code, re.M)}
    return names
