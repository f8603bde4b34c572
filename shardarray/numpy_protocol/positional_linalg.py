"""NumPy's ``np.linalg`` functions whose arguments the namespace's counterparts do not take, composed from them.

Each gives NumPy's result, not an approximation of it: ``norm`` (``ord``/``axis`` as NumPy reads them),
``pinv`` (NumPy's default cut-off ``rcond=1e-15``, where the array API's ``pinv`` cuts at ``max(M, N)·eps``; the
two differ for a matrix with singular values between them, so the default is passed on explicitly), ``svd``,
``pinv`` and ``matrix_rank`` with ``hermitian=True`` (the matrix NumPy's ``eigh`` reads: its lower triangle),
``matrix_rank`` with ``tol=`` or ``rtol=``, ``eigh``/``eigvalsh`` with ``UPLO='U'`` (the upper triangle:
``eigh`` of the conjugate transpose, whose lower triangle it is), ``qr(mode='r')`` (R alone), and ``tensorinv``/
``tensorsolve`` (reshapes around ``inv``/``solve``, NumPy's), and ``np.polyfit`` (NumPy's least squares: the
Vandermonde matrix, its columns scaled to unit norm, ``lstsq``, the coefficients scaled back; ``w=``, ``full=``,
``cov=`` as NumPy's, and its ``RankWarning`` when the rank is short). The work is the namespace's
(``xp.linalg``) on the distributed arrays: no gather beyond what those functions do.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[2.0, 5.0], [1.0, 3.0]])  # (eigh reads the upper triangle [[2, 5], [5, 3]])
    ...     w = np.linalg.eigvalsh(a, UPLO="U")
    >>> np.round(np.asarray(w), 6)
    array([-2.524938,  7.524938])
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..array import ShardArray
from ..callsite import user_stacklevel
from ..dtypes import is_complex
from ..errors import ArgumentError, DimensionError, DTypeError, MatrixShapeError
from .common import mixing_error, short
from .positional_args import axes_of, host_setting, host_value
from .positional_compose import composed
from .positional_shapes import to_end


def _lower_hermitian(xp: Any, a: ShardArray) -> ShardArray:
    """The Hermitian matrices LAPACK's ``eigh`` reads from ``a`` (NumPy's ``hermitian=True``): each strict lower
    triangle, its conjugate transpose above the diagonal, and the diagonal's real part."""
    low = xp.tril(a, k=-1)
    diag = a - low - xp.triu(a, k=1)
    if is_complex(a.dtype):
        diag = xp.astype(xp.real(diag), a.dtype)
    return low + xp.conj(xp.matrix_transpose(low)) + diag


def _uplo(xp: Any, what: str, a: ShardArray, UPLO: Any) -> ShardArray:
    """``a`` as the namespace's ``eigh`` reads it (its lower triangle) for NumPy's ``UPLO``."""
    if UPLO == "L":
        return a
    if UPLO == "U":
        return xp.conj(xp.matrix_transpose(a))
    raise ArgumentError(f"{what}: UPLO must be 'L' or 'U' (the triangle eigh reads); got {UPLO!r}")


def _tolerance(what: str, value: Any, name: str, ref: Any) -> Any:
    """A cut-off (``rcond``, ``rtol``, ``tol``): a number, or a positional array of one per matrix."""
    value = host_value(what, value, name, ref)
    if isinstance(value, ShardArray) or isinstance(value, (int, float)):
        return value
    raise mixing_error(what, value, name, ref)


@composed("norm", space="linalg")
def _norm(xp: Any, what: str, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    if axis is None:
        if ord is None or x.ndim == 1:
            return xp.linalg.vector_norm(x, axis=None, keepdims=keepdims, ord=2 if ord is None else ord)
        if x.ndim != 2:
            raise DimensionError(f"{what}: ord={ord!r} without axis needs a 1-D or 2-D array; got shape {x.shape}")
        return xp.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(axes) == 1:
        return xp.linalg.vector_norm(x, axis=axes[0], keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) != 2:
        raise DimensionError(f"{what}: axis must name one or two axes; got {axis!r}")
    result = xp.linalg.matrix_norm(to_end(xp, x, axes[0], axes[1], what), ord="fro" if ord is None else ord)
    return xp.expand_dims(result, axis=axes_of(axes, x.ndim, what)) if keepdims else result


@composed("svd", space="linalg")
def _svd(
    xp: Any, what: str, a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
) -> Any:
    """NumPy's ``svd``; ``hermitian=True`` as NumPy computes it: from ``eigh`` (the lower triangle), the
    eigenvalues' magnitudes in descending order, their signs moved into ``Vh``."""
    if not hermitian:
        return xp.linalg.svd(a, full_matrices=full_matrices) if compute_uv else xp.linalg.svdvals(a)
    if not compute_uv:
        return xp.flip(xp.sort(xp.abs(xp.linalg.eigvalsh(a)), axis=-1), axis=-1)
    w, u = xp.linalg.eigh(a)
    sign = xp.copysign(xp.ones_like(w), w)
    order = xp.flip(xp.argsort(xp.abs(w), axis=-1), axis=-1)  # (NumPy's argsort(s)[..., ::-1], ties included)
    s = xp.take_along_axis(xp.abs(w), order, axis=-1)
    sign = xp.take_along_axis(sign, order, axis=-1)
    u = xp.take_along_axis(u, xp.expand_dims(order, axis=-2), axis=-1)
    vh = xp.conj(xp.matrix_transpose(u * xp.expand_dims(xp.astype(sign, u.dtype), axis=-2)))
    return xp.linalg.SVDResult(u, s, vh)


@composed("pinv", space="linalg")
def _pinv(xp: Any, what: str, a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = np._NoValue) -> Any:
    """NumPy's ``pinv``: singular values below ``rcond`` times the largest are cut; NumPy's default is ``1e-15``
    (``rtol=None``: ``max(M, N)·eps``, the array API's default)."""
    if rcond is None:
        rcond = 1e-15 if rtol is np._NoValue else rtol
    elif rtol is not np._NoValue:
        raise ArgumentError(f"{what}: give rtol or rcond, not both (they are the same cut-off)")
    if rcond is not None:
        rcond = _tolerance(what, rcond, "rcond", a)
    return xp.linalg.pinv(_lower_hermitian(xp, a) if hermitian else a, rtol=rcond)


@composed("matrix_rank", space="linalg")
def _matrix_rank(xp: Any, what: str, A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """NumPy's ``matrix_rank``: the singular values above ``tol`` (absolute), else above ``rtol`` (default
    ``max(M, N)·eps``) times the largest; with ``hermitian=True`` the eigenvalues' magnitudes (the lower triangle).
    An array of fewer than 2 dims has rank 1 unless it is all zeros, as in NumPy."""
    if A.ndim < 2:
        return xp.astype(xp.any(A != 0), xp.int64)
    if tol is None and rtol is None and not hermitian:
        return xp.linalg.matrix_rank(A)
    s = xp.abs(xp.linalg.eigvalsh(A)) if hermitian else xp.linalg.svdvals(A)
    if tol is None:
        if rtol is None:
            rtol = max(A.shape[-2:]) * float(np.finfo(s.dtype).eps)
        rtol = _tolerance(what, rtol, "rtol", A)
        if isinstance(rtol, ShardArray):
            rtol = xp.expand_dims(rtol, axis=-1)
        cut = xp.max(s, axis=-1, keepdims=True) * rtol if s.shape[-1] else s
    else:
        cut = _tolerance(what, tol, "tol", A)
        if isinstance(cut, ShardArray):
            cut = xp.expand_dims(cut, axis=-1)
    return xp.count_nonzero(s > cut, axis=-1)


@composed("eigh", space="linalg")
def _eigh(xp: Any, what: str, a: Any, UPLO: str = "L") -> Any:
    return xp.linalg.eigh(_uplo(xp, what, a, UPLO))


@composed("eigvalsh", space="linalg")
def _eigvalsh(xp: Any, what: str, a: Any, UPLO: str = "L") -> Any:
    return xp.linalg.eigvalsh(_uplo(xp, what, a, UPLO))


@composed("qr", space="linalg")
def _qr(xp: Any, what: str, a: Any, mode: str = "reduced") -> Any:
    """NumPy's ``qr``: ``mode='r'`` is the reduced ``R`` alone; ``'raw'`` (LAPACK's Householder reflectors) has no
    distributed counterpart and is refused by the namespace's ``qr``."""
    if mode == "r":
        return xp.linalg.qr(a).R
    return xp.linalg.qr(a, mode=mode)


def _float_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype``, float64 for integers and bools: NumPy's ``inv``/``solve`` convert them so."""
    return np.dtype(np.float64) if dtype.kind in "biu" else dtype


@composed("tensorinv", space="linalg")
def _tensorinv(xp: Any, what: str, a: Any, ind: Any = 2) -> Any:
    """NumPy's ``tensorinv``: ``a`` reshaped to a matrix of ``prod(a.shape[ind:])`` rows, inverted, reshaped to
    ``a.shape[ind:] + a.shape[:ind]``. The reshapes and ``inv`` are the namespace's: a split ``a`` costs their
    traffic (``inv`` of a split matrix: its distributed or gathered path, with its warning)."""
    ind = host_value(what, ind, "ind", a)
    if isinstance(ind, bool) or not isinstance(ind, int) or ind <= 0:
        raise ArgumentError(f"{what}: ind must be a positive int (the number of leading axes); got {ind!r}")
    rows = math.prod(a.shape[ind:])
    if rows == 0 or a.size != rows * rows:
        raise MatrixShapeError(
            f"{what}: a of shape {a.shape} must reshape to a non-empty square matrix of prod(a.shape[{ind}:]) = "
            f"{rows} rows (NumPy: prod(a.shape[ind:]) == prod(a.shape[:ind]))"
        )
    inverse = xp.linalg.inv(xp.astype(xp.reshape(a, (rows, rows)), _float_dtype(a.dtype)))
    return xp.reshape(inverse, (*a.shape[ind:], *a.shape[:ind]))


@composed("tensorsolve", space="linalg")
def _tensorsolve(xp: Any, what: str, a: Any, b: Any, axes: Any = None) -> Any:
    """NumPy's ``tensorsolve``: ``x`` of shape ``a.shape[b.ndim:]`` with ``tensordot(a, x, x.ndim) == b``, by
    ``solve`` of ``a`` reshaped to a square matrix (``axes``, if given, moved to the end first, as NumPy's) and
    ``b`` flattened. The reshapes and ``solve`` are the namespace's, with their traffic."""
    if not isinstance(a, ShardArray):
        raise mixing_error(what, np.asarray(a), "a", b)
    b = host_value(what, b, "b", a)
    if not isinstance(b, ShardArray):
        if not isinstance(b, (bool, int, float, complex)):
            raise mixing_error(what, np.asarray(b), "b", a)
        b = xp.asarray(b, device=a.mesh)
    if axes is not None:
        moved = [axes_of(k, a.ndim, what)[0] for k in host_setting(axes)]  # (in the order given, as NumPy's)
        a = xp.permute_dims(a, (*(k for k in range(a.ndim) if k not in moved), *moved))
    shape = a.shape[-(a.ndim - b.ndim) :]  # (NumPy's slice: all of a.shape when b.ndim == a.ndim)
    n = math.prod(shape)
    if a.size != n * n or b.size != n:
        raise MatrixShapeError(
            f"{what}: a of shape {a.shape} (axes moved) and b of shape {b.shape} must satisfy "
            f"prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim]) == b.size (NumPy's requirement)"
        )
    dt = xp.result_type(_float_dtype(a.dtype), _float_dtype(b.dtype))
    x = xp.linalg.solve(xp.astype(xp.reshape(a, (n, n)), dt), xp.astype(xp.reshape(b, (n,)), dt))
    return xp.reshape(x, shape)


def _fit_data(what: str, value: Any, name: str, ref: ShardArray) -> ShardArray:
    """A ``polyfit`` operand: a positional array as NumPy's ``asarray(v) + 0.0`` makes it (integers and bools to
    float64, floats and complex as they are); host arrays are refused as everywhere (``mixing_error``)."""
    if isinstance(value, ShardArray):
        return value + 0.0
    if isinstance(value, np.ndarray):
        raise mixing_error(what, value, name, ref)
    raise DTypeError(
        f"{what}: {name} must be an array like the others (xp.asarray(...) of the host values); got {short(value)}"
    )


@composed("polyfit")
def _polyfit(
    xp: Any, what: str, x: Any, y: Any, deg: Any, rcond: Any = None, full: Any = False, w: Any = None, cov: Any = False
) -> Any:
    """``np.polyfit(x, y, deg, rcond, full, w, cov)``, NumPy's algorithm on the mesh (module docstring): the
    coefficients, highest power first (one column per column of a 2-d ``y``); ``full=True`` adds the residuals,
    rank, singular values and ``rcond`` (NumPy's default ``len(x) * eps``); ``cov=True`` (or ``"unscaled"``)
    the covariance of the coefficients. NumPy's TypeErrors on shapes are ``sa.DTypeError``s."""
    ref = next(v for v in (x, y, w) if isinstance(v, ShardArray))
    x, y = _fit_data(what, x, "x", ref), _fit_data(what, y, "y", ref)
    order = int(deg) + 1
    if deg < 0:
        raise ArgumentError(f"{what}: deg must be >= 0 (NumPy's ValueError); got {deg!r}")
    if x.ndim != 1 or x.shape[0] == 0:
        raise DTypeError(f"{what}: x must be a non-empty 1-d array (NumPy's TypeError); got shape {x.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise DTypeError(
            f"{what}: y must be a 1-d or 2-d array with x's length {x.shape[0]} along its first axis (NumPy's "
            f"TypeError); got shape {y.shape}"
        )
    if rcond is None:
        rcond = x.shape[0] * np.finfo(x.dtype).eps  # (a NumPy scalar of x's dtype, as NumPy's)
    lhs, rhs = xp.vander(x, order), y
    if w is not None:
        w = _fit_data(what, w, "w", ref)
        if w.ndim != 1 or w.shape[0] != y.shape[0]:
            raise DTypeError(
                f"{what}: w must be a 1-d array of y's length {y.shape[0]} (NumPy's TypeError); got shape {w.shape}"
            )
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if rhs.ndim == 2 else w)
    scale = xp.sqrt(xp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = xp.linalg.lstsq(lhs, rhs, rcond=rcond)
    c = c / (scale[:, None] if c.ndim == 2 else scale)
    if int(rank) != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=user_stacklevel())
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    vbase = xp.linalg.inv(xp.matrix_transpose(lhs) @ lhs) / (scale[:, None] * scale[None, :])
    if cov == "unscaled":
        return c, vbase if y.ndim == 1 else vbase[:, :, None]
    if x.shape[0] <= order:
        raise ArgumentError(
            f"{what}: the number of data points ({x.shape[0]}) must exceed order ({order}) to scale the covariance "
            f"matrix (NumPy's ValueError); pass cov='unscaled'"
        )
    fac = resids / (x.shape[0] - order)
    return c, (vbase * fac if y.ndim == 1 else vbase[:, :, None] * fac)
