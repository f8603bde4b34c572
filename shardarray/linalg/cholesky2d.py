"""Blocked right-looking Cholesky of matrices split in 2-D (rows over one set of mesh axes, cols over another).

The matrix dims of ``A`` (``n x n``) are split as they are: the rows over the
axes ``R`` (``p_r`` row blocks), the columns over ``C`` (``p_c`` column
blocks); batch dims keep their split. The panels are the union of the row and
column block boundaries (each panel lies in one row block ``r_k`` and one
column block ``c_k``), cut to at most ``panel`` columns. For each panel ``k``
(width ``b``):

1. the owner ``(r_k, c_k)`` of the diagonal block factors it locally
   (``L_kk = chol(A_kk)``);
2. **broadcast** of ``L_kk`` over ``R`` (down the column group, ``b²``
   elements);
3. the devices of column ``c_k`` solve their rows of the panel below it,
   ``L_ik = A_ik L_kk^{-H}`` (local);
4. **broadcast** of those panel rows over ``C`` (along the row groups, root
   ``c_k``: ``(rows of the block below the panel) x b`` elements);
5. the transpose: each column group gathers the panel rows that match its
   columns by one **alltoallv** over ``R`` (a device receives at most
   ``(its columns) x b`` elements; when the row and column blocks coincide,
   e.g. a square 2x2 mesh, it is a broadcast from the diagonal device);
6. the trailing matrix is updated as a local SUMMA-style product,
   ``A_ij -= L_ik L_jk^H`` (blocks entirely above the diagonal are skipped).

Per device, over the whole factorization: at most ``n·b`` elements in (1)-(2),
``(n/p_r)·n`` in (4) and ``(n/p_c)·n`` in (5) — proportional to the device's
block, never the whole matrix. At the end **one allreduce** over the matrix
axes (1 number per matrix, 4 with the Hermitian test; plus one allreduce of a
single number over the batch axes when a batch dim is split) tells every
device whether some diagonal block failed (the matrix is not positive
definite) and, for ``solve``/``inv``/``det``, whether ``A`` is Hermitian
(``u^H A w`` against ``conj(w^H A u)`` for fixed random ``u, w``, relative to
``||A||_F``), so that every process takes the same decision.

Failures stay on the devices until then: the owner of a diagonal block tests
its factor there (``_checks.cholesky_failed``, per matrix: NumPy raises on it,
CuPy returns garbage for it, NaN or finite) and puts the identity in place of
a failed one (``where``), so the rest of the factorization runs on finite
numbers; its flags ride in the final allreduce, and the verdict is computed on
the devices too. The whole factorization reads **one** number from a device
(the verdict), whatever the number of panels.

``L`` keeps ``A``'s layout; its strictly upper part is zero. Only ``A``'s lower
triangle is read.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..array import ShardArray
from ..chunks import group_chunk
from ..core.common import mesh_order, new_array
from ..core.relayout import relayout
from ._checks import cholesky_failed
from ._matrix import batch_last


@dataclass
class Grid:
    """Where the blocks of one 2-D split matrix live: devices, their row/col members, bounds and the panels."""

    mesh: Any
    raxes: tuple[str, ...]
    caxes: tuple[str, ...]
    n: int
    devs: list[int]
    rm: dict[int, int]
    cm: dict[int, int]
    rb: list[tuple[int, int]]
    cb: list[tuple[int, int]]
    panels: list[tuple[int, int, int, int]]

    def rows(self, d: int) -> tuple[int, int]:
        return self.rb[self.rm[d]]

    def cols(self, d: int) -> tuple[int, int]:
        return self.cb[self.cm[d]]


def _member(mesh: Any, axes: tuple[str, ...], coords: tuple[int, ...]) -> int:
    names, j = mesh.axis_names, 0
    for a in axes:
        j = j * mesh.axis_size(a) + coords[names.index(a)]
    return j


def make_grid(mesh: Any, n: int, raxes: tuple[str, ...], caxes: tuple[str, ...], panel: int | None) -> Grid:
    """The row/column blocks of an ``n x n`` matrix split rows over ``raxes``, cols over ``caxes``, and its
    panels ``(start, stop, row member, col member)``: the union of both block boundaries, cut to ``panel``."""
    rr = [mesh.axis_size(a) for a in raxes]
    cr = [mesh.axis_size(a) for a in caxes]
    rb = [group_chunk(0, n, rr, j) for j in range(int(np.prod(rr)))]
    cb = [group_chunk(0, n, cr, j) for j in range(int(np.prod(cr)))]
    cuts = sorted({0, n, *(a for a, _ in rb), *(a for a, _ in cb)})
    panels = []
    for lo, hi in itertools.pairwise(cuts):
        step = max(1, panel or hi - lo)
        for s in range(lo, hi, step):
            e = min(hi, s + step)
            rk = next(j for j, (a, b) in enumerate(rb) if a <= s < b)
            ck = next(j for j, (a, b) in enumerate(cb) if a <= s < b)
            panels.append((s, e, rk, ck))
    devs = [d for d, _ in mesh.replica_classes(mesh.axis_names)]
    coords = mesh.device_coords
    rm = {d: _member(mesh, raxes, coords[d]) for d in devs}
    cm = {d: _member(mesh, caxes, coords[d]) for d in devs}
    return Grid(mesh, raxes, caxes, n, devs, rm, cm, rb, cb, panels)


def _clip(v: int, lo: int, hi: int) -> int:
    return min(max(v - lo, 0), hi - lo)


def _h(xp: Any, a: Any) -> Any:
    """``a^H`` of a stack of matrices (a transposed view for real dtypes: no copy)."""
    t = xp.swapaxes(a, -1, -2)
    return xp.conj(t) if xp.iscomplexobj(t) else t


def _bcast(g: Grid, vals: dict[int, Any], axes: tuple[str, ...], root: int) -> dict[int, Any]:
    if g.mesh.axes_size(axes) == 1:
        return vals
    sh = [vals.get(d) for d in range(g.mesh.size)]
    out = g.mesh.comm.broadcast(sh, axes, root)
    return {d: out[d] for d in g.devs}


def _allreduce(g: Grid, vals: dict[int, Any], axes: tuple[str, ...]) -> dict[int, Any]:
    if g.mesh.axes_size(axes) == 1:
        return vals
    out = g.mesh.comm.allreduce([vals.get(d) for d in range(g.mesh.size)], axes, "sum")
    return {d: out[d] for d in g.devs}


def _hermitian_stats(xp: Any, g: Grid, blocks: dict[int, Any], dtype: Any) -> dict[int, Any]:
    """Per device, its partial ``(u^H A w, w^H A u, ||A||_F^2)`` (each ``(batch..., 3)``)."""
    rng = np.random.default_rng(12345)
    u, w = rng.standard_normal(g.n), rng.standard_normal(g.n)
    out = {}
    for d in g.devs:
        (r0, r1), (c0, c1) = g.rows(d), g.cols(d)
        a = blocks[d]
        ur, wr = xp.asarray(u[r0:r1]).astype(dtype), xp.asarray(w[r0:r1]).astype(dtype)
        uc, wc = xp.asarray(u[c0:c1]).astype(dtype), xp.asarray(w[c0:c1]).astype(dtype)
        uaw = xp.einsum("...ij,i,j->...", a, ur, wc)
        wau = xp.einsum("...ij,i,j->...", a, wr, uc)
        fro = xp.sum(xp.abs(a) ** 2, axis=(-2, -1)).astype(dtype)
        out[d] = xp.stack([uaw, wau, fro], axis=-1)
    return out


def factor_blocks(
    x: ShardArray, rows: str, cols: str, panel: int | None = None, check_hermitian: bool = False
) -> tuple[Grid, ShardArray, dict[int, Any], bool]:
    """Run the factorization. Returns ``(grid, x as factored, L's blocks per device, ok)``.

    ``x`` comes back with its pending sums resolved and the matrix dims last;
    ``ok`` is False (on every device) when a diagonal block was not positive
    definite or, with ``check_hermitian``, ``A`` is not Hermitian. No host
    read inside the panel loop: the failure flags are device arrays until the
    final allreduce, and ``ok`` is the one read (``_factor_diagonal``).
    """
    if x.pending:
        x = relayout(x, x.layout)
    x, batch = batch_last(x, (rows, cols))
    mesh, xp = x.mesh, x.mesh.backend.xp
    g = make_grid(mesh, x.sizes[rows], x.spec.of(rows), x.spec.of(cols), panel)
    A = {d: xp.array(x.shards[d], copy=True) for d in g.devs}
    bshape = {d: A[d].shape[:-2] for d in g.devs}
    stats = _hermitian_stats(xp, g, A, x.dtype) if check_hermitian else None
    failed = {d: xp.zeros(bshape[d], dtype=bool) for d in g.devs}  # per matrix, on the device
    check = not mesh.backend.linalg_raises  # CuPy: test each diagonal factor (NumPy raises itself)
    rdim = len(batch)
    for s, e, rk, ck in g.panels:
        w = e - s
        diag = {}
        for d in g.devs:
            (r0, _), (c0, _) = g.rows(d), g.cols(d)
            if g.rm[d] == rk and g.cm[d] == ck:
                diag[d], bad = _factor_diagonal(xp, A[d][..., s - r0 : e - r0, s - c0 : e - c0], check)
                failed[d] = failed[d] | bad
            else:
                diag[d] = xp.zeros(bshape[d] + (w, w), dtype=x.dtype)
        diag = _bcast(g, diag, g.raxes, rk)
        below = {}
        for d in g.devs:
            (r0, r1), (c0, _) = g.rows(d), g.cols(d)
            i0, i1 = _clip(s, r0, r1), _clip(e, r0, r1)
            if g.cm[d] == ck:
                low = diag[d]
                cs = slice(s - c0, e - c0)
                A[d][..., :i0, cs] = 0
                if i1 > i0:
                    A[d][..., i0:i1, cs] = low
                if r1 - r0 > i1:
                    A[d][..., i1:, cs] = _h(xp, xp.linalg.solve(low, _h(xp, A[d][..., i1:, cs])))
                below[d] = A[d][..., i1:, cs]
            else:
                below[d] = xp.zeros(bshape[d] + (r1 - r0 - i1, w), dtype=x.dtype)
        if e == g.n:  # the last panel: nothing below it, no trailing matrix
            continue
        below = _bcast(g, below, g.caxes, ck)
        # the transpose: column group c gathers the panel rows [max(e, c0), c1) from the row blocks holding them
        if mesh.axes_size(g.raxes) > 1:
            send: list[Any] = [None] * mesh.size
            for d in g.devs:
                (r0, r1), (c0, c1) = g.rows(d), g.cols(d)
                lo = min(max(r0, e), r1)
                a = min(max(c0, e, lo), r1)
                b = max(min(c1, r1), a)
                piece = below[d][..., a - lo : b - lo, :]
                send[d] = [piece] * mesh.axes_size(g.raxes)
            got = mesh.comm.alltoallv(send, g.raxes, rdim)
            right = {d: got[d] for d in g.devs}
        else:
            right = {}
            for d in g.devs:
                (r0, _), (c0, c1) = g.rows(d), g.cols(d)
                lo = max(r0, e)
                right[d] = below[d][..., max(c0, e) - lo : max(c1, e) - lo, :]
        for d in g.devs:
            (r0, r1), (c0, c1) = g.rows(d), g.cols(d)
            i1, j0 = _clip(e, r0, r1), _clip(e, c0, c1)
            if i1 == r1 - r0 or j0 == c1 - c0 or r1 - 1 < c0 + j0:  # nothing trailing, or all above the diagonal
                continue
            A[d][..., i1:, j0:] -= below[d] @ _h(xp, right[d])
    # one allreduce over the matrix axes: failures (and the Hermitian test) of each matrix, on every device
    flag = {}
    for d in g.devs:
        f = failed[d].astype(x.dtype)[..., None]
        flag[d] = xp.concatenate([f, stats[d]], axis=-1) if stats is not None else f
    flag = _allreduce(g, flag, (*g.raxes, *g.caxes))
    bad = {}
    for d in g.devs:  # the verdict, on the device
        tot = flag[d]
        nbad = xp.sum(xp.real(tot[..., 0]) > 0)
        if stats is not None:
            # the probe's rounding, not a looser bound: a matrix this close to Hermitian is factored by Cholesky,
            # which reads one triangle, so a larger tolerance would silently drop the other triangle's difference
            eps = float(np.finfo(x.dtype).eps)
            tol = min(4 * np.sqrt(eps), 64 * g.n * eps) * xp.sqrt(xp.abs(tot[..., 3]))
            nbad = nbad + xp.sum(xp.abs(tot[..., 1] - xp.conj(tot[..., 2])) > tol)
        bad[d] = xp.reshape(nbad, (1,)).astype(np.float64)
    # a split batch dim: the matrices' verdicts differ between its blocks; one more allreduce (1 number) over it
    rest = tuple(a for a in mesh_order(mesh, x.spec.used_axes) if a not in (*g.raxes, *g.caxes))
    bad = _allreduce(g, bad, rest)
    # the one read of the factorization (meta: no values; the factor is taken to exist, as its shapes do)
    ok = not mesh.backend.has_data or not float(mesh.backend.to_numpy(bad[g.devs[0]])[0]) > 0
    return g, x, A, ok


def _factor_diagonal(xp: Any, blk: Any, check: bool) -> tuple[Any, Any]:
    """``(L_kk, failed)`` of a diagonal block: its Cholesky factor, and per matrix (on the device) whether
    it failed, with the identity in its place where it did, so the rest of the factorization stays finite.

    ``check`` (CuPy, which never raises): the factor is tested on the device (``_checks.cholesky_failed``:
    NumPy's condition, found from what cuSOLVER left). Otherwise (NumPy) NumPy raises, for the whole
    stack: every matrix of it is then marked failed (the op fails either way).
    """
    try:
        low = xp.linalg.cholesky(blk)
    except np.linalg.LinAlgError:  # NumPy shards
        eye = xp.broadcast_to(xp.eye(blk.shape[-1], dtype=blk.dtype), blk.shape)
        return xp.array(eye), xp.ones(blk.shape[:-2], dtype=bool)
    if not check:
        return low, xp.zeros(blk.shape[:-2], dtype=bool)
    bad = cholesky_failed(xp, blk, low)
    return xp.where(bad[..., None, None], xp.eye(blk.shape[-1], dtype=blk.dtype), low), bad


def cholesky_2d(x: ShardArray, rows: str, cols: str, panel: int | None = None) -> ShardArray | None:
    """``L`` with ``x``'s layout (batch dims first, then ``rows, cols``), or None when a matrix is not PD."""
    _, x, A, ok = factor_blocks(x, rows, cols, panel)
    if not ok:
        return None
    return blocks_array(x, A)


def blocks_array(x: ShardArray, blocks: dict[int, Any]) -> ShardArray:
    """A ShardArray with ``x``'s dims and layout from per-device ``blocks``."""
    mesh = x.mesh
    sh = [blocks.get(d) for d in range(mesh.size)]
    lay = {d: x.spec.of(d) for d in x.dims if x.spec.of(d)}
    return new_array(mesh, x.dims, dict(x.sizes), lay, sh, dtype=x.dtype)


__all__ = ["Grid", "blocks_array", "cholesky_2d", "factor_blocks", "make_grid"]
