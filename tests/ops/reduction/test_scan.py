"""cumsum / cumprod (named) and cumulative_sum / cumulative_prod (positional) against NumPy; VJPs; comm volume."""

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
DIMS = ("a", "b", "c")


def _group(mesh, axes):
    return int(np.prod([mesh.axis_size(a) for a in axes])) if axes else 1


@given(meshes(), st.data())
@SETTINGS
def test_cumsum_cumprod_match_numpy_and_send_one_total_per_device(mesh, data):
    shape = data.draw(sizes_strategy(DIMS, 0, 6))
    lay = data.draw(layouts(mesh, DIMS))
    d = data.draw(st.sampled_from(DIMS))
    dtype = data.draw(st.sampled_from(["float64", "int32", "bool", "float16"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    a = rng.integers(-3, 4, shape).astype(dtype) if dtype != "float64" else rng.uniform(0.5, 1.5, shape)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout=lay)
    k = DIMS.index(d)
    with sa.comm_log() as log:
        s = sa.cumsum(x, d)
    want = np.cumsum(a, axis=k) if dtype != "float16" else np.cumsum(a.astype(np.float32), axis=k).astype(np.float16)
    assert s.dtype == want.dtype and s.layout == lay and s.dims == DIMS
    np.testing.assert_allclose(s.numpy(), want, rtol=1e-12 if dtype != "float16" else 1e-3)
    axes = lay.get(d, ())
    if _group(mesh, axes) > 1 and shape[k] > 1:  # (along a size-0 or size-1 dim the scan is local)
        # one allgather of one total per device per index of the other dims (its block with d cut to 1)
        assert [r.op for r in log.records] == ["allgather"]
        other = max(int(np.prod([sh.shape[j] for j in range(3) if j != k])) for sh in x.shards)
        assert log.records[0].elements == other and log.records[0].axes == tuple(axes)
    else:
        assert log.records == []
    if dtype == "float64":
        np.testing.assert_allclose(sa.cumprod(x, d).numpy(), np.cumprod(a, axis=k), rtol=1e-12)


def test_scan_order_follows_the_layout_axes_major_first():
    mesh = sa.Mesh({"row": 2, "col": 3})
    a = rand((13,))
    for axes in [("row", "col"), ("col", "row")]:
        x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": axes})
        np.testing.assert_allclose(sa.cumsum(x, "s").numpy(), np.cumsum(a), rtol=1e-12)
        np.testing.assert_allclose(sa.cumprod(x, "s").numpy(), np.cumprod(a), rtol=1e-12)


def test_cumsum_nan_inf_and_empty():
    mesh = sa.Mesh({"all": 4})
    a = np.array([1.0, np.nan, 2.0, np.inf, -np.inf, 3.0])
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": "all"})
    np.testing.assert_array_equal(sa.cumsum(x).numpy(), np.cumsum(a))
    e = sa.asarray(np.zeros((0, 3)), dims=("s", "b"), mesh=mesh, layout={"s": "all"})
    assert sa.cumsum(e, "s").shape == (0, 3)


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_cumsum_cumprod_vjp_match_finite_differences(shape):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names
    a = rand((5, 3), seed=1)
    x = sa.asarray(a, dims=("s", "b"), mesh=mesh, layout={"s": ax[0]} if mesh.size > 1 else None)
    w = sa.asarray(rand((5, 3), seed=2), dims=("s", "b"), mesh=mesh)
    g = check_grad(lambda p: (sa.cumsum(p, "s") * w).sum(), x)
    np.testing.assert_allclose(g.numpy(), np.cumsum(w.numpy()[::-1], axis=0)[::-1], rtol=1e-12)
    pos = sa.asarray(np.abs(a) + 0.5, dims=("s", "b"), mesh=mesh, layout=x.layout)
    check_grad(lambda p: (sa.cumprod(p, "s") * w).sum(), pos)


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}], ids=str)
def test_cumulative_sum_prod_positional(shape):
    mesh = sa.Mesh(shape)
    n = np.arange(1, 16).reshape(5, 3)
    with sa.default_mesh(mesh):
        a = xp.asarray(n)
        for axis in (0, 1, -1):
            for inc in (False, True):
                got = xp.cumulative_sum(a, axis=axis, include_initial=inc).numpy()
                want = np.cumulative_sum(n, axis=axis, include_initial=inc)
                np.testing.assert_array_equal(got, want)
                assert got.dtype == want.dtype
                got = xp.cumulative_prod(a, axis=axis, include_initial=inc, dtype=xp.float64).numpy()
                np.testing.assert_allclose(got, np.cumulative_prod(n, axis=axis, include_initial=inc, dtype=float))
        np.testing.assert_array_equal(xp.cumulative_sum(xp.asarray(n[0] > 1)).numpy(), np.cumsum(n[0] > 1))
        with pytest.raises(sa.DimensionError, match="axis is required"):
            xp.cumulative_sum(a)
