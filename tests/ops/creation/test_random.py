"""Counter-based RNG: identical global values on every mesh, layout and backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from helpers import layouts, meshes

SIZES = {"a": 7, "b": 5, "c": 3}


def reference(fn, **kw):
    return fn(sa.Mesh({"d": 1}), SIZES, **kw).numpy()


@pytest.mark.parametrize("fn,kw", [
    (sa.random.normal, {"seed": 3}),
    (sa.random.uniform, {"seed": 3, "low": -2.0, "high": 5.0}),
    (sa.random.randint, {"seed": 3, "low": 10, "high": 20}),
    (sa.random.normal, {"seed": 3, "dtype": "float64"}),
])
@given(data=st.data())
@settings(max_examples=15, deadline=None)
def test_same_values_on_every_mesh_and_layout(fn, kw, data):
    mesh = data.draw(meshes())
    lay = data.draw(layouts(mesh, tuple(SIZES)))
    got = fn(mesh, SIZES, layout=lay, **kw)
    assert got.layout == lay
    np.testing.assert_array_equal(got.numpy(), reference(fn, **kw))


def test_seeds_differ_and_statistics():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.random.normal(mesh, {"i": 300, "j": 200}, seed=0, dtype="float64", layout={"i": "row"}).numpy()
    y = sa.random.normal(mesh, {"i": 300, "j": 200}, seed=1, dtype="float64").numpy()
    assert not np.array_equal(x, y)
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02
    assert abs(np.corrcoef(x.ravel(), y.ravel())[0, 1]) < 0.02
    u = sa.random.uniform(mesh, {"i": 300, "j": 200}, seed=2, low=1.0, high=3.0).numpy()
    assert u.min() >= 1.0 and u.max() < 3.0 and abs(u.mean() - 2.0) < 0.02
    t = sa.random.randint(mesh, {"i": 300, "j": 200}, 0, 10, seed=5).numpy()
    assert set(np.unique(t)) == set(range(10)) and t.dtype == np.int64


def test_shape_does_not_change_values_of_same_index():
    """The value depends on (seed, global linear index): a 1-D array equals the raveled 2-D one."""
    m = sa.Mesh({"all": 4})
    a = sa.random.normal(m, {"i": 4, "j": 6}, seed=9, layout={"j": "all"}).numpy()
    b = sa.random.normal(m, {"k": 24}, seed=9, layout={"k": "all"}).numpy()
    np.testing.assert_array_equal(a.ravel(), b)


def test_meta_backend_random_has_shapes_only():
    m = sa.Mesh({"row": 16, "col": 32}, backend="meta")
    w = sa.random.normal(m, {"d_model": 8192, "d_ff": 65536}, layout={"d_ff": "col"}, seed=0)
    assert w.shards[0].shape == (8192, 2048) and w.dtype == np.float32
