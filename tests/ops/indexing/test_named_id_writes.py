"""``x[{dim: ids}] = v`` on named arrays: integer id arrays (named ShardArrays or 1-D NumPy arrays), against NumPy's
``x[ids] = v`` on every mesh and layout, with the traffic of ``write_at`` (alltoallv of (id, value) pairs)."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from helpers import MESH_SHAPES


def _layouts(shape):
    axes = tuple(shape)
    return [{}, {"b": axes[0]}, {"b": axes, "f": None}, {"f": axes[-1]}]


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_id_writes_match_numpy(shape):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(1)
    for layout in _layouts(shape):
        h = rng.standard_normal((7, 3))
        x = sa.asarray(h.copy(), dims=("b", "f"), mesh=mesh, layout=layout)
        ids = np.array([0, 4, 6])
        vals = rng.standard_normal((3, 3))
        x[{"b": sa.asarray(ids, dims=("k",), mesh=mesh)}] = sa.asarray(vals, dims=("k", "f"), mesh=mesh)
        h[ids] = vals
        x[{"b": np.array([1, -1])}] = 2.5  # NumPy ids take the dim's name; negative ones count from the end
        h[[1, -1]] = 2.5
        row = rng.standard_normal(3)
        x[{"b": [3]}] = sa.asarray(row, dims=("f",), mesh=mesh)  # missing dims broadcast
        h[[3]] = row
        col = rng.standard_normal(2)
        x[{"b": sa.asarray(np.array([2, 5]), dims=("k",), mesh=mesh)}] = sa.asarray(col[:, None], dims=("k", "f"),
                                                                                       mesh=mesh)  # size 1 broadcasts
        h[[2, 5]] = col[:, None]
        np.testing.assert_array_equal(x.numpy(), h)
        assert x.layout == sa.asarray(h, dims=("b", "f"), mesh=mesh, layout=layout).layout


def test_id_writes_over_two_dims_and_bad_input():
    mesh = sa.Mesh({"row": 2, "col": 2})
    h = np.zeros((4, 5))
    x = sa.asarray(h.copy(), dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    r = sa.asarray(np.array([0, 3, 1]), dims=("k",), mesh=mesh)
    c = sa.asarray(np.array([4, 0, 2]), dims=("k",), mesh=mesh)
    x[{"i": r, "j": c}] = sa.asarray(np.array([1.0, 2, 3]), dims=("k",), mesh=mesh)
    h[[0, 3, 1], [4, 0, 2]] = [1.0, 2, 3]
    np.testing.assert_array_equal(x.numpy(), h)
    with pytest.raises(sa.DimensionError, match="index 4 is out of bounds for dim 'i' with size 4"):
        x[{"i": np.array([4])}] = 1.0
    with pytest.raises(sa.DimensionError, match="must lie in"):
        x[{"i": sa.asarray(np.array([0, 9]), dims=("k",), mesh=mesh)}] = 1.0
    x[{"i": r, "j": 0}] = 1.0  # (ids beside an int write the selection isel reads: refused until round 14)
    h[[0, 3, 1], 0] = 1.0
    np.testing.assert_array_equal(x.numpy(), h)
    with pytest.raises(sa.DimensionError, match="must have the ids' dims"):
        x[{"i": r}] = sa.ones(mesh, {"k": 3, "q": 2})
    with pytest.raises(sa.DTypeError, match="Wrap it with sa.asarray"):
        x[{"i": r}] = np.ones((3, 5))
