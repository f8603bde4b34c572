"""sort / argsort against NumPy on every test mesh and layout (uneven and empty blocks, ties, NaN, ±inf, -0.0),
their communication against the sample sort's and the transposition's formulas, the peak bucket, and the VJP."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad
from helpers import HYPOTHESIS_SHAPES, layouts, meshes, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.ops.sorting import samplesort

SETTINGS = settings(max_examples=25, deadline=None)
DTYPES = ["float64", "float32", "float16", "int64", "int8", "uint8", "uint64", "bool"]


def values(rng, shape, dtype, kind):
    """Test data: ``kind`` 0 random with ties and specials, 1 all equal, 2 already sorted, 3 reversed."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        a = rng.integers(0, 2, shape).astype(bool)
    elif dt == np.uint64:
        a = (np.uint64(2**64 - 8) + rng.integers(0, 4, shape).astype(np.uint64)).astype(dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.choice(np.array([info.min, info.max, 0, 1, 2], dtype=dt), shape)
    else:
        a = rng.integers(-2, 3, shape).astype(dt)
        a[rng.random(shape) < 0.15] = np.nan
        a[rng.random(shape) < 0.1] = -np.inf
        a[rng.random(shape) < 0.1] = np.inf
        a[rng.random(shape) < 0.15] = -0.0
    if kind == 1:
        a = np.full(shape, a.flat[0] if a.size else 0, dtype=dt)
    elif kind in (2, 3) and len(shape) and a.size:
        a = np.sort(a, axis=-1)
        if kind == 3:
            a = np.flip(a, axis=-1).copy()
    return a


def ref_sort(a, axis, descending):
    if not descending:
        return np.sort(a, axis=axis, kind="stable")
    return np.flip(np.sort(np.flip(a, axis=axis), axis=axis, kind="stable"), axis=axis)


def ref_argsort(a, axis, descending):
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(a, axis=axis), axis=axis, kind="stable"), axis=axis)


def same(got, want):
    """Equal values, NaN where NaN, and the same sign of zero is NOT required (NumPy's sort does not fix it)."""
    np.testing.assert_array_equal(got, want)


@given(meshes(), st.data())
@SETTINGS
def test_sort_argsort_match_numpy(mesh, data):
    dims = ("a", "b", "c")
    ndim = data.draw(st.integers(1, 3))
    dims = dims[:ndim]
    shape = data.draw(sizes_strategy(dims, 0, 9))
    lay = data.draw(layouts(mesh, dims))
    d = data.draw(st.sampled_from(dims))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = values(rng, shape, dtype, data.draw(st.integers(0, 3)))
    desc = data.draw(st.booleans())
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=lay)
    k = dims.index(d)
    y = sa.sort(x, d, descending=desc)
    i = sa.argsort(x, d, descending=desc)
    same(y.numpy(), ref_sort(a, k, desc))
    np.testing.assert_array_equal(i.numpy(), ref_argsort(a, k, desc))
    assert y.layout == x.layout and i.layout == x.layout
    assert y.dtype == x.dtype and i.dtype == np.int64
    bounds = sa.layout.block_bounds(mesh, x.spec)
    for dev in range(mesh.size):
        assert i.shards[dev].shape == tuple(e - s for s, e in bounds[dev])


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 5, 29, 200])
def test_1d_sample_sort(shape, n):
    mesh = sa.Mesh(shape)
    axes = tuple(shape)
    rng = np.random.default_rng(n)
    a = values(rng, (n,), "float64", 0)
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": axes})
    for desc in (False, True):
        same(sa.sort(x, "s", descending=desc).numpy(), ref_sort(a, 0, desc))
        np.testing.assert_array_equal(sa.argsort(x, "s", descending=desc).numpy(), ref_argsort(a, 0, desc))


@pytest.mark.parametrize("shape", [{"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}], ids=str)
def test_sample_sort_communication(shape):
    """Sample sort: allgather of p-1 samples (3 int64), alltoallv of buckets, allgather of 1, rebalancing alltoallv."""
    mesh = sa.Mesh(shape)
    axes = tuple(shape)
    p, n = mesh.size, 1001
    block = -(-n // p)
    a = np.random.default_rng(0).standard_normal(n)
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": axes})
    with sa.comm_log() as log:
        y = sa.sort(x, "s")
    ops = [(r.op, r.axes) for r in log.records]
    assert ops == [("allgather", axes), ("alltoall", axes), ("allgather", axes), ("alltoall", axes)]
    gather1, buckets, gather2, rebalance = log.records
    assert gather1.elements == 3 * (p - 1) and gather2.elements == 1
    assert buckets.elements <= block and rebalance.elements <= 2 * block
    assert sum(r.elements for r in log.records) < 3 * block + 3 * p  # about two blocks, never the whole dim
    with sa.comm_log() as log:
        sa.argsort(x, "s")
    pairs = log.records[1]
    assert pairs.elements <= 2 * block and pairs.dtype == "int64"  # (value, index) pairs
    np.testing.assert_array_equal(y.numpy(), np.sort(a))


@pytest.mark.parametrize("kind", ["random", "equal", "sorted", "two-values"])
def test_peak_bucket_is_at_most_twice_the_block(kind):
    """Regular sampling with keys made unique by (value, position): no device holds more than ~2 blocks."""
    mesh = sa.Mesh({"x": 2, "y": 2, "z": 2})
    n = 8000
    rng = np.random.default_rng(1)
    a = {"random": rng.standard_normal(n), "equal": np.ones(n), "sorted": np.arange(n, dtype=float),
         "two-values": rng.integers(0, 2, n).astype(float)}[kind]
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": ("x", "y", "z")})
    np.testing.assert_array_equal(sa.sort(x, "s").numpy(), np.sort(a))
    peak = samplesort.LAST_PEAK
    print(f"peak bucket ({kind}): {peak['elements']} elements = {peak['ratio']:.3f} x the block {peak['block']}")
    assert peak["block"] == n // 8
    assert peak["ratio"] <= 2.0


def test_transposition_when_another_dim_can_take_the_axes():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.random.default_rng(0).standard_normal((8, 13))
    x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout={"b": "row", "s": "col"})
    with sa.comm_log() as log:
        y = sa.sort(x, "s")
    assert [(r.op, r.axes) for r in log.records] == [("alltoall", ("col",)), ("alltoall", ("col",))]
    assert all(r.elements <= 4 * 7 for r in log.records)  # at most the device's block (4 x 7)
    np.testing.assert_array_equal(y.numpy(), np.sort(a, axis=1))
    x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout={"s": ("row", "col")})
    with sa.comm_log() as log:  # unsplit dim: local
        z = sa.sort(x, "b")
    assert log.records == []
    np.testing.assert_array_equal(z.numpy(), np.sort(a, axis=0))


def test_small_other_dims_sort_rows_by_sample_sort():
    mesh = sa.Mesh({"all": 4})
    a = np.random.default_rng(0).standard_normal((2, 30))
    x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout={"s": "all"})
    with sa.comm_log() as log:
        y = sa.argsort(x, "s")
    assert [r.op for r in log.records] == ["allgather", "alltoall", "allgather", "alltoall"] * 2  # one per row
    np.testing.assert_array_equal(y.numpy(), np.argsort(a, axis=1, kind="stable"))


def test_stable_ties_and_nan_last():
    mesh = sa.Mesh({"p": 3, "q": 2})
    a = np.array([2.0, np.nan, 1.0, 2.0, -0.0, 0.0, np.nan, 1.0, -np.inf, 2.0, np.inf])
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": ("q", "p")})
    np.testing.assert_array_equal(sa.argsort(x, "s").numpy(), np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(sa.argsort(x, "s", descending=True).numpy(), ref_argsort(a, 0, True))
    np.testing.assert_array_equal(sa.sort(x, "s", stable=False).numpy(), np.sort(a))


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_vjp(shape, descending):
    mesh = sa.Mesh(shape)
    axes = tuple(shape)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 11))
    w = sa.asarray(rng.standard_normal((3, 11)), dims=("b", "s"), mesh=mesh)
    for lay in ({"s": axes}, {"b": axes[:1], "s": axes[1:]}):
        x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout=lay)
        g = check_grad(lambda x: (sa.sort(x, "s", descending=descending) * w).sum(), x)
        want = np.zeros_like(a)
        np.put_along_axis(want, ref_argsort(a, 1, descending), w.numpy(), axis=1)
        np.testing.assert_allclose(g.numpy(), want)


def test_rows_keep_the_other_dims_split():
    """b (5) cannot take p and q (6 devices): each q-group sample-sorts its own rows; b is never gathered."""
    mesh = sa.Mesh({"p": 3, "q": 2})
    a = np.random.default_rng(0).standard_normal((5, 9))
    x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout={"b": "p", "s": "q"})
    with sa.comm_log() as log:
        y = sa.argsort(x, "s")
    assert {r.axes for r in log.records} == {("q",)}
    assert [r.op for r in log.records] == ["allgather", "alltoall", "allgather", "alltoall"] * 2  # 2 rows at most
    np.testing.assert_array_equal(y.numpy(), np.argsort(a, axis=1, kind="stable"))
    assert y.layout == x.layout
