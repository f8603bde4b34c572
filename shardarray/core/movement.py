"""Data movement along one dim: affine pieces of source arrays into the canonical block layout.

``move(sources, dim, size, segments)`` builds an array whose ``dim`` has
``size`` entries in the canonical ceil-block layout over the sources' axes for
``dim``. Segment ``s`` says: for ``k`` in ``[0, count)``, output entry
``out_start + k * out_step`` takes entry ``src_start + k * src_step`` of
source ``s`` (steps may be negative); output entries no segment covers are
zero. Slicing (a one-segment move), concatenation (one segment per source)
and the VJP of slicing (a move of the cotangent back, zeros elsewhere) are
all moves.

Because both the source and the output blocks of ``dim`` are contiguous
ranges and the maps are affine, the entries member ``j`` of a group sends
member ``i`` are one strided slice per segment: each device computes the whole
plan locally and sends each peer exactly what that peer's output block needs,
with one ``Communicator.alltoallv_boxes`` over the dim's axes (logged as
``"alltoall"``; ``elements`` = the most any device sends to others, at most
its own block), which writes every piece straight into its place in the
receiver's new block. ``exchange`` does several dims at once (a 2-D slice is
one exchange over both dims' axes: the piece one device sends another is the
product of the dims' 1-D runs). Devices that hold replicas (other mesh axes)
exchange within their group along the dim's axes only, and on an emulated
mesh the replicas' blocks are computed once; an unsplit ``dim`` moves nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array import ShardArray
from ..chunks import group_chunk
from ..comm.base import fill_block
from ..errors import DimensionError
from ..layout import Layout
from .common import common_mesh, merged_axes
from .relayout import to_axes

Segment = tuple[int, int, int, int, int]
"""``(src_start, src_step, out_start, out_step, count)``."""


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def k_range(start: int, step: int, lo: int, hi: int, count: int) -> tuple[int, int]:
    """The ``k`` in ``[0, count)`` with ``lo <= start + k * step < hi``, as ``[k0, k1)`` (empty: k0 >= k1)."""
    if count <= 0 or lo >= hi:
        return 0, 0
    if step > 0:
        k0, k1 = _ceil_div(lo - start, step), _ceil_div(hi - start, step)
    else:
        s = -step
        k0, k1 = (start - hi) // s + 1, (start - lo) // s + 1
    return max(k0, 0), min(k1, count)


def _slice(start: int, count: int, step: int) -> slice:
    """``count`` entries from ``start`` with ``step`` as a slice (a negative step may end before 0)."""
    stop = start + count * step
    return slice(start, None if stop < 0 else stop, step)


def _index(ndim: int, axis: int, sl: slice) -> tuple[slice, ...]:
    return (slice(None),) * axis + (sl,) + (slice(None),) * (ndim - axis - 1)


class MovePlan:
    """Who sends whom which entries: ``runs[j][i]`` = the ``(segment, k0, k1)`` member j sends member i."""

    def __init__(
        self,
        src_sizes: Sequence[int],
        size: int,
        segments: Sequence[Segment],
        radix: Sequence[int],
        src_blocks: Sequence[Sequence[tuple[int, int]]] | None = None,
    ):
        n = int(np.prod(radix)) if radix else 1
        self.n = n
        self.src_blocks = (
            [list(b) for b in src_blocks]
            if src_blocks is not None
            else [[group_chunk(0, m, radix, j) for j in range(n)] for m in src_sizes]
        )
        self.out_blocks = [group_chunk(0, size, radix, i) for i in range(n)]
        self.segments = [tuple(int(v) for v in s) for s in segments]
        self.runs: list[list[list[tuple[int, int, int]]]] = []
        for j in range(n):
            row = []
            for i in range(n):
                olo, ohi = self.out_blocks[i]
                runs = []
                for s, (ss, sst, os_, ost, cnt) in enumerate(self.segments):
                    a0, a1 = k_range(ss, sst, *self.src_blocks[s][j], cnt)
                    b0, b1 = k_range(os_, ost, olo, ohi, cnt)
                    k0, k1 = max(a0, b0), min(a1, b1)
                    if k0 < k1:
                        runs.append((s, k0, k1))
                row.append(runs)
            self.runs.append(row)

    @property
    def local(self) -> bool:
        """Whether every entry stays on its device (no member sends to another)."""
        return not any(runs for j in range(self.n) for i, runs in enumerate(self.runs[j]) if i != j)

    def sent(self, j: int) -> int:
        """Entries member j sends to the others (its own piece stays)."""
        return sum(k1 - k0 for i, runs in enumerate(self.runs[j]) if i != j for _, k0, k1 in runs)


def move(
    sources: Sequence[ShardArray],
    dim: str,
    size: int,
    segments: Sequence[Segment],
    axes: tuple[str, ...] | None = None,
) -> ShardArray:
    """A new array whose ``dim`` (of ``size``) is filled from affine pieces of ``sources`` (zeros elsewhere).

    The sources share their dims (in order) and sizes except ``dim``; their
    pending sums are resolved and they are brought to one layout (the first
    source that splits a dim wins; ``dim`` goes to ``axes`` when given) before
    the move. The result keeps that layout, with ``dim`` in its canonical
    ceil-block layout.

    Collectives: one ``alltoallv`` (``alltoallv_boxes``) over ``dim``'s axes when ``dim`` is split
    and some entry changes device (each device sends at most its own block,
    exactly the entries its peers' output blocks need); nothing when ``dim`` is
    unsplit or every entry stays where it is (then a block that needs no
    reordering is a view of its source block, as NumPy's basic slicing is).

    Args:
        sources: the arrays to read from.
        dim: the dim along which entries move.
        size: the output's size along ``dim``.
        segments: per source ``(src_start, src_step, out_start, out_step, count)``.
        axes: the mesh axes that split ``dim`` in the output (default: the sources').

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(8.0), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> move([x], "i", 4, [(7, -2, 0, 1, 4)]).numpy()        # x[::-2]
        array([7., 5., 3., 1.])
    """
    mesh = common_mesh(list(sources), f"moving entries along {dim!r}")
    first = sources[0]
    for x in sources:
        if x.dims != first.dims or any(a != b for d, a, b in zip(x.dims, x.shape, first.shape) if d != dim):
            raise DimensionError(
                f"moving along {dim!r}: arrays {first.sizes} and {x.sizes} differ in dims other than {dim!r}"
            )
    per_dim = merged_axes(list(sources), first.dims)
    if axes is not None:
        for d in per_dim:
            if d != dim and set(per_dim[d]) & set(axes):
                per_dim[d] = ()
        per_dim[dim] = tuple(axes)
    target = tuple(per_dim[d] for d in first.dims)
    dtype = np.result_type(*(x.dtype for x in sources))
    srcs = [to_axes(x, target, False) for x in sources]
    axis = first.dims.index(dim)
    dim_axes = per_dim[dim]
    radix = [mesh.axis_size(a) for a in dim_axes]
    plan = MovePlan([x.shape[axis] for x in srcs], size, segments, radix)
    sizes = tuple(size if d == dim else n for d, n in zip(first.dims, first.shape))
    layout = Layout(first.dims, sizes, target)
    shards = exchange(mesh, [x.shards for x in srcs], [(axis, dim_axes, plan)], dtype)
    return ShardArray(mesh, layout, dtype, shards)


Move = tuple[int, tuple[str, ...], MovePlan]
"""``(array axis, mesh axes, plan)``: one dim's entries moved along its mesh axes."""


def _member(mesh: Any, device: int, axes: tuple[str, ...]) -> int:
    """``device``'s position in its group along ``axes`` (mixed radix, first axis major)."""
    coords, names, m = mesh.device_coords[device], mesh.axis_names, 0
    for a in axes:
        m = m * mesh.axis_size(a) + coords[names.index(a)]
    return m


def exchange(mesh: Any, sources: Sequence[Sequence[Any]], moves: Sequence[Move], dtype: Any) -> list[Any]:
    """The shards of the moves' output: member blocks of ``sources`` (one shard list per source) moved along
    several array axes at once, each within its groups along its own mesh axes.

    ``moves`` holds one ``(axis, axes, plan)`` per moving dim (disjoint mesh
    axes); at most one plan has several segments (its segment ``s`` reads
    source ``s``; the others read source 0's index range). The piece device
    ``j`` sends device ``i`` is the product over the moving dims of the 1-D
    runs its plans give for (j's member, i's member) along that dim's axes,
    so one exchange over the union of the axes does every dim at once.

    Collectives: one ``Communicator.alltoallv_boxes`` over the union of the
    moving dims' axes when some entry changes device (a device sends at most
    its own block, each piece written once into its box of the receiver's
    block); none otherwise (each output block is then its own piece, a view
    of its source block when no reordering or zero fill is needed). Replicas
    along the other mesh axes are computed once on an emulated mesh.
    """
    moves = [m for m in moves if m[2].n > 1] or list(moves[:1])
    multi = [m for m in moves if len(m[2].segments) > 1]
    if len(multi) > 1:
        raise ValueError(f"exchange: at most one moving dim may read several sources; got axes {[m[0] for m in multi]}")
    dtype = np.dtype(dtype)
    axes = tuple(a for _, ax, _ in moves for a in ax)
    local = all(plan.local for _, _, plan in moves)
    send: list[Any] = [None] * mesh.size
    boxes: list[Any] = [None] * mesh.size
    shapes: list[Any] = [None] * mesh.size
    shared: dict[tuple[Any, ...], tuple[Any, Any, Any]] = {}
    for group in mesh.groups(axes):
        members = [[_member(mesh, d, ax) for _, ax, _ in moves] for d in group]
        for pos, d in enumerate(group):
            blocks = [src[d] for src in sources]
            if blocks[0] is None:
                continue
            key = (tuple(members[pos]), *(id(b) for b in blocks))
            if key in shared:  # a replica of a device already planned: the same lists, so the result is shared
                send[d], boxes[d], shapes[d] = shared[key]
                continue
            shape = list(blocks[0].shape)
            for (axis, _, plan), m in zip(moves, members[pos]):
                lo, hi = plan.out_blocks[m]
                shape[axis] = hi - lo
            out_pieces = [_runs(moves, members[pos], members[k]) for k in range(len(group))]
            in_boxes = [_runs(moves, members[k], members[pos]) for k in range(len(group))]
            send[d], boxes[d], shapes[d] = shared[key] = (
                [[_source_piece(blocks, moves, members[pos], run, dtype) for run in runs] for runs in out_pieces],
                [[_box(moves, members[pos], run, blocks[0].ndim) for run in runs] for runs in in_boxes],
                tuple(shape),
            )
    if not local:
        return mesh.comm.alltoallv_boxes(send, axes, boxes, shapes, dtype)
    # every entry already lies on the device whose new block needs it: each block from its own pieces
    out: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        for pos, d in enumerate(group):
            if send[d] is not None:
                with mesh.backend.scope(d):
                    out[d] = fill_block(mesh.backend.xp, list(zip(boxes[d][pos], send[d][pos])), shapes[d], dtype)
    return out


Run = tuple[tuple[int, int, int], ...]
"""One ``(segment, k0, k1)`` per moving dim: a box of entries one member sends another."""


def _runs(moves: Sequence[Move], j: Sequence[int], i: Sequence[int]) -> list[Run]:
    """The boxes member ``j`` sends member ``i`` (members per moving dim): the product of the dims' 1-D runs."""
    per_dim = [plan.runs[j[m]][i[m]] for m, (_, _, plan) in enumerate(moves)]
    return list(itertools.product(*per_dim)) if all(per_dim) else []


def _source_piece(blocks: Sequence[Any], moves: Sequence[Move], j: Sequence[int], run: Run, dtype: Any) -> Any:
    """The strided view of member j's blocks that ``run`` sends (source: the multi-segment dim's segment)."""
    s = max(seg for seg, _, _ in run)
    index = [slice(None)] * blocks[s].ndim
    for (axis, _, plan), m, (seg, k0, k1) in zip(moves, j, run):
        ss, sst = plan.segments[seg][:2]
        index[axis] = _slice(ss + k0 * sst - plan.src_blocks[seg][m][0], k1 - k0, sst)
    piece = blocks[s][tuple(index)]
    return piece if piece.dtype == dtype else piece.astype(dtype)


def _box(moves: Sequence[Move], i: Sequence[int], run: Run, ndim: int) -> tuple[slice, ...]:
    """Where ``run``'s entries go in member i's new block."""
    index = [slice(None)] * ndim
    for (axis, _, plan), m, (seg, k0, k1) in zip(moves, i, run):
        os_, ost = plan.segments[seg][2:4]
        index[axis] = _slice(os_ + k0 * ost - plan.out_blocks[m][0], k1 - k0, ost)
    return tuple(index)


__all__ = ["Move", "MovePlan", "Segment", "exchange", "k_range", "move"]
