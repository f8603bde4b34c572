"""float16 batched products on cuBLAS tensor cores, accumulated in float32.

CuPy's ``matmul`` sends 2-D float16 products to cuBLAS ``gemmEx`` (tensor
cores) but upcasts batched (3-D) float16 products to float32. Attention's
contractions are batched, so ``batched_matmul`` calls
``cublasGemmStridedBatchedEx`` itself: float16 in and out, float32 compute.
Other dtypes go to ``cupy.matmul`` unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_ONE = np.array(1.0, dtype=np.float32)
_ZERO = np.array(0.0, dtype=np.float32)


def batched_matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for (B, M, K) and (B, K, N) CuPy arrays on the current device and stream."""
    import cupy
    from cupy.cuda import cublas, runtime

    if a.dtype != np.float16 or b.dtype != np.float16 or a.ndim != 3 or b.ndim != 3:
        return cupy.matmul(a, b)
    nb, m, k = a.shape
    n = b.shape[2]
    c = cupy.empty((nb, m, n), dtype=np.float16)
    if c.size == 0:
        return c
    if k == 0:
        c.fill(0)
        return c
    a = cupy.ascontiguousarray(a)
    b = cupy.ascontiguousarray(b)
    handle = cupy.cuda.device.get_cublas_handle()
    half = getattr(runtime, "CUDA_R_16F", 2)
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, getattr(cublas, "CUBLAS_POINTER_MODE_HOST", 0))
    try:
        # row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes
        cublas.gemmStridedBatchedEx(
            handle, getattr(cublas, "CUBLAS_OP_N", 0), getattr(cublas, "CUBLAS_OP_N", 0), n, m, k,
            _ONE.ctypes.data, b.data.ptr, half, n, k * n, a.data.ptr, half, k, m * k,
            _ZERO.ctypes.data, c.data.ptr, half, n, m * n, nb,
            getattr(cublas, "CUBLAS_COMPUTE_32F", 68), getattr(cublas, "CUBLAS_GEMM_DEFAULT", -1),
        )
    finally:
        cublas.setPointerMode(handle, mode)
    return c
