"""Regressions found by a differential fuzzer of the NumPy protocols (NumPy functions, ufuncs and their methods,
ndarray methods on positional and named arrays, on meshes 1, 2x2, 4, 2x2x2, 3x2, against NumPy on the gathered
values; the bug each test pins is in its docstring)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp

SHAPES = [*MESH_SHAPES, {"p": 3, "q": 2}]
MESHES = pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s.values())))


def pos(values, shape):
    """``values`` as a positional array on a mesh of ``shape`` (each axis split over one mesh axis, uneven)."""
    return xp.asarray(np.asarray(values), device=sa.Mesh(shape))


def named(values, shape, dims=("i", "j", "k")):
    """``values`` as a named array with its first dim split over the mesh's first axis."""
    values = np.asarray(values)
    mesh = sa.Mesh(shape)
    layout = {dims[0]: mesh.axis_names[0]} if values.ndim else {}
    return sa.asarray(values, dims=dims[: values.ndim], mesh=mesh, layout=layout)


def check(got, ref, positional=True):
    """``got`` is an array of the input's kind (positional stays positional, named named) with NumPy's dtype,
    shape and values."""
    assert isinstance(got, sa.ShardArray) and (type(got) is xp.Array) == positional
    value = np.asarray(got)
    assert value.dtype == ref.dtype and value.shape == np.shape(ref)
    np.testing.assert_array_equal(value, ref)


@MESHES
def test_nanmax_nanmin_of_an_empty_axis_raise_as_numpy(shape):
    """``np.nanmax`` of an empty int32 axis gave -2147483648 (float: NaN) where NumPy raises (no identity)."""
    for dt in ("int32", "float64"):
        a = np.zeros((0, 3), dt)
        for fn in (np.nanmax, np.nanmin):
            with pytest.raises(sa.DimensionError, match="empty"):
                fn(pos(a, shape), axis=0)
            with pytest.raises(sa.DimensionError, match="empty"):
                fn(pos(a, shape))
            check(fn(pos(a, shape), axis=1), fn(a, axis=1))  # the empty result of non-empty slices


@MESHES
def test_nanmean_with_an_integer_dtype(shape):
    """``np.nanmean(ints, dtype=np.int32)`` came back float64 (NumPy: int32, truncated), and an integer dtype for
    floats was accepted where NumPy raises TypeError."""
    a = np.array([[1, 2, 3, 4], [300, 7, 7, 9]], np.int16)
    for dt in ("int32", "uint8", "bool"):
        check(np.nanmean(pos(a, shape), axis=1, dtype=dt), np.nanmean(a, axis=1, dtype=dt))
    with pytest.raises(sa.DTypeError, match="inexact"):
        np.nanmean(pos(a.astype(np.float64), shape), dtype=np.int32)


@MESHES
def test_nanvar_nanstd_of_complex_values_without_a_reduced_axis_are_real(shape):
    """``np.nanvar`` of a 0-d complex array with ``ddof=2`` came back complex128 (NumPy: float64 NaN)."""
    c = np.array(1 + 2j)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for fn in (np.nanvar, np.nanstd):
            for ddof in (0, 2):
                got, ref = fn(pos(c, shape), ddof=ddof), fn(c, ddof=ddof)
                assert got.dtype == np.float64 == ref.dtype
                np.testing.assert_array_equal(np.asarray(got), ref)


@MESHES
def test_vdot_keeps_the_operand_dtype(shape):
    """``np.vdot`` of int8 vectors came back int64 and of bools int64 (NumPy: int8 and bool)."""
    i = np.array([3, -7, 100, 5, 2], np.int8)
    b = np.array([True, False, True, False, False])
    check(np.vdot(pos(i, shape), pos(i, shape)), np.vdot(i, i))
    check(np.vdot(pos(b, shape), pos(~b, shape)), np.vdot(b, ~b))
    check(np.vdot(pos(b, shape), pos(b, shape)), np.vdot(b, b))


@MESHES
def test_concatenate_and_stackers_obey_casting_for_dtype(shape):
    """``np.concatenate([floats], dtype=np.int32)`` cast silently where NumPy's ``casting='same_kind'`` raises."""
    a = np.array([[0.5, 1.5], [2.5, -3.5]])
    x = pos(a, shape)
    for fn in (np.concatenate, np.vstack, np.hstack):
        with pytest.raises(sa.DTypeError, match="same_kind"):
            fn([x, x], dtype=np.int32)
        check(fn([x, x], dtype=np.int32, casting="unsafe"), fn([a, a], dtype=np.int32, casting="unsafe"))
        check(fn([x, x], dtype=np.float32), fn([a, a], dtype=np.float32))


@MESHES
def test_ufunc_dtype_is_numpy_signature(shape):
    """``dtype=`` cast the operands unchecked: ``np.maximum(f32, -3, dtype=np.int64)`` and ``np.less(x, y,
    dtype=np.float64)`` gave results where NumPy raises (same_kind casting, no such loop)."""
    f = np.array([0.5, -2.0, 3.0], np.float32)
    i = np.array([1, -2, 3], np.int8)
    with pytest.raises(sa.DTypeError, match="same_kind"):
        np.maximum(pos(f, shape), -3, dtype=np.int64)
    with pytest.raises(sa.DTypeError, match="No loop"):
        np.less(pos(f, shape), pos(f, shape), dtype=np.float64)
    check(np.add(pos(i, shape), pos(i, shape), dtype=np.float64), np.add(i, i, dtype=np.float64))
    check(np.sqrt(pos(np.abs(i), shape), dtype=np.float32), np.sqrt(np.abs(i), dtype=np.float32))


@MESHES
def test_reduce_initial_is_cast_checked(shape):
    """``np.add.reduce(uint8, initial=-1)`` wrapped -1 to 2**64 - 1 silently (NumPy: OverflowError)."""
    a = np.arange(5, dtype=np.uint8)
    with pytest.raises(sa.CastError, match="out of range"):
        np.add.reduce(pos(a, shape), initial=-1)
    with pytest.raises(OverflowError):
        np.maximum.reduce(pos(a[:0], shape), initial=300)
    check(np.add.reduce(pos(a, shape), initial=1.5), np.add.reduce(a, initial=1.5))


@MESHES
def test_reductions_take_initial(shape):
    """``np.sum(x, initial=...)`` (``prod``, ``max``, ``min``, the methods) raised ArgumentError; NumPy defines
    them as the ufunc's ``reduce``, which the positional dispatch runs."""
    a = np.arange(12.0).reshape(3, 4) - 5
    x = pos(a, shape)
    check(np.sum(x, initial=5), np.sum(a, initial=5))
    check(np.max(x, axis=1, initial=2.5, keepdims=True), np.max(a, axis=1, initial=2.5, keepdims=True))
    check(x.min(axis=0, initial=-1), a.min(axis=0, initial=-1))
    check(np.amax(pos(a[:0], shape), axis=0, initial=3), np.amax(a[:0], axis=0, initial=3))
    check(np.prod(x, 0, None, None, False, 2), np.prod(a, 0, None, None, False, 2))


@MESHES
def test_reduce_and_accumulate_axis_defaults_as_numpy(shape):
    """``np.add.reduce`` of a 0-d array (NumPy reduces it over axis 0) and ``np.add.accumulate(x, axis=None)`` of
    a 1-D array raised typed errors where NumPy gives values."""
    z = np.array(5, np.uint8)
    check(np.add.reduce(pos(z, shape)), np.asarray(np.add.reduce(z)))
    v = np.arange(5.0)
    check(np.add.accumulate(pos(v, shape), axis=None), np.add.accumulate(v, axis=None))


@MESHES
def test_mean_of_large_integers_does_not_overflow(shape):
    """``np.mean`` of int64 values near 2**62 summed in int64 and wrapped (NumPy averages integers in float64)."""
    a = np.array([2**62, 2**62, 2**62 + 8], np.int64)
    check(np.mean(pos(a, shape)), np.asarray(np.mean(a)))
    check(pos(a, shape).mean(dtype=bool), np.asarray(a.mean(dtype=bool)))


@MESHES
def test_where_types_numpy_scalars_strongly(shape):
    """``np.where(c, float32_array, np.float64(1.5))`` was float32 (NEP 50: a NumPy scalar keeps its dtype)."""
    c = np.array([True, False, True])
    f = np.array([1.0, 2.0, 3.0], np.float32)
    check(np.where(pos(c, shape), pos(f, shape), np.float64(1.5)), np.where(c, f, np.float64(1.5)))
    check(np.where(pos(c, shape), pos(f, shape), 1.5), np.where(c, f, 1.5))


@MESHES
def test_conj_method_and_round_of_bools(shape):
    """``x.conj()`` of bools came back int8 (NumPy's method returns the real array itself) and ``np.round(bools,
    1)`` returned the bools where NumPy raises."""
    b = np.array([True, False])
    x = pos(b, shape)
    assert x.conj() is x and x.conjugate() is x
    with pytest.raises(sa.DTypeError):
        np.round(x, 1)


@MESHES
def test_nanmedian_over_no_axis_of_an_empty_array(shape):
    """``np.nanmedian(empty, axis=())`` raised DimensionError (a reshape to ``(0, -1)``) where NumPy gives it."""
    a = np.zeros((2, 0))
    check(np.nanmedian(pos(a, shape), axis=(), keepdims=True), np.nanmedian(a, axis=(), keepdims=True))


@MESHES
def test_named_roll_repeat_pad_follow_numpy(shape):
    """Named ``np.roll(x, 1, 0)`` returned ``x`` unchanged (``sa.roll(x, dim=1, shift=0)``), ``np.pad(x, 1)``
    returned ``x`` (``sa.pad(x, dim=1)``), ``np.roll(x, 1, axis=0)``/``np.repeat(x, 2, axis=1)`` were refused."""
    a = np.arange(12.0).reshape(3, 4)
    x = named(a, shape)
    check(np.roll(x, 1, 0), np.roll(a, 1, 0), positional=False)
    check(np.roll(x, (1, -2), axis=(0, 1)), np.roll(a, (1, -2), axis=(0, 1)), positional=False)
    unsplit = named(a, shape).relayout({"i": None})  # (sa.repeat refuses a split dim)
    check(np.repeat(unsplit, 2, axis=0), np.repeat(a, 2, axis=0), positional=False)
    check(np.pad(x, 1), np.pad(a, 1), positional=False)
    check(np.pad(x, ((0, 1), (2, 0))), np.pad(a, ((0, 1), (2, 0))), positional=False)
    with pytest.raises(sa.ArgumentError, match=r"array_api\.pad"):
        np.pad(x, 1, mode="edge")
    with pytest.raises(sa.ArgumentError, match="flattens"):
        np.roll(x, 1)
    assert np.roll(x, 1, 0).dims == x.dims


@MESHES
def test_named_round_rint_conjugate_and_reduce_dtype_follow_numpy(shape):
    """Named ``np.round(ints, -1)`` came back float64 (NumPy keeps the integer dtype), ``np.rint(int32)`` int32
    (NumPy: float64), ``np.conjugate(bools)`` bool (NumPy: int8), ``np.sum(x, dtype=np.int8)`` int64."""
    a = np.array([15, 25, -35, 7], np.int16)
    x = named(a, shape)
    for d in (-1, 0, 1):
        check(np.round(x, d), np.round(a, d), positional=False)
    check(round(x, -1), np.round(a, -1), positional=False)
    check(np.rint(x), np.rint(a), positional=False)
    b = np.array([True, False, True])
    check(np.conjugate(named(b, shape)), np.conjugate(b), positional=False)
    check(np.sum(x, dtype=np.int8), np.asarray(np.sum(a, dtype=np.int8)), positional=False)
    check(np.mean(x, dtype=np.int64), np.asarray(np.mean(a, dtype=np.int64)), positional=False)


@MESHES
def test_median_is_the_mean_of_the_two_middle_values(shape):
    """``np.median([3, inf])`` was NaN (the quantile's interpolation ``inf - inf * 0.5``) where NumPy averages the
    two middle values: inf."""
    a = np.array([[np.inf, 1.0, np.nan, 4.0], [3.0, np.inf, 2.0, -np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for fn in (np.median, np.nanmedian):
            for axis in (0, 1, None):
                got, ref = fn(pos(a, shape), axis=axis), fn(a, axis=axis)
                np.testing.assert_array_equal(np.asarray(got), ref)


@pytest.mark.parametrize("positional", [False, True], ids=["named", "positional"])
def test_item_takes_numpys_indices(positional):
    mesh = sa.Mesh({"row": 2, "col": 2})
    h = np.arange(30.0).reshape(5, 6)
    x = sa.asarray(h, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    if positional:
        x = xp.asarray(x)
    for args in [(7,), (-1,), (2, 3), ((4, -2),), (np.int64(3),)]:
        assert x.item(*args) == h.item(*args)
    for bad in [(30,), (1, 2, 3), (5, 0)]:
        with pytest.raises(sa.DimensionError, match="item"):
            x.item(*bad)
    with pytest.raises(sa.DTypeError, match="integers"):
        x.item(1.5)


@pytest.mark.parametrize("kw", [{"axis": 0}, {"axis": 1}, {}, {"axis": (0, 1)}, {"axis": -1}], ids=str)
def test_named_np_flip_takes_numpys_axis(kw):
    """Named ``np.flip(x, axis=0)`` was refused ("name one dim; got ('i',)") and ``np.flip(x)`` too."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    h = np.arange(12.0).reshape(3, 4)
    x = sa.asarray(h, dims=("i", "j"), mesh=mesh, layout={"i": "row"})
    np.testing.assert_array_equal(np.flip(x, **kw).numpy(), np.flip(h, **kw))


@MESHES
def test_named_ufunc_dtype_picks_numpys_loop(shape):
    """Named ``np.less(x, y, dtype=bool)`` cast both operands to bool before comparing (all False for these
    values), and ``np.add(floats, floats, dtype=np.int8)`` truncated where NumPy refuses the loop: ``dtype=``
    now picks NumPy's loop under ``same_kind`` casting, as the positional path does."""
    a = np.array([1.5, 2.5, -3.7, 0.25])
    b = np.array([2.5, 1.5, -3.0, 0.5])
    x, y = named(a, shape), named(b, shape)
    check(np.less(x, y, dtype=bool), np.less(a, b, dtype=bool), positional=False)
    check(np.add(x, 1, dtype=np.float32), np.add(a, 1, dtype=np.float32), positional=False)
    check(np.sqrt(np.abs(x), dtype=np.float32), np.sqrt(np.abs(a), dtype=np.float32), positional=False)
    check(
        np.rint(named(np.arange(4), shape), dtype=np.float32), np.rint(np.arange(4), dtype=np.float32), positional=False
    )
    for fn in (lambda v: np.add(v, v, dtype=np.int8), lambda v: np.negative(v, dtype=np.int16)):
        with pytest.raises(TypeError):
            fn(a)
        with pytest.raises(sa.DTypeError, match="does not fit these operands"):
            fn(x)


@MESHES
def test_sort_kind_and_split_sections_as_numpy(shape):
    """``np.sort``/``np.argsort`` took any ``kind`` (``"foo"``) and ``kind`` beside ``stable=`` where NumPy raises
    ValueError; ``np.split(x, 2.0)`` raised a bare TypeError where NumPy reads a real count as ``int()`` does."""
    a = np.array([3, 1, 2, 1, 5, 0])
    x = pos(a, shape)
    for kind in ("quicksort", "mergesort", "heapsort", "stable", "Q", "s"):
        check(np.sort(x, kind=kind), np.sort(a, kind=kind))
        check(np.argsort(x, kind="stable" if kind in ("mergesort", "stable", "s") else kind)[:0], np.argsort(a)[:0])
    for bad in ({"kind": "foo"}, {"kind": "quicksort", "stable": True}):
        for f in (np.sort, np.argsort):
            with pytest.raises(ValueError):
                f(a, **bad)
            with pytest.raises(sa.ArgumentError):
                f(x, **bad)
    for sections in (2.0, np.float64(3), 2):
        for f in (np.split, np.array_split):
            got, want = f(x, sections), f(a, sections)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                check(g, w)
    with pytest.raises(ValueError):
        np.split(a, 2.5)
    with pytest.raises(sa.ArgumentError, match="equal division"):
        np.split(x, 2.5)


def test_counts_name_themselves_for_arrays_on_two_meshes():
    """``xp.isin``/``digitize``/``interp`` of arrays on two meshes raised a ``MeshError`` naming ``searchsorted``,
    an op the caller never called; it names the function now."""
    a = xp.asarray([1.0, 2.0, 3.0], device=sa.Mesh({"row": 2}))
    b = xp.asarray([2.0, 2.5], device=sa.Mesh({"col": 2}))
    for name, call in (("isin", lambda: xp.isin(a, b)), ("digitize", lambda: xp.digitize(a, b)),
                       ("interp", lambda: xp.interp(a, b, b))):
        with pytest.raises(sa.MeshError, match=f"^{name}: "):
            call()
