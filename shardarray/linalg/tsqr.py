"""``sa.linalg.qr``: the QR of matrices split along their rows (CholeskyQR2, TSQR behind it).

Tall matrices (``m >= n``) whose rows are split first try **CholeskyQR2**
(``linalg.cholqr``): two allreduces of the ``n x n`` Gram matrix over the row
axes and matrix products only, about ten times faster than LAPACK's
Householder QR on a CPU block. Its own check (the second Gram matrix within
0.1 of the identity for every matrix) decides; where it fails (``κ(A)``
beyond about ``10^7`` in float64, rank deficiency, NaN or inf) the same call
goes on with **TSQR**, orthonormal whatever the conditioning:

1. every device factors its block: ``A_i = Q1_i R_i`` (local ``qr``; ``R_i`` is
   ``k_i x n`` with ``k_i = min(m_i, n)``, padded with zero rows to ``n x n``);
2. **one allgather** over the row axes of the ``R_i``: ``(p - 1) * n * n``
   elements received per device (per matrix of the batch), independent of ``m``;
3. every device factors the stacked ``R``'s (the padding dropped) the same way,
   ``[R_0; ...; R_{p-1}] = Q2 R``, so all hold the same ``R``;
4. ``Q_i = Q1_i @ Q2[rows of device i]``: one local product.

``Q`` comes back split like the input's rows; ``R`` is replicated. Signs: the
diagonal of ``R`` is made non-negative (real) for every layout, so the
factorization is the unique one of a full-rank matrix. NumPy's LAPACK
Householder signs are arbitrary (often negative); ``Q @ R`` and ``Q^H Q`` agree.

A matrix split over its columns (or in 2-D) is first brought to the row layout
by one alltoall moving the column axes onto the rows. Wide matrices
(``m < n``) are distributed over their columns (``wide_qr``: one allgather of
the leading ``m x m`` block, ``R = Q^H A`` per column block);
``mode="complete"`` with ``m > n`` needs the whole ``m x m`` ``Q``: the
replicated fallback (a ``ReplicatedFallbackWarning``).
Batch dims keep their split: each device factors its own matrices.
"""

from __future__ import annotations

from typing import Any, NamedTuple, cast

import numpy as np

from ..array import ShardArray
from ..chunks import group_chunk
from ..core.common import map_blocks, map_blocks_multi, mesh_order, new_array
from ..core.relayout import relayout
from ..core.tape import keeps_kind
from ..errors import ArgumentError, DimensionError
from ..layout import block_bounds
from ..ops.indexing.slicing import isel
from ._matrix import batch_last, float_dtype, local_op, matrix_dims
from ._parts import qr_part, traced, untraced
from .cholqr import cholesky_qr2


class QRResult(NamedTuple):
    Q: ShardArray
    R: ShardArray


def _fix_signs(xp: Any, q: Any, r: Any) -> tuple[Any, Any]:
    """Make ``diag(r)`` real and non-negative: ``r <- D^H r``, ``q <- q D`` with ``D`` the diagonal's phases."""
    k = min(r.shape[-2], r.shape[-1])
    d = xp.diagonal(r[..., :k, :k], axis1=-2, axis2=-1)
    a = xp.abs(d)
    ph = xp.where(a == 0, 1, d / xp.where(a == 0, 1, a)).astype(r.dtype)
    r = r.copy()
    r[..., :k, :] = r[..., :k, :] * xp.conj(ph)[..., :, None]
    i = xp.arange(k)
    r[..., i, i] = a.astype(r.dtype)  # exactly |d| (d * conj(d/|d|) leaves a rounding-size imaginary part)
    if q is not None:
        q = q.copy()
        q[..., :, :k] = q[..., :, :k] * ph[..., None, :]
    return q, r


def row_layout(x: ShardArray, rows: str, cols: str) -> ShardArray:
    """``x`` with ``cols`` unsplit and the column axes moved onto ``rows`` (one alltoall), pending resolved."""
    lay = x.layout
    col_axes = lay.pop(cols, ())
    if col_axes:
        lay[rows] = (*lay.get(rows, ()), *col_axes)
    if col_axes or x.pending:
        x = relayout(x, lay)
    return x


def tsqr(x: ShardArray, rows: str, cols: str, new: str, want_q: bool = True) -> tuple[ShardArray | None, ShardArray]:
    """TSQR of the (tall, ``m >= n``) matrices of ``x``: ``(Q (batch, rows, new), R (batch, new, cols))``."""
    x = row_layout(x, rows, cols)
    x, batch = batch_last(x, (rows, cols))
    mesh, xp = x.mesh, x.mesh.backend.xp
    m, n = x.sizes[rows], x.sizes[cols]
    raxes = x.spec.of(rows)
    blay = {d: x.spec.of(d) for d in batch if x.spec.of(d)}
    sizes = {**{d: x.sizes[d] for d in batch}, rows: m, new: n, cols: n}
    bused = mesh_order(mesh, [a for v in blay.values() for a in v])
    if not raxes:

        def whole(s: Any) -> tuple[Any, Any]:
            q, r = xp.linalg.qr(s) if want_q else (None, xp.linalg.qr(s, mode="r"))
            return _fix_signs(xp, q, r)

        q_sh, r_sh = map_blocks_multi(mesh, x.spec.used_axes, 2, whole, x.shards, pure=True)
        R = new_array(mesh, (*batch, new, cols), sizes, blay, r_sh, dtype=x.dtype)
        Q = new_array(mesh, (*batch, rows, new), sizes, {**blay, rows: ()}, q_sh, dtype=x.dtype) if want_q else None
        return Q, R
    fast = cholesky_qr2(x, raxes, want_q)
    if fast is not None:
        R = new_array(mesh, (*batch, new, cols), sizes, blay, fast[1], dtype=x.dtype)
        if not want_q:
            return None, R
        return new_array(mesh, (*batch, rows, new), sizes, {**blay, rows: raxes}, fast[0], dtype=x.dtype), R
    radix = [mesh.axis_size(a) for a in raxes]
    p = int(np.prod(radix))
    counts = [min(b - a, n) for a, b in (group_chunk(0, m, radix, j) for j in range(p))]
    offsets = np.concatenate([[0], np.cumsum(counts)]).tolist()

    def local(s: Any) -> tuple[Any, Any]:
        if want_q:
            q1, r = xp.linalg.qr(s)
        else:
            q1, r = None, xp.linalg.qr(s, mode="r")
        pad = xp.zeros(s.shape[:-2] + (n, n), dtype=s.dtype)
        pad[..., : r.shape[-2], :] = r
        return q1, pad

    q1_sh, rp_sh = map_blocks_multi(mesh, x.spec.used_axes, 2, local, x.shards, pure=True)  # the pool
    gathered = mesh.comm.allgather(rp_sh, raxes, dim=len(batch))

    def second(g: Any) -> tuple[Any, Any]:
        parts = [g[..., j * n : j * n + counts[j], :] for j in range(p)]
        stack = xp.concatenate(parts, axis=-2)
        q2, r = xp.linalg.qr(stack)
        return _fix_signs(xp, q2, r)

    q2_sh, r_sh = map_blocks_multi(mesh, bused, 2, second, gathered)
    R = new_array(mesh, (*batch, new, cols), sizes, blay, r_sh, dtype=x.dtype)
    if not want_q:
        return None, R
    names = mesh.axis_names
    member = []
    for c in mesh.device_coords:
        j = 0
        for a, k in zip(raxes, radix):
            j = j * k + c[names.index(a)]
        member.append(j)

    def combine(item: Any) -> Any:
        j, q1, q2 = item
        return q1 @ q2[..., offsets[j] : offsets[j + 1], :]

    items = [(member[d], q1_sh[d], q2_sh[d]) for d in range(mesh.size)]
    q_sh = map_blocks(mesh, x.spec.used_axes, combine, items, pure=True)
    Q = new_array(mesh, (*batch, rows, new), sizes, {**blay, rows: raxes}, q_sh, dtype=x.dtype)
    return Q, R


def wide_qr(x: ShardArray, rows: str, cols: str, new: str) -> QRResult:
    """QR of wide matrices (``m < n``): ``Q`` from the leading ``m x m`` block, ``R = Q^H A`` per column block.

    The columns are split over every axis the matrix used (one alltoall moves the row axes onto the columns),
    the leading ``m x m`` block is gathered on every device (an allgather of ``m²`` elements in all), its QR
    gives the square ``Q`` (the same everywhere), and each device forms its columns of ``R = Q^H A`` locally.
    ``Q R = A`` holds exactly in exact arithmetic for any ``A`` (``Q`` is square orthogonal).
    """
    lay = x.layout
    raxes = lay.pop(rows, ())
    if raxes:
        lay[cols] = (*lay.get(cols, ()), *raxes)
    if raxes or x.pending:
        x = relayout(x, lay)
    x, batch = batch_last(x, (rows, cols))
    mesh, xp = x.mesh, x.mesh.backend.xp
    m, n = x.sizes[rows], x.sizes[cols]
    blay = {d: x.spec.of(d) for d in batch if x.spec.of(d)}
    lead = relayout(isel(x, {cols: slice(0, m)}), blay)
    bused = mesh_order(mesh, [a for v in blay.values() for a in v])

    def square(s: Any) -> Any:
        q, r = xp.linalg.qr(s)
        return _fix_signs(xp, q, r)[0]

    q_sh = map_blocks(mesh, bused, square, lead.shards)
    ci = x.dims.index(cols)
    starts = [b[ci][0] for b in block_bounds(mesh, x.spec)]

    def right(item: Any) -> Any:
        lo, q, a = item
        r = xp.conj(xp.swapaxes(q, -1, -2)) @ a
        j = xp.arange(lo, lo + a.shape[-1])
        i = xp.arange(m)
        # the diagonal q_i^H a_i is |d_i| >= 0 (Q's signs are the square block's, fixed): the product's rounding
        # (an imaginary part, or a tiny negative value where the block is singular) is dropped, as promised
        diag = xp.maximum(xp.real(r), xp.zeros((), dtype=xp.real(r).dtype)).astype(r.dtype)
        r = xp.where(i[:, None] == j[None, :], diag, r)
        return xp.where(i[:, None] > j[None, :], xp.zeros((), dtype=r.dtype), r)

    r_sh = map_blocks(mesh, x.spec.used_axes, right, [(starts[d], q_sh[d], x.shards[d]) for d in range(mesh.size)])
    sizes = {**{d: x.sizes[d] for d in batch}, rows: m, new: m, cols: n}
    Q = new_array(mesh, (*batch, rows, new), sizes, blay, q_sh, dtype=x.dtype)
    R = new_array(mesh, (*batch, new, cols), sizes, {**blay, cols: x.spec.of(cols)}, r_sh, dtype=x.dtype)
    return QRResult(Q, R)


def _fallback_qr(x: ShardArray, rows: str, cols: str, new: str, mode: str) -> QRResult:
    m, n = x.sizes[rows], x.sizes[cols]
    k = m if mode == "complete" else min(m, n)
    xp = x.mesh.backend.xp
    new2 = new if new != rows else f"{new}_"

    def fn(s: Any) -> tuple[Any, Any]:
        q, r = xp.linalg.qr(s, mode=mode)
        return _fix_signs(xp, q, r)

    Q, R = local_op(
        [x],
        [(rows, cols)],
        fn,
        [((rows, new2), {rows: m, new2: k}, x.dtype), ((new2, cols), {new2: k, cols: n}, x.dtype)],
        "qr",
    )
    return QRResult(Q, R)


@keeps_kind
def qr(x: ShardArray, dims: Any = None, *, mode: str = "reduced", new: str | None = None) -> QRResult:
    """QR factorization ``x = Q R`` of the matrices of ``x`` (rows, cols = ``dims``, default the last two).

    Tall matrices (``m >= n``) split along their rows use **CholeskyQR2**:
    **two allreduces** of the ``n x n`` Gram matrix over the row axes
    (``n²`` elements per device and matrix each), Cholesky factors on every
    device and matrix products per block. Where its Gram check says the
    matrix is too ill-conditioned for it (``κ`` beyond about ``10^7`` in
    float64, rank deficiency, NaN), **TSQR** follows: local QR per block,
    **one allgather** of the ``n x n`` R factors over the row axes
    (``(p-1)·n²`` elements received per device and matrix), a QR of the
    stacked R's on every device, and one local product for Q. Columns split:
    first **one alltoall** moving the column axes onto the rows. Wide matrices
    (``m < n``): column-split, an allgather of the leading ``m x m`` block, and
    ``R = Q^H A`` per column block. ``mode="complete"`` with ``m > n``:
    replicated fallback (``ReplicatedFallbackWarning``). R's diagonal is real
    and non-negative. Differentiable (real and complex, ``mode="reduced"``, ``m >= n``;
    other cases raise ``ArgumentError`` under a gradient).

    Args:
        x: float or complex array.
        dims: ``(rows, cols)``, names or positions; default the last two dims.
        mode: ``"reduced"`` (Q is m x k, R k x n, k = min(m, n)) or ``"complete"`` (Q m x m).
        new: name of the new dim of size k (Q's columns, R's rows); default ``cols + "_k"``.

    Returns:
        ``(Q, R)``: Q has dims (batch..., rows, new), R (batch..., new, cols).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.random.default_rng(0).standard_normal((8, 3)), dims=("i", "j"), mesh=mesh,
        ...                layout={"i": ("row", "col")})
        >>> with sa.comm_log() as log:
        ...     q, r = sa.linalg.qr(a)
        >>> q.dims, q.layout, r.dims, [rec.op for rec in log.records]
        (('i', 'j_k'), {'i': ('row', 'col')}, ('j_k', 'j'), ['allreduce', 'allreduce'])
    """
    if not traced(x):
        return _qr(x, dims, mode, new)
    with untraced():
        Q, R = _qr(x, dims, mode, new)
    _, rows, cols = matrix_dims(x, dims, "qr")
    if mode != "reduced" or x.sizes[rows] < x.sizes[cols]:
        raise ArgumentError(
            f"sa.linalg.qr: gradients are defined for mode='reduced' with m >= n; got mode={mode!r} and a "
            f"{x.sizes[rows]}x{x.sizes[cols]} matrix (dims {rows!r}, {cols!r}). Use mode='reduced' on a tall "
            f"matrix, or sa.stop_gradient(x) when no gradient is needed"
        )
    return QRResult(qr_part(x, Q, R, 0, rows, cols), qr_part(x, Q, R, 1, rows, cols))


def _qr(x: Any, dims: Any, mode: str, new: str | None) -> QRResult:
    x, rows, cols = matrix_dims(x, dims, "qr")
    float_dtype(x, "sa.linalg.qr")
    if mode not in ("reduced", "complete"):
        raise ArgumentError(f"sa.linalg.qr: mode must be 'reduced' or 'complete'; got {mode!r}")
    new = new or f"{cols}_k"
    if new in x.dims:
        raise DimensionError(f"sa.linalg.qr: new={new!r} is already a dim of x {x.sizes}; pass another name")
    m, n = x.sizes[rows], x.sizes[cols]
    if 0 < m < n:
        return wide_qr(x, rows, cols, new)
    if (mode == "complete" and m > n) or n == 0 or m == 0:
        return _fallback_qr(x, rows, cols, new, mode)
    Q, R = tsqr(x, rows, cols, new)
    return QRResult(cast(ShardArray, Q), R)  # want_q=True: tsqr made Q
