"""Round 14: a differential fuzz, against NumPy 2, of result dtypes beyond the elementwise matrix of
``test_fuzz9_dtypes.py``: the statistical reductions (``sum``, ``prod``, ``cumulative_sum``, ``cumulative_prod``
with ``dtype=``, ``mean``/``var``/``std`` of integers as float64, NumPy's ``np.mean``/``np.sum``'s ``dtype=``),
``astype`` over every pair (with ``copy=``), ``result_type``, ``can_cast``, ``finfo``, ``iinfo`` and ``isdtype``,
integer division by zero and negative integer powers, and the NumPy ufunc extras (``fmax``, ``fmin``, ``fmod``,
``heaviside``, ...) with NumPy scalars, 0-d arrays and Python scalars on either side. Dtypes: bool, the eight
integers, float16, bfloat16, float32, float64, complex64, complex128; meshes 1 and 2x2 (3x2 for the blockwise
combines), layouts with uneven and empty blocks.

The documented choices it checks (where NumPy and the standard part, or NumPy has no rule):

* narrow floats (float16, bfloat16) sum, cumsum and average in float32 and are rounded once on every layout
  (``reduce.py``, ``dtypes.accumulation_dtype``), where NumPy adds float16 in float16 along a strided axis: the
  reference is the float32 sum of the (cast) values, rounded once;
* complex values do not cast to a real dtype (``astype``, ``sum(..., dtype=float64)``): ``DTypeError``, as the
  standard and array-api-strict have it, where NumPy drops the imaginary part;
* NaN, infinities and out-of-range floats cast to integers are implementation-defined (the standard): not compared;
* bfloat16 promotes as ``dtypes.promote`` documents, in ``result_type`` and ``can_cast`` as in every op (a Python
  float keeps it, a complex makes complex64; with float16 or a 16-bit integer float32); it is ``"real floating"``
  for ``isdtype`` and has an ``finfo``;
* ``can_cast`` is the standard's promotion table (within a kind), not NumPy's safe casting (``int8`` to ``float32``
  is False);
* integer ``//`` and ``%`` by zero give NumPy's 0 without its ``RuntimeWarning`` (``math_binary.py``).

``FUZZ14_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import operator
import warnings

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_mesh, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.dtypes import promote

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ14_EXAMPLES"
BF16 = np.dtype(ml_dtypes.bfloat16)
NARROW = (np.dtype(np.float16), BF16)
DTYPES = tuple(
    np.dtype(d)
    for d in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", BF16, "float32", "float64", "complex64", "complex128",
    )
)  # fmt: skip
MESHES = ({"d": 1}, {"row": 2, "col": 2})
SCALARS = (True, 1, -1, 3, 1.5, 1j)


def _real(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt == BF16


def _values(rng: np.random.Generator, shape: tuple, dt: np.dtype) -> np.ndarray:
    """Small values every dtype holds exactly (quarters for floats), so sums are exact in float32 whatever the
    order and integer sums wrap as NumPy's do."""
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -9, 10, shape).astype(dt)
    v = rng.integers(-24, 25, shape) / 4
    if dt.kind == "c":
        return (v + 1j * rng.integers(-24, 25, shape) / 4).astype(dt)
    return v.astype(dt)


@st.composite
def placed(draw, a: np.ndarray, mesh: sa.Mesh) -> xp.Array:
    """``a`` as a positional array on ``mesh`` with a random layout (uneven and empty blocks)."""
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


def _ulps(dt: np.dtype) -> float:
    return 2.0**-7 if dt == BF16 else float(np.finfo(dt).eps)


def _close(got: np.ndarray, expected: np.ndarray, rel: float) -> None:
    """Equal dtype and shape, values within ``rel`` (relative; 0: exact), NaN where NaN."""
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected)
        return
    g, e = got.astype(np.complex128), expected.astype(np.complex128)
    both_nan = np.isnan(g) & np.isnan(e)
    fine = np.isfinite(e)
    assert np.array_equal(g[~fine & ~both_nan], e[~fine & ~both_nan]), (got, expected)
    assert np.all(np.abs(g[fine] - e[fine]) <= rel * np.maximum(np.abs(e[fine]), 1.0)), (got, expected)


# ============================================================================================= reductions


def _reduce_reference(op: str, a: np.ndarray, axis, dtype) -> tuple[np.ndarray, float]:
    """NumPy's result of ``xp.<op>(a, axis=axis, dtype=dtype)`` with the documented choices, and its tolerance."""
    cumulative = op.startswith("cumulative")
    fn = getattr(np, op)
    target = np.dtype(dtype) if dtype is not None else None
    if op in ("mean", "var", "std"):
        work = a.astype(np.float32) if a.dtype in NARROW else a
        r = np.asarray(fn(work, axis=axis))
        r = r.astype(a.dtype) if a.dtype in NARROW else r
        return r, 4 * _ulps(r.dtype) if r.dtype.kind in "fcV" or r.dtype == BF16 else 0.0
    if target is None:
        target = np.dtype(np.uint64 if a.dtype.kind == "u" else np.int64) if a.dtype.kind in "biu" else a.dtype
    src = a.astype(target)  # (the standard: cast first, then reduce)
    work = src.astype(np.float32) if target in NARROW else src
    kw = {"axis": axis} if axis is not None or not cumulative else {}
    r = np.asarray(fn(work, **kw, dtype=work.dtype) if work.dtype.kind in "iub" else fn(work, **kw))
    r = r.astype(target) if r.dtype != target else r
    if target.kind in "iub":
        return r, 0.0
    return r, (1 if op in ("sum", "cumulative_sum") else 8) * _ulps(target if target.kind != "c" else r.real.dtype)


@fuzz(80, ENV)
@given(st.data())
def test_fuzz_reduction_result_dtypes(data):
    mesh = cached_mesh(data.draw(st.sampled_from(MESHES)))
    dt = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(st.sampled_from([(0, 3), (1, 4), (5, 3), (7, 2), (6,), ()]))
    op = data.draw(st.sampled_from(["sum", "prod", "cumulative_sum", "cumulative_prod", "mean", "var", "std"]))
    if not shape and op.startswith("cumulative"):
        op = "sum"  # (NumPy's cumulative_sum refuses 0-d arrays)
    dtype = data.draw(st.sampled_from([None, *DTYPES])) if op not in ("mean", "var", "std") else None
    a = _values(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), shape, dt)
    if dtype is not None and dtype.kind == "u" and dt.kind in "fV":
        a = np.abs(a)  # (a negative float cast to an unsigned integer is implementation-defined)
    x = data.draw(placed(a, mesh))
    axes = [0, -1] if a.ndim else [None]
    axis = data.draw(st.sampled_from(axes if op.startswith("cumulative") else [None, *axes]))
    kw = {"axis": axis} if axis is not None else {}
    if dtype is not None:
        kw["dtype"] = dtype
    if dtype is not None and dt.kind == "c" and dtype.kind != "c":
        with pytest.raises(sa.DTypeError, match="imaginary"):
            getattr(xp, op)(x, **kw)  # (documented: complex values do not cast to a real dtype)
        return
    if op in ("mean", "var", "std") and dt.kind in "biu":
        expected, rel = np.asarray(getattr(np, op)(a, axis=axis)), 1e-12  # (bools and integers: float64, as NumPy)
    else:
        expected, rel = _reduce_reference(op, a, axis, dtype)
    _close(getattr(xp, op)(x, **kw).numpy(), expected, rel)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}])
def test_narrow_float_sums_accumulate_in_float32_and_round_once_on_uneven_splits(shape, dtype):
    """A float16 sum of 51 integers near 500 in float16 steps drifts by tens (NumPy's strided-axis loop); the
    library's is the float32 sum rounded once, whatever the split (blocks of 13/12 rows, uneven 3x2)."""
    mesh = cached_mesh(shape)
    dt = np.dtype(dtype)
    rng = np.random.default_rng(7)
    a = rng.integers(400, 600, (51, 3)).astype(dt)
    lay = {"dim0": tuple(mesh.axis_names)} if len(mesh.axis_names) > 1 else {"dim0": mesh.axis_names[0]}
    x = as_kind(sa.asarray(a, dims=("dim0", "dim1"), mesh=mesh, layout=lay), xp.Array)
    wide = a.astype(np.float32)
    for axis in (None, 0):
        got = xp.sum(x, axis=axis).numpy()
        assert got.dtype == dt
        np.testing.assert_array_equal(got, np.sum(wide, axis=axis).astype(dt))
        np.testing.assert_array_equal(xp.mean(x, axis=axis).numpy(), np.mean(wide, axis=axis).astype(dt))
    cum = xp.cumulative_sum(x, axis=0).numpy()
    np.testing.assert_array_equal(cum, np.cumsum(wide, axis=0).astype(dt))
    if dt == np.float16:  # (NumPy's own float16 steps drift: the choice is visible)
        assert not np.array_equal(np.sum(a, axis=0), np.sum(wide, axis=0).astype(dt))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_float_nanmean_and_nanvar_are_computed_in_float32_and_rounded_once(dtype):
    """``nanmean``/``nanvar`` of float16 with a NaN summed and averaged in float16 (an overflowing sum made the
    mean inf where ``mean`` of the same values is finite; the float16 mean spoiled the deviations); they are now
    computed in float32 and rounded once, as ``mean`` and ``var`` (NumPy's float16 ``nanmean`` overflows)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    dt = np.dtype(dtype)
    big = np.full((150, 2), 1000, dt)
    big[0, 0] = np.nan
    x = xp.asarray(big, device=mesh)
    np.testing.assert_array_equal(xp.nanmean(x, axis=0).numpy(), np.array([1000, 1000], dt))
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((40, 3)) * 3 + 100).astype(dt)
    a[3, 1] = np.nan
    y = xp.asarray(a, device=mesh)
    wide = a.astype(np.float32)
    for name in ("nanmean", "nanvar", "nanstd"):
        got = getattr(xp, name)(y, axis=0).numpy()
        assert got.dtype == dt
        expected = getattr(np, name)(wide, axis=0).astype(dt)
        _close(got.astype(np.float32), expected.astype(np.float32), _ulps(dt))
    np.testing.assert_array_equal(xp.nanvar(y[4:], axis=0).numpy(), xp.var(y[4:], axis=0).numpy())


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}])
def test_integer_sums_wrap_as_numpy_on_uneven_splits(shape):
    mesh = cached_mesh(shape)
    a = np.random.default_rng(3).integers(-128, 128, (37, 5)).astype(np.int8)
    x = xp.asarray(a, device=mesh)
    for axis in (None, 0, 1):
        for dtype in (None, xp.int8, xp.uint8, xp.int16, xp.uint64):
            for op in ("sum", "prod"):
                got = getattr(xp, op)(x, axis=axis, dtype=dtype).numpy()
                expected = getattr(np, op)(a, axis=axis, dtype=dtype)
                assert got.dtype == expected.dtype and np.array_equal(got, expected), (op, axis, dtype)
        got = xp.cumulative_sum(x, axis=0 if axis is None else axis, dtype=xp.int8).numpy()
        np.testing.assert_array_equal(got, np.cumulative_sum(a, axis=0 if axis is None else axis, dtype=np.int8))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_numpy_mean_and_sum_take_dtype(dtype):
    mesh = cached_mesh({"row": 2, "col": 2})
    a = _values(np.random.default_rng(5), (5, 3), np.dtype(np.int16))
    x = xp.asarray(a, device=mesh)
    for fn in (np.mean, np.sum, np.cumsum, np.var, np.std):
        if fn in (np.var, np.std) and dtype == "int64":
            continue
        _close(np.asarray(fn(x, axis=0, dtype=dtype)), np.asarray(fn(a, axis=0, dtype=dtype)), 1e-6)


def test_reduction_dtype_argument_must_be_a_supported_dtype():
    x = xp.asarray(np.arange(6.0).reshape(2, 3), device=cached_mesh({"row": 2, "col": 2}))
    for fn in (xp.sum, xp.prod):
        for bad in ("foo", 5, np.longdouble, object):
            with pytest.raises(sa.DTypeError, match="dtype"):
                fn(x, dtype=bad)


# ============================================================================================= astype


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_astype_every_pair(data):
    mesh = cached_mesh(data.draw(st.sampled_from(MESHES)))
    src, dst = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = _values(rng, data.draw(st.sampled_from([(4, 3), (1, 5), (0, 2), ()])), src)
    if src.kind == "f" or src == BF16:
        a.ravel()[:1] = -0.0  # (the sign of zero survives float casts)
    if src.kind in "iu" and a.size and (dst.kind in "fc" or dst == BF16):
        a.ravel()[-1:] = np.iinfo(src).max  # (a wide integer rounds, to inf in float16)
    if dst.kind == "u" and (src.kind in "f" or src == BF16):
        a = np.abs(a)  # (a negative float cast to an unsigned integer is implementation-defined)
    x = data.draw(placed(a, mesh))
    copy = data.draw(st.booleans())
    if src.kind == "c" and dst.kind != "c":
        with pytest.raises(sa.DTypeError, match="imaginary"):
            xp.astype(x, dst, copy=copy)
        return
    y = xp.astype(x, dst, copy=copy)
    if src == dst:
        assert (y is x) == (not copy)
    expected = a.astype(dst)
    got = y.numpy()
    assert got.dtype == dst and got.shape == a.shape
    assert np.array_equal(np.atleast_1d(got).view(np.uint8), np.atleast_1d(expected).view(np.uint8)), (got, expected)


# ============================================================================================= dtype functions


def _zero_d(dt: np.dtype, mesh: sa.Mesh) -> xp.Array:
    return xp.asarray(np.zeros((), dt), device=mesh)


def test_result_type_and_can_cast_agree_with_the_ops_for_every_pair():
    """``result_type`` is NumPy's where NumPy has a rule and the ops' dtype everywhere (bfloat16 included); it was
    a ``DTypeError`` for bfloat16 with float16 or a wide integer, whose sum is float32/float64, and float64 for a
    bfloat16 array and a Python float (the ops keep bfloat16). ``can_cast`` never raises (NumPy's promotion error
    for float16 to bfloat16 leaked) and is the standard's table."""
    mesh = cached_mesh({"d": 1})
    arrays = {dt: _zero_d(dt, mesh) for dt in DTYPES}
    for s in DTYPES:
        for t in DTYPES:
            rt = xp.result_type(s, t)
            assert rt == xp.result_type(arrays[s], arrays[t]) == xp.add(arrays[s], arrays[t]).dtype, (s, t)
            if BF16 not in (s, t):
                assert rt == np.result_type(s, t), (s, t)
            cast = xp.can_cast(s, t)
            same_kind = (s.kind == "b") == (t.kind == "b") and (s.kind in "iu") == (t.kind in "iu")
            assert cast == (s == t or (same_kind and promote(s, t) == t)), (s, t)
            if BF16 not in (s, t) and same_kind:
                assert cast == np.can_cast(s, t), (s, t)
        for v in SCALARS:
            try:
                op = xp.add(arrays[s], v).dtype
            except sa.ShardArrayError:
                continue
            assert xp.result_type(s, v) == xp.result_type(arrays[s], v) == op, (s, v)
            if s != BF16:
                assert xp.result_type(s, v) == np.result_type(s, v), (s, v)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_finfo_iinfo_isdtype(dt):
    if dt.kind in "iu":
        info, ref = xp.iinfo(dt), np.iinfo(dt)
        assert (info.bits, info.min, info.max, info.dtype) == (ref.bits, ref.min, ref.max, dt)
        with pytest.raises(sa.DTypeError, match="finfo"):
            xp.finfo(dt)
    elif dt.kind == "b":
        for fn in (xp.finfo, xp.iinfo):
            with pytest.raises(sa.DTypeError):
                fn(dt)
    else:
        info, ref = xp.finfo(dt), ml_dtypes.finfo(dt)
        got = (info.bits, info.eps, info.max, info.min, info.smallest_normal, info.dtype)
        assert got == (ref.bits, float(ref.eps), float(ref.max), float(ref.min), float(ref.smallest_normal), ref.dtype)
        assert all(type(v) is float for v in got[1:5])
        with pytest.raises(sa.DTypeError, match="iinfo"):
            xp.iinfo(dt)
    kinds = {
        "bool": dt.kind == "b",
        "signed integer": dt.kind == "i",
        "unsigned integer": dt.kind == "u",
        "integral": dt.kind in "iu",
        "real floating": dt.kind == "f" or dt == BF16,
        "complex floating": dt.kind == "c",
        "numeric": dt.kind != "b",
    }
    for kind, expected in kinds.items():
        assert xp.isdtype(dt, kind) == expected, (dt, kind)


def test_bfloat16_has_finfo_so_nan_to_num_works():
    """``xp.finfo(bfloat16)`` raised ``DTypeError`` (NumPy's ``finfo`` refuses it), and ``nan_to_num`` of a
    bfloat16 array with it."""
    x = xp.asarray(np.array([np.nan, np.inf, -np.inf, 1.5], BF16), device=cached_mesh({"row": 2, "col": 2}))
    big = float(ml_dtypes.finfo(BF16).max)
    got = xp.nan_to_num(x).numpy()
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float64), [0.0, big, -big, 1.5])
    assert xp.finfo(x.dtype).eps == 2.0**-7 and xp.finfo(x.dtype).dtype == BF16


# ============================================================================================= integer corners

INTS = tuple(d for d in DTYPES if d.kind in "iu")


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_integer_division_by_zero_and_negative_powers(dt):
    mesh = cached_mesh({"row": 2, "col": 2})
    a = np.array([[5, 0, 7], [-3 if dt.kind == "i" else 3, 1, 0]], dtype=dt)
    b = np.array([[0, 0, 2], [0, 3, 1]], dtype=dt)
    x, y, zero = xp.asarray(a, device=mesh), xp.asarray(b, device=mesh), xp.asarray(np.array(0, dt), device=mesh)
    for f in (operator.floordiv, operator.mod, operator.truediv):
        for left, right, l_np, r_np in ((x, y, a, b), (x, 0, a, 0), (x, zero, a, np.array(0, dt)), (5, y, 5, b)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = np.asarray(f(l_np, r_np))
            with warnings.catch_warnings():
                if f is not operator.truediv:  # (integer // and % by zero: NumPy's 0, without its warning)
                    warnings.simplefilter("error")
                got = f(left, right)
            _close(got.numpy(), expected, 0.0)
    ii = np.iinfo(dt)
    big = np.full((2, 3), ii.max, dt)
    xb = xp.asarray(big, device=mesh)
    for got, expected in ((xb + xb, big + big), (xb * xb, big * big), (-xb, -big), (xb + 1, big + np.array(1, dt))):
        _close(got.numpy(), expected, 0.0)
    if dt.kind == "i":
        for call in (lambda: x**-1, lambda: xp.pow(x, -2), lambda: x ** xp.asarray(np.array(-1, dt), device=mesh)):
            with pytest.raises(ValueError, match="negative"):
                call()  # (NumPy: "Integers to negative integer powers are not allowed.")
    for v in (ii.max + 1, ii.min - 1):
        with pytest.raises(OverflowError):
            x + v  # (NEP 50: a Python int out of the array's range)


# ============================================================================================= NumPy ufunc extras


def test_numpy_scalars_keep_their_dtype_in_the_ufunc_extras():
    """NEP 50: a NumPy scalar (or 0-d NumPy array) is not weak. ``xp.fmax(float32_array, np.float64(1.5))`` was
    float32 (the scalar read as a Python float), where NumPy (and ``xp.add``) give float64; ``np.fmax`` of a
    positional array dispatches there."""
    mesh = cached_mesh({"row": 2, "col": 2})
    a = np.array([[1.5, -2.5, 0.0], [np.nan, 4.0, -0.5]], np.float32)
    x = xp.asarray(a, device=mesh)
    for name in ("fmax", "fmin", "fmod", "float_power", "heaviside"):
        for v in (np.float64(1.25), np.array(1.25), np.float16(0.5), np.int64(3), np.uint8(2), 2, 0.5, True):
            for args, ref in (((x, v), (a, v)), ((v, x), (v, a))):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    expected = np.asarray(getattr(np, name)(*ref))
                for got in (getattr(xp, name)(*args), getattr(np, name)(*args)):
                    _close(got.numpy(), expected, 0.0)


def test_heaviside_takes_a_scalar_first_operand():
    """``np.heaviside(0.5, x)`` (a scalar step argument) raised ``DTypeError: expects an array``."""
    mesh = cached_mesh({"row": 2, "col": 2})
    for dt in ("bool", "int8", "float16", "float32"):
        a = np.array([[-1, 0, 2], [0, 3, 1]]).astype(dt)
        x = xp.asarray(a, device=mesh)
        for s in (2, 0.5, -1.5, True, np.float64(0.0), np.int8(1)):
            _close(xp.heaviside(s, x).numpy(), np.heaviside(s, a), 0.0)
            _close(xp.heaviside(x, s).numpy(), np.heaviside(a, s), 0.0)


def test_sinc_and_i0_of_bfloat16_are_rounded_once():
    """bfloat16 math runs in float32 and is rounded once (``dtypes.compute_dtype``); ``sinc`` and ``i0`` rounded
    each step to bfloat16 (``sinc(1.43)`` off by 3%)."""
    a = np.array([-3.7, -1.43, -0.5, 0.0, 0.25, 1.43, 2.9, 7.5, 9.25, np.nan], BF16)
    x = xp.asarray(a, device=cached_mesh({"row": 2, "col": 2}))
    wide = a.astype(np.float32)
    for got, expected in ((xp.sinc(x), np.sinc(wide)), (xp.i0(x), np.i0(wide))):
        g = got.numpy()
        assert g.dtype == BF16
        _close(g.astype(np.float32), expected.astype(BF16).astype(np.float32), 2.0**-8)


BINARY_EXTRAS = ("fmax", "fmin", "fmod", "float_power", "gcd", "lcm", "heaviside", "ldexp", "divmod")
UNARY_EXTRAS = ("cbrt", "deg2rad", "rad2deg", "degrees", "radians", "fix", "exp2", "sinc", "i0", "angle", "frexp",
                "modf", "isposinf", "isneginf", "isreal", "iscomplex", "nan_to_num")  # fmt: skip
OPERANDS = (*SCALARS, 300, np.float64(1.25), np.float16(0.5), np.int8(-2), np.uint8(3), np.bool_(True))


def _numpy(fn, *args):
    """NumPy's result (a tuple for two outputs), or the exception it raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    except Exception as e:  # (any NumPy error: the library must raise a typed one of its kind)
        return e


def _against(expected, call) -> None:
    """``call()`` against NumPy's ``expected`` result or exception (a typed ``sa`` error of the same base)."""
    if isinstance(expected, Exception):
        base = TypeError if isinstance(expected, TypeError) else ValueError
        with pytest.raises(base) as info:
            call()
        assert isinstance(info.value, (sa.ShardArrayError, OverflowError)), info.value
        return
    got = call()
    pairs = zip(got, expected) if isinstance(expected, tuple) else [(got, expected)]
    for g, e in pairs:
        e = np.asarray(e)
        exact = e.dtype.kind in "biu" or e.dtype.itemsize <= 2
        _close(g.numpy(), e, 0.0 if exact else 4 * _ulps(e.real.dtype if e.dtype.kind == "c" else e.dtype))


@fuzz(80, ENV)
@given(st.data())
def test_fuzz_numpy_ufunc_extras_over_dtypes_and_scalars(data):
    """The NumPy extras of the namespace (``xp.fmax``, ``xp.gcd``, ``xp.frexp``, ...) give NumPy's loop dtypes for
    every dtype, Python scalars weak and NumPy scalars strong on either side; NumPy's errors as typed ones."""
    mesh = cached_mesh(data.draw(st.sampled_from(MESHES)))
    real = tuple(d for d in DTYPES if d != BF16)  # (bfloat16: NumPy's extras follow ml_dtypes' loops)
    dt = data.draw(st.sampled_from(real))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = _values(rng, data.draw(st.sampled_from([(3, 4), (5,), ()])), dt)
    x = data.draw(placed(a, mesh))
    if data.draw(st.booleans()):
        name = data.draw(st.sampled_from(UNARY_EXTRAS))
        return _against(_numpy(getattr(np, name), a), lambda: getattr(xp, name)(x))
    name = data.draw(st.sampled_from(BINARY_EXTRAS))
    if data.draw(st.booleans()):
        other_dt = data.draw(st.sampled_from(real))
        b = _values(rng, a.shape, other_dt)
        other, other_np = data.draw(placed(b, mesh)), b
    else:
        other = other_np = data.draw(st.sampled_from(OPERANDS))
    args, args_np = ((x, other), (a, other_np)) if data.draw(st.booleans()) else ((other, x), (other_np, a))
    _against(_numpy(getattr(np, name), *args_np), lambda: getattr(xp, name)(*args))


def test_cumulative_sum_of_complex_to_a_real_dtype_is_refused_as_sum():
    """``xp.cumulative_sum(complex_x, dtype=float32)`` dropped the imaginary parts (NumPy's ComplexWarning) where
    ``xp.sum(..., dtype=float32)`` refuses: both refuse now."""
    x = xp.asarray(np.array([1 + 2j, 3 - 1j, 0.5j]), device=cached_mesh({"row": 2, "col": 2}))
    for fn in (xp.sum, xp.cumulative_sum, xp.cumulative_prod):
        with pytest.raises(sa.DTypeError, match="imaginary"):
            fn(x, dtype=xp.float32)


def test_numpy_functions_name_a_bad_dtype_and_take_bfloat16_moments():
    """``np.mean(x, dtype="foo")`` raised NumPy's bare TypeError and ``np.var(bf16_x, dtype=np.int64)`` leaked
    NumPy's ``DTypePromotionError``: a ``sa.DTypeError`` naming the function, and the moment as for float32."""
    mesh = cached_mesh({"row": 2, "col": 2})
    h = np.arange(6.0).reshape(2, 3)
    x = xp.asarray(h, device=mesh)
    for fn in (np.mean, np.std, np.sum, np.nanvar):
        with pytest.raises(sa.DTypeError, match=rf"np\.{fn.__name__}: dtype= unknown dtype 'foo'"):
            fn(x, dtype="foo")
    b = xp.astype(x, "bfloat16")
    assert int(np.var(b, dtype=np.int64)) == np.var(h.astype(np.float32), dtype=np.int64)
