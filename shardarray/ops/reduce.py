"""Reductions over named dims: sum, mean (pending sums) and max, min (allreduce)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ..array import ShardArray
from ..autograd.tape import differentiable
from .common import dims_arg, map_blocks, mesh_order, new_array
from .relayout import resolve


def _split(x: ShardArray, dims: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[str, ...], dict[str, tuple[str, ...]]]:
    index = tuple(x.dims.index(d) for d in dims)
    keep = tuple(d for d in x.dims if d not in dims)
    axes = {d: a for d, a in zip(x.dims, x.spec.axes) if d in keep}
    return index, keep, axes


@differentiable("sum")
def sum(x: ShardArray, dims: Any = None) -> ShardArray:
    """Sum over ``dims`` (one name, several, or all when None).

    Reducing a split dim leaves a partial sum on every device, pending over
    that dim's axes; it is allreduced when the value is needed.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.ones(mesh, {"batch": 4, "io": 6}, dtype="float64", layout={"batch": "row", "io": "col"})
        >>> s = x.sum("io")
        >>> s.pending, s.numpy()
        (('col',), array([6., 6., 6., 6.]))
    """
    dims = dims_arg(x, dims, "sum")
    if not dims:
        return x
    index, keep, axes = _split(x, dims)
    xp = x.mesh.backend.xp
    reduced_axes = [a for d in dims for a in x.spec.of(d)]
    used = x.spec.used_axes.union(x.pending)
    shards = map_blocks(x.mesh, used, lambda s: xp.sum(s, axis=index), x.shards)
    pending = mesh_order(x.mesh, set(x.pending).union(reduced_axes))
    return new_array(x.mesh, keep, x.sizes, axes, shards, pending)


def mean(x: ShardArray, dims: Any = None) -> ShardArray:
    """Mean over ``dims`` (see ``sum``; the scaling keeps a pending sum pending)."""
    dims = dims_arg(x, dims, "mean")
    count = math.prod(x.sizes[d] for d in dims)
    return sum(x, dims) * (1.0 / count if count else float("nan"))


def _identity(dtype: np.dtype, op: str) -> Any:
    if dtype.kind == "f":
        return -np.inf if op == "max" else np.inf
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if op == "max" else info.max
    return op != "max"


def _extreme(x: ShardArray, dims: Any, op: str) -> ShardArray:
    dims = dims_arg(x, dims, op)
    if not dims:
        return x
    x = resolve(x, x.spec.axes)
    index, keep, axes = _split(x, dims)
    xp = x.mesh.backend.xp
    reducer = xp.max if op == "max" else xp.min
    ident = _identity(x.dtype, op)

    def local(s: Any) -> Any:
        if builtins.any(s.shape[i] == 0 for i in index):
            shape = tuple(n for i, n in enumerate(s.shape) if i not in index)
            return xp.full(shape, ident, dtype=x.dtype)
        return reducer(s, axis=index)

    shards = map_blocks(x.mesh, x.spec.used_axes, local, x.shards)
    red_axes = mesh_order(x.mesh, [a for d in dims for a in x.spec.of(d)])
    if red_axes:
        shards = x.mesh.comm.allreduce(shards, red_axes, op=op)
    return new_array(x.mesh, keep, x.sizes, axes, shards, dtype=x.dtype)


@differentiable("max", resolve_inputs=True)
def max(x: ShardArray, dims: Any = None) -> ShardArray:
    """Maximum over ``dims``: local max, then a max-allreduce over split dims' axes.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> x.max("b").numpy()
        array([2., 5.])
    """
    return _extreme(x, dims, "max")


@differentiable("min", resolve_inputs=True)
def min(x: ShardArray, dims: Any = None) -> ShardArray:
    """Minimum over ``dims`` (see ``max``)."""
    return _extreme(x, dims, "min")
