"""Reversing, rotating and padding one named dim: ``flip``, ``roll``, ``pad`` (each one ``movement.move``).

All three are affine re-arrangements of the entries of one dim, so each is a
single ``movement.move``: ``flip`` is one segment with step -1, ``roll`` two
segments (the tail to the front, the head to the back), ``pad`` one segment
placed after ``before`` zeros. When the dim is split that is one
``alltoallv`` over its axes in which every device sends at most its own
block (exactly the entries its peers' output blocks need); when it is
unsplit, no communication. Nothing is gathered. All three are differentiable:
the VJP of ``flip`` is a flip, of ``roll`` a roll the other way, of ``pad``
a slice.
"""

from __future__ import annotations

from typing import Any

from ...array import ShardArray
from ...core.common import int_arg, one_dim_arg, require_array
from ...core.movement import move
from ...core.relayout import resolve_to
from ...core.tape import Context, differentiable, register_vjp
from ...errors import ArgumentError
from ...layout import check_sizes
from ..cotangent import match
from ..indexing.basic import slice_dim


def _int(v: Any, name: str, what: str) -> int:
    return int_arg(v, f"{what}: {name}")


@differentiable("flip")
def _flip(x: ShardArray, dim: str) -> ShardArray:
    x = resolve_to(x) if x.pending else x
    n = x.sizes[dim]
    if n <= 1:
        return x
    return move([x], dim, n, [(n - 1, -1, 0, 1, n)])


def flip(x: ShardArray, dim: Any) -> ShardArray:
    """``x`` with the order of its entries along ``dim`` reversed, as ``np.flip(x, axis)``.

    Collectives: none when ``dim`` is unsplit; else one ``alltoallv`` over its
    axes (each device sends at most its block). Differentiable.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(5.0), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> flip(x, "i").numpy()
        array([4., 3., 2., 1., 0.])
    """
    x = require_array(x, "flip")
    return _flip(x, one_dim_arg(x, dim, "flip"))


@register_vjp("flip")
def _flip_vjp(ctx: Context, g: ShardArray) -> list[Any]:

    x, dim = ctx.args
    return [match(_flip.__wrapped__(g, dim), x), None]


@differentiable("roll")
def _roll(x: ShardArray, dim: str, shift: int) -> ShardArray:
    x = resolve_to(x) if x.pending else x
    n = x.sizes[dim]
    s = shift % n if n else 0
    if s == 0:
        return x
    return move([x, x], dim, n, [(0, 1, s, 1, n - s), (n - s, 1, 0, 1, s)])


def roll(x: ShardArray, dim: Any, shift: int) -> ShardArray:
    """``x`` rotated by ``shift`` places along ``dim`` (entry ``i`` goes to ``(i + shift) % n``), as ``np.roll``.

    Collectives: none when ``dim`` is unsplit; else one ``alltoallv`` over its
    axes (two segments; each device sends at most its block). Differentiable.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(5.0), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> roll(x, "i", 2).numpy()
        array([3., 4., 0., 1., 2.])
    """
    x = require_array(x, "roll")
    dim = one_dim_arg(x, dim, "roll")
    return _roll(x, dim, _int(shift, "shift", f"roll along {dim!r}"))


@register_vjp("roll")
def _roll_vjp(ctx: Context, g: ShardArray) -> list[Any]:

    x, dim, shift = ctx.args
    return [match(_roll.__wrapped__(g, dim, -shift), x), None, None]


@differentiable("pad")
def _pad(x: ShardArray, dim: str, before: int, after: int) -> ShardArray:
    x = resolve_to(x) if x.pending else x
    n = x.sizes[dim]
    if before == 0 and after == 0:
        return x
    check_sizes((dim,), (before + n + after,), "the result of pad")  # (within int64)
    return move([x], dim, before + n + after, [(0, 1, before, 1, n)])


def pad(x: ShardArray, dim: Any, before: int = 0, after: int = 0) -> ShardArray:
    """``x`` with ``before`` zeros in front of and ``after`` zeros behind its entries along ``dim``.

    As ``np.pad(x, [(before, after)] on axis dim)`` with constant zeros; the
    result's ``dim`` is in the canonical block layout over the same axes.
    Collectives: none when ``dim`` is unsplit; else one ``alltoallv`` over its
    axes (each device sends at most its block). Differentiable (VJP: a slice).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(1.0, 4.0), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> pad(x, "i", 1, 2).numpy()
        array([0., 1., 2., 3., 0., 0.])
    """
    x = require_array(x, "pad")
    dim = one_dim_arg(x, dim, "pad")
    what = f"pad along {dim!r}"
    before, after = _int(before, "before", what), _int(after, "after", what)
    if before < 0 or after < 0:
        raise ArgumentError(f"{what}: before={before} and after={after} must be >= 0 (slice with x.isel to cut)")
    return _pad(x, dim, before, after)


@register_vjp("pad")
def _pad_vjp(ctx: Context, g: ShardArray) -> list[Any]:

    x, dim, before, _ = ctx.args
    g = resolve_to(g) if g.pending else g
    return [match(slice_dim.__wrapped__(g, dim, before, 1, x.sizes[dim]), x), None, None, None]


__all__ = ["flip", "pad", "roll"]
