"""The namespace's NumPy extras beyond the standard (pad, nan-aware reductions and scans, quantile,
sliding windows, transpose) against NumPy on uneven and empty blocks, with no gather; capabilities."""

import warnings

import numpy as np
import pytest
from gradcheck import check_grad

import shardarray as sa
import shardarray.array_api as xp

SHAPES = [(5,), (7, 3), (3, 0), (1, 4), (6, 5)]  # blocks 3/2 and 4/3 over 'row', empty and length-1 axes
MODES = ["constant", "edge", "reflect", "symmetric", "wrap"]


@pytest.fixture
def mesh():
    m = sa.Mesh({"row": 2, "col": 2})
    with sa.default_mesh(m):
        yield m


def _widths(shape):
    return [1, (2, 3), ((0, 8), (3, 1)) if len(shape) == 2 else (8, 9)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_pad_matches_numpy_without_a_gather(mesh, shape, mode):
    a = np.random.default_rng(0).normal(size=shape)
    for w in _widths(shape):
        try:
            expected = np.pad(a, w, mode=mode)
        except ValueError:
            with pytest.raises(ValueError):
                xp.pad(xp.asarray(a), w, mode=mode)
            continue
        with sa.comm_log() as log:
            got = xp.pad(xp.asarray(a), w, mode=mode)
        assert isinstance(got, xp.Array)
        np.testing.assert_array_equal(got.numpy(), expected)
        assert not [r for r in log.records if r.op == "allgather"], (w, log.records)
        assert got.layout.get(got.dims[0]) == ("row",)  # the padded axis stays split


def test_pad_constant_values_per_axis_and_ints(mesh):
    a = np.arange(12).reshape(3, 4)
    cv = ((1, 2), (3, 4))
    np.testing.assert_array_equal(
        xp.pad(xp.asarray(a), 1, constant_values=cv).numpy(), np.pad(a, 1, constant_values=cv)
    )
    b = np.array([True, False, True])
    np.testing.assert_array_equal(xp.pad(xp.asarray(b), 2, mode="edge").numpy(), np.pad(b, 2, mode="edge"))


def test_pad_bad_input_is_typed(mesh):
    x = xp.asarray([1.0, 2.0])
    with pytest.raises(sa.ArgumentError, match=r"mode 'bogus'"):
        xp.pad(x, 1, mode="bogus")
    with pytest.raises(sa.ArgumentError, match=r"non-negative"):
        xp.pad(x, -1)
    with pytest.raises(sa.ArgumentError, match=r"constant_values"):
        xp.pad(x, 1, mode="edge", constant_values=3)
    with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
        xp.pad(np.ones(3), 1)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_gradient(mesh, mode):
    a = xp.asarray(np.random.default_rng(1).normal(size=(5, 3)))
    w = xp.asarray(np.random.default_rng(2).normal(size=(9, 4)))
    check_grad(lambda p: xp.sum(xp.pad(p["a"], ((1, 3), (0, 1)), mode=mode) * w), {"a": a})


NAN_REDUCTIONS = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"]


def _nan_data(shape=(9, 6)):
    a = np.random.default_rng(3).normal(size=shape)
    a[1, 2] = np.nan
    a[:, 4] = np.nan
    return a


@pytest.mark.parametrize("name", NAN_REDUCTIONS)
def test_nan_reductions_match_numpy(mesh, name):
    a = _nan_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for axis in (None, 0, 1, (0, 1)):
            for keepdims in (False, True):
                expected = getattr(np, name)(a, axis=axis, keepdims=keepdims)
                with sa.comm_log() as log:
                    got = getattr(xp, name)(xp.asarray(a), axis=axis, keepdims=keepdims)
                assert got.shape == expected.shape and got.dtype == expected.dtype
                np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, equal_nan=True)
                assert not [r for r in log.records if r.op == "allgather" and r.elements > 6]


def test_nan_reductions_of_ints_and_ddof(mesh):
    i = np.arange(10).reshape(5, 2)
    for name in ("nansum", "nanmean", "nanmax"):
        e = getattr(np, name)(i, axis=0)
        g = getattr(xp, name)(xp.asarray(i), axis=0)
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g.numpy(), e)
    a = _nan_data()
    a[0, 4] = 1.0  # one value: ddof=1 leaves no degrees of freedom (NaN, as NumPy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.nanvar(a, axis=0, ddof=1)
    got = xp.nanvar(xp.asarray(a), axis=0, ddof=1)
    np.testing.assert_allclose(got.numpy(), expected, equal_nan=True)
    with pytest.raises(sa.ArgumentError, match=r"out="):
        xp.nansum(xp.asarray(a), out=np.zeros(6))


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
def test_nan_scans_match_numpy(mesh, name):
    a = _nan_data((7, 5))
    for axis in (None, 0, 1):
        expected = getattr(np, name)(a, axis=axis)
        np.testing.assert_allclose(getattr(xp, name)(xp.asarray(a), axis=axis).numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nan_arg_searches_match_numpy(mesh, name):
    a = _nan_data()
    a[:, 4] = 0.5
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(
            getattr(xp, name)(xp.asarray(a), axis=axis).numpy(), getattr(np, name)(a, axis=axis)
        )
    a[:, 4] = np.nan
    with pytest.raises(ValueError, match="All-NaN"):
        getattr(xp, name)(xp.asarray(a), axis=0)


def test_nan_gradients(mesh):
    a = xp.asarray(_nan_data((5, 6)))
    w = xp.asarray(np.random.default_rng(4).normal(size=(6,)))
    check_grad(lambda p: xp.sum(xp.nansum(p["a"], axis=0) * w) + xp.sum(xp.nanmean(p["a"], axis=1)), {"a": a})


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_matches_numpy(mesh, name):
    a = _nan_data()
    if name == "quantile":
        a[:, 4] = 1.0
    methods = ["linear", "lower", "higher", "midpoint"] + (["nearest", "hazen"] if name == "quantile" else [])
    for method in methods:
        for axis in (None, 0, 1, (0, 1)):
            for q in (0.3, [0.0, 0.25, 1.0]):
                expected = getattr(np, name)(a, q, axis=axis, method=method, keepdims=True)
                got = getattr(xp, name)(xp.asarray(a), q, axis=axis, method=method, keepdims=True)
                assert got.shape == expected.shape
                np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, equal_nan=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(xp.median(xp.asarray(a), axis=0).numpy(), np.median(a, axis=0), equal_nan=True)
        np.testing.assert_allclose(xp.nanmedian(xp.asarray(a), axis=1).numpy(), np.nanmedian(a, axis=1), equal_nan=True)
    with pytest.raises(sa.ArgumentError, match="range"):
        xp.quantile(xp.asarray(a), 1.5)


@pytest.mark.parametrize("name", ["quantile", "nanquantile", "percentile"])
def test_quantile_of_booleans_as_numpy(mesh, name):
    """Booleans: the picking methods, and integer quantiles with "linear" (0 and 1: the extremes), give booleans as
    NumPy's do; the interpolating methods raise a typed error where NumPy raises TypeError (they computed floats).
    ``percentile`` divides ``q`` by 100, so its integer ``q`` interpolates (NumPy raises there too)."""
    b = np.array([True, False, True, True, False])
    picks = [("lower", 0.3), ("nearest", [0.2, 0.9]), ("inverted_cdf", 0.5)]
    exact = [("linear", [0, 1]), ("linear", 1), ("linear", np.array([0, 1]))]
    refused = [("linear", 0.5), ("midpoint", 0.25), ("hazen", [0.5]), ("linear", 0.0)]
    if name == "percentile":
        picks = [(m, np.multiply(q, 100).tolist()) for m, q in picks]
        refused += [(m, np.multiply(q, 100).tolist()) for m, q in exact]
        exact = []
    for method, q in picks + exact:
        expected = getattr(np, name)(b, q, method=method)
        got = getattr(xp, name)(xp.asarray(b), q, method=method).numpy()
        assert got.dtype == expected.dtype and np.array_equal(got, expected), (method, q)
    for method, q in refused:
        with pytest.raises(TypeError):
            getattr(np, name)(b, q, method=method)
        with pytest.raises(sa.DTypeError, match="booleans cannot be interpolated"):
            getattr(xp, name)(xp.asarray(b), q, method=method)


def test_sliding_window_view_and_transpose(mesh):
    a = np.arange(35.0).reshape(7, 5)
    swv = np.lib.stride_tricks.sliding_window_view
    for w, axis in ((3, 0), ((2, 2), (0, 1)), (5, 1)):
        got = xp.lib.stride_tricks.sliding_window_view(xp.asarray(a), w, axis=axis)
        np.testing.assert_array_equal(got.numpy(), swv(a, w, axis=axis))
    np.testing.assert_array_equal(xp.transpose(xp.asarray(a)).numpy(), a.T)
    np.testing.assert_array_equal(
        xp.transpose(xp.asarray(a[None]), (2, 0, 1)).numpy(), np.transpose(a[None], (2, 0, 1))
    )


def test_capabilities_are_truthful(mesh):
    caps = xp.__array_namespace_info__().capabilities()
    assert caps["boolean indexing"] and caps["data-dependent shapes"]
    a = np.array([3.0, -1.0, 2.0, -5.0, 3.0, 0.0, 7.0])
    x = xp.asarray(a)
    np.testing.assert_array_equal(x[x > 0].numpy(), a[a > 0])
    np.testing.assert_array_equal(xp.nonzero(x)[0].numpy(), np.nonzero(a)[0])
    np.testing.assert_array_equal(xp.unique_values(x).numpy(), np.unique(a))
    y = xp.asarray(a)
    y[y < 0] = 0.0
    np.testing.assert_array_equal(y.numpy(), np.where(a < 0, 0.0, a))


def test_messages_name_positional_functions_and_reshard(mesh):
    x = xp.asarray([1.0, 2.0])
    with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
        sa.einsum(x, np.ones(2))
    other = sa.Mesh({"a": 2})
    with pytest.raises(sa.MeshError, match=r"sa\.reshard\(x, mesh, layout\)"):
        x + xp.asarray([1.0, 2.0], device=other)
