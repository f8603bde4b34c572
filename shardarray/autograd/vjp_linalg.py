"""VJPs of ``sa.linalg``, built from the named ops themselves.

Complex cotangents follow JAX's convention, as every VJP of the library (``dL/dx - i dL/dy``): a holomorphic
op takes plain transposes (no conjugates), a real-valued function of a complex matrix (``eigvalsh``,
``svdvals``, ``log|det|``) the conjugate of the real formula. The factorizations whose formulas below are
real-only (the singular vectors) are refused on a complex matrix instead of returning a wrong gradient:
``svd`` records no node for one, so the traced matrix's read raises ``TapeError`` (as for
``svd(full_matrices=True)`` of a non-square matrix, which JAX and PyTorch refuse too), and its VJP also raises
``DTypeError`` should one reach it; ``cholesky``, ``qr``, ``eigh``'s vectors and ``pinv`` take complex matrices
too.

* ``Y = inv(A)``: ``gA = -Y^T G Y^T`` (one einsum of three operands).
* ``d = det(A)``: ``gA = g d inv(A)^T`` (an ``inv`` and a broadcast product).
* ``X = solve(A, B)``: ``gB = solve(A^T, G)``, ``gA = -gB X^T`` (one einsum).
* ``L = cholesky(A)``: ``Φ(S + S^H)`` with ``S = L^{-T} Φ(L^T Ḡ) conj(L)^{-1}`` (Murray 2016; Φ: lower
  triangle, halved diagonal; complex too), by two distributed back substitutions.
* ``Q, R = qr(A)`` (reduced, ``m >= n``): ``(Q̄ + Q copyltu(R R̄^T - Q̄^T Q)) R^{-T}`` (complex: see ``_qr``).
* ``s = svdvals(A)``: ``U diag(ḡ) V^T``; ``slogdet(A).logabsdet``: ``ḡ A^{-T}``; a complex ``slogdet(A).sign``:
  ``i Im(ḡ sign) A^{-T}``.
* ``U, S, Vh = svd(A)``: one share per factor (``_svd_part``); ``1/(s_j² - s_i²)`` split into
  ``1/(s_j - s_i)`` (dropped for equal values) and ``1/(s_j + s_i)`` (kept).
* ``P = pinv(A)``: ``-PᵀGPᵀ + (I - AP)GᵀPPᵀ + PᵀPGᵀ(I - PA)`` (Golub & Pereyra), from three ``k x k`` products;
  complex: ``-PᵀGPᵀ + conj[(I - AP)GᵀPPᴴ] + conj[PᴴPGᵀ(I - PA)]`` (``_pinv_part``).

Their collectives are those of the ops they call (batched locally; the
distributed Cholesky/TSQR paths or the replicated fallback when a matrix dim is split).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.relayout import relayout, resolve_to
from ..core.tape import Context, register_vjp
from ..errors import DTypeError, LinAlgError
from ..layout import Layout
from ..linalg._matrix import local_op, matrix_dims
from ..linalg.dense import inv, solve
from ..linalg.spd import solve_lh
from ..linalg.svd import svd
from ..ops.cotangent import match
from ..ops.creation.basic import asarray, from_blocks
from ..ops.einsum import einsum
from ..ops.elementwise.arithmetic import abs as absolute
from ..ops.elementwise.arithmetic import add, conj, divide, greater, imag, multiply, not_equal, real, subtract, where
from ..ops.manipulation.structure import astype, rename
from ..ops.reduction import reduce as red


def _h(x: ShardArray) -> ShardArray:
    return conj(x) if x.dtype.kind == "c" else x


def _matrix(ctx: Context) -> tuple[str, str]:

    _, rows, cols = matrix_dims(
        ctx.args[0],
        ctx.args[1] if len(ctx.args) > 1 and not isinstance(ctx.args[1], ShardArray) else ctx.kwargs.get("dims"),
        "vjp",
    )
    return rows, cols


def _plain(fn: Any) -> Any:
    return getattr(fn, "__wrapped__", fn)


def _real_only(x: ShardArray, what: str) -> None:
    """Refuse the gradient of ``what`` at a complex ``x``: its formula here holds for real matrices only."""
    if x.dtype.kind == "c":
        raise DTypeError(
            f"the gradient of {what} is implemented for real matrices only; got a {x.dtype} matrix {x.sizes} "
            f"on the tape. Differentiate a real matrix, or pass sa.stop_gradient(x) when no gradient is needed"
        )


@register_vjp("linalg.inv")
@register_vjp("linalg.inv_or_nan")
def _inv(ctx: Context, g: ShardArray) -> list[Any]:
    a, y = ctx.args[0], ctx.out  # holomorphic: Y^T, no conjugate
    i, j = _matrix(ctx)
    g = resolve_to(g)
    y1 = rename(y, {i: "_vk", j: i})  # Y^T[i, k] stored at (k, i)
    g1 = rename(g, {i: "_vk", j: "_vl"})
    y2 = rename(y, {i: j, j: "_vl"})  # Y^T[l, j] stored at (j, l)
    ga = _plain(einsum)(y1, g1, y2, out=tuple(ctx.out.dims))
    ga = multiply(ga, -1.0)
    return [match(ga, a)] + [None] * (len(ctx.args) - 1)


@register_vjp("linalg.det")
def _det(ctx: Context, g: ShardArray) -> list[Any]:

    a = ctx.args[0]
    i, j = _matrix(ctx)
    try:
        yt = rename(_plain(inv)(a, (i, j)), {i: j, j: i})  # inv(A)^T with dims (.., i, j)
    except (LinAlgError, np.linalg.LinAlgError):  # singular: det(A) inv(A)^T is still the adjugate's transpose
        return [match(multiply(_adjugate_t(a, i, j), resolve_to(g)), a)] + [None] * (len(ctx.args) - 1)
    coef = multiply(resolve_to(g), ctx.out)
    return [match(multiply(yt, coef), a)] + [None] * (len(ctx.args) - 1)


def _adjugate_t(a: ShardArray, i: str, j: str) -> ShardArray:
    """``adj(A)^T`` (``= det(A) A^{-T}`` where A is invertible), from the SVD ``A = U S Vh``:
    ``adj(A) = det(U) det(Vh) Vh^H adj(S) U^H`` with ``adj(S)_k = prod_{l != k} s_l``, defined at singular A."""

    xp, n = a.mesh.backend.xp, a.sizes[i]

    def block(m: Any) -> tuple[Any]:
        u, s, vh = xp.linalg.svd(m)
        adj_s = xp.stack([xp.prod(s[..., [j for j in range(n) if j != k]], axis=-1) for k in range(n)], axis=-1)
        sign = xp.linalg.det(u) * xp.linalg.det(vh)
        adj = sign[..., None, None] * (
            (xp.conj(vh).swapaxes(-1, -2) * adj_s[..., None, :]) @ xp.conj(u).swapaxes(-1, -2)
        )
        return (adj.swapaxes(-1, -2).astype(m.dtype),)

    return local_op([a], [(i, j)], block, [((i, j), {i: n, j: n}, a.dtype)], "det")[0]


@register_vjp("linalg.solve")
def _solve(ctx: Context, g: ShardArray) -> list[Any]:

    a, b = ctx.args[0], ctx.args[1]
    dims = ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("dims")
    _, i, j = matrix_dims(a, dims, "vjp")
    _, bi, bk = matrix_dims(b, ctx.kwargs.get("b_dims"), "vjp")
    x = ctx.out
    at = rename(a, {i: j, j: i})  # A^T, same dim names (holomorphic: no conjugate)
    gb = _plain(solve)(at, resolve_to(g), (i, j), b_dims=(bi, bk))
    # gA[i, j] = -sum_k gB[i, k] X[j, k]
    g1 = rename(gb, {bi: i, bk: "_vk"})
    x1 = rename(x, {bi: j, bk: "_vk"})
    ga = multiply(_plain(einsum)(g1, x1, out=tuple(d for d in a.dims)), -1.0)
    return [match(ga, a), match(gb, b)] + [None] * (len(ctx.args) - 2)


# ---- cholesky, qr, svdvals, slogdet (issue 19 follow-up) ----------------------------------------------------
def _mask(like: ShardArray, rows: str, cols: str, diag: float, kind: str = "lower") -> ShardArray:
    """1 below the diagonal, ``diag`` on it, 0 above, on dims (rows, cols) with ``like``'s split of them."""
    mesh, n, m = like.mesh, like.sizes[rows], like.sizes[cols]
    lay = Layout((rows, cols), (n, m), (like.spec.of(rows), like.spec.of(cols)))
    backend = mesh.backend

    def make(b: Any) -> Any:
        (r0, r1), (c0, c1) = b
        if not backend.has_data:
            return backend.xp.zeros((r1 - r0, c1 - c0), dtype=like.dtype)
        d = np.arange(r0, r1)[:, None] - np.arange(c0, c1)[None, :]
        return backend.from_numpy(np.where(d > 0, 1.0, np.where(d == 0, diag, 0.0)).astype(like.dtype))

    return from_blocks(mesh, lay, like.dtype, make)


@register_vjp("linalg.cholesky")
def _cholesky(ctx: Context, g: ShardArray) -> list[Any]:
    """``A = L L^H`` (Murray 2016): ``P = Φ(L^T Ḡ)``, ``S = L^{-T} P conj(L)^{-1}``, ``Ā = Φ(S + S^H)`` (Φ: the
    lower triangle with the diagonal halved; only A's lower triangle and its diagonal's real part are read: a
    strictly lower entry gets ``S_ij + conj(S_ji)``, a diagonal one ``Re S_ii``, the upper triangle 0). Complex
    cotangents follow JAX's convention (``dL = Re Σ Ā ∘ dA``); real matrices: ``S = L^{-T} P L^{-1}``. ``L^{-T}``
    as ``conj(L^{-H} conj(·))`` by the distributed back substitution (``linalg.spd.solve_lh``: per panel a reduce
    and a broadcast); ``upper=True`` is the same on ``x^T``."""

    a = ctx.args[0]
    i, j = _matrix(ctx)
    swap = {i: j, j: i}
    low, g = ctx.out, resolve_to(g)
    if ctx.kwargs.get("upper"):  # U = chol(x^T)^T: work on L = U^T and x^T
        low, g = rename(low, swap), rename(g, swap)
    batch = tuple(d for d in low.dims if d not in (i, j))
    cx = low.dtype.kind == "c"
    m = rename(_plain(einsum)(rename(low, {j: "_va"}), g, out=(*batch, "_va", j)), {"_va": i})
    phi = _mask(low, i, j, 0.5)
    p = multiply(m, phi)
    z = solve_lh(low, conj(p) if cx else p, i, j, i, j)
    z = conj(z) if cx else z  # L^{-T} P
    st = solve_lh(low, rename(z, swap), i, j, i, j)  # S^T = L^{-H} (L^{-T} P)^T
    ga = multiply(add(rename(st, swap), conj(st) if cx else st), phi)  # Φ(S + S^H)
    if ctx.kwargs.get("upper"):
        ga = rename(ga, swap)
    return [match(ga, a)] + [None] * (len(ctx.args) - 1)


@register_vjp("linalg.qr_part")
def _qr(ctx: Context, g: ShardArray) -> list[Any]:
    """Reduced QR, ``m >= n``: ``M = R R̄^T - Q̄^T Q``, ``Ā = (Q̄ + Q copyltu(M)) R^{-T}`` (real;
    ``copyltu(M) = tril(M) + tril(M, -1)^T``). Complex (JAX's convention, ``R``'s diagonal real as ``qr`` makes
    it): ``Ā = (Q̄ + conj(Q) W) R^{-T}``, ``W`` the strict lower triangle of ``conj(M)``, ``Re diag(M)`` and the
    strict upper one of ``M^T`` (the adjoint of ``dQ = Q C + (I - Q Q^H) dA R^{-1}``, ``C = Q^H dQ`` skew-Hermitian
    with ``Im diag C = Im diag(Q^H dA R^{-1})``). ``Q̄^T Q`` sums over the split rows (an allreduce of ``n²``);
    the rest is local (``R`` is replicated)."""
    x, q, r, which = ctx.args[0], ctx.args[1], ctx.args[2], ctx.args[3]
    rows, cols = ctx.args[4], ctx.args[5]
    new = next(d for d in q.dims if d in r.dims and d not in x.dims)
    batch = tuple(d for d in r.dims if d not in (new, cols))
    g = resolve_to(g)
    vb = "_vb"
    if which == 1:  # R̄ only: M = R R̄^T
        mm = _plain(einsum)(r, rename(g, {new: vb}), out=(*batch, new, vb))
    else:  # Q̄ only: M = -Q̄^T Q
        mm = multiply(_plain(einsum)(g, rename(q, {new: vb}), out=(*batch, new, vb)), -1.0)
    n = r.sizes[new]
    low = astype(asarray(np.tril(np.ones((n, n))), dims=(new, vb), mesh=x.mesh), x.dtype)
    strict = astype(asarray(np.tril(np.ones((n, n)), -1), dims=(new, vb), mesh=x.mesh), x.dtype)
    upper = rename(multiply(mm, strict), {new: vb, vb: new})
    if x.dtype.kind == "c":
        diag = multiply(astype(real(mm), x.dtype), subtract(low, strict))
        c = add(add(multiply(conj(mm), strict), diag), upper)
        q = conj(q)
    else:
        c = add(multiply(mm, low), upper)
    b = rename(_plain(einsum)(q, c, out=(*batch, rows, vb)), {vb: new})
    if which == 0:
        b = add(b, g)
    ri = rename(_plain(inv)(r, (new, cols)), {new: "_vc", cols: new})  # R^{-1}[c, j] at (_vc=c, new=j)
    ga = rename(_plain(einsum)(b, ri, out=(*batch, rows, "_vc")), {"_vc": cols})
    return [match(ga, x)] + [None] * (len(ctx.args) - 1)


@register_vjp("linalg.svdvals")
def _svdvals(ctx: Context, g: ShardArray) -> list[Any]:
    """``s = svdvals(A)``: ``Ā = U diag(ḡ) V^T`` (complex: its conjugate; one SVD, i.e. TSQR, and one einsum)."""

    a = ctx.args[0]
    i, j = _matrix(ctx)
    k = _fresh("_svk", a)
    u, _, vh = svd(a, (i, j), new=k)
    g = rename(resolve_to(g), {ctx.out.dims[-1]: k})
    ga = _h(_plain(einsum)(u, g, vh, out=tuple(d for d in a.dims)))
    return [match(ga, a)] + [None] * (len(ctx.args) - 1)


@register_vjp("linalg.slogdet_logabs")
def _slogdet(ctx: Context, g: ShardArray) -> list[Any]:
    """``log|det A|`` (real): ``Ā = ḡ A^{-T}`` (an ``inv``: the Cholesky path for a split SPD matrix)."""

    a, i, j = ctx.args[0], ctx.args[2], ctx.args[3]
    yt = rename(_plain(inv)(a, (i, j)), {i: j, j: i})
    return [match(multiply(yt, resolve_to(g)), a)] + [None] * (len(ctx.args) - 1)


@register_vjp("linalg.slogdet_sign")
def _slogdet_sign(ctx: Context, g: ShardArray) -> list[Any]:
    """``sign = det A / |det A|`` of a complex matrix (a real one's is piecewise constant: no node is recorded).

    ``d sign = i Im(tr(A^{-1} dA)) sign`` (JAX's JVP), so in JAX's convention of complex cotangents
    ``Ā = i Im(ḡ sign) A^{-T}``: one ``inv`` and two broadcast products.
    """
    a, i, j = ctx.args[0], ctx.args[2], ctx.args[3]
    if a.dtype.kind != "c":
        return [None] * len(ctx.args)
    yt = rename(_plain(inv)(a, (i, j)), {i: j, j: i})
    coef = multiply(imag(multiply(resolve_to(g), ctx.out)), 1j)
    return [match(multiply(yt, coef), a)] + [None] * (len(ctx.args) - 1)


def _eig_parts(ctx: Context) -> tuple[ShardArray, ShardArray, ShardArray, str, str, str]:
    x, w, v, rows, cols = ctx.args[:5]
    new = w.dims[-1]
    return x, w, v, rows, cols, new


def _hermitian_part(a: ShardArray, rows: str, cols: str) -> ShardArray:
    """``(a + a^H) / 2`` over the matrix dims ``rows``, ``cols``."""
    return multiply(add(a, _h(rename(a, {rows: cols, cols: rows}))), 0.5)


def _v_m_vh(v: ShardArray, m: ShardArray, rows: str, cols: str, new: str, new2: str) -> ShardArray:
    """``V M V^H``: ``v`` (batch..., rows, new), ``m`` (batch..., new, new2) -> (batch..., rows, cols)."""
    batch = tuple(d for d in v.dims if d not in (rows, new))
    vh = rename(_h(v), {rows: cols, new: new2})
    return einsum(einsum(v, m, out=(*batch, rows, new2)), vh, out=(*batch, rows, cols))


@register_vjp("linalg.eigh_values")
def _eigh_values(ctx: Context, g: ShardArray) -> list[Any]:
    """``Ā = conj(V diag(w̄) V^H)`` (the eigenvalues are real: JAX's convention conjugates)."""
    x, _, v, rows, cols, _ = _eig_parts(ctx)
    vh = rename(v, {rows: cols})
    a = einsum(multiply(_h(v), resolve_to(g)), vh, out=x.dims)  # sums over new: conj(V) diag(g) V^T
    return [match(astype(a, x.dtype) if a.dtype != x.dtype else a, x), None, None, None, None]


@register_vjp("linalg.eigh_vectors")
def _eigh_vectors(ctx: Context, g: ShardArray) -> list[Any]:
    """``Ā = herm(V (F ∘ (V^H V̄)) V^H)``, ``F_ij = 1/(w_j - w_i)`` (0 where the eigenvalues are equal). Complex
    (JAX's convention, its JVP ``dV = V (F ∘ (V^H dA V))``): ``Ā = herm(conj(V (F ∘ (V^H conj(V̄))) V^H))``, exact
    for losses that do not depend on the eigenvectors' phases (which LAPACK fixes, not the matrix)."""
    x, w, v, rows, cols, new = _eig_parts(ctx)
    new2 = _fresh(new + "_", x, v)
    batch = tuple(d for d in x.dims if d not in (rows, cols))
    g = _h(resolve_to(g))
    inner = einsum(_h(v), rename(g, {new: new2}), out=(*batch, new, new2))  # V^H conj(V̄), summed over rows
    f = _reciprocal_gaps(w, new, new2)
    a = _hermitian_part(_h(_v_m_vh(v, multiply(inner, f), rows, cols, new, new2)), rows, cols)
    return [match(a, x), None, None, None, None]


def _v_inverse(v: ShardArray, rows: str, new: str, k: str) -> ShardArray:
    """``V^{-1}[k, r]`` stored at ``(k, rows=r)`` for eigenvectors ``v`` (batch..., rows, new)."""
    return rename(_plain(inv)(v, (rows, new)), {rows: k, new: rows})


def _to_input(a: ShardArray, x: ShardArray) -> ShardArray:
    """A complex gradient ``a`` of a real input ``x``: its real part (JAX's convention), in ``x``'s dtype."""
    if x.dtype.kind != "c":
        a = real(a)
    return astype(a, x.dtype) if a.dtype != x.dtype else a


@register_vjp("linalg.eig_values")
def _eig_values(ctx: Context, g: ShardArray) -> list[Any]:
    """``w = eig(A).eigenvalues``: ``Ā = V^{-T} diag(w̄) V^T`` (holomorphic: plain transposes; real ``A``: the real
    part). One ``inv`` of the eigenvectors and one einsum."""
    x, _, v, rows, cols, new = _eig_parts(ctx)
    k = _fresh("_eik", x, v)
    gk = rename(resolve_to(g), {new: k})
    vt = rename(v, {rows: cols, new: k})  # V[c, k] at (cols=c, k)
    a = einsum(multiply(_v_inverse(v, rows, new, k), gk), vt, out=x.dims)
    return [match(_to_input(a, x), x), None, None, None, None]


@register_vjp("linalg.eig_vectors")
def _eig_vectors(ctx: Context, g: ShardArray) -> list[Any]:
    """``V = eig(A).eigenvectors`` (unit columns): ``Ā = (V N V^{-1})^T`` with ``N = -(K ∘ F)``,
    ``K = V̄^T V - diag(c) V^H V``, ``c = Re(diag(V̄^T V))``, ``F_ij = 1 / (w_j - w_i)`` (0 where equal): the
    transpose of ``dV = V P - V diag(Re(diag(V^H V P)))``, ``P = F ∘ (V^{-1} dA V)``."""
    x, w, v, rows, cols, new = _eig_parts(ctx)
    e2 = _fresh("_eil", x, v)
    batch = tuple(d for d in x.dims if d not in (rows, cols))
    g = resolve_to(g)
    vl = rename(v, {new: e2})
    gtv = einsum(g, vl, out=(*batch, new, e2))  # (V̄^T V)[k, l]
    vhv = einsum(conj(v), vl, out=(*batch, new, e2))  # (V^H V)[k, l]
    c = real(red.sum(multiply(g, v), rows))  # Re((V̄^T V)[k, k]), over new
    kk = subtract(gtv, multiply(vhv, c))
    n = multiply(multiply(kk, _reciprocal_gaps(w, new, e2)), -1.0)
    vc = rename(v, {rows: cols})  # V[c, k] at (cols=c, new=k)
    a = einsum(vc, n, _v_inverse(v, rows, new, e2), out=x.dims)
    return [match(_to_input(a, x), x), None, None, None, None]


def _fresh(name: str, *arrays: ShardArray) -> str:
    taken = {d for a in arrays for d in a.dims}
    while name in taken:
        name += "_"
    return name


def _reciprocal(d: ShardArray) -> ShardArray:
    """``1 / d``, 0 where ``d`` is 0."""
    nz = not_equal(d, 0.0)
    return where(nz, divide(1.0, where(nz, d, 1.0)), 0.0)


#: values within ``GAP_ULPS * n * eps * max|w|`` of each other count as equal (``_reciprocal_gaps``)
GAP_ULPS = 8


def _reciprocal_gaps(w: ShardArray, new: str, new2: str) -> ShardArray:
    """``F_ij = 1 / (w_j - w_i)`` over (new, new2), 0 where the values are equal (the diagonal among them): the
    factor of the eigenvector VJP (``eigh``, ``eig``) and of the singular-vector one (``svd``, with the singular
    values).

    "Equal" is up to the solver's rounding: ``|w_j - w_i| <= GAP_ULPS * n * eps * max|w|`` per matrix. A repeated
    eigenvalue of ``Q diag(1, 1, 3) Q^T`` comes back from LAPACK as two values an ulp or so apart; their exact
    ``1 / (w_j - w_i)`` (about ``1e16``) would multiply the rounding of ``V^H V̄`` into an O(1) error of a gradient
    that is exact for basis-invariant losses at a tie (and vectors that close are not determined by the matrix).
    """
    d = subtract(rename(w, {new: new2}), w)
    n = w.sizes[new]
    if not n:
        return _reciprocal(d)
    eps = float(np.finfo(np.dtype(w.dtype.char.lower()) if w.dtype.kind == "c" else w.dtype).eps)
    tie = multiply(red.max(absolute(w), new), GAP_ULPS * n * eps)  # per matrix
    apart = greater(absolute(d), tie)
    return where(apart, divide(1.0, where(apart, d, 1.0)), 0.0)


def _svd_factors(s: ShardArray, new: str, new2: str, part: str) -> ShardArray:
    """The ``U`` (``part="U"``) or ``Vh`` share's factor over (new, new2): ``F_ij s_j = (D + P)_ij / 2`` or
    ``s_i F_ij = (D - P)_ij / 2``, where ``F_ij = 1 / (s_j² - s_i²)``, ``D_ij = 1 / (s_j - s_i)`` (0 where the
    values are equal) and ``P_ij = 1 / (s_j + s_i)`` (0 where both are 0).

    The shares add up to ``D ∘ (J + K) / 2 + P ∘ (J - K) / 2`` (``J = UᵀŪ - ŪᵀU``, ``K = VᵀV̄ - V̄ᵀV``). Only
    ``D`` is singular on equal values, where a loss invariant to the basis of their subspace has ``J + K = 0``:
    its entry is dropped (the exact limit where ``J + K`` stays 0 near the tie too; see ``sa.linalg.svd``),
    while ``P``'s finite one is kept.
    """
    gaps = _reciprocal_gaps(s, new, new2)
    sums = _reciprocal(add(rename(s, {new: new2}), s))
    return multiply(add(gaps, sums) if part == "U" else subtract(gaps, sums), 0.5)


@register_vjp("linalg.svd_part")
def _svd_part(ctx: Context, g: ShardArray) -> list[Any]:
    """One factor's share of the SVD's VJP (see ``sa.linalg.svd``); the three shares add up to the whole."""

    x, u, s, vh, rows, cols, part = ctx.args
    if part != "S":
        _real_only(x, f"sa.linalg.svd's {part}")
    new = s.dims[-1]
    batch = tuple(d for d in x.dims if d not in (rows, cols))
    new2 = _fresh(new + "2", x, u, vh)
    g = resolve_to(g)
    vh2 = rename(vh, {new: new2})
    if part == "S":
        a = _h(einsum(multiply(u, g), vh, out=x.dims))
    elif part == "U":
        utg = einsum(u, rename(g, {new: new2}), out=(*batch, new, new2))  # Uᵀ Ū
        skew = subtract(utg, rename(utg, {new: new2, new2: new}))
        m = multiply(skew, _svd_factors(s, new, new2, "U"))  # (F ∘ J) S
        a = einsum(einsum(u, m, out=(*batch, rows, new2)), vh2, out=x.dims)
        proj = subtract(g, rename(einsum(u, utg, out=(*batch, rows, new2)), {new2: new}))  # (I - UUᵀ) Ū
        a = add(a, einsum(divide(proj, s), vh, out=x.dims))
    else:  # "Vh": V̄ = ḡᵀ
        vtvb = einsum(vh, rename(g, {new: new2}), out=(*batch, new, new2))  # Vᵀ V̄ = Vh ḡᵀ
        skew = subtract(vtvb, rename(vtvb, {new: new2, new2: new}))
        m = multiply(skew, _svd_factors(s, new, new2, "Vh"))  # S (F ∘ K)
        a = einsum(einsum(u, m, out=(*batch, rows, new2)), vh2, out=x.dims)
        gvt = einsum(g, vh2, out=(*batch, new, new2))  # ḡ Vhᵀ
        proj = subtract(g, einsum(gvt, vh2, out=(*batch, new, cols)))  # V̄ᵀ (I - VVᵀ)
        a = add(a, einsum(divide(u, s), proj, out=x.dims))
    return [match(a, x)] + [None] * (len(ctx.args) - 1)


@register_vjp("linalg.pinv_part")
def _pinv_part(ctx: Context, g: ShardArray) -> list[Any]:
    """``P = pinv(A)`` (Golub & Pereyra 1973), the derivative where A's rank stays constant:
    ``Ā = -PᵀGPᵀ + (I - AP)GᵀPPᵀ + PᵀPGᵀ(I - PA) = Pᵀ M + N PPᵀ`` with ``M = PGᵀ(I - PA) - GPᵀ`` and
    ``N = (I - AP)Gᵀ``.

    A complex A (the cotangents in JAX's convention): ``Ā = -PᵀGPᵀ + conj[(I - AP)GᵀPPᴴ] + conj[PᴴPGᵀ(I - PA)]``,
    from ``dP = -P dA P + PPᴴ dAᴴ (I - AP) + (I - PA) dAᴴ PᴴP``: the real formula with each ᵀ read as ᴴ and G as
    conj(G), conjugated. With ``H = conj(G)``, ``PHᴴ = PGᵀ`` and ``N`` are the real formula's, ``HPᴴ`` is
    ``conj(GPᵀ)``, and ``PPᵀ``, ``Pᵀ`` become ``PPᴴ``, ``Pᴴ``: the same products, two conjugates more.

    A and G are first laid out like P (which has A's dims): the layout ``svd`` left its factors in, a split of
    the longer dim. The contractions over that dim give the ``k x k`` products ``PGᵀ``, ``PPᵀ`` and ``PA``
    (``k = min(m, n)``; an allreduce each where the dim is split); the rest are local products with them. A wide
    matrix takes the same formula on the transpose (``pinv(Aᵀ) = pinv(A)ᵀ``: the roles of the dims swap).
    """

    a, p, rows, cols = ctx.args
    cx = a.dtype.kind == "c"
    if a.sizes[rows] < a.sizes[cols]:
        rows, cols = cols, rows
    c2 = _fresh(cols + "_", a)
    c3 = _fresh(c2 + "_", a)
    batch = tuple(d for d in a.dims if d not in (rows, cols))
    swap = {cols: c2, c2: cols}
    ein = _plain(einsum)
    x, g = relayout(a, p.layout), resolve_to(g, p.layout)  # A and G laid out like P
    ph = _h(p)  # (conj(P) for a complex A: P Pᴴ and Pᴴ M)

    def gram(y: ShardArray, z: ShardArray) -> ShardArray:  # (Y Zᵀ)[cols, c2], summed over rows
        return resolve_to(ein(y, rename(z, {cols: c2}), out=(*batch, cols, c2)))

    pg, pp, pa = gram(p, g), gram(p, ph), gram(p, x)
    pgpa = ein(rename(pg, {c2: c3}), rename(pa, {cols: c3}), out=(*batch, cols, c2))  # PGᵀPA
    m = subtract(subtract(pg, _h(rename(pg, swap))), pgpa)  # PGᵀ - GPᵀ - PGᵀPA (complex: HPᴴ = conj(GPᵀ))
    n = subtract(g, ein(rename(x, {cols: c2}), rename(pg, swap), out=a.dims))  # Gᵀ - APGᵀ, at (rows, cols)
    pp = rename(pp, swap) if cx else pp  # (N PPᴴ sums N's cols against PPᴴ's rows: PPᵀ is symmetric, PPᴴ not)
    ga = add(ein(rename(ph, {cols: c2}), rename(m, swap), out=a.dims), ein(rename(n, {cols: c2}), pp, out=a.dims))
    return [match(conj(ga) if cx else ga, a)] + [None] * (len(ctx.args) - 1)
