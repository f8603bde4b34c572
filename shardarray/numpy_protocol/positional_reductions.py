"""NumPy's reductions composed from the namespace's: ``np.ptp``, ``np.average``, ``np.unique``.

Registered in ``positional_compose.COMPOSED``. The choices for distributed arrays:

* ``np.average`` of nothing (weights summing to zero along a slice, or an empty slice) raises
  ``DivisionByZeroError``, a ``ZeroDivisionError`` as NumPy's (one replicated bool read decides it);
* ``np.unique`` (no ``axis``) is ``xp.unique_values``/``xp.unique_all``: sorted values, the NaNs merged into
  one as NumPy's default ``equal_nan=True`` does (counts summed, the first index, the inverse of every NaN
  pointing at it; the number of NaNs is read as a replicated 0-d sum); ``equal_nan=False`` keeps each NaN
  distinct; with ``axis`` the distinct slices (``ops.sorting.unique``, no gather).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a, w = xp.asarray([3.0, 1.0, 3.0, 2.0]), xp.asarray([1.0, 0.0, 1.0, 2.0])
    >>> float(np.ptp(a)), float(np.average(a, weights=w)), np.asarray(np.unique(a))
    (2.0, 2.5, array([1., 2., 3.]))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..dtypes import is_complex, is_real_float
from ..errors import ArgumentError, DimensionError, DivisionByZeroError
from ..ops.manipulation.structure import rename
from ..ops.sorting.unique import unique as _unique_op
from .positional_args import axes_of, write_out
from .positional_compose import _array, _ref, composed


@composed("ptp")
def _ptp(xp: Any, what: str, a: Any, axis: Any = None, out: Any = None, keepdims: Any = np._NoValue) -> Any:
    """``max - min``; ``axis=0`` (or -1) of a 0-d array is its one element, as NumPy's ``maximum.reduce`` reads it."""
    kd = keepdims is True
    if a.ndim == 0 and isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and int(axis) in (0, -1):
        axis = None
    return write_out(out, xp.max(a, axis=axis, keepdims=kd) - xp.min(a, axis=axis, keepdims=kd), what)


@composed("average")
def _average(
    xp: Any, what: str, a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *, keepdims: Any = False
) -> Any:
    a = _array(xp, what, a, "a", _ref(a, weights))
    x = a if is_real_float(a.dtype) or is_complex(a.dtype) else xp.astype(a, xp.float64)  # (bfloat16 kept)
    kd = keepdims is True
    if weights is None:
        if x.size == 0 and any(n == 0 for k, n in enumerate(x.shape) if k not in axes_of(axis, x.ndim, what)):
            raise DivisionByZeroError(  # (NumPy divides a.size by the result's size, 0 / 0: its ZeroDivisionError)
                f"{what}: the average over axis={axis!r} of the array of shape {x.shape} divides by zero (a kept "
                f"axis is empty, so the count per result is 0 / 0, NumPy's ZeroDivisionError); check x.size before "
                f"averaging"
            )
        avg = xp.mean(x, axis=axis, keepdims=kd)
        count = math.prod(x.shape[k] for k in axes_of(axis, x.ndim, what))
        return (avg, xp.full_like(avg, count)) if returned else avg
    w = _array(xp, what, weights, "weights", a)
    rdt = _average_dtype(a.dtype, w.dtype)  # (NumPy's result_type(a, weights[, float64 for integer a]))
    x, w = (v if v.dtype == rdt else xp.astype(v, rdt) for v in (x, w))
    if w.shape != x.shape:
        if axis is None or w.ndim != 1 or isinstance(axis, (tuple, list)):
            raise DimensionError(f"{what}: weights of shape {w.shape} differ from the array's {x.shape}; give axis=")
        _nonzero_weights(xp, what, xp.sum(w), axis, w.shape)  # (NumPy checks the 1-D weights' sum: an empty x too)
        (k,) = axes_of(axis, x.ndim, what)
        w = xp.reshape(w, tuple(n if i == k else 1 for i, n in enumerate(x.shape)))
        w = xp.broadcast_to(w, x.shape)
    total = xp.sum(w, axis=axis, keepdims=kd)
    _nonzero_weights(xp, what, total, axis, w.shape)
    avg = xp.sum(x * w, axis=axis, keepdims=kd) / total
    return (avg, xp.broadcast_to(total, avg.shape)) if returned else avg


def _nonzero_weights(xp: Any, what: str, total: Any, axis: Any, shape: tuple[int, ...]) -> None:
    """Raise ``DivisionByZeroError`` (a ZeroDivisionError, as NumPy's) where a sum of weights is zero, before any
    division (one replicated boolean read)."""
    if bool(xp.any(total == 0)):
        raise DivisionByZeroError(
            f"{what}: the weights sum to zero along axis={axis!r} (the weights of shape {shape}), so "
            f"the weighted average divides by zero, NumPy's ZeroDivisionError; give weights with a nonzero sum over "
            f"each slice"
        )


def _average_dtype(a: Any, w: Any) -> np.dtype:
    """NumPy's dtype of a weighted average: ``result_type(a, weights)``, with float64 for integer or bool ``a``."""
    floats = is_real_float(a) or is_complex(a)
    try:
        return np.result_type(a, w) if floats else np.result_type(a, w, np.float64)
    except TypeError:  # (a float type without promotion rules with the weights': bfloat16 with int8)
        return np.dtype(a) if floats else np.dtype(np.float64)


@composed("unique")
def _unique(
    xp: Any,
    what: str,
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: Any = None,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
) -> Any:
    if axis is not None:
        if isinstance(axis, (tuple, list)):  # (NumPy takes one integer axis here)
            raise ArgumentError(f"{what}: axis takes one integer; got {axis!r}")
        (k,) = axes_of(axis, ar.ndim, what)
        if ar.ndim > 1:
            return _unique_slices(ar, ar.dims[k], return_index, return_inverse, return_counts)
    merge = equal_nan and (is_real_float(ar.dtype) or is_complex(ar.dtype))
    if not (return_index or return_inverse or return_counts):
        values = xp.unique_values(ar)
        m = _merged_nans_at(xp, values) if merge else None
        return values if m is None else values[: m + 1]
    values, index, inverse, counts = xp.unique_all(ar)
    m = _merged_nans_at(xp, values) if merge else None
    if m is not None:  # the index of the first NaN in sort order (for complex numbers, NaN in either part)
        first = index[m : m + 1] if is_complex(values.dtype) else xp.min(index[m:], keepdims=True)
        values, index, inverse = values[: m + 1], xp.concat([index[:m], first]), xp.minimum(inverse, m)
        counts = xp.concat([counts[:m], xp.sum(counts[m:], keepdims=True)])
    out = [values]
    out += [index] if return_index else []
    out += [inverse] if return_inverse else []
    out += [counts] if return_counts else []
    return tuple(out)


def _unique_slices(ar: Any, dim: str, index: bool, inverse: bool, counts: bool) -> Any:
    """``np.unique(ar, axis=k)`` of a positional array of two or more axes: the distinct slices along ``dim``
    (``ops.sorting.unique``: sorted lexicographically, no gather), the 1-D returns along ``dim0``."""

    def positional(a: ShardArray) -> Any:
        return like_kind(rename(a, {a.dims[0]: "dim0"}) if a.ndim == 1 else a, ar)

    got = _unique_op(ar, return_index=index, return_inverse=inverse, return_counts=counts, axis=dim)
    return tuple(positional(a) for a in got) if isinstance(got, tuple) else positional(got)


def _merged_nans_at(xp: Any, values: Any) -> int | None:
    """Where the NaNs of sorted unique ``values`` (each NaN distinct, sorted last) start, when there are two or
    more to merge into one (NumPy's ``equal_nan=True`` keeps the first in sort order); else None. The number
    of NaNs is read on the host (one replicated 0-d sum), as it sets the result's length."""
    k = int(xp.sum(xp.isnan(values)))
    return values.shape[0] - k if k > 1 else None
