"""NumPy functions without a same-named counterpart, composed from the namespace's functions.

Each handler takes ``(xp, what, *numpy_args, **numpy_kwargs)`` with NumPy's
signature and builds the result from ``xp`` functions only (their collectives
are the call's; nothing is gathered). Where NumPy's semantics need a choice
for distributed arrays, the choice is an experienced NumPy user's:

* ``np.allclose``, ``np.array_equal`` and ``np.array_equiv`` return a Python
  bool as NumPy does: the one value read is a replicated 0-d reduction, not a
  gather of the arrays;
* ``np.shape``, ``np.ndim`` and ``np.size`` read metadata only;
* ``np.dot`` of arrays of at most 2 dims is ``matmul``, above that
  ``tensordot`` over (last axis of ``a``, second-to-last of ``b``), NumPy's
  definition (``positional_dots``, with the other products, ``np.einsum`` and
  ``np.choose``: bools as NumPy's, registered here);
* ``np.round`` of bools is NumPy's float16 (``decimals=0``);
* ``np.unique`` (no ``axis``) is ``xp.unique_values``/``xp.unique_all``: sorted
  values, the NaNs merged into one as NumPy's default ``equal_nan=True`` does
  (counts summed, the first index, the inverse of every NaN pointing at it;
  the number of NaNs is read as a replicated 0-d sum); ``equal_nan=False``
  keeps each NaN distinct;
* ``np.round(x, decimals)`` scales by ``10**decimals`` and rounds half to even,
  as NumPy does (so the same floating-point results);
* NumPy scalars and 0-d arrays among the operands keep their dtype (NEP 50:
  ``np.hstack((x, np.int16(1)))`` is int16 for an int16 ``x``);
* ``np.logspace``/``np.geomspace`` of arrays follow NumPy's algorithms (on
  ``np.linspace``'s handler), ``np.meshgrid(sparse=True)`` gives NumPy's
  broadcastable shapes (reshapes only);
* ``np.where`` takes any condition (a non-bool one is ``condition != 0``),
  ``np.take`` indices of any shape (they replace the axis, NumPy's
  ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``), and ``np.split``
  counts negative indices from the end, as NumPy does;
* ``np.put_along_axis`` writes in place through ``x[idx] = values`` (NumPy's
  open grid of the other axes' positions with the indices; the last of
  repeated indices wins) and returns None, as NumPy's.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> np.vstack([a, a]).shape, np.asarray(np.dot(a, a.T))[0], np.allclose(a, a + 1e-9)
    ((6, 2), array([ 5., 11., 17.]), True)
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any, cast

import numpy as np

from ..array import ShardArray, like_kind
from ..core.tape import refuse_write
from ..dtypes import is_complex, is_real_float
from ..errors import ArgumentError, DimensionError, DTypeError, IndexTypeError
from ..ops.creation.basic import asarray as from_host
from ..ops.indexing.writes import WRITES, swap_in
from ..ops.manipulation.structure import rename
from ..ops.sorting.unique import unique as _unique_op
from .common import mixing_error, short
from .positional_args import axes_of, cast_to, host_value, is_neutral, refuse, write_out
from .positional_ufuncs import scalar_operand

#: (NumPy submodule, NumPy name) -> handler(xp, what, *args, **kwargs)
COMPOSED: dict[tuple[str, str], Callable[..., Any]] = {}


def composed(*names: str, space: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a handler for ``np[.space].<name>`` for each of ``names``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            COMPOSED[(space, name)] = fn
        return fn

    return register


def _array(xp: Any, what: str, value: Any, i: int | str, ref: Any) -> ShardArray:
    """An operand as an array of the namespace: arrays as they are, Python/NumPy scalars as 0-d arrays (a NumPy
    scalar or 0-d array keeps its dtype, as NumPy's ``asanyarray`` does: ``np.hstack((x, np.int16(1)))``)."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return cast(ShardArray, xp.asarray(value, device=ref.mesh))
    value = host_value(what, value, i, ref)
    if isinstance(value, ShardArray):
        return value
    if isinstance(value, (bool, int, float, complex)):
        return xp.asarray(value, device=ref.mesh)
    if isinstance(value, (list, tuple)):
        raise DTypeError(
            f"{what}: operand {i} is a Python {type(value).__name__} ({len(value)} items): host data does not mix "
            f"with an Array implicitly (that would copy it onto the mesh), as CuPy and JAX refuse it too. Convert it "
            f"with xp.asarray(values, device=x.device) (import shardarray.array_api as xp)"
        )
    raise DTypeError(f"{what}: operand {i} must be an array or a scalar; got {short(value)}")


def _ref(*values: Any) -> Any:
    """The first distributed array among ``values`` (searching one level into sequences)."""
    for v in values:
        if isinstance(v, ShardArray):
            return v
        if isinstance(v, (list, tuple)):
            found = _ref(*v)
            if found is not None:
                return found
    return None


def _arrays(xp: Any, what: str, values: Sequence[Any]) -> list[ShardArray]:
    ref = _ref(*values)
    return [_array(xp, what, v, i, ref) for i, v in enumerate(values)]


def _no_kwargs(what: str, **kwargs: Any) -> None:
    for key, value in kwargs.items():
        if not is_neutral(key, value):
            raise refuse(what, key, value)


# ------------------------------------------------------------------ metadata and shape


@composed("shape")
def _shape(xp: Any, what: str, a: Any) -> tuple[int, ...]:
    return tuple(a.shape)


@composed("ndim")
def _ndim(xp: Any, what: str, a: Any) -> int:
    return int(a.ndim)


@composed("size")
def _size(xp: Any, what: str, a: Any, axis: Any = None) -> int:
    return int(a.size) if axis is None else int(a.shape[axes_of(axis, a.ndim, what)[0]])


@composed("squeeze")
def _squeeze(xp: Any, what: str, a: Any, axis: Any = None) -> Any:
    if a.ndim == 0 and axis is not None and np.ndim(axis) <= 1 and all(k in (0, -1) for k in np.ravel(axis)):
        return a  # (NumPy lets axis 0 or -1 name a 0-d array's one element: nothing to squeeze)
    axes = axes_of(axis, a.ndim, what) if axis is not None else tuple(i for i, n in enumerate(a.shape) if n == 1)
    return xp.squeeze(a, axis=axes) if axes else a


@composed("transpose")
def _transpose(xp: Any, what: str, a: Any, axes: Any = None) -> Any:
    if isinstance(axes, tuple) and len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        axes = axes[0]  # (x.transpose(None), x.transpose((1, 0)): the method's one argument)
    if axes is None:
        return xp.permute_dims(a, tuple(reversed(range(a.ndim))))
    try:
        perm = tuple(operator.index(k) for k in axes)
    except TypeError:
        raise DimensionError(
            f"{what}: axes must be a permutation of the axes 0..{a.ndim - 1} (integers), or None; got {axes!r:.60}"
        ) from None
    return xp.permute_dims(a, perm)


@composed("swapaxes")
def _swapaxes(xp: Any, what: str, a: Any, axis1: Any, axis2: Any) -> Any:
    if axis1 is None or axis2 is None:
        raise DTypeError(f"{what}: axis1 and axis2 must be integers (as in NumPy, a TypeError); got None")
    (i,), (j,) = axes_of(axis1, a.ndim, what), axes_of(axis2, a.ndim, what)
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return xp.permute_dims(a, tuple(perm))


def _at_least(xp: Any, a: ShardArray, n: int) -> ShardArray:
    """NumPy's ``atleast_{n}d`` of one array: () -> (1,)*n; (k,) -> (1, k[, 1]); (m, k) -> (m, k, 1) for n = 3."""
    if a.ndim >= n:
        return a
    if a.ndim == 0:
        return xp.reshape(a, (1,) * n)
    if a.ndim == 1:
        return xp.reshape(a, (1, a.shape[0]) if n == 2 else (1, a.shape[0], 1))
    return xp.reshape(a, (*a.shape, 1))


def _at_least_nd(n: int) -> Callable[..., Any]:
    def handler(xp: Any, what: str, *arys: Any) -> Any:
        out = [_at_least(xp, a, n) for a in _arrays(xp, what, arys)]
        return out[0] if len(out) == 1 else tuple(out)

    return handler


for _n in (1, 2, 3):
    COMPOSED[("", f"atleast_{_n}d")] = _at_least_nd(_n)


# ------------------------------------------------------------------ joining and splitting


def _stacker(n: int, axis: Callable[[list[ShardArray]], int]) -> Callable[..., Any]:
    def handler(xp: Any, what: str, tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
        arrays = [_at_least(xp, a, n) for a in _arrays(xp, what, list(tup))]
        if dtype is not None:
            arrays = cast_to(xp, arrays, dtype, casting, what)
        else:
            _no_kwargs(what, casting=casting)
        return xp.concat(arrays, axis=axis(arrays))

    return handler


COMPOSED[("", "vstack")] = _stacker(2, lambda arrays: 0)
COMPOSED[("", "hstack")] = _stacker(1, lambda arrays: 0 if arrays[0].ndim == 1 else 1)
COMPOSED[("", "dstack")] = _stacker(3, lambda arrays: 2)


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


@composed("column_stack")
def _column_stack(xp: Any, what: str, tup: Any) -> Any:
    arrays = [xp.reshape(a, (-1, 1)) if a.ndim < 2 else a for a in _arrays(xp, what, list(tup))]
    return xp.concat(arrays, axis=1)


@composed("append")
def _append(xp: Any, what: str, arr: Any, values: Any, axis: Any = None) -> Any:
    a, v = _arrays(xp, what, [arr, values])
    if axis is None:
        return xp.concat([xp.reshape(a, (-1,)), xp.reshape(v, (-1,))], axis=0)
    return xp.concat([a, v], axis=axis)


def _splitter(equal: bool, default_axis: Callable[[ShardArray], int] | None = None) -> Callable[..., Any]:
    def handler(xp: Any, what: str, ary: Any, indices_or_sections: Any, axis: Any = 0) -> list[Any]:
        a = ary
        if default_axis is not None:
            axis = default_axis(a)
        (k,) = axes_of(axis, a.ndim, what)
        n = a.shape[k]
        if isinstance(indices_or_sections, numbers.Real):  # (a count: NumPy takes any real, as int() reads it)
            if equal and indices_or_sections and n % indices_or_sections:
                raise ArgumentError(
                    f"{what}: array split does not result in an equal division ({n} by {indices_or_sections})"
                )
            sections = int(cast(Any, indices_or_sections))
            if sections <= 0:
                raise ArgumentError(f"{what}: the number of sections must be larger than 0; got {indices_or_sections}")
            each, extra = divmod(n, sections)
            sizes = [each + 1] * extra + [each] * (sections - extra)
            bounds = [0, *np.cumsum(sizes).tolist()]
        else:
            bounds = [0, *(min(max(i + n if i < 0 else i, 0), n) for i in map(int, indices_or_sections)), n]
        lead = (slice(None),) * k
        return [a[lead + (slice(s, max(s, e)),)] for s, e in itertools.pairwise(bounds)]

    return handler


def _need(ndim: int, axis: int, name: str) -> Callable[[ShardArray], int]:
    def pick(a: ShardArray) -> int:
        if a.ndim < ndim:
            raise DimensionError(f"np.{name} only works on arrays of {ndim} or more dimensions; got shape {a.shape}")
        return axis

    return pick


COMPOSED[("", "split")] = _splitter(True)
COMPOSED[("", "array_split")] = _splitter(False)
COMPOSED[("", "hsplit")] = _splitter(True, lambda a: _need(1, 1 if a.ndim > 1 else 0, "hsplit")(a))
COMPOSED[("", "vsplit")] = _splitter(True, _need(2, 0, "vsplit"))
COMPOSED[("", "dsplit")] = _splitter(True, _need(3, 2, "dsplit"))


@composed("put_along_axis")
def _put_along_axis(xp: Any, what: str, arr: Any, indices: Any, values: Any, axis: Any) -> None:
    """``np.put_along_axis``: ``arr[idx] = values`` in place, ``idx`` NumPy's open grid of the other axes'
    positions with ``indices`` along ``axis`` (they broadcast together: an axis of ``indices`` of length 1 spreads
    over ``arr``'s), so its collectives are those of an integer-array write (the pairs routed to the rows' owners,
    no gather), repeated indices keeping the last value as NumPy's write does. ``axis=None`` writes the flattened
    array (1-D ``indices``): a reshape there and back (about two blocks a device each way on split axes)."""
    if not isinstance(arr, ShardArray):
        raise DTypeError(
            f"{what}: the array written into must be a shardarray array (a NumPy array cannot take the write of "
            f"distributed indices); convert it with xp.asarray(arr, device=indices.device)"
        )
    if isinstance(indices, np.ndarray) or (isinstance(values, np.ndarray) and values.ndim):
        host = indices if isinstance(indices, np.ndarray) else values
        raise mixing_error(what, np.asarray(host), "indices" if host is indices else "values", arr)
    if not isinstance(indices, ShardArray) or indices.dtype.kind not in "iu":
        got = indices.dtype if isinstance(indices, ShardArray) else type(indices).__name__
        raise IndexTypeError(f"{what}: indices must be an integer array (as in NumPy); got {got}")
    if axis is None:
        if indices.ndim != 1:
            raise DimensionError(f"{what}: with axis=None, indices must be 1-D (as in NumPy); got {indices.shape}")
        refuse_write(arr, what, "build it with xp.where")
        with WRITES:  # (the read, the write and the swap as one write)
            flat = xp.reshape(arr, (-1,))
            flat[indices] = values
            swap_in(arr, xp.reshape(flat, arr.shape))
        return
    (k,) = axes_of(axis, arr.ndim, what)
    if indices.ndim != arr.ndim:
        raise DimensionError(
            f"{what}: indices (shape {indices.shape}) must have as many dimensions as the array (shape {arr.shape})"
        )
    grid = tuple(
        indices if i == k else np.arange(n).reshape([n if j == i else 1 for j in range(arr.ndim)])
        for i, n in enumerate(arr.shape)
    )
    arr[grid] = values


@composed("fliplr")
def _fliplr(xp: Any, what: str, m: Any) -> Any:
    return xp.flip(m, axis=_need(2, 1, "fliplr")(m))


@composed("flipud")
def _flipud(xp: Any, what: str, m: Any) -> Any:
    return xp.flip(m, axis=_need(1, 0, "flipud")(m))


@composed("trace")
def _trace(
    xp: Any, what: str, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None
) -> Any:
    moved = to_end(xp, a, axis1, axis2, what)
    return write_out(out, xp.linalg.trace(moved, offset=offset, dtype=dtype), what)


@composed("diagonal")
def _diagonal(xp: Any, what: str, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return xp.linalg.diagonal(to_end(xp, a, axis1, axis2, what), offset=offset)


def to_end(xp: Any, a: ShardArray, axis1: Any, axis2: Any, what: str) -> Any:
    """``a`` with ``axis1`` and ``axis2`` moved to the end (in that order)."""
    (i,), (j,) = axes_of(axis1, a.ndim, what), axes_of(axis2, a.ndim, what)
    if i == j:
        raise DimensionError(f"{what}: axis1 and axis2 cannot be the same axis ({i})")
    perm = (*(k for k in range(a.ndim) if k not in (i, j)), i, j)
    return a if perm == tuple(range(a.ndim)) else xp.permute_dims(a, perm)


@composed("cross")
def _cross(
    xp: Any, what: str, a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None
) -> Any:
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = _arrays(xp, what, [a, b])
    if x.ndim == 0 or y.ndim == 0 or x.shape[axisa] != 3 or y.shape[axisb] != 3:
        return NotImplemented  # 2-vectors (NumPy's z component) have no counterpart
    result = xp.linalg.cross(xp.moveaxis(x, axisa, -1), xp.moveaxis(y, axisb, -1), axis=-1)
    return xp.moveaxis(result, -1, axisc) if result.ndim > 1 else result


# ------------------------------------------------------------------ comparisons


@composed("isclose")
def _isclose(
    xp: Any, what: str, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Any:
    """0-d Array tolerances are read as Python floats (a 0-d read); where neither ``a`` nor ``b`` is an Array
    (``numpy.testing.assert_allclose(host, host, atol=xp_scalar)``) the result is NumPy's on the host values."""
    host = _ref(a, b) is None
    rtol, atol = (_tolerance(what, name, v, host) for name, v in (("rtol", rtol), ("atol", atol)))
    if host:
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    x, y = _arrays(xp, what, [a, b])
    x, y = (v if np.dtype(v.dtype).kind in "fc" else xp.astype(v, xp.float64) for v in (x, y))
    result = xp.logical_or(
        xp.logical_and(xp.less_equal(xp.abs(x - y), atol + rtol * xp.abs(y)), xp.isfinite(y)), xp.equal(x, y)
    )
    if equal_nan:
        result = xp.logical_or(result, xp.logical_and(xp.isnan(x), xp.isnan(y)))
    return result


def _tolerance(what: str, name: str, value: Any, host: bool) -> Any:
    """A tolerance of ``np.isclose``: a 0-d Array as its Python value, an n-d one next to Arrays as it is (one next
    to host operands only is refused: its values would be gathered implicitly)."""
    if not isinstance(value, ShardArray) or (value.ndim and not host):
        return value
    if value.ndim == 0:
        return value.item()
    raise DTypeError(
        f"{what}: {name} is an Array of shape {value.shape}; an array of tolerances does not mix with host "
        f"operands, nor is it read implicitly: pass {name}={name}.numpy() (an explicit gather) or a scalar"
    )


@composed("allclose")
def _allclose(
    xp: Any, what: str, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    return bool(np.all(_isclose(xp, what, a, b, rtol, atol, equal_nan)))


@composed("array_equal")
def _array_equal(xp: Any, what: str, a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    x, y = _arrays(xp, what, [a1, a2])
    if x.shape != y.shape:
        return False
    same = xp.equal(x, y)
    if equal_nan and np.dtype(x.dtype).kind in "fc" and np.dtype(y.dtype).kind in "fc":
        same = xp.logical_or(same, xp.logical_and(xp.isnan(x), xp.isnan(y)))
    return bool(xp.all(same))


@composed("array_equiv")
def _array_equiv(xp: Any, what: str, a1: Any, a2: Any) -> bool:
    x, y = _arrays(xp, what, [a1, a2])
    try:
        np.broadcast_shapes(x.shape, y.shape)  # shapes only
    except ValueError:
        return False
    return bool(xp.all(xp.equal(x, y)))


# ------------------------------------------------------------------ elementwise and reductions


@composed("round", "around")
def _round(xp: Any, what: str, a: Any, decimals: int = 0, out: Any = None) -> Any:
    d = operator.index(decimals)
    if a.dtype == np.bool_:
        if d != 0:  # NumPy scales float16 bools and cannot write them back into bool (its UFuncTypeError)
            raise DTypeError(f"{what}: bools round with decimals=0 only, as in NumPy; cast first with x.astype")
        return write_out(out, xp.astype(a, np.float16), what)  # NumPy's loop for bools: float16 (0. and 1.)
    if d == 0:
        result = xp.round(a)
    elif np.dtype(a.dtype).kind in "iu" and d > 0:
        result = xp.astype(a, a.dtype, copy=True)
    else:
        scale = 10.0 ** abs(d)
        result = xp.round(a * scale) / scale if d > 0 else xp.round(a / scale) * scale
        if np.dtype(a.dtype).kind in "iu":
            result = xp.astype(result, a.dtype)
    return write_out(out, result, what)


@composed("where")
def _where(xp: Any, what: str, condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None and y is None:
        return xp.nonzero(condition)
    if x is None or y is None:
        raise ArgumentError(f"{what}: give either the condition alone or the condition, x and y")
    ref = _ref(condition, x, y)
    cond = host_value(what, condition, 0, ref)
    a, b = (host_value(what, scalar_operand(xp, v, ref), i, ref) for i, v in enumerate((x, y), 1))  # NEP 50
    if isinstance(cond, Number):
        cond = xp.asarray(bool(cond), device=ref.mesh)
    elif isinstance(cond, ShardArray) and cond.dtype != np.bool_:
        cond = xp.not_equal(cond, 0)  # NumPy's condition is any array: its nonzero entries are True
    return xp.where(cond, a, b)


@composed("take")
def _take(xp: Any, what: str, a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    _no_kwargs(what, mode=mode)
    a = _array(xp, what, a, 0, _ref(a, indices))
    x = xp.reshape(a, (-1,)) if (axis is None or a.ndim == 0) and a.ndim != 1 else a  # (0-d: read as 1-D)
    (k,) = axes_of(0 if axis is None else axis, x.ndim, what)
    # (host integer indices, a NumPy array too, as ``x[np.array([0, 2])]`` takes them: an index is host data)
    host_ids = isinstance(indices, np.ndarray) and indices.dtype.kind in "iu"
    ids = indices if host_ids else host_value(what, indices, "indices", a)
    if isinstance(ids, ShardArray):
        shape, flat = ids.shape, xp.reshape(ids, (-1,)) if ids.ndim != 1 else ids
    else:
        shape, flat = np.shape(ids), np.reshape(ids, -1)
        flat = flat if flat.size else flat.astype(np.int64)  # NumPy takes an empty list of indices
    result = xp.take(x, flat, axis=k)
    want = x.shape[:k] + tuple(shape) + x.shape[k + 1 :]
    return write_out(out, result if result.shape == want else xp.reshape(result, want), what)


@composed("flatnonzero")
def _flatnonzero(xp: Any, what: str, a: Any) -> Any:
    return xp.nonzero(xp.reshape(a, (-1,)))[0]


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
            raise ArgumentError(  # (NumPy divides a.size by the result's size, 0 / 0: its ZeroDivisionError)
                f"{what}: the average over axis={axis!r} of the array of shape {x.shape} has no element (a kept "
                f"axis is empty), and NumPy raises ZeroDivisionError for it; check x.size before averaging"
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
        _nonzero_weights(xp, what, xp.sum(w), axis)  # (NumPy checks the 1-D weights' sum: an empty x too)
        (k,) = axes_of(axis, x.ndim, what)
        w = xp.reshape(w, tuple(n if i == k else 1 for i, n in enumerate(x.shape)))
        w = xp.broadcast_to(w, x.shape)
    total = xp.sum(w, axis=axis, keepdims=kd)
    _nonzero_weights(xp, what, total, axis)
    avg = xp.sum(x * w, axis=axis, keepdims=kd) / total
    return (avg, xp.broadcast_to(total, avg.shape)) if returned else avg


def _nonzero_weights(xp: Any, what: str, total: Any, axis: Any) -> None:
    """Raise where a sum of weights is zero (one boolean read): NumPy's ZeroDivisionError, before any division."""
    if bool(xp.any(total == 0)):
        raise ArgumentError(
            f"{what}: the weights sum to zero along axis={axis!r}, so the weighted average is undefined (NumPy "
            f"raises ZeroDivisionError); give weights with a nonzero sum over each slice"
        )


def _average_dtype(a: Any, w: Any) -> np.dtype:
    """NumPy's dtype of a weighted average: ``result_type(a, weights)``, with float64 for integer or bool ``a``."""
    floats = is_real_float(a) or is_complex(a)
    try:
        return np.result_type(a, w) if floats else np.result_type(a, w, np.float64)
    except TypeError:  # (a float type without promotion rules with the weights': bfloat16 with int8)
        return np.dtype(a) if floats else np.dtype(np.float64)


@composed("copy")
def _copy(xp: Any, what: str, a: Any, order: str = "K", subok: bool = False) -> Any:
    _no_kwargs(what, order=order)
    return xp.astype(a, a.dtype, copy=True)


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


# ------------------------------------------------------------------ creation from host data (NumPy's ``like=``)


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


# ------------------------------------------------------------------ np.emath (numpy.lib.scimath)

#: the real dtypes that ``np.emath`` makes complex64 (NumPy's ``_tocomplex``); the others become complex128
_SINGLE_COMPLEX = frozenset({"float32", "int8", "int16", "uint8", "uint16"})


def _emath_operand(xp: Any, what: str, v: Any, i: int, ref: Any, outside: Callable[[Any], Any]) -> Any:
    """NumPy's domain fix of an ``np.emath`` operand: a real one with an element where ``outside`` holds becomes
    complex (``_fix_real_lt_zero`` and friends). The test is one replicated bool read of a distributed operand, as
    the result's dtype depends on it; a host operand stays a NumPy 0-d array (strong, as NumPy's ``asarray``)."""
    v = v if isinstance(v, ShardArray) else _host_operand(what, v, i, ref)
    if v.dtype.kind not in "iuf" or not bool(outside(v).any()):
        return v
    return v.astype(np.complex64 if v.dtype.name in _SINGLE_COMPLEX else np.complex128)


def _host_operand(what: str, v: Any, i: int, ref: Any) -> np.ndarray:
    """A host operand of ``np.emath`` as NumPy's ``asarray`` makes it (a NumPy scalar keeps its dtype; arrays of
    one or more dims are refused, as everywhere: ``xp.asarray`` them)."""
    return np.asarray(v if isinstance(v, np.generic) else host_value(what, v, i, ref))


def _emath(ufunc: np.ufunc, outside: Callable[[Any], Any]) -> Callable[..., Any]:
    def handler(xp: Any, what: str, *args: Any) -> Any:
        ref = _ref(*args)
        return ufunc(*(_emath_operand(xp, what, v, i, ref, outside) for i, v in enumerate(args)))

    return handler


def _negative(v: Any) -> Any:
    return v < 0


def _beyond_one(v: Any) -> Any:
    return abs(v) > 1


for _name, _ufunc, _outside in (
    ("sqrt", np.sqrt, _negative),
    ("log", np.log, _negative),
    ("log2", np.log2, _negative),
    ("log10", np.log10, _negative),
    ("arccos", np.arccos, _beyond_one),
    ("arcsin", np.arcsin, _beyond_one),
    ("arctanh", np.arctanh, _beyond_one),
):
    COMPOSED[("emath", _name)] = _emath(_ufunc, _outside)


@composed("logn", space="emath")
def _emath_logn(xp: Any, what: str, n: Any, x: Any) -> Any:
    """``np.emath.logn(n, x)``: ``log(x) / log(n)`` of the domain-fixed operands, NumPy's definition."""
    ref = _ref(n, x)
    a, b = (_emath_operand(xp, what, v, i, ref, _negative) for i, v in enumerate((n, x)))
    return np.log(b) / np.log(a)


@composed("power", space="emath")
def _emath_power(xp: Any, what: str, x: Any, p: Any) -> Any:
    """``np.emath.power(x, p)``: a negative real ``x`` makes it complex, a negative integer ``p`` float64
    (``p * 1.0``), as NumPy's."""
    ref = _ref(x, p)
    base = _emath_operand(xp, what, x, 0, ref, _negative)
    q = p if isinstance(p, ShardArray) else _host_operand(what, p, 1, ref)
    q = q * 1.0 if q.dtype.kind in "iu" and bool((q < 0).any()) else q
    return np.power(base, q)
