"""Ops that change names, order or dtype but not values: rename, transpose, astype."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..array import ShardArray
from ..dtypes import as_dtype
from ..errors import DimensionError
from ..layout import Layout, check_dims
from .common import map_blocks
from .relayout import resolve


def rename(x: ShardArray, names: Mapping[str, str]) -> ShardArray:
    """``x`` with dims renamed ``{old: new}`` (no data moves; a pending sum stays)."""
    if not isinstance(names, Mapping):
        raise DimensionError(f"rename takes a dict {{old: new}}; got {names!r}")
    for old in names:
        if old not in x.dims:
            raise DimensionError(f"rename: dim {old!r} is not a dim of the array; its dims are {x.dims}")
    dims = check_dims(tuple(names.get(d, d) for d in x.dims), what=f"rename {dict(names)} of array {x.dims}")
    return ShardArray(x.mesh, Layout(dims, x.shape, x.spec.axes), x.dtype, x.shards, x.pending)


def transpose(x: ShardArray, dims: tuple[str, ...]) -> ShardArray:
    """``x`` with its dims in the order ``dims`` (reversed when empty)."""
    if len(dims) == 1 and not isinstance(dims[0], str):
        dims = tuple(dims[0])
    if not dims:
        dims = tuple(reversed(x.dims))
    if sorted(dims) != sorted(x.dims) or len(set(dims)) != len(dims):
        raise DimensionError(
            f"transpose{tuple(dims)} is not a permutation of the array's dims {x.dims}; name each dim once"
        )
    perm = tuple(x.dims.index(d) for d in dims)
    if perm == tuple(range(x.ndim)):
        return x
    spec = x.spec
    layout = Layout(dims, tuple(spec.sizes[p] for p in perm), tuple(spec.axes[p] for p in perm))
    xp = x.mesh.backend.xp
    shards = map_blocks(x.mesh, spec.used_axes.union(x.pending), lambda s: xp.transpose(s, perm), x.shards)
    return ShardArray(x.mesh, layout, x.dtype, shards, x.pending)


def astype(x: ShardArray, dtype: Any) -> ShardArray:
    """``x`` cast to ``dtype`` on every shard (a pending sum is resolved first)."""
    dt = as_dtype(dtype)
    if dt == x.dtype:
        return x
    x = resolve(x, x.spec.axes)
    shards = map_blocks(x.mesh, x.spec.used_axes, lambda s: s.astype(dt), x.shards)
    return ShardArray(x.mesh, x.spec, dt, shards)
