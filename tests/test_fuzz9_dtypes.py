"""A differential fuzz, against NumPy, of the elementwise functions and operators over the dtype matrix: bool, the
eight integer dtypes, float16, bfloat16, float32, float64, complex64 and complex128, pairs of them, Python scalars
(bool, int, float, complex; out-of-range ints such as 300 beside uint8, where NumPy 2 raises ``OverflowError``),
NumPy scalars (``np.float32(1)``, NEP 50: not weak) and 0-d NumPy arrays, on random meshes (1, 2x2, 4, 2x2x2, 3x2)
and layouts with uneven and empty blocks, NaN/inf/-0.0 and the integer extremes (wrapping as NumPy wraps).

Each case checks the dtype, and the values bit for bit (the sign of zero and NaN included) where NumPy's are exact,
within a few ulps for transcendental functions; where NumPy raises, a typed ``sa`` error that is an instance of what
NumPy raises (``TypeError`` for its ``UFuncTypeError``/``DTypePromotionError``). The documented departures:

* the standard's special values: ``floor_divide`` with an infinite operand (``_ew_special``), complex ``expm1`` and
  ``tanh`` of non-finite values;
* the documented domains (``dtypes.py``): float-only functions refuse integer and bool arrays, ordering functions
  complex ones, ``floor_divide``/``remainder``/shifts bool ones, ``matmul`` bool ones (``DTypeError``);
* bfloat16 promotes as ``dtypes.promote`` documents (bfloat16 with float16 or int16/uint16 is float32, with a
  32/64-bit integer float64, as float32 would); a weak Python scalar keeps bfloat16 (JAX's and the standard's rule,
  where ml_dtypes' NumPy gives float32), and bfloat16 math runs in float32, rounded once;
* ``x ** s`` and ``xp.pow(x, s)`` with a Python scalar exponent follow NumPy's ``**`` operator on every backend
  (``x ** 0.5`` is ``sqrt``, NaN at ``-inf``; ``z ** -1`` of a complex ``z`` its reciprocal, 0 at infinity), except
  a bool base to an int power: int64 for every exponent (NumPy's ``bool_array ** 2`` is ``square``, int8); an array
  or NumPy scalar exponent follows ``power``'s values (``(-inf) ** 0.5`` inf), which NumPy's own loop gives only
  where the exponent's stride is not 0;
* in-place operators follow the standard: one whose result dtype differs from the left operand's raises
  (``DTypeError``, a ``TypeError`` as NumPy's ``UFuncTypeError``) and leaves it unchanged, even where NumPy's
  ``same_kind`` casting writes (``int8 += int16``), and so does a NumPy scalar out of the left operand's range.

``FUZZ9_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
Regressions of the bugs it found close the file.
"""

from __future__ import annotations

import math
import operator
import warnings

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import backend_name, holds_subnormal32, layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.dtypes import _in_domain, promote

# ruff: noqa: B023 (the lambdas given check() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = tuple(
    np.dtype(d)
    for d in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", BF16, "float32", "float64", "complex64", "complex128",
    )
)  # fmt: skip
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
ENV = "FUZZ9_EXAMPLES"

# name: (NumPy's function, the domain of the array operands (dtypes.check_domain), exact)
BINARY = {
    "add": (np.add, None, True),
    "subtract": (np.subtract, None, True),
    "multiply": (np.multiply, None, True),
    "divide": (np.divide, None, True),
    "pow": (np.power, None, False),
    "floor_divide": (np.floor_divide, "real_numeric", True),
    "remainder": (np.remainder, "real_numeric", True),
    "maximum": (np.maximum, "real", True),
    "minimum": (np.minimum, "real", True),
    "equal": (np.equal, None, True),
    "not_equal": (np.not_equal, None, True),
    "less": (np.less, "real", True),
    "less_equal": (np.less_equal, "real", True),
    "greater": (np.greater, "real", True),
    "greater_equal": (np.greater_equal, "real", True),
    "bitwise_and": (np.bitwise_and, "integer_or_bool", True),
    "bitwise_or": (np.bitwise_or, "integer_or_bool", True),
    "bitwise_xor": (np.bitwise_xor, "integer_or_bool", True),
    "bitwise_left_shift": (np.left_shift, "integer", True),
    "bitwise_right_shift": (np.right_shift, "integer", True),
    "atan2": (np.arctan2, "real_float", False),
    "hypot": (np.hypot, "real_float", False),
    "copysign": (np.copysign, "real_float", True),
    "logaddexp": (np.logaddexp, "real_float", False),
    "nextafter": (np.nextafter, "real_float", True),
    "logical_and": (np.logical_and, None, True),
    "logical_or": (np.logical_or, None, True),
    "logical_xor": (np.logical_xor, None, True),
}
OPERATORS = {
    "+": (operator.add, operator.iadd, "add"),
    "-": (operator.sub, operator.isub, "subtract"),
    "*": (operator.mul, operator.imul, "multiply"),
    "/": (operator.truediv, operator.itruediv, "divide"),
    "//": (operator.floordiv, operator.ifloordiv, "floor_divide"),
    "%": (operator.mod, operator.imod, "remainder"),
    "**": (operator.pow, operator.ipow, "pow"),
    "&": (operator.and_, operator.iand, "bitwise_and"),
    "|": (operator.or_, operator.ior, "bitwise_or"),
    "^": (operator.xor, operator.ixor, "bitwise_xor"),
    "<<": (operator.lshift, operator.ilshift, "bitwise_left_shift"),
    ">>": (operator.rshift, operator.irshift, "bitwise_right_shift"),
    "==": (operator.eq, None, "equal"),
    "<": (operator.lt, None, "less"),
    ">=": (operator.ge, None, "greater_equal"),
}
# name: (NumPy's function, domain, exact)
_FLOAT = "inexact"
UNARY = {
    "abs": (np.abs, None, True),
    "negative": (np.negative, "numeric", True),
    "positive": (np.positive, "numeric", True),
    "square": (np.square, "numeric", True),
    "sign": (np.sign, "numeric", True),
    "round": (np.round, "numeric", True),
    "ceil": (np.ceil, "real_numeric", True),
    "floor": (np.floor, "real_numeric", True),
    "trunc": (np.trunc, "real_numeric", True),
    "signbit": (np.signbit, "real_float", True),
    "isfinite": (np.isfinite, None, True),
    "isinf": (np.isinf, None, True),
    "isnan": (np.isnan, None, True),
    "bitwise_invert": (np.invert, "integer_or_bool", True),
    "logical_not": (np.logical_not, None, True),
    "real": (np.real, None, True),
    "imag": (np.imag, None, True),
    "reciprocal": (np.reciprocal, _FLOAT, True),
    "sqrt": (np.sqrt, _FLOAT, False),
    "exp": (np.exp, _FLOAT, False),
    "expm1": (np.expm1, _FLOAT, False),
    "log": (np.log, _FLOAT, False),
    "log1p": (np.log1p, _FLOAT, False),
    "log2": (np.log2, _FLOAT, False),
    "log10": (np.log10, _FLOAT, False),
    "sin": (np.sin, _FLOAT, False),
    "cos": (np.cos, _FLOAT, False),
    "tan": (np.tan, _FLOAT, False),
    "asin": (np.arcsin, _FLOAT, False),
    "acos": (np.arccos, _FLOAT, False),
    "atan": (np.arctan, _FLOAT, False),
    "sinh": (np.sinh, _FLOAT, False),
    "cosh": (np.cosh, _FLOAT, False),
    "tanh": (np.tanh, _FLOAT, False),
    "asinh": (np.arcsinh, _FLOAT, False),
    "acosh": (np.arccosh, _FLOAT, False),
    "atanh": (np.arctanh, _FLOAT, False),
}
#: signbit is the standard's for real floats; NumPy also takes integers (all False): the domain above is the
#: library's documented one
PY_SCALARS = (True, False, 0, 1, -1, 2, 3, 7, 64, 127, 128, 255, 256, 300, -129, -300, 2**31, 2**32, 2**63 - 1,
              2**63, -(2**63), 2**64, -(2**63) - 1, 0.0, -0.0, 0.5, -1.5, 2.0, 1e300, math.inf, -math.inf, math.nan,
              1j, 1 + 2j, complex(-0.0, 0.0), complex(math.inf, 1))  # fmt: skip
NP_SCALARS = (np.float32(1.5), np.float64(-2.5), np.float16(0.5), np.int8(3), np.int16(-2), np.uint8(200),
              np.int64(-1), np.uint64(5), np.bool_(True), np.complex64(1j), ml_dtypes.bfloat16(1.5))  # fmt: skip


# --------------------------------------------------------------------------------------------- data


def _values(rng: np.random.Generator, shape: tuple, dtype: np.dtype, special: bool) -> np.ndarray:
    n = math.prod(shape)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(max(info.min, -9), 10, n).astype(dtype)
        if special and n:
            hit = rng.random(n) < 0.3
            ends = np.array([info.min, info.max, info.min + 1, info.max - 1, 0, 1], dtype=dtype)
            v[hit] = rng.choice(ends, int(hit.sum()))
        return v.reshape(shape)
    if dtype.kind == "c":
        part = np.float32 if dtype.itemsize == 8 else np.float64
        out = np.empty(shape, dtype)
        out.real = _values(rng, shape, np.dtype(part), special)
        out.imag = _values(rng, shape, np.dtype(part), special)
        return out
    v = rng.integers(-6, 7, n) / rng.choice([1, 2, 4], n)
    noisy = rng.random(n) < 0.4
    v[noisy] = rng.normal(size=int(noisy.sum())) * 4
    if special and n:
        hit = rng.random(n) < 0.3
        v[hit] = rng.choice(SPECIAL, int(hit.sum()))
    out = v.astype(dtype).reshape(shape)
    if backend_name() == "cupy" and holds_subnormal32(out):  # (real CuPy flushes them: documented)
        out[np.abs(out.astype(np.float64)) < float(np.finfo(np.float32).tiny)] = 0
    return out


@st.composite
def host(draw, dtype: np.dtype, shape: tuple) -> np.ndarray:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _values(rng, shape, dtype, draw(st.booleans()))


@st.composite
def shape_pairs(draw):
    """Two shapes that broadcast: ``b`` a suffix of ``a`` with some sides 1 (either may be 0-d)."""
    nd = draw(st.integers(0, 3))
    a = tuple(draw(st.sampled_from([0, 1, 2, 3, 5, 7])) for _ in range(nd))
    k = draw(st.integers(0, nd))
    b = tuple(1 if draw(st.integers(0, 3)) == 0 else s for s in a[nd - k :])
    return (a, b) if draw(st.booleans()) else (b, a)


@st.composite
def placed(draw, a: np.ndarray, mesh) -> xp.Array:
    """``a`` as a positional array on ``mesh`` with a random layout (uneven and empty blocks)."""
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


# --------------------------------------------------------------------------------------------- references


def _weak(v) -> bool:
    return isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic)


def _dtype_of(v):
    return v.dtype if hasattr(v, "dtype") else None


def _result_dtype(a, b) -> np.dtype | None:
    """The documented result dtype where bfloat16 takes part (``promote``; a weak Python scalar keeps the array's
    dtype, a complex one makes complex64), else None (NumPy's own)."""
    dts = [_dtype_of(v) for v in (a, b)]
    if BF16 not in dts:
        return None
    weak = [v for v in (a, b) if _weak(v)]
    if weak:
        return np.dtype(np.complex64) if isinstance(weak[0], complex) else BF16
    return promote(*dts)


def _f32(v):
    """A bfloat16 operand as float32 (NumPy's reference computes bfloat16 math in float32, as the library does)."""
    if isinstance(v, np.ndarray) and v.dtype == BF16:
        return v.astype(np.float32)
    if isinstance(v, np.generic) and v.dtype == BF16:
        return np.float32(v)
    return v


def _floor_divide_std(a, b):
    """NumPy's floor_divide with the standard's values where an operand is infinite: ``floor(a / b)``."""
    q = np.asarray(np.floor_divide(a, b))
    if q.dtype.kind != "f" and q.dtype != BF16:
        return q
    fa, fb = np.asarray(a, dtype=q.dtype), np.asarray(b, dtype=q.dtype)
    fix = np.isinf(fa) | np.isinf(fb)
    return np.where(fix, np.floor(np.divide(fa, fb)), q).astype(q.dtype)


def _power_elementwise(a, b):
    """``np.power`` of ``a`` and ``b`` (not Python scalars) laid out with non-zero strides: NumPy's float32/float64
    loop takes ``sqrt``'s values (``(-inf) ** 0.5`` NaN) for an exponent of stride 0, C's ``pow`` (inf) else."""
    a_, b_ = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    flat = np.power(a_.reshape(-1).copy(), b_.reshape(-1).copy())
    return flat.reshape(a_.shape)


def reference(name: str, a, b, op=None, std: bool = True):
    """NumPy's result of binary ``name`` (``op``: an operator function instead of the ufunc), with the library's
    documented departures (see the module docstring; ``std``: the standard's floor_divide, the positional one)."""
    if name == "floor_divide" and std:
        fn = _floor_divide_std
    elif name == "pow" and type(b) is int and getattr(a, "dtype", None) == np.bool_:
        fn = np.power  # (NumPy's bool_array ** 2 is square, int8: the library gives power's int64, as ** 1 and ** 3)
    elif name == "pow" and (_weak(a) or _weak(b)):
        fn = operator.pow  # (a Python scalar: NumPy's ** operator)
    elif name == "pow":
        fn = _power_elementwise  # (an array or NumPy scalar exponent: power's values, whatever the layout)
    else:
        fn = op or BINARY[name][0]
    target = _result_dtype(a, b)
    if target is None:
        return np.asarray(fn(a, b))
    if name == "nextafter" and target == BF16:  # (ml_dtypes steps in bfloat16 itself)
        return np.asarray(np.nextafter(np.asarray(a, BF16), np.asarray(b, BF16)))
    r = np.asarray(fn(_f32(a), _f32(b)))
    return r.astype(target) if r.dtype != target and r.dtype.kind in "fc" else r


# --------------------------------------------------------------------------------------------- checks


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "fcV":
        return a.view(np.uint8).reshape(*a.shape, a.dtype.itemsize) if a.ndim else a.view(np.uint8)
    return a


def _close(g: np.ndarray, e: np.ndarray, dtype: np.dtype) -> None:
    """Within a few ulps of ``dtype`` (relative, NaN where NaN, infinities equal)."""
    eps = 2.0**-7 if dtype == BF16 else float(np.finfo(dtype).eps)
    tiny = 1e-30 if dtype.itemsize > 2 else 1e-4
    if e.dtype.kind == "c":  # (relative to the magnitude: a part much smaller than it carries its error)
        g128, e128 = g.astype(np.complex128), e.astype(np.complex128)
        fine = np.isfinite(e128)
        assert np.array_equal(np.isfinite(g128), fine), (g, e)
        err = np.abs(g128[fine] - e128[fine])
        assert np.all(err <= 8 * eps * np.maximum(np.abs(e128[fine]), tiny)), (g, e)
        return
    g64, e64 = g.astype(np.float64), e.astype(np.float64)
    bad = ~(
        (np.isnan(g64) & np.isnan(e64)) | (g64 == e64) | (np.abs(g64 - e64) <= 8 * eps * np.maximum(np.abs(e64), tiny))
    )
    assert not bad.any(), (g[bad], e[bad])


def same(got, expected: np.ndarray, exact: bool) -> None:
    assert isinstance(got, sa.ShardArray), type(got)
    g = got.numpy()
    assert g.shape == expected.shape, (g.shape, expected.shape)
    assert g.dtype == expected.dtype, (g.dtype, expected.dtype)
    if expected.dtype.kind in "fcV" and exact:
        assert np.array_equal(_bits(g), _bits(expected)) or _nan_equal(g, expected), (g, expected)
    elif expected.dtype.kind in "fcV":
        part = expected.real.dtype if expected.dtype.kind == "c" else expected.dtype
        _close(g, expected, part)
    else:
        np.testing.assert_array_equal(g, expected)


def _nan_equal(g: np.ndarray, e: np.ndarray) -> bool:
    """Equal with the sign of zero, any NaN payload equal to any other NaN."""
    if e.dtype.kind == "c":
        return _nan_equal(g.real.copy(), e.real.copy()) and _nan_equal(g.imag.copy(), e.imag.copy())
    g64, e64 = g.astype(np.float64), e.astype(np.float64)
    nan = np.isnan(g64) & np.isnan(e64)
    return bool(np.all(nan | ((g64 == e64) & (np.signbit(g64) == np.signbit(e64)))))


def _outside(domain: str | None, *operands) -> bool:
    """Whether an array (or NumPy scalar) operand, or the promotion with a weak scalar, leaves ``domain``."""
    if domain is None:
        return False
    dts = [_dtype_of(v) for v in operands if _dtype_of(v) is not None]
    if any(not _in_domain(d, domain) for d in dts):
        return True
    try:
        return not _in_domain(promote(*dts), domain) or any(
            not _in_domain(np.result_type(*dts, v), domain) for v in operands if _weak(v)
        )
    except (TypeError, ValueError):
        return False


def check(np_call, xp_call, exact: bool, refusable: bool = False, lenient: bool = False, compare=None):
    """``xp_call()`` against ``np_call()``: a typed ``sa`` error that is an instance of NumPy's exception's base
    where NumPy raises, else ``same`` (or ``compare``); ``refusable``: a documented ``DTypeError``; ``lenient``: a
    documented disagreement on whether to raise (any result where NumPy raises, a typed error where it does not)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = np_call()
    except Exception as e:  # (any NumPy error: the library must raise a typed one of its kind)
        try:
            got = xp_call()
        except sa.ShardArrayError as ours:
            base = TypeError if isinstance(e, TypeError) else ValueError if isinstance(e, ValueError) else type(e)
            assert isinstance(ours, base) or (isinstance(ours, sa.DTypeError) and refusable), (e, ours)
            return
        if lenient:
            return
        raise AssertionError(f"NumPy raised {type(e).__name__}: {e}; the library gave {got!r:.300}") from None
    try:
        got = xp_call()
    except sa.ShardArrayError as ours:
        if (refusable and isinstance(ours, sa.DTypeError)) or lenient:
            return
        raise
    (compare or (lambda g, e: same(g, e, exact)))(got, np.asarray(expected))


def _stand_in_pow(name: str, a, b, exact: bool):
    """On the CuPy stand-in, whose ``power`` is NumPy's loop, a compare that takes ``sqrt``'s values (NaN, -0.0)
    for ``power``'s (inf, 0.0) where an array or NumPy scalar exponent is 0.5 and the base ``-inf`` or ``-0.0``
    (NumPy's loop gives them for an exponent of stride 0; CUDA's ``pow`` and the library on NumPy shards do not);
    None elsewhere."""
    if name != "pow" or backend_name() != "cupy" or _weak(a) or _weak(b):
        return None

    def compare(got, expected):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = np.asarray(a).real.astype(np.float64)
            exponent = np.asarray(b).real.astype(np.float64)
        base, exponent = np.broadcast_arrays(base, exponent)
        odd = (exponent == 0.5) & (np.isneginf(base) | ((base == 0) & np.signbit(base)))
        g = got.numpy()
        if odd.any() and expected.dtype.kind == "f":
            g = g.copy()
            g[odd] = expected[odd]
        same(xp.asarray(g, device=got.mesh), expected, exact)

    return compare


def _stand_in_bigint(a, s) -> bool:
    """On CuPy shards a Python int beyond int64 and uint64 is refused (``CastError``: CuPy packs it into a
    ``CScalar``) beside an integer or bool array even where NumPy 2 compares with it (``int8_x < 2**64``)."""
    return backend_name() == "cupy" and type(s) is int and not -(2**63) <= s < 2**64 and a.dtype.kind in "biu"


def _numpy_leaves_bf16(a, b) -> bool:
    """NumPy (ml_dtypes) refuses a Python int beyond int64 beside bfloat16, which the library takes as float16 is
    taken (a float, inf where beyond)."""
    return any(_dtype_of(v) == BF16 for v in (a, b)) and any(type(v) is int and abs(v) >= 2**63 for v in (a, b))


# ============================================================================================= arrays with arrays


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_binary_dtype_pairs(data):
    mesh = data.draw(meshes())
    name = data.draw(st.sampled_from(sorted(BINARY)))
    da, db = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    sa_, sb = data.draw(shape_pairs())
    a, b = data.draw(host(da, sa_)), data.draw(host(db, sb))
    x, y = data.draw(placed(a, mesh)), data.draw(placed(b, mesh))
    _, domain, exact = BINARY[name]
    check(
        lambda: reference(name, a, b),
        lambda: getattr(xp, name)(x, y),
        exact,
        refusable=_outside(domain, a, b),
        compare=_stand_in_pow(name, a, b, exact),
    )


@pytest.mark.parametrize("name", ["add", "divide", "floor_divide", "pow", "bitwise_or", "less"])
def test_promotion_matrix(name):
    """Every pair of the 15 dtypes, and every dtype with every scalar of ``PY_SCALARS``/``NP_SCALARS`` on either
    side, once (a 2x2 mesh, split blocks): NumPy's (or the documented) dtype, values and errors."""
    mesh = _mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(9)
    fn = getattr(xp, name)
    _, domain, exact = BINARY[name]
    host_of = {d: _values(rng, (2, 3), d, True) for d in DTYPES}
    for da in DTYPES:
        a = host_of[da]
        x = xp.asarray(a, device=mesh)
        for db in DTYPES:
            b = host_of[db][0]
            y = xp.asarray(b, device=mesh)
            check(
                lambda: reference(name, a, b),
                lambda: fn(x, y),
                exact,
                refusable=_outside(domain, a, b),
                compare=_stand_in_pow(name, a, b, exact),
            )
        for s in PY_SCALARS + NP_SCALARS:
            for args, xargs in (((a, s), (x, s)), ((s, a), (s, x))):
                check(
                    lambda: reference(name, *args),
                    lambda: fn(*xargs),
                    exact,
                    refusable=_outside(domain, a, s),
                    lenient=_numpy_leaves_bf16(a, s) or _stand_in_bigint(a, s),
                    compare=_stand_in_pow(name, *args, exact),
                )


# ============================================================================================= arrays with scalars


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_binary_scalars(data):
    """Python scalars (weak), NumPy scalars (NEP 50: strong) and 0-d NumPy arrays, in either position."""
    mesh = data.draw(meshes())
    name = data.draw(st.sampled_from(sorted(BINARY)))
    da = data.draw(st.sampled_from(DTYPES))
    a = data.draw(host(da, data.draw(st.sampled_from([(), (5,), (3, 4), (0, 2)]))))
    x = data.draw(placed(a, mesh))
    s = data.draw(st.sampled_from(PY_SCALARS + NP_SCALARS))
    left = data.draw(st.booleans())
    _, domain, exact = BINARY[name]
    fn = getattr(xp, name)
    args, xargs = ((s, a), (s, x)) if left else ((a, s), (x, s))
    lenient = _numpy_leaves_bf16(a, s) or name.startswith("logical")  # (the logical functions take a scalar's truth)
    lenient = lenient or _stand_in_bigint(a, s)
    compare = _stand_in_pow(name, *args, exact)
    check(lambda: reference(name, *args), lambda: fn(*xargs), exact, _outside(domain, a, s), lenient, compare)


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_operators(data):
    """The operators with arrays, Python and NumPy scalars and 0-d NumPy arrays on either side."""
    mesh = data.draw(meshes())
    sym = data.draw(st.sampled_from(sorted(OPERATORS)))
    fn, _, name = OPERATORS[sym]
    da = data.draw(st.sampled_from(DTYPES))
    a = data.draw(host(da, data.draw(st.sampled_from([(), (5,), (3, 4), (2, 0)]))))
    x = data.draw(placed(a, mesh))
    kind = data.draw(st.sampled_from(["py", "np", "0d", "array"]))
    if kind == "py":
        s = xs = data.draw(st.sampled_from(PY_SCALARS))
    elif kind == "np":
        s = xs = data.draw(st.sampled_from(NP_SCALARS))
    else:
        db = data.draw(st.sampled_from(DTYPES))
        s = data.draw(host(db, () if kind == "0d" else a.shape[1:]))
        xs = s if kind == "0d" else data.draw(placed(s, mesh))
    left = data.draw(st.booleans())
    args, xargs = ((s, a), (xs, x)) if left else ((a, s), (x, xs))
    _, domain, exact = BINARY[name]
    lenient = _numpy_leaves_bf16(a, s) or _stand_in_bigint(a, s)
    # (a NumPy complex scalar beside // or %: Python's own TypeError once both sides return NotImplemented)
    untyped = kind == "np" and isinstance(s, np.complexfloating) and sym in ("//", "%")
    if untyped:
        with pytest.raises(TypeError):
            fn(*xargs)
        return
    compare = _stand_in_pow(name, *args, exact)
    check(lambda: reference(name, *args, op=fn), lambda: fn(*xargs), exact, _outside(domain, a, s), lenient, compare)


# ============================================================================================= in place


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_inplace_operators(data):
    """``x op= y``: NumPy's value where the result keeps ``x``'s dtype; else a typed error and ``x`` unchanged."""
    mesh = data.draw(meshes())
    sym = data.draw(st.sampled_from([k for k, v in OPERATORS.items() if v[1] is not None]))
    fn, ifn, name = OPERATORS[sym]
    da = data.draw(st.sampled_from(DTYPES))
    a = data.draw(host(da, data.draw(st.sampled_from([(5,), (3, 4), (2, 0)]))))
    x = data.draw(placed(a, mesh))
    kind = data.draw(st.sampled_from(["py", "np", "array"]))
    if kind == "py":
        s = xs = data.draw(st.sampled_from(PY_SCALARS))
    elif kind == "np":
        s = xs = data.draw(st.sampled_from(NP_SCALARS))
    else:
        s = data.draw(host(data.draw(st.sampled_from(DTYPES)), a.shape[1:]))
        xs = data.draw(placed(s, mesh))
    _, domain, exact = BINARY[name]
    r = s  # (a NumPy scalar whose result with x casts back to x's dtype under same_kind acts as a Python scalar:
    # NumPy's in-place rule, computed in x's dtype (positional_ufuncs.scalar_operand))
    if kind == "np":
        try:
            if np.can_cast(np.result_type(a.dtype, s.dtype), a.dtype, "same_kind"):
                r = s.item()
        except TypeError:  # (no NumPy rule, bfloat16 with float16: whether the scalar itself casts under same_kind)
            r = s.item() if np.can_cast(s.dtype, a.dtype, "same_kind") else s
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = reference(name, a, r, op=fn)
        keeps = expected.dtype == a.dtype and expected.shape == a.shape
    except Exception:  # (NumPy refuses the operands: the in-place operator must too)
        keeps, expected = False, None
    y = x
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = ifn(y, xs)
    except sa.ShardArrayError as e:
        assert not keeps or _outside(domain, a, s) or (kind == "np" and isinstance(e, sa.CastError)), e
        assert isinstance(e, (TypeError, ValueError))
        assert np.array_equal(_bits(x.numpy()), _bits(a)), "a refused in-place operator changed its left operand"
        return
    assert keeps or _numpy_leaves_bf16(a, s), f"{a.dtype} {sym}= {s!r:.60}: NumPy gives {expected!r:.200}"
    assert y is x
    if expected is not None:
        same(x, expected, exact)


# ============================================================================================= unary


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_unary(data):
    mesh = data.draw(meshes())
    name = data.draw(st.sampled_from(sorted(UNARY)))
    dt = data.draw(st.sampled_from(DTYPES))
    a = data.draw(host(dt, data.draw(st.sampled_from([(), (6,), (3, 5), (0, 3), (2, 2, 3)]))))
    x = data.draw(placed(a, mesh))
    fn, domain, exact = UNARY[name]
    if dt.kind == "c" and name in ("expm1", "tanh"):  # (the standard's values at non-finite parts)
        a = np.where(np.isfinite(a), a, 0).astype(dt)
        x = data.draw(placed(a, mesh))
    if name == "conj" or (name in ("real", "imag") and dt.kind == "b"):
        return

    def ref():
        if dt == BF16:
            r = np.asarray(fn(a.astype(np.float32)))
            return r.astype(BF16) if r.dtype == np.float32 else r
        return np.asarray(fn(a))

    check(ref, lambda: getattr(xp, name)(x), exact, refusable=_outside(domain, a))


# ============================================================================================= clip, where, matmul


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_clip_where_matmul(data):
    mesh = data.draw(meshes())
    da = data.draw(st.sampled_from(DTYPES))
    a = data.draw(host(da, (3, 4)))
    x = data.draw(placed(a, mesh))
    which = data.draw(st.sampled_from(["clip", "where", "matmul"]))
    if which == "clip":
        lo = data.draw(st.sampled_from([None, -1, 0, 2, -1.5, 0.5]))
        hi = data.draw(st.sampled_from([None, 3, 100, 2.5]))
        if da.kind in "iu" and (isinstance(lo, float) or isinstance(hi, float)):
            lo = None if lo is None else math.ceil(lo)  # (float bounds of an integer array round inward: documented)
            hi = None if hi is None else math.floor(hi)
        if da.kind in "cb":
            return
        ref = np.clip(_f32(a), lo, hi)
        ref = np.asarray(ref).astype(da)
        check(lambda: ref, lambda: xp.clip(x, lo, hi), False)  # (NumPy's sign of a zero at a 0 bound varies)
        return
    db = data.draw(st.sampled_from(DTYPES))
    if which == "where":
        b = data.draw(host(db, (4,)))
        y = data.draw(placed(b, mesh))
        c = data.draw(host(np.dtype(bool), (3, 1)))
        z = data.draw(placed(c, mesh))
        check(lambda: reference("where", a, b, op=lambda p, q: np.where(c, p, q)), lambda: xp.where(z, x, y), True)
        return
    b = data.draw(host(db, (4, 2)))
    y = data.draw(placed(b, mesh))
    fin = [np.where(np.isfinite(v), v, 1).astype(v.dtype) if v.dtype.kind in "fcV" else v for v in (a, b)]
    x, y = data.draw(placed(fin[0], mesh)), data.draw(placed(fin[1], mesh))
    scale = np.abs(fin[0].astype(np.complex128)) @ np.abs(fin[1].astype(np.complex128))

    def compare(got, expected):  # (within a few ulps of the sum of the magnitudes of the products)
        g = got.numpy()
        assert g.shape == expected.shape and g.dtype == expected.dtype, (g.dtype, expected.dtype)
        if expected.dtype.kind in "iub":
            np.testing.assert_array_equal(g, expected)
            return
        part = expected.real.dtype if expected.dtype.kind == "c" else expected.dtype
        eps = 2.0**-7 if part == BF16 else float(np.finfo(part).eps)
        err = np.abs(g.astype(np.complex128) - expected.astype(np.complex128))
        assert np.all(err <= 8 * eps * scale + 1e-30), (g, expected)

    bools = a.dtype == bool or b.dtype == bool
    check(lambda: reference("matmul", *fin, op=np.matmul), lambda: x @ y, False, bools, compare=compare)


# ============================================================================================= named arrays


NAMED = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "equal", "less", "bitwise_and", "hypot",
         "copysign", "logaddexp", "nextafter", "atan2", "floor_divide", "remainder")  # fmt: skip


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_named_counterparts(data):
    """``sa.X`` (the operators for add ... divide) of named arrays broadcasting by name (``b``'s dims a subset of
    ``a``'s)."""
    mesh = data.draw(meshes())
    name = data.draw(st.sampled_from(NAMED))
    da, db = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    a, b = data.draw(host(da, (3, 5))), data.draw(host(db, (5,)))
    lay = data.draw(layouts(mesh, ("i", "j")))
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout=lay)
    y = sa.asarray(b, dims=("j",), mesh=mesh, layout={k: v for k, v in lay.items() if k == "j"})
    fn = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv}.get(
        name, getattr(sa, name, None)
    )
    _, domain, exact = BINARY[name]
    if name == "floor_divide":  # (the named op follows NumPy: no standard inf values there)
        ref = lambda: reference(name, a, b, std=False)  # noqa: E731
    else:
        ref = lambda: reference(name, a, b)  # noqa: E731
    check(ref, lambda: fn(x, y), exact, refusable=_outside(domain, a, b))


# ============================================================================================= regressions


def test_nextafter_bfloat16_beside_a_numpy_float32_scalar_steps_in_float32():
    """``nextafter(bf16_x, np.float32(s))`` is float32 (NEP 50) and stepped by a float32 ulp; it stepped by a bfloat16
    one (``9.2e-41`` after 0, ``1.4921875`` before 1.5) in a float32 result."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.array([1.5, -0.0, 0.0, 2.0, -3.5], BF16)
    x = xp.asarray(a, device=mesh)
    for s in (np.float32(1.0), np.float16(0.5)):
        got = xp.nextafter(x, s)
        expected = np.nextafter(a.astype(np.float32), np.float32(s))
        assert got.dtype == np.float32
        assert np.array_equal(_bits(got.numpy()), _bits(expected)), (got.numpy(), expected)
    same(xp.nextafter(x, np.int8(3)), np.nextafter(a, np.asarray(3, BF16)), True)  # (int8 keeps bfloat16)


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint16", "uint64"])
def test_bitwise_of_an_int_array_and_a_bfloat16_scalar_is_a_typed_error(dtype):
    """NumPy has no promotion for bfloat16 with int16+; the bitwise ops raised NumPy's own ``TypeError`` from the
    block instead of the ``DTypeError`` a float scalar gets."""
    x = xp.asarray(np.arange(4, dtype=dtype), device=_mesh({"row": 2, "col": 2}))
    for op in (xp.bitwise_and, xp.bitwise_or, xp.bitwise_left_shift, lambda p, q: p ^ q):
        with pytest.raises(sa.DTypeError):
            op(x, ml_dtypes.bfloat16(1.5))


def test_clip_of_an_integer_array_with_bounds_beyond_its_range_or_of_another_kind():
    """``xp.clip(uint8_x, -1, 300)`` raised ``CastError`` (NumPy 2 gives ``x``); float bounds truncated the clipped
    values (``clip(0, 0.5)`` gave 0, below ``min``) and NaN gave garbage (int64 minimum)."""
    mesh = _mesh({"all": 4})
    a = np.array([0, 1, 2, 200, 5, 3, 255], np.uint8)
    x = xp.asarray(a, device=mesh)
    same(xp.clip(x, -1, 300), np.clip(a, -1, 300), True)
    same(xp.clip(x, -(2**70), 2**70), a, True)
    same(xp.clip(x, 0.5, 2.5), np.clip(a, 1, 2), True)
    same(xp.clip(x, -math.inf, math.inf), a, True)
    same(xp.clip(x, np.float32(1.5), None), np.clip(a, 2, None), True)
    same(xp.clip(x, np.int64(-1), np.int64(300)), a, True)
    for lo, hi in ((300, None), (None, -1), (math.nan, None), (math.inf, None), (None, -math.inf)):
        with pytest.raises(sa.CastError):
            xp.clip(x, lo, hi)
    i = xp.asarray(np.array([-100, 1, 100], np.int64), device=mesh)
    same(xp.clip(i, -0.5, 50.5), np.array([0, 1, 50]), True)


def test_named_clip_of_an_integer_array_with_python_int_bounds_beyond_its_range():
    """``sa.clip`` (NumPy's promotion) raised ``CastError`` for ``clip(uint8_x, -1, 300)``, which NumPy 2 gives as
    ``x``; a bound beyond the range on the side it bounds still raises (NumPy: ``OverflowError``)."""
    a = np.array([[0, 1, 200], [5, 255, 3]], np.uint8)
    x = sa.asarray(a, dims=("i", "j"), mesh=_mesh({"row": 2, "col": 2}), layout={"i": "row", "j": "col"})
    for lo, hi in ((-1, 300), (-1, None), (None, 2**70), (-(2**70), 7)):
        same(sa.clip(x, lo, hi), np.clip(a, None, hi if hi is None or hi < 256 else None), True)
    for lo, hi in ((300, None), (None, -1)):
        with pytest.raises(sa.CastError):
            sa.clip(x, lo, hi)


def test_pow_of_a_bool_array_to_an_int_power_is_int64_for_every_exponent():
    """``bool_x ** 2`` was int8 on NumPy shards (NumPy's ``**`` takes it as ``square``) but int64 on CuPy ones and
    for every other exponent (``** 1``, ``** 3``: NEP 50's int64, as ``np.power``)."""
    b = np.array([True, False, True])
    x = xp.asarray(b, device=_mesh({"all": 4}))
    for e in (0, 1, 2, 3):
        same(x**e, np.power(b, e), True)
        same(xp.pow(x, e), np.power(b, e), True)
    same(x**True, b**True, True)  # (a bool exponent: NumPy's bool loop, int8)


def test_pow_of_a_complex_array_by_the_fast_exponents_is_numpys_operator_on_every_backend():
    """``z ** -1``, ``z ** 0.5`` and ``z ** 2`` are NumPy's ``reciprocal``, ``sqrt`` and ``square`` (its ``**``); on
    CuPy shards they were ``power`` (``(inf + 0j) ** -1`` NaN instead of 0, ``(-0j) ** 2`` of another zero sign)."""
    z = np.array([np.inf + 0j, complex(0, -0.0), complex(-0.0, 0), 1 + 2j, complex(-np.inf, 1)], np.complex128)
    x = xp.asarray(z, device=_mesh({"row": 2, "col": 2}))
    for e in (-1, 0.5, 2, 2.0, -1.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = z**e
        got = (x**e).numpy()
        assert got.dtype == expected.dtype
        assert _nan_equal(got, expected), (e, got, expected)


def test_pow_of_a_numpy_bool_scalar_to_negative_integers_is_a_typed_error():
    """``xp.pow(np.True_, int_x)`` with a negative exponent raised NumPy's bare ``ValueError`` (``np.bool_`` is no
    ``numbers.Integral``, so the integer-power check let it through), where a Python ``True`` gets ``ArgumentError``."""
    x = xp.asarray(np.array([1, -2, 3], np.int8), device=_mesh({"all": 4}))
    for base in (np.True_, True, np.int8(2)):
        with pytest.raises(sa.ArgumentError, match="negative integer powers"):
            xp.pow(base, x)


@pytest.mark.numpy_only(reason="NumPy's float loop is the subject (the CuPy stand-in's power is that loop too)")
def test_pow_by_an_array_exponent_of_one_half_does_not_depend_on_the_layout():
    """``x ** y`` with ``y`` 0.5 at ``x = -inf`` or ``-0.0`` gave ``sqrt``'s NaN and -0.0 on the devices whose block
    is one element wide (NumPy's float loop for an exponent of stride 0) and ``power``'s inf and 0.0 elsewhere."""
    a = np.array([[-np.inf, -0.0, 4.0, -np.inf], [-0.0, 9.0, -np.inf, -4.0]])
    y = np.full(4, 0.5)
    expected = np.array([[np.inf, 0.0, 2.0, np.inf], [0.0, 3.0, np.inf, np.nan]])
    for shape, lay in (({"all": 4}, {"dim1": ("all",)}), ({"d": 1}, {}), ({"row": 2, "col": 2}, {"dim1": ("col",)})):
        mesh = _mesh(shape)
        x = as_kind(sa.asarray(a, dims=("dim0", "dim1"), mesh=mesh, layout=lay), xp.Array)
        w = as_kind(sa.asarray(y, dims=("dim1",), mesh=mesh, layout=lay), xp.Array)
        same(x**w, expected, True)
        same(xp.pow(x, np.float64(0.5)), expected, True)  # (a NumPy scalar exponent: power's values too)
    same(xp.pow(x, 0.5), np.sqrt(a), True)  # (a Python float: NumPy's ** operator, sqrt)


def test_cupy_paths_of_scalars_beside_integer_arrays():
    """On CuPy shards: ``int8_x // bfloat16(1.5)`` was float32 (bfloat16 on NumPy shards: the NumPy scalar's
    promotion); ``int8_x / 2**64`` raised ``CastError`` (NumPy: float64); ``bf16_x + 2**63`` raised ml_dtypes'
    ``TypeError``; ``np.uint64(5) ** int8_x`` (float64) and ``int8_x ** -300`` (out of int8: ``OverflowError``)
    raised the negative-integer-power ``ArgumentError``. The same on NumPy shards."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.array([3, -2, 5, 0, -7], np.int8)
    x = xp.asarray(a, device=mesh)
    same(xp.floor_divide(x, ml_dtypes.bfloat16(1.5)), np.floor_divide(a, np.asarray(1.5, BF16)), True)
    same(x / 2**64, a / 2**64, True)
    same(xp.pow(np.uint64(5), x), np.power(np.uint64(5), a), False)
    with pytest.raises(sa.CastError):
        xp.pow(x, -300)
    h = np.array([1.5, -2.0, 0.0], BF16)
    same(xp.add(xp.asarray(h, device=mesh), 2**63), (h.astype(np.float32) + np.float32(2**63)).astype(BF16), True)
