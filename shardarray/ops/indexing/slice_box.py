"""Slicing several dims at once: one local strided view, then one rebalancing exchange for every dim that needs one.

``x[a:b:s, c:d:t]`` on an array split in 2-D could slice one dim after the
other, copying every block once per dim. ``slice_dims`` instead first
restricts every device's block to the entries it holds of the selection, in
every sliced dim at once (a strided view: no copy, no traffic), and only then
rebalances the dims whose selected entries are not already where their
canonical ceil-blocks need them, all of them in one ``alltoallv_boxes`` over
those dims' axes (``movement.exchange``): a device sends at most its (already
sliced) block, and each entry is written once, straight into its place in
the receiver's new block. A dim whose entries all stay put costs nothing, and
when no dim needs an exchange the result's blocks are views of ``x``'s, as
NumPy's basic slicing gives a view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...array import ShardArray
from ...core.movement import MovePlan, _slice, exchange, k_range
from ...core.relayout import resolve_to
from ...core.tape import differentiable
from ...layout import Layout, block_bounds

Box = tuple[str, int, int, int]
"""``(dim, start, step, count)``: entries ``start + k·step`` for ``k < count`` of ``dim``."""


@differentiable("slice_dims")
def slice_dims(x: ShardArray, boxes: Sequence[Box]) -> ShardArray:
    """Entries ``start + k·step`` (``k < count``) of each boxed dim, every dim in its canonical block layout.

    Collectives: when some split dims' selected entries do not already lie
    on the devices whose new blocks need them, one ``alltoallv`` (logged
    ``"alltoall"``) over those dims' axes together (each device sends at most
    its own sliced block); none otherwise. Unsplit dims are sliced locally.

    Args:
        x: the array.
        boxes: ``(dim, start, step, count)`` per sliced dim (normalized: see
            ``slicing.normalize_slice``), at most one per dim.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(64.0).reshape(8, 8), dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
        >>> with sa.comm_log() as log:
        ...     y = slice_dims(x, [("i", 1, 1, 6), ("j", 0, 2, 4)])      # x[1:-1, ::2]: nothing moves
        >>> bool((y.numpy() == x.numpy()[1:-1, ::2]).all()), len(log.records)
        (True, 0)
    """
    x = resolve_to(x) if x.pending else x
    mesh, spec = x.mesh, x.spec
    box = {d: (start, step, count) for d, start, step, count in boxes}
    bounds = block_bounds(mesh, spec)
    sizes = tuple(box[d][2] if d in box else n for d, n in zip(x.dims, x.shape))
    # the k-range of every boxed dim that each device holds: its block restricted to the selection
    held: dict[int, list[tuple[int, int]]] = {}
    for axis, d in enumerate(x.dims):
        if d in box:
            start, step, count = box[d]
            held[axis] = [k_range(start, step, *bounds[dev][axis], count) for dev in range(mesh.size)]

    def restrict(dev: int) -> Any:
        b = x.shards[dev]
        index = []
        for axis in range(x.ndim):
            if axis not in held:
                index.append(slice(None))
                continue
            start, step, _ = box[x.dims[axis]]
            k0, k1 = held[axis][dev]
            if k0 >= k1:
                index.append(slice(0, 0))
            else:
                index.append(_slice(start + k0 * step - bounds[dev][axis][0], k1 - k0, step))
        return b[tuple(index)]

    shards: list[Any] = [None] * mesh.size
    scope = mesh.backend.scope
    for rep, devices in mesh.replica_classes(spec.used_axes):
        if x.shards[rep] is None:
            continue
        with scope(rep):
            view = restrict(rep)
        for dev in devices:
            shards[dev] = view
    moves = []
    for axis in held:
        axes = spec.axes[axis]
        if not axes:
            continue
        radix = [mesh.axis_size(a) for a in axes]
        members = mesh.groups(axes)[0]
        count = box[x.dims[axis]][2]
        plan = MovePlan([count], count, [(0, 1, 0, 1, count)], radix, src_blocks=[[held[axis][m] for m in members]])
        if not plan.local:
            moves.append((axis, axes, plan))
    if moves:
        shards = exchange(mesh, [shards], moves, x.dtype)
    return ShardArray(mesh, Layout(x.dims, sizes, spec.axes), x.dtype, shards)


__all__ = ["Box", "slice_dims"]
