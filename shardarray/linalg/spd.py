"""``solve``, ``inv``, ``slogdet`` of one split Hermitian positive-definite matrix through the 2-D Cholesky.

Used by ``sa.linalg.solve``/``inv``/``det``/``slogdet`` when a matrix dim is
split: ``A = L L^H`` by ``cholesky2d.factor_blocks`` (with its Hermitian test),
then

* ``solve(A, B)``: ``B`` is moved to rows over ``A``'s row axes (a relayout of
  ``B``'s own blocks), forward and back substitution (``trisolve``: per panel
  one reduce and one broadcast of ``b·k`` elements); the result has its rows
  split like ``A``'s rows;
* ``inv(A)``: ``solve`` with the identity (each device makes its rows of
  ``I``; ``k = n``), then a local slice to ``A``'s layout;
* ``slogdet``: ``log|det A| = 2 Σ log|L_ii|``: each device sums the diagonal
  entries it holds, **one allreduce** over the matrix axes; ``sign = 1``.

Each returns None when ``A`` is not Hermitian positive definite (the caller
takes the replicated LU fallback).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.common import new_array
from ..core.relayout import relayout
from ..ops.manipulation.structure import transpose
from ..ops.manipulation.structure import transpose as _t
from .cholesky2d import Grid, _allreduce, factor_blocks, make_grid
from .trisolve import backward, forward


def is_split(x: ShardArray, rows: str, cols: str) -> bool:
    """Whether a matrix dim of ``x`` is laid out over mesh axes (and the mesh holds data): the 2-D path then
    keeps that layout (on axes of size 1 it moves no bytes)."""
    return bool(x.mesh.backend.has_data and (x.spec.of(rows) or x.spec.of(cols)))


def _batch_layout(x: ShardArray, rows: str, cols: str) -> dict[str, tuple[str, ...]]:
    return {d: x.spec.of(d) for d in x.dims if d not in (rows, cols) and x.spec.of(d)}


def _rhs(
    g: Grid, a: ShardArray, b: ShardArray, rows: str, cols: str, brow: str, bcol: str, axes: tuple[str, ...]
) -> ShardArray:
    """``b`` in ``a``'s batch order and layout, its rows over ``axes``, its columns whole."""
    order = tuple(d for d in a.dims if d not in (rows, cols))
    b = transpose(b, (*order, brow, bcol)) if b.dims != (*order, brow, bcol) else b
    lay = {**_batch_layout(a, rows, cols), brow: axes}
    return relayout(b, lay)


def _out(
    g: Grid, like: ShardArray, dims: tuple[str, ...], sizes: dict[str, int], lay: dict[str, Any], blocks: dict[int, Any]
) -> ShardArray:
    sh = [blocks.get(d) for d in range(g.mesh.size)]
    return new_array(g.mesh, dims, sizes, lay, sh, dtype=like.dtype)


def spd_solve(a: ShardArray, b: ShardArray, rows: str, cols: str, brow: str, bcol: str) -> ShardArray | None:
    """``A^{-1} B`` (dims of ``b`` in ``a``'s batch order), or None when ``A`` is not Hermitian PD."""
    g, a, L, ok = factor_blocks(a, rows, cols, check_hermitian=True)
    if not ok:
        return None
    b = _rhs(g, a, b, rows, cols, brow, bcol, g.raxes)
    X = backward(g, L, forward(g, L, {d: b.shards[d] for d in g.devs}))
    lay = {**_batch_layout(a, rows, cols), brow: g.raxes}
    return _out(g, a, b.dims, dict(b.sizes), lay, X)


def spd_inv(a: ShardArray, rows: str, cols: str) -> ShardArray | None:
    """``A^{-1}`` with ``A``'s layout, or None when ``A`` is not Hermitian PD."""
    g, a, L, ok = factor_blocks(a, rows, cols, check_hermitian=True)
    if not ok:
        return None
    xp, n = g.mesh.backend.xp, g.n
    eye = {}
    for d in g.devs:
        r0, r1 = g.rows(d)
        e = xp.zeros((r1 - r0, n), dtype=a.dtype)
        e[xp.arange(r1 - r0), xp.arange(r0, r1)] = 1
        eye[d] = xp.ascontiguousarray(xp.broadcast_to(e, L[d].shape[:-2] + e.shape))
    X = backward(g, L, forward(g, L, eye))
    bl = _batch_layout(a, rows, cols)
    x = _out(g, a, a.dims, dict(a.sizes), {**bl, rows: g.raxes}, X)
    return relayout(x, {**bl, rows: g.raxes, cols: g.caxes})  # a local slice of the columns


def spd_slogdet(a: ShardArray, rows: str, cols: str) -> tuple[ShardArray, ShardArray] | None:
    """``(sign, log|det A|)`` (dims: the batch dims), or None when ``A`` is not Hermitian PD."""
    g, a, L, ok = factor_blocks(a, rows, cols, check_hermitian=True)
    if not ok:
        return None
    xp = g.mesh.backend.xp
    real = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
    part = {}
    for d in g.devs:
        (r0, r1), (c0, c1) = g.rows(d), g.cols(d)
        lo, hi = max(r0, c0), min(r1, c1)
        i = xp.arange(lo, hi) if hi > lo else xp.arange(0)
        diag = L[d][..., i - r0, i - c0]
        part[d] = 2 * xp.sum(xp.log(xp.abs(diag)), axis=-1).astype(real)
    part = _allreduce(g, part, (*g.raxes, *g.caxes))
    batch = tuple(x for x in a.dims if x not in (rows, cols))
    sizes = {x: a.sizes[x] for x in batch}
    bl = _batch_layout(a, rows, cols)
    sign = {d: xp.ones(part[d].shape, dtype=a.dtype) for d in g.devs}
    return _out(g, a, batch, sizes, bl, sign), new_array(
        g.mesh, batch, sizes, bl, [part.get(d) for d in range(g.mesh.size)], dtype=real
    )


def solve_lh(low: ShardArray, y: ShardArray, rows: str, cols: str, yrow: str, ycol: str) -> ShardArray:
    """``L^{-H} Y`` for lower-triangular ``L`` (any layout; ``trisolve.backward``: per panel a reduce and a
    broadcast of ``b·k`` elements) and ``Y`` with ``L``'s batch dims. The result has ``y``'s dims, its rows
    split like ``L``'s rows. Used by the Cholesky VJP."""

    if low.pending:
        low = relayout(low, low.layout)
    batch = tuple(d for d in low.dims if d not in (rows, cols))
    low = _t(low, (*batch, rows, cols)) if low.dims != (*batch, rows, cols) else low
    g = make_grid(low.mesh, low.sizes[rows], low.spec.of(rows), low.spec.of(cols), None)
    y = _rhs(g, low, y, rows, cols, yrow, ycol, g.caxes)
    X = backward(g, {d: low.shards[d] for d in g.devs}, {d: y.shards[d] for d in g.devs})
    return _out(g, low, y.dims, dict(y.sizes), {**_batch_layout(low, rows, cols), yrow: g.raxes}, X)
