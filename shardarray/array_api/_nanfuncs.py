"""NumPy-compatible NaN-skipping reductions and scans: extras beyond the array API standard.

The standard has no ``nansum``/``nanmean``/``nanargmax``/``nancumsum``...; NumPy
has, and clients that take duck arrays (xarray's ``skipna=True`` reductions
and scans) call them, through the namespace or NumPy's ``__array_function__``.
These take NumPy's arguments (``axis`` as an int, a tuple or None, ``dtype``,
``keepdims``, ``ddof``) and give NumPy's results, including the dtypes.

Each composes ops of the named library (``sa.nansum``, ``sa.cumsum``, ...) and
so inherits their collectives and gradients: NaN is replaced by the
reduction's identity with a local ``where``, then the plain reduction runs
(one allreduce or allgather of per-device partials over the reduced axes'
mesh axes; the scans one allgather of block totals). ``nanargmax``/``nanargmin``
also reduce one flag per result element to refuse an all-NaN slice, as
NumPy does (on a meta mesh, which has no values, the flags are reduced and
none is taken as set). Nothing is gathered. Where a slice has no non-NaN value (or no
degrees of freedom left) the result is NaN with NumPy's ``RuntimeWarning``
(``Mean of empty slice``, ``Degrees of freedom <= 0 for slice.``, ``All-NaN
slice encountered``): the result is resolved and read for NaN on each device
(``any_true``: no collective; under MPI one flag allreduce).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..array import ShardArray
from ..backend.meta import truth
from ..callsite import user_stacklevel
from ..errors import ArgumentError, DimensionError, DTypeError
from ..ops.elementwise import arithmetic as ew
from ..ops.elementwise import logical as lg
from ..ops.elementwise import math_unary as mu
from ..ops.manipulation.structure import astype
from ..ops.reduction import nanreduce, reduce
from . import _statistical
from ._align import axes_dims, no_out
from ._array import Array, wrap
from ._numpy_stats import numpy_scan
from ._statistical import _check, _keep

_Axis = int | tuple[int, ...] | None


def _has_nan(x: ShardArray) -> bool:
    return x.dtype.kind in "fc" or x.dtype.name == "bfloat16"


def _filled(x: Any, value: float) -> Any:
    """``x`` with NaN replaced by ``value`` (a local ``where``), or ``x`` itself when it cannot hold NaN."""
    return wrap(ew.where(mu.isnan(x), value, x)) if _has_nan(x) else x


def _cast(x: ShardArray, dtype: Any) -> ShardArray:
    return x if dtype is None or np.dtype(dtype) == x.dtype else wrap(astype(x, np.dtype(dtype)))


def nansum(x: Array, /, axis: _Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Array:
    """The sum over ``axis`` treating NaN as zero, as ``np.nansum`` (a NumPy extra beyond the standard).

    Collectives: those of ``xp.sum`` (a pending sum over the reduced split axes). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1.0, xp.nan, 3.0], [4.0, 5.0, xp.nan]])
        ...     xp.nansum(a, axis=1).numpy(), float(xp.nansum(a))
        (array([4., 9.]), 13.0)
    """
    no_out(out, "nansum")
    x = _check(x, "nansum")
    return _statistical.sum(_filled(x, 0.0), axis=axis, dtype=dtype, keepdims=keepdims)


def nanprod(x: Array, /, axis: _Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Array:
    """The product over ``axis`` treating NaN as one, as ``np.nanprod`` (a NumPy extra beyond the standard).

    Collectives: those of ``xp.prod`` (one allgather of per-device partial products).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     float(xp.nanprod(xp.asarray([2.0, xp.nan, 3.0])))
        6.0
    """
    no_out(out, "nanprod")
    x = _check(x, "nanprod")
    return _statistical.prod(_filled(x, 1.0), axis=axis, dtype=dtype, keepdims=keepdims)


def _named(fn: Any, x: Any, axis: Any, dtype: Any, keepdims: bool, what: str, **kw: Any) -> Array:
    x = _check(x, what)
    ints = x.dtype.kind in "biu"  # (no NaN: NumPy's nan-function is the plain one, with its warnings)
    result_dtype = _integer_mean_dtype(x, dtype, what) if what in ("nanmean", "nanvar", "nanstd") else None
    if result_dtype is not None and what == "nanmean":
        x, dtype = _cast(x, result_dtype), None  # NumPy: the values in that dtype, their mean cast back to it
    elif result_dtype is None and dtype is not None and np.dtype(dtype).kind == "c" and what in ("nanvar", "nanstd"):
        result_dtype = np.dtype(dtype)  # (NumPy sums the squared deviations in dtype=: complex, of real values)
    if x.dtype.kind in "biu" and what in ("nanvar", "nanstd") and (dtype is None or np.dtype(dtype).kind not in "biu"):
        # (NumPy: no NaN to skip, so np.var/np.std: inf where N - ddof <= 0 and the deviations are not all 0)
        spread = _statistical.var if what == "nanvar" else _statistical.std
        x = x if dtype is None or np.dtype(dtype).kind == "c" else _cast(wrap(astype(x, np.float64)), dtype)
        moment = spread(x, axis=axis, correction=kw["correction"], keepdims=keepdims)
        return moment if result_dtype is None else _complex_of_real(moment, result_dtype)
    if x.dtype.kind in "biu" and what in ("nanmean", "nanvar", "nanstd"):
        x = wrap(astype(x, np.float64))  # NumPy: the mean of integers is float64
    x = _cast(x, dtype)
    dims = axes_dims(x, axis, what)
    if what in ("nanmax", "nanmin"):
        _check_nonempty(x, dims, what)
    if not dims:  # no axis reduced: the values themselves (a variance of one value: 0, or NaN; real for complex)
        if what == "nanmean":  # (NumPy's sum from +0.0 divided by 1: -0.0 gives 0.0, inf+0j inf+nanj)
            out = reduce.plus_zero(ew.divide(x, 1) if x.dtype.kind == "c" else x)
        elif not kw:
            out = x
        else:
            ok = 1.0 - kw["correction"] > 0
            out = ew.where(mu.isnan(x), np.nan, ew.multiply(ew.abs(x), 0.0 if ok else np.nan))
        # (each value is a slice of one: NumPy warns where one is NaN, or for a variance without degrees of freedom)
        out = _warn_empty_slices(x, dims, out, what, kw.get("correction", 0.0))
        if result_dtype is None:
            return wrap(out)
        bad = _no_dof(x, dims, keepdims, kw["correction"]) if what == "nanvar" else None
        return _complex_of_real(out, result_dtype, bad)
    if ints and what == "nanmean":  # (np.mean's warning: an empty reduction, even where there is no slice)
        _statistical.few_values(x, dims, 0.0, _EMPTY_SLICE[what])
        out = fn(x, dims, **kw)
    else:
        out = _warn_empty_slices(x, dims, fn(x, dims, **kw), what, kw.get("correction", 0.0))
    if what == "nanmean" and out.dtype.kind == "c":  # (NumPy's total / count in complex arithmetic: a NaN or
        out = ew.divide(out, 1)  # infinite part makes the other NaN, nan+nanj where a slice has no value)
    out = _keep(out, x, dims, keepdims)
    if result_dtype is None:
        return out
    if result_dtype.kind == "c":
        bad = _no_dof(x, dims, keepdims, kw["correction"]) if what == "nanvar" else None
        return _complex_of_real(out, result_dtype, bad)
    return wrap(_cast(out, result_dtype))


#: NumPy's RuntimeWarning where a slice has no non-NaN value (or no degrees of freedom left)
_EMPTY_SLICE = {
    "nanmean": "Mean of empty slice",
    "nanvar": "Degrees of freedom <= 0 for slice.",
    "nanstd": "Degrees of freedom <= 0 for slice.",
    "nanmax": "All-NaN slice encountered",
    "nanmin": "All-NaN slice encountered",
}


def any_true(flags: ShardArray) -> bool:
    """Whether any element of the boolean array ``flags`` is true, read on the host from each device's block
    (no collective: an emulated mesh holds every block); under MPI one allreduce of a flag, so that every
    process agrees (and warns, or raises under ``-W error``, alike)."""
    if flags.mesh.comm_kind == "mpi":
        return bool(reduce.any(flags).numpy())
    backend, seen = flags.mesh.backend, set()
    for d, block in enumerate(flags.shards):
        if block is None or id(block) in seen:
            continue
        seen.add(id(block))
        with backend.scope(d):
            if bool(backend.xp.any(block)):
                return True
    return False


def _warn_empty_slices(x: ShardArray, dims: tuple[str, ...], out: ShardArray, what: str, c: float) -> ShardArray:
    """``out`` (resolved when it is checked), after NumPy's ``RuntimeWarning`` where a reduced slice holds at most
    ``c`` non-NaN values (its result is NaN, as NumPy's). Static for data without NaN (integers) and for empty
    slices. Else the result is read for NaN on each device (no collective; ``any_true``), and only where one is
    found and ``x`` holds an inf (so that ``inf - inf`` may have made it) are the per-slice counts reduced to
    tell which (one allreduce)."""
    n = math.prod(x.sizes[d] for d in dims)
    message = _EMPTY_SLICE[what]
    if not math.prod(x.sizes[d] for d in x.dims if d not in dims):  # (no slice at all: no warning)
        return out
    if not _has_nan(x) or n - c <= 0:
        if n - c <= 0:
            warnings.warn(message if _has_nan(x) else message.rstrip("."), RuntimeWarning, stacklevel=user_stacklevel())
        return out
    if not x.mesh.backend.has_data:  # (a meta mesh has no values to count)
        return out
    out = out.resolve() if out.pending else out  # (the allreduce its first read would do)
    if not any_true(mu.isnan(out)):
        return out
    # (nanmax/nanmin: NaN exactly on an all-NaN slice; the others also from inf - inf, only with an inf in x)
    if what not in ("nanmax", "nanmin") and any_true(mu.isinf(x)):
        count = reduce.sum(ew.where(mu.isnan(x), 0.0, 1.0), dims)
        if not any_true(ew.less_equal(count.resolve(), c)):
            return out
    warnings.warn(message, RuntimeWarning, stacklevel=user_stacklevel())
    return out


def _complex_of_real(r: ShardArray, dtype: np.dtype, no_dof: Any = None) -> Array:
    """A real variance ``r`` in the complex ``dtype=``, as NumPy's ``nanvar(x, dtype=complex)``: ``r + 0j`` where
    finite, else its complex division's NaN imaginary part (``inf+nanj``, and ``nan+nanj`` for the NaN of an
    infinite value's ``inf - inf``); where ``no_dof`` (a bool array, or None) holds, ``nan+0j``: the real NaN
    NumPy's ``nanvar`` writes where a slice has no degree of freedom left."""
    c = astype(r, dtype)
    ok = mu.isfinite(r) if no_dof is None else lg.logical_or(mu.isfinite(r), no_dof)
    return wrap(ew.where(ok, c, ew.add(c, complex(0.0, np.nan))))


def _no_dof(x: ShardArray, dims: tuple[str, ...], keepdims: bool, correction: float) -> ShardArray:
    """Where a slice of ``x`` over ``dims`` has ``correction`` or fewer non-NaN values (NumPy's ``nanvar``'s
    "bad" slices: one allreduce of the counts, result-sized)."""
    present = ew.where(mu.isnan(x), 0.0, 1.0)
    count = reduce.sum(present, dims).resolve() if dims else present
    return ew.less_equal(_keep(count, x, dims, keepdims) if dims else count, correction)


def _integer_mean_dtype(x: ShardArray, dtype: Any, what: str) -> np.dtype | None:
    """The integer (or bool) ``dtype=`` of a mean (or variance) of integers, which NumPy's result takes; None for no
    or an inexact ``dtype``. An integer or bool ``dtype`` for inexact values is a ``DTypeError``, NumPy's TypeError
    ("If a is inexact, then dtype must be inexact"), for ``nanmean``/``nanvar``/``nanstd`` alike."""
    if dtype is None or np.dtype(dtype).kind not in "biu":
        return None
    if x.dtype.kind not in "biu":
        raise DTypeError(
            f"{what}: dtype={np.dtype(dtype)} for an array of {x.dtype}: the mean or variance of inexact values needs "
            f"an inexact dtype, as in NumPy; pass a float dtype, or cast the result with xp.astype"
        )
    return np.dtype(dtype)


def _check_nonempty(x: ShardArray, dims: tuple[str, ...], what: str) -> None:
    """Refuse reducing an empty axis: NumPy's ``nanmax``/``nanmin`` have no identity to return there."""
    empty = next((d for d in dims if x.sizes[d] == 0), None)
    if empty is not None:
        raise DimensionError(
            f"{what}: axis {x.dims.index(empty)} of the array of shape {x.shape} is empty; an empty slice has no "
            f"{what[3:]} (as in NumPy, a zero-size reduction without identity). Reduce non-empty axes only"
        )


def nanmax(x: Array, /, axis: _Axis = None, out: Any = None, keepdims: bool = False) -> Array:
    """The maximum over ``axis`` ignoring NaN, as ``np.nanmax``; an all-NaN slice gives NaN (a NumPy extra).

    Collectives: a max-allreduce and a sum-allreduce of one count per result element (``sa.nanmax``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.nanmax(xp.asarray([[1.0, xp.nan], [xp.nan, xp.nan]]), axis=1).numpy()
        array([ 1., nan])
    """
    no_out(out, "nanmax")
    return _named(nanreduce.nanmax, x, axis, None, keepdims, "nanmax")


def nanmin(x: Array, /, axis: _Axis = None, out: Any = None, keepdims: bool = False) -> Array:
    """The minimum over ``axis`` ignoring NaN, as ``np.nanmin`` (see ``nanmax``; a NumPy extra)."""
    no_out(out, "nanmin")
    return _named(nanreduce.nanmin, x, axis, None, keepdims, "nanmin")


def nanmean(x: Array, /, axis: _Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Array:
    """The mean of the non-NaN entries over ``axis``, as ``np.nanmean`` (a NumPy extra beyond the standard).

    Integers give float64. An all-NaN slice gives NaN (NumPy's ``0 / 0``, sign bit included). Collectives: two
    (pending) sums of result size, the values and the counts. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.nanmean(xp.asarray([[1.0, xp.nan], [3.0, 4.0]]), axis=0).numpy()
        array([2., 4.])
    """
    no_out(out, "nanmean")
    # (NumPy's sum of the non-NaN values over their count: each NaN of it that of 0 / 0 or inf - inf, sign bit too)
    return wrap(_statistical.invalid_nan(_named(nanreduce.nanmean, x, axis, dtype, keepdims, "nanmean")))


def _ddof(ddof: Any, correction: Any, what: str) -> float:
    if correction is not None:
        if ddof not in (0, None):
            raise ArgumentError(f"{what}: give ddof= or correction=, not both (got {ddof!r} and {correction!r})")
        ddof = correction
    return _statistical._correction(0 if ddof is None else ddof, what)


def nanvar(
    x: Array,
    /,
    axis: _Axis = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
    *,
    correction: float | None = None,
) -> Array:
    """The variance of the non-NaN entries over ``axis``, as ``np.nanvar`` (``ddof`` or ``correction``; a NumPy extra).

    Collectives: those of ``nanmean`` plus one (pending) sum of the squared deviations. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.nanvar(xp.asarray([[1.0, 3.0, xp.nan], [2.0, 2.0, 2.0]]), axis=1, ddof=1).numpy()
        array([2., 0.])
    """
    no_out(out, "nanvar")
    c = _ddof(ddof, correction, "nanvar")
    return _named(nanreduce.nanvar, x, axis, dtype, keepdims, "nanvar", correction=c)


def nanstd(
    x: Array,
    /,
    axis: _Axis = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
    *,
    correction: float | None = None,
) -> Array:
    """The standard deviation of the non-NaN entries, as ``np.nanstd`` (see ``nanvar``; a NumPy extra)."""
    no_out(out, "nanstd")
    c = _ddof(ddof, correction, "nanstd")
    return _named(nanreduce.nanstd, x, axis, dtype, keepdims, "nanstd", correction=c)


def _nanarg(x: Any, axis: Any, keepdims: bool, what: str) -> Array:
    x = _check(x, what)
    fn = _statistical.argmax if what == "nanargmax" else _statistical.argmin
    if not _has_nan(x):
        return fn(x, axis=axis, keepdims=keepdims)
    nan = wrap(mu.isnan(x))
    dims = axes_dims(x, axis, what)
    all_nan = _statistical.all(nan, axis=axis)
    # (NumPy: a 0-d NaN is an all-NaN slice too; a meta mesh has no values: taken as none)
    if (dims or x.ndim == 0) and truth(_statistical.any(all_nan), False):
        raise DimensionError(
            f"{what}: an all-NaN slice has no {what[3:]} (as in NumPy, 'All-NaN slice encountered'); "
            f"array of shape {x.shape}, axis {axis!r}. Fill NaN first: xp.where(xp.isnan(x), value, x)"
        )
    fill = -np.inf if what == "nanargmax" else np.inf  # (complex: NumPy's -inf+0j or inf+0j, a NaN in either part)
    return fn(_filled(x, fill), axis=axis, keepdims=keepdims)


def nanargmax(x: Array, /, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Array:
    """The index of the largest non-NaN value along ``axis``, as ``np.nanargmax`` (a NumPy extra).

    ``axis=None`` searches the flattened array. An all-NaN slice raises
    ``DimensionError`` (a ``ValueError``, as NumPy's). Collectives: those of
    ``xp.argmax`` (one allgather of a (value, index) pair per result element
    over a split axis) plus two allreduces of one flag per result element.
    Not differentiable (an index).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[xp.nan, 2.0, 1.0], [3.0, xp.nan, 4.0]])
        ...     xp.nanargmax(a, axis=1).numpy(), int(xp.nanargmax(a))
        (array([1, 2]), 5)
    """
    no_out(out, "nanargmax")
    return _nanarg(x, axis, keepdims, "nanargmax")


def nanargmin(x: Array, /, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Array:
    """The index of the smallest non-NaN value along ``axis``, as ``np.nanargmin`` (see ``nanargmax``)."""
    no_out(out, "nanargmin")
    return _nanarg(x, axis, keepdims, "nanargmin")


def _nanscan(x: Any, axis: Any, dtype: Any, out: Any, what: str) -> Array:
    no_out(out, what)
    x = _check(x, what)
    total = what == "nancumsum"
    return numpy_scan(_filled(x, 0.0 if total else 1.0), axis, dtype, "sum" if total else "prod")


def nancumsum(x: Array, /, axis: int | None = None, dtype: Any = None, out: Any = None) -> Array:
    """The cumulative sum along ``axis`` treating NaN as zero, as ``np.nancumsum`` (a NumPy extra).

    ``axis=None`` scans the flattened array. Collectives: those of
    ``xp.cumulative_sum`` (one allgather of block totals along a split axis). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.nancumsum(xp.asarray([[1.0, xp.nan], [3.0, 4.0]]), axis=0).numpy()
        array([[1., 0.],
               [4., 4.]])
    """
    return _nanscan(x, axis, dtype, out, "nancumsum")


def nancumprod(x: Array, /, axis: int | None = None, dtype: Any = None, out: Any = None) -> Array:
    """The cumulative product along ``axis`` treating NaN as one, as ``np.nancumprod`` (a NumPy extra)."""
    return _nanscan(x, axis, dtype, out, "nancumprod")


__all__ = [
    "nanargmax",
    "nanargmin",
    "nancumprod",
    "nancumsum",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
]
