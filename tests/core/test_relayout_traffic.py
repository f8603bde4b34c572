"""Relayout traffic: no device receives more than the entries of its new block that it does not hold.

``core.relayout.move_axes`` slices first over the target axes no dim uses, keeps Mesh-TF's per-dim plan where no
split follows its first collective (an alltoall, then allgathers), and otherwise sends the missing pieces in one
exchange (``exchange_boxes``). ``resolve`` slices over those free axes before it reduces, and reduce-scatters
over every pending axis the target splits a dim over. Received entries are counted per device by wrapping the
mesh's communicator (what each collective hands a device from the other members of its group), independently of
the comm log; the fuzzer's cases are pinned with their comm logs.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np
import pytest
from helpers import host, layouts, rand, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.chunks import group_chunk
from shardarray.core.relayout import move_axes, resolve
from shardarray.layout import Layout, block_bounds, make_layout

DIMS = ("a", "b", "c")
SWEEP_MESHES = [{"x": 2, "y": 2, "z": 2}, {"row": 2, "col": 2}, {"x": 3, "y": 2}]


@contextlib.contextmanager
def received(mesh: sa.Mesh) -> Iterator[dict]:
    """Per device, the entries the data-moving collectives hand it from other devices (``"moved"``), and the
    reductions run (``"reduced"``: op, axes, the largest block reduced)."""
    comm = mesh.comm
    moved = [0] * mesh.size
    reduced: list[tuple[str, tuple[str, ...], int]] = []
    count = {"moved": moved, "reduced": reduced}
    originals = {name: getattr(comm, name) for name in ("allgather", "alltoall", "alltoallv_boxes", "reduce_scatter",
                                                         "allreduce", "alltoallv", "broadcast", "reduce")}

    def allgather(shards, axes, dim):
        for group in mesh.groups(axes):
            for d in group:
                moved[d] += sum(int(shards[e].size) for e in group if e != d)
        return originals["allgather"](shards, axes, dim)

    def alltoall(shards, axes, split_dim, concat_dim):
        radix = [mesh.axis_size(a) for a in axes]
        for group in mesh.groups(axes):
            for i, d in enumerate(group):
                for e in group:
                    if e != d:
                        shape = shards[e].shape
                        lo, hi = group_chunk(0, shape[split_dim], radix, i)
                        moved[d] += (hi - lo) * math.prod(n for k, n in enumerate(shape) if k != split_dim)
        return originals["alltoall"](shards, axes, split_dim, concat_dim)

    def alltoallv_boxes(send, axes, boxes, shapes, dtype):
        for group in mesh.groups(axes):
            for i, d in enumerate(group):
                moved[d] += sum(int(p.size) for e in group if e != d and send[e] is not None for p in send[e][i])
        return originals["alltoallv_boxes"](send, axes, boxes, shapes, dtype)

    def reduction(name):
        def run(shards, axes, *args, **kwargs):
            reduced.append((name, tuple(axes), max(int(s.size) for s in shards)))
            return originals[name](shards, axes, *args, **kwargs)

        return run

    def unexpected(name):
        def run(*args, **kwargs):
            raise AssertionError(f"a relayout ran {name}")

        return run

    wrappers = {"allgather": allgather, "alltoall": alltoall, "alltoallv_boxes": alltoallv_boxes,
                "reduce_scatter": reduction("reduce_scatter"), "allreduce": reduction("allreduce"),
                "alltoallv": unexpected("alltoallv"), "broadcast": unexpected("broadcast"),
                "reduce": unexpected("reduce")}
    for name, fn in wrappers.items():
        setattr(comm, name, fn)
    try:
        yield count
    finally:
        for name in wrappers:
            delattr(comm, name)


def lacking(mesh: sa.Mesh, old: Layout, new: Layout) -> list[int]:
    """Per device, the entries of its block in ``new`` that its block in ``old`` does not hold: the bound."""
    out = []
    for have, want in zip(block_bounds(mesh, old), block_bounds(mesh, new)):
        block = math.prod(hi - lo for lo, hi in want)
        held = math.prod(max(0, min(h1, w1) - max(h0, w0)) for (h0, h1), (w0, w1) in zip(have, want))
        out.append(block - held)
    return out


def check_blocks(y: sa.ShardArray, a: np.ndarray) -> None:
    np.testing.assert_array_equal(host(y.numpy()), a)
    for dev, block in enumerate(y.shards):  # every block is the one its layout says
        box = tuple(slice(lo, hi) for lo, hi in block_bounds(y.mesh, y.spec)[dev])
        np.testing.assert_array_equal(host(block), a[box])


def logged(log) -> list[tuple[str, tuple[str, ...], int]]:
    return [(r.op, r.axes, r.elements) for r in log.records]


# --- the fuzzer's cases ----------------------------------------------------------------------------------------


def test_an_alltoall_then_a_slice_slices_first():
    """{a: x} -> {b: x, c: (y, z)} on 2x2x2: c is sliced over the free y, z before the alltoall over x, which
    then moves a quarter of the block it moved before (each device received 128 entries; it lacks 32)."""
    mesh = sa.Mesh({"x": 2, "y": 2, "z": 2})
    a = np.arange(512.0).reshape(8, 8, 8)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout={"a": "x"})
    with sa.comm_log() as log, received(mesh) as count:
        y = x.relayout({"b": "x", "c": ("y", "z")})
    assert logged(log) == [("alltoall", ("x",), 64)]  # was [("alltoall", ("x",), 256)]
    assert count["moved"] == [32] * 8 == lacking(mesh, x.spec, y.spec)
    check_blocks(y, a)


def test_an_alltoall_then_a_slice_on_2x2():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.arange(64.0).reshape(4, 4, 4)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout={"a": "row"})
    with sa.comm_log() as log, received(mesh) as count:
        y = x.relayout({"b": "col", "c": "row"})
    assert logged(log) == [("alltoall", ("row",), 16)]  # was [("alltoall", ("row",), 32)]
    assert count["moved"] == [8] * 4 == lacking(mesh, x.spec, y.spec)
    check_blocks(y, a)


def test_an_allgather_then_an_alltoall_is_one_exchange():
    """{a: y, b: x} -> {a: x} on 3x2, sizes (8, 7): the per-dim plan allgathered a over y and then alltoalled it
    over x (24 entries into a new block of 21, of which 9 were held); the exchange sends the 12 missing."""
    mesh = sa.Mesh({"x": 3, "y": 2})
    a = np.arange(56.0).reshape(8, 7)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "y", "b": "x"})
    with sa.comm_log() as log, received(mesh) as count:
        y = x.relayout({"a": "x"})
    assert logged(log) == [("alltoall", ("x", "y"), 24)]  # was [("allgather", ("y",), 12), ("alltoall", ("x",), 24)]
    assert count["moved"] == lacking(mesh, x.spec, y.spec)
    assert count["moved"][0] == 12
    check_blocks(y, a)


def test_two_alltoalls_are_one_exchange():
    """{b: row, c: col} -> {a: row, b: col} on 2x2: the second alltoall (over col) would send on entries the
    first one (over row) delivered."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((4, 7, 2), 1)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout={"b": "row", "c": "col"})
    with sa.comm_log() as log, received(mesh) as count:
        y = x.relayout({"a": "row", "b": "col"})
    assert [r.op for r in log.records] == ["alltoall"]
    assert log.records[0].axes == ("row", "col")  # was alltoalls over row (16) and col (14)
    assert count["moved"] == lacking(mesh, x.spec, y.spec) == [8, 12, 16, 6]  # was 14 into device 3, lacking 6
    check_blocks(y, a)


def _pending(mesh, layout):
    """An 8x8 array with a sum pending over x (a contraction over p, split over x), and its value."""
    v = np.arange(128.0).reshape(8, 8, 2)
    big = sa.asarray(v, dims=("a", "b", "p"), mesh=mesh, layout={**layout, "p": "x"})
    out = sa.einsum(big, sa.ones(mesh, {"p": 2}, layout={"p": "x"}), out=("a", "b"))
    assert out.pending == ("x",)
    return out, v.sum(-1)


def test_a_pending_sum_is_reduce_scattered_after_a_slice_over_a_free_axis():
    """{} -> {a: (y, x)}, pending over x on 2x2: a is sliced over y locally, then reduce-scattered over x (the
    whole 8x8 block was allreduced)."""
    mesh = sa.Mesh({"x": 2, "y": 2})
    x, value = _pending(mesh, {})
    with sa.comm_log() as log:
        y = x.relayout({"a": ("y", "x")})
    assert logged(log) == [("reduce_scatter", ("x",), 32)]  # was [("allreduce", ("x",), 64)]
    assert [r.wire_bytes // 8 for r in log.records] == [16]  # was 64
    check_blocks(y, value)


def test_a_pending_axis_the_target_splits_another_way_is_reduce_scattered():
    """{a: y} -> {a: x}, pending over x: x is not the next axis a takes on (a gives up y), yet the target splits a
    over x: a reduce-scatter along a (to a over (y, x)), then one exchange of the summed pieces."""
    mesh = sa.Mesh({"x": 2, "y": 2})
    x, value = _pending(mesh, {"a": "y"})
    with sa.comm_log() as log:
        y = x.relayout({"a": "x"})
    # was [("allreduce", ("x",), 32), ("alltoall", ("x", "y"), 32)]: 32 + 32 on the wire, now 16 + 32 (an uneven
    # exchange's elements are what leaves the device: its wire bytes are its bytes)
    assert logged(log) == [("reduce_scatter", ("x",), 32), ("alltoall", ("x", "y"), 32)]
    assert [r.wire_bytes // 8 for r in log.records] == [16, 32]
    check_blocks(y, value)


def test_a_pending_sum_is_allreduced_after_slices_over_free_axes():
    """{} -> {a: y}, pending over x: x is not in the target, so an allreduce, of the half block a keeps."""
    mesh = sa.Mesh({"x": 2, "y": 2})
    x, value = _pending(mesh, {})
    with sa.comm_log() as log:
        y = x.relayout({"a": "y"})
    assert logged(log) == [("allreduce", ("x",), 32)]  # was [("allreduce", ("x",), 64)]
    check_blocks(y, value)


# --- plans that were optimal stay as they were -----------------------------------------------------------------


@pytest.mark.parametrize(("src", "dst", "records"), [
    ({"a": "row"}, {"b": "row"}, [("alltoall", ("row",), 32)]),
    ({"a": ("row", "col")}, {"a": "row"}, [("allgather", ("col",), 16)]),
    ({"a": "row", "b": "col"}, {"a": "row"}, [("allgather", ("col",), 16)]),
    ({}, {"a": "row", "b": "col"}, []),
    ({"a": "row"}, {"a": ("row", "col")}, []),
    ({"a": ("row", "col")}, {"b": ("row", "col")}, [("alltoall", ("row", "col"), 16)]),
    ({"a": ("row", "col")}, {"b": "col"}, [("alltoall", ("col",), 16), ("allgather", ("row",), 16)]),
    ({"a": "row", "b": "col"}, {"a": "col", "b": "row"}, [("alltoall", ("row", "col"), 16)]),
])
def test_optimal_plans_are_unchanged(src, dst, records):
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((8, 8, 1), 2)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout=src)
    with sa.comm_log() as log, received(mesh) as count:
        y = x.relayout(dst)
    assert logged(log) == records
    assert count["moved"] == lacking(mesh, x.spec, y.spec)
    check_blocks(y, a)


# --- the sweeps ------------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SWEEP_MESHES), sizes_strategy(DIMS, 0, 7), st.data())
def test_every_device_receives_at_most_what_its_new_block_lacks(shape, sizes, data):
    mesh = sa.Mesh(shape)
    src = data.draw(layouts(mesh, DIMS))
    dst = data.draw(layouts(mesh, DIMS))
    a = rand(sizes, 3)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout=src)
    with received(mesh) as count:
        y = sa.relayout(x, dst)
    assert y.layout == {d: v for d, v in dst.items() if v}
    check_blocks(y, a)
    bound = lacking(mesh, x.spec, y.spec)
    assert all(got <= most for got, most in zip(count["moved"], bound)), (count["moved"], bound)
    assert not count["reduced"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SWEEP_MESHES), sizes_strategy(DIMS, 0, 7), st.data())
def test_a_pending_sum_is_reduce_scattered_over_every_axis_the_target_uses(shape, sizes, data):
    """A sum pending over a free axis, resolved into a random layout: right values, an allreduce only over the
    pending axes the target does not use, and the move after the reduction within the bound."""
    mesh = sa.Mesh(shape)
    src = data.draw(layouts(mesh, DIMS))
    used = {a for axes in src.values() for a in axes}
    free = [a for a in mesh.axis_names if a not in used]
    if not free:
        return
    pend = data.draw(st.sampled_from(free))
    dst = data.draw(layouts(mesh, DIMS))
    big = rand((*sizes, 2), 4)
    full = sa.asarray(big, dims=(*DIMS, "p"), mesh=mesh, layout={**src, "p": pend})
    x = sa.einsum(full, sa.ones(mesh, {"p": 2}, layout={"p": pend}), out=DIMS)
    assert x.pending == (pend,)
    target = make_layout(mesh, DIMS, tuple(sizes), dst).axes
    with received(mesh) as count:
        r = resolve(x, target)
    assert not r.pending and not any(count["moved"])
    (op, axes, _), = count["reduced"]
    assert axes == (pend,)
    assert op == ("reduce_scatter" if any(pend in t for t in target) else "allreduce")
    with received(mesh) as count:
        y = move_axes(r, target)
    np.testing.assert_allclose(host(y.numpy()), big.sum(-1), rtol=1e-12, atol=1e-12)
    bound = lacking(mesh, r.spec, y.spec)
    assert all(got <= most for got, most in zip(count["moved"], bound)), (count["moved"], bound)
