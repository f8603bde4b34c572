"""The layout-driven algorithm (Mesh-TF §6): a local einsum per shard, then a pending sum.

Operands are brought to one computation layout, every device contracts its
shards, and the axes of split contracted dims become a pending sum on the
result, to be resolved by an allreduce (or a reduce-scatter) when a consumer
needs it. 1-D Megatron tensor parallelism is this with rules {heads, d_ff,
vocab: model}.

The computation layout is ``merged_axes`` with one operand leading (the first
operand that splits a dim decides). Where the operands' layouts conflict (two
operands split different dims over one mesh axis), one of them must move:
each operand is tried as the leader, and the layout whose moves receive the
fewest elements per device wins (``_leader``: per moved operand its new block
less what the device holds of it, plus the result block where contracted dims
are split, the allreduce to come, and a pending operand's block where it must
be resolved first; the earlier operand on a tie). So of
``x{m: a}`` and ``w{n: a}`` the smaller is allgathered over ``a`` and the
result is split like the larger (a device needs a whole operand for its block
of a result split over ``a``), unless moving ``a`` onto a contracted dim of
both (two alltoalls of a block) and summing the result over ``a`` receives
less: a long contraction of small operands (``x [m, k] @ w [k, n]`` with
``k`` ≫ ``m, n``: ``(mk + kn)/p + mn`` instead of ``min(mk, kn)``), whose
result is then pending over ``a`` (resolved by a reduce-scatter into a split
consumer, an allreduce otherwise), as a contraction of split dims always is.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import profiler
from ..array import ShardArray
from ..core import leader
from ..core.common import map_blocks, merged_axes, mesh_order
from ..core.plans import map_classes
from ..core.relayout import to_axes
from ..errors import DimensionError
from ..layout import Layout

_LETTERS = string.ascii_letters

#: the most distinct dims an einsum may have: one letter each in the local einsums (NumPy's and CuPy's limit)
MAX_DIMS = len(_LETTERS)


def check_dim_count(dims: Sequence[str]) -> None:
    """Refuse an einsum over more distinct ``dims`` than the local einsums have letters for, whatever its algorithm.

    Raises:
        DimensionError: more than ``MAX_DIMS`` dims.
    """
    if len(dims) > MAX_DIMS:
        raise DimensionError(f"einsum over {len(dims)} distinct dims; at most {MAX_DIMS} are supported")


def contract(
    operands: Sequence[ShardArray], dims: tuple[str, ...], sizes: dict[str, int], out_dims: tuple[str, ...]
) -> ShardArray:
    """The einsum of ``operands`` over the union ``dims`` into ``out_dims``, possibly pending."""
    return run_contract(plan_contract(operands, dims, sizes, out_dims), operands)


@dataclass(frozen=True)
class ContractPlan:
    """What ``contract`` works out for one operand signature (cached by ``sa.einsum``, see ``core.plans``)."""

    mesh: Any
    moves: tuple[tuple[tuple[tuple[str, ...], ...], bool] | None, ...]  # per operand: (target axes, keep) or None
    equation: str
    used: frozenset[str]
    classes: Any  # the replica classes of ``used`` (None: through ``map_blocks``)
    layout: Layout
    pending: tuple[str, ...]
    local: Any  # ``local(*blocks)``: the local contraction (the backend's einsum, or contract2 where it is that)


def plan_contract(
    operands: Sequence[ShardArray], dims: tuple[str, ...], sizes: dict[str, int], out_dims: tuple[str, ...]
) -> ContractPlan:
    """Plan ``contract``: the computation layout, the operands' moves, the local equation, the pending axes."""
    mesh = operands[0].mesh
    axes = _leader(operands, dims, sizes, out_dims) if len(operands) > 1 else None
    if axes is None:
        axes = merged_axes(operands, dims)
    used = {a for ax in axes.values() for a in ax}
    keep = _kept(operands, used)
    moves = []
    for i, op in enumerate(operands):
        target = tuple(axes[d] for d in op.dims)
        moved = (op.pending and i != keep) or target != op.spec.axes
        moves.append((target, i == keep) if moved else None)

    check_dim_count(dims)
    letter = {d: _LETTERS[i] for i, d in enumerate(dims)}
    equation = ",".join("".join(letter[d] for d in op.dims) for op in operands)
    equation += "->" + "".join(letter[d] for d in out_dims)

    contracted = [a for d in dims if d not in out_dims for a in axes[d]]
    pending = set(contracted).union(operands[keep].pending if keep is not None else ())
    every = frozenset(used.union(pending))
    backend = mesh.backend
    fast = backend.has_data and backend.device_scope is None
    local = backend.einsum_fn(equation, [op.dtype for op in operands])
    return ContractPlan(
        mesh=mesh,
        moves=tuple(moves),
        equation=equation,
        used=every,
        classes=mesh.replica_classes(every) if fast else None,
        layout=Layout(out_dims, tuple(sizes[d] for d in out_dims), tuple(axes.get(d, ()) for d in out_dims)),
        pending=mesh_order(mesh, pending),
        local=local,
    )


def _kept(operands: Sequence[ShardArray], used: set[str]) -> int | None:
    """The operand whose pending sum the result carries on (an einsum is linear in each operand): the first pending
    one, when the computation layout uses none of its pending axes; None otherwise (every pending operand is then
    resolved before the local einsums)."""
    first = next((i for i, op in enumerate(operands) if op.pending), None)
    if first is None or used.intersection(operands[first].pending):
        return None
    return first


def _leader(
    operands: Sequence[ShardArray], dims: tuple[str, ...], sizes: dict[str, int], out_dims: tuple[str, ...]
) -> dict[str, tuple[str, ...]] | None:
    """The computation layout with the cheapest moves, each operand tried as the one that decides
    (``core.leader.candidates``), and the first one's with the axes that operands use on different dims moved onto
    a contracted dim; None when the operands' layouts do not conflict (every order gives the same layout).

    The cost of a layout is what a device receives: ``core.leader.move_cost`` (for each operand that must give up
    an axis, not reachable by local slices, its new block less what it holds of it), plus the result block when a
    contracted dim is split there (its allreduce to come). A pending operand is priced too: resolved first (about
    its block) where the layout uses one of its pending axes, else carried on by the result (``_kept``: the result
    block's allreduce to come). The earlier operand wins a tie.
    """
    mesh = operands[0].mesh
    candidates = leader.candidates(operands, dims)
    if len(candidates) == 1:
        return None
    # the axes two operands use on different dims, moved onto a contracted dim of every operand instead: two
    # alltoalls of a block and a pending sum (a reduce-scatter into a split consumer) in place of a whole operand
    where: dict[str, set[str]] = {}
    for op in operands:
        for d, ax in zip(op.dims, op.spec.axes):
            for a in ax:
                where.setdefault(a, set()).add(d)
    clash = [a for a in mesh_order(mesh, [a for a, ds in where.items() if len(ds) > 1]) if mesh.axis_size(a) > 1]
    shared = [d for d in dims if d not in out_dims and all(d in op.dims for op in operands)]
    if clash and shared:
        moved = {d: tuple(a for a in ax if a not in clash) for d, ax in candidates[0].items()}
        moved[shared[0]] += tuple(clash)
        if moved not in candidates:
            candidates.append(moved)

    def cost(axes: dict[str, tuple[str, ...]]) -> int:
        total = leader.move_cost(operands, axes)
        kept = _kept(operands, {a for ax in axes.values() for a in ax})
        for i, op in enumerate(operands):
            if op.pending and i != kept:  # resolved first: an allreduce (or reduce-scatter) of about its block
                total += leader.block(mesh, op.shape, [axes[d] for d in op.dims])
        if kept is not None or any(leader.real(mesh, axes[d]) for d in dims if d not in out_dims):
            total += leader.block(mesh, [sizes[d] for d in out_dims], [axes[d] for d in out_dims])
        return total

    return min(candidates, key=cost)  # (the first of the cheapest: the earlier operand on a tie)


def run_contract(plan: ContractPlan, operands: Sequence[ShardArray]) -> ShardArray:
    """Run a planned ``contract`` on operands of the plan's signature: moves, then one local einsum per block."""
    mesh = plan.mesh
    prepared = [op if m is None else to_axes(op, m[0], m[1]) for op, m in zip(operands, plan.moves)]
    equation = plan.equation
    block = plan.local
    shard_lists = [op.shards for op in prepared]
    if plan.classes is None:
        shards = map_blocks(mesh, plan.used, block, *shard_lists)
    else:
        shards = map_classes(mesh.size, plan.classes, block, shard_lists)
    if profiler.ACTIVE:
        profiler.on_einsum(equation, [op.shards[mesh.local_device] for op in prepared])
        profiler.einsum_result(shards[mesh.local_device])
    return ShardArray._trusted(mesh, plan.layout, np.dtype(shards[mesh.local_device].dtype), shards, plan.pending)
