"""The set functions of the array API standard: ``unique_all``, ``unique_counts``, ``unique_inverse``,
``unique_values``, over the named ``sa.unique_*`` (``ops/sorting/unique.py``).

Collectives (over the mesh axes splitting ``x``): an allgather of samples, one
alltoallv of the local uniques, an allgather of one int per device, one
alltoallv placing the result (replicated up to ``REPLICATE_MAX`` = 65536
unique values, else split), and for the inverse one more alltoallv of one
int64 per local unique. The unique values' dim is the 1-D array's ``dim0``;
``inverse_indices`` has ``x``'s shape and layout.
"""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..errors import DTypeError
from ..ops.manipulation.structure import rename
from ..ops.sorting import unique as _u
from ._align import axis_dim
from ._array import Array, wrap

UniqueAllResult = _u.UniqueAllResult
UniqueCountsResult = _u.UniqueCountsResult
UniqueInverseResult = _u.UniqueInverseResult


def _check(x: Any, what: str) -> ShardArray:
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what}: expects an array; got {type(x).__name__}. Make one with xp.asarray(...)")
    return x


def _pos(a: ShardArray) -> Array:
    return wrap(rename(a, {_u.DIM: "dim0"}))


def unique_values(x: ShardArray, /) -> Array:
    """The sorted distinct values of ``x`` (flattened; each NaN distinct).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.unique_values(xp.asarray([[2, 1], [2, 7]])).numpy()
        array([1, 2, 7])
    """
    return _pos(_u.unique_values(_check(x, "unique_values")))


def unique_counts(x: ShardArray, /) -> UniqueCountsResult:
    """``(values, counts)`` of the distinct values of ``x``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     [a.numpy() for a in xp.unique_counts(xp.asarray([2, 1, 2]))]
        [array([1, 2]), array([1, 2])]
    """
    r = _u.unique_counts(_check(x, "unique_counts"))
    return UniqueCountsResult(_pos(r.values), _pos(r.counts))


def unique_inverse(x: ShardArray, /) -> UniqueInverseResult:
    """``(values, inverse_indices)``; ``inverse_indices`` has ``x``'s shape.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     [a.numpy() for a in xp.unique_inverse(xp.asarray([2, 1, 2]))]
        [array([1, 2]), array([1, 0, 1])]
    """
    r = _u.unique_inverse(_check(x, "unique_inverse"))
    return UniqueInverseResult(_pos(r.values), wrap(r.inverse_indices))


def unique_all(x: ShardArray, /) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``; ``indices``: first occurrences in the flattened ``x``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     [a.numpy() for a in xp.unique_all(xp.asarray([2, 1, 2]))]
        [array([1, 2]), array([1, 0]), array([1, 0, 1]), array([1, 2])]
    """
    r = _u.unique_all(_check(x, "unique_all"))
    return UniqueAllResult(_pos(r.values), _pos(r.indices), wrap(r.inverse_indices), _pos(r.counts))


def unique_along_axis(
    x: ShardArray,
    axis: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
) -> Any:
    """``np.unique(x, axis=axis, ...)``: the distinct slices of ``x`` along ``axis``, sorted lexicographically.

    NumPy's semantics (a slice holding a NaN is distinct from every other, whatever ``equal_nan``; -0.0 equals
    0.0); ``index``, ``inverse`` (1-D, ``x.shape[axis]`` long) and ``counts`` as asked, in NumPy's order of the
    returns. No gather: a relayout putting whole slices on each device, a sample sort of the slices, small
    allgathers and one alltoallv placing the result (see ``sa.unique`` and ``ops/sorting/unique_axis.py``).
    What ``np.unique(x, axis=k)`` dispatches to.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1, 2], [0, 5], [1, 2]])
        ...     v, c = unique_along_axis(a, 0, return_counts=True)
        >>> v.numpy(), c.numpy()
        (array([[0, 5],
               [1, 2]]), array([1, 2]))
    """
    x = _check(x, "unique")
    dim = axis_dim(x, axis, "unique") if x.ndim else axis
    got = _u.unique(x, return_index, return_inverse, return_counts, axis=dim)
    if not isinstance(got, tuple):
        return _positional(got)
    return tuple(_positional(a) for a in got)


def _positional(a: ShardArray) -> Array:
    """A result of ``unique`` positionally: a 1-D one along ``dim0``, others as they are (``x``'s dims)."""
    return wrap(rename(a, {a.dims[0]: "dim0"}) if a.ndim == 1 else a)


__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]
