"""Relayout (Mesh-TF §6.1) and the resolution of pending sums.

A change of layout is decomposed per dim: each dim first takes on, by a local **slice**, the next axes of its
target that no dim uses and no sum is pending over; axes a dim must give up are then released from its minor
end (an **alltoall** when another dim takes that axis next, else an **allgather**), and the axes left to take
on are a final local slice. That plan runs where no split follows its first collective: at most one alltoall,
first, allgathers after it, and no final slice over an axis of size > 1. Where a split would follow (two dims
swapping axes, as a transpose's relayout does; an axis moving to a dim that does not take it next; an allgather
before an alltoall; two alltoalls; a slice after a collective), **one alltoallv** over the axes either layout
uses sends each device exactly the entries of its new block it does not hold (``exchange_boxes``).

The bound, for every relayout of the data (``move_axes``): each device receives from the other devices at most
the entries of its new block that its old block lacks, ``|new| - |new ∩ old|`` (so at most a block), and
never an entry it then drops or sends on.

A pending sum is resolved first (``resolve``): after the same local slices over free axes, a
**reduce-scatter** for each pending axis that the target splits a dim over (along that dim: next in its axes,
or appended to them for the relayout to move on), one **allreduce** over the pending axes the target does not
use.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..array import ShardArray
from ..errors import DimensionError
from ..layout import Layout, block_bounds, make_layout
from ..mesh import AxesSpec
from .common import map_blocks, mesh_order, require_array
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


def _free_slices(
    cur: Sequence[tuple[str, ...]], target: Sequence[tuple[str, ...]], busy: frozenset[str]
) -> tuple[tuple[str, ...], ...]:
    """``cur`` with every dim that ``target`` extends taking on the next target axes that no dim uses and no sum
    is pending over (``busy``): local slices that drop only entries no device keeps."""
    out = []
    for c, t in zip(cur, target):
        n = len(c)
        if _is_prefix(c, t):
            while n < len(t) and t[n] not in busy:
                n += 1
            c = t[:n]
        out.append(c)
    return tuple(out)


def _slice_blocks(x: ShardArray, shards: Sequence[Any], have: Layout, want: Layout) -> list[Any]:
    """The blocks of ``want`` cut locally out of ``shards`` laid out as ``have`` (each dim's axes in ``want``
    extend its axes in ``have``; the pending axes of ``x`` are kept)."""
    src = block_bounds(x.mesh, have)
    dst = block_bounds(x.mesh, want)
    out: list[Any] = [None] * x.mesh.size
    for rep, devices in x.mesh.replica_classes(want.used_axes.union(x.pending)):
        index = tuple(slice(t0 - s0, t1 - s0) for (s0, _), (t0, t1) in zip(src[rep], dst[rep]))
        block = shards[rep][index]
        for d in devices:
            out[d] = block
    return out


def resolve(x: ShardArray, target: Sequence[tuple[str, ...]]) -> ShardArray:
    """Resolve the pending sum of ``x``, scattering into ``target`` where it can.

    Each dim first takes on, by local slices, the next axes of ``target`` that no dim uses and no sum is pending
    over (nothing is summed that is then dropped); a pending axis that a dim takes on next is then a
    **reduce-scatter** along it, and so is a pending axis that ``target`` splits a dim over further on (along
    that dim, appended to its axes: ``move_axes`` moves the summed pieces on); the pending axes ``target`` does
    not use are one **allreduce**.
    """
    if not x.pending:
        return x
    target = tuple(target)
    if x._resolved is not None and x._resolved[0] == target:
        return x._resolved[1]  # arrays are immutable: several consumers share one reduction
    comm = x.mesh.comm
    shards = x.shards  # immutable (a tuple, or a meta ClassList the communicator handles per class)
    busy = x.spec.used_axes.union(x.pending)
    cur = list(_free_slices(x.spec.axes, target, busy))
    if tuple(cur) != x.spec.axes:
        shards = _slice_blocks(x, shards, x.spec, x.spec.with_axes(cur))
    left = list(x.pending)
    progress = True
    while progress and left:
        progress = False
        for i in range(len(cur)):
            a = _next_axis(cur[i], target[i])
            while a is not None:
                if a in left:
                    shards = comm.reduce_scatter(shards, (a,), dim=i)
                    left.remove(a)
                    progress = True
                elif a not in busy and any(b in left for b in target[i][len(cur[i]) :]):
                    # a free axis between two pending ones: sliced before the next reduce-scatter
                    have = x.spec.with_axes(cur)
                    shards = _slice_blocks(x, shards, have, have.with_axes([*cur[:i], cur[i] + (a,), *cur[i + 1 :]]))
                else:
                    break
                cur[i] = cur[i] + (a,)
                a = _next_axis(cur[i], target[i])
    for a in list(left):  # a pending axis the target splits a dim over, not next: scattered along that dim
        for i, t in enumerate(target):
            if a in t:
                shards = comm.reduce_scatter(shards, (a,), dim=i)
                cur[i] = cur[i] + (a,)
                left.remove(a)
                break
    if left:
        shards = comm.allreduce(shards, tuple(left))
    out = ShardArray(x.mesh, x.spec.with_axes(cur), x.dtype, shards)
    x._resolved = (target, out)
    return out


def move_axes(x: ShardArray, target: Sequence[tuple[str, ...]]) -> ShardArray:
    """Bring ``x`` to the per-dim mesh axes ``target`` (a pending sum stays pending): local slices, alltoalls,
    allgathers, or one exchange of the missing pieces where those would move entries that are then dropped
    (``exchange_boxes``). Either way each device receives at most the entries of its new block it does not
    hold (see ``_plan``).

    (``movement.move`` is the other move: data along one dim, from pieces of arrays.)

    ``target`` must not use a pending axis of ``x``.
    """
    target = tuple(target)
    cur = x.spec.axes
    if cur == target:
        return x
    mesh = x.mesh
    trivial = frozenset(a for a in mesh.axis_names if mesh.axis_size(a) == 1)
    plan = _plan(cur, target, frozenset(x.pending), trivial)
    if plan is None:
        final = Layout(x.dims, x.shape, target)
        return ShardArray(mesh, final, x.dtype, exchange_boxes(x, final), x.pending)
    start, steps = plan
    comm = mesh.comm
    shards: Any = x.shards
    moved = x.spec
    if start != cur:
        moved = x.spec.with_axes(start)
        shards = _slice_blocks(x, shards, x.spec, moved)
    shards = list(shards)
    for op, axes, dim, other in steps:
        if op == "allgather":
            shards = comm.allgather(shards, axes, dim=dim)
        else:
            shards = comm.alltoall(shards, axes, split_dim=dim, concat_dim=other)
    if steps:
        moved = x.spec.with_axes(_after(start, steps))
    if moved.axes != target:
        final = x.spec.with_axes(target)
        shards = _slice_blocks(x, shards, moved, final)
        moved = final
    return ShardArray(mesh, moved, x.dtype, shards, x.pending)


_Step = tuple[str, tuple[str, ...], int, int]  # ("allgather", axes, dim, dim) or ("alltoall", axes, split, concat)


def _after(start: tuple[tuple[str, ...], ...], steps: Sequence[_Step]) -> tuple[tuple[str, ...], ...]:
    """The per-dim axes after ``steps`` from ``start``."""
    cur = list(start)
    for op, axes, dim, other in steps:
        if op == "allgather":
            cur[dim] = cur[dim][: len(cur[dim]) - len(axes)]
        else:
            cur[other] = cur[other][: len(cur[other]) - len(axes)]
            cur[dim] = cur[dim] + axes
    return tuple(cur)


def _per_dim_steps(cur: Sequence[tuple[str, ...]], target: Sequence[tuple[str, ...]]) -> tuple[_Step, ...]:
    """Mesh-TF's per-dim plan: each dim in turn gives up the axes it must from its minor end, by an alltoall
    where another dim takes them on next, else by an allgather (the dim takes on what is left by a slice)."""
    cur = list(cur)
    steps: list[_Step] = []
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
                steps.append(("allgather", tuple(gathered), i, i))
                gathered = []
            moving = cur[i][len(cur[i]) - n :]
            steps.append(("alltoall", moving, j, i))
            cur[i] = cur[i][: len(cur[i]) - n]
            cur[j] = cur[j] + moving
        if gathered:
            steps.append(("allgather", tuple(gathered), i, i))
    return tuple(steps)


@functools.lru_cache(maxsize=4096)
def _plan(
    cur: tuple[tuple[str, ...], ...],
    target: tuple[tuple[str, ...], ...],
    pending: frozenset[str],
    trivial: frozenset[str],
) -> tuple[tuple[tuple[str, ...], ...], tuple[_Step, ...]] | None:
    """``(start, steps)``: slice locally to ``start``, run ``steps``, slice to ``target``; None where only
    ``exchange_boxes`` keeps each device to the entries of its new block it does not hold.

    A plan receives only entries the device keeps when, past its first collective (one over axes of size 1
    moves nothing: ``trivial``), nothing splits a block further: an **alltoall** may come first only, the
    **allgathers** follow it, and the final slice takes on only axes of size 1. An alltoall then receives its
    new block less the piece the device holds, and each allgather the pieces of its group it lacks; a collective
    before a split would move entries the split then drops (sends on, for an alltoall's split). Mesh-TF's
    per-dim plan is tried as it is, then after local slices over the target's free axes; else the exchange.
    """
    busy = frozenset(a for axes in cur for a in axes) | pending
    for start in dict.fromkeys((cur, _free_slices(cur, target, busy))):
        steps = _per_dim_steps(start, target)
        moving = [(op, axes) for op, axes, _, _ in steps if not trivial.issuperset(axes)]
        if not moving:
            return start, steps
        final_slice = any(not trivial.issuperset(t[len(c) :]) for c, t in zip(_after(start, steps), target))
        if not final_slice and all(op == "allgather" for op, _ in moving[1:]):
            return start, steps
    return None


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
    x = require_array(x, "relayout")
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
