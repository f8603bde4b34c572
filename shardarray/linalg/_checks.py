"""Where NumPy's linalg raises ``LinAlgError``, checked on the devices: CuPy's never raises.

NumPy raises from the LAPACK ``info`` of each matrix; CuPy 14 computes the
same factorizations with cuSOLVER and, by default
(``cupyx.errstate(linalg='ignore')``), returns whatever cuSOLVER left for a
failed matrix: NaN or finite garbage, no error. Asking CuPy to check
(``linalg='raise'``) would read ``info`` from the device after every call.
Here each op computes, on the device, one boolean per matrix from its input
and its result (the functions below), and the op reads them once, at its end
(``Backend.any_flag``: one device-to-host read of one bool for the whole op,
all devices together); the 2-D Cholesky folds its flags into the allreduce
it ends with. On NumPy shards (``Backend.linalg_raises``) NumPy raises itself
and the Cholesky and LU checks are skipped (they cost as much as the
factorization on a CPU); its ``LinAlgError`` becomes ``sa.linalg``'s
(``numpy_raises``), with the message CuPy shards get. The svd and eigh checks
run on both. The suite on ``--backend=cupy`` (the strict stand-in) runs the
checks under every test, hypothesis's included: none fires where NumPy does
not raise.

What NumPy raises on (OpenBLAS's LAPACK, NumPy 2), and the check:

* ``cholesky``: a pivot ``<= 0`` (the matrix is not positive definite); a
  NaN pivot is not one (the NaN comes out). ``cholesky_failed``.
* ``solve``, ``inv``: an exact zero pivot of the LU factorization (singular).
  ``lu_failed``: the result of a finite matrix is not finite.
* ``svd``, ``svdvals`` (and ``pinv``, ``matrix_rank``, the 2-/nuclear norms
  through them): NaN in the matrix ("SVD did not converge"). ``svd_failed``.
* ``eigh``, ``eigvalsh``: "Eigenvalues did not converge", for some matrices
  holding NaN or inf in the triangle read (which ones depends on their size
  and where the NaN is); ``eigh_failed`` takes all of them, so that both
  backends raise on the same input.
* ``qr``, ``det``, ``slogdet``: never (a singular matrix has determinant 0).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import LinAlgError


def _tril(xp: Any, a: Any, k: int = 0) -> Any:
    n = a.shape[-1]
    i = xp.arange(n)
    keep = i[:, None] + k >= i[None, :]
    return xp.where(keep, a, xp.zeros((), dtype=a.dtype))


def _mv(xp: Any, a: Any, v: Any) -> Any:
    """``a @ v`` for a stack of matrices ``a`` and a stack (or one) of vectors ``v``."""
    return xp.matmul(a, v[..., None])[..., 0]


def cholesky_failed(xp: Any, a: Any, low: Any) -> Any:
    """Per matrix of ``a`` (``(..., n, n)``, its lower triangle read), whether ``low = xp.linalg.cholesky(a)``
    failed: the matrices NumPy's ``cholesky`` raises on, found from the factor CuPy returns anyway.

    Sound and ``O(n²)`` per matrix (the factorization is ``O(n³)``):

    1. **A diagonal entry of ``L`` that is not ``> 0`` (real part) but not NaN.** ``potrf`` (LAPACK's,
       OpenBLAS's; cuSOLVER's ``info = k`` says the same: the leading minor of order ``k`` is not positive
       definite) stops at the first pivot ``<= 0`` and leaves it on the diagonal; every pivot it took
       has ``L_kk = sqrt(pivot) > 0``. A NaN pivot (NaN in the input) does not stop NumPy's (OpenBLAS):
       NaN comes out, no error.
    2. **Non-finite entries of ``L`` from a finite lower triangle.** A successful factorization of finite
       input is finite (an overflow ``L_ik = inf`` makes pivot ``i`` ``-inf``, a failure), so NaN from
       finite input is a failure that left the ``sqrt`` of a negative pivot behind.
    3. **A residual probe**, for whatever else a failed ``potrf`` may leave (cuSOLVER documents ``info``,
       not the factor): ``r = L (L^H u) - A u`` for a fixed positive ``u`` against its rounding bound
       ``t = |L| (|L|^H u) + |A| u``, flagged where ``|r| > 16 (n + 1) eps t``. A computed Cholesky factor
       satisfies ``|L L^H - A| <= γ_{n+1} |L| |L|^H`` (Higham, *Accuracy and Stability*, Thm 10.3) and the
       two products add ``2 γ_n`` more, so a factor that succeeded is never flagged; a partial factor,
       whose unfactored trailing block gives ``A``'s entries squared where ``A``'s are due, is (unless the
       matrix is singular to rounding, where NumPy's verdict is a rounding accident too). NaN compares
       false. The probe runs on ``A / 4^k`` and ``L / 2^k`` (exact), ``4^k`` near ``A``'s largest diagonal
       entry, so that squaring a garbage entry neither overflows nor vanishes.

    Checked against NumPy on 4000 random matrices (SPD, ill-conditioned to ``1e-18``, singular PSD,
    indefinite; float32/64, complex; scaled by ``1e±30``): no factor NumPy computed is flagged, and every
    clearly indefinite matrix (``λ_min < -100 n eps ||A||``) is, whether the failed factor keeps the
    failing pivot, NaN, 1, ``sqrt|pivot|`` or the original diagonal entry there.
    """
    n = a.shape[-1]
    real = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
    bad = xp.any(xp.real(xp.diagonal(low, axis1=-2, axis2=-1)) <= 0, axis=-1)  # 1.
    lo = _tril(xp, a)
    bad = bad | (xp.all(xp.isfinite(lo), axis=(-2, -1)) & ~xp.all(xp.isfinite(low), axis=(-2, -1)))  # 2.
    # 3., on the matrix scaled by a power of 4 to a largest diagonal entry near 1 (exact)
    top = xp.max(xp.abs(xp.real(xp.diagonal(a, axis1=-2, axis2=-1))), axis=-1)
    top = xp.where(xp.isfinite(top) & (top > 0), top, xp.ones((), dtype=real))
    half = xp.exp2(xp.floor(xp.log2(top) / 2)).astype(real)[..., None, None]  # 2^k
    low = low / half
    strict = _tril(xp, a, -1)
    on_diag = xp.eye(n, dtype=bool)
    diag = xp.real(xp.diagonal(a, axis1=-2, axis2=-1))[..., None, :]  # potrf reads the diagonal's real part
    ah = xp.where(on_diag, diag, strict + xp.conj(xp.swapaxes(strict, -1, -2))) / (half * half)  # A as read
    u = (1 + (xp.arange(n) * 0.6180339887498949) % 1).astype(real)  # fixed, positive, no structure
    lh = xp.conj(xp.swapaxes(low, -1, -2))
    r = _mv(xp, low, _mv(xp, lh, u)) - _mv(xp, ah, u)
    t = _mv(xp, xp.abs(low), _mv(xp, xp.abs(lh), u)) + _mv(xp, xp.abs(ah), u)
    eps = float(np.finfo(real).eps)
    return bad | xp.any(xp.abs(r) > 16 * (n + 1) * eps * t, axis=-1)


def lu_failed(xp: Any, a: Any, x: Any) -> Any:
    """Per matrix of ``a``, whether the LU factorization behind ``x = xp.linalg.solve(a, b)`` (or ``inv``) met
    an exact zero pivot, given ``x`` with a column whose right-hand side is finite (``inv``: any).

    A zero pivot ``U_ii = 0`` divides by zero in the back substitution (``x_i = (y_i - ...) / 0``, or CuPy's
    ``getrs``/``getri``), so ``x`` is not finite; for a finite nonsingular ``a`` it is (but for an overflow of a
    matrix with condition number beyond ``1/tiny``). A matrix holding NaN or inf is not flagged: NumPy
    returns NaN for it too, unless its LU happens to meet an exact zero pivot before the NaN spreads.
    """
    fin = xp.all(xp.isfinite(a), axis=(-2, -1))
    return fin & ~xp.all(xp.isfinite(x), axis=(-2, -1))


def svd_failed(xp: Any, a: Any) -> Any:
    """Per matrix, whether NumPy's ``svd`` raises on it ("SVD did not converge"): it holds NaN."""
    return xp.any(xp.isnan(a), axis=(-2, -1))


def eigh_failed(xp: Any, a: Any) -> Any:
    """Per matrix, whether ``eigh`` raises on it: NaN or inf in the lower triangle (the one read)."""
    return ~xp.all(xp.isfinite(_tril(xp, a)), axis=(-2, -1))


def raise_if(mesh: Any, flags: Sequence[Any], message: str) -> None:
    """Raise ``LinAlgError(message)`` when a device's flag holds True: one read for all of them.

    ``flags``: one per mesh device: a boolean array on it, None (not held here), or a Python bool (nothing
    to check on the device: an empty matrix, or NumPy shards, whose NumPy raised already).
    """
    host = [bool(f) for f in flags if isinstance(f, (bool, np.bool_))]
    arrays = {d: f for d, f in enumerate(flags) if f is not None and not isinstance(f, (bool, np.bool_))}
    if any(host) or (arrays and mesh.backend.any_flag(arrays)):
        raise LinAlgError(message)


@contextmanager
def numpy_raises(message: str) -> Iterator[None]:
    """NumPy's own ``LinAlgError`` (NumPy shards) as ``sa.linalg.LinAlgError(message)``, the one CuPy shards get."""
    try:
        yield
    except LinAlgError:
        raise
    except np.linalg.LinAlgError as e:
        raise LinAlgError(message) from e
