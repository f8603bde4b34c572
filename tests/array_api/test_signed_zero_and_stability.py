"""Results that must match NumPy bit for bit where a sum or a sort could blur them, on every test mesh with
uneven and empty blocks: the dtype of ``nanmean``/``nanvar``/``nanstd`` (float32 stays float32), the sign of
zero through ``take``, integer indexing, ``take_along_axis``, the cumulative scans and ``pad``'s edges, the
stability of ``sort`` (-0.0 and 0.0 are equal: they keep their order, ascending and descending), and ``diff``
of bools, of orders beyond the axis and with scalar ``prepend``/``append``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.ops.reduction.scan import scan

MESHES = [{"row": 2, "col": 2}, {"x": 4}, {"x": 3, "y": 2}, {"x": 1}]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m):
        yield m


def same(got, expected):
    """``got`` (an array of the namespace) is ``expected``: shape, dtype, values (NaN too) and signs of zero."""
    expected = np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype, expected.dtype)
    g = got.numpy()
    np.testing.assert_array_equal(g, expected)
    for part in (np.real, np.imag) if expected.dtype.kind == "c" else (np.real,):
        np.testing.assert_array_equal(np.signbit(part(g)), np.signbit(part(expected)), err_msg="sign of zero")


def zeros_data(shape, dtype=np.float64, seed=0):
    """-0.0, 0.0 and a few ones (complex: every sign of both parts)."""
    rng = np.random.default_rng(seed)
    a = rng.choice(np.array([-0.0, 0.0, -0.0, 1.0]), shape)
    if np.dtype(dtype).kind == "c":
        return (a + 1j * rng.choice(np.array([-0.0, 0.0, 2.0]), shape)).astype(dtype)
    return a.astype(dtype)


# ------------------------------------------------------------- nanmean, nanvar, nanstd keep the precision
NAN_DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int32]


def nan_data(shape, dtype):
    rng = np.random.default_rng(1)
    a = rng.normal(size=shape) + (1j * rng.normal(size=shape) if np.dtype(dtype).kind == "c" else 0)
    if np.dtype(dtype).kind in "fc":
        a[rng.random(shape) < 0.3] = np.nan
        if len(shape) == 2 and a.size:
            a[:, -1] = np.nan  # an all-NaN slice
    else:
        a = a * 10
    return a.astype(dtype)


@pytest.mark.parametrize("name", ["nanmean", "nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", NAN_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(7, 5), (5,), (0, 3), (3, 0)], ids=str)
def test_nan_mean_var_std_dtype_and_values_match_numpy(mesh, name, dtype, shape):
    a = nan_data(shape, dtype)
    rtol = {np.float16: 2e-3, np.float32: 2e-6, np.complex64: 2e-6}.get(dtype, 1e-12)
    for axis in (None, 0, -1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(np, name)(a, axis=axis)
            got = getattr(xp, name)(xp.asarray(a), axis=axis)
        assert got.shape == expected.shape and got.dtype == expected.dtype, (axis, got.dtype, expected.dtype)
        np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, equal_nan=True)


def test_nanvar_fractional_correction_and_one_count(mesh):
    a = nan_data((9, 6), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ddof in (0, 1, 1.5, 3):
            expected = np.nanvar(a, axis=0, ddof=ddof)
            got = xp.nanvar(xp.asarray(a), axis=0, correction=ddof)
            assert got.dtype == expected.dtype == np.float32
            np.testing.assert_allclose(got.numpy(), expected, rtol=2e-6, equal_nan=True)
    x = xp.asarray(a)
    with sa.comm_log() as log:
        xp.nanvar(x, axis=0).numpy()
    if mesh.size > 1:  # the count is reduced once, for the mean and the degrees of freedom
        assert [r.op for r in log.records] == ["allreduce"] * 3, log.records


# ------------------------------------------------------------------------- the sign of zero through a take
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [7, 6, 1])
def test_take_and_integer_indexing_keep_negative_zero(mesh, dtype, n):
    a = zeros_data((n,), dtype)
    idx = np.random.default_rng(2).integers(0, n, 9)
    for ids in (idx, idx[:0], np.array([n - 1, 0])):
        x = xp.asarray(a)
        same(xp.take(x, xp.asarray(ids)), np.take(a, ids))
        same(x[xp.asarray(ids)], a[ids])
        same(x[ids], a[ids])
    same(xp.asarray(-np.zeros(6))[np.array([4])], -np.zeros(1))


@pytest.mark.parametrize("shape", [(7, 5), (4, 1), (0, 3)], ids=str)
def test_take_along_axis_keeps_negative_zero(mesh, shape):
    a = zeros_data(shape)
    rng = np.random.default_rng(3)
    for axis in (0, 1):
        if shape[axis] == 0:
            continue
        ids_shape = (3, shape[1]) if axis == 0 else (shape[0], 4)
        ids = rng.integers(0, shape[axis], ids_shape)
        same(xp.take_along_axis(xp.asarray(a), xp.asarray(ids), axis=axis), np.take_along_axis(a, ids, axis=axis))
        same(
            xp.take(xp.asarray(a), xp.asarray(ids[0] if axis == 0 else ids[:, 0]), axis=axis),
            np.take(a, ids[0] if axis == 0 else ids[:, 0], axis=axis),
        )


# ------------------------------------------------------------------------ the sign of zero through a scan
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(6,), (3,), (1,), (0,), (7, 3), (2, 5)], ids=str)
def test_cumulative_sum_and_prod_keep_negative_zero(mesh, dtype, shape):
    """A split scan multiplies a block's products by the earlier blocks' product: for real dtypes the sign of a
    zero product does not depend on that grouping; for complex ones it does, so only their values are NumPy's."""
    for a in (-np.zeros(shape, dtype), zeros_data(shape, dtype)):
        x = xp.asarray(a)
        for axis in range(len(shape)):
            for initial in (False, True):
                same(
                    xp.cumulative_sum(x, axis=axis, include_initial=initial),
                    np.cumulative_sum(a, axis=axis, include_initial=initial),
                )
                got = xp.cumulative_prod(x, axis=axis, include_initial=initial)
                expected = np.cumulative_prod(a, axis=axis, include_initial=initial)
                if np.dtype(dtype).kind == "c":
                    assert got.dtype == expected.dtype
                    np.testing.assert_array_equal(got.numpy(), expected)
                else:
                    same(got, expected)


@pytest.mark.parametrize("n", [6, 3, 0])
def test_reverse_scan_keeps_negative_zero(mesh, n):
    for a in (-np.zeros(n), zeros_data((n,), seed=4)):
        x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": mesh.axis_names[0]})  # blocks 2,2,2,0 / 1,1,1,0 ...
        got = scan(x, "t", "sum", reverse=True)
        expected = np.flip(np.cumsum(np.flip(a)))
        np.testing.assert_array_equal(got.numpy(), expected)
        np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(expected))


@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("shape", [(6,), (5, 3), (1, 4)], ids=str)
def test_pad_edges_keep_negative_zero(mesh, mode, shape):
    for a in (-np.zeros(shape), zeros_data(shape, seed=5)):
        for width in (1, (2, 3), 7):
            try:
                expected = np.pad(a, width, mode=mode)
            except ValueError:  # reflect of a length-1 axis
                continue
            same(xp.pad(xp.asarray(a), width, mode=mode), expected)


# ------------------------------------------------------------------------------------- a stable sort
def stable_descending(a, axis):
    """The standard's stable descending order: the reversed stable ascending order of the reversed array."""
    return np.flip(np.sort(np.flip(a, axis), axis=axis, kind="stable"), axis)


def check_sorted(a, axis):
    x = xp.asarray(a)
    for descending, expected in ((False, np.sort(a, axis=axis, kind="stable")), (True, stable_descending(a, axis))):
        got = xp.sort(x, axis=axis, descending=descending)
        same(got, expected)
        same(xp.take_along_axis(x, xp.argsort(x, axis=axis, descending=descending), axis=axis), expected)


def test_sort_of_the_report():
    """A -0.0 keeps its place among the zeros; descending, equal values keep their order (NaN first)."""
    with sa.default_mesh(sa.Mesh({"x": 1})):
        same(xp.sort(xp.asarray(np.array([-0.0, 1, 1, 1, 0, 0, 1, 1, 0]))), [-0.0, 0, 0, 0, 1, 1, 1, 1, 1])
        same(xp.sort(xp.asarray(np.array([-0.0, 1.0, 0.0])), descending=True), [1.0, -0.0, 0.0])
        same(xp.sort(xp.asarray(np.array([np.nan, -0.0, 2.0, 0.0])), descending=True), [np.nan, 2.0, -0.0, 0.0])
        same(xp.sort(xp.asarray(np.array([np.nan, -0.0, 2.0, 0.0]))), [-0.0, 0.0, 2.0, np.nan])


def signed_zeros_and_nan(shape, dtype=np.float64):
    a = zeros_data(shape, dtype, seed=6)
    a.flat[::7] = np.nan
    return a


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(40, 9), (9, 40), (7, 3), (3, 0)], ids=str)
def test_sort_is_stable_for_signed_zeros(mesh, dtype, shape):
    a = signed_zeros_and_nan(shape, dtype)
    for axis in (0, 1, -1):
        check_sorted(a, axis)


def test_sample_sort_is_stable_for_signed_zeros():
    with sa.default_mesh(sa.Mesh({"x": 4})):
        check_sorted(signed_zeros_and_nan((1000,)), 0)


# ------------------------------------------------------------------------------------------------ diff
def test_diff_of_bools_is_not_equal(mesh):
    a = np.array([[True, False, False, True, True], [False, False, True, True, False], [True] * 5])
    for axis in (0, 1):
        for n in (1, 2, 3, 6):
            same(xp.diff(xp.asarray(a), axis=axis, n=n), np.diff(a, n=n, axis=axis))
    same(np.diff(xp.asarray(a[0])), np.diff(a[0]))  # NumPy's function on the namespace's array


@pytest.mark.parametrize("shape", [(3, 4), (7,), (0, 2), (2, 0)], ids=str)
def test_diff_beyond_the_axis_is_empty(mesh, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    for axis in range(len(shape)):
        for n in (0, 1, shape[axis], shape[axis] + 1, shape[axis] + 5):
            same(xp.diff(xp.asarray(a), axis=axis, n=n), np.diff(a, n=n, axis=axis))
    with pytest.raises(sa.ArgumentError, match=r"n \(the order\)"):
        xp.diff(xp.asarray(a), n=-1)


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_diff_scalar_prepend_and_append_promote_as_numpy(mesh, dtype):
    a = (np.arange(15).reshape(5, 3) ** 2 % 7).astype(dtype)
    for pre, app in ((0, 1.5), (True, None), (None, 300), (-0.0, 2j), (np.float32(1.5), np.int8(3))):
        kw = {k: v for k, v in (("prepend", pre), ("append", app)) if v is not None}
        for axis in (0, 1, -1):
            same(xp.diff(xp.asarray(a), axis=axis, **kw), np.diff(a, axis=axis, **kw))
            same(xp.diff(xp.asarray(a), axis=axis, n=2, **kw), np.diff(a, n=2, axis=axis, **kw))
    zero_d = np.array(4.0)
    same(xp.diff(xp.asarray(a), axis=0, prepend=xp.asarray(zero_d)), np.diff(a, axis=0, prepend=zero_d))
    same(xp.diff(xp.asarray(a), n=0, prepend=1), np.diff(a, n=0, prepend=1))  # n=0: x itself, as NumPy


def test_stable_sort_puts_equal_floats_back_in_input_order():
    """``samplesort.stable_sort`` (NumPy's quicksort, then the runs of zeros and of NaNs in input order) against
    NumPy's timsort, bit for bit: signs of zeros, NaN signs and payloads, along every axis, float32 and float64."""
    from shardarray.ops.sorting.samplesort import stable_sort

    rng = np.random.default_rng(11)
    nan2 = np.frombuffer(np.uint64(0x7FF8_0000_0000_0001).tobytes(), np.float64)[0]  # another NaN payload
    pool = np.array([0.0, -0.0, 1.0, -1.0, np.nan, -np.nan, nan2, 2.0])
    for _ in range(200):
        a = rng.choice(pool, size=(3, int(rng.integers(1, 30))))
        for arr in (a, a.astype(np.float32), a[0]):
            for axis in range(-1, arr.ndim - 1):
                want = np.sort(arr, axis=axis, kind="stable")
                got = stable_sort(np, arr, axis)
                assert got.tobytes() == want.tobytes(), (arr, axis)
