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
(``ReplicatedFallbackWarning``). A matrix holding NaN raises
``sa.linalg.LinAlgError`` on every process: under MPI the processes agree by
one host reduction of one int (``_checks.raise_if``). A matrix holding inf but
no NaN gives NaN singular values (NumPy's ``svdvals`` does the same) and NaN
``U``/``Vh`` (NumPy's ``svd`` gives NaN, or loops forever inside LAPACK's
``gesdd``): no LAPACK routine that iterates is ever handed inf or NaN here.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, cast, overload

import numpy as np

from ..array import ShardArray
from ..backend.meta import MetaArray
from ..core.common import map_blocks, map_blocks_multi, new_array
from ..core.relayout import resolve_to
from ..core.tape import differentiable, keeps_kind
from ..errors import DimensionError
from ..ops.elementwise.arithmetic import conj
from ..ops.manipulation.structure import transpose
from ._checks import finite_only, guard, nan_where, raise_if, svd_failed
from ._matrix import batch_last, float_dtype, local_op, matrix_dims
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
    """The SVD of a tall matrix from TSQR's R: ``(U, S, Vh)``, or ``S`` alone when not ``want_u``.

    NaN in a matrix raises ``LinAlgError`` (NumPy's "SVD did not converge"), found on each device's own block
    (``svd_failed``: one flag per matrix of the block, read with the op's one read at the end). A matrix holding
    inf gives an R holding inf or NaN (a finite matrix gives a finite R): that R is replaced by zeros before
    LAPACK sees it and its factors are NaN (``finite_only``, ``nan_where``), NumPy's ``svdvals`` answer.
    """
    x = resolve_to(x) if x.pending else x
    xb, _ = batch_last(x, (rows, cols))
    mesh, xp = x.mesh, x.mesh.backend.xp
    data = mesh.backend.has_data
    has_nan = map_blocks(mesh, xb.spec.used_axes, lambda b: svd_failed(xp, b), xb.shards) if data else []
    Q, R = tsqr(xb, rows, cols, new, want_q=want_u)
    n = x.sizes[cols]
    batch = R.dims[:-2]
    blay = {d: R.spec.of(d) for d in batch if R.spec.of(d)}
    sizes = {**{d: R.sizes[d] for d in batch}, new: n, cols: n, "_svd_r": n}

    def small(r: Any) -> tuple[Any, Any, Any, bool]:
        if isinstance(r, MetaArray):  # shapes only
            return (*(xp.linalg.svd(r) if want_u else (None, xp.linalg.svd(r, compute_uv=False), None)), False)
        bad = ~xp.all(xp.isfinite(r), axis=(-2, -1))
        r = finite_only(xp, r, bad)
        if not want_u:
            return None, nan_where(xp, xp.linalg.svd(r, compute_uv=False), bad, 1), None, False
        u, s, vh = xp.linalg.svd(r)
        return nan_where(xp, u, bad, 2), nan_where(xp, s, bad, 1), nan_where(xp, vh, bad, 2), False

    ur, s, vh, raised = map_blocks_multi(mesh, R.spec.used_axes, 4, guard(small, 3), R.shards)
    if mesh.backend.has_data:  # NaN in x, or NumPy raised on a finite R (``guard``): every process together
        flags = [f if f is not False else h for f, h in zip(raised, has_nan)]
        raise_if(mesh, flags, _no_svd(x), xb, len(batch))
    S = new_array(mesh, (*batch, new), sizes, blay, s, dtype=_real(x.dtype))
    if not want_u:  # svdvals
        return S
    Q = cast(ShardArray, Q)  # want_q=want_u: tsqr made Q
    Vh = new_array(mesh, (*batch, new, cols), sizes, blay, vh, dtype=x.dtype)
    items = list(zip(Q.shards, ur))
    u = map_blocks(mesh, Q.spec.used_axes, lambda it: it[0] @ it[1], items)
    U = new_array(mesh, Q.dims, {**sizes, rows: x.sizes[rows]}, Q.layout, u, dtype=x.dtype)
    return SVDResult(U, S, Vh)


def _svd_block(xp: Any, a: Any, full: bool) -> tuple[Any, Any, Any, Any]:
    """``svd`` of whole matrices, LAPACK never handed inf or NaN: a matrix holding them gives NaN factors, and
    its flag (the last item) says whether it holds NaN (NumPy raises "SVD did not converge" then)."""
    bad = ~xp.all(xp.isfinite(a), axis=(-2, -1))
    u, s, vh = xp.linalg.svd(finite_only(xp, a, bad), full_matrices=full)
    return nan_where(xp, u, bad, 2), nan_where(xp, s, bad, 1), nan_where(xp, vh, bad, 2), svd_failed(xp, a)


def _fallback(x: ShardArray, rows: str, cols: str, new: str, full: bool) -> SVDResult:
    m, n = x.sizes[rows], x.sizes[cols]
    k = min(m, n)
    xp = x.mesh.backend.xp
    ku, kv = (m, n) if full else (k, k)
    nu, nv = f"{new}_u" if full else new, f"{new}_v" if full else new
    U, S, Vh = local_op(
        [x],
        [(rows, cols)],
        lambda s: _svd_block(xp, s, full),
        [
            ((rows, nu), {rows: m, nu: ku}, x.dtype),
            ((new,), {new: k}, _real(x.dtype)),
            ((nv, cols), {nv: kv, cols: n}, x.dtype),
        ],
        "svd",
        fails=_no_svd(x),
    )
    return SVDResult(U, S, Vh)


def _new_dim(x: ShardArray, new: str | None, cols: str, what: str, full: bool = False) -> str:
    """The name of the new dim of size k (default ``cols + "_k"``), refused (``DimensionError``) where ``x``
    already has it, or, for ``full`` (square U and Vh of a non-square matrix), the ``new + "_u"`` / ``"_v"``
    it then names U's and Vh's dims."""
    new = new or f"{cols}_k"
    if new in x.dims:
        raise DimensionError(f"sa.linalg.{what}: new={new!r} is already a dim of x {x.sizes}; pass another name")
    for name in (f"{new}_u", f"{new}_v") if full else ():
        if name in x.dims:
            raise DimensionError(
                f"sa.linalg.{what}: new={new!r} names U's and Vh's dims {new + '_u'!r} and {new + '_v'!r} with "
                f"full_matrices=True, and {name!r} is already a dim of x {x.sizes}; pass another name"
            )
    return new


def fresh_dim(x: ShardArray, name: str) -> str:
    """``name``, with ``_`` appended until it is not a dim of ``x``: the new dim of an internal ``svd``."""
    while name in x.dims:
        name += "_"
    return name


def _no_svd(x: ShardArray) -> str:
    return f"sa.linalg.svd: SVD did not converge (a matrix of x {x.sizes} holds NaN)"


@keeps_kind
def svd(x: ShardArray, dims: Any = None, *, full_matrices: bool = False, new: str | None = None) -> SVDResult:
    """Singular value decomposition ``x = U diag(S) Vh`` of the matrices of ``x`` (S descending).

    Tall matrices split along their rows: ``qr`` (**two allreduces** of the
    ``n x n`` Gram matrix over the row axes, or TSQR's **one allgather** of
    the R factors for an ill-conditioned matrix; an **alltoall** first when
    the columns are split), the SVD of R on every device, ``U = Q U_R`` locally.
    Wide matrices go through ``x^H`` (same collectives on the transposed
    problem). ``full_matrices=True`` with ``m != n``: replicated fallback. Then, under MPI, **one host
    reduction** of one int over the job: a matrix holding NaN raises ``sa.linalg.LinAlgError`` ("SVD did not
    converge", naming its batch index and device) on every process together. A matrix holding inf (no NaN)
    gives NaN ``U``, ``S`` and ``Vh`` (NumPy: NaN, or a ``gesdd`` that never returns).

    Args:
        x: float or complex array.
        dims: ``(rows, cols)``; default the last two dims.
        full_matrices: U m x m and Vh n x n (else m x k and k x n, k = min(m, n)).
        new: name of the dim of size k; default ``cols + "_k"``. With ``full_matrices=True`` and ``m != n``,
            U's and Vh's dims of sizes m and n are ``new + "_u"`` and ``new + "_v"``.

    Returns:
        ``(U, S, Vh)``: dims (batch..., rows, new), (batch..., new), (batch..., new, cols).

    Raises:
        DimensionError: ``new`` (or ``new + "_u"`` / ``"_v"``) is already a dim of ``x``, as the default is for
            ``qr``'s R factor (dims ``(cols + "_k", cols)``): pass another ``new``.

    Differentiable for real matrices (thin SVD; ``full_matrices=True`` only when square), with the standard
    formula ``Ā = U [(F ∘ J) S + diag(S̄) + S (F ∘ K)] Vᵀ + (I - UUᵀ) Ū S⁻¹ Vᵀ + U S⁻¹ V̄ᵀ (I - VVᵀ)``, where
    ``F_ij = 1 / (s_j² - s_i²)``, ``J = UᵀŪ - ŪᵀU`` and ``K = VᵀV̄ - V̄ᵀV``. The off-diagonal part of the
    bracket is computed as ``D ∘ (J + K) / 2 + P ∘ (J - K) / 2`` with ``D_ij = 1 / (s_j - s_i)`` and
    ``P_ij = 1 / (s_j + s_i)``. Where two singular values are equal (their vectors are not unique) ``D``'s entry
    is taken as 0 and ``P``'s is kept (0 only where both values are 0). That is exact for the losses whose
    ``J + K`` stays 0 for the pair near the tie as well: functions of ``S`` alone or of ``U Vᵀ`` (the polar
    factor). A loss that tells the pair apart off the tie (``U diag(S) Vᵀ`` itself, ``V S⁻¹ Uᵀ``) has a finite
    limit of that term which the factors at the tie do not determine, and misses it there; ``sa.linalg.pinv``
    has its own closed-form gradient. The ``S⁻¹`` terms need nonzero singular values where ``U`` or ``Vh`` is
    used.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.arange(24.0).reshape(8, 3), dims=("i", "j"), mesh=mesh, layout={"i": "row"})
        >>> u, s, vh = sa.linalg.svd(a)
        >>> np.allclose(s.numpy(), np.linalg.svd(np.arange(24.0).reshape(8, 3), compute_uv=False))
        True
    """
    x, rows, cols = matrix_dims(x, dims, "svd")
    float_dtype(x, "sa.linalg.svd")
    m, n = x.sizes[rows], x.sizes[cols]
    new = _new_dim(x, new, cols, "svd", full_matrices and m != n)
    if traced(x) and x.dtype.kind == "f" and not (full_matrices and m != n):
        with untraced():
            u, s, vh = svd(x, (rows, cols), full_matrices=full_matrices, new=new)
        return SVDResult(*(svd_part(x, u, s, vh, rows, cols, part) for part in ("U", "S", "Vh")))
    if (full_matrices and m != n) or m == 0 or n == 0:
        return _fallback(x, rows, cols, new, full_matrices and m != n)  # square: full is reduced (dims too)
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
    split); the final Q is not formed. Under MPI one host reduction of one
    int more (every process raises together where a matrix holds NaN).
    Wide matrices use ``x^H``. Differentiable (real): ``Ā = U diag(ḡ) V^T``
    (one ``svd`` in the VJP).

    Args:
        x: float or complex array.
        dims: ``(rows, cols)``; default the last two dims.
        new: name of the dim of the singular values; default ``cols + "_k"``.

    Returns:
        The singular values, dims (batch..., new), descending.

    Raises:
        DimensionError: ``new`` is already a dim of ``x`` (pass another name).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.eye(6)[:, :2] * 3, dims=("i", "j"), mesh=mesh, layout={"i": ("row", "col")})
        >>> sa.linalg.svdvals(a).numpy()
        array([3., 3.])
    """
    x, rows, cols = matrix_dims(x, dims, "svdvals")
    float_dtype(x, "sa.linalg.svdvals")
    new = _new_dim(x, new, cols, "svdvals")
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
