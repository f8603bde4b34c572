"""``tile`` and ``repeat``: local along unsplit dims (every device repeats its own block); along a split dim
``repeat`` is one ``movement.move`` (an ``alltoallv``) and ``tile`` a concatenation of copies (one ``alltoallv``):
no gather."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import dims_arg, int_arg, map_blocks, one_dim_arg, require_array
from ...core.movement import move
from ...core.relayout import resolve_to
from ...core.tape import Context, differentiable, keeps_kind, register_vjp
from ...errors import ArgumentError
from ...layout import Layout
from ..cotangent import match
from .concat import concat
from .dims import expand_dims, squeeze


def _count(value: Any, what: str, dim: str) -> int:
    n = int_arg(value, f"{what}: the repetition count for dim {dim!r}")
    if n < 0:
        raise ArgumentError(f"{what}: the repetition count for dim {dim!r} is {n}; counts must be >= 0")
    return n


@keeps_kind
def tile(x: ShardArray, reps: Mapping[str, int]) -> ShardArray:
    """``x`` repeated whole along dims, as ``np.tile``: ``reps`` is ``{dim: count}``; each dim's size is multiplied.

    Collectives: none along unsplit dims (every device tiles its own block).
    Along a split dim the copies are a concatenation (``sa.concat``: one
    ``alltoallv`` over the dim's axes, each device sending its block once per
    copy) and the dim keeps its axes in the block layout; a split dim of
    size 1 first moves its mesh axes onto the remaining dim with the largest
    block by one alltoall (``sa.squeeze``, then an unsplit size-1 dim in its
    place). Nothing is gathered. A pending sum stays pending along unsplit
    dims (it is resolved before a concatenation).

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
    if 0 in counts.values():  # (an empty result: every block empty, the layout kept)
        return _tile(x, counts)
    for d, r in counts.items():  # (split dims first, while the data is smallest)
        if r > 1 and x.spec.of(d):
            x = concat([x] * r, d)
    return _tile(x, {d: r for d, r in counts.items() if not x.spec.of(d)})


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
    full = tuple(counts.get(d, 1) for d in x.dims)
    spec = Layout(x.dims, tuple(n * r for n, r in zip(x.shape, full)), x.spec.axes)
    xp = x.mesh.backend.xp

    def local(s: Any) -> Any:
        if isinstance(s, MetaArray):
            return MetaArray(tuple(n * r for n, r in zip(s.shape, full)), s.dtype)
        return xp.tile(s, full)

    shards = map_blocks(x.mesh, spec.used_axes.union(x.pending), local, x.shards)
    return ShardArray(x.mesh, spec, x.dtype, shards, x.pending)


@keeps_kind
def repeat(x: ShardArray, repeats: int, dim: Any) -> ShardArray:
    """Each element repeated ``repeats`` times along ``dim``, as ``np.repeat(x, repeats, axis)``, ``dim`` split or not.

    Collectives: none when ``dim`` is unsplit (every device repeats its own
    block; a pending sum stays pending). Along a split ``dim`` one
    ``alltoallv`` over its axes (``movement.move``, ``repeats`` strided
    segments): the result's ``dim`` (``repeats`` times longer) keeps the
    axes in the block layout and a device receives at most its output
    block, nothing is gathered (a pending sum is resolved first).
    Differentiable (VJP: the sum of the ``repeats`` strided slices).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1, 2], [3, 4]]), dims=("batch", "seq"), mesh=mesh, layout={"batch": "row"})
        >>> sa.repeat(x, 2, "seq").numpy()
        array([[1, 1, 2, 2],
               [3, 3, 4, 4]])
        >>> sa.repeat(x, 2, "batch").layout  # (split: one alltoallv)
        {'batch': ('row',)}
    """
    x = require_array(x, "repeat")
    dim = one_dim_arg(x, dim, "repeat", "repeat")
    n = _count(repeats, "repeat", dim)
    if x.spec.of(dim):
        return _repeat_split(x, n, dim)
    return _repeat_local(x, n, dim)


@differentiable("repeat")
def _repeat_local(x: ShardArray, n: int, dim: str) -> ShardArray:
    """``repeat`` along an unsplit ``dim`` (the recorded op): every device repeats its own block."""
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
    """``repeat`` along a split ``dim`` (the recorded op): one ``movement.move``."""
    x = resolve_to(x) if x.pending else x
    n = x.sizes[dim]
    if repeats == 0 or n == 0:
        return move([x], dim, n * repeats, [])
    return move([x] * repeats, dim, n * repeats, [(0, 1, j, repeats, n) for j in range(repeats)])


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


__all__ = ["repeat", "tile"]
