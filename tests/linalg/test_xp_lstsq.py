"""``xp.linalg.lstsq`` (and ``np.linalg.lstsq`` on positional arrays) against NumPy: tall, wide, rank-deficient and
square systems, 1-D and 2-D right-hand sides, every mesh."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from helpers import MESH_SHAPES

RNG = np.random.default_rng(0)
SYSTEMS = [
    (RNG.standard_normal((7, 3)), RNG.standard_normal(7)),
    (RNG.standard_normal((7, 3)), RNG.standard_normal((7, 2))),
    (RNG.standard_normal((3, 5)), RNG.standard_normal(3)),  # wide: the minimum-norm solution, no residuals
    (np.c_[np.ones(6), np.ones(6), np.arange(6.0)], RNG.standard_normal(6)),  # rank 2 of 3: no residuals
    (RNG.standard_normal((4, 4)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)),
]


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
@pytest.mark.parametrize("k", range(len(SYSTEMS)))
def test_lstsq_matches_numpy(shape, k):
    a, b = SYSTEMS[k]
    want = np.linalg.lstsq(a, b, rcond=None)
    with sa.default_mesh(sa.Mesh(shape)):
        got = np.linalg.lstsq(xp.asarray(a), xp.asarray(b))
    assert all(type(g) is xp.Array for g in got)
    tol = 1e-4 if a.dtype == np.float32 else 1e-10
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    assert np.asarray(got[0]).dtype == want[0].dtype


def test_lstsq_rcond_and_bad_input():
    a = np.diag([1.0, 1e-8, 0.0])
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.asarray(a)
        _, _, rank, _ = xp.linalg.lstsq(x, xp.asarray(np.ones(3)), rcond=1e-6)
        assert int(rank) == np.linalg.lstsq(a, np.ones(3), rcond=1e-6)[2] == 1
        with pytest.raises(sa.DimensionError, match="M = 3 rows"):
            xp.linalg.lstsq(x, xp.asarray(np.ones(4)))
        with pytest.raises(sa.DimensionError, match="one matrix"):
            xp.linalg.lstsq(xp.asarray(np.ones((2, 3, 3))), xp.asarray(np.ones(3)))
