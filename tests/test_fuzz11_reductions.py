"""A differential fuzz, against NumPy, of the reductions, scans and statistics: ``sum``/``prod`` (``dtype=``,
integer wrap-around, NumPy 2's small-int and bool accumulators), ``mean``/``var``/``std`` (``correction``, complex
values), ``max``/``min``/``all``/``any``/``count_nonzero``, ``argmax``/``argmin`` (ties across uneven blocks),
the ``nan*`` functions (all-NaN slices: NumPy's values and ``RuntimeWarning``), ``cumulative_sum``/
``cumulative_prod``/``cumsum``/``nancumsum`` (``include_initial``, ``dtype``, 0-d), on random meshes (1, 2x2, 4,
2x2x2, 3x2) and layouts with uneven and empty blocks, axis tuples, negative axes and ``keepdims``; and the traffic
of a reduction over split dims: partials of the result block, never the data. Regressions of the bugs it found
close the file.

``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import warnings

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
from shardarray.layout import block_bounds

ENV = "FUZZ11_EXAMPLES"
DTYPES = ("float64", "float32", "int64", "int32", "int8", "uint8", "bool", "complex128")
SIDES = (0, 1, 2, 3, 5, 7)
#: NumPy's warnings that are the arithmetic's, not the reduction's (an empty mean's 0/0): not compared
NOISE = ("invalid value", "divide by zero", "overflow")


def _values(rng: np.random.Generator, shape: tuple, dtype: str, nan: bool) -> np.ndarray:
    """Small values with many ties; full-range integers half the time (sums that wrap); NaN when ``nan``."""
    dt = np.dtype(dtype)
    n = math.prod(shape)
    if dt.kind == "b":
        return (rng.integers(0, 2, n) > 0).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = (info.min, info.max) if rng.integers(2) and dt.itemsize < 8 else (0 if dt.kind == "u" else -3, 3)
        return rng.integers(lo, hi, n, endpoint=True).astype(dt).reshape(shape)
    v = rng.integers(-3, 4, n) / rng.choice([1, 2, 4], n)
    if nan:
        v[rng.random(n) < 0.3] = np.nan
    if dt.kind == "c":
        v = v + 1j * rng.integers(-2, 3, n)
    return v.astype(dt).reshape(shape)


@st.composite
def cases(draw, dtypes=DTYPES, min_dims=0):
    """``(x, a)``: a positional array on a cached mesh in a random layout, and its NumPy value."""
    mesh = draw(meshes())
    nd = draw(st.integers(min_dims, 3))
    shape = tuple(draw(st.sampled_from(SIDES)) for _ in range(nd))
    dtype = draw(st.sampled_from(dtypes))
    a = _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dtype, draw(st.booleans()))
    if nd == 0:
        return xp.asarray(a, device=mesh), a
    dims = tuple(f"dim{k}" for k in range(nd))
    lay = draw(layouts(mesh, dims))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array), a


@st.composite
def axes(draw, nd: int, single: bool = False):
    """None, one axis (negative or not), or a tuple of distinct axes (some negative)."""
    kind = draw(st.integers(0, 1 if single else 2)) if nd else 0
    if kind == 0:
        return None
    if kind == 1:
        return draw(st.integers(-nd, nd - 1))
    picked = draw(st.lists(st.integers(0, nd - 1), min_size=0, max_size=nd, unique=True))
    return tuple(k - nd if draw(st.booleans()) else k for k in picked)


def _run(fn):
    """``(result or None, error or None, the RuntimeWarnings' messages)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out, err = fn(), None
        except Exception as e:  # (compared by kind below)
            out, err = None, e
    said = {str(w.message).rstrip(".") for w in caught if issubclass(w.category, RuntimeWarning)}
    return out, err, {m for m in said if not m.startswith(NOISE)}


def _same(got, expected, tol: float | None = None) -> None:
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _same(g, e, tol)
        return
    g, e = got.numpy(), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
    if tol is None or e.dtype.kind not in "fc":
        assert np.array_equal(g, e, equal_nan=e.dtype.kind in "fc"), (g, e)
    else:  # (single precision: its rounding, as the blocks' partial sums differ from NumPy's pairwise ones)
        tol = max(tol, 1e-5) if np.finfo(e.dtype).bits < 64 else tol
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


def _compare(np_fn, sa_fn, a, x, tol=None, warns=True) -> None:
    """``sa_fn(x)`` against ``np_fn(a)``: the same value and dtype and RuntimeWarnings, or both raise (a typed
    ``sa`` error of NumPy's kind: ValueError or TypeError)."""
    expected, np_err, np_said = _run(lambda: np_fn(a))
    got, err, said = _run(lambda: sa_fn(x))
    if np_err is not None:
        assert isinstance(err, sa.ShardArrayError), (np_err, err)
        kinds = [k for k in (ValueError, TypeError) if isinstance(np_err, k)]
        assert any(isinstance(err, k) for k in kinds), (np_err, err)
        return
    assert err is None, err
    _same(got, expected, tol)
    if warns:
        assert said == np_said, (said, np_said)


def _tol(dtype) -> float | None:
    return {"f": 1e-12, "c": 1e-12}.get(np.dtype(dtype).kind)


def _pair(name: str, space=xp, **kw) -> tuple:
    """``(NumPy's function of name, the same of ``space``: the namespace, or np for the NumPy protocol)``."""
    return (lambda t: getattr(np, name)(t, **kw)), (lambda t: getattr(space, name)(t, **kw))


# --------------------------------------------------------------------------------------------- reductions

ACCUMULATORS = (None, "int8", "int32", "uint8", "int64", "uint64", "float32", "float64")


@fuzz(60, ENV)
@given(cases(), st.data())
def test_reductions_match_numpy(case, data):
    """``xp.sum``/``prod`` (``dtype=``: NumPy's accumulators, wrapping identically), ``mean``, ``var``/``std``
    (``ddof``; complex: NumPy's real variance), ``max``/``min`` (empty: a ValueError), ``all``/``any`` (NaN is
    true), ``count_nonzero``, over axis tuples and negative axes, with ``keepdims``."""
    x, a = case
    ax = data.draw(axes(a.ndim))
    kd = data.draw(st.booleans())
    acc = data.draw(st.sampled_from(ACCUMULATORS))
    if a.dtype.kind == "c" and acc is not None:
        acc = None  # (a real accumulator drops the imaginary part: refused, NumPy warns ComplexWarning)
    ddof = data.draw(st.sampled_from([0, 1, 2]))
    tol = _tol(a.dtype) if acc is None or np.dtype(acc).kind != "f" else 1e-5
    for name in ("sum", "prod"):
        _compare(*_pair(name, axis=ax, dtype=acc, keepdims=kd), a, x, tol)
    _compare(*_pair("mean", axis=ax, keepdims=kd), a, x, 1e-12)
    _compare(*_pair("var", axis=ax, ddof=ddof, keepdims=kd), a, x, 1e-12)
    _compare(*_pair("std", np, axis=ax, ddof=ddof, keepdims=kd), a, x, 1e-12)
    for name in ("max", "min", "all", "any", "count_nonzero"):
        _compare(*_pair(name, axis=ax, keepdims=kd), a, x)


@fuzz(40, ENV)
@given(cases(), st.data())
def test_argmax_argmin_first_occurrence(case, data):
    """``argmax``/``argmin`` (and the NumPy protocol's): the first extreme in row-major order across uneven
    blocks, NaN first for floats, NumPy's lexicographic order for complex; an empty axis is a ValueError."""
    x, a = case
    ax = data.draw(axes(a.ndim, single=True))
    kd = data.draw(st.booleans())
    for name in ("argmax", "argmin"):
        _compare(*_pair(name, axis=ax, keepdims=kd), a, x)
        _compare(*_pair(name, np, axis=ax, keepdims=kd), a, x)


@fuzz(50, ENV)
@given(cases(dtypes=("float64", "float32", "int32", "bool", "complex128")), st.data())
def test_nan_functions_match_numpy(case, data):
    """The ``nan*`` reductions: NumPy's values on all-NaN slices and its RuntimeWarnings (0-d arrays and
    ``axis=()`` too), ``nanargmax``/``nanargmin`` of complex values (NaN in either part left out) and their
    ValueError on an all-NaN slice."""
    x, a = case
    ax = data.draw(axes(a.ndim))
    kd = data.draw(st.booleans())
    ddof = data.draw(st.sampled_from([0, 1, 2]))
    for name in ("nansum", "nanprod", "nanmean", "nanmax", "nanmin"):
        _compare(*_pair(name, axis=ax, keepdims=kd), a, x, 1e-12)
    for name in ("nanvar", "nanstd"):
        _compare(*_pair(name, axis=ax, ddof=ddof, keepdims=kd), a, x, 1e-12)
    one = ax if ax is None or isinstance(ax, int) else None
    for name in ("nanargmax", "nanargmin"):
        _compare(*_pair(name, axis=one, keepdims=kd), a, x)


@fuzz(50, ENV)
@given(cases(dtypes=("float64", "int64", "int8", "uint8", "bool", "complex128")), st.data())
def test_scans_match_numpy(case, data):
    """``cumulative_sum``/``cumulative_prod`` (``include_initial``, ``dtype``; a 0-d array read as 1-D, as
    NumPy reads it), ``np.cumsum``/``cumprod``/``nancumsum``/``nancumprod`` (``axis=None`` flattens), along split
    axes: NumPy's values and dtypes (integers wrap identically)."""
    x, a = case
    ax = data.draw(axes(a.ndim, single=True))
    acc = data.draw(st.sampled_from((None, "int64", "int16", "uint8", "float64")))
    if a.dtype.kind == "c" and acc is not None:
        acc = None
    init = data.draw(st.booleans())
    tol = _tol(a.dtype) if acc is None or np.dtype(acc).kind != "f" else 1e-12
    std_axis = ax if a.ndim > 1 else data.draw(st.sampled_from([None, ax]))
    for name in ("cumulative_sum", "cumulative_prod"):
        _compare(*_pair(name, axis=std_axis, dtype=acc, include_initial=init), a, x, tol)
    for name in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
        _compare(*_pair(name, np, axis=ax, dtype=acc), a, x, tol)


# --------------------------------------------------------------------------------------------- traffic


def _largest(x) -> int:
    return max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(x.mesh, x.spec)), default=1) or 1


def _received(r) -> int:
    if r.group_size <= 1 or not r.elements:
        return 0
    return (r.group_size - 1) * r.elements if r.op == "allgather" else r.elements


TRAFFIC = {
    "sum": lambda t, ax: xp.sum(t, axis=ax),
    "mean": lambda t, ax: xp.mean(t, axis=ax),
    "prod": lambda t, ax: xp.prod(t, axis=ax),
    "max": lambda t, ax: xp.max(t, axis=ax),
    "var": lambda t, ax: xp.var(t, axis=ax),
    "complex std": lambda t, ax: xp.std(t * (1 + 2j), axis=ax),
    "any": lambda t, ax: xp.any(t, axis=ax),
    "count_nonzero": lambda t, ax: xp.count_nonzero(t, axis=ax),
    "argmax": lambda t, ax: xp.argmax(t, axis=ax[0]),
    "argmin of all": lambda t, ax: xp.argmin(t),
    "nanmean": lambda t, ax: xp.nanmean(t, axis=ax),
    "nanvar": lambda t, ax: xp.nanvar(t, axis=ax),
    "nanargmax": lambda t, ax: xp.nanargmax(t, axis=ax[0]),
}


@fuzz(25, ENV)
@given(meshes(), st.data())
def test_reductions_move_partials_not_data(mesh, data):
    """A reduction over split axes moves per-device partials of the result block (a few values per result element
    per device: allreduces, or allgathers of moments and (value, index) pairs), never the data: what a device
    receives stays within a small constant times the result block times the group, however large the input."""
    nd = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.integers(6, 12)) for _ in range(nd))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.standard_normal(shape)
    a[rng.random(shape) < 0.1] = np.nan
    dims = tuple(f"dim{k}" for k in range(nd))
    x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims))), xp.Array)
    ax = tuple(data.draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)))
    for name, fn in TRAFFIC.items():
        with warnings.catch_warnings(), sa.comm_log() as log:
            warnings.simplefilter("ignore", RuntimeWarning)
            out = fn(x, ax)
            out.numpy()  # (a pending sum's allreduce included)
        got = sum(_received(r) for r in log.records)
        assert got <= 8 * _largest(out) * mesh.size + 64, (name, got, [(r.op, r.axes, r.elements) for r in log.records])


# --------------------------------------------------------------------------------------------- regressions


def _said(fn) -> tuple:
    out, err, said = _run(fn)
    assert err is None, err
    return out, said


def test_nanargmax_of_complex_values_skips_nan():
    """``np.nanargmax``/``nanargmin`` of complex values returned the first NaN's index (the complex case was sent
    to ``argmax``, where NaN wins): NumPy fills NaN (in either part) with ``-inf``/``inf`` and orders
    lexicographically; an all-NaN complex slice is NumPy's ValueError."""
    a = np.array([1 + 1j, np.nan + 2j, 3 + 0j, 3 + 5j, 1 - 1j, 2, complex(1, np.nan), 0, -np.inf, complex(np.inf, -1)])
    for shape in ({"row": 2, "col": 2}, {"p": 3, "q": 2}, {"x": 1}):
        x = xp.asarray(a, device=_mesh(shape))
        assert int(np.nanargmax(x)) == np.nanargmax(a) == 9
        assert int(xp.nanargmin(x)) == np.nanargmin(a) == 8
        m = xp.reshape(x, (2, 5))
        assert xp.nanargmax(m, axis=1).tolist() == np.nanargmax(a.reshape(2, 5), axis=1).tolist()
        with pytest.raises(sa.DimensionError, match="All-NaN"):
            xp.nanargmin(xp.asarray(np.array([np.nan + 1j, complex(0, np.nan)]), device=_mesh(shape)))


def test_nan_functions_of_0d_and_no_axis_warn_as_numpy():
    """A 0-d array (or ``axis=()``) is a slice of one value per element: ``nanmean``/``nanmax`` of a NaN and
    ``nanvar`` without degrees of freedom gave NaN silently; NumPy warns ``Mean of empty slice``, ``All-NaN slice
    encountered``, ``Degrees of freedom <= 0 for slice.``. ``nanargmax`` of a 0-d NaN returned 0: NumPy raises. The
    ``nanmean`` of an integer array over an empty axis warns even where there is no slice (NumPy's ``np.mean``)."""
    mesh = _mesh({"row": 2, "col": 2})
    nan0 = xp.asarray(np.array(np.nan), device=mesh)
    one0 = xp.asarray(np.array(1.0), device=mesh)
    for fn, x, message in [
        (lambda t: xp.nanmean(t), nan0, "Mean of empty slice"),
        (lambda t: np.nanmax(t), nan0, "All-NaN slice encountered"),
        (lambda t: xp.nanmin(t), nan0, "All-NaN slice encountered"),
        (lambda t: xp.nanvar(t), nan0, "Degrees of freedom <= 0 for slice"),
        (lambda t: xp.nanstd(t, ddof=2), one0, "Degrees of freedom <= 0 for slice"),
        (lambda t: xp.nanmean(t, axis=()), xp.asarray([1.0, np.nan], device=mesh), "Mean of empty slice"),
        (lambda t: xp.nanvar(t, axis=(), ddof=1), xp.asarray([1.0, 2.0], device=mesh), "Degrees of freedom"),
        # (integers hold no NaN: np.nanmean is np.mean, which warns on an empty reduction even with no slices)
        (lambda t: xp.nanmean(t, axis=1), xp.zeros((0, 0), dtype=xp.int32, device=mesh), "Mean of empty slice"),
    ]:
        _, said = _said(lambda f=fn, t=x: f(t))
        assert any(s.startswith(message) for s in said), (message, said)
    for fn in (xp.nanmean, xp.nanmax, xp.nanvar):
        _, said = _said(lambda f=fn: f(one0))
        assert not said
    with pytest.raises(sa.DimensionError, match="All-NaN"):
        xp.nanargmax(nan0)
    assert int(xp.nanargmin(one0)) == 0


def test_cumulative_scans_of_0d_arrays_as_numpy():
    """``cumulative_sum``/``cumulative_prod`` of a 0-d array raised DimensionError; NumPy reads it as the 1-D
    array of its value (axis None, 0 or -1; another axis is out of bounds)."""
    mesh = _mesh({"p": 3, "q": 2})
    a = np.array(5, dtype=np.int8)
    x = xp.asarray(a, device=mesh)
    for axis in (None, 0, -1):
        _same(xp.cumulative_sum(x, axis=axis), np.cumulative_sum(a, axis=axis))
        _same(
            xp.cumulative_prod(x, axis=axis, include_initial=True, dtype=xp.float32),
            np.cumulative_prod(a, axis=axis, include_initial=True, dtype=np.float32),
        )
    _same(np.cumulative_sum(x, include_initial=True), np.cumulative_sum(a, include_initial=True))
    with pytest.raises(sa.OutOfBoundsError, match="axis 1"):
        xp.cumulative_sum(x, axis=1)


def test_var_std_of_complex_values_as_numpy():
    """``xp.var``/``xp.std``/``np.var`` of complex values were refused ("complex numbers have no order"); NumPy's
    is real: the mean of ``|x - mean|^2`` (float32 for complex64), and the named ``sa.var``/``sa.std`` give it too
    (differentiable through the parts)."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((5, 7)) + 1j * rng.standard_normal((5, 7))).astype(np.complex64)
    mesh = _mesh({"row": 2, "col": 2})
    x = as_kind(sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"}), xp.Array)
    for axis in (None, 0, -1, (0, 1)):
        for ddof in (0, 1):
            _same(xp.var(x, axis=axis, correction=ddof), np.var(a, axis=axis, ddof=ddof), 1e-5)
            _same(np.std(x, axis=axis, ddof=ddof, keepdims=True), np.std(a, axis=axis, ddof=ddof, keepdims=True), 1e-5)
    z = np.array([0.5 - 1j, -1 - 1j])  # (no degrees of freedom: NumPy's inf, where the parts' inf + NaN is NaN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(xp.var(xp.asarray(z, device=mesh), correction=2), np.var(z, ddof=2))
    named = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"j": ("row", "col")})  # the named var: the same
    _same(sa.var(named, "j"), np.var(a, axis=1), 1e-5)
    _same(sa.std(named, ("i", "j"), correction=1), np.std(a, ddof=1), 1e-5)
    g = sa.grad(lambda p: sa.var(p.astype("complex128") * (1 + 2j), ("i", "j")))(sa.real(named).astype("float64"))
    np.testing.assert_allclose(g.numpy(), 5 * 2 * (a.real - a.real.mean()) / a.size, rtol=1e-6)
