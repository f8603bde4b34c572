"""``np.linalg`` functions with NumPy's own arguments on positional arrays, against NumPy: ``pinv`` (NumPy's default
cut-off ``rcond=1e-15``: the namespace's ``max(M, N)·eps`` default gave a silently different pseudo-inverse for a
matrix with a singular value between the two), ``rcond``/``rtol``, ``hermitian=True`` in ``svd``/``pinv``/
``matrix_rank``, ``matrix_rank(tol=, rtol=)``, ``eigh``/``eigvalsh(UPLO='U')`` and ``qr(mode='r')`` (all refused
before, but the default ``pinv``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"row": 2, "col": 2}, {"x": 3, "y": 2}, {"d": 1}]


def _matrices():
    rng = np.random.default_rng(3)
    b = rng.standard_normal((5, 5))
    return {
        "general": b,
        "symmetric": b + b.T,
        "complex": b + 1j * rng.standard_normal((5, 5)),
        "stack": rng.standard_normal((3, 4, 4)),
    }


def _close(got, want, phase=False):
    got = np.asarray(got)
    if phase:  # (singular and eigen vectors: NumPy's up to a sign or phase per column)
        got, want = np.abs(got), np.abs(want)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("shape", MESHES, ids=["2x2", "3x2", "1"])
@pytest.mark.parametrize("name", sorted(_matrices()))
def test_linalg_arguments_as_numpy(shape, name):
    a = _matrices()[name]
    with sa.default_mesh(sa.Mesh(shape)), warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.GatherWarning)
        x = xp.asarray(a)
        for kw in ({}, {"rcond": 0.3}, {"rtol": 0.3}, {"rtol": None}, {"hermitian": True}):
            _close(np.linalg.pinv(x, **kw), np.linalg.pinv(a, **kw))
        for kw in ({}, {"tol": 1.0}, {"rtol": 0.3}, {"hermitian": True}, {"hermitian": True, "tol": 2.0}):
            _close(np.linalg.matrix_rank(x, **kw), np.linalg.matrix_rank(a, **kw))
        for uplo in ("L", "U"):
            _close(np.linalg.eigvalsh(x, UPLO=uplo), np.linalg.eigvalsh(a, UPLO=uplo))
            w, v = np.linalg.eigh(x, UPLO=uplo)
            w0, v0 = np.linalg.eigh(a, UPLO=uplo)
            _close(w, w0)
            _close(v, v0, phase=True)
        for got, want in zip(np.linalg.svd(x, hermitian=True), np.linalg.svd(a, hermitian=True)):
            _close(got, want, phase=True)
        _close(np.linalg.svd(x, hermitian=True, compute_uv=False), np.linalg.svd(a, hermitian=True, compute_uv=False))
        _close(np.linalg.qr(x, mode="r"), np.linalg.qr(a, mode="r"), phase=True)


def test_pinv_keeps_numpys_default_cut_off():
    """A singular value of 5e-15 (relative) is kept by NumPy's ``rcond=1e-15`` and was cut by ``max(M, N)·eps``."""
    rng = np.random.default_rng(0)
    q1, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    q2, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    s = np.ones(40)
    s[-1] = 5e-15
    a = q1 @ np.diag(s) @ q2
    want = np.linalg.pinv(a)
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        got = np.asarray(np.linalg.pinv(xp.asarray(a)))
    assert np.abs(want).max() > 1e13
    np.testing.assert_allclose(got, want, rtol=0.05 * np.abs(want).max())
    assert abs(np.abs(got).max() / np.abs(want).max() - 1) < 0.05


def test_bad_linalg_arguments_are_typed_errors():
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.asarray(np.eye(3))
        with pytest.raises(sa.ArgumentError, match="UPLO"):
            np.linalg.eigh(x, UPLO="X")
        with pytest.raises(sa.ArgumentError, match="rtol or rcond"):
            np.linalg.pinv(x, rcond=0.1, rtol=0.1)
        with pytest.raises(sa.ArgumentError):
            np.linalg.qr(x, mode="raw")
        with pytest.raises(sa.ShardArrayError, match="asarray"):
            np.linalg.matrix_rank(x, tol=np.ones(3))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, v: np.linalg.inv(m),
        lambda m, v: np.linalg.det(m),
        lambda m, v: np.linalg.slogdet(m),
        lambda m, v: np.linalg.cholesky(m),
        lambda m, v: np.linalg.eigvalsh(m),
        lambda m, v: np.linalg.eig(m),
        lambda m, v: np.linalg.solve(m, v),
        lambda m, v: np.linalg.matrix_power(m, 2),
        lambda m, v: np.linalg.inv(v),
        lambda m, v: np.linalg.svd(v),
        lambda m, v: np.linalg.qr(v),
        lambda m, v: np.linalg.pinv(v),
    ],
    ids=[
        "inv",
        "det",
        "slogdet",
        "cholesky",
        "eigvalsh",
        "eig",
        "solve",
        "matrix_power",
        "inv-1d",
        "svd-1d",
        "qr-1d",
        "pinv-1d",
    ],
)
def test_matrices_of_the_wrong_shape_raise_numpys_linalg_error(call):
    """Not square, or fewer than 2 dims: NumPy raises ``LinAlgError``; here ``sa.linalg.MatrixShapeError``, a
    ``DimensionError`` that is also NumPy's ``LinAlgError`` (a ``DimensionError`` alone before)."""
    m, v = np.ones((3, 4)), np.ones(4)
    with pytest.raises(np.linalg.LinAlgError):
        call(m, v)
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        with pytest.raises(sa.linalg.MatrixShapeError) as caught:
            call(xp.asarray(m), xp.asarray(v))
    assert isinstance(caught.value, np.linalg.LinAlgError) and isinstance(caught.value, sa.DimensionError)
