"""Joining arrays: ``concat`` along an existing dim, ``stack`` along a new one.

``concat`` along an unsplit dim concatenates the blocks locally; along a
split dim it is one ``movement.move``: an ``alltoallv`` over the dim's axes
that puts every input's blocks into the canonical ceil-block layout of the
result (each device sends at most its own blocks). Inputs in other layouts
are first brought to the layout of the largest (``_one_layout``: the smaller
inputs move, never the largest; a dim the largest leaves unsplit takes the
axes of the next largest that splits it), an explicit relayout (slice,
allgather or alltoall) in the comm log. ``stack`` adds a new unsplit dim of
size 1 to every input (local) and concatenates along it: no communication
when the inputs share a layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...array import ShardArray
from ...core.common import common_mesh, map_blocks, merged_axes, require_array
from ...core.movement import move
from ...core.relayout import relayout
from ...core.tape import differentiable
from ...errors import DimensionError
from ...layout import Layout, check_dims
from .structure import transpose


def _check(arrays: Any, what: str) -> list[ShardArray]:
    if isinstance(arrays, ShardArray) or not isinstance(arrays, Sequence) or not arrays:
        raise DimensionError(f"{what} takes a non-empty list of ShardArrays; got {arrays!r:.80}. Pass e.g. [x, y]")
    out = [require_array(a, what, f"arrays[{i}]") for i, a in enumerate(arrays)]
    common_mesh(out, what)
    return out


def _dim_name(dim: Any, what: str, example: str) -> None:
    """Refuse a ``dim`` that is not a name (a position, an array): arrays are joined by dim name."""
    if not isinstance(dim, str):
        raise DimensionError(f"{what}: name the dim to join along, a string, e.g. {example}; got {dim!r:.80}")


def _same_dims(arrays: list[ShardArray], what: str, free: str | None) -> list[ShardArray]:
    """The arrays in the first one's dim order, after checking dims and sizes (``free`` may differ)."""
    first = arrays[0]
    out = [first]
    for i, a in enumerate(arrays[1:], 1):
        if set(a.dims) != set(first.dims):
            raise DimensionError(
                f"{what}: arrays[0] has dims {first.sizes} but arrays[{i}] has {a.sizes}; every "
                f"array needs the same dim names (rename with .rename({{old: new}}))"
            )
        for d in first.dims:
            if d != free and a.sizes[d] != first.sizes[d]:
                raise DimensionError(
                    f"{what}: dim {d!r} has size {first.sizes[d]} in arrays[0] {first.sizes} but {a.sizes[d]} in "
                    f"arrays[{i}] {a.sizes}; only " + (f"dim {free!r} may differ" if free else "equal sizes stack")
                )
        out.append(a if a.dims == first.dims else transpose(a, first.dims))
    return out


def _one_layout(arrays: list[ShardArray]) -> list[ShardArray]:
    """The arrays (of one dim order) in one layout: the largest keeps its own, the others are relayouted to it.

    A dim the largest leaves unsplit takes the axes of the next largest array that splits it (largest first, the
    earlier array on a tie), so the smaller inputs move (Mesh-TF's "first operand decides" would move a large
    second input to a small first one's layout).
    """
    first = arrays[0].spec.axes
    if all(a.spec.axes == first for a in arrays[1:]):
        return arrays
    per_dim = merged_axes(sorted(arrays, key=lambda a: -a.size), arrays[0].dims)
    target = tuple(per_dim[d] for d in arrays[0].dims)
    layout = dict(zip(arrays[0].dims, target))
    return [a if a.spec.axes == target else relayout(a, layout) for a in arrays]


@differentiable("concat")
def _concat(dim: str, *arrays: ShardArray) -> ShardArray:
    offsets, segments = 0, []
    for a in arrays:
        n = a.sizes[dim]
        segments.append((0, 1, offsets, 1, n))
        offsets += n
    return move(list(arrays), dim, offsets, segments)


def concat(arrays: Sequence[ShardArray], dim: str) -> ShardArray:
    """Join arrays along their existing dim ``dim`` (sizes may differ there, nowhere else).

    Dims are matched by name (the result has the first array's order).
    Collectives: none along an unsplit ``dim``; along a split one, one
    ``alltoallv`` over its axes moving at most each device's blocks into the
    result's canonical layout. Inputs whose layouts differ are brought to the
    largest one's first (relayouts of the smaller inputs, in the comm log).
    Differentiable (VJP: slices).

    Raises:
        DimensionError: no arrays, a missing ``dim``, other dims or sizes that differ.
        MeshError: arrays on different meshes.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(6.0).reshape(3, 2), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
        >>> sa.concat([x, x], "batch").numpy()[:, 0]
        array([0., 2., 4., 0., 2., 4.])
    """
    arrays = _check(arrays, f"concat along {dim!r:.80}")
    _dim_name(dim, "concat", "sa.concat([x, y], 'batch')")
    for i, a in enumerate(arrays):
        if dim not in a.dims:
            raise DimensionError(
                f"concat along {dim!r}: arrays[{i}] {a.sizes} has no dim {dim!r}; use sa.stack "
                f"to join along a new dim, or pass one of the dims {a.dims}"
            )
    arrays = _same_dims(arrays, f"concat along {dim!r}", dim)
    if len(arrays) == 1:
        return arrays[0]
    return _concat(dim, *_one_layout(arrays))


@differentiable("new_dim")
def new_dim(x: ShardArray, name: str, position: int = 0) -> ShardArray:
    """``x`` with a new unsplit dim ``name`` of size 1 at ``position`` (local, no communication).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> new_dim(sa.zeros(mesh, {"io": 4}), "layer").sizes
        {'layer': 1, 'io': 4}
    """
    check_dims(x.dims[:position] + (name,) + x.dims[position:], f"the array {x.sizes} with new dim {name!r}")
    xp = x.mesh.backend.xp
    shards = map_blocks(x.mesh, x.spec.used_axes.union(x.pending), lambda b: xp.expand_dims(b, position), x.shards)
    layout = Layout(
        x.dims[:position] + (name,) + x.dims[position:],
        x.shape[:position] + (1,) + x.shape[position:],
        x.spec.axes[:position] + ((),) + x.spec.axes[position:],
    )
    return ShardArray(x.mesh, layout, x.dtype, shards, x.pending)


def stack(arrays: Sequence[ShardArray], dim: str) -> ShardArray:
    """Join arrays of equal dims and sizes along a new first dim ``dim`` (not split).

    Collectives: none when the inputs share a layout (each device stacks its
    blocks); otherwise the smaller inputs are first brought to the largest
    one's layout (equal sizes: the first one's). Differentiable.

    Raises:
        DimensionError: no arrays, ``dim`` already a dim, dims or sizes that differ.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.ones(mesh, {"io": 4}, dtype="float64", layout={"io": "col"})
        >>> y = sa.stack([x, 2 * x], "layer")
        >>> y.sizes, y.numpy()[:, 0]
        ({'layer': 2, 'io': 4}, array([1., 2.]))
    """
    arrays = _check(arrays, f"stack along {dim!r:.80}")
    _dim_name(dim, "stack", "sa.stack([x, y], 'layer')")
    if dim in arrays[0].dims:
        raise DimensionError(
            f"stack along {dim!r}: the arrays already have a dim {dim!r} {arrays[0].sizes}; "
            f"use sa.concat to join along it, or name a new dim"
        )
    arrays = _same_dims(arrays, f"stack along {dim!r}", None)
    parts = [new_dim(a, dim, 0) for a in _one_layout(arrays)]
    return parts[0] if len(parts) == 1 else _concat(dim, *parts)


__all__ = ["concat", "new_dim", "stack"]
