"""NumPy's shape functions composed from the namespace's: metadata, axes, joining, splitting, flips, diagonals.

Registered in ``positional_compose.COMPOSED``. The choices for distributed arrays:

* ``np.shape``, ``np.ndim`` and ``np.size`` read metadata only;
* ``np.squeeze``, ``np.transpose``, ``np.swapaxes``, ``np.atleast_{1,2,3}d``, ``np.fliplr`` and ``np.flipud``
  are the namespace's reshapes, permutations and flips (new arrays where NumPy's are views);
* NumPy scalars and 0-d arrays among the operands keep their dtype (NEP 50: ``np.hstack((x, np.int16(1)))`` is
  int16 for an int16 ``x``);
* ``np.split`` counts negative indices from the end and takes a count of sections as any real (``int()`` of
  it), as NumPy does;
* ``np.trace`` and ``np.diagonal`` move ``axis1``/``axis2`` to the end (``to_end``) for ``xp.linalg``'s;
  ``np.cross`` of 2-vectors (NumPy's z component) has no counterpart: NotImplemented, NumPy's TypeError.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> np.shape(a), [p.shape for p in np.split(a, [1, -1], axis=1)], np.asarray(np.hstack((a, a)))[1]
    ((2, 3), [(2, 1), (2, 1), (2, 1)], array([4., 5., 6., 4., 5., 6.]))
"""

from __future__ import annotations

import itertools
import numbers
import operator
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DimensionError, DTypeError
from .positional_args import axes_of, cast_to, write_out
from .positional_compose import COMPOSED, _arrays, _no_kwargs, composed

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
