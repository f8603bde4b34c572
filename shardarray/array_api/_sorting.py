"""``sort``, ``argsort`` and ``searchsorted`` of the array API standard, positionally, over the named ops.

``axis`` picks the dim; the collectives are those of ``sa.sort``/``sa.argsort``
(none on an unsplit axis; a transposition of two alltoalls when another axis
can take the split; else a parallel sample sort: an allgather of samples,
two alltoallv and one allgather of one int per device) and of
``sa.searchsorted`` (one allreduce of one int64 per value). Results keep the
input's layout. Complex values sort and are searched in NumPy's order (the
standard leaves it unspecified): lexicographic, real part then imaginary part,
``R+Rj < R+nanj < nan+Rj < nan+nanj``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import DimensionError, DTypeError
from ..ops.indexing.take import take
from ..ops.manipulation.structure import rename
from ..ops.sorting import sort as _sort
from ..ops.sorting.searchsorted import searchsorted as _searchsorted
from ._align import at_least_1d, axis_dim, fresh
from ._array import Array, wrap
from ._creation import asarray


def sort(x: ShardArray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """``x`` sorted along ``axis`` (NaN last; complex values in NumPy's lexicographic order; ``descending`` keeps
    ties in order, NaN first); see ``sa.sort``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.sort(xp.asarray([3.0, 1.0, 2.0]), descending=True).numpy()
        array([3., 2., 1.])
    """
    x = at_least_1d(x, "sort")
    return wrap(_sort.sort(x, axis_dim(x, axis, "sort"), descending=descending, stable=stable))


def argsort(x: ShardArray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """Indices (int64) that sort ``x`` along ``axis``, stable; see ``sa.argsort``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.argsort(xp.asarray([[3.0, 1.0], [0.0, 2.0]]), axis=0).numpy()
        array([[1, 0],
               [0, 1]])
    """
    x = at_least_1d(x, "argsort")
    return wrap(_sort.argsort(x, axis_dim(x, axis, "argsort"), descending=descending, stable=stable))


def searchsorted(x1: ShardArray, x2: Any, /, *, side: str = "left", sorter: ShardArray | None = None) -> Array:
    """Insertion indices (int64) of ``x2`` in the 1-D ``x1`` (sorted, or sorted by ``sorter``); see ``sa.searchsorted``.

    ``sorter`` (int indices that sort ``x1``) costs one ``sa.take`` of ``x1``
    first. ``x2`` may be a Python scalar (made an array on ``x1``'s mesh), compared by its value as NumPy
    compares it: a Python integer outside every int dtype NumPy has, or outside an integer ``x1``'s range
    (``2**64 - 2`` in a uint64 ``x1``, ``300`` in an int8 one), is placed exactly (past every element, or before).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.searchsorted(xp.asarray([1.0, 2.0, 4.0]), xp.asarray([2.0, 5.0]), side="right").numpy()
        array([2, 3])
    """
    x1 = at_least_1d(x1, "searchsorted")
    if x1.ndim != 1:
        raise DimensionError(f"searchsorted: x1 must be 1-D; got shape {x1.shape}. Search each row separately")
    if not isinstance(x2, ShardArray):
        x2, side = _scalar_values(x1, x2, side)
    if sorter is not None:
        sorter = at_least_1d(sorter, "searchsorted (sorter)")
        if sorter.dtype.kind not in "iu" or sorter.shape != x1.shape:
            raise DTypeError(
                f"searchsorted: sorter must be integer indices of x1's shape {x1.shape}; got "
                f"{sorter.dtype} of shape {sorter.shape}. Pass xp.argsort(x1)"
            )
        name = fresh(x1.dims, 1, "sorter")[0]
        x1 = rename(take(x1, rename(sorter, {sorter.dims[0]: name}), x1.dims[0]), {name: x1.dims[0]})
    return wrap(_searchsorted(x1, x2, side=side))


def _scalar_values(x1: ShardArray, x2: Any, side: str) -> tuple[ShardArray, str]:
    """``x2`` (not an array) as an array on ``x1``'s mesh, and the side to search it on: a Python integer in an
    integer or bool ``x1`` in ``x1``'s dtype, clipped to its range, an integer above the range searched on the
    right of the greatest value (past every element), one below on the left of the least (before every one);
    in a float or complex ``x1`` an integer beyond int64 as a float64 (every dtype's value then compares exactly
    enough: NumPy's own promotion goes through float64 there too)."""
    if not isinstance(x2, int) or isinstance(x2, builtins.bool) or side not in ("left", "right"):
        return asarray(x2, device=x1.mesh), side
    kind = x1.dtype.kind
    if kind in "iub":
        lo, hi = (0, 1) if kind == "b" else (int(np.iinfo(x1.dtype).min), int(np.iinfo(x1.dtype).max))
        if x2 > hi:
            x2, side = hi, "right"
        elif x2 < lo:
            x2, side = lo, "left"
        return asarray(x2, dtype=x1.dtype, device=x1.mesh), side
    info = np.iinfo(np.int64)
    return asarray(x2 if info.min <= x2 <= info.max else float(x2), device=x1.mesh), side


__all__ = ["argsort", "searchsorted", "sort"]
