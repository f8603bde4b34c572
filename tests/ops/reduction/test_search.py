"""argmax / argmin against NumPy on every test mesh, random layouts, ties, NaNs, dtypes and uneven sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from helpers import MESH_SHAPES, layouts, meshes, sizes_strategy

SETTINGS = settings(max_examples=50, deadline=None)
DTYPES = ["float64", "float32", "float16", "int64", "int8", "uint8", "bool"]


def _values(rng, shape, dtype, nan):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt == np.uint64:  # beyond int64 and float64's exact range: the packing must keep every bit
        return (np.uint64(2**64 - 8) + rng.integers(0, 4, shape).astype(np.uint64)).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.choice(np.array([info.min, info.max, 0, 1, 2], dtype=dt), shape)
    a = rng.integers(-2, 3, shape).astype(dt)  # small range: many ties
    if nan:
        a[rng.random(shape) < 0.15] = np.nan
        a[rng.random(shape) < 0.1] = -np.inf
    return a


@given(meshes(), st.data())
@SETTINGS
def test_argmax_argmin_match_numpy(mesh, data):
    dims = ("a", "b", "c")
    shape = data.draw(sizes_strategy(dims, 0, 6))
    d = data.draw(st.sampled_from(dims))
    if shape[dims.index(d)] == 0:
        shape = tuple(1 if e == d else n for e, n in zip(dims, shape))
    lay = data.draw(layouts(mesh, dims))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = _values(rng, shape, dtype, data.draw(st.booleans()))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=lay)
    with sa.comm_log() as log:
        i = sa.argmax(x, d)
        j = x.argmin(d)
    k = dims.index(d)
    np.testing.assert_array_equal(i.numpy(), np.argmax(a, axis=k))
    np.testing.assert_array_equal(j.numpy(), np.argmin(a, axis=k))
    assert i.dtype == np.int64 and j.dtype == np.int64
    assert i.dims == tuple(e for e in dims if e != d)
    assert i.layout == {e: ax for e, ax in lay.items() if e != d}
    for y in (i, j):
        bounds = sa.layout.block_bounds(mesh, y.spec)
        for dev in range(mesh.size):
            assert y.shards[dev].shape == tuple(e - s for s, e in bounds[dev])
    axes = tuple(lay.get(d, ()))
    if axes and np.prod([mesh.axis_size(a) for a in axes]) > 1 and shape[k] > 1:  # (size 1: zeros, local)
        # one small collective each: an allgather of one (value, index) pair per output element of the block
        assert [r.op for r in log.records] == ["allgather", "allgather"]
        block = x.shards[0].shape[:k] + x.shards[0].shape[k + 1:]
        for r in log.records:
            assert r.axes == tuple(a for a in mesh.axis_names if a in axes)
            assert r.elements == 2 * int(np.prod(block)) and r.bytes == 16 * int(np.prod(block))
    else:
        assert log.records == []


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_first_occurrence_and_nan_across_blocks(shape):
    mesh = sa.Mesh(shape)
    split = {"vocab": mesh.axis_names}
    a = np.array([[0.0, 3.0, 1.0, 3.0, 3.0, 2.0, 3.0],      # ties across blocks: the first one
                  [0.0, 1.0, 2.0, 5.0, np.nan, 9.0, np.nan],  # NaN wins, its first occurrence
                  [-np.inf] * 7,                            # all -inf: index 0 (not an empty block's)
                  [9.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0]])
    x = sa.asarray(a, dims=("batch", "vocab"), mesh=mesh, layout=split)
    np.testing.assert_array_equal(sa.argmax(x, "vocab").numpy(), np.argmax(a, axis=1))
    np.testing.assert_array_equal(sa.argmin(x, "vocab").numpy(), np.argmin(a, axis=1))
    v = sa.asarray(a[0], dims=("vocab",), mesh=mesh, layout=split)
    assert int(v.argmax()) == 1 and int(sa.argmin(v)) == 0  # a 1-D array may leave the dim out


def test_pending_input_is_resolved_first():
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((4, 6)), rng.standard_normal((6, 5))
    h = sa.einsum(sa.asarray(a, dims=("b", "io"), mesh=mesh, layout={"io": "col", "b": "row"}),
                  sa.asarray(w, dims=("io", "v"), mesh=mesh, layout={"io": "col"}))
    assert h.pending == ("col",)
    np.testing.assert_array_equal(sa.argmax(h, "v").numpy(), np.argmax(a @ w, axis=1))
    np.testing.assert_array_equal(sa.argmax(h, "b").numpy(), np.argmax(a @ w, axis=0))


def test_empty_dim_raises_like_numpy():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.zeros(mesh, {"batch": 3, "vocab": 0}, layout={"vocab": "col"})
    with pytest.raises(ValueError):
        np.argmax(np.zeros((3, 0)), axis=1)
    with pytest.raises(sa.DimensionError, match="'vocab'.*empty"):
        sa.argmax(x, "vocab")
    # an empty other dim is fine: an empty result
    assert sa.argmax(x, "batch").shape == (0,)


def test_not_differentiable_and_usable_in_a_loss():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.array([[1.0, 3.0, 2.0], [5.0, 4.0, 0.0]]), dims=("b", "v"), mesh=mesh, layout={"v": "col"})

    def loss(x):
        i = sa.argmax(x, "v")
        return (x * i.astype("float64")).sum()

    _, g = sa.value_and_grad(loss)(x)
    np.testing.assert_array_equal(g.numpy(), np.array([[1.0] * 3, [0.0] * 3]))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("nan", [False, True])
def test_ties_go_to_the_first_index_when_the_dims_axes_are_not_in_mesh_order(op, nan):
    """``b`` split over ``("z", "y")``: block k of ``b`` is on z = k // 2, y = k % 2, while the allgather's members
    come in the mesh's order (y major). Equal extremes (or NaNs) at indices 1 and 2 must give 1, as NumPy does;
    an exploring hypothesis run found 2 (the candidates were taken as lying in index order)."""
    mesh = sa.Mesh({"x": 2, "y": 2, "z": 2})
    a = np.array([[0.0, 5.0, 5.0, 1.0], [3.0, -2.0, -2.0, 9.0]]).reshape(2, 4, 1)
    if op == "argmin":
        a = -a
    if nan:
        a[:, 1:3] = np.nan
    x = sa.asarray(a, dims=("a", "b", "c"), mesh=mesh, layout={"b": ("z", "y")})
    got = getattr(sa, op)(x, "b").numpy()
    np.testing.assert_array_equal(got, getattr(np, op)(a, axis=1))
    assert got[0, 0] == 1
