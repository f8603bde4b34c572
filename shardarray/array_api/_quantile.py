"""NumPy's quantiles on split arrays: ``quantile``, ``nanquantile``, ``median``, ``nanmedian`` (NumPy extras).

The standard is silent on them; NumPy has them and clients that take duck arrays call them on the namespace
(xarray's ``quantile`` calls ``xp.quantile``). Each takes NumPy's arguments (its 13 methods, ``keepdims``;
``weights=`` is refused) and gives NumPy's result bit for bit, infinities included, composing ops of the named
library, whose collectives and gradients it inherits; none gathers a split axis:

- ``quantile``/``median`` sort along the axis (``xp.sort``: a sample sort over a split axis), then read the
  needed ranks: one ``broadcast`` of a result-sized row per rank;
- ``nanquantile``/``nanmedian``: the rank depends on each slice's NaN count, so the picks are masked reductions
  (a maximum over ``-inf`` for real floats, keeping a ``-0.0``; a sum otherwise), one allreduce of result size
  each.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, cast

import numpy as np

from ..array import ShardArray, as_kind
from ..callsite import user_stacklevel
from ..dtypes import is_real_float
from ..errors import ArgumentError, DimensionError, DTypeError
from ..layout import Layout
from ..ops.creation.basic import from_blocks
from ..ops.elementwise import arithmetic as ew
from ..ops.elementwise import logical as lg
from ..ops.elementwise import math_unary as mu
from ..ops.indexing.basic import pick
from ..ops.manipulation.concat import stack
from ..ops.manipulation.structure import astype
from ..ops.reduction import reduce
from . import _creation
from ._align import axes_dims, axis_dim, fresh, no_out
from ._array import Array, wrap
from ._manipulation import expand_dims, moveaxis, reshape
from ._nanfuncs import any_true, nanmean
from ._sorting import sort as _sort
from ._statistical import _check

_NAN_METHODS = ("linear", "lower", "higher", "midpoint")


def _q_values(q: Any, what: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """The quantiles ``q`` asked for, flattened, and their shape (``()`` for a scalar: NumPy's result has ``q``'s
    shape in front of the reduced array's)."""
    if isinstance(q, ShardArray):
        q = q.numpy()  # the quantiles asked for: a few numbers
    qa = np.asarray(q, dtype=np.float64)
    if not np.all((qa >= 0) & (qa <= 1)):
        raise ArgumentError(f"{what}: quantiles must be in the range [0, 1]; got {q!r:.80}")
    return qa.reshape(-1), qa.shape


def _one_axis(x: Array, axis: Any, what: str) -> tuple[Array, int, list[int]]:
    """``x`` with the reduced axes merged into its last (or only) one, that axis, and the reduced positions."""
    if axis is None:
        return reshape(x, (-1,)), 0, list(range(x.ndim))
    if isinstance(axis, (tuple, list)):
        pos = sorted({x.dims.index(axis_dim(x, a, what)) for a in axis})
        if len(pos) != len(axis):
            raise DimensionError(f"{what}: axis {axis!r} repeats an axis (array of shape {x.shape})")
        if len(pos) == 1:
            return x, pos[0], pos
        moved = moveaxis(x, tuple(pos), tuple(range(x.ndim - len(pos), x.ndim)))
        keep = moved.shape[: x.ndim - len(pos)]
        return reshape(moved, (*keep, math.prod(moved.shape[len(keep) :]))), len(keep), pos  # (no -1: size 0)
    i = x.dims.index(axis_dim(x, axis, what))
    return x, i, [i]


def _lerp(a: ShardArray, b: ShardArray, t: Any, want: np.dtype | None = None) -> ShardArray:
    """NumPy's ``_lerp``: ``a + (b - a) t``, from ``b``'s side when ``t >= 0.5``, bit for bit: ``b - a`` in the
    values' dtype, then the rest in ``want`` (a float32 array with a float64 ``q`` interpolates in float64), and
    infinities as NumPy's arithmetic takes them (``inf - inf`` is NaN, and ``inf * 0`` too: ``[1, inf]`` at
    ``t = 0`` is NaN). A per-slice ``t`` (float64) is rounded to ``want`` as NumPy rounds a Python float."""
    diff = ew.subtract(b, a)
    if want is not None and want != a.dtype:
        a, b, diff = (astype(v, want) for v in (a, b, diff))
    if isinstance(t, ShardArray):
        rest = ew.subtract(1.0, t)
        if want is not None and want != t.dtype:
            t, rest, upper = astype(t, want), astype(rest, want), ew.greater_equal(t, 0.5)
        else:
            upper = ew.greater_equal(t, 0.5)
        lo = ew.add(a, ew.multiply(diff, t))
        return ew.where(upper, ew.subtract(b, ew.multiply(diff, rest)), lo)
    if t >= 0.5:
        return ew.subtract(b, ew.multiply(diff, 1.0 - t))
    return ew.add(a, ew.multiply(diff, t))


def _mean_of_two(a: ShardArray, b: ShardArray, t: Any, want: np.dtype | None = None) -> ShardArray:
    """NumPy's median between the two middle values: their mean, ``(a + b) / 2`` (inf and inf give inf, where the
    quantile's ``_lerp`` gives NaN); ``a`` itself where ``t`` is 0 (an odd count). Complex values are divided by
    the count as NumPy's mean divides them (``a / 1``, ``(a + b) / 2`` in complex arithmetic: an infinite part
    gives NumPy's NaN parts, ``inf+1j`` -> ``inf+nanj``); real ones are exact either way. NumPy's mean sums from
    ``+0.0``, so a middle ``-0.0`` (or two) gives ``0.0``: so does ``+ 0.0`` here."""
    if a.dtype.kind == "c":
        one, mid = ew.divide(ew.add(a, 0.0), 1), ew.divide(ew.add(ew.add(a, b), 0.0), 2)
    elif a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        one, mid = ew.add(a, 0.0), ew.multiply(ew.add(ew.add(a, b), 0.0), 0.5)
    else:
        one, mid = a, ew.multiply(ew.add(a, b), 0.5)
    if isinstance(t, ShardArray):
        return ew.where(ew.equal(t, 0.0), one, mid)
    return one if t == 0 else mid


def _virtual_index(n: int, q: float, method: str, qdt: np.dtype) -> np.ndarray:
    """NumPy's virtual index of the quantile ``q`` among ``n`` sorted values, computed as NumPy does (in ``q``'s
    dtype, in its order of operations) for the interpolating methods."""
    qa = np.asarray(q, dtype=qdt)
    if method == "linear":
        return np.asarray((n - 1) * qa)
    if method == "midpoint":
        return np.asarray(0.5 * (np.floor((n - 1) * qa) + np.ceil((n - 1) * qa)))
    if method == "averaged_inverted_cdf":
        return np.asarray(n * qa - 1)
    alpha, beta = _ALPHA_BETA[method]
    return np.asarray(n * qa + (alpha + qa * (1 - alpha - beta)) - 1)


def _fix_gamma(gamma: Any, v: Any, method: str) -> Any:
    """NumPy's ``fix_gamma`` of ``method`` (host numbers or per-slice arrays)."""
    if method == "midpoint":  # 0 where the index is whole, else 0.5
        if isinstance(v, ShardArray):
            return ew.where(ew.equal(ew.subtract(v, mu.floor(v)), 0.0), 0.0, 0.5)
        return np.where(v % 1 == 0, 0.0, 0.5).astype(v.dtype)
    if method == "averaged_inverted_cdf":  # 0.5 where the index is whole, else 1
        if isinstance(gamma, ShardArray):
            return ew.where(ew.equal(gamma, 0.0), 0.5, 1.0)
        return np.where(gamma == 0, 0.5, 1.0).astype(v.dtype)
    return gamma


def _static_rank(
    s: ShardArray, dim: str, n: int, q: float, method: str, combine: Any = _lerp, qdt: Any = None, want: Any = None
) -> ShardArray:
    """The ``q`` quantile of sorted ``s`` along ``dim`` (no NaN), by NumPy's index arithmetic on ``n`` values.

    A picking method (and ``linear`` with an integer ``q``) reads one value. An interpolating one reads NumPy's
    two neighbours of the virtual index ``v`` and interpolates with NumPy's weight, also where the weight is 0
    and past either end (``v >= n - 1``: the last value twice, weight ``v + 1``; ``v < 0``: the first twice,
    weight ``v``), so that infinities give NumPy's NaN (``quantile([-inf, inf], 0.5)``, ``[inf, inf]`` and
    ``[1, 2, inf]`` at 0.5 are NaN) and signed zeros its sign. The median (``combine=_mean_of_two``) is
    ``np.median``'s mean of the middle values instead.
    """
    qdt = np.dtype(np.float64) if qdt is None else np.dtype(qdt)
    if combine is not _lerp or method in _PICKING or (method == "linear" and qdt.kind in "biu"):
        index = np.quantile(np.arange(n, dtype=np.float64), q, method=method)  # type: ignore[call-overload]
        v = float(index)
        lo = math.floor(v)
        g = v - lo
        a = pick(s, dim, lo)
        if g == 0 or lo + 1 >= n:  # (the median of an odd count: NumPy's mean of one value, ``a / 1``)
            return combine(a, a, 0.0) if combine is _mean_of_two else a
        return combine(a, pick(s, dim, lo + 1), g)
    vi = _virtual_index(n, q, method, qdt)
    if vi >= n - 1:  # (NumPy's previous index -1: the last value twice, weight v - (-1))
        prev, nxt, base = n - 1, n - 1, -1.0
    elif vi < 0:
        prev, nxt, base = 0, 0, 0.0
    else:
        prev = int(np.floor(vi))
        nxt, base = prev + 1, float(prev)
    gamma = _fix_gamma(np.asarray(vi - np.asarray(base, dtype=vi.dtype), dtype=vi.dtype), vi, method)
    a = pick(s, dim, prev)
    return _lerp(a, a if nxt == prev else pick(s, dim, nxt), float(gamma), want)


def _masked_rank(s: ShardArray, dim: str, pos: ShardArray, rank: ShardArray) -> ShardArray:
    """``s[rank]`` along ``dim`` with a per-slice ``rank``: a masked reduction (one allreduce of the result's
    size), no data movement. Real floats take the maximum over ``-inf`` elsewhere, so a ``-0.0`` read stays
    ``-0.0`` (NumPy's quantile of it; a sum from ``+0.0`` would flip it); other dtypes a masked sum."""
    if is_real_float(s.dtype):
        return reduce.max(ew.where(ew.equal(pos, rank), s, -math.inf), dim)
    # (resolved: arithmetic on a pending sum runs on each device's partial, rounding otherwise than NumPy's)
    return reduce.sum(ew.where(ew.equal(pos, rank), s, 0.0), dim).resolve()


#: NumPy's (alpha, beta) of the interpolating methods: the virtual index of quantile q among n sorted values is
#: ``n q + alpha + q (1 - alpha - beta) - 1`` (``linear``: (1, 1), that is ``(n - 1) q``)
_ALPHA_BETA = {
    "linear": (1.0, 1.0),
    "hazen": (0.5, 0.5),
    "weibull": (0.0, 0.0),
    "median_unbiased": (1 / 3, 1 / 3),
    "normal_unbiased": (3 / 8, 3 / 8),
    "interpolated_inverted_cdf": (0.0, 1.0),
}


def _nan_rank(
    s: ShardArray,
    dim: str,
    valid: ShardArray,
    q: float,
    method: str,
    combine: Any = _lerp,
    qdt: Any = None,
    want: Any = None,
) -> ShardArray:
    """The ``q`` quantile of the first ``valid`` entries of sorted ``s`` along ``dim`` (NaN sort last), by NumPy's
    index arithmetic for ``method`` on the per-slice count ``valid`` (NumPy's ``_quantile`` on each slice's
    non-NaN values: see ``_static_rank``), signed zeros as NumPy's (``_masked_rank``)."""
    qdt = np.dtype(np.float64) if qdt is None else np.dtype(qdt)
    integer_q = method == "linear" and qdt.kind in "biu" and combine is _lerp
    n = s.sizes[dim]
    spec = Layout((dim,), (n,), (s.spec.of(dim),))
    xp = s.mesh.backend.xp
    pos = from_blocks(s.mesh, spec, np.dtype(np.float64), lambda b: xp.arange(b[0][0], b[0][1], dtype=np.float64))
    last = ew.maximum(ew.subtract(valid, 1.0), 0.0)

    def at(index: ShardArray) -> ShardArray:  # the value at a per-slice index, clipped to [0, last]
        return _masked_rank(s, dim, pos, ew.minimum(ew.maximum(index, 0.0), last))

    if method in ("inverted_cdf", "closest_observation"):
        v = ew.subtract(ew.multiply(valid, q), 1.0)
        if method == "closest_observation":
            v = ew.subtract(v, 0.5)
        lo = mu.floor(v)
        g = ew.subtract(v, lo)
        if method == "inverted_cdf":
            out = at(ew.where(ew.greater(g, 0.0), ew.add(lo, 1.0), lo))
        else:  # closest_observation: the nearest even order statistic (1-based), so an odd index, where whole
            odd = ew.not_equal(ew.multiply(mu.floor(ew.multiply(lo, 0.5)), 2.0), lo)
            out = at(ew.where(lg.logical_and(ew.equal(g, 0.0), odd), lo, ew.add(lo, 1.0)))
    elif method in ("lower", "higher", "nearest") or combine is not _lerp or integer_q:
        v = ew.minimum(ew.maximum(ew.multiply(ew.subtract(valid, 1.0), q), 0.0), last)  # (n - 1) q
        lo = mu.floor(v)
        if method in ("lower", "higher", "nearest") or integer_q:  # (linear at an integer q: 0 or 1, a value)
            out = at(lo if method in ("lower", "linear") else mu.ceil(v) if method == "higher" else mu.round(v))
        else:  # the median: the mean of the middle values
            out = combine(at(lo), at(ew.add(lo, 1.0)), ew.subtract(v, lo))
    else:  # NumPy's neighbours and weight of the virtual index, past the ends included (see _static_rank),
        # computed in q's dtype (float32 for a float32 q array) as NumPy does
        if qdt.kind == "f" and qdt != valid.dtype:
            valid = astype(valid, qdt)
            q = float(np.asarray(q, dtype=qdt))
        if method == "averaged_inverted_cdf":
            v = ew.subtract(ew.multiply(valid, q), 1.0)
        elif method == "midpoint":
            w = ew.multiply(ew.subtract(valid, 1.0), q)
            v = ew.multiply(ew.add(mu.floor(w), mu.ceil(w)), 0.5)
        elif method != "linear":  # (NumPy's order of operations, rounding included)
            alpha, beta = _ALPHA_BETA[method]
            v = ew.subtract(ew.add(ew.multiply(valid, q), alpha + q * (1 - alpha - beta)), 1.0)
        else:
            v = ew.multiply(ew.subtract(valid, 1.0), q)
        above, below, lo = ew.greater_equal(v, ew.subtract(valid, 1.0)), ew.less(v, 0.0), mu.floor(v)
        base = ew.where(above, -1.0, ew.where(below, 0.0, lo))
        gamma = _fix_gamma(ew.subtract(v, base), v, method)
        prev = ew.where(above, last, ew.where(below, 0.0, lo))
        nxt = ew.where(above, last, ew.where(below, 0.0, ew.add(lo, 1.0)))
        out = _lerp(at(prev), at(nxt), gamma, want)
    return ew.where(ew.equal(valid, 0.0), np.nan, out)


#: the methods that pick a value of the array (its dtype is the result's); the others interpolate
_PICKING = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")


def _q_dtype(q: Any) -> np.dtype:
    """The dtype of the quantiles ``q`` (a number, a sequence or an array), as NumPy reads it."""
    return q.dtype if isinstance(q, (ShardArray, np.ndarray, np.generic)) else np.asarray(q).dtype


def _result_dtype(dtype: np.dtype, q: Any, method: str) -> np.dtype:
    """NumPy's dtype of a quantile: ``x``'s for a picking method; else ``x``'s promoted with ``q``'s (a Python
    number is weak: float32 stays float32; a list or array of floats is float64), integers and bools as float64.
    """
    if method in _PICKING or dtype.name == "bfloat16" or (method == "linear" and _q_dtype(q).kind in "iu"):
        return dtype  # (integer q, 0 or 1, with "linear" picks the extreme value: NumPy keeps the dtype)
    if isinstance(q, (ShardArray, np.ndarray, np.generic)):  # (np.float64 first: it is a Python float too)
        out = np.result_type(dtype, q.dtype)
    elif isinstance(q, (int, float)):
        out = np.result_type(dtype, 0.5)
    else:
        out = np.result_type(dtype, np.asarray(q).dtype)
    return out if out.kind in "fc" else np.dtype(np.float64)


def _quantile(
    x: Any, q: Any, axis: Any, method: str, keepdims: bool, weights: Any, what: str, combine: Any = _lerp
) -> Array:
    x = _check(x, what)
    if weights is not None:
        raise ArgumentError(f"{what}: weights= is not supported on distributed arrays")
    nan = what.startswith("nan")
    methods = (
        *_NAN_METHODS,
        "nearest",
        "inverted_cdf",
        "averaged_inverted_cdf",
        "closest_observation",
        "interpolated_inverted_cdf",
        "hazen",
        "weibull",
        "median_unbiased",
        "normal_unbiased",
    )
    if method not in methods:
        raise ArgumentError(f"{what}: method {method!r} is not supported; use one of {methods}")
    if x.dtype.kind == "c" and combine is _lerp:  # (NumPy's medians take complex values: their sort order)
        raise DTypeError(f"{what}: complex values ({x.dtype}) have no order; use xp.real(x)")
    if x.dtype == np.bool_ and method not in _PICKING and combine is _lerp:
        # (NumPy cannot subtract booleans to interpolate; its median averages the two middle values, in float64)
        if method != "linear" or _q_dtype(q).kind not in "biu":
            raise DTypeError(
                f"{what}: method {method!r} interpolates, and booleans cannot be interpolated (NumPy raises too); "
                f"use one of the methods that pick a value, {_PICKING}, or cast first: xp.astype(x, xp.float64)"
            )
        method = "lower"  # (integer quantiles 0 and 1 with "linear": NumPy picks the extreme values, as booleans)
    qs, qshape = _q_values(q, what)
    if len(qshape) > 2:  # (NumPy's limit: "q must be a scalar or 1d", also for the 2-D q it takes)
        raise DimensionError(f"{what}: q must be a scalar, 1-D or 2-D (as in NumPy); got shape {qshape}")
    want = _result_dtype(x.dtype, q, method)
    if x.dtype.kind in "biu" and want.kind in "fc":  # (a picking method reads integers as they are: exact)
        x = wrap(astype(x, np.float64))
    # (floats keep their dtype: NumPy subtracts the neighbours in it, then interpolates in ``want``, float64 for
    # a float64 ``q`` array)
    kind = type(x)
    y, ax, reduced = _one_axis(x, axis, what)
    s = as_kind(_sort(y, axis=ax), ShardArray)
    dim = s.dims[ax]
    n = s.sizes[dim]
    if n == 0:
        raise DimensionError(f"{what}: axis {axis!r} of the array of shape {x.shape} is empty; it has no quantiles")
    floats = x.dtype.kind in "fc" or x.dtype.name == "bfloat16"  # (complex: the medians; NaN parts sort last)
    qdt = _q_dtype(q)
    if nan and floats:
        valid = reduce.sum(ew.where(mu.isnan(s), 0.0, 1.0), dim).resolve()  # (exact index arithmetic on it)
        if s.mesh.backend.has_data and any_true(ew.equal(valid, 0.0)):  # (read on each device: no collective)
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=user_stacklevel())
        outs = [_nan_rank(s, dim, valid, float(v), method, combine, qdt, want) for v in qs]
    else:
        outs = [_static_rank(s, dim, n, float(v), method, combine, qdt, want) for v in qs]
        if floats:  # NumPy: a slice holding NaN has its last sorted value, a NaN (complex: nan-3j, as NumPy's)
            last = pick(s, dim, n - 1)
            has_nan = mu.isnan(last)
            outs = [ew.where(has_nan, last, o) for o in outs]
    outs = [o if o.dtype == want else astype(o, want) for o in outs]
    out = outs[0] if not qshape else stack(outs, fresh(s.dims, 1, "quantile")[0])
    res: Array = wrap(as_kind(out, kind))
    if len(qshape) > 1:  # (the stacked quantiles, an unsplit leading axis, take q's shape)
        res = reshape(res, (*qshape, *res.shape[1:]))
    if keepdims:
        for p in reduced:
            res = expand_dims(res, axis=len(qshape) + p)
    return res


def _quantiles(x: Any, q: Any, axis: Any, method: str, keepdims: bool, weights: Any, what: str) -> Array:
    """``_quantile``, also for an empty ``q`` (NumPy's empty leading axes: one quantile's result, sliced to none)
    and, for ``nanquantile``, for no data (NumPy's ``nanmean(x, axis)``: NaN, whatever ``q``)."""
    x = _check(x, what)
    if x.dtype.kind == "c":  # (NumPy's TypeError, "a must be an array of real numbers", also without data)
        raise DTypeError(f"{what}: complex values ({x.dtype}) have no order; use xp.real(x)")
    if what == "nanquantile" and x.size == 0 and weights is None:
        _q_values(q, what)
        return nanmean(x, axis=axis, keepdims=keepdims)
    shape = tuple(q.shape if isinstance(q, ShardArray) else np.shape(q))
    if not shape or math.prod(shape):
        return _quantile(x, q, axis, method, keepdims, weights, what)
    qd = _q_dtype(q)
    if x.size == 0 and weights is None and qd.kind in "biuf":  # (NumPy: empty, or its IndexError)
        try:
            empty = cast(Any, np.quantile)(
                np.empty(x.shape, x.dtype), np.empty(shape, qd), axis=axis, method=method, keepdims=keepdims
            )  # (no data: NumPy's shape and dtype, computed on the host)
        except IndexError:
            empty = None
        if empty is not None:
            return _creation.full(empty.shape, 0, dtype=empty.dtype, device=x.mesh)
    one = _quantile(x, np.zeros(1, dtype=qd), axis, method, keepdims, weights, what)
    return reshape(wrap(one[0:0]), (*shape, *one.shape[1:]))


def quantile(
    x: Array,
    /,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Array:
    """The ``q``-th quantiles along ``axis`` (all axes when None), as ``np.quantile`` (a NumPy extra).

    ``q`` a scalar or a 1-D or 2-D array (then the result gains ``q``'s
    shape in front, as NumPy's); every NumPy ``method`` without weights. A slice holding NaN
    gives NaN (use ``nanquantile`` to skip them). The result's dtype is NumPy's: ``x``'s for the methods that
    pick a value (``lower``, ``higher``, ``nearest``, ...), else ``x``'s promoted with ``q``'s (a Python float
    keeps float32; integers give float64). Booleans take the methods that pick a value (and ``"linear"`` with
    integer ``q``, 0 or 1), as NumPy; an interpolating method raises ``sa.DTypeError`` where NumPy raises
    TypeError. Values are NumPy's bit for bit, infinities included: the interpolating methods read NumPy's two
    neighbours with its weight even where the weight is 0 or the index is past an end, so that, as in NumPy,
    ``quantile([-inf, inf], 0.5)``, ``quantile([inf, inf], q)`` and ``quantile([1.0, 2.0, inf], 0.5)`` are NaN
    (``inf - inf``, ``inf * 0``); ``median`` averages the middle values instead (``np.median([inf, inf])`` is
    inf). A float32 ``x`` with a float64 ``q`` array subtracts its neighbours in float32 and interpolates in
    float64, as NumPy. Integers: a picking method returns them exactly, in their dtype; an interpolating one
    computes in float64 (NumPy subtracts the two integer neighbours in their own dtype first, which wraps around
    where they lie further apart than it holds: ``np.quantile(np.int8([-128, 127]), 0.5)`` is 127.5 there,
    -0.5 here).

    Collectives: a sort along the axis (``xp.sort``: a sample sort over a
    split axis), then one ``broadcast`` of a result-sized row for each rank
    read (one or two per quantile). Differentiable where NumPy's is.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[4.0, 1.0, 3.0, 2.0], [8.0, 5.0, 6.0, 7.0]])
        ...     xp.quantile(a, 0.5, axis=1).numpy(), xp.quantile(a, [0.0, 1.0]).numpy()
        (array([2.5, 6.5]), array([1., 8.]))
    """
    no_out(out, "quantile")
    return _quantiles(x, q, axis, method, keepdims, weights, "quantile")


def nanquantile(
    x: Array,
    /,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Array:
    """The ``q``-th quantiles of the non-NaN entries along ``axis``, as ``np.nanquantile`` (a NumPy extra).

    Every NumPy ``method`` (the index arithmetic on each slice's count of non-NaN
    entries). An all-NaN slice gives NaN. Collectives: a sort along the axis, an allreduce of the
    non-NaN counts, then one masked reduction of result size per rank read (the
    rank differs per slice): allreduces over the axis's mesh axes. Signed zeros are NumPy's where a slice's
    zeros share a sign; where it holds both ``-0.0`` and ``0.0``, which NumPy reads depends on the order its
    partition leaves equal values in, here the stable sort's.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[4.0, xp.nan, 3.0, 2.0], [8.0, 5.0, 6.0, 7.0]])
        ...     xp.nanquantile(a, 0.5, axis=1).numpy()
        array([3. , 6.5])
    """
    no_out(out, "nanquantile")
    return _quantiles(x, q, axis, method, keepdims, weights, "nanquantile")


def median(
    x: Array, /, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False
) -> Array:
    """The median along ``axis``, as ``np.median`` (``quantile(x, 0.5)``; a NumPy extra).

    The median of an empty slice is NaN with NumPy's ``RuntimeWarning: Mean of empty slice`` (NumPy takes the
    mean of the middle values, none); integers give float64. Complex values take NumPy's sort order (real part,
    then imaginary part; a value with a NaN part sorts last and is its slice's median, as NumPy's) and the mean
    of the middle two, as ``np.median`` (``quantile`` refuses them, as NumPy's), divided by their count in complex
    arithmetic as NumPy's mean divides (so a middle value with an infinite part gives NumPy's NaN parts:
    ``inf+1j`` -> ``inf+nanj``, ``1.5+infj`` -> ``nan+infj``)."""
    no_out(out, "median")
    if _no_values(x, axis, "median"):  # (NumPy warns once, also where there is no slice: shape (0, 0), axis=1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = nanmean(x, axis=axis, keepdims=keepdims)
        for w in caught:
            if "Mean of empty slice" not in str(w.message):
                warnings.warn(w.message, w.category, stacklevel=user_stacklevel())
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=user_stacklevel())
        return result
    return _quantile(x, 0.5, axis, "linear", keepdims, None, "median", _mean_of_two)


def _no_values(x: Any, axis: Any, what: str) -> bool:
    """Whether the slices reduced over ``axis`` are empty (the array is, along a reduced axis)."""
    x = _check(x, what)
    return x.size == 0 and math.prod(x.sizes[d] for d in axes_dims(x, axis, what)) == 0


def nanmedian(
    x: Array, /, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False
) -> Array:
    """The median of the non-NaN entries along ``axis``, as ``np.nanmedian`` (``nanquantile(x, 0.5)``).

    An all-NaN slice gives NaN with NumPy's ``RuntimeWarning: All-NaN slice encountered``; an empty one NaN
    with ``Mean of empty slice``. Complex values as ``median``'s, those with a NaN part skipped."""
    no_out(out, "nanmedian")
    if _no_values(x, axis, "nanmedian"):
        return nanmean(x, axis=axis, keepdims=keepdims)
    return _quantile(x, 0.5, axis, "linear", keepdims, None, "nanmedian", _mean_of_two)


__all__ = ["median", "nanmedian", "nanquantile", "quantile"]
