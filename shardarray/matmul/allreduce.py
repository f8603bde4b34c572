"""The layout-driven algorithm (Mesh-TF §6): a local einsum per shard, then a pending sum.

Operands are brought to one computation layout (``merged_axes``: the first
operand that splits a dim decides), every device contracts its shards, and
the axes of split contracted dims become a pending sum on the result, to be
resolved by an allreduce (or a reduce-scatter) when a consumer needs it.
1-D Megatron tensor parallelism is this with rules {heads, d_ff, vocab: model}.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import profiler
from ..array import ShardArray
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
    pending_ops = [i for i, op in enumerate(operands) if op.pending]
    axes = merged_axes(operands, dims)
    used = {a for ax in axes.values() for a in ax}
    keep = pending_ops[0] if pending_ops and not used.intersection(operands[pending_ops[0]].pending) else None
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
