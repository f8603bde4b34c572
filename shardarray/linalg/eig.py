"""Eigenvalues and eigenvectors of general (non-symmetric) square matrices: ``eig`` and ``eigvals``.

The array API standard's 2025.12 ``linalg.eig``/``linalg.eigvals``: complex results of the input's precision
(``float64`` -> ``complex128``, ``float32`` -> ``complex64``) whether or not the eigenvalues happen to be real
(NumPy's ``np.linalg.eig`` returns a real array then; JAX, PyTorch and CuPy return complex, and a data-dependent
dtype would need a device read before the result's type is known). The eigenvalues come in LAPACK's (or
cuSOLVER's) order, which the standard leaves unspecified; each eigenvector has unit Euclidean norm.

Batched locally: each device factors its own matrices with its backend's ``linalg.eig`` (LAPACK ``geev``;
cuSOLVER ``Xgeev`` on CuPy shards). A split matrix dim has no distributed algorithm (the non-symmetric QR
iteration does not distribute well): the matrices are gathered to their devices with a
``sa.linalg.ReplicatedFallbackWarning`` (one allgather over the matrix dims' axes).

Differentiable (``autograd/vjp_linalg.py``): the eigenvalues by ``Ā = V^{-T} diag(w̄) V^T``; the eigenvectors by
the transpose of ``dV = V (F ∘ V^{-1} dA V) - V diag(Re(diag(V^H V (F ∘ V^{-1} dA V))))`` with
``F_ij = 1 / (w_j - w_i)`` (0 where two eigenvalues are equal): the derivative of unit-norm eigenvectors. For
complex eigenvectors the phase LAPACK fixes (largest component real) is not differentiated, so their gradient
is exact for losses that do not depend on each eigenvector's phase (``|v|``, projectors ``v v^H``), as in JAX.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..array import ShardArray
from ..core.tape import keeps_kind
from ._checks import eig_failed, finite_only
from ._matrix import local_op, matrix_dims
from ._parts import eig_values, eig_vectors, traced, untraced
from .dense import _new_dim, _no_eig, _square


class EigResult(NamedTuple):
    eigenvalues: ShardArray
    eigenvectors: ShardArray


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype of ``dtype``'s precision: float32/complex64 -> complex64, else complex128."""
    return np.dtype(np.complex64) if dtype in (np.float32, np.complex64) else np.dtype(np.complex128)


def _clean(xp: Any, a: Any) -> tuple[Any, Any]:
    """``(a, bad)``: the matrices holding NaN or inf (``bad``, they raise) replaced by zeros: LAPACK's ``geev``
    (cuSOLVER's ``Xgeev``) never sees them (NumPy refuses them itself; cuSOLVER would iterate on them)."""
    bad = eig_failed(xp, a)
    return finite_only(xp, a, bad), bad


def _eig_block(xp: Any, a: Any, dt: np.dtype) -> tuple[Any, Any, Any]:
    a, bad = _clean(xp, a)
    w, v = xp.linalg.eig(a)
    return w.astype(dt, copy=False), v.astype(dt, copy=False), bad


def _eigvals_block(xp: Any, a: Any, dt: np.dtype) -> tuple[Any, Any]:
    a, bad = _clean(xp, a)
    return xp.linalg.eigvals(a).astype(dt, copy=False), bad


@keeps_kind
def eig(x: ShardArray, dims: Any = None, *, new: str | None = None) -> EigResult:
    """Eigenvalues (dims (batch..., new)) and unit-norm eigenvectors (batch..., rows, new) of square matrices,
    complex (see the module docstring for the dtype, the order and the gradients).

    Batched locally (``linalg.eig`` of the backend per device); a split matrix: replicated fallback (an
    allgather, ``ReplicatedFallbackWarning``). Collectives: besides that allgather, under MPI **one host
    reduction** of one int over the job, so that a matrix holding NaN or inf raises ``sa.linalg.LinAlgError``
    on every process (naming the first one's batch index and device), not on its own process alone.

    Raises:
        LinAlgError: a matrix holds NaN or inf (LAPACK's ``geev`` does not converge on it).
        DimensionError: matrix dims that are not square, ``new`` already a dim.
        DTypeError: an integer, bool or 16-bit float array (cast to float32 or float64 first).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w, v = sa.linalg.eig(sa.asarray(np.array([[0.0, -1.0], [1.0, 0.0]]), dims=("i", "j"), mesh=mesh))
        >>> np.sort_complex(w.numpy()), w.dims, v.dims
        (array([0.-1.j, 0.+1.j]), ('j_k',), ('i', 'j_k'))
    """
    if traced(x):
        with untraced():
            w, v = eig(x, dims, new=new)
        _, rows, cols = matrix_dims(x, dims, "eig")
        return EigResult(eig_values(x, w, v, rows, cols), eig_vectors(x, w, v, rows, cols))
    x, rows, cols = _square(x, dims, "eig")
    xp, n, dt = x.mesh.backend.xp, x.sizes[rows], complex_dtype(x.dtype)
    new = _new_dim(x, cols, new, "eig")
    w, v = local_op(
        [x],
        [(rows, cols)],
        lambda s: _eig_block(xp, s, dt),
        [((new,), {new: n}, dt), ((rows, new), {rows: n, new: n}, dt)],
        "eig",
        fails=_no_eig("eig", x),
    )
    return EigResult(w, v)


@keeps_kind
def eigvals(x: ShardArray, dims: Any = None, *, new: str | None = None) -> ShardArray:
    """Eigenvalues of square matrices, complex: dims (batch..., new), in ``eig``'s order. Batched locally; a split
    matrix: replicated fallback (an allgather). Collectives: as ``eig``'s.

    Raises:
        LinAlgError, DimensionError, DTypeError: as ``eig``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[2.0, 1.0], [0.0, 3.0]]), dims=("i", "j"), mesh=mesh)
        >>> np.sort_complex(sa.linalg.eigvals(x).numpy())
        array([2.+0.j, 3.+0.j])
    """
    if traced(x):  # differentiable through eig's eigenvalues (the VJP needs the eigenvectors)
        return eig(x, dims, new=new).eigenvalues
    x, rows, cols = _square(x, dims, "eigvals")
    xp, n, dt = x.mesh.backend.xp, x.sizes[rows], complex_dtype(x.dtype)
    new = _new_dim(x, cols, new, "eigvals")
    return local_op(
        [x],
        [(rows, cols)],
        lambda s: _eigvals_block(xp, s, dt),
        [((new,), {new: n}, dt)],
        "eigvals",
        fails=_no_eig("eigvals", x),
    )[0]
