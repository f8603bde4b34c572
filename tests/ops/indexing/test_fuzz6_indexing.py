"""Regressions found by differential fuzzing of indexing and writes on split arrays against NumPy (round 6)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES

import shardarray as sa
import shardarray.array_api as xp

MESHES = HYPOTHESIS_SHAPES  # 1, 2x2, 4, 2x2x2 and the uneven 3x2
FULL_KEYS = [(), Ellipsis, slice(None), (slice(None), slice(None)), slice(0, 5), (Ellipsis, slice(None, 3))]


@pytest.mark.parametrize("shape", MESHES, ids=str)
@pytest.mark.parametrize("key", FULL_KEYS, ids=str)
def test_a_selection_of_everything_is_a_new_array(shape, key):
    """``y = x[...]`` (``x[:]``, ``x[()]``, a slice that covers the axis) returned ``x`` itself, so a later
    ``x[0, 0] = v`` changed ``y`` and a write into ``y`` changed ``x``; every other slice is a new array that keeps
    its value (the Semantics guide: no block is written, so a slice taken before keeps its value)."""
    a = np.arange(15.0).reshape(5, 3)
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        y = x[key]
        assert y is not x and type(y) is xp.Array
        x[0, 0] = -1.0
        np.testing.assert_array_equal(y.numpy(), a)
        y[1, 1] = -2.0
        assert x.numpy()[1, 1] == a[1, 1] and y.numpy()[1, 1] == -2.0


@pytest.mark.parametrize("shape", MESHES, ids=str)
def test_a_named_selection_of_everything_is_a_new_array(shape):
    """The named forms alike: ``x.isel()``, ``x[{}]`` and ``x.isel(i=slice(None))`` returned ``x`` itself."""
    mesh = sa.Mesh(shape)
    a = np.arange(6.0)
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": mesh.axis_names[0]})
    views = [x.isel(), x[{}], x.isel(i=slice(None)), x[{"i": slice(0, 6)}]]
    x[{"i": 0}] = 9.0
    for y in views:
        assert y is not x and type(y) is sa.ShardArray
        np.testing.assert_array_equal(y.numpy(), a)


@pytest.mark.parametrize("shape", MESHES, ids=str)
@pytest.mark.parametrize("dtype", ["uint64", "int8", "float32", "complex64"])
def test_an_int_that_drops_the_last_axis_leaves_array_blocks(shape, dtype):
    """``z = x[3]`` of a 1-D array (and ``x[1, 2]`` of a 2-D one) held NumPy scalars as blocks, not 0-d arrays:
    ``z[()] = v`` then raised NumPy's raw TypeError ('numpy.uint64' object does not support item assignment)."""
    a = np.arange(6).astype(dtype)
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        for z in (x[3], xp.reshape(x, (2, 3))[1, 2], x[xp.asarray(np.array(3))]):
            z[()] = 1
            z[...] += 1
            assert z.dtype == a.dtype and z.numpy() == 2
        np.testing.assert_array_equal(x.numpy(), a)


UINT64_BEYOND = np.array([2**64 - 1], dtype=np.uint64)  # int64(-1) when wrapped: the last entry


@pytest.mark.parametrize("shape", MESHES, ids=str)
def test_uint64_ids_beyond_int64_are_out_of_range(shape):
    """Host uint64 ids (a NumPy array or list) of 2**63 and more wrapped to negative int64 ids, which count from the
    end: ``x[np.array([2**64 - 1], np.uint64)]`` read the last row and ``x[...] = v`` wrote it, silently (NumPy
    raises IndexError); ``isel`` alike."""
    a = np.arange(12.0).reshape(4, 3)
    mesh = sa.Mesh(shape)
    with sa.default_mesh(mesh):
        x = xp.asarray(a)
        for bad in (lambda: x[UINT64_BEYOND], lambda: x[:, UINT64_BEYOND], lambda: x[[2**64 - 1]]):
            with pytest.raises(sa.DimensionError, match=r"out of range|must lie in"):
                bad()
        with pytest.raises(sa.DimensionError, match="must lie in"):
            x[UINT64_BEYOND] = 100.0
        with pytest.raises(sa.DimensionError, match="must lie in"):
            np.add.at(x, UINT64_BEYOND, 1.0)
        np.testing.assert_array_equal(x.numpy(), a)
        np.testing.assert_array_equal(x[np.array([3], np.uint64)].numpy(), a[[3]])
    named = sa.asarray(a, dims=("i", "j"), mesh=mesh)
    with pytest.raises(sa.DimensionError, match="out of range for dim 'i' of size 4"):
        named.isel(i=UINT64_BEYOND)


@pytest.mark.parametrize("shape", MESHES, ids=str)
def test_index_arrays_and_values_on_another_mesh_are_mesh_errors(shape):
    """``x[ids] = v`` with ``ids`` on another mesh raised a raw ValueError (tuple.index) from the routed write;
    a value on another mesh raised a LayoutError naming an unknown mesh axis (integer-array and mask writes).
    Each is a MeshError now, as reads and slice writes raise, and ``x`` is left as it was."""
    other = sa.Mesh({"o": 2})
    a = np.arange(12.0).reshape(4, 3)
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        ids_there = xp.asarray(np.array([0, 1]), device=other)
        v_there = xp.asarray(np.array([1.0, 2.0, 3.0]), device=other)
        writes = {
            "ids": lambda: x.__setitem__(ids_there, 1.0),
            "add.at": lambda: np.add.at(x, ids_there, 1.0),
            "ids value": lambda: x.__setitem__(xp.asarray(np.array([0])), v_there),
            "mask value": lambda: x.__setitem__(xp.asarray(np.array([True, False, False, False])), v_there),
        }
        for what, write in writes.items():
            with pytest.raises(sa.MeshError, match="lives on"):
                write()
            np.testing.assert_array_equal(x.numpy(), a, err_msg=what)


@pytest.mark.parametrize("shape", MESHES, ids=str)
def test_a_complex_value_into_a_real_array_by_mask_is_refused(shape):
    """``x[mask] = v`` with a complex array ``v`` and a real ``x`` dropped the imaginary part silently, where
    ``x[ids] = v``, ``x[a:b] = v`` and a complex scalar raise DTypeError (NumPy drops it with a ComplexWarning)."""
    a = np.zeros(4)
    mask = np.array([True, True, False, False])
    v = np.array([1 + 2j, 3 + 0j])
    with sa.default_mesh(sa.Mesh(shape)):
        for m in (mask, xp.asarray(mask)):
            for value in (v, xp.asarray(v)):
                x = xp.asarray(a)
                with pytest.raises(sa.DTypeError, match="imaginary part"):
                    x[m] = value
                np.testing.assert_array_equal(x.numpy(), a)
        x = xp.asarray(a.astype(np.complex64))
        x[xp.asarray(mask)] = xp.asarray(v)  # into a complex array: cast as NumPy casts
        np.testing.assert_array_equal(x.numpy(), np.array([1 + 2j, 3, 0, 0], dtype=np.complex64))


@pytest.mark.parametrize("shape", MESHES, ids=str)
@pytest.mark.parametrize("vshape", [(1, 3), (2, 1), (1, 1, 3), (1, 1, 1, 3), (3,), ()], ids=str)
def test_a_0d_mask_write_broadcasts_as_numpy(shape, vshape):
    """``x[np.True_] = v`` with ``v`` of shape (1, 3) into a (2, 3) array raised DimensionError from
    ``broadcast_to`` (a size-1 axis did not stretch); NumPy broadcasts it, as every other write does."""
    a = np.zeros((2, 3))
    v = np.arange(1.0, 1.0 + int(np.prod(vshape))).reshape(vshape)
    want = a.copy()
    want[np.True_] = v
    with sa.default_mesh(sa.Mesh(shape)):
        for key in (np.True_, xp.asarray(np.array(True))):
            for value in (v, xp.asarray(v)):
                x = xp.asarray(a)
                x[key] = value
                np.testing.assert_array_equal(x.numpy(), want)
        with pytest.raises(sa.DimensionError, match="does not broadcast"):
            x[np.True_] = xp.ones((2, 2, 3))


ZERO_D_MASK_BAD = [
    ("int8", 300, sa.CastError),
    ("uint8", -1, sa.CastError),
    ("int32", float("nan"), sa.CastError),
    ("float64", 1 + 2j, sa.DTypeError),
    ("float64", "abc", sa.DTypeError),
    ("float64", None, sa.DTypeError),  # NumPy writes NaN; every other write of the library refuses None
]


@pytest.mark.parametrize("shape", MESHES, ids=str)
@pytest.mark.parametrize(("dtype", "value", "error"), ZERO_D_MASK_BAD, ids=str)
def test_a_0d_mask_write_checks_its_value_as_every_write(shape, dtype, value, error):
    """``x[np.True_] = v`` cast a host ``v`` with ``np.asarray(v, dtype=x.dtype)``: 300 into int8 and NaN into an
    integer array raised NumPy's raw OverflowError/ValueError, a complex or str value a raw TypeError/ValueError,
    and None became NaN. It checks the value as ``x[0] = v`` does (``x[np.False_] = v`` too, as NumPy converts the
    value before it finds nothing to write)."""
    a = np.zeros((2, 3), dtype=dtype)
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        for key in (np.True_, np.False_, xp.asarray(np.array(True))):
            with pytest.raises(error):
                x[key] = value
        np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("shape", MESHES, ids=str)
def test_a_ragged_value_or_a_string_to_add_is_a_dtype_error(shape):
    """``x[key] = [[1, 2], [3]]`` raised NumPy's raw ValueError ('setting an array element with a sequence') from
    every write path; ``np.add.at(x, ids, 'abc')`` NumPy's raw TypeError ('abc' read as a dtype name)."""
    a = np.zeros(4, dtype=np.int32)
    ragged = [[1, 2], [3]]
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        keys = [slice(0, 2), 0, np.array([0, 1]), xp.asarray(np.array([0, 1])), np.array([True, True, False, False])]
        for key in [*keys, xp.asarray(np.array([True, True, False, False])), np.True_, {"dim0": slice(0, 2)}]:
            with pytest.raises(sa.DTypeError, match="not a rectangular array"):
                x[key] = ragged
        for value in ("abc", "i1", None):
            with pytest.raises(sa.DTypeError, match="must be numbers or arrays"):
                np.add.at(x, np.array([0, 1]), value)
        np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("shape", MESHES, ids=str)
def test_host_ids_out_of_range_are_named_as_given(shape):
    """An out-of-range host id is named as the user gave it (-5 on size 4 read as -1 after wrapping), for reads
    and writes, positional and named."""
    with sa.default_mesh(sa.Mesh(shape)):
        y = xp.asarray(np.arange(4.0))
        for call in (lambda: y[np.array([-5, 1])], lambda: y.__setitem__(np.array([-5]), 1.0)):
            with pytest.raises(sa.DimensionError, match="index -5 is out of bounds for axis 0 with size 4"):
                call()
        with pytest.raises(sa.DimensionError, match="index 4 is out of bounds"):
            xp.take(y, np.array([4]))
        np.testing.assert_array_equal(np.asarray(y[np.array([-4, 3])]), [0.0, 3.0])
    x = sa.asarray(np.arange(8.0), dims=("i",), mesh=sa.Mesh(shape))
    with pytest.raises(sa.DimensionError, match="index -9 is out of bounds for dim 'i' with size 8"):
        x[{"i": np.array([-9, 2])}] = 5.0
