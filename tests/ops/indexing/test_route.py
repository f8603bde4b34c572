"""Routed take, searchsorted and integer-array writes against NumPy; their alltoall traffic; GatherWarning."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES, meshes
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.ops.indexing import route
from shardarray.ops.indexing import take as take_module
from shardarray.ops.sorting import searchsorted as ss


@pytest.fixture(autouse=True, scope="module")
def _route_small_ids():
    """These tests use small id arrays: route them as big ones are (take.ROUTE_MIN_IDS to 0)."""
    saved = take_module.ROUTE_MIN_IDS
    take_module.ROUTE_MIN_IDS = 0
    yield
    take_module.ROUTE_MIN_IDS = saved

SETTINGS = settings(max_examples=25, deadline=None)


@given(meshes(), st.data())
@SETTINGS
def test_take_with_split_ids_matches_numpy_and_routes(mesh, data):
    n = data.draw(st.integers(1, 13))
    m = data.draw(st.integers(0, 30))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    a = rng.standard_normal((n, 3))
    ids = rng.integers(0, n, m)
    ax = mesh.axis_names[:1]
    X = sa.asarray(a, dims=("v", "d"), mesh=mesh, layout={"v": ax})
    ids_ = sa.asarray(ids, dims=("t",), mesh=mesh, layout={"t": ax})
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        with sa.comm_log() as log:
            r = sa.take(X, ids_, "v")
    np.testing.assert_array_equal(r.numpy(), a[ids])
    assert not [q for q in log.records if q.op == "allgather" and q.elements >= q.group_size]
    p = mesh.axes_size(ax)
    block = -(-m // p)
    if block >= p > 1 and m:
        assert r.layout == {"t": ax} and not r.pending
        ops = [q.op for q in log.records]
        assert ops == ["alltoall"] * 3, log.records
        counts, asks, answers = log.records
        assert counts.elements <= p - 1 and asks.elements <= block and answers.elements <= 3 * m


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
def test_routed_take_gradient_is_np_add_at(shape):
    mesh = sa.Mesh(shape)
    ax = tuple(shape)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((11, 2))
    ids = rng.integers(0, 11, 40)
    X = sa.asarray(a, dims=("v", "d"), mesh=mesh, layout={"v": ax[:1]})
    ids_ = sa.asarray(ids, dims=("t",), mesh=mesh, layout={"t": ax})
    w = rng.standard_normal((40, 2))
    W = sa.asarray(w, dims=("t", "d"), mesh=mesh)
    _, g = sa.value_and_grad(lambda x: (sa.take(x, ids_, "v") * W).sum())(X)
    ref = np.zeros_like(a)
    np.add.at(ref, ids, w)
    np.testing.assert_allclose(g.numpy(), ref, atol=1e-12)


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_routes_split_values(shape, side, monkeypatch):
    monkeypatch.setattr(ss, "SMALL", 0)
    mesh = sa.Mesh(shape)
    ax = tuple(shape)[:1]
    rng = np.random.default_rng(2)
    s = np.sort(rng.integers(-9, 9, 200).astype(float))
    s[-3:] = np.nan
    v = rng.integers(-10, 10, 300).astype(float)
    v[:4] = np.nan
    S = sa.asarray(s, dims=("i",), mesh=mesh, layout={"i": ax})
    V = sa.asarray(v, dims=("q",), mesh=mesh, layout={"q": ax})
    with sa.comm_log() as log:
        r = sa.searchsorted(S, V, side=side)
    np.testing.assert_array_equal(r.numpy(), np.searchsorted(s, v, side=side))
    assert r.layout == V.layout
    p = mesh.axes_size(ax)
    if p > 1:
        block = -(-300 // p)
        assert [q.op for q in log.records] == ["allgather", "alltoall", "alltoall", "alltoall"]
        assert log.records[0].elements == 1  # one splitter per device
        # never the whole values array: each device sends at most its block (answers: what its members asked)
        assert all(q.elements <= (p - 1) * block for q in log.records[1:])


def test_searchsorted_small_sorted_array_is_gathered_not_values():
    mesh = sa.Mesh({"row": 2, "col": 2})
    edges = np.linspace(0, 1, 11)
    vals = np.random.default_rng(3).random(1000)
    with sa.default_mesh(mesh):
        with sa.comm_log() as log:
            r = xp.searchsorted(xp.asarray(edges), xp.asarray(vals))
    np.testing.assert_array_equal(r.numpy(), np.searchsorted(edges, vals))
    assert [(q.op, q.elements) for q in log.records] == [("allgather", 6)]  # the edges' block only


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
def test_integer_array_writes_match_numpy(shape):
    xpx = pytest.importorskip("array_api_extra")

    rng = np.random.default_rng(4)
    a = rng.standard_normal((9, 4))
    idx = rng.integers(-9, 9, 25)
    v = rng.standard_normal((25, 4))
    with sa.default_mesh(sa.Mesh(shape)):
        X = xp.asarray(a)
        X[xp.asarray(idx)] = xp.asarray(v)
        b = a.copy()
        b[idx] = v
        np.testing.assert_array_equal(X.numpy(), b)
        X = xp.asarray(a)
        X[xp.asarray([1, 2, 1]), xp.asarray([3, 0, 3])] = 7.0
        b = a.copy()
        b[[1, 2, 1], [3, 0, 3]] = 7.0
        np.testing.assert_array_equal(X.numpy(), b)
        Y = xpx.at(xp.asarray(a))[xp.asarray(idx)].add(1.0)
        b = a.copy()
        b[idx] += 1.0
        np.testing.assert_array_equal(Y.numpy(), b)


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
def test_integer_array_writes_with_broadcasting_indices_match_numpy(shape):
    """Index arrays that broadcast against each other (a size-1 axis stretches), in writes and ``np.add.at``."""
    a = np.random.default_rng(5).standard_normal((5, 6))
    keys = [
        (np.array([0, 4]), np.array([1])),
        (np.array([[0], [2], [4]]), np.array([1, 3, 5])),
        (np.array([[3]]), np.array([[0, 5, 0]])),
    ]
    with sa.default_mesh(sa.Mesh(shape)):
        for rows, cols in keys:
            X, b = xp.asarray(a), a.copy()
            X[xp.asarray(rows), xp.asarray(cols)] = 7.0
            b[rows, cols] = 7.0
            np.testing.assert_array_equal(X.numpy(), b)
            X, b = xp.asarray(a), a.copy()
            np.add.at(X, (xp.asarray(rows), xp.asarray(cols)), 1.0)
            np.add.at(b, (rows, cols), 1.0)
            np.testing.assert_array_equal(X.numpy(), b)


def test_add_at_accumulates_duplicates():
    from shardarray.ops.indexing.id_writes import write_at

    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.zeros(mesh, {"i": 7}, dtype="float64", layout={"i": "row"})
    ids = np.array([6, 0, 6, 6, 3])
    ids_ = sa.asarray(ids, dims=("k",), mesh=mesh, layout={"k": "row"})
    V = sa.asarray(np.arange(5.0), dims=("k",), mesh=mesh, layout={"k": "row"})
    with sa.comm_log() as log:
        write_at(x, ("i",), (ids_,), V, "add")
    ref = np.zeros(7)
    np.add.at(ref, ids, np.arange(5.0))
    np.testing.assert_array_equal(x.numpy(), ref)
    assert {q.op for q in log.records} == {"alltoall"}


def test_gather_fallback_warns(monkeypatch):
    monkeypatch.setattr(route, "GATHER_WARN_BYTES", 0)
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.zeros((4, 6))
        with pytest.warns(sa.GatherWarning, match=r"x\[idx\] = v.*bytes"):
            x[:, xp.asarray([0, 5, 1, 2])] = 1.0  # indices split over row, which splits x's other axis
    np.testing.assert_array_equal(x.numpy()[:, [0, 1, 2, 5]], 1.0)


def test_gather_warning_points_at_the_users_line(monkeypatch):
    """However deep in the library a gather warns, the warning names the line of the user's code that caused it
    (``callsite.user_stacklevel``), so ``-W error`` tracebacks and warning filters by module see the caller."""
    monkeypatch.setattr(route, "GATHER_WARN_BYTES", 0)
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.zeros((4, 6))
        idx = xp.asarray([0, 5, 1, 2])
        with pytest.warns(sa.GatherWarning) as got:
            line = sys._getframe().f_lineno + 1
            x[:, idx] = 1.0
    assert {(w.filename, w.lineno) for w in got} == {(__file__, line)}


def test_small_id_blocks_take_the_lookup_and_sum_path(monkeypatch):
    """Below take.ROUTE_MIN_IDS ids per device the lookup reads nothing to the host (no routing counts)."""
    monkeypatch.setattr(take_module, "ROUTE_MIN_IDS", 2048)
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(40.0).reshape(10, 4), dims=("v", "d"), mesh=mesh, layout={"v": "row"})
    ids = sa.asarray(np.arange(8) % 10, dims=("i",), mesh=mesh, layout={"i": "row"})
    with sa.comm_log() as log:
        y = sa.take(x, ids, "v")
    assert "alltoall" not in {r.op for r in log.records}
    np.testing.assert_array_equal(np.asarray(y), np.arange(40.0).reshape(10, 4)[np.arange(8) % 10])
    big = sa.asarray(np.arange(4096) % 10, dims=("i",), mesh=mesh, layout={"i": "row"})
    with sa.comm_log() as log:
        y = sa.take(x, big, "v")
    assert [r.op for r in log.records].count("alltoall") == 3  # counts, requests, rows
    np.testing.assert_array_equal(np.asarray(y), np.arange(40.0).reshape(10, 4)[np.arange(4096) % 10])
