"""SUMMA (van de Geijn & Watts; tesseract.txt §2.2) on a q×q pair of mesh axes (row, col).

Layouts: A{m: row, k: col}, B{k: row, n: col} -> C{m: row, n: col}. The
**row group** of a device is every device of its row (the ``col`` axis
varies); its **column group** every device of its column (``row`` varies).

* forward, for t in 0..q-1: broadcast A(i,t) along the row group and B(t,j)
  along the column group; C(i,j) += A(i,t)·B(t,j).
* dA = dC·Bᵀ, for t: broadcast B(t,j) along the column group, multiply,
  reduce along the row group to A's owner (i,t).
* dB = Aᵀ·dC, for t: broadcast A(i,t) along the row group, multiply, reduce
  along the column group to B's owner (t,j); then allreduce over the axes
  before ``row`` on A's m dim (Tesseract's depth, data parallelism), over
  which B is replicated.

Every broadcast and reduce goes through the mesh's Communicator, so the comm
log shows q broadcasts of each operand per pass: ab/(q·d) + bc/q elements
per device in the forward pass for A [a, b], B [b, c] and d depth layers.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import profiler
from ..array import ShardArray
from ..core.common import map_blocks, mesh_order, new_array
from ..core.relayout import permute_dims, resolve, to_axes
from .pattern import Pattern, check_divisible, find, roles


@dataclass(frozen=True)
class SummaPlan:
    """How one einsum runs as SUMMA (or Tesseract): the pattern and the local equations."""

    name: str
    pattern: Pattern
    out_dims: tuple[str, ...]
    forward_eq: str  # A, B -> C
    grad_a_eq: str  # dC, B -> A
    grad_b_eq: str  # A, dC -> B

    # ------------------------------------------------------------- helpers
    def _operands(self, operands: Sequence[ShardArray]) -> tuple[ShardArray, ShardArray]:
        a, b = operands[self.pattern.roles.a], operands[self.pattern.roles.b]
        return resolve(a, a.spec.axes), resolve(b, b.spec.axes)

    def out_axes(self, a: ShardArray, b: ShardArray) -> tuple[tuple[tuple[str, ...], ...], set[str]]:
        """C's per-dim axes (A's for m and batch dims, B's for n dims) and the set of axes they use."""
        axes = tuple(a.spec.of(d) if d in a.dims else b.spec.of(d) for d in self.out_dims)
        return axes, {x for ax in axes for x in ax}

    def _owners(self, mesh: Any, axis: str, t: int) -> list[int]:
        i = mesh.axis_names.index(axis)
        return [d for d, c in enumerate(mesh.device_coords) if c[i] == t]

    def _loop(
        self,
        mesh: Any,
        used: set[str],
        steps: Callable[[int], tuple[list[Any], list[Any]]],
        eq: str,
        reduce_axis: str | None,
    ) -> list[Any]:
        """q steps of broadcast-multiply, accumulated (forward) or reduced to owner t (backward)."""
        backend, comm = mesh.backend, mesh.comm
        xp = backend.xp
        out: list[Any] = [None] * mesh.size
        for t in range(self.pattern.q):
            left, right = steps(t)
            if profiler.ACTIVE:
                profiler.on_einsum(eq, [left[mesh.local_device], right[mesh.local_device]])
            if reduce_axis is None:

                def step(x: Any, y: Any, acc: Any) -> Any:
                    prod = backend.einsum(eq, x, y)  # fresh, so accumulating into it in place is safe
                    return prod if acc is None else xp.add(acc, prod, out=acc)  # meta: a new shape record

                out = map_blocks(mesh, used, step, left, right, out)
            else:
                part = map_blocks(mesh, used, lambda x, y: backend.einsum(eq, x, y), left, right)
                reduced = comm.reduce(part, (reduce_axis,), root=t)
                for d in self._owners(mesh, reduce_axis, t):
                    out[d] = reduced[d]
        if profiler.ACTIVE:
            profiler.einsum_result(out[mesh.local_device])
        return out

    # ---------------------------------------------------------- the passes
    def forward(self, operands: Sequence[ShardArray]) -> ShardArray:
        """C = A·B: q steps of broadcasts along the row and column groups."""
        a, b = self._operands(operands)
        mesh, comm = a.mesh, a.mesh.comm
        p = self.pattern
        axes, used = self.out_axes(a, b)

        def steps(t: int) -> tuple[list[Any], list[Any]]:
            return comm.broadcast(a.shards, (p.col,), root=t), comm.broadcast(b.shards, (p.row,), root=t)

        shards = self._loop(mesh, used, steps, self.forward_eq, None)
        sizes = {**a.sizes, **b.sizes}
        return new_array(mesh, self.out_dims, sizes, dict(zip(self.out_dims, axes)), shards)

    def backward(self, operands: Sequence[ShardArray], g: ShardArray, needs: Sequence[bool]) -> list[Any]:
        """``[dA, dB]`` in the operands' order (None where ``needs`` is False)."""
        a, b = self._operands(operands)
        mesh, comm = a.mesh, a.mesh.comm
        p = self.pattern
        axes, used = self.out_axes(a, b)
        g = to_axes(permute_dims(g, self.out_dims), axes, keep_pending=False)
        grads: list[Any] = [None, None]
        if needs[p.roles.a]:
            shards = self._loop(
                mesh,
                used,
                lambda t: (list(g.shards), comm.broadcast(b.shards, (p.row,), root=t)),
                self.grad_a_eq,
                p.col,
            )
            grads[p.roles.a] = ShardArray(mesh, a.spec, shards[mesh.local_device].dtype, shards)
        if needs[p.roles.b]:
            shards = self._loop(
                mesh,
                used,
                lambda t: (comm.broadcast(a.shards, (p.col,), root=t), list(g.shards)),
                self.grad_b_eq,
                p.row,
            )
            db = ShardArray(mesh, b.spec, shards[mesh.local_device].dtype, shards, mesh_order(mesh, p.outer))
            grads[p.roles.b] = resolve(db, b.spec.axes)  # the allreduce over depth (and data)
        return grads


def equations(operands: Sequence[ShardArray], p: Pattern, out_dims: Sequence[str]) -> tuple[str, str, str]:
    """The local equations ``A,B->C``, ``C,B->A`` and ``A,C->B`` in single letters."""
    a, b = operands[p.roles.a], operands[p.roles.b]
    letter: dict[str, str] = {}
    for d in a.dims + b.dims:
        letter.setdefault(d, string.ascii_letters[len(letter)])
    ta, tb, tc = ("".join(letter[d] for d in dims) for dims in (a.dims, b.dims, out_dims))
    return f"{ta},{tb}->{tc}", f"{tc},{tb}->{ta}", f"{ta},{tc}->{tb}"


def make_plan(operands: Sequence[ShardArray], out_dims: Sequence[str], name: str = "summa") -> SummaPlan | str:
    """The SUMMA plan of an einsum, or the reason its operands do not fit the pattern.

    Both operand orders are tried (either operand may play A).
    """
    reasons = []
    for first in (0, 1):
        r = roles(operands, out_dims, first)
        if isinstance(r, str):
            return r
        p = find(operands, r)
        if isinstance(p, str):
            reasons.append(p)
            continue
        why = check_divisible(operands, p)
        if why is not None:
            return why
        return SummaPlan(name, p, tuple(out_dims), *equations(operands, p, out_dims))
    return reasons[0]
