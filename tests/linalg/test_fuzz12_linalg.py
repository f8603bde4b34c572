"""A differential fuzz, against NumPy, of the linalg functions on split arrays (round 12): every public function of
``xp.linalg``, through ``np.linalg`` (the protocols) and the named ``sa.linalg``, on stacks with split batch, row and
column dims (uneven and empty blocks; meshes 1, 2x2, 4, 2x2x2, 3x2), float32/float64/complex64/complex128 and size-0
matrices; singular inputs (``LinAlgError`` where NumPy raises, on every layout; ``det`` 0, ``cond`` inf); the
traffic of the split algorithms against their docstrings (CholeskyQR2: two allreduces of the ``n x n`` Gram matrix;
TSQR behind it: one allgather of ``n x n`` R factors; the 2-D Cholesky and the SPD solve/inv/slogdet: broadcasts,
alltoalls, reduces of panels, never a whole matrix); and gradients (``sa.grad``) against float64 central
differences on split layouts, complex included (JAX's convention: the cotangent of ``z = x + iy`` is
``dL/dx - i dL/dy``; complex parameters enter as two real ones), with ``eigh`` at repeated eigenvalues (finite, the
documented choice).

``eigh``/``eigvalsh`` read one triangle but differentiate as functions of a Hermitian matrix (their docstring: the
gradient is Hermitian, JAX's ``symmetrize_input`` convention): their finite differences move along Hermitian
directions.

``FUZZ12_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
Regressions of the bugs it found close the file.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

# ruff: noqa: B023 (the lambdas given _quiet() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ12_EXAMPLES"
DTYPES = ("float32", "float64", "complex64", "complex128")
SPLIT_MESHES = ({"row": 2, "col": 2}, {"p": 3, "q": 2})


def _pos(a: np.ndarray, mesh, layout) -> xp.Array:
    return as_kind(sa.asarray(a, dims=tuple(f"dim{k}" for k in range(a.ndim)), mesh=mesh, layout=layout), xp.Array)


def _random(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _h(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a.conj(), -1, -2)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _np(x) -> np.ndarray:
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _close(got, expected, tol: float) -> None:
    g, e = _np(got), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
    scale = float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0))
    np.testing.assert_allclose(g, e, rtol=tol, atol=tol * (1 + scale))


# ============================================================================ values against NumPy


@st.composite
def stacks(draw):
    """``(mesh, a, x, rng)``: a stack ``(batch..., m, n)`` (sizes 0 to 6, square half the time) on a test mesh in a
    random layout, and a seeded generator for the op's other operands."""
    mesh = draw(meshes())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    batch = draw(st.sampled_from([(), (), (2,), (3,), (0,), (2, 1)]))
    m = draw(st.integers(0, 6))
    n = m if draw(st.booleans()) else draw(st.integers(0, 6))
    dt = draw(st.sampled_from(DTYPES))
    a = _random(rng, (*batch, m, n), dt)
    x = _pos(a, mesh, draw(layouts(mesh, [f"dim{k}" for k in range(a.ndim)])))
    return mesh, a, x, rng


def _expected(fn):
    """NumPy's answer, or the exception it raises (a plain ``ValueError``: its reductions of nothing)."""
    try:
        return _quiet(fn)
    except ValueError as e:
        return e


def _tol(dt, k: int = 1, factor: float = 1.0) -> float:
    return 64 * max(1, k) * float(np.finfo(np.dtype(dt)).eps) * factor


def _abs_r(qr):
    """``|R|`` of a QR (unique up to the phases of its rows)."""
    return np.abs(_np(qr[1]))


def _svd_product(usv):
    u, s, vh = (_np(v) for v in usv)
    return (u[..., : s.shape[-1]] * s[..., None, :].astype(u.dtype)) @ vh[..., : s.shape[-1], :]


#: op -> (square only, what it makes of the input (sa side, NumPy side), the comparison: ``(got, a) -> None``)
def _hpd(a):
    n = a.shape[-1]
    return a @ _h(a) + n * np.eye(n, dtype=a.dtype)


def _herm(a):
    return (a + _h(a)) / 2


RECT_OPS = {
    "svdvals": (lambda x: xp.linalg.svdvals(x), lambda a: np.linalg.svd(a, compute_uv=False)),
    "np.svdvals": (lambda x: np.linalg.svdvals(x), lambda a: np.linalg.svd(a, compute_uv=False)),
    "np.svd_nouv": (lambda x: np.linalg.svd(x, compute_uv=False), lambda a: np.linalg.svd(a, compute_uv=False)),
    "pinv": (lambda x: xp.linalg.pinv(x), lambda a: np.linalg.pinv(a)),
    "np.pinv_rtol": (lambda x: np.linalg.pinv(x, rtol=0.3), lambda a: np.linalg.pinv(a, rtol=0.3)),
    "matrix_rank": (lambda x: xp.linalg.matrix_rank(x), lambda a: np.linalg.matrix_rank(a)),
    "np.matrix_rank_rtol": (lambda x: np.linalg.matrix_rank(x, rtol=0.4), lambda a: np.linalg.matrix_rank(a, rtol=0.4)),
    "trace": (lambda x: xp.linalg.trace(x, offset=1), lambda a: np.linalg.trace(a, offset=1)),
    "np.trace": (lambda x: np.linalg.trace(x, offset=-1), lambda a: np.linalg.trace(a, offset=-1)),
    "diagonal": (lambda x: xp.linalg.diagonal(x, offset=-1), lambda a: np.linalg.diagonal(a, offset=-1)),
    "np.norm": (lambda x: np.linalg.norm(x), lambda a: np.linalg.norm(a)),
    "np.norm_axis": (lambda x: np.linalg.norm(x, ord=3, axis=-2), lambda a: np.linalg.norm(a, ord=3, axis=-2)),
    "matrix_transpose": (lambda x: xp.linalg.matrix_transpose(x), lambda a: np.linalg.matrix_transpose(a)),
}
for _o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
    RECT_OPS[f"matrix_norm_{_o}"] = (
        lambda x, o=_o: xp.linalg.matrix_norm(x, ord=o, keepdims=True),
        lambda a, o=_o: np.linalg.matrix_norm(a, ord=o, keepdims=True),
    )
    RECT_OPS[f"np.norm_{_o}"] = (
        lambda x, o=_o: np.linalg.norm(x, ord=o, axis=(-2, -1)),
        lambda a, o=_o: np.linalg.norm(a, ord=o, axis=(-2, -1)),
    )
for _o in (0, 1, 2, 3, 0.5, -1, math.inf, -math.inf):
    RECT_OPS[f"vector_norm_{_o}"] = (
        lambda x, o=_o: xp.linalg.vector_norm(x, ord=o, axis=-1),
        lambda a, o=_o: np.linalg.vector_norm(a, ord=o, axis=-1),
    )

SQUARE_OPS = {
    "det": (lambda x: xp.linalg.det(x), lambda a: np.linalg.det(a)),
    "np.det": (lambda x: np.linalg.det(x), lambda a: np.linalg.det(a)),
    "slogdet": (lambda x: tuple(xp.linalg.slogdet(x)), lambda a: tuple(np.linalg.slogdet(a))),
    "inv": (lambda x: xp.linalg.inv(x), lambda a: np.linalg.inv(a)),
    "np.inv": (lambda x: np.linalg.inv(x), lambda a: np.linalg.inv(a)),
    "matrix_power_-2": (lambda x: xp.linalg.matrix_power(x, -2), lambda a: np.linalg.matrix_power(a, -2)),
    "np.matrix_power_3": (lambda x: np.linalg.matrix_power(x, 3), lambda a: np.linalg.matrix_power(a, 3)),
    "matrix_power_0": (lambda x: xp.linalg.matrix_power(x, 0), lambda a: np.linalg.matrix_power(a, 0)),
}
for _o in (None, "fro", 1, -1, math.inf, -math.inf):
    SQUARE_OPS[f"cond_{_o}"] = (lambda x, o=_o: xp.linalg.cond(x, o), lambda a, o=_o: np.linalg.cond(a, o))
# inputs made Hermitian (positive definite): the sa side builds them from x with the namespace's own ops
HERM_OPS = {
    "cholesky": (lambda h: xp.linalg.cholesky(h), lambda a: np.linalg.cholesky(a)),
    "np.cholesky_upper": (lambda h: np.linalg.cholesky(h, upper=True), lambda a: np.linalg.cholesky(a, upper=True)),
    "eigvalsh": (lambda h: xp.linalg.eigvalsh(h), lambda a: np.linalg.eigvalsh(a)),
    "np.eigh_values": (lambda h: np.linalg.eigh(h)[0], lambda a: np.linalg.eigh(a)[0]),
    "solve_spd": (lambda h: xp.linalg.solve(h, h[..., :1]), lambda a: np.linalg.solve(a, a[..., :1])),
    "inv_spd": (lambda h: xp.linalg.inv(h), lambda a: np.linalg.inv(a)),
    "slogdet_spd": (lambda h: xp.linalg.slogdet(h)[1], lambda a: np.linalg.slogdet(a)[1]),
}
FACTOR_OPS = ("qr_reduced", "qr_complete", "svd_reduced", "svd_full", "eigh", "eig", "eigvals", "solve")
ALL_OPS = sorted([*RECT_OPS, *SQUARE_OPS, *HERM_OPS, *FACTOR_OPS])


def _factor_case(op: str, x, a: np.ndarray, rng, tol: float) -> None:
    """The factorizations, compared through what is unique: products, ``|R|``, values, shapes and dtypes."""
    if op.startswith("qr"):
        mode = op[3:]
        got = _quiet(lambda: xp.linalg.qr(x, mode=mode))
        exp = np.linalg.qr(a, mode=mode)
        for g, e in zip(got, exp):
            assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        _close(np.abs(_np(got[1])), np.abs(exp[1]), tol)
        _close(_np(got[0]) @ _np(got[1]), a, tol)
    elif op.startswith("svd"):
        full = op == "svd_full"
        got = _quiet(lambda: np.linalg.svd(x, full_matrices=full))
        exp = np.linalg.svd(a, full_matrices=full)
        for g, e in zip(got, exp):
            assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        _close(got[1], exp[1], tol)
        _close(_svd_product(got), a, tol)
    elif op == "eigh":
        h = _herm(a)
        w, v = _quiet(lambda: xp.linalg.eigh((x + xp.conj(xp.linalg.matrix_transpose(x))) / 2))
        ew = np.linalg.eigvalsh(h)
        _close(w, ew, tol)
        vv = _np(v)
        _close((vv * _np(w)[..., None, :].astype(vv.dtype)) @ _h(vv), h, tol)
    elif op in ("eig", "eigvals"):
        cdt = np.result_type(a.dtype, np.complex64)
        got = _quiet(lambda: np.linalg.eig(x)[0] if op == "eig" else xp.linalg.eigvals(x))
        g = _np(got)
        assert g.dtype == cdt and g.shape == a.shape[:-1], (g.dtype, g.shape)
        e = np.linalg.eigvals(a).astype(cdt)
        _close(np.sort_complex(g.reshape(-1)), np.sort_complex(e.reshape(-1)), tol * 100)
    else:  # solve, with a right-hand side of another layout (and a vector one: the standard's (M,))
        b = _random(rng, (*a.shape[:-1], 2), a.dtype.name)
        bx = _pos(b, x.mesh, {})
        _close(_quiet(lambda: xp.linalg.solve(x, bx)), np.linalg.solve(a, b), tol * 1000)
        if a.ndim == 2:
            _close(_quiet(lambda: np.linalg.solve(x, bx[:, 0])), np.linalg.solve(a, b[:, 0]), tol * 1000)


@fuzz(60, ENV)
@given(stacks(), st.sampled_from(ALL_OPS))
def test_fuzz_linalg_against_numpy(case, op):
    """Each function's value, shape and dtype are NumPy's on the gathered result, for every layout, dtype and size
    (0 included); square-only functions get square matrices, the Hermitian ones ``a a^H + n I``."""
    mesh, a, x, rng = case
    m, n = a.shape[-2:]
    tol = _tol(a.dtype, max(m, n), 10)
    if op in RECT_OPS:
        sa_fn, np_fn = RECT_OPS[op]
        sa_call, exp = (lambda: sa_fn(x)), _expected(lambda: np_fn(a))
    else:
        if m != n:  # square-only functions: the stack's leading square
            k = min(m, n)
            a = np.ascontiguousarray(a[..., :k, :k])
            x = x[..., :k, :k]
            m = n = k
        if op in FACTOR_OPS:
            _factor_case(op, x, a, rng, tol)
            return
        if op in HERM_OPS:
            sa_fn, np_fn = HERM_OPS[op]
            eye = xp.eye(n, dtype=x.dtype, device=mesh)
            h = x @ xp.conj(xp.linalg.matrix_transpose(x)) + n * eye
            sa_call, exp = (lambda: sa_fn(h)), _expected(lambda: np_fn(_hpd(a)))
            tol *= 10
        else:
            sa_fn, np_fn = SQUARE_OPS[op]
            if op.startswith("cond") and n == 0:  # NumPy's LinAlgError, a typed one here
                with pytest.raises(sa.linalg.LinAlgError, match="empty"):
                    _quiet(lambda: sa_fn(x))
                with pytest.raises(np.linalg.LinAlgError):
                    np_fn(a)
                return
            sa_call, exp = (lambda: sa_fn(x)), _expected(lambda: np_fn(a))
            tol *= 1000 if op.startswith(("inv", "np.inv", "matrix_power", "cond")) else 10
    if isinstance(exp, Exception):  # NumPy refuses (a reduction of nothing): a typed error of the same kind
        with pytest.raises(type(exp)) as info:
            _quiet(sa_call)
        assert isinstance(info.value, sa.ShardArrayError), info.value
        return
    got = _quiet(sa_call)
    got = got if isinstance(got, tuple) else (got,)
    exp = exp if isinstance(exp, tuple) else (exp,)
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        _close(g, e, tol)


def test_named_linalg_on_any_dims_order():
    """``sa.linalg`` on named dims: the matrix dims anywhere (batch last), either order, split or not."""
    rng = np.random.default_rng(3)
    mesh = _mesh({"p": 3, "q": 2})
    X = rng.standard_normal((4, 3, 4)) + 4 * np.eye(4)[:, None, :]  # dims (i, b, j)
    M = np.moveaxis(X, 1, 0)
    Mt = np.swapaxes(M, -1, -2)
    P = M @ Mt + 4 * np.eye(4)
    for lay in ({}, {"i": "p"}, {"b": "p", "j": "q"}, {"i": "p", "j": "q"}, {"j": ("p", "q")}):
        x = sa.asarray(X, dims=("i", "b", "j"), mesh=mesh, layout=lay)
        p = sa.asarray(np.moveaxis(P, 0, 1), dims=("i", "b", "j"), mesh=mesh, layout=lay)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sa.GatherWarning)
            _close(sa.linalg.inv(x, ("j", "i")).transpose("b", "j", "i"), np.linalg.inv(Mt), 1e-10)
            _close(sa.linalg.det(x, ("j", "i")), np.linalg.det(M), 1e-10)
            _close(sa.linalg.cholesky(p, ("j", "i")).transpose("b", "j", "i"), np.linalg.cholesky(P), 1e-10)
            _close(sa.linalg.svdvals(x, ("j", "i")), np.linalg.svd(M, compute_uv=False), 1e-10)
            _close(sa.linalg.eigvalsh(p, ("j", "i")), np.linalg.eigvalsh(P), 1e-10)
            _close(sa.linalg.matrix_norm(x, ("j", "i"), ord=1), np.linalg.matrix_norm(Mt, ord=1), 1e-10)
            _close(sa.linalg.matrix_norm(x, ("j", "i"), ord=-2), np.linalg.matrix_norm(Mt, ord=-2), 1e-10)
            _close(sa.linalg.pinv(x, ("i", "j")).transpose("b", "j", "i"), np.linalg.pinv(M), 1e-10)
            _close(sa.linalg.slogdet(x, ("j", "i"))[1], np.linalg.slogdet(M)[1], 1e-10)
            b = sa.asarray(rng.standard_normal((3, 4, 2)), dims=("b", "j", "k"), mesh=mesh, layout={"k": "q"})
            got = sa.linalg.solve(x, b, ("i", "j"), b_dims=("j", "k")).transpose("b", "j", "k")
            _close(got, np.linalg.solve(M, b.numpy()), 1e-10)


# ============================================================================ singular input


def _singular_stack(rng, batch: tuple, n: int, dt: str, which: int) -> np.ndarray:
    """A stack of random matrices whose matrix ``which`` (flat) has a zero row (a random one): its LU meets an exact
    zero pivot in every dtype (NumPy's ``inv``/``solve`` raise on it)."""
    a = _random(rng, (*batch, n, n), dt)
    flat = a.reshape(-1, n, n)
    flat[which, int(rng.integers(n))] = 0
    return a


@st.composite
def singular_cases(draw):
    mesh = _mesh(draw(st.sampled_from(SPLIT_MESHES)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    batch = draw(st.sampled_from([(), (2,), (3,)]))
    n = draw(st.integers(2, 6))
    dt = draw(st.sampled_from(DTYPES))
    which = draw(st.integers(0, max(0, math.prod(batch) - 1)))
    a = _singular_stack(rng, batch, n, dt, which)
    x = _pos(a, mesh, draw(layouts(mesh, [f"dim{k}" for k in range(a.ndim)])))
    return a, x, which


@fuzz(30, ENV)
@given(singular_cases(), st.sampled_from(["inv", "solve", "det", "slogdet", "cond", "cholesky", "matrix_power"]))
def test_fuzz_singular_matrices(case, op):
    """A singular matrix anywhere in a split stack: ``inv``/``solve``/``matrix_power(-1)`` raise
    ``sa.linalg.LinAlgError`` (a ``numpy.linalg.LinAlgError``) on every layout, never NaN silently; ``det`` is 0,
    ``slogdet`` ``(0, -inf)``, ``cond`` inf (the others NumPy's); ``cholesky`` of a matrix that is not positive
    definite raises."""
    a, x, which = case
    n = a.shape[-1]
    tol = _tol(a.dtype, n, 100)
    if op in ("inv", "solve", "matrix_power", "cholesky"):
        call = {
            "inv": lambda: xp.linalg.inv(x),
            "solve": lambda: xp.linalg.solve(x, x[..., :1]),
            "matrix_power": lambda: np.linalg.matrix_power(x, -1),
            "cholesky": lambda: xp.linalg.cholesky(x),  # (random: not Hermitian, not positive definite)
        }[op]
        with pytest.raises(np.linalg.LinAlgError) as info:
            _quiet(lambda: _np(call()))
        assert isinstance(info.value, sa.linalg.LinAlgError), type(info.value)
        return
    if op == "det":
        got = _np(_quiet(lambda: xp.linalg.det(x))).reshape(-1)
        assert got[which] == 0, got
        _close(got, np.linalg.det(a).reshape(-1), tol)
    elif op == "slogdet":
        s, la = _quiet(lambda: xp.linalg.slogdet(x))
        assert _np(s).reshape(-1)[which] == 0 and _np(la).reshape(-1)[which] == -np.inf
        es, ela = np.linalg.slogdet(a)
        _close(s, es, tol)
        _close(la, ela, tol)
    else:
        for p in ("fro", 1, -1, math.inf, -math.inf):
            got = _np(_quiet(lambda: xp.linalg.cond(x, p))).reshape(-1)
            exp = _quiet(lambda: np.linalg.cond(a, p)).reshape(-1)
            assert np.isinf(got[which]) and np.isinf(exp[which])
            keep = np.arange(got.size) != which
            np.testing.assert_allclose(got[keep], exp[keep], rtol=1e-3 if a.dtype.itemsize <= 8 else 1e-8)


# ============================================================================ traffic of the split algorithms


def _logged(fn):
    """``(fn(), records)`` with every ``sa.GatherWarning`` an error (no gather is expected here)."""
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", sa.GatherWarning)
        out = fn()
        _ = [_np(o) for o in (out if isinstance(out, tuple) else (out,))]
    return out, [r for r in log.records if r.group_size > 1]


@st.composite
def tall_cases(draw):
    """A stack of tall matrices (``m`` 12 to 30, ``n`` 1 to 4) with its rows split over one or two axes (the batch
    over another), of condition number 10 (CholeskyQR2 suffices) or ``1e12`` (float64: TSQR behind it)."""
    mesh = _mesh(draw(st.sampled_from(SPLIT_MESHES)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ax = mesh.axis_names
    batch = draw(st.sampled_from([(), (2,)]))
    m, n = draw(st.integers(12, 30)), draw(st.integers(1, 4))
    ill = draw(st.booleans())
    u, _ = np.linalg.qr(rng.standard_normal((*batch, m, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    a = (u * np.logspace(0, -12 if ill else -1, n)) @ v.T
    r = f"dim{a.ndim - 2}"
    lay = draw(st.sampled_from([{r: ax}, {r: ax[:1]}, {r: ax[1:]}, {r: ax[:1], "dim0": ax[1:]} if batch else {r: ax}]))
    return a, _pos(a, mesh, lay), ill and n > 1


@fuzz(25, ENV)
@given(tall_cases(), st.sampled_from(["qr", "svdvals", "svd"]))
def test_fuzz_tall_qr_traffic(case, op):
    """A row-split tall stack: two allreduces of the ``n x n`` Gram matrix per matrix (CholeskyQR2) and, where its
    check fails, one allgather of the ``n x n`` R factors (TSQR): nothing of size ``m`` moves, no gather warns; ``Q``
    orthonormal, ``Q R = A``, the singular values NumPy's."""
    a, x, ill = case
    n = a.shape[-1]
    per = math.prod(a.shape[:-2]) * n * n  # one n x n per matrix of the stack
    call = {"qr": lambda: xp.linalg.qr(x), "svdvals": lambda: xp.linalg.svdvals(x)}.get(
        op, lambda: xp.linalg.svd(x, full_matrices=False)
    )
    out, recs = _logged(call)
    assert all(r.elements <= per for r in recs), recs
    ops = [r.op for r in recs]
    assert ops[:2] == ["allreduce", "allreduce"] and set(ops[2:]) <= {"allgather"} and len(ops) <= 3, recs
    if ill:  # κ = 1e12: the Gram matrix's Cholesky cannot be trusted, TSQR answers
        assert ops[2:] == ["allgather"], recs
    tol = 1e-10
    if op == "qr":
        q, r = _np(out[0]), _np(out[1])
        _close(q @ r, a, tol)
        _close(_h(q) @ q, np.broadcast_to(np.eye(n), (*a.shape[:-2], n, n)), tol)
    else:
        s = out if op == "svdvals" else out[1]
        _close(s, np.linalg.svd(a, compute_uv=False), tol)


@fuzz(10, ENV)
@given(st.sampled_from(SPLIT_MESHES), st.integers(5, 11), st.sampled_from(["float64", "complex128"]), st.integers(0, 9))
def test_fuzz_cholesky_2d_traffic(shape, n, dt, seed):
    """A Hermitian positive-definite matrix split in 2-D: ``cholesky``, ``inv``, ``solve``, ``slogdet`` and ``det``
    take the distributed paths (broadcasts, alltoalls, reduces, allreduces, allgathers of right-hand sides): no
    ``ReplicatedFallbackWarning``, no collective of a whole matrix; values NumPy's."""
    mesh = _mesh(shape)
    rng = np.random.default_rng(seed)
    g = _random(rng, (n, n), dt)
    p = g @ _h(g) + n * np.eye(n)
    b = _random(rng, (n, 2), dt)
    ax = mesh.axis_names
    x = _pos(p, mesh, {"dim0": ax[0], "dim1": ax[1]})
    bx = _pos(b, mesh, {"dim0": ax[0]})
    for fn, exp in (
        (lambda: xp.linalg.cholesky(x), np.linalg.cholesky(p)),
        (lambda: xp.linalg.inv(x), np.linalg.inv(p)),
        (lambda: xp.linalg.solve(x, bx), np.linalg.solve(p, b)),
        (lambda: xp.linalg.slogdet(x)[1], np.linalg.slogdet(p)[1]),
        (lambda: xp.linalg.det(x), np.linalg.det(p)),
    ):
        out, recs = _logged(fn)
        assert {r.op for r in recs} <= {"broadcast", "alltoall", "reduce", "allreduce", "allgather"}, recs
        assert all(r.elements < n * n for r in recs), recs
        _close(out, exp, 1e-9)


def test_split_fallbacks_warn():
    """Where a split matrix is gathered (LU of a general matrix, ``eigh``, ``eig``), a ``GatherWarning`` (the
    ``ReplicatedFallbackWarning``) names it."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(1).standard_normal((6, 6))
    x = _pos(a, mesh, {"dim0": "row", "dim1": "col"})
    for fn in (xp.linalg.inv, xp.linalg.det, xp.linalg.eigvalsh, xp.linalg.eigvals):
        with pytest.warns(sa.GatherWarning, match="6"):
            fn(x)


# ============================================================================ gradients


def _grad_check(loss, a: np.ndarray, mesh, lay, eps: float = 1e-6, rtol: float = 1e-5) -> None:
    """``sa.value_and_grad`` of ``loss`` at ``a`` (complex: two real parameters, ``re + 1j * im``) against central
    differences along two random directions."""
    cx = a.dtype.kind == "c"

    def params(v):
        return (_pos(v.real.copy(), mesh, lay), _pos(v.imag.copy(), mesh, lay)) if cx else _pos(v, mesh, lay)

    def f(p):
        return loss(p[0] + 1j * p[1]) if cx else loss(p)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.GatherWarning)
        _, g = sa.value_and_grad(f)(params(a))
        g = g[0].numpy() + 1j * g[1].numpy() if cx else g.numpy()
        rng = np.random.default_rng(1)
        for _ in range(2):
            v = rng.standard_normal(a.shape) + (1j * rng.standard_normal(a.shape) if cx else 0)
            up, dn = float(f(params(a + eps * v))), float(f(params(a - eps * v)))
            fd = (up - dn) / (2 * eps)
            an = float(np.sum(g.real * v.real + (g.imag * v.imag if cx else 0)))
            np.testing.assert_allclose(an, fd, rtol=rtol, atol=1e-6 * (1 + abs(up)))


def _re(y):
    return xp.real(y) if y.dtype.kind == "c" else y


def _he(x):
    return (x + xp.conj(xp.linalg.matrix_transpose(x))) * 0.5


def _u_vh(x):
    u, _, vh = xp.linalg.svd(x, full_matrices=False)
    return u @ vh


def _chain(x, w):
    """``[x^T, w, x^T]`` of the stacks' first matrices (``multi_dot`` takes 2-D arrays)."""
    x, w = (x, w) if x.ndim == 2 else (x[0], w[0])
    return [xp.linalg.matrix_transpose(x), w, xp.linalg.matrix_transpose(x)]


#: name -> (complex too, input kind, loss of (x, weights))
GRAD_OPS = {
    "inv": (True, "square", lambda x, w: xp.sum(_re(xp.linalg.inv(x) * w))),
    "det": (True, "square", lambda x, w: xp.sum(_re(xp.linalg.det(x) * w[..., 0, 0]))),
    "slogdet": (True, "square", lambda x, w: xp.sum(xp.linalg.slogdet(x)[1])),
    "slogdet_sign": (True, "square", lambda x, w: xp.sum(_re(xp.linalg.slogdet(x)[0] * w[..., 0, 0]))),
    "solve": (True, "square", lambda x, w: xp.sum(_re(xp.linalg.solve(x, w) * w))),
    "matrix_power_-2": (True, "square", lambda x, w: xp.sum(_re(xp.linalg.matrix_power(x, -2) * w))),
    "eigvalsh": (True, "herm", lambda x, w: xp.sum(xp.linalg.eigvalsh(_he(x)) * _re(w[..., 0]))),
    "eigh_vectors": (True, "herm", lambda x, w: xp.sum(xp.abs(xp.linalg.eigh(_he(x))[1]) ** 2 * _re(w))),
    "eigvals": (True, "square", lambda x, w: xp.sum(_re(xp.linalg.eigvals(x) * w[..., 0]))),
    "cholesky": (True, "hpd", lambda x, w: xp.sum(_re(xp.linalg.cholesky(x) * w))),
    "cholesky_upper": (True, "hpd", lambda x, w: xp.sum(_re(xp.linalg.cholesky(x, upper=True) * w))),
    "svdvals": (True, "tall", lambda x, w: xp.sum(xp.linalg.svdvals(x) * _re(w[..., 0, :]))),
    "svd_uvh": (False, "tall", lambda x, w: xp.sum(_u_vh(x) * w)),
    "qr": (True, "tall", lambda x, w: xp.sum(_re(xp.linalg.qr(x)[0] * w)) + xp.sum(_re(xp.linalg.qr(x)[1]))),
    "pinv": (False, "tall", lambda x, w: xp.sum(xp.linalg.pinv(x) * xp.linalg.matrix_transpose(w))),
    "matrix_norm_nuc": (True, "tall", lambda x, w: xp.sum(xp.linalg.matrix_norm(x, ord="nuc"))),
    "matrix_norm_2": (True, "tall", lambda x, w: xp.sum(xp.linalg.matrix_norm(x, ord=2))),
    "matrix_norm_fro": (True, "tall", lambda x, w: xp.sum(xp.linalg.matrix_norm(x, ord="fro"))),
    "matrix_norm_1": (True, "tall", lambda x, w: xp.sum(xp.linalg.matrix_norm(x, ord=1))),
    "vector_norm_3": (True, "tall", lambda x, w: xp.sum(xp.linalg.vector_norm(x, ord=3, axis=-2))),
    "cond": (True, "square", lambda x, w: xp.sum(xp.linalg.cond(x))),
    "cond_fro": (True, "square", lambda x, w: xp.sum(xp.linalg.cond(x, "fro"))),
    "trace": (True, "tall", lambda x, w: xp.sum(_re(xp.linalg.trace(x, offset=-1) * w[..., 0, 0]))),
    "multi_dot": (True, "tall", lambda x, w: xp.sum(_re(np.linalg.multi_dot(_chain(x, w))))),
}


@fuzz(30, ENV)
@given(meshes(), st.sampled_from(sorted(GRAD_OPS)), st.booleans(), st.integers(0, 2**32 - 1), st.data())
def test_fuzz_linalg_grads(mesh, op, cx, seed, data):
    """``sa.grad`` of each differentiable function against float64 central differences on split layouts (complex
    where its VJP takes complex matrices; the others refuse them with a typed error, checked too)."""
    can_complex, kind, loss = GRAD_OPS[op]
    rng = np.random.default_rng(seed)
    dt = "complex128" if cx else "float64"
    batch = data.draw(st.sampled_from([(), (2,)]))
    n = data.draw(st.integers(2, 4))
    m = n + data.draw(st.integers(0, 2)) if kind == "tall" else n
    a = _random(rng, (*batch, m, n), dt)
    if kind in ("square", "herm"):
        a = a + 3 * np.eye(n)
    elif kind == "hpd":
        a = a @ _h(a) + n * np.eye(n)
    w = _pos(_random(rng, (*batch, m, n), dt), mesh, {})
    lay = data.draw(layouts(mesh, [f"dim{k}" for k in range(a.ndim)]))
    if cx and not can_complex:
        with pytest.raises((sa.DTypeError, sa.TapeError)):
            _quiet(lambda: _grad_check(lambda x: loss(x, w), a, mesh, lay))
        return
    _grad_check(lambda x: loss(x, w), a, mesh, lay)


@pytest.mark.parametrize("lay", [{}, {"dim0": "row"}, {"dim0": "row", "dim1": "col"}])
def test_eigh_grad_at_repeated_eigenvalues(lay):
    """At a repeated eigenvalue (JAX: NaN for the vectors' derivative) the gradient is finite, as documented: exact for
    the values' symmetric functions (the trace: ``I``) and for the projector onto the repeated eigenspace."""
    mesh = _mesh({"row": 2, "col": 2})
    q, _ = np.linalg.qr(np.random.default_rng(5).standard_normal((4, 4)))
    a = q @ np.diag([1.0, 1.0, 3.0, 5.0]) @ q.T
    x = _pos(a, mesh, lay)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.GatherWarning)
        g = sa.grad(lambda p: xp.sum(xp.linalg.eigvalsh(p)))(x).numpy()
        np.testing.assert_allclose(g, np.eye(4), atol=1e-12)
        g2 = sa.grad(lambda p: xp.sum(xp.linalg.eigh(_he(p))[1] ** 2 * xp.arange(4.0, device=mesh)))(x).numpy()
        assert np.all(np.isfinite(g2)), g2
        # the projector onto the eigenspace of 1: a function of the subspace alone, exact
        weights = xp.asarray(a, device=mesh)

        def projector(p):
            v = xp.linalg.eigh(_he(p))[1][:, :2]
            return xp.sum((v @ xp.linalg.matrix_transpose(v)) * weights)

        _grad_check(projector, a, mesh, lay)


# ============================================================================ regressions


def test_cond_of_a_singular_matrix_is_inf_in_every_norm():
    """Was: ``cond(x, p)`` for p in fro/1/-1/inf/-inf raised ``LinAlgError`` on a stack holding a singular matrix
    (``inv``'s); NumPy computes the inverses with errors ignored and answers inf for that matrix alone."""
    rng = np.random.default_rng(0)
    a = _singular_stack(rng, (3,), 4, "float64", 1)
    mesh = _mesh({"row": 2, "col": 2})
    for lay in ({}, {"dim0": "row"}, {"dim1": "row", "dim2": "col"}):
        x = _pos(a, mesh, lay)
        for p in ("fro", 1, -1, math.inf, -math.inf):
            got = _quiet(lambda: np.linalg.cond(x, p)).numpy()
            exp = np.linalg.cond(a, p)
            assert np.isinf(got[1]) and np.isinf(exp[1])
            np.testing.assert_allclose(got[[0, 2]], exp[[0, 2]], rtol=1e-10)


def test_cond_of_empty_matrices_raises_linalgerror():
    """Was: ``cond`` of a 0x0 matrix raised ``sa.ArgumentError``; NumPy raises ``LinAlgError`` (a stack of no
    matrices is fine: an empty result)."""
    mesh = _mesh({"row": 2, "col": 2})
    for shape in ((0, 0), (2, 0, 0), (3, 0)):
        x = _pos(np.zeros(shape), mesh, {"dim0": "row"})
        with pytest.raises(np.linalg.LinAlgError, match="empty"):
            np.linalg.cond(x)
        with pytest.raises(sa.linalg.LinAlgError, match="empty"):
            xp.linalg.cond(x, "fro")
    got = xp.linalg.cond(_pos(np.zeros((0, 3, 3)), mesh, {"dim1": "row"}))
    assert got.shape == (0,) and got.dtype == np.float64


@pytest.mark.parametrize(
    "shape,lay",
    [
        ({"d": 1}, {}),
        ({"row": 2, "col": 2}, {"dim1": "row", "dim2": "col"}),  # the 2-D Cholesky; QR: an alltoall, then TSQR
        ({"p": 3, "q": 2}, {"dim0": "q", "dim1": "p"}),  # a split batch and rows
    ],
)
def test_complex_cholesky_qr_eigh_grads(shape, lay):
    """Was: the gradients of ``cholesky``, ``qr`` and ``eigh``'s vectors refused complex matrices (``DTypeError``,
    real formulas only); now JAX's convention on every layout, ``upper=True`` and both QR factors included."""
    mesh = _mesh(shape)
    rng = np.random.default_rng(11)
    g = _random(rng, (2, 5, 5), "complex128")
    hpd = g @ _h(g) + 5 * np.eye(5)
    tall = _random(rng, (2, 7, 4), "complex128")
    w5, w7, w4 = (_pos(_random(rng, s, "complex128"), mesh, {}) for s in ((2, 5, 5), (2, 7, 4), (2, 4, 4)))
    _grad_check(lambda x: xp.sum(xp.real(xp.linalg.cholesky(x) * w5)), hpd, mesh, lay)
    _grad_check(lambda x: xp.sum(xp.imag(xp.linalg.cholesky(x, upper=True) * w5)), hpd, mesh, lay)
    _grad_check(lambda x: xp.sum(xp.real(xp.linalg.qr(x).Q * w7)), tall, mesh, lay)
    _grad_check(lambda x: xp.sum(xp.imag(xp.linalg.qr(x).R * w4)), tall, mesh, lay)
    # eigh's vectors: a loss of their moduli and one of a projector (both independent of LAPACK's phases)
    herm = (hpd + _h(hpd)) / 2
    _grad_check(lambda x: xp.sum(xp.abs(xp.linalg.eigh(_he(x))[1]) ** 2 * xp.real(w5)), herm, mesh, lay)

    def projector(x):
        v = xp.linalg.eigh(_he(x))[1][..., :, :2]
        return xp.sum(xp.real((v @ xp.conj(xp.linalg.matrix_transpose(v))) * w5))

    _grad_check(projector, herm, mesh, lay)
