"""isel / x[...] / x[...] = v / the movement primitive against NumPy, on every test mesh and random layouts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from gradcheck import check_grad
from helpers import MESH_SHAPES, host, layouts, meshes, rand, sizes_strategy
from shardarray.core.movement import k_range, move

SETTINGS = settings(max_examples=40, deadline=None)
DIMS = ("a", "b")


@st.composite
def case(draw, dims=DIMS, min_size=0):
    mesh = draw(meshes())
    shape = draw(sizes_strategy(dims, min_size=min_size))
    layout = draw(layouts(mesh, dims))
    value = rand(shape, seed=draw(st.integers(0, 99)))
    return sa.asarray(value, dims=dims, mesh=mesh, layout=layout), value


def slices(n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    return st.builds(slice, bound, bound, st.one_of(st.none(), st.integers(-3, 3).filter(bool)))


def k_range_brute(start, step, lo, hi, count):
    ks = [k for k in range(count) if lo <= start + k * step < hi]
    return (ks[0], ks[-1] + 1) if ks else None


@given(st.integers(-9, 9), st.integers(-4, 4).filter(bool), st.integers(-3, 12), st.integers(-3, 12),
       st.integers(0, 8))
@settings(max_examples=300, deadline=None)
def test_k_range_matches_brute_force(start, step, lo, hi, count):
    k0, k1 = k_range(start, step, lo, hi, count)
    got = (k0, k1) if k0 < k1 else None
    assert got == k_range_brute(start, step, lo, hi, count)


@given(case(), st.data())
@SETTINGS
def test_slices_match_numpy(c, data):
    x, value = c
    key = (data.draw(slices(value.shape[0])), data.draw(slices(value.shape[1])))
    y = x[key]
    np.testing.assert_array_equal(y.numpy(), value[key])
    assert y.dims == DIMS
    for d in DIMS:  # the result keeps the layout: the dim's blocks are canonical for its new size
        assert y.spec.of(d) == x.spec.of(d)
    np.testing.assert_array_equal(x.isel(a=key[0], b=key[1]).numpy(), value[key])
    np.testing.assert_array_equal(x[{"b": key[1], "a": key[0]}].numpy(), value[key])


@given(case(min_size=1), st.data())
@SETTINGS
def test_ints_drop_dims(c, data):
    x, value = c
    i = data.draw(st.integers(-value.shape[0], value.shape[0] - 1))
    s = data.draw(slices(value.shape[1]))
    np.testing.assert_array_equal(x[i].numpy(), value[i])
    np.testing.assert_array_equal(x[i, s].numpy(), value[i, s])
    np.testing.assert_array_equal(x[:, i % value.shape[1]].numpy(), value[:, i % value.shape[1]])
    assert x[i].dims == ("b",)
    assert float(x[i, -1]) == value[i, -1]


@given(case(min_size=1), st.data())
@SETTINGS
def test_integer_ids_and_new_dims(c, data):
    x, value = c
    ids = data.draw(st.lists(st.integers(-value.shape[1], value.shape[1] - 1), max_size=5))
    np.testing.assert_array_equal(x[:, ids].numpy(), value[:, ids].reshape(value.shape[0], len(ids)))
    np.testing.assert_array_equal(x[None, ..., None].numpy(), value[None, ..., None])
    assert x[None, ..., None].dims == ("new0", "a", "b", "new3")
    idx = sa.asarray(np.array(ids, dtype=np.int64).reshape(-1), dims=("k",), mesh=x.mesh)
    got = x.isel(b=idx)
    assert got.dims == ("a", "k")
    np.testing.assert_array_equal(got.numpy(), value[:, ids].reshape(value.shape[0], len(ids)))


@given(case(), st.data())
@SETTINGS
def test_setitem_matches_numpy(c, data):
    x, value = c
    key = (data.draw(slices(value.shape[0])), data.draw(slices(value.shape[1])))
    expect = value.copy()
    target = expect[key]
    v_layout = data.draw(layouts(x.mesh, ("p", "q")))
    v_value = rand(target.shape, seed=5)
    v = sa.asarray(v_value, dims=("p", "q"), mesh=x.mesh, layout=v_layout)  # positional: other names
    before = x.shards
    x[key] = v
    expect[key] = v_value
    np.testing.assert_array_equal(x.numpy(), expect)
    assert x.shards is not before
    x[{"a": slice(None)}] = 3.0
    assert (x.numpy() == 3.0).all()
    assert _replicas_agree(x)


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=lambda s: "x".join(map(str, s.values())))
def test_setitem_int_and_broadcast(shape):
    mesh = sa.Mesh(shape)
    value = rand((5, 3))
    x = sa.asarray(value, dims=DIMS, mesh=mesh, layout={"a": mesh.axis_names[0]})
    row = sa.asarray(np.array([1.0, 2.0, 3.0]), dims=("b",), mesh=mesh)
    x[-2] = row
    x[{"a": slice(0, 2)}] = row       # broadcast along a by name
    expect = value.copy()
    expect[-2] = [1, 2, 3]
    expect[0:2] = [1, 2, 3]
    np.testing.assert_array_equal(x.numpy(), expect)
    assert _replicas_agree(x)


def _replicas_agree(x):
    from shardarray.layout import block_slices

    groups = {}
    for d, sl in enumerate(block_slices(x.mesh, x.spec)):
        groups.setdefault(tuple((s.start, s.stop) for s in sl), []).append(host(x.shards[d]))
    return all(all(np.array_equal(g[0], b) for b in g) for g in groups.values())


def test_setitem_resets_caches_and_refuses_the_tape():
    mesh = sa.Mesh({"row": 2, "col": 2})
    ids = sa.asarray(np.array([1, 2, 3]), dims=("k",), mesh=mesh)
    assert ids.host_range == (1, 3)
    ids[0] = 9
    assert ids.host_range is None
    np.testing.assert_array_equal(ids.numpy(), [9, 2, 3])
    w = sa.asarray(rand((4,)), dims=("a",), mesh=mesh, layout={"a": "row"})

    def f(w):
        w[0] = 1.0
        return w.sum()

    with pytest.raises(sa.TapeError, match="not differentiable"):
        sa.value_and_grad(f)(w)


def test_slicing_the_first_half_moves_only_what_the_layout_needs():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((8, 6)), dims=DIMS, mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        y = x[:4]
    # rows 2..3 go from row 0 to row 1, a 2 x 3 block of b per device; nothing else moves
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("alltoall", ("row",), 6)]
    with sa.comm_log() as log:
        z = x[:, ::-1]
    # reversing: every device sends its whole block (3 columns of a 4-row block) to its peer
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("alltoall", ("col",), 12)]
    with sa.comm_log() as log:
        w = x[5]
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("broadcast", ("row",), 3)]
    with sa.comm_log() as log:
        _ = x[:, 1:2]
        _ = x[2:3]          # inside member 0's block, which is where the 1-entry result lives: nothing moves
        _ = x[5:6]          # inside member 1's block, but the result's one entry belongs to member 0: one move
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("alltoall", ("row",), 3)]
    np.testing.assert_array_equal(y.numpy(), x.numpy()[:4])
    np.testing.assert_array_equal(z.numpy(), x.numpy()[:, ::-1])
    np.testing.assert_array_equal(w.numpy(), x.numpy()[5])


def test_unsplit_slices_move_nothing():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((8, 6)), dims=DIMS, mesh=mesh, layout={"a": "row"})
    with sa.comm_log() as log:
        _ = x[:, 1::2]
        _ = x[:, 4]
    assert len(log.records) == 0


def test_traffic_scales_with_the_block():
    """On 4 devices along one axis, a slice of a long dim sends at most one block per device."""
    mesh = sa.Mesh({"all": 4})
    x = sa.asarray(rand((400,)), dims=("a",), mesh=mesh, layout={"a": "all"})
    with sa.comm_log() as log:
        y = x[30::3]        # 124 entries: member 0 holds k 0..23 but its new block is k 0..30
    assert len(log.records) == 1 and 0 < log.records[0].elements <= 100
    np.testing.assert_array_equal(y.numpy(), x.numpy()[30::3])


def test_move_fills_uncovered_entries_with_zeros_on_replicas():
    mesh = sa.Mesh({"x": 2, "y": 2, "z": 2})
    value = rand((5, 3))
    x = sa.asarray(value, dims=DIMS, mesh=mesh, layout={"a": ("z", "x")})
    y = move([x], "a", 9, [(4, -2, 8, -3, 3)])
    expect = np.zeros((9, 3))
    expect[[8, 5, 2]] = value[[4, 2, 0]]
    np.testing.assert_array_equal(y.numpy(), expect)
    assert y.layout == {"a": ("z", "x")}
    assert _replicas_agree(y)


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=lambda s: "x".join(map(str, s.values())))
def test_gradients_of_slicing(shape):
    mesh = sa.Mesh(shape)
    names = mesh.axis_names
    layout = {"a": names[0]} if len(names) == 1 else {"a": names[0], "b": names[1]}
    x = sa.asarray(rand((7, 5)), dims=DIMS, mesh=mesh, layout=layout)
    c = sa.asarray(rand((7, 5), seed=3), dims=DIMS, mesh=mesh, layout=layout)

    def f(x):
        y = x[5:0:-2, ::2] * c[1:6:2, ::-2]
        z = x[{"a": -1}] * x[2]
        return (y * y).sum() + (z * z).sum() + x[:, [4, 0, 4]].sum()

    check_grad(f, x)


def test_errors_name_dim_and_size():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.zeros(mesh, {"a": 4, "b": 3}, layout={"a": "row"})
    with pytest.raises(sa.DimensionError, match="'a' of size 4"):
        x[4]
    with pytest.raises(sa.DimensionError, match="'b' of size 3"):
        x[0, -4]
    with pytest.raises(sa.DimensionError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(sa.ArgumentError, match="step 0"):
        x[::0]
    with pytest.raises(sa.DimensionError, match="'a' \\(size 4\\)"):  # boolean masks: tests/ops/indexing/test_mask.py
        x[np.array([True, False, True])]


def test_slicing_several_dims_views_when_nothing_moves_and_one_exchange_per_moving_dim():
    mesh = sa.Mesh({"row": 2, "col": 2})
    host = rand((8, 12))
    x = sa.asarray(host, dims=DIMS, mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        y = x[1:-1, ::2]        # rows 1..6 -> blocks 1..3 | 4..6 and even columns: every entry stays put
    assert log.records == []
    assert all(np.shares_memory(s, t) for s, t in zip(y.shards, x.shards))   # views, as NumPy's slicing
    np.testing.assert_array_equal(y.numpy(), host[1:-1, ::2])
    with sa.comm_log() as log:
        z = x[3:, 1::3]         # rows 3..7 (5: blocks 3 | 2) and columns 1, 4, 7, 10 (blocks 2 | 2)
    # rows: member 0 holds rows 3 (k=0) and member 1 rows 4..7 (k=1..4); the new blocks are k 0..2 | 3..4:
    # member 1 sends k=1,2 (2 rows of its sliced block: 2 columns) to member 0. Columns: member 0 holds 1, 4
    # (k=0,1), member 1 holds 7, 10 (k=2,3): nothing moves along b.
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("alltoall", ("row",), 4)]
    np.testing.assert_array_equal(z.numpy(), host[3:, 1::3])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_multi_dim_slices_match_numpy_and_their_gradient(data):
    mesh = data.draw(st.sampled_from([sa.Mesh(m) for m in ({"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2},
                                                            {"x": 2, "y": 2, "z": 2})]))
    shape = (data.draw(st.integers(0, 7)), data.draw(st.integers(0, 7)), data.draw(st.integers(1, 3)))
    axes = list(mesh.axis_names)
    layout = {}
    for d in ("a", "b", "c"):
        if axes and data.draw(st.booleans()):
            layout[d] = axes.pop(0)
    host = rand(shape)
    x = sa.asarray(host, dims=("a", "b", "c"), mesh=mesh, layout=layout)

    def sl(n):
        start = data.draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        stop = data.draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        step = data.draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
        return slice(start, stop, step)

    key = (sl(shape[0]), sl(shape[1]), sl(shape[2]))
    with sa.comm_log() as log:
        y = x[key]
    np.testing.assert_array_equal(y.numpy(), host[key])
    assert {r.op for r in log.records} <= {"alltoall"}
    assert y.layout == x.layout
    g = rand(host[key].shape)

    def f(v):
        return sa.sum(v[key] * sa.asarray(g, dims=("a", "b", "c"), mesh=mesh))

    grad = sa.grad(f)(x)
    expect = np.zeros_like(host)
    expect[key] = g
    np.testing.assert_allclose(grad.numpy(), expect, atol=1e-12)
