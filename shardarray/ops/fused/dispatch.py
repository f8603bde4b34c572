"""Where the fused CUDA kernels replace array code: the layout checks and the per-block maps.

A row kernel (softmax, cross-entropy, layer norm) needs its dim to be the
last dim of the array and not split: then every block holds whole rows and
the op is one kernel per block, with no communication. Otherwise, and on
NumPy or meta shards, the ops run their array path (which reduces across a
split dim with allreduces). The kernels are in ``kernels/`` and
``backend.cuda_kernels``.

Example (CuPy shards on one GPU; NumPy shards take the array path):
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.zeros(mesh, {"batch": 4, "vocab": 6}, layout={"batch": "row"})
    >>> rows_ready(x, "vocab"), kernels_for(x, "softmax")
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...array import ShardArray
from ...backend import cuda_kernels
from ...core import plans
from ...core.common import map_blocks, map_blocks_multi, new_array
from ...core.relayout import to_axes
from ..manipulation.structure import transpose


def kernels_for(x: ShardArray, name: str) -> bool:
    """Whether ``kernels/<name>.cu`` runs for ``x``'s shards (CuPy, a float dtype, kernels on)."""
    backend = x.mesh.backend
    return backend.has_data and cuda_kernels.supports(backend, x.dtype, name)


def single_dim(dims: Any) -> str | None:
    """``dims`` as one dim name, or None when it names several."""
    if isinstance(dims, str):
        return dims
    if isinstance(dims, (tuple, list)) and len(dims) == 1 and isinstance(dims[0], str):
        return dims[0]
    return None


def rows_ready(x: ShardArray, dim: str | None) -> bool:
    """``dim`` is ``x``'s last dim and unsplit: every block holds whole rows."""
    return dim is not None and bool(x.dims) and x.dims[-1] == dim and not x.spec.of(dim)


def like(a: ShardArray, x: ShardArray) -> ShardArray | None:
    """``a`` in ``x``'s dim order and layout, resolved (None when their dims differ)."""
    if a.dims != x.dims:  # (the same order: no transpose to make)
        if sorted(a.dims) != sorted(x.dims):
            return None
        a = transpose.__wrapped__(a, x.dims)
    return to_axes(a, x.spec.axes, False)


def map_like(x: ShardArray, fn: Callable[..., Any], *others: ShardArray, dtype: Any = None) -> ShardArray:
    """``fn(xp, x_block, *other_blocks)`` per block, a result with ``x``'s dims and layout."""
    xp = x.mesh.backend.xp
    shards = map_blocks(x.mesh, x.spec.used_axes, lambda *b: fn(xp, *b), x.shards, *(o.shards for o in others))
    return ShardArray(x.mesh, x.spec, dtype or x.dtype, shards)


def map_rows_multi(x: ShardArray, n_out: int, fn: Callable[..., tuple[Any, ...]], *others: Any) -> list[list[Any]]:
    """``fn(xp, x_block, *other_blocks)`` returning ``n_out`` blocks: a shard list per output."""
    mesh = x.mesh
    backend = mesh.backend
    xp = backend.xp
    lists = [o.shards if isinstance(o, ShardArray) else o for o in others]
    if backend.has_data and backend.device_scope is None:  # map_blocks_multi's own path, its classes looked up here
        both = plans.map_classes(
            mesh.size, mesh.replica_classes(x.spec.used_axes), lambda *b: fn(xp, *b), [x.shards, *lists]
        )
        return [[None if r is None else r[i] for r in both] for i in range(n_out)]
    return map_blocks_multi(mesh, x.spec.used_axes, n_out, lambda *b: fn(xp, *b), x.shards, *lists)


def rows_result(x: ShardArray, shards: list[Any], dtype: Any = None) -> ShardArray:
    """An array with ``x``'s dims but the last, from per-row blocks."""
    dims = x.dims[:-1]
    sizes = dict(zip(x.dims, x.shape))
    return new_array(x.mesh, dims, sizes, dict(zip(dims, x.spec.axes[:-1])), shards, dtype=dtype or x.dtype)
