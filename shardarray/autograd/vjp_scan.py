"""VJPs of the scans and of top_k: reverse cumsum (cumsum), reverse cumsum of g*y over x (cumprod), scatter (top_k)."""

from __future__ import annotations

from typing import Any, cast

from ..array import ShardArray
from ..core.common import map_blocks, new_array
from ..core.relayout import resolve_to, to_axes
from ..core.tape import Context, register_vjp
from ..layout import block_bounds
from ..ops.cotangent import match
from ..ops.elementwise import arithmetic as ew
from ..ops.elementwise import logical
from ..ops.manipulation.structure import astype, transpose
from ..ops.reduction.scan import scan


def _dim(ctx: Context) -> str:
    x = ctx.args[0]
    dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("dim")
    if dim is None:
        return x.dims[0]
    return dim if isinstance(dim, str) else x.dims[int(dim)]


@register_vjp("cumsum")
def _cumsum(ctx: Context, g: ShardArray) -> list[Any]:
    x = ctx.args[0]
    g = resolve_to(cast(ShardArray, match(g, ctx.out)))  # out is an array
    gx = scan(g, _dim(ctx), "sum", reverse=True, dtype=g.dtype)
    return [match(astype(gx, x.dtype), x)] + [None] * (len(ctx.args) - 1)


@register_vjp("cumprod")
def _cumprod(ctx: Context, g: ShardArray) -> list[Any]:
    """``x̄_k = Σ_{i≥k} ȳ_i y_i / x_k`` where ``x_k != 0``. At the first zero ``k0`` of a row, which that
    formula would divide by, ``x̄_k0 = (Π_{j<k0} x_j) Σ_{i≥k0} ȳ_i Π_{k0<j≤i} x_j``; after it every gradient is
    0 (the prefix holds the zero), which the division formula gives too, as ``y`` is 0 there."""
    x, y = ctx.args[0], ctx.out
    dim = _dim(ctx)
    g = resolve_to(cast(ShardArray, match(g, y)))  # y (out) is an array
    r = scan(ew.multiply(g, y), dim, "sum", reverse=True)
    nz = ew.not_equal(x, 0.0)
    gx = ew.where(nz, ew.divide(r, ew.where(nz, x, 1.0)), 0.0)
    zeros_upto = scan(ew.where(nz, 0.0, 1.0), dim, "sum")  # zeros at or before each position
    first = logical.logical_and(logical.logical_not(nz), ew.equal(zeros_upto, 1.0))
    before = ew.equal(zeros_upto, 0.0)
    prefix = scan(ew.where(before, x, 1.0), dim, "prod")  # Π_{j≤k} x_j before the first zero; constant after
    after = scan(ew.where(ew.greater(zeros_upto, 0.0), ew.where(first, 1.0, x), 1.0), dim, "prod")
    tail = scan(ew.multiply(g, after), dim, "sum", reverse=True)  # Σ_{i≥k} ȳ_i Π_{k0<j≤i} x_j at k = k0
    gx = ew.add(gx, ew.where(first, ew.multiply(prefix, tail), 0.0))
    return [match(astype(gx, x.dtype), x)] + [None] * (len(ctx.args) - 1)


@register_vjp("top_k")
def _top_k(ctx: Context, g: ShardArray) -> list[Any]:
    """Scatter the cotangent back through top_k's indices, each device into its own block of ``x``.

    The ``k`` indices of a row are distinct, so the scatter is a ``put_along_axis`` (no sums, any dtype):
    entries whose index lies in another device's block go to one spare slot past the block's end, which is
    then dropped (it also makes empty blocks work). On the backend's array module; no communication.
    """
    x, _, dim, _, box = ctx.args
    idx = box[0]
    g = to_axes(transpose.__wrapped__(cast(ShardArray, match(g, ctx.out)), idx.dims), idx.spec.axes, False)
    mesh, xp = x.mesh, x.mesh.backend.xp
    i = x.dims.index(dim)
    bounds = block_bounds(mesh, x.spec)

    # g and idx: new_dim unsplit, other dims on x's axes: each device scatters into its own block of x
    def local(dev: int, gb: Any, ib: Any) -> Any:
        lo, hi = bounds[dev][i]
        shape = [b - a for a, b in bounds[dev]]
        shape[i] += 1  # the spare slot
        out = xp.zeros(tuple(shape), dtype=x.dtype)
        rel = xp.where((ib >= lo) & (ib < hi), ib - lo, hi - lo)
        xp.put_along_axis(out, rel, gb.astype(x.dtype), axis=i)
        return xp.ascontiguousarray(out[(slice(None),) * i + (slice(0, hi - lo),)])

    shards = map_blocks(mesh, x.spec.used_axes, local, range(mesh.size), g.shards, idx.shards)
    gx = new_array(mesh, x.dims, x.sizes, dict(zip(x.dims, x.spec.axes)), shards, dtype=x.dtype)
    return [gx, None, None, None, None]
