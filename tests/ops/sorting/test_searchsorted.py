"""searchsorted against NumPy on every test mesh and layout, and its one allreduce of one int64 per value."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES, layouts, meshes, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

SETTINGS = settings(max_examples=30, deadline=None)


@given(meshes(), st.data())
@SETTINGS
def test_searchsorted_matches_numpy(mesh, data):
    n = data.draw(st.integers(0, 20))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    s = rng.integers(-3, 4, n).astype(float)
    s[rng.random(n) < 0.1] = np.nan
    s[rng.random(n) < 0.1] = np.inf
    s = np.sort(s)
    vdims = ("a", "b")
    vshape = data.draw(sizes_strategy(vdims, 0, 5))
    v = rng.integers(-4, 5, vshape).astype(float)
    v[rng.random(vshape) < 0.1] = np.nan
    v[rng.random(vshape) < 0.1] = -0.0
    slay = data.draw(layouts(mesh, ("i",)))
    vlay = data.draw(layouts(mesh, vdims))
    side = data.draw(st.sampled_from(["left", "right"]))
    S = sa.asarray(s, dims=("i",), mesh=mesh, layout=slay)
    V = sa.asarray(v, dims=vdims, mesh=mesh, layout=vlay)
    r = sa.searchsorted(S, V, side=side)
    np.testing.assert_array_equal(r.numpy(), np.searchsorted(s, v, side=side))
    assert r.layout == V.layout and r.dtype == np.int64


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
def test_one_allreduce_of_the_values_block(shape):
    mesh = sa.Mesh(shape)
    axes = tuple(shape)
    s = np.sort(np.random.default_rng(0).standard_normal(101))
    v = np.random.default_rng(1).standard_normal((6, 7))
    S = sa.asarray(s, dims=("i",), mesh=mesh, layout={"i": axes[:1]})
    V = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"b": axes[1:]} if len(axes) > 1 else {})
    with sa.comm_log() as log:
        r = sa.searchsorted(S, V, side="right")
    block = max(int(np.prod(b.shape)) for b in V.shards)
    if mesh.axis_size(axes[0]) > 1:
        assert [(x.op, x.axes, x.elements) for x in log.records] == [("allreduce", axes[:1], block)]
    else:
        assert log.records == []
    np.testing.assert_array_equal(r.numpy(), np.searchsorted(s, v, side="right"))


def test_positional_sorter_and_scalar():
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        a = np.array([5.0, 1.0, 4.0, 2.0, 2.0, 9.0])
        x = xp.asarray(a)
        idx = xp.searchsorted(x, xp.asarray([2.0, 4.5]), sorter=xp.argsort(x))
        np.testing.assert_array_equal(idx.numpy(), np.searchsorted(a, [2.0, 4.5], sorter=np.argsort(a)))
        np.testing.assert_array_equal(xp.searchsorted(xp.sort(x), 3.0).numpy(), 3)
