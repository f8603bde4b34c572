"""Regressions found by differential fuzzing of indexing, writes and searching against NumPy (round 5)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp
from shardarray.ops.indexing import take as take_module


def _first_axis(mesh: sa.Mesh) -> str:
    return mesh.axis_names[0]


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_routed_take_of_rows_with_no_entries(shape, monkeypatch):
    """Ids split like the looked-up dim are routed to its owners; rows of an empty trailing dim (x of shape
    (3, 0)) have nothing to send: ``reshape(-1, 0)`` of the owners' tables raised NumPy's ValueError, forward and
    in the VJP (``take_routed.py``)."""
    monkeypatch.setattr(take_module, "ROUTE_MIN_IDS", 0)  # route these few ids as 2048 per device would be
    mesh = sa.Mesh(shape)
    ax = _first_axis(mesh)
    ids_np = np.arange(23) % 3
    ids = sa.asarray(ids_np, dims=("t",), mesh=mesh, layout={"t": ax})
    x = sa.asarray(np.zeros((3, 0)), dims=("v", "e"), mesh=mesh, layout={"v": ax})
    out = sa.take(x, ids, "v")
    assert out.dims == ("t", "e") and out.numpy().shape == (23, 0)
    grad = sa.grad(lambda t: sa.take(t, ids, "v").sum())(x)
    assert grad.numpy().shape == (3, 0)
    # the same lookup positionally, with a split index array
    a = np.arange(12.0).reshape(3, 4, 1)[:, :0]
    y = xp.asarray(sa.asarray(a, dims=("dim0", "dim1", "dim2"), mesh=mesh, layout={"dim0": ax}))
    got = xp.take(y, xp.asarray(ids), axis=0)
    assert type(got) is xp.Array and got.numpy().shape == np.take(a, ids_np, axis=0).shape


KEYS = [
    (slice(None), -1, Ellipsis, np.array([[0, 1]])),  # an int and an array apart: the broadcast axes go first
    (slice(None), np.array([0]), Ellipsis, np.array([[0, 1], [2, 3]])),
    (np.array([1, 0]), Ellipsis, np.array([4, 2])),
    (Ellipsis, np.array([1, 0]), np.array([4, 2])),  # side by side: they stay in place
    (1, Ellipsis, 2, np.array([3, 0, 3])),
]


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
@pytest.mark.parametrize("key", KEYS, ids=lambda k: str(k).replace(" ", ""))
def test_ellipsis_between_array_indices_separates_them(shape, key):
    """NumPy puts the broadcast axes of integer-array indices first when anything stands between them, an
    Ellipsis that stands for no axes included; ``x[:, 0, ..., ids]`` kept them in place (a wrong shape), for reads
    and writes."""
    a = np.arange(2 * 4 * 5, dtype=np.float64).reshape(2, 4, 5)
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        got = x[key]
        assert type(got) is xp.Array
        np.testing.assert_array_equal(got.numpy(), a[key])
        want = a.copy()
        v = -np.arange(a[key].size, dtype=np.float64).reshape(a[key].shape)
        want[key] = v
        x[key] = xp.asarray(v)
        np.testing.assert_array_equal(x.numpy(), want)


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_write_with_index_arrays_that_do_not_broadcast_is_a_dimension_error(shape):
    """``x[ids1, ids2] = v`` with index arrays of shapes (3,) and (2,) raised NumPy's raw ValueError from
    ``np.broadcast_shapes``; reads already raised ``DimensionError``."""
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.zeros((4, 5))
        i, j = np.array([0, 1, 2]), xp.asarray(np.array([1, 2]))
        with pytest.raises(sa.DimensionError, match=r"\(3,\) and \(2,\) cannot be broadcast"):
            x[i, j] = 1.0
        with pytest.raises(sa.DimensionError, match="cannot be broadcast"):
            x[i, j]
        np.testing.assert_array_equal(x.numpy(), np.zeros((4, 5)))


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_ids_into_an_empty_dim_say_so(shape):
    """Ids into a dim of size 0 suggested ``ids % 0``; the message now says the dim is empty."""
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.zeros((0, 3))
        with pytest.raises(sa.DimensionError, match="'dim0' is empty") as err:
            xp.take(x, xp.asarray([0, 1]), axis=0).numpy()
        assert "% 0" not in str(err.value)


NEW_AXIS_WRITES = [
    ((slice(None), None), (3, 1, 2)),  # the selection's own shape, new axis included
    ((slice(None), None), (1, 2)),  # right-aligned: the 1 meets the new axis
    ((None, slice(0, 2), None, 0), (1, 2, 1)),
    ((None, Ellipsis, None), (1, 1, 3, 2, 1)),  # and a leading 1 beyond the selection
]


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
@pytest.mark.parametrize(("key", "vshape"), NEW_AXIS_WRITES, ids=str)
def test_write_through_new_axes_takes_a_value_of_the_selection_shape(shape, key, vshape):
    """``x[:, None] = v`` with ``v`` of the selection's shape (3, 1, 2) raised DimensionError (the None was
    dropped from the key, so v had more dims than the selection, and only leading 1s were squeezed); NumPy
    broadcasts v right-aligned against the selection, new axes included. ``np.add.at`` with a None in the key
    (which writes ``x[key] + v`` back the same way) failed the same."""
    a = np.arange(6.0).reshape(3, 2)
    v = -1.0 - np.arange(int(np.prod(vshape)), dtype=np.float64).reshape(vshape)
    want = a.copy()
    want[key] = v
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        x[key] = xp.asarray(v)
        np.testing.assert_array_equal(x.numpy(), want)
        with pytest.raises(sa.DimensionError, match=r"does not broadcast to the selection's \(3, 1, 2\)"):
            x[:, None] = xp.ones((3, 2, 2))
        y, added = xp.asarray(a), a.copy()
        np.add.at(added, (slice(None), None), 1.0)
        np.add.at(y, (slice(None), None), 1.0)
        np.testing.assert_array_equal(y.numpy(), added)


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
@pytest.mark.parametrize("vshape", [(1, 1, 3, 4), (1, 3, 1), (1, 1, 1)], ids=str)
def test_mask_write_takes_leading_ones_beyond_the_selection(shape, vshape):
    """``x[mask] = v`` over the leading axis selects (1, 3, 4); a ``v`` of shape (1, 1, 3, 4) broadcasts to it
    in NumPy (leading size-1 axes drop) but raised DimensionError."""
    a = np.arange(24.0).reshape(2, 3, 4)
    mask = np.array([True, False])
    v = -1.0 - np.arange(int(np.prod(vshape)), dtype=np.float64).reshape(vshape)
    want = a.copy()
    want[mask] = v
    with sa.default_mesh(sa.Mesh(shape)):
        for m in (mask, xp.asarray(mask)):
            x = xp.asarray(a)
            x[m] = xp.asarray(v)
            np.testing.assert_array_equal(x.numpy(), want)
        with pytest.raises(sa.DimensionError, match="does not broadcast"):
            x[mask] = xp.ones((2, 1, 3, 4))
