"""float16 and bfloat16 batched products on cuBLAS tensor cores, accumulated in float32.

CuPy's ``matmul`` sends 2-D float16 products to cuBLAS ``gemmEx`` (tensor
cores) but upcasts batched (3-D) float16 products to float32. Attention's
contractions are batched, so ``batched_matmul`` calls
``cublasGemmStridedBatchedEx`` itself: float16 (``CUDA_R_16F``) or bfloat16
(``CUDA_R_16BF``) in and out, float32 compute (``CUBLAS_COMPUTE_32F``).
Other dtypes go to ``cupy.matmul`` unchanged.

cuBLAS reads ``alpha``/``beta`` as host addresses only in host pointer mode,
CuPy's default: it is set once per handle (CuPy's own calls restore the mode
they change). ``STATS`` counts the strided batched gemms, so tests can tell
the tensor-core path ran.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import BFLOAT16

#: cudaDataType_t of the 16-bit operand types (library_types.h: CUDA_R_16F = 2, CUDA_R_16BF = 14)
CUDA_TYPES = {np.dtype(np.float16): ("CUDA_R_16F", 2), BFLOAT16: ("CUDA_R_16BF", 14)}
_ONE = np.array(1.0, dtype=np.float32)
_ZERO = np.array(0.0, dtype=np.float32)
_HOST_MODE: set[int] = set()  # cuBLAS handles already put in host pointer mode
#: how many ``cublasGemmStridedBatchedEx`` calls were made, and pointer-mode changes
STATS: dict[str, int] = {"gemm_strided_batched": 0, "pointer_mode_set": 0}


def takes_tensor_cores(a_dtype: Any, b_dtype: Any, a_ndim: int, b_ndim: int) -> bool:
    """Whether ``batched_matmul`` of such operands calls cuBLAS itself: float16 x float16 or bfloat16 x bfloat16, 3-D.

    Example:
        >>> takes_tensor_cores(np.float16, np.float16, 3, 3), takes_tensor_cores("bfloat16", "bfloat16", 3, 3)
        (True, True)
        >>> takes_tensor_cores(np.float32, np.float32, 3, 3), takes_tensor_cores("bfloat16", np.float16, 3, 3)
        (False, False)
    """
    a, b = np.dtype(a_dtype), np.dtype(b_dtype)
    return a == b and a in CUDA_TYPES and a_ndim == 3 and b_ndim == 3


def _host_pointer_mode(cublas: Any, handle: int) -> None:
    """Put ``handle`` in host pointer mode (alpha and beta are host addresses), once per handle."""
    if handle in _HOST_MODE:
        return
    host = getattr(cublas, "CUBLAS_POINTER_MODE_HOST", 0)
    if cublas.getPointerMode(handle) != host:
        cublas.setPointerMode(handle, host)
        STATS["pointer_mode_set"] += 1
    _HOST_MODE.add(handle)


def batched_matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for (B, M, K) and (B, K, N) CuPy arrays on the current device and stream."""
    import cupy
    from cupy.cuda import cublas, runtime

    if not takes_tensor_cores(a.dtype, b.dtype, a.ndim, b.ndim):
        return cupy.matmul(a, b)
    nb, m, k = a.shape
    n = b.shape[2]
    c = cupy.empty((nb, m, n), dtype=a.dtype)
    if c.size == 0:
        return c
    if k == 0:
        c.fill(0)
        return c
    a = cupy.ascontiguousarray(a)
    b = cupy.ascontiguousarray(b)
    handle = cupy.cuda.device.get_cublas_handle()
    half = getattr(runtime, *CUDA_TYPES[np.dtype(a.dtype)])
    _host_pointer_mode(cublas, handle)
    # row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes
    cublas.gemmStridedBatchedEx(
        handle, getattr(cublas, "CUBLAS_OP_N", 0), getattr(cublas, "CUBLAS_OP_N", 0), n, m, k,
        _ONE.ctypes.data, b.data.ptr, half, n, k * n, a.data.ptr, half, k, m * k,
        _ZERO.ctypes.data, c.data.ptr, half, n, m * n, nb,
        getattr(cublas, "CUBLAS_COMPUTE_32F", 68), getattr(cublas, "CUBLAS_GEMM_DEFAULT", -1),
    )
    STATS["gemm_strided_batched"] += 1
    return c
