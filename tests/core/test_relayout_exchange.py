"""Relayouts whose collectives would move entries that a later split drops move each device's missing entries
in one exchange instead.

``core.relayout.move_axes`` keeps its per-dim plan (alltoalls, allgathers, a final slice), after local slices
over the target's free axes, where no split follows its first collective; where one would (an axis swap between
two dims, an axis moved to a dim that does not take it next, an allgather before an alltoall, two alltoalls),
``exchange_boxes`` sends each device exactly the entries of its new block it does not hold: one alltoall record
over the axes either layout uses, never more elements than a block, the value equal to NumPy's on every mesh,
with uneven and empty blocks. (``test_relayout_traffic.py`` checks what each device receives.)
"""

from __future__ import annotations

import math

import numpy as np
from helpers import backend_name, host, layouts, meshes, rand, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.core.relayout import _plan
from shardarray.layout import block_bounds, make_layout

DIMS = ("a", "b", "c")


def _exchanges(cur, target):
    """Whether ``move_axes`` moves ``cur`` to ``target`` by ``exchange_boxes`` (no pending sum, on a mesh without
    axes of size 1): its plans would move entries that a later split drops."""
    return _plan(tuple(cur), tuple(target), frozenset(), frozenset()) is None


@settings(max_examples=60, deadline=None)
@given(meshes(), sizes_strategy(DIMS, 0, 7), st.data())
def test_relayout_any_pair_of_layouts(mesh, sizes, data):
    src = data.draw(layouts(mesh, DIMS))
    dst = data.draw(layouts(mesh, DIMS))
    a = rand(sizes, 1)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout=src)
    with sa.comm_log() as log:
        y = sa.relayout(x, dst)
    assert y.layout == {d: v for d, v in dst.items() if v}
    np.testing.assert_array_equal(host(y.numpy()), a)
    for dev, block in enumerate(y.shards):  # every block is the one its layout says
        box = tuple(slice(lo, hi) for lo, hi in block_bounds(mesh, y.spec)[dev])
        np.testing.assert_array_equal(host(block), a[box])
    cur = make_layout(mesh, DIMS, tuple(sizes), src).axes
    target = make_layout(mesh, DIMS, tuple(sizes), dst).axes
    if _exchanges(cur, target):
        assert [r.op for r in log.records] in ([], ["alltoall"])  # nothing to send when the pieces stay home
        biggest = max(math.prod(hi - lo for lo, hi in dev) for dev in block_bounds(mesh, y.spec))
        # a piece goes out from each of its holders in turn: a holder sends at most one new block to each of
        # its share of the devices that want entries of its block (one block when there are no more of those
        # than holders; more where a small dim's entries sit on few devices and many want them)
        assert all(r.elements <= biggest * _fan_out(x, y) for r in log.records)


def _fan_out(x, y) -> int:
    """Over the groups of the exchange and the distinct blocks of ``x``: the most devices wanting entries of one
    block that they do not hold, per device holding it (rounded up)."""
    mesh = x.mesh
    axes = tuple(a for a in mesh.axis_names if a in set(x.spec.used_axes) | set(y.spec.used_axes))
    src, dst = block_bounds(mesh, x.spec), block_bounds(mesh, y.spec)
    most = 1
    for group in mesh.groups(axes):
        for have in {src[d] for d in group}:
            holders = [d for d in group if src[d] == have]
            wanting = [
                d for d in group
                if src[d] != have and all(max(a0, b0) < min(a1, b1) for (a0, a1), (b0, b1) in zip(have, dst[d]))
            ]
            most = max(most, math.ceil(len(wanting) / len(holders)))
    return most


def test_a_block_wanted_by_more_devices_than_hold_it_is_sent_by_its_holders_in_turn():
    """One entry on 2 of 8 devices (over ``y`` and ``z``) moved to a layout over ``x`` that 4 devices hold: each
    of the two holders sends it to some of the three devices that lack it, neither to all three."""
    mesh = sa.Mesh({"x": 2, "y": 2, "z": 2})
    a = rand((1, 1, 1), 3)
    x = sa.asarray(a, dims=DIMS, mesh=mesh, layout={"a": ("y", "z")})
    with sa.comm_log() as log:
        y = sa.relayout(x, {"a": "x"})
    (rec,) = log.records
    assert (rec.op, rec.elements) == ("alltoall", 2)
    for dev, block in enumerate(y.shards):
        box = tuple(slice(lo, hi) for lo, hi in block_bounds(mesh, y.spec)[dev])
        np.testing.assert_array_equal(host(block), a[box])


def test_axis_swap_is_one_exchange_of_a_block():
    """The transpose's relayout on 2x2: dim ``a`` from ``row`` to ``col``, ``b`` from ``col`` to ``row``. The
    per-dim plan would allgather a whole ``b`` over ``col`` (twice the block) and then alltoall it; the exchange
    sends each off-diagonal device's block to its mirror, and the diagonal devices keep theirs."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((8, 6), 2)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        y = sa.relayout(x, {"a": "col", "b": "row"})
    (rec,) = log.records
    assert (rec.op, rec.axes, rec.elements) == ("alltoall", ("row", "col"), 4 * 3)
    np.testing.assert_array_equal(host(y.numpy()), a)
    # the diagonal devices (0,0), (1,1) keep their block: no copy on NumPy shards
    if backend_name() == "numpy":
        assert np.shares_memory(y.shards[0], x.shards[0]) and np.shares_memory(y.shards[3], x.shards[3])


def test_gradient_through_an_axis_swap():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((4, 6), 3)
    w = rand((4, 6), 4)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    wt = sa.asarray(w, dims=("a", "b"), mesh=mesh, layout={"a": "col", "b": "row"})

    def loss(p):
        return sa.sum(sa.relayout(p, {"a": "col", "b": "row"}) * wt)

    g = sa.grad(loss)(x)
    np.testing.assert_allclose(host(g.numpy()), w)
    assert g.layout == x.layout
