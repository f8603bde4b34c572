"""Copies are copies: an array made from host data never shares the caller's buffer (issue "Nothing silently
wrong, round 2", item 2), so changing the host array afterwards changes nothing, and no cache (the id range
``sa.take`` checks ids against) outlives the data it describes."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}]


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("split", [True, False])
def test_host_data_is_copied(shape, split):
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    host = np.arange(24.0).reshape(6, 4)
    want = host.copy()
    named = sa.asarray(host, dims=("a", "b"), mesh=mesh, layout={"a": axes[0]} if split else {})
    positional = xp.asarray(host, device=mesh)
    host[...] = -1.0
    np.testing.assert_array_equal(named.numpy(), want)
    np.testing.assert_array_equal(positional.numpy(), want)


@pytest.mark.parametrize("shape", MESHES)
def test_take_checks_ids_after_the_host_array_changed(shape):
    mesh = sa.Mesh(shape)
    ids = np.array([0, 1, 2, 3])
    t = sa.asarray(ids, dims=("n",), mesh=mesh)
    ids[0] = 100  # the caller reuses its buffer: the distributed ids are still 0..3
    table = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("vocab", "d"), mesh=mesh)
    np.testing.assert_array_equal(sa.take(table, t, "vocab").numpy(), np.arange(8.0).reshape(4, 2))
    bad = np.array([0, 1, 2, 4])
    with pytest.raises(sa.ShardArrayError):
        sa.take(table, sa.asarray(bad, dims=("n",), mesh=mesh), "vocab")


def test_copy_true_of_an_array_shares_nothing():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = xp.asarray(np.arange(8.0).reshape(2, 4), device=mesh)
    b = xp.asarray(a, copy=True)
    assert all(x is None or y is None or not np.shares_memory(x, y) for x, y in zip(a.shards, b.shards))
    c = xp.astype(a, a.dtype, copy=True)
    assert all(x is None or y is None or not np.shares_memory(x, y) for x, y in zip(a.shards, c.shards))
