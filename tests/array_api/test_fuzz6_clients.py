"""What third-party clients hit on positional arrays (fuzz round 6, scikit-learn/xarray/SciPy on xp arrays).

- ``__array_namespace_info__().dtypes()`` gives ``np.dtype`` objects (a dict keyed by them finds ``x.dtype``;
  scikit-learn's LogisticRegression and PoissonRegressor failed on the NumPy scalar types);
- ``x[mask, :]``, ``x[mask, 1]``: a mask followed by basic indices (scikit-learn's ``X[y == k, :]``);
- ``xp.cumsum``/``xp.cumprod`` and ``xp.cov`` as NumPy's (``np.cov`` of an xp array dispatches there);
- ``xp.std``/``xp.var`` take NumPy's ``ddof=``, ``xp.any``/``xp.all`` NumPy's ``out=None`` (xarray passes them);
- ``mean`` divides by the count (``* (1 / 9)`` made the mean of nine 14s 13.999999999999998).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"r": 2, "c": 2}, {"all": 4}, {"r": 3, "c": 2}, {"a": 2, "b": 2, "c": 2}, {"one": 1}]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request: pytest.FixtureRequest):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m):
        yield m


def test_info_dtypes_are_dtype_objects(mesh: sa.Mesh) -> None:
    info = xp.__array_namespace_info__()
    for x in (xp.asarray(np.ones(3)), xp.asarray(np.arange(3)), xp.asarray(np.ones(3, bool))):
        assert {v: k for k, v in info.dtypes().items()}[x.dtype] == x.dtype.name
    assert info.default_dtypes()["real floating"] == np.dtype("float64")
    assert all(isinstance(d, np.dtype) for d in info.dtypes(kind="integral").values())


@pytest.mark.parametrize(
    "key",
    [(slice(None),), (1,), (slice(0, 2),), (Ellipsis, 0), (None,), (-1, slice(None, None, -1)), (slice(1, None), 0)],
    ids=repr,
)
def test_mask_then_basic_indices(mesh: sa.Mesh, key: tuple) -> None:
    a = np.arange(60.0).reshape(5, 4, 3)
    m = np.array([True, False, True, True, False])
    got = xp.asarray(a)[(xp.asarray(m), *key)]
    assert type(got) is xp.Array
    np.testing.assert_array_equal(np.asarray(got), a[(m, *key)])
    got = xp.asarray(a)[(np.ones((5, 4), bool), 1)]  # a 2-D mask, then an int
    np.testing.assert_array_equal(np.asarray(got), a[np.ones((5, 4), bool), 1])


def test_mask_with_an_integer_array_is_its_nonzero_indices(mesh: sa.Mesh) -> None:
    """A mask beside an integer array is the mask's ``nonzero()`` indices, as NumPy (refused before round 11);
    indices that do not broadcast are a ``DimensionError`` (NumPy: an ``IndexError``)."""
    a, m = np.arange(12.0).reshape(4, 3), np.array([True, False, True, True])
    x = xp.asarray(a)
    np.testing.assert_array_equal(x[xp.asarray(m), np.array([0, 1, 2])].numpy(), a[m, np.array([0, 1, 2])])
    with pytest.raises(sa.DimensionError, match="broadcast"):
        x[xp.asarray(m), np.array([0, 1])]


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["int8", "bool", "float64"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumsum_cumprod_as_numpy(mesh: sa.Mesh, fn: str, dtype: str, axis: int | None) -> None:
    a = np.random.default_rng(0).integers(-3, 3, (5, 3)).astype(dtype)
    got, want = getattr(xp, fn)(xp.asarray(a), axis=axis), getattr(np, fn)(a, axis=axis)
    assert type(got) is xp.Array and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("shape", [(3, 7), (1, 5), (7,), (4, 1), (2, 0), (0, 3)])
@pytest.mark.parametrize("kw", [{}, {"rowvar": False}, {"bias": True}, {"ddof": 2}], ids=repr)
def test_cov_as_numpy(mesh: sa.Mesh, shape: tuple[int, ...], kw: dict) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.cov(a, **kw)
        got = xp.cov(xp.asarray(a), **kw)
        assert type(got) is xp.Array and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-12)
        np.testing.assert_allclose(np.asarray(np.cov(xp.asarray(a), **kw)), want, atol=1e-12)  # the protocol
        try:
            want = np.cov(a, b, **kw)
        except ValueError:  # (NumPy's own refusal: y's shape does not fit)
            return
        np.testing.assert_allclose(np.asarray(xp.cov(xp.asarray(a), xp.asarray(b), **kw)), want, atol=1e-12)


def test_cov_weights_and_dtypes(mesh: sa.Mesh) -> None:
    rng = np.random.default_rng(2)
    a, f, w = rng.standard_normal((3, 6)), np.array([1, 2, 1, 3, 1, 1]), rng.random(6)
    for kw in (
        {"fweights": f},
        {"fweights": f * 1.0},
        {"aweights": w},
        {"fweights": f, "aweights": w},
        {"aweights": w, "bias": True},
    ):
        np.testing.assert_allclose(np.asarray(xp.cov(xp.asarray(a), **kw)), np.cov(a, **kw), atol=1e-12)
    ints, cplx = rng.integers(0, 5, (3, 8)), a + 1j * rng.standard_normal((3, 6))
    for v in (ints, cplx, cplx.astype(np.complex64)):
        got = xp.cov(xp.asarray(v))
        assert got.dtype == np.cov(v).dtype
        np.testing.assert_allclose(np.asarray(got), np.cov(v), atol=1e-6)
    with pytest.raises(sa.DTypeError, match="fweights must be integers"):
        xp.cov(xp.asarray(a), fweights=f + 0.5)
    with pytest.raises(sa.DimensionError, match="one weight per observation"):
        xp.cov(xp.asarray(a), aweights=w[:5])


def test_std_var_ddof_and_any_all_out(mesh: sa.Mesh) -> None:
    a = np.random.default_rng(3).standard_normal((4, 6))
    for fn in ("std", "var"):
        got = getattr(xp, fn)(xp.asarray(a), axis=1, ddof=1)
        np.testing.assert_allclose(np.asarray(got), getattr(np, fn)(a, axis=1, ddof=1))
        with pytest.raises(sa.ArgumentError, match="not both"):
            getattr(xp, fn)(xp.asarray(a), correction=1, ddof=1)
    assert bool(xp.any(xp.asarray(a) > 0, out=None)) and not bool(xp.all(xp.asarray(a) > 0, out=None))
    with pytest.raises(sa.ArgumentError, match="out= is not supported"):
        xp.any(xp.asarray(a), out=np.empty(()))


def test_mean_divides_by_the_count(mesh: sa.Mesh) -> None:
    assert float(xp.mean(xp.asarray(np.full(9, 14.0)))) == 14.0
    x = sa.asarray(np.full((9, 2), 14.0), dims=("i", "j"), mesh=mesh, layout={"i": mesh.axis_names[0]})
    np.testing.assert_array_equal(sa.mean(x, "i").numpy(), [14.0, 14.0])


@pytest.mark.parametrize("fn", ["quantile", "nanquantile", "median"])
def test_quantile_dtypes_as_numpy(mesh: sa.Mesh, fn: str) -> None:
    """NumPy's result dtype: x's for the picking methods (int8 stays int8), x's promoted with q's otherwise (a
    float64 q array makes a float32 x's quantiles float64, as xarray's quantile passes it; a Python float keeps
    float32)."""
    rng = np.random.default_rng(4)
    arrays = (rng.standard_normal(7).astype(np.float32), np.arange(7, dtype=np.int8)[::-1].copy(), rng.random(5) > 0.5)
    qs = (0.4, 1, np.float64(0.4), [0.1, 0.9], np.array([0.1, 0.9]), np.array([0.1, 0.9], dtype=np.float32))
    methods = ("linear", "lower", "higher", "midpoint")  # (nanquantile's; quantile has every NumPy method)
    methods += ("nearest", "hazen", "inverted_cdf") if fn == "quantile" else ()
    for a in arrays:
        if fn == "median":
            want, got = np.median(a), xp.median(xp.asarray(a))
            assert got.dtype == want.dtype
            np.testing.assert_allclose(np.asarray(got).astype(float), want.astype(float), rtol=1e-6)
            continue
        for q in qs:
            for method in methods:
                try:
                    want = getattr(np, fn)(a, q, method=method)
                except TypeError:  # (NumPy refuses interpolating bools)
                    continue
                got = getattr(xp, fn)(xp.asarray(a), q, method=method)
                assert got.dtype == want.dtype, (a.dtype, q, method)
                np.testing.assert_allclose(np.asarray(got).astype(float), want.astype(float), rtol=1e-6)


@pytest.mark.parametrize("fn", ["logical_and", "logical_or", "logical_xor"])
def test_logical_functions_take_numbers_as_their_truth(mesh: sa.Mesh, fn: str) -> None:
    """As NumPy: ``x != 0`` of numeric operands (a NaN is true); the standard asks for bools and scikit-learn's
    ``roc_curve`` passes float differences (it was a DTypeError)."""
    a, b = np.array([0.0, 1.0, np.nan, 2.0, -0.0]), np.array([3, 0, 0, 1, 0])
    for x, y in ((a, b), (a, 2.5), (0, b), (a > 0, b)):
        xs, ys = (xp.asarray(v) if isinstance(v, np.ndarray) else v for v in (x, y))
        got = getattr(xp, fn)(xs, ys)
        assert type(got) is xp.Array and got.dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(got), getattr(np, fn)(x, y))
    np.testing.assert_array_equal(np.asarray(xp.logical_not(xp.asarray(a))), np.logical_not(a))


def test_diff_takes_n_and_axis_by_position(mesh: sa.Mesh) -> None:
    a = np.arange(24.0).reshape(4, 6) ** 2
    np.testing.assert_array_equal(np.asarray(xp.diff(xp.asarray(a), 2)), np.diff(a, 2))
    np.testing.assert_array_equal(np.asarray(xp.diff(xp.asarray(a), 1, 0)), np.diff(a, 1, 0))


def test_where_of_a_condition_alone_is_nonzero(mesh: sa.Mesh) -> None:
    a = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    got = xp.where(xp.asarray(a) > 0)
    assert isinstance(got, tuple) and all(type(g) is xp.Array for g in got)
    for g, w in zip(got, np.where(a > 0)):
        np.testing.assert_array_equal(np.asarray(g), w)
    with pytest.raises(sa.DTypeError, match="x2 must be an array"):
        xp.where(xp.asarray(a) > 0, 1.0)


NAN_METHODS = (
    "linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf", "averaged_inverted_cdf", "closest_observation",
    "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased", "normal_unbiased",
)  # fmt: skip


@pytest.mark.parametrize("method", NAN_METHODS)
def test_nanquantile_takes_every_numpy_method(mesh: sa.Mesh, method: str) -> None:
    """Every NumPy method on each slice's count of non-NaN entries (it took four; xarray's quantile(method="nearest")
    with skipna failed)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 11))
    a[rng.random(a.shape) < 0.3] = np.nan
    a[1] = np.nan
    a[3] = np.round(a[3] * 2) / 2  # (ties)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for q in (0.0, 0.1, 0.25, 0.5, 0.6, 1.0, [0.3, 0.77]):
            got = xp.nanquantile(xp.asarray(a), q, axis=1, method=method)
            np.testing.assert_allclose(np.asarray(got), np.nanquantile(a, q, axis=1, method=method), equal_nan=True)


@pytest.mark.parametrize("shape", [(7,), (5, 6), (3, 4, 5)])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_as_numpy(mesh: sa.Mesh, shape: tuple[int, ...], edge_order: int) -> None:
    """xp.gradient (and np.gradient of an xp array), uniform or by coordinates (xarray's differentiate needs it)."""
    rng = np.random.default_rng(6)
    f = rng.standard_normal(shape)
    coords = [np.cumsum(rng.random(s) + 0.1) for s in shape]

    def listed(v: object) -> list:
        return list(v) if isinstance(v, (tuple, list)) else [v]

    for args in ((), (0.5,), tuple(coords)):
        want = listed(np.gradient(f, *args, edge_order=edge_order))
        calls = [xp.gradient(xp.asarray(f), *args, edge_order=edge_order)]
        if not any(isinstance(a, np.ndarray) for a in args):  # (the protocol mixes no NumPy array in)
            calls.append(np.gradient(xp.asarray(f), *args, edge_order=edge_order))
        for got in map(listed, calls):
            assert len(got) == len(want) and all(type(g) is xp.Array for g in got)
        for g, w in zip(listed(xp.gradient(xp.asarray(f), *args, edge_order=edge_order)), want):
            np.testing.assert_allclose(np.asarray(g), w, atol=1e-12)
    got = xp.gradient(xp.asarray(f), xp.asarray(coords[-1]), axis=-1, edge_order=edge_order)
    np.testing.assert_allclose(np.asarray(got), np.gradient(f, coords[-1], axis=-1, edge_order=edge_order))
    ints = rng.integers(0, 9, shape)
    got = xp.gradient(xp.asarray(ints), axis=0)
    assert got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), np.gradient(ints, axis=0))
    with pytest.raises(sa.DimensionError, match="needs at least"):
        xp.gradient(xp.asarray(f[:1]), axis=0)


def test_std_var_of_integers_and_bools_as_numpy(mesh: sa.Mesh) -> None:
    """Taken as float64, as NumPy does (xarray's std/var of integer data call xp.std(ints, ddof=...))."""
    for a in (np.arange(12).reshape(3, 4), np.array([[True, False, True], [False, False, True]])):
        for fn in ("std", "var"):
            got = getattr(xp, fn)(xp.asarray(a), axis=0, ddof=1)
            assert got.dtype == np.float64
            np.testing.assert_allclose(np.asarray(got), getattr(np, fn)(a, axis=0, ddof=1))


def test_copies_where_numpy_copies(mesh: sa.Mesh) -> None:
    """concat of one array, tile by ones, clip without bounds and conj of a real array are new arrays, as NumPy's
    (they returned x itself, so a write into the result changed x)."""
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    for make in (lambda: xp.concat([x]), lambda: xp.tile(x, (1, 1)), lambda: xp.clip(x), lambda: xp.conj(x)):
        y = make()
        assert y is not x and type(y) is xp.Array
        y[0, 0] = 99.0
        assert float(x[0, 0]) == 0.0


def test_in_place_operators_with_numpy_scalars_keep_numpys_casting(mesh: sa.Mesh) -> None:
    """``int8 |= np.uint64(1)`` is refused, as NumPy (int8 with uint64 is float64); ``int8 += np.int64(2)`` and
    ``float32 += np.float64(2)`` keep the array's dtype."""
    for op in ("__ior__", "__iand__", "__ixor__", "__iadd__"):
        t = xp.asarray(np.array([1, 2, 3], np.int8))
        with pytest.raises(sa.DTypeError):
            getattr(t, op)(np.uint64(1))
        np.testing.assert_array_equal(np.asarray(t), [1, 2, 3])
    t = xp.asarray(np.array([1, 2, 3], np.int8))
    t += np.int64(2)
    assert t.dtype == np.int8
    np.testing.assert_array_equal(np.asarray(t), [3, 4, 5])
    f = xp.asarray(np.array([1, 2, 3], np.float32))
    f += np.float64(2)
    assert f.dtype == np.float32
    with pytest.raises(sa.DTypeError, match="not a rectangular array"):
        np.add.at(xp.asarray(np.zeros(3)), np.array([0, 1]), [[1, 2], [3]])


def test_cov_gradient_cumsum_corners(mesh: sa.Mesh) -> None:
    """(Left from the MPI fuzzer's report.) Weighted cov of complex data (the weights stay real); gradient keeps
    f's float dtype with float64 coordinates, as NumPy; a bad scan dtype is a DTypeError."""
    c = np.arange(6).reshape(2, 3) * (1 + 1j)
    for kw in ({"fweights": np.array([1, 2, 1])}, {"aweights": np.array([0.5, 1.0, 2.0])}):
        np.testing.assert_allclose(np.asarray(xp.cov(xp.asarray(c), **kw)), np.cov(c, **kw))
    f = np.arange(5, dtype=np.float32) ** 2
    coords = np.cumsum(np.arange(1.0, 6.0))
    got = xp.gradient(xp.asarray(f), coords)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.gradient(f, coords), rtol=1e-6)
    for fn in (xp.cumsum, xp.cumulative_sum, xp.cumulative_prod):
        with pytest.raises(sa.DTypeError, match="unknown dtype"):
            fn(xp.asarray(np.arange(5.0)), dtype="nope")
