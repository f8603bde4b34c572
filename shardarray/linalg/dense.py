"""Cholesky, solve, inv, det, slogdet, eigh, eigvalsh.

Matrices whole on each device (a split batch dim or none): batched local
kernels, no communication of the data; the ops that can fail (``cholesky``,
``solve``, ``inv``, ``eigh``, ``eigvalsh``) then agree on the verdict, under
MPI by **one host reduction** of one int over the job (none on an emulated
mesh). One matrix split over devices (its rows and/or columns over mesh
axes):

* ``cholesky``: the blocked right-looking 2-D algorithm (``cholesky2d``:
  per panel broadcasts of the diagonal block and the panel, one alltoallv for
  its transpose, a local trailing update; one allreduce of a flag at the end);
  ``L`` keeps ``x``'s layout. A matrix that is not positive definite raises
  ``sa.linalg.LinAlgError`` (a ``numpy.linalg.LinAlgError``) on every device.
* ``solve``, ``inv``, ``det``, ``slogdet``: for Hermitian positive-definite
  matrices through that Cholesky (``spd``: triangular solves by panels with a
  reduce and a broadcast each; ``log|det|`` from ``L``'s diagonal, one
  allreduce). Other matrices (the Hermitian test or the Cholesky fails) take
  the **replicated LU fallback**: an allgather of each matrix onto every
  device, with ``ReplicatedFallbackWarning``.
* ``eigh``, ``eigvalsh``: always the replicated fallback (documented; no
  distributed eigensolver here).

``sa.linalg.LinAlgError`` is raised where NumPy raises, on NumPy and CuPy
shards alike (CuPy's linalg never raises; ``_checks`` says how each op tests
its result on the devices, with one read at the end of the op): ``cholesky``
of a matrix that is not positive definite, ``solve``/``inv`` of a singular
one (an exact zero pivot), ``eigh``/``eigvalsh`` of one holding NaN or inf in
the triangle read. ``det``/``slogdet`` never raise (0, ``-inf``). It is raised
on every process of an MPI job, also where one process holds the bad matrix
(a split batch dim): the processes agree first (``_checks.raise_if``), and the
message names the first bad matrix's batch index and device.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..array import ShardArray
from ..core.common import require_array
from ..core.tape import differentiable, keeps_kind
from ..errors import ArgumentError, DimensionError, LinAlgError
from ..ops.elementwise.arithmetic import exp, multiply
from ..ops.manipulation.structure import astype, rename, transpose
from ._checks import cholesky_failed, eigh_failed, finite_only, lu_failed, nan_where
from ._matrix import float_dtype, local_op, matrix_dims, require_square
from ._parts import eigh_values, eigh_vectors, slogdet_logabs, slogdet_sign, traced, untraced
from .cholesky2d import cholesky_2d
from .spd import is_split, spd_inv, spd_slogdet, spd_solve
from .svd import _real

_NOT_SPD = "the matrix is not Hermitian positive definite (the distributed Cholesky path needs that)"


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


def _new_dim(x: ShardArray, cols: str, new: str | None, what: str) -> str:
    """The eigenvalue dim's name: ``new``, or ``<cols>_k``; refused when ``x`` already has a dim of that name."""
    new = new or f"{cols}_k"
    if new in x.dims:
        raise DimensionError(f"sa.linalg.{what}: new={new!r} is already a dim of x {x.sizes}; pass another name")
    return new


@differentiable("linalg.cholesky")
def cholesky(x: ShardArray, dims: Any = None, *, upper: bool = False, panel: int | None = None) -> ShardArray:
    """Cholesky factor of Hermitian positive-definite matrices: ``L`` (``x = L L^H``) or ``U`` (``x = U^H U``).

    Only the lower triangle of ``x`` is read (the upper one with ``upper=True``:
    ``U = chol(x^T)^T``, which is ``L^H`` for Hermitian ``x``). Matrices whole on each device:
    batched locally (no communication of the data; under MPI **one host reduction** of one int over the job,
    so that every process raises if any matrix failed). One matrix split over devices (rows
    over axes ``R``, columns over ``C``, either may be empty): the blocked
    right-looking 2-D algorithm, per panel of width ``b`` (the union of the
    row and column block boundaries, at most ``panel``):

    * **broadcast** of the diagonal factor ``L_kk`` over ``R`` (``b²`` elements),
    * **broadcast** of the solved panel rows over ``C`` (a device's rows below
      the panel ``x b``),
    * **alltoallv** over ``R`` for the panel's transpose (at most a device's
      columns ``x b`` received),
    * a local trailing update ``A_ij -= L_ik L_jk^H``;

    then **one allreduce** over the matrix axes of one number per matrix (the
    failure flag; plus one of a single number over the batch axes when a
    batch dim is split). Per device that is ``O(n·b + n²/p_r + n²/p_c)``
    elements: its blocks' size, never a gather of the matrix. ``L`` (or ``U``)
    keeps ``x``'s layout with zeros in the other triangle. A matrix that is not
    positive definite raises ``sa.linalg.LinAlgError`` (a ``numpy.linalg.LinAlgError``) on every device and
    process, naming the first such matrix's batch index and device where there is a batch.

    Differentiable, real and complex (Murray 2016; the gradient lives in the triangle read, its diagonal real).

    Args:
        x: float or complex array.
        dims: ``(rows, cols)``; default the last two dims.
        upper: return ``U = L^H`` instead of ``L``.
        panel: the largest panel width of the 2-D algorithm (default: the layout's blocks).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.diag([4.0, 9.0, 16.0, 25.0]), dims=("i", "j"), mesh=mesh,
        ...                layout={"i": "row", "j": "col"})
        >>> with sa.comm_log() as log:
        ...     low = sa.linalg.cholesky(a)
        >>> np.diag(low.numpy()), low.layout
        (array([2., 3., 4., 5.]), {'i': ('row',), 'j': ('col',)})
        >>> [r.op for r in log.records]
        ['broadcast', 'broadcast', 'alltoall', 'broadcast', 'allreduce']
    """
    x, rows, cols = _square(x, dims, "cholesky")
    if panel is not None and (not isinstance(panel, (int, np.integer)) or isinstance(panel, bool) or panel < 1):
        raise ArgumentError(f"sa.linalg.cholesky: panel must be a positive int (a panel width); got {panel!r}")
    xp, n = x.mesh.backend.xp, x.sizes[rows]
    if n and (x.spec.of(rows) or x.spec.of(cols)):  # a split matrix, on meta too (the factor's shapes need no values)
        return _cholesky_2d(x, rows, cols, upper, panel)

    check = not x.mesh.backend.linalg_raises  # CuPy: test the factor on the device (NumPy raises itself)

    def fn(s: Any) -> tuple[Any, Any]:
        if not n:
            return s.copy(), False
        # U = chol(x^T)^T (= L^H for Hermitian x): reads the upper triangle, as the 2-D path does
        a = xp.swapaxes(s, -1, -2) if upper else s
        low = xp.linalg.cholesky(a)
        return (xp.swapaxes(low, -1, -2) if upper else low), check and cholesky_failed(xp, a, low)

    outs = [((rows, cols), {rows: n, cols: n}, x.dtype)]
    return local_op([x], [(rows, cols)], fn, outs, "cholesky", fails=_not_pd(x, rows, cols))[0]


def _not_pd(x: ShardArray, rows: str, cols: str) -> str:
    return (
        f"sa.linalg.cholesky: a {x.sizes[rows]}x{x.sizes[cols]} matrix of x {x.sizes} is not positive definite; "
        f"use sa.linalg.eigh or an LU-based sa.linalg.solve instead"
    )


def _singular(what: str, x: ShardArray, rows: str, cols: str) -> str:
    return (
        f"sa.linalg.{what}: a {x.sizes[rows]}x{x.sizes[cols]} matrix of {'a' if what == 'solve' else 'x'} "
        f"{x.sizes} is singular (its LU factorization has a zero pivot)"
    )


def _cholesky_2d(x: ShardArray, rows: str, cols: str, upper: bool, panel: int | None) -> ShardArray:
    if upper:  # U[i, j] = conj(L[j, i]): factor x with its dim names swapped (x^T = conj(x)), swap them back
        swap = {rows: cols, cols: rows}
        low = cholesky_2d(rename(x, swap), rows, cols, panel)
        out = None if low is None else rename(low, swap)
    else:
        out = cholesky_2d(x, rows, cols, panel)
    if out is None:
        raise LinAlgError(_not_pd(x, rows, cols))
    batch = tuple(d for d in out.dims if d not in (rows, cols))
    return transpose(out, (*batch, rows, cols)) if out.dims != (*batch, rows, cols) else out


@differentiable("linalg.inv")
def inv(x: ShardArray, dims: Any = None) -> ShardArray:
    """Inverse of square matrices (LU per matrix), batched locally: no communication of the data, and under MPI
    **one host reduction** of one int over the job (a singular matrix raises ``sa.linalg.LinAlgError`` on every
    process, naming the first one's batch index and device). The result's dims are ``x``'s batch dims, then
    ``rows``, ``cols`` (the names ``dims`` gives, not swapped): entry ``(r, c)`` is ``inv(A)[r, c]`` of the matrix
    ``A[rows, cols]``, NumPy's positional result (``pinv``, whose result is ``cols x rows``, swaps the names).

    A split matrix that is Hermitian positive definite: the 2-D Cholesky (see
    ``cholesky``; its final allreduce carries a Hermitian test), then forward
    and back substitution with the identity (per panel one reduce and one
    broadcast of ``b·n`` elements), then a local slice: the result keeps
    ``x``'s layout (each device holds ``n/p_r`` rows of it in between). Any
    other split matrix: the replicated LU fallback (an allgather of the
    matrix, ``ReplicatedFallbackWarning``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a = sa.asarray(np.diag([2.0, 4.0]), dims=("i", "j"), mesh=mesh)
        >>> sa.linalg.inv(a).numpy()
        array([[0.5 , 0.  ],
               [0.  , 0.25]])
    """
    x, rows, cols = _square(x, dims, "inv")
    xp, n = x.mesh.backend.xp, x.sizes[rows]
    if n and is_split(x, rows, cols):
        out = spd_inv(x, rows, cols)
        if out is not None:
            return out

    check = not x.mesh.backend.linalg_raises  # CuPy: test the result on the device (NumPy raises itself)

    def fn(s: Any) -> tuple[Any, Any]:
        if not n:
            return s.copy(), False
        if not check:
            return xp.linalg.inv(s), False
        out = _inv_by_solve(xp, s)
        return out, lu_failed(xp, s, out)

    outs = [((rows, cols), {rows: n, cols: n}, x.dtype)]
    return local_op([x], [(rows, cols)], fn, outs, "inv", _NOT_SPD, fails=_singular("inv", x, rows, cols))[0]


@differentiable("linalg.inv_or_nan")
def inv_or_nan(x: ShardArray, dims: Any = None) -> ShardArray:
    """``inv`` with NaN matrices where ``x`` is singular (an exact zero pivot) instead of ``LinAlgError``: NumPy's
    ``cond`` computes its inverses so (``inv`` with its errors ignored), and answers inf for those matrices.

    Collectives: ``inv``'s (a split Hermitian positive-definite matrix: the 2-D Cholesky path; any other split
    matrix: the replicated LU fallback, ``ReplicatedFallbackWarning``), but no agreement on a verdict (nothing
    raises). On CuPy shards (no exception to catch) a matrix is singular where its LU meets an exact zero pivot
    (``slogdet``'s sign 0: one more LU); the stack is solved with those matrices swapped for the identity, so that
    one singular matrix cannot spoil its stack's others. Differentiable (``inv``'s VJP).
    """
    x, rows, cols = _square(x, dims, "inv")
    xp, n = x.mesh.backend.xp, x.sizes[rows]
    if n and is_split(x, rows, cols):
        out = spd_inv(x, rows, cols)
        if out is not None:
            return out
    raises = x.mesh.backend.linalg_raises

    def fn(s: Any) -> tuple[Any]:
        if not n:
            return (s.copy(),)
        if not raises:  # CuPy: no exception; an exact zero pivot of the LU (slogdet's sign 0) flags a matrix
            bad = (xp.linalg.slogdet(s)[0] == 0) & xp.all(xp.isfinite(s), axis=(-2, -1))
            # solved with the flagged matrices swapped for I: one singular matrix cannot spoil its stack's others
            eye = xp.eye(n, dtype=s.dtype)
            return (nan_where(xp, _inv_by_solve(xp, xp.where(bad[..., None, None], eye, s)), bad, 2),)
        try:
            return (xp.linalg.inv(s),)
        except np.linalg.LinAlgError:  # NumPy raised on the stack: the singular matrices alone become NaN
            out = xp.full(s.shape, float("nan"), dtype=s.dtype)
            for idx in np.ndindex(*s.shape[:-2]):
                try:
                    out[idx] = xp.linalg.inv(s[idx])
                except np.linalg.LinAlgError:
                    pass
            return (out,)

    outs = [((rows, cols), {rows: n, cols: n}, x.dtype)]
    return local_op([x], [(rows, cols)], fn, outs, "inv", _NOT_SPD)[0]


def _inv_by_solve(xp: Any, s: Any) -> Any:
    """The inverses of the matrices of ``s`` as NumPy computes them: the LU of each matrix itself, then a solve
    with the identity (``gesv``), so that ``_checks.lu_failed`` sees the exact zero pivot NumPy raises on.

    CuPy's own ``inv`` of a stack (``cupy/linalg/_solve.py``, ``_batched_inv``: cuBLAS ``getrfBatched`` and
    ``getriBatched`` on the C-ordered data read column-major) factors each matrix's *transpose*; with the GPU's
    fused multiply-add that LU can meet a pivot of rounding size where the LU of the matrix meets NumPy's exact
    zero, and returns a finite inverse of size ``1/eps`` of a matrix NumPy calls singular (an H200, a matrix
    with a repeated row). ``xp.linalg.solve`` (``batched_gesv``: ``getrfBatched``/``getrsBatched`` of the matrix,
    or cuSOLVER's ``gesv``) factors the matrix itself.
    """
    eye = xp.eye(s.shape[-1], dtype=s.dtype)
    return xp.linalg.solve(s, xp.broadcast_to(eye, s.shape))


@differentiable("linalg.det")
def det(x: ShardArray, dims: Any = None) -> ShardArray:
    """Determinants of square matrices: dims (batch...). Batched locally (LU).

    A split Hermitian positive-definite matrix: ``exp(2 Σ log L_ii)`` from the
    2-D Cholesky's diagonal (each device sums the entries it holds, **one
    allreduce** over the matrix axes); any other split matrix: the replicated
    LU fallback (``ReplicatedFallbackWarning``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> float(sa.linalg.det(sa.asarray(np.diag([2.0, 3.0]), dims=("i", "j"), mesh=mesh)))
        6.0
    """
    x, rows, cols = _square(x, dims, "det")
    xp = x.mesh.backend.xp
    if x.sizes[rows] and is_split(x, rows, cols):
        sl = spd_slogdet(x, rows, cols)
        if sl is not None:
            return multiply(sl[0], exp(sl[1]))
    return local_op(
        [x], [(rows, cols)], lambda s: (xp.asarray(xp.linalg.det(s)),), [((), {}, x.dtype)], "det", _NOT_SPD
    )[0]


@keeps_kind
def slogdet(x: ShardArray, dims: Any = None) -> SlogdetResult:
    """``(sign, log|det|)`` of square matrices; ``logabsdet`` is real. Batched locally (LU).

    A split Hermitian positive-definite matrix: ``2 Σ log L_ii`` from the 2-D
    Cholesky (**one allreduce** over the matrix axes after it), ``sign = 1``;
    any other split matrix: the replicated LU fallback
    (``ReplicatedFallbackWarning``). Differentiable in ``logabsdet``
    (``Ā = ḡ A^{-T}``) and, for a complex matrix, in ``sign``
    (``Ā = i Im(ḡ sign) A^{-T}``, JAX's convention); a real matrix's sign is
    piecewise constant (zero gradient).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> s, l = sa.linalg.slogdet(sa.asarray(np.diag([-2.0, 3.0]), dims=("i", "j"), mesh=mesh))
        >>> float(s), round(float(l), 6)
        (-1.0, 1.791759)
    """
    if not traced(x):
        return _slogdet(x, dims)
    with untraced():
        sign, logabs = _slogdet(x, dims)
    _, rows, cols = matrix_dims(x, dims, "slogdet")
    if x.dtype.kind == "c":  # a complex sign moves with x (a real one is piecewise constant)
        sign = slogdet_sign(x, sign, rows, cols)
    return SlogdetResult(sign, slogdet_logabs(x, logabs, rows, cols))


def _slogdet(x: ShardArray, dims: Any) -> SlogdetResult:
    x, rows, cols = _square(x, dims, "slogdet")
    xp = x.mesh.backend.xp
    if x.sizes[rows] and is_split(x, rows, cols):
        sl = spd_slogdet(x, rows, cols)
        if sl is not None:
            return SlogdetResult(*sl)

    def fn(s: Any) -> tuple[Any, Any]:
        sign, logabs = xp.linalg.slogdet(s)
        return xp.asarray(sign), xp.asarray(logabs)

    sign, logabs = local_op([x], [(rows, cols)], fn, [((), {}, x.dtype), ((), {}, _real(x.dtype))], "slogdet", _NOT_SPD)
    return SlogdetResult(sign, logabs)


@keeps_kind
def eigh(x: ShardArray, dims: Any = None, *, new: str | None = None) -> EighResult:
    """Eigenvalues (ascending, real; dims (batch..., new)) and eigenvectors (batch..., rows, new) of Hermitian
    matrices (the lower triangle is read). Batched locally; a split matrix: replicated fallback (an allgather).
    Collectives: besides that allgather, under MPI **one host reduction** of one int over the job, so that a
    matrix holding NaN or inf raises ``sa.linalg.LinAlgError`` on every process (naming the first one's batch
    index and device), not on its own process alone.

    Differentiable, for Hermitian inputs (the gradient is Hermitian, as the input is taken to be):
    ``Ā = V (diag(w̄) + F ∘ (V^H V̄)) V^H`` with ``F_ij = 1 / (w_j - w_i)``. Where two eigenvalues are equal
    their eigenvectors are not unique and ``F_ij`` is taken as 0 (equal up to the solver's rounding: JAX gives
    inf or NaN there): the gradient is then exact for losses that do not depend on the choice of basis within an
    eigenspace (eigenvalues, projectors), as with ``eigvalsh``. Complex matrices too (JAX's convention; the
    eigenvectors' phases are LAPACK's choice, so exact for losses that do not depend on them, e.g. ``|v|²``). The
    gradient is that of a function of a Hermitian matrix (JAX's ``symmetrize_input``): for a loss of ``x``'s read
    triangle alone, differentiate ``eigh((x + x^H) / 2)``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w, v = sa.linalg.eigh(sa.asarray(np.diag([3.0, 1.0]), dims=("i", "j"), mesh=mesh))
        >>> w.numpy(), w.dims
        (array([1., 3.]), ('j_k',))
    """
    if traced(x):
        with untraced():
            w, v = eigh(x, dims, new=new)
        _, rows, cols = matrix_dims(x, dims, "eigh")
        return EighResult(eigh_values(x, w, v, rows, cols), eigh_vectors(x, w, v, rows, cols))
    x, rows, cols = _square(x, dims, "eigh")
    xp, n = x.mesh.backend.xp, x.sizes[rows]
    new = _new_dim(x, cols, new, "eigh")
    w, v = local_op(
        [x],
        [(rows, cols)],
        lambda s: _eigh_block(xp, s, True),
        [((new,), {new: n}, _real(x.dtype)), ((rows, new), {rows: n, new: n}, x.dtype)],
        "eigh",
        fails=_no_eig("eigh", x),
    )
    return EighResult(w, v)


@keeps_kind
def eigvalsh(x: ShardArray, dims: Any = None, *, new: str | None = None) -> ShardArray:
    """Eigenvalues (ascending, real) of Hermitian matrices: dims (batch..., new). Batched locally; split: fallback.

    Collectives: as ``eigh``'s (under MPI one host reduction of one int: every process raises together).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.linalg.eigvalsh(sa.asarray(np.diag([3.0, 1.0]), dims=("i", "j"), mesh=mesh)).numpy()
        array([1., 3.])
    """
    if traced(x):  # differentiable through eigh's eigenvalues (the VJP needs the eigenvectors)
        return eigh(x, dims, new=new).eigenvalues
    x, rows, cols = _square(x, dims, "eigvalsh")
    xp, n = x.mesh.backend.xp, x.sizes[rows]
    new = new or f"{cols}_k"
    return local_op(
        [x],
        [(rows, cols)],
        lambda s: _eigh_block(xp, s, False),
        [((new,), {new: n}, _real(x.dtype))],
        "eigvalsh",
        fails=_no_eig("eigvalsh", x),
    )[0]


def _eigh_block(xp: Any, s: Any, vectors: bool) -> tuple[Any, ...]:
    """``eigh``/``eigvalsh`` of whole matrices, then the per-matrix failure flag: a matrix holding NaN or inf in
    the triangle read raises (``_checks.eigh_failed``), and LAPACK gets zeros in its place (``finite_only``)."""
    bad = eigh_failed(xp, s)
    s = finite_only(xp, s, bad)
    return (*xp.linalg.eigh(s), bad) if vectors else (xp.linalg.eigvalsh(s), bad)


def _no_eig(what: str, x: ShardArray) -> str:
    return f"sa.linalg.{what}: eigenvalues did not converge (a matrix of x {x.sizes} holds NaN or inf)"


@differentiable("linalg.solve")
def solve(a: ShardArray, b: ShardArray, dims: Any = None, *, b_dims: Any = None) -> ShardArray:
    """Solve ``a x = b`` for square ``a`` (rows, cols = ``dims``) and ``b`` with matrix dims ``b_dims``
    (default: its last two, ``(rows', k)``; ``b``'s row dim must have a's size). Batch dims must have the same
    names and sizes in both (broadcast first with ``sa.broadcast_to``). The result has ``b``'s dims, with
    a's batch layout. Batched locally (LU per matrix; no communication of the data, and under MPI **one host
    reduction** of one int over the job, so that a singular ``a`` raises ``sa.linalg.LinAlgError`` on every
    process, naming the first one's batch index and device). A split Hermitian positive-definite ``a``: the 2-D
    Cholesky, ``b`` moved to rows over a's row axes (a relayout of b's own blocks), then forward and back
    substitution (per panel of width ``w`` one **reduce** and one **broadcast** of ``w·k`` elements); the
    result's rows are split like a's rows. Any other split ``a``: the replicated LU fallback (an allgather of
    each operand, ``ReplicatedFallbackWarning``).

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
        a, b = astype(a, dt), astype(b, dt)
    # b's batch dims in a's batch order

    order = [d for d in a.dims if d not in (rows, cols)]
    b = transpose(b, (*order, brow, bcol))
    xp = a.mesh.backend.xp
    k = b.sizes[bcol]
    n = a.sizes[rows]

    if n and k and is_split(a, rows, cols):
        out = spd_solve(a, b, rows, cols, brow, bcol)
        if out is not None:
            return out

    check = not a.mesh.backend.linalg_raises  # CuPy: test the result on the device (NumPy raises itself)

    def fn(sa_: Any, sb: Any) -> tuple[Any, Any]:
        if not (n and k):
            return xp.zeros(sb.shape, dtype=sb.dtype), False
        if not check:
            return xp.linalg.solve(sa_, sb), False
        # one more column of ones: finite unless a's LU has a zero pivot, whatever b holds (``_checks.lu_failed``)
        ones = xp.ones((*sb.shape[:-1], 1), dtype=sb.dtype)
        out = xp.linalg.solve(sa_, xp.concatenate([sb, ones], axis=-1))
        return xp.ascontiguousarray(out[..., :k]), lu_failed(xp, sa_, out[..., k:])

    outs = [((brow, bcol), {brow: n, bcol: k}, a.dtype)]
    fails = _singular("solve", a, rows, cols)
    return local_op([a, b], [(rows, cols), (brow, bcol)], fn, outs, "solve", _NOT_SPD, fails=fails)[0]
