"""Elementwise ops choose their computation layout by traffic (``core.leader.cheapest``).

An elementwise op brought its operands to ``merged_axes`` of them in order: each dim kept the axes of the first
operand that splits it. On a 4-device mesh ``x{n: a}`` of 64 entries plus ``y{m: a}`` of 512 x 64 alltoalled all
of ``y`` (a device received 6144 entries) where allgathering ``x`` (48) would do. Now each operand is tried as the
one that decides and the layout whose moves receive least wins, the first operand on a tie; a pending operand
keeps the first operand's rule. Each fuzz case (2-3 operands of random dims among ``i, j, k``, broadcasting by
name, uneven and empty blocks, meshes 1, 2x2, 4, 2x2x2, 3x2) checks (a) the value against NumPy on the gathered
operands, (b) that the op's collectives are those of moving its operands to the result's layout and nothing else,
and (c) that what a device receives (counted per receiver by wrapping the mesh's communicator, summed over the
collectives of the op: each is a step every device waits for) is no more than under the old rule.

``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.chunks import group_chunk
from shardarray.core import leader
from shardarray.core.common import merged_axes

ENV = "FUZZ11_EXAMPLES"
SIDES = (0, 1, 2, 3, 5, 8)
DIMS = ("i", "j", "k")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# --------------------------------------------------------------------------------------------- accounting


def _size(piece) -> int:
    return sum(_size(p) for p in piece) if isinstance(piece, (list, tuple)) else int(piece.size)


@contextlib.contextmanager
def receipts(mesh):
    """Per collective call, the most elements any device receives from the other members of its group: an
    allgather their shards, an alltoall their chunks of its index, an alltoallv (``alltoallv_boxes`` too) the pieces
    addressed to it; an allreduce or reduce-scatter its buffer (an upper bound)."""
    comm = mesh.comm
    got: list[int] = []
    depth = [0]

    def counted(name, count):
        inner = getattr(comm, name)

        def spy(*args, **kwargs):
            depth[0] += 1
            try:
                if depth[0] == 1:  # (a generic alltoallv_boxes runs an alltoallv: counted once)
                    got.append(count(*args, **kwargs))
                return inner(*args, **kwargs)
            finally:
                depth[0] -= 1

        setattr(comm, name, spy)

    def groups(axes):
        return [g for g in mesh.groups(axes) if len(g) > 1]

    def allgather(shards, axes, dim):
        return max((sum(int(shards[j].size) for j in g if j != i) for g in groups(axes) for i in g), default=0)

    def alltoall(shards, axes, split_dim, concat_dim):
        radix = [mesh.axis_size(a) for a in axes]
        most = 0
        for g in groups(axes):
            for k, i in enumerate(g):
                mine = 0
                for j in g:
                    if j != i:
                        lo, hi = group_chunk(0, shards[j].shape[split_dim], radix, k)
                        mine += int(shards[j].size) // max(shards[j].shape[split_dim], 1) * (hi - lo)
                most = max(most, mine)
        return most

    def alltoallv(send, axes, *rest):
        return max(
            (sum(_size(send[j][k]) for j in g if j != i) for g in groups(axes) for k, i in enumerate(g)), default=0
        )

    def buffer(shards, axes, *rest, **kw):
        return max((int(shards[i].size) for g in groups(axes) for i in g), default=0)

    names = {
        "allgather": allgather,
        "alltoall": alltoall,
        "alltoallv": alltoallv,
        "alltoallv_boxes": alltoallv,
        "allreduce": buffer,
        "reduce_scatter": buffer,
    }
    for name, count in names.items():
        counted(name, count)
    try:
        yield got
    finally:
        for name in names:
            delattr(comm, name)


def run(mesh, fn):
    """``(fn(), received, records)``: its result, what a device receives in its collectives, the comm log."""
    with receipts(mesh) as got, sa.comm_log() as log:
        out = fn()
    return out, sum(got), [(r.op, r.axes, r.elements) for r in log.records if r.group_size > 1]


def moves(mesh, operands, target):
    """``(received, records)`` of moving each operand to the per-dim ``target`` axes, one after the other."""
    total, records = 0, []
    for op in operands:
        want = {d: target[d] for d in op.dims if target[d]}
        if op.spec.axes != tuple(target[d] for d in op.dims):
            _, got, recs = run(mesh, lambda op=op, want=want: sa.relayout(op, want))
            total += got
            records += recs
    return total, records


# --------------------------------------------------------------------------------------------- NumPy


def expand(a, have, want):
    """NumPy ``a`` of dims ``have`` broadcast by name to the dims ``want`` (size 1 where missing)."""
    a = np.transpose(a, [have.index(d) for d in want if d in have])
    return a.reshape([a.shape[[d for d in want if d in have].index(d)] if d in have else 1 for d in want])


def _values(rng, shape, dtype="float64"):
    return rng.integers(-4, 5, shape).astype(dtype)


@st.composite
def operand(draw, mesh, sizes, dtype="float64"):
    """``(x, a)``: an array of a random non-empty subset of ``sizes``' dims in random order and layout."""
    names = list(sizes)
    dims = tuple(d for d in draw(st.permutations(names)) if draw(st.booleans())) or (names[0],)
    a = _values(np.random.default_rng(draw(st.integers(0, 2**31))), tuple(sizes[d] for d in dims), dtype)
    return sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), a


OPS = {
    "add": (lambda x, y: x + y, np.add),
    "multiply": (lambda x, y: x * y, np.multiply),
    "maximum": (sa.maximum, np.maximum),
    "where": (sa.where, np.where),
    "clip": (sa.clip, np.clip),
    "where_cmp": (lambda x, y, z: sa.where(x > 0, y, z), lambda a, b, c: np.where(a > 0, b, c)),
}


# --------------------------------------------------------------------------------------------- the example


def skewed(mesh):
    rng = np.random.default_rng(0)
    a, b = _values(rng, (64,)), _values(rng, (512, 64))
    x = sa.asarray(a, dims=("n",), mesh=mesh, layout={"n": "a"})
    y = sa.asarray(b, dims=("m", "n"), mesh=mesh, layout={"m": "a"})
    return x, y, a, b


def test_a_small_first_operand_moves_instead_of_a_large_second_one():
    """``x{n: a}`` (64) + ``y{m: a}`` (512 x 64) on 4 devices alltoalled all of ``y``: 6144 entries a device. Now
    ``x`` is allgathered (48 a device) and the result is split like ``y``; its dims stay ``x``'s first."""
    mesh = _mesh({"a": 4})
    x, y, a, b = skewed(mesh)
    z, got, recs = run(mesh, lambda: x + y)
    np.testing.assert_array_equal(z.numpy(), (a + b).T)
    assert z.dims == ("n", "m") and z.layout == {"m": ("a",)}
    assert recs == [("allgather", ("a",), 16)]
    old, _ = moves(mesh, [x, y], merged_axes([x, y], ("n", "m")))
    assert (got, old) == (48, 6144)
    # the same for a product, a maximum, and y first (no conflict in that order: unchanged)
    for fn, ref in ((lambda x, y: x * y, a * b), (sa.maximum, np.maximum(a, b))):
        z, got, _ = run(mesh, lambda fn=fn: fn(x, y))
        np.testing.assert_array_equal(z.numpy(), ref.T)
        assert got == 48 and z.layout == {"m": ("a",)}
    z, got, recs = run(mesh, lambda: y + x)
    np.testing.assert_array_equal(z.numpy(), a + b)
    assert recs == [("allgather", ("a",), 16)] and z.layout == {"m": ("a",)}


def test_where_and_clip_move_the_small_operands():
    """``where(c, x, y)`` with a small ``x`` deciding, and ``clip(x, lo, hi)`` of a small ``x`` and large bounds:
    the large operands stay, the small one is allgathered."""
    mesh = _mesh({"a": 4})
    x, y, a, b = skewed(mesh)
    c = sa.asarray(b > 0, dims=("m", "n"), mesh=mesh, layout={"m": "a"})
    z, got, recs = run(mesh, lambda: sa.where(c, x, y))
    np.testing.assert_array_equal(z.numpy(), np.where(b > 0, a, b).T)
    assert recs == [("allgather", ("a",), 16)] and z.layout == {"m": ("a",)} and z.dims == ("n", "m")
    old, _ = moves(mesh, [x, c, y], merged_axes([x, c, y], ("n", "m")))
    assert got == 48 < old
    hi = sa.asarray(b + 2, dims=("m", "n"), mesh=mesh, layout={"m": "a"})
    z, got, recs = run(mesh, lambda: sa.clip(x, y, hi))
    np.testing.assert_array_equal(z.numpy(), np.clip(a, b, b + 2).T)
    assert recs == [("allgather", ("a",), 16)] and got == 48


def test_positional_operators_take_the_cheaper_layout_too():
    """``a + b`` of the array API: ``a`` (64,) split over ``a`` broadcasts against ``b`` (512, 64) split by rows;
    ``a`` is allgathered, not ``b`` alltoalled, and the result keeps NumPy's shape."""
    mesh = _mesh({"a": 4})
    rng = np.random.default_rng(1)
    an, bn = _values(rng, (64,)), _values(rng, (512, 64))
    with sa.default_mesh(mesh):
        a, b = xp.asarray(an), xp.asarray(bn)
        z, got, recs = run(mesh, lambda: a + b)
        np.testing.assert_array_equal(z.numpy(), an + bn)
        assert z.shape == (512, 64) and got == 48, recs
        z, got, _ = run(mesh, lambda: xp.multiply(a, b))
        np.testing.assert_array_equal(z.numpy(), an * bn)
        assert got == 48


def test_in_place_operators_keep_the_target_layout():
    """``b += a`` writes into ``b`` in its layout (the result of ``b + a`` is split like ``b``: no move back), and
    inside ``leader.keep_first()`` an op computes in its first operand's layout, whole: ``x + y`` there alltoalls
    ``y`` as the old rule did."""
    mesh = _mesh({"a": 4})
    rng = np.random.default_rng(2)
    an, bn = _values(rng, (64,)), _values(rng, (512, 64))
    with sa.default_mesh(mesh):
        a, b = xp.asarray(an), xp.asarray(bn)
        layout = b.layout
        _, got, recs = run(mesh, lambda: b.__iadd__(a))
        np.testing.assert_array_equal(b.numpy(), an + bn)
        assert b.layout == layout and got == 48, recs
    x, y, a, b = skewed(mesh)
    with leader.keep_first():
        z, got, _ = run(mesh, lambda: x + y)
    np.testing.assert_array_equal(z.numpy(), (a + b).T)
    assert z.layout == {"n": ("a",)} and got == 6144
    assert (x + y).layout == {"m": ("a",)}  # (the rule is part of the plan's cache key)
    r = sa.asarray(b, dims=("m", "n"), mesh=mesh)  # unsplit: it decides every dim of its own there
    with leader.keep_first():
        assert (r + x).layout == {} and (x + r).layout == {"n": ("a",)}
    assert (r + x).layout == {"n": ("a",)}
    np.testing.assert_array_equal((r + x).numpy(), a + b)


def test_ties_and_pending_sums_keep_the_first_operands_layout():
    """Operands of one size split over one axis on different dims cost the same to move: the first decides, as
    before. A pending operand keeps the first operand's rule (whether its sum passes through depends on the
    layout): ``p{k: a}`` pending over ``b`` plus a large ``y{i: a}`` stays split over ``k``."""
    mesh = _mesh({"a": 2, "b": 2})
    rng = np.random.default_rng(3)
    an, bn = _values(rng, (8, 8)), _values(rng, (8, 8))
    x = sa.asarray(an, dims=("i", "j"), mesh=mesh, layout={"i": "a"})
    y = sa.asarray(bn, dims=("i", "j"), mesh=mesh, layout={"j": "a"})
    assert (x + y).layout == {"i": ("a",)} and (y + x).layout == {"j": ("a",)}
    kn, wn, yn = _values(rng, (4, 6)), _values(rng, (6,)), _values(rng, (64, 4))
    k = sa.asarray(kn, dims=("k", "j"), mesh=mesh, layout={"k": "a", "j": "b"})
    w = sa.asarray(wn, dims=("j",), mesh=mesh, layout={"j": "b"})
    p = sa.einsum(k, w, out=("k",))
    assert p.pending == ("b",) and p.layout == {"k": ("a",)}
    big = sa.asarray(yn, dims=("i", "k"), mesh=mesh, layout={"i": "a"})
    z = p + big
    assert z.layout == {"k": ("a",)}
    np.testing.assert_array_equal(z.numpy(), (kn @ wn)[:, None] + yn.T)
    q = p * 2.0 + p  # (linear ops keep the sum pending, as before)
    assert q.pending == ("b",)
    np.testing.assert_array_equal(q.numpy(), 3 * (kn @ wn))


# --------------------------------------------------------------------------------------------- the fuzz


@fuzz(150, ENV)
@given(st.data())
def test_fuzz_elementwise_traffic(data):
    """2-3 operands of random dims (broadcast by name) and layouts: the value is NumPy's, the collectives are the
    moves to the result's layout, and a device receives no more than under the old rule (the first operand that
    splits a dim decides)."""
    mesh = data.draw(meshes())
    sizes = {d: data.draw(st.sampled_from(SIDES)) for d in DIMS[: data.draw(st.integers(1, 3))]}
    name = data.draw(st.sampled_from(sorted(OPS)))
    fn, ref = OPS[name]
    n = 2 if name in ("add", "multiply", "maximum") else 3
    pairs = [data.draw(operand(mesh, sizes)) for _ in range(n)]
    if name == "where":
        c, cn = pairs[0]
        pairs[0] = (c > 0, cn > 0)
    ops = [x for x, _ in pairs]
    z, got, recs = run(mesh, lambda: fn(*ops))
    # the result's dims: the deciding operand's (x of where: the second) first, then the others' new ones
    lead = 1 if name.startswith("where") else 0
    order = [ops[lead], *(x for i, x in enumerate(ops) if i != lead)]
    dims = tuple(dict.fromkeys(d for x in order for d in x.dims))
    assert z.dims == dims
    expected = ref(*(expand(a, x.dims, dims) for x, a in pairs))
    np.testing.assert_array_equal(z.numpy(), np.broadcast_to(expected, z.shape))
    chosen = {d: z.spec.of(d) for d in dims}
    _, expect = moves(mesh, ops, chosen)
    assert recs == expect, (name, [x.layout for x in ops], z.layout, recs, expect)
    old, _ = moves(mesh, ops, merged_axes(order, dims))
    assert got <= old, (name, [x.layout for x in ops], z.layout, got, old)
    if leader.cheapest(order, dims) == merged_axes(order, dims):
        assert chosen == merged_axes(order, dims)  # no conflict, or a tie: unchanged


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_size_skewed_operands_move_the_small_one(data):
    """A small operand split over an axis that a large one splits another dim over: the small one moves (strictly
    less than the old rule's alltoall of the large one, whenever that moved data), and the value is NumPy's."""
    mesh = data.draw(meshes())
    axis = data.draw(st.sampled_from([a for a in mesh.axis_names if mesh.axis_size(a) > 1] or [mesh.axis_names[0]]))
    p = mesh.axis_size(axis)
    n, m = data.draw(st.sampled_from((p, 2 * p, 3 * p - 1))), data.draw(st.sampled_from((8 * p, 16 * p + 1)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    a, b = _values(rng, (n,)), _values(rng, (m, n))
    x = sa.asarray(a, dims=("n",), mesh=mesh, layout={"n": axis})
    y = sa.asarray(b, dims=("m", "n"), mesh=mesh, layout={"m": axis})
    name = data.draw(st.sampled_from(("add", "multiply", "maximum")))
    fn, ref = OPS[name]
    z, got, _ = run(mesh, lambda: fn(x, y))
    np.testing.assert_array_equal(z.numpy(), ref(a, b).T)
    old, _ = moves(mesh, [x, y], merged_axes([x, y], ("n", "m")))
    if p > 1:
        assert z.layout == {"m": (axis,)} and got < old, (z.layout, got, old)
        assert got <= math.ceil(n / p) * (p - 1)


def test_the_example_of_the_module():
    """The doctest numbers of ``core.leader``: moving ``y`` receives 49152 entries a device, ``x`` 48."""
    mesh = _mesh({"a": 4})
    x = sa.zeros(mesh, {"n": 64}, layout={"n": "a"})
    y = sa.zeros(mesh, {"m": 4096, "n": 64}, layout={"m": "a"})
    assert [leader.move_cost([x, y], c) for c in leader.candidates([x, y], ("n", "m"))] == [49152, 48]
