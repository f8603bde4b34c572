"""Positional semantics on named arrays: axes to dims, right-aligned broadcasting by renaming.

The array API is positional: axis ``i`` of an array is its ``i``-th dim, and
binary operations broadcast right-aligned as NumPy does. shardarray's ops are
named: dims match by name. This module bridges the two without moving data:
operands are *renamed* so that dims at the same right-aligned position share a
name, size-1 dims that broadcast are dropped, the named op runs, and its
result is put back in positional order (a local transpose at most).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from ..array import ShardArray
from ..core.relayout import relayout
from ..errors import ArgumentError, DimensionError, DTypeError, OutOfBoundsError
from ..ops.indexing.basic import slice_dim
from ..ops.manipulation import flip as _flip
from ..ops.manipulation.dims import squeeze
from ..ops.manipulation.reshape import merge_dims
from ..ops.manipulation.structure import rename, transpose


def at_least_1d(x: Any, what: str) -> ShardArray:
    """``x`` itself when it is an array with at least one dimension; else a typed error saying what to do."""
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what}: expects an array; got {type(x).__name__}. Make one with xp.asarray(...)")
    if x.ndim == 0:
        raise DimensionError(
            f"{what}: needs an array of at least one dimension; got a 0-d array ({x.dtype}). "
            f"Reshape it first: xp.reshape(x, (1,))"
        )
    return x


def axis_dim(x: ShardArray, axis: Any, what: str) -> str:
    """The dim at position ``axis`` (negative from the end), with NumPy's errors: a non-integer axis (``1.0``) is
    a ``DTypeError`` (NumPy's TypeError), an out-of-range one an ``OutOfBoundsError``."""
    try:
        i = operator.index(axis)
    except TypeError:
        raise DTypeError(
            f"{what}: axis must be an integer (NumPy's TypeError); got {axis!r} of type {type(axis).__name__}. "
            f"Pass int(axis)"
        ) from None
    if not -x.ndim <= i < x.ndim:
        raise OutOfBoundsError(
            f"{what}: axis {i} is out of bounds for array of dimension {x.ndim} (shape {x.shape}; NumPy's wording)"
        )
    return x.dims[i]


def axes_dims(x: ShardArray, axis: Any, what: str) -> tuple[str, ...]:
    """``axis`` (None: all, an int, or a tuple of ints) as dim names; duplicates are an error."""
    if axis is None:
        return x.dims
    if isinstance(axis, (tuple, list)):
        dims = tuple(axis_dim(x, a, what) for a in axis)
    else:
        dims = (axis_dim(x, axis, what),)
    if len(set(dims)) != len(dims):
        raise DimensionError(f"{what}: axis {axis!r} repeats an axis (array of shape {x.shape})")
    return dims


def no_out(out: Any, what: str) -> None:
    """Refuse NumPy's ``out=`` in the namespace's NumPy extras (``xp.nansum``, ``xp.quantile``, ...)."""
    if out is not None:
        raise ArgumentError(
            f"{what}: out= is not supported (arrays are distributed); assign the result: y = xp.{what}(...)"
        )


def fresh(taken: Sequence[str], n: int, stem: str = "dim") -> list[str]:
    """``n`` dim names ``stem{k}`` not in ``taken`` (lowest k first)."""
    out: list[str] = []
    k = 0
    used = set(taken)
    while len(out) < n:
        name = f"{stem}{k}"
        if name not in used:
            out.append(name)
            used.add(name)
        k += 1
    return out


def broadcast_shape(
    shapes: Sequence[tuple[int, ...]], what: str, error: type[DimensionError] = DimensionError
) -> tuple[int, ...]:
    """NumPy's broadcast shape, with a typed error naming the shapes (``error``: ``IndexingError`` for index
    arrays, NumPy's ``IndexError``)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for p in range(ndim, 0, -1):
        sizes = {s[-p] for s in shapes if len(s) >= p} - {1}
        if len(sizes) > 1:
            raise error(
                f"{what}: shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together "
                f"(axis {-p} has sizes {sorted(sizes)}); sizes must match or be 1"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def align(
    arrays: Sequence[ShardArray], what: str, error: type[DimensionError] = DimensionError
) -> tuple[list[ShardArray], tuple[str, ...], tuple[int, ...]]:
    """Rename and squeeze ``arrays`` so that named broadcasting equals NumPy's positional one.

    Returns the aligned arrays, the result's dims (positional order) and shape
    (``error``: the class raised when the shapes do not broadcast).
    The result dims take the names of the operand with the most dims (the
    first such), so an op on one array of the namespace keeps its names.
    """
    shape = broadcast_shape([a.shape for a in arrays], what, error)
    ndim = len(shape)
    lead = max(range(len(arrays)), key=lambda i: (arrays[i].ndim, -i))
    names = list(arrays[lead].dims)
    if len(names) < ndim:  # cannot happen: lead has the most dims
        names = fresh(names, ndim - len(names)) + names
    out = []
    for a in arrays:
        target = names[ndim - a.ndim :]
        drop = [t for t, n, full in zip(target, a.shape, shape[ndim - a.ndim :]) if n == 1 and full != 1]
        if tuple(target) != a.dims:
            a = rename(a, _swap_free(a.dims, target))
        if drop:
            a = squeeze(a, tuple(drop))
        out.append(a)
    return out, tuple(names), shape


def _swap_free(old: Sequence[str], new: Sequence[str]) -> dict[str, str]:
    """A rename map ``old -> new`` (all at once, so swaps are fine)."""
    return dict(zip(old, new))


def in_order(x: ShardArray, dims: Sequence[str]) -> ShardArray:
    """``x`` with its dims in the order of ``dims`` (the dims it has; a local transpose at most)."""
    have = x.dims
    if tuple(dims) == have:  # (the common case, without the generator: this runs for every positional op)
        return x
    order = tuple(d for d in dims if d in have)
    return x if order == have else transpose(x, order)


def axes_size(x: ShardArray, axes: Sequence[str]) -> int:
    """How many blocks ``axes`` cut a dim into (the product of their sizes)."""
    return math.prod(x.mesh.axis_size(a) for a in axes)


def merge(x: ShardArray, dims: Sequence[str], name: str) -> ShardArray:
    """``merge_dims`` of adjacent ``dims`` (major first), moving as little as the block layout allows.

    The mesh axes of the minor dims are first brought onto the major one
    (one alltoall, ``relayout``). When the major dim's size is a multiple of
    those axes' sizes the merge is then local. Otherwise the major dim is
    padded to the next multiple (``ops.flip.pad``), merged locally and the
    padding sliced off (``slice_dim``): moves of at most a block per device,
    never the allgather ``merge_dims`` falls back to with no dim to park on.
    """
    major, minors = dims[0], dims[1:]
    axes = tuple(a for d in dims for a in x.spec.of(d))
    if not axes:
        return merge_dims(x, dims, name)
    k = axes_size(x, axes)
    if any(x.spec.of(d) for d in minors):
        layout = {d: (axes if d == major else () if d in dims else x.spec.of(d)) for d in x.dims}
        x = relayout(x, {d: a or None for d, a in layout.items()})
    a = x.sizes[major]
    if a % k == 0:
        return merge_dims(x, dims, name)
    rest = math.prod(x.sizes[d] for d in minors)
    padded = -(-a // k) * k
    y = merge_dims(_flip.pad(x, major, 0, padded - a), dims, name)
    return slice_dim(y, name, 0, 1, a * rest)
