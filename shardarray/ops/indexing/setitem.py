"""``x[idx] = v``: write into the selected entries of ``x``, in place (its shards are replaced).

The selection is a box of ints and slices (any step) per dim. A scalar ``v``
is written locally by every device into the part of the box in its block. A
ShardArray ``v`` (matched to the box's kept dims by name, else by position
from the right, NumPy style; missing dims broadcast) is moved into ``x``'s
layout one selected dim at a time with ``movement.move`` (one ``alltoallv``
over that dim's axes when it is split, each device sending at most its block
of ``v``), then each device writes the part that falls in its block. Every
replica of a block receives the same write. Under MPI every process must
write the same index and value (``writes.note_write``). Not differentiable: writing into
an array being recorded by ``value_and_grad``, or one an op recorded there was given (its gradient
reads it), raises ``TapeError`` (``core.tape.refuse_write``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from ...array import ShardArray
from ...core.common import common_mesh, map_blocks, union_dims
from ...core.movement import k_range, move
from ...core.relayout import resolve_to, to_axes
from ...core.tape import refuse_write
from ...dtypes import scalar_for_write
from ...errors import DimensionError, DTypeError, IndexTypeError
from ...layout import block_bounds
from ..creation.basic import asarray
from ..elementwise.arithmetic import add, less, where
from ..manipulation.structure import astype, broadcast_to, rename, transpose
from .basic import check_host_ids, host_ids, normalize_int, normalize_slice, pick
from .id_writes import write_at
from .mask import mask_assign
from .route import moved_to
from .take import _check_range
from .writes import check_host_value, note_write, serialized


def _box(x: ShardArray, items: Mapping[str, Any]) -> dict[str, tuple[int, int, int, bool]]:
    """Per dim of ``x``: ``(start, step, count, kept)``; ints give count 1 and kept False."""
    box = {d: (0, 1, n, True) for d, n in zip(x.dims, x.shape)}
    for d, v in items.items():
        if not isinstance(d, str) or d not in x.dims:
            raise DimensionError(f"x[...] = v: {d!r} is not a dim of x; its dims are {x.sizes}")
        if isinstance(v, slice):
            start, step, count = normalize_slice(x, d, v)
            box[d] = (start, step, count, True)
        elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            box[d] = (normalize_int(x, d, v), 1, 1, False)
        else:
            raise IndexTypeError(
                f"x[...] = v: index {v!r:.60} for dim {d!r} is not supported in a named write; use ints, slices, "
                f"integer id arrays (x[{{{d!r}: ids}}] = v) or one boolean mask (x[mask] = v)"
            )
    return box


def _value(x: ShardArray, v: ShardArray, box: dict[str, tuple[int, int, int, bool]]) -> ShardArray:
    """``v`` over every dim of ``x`` with the box's counts, matched by name or by position."""
    kept = tuple(d for d in x.dims if box[d][3])
    if not set(v.dims) <= set(kept):
        if v.ndim > len(kept):
            raise DimensionError(f"x[...] = v: v {v.sizes} has more dims than the selection {kept} of x {x.sizes}")
        v = rename(v, {a: f"{b}__v" for a, b in zip(v.dims, kept[len(kept) - v.ndim :])})
        v = rename(v, {f"{b}__v": b for b in kept[len(kept) - v.ndim :]})
    for d in v.dims:
        if v.sizes[d] not in (box[d][2], 1):
            raise DimensionError(
                f"x[...] = v: v has size {v.sizes[d]} along {d!r} but the selection has {box[d][2]} entries "
                f"there (x {x.sizes}, v {v.sizes}); give v that size (or 1 to broadcast)"
            )
    ones = tuple(d for d in v.dims if v.sizes[d] == 1 and box[d][2] != 1)
    if ones:
        for d in ones:
            v = pick.__wrapped__(v, d, 0)
    v = resolve_to(v) if v.pending else v
    v = broadcast_to.__wrapped__(v, {d: box[d][2] for d in x.dims}, layout={d: a for d, a in v.layout.items()})
    return astype(v, x.dtype) if v.dtype != x.dtype else v


def _is_ids(k: Any) -> bool:
    """Whether index ``k`` is an array of integer ids (a ShardArray, a NumPy array or a list of 1 or more dims)."""
    if isinstance(k, ShardArray):
        return k.dtype.kind in "iu"
    if isinstance(k, (list, np.ndarray)):
        arr = np.asarray(k)
        return arr.ndim >= 1 and arr.dtype.kind in "iu"
    return False


def _write_ids(x: ShardArray, items: Mapping[str, Any], ids: dict[str, Any], v: Any) -> None:
    """``x[{d: ids, ...}] = v``: the entries at the ids along their dims (``ids.write_at``: each (id, value) pair
    goes to the device owning its row, one alltoallv; no gather).

    The id arrays broadcast together by name (same-named dims of equal sizes); a NumPy array (1-D) takes the name
    of the dim it indexes. Negative ids count from the end, as NumPy's. Ints and slices of other dims beside them
    index those dims by their positions (an int drops its dim, a slice keeps it, as ``isel`` does): ids too, one
    per written entry. ``v``: a scalar, or a ShardArray over the ids' dims, the sliced dims and ``x``'s other dims
    (any order; missing and size-1 dims broadcast). Where ids repeat, the last value is written, as in NumPy.
    """
    coords, cuts = [], {}
    for d, k in items.items():  # ints and slices beside the ids: ids of their positions (a slice keeps its dim)
        if d in ids:
            continue
        if d not in x.dims:
            raise DimensionError(f"x[...] = v: {d!r} is not a dim of x; its dims are {x.sizes}")
        if isinstance(k, slice):
            start, step, count = normalize_slice(x, d, k)
            cuts[d] = f"{d}__cut"
            coords.append(asarray(start + step * np.arange(count, dtype=np.int64), dims=(cuts[d],), mesh=x.mesh))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            coords.append(asarray(np.int64(normalize_int(x, d, k)), dims=(), mesh=x.mesh))
        else:
            raise IndexTypeError(
                f"x[...] = v: index {k!r:.60} for dim {d!r} beside id arrays is not supported in a named write; "
                f"use ints, slices or integer id arrays"
            )
    for d, k in ids.items():
        if d not in x.dims:
            raise DimensionError(f"x[...] = v: {d!r} is not a dim of x; its dims are {x.sizes}")
        n = x.sizes[d]
        if not isinstance(k, ShardArray):
            arr = host_ids(np.asarray(k))
            if arr.ndim != 1:
                raise DimensionError(
                    f"x[...] = v: NumPy ids for dim {d!r} must be 1-D (they take the dim's name); got shape "
                    f"{arr.shape}: give a named array (sa.asarray(ids, dims=...)) for more dims"
                )
            check_host_ids(arr, n, f"dim {d!r}", x.mesh.comm_kind, "x[...] = v")
            k = asarray(np.where(arr < 0, arr + n, arr), dims=(d,), mesh=x.mesh)
        else:
            common_mesh([x, k], "x[...] = v")
            k = astype(k, np.int64) if k.dtype != np.int64 else k
            k = where(less(k, 0), add(k, n), k)
        _check_range(k, n, d)
        coords.append(k)
    coords = coords[len(items) - len(ids) :] + coords[: len(items) - len(ids)]  # (the ids' first: their dims lead)
    dims, sizes = union_dims(coords, "x[...] = v (the id arrays)")
    coords = [c if c.dims == dims else transpose.__wrapped__(broadcast_to(c, sizes), dims) for c in coords]
    indexed = (*ids, *(d for d in items if d not in ids))
    if isinstance(v, ShardArray):
        common_mesh([x, v], "x[...] = v")
        v = rename(v, {d: cuts[d] for d in v.dims if d in cuts}) if cuts else v
        target = {**sizes, **{d: x.sizes[d] for d in x.dims if d not in indexed}}
        extra = [d for d in v.dims if d not in target]
        if extra or any(v.sizes[d] not in (1, target[d]) for d in v.dims):
            raise DimensionError(
                f"x[...] = v: v {v.sizes} must have the ids' dims and x's other dims ({target}, size 1 to broadcast)"
            )
        ones = tuple(d for d in v.dims if v.sizes[d] == 1 and target[d] != 1)
        for d in ones:
            v = pick.__wrapped__(v, d, 0)
        v = broadcast_to(v, target)
    elif np.ndim(v):
        raise DTypeError(
            f"x[...] = v: v must be a scalar or a ShardArray; got a {type(v).__name__} of shape {np.shape(v)}. "
            f"Wrap it with sa.asarray(v, dims=(...), mesh=x.mesh), dims the ids' and x's other dims"
        )
    write_at(x, indexed, coords, v, "set")


@serialized
def setitem(x: ShardArray, items: Mapping[str, Any], v: Any) -> None:
    """Write ``v`` into ``x[items]`` in place (see the module docstring for the collectives).

    Args:
        x: the array written into; its shards are replaced, its caches reset.
        items: ``{dim: int | slice}``.
        v: a scalar or a ShardArray of the selection's sizes (size-1 dims and missing dims broadcast).

    Raises:
        TapeError: ``x`` is being recorded by ``value_and_grad``, or an op recorded there was given it.
        DimensionError: unknown dims, out-of-range ints, a value of the wrong size.
        DTypeError: indices other than ints and slices.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.zeros(mesh, {"batch": 4, "io": 2}, dtype="float64", layout={"batch": "row"})
        >>> x[{"batch": slice(1, 3)}] = 5.0
        >>> x.numpy()[:, 0]
        array([0., 5., 5., 0.])
    """
    refuse_write(x, "x[...] = v", "build it with sa.where(mask, v, x) or sa.concat")
    check_host_value(v, "x[...] = v")
    note_write(x, items, v)
    ids = {d: k for d, k in items.items() if _is_ids(k)}
    if ids:
        _write_ids(x, items, ids, v)
        return
    masks = [d for d, k in items.items() if getattr(k, "dtype", None) is not None and np.dtype(k.dtype).kind == "b"]
    if masks and len(items) == 1:  # a boolean mask: see ops/indexing/mask.py
        k = items[masks[0]]
        if not isinstance(k, ShardArray):
            k = np.asarray(k)
            if k.ndim != 1:
                raise DimensionError(f"x[mask] = v: a NumPy mask for dim {masks[0]!r} must be 1-D; got {k.shape}")

            k = asarray(k, dims=(masks[0],), mesh=x.mesh)
        elif k.ndim == 1 and k.dims[0] not in x.dims:
            k = rename(k, {k.dims[0]: masks[0]})
        mask_assign(x, k, v)
        return
    box = _box(x, items)
    if x.pending:
        r = resolve_to(x)
        x.shards, x.pending = r.shards, ()
    mesh = x.mesh
    scalar = not isinstance(v, ShardArray)
    if scalar:
        arr = np.asarray(v)
        if arr.ndim:
            raise DTypeError(
                f"x[...] = v: v must be a scalar or a ShardArray; got a {type(v).__name__} of shape "
                f"{arr.shape}. Wrap it with sa.asarray(v, dims=..., mesh=x.mesh)"
            )
        arr = scalar_for_write(v, x.dtype, f"x[...] = v (the {x.dtype} array {x.sizes})")
        value = None
    else:
        common_mesh([x, v], "x[...] = v")
        value = moved_to(
            "x[...] = v",
            _value(x, v, box),
            x.spec.axes,
            "x is replicated over them (every replica needs the whole value); split the value like the "
            "selection of x to avoid it",
            "the value",
        )
        for d in x.dims:
            start, step, count, _ = box[d]
            if (start, step, count) != (0, 1, x.sizes[d]):
                value = move([value], d, x.sizes[d], [(0, 1, start, step, count)], axes=x.spec.of(d))
        value = to_axes(transpose.__wrapped__(value, x.dims), x.spec.axes, False)
    bounds = block_bounds(mesh, x.spec)
    has_data = mesh.backend.has_data

    def block(device: int, xb: Any, vb: Any) -> Any:
        if not has_data:  # meta: shapes only, nothing to write
            return xb
        index = []
        for axis, d in enumerate(x.dims):
            start, step, count, _ = box[d]
            lo, hi = bounds[device][axis]
            k0, k1 = k_range(start, step, lo, hi, count)
            if k0 >= k1:
                return xb
            a = start + k0 * step - lo
            stop = a + (k1 - k0) * step
            index.append(slice(a, None if stop < 0 else stop, step))
        out = xb.copy()
        out[tuple(index)] = arr[()] if scalar else vb[tuple(index)]  # a NumPy scalar of x's dtype: any backend
        return out

    vshards = [None] * mesh.size if scalar else cast(ShardArray, value).shards  # not scalar: value is set
    x.shards = tuple(map_blocks(mesh, x.spec.used_axes, block, range(mesh.size), x.shards, vshards))
    x.host_range = None
    x._resolved = None


__all__ = ["setitem"]
