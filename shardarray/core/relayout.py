"""Relayout (Mesh-TF §6.1) and the resolution of pending sums.

A change of layout is decomposed per dim: axes a dim must give up are
released from its minor end (an **alltoall** when another dim takes that axis
next, else an **allgather**), then axes a dim must take on are acquired by a
local **slice**. Where that plan would gather entries its final slice drops
(two dims swapping axes, as a transpose's relayout does; an axis moving to a
dim that does not take it next), **one alltoallv** over the axes either
layout uses sends each device exactly the entries of its new block it does
not hold (``exchange_boxes``: at most a block per device). A pending sum is
resolved first: a **reduce-scatter** for each pending axis that the target
splits a dim over next, an **allreduce** over the rest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..array import ShardArray
from ..errors import DimensionError
from ..layout import Layout, block_bounds, make_layout
from ..mesh import AxesSpec
from .common import map_blocks, mesh_order
from .tape import differentiable


def _is_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return b[: len(a)] == a


def _next_axis(cur: tuple[str, ...], target: tuple[str, ...]) -> str | None:
    """The axis ``target`` adds next after ``cur``, when ``cur`` is a prefix of it."""
    if len(target) > len(cur) and _is_prefix(cur, target):
        return target[len(cur)]
    return None


def _alltoall_target(cur: list[tuple[str, ...]], target: Sequence[tuple[str, ...]], i: int) -> tuple[int, int] | None:
    """``(j, n)`` when the last n axes of dim i are exactly what dim j takes on next (largest n)."""
    keep = 0
    while keep < min(len(cur[i]), len(target[i])) and cur[i][keep] == target[i][keep]:
        keep += 1
    best = None
    for j in range(len(cur)):
        if j == i or not _is_prefix(cur[j], target[j]):
            continue
        wanted = target[j][len(cur[j]) :]
        for n in range(min(len(cur[i]) - keep, len(wanted)), 0, -1):
            if cur[i][len(cur[i]) - n :] == wanted[:n]:
                if best is None or n > best[1]:
                    best = (j, n)
                break
    return best


def resolve(x: ShardArray, target: Sequence[tuple[str, ...]]) -> ShardArray:
    """Resolve the pending sum of ``x``, scattering into ``target`` where it can."""
    if not x.pending:
        return x
    target = tuple(target)
    if x._resolved is not None and x._resolved[0] == target:
        return x._resolved[1]  # arrays are immutable: several consumers share one reduction
    comm = x.mesh.comm
    shards = x.shards  # immutable (a tuple, or a meta ClassList the communicator handles per class)
    cur = list(x.spec.axes)
    left = list(x.pending)
    progress = True
    while progress and left:
        progress = False
        for i in range(len(cur)):
            a = _next_axis(cur[i], target[i])
            while a is not None and a in left:
                shards = comm.reduce_scatter(shards, (a,), dim=i)
                cur[i] = cur[i] + (a,)
                left.remove(a)
                progress = True
                a = _next_axis(cur[i], target[i])
    if left:
        shards = comm.allreduce(shards, tuple(left))
    out = ShardArray(x.mesh, x.spec.with_axes(cur), x.dtype, shards)
    x._resolved = (target, out)
    return out


def move_axes(x: ShardArray, target: Sequence[tuple[str, ...]]) -> ShardArray:
    """Bring ``x`` to the per-dim mesh axes ``target`` (a pending sum stays pending): alltoalls, allgathers and
    slices, or one exchange of the missing pieces where the gathers would be sliced away (``exchange_boxes``).

    (``movement.move`` is the other move: data along one dim, from pieces of arrays.)

    ``target`` must not use a pending axis of ``x``.
    """
    target = tuple(target)
    cur = list(x.spec.axes)
    if tuple(cur) == target:
        return x
    if _gathers_then_slices(cur, target):
        final = Layout(x.dims, x.shape, target)
        return ShardArray(x.mesh, final, x.dtype, exchange_boxes(x, final), x.pending)
    comm = x.mesh.comm
    shards = list(x.shards)
    for i in range(len(cur)):
        gathered: list[str] = []
        while not _is_prefix(cur[i], target[i]):
            move_to = _alltoall_target(cur, target, i)
            if move_to is None:
                gathered.insert(0, cur[i][-1])
                cur[i] = cur[i][:-1]
                continue
            j, n = move_to
            if gathered:
                shards = comm.allgather(shards, tuple(gathered), dim=i)
                gathered = []
            moving = cur[i][len(cur[i]) - n :]
            shards = comm.alltoall(shards, moving, split_dim=j, concat_dim=i)
            cur[i] = cur[i][: len(cur[i]) - n]
            cur[j] = cur[j] + moving
        if gathered:
            shards = comm.allgather(shards, tuple(gathered), dim=i)
    moved = Layout(x.dims, x.shape, tuple(cur))
    if tuple(cur) != target:
        final = Layout(x.dims, x.shape, target)
        src = block_bounds(x.mesh, moved)
        dst = block_bounds(x.mesh, final)
        used = final.used_axes.union(x.pending)
        out: list[Any] = [None] * x.mesh.size
        for rep, devices in x.mesh.replica_classes(used):
            index = tuple(slice(t0 - s0, t1 - s0) for (s0, _), (t0, t1) in zip(src[rep], dst[rep]))
            block = shards[rep][index]
            for d in devices:
                out[d] = block
        shards = out
        moved = final
    return ShardArray(x.mesh, moved, x.dtype, shards, x.pending)


def _gathers_then_slices(cur: Sequence[tuple[str, ...]], target: Sequence[tuple[str, ...]]) -> bool:
    """Whether the per-dim plan of ``move_axes`` (alltoalls, allgathers, a final slice) would allgather data
    that its final slice then drops: a dim gives up an axis no other dim takes next while a dim takes on an
    axis by slicing. ``move_axes`` then moves exactly the pieces each device needs, in one exchange."""
    cur = list(cur)
    gathered = False
    for i in range(len(cur)):
        while not _is_prefix(cur[i], target[i]):
            move_to = _alltoall_target(cur, target, i)
            if move_to is None:
                gathered = True
                cur[i] = cur[i][:-1]
                continue
            j, n = move_to
            cur[j] = cur[j] + cur[i][len(cur[i]) - n :]
            cur[i] = cur[i][: len(cur[i]) - n]
    return gathered and tuple(cur) != tuple(target)


def exchange_boxes(x: ShardArray, final: Layout) -> list[Any]:
    """The blocks of ``x`` in ``final`` (same dims and sizes; pending axes untouched), by **one alltoallv**
    over the mesh axes either layout uses: each device receives exactly the entries of its new block that it
    does not hold, each from one holder (itself where it holds them, else, of the replicas that hold them, the
    one that has sent least so far, the first in its group at or after it on a tie), and sends nothing else.

    Per device this receives at most its new block, and a holder sends a piece to at most as many devices as
    the piece's receivers per holder (rounded up): one block where the new layout has no more replicas than
    the old; the allgather-then-slice plan it replaces moves whole gathered blocks. The emulated mesh passes a
    block that is exactly one piece without a copy.
    """
    mesh = x.mesh
    axes = mesh_order(mesh, set(x.spec.used_axes) | set(final.used_axes))
    src = block_bounds(mesh, x.spec)
    dst = block_bounds(mesh, final)
    send: list[Any] = [None] * mesh.size
    boxes: list[Any] = [None] * mesh.size
    shapes: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        k = len(group)
        outgoing: list[list[list[Any]]] = [[[] for _ in range(k)] for _ in range(k)]  # [sender][receiver]
        load = [0] * k  # entries each member sends so far
        for r, rd in enumerate(group):
            want = dst[rd]
            shapes[rd] = tuple(b - a for a, b in want)
            boxes[rd] = [[] for _ in range(k)]
            holders: dict[tuple[tuple[int, int], ...], list[int]] = {}  # a source block (its bounds) -> its holders
            for step in range(k):  # itself first, then the next members
                j = (r + step) % k
                holders.setdefault(src[group[j]], []).append(j)
            for have, js in holders.items():
                box = tuple((max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in zip(have, want))
                if any(lo >= hi for lo, hi in box):  # no entry of the block is wanted here
                    continue
                # itself where it holds them, else the replica that has sent least so far (the first of them from
                # here on): a block wanted by more devices than hold it is sent by its holders in turn
                j = r if js[0] == r else min(js, key=lambda h: load[h])
                load[j] += 0 if j == r else math.prod(hi - lo for lo, hi in box)
                outgoing[j][r].append(tuple(slice(lo - a0, hi - a0) for (lo, hi), (a0, _) in zip(box, have)))
                boxes[rd][j].append(tuple(slice(lo - b0, hi - b0) for (lo, hi), (b0, _) in zip(box, want)))
        for j, sd in enumerate(group):
            block = x.shards[sd]
            if block is not None:
                send[sd] = [[block[index] for index in outgoing[j][r]] for r in range(k)]
    return mesh.comm.alltoallv_boxes(send, axes, boxes, shapes, x.dtype)


@differentiable("relayout")
def relayout(x: ShardArray, layout: Mapping[str, AxesSpec] | Layout | None) -> ShardArray:
    """``x`` with the given layout, its pending sum resolved (see ``ShardArray.relayout``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.zeros(mesh, {"batch": 8, "io": 4}, layout={"batch": "row"})
        >>> sa.relayout(x, {"batch": ("row", "col")}).layout    # a local slice
        {'batch': ('row', 'col')}
    """
    target = make_layout(x.mesh, x.dims, x.shape, layout, what=f"relayout of array {x.dims}").axes
    return move_axes(resolve(x, target), target)


@differentiable("relayout")
def resolve_to(x: ShardArray, layout: Mapping[str, AxesSpec] | None = None) -> ShardArray:
    """``x.resolve(layout)``: resolve the pending sum, keeping the layout (None) or into ``layout``."""
    if layout is not None:
        return relayout.__wrapped__(x, layout)
    return resolve(x, x.spec.axes)


def to_axes(x: ShardArray, target: Sequence[tuple[str, ...]], keep_pending: bool) -> ShardArray:
    """Internal relayout used by the ops: keep the pending sum or resolve it first."""
    if not keep_pending:
        x = resolve(x, target)
    return move_axes(x, target)


def permute_dims(x: ShardArray, dims: tuple[str, ...]) -> ShardArray:
    """``x`` with its dims in the order ``dims``, each block transposed where it is (no data moves; a pending sum
    stays), off the tape: ``sa.transpose`` is this op, recorded; the algorithms call it on values they make.

    Example (a 2×2 mesh):
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("i", "j"), mesh=mesh, layout={"i": "row"})
        >>> permute_dims(x, ("j", "i")).dims
        ('j', 'i')
    """
    if dims == x.dims:
        return x
    if sorted(dims) != sorted(x.dims) or len(set(dims)) != len(dims):
        raise DimensionError(
            f"transpose{tuple(dims)} is not a permutation of the array's dims {x.dims}; name each dim once"
        )
    perm = tuple(x.dims.index(d) for d in dims)
    if perm == tuple(range(x.ndim)):
        return x
    spec = x.spec
    layout = Layout(dims, tuple(spec.sizes[p] for p in perm), tuple(spec.axes[p] for p in perm))
    xp = x.mesh.backend.xp
    shards = map_blocks(x.mesh, spec.used_axes.union(x.pending), lambda s: xp.transpose(s, perm), x.shards)
    return ShardArray(x.mesh, layout, x.dtype, shards, x.pending)


__all__ = ["move_axes", "permute_dims", "relayout", "resolve", "resolve_to", "to_axes"]
