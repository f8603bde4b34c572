"""Recognising the SUMMA / Tesseract operand layouts of a two-operand einsum (data only).

An einsum ``A, B -> C`` has the matmul shape when every dim is one of

* **batch** (in A, B and C), **m** (A and C), **n** (B and C), **k** (A and B,
  contracted), with at least one m, n and k dim; several dims per role are
  fine (``batch seq d_model, d_model d_ff``; ``... heads d_kv, heads d_kv d_model``).

Its layouts follow the SUMMA pattern on a q×q pair of mesh axes (row, col) when

* one k dim is split over exactly ``col`` in A and over exactly ``row`` in B
  (so block t of that dim is the same in both), the other k dims unsplit;
* one n dim of B is split over exactly ``col``, the other n dims unsplit;
* one m dim of A is split over axes ending with ``row``, the other m dims
  unsplit; the axes before ``row`` on it (``dep``, and e.g. ``data``) hold
  independent layers of the matmul, over which B is replicated;
* batch dims are split alike in A and B, over none of those axes.

C then gets A's m layout and B's n layout. Tesseract is this pattern with a
depth axis (the one just before ``row``), of size d ≤ q.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from ..array import ShardArray
from ..errors import LayoutError


@dataclass(frozen=True)
class Roles:
    """The dims of ``A, B -> C`` by role (A is operand ``a`` of the einsum, B operand ``b``)."""

    a: int
    b: int
    batch: tuple[str, ...]
    m: tuple[str, ...]
    n: tuple[str, ...]
    k: tuple[str, ...]


@dataclass(frozen=True)
class Pattern:
    """A SUMMA/Tesseract pattern found on the operands: roles, mesh axes and block counts."""

    roles: Roles
    row: str
    col: str
    q: int
    m_dim: str
    k_dim: str
    n_dim: str
    outer: tuple[str, ...]  # axes before ``row`` on A's m dim: depth layers (and data)

    @property
    def depth(self) -> str | None:
        """The Tesseract depth axis: the outer axis just before ``row`` (None if there is none)."""
        return self.outer[-1] if self.outer else None


def roles(operands: Sequence[ShardArray], out_dims: Sequence[str], a: int = 0) -> Roles | str:
    """Classify the dims of a two-operand einsum with operand ``a`` as A; a reason string if not a matmul."""
    if len(operands) != 2:
        return f"it has {len(operands)} operands, not 2"
    b = 1 - a
    da, db, dc = set(operands[a].dims), set(operands[b].dims), set(out_dims)
    for i in (a, b):
        lone = [d for d in operands[i].dims if d not in dc and d not in (db if i == a else da)]
        if lone:
            return f"dim(s) {lone} of operand {i} are summed without being contracted, so it is not a matmul"
    out = tuple(out_dims)
    r = Roles(
        a,
        b,
        batch=tuple(d for d in out if d in da and d in db),
        m=tuple(d for d in out if d in da and d not in db),
        n=tuple(d for d in out if d in db and d not in da),
        k=tuple(d for d in operands[a].dims if d in db and d not in dc),
    )
    for role in ("m", "n", "k"):
        if not getattr(r, role):
            return (
                f"it has no {role} dim (a matmul needs dims only A and C have, only B and C have, and contracted ones)"
            )
    return r


def _split(x: ShardArray, dims: tuple[str, ...], what: str) -> tuple[str | None, tuple[str, ...]] | str:
    """The one dim of ``dims`` that ``x`` splits and its axes, ``(None, ())`` if none; a reason if several."""
    split = [d for d in dims if x.spec.of(d)]
    if len(split) > 1:
        return f"{what} splits several of its {dims} dims ({split}); only one may be split"
    return (split[0], x.spec.of(split[0])) if split else (None, ())


def find(operands: Sequence[ShardArray], r: Roles) -> Pattern | str:
    """The SUMMA pattern on the operands with roles ``r``, or the reason it does not hold."""
    A, B = operands[r.a], operands[r.b]
    found = [_split(A, r.k, "A"), _split(B, r.k, "B"), _split(B, r.n, "B"), _split(A, r.m, "A")]
    for f in found:
        if isinstance(f, str):
            return f
    # no reason string among them (returned above): each is a (dim, axes) pair
    splits = cast("list[tuple[str | None, tuple[str, ...]]]", found)
    (ka, col_axes), (kb, row_axes), (n_dim, n_axes), (m_dim, m_axes) = splits
    if ka is None or len(col_axes) != 1:
        return (
            f"A splits none of its contracted dims {r.k} over a single axis"
            if ka is None or not col_axes
            else f"A splits contracted dim {ka!r} over {col_axes}, not over a single axis"
        )
    col = col_axes[0]
    if kb != ka or row_axes == (col,) or len(row_axes) != 1:
        return f"B does not split contracted dim {ka!r} over a single axis other than {col!r} (B has {B.layout})"
    row = row_axes[0]
    mesh = A.mesh
    q = mesh.axis_size(col)
    if mesh.axis_size(row) != q:
        return f"axes {row!r} ({mesh.axis_size(row)}) and {col!r} ({q}) are not a square q×q grid"
    if n_dim is None or n_axes != (col,):
        return f"B splits its free dims {r.n} over {n_axes or 'nothing'}, not one of them over exactly {col!r}"
    if m_dim is None or not m_axes or m_axes[-1] != row or col in m_axes:
        return f"A splits its free dims {r.m} over {m_axes or 'nothing'}, not one of them over axes ending with {row!r}"
    outer = m_axes[:-1]
    for d in r.batch:
        if A.spec.of(d) != B.spec.of(d):
            return f"batch dim {d!r} is split over {A.spec.of(d)} in A but {B.spec.of(d)} in B"
        if set(A.spec.of(d)).intersection((row, col) + outer):
            return f"batch dim {d!r} is split over {A.spec.of(d)}, which the matmul's axes use"
    if set(B.spec.used_axes).intersection(outer):
        return f"B is split over {sorted(set(B.spec.used_axes).intersection(outer))}, but must be replicated there"
    return Pattern(r, row, col, q, m_dim, ka, n_dim, outer)


def check_divisible(operands: Sequence[ShardArray], p: Pattern) -> str | None:
    """Why the sizes do not divide into the algorithm's blocks (None when they do)."""
    A = operands[p.roles.a]
    mesh = A.mesh
    m_axes = A.spec.of(p.m_dim)
    for dim, axes in ((p.m_dim, m_axes), (p.k_dim, (p.col,)), (p.n_dim, (p.col,))):
        size = cast(int, A.sizes.get(dim, operands[p.roles.b].sizes.get(dim)))  # each dim is in A or in B
        parts = mesh.axes_size(axes)
        if size % parts:
            return (
                f"dim {dim!r} of size {size} does not divide into {parts} equal blocks over axes {axes}; "
                f"pad it to a multiple of {parts} or use algorithm='allreduce'"
            )
    return None


def expected(operands: Sequence[ShardArray], r: Roles | None, algorithm: str) -> str:
    """The layouts ``algorithm`` expects for each operand, in the operands' own dim names."""
    A = operands[r.a if r else 0]
    B = operands[r.b if r else 1]
    m = r.m[0] if r else "m"
    k = r.k[0] if r else "k"
    n = r.n[0] if r else "n"
    mesh_shape = A.mesh.shape
    if algorithm == "tesseract":
        a_m = "('dep', 'row')"
        shape = "a q×q×d mesh (row, col, dep) with d ≤ q"
    else:
        a_m = "'row'"
        shape = "a q×q pair of mesh axes (row, col)"
    return (
        f"{algorithm} expects, on {shape}, A {A.dims} laid out {{{m!r}: {a_m}, {k!r}: 'col'}} and "
        f"B {B.dims} laid out {{{k!r}: 'row', {n!r}: 'col'}} (replicated over any other axis of A's {m!r}); "
        f"got A {A.layout or '{}'} and B {B.layout or '{}'} on mesh {mesh_shape}"
    )


def refuse(operands: Sequence[ShardArray], r: Roles | None, algorithm: str, reason: str) -> LayoutError:
    """The ``LayoutError`` of an explicit ``algorithm`` whose pattern does not hold."""
    return LayoutError(f"einsum with algorithm={algorithm!r}: {reason}. {expected(operands, r, algorithm)}")
