"""Indexing functions of the array API standard: ``take`` and ``take_along_axis`` over the named ``sa.take``.

``sa.take`` along a split dim looks up, on each device, the ids that fall in
its block (zeros elsewhere) and leaves a sum pending over the dim's mesh axes;
these functions resolve it (one allreduce of the result over those axes), so
their results are ordinary arrays. Indices split over the axis's own mesh axes
are routed to the owners, or (few a device) allgathered over those axes with
a reduce-scatter of the result back: the result is split like the indices.
Nothing else is gathered. Negative indices count
from the end; indices out of range raise ``DimensionError``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..array import OPS, ShardArray
from ..core.common import common_mesh
from ..core.relayout import resolve_to
from ..dtypes import BFLOAT16, scalar_for_write
from ..errors import ArgumentError, DimensionError, DTypeError, IndexingError, IndexTypeError
from ..ops.creation.basic import asarray as _asarray
from ..ops.creation.basic import zeros
from ..ops.elementwise import arithmetic as ew
from ..ops.indexing.basic import check_host_ids, host_ids, normalize_int, normalize_slice
from ..ops.indexing.id_writes import value_dtype, write_at
from ..ops.indexing.mask import bool_key
from ..ops.indexing.nonzero import nonzero as _nonzero
from ..ops.indexing.setitem import setitem as _setitem
from ..ops.indexing.slicing import isel, parse_key
from ..ops.indexing.take import _check_range
from ..ops.indexing.take import take as _take
from ..ops.indexing.writes import check_host_value, note_write, typed_host_value
from ..ops.manipulation.dims import expand_dims, squeeze
from ..ops.manipulation.structure import astype, broadcast_to, rename, transpose
from ._align import align, axis_dim, broadcast_shape, fresh, merge
from ._array import HOOKS, Array, wrap


def _ids(x: ShardArray, dim: str, indices: Any, what: str) -> ShardArray:
    """Integer ``indices`` as a ShardArray with non-negative ids (negative ones count from the end of ``dim``)."""
    n = x.sizes[dim]
    if isinstance(indices, ShardArray):
        common_mesh([x, indices], what)
    else:
        arr = np.asarray(indices)
        if arr.dtype.kind not in "iu":
            raise DTypeError(f"{what}: indices must be integers; got {arr.dtype}")
        check_host_ids(arr, n, f"axis {x.dims.index(dim)}", x.mesh.comm_kind, what)
        indices = _asarray(arr, dims=tuple(fresh(x.dims, arr.ndim, "ids")), mesh=x.mesh)
    if indices.dtype.kind == "b":
        raise ArgumentError(
            f"{what}: indices must be integers, not a boolean mask; use x[mask], or "
            f"xp.nonzero(mask) for integer indices"
        )
    if indices.dtype.kind not in "iu":
        raise DTypeError(
            f"{what}: indices must be an integer array; got {indices.dtype} (use xp.astype(indices, xp.int64))"
        )
    if indices.dtype.kind == "i":
        indices = ew.where(ew.less(indices, 0), ew.add(indices, n), indices)
    return indices


def take_positions(x: ShardArray, dim: str, ids: Any) -> ShardArray:
    """``x`` indexed along ``dim`` by 1-D integer ``ids`` (host or array); the result keeps ``dim``'s name/place."""
    ids = _ids(x, dim, ids, "take")
    if ids.ndim != 1:
        raise DimensionError(f"take: indices must be 1-dimensional; got shape {ids.shape}")
    (own,) = fresh(x.dims, 1, "ids")
    ids = rename(ids, {ids.dims[0]: own})
    out = _take(x, ids, dim)
    out = resolve_to(out) if out.pending else out
    out = rename(out, {own: dim})
    return transpose(out, x.dims)


def take(x: ShardArray, indices: ShardArray, /, *, axis: int | None = None) -> Array:
    """The entries of ``x`` at 1-D integer ``indices`` along ``axis`` (optional for a 1-D ``x``), as ``np.take``.

    Collectives: none along an unsplit axis; along a split one each device
    looks up the indices in its block and one allreduce over the axis's mesh
    axes completes the result (the named ``sa.take`` plus its resolution);
    indices split over those mesh axes too come back split like them (routed,
    or a reduce-scatter of the result).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     x = xp.reshape(xp.arange(12.0), (3, 4))
        ...     xp.take(x, xp.asarray([3, 0]), axis=1).numpy()
        array([[ 3.,  0.],
               [ 7.,  4.],
               [11.,  8.]])
    """
    if not isinstance(x, ShardArray):
        raise DTypeError(f"take: x must be an array; got {type(x).__name__}")
    if axis is None:
        if x.ndim != 1:
            raise DimensionError(f"take: axis is required for an array of {x.ndim} dimensions (shape {x.shape})")
        axis = 0
    dim = axis_dim(x, axis, "take")
    if not math.prod(x.shape[: x.dims.index(dim)]):
        return wrap(_take_nothing(x, dim, indices))
    return wrap(take_positions(x, dim, indices))


def _take_nothing(x: ShardArray, dim: str, indices: Any) -> ShardArray:
    """``take`` when a dim of ``x`` before ``dim`` is empty: the result is empty whatever the ids, and NumPy
    reads none of them then (its loop runs over the leading entries first: ``np.take(np.zeros((0, 3)), [5],
    axis=1)`` is an empty (0, 1) array, while ``np.take(np.zeros((3, 0, 0)), [0], axis=1)`` raises), so none is
    range-checked here either; their dtype and number of dims are. The result is laid out like ``x``."""
    ids = indices if isinstance(indices, ShardArray) else np.asarray(indices)
    if ids.dtype.kind not in "iu" and (ids.size or ids.dtype.kind == "b"):  # (an empty list is float64: no ids)
        raise DTypeError(f"take: indices must be integers; got {ids.dtype}")
    if ids.ndim != 1:
        raise DimensionError(f"take: indices must be 1-dimensional; got shape {tuple(ids.shape)}")
    count = ids.shape[0]
    sizes = {d: count if d == dim else n for d, n in x.sizes.items()}
    return zeros(x.mesh, sizes, x.dtype, {d: a for d, a in x.layout.items() if d != dim})


def take_along_axis(x: ShardArray, indices: ShardArray, /, *, axis: int = -1) -> Array:
    """Entries of ``x`` at ``indices`` along ``axis``, matched elementwise on the other axes (``np.take_along_axis``).

    ``indices`` has ``x``'s number of dimensions; its other axes match ``x``'s
    (or are 1 on either side, broadcast). Collectives as ``take``: one
    allreduce over the mesh axes of a split ``axis``, nothing otherwise.
    """
    if not isinstance(x, ShardArray) or not isinstance(indices, ShardArray):
        raise DTypeError("take_along_axis takes two arrays (x, indices)")
    if indices.ndim != x.ndim:
        raise DimensionError(
            f"take_along_axis: indices (shape {indices.shape}) must have as many dimensions as x (shape {x.shape})"
        )
    dim = axis_dim(x, axis, "take_along_axis")
    k = x.dims.index(dim)
    (own,) = fresh(x.dims, 1, "ids")
    names = list(x.dims)
    names[k] = own
    ids = rename(indices, dict(zip(indices.dims, names)))
    xs, isz = dict(x.sizes), dict(ids.sizes)
    for i, d in enumerate(x.dims):
        if i == k or xs[d] == isz[d]:
            continue
        if isz[d] == 1:
            isz[d] = xs[d]
        elif xs[d] == 1:
            xs[d] = isz[d]
        else:
            raise DimensionError(
                f"take_along_axis: x (shape {x.shape}) and indices (shape {indices.shape}) differ "
                f"along axis {i}; sizes must match or be 1"
            )
    if xs != x.sizes:
        ones = tuple(d for d in x.dims if x.sizes[d] != xs[d])
        x = broadcast_to(squeeze(x, ones), xs)
    if isz != ids.sizes:
        ones = tuple(d for d in ids.dims if ids.sizes[d] != isz[d])
        ids = broadcast_to(squeeze(ids, ones), {d: isz[d] for d in names})
    ids = _ids(x, dim, ids, "take_along_axis")
    out = _take(x, ids, dim)
    out = resolve_to(out) if out.pending else out
    out = rename(out, {own: dim})
    return wrap(transpose(out, x.dims))


__all__ = ["take", "take_along_axis"]


# ----------------------------------------------------------------- x[key] and x[key] = v
def _array_index(k: Any) -> bool:
    """Whether ``k`` is an index array of one or more dims that is no boolean mask (a list, a NumPy array or a
    ShardArray: integer ids; NumPy reads an empty list as integer ids too)."""
    if isinstance(k, ShardArray):
        return k.ndim >= 1 and k.dtype.kind != "b"
    if isinstance(k, (list, np.ndarray)):
        arr = np.asarray(k)
        return arr.ndim >= 1 and arr.dtype.kind != "b"
    return False


def _nothing_selected(x: ShardArray, key: tuple[Any, ...], what: str) -> tuple[int, ...]:
    """The shape NumPy's selection of ``key`` has when a 0-d ``False`` stands beside integer arrays: it is the
    advanced index ``[]``, so the arrays' broadcast shape ends in 0 and nothing is read (their ids unchecked; the
    ints are checked, as NumPy checks them). Shape arithmetic on a 0-byte view, with zeros for the arrays' ids;
    NumPy's errors (shapes that do not broadcast, an int out of range) as ``IndexingError``."""
    dummy: list[Any] = []
    for k in key:
        if isinstance(k, ShardArray):
            k = np.zeros(k.shape, np.int64) if k.ndim else k.numpy()[()]  # (a 0-d one: its value, read)
        dummy.append(k)  # (a list as it is: NumPy reads [] as integer ids)
    try:
        return np.broadcast_to(np.empty((), np.uint8), x.shape)[tuple(dummy)].shape
    except IndexError as e:
        raise IndexingError(f"{what}: {e} (the array of shape {x.shape})") from None


def _bools(key: tuple[Any, ...]) -> bool:
    """Whether ``key`` still holds a 0-d boolean (``split_bools`` left it, beside integer arrays)."""
    return any(_zero_d_bool(k) for k in key)


def _part2(what: str) -> ArgumentError:
    return ArgumentError(
        f"{what}: a 0-d boolean index (True/False) stands where it cannot be read; use it in a positional key "
        f"(x[idx, True]) or index in two steps"
    )


def _zero_d_bool(k: Any) -> bool:
    """Whether ``k`` is a 0-d boolean index (``True``, ``np.True_``, a 0-d boolean array)."""
    if isinstance(k, (bool, np.bool_)):
        return True
    return isinstance(k, (np.ndarray, ShardArray)) and k.dtype.kind == "b" and k.ndim == 0


def _bool_array(k: Any) -> Any:
    """``k`` as a boolean mask of one or more axes (a NumPy array or a ShardArray), else None."""
    if isinstance(k, ShardArray):
        return k if k.dtype.kind == "b" and k.ndim else None
    if isinstance(k, (list, np.ndarray)):
        arr = np.asarray(k)
        return arr if arr.dtype.kind == "b" and arr.ndim else None
    return None


def _int_like(k: Any) -> bool:
    """Whether ``k`` indexes one axis by one integer (an int, a 0-d integer array)."""
    if isinstance(k, (bool, np.bool_)):
        return False
    if isinstance(k, (int, np.integer)):
        return True
    return isinstance(k, (np.ndarray, ShardArray)) and k.ndim == 0 and k.dtype.kind in "iu"


def split_bools(x: ShardArray, key: Any, what: str) -> tuple[tuple[Any, ...], tuple[bool, int] | None]:
    """A positional key without booleans, and where a 0-d boolean left its axis: NumPy's rules for boolean indices.

    A mask of ``k >= 1`` axes anywhere in the key is its ``nonzero()``: ``k`` integer arrays in its place (NumPy's
    own definition), after its shape is checked against the axes it covers (``DimensionError``; an axis of
    length 0 of the mask matches any, as NumPy lets it: it selects nothing); a split mask's
    indices come from ``sa.nonzero`` (no gather). 0-d booleans (``x[True]``, ``x[0, False]``) index no axis and
    add one of length 1 (all True) or 0: they are taken out, and the second value is ``(all true, position of
    that axis in the result)``, or None for a key without them. As in NumPy, they and the ints are advanced
    indices: their axis stands where the first of them stood when they are adjacent, else first. Beside integer
    arrays (lists too) they stay in the key, the second value None: NumPy reads them there as the ids ``[0]``
    or ``[]`` of an axis of length 1, broadcast with the arrays (``getitem``, ``_write_beside_ids``).
    """
    if not isinstance(key, tuple):
        key = (key,)
    # a tuple or range inside the key is a sequence of indices, as NumPy reads it (``x[(0, 1), (2, 3)]``,
    # ``x[range(5), range(5)]``): the list it holds
    key = tuple(list(k) if isinstance(k, (tuple, range)) else k for k in key)
    eats = [
        0 if k is None or k is Ellipsis or _zero_d_bool(k) else (a.ndim if (a := _bool_array(k)) is not None else 1)
        for k in key
    ]
    dots = next((i for i, k in enumerate(key) if k is Ellipsis), len(key))
    out: list[Any] = []
    for i, k in enumerate(key):
        mask = _bool_array(k)
        if mask is None:
            out.append(k)
            continue
        start = sum(eats[:i]) if i < dots else x.ndim - sum(eats[i:])
        covered = x.shape[start : start + mask.ndim]  # (a mask axis of length 0 matches any, as NumPy's does)
        if any(m not in (n, 0) for m, n in zip(mask.shape, covered)) or start + mask.ndim > x.ndim or start < 0:
            raise IndexingError(
                f"{what}: the boolean mask of shape {tuple(mask.shape)} at index position {i} must match the axes "
                f"{start}..{start + mask.ndim - 1} it covers of the array of shape {x.shape}"
            )
        out.extend(_nonzero(mask) if isinstance(mask, ShardArray) else np.nonzero(mask))
    bools = [i for i, k in enumerate(out) if _zero_d_bool(k)]
    if not bools or any(_array_index(k) for k in out):
        return tuple(out), None
    truth = all(bool(out[i]) for i in bools)
    adv = [i for i, k in enumerate(out) if i in bools or _int_like(k)]
    at = 0
    if adv == list(range(adv[0], adv[0] + len(adv))):  # adjacent: the axis where the first of them stood
        real = sum(1 for k in out if k is not None and k is not Ellipsis and not _zero_d_bool(k))
        at = sum(
            1 if k is None or isinstance(k, slice) else x.ndim - real if k is Ellipsis else 0 for k in out[: adv[0]]
        )
    return tuple(k for i, k in enumerate(out) if i not in bools), (truth, at)


def normalize_key(x: ShardArray, key: Any, what: str = "x[...]", bools: bool = False) -> tuple[Any, ...]:
    """A positional key as a tuple: 0-d integer arrays become ints (their one value is read on the host);
    boolean indices here raise ``ArgumentError`` (a mask as the whole key is ``ops/indexing/mask.py``), but with
    ``bools`` a 0-d one (beside integer arrays) stays, as Python's ``True``; lists and NumPy arrays become integer
    NumPy arrays."""
    if not isinstance(key, tuple):
        key = (key,)
    out: list[Any] = []
    for k in key:
        if bools and _zero_d_bool(k):
            out.append(True)
            continue
        if isinstance(k, (bool, np.bool_)):
            raise _part2(what)
        if isinstance(k, ShardArray):
            if k.dtype.kind == "b":
                raise _part2(what)
            if k.dtype.kind not in "iu":
                raise IndexTypeError(f"{what}: an index array must hold integers; got {k.dtype}")
            if k.ndim == 0:
                k = int(k)
        elif isinstance(k, (list, np.ndarray)):
            arr = np.asarray(k)
            if arr.dtype.kind == "b":
                raise _part2(what)
            if arr.dtype.kind not in "iu" and arr.size:
                raise IndexTypeError(f"{what}: an index array must hold integers; got {arr.dtype}")
            k = int(arr) if arr.ndim == 0 else host_ids(arr)
        elif isinstance(k, np.integer):
            k = int(k)
        out.append(k)
    return tuple(out)


def _is_ids(k: Any) -> bool:
    return isinstance(k, (ShardArray, np.ndarray))


def _emptied(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """A normalized key whose integer arrays broadcast to an empty shape, with them as empty ids of that shape:
    they select nothing, so no id of theirs is out of range (NumPy checks the ids it reads: ``x[[5], []]`` is
    empty for any ``x``; its ints are still checked, as NumPy checks them). Other keys as given."""
    shapes = [tuple(k.shape) for k in key if _is_ids(k)]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        return key  # (the broadcast's own IndexingError follows)
    if math.prod(shape):
        return key
    empty = np.zeros(shape, np.int64)
    return tuple(empty if _is_ids(k) else k for k in key)


def getitem(x: ShardArray, key: Any) -> ShardArray:
    """``x[key]`` by position (NumPy rules): ints, slices, Ellipsis, None, integer arrays and boolean masks.

    Slices of split axes are one ``alltoallv`` (``isel``), ints of split axes
    broadcast their row, integer arrays are ``sa.take`` (one allreduce of the
    result block over a split axis's mesh axes; indices split over those axes
    come back split like them: routed, or a reduce-scatter). Several integer
    arrays (and ints with them) broadcast together as in NumPy: the indexed
    axes are merged and indexed by one flat position array; their axes stand
    where the first of them stood when they are side by side, else first
    (a slice, ``None`` or Ellipsis between them separates them). ``None``
    adds an axis of length 1 at its place. A boolean mask of ``k`` axes
    anywhere in the key is its ``nonzero()`` (``k`` integer arrays, as NumPy
    defines it; a split mask's by ``sa.nonzero``, an exclusive scan of
    counts); a mask over the leading axes alone is ``x[mask]``
    (``ops/indexing/mask.py``). 0-d booleans (``x[True]``, ``x[0, :, False]``)
    add an axis of length 1 (all True) or 0 where NumPy puts it; beside
    integer arrays they are NumPy's advanced indices ``[0]`` or ``[]`` of an
    axis of length 1: ``True`` changes only where the arrays' axes go (it
    counts for whether they stand side by side), ``False`` broadcasts with
    them to an empty selection (``x[ids, False]``; an ``IndexingError`` where
    the shapes do not broadcast).

    The result is a new array, never a view: a write into it does not reach
    ``x``, nor a later write into ``x`` it (JAX's value semantics; NumPy's
    basic slicing would alias).
    """

    key, zero_d = split_bools(x, key, "x[...]")
    if _bools(key):  # beside integer arrays: advanced indices [0] or [] of an axis of length 1, as NumPy's
        if all(bool(k) for k in key if _zero_d_bool(k)):
            return _advanced(x, _emptied(normalize_key(x, key, bools=True)))
        shape = _nothing_selected(x, key, "x[...]")
        return wrap(zeros(x.mesh, dict(zip(fresh(x.dims, len(shape), "sel"), shape)), x.dtype))
    if zero_d is not None:  # a new axis of length 1 (True) or 0 (False), where NumPy puts it
        out = getitem(x, key)
        (name,) = fresh(out.dims, 1)
        out = expand_dims(out, name, zero_d[1])
        return out if zero_d[0] else isel(out, {name: slice(0, 0)})
    key = normalize_key(x, key)
    if any(_is_ids(k) for k in key):
        return _advanced(x, _emptied(key))
    items, new = parse_key(x, key)
    out = isel(x, items)
    for p in new:
        (name,) = fresh(out.dims, 1)
        out = expand_dims(out, name, p)
    return out


def _expand(x: ShardArray, key: tuple[Any, ...]) -> list[Any]:
    """``key`` with its Ellipsis expanded and missing trailing slices added (one entry per axis of ``x``)."""
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexingError("x[...]: an index may hold at most one Ellipsis (...)")
    real = [k for k in key if k is not Ellipsis]
    if len(real) > x.ndim:
        raise IndexingError(f"too many indices: {len(real)} given for an array of shape {x.shape}")
    out: list[Any] = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (x.ndim - len(real)))
        else:
            out.append(k)
    return out + [slice(None)] * (x.ndim - len(out))


def _adjacent(key: tuple[Any, ...]) -> bool:
    """Whether the ints and integer arrays of ``key`` stand side by side, so that the result's broadcast axes take
    their place (NumPy's rule; else they come first). Anything between them separates them, as in NumPy, even
    an Ellipsis that stands for no axes (``x[:, 0, ..., ids]`` on a 3-D ``x``)."""
    at = [i for i, k in enumerate(key) if k is not Ellipsis and k is not None and not isinstance(k, slice)]
    return at == list(range(at[0], at[0] + len(at)))


def _new_axes(x: ShardArray, key: tuple[Any, ...]) -> tuple[tuple[Any, ...], bool, list[int], int]:
    """For an integer-array key with ``None`` (or ``True``, ``normalize_key(bools=True)``'s: an advanced index of
    an axis of length 1, which it adds to no selection beside arrays of 1 or more dims): the key without them,
    whether its ints, arrays and ``True`` stand side by side (a ``None`` between them separates them, as a slice
    does), the positions of the new axes in the result
    (ascending) and the result's number of axes, by NumPy's rule: the broadcast axes where the first int or array
    stood when side by side, else first; the slices' and new axes in their order around them."""
    adjacent = _adjacent(key)
    nd = max(k.ndim for k in key if _is_ids(k))
    real = sum(1 for k in key if k is not None and k is not Ellipsis and k is not True)
    count, seen, at = 0, False, []
    for k in key:
        if k is None:
            at.append(count + (nd if seen or not adjacent else 0))
            count += 1
        elif k is Ellipsis or isinstance(k, slice):
            count += max(x.ndim - real, 0) if k is Ellipsis else 1
        else:
            seen = True
    if not any(k is Ellipsis for k in key):
        count += max(x.ndim - real, 0)
    return tuple(k for k in key if k is not None and k is not True), adjacent, at, nd + count


def _drop_new_axes(value: Any, at: list[int], ndim: int, what: str) -> Any:
    """A write's ``value`` without its axes at the key's new axes (``at``, of a selection of ``ndim`` axes,
    right-aligned as NumPy broadcasts): they must have size 1 (``DimensionError`` otherwise)."""
    if not isinstance(value, ShardArray):
        if not np.ndim(value):
            return value
        value = np.asarray(value)
    off = ndim - value.ndim  # (right-aligned; the positions go down, so a dropped axis moves none still to come)
    for p in reversed(at):
        j = p - off
        if not 0 <= j < value.ndim:
            continue
        if value.shape[j] != 1:
            raise DimensionError(
                f"{what}: v of shape {tuple(value.shape)} does not broadcast to the selection: its axis {j} stands "
                f"at a new (None) axis of length 1"
            )
        if isinstance(value, ShardArray):
            value = squeeze(value, (value.dims[j],))
        else:
            value = value.reshape(value.shape[:j] + value.shape[j + 1 :])
    return value


def _advanced(x: ShardArray, key: tuple[Any, ...], adjacent: bool | None = None) -> ShardArray:
    """Integer-array indexing: the arrays and ints broadcast together index the merged indexed axes (``adjacent``:
    whether they stood side by side in the user's key, if it differs from ``key``)."""
    if any(k is None or k is True for k in key):
        bare, side, new, _ = _new_axes(x, key)
        out = _advanced(x, bare, side)
        for p in new:
            (name,) = fresh(out.dims, 1)
            out = expand_dims(out, name, p)
        return out

    full = _expand(x, key)
    slices = {d: k for d, k in zip(x.dims, full) if isinstance(k, slice) and k != slice(None)}
    if slices:
        x = isel(x, slices)
    adv = [i for i, k in enumerate(full) if not isinstance(k, slice)]
    adv_dims = tuple(x.dims[i] for i in adv)
    nd = max(k.ndim for k in full if _is_ids(k))
    bnames = fresh(x.dims, nd, "ids")
    arrays, consts = [], 0
    stride = 1
    strides = {}
    for i in reversed(adv):
        strides[i] = stride
        stride *= x.shape[i]
    for i in adv:
        k, d = full[i], x.dims[i]
        if isinstance(k, (int, np.integer)):
            consts += normalize_int(x, d, k) * strides[i]
            continue
        ids = _ids(x, d, k, "x[...]")
        ids = rename(ids, dict(zip(ids.dims, bnames[nd - ids.ndim :])))
        _check_range(ids, x.sizes[d], d)
        if ids.dtype != np.int64:
            ids = astype(ids, np.int64)
        arrays.append(ew.multiply(ids, strides[i]) if strides[i] != 1 else ids)
    aligned, dims, shape = align(arrays, "x[...] (broadcasting the index arrays)", IndexingError)
    if not math.prod(shape):  # nothing selected: an empty result, without merging (moving) x's indexed axes
        rest = [d for d in x.dims if d not in adv_dims]
        at = adv[0] if (_adjacent(key) if adjacent is None else adjacent) else 0
        sizes = {**{d: x.sizes[d] for d in rest}, **dict(zip(dims, shape))}
        out = zeros(x.mesh, sizes, x.dtype, {d: a for d, a in x.layout.items() if d in rest})
        return transpose(out, (*rest[:at], *dims, *rest[at:]))
    flat = aligned[0]
    for a in aligned[1:]:
        flat = ew.add(flat, a)
    if consts:
        flat = ew.add(flat, consts)
    flat = broadcast_to(flat, dict(zip(dims, shape)))
    if len(adv_dims) > 1:
        (tmp,) = fresh([*x.dims, *dims], 1, "merged")
        x = merge(x, adv_dims, tmp)
    else:
        tmp = adv_dims[0]
    out = _take(x, flat, tmp)
    out = resolve_to(out) if out.pending else out
    rest = [d for d in x.dims if d != tmp]
    at = x.dims.index(tmp) if (_adjacent(key) if adjacent is None else adjacent) else 0
    order = rest[:at] + list(dims) + rest[at:]
    return transpose(out, tuple(order))


def setitem(x: ShardArray, key: Any, value: Any) -> None:
    """``x[key] = value`` in place; keys as ``getitem`` reads them, ``value`` a scalar or an array broadcast
    right-aligned to the selection (leading size-1 axes dropped, also where the selection is one element: NumPy
    2.4 refuses ``x[i, j] = [v]`` but takes ``x[..., i, j] = [v]``; here both write). See
    ``ops/indexing/setitem.py`` (basic keys) and ``ops/indexing/id_writes.py`` (integer arrays and masks that are
    not leading: their ``nonzero()``) for the data movement.

    * Repeated indices: the last write wins, in NumPy's order of the broadcast index (deterministic on every mesh
      and layout: the owners keep the value of the greatest position).
    * Casts: an array value is cast to ``x``'s dtype as NumPy's assignment casts it (unsafely: floats truncate
      into integers), except that a complex value (array or scalar) into a real array raises ``sa.DTypeError``
      where NumPy would drop the imaginary part with a warning; a scalar is checked first (``sa.CastError`` for
      an integer out of range or NaN into an integer dtype, where NumPy raises too).
    * A host list (or tuple) value is converted to ``x``'s dtype as NumPy converts it (``np.asarray(v,
      x.dtype)``): a Python integer out of the dtype's range, or NaN into integers, raises ``sa.CastError``
      (NumPy's OverflowError/ValueError), a float truncates.
    * Integer arrays mixed with slices write through ids of the sliced axes too (the slice's positions, broadcast
      against the arrays: one id per written entry, routed to its owner like the arrays'); 0-d booleans beside
      integer arrays are NumPy's ``[0]``/``[]`` of an axis of length 1 (``True`` places the arrays' axes, ``False``
      selects nothing: the value is only checked), as ``getitem`` reads them.
    """

    check_host_value(value, "x[...] = v")
    value = typed_host_value(x, value, "x[...] = v")
    key, zero_d = split_bools(x, key, "x[...] = v")
    if _bools(key):
        _write_beside_ids(x, key, value, "set")
        return
    if zero_d is not None:
        value = _past_bool_axis(x, key, zero_d, value, "x[...] = v")
        if zero_d[0]:
            setitem(x, key, value)
        return
    key = normalize_key(x, key, "x[...] = v")
    if any(_is_ids(k) for k in key):
        # (host ids or a mask: under MPI every process must write the same entries, compared at the next collective)
        note_write(x, {f"axis{i}": k for i, k in enumerate(key)}, value)
        _write_ids(x, _emptied(key), value)
        return
    items, new = parse_key(x, key)
    value = _host_value(x, value)
    if isinstance(value, ShardArray):
        value = _fit_value(x, items, new, value)
    _setitem(x, items, value)


def _write_beside_ids(x: ShardArray, key: tuple[Any, ...], value: Any, mode: str) -> None:
    """``x[key] = value`` (``np.add.at`` with ``mode="add"``) for a key with 0-d booleans beside integer arrays:
    with all of them True, the write of the key without them (their place still separating or joining the
    arrays); with a False, nothing is written, once the value is checked against the empty selection."""
    what = "x[...] = v" if mode == "set" else f"np.{mode}.at"
    if all(bool(k) for k in key if _zero_d_bool(k)):
        key = normalize_key(x, key, what, bools=True)
        note_write(x, {f"axis{i}": k for i, k in enumerate(key)}, value)
        _write_ids(x, _emptied(key), value, mode)
        return
    sel = _nothing_selected(x, key, what)
    if value is None:  # (a unary ufunc's at: nothing to check)
        return
    if not isinstance(value, ShardArray) and np.ndim(value) == 0:
        scalar_for_write(value, x.dtype, f"{what} (the {x.dtype} array {x.sizes})")
    elif not _broadcasts(tuple(np.shape(value) if not isinstance(value, ShardArray) else value.shape), sel):
        raise DimensionError(f"{what}: v of shape {np.shape(value)} does not broadcast to the selection's {sel}")


def _past_bool_axis(x: ShardArray, key: tuple[Any, ...], zero_d: tuple[bool, int], value: Any, what: str) -> Any:
    """The value of a write whose key held 0-d booleans (``split_bools``), checked against NumPy's selection (the
    rest of the key's, with their axis of length 1 or 0 at its place) and with its axis at that place dropped: the
    value for the key without them. A scalar is checked against ``x``'s dtype even when nothing is written."""
    truth, at = zero_d
    nk = normalize_key(x, key, what)
    items, _ = parse_key(x, nk)  # (typed errors for too many indices)
    for d, k in items.items():  # (and for ints out of range: the shape arithmetic below would raise NumPy's)
        if isinstance(k, (int, np.integer)):
            normalize_int(x, d, k)
    rest = np.broadcast_to(np.empty((), np.uint8), x.shape)[nk].shape  # (shape arithmetic on a 0-byte view)
    sel = (*rest[:at], 1 if truth else 0, *rest[at:])
    if not isinstance(value, ShardArray):
        host = np.asarray(value)
        if host.ndim == 0:
            return scalar_for_write(value, x.dtype, f"{what} (the {x.dtype} array {x.sizes})")
        value = host
    if not _broadcasts(tuple(value.shape), sel):
        raise DimensionError(f"{what}: v of shape {tuple(value.shape)} does not broadcast to the selection's {sel}")
    if not truth:  # (nothing is written)
        return value
    j = at - (len(sel) - value.ndim)
    if 0 <= j < value.ndim:  # (size 1: it broadcasts)
        if isinstance(value, ShardArray):
            return squeeze(value, (value.dims[j],))
        return value.reshape(value.shape[:j] + value.shape[j + 1 :])
    return value


def _broadcasts(have: tuple[int, ...], want: tuple[int, ...]) -> bool:
    """Whether a value of shape ``have`` broadcasts to ``want`` right-aligned (leading size-1 axes allowed)."""
    lead = have[: max(len(have) - len(want), 0)]
    return all(a == 1 for a in lead) and all(a in (1, b) for a, b in zip(have[::-1], want[::-1]))


def _host_value(x: ShardArray, value: Any) -> Any:
    """A host array value of a write (a NumPy array, nested lists) as a positional array on ``x``'s mesh, unsplit:
    every process holds it already, as NumPy's ``x[1:3] = np.ones((2, 5))`` takes it. Scalars (0-d included) stay
    as they are (the write checks them against ``x``'s dtype)."""
    if isinstance(value, ShardArray) or not isinstance(value, (np.ndarray, list, tuple)):
        return value
    host = np.asarray(value)
    if host.ndim == 0 or (host.dtype.kind not in "biufc" and host.dtype != BFLOAT16):
        return value
    dims = tuple(fresh(x.dims, host.ndim, "v"))
    return wrap(_asarray(host, dims=dims, mesh=x.mesh, layout={}))


def _fit_value(x: ShardArray, items: dict[str, Any], new: list[int], value: ShardArray) -> ShardArray:
    """An array ``value`` of ``x[key] = value`` (``key`` parsed into ``items`` and the positions ``new`` of its
    None axes) matched to the selection right-aligned, as NumPy broadcasts it: its axes at the new axes and before
    the selection's first must have size 1 and are dropped; the others take the names of ``x``'s kept dims."""
    kept = tuple(d for d in x.dims if not isinstance(items.get(d), int))
    ndim = len(kept) + len(new)
    extra = [d for j, d in enumerate(value.dims) if ndim - value.ndim + j < 0 or ndim - value.ndim + j in new]
    if any(value.sizes[d] != 1 for d in extra):
        sizes = iter(normalize_slice(x, d, items[d])[2] if d in items else x.sizes[d] for d in kept)
        shape = tuple(1 if p in new else next(sizes) for p in range(ndim))
        raise DimensionError(f"x[...] = v: v of shape {value.shape} does not broadcast to the selection's {shape}")
    if extra:
        value = squeeze(value, tuple(extra))
    names = kept[len(kept) - value.ndim :]
    return rename(value, dict(zip(value.dims, names))) if value.dims != names else value


def _write_ids(
    x: ShardArray, key: tuple[Any, ...], value: Any, mode: str = "set", adjacent: bool | None = None
) -> None:
    """``x[key] = value`` (or, with ``mode="add"``, ``np.add.at(x, key, value)``) for a key with integer arrays:
    the arrays and ints broadcast together index their axes; a slice other than ``:`` indexes its axis by its
    positions, broadcast against the arrays (one id per written entry). The (index, value) pairs go to the devices
    owning the rows (``ops/indexing/id_writes.py``: alltoallv, no gather). ``None`` in the key adds axes of length
    1 to the selection (the value's axes there must be 1)."""
    if any(k is None or k is True for k in key):
        key, adjacent, new, ndim = _new_axes(x, key)
        value = value if value is None else _drop_new_axes(value, new, ndim, "x[...] = v")
    full = _expand(x, key)
    adv = [i for i, k in enumerate(full) if not isinstance(k, slice)]
    adv_dims = tuple(x.dims[i] for i in adv)
    nd = max(k.ndim for k in full if _is_ids(k))
    bnames = tuple(fresh(x.dims, nd, "ids"))
    cut = {x.dims[i]: normalize_slice(x, x.dims[i], k) for i, k in enumerate(full) if _sliced(k)}
    arrays = []
    for i in adv:
        k, d = full[i], x.dims[i]
        if isinstance(k, (int, np.integer)):
            ids = _asarray(np.int64(normalize_int(x, d, k)), dims=(), mesh=x.mesh)
        else:
            ids = _ids(x, d, k, "x[...] = v")
            _check_range(ids, x.sizes[d], d)
            ids = rename(ids, dict(zip(ids.dims, bnames[nd - ids.ndim :])))
        arrays.append(astype(ids, np.int64) if ids.dtype != np.int64 else ids)
    shape = broadcast_shape([a.shape for a in arrays], "x[...] = v (broadcasting the index arrays)", IndexingError)
    sizes = dict(zip(bnames, shape))
    coords = [a if a.shape == shape and a.ndim == nd else _spread(a, sizes, bnames) for a in arrays]
    rest = [d for d in x.dims if d not in adv_dims]
    at = adv[0] if (_adjacent(key) if adjacent is None else adjacent) else 0
    snames = dict(zip(cut, fresh([*x.dims, *bnames], len(cut), "cut")))  # (the sliced axes' names in the value)
    names = [snames.get(d, d) for d in rest[:at]] + list(bnames) + [snames.get(d, d) for d in rest[at:]]
    target = {**{snames.get(d, d): cut[d][2] if d in cut else x.sizes[d] for d in rest}, **sizes}
    if cut:  # the sliced axes' positions as ids too, every id array over the arrays' and the slices' axes
        grid = {**sizes, **{snames[d]: cut[d][2] for d in cut}}
        order = (*bnames, *snames.values())
        coords = [transpose(broadcast_to(c, grid), order) for c in coords]
        for d, (start, step, count) in cut.items():
            pos = _asarray(start + step * np.arange(count, dtype=np.int64), dims=(snames[d],), mesh=x.mesh)
            coords.append(transpose(broadcast_to(pos, grid), order))
        adv_dims = (*adv_dims, *cut)
    if isinstance(value, ShardArray):
        common_mesh([x, value], "x[...] = v")
        while value.ndim > len(names) and value.shape[0] == 1:
            value = squeeze(value, (value.dims[0],))
        if value.ndim > len(names):
            raise DimensionError(
                f"x[...] = v: v (shape {value.shape}) has more dimensions than the selection "
                f"(shape {tuple(target[n] for n in names)})"
            )
        value = rename(value, dict(zip(value.dims, names[len(names) - value.ndim :])))
        ones = tuple(d for d in value.dims if value.sizes[d] == 1 and target[d] != 1)
        for d in value.dims:
            if value.sizes[d] not in (1, target[d]):
                raise DimensionError(
                    f"x[...] = v: v (shape {value.shape}) does not broadcast to the selection "
                    f"(shape {tuple(target[n] for n in names)})"
                )
        if ones:
            value = squeeze(value, ones)
        value = broadcast_to(value, {n: target[n] for n in names})
    elif np.ndim(value):  # a host array: onto the mesh unsplit (leading size-1 axes beyond the selection's dropped)
        host = np.asarray(value)
        lead = 0
        while host.ndim - lead > len(names) and host.shape[lead] == 1:
            lead += 1
        host = host.reshape(host.shape[lead:])
        dims = tuple(fresh(x.dims, host.ndim, "v"))
        return _write_ids(x, key, wrap(_asarray(host, dims=dims, mesh=x.mesh)), mode, adjacent)
    write_at(x, adv_dims, coords, value, mode)


def _sliced(k: Any) -> bool:
    """Whether key entry ``k`` is a slice other than ``:`` (a write with integer arrays makes it ids too)."""
    return isinstance(k, slice) and k != slice(None)


def _spread(ids: ShardArray, sizes: dict[str, int], names: tuple[str, ...]) -> ShardArray:
    """An index array broadcast to the key's broadcast ``sizes``, in the order ``names``: its size-1 dims that
    stretch are dropped first (a named broadcast keeps a dim's size), as the read path does."""
    ones = tuple(d for d in ids.dims if ids.sizes[d] == 1 and sizes[d] != 1)
    return transpose(broadcast_to(squeeze(ids, ones) if ones else ids, sizes), names)


def ufunc_at(x: ShardArray, key: Any, value: Any, op: str = "add") -> None:
    """``np.add.at(x, key, value)`` in place (``op`` names the ufunc: ``"maximum"`` is ``np.maximum.at``, any other
    binary ufunc of the backend too; ``value`` None for a unary one, ``np.negative.at(x, key)``): unbuffered, so
    an index repeated in ``key`` combines every time, in the key's order (NumPy's).

    Integer-array keys route their (index, value) pairs to the devices owning the rows (``ops/indexing/
    id_writes.py``, ``mode=op``: alltoallv, no gather; where the order of a row's pairs changes the result --
    ``np.multiply.at`` of floats, ``np.subtract.at``, ``np.divide.at``, ``np.power.at`` -- their positions in the
    key travel too and each owner applies them in key order); a boolean mask over the leading axes is its
    ``nonzero`` indices; a key of ints and slices selects each entry once, so it is ``x[key] = x[key] + value``
    (``np.<op>(x[key], value)`` cast to ``x``'s dtype). A value whose dtype does not cast to ``x``'s under NumPy's
    ``same_kind`` rule (floats into integers) raises ``DTypeError``, as ``x += value`` does; the values are cast
    to ``x``'s dtype and the ufunc runs in ``x``'s dtype (its result cast back: ``np.less.at`` of floats writes
    0.0/1.0). This departs from NumPy on purpose: NumPy's ``ufunc.at`` casts *unsafely at every step* (each
    partial sum truncated: ``np.add.at(np.int8([1]), [0, 0], 0.5)`` leaves 1, ``np.add.at(np.int8([-3]), [0],
    2.5)`` gives 0), a silently lossy result that depends on the order of the repeats and that neither casting
    the values first nor casting the sum reproduces; cast the values to ``x``'s dtype (the truncation made
    explicit) or ``x`` to the promoted dtype first. The running extremes of complex values (NumPy's
    lexicographic order) are refused (``DTypeError``): take them on the real and imaginary parts, or write with
    ``xp.where``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     x = xp.asarray([1.0, 2.0, 3.0, 4.0, 5.0])
        ...     i = xp.asarray([4, 0, 4])
        >>> np.multiply.at(x, i, 3.0); np.subtract.at(x, [1, 1], 0.5); np.asarray(x)
        array([ 3.,  1.,  3.,  4., 45.])
    """
    what = f"np.{op}.at"
    extreme = op in ("maximum", "minimum", "fmax", "fmin")
    if extreme and (x.dtype.kind == "c" or getattr(getattr(value, "dtype", None), "kind", None) == "c"):
        raise DTypeError(
            f"{what}: complex values have no scatter-{op[:3]} here (NumPy orders them lexicographically); combine "
            f"the real parts, or compute the result with xp.where"
        )
    unary = getattr(np, op).nin == 1
    if not unary:  # (None is refused as a value, typed)
        _check_same_kind(x, value, what)
    mask = bool_key(np.asarray(key) if isinstance(key, list) else key)
    if mask is not None and np.ndim(mask):
        if tuple(mask.shape) != x.shape[: np.ndim(mask)]:
            raise DimensionError(
                f"{what}: the boolean mask of shape {tuple(mask.shape)} does not match the leading axes of "
                f"the array of shape {x.shape}"
            )
        key = _nonzero(mask) if isinstance(mask, ShardArray) else np.nonzero(mask)
    key, zero_d = split_bools(x, key, what)
    if _bools(key):
        _write_beside_ids(x, key, value, op)
        return
    if zero_d is not None:  # each selected entry once: x[key] += v
        if not unary:
            value = _past_bool_axis(x, key, zero_d, value, what)
        if zero_d[0]:
            ufunc_at(x, key, value, op)
        return
    key = normalize_key(x, key, what)
    if any(_is_ids(k) for k in key):
        # (host ids or values: under MPI every process must write the same, compared at the next collective)
        note_write(x, {f"axis{i}": k for i, k in enumerate(key)}, value)
        _write_ids(x, _emptied(key), value, op)
        return
    old, new = wrap(getitem(x, key)), _host_value(x, value)  # (a host array value: onto the mesh, unsplit)
    if op == "add":
        setitem(x, key, old + new)
        return
    if isinstance(new, np.ndarray):  # (a 0-d host value: NumPy's scalar of its dtype, as the operators take it)
        new = new[()]
    if op in ("maximum", "minimum"):
        setitem(x, key, getattr(HOOKS.namespace(), op)(old, new))
        return
    ufunc = getattr(np, op)
    if unary:
        got = ufunc(old)
    else:  # (the values in x's dtype, as the routed path casts them)
        vdt = value_dtype(op, x.dtype)  # (np.ldexp.at: int64 exponents)
        new = astype(new, vdt) if isinstance(new, ShardArray) else scalar_for_write(new, vdt, what)
        got = ufunc(old, new)
    setitem(x, key, got if got.dtype == x.dtype else astype(got, x.dtype))


def _check_same_kind(x: ShardArray, value: Any, what: str = "np.add.at") -> None:
    """Raise ``DTypeError`` when adding ``value`` (Python scalars weak) gives a dtype that does not cast back to
    ``x``'s under ``same_kind``; a string (which ``np.result_type`` reads as a dtype name) or None is no value."""
    if isinstance(value, (str, bytes)) or value is None:
        raise DTypeError(f"{what}: the values must be numbers or arrays; got {type(value).__name__} {value!r:.40}")
    dtype = np.result_type(x.dtype, value.dtype if hasattr(value, "dtype") else value)
    if not np.can_cast(dtype, x.dtype, "same_kind"):
        raise DTypeError(
            f"{what}: values that make dtype {dtype} cannot be combined in place into an array of dtype {x.dtype} "
            f"(NumPy's same_kind casting refuses {dtype} -> {x.dtype}, as x += v does; NumPy's {what} would "
            f"truncate every partial {'sum' if what == 'np.add.at' else 'result'} silently); cast the values to "
            f"{x.dtype} first, or the array to {dtype} "
            f"(xp.astype(x, xp.{dtype}))"
        )


# Array.__getitem__/__setitem__ call these; every ufunc's ``at`` on an Array (``numpy_protocol.positional_ufuncs``)
# reads the write and its same_kind check from the package's table
HOOKS.getitem, HOOKS.setitem = getitem, setitem
OPS.positional_ufunc_at, OPS.positional_at_check = ufunc_at, _check_same_kind
