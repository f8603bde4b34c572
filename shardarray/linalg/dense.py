"""Cholesky, solve, inv, det, slogdet, eigh, eigvalsh: batched local kernels.

Each device factors the matrices of its batch block (a split batch dim: no
communication at all). These ops have no distributed algorithm here for one
matrix split over devices: a split matrix dim is gathered (**one allgather**
over its axes per operand, the whole matrix on each device) with a
``ReplicatedFallbackWarning`` naming the size; results come back with the
batch dims' split and the matrix dims whole.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..array import ShardArray
from ..autograd.tape import differentiable
from ..errors import DimensionError
from ..ops.common import require_array
from ._matrix import float_dtype, local_op, matrix_dims, require_square
from .svd import _real


class SlogdetResult(NamedTuple):
    sign: ShardArray
    logabsdet: ShardArray


class EighResult(NamedTuple):
    eigenvalues: ShardArray
    eigenvectors: ShardArray


def _square(x: Any, dims: Any, what: str) -> tuple[ShardArray, str, str]:
    x, rows, cols = matrix_dims(x, dims, what)
    float_dtype(x, f"sa.linalg.{what}")
    require_square(x, rows, cols, what)
    return x, rows, cols


def cholesky(x: ShardArray, dims: Any = None, *, upper: bool = False) -> ShardArray:
    """Cholesky factor of Hermitian positive-definite matrices: ``L`` (``x = L L^H``) or ``U`` (``x = U^H U``).

    Batched locally; a split matrix: replicated fallback (allgather + ``ReplicatedFallbackWarning``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.stack([np.eye(2) * 4] * 4), dims=("b", "i", "j"), mesh=mesh, layout={"b": "row"})
        >>> sa.linalg.cholesky(a).numpy()[0]
        array([[2., 0.],
               [0., 2.]])
    """
    x, rows, cols = _square(x, dims, "cholesky")
    xp, n = x.mesh.backend.xp, x.sizes[rows]

    def fn(s: Any) -> tuple[Any]:
        low = xp.linalg.cholesky(s) if n else s.copy()
        return (xp.conj(xp.swapaxes(low, -1, -2)) if upper else low,)

    return local_op([x], [(rows, cols)], fn, [((rows, cols), {rows: n, cols: n}, x.dtype)], "cholesky")[0]


@differentiable("linalg.inv")
def inv(x: ShardArray, dims: Any = None) -> ShardArray:
    """Inverse of square matrices (LU per matrix), batched locally; a split matrix: replicated fallback.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.diag([2.0, 4.0]), dims=("i", "j"), mesh=mesh)
        >>> sa.linalg.inv(a).numpy()
        array([[0.5 , 0.  ],
               [0.  , 0.25]])
    """
    x, rows, cols = _square(x, dims, "inv")
    xp, n = x.mesh.backend.xp, x.sizes[rows]
    return local_op([x], [(rows, cols)], lambda s: (xp.linalg.inv(s) if n else s.copy(),),
                    [((rows, cols), {rows: n, cols: n}, x.dtype)], "inv")[0]


@differentiable("linalg.det")
def det(x: ShardArray, dims: Any = None) -> ShardArray:
    """Determinants of square matrices: dims (batch...). Batched locally; a split matrix: replicated fallback.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> float(sa.linalg.det(sa.asarray(np.diag([2.0, 3.0]), dims=("i", "j"), mesh=mesh)))
        6.0
    """
    x, rows, cols = _square(x, dims, "det")
    xp = x.mesh.backend.xp
    return local_op([x], [(rows, cols)], lambda s: (xp.asarray(xp.linalg.det(s)),), [((), {}, x.dtype)], "det")[0]


def slogdet(x: ShardArray, dims: Any = None) -> SlogdetResult:
    """``(sign, log|det|)`` of square matrices; ``logabsdet`` is real. Batched locally; split matrix: fallback.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> s, l = sa.linalg.slogdet(sa.asarray(np.diag([-2.0, 3.0]), dims=("i", "j"), mesh=mesh))
        >>> float(s), round(float(l), 6)
        (-1.0, 1.791759)
    """
    x, rows, cols = _square(x, dims, "slogdet")
    xp = x.mesh.backend.xp

    def fn(s: Any) -> tuple[Any, Any]:
        sign, logabs = xp.linalg.slogdet(s)
        return xp.asarray(sign), xp.asarray(logabs)

    sign, logabs = local_op([x], [(rows, cols)], fn, [((), {}, x.dtype), ((), {}, _real(x.dtype))], "slogdet")
    return SlogdetResult(sign, logabs)


def eigh(x: ShardArray, dims: Any = None, *, new: str | None = None) -> EighResult:
    """Eigenvalues (ascending, real; dims (batch..., new)) and eigenvectors (batch..., rows, new) of Hermitian
    matrices (the lower triangle is read). Batched locally; a split matrix: replicated fallback.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w, v = sa.linalg.eigh(sa.asarray(np.diag([3.0, 1.0]), dims=("i", "j"), mesh=mesh))
        >>> w.numpy(), w.dims
        (array([1., 3.]), ('j_k',))
    """
    x, rows, cols = _square(x, dims, "eigh")
    xp, n = x.mesh.backend.xp, x.sizes[rows]
    new = new or f"{cols}_k"
    if new in x.dims:
        raise DimensionError(f"sa.linalg.eigh: new={new!r} is already a dim of x {x.sizes}; pass another name")
    w, v = local_op([x], [(rows, cols)], lambda s: tuple(xp.linalg.eigh(s)),
                    [((new,), {new: n}, _real(x.dtype)), ((rows, new), {rows: n, new: n}, x.dtype)], "eigh")
    return EighResult(w, v)


def eigvalsh(x: ShardArray, dims: Any = None, *, new: str | None = None) -> ShardArray:
    """Eigenvalues (ascending, real) of Hermitian matrices: dims (batch..., new). Batched locally; split: fallback.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.linalg.eigvalsh(sa.asarray(np.diag([3.0, 1.0]), dims=("i", "j"), mesh=mesh)).numpy()
        array([1., 3.])
    """
    x, rows, cols = _square(x, dims, "eigvalsh")
    xp, n = x.mesh.backend.xp, x.sizes[rows]
    new = new or f"{cols}_k"
    return local_op([x], [(rows, cols)], lambda s: (xp.linalg.eigvalsh(s),),
                    [((new,), {new: n}, _real(x.dtype))], "eigvalsh")[0]


@differentiable("linalg.solve")
def solve(a: ShardArray, b: ShardArray, dims: Any = None, *, b_dims: Any = None) -> ShardArray:
    """Solve ``a x = b`` for square ``a`` (rows, cols = ``dims``) and ``b`` with matrix dims ``b_dims``
    (default: its last two, ``(rows', k)``; ``b``'s row dim must have a's size). Batch dims must have the same
    names and sizes in both (broadcast first with ``sa.broadcast_to``). The result has ``b``'s dims, with
    a's batch layout. Batched locally (LU per matrix); a split matrix: replicated fallback.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.diag([2.0, 4.0]), dims=("i", "j"), mesh=mesh)
        >>> b = sa.asarray(np.ones((2, 1)), dims=("j", "k"), mesh=mesh)
        >>> sa.linalg.solve(a, b).numpy().ravel()
        array([0.5 , 0.25])
    """
    a, rows, cols = _square(a, dims, "solve")
    b = require_array(b, "sa.linalg.solve", "b")
    b, brow, bcol = matrix_dims(b, b_dims, "solve", "b")
    if b.sizes[brow] != a.sizes[rows]:
        raise DimensionError(
            f"sa.linalg.solve: b's row dim {brow!r} has size {b.sizes[brow]} but a is {a.sizes[rows]}x"
            f"{a.sizes[cols]} (dims {rows!r}, {cols!r}); they must match"
        )
    ab = sorted(d for d in a.dims if d not in (rows, cols))
    bb = sorted(d for d in b.dims if d not in (brow, bcol))
    if ab != bb or any(a.sizes[d] != b.sizes[d] for d in ab):
        raise DimensionError(
            f"sa.linalg.solve: a's batch dims { {d: a.sizes[d] for d in ab} } and b's { {d: b.sizes[d] for d in bb} } "
            f"differ; give both the same batch dims (sa.broadcast_to / rename)"
        )
    if a.dtype != b.dtype:
        dt = np.result_type(a.dtype, b.dtype)
        a, b = a.astype(dt), b.astype(dt)
    # b's batch dims in a's batch order
    from ..ops.structure import transpose

    order = [d for d in a.dims if d not in (rows, cols)]
    b = transpose(b, (*order, brow, bcol))
    xp = a.mesh.backend.xp
    k = b.sizes[bcol]
    n = a.sizes[rows]

    def fn(sa_: Any, sb: Any) -> tuple[Any]:
        return (xp.linalg.solve(sa_, sb) if n and k else xp.zeros(sb.shape, dtype=sb.dtype),)

    return local_op([a, b], [(rows, cols), (brow, bcol)], fn, [((brow, bcol), {brow: n, bcol: k}, a.dtype)],
                    "solve")[0]
