"""Copies are copies: an array made from host data never shares the caller's buffer (issue "Nothing silently
wrong, round 2", item 2), so changing the host array afterwards changes nothing, and no cache (the id range
``sa.take`` checks ids against) outlives the data it describes."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}]


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("split", [True, False])
def test_host_data_is_copied(shape, split):
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    host = np.arange(24.0).reshape(6, 4)
    want = host.copy()
    named = sa.asarray(host, dims=("a", "b"), mesh=mesh, layout={"a": axes[0]} if split else {})
    positional = xp.asarray(host, device=mesh)
    host[...] = -1.0
    np.testing.assert_array_equal(named.numpy(), want)
    np.testing.assert_array_equal(positional.numpy(), want)


@pytest.mark.parametrize("shape", MESHES)
def test_take_checks_ids_after_the_host_array_changed(shape):
    mesh = sa.Mesh(shape)
    ids = np.array([0, 1, 2, 3])
    t = sa.asarray(ids, dims=("n",), mesh=mesh)
    ids[0] = 100  # the caller reuses its buffer: the distributed ids are still 0..3
    table = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("vocab", "d"), mesh=mesh)
    np.testing.assert_array_equal(sa.take(table, t, "vocab").numpy(), np.arange(8.0).reshape(4, 2))
    bad = np.array([0, 1, 2, 4])
    with pytest.raises(sa.ShardArrayError):
        sa.take(table, sa.asarray(bad, dims=("n",), mesh=mesh), "vocab")


def test_copy_true_of_an_array_shares_nothing():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = xp.asarray(np.arange(8.0).reshape(2, 4), device=mesh)
    b = xp.asarray(a, copy=True)
    assert all(x is None or y is None or not np.shares_memory(x, y) for x, y in zip(a.shards, b.shards))
    c = xp.astype(a, a.dtype, copy=True)
    assert all(x is None or y is None or not np.shares_memory(x, y) for x, y in zip(a.shards, c.shards))


def _lost(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, sa.CopyWriteWarning)]


def test_a_lost_write_into_a_row_of_iteration_warns():
    """``r0, r1 = x`` (NumPy's rows are views of ``x``), then a write into ``r0`` freed unread (SciPy's
    ``_tanhsinh``: ``fr, fl = xp.reshape(fj, (2, -1))`` then ``fr[mask] = ...``)."""
    x = xp.reshape(xp.arange(6.0, device=sa.Mesh({"row": 2, "col": 2})), (2, 3))

    def write_a_row():
        r0, _ = x
        r0[0] = -1.0

    got = _lost(write_a_row)
    assert len(got) == 1 and "x[0]" in got[0], got
    assert float(x[0, 0]) == 0.0  # (the copy's write, not x's: value semantics)


def test_a_copy_of_a_copy_names_the_array_it_came_from():
    """Rows of ``x.reshape(...)``: the reshape's copy is freed at once, so the rows are tagged with ``x`` itself."""
    x = xp.arange(6.0, device=sa.Mesh({"row": 2, "col": 2}))

    def write_a_reshaped_row():
        f0, _ = x.reshape(2, 3)
        f0[1] = -1.0

    got = _lost(write_a_reshaped_row)
    assert len(got) == 1 and "x.reshape(...)[0]" in got[0], got


def test_rows_read_after_their_write_do_not_warn():
    x = xp.reshape(xp.arange(6.0, device=sa.Mesh({"row": 2, "col": 2})), (2, 3))

    def write_and_read():
        r0, r1 = x
        r0[0] = -1.0
        assert float(r0[0]) == -1.0 and float(r1[0]) == 3.0

    assert _lost(write_and_read) == []
    assert [float(r[0]) for r in x] == [0.0, 3.0]


@pytest.mark.parametrize(
    "view, text",
    [
        (lambda x: xp.reshape(x, (4, 2)), "xp.reshape(x, ...)"),
        (lambda x: xp.permute_dims(xp.reshape(x, (2, 4)), (1, 0)), "xp.permute_dims(xp.reshape(x, ...), ...)"),
        (lambda x: xp.flip(x), "xp.flip(x, ...)"),
        (lambda x: np.reshape(x, (2, 4)), "xp.reshape(x, ...)"),  # (NumPy's function dispatches to xp.reshape)
    ],
)
def test_a_lost_write_into_the_namespaces_views_warns(view, text):
    """NumPy's ``reshape``/``transpose``/``flip`` give views: a write into the namespace's copy freed unread warns,
    naming the expression back to the array it came from (a chain of copies included)."""
    x = xp.arange(8.0, device=sa.Mesh({"row": 2, "col": 2}))

    def write():
        y = view(x)
        y[(0,) * y.ndim] = -1.0

    got = _lost(write)
    assert len(got) == 1 and text in got[0], got
    assert float(x[0]) == 0.0
