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
