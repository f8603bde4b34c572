"""VJPs of slicing, picking, concatenation and new dims: the cotangent placed back.

The VJP of a slice is the inverse move (``movement.move`` of the cotangent
into zeros of the primal's size, one ``alltoallv`` over the dim's axes when
it is split); of a pick, a local write of the row into zeros of every block
(no communication); of a concat, slices of the cotangent; of a new size-1
dim, a sum over it (local).
"""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..core.common import map_blocks
from ..core.movement import move
from ..core.relayout import resolve_to, to_axes
from ..core.tape import Context, register_vjp
from ..layout import Layout, block_bounds
from ..ops.cotangent import match
from ..ops.indexing.basic import slice_dim
from ..ops.manipulation.structure import transpose


@register_vjp("slice_dim")
def _slice_dim(ctx: Context, g: ShardArray) -> list[Any]:
    x, dim, start, step, count = ctx.args
    g = resolve_to(g) if g.pending else g
    back = move(
        [transpose.__wrapped__(g, x.dims)], dim, x.sizes[dim], [(0, 1, start, step, count)], axes=x.spec.of(dim)
    )
    return [match(back, x), None, None, None, None]


@register_vjp("slice_dims")
def _slice_dims(ctx: Context, g: ShardArray) -> list[Any]:
    x, boxes = ctx.args
    back = resolve_to(g) if g.pending else g
    back = transpose.__wrapped__(back, x.dims)
    for dim, start, step, count in boxes:  # each dim's entries back to their places, zeros elsewhere
        back = move([back], dim, x.sizes[dim], [(0, 1, start, step, count)], axes=x.spec.of(dim))
    return [match(back, x), None]


@register_vjp("pick")
def _pick(ctx: Context, g: ShardArray) -> list[Any]:
    x, dim, i = ctx.args
    g = resolve_to(g) if g.pending else g
    axis = x.dims.index(dim)
    rest = x.dims[:axis] + x.dims[axis + 1 :]
    g = to_axes(transpose.__wrapped__(g, rest), tuple(x.spec.of(d) for d in rest), False)
    mesh, xp = x.mesh, x.mesh.backend.xp
    spec = x.spec.with_axes(x.spec.axes)
    bounds = block_bounds(mesh, spec)
    dtype = g.dtype

    def block(device: int, gb: Any) -> Any:
        lo, hi = bounds[device][axis]
        shape = tuple(b - a for a, b in bounds[device])
        out = xp.zeros(shape, dtype=dtype)
        if lo <= i < hi:
            out[(slice(None),) * axis + (i - lo,)] = gb
        return out

    shards = map_blocks(mesh, spec.used_axes, block, range(mesh.size), g.shards)
    out = ShardArray(mesh, Layout(x.dims, x.shape, x.spec.axes), dtype, shards)
    return [match(out, x), None, None]


@register_vjp("concat")
def _concat(ctx: Context, g: ShardArray) -> list[Any]:
    dim, arrays = ctx.args[0], ctx.args[1:]
    grads: list[Any] = [None]
    offset = 0
    for k, a in enumerate(arrays):
        n = a.sizes[dim]
        if ctx.needs[k + 1]:
            part = slice_dim.__wrapped__(g, dim, offset, 1, n) if (offset, n) != (0, g.sizes[dim]) else g
            grads.append(match(part, a))
        else:
            grads.append(None)
        offset += n
    return grads


@register_vjp("new_dim")
def _new_dim(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(g, ctx.args[0])] + [None] * (len(ctx.args) - 1)
