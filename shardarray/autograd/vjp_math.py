"""VJPs of the unary and binary math ops (``ops/elementwise/math_unary.py``, ``math_binary.py``), prod, var, std.

Each is linear in the cotangent ``g`` (so ``g`` may stay pending) and uses
the op's saved output where that is cheaper than recomputing. Piecewise
constant ops (sign of reals, floor, ceil, trunc, round, floor_divide) have a zero
gradient, as in NumPy-based frameworks.
"""

from __future__ import annotations

import math
from typing import Any

from ..array import ShardArray
from ..core.relayout import resolve_to
from ..core.tape import Context, register_vjp
from ..ops.cotangent import match
from ..ops.elementwise.arithmetic import apply
from ..ops.elementwise.math_binary import floor_divide_block
from ..ops.manipulation.structure import astype, expand
from ..ops.reduction import reduce as red
from .vjp_elementwise import _lin


def _unary(name: str, fn: Any, use_out: bool = False) -> None:
    """Register ``d(name)``: ``fn(xp, g, v)`` with ``v`` the input (or the output when ``use_out``)."""

    @register_vjp(name)
    def vjp(ctx: Context, g: ShardArray) -> list[Any]:
        x = ctx.args[0]
        return [match(_lin(f"d_{name}", fn, g, ctx.out if use_out else x), x)]


def _zero(ctx: Context, g: ShardArray) -> list[Any]:
    return [
        match(apply("d_zero", lambda xp, g: xp.zeros_like(g), (resolve_to(g),)), a) if need else None
        for a, need in zip(ctx.args, ctx.needs)
    ]


# (the _std ops: the array API's special values, array_api/_ew_special.py)
for _name in ("floor", "ceil", "trunc", "round", "floor_divide", "floor_divide_std"):
    register_vjp(_name)(_zero)


def _d_sign_complex(xp: Any, g: Any, z: Any) -> Any:
    """``g / 2r - conj(g) conj(z)^2 / 2r^3`` (``r = |z|``; 0 at ``z = 0``): the VJP of ``z / |z|``."""
    r = xp.abs(z)
    safe = xp.where(r == 0, 1, r)
    out = g / (2 * safe) - xp.conj(g) * xp.conj(z) ** 2 / (2 * safe**3)
    return xp.where(r == 0, 0, out)


@register_vjp("sign")
def _sign(ctx: Context, g: ShardArray) -> list[Any]:
    """0 for real inputs (piecewise constant); for complex ``z``, ``sign(z) = z/|z|`` changes with the angle of
    ``z`` and has a gradient (JAX's convention, ``g = dL/dRe - i dL/dIm``; JAX itself gives 0 there)."""
    x = ctx.args[0]
    if not isinstance(x, ShardArray) or x.dtype.kind != "c":
        return _zero(ctx, g)
    return [match(_lin("d_sign", _d_sign_complex, g, x), x)]


_unary("square", lambda xp, g, a: 2 * g * a)
_unary("reciprocal", lambda xp, g, o: -g * o * o, use_out=True)
_unary("sin", lambda xp, g, a: g * xp.cos(a))
_unary("cos", lambda xp, g, a: -g * xp.sin(a))
_unary("tan", lambda xp, g, o: g * (1 + o * o), use_out=True)
_unary("asin", lambda xp, g, a: g / xp.sqrt(1 - a * a))
_unary("acos", lambda xp, g, a: -g / xp.sqrt(1 - a * a))
_unary("atan", lambda xp, g, a: g / (1 + a * a))
_unary("sinh", lambda xp, g, a: g * xp.cosh(a))
_unary("cosh", lambda xp, g, a: g * xp.sinh(a))
_unary("asinh", lambda xp, g, a: g / xp.sqrt(a * a + 1))
_unary("acosh", lambda xp, g, a: g / xp.sqrt(a * a - 1))
_unary("atanh", lambda xp, g, a: g / (1 - a * a))
_unary("expm1", lambda xp, g, o: g * (o + 1), use_out=True)
_unary("expm1_std", lambda xp, g, o: g * (o + 1), use_out=True)  # the standard's special values (array_api)
_unary("log1p", lambda xp, g, a: g / (1 + a))
# the square root of a variance (complex ``std``, ``nanstd``): 0 where it is 0, as ``std``'s VJP below
_unary("spread_sqrt", lambda xp, g, o: xp.where(o == 0, 0.0, g * 0.5 / xp.where(o == 0, 1.0, o)), use_out=True)
_unary("log2", lambda xp, g, a: g / (a * math.log(2.0)))
_unary("log10", lambda xp, g, a: g / (a * math.log(10.0)))


def _binary(name: str, dx: Any, dy: Any) -> None:
    """Register ``d(name)``: ``dx(xp, g, x, y, out)`` and ``dy(...)``, summed over broadcast dims by ``match``."""

    @register_vjp(name)
    def vjp(ctx: Context, g: ShardArray) -> list[Any]:
        x, y = ctx.args
        gx = match(_lin(f"d_{name}", dx, g, x, y, ctx.out), x) if ctx.needs[0] else None
        gy = match(_lin(f"d_{name}", dy, g, x, y, ctx.out), y) if ctx.needs[1] else None
        return [gx, gy]


# atan2(y, x): the first argument is y
_binary("atan2", lambda xp, g, y, x, o: g * x / (x * x + y * y), lambda xp, g, y, x, o: -g * y / (x * x + y * y))
_binary("hypot", lambda xp, g, x, y, o: g * x / o, lambda xp, g, x, y, o: g * y / o)
_binary("logaddexp", lambda xp, g, x, y, o: g * xp.exp(x - o), lambda xp, g, x, y, o: g * xp.exp(y - o))
_binary("copysign", lambda xp, g, x, y, o: g * (xp.sign(x) * xp.sign(o)), lambda xp, g, x, y, o: g * 0)
_binary("ldexp", lambda xp, g, x, n, o: xp.ldexp(g, n), lambda xp, g, x, n, o: g * 0)  # (n: an integer)
# remainder = x - floor(x / y) * y, with floor(x / y) piecewise constant
_binary("remainder", lambda xp, g, x, y, o: g * 1, lambda xp, g, x, y, o: -g * floor_divide_block(xp, x, y))


@register_vjp("clip")
def _clip(ctx: Context, g: ShardArray) -> list[Any]:
    # out = min(max(x, lo), hi): the gradient goes to the value taken (hi where max(x, lo) > hi, else the larger)
    x, lo, hi = ctx.args

    def take_x(xp: Any, g: Any, a: Any, lo: Any, hi: Any) -> Any:
        return g * ((a >= lo) & (xp.maximum(a, lo) <= hi))

    def take_lo(xp: Any, g: Any, a: Any, lo: Any, hi: Any) -> Any:
        return g * ((lo > a) & (lo <= hi))

    def take_hi(xp: Any, g: Any, a: Any, lo: Any, hi: Any) -> Any:
        return g * (xp.maximum(a, lo) > hi)

    return [
        match(_lin("d_clip", f, g, x, lo, hi), v) if need else None
        for f, v, need in zip((take_x, take_lo, take_hi), (x, lo, hi), ctx.needs)
    ]


@register_vjp("clip_lo")
def _clip_lo(ctx: Context, g: ShardArray) -> list[Any]:
    x, lo = ctx.args
    gx = match(_lin("d_clip", lambda xp, g, a, b: g * (a >= b), g, x, lo), x) if ctx.needs[0] else None
    gl = match(_lin("d_clip", lambda xp, g, a, b: g * (b > a), g, x, lo), lo) if ctx.needs[1] else None
    return [gx, gl]


@register_vjp("clip_hi")
def _clip_hi(ctx: Context, g: ShardArray) -> list[Any]:
    x, hi = ctx.args
    gx = match(_lin("d_clip", lambda xp, g, a, b: g * (a <= b), g, x, hi), x) if ctx.needs[0] else None
    gh = match(_lin("d_clip", lambda xp, g, a, b: g * (a > b), g, x, hi), hi) if ctx.needs[1] else None
    return [gx, gh]


def _reduced(ctx: Context) -> tuple[str, ...]:
    x, out = ctx.args[0], ctx.out
    return tuple(d for d in x.dims if d not in out.dims)


def _correction(ctx: Context) -> float:
    return ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("correction", 0.0)


@register_vjp("var")
def _var(ctx: Context, g: ShardArray) -> list[Any]:
    # d var / dx = 2 (x - mean) / (N - correction)
    x = ctx.args[0]
    dims = _reduced(ctx)
    n = math.prod(x.sizes[d] for d in dims)
    scale = 2.0 / max(n - _correction(ctx), 0) if n - _correction(ctx) > 0 else float("nan")
    centered = apply("d_var_c", lambda xp, a, m: a - m, (x, resolve_to(red.mean.__wrapped__(x, dims))))
    return [match(expand(resolve_to(g), x.spec) * (centered * scale), x)]


@register_vjp("std")
def _std(ctx: Context, g: ShardArray) -> list[Any]:
    # d std / dx = (x - mean) / ((N - correction) std); 0 where std = 0 (as PyTorch): the derivative there when the
    # reduced size is 1 (std is 0 for every x), a subgradient otherwise, never 0 * inf = NaN
    x, out = ctx.args[0], ctx.out
    dims = _reduced(ctx)
    n = math.prod(x.sizes[d] for d in dims)
    denom = n - _correction(ctx)
    scale = 1.0 / denom if denom > 0 else float("nan")
    centered = apply("d_std_c", lambda xp, a, m: a - m, (x, resolve_to(red.mean.__wrapped__(x, dims))))

    def d_std(xp: Any, g: Any, o: Any) -> Any:
        zero = o == 0
        return xp.where(zero, 0.0, g * scale / xp.where(zero, 1.0, o))

    gs = apply("d_std", d_std, (resolve_to(g), out))
    return [match(apply("d_std_x", lambda xp, c, s: c * s, (centered, gs)), x)]


@register_vjp("prod")
def _prod(ctx: Context, g: ShardArray) -> list[Any]:
    # d prod / dx_i = prod of the others: out / x_i without zeros; with one zero, only the zero's slot gets the
    # product of the nonzeros; with two or more zeros, nothing. Exact (no division by zero).
    x = ctx.args[0]
    dims = _reduced(ctx)
    zero = apply("d_prod_z", lambda xp, a: xp.equal(a, 0), (x,))
    nonzero_prod = red.prod.__wrapped__(apply("d_prod_nz", lambda xp, a, z: xp.where(z, 1, a), (x, zero)), dims)
    zeros = resolve_to(red.sum.__wrapped__(astype(zero, "int64"), dims)) if dims else astype(zero, "int64")

    def d(xp: Any, g: Any, a: Any, z: Any, p: Any, c: Any) -> Any:
        safe = xp.where(z, 1, a)
        return g * xp.where(c == 0, p / safe, xp.where((c == 1) & z, p, 0))

    return [match(apply("d_prod", d, (resolve_to(g), x, zero, nonzero_prod, zeros)), x)]
