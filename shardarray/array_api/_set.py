"""The set functions of the array API standard: ``unique_all``, ``unique_counts``, ``unique_inverse``,
``unique_values``, over the named ``sa.unique_*`` (``ops/sorting/unique.py``).

Collectives (over the mesh axes splitting ``x``): an allgather of samples, one
alltoallv of the local uniques, an allgather of one int per device, one
alltoallv placing the result (replicated up to ``REPLICATE_MAX`` = 65536
unique values, else split), and for the inverse one more alltoallv of one
int64 per local unique. The unique values' dim is the 1-D array's ``dim0``;
``inverse_indices`` has ``x``'s shape and layout.

NumPy's set routines of sorted 1-D results (``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d``; what
``np.intersect1d(x, ...)`` etc. dispatch to) compose these with ``isin`` (a sort of the test set and a
search), boolean-mask selection and ``sort``: no gather of either operand.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import DTypeError
from ..ops.manipulation.structure import rename
from ..ops.sorting import unique as _u
from ._align import axis_dim
from ._array import Array, wrap
from ._creation import asarray
from ._dtypes import astype
from ._elementwise import logical_not
from ._indexing import take
from ._manipulation import concat, reshape
from ._numpy_counts import isin
from ._sorting import argsort, sort

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


def _operands(ar1: Any, ar2: Any, what: str) -> tuple[Array, Array]:
    """Both operands flattened, as arrays on the mesh of the one that is an array (host data is made one)."""
    mesh = next((a.mesh for a in (ar1, ar2) if isinstance(a, ShardArray)), None)
    if mesh is None:
        raise DTypeError(f"{what}: expects an array of the namespace; got {type(ar1).__name__}, {type(ar2).__name__}")
    a, b = (v if isinstance(v, ShardArray) else asarray(v, device=mesh) for v in (ar1, ar2))
    return _flat(a), _flat(b)


def _pair(ar1: Any, ar2: Any, what: str) -> tuple[Array, Array]:
    """``_operands`` in their common dtype (NumPy's promotion, as ``np.concatenate``'s)."""
    a, b = _operands(ar1, ar2, what)
    if a.dtype != b.dtype:
        dt = np.result_type(a.dtype, b.dtype)
        return wrap(astype(a, dt, copy=False)), wrap(astype(b, dt, copy=False))
    return a, b


def _flat(x: ShardArray) -> Array:
    return wrap(x) if x.ndim == 1 else reshape(x, (-1,))


def _np_unique(x: Array, index: bool = False) -> Any:
    """``np.unique(x)`` of a 1-D ``x``: sorted distinct values (all NaNs one value), and first indices if asked."""
    got = _u.unique(x, index, equal_nan=True)
    return (_pos(got[0]), _pos(got[1])) if index else _pos(got)


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False) -> Any:
    """The sorted values in both ``ar1`` and ``ar2`` (flattened), as ``np.intersect1d`` (a NumPy extra).

    Each operand's distinct values (``np.unique``'s, skipped when ``assume_unique``: then a sort), those of the
    first that ``isin`` the second. NaN is in no intersection (NumPy's ``==``); of ``-0.0`` and ``0.0`` the first
    operand's value is kept. ``return_indices`` adds the int64 indices of the values' first occurrences in each
    flattened operand. Both operands are cast to their common dtype. With ``assume_unique`` and repeated values
    the result is unspecified, as NumPy's.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     [v.numpy() for v in intersect1d(xp.asarray([3, 1, 2, 1]), xp.asarray([1, 3, 5]), return_indices=True)]
        [array([1, 3]), array([1, 0]), array([0, 1])]
    """
    a, b = _pair(ar1, ar2, "intersect1d")
    if assume_unique:
        ia, ib = argsort(a), argsort(b)
        ua, ub = take(a, ia, axis=0), take(b, ib, axis=0)
    else:
        (ua, ia), (ub, ib) = _np_unique(a, True), _np_unique(b, True)
    keep = isin(ua, ub, assume_unique=True)
    if not return_indices:
        return ua[keep]
    return ua[keep], ia[keep], ib[isin(ub, ua, assume_unique=True)]


def union1d(ar1: Any, ar2: Any) -> Array:
    """The sorted distinct values of ``ar1`` and ``ar2`` together, as ``np.union1d`` (a NumPy extra): ``np.unique``
    of both flattened (all NaNs one value), in their common dtype.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     union1d(xp.asarray([3, 1]), xp.asarray([[1, 5]])).numpy()
        array([1, 3, 5])
    """
    a, b = _pair(ar1, ar2, "union1d")
    return _np_unique(concat([a, b]))


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Array:
    """The values of ``ar1`` not in ``ar2``, as ``np.setdiff1d`` (a NumPy extra): ``ar1``'s sorted distinct values
    (NaN kept: it equals nothing), or with ``assume_unique`` the flattened ``ar1`` in its own order; ``ar1``'s dtype.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     setdiff1d(xp.asarray([4, 1, 2, 1]), xp.asarray([2, 5])).numpy()
        array([1, 4])
    """
    a, b = _operands(ar1, ar2, "setdiff1d")
    first = a if assume_unique else _np_unique(a)
    return first[isin(first, b, assume_unique=True, invert=True)]


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Array:
    """The sorted values in exactly one of ``ar1`` and ``ar2``, as ``np.setxor1d`` (a NumPy extra): the distinct
    values of each (skipped when ``assume_unique``) not in the other, sorted together; NaN (in no other set) is
    kept from each operand. Common dtype of both.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     setxor1d(xp.asarray([1, 2, 3]), xp.asarray([2, 4])).numpy()
        array([1, 3, 4])
    """
    a, b = _pair(ar1, ar2, "setxor1d")
    if not assume_unique:
        a, b = _np_unique(a), _np_unique(b)
    only_a = a[logical_not(isin(a, b, assume_unique=True))]
    only_b = b[logical_not(isin(b, a, assume_unique=True))]
    return sort(concat([only_a, only_b]))


__all__ = [
    "intersect1d",
    "setdiff1d",
    "setxor1d",
    "union1d",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]
