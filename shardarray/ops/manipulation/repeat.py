"""``tile`` and ``repeat`` along unsplit dims (local: every device repeats its own block), and ``repeat_split``:
``repeat`` along a split dim as one ``movement.move`` (no gather)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import dims_arg, int_arg, map_blocks, one_dim_arg, require_array
from ...core.movement import move
from ...core.relayout import resolve_to
from ...core.tape import Context, differentiable, keeps_kind, register_vjp
from ...errors import ArgumentError, LayoutError
from ...layout import Layout
from ..cotangent import match
from .dims import expand_dims, squeeze


def _count(value: Any, what: str, dim: str) -> int:
    n = int_arg(value, f"{what}: the repetition count for dim {dim!r}")
    if n < 0:
        raise ArgumentError(f"{what}: the repetition count for dim {dim!r} is {n}; counts must be >= 0")
    return n


def _unsplit(x: ShardArray, dim: str, what: str) -> None:
    axes = x.spec.of(dim)
    if axes:
        raise LayoutError(
            f"{what}: dim {dim!r} (size {x.sizes[dim]}) is split over mesh axes {axes}; repeating a split dim "
            f"would move data between devices. Unsplit it first with x.relayout({{{dim!r}: None}}) (an allgather), "
            f"or repeat along an unsplit dim"
        )


@keeps_kind
def tile(x: ShardArray, reps: Mapping[str, int]) -> ShardArray:
    """``x`` repeated whole along dims, as ``np.tile``: ``reps`` is ``{dim: count}``; each dim's size is multiplied.

    Local (no collective): every named dim must be unsplit (else ``LayoutError``
    suggesting ``x.relayout({dim: None})``), except a split dim of size 1,
    whose mesh axes first move onto the remaining dim with the largest block
    by one alltoall (``sa.squeeze``, then an unsplit size-1 dim in its place):
    the result is split, never gathered. A pending sum stays pending.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1, 2], [3, 4]]), dims=("batch", "seq"), mesh=mesh, layout={"batch": "row"})
        >>> sa.tile(x, {"seq": 2}).numpy()
        array([[1, 2, 1, 2],
               [3, 4, 3, 4]])
    """
    x = require_array(x, "tile")
    counts = _tile_counts(x, reps)
    ones = tuple(d for d in counts if x.sizes[d] == 1 and x.spec.of(d))
    if ones:  # split size-1 dims: squeeze (one alltoall; none over axes of size 1), then put them back unsplit
        y = squeeze(x, ones)
        for d in sorted(ones, key=x.dims.index):
            y = expand_dims(y, d, x.dims.index(d))
        x = y
    return _tile(x, counts)


def _tile_counts(x: ShardArray, reps: Any) -> dict[str, int]:
    """``reps`` checked: ``{dim name: count >= 0}`` (dims by name or position)."""
    if not isinstance(reps, Mapping):
        raise ArgumentError(
            f"tile: reps is a dict {{dim: count}}, e.g. {{{x.dims[0] if x.dims else 'dim'!r}: 2}}; got {reps!r}"
        )
    counts = {}
    for d, v in reps.items():
        d = dims_arg(x, d, "tile")[0]
        counts[d] = _count(v, "tile", d)
    return counts


@differentiable("tile")
def _tile(x: ShardArray, counts: Mapping[str, int]) -> ShardArray:
    """``tile`` of ``x`` along unsplit dims (the recorded op): every device tiles its own block."""
    for d in counts:
        _unsplit(x, d, "tile")
    full = tuple(counts.get(d, 1) for d in x.dims)
    spec = Layout(x.dims, tuple(n * r for n, r in zip(x.shape, full)), x.spec.axes)
    xp = x.mesh.backend.xp

    def local(s: Any) -> Any:
        if isinstance(s, MetaArray):
            return MetaArray(tuple(n * r for n, r in zip(s.shape, full)), s.dtype)
        return xp.tile(s, full)

    shards = map_blocks(x.mesh, spec.used_axes.union(x.pending), local, x.shards)
    return ShardArray(x.mesh, spec, x.dtype, shards, x.pending)


@differentiable("repeat")
def repeat(x: ShardArray, repeats: int, dim: Any) -> ShardArray:
    """Each element repeated ``repeats`` times along ``dim``, as ``np.repeat(x, repeats, axis)``.

    Local (no collective): ``dim`` must be unsplit (else ``LayoutError``
    suggesting ``x.relayout({dim: None})``). A pending sum stays pending.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1, 2], [3, 4]]), dims=("batch", "seq"), mesh=mesh, layout={"batch": "row"})
        >>> sa.repeat(x, 2, "seq").numpy()
        array([[1, 1, 2, 2],
               [3, 3, 4, 4]])
    """
    x = require_array(x, "repeat")
    dim = one_dim_arg(x, dim, "repeat", "repeat")
    n = _count(repeats, "repeat", dim)
    _unsplit(x, dim, "repeat")
    i = x.dims.index(dim)
    spec = Layout(x.dims, tuple(s * n if j == i else s for j, s in enumerate(x.shape)), x.spec.axes)
    xp = x.mesh.backend.xp

    def local(s: Any) -> Any:
        if isinstance(s, MetaArray):
            return MetaArray(tuple(k * n if j == i else k for j, k in enumerate(s.shape)), s.dtype)
        return xp.repeat(s, n, axis=i)

    shards = map_blocks(x.mesh, spec.used_axes.union(x.pending), local, x.shards)
    return ShardArray(x.mesh, spec, x.dtype, shards, x.pending)


@differentiable("repeat_split")
def _repeat_split(x: ShardArray, repeats: int, dim: str) -> ShardArray:
    x = resolve_to(x) if x.pending else x
    n = x.sizes[dim]
    if repeats == 0 or n == 0:
        return move([x], dim, n * repeats, [])
    return move([x] * repeats, dim, n * repeats, [(0, 1, j, repeats, n) for j in range(repeats)])


def repeat_split(x: ShardArray, repeats: int, dim: Any) -> ShardArray:
    """Each element repeated ``repeats`` times along ``dim``, as ``np.repeat(x, repeats, axis)``, ``dim`` split or not.

    The result's ``dim`` (``repeats`` times longer) keeps ``dim``'s mesh axes in
    the canonical block layout. Collectives: none when ``dim`` is unsplit; else
    one ``alltoallv`` over its axes (``movement.move``, ``repeats`` strided
    segments): a device receives at most its output block, nothing is gathered.
    Differentiable (VJP: the sum of the ``repeats`` strided slices).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(3.0), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> repeat_split(x, 2, "i").numpy()
        array([0., 0., 1., 1., 2., 2.])
    """
    x = require_array(x, "repeat")
    dim = one_dim_arg(x, dim, "repeat", "repeat")
    n = _count(repeats, "repeat", dim)
    if not x.spec.of(dim):
        return repeat(x, n, dim)
    return _repeat_split(x, n, dim)


@register_vjp("repeat_split")
def _repeat_split_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    x, r, dim = ctx.args
    g = resolve_to(g) if g.pending else g
    n = x.sizes[dim]
    parts = [move([g], dim, n, [(j, r, 0, 1, n)]) for j in range(r)]
    total = parts[0] if parts else move([g], dim, n, [])
    for p in parts[1:]:
        total = total + p
    return [match(total, x), None, None]


__all__ = ["repeat", "repeat_split", "tile"]
