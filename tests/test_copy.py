"""``copy.copy``/``copy.deepcopy`` of meshes, arrays and trees holding them (xarray deep-copies its data)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy])
def test_a_mesh_copies_to_itself(how):
    mesh = sa.Mesh({"row": 2, "col": 2})
    assert how(mesh) is mesh


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy])
@pytest.mark.parametrize("positional", [True, False])
def test_an_array_copy_keeps_value_kind_layout_and_is_independent(how, positional):
    mesh = sa.Mesh({"row": 2, "col": 2})
    host = np.arange(12.0).reshape(3, 4)
    if positional:
        x = xp.asarray(host, device=mesh)
    else:
        x = sa.asarray(host, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    y = how(x)
    assert type(y) is type(x) and y is not x
    assert y.mesh is mesh and y.layout == x.layout and y.dims == x.dims and y.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(y), host)
    if positional:
        y[1, 2] = -1.0
    else:
        y[{"a": 1, "b": 2}] = -1.0
    np.testing.assert_array_equal(np.asarray(x), host)  # the original is unchanged
    assert float(np.asarray(y)[1, 2]) == -1.0


def test_deepcopy_of_a_tree_keeps_one_mesh():
    mesh = sa.Mesh({"row": 2})
    tree = {"w": sa.ones(mesh, {"i": 4}, layout={"i": "row"}), "b": [sa.zeros(mesh, {"j": 3})]}
    out = copy.deepcopy(tree)
    assert out["w"].mesh is mesh and out["b"][0].mesh is mesh
    np.testing.assert_array_equal(np.asarray(out["w"]), np.ones(4))


def test_a_copy_keeps_the_autograd_identity():
    mesh = sa.Mesh({"row": 2})
    w = sa.asarray(np.array([1.0, 2.0, 3.0]), dims=("i",), mesh=mesh, layout={"i": "row"})

    def loss(p):
        return sa.sum(copy.copy(p) * p, "i")

    g = sa.grad(loss)(w)
    np.testing.assert_allclose(np.asarray(g), 2 * np.array([1.0, 2.0, 3.0]))


def _round_trip(x):
    import pickle

    return pickle.loads(pickle.dumps(x))


@pytest.mark.parametrize("positional", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "complex64", "bfloat16"])
def test_an_array_pickles_with_its_value_kind_layout_and_mesh(positional, dtype):
    mesh = sa.Mesh({"row": 2, "col": 2})
    host = np.arange(15.0).reshape(5, 3)
    if positional:
        x = xp.astype(xp.asarray(host, device=mesh), dtype)
    else:
        x = sa.asarray(host, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"}).astype(dtype)
    y = _round_trip(x)
    assert type(y) is type(x) and y.dims == x.dims and y.layout == x.layout and y.dtype == x.dtype
    assert y.mesh == mesh and y.mesh.backend.name == mesh.backend.name
    np.testing.assert_array_equal(np.asarray(y.numpy(), dtype="float64"), np.asarray(x.numpy(), dtype="float64"))


def test_a_pickled_pending_sum_and_empty_and_meta_arrays():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = sa.asarray(np.arange(16.0).reshape(4, 4), dims=("i", "j"), mesh=mesh, layout={"j": "row"})
    p = sa.einsum(a, a, out=("i",))
    q = _round_trip(p)
    assert q.pending == ("row",)
    np.testing.assert_allclose(q.numpy(), p.numpy())
    e = _round_trip(xp.asarray(np.ones((2, 0)), device=mesh))
    assert e.shape == (2, 0) and isinstance(e, xp.Array)
    meta = sa.zeros(sa.Mesh({"a": 2}, backend="meta"), {"i": 5}, layout={"i": "a"})
    m2 = _round_trip(meta)
    assert m2.mesh.backend.name == "meta" and m2.sizes == {"i": 5} and m2.layout == {"i": ("a",)}


def test_a_replicated_block_is_pickled_once():
    import pickle

    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.zeros(1000), dims=("i",), mesh=mesh)  # the same block on 4 devices
    assert len(pickle.dumps(x)) < 2 * 8000


def test_a_mesh_pickles_with_its_rules():
    mesh = _round_trip(sa.Mesh({"row": 2}, rules={"batch": "row"}))
    assert mesh.shape == {"row": 2} and mesh.rules == {"batch": ("row",)}
