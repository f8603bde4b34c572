"""Named ``sa.repeat`` and ``sa.tile`` along split dims: one ``alltoallv``, never a gather (they refused before,
with a ``LayoutError`` that suggested an allgather, while ``xp.repeat``/``xp.tile`` already moved the data)."""

from __future__ import annotations

import numpy as np
from fuzzing import cached_meshes, fuzz
from gradcheck import check_grad
from helpers import layouts, rand
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp


def _blocks_ok(y):
    bounds = sa.layout.block_bounds(y.mesh, y.spec)
    for d in range(y.mesh.size):
        assert y.shards[d].shape == tuple(e - s for s, e in bounds[d])


@given(st.data())
@fuzz(40)
def test_named_repeat_and_tile_of_a_split_dim_match_numpy(data):
    mesh = data.draw(cached_meshes())
    shape = tuple(data.draw(st.integers(0, 5)) for _ in range(2))
    lay = data.draw(layouts(mesh, ("a", "b")))
    d = data.draw(st.sampled_from(("a", "b")))
    n = data.draw(st.integers(0, 3))
    a = rand(shape, data.draw(st.integers(0, 1000)))
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout=lay)
    axis = ("a", "b").index(d)
    with sa.comm_log() as log:
        r = sa.repeat(x, n, d)
        t = sa.tile(x, {d: n})
    assert all(rec.op.startswith("alltoall") for rec in log.records), log.records
    np.testing.assert_array_equal(r.numpy(), np.repeat(a, n, axis=axis))
    np.testing.assert_array_equal(t.numpy(), np.tile(a, tuple(n if i == axis else 1 for i in range(2))))
    assert r.layout == lay
    if not (shape[axis] == 1 and d in lay):  # (a split size-1 dim moves its axes first: sa.squeeze)
        assert t.layout == lay
    _blocks_ok(r)
    _blocks_ok(t)


def test_repeat_of_a_split_dim_moves_at_most_a_block():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.arange(15.0).reshape(5, 3)  # (blocks of 2, 1, 1, 1 rows; even blocks would repeat in place)
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": ("row", "col")})
    with sa.comm_log() as log:
        y = sa.repeat(x, 3, "i")
    np.testing.assert_array_equal(y.numpy(), np.repeat(a, 3, axis=0))
    assert [r.op for r in log.records] == ["alltoall"]  # (movement.move: one exchange of uneven pieces)
    out_block = 4 * 3 * 8  # the largest output block (4 of the 15 rows, 3 float64 each), bytes
    assert 0 < log.records[0].wire_bytes <= out_block


def test_tile_of_a_split_dim_is_one_concatenation():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(4, 3)
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    with sa.comm_log() as log:
        y = sa.tile(x, {"i": 2, "j": 3})
    np.testing.assert_array_equal(y.numpy(), np.tile(a, (2, 3)))
    assert all(r.op.startswith("alltoall") for r in log.records)
    assert y.layout == {"i": ("row",), "j": ("col",)}


def test_repeat_and_tile_of_split_dims_keep_the_positional_kind():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.arange(6.0)
    x = xp.asarray(sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": "row"}))
    np.testing.assert_array_equal(np.asarray(xp.repeat(x, 2)), np.repeat(a, 2))
    np.testing.assert_array_equal(np.asarray(xp.tile(x, (2,))), np.tile(a, 2))


def test_gradients_through_split_repeat_and_tile():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((5, 3), 1), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    w1 = sa.asarray(rand((10, 3), 2), dims=("a", "b"), mesh=mesh)
    w2 = sa.asarray(rand((5, 6), 3), dims=("a", "b"), mesh=mesh)

    def f(p):
        return sa.sum(sa.repeat(p, 2, "a") * w1) + sa.sum(sa.tile(p, {"b": 2}) * w2)

    check_grad(f, x)
