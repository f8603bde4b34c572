"""Interop through the array API: einops on namespace arrays, xarray wrapping a ShardArray, NumPy's nan-reductions.

einops and xarray are optional test dependencies (in ``[test]``): the tests
skip when they are absent. Every result stays a ShardArray (nothing is
gathered on the way) and equals NumPy's answer on the gathered value.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import rand

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}, {"x": 2, "y": 2, "z": 2}]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request):
    return sa.Mesh(request.param)


def test_einops_rearrange_reduce_repeat_through_the_namespace(mesh):
    ea = pytest.importorskip("einops.array_api")
    host = rand((6, 10))
    with sa.default_mesh(mesh):
        a = xp.asarray(host)
        with sa.comm_log() as log:
            b = ea.rearrange(a, "i (j k) -> (i j) k", k=2)
            c = ea.reduce(a, "i j -> j", "max")
            d = ea.rearrange(a, "i j -> j i")
            e = ea.repeat(a, "i j -> i j r", r=3)
    for out in (b, c, d, e):
        assert isinstance(out, xp.Array)
    assert {r.op for r in log.records} <= {"alltoall", "allreduce", "reduce_scatter"}   # never an allgather
    np.testing.assert_array_equal(np.asarray(b), host.reshape(30, 2))
    np.testing.assert_array_equal(np.asarray(c), host.max(axis=0))
    np.testing.assert_array_equal(np.asarray(d), host.T)
    np.testing.assert_array_equal(np.asarray(e), np.repeat(host[:, :, None], 3, axis=2))


def test_xarray_dataarray_wraps_a_shardarray(mesh):
    xr = pytest.importorskip("xarray")
    host = rand((4, 6))
    host[1, 2] = np.nan
    with sa.default_mesh(mesh):
        a = xp.asarray(host)
    da = xr.DataArray(a, dims=("time", "space"), coords={"time": np.arange(4)})
    assert isinstance(da.data, sa.ShardArray)             # xarray keeps the duck array, does not convert it
    with sa.comm_log() as log:
        total = da.sum("time")                             # skipna: np.nansum -> sa.nansum
        mean = da.mean()
        sel = da.isel(time=slice(1, 3))
        scaled = (da * 2 + 1).transpose("space", "time")
        std = da.std("space", ddof=1)
    assert {r.op for r in log.records} <= {"alltoall", "allreduce", "broadcast"}
    for out in (total, mean, sel, scaled, std):
        assert isinstance(out.data, sa.ShardArray)
    np.testing.assert_allclose(np.asarray(total.data), np.nansum(host, axis=0))
    np.testing.assert_allclose(np.asarray(mean.data), np.nanmean(host))
    np.testing.assert_array_equal(np.asarray(sel.data), host[1:3])
    np.testing.assert_array_equal(np.asarray(scaled.data), (host * 2 + 1).T)
    np.testing.assert_allclose(np.asarray(std.data), np.nanstd(host, axis=1, ddof=1))
    assert sel.coords["time"].values.tolist() == [1, 2]


@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanprod", "nanmax", "nanmin", "nanvar", "nanstd"])
def test_nan_reductions_match_numpy_on_split_dims(mesh, name):
    host = rand((5, 7), seed=3)
    host[::2, 3] = np.nan
    host[:, 5] = np.nan                                    # an all-NaN column
    host[4, :] = np.nan                                    # an all-NaN row
    axes = mesh.axis_names
    x = sa.asarray(host, dims=("i", "j"), mesh=mesh, layout={"i": axes[0], "j": axes[-1]} if len(axes) > 1 else
                   {"i": axes[0]})
    ref = getattr(np, name)
    with warnings.catch_warnings():  # NumPy warns about all-NaN slices
        warnings.simplefilter("ignore", RuntimeWarning)
        want_0, want_all = ref(host, axis=0), ref(host)
    got_0 = getattr(np, name)(x, axis=0)
    assert isinstance(got_0, sa.ShardArray)
    np.testing.assert_allclose(got_0.numpy(), want_0, rtol=1e-12)
    np.testing.assert_allclose(getattr(sa, name)(x).numpy(), want_all, rtol=1e-12)
    if name in ("nansum", "nanprod", "nanmax", "nanmin"):  # integers have no NaN: the plain reduction
        ints = sa.asarray(np.arange(35).reshape(5, 7), dims=("i", "j"), mesh=mesh)
        np.testing.assert_array_equal(getattr(sa, name)(ints, "j").numpy(), ref(np.arange(35).reshape(5, 7), axis=1))
