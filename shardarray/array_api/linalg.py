"""``xp.linalg``: the array API ``linalg`` extension (2024.12) on distributed arrays, positionally.

Each function maps to the named form in ``sa.linalg`` (or to ``matmul``/
``tensordot``/``vecdot``/elementwise ops and reductions of this namespace) and
has its collectives: ``qr``/``svd``/``svdvals`` (and ``pinv``,
``matrix_rank``, the 2/nuclear matrix norms) use TSQR on a matrix split along
its rows: **one allgather** of the ``n x n`` R factors over the row axes
(plus one alltoall when the columns are split). ``cholesky``, ``solve``,
``inv``, ``det``, ``slogdet``, ``eigh``, ``eigvalsh``, ``eig``, ``eigvals`` run batched per device;
a split matrix is gathered with a ``sa.linalg.ReplicatedFallbackWarning``.
Norms, ``trace``, ``diagonal``, ``cross``, ``outer`` are distributed
elementwise ops and reductions (allreduces of output-sized partials).
Results are ``Array``s with dims ``dim0, dim1, ...``.

Dtypes: the LAPACK-based functions take float32/float64/complex64/complex128;
integers and bools are refused (``sa.DTypeError``: the standard's domain; the
NumPy protocols cast them to float64 first, as NumPy does), but for the NumPy
extras ``cond`` and ``lstsq`` and ``matrix_power`` with ``n < 0``, which cast
them to float64 as NumPy's do. float16 and bfloat16 are refused by every
LAPACK-based function (``sa.DTypeError``, a ``TypeError``: NumPy refuses
float16 too, LAPACK has no 16-bit routines); products, ``trace``,
``diagonal`` and the norms that need no SVD take them. Non-finite input: a
matrix holding NaN makes the SVD-based functions raise
``sa.linalg.LinAlgError`` and one holding inf gives NaN (``svdvals``,
``matrix_rank`` 0, ``cond`` inf), as NumPy's; no inf or NaN is ever handed
to an iterative LAPACK routine (``sa.linalg``'s ``_checks``).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray(np.arange(12.0).reshape(4, 3))
    ...     q, r = xp.linalg.qr(a)
    >>> np.allclose(q.numpy() @ r.numpy(), np.arange(12.0).reshape(4, 3))
    True
"""

from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple, TypeVar

import numpy as np

from .. import linalg as L
from ..array import ShardArray
from ..backend.meta import truth
from ..core.tape import boundaries as _boundaries
from ..dtypes import is_real_float
from ..errors import ArgumentError, DimensionError, DTypeError, LinAlgError, MatrixShapeError
from ..linalg.dense import inv_or_nan
from ..linalg.diagonal import diagonal as diagonal_of
from ..ops.manipulation.structure import copy, rename
from ._align import axes_dims, broadcast_shape, fresh
from ._array import HOOKS, Array, wrap
from ._linalg import matmul, matrix_transpose, tensordot, vecdot

_A = TypeVar("_A")  # the argument's own type: the checks return it unchanged


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


def _xp() -> Any:
    """The namespace (``shardarray.array_api``), which these functions build on: the package fills it in above."""
    return HOOKS.namespace()


def _pos(x: ShardArray) -> Array:
    """``x`` with dims renamed ``dim0, dim1, ...`` in order, as an ``Array``."""
    names = fresh((), x.ndim)
    if tuple(names) != x.dims:
        tmp = fresh(x.dims, x.ndim, "_lp")
        x = rename(rename(x, dict(zip(x.dims, tmp))), dict(zip(tmp, names)))
    return wrap(x)


def _arr(x: _A, what: str, min_ndim: int = 2, floating: bool = True) -> _A:
    """``x`` itself, once it is an array of at least ``min_ndim`` dims (and of a LAPACK float dtype when
    ``floating``: the standard's functions refuse integers and bools, see ``_float64``)."""
    if not isinstance(x, ShardArray):
        raise DTypeError(f"linalg.{what}: expects an array; got {type(x).__name__}. Make one with xp.asarray(...)")
    if x.ndim < min_ndim:
        error = MatrixShapeError if min_ndim >= 2 else DimensionError
        raise error(f"linalg.{what}: needs at least {min_ndim} dimensions; got shape {x.shape}")
    if floating and is_real_float(x.dtype) and x.dtype.itemsize < 4:
        raise DTypeError(
            f"linalg.{what}: {x.dtype} is floating-point, but LAPACK has no 16-bit routines (NumPy "
            f"refuses float16 too; shape {x.shape}). Compute in float32: xp.astype(x, xp.float32)"
        )
    if floating and x.dtype.kind not in "fc":
        raise DTypeError(
            f"linalg.{what}: needs a floating-point array; got dtype {x.dtype} (shape {x.shape}). "
            f"Cast with xp.astype(x, xp.float64)"
        )
    return x


def _float64(x: Any, what: str, min_ndim: int = 2) -> Array:
    """``x`` (at least ``min_ndim`` dims) with integers and bools cast to float64, NumPy's conversion for its
    LAPACK-based functions: the NumPy extras (``cond``, ``lstsq``) and ``matrix_power`` with ``n < 0`` take it;
    16-bit floats are refused as by ``_arr``."""
    arr: Array = _arr(x, what, min_ndim, floating=False)
    if arr.dtype.kind in "biu":
        arr = _xp().astype(arr, _xp().float64)
    return _arr(arr, what, min_ndim)


def _m(x: ShardArray) -> tuple[str, str]:
    return x.dims[-2], x.dims[-1]


def cholesky(x: Array, /, *, upper: bool = False) -> Array:
    """Cholesky factor (lower, or upper with ``upper=True``) of each matrix: ``sa.linalg.cholesky``."""
    x = _arr(x, "cholesky")
    return _pos(L.cholesky(x, _m(x), upper=upper))


def det(x: Array, /) -> Array:
    """Determinant of each square matrix: ``sa.linalg.det``."""
    x = _arr(x, "det")
    return _pos(L.det(x, _m(x)))


def inv(x: Array, /) -> Array:
    """Inverse of each square matrix: ``sa.linalg.inv``."""
    x = _arr(x, "inv")
    return _pos(L.inv(x, _m(x)))


def slogdet(x: Array, /) -> SlogdetResult:
    """Sign and natural log of |det| of each square matrix: ``sa.linalg.slogdet``."""
    x = _arr(x, "slogdet")
    s, la = L.slogdet(x, _m(x))
    return SlogdetResult(_pos(s), _pos(la))


def eigh(x: Array, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of each Hermitian matrix: ``sa.linalg.eigh``."""
    x = _arr(x, "eigh")
    w, v = L.eigh(x, _m(x), new="_eig_k")
    return EighResult(_pos(w), _pos(v))


def eig(x: Array, /) -> EigResult:
    """Eigenvalues and unit-norm eigenvectors of each square matrix, complex (2025.12): ``sa.linalg.eig``.

    The eigenvalues in LAPACK's (cuSOLVER's) order; complex64/complex128 for float32/float64 input even where
    they are real (the standard's choice; NumPy's ``np.linalg.eig`` would return a real array then).
    """
    x = _arr(x, "eig")
    w, v = L.eig(x, _m(x), new="_eig_k")
    return EigResult(_pos(w), _pos(v))


def eigvals(x: Array, /) -> Array:
    """Eigenvalues of each square matrix, complex (2025.12): ``sa.linalg.eigvals``."""
    x = _arr(x, "eigvals")
    return _pos(L.eigvals(x, _m(x), new="_eig_k"))


def eigvalsh(x: Array, /) -> Array:
    """Eigenvalues (ascending) of each Hermitian matrix: ``sa.linalg.eigvalsh``."""
    x = _arr(x, "eigvalsh")
    return _pos(L.eigvalsh(x, _m(x), new="_eig_k"))


def qr(x: Array, /, *, mode: str = "reduced") -> QRResult:
    """QR of each matrix (TSQR on row-split tall matrices; R's diagonal non-negative): ``sa.linalg.qr``."""
    x = _arr(x, "qr")
    q, r = L.qr(x, _m(x), mode=mode, new="_qr_k")
    return QRResult(_pos(q), _pos(r))


def svd(x: Array, /, *, full_matrices: bool = True) -> SVDResult:
    """SVD of each matrix (TSQR-based on row-split tall matrices): ``sa.linalg.svd``."""
    x = _arr(x, "svd")
    u, s, vh = L.svd(x, _m(x), full_matrices=full_matrices, new="_svd_k")
    return SVDResult(_pos(u), _pos(s), _pos(vh))


def svdvals(x: Array, /) -> Array:
    """Singular values of each matrix, descending (TSQR's R only): ``sa.linalg.svdvals``."""
    x = _arr(x, "svdvals")
    return _pos(L.svdvals(x, _m(x), new="_svd_k"))


def solve(x1: Array, x2: Array, /) -> Array:
    """Solve ``x1 @ out = x2``; ``x2`` of shape ``(M,)`` is one vector (broadcast against the stack).

    The batch shapes broadcast (``xp.broadcast_to``, distributed), then ``sa.linalg.solve``.
    """
    xp = _xp()
    x1 = _arr(x1, "solve")
    x2 = _arr(x2, "solve", 1)
    if x1.shape[-1] != x1.shape[-2]:
        raise MatrixShapeError(f"linalg.solve: x1 must be square matrices; got shape {x1.shape}")
    vec = x2.ndim == 1
    if vec:
        x2 = xp.expand_dims(x2, axis=-1)
    if x2.shape[-2] != x1.shape[-1]:
        raise DimensionError(
            f"linalg.solve: x2's rows ({x2.shape[-2]}, shape {x2.shape}) must match x1's size {x1.shape[-1]} "
            f"(shape {x1.shape})"
        )
    batch = broadcast_shape([x1.shape[:-2], x2.shape[:-2]], "linalg.solve (batch axes)")
    dt = xp.result_type(x1, x2)
    a = xp.astype(xp.broadcast_to(x1, (*batch, *x1.shape[-2:])), dt)
    b = xp.astype(xp.broadcast_to(x2, (*batch, *x2.shape[-2:])), dt)
    nb = len(batch)
    bn = fresh((), nb, "_sb")
    a = rename(_pos(a), dict(zip(fresh((), nb + 2), [*bn, "_sr", "_sc"])))
    b = rename(_pos(b), dict(zip(fresh((), nb + 2), [*bn, "_sc", "_sk"])))
    out = _pos(L.solve(a, b, ("_sr", "_sc"), b_dims=("_sc", "_sk")))
    return out[..., 0] if vec else out


def pinv(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Moore-Penrose pseudo-inverse from the SVD (TSQR-based on row-split tall matrices): ``V diag(1/S) U^H``
    with singular values ``<= rtol * max(S)`` dropped (default ``rtol = max(M, N) * eps``).

    Real and complex matrices with a scalar ``rtol`` go through ``sa.linalg.pinv`` (its closed-form gradient, right
    at repeated singular values too); an array ``rtol`` (one per matrix) is built here from ``svd`` (its gradient:
    ``svd``'s, real matrices only). Empty matrices give the empty result in ``x``'s own dtype, whatever it is
    (NumPy's ``pinv`` returns before its LAPACK dtype checks: an empty int, bool or float16 ``x`` keeps its
    dtype)."""
    xp = _xp()
    x = _arr(x, "pinv", floating=False)
    m, n = x.shape[-2:]
    if m == 0 or n == 0:
        return xp.zeros((*x.shape[:-2], n, m), dtype=x.dtype, device=x.mesh)
    x = _arr(x, "pinv")
    if x.dtype.kind in "fc" and not isinstance(rtol, ShardArray):
        return _pos(L.pinv(x, _m(x), rtol=None if rtol is None else float(rtol)))
    u, s, vh = svd(x, full_matrices=False)
    cut = _cutoff(xp, s, x, rtol)
    sinv = xp.where(s > cut, 1.0 / xp.where(s > cut, s, xp.ones_like(s)), xp.zeros_like(s))
    v = xp.conj(matrix_transpose(vh)) if x.dtype.kind == "c" else matrix_transpose(vh)
    uh = xp.conj(matrix_transpose(u)) if x.dtype.kind == "c" else matrix_transpose(u)
    return matmul(v * xp.astype(xp.expand_dims(sinv, axis=-2), x.dtype), uh)


def _cutoff(xp: Any, s: Array, x: ShardArray, rtol: Any) -> Any:
    m, n = x.shape[-2:]
    if rtol is None:
        rtol = max(m, n) * float(np.finfo(s.dtype).eps)
    smax = xp.max(s, axis=-1, keepdims=True)
    if isinstance(rtol, ShardArray):
        rtol = xp.expand_dims(rtol, axis=-1)
    return smax * rtol


def matrix_rank(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Number of singular values ``> rtol * max(S)`` per matrix (``svdvals``: TSQR on row-split tall matrices)."""
    xp = _xp()
    x = _arr(x, "matrix_rank")
    if 0 in x.shape[-2:]:
        return xp.zeros(x.shape[:-2], dtype=xp.int64, device=x.mesh)
    s = svdvals(x)
    return xp.astype(xp.sum(xp.astype(s > _cutoff(xp, s, x, rtol), xp.int64), axis=-1), xp.int64)


def cond(x: Array, p: Any = None) -> Array:
    """NumPy's ``linalg.cond``: the condition number of each matrix of ``x`` in the norm ``p``.

    ``p`` None, 2 or -2: the ratio of the largest and smallest singular values (``svdvals``: TSQR on row-split tall
    matrices); ``"fro"``, ``"nuc"``, 1, -1, inf, -inf: ``matrix_norm(x) * matrix_norm(inv(x))`` of square matrices.
    NaN results become inf unless ``x`` holds NaN, as NumPy's (the SVD of a matrix holding NaN raises
    ``LinAlgError``, as ``svdvals``): a singular matrix of a stack (an exact zero pivot of its LU, where ``inv``
    raises) has condition number inf in every norm, the others theirs (``sa.linalg.dense.inv_or_nan``). Empty
    matrices raise ``LinAlgError``, as NumPy's. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     float(xp.linalg.cond(xp.asarray([[2.0, 0.0], [0.0, 0.5]])))
        4.0
    """
    xp = _xp()
    x = _float64(x, "cond")
    if 0 in x.shape[-2:]:
        raise LinAlgError(f"linalg.cond: not defined on empty matrices (NumPy's LinAlgError); got shape {x.shape}")
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        s = svdvals(x)
        with np.errstate(divide="ignore", invalid="ignore"):  # (a singular matrix: inf, as NumPy)
            r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
            raise ArgumentError(f"linalg.cond: p must be None, 2, -2, 'fro', 'nuc', 1, -1, inf or -inf; got {p!r}")
        if x.shape[-1] != x.shape[-2]:
            raise MatrixShapeError(f"linalg.cond: p={p!r} needs square matrices; got shape {x.shape}")
        r = xp.linalg.matrix_norm(x, ord=p) * xp.linalg.matrix_norm(_pos(inv_or_nan(x, _m(x))), ord=p)
        r = xp.real(r) if r.dtype.kind == "c" else r
    bad = xp.isnan(r) & ~xp.any(xp.isnan(x), axis=(-2, -1))
    return xp.where(bad, xp.asarray(math.inf, dtype=r.dtype, device=x.device), r)


def lstsq(a: Array, b: Array, /, rcond: float | None = None) -> tuple[Array, Array, Array, Array]:
    """NumPy's ``linalg.lstsq``: the least-squares solution of ``a x = b`` as ``(x, residuals, rank, s)``.

    ``x = pinv(a) b``, the minimum-norm solution (singular values ``<= rcond * max(s)`` dropped; NumPy's default
    ``rcond = eps * max(M, N)``, a negative ``rcond`` machine precision ``eps``). As NumPy's, it computes in double
    precision (float32/complex64 and integers in float64/complex128, ``eps`` float64's) and casts ``x``,
    ``residuals`` and ``s`` back to the operands' precision; ``residuals`` the squared 2-norms of the columns of
    ``b - a x`` where ``rank == N < M`` (shape ``(K,)``, ``(1,)`` for a 1-D ``b``), else empty, as NumPy's; ``rank``
    and ``s`` as ``matrix_rank`` and ``svdvals``. ``a`` is one (M, N) matrix and ``b`` (M,) or (M, K), as in NumPy.
    The rank is read on the host (the residuals' shape depends on it; a meta mesh, without values, takes ``a`` as
    of full rank and finite, the shapes and traffic of a well-posed problem); ``a`` holding NaN or inf raises
    ``LinAlgError`` ("SVD did not converge in Linear Least Squares"), as NumPy's does where its LAPACK returns.
    Collectives: the SVDs' (TSQR on a row-split tall ``a``) and the products' (allreduces over a split M).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray(np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]))
        ...     x, res, rank, s = np.linalg.lstsq(a, xp.asarray(np.array([1.0, 2.0, 4.0])))
        >>> np.round(np.asarray(x), 6), np.round(np.asarray(res), 6), int(rank)
        (array([0.833333, 1.5     ]), array([0.166667]), 2)
    """
    xp = _xp()
    a = _float64(a, "lstsq")
    if a.ndim != 2:
        raise DimensionError(f"linalg.lstsq: a must be one matrix (2-D), got shape {a.shape}; solve stacks one by one")
    if not isinstance(b, ShardArray):
        b = xp.asarray(b, device=a.mesh)
    if b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise DimensionError(
            f"linalg.lstsq: b must be (M,) or (M, K) with M = {a.shape[0]} rows of a; got shape {b.shape}"
        )
    dt = xp.result_type(a.dtype, b.dtype, xp.float64 if a.dtype.kind not in "fc" else a.dtype)
    cx = np.dtype(dt).kind == "c"
    work = xp.complex128 if cx else xp.float64  # (NumPy's: LAPACK in double precision, the results cast back)
    a, b = xp.astype(a, work), xp.astype(b, work)
    m, n = a.shape
    rtol = None if rcond is None else float(np.finfo(np.float64).eps) if rcond < 0 else rcond
    s = svdvals(a) if m and n else xp.zeros((0,), dtype=xp.float64, device=a.mesh)
    if m and n and truth(xp.any(xp.isnan(s)), False):  # (a holds inf: NaN singular values; NaN raised in svdvals)
        raise LinAlgError(
            f"linalg.lstsq: SVD did not converge in Linear Least Squares (a of shape {a.shape} holds inf), as "
            f"NumPy's lstsq raises"
        )
    x = matmul(pinv(a, rtol=rtol), b)
    rank = (
        xp.astype(xp.sum(xp.astype(s > _cutoff(xp, s, a, rtol), xp.int64), axis=-1), xp.int32)
        if m and n
        else xp.asarray(np.int32(0), device=a.mesh)
    )
    real = xp.finfo(dt).dtype
    if m > n and truth(rank == n, True):  # (meta: full rank, the residuals' shape for a well-posed problem)
        r = b - matmul(a, x)
        res = xp.sum(xp.abs(r) ** 2 if cx else r * r, axis=0)
        res = xp.astype(xp.reshape(res, (1,)) if b.ndim == 1 else res, real)
    else:
        res = xp.zeros((0,), dtype=real, device=a.mesh)
    return xp.astype(x, dt), res, rank, xp.astype(s, real)


def matrix_power(x: Array, n: int, /) -> Array:
    """``x`` to the integer power ``n`` by repeated squaring (matmuls: einsum's collectives); ``n < 0`` inverts
    first (``inv``; integers and bools in float64 then, as NumPy's ``matrix_power``), ``n == 0`` gives the
    identity in ``x``'s dtype. Bool matrices give bools (``matmul`` of bools: the or of ands; ``n == 0`` the bool
    identity), as NumPy's ``matrix_power``."""
    xp = _xp()
    x = _arr(x, "matrix_power", 2, floating=False)
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise ArgumentError(f"linalg.matrix_power: n must be an int; got {n!r}")
    n = operator.index(n)
    if x.shape[-1] != x.shape[-2]:
        raise MatrixShapeError(f"linalg.matrix_power: needs square matrices; got shape {x.shape}")
    if n == 0:
        eye = xp.eye(x.shape[-1], dtype=x.dtype, device=x.mesh)
        return xp.broadcast_to(eye, x.shape)
    a = inv(_float64(x, "matrix_power")) if n < 0 else x
    n = abs(n)
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return wrap(copy(x) if result is x else result)  # n == 1: a new array, never x itself


def _float_abs(xp: Any, x: Array) -> Array:
    """``|x|`` for a norm: integers and bools in float64, as NumPy's norms compute them."""
    return xp.abs(x if x.dtype.kind in "fc" else xp.astype(x, xp.float64))


def _max0(xp: Any, a: Array, axis: Any, keepdims: bool) -> Array:
    """The max of the non-negative ``a`` over ``axis`` (None: all), 0 over an empty extent (NumPy's norms:
    ``initial=0``; a plain max of nothing raises)."""
    axes = range(a.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    if all(a.shape[i] for i in axes):
        return xp.max(a, axis=axis, keepdims=keepdims)
    return xp.sum(a, axis=axis, keepdims=keepdims)


def matrix_norm(x: Array, /, *, keepdims: bool = False, ord: Any = "fro") -> Array:
    """Matrix norm over the last two axes: ``sa.linalg.matrix_norm`` (2, -2, nuc via ``svdvals``)."""
    xp = _xp()
    x = _arr(x, "matrix_norm", floating=ord in (2, -2, "nuc"))  # integers: float64, as NumPy (but the SVD's)
    if ord in (1, -1, math.inf, -math.inf, "fro"):
        a = _float_abs(xp, x)
        if ord == "fro":
            out = xp.sqrt(xp.sum(a * a, axis=(-2, -1), keepdims=keepdims))
            return out
        inner, outer = (-2, -1) if ord in (1, -1) else (-1, -2)
        col = xp.sum(a, axis=inner, keepdims=True)
        out = _max0(xp, col, outer, True) if ord > 0 else xp.min(col, axis=outer, keepdims=True)
        return out if keepdims else out[..., 0, 0]
    if ord in (2, -2, "nuc"):
        s = svdvals(x)
        out = xp.sum(s, axis=-1) if ord == "nuc" else _max0(xp, s, -1, False) if ord == 2 else xp.min(s, axis=-1)
        return xp.expand_dims(xp.expand_dims(out, axis=-1), axis=-1) if keepdims else out
    raise ArgumentError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf; got {ord!r}")


def vector_norm(x: Array, /, *, axis: Any = None, keepdims: bool = False, ord: float = 2) -> Array:
    """Vector norm over ``axis`` (None: all): a distributed reduction (``sa.linalg.vector_norm``'s rules)."""
    xp = _xp()
    x = _arr(x, "vector_norm", 0, floating=False)  # integers: float64, as NumPy
    axes_dims(x, axis, "linalg.vector_norm")  # validates
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise ArgumentError(f"linalg.vector_norm: ord must be a number or ±inf; got {ord!r}")
    a = _float_abs(xp, x)
    if ord == math.inf:
        return _max0(xp, a, axis, keepdims)
    if ord == -math.inf:
        return xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return xp.astype(xp.sum(xp.astype(a != 0, a.dtype), axis=axis, keepdims=keepdims), a.dtype)
    if ord == 1:
        return xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=axis, keepdims=keepdims))
    return xp.pow(xp.sum(xp.pow(a, float(ord)), axis=axis, keepdims=keepdims), 1.0 / ord)


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The ``offset`` diagonal of each matrix (last two axes), from each device's own block.

    The devices holding diagonal entries take them by index arithmetic; the result is pending over the matrix
    axes' mesh axes (one device holds each entry), resolved by an allreduce of the diagonal's length where its
    value is needed: traffic proportional to the diagonal, never a mask or a gather of the matrix
    (``shardarray/linalg/diagonal.py``). A pending ``x`` (a product) stays pending. Differentiable.
    """
    x = _arr(x, "diagonal", 2, floating=False)
    if isinstance(offset, bool) or not hasattr(offset, "__index__"):
        raise ArgumentError(f"linalg.diagonal: offset must be an int; got {offset!r}")
    offset = operator.index(offset)
    rows, cols = _m(x)
    return _pos(diagonal_of(x, rows, cols, offset, fresh(x.dims, 1, "_diag")[0]))


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """Sum of the ``offset`` diagonal of each matrix (``diagonal`` then a sum): the sum stays pending over the
    matrix axes' mesh axes, so a split matrix costs one allreduce of one number per matrix."""
    xp = _xp()
    return xp.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def outer(x1: Array, x2: Array, /) -> Array:
    """Outer product of two vectors: one einsum with no contraction (no communication)."""
    xp = _xp()
    x1, x2 = _arr(x1, "outer", 1, False), _arr(x2, "outer", 1, False)
    if x1.ndim != 1 or x2.ndim != 1:
        raise DimensionError(f"linalg.outer: needs two 1-D arrays; got shapes {x1.shape} and {x2.shape}")
    return xp.expand_dims(x1, axis=-1) * xp.expand_dims(x2, axis=0)


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """3-D cross product along ``axis`` (size 3), broadcasting the other axes: positional slices and elementwise
    products (a split ``axis``: the slices' exchanges of single elements)."""
    xp = _xp()
    x1, x2 = _arr(x1, "cross", 1, False), _arr(x2, "cross", 1, False)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise DimensionError(f"linalg.cross: axis must be an int; got {axis!r}")
    nd = max(x1.ndim, x2.ndim)
    ax = axis if axis < 0 else axis - nd
    if not -min(x1.ndim, x2.ndim) <= ax <= -1:
        raise DimensionError(f"linalg.cross: axis {axis} out of range for shapes {x1.shape} and {x2.shape}")
    if x1.shape[ax] != 3 or x2.shape[ax] != 3:
        raise DimensionError(f"linalg.cross: axis {axis} must have size 3 in both; got shapes {x1.shape}, {x2.shape}")
    dt = xp.result_type(x1, x2)
    a, b = xp.moveaxis(xp.astype(x1, dt), ax, -1), xp.moveaxis(xp.astype(x2, dt), ax, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = xp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return xp.moveaxis(out, -1, ax)


__all__ = [
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]

_boundaries(globals(), __all__)  # each function an op boundary of an MPI job (``core.tape.boundary``)
