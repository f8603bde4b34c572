"""take_along_dim (named) and take_along_axis (positional) with argsort/top_k indices; VJP; comm."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from gradcheck import check_grad
from helpers import MESH_SHAPES, layouts, meshes, rand, sizes_strategy

SETTINGS = settings(max_examples=25, deadline=None)
DIMS = ("a", "b")


@given(meshes(), st.data())
@SETTINGS
def test_take_along_dim_matches_numpy(mesh, data):
    shape = data.draw(sizes_strategy(DIMS, 0, 7))
    d = data.draw(st.sampled_from(DIMS))
    i = DIMS.index(d)
    lay = data.draw(layouts(mesh, DIMS))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    a = rng.standard_normal(shape)
    m = data.draw(st.integers(0, 6)) if shape[i] else 0
    ids = rng.integers(-shape[i], shape[i], tuple(m if j == i else n for j, n in enumerate(shape))) if shape[i] \
        else np.zeros(tuple(0 if j == i else n for j, n in enumerate(shape)), dtype=np.int64)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout=lay)
    id_lay = data.draw(layouts(mesh, DIMS))
    s = sa.asarray(ids, dims=DIMS, mesh=mesh, layout=id_lay)
    with sa.comm_log() as log:
        y = sa.take_along_dim(x, s, d)
    np.testing.assert_array_equal(y.numpy(), np.take_along_axis(a, ids, axis=i))
    assert y.dims == DIMS
    # x itself never travels and ids are never gathered: every record is at most what one device sends its group
    # members, each at most a block of the result or the ids (routed: skewed
    # ids meet at one owner)
    biggest = max(max(int(np.prod(b.shape)) for b in arr.shards) for arr in (y, s))
    # what a device receives over all records (an allgather's record counts its local part, a reduce-scatter's
    # its whole buffer): at most the ids' gather, three routed alltoallv, or the rows' reduce-scatter back, each
    # a block of the result or the ids per other member of the mesh
    got = sum(-(-r.elements * (r.group_size - 1) // r.group_size) if r.op == "reduce_scatter"
              else r.elements * (r.group_size - 1) for r in log.records)  # fmt: skip
    assert got <= 3 * (mesh.size - 1) * max(biggest, 1), log.records


def test_take_along_dim_with_argsort_indices_on_a_split_dim():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((3, 9), seed=5)
    x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout={"b": "row", "s": "col"})
    order = np.argsort(a, axis=1, kind="stable")
    ids = getattr(sa, "argsort", None)
    ids = ids(x, "s") if ids is not None else sa.asarray(order, dims=("b", "s"), mesh=mesh, layout={"s": "col"})
    np.testing.assert_array_equal(ids.numpy(), order)
    np.testing.assert_array_equal(sa.take_along_dim(x, ids, "s").numpy(), np.sort(a, axis=1))
    v, k = sa.top_k(x, 4, "s")
    np.testing.assert_array_equal(sa.take_along_dim(x, k.rename({"k": "s"}), "s").numpy(), v.numpy())


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_take_along_dim_vjp_is_a_scatter_add(shape):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names
    a = rand((3, 6), seed=6)
    x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout={"s": ax[0]} if mesh.size > 1 else None)
    ids_np = np.array([[0, 0, 5, 2], [1, 3, 3, 3], [5, 4, 0, 1]])
    ids = sa.asarray(ids_np, dims=("b", "s"), mesh=mesh)
    w = sa.asarray(rand((3, 4), seed=7), dims=("b", "s"), mesh=mesh)
    g = check_grad(lambda p: (sa.take_along_dim(p, ids, "s") * w).sum(), x)
    want = np.zeros_like(a)
    np.add.at(want, (np.arange(3)[:, None], ids_np), w.numpy())
    np.testing.assert_allclose(g.numpy(), want)


def test_take_along_axis_positional():
    with sa.default_mesh(sa.Mesh({"x": 3, "y": 2})):
        n = rand((4, 5), seed=8)
        a = xp.asarray(n)
        idx = np.argsort(n, axis=0)
        np.testing.assert_array_equal(xp.take_along_axis(a, xp.asarray(idx), axis=0).numpy(), np.sort(n, axis=0))
