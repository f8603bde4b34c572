"""``np.einsum`` on shardarray arrays with NumPy's whole subscript language: ``...`` broadcasting and letters
repeated within a term (diagonals and traces), positional (``xp``) arrays staying positional, on every mesh."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from helpers import MESH_SHAPES

CASES = [
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 6)]),  # a size-1 axis broadcast against 5; implicit output
    ("ij...,jk...->ik...", [(3, 4, 2), (4, 5, 2)]),
    ("...i,...i->...", [(3, 4), (3, 4)]),
    ("i...->...", [(3, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ii->i", [(5, 5)]),
    ("ii", [(5, 5)]),  # the trace
    ("iij->j", [(3, 3, 4)]),
    ("iii->i", [(3, 3, 3)]),
    ("ij,jj->i", [(4, 3), (3, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),  # (no '...' or repeat: as before)
]


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_np_einsum_subscripts_match_numpy(shape, eq, shapes):
    rng = np.random.default_rng(len(eq))
    host = [rng.standard_normal(s) for s in shapes]
    with sa.default_mesh(sa.Mesh(shape)):
        got = np.einsum(eq, *(xp.asarray(h) for h in host))
    want = np.einsum(eq, *host)
    assert isinstance(got, xp.Array)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_named_arrays_take_the_same_subscripts():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.arange(9.0).reshape(3, 3)
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    np.testing.assert_allclose(np.einsum("ii->i", x).numpy(), np.diag(a))
    assert float(np.einsum("ii", x)) == np.trace(a)


@pytest.mark.parametrize("eq,shapes,match", [
    ("...ij->ij", [(2, 3, 4)], "no '...'"),
    ("ij->i", [(2, 3, 4)], "name each"),
    ("ii->i", [(3, 4)], r"differ in size \(3 != 4\)"),
    ("....ij->ij", [(2, 3, 4)], "'...'"),
])
def test_bad_subscripts_get_typed_errors(eq, shapes, match):
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        arrays = [xp.asarray(np.ones(s)) for s in shapes]
        with pytest.raises((sa.DimensionError, sa.ArgumentError), match=match):
            np.einsum(eq, *arrays)
