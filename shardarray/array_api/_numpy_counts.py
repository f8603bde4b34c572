"""NumPy's counts and bins beyond the array API standard: ``bincount``, ``digitize``, ``histogram``, ``isin``,
``interp``, ``percentile``, ``nanpercentile``, ``corrcoef``.

Each takes NumPy's arguments and gives NumPy's result (dtypes, shapes, defaults), composed of the namespace's own
functions, whose collectives and gradients it inherits; none gathers a split axis:

- counts (``bincount``, ``histogram``) are one-hot sums over the data (``sa.one_hot``, in chunks of bins that keep
  a device's one-hot block under ``_BUDGET`` entries): each device counts its own block, and one allreduce of the
  bins over the data's mesh axes completes them (traffic: the counts' length per device, not the data);
- bins, edges and sample points given on the host (Python lists, NumPy arrays) become replicated arrays, so
  searching them (``searchsorted``) and reading them (``sa.take``) is local; an array of the namespace is used
  where it lies (``sa.searchsorted``/``sa.take``: traffic of a device's block);
- ``isin`` searches the sorted test set (sorted on the host when given there, else ``xp.sort``);
- the percentiles are ``quantile``/``nanquantile`` of ``q / 100``; ``corrcoef`` is ``cov`` over its deviations.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from ..array import ShardArray, as_kind
from ..backend.meta import truth
from ..core.common import common_mesh
from ..errors import ArgumentError, DimensionError, DTypeError
from ..ops.creation.basic import asarray as named_asarray
from ..ops.indexing.take import one_hot
from ..ops.indexing.take import take as named_take
from ..ops.manipulation.concat import concat as named_concat
from ..ops.manipulation.structure import rename, stop_gradient
from ..ops.reduction import reduce
from ._align import fresh
from ._array import Array, wrap
from ._creation import full
from ._elementwise import (
    clip,
    equal,
    greater,
    greater_equal,
    imag,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_not,
    real,
    remainder,
    sqrt,
    where,
)
from ._manipulation import concat, flip, reshape
from ._numpy_stats import cov
from ._quantile import nanquantile, quantile
from ._sorting import argsort, searchsorted, sort
from ._statistical import _check
from ._statistical import all as _all
from ._statistical import max as _max
from ._statistical import min as _min
from ._statistical import sum as _sum
from .linalg import diagonal

#: the most one-hot entries a device makes at once for a count (a chunk of bins at a time beyond it)
_BUDGET = 1 << 22
#: the largest test set of ``isin`` given as an array that is replicated (one allgather of it) before the search
_SMALL_SET = 1 << 16


# ------------------------------------------------------------------------------------------------ helpers


def _host(values: Any, mesh: Any, dtype: Any = None) -> Array:
    """Host data (a list, a NumPy array) as an array replicated on every device of ``mesh`` (read locally)."""
    a = np.asarray(values, dtype=dtype)
    return wrap(named_asarray(a, dims=tuple(f"dim{k}" for k in range(a.ndim)), mesh=mesh, layout={}))


def _like(values: Any, x: Array, what: str) -> Array:
    """``values`` (an array, or host data laid out as ``x``: no traffic) of ``x``'s shape."""
    if isinstance(values, ShardArray):
        w = values
    else:
        a = np.asarray(values)
        if a.shape != x.shape:
            raise DimensionError(f"{what} must have the shape of the data {x.shape}; got {a.shape}")
        w = wrap(named_asarray(a, dims=x.dims, mesh=x.mesh, layout=dict(x.layout)))
    if w.shape != x.shape:
        raise DimensionError(f"{what} must have the shape of the data {x.shape}; got {w.shape}")
    return wrap(w)


def _mesh(*args: Any, what: str) -> Any:
    """The one mesh of the array arguments (``MeshError`` naming ``what`` if two differ)."""
    arrays = [a for a in args if isinstance(a, ShardArray)]
    if not arrays:
        raise DTypeError(f"{what}: expects an array of shardarray.array_api; make one with xp.asarray(...)")
    return common_mesh(arrays, what)


def _on(a: Any, mesh: Any, dtype: Any = None) -> Array:
    """``a`` as an array on ``mesh``: an array as it is (cast to ``dtype``), host data replicated."""
    if isinstance(a, ShardArray):
        return wrap(a if dtype is None or a.dtype == np.dtype(dtype) else a.astype(dtype))
    return _host(a, mesh, dtype)


def _counts(ids: Array, n: int, w: Array | None, acc: np.dtype) -> Array:
    """Per-bin counts (or sums of ``w``, ``ids``' shape) of integer ``ids`` (any shape) in ``[0, n)``: one-hot sums
    over every dim of ``ids``, pending over their mesh axes until one allreduce of the bins; ids outside count
    nowhere. 1-D of length ``n``, replicated, dtype ``acc``."""
    i = as_kind(ids, ShardArray)
    if n == 0:
        return full((0,), 0, dtype=acc, device=i.mesh)
    wn = None if w is None else rename(as_kind(w, ShardArray), dict(zip(w.dims, i.dims)))
    dim = fresh(i.dims, 1, "bin")[0]
    per = math.ceil(i.size / max(1, i.mesh.axes_size(tuple(i.spec.used_axes))))
    step = max(1, _BUDGET // max(1, per))
    parts = []
    for start in range(0, n, step):
        hot = one_hot(i - start if start else i, dim, min(step, n - start), dtype=acc)
        parts.append(reduce.sum(hot if wn is None else hot * wn, i.dims))
    out = parts[0] if len(parts) == 1 else named_concat(parts, dim)
    return wrap(rename(out, {dim: "dim0"}))


def _pick(cond: Array, a: Any, b: Any) -> Array:
    """``where(cond, a, b)``: one array."""
    return cast(Array, where(cond, a, b))


def _lookup(table: Array, ids: Array) -> Array:
    """``table[ids]`` for a 1-D ``table`` and integer ``ids`` of any shape (``sa.take``: local for a replicated
    table; differentiable in the table)."""
    dim = fresh(ids.dims, 1, "k")[0]
    t = rename(as_kind(table, ShardArray), {table.dims[0]: dim})
    return wrap(named_take(t, as_kind(ids, ShardArray), dim))


# ------------------------------------------------------------------------------------------------ bincount


def _check_bins_x(x: Array, what: str) -> Array:
    if x.dtype.kind not in "biu" or x.dtype == np.dtype(np.uint64):
        raise DTypeError(
            f"{what}: x must hold non-negative integers (int or bool, not uint64); got {x.dtype}. "
            f"Cast it with x.astype('int64')"
        )
    return x if x.dtype == np.dtype(np.int64) else x.astype("int64")


def bincount(x: Array, /, weights: Any = None, minlength: int = 0) -> Array:
    """The number of occurrences of each value from 0 to ``max(x)`` in the 1-D ``x`` (or the sums of ``weights``), as
    ``np.bincount`` (a NumPy extra).

    The length is ``max(max(x) + 1, minlength)``; int64 counts, float64 sums with ``weights`` (host data, or an
    array of ``x``'s shape). Collectives: an allreduce each of ``x``'s max and min (scalars), then each device
    counts its own block (one-hot sums, a chunk of bins at a time) and one allreduce of the counts' length
    completes them: the traffic does not grow with the data. Differentiable in ``weights``.

    Raises:
        DimensionError: ``x`` is not 1-D, or ``weights`` has another shape.
        DTypeError: ``x`` is not integral, or ``weights`` is complex.
        ArgumentError: a negative entry of ``x``, or a negative ``minlength``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     x = xp.asarray([0, 1, 1, 3, 1])
        ...     xp.bincount(x).numpy(), xp.bincount(x, weights=[0.5, 1.0, 1.0, 2.0, 1.0], minlength=6).numpy()
        (array([1, 3, 0, 1]), array([0.5, 3. , 0. , 2. , 0. , 0. ]))
    """
    x = _check(x, "bincount")
    if x.ndim != 1:
        raise DimensionError(f"bincount: x must be 1-D; got shape {x.shape}. Flatten it with xp.reshape(x, (-1,))")
    x = _check_bins_x(x, "bincount")
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise ArgumentError(f"bincount: minlength must be a non-negative integer; got {minlength!r}")
    w = None if weights is None else _like(weights, x, "bincount: weights")
    if x.shape[0] == 0:  # (NumPy: int64 zeros, weights or not, before it casts the weights: complex ones too)
        return _counts(x, int(minlength), None, np.dtype(np.int64))
    if w is not None:
        if w.dtype.kind not in "biuf":
            raise DTypeError(f"bincount: weights must be real numbers; got {w.dtype}. Count xp.real/xp.imag apart")
        w = w if w.dtype == np.dtype(np.float64) else w.astype("float64")
    lo = int(_min(x))
    if lo < 0:
        raise ArgumentError(f"bincount: x must have no negative entries; its minimum is {lo}")
    n = max(int(minlength), int(_max(x)) + 1)
    return _counts(x, n, w, np.dtype(np.int64 if w is None else np.float64))


# ------------------------------------------------------------------------------------------------ digitize


def _monotonic(bins: Any, b: Array) -> int:
    """1 for non-decreasing bins, -1 for non-increasing ones, else 0 (NumPy's ``_monotonicity``: comparisons of
    neighbours, so unsigned bins cannot wrap around). Host bins are checked on the host (``b`` is their
    replicated copy: no traffic either way), an array by a scalar allreduce or two. On a meta mesh (no values)
    array bins are taken as increasing after the first allreduce: the traffic of increasing bins (decreasing
    ones add an allreduce of a bool and a local flip)."""
    if b.shape[0] < 2:
        return 1
    if not isinstance(bins, ShardArray):
        h = np.asarray(bins)
        return 1 if bool(np.all(h[1:] >= h[:-1])) else -1 if bool(np.all(h[1:] <= h[:-1])) else 0
    if truth(_all(greater_equal(b[1:], b[:-1])), True):
        return 1
    return -1 if bool(_all(less_equal(b[1:], b[:-1]))) else 0


def digitize(x: Any, bins: Any, right: bool = False) -> Array:
    """The index of the bin of each entry of ``x``, as ``np.digitize`` (a NumPy extra).

    ``bins``: 1-D and monotonic (increasing: ``bins[i-1] <= x < bins[i]`` gives ``i``, or ``<`` then ``<=`` with
    ``right=True``; decreasing alike), host data or an array. int64, ``x``'s shape. Collectives: none for host
    bins (replicated, searched locally); an array of bins costs one or two scalar allreduces (its monotonicity)
    and ``searchsorted``'s (by the bins' layout). On a meta mesh array bins are priced as increasing. Not
    differentiable (integer results).

    Raises:
        ArgumentError: ``bins`` is not monotonic.
        DimensionError: ``bins`` is not 1-D.
        DTypeError: complex ``x`` or ``bins``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.digitize(xp.asarray([0.2, 6.4, 3.0, 1.6]), [0.0, 1.0, 2.5, 4.0, 10.0]).numpy()
        array([1, 4, 3, 2])
    """
    mesh = _mesh(x, bins, what="digitize")
    x, b = _on(x, mesh), _on(bins, mesh)
    if x.dtype.kind == "c" or b.dtype.kind == "c":
        raise DTypeError(f"digitize: x and bins must be real; got {x.dtype} and {b.dtype}. Use xp.real(...)")
    if b.ndim != 1:
        raise DimensionError(f"digitize: bins must be 1-D; got shape {b.shape}")
    mono = _monotonic(bins, b)
    if mono == 0:
        raise ArgumentError("digitize: bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    if mono == -1:
        return wrap(b.shape[0] - searchsorted(flip(b), x, side=side))
    return searchsorted(b, x, side=side)


# ------------------------------------------------------------------------------------------------ histogram


def _outer_edges(a: Array, range: Any) -> tuple[Any, Any, Any]:
    """NumPy's ``_get_outer_edges``: the range, or the data's min and max (an allreduce each), widened by 0.5 when
    equal; and those min and max as arrays (None for a range or no data). On a meta mesh the data's min and max
    are stand-ins 0 and 1 of its dtype (the edges' number and dtype, and so every shape and collective after
    them, do not depend on their values)."""
    extremes = None
    if range is not None:
        try:
            first, last = range
        except (TypeError, ValueError):
            raise ArgumentError(f"histogram: range must be a pair (min, max); got {range!r:.80}") from None
        if first > last:
            raise ArgumentError("histogram: max must be larger than min in range parameter")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ArgumentError(f"histogram: supplied range of [{first}, {last}] is not finite")
    elif a.size == 0:
        first, last = 0, 1
    else:
        extremes = (_min(a), _max(a))
        if not a.mesh.backend.has_data:  # meta: the edges' values are unknown, their number and dtype are not
            return np.zeros((), a.dtype)[()], np.ones((), a.dtype)[()], extremes
        first = np.asarray(stop_gradient(extremes[0]).numpy())[()]
        last = np.asarray(stop_gradient(extremes[1]).numpy())[()]
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ArgumentError(
                f"histogram: autodetected range of [{first}, {last}] is not finite; drop NaN and inf, or pass range="
            )
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last, extremes


def _edges(a: Array, bins: Any, range: Any) -> tuple[np.ndarray | Array, Any]:
    """The bin edges (host data, or the array given) and the outer edges to keep, as NumPy's ``_get_bin_edges``."""
    if isinstance(bins, str):
        raise ArgumentError(f"histogram: bins={bins!r} (an estimator) is not supported; pass a number of bins or edges")
    if np.ndim(bins) == 0:
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
            raise ArgumentError(f"histogram: bins must be an integer or a 1-D array of edges; got {bins!r:.80}")
        if bins < 1:
            raise ArgumentError(f"histogram: bins must be positive; got {bins}")
        first, last, extremes = _outer_edges(a, range)
        kind = np.result_type(first, last, a.dtype)
        if kind.kind in "biu":
            kind = np.result_type(kind, float)
        return np.linspace(first, last, int(bins) + 1, endpoint=True, dtype=kind), (first, last, extremes)
    e: np.ndarray | Array = wrap(bins) if isinstance(bins, ShardArray) else np.asarray(bins)
    if e.ndim != 1:
        raise DimensionError(f"histogram: bins must be an integer or a 1-D array of edges; got shape {e.shape}")
    d = e[1:] < e[:-1]
    if bool(_any_true(d)):
        raise ArgumentError("histogram: bins must increase monotonically, when an array")
    return e, None


def _any_true(d: Any) -> Any:
    """Whether any entry of the bool ``d`` (host data, or an array: one allreduce) is true; False on a meta mesh
    (no values: the edges are taken as valid)."""
    return np.any(d) if isinstance(d, np.ndarray) else truth(_sum(d.astype("int64")) > 0, False)


def _moving_edges(edges: Array, lo: Array, hi: Array) -> Array:
    """The edges computed from the data's ``lo``/``hi``, differentiable in them (NumPy's ``linspace`` values
    exactly: ``edges + (lo - lo) (1 - t) + (hi - hi) t``, ``t`` the fractions of the way along)."""
    if lo.dtype.kind != "f":
        return edges
    t = _host(np.linspace(0.0, 1.0, edges.shape[0]), edges.mesh)
    lo0, hi0 = stop_gradient(lo), stop_gradient(hi)
    moved = edges + ((lo - lo0) * (1.0 - t) + (hi - hi0) * t).astype(edges.dtype)
    return wrap(moved)


def histogram(
    a: Array, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Array, Array]:
    """The histogram of ``a`` (flattened): ``(hist, bin_edges)``, as ``np.histogram`` (a NumPy extra).

    ``bins`` a number of equal bins over ``range`` (default: the data's min and max, an allreduce each) or 1-D
    increasing edges (host data or an array); each bin is half-open ``[e_i, e_i+1)`` but the last, which is closed.
    ``hist``: int64 counts, or the sums of ``weights`` (``a``'s shape) in their dtype; ``density=True`` divides
    by the total and the bin widths (float64). Collectives: the edges are searched locally (replicated), each
    device counts its block (one-hot sums) and one allreduce of the bins completes the counts; an array of edges
    is checked increasing by one scalar allreduce. None of it depends on the values: a meta mesh answers the
    shapes and logs the same collectives (its edges' values unknown). Differentiable in ``weights`` and, for
    computed edges, ``bin_edges`` in the data's min and max.

    Raises:
        ArgumentError: bins not positive or not increasing, an estimator name, a bad or non-finite range.
        DimensionError: edges not 1-D, ``weights`` of another shape.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     hist, edges = xp.histogram(xp.asarray([[0.5, 1.0], [1.5, 4.0]]), bins=3)
        >>> hist.numpy(), edges.numpy()
        (array([3, 0, 1]), array([0.5       , 1.66666667, 2.83333333, 4.        ]))
    """
    a = _check(a, "histogram")
    w = None if weights is None else _like(weights, a, "histogram: weights")
    if a.ndim == 0:
        a = reshape(a, (1,))
        w = None if w is None else reshape(w, (1,))
    e, outer = _edges(a, bins, range)
    n = e.shape[0] - 1
    mesh = a.mesh
    if n < 0:  # (no edges: NumPy's empty counts, in the weights' dtype)
        counts = np.dtype(np.int64) if w is None else w.dtype
        hist = full((0,), 0, dtype=np.result_type(counts, np.float64) if density else counts, device=mesh)
        return hist, _on(e, mesh)
    edges = _on(e, mesh)
    ct = np.result_type(a.dtype, edges.dtype)
    v = a if a.dtype == ct else a.astype(ct)
    first, last, extremes = outer if outer is not None else (edges[0], edges[-1], None)
    data = a if outer is not None else v  # (NumPy: its outer edges against the data, array edges in their type)
    keep = logical_and(greater_equal(data, first), less_equal(data, last))
    idx = clip(searchsorted(edges.astype(ct) if edges.dtype != ct else edges, v, side="right") - 1, 0, max(n - 1, 0))
    idx = _pick(keep, idx, -1)
    if w is None:
        hist = _counts(idx, n, None, np.dtype(np.int64))
    else:
        acc = np.dtype({"f": np.float64, "c": np.complex128}.get(w.dtype.kind, np.int64))  # (NumPy's bincount)
        hist = _counts(idx, n, w, acc)
        hist = hist if hist.dtype == w.dtype else hist.astype(w.dtype)
    out_edges = edges if extremes is None else _moving_edges(edges, *extremes)
    if density:
        widths = (
            _host(np.diff(e).astype(float), mesh) if isinstance(e, np.ndarray) else (e[1:] - e[:-1]).astype("float64")
        )
        hist = hist / widths / _sum(hist)
    return hist, out_edges


# ------------------------------------------------------------------------------------------------ isin


def isin(
    element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *, kind: Any = None
) -> Array:
    """Whether each entry of ``element`` is in ``test_elements``, as ``np.isin`` (a NumPy extra; bool, ``element``'s
    shape).

    The test set (any shape; host data, or an array) is sorted (on the host; an array by ``xp.sort``: local when
    replicated, a sample sort when split), each entry is searched there (``searchsorted``) and compared with the
    value found (``sa.take``): local for host or replicated test sets, a device's block of traffic for split
    ones. ``invert=True`` gives "not in". NaN is in nothing (NumPy's ``==``). Complex values are compared one by
    one with a host test set (its size times ``element``'s memory); an array test set of complex values is sorted
    and searched in NumPy's complex order (real part, then imaginary part), as real ones. Not differentiable (bool
    results).

    Raises:
        ArgumentError: an unknown ``kind``, or ``kind="table"`` for values that are not integers or bools (as
            NumPy).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.isin(xp.asarray([[0, 2], [4, 6]]), [1, 2, 4, 8]).numpy()
        array([[False,  True],
               [ True, False]])
    """
    if kind not in (None, "sort", "table"):
        raise ArgumentError(f"isin: kind must be None, 'sort' or 'table'; got {kind!r}")
    mesh = _mesh(element, test_elements, what="isin")
    el = _on(element, mesh)
    if kind == "table":
        kinds = {
            el.dtype.kind,
            (test_elements.dtype if isinstance(test_elements, ShardArray) else np.asarray(test_elements).dtype).kind,
        }
        if not kinds <= set("biu"):
            raise ArgumentError(
                "isin: kind='table' is only supported for boolean or integer arrays (as NumPy); use 'sort' or None"
            )
    if isinstance(test_elements, ShardArray):
        t = wrap(reshape(test_elements, (-1,)) if test_elements.ndim != 1 else test_elements)
        host = None
    else:
        host = np.asarray(test_elements).reshape(-1)
        t = None
    tdtype = t.dtype if t is not None else host.dtype  # type: ignore[union-attr]
    if (el.dtype.kind == "c" or tdtype.kind == "c") and host is not None:
        return _isin_each(el, host, invert)
    # (an array test set of complex values: sorted and searched in NumPy's complex order, as real ones)
    size = t.shape[0] if t is not None else host.shape[0]  # type: ignore[union-attr]
    if size == 0:
        return full(el.shape, bool(invert), dtype="bool", device=mesh)
    ct = np.result_type(el.dtype, tdtype)
    ct = np.dtype(np.uint8) if ct.kind == "b" else ct
    if t is None:
        s = _host(np.sort(host.astype(ct)), mesh)  # type: ignore[union-attr]
    else:
        s = sort(t.astype(ct) if t.dtype != ct else t)
        if size <= _SMALL_SET:  # (a small test set is replicated: one allgather of it, then all is local)
            s = wrap(as_kind(s, ShardArray).relayout({s.dims[0]: None}))
    v = el if el.dtype == ct else el.astype(ct)
    at = clip(searchsorted(s, v, side="left"), 0, size - 1)
    found = equal(_lookup(s, at), v)
    return logical_not(found) if invert else found


def _isin_each(el: Array, host: np.ndarray, invert: bool) -> Array:
    """``isin`` by comparing with each (distinct) host test value: complex values, which have no order."""
    found = full(el.shape, False, dtype="bool", device=el.mesh)
    for value in np.unique(host):
        found = found | equal(el, value.item())
    return logical_not(found) if invert else found


# ------------------------------------------------------------------------------------------------ interp


def _segment(x: Array, x0: Array, x1: Array, y0: Array, y1: Array) -> Array:
    """NumPy's interpolation on one segment (real values), with its fallbacks where the slope form gives NaN."""
    slope = (y1 - y0) / (x1 - x0)
    res = slope * (x - x0) + y0
    alt = slope * (x - x1) + y1
    res = _pick(isnan(res), alt, res)
    return _pick(logical_and(isnan(res), equal(y0, y1)), y0, res)


def _periodic(x: Array, pts: Array, vals: Array, period: Any) -> tuple[Array, Array, Array]:
    """NumPy's ``period``: everything modulo the period, the points sorted and extended by one at each end."""
    if isinstance(period, ShardArray) or np.ndim(period) != 0 or period == 0:
        raise ArgumentError(f"interp: period must be a non-zero number; got {period!r:.80}")
    p = abs(float(period))
    x = remainder(x, p)
    pts = remainder(pts, p)
    order = argsort(pts)
    pts, vals = _lookup(pts, order), _lookup(vals, order)
    pts = concat([pts[-1:] - p, pts, pts[:1] + p])
    vals = concat([vals[-1:], vals, vals[:1]])
    return x, pts, vals


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Array:
    """The piecewise-linear interpolant through ``(xp, fp)`` at ``x``, as ``np.interp`` (a NumPy extra).

    ``xp`` increasing 1-D sample points and ``fp`` their values (host data or arrays; complex ``fp`` gives
    complex128, else float64); ``left``/``right`` the values below/above the range (default ``fp[0]``/``fp[-1]``);
    ``period`` for periodic ``x`` (then ``left``/``right`` are ignored). Collectives: for host points none (each
    entry's segment is searched and read locally, replicated); arrays of points are searched and read where they
    lie (``searchsorted``/``sa.take``: a device's block of traffic). Differentiable in ``x`` and ``fp``.

    Raises:
        DimensionError: ``xp``/``fp`` not 1-D, of different lengths, or empty.
        DTypeError: complex ``x`` or ``xp``.
        ArgumentError: a zero or non-scalar ``period``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.interp(xp.asarray([0.0, 1.5, 2.5, 4.0]), [1.0, 2.0, 3.0], [3.0, 2.0, 0.0]).numpy()
        array([3. , 2.5, 1. , 0. ])
    """
    mesh = _mesh(x, xp, fp, what="interp")
    x, pts = _on(x, mesh), _on(xp, mesh)
    vals = _on(fp, mesh)
    if x.dtype.kind == "c" or pts.dtype.kind == "c":
        raise DTypeError(f"interp: x and xp must be real; got {x.dtype} and {pts.dtype}")
    if pts.ndim != 1 or vals.ndim != 1:
        raise DimensionError(f"interp: xp and fp must be 1-D; got shapes {pts.shape} and {vals.shape}")
    if pts.shape[0] != vals.shape[0]:
        raise DimensionError(f"interp: fp and xp are not of the same length ({vals.shape[0]} and {pts.shape[0]})")
    if pts.shape[0] == 0:
        raise DimensionError("interp: array of sample points is empty")
    out = np.dtype(np.complex128 if vals.dtype.kind == "c" else np.float64)
    x = x if x.dtype == np.float64 else x.astype("float64")
    pts = pts if pts.dtype == np.float64 else pts.astype("float64")
    vals = vals if vals.dtype == out else vals.astype(out)
    if period is not None:
        x, pts, vals = _periodic(x, pts, vals, period)
        left = right = None
    n = pts.shape[0]
    j = searchsorted(pts, x, side="right") - 1
    lo = clip(j, 0, max(n - 2, 0))
    hi = lo + 1 if n > 1 else lo
    x0, x1 = _lookup(pts, lo), _lookup(pts, hi)
    y0, y1 = _lookup(vals, lo), _lookup(vals, hi)
    with np.errstate(invalid="ignore", divide="ignore"):  # (entries outside or at the points: replaced below)
        if out.kind == "c":
            res = _segment(x, x0, x1, real(y0), real(y1)) + _segment(x, x0, x1, imag(y0), imag(y1)) * 1j
        else:
            res = _segment(x, x0, x1, y0, y1)
    res = _pick(equal(x, x0), y0, res)
    res = _pick(equal(x, pts[-1]), vals[-1], res)
    res = _pick(less(x, pts[0]), vals[0] if left is None else _scalar(left, out, "left"), res)
    res = _pick(greater(x, pts[-1]), vals[-1] if right is None else _scalar(right, out, "right"), res)
    if n > 1:  # (NumPy: NaN stays NaN, but one point gives its value, NaN or not)
        res = _pick(isnan(x), x.astype(out) if out.kind == "c" else x, res)
    return wrap(res if res.dtype == out else res.astype(out))


def _scalar(v: Any, dtype: np.dtype, what: str) -> Any:
    if isinstance(v, ShardArray):
        if v.ndim != 0:
            raise DimensionError(f"interp: {what} must be a scalar; got shape {v.shape}")
        return v.astype(dtype) if v.dtype != dtype else v
    if np.ndim(v) != 0:
        raise DimensionError(f"interp: {what} must be a scalar; got {v!r:.80}")
    return complex(v) if dtype.kind == "c" else float(v)


# ------------------------------------------------------------------------------------------------ percentiles


def _fraction(q: Any, what: str) -> Any:
    """NumPy's ``q / 100`` (a Python number stays weak: float32 data keeps float32), checked in ``[0, 100]``.

    ``q`` given as an array is read to the host (a few numbers); on a meta mesh (no values) it stands as
    medians (50) of its shape and dtype: the result's shapes do not depend on the values, its traffic is priced
    for interior percentiles."""
    if isinstance(q, ShardArray):
        has = q.mesh.backend.has_data
        q = q.numpy() if has else np.full(q.shape, 50, np.float32 if q.dtype.name == "bfloat16" else q.dtype)
    weak = type(q) in (int, float)
    try:
        f = np.true_divide(q, 100)
    except TypeError:
        raise ArgumentError(f"{what}: q must be numbers; got {q!r:.80}") from None
    if not np.all((f >= 0) & (f <= 1)):
        raise ArgumentError(f"{what}: percentiles must be in the range [0, 100]; got {q!r:.80}")
    return float(f) if weak else f


def _percentiles(fn: Any, a: Array, f: Any, *args: Any, weights: Any) -> Array:
    """``fn(a, f, *args)`` (a quantile function: it takes ``f`` of any shape, empty ones included)."""
    return cast(Array, fn(a, f, *args, weights=weights))


def percentile(
    a: Array,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Array:
    """The ``q``-th percentiles (``q`` in ``[0, 100]``) along ``axis``, as ``np.percentile`` (a NumPy extra).

    ``quantile(a, q / 100, ...)``: its methods, dtypes, collectives (a sort along the axis, a broadcast of a
    result-sized row per rank read) and gradient.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[10.0, 7.0, 4.0], [3.0, 2.0, 1.0]])
        ...     xp.percentile(a, 50).numpy(), xp.percentile(a, [25, 75], axis=1).numpy()
        (array(3.5), array([[5.5, 1.5],
               [8.5, 2.5]]))
    """
    f = _fraction(q, "percentile")
    return _percentiles(
        quantile, _check(a, "percentile"), f, axis, out, overwrite_input, method, keepdims, weights=weights
    )


def nanpercentile(
    a: Array,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Array:
    """The ``q``-th percentiles of the non-NaN entries along ``axis``, as ``np.nanpercentile`` (a NumPy extra).

    ``nanquantile(a, q / 100, ...)``: its methods, dtypes, collectives and gradient; an all-NaN slice gives NaN.
    An empty ``a`` gives NumPy's ``nanmean(a, axis, keepdims=keepdims)`` (NaN, of that shape, whatever ``q``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.nanpercentile(xp.asarray([[10.0, xp.nan, 4.0], [3.0, 2.0, 1.0]]), 50, axis=1).numpy()
        array([7., 2.])
    """
    a = _check(a, "nanpercentile")
    f = _fraction(q, "nanpercentile")
    return _percentiles(nanquantile, a, f, axis, out, overwrite_input, method, keepdims, weights=weights)


# ------------------------------------------------------------------------------------------------ corrcoef


def corrcoef(x: Array, y: Array | None = None, rowvar: bool = True, *, dtype: Any = None) -> Array:
    """The Pearson correlation coefficients of the variables in ``x`` (and ``y``), as ``np.corrcoef``.

    ``cov(x, y, rowvar, dtype=dtype)`` divided by the outer product of its diagonal's square roots, clipped to
    ``[-1, 1]`` (real and imaginary parts apart for complex input), as NumPy. Collectives: ``cov``'s (two
    allreduces) and the diagonal's (one of the variables' length). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.corrcoef(xp.asarray([[0.0, 1.0, 2.0], [4.0, 2.0, 0.0]])).numpy()
        array([[ 1., -1.],
               [-1.,  1.]])
    """
    c = cov(_check(x, "corrcoef"), y, rowvar, dtype=dtype)
    if c.ndim == 0:  # (one variable: NumPy's c / c)
        return wrap(c / c)
    std = sqrt(real(diagonal(c)))
    c = c / reshape(std, (-1, 1)) / reshape(std, (1, -1))
    if c.dtype.kind == "c":
        return wrap(clip(real(c), -1.0, 1.0) + clip(imag(c), -1.0, 1.0) * 1j)
    return wrap(clip(c, -1.0, 1.0))


__all__ = ["bincount", "corrcoef", "digitize", "histogram", "interp", "isin", "nanpercentile", "percentile"]
