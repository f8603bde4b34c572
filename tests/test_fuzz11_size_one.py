"""Size-1 split dims: ``squeeze`` (named, positional, ``np.squeeze``, the reshapes and broadcasts built on it) moves
the freed mesh axes onto the remaining dim with the largest block by one alltoall (a 0-d result: one broadcast from
the devices holding the entry) instead of an allgather of the empty blocks that left the result replicated.

A size-1 dim split over k devices holds its entry on the first device of each group; the allgather moved k - 1
(padded) blocks to every device (on 2x2x2, 7 blocks for a block of 16) and left k copies. Each fuzz case checks the
value against NumPy, the layout rule of ``sa.squeeze``'s docstring, that no collective is an allgather and none
delivers more than the result's largest block to a device, the ``expand_dims`` round trip, and the gradient (the
cotangent goes back by the inverse alltoall), on meshes 1, 2x2, 4, 2x2x2, 3x2 with uneven and empty blocks, named
and positional. ``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import contextlib
import math

import fake_nccl
import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st
from nccl_meshes import nccl_mesh

import shardarray as sa
import shardarray.array_api as xp
from shardarray.layout import block_bounds

ENV = "FUZZ11_EXAMPLES"
DIMS = ("i", "j", "k", "l")
SIDES = (0, 1, 2, 3, 5, 8)


def _largest(y) -> int:
    return max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(y.mesh, y.spec)), default=0)


def _blocks_ok(y) -> None:
    """Every device holds exactly its canonical block."""
    for d, bounds in enumerate(block_bounds(y.mesh, y.spec)):
        assert tuple(y.shards[d].shape) == tuple(hi - lo for lo, hi in bounds), (d, y.shards[d].shape, bounds)


@contextlib.contextmanager
def received(mesh):
    """Per collective call over a group of more than one device, ``(op, the largest block any device holds after
    it)``: an upper bound of what a device receives (an allgather's would be its whole gathered block)."""
    comm = mesh.comm
    got: list[tuple[str, int]] = []

    def spy(name):
        inner = getattr(comm, name)

        def run(shards, axes, *args, **kwargs):
            out = inner(shards, axes, *args, **kwargs)
            if mesh.axes_size(axes) > 1:  # (over axes of size 1 nothing moves)
                got.append((name, max((int(b.size) for b in out if b is not None), default=0)))
            return out

        return run

    names = ("alltoall", "alltoallv", "alltoallv_boxes", "allgather", "broadcast")
    for name in names:
        setattr(comm, name, spy(name))
    try:
        yield got
    finally:
        for name in names:
            delattr(comm, name)


def _expected_layout(mesh, sizes, lay, which):
    """``sa.squeeze``'s rule: the squeezed dims' axes (of size > 1) appended to the remaining dim with the largest
    block, the first of equals; none left over where no dim remains."""
    freed = tuple(a for d in sizes if d in which for a in lay.get(d, ()) if mesh.axis_size(a) > 1)
    out = {d: tuple(a) for d, a in lay.items() if d not in which}
    rest = [d for d in sizes if d not in which]
    if freed and rest:
        host = max(rest, key=lambda d: (-(-sizes[d] // mesh.axes_size(lay.get(d, ()))), -rest.index(d)))
        out[host] = out.get(host, ()) + freed
    return out, freed, rest


@st.composite
def cases(draw, dtypes=("float64", "int32", "complex64")):
    """``(x, a, which, layout)``: an array with some size-1 dims (split or not), its NumPy value, the dims to
    squeeze, its layout."""
    mesh = draw(meshes())
    dims = DIMS[: draw(st.integers(1, 4))]
    sizes = {d: draw(st.sampled_from(SIDES)) for d in dims}
    for d in draw(st.lists(st.sampled_from(dims), min_size=1, unique=True)):
        sizes[d] = 1
    ones = [d for d in dims if sizes[d] == 1]
    which = tuple(draw(st.lists(st.sampled_from(ones), min_size=1, unique=True)))
    lay = draw(layouts(mesh, dims))
    if draw(st.booleans()):  # half the cases split the first squeezed dim over one or more axes
        take = draw(st.permutations(mesh.axis_names))[: draw(st.integers(1, len(mesh.axis_names)))]
        lay = {d: tuple(a for a in ax if a not in take) for d, ax in lay.items() if d != which[0]}
        lay[which[0]] = tuple(take)
        lay = {d: ax for d, ax in lay.items() if ax}
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(-4, 5, tuple(sizes[d] for d in dims)).astype(dtype)
    return sa.asarray(a, dims=dims, mesh=mesh, layout=lay), a, which, lay


@fuzz(40, ENV)
@given(cases(), st.sampled_from(("named", "positions", "xp", "np")))
def test_fuzz_squeeze_moves_axes_not_blocks(case, how):
    x, a, which, lay = case
    axes = tuple(x.dims.index(d) for d in which)
    with received(x.mesh) as got, sa.comm_log() as log:
        if how == "named":
            y = sa.squeeze(x, which)
        elif how == "positions":
            y = x.squeeze(axes)
        elif how == "xp":
            y = xp.squeeze(xp.asarray(x), axis=axes)
        else:
            y = np.squeeze(xp.asarray(x), axis=axes)
    want = np.squeeze(a, axes)
    np.testing.assert_array_equal(np.asarray(y.numpy()), want)
    if how in ("xp", "np"):
        assert isinstance(y, xp.Array)
    expect, freed, rest = _expected_layout(x.mesh, x.sizes, lay, which)
    assert y.layout == expect
    _blocks_ok(y)
    ops = [r.op for r in log.records]
    assert len(ops) <= 1 and (ops == [] or freed), (ops, freed)
    assert set(ops) <= ({"alltoall"} if rest else {"broadcast"}), ops
    assert all(op != "allgather" and most <= _largest(y) for op, most in got), (got, _largest(y))
    # the round trip: expand_dims back where the dims were, then the original layout (an alltoall back)
    z = y
    for i in sorted(axes):
        z = xp.expand_dims(z, axis=i) if how in ("xp", "np") else sa.expand_dims(z, f"n{i}", i)
    np.testing.assert_array_equal(np.asarray(z.numpy()), a)
    back = z.relayout(dict(zip(z.dims, x.spec.axes)))
    np.testing.assert_array_equal(np.asarray(back.numpy()), a)
    for s, t in zip(back.shards, x.shards):
        assert tuple(s.shape) == tuple(t.shape)


@fuzz(25, ENV)
@given(cases(dtypes=("float64",)))
def test_fuzz_squeeze_gradient_is_the_inverse_move(case):
    x, a, which, _ = case
    w = np.random.default_rng(3).normal(size=np.squeeze(a, tuple(x.dims.index(d) for d in which)).shape)

    def loss(x):
        y = sa.squeeze(x, which)
        return (y * sa.asarray(w, dims=y.dims, mesh=y.mesh, layout=y.layout)).sum()

    with received(x.mesh) as got:
        g = sa.grad(loss)(x)
    np.testing.assert_allclose(g.numpy(), w.reshape(a.shape))
    assert g.layout == x.layout
    _blocks_ok(g)
    block = max(_largest(x), 1)
    assert all(op != "allgather" and most <= block for op, most in got), (got, block)


def test_the_2x2x2_numbers():
    """(2, 1, 8) split 8 ways over its size-1 dim: one alltoall of the holder's 16 entries (112 wire bytes, each
    device receives 2 entries and keeps a block of 2) where the allgather sent 896 bytes and left 8 copies of 16."""
    mesh = _mesh({"a": 2, "b": 2, "c": 2})
    a = np.arange(16.0).reshape(2, 1, 8)
    x = sa.asarray(a, dims=("p", "one", "q"), mesh=mesh, layout={"one": ("a", "b", "c")})
    with sa.comm_log() as log:
        y = sa.squeeze(x, "one")
    assert [(r.op, r.axes, r.elements, r.wire_bytes) for r in log.records] == [("alltoall", ("a", "b", "c"), 16, 112)]
    assert y.layout == {"q": ("a", "b", "c")} and _largest(y) == 2
    np.testing.assert_array_equal(y.numpy(), a[:, 0])
    with sa.comm_log() as log:  # a 0-d result: one broadcast of the entry from its holder
        s = sa.squeeze(sa.asarray(np.array([[5.0]]), dims=("u", "v"), mesh=mesh, layout={"u": "a", "v": ("b", "c")}))
    assert [(r.op, r.elements) for r in log.records] == [("broadcast", 1)]
    assert s.layout == {} and float(s) == 5.0


def test_reshape_and_broadcast_of_a_split_size_one_dim_gather_nothing():
    """``xp.reshape`` and ``xp.broadcast_to`` squeeze size-1 dims first: no allgather, the result split."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(3, 1, 4)
    x = xp.asarray(sa.asarray(a, dims=("p", "one", "q"), mesh=mesh, layout={"p": "row", "one": "col"}))
    with sa.comm_log() as log:
        r = xp.reshape(x, (3, 4))
        b = xp.broadcast_to(x, (3, 5, 4))
    assert [rec.op for rec in log.records] == ["alltoall", "alltoall"]  # the squeeze of each: no allgather
    np.testing.assert_array_equal(r.numpy(), a.reshape(3, 4))
    np.testing.assert_array_equal(b.numpy(), np.broadcast_to(a, (3, 5, 4)))
    assert r.layout == {"p": ("row",), "q": ("col",)}


def test_pending_sum_stays_pending():
    mesh = _mesh({"row": 2, "col": 2})
    u, v = np.arange(8.0).reshape(1, 2, 4), np.arange(4.0).reshape(4, 1) + 1
    x = sa.asarray(u, dims=("one", "b", "k"), mesh=mesh, layout={"one": "row", "k": "col"})
    w = sa.asarray(v, dims=("k", "o"), mesh=mesh, layout={"k": "col"})
    h = sa.einsum(x, w)
    assert h.pending == ("col",)
    y = sa.squeeze(h, "one")
    assert y.pending == ("col",) and y.layout == {"b": ("row",)}
    np.testing.assert_array_equal(y.numpy(), np.einsum("abk,ko->bo", u, v))
    s = sa.squeeze(sa.einsum(sa.isel(x, b=slice(0, 1)), w))  # 0-d, pending: broadcast partials, then sum
    np.testing.assert_array_equal(s.numpy(), np.einsum("abk,ko->", u[:, :1], v))


def test_meta_backend():
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="meta")
    x = sa.zeros(mesh, {"b": 6, "one": 1, "h": 3}, layout={"one": ("row", "col")})
    y = sa.squeeze(x, "one")
    assert y.layout == {"b": ("row", "col")}
    _blocks_ok(y)
    s = sa.squeeze(sa.zeros(mesh, {"one": 1}, layout={"one": "col"}))
    assert s.shape == () and s.layout == {}
    _blocks_ok(s)


@pytest.mark.parametrize("shape", [{"a": 2, "b": 2, "c": 2}, {"p": 3, "q": 2}], ids=str)
def test_through_the_nccl_communicator(shape):
    """The alltoall, the 0-d broadcast (empty placeholders on the devices that do not hold the entry) and the
    gradient's alltoall back through ``NcclCommunicator`` (fake NCCL) equal the emulated mesh's."""
    fake_nccl.reset()
    a, w = np.arange(15.0).reshape(3, 1, 5), np.arange(15.0).reshape(3, 5) - 4
    got = []
    for mesh in (_mesh(shape), nccl_mesh(shape)):
        x = sa.asarray(a, dims=("p", "one", "q"), mesh=mesh, layout={"one": mesh.axis_names})
        y = sa.squeeze(x, "one")
        s = sa.squeeze(sa.isel(x, p=slice(0, 1), q=slice(1, 2)))
        g = sa.grad(lambda x: (sa.squeeze(x, "one") * sa.asarray(w, dims=("p", "q"), mesh=x.mesh)).sum())(x)
        got.append((y.layout, y.numpy(), s.numpy(), g.numpy(), g.layout))
    (ly, y, s, g, lg), (ly2, y2, s2, g2, lg2) = got
    assert ly == ly2 == {"q": tuple(shape)} and lg == lg2 == {"one": tuple(shape)}
    np.testing.assert_array_equal(y2, a[:, 0])
    np.testing.assert_array_equal(s2, a[0, 0, 1])
    np.testing.assert_array_equal(g2, w[:, None, :])
    hung = fake_nccl.hangs()
    fake_nccl.reset()
    assert not hung
