"""Reductions that skip NaN (``nansum``, ``nanmean``, ``nanmax``, ``nanmin``, ``nanprod``, ``nanvar``, ``nanstd``).

NumPy's ``np.nan*`` functions, which xarray calls by default on float data
(``skipna=True``). Each is the plain reduction of the array with NaN replaced
by the reduction's identity (a local ``where``), so its collectives are the
plain reduction's over the reduced dims' axes: ``nansum``/``nanprod`` one
allreduce (``prod``: one allgather of partial products), ``nanmax``/``nanmin``
one allreduce (max/min), ``nanmean`` two allreduces (the sum and the count of
non-NaN entries; they are small), ``nanvar``/``nanstd`` those of ``nanmean``
plus one of the squared deviations. Non-float arrays have no NaN: the plain
reduction. As in NumPy, an all-NaN slice gives 0 (``nansum``), 1
(``nanprod``), NaN (``nanmean``, ``nanvar``, ``nanstd``, ``nanmax``,
``nanmin``; NumPy also warns). Split dims of size 1 move nothing but one
alltoall (``reduce.size_one``: the reductions squeeze them). As in NumPy, the non-NaN entries are counted
in int64 and the sums divided by the count in float64, rounded once to the
input's precision: ``nanmean`` of float32 is float32, ``nanvar`` of complex64
float32. Narrow floats (float16, bfloat16) are averaged in float32 and rounded
once, as ``mean`` and ``var`` do (``dtypes.accumulation_dtype``): a float16
``nanmean`` whose sum passes 65504 is finite (NumPy's float16 sum overflows to
inf), and ``nanvar`` equals ``var`` where there is no NaN.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.asarray(np.array([[1.0, np.nan], [3.0, 4.0]]), dims=("i", "j"), mesh=mesh, layout={"i": "row"})
    >>> sa.nansum(x, "i").numpy(), sa.nanmean(x).numpy()
    (array([4., 4.]), array(2.66666667))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array import ShardArray
from ...core.common import dims_arg, require_array
from ...dtypes import accumulation_dtype, is_complex, is_real_float
from ...errors import DimensionError
from ..elementwise import arithmetic as ew
from ..elementwise import math_unary as mu
from ..manipulation.dims import squeeze
from ..manipulation.structure import astype
from . import reduce as red


def _has_nan(x: ShardArray) -> bool:
    return is_real_float(x.dtype) or is_complex(x.dtype)


def _filled(x: ShardArray, value: float) -> ShardArray:
    return ew.where(mu.isnan(x), value, x) if _has_nan(x) else x


def _count(x: ShardArray, dims: Any) -> ShardArray:
    """Non-NaN entries along ``dims``, in int64 (exact for any size, as NumPy's count)."""
    return red.sum(ew.where(mu.isnan(x), 0, 1), dims)


def nansum(x: ShardArray, dims: Any = None) -> ShardArray:
    """``sum`` treating NaN as 0 (``np.nansum``); dims as in ``sa.sum`` (None: all)."""
    x = require_array(x, "nansum")
    return red.sum(_filled(x, 0), dims)


def nanprod(x: ShardArray, dims: Any = None) -> ShardArray:
    """``prod`` treating NaN as 1 (``np.nanprod``)."""
    x = require_array(x, "nanprod")
    return red.prod(_filled(x, 1), dims)


def _nonempty(x: ShardArray, dims: Any, what: str) -> None:
    """Raise ``DimensionError`` where a dim of ``dims`` is empty: an empty slice has no extreme (NumPy raises)."""
    empty = {d: x.sizes[d] for d in dims_arg(x, dims, what) if x.sizes[d] == 0}
    if empty:
        raise DimensionError(
            f"{what}: the dims {empty} of the array {x.sizes} are empty; an empty slice has no {what[3:]} "
            f"(np.{what} raises too). Reduce non-empty dims only"
        )


def _size_one(x: ShardArray, dims: Any, what: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``reduce.size_one`` of the checked ``dims``: the reduction runs over the rest, then squeezes (one alltoall)."""
    return red.size_one(x, dims_arg(x, dims, what))


def nanmax(x: ShardArray, dims: Any = None) -> ShardArray:
    """``max`` ignoring NaN (``np.nanmax``); an all-NaN slice gives NaN."""
    x = require_array(x, "nanmax")
    _nonempty(x, dims, "nanmax")  # an empty dim: DimensionError, as NumPy raises
    picked = _size_one(x, dims, "nanmax")
    if picked is not None:
        return squeeze(nanmax(x, picked[1]), picked[0])
    if not _has_nan(x):
        return red.max(x, dims)
    out = red.max(_filled(x, -np.inf), dims)
    return ew.where(ew.equal(_count(x, dims), 0), np.nan, out)


def nanmin(x: ShardArray, dims: Any = None) -> ShardArray:
    """``min`` ignoring NaN (``np.nanmin``); an all-NaN slice gives NaN."""
    x = require_array(x, "nanmin")
    _nonempty(x, dims, "nanmin")
    picked = _size_one(x, dims, "nanmin")
    if picked is not None:
        return squeeze(nanmin(x, picked[1]), picked[0])
    if not _has_nan(x):
        return red.min(x, dims)
    out = red.min(_filled(x, np.inf), dims)
    return ew.where(ew.equal(_count(x, dims), 0), np.nan, out)


def _mean(x: ShardArray, dims: Any, count: ShardArray) -> ShardArray:
    """The mean of the non-NaN entries given their ``count``: NaN where none, in ``x``'s dtype."""
    total = red.sum(_filled(x, 0), dims)
    out = ew.where(ew.equal(count, 0), np.nan, ew.divide(total, ew.maximum(count, 1)))
    return astype(out, x.dtype)  # the float64 (complex128) quotient rounded once


def nanmean(x: ShardArray, dims: Any = None) -> ShardArray:
    """``mean`` of the non-NaN entries (``np.nanmean``); an all-NaN slice gives NaN."""
    x = require_array(x, "nanmean")
    wide = accumulation_dtype(x.dtype)
    if wide is not None:  # (narrow floats: in float32, rounded once; see the module doc)
        return astype(nanmean(astype(x, wide), dims), x.dtype)
    picked = _size_one(x, dims, "nanmean")
    if picked is not None:  # (a mean of one entry: + 0.0, NumPy's -0.0 -> 0.0; see reduce.plus_zero)
        out = squeeze(nanmean(x, picked[1]), picked[0])
        return out if picked[1] else red.plus_zero(out)
    if not _has_nan(x):
        return red.mean(x, dims)
    return _mean(x, dims, _count(x, dims))


def nanvar(x: ShardArray, dims: Any = None, correction: float = 0.0) -> ShardArray:
    """``var`` of the non-NaN entries (``np.nanvar``; ``correction`` is NumPy's ``ddof``)."""
    x = require_array(x, "nanvar")
    if not _has_nan(x):
        return red.var(x, dims, correction)
    wide = accumulation_dtype(x.dtype)
    if wide is not None:  # (narrow floats: in float32, rounded once, as var; see the module doc)
        return astype(nanvar(astype(x, wide), dims, correction), x.dtype)
    names = x.dims if dims is None else dims_arg(x, dims, "nanvar")
    picked = _size_one(x, names, "nanvar")
    if picked is not None:  # split size-1 dims: local, then a squeeze (one alltoall; see reduce.size_one)
        return squeeze(nanvar(x, picked[1], correction), picked[0])
    count = _count(x, names)  # one allreduce, shared with the mean's
    m = _mean(x, names, count)
    dev = ew.where(mu.isnan(x), 0.0, ew.subtract(x, m))  # by name (x may be positional)
    sq = red.sum(ew.multiply(dev, ew.conj(dev) if is_complex(x.dtype) else dev), names)
    dof = ew.subtract(count, correction)
    none = ew.less_equal(dof, 0)  # no degrees of freedom: NaN (a fractional dof below 1 still divides)
    out = ew.where(none, np.nan, ew.divide(sq, ew.where(none, 1, dof)))
    if is_complex(x.dtype):
        return astype(ew.real(out), np.finfo(x.dtype).dtype)
    return astype(out, x.dtype)  # the float64 quotient rounded once


def nanstd(x: ShardArray, dims: Any = None, correction: float = 0.0) -> ShardArray:
    """``std`` of the non-NaN entries (``np.nanstd``)."""
    return red.spread_sqrt(nanvar(require_array(x, "nanstd"), dims, correction))


__all__ = ["nanmax", "nanmean", "nanmin", "nanprod", "nanstd", "nansum", "nanvar"]
