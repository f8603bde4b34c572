"""``sa.linalg.eig``/``eigvals`` and ``xp.linalg.eig``/``eigvals`` (the 2025.12 standard's): against NumPy on
random meshes and layouts (uneven and empty batches, split matrix dims that fall back), real and complex
spectra, float32/float64/complex input; the eigen-equation and unit norms; typed errors; NumPy's protocol."""

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


def _sorted(w):
    """Eigenvalues in one order (LAPACK's is unspecified): by real part, then imaginary part, per matrix."""
    return np.sort_complex(np.round(w, 9))


@st.composite
def square_case(draw):
    mesh = draw(meshes())
    n = draw(st.integers(1, 5))
    b = draw(st.integers(0, 4))
    lay = draw(layouts(mesh, ("b", "i", "j")))
    kind = draw(st.sampled_from(["float64", "float32", "complex128"]))
    return mesh, (b, n, n), lay, kind


@SETTINGS
@given(square_case())
def test_eig_and_eigvals_match_numpy(case):
    mesh, shape, lay, kind = case
    a = rand(shape, 1)
    if kind == "complex128":
        a = a + 1j * rand(shape, 2)
    a = a.astype(kind)
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    split = any(lay.get(d) for d in ("i", "j"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", L.ReplicatedFallbackWarning)
        w, v = L.eig(x, ("i", "j"))
        wv = L.eigvals(x, ("i", "j"))
    fell_back = any(issubclass(c.category, L.ReplicatedFallbackWarning) for c in caught)
    assert fell_back == (split and mesh.size > 1 and a.size > 0)  # a split matrix dim: the fallback, said
    want = np.dtype(np.complex64 if kind == "float32" else np.complex128)
    assert w.dtype == v.dtype == wv.dtype == want
    assert w.dims == wv.dims == ("b", "j_k") and v.dims == ("b", "i", "j_k")
    W, V, WV = w.numpy(), v.numpy(), wv.numpy()
    tol = 1e-4 if kind == "float32" else 1e-9
    np.testing.assert_allclose(np.einsum("bij,bjk->bik", a, V), V * W[:, None, :], atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0, atol=tol)
    if a.size:
        ref = np.linalg.eigvals(a.astype(np.complex128))
        np.testing.assert_allclose(_sorted(W.astype(np.complex128)), _sorted(ref), atol=tol * 10)
        np.testing.assert_allclose(_sorted(WV.astype(np.complex128)), _sorted(ref), atol=tol * 10)


def test_a_real_spectrum_is_still_complex_and_a_batch_split_stays_local():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.stack([np.diag([3.0, 1.0, 2.0]), np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 5.0]])])
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"b": "row"})
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("error", L.ReplicatedFallbackWarning)
        w = L.eigvals(x, ("i", "j"))
    assert not log.records
    assert w.dtype == np.complex128 and w.layout == {"b": ("row",)}
    np.testing.assert_array_equal(np.sort_complex(w.numpy()), np.sort_complex(np.linalg.eigvals(a).astype(complex)))


def test_rotation_has_conjugate_eigenvalues():
    mesh = sa.Mesh({"row": 2, "col": 2})
    t = 0.3
    a = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    w, v = L.eig(sa.asarray(a, dims=("i", "j"), mesh=mesh))
    np.testing.assert_allclose(np.sort_complex(w.numpy()), [np.exp(-1j * t), np.exp(1j * t)], atol=1e-14)
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy()[None, :], atol=1e-14)


@pytest.mark.parametrize("shape", [(4, 4), (3, 2, 2), (0, 3, 3), (5, 1, 1)], ids=str)
def test_xp_eig_and_numpy_dispatch(shape):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(shape)
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})), warnings.catch_warnings():
        warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)  # (xp splits the matrix axes by default)
        x = xp.asarray(a)
        r = xp.linalg.eig(x)
        assert type(r).__name__ == "EigResult" and type(r.eigenvalues) is xp.Array
        assert r.eigenvalues.shape == shape[:-1] and r.eigenvectors.shape == shape
        w, v = np.linalg.eig(x)  # NumPy's protocol: the namespace's (complex) result
        ww = np.linalg.eigvals(x)
        assert type(ww) is xp.Array and ww.dtype == np.complex128
        for got in (r.eigenvalues.numpy(), w.numpy(), ww.numpy()):
            ref = np.linalg.eigvals(a)
            np.testing.assert_allclose(_sorted(got), _sorted(ref.astype(complex)), atol=1e-9)
        V = v.numpy()
        np.testing.assert_allclose(a @ V, V * w.numpy()[..., None, :], atol=1e-9)


def test_eig_bad_input_is_typed():
    mesh = sa.Mesh({"row": 2, "col": 2})
    bad = np.eye(3)
    bad[1, 2] = np.nan
    x = sa.asarray(np.stack([np.eye(3), bad]), dims=("b", "i", "j"), mesh=mesh, layout={"b": "row"})
    for fn in (L.eig, L.eigvals):
        with pytest.raises(L.LinAlgError, match="did not converge"):
            fn(x, ("i", "j"))
        with pytest.raises(sa.DimensionError):
            fn(sa.asarray(np.ones((2, 3)), dims=("i", "j"), mesh=mesh))
        with pytest.raises(sa.DTypeError, match="floating"):
            fn(sa.asarray(np.eye(2, dtype=np.int64), dims=("i", "j"), mesh=mesh))
        with pytest.raises(sa.DTypeError, match="16"):
            fn(sa.asarray(np.eye(2, dtype=np.float16), dims=("i", "j"), mesh=mesh))
        with pytest.raises(sa.DimensionError, match="already a dim"):
            fn(sa.asarray(np.eye(2), dims=("i", "j"), mesh=mesh), new="i")
