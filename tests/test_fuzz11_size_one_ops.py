"""Ops on split size-1 dims move no gathered data: reductions, integer indexing, scans, arg-searches, ``merge_dims``
(and its gradient, ``split_dim`` into a first size-1 dim) and ``tile``.

A size-1 dim split over k devices holds its entry on the devices of its first block; the others hold empty blocks.
An int index on it, and every reduction over split dims that all have size 1, is ``sa.squeeze`` (one alltoall onto
the remaining dim with the largest block; a 0-d result: one broadcast) after the local reduction over the other
(unsplit) reduced dims; ``softmax`` over it and a scan or arg-search along it are local (no collective at all);
``merge_dims`` drops it by the same alltoall. Before, they allreduced or allgathered: on 2x2x2 for a (2, 1, 8)
float64 array with the size-1 dim over all three axes, ``max`` moved 224 wire bytes, ``cumsum`` and ``merge_dims``
896, ``argmax`` 1792, ``isel`` broadcast 128 and left 8 copies; now 112 (the alltoall) or nothing.

Each fuzz case checks the value and dtype against NumPy, the layout (``sa.squeeze``'s rule), the collectives in the
comm log and a spy on the communicator (no allgather; no device holds more than the result's largest block after
a collective), named and positional, on meshes 1, 2x2, 4, 2x2x2, 3x2 with uneven and empty blocks; the gradients
against their known values. ``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.layout import block_bounds

ENV = "FUZZ11_EXAMPLES"
DIMS = ("i", "j", "k")
SIDES = (0, 1, 2, 3, 5, 8)
MOVES = {"alltoall", "broadcast"}


def _largest(y) -> int:
    return max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(y.mesh, y.spec)), default=0)


def _blocks_ok(y) -> None:
    for d, bounds in enumerate(block_bounds(y.mesh, y.spec)):
        assert tuple(y.shards[d].shape) == tuple(hi - lo for lo, hi in bounds), (d, y.shards[d].shape, bounds)


@contextlib.contextmanager
def received(mesh):
    """Per collective call over more than one device: ``(op, the largest block a device holds after it)``."""
    comm = mesh.comm
    got: list[tuple[str, int]] = []

    def spy(name):
        inner = getattr(comm, name)

        def run(shards, axes, *args, **kwargs):
            out = inner(shards, axes, *args, **kwargs)
            if mesh.axes_size(axes) > 1:
                got.append((name, max((int(b.size) for b in out if b is not None), default=0)))
            return out

        return run

    names = ("alltoall", "alltoallv", "alltoallv_boxes", "allgather", "allreduce", "broadcast", "reduce_scatter")
    for name in names:
        setattr(comm, name, spy(name))
    try:
        yield got
    finally:
        for name in names:
            delattr(comm, name)


def _squeezed_layout(mesh, sizes, lay, which):
    """``sa.squeeze``'s rule: the freed axes (of size > 1) appended to the remaining dim with the largest block."""
    freed = tuple(a for d in sizes if d in which for a in lay.get(d, ()) if mesh.axis_size(a) > 1)
    out = {d: tuple(a) for d, a in lay.items() if d not in which}
    rest = [d for d in sizes if d not in which]
    if freed and rest:
        host = max(rest, key=lambda d: (-(-sizes[d] // mesh.axes_size(lay.get(d, ()))), -rest.index(d)))
        out[host] = out.get(host, ()) + freed
    return out


@st.composite
def cases(draw, dtypes=("float64",), ndim=(1, 3)):
    """``(x, a, one, lay)``: an array whose dim ``one`` has size 1 and is split over one or more mesh axes (all of
    them on a one-axis mesh), its NumPy value (NaN and inf among float values), the dim, the layout."""
    mesh = draw(meshes())
    dims = DIMS[: draw(st.integers(*ndim))]
    sizes = {d: draw(st.sampled_from(SIDES)) for d in dims}
    one = draw(st.sampled_from(dims))
    sizes[one] = 1
    take = draw(st.permutations(mesh.axis_names))[: draw(st.integers(1, len(mesh.axis_names)))]
    lay = {d: tuple(a for a in ax if a not in take) for d, ax in draw(layouts(mesh, dims)).items() if d != one}
    lay[one] = tuple(take)
    lay = {d: ax for d, ax in lay.items() if ax}
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = tuple(sizes[d] for d in dims)
    if dtype == "bool":
        a = rng.random(shape) < 0.5
    elif dtype.startswith("float"):
        a = rng.normal(size=shape).astype(dtype)
        if draw(st.booleans()):
            a[rng.random(shape) < 0.2] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    else:
        a = rng.integers(-100, 100, shape).astype(dtype)
    return sa.asarray(a, dims=dims, mesh=mesh, layout=lay), a, one, lay


def _unsplit(x, d) -> bool:
    return all(x.mesh.axis_size(a) == 1 for a in x.spec.of(d))


def _reduced(x, one, data) -> tuple[str, ...]:
    """The dims to reduce: ``one`` and maybe unsplit others (reduced locally first), in ``x``'s order."""
    extra = [d for d in x.dims if d != one and _unsplit(x, d)]
    more = data.draw(st.lists(st.sampled_from(extra), unique=True)) if extra else []
    return tuple(d for d in x.dims if d == one or d in more)


def _traffic_ok(x, y, log, got, allowed=MOVES, most=1) -> None:
    ops = [r.op for r in log.records if x.mesh.axes_size(r.axes) > 1]
    assert len(ops) <= most and set(ops) <= allowed, ops
    assert all(op in allowed and size <= max(_largest(y), 1) for op, size in got), (got, _largest(y))


REDUCTIONS = {
    "sum": (sa.sum, np.sum),
    "prod": (sa.prod, np.prod),
    "mean": (sa.mean, np.mean),
    "max": (sa.max, np.max),
    "min": (sa.min, np.min),
    "all": (sa.all, np.all),
    "any": (sa.any, np.any),
    "var": (sa.var, np.var),
    "std": (lambda x, d: sa.std(x, d, correction=1), lambda a, axis: np.std(a, axis=axis, ddof=1)),
    "nansum": (sa.nansum, np.nansum),
    "nanmean": (sa.nanmean, np.nanmean),
    "nanmax": (sa.nanmax, np.nanmax),
    "nanmin": (sa.nanmin, np.nanmin),
    "nanvar": (sa.nanvar, np.nanvar),
    "nanprod": (sa.nanprod, np.nanprod),
}
FLOAT_ONLY = {"var", "std", "nanvar"}


@fuzz(60, ENV)
@given(cases(dtypes=("float64", "float32", "int8", "bool")), st.sampled_from(sorted(REDUCTIONS)), st.data())
def test_fuzz_reductions_over_split_size_one_dims_are_a_squeeze(case, name, data):
    x, a, one, lay = case
    if name in FLOAT_ONLY and a.dtype.kind != "f":
        a = a.astype(np.float64)
        x = sa.asarray(a, dims=x.dims, mesh=x.mesh, layout=lay)
    which = _reduced(x, one, data)
    empty = any(x.sizes[d] == 0 for d in which)
    if name in ("max", "min", "nanmax", "nanmin") and (empty or a.dtype == bool):
        return  # (NumPy raises on an empty max; a bool max is refused by sa.max as by the standard)
    axes = tuple(x.dims.index(d) for d in which)
    ours, ref = REDUCTIONS[name]
    how = data.draw(st.sampled_from(("named", "xp")))
    with received(x.mesh) as got, sa.comm_log() as log, np.errstate(all="ignore"):
        if how == "named":
            y = ours(x, which)
        else:
            y = ours(xp.asarray(x), axes)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (NumPy warns on all-NaN slices)
        want = np.asarray(ref(a, axis=axes))
    if name in ("sum", "prod", "nansum", "nanprod") and a.dtype.kind in "biu":
        assert y.dtype == want.dtype, (y.dtype, want.dtype)  # int64 for bool and int8, as NumPy
    got_value = np.asarray(y.numpy())
    np.testing.assert_allclose(got_value.astype(np.float64), want.astype(np.float64), rtol=1e-6, equal_nan=True)
    if how == "xp":
        assert isinstance(y, xp.Array)
    assert y.layout == _squeezed_layout(x.mesh, x.sizes, lay, which)
    _blocks_ok(y)
    _traffic_ok(x, y, log, got)


@fuzz(40, ENV)
@given(cases(dtypes=("float64", "float32")), st.sampled_from(("logsumexp", "softmax")), st.data())
def test_fuzz_logsumexp_and_softmax_over_split_size_one_dims(case, name, data):
    x, a, one, lay = case
    which = _reduced(x, one, data)
    axes = tuple(x.dims.index(d) for d in which)
    with received(x.mesh) as got, sa.comm_log() as log, np.errstate(all="ignore"):
        y = sa.logsumexp(x, which) if name == "logsumexp" else sa.softmax(x, which)
    with np.errstate(all="ignore"):
        m = np.max(a, axis=axes, keepdims=True, initial=-np.inf)
        # logsumexp shifts by a finite maximum (scipy.special.logsumexp), softmax by the maximum unless it is -inf
        m = np.where(np.isfinite(m), m, 0) if name == "logsumexp" else np.where(m == -np.inf, 0, m)
        e = np.exp(a - m)
        s = np.sum(e, axis=axes, keepdims=True)
        want = np.squeeze(np.log(s) + m, axes) if name == "logsumexp" else e / s
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6, equal_nan=True)
    if name == "softmax":
        assert y.layout == lay and log.records == [] and got == []  # local: no collective at all
    else:
        assert y.layout == _squeezed_layout(x.mesh, x.sizes, lay, which)
        _traffic_ok(x, y, log, got)
    _blocks_ok(y)


@fuzz(40, ENV)
@given(cases(dtypes=("float64", "int8", "bool", "float32")), st.sampled_from(("named", "xp", "np")))
def test_fuzz_scans_and_arg_searches_along_a_size_one_dim_are_local(case, how):
    x, a, one, lay = case
    k = x.dims.index(one)
    with received(x.mesh) as got, sa.comm_log() as log:
        if how == "named":
            c, p = sa.cumsum(x, one), (sa.cumprod(x, one) if a.dtype != bool else None)
            i, j = sa.argmax(x, one), sa.argmin(x, one)
        elif how == "xp":
            X = xp.asarray(x)
            c, p = xp.cumulative_sum(X, axis=k), (xp.cumulative_prod(X, axis=k) if a.dtype != bool else None)
            i, j = xp.argmax(X, axis=k), xp.argmin(X, axis=k)
        else:
            X = xp.asarray(x)
            c, p = np.cumsum(X, axis=k), (np.cumprod(X, axis=k) if a.dtype != bool else None)
            i, j = np.argmax(X, axis=k), np.argmin(X, axis=k)
    assert log.records == [] and got == []  # no collective at all
    want = np.cumsum(a, axis=k)
    assert c.dtype == want.dtype  # (int64 for int8 and bool, as NumPy)
    np.testing.assert_array_equal(np.asarray(c.numpy()), want)
    assert c.layout == lay
    _blocks_ok(c)
    if p is not None:
        np.testing.assert_array_equal(np.asarray(p.numpy()), np.cumprod(a, axis=k))
    np.testing.assert_array_equal(np.asarray(i.numpy()), np.argmax(a, axis=k))  # zeros, NaN or not
    np.testing.assert_array_equal(np.asarray(j.numpy()), np.argmin(a, axis=k))
    assert i.dtype == np.int64 and i.layout == {d: ax for d, ax in lay.items() if d != one}
    _blocks_ok(i)
    if how != "named":
        assert isinstance(c, xp.Array) and isinstance(i, xp.Array)


@fuzz(40, ENV)
@given(cases(dtypes=("float64", "int32")), st.sampled_from(("isel", "isel-1", "getitem", "xp")), st.data())
def test_fuzz_an_int_index_on_a_split_size_one_dim_is_a_squeeze(case, how, data):
    x, a, one, lay = case
    k = x.dims.index(one)
    others = {d: slice(None) for d in x.dims if d != one}
    if others and data.draw(st.booleans()):  # with a slice of another dim too
        d = data.draw(st.sampled_from(sorted(others)))
        others[d] = slice(data.draw(st.integers(0, 2)), None)
    key = tuple(0 if d == one else others[d] for d in x.dims)
    with received(x.mesh) as got, sa.comm_log() as log:
        if how == "isel":
            y = x.isel({one: 0, **others})
        elif how == "isel-1":
            y = x.isel({one: -1, **others})
        elif how == "getitem":
            y = x[key]
        else:
            y = xp.asarray(x)[key]
    want = a[key]
    np.testing.assert_array_equal(np.asarray(y.numpy()), want)
    _blocks_ok(y)
    assert not any(op in ("allgather", "allreduce") for op, _ in got), got
    if all(v == slice(None) for v in others.values()):  # only the int: exactly sa.squeeze
        assert y.layout == _squeezed_layout(x.mesh, x.sizes, lay, (one,))
        _traffic_ok(x, y, log, got)
    del k


@fuzz(40, ENV)
@given(cases(dtypes=("float64",), ndim=(2, 3)), st.data())
def test_fuzz_merge_dims_with_a_split_size_one_dim_gathers_nothing(case, data):
    x, a, one, lay = case
    a = np.nan_to_num(a, nan=0.5, posinf=2.0, neginf=-2.0)
    x = sa.asarray(a, dims=x.dims, mesh=x.mesh, layout=lay)
    group = data.draw(st.permutations(x.dims))[: data.draw(st.integers(2, x.ndim))]
    if one not in group:
        group = (one, *group[1:])
    group = tuple(group)
    with received(x.mesh) as got:
        y = x.merge_dims(group, "m")
    i = min(x.dims.index(d) for d in group)
    rest = [d for d in x.dims if d not in group]
    order = tuple(rest[:i]) + group + tuple(rest[i:])
    t = np.transpose(a, [x.dims.index(d) for d in order])
    want = t.reshape(t.shape[:i] + (math.prod(t.shape[i : i + len(group)]),) + t.shape[i + len(group) :])
    np.testing.assert_array_equal(y.numpy(), want)
    _blocks_ok(y)
    # merged with one other dim: an alltoall or nothing (with two others, merging those may still park or gather,
    # as it does without the size-1 dim when the major one's blocks are uneven)
    pair = len(group) == 2
    assert not pair or not any(op in ("allgather", "allreduce") for op, _ in got), got
    # the merged dim has the merged dims' axes, major first, unless a minor split dim parks them elsewhere
    merged = tuple(ax for d in group for ax in lay.get(d, ()))
    if x.mesh.axes_size(lay[one]) > 1 and all(not lay.get(d) for d in group if d != one):
        assert y.layout.get("m", ()) == merged
    # the gradient: the cotangent split back (split_dim into a first size-1 dim: an alltoall, no allgather)
    w = np.random.default_rng(1).normal(size=want.shape)

    def loss(x):
        z = x.merge_dims(group, "m")
        return (z * sa.asarray(w, dims=z.dims, mesh=z.mesh, layout=z.layout)).sum()

    with received(x.mesh) as got:
        g = sa.grad(loss)(x)
    back = w.reshape(t.shape).transpose(np.argsort([x.dims.index(d) for d in order]))
    np.testing.assert_allclose(g.numpy(), back)
    assert g.layout == x.layout
    assert not pair or not any(op == "allgather" for op, _ in got), got


GRAD_OPS = {
    "sum": lambda x, d: sa.sum(x, d),
    "mean": lambda x, d: sa.mean(x, d),
    "max": lambda x, d: sa.max(x, d),
    "min": lambda x, d: sa.min(x, d),
    "prod": lambda x, d: sa.prod(x, d),
    "logsumexp": lambda x, d: sa.logsumexp(x, d),
    "nanmean": lambda x, d: sa.nanmean(x, d),
    "isel": lambda x, d: x.isel({d: 0}),
    "cumsum": lambda x, d: sa.squeeze(sa.cumsum(x, d), d),
    "softmax": lambda x, d: sa.squeeze(sa.softmax(x, d) * x, d),
    "tile": lambda x, d: sa.squeeze(sa.tile(x, {d: 1}), d),
}


@fuzz(40, ENV)
@given(cases(dtypes=("float64",)), st.sampled_from(sorted(GRAD_OPS)))
def test_fuzz_gradients_over_split_size_one_dims(case, name):
    """Over a size-1 dim alone each op is the identity on values (softmax: 1, times x), so its gradient is the
    weight put back in the size-1 dim's place; var and std of one element: 0 (``test_var_std_gradients``)."""
    x, a, one, _ = case
    a = np.nan_to_num(a, nan=0.5, posinf=2.0, neginf=-2.0)
    x = sa.asarray(a, dims=x.dims, mesh=x.mesh, layout=x.layout)
    k = x.dims.index(one)
    w = np.random.default_rng(2).normal(size=np.squeeze(a, k).shape)

    def loss(x):
        y = GRAD_OPS[name](x, one)
        return (y * sa.asarray(w, dims=y.dims, mesh=y.mesh, layout=y.layout)).sum()

    g = sa.grad(loss)(x)
    np.testing.assert_allclose(g.numpy(), np.expand_dims(w, k), rtol=1e-12, atol=1e-12)
    assert g.layout == x.layout
    _blocks_ok(g)


def test_var_std_gradients_against_finite_differences():
    mesh = _mesh({"a": 2, "b": 2, "c": 2})
    a = np.random.default_rng(0).normal(size=(2, 1, 3))
    w = np.array([0.5, -1.5])

    def f(v, op):
        t = v.var(axis=(1, 2)) if op == "var" else v.std(axis=(1, 2), ddof=1)
        return float((t * w).sum())

    for op in ("var", "std"):

        def loss(x, op=op):
            y = sa.var(x, ("one", "q")) if op == "var" else sa.std(x, ("one", "q"), correction=1)
            return (y * sa.asarray(w, dims=("p",), mesh=mesh)).sum()

        x = sa.asarray(a, dims=("p", "one", "q"), mesh=mesh, layout={"one": ("a", "b", "c")})
        g = sa.grad(loss)(x).numpy()
        fd = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi, lo = a.copy(), a.copy()
            hi[idx] += 1e-6
            lo[idx] -= 1e-6
            fd[idx] = (f(hi, op) - f(lo, op)) / 2e-6
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_the_2x2x2_numbers():
    """(2, 1, 8) float64 split 8 ways over its size-1 dim: one alltoall of the holder's 16 entries (112 wire bytes)
    or nothing, where the ops allreduced (224), allgathered (896, argmax 1792) or broadcast and left 8 copies."""
    mesh = _mesh({"a": 2, "b": 2, "c": 2})
    a = np.arange(16.0).reshape(2, 1, 8)
    x = sa.asarray(a, dims=("p", "one", "q"), mesh=mesh, layout={"one": ("a", "b", "c")})
    alltoall = [("alltoall", ("a", "b", "c"), 16, 112)]
    runs = {
        "isel": (lambda: x.isel(one=0), a[:, 0], alltoall),
        "getitem": (lambda: xp.asarray(x)[:, 0], a[:, 0], alltoall),
        "max": (lambda: x.max("one"), a[:, 0], alltoall),
        "sum": (lambda: x.sum("one").resolve(), a[:, 0], alltoall),
        "var": (lambda: sa.var(x, "one"), np.zeros((2, 8)), alltoall),
        "lse": (lambda: sa.logsumexp(x, "one"), a[:, 0], alltoall),
        "softmax": (lambda: sa.softmax(x, "one"), np.ones((2, 1, 8)), []),
        "cumsum": (lambda: sa.cumsum(x, "one"), a, []),
        "argmax": (lambda: sa.argmax(x, "one"), np.zeros((2, 8), np.int64), []),
        "merge": (lambda: x.merge_dims(("one", "q"), "m"), a.reshape(2, 8), alltoall),
        "tile": (lambda: sa.tile(x, {"one": 3}), np.tile(a, (1, 3, 1)), alltoall),
    }
    for name, (fn, want, records) in runs.items():
        with sa.comm_log() as log:
            y = fn()
        assert [(r.op, r.axes, r.elements, r.wire_bytes) for r in log.records] == records, name
        np.testing.assert_array_equal(np.asarray(y.numpy()), want)
    assert x.merge_dims(("one", "q"), "m").layout == {"m": ("a", "b", "c")}
    assert x.isel(one=0).layout == x.max("one").layout == {"q": ("a", "b", "c")}
    assert sa.tile(x, {"one": 3}).layout == {"q": ("a", "b", "c")}


def test_pending_sums_in_and_out():
    """A pending sum stays pending through a sum, a mean, an int index and a cumsum over a split size-1 dim, and an
    argmax along it resolves nothing; the values are NumPy's."""
    mesh = _mesh({"row": 2, "col": 2})
    u, v = np.arange(8.0).reshape(1, 2, 4) - 3, np.arange(4.0).reshape(4, 1) + 1
    x = sa.asarray(u, dims=("one", "b", "k"), mesh=mesh, layout={"one": "row", "k": "col"})
    w = sa.asarray(v, dims=("k", "o"), mesh=mesh, layout={"k": "col"})
    h = sa.einsum(x, w)
    want = np.einsum("abk,ko->abo", u, v)
    assert h.pending == ("col",)
    for y, ref in [
        (h.sum("one"), want.sum(0)),
        (h.mean("one"), want.mean(0)),
        (h.isel(one=0), want[0]),
        (sa.cumsum(h, "one"), want),
    ]:
        assert y.pending == ("col",)
        np.testing.assert_allclose(y.numpy(), ref)
    with sa.comm_log() as log:
        i = sa.argmax(h, "one")
    assert log.records == [] and i.pending == ()
    np.testing.assert_array_equal(i.numpy(), np.zeros((2, 1), np.int64))
    np.testing.assert_allclose(h.max("one").numpy(), want.max(0))  # (max resolves first, as before)


def test_meta_backend():
    """The planner's meta meshes run every rewritten path: sizes and layouts as on a real mesh."""
    mesh = sa.Mesh({"a": 2, "b": 2, "c": 2}, backend="meta")
    x = sa.zeros(mesh, {"p": 2, "one": 1, "q": 8}, layout={"one": ("a", "b", "c")})
    split = {"q": ("a", "b", "c")}
    for y, sizes, lay in [
        (x.sum("one"), {"p": 2, "q": 8}, split),
        (x.max("one"), {"p": 2, "q": 8}, split),
        (sa.var(x, "one"), {"p": 2, "q": 8}, split),
        (sa.prod(x, ("p", "one")), {"q": 8}, split),
        (sa.all(x, "one"), {"p": 2, "q": 8}, split),
        (sa.logsumexp(x, "one"), {"p": 2, "q": 8}, split),
        (sa.softmax(x, "one"), x.sizes, x.layout),
        (sa.cumsum(x, "one"), x.sizes, x.layout),
        (sa.argmax(x, "one"), {"p": 2, "q": 8}, {}),
        (x.isel(one=0), {"p": 2, "q": 8}, split),
        (x.merge_dims(("one", "q"), "m"), {"p": 2, "m": 8}, {"m": ("a", "b", "c")}),
        (sa.tile(x, {"one": 2}), {"p": 2, "one": 2, "q": 8}, split),
        (x.sum(), {}, {}),
    ]:
        assert y.sizes == sizes and y.layout == lay
        _blocks_ok(y)
