"""Routed take, searchsorted and integer-array writes (``ops/indexing/route.py``) under ``mpiexec -n 4``.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_route.py``. Every
rank builds the same inputs (fixed seeds), runs the op on an emulated mesh and on the MPI mesh of the same
shape, and compares both with NumPy on the gathered value (``.numpy()``, collective for split arrays). All
collectives of a test run before its assertions, so a failing check fails on every rank alike; a rank stuck
in a collective is ended by tests/conftest.py's per-test timeout (traceback, exit) instead of hanging the job.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from spmd import both, close, needs_four

import shardarray as sa
import shardarray.array_api as xp
from shardarray.ops.indexing import route
from shardarray.ops.indexing import take as take_module
from shardarray.ops.sorting import searchsorted as ss

pytestmark = needs_four

SHAPES = [{"row": 4}, {"row": 2, "col": 2}]


@pytest.fixture(autouse=True, scope="module")
def _route_small_ids():
    """These tests use small id arrays: route them as big ones are (take.ROUTE_MIN_IDS to 0). (A hung test
    ends the job: tests/conftest.py's MPI_TEST_TIMEOUT_S.)"""
    saved = take_module.ROUTE_MIN_IDS
    take_module.ROUTE_MIN_IDS = 0
    yield
    take_module.ROUTE_MIN_IDS = saved


def _log(log):
    return [(q.op, q.axes, q.elements, q.dtype) for q in log.records]


def _no_gather(records):
    """No allgather of a split index or values array (at most one element per member: splitters)."""
    return not [q for q in records if q[0] == "allgather" and q[2] > 1]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("n", [3, 7, 13])  # 3 over 4: an empty block of x; 7: uneven blocks
def test_take_with_split_ids_routes_and_matches_numpy(shape, n):
    axes = tuple(shape)
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, 3))
    ids = rng.integers(0, n, 13)  # 13 over 4: blocks 4, 4, 4, 1
    ids9 = rng.integers(0, n, 9)  # 9 over 4: blocks 3, 3, 3, 0
    b = rng.standard_normal((n, 2))
    along = rng.integers(0, n, (13, 2))

    def run(mesh):
        X = sa.asarray(a, dims=("v", "d"), mesh=mesh, layout={"v": axes})
        ids_ = sa.asarray(ids, dims=("t",), mesh=mesh, layout={"t": axes})
        X1 = sa.asarray(a, dims=("v", "d"), mesh=mesh, layout={"v": axes[:1]})
        ids9_ = sa.asarray(ids9, dims=("t",), mesh=mesh, layout={"t": axes})
        B = sa.asarray(b, dims=("v", "b"), mesh=mesh, layout={"v": axes})
        along_ = sa.asarray(along, dims=("v", "b"), mesh=mesh, layout={"v": axes})
        logs = []
        with warnings.catch_warnings():
            warnings.simplefilter("error", sa.GatherWarning)
            with sa.comm_log() as log:
                r = sa.take(X, ids_, "v")
            logs.append(_log(log))
            with sa.comm_log() as log:
                r1 = sa.take(X1, ids9_, "v")  # x over axes[:1], ids over all axes (an empty ids block on 2x2)
            logs.append(_log(log))
            with sa.comm_log() as log:
                r2 = sa.take_along_dim(B, along_, "v")
            logs.append(_log(log))
        meta = [(r.layout, r.pending), (r1.layout, r1.pending)]
        return [r.numpy(), r1.numpy(), r2.numpy()], logs, meta

    (emulated, elog, emeta), (mpi, mlog, mmeta) = both(shape, run)
    close(emulated, mpi)
    np.testing.assert_array_equal(mpi[0], a[ids])
    np.testing.assert_array_equal(mpi[1], a[ids9])
    np.testing.assert_array_equal(mpi[2], np.take_along_axis(b, along, axis=0))
    assert elog == mlog and emeta == mmeta
    assert mmeta[0] == ({"t": axes}, ())
    # counts, requests, rows: three alltoallv over the axes of the looked-up dim, no allgather of the ids
    assert [q[:2] for q in mlog[0]] == [("alltoall", axes)] * 3, mlog[0]
    assert {q[0] for q in mlog[2]} == {"alltoall"}, mlog[2]
    if len(axes) > 1:  # ids blocks of 3 (one empty) over 4 devices, x's dim over row (2): routed
        assert [q[:2] for q in mlog[1]] == [("alltoall", axes[:1])] * 3, mlog[1]
    else:  # blocks of 3 ids, fewer than the 4 owners: the lookup path gathers them (silently: small), and the rows
        # go back split like the ids by a reduce-scatter
        assert [q[:2] for q in mlog[1]] == [("allgather", axes), ("reduce_scatter", axes)], mlog[1]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_routed_take_gradient_is_np_add_at(shape):
    axes = tuple(shape)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((11, 2))
    ids = rng.integers(0, 11, 40)
    w = rng.standard_normal((40, 2))
    ref = np.zeros_like(a)
    np.add.at(ref, ids, w)

    def run(mesh):
        out = []
        for xa, ia in [(axes[:1], axes), (axes, axes)]:
            X = sa.asarray(a, dims=("v", "d"), mesh=mesh, layout={"v": xa})
            ids_ = sa.asarray(ids, dims=("t",), mesh=mesh, layout={"t": ia})
            W = sa.asarray(w, dims=("t", "d"), mesh=mesh)
            with sa.comm_log() as log:
                g = sa.grad(lambda x, i=ids_, w=W: (sa.take(x, i, "v") * w).sum())(X)
            out += [g.numpy(), np.array(_no_gather(_log(log)))]
        return out

    emulated, mpi = both(shape, run)
    close(emulated, mpi)
    for g, ok in zip(mpi[::2], mpi[1::2]):
        np.testing.assert_allclose(g, ref, atol=1e-12)
        assert ok


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_positional_take_and_getitem_match_numpy(shape):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((7, 5))
    ids = rng.integers(-7, 7, 13)
    ids2 = rng.integers(0, 7, (3, 5))
    cols = rng.integers(0, 5, 13)
    along = rng.integers(0, 7, (9, 5))

    def run(mesh):
        with sa.default_mesh(mesh):
            x = xp.asarray(a)
            i = xp.asarray(ids)
            with sa.comm_log() as log:
                out = [xp.take(x, i, axis=0).numpy(), x[i].numpy()]
            rec = _log(log)
            out += [
                xp.take(x, xp.asarray(cols), axis=1).numpy(),
                xp.take(xp.asarray(a[:, 0]), i).numpy(),
                xp.take_along_axis(x, xp.asarray(along), axis=0).numpy(),
                x[xp.asarray(ids2)].numpy(),
                x[i, xp.asarray(cols)].numpy(),
                x[1:, ids[:5] % 5].numpy(),
            ]
        return out, rec

    (emulated, elog), (mpi, mlog) = both(shape, run)
    close(emulated, mpi)
    expect = [
        a[ids],
        a[ids],
        a[:, cols],
        a[ids, 0],
        np.take_along_axis(a, along, axis=0),
        a[ids2],
        a[ids, cols],
        a[1:, ids[:5] % 5],
    ]
    for got, want in zip(mpi, expect):
        np.testing.assert_array_equal(got, want)
    assert elog == mlog and _no_gather(mlog) and ("alltoall", ("row",)) in [q[:2] for q in mlog], mlog


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_integer_array_writes_match_numpy(shape):
    import array_api_extra as xpx

    from shardarray.ops.indexing.id_writes import write_at

    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 4))
    idx = rng.integers(-9, 9, 25)
    idx[:6] = [4, 4, -5, 0, 0, 8]  # duplicates: the last write wins (NumPy)
    v = rng.standard_normal((25, 4))
    small = np.array([6, 2, 6])  # 3 entries over 4 devices: an empty block

    def run(mesh):
        out = []
        with sa.default_mesh(mesh):
            x = xp.asarray(a)
            with sa.comm_log() as log:
                x[xp.asarray(idx)] = xp.asarray(v)
            rec = _log(log)
            out.append(x.numpy())
            x = xp.asarray(a)
            x[xp.asarray(small)] = xp.asarray(v[:3])
            out.append(x.numpy())
            x = xp.asarray(a)
            x[xp.asarray(idx)] = -1.5
            out.append(x.numpy())
            x = xp.asarray(a)
            x[xp.asarray([1, 2, 1, 8]), xp.asarray([3, 0, 3, 1])] = xp.asarray([7.0, 8.0, 9.0, 10.0])
            out.append(x.numpy())
            out.append(xpx.at(xp.asarray(a))[xp.asarray(idx)].add(1.0).numpy())
        y = sa.zeros(mesh, {"i": 7}, dtype="float64", layout={"i": tuple(shape)})
        ids_ = sa.asarray(idx % 7, dims=("k",), mesh=mesh, layout={"k": tuple(shape)})
        write_at(y, ("i",), (ids_,), sa.asarray(v[:, 0], dims=("k",), mesh=mesh, layout={"k": tuple(shape)}))
        write_at(y, ("i",), (ids_,), sa.asarray(v[:, 1], dims=("k",), mesh=mesh, layout={"k": tuple(shape)}), "add")
        out.append(y.numpy())
        return out, rec

    (emulated, elog), (mpi, mlog) = both(shape, run)
    close(emulated, mpi)
    expect = []
    for key, val in [(idx, v), (small, v[:3]), (idx, -1.5), (([1, 2, 1, 8], [3, 0, 3, 1]), [7.0, 8.0, 9.0, 10.0])]:
        b = a.copy()
        b[key] = val
        expect.append(b)
    b = a.copy()
    b[idx] += 1.0
    expect.append(b)
    b = np.zeros(7)
    b[idx % 7] = v[:, 0]
    np.add.at(b, idx % 7, v[:, 1])
    expect.append(b)
    for got, want in zip(mpi[:-1], expect[:-1]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(mpi[-1], expect[-1], rtol=1e-14)  # adds in another order than np.add.at
    assert elog == mlog and {q[0] for q in mlog} == {"alltoall"}, mlog


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_routes_split_values(shape, side, monkeypatch):
    axes = tuple(shape)
    rng = np.random.default_rng(4)
    s = np.sort(rng.integers(-9, 9, 203).astype(float))
    s[-3:] = np.nan
    v = rng.integers(-10, 10, 301).astype(float)
    v[:4] = np.nan
    big = np.sort(rng.standard_normal(ss.SMALL + 5))  # larger than SMALL: routed without the monkeypatch
    bv = rng.standard_normal(1001)

    def run(mesh):
        logs, out = [], []
        for ax in (axes[:1], axes):
            S = sa.asarray(s, dims=("i",), mesh=mesh, layout={"i": ax})
            V = sa.asarray(v, dims=("q",), mesh=mesh, layout={"q": ax})
            with monkeypatch.context() as m:
                m.setattr(ss, "SMALL", 0)
                with sa.comm_log() as log:
                    r = sa.searchsorted(S, V, side=side)
            out.append(r.numpy())
            logs.append(_log(log))
        with sa.default_mesh(mesh):
            with sa.comm_log() as log:
                r = xp.searchsorted(xp.asarray(big), xp.asarray(bv), side=side)
            out.append(r.numpy())
            logs.append(_log(log))
            edges = np.linspace(-2, 2, 11)
            with sa.comm_log() as log:
                r = xp.searchsorted(xp.asarray(edges), xp.asarray(bv), side=side)  # small: edges gathered
            out.append(r.numpy())
            logs.append(_log(log))
        return out, logs

    (emulated, elog), (mpi, mlog) = both(shape, run)
    close(emulated, mpi)
    np.testing.assert_array_equal(mpi[0], np.searchsorted(s, v, side=side))
    np.testing.assert_array_equal(mpi[1], np.searchsorted(s, v, side=side))
    np.testing.assert_array_equal(mpi[2], np.searchsorted(big, bv, side=side))
    np.testing.assert_array_equal(mpi[3], np.searchsorted(np.linspace(-2, 2, 11), bv, side=side))
    assert elog == mlog
    for rec in mlog[:3]:  # routed: one splitter per device, then counts, values, answers
        assert [q[0] for q in rec] == ["allgather", "alltoall", "alltoall", "alltoall"], rec
        assert rec[0][2] == 1
    edges_block = -(-11 // shape["row"])  # the edges' block only, never the values
    assert [q[:3] for q in mlog[3]] == [("allgather", ("row",), edges_block)], mlog[3]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gather_fallbacks_warn(shape, monkeypatch):
    monkeypatch.setattr(route, "GATHER_WARN_BYTES", 0)
    a = np.arange(24.0).reshape(4, 6)
    cols = np.array([0, 5, 1, 2])

    def run(mesh):
        out = []
        with sa.default_mesh(mesh):
            x = xp.zeros((4, 6))
            with pytest.warns(sa.GatherWarning, match=r"x\[idx\] = v.*bytes"):
                x[:, xp.asarray(cols)] = 1.0  # indices split over row, which splits x's other axis
            out.append(x.numpy())
        X = sa.asarray(a, dims=("m", "v"), mesh=mesh, layout={"m": "row", "v": tuple(shape)[1:]})
        ids_ = sa.asarray(cols, dims=("t",), mesh=mesh, layout={"t": "row"})
        with pytest.warns(sa.GatherWarning, match=r"take along 'v'.*bytes"):
            r = sa.take(X, ids_, "v")
        out.append(r.numpy())
        return out

    emulated, mpi = both(shape, run)
    close(emulated, mpi)
    ref = np.zeros((4, 6))
    ref[:, cols] = 1.0
    np.testing.assert_array_equal(mpi[0], ref)
    np.testing.assert_array_equal(mpi[1], a[:, cols].T)
