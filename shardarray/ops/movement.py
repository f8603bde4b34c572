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
with one ``Communicator.alltoallv`` over the dim's axes (logged as
``"alltoall"``; ``elements`` = the most any device sends to others, at most
its own block). Devices that hold replicas (other mesh axes) exchange within
their group along the dim's axes only; an unsplit ``dim`` moves nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import DimensionError
from ..layout import Layout, group_chunk
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

    def __init__(self, src_sizes: Sequence[int], size: int, segments: Sequence[Segment], radix: Sequence[int],
                 src_blocks: Sequence[Sequence[tuple[int, int]]] | None = None):
        n = int(np.prod(radix)) if radix else 1
        self.n = n
        self.src_blocks = ([list(b) for b in src_blocks] if src_blocks is not None else
                           [[group_chunk(0, m, radix, j) for j in range(n)] for m in src_sizes])
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

    def pieces(self, xp: Any, blocks: Sequence[Any], j: int, axis: int, empty: Any) -> list[Any]:
        """What member j sends each member: its blocks' strided slices, concatenated per receiver."""
        out = []
        for i in range(self.n):
            parts = []
            for s, k0, k1 in self.runs[j][i]:
                ss, sst = self.segments[s][:2]
                lo = self.src_blocks[s][j][0]
                parts.append(blocks[s][_index(blocks[s].ndim, axis, _slice(ss + k0 * sst - lo, k1 - k0, sst))])
            out.append(empty if not parts else parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=axis))
        return out

    def place(self, xp: Any, buf: Any, i: int, axis: int, shape: tuple[int, ...], dtype: Any) -> Any:
        """Member i's output block from the pieces received (``buf``, concatenated in member order)."""
        olo, ohi = self.out_blocks[i]
        places, pos = [], 0
        for j in range(self.n):
            for s, k0, k1 in self.runs[j][i]:
                os_, ost = self.segments[s][2:4]
                places.append((pos, k1 - k0, os_ + k0 * ost - olo, ost))
                pos += k1 - k0
        expect = 0
        for p, c, o, st in places:  # the pieces already lie in order: the buffer is the block
            if st != 1 and c > 1 or o != expect or p != expect:
                break
            expect += c
        else:
            if expect == ohi - olo:
                return buf
        out = xp.zeros(shape, dtype=dtype)
        if not hasattr(out, "__setitem__"):  # meta shapes: nothing to write
            return out
        for p, c, o, st in places:
            out[_index(len(shape), axis, _slice(o, c, st))] = buf[_index(len(shape), axis, slice(p, p + c))]
        return out


def move(
    sources: Sequence[ShardArray], dim: str, size: int, segments: Sequence[Segment],
    axes: tuple[str, ...] | None = None,
) -> ShardArray:
    """A new array whose ``dim`` (of ``size``) is filled from affine pieces of ``sources`` (zeros elsewhere).

    The sources share their dims (in order) and sizes except ``dim``; their
    pending sums are resolved and they are brought to one layout (the first
    source that splits a dim wins; ``dim`` goes to ``axes`` when given) before
    the move. The result keeps that layout, with ``dim`` in its canonical
    ceil-block layout.

    Collectives: one ``alltoallv`` over ``dim``'s axes when ``dim`` is split
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
    shards = exchange(mesh, [x.shards for x in srcs], axis, dim_axes, plan, dtype)
    return ShardArray(mesh, layout, dtype, shards)


def exchange(
    mesh: Any, sources: Sequence[Sequence[Any]], axis: int, axes: tuple[str, ...], plan: MovePlan, dtype: Any,
) -> list[Any]:
    """The shards of ``plan``'s output: member blocks of ``sources`` (one shard list per source) moved along
    array axis ``axis`` within each group along ``axes``.

    One ``Communicator.alltoallv`` over ``axes`` when some entry changes device;
    none otherwise (each output block is then its own piece: a view of its
    source block when no reordering or zero fill is needed).
    """
    xp = mesh.backend.xp
    send: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        for j, d in enumerate(group):
            blocks = [src[d] for src in sources]
            if blocks[0] is None:
                continue
            blocks = [b if b.dtype == dtype else b.astype(dtype) for b in blocks]
            empty_shape = blocks[0].shape[:axis] + (0,) + blocks[0].shape[axis + 1:]
            send[d] = plan.pieces(xp, blocks, j, axis, xp.zeros(empty_shape, dtype=dtype))
    if plan.n > 1 and not plan.local:
        recv = mesh.comm.alltoallv(send, axes, axis)
    else:  # every entry already lies on the device whose new block needs it: no exchange
        recv = [None] * mesh.size
        for group in mesh.groups(axes):
            for i, d in enumerate(group):
                recv[d] = None if send[d] is None else send[d][i]
    shards: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        for i, d in enumerate(group):
            if recv[d] is None:
                continue
            olo, ohi = plan.out_blocks[i]
            shape = recv[d].shape[:axis] + (ohi - olo,) + recv[d].shape[axis + 1:]
            shards[d] = plan.place(xp, recv[d], i, axis, shape, dtype)
    return shards


__all__ = ["MovePlan", "Segment", "exchange", "k_range", "move"]
