"""Fuzz round 12 of the sorting, set, quantile, histogram, nan-reduction and scan routines on the CuPy path.

Run under ``--backend=cupy`` (``SHARDARRAY_TEST_BACKEND=cupy``: the strict stand-in of tests/support/strict_cupy.py,
CuPy 14.2's functions and parameters) with ``strict_cupy.NUMPY_DISPATCH = "raise"``: a NumPy function the library
applies to a shard (which real CuPy would take through ``__array_function__``, against the library's rule that
shards go through ``mesh.backend.xp``) fails the test. Each routine is compared with NumPy on the gathered value:
complex values with NaN parts, NaN, infinities and signed zeros, on meshes 1, 2x2, 4, 2x2x2, 3x2 whose layouts
leave uneven and empty blocks. The same tests run on NumPy shards. Regressions of the bugs the fuzzers found close
the file.

``FUZZ12_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import strict_cupy
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import backend_name, layouts, on_real_cupy
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

# ruff: noqa: B023 (the lambdas given check() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

ENV = "FUZZ12_EXAMPLES"
REAL = ("float64", "float32", "float16", "int64", "int8", "uint8", "bool")
COMPLEX = ("complex128", "complex64")
SIDES = (0, 1, 2, 3, 5, 7)


@pytest.fixture(autouse=True)
def _no_numpy_on_shards(monkeypatch):
    """A NumPy function applied to a stand-in shard by the library raises (no effect on NumPy shards)."""
    monkeypatch.setattr(strict_cupy, "NUMPY_DISPATCH", "raise")


# --------------------------------------------------------------------------------------------- data


def _values(rng: np.random.Generator, shape: tuple, dtype) -> np.ndarray:
    """Few distinct values (ties), integer extremes, NaN/inf/-0.0 in floats; complex parts drawn alike."""
    n, dt = math.prod(shape), np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        v = rng.integers(0 if dt.kind == "u" else -3, 4, n).astype(dt)
        hit = rng.random(n) < 0.2
        v[hit] = rng.choice(np.array([np.iinfo(dt).min, np.iinfo(dt).max], dt), int(hit.sum()))
        return v.reshape(shape)

    def part() -> np.ndarray:
        v = rng.integers(-3, 4, n) / 2.0
        hit = rng.random(n) < 0.25
        v[hit] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], int(hit.sum()))
        return v

    v = part() + 1j * part() if dt.kind == "c" else part()
    if dt.kind == "c":  # (``a + 1j * b`` makes ``nan + nanj`` of any inf part times 1j's zero: rebuild exactly)
        v = np.empty(n, dtype=np.complex128)
        v.real, v.imag = part(), part()
    return v.astype(dt).reshape(shape)


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout (dims of size 1 unsplit)."""
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


@st.composite
def case(draw, dtypes=REAL + COMPLEX, min_dims=1, max_dims=2, sides=SIDES):
    mesh = draw(meshes())
    shape = tuple(draw(st.sampled_from(sides)) for _ in range(draw(st.integers(min_dims, max_dims))))
    a = _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, draw(st.sampled_from(dtypes)))
    return mesh, a, draw(placed(a, mesh))


def _got(r):
    if isinstance(r, (tuple, list)):
        return [_got(v) for v in r]
    return r.numpy() if hasattr(r, "numpy") else np.asarray(r)


def _same(got, expected, tol: float = 0.0) -> None:
    """Shape, dtype and values (NaN equal to NaN; within ``tol`` relative to the largest magnitude)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, list) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _same(g, e, tol)
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
    if e.dtype.kind in "fc" and tol:
        finite = np.isfinite(e)
        scale = max(1.0, float(np.max(np.abs(e[finite])))) if finite.any() else 1.0
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


def _tol(dtype) -> float:
    """Reduction-order tolerance of ``dtype`` (sums in another order than NumPy's pairwise ones)."""
    kind = np.dtype(dtype)
    return {"float16": 5e-3, "float32": 2e-5, "complex64": 2e-5}.get(kind.name, 1e-12)


# ============================================================================================= sorting, searching


@fuzz(30, ENV)
@given(case(), st.data())
def test_fuzz_sort_argsort_searchsorted(c, data):
    mesh, a, x = c
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    check(lambda: np.sort(a, axis=axis), lambda: np.sort(x, axis=axis))
    check(lambda: np.argsort(a, axis=axis, kind="stable"), lambda: np.argsort(x, axis=axis, kind="stable"))
    check(lambda: np.sort(a, axis=None), lambda: np.sort(x, axis=None))
    check(
        lambda: np.flip(np.sort(np.flip(a, axis), axis=axis, kind="stable"), axis),
        lambda: xp.sort(x, axis=axis, descending=True, stable=True),
    )
    flat = a.ravel()
    side = data.draw(st.sampled_from(["left", "right"]))
    srt = np.argsort(flat, kind="stable")
    xf, xs = data.draw(placed(flat, mesh)), data.draw(placed(srt, mesh))
    check(lambda: np.searchsorted(flat, a, side=side, sorter=srt), lambda: xp.searchsorted(xf, x, side=side, sorter=xs))
    s = np.sort(flat)
    check(lambda: np.searchsorted(s, a, side=side), lambda: np.searchsorted(data.draw(placed(s, mesh)), x, side=side))


# ============================================================================================= unique, sets


@fuzz(30, ENV)
@given(case(), st.data())
def test_fuzz_unique_and_set_routines(c, data):
    mesh, a, x = c
    en = data.draw(st.booleans())
    check(
        lambda: list(np.unique(a, True, True, True, equal_nan=en)), lambda: np.unique(x, True, True, True, equal_nan=en)
    )
    ref = np.unique(a, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)  # (the API's)
    got = xp.unique_all(x)
    check(lambda: [ref[0], ref[1], ref[2].reshape(a.shape), ref[3]], lambda: list(got))
    check(lambda: np.sort(np.unique_values(a)), lambda: xp.unique_values(x))
    if a.ndim == 2 and a.dtype.kind != "c" and a.dtype != np.float16:
        # (NumPy's axis= unique sorts rows as structured values: complex rows are refused; float16 rows put NaN
        # first, where float32 and float64 rows, and the library, put it last)
        axis = data.draw(st.integers(0, 1))
        check(
            lambda: list(np.unique(a, True, True, True, axis=axis, equal_nan=en)),
            lambda: np.unique(x, True, True, True, axis=axis, equal_nan=en),
        )
    n = data.draw(st.sampled_from(SIDES))
    b = _values(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), (n,), a.dtype)
    y = data.draw(placed(b, mesh))
    invert = data.draw(st.booleans())
    check(lambda: np.isin(a, b, invert=invert), lambda: np.isin(x, y, invert=invert))
    check(lambda: list(np.intersect1d(a, b, return_indices=True)), lambda: np.intersect1d(x, y, return_indices=True))
    check(lambda: np.union1d(a, b), lambda: np.union1d(x, y))
    check(lambda: np.setdiff1d(a, b), lambda: np.setdiff1d(x, y))
    check(lambda: np.setxor1d(a, b), lambda: np.setxor1d(x, y))


# ============================================================================================= quantiles

METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf", "averaged_inverted_cdf",
           "closest_observation", "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
           "normal_unbiased")  # fmt: skip


@fuzz(30, ENV)
@given(case(dtypes=("float64", "float32", "int64", "int8", "uint8")), st.data())
def test_fuzz_quantile_percentile_median(c, data):
    mesh, a, x = c
    if a.dtype.kind == "i":  # (NumPy subtracts integer neighbours in their dtype: b - a wraps past its range)
        a = a // 2
        x = data.draw(placed(a, mesh))
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim)]))
    method = data.draw(st.sampled_from(METHODS))
    keep = data.draw(st.booleans())
    q = data.draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, [0.1, 0.9], [[0.0], [0.7]]]))
    tol = _tol(a.dtype)
    check(lambda: np.quantile(a, q, axis=axis, method=method, keepdims=keep),
          lambda: np.quantile(x, q, axis=axis, method=method, keepdims=keep), tol)  # fmt: skip
    check(lambda: np.nanquantile(a, q, axis=axis, method=method, keepdims=keep),
          lambda: np.nanquantile(x, q, axis=axis, method=method, keepdims=keep), tol)  # fmt: skip
    p = np.multiply(q, 100).tolist()
    check(lambda: np.percentile(a, p, axis=axis, method=method),
          lambda: np.percentile(x, p, axis=axis, method=method), tol)  # fmt: skip
    check(lambda: np.nanpercentile(a, p, axis=axis, method=method),
          lambda: np.nanpercentile(x, p, axis=axis, method=method), tol)  # fmt: skip
    check(lambda: np.median(a, axis=axis, keepdims=keep), lambda: np.median(x, axis=axis, keepdims=keep), tol)
    check(lambda: np.nanmedian(a, axis=axis, keepdims=keep), lambda: np.nanmedian(x, axis=axis, keepdims=keep), tol)


# ============================================================================================= counts


@fuzz(30, ENV)
@given(case(dtypes=("float64", "float32", "int64", "uint8"), max_dims=1), st.data())
def test_fuzz_histogram_bincount_digitize(c, data):
    mesh, a, x = c
    finite = np.isfinite(a) if a.dtype.kind == "f" else np.ones(a.shape, bool)
    af = a[finite]
    xf = data.draw(placed(af, mesh))
    w = _values(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), af.shape, "float64")
    w = np.where(np.isfinite(w), w, 1.0)
    xw = data.draw(placed(w, mesh))
    bins = data.draw(st.sampled_from([1, 3, 4, [-1.5, 0.0, 0.5, 2.0], [0.0, 0.0, 1.0]]))
    rng = data.draw(st.sampled_from([None, (-1.0, 1.0), (0.0, 0.0)]))
    density = data.draw(st.booleans())
    check(lambda: list(np.histogram(af, bins=bins, range=rng, density=density)),
          lambda: np.histogram(xf, bins=bins, range=rng, density=density), 1e-12)  # fmt: skip
    check(lambda: list(np.histogram(af, bins=bins, range=rng, weights=w, density=density)),
          lambda: np.histogram(xf, bins=bins, range=rng, weights=xw, density=density), 1e-12)  # fmt: skip
    edges = data.draw(st.sampled_from([[-1.0, 0.0, 1.0], [2.0, 0.5, -0.5], [0.0]]))
    right = data.draw(st.booleans())
    check(lambda: np.digitize(a, edges, right=right), lambda: np.digitize(x, edges, right=right))
    if a.dtype.kind in "iu":
        nn = np.abs(a.astype(np.int64)) % 9
        xn = data.draw(placed(nn, mesh))
        wn = data.draw(st.sampled_from([None, "float", "complex"]))
        wt = "float64" if wn == "float" else "complex128"
        wv = None if wn is None else _values(np.random.default_rng(1), nn.shape, wt)
        xv = None if wv is None else data.draw(placed(wv, mesh))
        ml = data.draw(st.sampled_from([0, 4, 12]))
        check(lambda: np.bincount(nn, weights=wv, minlength=ml),
              lambda: np.bincount(xn, weights=xv, minlength=ml), 1e-12)  # fmt: skip


# ============================================================================================= nan-reductions, scans

#: products of complex values with infinite parts: NumPy multiplies in sequence from 1 + 0j (``(1+0j) * (inf+infj)``
#: is NaN: ``np.prod([inf+infj])`` is ``nan+nanj``), and complex multiplication with infinities is not associative,
#: so a product of per-device partial products may give NaN where NumPy's gives an infinity, or the reverse; these
#: are compared on finite complex data only
SEQUENTIAL = ("nanprod", "nancumprod", "cumprod")


@fuzz(30, ENV)
@given(case(dtypes=("float64", "float32", "float16", "int64", "bool", *COMPLEX)), st.data())
def test_fuzz_nan_reductions_and_scans(c, data):
    _, a, x = c
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim)]))
    keep = data.draw(st.booleans())
    tol = _tol(a.dtype)
    for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"):
        if name in ("nanmean", "nanvar", "nanstd") and a.dtype == bool:
            continue
        if name in SEQUENTIAL and a.dtype.kind == "c" and np.isinf(a).any():
            continue
        f = getattr(np, name)
        check(lambda: f(a, axis=axis, keepdims=keep), lambda: f(x, axis=axis, keepdims=keep), tol)
    if a.dtype.kind != "c":
        check(lambda: np.nanvar(a, axis=axis, ddof=1), lambda: np.nanvar(x, axis=axis, ddof=1), tol)
    for name in ("nanargmax", "nanargmin"):
        f = getattr(np, name)
        check(lambda: f(a, axis=axis), lambda: f(x, axis=axis))
    for name in ("nancumsum", "nancumprod", "cumsum", "cumprod"):
        if name in SEQUENTIAL and a.dtype.kind == "c" and np.isinf(a).any():
            continue
        f = getattr(np, name)
        check(lambda: f(a, axis=axis), lambda: f(x, axis=axis), tol)
    if a.ndim == 1 or axis is not None:
        ax = 0 if axis is None else axis
        init = data.draw(st.booleans())
        check(lambda: np.cumulative_sum(a, axis=ax, include_initial=init),
              lambda: xp.cumulative_sum(x, axis=ax, include_initial=init), tol)  # fmt: skip
        if not (a.dtype.kind == "c" and np.isinf(a).any()):
            check(lambda: np.cumulative_prod(a, axis=ax, include_initial=init),
                  lambda: xp.cumulative_prod(x, axis=ax, include_initial=init), tol)  # fmt: skip


# ============================================================================================= regressions


def _positional(a: np.ndarray, mesh_shape: dict, layout: dict | None = None) -> xp.Array:
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=sa.Mesh(mesh_shape), layout=layout or {}), xp.Array)


@pytest.mark.parametrize("q", [[[0.1], [0.7]], [[0.5, 0.0, 1.0]], [[0.25]]])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_quantiles_of_a_2d_q_have_its_shape_in_front(q, axis):
    """NumPy takes a 2-D ``q`` (its result: ``q``'s shape, then the reduced array's); it refused it before."""
    a = np.arange(12.0).reshape(3, 4)
    a[0, 1] = np.nan
    x = _positional(a, {"row": 2, "col": 2}, {"dim0": ("row",), "dim1": ("col",)})
    p = np.multiply(q, 100).tolist()
    for keep in (False, True):
        check(lambda: np.quantile(a, q, axis=axis, keepdims=keep), lambda: np.quantile(x, q, axis=axis, keepdims=keep))
        check(
            lambda: np.nanquantile(a, q, axis=axis, keepdims=keep, method="hazen"),
            lambda: np.nanquantile(x, q, axis=axis, keepdims=keep, method="hazen"),
        )
        check(lambda: np.percentile(a, p, axis=axis), lambda: np.percentile(x, p, axis=axis))
        check(lambda: np.nanpercentile(a, p, axis=axis), lambda: np.nanpercentile(x, p, axis=axis))
    with pytest.raises(sa.DimensionError, match="2-D"):  # (NumPy: "q must be a scalar or 1d" past 2-D)
        xp.quantile(x, [q], axis=axis)


@pytest.mark.parametrize("method", ["lower", "higher", "nearest", "inverted_cdf", "closest_observation", "linear"])
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_quantiles_pick_integers_exactly(method, dtype):
    """A picking method reads the integers as they are (they went through float64 before: 2**63 - 1 came back as
    -2**63, 2**64 - 1 as 0)."""
    info = np.iinfo(dtype)
    a = np.array([info.max, 0, info.max - 1, info.min, 5], dtype=dtype)
    x = _positional(a, {"p": 3, "q": 2}, {"dim0": ("p", "q")})
    q = [0.0, 0.6, 1.0] if method != "linear" else [0, 1]
    check(lambda: np.quantile(a, q, method=method), lambda: np.quantile(x, q, method=method))
    check(lambda: np.nanpercentile(a, 100, method=method), lambda: np.nanpercentile(x, 100, method=method))


def test_bincount_of_no_data_ignores_the_weights_dtype():
    """NumPy returns int64 zeros for an empty ``x`` before it casts the weights (complex ones too)."""
    x = _positional(np.zeros(0, np.int64), {"row": 2, "col": 2}, {"dim0": ("row", "col")})
    w = x.astype("complex128")
    check(lambda: np.bincount(np.zeros(0, np.int64), weights=np.zeros(0, complex), minlength=3),
          lambda: np.bincount(x, weights=w, minlength=3))  # fmt: skip


@pytest.mark.parametrize("name", ["nanquantile", "nanpercentile", "quantile", "percentile"])
def test_quantiles_of_no_complex_data_refuse_as_numpy(name):
    """NumPy raises TypeError ("a must be an array of real numbers") for complex data, also an empty array; the
    nan-quantiles of an empty complex array gave NaN before."""
    x = _positional(np.zeros((0, 3), np.complex128), {"all": 4}, {"dim0": ("all",)})
    with pytest.raises(TypeError):
        getattr(np, name)(np.zeros((0, 3), np.complex128), 50 if "per" in name else 0.5, axis=0)
    with pytest.raises(sa.DTypeError, match="complex"):
        getattr(np, name)(x, 50 if "per" in name else 0.5, axis=0)


# ============================================================================================= the stand-in


def test_stand_in_partitions_read_kth_as_cupy(monkeypatch):
    """CuPy 14.2's partitions: ``kth`` a Python int or a sequence (a NumPy integer is iterated: TypeError), in
    range; an in-place sort or partition of a view that is not C-contiguous raises; ``argpartition`` of an empty
    axis has shape ``(0,)``."""
    cp = strict_cupy.StrictCupy(gpus=1).install(monkeypatch).module
    a = cp.asarray(np.array([[3.0, 1.0, 2.0, 0.0], [5.0, 4.0, 6.0, 7.0]]))
    assert cp.partition(a, 1)[:, 1].get().tolist() == [1.0, 5.0]
    assert cp.partition(a, [np.int64(0), 3], axis=None)[[0, 3]].get().tolist() == [0.0, 3.0]
    with pytest.raises(TypeError, match="not iterable"):
        cp.partition(a, np.int64(1))
    with pytest.raises(ValueError, match="out of bounds"):
        cp.argpartition(a, 4)
    with pytest.raises(NotImplementedError, match="non-contiguous"):
        a.T.sort()
    with pytest.raises(NotImplementedError, match="non-contiguous"):
        a[:, ::2].partition(0)
    assert cp.argpartition(cp.zeros((3, 0)), 0).shape == (0,)


def test_stand_in_notes_numpy_functions_and_host_reads_of_the_library(monkeypatch):
    """A NumPy function applied to a device array by a ``shardarray`` module is recorded (``NUMPY_ON_DEVICE``) or
    refused (``NUMPY_DISPATCH = "raise"``); a test's own calls and the operators are not; implicit host reads
    by the library are recorded (``HOST_SYNCS``)."""
    cp = strict_cupy.StrictCupy(gpus=1).install(monkeypatch).module
    monkeypatch.setattr(strict_cupy, "NUMPY_ON_DEVICE", [])
    monkeypatch.setattr(strict_cupy, "HOST_SYNCS", [])
    monkeypatch.setattr(strict_cupy, "NUMPY_DISPATCH", "record")
    a = cp.asarray(np.array([3.0, 1.0, 2.0]))
    scope = {"__name__": "shardarray.fuzz12_probe", "np": np, "a": a}
    exec("def sort():\n    return np.sort(a)\n\ndef reads():\n    return bool(a[0] > 1), float(a[1]), a + 1", scope)
    assert scope["sort"]().get().tolist() == [1.0, 2.0, 3.0]
    scope["reads"]()
    np.sort(a)  # (a test's call: not the library's)
    assert strict_cupy.NUMPY_ON_DEVICE == [("sort", "shardarray.fuzz12_probe:2")]
    assert strict_cupy.HOST_SYNCS == [("bool()", "shardarray.fuzz12_probe:5"), ("float()", "shardarray.fuzz12_probe:5")]
    monkeypatch.setattr(strict_cupy, "NUMPY_DISPATCH", "raise")
    with pytest.raises(TypeError, match=r"numpy\.sort applied to a cupy\.ndarray at shardarray\.fuzz12_probe:2"):
        scope["sort"]()


def _probe_ops(mesh) -> dict:
    """name -> a call of each routine of this file on arrays split over ``mesh`` (uneven blocks, NaN, complex)."""
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (7, 5)).astype(float)
    a[1, 2] = np.nan
    axes = tuple(mesh.axis_names)

    def put(v, layout):
        return as_kind(sa.asarray(v, dims=("i", "j")[: v.ndim], mesh=mesh, layout=layout), xp.Array)

    x = put(a, {"i": axes[:1], "j": axes[1:]})
    v = put(a.ravel(), {"i": axes})
    c = put(a + 1j * a[::-1], {"i": axes})
    n = put(np.abs(np.nan_to_num(a)).astype(np.int64).ravel(), {"i": axes})
    return {
        "sort": lambda: xp.sort(x, axis=0),
        "np.sort flat": lambda: np.sort(v),
        "argsort": lambda: xp.argsort(x, axis=1, descending=True),
        "sort complex": lambda: xp.sort(c, axis=0),
        "unique_all": lambda: xp.unique_all(v),
        "unique complex": lambda: xp.unique_all(c),
        "np.unique": lambda: np.unique(v, return_index=True, return_inverse=True, return_counts=True),
        "np.unique axis": lambda: np.unique(x, axis=0),
        "searchsorted": lambda: xp.searchsorted(xp.sort(v), x),
        "isin": lambda: np.isin(x, v),
        "union1d": lambda: np.union1d(v, n.astype("float64")),
        "quantile": lambda: xp.quantile(x, [0.2, 0.5], axis=0),
        "median": lambda: np.median(x, axis=1),
        "percentile": lambda: np.percentile(v, 30, method="weibull"),
        "histogram": lambda: np.histogram(n, bins=4),
        "histogram edges": lambda: np.histogram(n, bins=[0, 1, 3, 9]),
        "bincount": lambda: np.bincount(n, weights=v, minlength=3),
        "digitize": lambda: np.digitize(v, [-1, 0, 1]),
        "nansum": lambda: np.nansum(x, axis=0),
        "nanargmax": lambda: np.nanargmax(x, axis=0),
        "nancumsum": lambda: np.nancumsum(x, axis=0),
        "cumulative_sum": lambda: xp.cumulative_sum(x, axis=0, include_initial=True),
        "cumprod": lambda: np.cumprod(v),
        "top_k": lambda: sa.top_k(as_kind(x, sa.ShardArray), 2, "j"),
        "cov": lambda: np.cov(x),
    }


@pytest.mark.parametrize("shape", [{"p": 3, "q": 2}, {"row": 2, "col": 2}], ids=str)
def test_routines_read_no_device_value_implicitly(monkeypatch, shape):
    """On CuPy shards these routines wait on the device only through ``backend.to_numpy`` (the counts their
    exchanges need, which tests/ops/sorting/test_on_device.py checks): no ``bool()``/``int()``/``float()``/
    ``.item()``/``.tolist()`` of a device value (each a hidden sync), and no NumPy function on a shard."""
    if backend_name() != "cupy" or on_real_cupy():
        pytest.skip("the stand-in records the host reads: under --backend=cupy without a GPU")
    mesh = sa.Mesh(shape)
    for name, op in _probe_ops(mesh).items():
        monkeypatch.setattr(strict_cupy, "HOST_SYNCS", [])
        op()
        assert strict_cupy.HOST_SYNCS == [], name


def test_a_product_of_one_complex_partial_keeps_its_infinities():
    """The partial products were multiplied by ``xp.prod``, which starts from ``1+0j``: ``(1+0j) * (inf+infj)`` is
    NaN where NumPy's own product keeps ``inf+infj`` (a dim split over an axis of one device). Complex products with
    infinite parts over several devices may still differ from NumPy's strict left-to-right order (complex
    multiplication with infinities is not associative; documented in ``sa.prod``)."""
    a = np.array([[-0.5 - 0.5j, -np.inf + 0j]])
    x = sa.asarray(a, dims=("i", "j"), mesh=sa.Mesh({"d": 1}), layout={"j": ("d",)})
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(sa.prod(x, "j").numpy(), np.prod(a, axis=1))
