"""NumPy-compatible extras beyond the array API standard: ``pad``, ``transpose``, ``sliding_window_view``.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..array import ShardArray, as_kind
from ..errors import ArgumentError, DimensionError
from ..ops.creation.basic import full
from ..ops.indexing.basic import pick, slice_dim
from ..ops.manipulation import flip as _flip
from ..ops.manipulation.concat import concat, stack
from ..ops.manipulation.structure import broadcast_to
from ..ops.manipulation.structure import transpose as transpose_named
from ._align import axis_dim, fresh
from ._array import Array, wrap
from ._manipulation import permute_dims
from ._statistical import _check

_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty")


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
    index = np.pad(np.arange(n), (before, after), mode=mode)  # type: ignore[call-overload]  # NumPy's source position of every output entry
    parts = [_piece(x, dim, *r) for r in _runs(index[:before])]
    parts.append(x)
    parts += [_piece(x, dim, *r) for r in _runs(index[before + n :])]
    return concat(parts, dim)


def pad(x: Array, /, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Array:
    """``x`` padded along each axis, as ``np.pad`` (a NumPy extra beyond the standard).

    Modes ``constant`` (``constant_values``: a scalar, a pair, or a pair per
    axis), ``edge``, ``reflect``, ``symmetric``, ``wrap`` (pads wider than the
    axis repeat as NumPy's do) and ``empty`` (zeros here). Axes are padded one
    after another, as NumPy does, so corners follow NumPy.

    Collectives: along an unsplit axis none. Along a split one, the pad pieces
    are slices of the edge blocks (one small ``alltoallv`` each: only the
    entries of the pad move), an ``edge`` row is one ``broadcast`` of a row,
    and the pieces and ``x`` are joined by one ``concat`` (an ``alltoallv``
    in which each device sends at most its block). ``constant`` zeros are one
    ``move``. Nothing is gathered. Differentiable (the pieces are slices).

    Args:
        x: the array.
        pad_width: an int, ``(before, after)``, or ``((before, after), ...)`` per axis.
        mode: one of the modes above.
        **kwargs: ``constant_values`` (mode ``constant``); ``reflect_type="even"``.

    Raises:
        ArgumentError: an unknown mode or keyword, negative or malformed widths.
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
        raise ArgumentError(
            f"pad: mode {mode!r} is not supported on distributed arrays; use one of {_PAD_MODES} "
            f"(statistic modes: compute the statistic with xp.max/xp.mean/... and pad with mode='constant')"
        )
    values = kwargs.pop("constant_values", None)
    if kwargs.pop("reflect_type", "even") != "even":
        raise ArgumentError(f"{what}: only reflect_type='even' is supported")
    if kwargs or (mode != "constant" and values is not None):
        bad = sorted(kwargs) or ["constant_values"]
        raise ArgumentError(f"{what}: unexpected keyword(s) {bad} for this mode (np.pad's rules)")
    values = 0 if values is None else values
    widths = _pad_widths(pad_width, x.ndim, what)
    pairs = _pad_values(values, x.ndim, what)
    for b, a in (p for p in pairs if mode == "constant"):
        for v in (b, a):
            if np.ndim(v) != 0:
                raise ArgumentError(f"{what}: constant_values must be scalars; got {values!r:.80}")
    kind = type(x)
    y: ShardArray = as_kind(x, ShardArray)
    for dim, (b, a), vals in zip(x.dims, widths, pairs):
        y = _pad_dim(y, dim, b, a, mode, vals)
    return wrap(as_kind(y, kind))


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


__all__ = ["lib", "pad", "sliding_window_view", "transpose"]
