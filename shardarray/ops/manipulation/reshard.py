"""Resharding: move an array to another mesh (another shape, device set or backend) by a block-overlap plan.

The plan is metadata only, the same on every process: for each target device,
the distinct source blocks whose global regions overlap its target block and
the overlapping region of each. A region is read from a device that holds
that source block: the target device itself when it holds it (no traffic),
else one of the block's replicas (spread over the replicas by target device).
Source device ``d`` and target device ``d`` count as the same device (under
MPI both are process ``d``), so a region moves only between different device
indices.

On one process (emulated meshes, NCCL meshes of one process, meta) the
regions are plain copies, staged through the host when the backends differ
(``backend.to_numpy``/``from_numpy``); under MPI (both meshes ``comm="mpi"``
over the same processes) every process sends its regions to their targets
in one ``Alltoallv`` of byte buffers over ``COMM_WORLD``
(``comm.mpi.exchange_flat``). Either way the comm log gets one
``"alltoall"`` record over the target mesh's axes whose ``elements`` is the
most any device sends to other devices (``ReshardPlan.sent``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...comm.log import record
from ...comm.mpi import _mpi, exchange_flat
from ...core.common import require_array
from ...core.relayout import relayout, resolve_to
from ...core.tape import Context, differentiable, register_vjp
from ...errors import BackendError, MeshError
from ...layout import Layout, block_bounds, make_layout
from ...mesh import AxesSpec, Mesh

Bounds = tuple[tuple[int, int], ...]
Region = tuple[int, Bounds]
"""``(source device, global (start, stop) per dim)`` of one piece of a target block."""


def _overlap(a: Bounds, b: Bounds) -> Bounds | None:
    """The intersection of two boxes, or None when it is empty (a 0-d box is one element)."""
    out = tuple((max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in zip(a, b))
    return None if any(lo >= hi for lo, hi in out) else out


def _local(region: Bounds, block: Bounds) -> tuple[slice, ...]:
    """``region`` as slices of the block that starts at ``block``'s lower corner."""
    return tuple(slice(lo - b0, hi - b0) for (lo, hi), (b0, _) in zip(region, block))


def _count(region: Bounds) -> int:
    return math.prod(hi - lo for lo, hi in region)


class ReshardPlan:
    """Which source device sends which region of each target block.

    Attributes:
        src_bounds, dst_bounds: per device, the global ``(start, stop)`` of its block in every dim.
        regions: ``regions[t]`` = the ``(source device, region)`` pieces of target device ``t``'s
            block, in a fixed order (every process computes the same plan).

    Example:
        >>> a, b = sa.Mesh({"row": 2, "col": 2}), sa.Mesh({"model": 4})
        >>> x = sa.zeros(a, {"i": 8}, layout={"i": "row"})
        >>> plan = ReshardPlan(a, x.spec, b, make_layout(b, ("i",), (8,), {"i": "model"}))
        >>> plan.regions[3]      # target block [6, 8) comes from device 3, which holds [4, 8)
        [(3, ((6, 8),))]
    """

    def __init__(self, src_mesh: Mesh, src_layout: Layout, dst_mesh: Mesh, dst_layout: Layout) -> None:
        self.src_bounds = block_bounds(src_mesh, src_layout)
        self.dst_bounds = block_bounds(dst_mesh, dst_layout)
        holders: dict[Bounds, list[int]] = {}
        for d, b in enumerate(self.src_bounds):
            holders.setdefault(b, []).append(d)
        self.regions: list[list[Region]] = []
        for t, tb in enumerate(self.dst_bounds):
            pieces = []
            for sb, devs in holders.items():
                region = _overlap(sb, tb)
                if region is not None:
                    pieces.append((t if t in devs else devs[t % len(devs)], region))
            self.regions.append(pieces)

    def sent(self) -> list[int]:
        """Per device index, the elements it sends to other device indices (its own regions stay)."""
        out = [0] * max(len(self.src_bounds), len(self.dst_bounds))
        for t, pieces in enumerate(self.regions):
            for s, region in pieces:
                if s != t:
                    out[s] += _count(region)
        return out


def _log(plan: ReshardPlan, mesh: Mesh, dtype: np.dtype) -> int:
    """Record the exchange: the most elements any device sends to others; returns that number."""
    most = max(plan.sent(), default=0)
    if most:
        record(
            "alltoall",
            mesh.axis_names,
            max(len(plan.src_bounds), len(plan.dst_bounds)),
            most,
            dtype.itemsize,
            str(dtype),
            sent=True,
        )
    return most


def _block_shape(b: Bounds) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in b)


def _in_process(x: ShardArray, mesh: Mesh, layout: Layout, plan: ReshardPlan) -> list[Any]:
    """Target shards by copies within this process (through the host when the backends differ)."""
    src, dst = x.mesh.backend, mesh.backend
    if dst.has_data and not src.has_data:
        raise BackendError(
            f"reshard: the array {x.sizes} lives on the 'meta' backend ({x.mesh}), which holds shapes only, so it "
            f"cannot fill mesh {mesh} with values; build the source on backend='numpy' (or 'cupy') to move values"
        )
    same = src.name == dst.name == "numpy"
    out: list[Any] = [None] * mesh.size
    scope = dst.device_scope
    for rep, devices in mesh.replica_classes(layout.used_axes):
        tb = plan.dst_bounds[rep]
        shape = _block_shape(tb)
        if not dst.has_data:
            block: Any = MetaArray(shape, x.dtype)
        else:
            host = np.empty(shape, dtype=x.dtype)
            for s, region in plan.regions[rep]:
                piece = x.shards[s][_local(region, plan.src_bounds[s])]
                host[_local(region, tb)] = piece if same else src.to_numpy(piece)
            if scope is None:
                block = dst.from_numpy(host)
            else:
                with scope(rep):
                    block = dst.from_numpy(host)
        for d in devices:
            out[d] = block
    return out


def _over_mpi(x: ShardArray, mesh: Mesh, plan: ReshardPlan) -> list[Any]:
    """This process's target shard: its regions for others go out in one Alltoallv over the job."""

    world = _mpi().COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    src, dst = x.mesh.backend, mesh.backend
    mine = src.to_numpy(x.shards[rank])
    sb = plan.src_bounds[rank]
    send: list[list[np.ndarray]] = [[] for _ in range(size)]
    recv_counts = [0] * size
    for t, pieces in enumerate(plan.regions):
        for s, region in pieces:
            if s == rank and t != rank:
                send[t].append(np.ascontiguousarray(mine[_local(region, sb)]).reshape(-1))
            if t == rank and s != rank:
                recv_counts[s] += _count(region)
    flat = [np.concatenate(p) if p else np.empty(0, x.dtype) for p in send]
    recv = exchange_flat(world, flat, recv_counts, x.dtype, mesh.axis_names, max(plan.sent(), default=0))
    tb = plan.dst_bounds[rank]
    host = np.empty(_block_shape(tb), dtype=x.dtype)
    used = [0] * size
    for s, region in plan.regions[rank]:
        target = _local(region, tb)
        if s == rank:
            host[target] = mine[_local(region, sb)]
        else:
            n = _count(region)
            host[target] = recv[s][used[s] : used[s] + n].reshape(_block_shape(region))
            used[s] += n
    out: list[Any] = [None] * mesh.size
    if dst.device_scope is None:
        out[rank] = dst.from_numpy(host)
    else:
        with dst.device_scope(rank):
            out[rank] = dst.from_numpy(host)
    return out


def reshard(x: ShardArray, mesh: Mesh, layout: Mapping[str, AxesSpec] | Layout | None = None) -> ShardArray:
    """``x`` moved to ``mesh`` (another shape, device set or backend) with ``layout``; values and dtype kept.

    A pending sum is resolved first (on ``x``'s mesh). On the same mesh this
    is ``sa.relayout``. Otherwise every target block is assembled from the
    regions of the source blocks that overlap it (``ReshardPlan``).

    Collectives: on one process, none (plain copies, through the host when
    the backends differ: numpy/cupy; numpy → meta keeps shapes only); the comm
    log still gets one ``"alltoall"`` record over ``mesh``'s axes whose
    ``elements`` is the most any device index sends to other device indices
    (a region a device already holds does not count). Under MPI (both meshes
    ``comm="mpi"`` over the same processes) one ``Alltoallv`` over
    ``COMM_WORLD`` carrying exactly those regions, logged the same way: a
    device receives at most its new block, and sends each region of its source
    block to every target device that holds it and does not (at most its source
    block times the target's replication of that region: 4 devices resharded
    from a split to a replicated layout each send their block to the 3 others).

    Args:
        x: the array.
        mesh: the target mesh.
        layout: ``{dim: axis | (axes) | None}`` on ``mesh``, or a ``Layout``;
            None: a positional array (``shardarray.array_api``) gets the namespace's default split (axis
            ``k`` over mesh axis ``k``, as ``xp.asarray`` and ``sa.checkpoint.load`` give it), a named one
            follows ``mesh``'s rules by dim name (dims with no rule are not split).

    Returns:
        A ShardArray on ``mesh`` with ``x``'s dims, sizes, dtype and values.

    Raises:
        MeshError: ``mesh`` is not a Mesh, or one mesh is MPI and the other is not.
        LayoutError: ``layout`` names axes ``mesh`` does not have, or uses one twice.
        BackendError: values asked of a ``meta`` source.

    Example:
        >>> a = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(8.0), dims=("i",), mesh=a, layout={"i": "row"})
        >>> y = sa.reshard(x, sa.Mesh({"model": 4}), {"i": "model"})
        >>> y.shards[1], y.layout
        (array([2., 3.]), {'i': ('model',)})
    """
    x = require_array(x, "reshard")
    if layout is None and x.positional:  # the kind picks the default (the op itself runs on a named view)
        layout = dict(zip(x.dims, mesh.axis_names)) if isinstance(mesh, Mesh) else None
    return _reshard(x, mesh, layout)


@differentiable("reshard")
def _reshard(x: ShardArray, mesh: Mesh, layout: Mapping[str, AxesSpec] | Layout | None) -> ShardArray:
    """``reshard`` with the layout chosen (the recorded op: its kind by construction, ``core.kinds``)."""
    if not isinstance(mesh, Mesh):
        raise MeshError(
            f"reshard: mesh must be a sa.Mesh; got {type(mesh).__name__} {mesh!r:.80}. "
            f"Make one with sa.Mesh({{'model': 4}})"
        )
    lay = make_layout(mesh, x.dims, x.shape, layout, what=f"reshard target of array {x.sizes}")
    x = resolve_to(x)
    if mesh is x.mesh or mesh == x.mesh:
        out = relayout(x, lay)
        if out.mesh is not mesh:  # an equal mesh (other rules): the blocks stay, the result lives on the target
            out = ShardArray._trusted(mesh, out._layout, out.dtype, out._shards, out.pending)
        return out
    kinds = {x.mesh.comm_kind == "mpi", mesh.comm_kind == "mpi"}
    if len(kinds) > 1:
        raise MeshError(
            f"reshard: the array {x.sizes} lives on {x.mesh} (comm={x.mesh.comm_kind!r}) and the target mesh is "
            f"{mesh} (comm={mesh.comm_kind!r}); both must be MPI meshes over the same processes, or both in this "
            f"process. Build the target with comm={x.mesh.comm_kind!r}"
        )
    plan = ReshardPlan(x.mesh, x.spec, mesh, lay)
    if mesh.comm_kind == "mpi":
        shards = _over_mpi(x, mesh, plan)
    else:
        shards = _in_process(x, mesh, lay, plan)
        _log(plan, mesh, x.dtype)
    return ShardArray(mesh, lay, x.dtype, shards)


@register_vjp("reshard")
def _reshard_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    """The cotangent goes back to the input's mesh and layout (the same plan, reversed)."""
    x = ctx.args[0]
    return [_reshard.__wrapped__(g, x.mesh, x.spec)] + [None] * (len(ctx.args) - 1)


__all__ = ["ReshardPlan", "reshard"]
