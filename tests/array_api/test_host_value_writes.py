"""``x[key] = host_array`` on positional arrays, as NumPy takes it: a NumPy array or nested lists broadcast into a
slice, a row, a strided selection (they were refused unless the key held index arrays or a mask)."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from helpers import MESH_SHAPES

WRITES = [
    ((slice(1, 3),), np.ones((2, 5))),
    ((slice(None), 1), np.arange(4.0)),
    (2, np.arange(5.0)),
    ((slice(None), slice(1, 4)), [[1, 2, 3]]),  # nested lists broadcast over the rows
    ((Ellipsis, 0), np.arange(4) + 0.5),
    ((slice(0, 4, 2),), np.array([7.0, 8, 9, 10, 11])),  # one row broadcast into a strided selection
    ((slice(3, 0, -1), slice(None, None, 2)), np.arange(9.0).reshape(3, 3)),
    ((slice(0, 0),), np.ones((0, 5))),  # an empty selection
]


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_host_values_write_as_numpy(shape):
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.zeros((4, 5))
        want = np.zeros((4, 5))
        for key, value in WRITES:
            x[key] = value
            want[key] = value
            assert type(x) is xp.Array
            np.testing.assert_array_equal(np.asarray(x), want)


def test_host_values_cast_to_the_arrays_dtype_and_bad_shapes_raise():
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        y = xp.zeros((4,), dtype=xp.int32)
        y[1:3] = np.array([1.7, -2.2])  # NumPy truncates toward zero
        np.testing.assert_array_equal(np.asarray(y), np.array([0, 1, -2, 0], np.int32))
        x = xp.zeros((4, 5))
        with pytest.raises(sa.DimensionError, match="selection has 2 entries"):
            x[1:3] = np.ones((3, 5))
