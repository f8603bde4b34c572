"""Differential fuzz of the device-specific code paths (CuPy shards) against NumPy on the gathered values.

Run on both backends: ``pytest tests/test_fuzz7_cupy_paths.py`` (NumPy shards) and ``... --backend=cupy`` (CuPy
shards: the strict stand-in of tests/support/strict_cupy.py without a GPU, which models CuPy 14.2 where it is
not NumPy: ``floor(a / b)`` division, ``-ftz`` float32 comparisons, argmax among NaNs, complex ``searchsorted``,
batched ``inv`` without ``LinAlgError``, CScalar ints). Each test compares with NumPy, dtypes and signs of zeros
included. ``FUZZ7_EXAMPLES=2000`` raises every test's ``max_examples`` for a long hunt.
"""

from __future__ import annotations

import math
import os
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import holds_subnormal32, on_real_cupy

import shardarray as sa
import shardarray.array_api as xp

BF16 = np.dtype(ml_dtypes.bfloat16)
EXAMPLES = int(os.environ.get("FUZZ7_EXAMPLES", "0"))
MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}, {"all": 4}]


def fuzz(n: int):
    """hypothesis settings: ``n`` examples (``FUZZ7_EXAMPLES`` where set), no deadline."""
    return settings(
        max_examples=EXAMPLES or n, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
    )


def mesh_of(shape):
    return sa.Mesh(shape)  # (a CuPy mesh under --backend=cupy)


def layout_of(draw, mesh, dims):
    """A random layout of ``dims`` over ``mesh``'s axes (each axis used at most once)."""
    free = list(mesh.axis_names)
    out = {}
    for d in dims:
        if free and draw(st.booleans()):
            a = draw(st.sampled_from(free))
            free.remove(a)
            out[d] = a
    return out


def as_float(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype == BF16 or a.dtype.kind == "f" else a


def same(got, want, what=""):
    """Equal dtypes, equal values (NaN equal to NaN), equal signs of zeros."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    g, w = as_float(got), as_float(want)
    np.testing.assert_array_equal(g, w, err_msg=what)
    if g.dtype.kind == "f":
        keep = ~np.isnan(w)
        np.testing.assert_array_equal(np.signbit(g[keep]), np.signbit(w[keep]), err_msg=f"{what}: signs")


# ============================================================================================ values
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 0.5, 2.0, -2.0, 3.0, 7.5, -7.5, 1e-3, 1e300, -1e300, 1e-300, 5e-324,
           1e-40, -1e-40, 1e-45, 6e-8, 65504.0, 3e38, 3.4e38, -3.4e38, 1e30, 1e-38, 1.2e-38, math.inf, -math.inf,
           math.nan]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64", "bfloat16"]


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def values(dt, n):
    """``n`` values of dtype ``dt``: special values and random ones (floats), or integers across the range."""
    if dt.kind in "iu":
        info = np.iinfo(dt)
        small = st.integers(-9 if dt.kind == "i" else 0, 9)
        return st.lists(st.one_of(small, st.integers(int(info.min), int(info.max))), min_size=n, max_size=n).map(
            lambda v: np.array(v, dtype=dt))
    num = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True),
                    st.floats(-10, 10).map(lambda f: round(f, 1)))
    with np.errstate(over="ignore"):
        return st.lists(num, min_size=n, max_size=n).map(lambda v: _cast(v, dt))


def _cast(v, dt):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(v, dtype=np.float64).astype(dt)


def scalars(dt):
    """A scalar operand beside an array of ``dt``: a Python int or float (weak), or a NumPy scalar."""
    ints = st.one_of(st.integers(-9, 9), st.sampled_from([2**31, 2**63 - 1, -(2**63), 2**64 - 1, 2**70, -(2**70)]))
    floats = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return st.one_of(st.integers(int(info.min), int(info.max)), st.floats(-10, 10).map(lambda f: round(f, 2)))
    return st.one_of(ints, floats, floats.map(np.float32), floats.map(np.float64))


# ============================================================================================ references
def result_dtype(*operands):
    """NumPy's result dtype, a bfloat16 array taking weak Python scalars as other 16-bit floats do (the library's
    rule; ml_dtypes' ufuncs would give float32)."""
    proxies = [np.empty(0, np.float16) if isinstance(v, np.ndarray) and v.dtype == BF16 else v for v in operands]
    rt = np.result_type(*proxies)
    return BF16 if rt == np.float16 and any(isinstance(v, np.ndarray) and v.dtype == BF16 for v in operands) else rt


def _weak_bf16(v):
    """A weak Python scalar beside bfloat16 arrays: a float32 (an int through a double, as NumPy converts it), the
    library's rule (tests/ops/elementwise/test_real_cupy_elementwise.py: ``x // 0.1`` is computed with 0.1 in
    float32, the result rounded to bfloat16 once)."""
    with np.errstate(over="ignore"):
        return np.float32(float(v))


def np_binary(op, a, b, native=False):
    """NumPy's ``op`` of arrays/scalars; a bfloat16 operand is computed in float32 (a scalar taking bfloat16 first),
    the result rounded to NumPy's result dtype once, as ml_dtypes and the library's NumPy shards do; ``native``:
    NumPy's (and ml_dtypes') own loop dtypes, as ``xp.fmod``/``xp.divmod`` promise."""
    operands = [a, b]
    rt = np.result_type(a, b) if native else result_dtype(a, b)
    if rt == BF16 and not native:
        operands = [v.astype(np.float32) if isinstance(v, np.ndarray) else _weak_bf16(v)
                    if isinstance(v, (bool, int, float)) else v for v in operands]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = op(*operands)
    if isinstance(r, tuple):
        return tuple(np.asarray(v).astype(rt) if rt == BF16 else np.asarray(v) for v in r)
    return np.asarray(r).astype(rt) if rt == BF16 else np.asarray(r)


def run_both(lib, ref):
    """``(lib(), ref())``; where NumPy raises, the library must raise too (``None, None``)."""
    try:
        want = ref()
    except (OverflowError, TypeError, ValueError):
        with pytest.raises(Exception):
            lib()
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib(), want


# ============================================================================================ floor_divide / remainder
@st.composite
def division_case(draw):
    kind = draw(st.sampled_from(["float", "float", "int"]))
    dt = np_dtype(draw(st.sampled_from(FLOAT_DTYPES if kind == "float" else INT_DTYPES)))
    shape_m = draw(st.sampled_from(MESHES))
    mesh = mesh_of(shape_m)
    n, m = draw(st.integers(0, 7)), draw(st.integers(1, 5))
    a = draw(values(dt, n * m)).reshape(n, m)
    form = draw(st.sampled_from(["scalar", "rscalar", "same", "bcast"]))
    if form in ("scalar", "rscalar"):
        other = draw(scalars(dt))
    else:
        dt2 = dt
        if kind == "float" and draw(st.booleans()):
            dt2 = np_dtype(draw(st.sampled_from(FLOAT_DTYPES)))
            if dt2 == BF16 and dt == np.float16 or dt == BF16 and dt2 == np.float16:
                dt2 = dt
        other = draw(values(dt2, n * m if form == "same" else m))
        other = other.reshape(n, m) if form == "same" else other
    lay = layout_of(draw, mesh, ("i", "j"))
    lay2 = layout_of(draw, mesh, ("i", "j") if form == "same" else ("j",))
    return mesh, a, lay, form, other, lay2


def _operands(mesh, a, lay, form, other, lay2):
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout=lay)
    if form in ("scalar", "rscalar"):
        y, b = other, other
    else:
        dims = ("i", "j") if form == "same" else ("j",)
        y, b = sa.asarray(other, dims=dims, mesh=mesh, layout=lay2), other
    return x, y, a, b


NAMED = {
    "floor_divide": (sa.floor_divide, np.floor_divide),
    "remainder": (sa.remainder, np.remainder),
    "//": (lambda p, q: p // q, np.floor_divide),
    "%": (lambda p, q: p % q, np.remainder),
}


@fuzz(150)
@given(case=division_case(), op=st.sampled_from(sorted(NAMED)))
def test_named_floor_divide_and_remainder_match_numpy(case, op):
    """``sa.floor_divide``/``sa.remainder``/``//``/``%``: NumPy's results (``npy_divmod``) on every backend."""
    x, y, a, b = _operands(*case)
    lib_f, np_f = NAMED[op]
    rev = case[3] == "rscalar"
    if rev:
        got, want = run_both(lambda: lib_f(y, x).numpy(), lambda: np_binary(np_f, b, a))
    else:
        got, want = run_both(lambda: lib_f(x, y).numpy(), lambda: np_binary(np_f, a, b))
    if want is not None:
        if on_real_cupy() and holds_subnormal32(a, np.asarray(b), want):
            return  # (real CuPy flushes float32 subnormals everywhere: test_real_gpu_float32_subnormal_data)
        same(got, want, f"{op} {a.dtype} {b!r} rev={rev}")


def _std_floor_divide(p, q):
    """The array API's floor_divide: NumPy's, except ``floor(x1 / x2)`` where an operand is infinite."""
    r = np.floor_divide(p, q)
    pa, qa = np.asarray(p), np.asarray(q)
    if r.dtype.kind != "f":
        return r
    fix = np.isinf(pa.astype(r.dtype)) | np.isinf(qa.astype(r.dtype))
    return np.where(fix, np.floor(np.true_divide(p, q)), r).astype(r.dtype)


XP_OPS = {
    "floor_divide": (xp.floor_divide, _std_floor_divide),
    "remainder": (xp.remainder, np.remainder),
    "fmod": (xp.fmod, np.fmod),
    "divmod": (xp.divmod, np.divmod),
    "//": (lambda p, q: p // q, _std_floor_divide),
    "%": (lambda p, q: p % q, np.remainder),
}


@fuzz(120)
@given(case=division_case(), op=st.sampled_from(sorted(XP_OPS)))
def test_array_api_division_matches_numpy(case, op):
    """The positional namespace's ``floor_divide`` (the standard's infinities), ``remainder``, ``fmod``, ``divmod``."""
    mesh, a, lay, form, other, lay2 = case
    if form == "bcast" or (form in ("scalar", "rscalar") and isinstance(other, np.generic)):
        form, other = "same", a[::-1].copy()
    if form in ("scalar", "rscalar") and isinstance(other, int) and not -(2**63) <= other < 2**63:
        other = float(other)
    lib_f, np_f = XP_OPS[op]
    with sa.default_mesh(mesh):
        x = xp.asarray(a)
        y = other if form in ("scalar", "rscalar") else xp.asarray(other)
        p, q = (y, x) if form == "rscalar" else (x, y)
        pa, qa = (other, a) if form == "rscalar" else (a, other)
        if isinstance(p, (int, float)) and isinstance(q, (int, float)):
            return

        def lib():
            r = lib_f(p, q)
            return tuple(v.numpy() for v in r) if isinstance(r, tuple) else r.numpy()

        got, want = run_both(lib, lambda: np_binary(np_f, pa, qa, native=op in ("fmod", "divmod")))
    if want is None:
        return
    if on_real_cupy() and holds_subnormal32(np.asarray(pa), np.asarray(qa), want):
        return  # (real CuPy flushes float32 subnormals everywhere: test_real_gpu_float32_subnormal_data)
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        same(g, w, f"xp {op} {a.dtype} {other!r} {form}")


# ============================================================================================ nextafter
@fuzz(100)
@given(data=st.data())
def test_nextafter_matches_numpy(data):
    """``sa.nextafter``: bfloat16 steps as ml_dtypes' ``np.nextafter``, subnormals and signed zeros included."""
    dt = np_dtype(data.draw(st.sampled_from(["bfloat16", "bfloat16", "float32", "float64", "float16"])))
    mesh = mesh_of(data.draw(st.sampled_from(MESHES)))
    n = data.draw(st.integers(0, 7))
    a = data.draw(values(dt, n))
    sub = st.sampled_from([9.2e-41, -9.2e-41, 9.18e-41, 1e-45, 1.2e-38, -1.2e-38, 0.0, -0.0])
    if data.draw(st.booleans()):
        a = _cast(data.draw(st.lists(sub, min_size=n, max_size=n)), dt)
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout=layout_of(data.draw, mesh, ("i",)))
    if data.draw(st.booleans()):
        other = data.draw(st.one_of(sub, st.sampled_from(SPECIAL)))
        got, want = sa.nextafter(x, other).numpy(), np.nextafter(a, np.asarray(other).astype(dt))
    else:
        b = data.draw(values(dt, n))
        y = sa.asarray(b, dims=("i",), mesh=mesh, layout=layout_of(data.draw, mesh, ("i",)))
        got, want = sa.nextafter(x, y).numpy(), np.nextafter(a, b)
    if on_real_cupy() and holds_subnormal32(a, want):
        return  # (real CuPy flushes float32 subnormals everywhere: test_real_gpu_float32_subnormal_data)
    same(got, want, f"nextafter {dt}")


# ============================================================================================ argmax / argmin
ARG_VALUES = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 2.0, 1e-40, -1e-40, 1e-45, 5e-324, 3e38]


@fuzz(150)
@given(data=st.data())
def test_argmax_argmin_match_numpy(data):
    """``sa.argmax``/``argmin`` and ``xp.argmax``/``argmin``: several NaNs, signed zeros, infinities, ties,
    subnormals, along split and unsplit dims, uneven and empty blocks, flattened and with ``keepdims``."""
    dt = np_dtype(data.draw(st.sampled_from(["float64", "float32", "float16", "bfloat16", "int32", "uint8", "bool"])))
    mesh = mesh_of(data.draw(st.sampled_from(MESHES)))
    n, m = data.draw(st.integers(1, 7)), data.draw(st.integers(0, 7))
    if dt.kind == "b":
        a = np.array(data.draw(st.lists(st.booleans(), min_size=n * m, max_size=n * m)), dtype=bool)
    elif dt.kind in "iu":
        a = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n * m, max_size=n * m)), dtype=dt)
    else:
        a = _cast(data.draw(st.lists(st.sampled_from(ARG_VALUES), min_size=n * m, max_size=n * m)), dt)
    a = a.reshape(n, m)
    op = data.draw(st.sampled_from(["argmax", "argmin"]))
    ref = getattr(np, op)
    lay = layout_of(data.draw, mesh, ("i", "j"))
    ref_a = a.astype(np.float32) if dt == BF16 else a  # (the same order; ml_dtypes' argmax too)
    if data.draw(st.booleans()):
        x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout=lay)
        dim = data.draw(st.sampled_from(["i", "j"]))
        axis = ("i", "j").index(dim)
        if a.shape[axis] == 0:
            with pytest.raises(Exception):
                getattr(sa, op)(x, dim)
            return
        same(getattr(sa, op)(x, dim).numpy(), ref(ref_a, axis=axis), f"sa.{op} {dt} dim={dim}")
    else:
        axis = data.draw(st.sampled_from([None, 0, 1, -1]))
        keepdims = data.draw(st.booleans())
        with sa.default_mesh(mesh):
            x = xp.asarray(a)
            if a.size == 0 and (axis is None or a.shape[axis] == 0):
                with pytest.raises(Exception):
                    getattr(xp, op)(x, axis=axis, keepdims=keepdims)
                return
            got = getattr(xp, op)(x, axis=axis, keepdims=keepdims).numpy()
        same(got, ref(ref_a, axis=axis, keepdims=keepdims), f"xp.{op} {dt} axis={axis} keepdims={keepdims}")


# ============================================================================================ unique of complex values
PARTS = [0.0, -0.0, 1.0, -1.0, 2.0, math.inf, -math.inf, math.nan]


@fuzz(100)
@given(data=st.data())
def test_unique_of_complex_values_matches_numpy(data):
    """``sa.unique`` (NumPy's ``equal_nan=True``) and the array API's ``unique_*`` (each NaN distinct) of complex
    values with NaN in either part, signed zeros and infinities: NumPy's order, counts, indices and inverse."""
    dt = np.dtype(data.draw(st.sampled_from(["complex128", "complex64"])))
    mesh = mesh_of(data.draw(st.sampled_from(MESHES)))
    n = data.draw(st.integers(0, 13))
    parts = data.draw(st.lists(st.tuples(st.sampled_from(PARTS), st.sampled_from(PARTS)), min_size=n, max_size=n))
    a = np.array([complex(r, i) for r, i in parts], dtype=dt)
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout=layout_of(data.draw, mesh, ("i",)))
    which = data.draw(st.sampled_from(["unique", "unique_values", "unique_counts", "unique_inverse", "unique_all"]))
    if which == "unique":
        got = sa.unique(x, return_index=True, return_inverse=True, return_counts=True)
        want = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
        names = ("values", "index", "inverse", "counts")
        got = [g.numpy() for g in got]
        for g, w, name in zip(got, want, names):
            if name == "index":  # NumPy's first index of a merged NaN: its least; compare values at them
                same(a[g], a[w], "unique index values")
                continue
            same(g, w, f"unique {name}")
        same(got[0][got[2]], a, "unique values[inverse]")
        return
    got = getattr(sa, which)(x)
    got = [got.numpy()] if which == "unique_values" else [g.numpy() for g in got]
    want = np.unique(a, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    vals, first, inv, counts = want
    same(got[0], vals, f"{which} values")
    if which == "unique_counts":
        same(got[1], counts, "counts")
    if which == "unique_inverse":
        same(got[0][got[1]], a, "values[inverse]")
    if which == "unique_all":
        same(got[0][got[2]], a, "values[inverse]")
        same(got[1], first, "first indices")
        same(got[3], counts, "counts")


# ============================================================================================ linalg.inv
@fuzz(80)
@given(data=st.data())
def test_inv_raises_where_numpy_raises(data):
    """``sa.linalg.inv`` of singular, near-singular and batched matrices: ``LinAlgError`` exactly where NumPy
    raises, else NumPy's inverse (to rounding)."""
    dt = np.dtype(data.draw(st.sampled_from(["float64", "float32", "complex128"])))
    mesh = mesh_of(data.draw(st.sampled_from(MESHES)))
    n, batch = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    kind = data.draw(st.sampled_from(["random", "int", "repeat", "zero_col", "scaled", "near"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(-3, 4, size=(batch, n, n)).astype(dt)
    if kind == "random":
        a = rng.standard_normal((batch, n, n)).astype(dt)
    k = data.draw(st.integers(0, batch - 1))
    if kind == "repeat" and n > 1:
        a[k, -1] = a[k, 0] * data.draw(st.sampled_from([1.0, 2.0, 0.1, -3.0]))
    elif kind == "zero_col":
        a[k, :, data.draw(st.integers(0, n - 1))] = 0
    elif kind == "scaled":
        a[k] *= data.draw(st.sampled_from([1e-300, 1e300, 1e-30, 1e30]))
    elif kind == "near" and n > 1:
        a[k, -1] = a[k, 0] + 1e-12
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=layout_of(data.draw, mesh, ("b",)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = np.linalg.inv(a)
        except np.linalg.LinAlgError:
            with pytest.raises(sa.linalg.LinAlgError):
                sa.linalg.inv(x, dims=("i", "j")).numpy()
            return
        try:
            got = sa.linalg.inv(x, dims=("i", "j")).numpy()
        except sa.linalg.LinAlgError:
            # cuSOLVER's LU pivots in another order than LAPACK's: on a GPU an exactly singular matrix that NumPy
            # inverts through a rounding-size pivot may meet an exact zero pivot instead (det's row of the table
            # "Real CuPy is not NumPy"); a well-conditioned matrix must still invert
            if on_real_cupy() and kind != "random":
                return
            raise
    assert got.dtype == want.dtype
    ok = np.isfinite(want).all(axis=(-2, -1))
    cond = np.array([np.linalg.cond(m) if np.isfinite(m).all() else np.inf for m in a])
    good = ok & (cond < 1e6)
    tol = 1e-3 if dt == np.float32 else 1e-9
    np.testing.assert_allclose(got[good], want[good], rtol=tol, atol=tol * np.abs(want[good]).max(initial=0))


# ============================================================================================ clip_by_global_norm
def _scaled(a, factor):
    """NumPy's ``a * factor`` (float32 at least), but in float64 where ``factor`` is not a normal number of that
    type (``_times``' documented rule: a float32 kernel on CuPy reads a subnormal factor as 0)."""
    real = np.float32 if a.dtype.itemsize < 4 else a.real.dtype.type
    info = np.finfo(real)
    w = real if factor == 0 or info.tiny <= abs(factor) <= info.max else np.float64
    if a.dtype.kind == "c":
        w = np.complex64 if w == np.float32 else np.complex128
    with np.errstate(over="ignore"):
        return (a.astype(w) * w(factor)).astype(a.dtype)


@fuzz(100)
@given(data=st.data())
def test_clip_by_global_norm_matches_numpy(data):
    """``clip_by_global_norm`` near float32's largest value (a factor subnormal in float32) and with tiny
    factors: each leaf is ``g * (max_norm / norm)`` rounded once to its dtype, as NumPy computes it in float64."""
    mesh = mesh_of(data.draw(st.sampled_from(MESHES)))
    leaves = {}
    for k in range(data.draw(st.integers(1, 3))):
        dt = np.dtype(data.draw(st.sampled_from(["float32", "float64", "float16", "complex64"])))
        n = data.draw(st.integers(0, 7))
        big = {"float16": 6e4, "float32": 3.4e38, "float64": 1e300, "complex64": 3.4e38}[dt.name]
        vals = data.draw(st.lists(st.one_of(st.sampled_from([big, -big, big / 3, 1.0, 0.0, -0.0, 1e-3]),
                                            st.floats(-big, big)), min_size=n, max_size=n))
        a = np.array(vals, dtype=np.float64).astype(dt)
        if dt.kind == "c":
            a = a + 1j * a[::-1].astype(np.float32)
        mesh_l = layout_of(data.draw, mesh, ("i",))
        leaves[f"g{k}"] = (a, sa.asarray(a, dims=("i",), mesh=mesh, layout=mesh_l))
    max_norm = data.draw(st.sampled_from([0.0, 1e-30, 1e-6, 1.0, 5.0, 1e30]))
    out, norm = sa.optim.clip_by_global_norm({k: v[1] for k, v in leaves.items()}, max_norm, return_norm=True)
    wide = [np.abs(a.astype(np.complex128)).astype(np.float64) for a, _ in leaves.values()]
    top = max((w.max(initial=0.0) for w in wide), default=0.0)
    ref_norm = top * math.sqrt(sum(float(np.sum((w / top) ** 2)) for w in wide)) if top else 0.0
    assert math.isclose(norm, ref_norm, rel_tol=1e-12, abs_tol=0.0), (norm, ref_norm)
    for k, (a, _) in leaves.items():
        got = out[k].numpy()
        if math.isfinite(norm) and norm > max_norm:
            want = _scaled(a, max_norm / norm)
        else:
            want = a
        if on_real_cupy() and holds_subnormal32(a, want):
            continue  # (real CuPy flushes float32 subnormals everywhere: test_real_gpu_float32_subnormal_data)
        same(got, want, f"clip {a.dtype} max_norm={max_norm} norm={norm}")


# ============================================================================================ huge Python ints
@fuzz(100)
@given(data=st.data())
def test_python_ints_beyond_int64_beside_float_arrays(data):
    """A Python int outside int64/uint64 beside a float (or complex) array is a weak float, as in NumPy (``2**70``
    is ``inf`` beside float16); beyond a double NumPy raises and the library too."""
    dt = np_dtype(data.draw(st.sampled_from(["float16", "float32", "float64", "complex64", "complex128", "bfloat16"])))
    mesh = mesh_of(data.draw(st.sampled_from(MESHES)))
    n = data.draw(st.integers(0, 7))
    a = _cast(data.draw(st.lists(st.sampled_from([1.0, -2.0, 0.5, 0.0, -0.0, 3e38, 1e-3]), min_size=n,
                                 max_size=n)), dt)
    big = data.draw(st.one_of(st.integers(2**64, 2**1030), st.integers(-(2**1030), -(2**63) - 1),
                              st.sampled_from([2**64, -(2**63) - 1, 2**128, 2**1024, -(2**1024), 10**400])))
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout=layout_of(data.draw, mesh, ("i",)))
    ops = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide}
    if dt.kind != "c":
        ops.update({"//": np.floor_divide, "%": np.remainder})
    name = data.draw(st.sampled_from(sorted(ops)))
    rev = data.draw(st.booleans())
    import operator as o

    py = {"+": o.add, "-": o.sub, "*": o.mul, "/": o.truediv, "//": o.floordiv, "%": o.mod}[name]
    if rev:
        got, want = run_both(lambda: py(big, x).numpy(), lambda: np_binary(ops[name], big, a))
    else:
        got, want = run_both(lambda: py(x, big).numpy(), lambda: np_binary(ops[name], a, big))
    if want is not None:
        same(got, want, f"{name} {dt} {big} rev={rev}")


# ============================================================================================ found, outside the scope
@pytest.mark.parametrize("case", ["inf_divisor", "inf_dividend_bf16"])
def test_xp_divmod_quotient_of_infinities_and_bfloat16(case):
    """``np.divmod(-1.0, inf)`` is ``(-1.0, inf)`` and ``np.divmod(inf, 1)`` of bfloat16 ``(nan, nan)``: the quotient
    is NumPy's ``floor_divide`` (it took the standard's, -0.0 for the first; NaN now for the second on both
    backends)."""
    with sa.default_mesh(mesh_of({"row": 2, "col": 2})):
        if case == "inf_divisor":
            q, _ = xp.divmod(xp.asarray(np.array([-1.0, 1.0])), math.inf)
            same(q.numpy(), np.array([-1.0, 0.0]))
        else:
            a = np.array([math.inf, 1.0], dtype=BF16)
            q, _ = xp.divmod(xp.asarray(a), 1.0)
            with np.errstate(invalid="ignore"):
                same(q.numpy(), np.divmod(a, 1.0)[0])  # (NumPy's loop: float32 for bfloat16 beside a Python float)


# ============================================================================================ regressions
@pytest.mark.parametrize(("dtype", "a", "b"), [
    ("float32", 1e-40, 1.0),  # 1e-40 % 1 is 1e-40 (CuPy: a float32 ``mod != 0`` reads the subnormal as 0 -> 0.0)
    ("float32", 1.0, 1e-38),  # 1 % 1e-38 is 8.9e-39 (0.0 before)
    ("float32", -1e-40, 1.0),  # -1e-40 % 1 is 1.0 and -1e-40 // 1 is -1 (0.0 and -0.0 before)
    ("bfloat16", 1e-40, 2.0),  # bfloat16 runs in float32: 9.2e-41 % 2 is 9.2e-41 (0.0 before)
])
def test_subnormal_remainders_and_quotients_are_numpys(dtype, a, b):
    """The zero and sign tests of ``_fmod_parts``, ``_remainder_device``, ``_floor_divide_device`` are on bit
    patterns: under ``-ftz=true`` a float32 comparison reads a subnormal remainder as zero."""
    if on_real_cupy():
        pytest.skip("real CuPy flushes float32 subnormals in its arithmetic too (test_real_gpu_float32_subnormal_data)")
    dt = np_dtype(dtype)
    mesh = mesh_of({"all": 4})
    v = _cast([a, 0.5, -0.0, 3.0, a], dt)
    x = sa.asarray(v, dims=("i",), mesh=mesh, layout={"i": "all"})
    same((x % b).numpy(), np_binary(np.remainder, v, b), "remainder")
    same((x // b).numpy(), np_binary(np.floor_divide, v, b), "floor_divide")
    same(sa.remainder(b, x).numpy(), np_binary(np.remainder, b, v), "remainder reversed")


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason="real CuPy (H200, CuPy 14.2) flushes float32 subnormals in arithmetic, casts "
                   "and reductions, which tests/support/strict_cupy.py does not model: fmod(1e-40, 1) is 0, "
                   "argmax([1e-45, 2e-45]) 0")
@pytest.mark.parametrize("case", ["remainder", "floor_divide", "argmax"])
def test_real_gpu_float32_subnormal_data(case):
    """On a real GPU: float32 subnormal data in ``%``/``//`` and ``argmax`` (NumPy keeps subnormals)."""
    mesh = mesh_of({"all": 2})
    v = np.array([1e-40, -1e-40, 3e-39, 2e-45], dtype=np.float32)
    x = sa.asarray(v, dims=("i",), mesh=mesh, layout={"i": "all"})
    if case == "remainder":
        same((x % 1.0).numpy(), np.remainder(v, np.float32(1.0)))
    elif case == "floor_divide":
        same((1.0 // x).numpy(), np.floor_divide(np.float32(1.0), v))
    else:
        same(sa.argmax(x, "i").numpy(), np.argmax(v))


def test_global_norm_of_a_complex64_leaf_near_its_largest_value():
    """``|3.4e38+3.4e38j|`` overflows complex64's abs; the norm's rescue pass takes the largest magnitude in float64
    (the norm was inf beside a float64 leaf of 1e300, and the grads came back unclipped)."""
    mesh = mesh_of({"row": 2, "col": 2})
    g = {"a": sa.asarray(np.array([1e300]), dims=("i",), mesh=mesh),
         "b": sa.asarray(np.array([3.4e38 + 3.4e38j], dtype=np.complex64), dims=("j",), mesh=mesh, layout={"j": "row"})}
    out, norm = sa.optim.clip_by_global_norm(g, 1.0, return_norm=True)
    assert norm == 1e300
    same(out["a"].numpy(), np.array([1.0]))


def test_zero_d_floor_divide_and_remainder_stay_0d():
    """The bit-pattern tests of ``_fmod_parts`` kept a 0-d block 0-d: CuPy's ``ascontiguousarray`` makes it 1-d
    (the stand-in models it), which broke ``x // 2.0`` of a 0-d float32 array on CuPy shards."""
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.asarray(np.float32(7.5))
        for got, want in ((x // 2.0, np.float32(7.5) // 2.0), (x % 2.0, np.float32(7.5) % 2.0), (x % x, np.float32(0))):
            assert got.shape == () and got.dtype == np.float32, (got.shape, got.dtype)
            assert float(got) == float(want)
