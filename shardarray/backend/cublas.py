"""Floating-point matrix products straight on cuBLAS: 16-bit on tensor cores, no copies for transposed operands.

CuPy's ``matmul`` upcasts bfloat16 products to float32 (a copy of each
operand, a float32 SIMT gemm, a copy back) and float16 batched (3-D)
products too, and copies a batched operand that is not C-contiguous. On an
H200 that made a bfloat16 training step run most of its products in float32
(``benchmarks/results/gpu-h200/profile-bfloat16-before.log``). So
``batched_matmul`` calls ``cublasGemmStridedBatchedEx`` itself for 2-D and
3-D operands of one real floating dtype:

* float16 (``CUDA_R_16F``) and bfloat16 (``CUDA_R_16BF``) in and out,
  float32 compute (``CUBLAS_COMPUTE_32F``): tensor cores;
* float32 with ``CUBLAS_COMPUTE_32F`` (IEEE float32, no TF32: what CuPy and
  PyTorch do by default) and float64 with ``CUBLAS_COMPUTE_64F``.

Each operand is read in place when its matrices are row-major (op N) or
column-major (op T, a transposed view such as the weight gradient's
``x.T @ dy``) with one batch stride; anything else is made contiguous
first. Other dtypes (complex, integer, mixed) go to ``cupy.matmul``.

cuBLAS reads ``alpha``/``beta`` as host addresses only in host pointer mode,
CuPy's default: it is set once per handle (CuPy's own calls restore the mode
they change). ``STATS`` counts the strided batched gemms, so tests can tell
the cuBLAS path ran.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import BFLOAT16
from ..errors import BackendError
from . import cuda_kernels

#: dtype -> (cudaDataType_t name and value, cublasComputeType_t name and value, the host scalar type of alpha/beta)
#: (library_types.h: CUDA_R_16F = 2, CUDA_R_16BF = 14, CUDA_R_32F = 0, CUDA_R_64F = 1;
#: cublas_api.h: CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70)
CUDA_TYPES: dict[np.dtype, tuple[tuple[str, int], tuple[str, int], Any]] = {
    np.dtype(np.float16): (("CUDA_R_16F", 2), ("CUBLAS_COMPUTE_32F", 68), np.float32),
    BFLOAT16: (("CUDA_R_16BF", 14), ("CUBLAS_COMPUTE_32F", 68), np.float32),
    np.dtype(np.float32): (("CUDA_R_32F", 0), ("CUBLAS_COMPUTE_32F", 68), np.float32),
    np.dtype(np.float64): (("CUDA_R_64F", 1), ("CUBLAS_COMPUTE_64F", 70), np.float64),
}
#: alpha = 1 and beta = 0 in each host scalar type (kept alive: cuBLAS reads them during the call)
_SCALARS: dict[Any, tuple[np.ndarray, np.ndarray]] = {
    t: (np.array(1.0, dtype=t), np.array(0.0, dtype=t)) for t in (np.float32, np.float64)
}
_SCALAR_PTRS: dict[Any, tuple[int, int]] = {
    t: (one.ctypes.data, zero.ctypes.data) for t, (one, zero) in _SCALARS.items()
}
_HOST_MODE: set[int] = set()  # cuBLAS handles already put in host pointer mode
#: how many ``cublasGemmStridedBatchedEx`` calls were made (``captured``: of them, while a CUDA graph captured),
#: and pointer-mode changes
STATS: dict[str, int] = {"gemm_strided_batched": 0, "gemm_batched": 0, "captured": 0, "pointer_mode_set": 0}
#: ``[True]`` while ``sa.graphed`` captures a CUDA graph on this thread's GPU stream: CuPy's cuBLAS wrappers refuse
#: a capturing stream (they check it before setting the handle's stream), so the products then call cuBLAS
#: through ctypes (``raw_cublas``), which cuBLAS itself supports in stream capture.
CAPTURING: list[bool] = [False]
_RAW: list[Any] = []  # the ctypes binding, made on first use


class RawCublas:
    """``cublasSetStream``, ``cublasGemmStridedBatchedEx`` and ``cublasGemmBatchedEx`` of the libcublas CuPy
    loaded, through ctypes.

    Each gemm takes CuPy's arguments (addresses as ints) and first sets the handle's stream to the current one,
    as CuPy's wrappers do, without their refusal of a capturing stream. ``sa.graphed`` captures through it, and
    the pointer-batched gemm always goes through it (CuPy binds no ``cublasGemmBatchedEx``).
    """

    def __init__(self, lib: Any) -> None:
        import ctypes as c

        p, i, ll = c.c_void_p, c.c_int, c.c_longlong
        self._set_stream = lib.cublasSetStream_v2
        self._set_stream.argtypes, self._set_stream.restype = [p, p], i
        self._gemm = lib.cublasGemmStridedBatchedEx
        self._gemm.argtypes = [p, i, i, i, i, i, p, p, i, i, ll, p, i, i, ll, p, p, i, i, ll, i, i, i]
        self._gemm.restype = i
        self._batched = lib.cublasGemmBatchedEx
        self._batched.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i, i]
        self._batched.restype = i

    def _call(self, name: str, fn: Any, handle: int, args: tuple) -> None:
        import cupy

        for what, status in (
            ("cublasSetStream", self._set_stream(handle, cupy.cuda.get_current_stream().ptr)),
            (name, fn(handle, *args)),
        ):
            if status:
                raise RuntimeError(f"{what} failed with cuBLAS status {status} (called through ctypes)")

    def gemmStridedBatchedEx(self, handle: int, *args: Any) -> None:
        self._call("cublasGemmStridedBatchedEx", self._gemm, handle, args)

    def gemmBatchedEx(self, handle: int, *args: Any) -> None:
        self._call("cublasGemmBatchedEx", self._batched, handle, args)


def raw_cublas() -> Any:
    """The ``RawCublas`` of the libcublas this process loaded (found in ``/proc/self/maps``, else by soname)."""
    if _RAW:
        return _RAW[0]
    import ctypes

    candidates = []
    try:
        with open("/proc/self/maps") as f:
            candidates = sorted({line.split()[-1] for line in f if "/libcublas.so" in line})
    except OSError:  # pragma: no cover - not Linux
        pass
    for name in [*candidates, "libcublas.so.13", "libcublas.so.12", "libcublas.so"]:
        try:
            _RAW.append(RawCublas(ctypes.CDLL(name)))
            return _RAW[0]
        except (OSError, AttributeError):
            continue
    raise BackendError(
        "no libcublas with cublasGemmStridedBatchedEx could be loaded (looked in /proc/self/maps and "
        "for libcublas.so.13/.12); install CuPy's CUDA libraries (pip install 'shardarray[cuda13]')"
    )


def calls_cublas(a_dtype: Any, b_dtype: Any, a_ndim: int, b_ndim: int) -> bool:
    """Whether ``batched_matmul`` calls cuBLAS itself: one real floating dtype on both sides, 2-D or 3-D.

    Example:
        >>> calls_cublas(np.float16, np.float16, 3, 3), calls_cublas("bfloat16", "bfloat16", 2, 2)
        (True, True)
        >>> calls_cublas(np.float32, np.float32, 3, 3), calls_cublas("bfloat16", np.float16, 3, 3)
        (True, False)
        >>> calls_cublas(np.complex64, np.complex64, 2, 2), calls_cublas(np.float32, np.float32, 3, 2)
        (False, False)
    """
    a, b = np.dtype(a_dtype), np.dtype(b_dtype)
    return a == b and a in CUDA_TYPES and a_ndim == b_ndim and a_ndim in (2, 3)


def _host_pointer_mode(cublas: Any, handle: int) -> None:
    """Put ``handle`` in host pointer mode (alpha and beta are host addresses), once per handle."""
    if handle in _HOST_MODE:
        return
    host = getattr(cublas, "CUBLAS_POINTER_MODE_HOST", 0)
    if cublas.getPointerMode(handle) != host:
        cublas.setPointerMode(handle, host)
        STATS["pointer_mode_set"] += 1
    _HOST_MODE.add(handle)


def matrix_layout(x: Any) -> tuple[bool, int, int] | None:
    """How cuBLAS can read the (B, R, C) array ``x`` in place: ``(transposed, ld, batch_stride)`` in elements.

    ``transposed`` False: each matrix is row-major with leading dimension
    ``ld`` >= C (element (r, c) at ``r * ld + c``); True: column-major with
    ``ld`` >= R (at ``c * ld + r``). None when neither holds (negative or
    mixed strides, a broadcast batch): the caller makes ``x`` contiguous.

    Example:
        >>> import numpy as np
        >>> x = np.zeros((2, 3, 4), np.float32)
        >>> matrix_layout(x), matrix_layout(x.transpose(0, 2, 1)), matrix_layout(x[:, :, ::2])
        ((False, 4, 12), (True, 4, 12), None)
    """
    b, r, c = x.shape
    it = x.itemsize
    sb, sr, sc = (s // it for s in x.strides)
    if any(s * it != full for s, full in zip((sb, sr, sc), x.strides)):
        return None
    if c == 1:
        sc = 1 if sr != 1 else max(r, 1)  # a single column: its stride is free
    if r == 1:
        sr = max(c, 1) if sc == 1 else 1  # a single row likewise
    if b == 1:
        sb = r * c
    if sb <= 0:
        return None
    if sc == 1 and sr >= max(c, 1):
        return False, sr, sb
    if sr == 1 and sc >= max(r, 1):
        return True, sc, sb
    return None


class _Gemm:
    """What ``batched_matmul`` works out once per operand signature (dtypes, shapes, strides)."""

    __slots__ = (
        "args_a",
        "args_b",
        "args_c",
        "compute",
        "copy_a",
        "copy_b",
        "dtype",
        "mnk",
        "scalars",
        "shape",
        "squeeze",
    )

    def __init__(self, **kw: Any) -> None:
        for k, v in kw.items():
            setattr(self, k, v)


_PLANS: dict[tuple[Any, ...], _Gemm | None] = {}
_NO_PLAN: Any = object()  # "no plan yet" (None is a plan: cupy.matmul)


def _plan(a: Any, b: Any, out: Any = None, out_dtype: Any = None) -> _Gemm | None:
    """The cuBLAS call for ``a @ b``, or None for ``cupy.matmul`` (another dtype, broadcasting, empty, an ``out``
    whose matrices are not row-major with one batch stride)."""
    from cupy.cuda import cublas, runtime

    if not calls_cublas(a.dtype, b.dtype, a.ndim, b.ndim):
        return None
    squeeze = a.ndim == 2
    sa_, sb_ = (a[None], b[None]) if squeeze else (a, b)
    nb, m, k = sa_.shape
    n = sb_.shape[2]
    if sb_.shape[0] != nb or sb_.shape[1] != k:
        return None  # broadcasting or a mismatch: CuPy's rules and errors
    la, lb = matrix_layout(sa_), matrix_layout(sb_)
    (dname, dvalue), (cname, cvalue), scalar = CUDA_TYPES[np.dtype(a.dtype)]
    c_type = getattr(runtime, dname, dvalue)
    if out_dtype is not None and np.dtype(out_dtype) != np.dtype(a.dtype):
        if np.dtype(out_dtype) != np.float32 or np.dtype(a.dtype) not in (np.dtype(np.float16), BFLOAT16):
            return None  # cuBLAS writes a wider C only for 16-bit inputs: float32
        c_type = getattr(runtime, "CUDA_R_32F", 0)
    op_n, op_t = getattr(cublas, "CUBLAS_OP_N", 0), getattr(cublas, "CUBLAS_OP_T", 1)
    # row-major C = A B is column-major C^T = B^T A^T: B first. A row-major operand is, read column-major,
    # already its transpose (op N); a column-major one (a transposed view) needs op T.
    ta, lda, stra = la if la is not None else (False, k, m * k)
    tb, ldb, strb = lb if lb is not None else (False, n, k * n)
    args_c = (n, m * n)
    if out is not None:
        lc = None
        if out.dtype == np.dtype(out_dtype or a.dtype) and out.shape == ((m, n) if squeeze else (nb, m, n)):
            lc = matrix_layout(out[None] if squeeze else out)
        if lc is None or lc[0]:
            return None  # C must be row-major: cuBLAS writes C^T column-major
        args_c = (lc[1], lc[2])
    return _Gemm(
        copy_a=la is None,
        copy_b=lb is None,
        dtype=(getattr(runtime, dname, dvalue), c_type),
        compute=getattr(cublas, cname, cvalue),
        scalars=_SCALAR_PTRS[scalar],
        squeeze=squeeze,
        shape=(m, n) if squeeze else (nb, m, n),
        mnk=(nb, m, n, k),
        args_a=(op_t if ta else op_n, lda, stra),
        args_b=(op_t if tb else op_n, ldb, strb),
        args_c=args_c,
    )


def _cached_plan(key: tuple, make: Any) -> Any:
    """The plan of ``key`` (``make()`` on first use): the products of a model's step repeat their signatures."""
    plan = _PLANS.get(key, _NO_PLAN)
    if plan is _NO_PLAN:
        if len(_PLANS) > 4096:
            _PLANS.clear()
        plan = _PLANS[key] = make()
    return plan


def _api(call: str = "gemmStridedBatchedEx") -> tuple[Any, int]:
    """A cuBLAS binding with ``call`` and the current GPU's handle (in host pointer mode): CuPy's, or the ctypes
    binding while ``sa.graphed`` captures (``CAPTURING``; counted in ``STATS["captured"]``) and for a ``call``
    CuPy does not bind (CuPy 14 has no ``cublasGemmBatchedEx``: seen on an H200 with cupy-cuda13x 14.2)."""
    import cupy
    from cupy.cuda import cublas

    handle = cupy.cuda.device.get_cublas_handle()
    if handle not in _HOST_MODE:
        _host_pointer_mode(cublas, handle)
    if CAPTURING[0]:
        STATS["captured"] += 1
        return raw_cublas(), handle
    return (cublas if hasattr(cublas, call) else raw_cublas()), handle


def batched_matmul(a: Any, b: Any, out: Any = None, out_dtype: Any = None) -> Any:
    """``a @ b`` for (B, M, K) and (B, K, N), or (M, K) and (K, N), CuPy arrays on the current device and stream.

    One ``cublasGemmStridedBatchedEx`` where ``calls_cublas`` holds (module
    docstring), else ``cupy.matmul``. The result is C-contiguous, or written
    into ``out`` (same dtype and shape; any view whose matrices are row-major
    with one batch stride, e.g. a slice of a larger array in another dim
    order) and returned. ``out_dtype`` float32 for float16 or bfloat16
    operands: the float32 accumulators are written as they are (no rounding
    to 16 bits). The call's arguments are worked out once per
    signature (dtypes, shapes, strides): the step of a model makes the same few
    hundred products every time.
    """
    import cupy
    from cupy.cuda import cublas

    key: tuple[Any, ...] = (a.dtype.num, b.dtype.num, a.shape, a.strides, b.shape, b.strides, a.itemsize)
    if out is not None or out_dtype is not None:
        key = (*key, out_dtype, None if out is None else (out.dtype.num, out.shape, out.strides))
    plan = _cached_plan(key, lambda: _plan(a, b, out, out_dtype))
    if plan is None:
        c = cupy.matmul(a, b) if out_dtype is None else cupy.matmul(a.astype(out_dtype), b.astype(out_dtype))
        if out is None:
            return c
        out[...] = c
        return out
    if plan.copy_a:
        a = cupy.ascontiguousarray(a)
    if plan.copy_b:
        b = cupy.ascontiguousarray(b)
    nb, m, n, k = plan.mnk
    c_dtype = out_dtype or a.dtype
    if nb * m * n * k == 0:  # nothing to multiply: zeros (or an empty array) of the result's dtype
        if out is None:
            return cupy.zeros(plan.shape, dtype=c_dtype)
        out[...] = 0
        return out
    c = cupy.empty(plan.shape, dtype=c_dtype) if out is None else out
    ldc, strc = plan.args_c
    op_a, lda, stra = plan.args_a
    op_b, ldb, strb = plan.args_b
    one, zero = plan.scalars
    dtype, c_type = plan.dtype
    api, handle = _api()
    api.gemmStridedBatchedEx(
        handle,
        op_b,
        op_a,
        n,
        m,
        k,
        one,
        b.data.ptr,
        dtype,
        ldb,
        strb,
        a.data.ptr,
        dtype,
        lda,
        stra,
        zero,
        c.data.ptr,
        c_type,
        ldc,
        strc,
        nb,
        plan.compute,
        getattr(cublas, "CUBLAS_GEMM_DEFAULT", -1),
    )
    STATS["gemm_strided_batched"] += 1
    return c


def matmul_two_batch_dims(a: Any, b: Any, out: Any) -> bool:
    """``out[i, j] = a[i, j] @ b[i, j]`` for strided 4-D views (B1, B2, M, K), (B1, B2, K, N), (B1, B2, M, N) whose
    two batch dims do not merge into one stride, in one ``cublasGemmBatchedEx`` on matrix addresses computed on
    the device (``cuda_kernels.batch_pointers``): no copy of an operand or of the result. Attention's products
    read q, k and v as (batch, seq, heads, d_kv) this way.

    Returns False (nothing done) where it does not apply: a dtype ``calls_cublas`` refuses, an empty dim,
    matrices cuBLAS cannot read in place (or an output slice that is not row-major), or no fused kernels
    (``SHARDARRAY_KERNELS=0``, a failed compile); the caller then multiplies another way.
    """
    import cupy
    from cupy.cuda import cublas

    if a.ndim != 4 or not calls_cublas(a.dtype, b.dtype, 3, 3) or out.dtype != a.dtype or 0 in out.shape:
        return False
    if 0 in a.shape or not cuda_kernels.supports(cupy, a.dtype, "gemm_pointers"):
        return False
    key = ("two-batch", a.dtype.num, a.shape, a.strides, b.shape, b.strides, out.strides)
    plan = _cached_plan(key, lambda: _plan(a[0, :1], b[0, :1], out[0, :1]))
    if plan is None or plan.copy_a or plan.copy_b:
        return False
    n1, n2, m, k = a.shape
    n = b.shape[3]
    ptrs = cuda_kernels.batch_pointers(
        cupy,
        n1 * n2,
        n2,
        (a.data.ptr, a.strides[0], a.strides[1]),
        (b.data.ptr, b.strides[0], b.strides[1]),
        (out.data.ptr, out.strides[0], out.strides[1]),
    )
    api, handle = _api("gemmBatchedEx")
    op_a, lda, _ = plan.args_a
    op_b, ldb, _ = plan.args_b
    ldc, _ = plan.args_c
    one, zero = plan.scalars
    dtype, c_type = plan.dtype
    base = ptrs.data.ptr
    api.gemmBatchedEx(
        handle,
        op_b,
        op_a,
        n,
        m,
        k,
        one,
        base + 8 * n1 * n2,
        dtype,
        ldb,
        base,
        dtype,
        lda,
        zero,
        base + 16 * n1 * n2,
        c_type,
        ldc,
        n1 * n2,
        plan.compute,
        getattr(cublas, "CUBLAS_GEMM_DEFAULT", -1),
    )
    STATS["gemm_batched"] += 1
    return True


def sum_leading(x: Any, axis: tuple[int, ...], dtype: Any = None) -> Any:
    """``x.sum(axis)`` as ``ones(1, N) @ x.reshape(N, M)`` on cuBLAS when ``axis`` is ``(0, ..., j-1)``, ``0 < j <
    x.ndim``, ``x`` is C-contiguous, non-empty, of a ``calls_cublas`` dtype and ``dtype`` is None or that dtype (or
    float32 for float16/bfloat16 ``x``: the product's float32 accumulators are the result); else None (the caller
    sums another way). Accumulates in float32 (float64 for float64), as a gemm does.

    Example (a CuPy array ``x`` of shape (8, 512, 1024), float32):
        ``sum_leading(x, (0, 1))`` is ``x.sum((0, 1))``, shape (1024,), in one gemm.
    """
    j = len(axis)
    if not 0 < j < x.ndim or tuple(sorted(axis)) != tuple(range(j)) or x.size == 0 or not x.flags.c_contiguous:
        return None
    wide = dtype is not None and np.dtype(dtype) != np.dtype(x.dtype)
    if np.dtype(x.dtype) not in CUDA_TYPES or (
        wide and (np.dtype(dtype) != np.float32 or np.dtype(x.dtype) not in (np.dtype(np.float16), BFLOAT16))
    ):
        return None
    import cupy

    rows = 1
    for n in x.shape[:j]:
        rows *= n
    ones = cupy.ones((1, rows), dtype=x.dtype)
    out = batched_matmul(ones, x.reshape(rows, -1), out_dtype=np.float32 if wide else None)
    return out.reshape(x.shape[j:])
