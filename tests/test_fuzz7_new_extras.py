"""Differential fuzz of five NumPy extras against NumPy: ``xp.histogramdd``/``xp.histogram2d``, ``np.linspace``
with array endpoints, ``sa.linalg.eig``/``eigvals`` (values and gradients), ``sa.ldexp``/``xp.ldexp``/``xp.frexp``.

Random meshes and layouts (uneven and empty sizes), NumPy and the strict CuPy stand-in (``--backend=cupy``).
``FUZZ7_EXAMPLES=<n>`` raises the number of examples of every fuzzer (the defaults keep each test under ~20 s).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from helpers import holds_subnormal32, layouts, meshes, on_real_cupy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

pytestmark = pytest.mark.filterwarnings(
    "ignore:invalid value encountered:RuntimeWarning",
    "ignore:overflow encountered:RuntimeWarning",
    "ignore:divide by zero encountered:RuntimeWarning",
)

_MANY = int(os.environ.get("FUZZ7_EXAMPLES", "0"))


def _settings(n: int) -> settings:
    return settings(max_examples=_MANY or n, deadline=None, suppress_health_check=list(HealthCheck))


def _dims(ndim: int) -> tuple[str, ...]:
    return tuple(f"dim{k}" for k in range(ndim))


def _xp(a, mesh, lay):
    """NumPy data as a positional Array on ``mesh`` laid out as ``lay`` (over dims ``dim0``, ``dim1``, ...)."""
    a = np.asarray(a)
    return as_kind(sa.asarray(a, dims=_dims(a.ndim), mesh=mesh, layout=lay), xp.Array)


@st.composite
def _xp_layout(draw, mesh, ndim):
    return draw(layouts(mesh, _dims(ndim)))


def _bits_equal(got: np.ndarray, want: np.ndarray, label: str = "", signed: bool = True) -> None:
    """Same dtype, shape and values, bit for bit up to NaN payloads (the sign of zero too, if ``signed``)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (label, got.dtype, want.dtype)
    assert got.shape == want.shape, (label, got.shape, want.shape)
    np.testing.assert_array_equal(got, want, err_msg=label)
    if signed and got.dtype.kind in "fc":
        np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real), err_msg=f"{label}: sign of zero")


# ================================================================================ 1. histogramdd / histogram2d

_SAMPLE_DTYPES = ["float64", "float32", "int64", "int32", "float16", "uint8"]
_POOL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 2.5, -3.25, 7.0, 1e-3, 3.0, 4.0]
_SPECIAL = [np.nan, np.inf, -np.inf]


@st.composite
def _hist_case(draw):
    mesh = draw(meshes())
    n = draw(st.sampled_from([0, 1, 2, 3, 5, 7, 9, 13]))
    d = draw(st.integers(1, 3))
    form = draw(st.sampled_from(["array", "columns", "columns"]))
    if form == "array":
        dtypes = [draw(st.sampled_from(_SAMPLE_DTYPES))] * d
    else:
        dtypes = [draw(st.sampled_from(_SAMPLE_DTYPES)) for _ in range(d)]
    constant = draw(st.booleans()) and draw(st.booleans())
    ranges = []
    cols = []
    for i in range(d):
        has_range = draw(st.booleans())
        special = has_range and np.dtype(dtypes[i]).kind == "f" and draw(st.booleans())
        pool = _POOL + (_SPECIAL if special else [])
        vals = [draw(st.sampled_from(pool)) for _ in range(n)]
        if constant and vals:
            vals = [vals[0]] * n
        col = np.array(vals, dtype=np.float64)
        if np.dtype(dtypes[i]).kind in "iu":
            col = np.trunc(np.nan_to_num(col))
            if np.dtype(dtypes[i]).kind == "u":
                col = np.abs(col)
        with np.errstate(all="ignore"):
            cols.append(col.astype(dtypes[i]))
        if has_range:
            lo = draw(st.sampled_from([-4.0, -1.0, 0.0, 0.5, 2.0, 3]))
            hi = lo + draw(st.sampled_from([0.0, 0.25, 1, 3.0, 10.0]))
            ranges.append((lo, hi))
        else:
            ranges.append(None)
    bins = []
    for _ in range(d):
        kind = draw(st.sampled_from(["count", "count", "count0d", "list", "intlist", "numpy", "xp"]))
        if kind == "count":
            bins.append(draw(st.integers(1, 6)))
            continue
        if kind == "count0d":
            k = draw(st.integers(1, 6))
            bins.append(("xp", np.array(k), {}))
            continue
        k = draw(st.integers(1, 5))
        edges = sorted(draw(st.lists(st.sampled_from([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 2.5, 4.0, 7.0, np.inf]),
                                     min_size=k, max_size=k)))
        if kind == "intlist":
            edges = sorted({int(e) for e in edges if np.isfinite(e)} or {0})
        if kind == "list":
            bins.append(list(edges))
        elif kind == "intlist":
            bins.append(list(edges))
        elif kind == "numpy":
            bins.append(np.asarray(edges, dtype=draw(st.sampled_from(["float64", "float32"]))))
        else:
            e = np.asarray(edges, dtype=draw(st.sampled_from(["float64", "float32"])))
            bins.append(("xp", e, draw(_xp_layout(mesh, 1))))
    if draw(st.booleans()) and all(isinstance(b, int) for b in bins):
        bins = bins[0]  # one count for every coordinate
    elif draw(st.integers(0, 5)) == 0:  # one set of edges for every coordinate (histogram2d: 3 or more edges)
        e = sorted(draw(st.lists(st.sampled_from([-2.0, -0.5, 0.0, 1.0, 2.5, 3.0, 6.0]), min_size=3, max_size=6)))
        bins = ("one", e, draw(st.sampled_from(["list", "xp"])), draw(_xp_layout(mesh, 1)))
    rng_arg = ranges if any(r is not None for r in ranges) else None
    if rng_arg is not None and all(r is not None for r in ranges) and draw(st.booleans()):
        rng_arg = tuple(ranges)
    wkind = draw(st.sampled_from([None, None, "float", "int", "xp"]))
    weights = None
    if wkind is not None:
        weights = np.array([draw(st.sampled_from([0.0, 0.25, 1.0, 1.5, -0.5, 3.0])) for _ in range(n)])
        if wkind == "int":
            weights = np.trunc(weights).astype(np.int64)
    density = draw(st.sampled_from([None, False, True]))
    lay = draw(_xp_layout(mesh, 2))
    col_lays = [draw(_xp_layout(mesh, 1)) for _ in range(d)]
    return mesh, form, cols, bins, rng_arg, weights, wkind, density, lay, col_lays


def _run_hist(case, two: bool):
    mesh, form, cols, bins, rng_arg, weights, wkind, density, lay, col_lays = case
    if two:
        if len(cols) != 2:
            cols = [*cols, cols[0]][:2] if len(cols) < 2 else cols[:2]
            col_lays = [*col_lays, col_lays[0]][:2]
            if isinstance(bins, list):
                bins = [*bins, bins[0]][:2]
            if rng_arg is not None:
                rng_arg = [*rng_arg, rng_arg[0]][:2]
        form = "columns"
    if isinstance(bins, tuple) and bins[0] == "one":
        if not two:
            bins = [("xp", np.asarray(bins[1]), bins[3]) if bins[2] == "xp" else list(bins[1])] * len(cols)
        elif bins[2] == "xp":
            bins = ("xp", np.asarray(bins[1]), bins[3])
        else:
            bins = list(bins[1])
    host_bins = bins
    if isinstance(bins, tuple):
        host_bins = bins[1]
    elif isinstance(bins, list):
        host_bins = [b[1] if isinstance(b, tuple) else b for b in bins]
    np_kw = {"bins": host_bins, "range": rng_arg, "density": density, "weights": weights}
    with np.errstate(all="ignore"):
        try:
            want = np.histogram2d(*cols, **np_kw) if two else np.histogramdd(
                np.stack(cols, 1) if form == "array" else cols, **np_kw)
        except ValueError as e:
            want = e
    sa_bins = bins
    if isinstance(bins, tuple):
        sa_bins = _xp(bins[1], mesh, bins[2])
    elif isinstance(bins, list):
        sa_bins = [_xp(b[1], mesh, b[2]) if isinstance(b, tuple) else b for b in bins]
    sa_w = weights if wkind != "xp" else _xp(weights, mesh, col_lays[0])
    if form == "array":
        sample = [_xp(np.stack(cols, 1), mesh, lay)]
    else:
        sample = [_xp(c, mesh, cl) for c, cl in zip(cols, col_lays)]
    kw = {"bins": sa_bins, "range": rng_arg, "density": density, "weights": sa_w}
    if isinstance(want, Exception):
        with pytest.raises((sa.ArgumentError, sa.DimensionError, sa.DTypeError)):
            xp.histogram2d(*sample, **kw) if two else xp.histogramdd(sample[0] if form == "array" else sample, **kw)
        return
    with np.errstate(all="ignore"):
        got = xp.histogram2d(*sample, **kw) if two else xp.histogramdd(
            sample[0] if form == "array" else sample, **kw)
    if two:
        got_hist, got_edges = got[0], list(got[1:])
        want_hist, want_edges = want[0], list(want[1:])
    else:
        (got_hist, got_edges), (want_hist, want_edges) = got, want
    g = got_hist.numpy()
    assert g.dtype == want_hist.dtype and g.shape == want_hist.shape, (g.dtype, g.shape, want_hist.dtype,
                                                                       want_hist.shape)
    if density:
        np.testing.assert_allclose(g, want_hist, rtol=1e-13, atol=0)
    else:
        np.testing.assert_array_equal(g, want_hist)
    assert len(got_edges) == len(want_edges)
    for i, (ge, we) in enumerate(zip(got_edges, want_edges)):
        # (not the sign of a zero edge: NumPy's own max of 0.0 and -0.0 depends on their order)
        _bits_equal(ge.numpy(), we, f"edges[{i}]", signed=False)


@_settings(150)
@given(_hist_case())
def test_histogramdd_fuzz(case):
    _run_hist(case, two=False)


@_settings(100)
@given(_hist_case())
def test_histogram2d_fuzz(case):
    _run_hist(case, two=True)


def test_histogram_columns_of_mixed_dtypes_share_numpys_dtype():
    """Regression: a sequence of coordinates of several dtypes is one sample of their common dtype in NumPy (its
    ``atleast_2d``): computed edges of that dtype (an int and a float32 coordinate: float64 edges for both)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = np.array([1, 2, 3, 5, 7], dtype=np.int64)
    y = np.array([0.1, 1.5, 2, 3.3, 1], dtype=np.float32)
    h, xe, ye = xp.histogram2d(_xp(x, mesh, {}), _xp(y, mesh, {"dim0": ("row",)}), bins=3)
    H, XE, YE = np.histogram2d(x, y, bins=3)
    np.testing.assert_array_equal(h.numpy(), H)
    _bits_equal(xe.numpy(), XE)
    _bits_equal(ye.numpy(), YE)
    y16 = y.astype(np.float16)
    h, e = xp.histogramdd([_xp(y16, mesh, {}), _xp(y, mesh, {})], bins=3)
    H, E = np.histogramdd([y16, y], bins=3)
    np.testing.assert_array_equal(h.numpy(), H)
    for g, w in zip(e, E):
        _bits_equal(g.numpy(), w)


# ================================================================================ 2. np.linspace, array endpoints

_LIN_DTYPES = ["float64", "float32", "int64", "int32", "float16"]
_LIN_VALUES = [0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, 5.0, -7.5, 1e300, -1e300, 5e-324, 1e-310, 2.0, 100.0]


@st.composite
def _endpoint(draw, mesh, shape, dtype, pool):
    if np.dtype(dtype).kind in "iu":
        pool = [v for v in pool if abs(v) < 1e6]
    elif np.dtype(dtype) == np.float16:
        pool = [v for v in pool if abs(v) < 6e4]
    kind = draw(st.sampled_from(["array", "array", "array", "py", "np"]))
    if kind != "array":
        v = draw(st.sampled_from(pool))
        if np.dtype(dtype).kind in "iu":
            v = int(v)
        if kind == "py":
            return v, v
        s = np.dtype(dtype).type(v)
        return s, s
    a = np.array([draw(st.sampled_from(pool)) for _ in range(int(np.prod(shape)))], dtype=np.float64)
    with np.errstate(all="ignore"):
        a = a.reshape(shape).astype(dtype) if np.dtype(dtype).kind == "f" else np.trunc(a).reshape(shape).astype(dtype)
    return a, ("xp", a, draw(_xp_layout(mesh, a.ndim)))


@st.composite
def _linspace_case(draw):
    mesh = draw(meshes())
    base = draw(st.lists(st.integers(0, 5), min_size=0, max_size=2))
    int_out = draw(st.integers(0, 5)) == 0
    pool = [v for v in _LIN_VALUES if abs(v) < 1e6 and v == int(v)] if int_out else _LIN_VALUES
    shapes = []
    for _ in range(2):
        nd = draw(st.integers(0, len(base)))
        s = list(base[len(base) - nd:])
        s = [1 if draw(st.integers(0, 3)) == 0 else k for k in s]
        shapes.append(tuple(s))
    d1, d2 = draw(st.sampled_from(_LIN_DTYPES)), draw(st.sampled_from(_LIN_DTYPES))
    start = draw(_endpoint(mesh, shapes[0], d1, pool))
    stop = draw(_endpoint(mesh, shapes[1], d2, pool))
    if not isinstance(start[1], tuple) and not isinstance(stop[1], tuple):
        a = np.asarray(start[0])
        a = np.array(a, dtype=d1 if np.dtype(d1).kind == "f" or a.dtype.kind != "f" else "float64")
        start = (a, ("xp", a, {}))
    num = draw(st.sampled_from([0, 1, 2, 3, 4, 7, 50, 257]))
    if draw(st.booleans()) and isinstance(start[1], tuple):  # a pair of equal endpoints: zero steps
        stop = start
    endpoint = draw(st.booleans())
    retstep = draw(st.booleans())
    dtype = draw(st.sampled_from([None, None, "float32", "float64", "int64", "int32"])) if not int_out else "int64"
    ndim = 1 + max(len(np.shape(start[0])), len(np.shape(stop[0])))
    axis = draw(st.integers(-ndim, ndim - 1))
    return mesh, start, stop, num, endpoint, retstep, dtype, axis


def _as_arg(pair, mesh):
    _, spec = pair
    if isinstance(spec, tuple):
        return _xp(spec[1], mesh, spec[2])
    return spec


@_settings(200)
@given(_linspace_case())
def test_linspace_fuzz(case):
    mesh, start, stop, num, endpoint, retstep, dtype, axis = case
    kw = {"endpoint": endpoint, "retstep": retstep, "dtype": dtype, "axis": axis}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.linspace(start[0], stop[0], num, **kw)
        if dtype is not None and np.dtype(dtype).kind == "i":
            raw = np.linspace(start[0], stop[0], num, endpoint=endpoint, axis=axis)
            if not np.all(np.isfinite(raw)) or np.any(np.abs(raw) > 2.0**31):
                return  # (an integer cast of inf/NaN or out of range is platform-defined)
        got = np.linspace(_as_arg(start, mesh), _as_arg(stop, mesh), num, **kw)
    if retstep:
        (got, gstep), (want, wstep) = got, want
        if type(wstep) is float:  # (NumPy's undefined step: a Python NaN)
            assert type(gstep) is float and np.isnan(gstep) and np.isnan(wstep), (gstep, wstep)
        else:
            _bits_equal(np.asarray(gstep.numpy()), np.asarray(wstep), "step")
    assert type(got) is xp.Array
    if on_real_cupy() and holds_subnormal32(np.asarray(start[0]), np.asarray(stop[0]), want):
        return  # (real CuPy flushes float32 subnormals: docs/guides/parallel.md, "Real CuPy is not NumPy")
    # (a GPU's zero can take the other sign where NumPy's sum of a zero product and a signed zero keeps one)
    _bits_equal(got.numpy(), want, "samples", signed=not on_real_cupy())


def test_histogram_a_zero_d_array_count_gets_computed_edges():
    """Regression: a 0-d array as one coordinate's ``bins`` is a count: its edges are computed (NumPy's), not the
    0-d array returned as if it were edges."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.array([[0.0, 1.0], [0.5, 0.2], [1.0, 1.0], [0.2, 0.7], [3.0, -1.0]])
    for bins in ([_xp(np.array(3), mesh, {}), 2], [_xp(np.array(1), mesh, {}), [0.0, 0.5, 2.0]]):
        h, e = xp.histogramdd(_xp(a, mesh, {"dim0": ("row",)}), bins=bins)
        H, E = np.histogramdd(a, bins=[b.numpy() if isinstance(b, xp.Array) else b for b in bins])
        np.testing.assert_array_equal(h.numpy(), H)
        for g, w in zip(e, E):
            _bits_equal(g.numpy(), w)


def test_histogram_density_of_a_zero_width_bin_is_inf():
    """Regression: a zero-width bin holding samples has an infinite density, as NumPy's (counts pending over a
    split sample were divided part by part: 0/0 + 1/0 = NaN)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    c = np.array([0] * 12 + [3])
    x = _xp(c, mesh, {"dim0": ("row",)})
    for bins in ([-2.0, 3.0, 3.0], [[-2.0, 3.0, 3.0], 2]):
        h = xp.histogram2d(x, x, bins=bins, density=True)[0]
        with np.errstate(all="ignore"):
            want = np.histogram2d(c, c, bins=bins, density=True)[0]
        _bits_equal(h.numpy(), want)
        h, _ = xp.histogramdd([x], bins=[bins[0] if isinstance(bins[0], list) else bins], density=True)
        with np.errstate(all="ignore"):
            want = np.histogramdd([c], bins=[bins[0] if isinstance(bins[0], list) else bins], density=True)[0]
        _bits_equal(h.numpy(), want)


def test_linspace_numpy_scalar_endpoint_keeps_its_dtype():
    """Regression: a NumPy scalar endpoint is strong (NEP 50): float32 array to ``np.float64(2)`` is float64."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.array([0.1, 1.0, -3.0], dtype=np.float32)
    for stop in (np.float64(2.0), np.array(2.0), 2.0, np.float16(2.0)):
        _bits_equal(np.linspace(_xp(a, mesh, {}), stop, 5).numpy(), np.linspace(a, stop, 5), repr(stop))
        _bits_equal(np.linspace(stop, _xp(a, mesh, {}), 5).numpy(), np.linspace(stop, a, 5), repr(stop))


def test_linspace_undefined_step_is_numpys_nan():
    """Regression: with ``num <= 1`` (endpoint) or ``num == 0`` the step is undefined: NumPy's float NaN."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a, b = np.array([0.0, 1.0]), np.array([1.0, 3.0])
    for num, endpoint in ((0, True), (1, True), (0, False)):
        got, step = np.linspace(_xp(a, mesh, {}), _xp(b, mesh, {}), num, endpoint=endpoint, retstep=True)
        want, wstep = np.linspace(a, b, num, endpoint=endpoint, retstep=True)
        assert isinstance(step, float) and np.isnan(step) and isinstance(wstep, float)
        _bits_equal(got.numpy(), want)


# ================================================================================ 3. eig / eigvals

L = sa.linalg


def _sorted(w):
    return np.sort_complex(np.round(w, 7))


def _matrices(rng, kind, b, n):
    if n == 0:
        return np.zeros((b, 0, 0)), (None if kind != "complex" else np.zeros((b, 0, 0)))
    if kind == "repeated":  # diagonalizable with repeated eigenvalues (values only: no gradient)
        out = []
        for _ in range(b):
            p = np.eye(n) + 0.3 * rng.standard_normal((n, n))
            out.append(p @ np.diag(rng.choice([-1.0, 0.0, 2.0], n)) @ np.linalg.inv(p))
        return np.array(out).reshape(b, n, n), None
    if kind == "real":  # real, well separated eigenvalues
        out = []
        for _ in range(b):
            lam = rng.permutation(np.arange(n) * 1.0 + rng.uniform(0, 0.3, n)) - n / 2
            p = np.eye(n) + 0.3 * rng.standard_normal((n, n))
            out.append(p @ np.diag(lam) @ np.linalg.inv(p))
        return np.array(out).reshape(b, n, n), None
    if kind == "general":  # real matrices with (mostly) complex conjugate pairs, gaps kept apart
        out = []
        while len(out) < b:
            m = rng.standard_normal((n, n))
            w = np.linalg.eigvals(m)
            gaps = np.abs(w[:, None] - w[None, :]) + np.eye(n) * 9
            if n == 1 or gaps.min() > 0.3:
                out.append(m)
        return np.array(out).reshape(b, n, n), None
    out, im = [], []
    while len(out) < b:  # complex: R + 1j I
        r, i = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        w = np.linalg.eigvals(r + 1j * i)
        gaps = np.abs(w[:, None] - w[None, :]) + np.eye(n) * 9
        if n == 1 or gaps.min() > 0.3:
            out.append(r)
            im.append(i)
    return np.array(out).reshape(b, n, n), np.array(im).reshape(b, n, n)


@st.composite
def _eig_case(draw):
    mesh = draw(meshes())
    n = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 3, 4, 4]))
    b = draw(st.sampled_from([0, 1, 2, 3, 5]))
    lay = draw(layouts(mesh, ("b", "i", "j")))
    kind = draw(st.sampled_from(["real", "general", "complex", "real", "general", "complex", "repeated"]))
    dtype = draw(st.sampled_from(["float64", "float64", "float32"])) if kind != "complex" else "float64"
    seed = draw(st.integers(0, 2**31))
    weights = draw(st.tuples(*[st.sampled_from([-1.0, 0.0, 0.5, 2.0])] * 4))
    return mesh, n, b, lay, kind, dtype, seed, weights


def _np_loss(a, c, row_w):
    w, v = np.linalg.eig(a)
    w = w.astype(complex)
    v2 = np.abs(v) ** 2
    lw = (c[0] * w.real + c[1] * w.real**2 + c[2] * w.imag**2).sum()
    lv = (v2 * row_w[:, None] * (w.real + 0.3 * w.imag)[..., None, :]).sum() + c[3] * (v2 * row_w[:, None]).sum()
    return lw + lv


def _sa_loss(x, c, row_w):
    w, v = L.eig(x, ("i", "j"))
    wr, wi = sa.real(w), sa.imag(w)
    v2 = sa.real(v * sa.conj(v))
    wi2 = sa.imag(L.eigvals(x, ("i", "j")))  # (eigvals differentiates through eig's eigenvalues)
    lw = sa.sum(c[0] * wr + c[1] * wr * wr + c[2] * wi2 * wi2)
    lv = sa.sum(v2 * row_w * (wr + 0.3 * wi)) + c[3] * sa.sum(v2 * row_w)
    return lw + lv


@_settings(100)
@given(_eig_case())
def test_eig_fuzz(case):
    mesh, n, b, lay, kind, dtype, seed, c = case
    rng = np.random.default_rng(seed)
    re, im = _matrices(rng, kind, b, n)
    a = re if im is None else re + 1j * im
    a = a.astype(dtype) if im is None else a
    dims = ("b", "i", "j")
    split = any(lay.get(d) for d in ("i", "j")) and mesh.size > 1
    row_w = rng.choice([0.0, 1.0, -2.0, 0.5], n)
    rw = sa.asarray(row_w, dims=("i",), mesh=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)
        x = sa.asarray(re.astype(dtype), dims=dims, mesh=mesh, layout=lay)
        if im is not None:
            x = x + 1j * sa.asarray(im, dims=dims, mesh=mesh, layout=lay)
        w, v = L.eig(x, ("i", "j"))
        wv = L.eigvals(x, ("i", "j"))
        xa = as_kind(x, xp.Array)
        r = xp.linalg.eig(xa)
        rv = xp.linalg.eigvals(xa)
    want = np.dtype(np.complex64 if dtype == "float32" else np.complex128)
    for got in (w, v, wv, r.eigenvalues, r.eigenvectors, rv):
        assert got.dtype == want, (got.dtype, want)
    assert w.dims == wv.dims == ("b", "j_k") and v.dims == ("b", "i", "j_k")
    assert r.eigenvalues.shape == rv.shape == (b, n) and r.eigenvectors.shape == (b, n, n)
    tol = 2e-4 if dtype == "float32" else 1e-9
    ref = np.linalg.eigvals(a.astype(np.complex128)) if a.size else np.zeros((b, n), complex)
    for W, V in ((w.numpy(), v.numpy()), (r.eigenvalues.numpy(), r.eigenvectors.numpy())):
        np.testing.assert_allclose(np.einsum("bij,bjk->bik", a, V), V * W[:, None, :], atol=tol * 20)
        np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0, atol=tol)
        np.testing.assert_allclose(_sorted(W.astype(complex)), _sorted(ref), atol=tol * 20)
    for WV in (wv.numpy(), rv.numpy()):
        np.testing.assert_allclose(_sorted(WV.astype(complex)), _sorted(ref), atol=tol * 20)
    if dtype != "float64" or b == 0 or n == 0 or kind == "repeated":
        return
    # gradients against central finite differences (float64), losses independent of the eigenvectors' phase
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)
        xr = sa.asarray(re, dims=dims, mesh=mesh, layout=lay)
        if im is None:
            g = sa.grad(lambda t: _sa_loss(t, c, rw))(xr)
            grads = [g.numpy()]
        else:
            xi = sa.asarray(im, dims=dims, mesh=mesh, layout=lay)
            gr, gi = sa.grad(lambda p: _sa_loss(p[0] + 1j * p[1], c, rw))((xr, xi))
            grads = [gr.numpy(), gi.numpy()]
    h = 1e-6
    for part, got in enumerate(grads):
        fd = np.zeros(a.shape)
        for idx in np.ndindex(a.shape):
            e = np.zeros(a.shape, complex if im is not None else float)
            e[idx] = h if part == 0 else 1j * h
            fd[idx] = (_np_loss(a + e, c, row_w) - _np_loss(a - e, c, row_w)) / (2 * h)
        np.testing.assert_allclose(got, fd, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(fd).max()),
                                   err_msg=f"{kind} part {part} split={split}")


# ================================================================================ 4. ldexp / frexp

_X_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.5, 0.75, 3.0, 1e-40, -1e-310, 5e-324, 6e-8, 1e-45,
              65504.0, 3.4e38, 1.7976931348623157e308, 2.2250738585072014e-308, 1.1754943508222875e-38,
              6.103515625e-05, 5.960464477539063e-08, 0.1, 123456.789]
_N_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"]


@st.composite
def _ldexp_case(draw):
    mesh = draw(meshes())
    xdt = draw(st.sampled_from(["float16", "float32", "float64"] * 3 + ["int8", "int16", "int64", "uint8", "bool"]))
    ndt = draw(st.sampled_from(_N_DTYPES))
    info = np.iinfo(ndt)
    shapes = draw(st.sampled_from([((5,), (5,)), ((3, 4), (4,)), ((4,), (3, 1)), ((), (6,)), ((7, 3), ()),
                                   ((0, 3), (3,)), ((2, 5), (2, 5))]))
    nx, nn = (int(np.prod(s)) for s in shapes)
    pool = _X_SPECIAL if np.dtype(xdt).kind == "f" else [0, 1, -1, 3, 100, -7, 127]
    with np.errstate(all="ignore"):
        xv = np.array([draw(st.sampled_from(pool)) for _ in range(nx)]).astype(xdt).reshape(shapes[0])
    n_pool = [0, 1, -1, 5, -5, 24, -24, 127, -128, 149, -150, 1000, -1000, 1074, -1075, 2000, -2300, 2301,
              -2**31, 2**31 - 1, 2**31 + 7, -(2**40), 2**62]
    n_pool = [v for v in n_pool if info.min <= v <= info.max]
    nv = np.array([draw(st.sampled_from(n_pool)) for _ in range(nn)], dtype=ndt).reshape(shapes[1])
    lays = (draw(_xp_layout(mesh, xv.ndim)), draw(_xp_layout(mesh, nv.ndim)))
    scalar = draw(st.sampled_from([None, None, "x", "n"]))
    return mesh, xv, nv, lays, scalar


@_settings(200)
@given(_ldexp_case())
def test_ldexp_fuzz(case):
    mesh, xv, nv, (lx, ln), scalar = case
    with np.errstate(all="ignore"):
        try:
            want = np.ldexp(xv, nv)
        except TypeError:
            with pytest.raises(sa.DTypeError):
                xp.ldexp(_xp(xv, mesh, lx), _xp(nv, mesh, ln))
            return
    if on_real_cupy() and holds_subnormal32(xv, want):
        return  # (real CuPy flushes float32 subnormals in its casts: -ftz; float64 data keep them)
    full = want
    x_arg, n_arg = _xp(xv, mesh, lx), _xp(nv, mesh, ln)
    if scalar == "x" and xv.ndim == 0:
        x_arg = float(xv)
        with np.errstate(all="ignore"):
            want = np.ldexp(float(xv), nv)
    if scalar == "n" and nv.ndim == 0:
        n_arg = int(nv)
        with np.errstate(all="ignore"):
            try:
                want = np.ldexp(xv, int(nv))
            except OverflowError:  # (a Python int out of the int32 loop's range: a typed CastError here)
                with pytest.raises(sa.CastError):
                    xp.ldexp(x_arg, n_arg)
                return
    got = xp.ldexp(x_arg, n_arg)
    _bits_equal(got.numpy(), want, "xp.ldexp")
    # the named sa.ldexp, broadcasting by dim name: size-1 dims that broadcast are dropped, trailing dims aligned
    nd = full.ndim
    names = _dims(nd)
    xs = _named(xv, names[nd - xv.ndim:], full.shape, mesh, lx)
    ns = _named(nv, names[nd - nv.ndim:], full.shape, mesh, ln if not _shares_axes(xs, ln) else {})
    with np.errstate(all="ignore"):
        named = sa.ldexp(xs, ns)
    assert named.dtype == full.dtype, (named.dtype, full.dtype)
    got_named = named.transpose(*names).numpy() if nd else named.numpy()
    _bits_equal(got_named, full, "sa.ldexp")
    if nv.ndim == 0 and xv.ndim:  # a Python int or a NumPy integer scalar as the exponent
        for n_scalar in (int(nv), nv[()]):
            with np.errstate(all="ignore"):
                try:
                    want_s = np.ldexp(xv, n_scalar)
                except (TypeError, OverflowError):
                    with pytest.raises((sa.CastError, sa.DTypeError)):
                        sa.ldexp(xs, n_scalar)
                    continue
                got_s = sa.ldexp(xs, n_scalar)
            _bits_equal(got_s.transpose(*names).numpy(), want_s, f"sa.ldexp(x, {n_scalar!r})")


def _named(a, dims, full, mesh, lay):
    """``a`` over ``dims`` as a named array, its broadcast size-1 dims dropped; ``lay`` (over ``dim<k>`` of
    ``a``'s own axes) on the dims kept."""
    nd = len(full)
    keep = [k for k, d in enumerate(dims) if a.shape[k] == full[nd - len(dims) + k]]
    kept = a.reshape([a.shape[k] for k in keep])
    own = {f"dim{k}": dims[k] for k in keep}
    layout = {own[k]: v for k, v in lay.items() if k in own}
    return sa.asarray(kept, dims=tuple(dims[k] for k in keep), mesh=mesh, layout=layout)


def _shares_axes(x, lay):
    used = {a for v in dict(x.layout).values() for a in (v if isinstance(v, tuple) else (v,))}
    return any(set(v if isinstance(v, tuple) else (v,)) & used for v in lay.values())


@_settings(150)
@given(_ldexp_case())
def test_frexp_fuzz(case):
    mesh, xv, _, (lx, _), _ = case
    if on_real_cupy() and holds_subnormal32(xv):
        return  # (real CuPy flushes float32 subnormal data before frexp sees it: -ftz)
    m, e = xp.frexp(_xp(xv, mesh, lx))
    wm, we = np.frexp(xv)
    _bits_equal(m.numpy(), wm, "mantissa")
    _bits_equal(e.numpy(), we, "exponent")
    # the round trip is exact
    _bits_equal(xp.ldexp(m, e).numpy(), np.ldexp(wm, we), "ldexp(frexp(x))")
