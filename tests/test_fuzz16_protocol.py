"""NumPy's protocol on positional arrays, round 16: reductions into an ``out=`` of another dtype (NumPy computes
through ``out``'s dtype), ``np.average`` of no element, signed zeros and NaN signs of the nan-quantiles and the
empty means, complex ``np.nanvar`` of infinite values, ``np.bitwise_count`` (and its ``at``), ``np.ldexp.at``'s
typed refusal, every ``ufunc.at`` through one path; then a fuzz of ``ufunc.reduce``/``accumulate``/``outer`` and
the NumPy reductions with ``where=``, ``initial=``, ``keepdims=``, ``out=`` and ``dtype=`` for integer, bool,
float16, float and complex data, against NumPy on the gathered value on the test meshes (1, 2x2, 4, 2x2x2, 3x2)
with uneven and empty blocks.

``FUZZ16_EXAMPLES=<n>`` runs each fuzzer with ``n`` examples.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

ENV = "FUZZ16_EXAMPLES"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _placed(data, mesh, h):
    dims = tuple(f"d{i}" for i in range(h.ndim))
    return xp.asarray(sa.asarray(h, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims))))


def _bits(v, nan_sign=True):
    """The values with their signed zeros visible, and the sign of real NaN (complex NaN parts: only where)."""
    v = np.asarray(v)
    if v.dtype.kind == "c":
        return np.stack([_bits(v.real, False), _bits(v.imag, False)])
    if v.dtype.kind == "f":
        sign = np.signbit(v) if nan_sign else np.signbit(v) & ~np.isnan(v)
        return np.stack([np.where(np.isnan(v), 0, v), sign, np.isnan(v)])
    return v


def _same(got, want, signs=True):
    """The same dtype, shape and values, signed zeros included (``signs=False``: of complex values not, whose
    products' zero signs follow NumPy's order of operations)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if not signs and want.dtype.kind == "c":
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_array_equal(_bits(got), _bits(want))


# ------------------------------------------------------------------------------------- 1. out= of another dtype


def test_moments_compute_through_an_out_of_another_dtype():
    """``np.mean``/``var`` (and the nan-versions) sum into ``out`` first, then divide there: an int8 ``out`` wraps
    the sum (the old code divided first: 106 where NumPy has 21), a float16 one rounds it, a float32 mean of
    float16 data keeps the float32 sum (NumPy: -10515.5, the old code the float16 mean's -10512)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    cases = [
        (np.array([[100, 100, 3], [100, 50, 7], [120, 1, 1]]), np.int8, (np.mean, np.nanmean, np.var, np.nanvar)),
        (np.array([[100, 100, 3], [100, 50, 7], [120, 1, 1]]), np.uint8, (np.mean, np.var)),
        (np.array([[2048.0, 1.0], [1.0, 3.0], [1.0, 5.0], [1.0, 7.0]]), np.float16, (np.mean, np.nanmean, np.var)),
        (np.array([[-10000.0, 7.0], [-11000.0, 1.0], [-10546.0, 3.0]], np.float16), np.float32, (np.mean,)),
        (np.array([[2.0**24, 1.0], [1.0, 1.0], [1.0, 3.0]], np.float32), np.float64, (np.mean, np.nanmean, np.var)),
    ]
    for h, odt, fns in cases:
        x = xp.asarray(h, device=mesh)
        for fn in fns:
            want = np.zeros(h.shape[1], odt)
            fn(h, axis=0, out=want)
            out = xp.zeros(h.shape[1], dtype=odt, device=mesh)
            assert fn(x, axis=0, out=out) is out
            _same(out.numpy(), want)
    h = np.array([[0.0, 0.0, 1.0, np.nan, 0.0], [0.1, 0.2, np.nan, 0.7, 0.3]], np.float16)
    for dtype in (np.float32, np.float64, np.complex64):  # (NumPy's nanvar rounds the deviations to float16 first)
        for fn in (np.nanvar, np.nanstd):
            want = fn(h, axis=1, dtype=dtype)
            got = fn(xp.asarray(h, device=mesh), axis=1, dtype=dtype).numpy()
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)  # (a float32 sum's order: its ulps; the old: 1e-4)
    with pytest.raises(TypeError):  # (NumPy's sqrt cannot write floats into integers: its UFuncTypeError)
        np.std(xp.asarray(cases[0][0], device=mesh), axis=0, out=xp.zeros(3, dtype=xp.int8, device=mesh))


def test_sums_and_scans_compute_in_the_loop_of_out_and_the_array():
    """``np.add.reduce(float32_x, out=float64_out)`` sums in float64 (NumPy's loop for the two), as ``np.sum``,
    ``np.cumsum``, ``np.add.accumulate`` and ``np.nansum``; a product of integers into a float ``out`` multiplies in
    float64 (the old code wrapped in int64: 0.0); a bitwise scan into a float ``out`` has no loop (TypeError)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    f = np.array([2.0**24, 1.0, 1.0], np.float32)
    big = np.array([2**40, 2**30, 2**10])
    cases = [(f, fn, np.float64, s) for fn, s in ((np.sum, ()), (np.nansum, ()), (np.add.reduce, ()))]
    cases += [(f, fn, np.float64, (3,)) for fn in (np.cumsum, np.add.accumulate, np.nancumsum)]
    cases += [(f, np.add.reduce, np.int64, ()), (f, np.sum, np.complex128, ())]
    cases += [(big, fn, np.float64, ()) for fn in (np.prod, np.multiply.reduce, np.nanprod)]
    cases += [(big, np.cumprod, np.float64, (3,))]
    for h, fn, odt, shape in cases:
        want = np.zeros(shape, odt)
        fn(h, out=want)
        out = xp.zeros(shape, dtype=odt, device=mesh)
        fn(xp.asarray(h, device=mesh), out=out)
        _same(out.numpy(), want)
    ints = xp.asarray(np.arange(5), device=mesh)
    for call in (
        lambda: np.bitwise_or.accumulate(ints, out=xp.zeros(5, device=mesh)),
        lambda: np.bitwise_and.accumulate(ints, out=xp.zeros(5, dtype=xp.uint64, device=mesh)),
    ):
        with pytest.raises(TypeError, match="no bitwise_"):
            call()


# --------------------------------------------------------------------------------------------- 2. np.average


def test_average_of_no_element_is_refused_as_numpy():
    """``np.average`` over an axis of an array whose result is empty: NumPy divides ``a.size`` by the result's size
    (0 / 0, its ZeroDivisionError); the old code returned the empty mean. Typed here (an ``ArgumentError``)."""
    mesh = cached_mesh({"p": 3, "q": 2})
    for shape, axis in (((2, 0), 0), ((0, 3), 1), ((0, 0), 1)):
        h = np.zeros(shape)
        with pytest.raises(ZeroDivisionError):
            np.average(h, axis=axis)
        with pytest.raises(sa.ArgumentError, match="ZeroDivisionError"):
            np.average(xp.asarray(h, device=mesh), axis=axis)
    x = xp.asarray(np.zeros((2, 0)), device=mesh)  # (a reduced axis empty, the result not: NaN, as NumPy)
    _same(np.average(x, axis=1).numpy(), np.average(np.zeros((2, 0)), axis=1))
    _same(np.average(x).numpy(), np.average(np.zeros((2, 0))))


# ------------------------------------------------------------------- 3. signed zeros and NaN signs of the nan*s


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}, {"a": 4}])
def test_nan_quantiles_keep_negative_zero_and_empty_slices_numpys_nan(shape):
    """A ``-0.0`` the nan-quantile reads stays ``-0.0`` (the old masked sum made it ``+0.0``); the NaN of an empty
    slice's ``nanmean``/``nanmedian``/``nanquantile``/``var`` and of an all-NaN slice's ``nanmean`` is NumPy's
    ``0 / 0`` (sign bit set on x86; the old code wrote a positive NaN)."""
    mesh = cached_mesh(shape)
    h = np.array([[-0.0, -0.0, np.nan, -0.0], [np.nan, -0.0, -1.0, -0.0], [-0.0, 2.0, -0.0, np.nan]])
    x = xp.asarray(h, device=mesh)
    for method in ("linear", "lower", "higher", "nearest", "midpoint", "hazen", "inverted_cdf"):
        q = [0.0, 0.3, 0.5, 0.8, 1.0]
        _same(np.nanquantile(x, q, axis=1, method=method).numpy(), np.nanquantile(h, q, axis=1, method=method))
        _same(np.nanpercentile(x, 50, axis=0, method=method).numpy(), np.nanpercentile(h, 50, axis=0, method=method))
    _same(np.nanmedian(x, axis=1).numpy(), np.nanmedian(h, axis=1))
    for h in (np.zeros((2, 0)), np.full((2, 3), np.nan), np.zeros((2, 0), np.float32)):
        x = xp.asarray(h, device=mesh)
        for fn in (np.nanmean, np.nanmedian, np.mean, np.var, np.std, np.median):
            _same(fn(x, axis=1).numpy(), fn(h, axis=1))
        _same(np.nanquantile(x, 0.3, axis=1).numpy(), np.nanquantile(h, 0.3, axis=1))


# ------------------------------------------------------------------------ 4. complex nanvar of infinite values


def test_complex_nanvar_of_infinite_values_is_nan_nanj():
    """``np.nanvar(x, dtype=complex)``: where an infinite value makes the variance NaN, NumPy's complex division
    gives ``nan+nanj`` (the old code ``nan+0j``); where a slice has no degree of freedom, its real NaN, ``nan+0j``."""
    mesh = cached_mesh({"row": 2, "col": 2})
    h = np.array([[1 + 1j, complex(0, np.inf), 2j, np.nan], [np.inf, np.nan, np.nan, np.nan], [1, 2, 3, 4]])
    x = xp.asarray(h, device=mesh)
    for axis in (1, 0, None):
        for ddof in (0, 1, 3):
            for dtype in (np.complex128, np.complex64):
                for kd in (False, True):
                    got = np.nanvar(x, axis=axis, ddof=ddof, dtype=dtype, keepdims=kd)
                    _same(got.numpy(), np.nanvar(h, axis=axis, ddof=ddof, dtype=dtype, keepdims=kd))
    r = np.array([1.0, np.inf, 2.0])
    _same(np.nanvar(xp.asarray(r, device=mesh), dtype=np.complex128).numpy(), np.nanvar(r, dtype=np.complex128))


# -------------------------------------------------------------------------- 5. bitwise_count, ldexp.at, one at


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}])
def test_bitwise_count_and_its_at(shape):
    """``np.bitwise_count`` (NumPy's TypeError before: no counterpart) counts the bits of the absolute value, as
    uint8; ``np.bitwise_count.at`` applies it at every repeat of a key, as NumPy's unbuffered ``at``."""
    mesh = cached_mesh(shape)
    for h in (
        np.array([0, 7, -1, 255, -128, 127, 5]).astype(np.int16),
        np.array([0, -(2**63), 2**63 - 1, -1, 5]),
        np.array([0, 2**64 - 1, 2**63, 5], np.uint64),
        np.array([True, False, True]),
        np.array([3, 200, 255], np.uint8),
    ):
        _same(np.bitwise_count(xp.asarray(h, device=mesh)).numpy(), np.bitwise_count(h))
    for key in ([0, 0, 2], np.array([4, 1, 4, 4]), slice(1, 4), (np.array([True, False] * 3),)):
        h = np.array([3, 7, 255, 1, 15, 6], np.int32)
        x = xp.asarray(h, device=mesh)
        np.bitwise_count.at(h, key)
        np.bitwise_count.at(x, xp.asarray(key, device=mesh) if isinstance(key, np.ndarray) else key)
        _same(x.numpy(), h)
    with pytest.raises(TypeError):
        np.bitwise_count(xp.asarray([1.5], device=mesh))


def test_ldexp_at_refusals_are_typed_and_every_at_shares_one_check():
    """``np.ldexp.at`` (its exponents stay integers in NumPy's loop; the library's ``at`` applies values in the
    array's dtype) is refused with a message that says so, not "no loop for float64 and float64"; a float exponent,
    which NumPy refuses too, is its TypeError. ``np.add.at``, ``np.maximum.at`` and ``np.multiply.at`` share one
    path and its same_kind check first (the old ``Array`` branches for add/maximum/minimum aside)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    x = xp.asarray(np.array([1.0, 2.0, 3.0]), device=mesh)
    np.ldexp.at(x, [0, 0], 3)  # (applied: int64 exponents, NumPy's loop; tests/test_protocol_gaps17.py)
    np.testing.assert_array_equal(x.numpy(), [64.0, 2.0, 3.0])
    with pytest.raises(sa.DTypeError, match="no ldexp loop for float64 and float"):
        np.ldexp.at(x, [0], 1.5)
    ints = xp.asarray(np.arange(4), device=mesh)
    for ufunc in (np.add, np.maximum, np.minimum, np.multiply, np.subtract):
        with pytest.raises(sa.DTypeError, match=r"same_kind.*cast the values to int64"):
            ufunc.at(ints, [0, 1], 2.5)
        with pytest.raises(sa.DTypeError, match="must be numbers or arrays"):
            ufunc.at(ints, [0, 1], None)
        with pytest.raises(TypeError):  # (a keyword NumPy's at does not take: its TypeError)
            ufunc.at(ints, [0], 1, where=True)
    np.testing.assert_array_equal(ints.numpy(), np.arange(4))
    np.add.at(ints, [0, 0, 3], [1, 2, 3])
    np.maximum.at(ints, np.array([1, 1]), xp.asarray([5, 9], device=mesh))
    np.testing.assert_array_equal(ints.numpy(), [3, 9, 2, 6])


def test_bitwise_and_logical_xor_reduce():
    """``np.bitwise_or.reduce`` (and ``bitwise_and``/``bitwise_xor``/``logical_xor``: NumPy's TypeError before, no
    counterpart) along split axes: one reduceat segment per axis, NumPy's identity over an empty axis, where=,
    initial=, keepdims; no gather."""
    mesh = cached_mesh({"row": 2, "col": 2})
    h = np.array([[3, 5, 12, 7, 1], [8, 1, 2, 6, 0], [5, 5, 5, 1, 9]], np.uint8)
    x = xp.asarray(sa.asarray(h, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"}))
    mask = np.array([[True, False, True, True, False]] * 3)
    for ufunc in (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.logical_xor):
        for kw in ({"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": None}, {"axis": 1, "initial": 6}):
            with sa.comm_log() as log:
                got = ufunc.reduce(x, **kw)
            _same(np.asarray(got), ufunc.reduce(h, **kw))
            assert {r.op for r in log.records} <= {"alltoall", "broadcast"}, log.summary()
        start = True if ufunc is np.logical_xor else 0
        _same(ufunc.reduce(x, axis=1, where=xp.asarray(mask, device=mesh), initial=start).numpy(),
              ufunc.reduce(h, axis=1, where=mask, initial=start))  # fmt: skip
        empty = np.zeros((0, 3), np.int16)
        _same(ufunc.reduce(xp.asarray(empty, device=mesh)).numpy(), ufunc.reduce(empty))
    with pytest.raises(TypeError):
        np.bitwise_or.reduce(xp.asarray([1.5, 2.0], device=mesh))


# ------------------------------------------------------------------------------------------------ 8. fuzzers

DTYPES = ("int8", "int64", "uint8", "bool", "float16", "float32", "float64", "complex128")
OUT_DTYPES = ("int8", "int64", "float16", "float32", "float64", "complex128", "bool")


def _host(rng, shape, dtype):
    v = rng.integers(-4, 5, shape)
    if dtype == "bool":
        return v > 0
    if np.dtype(dtype).kind == "u":
        v = np.abs(v)
    if np.dtype(dtype).kind == "c":
        return (v + 1j * rng.integers(-2, 3, shape)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        v = np.where(rng.random(shape) < 0.15, np.nan, v)
        v = np.where(rng.random(shape) < 0.15, -0.0, v)
    return v.astype(dtype)


def _run(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # (NumPy's and ours, compared by kind)
            return None, e


def _compare(data, mesh, call, host_args, out_shape=None, out_dtype=None, inexact_ok=False, signs=True):
    """``call(*args, out=...)`` on the host and on the mesh: the same value (or the same kind of exception)."""
    out_h = None if out_dtype is None else np.zeros(out_shape, out_dtype)
    want, err = _run(lambda: call(*host_args, **({} if out_h is None else {"out": out_h})))
    args = [_placed(data, mesh, a) if isinstance(a, np.ndarray) and a.ndim else a for a in host_args]
    out_x = None if out_dtype is None else xp.zeros(out_shape, dtype=out_dtype, device=mesh)
    got, mine = _run(lambda: call(*args, **({} if out_x is None else {"out": out_x})))
    if err is not None or mine is not None:
        assert err is not None and mine is not None, (err, mine)
        kinds = (TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError)
        assert all(isinstance(mine, k) for k in kinds if isinstance(err, k)), (err, mine)
        return
    got, want = (out_x, out_h) if out_h is not None else (got, want)
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    if inexact_ok and np.asarray(want).dtype.kind in "fc":
        want = np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        tol = 4e-3 if want.dtype in (np.float16,) else 1e-6
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        _same(got, want, signs)


REDUCING = ("add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or", "logical_xor")
REDUCING += ("bitwise_and", "bitwise_or", "bitwise_xor")


@fuzz(60, ENV)
@given(cached_meshes(), st.data())
def test_fuzz_ufunc_reduce_accumulate_outer(mesh, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    nd = data.draw(st.integers(1, 2))
    shape = tuple(data.draw(st.sampled_from([0, 1, 3, 5])) for _ in range(nd))
    dtype = data.draw(st.sampled_from(DTYPES))
    h = _host(rng, shape, dtype)
    name = data.draw(st.sampled_from(REDUCING))
    ufunc = getattr(np, name)
    if name in ("fmax", "fmin", "maximum", "minimum"):  # (NumPy's fmax of 0.0 and -0.0 depends on its loop)
        h = h + np.zeros((), h.dtype) if h.dtype.kind in "fc" else h
    method = data.draw(st.sampled_from(["reduce", "accumulate", "outer"]))
    kw = {}
    if data.draw(st.integers(0, 3)) == 0:
        kw["dtype"] = data.draw(st.sampled_from(DTYPES))
    out_dtype = data.draw(st.sampled_from(OUT_DTYPES)) if data.draw(st.booleans()) else None
    out_dtype = _real_to_complex(dtype, kw, out_dtype)
    if method == "outer":
        b_dtype = data.draw(st.sampled_from(DTYPES))
        if b_dtype == "complex128" and kw.get("dtype") not in (None, "complex128"):
            b_dtype = "float64"  # (complex values cast to a real dtype: NumPy's warning, the library's DTypeError)
        b = _host(rng, (data.draw(st.sampled_from([0, 1, 4])),), b_dtype)
        b = b + np.zeros((), b.dtype) if name in ("fmax", "fmin", "maximum", "minimum") and b.dtype.kind in "fc" else b
        call, args, out_shape = (lambda a, c, **o: ufunc.outer(a, c, **kw, **o)), (h, b), h.shape + b.shape
    elif method == "accumulate":
        kw["axis"] = data.draw(st.integers(-nd, nd - 1))
        call, args, out_shape = (lambda a, **o: ufunc.accumulate(a, **kw, **o)), (h,), h.shape
    else:
        kw["axis"] = data.draw(st.sampled_from([None, *range(-nd, nd)]))
        kw["keepdims"] = data.draw(st.booleans())
        if data.draw(st.booleans()):
            kw["initial"] = True if dtype == "bool" else int(rng.integers(-2, 3))
        if data.draw(st.integers(0, 2)) == 0:
            kw["where"] = rng.random(shape) < 0.6
            kw["initial"] = kw.get("initial", True if dtype == "bool" else 0)
        probe, _ = _run(lambda: ufunc.reduce(h, **kw))
        out_shape = np.shape(probe)
        out_dtype = None if probe is None else out_dtype  # (an out= of the wrong shape: NumPy checks that first)
        if name not in ("add", "multiply") and (h.dtype.kind in "fc" or out_dtype == "bool"):
            out_dtype = out_dtype if out_dtype not in ("int8", "int64", "bool") else None  # (NumPy's reduction
            # starts from the first value cast into out=: a NaN reads as 0, -3 into bools as 1)
        if "initial" in kw and out_dtype == "bool":
            out_dtype = None  # (and from initial= cast into a bool out=: add.reduce([-1], initial=-1) is True)
        if "where" in kw:
            mask = kw.pop("where")
            call, args = (lambda a, m, **o: ufunc.reduce(a, where=m, **kw, **o)), (h, mask)
        else:
            call, args = (lambda a, **o: ufunc.reduce(a, **kw, **o)), (h,)
    _compare(data, mesh, call, args, out_shape, out_dtype, signs=name != "multiply")  # (complex zeros: _same)


def _real_to_complex(dtype, kw, out_dtype):
    """Complex data keep a complex ``dtype=``/``out=`` (a cast to a real dtype: NumPy's ComplexWarning, the
    library's DTypeError, checked elsewhere)."""
    if dtype == "complex128" and kw.get("dtype") is not None and np.dtype(kw["dtype"]).kind != "c":
        kw["dtype"] = "complex128"
    if dtype == "complex128" or (kw.get("dtype") is not None and np.dtype(kw["dtype"]).kind == "c"):
        out_dtype = None if out_dtype is None else "complex128"
    if kw.get("dtype") is not None and out_dtype is not None:  # (NumPy initializes its reduction in out=, then
        out_dtype = kw["dtype"]  # reads it in dtype=: maximum.reduce([0.5], dtype=bool, out=int8) is 0; not copied)
    return out_dtype


STATS = ("sum", "prod", "nansum", "nanprod", "max", "min", "nanmax", "nanmin", "mean", "nanmean", "cumsum")
SPREADS = ("var", "std", "nanvar", "nanstd")


@fuzz(60, ENV)
@given(cached_meshes(), st.data())
def test_fuzz_numpy_reductions_with_keywords(mesh, data):
    """NumPy's reductions and moments with ``where=``, ``initial=``, ``keepdims=``, ``dtype=`` and an ``out=`` of any
    dtype (integer-valued data: the sums are exact, so the order of the partials does not matter; the means, whose
    plain path divides each device's partial, and the spreads' squared deviations compare to a tolerance)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    nd = data.draw(st.integers(1, 2))
    shape = tuple(data.draw(st.sampled_from([0, 1, 3, 6])) for _ in range(nd))
    dtype = data.draw(st.sampled_from(DTYPES))
    h = _host(rng, shape, dtype)
    name = data.draw(st.sampled_from(STATS + SPREADS))
    fn = getattr(np, name)
    if name in ("max", "min", "nanmax", "nanmin") and h.dtype.kind in "fc":  # (NumPy's extrema of signed zeros
        # depend on its loop (scalar, SIMD, reduce, out= of another dtype): see above
        h = h + np.zeros((), h.dtype)
    kw = {"axis": data.draw(st.sampled_from([*range(-nd, nd)] + ([None] if name != "cumsum" else [])))}
    if name != "cumsum":
        kw["keepdims"] = data.draw(st.booleans())
    if name in SPREADS and data.draw(st.booleans()):
        kw["ddof"] = data.draw(st.integers(0, 2))
    if name in ("sum", "prod", "nansum", "nanprod", "max", "min") and data.draw(st.booleans()):
        kw["initial"] = int(rng.integers(-2, 3))
    if data.draw(st.integers(0, 3)) == 0 and name not in ("max", "min", "nanmax", "nanmin"):
        kw["dtype"] = data.draw(st.sampled_from(("float32", "float64", "int64", "complex128")))
    masked = name != "cumsum" and data.draw(st.integers(0, 2)) == 0
    out_dtype = data.draw(st.sampled_from(OUT_DTYPES)) if data.draw(st.booleans()) else None
    out_dtype = _real_to_complex(dtype, kw, out_dtype)
    probe, _ = _run(lambda: fn(h, **kw))
    out_dtype = None if probe is None else out_dtype  # (an out= of the wrong shape: NumPy checks that first)
    extreme = name in ("max", "min", "nanmax", "nanmin")
    if extreme and (out_dtype == "bool" or (out_dtype in ("int8", "int64") and h.dtype.kind == "f")):
        out_dtype = None  # (NumPy starts its reduction from the first value cast into out=: NaN read as 0, -3 as 1)
    if "initial" in kw and out_dtype == "bool":
        out_dtype = None  # (and from initial= cast into a bool out=, see the ufunc fuzzer)
    if name in ("max", "min", "nanmax", "nanmin") and out_dtype in ("int8", "int64", "bool") and h.dtype.kind == "f":
        out_dtype = None  # (NumPy starts its reduction from the first value cast into out=: NaN read as 0; see below)
    if masked:
        mask = rng.random(shape) < 0.6
        kw.setdefault("initial", 0) if name in ("max", "min", "nanmax", "nanmin") else None
        call, args = (lambda a, m, **o: fn(a, where=m, **kw, **o)), (h, mask)
    else:
        call, args = (lambda a, **o: fn(a, **kw, **o)), (h,)
    inexact = name in SPREADS or name.endswith("mean")  # (sa's mean divides each partial: an ulp, documented)
    _compare(data, mesh, call, args, np.shape(probe), out_dtype, inexact_ok=inexact, signs="prod" not in name)
