"""Regressions and a small differential fuzz, against NumPy, of round 11's NumPy-protocol gaps on positional arrays:
``np.mean(dtype=<int>)`` summing in that dtype, the empty-slice warnings of ``where=`` statistics and of
``np.median``, ``np.nanargmax`` of a 0-d array with ``axis=0``, ``np.average``'s float dtypes (bfloat16),
a float ``axis`` (NumPy's TypeError), NumPy scalars in the stackers, ``np.logspace``/``np.geomspace`` of arrays,
``np.meshgrid(sparse=True)``, ``np.pad``'s statistic and ``linear_ramp`` modes and ``reflect_type='odd'`` (no
gather), and ``xp.asarray(x, device=other_mesh)`` moving the array. Meshes 1, 2x2, 4, 2x2x2, 3x2 with random
layouts (uneven and empty blocks).

``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

ENV = "FUZZ11_EXAMPLES"


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout."""
    if a.ndim == 0:
        return xp.asarray(a, device=mesh)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), xp.Array)


def _same(got, want, exact: bool = True) -> None:
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6, atol=1e-12)


# ------------------------------------------------------------------------------------------ 1. dtype= of mean


@fuzz(40, ENV)
@given(data=st.data(), mesh=meshes())
def test_integer_dtype_reductions_as_numpy(data, mesh):
    shape = data.draw(st.sampled_from([(5,), (3, 4), (0, 3), (7, 1)]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a = rng.integers(-300, 300, shape)
    x = data.draw(placed(a, mesh))
    dtype = data.draw(st.sampled_from([np.uint8, np.int8, np.int16, np.int64]))
    axis = data.draw(st.sampled_from([None, 0, -1]))
    keepdims = data.draw(st.booleans())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if a.size:
            _same(
                np.mean(x, axis=axis, dtype=dtype, keepdims=keepdims),
                np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims),
            )
            mask = rng.integers(0, 2, shape).astype(bool)
            mask.flat[0] = True
            if axis is None or mask.any(axis=axis).all():
                got = np.mean(x, axis=axis, dtype=dtype, where=xp.asarray(mask, device=mesh))
                _same(got, np.mean(a, axis=axis, dtype=dtype, where=mask))
        _same(
            np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims), np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
        )
        if a.size:
            for fn in (np.var, np.nanvar):
                _same(
                    fn(x, axis=axis, dtype=dtype, keepdims=keepdims), fn(a, axis=axis, dtype=dtype, keepdims=keepdims)
                )
            _same(np.std(x, dtype=dtype), np.std(a, dtype=dtype))
        _same(np.prod(x, axis=axis, dtype=dtype), np.prod(a, axis=axis, dtype=dtype))
        _same(np.cumsum(x, axis=axis, dtype=dtype), np.cumsum(a, axis=axis, dtype=dtype))


def test_mean_uint8_sums_in_uint8():
    x = xp.asarray(np.array([200, 100]), device=_mesh({"a": 2}))
    got = np.mean(x, dtype=np.uint8)
    assert got.dtype == np.uint8 and int(got) == 22 == np.mean(np.array([200, 100]), dtype=np.uint8)


# ------------------------------------------------------------------------------------------ 2, 5. warnings


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (np.mean, "Mean of empty slice"),
        (np.nanmean, "Mean of empty slice"),
        (np.var, "Degrees of freedom <= 0"),
        (np.std, "Degrees of freedom <= 0"),
        (np.nanvar, "Degrees of freedom <= 0"),
    ],
)
def test_where_statistics_warn_on_an_empty_slice(fn, message):
    a = np.arange(6.0).reshape(2, 3)
    mask = np.array([[True, False, False], [False, False, False]])
    x = xp.asarray(a, device=_mesh({"row": 2, "col": 2}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(a, axis=1, where=mask)
    with pytest.warns(RuntimeWarning, match=message):
        got = fn(x, axis=1, where=xp.asarray(mask, device=x.device))
    np.testing.assert_array_equal(np.asarray(got), want)


def test_std_of_an_array_result_in_an_integer_dtype_is_a_type_error():
    x = xp.asarray(np.arange(6).reshape(2, 3), device=_mesh({"row": 2, "col": 2}))
    with pytest.raises(TypeError):
        np.std(np.arange(6).reshape(2, 3), axis=1, dtype=np.int32)
    with pytest.raises(sa.DTypeError, match="square root"):
        np.std(x, axis=1, dtype=np.int32)


@pytest.mark.parametrize("fn", [np.var, np.nanvar, np.std, np.nanstd])
@pytest.mark.parametrize("dtype", ["float64", "int8"])
def test_where_variance_without_degrees_of_freedom(fn, dtype):
    """A slice with ``ddof`` entries is NumPy's ``ss / 0``: inf where ``ss > 0`` (was NaN: the partial sums were
    divided by 0 before they were added), NaN for the nan-functions of floats."""
    a = np.array([[1, 3, 0, 2], [1, 1, 5, 1], [2, 0, 0, 4]], dtype=dtype)
    mask = np.array([[True, True, False, False], [True, True, True, False], [True, True, False, True]])
    x = xp.asarray(a, device=_mesh({"row": 2, "col": 2}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(a, axis=1, ddof=2, where=mask)
        got = fn(x, axis=1, ddof=2, where=xp.asarray(mask, device=x.device))
    _same(got, want, exact=False)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_median_of_no_slices_warns(dtype):
    x = xp.asarray(np.zeros((0, 0), dtype=dtype), device=_mesh({"row": 2, "col": 2}))
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = np.median(x, axis=1)
    assert got.shape == (0,) and got.dtype == np.median(np.zeros((0, 0), dtype=dtype), axis=1).dtype


# ------------------------------------------------------------------------------------------ 3, 4, 6, 7


@pytest.mark.parametrize("fn", [np.nanargmax, np.nanargmin, np.argmax])
def test_nanarg_of_a_0d_array_with_axis_0(fn):
    mesh = _mesh({"a": 2})
    got = fn(xp.asarray(3.0, device=mesh), axis=0)
    assert got.shape == () and int(got) == 0
    if fn is not np.argmax:
        with pytest.raises(ValueError, match="All-NaN"):
            fn(xp.asarray(np.nan, device=mesh), axis=0)


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16, np.float32, np.int16])
def test_average_keeps_float_dtypes(dtype):
    a = np.array([1.0, 2.0, 4.0]).astype(dtype)
    x = xp.asarray(a, device=_mesh({"a": 2}))
    assert np.average(x).dtype == np.average(a).dtype
    assert np.average(x, weights=x).dtype == np.average(a, weights=a).dtype


@pytest.mark.parametrize(("adt", "wdt"), [("int64", "int64"), ("float16", "int64"), ("float32", "float16")])
def test_weighted_average_dtypes_as_numpy(adt, wdt):
    a, w = np.array([[1, 2, 4], [3, 0, 1]], dtype=adt), np.array([[1, 2, 3], [1, 1, 2]], dtype=wdt)
    mesh = _mesh({"row": 2, "col": 2})
    got = np.average(xp.asarray(a, device=mesh), axis=0, weights=xp.asarray(w, device=mesh), returned=True)
    for g, want in zip(got, np.average(a, axis=0, weights=w, returned=True)):
        _same(g, want, exact=False)


@pytest.mark.parametrize("fn", [np.var, np.std, np.nanvar, np.nanstd])
def test_variance_with_a_given_mean(fn):
    a = np.arange(12.0).reshape(3, 4) ** 1.5
    mean = np.mean(a, axis=1, keepdims=True)
    x = xp.asarray(a, device=_mesh({"row": 2, "col": 2}))
    _same(fn(x, axis=1, ddof=1, mean=xp.asarray(mean, device=x.device)), fn(a, axis=1, ddof=1, mean=mean), False)


@pytest.mark.parametrize(
    "fn", [np.sum, np.mean, np.argmax, np.cumsum, xp.sum, lambda x, axis: xp.vecdot(x, x, axis=axis)]
)
def test_a_float_axis_is_a_type_error(fn):
    x = xp.asarray(np.ones((2, 3)), device=_mesh({"a": 2}))
    with pytest.raises(TypeError, match="axis must be an integer"):
        fn(x, axis=1.0)
    with pytest.raises(sa.DTypeError):
        fn(x, axis=1.0)


@pytest.mark.parametrize("stacker", [np.hstack, np.vstack, np.dstack, np.column_stack, np.stack])
@pytest.mark.parametrize("other", [np.int16(-1), np.array(-1, dtype=np.int16), np.float32(2.5)])
def test_stackers_keep_numpy_scalar_dtypes(stacker, other):
    mesh = _mesh({"a": 2})
    got = stacker((xp.asarray(np.int16(1), device=mesh), other))
    want = stacker((np.int16(1), other))
    _same(got, want)


def test_stack_and_concatenate_take_python_and_numpy_scalars():
    mesh = _mesh({"a": 2})
    _same(np.stack((xp.asarray(np.int8(1), device=mesh), 2)), np.stack((np.int8(1), 2)))
    _same(np.stack((xp.asarray(np.float32(1), device=mesh), np.float32(2))), np.stack((np.float32(1), np.float32(2))))


# ------------------------------------------------------------------------------------------ 8, 9


@fuzz(30, ENV)
@given(data=st.data(), mesh=meshes())
def test_logspace_geomspace_of_arrays(data, mesh):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = data.draw(st.sampled_from([(3,), (2, 3), ()]))
    dt = data.draw(st.sampled_from([np.float64, np.float32]))
    lo = (rng.integers(1, 5, shape) * data.draw(st.sampled_from([1, -1]))).astype(dt)
    hi = (lo * rng.integers(2, 9, shape)).astype(dt)
    start, stop = data.draw(placed(np.asarray(lo), mesh)), data.draw(placed(np.asarray(hi), mesh))
    num = data.draw(st.sampled_from([0, 1, 2, 5]))
    endpoint = data.draw(st.booleans())
    axis = data.draw(st.sampled_from([0, -1]))
    kw = {"num": num, "endpoint": endpoint, "axis": axis}
    base = data.draw(st.sampled_from([10.0, 2, np.float32(3.0)]))
    _same(np.logspace(start, stop, base=base, **kw), np.logspace(lo, hi, base=base, **kw), exact=False)
    _same(np.geomspace(start, stop, **kw), np.geomspace(lo, hi, **kw), exact=False)
    _same(np.geomspace(start, stop, dtype=np.int64, **kw), np.geomspace(lo, hi, dtype=np.int64, **kw))


def test_geomspace_zero_is_a_value_error():
    x = xp.asarray(np.array([0.0, 1.0]), device=_mesh({"a": 2}))
    with pytest.raises(ValueError, match="cannot include zero"):
        np.geomspace(x, 8.0, 3)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_meshgrid_sparse(indexing, n):
    mesh = _mesh({"row": 2, "col": 2})
    host = [np.arange(k + 2.0) for k in range(n)]
    got = np.meshgrid(*(xp.asarray(h, device=mesh) for h in host), sparse=True, indexing=indexing)
    want = np.meshgrid(*host, sparse=True, indexing=indexing)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)
    for g, w in zip(np.meshgrid(*(xp.asarray(h, device=mesh) for h in host), copy=False), np.meshgrid(*host)):
        _same(g, w)


# ------------------------------------------------------------------------------------------ 10. np.pad


_PAD_CASES = [
    ("mean", {}),
    ("mean", {"stat_length": 2}),
    ("maximum", {}),
    ("maximum", {"stat_length": (1, 3)}),
    ("minimum", {"stat_length": 2}),
    ("median", {}),
    ("median", {"stat_length": (2, 1)}),
    ("linear_ramp", {}),
    ("linear_ramp", {"end_values": (5, -2)}),
    ("linear_ramp", {"end_values": 1.5}),
    ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {"reflect_type": "odd"}),
]


@fuzz(50, ENV)
@given(data=st.data(), mesh=meshes())
def test_pad_new_modes_as_numpy_without_gather(data, mesh):
    shape = data.draw(st.sampled_from([(5,), (3, 4), (1, 3), (7, 2), (2, 0)]))
    dt = data.draw(st.sampled_from(["float64", "float32", "int64", "uint8"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a = rng.integers(0, 9, shape).astype(dt)
    a = (a / 3).astype(dt) if dt.startswith("float") else a
    x = data.draw(placed(a, mesh))
    width = data.draw(st.sampled_from([1, (2, 3), 6, ((0, 4), (2, 1))[: len(shape)] if len(shape) == 2 else 9]))
    mode, kw = data.draw(st.sampled_from(_PAD_CASES))
    try:
        want = np.pad(a, width, mode=mode, **kw)
    except ValueError:
        with pytest.raises(ValueError):
            np.pad(x, width, mode=mode, **kw)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        got = np.pad(x, width, mode=mode, **kw)
    _same(got, want, exact=a.dtype.kind != "f")


def test_pad_mode_errors():
    x = xp.asarray(np.arange(4.0), device=_mesh({"a": 2}))
    with pytest.raises(ValueError, match="stat_length of 0"):
        np.pad(x, 1, mode="maximum", stat_length=0)
    with pytest.raises(sa.ArgumentError, match="end_values"):
        np.pad(x, 1, mode="mean", end_values=3)
    with pytest.raises(sa.ArgumentError, match="reflect_type"):
        np.pad(x, 1, mode="reflect", reflect_type="sideways")


# ------------------------------------------------------------------------------------------ 11. asarray(device=)


def test_asarray_moves_an_array_to_another_mesh():
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=_mesh({"row": 2, "col": 2}))
    other = _mesh({"a": 4})
    y = xp.asarray(x, device=other)
    assert y.device == other and y.layout == {"dim0": ("a",)} and isinstance(y, xp.Array)
    _same(y, a)
    z = xp.asarray(x, device=other, dtype=xp.float32, copy=True)
    assert z.device == other and z.dtype == np.float32
    _same(z, a.astype(np.float32))
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(x, device=other, copy=False)
    assert xp.asarray(x, device=x.device, copy=False) is not None
