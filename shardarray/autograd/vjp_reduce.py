"""VJPs of the reductions: sum, mean, max, min, logsumexp, softmax."""

from __future__ import annotations

import math
from typing import Any, cast

from ..array import ShardArray
from ..backend import cuda_kernels
from ..core.relayout import resolve_to
from ..core.tape import Context, register_vjp
from ..ops.cotangent import match
from ..ops.elementwise.arithmetic import apply
from ..ops.fused import dispatch as fused
from ..ops.manipulation.structure import expand
from ..ops.reduction import reduce as red


@register_vjp("sum")
def _sum(ctx: Context, g: ShardArray) -> list[Any]:
    # the gradient of a sum is the cotangent repeated along the summed dims
    return [expand(g, ctx.args[0].spec)]


@register_vjp("mean")
def _mean(ctx: Context, g: ShardArray) -> list[Any]:
    # the cotangent divided by the count, repeated along the averaged dims (a pending g stays pending)
    x, out = ctx.args[0], ctx.out
    count = math.prod(n for d, n in x.sizes.items() if d not in out.dims)
    return [expand(g * (1.0 / count if count else float("nan")), x.spec)]


def _extreme(ctx: Context, g: ShardArray) -> list[Any]:
    # the gradient goes to the positions that reached the extreme, shared equally among ties
    x, out = ctx.args[0], ctx.out
    dims = tuple(d for d in x.dims if d not in out.dims)
    hit = apply("d_hit", lambda xp, a, m: xp.equal(a, m).astype(a.dtype), (x, out))  # (xp: meta blocks too)
    count = red.sum.__wrapped__(hit, dims)
    grad = apply("d_extreme", lambda xp, h, g, c: h * (g / c), (hit, resolve_to(g), resolve_to(count)))
    return [match(grad, x)]


register_vjp("max")(_extreme)
register_vjp("min")(_extreme)


@register_vjp("logsumexp")
def _logsumexp(ctx: Context, g: ShardArray) -> list[Any]:
    x, out = ctx.args[0], ctx.out
    return [match(apply("d_lse", lambda xp, g, a, o: g * xp.exp(a - o), (g, x, out), "mul"), x)]


@register_vjp("softmax")
def _softmax(ctx: Context, g: ShardArray) -> list[Any]:
    # dx = y * (g - sum(g * y)): the sum is a sum-allreduce over the split dims, like the forward's
    x, y = ctx.args[0], ctx.out
    dims = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs["dims"]
    g = resolve_to(g)
    if fused.rows_ready(y, fused.single_dim(dims)) and fused.kernels_for(y, "softmax"):
        gy = cast(ShardArray, fused.like(g, y))  # y's cotangent has y's dims: not None
        return [match(fused.map_like(y, lambda xp, y, g: cuda_kernels.softmax_rows_grad(xp, g, y), gy), x), None]
    s = red.sum.__wrapped__(apply("d_softmax_gy", lambda xp, g, y: g * y, (g, y)), dims)

    def dx(xp: Any, g: Any, y: Any, s: Any) -> Any:
        out = g - s
        out *= y
        return out

    return [match(apply("d_softmax", dx, (g, y, resolve_to(s))), x), None]
