"""NumPy-compatible extras beyond the array API standard: ``pad``, ``transpose``, ``sliding_window_view``,
``logaddexp2``, ``fabs`` and ``spacing``.

The standard is silent on these; NumPy has them and clients that take duck
arrays call them on the namespace (xarray's ``rolling``/``shift``/``pad`` call
``xp.pad``, its ``apply_ufunc`` ``xp.transpose``; the quantiles are in
``_quantile``). Each takes NumPy's arguments and gives NumPy's result, and
each composes ops of the named library, whose collectives and gradients it
inherits; none gathers a split axis:

- ``pad`` along a split axis is one ``concat`` (an ``alltoallv`` moving at
  most each device's block into the padded canonical layout) of ``x`` with the
  pad pieces: slices of the edge blocks (reversed for ``reflect`` and
  ``symmetric``: a slice with step -1), a broadcast edge row (``edge``) or a
  constant block made in place (``constant``, zeros: one ``move``).
- ``logaddexp2``, ``fabs`` and ``spacing`` are elementwise (no collectives but aligning operands).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, cast

import numpy as np

from ..array import ShardArray, as_kind
from ..errors import ArgumentError, DimensionError, DTypeError
from ..ops.creation.basic import asarray as from_host
from ..ops.creation.basic import full
from ..ops.elementwise import arithmetic as ew
from ..ops.elementwise import logical as lg
from ..ops.elementwise import math_unary as mu
from ..ops.indexing.basic import pick, slice_dim
from ..ops.manipulation import flip as _flip
from ..ops.manipulation.concat import concat, stack
from ..ops.manipulation.structure import astype, broadcast_to
from ..ops.manipulation.structure import transpose as transpose_named
from ..ops.reduction import reduce
from ._align import axis_dim, fresh
from ._array import Array, wrap
from ._dtypes import astype as _astype
from ._elementwise import abs as _abs
from ._elementwise import (
    add,
    bitwise_and,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    equal,
    isfinite,
    less,
    log1p,
    maximum,
    multiply,
    negative,
    nextafter,
    not_equal,
    signbit,
    subtract,
)
from ._elementwise import pow as _pow
from ._elementwise import where as _where
from ._manipulation import concat as _concat
from ._manipulation import permute_dims, reshape
from ._manipulation import stack as _stack
from ._quantile import median
from ._statistical import _check

_STAT_MODES = ("maximum", "minimum", "mean", "median")
_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty", "linear_ramp", *_STAT_MODES)
#: np.pad's keywords by mode (any other is NumPy's ValueError)
_PAD_KEYWORDS = {
    "constant": "constant_values",
    "linear_ramp": "end_values",
    "reflect": "reflect_type",
    "symmetric": "reflect_type",
    **dict.fromkeys(_STAT_MODES, "stat_length"),
}


def transpose(x: Array, /, axes: Sequence[int] | None = None) -> Array:
    """``x`` with its axes permuted (reversed when ``axes`` is None), as ``np.transpose`` (a NumPy extra).

    The standard's ``permute_dims`` with NumPy's default; a local transpose,
    every block stays on its device.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.transpose(xp.reshape(xp.arange(6), (2, 3))).shape
        (3, 2)
    """
    x = _check(x, "transpose")
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    return permute_dims(x, tuple(axes))


def _pad_widths(pad_width: Any, ndim: int, what: str) -> list[tuple[int, int]]:
    try:
        w = np.asarray(pad_width)
        if w.dtype.kind not in "iu" and not (w.dtype.kind == "f" and np.all(w == np.round(w))):
            raise TypeError
        w = np.broadcast_to(w.astype(np.int64), (ndim, 2))
    except (TypeError, ValueError):
        raise ArgumentError(
            f"{what}: pad_width must be an int, (before, after), or one (before, after) per axis "
            f"({ndim} axes); got {pad_width!r:.80}"
        ) from None
    if (w < 0).any():
        raise ArgumentError(f"{what}: pad_width must be non-negative; got {pad_width!r:.80}")
    return [(int(b), int(a)) for b, a in w]


def _pad_values(values: Any, ndim: int, what: str) -> list[tuple[Any, Any]]:
    try:
        v = np.broadcast_to(np.asarray(values, dtype=object), (ndim, 2))
    except ValueError:
        raise ArgumentError(
            f"{what}: constant_values must be a scalar, (before, after), or one pair per axis; got {values!r:.80}"
        ) from None
    return [(b, a) for b, a in v]


def _runs(index: np.ndarray) -> list[tuple[int, int, int]]:
    """``index`` (source positions) as runs ``(start, step, count)`` with step -1, 0 or 1."""
    runs: list[tuple[int, int, int]] = []
    i = 0
    while i < len(index):
        start, count, step = int(index[i]), 1, 0
        if i + 1 < len(index) and abs(int(index[i + 1]) - start) <= 1:
            step = int(index[i + 1]) - start
            while i + count < len(index) and int(index[i + count]) - int(index[i + count - 1]) == step:
                count += 1
        runs.append((start, step, count))
        i += count
    return runs


def _piece(x: ShardArray, dim: str, start: int, step: int, count: int) -> ShardArray:
    """Entries ``start, start + step, ...`` of ``dim`` (step 0: one entry repeated), in ``x``'s layout."""
    if step != 0:
        return slice_dim(x, dim, start, step, count)
    row = pick(x, dim, start)  # one broadcast of the row; then repeated by name (no add: it keeps a -0.0)
    return broadcast_to(row, dict(x.sizes, **{dim: count}), layout=_layout_of(x))


def _layout_of(x: ShardArray) -> dict[str, Any]:
    return {d: (x.spec.of(d) or None) for d in x.dims}


def _pad_dim(x: ShardArray, dim: str, before: int, after: int, mode: str, values: tuple[Any, Any]) -> ShardArray:
    n = x.sizes[dim]
    if before == 0 and after == 0:
        return x
    if mode in ("constant", "empty"):
        if mode == "empty" or (values[0] == 0 and values[1] == 0):
            return _flip.pad(x, dim, before, after)  # one move, the padding made in place
        parts = []
        if before:
            parts.append(full(x.mesh, dict(x.sizes, **{dim: before}), values[0], dtype=x.dtype, layout=_layout_of(x)))
        parts.append(x)
        if after:
            parts.append(full(x.mesh, dict(x.sizes, **{dim: after}), values[1], dtype=x.dtype, layout=_layout_of(x)))
        return concat(parts, dim)
    if n == 0:
        raise DimensionError(
            f"pad: can't extend the empty axis {x.dims.index(dim)} (dim {dim!r}, array {x.sizes}) in mode "
            f"{mode!r}, as in NumPy; use mode='constant'"
        )
    if mode == "linear_ramp":
        return _ramp_pad(x, dim, before, after, values)
    if mode in _STAT_MODES:
        return _stat_pad(x, dim, before, after, mode, values)
    if values[0] == "odd" and n > 1:
        return _odd_reflect(x, dim, before, after, mode == "symmetric")
    index = np.pad(np.arange(n), (before, after), mode=mode)  # type: ignore[call-overload]  # NumPy's source position of every output entry
    parts = [_piece(x, dim, *r) for r in _runs(index[:before])]
    parts.append(x)
    parts += [_piece(x, dim, *r) for r in _runs(index[before + n :])]
    return concat(parts, dim)


def pad(x: Array, /, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Array:
    """``x`` padded along each axis, as ``np.pad`` (a NumPy extra beyond the standard).

    Modes ``constant`` (``constant_values``: a scalar, a pair, or a pair per
    axis), ``edge``, ``reflect`` and ``symmetric`` (``reflect_type`` ``"even"``
    or ``"odd"``: ``2 * edge - reflection``, NumPy's chunk by chunk for pads
    wider than the axis), ``wrap`` (pads wider than the axis repeat as NumPy's
    do), ``empty`` (zeros here), ``linear_ramp`` (``end_values``, NumPy's
    ``linspace`` from each end value to the edge, integers floored) and the
    statistic modes ``maximum``, ``minimum``, ``mean`` and ``median``
    (``stat_length``: the number of edge entries the statistic reads, None
    for the whole axis; integer statistics rounded half to even, as NumPy's).
    Axes are padded one after another, as NumPy does, so corners follow NumPy.

    Collectives: along an unsplit axis none. Along a split one, the pad pieces
    are slices of the edge blocks (one small ``alltoallv`` each: only the
    entries of the pad move), an ``edge`` row (and the edge of a ramp or an
    odd reflection) is one ``broadcast`` of a row, and the pieces and ``x``
    are joined by one ``concat`` (an ``alltoallv`` in which each device sends
    at most its block). ``maximum``/``minimum``/``mean`` reduce the
    ``stat_length`` edge entries where they are (a masked reduction: one
    allreduce of a row); ``median`` sorts the edge slab, which a slice moves
    first when ``stat_length`` is shorter than the axis. ``constant`` zeros
    are one ``move``. Nothing is gathered. Differentiable except ``median``
    and the ramps' and statistics' integer rounding.

    Args:
        x: the array.
        pad_width: an int, ``(before, after)``, or ``((before, after), ...)`` per axis.
        mode: one of the modes above.
        **kwargs: ``constant_values`` (mode ``constant``), ``end_values``
            (``linear_ramp``), ``stat_length`` (the statistic modes),
            ``reflect_type`` (``reflect``, ``symmetric``), each a scalar, a
            pair, or one pair per axis.

    Raises:
        ArgumentError: an unknown mode, keyword or ``reflect_type``, negative or
            malformed widths or stat lengths, a ``stat_length`` of 0 for
            ``maximum``/``minimum`` (NumPy's ValueError).
        DimensionError: a non-constant pad of an empty axis (NumPy's ValueError).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([1.0, 2.0, 3.0, 4.0, 5.0])
        ...     xp.pad(a, (2, 3), mode="reflect").numpy()
        array([3., 2., 1., 2., 3., 4., 5., 4., 3., 2.])
    """
    x = _check(x, "pad")
    what = f"pad (mode={mode!r})"
    if mode not in _PAD_MODES:
        raise ArgumentError(f"pad: mode {mode!r} is not one of np.pad's modes {_PAD_MODES}")
    allowed = _PAD_KEYWORDS.get(mode)
    if set(kwargs) - {allowed}:
        raise ArgumentError(
            f"{what}: unsupported keyword(s) {sorted(set(kwargs) - {allowed})} for this mode (np.pad's)"
        )
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ArgumentError(f"{what}: reflect_type must be 'even' or 'odd'; got {reflect_type!r}")
    widths = _pad_widths(pad_width, x.ndim, what)
    extra = kwargs.get(allowed, None) if allowed else None
    if mode == "constant":
        pairs = _pad_values(0 if extra is None else extra, x.ndim, what)
        for v in (v for p in pairs for v in p):
            if np.ndim(v) != 0:
                raise ArgumentError(f"{what}: constant_values must be scalars; got {extra!r:.80}")
    elif mode == "linear_ramp":
        ends = np.asarray(0 if extra is None else extra)  # (NumPy's: one dtype for every end value)
        pairs = [(ends.dtype.type(b), ends.dtype.type(a)) for b, a in _pad_values(ends, x.ndim, what)]
    elif mode in _STAT_MODES:
        pairs = _stat_lengths(extra, x.ndim, mode, what)
    else:
        pairs = [(reflect_type, reflect_type)] * x.ndim
    kind = type(x)
    y: ShardArray = as_kind(x, ShardArray)
    for dim, (b, a), vals in zip(x.dims, widths, pairs):
        y = _pad_dim(y, dim, b, a, mode, vals)
    return wrap(as_kind(y, kind))


def _stat_lengths(lengths: Any, ndim: int, mode: str, what: str) -> list[tuple[Any, Any]]:
    """``stat_length`` as one (before, after) pair per axis: None (the whole axis) or non-negative integers
    (rounded, as NumPy's); 0 is NumPy's ValueError for ``maximum``/``minimum`` (no value to pad with)."""
    if lengths is None:
        return [(None, None)] * ndim
    try:
        v = np.round(np.asarray(lengths, dtype=np.float64))
        pairs = np.broadcast_to(v, (ndim, 2))
    except (TypeError, ValueError):
        raise ArgumentError(
            f"{what}: stat_length must be None, an int, (before, after), or one pair per axis ({ndim} axes); "
            f"got {lengths!r:.80}"
        ) from None
    if (pairs < 0).any():
        raise ArgumentError(f"{what}: stat_length must be non-negative; got {lengths!r:.80}")
    if mode in ("maximum", "minimum") and (pairs == 0).any():
        raise ArgumentError(f"{what}: a stat_length of 0 yields no value for padding (as in NumPy); got {lengths!r}")
    return [(int(b), int(a)) for b, a in pairs]


def _in_dims(y: ShardArray, dims: tuple[str, ...]) -> ShardArray:
    return y if y.dims == dims else transpose_named(y, dims)


def _iota(x: ShardArray, dim: str, values: np.ndarray) -> ShardArray:
    """``values`` (host, one per entry of ``dim``) as an array along ``dim``, split as ``x``'s ``dim`` is: each
    device makes its block, nothing moves."""
    return from_host(values, dims=(dim,), mesh=x.mesh, layout={dim: x.spec.of(dim) or None})


def _stat_row(x: ShardArray, dim: str, start: int, count: int, mode: str) -> ShardArray:
    """NumPy's statistic of entries ``start .. start + count - 1`` of ``dim`` (a row without ``dim``), in
    ``x``'s dtype (an integer statistic rounded half to even first, as NumPy's ``_round_if_needed``)."""
    n = x.sizes[dim]
    if mode == "median":
        slab = x if count == n else slice_dim(x, dim, start, 1, count)
        row = as_kind(median(wrap(as_kind(slab, Array)), axis=slab.dims.index(dim)), ShardArray)
    else:
        src = x
        if count != n:
            pos = _iota(x, dim, np.arange(n))
            inside = lg.logical_and(ew.greater_equal(pos, start), ew.less(pos, start + count))
            if mode == "mean":
                fill: Any = 0
            elif x.dtype.kind == "c":  # (the least and the greatest in NumPy's lexicographic order)
                fill = complex(-np.inf, -np.inf) if mode == "maximum" else complex(np.inf, np.inf)
            else:
                fill = reduce._identity(x.dtype, "max" if mode == "maximum" else "min")
            src = ew.where(inside, x, fill)
        if mode == "mean":
            wide = np.dtype(np.float64) if x.dtype.kind in "biu" else x.dtype
            wide = np.dtype(np.float32) if wide == np.float16 else wide
            row = ew.divide(reduce.sum(src if src.dtype == wide else astype(src, wide), (dim,)), float(count))
        else:
            row = (reduce.max if mode == "maximum" else reduce.min)(src, (dim,))
    if x.dtype.kind in "iu" and row.dtype.kind == "f":
        row = mu.round(row)
    return row if row.dtype == x.dtype else astype(row, x.dtype)


def _fill(x: ShardArray, dim: str, row: ShardArray, count: int) -> ShardArray:
    """``row`` repeated ``count`` times along ``dim`` (by name: no traffic), in ``x``'s layout."""
    return _in_dims(broadcast_to(row, dict(x.sizes, **{dim: count}), layout=_layout_of(x)), x.dims)


def _stat_pad(x: ShardArray, dim: str, before: int, after: int, mode: str, lengths: tuple[Any, Any]) -> ShardArray:
    """The statistic modes: each side filled with the statistic of its ``stat_length`` edge entries."""
    n = x.sizes[dim]
    lb, la = (n if k is None else min(int(k), n) for k in lengths)
    parts = [_fill(x, dim, _stat_row(x, dim, 0, lb, mode), before)] if before else []
    parts.append(x)
    if after:
        parts.append(_fill(x, dim, _stat_row(x, dim, n - la, la, mode), after))
    return concat(parts, dim)


def _ramp(x: ShardArray, dim: str, width: int, end: Any, edge_at: int, reverse: bool) -> ShardArray:
    """NumPy's ``linspace(end, edge, width, endpoint=False)`` along ``dim`` (reversed for the after side), its
    arithmetic and dtype (computed in ``result_type(end, x, float(width))``, floored for integers)."""
    edge = pick(x, dim, edge_at)
    dt = np.result_type(np.asarray(end).dtype, x.dtype, float(width))
    start = np.asarray(end).astype(dt)[()]
    delta = ew.subtract(astype(edge, dt), start)
    step = ew.divide(delta, float(width))
    ramp = np.arange(width, dtype=dt)
    i = _iota(x, dim, ramp[::-1].copy() if reverse else ramp)
    zero = reduce.max(astype(ew.equal(step, 0), np.int8))  # (NumPy's "any step is 0": one read; meta reads none)
    if x.mesh.backend.has_data and bool(zero.numpy()):
        y = ew.multiply(ew.divide(i, float(width)), delta)
    else:
        y = ew.multiply(i, step)
    y = ew.add(y, start)
    if x.dtype.kind in "iu":
        y = mu.floor(y)
    return _in_dims(y if y.dtype == x.dtype else astype(y, x.dtype), x.dims)


def _ramp_pad(x: ShardArray, dim: str, before: int, after: int, ends: tuple[Any, Any]) -> ShardArray:
    n = x.sizes[dim]
    parts = [_ramp(x, dim, before, ends[0], 0, False)] if before else []
    parts.append(x)
    if after:
        parts.append(_ramp(x, dim, after, ends[1], n - 1, True))
    return concat(parts, dim)


def _odd_reflect(x: ShardArray, dim: str, before: int, after: int, symmetric: bool) -> ShardArray:
    """``reflect_type='odd'``: NumPy's chunks, each ``2 * edge - reflection`` about the current edge, a chunk at
    most the original period long (so pads wider than the axis continue the odd extension, as NumPy's)."""
    n, eo, cur = x.sizes[dim], int(symmetric), x
    while before > 0 or after > 0:
        size = cur.sizes[dim]
        period = size // n * n if symmetric else (size - 1) // (n - 1) * (n - 1)
        lb, la = min(period, before), min(period, after)
        parts = []
        if lb:
            chunk = slice_dim(cur, dim, lb - eo, -1, lb)
            parts.append(_in_dims(ew.subtract(ew.multiply(pick(cur, dim, 0), 2), chunk), cur.dims))
        parts.append(cur)
        if la:
            chunk = slice_dim(cur, dim, size - 2 + eo, -1, la)
            parts.append(_in_dims(ew.subtract(ew.multiply(pick(cur, dim, size - 1), 2), chunk), cur.dims))
        cur = concat(parts, dim)
        before, after = before - lb, after - la
    if cur.dtype != x.dtype:  # (bools: 2 * edge - reflection is an integer; NumPy's result stays bool, nonzero)
        cur = ew.not_equal(cur, 0) if x.dtype == np.bool_ else astype(cur, x.dtype)
    return cur


def sliding_window_view(
    x: Array, /, window_shape: Any, axis: Any = None, *, subok: bool = False, writeable: bool = False
) -> Array:
    """The windows of ``window_shape`` along ``axis`` as new trailing axes, as NumPy's ``sliding_window_view``.

    A NumPy extra beyond the standard (``xp.lib.stride_tricks.sliding_window_view``,
    which xarray's ``rolling`` calls). NumPy returns a strided view; a
    distributed array cannot alias, so this is a copy: ``w`` shifted slices of
    the axis stacked along a new last axis (``w`` times the data). Along a
    split axis each slice is one ``alltoallv`` moving at most ``w - 1``
    entries per device boundary; the stack is local. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     w = xp.lib.stride_tricks.sliding_window_view(xp.arange(5.0), 3)
        >>> w.shape, w.numpy()[:, 0], w.numpy()[1]
        ((3, 3), array([0., 1., 2.]), array([1., 2., 3.]))
    """
    x = _check(x, "sliding_window_view")
    if writeable:
        raise ArgumentError("sliding_window_view: writeable=True is not supported (the windows are a copy)")
    ws = (window_shape,) if np.ndim(window_shape) == 0 else tuple(window_shape)
    if axis is None:
        axes = list(range(x.ndim))
    else:
        axes = [x.dims.index(axis_dim(x, a, "sliding_window_view")) for a in (axis if np.ndim(axis) else (axis,))]
    if len(ws) != len(axes):
        raise ArgumentError(
            f"sliding_window_view: window_shape {window_shape!r} needs one entry per axis {axis!r} "
            f"(array of shape {x.shape})"
        )
    kind = type(x)
    y: ShardArray = as_kind(x, ShardArray)
    names = fresh(x.dims, len(ws), "window")
    for p, w, name in zip(axes, ws, names):
        dim = x.dims[p]
        n = y.sizes[dim]
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0 or w > n:
            raise ArgumentError(
                f"sliding_window_view: window {w!r} along axis {p} must be an int in [0, {n}] "
                f"(array of shape {x.shape})"
            )
        parts = [slice_dim(y, dim, k, 1, n - int(w) + 1) for k in range(int(w))]
        if not parts:
            raise ArgumentError("sliding_window_view: a window of 0 entries is not supported")
        stacked = stack(parts, name)
        y = transpose_named(stacked, stacked.dims[1:] + (name,))
    return wrap(as_kind(y, kind))


lib = SimpleNamespace(stride_tricks=SimpleNamespace(sliding_window_view=sliding_window_view))
lib.__doc__ = "NumPy's ``np.lib`` as far as clients use it on duck arrays: ``lib.stride_tricks.sliding_window_view``."


#: log2(e), NumPy's ``NPY_LOG2E``
_LOG2E = 1.4426950408889634


def logaddexp2(x1: Array | float, x2: Array | float, /) -> Array:
    """``log2(2 ** x1 + 2 ** x2)`` without overflow, as ``np.logaddexp2`` (a NumPy extra).

    NumPy's formula, elementwise: ``x1 + 1`` where ``x1 == x2`` (equal
    infinities too), else ``max(x1, x2) + log2(e) * log1p(2 ** -|x1 - x2|)``
    (NaN propagates), in NumPy's dtype: integers and bools floating as
    NumPy's loop (int8 and bools float16, int64 float64), float16 and
    bfloat16 computed in float32, Python scalars weak; complex values are
    refused, as NumPy has no complex loop. float16, bfloat16 and the small
    integers give NumPy's values; float32 and float64 agree with NumPy's to
    an ulp or two of ``max(|x1|, |x2|, 1)`` (NumPy's loop calls the C
    library's ``exp2`` and ``log1p``, the blocks NumPy's ufuncs, which may
    round the last bit otherwise; near a result of 0, where the formula
    cancels, that is more ulps of the result).
    Elementwise: no collectives but aligning the operands. Differentiable;
    at ``x1 == x2`` the gradient is 1/2 to each operand.

    Raises:
        DTypeError: no array operand, or a complex one (NumPy's TypeError).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.logaddexp2(xp.asarray([0.0, 1.0, 100.0]), xp.asarray([0.0, 3.0, 100.0])).numpy()
        array([  1.        ,   3.32192809, 101.        ])
    """
    if not isinstance(x1, ShardArray) and not isinstance(x2, ShardArray):
        raise DTypeError("logaddexp2: needs an array operand; make one with xp.asarray(...)")
    dtype = _logaddexp2_dtype(x1, x2)
    work = np.dtype(np.float32) if dtype.itemsize < 4 else dtype  # (float16, bfloat16: as NumPy's loops)
    a, b = (_operand(v, work) for v in (x1, x2))
    same = equal(a, b)
    # the other entries, with 0 where x1 == x2 (not inf - inf: the unused branch's gradient stays finite there)
    p, q = (_select(same, 0.0, v) if isinstance(v, ShardArray) else v for v in (a, b))
    apart = add(maximum(p, q), multiply(_LOG2E, log1p(_pow(2.0, negative(_abs(subtract(p, q)))))))
    # x1 exactly where x1 == x2, the gradient halved between the two (0 elsewhere: no inf - inf there)
    half_a, half_b = (multiply(_select(same, v, 0.0), 0.5) if isinstance(v, ShardArray) else v * 0.5 for v in (a, b))
    tie = add(add(half_a, half_b), 1.0)
    out = _select(same, tie, apart)
    return out if out.dtype == dtype else wrap(astype(out, dtype))


def _operand(v: Any, work: np.dtype) -> Array | float:
    """An operand of ``logaddexp2`` in the dtype it is computed in (a scalar: a weak Python float)."""
    if isinstance(v, ShardArray):
        return wrap(v if v.dtype == work else astype(v, work))
    return float(v)


def _select(condition: Array, x1: Array | float, x2: Array | float) -> Array:
    """The namespace's three-argument ``where`` (one array)."""
    return cast(Array, _where(condition, x1, x2))


def _logaddexp2_dtype(x1: Any, x2: Any) -> np.dtype:
    """The dtype of NumPy's ``logaddexp2`` loop for these operands (Python scalars weak, NumPy scalars not)."""
    keys = [
        v.dtype if isinstance(v, (ShardArray, np.generic)) else np.dtype(bool) if isinstance(v, bool) else type(v)
        for v in (x1, x2)
    ]
    try:
        return np.dtype(np.logaddexp2.resolve_dtypes((*keys, None))[-1])
    except (TypeError, ValueError):
        names = ", ".join(str(getattr(k, "name", None) or getattr(k, "__name__", k)) for k in keys)
        raise DTypeError(
            f"logaddexp2: not defined for operands of {names} (NumPy has no such loop: real floating point, "
            f"integers and bools only)"
        ) from None


def fabs(x: Array, /) -> Array:
    """``|x|`` in floating point, as ``np.fabs`` (a NumPy extra): NumPy's loop dtype (int8, uint8 and bools
    float16, int64 float64), complex values refused as NumPy has no complex loop. ``abs`` of that: elementwise,
    no collectives; differentiable.

    Raises:
        DTypeError: a complex (or other unsupported) array (NumPy's TypeError).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fabs(xp.asarray([-1, 2, -3])).numpy()
        array([1., 2., 3.])
    """
    return _abs(_loop_input(np.fabs, _check(x, "fabs")))


def spacing(x: Array, /) -> Array:
    """The distance from ``x`` to the next representable number away from 0 (``-0.0`` as 0), as ``np.spacing``
    (a NumPy extra): NaN for infinities and NaN, ``inf`` at the largest finite number; NumPy's loop dtype (int8
    and bools float16, int64 float64) and its loops' quirks (float16: the step up, positive for negative ``x``
    too; bfloat16, ml_dtypes': ``-0.0`` steps down). ``nextafter(x, ±inf) - x``, exact: elementwise, no
    collectives; not differentiable (``nextafter``'s).

    Raises:
        DTypeError: a complex (or other unsupported) array (NumPy's TypeError).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.spacing(xp.asarray([1.0, -1.0, 2.0**10], dtype=xp.float32)).numpy()
        array([ 1.1920929e-07, -1.1920929e-07,  1.2207031e-04], dtype=float32)
    """
    x = _loop_input(np.spacing, _check(x, "spacing"))
    finite = isfinite(x)
    base = _select(finite, x, 0.0)  # (infinities and NaN give NaN, without inf - inf's warning, as NumPy)
    if x.dtype == np.float16:  # (NumPy's float16 loop steps up always: a positive result)
        return _select(finite, subtract(nextafter(base, np.inf), base), np.nan)
    # away from 0 (-0.0 as 0); ml_dtypes' bfloat16 loop by the sign bit (-0.0 steps down)
    down = signbit(base) if x.dtype.name == "bfloat16" else less(base, 0)
    toward = wrap(astype(_select(down, -np.inf, np.inf), x.dtype))
    return _select(finite, subtract(nextafter(base, toward), base), np.nan)


def _loop_input(ufunc: np.ufunc, x: ShardArray) -> Array:
    """``x`` in the input dtype of NumPy's loop of the one-operand ``ufunc`` (integers and bools floating)."""
    try:
        dtype = np.dtype(ufunc.resolve_dtypes((x.dtype, None))[0])
    except (TypeError, ValueError):
        raise DTypeError(
            f"{ufunc.__name__}: not defined for an array of {x.dtype} (NumPy has no such loop: real numbers only)"
        ) from None
    return wrap(x if x.dtype == dtype else astype(x, dtype))


def _bits_axis(x: Any, axis: Any, what: str) -> tuple[Array, int]:
    """``x`` and the axis ``packbits``/``unpackbits`` work along (``axis=None``: ``x`` flattened, axis 0)."""
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what} takes an array; got {type(x).__name__}. Make one with xp.asarray")
    if axis is None:
        return reshape(x, (-1,)), 0
    return cast(Array, x), x.dims.index(axis_dim(x, axis, what))


def _bit_shifts(bitorder: str, what: str) -> range:
    """The shift of each of a byte's 8 bits in output order: most significant first for ``'big'``."""
    if bitorder not in ("big", "little"):
        raise ArgumentError(f"{what}: bitorder must be 'big' or 'little'; got {bitorder!r}")
    return range(7, -1, -1) if bitorder == "big" else range(8)


def unpackbits(x: Array, /, axis: int | None = None, count: int | None = None, bitorder: str = "big") -> Array:
    """The bits of the ``uint8`` array ``x`` along ``axis`` (flattened when None), each element becoming 8
    elements 0 or 1 (most significant first for ``bitorder='big'``), as ``np.unpackbits``; ``count`` keeps the
    first ``count`` bits (a negative one drops as many from the end; beyond the bits, zeros follow, where NumPy
    leaves an empty input's unset).

    Elementwise shifts stacked along a new axis after ``axis`` and merged into it: each device unpacks its own
    block (a split ``axis`` stays split, its blocks 8 times as long; no collective).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     bits = xp.unpackbits(xp.asarray(np.array([[2], [7], [23]], dtype=np.uint8)), axis=1)
        >>> bits.numpy()[2].tolist()
        [0, 0, 0, 1, 0, 1, 1, 1]
    """
    if not isinstance(x, ShardArray) or x.dtype != np.uint8:
        got = x.dtype if isinstance(x, ShardArray) else type(x).__name__
        raise DTypeError(f"unpackbits expects an array of unsigned bytes (uint8); got {got}. Cast it with astype")
    a, k = _bits_axis(x, axis, "unpackbits")
    bits = _stack([bitwise_and(bitwise_right_shift(a, s), 1) for s in _bit_shifts(bitorder, "unpackbits")], axis=k + 1)
    n = 8 * a.shape[k]
    out = reshape(bits, (*a.shape[:k], n, *a.shape[k + 1 :]))
    if count is None:
        return out
    if count < -n:
        raise ArgumentError(f"unpackbits: count={count} drops more than the {n} bits along the axis")
    keep = int(count) if count >= 0 else n + int(count)
    if keep <= n:
        return out[(slice(None),) * k + (slice(0, keep),)]
    zeros = full(out.mesh, {**out.sizes, out.dims[k]: keep - n}, 0, np.dtype(np.uint8), {})
    return _concat([out, wrap(zeros)], axis=k)


def packbits(x: Array, /, axis: int | None = None, bitorder: str = "big") -> Array:
    """The nonzero-ness of ``x`` (integers or bools) along ``axis`` (flattened when None) packed 8 to a
    ``uint8``, as ``np.packbits`` (the first element the most significant bit for ``bitorder='big'``; a length
    not a multiple of 8 padded with zeros).

    A split ``axis`` is reshaped into (bytes, 8), which moves the entries whose byte straddles a block boundary
    (a relayout, never a gather); the 8 bits of a byte are then combined where they lie.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.packbits(xp.asarray(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1]))).numpy().tolist()
        [177, 128]
    """
    if not isinstance(x, ShardArray) or x.dtype.kind not in "biu":
        got = x.dtype if isinstance(x, ShardArray) else type(x).__name__
        raise DTypeError(f"packbits expects an array of integers or bools; got {got}")
    a, k = _bits_axis(x, axis, "packbits")
    n = a.shape[k]
    m = -(-n // 8)
    b = _astype(not_equal(a, 0), np.dtype(np.uint8))
    if 8 * m > n:
        zeros = full(b.mesh, {**b.sizes, b.dims[k]: 8 * m - n}, 0, np.dtype(np.uint8), {})
        b = _concat([b, wrap(zeros)], axis=k)
    b = reshape(b, (*a.shape[:k], m, 8, *a.shape[k + 1 :]))
    head = (slice(None),) * (k + 1)
    out = None
    for i, s in enumerate(_bit_shifts(bitorder, "packbits")):
        bit = bitwise_left_shift(b[head + (i,)], s)
        out = bit if out is None else bitwise_or(out, bit)
    return cast(Array, out)


__all__ = [
    "fabs",
    "lib",
    "logaddexp2",
    "packbits",
    "pad",
    "sliding_window_view",
    "spacing",
    "transpose",
    "unpackbits",
]
