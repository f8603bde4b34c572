"""``sa.linalg.svd`` / ``svdvals`` / ``pinv`` / ``matrix_rank``: from TSQR's R factor.

A tall matrix (``m >= n``) split along its rows: ``qr``'s R (CholeskyQR2, two
allreduces of the ``n x n`` Gram matrix over the row axes, or TSQR's one
allgather of the ``n x n`` R factors where the Gram check sends it there; see
``tsqr``), then every device takes
the SVD of the small ``R = U_R S V^H`` (the same on all of them) and
``U = Q U_R`` is one local product, so U keeps the rows' split. ``svdvals``
skips the final Q product (R's collectives are its only ones). Wide matrices
are handled through the conjugate transpose (``A^H = V S U^H``, a tall
problem with the roles of U and V swapped). ``full_matrices=True`` with
``m != n`` needs the whole square U or V: replicated fallback
(``ReplicatedFallbackWarning``).
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, cast, overload

import numpy as np

from ..array import ShardArray
from ..core.common import map_blocks, map_blocks_multi, new_array
from ..core.tape import differentiable
from ..ops.elementwise.arithmetic import conj
from ..ops.manipulation.structure import transpose
from ._checks import numpy_raises, raise_if, svd_failed
from ._matrix import float_dtype, local_op, matrix_dims
from ._parts import traced, untraced
from .tsqr import tsqr


class SVDResult(NamedTuple):
    U: ShardArray
    S: ShardArray
    Vh: ShardArray


def _real(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64) if dtype.kind == "c" else dtype


@overload
def _tall_svd(x: ShardArray, rows: str, cols: str, new: str, want_u: Literal[True]) -> SVDResult: ...
@overload
def _tall_svd(x: ShardArray, rows: str, cols: str, new: str, want_u: Literal[False]) -> ShardArray: ...
def _tall_svd(x: ShardArray, rows: str, cols: str, new: str, want_u: bool) -> SVDResult | ShardArray:
    """The SVD of a tall matrix from TSQR's R: ``(U, S, Vh)``, or ``S`` alone when not ``want_u``."""
    Q, R = tsqr(x, rows, cols, new, want_q=want_u)
    mesh, xp = R.mesh, R.mesh.backend.xp
    n = x.sizes[cols]
    batch = R.dims[:-2]
    blay = {d: R.spec.of(d) for d in batch if R.spec.of(d)}
    sizes = {**{d: R.sizes[d] for d in batch}, new: n, cols: n, "_svd_r": n}

    def small(r: Any) -> tuple[Any, Any, Any, Any]:
        if not want_u:
            return None, xp.linalg.svd(r, compute_uv=False), None, svd_failed(xp, r)
        u, s, vh = xp.linalg.svd(r)
        return u, s, vh, svd_failed(xp, r)  # R holds NaN where x does (or where its QR made NaN of an inf)

    message = _no_svd(x)
    with numpy_raises(message):
        ur, s, vh, bad = map_blocks_multi(mesh, R.spec.used_axes, 4, small, R.shards)
    raise_if(mesh, bad, message)
    S = new_array(mesh, (*batch, new), sizes, blay, s, dtype=_real(x.dtype))
    if not want_u:  # svdvals
        return S
    Q = cast(ShardArray, Q)  # want_q=want_u: tsqr made Q
    Vh = new_array(mesh, (*batch, new, cols), sizes, blay, vh, dtype=x.dtype)
    items = list(zip(Q.shards, ur))
    u = map_blocks(mesh, Q.spec.used_axes, lambda it: it[0] @ it[1], items)
    U = new_array(mesh, Q.dims, {**sizes, rows: x.sizes[rows]}, Q.layout, u, dtype=x.dtype)
    return SVDResult(U, S, Vh)


def _fallback(x: ShardArray, rows: str, cols: str, new: str, full: bool) -> SVDResult:
    m, n = x.sizes[rows], x.sizes[cols]
    k = min(m, n)
    xp = x.mesh.backend.xp
    ku, kv = (m, n) if full else (k, k)
    nu, nv = f"{new}_u" if full else new, f"{new}_v" if full else new
    U, S, Vh = local_op(
        [x],
        [(rows, cols)],
        lambda s: (*xp.linalg.svd(s, full_matrices=full), svd_failed(xp, s)),
        [
            ((rows, nu), {rows: m, nu: ku}, x.dtype),
            ((new,), {new: k}, _real(x.dtype)),
            ((nv, cols), {nv: kv, cols: n}, x.dtype),
        ],
        "svd",
        fails=_no_svd(x),
    )
    return SVDResult(U, S, Vh)


def _no_svd(x: ShardArray) -> str:
    return f"sa.linalg.svd: SVD did not converge (a matrix of x {x.sizes} holds NaN)"


def svd(x: ShardArray, dims: Any = None, *, full_matrices: bool = False, new: str | None = None) -> SVDResult:
    """Singular value decomposition ``x = U diag(S) Vh`` of the matrices of ``x`` (S descending).

    Tall matrices split along their rows: ``qr`` (**two allreduces** of the
    ``n x n`` Gram matrix over the row axes, or TSQR's **one allgather** of
    the R factors for an ill-conditioned matrix; an **alltoall** first when
    the columns are split), the SVD of R on every device, ``U = Q U_R`` locally.
    Wide matrices go through ``x^H`` (same collectives on the transposed
    problem). ``full_matrices=True`` with ``m != n``: replicated fallback.

    Args:
        x: float or complex array.
        dims: ``(rows, cols)``; default the last two dims.
        full_matrices: U m x m and Vh n x n (else m x k and k x n, k = min(m, n)).
        new: name of the dim of size k; default ``cols + "_k"``.

    Returns:
        ``(U, S, Vh)``: dims (batch..., rows, new), (batch..., new), (batch..., new, cols).

    Differentiable for real matrices (thin SVD; ``full_matrices=True`` only when square), with the standard
    formula: with ``F_ij = 1 / (s_j² - s_i²)``, ``Ā = U [(F ∘ (UᵀŪ - ŪᵀU)) S + diag(S̄) + S (F ∘ (VᵀV̄ - V̄ᵀV))] Vᵀ
    + (I - UUᵀ) Ū S⁻¹ Vᵀ + U S⁻¹ V̄ᵀ (I - VVᵀ)``. Equal singular values contribute nothing to ``F`` (their
    vectors are not unique), and the ``S⁻¹`` terms need nonzero singular values where ``U`` or ``Vh`` is used.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.arange(24.0).reshape(8, 3), dims=("i", "j"), mesh=mesh, layout={"i": "row"})
        >>> u, s, vh = sa.linalg.svd(a)
        >>> np.allclose(s.numpy(), np.linalg.svd(np.arange(24.0).reshape(8, 3), compute_uv=False))
        True
    """
    x, rows, cols = matrix_dims(x, dims, "svd")
    float_dtype(x, "sa.linalg.svd")
    new = new or f"{cols}_k"
    m, n = x.sizes[rows], x.sizes[cols]
    if traced(x) and x.dtype.kind == "f" and not (full_matrices and m != n):
        with untraced():
            u, s, vh = svd(x, (rows, cols), full_matrices=full_matrices, new=new)
        return SVDResult(*(svd_part(x, u, s, vh, rows, cols, part) for part in ("U", "S", "Vh")))
    if (full_matrices and m != n) or m == 0 or n == 0:
        return _fallback(x, rows, cols, new, full_matrices)
    if m >= n:
        return _tall_svd(x, rows, cols, new, True)
    # wide: x^H = V S U^H is tall (its rows are x's cols)
    xh = conj(x) if x.dtype.kind == "c" else x
    V, S, Uh = _tall_svd(xh, cols, rows, new, True)
    U = conj(Uh) if x.dtype.kind == "c" else Uh
    Vh = conj(V) if x.dtype.kind == "c" else V

    batch = U.dims[:-2]
    return SVDResult(transpose(U, (*batch, rows, new)), S, transpose(Vh, (*batch, new, cols)))


@differentiable("linalg.svdvals")
def svdvals(x: ShardArray, dims: Any = None, *, new: str | None = None) -> ShardArray:
    """The singular values of the matrices of ``x``, descending: dims (batch..., new), real.

    Collectives: ``qr``'s R only (**two allreduces** of the ``n x n`` Gram
    matrix over the row axes, TSQR's **one allgather** of R factors after them
    for an ill-conditioned matrix, an alltoall first if the columns are
    split); the final Q is not formed.
    Wide matrices use ``x^H``. Differentiable (real): ``Ā = U diag(ḡ) V^T``
    (one ``svd`` in the VJP).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.eye(6)[:, :2] * 3, dims=("i", "j"), mesh=mesh, layout={"i": ("row", "col")})
        >>> sa.linalg.svdvals(a).numpy()
        array([3., 3.])
    """
    x, rows, cols = matrix_dims(x, dims, "svdvals")
    float_dtype(x, "sa.linalg.svdvals")
    new = new or f"{cols}_k"
    m, n = x.sizes[rows], x.sizes[cols]
    if m == 0 or n == 0:
        return _fallback(x, rows, cols, new, False).S
    if m >= n:
        return _tall_svd(x, rows, cols, new, False)
    return _tall_svd(conj(x) if x.dtype.kind == "c" else x, cols, rows, new, False)


@differentiable("linalg.svd_part")
def svd_part(
    x: ShardArray, u: ShardArray, s: ShardArray, vh: ShardArray, rows: str, cols: str, part: str
) -> ShardArray:
    """One factor (``part``: "U", "S" or "Vh") of ``svd(x)`` (computed untraced), recorded as a function of ``x``."""
    chosen = {"U": u, "S": s, "Vh": vh}[part]
    return ShardArray(chosen.mesh, chosen.spec, chosen.dtype, chosen.shards, chosen.pending)
