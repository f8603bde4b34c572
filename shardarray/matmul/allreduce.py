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

from .. import profiler
from ..array import ShardArray
from ..errors import DimensionError
from ..ops.common import map_blocks, merged_axes, mesh_order, new_array
from ..ops.relayout import to_axes

_LETTERS = string.ascii_letters


def contract(
    operands: Sequence[ShardArray], dims: tuple[str, ...], sizes: dict[str, int], out_dims: tuple[str, ...]
) -> ShardArray:
    """The einsum of ``operands`` over the union ``dims`` into ``out_dims``, possibly pending."""
    mesh = operands[0].mesh
    pending_ops = [i for i, op in enumerate(operands) if op.pending]
    axes = merged_axes(operands, dims)
    used = {a for ax in axes.values() for a in ax}
    keep = pending_ops[0] if pending_ops and not used.intersection(operands[pending_ops[0]].pending) else None
    prepared = [to_axes(op, tuple(axes[d] for d in op.dims), i == keep) for i, op in enumerate(operands)]

    if len(dims) > len(_LETTERS):
        raise DimensionError(f"einsum over {len(dims)} distinct dims; at most {len(_LETTERS)} are supported")
    letter = {d: _LETTERS[i] for i, d in enumerate(dims)}
    equation = ",".join("".join(letter[d] for d in op.dims) for op in prepared)
    equation += "->" + "".join(letter[d] for d in out_dims)

    contracted = [a for d in dims if d not in out_dims for a in axes[d]]
    pending = set(contracted).union(prepared[keep].pending if keep is not None else ())
    backend = mesh.backend
    shards = map_blocks(
        mesh, used.union(pending), lambda *s: backend.einsum(equation, *s), *(op.shards for op in prepared)
    )
    if profiler.ACTIVE:
        profiler.on_einsum(equation, [op.shards[mesh.local_device] for op in prepared])
        profiler.einsum_result(shards[mesh.local_device])
    return new_array(mesh, out_dims, sizes, axes, shards, mesh_order(mesh, pending))
