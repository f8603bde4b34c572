"""VJPs of the elementwise ops. Each is linear in the cotangent ``g``, so ``g`` may stay pending."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..array import ShardArray
from ..backend import cuda_kernels
from ..core.relayout import resolve_to
from ..core.tape import Context, register_vjp
from ..ops.cotangent import match
from ..ops.elementwise.arithmetic import apply


def _lin(name: str, fn: Any, g: ShardArray, *others: Any, bilinear: bool = False) -> ShardArray:
    """``fn(xp, g, *others)`` per block; linear in ``g``, so a pending ``g`` stays pending.

    The other operands are resolved first unless ``fn`` is linear in each of
    them too (``bilinear``), so that only a linear argument is ever pending.
    An operand the forward pass already resolved is used resolved (its sum
    is not communicated again).
    """
    others = tuple(
        o._resolved[1] if isinstance(o, ShardArray) and o.pending and o._resolved is not None else o for o in others
    )
    if not bilinear:
        others = tuple(resolve_to(o) if isinstance(o, ShardArray) and o.pending else o for o in others)
    return apply(name, fn, (g, *others), "mul")


@register_vjp("add")
def _add(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(g, a) if need else None for a, need in zip(ctx.args, ctx.needs)]


@register_vjp("subtract")
def _subtract(ctx: Context, g: ShardArray) -> list[Any]:
    x, y = ctx.args
    return [match(g, x) if ctx.needs[0] else None, match(-g, y) if ctx.needs[1] else None]


@register_vjp("negative")
def _negative(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(-g, ctx.args[0])]


@register_vjp("multiply")
def _multiply(ctx: Context, g: ShardArray) -> list[Any]:
    x, y = ctx.args
    gx = match(_lin("d_mul", lambda xp, g, b: g * b, g, y, bilinear=True), x) if ctx.needs[0] else None
    gy = match(_lin("d_mul", lambda xp, g, a: g * a, g, x, bilinear=True), y) if ctx.needs[1] else None
    return [gx, gy]


@register_vjp("divide")
def _divide(ctx: Context, g: ShardArray) -> list[Any]:
    x, y = ctx.args
    gx = match(_lin("d_div", lambda xp, g, b: g / b, g, y), x) if ctx.needs[0] else None
    gy = match(_lin("d_div", lambda xp, g, o, b: -g * o / b, g, ctx.out, y), y) if ctx.needs[1] else None
    return [gx, gy]


def _where_zero(xp: Any, v: Any, at_zero: Any, other: Any) -> Any:
    """``at_zero`` where ``v == 0``, else ``other`` (``v`` a block or a Python/NumPy scalar)."""
    if isinstance(v, numbers.Number):
        return at_zero if v == 0 else other
    return xp.where(v == 0, at_zero, other)


def _d_pow_base(xp: Any, g: Any, a: Any, b: Any) -> Any:
    """``g b a^(b-1)``; 0 where ``b == 0`` (``x ** 0`` is constant), where ``a^(b-1)`` would be ``0^-1 = inf``
    and the product NaN (as JAX: ``x ** arange(n)`` at ``x = 0`` has a finite gradient)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # (0^-1 there: replaced by the where)
        d = b * a ** (b - 1)
    return g * _where_zero(xp, b, 0, d)


def _d_pow_exponent(xp: Any, g: Any, o: Any, a: Any) -> Any:
    """``g a^b log(a)``; 0 where ``a == 0`` (as JAX: ``0 ** y`` is 0 for every ``y > 0``, ``0 * log(0)`` NaN)."""
    return g * o * xp.log(_where_zero(xp, a, 1, a))


@register_vjp("power")
def _power(ctx: Context, g: ShardArray) -> list[Any]:
    x, y = ctx.args
    gx = match(_lin("d_pow", _d_pow_base, g, x, y), x) if ctx.needs[0] else None
    gy = match(_lin("d_pow", _d_pow_exponent, g, ctx.out, x), y) if ctx.needs[1] else None
    return [gx, gy]


def _chooser(ctx: Context, g: ShardArray, sign: float) -> list[Any]:
    # ties share the gradient equally (as JAX does)
    x, y = ctx.args

    def d(xp: Any, g: Any, a: Any, b: Any) -> Any:
        d = sign * (a - b)
        return g * ((d > 0) + 0.5 * (d == 0)).astype(g.dtype)

    gx = match(_lin("d_choose", d, g, x, y), x) if ctx.needs[0] else None
    gy = match(_lin("d_choose", d, g, y, x), y) if ctx.needs[1] else None
    return [gx, gy]


@register_vjp("maximum")
def _maximum(ctx: Context, g: ShardArray) -> list[Any]:
    return _chooser(ctx, g, 1.0)


@register_vjp("minimum")
def _minimum(ctx: Context, g: ShardArray) -> list[Any]:
    return _chooser(ctx, g, -1.0)


@register_vjp("where")
def _where(ctx: Context, g: ShardArray) -> list[Any]:
    c, x, y = ctx.args
    gx = match(_lin("d_where", lambda xp, g, c: xp.where(c, g, 0), g, c), x) if ctx.needs[1] else None
    gy = match(_lin("d_where", lambda xp, g, c: xp.where(c, 0, g), g, c), y) if ctx.needs[2] else None
    return [None, gx, gy]


@register_vjp("exp")
def _exp(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(_lin("d_exp", lambda xp, g, o: g * o, g, ctx.out), ctx.args[0])]


@register_vjp("log")
def _log(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(_lin("d_log", lambda xp, g, a: g / a, g, ctx.args[0]), ctx.args[0])]


@register_vjp("tanh")
@register_vjp("tanh_std")  # the standard's special values (array_api/_ew_special.py): the same derivative
def _tanh(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(_lin("d_tanh", lambda xp, g, o: g * (1 - o * o), g, ctx.out), ctx.args[0])]


@register_vjp("sqrt")
def _sqrt(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(_lin("d_sqrt", lambda xp, g, o: g * 0.5 / o, g, ctx.out), ctx.args[0])]


@register_vjp("abs")
def _abs(ctx: Context, g: ShardArray) -> list[Any]:
    # complex a: g * conj(a / |a|), in the convention of every VJP here (JAX's: the cotangent of a complex value
    # is dL/dRe - i dL/dIm, so linear maps transpose without a conjugate); real a: g * sign(a)
    return [match(_lin("d_abs", lambda xp, g, a: g * xp.conj(xp.sign(a)), g, ctx.args[0]), ctx.args[0])]


@register_vjp("relu")
def _relu(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(_lin("d_relu", lambda xp, g, a: g * (a > 0), g, ctx.args[0]), ctx.args[0])]


_C = math.sqrt(2.0 / math.pi)


def _d_gelu(xp: Any, g: Any, a: Any, t: Any) -> Any:
    # d/da 0.5 a (1 + t) = 0.5 (1 + t) + 0.5 a (1 - t^2) C (1 + 3 * 0.044715 a^2), with the saved t; where tanh
    # saturates (1 - t^2 == 0) the middle term is 0, although a^3 may overflow there (|a| >= 256 in float16)
    u = 1.0 - t * t
    with np.errstate(over="ignore", invalid="ignore"):  # (inf * 0 there: replaced by the where)
        s = a * a
        s *= 3 * 0.044715 * _C
        s += _C
        s *= a
        s *= u
    s = xp.where(u == 0, 0.0, s)
    s += t
    s += 1.0
    s *= g
    s *= 0.5
    return s


@register_vjp("gelu")
def _gelu(ctx: Context, g: ShardArray) -> list[Any]:
    if ctx.saved is None:  # the forward ran the fused kernel: so does the backward
        return [match(_lin("d_gelu", cuda_kernels.gelu_grad, g, ctx.args[0]), ctx.args[0])]
    return [match(_lin("d_gelu", _d_gelu, g, ctx.args[0], ctx.saved), ctx.args[0])]


# complex parts, in JAX's convention (a complex value's cotangent is dL/dx - i dL/dy for z = x + iy, so a linear
# map's VJP is its transpose, without a conjugate)
@register_vjp("real")
def _real(ctx: Context, g: ShardArray) -> list[Any]:
    z = ctx.args[0]
    return [match(_lin("d_real", lambda xp, g: g.astype(z.dtype), g), z)]


@register_vjp("imag")
def _imag(ctx: Context, g: ShardArray) -> list[Any]:
    z = ctx.args[0]
    return [match(_lin("d_imag", lambda xp, g: (g * -1j).astype(z.dtype), g), z)]


@register_vjp("conj")
def _conj(ctx: Context, g: ShardArray) -> list[Any]:
    return [match(_lin("d_conj", lambda xp, g: xp.conj(g), g), ctx.args[0])]
