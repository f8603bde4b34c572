"""VJPs of sa.linalg.inv, det, solve, cholesky, slogdet, qr and svdvals against float64 central differences
(tests/support/gradcheck.py), on split and unsplit layouts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gradcheck import check_grad

import shardarray as sa

CASES = [
    ({"d": 1}, {}),
    ({"row": 2, "col": 2}, {"b": "row"}),
    ({"row": 2, "col": 2}, {"i": "row", "j": "col"}),  # split matrix: the replicated fallback
    ({"p": 3, "q": 2}, {"b": "p", "j": "q"}),
    ({"x": 2, "y": 2, "z": 2}, {"b": ("x", "y"), "i": "z"}),
]


@pytest.mark.parametrize("shape,lay", CASES)
def test_inv_det_solve_grads(shape, lay):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    B = rng.standard_normal((3, 4, 2))
    a = sa.asarray(A, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    b = sa.asarray(B, dims=("b", "j", "k"), mesh=mesh)
    w = sa.asarray(rng.standard_normal((3, 4, 4)), dims=("b", "i", "j"), mesh=mesh)
    w2 = sa.asarray(rng.standard_normal((3, 4, 2)), dims=("b", "j", "k"), mesh=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        check_grad(lambda p: sa.sum(sa.linalg.inv(p) * w), a)
        check_grad(lambda p: sa.sum(sa.linalg.det(p) ** 2), a, rtol=1e-5)
        check_grad(lambda p: sa.sum(sa.linalg.solve(p["a"], p["b"], b_dims=("j", "k")) * w2), {"a": a, "b": b})


GRAD2 = [
    ({"d": 1}, {}, {}),
    ({"row": 2, "col": 2}, {"i": "row", "j": "col"}, {"i": ("row", "col")}),  # 2-D Cholesky; TSQR on the rows
    ({"row": 2, "col": 2}, {"b": "row"}, {"b": "row", "j": "col"}),           # batched; QR with split columns
    ({"p": 3, "q": 2}, {"i": "p", "j": "q"}, {"i": "p", "b": "q"}),
    ({"x": 2, "y": 2, "z": 2}, {"b": "z", "i": "x", "j": "y"}, {"i": ("x", "y")}),
]


@pytest.mark.parametrize("shape,lay,tall", GRAD2)
def test_cholesky_slogdet_grads(shape, lay, tall):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(2)
    m = rng.standard_normal((2, 5, 5))
    A = m @ np.swapaxes(m, -1, -2) + 5 * np.eye(5)
    a = sa.asarray(A, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    w = sa.asarray(rng.standard_normal((2, 5, 5)), dims=("b", "i", "j"), mesh=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.linalg.ReplicatedFallbackWarning)  # SPD: the distributed path throughout
        check_grad(lambda p: sa.sum(sa.linalg.cholesky(p) * w), a)
        check_grad(lambda p: sa.sum(sa.linalg.cholesky(p, upper=True) * w), a)
        _, g = sa.value_and_grad(lambda p: sa.sum(sa.linalg.slogdet(p).logabsdet ** 2))(a)
    with warnings.catch_warnings():  # the finite differences step off the symmetric matrices: the LU fallback
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        g2 = check_grad(lambda p: sa.sum(sa.linalg.slogdet(p).logabsdet ** 2), a)
    np.testing.assert_allclose(g.numpy(), g2.numpy(), rtol=1e-12)


@pytest.mark.parametrize("shape,lay,tall", GRAD2)
def test_qr_svdvals_grads(shape, lay, tall):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(3)
    x = sa.asarray(rng.standard_normal((2, 9, 3)), dims=("b", "i", "j"), mesh=mesh, layout=tall)
    wq = sa.asarray(rng.standard_normal((2, 9, 3)), dims=("b", "i", "j_k"), mesh=mesh)
    wr = sa.asarray(rng.standard_normal((2, 3, 3)), dims=("b", "j_k", "j"), mesh=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.linalg.ReplicatedFallbackWarning)
        check_grad(lambda p: sa.sum(sa.linalg.qr(p).Q * wq), x)
        check_grad(lambda p: sa.sum(sa.linalg.qr(p).R * wr), x)
        check_grad(lambda p: sa.sum(sa.linalg.qr(p).Q * wq) + sa.sum(sa.linalg.qr(p).R * wr), x)
        check_grad(lambda p: sa.sum(sa.linalg.svdvals(p) ** 3), x)
    wide = sa.asarray(rng.standard_normal((2, 3, 6)), dims=("b", "i", "j"), mesh=mesh)
    check_grad(lambda p: sa.sum(sa.linalg.svdvals(p) ** 3), wide)


def test_slogdet_grad_non_spd_fallback():
    mesh = sa.Mesh({"row": 2, "col": 2})
    A = np.random.default_rng(4).standard_normal((5, 5)) + 4 * np.eye(5)
    a = sa.asarray(A, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        g = check_grad(lambda p: sa.linalg.slogdet(p).logabsdet * 1.0, a)
    np.testing.assert_allclose(g.numpy(), np.linalg.inv(A).T, atol=1e-10)
