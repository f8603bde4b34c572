"""NumPy's ``gradient`` beyond the array API standard (xarray's ``differentiate`` calls ``xp.gradient``).

Second-order central differences inside, first- or second-order one-sided ones at the ends, with uniform spacing or
coordinates, as ``np.gradient``; composed of the namespace's slicing, arithmetic and ``concat`` (along a split
axis: the slices' ``alltoallv`` of at most a block each and the concat's), so nothing is gathered and the result is
differentiable.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..array import ShardArray
from ..backend.meta import truth
from ..errors import ArgumentError, DimensionError
from ._align import axis_dim
from ._array import Array
from ._creation import asarray
from ._manipulation import concat, diff, reshape
from ._statistical import _check
from ._statistical import all as _all


def _along(f: Array, k: int, start: int | None, stop: int | None) -> Array:
    """``f[start:stop]`` along axis ``k``."""
    return f[(slice(None),) * k + (slice(start, stop),)]


def _column(c: Array, ndim: int, k: int) -> Array:
    """A 1-D (or 0-d) coefficient shaped to broadcast along axis ``k`` of an ``ndim``-d array."""
    return c if c.ndim == 0 else reshape(c, (c.shape[0], *([1] * (ndim - k - 1))))


def _spacing(h: Any, n: int, device: Any, what: str) -> Array | float:
    """A scalar spacing, or the differences of coordinates of length ``n`` (an array; one 0-d array where they are
    all equal, NumPy's uniform formula). Host coordinates are differenced and compared on the host (no traffic);
    an array's differences take one allreduce of a bool to compare, and on a meta mesh (no values) they are
    taken as unequal: the general formula's traffic."""
    if isinstance(h, numbers.Real) and not isinstance(h, bool):
        return float(h)
    if not isinstance(h, Array):
        hc = np.asarray(h, dtype=np.float64)
        if hc.ndim == 1 and hc.shape[0] == n:
            dh = np.diff(hc)
            return asarray(dh[0] if bool(np.all(dh == dh[0])) else dh, device=device)
    c = h if isinstance(h, Array) else asarray(np.asarray(h, dtype=np.float64), device=device)
    if c.ndim == 0:
        return c
    if c.ndim != 1 or c.shape[0] != n:
        raise DimensionError(f"{what}: a coordinate array must be 1-D with the axis' length {n}; got shape {c.shape}")
    dx: Array = diff(c.astype("float64") if c.dtype.kind in "biu" else c)
    if truth(_all(dx == dx[0]), False):  # (NumPy: equal steps take the uniform formula; meta: the general one)
        return dx[0]
    return dx


def _one_axis(f: Array, k: int, h: Array | float, edge_order: int) -> Array:
    nd = f.ndim
    at = lambda i, j=None: _along(f, k, i, j)  # noqa: E731
    if not isinstance(h, ShardArray) or h.ndim == 0:
        inner = (at(2) - at(None, -2)) / (2.0 * h)
        if edge_order == 1:
            first, last = (at(1, 2) - at(0, 1)) / h, (at(-1) - at(-2, -1)) / h
        else:
            first = (-1.5 * at(0, 1) + 2.0 * at(1, 2) - 0.5 * at(2, 3)) / h
            last = (0.5 * at(-3, -2) - 2.0 * at(-2, -1) + 1.5 * at(-1)) / h
    else:
        d1, d2 = _column(h[:-1], nd, k), _column(h[1:], nd, k)
        inner = (
            -d2 / (d1 * (d1 + d2)) * at(None, -2) + (d2 - d1) / (d1 * d2) * at(1, -1) + d1 / (d2 * (d1 + d2)) * at(2)
        )
        if edge_order == 1:
            first, last = (at(1, 2) - at(0, 1)) / h[0], (at(-1) - at(-2, -1)) / h[-1]
        else:
            a1, a2, b1, b2 = h[0], h[1], h[-2], h[-1]
            first = (
                -(2.0 * a1 + a2) / (a1 * (a1 + a2)) * at(0, 1)
                + (a1 + a2) / (a1 * a2) * at(1, 2)
                - a1 / (a2 * (a1 + a2)) * at(2, 3)
            )
            last = (
                b2 / (b1 * (b1 + b2)) * at(-3, -2)
                - (b2 + b1) / (b1 * b2) * at(-2, -1)
                + (2.0 * b2 + b1) / (b2 * (b1 + b2)) * at(-1)
            )
    return concat([first, inner, last], axis=k)


def gradient(f: Array, /, *varargs: Any, axis: int | tuple[int, ...] | None = None, edge_order: int = 1) -> Any:
    """The gradient of ``f`` along each axis asked, as ``np.gradient`` (a NumPy extra).

    ``varargs``: nothing (spacing 1), one spacing for every axis, or one per axis, each a scalar or the axis'
    coordinates (a 1-D array of its length: host data or an array of the namespace). ``edge_order`` 1 or 2 at the
    ends. One array for one axis, else a tuple, as NumPy; integers give float64. Collectives: along a split axis,
    the slices' ``alltoallv`` (at most a block each) and the ``concat``'s; coordinates given as an array also one
    allreduce of a bool (are their steps equal: NumPy's uniform formula then; a meta mesh, without values, prices
    the general one). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.gradient(xp.asarray([1.0, 2.0, 4.0, 7.0, 11.0])).numpy()
        array([1. , 1.5, 2.5, 3.5, 4. ])
    """
    f = _check(f, "gradient")
    if edge_order not in (1, 2) or isinstance(edge_order, bool):
        raise ArgumentError(f"gradient: edge_order must be 1 or 2; got {edge_order!r}")
    if axis is None:
        ks = list(range(f.ndim))
    else:
        ks = [f.dims.index(axis_dim(f, a, "gradient")) for a in ((axis,) if isinstance(axis, int) else axis)]
    if len(set(ks)) != len(ks):
        raise DimensionError(f"gradient: axis {axis!r} repeats an axis (array of shape {f.shape})")
    if len(varargs) not in (0, 1, len(ks)):
        raise ArgumentError(f"gradient: give no spacing, one, or one per axis ({len(ks)}); got {len(varargs)}")
    steps = list(varargs) * len(ks) if len(varargs) == 1 else list(varargs) or [1.0] * len(ks)
    if f.dtype.kind in "biu":
        f = f.astype("float64")
    out = []
    for k, h in zip(ks, steps):  # (each in f's dtype, as NumPy: float64 coordinates keep float32 data float32)
        if f.shape[k] < edge_order + 1:
            raise DimensionError(
                f"gradient: axis {k} has {f.shape[k]} points; edge_order={edge_order} needs at least {edge_order + 1}"
            )
        g = _one_axis(f, k, _spacing(h, f.shape[k], f.device, "gradient"), edge_order)
        out.append(g if g.dtype == f.dtype else g.astype(f.dtype))
    return out[0] if len(out) == 1 else tuple(out)


__all__ = ["gradient"]
