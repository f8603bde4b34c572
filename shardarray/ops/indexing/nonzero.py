"""``nonzero`` (global indices of the nonzero elements) and ``count_nonzero`` (local count + allreduce).

``nonzero(x)`` is ``select`` of each device's global coordinates by the mask
``x != 0``: the coordinates are made locally from the block offsets (no
communication), then placed as ``select`` places data (an allgather of one
count per device, one alltoallv; an alltoall first when several dims are
split). The results are 1-D int64 arrays of the global count in the
canonical ceil-block layout over ``x``'s mesh axes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import dims_arg, map_blocks, new_array, require_array
from ...core.relayout import resolve_to
from ...core.tape import nondifferentiable
from ...errors import BackendError, DimensionError
from ...layout import block_bounds
from ..elementwise import arithmetic as ew
from ..manipulation.dims import expand_dims
from ..manipulation.structure import astype
from ..reduction import reduce as red
from .mask import select
from .slicing import isel


@nondifferentiable("count_nonzero")
def count_nonzero(x: ShardArray, dims: Any = None, keepdims: bool = False) -> ShardArray:
    """How many elements of ``x`` are nonzero over ``dims`` (default all), as int64.

    Collectives: a local count, then one allreduce over the mesh axes of the
    counted dims (one int64 per output element); nothing when they are unsplit.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0, 1, 2], [3, 0, 0]]), dims=("b", "s"), mesh=mesh, layout={"s": "col"})
        >>> sa.count_nonzero(x, "s").numpy(), int(sa.count_nonzero(x))
        (array([2, 1]), 3)
    """

    x = require_array(x, "sa.count_nonzero")
    dims = dims_arg(x, dims, "count_nonzero")
    nz = ew.not_equal(x, 0) if x.dtype.kind != "b" else x
    out = red.sum.__wrapped__(astype(nz, "int64"), dims) if dims else astype(nz, "int64")
    out = resolve_to(out) if out.pending else out
    if keepdims:
        for d in dims:
            out = expand_dims(out, d, x.dims.index(d))
    return out


@nondifferentiable("nonzero")
def nonzero(x: ShardArray) -> tuple[ShardArray, ...]:
    """The global indices of the nonzero elements of ``x``, one 1-D int64 array per dim, in row-major order.

    Each result has one dim ``"nonzero"`` of the global count, in the
    canonical ceil-block layout over the mesh axes that split ``x``.
    Collectives: as ``sa.select`` with the mask ``x != 0`` on an int64
    coordinate array made locally: one allgather of one count per device,
    one alltoallv of each device's ``ndim`` coordinates per nonzero element
    (an alltoall of the block first when more than one dim is split).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0, 1], [2, 0], [0, 3]]), dims=("b", "s"), mesh=mesh,
        ...                layout={"b": "row", "s": "col"})
        >>> [i.numpy() for i in sa.nonzero(x)]
        [array([0, 1, 2]), array([1, 0, 1])]
    """
    x = require_array(x, "sa.nonzero")
    if x.ndim == 0:
        raise DimensionError(
            "nonzero: a 0-d array has no indices (as in the array API standard); use "
            "sa.expand_dims(x, 'i') first, or bool(x)"
        )
    if not x.mesh.backend.has_data:
        raise BackendError(
            f"nonzero: how many elements of the array {x.sizes} are nonzero depends on its values, which the meta "
            f"backend does not hold; run it on a NumPy or CuPy mesh (sa.count_nonzero's shape needs no values)"
        )
    x = resolve_to(x) if x.pending else x
    mask = ew.not_equal(x, 0) if x.dtype.kind != "b" else x
    mesh, xp = x.mesh, x.mesh.backend.xp
    bounds = block_bounds(mesh, x.spec)
    nd = x.ndim
    coord = "__coord"

    def coords(dev: int, s: Any) -> Any:
        if isinstance(s, MetaArray):
            return MetaArray(s.shape + (nd,), np.int64)
        grids = xp.meshgrid(*(xp.arange(lo, hi, dtype=np.int64) for lo, hi in bounds[dev]), indexing="ij")
        return xp.stack(grids, axis=-1) if grids else xp.zeros((nd,), dtype=np.int64)

    shards = map_blocks(mesh, x.spec.used_axes, coords, range(mesh.size), x.shards)
    axes = dict(zip(x.dims, x.spec.axes))
    sizes = dict(x.sizes, **{coord: nd})
    c = new_array(mesh, x.dims + (coord,), sizes, axes, shards, dtype=np.dtype(np.int64))
    picked = select(c, mask, new_dim="nonzero")
    return tuple(isel(picked, {coord: k}) for k in range(nd))


__all__ = ["count_nonzero", "nonzero"]
