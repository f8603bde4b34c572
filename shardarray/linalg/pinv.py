"""``sa.linalg.pinv`` and ``matrix_rank`` on named dims, from the TSQR-based SVD.

Collectives: those of ``svd``/``svdvals`` (``qr``'s R: two allreduces of the
``n x n`` Gram matrix over the row axes, TSQR's allgather of R factors after
them for an ill-conditioned matrix, an alltoall first when the columns are split),
then ``pinv`` is one einsum ``V diag(1/S) U^H`` over the ``k`` dim (its rows
keep U's row split, so the product is local), and ``matrix_rank`` a local
count over the replicated singular values. ``pinv``'s gradient is closed-form
(``autograd/vjp_linalg.py``; no SVD in the backward pass): one allreduce each
of three ``k x k`` products over the split of the longer dim.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.relayout import resolve_to
from ..core.tape import differentiable, keeps_kind
from ..ops.einsum import einsum
from ..ops.elementwise.arithmetic import conj, where
from ..ops.manipulation.structure import astype
from ..ops.reduction.reduce import max as reduce_max
from ..ops.reduction.reduce import sum as reduce_sum
from ._matrix import float_dtype, matrix_dims
from ._parts import traced, untraced
from .svd import fresh_dim, svd, svdvals


def _cutoff(s: ShardArray, k: str, m: int, n: int, rtol: float | None) -> ShardArray:
    if rtol is None:
        rtol = max(m, n) * float(np.finfo(s.dtype).eps)
    return reduce_max(s, k) * rtol


@keeps_kind
def pinv(x: ShardArray, dims: Any = None, *, rtol: float | None = None) -> ShardArray:
    """Moore-Penrose pseudo-inverse of the matrices of ``x``: dims (batch..., cols, rows) (``x``'s two matrix
    dims swapped). Singular values ``<= rtol * max(S)`` are dropped (default ``rtol = max(m, n) * eps``).

    Collectives: ``svd``'s (TSQR on a row-split tall matrix; under MPI one host reduction of one int, so that a
    matrix holding NaN raises on every process), then one einsum over the singular values.

    Differentiable in closed form (Golub & Pereyra 1973): with ``P = pinv(A)`` and cotangent ``G``,
    ``Ā = -PᵀGPᵀ + (I - AP)GᵀPPᵀ + PᵀPGᵀ(I - PA)`` (complex: ``-PᵀGPᵀ + conj[(I - AP)GᵀPPᴴ] + conj[PᴴPGᵀ(I -
    PA)]``, JAX's convention of complex cotangents), the derivative wherever the rank of A is the same nearby:
    also at repeated singular values and for a rank-deficient A perturbed within its rank (the singular values
    dropped by ``rtol`` count as 0). Its collectives: A and G are moved to P's layout where theirs differs
    (an alltoall from a split in 2-D), then one allreduce each of ``PGᵀ``, ``PPᵀ`` and ``PA`` (``k x k``,
    ``k = min(m, n)``) over the axes of the longer dim's split; the other products are local.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.arange(12.0).reshape(6, 2), dims=("i", "j"), mesh=mesh, layout={"i": "row"})
        >>> p = sa.linalg.pinv(a)
        >>> p.dims, np.allclose(p.numpy(), np.linalg.pinv(np.arange(12.0).reshape(6, 2)))
        (('j', 'i'), True)
    """
    x, rows, cols = matrix_dims(x, dims, "pinv")
    float_dtype(x, "sa.linalg.pinv")
    if traced(x) and x.dtype.kind in "fc":
        with untraced():
            p = pinv(x, (rows, cols), rtol=rtol)
        return pinv_part(x, p, rows, cols)
    m, n = x.sizes[rows], x.sizes[cols]
    k = fresh_dim(x, "_pinv_k")
    u, s, vh = svd(x, (rows, cols), new=k)
    keep = s > _cutoff(s, k, m, n, rtol)
    sinv = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    uh = conj(u) if x.dtype.kind == "c" else u
    v = conj(vh) if x.dtype.kind == "c" else vh
    batch = tuple(d for d in x.dims if d not in (rows, cols))
    out = einsum(v, astype(sinv, x.dtype), uh, out=(*batch, cols, rows))
    return resolve_to(out) if out.pending else out


@differentiable("linalg.pinv_part")
def pinv_part(x: ShardArray, p: ShardArray, rows: str, cols: str) -> ShardArray:
    """``p = pinv(x)`` (computed untraced), recorded as a function of ``x``."""
    return ShardArray(p.mesh, p.spec, p.dtype, p.shards, p.pending)


def matrix_rank(x: ShardArray, dims: Any = None, *, rtol: float | None = None) -> ShardArray:
    """Number of singular values ``> rtol * max(S)`` per matrix (int64, dims batch...).

    Collectives: ``svdvals``'s (TSQR's R only; under MPI one host reduction of one int), then a local count.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.ones((6, 3)), dims=("i", "j"), mesh=mesh, layout={"i": ("row", "col")})
        >>> int(sa.linalg.matrix_rank(a))
        1
    """
    x, rows, cols = matrix_dims(x, dims, "matrix_rank")
    float_dtype(x, "sa.linalg.matrix_rank")
    k = fresh_dim(x, "_rank_k")
    s = svdvals(x, (rows, cols), new=k)
    m, n = x.sizes[rows], x.sizes[cols]
    if min(m, n) == 0:
        return reduce_sum(astype(s > 0, "int64"), k)
    return reduce_sum(astype(s > _cutoff(s, k, m, n, rtol), "int64"), k)


__all__ = ["matrix_rank", "pinv"]
