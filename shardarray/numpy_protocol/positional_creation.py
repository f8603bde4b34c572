"""NumPy's creation functions composed from the namespace's: ranges of array endpoints, grids, ``like=``.

Registered in ``positional_compose.COMPOSED``. The choices for distributed arrays:

* ``np.linspace``, ``np.logspace`` and ``np.geomspace`` of array endpoints follow NumPy's algorithms and dtypes
  (the new axis is not split: each device computes its samples of the endpoints' blocks);
* ``np.meshgrid(sparse=True)`` gives NumPy's broadcastable shapes (reshapes only);
* ``np.array(obj, like=x)`` and its relatives (NEP 35's ``like=``, how a NumPy script makes arrays of the
  reference's kind), ``np.fromiter`` and ``np.fromfunction`` build on the default mesh, as ``xp.asarray`` does.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([0.0, 10.0])
    >>> np.asarray(np.linspace(a, a + 4, 3)).tolist(), [g.shape for g in np.meshgrid(a, a[:1], sparse=True)]
    ([[0.0, 10.0], [2.0, 12.0], [4.0, 14.0]], [(1, 2), (1, 1)])
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..errors import ArgumentError, DimensionError, DTypeError
from ..ops.creation.basic import asarray as from_host
from .common import short
from .positional_args import axes_of, host_value
from .positional_compose import COMPOSED, _array, _arrays, _no_kwargs, _ref, composed


@composed("linspace")
def _linspace(
    xp: Any,
    what: str,
    start: Any,
    stop: Any,
    num: Any = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: int = 0,
    *,
    device: Any = None,
) -> Any:
    """``np.linspace`` with array endpoints: ``num`` samples along a new axis ``axis`` between each pair of
    ``start``/``stop`` values (broadcast), NumPy's arithmetic (``i * step + start``, ``i / div * delta + start``
    where a step is 0, the last sample exactly ``stop``; an integer ``dtype`` floors) and dtype (NumPy scalars
    keep theirs, Python scalars are weak). ``retstep``'s step is NumPy's float NaN where it is undefined (``num``
    0, or 1 with ``endpoint``). The new axis is not split: the endpoints' blocks stay where they are and each
    device computes its ``num`` samples of them (no traffic; one replicated bool read where a step might be 0)."""
    _no_kwargs(what, device=device)
    try:
        num = operator.index(num)
    except TypeError:
        raise DTypeError(f"{what}: num must be an integer; got {short(num)}") from None
    if num < 0:
        raise DimensionError(f"{what}: the number of samples, {num}, must be non-negative")
    ref = _ref(start, stop)
    raw = [host_value(what, v, k, ref) for k, v in (("start", start), ("stop", stop))]
    strong = (ShardArray, np.generic, np.ndarray)  # (NumPy scalars and 0-d arrays keep their dtype: NEP 50)
    dt = np.result_type(*(v.dtype if isinstance(v, strong) else v for v in (start, stop)), float(num))
    a, z = (xp.astype(_array(xp, what, v, k, ref), dt) for k, v in zip(("start", "stop"), raw))
    a, z = xp.broadcast_arrays(a, z)
    delta = z - a
    div = num - 1 if endpoint else num
    ramp = np.arange(num, dtype=dt).reshape((num,) + (1,) * a.ndim)
    i = like_kind(
        from_host(ramp, dims=tuple(f"dim{k}" for k in range(ramp.ndim)), mesh=ref.mesh, layout={}), ref
    )  # (replicated: the endpoints keep their layout in the products)
    if div > 0:
        step = delta / div
        y = i / div * delta if bool(xp.any(step == 0)) else i * step
    else:
        step = np.nan  # (NumPy's: a Python float, the step of fewer than two samples is undefined)
        y = i * delta
    y = y + a
    if endpoint and num > 1:
        y = xp.where(i == num - 1, z, y)
    ax = axes_of(axis, y.ndim, what)[0]
    if ax:
        y = xp.moveaxis(y, 0, ax)
    if dtype is not None:
        if np.issubdtype(np.dtype(dtype), np.integer):
            y = xp.floor(y)
        y = xp.astype(y, np.dtype(dtype))
    return (y, step) if retstep else y


@composed("logspace")
def _logspace(
    xp: Any,
    what: str,
    start: Any,
    stop: Any,
    num: Any = 50,
    endpoint: bool = True,
    base: Any = 10.0,
    dtype: Any = None,
    axis: int = 0,
) -> Any:
    """``np.logspace`` with array endpoints (or base): ``base ** np.linspace(start, stop, ...)`` as NumPy computes
    it (``_linspace``; a NumPy scalar ``base`` keeps its dtype, an array ``base`` broadcasts with the endpoints
    and gets the new axis), cast to ``dtype`` at the end (no flooring, as NumPy's ``astype``)."""
    ref = _ref(start, stop, base)
    y = _linspace(xp, what, start, stop, num, endpoint, axis=axis)
    b = _array(xp, what, base, "base", ref) if not isinstance(base, (int, float)) else base
    if isinstance(b, ShardArray) and b.ndim:
        nd = max(np.ndim(v) if not isinstance(v, ShardArray) else v.ndim for v in (start, stop, b))
        b = xp.reshape(b, (1,) * (nd - b.ndim) + b.shape) if b.ndim < nd else b
        b = xp.expand_dims(b, axis=axes_of(axis, nd + 1, what)[0])
    result = xp.pow(b, y) if isinstance(b, ShardArray) else b**y
    return result if dtype is None else xp.astype(result, np.dtype(dtype))


@composed("geomspace")
def _geomspace(
    xp: Any, what: str, start: Any, stop: Any, num: Any = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0
) -> Any:
    """``np.geomspace`` with array endpoints, NumPy's algorithm: computed in ``np.result_type(start, stop,
    float(num), dtype)`` (float64 at least, as NumPy's), the endpoints rotated to the positive reals by their
    sign, ``np.logspace`` of their ``log10``, the first and last samples exactly ``start`` and ``stop``. A zero
    endpoint is NumPy's ValueError (``ArgumentError``; one replicated bool read)."""
    ref = _ref(start, stop)
    a, z = _arrays(xp, what, [start, stop])
    if bool(xp.any(a == 0)) or bool(xp.any(z == 0)):
        raise ArgumentError(f"{what}: a geometric sequence cannot include zero; start and stop must be nonzero")
    strong = (ShardArray, np.generic, np.ndarray)
    kinds = [v.dtype if isinstance(v, strong) else v for v in (start, stop)]
    dt = np.result_type(*kinds, float(num), np.zeros((), dtype))
    a, z = xp.astype(a, dt), xp.astype(z, dt)
    sign = xp.sign(a)
    a, z = a / sign, z / sign
    result = _logspace(xp, what, xp.log10(a), xp.log10(z), num, endpoint, 10.0, dt)
    n = result.shape[0]
    if n > 0:
        ramp = np.arange(n).reshape((n,) + (1,) * (result.ndim - 1))
        i = like_kind(from_host(ramp, dims=tuple(f"dim{k}" for k in range(ramp.ndim)), mesh=ref.mesh, layout={}), ref)
        result = xp.where(i == 0, a, result)
        result = xp.where(i == n - 1, z, result) if n > 1 and endpoint else result
    result = result * sign
    ax = axes_of(axis, result.ndim, what)[0]
    result = xp.moveaxis(result, 0, ax) if ax else result
    return result if dtype is None else xp.astype(result, np.dtype(dtype))


@composed("meshgrid")
def _meshgrid(xp: Any, what: str, *xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
    """``np.meshgrid``: with ``sparse=True`` NumPy's broadcastable shapes, each input flattened and reshaped to
    size 1 on every axis but its own (the first two swapped for ``indexing='xy'``), no data moved beyond that.
    The results never alias the inputs, so ``copy=False`` (NumPy's views) gives the same values as copies."""
    if indexing not in ("xy", "ij"):
        raise ArgumentError(f"{what}: indexing must be 'xy' or 'ij'; got {indexing!r}")
    arrays = [xp.reshape(a, (-1,)) if a.ndim != 1 else a for a in _arrays(xp, what, xi)]
    if not sparse:
        return tuple(xp.meshgrid(*arrays, indexing=indexing))
    n = len(arrays)
    shapes = [[1] * i + [-1] + [1] * (n - i - 1) for i in range(n)]
    if indexing == "xy" and n > 1:
        shapes[0][:2], shapes[1][:2] = [1, -1], [-1, 1]
    return tuple(xp.reshape(a, tuple(s)) for a, s in zip(arrays, shapes))


def _as_array(copy_default: Any) -> Callable[..., Any]:
    def handler(
        xp: Any,
        what: str,
        a: Any,
        dtype: Any = None,
        order: Any = None,
        *,
        copy: Any = copy_default,
        subok: bool = False,
        ndmin: int = 0,
        device: Any = None,
    ) -> Any:
        """``np.array(obj, like=x)`` (``asanyarray``, ``ascontiguousarray``, ``asfortranarray`` alike; NEP 35's
        ``like=`` is how a NumPy script makes arrays of the reference's kind) is ``xp.asarray(obj)`` on the default
        mesh, as ``np.zeros(n, like=x)`` is ``xp.zeros``; ``ndmin`` prepends axes of size 1, as NumPy's."""
        _no_kwargs(what, order=order, subok=subok, device=device)
        out = xp.asarray(a, dtype=dtype, copy=copy)
        n = operator.index(ndmin)
        return xp.reshape(out, (1,) * (n - out.ndim) + tuple(out.shape)) if out.ndim < n else out

    return handler


COMPOSED[("", "array")] = _as_array(True)
for _name in ("asarray", "asanyarray", "ascontiguousarray", "asfortranarray"):
    COMPOSED[("", _name)] = _as_array(None)


@composed("fromiter")
def _fromiter(xp: Any, what: str, iter: Any, dtype: Any, count: Any = -1) -> Any:
    """``np.fromiter(it, dtype, like=x)``: the host iterable read by NumPy, then ``xp.asarray`` (the copy onto the
    default mesh, as ``np.array(list, like=x)``)."""
    return xp.asarray(np.fromiter(iter, dtype, count))


@composed("fromfunction")
def _fromfunction(
    xp: Any, what: str, function: Callable[..., Any], shape: Any, *, dtype: Any = float, **kw: Any
) -> Any:
    """``np.fromfunction(f, shape, like=x)`` is NumPy's ``f(*np.indices(shape, dtype=dtype), **kw)`` with the
    namespace's ``xp.indices``: each device builds its block of the grid, ``f`` runs on distributed arrays."""
    return function(*xp.indices(shape, dtype=dtype), **kw)
