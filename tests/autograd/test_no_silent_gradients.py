"""No silent zero gradients: every op either has a VJP or raises ``TapeError`` on an array being differentiated.

An op that read a traced array's shards outside the op mechanism used to return an untracked array, which the
tape took for a constant: ``x[x > t]``, ``sa.select``, ``sa.unique_values``, ``sa.imag`` gave zero gradients
without a word. Now ``ShardArray.shards`` refuses such a read, ops without a gradient are declared
(``core.tape.nondifferentiable``), and masked selection and complex parts have real VJPs, checked here
against float64 finite differences.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gradcheck import check_grad

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}]


def _array(mesh, shape, layout, seed=0):
    dims = ("a", "b")[: len(shape)]
    return sa.asarray(np.random.default_rng(seed).standard_normal(shape), dims=dims, mesh=mesh, layout=layout)


def _layouts(mesh):
    axes = mesh.axis_names
    if len(axes) == 1:
        return [{}]
    return [{"a": axes[0]}, {"a": axes[0], "b": axes[1]}, {"a": axes[:2]}]


@pytest.mark.parametrize("shape", MESHES)
def test_masked_selection_gradients(shape):
    """``sa.select`` and ``x[mask]`` (one and two mask dims, split or not, uneven blocks) against finite
    differences: the gradient is the cotangent at the selected positions, zero elsewhere."""
    mesh = sa.Mesh(shape)
    for layout in _layouts(mesh):
        x = _array(mesh, (5, 7), layout)
        w1 = _array(mesh, (5, 7), layout, seed=1)
        mask2 = x.numpy() > 0.1  # fixed: the mask does not move with the finite-difference steps
        m2 = sa.asarray(mask2, dims=("a", "b"), mesh=mesh, layout=layout)
        m1 = sa.asarray(mask2[:, 0], dims=("a",), mesh=mesh, layout={k: v for k, v in layout.items() if k == "a"})
        weights = np.random.default_rng(2).standard_normal(int(mask2.sum()))

        def two_dims(p, m2=m2, weights=weights):
            picked = sa.select(p, m2)  # (a_b,)
            w = sa.asarray(weights, dims=("a_b",), mesh=mesh, layout=picked.layout)
            return (picked * picked * w).sum()

        def one_dim(p, m1=m1, w1=w1):
            return (sa.select(p, m1, "k") * sa.select(w1, m1, "k")).sum()

        check_grad(two_dims, x)
        check_grad(one_dim, x)
        g = sa.grad(lambda p, m2=m2: sa.select(p, m2).sum())(x).numpy()
        np.testing.assert_array_equal(g, mask2.astype(float))


def test_positional_boolean_indexing_gradient():
    import shardarray.array_api as xp
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(12.0).reshape(3, 4) - 5, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    mask = x.numpy() > 0
    g = sa.grad(lambda p: (p[sa.asarray(mask, dims=("a", "b"), mesh=mesh)] ** 2).sum())(x)
    np.testing.assert_allclose(g.numpy(), np.where(mask, 2 * x.numpy(), 0.0))
    a = xp.asarray(x.numpy())
    ga = sa.grad(lambda p: xp.sum(p[p > 0] ** 2))(a)
    np.testing.assert_allclose(np.asarray(ga.numpy()), np.where(mask, 2 * x.numpy(), 0.0))


@pytest.mark.parametrize("shape", MESHES)
def test_complex_parts_gradients(shape):
    """real, imag, conj and abs of a complex value built from real parameters, against finite differences (the
    cotangent convention of a complex value is JAX's, so chains through complex products stay right)."""
    mesh = sa.Mesh(shape)
    layout = _layouts(mesh)[-1]
    params = {"x": _array(mesh, (3, 5), layout), "y": _array(mesh, (3, 5), layout, seed=1)}
    w = _array(mesh, (3, 5), layout, seed=2)
    v = sa.asarray(np.random.default_rng(3).standard_normal((3, 5)) * (1 - 2j), dims=("a", "b"), mesh=mesh,
                   layout=layout)

    def z(p):
        return p["x"].astype("complex128") + p["y"].astype("complex128") * (0.5 + 1j)

    for f in (lambda p: (sa.real(z(p) * v) * w).sum(), lambda p: (sa.imag(z(p) * v) * w).sum(),
              lambda p: sa.real(sa.conj(z(p)) * v).sum(), lambda p: (sa.abs(z(p) * v) * w).sum(),
              lambda p: (sa.imag(p["x"]) + p["y"] * w).sum()):
        check_grad(f, params)


@pytest.mark.parametrize("op", [
    lambda x: sa.unique_values(x), lambda x: sa.unique_counts(x), lambda x: sa.nextafter(x, 0.0),
    lambda x: sa.unique(x),
])
def test_nondifferentiable_ops_with_float_results_raise(op):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = _array(mesh, (4, 3), {"a": "row"})
    with pytest.raises(sa.TapeError, match=r"not differentiable.*sa\.stop_gradient"):
        sa.grad(lambda p: op(p)[0].sum() if isinstance(op(p), tuple) else op(p).sum())(x)
    # the way out: the value as a constant
    g = sa.grad(lambda p: (p * 2.0).sum() + sa.stop_gradient(p).sum())(x)
    np.testing.assert_array_equal(g.numpy(), np.full((4, 3), 2.0))


def test_integer_and_bool_results_are_usable_in_a_loss():
    """argmax, argsort, comparisons, isnan, searchsorted, nonzero: no gradient, and none needed."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = _array(mesh, (4, 6), {"a": "row", "b": "col"})
    edges = sa.asarray(np.linspace(-1, 1, 5), dims=("e",), mesh=mesh)

    def loss(p):
        i = sa.argmax(p, "b").astype("float64") + sa.argsort(p, "b").astype("float64").sum("b")
        keep = sa.logical_and(p > -0.5, sa.logical_not(sa.isnan(p)))
        n = sa.count_nonzero(keep).astype("float64") + sa.searchsorted(edges, p.sum("b")).astype("float64").sum()
        return (sa.where(keep, p, 0.0) * i).sum() + n + float(len(sa.nonzero(keep)[0].numpy()))

    check_grad(loss, x)


def test_an_op_reading_a_traced_array_outside_the_tape_raises():
    """Code that reads the shards of an array being differentiated without going through the tape (an op that
    forgot its VJP) fails loudly, naming the function, instead of returning a constant."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = _array(mesh, (4, 3), {"a": "row"})

    def forgetful_double(y):
        return sa.ShardArray(y.mesh, y.spec, y.dtype, [2 * s for s in y.shards], y.pending)

    with pytest.raises(sa.TapeError, match="forgetful_double|no gradient rule"):
        sa.grad(lambda p: forgetful_double(p).sum())(x)
    # outside value_and_grad, the same code runs
    np.testing.assert_array_equal(forgetful_double(x).numpy(), 2 * x.numpy())


@pytest.mark.parametrize("shape", MESHES)
def test_eigh_gradients(shape):
    """eigh's eigenvalues and eigenvectors (sign-invariant losses) and eigvalsh, batched, against finite differences
    on symmetric inputs ``b + b^T``."""
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    rng = np.random.default_rng(0)
    b = sa.asarray(rng.standard_normal((2, 4, 4)), dims=("n", "i", "j"), mesh=mesh, layout={"n": axes[0]})
    wv = sa.asarray(rng.standard_normal((2, 4, 4)), dims=("n", "i", "j_k"), mesh=mesh)
    ww = sa.asarray(rng.standard_normal((2, 4)), dims=("n", "j_k"), mesh=mesh)

    def sym(p):
        return p + p.rename({"i": "j", "j": "i"})

    check_grad(lambda p: (sa.linalg.eigvalsh(sym(p), ("i", "j")) * ww).sum(), b)
    check_grad(lambda p: (sa.linalg.eigh(sym(p), ("i", "j")).eigenvalues ** 2 * ww).sum(), b)
    check_grad(lambda p: (sa.linalg.eigh(sym(p), ("i", "j")).eigenvectors ** 2 * wv).sum(), b)


def test_eigh_gradient_at_a_degenerate_eigenvalue_is_finite():
    """Equal eigenvalues: the eigenvector term drops their pair (documented), so the gradient stays finite and a
    loss of the eigenvalues alone gets the exact one."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = sa.asarray(np.diag([1.0, 1.0, 3.0]), dims=("i", "j"), mesh=mesh)
    g = sa.grad(lambda p: sa.linalg.eigh(p, ("i", "j")).eigenvalues.sum())(a)  # the trace: gradient I
    np.testing.assert_allclose(g.numpy(), np.eye(3), atol=1e-12)
    # the squared eigenvectors summed over the degenerate pair and the top one: basis-invariant, finite
    g = sa.grad(lambda p: (sa.linalg.eigh(p, ("i", "j")).eigenvectors ** 2).sum())(a)
    assert np.isfinite(g.numpy()).all()


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("m,n", [(7, 3), (3, 5), (4, 4)])
def test_svd_and_pinv_gradients(shape, m, n):
    """U, S and Vh (sign-invariant losses) and pinv, tall (TSQR over split rows), wide and square, batched,
    against finite differences."""
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    rng = np.random.default_rng(m * 10 + n)
    layout = {"n": axes[0], "i": axes[1:]} if len(axes) > 1 else {}
    x = sa.asarray(rng.standard_normal((2, m, n)), dims=("n", "i", "j"), mesh=mesh, layout=layout)
    k = min(m, n)
    wu = sa.asarray(rng.standard_normal((2, m, k)), dims=("n", "i", "j_k"), mesh=mesh)
    ws = sa.asarray(rng.standard_normal((2, k)), dims=("n", "j_k"), mesh=mesh)
    wv = sa.asarray(rng.standard_normal((2, k, n)), dims=("n", "j_k", "j"), mesh=mesh)
    wp = sa.asarray(rng.standard_normal((2, n, m)), dims=("n", "j", "i"), mesh=mesh)
    check_grad(lambda p: (sa.linalg.svd(p, ("i", "j")).S * ws).sum(), x)
    check_grad(lambda p: (sa.linalg.svd(p, ("i", "j")).U ** 2 * wu).sum(), x, rtol=1e-5)
    check_grad(lambda p: (sa.linalg.svd(p, ("i", "j")).Vh ** 2 * wv).sum(), x, rtol=1e-5)
    check_grad(lambda p: (sa.linalg.pinv(p, ("i", "j")) * wp).sum(), x, rtol=1e-5)


@pytest.mark.parametrize("shape", MESHES)
def test_det_gradient_at_singular_matrices(shape):
    """det's gradient is the adjugate's transpose, also where the inverse does not exist (rank n-1, n-2, 0)."""
    mesh = sa.Mesh(shape)
    for a in (np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]), np.outer([1.0, 2.0, 3.0], [1.0, 0.5, 2.0]),
              np.zeros((3, 3)), np.random.default_rng(0).standard_normal((3, 3))):
        x = sa.asarray(a, dims=("i", "j"), mesh=mesh)
        g = sa.grad(lambda p: sa.linalg.det(p, ("i", "j")))(x).numpy()
        eps = 1e-6
        fd = np.array([(np.linalg.det(a + e) - np.linalg.det(a - e)) / (2 * eps)
                       for e in np.eye(9).reshape(9, 3, 3) * eps]).reshape(3, 3)
        np.testing.assert_allclose(g, fd, atol=1e-8)


@pytest.mark.parametrize("shape", MESHES)
def test_cumprod_gradient_with_zeros(shape):
    """cumprod's gradient with zeros anywhere in a row (one, several, first, last, all), the scanned dim split."""
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    rows = np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [2.0, 0.0, 3.0, 1.5, 5.0], [0.0, 1.0, 3.0, 1.0, 5.0],
                     [2.0, 1.0, 3.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0], [2.0, 1.0, 3.0, -1.0, 5.0]])
    x = sa.asarray(rows, dims=("r", "i"), mesh=mesh, layout={"i": axes[-1]} if len(axes) > 1 else {})
    w = sa.asarray(np.random.default_rng(1).standard_normal(rows.shape), dims=("r", "i"), mesh=mesh)
    g = sa.grad(lambda p: (sa.cumprod(p, "i") * w).sum())(x).numpy()
    eps = 1e-6
    fd = np.zeros_like(rows)
    for idx in np.ndindex(rows.shape):
        e = np.zeros_like(rows)
        e[idx] = eps
        fd[idx] = ((np.cumprod(rows + e, axis=1) * w.numpy()).sum() - (np.cumprod(rows - e, axis=1) * w.numpy()).sum()) / (2 * eps)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, fd, atol=1e-6)


def test_a_loss_computed_in_another_thread_raises_instead_of_a_zero_gradient():
    """The tape records the thread that called value_and_grad: reading a traced array elsewhere is a TapeError."""
    import threading

    x = sa.asarray(np.arange(4.0), dims=("a",), mesh=sa.Mesh({"row": 2}), layout={"a": "row"})
    errors = []

    def loss(p):
        def work():
            try:
                (p * 2.0).sum()
            except sa.TapeError as e:
                errors.append(e)

        t = threading.Thread(target=work)
        t.start()
        t.join()
        return (p * p).sum()  # the calling thread's own loss still differentiates

    g = sa.grad(loss)(x)
    assert len(errors) == 1 and "another thread differentiates it" in str(errors[0])
    np.testing.assert_array_equal(g.numpy(), 2 * np.arange(4.0))
    # after value_and_grad returned, the arrays are free to be read anywhere
    done = []
    t = threading.Thread(target=lambda: done.append(float((x * 2.0).sum())))
    t.start()
    t.join()
    assert done == [12.0]


def test_the_refusal_names_the_function_the_user_called():
    """The TapeError names NumPy's function or ufunc (``np.linalg.svd``, ``np.add``) or the sa op (``svd``), not
    the dispatch or the tape's wrapper it passed through (``__array_function__``, ``wrapper``)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    with sa.default_mesh(mesh):
        p = xp.asarray(np.random.default_rng(0).random((4, 3)))

        def out_add(p):
            c = xp.zeros((4, 3))
            np.add(p, 1, out=c)
            return xp.sum(c)

        w = sa.random.normal(mesh, {"i": 4, "j": 3})
        cases = [
            (lambda p: xp.sum(np.linalg.svd(p)[1]), p, "'np.linalg.svd'"),
            (out_add, p, "'np.add'"),
            (lambda w: sa.linalg.svd(w, ("i", "j"), full_matrices=True)[1].sum(), w, "'svd'"),
        ]
        for fn, arg, name in cases:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sa.GatherWarning)
                with pytest.raises(sa.TapeError, match=f"sa op {name} was given"):
                    sa.grad(fn)(arg)
