"""Tesseract (tesseract.txt §3.1, Algorithm 3; DESIGN.md gives the intended form) on (row, col, dep).

A q×q×d mesh with 1 ≤ d ≤ q: A{m: (dep, row), k: col}, B{k: row, n: col}
replicated over dep -> C{m: (dep, row), n: col}. Each depth layer runs SUMMA
on its own rows of A and C (forward, dA); dB is reduced within each layer and
then **allreduced over dep**, since every layer saw different rows of A.
Axes before ``dep`` on A's m dim (a ``data`` axis, tesseract.txt Fig. 6) are
further independent layers: dB is allreduced over them in the same call.

The execution is ``summa``'s; this module adds the depth-axis checks. Per
device the forward broadcasts move ab/(q·d) + bc/q elements (A [a, b], B [b, c]).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..array import ShardArray
from .summa import SummaPlan
from .summa import make_plan as summa_plan


def depth_reason(plan: SummaPlan, operands: Sequence[ShardArray]) -> str | None:
    """Why a SUMMA plan is not a Tesseract (no depth axis, or d > q); None when it is one."""
    p = plan.pattern
    if p.depth is None:
        m_axes = operands[p.roles.a].spec.of(p.m_dim)
        return (
            f"A splits its dim {p.m_dim!r} over {m_axes} only; Tesseract needs a depth axis before {p.row!r} "
            f"(e.g. ('dep', {p.row!r}); a depth of 1 is a mesh axis of size 1)"
        )
    d = operands[0].mesh.axis_size(p.depth)
    if d > p.q:
        return f"the depth axis {p.depth!r} has size d={d} > q={p.q}; Tesseract needs 1 ≤ d ≤ q"
    return None


def make_plan(operands: Sequence[ShardArray], out_dims: Sequence[str]) -> SummaPlan | str:
    """The Tesseract plan of an einsum, or the reason its operands do not fit the pattern."""
    plan = summa_plan(operands, out_dims, name="tesseract")
    if isinstance(plan, str):
        return plan
    return depth_reason(plan, operands) or plan
