"""``tile`` and ``repeat``: local along unsplit dims (every device repeats its own block); along a split dim
``repeat`` is one ``movement.move`` (an ``alltoallv``: strided segments for a few repeats, else each device fetches
the few input entries covering its output block and repeats them locally) and ``tile`` a concatenation of copies
(one ``alltoallv``): no gather."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...array import ShardArray
from ...backend.classlist import by_value
from ...backend.meta import MetaArray
from ...core.common import dims_arg, int_arg, map_blocks, one_dim_arg, require_array
from ...core.movement import move
from ...core.relayout import resolve_to, to_axes
from ...core.tape import Context, differentiable, keeps_kind, register_vjp
from ...errors import ArgumentError
from ...layout import Layout, block_bounds
from ..cotangent import match
from .concat import concat
from .dims import expand_dims, squeeze
from .structure import transpose


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
    block, nothing is gathered (a pending sum is resolved first). Fewer
    ``repeats`` than devices along the dim's axes move ``repeats`` strided
    segments (a device receives at most its output block); more, and each
    device fetches only the input entries covering its output block (at
    most ``ceil(block / repeats) + 1`` of them), repeats them locally and
    trims. Differentiable (VJP: the sum of the strided slices; with the
    fetch, each device sums its block's runs of ``repeats`` locally and one
    ``alltoallv`` per device of the group adds them back to the owners).

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
        if n > 1 and x.sizes[dim] and n >= x.mesh.axes_size(x.spec.of(dim)):
            return _repeat_fetch(x, n, dim)
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


class _Fetch:
    """Where each device's output block of a split ``repeat`` comes from.

    The output's ``dim`` (``n * repeats``) is in the canonical block layout
    over the input's axes; a device whose block is ``[a, b)`` needs input
    entries ``[a // repeats, ceil(b / repeats))`` (``L`` at most). They are
    fetched into an array of ``p * L`` entries along ``dim`` (``p`` devices
    along its axes: a block of exactly ``L`` each, zeros past the needed
    ones) by one ``movement.move`` of ``p`` segments, one per output block.
    ``params`` holds each device's ``(offset, count)``: its output block is
    entries ``offset .. offset + count`` of its fetched block repeated.
    """

    def __init__(self, x: ShardArray, repeats: int, dim: str) -> None:
        self.k = k = x.dims.index(dim)
        mesh, n = x.mesh, x.sizes[dim]
        self.spec = Layout(x.dims, tuple(s * repeats if j == k else s for j, s in enumerate(x.shape)), x.spec.axes)
        out = [dev[k] for dev in block_bounds(mesh, self.spec)]
        lo = [a // repeats for a, _ in out]
        hi = [max(-(-b // repeats), a) for (_, b), a in zip(out, lo)]
        self.width = max([1] + [h - a for a, h in zip(lo, hi)])
        p = mesh.axes_size(x.spec.of(dim))
        wspec = Layout(x.dims, tuple(p * self.width if j == k else s for j, s in enumerate(x.shape)), x.spec.axes)
        starts = [dev[k][0] for dev in block_bounds(mesh, wspec)]
        self.size = p * self.width
        self.segments = sorted({(a, 1, w, 1, h - a) for a, h, w in zip(lo, hi, starts) if h > a and a < n})
        self.params = by_value([(a - s * repeats, b - a) for (a, b), s in zip(out, lo)])


@differentiable("repeat_fetch")
def _repeat_fetch(x: ShardArray, repeats: int, dim: str) -> ShardArray:
    """``repeat`` along a split ``dim`` with many ``repeats`` (the recorded op): one ``movement.move`` of the few
    input entries each device's output block covers, then a local repeat and trim (``_Fetch``)."""
    x = resolve_to(x) if x.pending else x
    plan = _Fetch(x, repeats, dim)
    w = move([x] * len(plan.segments), dim, plan.size, plan.segments)
    k, xp = plan.k, x.mesh.backend.xp

    def local(b: Any, prm: tuple[int, int]) -> Any:
        off, count = prm
        if isinstance(b, MetaArray):
            return MetaArray(tuple(count if j == k else s for j, s in enumerate(b.shape)), b.dtype)
        return xp.take(b, xp.arange(off, off + count, dtype=xp.int64) // repeats, axis=k)

    shards = map_blocks(x.mesh, plan.spec.used_axes, local, w.shards, plan.params)
    return ShardArray(x.mesh, plan.spec, x.dtype, shards)


@register_vjp("repeat_fetch")
def _repeat_fetch_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    x, r, dim = ctx.args
    x = resolve_to(x) if x.pending else x
    g = resolve_to(g) if g.pending else g
    plan = _Fetch(x, r, dim)
    g = to_axes(transpose(g, x.dims), plan.spec.axes, False)
    k, xp = plan.k, x.mesh.backend.xp
    wspec = Layout(g.dims, tuple(plan.size if j == k else s for j, s in enumerate(g.shape)), g.spec.axes)

    def local(b: Any, prm: tuple[int, int]) -> Any:  # (each run of r output entries summed into its input entry)
        off, count = prm
        shape = tuple(plan.width if j == k else s for j, s in enumerate(b.shape))
        if isinstance(b, MetaArray):
            return MetaArray(shape, b.dtype)
        pad = [tuple(off if j == k else s for j, s in enumerate(b.shape))]
        pad.append(tuple(plan.width * r - off - count if j == k else s for j, s in enumerate(b.shape)))
        full = xp.concatenate([xp.zeros(pad[0], dtype=b.dtype), b, xp.zeros(pad[1], dtype=b.dtype)], axis=k)
        return xp.sum(xp.reshape(full, shape[: k + 1] + (r,) + shape[k + 1 :]), axis=k + 1)

    gw = ShardArray(g.mesh, wspec, g.dtype, map_blocks(g.mesh, wspec.used_axes, local, g.shards, plan.params))
    n = x.sizes[dim]
    parts = [move([gw], dim, n, [(w, 1, a, 1, c)]) for a, _, w, _, c in plan.segments]
    total = parts[0] if parts else move([gw], dim, n, [])
    for p in parts[1:]:
        total = total + p
    return [match(total, x), None, None]


__all__ = ["repeat", "tile"]
