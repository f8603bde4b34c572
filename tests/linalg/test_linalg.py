"""sa.linalg (named) and xp.linalg (positional): values against NumPy, TSQR's traffic against its formula."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import layouts, meshes, rand
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

L = sa.linalg
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _arr(a, dims, mesh, lay):
    return sa.asarray(a, dims=dims, mesh=mesh, layout=lay)


@st.composite
def tall_case(draw):
    mesh = draw(meshes())
    n = draw(st.integers(1, 4))
    m = draw(st.integers(n, 13))
    b = draw(st.integers(1, 3))
    lay = draw(layouts(mesh, ("b", "i", "j")))
    return mesh, (b, m, n), lay


@SETTINGS
@given(tall_case(), st.booleans())
def test_qr_svd_match_numpy(case, cplx):
    mesh, shape, lay = case
    a = rand(shape, 1)
    if cplx:
        a = a + 1j * rand(shape, 2)
    x = _arr(a, ("b", "i", "j"), mesh, lay)
    with warnings.catch_warnings():
        warnings.simplefilter("error", L.ReplicatedFallbackWarning)  # tall matrices never fall back
        q, r = L.qr(x, ("i", "j"))
        u, s, vh = L.svd(x, ("i", "j"))
        sv = L.svdvals(x, ("i", "j"))
    Q, R = q.numpy(), r.numpy()
    assert q.dims == ("b", "i", "j_k") and r.dims == ("b", "j_k", "j")
    np.testing.assert_allclose(Q @ R, a, atol=1e-10)
    eye = np.broadcast_to(np.eye(shape[2]), (shape[0], shape[2], shape[2]))
    np.testing.assert_allclose(np.conj(np.swapaxes(Q, -1, -2)) @ Q, eye, atol=1e-10)
    assert np.allclose(np.tril(R, -1), 0)
    d = np.diagonal(R, axis1=-2, axis2=-1)
    assert np.all(d.real >= -1e-12) and np.allclose(d.imag, 0)
    # R equals NumPy's up to the diagonal's signs (the factorization is unique for full-rank matrices)
    _, Rn = np.linalg.qr(a)
    ph = np.diagonal(Rn, axis1=-2, axis2=-1)
    ph = np.where(ph == 0, 1, ph / np.where(ph == 0, 1, np.abs(ph)))
    np.testing.assert_allclose(np.conj(ph)[..., :, None] * Rn, R, atol=1e-10)
    S = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(s.numpy(), S, atol=1e-10)
    np.testing.assert_allclose(sv.numpy(), S, atol=1e-10)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), a, atol=1e-10)
    assert q.layout.get("b") == r.layout.get("b") == x.layout.get("b")


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"all": 4}, {"x": 2, "y": 2, "z": 2},
                                   {"p": 3, "q": 2}])
def test_tall_qr_traffic_is_two_allreduces_of_the_gram(shape):
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    m, n = 37, 5
    a = rand((m, n), 3)
    x = _arr(a, ("i", "j"), mesh, {"i": axes})
    p = mesh.size
    with sa.comm_log() as log:
        q, r = L.qr(x)
    recs = log.records
    if p == 1:
        assert recs == []
    else:  # CholeskyQR2: each pass allreduces one n x n float64 Gram matrix over the row axes
        assert [rec.op for rec in recs] == ["allreduce", "allreduce"]
        for rec in recs:
            assert rec.axes == tuple(axes)
            assert (rec.elements, rec.bytes, rec.group_size) == (n * n, n * n * 8, p)
            assert rec.wire_bytes == 2 * (p - 1) / p * n * n * 8  # independent of m: ring allreduce of n²·8 bytes
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-12)
    # columns split: one alltoall first, then the same two allreduces
    if p > 1:
        y = _arr(a, ("i", "j"), mesh, {"j": axes[:1]})
        with sa.comm_log() as log:
            L.qr(y)
        assert [rec.op for rec in log.records] == ["alltoall", "allreduce", "allreduce"]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("cond", [1.0, 1e3, 1e6, 1e12, "rank-deficient"])
def test_tall_qr_orthogonal_at_any_condition(cond, dtype):
    """CholeskyQR2 where its Gram check passes (two allreduces), Householder TSQR after it where not (the
    allgather follows): Q orthonormal and Q R = A to working precision either way, R's diagonal >= 0."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(7)
    m, n = 403, 12
    u, _ = np.linalg.qr(rng.standard_normal((m, n)) + (1j * rng.standard_normal((m, n)) if dtype == np.complex128
                                                     else 0))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.ones(n) if cond == "rank-deficient" else np.logspace(0, -np.log10(cond), n)
    if cond == "rank-deficient":
        s[-3:] = 0
    a = ((u * s) @ v).astype(dtype)
    x = _arr(a, ("i", "j"), mesh, {"i": ("row", "col")})
    with sa.comm_log() as log:
        q, r = L.qr(x)
    ops = [rec.op for rec in log.records]
    eps = np.finfo(dtype).eps
    cholesky_ok = cond != "rank-deficient" and float(cond) * (eps**0.5) < 1e-2  # well inside its range
    hopeless = cond == "rank-deficient" or float(cond) ** 2 * eps > 10  # the first Gram matrix is noise
    if cholesky_ok:
        assert ops == ["allreduce", "allreduce"]
    if hopeless:
        assert ops == ["allreduce", "allreduce", "allgather"]
    Q, R = q.numpy(), r.numpy()
    assert np.abs(Q.conj().T @ Q - np.eye(n)).max() < 50 * n * eps
    assert np.abs(Q @ R - a).max() < 50 * n * eps * np.abs(a).max()
    assert np.all(np.abs(np.tril(R, -1)) == 0)
    d = np.diagonal(R)
    assert np.all(d.real >= 0) and np.all(d.imag == 0)


def test_tall_qr_nan_takes_tsqr():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((40, 4), 5)
    a[3, 1] = np.nan
    x = _arr(a, ("i", "j"), mesh, {"i": ("row", "col")})
    with sa.comm_log() as log:
        _, r = L.qr(x)
    assert [rec.op for rec in log.records] == ["allreduce", "allreduce", "allgather"]
    assert np.isnan(r.numpy()).any() == np.isnan(np.linalg.qr(a)[1]).any()


def test_svdvals_has_no_q_product_and_same_traffic():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((40, 6), 4)
    x = _arr(a, ("i", "j"), mesh, {"i": ("row", "col")})
    with sa.comm_log() as log:
        s = L.svdvals(x)
    assert [r.op for r in log.records] == ["allreduce", "allreduce"]
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), atol=1e-12)


@SETTINGS
@given(meshes(), st.integers(0, 5), st.integers(0, 3), st.data())
def test_dense_ops_batched(mesh, n, b, data):
    lay = data.draw(layouts(mesh, ("b", "i", "j")))
    rng = np.random.default_rng(n + 10 * b)
    g = rng.standard_normal((b, n, n))
    spd = g @ np.swapaxes(g, -1, -2) + n * np.eye(n)
    x = _arr(spd, ("b", "i", "j"), mesh, lay)
    rhs = rng.standard_normal((b, n, 2))
    y = _arr(rhs, ("b", "j", "k"), mesh, {})
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ch = L.cholesky(x)
        inv = L.inv(x)
        det = L.det(x)
        sign, logdet = L.slogdet(x)
        ev, evec = L.eigh(x)
        evals = L.eigvalsh(x)
        sol = L.solve(x, y, b_dims=("j", "k"))
        upper = L.cholesky(x, upper=True)
    split = any(mesh.axes_size(lay.get(d, ())) > 1 for d in ("i", "j"))
    assert any(issubclass(i.category, L.ReplicatedFallbackWarning) for i in w) == (split and spd.size > 0)
    tol = {"atol": 1e-8, "rtol": 1e-8}
    np.testing.assert_allclose(ch.numpy(), np.linalg.cholesky(spd), **tol)
    np.testing.assert_allclose(upper.numpy(), np.swapaxes(np.linalg.cholesky(spd), -1, -2), **tol)
    np.testing.assert_allclose(inv.numpy(), np.linalg.inv(spd), **tol)
    np.testing.assert_allclose(det.numpy(), np.linalg.det(spd), **tol)
    sn, ln = np.linalg.slogdet(spd)
    np.testing.assert_allclose(sign.numpy(), sn)
    np.testing.assert_allclose(logdet.numpy(), ln, **tol)
    np.testing.assert_allclose(evals.numpy(), np.linalg.eigvalsh(spd), **tol)
    np.testing.assert_allclose(ev.numpy(), np.linalg.eigvalsh(spd), **tol)
    V = evec.numpy()
    np.testing.assert_allclose(V @ (ev.numpy()[..., :, None] * np.swapaxes(V, -1, -2)), spd, **tol)
    np.testing.assert_allclose(sol.numpy(), np.linalg.solve(spd, rhs), **tol)
    assert ch.layout.get("b") == x.layout.get("b")


def test_batch_split_runs_locally():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((8, 3, 3), 5) + 3 * np.eye(3)
    x = _arr(a, ("b", "i", "j"), mesh, {"b": ("row", "col")})
    with sa.comm_log() as log, warnings.catch_warnings():
        warnings.simplefilter("error")
        L.inv(x), L.det(x), L.qr(x), L.svd(x)
    assert log.records == []


@SETTINGS
@given(meshes(), st.integers(0, 6), st.integers(0, 6), st.data())
def test_norms(mesh, m, n, data):
    lay = data.draw(layouts(mesh, ("i", "j")))
    a = rand((m, n), m * 7 + n)
    x = _arr(a, ("i", "j"), mesh, lay)
    for ord_ in (1, 2, np.inf, -np.inf, 0, 3):
        if m * n == 0 and ord_ == -np.inf:
            continue
        np.testing.assert_allclose(L.vector_norm(x, ord=ord_).numpy(), np.linalg.norm(a.ravel(), ord_), atol=1e-12)
    if m and n:
        for ord_ in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
            np.testing.assert_allclose(L.matrix_norm(x, ord=ord_).numpy(), np.linalg.norm(a, ord_), atol=1e-10)


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}, {"d": 1}])
def test_positional_extension_matches_numpy(shape):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(0)
    with sa.default_mesh(mesh), warnings.catch_warnings():
        warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)
        a = rng.standard_normal((2, 5, 5)) + 5 * np.eye(5)
        x = xp.asarray(a)
        np.testing.assert_allclose(xp.linalg.inv(x).numpy(), np.linalg.inv(a), atol=1e-10)
        np.testing.assert_allclose(xp.linalg.matrix_power(x, 3).numpy(), np.linalg.matrix_power(a, 3), rtol=1e-10)
        np.testing.assert_allclose(xp.linalg.matrix_power(x, -2).numpy(), np.linalg.matrix_power(a, -2), atol=1e-10)
        np.testing.assert_allclose(xp.linalg.trace(x, offset=1).numpy(), np.trace(a, 1, -2, -1), atol=1e-12)
        np.testing.assert_allclose(xp.linalg.diagonal(x, offset=-2).numpy(), np.diagonal(a, -2, -2, -1))
        t = rng.standard_normal((7, 3))
        y = xp.asarray(t)
        np.testing.assert_allclose(xp.linalg.pinv(y).numpy(), np.linalg.pinv(t), atol=1e-10)
        assert int(xp.linalg.matrix_rank(y)) == 3
        np.testing.assert_allclose(xp.linalg.solve(x, xp.asarray(t[:5, 0])).numpy(), np.linalg.solve(a, t[:5, 0]),
                                   atol=1e-10)
        np.testing.assert_allclose(xp.linalg.cross(xp.asarray(t[:3]), xp.asarray(t[3:6])).numpy(),
                                   np.cross(t[:3], t[3:6]), atol=1e-12)
        np.testing.assert_allclose(xp.linalg.outer(xp.asarray(t[:, 0]), xp.asarray(t[:, 1])).numpy(),
                                   np.outer(t[:, 0], t[:, 1]))
        np.testing.assert_allclose(xp.linalg.vector_norm(x, axis=(0, 2), ord=3).numpy(),
                                   np.linalg.vector_norm(a, axis=(0, 2), ord=3), atol=1e-10)
        np.testing.assert_allclose(xp.linalg.matrix_norm(x, ord=2, keepdims=True).numpy(),
                                   np.linalg.matrix_norm(a, ord=2, keepdims=True), atol=1e-10)
        q, r = xp.linalg.qr(y, mode="complete")
        assert q.shape == (7, 7) and r.shape == (7, 3)
        np.testing.assert_allclose(q.numpy() @ r.numpy(), t, atol=1e-12)
        u, s, vh = xp.linalg.svd(xp.asarray(t.T.copy()), full_matrices=False)
        np.testing.assert_allclose((u.numpy() * s.numpy()) @ vh.numpy(), t.T, atol=1e-12)


def test_namespace_exposes_extension():
    assert xp.linalg.qr is not None and "linalg" in xp.__all__
    x = xp.asarray(np.eye(3))
    assert x.__array_namespace__().linalg is xp.linalg


@SETTINGS
@given(meshes(), st.integers(1, 4), st.integers(0, 9), st.booleans(), st.data())
def test_wide_qr_column_split(mesh, m, extra, cplx, data):
    n = m + 1 + extra
    lay = data.draw(layouts(mesh, ("b", "i", "j")))
    a = rand((2, m, n), m + n)
    if cplx:
        a = a + 1j * rand((2, m, n), 7)
    x = _arr(a, ("b", "i", "j"), mesh, lay)
    with warnings.catch_warnings():
        warnings.simplefilter("error", L.ReplicatedFallbackWarning)
        with sa.comm_log() as log:
            q, r = L.qr(x)
    Q, R = q.numpy(), r.numpy()
    np.testing.assert_allclose(Q @ R, a, atol=1e-10)
    np.testing.assert_allclose(np.conj(np.swapaxes(Q, -1, -2)) @ Q, np.broadcast_to(np.eye(m), (2, m, m)), atol=1e-10)
    assert (np.tril(R, -1) == 0).all()
    # the traffic is O(m^2) per matrix for the leading block, plus the alltoall of the relayout when rows are split
    moved = sum(rec.elements for rec in log.records if rec.op == "allgather")
    assert moved <= 2 * m * m * (x.sizes["b"])


@SETTINGS
@given(meshes(), st.integers(1, 6), st.integers(1, 6), st.booleans(), st.data())
def test_pinv_matrix_rank(mesh, m, n, deficient, data):
    lay = data.draw(layouts(mesh, ("b", "i", "j")))
    a = rand((2, m, n), 10 * m + n)
    if deficient and n > 1:
        a[1, :, 0] = a[1, :, 1]
    x = _arr(a, ("b", "i", "j"), mesh, lay)
    p = L.pinv(x)
    assert p.dims == ("b", "j", "i")
    np.testing.assert_allclose(p.numpy(), np.linalg.pinv(a), atol=1e-8)
    np.testing.assert_array_equal(L.matrix_rank(x).numpy(), np.linalg.matrix_rank(a))
