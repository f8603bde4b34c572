"""VJPs of ``sa.linalg.inv``, ``det`` and ``solve`` (real floats: sa differentiates real parameters), built from the named ops themselves.

* ``Y = inv(A)``: ``gA = -Y^H G Y^H`` (one einsum of three operands).
* ``d = det(A)``: ``gA = conj(g d) inv(A)^H`` (an ``inv`` and a broadcast product).
* ``X = solve(A, B)``: ``gB = solve(A^H, G)``, ``gA = -gB X^H`` (one einsum).

Their collectives are those of the ops they call (batched locally; the
replicated fallback when a matrix dim is split).
"""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..ops.einsum import einsum
from ..ops.elementwise import conj, multiply
from ..ops.structure import rename
from .common import match
from .tape import Context, register_vjp


def _h(x: ShardArray) -> ShardArray:
    return conj(x) if x.dtype.kind == "c" else x


def _matrix(ctx: Context) -> tuple[str, str]:
    from ..linalg._matrix import matrix_dims

    _, rows, cols = matrix_dims(ctx.args[0], ctx.args[1] if len(ctx.args) > 1 and not isinstance(
        ctx.args[1], ShardArray) else ctx.kwargs.get("dims"), "vjp")
    return rows, cols


def _plain(fn: Any) -> Any:
    return getattr(fn, "__wrapped__", fn)


@register_vjp("linalg.inv")
def _inv(ctx: Context, g: ShardArray) -> list[Any]:
    a, y = ctx.args[0], _h(ctx.out)
    i, j = _matrix(ctx)
    g = g.resolve()
    y1 = rename(y, {i: "_vk", j: i})       # Y^H[i, k] stored at (k, i)
    g1 = rename(g, {i: "_vk", j: "_vl"})
    y2 = rename(y, {i: j, j: "_vl"})       # Y^H[l, j] stored at (j, l)
    ga = _plain(einsum)(y1, g1, y2, out=tuple(ctx.out.dims))
    ga = multiply(ga, -1.0)
    return [match(ga, a)] + [None] * (len(ctx.args) - 1)


@register_vjp("linalg.det")
def _det(ctx: Context, g: ShardArray) -> list[Any]:
    from ..linalg.dense import inv

    a = ctx.args[0]
    i, j = _matrix(ctx)
    yh = _h(rename(_plain(inv)(a, (i, j)), {i: j, j: i}))  # inv(A)^H with dims (.., i, j)
    coef = _h(multiply(g.resolve(), ctx.out))
    return [match(multiply(yh, coef), a)] + [None] * (len(ctx.args) - 1)


@register_vjp("linalg.solve")
def _solve(ctx: Context, g: ShardArray) -> list[Any]:
    from ..linalg._matrix import matrix_dims
    from ..linalg.dense import solve

    a, b = ctx.args[0], ctx.args[1]
    dims = ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("dims")
    _, i, j = matrix_dims(a, dims, "vjp")
    _, bi, bk = matrix_dims(b, ctx.kwargs.get("b_dims"), "vjp")
    x = ctx.out
    ah = _h(rename(a, {i: j, j: i}))  # A^H, same dim names
    gb = _plain(solve)(ah, g.resolve(), (i, j), b_dims=(bi, bk))
    # gA[i, j] = -sum_k gB[i, k] conj(X[j, k])
    g1 = rename(gb, {bi: i, bk: "_vk"})
    x1 = rename(_h(x), {bi: j, bk: "_vk"})
    ga = multiply(_plain(einsum)(g1, x1, out=tuple(d for d in a.dims)), -1.0)
    return [match(ga, a), match(gb, b)] + [None] * (len(ctx.args) - 2)
