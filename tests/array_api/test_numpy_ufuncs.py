"""NumPy's elementwise extras (fmod, divmod, modf, float_power, cbrt, deg2rad/radians, rad2deg/degrees, frexp,
ldexp, gcd, lcm, fix, angle, isposinf, isneginf, isreal, iscomplex, real_if_close, i0) against NumPy on every test
mesh, uneven and empty sizes, several dtypes, NaN, inf and signed zeros; through ``np.<name>`` and ``xp.<name>``;
typed errors for bad input; no collective where the algorithm needs none."""

import warnings

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES, backend_name

import shardarray as sa
import shardarray.array_api as xp

SHAPES = [(5, 7), (3,), (0, 3)]
REAL = [np.float64, np.float32, np.int64, np.int8, np.bool_]


@pytest.fixture(params=HYPOTHESIS_SHAPES, ids=lambda s: "x".join(map(str, s.values())))
def mesh(request):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m):
        yield m


def _data(shape, dtype, seed=0, special=True, scale=3.0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape) * scale
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=shape)
    if np.dtype(dtype).kind in "iu":
        a = np.round(a * 5)
    a = a.astype(dtype)
    if special and np.dtype(dtype).kind in "fc" and a.size >= 5:
        flat = a.reshape(-1)
        flat[0], flat[1], flat[2], flat[3], flat[4] = np.nan, np.inf, -np.inf, 0, -0.0
    return a


def _ulps(dtype):
    """CUDA's libm may differ from NumPy's by an ulp or two (the parallel guide); NumPy shards agree closer."""
    low = np.dtype(dtype) in (np.float32, np.complex64, np.float16)
    return 2e-6 if low else 4e-15 if backend_name() == "cupy" else 2e-15


def _same(got, want, rtol=None, signed_zeros=False):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, rtol, signed_zeros)
        return
    assert type(got) is xp.Array, type(got)
    g, want = got.numpy(), np.asarray(want)
    assert g.shape == want.shape and g.dtype == want.dtype, (g.shape, g.dtype, want.shape, want.dtype)
    tol = _ulps(want.dtype) if rtol is None else rtol
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(g, want, rtol=tol, atol=0, equal_nan=True)
        if signed_zeros and want.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(g[want == 0]), np.signbit(want[want == 0]))
    else:
        np.testing.assert_array_equal(g, want)


def _quiet():
    w = warnings.catch_warnings()
    w.__enter__()
    warnings.simplefilter("ignore", RuntimeWarning)
    return w


@pytest.mark.parametrize("dtype", REAL)
def test_division_functions_match_numpy(mesh, dtype):
    for shape in SHAPES:
        a, b = _data(shape, dtype), _data(shape, dtype, seed=1, special=False)
        x, y = xp.asarray(a), xp.asarray(b)
        if np.dtype(dtype).kind in "iu":  # (NumPy warns and gives 0 for integer division by 0)
            b = np.where(b == 0, 3, b).astype(dtype)
            y = xp.asarray(b)
        with warnings.catch_warnings(), sa.comm_log() as log:
            warnings.simplefilter("ignore", RuntimeWarning)
            _same(np.fmod(x, y), np.fmod(a, b), signed_zeros=True)
            _same(xp.fmod(x, y), np.fmod(a, b))
            if dtype is not np.bool_:
                _same(np.fmod(x, 3), np.fmod(a, 3), signed_zeros=True)
                _same(np.fmod(x, -2), np.fmod(a, -2), signed_zeros=True)
                _same(np.divmod(x, 3), np.divmod(a, 3))
                _same(np.divmod(x, y), np.divmod(a, b))
            _same(np.modf(x), np.modf(a), signed_zeros=True)
        assert not log.records, log.records


def test_division_special_values(mesh):
    a = np.array([5.0, -5.0, 1e-300, -1e-300, np.inf, -np.inf, np.nan, 7.0, -0.0, 0.0, 2.5, 1e300])
    b = np.array([np.inf, -np.inf, 1.0, -1.0, 2.0, 3.0, 1.0, 0.0, 2.0, -3.0, np.nan, 1e-300])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(np.fmod(xp.asarray(a), xp.asarray(b)), np.fmod(a, b), 0, signed_zeros=True)
        _same(np.divmod(xp.asarray(a), xp.asarray(b)), np.divmod(a, b), 0)
        _same(np.modf(xp.asarray(a)), np.modf(a), 0, signed_zeros=True)
        i = np.array([7, -7, 7, -7, 0, 5], np.int32)
        j = np.array([3, 3, -3, -3, 4, 0], np.int32)
        _same(np.fmod(xp.asarray(i), xp.asarray(j)), np.fmod(i, j))
        _same(xp.fmod(xp.asarray(i), 2.5), np.fmod(i, 2.5))  # (int32 with a float: float64, NumPy's loop)
        _same(xp.fmod(7.5, xp.asarray(b[:4])), np.fmod(7.5, b[:4]))
        _same(np.modf(xp.asarray(i)), np.modf(i))  # integers: float64


@pytest.mark.parametrize("dtype", REAL)
def test_powers_and_angles_match_numpy(mesh, dtype):
    for shape in SHAPES:
        a = _data(shape, dtype)
        x = xp.asarray(a)
        with warnings.catch_warnings(), sa.comm_log() as log:
            warnings.simplefilter("ignore", RuntimeWarning)
            _same(np.cbrt(x), np.cbrt(a), signed_zeros=True)
            for name in ("deg2rad", "radians", "rad2deg", "degrees"):  # (exactly: NumPy's factor in float32, too)
                _same(getattr(np, name)(x), getattr(np, name)(a), 0, signed_zeros=True)
                _same(getattr(xp, name)(x), getattr(np, name)(a), 0, signed_zeros=True)
            _same(np.float_power(x, 1.5), np.float_power(a, 1.5))
            _same(np.float_power(x, x), np.float_power(a, a))
            _same(np.fix(x), np.fix(a), signed_zeros=True)
            _same(np.angle(x), np.angle(a))
            _same(np.angle(x, deg=True), np.angle(a, deg=True))
            _same(np.frexp(x), np.frexp(a), 0, signed_zeros=True)
            e = _data(shape, np.int32, seed=2, special=False)
            _same(np.ldexp(x, xp.asarray(e)), np.ldexp(a, e), 0, signed_zeros=True)
            _same(np.ldexp(x, 3), np.ldexp(a, 3), 0)
            _same(np.i0(x), np.i0(a), 1e-6 if dtype == np.float32 else 1e-14)
        assert not log.records, log.records


def test_cbrt_frexp_ldexp_across_the_range(mesh):
    a = np.array([27.0, -8.0, 1e-320, 5e-324, 2.0**-1022, 1.7e308, -1e-310, 0.1, 3.0, 2.0**53 + 1, 1 - 2.0**-53])
    x = xp.asarray(a)
    _same(np.cbrt(x), np.cbrt(a), 2e-16 if backend_name() == "numpy" else 4e-16)
    _same(np.frexp(x), np.frexp(a), 0)
    f = np.array([1.5, 2.0**-149, 3.4e38, -1e-30, 0.3], np.float32)  # (float32 subnormals: NumPy's, in float64)
    if backend_name() == "cupy":
        f = f[2:]  # (CuPy's -ftz flushes float32 subnormals: left out on CuPy shards)
    _same(np.frexp(xp.asarray(f)), np.frexp(f), 0)
    _same(np.cbrt(xp.asarray(f)), np.cbrt(f), 2e-7)
    h = np.array([1.5, -3.0, 6e-5, 65504.0], np.float16)
    _same(np.frexp(xp.asarray(h)), np.frexp(h), 0)
    _same(np.deg2rad(xp.asarray(h)), np.deg2rad(h), 0)
    e = np.array([0, -1074, 2000, -2000, 1023, -1022, 5000, -5000, 1, 2, 3])
    for v in (1.0, -0.75, 1e-310, 1.7e308, np.inf, -0.0, np.nan):
        w = np.full(e.shape, v)
        _same(np.ldexp(xp.asarray(w), xp.asarray(e)), np.ldexp(w, e), 0, signed_zeros=True)
    m, k = np.frexp(a)
    _same(np.ldexp(*np.frexp(x)), np.ldexp(m, k), 0)
    _same(np.ldexp(xp.asarray(np.arange(4)), 2), np.ldexp(np.arange(4), 2), 0)  # int64 mantissa: float64


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8])
def test_gcd_lcm_match_numpy(mesh, dtype):
    rng = np.random.default_rng(0)
    hi = 100 if np.dtype(dtype).itemsize == 1 else 10**6
    lo = 0 if np.dtype(dtype).kind == "u" else -hi
    for shape in SHAPES:
        a = rng.integers(lo, hi, shape).astype(dtype)
        b = rng.integers(lo, hi, shape).astype(dtype)
        if a.size:
            a.reshape(-1)[0] = b.reshape(-1)[0] = 0
        x, y = xp.asarray(a), xp.asarray(b)
        _same(np.gcd(x, y), np.gcd(a, b))
        _same(xp.gcd(x, 12), np.gcd(a, 12))
        small = (a % 12).astype(dtype)
        _same(np.lcm(xp.asarray(small), 8), np.lcm(small, 8))
    with sa.comm_log() as log:
        xp.gcd(xp.asarray(np.array([12, 18], dtype)), 8)
    assert {r.op for r in log.records} <= {"allreduce"}, log.records  # (one bool per Euclid step)
    big = np.array([2**62, 3 * 2**40, 0, 1, 2**63 - 1, 832040], np.int64)  # (2**63-1 with 832040: long)
    other = np.array([2**40, 2**62, 0, 2**62, 514229 * 3, 514229], np.int64)
    _same(np.gcd(xp.asarray(big), xp.asarray(other)), np.gcd(big, other))
    with pytest.raises(sa.DTypeError):  # (NumPy has no bool loop either)
        xp.gcd(xp.asarray(np.array([True, False])), True)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64, np.float64, np.float32, np.int64, np.bool_])
def test_classification_matches_numpy(mesh, dtype):
    for shape in SHAPES:
        a = _data(shape, dtype)
        if np.dtype(dtype).kind == "c" and a.size > 6:
            a.reshape(-1)[5:7] = [2.0, -0.0]  # (real values in a complex array)
        x = xp.asarray(a)
        with sa.comm_log() as log:
            _same(np.isreal(x), np.isreal(a))
            _same(np.iscomplex(x), np.iscomplex(a))
            if np.dtype(dtype).kind != "c":
                _same(np.isposinf(x), np.isposinf(a))
                _same(np.isneginf(x), np.isneginf(a))
            else:
                _same(np.angle(x), np.angle(a))
                _same(xp.angle(x, deg=True), np.angle(a, deg=True))
        assert not log.records, log.records


def test_real_if_close(mesh):
    for dtype in (np.complex128, np.complex64):
        eps = float(np.finfo(dtype).eps)
        for imag in (0.0, 50 * eps, 200 * eps, 1.0):
            a = (np.arange(7.0) - 3 + 1j * imag).astype(dtype)
            _same(np.real_if_close(xp.asarray(a)), np.real_if_close(a))
            _same(xp.real_if_close(xp.asarray(a), tol=1e-3), np.real_if_close(a, tol=1e-3))
    f = np.arange(5.0)
    _same(np.real_if_close(xp.asarray(f)), np.real_if_close(f))
    e = np.zeros((0, 3), np.complex128)
    _same(np.real_if_close(xp.asarray(e)), np.real_if_close(e))


def test_i0_across_the_range(mesh):
    a = np.concatenate([np.linspace(-30, 30, 61), [7.999, 8.0, 8.001, 700.0, -0.0, np.nan, np.inf, -np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(np.i0(xp.asarray(a)), np.i0(a), 1e-14)
    _same(np.i0(xp.asarray(np.arange(-3, 4))), np.i0(np.arange(-3, 4)), 1e-14)  # integers: float64


def test_bad_input_gives_typed_errors(mesh):
    x = xp.asarray(np.arange(4.0))
    c = xp.asarray(np.arange(4.0) + 1j)
    i = xp.asarray(np.arange(4))
    for call in (lambda: xp.ldexp(x, 1.5), lambda: xp.ldexp(x, x), lambda: xp.gcd(x, 2), lambda: xp.lcm(i, 2.5),
                 lambda: xp.cbrt(c), lambda: xp.fmod(c, 2), lambda: xp.frexp(c), lambda: xp.i0(c),
                 lambda: xp.isposinf(c), lambda: xp.isneginf(c), lambda: xp.fix(c), lambda: xp.modf(c),
                 lambda: xp.fmod([1.0, 2.0], 3.0), lambda: xp.cbrt([1.0]), lambda: xp.angle([1j]),
                 lambda: xp.real_if_close(c, tol="big")):
        with pytest.raises(sa.DTypeError):
            call()
    with pytest.raises(TypeError):  # (NumPy's own TypeError for a float exponent, a sa.DTypeError here)
        np.ldexp(x, 1.5)
    with pytest.raises(sa.ArgumentError, match="out="):
        xp.fix(x, out=x)
    with pytest.raises(sa.ArgumentError, match="out="):
        xp.isposinf(x, out=xp.asarray(np.zeros(4, bool)))
    out = xp.asarray(np.ones(4, bool))
    assert np.isneginf(-x / 0.0, out=out) is out  # (NumPy's out=, written by the protocol)
    np.testing.assert_array_equal(out.numpy(), np.isneginf(-np.arange(4.0) / 0.0))


def test_results_keep_the_layout_and_mesh(mesh):
    a = _data((6, 5), np.float64, special=False)
    x = xp.asarray(a)
    for r in (*xp.modf(x), *xp.frexp(x), xp.cbrt(x), xp.fmod(x, 2.0), xp.i0(x), xp.isposinf(x), xp.angle(x)):
        assert type(r) is xp.Array and r.mesh == x.mesh and r.layout == x.layout


@pytest.mark.parametrize("dtype", [*REAL, np.float16])
def test_fmax_fmin_ignore_nan_as_numpy(mesh, dtype):
    """``fmax``/``fmin`` take the other operand where one is NaN, and NumPy's loop dtype with Python scalars and
    mixed dtypes; no collective; complex operands in NumPy's order (test_fuzz10_complex_compare.py). (The sign of
    ``fmax(0.0, -0.0)`` is not compared: NumPy's own loops give either, by the element's position in a vector.)"""
    for shape in SHAPES:
        a = _data(shape, dtype)
        b = _data(shape, dtype, seed=1)
        if a.size >= 5 and a.dtype.kind == "f":
            b.reshape(-1)[:5] = [0.5, np.nan, np.nan, -0.0, 0.0]  # NaN against a number, inf and NaN, signed zeros
        x, y = xp.asarray(a), xp.asarray(b)
        with warnings.catch_warnings(), sa.comm_log() as log:
            warnings.simplefilter("ignore", RuntimeWarning)
            for name in ("fmax", "fmin"):
                f = getattr(np, name)
                _same(getattr(xp, name)(x, y), f(a, b), 0)
                _same(f(x, y), f(a, b), 0)
                _same(f(y, x), f(b, a), 0)
                _same(f(x, 1.5), f(a, 1.5), 0)
                _same(f(2, y), f(2, b), 0)
                _same(f(x, xp.asarray(b.astype(np.float32))), f(a, b.astype(np.float32)), 0)
        assert not log.records, log.records
    np.testing.assert_array_equal(xp.fmax(xp.asarray([1j, 2.0]), 1.0).numpy(), np.fmax([1j, 2.0], 1.0))
