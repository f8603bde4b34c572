"""NumPy's selections composed from the namespace's: ``np.where``, ``np.take``, ``np.flatnonzero``, ``put_along_axis``.

Registered in ``positional_compose.COMPOSED``. The choices for distributed arrays:

* ``np.where`` takes any condition (a non-bool one is ``condition != 0``); its Python and NumPy scalars follow
  NEP 50 (``scalar_operand``);
* ``np.take`` takes indices of any shape (they replace the axis, NumPy's ``x.shape[:axis] + indices.shape +
  x.shape[axis + 1:]``), host integer indices included (an index is host data, as ``x[np.array([0, 2])]``);
* ``np.put_along_axis`` writes in place through ``x[idx] = values`` (NumPy's open grid of the other axes'
  positions with the indices; the last of repeated indices wins) and returns None, as NumPy's.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[3, 0, 2], [0, 5, 0]])
    >>> np.asarray(np.take(a, [[2, 0]], axis=1)).tolist(), np.asarray(np.flatnonzero(a)).tolist()
    ([[[2, 3]], [[0, 0]]], [0, 2, 4])
"""

from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.tape import refuse_write
from ..errors import ArgumentError, DimensionError, DTypeError, IndexTypeError
from ..ops.indexing.writes import WRITES, swap_in
from .common import mixing_error
from .positional_args import axes_of, host_value, write_out
from .positional_compose import _array, _no_kwargs, _ref, composed
from .positional_ufuncs import scalar_operand


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
