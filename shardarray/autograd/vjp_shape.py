"""VJPs of the reshapes and repeats: split_dim <-> merge_dims, squeeze <-> expand_dims, tile and repeat (sums)."""

from __future__ import annotations

from typing import Any, cast

from ..array import ShardArray
from ..core.common import dims_arg, map_blocks
from ..core.tape import Context, register_vjp
from ..ops.cotangent import match
from ..ops.manipulation.reshape import merge_dims, split_dim


def _arg(ctx: Context, i: int, name: str) -> Any:
    """Argument ``i`` of the op, given by position or by keyword ``name``."""
    return ctx.args[i] if len(ctx.args) > i else ctx.kwargs[name]


def _grads(ctx: Context, gx: ShardArray | None) -> list[Any]:
    """The gradient of the array argument (position 0) and None for the others."""
    return [gx] + [None] * (len(ctx.args) - 1)


@register_vjp("split_dim")
def _split_dim(ctx: Context, g: ShardArray) -> list[Any]:
    x, dim, sizes = ctx.args[0], _arg(ctx, 1, "dim"), _arg(ctx, 2, "sizes")
    dim = dims_arg(x, dim, "split_dim")[0]
    return _grads(ctx, match(merge_dims.__wrapped__(g, tuple(sizes), dim), x))


@register_vjp("merge_dims")
def _merge_dims(ctx: Context, g: ShardArray) -> list[Any]:
    x, dims, new = ctx.args[0], _arg(ctx, 1, "dims"), _arg(ctx, 2, "new")
    names = dims_arg(x, tuple(dims), "merge_dims")
    return _grads(ctx, match(split_dim.__wrapped__(g, new, {d: x.sizes[d] for d in names}), x))


@register_vjp("squeeze")
@register_vjp("expand_dims")
def _size_one(ctx: Context, g: ShardArray) -> list[Any]:
    # match() broadcasts the squeezed size-1 dims back, and sums (drops) the added one
    return _grads(ctx, match(g, ctx.args[0]))


def _fold(g: ShardArray, out: ShardArray, x: ShardArray, folds: dict[int, tuple[int, int]]) -> ShardArray:
    """Sum ``g`` (brought to ``out``'s dims and axes) over the copies: dim ``i`` of size ``n·r`` -> ``n``.

    ``folds[i] = (r, where)``: ``where`` 0 for tile (copies major), 1 for repeat (copies minor).
    """
    g = cast(ShardArray, match(g, out))  # out is an array
    xp = g.mesh.backend.xp

    def local(s: Any) -> Any:
        for i in sorted(folds, reverse=True):
            r, where = folds[i]
            n = x.shape[i]
            shape = s.shape[:i] + ((r, n) if where == 0 else (n, r)) + s.shape[i + 1 :]
            s = xp.sum(s.reshape(shape), axis=i + where)
        return s

    shards = map_blocks(g.mesh, g.spec.used_axes.union(g.pending), local, g.shards)
    return ShardArray(g.mesh, x.spec, g.dtype, shards, g.pending)


@register_vjp("tile")
def _tile(ctx: Context, g: ShardArray) -> list[Any]:
    x, out = ctx.args[0], ctx.out
    folds = {i: (out.shape[i] // n if n else 0, 0) for i, n in enumerate(x.shape) if out.shape[i] != n}
    return _grads(ctx, _fold(g, out, x, folds))


@register_vjp("repeat")
def _repeat(ctx: Context, g: ShardArray) -> list[Any]:
    x, out = ctx.args[0], ctx.out
    folds = {i: (out.shape[i] // n if n else 0, 1) for i, n in enumerate(x.shape) if out.shape[i] != n}
    return _grads(ctx, _fold(g, out, x, folds))
