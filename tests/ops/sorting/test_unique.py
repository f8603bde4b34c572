"""unique_values / unique_counts / unique_inverse / unique_all against NumPy on every test mesh and layout,
replicated and split results, each NaN distinct, and their communication (no gather of x)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES, host, layouts, meshes, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sort import DTYPES, values

import shardarray as sa
import shardarray.array_api as xp
from shardarray.ops.sorting import unique as unique_mod

SETTINGS = settings(max_examples=25, deadline=None)


def check_all(x, a):
    r = sa.unique_all(x)
    v, i, inv, c = np.unique(a.ravel(), return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    np.testing.assert_array_equal(r.values.numpy(), v)
    np.testing.assert_array_equal(r.indices.numpy(), i)
    np.testing.assert_array_equal(r.counts.numpy(), c)
    np.testing.assert_array_equal(r.inverse_indices.numpy(), inv.reshape(a.shape))
    assert r.inverse_indices.layout == x.layout and r.inverse_indices.dims == x.dims
    assert r.values.dtype == x.dtype and r.counts.dtype == np.int64 and r.indices.dtype == np.int64
    np.testing.assert_array_equal(sa.unique_values(x).numpy(), v)
    vc = sa.unique_counts(x)
    np.testing.assert_array_equal(vc.counts.numpy(), c)
    vi = sa.unique_inverse(x)
    np.testing.assert_array_equal(vi.inverse_indices.numpy(), inv.reshape(a.shape))
    return r


@given(meshes(), st.data())
@SETTINGS
def test_unique_matches_numpy(mesh, data):
    ndim = data.draw(st.integers(1, 3))
    dims = ("a", "b", "c")[:ndim]
    shape = data.draw(sizes_strategy(dims, 0, 8))
    lay = data.draw(layouts(mesh, dims))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = values(rng, shape, dtype, data.draw(st.integers(0, 3)))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=lay)
    split = data.draw(st.booleans())
    old = unique_mod.REPLICATE_MAX
    unique_mod.REPLICATE_MAX = 1 if split else old
    try:
        r = check_all(x, a)
    finally:
        unique_mod.REPLICATE_MAX = old
    axes = tuple(a for a in mesh.axis_names if a in x.spec.used_axes)
    if split and mesh.axes_size(axes) > 1 and r.values.size > 1:
        assert r.values.layout == {"unique": axes}
    else:
        assert r.values.layout == {}


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
def test_nan_each_distinct_and_signed_zero(shape):
    mesh = sa.Mesh(shape)
    a = np.array([np.nan, 0.0, -0.0, np.nan, 1.0, np.inf, -np.inf, np.nan, 1.0])
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": tuple(shape)})
    r = check_all(x, a)
    assert int(np.isnan(r.values.numpy()).sum()) == 3


@pytest.mark.parametrize("shape", [{"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}], ids=str)
def test_unique_communication(shape):
    """Samples (2 int64 each), local uniques (1 int64 each), one int64, the result; never the whole of x."""
    mesh = sa.Mesh(shape)
    axes = tuple(shape)
    p = mesh.size
    rng = np.random.default_rng(0)
    a = rng.integers(0, 50, (12, 100))
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"b": axes})
    local_max = max(len(np.unique(host(s))) for s in x.shards)  # shards of either backend, on the host
    with sa.comm_log() as log:
        u = sa.unique_values(x)
    assert [(r.op, r.axes) for r in log.records] == [("allgather", axes), ("alltoall", axes),
                                                     ("allgather", axes), ("alltoall", axes)]
    samples, buckets, lengths, result = log.records
    assert samples.elements == 2 * (p - 1) and lengths.elements == 1
    assert buckets.elements <= local_max  # one int64 per local unique, not the block of x
    assert result.elements <= (p - 1) * 50  # each device's bucket (one int64 per unique) to p-1 others
    assert u.layout == {}
    with sa.comm_log() as log:
        sa.unique_inverse(x)
    assert [r.op for r in log.records] == ["allgather", "alltoall", "allgather", "alltoall", "alltoall"]
    assert log.records[3].elements <= local_max  # the ranks going back


def test_large_result_is_split():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.random.default_rng(0).permutation(70000).astype(np.int64)
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": ("row", "col")})
    assert unique_mod.REPLICATE_MAX < 70000
    with sa.comm_log() as log:
        u = sa.unique_values(x)
    assert u.layout == {"unique": ("row", "col")}
    assert log.records[-1].elements <= 2 * 17500  # the rebalancing: about one block
    np.testing.assert_array_equal(u.numpy(), np.arange(70000))


def test_positional_names():
    with sa.default_mesh(sa.Mesh({"p": 3, "q": 2})):
        a = xp.asarray([[3, 1], [3, 2], [7, 1]])
        r = xp.unique_all(a)
        assert r.values.dims == ("dim0",) and r.inverse_indices.shape == (3, 2)
        np.testing.assert_array_equal(r.values.numpy(), [1, 2, 3, 7])


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
def test_numpy_unique_protocol_merges_nans(shape):
    """``np.unique(x)`` (NumPy's equal_nan=True: one NaN) returns ShardArrays equal to NumPy's."""
    mesh = sa.Mesh(shape)
    a = np.array([[2.0, np.nan, 1.0, np.nan], [np.nan, 1.0, 7.0, -0.0], [0.0, 2.0, np.nan, 5.0]])
    x = sa.asarray(a, dims=("a", "i"), mesh=mesh, layout={"i": tuple(shape)[-1:], "a": tuple(shape)[:-1]})
    got = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert isinstance(g, sa.ShardArray)
        np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_array_equal(np.unique(x).numpy(), np.unique(a))


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
def test_complex_values(shape):
    """Complex values travel as two int64 words and sort as NumPy sorts them (real part, then imaginary)."""
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(0)
    a = (rng.integers(0, 3, (4, 5)) + 1j * rng.integers(0, 2, (4, 5))).astype(np.complex64)
    a[0, 0] = np.nan
    a[1, 1] = complex(1, np.nan)
    x = sa.asarray(a, dims=("a", "i"), mesh=mesh, layout={"i": tuple(shape)[-1:], "a": tuple(shape)[:-1]})
    check_all(x, a)
