"""Where NumPy's linalg raises ``LinAlgError``, checked on the devices: CuPy's never raises.

NumPy raises from the LAPACK ``info`` of each matrix; CuPy 14 computes the
same factorizations with cuSOLVER and, by default
(``cupyx.errstate(linalg='ignore')``), returns whatever cuSOLVER left for a
failed matrix: NaN or finite garbage, no error. Asking CuPy to check
(``linalg='raise'``) would read ``info`` from the device after every call.
Here each op computes, on the device, one boolean per matrix from its input
and its result (the functions below), and the op reads them once, at its end
(``Backend.first_flags``: one device-to-host read of one int per device, the
first failed matrix of its block, all devices together); the 2-D Cholesky
folds its flags into the allreduce it ends with. On NumPy shards
(``Backend.linalg_raises``) NumPy raises itself and the Cholesky and LU
checks are skipped (they cost as much as the factorization on a CPU); its
``LinAlgError`` is caught on the block (``guard``), which then records the
failed matrix as a flag too. The svd and eigh checks run on both.

The verdict is the job's, not the process's (``raise_if``): a batch dim split
over processes (``comm="mpi"``) leaves each process with its own matrices'
flags only, so the processes agree first, by **one host reduction** of one
int (``comm.host_reduce``; no collective on an emulated mesh, which holds
every flag), and all raise the same ``sa.linalg.LinAlgError``, naming the
first failed matrix's batch index and device, or none does. Raising on the
process that holds the bad matrix alone would leave the others waiting for
it at their next collective. The suite on ``--backend=cupy`` (the strict stand-in) runs the
checks under every test, hypothesis's included: none fires where NumPy does
not raise.

What NumPy raises on (OpenBLAS's LAPACK, NumPy 2), and the check:

* ``cholesky``: a pivot ``<= 0`` (the matrix is not positive definite); a
  NaN pivot is not one (the NaN comes out). ``cholesky_failed``.
* ``solve``, ``inv``: an exact zero pivot of the LU factorization (singular).
  ``lu_failed``: the result of a finite matrix is not finite.
* ``svd``, ``svdvals`` (and ``pinv``, ``matrix_rank``, the 2-/nuclear norms
  through them): NaN in the matrix ("SVD did not converge"). ``svd_failed``. A matrix
  holding inf but no NaN gives NaN (``svdvals``: NumPy's own answer; ``svd``: NumPy
  gives NaN or never returns): it is never handed to LAPACK (``finite_only``).
* ``eigh``, ``eigvalsh``: "Eigenvalues did not converge", for some matrices
  holding NaN or inf in the triangle read (which ones depends on their size
  and where the NaN is; the others give NaN, inf or even finite values);
  ``eigh_failed`` takes all of them, so that both backends raise on the same
  input. ``eig``, ``eigvals``: NaN or inf anywhere (NumPy refuses them before
  LAPACK). The flagged matrices are replaced by zeros before LAPACK sees them
  (``finite_only``).
* ``qr``, ``det``, ``slogdet``: never (a singular matrix has determinant 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import LinAlgError
from ..layout import block_bounds


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


def finite_only(xp: Any, a: Any, bad: Any) -> Any:
    """``a`` with the matrices flagged ``bad`` (per matrix) replaced by zeros: what a LAPACK routine is handed
    instead of a matrix holding inf or NaN, on which an iterative one (``gesdd``: NumPy's ``svd`` loops forever on
    some matrices holding inf; ``syevd``, ``geev``) may not return. The caller answers for those matrices."""
    return xp.where(bad[..., None, None], xp.zeros((), dtype=a.dtype), a)


def nan_where(xp: Any, out: Any, bad: Any, extra: int) -> Any:
    """``out`` (a stack with ``extra`` trailing dims per matrix) with the entries of the matrices ``bad`` NaN."""
    mask = bad[(...,) + (None,) * extra]
    return xp.where(mask, xp.asarray(float("nan")).astype(out.dtype), out)


def eigh_failed(xp: Any, a: Any) -> Any:
    """Per matrix, whether ``eigh`` raises on it: NaN or inf in the lower triangle (the one read)."""
    return ~xp.all(xp.isfinite(_tril(xp, a)), axis=(-2, -1))


def eig_failed(xp: Any, a: Any) -> Any:
    """Per matrix, whether ``eig``/``eigvals`` raise on it: NaN or inf anywhere (LAPACK's ``geev`` reads it all)."""
    return ~xp.all(xp.isfinite(a), axis=(-2, -1))


#: the key of "no matrix failed here" in the job's agreement (``raise_if``): above every real key, an int64
NO_FAILURE = 2**63 - 1


def guard(fn: Callable[..., tuple[Any, ...]], n_out: int) -> Callable[..., tuple[Any, ...]]:
    """``fn`` (``n_out`` blocks, then its failure flag) with NumPy's own ``LinAlgError`` (NumPy shards) caught
    on the block: it returns ``n_out`` Nones and, as the flag, the flat batch index of the block's first matrix
    NumPy raises on (found again one matrix at a time: only where NumPy raised), so that ``raise_if`` raises on
    every process together instead of this one alone."""

    def run(*blocks: Any) -> tuple[Any, ...]:
        try:
            return fn(*blocks)
        except LinAlgError:
            raise
        except np.linalg.LinAlgError:
            return (*[None] * n_out, _first_raising(fn, blocks))

    return run


def _first_raising(fn: Callable[..., Any], blocks: Sequence[Any]) -> int:
    """The flat batch index (the dims before the two matrix dims) of the first matrix ``fn`` raises on."""
    for i, idx in enumerate(np.ndindex(*blocks[0].shape[:-2])):
        one = tuple(slice(k, k + 1) for k in idx)
        try:
            fn(*(b[one] for b in blocks))
        except np.linalg.LinAlgError:
            return i
    return 0  # NumPy raised on the stack but on none of its matrices alone: name the block's first


def raise_if(mesh: Any, flags: Sequence[Any], message: str, where: Any = None, nbatch: int = 0) -> None:
    """Raise ``LinAlgError(message)`` on **every process** when a device's flag says a matrix failed, naming
    the first failed matrix (its batch index) and its device.

    ``flags``: one per mesh device: a boolean array on it (one per matrix of its block), None (not held
    here), a bool (False: nothing to check, an empty matrix or NumPy shards where NumPy did not raise; True:
    a matrix failed, which one not known) or an int (the flat index in the block of the matrix NumPy raised
    on: ``guard``). ``where``: the array whose first
    ``nbatch`` dims are the batch dims the flags index (its layout places each device's block).

    Cost: one device-to-host read of one int per device for all of them (``Backend.first_flags``); then,
    under MPI, **one host reduction** of one int over the job (``comm.host_reduce``, min of
    ``batch index * devices + device``): each process holds only its own flags, so without it the process
    holding a bad matrix would raise alone and leave the others waiting at their next collective. On an
    emulated mesh (one process holds every flag) ``host_reduce`` is no collective.
    """
    if not mesh.backend.has_data:
        return
    local: dict[int, int] = {}  # device -> flat index in its block of its first failed matrix
    arrays = {}
    for d, f in enumerate(flags):
        if f is None:
            continue
        if isinstance(f, (bool, np.bool_)):  # True: failed, which matrix not known
            if f:
                local[d] = 0
        elif isinstance(f, (int, np.integer)):
            local[d] = int(f)
        else:
            arrays[d] = f
    if arrays:
        local.update({d: i for d, i in mesh.backend.first_flags(arrays).items() if i >= 0})
    dims = where.dims[:nbatch] if nbatch else ()
    sizes = tuple(where.sizes[d] for d in dims)
    key = NO_FAILURE
    if local:
        bounds = block_bounds(mesh, where.spec) if dims else None
        for d, i in local.items():
            flat = 0
            if bounds is not None:
                box = bounds[d][:nbatch]
                at = np.unravel_index(i, tuple(b - a for a, b in box))
                flat = int(np.ravel_multi_index(tuple(a + k for (a, _), k in zip(box, at)), sizes))
            key = min(key, flat * mesh.size + d)
    key = int(mesh.comm.host_reduce(key, "min"))  # every process agrees: all raise, or none
    if key == NO_FAILURE:
        return
    flat, device = divmod(key, mesh.size)
    if dims:
        index = dict(zip(dims, (int(k) for k in np.unravel_index(flat, sizes))))
        message = f"{message}; the first failed matrix: batch index {index}, on device {device}"
    raise LinAlgError(message)
