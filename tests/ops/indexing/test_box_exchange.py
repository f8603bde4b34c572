"""``Communicator.alltoallv_boxes`` and the N-D ``movement.exchange``: several dims moved in one exchange.

The emulated communicator writes every piece straight into its box; the
generic form (packing flat buffers through ``alltoallv``, what MPI and NCCL
run) must give the same blocks and the same comm-log record.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from helpers import layouts, meshes, rand, sizes_strategy
from shardarray.comm.base import Communicator, box_shape, fill_block
from shardarray.layout import block_bounds

DIMS = ("a", "b", "c")


def slices(n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    return st.builds(slice, bound, bound, st.one_of(st.none(), st.integers(-3, 3).filter(bool)))


@st.composite
def case(draw):
    mesh = draw(meshes())
    shape = draw(sizes_strategy(DIMS, min_size=0, max_size=6))
    layout = draw(layouts(mesh, DIMS))
    value = rand(shape, seed=draw(st.integers(0, 99)))
    key = tuple(draw(slices(n)) for n in value.shape)
    return sa.asarray(value, dims=DIMS, mesh=mesh, layout=layout), value, key


@given(case())
@settings(max_examples=60, deadline=None)
def test_3d_slices_are_one_exchange_and_match_numpy(c):
    x, value, key = c
    with sa.comm_log() as log:
        y = x[key]
    np.testing.assert_array_equal(y.numpy(), value[key])
    assert y.layout == x.layout
    assert len(log.records) <= 1  # every moving dim in one exchange
    picked = [np.arange(n)[s] for s, n in zip(key, value.shape)]
    held = max(
        int(np.prod([((p >= lo) & (p < hi)).sum() for p, (lo, hi) in zip(picked, bounds)]))
        for bounds in block_bounds(x.mesh, x.spec)
    )
    for r in log.records:
        moving = tuple(a for d in DIMS for a in x.spec.of(d))
        assert r.op == "alltoall" and set(r.axes) <= set(moving)
        assert r.elements <= held  # a device sends at most what it holds of the selection


@given(case())
@settings(max_examples=40, deadline=None)
def test_generic_packed_form_equals_the_emulated_direct_writes(c):
    """The same slice with ``Communicator.alltoallv_boxes`` (flat packing, as MPI and NCCL run it) forced."""
    x, value, key = c
    with sa.comm_log() as direct:
        want = x[key]
    comm = type(x.mesh.comm)
    original = comm.alltoallv_boxes
    try:
        comm.alltoallv_boxes = Communicator.alltoallv_boxes
        with sa.comm_log() as packed:
            got = x[key]
    finally:
        comm.alltoallv_boxes = original
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert [(r.op, r.axes, r.elements) for r in packed.records] == [(r.op, r.axes, r.elements) for r in direct.records]


def test_2d_slice_on_2x2_moves_both_dims_in_one_alltoall():
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = np.arange(64.0).reshape(8, 8)
    x = sa.asarray(value, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    with sa.comm_log() as log:
        y = x[3:, 3::2]  # rows 3..7: new blocks 3..5 | 6..7; cols 3 | 5,7 held, new blocks 3,5 | 7: both move
    np.testing.assert_array_equal(y.numpy(), value[3:, 3::2])
    assert [(r.op, r.axes) for r in log.records] == [("alltoall", ("row", "col"))]
    assert y.shards[0].shape == (3, 2) and y.shards[3].shape == (2, 1)


def test_replicas_share_their_blocks_on_an_emulated_mesh():
    mesh = sa.Mesh({"row": 2, "col": 2, "dep": 2})
    value = np.arange(36.0).reshape(6, 6)
    x = sa.asarray(value, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    y = x[1:, 2:]
    np.testing.assert_array_equal(y.numpy(), value[1:, 2:])
    for d in range(mesh.size):  # dep is a replica axis: both replicas hold the very same block
        other = mesh.device_at({**mesh.coords(d), "dep": 1 - mesh.coords(d)["dep"]})
        assert y.shards[d] is y.shards[other]


def test_concat_along_a_split_dim_writes_each_entry_once():
    mesh = sa.Mesh({"row": 2, "col": 2})
    v = rand((5, 4), seed=3)
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        y = sa.concat([x, x], "a")
    np.testing.assert_array_equal(y.numpy(), np.concatenate([v, v]))
    assert [(r.op, r.axes) for r in log.records] == [("alltoall", ("row",))]


def test_fill_block_zeros_what_no_box_covers_and_passes_a_whole_piece_through():
    piece = np.ones((2, 2))
    out = fill_block(np, [((slice(1, 3), slice(0, 2)), piece)], (3, 3), np.dtype(float))
    np.testing.assert_array_equal(out, [[0, 0, 0], [1, 1, 0], [1, 1, 0]])
    assert fill_block(np, [((slice(0, 2), slice(0, 2)), piece)], (2, 2), np.dtype(float)) is piece
    assert box_shape((slice(5, None, -2), slice(None)), (7, 3)) == (3, 3)


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}, {"d": 4}, {"a": 2, "b": 2, "c": 2}])
def test_setitem_and_slice_vjp_still_match_numpy_on_every_mesh(shape):
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    v = rand((7, 5), seed=1)
    layout = {"a": axes[0], "b": axes[1]} if len(axes) > 1 else {"a": axes[0]}
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout=layout)
    y = x[2:6:3, ::-2]
    np.testing.assert_array_equal(y.numpy(), v[2:6:3, ::-2])
    x[1:4, 1:3] = 9.0
    w = v.copy()
    w[1:4, 1:3] = 9.0
    np.testing.assert_array_equal(x.numpy(), w)


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"x": 3, "y": 2}, {"a": 2, "b": 2, "c": 2}])
def test_parallel_block_fills_give_the_serial_blocks(shape, monkeypatch):
    """The emulated collectives' block fills on the copy pool (forced on for small blocks) change nothing.

    On NumPy shards, whatever the session's backend: the copy pool fills NumPy blocks only (``parallel.usable``).
    """
    from shardarray.comm import parallel

    mesh = sa.Mesh(shape, backend="numpy")
    axes = mesh.axis_names
    v = rand((11, 9, 4), seed=5)
    x = sa.asarray(v, dims=("a", "b", "c"), mesh=mesh, layout={"a": axes[0], "b": axes[1]})

    def ops():
        y = sa.merge_dims(sa.split_dim(x, "b", {"b0": 3, "b1": 3}), ("a", "b0"), "ab")  # an alltoall
        return [x[2:, ::-2].numpy(), sa.concat([x, x[1:]], "a").numpy(), y.numpy()]

    serial = ops()
    used = []
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    original = parallel._pool

    def counting(n):
        used.append(n)
        return original(n)

    monkeypatch.setattr(parallel, "_pool", counting)
    for got, want in zip(ops(), serial):
        np.testing.assert_array_equal(got, want)
    assert used  # the pool ran
    np.testing.assert_array_equal(serial[0], v[2:, ::-2])
    np.testing.assert_array_equal(serial[2], v.reshape(11 * 3, 3, 4))


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"x": 3, "y": 2}, {"a": 2, "b": 2, "c": 2}])
def test_argmax_on_the_copy_pool_equals_numpy(shape, monkeypatch):
    """``map_blocks(..., pure=True)`` (argmax's local search) forced onto the pool for small blocks gives NumPy's answer."""
    from shardarray.comm import parallel

    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    v = rand((7, 10), seed=9)
    v[3, 4] = np.nan
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"a": axes[0], "b": axes[1]})
    np.testing.assert_array_equal(sa.argmax(x, "b").numpy(), np.argmax(v, axis=1))
    np.testing.assert_array_equal(sa.argmin(x, "a").numpy(), np.argmin(v, axis=0))


def test_a_forked_child_gets_its_own_copy_pool(monkeypatch):
    """A child forked after the pool ran must not wait on its parent's (absent) threads."""
    import os

    from shardarray.comm import parallel

    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    backend = sa.Mesh({"d": 2}).backend
    assert parallel.run_all([lambda: 1, lambda: 2], 1, backend) == [1, 2]  # the pool exists in the parent now
    pid = os.fork()
    if pid == 0:  # the child: the pool must work (a hang would be killed by the parent's wait below)
        ok = False
        try:
            ok = parallel.run_all([lambda: 3, lambda: 4], 1, backend) == [3, 4]
        finally:
            os._exit(0 if ok else 1)
    import time

    for _ in range(200):  # up to 10 s
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung on the copy pool")
    assert os.WEXITSTATUS(status) == 0
