"""``searchsorted``: insertion points of ``values`` in a sorted 1-D array that may be split.

Algorithm (chosen because its traffic scales with ``values``' block, not with
the sorted array): each device searches its own block of the sorted array
(``xp.searchsorted`` of its ``values`` block, on the backend's array module;
bfloat16 as float32), which counts the block's
entries below (``side="left"``) or not above (``side="right"``) each value;
as the blocks are consecutive pieces of one sorted array, the global
insertion point is the **sum of these counts over the sorted dim's axes:
one allreduce** of one int64 per value of the device's block. (The other
way, locating each value's block by an allgather of the ``p`` block
boundaries and sending values to their owners and answers back, costs two
alltoallv of the same volume plus the allgather.) ``values`` may have any
dims and layout; if it is split over one of the sorted dim's axes it is
first gathered over those axes (an allgather of its block), because each
device must see every value its group searches. The result has ``values``'
dims and layout, dtype int64. NaN sorts last (NumPy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import common_mesh, map_blocks, require_array
from ...core.relayout import resolve, to_axes
from ...core.tape import nondifferentiable
from ...errors import ArgumentError, DimensionError, DTypeError
from .samplesort import sort_keys


@nondifferentiable("searchsorted")
def searchsorted(sorted_x: ShardArray, values: ShardArray, side: str = "left") -> ShardArray:
    """Indices where ``values`` would be inserted into the sorted 1-D ``sorted_x`` to keep it sorted.

    As ``np.searchsorted(sorted_x, values, side)``: ``side="left"`` gives the
    first suitable position, ``"right"`` the last. Collectives: one allreduce
    (sum) over ``sorted_x``'s axes of one int64 per value in a device's
    ``values`` block; nothing when ``sorted_x`` is unsplit. ``values`` split
    over one of those axes is first allgathered over them.

    Args:
        sorted_x: a 1-D real ShardArray sorted ascending (NaN last), any layout.
        values: a ShardArray of values to locate, any dims and layout.
        side: ``"left"`` or ``"right"``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> s = sa.asarray(np.array([1.0, 2.0, 2.0, 3.0, 5.0]), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> v = sa.asarray(np.array([2.0, 4.0, 9.0]), dims=("q",), mesh=mesh, layout={"q": "col"})
        >>> with sa.comm_log() as log:
        ...     k = sa.searchsorted(s, v)
        >>> k.numpy(), [(r.op, r.axes, r.elements) for r in log.records]
        (array([1, 4, 5]), [('allreduce', ('row',), 2)])
    """
    sorted_x = require_array(sorted_x, "searchsorted", "sorted_x")
    values = require_array(values, "searchsorted", "values")
    mesh = common_mesh([sorted_x, values], "searchsorted")
    if sorted_x.ndim != 1:
        raise DimensionError(
            f"searchsorted: sorted_x must be 1-D; got dims {sorted_x.sizes}. Search one row at a time, or merge "
            f"its dims with sorted_x.merge_dims({sorted_x.dims}, 'flat') if it is sorted as a whole"
        )
    if side not in ("left", "right"):
        raise ArgumentError(f"searchsorted: side must be 'left' or 'right'; got side={side!r}")
    for name, a in (("sorted_x", sorted_x), ("values", values)):
        if a.dtype.kind not in "biuf" and a.dtype.name != "bfloat16":
            raise DTypeError(
                f"searchsorted: {name} must be real numeric or bool; got dtype {a.dtype} ({a.sizes}); "
                f"for complex values search sa.real(...)"
            )
    sorted_x = resolve(sorted_x, sorted_x.spec.axes)
    axes = sorted_x.spec.axes[0]
    values = resolve(values, values.spec.axes)
    target = tuple(tuple(a for a in ax if a not in axes) for ax in values.spec.axes)
    vals = to_axes(values, target, False)
    xp = mesh.backend.xp
    used = vals.spec.used_axes.union(axes)

    def local(s: Any, v: Any) -> Any:
        if isinstance(s, MetaArray) or isinstance(v, MetaArray):
            return MetaArray(v.shape, np.int64)
        return xp.searchsorted(sort_keys(s), sort_keys(v), side=side).astype(np.int64)

    counts = map_blocks(mesh, used, local, sorted_x.shards, vals.shards)
    if axes and mesh.axes_size(axes) > 1:
        counts = mesh.comm.allreduce(counts, axes, "sum")
    out = ShardArray(mesh, vals.spec, np.int64, counts)
    return to_axes(out, values.spec.axes, False)


__all__ = ["searchsorted"]
