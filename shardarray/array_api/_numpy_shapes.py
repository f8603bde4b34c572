"""NumPy's shape, sorting and construction extras beyond the array API standard: ``rot90``, ``block``, ``delete``,
``insert``, ``ediff1d``, ``resize``, ``trim_zeros``, ``vander``, ``select``, ``unwrap``, ``trapezoid``, ``lexsort``,
``partition`` and ``argpartition``.

Each takes NumPy's arguments and gives NumPy's result, composed of the namespace's own functions (``flip``,
``permute_dims``, slicing, ``concat``, ``tile``, ``cumulative_prod``, ``where``, ``diff``, ``cumulative_sum``,
``sort``/``argsort``, ``take_along_axis``), whose collectives and gradients it inherits; none gathers a split axis.
Positions given on the host (``delete``'s and ``insert``'s ``obj``) become slices: along a split axis each is an
``alltoallv`` of at most a block, and the ``concat`` one more.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DimensionError, DTypeError, OutOfBoundsError
from ._array import HOOKS, Array, wrap
from ._statistical import _check


def _xp() -> Any:
    """The namespace (``shardarray.array_api``), filled in by the package."""
    return HOOKS.namespace()


def _axis(x: ShardArray, axis: Any, what: str) -> int:
    """``axis`` as a non-negative int below ``x.ndim``."""
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
        raise ArgumentError(f"{what}: axis must be an int; got {axis!r}")
    if not -x.ndim <= int(axis) < x.ndim:
        raise OutOfBoundsError(f"{what}: axis {axis} is out of bounds for array of dimension {x.ndim}")
    return int(axis) % x.ndim


def _along(x: Any, k: int, start: int | None, stop: int | None) -> Array:
    """``x[start:stop]`` along axis ``k``."""
    return x[(slice(None),) * k + (slice(start, stop),)]


def _flat(x: Any) -> Array:
    return _xp().reshape(x, (-1,)) if x.ndim != 1 else x


def _runs(keep: np.ndarray) -> list[tuple[int, int]]:
    """The ``(start, stop)`` runs of True in a 1-D host mask."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], keep.astype(np.int8), [0]))))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


def _join(pieces: list[Array], like: Array, k: int) -> Array:
    """``concat`` of ``pieces`` along ``k``; an empty slice of ``like`` when there are none."""
    if not pieces:
        return _along(like, k, 0, 0)
    return pieces[0] if len(pieces) == 1 else _xp().concat(pieces, axis=k)


def rot90(m: Array, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Array:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes``, as ``np.rot90`` (a NumPy extra).

    ``flip`` and ``permute_dims``: along a split axis the flip's ``alltoallv`` (at most a block each), nothing
    else. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.rot90(xp.asarray([[1, 2], [3, 4]])).numpy()
        array([[2, 4],
               [1, 3]])
    """
    xp = _xp()
    m = _check(m, "rot90")
    if len(tuple(axes)) != 2:
        raise ArgumentError(f"rot90: axes must name two axes; got {axes!r}")
    if m.ndim < 2:
        raise DimensionError(f"rot90: needs at least 2 dimensions; got shape {m.shape}")
    a0, a1 = (_axis(m, a, "rot90") for a in axes)
    if a0 == a1:
        raise DimensionError(f"rot90: axes must differ; got {tuple(axes)!r}")
    k = int(k) % 4
    if k == 0:
        return xp.asarray(m, copy=True)
    if k == 2:
        return xp.flip(m, axis=(a0, a1))
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = a1, a0
    if k == 1:
        return xp.permute_dims(xp.flip(m, axis=a1), tuple(perm))
    return xp.flip(xp.permute_dims(m, tuple(perm)), axis=a1)


def _block_leaves(obj: Any, at: str, depth: int, out: list[tuple[str, int, Any]]) -> None:
    """The leaves of ``block``'s nested lists as ``(index text, depth, leaf)``; NumPy's errors for tuples and empty
    lists."""
    if isinstance(obj, tuple):
        raise DTypeError(
            f"block: {at} is a tuple; only lists arrange blocks (np.block allows no tuples): write [a, b], not (a, b)"
        )
    if isinstance(obj, list):
        if not obj:
            raise DimensionError(f"block: the list at {at} is empty; give every list at least one block")
        for i, o in enumerate(obj):
            _block_leaves(o, f"{at}[{i}]", depth + 1, out)
        return
    out.append((at, depth, obj))


def _block_leaf(leaf: Any, at: str, device: Any) -> Array:
    """A leaf as an Array: an Array as it is, a Python or NumPy scalar as NumPy's ``asarray`` of it (its dtype)."""
    if isinstance(leaf, ShardArray):
        return wrap(leaf)
    if isinstance(leaf, np.ndarray):
        raise DTypeError(
            f"block: {at} is a NumPy array of shape {leaf.shape}; NumPy arrays do not mix with an Array implicitly "
            f"(that would copy host data onto the mesh). Convert it with xp.asarray(array, device=x.device)"
        )
    if not isinstance(leaf, (numbers.Number, np.generic)):
        raise DTypeError(f"block: {at} is a {type(leaf).__name__}; blocks are Arrays or scalars")
    return _xp().asarray(np.asarray(leaf), device=device)


def _block_build(obj: Any, level: int, depth: int, ndim: int, done: dict[int, Array]) -> Array:
    if isinstance(obj, list):
        parts = [_block_build(o, level + 1, depth, ndim, done) for o in obj]
        return parts[0] if len(parts) == 1 else _xp().concat(parts, axis=level - depth)
    x = done[id(obj)]
    return _xp().reshape(x, (1,) * (ndim - x.ndim) + x.shape) if x.ndim < ndim else x


def block(arrays: Any) -> Array:
    """An array assembled from nested lists of blocks, as ``np.block``.

    The innermost lists are concatenated along the last axis, the lists holding them along the second-to-last,
    and so on; every block first gets leading size-1 axes up to the larger of the nesting depth and the largest
    block's ``ndim``. All lists must nest equally deep (else ``DimensionError``), tuples are refused
    (``DTypeError``, as NumPy's ``TypeError``), and scalars are NumPy's ``asarray`` of them (their own dtype:
    ``1.0`` is float64). Dtypes promote as ``concat``'s (NumPy 2). Collectives: ``concat``'s (an ``alltoallv``
    of the smaller operands along a split axis), nothing gathered. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.ones((2, 2))
        ...     xp.block([[a, xp.zeros((2, 1))], [xp.zeros((1, 2)), xp.ones((1, 1))]]).numpy()
        array([[1., 1., 0.],
               [1., 1., 0.],
               [0., 0., 1.]])
    """
    leaves: list[tuple[str, int, Any]] = []
    _block_leaves(arrays, "arrays", 0, leaves)
    depths = {d for _, d, _ in leaves}
    if len(depths) > 1:
        head = leaves[0]
        odd = next(leaf for leaf in leaves if leaf[1] != head[1])
        raise DimensionError(
            f"block: lists nest to different depths: {head[0]} has depth {head[1]} but {odd[0]} has depth "
            f"{odd[1]}; nest every block equally deep"
        )
    (depth,) = depths
    first = next((leaf for _, _, leaf in leaves if isinstance(leaf, ShardArray)), None)
    if first is None:
        raise DTypeError("block: no block is an Array; give at least one (np.block of scalars is NumPy's own)")
    done = {id(leaf): _block_leaf(leaf, at, wrap(first).device) for at, _, leaf in leaves}
    ndim = max(depth, *(x.ndim for x in done.values()))
    out = _block_build(arrays, 0, depth, ndim, done)
    return _xp().asarray(out, copy=True) if out is done[id(first)] else out  # (NumPy's block copies)


def _host_positions(obj: Any, n: int, what: str) -> np.ndarray:
    """``obj`` (an int, a slice, a sequence of ints or a boolean mask of length ``n``) as non-negative host ints."""
    if isinstance(obj, ShardArray):
        raise ArgumentError(
            f"{what}: obj must be host data (an int, slice, list or NumPy array); got an array "
            f"of the namespace: pass obj.numpy() if it is small"
        )
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n))
    arr = np.asarray(obj)
    if arr.dtype.kind == "b":
        if arr.shape != (n,):
            raise DimensionError(f"{what}: a boolean obj must have shape ({n},); got {arr.shape}")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise DTypeError(f"{what}: obj must be an int, a slice or a 1-D sequence of ints; got {obj!r:.80}")
    return arr.astype(np.int64).reshape(-1)


def delete(arr: Array, obj: Any, axis: int | None = None) -> Array:
    """``arr`` without the entries ``obj`` along ``axis`` (the flattened array when None), as ``np.delete``.

    ``obj`` is host data: an int, a slice, ints or a boolean mask. The kept runs are slices joined by ``concat``:
    along a split axis ``alltoallv`` of at most a block each. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.delete(xp.asarray([[1, 2, 3], [4, 5, 6]]), [0, 2], axis=1).numpy()
        array([[2],
               [5]])
    """
    arr = _check(arr, "delete")
    if axis is None:
        arr, k = _flat(arr), 0
    else:
        k = _axis(arr, axis, "delete")
    n = arr.shape[k]
    pos = _host_positions(obj, n, "delete")
    if pos.size and (pos.min() < -n or pos.max() >= n):
        bad = int(pos.min()) if pos.min() < -n else int(pos.max())
        raise OutOfBoundsError(f"delete: index {bad} is out of bounds for axis {k} with size {n}")
    keep = np.ones(n, dtype=bool)
    keep[pos % n if n else pos] = False
    return _join([_along(arr, k, a, b) for a, b in _runs(keep)], arr, k)


def _insert_values(arr: Array, values: Any, k: int, zero_d: bool, count: int | None) -> Array:
    """``values`` in ``arr``'s dtype, shaped as NumPy's ``insert`` places them along axis ``k``: ``count`` of them
    (None: as many as ``values`` has along ``k`` once given ``arr``'s dims, NumPy's one position), their first
    axis moved to ``k`` for a 0-d ``obj`` (``zero_d``)."""
    xp = _xp()
    v = values if isinstance(values, ShardArray) else xp.asarray(np.asarray(values), device=arr.device)
    if v.dtype != arr.dtype:
        v = xp.astype(v, arr.dtype)
    if v.ndim < arr.ndim:
        v = xp.reshape(v, (1,) * (arr.ndim - v.ndim) + v.shape)
    if zero_d:
        v = xp.moveaxis(v, 0, k)
    if count is None:
        count = v.shape[k]
    while v.ndim > arr.ndim and v.shape[0] == 1:  # (NumPy assigns them: leading 1s drop)
        v = xp.reshape(v, v.shape[1:])
    shape: list[Any] = list(arr.shape)
    shape[k] = count
    try:
        return xp.broadcast_to(v, tuple(shape))
    except ValueError:
        raise DimensionError(f"insert: values of shape {v.shape} cannot be broadcast to {tuple(shape)}") from None


def _new_positions(pos: np.ndarray, n: int) -> np.ndarray:
    """Where NumPy's ``insert`` puts each of several values in the result (length ``n + len(pos)``): negative
    positions count from the end once, the values at one position keep their order, and a position still out of
    range counts from the result's end (as NumPy's fancy index does); the positions must then be distinct."""
    new = pos.copy()
    new[new < 0] += n
    order = np.argsort(new, kind="stable")
    new[order] += np.arange(new.size)
    total = n + new.size
    if new.size and (new.min() < -total or new.max() >= total):
        bad = int(new.min()) if new.min() < -total else int(new.max())
        raise OutOfBoundsError(f"insert: index {bad} is out of bounds for the result's axis of size {total}")
    new %= max(total, 1)
    if np.unique(new).size != new.size:  # (NumPy: a ValueError, but for an axis of length 1, which it broadcasts)
        raise DimensionError(f"insert: the positions {pos.tolist()} put two values in one place")
    return new


def insert(arr: Array, obj: Any, values: Any, axis: int | None = None) -> Array:
    """``arr`` with ``values`` inserted before the positions ``obj`` along ``axis``, as ``np.insert``.

    ``obj`` is host data (an int, a slice or ints); ``values`` are cast to ``arr``'s dtype and broadcast as
    NumPy's (one position, even as ``[i]`` or a one-entry slice, takes as many values as they have along the
    axis). The pieces of ``arr`` between the positions and the values are joined by ``concat`` (along a split
    axis ``alltoallv`` of at most a block each). Differentiable in ``arr`` and ``values``.

    Deliberate differences: a boolean mask ``obj`` is refused (pass ``np.flatnonzero(mask)``); complex values into
    a real array are refused (``astype``'s rule) where NumPy drops their imaginary parts; positions that put two
    values in one place are refused (NumPy refuses them too, but for an axis of length 1, which it repeats).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.insert(xp.asarray([1.0, 2.0, 3.0]), 1, 9.0).numpy()
        array([1., 9., 2., 3.])
    """
    arr = _check(arr, "insert")
    if axis is None:
        arr, k = _flat(arr), 0
    else:
        k = _axis(arr, axis, "insert")
    n = arr.shape[k]
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "b":
        raise DTypeError("insert: obj must be ints or a slice, not a boolean mask; use np.flatnonzero(mask)")
    zero_d = not isinstance(obj, (slice, ShardArray)) and np.ndim(obj) == 0
    pos = np.asarray([obj]) if zero_d else _host_positions(obj, n, "insert")
    if zero_d and (pos.dtype.kind not in "iu"):
        raise DTypeError(f"insert: obj must be an int, a slice or a 1-D sequence of ints; got {obj!r:.80}")
    pos = pos.astype(np.int64)
    if pos.size == 1:  # (NumPy's one position: as many values as given along the axis)
        p = int(pos[0])
        if p < -n or p > n:
            raise OutOfBoundsError(f"insert: index {p} is out of bounds for axis {k} with size {n}")
        p = p + n if p < 0 else p
        vals = _insert_values(arr, values, k, zero_d, None)
        return _join([q for q in (_along(arr, k, 0, p), vals, _along(arr, k, p, None)) if q.shape[k]], arr, k)
    new = _new_positions(pos, n)
    vals = _insert_values(arr, values, k, False, pos.size)
    order = np.argsort(new)
    if not np.array_equal(order, np.arange(order.size)):
        vals = _xp().take(vals, _xp().asarray(order, device=arr.device), axis=k)
    before = new[order] - np.arange(new.size)  # (the entries of arr before each value, in the result's order)
    pieces, start, j = [], 0, 0
    while j < before.size:
        p, e = int(before[j]), int(np.searchsorted(before, before[j], side="right"))
        pieces += [_along(arr, k, start, p), _along(vals, k, j, e)]
        start, j = p, e
    pieces.append(_along(arr, k, start, None))
    return _join([q for q in pieces if q.shape[k]], arr, k)


def _end(v: Any, like: Array, what: str) -> Array | None:
    """``ediff1d``'s ``to_begin``/``to_end`` as a 1-D array of ``like``'s dtype (NumPy's same-kind check)."""
    if v is None:
        return None
    xp = _xp()
    a = v if isinstance(v, ShardArray) else xp.asarray(np.asarray(v), device=like.device)
    if not np.can_cast(np.dtype(a.dtype), np.dtype(like.dtype), casting="same_kind"):
        raise DTypeError(f"ediff1d: {what} ({a.dtype}) must be castable to the input's dtype {like.dtype}")
    return xp.astype(_flat(a), like.dtype)


def ediff1d(ary: Array, to_end: Any = None, to_begin: Any = None) -> Array:
    """Differences of consecutive entries of the flattened ``ary``, as ``np.ediff1d``.

    ``to_begin``/``to_end`` are prepended/appended (cast to ``ary``'s dtype). ``diff`` and ``concat``: along a
    split axis their ``alltoallv`` of at most a block; flattening an array of several dims is ``xp.reshape``'s
    (which may allgather blocks along a mesh axis). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.ediff1d(xp.asarray([1, 2, 4, 7]), to_begin=-9).numpy()
        array([-9,  1,  2,  3])
    """
    xp = _xp()
    ary = _flat(_check(ary, "ediff1d"))
    if ary.dtype == xp.bool:
        raise DTypeError("ediff1d: boolean input has no difference; cast it with xp.astype(a, xp.int8)")
    d = xp.diff(ary) if ary.shape[0] > 1 else _along(ary, 0, 0, 0)
    parts = [p for p in (_end(to_begin, ary, "to_begin"), d, _end(to_end, ary, "to_end")) if p is not None]
    return _join(parts, d, 0)


def _shape(new_shape: Any, what: str) -> tuple[int, ...]:
    shape = (new_shape,) if isinstance(new_shape, numbers.Integral) else tuple(new_shape)
    if not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in shape):
        raise ArgumentError(f"{what}: new_shape must be ints; got {new_shape!r}")
    if any(s < 0 for s in shape):
        raise ArgumentError(f"{what}: all elements of new_shape must be non-negative; got {new_shape!r}")
    return tuple(int(s) for s in shape)


def resize(a: Array, new_shape: int | Sequence[int]) -> Array:
    """``a`` flattened, repeated to fill ``new_shape`` and reshaped, as ``np.resize`` (zeros when empty).

    ``tile``, a slice and ``reshape`` (their ``alltoallv`` when split). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.resize(xp.asarray([1, 2, 3]), (2, 4)).numpy()
        array([[1, 2, 3, 1],
               [2, 3, 1, 2]])
    """
    xp = _xp()
    a = _check(a, "resize")
    shape = _shape(new_shape, "resize")
    size = math.prod(shape)
    if size == 0 or a.size == 0:
        return xp.zeros(shape, dtype=a.dtype, device=a.device)
    flat = _flat(a)
    reps = -(-size // flat.shape[0])
    if reps > 1:
        flat = xp.tile(flat, (reps,))
    if flat.shape[0] != size:
        flat = flat[:size]
    return xp.reshape(flat, shape)


def trim_zeros(filt: Array, trim: str = "fb", axis: Any = None) -> Array:
    """``filt`` without its leading (``"f"``) and/or trailing (``"b"``) zeros, as ``np.trim_zeros``.

    The first and last nonzero positions of each axis asked are read on the host (two ints each: the result's
    shape depends on them), by ``argmax`` of the nonzero mask (an allreduce of a scalar over a split axis); then a
    slice. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.trim_zeros(xp.asarray([0, 0, 1, 2, 0, 3, 0])).numpy()
        array([1, 2, 0, 3])
    """
    xp = _xp()
    filt = _check(filt, "trim_zeros")
    if not isinstance(trim, str) or trim.lower() not in ("fb", "bf", "f", "b"):
        raise ArgumentError(f"trim_zeros: trim must be one of 'fb', 'bf', 'f' or 'b' (any case); got {trim!r}")
    t = trim.lower()
    if filt.ndim == 0 and axis is None:  # (NumPy 2.2+: nothing to trim, the array as it is)
        return filt[...]
    axes = list(range(filt.ndim)) if axis is None else [_axis(filt, a, "trim_zeros") for a in np.atleast_1d(axis)]
    if len(set(axes)) != len(axes):
        raise DimensionError(f"trim_zeros: repeated axis in axis={axis!r}")
    nz = filt != 0
    key = [slice(None)] * filt.ndim
    for k in axes:
        n = filt.shape[k]
        others = tuple(i for i in range(filt.ndim) if i != k)
        line = xp.astype(xp.any(nz, axis=others) if others else nz, xp.int8)
        if n == 0 or not bool(xp.any(line)):
            key = [slice(0, 0)] * filt.ndim if axis is None else key
            key[k] = slice(0, 0)
            continue
        start = int(xp.argmax(line)) if "f" in t else 0
        stop = n - int(xp.argmax(xp.flip(line))) if "b" in t else n
        key[k] = slice(start, stop)
    return filt[tuple(key)]


def vander(x: Array, N: int | None = None, increasing: bool = False) -> Array:
    """The Vandermonde matrix of the 1-D ``x``: columns ``x**(N-1), ..., x**0`` (reversed if ``increasing``).

    As ``np.vander``: ``N`` defaults to ``len(x)``, the dtype is ``x``'s promoted with int (float32 gives
    float64), powers by a running product (``cumulative_prod`` along the unsplit new axis, no collective).
    Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.vander(xp.asarray([1, 2, 3]), 3).numpy()
        array([[1, 1, 1],
               [4, 2, 1],
               [9, 3, 1]])
    """
    xp = _xp()
    x = _check(x, "vander")
    if x.ndim != 1:
        raise DimensionError(f"vander: x must be a one-dimensional array; got shape {x.shape}")
    n = x.shape[0] if N is None else N
    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 0:
        raise ArgumentError(f"vander: N must be a non-negative int; got {N!r}")
    dt = np.promote_types(np.dtype(x.dtype), np.dtype(int))
    x = xp.astype(x, dt) if np.dtype(x.dtype) != dt else x
    if n == 0:
        return xp.zeros((x.shape[0], 0), dtype=dt, device=x.device)
    col = xp.expand_dims(x, axis=1)
    v = xp.cumulative_prod(xp.broadcast_to(col, (x.shape[0], int(n) - 1)), axis=1, include_initial=True)
    return v if increasing else xp.flip(v, axis=1)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Array:
    """Entries of the first choice whose condition holds, else ``default``, as ``np.select``.

    Conditions are boolean arrays; choices and ``default`` broadcast with them and promote as NumPy's. A ``where``
    per pair from the last (elementwise, no collective beyond aligning layouts). Differentiable in the choices.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     x = xp.arange(6)
        ...     xp.select([x < 2, x > 3], [x, x**2], 42).numpy()
        array([ 0,  1, 42, 42, 16, 25])
    """
    xp = _xp()
    if len(condlist) != len(choicelist):
        raise ArgumentError(
            f"select: condlist ({len(condlist)}) and choicelist ({len(choicelist)}) must be of the same length"
        )
    if not condlist:
        raise ArgumentError("select: condlist needs at least one condition (and choicelist one choice)")
    arrays: list[Any] = [c for c in (*condlist, *choicelist, default) if isinstance(c, ShardArray)]
    if not arrays:
        raise DTypeError("select: expects arrays of the namespace among the conditions or choices")
    dev = arrays[0].device

    def arr(v: Any) -> Any:
        return v if isinstance(v, ShardArray) else xp.asarray(np.asarray(v), device=dev)

    conds = [arr(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != xp.bool:
            raise DTypeError(f"select: invalid entry {i} in condlist: should be boolean ndarray; got {c.dtype}")
    weak = [c if type(c) in (int, float, complex) else arr(c) for c in (*choicelist, default)]  # (NEP 50, as NumPy)
    dt = np.result_type(*[c if type(c) in (int, float, complex) else np.dtype(c.dtype) for c in weak])
    choices = [xp.asarray(c, dtype=dt, device=dev) if type(c) in (int, float, complex) else c for c in weak]
    choices = [c if np.dtype(c.dtype) == dt else xp.astype(c, dt) for c in choices]
    shape = np.broadcast_shapes(*[c.shape for c in (*conds, *choices)])
    out = xp.broadcast_to(choices[-1], shape)
    for c, v in zip(reversed(conds), reversed(choices[:-1])):
        out = xp.where(c, v, out)
    return xp.broadcast_to(out, shape)


def unwrap(p: Array, discont: float | None = None, axis: int = -1, *, period: float = 2 * np.pi) -> Array:
    """``p`` with jumps above ``max(discont, period/2)`` along ``axis`` replaced by their ``period`` complement.

    NumPy's algorithm (``np.unwrap``): the differences, their remainder modulo ``period``, and the running sum
    of the corrections (``diff``, ``remainder``, ``where``, ``cumulative_sum`` and ``concat``: along a split axis
    their ``alltoallv`` and the scan's exchange of one row per device). Differentiable (the corrections are
    piecewise constant).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.unwrap(xp.asarray([0.0, 1.0, 2.0, 3.0, 4.0]), period=4.0).numpy()
        array([0., 1., 2., 3., 4.])
    """
    xp = _xp()
    p = _check(p, "unwrap")
    k = _axis(p, axis, "unwrap")
    if discont is None:
        discont = period / 2
    dt = np.result_type(np.dtype(p.dtype), period)
    if dt.kind in "iub":
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    if p.shape[k] < 2:
        return xp.astype(p, dt, copy=True)
    dd = xp.diff(p, axis=k)
    ddmod = xp.remainder(dd + high, period) - high
    if ambiguous:
        ddmod = xp.where((ddmod == -high) & (dd > 0), xp.asarray(high, dtype=ddmod.dtype, device=p.device), ddmod)
    fix = xp.where(xp.abs(dd) < discont, xp.zeros_like(dd), ddmod - dd)
    up = xp.astype(p, dt) if np.dtype(p.dtype) != dt else p
    rest = _along(up, k, 1, None) + xp.astype(xp.cumulative_sum(fix, axis=k), dt)
    return xp.concat([_along(up, k, 0, 1), xp.astype(rest, dt)], axis=k)


def trapezoid(y: Array, x: Any = None, dx: float = 1.0, axis: int = -1) -> Array:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, as ``np.trapezoid``.

    Sample points ``x`` (1-D of the axis' length, or ``y``'s shape) or a spacing ``dx``; integers give float64.
    Slices, products and a ``sum`` (along a split axis the slices' ``alltoallv`` and an allreduce of the result).
    Differentiable in ``y`` and ``x``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     float(xp.trapezoid(xp.asarray([1.0, 2.0, 3.0]), dx=0.5))
        2.0
    """
    xp = _xp()
    y = _check(y, "trapezoid")
    k = _axis(y, axis, "trapezoid")
    if x is None:
        d: Any = dx
    else:
        xa = x if isinstance(x, ShardArray) else xp.asarray(np.asarray(x), device=y.device)
        if xa.ndim == 1:
            if xa.shape[0] != y.shape[k]:
                raise DimensionError(f"trapezoid: x has {xa.shape[0]} points; axis {k} of y has {y.shape[k]}")
            d = xp.diff(xa) if xa.shape[0] > 1 else _along(xa, 0, 0, 0)
            d = xp.reshape(d, tuple(d.shape[0] if i == k else 1 for i in range(y.ndim)))
        else:
            if xa.shape[k if xa.ndim == y.ndim else -1] != y.shape[k]:
                raise DimensionError(f"trapezoid: x of shape {xa.shape} does not match y of shape {y.shape}")
            d = xp.diff(xa, axis=k if xa.ndim == y.ndim else -1)
    # (NumPy's formula for every length: fewer than 2 points sum no terms, in the dtype the terms would have)
    return xp.sum(d * (_along(y, k, 1, None) + _along(y, k, None, -1)) / 2.0, axis=k)


def _keys(keys: Any) -> list[Any]:
    if isinstance(keys, ShardArray):
        if keys.ndim == 0:
            raise DimensionError("lexsort: keys must be at least 1-D; got a 0-d array")
        if keys.shape[0] == 0:  # (NumPy: a TypeError, "need sequence of keys with len > 0")
            raise DTypeError(f"lexsort: need at least one key; got an array of shape {keys.shape} (no rows)")
        return [keys[i] for i in range(keys.shape[0])]
    if not isinstance(keys, (list, tuple)) or not keys or not all(isinstance(k, ShardArray) for k in keys):
        raise DTypeError("lexsort: keys must be a non-empty sequence of arrays of the namespace (or a 2-D array)")
    shapes = {k.shape for k in keys}
    if len(shapes) != 1:
        raise DimensionError(f"lexsort: all keys need the same shape; got {sorted(shapes)}")
    return list(keys)


def lexsort(keys: Any, axis: int = -1) -> Array:
    """Indices (int64) that sort by the last key, then the one before, ..., as ``np.lexsort``.

    Successive stable ``argsort``s from the first key (least significant) to the last, each of the key reordered
    by the order so far (``take_along_axis``): the distributed sort's collectives per key. Not differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.lexsort((xp.asarray([3, 1, 2, 0]), xp.asarray([1, 0, 1, 0]))).numpy()
        array([3, 1, 2, 0])
    """
    xp = _xp()
    ks = _keys(keys)
    k = _axis(ks[0], axis, "lexsort")
    order = xp.argsort(ks[0], axis=k, stable=True)
    for key in ks[1:]:
        step = xp.argsort(xp.take_along_axis(key, order, axis=k), axis=k, stable=True)
        order = xp.take_along_axis(order, step, axis=k)
    return xp.astype(order, xp.int64) if order.dtype != xp.int64 else order


def _kth(a: Array, kth: Any, axis: Any, what: str) -> tuple[Array, int]:
    """``a`` (flattened when ``axis`` is None) and its axis, once every ``kth`` lies on it."""
    a = _check(a, what)
    if axis is None:
        a, axis = _flat(a), 0
    if a.ndim == 0:
        raise DimensionError(f"{what}: needs at least one dimension; got a 0-d array")
    k = _axis(a, axis, what)
    ks = np.asarray(kth)
    if ks.dtype.kind not in "iu":
        raise DTypeError(f"{what}: kth must be an int or a sequence of ints; got {kth!r:.80}")
    n = a.shape[k]
    if a.size and ks.size and (ks.min() < -n or ks.max() >= n):  # (NumPy checks no kth of an empty array)
        raise OutOfBoundsError(f"{what}: kth {kth!r} out of bounds for axis {k} of size {n}")
    return a, k


def partition(a: Array, kth: int | Sequence[int], axis: int | None = -1) -> Array:
    """``a`` partitioned around its ``kth`` entries along ``axis``, as ``np.partition``.

    Implemented by a full stable ``sort`` (a sample sort over a split axis), which is a valid partition for every
    ``kth``: entry ``kth`` is in its sorted place, smaller ones before and larger ones after (NumPy's order within
    each side is unspecified). Differentiable.

    Deliberate difference: complex values are refused (``DTypeError``), as by the namespace's ``sort``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.partition(xp.asarray([3.0, 4.0, 2.0, 1.0]), 2).numpy()
        array([1., 2., 3., 4.])
    """
    a, k = _kth(a, kth, axis, "partition")
    return _xp().sort(a, axis=k)


def argpartition(a: Array, kth: int | Sequence[int], axis: int | None = -1) -> Array:
    """Indices (int64) that partition ``a`` around its ``kth`` entries along ``axis``, as ``np.argpartition``.

    Implemented by a full stable ``argsort`` (a valid partition for every ``kth``; see ``partition``); a 0-d
    ``a`` gives ``[0]`` as NumPy's. Not differentiable.

    Deliberate difference: complex values are refused (``DTypeError``), as by the namespace's ``argsort``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.argpartition(xp.asarray([3.0, 4.0, 2.0, 1.0]), 2).numpy()
        array([3, 2, 0, 1])
    """
    a = _check(a, "argpartition")
    a, k = _kth(a, kth, None if a.ndim == 0 else axis, "argpartition")  # (NumPy: a 0-d array as one entry)
    return _xp().argsort(a, axis=k, stable=True)


__all__ = [
    "argpartition",
    "block",
    "delete",
    "ediff1d",
    "insert",
    "lexsort",
    "partition",
    "resize",
    "rot90",
    "select",
    "trapezoid",
    "trim_zeros",
    "unwrap",
    "vander",
]
