"""Elementwise ops and sums run big blocks of an emulated mesh on the copy pool at once.

``plans.map_classes(..., backend)`` hands the distinct blocks to ``comm.parallel.run_all`` when they hold
``MIN_BYTES`` or more in all and the pool is usable (NumPy shards, more than one thread); the results are the
serial ones, bit for bit, and replicas still share one block.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import backend_name

import shardarray as sa
import shardarray.array_api as xp
from shardarray.comm import parallel
from shardarray.core import plans

pytestmark = pytest.mark.skipif(backend_name() != "numpy", reason="the copy pool runs NumPy shards only")


@pytest.fixture
def pool(monkeypatch):
    """Every block on the pool (2 workers, no size floor), and the number of pooled calls."""
    calls = []
    real = parallel.run_all

    def counting(jobs, nbytes, backend):
        calls.append(len(jobs))
        return real(jobs, nbytes, backend)

    monkeypatch.setattr(parallel, "workers", lambda: 2)
    monkeypatch.setattr(plans, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(plans, "run_all", counting)
    return calls


def test_elementwise_and_sum_on_the_pool_equal_serial(pool):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((9, 7)), rng.standard_normal((9, 7))
    mesh = sa.Mesh({"row": 2, "col": 2})
    x, y = xp.asarray(a, device=mesh), xp.asarray(b, device=mesh)
    z = xp.exp(x) * y + 1
    s = xp.sum(z, axis=1)
    assert pool, "the blocks did not go to the pool"
    np.testing.assert_array_equal(np.asarray(z), np.exp(a) * b + 1)
    np.testing.assert_allclose(np.asarray(s), np.sum(np.exp(a) * b + 1, axis=1), rtol=1e-13)
    # a 1-D array split over row only: col replicas share each block
    v = xp.asarray(a[:, 0].copy(), device=mesh)
    w = v * 2.0
    assert w.shards[0] is w.shards[1] and w.shards[2] is w.shards[3]
    np.testing.assert_array_equal(np.asarray(w), a[:, 0] * 2.0)


def test_named_softmax_with_the_pool_on(pool):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 10))
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(a, dims=("b", "v"), mesh=mesh, layout={"b": ("row", "col")})
    got = sa.softmax(x, "v").numpy()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-13)
