"""Fuzz round 13 of sorting, sets, searching, statistics and scans at the edges, against NumPy on the gathered
value: stable ascending and descending ``sort``/``argsort`` (NaN, -0.0, complex NaN, uint64 near ``2**64``,
float16/bfloat16), the four ``unique_*`` (each NaN distinct; the inverse in ``x``'s shape), ``searchsorted`` with
sides, NaN and Python scalars out of every int dtype's range, ``cumulative_sum``/``cumulative_prod`` with
``include_initial`` and ``dtype``, NumPy's ``cumsum``/``cumprod`` of bool/int8 and of values that overflow or hold
complex infinities along a split axis, ``argmax``/``argmin`` ties and NaN, ``nanargmax`` of all-NaN slices,
``count_nonzero``, ``max``/``min`` with ``initial``, ``mean``/``var``/``std`` with ``correction``, ``median``/
``quantile``/``percentile`` with every method, ``nanmedian`` and the medians of complex values, ``ptp``, ``diff``
with ``prepend``/``append`` on split axes, and the named ``sa`` counterparts with dims. Meshes 1, 2x2, 4, 2x2x2,
3x2 with uneven and empty blocks; NumPy shards and the CuPy stand-in. Regressions of the bugs it found close the
file.

``FUZZ13_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
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

# ruff: noqa: B023 (the lambdas given check() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ13_EXAMPLES"
BF16 = np.dtype(ml_dtypes.bfloat16)
SORTED = ("float64", "float32", "float16", BF16, "int64", "int8", "uint8", "uint64", "bool", "complex64")
STATS = ("float64", "float32", "int64", "int16", "uint8", "bool", "complex128")
SIDES = (0, 1, 2, 3, 5, 7)
METHODS = (
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "linear",
    "median_unbiased",
    "normal_unbiased",
    "lower",
    "higher",
    "midpoint",
    "nearest",
)


# --------------------------------------------------------------------------------------------- data


def _values(rng: np.random.Generator, shape: tuple, dtype, extremes: bool = True) -> np.ndarray:
    """Few distinct values (ties), integer extremes (``extremes``), NaN/inf/-0.0 in floats and complex parts."""
    n, dt = math.prod(shape), np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        v = rng.integers(0 if dt.kind == "u" else -3, 4, n).astype(dt)
        if extremes:
            hit = rng.random(n) < 0.25
            info = np.iinfo(dt)
            ends = np.array([info.min, info.max, info.max - 1, info.min + 1], dt)
            v[hit] = rng.choice(ends, int(hit.sum()))
        return v.reshape(shape)
    if dt.kind == "c":
        out = np.empty(shape, dt)
        out.real, out.imag = _values(rng, shape, np.float32), _values(rng, shape, np.float32)
        return out
    v = rng.integers(-3, 4, n) / 2.0
    hit = rng.random(n) < 0.25
    v[hit] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], int(hit.sum()))
    return v.astype(dt).reshape(shape)


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout."""
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), xp.Array)


@st.composite
def case(draw, dtypes, max_dims=3):
    mesh = draw(meshes())
    shape = tuple(draw(st.sampled_from(SIDES)) for _ in range(draw(st.integers(1, max_dims))))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = _values(rng, shape, draw(st.sampled_from(dtypes)))
    return mesh, a, draw(placed(a, mesh))


def _ref(a: np.ndarray) -> np.ndarray:
    """NumPy's reference input: bfloat16 as float32 (NumPy's sorts give bfloat16 NaN no place)."""
    return a.astype(np.float32) if a.dtype == BF16 else a


def _got(r):
    if isinstance(r, (tuple, list)):
        return [_got(v) for v in r]
    return r.numpy() if hasattr(r, "numpy") else np.asarray(r)


def _same(got, expected, tol: float = 0.0) -> None:
    """Shape, dtype and values (NaN equal to NaN, in the same parts; within ``tol`` relative to the largest)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, list) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _same(g, e, tol)
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
    if e.dtype == BF16:
        g, e = g.astype(np.float32), e.astype(np.float32)
    if e.dtype.kind in "fc" and tol:
        finite = np.abs(e[np.isfinite(e)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol * scale)
    else:
        np.testing.assert_array_equal(g, e)


def check(np_call, xp_call, tol: float = 0.0) -> None:
    """NumPy's ``np_call()`` against ``xp_call()`` gathered: a typed ``sa`` error where NumPy raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = np_call()
        except Exception:
            with pytest.raises(sa.ShardArrayError):
                xp_call()
            return
        got = _got(xp_call())
    _same(got, expected, tol)


def _descending(a: np.ndarray, axis: int, arg: bool = False) -> np.ndarray:
    """The array API's stable descending sort (argsort): the reverse of the ascending one of the reversed array."""
    n = a.shape[axis]
    if arg:
        return n - 1 - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    return np.flip(np.sort(np.flip(a, axis), axis=axis, kind="stable"), axis)


def _rebuilt(values: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """``values[inverse]``: what an inverse means, whatever order NumPy gives its distinct NaNs."""
    return values[inverse] if values.size else inverse.astype(values.dtype)


# ============================================================================================= sort, sets, search


@fuzz(30, ENV)
@given(case(SORTED), st.data())
def test_fuzz_sort_unique_searchsorted_edges(c, data):
    mesh, a, x = c
    ref, axis = _ref(a), data.draw(st.integers(-a.ndim, a.ndim - 1))

    def back(r):
        return r.astype(BF16) if a.dtype == BF16 and r.dtype == np.float32 else r

    check(lambda: back(np.sort(ref, axis=axis, kind="stable")), lambda: xp.sort(x, axis=axis))
    check(lambda: np.argsort(ref, axis=axis, kind="stable"), lambda: xp.argsort(x, axis=axis, stable=False))
    check(lambda: back(_descending(ref, axis)), lambda: xp.sort(x, axis=axis, descending=True))
    check(lambda: _descending(ref, axis, arg=True), lambda: xp.argsort(x, axis=axis, descending=True))
    check(lambda: back(np.sort(ref, axis=axis)), lambda: sa.sort(as_kind(x, sa.ShardArray), x.dims[axis]))
    if a.dtype != BF16:
        u = np.unique_all(a)  # (each NaN distinct; NumPy orders its NaNs' inverse arbitrarily: compare values[inv])
        got = xp.unique_all(x)
        check(lambda: [u.values, u.indices, u.counts], lambda: [got.values, got.indices, got.counts])
        check(lambda: _rebuilt(u.values, u.inverse_indices), lambda: _rebuilt(*_got(list(xp.unique_inverse(x)))))
        assert got.inverse_indices.shape == a.shape
        check(lambda: np.sort(np.unique_values(a)), lambda: xp.unique_values(x))
        check(lambda: list(np.unique_counts(a)), lambda: list(xp.unique_counts(x)))
        en = data.draw(st.booleans())
        check(
            lambda: list(np.unique(a, True, True, True, equal_nan=en)),
            lambda: np.unique(x, True, True, True, equal_nan=en),
        )
    s = np.sort(
        _ref(
            _values(np.random.default_rng(data.draw(st.integers(0, 99))), (data.draw(st.sampled_from(SIDES)),), a.dtype)
        )
    )
    xs = data.draw(placed(s.astype(a.dtype) if a.dtype == BF16 else s, mesh))
    side = data.draw(st.sampled_from(["left", "right"]))
    check(lambda: np.searchsorted(s, ref, side=side), lambda: xp.searchsorted(xs, x, side=side))
    if a.dtype.kind in "iub":  # (Python scalars by value: out of the dtype's range, of int64's, of uint64's)
        v = data.draw(st.sampled_from([0, 1, 3, -1, 300, -300, 2**63, 2**64 - 2, 2**64 + 5, -(2**70), 2.5]))
        check(lambda: np.searchsorted(s, v, side=side), lambda: xp.searchsorted(xs, v, side=side))
        check(lambda: np.searchsorted(s, v, side=side), lambda: np.searchsorted(xs, v, side=side))


# ============================================================================================= scans, statistics


@fuzz(30, ENV)
@given(case(STATS), st.data())
def test_fuzz_scans_and_statistics_edges(c, data):
    mesh, a, x = c
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    some = data.draw(st.sampled_from([None, axis]))
    kd = data.draw(st.booleans())
    tol = 1e-6 if a.dtype.kind in "fc" else 0.0
    ii = data.draw(st.booleans())
    dt = data.draw(st.sampled_from([None, "float64", "int64", "int8"]))
    check(
        lambda: np.cumulative_sum(a, axis=axis, include_initial=ii),
        lambda: xp.cumulative_sum(x, axis=axis, include_initial=ii),
        tol,
    )
    if a.dtype.kind == "c" and dt is not None:  # (refused since round 14, as xp.sum's dtype=: NumPy drops the imag)
        with pytest.raises(sa.DTypeError, match="imaginary"):
            xp.cumulative_prod(x, axis=axis, include_initial=ii, dtype=dt)
    else:
        check(
            lambda: np.cumulative_prod(a, axis=axis, include_initial=ii, dtype=dt),
            lambda: xp.cumulative_prod(x, axis=axis, include_initial=ii, dtype=dt),
            tol,
        )
    check(lambda: np.cumsum(a, axis=some), lambda: np.cumsum(x, axis=some), tol)
    for name in ("argmax", "argmin", "nanargmax", "nanargmin"):
        f = getattr(np, name)
        check(lambda: f(a, axis=some, keepdims=kd), lambda: f(x, axis=some, keepdims=kd))
    check(lambda: np.count_nonzero(a, axis=some, keepdims=kd), lambda: np.count_nonzero(x, axis=some, keepdims=kd))
    if a.dtype.kind != "c":
        init = {"b": True, "i": -2, "u": 2, "f": 0.5}[a.dtype.kind]
        check(lambda: np.max(a, axis=some, initial=init), lambda: np.max(x, axis=some, initial=init))
        check(lambda: np.min(a, axis=some, keepdims=kd), lambda: xp.min(x, axis=some, keepdims=kd))
        check(lambda: np.ptp(a, axis=some, keepdims=kd), lambda: np.ptp(x, axis=some, keepdims=kd))
    corr = data.draw(st.sampled_from([0, 1, 0.5, 3]))
    check(lambda: np.mean(a, axis=some), lambda: np.mean(x, axis=some), tol)
    check(lambda: np.var(a, axis=some, correction=corr), lambda: np.var(x, axis=some, correction=corr), tol)
    check(
        lambda: np.std(a, axis=some, ddof=corr, keepdims=kd), lambda: np.std(x, axis=some, ddof=corr, keepdims=kd), tol
    )
    check(lambda: np.median(a, axis=some, keepdims=kd), lambda: np.median(x, axis=some, keepdims=kd), tol)
    check(lambda: np.nanmedian(a, axis=some), lambda: np.nanmedian(x, axis=some), tol)
    if a.dtype.kind != "c":
        b = _values(np.random.default_rng(a.size), a.shape, a.dtype, extremes=False)  # (NumPy's ints wrap around)
        y = data.draw(placed(b, mesh))
        method = data.draw(st.sampled_from(METHODS))
        q = data.draw(st.sampled_from([0.5, 0.0, 1.0, [0.1, 0.7], [[0.25], [0.9]]]))
        check(
            lambda: np.quantile(b, q, axis=some, method=method),
            lambda: np.quantile(y, q, axis=some, method=method),
            tol,
        )
        check(
            lambda: np.nanpercentile(b, 40, axis=some, method=method),
            lambda: np.nanpercentile(y, 40, axis=some, method=method),
            tol,
        )
    n = data.draw(st.integers(0, 3))
    edge = tuple(1 if k == axis % a.ndim else s for k, s in enumerate(a.shape))
    p = _values(np.random.default_rng(n), edge, a.dtype)
    check(
        lambda: np.diff(a, n=n, axis=axis, prepend=p, append=p),
        lambda: np.diff(x, n=n, axis=axis, prepend=data.draw(placed(p, mesh)), append=data.draw(placed(p, mesh))),
        tol,
    )


@fuzz(25, ENV)
@given(case(("float64", "float32", "int8", "uint64", "bool", "complex64")), st.data())
def test_fuzz_named_counterparts_with_dims(c, data):
    _, a, x = c
    y = as_kind(x, sa.ShardArray)
    k = data.draw(st.integers(0, a.ndim - 1))
    sub = tuple(sorted(set(data.draw(st.lists(st.integers(0, a.ndim - 1), min_size=1, max_size=a.ndim)))))
    dims = tuple(y.dims[i] for i in sub)
    tol = 1e-6 if a.dtype.kind in "fc" else 0.0
    check(lambda: np.argsort(a, axis=k, kind="stable"), lambda: sa.argsort(y, y.dims[k]))
    check(lambda: _descending(a, k), lambda: sa.sort(y, y.dims[k], descending=True))
    check(lambda: np.argmax(a, axis=k), lambda: sa.argmax(y, y.dims[k]))
    check(lambda: np.count_nonzero(a, axis=sub).astype(np.int64), lambda: sa.count_nonzero(y, dims))
    check(lambda: np.cumsum(a, axis=k), lambda: sa.cumsum(y, y.dims[k]), tol)
    check(lambda: np.cumprod(a, axis=k), lambda: sa.cumprod(y, y.dims[k]), tol)
    n = data.draw(st.integers(0, 2))
    check(lambda: np.diff(a, axis=k, n=n), lambda: sa.diff(y, y.dims[k], n=n), tol)
    if a.dtype.kind in "fc":
        corr = data.draw(st.sampled_from([0, 1]))
        check(lambda: np.var(a, axis=sub, ddof=corr), lambda: sa.var(y, dims, correction=corr), tol)
        check(lambda: np.nanmean(a, axis=sub), lambda: sa.nanmean(y, dims), tol)


# --------------------------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}, {"x": 1}])
def test_searchsorted_takes_python_integers_beyond_int64_and_the_dtype(shape):
    """``xp.searchsorted`` (and ``np.searchsorted``, which hands a NumPy integer scalar on as a Python int) of a
    Python integer made it an int64 array first: ``2**64 - 2`` in a uint64 array raised ``CastError``; NumPy
    compares the value exactly. Out of an integer array's range it is now placed past (or before) every element."""
    mesh = _mesh(shape)
    s = np.array([0, 2, 2**63, 2**64 - 2, 2**64 - 1], np.uint64)
    xs = xp.asarray(s, device=mesh)
    i8 = np.array([-128, -1, 5, 127], np.int8)
    xi = xp.asarray(i8, device=mesh)
    f = np.array([1.0, 2.0, 1e19, np.inf])
    xf = xp.asarray(f, device=mesh)
    for side in ("left", "right"):
        for v in (2**64 - 2, 2**64 - 1, 2**64, 2**63, -1, -(2**70), 7):
            assert int(xp.searchsorted(xs, v, side=side)) == np.searchsorted(s, v, side=side), (v, side)
        assert int(np.searchsorted(xs, np.uint64(2**64 - 2), side=side)) == np.searchsorted(s, 2**64 - 2, side=side)
        for v in (300, -300, 127, -128, 2**64, 2.5):
            assert int(xp.searchsorted(xi, v, side=side)) == np.searchsorted(i8, v, side=side), (v, side)
        for v in (2**64, 2**63, -(2**70)):
            assert int(xp.searchsorted(xf, v, side=side)) == np.searchsorted(f, v, side=side), (v, side)
        assert int(xp.searchsorted(xp.asarray([False, True], device=mesh), 2, side=side)) == 2


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_split_cumprod_continues_the_block_from_its_prefix(dtype):
    """A cumprod along a split axis multiplied each block's own scan by the earlier blocks' product: NumPy's
    ``1e200, 1e200, inf, inf`` came out ``1e200, 1e200, inf, 1e200`` (``1e200 * 1e-200`` inside the block first),
    and ``(1.40625+4.21875j) * 1.5 * (-inf+0j)`` NaN where NumPy's left-to-right order gives ``-inf-infj``. Each
    block's scan now continues from its prefix, so a second block follows NumPy's order exactly."""
    mesh = _mesh({"row": 2, "col": 2})
    if dtype == "float64":
        a = np.array([1e200, 1.0, 1e200, 1e-200, 3.0, 1e-300])
    else:
        a = np.array([-1 - 0.5j, -1.5 + 0j, -0.5 + 1.5j, 0.5 - 1j, 1.5 + 0j, -np.inf + 0j, -0.5 - 0.5j])
    x = xp.asarray(a, device=mesh)
    x = as_kind(sa.relayout(as_kind(x, sa.ShardArray), {x.dims[0]: "row"}), xp.Array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.cumprod(a)
        got = xp.cumulative_prod(x).numpy()
    np.testing.assert_array_equal(got, want)
    assert [(r.op, r.elements) for r in _log(lambda: xp.cumulative_prod(x))] == [("allgather", 1)]


def _log(fn) -> list:
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore")
        fn().numpy()
    return [r for r in log.records if r.group_size > 1]


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}])
def test_median_of_complex_values_as_numpy(shape):
    """``np.median``/``np.nanmedian`` of complex values raised ``DTypeError`` ("no order"); NumPy sorts them (real
    part, then imaginary part) and averages the middle two; a NaN part makes the median ``nan+0j`` (``nanmedian``
    skips it). ``quantile`` still refuses them, as NumPy's."""
    mesh = _mesh(shape)
    a = np.array([[1 + 1j, 2 + 0j, 3j, -1 + 0.5j, 2 - 1j], [1 + 1j, complex(np.nan, 0), 2, 3j, 0.5 - 0.5j]])
    x = xp.asarray(a, device=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for axis in (None, 0, 1):
            _same(np.median(x, axis=axis).numpy(), np.median(a, axis=axis))
            _same(np.nanmedian(x, axis=axis).numpy(), np.nanmedian(a, axis=axis))
        _same(xp.median(x[:1, :4], axis=1, keepdims=True).numpy(), np.median(a[:1, :4], axis=1, keepdims=True))
    with pytest.raises(sa.DTypeError):
        np.quantile(x, 0.5)


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}], ids=str)
def test_median_of_complex_infinities_has_numpys_nan_parts(shape):
    """NumPy's median divides the middle values' sum by their count in complex arithmetic: ``inf+1j`` gives
    ``inf+nanj`` (odd count), ``1.5+infj`` ``nan+infj``; the same NaN parts here (the middle value was returned)."""
    cases = [
        np.array([[complex(np.inf, 1.1248426)]], np.complex64),
        np.array([1.5 + np.inf * 1j, 2, 3]),
        np.array([1 + 2j, complex(np.inf, 1), 3 + 0j, 5 + 1j]),
    ]
    with sa.default_mesh(sa.Mesh(shape)), np.errstate(invalid="ignore"):
        for a in cases:
            for axis in (None, -1):
                want, got = np.median(a, axis=axis), xp.median(xp.asarray(a), axis=axis).numpy()
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
                np.testing.assert_allclose(got, want, equal_nan=True)
