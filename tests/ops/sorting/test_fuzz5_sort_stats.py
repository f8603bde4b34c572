"""Regressions found by differential fuzzing of sorting, sets and statistics against NumPy: the mean of large
integers, np.unique's merged NaNs of split complex arrays, nanmax/nanmin of empty dims, max/min of 0-d complex."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES

import shardarray as sa
import shardarray.array_api as xp

MESHES = pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=lambda s: "x".join(map(str, s.values())))


def split(a: np.ndarray, mesh: sa.Mesh) -> sa.ShardArray:
    """``a`` with its first dim split over every mesh axis (uneven and empty blocks for small sizes)."""
    dims = tuple(f"a{i}" for i in range(a.ndim))
    return sa.asarray(a, dims=dims, mesh=mesh, layout={"a0": mesh.axis_names})


@MESHES
@pytest.mark.parametrize("dtype", ["int64", "uint64", "int32"])
def test_mean_of_large_integers_does_not_wrap(shape, dtype):
    # NumPy averages integers in float64: sums beyond the integer range must not wrap around
    info = np.iinfo(dtype)
    a = np.array([[info.max, info.max - 1], [info.max, 7], [info.max // 2, info.max], [3, info.max]], dtype=dtype)
    mesh = sa.Mesh(shape)
    x = split(a, mesh)
    for dims, axis in ((None, None), ("a0", 0), ("a1", 1), (("a0", "a1"), (0, 1))):
        want = np.mean(a, axis=axis)
        for got in (sa.mean(x, dims), sa.nanmean(x, dims)):
            assert got.dtype == want.dtype == np.float64
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-15)
    with sa.default_mesh(mesh):
        got = xp.mean(xp.asarray(a), axis=0)
        assert type(got) is xp.Array
        np.testing.assert_allclose(got.numpy(), np.mean(a, axis=0), rtol=1e-15)


@MESHES
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_unique_equal_nan_merges_split_complex_nans(shape, dtype):
    # complex NaNs compare in order (nan-2j < nan+1j): the sample sort's splitters must not cut them apart
    nan = np.nan
    a = np.array([nan - 2j, 0, -2, 2j, nan + 2j, nan - 1j, -1 - 1j, complex(nan, np.inf), complex(1, nan), 5, nan,
                  complex(nan, nan), nan + 0.5j, 3j, nan - 2j, 1], dtype=dtype)
    x = split(a, sa.Mesh(shape))
    got = [r.numpy() for r in np.unique(x, return_index=True, return_inverse=True, return_counts=True)]
    want = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    assert got[0].shape == want[0].shape and np.isnan(got[0][-1]) and np.isnan(got[0][:-1]).sum() == 0
    np.testing.assert_array_equal(got[0][:-1], want[0][:-1])  # the merged NaN's representative: any of them
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(g, w)


@MESHES
@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
def test_nan_extreme_of_an_empty_dim_raises(shape, name):
    mesh = sa.Mesh(shape)
    x = split(np.zeros((0, 3)), mesh)
    with pytest.raises(sa.DimensionError, match="empty"):
        getattr(sa, name)(x, "a0")
    with pytest.raises(sa.DimensionError, match="empty"):
        getattr(sa, name)(x)
    assert getattr(sa, name)(x, "a1").shape == (0,)  # reducing a non-empty dim of an empty array is fine
    with sa.default_mesh(mesh):
        with pytest.raises(sa.DimensionError, match="empty"):
            getattr(np, name)(xp.zeros((0, 3)), axis=0)


@pytest.mark.parametrize("name", ["max", "min"])
def test_extreme_of_0d_complex_is_the_value(name):
    """A 0-d complex array's max/min is its value, as NumPy's (complex values order lexicographically)."""
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        for axis in (None, ()):
            assert getattr(xp, name)(xp.asarray(1 + 2j), axis=axis).numpy() == getattr(np, name)(1 + 2j, axis=axis)
        assert getattr(xp, name)(xp.asarray(2.5)).numpy() == 2.5
