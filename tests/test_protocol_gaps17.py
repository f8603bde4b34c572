"""NumPy's protocol on positional arrays, round-17 gaps: ``np.average`` of nothing raises NumPy's
``ZeroDivisionError`` (``sa.DivisionByZeroError``), ``np.ldexp.at`` applies integer exponents, the float16 moments
NumPy computes in float16 (``np.var``/``std``/``nanvar``/``nanstd``/``nanmean``: a deviation beyond 256 squares
to inf) and the mean of integers divided once, after the sum; each against NumPy on the gathered value on the test
meshes (1, 2x2, 4, 2x2x2, 3x2) with uneven and empty blocks.

``FUZZ17_EXAMPLES=<n>`` runs each fuzzer with ``n`` examples.
"""

from __future__ import annotations

import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

ENV = "FUZZ17_EXAMPLES"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SHAPES = st.lists(st.integers(0, 5), min_size=1, max_size=2).map(tuple)


def _placed(data, mesh, h):
    dims = tuple(f"d{i}" for i in range(h.ndim))
    return xp.asarray(sa.asarray(h, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims))))


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def _axis(data, ndim):
    return data.draw(st.sampled_from([None, *range(-ndim, ndim)]))


# ----------------------------------------------------------------------------------------- 1. np.average of nothing


def test_average_of_nothing_is_numpys_zero_division_error():
    """The old code raised ``ArgumentError``, which ``except ZeroDivisionError`` (NumPy's) did not catch."""
    assert issubclass(sa.DivisionByZeroError, ZeroDivisionError)
    assert issubclass(sa.DivisionByZeroError, sa.ArgumentError)
    assert issubclass(sa.DivisionByZeroError, ValueError)
    mesh = cached_mesh({"row": 2, "col": 2})
    cases = [  # (a, axis, weights): each a ZeroDivisionError in NumPy
        (np.array([1.0, 2.0]), None, np.array([1.0, -1.0])),
        (np.ones((3, 2)), 0, np.array([[1.0, 1.0], [-1.0, 0.0], [0.0, 2.0]])),
        (np.zeros((2, 0)), 0, np.array([1.0, -1.0])),  # (1-D weights: their sum is checked, x empty)
        (np.zeros(0), None, np.zeros(0)),
        (np.zeros((0, 3)), 1, None),  # (a kept axis is empty: 0 / 0 elements per result)
        (np.arange(4), None, np.array([2, -2, 1, -1])),  # (integer data and weights)
    ]
    for a, axis, w in cases:
        with pytest.raises(ZeroDivisionError):
            np.average(a, axis=axis, weights=w)
        x = xp.asarray(a, device=mesh)
        ws = None if w is None else xp.asarray(w, device=mesh)
        with pytest.raises(sa.DivisionByZeroError, match="divides by zero") as info:
            np.average(x, axis=axis, weights=ws)
        assert str(a.shape) in str(info.value) or (w is not None and str(w.shape) in str(info.value))


@fuzz(30, ENV)
@given(st.data(), cached_meshes(), SHAPES)
def test_average_with_weights_matches_numpy_or_its_zero_division(data, mesh, shape):
    """Weights of small integers (often summing to zero along a slice): NumPy's value, or its ZeroDivisionError."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    h, hw = rng.integers(-3, 4, shape).astype(np.float64), rng.integers(-1, 2, shape).astype(np.float64)
    axis = _axis(data, len(shape))
    try:
        want = np.average(h, axis=axis, weights=hw)
    except ZeroDivisionError:
        want = None
    x, w = _placed(data, mesh, h), _placed(data, mesh, hw)
    if want is None:
        with pytest.raises(ZeroDivisionError):
            np.average(x, axis=axis, weights=w)
    else:
        np.testing.assert_allclose(np.average(x, axis=axis, weights=w).numpy(), want, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------------------- 2. np.ldexp.at


def test_ldexp_at_applies_integer_exponents_as_numpy():
    """The old code refused ``np.ldexp.at`` (its exponents were cast to the array's float dtype)."""
    for shape in ({"row": 2, "col": 2}, {"d": 3}):
        mesh = cached_mesh(shape)
        for dtype in (np.float64, np.float32, np.float16):
            for key, value in (([0, 2, 0], [1, 2, 3]), ([3, 3], 20), (slice(1, 3), [1, -1]), ([1, 1], True)):
                h = np.array([1.0, 2.0, 3.0, 4.0], dtype)
                x = xp.asarray(h, device=mesh)
                np.ldexp.at(h, key, value)
                np.ldexp.at(x, key, xp.asarray(value, device=mesh) if isinstance(value, list) else value)
                _same(x.numpy(), h)


# ----------------------------------------------------------------------------------------- 3. float16 moments

HALF = ("var", "std", "nanvar", "nanstd", "nanmean")


def test_float16_spreads_overflow_as_numpys():
    """The old code computed them in float32: ``np.std`` of these was 60000 where NumPy's is inf (the float16
    squares overflow), ``np.nanmean`` 60000 where NumPy's float16 sum is inf."""
    mesh = cached_mesh({"row": 2, "col": 2})
    for h in (np.array([60000, -60000], np.float16), np.array([60000, 60000, np.nan], np.float16)):
        x = xp.asarray(h, device=mesh)
        for name in HALF:
            _same(getattr(np, name)(x).numpy(), getattr(np, name)(h))
    h = np.array([60000, -60000], np.float16)
    assert np.isinf(np.std(xp.asarray(h, device=mesh)).numpy())
    _same(xp.std(xp.asarray(h, device=mesh)).numpy(), np.float16(60000))  # (the array API's: float32 inside)


@fuzz(40, ENV)
@given(st.data(), cached_meshes(), SHAPES, st.sampled_from(HALF), st.sampled_from([1.0, 100.0, 400.0]))
def test_float16_moments_match_numpy(data, mesh, shape, name, scale):
    """NumPy's float16 steps (its float16 mean, deviations, squares and sums), exactly: the old code's float32
    computation was an ulp away (or finite where NumPy's is inf)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    h = (rng.standard_normal(shape) * scale).astype(np.float16)
    if h.size and data.draw(st.booleans()):
        h.flat[data.draw(st.integers(0, h.size - 1))] = np.nan
    axis, kw = _axis(data, h.ndim), {}
    if name != "nanmean" and data.draw(st.booleans()):
        kw["ddof"] = 1
    x = _placed(data, mesh, h)
    _same(getattr(np, name)(x, axis=axis, **kw).numpy(), getattr(np, name)(h, axis=axis, **kw))


# ----------------------------------------------------------------------------------------- 4. integer means


def test_integer_mean_divides_once():
    """The old code divided each device's float64 partial sum by the count: -10267.545454545456 here, NumPy's
    -10267.545454545454."""
    h = np.random.default_rng(0).integers(-(10**6), 10**6, 33)
    for shape in ({"row": 2}, {"row": 2, "col": 2}):
        x = xp.asarray(h, device=cached_mesh(shape))
        _same(np.mean(x).numpy(), np.mean(h))
        _same(x.mean().numpy(), h.mean())


@fuzz(40, ENV)
@given(st.data(), cached_meshes(), SHAPES, st.sampled_from(["int64", "int8", "uint16", "bool"]))
def test_integer_means_match_numpy(data, mesh, shape, dtype):
    """``np.mean``/``np.nanmean`` of integers and bools (``dtype=`` None or float32), with ``where=`` now and then:
    NumPy's sum divided once, exactly."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    h = rng.integers(-(10**6), 10**6, shape).astype(dtype)
    name = data.draw(st.sampled_from(["mean", "nanmean"]))
    axis, kw = _axis(data, h.ndim), {}
    if data.draw(st.booleans()):
        kw["dtype"] = data.draw(st.sampled_from([np.float32, np.float64]))
    x = _placed(data, mesh, h)
    if name == "mean" and data.draw(st.booleans()):
        mask = rng.integers(0, 2, shape).astype(bool)
        kw["where"] = mask
        got = np.mean(x, axis=axis, where=_placed(data, mesh, mask), **{k: v for k, v in kw.items() if k != "where"})
    else:
        got = getattr(np, name)(x, axis=axis, **kw)
    want = getattr(np, name)(h, axis=axis, **kw)
    if kw.get("dtype") is np.float32:  # (float32 sums: the order of the additions rounds differently)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
        assert np.asarray(got.numpy()).dtype == np.asarray(want).dtype
    else:
        _same(got.numpy(), want)


def test_cov_with_weights_summing_to_zero_is_numpys_zero_division_error():
    """``np.cov(x, aweights=0)``: NumPy's ZeroDivisionError (a ``sa.DivisionByZeroError``, also an ArgumentError)."""
    x = xp.asarray(np.arange(4.0), device=cached_mesh({"row": 2, "col": 2}))
    with pytest.raises(ZeroDivisionError, match="sum to zero"):
        np.cov(x, aweights=xp.zeros(4, device=x.device))
    with pytest.raises(sa.ArgumentError):
        xp.cov(x, fweights=xp.zeros(4, dtype=xp.int64, device=x.device))


# ------------------------------------------------------------------------------------------------- np.piecewise
@fuzz(40, ENV)
@given(data=st.data(), mesh=cached_meshes(), shape=SHAPES, case=st.integers(0, 3))
def test_piecewise_matches_numpy(data, mesh, shape, case):
    """``np.piecewise`` (SciPy's BSpline tests build their reference with it): conditions in order, a callable
    applied to the selected entries only (with extra arguments), a value, an otherwise-function; masks on the mesh."""
    h = np.linspace(-3.0, 3.0, int(np.prod(shape))).reshape(shape)
    x = _placed(data, mesh, h)
    calls = [
        lambda m: np.piecewise(m, [m < 0, m >= 0], [lambda v: -v, lambda v: v**2]),
        lambda m: np.piecewise(m, [m < -1, m > 1], [0.5, lambda v: v * 3, lambda v: v + 100]),
        lambda m: np.piecewise(m, [m > 100], [lambda v, k: v * k, 9.0], 2.0),
        lambda m: np.piecewise(m, [m > 0, m > 1], [lambda v: v + 1, lambda v: v - 1]),  # (the later one wins)
    ]
    got = calls[case](x)
    assert isinstance(got, xp.Array)
    _same(got, calls[case](h))


def test_piecewise_reads_condlist_as_numpy():
    mesh = cached_mesh({"row": 2, "col": 2})
    h1, h2 = np.linspace(-3, 3, 11), np.linspace(-3, 3, 15).reshape(3, 5)
    x1, x2 = xp.asarray(h1, device=mesh), xp.asarray(h2, device=mesh)
    _same(np.piecewise(x1, x1 > 0, [lambda v: v * 2]), np.piecewise(h1, h1 > 0, [lambda v: v * 2]))  # (one 1-D)
    _same(np.piecewise(x1, [True] * 11, [4.0]), np.piecewise(h1, [True] * 11, [4.0]))  # (a list of bools: one)
    with pytest.raises(ValueError, match="3 condition"):  # (a bare 2-D array is its rows, as NumPy reads it)
        np.piecewise(x2, x2 > 0, [lambda v: v])
    with pytest.raises(ValueError, match="3 condition"):
        np.piecewise(h2, h2 > 0, [lambda v: v])
    with pytest.raises(ValueError, match="either 2 or 3 functions"):
        np.piecewise(x1, [x1 > 0, x1 < 0], [1.0])
