"""Einsum over named dims: a local contraction per shard, then pending sums.

Two spellings::

    sa.einsum(x, w, out=("batch", "hidden"))                # dims matched by name
    sa.einsum("batch io, io hidden -> batch hidden", x, w)  # the same, spelled out

The einsum is validated here and run by an algorithm of ``sa.matmul``: by
default the layout-driven one (each device contracts its shards, and the axes
of split contracted dims become a pending sum, Mesh-TF §6; operands whose
layouts conflict are brought to the cheaper of the layouts that each operand
would decide, so the smaller one moves), or SUMMA / Tesseract when the two
operands' layouts follow their patterns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..array import ShardArray
from ..core import plans
from ..core.common import any_pending, check_rules, common_mesh, has_infinity, holds_anywhere, union_dims, wrap_hint
from ..core.relayout import relayout, resolve_to
from ..core.tape import differentiable
from ..dtypes import is_complex, is_real_float, promote
from ..errors import DimensionError, DTypeError
from ..layout import check_dims
from ..matmul import select
from ..matmul.allreduce import ContractPlan, check_dim_count, plan_contract, run_contract
from ..mesh import AxesSpec
from .manipulation.structure import astype


def parse_equation(equation: str, n_operands: int) -> tuple[list[tuple[str, ...]], tuple[str, ...] | None]:
    """Split ``"a b, b c -> a c"`` into operand terms and the output term (None if implicit)."""
    if not isinstance(equation, str):
        raise DimensionError(f"einsum equation must be a string; got {equation!r}")
    lhs, arrow, rhs = equation.partition("->")
    if "->" in rhs or "," in rhs:
        what = "a second '->'" if "->" in rhs else "a ','"
        raise DimensionError(
            f"einsum equation {equation!r} has {what} in its output; the output is one term of dim names after a "
            f"single '->', e.g. 'batch io, io hidden -> batch hidden'"
        )
    terms = [tuple(t.split()) for t in lhs.split(",")]
    if len(terms) != n_operands:
        raise DimensionError(
            f"einsum equation {equation!r} names {len(terms)} operand(s) but {n_operands} were given; "
            f"give one comma-separated term of dim names per operand, e.g. 'batch io, io hidden -> batch hidden'"
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


@differentiable("einsum", saves=True)
def einsum(
    *args: Any,
    out: Sequence[str] | None = None,
    layout: Mapping[str, AxesSpec] | None = None,
    algorithm: str = "auto",
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

    A pending operand's sum is carried through the contraction (each device
    contracts its partial sum), except where another operand holds an
    infinity: a device's zero partial sum would meet it (``0 * inf = nan``)
    where NumPy's contraction of the whole sum gives ``inf``, so the pending
    operands are resolved first (``_meets_infinity``: one read of a flag per
    device, and under MPI one host reduction, only for einsums with a pending
    operand).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.random.normal(mesh, {"batch": 4, "io": 6}, layout={"batch": "row", "io": "col"})
        >>> w = sa.random.normal(mesh, {"io": 6, "hidden": 8}, layout={"io": "col"}, seed=1)
        >>> h = sa.einsum("batch io, io hidden -> batch hidden", x, w)
        >>> h.layout, h.pending
        ({'batch': ('row',)}, ('col',))
        >>> np.allclose(h.numpy(), x.numpy() @ w.numpy())
        True
        >>> w2 = sa.random.normal(mesh, {"io": 6, "hidden": 8}, layout={"io": "row", "hidden": "col"}, seed=1)
        >>> h2 = sa.einsum("batch io, io hidden -> batch hidden", x, w2)     # SUMMA's pattern: auto picks it
        >>> h2.layout, h2.pending, np.allclose(h2.numpy(), h.numpy())
        ({'batch': ('row',), 'hidden': ('col',)}, (), True)
    """
    first = 1 if args and isinstance(args[0], str) else 0
    operands = args[first:]
    exact = _exact_dtype(operands)
    if exact is not None:  # bool/integer operands: contracted in the result dtype, as np.einsum does
        operands = tuple(astype(op, exact) for op in operands)
        args = args[:first] + operands
    if any_pending(operands) and _meets_infinity(operands):
        operands = tuple(resolve_to(op) if op.pending else op for op in operands)
        args = args[:first] + operands
    key = _plan_key(args, out, layout, algorithm)
    cached = plans.EINSUM.get(key)
    if cached is None:
        cached = _plan(args, out, algorithm)
        plans.EINSUM.put(key, cached)
    _, plan, cplan = cached
    result = run_contract(cplan, operands) if plan is None else plan.forward(operands)
    if exact is not None and result.dtype != exact:  # local sums of integers and bools give int64
        result = astype(result, exact)
    if layout is not None:
        result = relayout(result, layout)
    return result, plan  # type: ignore[return-value]  # saves=True: callers see only the result (differentiable)


def _exact_dtype(operands: Sequence[Any]) -> Any:
    """The dtype an einsum with bool or integer operands is computed in (NumPy's: the promoted dtype of all
    operands), or None when every operand is a float or complex array (contracted as they are: a float16 one is
    accumulated in float32 by the backend).

    A bool or integer operand multiplied as it is would be wrong: bools multiply as logical ``and`` and add as
    ``or`` in a local product (``i, i, j -> j`` of two bool vectors and a float32 one counted one, not their
    overlap), integers wrap in their own width before meeting a float operand, and a local sum makes int64 of
    a bool or int32 block (the result dtype then depended on the shapes).
    """
    exact = False
    for op in operands:  # (a loop, not any()/all(): this runs for every einsum)
        if not isinstance(op, ShardArray):
            return None  # (refused with the message of _plan)
        if op.dtype.kind in "biu":
            exact = True
    return promote(*[op.dtype for op in operands]) if exact else None


def _meets_infinity(operands: Sequence[Any]) -> bool:
    """Whether an operand other than the first pending one holds an infinity, on any device of the job.

    The first pending operand is the one the contraction may carry on (``matmul.allreduce``); a device's partial
    sum that is 0 (an empty block of the summed dim, cancelling terms) times an infinite entry of another operand
    is NaN, where the whole sum times it is ``+-inf``. The other pending operands' partial sums are read as they
    are (``core.common.holds_anywhere``: each device's blocks scanned where they live, the flags read at once, one
    host reduction under MPI). False where a check cannot apply (meta shards, an
    operand that is not a ShardArray or lives on another mesh: ``_plan`` refuses those).
    """
    first = next(i for i, op in enumerate(operands) if isinstance(op, ShardArray) and op.pending)
    mesh = operands[first].mesh
    if not all(isinstance(op, ShardArray) and op.mesh is mesh for op in operands):
        return False
    others = [op for i, op in enumerate(operands) if i != first and (is_real_float(op.dtype) or is_complex(op.dtype))]
    return holds_anywhere(others, has_infinity)


def _plan_key(args: tuple[Any, ...], out: Any, layout: Any, algorithm: Any) -> Any:
    """The dispatch-plan key of an einsum call, or None when it is not cached (a layout, an unhashable or
    non-array argument: those calls plan afresh)."""
    if layout is not None or type(algorithm) is not str:
        return None
    if out is None or type(out) is str:
        out_key: Any = (type(out), out)
    elif type(out) in (tuple, list) and all(type(d) is str for d in out):
        out_key = (type(out), tuple(out))
    else:
        return None
    eq = args[0] if args and type(args[0]) is str else None
    ops = args[1:] if eq is not None else args
    for op in ops:
        if type(op) is not ShardArray:
            return None
    # plans.array_key per operand, inlined (a list, not a generator: this runs on every einsum)
    return (
        eq,
        out_key,
        algorithm,
        plans.context_key(),
        *[(id(op.mesh), op._layout, op.dtype, op.pending) for op in ops],
    )


def _plan(args: tuple[Any, ...], out: Any, algorithm: str) -> tuple[Any, Any, ContractPlan | None]:
    """Check an einsum call and plan it: ``(mesh, algorithm plan or None, allreduce ContractPlan or None)``."""
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
            raise DTypeError(
                f"einsum operand {i} is a {type(op).__name__}, not a ShardArray; wrap it with " + wrap_hint(operands)
            )
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
    check_dim_count(dims)  # (before the algorithms, whose local equations name each dim by a letter too)

    plan = select(algorithm, operands, out_dims)
    return mesh, plan, (plan_contract(operands, dims, sizes, out_dims) if plan is None else None)
