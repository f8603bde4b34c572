"""Einsum over named dims: a local contraction per shard, then pending sums.

Two spellings::

    sa.einsum(x, w, out=("batch", "hidden"))                # dims matched by name
    sa.einsum("batch io, io hidden -> batch hidden", x, w)  # the same, spelled out

Operands are brought to one computation layout (``merged_axes``), every
device contracts its shards with a cached opt-einsum expression, and the
axes of split contracted dims become a pending sum on the result (Mesh-TF §6).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

from ..array import ShardArray
from ..autograd.tape import differentiable
from ..errors import DimensionError
from ..layout import check_dims
from ..mesh import AxesSpec
from .common import check_rules, common_mesh, map_blocks, merged_axes, mesh_order, new_array, union_dims
from .relayout import relayout, to_axes

_LETTERS = string.ascii_letters


def parse_equation(equation: str, n_operands: int) -> tuple[list[tuple[str, ...]], tuple[str, ...] | None]:
    """Split ``"a b, b c -> a c"`` into operand terms and the output term (None if implicit)."""
    if not isinstance(equation, str):
        raise DimensionError(f"einsum equation must be a string; got {equation!r}")
    lhs, arrow, rhs = equation.partition("->")
    terms = [tuple(t.split()) for t in lhs.split(",")]
    if len(terms) != n_operands:
        raise DimensionError(
            f"einsum equation {equation!r} names {len(terms)} operand(s) but {n_operands} were given"
        )
    out = tuple(rhs.split()) if arrow else None
    return terms, out


def implicit_output(operands: Sequence[ShardArray]) -> tuple[str, ...]:
    """Dims that appear in exactly one operand, in order of appearance."""
    count: dict[str, int] = {}
    for op in operands:
        for d in op.dims:
            count[d] = count.get(d, 0) + 1
    return tuple(d for d, c in count.items() if c == 1)


@differentiable("einsum")
def einsum(
    *args: Any,
    out: Sequence[str] | None = None,
    layout: Mapping[str, AxesSpec] | None = None,
) -> ShardArray:
    """Einstein summation over named dims.

    Args:
        *args: ``(x, w, ...)`` or ``("x dims, w dims -> out dims", x, w, ...)``.
            In the spelled-out form each term must name its operand's dims
            (any order; names are matched, not positions). Without an output
            the result keeps the dims that appear in exactly one operand.
        out: output dims (named form); conflicts with an equation's ``->``.
        layout: optional layout for the result; the pending sum is then
            resolved into it (a reduce-scatter where it splits a dim over a
            pending axis, else an allreduce).

    Returns:
        A ShardArray; if a split dim was contracted, its ``pending`` names the
        axes whose partial sums are still to be added.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.random.normal(mesh, {"batch": 4, "io": 6}, layout={"batch": "row", "io": "col"})
        >>> w = sa.random.normal(mesh, {"io": 6, "hidden": 8}, layout={"io": "col"}, seed=1)
        >>> h = sa.einsum("batch io, io hidden -> batch hidden", x, w)
        >>> h.layout, h.pending
        ({'batch': ('row',)}, ('col',))
        >>> np.allclose(h.numpy(), x.numpy() @ w.numpy())
        True
    """
    if args and isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        terms, eq_out = parse_equation(equation, len(operands))
        if eq_out is not None and out is not None:
            raise DimensionError(f"einsum: give the output either in the equation {equation!r} or as out=, not both")
        out = eq_out if eq_out is not None else out
    else:
        operands, terms = args, None
    if not operands:
        raise DimensionError("einsum needs at least one operand")
    for i, op in enumerate(operands):
        if not isinstance(op, ShardArray):
            raise DimensionError(f"einsum operand {i} is a {type(op).__name__}, not a ShardArray")
        if terms is not None and sorted(terms[i]) != sorted(op.dims):
            raise DimensionError(
                f"einsum term {' '.join(terms[i])!r} does not name the dims {op.dims} of operand {i}; "
                f"each term lists its operand's dim names (in any order)"
            )
    mesh = common_mesh(operands, "einsum")
    dims, sizes = union_dims(operands, "einsum")
    out_dims = implicit_output(operands) if out is None else check_dims(out, what="einsum output")
    for d in out_dims:
        if d not in sizes:
            raise DimensionError(
                f"einsum output dim {d!r} is not a dim of any operand (operand dims: "
                f"{[op.dims for op in operands]}); every output dim must come from an input"
            )
    check_rules(mesh, out_dims, sizes, "the einsum output")

    pending_ops = [i for i, op in enumerate(operands) if op.pending]
    axes = merged_axes(operands, dims)
    used = {a for ax in axes.values() for a in ax}
    keep = pending_ops[0] if pending_ops and not used.intersection(operands[pending_ops[0]].pending) else None
    prepared = [to_axes(op, tuple(axes[d] for d in op.dims), i == keep) for i, op in enumerate(operands)]

    letter = {d: _LETTERS[i] for i, d in enumerate(dims)}
    if len(dims) > len(_LETTERS):
        raise DimensionError(f"einsum over {len(dims)} distinct dims; at most {len(_LETTERS)} are supported")
    equation = ",".join("".join(letter[d] for d in op.dims) for op in prepared)
    equation += "->" + "".join(letter[d] for d in out_dims)

    contracted = [a for d in dims if d not in out_dims for a in axes[d]]
    pending = set(contracted).union(prepared[keep].pending if keep is not None else ())
    backend = mesh.backend
    shards = map_blocks(
        mesh, used.union(pending), lambda *s: backend.einsum(equation, *s), *(op.shards for op in prepared)
    )
    result = new_array(mesh, out_dims, sizes, axes, shards, mesh_order(mesh, pending))
    if layout is not None:
        result = relayout(result, layout)
    return result
