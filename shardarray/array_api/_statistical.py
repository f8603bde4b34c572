"""Statistical, utility and searching functions of the array API standard, positionally.

Each function turns its ``axis`` argument into dim names (``_align.axes_dims``)
and calls the named reduction of ``shardarray.ops`` (``sum``, ``prod``,
``max``, ``mean``, ``var``, ``all``, ``argmax``, ...), whose collectives it
inherits: a pending sum for ``sum``/``mean``, a max/min allreduce for
``max``/``min``/``all``/``any``, one allgather of partials for
``prod``/``var``/``std`` and of (value, index) pairs for ``argmax``/``argmin``.
``keepdims=True`` re-inserts size-1 dims, unsplit, under the reduced dims'
names at their positions.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..array import ShardArray
from ..callsite import user_stacklevel
from ..dtypes import as_dtype, is_real_float
from ..errors import ArgumentError, DimensionError, DTypeError
from ..layout import Layout
from ..ops.creation.basic import from_blocks, zeros
from ..ops.elementwise import arithmetic as ew
from ..ops.elementwise import math_unary
from ..ops.manipulation.dims import expand_dims
from ..ops.manipulation.structure import astype
from ..ops.reduction import reduce, search
from ._align import axes_dims, axis_dim, no_out
from ._array import Array, wrap

_A = TypeVar("_A")  # the argument's own type: the check returns it unchanged

_Axis = int | tuple[int, ...] | None

with np.errstate(invalid="ignore"):
    #: the NaN an invalid operation gives on this host (``0.0 / 0.0``; x86's has its sign bit set): NumPy's result
    #: where a mean divides the empty sum of a slice by its zero count
    HOST_NAN = float(np.float64(0.0) / np.float64(0.0))


def invalid_nan(out: ShardArray) -> ShardArray:
    """``out`` with each NaN as ``HOST_NAN``, the NaN NumPy's ``0 / 0`` (or ``inf - inf``) gives there, sign bit
    included; for results whose every NaN such an operation makes (nothing but real floats: others unchanged)."""
    return ew.where(math_unary.isnan(out), HOST_NAN, out) if is_real_float(out.dtype) else out


def _check(x: _A, what: str) -> _A:
    """``x`` itself, once it is an array."""
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what}: expects an array; got {type(x).__name__}. Make one with xp.asarray(...)")
    return x


def _keep(out: ShardArray, x: ShardArray, dims: tuple[str, ...], keepdims: bool) -> Array:
    """``out`` with the reduced ``dims`` of ``x`` back as size-1 dims at their positions when ``keepdims``."""
    if keepdims:
        for i, d in enumerate(x.dims):
            if d in dims:
                out = expand_dims(out, d, i)
    return wrap(out)


def _reduce(fn: Callable[..., ShardArray], x: Any, axis: Any, keepdims: bool, what: str, **kw: Any) -> Array:
    x = _check(x, what)
    dims = axes_dims(x, axis, what)
    out = fn(x, dims, **kw)
    return _keep(out, x, dims, keepdims)


def _accumulator(x: ShardArray, dtype: Any, what: str) -> np.dtype:
    """The standard's result dtype of ``sum``/``prod``: ``dtype`` (a supported one: else ``DTypeError``), else the
    default (u)int for integers."""
    if dtype is not None:
        try:
            return as_dtype(dtype)
        except DTypeError as err:
            raise DTypeError(f"{what}: dtype= {err}") from None
    if x.dtype.kind == "u":
        return np.dtype(np.uint64)
    if x.dtype.kind in "ib":
        return np.dtype(np.int64)
    return x.dtype


def _accumulate(fn: Callable[..., ShardArray], x: Any, axis: Any, dtype: Any, keepdims: bool, what: str) -> Array:
    x = _check(x, what)
    dims = axes_dims(x, axis, what)
    target = _accumulator(x, dtype, what)
    if x.dtype != target:
        x = astype(x, target)
    out = fn(x, dims) if dims else _identity_applied(fn, x)
    if out.dtype != target:
        out = astype(out, target)
    return _keep(out, x, dims, keepdims)


def _identity_applied(fn: Callable[..., ShardArray], x: ShardArray) -> ShardArray:
    """A sum or product over no axis (``axis=()``, or a 0-d ``x``) as NumPy's: each value combined with the
    reduction's identity, ``x + 0.0`` (``-0.0`` gives ``0.0``) and ``x * 1`` (complex: ``inf+0j`` gives NumPy's
    ``inf+nanj``); other dtypes, and real products, are the values themselves."""
    if fn is reduce.sum:
        return reduce.plus_zero(x)
    return ew.multiply(x, 1) if x.dtype.kind == "c" else x


def sum(x: Array, /, *, axis: _Axis = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """The sum over ``axis`` (all axes when None); integers sum in the default (unsigned) integer dtype.

    Over split axes each device sums its block and the result is a pending
    sum, allreduced (or reduce-scattered) when it is needed. ``dtype`` casts
    ``x`` first (the standard's accumulator); the sum of an empty axis is 0.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.reshape(xp.arange(12, dtype=xp.int8), (3, 4))
        ...     s = xp.sum(a, axis=1, keepdims=True)
        >>> s.shape, s.dtype, s.numpy().ravel()
        ((3, 1), dtype('int64'), array([ 6, 22, 38]))
    """
    return _accumulate(reduce.sum, x, axis, dtype, keepdims, "sum")


def prod(x: Array, /, *, axis: _Axis = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """The product over ``axis``; integers multiply in the default (unsigned) integer dtype; empty gives 1.

    Over split axes the per-device partial products are allgathered once and
    multiplied locally (see ``sa.prod``).
    """
    return _accumulate(reduce.prod, x, axis, dtype, keepdims, "prod")


def _extreme(fn: Callable[..., ShardArray], x: Any, axis: Any, keepdims: bool, what: str) -> Array:
    x = _check(x, what)
    dims = axes_dims(x, axis, what)
    empty = {d: x.sizes[d] for d in dims if x.sizes[d] == 0}
    if empty:
        raise DimensionError(
            f"{what}: axis {axis!r} of the array of shape {x.shape} is empty; an empty sequence has no {what} "
            f"(as in NumPy). Reduce non-empty axes only, or use an identity: xp.{what}(xp.concat(...))"
        )
    return _keep(fn(x, dims), x, dims, keepdims)  # no dims (0-d x, axis=()): x, once its dtype is checked


def max(x: Array, /, *, axis: _Axis = None, keepdims: bool = False) -> Array:
    """The maximum over ``axis``: a local max, then a max-allreduce over split axes' mesh axes.

    An empty axis raises ``DimensionError`` (the standard leaves it undefined).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1.0, 7.0, 3.0], [4.0, 5.0, 6.0]])
        ...     xp.max(a, axis=1).numpy(), xp.max(a).numpy()
        (array([7., 6.]), array(7.))
    """
    return _extreme(reduce.max, x, axis, keepdims, "max")


def min(x: Array, /, *, axis: _Axis = None, keepdims: bool = False) -> Array:
    """The minimum over ``axis`` (see ``max``)."""
    return _extreme(reduce.min, x, axis, keepdims, "min")


def few_values(x: ShardArray, dims: tuple[str, ...], correction: float, message: str) -> None:
    """NumPy's ``RuntimeWarning`` (``message``) where each reduced slice of ``x`` over ``dims`` holds at most
    ``correction`` values (the count is static: the slices' size): the mean of an empty slice, a variance
    without degrees of freedom. Its result there is NaN (or inf), as NumPy's."""
    if math.prod(x.sizes[d] for d in dims) - correction <= 0:  # (NumPy warns even when there is no slice)
        warnings.warn(message, RuntimeWarning, stacklevel=user_stacklevel())


def mean(x: Array, /, *, axis: _Axis = None, keepdims: bool = False) -> Array:
    """The arithmetic mean over ``axis`` (a pending sum, scaled); the mean of an empty axis is NaN, with NumPy's
    ``RuntimeWarning: Mean of empty slice``."""
    x = _check(x, "mean")
    dims = axes_dims(x, axis, "mean")
    few_values(x, dims, 0.0, "Mean of empty slice")
    if not dims:  # (NumPy's mean of one value: its sum from +0.0 divided by 1; -0.0 gives 0.0, inf+0j inf+nanj)
        return wrap(reduce.plus_zero(reduce.mean(x, dims)))
    return _reduce(reduce.mean, x, axis, keepdims, "mean")


def _correction(correction: Any, what: str) -> float:
    if isinstance(correction, bool) or not isinstance(correction, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{what}: correction must be a real number (0 or 1 usually); got {correction!r}")
    if correction < 0:
        raise DimensionError(f"{what}: correction must be non-negative; got {correction!r}")
    return float(correction)


def _ddof_or(correction: Any, ddof: Any, what: str) -> float:
    """The standard's ``correction``, or NumPy's ``ddof=`` (a NumPy extra that xarray passes; not both)."""
    if ddof is not None:
        if correction not in (0, 0.0):
            raise ArgumentError(f"{what}: give correction= or ddof=, not both (got {correction!r} and {ddof!r})")
        correction = ddof
    return _correction(correction, what)


def _floats(x: Any, what: str) -> Any:
    """Integers and bools as float64, as NumPy's ``var``/``std`` take them (the standard asks for floats; xarray
    calls ``xp.std`` on integer data)."""
    return astype(_check(x, what), np.float64) if isinstance(x, ShardArray) and x.dtype.kind in "biu" else x


def var(
    x: Array, /, *, axis: _Axis = None, correction: float = 0.0, keepdims: bool = False, ddof: float | None = None
) -> Array:
    """The variance over ``axis``, divided by ``N - correction``: one allgather of per-device moments.

    ``ddof=`` is NumPy's name for ``correction`` (accepted as a NumPy extra; give one of them); integers and bools
    are taken as float64, as NumPy does, and complex values give NumPy's real variance (that of the real parts plus
    that of the imaginary parts: two allgathers of moments; a NumPy extra). Where ``N - correction <= 0`` the result
    is inf or NaN with NumPy's ``RuntimeWarning: Degrees of freedom <= 0 for slice``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
        ...     xp.var(a, axis=1, correction=1).numpy()
        array([1.66666667, 0.        ])
    """
    return _spread(reduce.var, x, axis, correction, keepdims, ddof, "var")


def _spread(
    fn: Callable[..., ShardArray], x: Any, axis: Any, correction: Any, keepdims: bool, ddof: Any, what: str
) -> Array:
    """``var``/``std``, with NumPy's ``RuntimeWarning`` where ``N - correction <= 0`` (the result is then inf or
    NaN, as NumPy's; over an empty axis the NaN of NumPy's ``0 / 0``: ``invalid_nan``)."""
    x = _floats(x, what)
    c = _ddof_or(correction, ddof, what)
    dims = axes_dims(_check(x, what), axis, what)
    few_values(x, dims, c, "Degrees of freedom <= 0 for slice")
    out = _reduce(fn, x, axis, keepdims, what, correction=c)
    if dims and not math.prod(x.sizes[d] for d in dims):  # (an empty slice: NumPy's 0 / 0, its NaN's sign bit)
        return wrap(invalid_nan(out))
    return out


def std(
    x: Array, /, *, axis: _Axis = None, correction: float = 0.0, keepdims: bool = False, ddof: float | None = None
) -> Array:
    """The standard deviation over ``axis``: ``sqrt(var(x, axis=axis, correction=correction))`` (``ddof=`` as in
    ``var``)."""
    return _spread(reduce.std, x, axis, correction, keepdims, ddof, "std")


def all(x: Array, /, *, axis: _Axis = None, keepdims: bool = False, out: None = None) -> Array:
    """Whether every element over ``axis`` is true (nonzero): a min-allreduce of one byte per result element."""
    no_out(out, "all")  # (NumPy's out=None, which xarray passes)
    return _reduce(reduce.all, x, axis, keepdims, "all")


def any(x: Array, /, *, axis: _Axis = None, keepdims: bool = False, out: None = None) -> Array:
    """Whether some element over ``axis`` is true (nonzero): a max-allreduce of one byte per result element."""
    no_out(out, "any")
    return _reduce(reduce.any, x, axis, keepdims, "any")


def count_nonzero(x: Array, /, *, axis: _Axis = None, keepdims: bool = False) -> Array:
    """The number of nonzero elements over ``axis`` (int64): a (pending) sum of ``x != 0``."""
    x = _check(x, "count_nonzero")
    dims = axes_dims(x, axis, "count_nonzero")
    nonzero = x if x.dtype.kind == "b" else ew.not_equal(x, 0)
    out = reduce.sum(nonzero, dims) if dims else astype(nonzero, np.int64)
    if out.dtype != np.int64:
        out = astype(out, np.int64)
    return _keep(out, x, dims, keepdims)


def _search(fn: Callable[..., ShardArray], x: Any, axis: Any, keepdims: bool, what: str) -> Array:
    x = _check(x, what)
    if axis is not None:
        dim = axis_dim(x, axis, what)
        return _keep(fn(x, dim), x, (dim,), keepdims)
    if x.ndim == 0:  # one element: index 0, as NumPy
        return wrap(zeros(x.mesh, {}, dtype=np.int64))
    if x.size == 0:
        raise DimensionError(f"{what}: the array of shape {x.shape} is empty; an empty sequence has no {what}")
    if x.ndim == 1:
        return _keep(fn(x, x.dims[0]), x, x.dims, keepdims)
    return _keep(_flat_search(x, what), x, x.dims, keepdims)


def _flat_search(x: ShardArray, what: str) -> ShardArray:
    """The flat (row-major) index of the first extreme of ``x``, with no data movement.

    The extreme is found by a max/min allreduce (with an any-allreduce of
    ``isnan`` for floats: the first NaN wins, as in NumPy), each device marks
    its candidates and gives their flat positions (built locally from its
    block's bounds), and a min-allreduce picks the first one: three
    allreduces of one element, where merging the dims would move the array.
    Complex values order as NumPy's (lexicographically, ``reduce.max``).
    """
    if x.dtype.kind == "b":
        x = astype(x, np.uint8)
    extreme = (reduce.max if what == "argmax" else reduce.min)(x)
    cand = ew.equal(x, extreme)
    if x.dtype.kind in "fc" or x.dtype.name == "bfloat16":  # (complex: NaN in either part, NumPy's order)
        nan = math_unary.isnan(x)
        cand = ew.where(reduce.any(nan), nan, cand)
    strides = [int(np.prod(x.shape[i + 1 :])) for i in range(x.ndim)]

    def positions(bounds: tuple[tuple[int, int], ...]) -> Any:
        grids = np.ix_(*[np.arange(lo, hi, dtype=np.int64) * st for (lo, hi), st in zip(bounds, strides)])
        flat = np.zeros(tuple(hi - lo for lo, hi in bounds), dtype=np.int64)
        for g in grids:
            flat = flat + g
        return x.mesh.backend.xp.asarray(flat)

    spec = Layout(x.dims, x.shape, x.spec.axes)
    flat = from_blocks(x.mesh, spec, np.dtype(np.int64), positions)
    return reduce.min(ew.where(cand, flat, np.iinfo(np.int64).max))


def argmax(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """The index of the largest value along ``axis`` (of the flattened array when None), the first on ties.

    Over a split axis: a local argmax, then one allgather of a (value, index)
    pair per result element. ``axis=None`` on several axes moves no data:
    the extreme, then the first flat position holding it, by allreduces of
    one element.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1.0, 7.0, 3.0], [9.0, 5.0, 6.0]])
        ...     xp.argmax(a, axis=1).numpy(), int(xp.argmax(a))
        (array([1, 0]), 3)
    """
    return _search(search.argmax, x, axis, keepdims, "argmax")


def argmin(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """The index of the smallest value along ``axis`` (see ``argmax``)."""
    return _search(search.argmin, x, axis, keepdims, "argmin")


__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "count_nonzero",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
]
