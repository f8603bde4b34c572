"""VJPs of sa.linalg.inv, det, solve, cholesky, slogdet, qr, svdvals, svd and pinv against float64 central
differences (tests/support/gradcheck.py), on split and unsplit layouts; svd and pinv also at repeated singular
values, pinv at rank-deficient matrices (tests/autograd/test_no_silent_gradients.py has their generic cases)."""

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


# ---- svd and pinv at repeated singular values, rank-deficient pinv, the new dim's name ----------------------
REPEATED = [
    ({"d": 1}, {}),
    ({"row": 2, "col": 2}, {"i": ("row", "col")}),  # TSQR over the split rows
    ({"row": 2, "col": 2}, {"b": "row", "i": "col"}),
    ({"row": 2, "col": 2}, {"i": "row", "j": "col"}),  # split in 2-D: an alltoall to the rows first
    ({"p": 3, "q": 2}, {"i": ("p", "q")}),
    ({"p": 3, "q": 2}, {"b": "q", "j": "p"}),
]


def _tied(m, n):
    """Two m x n matrices with repeated singular values (2, 2, 1 and 3, 1, 1), as signed row and column
    permutations of diagonals: the factorizations see them exactly, ties included."""
    k = min(m, n)
    out = np.zeros((2, m, n))
    for b, d in enumerate(([2.0, 2.0, 1.0], [3.0, 1.0, 1.0])):
        out[b, np.arange(k), np.arange(k)] = d[:k]
    rng = np.random.default_rng(m * 10 + n)
    rows, cols = rng.permutation(m), rng.permutation(n)
    return out[:, rows][:, :, cols] * rng.choice([-1.0, 1.0], m)[:, None] * rng.choice([-1.0, 1.0], n)


@pytest.mark.parametrize("shape,lay", REPEATED)
@pytest.mark.parametrize("m,n", [(7, 3), (3, 6), (3, 3)])
def test_svd_pinv_grads_at_repeated_singular_values(shape, lay, m, n):
    """Equal singular values drop only the 1/(s_j - s_i) part of the singular-vector term: the polar factor
    U Vh (whose gradient lives in the 1/(s_j + s_i) part) and pinv (closed form) match finite differences."""
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(5)
    x = sa.asarray(_tied(m, n), dims=("b", "i", "j"), mesh=mesh, layout=lay)
    np.testing.assert_array_equal(sa.linalg.svdvals(x).numpy()[:, :2], [[2.0, 2.0], [3.0, 1.0]])  # exact ties
    w = sa.asarray(rng.standard_normal((2, m, n)), dims=("b", "i", "j"), mesh=mesh)
    wp = sa.asarray(rng.standard_normal((2, n, m)), dims=("b", "j", "i"), mesh=mesh)

    def polar(p):
        u, _, vh = sa.linalg.svd(p)
        return sa.sum(sa.einsum(u, vh, out=("b", "i", "j")) * w)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        check_grad(polar, x)
        check_grad(lambda p: sa.sum(sa.linalg.svd(p).S ** 3), x)  # symmetric in the tied values: differentiable
        check_grad(lambda p: sa.sum(sa.linalg.pinv(p) * wp), x)


@pytest.mark.parametrize("shape,lay", REPEATED)
def test_pinv_grad_equals_inv_grad(shape, lay):
    """On invertible matrices pinv is inv with the dims swapped, gradient included: at 2I (one singular value
    three times; the SVD's factors alone got this wrong) and at a generic matrix."""
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(6)
    a = np.stack([2 * np.eye(3), rng.standard_normal((3, 3)) + 3 * np.eye(3)])
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    wn = np.stack([np.arange(9.0).reshape(3, 3), rng.standard_normal((3, 3))])
    wp = sa.asarray(wn, dims=("b", "j", "i"), mesh=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        g = check_grad(lambda p: sa.sum(sa.linalg.pinv(p) * wp), x)
        g_inv = sa.grad(lambda p: sa.sum(sa.linalg.inv(p).rename({"i": "j", "j": "i"}) * wp))(x)
    np.testing.assert_allclose(g.numpy(), g_inv.numpy(), atol=1e-12)
    np.testing.assert_allclose(g.numpy()[0], -wn[0] / 4, atol=1e-12)  # -Pᵀ G Pᵀ with P = I/2


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}])
def test_positional_pinv_takes_the_closed_form_gradient(shape):
    """``xp.linalg.pinv`` of a real matrix is ``sa.linalg.pinv``: at 2I its gradient is -Pᵀ W Pᵀ = -W / 4 (built
    from ``xp.linalg.svd`` it lost the off-diagonal entries), and its values are NumPy's, with ``rtol`` too."""
    import shardarray.array_api as xp

    w = np.arange(9.0).reshape(3, 3)
    b = np.random.default_rng(7).standard_normal((7, 3))
    with sa.default_mesh(sa.Mesh(shape)):
        wp = xp.asarray(w)
        _, g = sa.value_and_grad(lambda a: xp.sum(xp.linalg.pinv(a) * wp))(xp.asarray(2 * np.eye(3)))
        np.testing.assert_allclose(np.asarray(g), -w / 4, atol=1e-12)
        for rtol in (None, 0.5):
            np.testing.assert_allclose(np.asarray(xp.linalg.pinv(xp.asarray(b), rtol=rtol)),
                                       np.linalg.pinv(b, rtol=rtol), atol=1e-12)


@pytest.mark.parametrize("shape,lay", REPEATED)
@pytest.mark.parametrize("m,n", [(7, 4), (4, 6)])
def test_pinv_grad_rank_deficient(shape, lay, m, n):
    """pinv of a rank-2 product F C: the closed form is the derivative along perturbations that keep the rank,
    checked through F and C (the SVD's factors alone divide by the zero singular values)."""
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(7)
    f = sa.asarray(rng.standard_normal((2, m, 2)), dims=("b", "i", "r"), mesh=mesh,
                   layout={d: a for d, a in lay.items() if d != "j"})
    c = sa.asarray(rng.standard_normal((2, 2, n)), dims=("b", "r", "j"), mesh=mesh,
                   layout={d: a for d, a in lay.items() if d != "i"})
    wp = sa.asarray(rng.standard_normal((2, n, m)), dims=("b", "j", "i"), mesh=mesh)

    def loss(p):
        x = sa.einsum(p["f"], p["c"], out=("b", "i", "j")).relayout(lay)
        return sa.sum(sa.linalg.pinv(x) * wp)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        check_grad(loss, {"f": f, "c": c}, rtol=1e-5)


@pytest.mark.parametrize("shape,lay", [({"d": 1}, {}), ({"row": 2, "col": 2}, {"j_k": ("row", "col")}),
                                       ({"p": 3, "q": 2}, {"j_k": "p", "j": "q"})])
def test_svd_new_dim_taken(shape, lay):
    """A matrix with dims (j_k, j), as qr's R has: svd/svdvals refuse the default new='j_k'; svdvals with
    another name, the 2/-2/nuclear norms (which pick their own) and pinv have the right values and gradients."""
    mesh = sa.Mesh(shape)
    a = np.random.default_rng(8).standard_normal((5, 3))
    x = sa.asarray(a, dims=("j_k", "j"), mesh=mesh, layout=lay)
    for fn in (sa.linalg.svd, sa.linalg.svdvals):
        with pytest.raises(sa.DimensionError, match="new='j_k' is already a dim of x"):
            fn(x)
    u, s, vh = sa.linalg.svd(x, new="k")
    assert (u.dims, u.shape, vh.dims) == (("j_k", "k"), (5, 3), ("k", "j"))
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(float(sa.linalg.matrix_norm(x, ord="nuc")), np.linalg.norm(a, "nuc"), rtol=1e-12)
    check_grad(lambda p: sa.sum(sa.linalg.svdvals(p, new="k") ** 3), x)
    for ord in ("nuc", 2, -2):
        check_grad(lambda p, o=ord: sa.linalg.matrix_norm(p, ord=o) * 1.0, x)
    check_grad(lambda p: sa.sum(sa.linalg.pinv(p) ** 2), x)
    r = sa.linalg.qr(sa.asarray(np.random.default_rng(9).standard_normal((6, 3)), dims=("i", "j"), mesh=mesh)).R
    check_grad(lambda p: sa.linalg.matrix_norm(p, ord="nuc") * 1.0, r)
