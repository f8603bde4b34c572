"""Dtype parsing with clear errors."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import DTypeError

SUPPORTED = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


def as_dtype(dtype: Any) -> np.dtype:
    """``np.dtype(dtype)`` restricted to the dtypes shards support."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise DTypeError(f"unknown dtype {dtype!r}; use one of {SUPPORTED}") from None
    if dt.name not in SUPPORTED:
        raise DTypeError(f"dtype {dt.name!r} is not supported by shardarray; use one of {SUPPORTED}")
    return dt


def as_float_dtype(dtype: Any, what: str) -> np.dtype:
    dt = as_dtype(dtype)
    if dt.kind != "f":
        raise DTypeError(f"{what} makes floating-point values; dtype {dt.name!r} is not a float dtype")
    return dt
