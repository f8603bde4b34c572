"""Regressions found by differential fuzzing of manipulation, creation and positional elementwise ops (round 5)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES

import shardarray as sa
import shardarray.array_api as xp
from shardarray.ops.manipulation.structure import transpose

MESHES = pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)


def _named(mesh: sa.Mesh) -> sa.ShardArray:
    return sa.asarray(np.arange(12.0).reshape(3, 4), dims=("a", "b"), mesh=mesh, layout={"a": mesh.axis_names[0]})


@MESHES
def test_asarray_of_host_data_refuses_with_typed_errors(shape):
    """Host data NumPy cannot convert, or only by changing values, raised NumPy's ValueError/TypeError (nested lists
    of unequal lengths, complex numbers for a real dtype, an int beyond float64), or silently stored NaN as an
    integer or dropped the imaginary part (``sa.asarray``, ``xp.asarray``: ``ops/creation/basic.host_array``)."""
    mesh = sa.Mesh(shape)
    named = lambda data, nd=1, **kw: sa.asarray(data, dims=("a", "b")[:nd], mesh=mesh, **kw)  # noqa: E731
    positional = lambda data, nd=1, **kw: xp.asarray(data, device=mesh, **kw)  # noqa: E731
    for make in (named, positional):
        with pytest.raises(sa.DTypeError, match="lists of equal lengths"):
            make([[1.0], [1.0, 2.0]], nd=2)
        with pytest.raises(sa.DTypeError, match="imaginary part"):
            make([1 + 1j, 2.0], dtype="float64")
        with pytest.raises(sa.DTypeError, match="imaginary part"):
            make(np.array([1 + 1j, 2.0]), dtype="float32")
        with pytest.raises(sa.CastError, match="nan"):
            make([np.nan, 1.0], dtype="int32")
        with pytest.raises(sa.CastError, match="nan"):
            make(np.array([1.0, np.nan]), dtype="int64")
        with pytest.raises(sa.CastError, match="float64"):
            make([2**1100], dtype="float64")
        with pytest.raises(sa.DTypeError, match="float32"):
            make(["1", "2"], dtype="float64")
        np.testing.assert_array_equal(make([2**70], dtype="float64").numpy(), [2.0**70])
    got = positional([[1, 2, 3], [4, 5, 6]], dtype="int8")
    assert type(got) is xp.Array and got.dtype == np.int8 and got.numpy().tolist() == [[1, 2, 3], [4, 5, 6]]


@MESHES
def test_arange_values_outside_an_integer_dtype_are_refused(shape):
    """``xp.arange(-3, 6, dtype=uint8)`` wrapped to 253.. (NumPy raises), float bounds past int32 stored INT_MIN;
    a step beyond int64 with one element raised NumPy's OverflowError."""
    with sa.default_mesh(sa.Mesh(shape)):
        with pytest.raises(sa.CastError, match="uint8"):
            xp.arange(-3, 6, dtype=xp.uint8)
        with pytest.raises(sa.CastError, match="int32"):
            xp.arange(0.0, 3e10, 1e10, dtype=xp.int32)
        with pytest.raises(sa.CastError, match="int64"):
            xp.arange(2**63, 2**63 + 2)
        assert xp.arange(0, 5, 2**70).numpy().tolist() == [0]
        np.testing.assert_array_equal(xp.arange(0, 2**70, 2**68, dtype=xp.float64).numpy(), np.arange(4) * 2.0**68)
        np.testing.assert_array_equal(xp.arange(250, 256, dtype=xp.uint8).numpy(), np.arange(250, 256, dtype="uint8"))


@MESHES
def test_creation_arguments_of_the_wrong_type(shape):
    """``linspace`` of a string or tuple and ``meshgrid(indexing=<array>)`` raised NumPy's or Python's errors."""
    with sa.default_mesh(sa.Mesh(shape)):
        for bad in ("a", (0, 0), None):
            with pytest.raises(sa.DTypeError, match="start must be a real or complex number"):
                xp.linspace(bad, 1.0, 3)
        with pytest.raises(sa.ArgumentError, match="indexing"):
            xp.meshgrid(xp.arange(3), xp.arange(2), indexing=np.array([1, 2]))


@MESHES
def test_named_manipulation_arguments_of_the_wrong_type(shape):
    """A 1-d NumPy array has ``__index__``, so it passed the integer checks of ``roll``/``pad``/``repeat``/
    ``expand_dims``/``diff`` and failed in ``int()``; ``concat``/``stack`` along a non-name, ``transpose`` to
    non-names and ``broadcast_to`` of a NumPy array raised NumPy's or Python's errors."""
    x = _named(sa.Mesh(shape))
    ids = np.array([1, 2])
    for call in (
        lambda: sa.roll(x, "a", ids),
        lambda: sa.pad(x, "b", ids, 1),
        lambda: sa.repeat(x, ids, "b"),
        lambda: sa.diff(x, "a", ids),
    ):
        with pytest.raises(sa.ShardArrayError, match="integer"):
            call()
    with pytest.raises(sa.DimensionError, match="position must be an integer"):
        sa.expand_dims(x, "z", ids)
    for join in (sa.concat, sa.stack):
        with pytest.raises(sa.DimensionError, match="name the dim"):
            join([x, x], ids)
    for dims in (ids, None, 1.5, ("a", 0)):
        with pytest.raises(sa.DimensionError, match="transpose"):
            transpose(x, dims)
    for dims in ((ids,), (None,), ("a", 0)):
        with pytest.raises(sa.DimensionError, match="transpose"):
            x.transpose(*dims)
    with pytest.raises(sa.DTypeError, match="ShardArray"):
        sa.broadcast_to(np.ones(3), {"a": 3})
    # the integer forms still work (NumPy integers included)
    assert sa.roll(x, "a", np.int64(1)).numpy().tolist() == np.roll(x.numpy(), 1, 0).tolist()
    assert sa.expand_dims(x, "z", np.int8(-1)).dims == ("a", "b", "z")
    assert x.transpose(reversed(x.dims)).dims == ("b", "a") == x.transpose().dims
