"""Reshapes by name: ``split_dim`` (one dim into several) and ``merge_dims`` (several into one).

Both keep the data where it is when the block layout allows: a dim of size
``n = m·r`` split over axes A keeps A on its first new dim (size m) when every
device's block ``[s, e)`` of the old dim is ``[s'·r, e'·r)`` for its canonical
(nested ceil-chunk) block ``[s', e')`` of the first new dim; then the reshape is
local. Otherwise the split axes are **parked** on another dim of the array by
one alltoall, the reshape runs locally, and a second alltoall brings them to
the first new (merged) dim: traffic about 2·(k−1)/k of a block per device,
never the whole dim. Only when no other dim is large enough to park on (at
least one element per device) are the axes allgathered (``(k−1)`` blocks) and
the result sliced locally. Either way the result has the same layout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ...array import ShardArray
from ...core.common import dims_arg, map_blocks, one_dim_arg, require_array
from ...core.relayout import move_axes
from ...core.tape import differentiable
from ...errors import DimensionError
from ...layout import Layout, block_bounds, check_dims
from .structure import transpose


def _new_sizes(x: ShardArray, dim: str, sizes: Any, what: str) -> dict[str, int]:
    """``sizes`` checked: names, integers, at most one -1 (inferred), product equal to the dim's size."""
    n = x.sizes[dim]
    if not isinstance(sizes, Mapping) or not sizes:
        raise DimensionError(
            f"{what}: the new dims are a non-empty dict {{name: size}}, e.g. {{'heads': 8, 'd_kv': -1}}; got {sizes!r}"
        )
    names = check_dims(tuple(sizes), what=what)
    clash = [d for d in names if d in x.dims and d != dim]
    if clash:
        raise DimensionError(
            f"{what}: new dim(s) {clash} already name dims of the array {x.sizes}; choose other names "
            f"(or rename those dims first)"
        )
    out: dict[str, int] = {}
    for d, v in sizes.items():
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise DimensionError(f"{what}: the size of new dim {d!r} must be an integer; got {v!r}")
        v = int(v)
        if v < -1:
            raise DimensionError(
                f"{what}: the size of new dim {d!r} is {v}; sizes are >= 0, or -1 for one inferred size"
            )
        out[d] = v
    infer = [d for d, v in out.items() if v == -1]
    known = math.prod(v for v in out.values() if v != -1)
    if len(infer) > 1:
        raise DimensionError(
            f"{what}: new dims {infer} all have size -1; at most one size may be inferred. Give the others explicitly"
        )
    if infer:
        if known == 0 or n % known:
            raise DimensionError(
                f"{what}: cannot infer the size of {infer[0]!r}: dim {dim!r} has size {n}, which is not a multiple "
                f"of the other new sizes' product {known} {dict(sizes)}"
            )
        out[infer[0]] = n // known
    elif known != n:
        raise DimensionError(
            f"{what}: the new sizes {dict(sizes)} multiply to {known}, but dim {dim!r} has size {n}; "
            f"give sizes whose product is {n} (one may be -1 to infer it)"
        )
    return out


def _park_dim(x: ShardArray, free: Sequence[int], keep: Sequence[int] = ()) -> int | None:
    """The dim (not in ``free`` or ``keep``) with the most entries per device, if it has at least one entry per
    device of the axes of ``free`` once they are added to it; else None."""
    k = math.prod(x.mesh.axis_size(a) for i in free for a in x.spec.axes[i])
    best, room = None, 0
    for j, (n, own) in enumerate(zip(x.shape, x.spec.axes)):
        if j in free or j in keep:
            continue
        per = n // math.prod(x.mesh.axis_size(a) for a in own)
        if per >= k and per > room:
            best, room = j, per
    return best


def _park(x: ShardArray, free: Sequence[int], best: int | None) -> ShardArray:
    """Free the axes of dims ``free`` of ``x``: alltoall them onto dim ``best``, or allgather them (None)."""
    axes = tuple(a for i in free for a in x.spec.axes[i])
    target = [() if i in free else a for i, a in enumerate(x.spec.axes)]
    if best is not None:
        target[best] = x.spec.axes[best] + axes
    return move_axes(x, target)


def _local(x: ShardArray, dims: tuple[str, ...], sizes: dict[str, int], axes: list[tuple[str, ...]]) -> ShardArray:
    """Reshape every block of ``x`` to the dims ``dims`` whose blocks follow from ``axes`` (no data moves)."""
    spec = Layout(dims, tuple(sizes[d] for d in dims), tuple(axes))
    bounds = block_bounds(x.mesh, spec)
    out: list[Any] = [None] * x.mesh.size
    scope = x.mesh.backend.scope
    for rep, devices in x.mesh.replica_classes(spec.used_axes.union(x.pending)):
        with scope(rep):
            block = x.shards[rep].reshape(tuple(e - s for s, e in bounds[rep]))
        for d in devices:
            out[d] = block
    return ShardArray(x.mesh, spec, x.dtype, out, x.pending)


def _reshape(x: ShardArray, i: int, count: int, dims: tuple[str, ...], sizes: dict[str, int]) -> ShardArray:
    """Reshape dims ``i .. i+count-1`` of ``x`` so the result has dims ``dims``; the axes of the old dims (major
    first) go to new dim ``i``. Data moves only when the blocks require it (see the module doc)."""
    moved = tuple(a for axes in x.spec.axes[i : i + count] for a in axes)
    new_count = len(dims) - (x.ndim - count)
    r_old = math.prod(x.shape[i + 1 : i + count])
    r_new = math.prod(sizes[d] for d in dims[i + 1 : i + new_count])

    def axes_for(cur: Sequence[tuple[str, ...]], a: tuple[str, ...]) -> list[tuple[str, ...]]:
        return list(cur[:i]) + [a] + [()] * (new_count - 1) + list(cur[i + count :])

    target = Layout(dims, tuple(sizes[d] for d in dims), tuple(axes_for(x.spec.axes, moved)))
    minor_free = not any(x.spec.axes[i + 1 : i + count])
    if math.prod(x.shape[i : i + count]) <= 1:  # one entry (or none): on the devices at coordinate 0 either way
        return _local(x, dims, sizes, list(target.axes))
    if not moved or (minor_free and _fits(x, i, r_old, target, r_new)):
        return _local(x, dims, sizes, list(target.axes))
    major = x.spec.axes[i]
    if not minor_free:  # the smallest relayout: the minor dims' axes move to another dim, the major keeps its own
        kept = Layout(dims, target.sizes, tuple(axes_for(x.spec.axes, major)))
        best = _park_dim(x, range(i + 1, i + count), keep=(i,))
        if best is not None and (not major or _fits(x, i, r_old, kept, r_new)):
            parked = _park(x, range(i + 1, i + count), best)
            return _local(parked, dims, sizes, axes_for(parked.spec.axes, major))
    free = range(i, i + count)
    parked = _park(x, free, _park_dim(x, free))
    flat = _local(parked, dims, sizes, axes_for(parked.spec.axes, ()))
    return move_axes(flat, target.axes)


def _fits(x: ShardArray, i: int, r_old: int, target: Layout, r_new: int) -> bool:
    """Whether, on every device, the flat range of its block of old dims ``i..`` (dim i's block times ``r_old``)
    is the flat range of its canonical block of new dim ``i`` in ``target`` (times ``r_new``)."""
    if r_old == 0 or r_new == 0:
        return True
    old_b, new_b = block_bounds(x.mesh, x.spec), block_bounds(x.mesh, target)
    return all((o[i][0] * r_old, o[i][1] * r_old) == (n[i][0] * r_new, n[i][1] * r_new) for o, n in zip(old_b, new_b))


@differentiable("split_dim")
def split_dim(x: ShardArray, dim: Any, sizes: Mapping[str, int]) -> ShardArray:
    """Split one dim into several (row-major, as ``np.reshape``): ``dim`` becomes the dims of ``sizes``, in place.

    Args:
        x: the array.
        dim: the dim to split (a name or a position).
        sizes: ``{new_dim: size}`` in major-to-minor order; the sizes multiply to
            the dim's size, and one may be ``-1`` (inferred).

    Returns:
        The array with ``dim`` replaced by the new dims. A split ``dim`` keeps its
        mesh axes on the **first** new dim. No collective when every device's
        block of ``dim`` is a whole number of rows of the new minor dims in the
        canonical layout of the first new dim (always when that dim's size is a
        multiple of the axes' sizes); otherwise two alltoalls over the dim's axes
        (park the axes on another dim, reshape, bring them back), or, with no
        dim to park on, one allgather over them. When the first new dim has
        size 1 (and another does not) the axes go with the data into the others
        first, then onto the size-1 dim by one alltoall (the inverse of
        ``sa.squeeze``; so the gradient of a ``merge_dims`` of split size-1
        dims is no allgather either). A pending sum stays pending.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(16.0).reshape(2, 8), dims=("batch", "hidden"), mesh=mesh, layout={"hidden": "col"})
        >>> with sa.comm_log() as log:
        ...     y = x.split_dim("hidden", {"heads": 2, "d_kv": -1})
        >>> y.sizes, y.layout, len(log.records)
        ({'batch': 2, 'heads': 2, 'd_kv': 4}, {'heads': ('col',)}, 0)
        >>> bool((y.numpy() == x.numpy().reshape(2, 2, 4)).all())
        True
    """
    x = require_array(x, "split_dim")
    dim = one_dim_arg(x, dim, "split_dim", "split", none_on_1d=True)
    new = _new_sizes(x, dim, sizes, f"split_dim({dim!r}, {dict(sizes) if isinstance(sizes, Mapping) else sizes!r})")
    i = x.dims.index(dim)
    dims = x.dims[:i] + tuple(new) + x.dims[i + 1 :]
    all_sizes = {**{d: n for d, n in x.sizes.items() if d != dim}, **new}
    first = next(iter(new.values()))
    split = any(x.mesh.axis_size(a) > 1 for a in x.spec.of(dim))
    if first == 1 and split and any(n != 1 for n in new.values()):
        return _split_into_one(x, i, dims, new, all_sizes)
    return _reshape(x, i, 1, dims, all_sizes)


def _split_into_one(
    x: ShardArray, i: int, dims: tuple[str, ...], new: dict[str, int], sizes: dict[str, int]
) -> ShardArray:
    """``split_dim`` of the split dim ``i`` whose first new dim has size 1: split it into the new dims of other
    sizes (their first keeps the axes), add the size-1 ones locally, then move the axes onto the first new dim
    by one alltoall (the inverse of ``sa.squeeze``: each device keeps or sends only its own block)."""
    rest = tuple(d for d, n in new.items() if n != 1)
    mid = _reshape(x, i, 1, x.dims[:i] + rest + x.dims[i + 1 :], sizes)
    axes = dict(zip(mid.dims, mid.spec.axes))
    full = _local(mid, dims, sizes, [axes.get(d, ()) for d in dims])
    target = [() if d in new else a for d, a in zip(dims, full.spec.axes)]
    target[i] = x.spec.axes[i]
    return move_axes(full, target)


@differentiable("merge_dims")
def merge_dims(x: ShardArray, dims: Sequence[Any], new: str) -> ShardArray:
    """Merge several dims into one (row-major: ``dims[0]`` is the major one), as ``np.reshape`` does.

    The merged dim takes the place of the first of ``dims`` in ``x``'s dim order;
    dims that are not adjacent (or not in the given order) are first transposed
    locally. The merged dim gets the mesh axes of the merged dims, major first.

    Collectives: none when only the major dim is split and its blocks, times the
    minor sizes, are the canonical blocks of the merged dim (always when its
    size is a multiple of its axes' sizes). When a minor dim is split, the
    smallest relayout: its axes move to another dim of the array (the largest
    with at least one entry per device) by one alltoall over them ((k−1)/k of
    a block per device), and the merged dim keeps the major dim's axes, so
    the result's layout has those axes on that other dim (as NumPy users
    expect of ``reshape(2n, n/2)`` on a 2-D split: axis 0 over the first mesh
    axis, axis 1 over the second). Otherwise (uneven major blocks) the merged
    dims' axes are parked on another dim by an alltoall, the blocks are merged
    locally and an alltoall brings the axes to the merged dim (about
    2·(k−1)/k of a block per device); with no dim large enough to park on, an
    allgather over them. Merged size-1 dims split over mesh axes are dropped
    first: their axes move onto the first other merged dim by one alltoall
    (each device receives only its new block, as ``sa.squeeze``), so merging
    ``("one", "q")`` of a ``(2, 1, 8)`` array with ``"one"`` over 8 devices
    moves 112 wire bytes instead of an allgather's 896; the layout is the
    same (the merged dim has the merged dims' axes). A pending sum stays pending.

    Args:
        x: the array.
        dims: the dims to merge (names or positions), major first.
        new: the merged dim's name (may reuse one of ``dims``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(16.0).reshape(2, 2, 4), dims=("batch", "heads", "d_kv"), mesh=mesh,
        ...                layout={"heads": "col"})
        >>> with sa.comm_log() as log:
        ...     y = x.merge_dims(("heads", "d_kv"), "hidden")
        >>> y.sizes, y.layout, len(log.records)
        ({'batch': 2, 'hidden': 8}, {'hidden': ('col',)}, 0)
    """
    x = require_array(x, "merge_dims")
    if isinstance(dims, str) or not isinstance(dims, Sequence) or not dims:
        raise DimensionError(
            f"merge_dims: dims is a non-empty tuple of dims to merge, major first, e.g. ('heads', 'd_kv'); "
            f"got {dims!r}. The array's dims are {x.dims}"
        )
    dims = dims_arg(x, tuple(dims), "merge_dims")
    if not isinstance(new, str):
        raise DimensionError(f"merge_dims: the merged dim's name must be a string; got {new!r}")
    check_dims((new,), what="merge_dims")
    if new in x.dims and new not in dims:
        raise DimensionError(
            f"merge_dims: the merged name {new!r} is already a dim of the array {x.sizes} that is not merged; "
            f"choose another name"
        )
    i = min(x.dims.index(d) for d in dims)
    rest = [d for d in x.dims if d not in dims]
    order = tuple(rest[:i]) + dims + tuple(rest[i:])
    x = transpose.__wrapped__(x, order)
    out_dims = order[:i] + (new,) + order[i + len(dims) :]
    sizes = {d: n for d, n in x.sizes.items() if d not in dims}
    sizes[new] = math.prod(x.sizes[d] for d in dims)
    count = len(dims)
    ones = [j for j in range(i, i + count) if x.shape[j] == 1]
    mesh = x.mesh
    if 0 < len(ones) < count and any(mesh.axis_size(a) > 1 for j in ones for a in x.spec.axes[j]):
        x = _drop_ones(x, i, count, ones)
        count -= len(ones)
        if count == 1:  # the one dim left is the merged dim: a rename
            spec = Layout(out_dims, tuple(sizes[d] for d in out_dims), x.spec.axes)
            return ShardArray(mesh, spec, x.dtype, x.shards, x.pending)
    return _reshape(x, i, count, out_dims, sizes)


def _drop_ones(x: ShardArray, i: int, count: int, ones: Sequence[int]) -> ShardArray:
    """``x`` without its size-1 dims ``ones`` among the merged dims ``i .. i+count-1``: their mesh axes (in the
    merged dims' order, major first, with those of the first other merged dim) move onto the first other merged
    dim by one alltoall (``move_axes``), whose canonical blocks the merge then keeps; each device then takes the
    one index of the dropped dims. A pending sum stays pending."""
    first = next(j for j in range(i, i + count) if j not in ones)
    target = [() if j in ones else a for j, a in enumerate(x.spec.axes)]
    target[first] = tuple(a for j in range(i, i + count) if j in ones or j == first for a in x.spec.axes[j])
    x = move_axes(x, target)
    keep = tuple(j for j in range(x.ndim) if j not in ones)
    spec = Layout(tuple(x.dims[j] for j in keep), tuple(x.shape[j] for j in keep), tuple(target[j] for j in keep))
    index = tuple(0 if j in ones else slice(None) for j in range(x.ndim))
    shards = map_blocks(x.mesh, spec.used_axes.union(x.pending), lambda s: s[index], x.shards)
    return ShardArray(x.mesh, spec, x.dtype, shards, x.pending)


__all__ = ["merge_dims", "split_dim"]
