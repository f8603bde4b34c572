"""Regressions found by re-running the round-5 and earlier differential fuzzers against the tree after the round's
fixes (the bug each test pins is in its docstring)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp

SHAPES = [*MESH_SHAPES, {"p": 3, "q": 2}]
MESHES = pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s.values())))
A = np.arange(20).reshape(5, 4)
MASK = A % 3 == 0  # 7 entries, over every axis


@MESHES
@pytest.mark.parametrize("vshape", [(1, 7), (1, 1), (7, 1)], ids=str)
@pytest.mark.parametrize("key", ["mask", "tuple", "array"])
def test_whole_mask_write_refuses_a_value_of_more_than_one_dim(shape, vshape, key):
    """``x[mask] = v`` with a mask over every axis takes a scalar or a 1-d ``v`` (NumPy raises TypeError for a
    (1, 7) value); the round's fix that lets leading size-1 axes of ``v`` drop (right for ``x[mask, ...]`` and
    for masks over the leading axes) made it accept them here, where the tree before refused them."""
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(A)
        k = {"mask": MASK, "tuple": (MASK,), "array": xp.asarray(MASK)}[key]
        with pytest.raises(sa.DimensionError, match="scalar or a 1-d"):
            x[k] = xp.ones(vshape, dtype=xp.int64)
        np.testing.assert_array_equal(x.numpy(), A)


@MESHES
@pytest.mark.parametrize("vshape", [(7,), (1,), ()], ids=str)
def test_whole_mask_write_takes_a_scalar_or_1d_value(shape, vshape):
    """What NumPy takes for a whole mask still writes: a 0-d, a (1,) and a (7,) value."""
    v = -1 - np.arange(int(np.prod(vshape))).reshape(vshape)
    want = A.copy()
    want[MASK] = v
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(A)
        x[MASK] = xp.asarray(v)
        np.testing.assert_array_equal(x.numpy(), want)


@MESHES
def test_mask_and_ellipsis_write_still_drops_leading_ones(shape):
    """``x[mask, ...] = v`` is not NumPy's whole-mask assignment: a (1, 7) value broadcasts to the (7,) selection
    there, as in NumPy."""
    v = -1 - np.arange(7).reshape(1, 7)
    want = A.copy()
    want[MASK, ...] = v
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(A)
        x[MASK, ...] = xp.asarray(v)
        np.testing.assert_array_equal(x.numpy(), want)
