"""Manipulation functions of the array API standard, positional, over shardarray's named ops.

Every function maps positions to dim names and calls the named op that moves
the data (``reshape`` -> ``merge_dims``/``split_dim``, ``concat``/``stack`` ->
``sa.concat``/``sa.stack``, ``flip``/``roll`` -> ``ops.flip``, ``permute_dims``
-> a local transpose, ...). New dims get fresh names (``dim{k}`` not already
used). Split dims are never gathered: a slice, flip, roll, concatenation or
tile of a split dim is one ``alltoallv`` over its axes (``movement.move``);
a reshape keeps a split on the leading part of a merged/split dim and
otherwise does the smallest relayout (see ``ops/manipulation/reshape.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.common import common_mesh, int_arg
from ..core.relayout import relayout
from ..errors import ArgumentError, DimensionError, DTypeError, OutOfBoundsError
from ..layout import Layout, check_sizes
from ..ops.creation.basic import from_blocks, full, zeros
from ..ops.indexing.basic import slice_dim
from ..ops.indexing.slicing import isel
from ..ops.manipulation import concat as _concat
from ..ops.manipulation import dims as _dims
from ..ops.manipulation import flip as _flip
from ..ops.manipulation import repeat as _repeat
from ..ops.manipulation import structure as _structure
from ..ops.manipulation.diff import diff as _diff
from ..ops.manipulation.reshape import split_dim
from ..ops.manipulation.structure import broadcast_to as _broadcast_to
from ..ops.manipulation.structure import rename, transpose
from ..ops.reduction import reduce as _reduce
from ..ops.reduction.scan import cumsum as _cumsum
from ..ops.sorting.searchsorted import searchsorted as _searchsorted
from ._align import align, axes_dims, axes_size, axis_dim, broadcast_shape, fresh, merge
from ._array import Array, wrap
from ._dtypes import _weak
from ._indexing import take_positions


def _array(x: Any, what: str) -> ShardArray:
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what} takes an array (shardarray.array_api.asarray(...)); got {type(x).__name__}")
    return x


def _int(v: Any, what: str) -> int:
    return int_arg(v, what)


def _ints(v: Any, what: str) -> tuple[int, ...]:
    if isinstance(v, (tuple, list)):
        return tuple(_int(a, what) for a in v)
    return (_int(v, what),)


def _positional(arrays: Sequence[ShardArray], x0: ShardArray) -> list[ShardArray]:
    """The arrays renamed to ``x0``'s dims, position by position (all have ``x0``'s ndim)."""
    return [a if a.dims == x0.dims else rename(a, dict(zip(a.dims, x0.dims))) for a in arrays]


def _seq(arrays: Any, what: str) -> list[ShardArray]:
    if isinstance(arrays, ShardArray) or not isinstance(arrays, (tuple, list)) or not arrays:
        raise DimensionError(f"{what} takes a non-empty tuple or list of arrays; got {arrays!r:.80}")
    return [_array(a, f"{what}: arrays[{i}]") for i, a in enumerate(arrays)]


# ----------------------------------------------------------------- broadcasting
def broadcast_arrays(*arrays: ShardArray) -> list[Array]:
    """The arrays broadcast against each other (NumPy rules, right-aligned); no data moves (local views).

    The arrays must live on one mesh (``MeshError`` otherwise, as every op of several operands).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a, b = xp.broadcast_arrays(xp.ones((3, 1)), xp.ones((4,)))
        >>> a.shape, b.shape
        ((3, 4), (3, 4))
    """
    if not arrays:
        return []
    arrs = [_array(a, f"broadcast_arrays: arrays[{i}]") for i, a in enumerate(arrays)]
    common_mesh(arrs, "broadcast_arrays")  # (as every op of several operands: one mesh)
    aligned, dims, shape = align(arrs, "broadcast_arrays")
    sizes = dict(zip(dims, shape))
    return [wrap(_broadcast_to(a, sizes)) for a in aligned]


def broadcast_to(x: ShardArray, /, shape: tuple[int, ...]) -> Array:
    """``x`` broadcast to ``shape`` (NumPy rules): new leading dims are unsplit; no data moves."""
    x = _array(x, "broadcast_to")
    shape = _ints(shape, "broadcast_to: shape")
    if len(shape) < x.ndim or broadcast_shape([x.shape, shape], "broadcast_to") != shape:
        raise DimensionError(
            f"broadcast_to: an array of shape {x.shape} cannot be broadcast to {shape}; each axis of the array "
            f"(right-aligned) must equal the target's or be 1"
        )
    names = fresh(x.dims, len(shape) - x.ndim) + list(x.dims)
    ones = tuple(d for d, n, m in zip(x.dims, x.shape, shape[len(shape) - x.ndim :]) if n == 1 and m != 1)
    if ones:
        x = _dims.squeeze(x, ones)
    return wrap(_broadcast_to(x, dict(zip(names, shape))))


# ----------------------------------------------------------------- joining
def concat(arrays: tuple[ShardArray, ...] | list[ShardArray], /, *, axis: int | None = 0) -> Array:
    """Join arrays along an existing axis (``axis=None``: flattened first), dtypes promoted.

    Collectives: none along an unsplit axis; along a split one a single
    ``alltoallv`` over its mesh axes (``sa.concat``), each device sending at
    most its blocks. Nothing is gathered.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.reshape(xp.arange(6.0), (3, 2))
        ...     xp.concat((a, a), axis=0).shape
        (6, 2)
    """
    arrs = _seq(arrays, "concat")
    if axis is None:
        arrs = [reshape(a, (-1,)) for a in arrs]
        axis = 0
    x0 = arrs[0]
    for i, a in enumerate(arrs):
        if a.ndim != x0.ndim:
            raise DimensionError(
                f"concat: arrays[0] has shape {x0.shape} but arrays[{i}] has shape {a.shape}; "
                f"all arrays need the same number of dimensions"
            )
    if x0.ndim == 0:
        raise DimensionError("concat: 0-d arrays cannot be concatenated; use axis=None or stack")
    dim = axis_dim(x0, axis, "concat")
    k = x0.dims.index(dim)
    for i, a in enumerate(arrs):
        if a.shape[:k] + a.shape[k + 1 :] != x0.shape[:k] + x0.shape[k + 1 :]:
            raise DimensionError(
                f"concat along axis {axis}: arrays[0] has shape {x0.shape} but arrays[{i}] has "
                f"shape {a.shape}; they may differ along axis {axis} only"
            )
    _common_dtype(arrs, "concat")
    arrs = _positional(arrs, x0)
    if len(arrs) == 1:  # a new array, as NumPy's concatenate (x itself would share later writes)
        return wrap(arrs[0].__copy__())
    return wrap(_concat.concat(arrs, dim))


def _common_dtype(arrs: Sequence[ShardArray], what: str) -> None:
    """Raise a ``DTypeError`` when the arrays' dtypes have no common dtype (NumPy has no promotion rule for
    bfloat16 with int64, for one: its bare DTypePromotionError)."""
    try:
        np.result_type(*(a.dtype for a in arrs))
    except TypeError:
        names = sorted({str(a.dtype) for a in arrs})
        raise DTypeError(
            f"{what}: arrays of dtypes {', '.join(names)} have no common dtype (NumPy has no promotion rule for "
            f"them); cast them to one dtype first with xp.astype"
        ) from None


def stack(arrays: tuple[ShardArray, ...] | list[ShardArray], /, *, axis: int = 0) -> Array:
    """Join arrays of one shape along a new (unsplit) axis; no communication when they share a layout."""
    arrs = _seq(arrays, "stack")
    x0 = arrs[0]
    for i, a in enumerate(arrs):
        if a.shape != x0.shape:
            raise DimensionError(
                f"stack: arrays[0] has shape {x0.shape} but arrays[{i}] has shape {a.shape}; "
                f"stacked arrays need one shape"
            )
    pos = _int(axis, "stack: axis")
    if not -(x0.ndim + 1) <= pos <= x0.ndim:
        raise OutOfBoundsError(
            f"stack: axis {pos} is out of range for a result of {x0.ndim + 1} dimensions; "
            f"use {-(x0.ndim + 1)}..{x0.ndim}"
        )
    pos = pos + x0.ndim + 1 if pos < 0 else pos
    _common_dtype(arrs, "stack")
    arrs = _positional(arrs, x0)
    (name,) = fresh(x0.dims, 1)
    out = _concat.stack(arrs, name)
    order = list(x0.dims)
    order.insert(pos, name)
    return wrap(transpose(out, tuple(order)))


def unstack(x: ShardArray, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The slices of ``x`` along ``axis``, as a tuple.

    Each slice of a split axis is broadcast from the device that holds it
    over the axis's mesh axes (one ``broadcast`` of the slice); the freed
    mesh axes then split the slice's largest axis when it is large enough (a
    local slice), so the results are not replicated.
    """
    x = _array(x, "unstack")
    if x.ndim == 0:
        raise DimensionError("unstack: a 0-d array has no axis to unstack")
    dim = axis_dim(x, axis, "unstack")
    freed = x.spec.of(dim)
    out = []
    for i in range(x.sizes[dim]):
        part = isel(x, {dim: i})
        free = tuple(a for a in freed if a not in part.spec.used_axes)  # (isel may have used them already)
        if free and part.ndim:
            big = max(part.dims, key=lambda d: part.sizes[d] // axes_size(part, part.spec.of(d)))
            axes = part.spec.of(big) + free
            if part.sizes[big] >= axes_size(part, axes):
                part = relayout(part, {d: (axes if d == big else part.spec.of(d)) or None for d in part.dims})
        out.append(wrap(part))
    return tuple(out)


# ----------------------------------------------------------------- axes
def expand_dims(x: ShardArray, /, axis: int | tuple[int, ...] = 0) -> Array:
    """``x`` with a new size-1 (unsplit) axis at ``axis`` (or several, a tuple); local."""
    x = _array(x, "expand_dims")
    axes = _ints(axis, "expand_dims: axis")
    nd = x.ndim + len(axes)
    norm = []
    for a in axes:
        if not -nd <= a < nd:
            raise OutOfBoundsError(
                f"expand_dims: axis {a} is out of range for a result of {nd} dimension(s) "
                f"(array of shape {x.shape}); use {-nd}..{nd - 1}"
            )
        norm.append(a + nd if a < 0 else a)
    if len(set(norm)) != len(norm):
        raise DimensionError(f"expand_dims: axis {axis!r} repeats an axis")
    for a in sorted(norm):
        (name,) = fresh(x.dims, 1)
        x = _dims.expand_dims(x, name, a)
    return wrap(x)


def squeeze(x: ShardArray, /, axis: int | tuple[int, ...]) -> Array:
    """``x`` without the size-1 axes ``axis`` (``ValueError`` for an axis of another size).

    A 0-d ``x`` with an integer ``axis`` of 0 or -1 is returned as it is, as NumPy's ``np.squeeze`` does (its
    legacy reading of a 0-d array's one "axis"); a tuple, or another axis, is out of bounds there, as in NumPy.
    """
    x = _array(x, "squeeze")
    if x.ndim == 0 and not isinstance(axis, (tuple, list, bool)) and _int(axis, "squeeze: axis") in (0, -1):
        return wrap(x)
    dims = axes_dims(x, axis, "squeeze")
    bad = [x.dims.index(d) for d in dims if x.sizes[d] != 1]
    if bad:
        raise DimensionError(
            f"squeeze: axis {bad} of the array of shape {x.shape} does not have size 1; "
            f"only size-1 axes can be squeezed"
        )
    return wrap(_dims.squeeze(x, dims) if dims else x)


def permute_dims(x: ShardArray, /, axes: tuple[int, ...]) -> Array:
    """``x`` with its axes in the order ``axes`` (a local transpose: blocks keep their devices)."""
    x = _array(x, "permute_dims")
    ax = _ints(axes, "permute_dims: axes")
    if len(ax) != x.ndim:
        raise DimensionError(
            f"permute_dims: axes {axes!r} is not a permutation of the {x.ndim} axes of an array of shape {x.shape}"
        )
    return wrap(transpose(x, axes_dims(x, ax, "permute_dims")))


def moveaxis(x: ShardArray, source: int | tuple[int, ...], destination: int | tuple[int, ...], /) -> Array:
    """``x`` with axes ``source`` moved to ``destination`` (the others keep their order); a local transpose."""
    x = _array(x, "moveaxis")
    src = _ints(source, "moveaxis: source")
    dst = _ints(destination, "moveaxis: destination")
    if len(src) != len(dst):
        raise DimensionError(f"moveaxis: source {source!r} and destination {destination!r} differ in length")
    sdims = axes_dims(x, src, "moveaxis")
    dpos = [x.dims.index(d) for d in axes_dims(x, dst, "moveaxis")]
    order = [d for d in x.dims if d not in sdims]
    for p, d in sorted(zip(dpos, sdims)):
        order.insert(p, d)
    return wrap(transpose(x, tuple(order)))


def flip(x: ShardArray, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """``x`` reversed along ``axis`` (all axes when None); one ``alltoallv`` per split axis (``ops.flip``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.flip(xp.arange(5)).numpy()
        array([4, 3, 2, 1, 0])
    """
    x = _array(x, "flip")
    for d in axes_dims(x, axis, "flip"):
        x = _flip.flip(x, d)
    return wrap(x)


def roll(x: ShardArray, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None) -> Array:
    """``x`` rotated by ``shift`` along ``axis`` (None: the flattened array, then the shape restored).

    As ``np.roll``, ``shift`` and ``axis`` broadcast against each other and the
    shifts of one axis add up: a tuple of shifts with ``axis=None`` or one axis
    rolls that axis by their sum.

    Collectives: one ``alltoallv`` per split axis rolled (``ops.flip.roll``).
    """
    x = _array(x, "roll")
    shifts = _ints(shift, "roll: shift")
    if axis is None:
        flat = reshape(x, (-1,))
        return reshape(_flip.roll(flat, flat.dims[0], sum(shifts)), x.shape)
    axes = _ints(axis, "roll: axis")
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise DimensionError(f"roll: shift {shift!r} and axis {axis!r} must have the same length")
    for s, a in zip(shifts, axes):
        x = _flip.roll(x, axis_dim(x, a, "roll"), s)
    return wrap(x)


# ----------------------------------------------------------------- reshape
def split(x: ShardArray, dim: str, sizes: dict[str, int]) -> ShardArray:
    """``split_dim`` of ``dim`` into ``sizes`` (major first) keeping its mesh axes on the first new dim.

    Local when the first new size is a multiple of the axes' sizes; otherwise
    ``dim`` is padded so that it is (``ops.flip.pad``, one alltoallv), split
    locally, and the padding sliced off the first new dim (``slice_dim``):
    never the allgather ``split_dim`` falls back to with no dim to park on.
    """
    axes = x.spec.of(dim)
    names = list(sizes)
    a = sizes[names[0]]
    k = axes_size(x, axes)
    if not axes or a % k == 0:
        return split_dim(x, dim, sizes)
    padded = -(-a // k) * k
    rest = x.sizes[dim] // a
    y = split_dim(_flip.pad(x, dim, 0, (padded - a) * rest), dim, {**sizes, names[0]: padded})
    return slice_dim(y, names[0], 0, 1, a)


def _target(x: ShardArray, shape: Any) -> tuple[int, ...]:
    shape = _ints(shape, "reshape: shape")
    infer = [i for i, n in enumerate(shape) if n == -1]
    if len(infer) > 1 or any(n < -1 for n in shape):
        raise DimensionError(f"reshape: shape {shape} may hold one -1 (inferred) and sizes >= 0 otherwise")
    known = math.prod(n for n in shape if n != -1)
    if infer:
        if known == 0 or x.size % known:
            raise DimensionError(f"reshape: cannot reshape an array of shape {x.shape} (size {x.size}) into {shape}")
        shape = tuple(x.size // known if n == -1 else n for n in shape)
    if math.prod(shape) != x.size:
        raise DimensionError(
            f"reshape: cannot reshape an array of shape {x.shape} (size {x.size}) into {shape}; "
            f"the sizes must multiply to {x.size}"
        )
    return shape


def reshape(x: ShardArray, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Array:
    """``x`` with a new shape, row-major (one size may be -1), via ``merge_dims`` and ``split_dim``.

    The axes are grouped into the smallest runs whose sizes multiply to the
    same product: a run of one axis keeps its name and layout, the others are
    merged and/or split. A split axis stays split when it is the leading part
    of a merged or split axis and the blocks line up (no communication);
    otherwise the named ops do the smallest relayout (an alltoall to park the
    mesh axes on another axis and back), never a gather of the whole array.
    ``copy``: a result of a new shape never shares writable storage with
    ``x`` (``x[...] = v`` replaces blocks), so no copy is needed either way;
    a result of ``x``'s own shape is ``x`` itself (a view, as NumPy's) unless
    ``copy=True`` asks for a copy.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.reshape(xp.arange(24.0), (4, 6))
        ...     a.shape, a.layout
        ((4, 6), {'dim1': ('row',)})
    """
    x = _array(x, "reshape")
    shape = _target(x, shape)
    if shape == x.shape:
        return wrap(x.__copy__() if copy else x)
    if x.size == 0:
        names = fresh((), len(shape))
        return wrap(zeros(x.mesh, dict(zip(names, shape)), dtype=x.dtype))
    ones = tuple(d for d in x.dims if x.sizes[d] == 1)
    if ones:
        x = _dims.squeeze(x, ones)
    new = [n for n in shape if n != 1]
    taken = set(x.dims)
    i = j = 0
    out_dims: list[str] = []
    while i < x.ndim:
        i0, j0 = i, j
        po, pn = x.shape[i], new[j]
        while po != pn:
            if po < pn:
                i += 1
                po *= x.shape[i]
            else:
                j += 1
                pn *= new[j]
        old = x.dims[i0 : i + 1]
        sizes = new[j0 : j + 1]
        if len(old) == 1 and len(sizes) == 1:
            out_dims.append(old[0])
        else:
            names = fresh(sorted(taken), len(sizes) + (len(old) > 1 and len(sizes) > 1))
            taken.update(names)
            if len(old) > 1:
                merged = names[-1] if len(sizes) > 1 else names[0]
                x = merge(x, old, merged)
                old = (merged,)
            if len(sizes) > 1:
                x = split(x, old[0], dict(zip(names[: len(sizes)], sizes)))
            out_dims.extend(names[: len(sizes)])
            i = x.dims.index(out_dims[-1])
        i += 1
        j += 1
    for p, n in enumerate(shape):
        if n == 1:
            (name,) = fresh(sorted(taken), 1)
            taken.add(name)
            x = _dims.expand_dims(x, name, p)
    return wrap(x)


# ----------------------------------------------------------------- repetition
def _split(x: ShardArray, dim: str) -> bool:
    return bool(x.spec.of(dim))


def _repeat_int(x: ShardArray, dim: str, r: int) -> ShardArray:
    if r == 1:
        return x.__copy__()  # (np.repeat copies: x itself would share later writes)
    return _repeat.repeat(x, r, dim)


def repeat(x: ShardArray, repeats: int | ShardArray, /, *, axis: int | None = None) -> Array:
    """Each element of ``x`` repeated along ``axis`` (None: the flattened array), as ``np.repeat``.

    An integer ``repeats`` is local on an unsplit axis; on a split axis it is
    one ``alltoallv`` over its axes (``sa.repeat``: a device receives at
    most its output block, with many repeats only the few entries covering
    it; nothing is gathered) and the axis keeps its split.

    An array ``repeats`` (one count per element of the axis) makes the
    result's length data-dependent. Its values stay distributed: the
    inclusive scan of the counts (``cumsum``: a local scan and one allgather
    of one total per device), their sum and their minimum (two allreduces
    of one scalar, read on the host: the length, and NumPy's check that no
    count is negative), then each output position's source index is the
    number of scan entries not above it (``searchsorted`` of positions laid
    out like the result's axis, routed to the owners of the scan's blocks)
    and ``x`` is indexed with them (``take``; routed along a split axis:
    traffic proportional to each device's output block). A NumPy array or a
    list of counts is on the host already and is taken as NumPy takes it. A
    one-element ``repeats`` repeats every element that many times (NumPy's
    broadcast).
    """
    x = _array(x, "repeat")
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    dim = axis_dim(x, axis, "repeat")
    n = x.sizes[dim]
    if isinstance(repeats, ShardArray) and repeats.ndim:
        return wrap(_repeat_array(x, dim, repeats, axis))
    if isinstance(repeats, (np.ndarray, list, tuple)) and np.ndim(repeats):
        if np.asarray(repeats).dtype.kind not in "iu" and np.size(repeats):
            raise DTypeError(f"repeat: repeats must be integers; got {np.asarray(repeats).dtype}")
        reps = np.asarray(repeats).astype(np.int64)
        if reps.ndim != 1 or reps.shape[0] not in (1, n):
            raise DimensionError(
                f"repeat: repeats has shape {reps.shape}; give one count, or one per element ({n}) of axis {axis}"
            )
        if (reps < 0).any():
            raise ArgumentError(f"repeat: repeats must be >= 0; got {reps.tolist()}")
        if reps.shape[0] == 1:
            return wrap(_repeat_int(x, dim, int(reps[0])))
        ids = np.repeat(np.arange(n, dtype=np.int64), reps)
        return wrap(take_positions(x, dim, ids))
    r = _int(repeats, "repeat: repeats")
    if r < 0:
        raise ArgumentError(f"repeat: repeats must be >= 0; got {r}")
    return wrap(_repeat_int(x, dim, r))


def _repeat_array(x: ShardArray, dim: str, counts: ShardArray, axis: int) -> ShardArray:
    """``repeat`` by a 1-D array of counts, kept distributed (see ``repeat``)."""
    common_mesh([x, counts], "repeat")
    n = x.sizes[dim]
    if counts.dtype.kind not in "iu" and counts.size:
        raise DTypeError(f"repeat: repeats must be integers; got {counts.dtype}")
    if counts.ndim != 1 or counts.shape[0] not in (1, n):
        raise DimensionError(
            f"repeat: repeats has shape {counts.shape}; give one count, or one per element ({n}) of axis {axis}"
        )
    counts = _structure.astype(counts, np.int64)
    if n == 0:  # (nothing to repeat: an empty result, no count read)
        return take_positions(x, dim, np.zeros(0, dtype=np.int64))
    lowest = int(_reduce.min(counts).numpy())
    if lowest < 0:
        raise ArgumentError(f"repeat: repeats must be >= 0; got a count of {lowest}")
    if counts.shape[0] == 1:
        return _repeat_int(x, dim, int(_reduce.sum(counts).numpy()))
    total = int(_reduce.sum(counts).numpy())
    if total == 0:
        return take_positions(x, dim, np.zeros(0, dtype=np.int64))
    ends = _cumsum(counts, counts.dims[0])
    (name,) = fresh(list(x.dims) + list(counts.dims), 1, "pos")
    spec = Layout((name,), (total,), (x.spec.of(dim),))
    xp = x.mesh.backend.xp
    pos = from_blocks(x.mesh, spec, np.dtype(np.int64), lambda b: xp.arange(b[0][0], b[0][1], dtype=xp.int64))
    return take_positions(x, dim, _searchsorted(ends, pos, side="right"))


def _tile_split(x: ShardArray, dim: str, r: int) -> ShardArray:
    """``r`` copies of ``x`` along its split ``dim``: a concatenation (one ``alltoallv``, each device sends its block
    once per copy). When ``dim`` is shorter than its axes' device count ``k`` (blocks of at most one entry, some
    empty) and ``r >= k``, ``dim`` is allgathered instead (at most ``k - 1`` blocks, fewer than the ``r`` copies a
    device would send), broadcast along a new leading dim of ``r`` that takes its axes (a local slice) and merged
    with ``dim`` (``merge``: local, or a pad and a slice of at most a block): no device sends more than about its
    output block (the concatenation would have the few devices holding entries send every copy)."""
    axes = x.spec.of(dim)
    k = axes_size(x, axes)
    if x.sizes[dim] >= k or r < k:
        return _concat.concat([x] * r, dim)
    x = relayout(x, {**x.layout, dim: None})  # (the other dims keep their axes)
    p = x.dims.index(dim)
    (name,) = fresh(x.dims, 1)
    y = _broadcast_to(x, {**{d: x.sizes[d] for d in x.dims[:p]}, name: r, **{d: x.sizes[d] for d in x.dims[p:]}})
    return merge(relayout(y, {**y.layout, name: axes}), (name, dim), dim)


def tile(x: ShardArray, repetitions: tuple[int, ...], /) -> Array:
    """``x`` repeated whole, as ``np.tile``: local along unsplit axes, a concatenation (one ``alltoallv``) along
    split ones."""
    x = given = _array(x, "tile")
    reps = _ints(repetitions, "tile: repetitions")
    if any(r < 0 for r in reps):
        raise ArgumentError(f"tile: repetitions {reps} must be >= 0")
    for _ in range(len(reps) - x.ndim):
        (name,) = fresh(x.dims, 1)
        x = _dims.expand_dims(x, name, 0)
    reps = (1,) * (x.ndim - len(reps)) + reps
    check_sizes(x.dims, [n * r for n, r in zip(x.shape, reps)], "the result of tile")  # (within int64)
    if 0 in reps or x.size == 0:  # (an empty result: nothing to move, the layout kept)
        sizes = {d: n * r for d, n, r in zip(x.dims, x.shape, reps)}
        return wrap(zeros(x.mesh, sizes, dtype=x.dtype, layout=x.layout))
    # (the split dims' copies first, of the smallest data; then the local ones)
    local = {d: r for d, r in zip(x.dims, reps) if r not in (0, 1) and not _split(x, d)}
    for d, r in zip(x.dims, reps):
        if r not in (0, 1) and _split(x, d):
            x = _tile_split(x, d, r)
    if local:
        x = _repeat.tile(x, local)
    return wrap(x.__copy__() if x is given else x)  # (np.tile copies: x itself would share later writes)


__all__ = [
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
]


# ----------------------------------------------------------------- utility
def diff(
    x: ShardArray,
    /,
    n: int = 1,
    axis: int = -1,
    *,
    prepend: ShardArray | bool | int | float | complex | None = None,
    append: ShardArray | bool | int | float | complex | None = None,
) -> Array:
    """The ``n``-th forward difference along ``axis``, after joining ``prepend`` and ``append`` (``np.diff``).

    ``prepend``/``append`` have ``x``'s shape except along ``axis`` and are
    concatenated first (``concat``, dtypes promoted); a scalar or 0-d array
    is broadcast to length 1 along ``axis``, and a Python scalar has NumPy's
    dtype (``1.5``: float64), as in NumPy; a Python int where NumPy has no rule
    for int64 with ``x``'s dtype (bfloat16) is weak: ``x``'s dtype, as in the
    namespace's arithmetic. ``n=0`` returns ``x`` (a 0-d one too), as NumPy. ``n`` and ``axis`` may also be given by
    position, in NumPy's order (``xp.diff(x, 2)``: scikit-learn's ``roc_curve`` does). Each order is two slices (one
    ``alltoallv`` each on a split axis) and a local subtraction (``ops.diff``;
    ``not_equal`` for bool); an ``n`` beyond the axis' length leaves it empty.
    """

    x = _array(x, "diff")
    n = _int(n, "diff: n")
    if n == 0:  # as NumPy: x itself, without prepend and append (nor a check of axis: a 0-d x too)
        return wrap(x)
    if x.ndim == 0:
        raise DimensionError("diff: a 0-d array has no axis to difference")
    dim = axis_dim(x, axis, "diff")
    k = x.dims.index(dim)
    parts = [_diff_end(p, x, k) for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=k)
        dim = x.dims[k]
    return wrap(_diff(x, dim, n))


def _diff_end(v: Any, x: ShardArray, k: int) -> Any:
    """``prepend``/``append`` as NumPy takes them: a scalar or 0-d array broadcast to ``x``'s shape with length 1
    along axis ``k`` (a Python scalar in NumPy's dtype for it); anything else as it is."""
    if not isinstance(v, ShardArray) and np.ndim(v) == 0:
        value = np.asarray(v)
        dtype = value.dtype
        try:
            np.result_type(dtype, x.dtype)
        except TypeError:  # (no NumPy rule: bfloat16 with int64) a Python int is weak, as in xp's arithmetic
            if type(v) is not int:
                raise DTypeError(
                    f"diff: prepend/append of {dtype} has no common dtype with the array's {x.dtype} (NumPy has no "
                    f"promotion rule for them); cast it first, or pass a Python scalar"
                ) from None
            dtype = _weak(x.dtype, v)
        sizes = dict(x.sizes, **{x.dims[k]: 1})
        layout = {d: (x.spec.of(d) or None) for d in x.dims if d != x.dims[k]}  # no move to join x
        return full(x.mesh, sizes, value.item(), dtype=dtype, layout=layout)
    if isinstance(v, ShardArray) and v.ndim == 0:
        return broadcast_to(v, x.shape[:k] + (1,) + x.shape[k + 1 :])
    return v


__all__ += ["diff"]
