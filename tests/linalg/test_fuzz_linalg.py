"""Regressions found by the differential fuzzer of ``sa.linalg`` / ``xp.linalg`` against NumPy, and a small
seeded sweep of it (random meshes, layouts, shapes with empty and uneven blocks, dtypes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import random_layout as _layout

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api._array import wrap

L = sa.linalg
MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}]


def _named(a, mesh, layout):
    return sa.asarray(a, dims=("i", "j"), mesh=mesh, layout=layout)


def _positional(a, mesh, layout):
    return wrap(sa.asarray(a, dims=("dim0", "dim1"), mesh=mesh, layout=layout))


@pytest.mark.parametrize("ord", [1, -1, math.inf, -math.inf])
def test_named_matrix_norm_of_integers_is_float64_as_numpy(ord):
    """The 1/inf matrix norms of an integer matrix were int64 (NumPy computes norms of integers in float64)."""
    a = np.arange(-6, 6).reshape(3, 4)
    x = _named(a, sa.Mesh({"row": 2, "col": 2}), {"i": "row", "j": "col"})
    got = L.matrix_norm(x, ord=ord)
    ref = np.linalg.matrix_norm(a, ord=ord)
    assert got.dtype == ref.dtype == np.float64
    assert float(got) == ref


@pytest.mark.parametrize("shape", [(0, 0), (3, 0), (0, 3)])
@pytest.mark.parametrize("ord", [1, math.inf, 2, "nuc", "fro"])
def test_max_type_norms_of_empty_matrices_are_zero_as_numpy(shape, ord):
    """NumPy's norms take the max with ``initial=0``: an empty matrix has norm 0. The named 1/inf/2 norms gave
    -inf (the max of nothing), the positional ones raised DimensionError."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.zeros((2, *shape))
    ref = np.linalg.matrix_norm(a, ord=ord)
    named = L.matrix_norm(sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"i": "row"}), ("i", "j"), ord=ord)
    np.testing.assert_array_equal(named.numpy(), ref)
    pos = xp.linalg.matrix_norm(wrap(sa.asarray(a, dims=("dim0", "dim1", "dim2"), mesh=mesh, layout={"dim1": "row"})),
                                ord=ord)
    np.testing.assert_array_equal(pos.numpy(), ref)


@pytest.mark.parametrize("shape, axis", [((0,), None), ((3, 0), -1), ((0, 3), 0)])
def test_positional_inf_vector_norm_of_nothing_is_zero(shape, axis):
    """``xp.linalg.vector_norm(ord=inf)`` over an empty axis raised (the max of nothing); NumPy gives 0."""
    a = np.zeros(shape)
    got = xp.linalg.vector_norm(xp.asarray(a, device=sa.Mesh({"row": 2, "col": 2})), ord=math.inf, axis=axis)
    np.testing.assert_array_equal(got.numpy(), np.linalg.vector_norm(a, ord=math.inf, axis=axis))


@pytest.mark.parametrize("ord", [2, 1, 0, 3, math.inf, -math.inf])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_positional_norms_of_integers_as_numpy(ord, dtype):
    """``xp.linalg.vector_norm``/``matrix_norm`` refused integer arrays (DTypeError) that NumPy and the named
    ``sa.linalg.vector_norm`` accept: float64 results."""
    a = np.arange(-5, 7, dtype=dtype).reshape(3, 4)
    x = _positional(a, sa.Mesh({"p": 3, "q": 2}), {"dim0": "p", "dim1": "q"})
    got = xp.linalg.vector_norm(x, ord=ord, axis=-1)
    ref = np.linalg.vector_norm(a, ord=ord, axis=-1)
    assert got.dtype == ref.dtype
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    if ord in (1, math.inf, -math.inf):
        got = xp.linalg.matrix_norm(x, ord=ord)
        ref = np.linalg.matrix_norm(a, ord=ord)
        assert got.dtype == ref.dtype and float(got) == ref


@pytest.mark.parametrize("layout", [{}, {"i": "row", "j": "col"}])
def test_svd_full_matrices_of_an_empty_square_matrix_names_dims_as_any_square(layout):
    """``full_matrices=True`` of a square matrix names U's and Vh's new dim ``cols + "_k"`` (the ``_u``/``_v``
    names are for m != n only); a 0x0 matrix got ``j_k_u``/``j_k_v``."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    for n in (0, 3):
        u, s, vh = L.svd(_named(np.eye(n), mesh, layout), full_matrices=True)
        assert (u.dims, s.dims, vh.dims) == (("i", "j_k"), ("j_k",), ("j_k", "j")), n


def test_matrix_power_one_is_a_new_array():
    """``xp.linalg.matrix_power(x, 1)`` returned ``x`` itself: a write to the result changed ``x``."""
    x = xp.asarray(np.arange(9.0).reshape(3, 3), device=sa.Mesh({"row": 2, "col": 2}))
    y = xp.linalg.matrix_power(x, 1)
    assert y is not x and isinstance(y, xp.Array)
    y[0, 0] = 100.0
    assert x.numpy()[0, 0] == 0.0 and y.numpy()[0, 0] == 100.0


@pytest.mark.parametrize("seed", range(4))
def test_seeded_sweep_against_numpy(seed):
    """A few random cases of the fuzzer: factorizations by their invariants, the rest by value and dtype."""
    rng = np.random.default_rng(seed)
    for mshape in MESHES:
        mesh = sa.Mesh(mshape)
        m, n = [(0, 3), (1, 5), (5, 1), (4, 4), (9, 2), (2, 9), (7, 7)][rng.integers(7)]
        dt = ["float32", "float64", "complex64", "complex128"][rng.integers(4)]
        a = rng.standard_normal((2, m, n)) + (1j * rng.standard_normal((2, m, n)) if dt[0] == "c" else 0)
        a = a.astype(dt)
        tol = 1e-3 if dt in ("float32", "complex64") else 1e-9
        x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=_layout(rng, mesh, ("b", "i", "j")))
        q, r = L.qr(x, ("i", "j"))
        np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=tol * 10)
        s = L.svdvals(x, ("i", "j"))
        assert s.dtype == np.linalg.svd(a, compute_uv=False).dtype
        np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), atol=tol * 10)
        for ord in ("fro", 1, math.inf, 2):
            got = L.matrix_norm(x, ("i", "j"), ord=ord)
            np.testing.assert_allclose(got.numpy(), np.linalg.matrix_norm(a, ord=ord), rtol=tol * 10)
        k = min(m, n)
        sq = a[:, :k, :k] @ np.conj(np.swapaxes(a[:, :k, :k], -1, -2)) + k * np.eye(k)
        y = sa.asarray(sq, dims=("b", "i", "j"), mesh=mesh, layout=_layout(rng, mesh, ("b", "i", "j")))
        np.testing.assert_allclose(L.cholesky(y, ("i", "j")).numpy(), np.linalg.cholesky(sq), atol=tol * 10)
        np.testing.assert_allclose(L.inv(y, ("i", "j")).numpy(), np.linalg.inv(sq), atol=tol * 10)
        np.testing.assert_allclose(L.slogdet(y, ("i", "j")).logabsdet.numpy(), np.linalg.slogdet(sq)[1],
                                   atol=tol * 100)

