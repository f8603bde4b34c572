"""sa.reshard between the test meshes: values bit for bit, layouts, dtypes, the comm log against the plan."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from gradcheck import check_grad
from helpers import HYPOTHESIS_SHAPES, host, layouts, sizes_strategy
from shardarray.layout import block_bounds
from shardarray.ops.manipulation.reshard import ReshardPlan

DTYPES = ["float64", "float32", "int32", "complex64", "bool"]


def _value(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return (v if np.dtype(dtype).kind == "c" else v.real * 10).astype(dtype)


def _expected_sent(x, mesh, layout):
    """Independent count: per device index, elements of its source block that other target devices take from it."""
    src, dst = block_bounds(x.mesh, x.spec), block_bounds(mesh, layout)
    plan = ReshardPlan(x.mesh, x.spec, mesh, layout)
    sent = [0] * max(len(src), len(dst))
    for t, pieces in enumerate(plan.regions):
        covered = 0
        for s, region in pieces:
            assert all(a0 <= lo < hi <= a1 for (lo, hi), (a0, a1) in zip(region, src[s]))  # inside the source
            n = int(np.prod([hi - lo for lo, hi in region]))
            covered += n
            if s != t:
                sent[s] += n
        assert covered == int(np.prod([hi - lo for lo, hi in dst[t]]))  # the pieces tile the target block
    return max(sent, default=0)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_reshard_every_pair_of_meshes(data):
    a = sa.Mesh(data.draw(st.sampled_from(HYPOTHESIS_SHAPES)))
    b = sa.Mesh(data.draw(st.sampled_from(HYPOTHESIS_SHAPES)))
    dims = ("i", "j")
    sizes = data.draw(sizes_strategy(dims, 0, 7))
    dtype = data.draw(st.sampled_from(DTYPES))
    value = _value(sizes, dtype, 1)
    x = sa.asarray(value, dims=dims, mesh=a, layout=data.draw(layouts(a, dims)))
    target = data.draw(layouts(b, dims))
    lay = sa.Layout(dims, tuple(sizes), tuple(tuple(target.get(d, ())) for d in dims))
    with sa.comm_log() as log:
        y = sa.reshard(x, b, target)
    assert y.mesh == b and y.layout == {d: tuple(v) for d, v in target.items()} and y.dtype == value.dtype
    for d, (bounds, shard) in enumerate(zip(block_bounds(b, y.spec), y.shards)):  # every device's block, exactly
        np.testing.assert_array_equal(host(shard), value[tuple(slice(lo, hi) for lo, hi in bounds)], err_msg=f"device {d}")
    if a == b:
        return  # a relayout: its own collectives
    most = _expected_sent(x, b, lay)
    assert sum(r.elements for r in log.records) == most
    assert all(r.op == "alltoall" and r.axes == b.axis_names for r in log.records)
    assert len(log.records) == (1 if most else 0)
    if {ax for axes in target.values() for ax in axes} == set(b.axis_names):
        # target blocks without replicas: every element goes to one device, so a device sends at most its own
        # block (a replicated target can take one source block to several devices)
        assert most <= max(int(np.prod(s.shape)) for s in x.shards)


def test_reshard_round_trip_and_rules():
    a = sa.Mesh({"row": 2, "col": 2})
    b = sa.Mesh({"model": 4}, rules={"hidden": "model"})
    value = _value((5, 7), "float32", 2)
    x = sa.asarray(value, dims=("batch", "hidden"), mesh=a, layout={"batch": "row", "hidden": "col"})
    y = sa.reshard(x, b)  # layout=None: the target mesh's rules by dim name
    assert y.layout == {"hidden": ("model",)} and y.dtype == np.float32
    back = sa.reshard(y, a, x.layout)
    assert back.layout == x.layout
    for s, t in zip(back.shards, x.shards):
        np.testing.assert_array_equal(host(s), host(t))


def test_reshard_same_mesh_is_a_relayout():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    with sa.comm_log() as log:
        y = sa.reshard(x, sa.Mesh({"row": 2, "col": 2}), {"b": "row"})
    assert [r.op for r in log.records] == ["alltoall"] and log.records[0].axes == ("row",)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_reshard_resolves_a_pending_sum():
    a = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(_value((4, 6), "float64", 3), dims=("b", "k"), mesh=a, layout={"k": "col"})
    w = sa.asarray(_value((6, 3), "float64", 4), dims=("k", "h"), mesh=a, layout={"k": "col"})
    y = sa.einsum("b k, k h -> b h", x, w)
    assert y.pending
    z = sa.reshard(y, sa.Mesh({"all": 4}), {"b": "all"})
    assert not z.pending
    np.testing.assert_allclose(z.numpy(), x.numpy() @ w.numpy(), rtol=1e-12)


def test_reshard_to_meta_keeps_shapes():
    x = sa.asarray(np.arange(10.0), dims=("i",), mesh=sa.Mesh({"row": 2, "col": 2}), layout={"i": "row"})
    y = sa.reshard(x, sa.Mesh({"p": 3, "q": 2}, backend="meta"), {"i": "p"})
    assert [s.shape for s in y.shards] == [(4,), (4,), (4,), (4,), (2,), (2,)] and y.dtype == np.float64


def test_asarray_other_mesh_reshards():
    x = sa.asarray(np.arange(6.0), dims=("i",), mesh=sa.Mesh({"d": 1}))
    y = sa.asarray(x, dims=("k",), mesh=sa.Mesh({"p": 3, "q": 2}), layout={"k": ("q", "p")}, dtype="float32")
    assert y.dims == ("k",) and y.layout == {"k": ("q", "p")} and y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), np.arange(6.0, dtype=np.float32))


def test_reshard_gradient():
    a, b = sa.Mesh({"row": 2, "col": 2}), sa.Mesh({"p": 3, "q": 2})
    w = sa.asarray(_value((5, 3), "float64", 5), dims=("i", "j"), mesh=a, layout={"i": "row", "j": "col"})
    c = sa.asarray(_value((5, 3), "float64", 6), dims=("i", "j"), mesh=b, layout={"i": "p"})

    def loss(w):
        return (sa.reshard(w, b, {"i": "p", "j": "q"}) * c).sum()

    grads = check_grad(loss, w)
    np.testing.assert_allclose(grads.numpy(), c.numpy(), rtol=1e-12)
