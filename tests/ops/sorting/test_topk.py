"""top_k against np.argsort(-x, kind="stable"): ties, NaN, k = 1 and k = n, uneven/empty blocks; VJP; comm."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad
from helpers import MESH_SHAPES, layouts, meshes, rand, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa

SETTINGS = settings(max_examples=30, deadline=None)
DIMS = ("a", "b", "c")


def _reference(a, k, axis):
    key = -a.astype(np.float64) if a.dtype.kind == "f" else ~a.astype(np.int64) if a.dtype.kind != "b" else ~a
    order = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(a, idx, axis=axis), idx


@given(meshes(), st.data())
@SETTINGS
def test_top_k_matches_stable_argsort_of_minus_x(mesh, data):
    shape = data.draw(sizes_strategy(DIMS, 0, 7))
    d = data.draw(st.sampled_from(DIMS))
    i = DIMS.index(d)
    if shape[i] == 0:
        shape = tuple(1 if j == i else n for j, n in enumerate(shape))
    lay = data.draw(layouts(mesh, DIMS))
    dtype = data.draw(st.sampled_from(["float64", "float32", "int16", "bool"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    a = rng.integers(-2, 3, shape).astype(dtype)  # many ties
    if dtype.startswith("float") and data.draw(st.booleans()):
        a[rng.random(shape) < 0.2] = np.nan
    k = data.draw(st.sampled_from([1, shape[i], max(1, shape[i] // 2)]))
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout=lay)
    with sa.comm_log() as log:
        v, ix = sa.top_k(x, k, d, new_dim="top")
    wv, wi = _reference(a, k, i)
    np.testing.assert_array_equal(ix.numpy(), wi)
    np.testing.assert_array_equal(v.numpy(), wv)
    assert v.dtype == a.dtype and ix.dtype == np.int64
    assert v.dims == tuple("top" if e == d else e for e in DIMS)
    assert v.layout == {e: ax for e, ax in lay.items() if e != d}
    axes = lay.get(d, ())
    if axes and np.prod([mesh.axis_size(a) for a in axes]) > 1:
        # one allgather of k (value, index) pairs (2 int64 each) per device per index of the other dims
        other = max(int(np.prod([s.shape[j] for j in range(3) if j != i])) for s in x.shards)
        assert [(r.op, r.elements) for r in log.records] == [("allgather", 2 * k * other)]
    else:
        assert log.records == []


def test_top_k_default_name_and_1d():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.array([3.0, 9.0, 1.0, 9.0, 7.0])
    x = sa.asarray(a, dims=("vocab",), mesh=mesh, layout={"vocab": ("row", "col")})
    v, i = sa.top_k(x, 3)
    assert v.dims == ("k",)
    np.testing.assert_array_equal(i.numpy(), [1, 3, 4])


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_top_k_vjp_scatters_through_the_indices(shape):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names
    a = rand((3, 7), seed=3)
    x = sa.asarray(a, dims=("b", "v"), mesh=mesh, layout={"v": ax[-1]} if mesh.size > 1 else None)
    w = sa.asarray(rand((3, 4), seed=4), dims=("b", "k"), mesh=mesh)
    g = check_grad(lambda p: (sa.top_k(p, 4, "v")[0] * w).sum(), x)
    want = np.zeros_like(a)
    np.put_along_axis(want, _reference(a, 4, 1)[1], w.numpy(), axis=1)
    np.testing.assert_allclose(g.numpy(), want)
