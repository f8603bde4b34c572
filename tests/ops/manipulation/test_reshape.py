"""split_dim, merge_dims, squeeze, expand_dims, tile, repeat against NumPy on every test mesh and random layouts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad
from helpers import MESH_SHAPES, layouts, meshes, rand, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa

SETTINGS = settings(max_examples=40, deadline=None)


def _blocks_ok(y):
    """Every device holds exactly its canonical (nested ceil-chunk) block."""
    bounds = sa.layout.block_bounds(y.mesh, y.spec)
    for d in range(y.mesh.size):
        assert y.shards[d].shape == tuple(e - s for s, e in bounds[d]), (d, y.shards[d].shape, bounds[d])


def _axes_size(mesh, axes):
    return math.prod(mesh.axis_size(a) for a in axes)


@st.composite
def split_case(draw):
    mesh = draw(meshes())
    factors = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
    a, c = draw(sizes_strategy(("a", "c"), 0, 5))
    h = math.prod(factors)
    lay = draw(layouts(mesh, ("a", "h", "c")))
    infer = draw(st.one_of(st.none(), st.integers(0, len(factors) - 1)))
    return mesh, (a, h, c), factors, lay, infer, draw(st.integers(0, 1000))


@given(split_case())
@SETTINGS
def test_split_dim_matches_reshape(case):
    mesh, shape, factors, lay, infer, seed = case
    names = tuple(f"n{i}" for i in range(len(factors)))
    sizes = dict(zip(names, factors))
    if infer is not None and math.prod(f for i, f in enumerate(factors) if i != infer) > 0:
        sizes[names[infer]] = -1
    a = rand(shape, seed)
    x = sa.asarray(a, dims=("a", "h", "c"), mesh=mesh, layout=lay)
    with sa.comm_log() as log:
        y = x.split_dim("h", sizes)
    assert y.dims == ("a", *names, "c")
    np.testing.assert_array_equal(y.numpy(), a.reshape(shape[0], *factors, shape[2]))
    h_axes = tuple(lay.get("h", ()))
    expect = {d: ax for d, ax in lay.items() if d != "h"}
    if h_axes:
        expect[names[0]] = h_axes
    assert y.layout == expect
    _blocks_ok(y)
    for r in log.records:
        assert r.op in ("alltoall", "allgather") and set(r.axes) <= set(h_axes), r
    # the split stays put without any collective when the first new dim divides evenly over its axes
    if not h_axes or factors[0] % _axes_size(mesh, h_axes) == 0:
        assert log.records == []


@given(meshes(), st.data())
@SETTINGS
def test_merge_dims_matches_reshape(mesh, data):
    dims = ("a", "b", "c")
    shape = data.draw(sizes_strategy(dims, 0, 5))
    lay = data.draw(layouts(mesh, dims))
    merged = tuple(data.draw(st.permutations(dims))[: data.draw(st.integers(1, 3))])
    new = data.draw(st.sampled_from(["m", merged[0]]))
    a = rand(shape, data.draw(st.integers(0, 1000)))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=lay)
    with sa.comm_log() as log:
        y = x.merge_dims(merged, new)
    i = min(dims.index(d) for d in merged)
    rest = [d for d in dims if d not in merged]
    order = rest[:i] + list(merged) + rest[i:]
    want = a.transpose([dims.index(d) for d in order])
    want = want.reshape(
        want.shape[:i] + (-1 if want.size else math.prod(x.sizes[d] for d in merged),) + want.shape[i + len(merged) :]
    )
    assert y.dims == tuple(order[:i]) + (new,) + tuple(order[i + len(merged) :])
    np.testing.assert_array_equal(y.numpy(), want)
    moved = tuple(ax for d in merged for ax in lay.get(d, ()))
    major = lay.get(merged[0], ())
    minor = tuple(ax for d in merged[1:] for ax in lay.get(d, ()))
    expect = {d: ax for d, ax in lay.items() if d not in merged}
    if moved:
        expect[new] = moved
    if y.layout != expect:  # the smallest relayout: split minor dims' axes went to one other dim, appended
        assert minor, (y.layout, expect)
        assert y.layout.get(new, ()) == tuple(major)
        others = {d: ax for d, ax in y.layout.items() if d != new}
        (parked,) = [d for d in others if others[d] != tuple(lay.get(d, ()))]
        assert others[parked] == tuple(lay.get(parked, ())) + minor
    _blocks_ok(y)
    for r in log.records:
        assert r.op in ("alltoall", "allgather") and set(r.axes) <= set(moved), r
    if not moved or (moved == tuple(major) and x.sizes[merged[0]] % _axes_size(mesh, major) == 0):
        assert log.records == []


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_split_merge_roundtrip_and_the_contract_example(shape):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names[-1]
    x = sa.random.normal(mesh, {"batch": 3, "hidden": 8 * 6}, layout={"hidden": ax}, dtype="float64")
    with sa.comm_log() as log:
        y = x.split_dim("hidden", {"heads": 8, "d_kv": 6})
        z = y.merge_dims(("heads", "d_kv"), "hidden")
    assert log.records == []  # 8 heads divide evenly over every test axis: no data moves
    assert y.layout == {"heads": (ax,)} and z.layout == x.layout
    np.testing.assert_array_equal(z.numpy(), x.numpy())


def test_uneven_blocks_on_multiples_need_no_collective():
    # hidden = 3 heads x 2 over 4 devices: old blocks [0,2) [2,4) [4,6) [6,6) are heads [0,1) [1,2) [2,3) [3,3)
    # (uneven, an empty last block) -> local
    x = sa.asarray(rand((4, 6)), dims=("batch", "hidden"), mesh=sa.Mesh({"all": 4}), layout={"hidden": "all"})
    with sa.comm_log() as log:
        y = x.split_dim("hidden", {"heads": 3, "d_kv": 2})
    assert log.records == [] and y.layout == {"heads": ("all",)}
    np.testing.assert_array_equal(y.numpy(), x.numpy().reshape(4, 3, 2))
    # hidden = 3 heads x 2 over 2 devices: old blocks [0, 3) and [3, 6) are not whole heads -> data moves
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((4, 6)), dims=("batch", "hidden"), mesh=mesh, layout={"hidden": "col"})
    with sa.comm_log() as log:
        y = x.split_dim("hidden", {"heads": 3, "d_kv": 2})
    assert [r.op for r in log.records] == ["alltoall", "alltoall"]  # parked on batch and back
    np.testing.assert_array_equal(y.numpy(), x.numpy().reshape(4, 3, 2))
    assert y.layout == {"heads": ("col",)}


def test_pending_sum_stays_pending():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a, w = rand((4, 6)), rand((6, 8), 1)
    x = sa.asarray(a, dims=("batch", "io"), mesh=mesh, layout={"io": "col"})
    v = sa.asarray(w, dims=("io", "hidden"), mesh=mesh, layout={"io": "col"})
    h = sa.einsum(x, v)
    assert h.pending == ("col",)
    y = h.split_dim("hidden", {"heads": 2, "d_kv": 4})
    assert y.pending == ("col",)
    np.testing.assert_allclose(y.numpy(), (a @ w).reshape(4, 2, 4))
    z = sa.expand_dims(sa.squeeze(y.split_dim("batch", {"one": 1, "b": 4}), "one"), "new", -1)
    assert z.pending == ("col",) and z.dims == ("b", "heads", "d_kv", "new")
    np.testing.assert_allclose(z.numpy(), (a @ w).reshape(4, 2, 4, 1))


@given(meshes(), st.data())
@SETTINGS
def test_squeeze_and_expand_dims(mesh, data):
    dims = ("a", "b", "c")
    shape = list(data.draw(sizes_strategy(dims, 0, 4)))
    ones = data.draw(st.lists(st.sampled_from(dims), unique=True))
    for d in ones:
        shape[dims.index(d)] = 1
    lay = data.draw(layouts(mesh, dims))
    a = rand(tuple(shape), data.draw(st.integers(0, 1000)))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=lay)
    which = tuple(d for d in dims if x.sizes[d] == 1)
    with sa.comm_log() as log:
        y = sa.squeeze(x) if data.draw(st.booleans()) else x.squeeze(which)
    np.testing.assert_array_equal(y.numpy(), np.squeeze(a, tuple(dims.index(d) for d in which)))
    # A squeezed split dim's axes go on splitting the data (they used to be allgathered and dropped, leaving the
    # result replicated over them): appended to the remaining dim with the largest block, by one alltoall; a 0-d
    # result is broadcast from the devices holding the entry.
    freed = tuple(ax for d in which for ax in lay.get(d, ()) if mesh.axis_size(ax) > 1)
    expect = {d: ax for d, ax in lay.items() if d not in which}
    rest = [d for d in dims if d not in which]
    if freed and rest:
        host = max(rest, key=lambda d: (-(-x.sizes[d] // _axes_size(mesh, lay.get(d, ()))), -dims.index(d)))
        expect[host] = tuple(expect.get(host, ())) + freed
    assert y.layout == expect
    ops = [r.op for r in log.records]
    assert len(ops) <= 1 and set(ops) <= ({"alltoall"} if rest else {"broadcast"}), ops
    assert all(set(r.axes) <= set(freed) for r in log.records)
    _blocks_ok(y)
    pos = data.draw(st.integers(-y.ndim - 1, y.ndim))
    z = y.expand_dims("new", pos)
    np.testing.assert_array_equal(z.numpy(), np.expand_dims(y.numpy(), pos))
    assert z.layout == y.layout and z.dims[pos] == "new"
    _blocks_ok(z)


@given(meshes(), st.data())
@SETTINGS
def test_tile_and_repeat_along_unsplit_dims(mesh, data):
    dims = ("a", "b")
    shape = data.draw(sizes_strategy(dims, 0, 5))
    lay = data.draw(layouts(mesh, dims))
    d = data.draw(st.sampled_from(dims))
    lay.pop(d, None)
    n = data.draw(st.integers(0, 3))
    a = rand(shape, data.draw(st.integers(0, 1000)))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=lay)
    with sa.comm_log() as log:
        t = sa.tile(x, {d: n})
        r = sa.repeat(x, n, d)
    assert log.records == []
    reps = tuple(n if e == d else 1 for e in dims)
    np.testing.assert_array_equal(t.numpy(), np.tile(a, reps))
    np.testing.assert_array_equal(r.numpy(), np.repeat(a, n, axis=dims.index(d)))
    assert t.layout == lay and r.layout == lay
    _blocks_ok(t)
    _blocks_ok(r)


def test_meta_backend_shapes():
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="meta")
    x = sa.zeros(mesh, {"batch": 4, "hidden": 6}, layout={"hidden": "col"})
    y = x.split_dim("hidden", {"heads": 3, "d_kv": 2})
    assert y.sizes == {"batch": 4, "heads": 3, "d_kv": 2} and y.layout == {"heads": ("col",)}
    _blocks_ok(y)
    _blocks_ok(y.merge_dims(("heads", "d_kv"), "hidden"))
    _blocks_ok(sa.tile(x.expand_dims("one"), {"one": 3}))
    i = sa.argmax(x, "hidden")
    assert i.sizes == {"batch": 4} and i.dtype == np.int64
    _blocks_ok(i)


# ---------------------------------------------------------------- gradients


def _weighted(fn, seed):
    """A scalar loss: the op's output times fixed random weights, summed (all float64)."""

    def loss(x):
        y = fn(x)
        w = sa.asarray(rand(y.shape, seed + 7), dims=y.dims, mesh=y.mesh, layout=y.layout)
        return (y * w).sum()

    return loss


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
@pytest.mark.parametrize(
    "op",
    [
        "split_keep",
        "split_move",
        "merge",
        "merge_apart",
        "merge_move",
        "squeeze",
        "squeeze_split",
        "squeeze_all",
        "expand",
        "tile",
        "repeat",
    ],
)
def test_gradients(shape, op):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names[-1]
    lay = {"c": mesh.axis_names} if op.startswith("squeeze_") else {"b": ax}  # (c: its axes move to b and back)
    dims, size = ("a", "b", "c"), (1, 1, 1) if op == "squeeze_all" else (3, 6, 1)
    fns = {
        "split_keep": lambda x: x.split_dim("b", {"p": 6, "q": 1}),
        "split_move": lambda x: x.split_dim("b", {"p": 3, "q": -1}),
        "merge": lambda x: x.merge_dims(("b", "c"), "bc"),
        "merge_apart": lambda x: x.merge_dims(("c", "a"), "ca"),
        "merge_move": lambda x: x.merge_dims(("a", "b"), "ab"),  # the minor dim is split: data moves
        "squeeze": lambda x: sa.squeeze(x, "c"),
        "squeeze_split": lambda x: sa.squeeze(x, "c"),
        "squeeze_all": lambda x: sa.squeeze(x),  # 0-d: a broadcast
        "expand": lambda x: sa.expand_dims(x, "new", position=2),
        "tile": lambda x: sa.tile(x, {"a": 2, "c": 3}),
        "repeat": lambda x: sa.repeat(x, 2, "a"),
    }
    x = sa.asarray(rand(size), dims=dims, mesh=mesh, layout=lay)
    check_grad(_weighted(fns[op], 1), x)
