"""NumPy's math and polynomial extras (exp2, heaviside, sinc, nan_to_num, polyval, kron, diag, convolve) and the
reductions' ``where=`` against NumPy on every test mesh, uneven and empty sizes, several dtypes, NaN and inf; typed
errors for bad input; no allgather where the algorithm needs none."""

import warnings

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES

import shardarray as sa
import shardarray.array_api as xp

FLOATS = [np.float64, np.float32]
DTYPES = [np.float64, np.float32, np.int64, np.int8, np.complex128, np.bool_]


@pytest.fixture(params=HYPOTHESIS_SHAPES, ids=lambda s: "x".join(map(str, s.values())))
def mesh(request):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m):
        yield m


def _data(shape, dtype, seed=0, special=True):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape) * 3
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=shape)
    a = a.astype(dtype)
    if special and np.dtype(dtype).kind in "fc" and a.size >= 4:
        flat = a.reshape(-1)
        flat[0], flat[1], flat[2], flat[3] = np.nan, np.inf, -np.inf, 0
    return a


def _same(got, want, rtol=None):
    assert type(got) is xp.Array, type(got)
    g = got.numpy()
    want = np.asarray(want)
    assert g.shape == want.shape and g.dtype == want.dtype, (g.shape, g.dtype, want.shape, want.dtype)
    low = want.dtype in (np.float32, np.complex64, np.float16)
    tol = rtol if rtol is not None else 1e-5 if low else 1e-12
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol, equal_nan=True)


def _no_allgather(log):
    assert not [r for r in log.records if r.op == "allgather"], log.records


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_functions_match_numpy_with_no_collective(mesh, dtype):
    for shape in [(5, 7), (3,), (0, 3)]:
        a = _data(shape, dtype)
        x = xp.asarray(a)
        with sa.comm_log() as log, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _same(np.exp2(x), np.exp2(a))
            _same(xp.exp2(x), np.exp2(a))
            _same(np.sinc(x), np.sinc(a))
            _same(np.nan_to_num(x), np.nan_to_num(a))
            _same(np.nan_to_num(x, nan=-1.5, posinf=7, neginf=-7.0), np.nan_to_num(a, nan=-1.5, posinf=7, neginf=-7.0))
            if np.dtype(dtype).kind != "c":
                _same(np.heaviside(x, 0.5), np.heaviside(a, 0.5))
                _same(xp.heaviside(x, x), np.heaviside(a, a))
        assert not log.records, log.records


def test_elementwise_details(mesh):
    z = np.zeros(4, np.float32)
    _same(xp.sinc(xp.asarray(z)), np.sinc(z))
    _same(xp.exp2(xp.asarray(np.arange(3, dtype=np.int8))), np.exp2(np.arange(3, dtype=np.int8)))  # float16
    _same(
        np.heaviside(xp.asarray([-1.0, 0.0, np.nan]), xp.asarray([[0.25], [0.75]])),
        np.heaviside([-1.0, 0.0, np.nan], [[0.25], [0.75]]),
    )
    b = np.array([np.nan, np.inf, -np.inf, 2.0])
    x = xp.asarray(b)
    assert xp.nan_to_num(x, copy=False) is x
    np.testing.assert_array_equal(x.numpy(), np.nan_to_num(b))
    i = xp.asarray(np.arange(5))
    out = xp.nan_to_num(i)
    assert out is not i and type(out) is xp.Array
    np.testing.assert_array_equal(out.numpy(), np.arange(5))
    fill = xp.asarray([1.0, 2.0, 3.0, 4.0])
    _same(xp.nan_to_num(xp.asarray(b), nan=fill), np.nan_to_num(b, nan=[1.0, 2.0, 3.0, 4.0]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128])
def test_polyval_matches_numpy(mesh, dtype):
    a = _data((5, 7), dtype, special=False)
    x = xp.asarray(a)
    for p in ([1.0, -2.0, 3.0], [2, 1], [4.0], np.array([1.5, 0.0, -1.0, 2.0])):
        _same(np.polyval(p, x), np.polyval(p, a))
    pa = _data((4,), dtype, seed=3, special=False)
    _same(np.polyval(xp.asarray(pa), x), np.polyval(pa, a))
    _same(xp.polyval(xp.asarray(pa), 2.0), np.polyval(pa, 2.0))
    rows = np.arange(6.0).reshape(2, 3)  # NumPy: rows of coefficients, broadcast against x
    _same(np.polyval(rows, xp.asarray(a[0, :3])), np.polyval(rows, a[0, :3]))
    _same(xp.polyval([], x), np.polyval(np.zeros(0), a))
    _same(xp.polyval([1.0, 2.0], xp.asarray(np.zeros((0, 3)))), np.polyval([1.0, 2.0], np.zeros((0, 3))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        inf = np.array([np.inf, -np.inf, np.nan])
        _same(xp.polyval([1.0, 0.0], xp.asarray(inf)), np.polyval([1.0, 0.0], inf))  # NumPy's 0 * inf


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.complex128, np.bool_])
def test_kron_matches_numpy(mesh, dtype):
    for sa_, sb in [((5, 7), (2, 3)), ((3,), (4,)), ((3,), (2, 3)), ((2, 3, 2), (3, 2)), ((0, 3), (2, 2)), ((), (3,))]:
        a, b = _data(sa_, dtype, special=False), _data(sb, dtype, seed=1, special=False)
        _same(np.kron(xp.asarray(a), xp.asarray(b)), np.kron(a, b))
    _same(xp.kron(xp.asarray(a), [1, 2]), np.kron(a, [1, 2]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_diag_matches_numpy_without_a_gather(mesh, dtype):
    m, v = _data((5, 7), dtype), _data((6,), dtype, seed=2)
    for k in (-7, -3, -1, 0, 2, 6, 9):
        with sa.comm_log() as log:
            _same(np.diag(xp.asarray(m), k), np.diag(m, k))
            _same(np.diag(xp.asarray(v), k=k), np.diag(v, k=k))
        _no_allgather(log)
    _same(xp.diag(xp.asarray(np.zeros(0, dtype)), 2), np.diag(np.zeros(0, dtype), 2))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128, np.bool_])
def test_convolve_matches_numpy_without_a_gather(mesh, dtype):
    a = _data((11,), dtype, special=False)
    for n in (1, 2, 3, 4, 11):
        v = _data((n,), dtype, seed=n, special=False)
        for mode in ("full", "same", "valid"):
            with sa.comm_log() as log:
                _same(np.convolve(xp.asarray(a), xp.asarray(v), mode), np.convolve(a, v, mode), rtol=1e-4)
                _same(xp.convolve(xp.asarray(v), xp.asarray(a), mode=mode), np.convolve(v, a, mode=mode), rtol=1e-4)
            _no_allgather(log)
    _same(xp.convolve(xp.asarray(a), [1, 2]), np.convolve(a, [1, 2]), rtol=1e-4)
    if dtype == np.float64:
        s = np.array([1.0, np.nan, 2.0, np.inf, 3.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _same(xp.convolve(xp.asarray(s), xp.asarray([0.5, 1.0])), np.convolve(s, [0.5, 1.0]))


WHERE_CALLS = {
    "sum": lambda f, a, m, ax: f.sum(a, axis=ax, where=m),
    "prod": lambda f, a, m, ax: f.prod(a, axis=ax, where=m, keepdims=True),
    "mean": lambda f, a, m, ax: f.mean(a, axis=ax, where=m),
    "std": lambda f, a, m, ax: f.std(a, axis=ax, where=m, ddof=1),
    "var": lambda f, a, m, ax: f.var(a, axis=ax, where=m, keepdims=True),
    "max": lambda f, a, m, ax: f.max(a, axis=ax, where=m, initial=-50),
    "min": lambda f, a, m, ax: f.min(a, axis=ax, where=m, initial=50),
    "any": lambda f, a, m, ax: f.any(a > 1, axis=ax, where=m),
    "all": lambda f, a, m, ax: f.all(a > -1, axis=ax, where=m),
    "nansum": lambda f, a, m, ax: f.nansum(a, axis=ax, where=m),
    "nanprod": lambda f, a, m, ax: f.nanprod(a, axis=ax, where=m),
    "nanmean": lambda f, a, m, ax: f.nanmean(a, axis=ax, where=m),
    "nanstd": lambda f, a, m, ax: f.nanstd(a, axis=ax, where=m),
    "nanvar": lambda f, a, m, ax: f.nanvar(a, axis=ax, where=m, ddof=1),
    "nanmax": lambda f, a, m, ax: f.nanmax(a, axis=ax, where=m, initial=-50),
    "nanmin": lambda f, a, m, ax: f.nanmin(a, axis=ax, where=m, initial=50),
    "add.reduce": lambda f, a, m, ax: np.add.reduce(a, axis=ax, where=m),
    "method": lambda f, a, m, ax: a.mean(axis=ax, where=m),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_reductions_take_where_as_numpy(mesh, dtype):
    a = _data((5, 7), dtype)
    if np.dtype(dtype).kind == "f":
        a[0, :2] = [np.nan, np.inf]
    x = xp.asarray(a)
    rng = np.random.default_rng(5)
    masks = [rng.random((5, 7)) > 0.4, rng.random(7) > 0.5, np.zeros((5, 1), bool)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for m in masks:
            for call in WHERE_CALLS.values():
                for ax in (None, 0, 1):
                    want = call(np, a, m, ax)
                    _same(call(np, x, xp.asarray(m), ax), want, rtol=1e-4)
        _same(np.sum(x, axis=0, where=False), np.sum(a, axis=0, where=False))
        _same(np.sum(x, axis=1, where=[True] * 7), np.sum(a, axis=1, where=[True] * 7))


def test_where_errors_are_typed(mesh):
    x, m = xp.asarray(np.arange(6.0).reshape(2, 3)), xp.asarray([True, False, True])
    with pytest.raises(sa.ArgumentError, match="initial="):
        np.max(x, where=m)
    with pytest.raises(sa.ArgumentError, match="initial="):
        np.nanmin(x, axis=0, where=m)
    with pytest.raises(sa.DTypeError, match="bool"):
        np.sum(x, where=xp.asarray([1, 0, 1]))
    with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
        np.mean(x, where=np.array([True, False, True]))  # a NumPy mask does not mix in silently
    with pytest.raises(sa.DimensionError):
        np.sum(x, where=xp.asarray(np.ones((2, 2, 3), bool)))


def test_bad_input_gives_typed_errors(mesh):
    x = xp.asarray(np.arange(6.0))
    with pytest.raises(sa.DTypeError):
        xp.heaviside(xp.asarray([1j]), 0.5)
    with pytest.raises(sa.DTypeError):
        xp.exp2([1.0, 2.0])
    with pytest.raises(sa.DTypeError):
        xp.nan_to_num(x, nan="zero")
    with pytest.raises(sa.DTypeError):
        xp.polyval([1.0, 2.0], [3.0])  # no array at all
    with pytest.raises(sa.DTypeError):
        xp.polyval(3.0, x)
    with pytest.raises(sa.DTypeError):
        xp.polyval(["a"], x)
    with pytest.raises(sa.DimensionError):
        xp.diag(xp.reshape(xp.arange(8.0), (2, 2, 2)))
    with pytest.raises(sa.ArgumentError):
        xp.diag(x, k=1.5)
    with pytest.raises(sa.ArgumentError, match="mode"):
        xp.convolve(x, x, mode="wrap")
    with pytest.raises(sa.DimensionError, match="empty"):
        xp.convolve(x, xp.asarray(np.zeros(0)))
    with pytest.raises(sa.DimensionError, match="1-D"):
        np.convolve(xp.reshape(x, (2, 3)), x)
    with pytest.raises(sa.DTypeError):
        xp.kron([1, 2], [3, 4])


def test_gradients_flow(mesh):
    p = xp.asarray(np.linspace(-1.0, 1.0, 7))
    g = sa.grad(lambda t: xp.sum(xp.sinc(t) + xp.exp2(t) + xp.heaviside(t, 0.5)))(p)
    t = np.linspace(-1.0, 1.0, 7)
    with np.errstate(all="ignore"):
        dsinc = np.where(t == 0, 0.0, (np.cos(np.pi * t) * np.pi * t - np.sin(np.pi * t)) / (np.pi * t**2))
    np.testing.assert_allclose(g.numpy(), dsinc + np.exp2(t) * np.log(2.0), rtol=1e-10, atol=1e-12)
    mask = xp.asarray(t > 0)
    gw = sa.grad(lambda q: np.mean(q, where=mask))(p)
    np.testing.assert_allclose(gw.numpy(), (t > 0) / (t > 0).sum())
