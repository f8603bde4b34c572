"""A differential fuzz of the named API as a Mesh-TF / xarray user writes it (round 15): on random meshes (1, 2x2,
4, 2x2x2, 3x2) and layouts (dims split over one or two mesh axes, uneven and empty blocks), every case checks the
gathered value against NumPy after aligning dims by name.

Covered: broadcasting by name in ``x + y``, ``x * y``, ``x - y``, ``x / y``, ``sa.where``, ``sa.maximum``/``minimum``
with dims in different orders and missing on either side, of operands in different layouts (the result has the
first operand's dims first, ``where``'s value operand's; no collective where the layouts agree; no device receives
more than its block of each moved operand); ``x.relayout``/``sa.relayout``/``sa.reshard`` between random layouts
(each device receives at most the entries of its new block its old block lacks, counted per device by a spy on
the communicator; an axis moving from one dim to another is one alltoall whose logged bytes are a device's block);
``rename``/``transpose``/``astype`` (no traffic, the layout follows the dims); named reductions (``sum``, ``mean``,
``max``, ``min``, ``sa.logsumexp``, ``sa.softmax`` over one or two dims, split or not) and every consumer of a
pending sum (``.numpy()``, arithmetic, a nonlinear op, a relayout, ``sa.show``, an einsum); ``sa.einsum`` in its
named (``out=``), implicit and spelled-out forms with ``layout=``, contractions over dims split in both operands,
batch dims split, dims of size 0 and 1; ``sa.concat``/``sa.stack``/``split_dim``/``merge_dims`` of operands in
other dim orders and layouts; ``sa.sort``/``argsort``/``top_k``/``unique_*`` along split dims (NaN and infinities
included); and bad input (a missing dim, a size mismatch between operands, a mesh axis used by two dims, an unknown
axis, repeated dims), which must raise a typed ``sa`` error naming the dims, sizes and axes.

Found: an einsum carried a pending operand's sum through the contraction even where another operand held an
infinity, so a device's zero partial sum gave ``0 * inf = nan`` where NumPy gives ``inf`` (fixed in
``ops/einsum.py``: such operands are resolved first; ``test_einsum_of_pending_with_inf``,
``test_fuzz_einsum_pending_with_specials``); the same ``0 * inf`` of a pending sum times (or divided by) an array,
and ``where``'s operand numbering in a message (fixed in ``ops/elementwise/arithmetic.py``: the tests at the end).

``FUZZ15_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
from shardarray.chunks import group_chunk
from shardarray.layout import block_bounds

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ15_EXAMPLES"
POOL = ("a", "b", "c", "d")
SIDES = (0, 1, 2, 3, 5)
DTYPES = ("float64", "float32", "int64", "int32")
FEW = 8


# --------------------------------------------------------------------------------------------- data


def _values(seed: int, shape: tuple, dtype: str) -> np.ndarray:
    """Small integers: sums are exact in every dtype and summation order."""
    rng = np.random.default_rng(seed)
    return rng.integers(-4, 5, shape).astype(dtype)


@st.composite
def named(draw, mesh, sizes, dims=None, dtypes=DTYPES, min_dims=0, max_dims=3):
    """``(x, a)``: an array of some dims of ``sizes`` (random order) in a random layout, and its NumPy value."""
    if dims is None:
        pool = draw(st.permutations(tuple(sizes)))
        dims = tuple(pool[: draw(st.integers(min_dims, min(max_dims, len(pool))))])
    a = _values(draw(st.integers(0, 2**32 - 1)), tuple(sizes[d] for d in dims), draw(st.sampled_from(dtypes)))
    return sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), a


@st.composite
def sizes_of(draw, dims=POOL, sides=SIDES):
    return {d: draw(st.sampled_from(sides)) for d in dims}


def aligned(a: np.ndarray, dims: tuple, target: tuple) -> np.ndarray:
    """``a`` (dims ``dims``) with its axes in the order of ``target``, a missing dim as a length-1 axis."""
    for d in target:
        if d not in dims:
            a, dims = a[..., None], (*dims, d)
    return np.transpose(a, [dims.index(d) for d in target])


def check(got, expected, dims=None, exact=True) -> None:
    """``got`` (a ShardArray) equals ``expected`` (NumPy, axes in ``got``'s dim order unless ``dims`` says)."""
    g = got.numpy()
    e = np.asarray(expected)
    if dims is not None:
        e = aligned(e, tuple(dims), got.dims)
    assert g.shape == e.shape, (got.dims, g.shape, e.shape)
    if exact:
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        np.testing.assert_array_equal(g, e)
    else:
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def spec(*terms: tuple, out: tuple) -> str:
    """The ``np.einsum`` subscripts of named terms (each dim name a letter)."""
    letters: dict = {}
    for d in (*[d for t in terms for d in t], *out):
        letters.setdefault(d, "abcdefghij"[len(letters)])
    return ",".join("".join(letters[d] for d in t) for t in terms) + "->" + "".join(letters[d] for d in out)


def blocks(x) -> tuple:
    return block_bounds(x.mesh, x.spec)


def volume(box) -> int:
    return math.prod(max(hi - lo, 0) for lo, hi in box)


def overlap(p, q) -> int:
    return math.prod(max(min(h1, h2) - max(l1, l2), 0) for (l1, h1), (l2, h2) in zip(p, q))


def largest(x) -> int:
    return max((volume(b) for b in blocks(x)), default=0)


# --------------------------------------------------------------------------------------------- per-device traffic


def _size(piece) -> int:
    if piece is None:
        return 0
    if isinstance(piece, (list, tuple)):
        return sum(_size(p) for p in piece)
    return int(piece.size)


@contextlib.contextmanager
def receipts(mesh):
    """``(got, ops)``: per device, the entries it receives from the *other* members of its groups in every
    collective (an allgather: their shards; an alltoall: their chunk for it; an alltoallv: their pieces for it; a
    reduction: its buffer), and the ``(collective, axes)`` called, by wrapping the mesh's communicator."""
    comm = mesh.comm
    got = np.zeros(mesh.size, dtype=np.int64)
    ops: list = []

    def gathered(shards, group, i, args, kw):
        return sum(_size(shards[j]) for k, j in enumerate(group) if k != i)

    def exchanged(shards, group, i, args, kw):
        split = kw["split_dim"] if "split_dim" in kw else args[2]
        radix = [mesh.axis_size(a) for a in args[1]]
        total = 0
        for k, j in enumerate(group):
            s = shards[j]
            if k != i and s.shape[split]:
                lo, hi = group_chunk(0, s.shape[split], radix, i)
                total += (hi - lo) * (int(s.size) // s.shape[split])
        return total

    def personal(shards, group, i, args, kw):
        return sum(_size(shards[j][i]) for k, j in enumerate(group) if k != i)

    def whole(shards, group, i, args, kw):
        return _size(shards[group[i]])

    count = {
        "allgather": gathered,
        "alltoall": exchanged,
        "alltoallv": personal,
        "alltoallv_boxes": personal,
        "allreduce": whole,
        "reduce_scatter": whole,
        "broadcast": whole,
        "reduce": whole,
    }

    def wrap(name, how):
        inner = getattr(comm, name)

        def spy(*args, **kw):
            shards, axes = args[0], args[1]
            for group in mesh.groups(axes):
                if len(group) > 1 and all(shards[d] is not None for d in group):
                    for i, d in enumerate(group):
                        got[d] += how(shards, group, i, args, kw)
            if mesh.axes_size(axes) > 1:
                ops.append((name, tuple(axes)))
            return inner(*args, **kw)

        return spy

    for name, how in count.items():
        setattr(comm, name, wrap(name, how))
    try:
        yield got, ops
    finally:
        for name in count:
            delattr(comm, name)


def _conflict(x, y) -> bool:
    """Whether ``x`` and ``y`` split a shared dim differently or use one mesh axis (of size > 1) on two dims."""
    mesh = x.mesh
    for d in set(x.dims) & set(y.dims):
        if x.spec.of(d) and y.spec.of(d) and x.spec.of(d) != y.spec.of(d):
            return True
    for ax in mesh.axis_names:
        if mesh.axis_size(ax) == 1:
            continue
        dx = [d for d in x.dims if ax in x.spec.of(d)]
        dy = [d for d in y.dims if ax in y.spec.of(d)]
        if dx and dy and dx != dy:
            return True
        if (dx and dx[0] in y.dims and not y.spec.of(dx[0]) and dy) or (
            dy and dy[0] in x.dims and not x.spec.of(dy[0]) and dx
        ):
            return True
    return False


# ============================================================================================= broadcasting by name


BINARY = {
    "add": (lambda x, y: x + y, np.add),
    "subtract": (lambda x, y: x - y, np.subtract),
    "multiply": (lambda x, y: x * y, np.multiply),
    "divide": (lambda x, y: x / y, np.divide),
    "maximum": (sa.maximum, np.maximum),
    "minimum": (sa.minimum, np.minimum),
    "where": (lambda x, y: sa.where(x > 0, x, y), lambda a, b: np.where(a > 0, a, b)),
    "where_scalar": (lambda x, y: sa.where(y > 0, 0.5, x), lambda a, b: np.where(b > 0, 0.5, a)),
}


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_broadcast_by_name(data):
    """Binary ops match dims by name (any order, a missing dim broadcasts) and give NumPy's value and dtype on the
    aligned operands; the result has the first operand's dims first (``where``: its value operand's), then the
    other's new dims; operands whose layouts agree move nothing, and no device receives more than its block of
    each operand it lacks."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of())
    x, a = data.draw(named(mesh, sizes))
    y, b = data.draw(named(mesh, sizes))
    name = data.draw(st.sampled_from(sorted(BINARY)))
    fn, ref = BINARY[name]
    with receipts(mesh) as (got, ops):
        r = fn(x, y)
    union = (*x.dims, *[d for d in y.dims if d not in x.dims])
    assert r.dims == union, (name, x.dims, y.dims, r.dims)
    with np.errstate(all="ignore"):
        expected = ref(aligned(a, x.dims, union), aligned(b, y.dims, union))
    check(r, expected)
    if not _conflict(x, y):
        assert ops == [], (name, x.layout, y.layout, ops)
    assert got.max(initial=0) <= 2 * largest(r) + FEW, (name, x.layout, y.layout, r.layout, got, ops)


@fuzz(30, ENV)
@given(st.data())
def test_fuzz_broadcast_three_way(data):
    """``where(cond, x, y)`` with three operands of different dims, orders and layouts, and chains of ops: the
    value is NumPy's on the aligned operands."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of())
    c, m = data.draw(named(mesh, sizes, dtypes=("int64",)))
    x, a = data.draw(named(mesh, sizes, dtypes=("float64", "float32")))
    y, b = data.draw(named(mesh, sizes, dtypes=("int32", "float32")))
    r = sa.where(c > 0, x, y) * 2.0 - sa.maximum(y, x)
    union = tuple(dict.fromkeys((*x.dims, *y.dims, *c.dims)))
    assert set(r.dims) == set(union)
    am, ax, ay = aligned(m, c.dims, r.dims), aligned(a, x.dims, r.dims), aligned(b, y.dims, r.dims)
    check(r, np.where(am > 0, ax, ay) * 2.0 - np.maximum(ay, ax))


# ============================================================================================= relayout


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_relayout_pairs(data):
    """A relayout keeps the value and gives the target layout; each device receives at most the entries of its
    new block that its old block lacks (Mesh-TF §6.1: unsplit -> split is a local slice, nothing moves); an axis
    moving from one dim to another (split -> split along another dim) is one alltoall whose logged bytes are a
    device's block."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of(sides=(0, 1, 2, 3, 5, 8)))
    x, a = data.draw(named(mesh, sizes, min_dims=1))
    target = data.draw(layouts(mesh, x.dims))
    how = data.draw(st.sampled_from(["method", "function", "reshard"]))
    with receipts(mesh) as (got, ops), sa.comm_log() as log:
        if how == "method":
            y = x.relayout(target)
        elif how == "function":
            y = sa.relayout(x, target)
        else:
            y = sa.reshard(x, mesh, target)
    check(y, a)
    assert y.layout == target and y.dims == x.dims
    old, new = blocks(x), blocks(y)
    for d in range(mesh.size):
        assert got[d] <= volume(new[d]) - overlap(new[d], old[d]), (x.layout, target, d, got, ops)
    if not x.layout:
        assert ops == [], ops
    moved = [(d, e) for d in x.dims for e in x.dims if d != e and x.spec.of(d) and x.spec.of(d) == y.spec.of(e)]
    if (
        how != "reshard"
        and len(x.layout) == 1
        and len(target) == 1
        and moved
        and x.sizes[moved[0][0]]
        and (math.prod(mesh.axis_size(ax) for ax in x.spec.of(moved[0][0])) > 1)
    ):
        # one axis group moves from dim d to dim e: one alltoall of the block (its record: the largest buffer)
        records = [r for r in log.records if r.group_size > 1]
        assert [r.op for r in records] == ["alltoall"], records
        assert records[0].bytes == largest(x) * x.dtype.itemsize, (records, largest(x))


@fuzz(25, ENV)
@given(st.data())
def test_fuzz_reshard_meshes(data):
    """``sa.reshard`` to another mesh and layout keeps the value, dims and dtype; a pending input is resolved."""
    mesh = data.draw(meshes())
    other = data.draw(meshes())
    sizes = data.draw(sizes_of())
    x, a = data.draw(named(mesh, sizes, min_dims=1))
    if data.draw(st.booleans()):
        d = x.dims[0]
        x, a = x.sum(d), a.sum(0)
    target = data.draw(layouts(other, x.dims))
    y = sa.reshard(x, other, target)
    assert y.mesh is other and y.layout == target and y.pending == ()
    check(y, a)


@fuzz(30, ENV)
@given(st.data())
def test_fuzz_rename_transpose_astype(data):
    """``rename`` keeps the layout under the new names, ``transpose`` permutes by name, ``astype`` casts as NumPy:
    no collective, the layout unchanged."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of())
    x, a = data.draw(named(mesh, sizes, min_dims=1))
    perm = tuple(data.draw(st.permutations(x.dims)))
    old = x.dims[data.draw(st.integers(0, x.ndim - 1))]
    dtype = data.draw(st.sampled_from(["float16", "int8", "bool", "complex64", "float64", "uint8"]))
    with sa.comm_log() as log:
        t = x.transpose(*perm)
        n = x.rename({old: "new"})
        c = x.astype(dtype)
    assert [r for r in log.records if r.group_size > 1] == []
    assert t.dims == perm and t.layout == x.layout
    check(t, np.transpose(a, [x.dims.index(d) for d in perm]))
    assert n.dims == tuple("new" if d == old else d for d in x.dims)
    assert n.layout == {("new" if d == old else d): ax for d, ax in x.layout.items()}
    check(n, a)
    assert c.layout == x.layout
    with np.errstate(all="ignore"):
        check(c, a.astype(dtype))


# ============================================================================================= reductions


def _logsumexp(a, axis):
    m = np.max(a, axis=axis, keepdims=True) if a.size else np.zeros((1,) * a.ndim, a.dtype)
    m = np.where(np.isfinite(m), m, 0)
    return np.squeeze(np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m, axis=axis)


def _softmax(a, axis):
    e = np.exp(a - (np.max(a, axis=axis, keepdims=True) if a.size else 0))
    return e / e.sum(axis, keepdims=True)


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_named_reductions(data):
    """``sum``/``mean``/``max``/``min``/``logsumexp``/``softmax`` over one or two named dims, split or not, give
    NumPy's value (``max``/``min`` over an empty dim: the op's identity, as ``jax.lax.reduce_max``); a sum over a
    split dim may stay pending, and each consumer resolves it right: ``.numpy()``, adding an array, a nonlinear op,
    a relayout (no longer pending), ``sa.show`` (which says so), an einsum, scaling."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of())
    floats = data.draw(st.booleans())
    x, a = data.draw(named(mesh, sizes, min_dims=1, dtypes=("float64", "float32") if floats else DTYPES))
    over = tuple(data.draw(st.permutations(x.dims)))[: data.draw(st.integers(1, min(2, x.ndim)))]
    axis = tuple(x.dims.index(d) for d in over)
    kinds = ["sum", "mean", "max", "min"] + (["logsumexp", "softmax"] if floats else [])
    kind = data.draw(st.sampled_from(kinds))
    arg = over if len(over) > 1 else over[0]
    with np.errstate(all="ignore"):
        if kind == "logsumexp":
            r, e = sa.logsumexp(x, arg), _logsumexp(a, axis)
        elif kind == "softmax":
            r, e = sa.softmax(x, arg), _softmax(a, axis)
        elif kind in ("max", "min") and any(x.sizes[d] == 0 for d in over):
            r = getattr(x, kind)(arg)
            ident = np.inf if kind == "min" else -np.inf
            if a.dtype.kind == "i":
                ident = np.iinfo(a.dtype).max if kind == "min" else np.iinfo(a.dtype).min
            e = np.full(tuple(x.sizes[d] for d in x.dims if d not in over), ident, a.dtype)
        else:
            r, e = getattr(x, kind)(arg), getattr(a, kind)(axis)
    exact = kind in ("sum", "max", "min")
    e = np.asarray(e)
    consumer = data.draw(st.sampled_from(["numpy", "add", "exp", "relayout", "show", "einsum", "scale"]))
    if consumer == "numpy":
        check(r, e, exact=exact)
    elif consumer == "add":
        b, bv = data.draw(named(mesh, sizes, dims=r.dims, dtypes=("float64",)))
        check(r + b, e + bv, exact=False)
    elif consumer == "exp":
        with np.errstate(all="ignore"):
            check(sa.exp(r.astype("float64")), np.exp(e.astype("float64")), exact=False)
    elif consumer == "relayout":
        target = data.draw(layouts(mesh, r.dims))
        out = r.relayout(target)
        assert out.pending == () and out.layout == target
        check(out, e, exact=exact)
    elif consumer == "show":
        text = sa.show(r)
        assert ("pending" in text) == bool(r.pending), text
        check(r, e, exact=exact)
    elif consumer == "einsum":
        b, bv = data.draw(named(mesh, sizes, dims=r.dims, dtypes=("float64",)))
        expected = np.einsum(e.astype("float64"), list(range(e.ndim)), bv, list(range(e.ndim)))
        check(sa.einsum(r.astype("float64"), b, out=()), expected, exact=exact)
    else:
        check(-(r * 3) / 2, -(e * 3) / 2, exact=False)


@fuzz(30, ENV)
@given(st.data())
def test_fuzz_pending_meets_pending(data):
    """Two sums pending over (maybe) different axes: adding them keeps the sum only over the same axes, a product
    or a maximum resolves both, an einsum of them is NumPy's; every result matches NumPy."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of())
    x, a = data.draw(named(mesh, sizes, min_dims=2, dtypes=("float64", "int64")))
    y, b = data.draw(named(mesh, sizes, min_dims=2, dtypes=("float64", "int64")))
    p, pa = x.sum(x.dims[0]), a.sum(0)
    q, qa = y.sum(y.dims[-1]), b.sum(-1)
    op = data.draw(st.sampled_from(["add", "sub", "mul", "maximum", "einsum"]))
    if op == "einsum":
        r = sa.einsum(p, q)
        check(r, np.einsum(spec(p.dims, q.dims, out=r.dims), pa, qa))
        return
    fn, ref = {
        "add": (lambda u, v: u + v, np.add),
        "sub": (lambda u, v: u - v, np.subtract),
        "mul": (lambda u, v: u * v, np.multiply),
        "maximum": (sa.maximum, np.maximum),
    }[op]
    r = fn(p, q)
    if op == "add" and r.pending:
        assert set(r.pending) == set(p.pending) == set(q.pending)
    check(r, ref(aligned(pa, p.dims, r.dims), aligned(qa, q.dims, r.dims)))


@fuzz(30, ENV)
@given(st.data())
def test_fuzz_resolve_into_layout(data):
    """A relayout of a pending sum resolves it: by a reduce-scatter for a pending axis the target splits a dim over
    (never an allreduce over that axis), by an allreduce of at most the partial block otherwise; the value is
    NumPy's and nothing stays pending."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of(sides=(1, 2, 3, 5, 8)))
    x, a = data.draw(named(mesh, sizes, min_dims=2, dtypes=("float64", "int64")))
    p, value = x.sum(x.dims[0]), a.sum(0)
    target = data.draw(layouts(mesh, p.dims))
    with sa.comm_log() as log:
        r = p.relayout(target)
    check(r, value)
    assert r.pending == () and r.layout == target
    records = [q for q in log.records if q.group_size > 1]
    split = {ax for d in r.dims for ax in r.spec.of(d)}
    scattered = {ax for ax in p.pending if ax in split and mesh.axis_size(ax) > 1}
    reductions = [q for q in records if q.op in ("allreduce", "reduce_scatter")]
    assert not any(q.op == "allreduce" and scattered.intersection(q.axes) for q in reductions), records
    if scattered:
        assert any(q.op == "reduce_scatter" for q in reductions), records
    for q in reductions:
        assert q.elements <= largest(p), (records, largest(p))


# ============================================================================================= einsum


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_einsum_named(data):
    """``sa.einsum`` with dims matched by name, in every form: implicit (dims in one operand), ``out=``, the
    spelled-out equation (terms in any order, with or without ``->``) and ``layout=`` (resolved into it: not
    pending); one to three operands of any layouts (contracted dims split in both, batch dims split), sizes 0 and
    1; the value and dtype are ``np.einsum``'s."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of())
    n = data.draw(st.integers(1, 3))
    ops = [data.draw(named(mesh, sizes, dtypes=("float64", "float32", "int32", "int64"))) for _ in range(n)]
    xs = [o[0] for o in ops]
    union = tuple(dict.fromkeys(d for x in xs for d in x.dims))
    count = {d: sum(d in x.dims for x in xs) for d in union}
    implicit = tuple(d for d in union if count[d] == 1)
    out = tuple(data.draw(st.permutations(union)))[: data.draw(st.integers(0, len(union)))]
    form = data.draw(st.sampled_from(["implicit", "out", "equation", "equation_implicit", "layout"]))
    terms = ", ".join(" ".join(data.draw(st.permutations(x.dims))) for x in xs)
    if form == "implicit":
        r, want = sa.einsum(*xs), implicit
    elif form == "out":
        r, want = sa.einsum(*xs, out=out), out
    elif form == "equation":
        r, want = sa.einsum(f"{terms} -> {' '.join(out)}", *xs), out
    elif form == "equation_implicit":
        r, want = sa.einsum(terms, *xs), implicit
    else:
        target = data.draw(layouts(mesh, out))
        r, want = sa.einsum(*xs, out=out, layout=target), out
        assert r.pending == () and r.layout == target
    assert r.dims == want
    check(r, np.einsum(spec(*[x.dims for x in xs], out=want), *[o[1] for o in ops]))


@fuzz(30, ENV)
@given(st.data())
def test_fuzz_einsum_split_contraction(data):
    """A batched matmul-shaped einsum whose contracted dim is split in both operands (over the same or different
    axes) and whose batch dim is split: NumPy's value, a pending sum only over axes no result dim uses; ``x @ w``
    (``sa.einsum(x, w)``) contracts every shared dim, the batch dim too."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of(dims=("batch", "k", "m", "n")))
    x, a = data.draw(
        named(mesh, sizes, dims=tuple(data.draw(st.permutations(("batch", "m", "k")))), dtypes=("float64",))
    )
    w, b = data.draw(
        named(mesh, sizes, dims=tuple(data.draw(st.permutations(("k", "batch", "n")))), dtypes=("float64",))
    )
    out = tuple(data.draw(st.permutations(("batch", "m", "n"))))
    r = sa.einsum(x, w, out=out)
    assert r.dims == out
    assert not {ax for d in out for ax in r.spec.of(d)}.intersection(r.pending)
    check(r, np.einsum(spec(x.dims, w.dims, out=out), a, b))
    both = x @ w  # (contracts every shared dim: batch and k)
    assert both.dims == sa.einsum(x, w).dims == tuple(d for d in (*x.dims, *w.dims) if d in ("m", "n"))
    check(both, np.einsum(spec(x.dims, w.dims, out=both.dims), a, b))


# ============================================================================================= structure


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_concat_stack_split_merge(data):
    """``sa.concat``/``sa.stack`` of operands with their dims in other orders and other layouts (dims matched by
    name: the result takes the first operand's order), ``split_dim``/``merge_dims`` round trips, on split dims."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of())
    x, a = data.draw(named(mesh, sizes, min_dims=1))
    along = x.dims[data.draw(st.integers(0, x.ndim - 1))]
    kind = data.draw(st.sampled_from(["concat", "stack", "split_merge"]))
    if kind == "split_merge":
        n = x.sizes[along]
        parts = {"h1": 2, "h2": n // 2} if n % 2 == 0 else {"h1": 1, "h2": n}
        s = x.split_dim(along, parts)
        k = x.dims.index(along)
        check(s, a.reshape(a.shape[:k] + tuple(parts.values()) + a.shape[k + 1 :]))
        check(s.merge_dims(("h1", "h2"), along), a)
        return
    other = dict(sizes)
    if kind == "concat":
        other[along] = data.draw(st.sampled_from(SIDES))
    y, b = data.draw(named(mesh, other, dims=tuple(data.draw(st.permutations(x.dims))), dtypes=("float64", "int32")))
    b = aligned(b, y.dims, x.dims)
    if kind == "concat":
        check(sa.concat([x, y], along), np.concatenate([a, b], x.dims.index(along)))
    else:
        r = sa.stack([x, y], "new")
        check(r, np.stack([a, b]), dims=("new", *x.dims))


# ============================================================================================= sorting


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, -2.0, 1.0, 3.0])


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_named_sorting(data):
    """``sa.sort``/``argsort`` (stable), ``top_k`` (largest first, ties by index, NaN last) and ``unique_*``
    (NaNs distinct, as ``np.unique_values``) along split dims, with NaN and infinities: NumPy's values."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of(sides=(0, 1, 2, 3, 5, 8)))
    dims = tuple(data.draw(st.permutations(POOL)))[: data.draw(st.integers(1, 2))]
    dtype = data.draw(st.sampled_from(["float64", "float32", "int32", "int64"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = tuple(sizes[d] for d in dims)
    a = (rng.choice(SPECIAL, shape) if dtype[0] == "f" else rng.integers(-3, 3, shape)).astype(dtype)
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims)))
    along = dims[data.draw(st.integers(0, len(dims) - 1))]
    axis = dims.index(along)
    kind = data.draw(st.sampled_from(["sort", "argsort", "top_k", "unique_values", "unique_inverse"]))
    if kind == "sort":
        check(sa.sort(x, along), np.sort(a, axis))
    elif kind == "argsort":
        check(sa.argsort(x, along), np.argsort(a, axis, kind="stable"))
    elif kind == "top_k":
        k = data.draw(st.integers(0, sizes[along]))
        v, i = sa.top_k(x, k, along)
        assert v.dims == i.dims == tuple("k" if d == along else d for d in dims)
        order = np.take(np.argsort(-a, axis, kind="stable"), np.arange(k), axis)
        check(i, order.astype(np.int64))
        check(v, np.take_along_axis(a, order, axis))
    elif kind == "unique_values":
        check(sa.unique_values(x), np.unique(a, equal_nan=False))
    else:
        u = sa.unique_inverse(x)
        values, inverse = u.values.numpy(), u.inverse_indices.numpy()
        np.testing.assert_array_equal(values, np.unique(a, equal_nan=False))
        assert inverse.shape == a.shape
        np.testing.assert_array_equal(values[inverse], a)  # (NaNs compare equal here; each NaN its own index:)
        nan_at = inverse[np.isnan(a)] if dtype[0] == "f" else np.array([])
        assert len(set(nan_at.tolist())) == nan_at.size


# ============================================================================================= bad input


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_bad_input_typed(data):
    """A missing dim, a size mismatch between operands, a mesh axis that two dims use, an unknown mesh axis and a
    repeated dim raise a typed ``sa`` error (a ValueError) whose message names the dims, the sizes and the axes."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of(sides=(1, 2, 3, 5)))
    x, _ = data.draw(named(mesh, sizes, min_dims=2, dtypes=("float64",)))
    d = x.dims[data.draw(st.integers(0, x.ndim - 1))]
    e = next(f for f in x.dims if f != d)
    axis = mesh.axis_names[data.draw(st.integers(0, len(mesh.axis_names) - 1))]
    case = data.draw(
        st.sampled_from(
            ["missing", "size", "size_einsum", "axis_twice", "axis_twice_asarray", "unknown_axis", "repeat", "concat"]
        )
    )
    names: tuple = ()
    if case == "missing":
        fn = data.draw(
            st.sampled_from(
                [
                    lambda: x.sum("zz"),
                    lambda: x.mean((d, "zz")),
                    lambda: x.max("zz"),
                    lambda: sa.logsumexp(x, "zz"),
                    lambda: sa.softmax(x, "zz"),
                    lambda: sa.sort(x, "zz"),
                    lambda: sa.argsort(x, "zz"),
                    lambda: sa.top_k(x, 1, "zz"),
                    lambda: x.rename({"zz": "q"}),
                    lambda: sa.cumsum(x, "zz"),
                    lambda: sa.einsum(x, out=("zz",)),
                    lambda: x.transpose("zz", *x.dims[1:]),
                    lambda: x.relayout({"zz": axis}),
                ]
            )
        )
        error, names = (sa.DimensionError, sa.LayoutError), ("zz",)  # (a layout naming no dim: a LayoutError)
    elif case in ("size", "size_einsum"):
        bad = dict(sizes)
        bad[d] = sizes[d] + 1
        y, _ = data.draw(named(mesh, bad, dims=(d,), dtypes=("float64",)))
        if case == "size":
            op = data.draw(
                st.sampled_from(
                    [
                        lambda: x + y,
                        lambda: y * x,
                        lambda: sa.maximum(x, y),
                        lambda: sa.where(x > 0, x, y),
                        lambda: sa.where(y > 0, x, 0.0),
                    ]
                )
            )
        else:
            op = data.draw(st.sampled_from([lambda: sa.einsum(x, y), lambda: x @ y]))
        fn, error, names = op, sa.DimensionError, (repr(d), str(sizes[d]), str(sizes[d] + 1))
    elif case in ("axis_twice", "axis_twice_asarray"):
        layout = {d: axis, e: axis}
        if case == "axis_twice":
            fn = data.draw(st.sampled_from([lambda: x.relayout(layout), lambda: sa.reshard(x, mesh, layout)]))
        else:
            fn = lambda: sa.asarray(x.numpy(), dims=x.dims, mesh=mesh, layout=layout)  # noqa: E731
        error, names = sa.LayoutError, (repr(d), repr(e), repr(axis))
    elif case == "unknown_axis":
        fn, error, names = (lambda: x.relayout({d: "nope"})), sa.LayoutError, (repr(d), "'nope'", repr(axis))
    elif case == "repeat":
        fn = data.draw(
            st.sampled_from(
                [
                    lambda: x.rename({e: d}),
                    lambda: sa.einsum(x, out=(d, d)),
                    lambda: x.transpose(d, d),
                    lambda: x.sum((d, d)),
                    lambda: sa.stack([x, x], d),
                ]
            )
        )
        error, names = sa.DimensionError, (repr(d),)
    else:
        bad = dict(sizes)
        bad[e] = sizes[e] + 1
        y, _ = data.draw(named(mesh, bad, dims=x.dims, dtypes=("float64",)))
        fn, error, names = (lambda: sa.concat([x, y], d)), sa.DimensionError, (repr(e), str(sizes[e] + 1))
    with pytest.raises(error) as info:
        fn()
    assert isinstance(info.value, (ValueError, TypeError))
    message = str(info.value)
    for name in names:
        assert name in message, (case, name, message)


# ============================================================================================= found in arithmetic.py


def test_where_size_mismatch_numbers_the_operands():
    """``where``'s message on a size mismatch numbers the operands as the call does: the condition is operand 0."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.ones((4, 3)), dims=("a", "b"), mesh=mesh)
    cond = sa.asarray(np.ones(5, bool), dims=("a",), mesh=mesh)
    with pytest.raises(sa.DimensionError) as info:
        sa.where(cond, x, 0.0)
    assert "operand 0 {'a': 5}" in str(info.value), str(info.value)


def _pending_row():
    """``(p, value)``: ``[1, 0]`` pending over a 2-device axis, whose partial sums are ``[1, 0]`` and ``[0, 0]``."""
    mesh = sa.Mesh({"d": 2})
    a = np.array([[1.0, 0.0], [0.0, 0.0]])
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "d"})
    return x.sum("i"), a.sum(0), mesh


@pytest.mark.parametrize("op", ["multiply", "divide"])
def test_pending_times_nonfinite_array(op):
    """``p * y`` with an infinite entry in ``y`` (``p / y`` with a zero) is NumPy's ``inf``, not NaN."""
    p, value, mesh = _pending_row()
    assert p.pending == ("d",)
    if op == "multiply":
        y = np.array([np.inf, 1.0])
        r = p * sa.asarray(y, dims=("j",), mesh=mesh)
        expected = value * y
    else:
        y = np.array([0.0, 1.0])
        with np.errstate(all="ignore"):
            r = p / sa.asarray(y, dims=("j",), mesh=mesh)
            expected = value / y
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(r.numpy(), expected)


def test_einsum_of_pending_with_inf():
    """``sa.einsum(p, y)`` with ``p`` pending and an infinite entry in ``y`` is ``np.einsum``'s ``inf`` (it was NaN:
    the contraction carried the pending sum, and a device's zero partial sum met the infinity); without an infinity
    the sum is still carried on."""
    p, value, mesh = _pending_row()
    y = np.array([np.inf, 1.0])
    with np.errstate(all="ignore"):
        r = sa.einsum(p, sa.asarray(y, dims=("j",), mesh=mesh))
        assert float(r.numpy()) == np.einsum("j,j", value, y)
    finite = sa.einsum(p, sa.asarray(np.array([2.0, 1.0]), dims=("j",), mesh=mesh))
    assert finite.pending == ("d",) and float(finite.numpy()) == 2.0


SPECIAL_FACTORS = np.array([np.inf, -np.inf, np.nan, 0.0, 1.0, -2.0])


@fuzz(30, ENV)
@given(st.data())
def test_fuzz_einsum_pending_with_specials(data):
    """An einsum of a pending sum (over dims split over one or two axes) with operands holding infinities, NaN and
    zeros is ``np.einsum``'s value: a pending operand is carried through only where no infinity can meet a zero
    partial sum."""
    mesh = data.draw(meshes())
    sizes = data.draw(sizes_of(sides=(1, 2, 3, 5)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    xdims = tuple(data.draw(st.permutations(POOL)))[: data.draw(st.integers(2, 3))]
    a = rng.choice([0.0, 0.0, 1.0, -1.0], tuple(sizes[d] for d in xdims))  # (zero partial sums: often)
    x = sa.asarray(a, dims=xdims, mesh=mesh, layout=data.draw(layouts(mesh, xdims)))
    p, pa = x.sum(xdims[0]), a.sum(0)
    dims = tuple(data.draw(st.permutations(POOL)))[: data.draw(st.integers(1, 3))]
    b = rng.choice(SPECIAL_FACTORS, tuple(sizes[d] for d in dims))
    y = sa.asarray(b, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims)))
    ops = [(p, pa), (y, b)] if data.draw(st.booleans()) else [(y, b), (p, pa)]
    with np.errstate(all="ignore"):
        r = sa.einsum(*[o[0] for o in ops])
        expected = np.einsum(spec(*[o[0].dims for o in ops], out=r.dims), *[o[1] for o in ops])
    np.testing.assert_array_equal(r.numpy(), expected)
