"""``sa.linalg.LinAlgError`` exactly where NumPy raises, on NumPy and CuPy shards alike.

CuPy's linalg never raises (its default is ``cupyx.errstate(linalg='ignore')``): a failed Cholesky or a
singular solve returns NaN or finite garbage. sa checks on the devices and reads once per op
(``linalg/_checks.py``). These tests run on the session's backend (``--backend=cupy``: the strict
stand-in), and the read counts on a stand-in installed here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fake_gpu import FakeCupy

import shardarray as sa

L = sa.linalg
SPLIT = ({"row": 2, "col": 2}, {"i": "row", "j": "col"})
LAYOUTS = [
    pytest.param({"d": 1}, {}, id="unsplit"),
    pytest.param({"row": 2, "col": 2}, {"b": "row"}, id="batch-split"),
    pytest.param({"row": 2, "col": 2}, {"i": "row", "j": "col"}, id="split-2x2"),
    pytest.param({"all": 4}, {"i": "all"}, id="rows-split"),
    pytest.param({"p": 3, "q": 2}, {"b": "q", "i": "p"}, id="batch-and-rows-3x2"),
]


def spd(n, seed=0):
    m = np.random.default_rng(seed).standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def raises_in_numpy(fn, *args):
    try:
        fn(*args)
    except np.linalg.LinAlgError:
        return True
    return False


def _quiet(fn, *args, **kwargs):
    """``fn(...)`` without the fallback warning (and NumPy's about the NaN matrix's det, on NumPy shards)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)
        return fn(*args, **kwargs)


def _batch(bad, n=6, nb=4, at=1):
    """``nb`` SPD matrices, the one at ``at`` replaced by ``bad`` (an ``n x n`` matrix)."""
    a = np.stack([spd(n, s) for s in range(nb)])
    a[at] = bad
    return a


CHOLESKY_CASES = {
    "spd": spd(6, 1),
    "indefinite": spd(6, 2) - 20 * np.eye(6),
    "last-pivot-negative": np.diag([4.0, 9.0, 1.0, 1.0, 2.0, -1e-3]),
    "singular-psd": np.ones((6, 6)),
    "zero": np.zeros((6, 6)),
    "nearly-singular-pd": np.diag([1.0, 1.0, 1.0, 1.0, 1.0, 1e-300]),
    "junk-upper-triangle": np.tril(spd(6, 3)) + np.triu(np.full((6, 6), -50.0), 1),
    "nan-in-upper-triangle": np.tril(spd(6, 4)) + np.triu(np.full((6, 6), np.nan), 1),
}


@pytest.mark.parametrize("shape,lay", LAYOUTS)
@pytest.mark.parametrize("case", list(CHOLESKY_CASES))
@pytest.mark.parametrize("panel", [None, 1])
def test_cholesky_raises_where_numpy_does(shape, lay, case, panel):
    """One bad matrix in a batch of four: LinAlgError on every layout iff NumPy raises on the batch."""
    a = _batch(CHOLESKY_CASES[case])
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=sa.Mesh(shape), layout=lay)
    if raises_in_numpy(np.linalg.cholesky, a):
        with pytest.raises(L.LinAlgError, match="not positive definite") as info:
            L.cholesky(x, panel=panel)
        assert isinstance(info.value, np.linalg.LinAlgError)
        with pytest.raises(L.LinAlgError, match="not positive definite"):
            L.cholesky(x, ("j", "i"), upper=True, panel=panel)  # the upper triangle of a^T: a's lower one
    else:
        np.testing.assert_allclose(L.cholesky(x, panel=panel).numpy(), np.linalg.cholesky(a), rtol=1e-12)


SQUARE_CASES = {
    "regular": spd(5, 1) - 8 * np.eye(5),
    "zero-row": np.vstack([np.random.default_rng(2).standard_normal((4, 5)), np.zeros((1, 5))]),
    "repeated-row": np.array([[1.0, 2, 3, 4, 5], [0, 1, 0, 0, 2], [2, 4, 6, 8, 10], [0, 0, 1, 0, 0],
                              [3, 1, 4, 1, 5]]),
    "zero": np.zeros((5, 5)),
    "nearly-singular": np.diag([1.0, 1.0, 1.0, 1.0, 1e-300]),
    "nan": np.where(np.eye(5) > 0, np.nan, np.eye(5) + 1.0),
}


@pytest.mark.parametrize("shape,lay", LAYOUTS)
@pytest.mark.parametrize("case", list(SQUARE_CASES))
def test_solve_and_inv_raise_where_numpy_does(shape, lay, case):
    """A singular matrix in the batch: solve and inv raise iff NumPy does (whatever the right-hand side
    holds); det and slogdet never do (0 and -inf)."""
    mesh = sa.Mesh(shape)
    a = _batch(SQUARE_CASES[case], n=5)
    rng = np.random.default_rng(3)
    b = rng.standard_normal((4, 5, 2))
    b_nan = b.copy()
    b_nan[1, 0, 0] = np.nan
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    for rhs in (b, b_nan):
        y = sa.asarray(rhs, dims=("b", "j", "k"), mesh=mesh)
        if raises_in_numpy(np.linalg.solve, a, rhs):
            with pytest.raises(L.LinAlgError, match="singular"):
                _quiet(L.solve, x, y, b_dims=("j", "k"))
        else:
            out = _quiet(L.solve, x, y, b_dims=("j", "k")).numpy()
            np.testing.assert_allclose(out, np.linalg.solve(a, rhs), rtol=1e-9)
    if raises_in_numpy(np.linalg.inv, a):
        with pytest.raises(L.LinAlgError, match="singular") as info:
            _quiet(L.inv, x)
        assert isinstance(info.value, np.linalg.LinAlgError)
    else:
        np.testing.assert_allclose(_quiet(L.inv, x).numpy(), np.linalg.inv(a), rtol=1e-9)
    with np.errstate(invalid="ignore"):  # NumPy's det of the NaN matrix
        d_ref, (s_ref, l_ref) = np.linalg.det(a), np.linalg.slogdet(a)
    det, (sign, logabs) = _quiet(L.det, x).numpy(), (v.numpy() for v in _quiet(L.slogdet, x))
    if mesh.backend.name == "cupy":  # a singular matrix's det is 0 within rounding: NumPy's LU meets an exact zero
        # pivot, CuPy's (of the transpose, with FMA) may not (det -6e-15 on an H200 for a repeated row)
        with np.errstate(invalid="ignore", over="ignore"):
            tiny = (d_ref == 0) & (np.abs(det) <= 16 * np.finfo(float).eps * np.prod(np.linalg.norm(a, axis=-1), -1))
        det, sign = np.where(tiny, 0.0, det), np.where(tiny, 0.0, sign)
        logabs = np.where(tiny, -np.inf, logabs)
    np.testing.assert_allclose(det, d_ref, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(sign, s_ref)
    np.testing.assert_allclose(logabs, l_ref, rtol=1e-9)


def test_svd_family_raises_on_nan_as_numpy():
    """NumPy's SVD does not converge on NaN: svd, svdvals, pinv, matrix_rank and the 2-norm raise on both
    backends, on the TSQR path (rows split) and locally; QR does not raise."""
    a = np.random.default_rng(4).standard_normal((3, 8, 3))
    a[1, 2, 1] = np.nan
    assert raises_in_numpy(np.linalg.svd, a)
    for shape, lay in [({"d": 1}, {}), ({"all": 4}, {"i": "all"}), ({"row": 2, "col": 2}, {"b": "row"})]:
        x = sa.asarray(a, dims=("b", "i", "j"), mesh=sa.Mesh(shape), layout=lay)
        for fn in (L.svd, L.svdvals, L.pinv, L.matrix_rank, lambda z: L.matrix_norm(z, ord=2)):
            with pytest.raises(L.LinAlgError, match="SVD did not converge"):
                fn(x)
        with pytest.raises(L.LinAlgError, match="SVD did not converge"):
            _quiet(L.svd, x, full_matrices=True)  # the local fallback (m != n)
        r = L.qr(x).R
        assert np.isnan(r.numpy()[1]).any() and not np.isnan(r.numpy()[0]).any()


def test_eigh_raises_on_nan_in_the_triangle_read():
    """NumPy's eigh raises on some matrices holding NaN in the lower triangle (it depends on their size and
    where the NaN is); sa raises on all of them, on both backends; NaN in the upper triangle is not read."""
    a = np.stack([spd(4, s) for s in range(3)])
    lower, upper = a.copy(), a.copy()
    lower[1, 3, 1] = np.nan
    upper[1, 1, 3] = np.nan
    assert raises_in_numpy(np.linalg.eigh, lower)  # a case where NumPy raises too
    for shape, lay in [({"d": 1}, {}), ({"row": 2, "col": 2}, {"b": "row"})]:
        mesh = sa.Mesh(shape)
        x = sa.asarray(lower, dims=("b", "i", "j"), mesh=mesh, layout=lay)
        with pytest.raises(L.LinAlgError, match="eigenvalues did not converge"):
            L.eigh(x)
        with pytest.raises(L.LinAlgError, match="eigenvalues did not converge"):
            L.eigvalsh(x)
        y = sa.asarray(upper, dims=("b", "i", "j"), mesh=mesh, layout=lay)
        np.testing.assert_allclose(L.eigvalsh(y).numpy(), np.linalg.eigvalsh(upper), rtol=1e-12)


# ------------------------------------------------------------------ device-to-host reads, on the stand-in
_READS = ("get", "__bool__", "__int__", "__float__", "__complex__", "__index__", "item", "tolist")


def _count_reads(monkeypatch):
    """Install a strict CuPy stand-in; return the list that every device-to-host read appends to."""
    FakeCupy(gpus=8, strict=True).install(monkeypatch)
    import cupy

    reads, inside = [], []
    for name in _READS:
        real = getattr(cupy.ndarray, name, None)
        if real is None:
            continue

        def counted(self, *args, _real=real, _name=name, **kwargs):
            if not inside:  # one read, also where the stand-in's bool() calls its get()
                reads.append(_name)
            inside.append(1)
            try:
                return _real(self, *args, **kwargs)
            finally:
                inside.pop()

        monkeypatch.setattr(cupy.ndarray, name, counted)
    return reads


@pytest.mark.parametrize("devices", [None, [0, 1, 2, 3]], ids=["one-gpu", "a-gpu-per-device"])
@pytest.mark.parametrize("batch_split", [False, True])
def test_split_cholesky_reads_the_device_once(monkeypatch, devices, batch_split):
    """The 2-D Cholesky reads one number from the devices, for 2 panels or 12 (and so do solve, inv and
    slogdet through it), also when it fails; a local op reads one bool for all devices."""
    reads = _count_reads(monkeypatch)
    shape = {"bat": 2, "row": 2, "col": 2} if batch_split else {"row": 2, "col": 2}
    gpus = devices and list(range(2 * len(devices) if batch_split else len(devices)))
    mesh = sa.Mesh(shape, backend="cupy", devices=gpus)
    lay = {"i": "row", "j": "col", **({"b": "bat"} if batch_split else {})}
    n = 12
    a = np.stack([spd(n, 5), spd(n, 6)])
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    rhs = sa.asarray(np.ones((2, n, 1)), dims=("b", "j", "k"), mesh=mesh)
    per_panels = {}
    for panel in (None, 3, 1):
        del reads[:]
        low = L.cholesky(x, panel=panel)
        per_panels[panel] = len(reads)
        np.testing.assert_allclose(low.numpy(), np.linalg.cholesky(a), rtol=1e-12)
    assert per_panels == {None: 1, 3: 1, 1: 1}, per_panels
    for op in (lambda: L.solve(x, rhs, b_dims=("j", "k")), lambda: L.inv(x), lambda: L.slogdet(x)):
        del reads[:]
        op()
        assert len(reads) == 1, reads
    bad = sa.asarray(_batch(-spd(n, 7), n=n, nb=2), dims=("b", "i", "j"), mesh=mesh, layout=lay)
    for panel in (None, 1):
        del reads[:]
        with pytest.raises(L.LinAlgError, match="not positive definite"):
            L.cholesky(bad, panel=panel)
        assert len(reads) == 1, reads
    # a local op (batch over every device): one read for all of them
    sing = sa.asarray(_batch(np.zeros((n, n)), n=n, nb=8), dims=("b", "i", "j"), mesh=mesh,
                      layout={"b": tuple(mesh.axis_names)})
    del reads[:]
    with pytest.raises(L.LinAlgError, match="singular"):
        L.inv(sing)
    assert len(reads) == 1, reads


def test_cholesky_check_catches_other_garbage(monkeypatch):
    """cuSOLVER documents ``info``, not what a failed ``potrf`` leaves: with the failing pivot left positive
    (the original diagonal entry, or 1) or NaN, the 2-D and the local Cholesky still raise; a factor that
    succeeded passes."""
    FakeCupy(gpus=4, strict=True).install(monkeypatch)
    import cupy

    for leave in ("original", "one", "nan"):

        def garbage(a, _leave=leave):
            h = cupy.asnumpy(a).copy()
            out = np.zeros_like(h)
            for m, o in zip(h.reshape(-1, *h.shape[-2:]), out.reshape(-1, *h.shape[-2:])):
                try:
                    o[...] = np.linalg.cholesky(m)
                    continue
                except np.linalg.LinAlgError:
                    pass
                w = m.copy()
                for k in range(len(w)):
                    if not w[k, k] > 0:
                        w[k, k] = {"original": m[k, k], "one": 1.0, "nan": np.nan}[_leave]
                        break
                    w[k, k] = np.sqrt(w[k, k])
                    w[k + 1:, k] /= w[k, k]
                    w[k + 1:, k + 1:] -= np.outer(w[k + 1:, k], w[k + 1:, k])
                o[...] = np.tril(w)
            return cupy.asarray(out)

        monkeypatch.setattr(cupy.linalg, "cholesky", garbage)
        bad = np.eye(6)
        bad[3, 4] = bad[4, 3] = 2.0  # pivot 4 is 1 - 4 < 0 where A_44 = 1 > 0 (in the 2x2 split: a block's)
        a = np.stack([spd(6, 1), bad])
        assert raises_in_numpy(np.linalg.cholesky, a)
        for shape, lay in [({"d": 1}, {}), SPLIT]:
            x = sa.asarray(a, dims=("b", "i", "j"), mesh=sa.Mesh(shape, backend="cupy"), layout=lay)
            with pytest.raises(L.LinAlgError, match="not positive definite"):
                L.cholesky(x)
            good = sa.asarray(a[:1], dims=("b", "i", "j"), mesh=x.mesh, layout=lay)
            np.testing.assert_allclose(L.cholesky(good).numpy(), np.linalg.cholesky(a[:1]), rtol=1e-12)


def test_svd_and_eigh_checks_where_cupy_returns_nan(monkeypatch):
    """CuPy's svd and eigh do not raise either (the stand-in's NumPy ones do): with them returning NaN, as
    cuSOLVER does for NaN input, sa still raises, from its check on the device."""
    FakeCupy(gpus=4, strict=True).install(monkeypatch)
    import cupy

    def quiet(np_fn):
        def call(a, *args, **kwargs):
            h = cupy.asnumpy(a)
            try:
                out = np_fn(h, *args, **kwargs)
            except np.linalg.LinAlgError:
                out = np_fn(np.zeros_like(h), *args, **kwargs)
                out = tuple(np.full_like(o, np.nan) for o in out) if isinstance(out, tuple) else out * np.nan
            return tuple(cupy.asarray(o) for o in out) if isinstance(out, tuple) else cupy.asarray(out)

        return call

    for name in ("svd", "eigh", "eigvalsh"):
        monkeypatch.setattr(cupy.linalg, name, quiet(getattr(np.linalg, name)))
    a = np.random.default_rng(4).standard_normal((2, 8, 3))
    a[1, 2, 1] = np.nan
    for shape, lay in [({"d": 1}, {}), ({"all": 4}, {"i": "all"})]:
        x = sa.asarray(a, dims=("b", "i", "j"), mesh=sa.Mesh(shape, backend="cupy"), layout=lay)
        for fn in (L.svd, L.svdvals, L.pinv):
            with pytest.raises(L.LinAlgError, match="SVD did not converge"):
                fn(x)
    h = np.stack([spd(4, 1), spd(4, 2)])
    h[1, 3, 0] = np.nan
    x = sa.asarray(h, dims=("b", "i", "j"), mesh=sa.Mesh({"row": 2, "col": 2}, backend="cupy"), layout={"b": "row"})
    for fn in (L.eigh, L.eigvalsh):
        with pytest.raises(L.LinAlgError, match="eigenvalues did not converge"):
            fn(x)
    np.testing.assert_allclose(L.eigvalsh(x[{"b": slice(0, 1)}]).numpy(), np.linalg.eigvalsh(h[:1]), rtol=1e-12)
