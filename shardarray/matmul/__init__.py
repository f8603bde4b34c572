"""Distributed matmul algorithms behind ``sa.einsum(..., algorithm=...)``.

=============  ===============================================================
algorithm      what runs
=============  ===============================================================
``allreduce``  local einsum per shard + pending sum (Mesh-TF §6, Megatron 1-D)
``summa``      q broadcast-multiply steps on a q×q pair of axes (§2.2 of
               tesseract.txt); A{m: row, k: col}, B{k: row, n: col}
``tesseract``  SUMMA in each of d depth layers, dB allreduced over depth;
               A{m: (dep, row), k: col}, B{k: row, n: col}, 1 ≤ d ≤ q
``auto``       the default: tesseract or summa where the operand layouts
               and sizes fit their pattern, else allreduce
=============  ===============================================================

The patterns are recognised from layouts, not axis names: any two mesh axes
of equal size can play row and col (see ``pattern``). ``auto`` names a SUMMA
whose A is also split over an axis before ``row`` (of size ≤ q) Tesseract.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..array import ShardArray
from ..errors import DTypeError, LayoutError
from . import pattern, summa, tesseract
from .summa import SummaPlan

ALGORITHMS: tuple[str, ...] = ("auto", "allreduce", "summa", "tesseract")

Plan = SummaPlan | None  # None: the allreduce algorithm

_MAKERS = {"tesseract": tesseract.make_plan, "summa": summa.make_plan}


def select(algorithm: str, operands: Sequence[ShardArray], out_dims: Sequence[str]) -> Plan:
    """The plan of an einsum under ``algorithm`` (None means allreduce).

    Raises:
        DTypeError: ``algorithm`` is not a string.
        LayoutError: ``algorithm`` is unknown, or it is ``summa``/``tesseract``
            and the operands do not fit its pattern; the message names the
            layouts it expected for each operand.
    """
    if not isinstance(algorithm, str):  # (an array or a list compares elementwise in ``in`` below)
        raise DTypeError(
            f"einsum algorithm must be a string, one of {ALGORITHMS}; got {type(algorithm).__name__} {algorithm!r}"
        )
    if algorithm not in ALGORITHMS:
        raise LayoutError(f"unknown einsum algorithm {algorithm!r}; choose one of {ALGORITHMS}")
    if algorithm == "allreduce":
        return None
    if algorithm != "auto" and len(operands) != 2:
        raise LayoutError(
            f"einsum(algorithm={algorithm!r}) multiplies exactly two operands; got {len(operands)} "
            f"({', '.join(str(op.dims) for op in operands)}). Use algorithm='auto' or 'allreduce' for other counts"
        )
    if algorithm == "auto":
        if len(operands) != 2:
            return None
        plan = summa.make_plan(operands, out_dims)
        if isinstance(plan, str):
            return None
        if tesseract.depth_reason(plan, operands) is None:
            return dataclasses.replace(plan, name="tesseract")
        return plan
    plan = _MAKERS[algorithm](operands, out_dims)
    if isinstance(plan, str):
        r = pattern.roles(operands, out_dims) if len(operands) == 2 else None
        raise pattern.refuse(operands, r if not isinstance(r, str) else None, algorithm, plan)
    return plan


__all__ = ["ALGORITHMS", "SummaPlan", "select"]
