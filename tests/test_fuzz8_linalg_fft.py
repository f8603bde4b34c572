"""A differential fuzz, against NumPy, of ``xp.linalg`` and ``xp.fft`` on split arrays: matrices and stacks of
matrices whose row, column and batch dims are split in random layouts on random meshes (1, 2x2, 4, 2x2x2, 3x2),
uneven and empty blocks (0 rows, 0 columns, an empty batch), tall, wide and square, float32/float64/complex64/
complex128, rank-deficient, ill-conditioned and singular matrices, NaN and inf.

Each case checks dtype and shape against NumPy on the gathered value, values to a tolerance scaled by the dtype, the
size and (for inverses and solves) the condition number, factorizations by their invariants (``Q R == A`` with ``Q``
orthonormal and ``R``'s diagonal real and non-negative, as ``qr``'s docstring promises; ``U S Vh == A``), that
NumPy's ``LinAlgError`` is the library's typed ``sa.linalg.LinAlgError`` (never NaN handed back silently), and that
no op gathers a split array silently: ``sa.GatherWarning`` is an error except the documented replicated fallbacks
(``ReplicatedFallbackWarning``), and the comm log holds no allgather larger than the small factor the algorithm
gathers (TSQR's ``n x n`` R factors, wide QR's ``m x m`` block). Gradients of the differentiable ops on split
inputs are checked against float64 central differences. Regressions of the bugs it found close the file.

``FUZZ8_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
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

# ruff: noqa: B023 (the lambdas given run() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's and the backend's, on NaN and inf)


# --------------------------------------------------------------------------------------------- data

DTYPES = ("float32", "float64", "complex64", "complex128")
SHAPES = [(0, 3), (3, 0), (1, 5), (5, 1), (4, 4), (9, 2), (2, 9), (7, 7), (6, 3), (3, 3), (12, 4), (1, 1)]
BATCHES = [(), (), (0,), (2,), (3,)]


def _single(dt) -> bool:
    return np.dtype(dt) in (np.float32, np.complex64)


def _eps(dt) -> float:
    return float(np.finfo(np.dtype(dt)).eps)


def _random(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _spoil(rng: np.random.Generator, a: np.ndarray, kind: str) -> np.ndarray:
    """``a`` made rank deficient, ill-conditioned, zero, or holding one NaN or inf, as ``kind`` says."""
    a = a.copy()
    if kind == "singular" and a.shape[-1] > 1:
        a[..., :, 1] = a[..., :, 0] * 2
    elif kind == "ill" and a.shape[-1] > 1:
        a[..., :, 1] = a[..., :, 0] + 1e-9 * a[..., :, 1]
    elif kind == "zero":
        a[...] = 0
    elif kind in ("nan", "inf") and a.size:
        a[tuple(int(rng.integers(s)) for s in a.shape)] = np.nan if kind == "nan" else np.inf
    return a


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout (every dim may be split, uneven or empty)."""
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), xp.Array)
    assert x.dtype == a.dtype and x.shape == a.shape
    return x


@st.composite
def matrices(draw, kinds=("gen",), square=False, dtypes=DTYPES):
    """``(mesh, a, x, kind)``: a host stack of matrices ``a`` and ``x``, the same split on a random mesh."""
    mesh = draw(meshes())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m, n = draw(st.sampled_from(SHAPES))
    if square:
        n = m = max(m, n) if draw(st.booleans()) else min(m, n)
    dt = draw(st.sampled_from(dtypes))
    kind = draw(st.sampled_from(kinds))
    a = _random(rng, (*draw(st.sampled_from(BATCHES)), m, n), dt)
    if kind in ("spd", "herm"):
        a = (a @ np.conj(np.swapaxes(a, -1, -2)) + (1 if kind == "spd" else -1) * n * np.eye(n)).astype(dt)
    a = _spoil(rng, a, kind)
    return mesh, a, draw(placed(a, mesh)), kind


# --------------------------------------------------------------------------------------------- checks


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def run(np_call, xp_call, fallback: bool = False, gather: int = 0, raises_more: bool = False, empty: bool = False):
    """``(got, expected)``: NumPy's ``np_call()`` and ``xp_call()``, or None where NumPy raised.

    Where NumPy raises ``LinAlgError`` the namespace raises ``sa.linalg.LinAlgError`` (any other NumPy error: an
    error). ``raises_more``: the namespace may also raise ``sa.linalg.LinAlgError`` where NumPy hands back NaN (a
    documented choice, e.g. ``eigh`` of a matrix holding inf). ``fallback``: the documented replicated fallback
    may warn; any other ``GatherWarning`` is an error, and no allgather moves more than ``gather`` elements.
    ``empty``: the operand holds no elements (a split matrix dim still takes, and says, the fallback there).
    """
    try:
        expected = _quiet(np_call)
    except np.linalg.LinAlgError:
        with pytest.raises(sa.linalg.LinAlgError):
            _quiet(xp_call)
        return None
    except Exception:
        with pytest.raises(Exception):  # noqa: B017 (NumPy's error, whichever it is, is an error here too)
            _quiet(xp_call)
        return None
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", sa.GatherWarning)
        if fallback or empty:
            warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        try:
            got = xp_call()
        except sa.linalg.LinAlgError:
            if raises_more:
                return None
            raise
    if not fallback:
        big = [r for r in log.records if r.op == "allgather" and r.elements > gather]
        assert not big, big
    return got, expected


def same_meta(got, expected):
    """``got`` (an Array) has NumPy's ``expected``'s shape and dtype; returns its value."""
    assert type(got) is xp.Array, type(got)
    g, e = got.numpy(), np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    return g


def close(g, e, tol: float, scale: float | None = None):
    """Equal within ``tol`` relative to ``scale`` (default the largest finite ``|e|``); NaN where NumPy's is."""
    e = np.asarray(e)
    fin = np.isfinite(e)
    if scale is None:
        scale = float(np.max(np.abs(e[fin]), initial=0.0))
    np.testing.assert_allclose(g, e, rtol=tol, atol=tol * (1 + scale))


def _tol(dt, n: int, factor: float = 1.0) -> float:
    return 64 * max(1, n) * _eps(dt) * factor


def _eye_like(k: int, lead: tuple) -> np.ndarray:
    return np.broadcast_to(np.eye(k), (*lead, k, k))


def _mh(a: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(a, -1, -2))


def _factor_gather(a: np.ndarray) -> int:
    """The largest allgather TSQR / wide QR may do: the small ``k x k`` factors of every matrix of the stack."""
    m, n = a.shape[-2:]
    return max(1, math.prod(a.shape[:-2])) * max(1, min(m, n)) ** 2 * 2


# =============================================================================================== QR, SVD


@fuzz(100)
@given(
    matrices(kinds=("gen", "gen", "singular", "ill", "zero", "nan", "inf")), st.sampled_from(["reduced", "complete"])
)
def test_fuzz_qr(case, mode):
    _, a, x, kind = case
    m, n = a.shape[-2:]
    out = run(
        lambda: np.linalg.qr(a, mode=mode),
        lambda: xp.linalg.qr(x, mode=mode),
        fallback=mode == "complete" and m > n,
        gather=_factor_gather(a),
        empty=not a.size,
    )
    if out is None:
        return
    (q, r), (eq, er) = out
    q, r = same_meta(q, eq), same_meta(r, er)
    if not np.all(np.isfinite(a)):
        assert not (np.all(np.isfinite(q)) and np.all(np.isfinite(r))), "a finite QR of a matrix holding NaN/inf"
        return
    t = _tol(a.dtype, max(m, n))
    close(q @ r, a, t)
    assert np.array_equal(np.triu(r), r)
    d = np.diagonal(r, axis1=-2, axis2=-1)
    assert np.all(d.real >= 0) and np.all(d.imag == 0), d  # the docstring's promise: a non-negative real diagonal
    if kind == "gen" or m < n or mode == "complete":
        close(_mh(q) @ q, _eye_like(q.shape[-1], q.shape[:-2]), t)


@fuzz(100)
# (no inf: NumPy's gesdd can loop forever on a matrix holding one)
@given(matrices(kinds=("gen", "gen", "singular", "ill", "zero", "nan")), st.booleans())
def test_fuzz_svd(case, full):
    _, a, x, _kind = case
    m, n = a.shape[-2:]
    fin = np.all(np.isfinite(a))
    t = _tol(a.dtype, max(m, n))
    out = run(
        lambda: np.linalg.svd(a, full_matrices=full),
        lambda: xp.linalg.svd(x, full_matrices=full),
        fallback=full and m != n,
        gather=_factor_gather(a),
        empty=not a.size,
        raises_more=not fin,
    )
    if out is not None:
        (u, s, vh), (eu, es, evh) = out
        u, s, vh = same_meta(u, eu), same_meta(s, es), same_meta(vh, evh)
        if fin:
            close(s, es, t)
            k = s.shape[-1]
            close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, t)
            close(_mh(u) @ u, _eye_like(u.shape[-1], u.shape[:-2]), t)
    out = run(
        lambda: np.linalg.svd(a, compute_uv=False),
        lambda: xp.linalg.svdvals(x),
        gather=_factor_gather(a),
        empty=not a.size,
        raises_more=not fin,
    )
    if out is not None and fin:
        close(same_meta(*out), out[1], t)


@fuzz(80)
@given(matrices(kinds=("gen", "gen", "singular", "zero", "nan")))
def test_fuzz_pinv_rank_lstsq(case):
    mesh, a, x, _kind = case
    m, n = a.shape[-2:]
    fin = np.all(np.isfinite(a))
    t = _tol(a.dtype, max(m, n), 10)
    out = run(lambda: np.linalg.pinv(a), lambda: xp.linalg.pinv(x), gather=_factor_gather(a), empty=not a.size)
    if out is not None:
        g = same_meta(*out)
        if fin:
            close(g, out[1], t)
    out = run(
        lambda: np.linalg.matrix_rank(a), lambda: xp.linalg.matrix_rank(x), gather=_factor_gather(a), empty=not a.size
    )
    if out is not None and fin:
        np.testing.assert_array_equal(same_meta(*out), out[1])
    if a.ndim != 2:
        return
    rng = np.random.default_rng(m * 31 + n)
    b = _random(rng, (m, 2) if m % 2 else (m,), a.dtype.name)
    y = xp.asarray(b, device=mesh)
    out = run(lambda: np.linalg.lstsq(a, b), lambda: xp.linalg.lstsq(x, y), gather=_factor_gather(a), empty=not a.size)
    if out is None:
        return
    got, expected = out
    vals = [same_meta(g, e) for g, e in zip(got, expected)]
    if fin:
        close(vals[0], expected[0], t)
        close(vals[1], expected[1], t)
        assert int(vals[2]) == int(expected[2])


@fuzz(80)
@given(
    matrices(kinds=("gen", "gen", "zero", "nan")), st.sampled_from(["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
)
def test_fuzz_matrix_norm(case, ord):
    _, a, x, _kind = case
    svd = ord in (2, -2, "nuc")
    out = run(
        lambda: np.linalg.matrix_norm(a, ord=ord),
        lambda: xp.linalg.matrix_norm(x, ord=ord),
        gather=_factor_gather(a) if svd else 0,
        empty=not a.size,
        raises_more=svd,
    )
    if out is None:
        return
    g = same_meta(*out)
    if np.all(np.isfinite(a)):
        close(g, out[1], _tol(a.dtype, max(a.shape[-2:])))
    else:
        np.testing.assert_array_equal(np.isnan(g), np.isnan(out[1]))


@fuzz(80)
@given(st.data())
def test_fuzz_vector_norm(data):
    _, a, x, _kind = data.draw(matrices(kinds=("gen", "zero", "nan", "inf")))
    ord = data.draw(st.sampled_from([2, 1, 0, 3, -1, 0.5, math.inf, -math.inf]))
    axis = data.draw(st.sampled_from([None, -1, 0, (-2, -1), (0, -1)]))
    keep = data.draw(st.booleans())
    out = run(
        lambda: np.linalg.vector_norm(a, ord=ord, axis=axis, keepdims=keep),
        lambda: xp.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keep),
    )
    if out is not None:
        close(same_meta(*out), out[1], _tol(a.dtype, a.size))


# =============================================================================================== square


SQUARE_KINDS = ("gen", "spd", "spd", "herm", "singular", "ill", "nan", "inf")


def _cond(a: np.ndarray) -> float:
    if not a.size or not np.all(np.isfinite(a)):
        return 1.0
    with np.errstate(all="ignore"):
        c = np.linalg.cond(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    return float(np.max(np.where(np.isfinite(c), c, 1e300)))


@fuzz(120)
@given(matrices(kinds=SQUARE_KINDS, square=True), st.booleans())
def test_fuzz_cholesky(case, upper):
    _, a, x, kind = case
    out = run(
        lambda: np.linalg.cholesky(a, upper=upper),
        lambda: xp.linalg.cholesky(x, upper=upper),
        raises_more=kind in ("nan", "inf"),
        empty=not a.size,
    )
    if out is not None:
        g = same_meta(*out)
        if np.all(np.isfinite(out[1])):
            close(g, out[1], _tol(a.dtype, a.shape[-1], _cond(a) ** 0.5))


@fuzz(120)
@given(matrices(kinds=SQUARE_KINDS, square=True), st.sampled_from(["solve", "inv", "det", "slogdet", "power"]))
def test_fuzz_solve_inv_det(case, op):
    mesh, a, x, _kind = case
    n = a.shape[-1]
    rng = np.random.default_rng(n)
    b = _random(rng, (*a.shape[:-1], 2) if n % 2 else (n,), a.dtype.name)
    y = xp.asarray(b, device=mesh)
    calls = {
        "solve": (lambda: np.linalg.solve(a, b), lambda: xp.linalg.solve(x, y)),
        "inv": (lambda: np.linalg.inv(a), lambda: xp.linalg.inv(x)),
        "det": (lambda: np.linalg.det(a), lambda: xp.linalg.det(x)),
        "slogdet": (lambda: tuple(np.linalg.slogdet(a)), lambda: tuple(xp.linalg.slogdet(x))),
        "power": (
            lambda: np.linalg.matrix_power(a, -1 if n % 2 else 3),
            lambda: xp.linalg.matrix_power(x, -1 if n % 2 else 3),
        ),
    }
    out = run(*calls[op], fallback=True)
    if out is None:
        return
    got, expected = out
    got, expected = (got, expected) if isinstance(expected, tuple) else ((got,), (expected,))
    vals = [same_meta(g, e) for g, e in zip(got, expected)]
    cond = _cond(a)
    if not np.all(np.isfinite(a)) or cond * _eps(a.dtype) > 1e-3:
        return  # (ill-conditioned: only dtype and shape; NaN/inf: BLAS and LAPACK place NaN each their own way)
    for g, e in zip(vals, expected):
        close(g, e, _tol(a.dtype, n, cond if op in ("solve", "inv", "power") else n))


@fuzz(100)
@given(matrices(kinds=("herm", "spd", "gen", "nan", "inf"), square=True), st.sampled_from(["eigh", "eig"]))
def test_fuzz_eig(case, op):
    mesh, a, x, _kind = case
    fin = np.all(np.isfinite(a))
    if op == "eigh":
        d = np.real(np.diagonal(a, axis1=-2, axis2=-1))[..., None, :] * np.eye(a.shape[-1])
        a = (np.tril(a, -1) + _mh(np.tril(a, -1)) + d).astype(a.dtype)  # (Hermitian, from the lower triangle)
        x = _pos(a, mesh, x.layout)
        out = run(lambda: np.linalg.eigh(a), lambda: xp.linalg.eigh(x), fallback=True, raises_more=not fin)
        if out is None:
            return
        (w, v), (ew, ev) = out
        w, v = same_meta(w, ew), same_meta(v, ev)
        out2 = run(lambda: np.linalg.eigvalsh(a), lambda: xp.linalg.eigvalsh(x), fallback=True, raises_more=not fin)
        if not fin:
            return
        t = _tol(a.dtype, a.shape[-1])
        close(w, ew, t)
        close(same_meta(*out2), ew, t)
        close(a @ v, v * w[..., None, :], t, float(np.max(np.abs(a), initial=0)))
        return
    out = run(lambda: np.linalg.eig(a), lambda: xp.linalg.eig(x), fallback=True)
    if out is None:
        return
    (w, v), (ew, ev) = out
    cdt = np.result_type(a.dtype, np.complex64)  # complex results always (the standard's 2025.12 choice)
    assert w.dtype == cdt and v.dtype == cdt and w.shape == ew.shape and v.shape == ev.shape
    w, v = w.numpy(), v.numpy()
    wv = run(lambda: np.linalg.eigvals(a), lambda: xp.linalg.eigvals(x), fallback=True)
    assert wv is not None and wv[0].dtype == cdt
    if _cond(a) * _eps(a.dtype) > 1e-4:
        return
    t = _tol(a.dtype, a.shape[-1], 100)  # (eigenvalues of a non-normal matrix: conditioned by their vectors)
    scale = float(np.max(np.abs(a), initial=0))
    close(a @ v, v * w[..., None, :], t, scale)
    close(np.sort_complex(wv[0].numpy()), np.sort_complex(w), t, scale)


# =============================================================================================== products


@fuzz(80)
@given(st.data())
def test_fuzz_products(data):
    mesh = data.draw(meshes())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dt = data.draw(st.sampled_from(DTYPES))
    lead = data.draw(st.sampled_from([(), (0,), (2,), (4,)]))
    k = data.draw(st.sampled_from([0, 1, 3, 5]))
    a = _random(rng, (*lead, 3), dt)
    b = _random(rng, (*lead, 3), dt)
    v1, v2 = _random(rng, (k,), dt), _random(rng, (data.draw(st.sampled_from([0, 2, 4])),), dt)
    m1 = _random(rng, (*lead, k, 3), dt)
    m2 = _random(rng, (3, k, 2), dt)
    x, y = data.draw(placed(a, mesh)), data.draw(placed(b, mesh))
    w1, w2 = data.draw(placed(v1, mesh)), data.draw(placed(v2, mesh))
    n1, n2 = data.draw(placed(m1, mesh)), data.draw(placed(m2, mesh))
    offset = data.draw(st.integers(-3, 3))
    t = _tol(dt, 8)
    cases = [
        (lambda: np.linalg.cross(a, b), lambda: xp.linalg.cross(x, y)),
        (lambda: np.linalg.outer(v1, v2), lambda: xp.linalg.outer(w1, w2)),
        (lambda: np.linalg.vecdot(a, b), lambda: xp.linalg.vecdot(x, y)),
        (
            lambda: np.linalg.tensordot(m1, m2, axes=((-2, -1), (1, 0))),
            lambda: xp.linalg.tensordot(n1, n2, axes=((-2, -1), (1, 0))),
        ),
        (
            lambda: np.linalg.tensordot(m1, m2, axes=0) if m1.size * m2.size < 2000 else None,
            lambda: xp.linalg.tensordot(n1, n2, axes=0) if m1.size * m2.size < 2000 else None,
        ),
        (
            lambda: np.linalg.matmul(m1, np.swapaxes(m1, -1, -2)),
            lambda: xp.linalg.matmul(n1, xp.linalg.matrix_transpose(n1)),
        ),
        (lambda: np.linalg.trace(m1, offset=offset), lambda: xp.linalg.trace(n1, offset=offset)),
        (lambda: np.linalg.diagonal(m1, offset=offset), lambda: xp.linalg.diagonal(n1, offset=offset)),
    ]
    # (a product whose operands split different dims over one mesh axis: the einsum gathers the smaller one)
    small = 8 + max(min(m1.size, m2.size), m2.size if not m1.size else 0)  # (an empty m1: m2 still gathered)
    for i, (np_call, xp_call) in enumerate(cases):
        out = run(
            np_call, xp_call, gather=small if 3 <= i <= 5 else 8 + 3 * k if i >= 6 else 8
        )  # (trace/diagonal: the eye mask, one matrix)
        if out is not None and out[1] is not None:
            close(same_meta(*out), out[1], t)


# =============================================================================================== fft


FFT_SIDES = (0, 1, 2, 3, 5, 6, 8, 12)


@st.composite
def signals(draw, dtypes=DTYPES):
    mesh = draw(meshes())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = tuple(draw(st.lists(st.sampled_from(FFT_SIDES), min_size=1, max_size=3)))
    a = _random(rng, shape, draw(st.sampled_from(dtypes)))
    if draw(st.integers(0, 7)) == 0 and a.size:
        a[tuple(int(rng.integers(s)) for s in shape)] = draw(st.sampled_from([np.nan, np.inf]))
    return mesh, a, draw(placed(a, mesh))


def _fft_dtype(e: np.ndarray, a: np.ndarray) -> np.dtype:
    """NumPy's result dtype, single precision kept single (the module docstring's promise)."""
    if _single(a.dtype):
        return np.dtype(np.complex64 if e.dtype.kind == "c" else np.float32)
    return e.dtype


def _fft_check(out, a: np.ndarray, empty_c2r: bool = False):
    if out is None:
        return
    got, e = out
    assert type(got) is xp.Array
    g = got.numpy()
    assert g.shape == e.shape and g.dtype == _fft_dtype(e, a), (g.shape, e.shape, g.dtype, e.dtype)
    if empty_c2r:  # numpy.fft's irfft/hfft of an empty axis read uninitialized memory: zeros here
        np.testing.assert_array_equal(g, 0)
    elif np.all(np.isfinite(a)):
        close(g, e, _tol(a.dtype, a.size + 8))
    else:  # (NaN and inf spread each algorithm's own way; a non-finite input stays visible)
        assert np.all(np.isfinite(g)) == np.all(np.isfinite(e))


@fuzz(120)
@given(signals(), st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]), st.data())
def test_fuzz_fft_1d(sig, name, data):
    _, a, x = sig
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = data.draw(st.sampled_from([None, 1, 4, 5, 8, 13]))
    norm = data.draw(st.sampled_from([None, "backward", "ortho", "forward"]))
    kw = {} if norm is None else {"norm": norm}
    if name in ("rfft", "ihfft") and a.dtype.kind == "c":
        a, x = a.real.copy(), xp.real(x)
    out = run(
        lambda: getattr(np.fft, name)(a, n=n, axis=axis, **kw),
        lambda: getattr(xp.fft, name)(x, n=n, axis=axis, **kw),
        gather=64,
    )
    _fft_check(out, a, name in ("irfft", "hfft") and a.shape[axis] == 0)


@fuzz(100)
@given(signals(), st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn", "fft2"]), st.data())
def test_fuzz_fft_nd(sig, name, data):
    _, a, x = sig
    axes = tuple(data.draw(st.permutations(range(a.ndim)))[: data.draw(st.integers(1, a.ndim))])
    if name == "fft2":
        if a.ndim < 2:
            return
        axes = (-2, -1)
    s = tuple(data.draw(st.sampled_from([1, 2, 4, 5, 8])) for _ in axes) if data.draw(st.booleans()) else None
    norm = data.draw(st.sampled_from([None, "backward", "ortho", "forward"]))
    kw = {} if norm is None else {"norm": norm}
    if name == "rfftn" and a.dtype.kind == "c":
        a, x = a.real.copy(), xp.real(x)
    fn = "fftn" if name == "fft2" else name
    out = run(
        lambda: getattr(np.fft, name)(a, s=s, axes=axes, **kw),
        lambda: getattr(xp.fft, fn)(x, s=s, axes=axes, **kw),
        gather=64,
    )
    empty = name == "irfftn" and (0 in a.shape and (s is None or a.shape[axes[-1]] == 0))
    _fft_check(out, a, empty and out is not None and out[1].size > 0 and a.shape[axes[-1]] == 0)


@fuzz(60)
@given(signals(), st.data())
def test_fuzz_fft_shift_and_freq(sig, data):
    mesh, a, x = sig
    axes = data.draw(st.sampled_from([None, 0, -1, (0, -1)]))
    if isinstance(axes, tuple) and a.ndim < 2:
        axes = None
    for name in ("fftshift", "ifftshift"):
        out = run(lambda: getattr(np.fft, name)(a, axes=axes), lambda: getattr(xp.fft, name)(x, axes=axes), gather=0)
        np.testing.assert_array_equal(same_meta(*out), out[1])
    n = data.draw(st.integers(1, 13))
    d = data.draw(st.sampled_from([1.0, 0.5, 3]))
    with sa.default_mesh(mesh):
        for name in ("fftfreq", "rfftfreq"):
            g = getattr(xp.fft, name)(n, d=d)
            np.testing.assert_allclose(same_meta(g, getattr(np.fft, name)(n, d=d)), getattr(np.fft, name)(n, d=d))


# =============================================================================================== gradients


def _pos(a: np.ndarray, mesh, layout) -> xp.Array:
    return as_kind(sa.asarray(a, dims=tuple(f"dim{k}" for k in range(a.ndim)), mesh=mesh, layout=layout), xp.Array)


def _gradcheck(loss, a: np.ndarray, mesh, layout, rng, rtol=1e-5, atol=1e-7, project=None):
    """``sa.grad(loss)`` at ``a`` (split as ``layout``) against float64 central differences in random directions
    (projected by ``project``: the directions a loss of one triangle or a Hermitian part is differentiated along)."""
    x = _pos(a, mesh, layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        g = sa.grad(loss)(x)
        assert type(g) is xp.Array and g.shape == a.shape and g.layout == x.layout, (g.layout, x.layout)
        eps = 1e-6
        for _ in range(2):
            v = rng.standard_normal(a.shape)
            v = v if project is None else project(v)
            up = float(loss(_pos(a + eps * v, mesh, layout)))
            down = float(loss(_pos(a - eps * v, mesh, layout)))
            fd = (up - down) / (2 * eps)
            analytic = float(np.sum(g.numpy() * v))
            np.testing.assert_allclose(analytic, fd, rtol=rtol, atol=atol + 1e-9 * max(abs(up), abs(down)))


def _sym(v):
    return (v + np.swapaxes(v, -1, -2)) / 2


LINALG_GRADS = {
    # name: (matrix kind, tall/wide/square, loss of x given weights w (host arrays of the result's shape))
    "inv": ("gen", "sq", lambda x, w: xp.sum(xp.linalg.inv(x) * w[0])),
    "det": ("gen", "sq", lambda x, w: xp.sum(xp.linalg.det(x) * w[0])),
    "slogdet": ("gen", "sq", lambda x, w: xp.sum(xp.linalg.slogdet(x).logabsdet * w[0])),
    "solve": ("gen", "sq", lambda x, w: xp.sum(xp.linalg.solve(x, w[1]) * w[0])),
    "cholesky": ("spd", "sq", lambda x, w: xp.sum(xp.linalg.cholesky(x) * w[0])),
    "cholesky_upper": ("spd", "sq", lambda x, w: xp.sum(xp.linalg.cholesky(x, upper=True) * w[0])),
    "eigvalsh": ("herm", "sq", lambda x, w: xp.sum(xp.linalg.eigvalsh(x) * w[0])),
    "eigh_projector": ("herm", "sq", lambda x, w: xp.sum(xp.abs(xp.linalg.eigh(x).eigenvectors) ** 2 * w[0])),
    "eigvals": ("gen", "sq", lambda x, w: xp.sum(xp.real(xp.linalg.eigvals(x)) * w[0])),
    "qr_r": ("gen", "tall", lambda x, w: xp.sum(xp.linalg.qr(x).R * w[0])),
    "qr_q": ("gen", "tall", lambda x, w: xp.sum(xp.linalg.qr(x).Q * w[0])),
    "svdvals": ("gen", "any", lambda x, w: xp.sum(xp.linalg.svdvals(x) * w[0])),
    "svd_polar": ("gen", "any", lambda x, w: xp.sum(xp.linalg.matmul(*_uv(x)) * w[0])),
    "pinv": ("gen", "any", lambda x, w: xp.sum(xp.linalg.pinv(x) * w[0])),
    "norm_nuc": ("gen", "any", lambda x, w: xp.sum(xp.linalg.matrix_norm(x, ord="nuc") * w[0])),
    "norm_fro": ("gen", "any", lambda x, w: xp.sum(xp.linalg.matrix_norm(x) * w[0])),
    "norm_1": ("gen", "any", lambda x, w: xp.sum(xp.linalg.matrix_norm(x, ord=1) * w[0])),
    "vector_norm3": ("gen", "any", lambda x, w: xp.sum(xp.linalg.vector_norm(x, ord=3, axis=-2) * w[0])),
    "matrix_power": ("gen", "sq", lambda x, w: xp.sum(xp.linalg.matrix_power(x, 3) * w[0])),
    "trace": ("gen", "any", lambda x, w: xp.sum(xp.linalg.trace(x, offset=1) * w[0])),
    "diagonal": ("gen", "any", lambda x, w: xp.sum(xp.linalg.diagonal(x, offset=-1) * w[0])),
    "tensordot": ("gen", "any", lambda x, w: xp.sum(xp.linalg.tensordot(x, x, axes=((0, 1), (0, 1))))),
    "vecdot": ("gen", "any", lambda x, w: xp.sum(xp.linalg.vecdot(x, x * 2.0) * w[0])),
}


def _uv(x):
    u, _, vh = xp.linalg.svd(x, full_matrices=False)
    return u, vh


@fuzz(80)
@given(st.data(), st.sampled_from(sorted(LINALG_GRADS)))
def test_fuzz_linalg_gradients(data, name):
    kind, form, loss_of = LINALG_GRADS[name]
    mesh = data.draw(meshes())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    batch = data.draw(st.sampled_from([(), (2,), (3,)]))
    m, n = {"sq": (4, 4), "tall": (6, 3), "any": data.draw(st.sampled_from([(4, 4), (6, 3), (3, 5)]))}[form]
    a = rng.standard_normal((*batch, m, n))
    if kind == "spd":
        a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    elif kind == "herm":
        a = _sym(a) + np.diag(np.arange(n) * 3.0)  # (well separated eigenvalues)
    else:
        a = a + (2 * np.eye(m, n) if form == "sq" else 0)
    layout = data.draw(layouts(mesh, tuple(f"dim{k}" for k in range(a.ndim))))
    w = [rng.standard_normal(_result_shape(name, a)), _random(rng, (*batch, m, 2), "float64")]
    w = [xp.asarray(v, device=mesh) for v in w]
    project = _sym if kind in ("spd", "herm") else None
    _gradcheck(lambda x: loss_of(x, w), a, mesh, layout, rng, project=project)


def _result_shape(name: str, a: np.ndarray) -> tuple:
    """The shape of the weights the loss multiplies its op's result with."""
    probe = {
        "inv": lambda: a.shape,
        "det": lambda: a.shape[:-2],
        "slogdet": lambda: a.shape[:-2],
        "solve": lambda: (*a.shape[:-1], 2),
        "eigvalsh": lambda: a.shape[:-1],
        "eigvals": lambda: a.shape[:-1],
        "svdvals": lambda: (*a.shape[:-2], min(a.shape[-2:])),
        "pinv": lambda: (*a.shape[:-2], a.shape[-1], a.shape[-2]),
        "qr_r": lambda: (*a.shape[:-2], a.shape[-1], a.shape[-1]),
        "norm_nuc": lambda: a.shape[:-2],
        "norm_fro": lambda: a.shape[:-2],
        "norm_1": lambda: a.shape[:-2],
        "vector_norm3": lambda: (*a.shape[:-2], a.shape[-1]),
        "trace": lambda: a.shape[:-2],
        "diagonal": lambda: (*a.shape[:-2], min(a.shape[-2] - 1, a.shape[-1])),
        "vecdot": lambda: a.shape[:-1],
        "tensordot": lambda: (),
    }
    return probe.get(name, lambda: a.shape)()


FFT_GRADS = {
    "fft": lambda x, n, norm: xp.real(xp.fft.fft(x, n=n, axis=-1, norm=norm)) * 1.5,
    "ifft": lambda x, n, norm: xp.imag(xp.fft.ifft(x, n=n, axis=0, norm=norm)),
    "rfft": lambda x, n, norm: xp.abs(xp.fft.rfft(x, n=n, axis=-1, norm=norm)),
    "irfft": lambda x, n, norm: xp.fft.irfft(xp.fft.rfft(x, axis=0) * 1.0, n=n or x.shape[0], axis=0, norm=norm),
    "hfft": lambda x, n, norm: xp.fft.hfft(xp.astype(x, xp.complex128) * (1 + 0.5j), n=n, axis=-1, norm=norm),
    "ihfft": lambda x, n, norm: xp.real(xp.fft.ihfft(x, n=n, axis=0, norm=norm)),
    "fftn": lambda x, n, norm: xp.real(xp.fft.fftn(x, norm=norm) * (0.5 + 1j)),
    "rfftn": lambda x, n, norm: xp.abs(xp.fft.rfftn(x, s=None if n is None else (n, n), axes=(0, 1), norm=norm)),
    "fftshift": lambda x, n, norm: xp.fft.fftshift(x, axes=(0, 1)) * xp.fft.ifftshift(x),
}


@fuzz(60)
@given(st.data(), st.sampled_from(sorted(FFT_GRADS)))
def test_fuzz_fft_gradients(data, name):
    mesh = data.draw(meshes())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = (data.draw(st.sampled_from([1, 4, 5, 6])), data.draw(st.sampled_from([2, 3, 8])))
    a = rng.standard_normal(shape)
    n = data.draw(st.sampled_from([None, 3, 8]))
    norm = data.draw(st.sampled_from(["backward", "ortho", "forward"]))
    layout = data.draw(layouts(mesh, ("dim0", "dim1")))
    probe = FFT_GRADS[name](_pos(a, mesh, layout), n, norm)
    w = xp.asarray(rng.standard_normal(probe.shape), device=mesh)
    _gradcheck(lambda x: xp.sum(FFT_GRADS[name](x, n, norm) ** 2 * w), a, mesh, layout, rng)


# =============================================================================================== regressions


@pytest.mark.parametrize("op", ["pinv", "matrix_rank", "lstsq"])
@pytest.mark.parametrize("shape", [(3, 0), (0, 3)])
def test_empty_matrices_give_results_on_the_input_mesh(op, shape):
    """``xp.linalg.pinv``/``matrix_rank`` of an empty matrix made their zeros on the default mesh, not the input's
    (``xp.zeros`` without ``device=``), so ``lstsq`` of an empty ``a`` raised ``MeshError`` ("operand 0 lives on
    Mesh({'d': 1}) but operand 1 on Mesh({'p': 3, 'q': 2})"), and its ``s``/``residuals`` were on that mesh too."""
    mesh = _mesh({"p": 3, "q": 2})
    a = np.zeros(shape, dtype=np.float32)
    x = _pos(a, mesh, {"dim1": "q"})
    if op == "lstsq":
        b = np.ones(shape[0], dtype=np.float32)
        got = xp.linalg.lstsq(x, xp.asarray(b, device=mesh))
        expected = np.linalg.lstsq(a, b)
    else:
        got, expected = (getattr(xp.linalg, op)(x),), (getattr(np.linalg, op)(a),)
    for g, e in zip(got, expected):
        assert g.mesh is mesh
        np.testing.assert_array_equal(same_meta(g, e), e)


@pytest.mark.parametrize("dtype", ["complex128", "float32"])
@pytest.mark.parametrize("layout", [{}, {"dim1": "all"}])
def test_qr_r_diagonal_is_exactly_real_and_non_negative(dtype, layout):
    """``qr``'s docstring promises R's diagonal real and non-negative, but ``_fix_signs`` left ``d * conj(d/|d|)``
    with a rounding-size imaginary part (``0.63+2.8e-17j``), and wide QR's ``R = Q^H A`` recomputed the diagonal
    (an imaginary part again, or ``-1.3e-08`` for a rank-deficient block): the diagonal is set to ``|d|`` now."""
    rng = np.random.default_rng(3)
    a = _random(rng, (3, 2, 9), dtype)
    a[1, 1] = a[1, 0] * 3  # (a rank-deficient leading block)
    q, r = xp.linalg.qr(_pos(a, _mesh({"all": 4}), layout))
    d = np.diagonal(r.numpy(), axis1=-2, axis2=-1)
    assert np.all(d.real >= 0) and np.all(d.imag == 0), d
    close(q.numpy() @ r.numpy(), a, _tol(a.dtype, 9))
