"""Misuse of the BLAS thread setting (``SHARDARRAY_BLAS_THREADS``)."""

from __future__ import annotations

import shardarray as sa
from misuse import Case

CASES = [
    Case("blas-threads-not-a-number", lambda: sa.threads.blas_threads(env={"SHARDARRAY_BLAS_THREADS": "two"}),
         sa.ArgumentError, ("SHARDARRAY_BLAS_THREADS", "'two'"), ("positive integer", "keep")),
    Case("blas-threads-negative", lambda: sa.threads.blas_threads(env={"SHARDARRAY_BLAS_THREADS": "-1"}),
         sa.ArgumentError, ("SHARDARRAY_BLAS_THREADS", "'-1'"), ("positive integer", "keep")),
]
