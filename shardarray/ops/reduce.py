"""Reductions over named dims: sum, mean (pending sums) and max, min (allreduce).

Low-precision floats (float16; any float narrower than 32 bits, see
``dtypes.accumulation_dtype``) are summed in float32 and rounded once, so the
result is the same on every layout: ``x.sum(dims)`` equals
``x.astype("float32").sum(dims).astype(x.dtype)`` and ``x.mean(dims)`` rounds
the float32 mean once (an overflowing sum does not spoil the mean). A
low-precision sum over a split dim is **resolved eagerly**: the float32
partial sums are allreduced (the comm log shows the float32 payload) before
the one rounding, rather than left pending as float16 partial sums, which
would be rounded before they are added. Such sums are not pending, so a
consumer that splits the result over the reduced axis gets an allreduce and a
slice instead of a reduce-scatter.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ..array import ShardArray
from ..autograd.tape import differentiable
from ..dtypes import accumulation_dtype, check_domain
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
    that dim's axes; it is allreduced when the value is needed. Low-precision
    floats are summed in float32 and rounded once, their split sums resolved
    eagerly in float32 (see the module doc).

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
    acc = accumulation_dtype(x.dtype)
    if acc is None:
        return _partial_sum(x, dims, None)
    return _round(_partial_sum(x, dims, acc), x.dtype)


def _partial_sum(x: ShardArray, dims: tuple[str, ...], acc: np.dtype | None) -> ShardArray:
    """The local sums over ``dims`` (in ``acc`` when given), pending over the axes of split reduced dims."""
    index, keep, axes = _split(x, dims)
    xp = x.mesh.backend.xp
    reduced_axes = [a for d in dims for a in x.spec.of(d)]
    used = x.spec.used_axes.union(x.pending)
    if acc is None:
        shards = map_blocks(x.mesh, used, lambda s: xp.sum(s, axis=index), x.shards)
    else:
        shards = map_blocks(x.mesh, used, lambda s: xp.sum(s, axis=index, dtype=acc), x.shards)
    pending = mesh_order(x.mesh, set(x.pending).union(reduced_axes))
    return new_array(x.mesh, keep, x.sizes, axes, shards, pending, dtype=acc)


def _round(wide: ShardArray, dtype: np.dtype) -> ShardArray:
    """Resolve a wide (float32) sum, then round it once to ``dtype``."""
    wide = resolve(wide, wide.spec.axes)
    xp = wide.mesh.backend.xp

    def narrow(s: Any) -> Any:
        with np.errstate(over="ignore"):  # a sum beyond the dtype's range is inf, as in NumPy
            return xp.asarray(s).astype(dtype)

    shards = map_blocks(wide.mesh, wide.spec.used_axes, narrow, wide.shards)
    return ShardArray(wide.mesh, wide.spec, dtype, shards)


@differentiable("mean")
def mean(x: ShardArray, dims: Any = None) -> ShardArray:
    """Mean over ``dims`` (see ``sum``; a pending sum stays pending).

    Low-precision floats are averaged in float32 and rounded once, as NumPy
    does: the mean of 30000 float16 threes is 3, though their sum overflows.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.full(mesh, {"batch": 2, "io": 30000}, 3.0, dtype="float16", layout={"io": "col"})
        >>> x.mean("io").numpy(), x.sum("io").numpy()
        (array([3., 3.], dtype=float16), array([inf, inf], dtype=float16))
    """
    dims = dims_arg(x, dims, "mean")
    count = math.prod(x.sizes[d] for d in dims)
    scale = 1.0 / count if count else float("nan")
    acc = accumulation_dtype(x.dtype)
    if acc is None:
        return sum.__wrapped__(x, dims) * scale
    wide = _partial_sum(x, dims, acc) if dims else x.astype(acc)
    return _round(wide * scale, x.dtype)


def _identity(dtype: np.dtype, op: str) -> Any:
    if dtype.kind == "f":
        return -np.inf if op == "max" else np.inf
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if op == "max" else info.max
    return op != "max"


def _extreme(x: ShardArray, dims: Any, op: str) -> ShardArray:
    dims = dims_arg(x, dims, op)
    check_domain(op, [x], "real")
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
