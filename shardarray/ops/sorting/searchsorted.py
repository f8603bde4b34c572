"""``searchsorted``: insertion points of ``values`` in a sorted 1-D array that may be split.

Three algorithms, each with traffic proportional to a device's block of
``values`` (or to the small sorted array), never gathering ``values``:

* **counts** (``values`` not split over the sorted dim's axes ``A``): each
  device searches its own block of the sorted array (``xp.searchsorted`` of
  its ``values`` block, on the backend's array module; bfloat16 as float32),
  which counts the block's entries below (``side="left"``) or not above
  (``side="right"``) each value; the blocks being consecutive pieces of one
  sorted array, the global insertion point is the sum of these counts over
  ``A``: **one allreduce** of one int64 per value of the device's block.
* **small sorted array** (``values`` split over some of ``A``, the sorted
  array at most ``SMALL`` entries or no longer than a values block): **one
  allgather** of the sorted array over ``A`` (traffic of the sorted array's
  size), then each device searches its own block of values locally.
* **routing** (``values`` split over some of ``A``, the sorted array large):
  **one allgather of the splitters** (the first key of each sorted block, one
  per device), each value's owner is the last block whose first key is below
  it (``left``) or not above it (``right``); then ``route.py``: one alltoallv
  of counts (``p - 1`` int64), **one alltoallv of the values** to their
  owners, a local search plus the block's offset, **one alltoallv of the
  answers** (one int64 per value) back.

The result has ``values``' dims and layout, dtype int64. NaN sorts last (NumPy). Complex values are searched in
NumPy's order (``order.py``: real part, then imaginary part, NaNs last); where either array is complex, both are
cast to their common complex dtype first, as NumPy does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import common_mesh, map_blocks, require_array
from ...core.relayout import resolve, to_axes
from ...core.tape import nondifferentiable
from ...errors import ArgumentError, DimensionError, DTypeError
from ...layout import block_bounds
from ..indexing.route import Route, owner_table
from ..manipulation.structure import astype
from . import order as keyorder
from .samplesort import sort_keys


@nondifferentiable("searchsorted")
def searchsorted(sorted_x: ShardArray, values: ShardArray, side: str = "left") -> ShardArray:
    """Indices where ``values`` would be inserted into the sorted 1-D ``sorted_x`` to keep it sorted.

    As ``np.searchsorted(sorted_x, values, side)``: ``side="left"`` gives the
    first suitable position, ``"right"`` the last. Collectives (the module
    docstring): nothing when ``sorted_x`` is unsplit; else, for ``values`` not
    split over its axes, one allreduce (sum) over them of one int64 per value
    of a device's block; for ``values`` split over them, one allgather of a
    small ``sorted_x``, or for a large one an allgather of one splitter per
    device and three alltoallv (counts, values to their owners, answers).

    Args:
        sorted_x: a 1-D ShardArray sorted ascending (NaN last; complex values in NumPy's order), any layout.
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
        if a.dtype.kind not in "biufc" and a.dtype.name != "bfloat16":
            raise DTypeError(f"searchsorted: {name} must be numeric or bool; got dtype {a.dtype} ({a.sizes})")
    if "c" in (sorted_x.dtype.kind, values.dtype.kind):  # NumPy's rule: both in their common (complex) type
        common = np.result_type(*(np.float32 if a.dtype.name == "bfloat16" else a.dtype for a in (sorted_x, values)))
        sorted_x, values = astype(sorted_x, common), astype(values, common)
    sorted_x = resolve(sorted_x, sorted_x.spec.axes)
    axes = sorted_x.spec.axes[0]
    values = resolve(values, values.spec.axes)
    if not values.spec.used_axes.intersection(axes) or values.size == 0:
        return _by_counts(sorted_x, values, side)
    n = sorted_x.shape[0]
    block = max((math.prod(b - a for a, b in dev) for dev in block_bounds(mesh, values.spec)), default=0)
    if n <= max(SMALL, block) or not mesh.backend.has_data:
        return _by_counts(to_axes(sorted_x, ((),), False), values, side)
    return _routed(sorted_x, values, side)


SMALL = 65536  # a sorted array of at most this many entries is allgathered rather than routed to


def _search(xp: Any, s: Any, v: Any, side: str) -> Any:
    if isinstance(s, MetaArray) or isinstance(v, MetaArray):
        return MetaArray(v.shape, np.int64)
    return keyorder.searchsorted(xp, s, v, side)


def _by_counts(sorted_x: ShardArray, values: ShardArray, side: str) -> ShardArray:
    """Each device counts in its block of ``sorted_x``; one allreduce over its axes (none if unsplit)."""
    mesh = sorted_x.mesh
    axes = sorted_x.spec.axes[0]
    target = tuple(tuple(a for a in ax if a not in axes) for ax in values.spec.axes)
    vals = to_axes(values, target, False)  # (values split over axes has no such axes here: no movement)
    xp = mesh.backend.xp
    used = vals.spec.used_axes.union(axes)
    counts = map_blocks(mesh, used, lambda s, v: _search(xp, s, v, side), sorted_x.shards, vals.shards)
    if axes and mesh.axes_size(axes) > 1:
        counts = mesh.comm.allreduce(counts, axes, "sum")
    return to_axes(ShardArray(mesh, vals.spec, np.int64, counts), values.spec.axes, False)


def _routed(sorted_x: ShardArray, values: ShardArray, side: str) -> ShardArray:
    """Splitters allgathered, values routed to the block that holds their insertion point, answers back."""
    mesh = sorted_x.mesh
    backend, xp = mesh.backend, mesh.backend.xp
    axes = sorted_x.spec.axes[0]
    bounds = block_bounds(mesh, sorted_x.spec)
    firsts: list[Any] = [None] * mesh.size
    for d, s in enumerate(sorted_x.shards):
        if s is not None:
            with backend.scope(d):
                k = sort_keys(s)
                firsts[d] = k[:1] if k.shape[0] else xp.zeros((1,), dtype=k.dtype)
    splitters = mesh.comm.allgather(firsts, axes, 0)
    owner: list[Any] = [None] * mesh.size
    keys: list[Any] = [None] * mesh.size
    for d, v in enumerate(values.shards):
        if v is None:
            continue
        who = owner_table(mesh, axes, bounds, 0, d)[1]
        with backend.scope(d):
            k = sort_keys(v).reshape(-1)
            spl = splitters[d][backend.from_numpy(who)]
            b = xp.clip(keyorder.searchsorted(xp, spl, k, side) - 1, 0, None)
            owner[d], keys[d] = backend.from_numpy(who)[b], k
    route = Route(mesh, axes, owner)
    got = route.send(keys)
    answers: list[Any] = [None] * mesh.size
    for d, g in enumerate(got):
        if g is not None:
            with backend.scope(d):
                answers[d] = _search(xp, sorted_x.shards[d], g, side) + bounds[d][0][0]
    back = route.back(answers)
    out = [None if b is None else b.reshape(values.shards[d].shape) for d, b in enumerate(back)]
    return ShardArray(mesh, values.spec, np.int64, out)


__all__ = ["searchsorted"]
