"""VJPs of the ops that move data: einsum, relayout, rename, transpose, astype, broadcast_to, take.

The VJP of an einsum is an einsum of the cotangent with the other operands,
so the collectives of the backward pass follow from the layouts (Megatron's
f and g operators appear by themselves); an einsum that ran as SUMMA or
Tesseract uses that algorithm's backward pass (``SummaPlan.backward``); the VJP of a relayout is the
inverse relayout.
"""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..core.tape import Context, register_vjp
from ..dtypes import is_complex
from ..ops.cotangent import match
from ..ops.einsum import einsum
from ..ops.elementwise.arithmetic import real
from ..ops.indexing.take import scatter_add
from ..ops.manipulation.structure import astype, rename


@register_vjp("einsum")
def _einsum(ctx: Context, g: ShardArray) -> list[Any]:
    first = 1 if isinstance(ctx.args[0], str) else 0
    operands = ctx.args[first:]
    grads: list[Any] = [None] * len(ctx.args)
    plan = ctx.saved
    if plan is not None:  # SUMMA / Tesseract: their own backward broadcasts and reduces
        pair = plan.backward(operands, g, ctx.needs[first:])
        for i, gi in enumerate(pair):
            grads[first + i] = None if gi is None else match(gi, operands[i])
        return grads
    for i, x in enumerate(operands):
        if not ctx.needs[first + i]:
            continue
        others = operands[:i] + operands[i + 1 :]
        seen = set(g.dims).union(*(o.dims for o in others))
        # dims only x has were summed in the forward pass: match() broadcasts them back
        keep = tuple(d for d in x.dims if d in seen)
        gi = einsum.__wrapped__(g, *others, out=keep)
        grads[first + i] = match(gi, x)
    return grads


@register_vjp("relayout")
@register_vjp("transpose")
@register_vjp("broadcast_to")
def _to_primal_layout(ctx: Context, g: ShardArray) -> list[Any]:
    # same values in another order, layout or repetition: match() undoes it (sums broadcast dims)
    return [match(g, ctx.args[0])] + [None] * (len(ctx.args) - 1)


@register_vjp("rename")
def _rename(ctx: Context, g: ShardArray) -> list[Any]:
    x, names = ctx.args[0], ctx.args[1]
    back = {new: old for old, new in names.items()}
    return [match(rename.__wrapped__(g, back), x), None]


@register_vjp("astype")
def _astype(ctx: Context, g: ShardArray) -> list[Any]:
    x = ctx.args[0]
    if is_complex(g.dtype) and not is_complex(x.dtype):  # real -> complex: only the real part flows back
        g = real(g)
    return [match(astype.__wrapped__(g, x.dtype), x), None]


@register_vjp("take")
def _take(ctx: Context, g: ShardArray) -> list[Any]:
    x, ids, dim = ctx.args
    return [match(scatter_add(g, ids, x, dim), x), None, None]


@register_vjp("copy")
def _copy(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(g, ctx.args[0])]
