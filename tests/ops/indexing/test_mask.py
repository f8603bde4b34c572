"""Boolean masks (sa.select, x[mask], x[mask] = v), nonzero and count_nonzero against NumPy; comm records."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from helpers import layouts, meshes, sizes_strategy

SETTINGS = settings(max_examples=30, deadline=None)
DIMS = ("a", "b", "c")


def _mask(rng, shape, kind):
    if kind == "none":
        return np.zeros(shape, dtype=bool)
    if kind == "all":
        return np.ones(shape, dtype=bool)
    return rng.random(shape) < 0.4


def _canonical(y, mesh):
    bounds = sa.layout.block_bounds(mesh, y.spec)
    for dev in range(mesh.size):
        assert y.shards[dev].shape == tuple(e - s for s, e in bounds[dev])


@given(meshes(), st.data())
@SETTINGS
def test_select_matches_numpy_boolean_indexing(mesh, data):
    shape = data.draw(sizes_strategy(DIMS, 0, 5))
    lay = data.draw(layouts(mesh, DIMS))
    nm = data.draw(st.integers(1, 3))  # the mask covers the first nm dims
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    a = rng.standard_normal(shape)
    m = _mask(rng, shape[:nm], data.draw(st.sampled_from(["none", "all", "some"])))
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout=lay)
    mk = sa.asarray(m, dims=DIMS[:nm], mesh=mesh, layout={d: v for d, v in lay.items() if d in DIMS[:nm]})
    with sa.comm_log() as log:
        y = sa.select(x, mk)
    np.testing.assert_array_equal(y.numpy(), a[m])
    _canonical(y, mesh)
    axes = tuple(ax for d in DIMS[:nm] for ax in lay.get(d, ()))
    assert y.layout.get(y.dims[0], ()) == axes
    n = int(np.prod([mesh.axis_size(ax) for ax in axes])) if axes else 1
    ops = [r.op for r in log.records]
    split = [d for d in DIMS[:nm] if lay.get(d)]
    if n > 1:
        # (an alltoall bringing every mask axis onto the first mask dim when several are split), one allgather
        # of one count per device, one alltoallv: each device sends at most what it selected
        assert ops[-2:] == ["allgather", "alltoall"] and log.records[-2].elements == 1
        assert len(ops) == 2 or len(split) > 1 or split != [DIMS[0]]
        rest = int(np.prod(shape[nm:]))
        assert log.records[-1].elements <= max(1, int(m.sum())) * rest
    else:
        assert ops == [] or len(split) == 0 and all(o == "alltoall" for o in ops)


@given(meshes(), st.data())
@SETTINGS
def test_mask_assign_scalar_and_values(mesh, data):
    shape = data.draw(sizes_strategy(DIMS[:2], 0, 6))
    lay = data.draw(layouts(mesh, DIMS[:2]))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    a = rng.standard_normal(shape)
    m = _mask(rng, shape, data.draw(st.sampled_from(["none", "all", "some"])))
    x = sa.asarray(a, dims=DIMS[:2], mesh=mesh, layout=lay)
    mk = sa.asarray(m, dims=DIMS[:2], mesh=mesh, layout=data.draw(layouts(mesh, DIMS[:2])))
    x[mk] = 7.0
    want = a.copy()
    want[m] = 7.0
    np.testing.assert_array_equal(x.numpy(), want)
    assert x.layout == lay
    vals = rng.standard_normal(int(m.sum()))
    v = sa.asarray(vals, dims=("sel",), mesh=mesh, layout={"sel": mesh.axis_names[0]})
    sa.mask_assign(x, mk, v)
    want[m] = vals
    np.testing.assert_array_equal(x.numpy(), want)


@given(meshes(), st.data())
@SETTINGS
def test_nonzero_and_count_nonzero(mesh, data):
    shape = data.draw(sizes_strategy(DIMS, 0, 5))
    lay = data.draw(layouts(mesh, DIMS))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    a = (rng.random(shape) < data.draw(st.sampled_from([0.0, 0.3, 1.0]))) * rng.integers(1, 5, shape)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout=lay)
    got = sa.nonzero(x)
    for g, w in zip(got, np.nonzero(a)):
        np.testing.assert_array_equal(g.numpy(), w)
        assert g.dtype == np.int64 and g.dims == ("nonzero",)
        _canonical(g, mesh)
    with sa.comm_log() as log:
        c = sa.count_nonzero(x, ("a", "c"))
    np.testing.assert_array_equal(c.numpy(), np.count_nonzero(a, axis=(0, 2)))
    # an allreduce; a squeeze (one alltoall) where the split counted dims all have size 1
    assert all(r.op in ("allreduce", "alltoall", "broadcast") for r in log.records) and len(log.records) <= 1
    assert int(sa.count_nonzero(x)) == np.count_nonzero(a)
    assert sa.count_nonzero(x, "b", keepdims=True).shape == (shape[0], 1, shape[2])


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}], ids=str)
def test_positional_masks_and_nonzero(shape):
    n = np.arange(30.0).reshape(5, 6) % 7
    with sa.default_mesh(sa.Mesh(shape)):
        a = xp.asarray(n)
        np.testing.assert_array_equal(a[a > 3].numpy(), n[n > 3])
        np.testing.assert_array_equal(a[n[:, 0] > 2].numpy(), n[n[:, 0] > 2])
        np.testing.assert_array_equal(a[xp.asarray(n[:, 0] > 2), ...].numpy(), n[n[:, 0] > 2])
        for i, w in zip(xp.nonzero(a), np.nonzero(n)):
            np.testing.assert_array_equal(i.numpy(), w)
        np.testing.assert_array_equal(xp.count_nonzero(a, axis=1).numpy(), np.count_nonzero(n, axis=1))
        a[a > 3] = -1.0
        n[n > 3] = -1.0
        np.testing.assert_array_equal(a.numpy(), n)
        sel = n < 2
        a[xp.asarray(sel)] = xp.asarray(np.arange(float(sel.sum())))
        n[sel] = np.arange(float(sel.sum()))
        np.testing.assert_array_equal(a.numpy(), n)


def test_select_and_isel_by_name():
    mesh = sa.Mesh({"row": 2, "col": 2})
    n = np.arange(12.0).reshape(3, 4)
    x = sa.asarray(n, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    keep = np.array([True, False, True, True])
    y = x.isel(b=keep)
    assert y.dims == ("a", "b") and y.layout == {"a": ("row",), "b": ("col",)}
    np.testing.assert_array_equal(y.numpy(), n[:, keep])
    mb = sa.asarray(keep, dims=("b",), mesh=mesh)
    z = sa.select(x, mb)  # the mask's dim first, the others after
    assert z.dims == ("b", "a")
    np.testing.assert_array_equal(z.numpy(), n[:, keep].T)
    np.testing.assert_array_equal(x[x > 4.5].numpy(), n[n > 4.5])
