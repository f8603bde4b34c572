"""VJPs of the scans and of top_k: reverse cumsum (cumsum), reverse cumsum of g*y over x (cumprod), scatter (top_k)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..layout import block_bounds
from ..ops import elementwise as ew
from ..ops.common import map_blocks, new_array
from ..ops.relayout import to_axes
from ..ops.scan import scan
from ..ops.structure import transpose
from .common import match
from .tape import Context, register_vjp


def _dim(ctx: Context) -> str:
    x = ctx.args[0]
    dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("dim")
    if dim is None:
        return x.dims[0]
    return dim if isinstance(dim, str) else x.dims[int(dim)]


@register_vjp("cumsum")
def _cumsum(ctx: Context, g: ShardArray) -> list[Any]:
    x = ctx.args[0]
    g = match(g, ctx.out).resolve()
    gx = scan(g, _dim(ctx), "sum", reverse=True, dtype=g.dtype)
    return [match(gx.astype(x.dtype), x)] + [None] * (len(ctx.args) - 1)


@register_vjp("cumprod")
def _cumprod(ctx: Context, g: ShardArray) -> list[Any]:
    x, y = ctx.args[0], ctx.out
    g = match(g, y).resolve()
    r = scan(ew.multiply(g, y), _dim(ctx), "sum", reverse=True)
    return [match(ew.divide(r, x).astype(x.dtype), x)] + [None] * (len(ctx.args) - 1)


@register_vjp("top_k")
def _top_k(ctx: Context, g: ShardArray) -> list[Any]:
    x, _, dim, _, box = ctx.args
    idx = box[0]
    g = to_axes(transpose.__wrapped__(match(g, ctx.out), idx.dims), idx.spec.axes, False)
    mesh, xp = x.mesh, x.mesh.backend.xp
    i = x.dims.index(dim)
    bounds = block_bounds(mesh, x.spec)
    # g and idx: new_dim unsplit, other dims on x's axes: each device scatters into its own block of x
    def local(dev: int, gb: Any, ib: Any) -> Any:
        lo, hi = bounds[dev][i]
        shape = tuple(b - a for a, b in bounds[dev])
        out = xp.zeros(shape, dtype=x.dtype)
        inside = (ib >= lo) & (ib < hi)
        rel = np.where(inside, ib - lo, 0)
        vals = xp.where(inside, gb, 0).astype(x.dtype)
        grid = list(np.indices(rel.shape, sparse=True))
        grid[i] = rel
        np.add.at(out, tuple(grid), vals)
        return out

    shards = map_blocks(mesh, x.spec.used_axes, local, range(mesh.size), g.shards, idx.shards)
    gx = new_array(mesh, x.dims, x.sizes, dict(zip(x.dims, x.spec.axes)), shards, dtype=x.dtype)
    return [gx, None, None, None, None]
