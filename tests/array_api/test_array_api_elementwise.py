"""The array API namespace's elementwise functions and operators (issue 14) against NumPy on split meshes."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from helpers import backend_name

import shardarray as sa
import shardarray.array_api as xp
from shardarray.errors import DimensionError, DTypeError

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}]
SHAPES = [(5, 3), (0, 4), (), (7,), (3, 1, 5)]  # uneven, empty, 0-d, 1-d, 3-d


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request):
    return sa.Mesh(request.param)


def same(got, want):
    """Equal shapes, dtypes, values and signs of zeros (NaN equal to NaN)."""
    got = np.asarray(got.numpy())
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind in "fc":
        keep = ~np.isnan(want.real)  # the sign of a NaN is not specified
        np.testing.assert_array_equal(np.signbit(got.real)[keep], np.signbit(want.real)[keep])


def same_libm(got, want, maxulp=4):
    """``same``; on CuPy shards finite nonzero parts within ``maxulp`` ulps of NumPy's: CUDA's libm differs from
    NumPy's by an ulp or two (within 2 of the exact value for atan2, hypot, tanh, sin, cos; complex functions
    combine a few, e.g. ``expm1(1+1j)``'s real part was 1 ulp off on an H200). NaN, infinities and signed zeros
    still exact."""
    if backend_name() != "cupy":
        return same(got, want)
    got, want = np.asarray(got.numpy()), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    for g, w in ((got.real, want.real), (got.imag, want.imag)) if want.dtype.kind == "c" else ((got, want),):
        exact = ~np.isfinite(w) | (w == 0)
        np.testing.assert_array_equal(g[exact], w[exact])
        keep = exact & ~np.isnan(w)
        np.testing.assert_array_equal(np.signbit(g[keep]), np.signbit(w[keep]))
        np.testing.assert_array_max_ulp(g[~exact], w[~exact], maxulp=maxulp)


def close(got, want):
    got = np.asarray(got.numpy())
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype in (np.float32, np.complex64) else 1e-12,
                               atol=1e-12, equal_nan=True)


def values(shape, dtype, seed=0, low=-3.0, high=3.0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else int(low)
        return rng.integers(lo, int(high) + 1, size=shape).astype(dt)
    v = rng.uniform(low, high, size=shape)
    if dt.kind == "c":
        v = v + 1j * rng.uniform(low, high, size=shape)
    return v.astype(dt)


ALL = [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_left_shift",
    "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos",
    "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag",
    "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "nextafter",
    "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin", "sinh",
    "square", "sqrt", "subtract", "tan", "tanh", "trunc", "where",
]


def test_every_function_has_the_standards_positional_signature():
    for name in ALL:
        params = list(inspect.signature(getattr(xp, name)).parameters.values())
        positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_ONLY]
        if name == "clip":
            assert [p.name for p in params] == ["x", "min", "max"] and len(positional) == 1
        elif name == "where":
            assert [p.name for p in positional] == ["condition", "x1", "x2"]
        else:
            assert positional == params and [p.name for p in params] in (["x"], ["x1", "x2"]), name


# ------------------------------------------------------------------ unary
UNARY = {  # name: (NumPy function, dtypes, low, high)
    "abs": (np.abs, ("int8", "float32", "complex128"), -3, 3),
    "acos": (np.arccos, ("float64",), -1, 1), "acosh": (np.arccosh, ("float64",), 1, 4),
    "asin": (np.arcsin, ("float32",), -1, 1), "asinh": (np.arcsinh, ("float64",), -3, 3),
    "atan": (np.arctan, ("float64",), -3, 3), "atanh": (np.arctanh, ("float64",), -0.9, 0.9),
    "bitwise_invert": (np.invert, ("int16", "uint8", "bool"), 0, 9), "ceil": (np.ceil, ("float64", "int32"), -3, 3),
    "conj": (np.conj, ("complex64", "float64"), -3, 3), "cos": (np.cos, ("float64", "complex128"), -3, 3),
    "cosh": (np.cosh, ("float64",), -3, 3), "exp": (np.exp, ("float32", "complex128"), -3, 3),
    "expm1": (np.expm1, ("float64", "complex128"), -3, 3), "floor": (np.floor, ("float64", "uint16"), -3, 3),
    "imag": (np.imag, ("complex128",), -3, 3), "isfinite": (np.isfinite, ("float64", "int8"), -3, 3),
    "isinf": (np.isinf, ("float64",), -3, 3), "isnan": (np.isnan, ("complex64",), -3, 3),
    "log": (np.log, ("float64",), 0.1, 4), "log1p": (np.log1p, ("float64",), -0.9, 3),
    "log2": (np.log2, ("float32",), 0.1, 4), "log10": (np.log10, ("float64",), 0.1, 4),
    "logical_not": (np.logical_not, ("bool",), 0, 1), "negative": (np.negative, ("int64", "float32"), -3, 3),
    "positive": (np.positive, ("int8", "float64"), -3, 3), "real": (np.real, ("complex64",), -3, 3),
    "reciprocal": (np.reciprocal, ("float64",), 0.5, 3), "round": (np.round, ("float64", "int16", "complex128"), -3, 3),
    "sign": (np.sign, ("float64", "int8", "complex128"), -3, 3), "signbit": (np.signbit, ("float64",), -3, 3),
    "sin": (np.sin, ("float64",), -3, 3), "sinh": (np.sinh, ("float64",), -3, 3),
    "square": (np.square, ("int32", "float64", "complex64"), -3, 3), "sqrt": (np.sqrt, ("float64",), 0, 4),
    "tan": (np.tan, ("float64",), -1, 1), "tanh": (np.tanh, ("float64", "complex128"), -3, 3),
    "trunc": (np.trunc, ("float64", "int8"), -3, 3),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_numpy(name, mesh):
    fn, dtypes, low, high = UNARY[name]
    for k, (shape, dtype) in enumerate((s, d) for s in SHAPES[:3] for d in dtypes):
        v = values(shape, dtype, k, low, high)
        x = xp.asarray(v, device=mesh)
        out = getattr(xp, name)(x)
        assert isinstance(out, xp.Array) and out.mesh == mesh
        close(out, np.asarray(fn(v)))


def test_unary_refuses_non_arrays_and_dtypes_outside_the_domain(mesh):
    with pytest.raises(DTypeError, match="x must be an array"):
        xp.exp([1.0, 2.0])
    with pytest.raises(DTypeError, match="exp"):
        xp.exp(xp.asarray([1, 2], device=mesh))
    with pytest.raises(DTypeError, match="bitwise_invert"):
        xp.bitwise_invert(xp.asarray([1.0], device=mesh))
    # (the logical functions take numbers as their truth, as NumPy: tests/array_api/test_fuzz6_clients.py)
    assert not bool(xp.logical_not(xp.asarray([1.0], device=mesh))[0])


# ------------------------------------------------------------------ binary
BINARY = {  # name: (NumPy function, dtypes of x1 and x2, low, high)
    "add": (np.add, ("int8", "uint8"), -3, 3), "subtract": (np.subtract, ("float32", "float64"), -3, 3),
    "multiply": (np.multiply, ("complex64", "float32"), -3, 3), "divide": (np.divide, ("float64", "float64"), 1, 3),
    "pow": (np.power, ("float32", "float32"), 0.5, 2), "equal": (np.equal, ("int16", "int16"), -2, 2),
    "not_equal": (np.not_equal, ("bool", "bool"), 0, 1), "less": (np.less, ("uint8", "int32"), 0, 3),
    "less_equal": (np.less_equal, ("float64", "float32"), -3, 3), "greater": (np.greater, ("int8", "int8"), -3, 3),
    "greater_equal": (np.greater_equal, ("float32", "float32"), -3, 3),
    "maximum": (np.maximum, ("int32", "int64"), -3, 3), "minimum": (np.minimum, ("float64", "float64"), -3, 3),
    "floor_divide": (np.floor_divide, ("int64", "int64"), 1, 5), "remainder": (np.remainder, ("float64",) * 2, 1, 5),
    "atan2": (np.arctan2, ("float64",) * 2, -3, 3), "copysign": (np.copysign, ("float32",) * 2, -3, 3),
    "hypot": (np.hypot, ("float64",) * 2, -3, 3), "logaddexp": (np.logaddexp, ("float64",) * 2, -3, 3),
    "nextafter": (np.nextafter, ("float64",) * 2, -3, 3),
    "bitwise_and": (np.bitwise_and, ("int16", "int16"), -9, 9), "bitwise_or": (np.bitwise_or, ("uint8",) * 2, 0, 9),
    "bitwise_xor": (np.bitwise_xor, ("bool",) * 2, 0, 1),
    "bitwise_left_shift": (np.left_shift, ("int32",) * 2, 0, 5),
    "bitwise_right_shift": (np.right_shift, ("int64",) * 2, 0, 5),
    "logical_and": (np.logical_and, ("bool",) * 2, 0, 1), "logical_or": (np.logical_or, ("bool",) * 2, 0, 1),
    "logical_xor": (np.logical_xor, ("bool",) * 2, 0, 1),
}
PAIRS = [((5, 3), (5, 3)), ((5, 1, 3), (4, 1)), ((3,), (2, 4, 3)), ((), (6, 2)), ((0, 3), (1, 3)), ((1,), ())]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasts_and_promotes_as_numpy(name, mesh):
    fn, (d1, d2), low, high = BINARY[name]
    for k, (s1, s2) in enumerate(PAIRS):
        v1, v2 = values(s1, d1, k, low, high), values(s2, d2, k + 7, low, high)
        out = getattr(xp, name)(xp.asarray(v1, device=mesh), xp.asarray(v2, device=mesh))
        assert out.dims == tuple(f"dim{i}" for i in range(out.ndim)) or out.ndim < max(len(s1), len(s2))
        close(out, np.asarray(fn(v1, v2)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bool"])
def test_python_scalars_in_either_position_take_the_arrays_dtype(dtype, mesh):
    v = values((4, 3), dtype, 1, 1, 4)
    x = xp.asarray(v, device=mesh)
    kind = np.dtype(dtype).kind
    scalars = [True] if kind == "b" else [2, 3.5] if kind == "f" else [2]
    names = {"b": ["logical_and", "logical_or", "equal", "bitwise_xor"],
             "f": ["add", "subtract", "multiply", "divide", "pow", "atan2", "maximum", "less", "copysign", "hypot"],
             "i": ["add", "multiply", "floor_divide", "remainder", "bitwise_and", "bitwise_left_shift", "greater"],
             "u": ["add", "subtract", "multiply", "floor_divide", "bitwise_or", "minimum", "not_equal"]}[kind]
    for name in names:
        fn = BINARY[name][0]
        for s in scalars:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want1, want2 = np.asarray(fn(v, s)), np.asarray(fn(s, v))
            close(getattr(xp, name)(x, s), want1)
            close(getattr(xp, name)(s, x), want2)
            assert getattr(xp, name)(x, s).dtype in (np.dtype(dtype), np.dtype(bool))


def test_binary_errors_name_the_shapes(mesh):
    a, b = xp.asarray(np.ones((4, 3)), device=mesh), xp.asarray(np.ones((2,)), device=mesh)
    with pytest.raises(DimensionError, match=r"\(4, 3\) and \(2,\)"):
        xp.add(a, b)
    with pytest.raises(DimensionError, match=r"\(4, 3\) and \(2,\)"):
        a * b
    with pytest.raises(DTypeError, match="at least one of x1, x2"):
        xp.add(1, 2)
    with pytest.raises(DTypeError, match="xp.asarray"):
        xp.add(a, np.ones(3))


def test_named_arrays_are_taken_positionally(mesh):
    """A ShardArray of the named API with other dim names broadcasts by position, not by name."""
    v, w = values((4, 3), "float64", 1), values((3,), "float64", 2)
    x = sa.asarray(v, dims=("batch", "hidden"), mesh=mesh)
    y = sa.asarray(w, dims=("batch",), mesh=mesh)  # same name, other position: still axis -1
    out = xp.multiply(x, y)
    assert out.dims == ("batch", "hidden")
    same(out, v * w)
    same(xp.where(y > 0, x, -1.0), np.where(w > 0, v, -1.0))


# ------------------------------------------------------------------ where, clip
def test_where_broadcasts_three_ways_with_scalars(mesh):
    c = values((4, 1, 3), "bool", 1)
    v1, v2 = values((5, 1), "int8", 2), values((3,), "uint8", 3)
    cond = xp.asarray(c, device=mesh)
    same(xp.where(cond, xp.asarray(v1, device=mesh), xp.asarray(v2, device=mesh)), np.where(c, v1, v2))
    same(xp.where(cond, 7, xp.asarray(v2, device=mesh)), np.where(c, np.uint8(7), v2))
    same(xp.where(cond, xp.asarray(v1.astype("float32"), device=mesh), 0.5), np.where(c, v1.astype("float32"),
                                                                                       np.float32(0.5)))
    with pytest.raises(DTypeError, match="bool"):
        xp.where(xp.asarray(v1, device=mesh), 1, 2)


def test_clip_keeps_the_dtype_and_broadcasts_bounds(mesh):
    v = values((5, 3), "float32", 1)
    lo, hi = values((3,), "float32", 2, -3, -1), values((4, 1, 1), "float32", 3, 1, 3)
    x = xp.asarray(v, device=mesh)
    same(xp.clip(x, xp.asarray(lo, device=mesh), xp.asarray(hi, device=mesh)), np.clip(v, lo, hi))
    same(xp.clip(x, min=-1), np.clip(v, np.float32(-1), None))
    same(xp.clip(x, max=1.5), np.clip(v, None, np.float32(1.5)))
    assert xp.clip(x).numpy().tolist() == v.tolist()
    i = values((6,), "int8", 4)
    same(xp.clip(xp.asarray(i, device=mesh), -1, 2), np.clip(i, -1, 2))


# ------------------------------------------------------------------ operators
OPS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "pow", "//": "floor_divide",
       "%": "remainder", "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor", "<<": "bitwise_left_shift",
       ">>": "bitwise_right_shift", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
       "==": "equal", "!=": "not_equal"}


@pytest.mark.parametrize("op", list(OPS))
def test_operators_equal_the_functions_with_arrays_and_reflected_scalars(op, mesh):
    dtype = "int32" if OPS[op].startswith("bitwise") else "float64"
    v1, v2 = values((5, 3), dtype, 1, 1, 4), values((3,), dtype, 2, 1, 4)
    a, b = xp.asarray(v1, device=mesh), xp.asarray(v2, device=mesh)
    fn = getattr(xp, OPS[op])
    same(eval(f"a {op} b"), fn(a, b).numpy())
    same(eval(f"a {op} 2"), fn(a, 2).numpy())
    same(eval(f"2 {op} a"), fn(2, a).numpy())
    if op not in ("<", "<=", ">", ">=", "==", "!="):
        ns = {"c": xp.asarray(v1, device=mesh), "b": b}
        before, head = ns["c"], ns["c"][:1]
        exec(f"c {op}= b", ns)  # noqa: S102 - the in-place statement itself is under test
        same(ns["c"], fn(a, b).numpy())
        assert ns["c"] is before  # written in place, as NumPy does: every name bound to it sees the result
        assert head.numpy().tolist() == v1[:1].tolist()  # a slice taken before keeps its value


def test_unary_operators(mesh):
    v = values((4, 3), "int16", 1)
    a = xp.asarray(v, device=mesh)
    same(-a, -v)
    same(+a, +v)
    same(abs(a), np.abs(v))
    same(~a, ~v)


def test_inplace_operators_keep_shape_and_dtype(mesh):
    a = xp.asarray(values((4, 3), "int8", 1), device=mesh)
    with pytest.raises(DimensionError, match=r"shape \(4, 3\) to \(2, 4, 3\)"):
        a += xp.asarray(values((2, 4, 3), "int8", 2), device=mesh)
    with pytest.raises(DTypeError, match="int8 to float64"):  # (another kind: NumPy's same_kind refuses it too)
        a *= 1.5
    a += 1
    assert a.dtype == np.int8 and a.shape == (4, 3)
    # a dtype of the same kind is cast back, as NumPy's in-place operators do (int8 wraps as NumPy's)
    n = values((4, 3), "int8", 1) + np.int8(1)
    n += values((3,), "int16", 2) * np.int16(100)
    a += xp.asarray(values((3,), "int16", 2), device=mesh) * 100
    assert a.dtype == np.int8
    np.testing.assert_array_equal(a.numpy(), n)
    f = xp.asarray(values((4, 3), "float32", 3), device=mesh)
    g = values((4, 3), "float32", 3)
    f /= xp.asarray(values((4, 3), "float64", 4), device=mesh)
    g /= values((4, 3), "float64", 4)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.numpy(), g)


# ------------------------------------------------------------------ special values
def test_special_values_follow_the_standard(mesh):
    inf, nan = np.inf, np.nan
    x1 = xp.asarray([inf, -inf, inf, 1.0, -1.0, 1.0, -0.0, 7.0, -7.0], device=mesh)
    x2 = xp.asarray([2.0, 2.0, -inf, -inf, inf, inf, -inf, 2.0, 2.0], device=mesh)
    same(xp.floor_divide(x1, x2), np.array([inf, -inf, nan, -0.0, -0.0, 0.0, 0.0, 3.0, -4.0]))
    same(x1 // x2, xp.floor_divide(x1, x2).numpy())
    z = np.array([complex(inf, 0), complex(-inf, inf), complex(nan, 0), complex(-0.0, 0.0), 1 + 1j])
    with np.errstate(all="ignore"):
        want = np.exp(z[:4]) - 1
    same_libm(xp.expm1(xp.asarray(z, device=mesh)), np.concatenate([want, np.expm1(z[4:])]))
    t = np.array([complex(inf, 2.0), complex(-inf, 2.0), complex(inf, -1.0), 0.5 + 0.5j])
    same_libm(xp.tanh(xp.asarray(t, device=mesh)), np.array([1 + 0j, -1 + 0j, complex(1, -0.0), np.tanh(t[3])]))
    with np.errstate(all="ignore"):
        s = np.array([nan, inf, -inf, 0.0, -0.0, 1.0])
        for name, fn in (("divide", np.divide), ("pow", np.power), ("remainder", np.remainder),
                         ("maximum", np.maximum), ("atan2", np.arctan2), ("hypot", np.hypot)):
            got, want = getattr(xp, name)(xp.asarray(s[:, None], device=mesh), xp.asarray(s, device=mesh)), fn(s[:, None], s)
            if name == "maximum":  # the standard leaves the sign of the maximum of -0 and +0 to the library
                np.testing.assert_array_equal(got.numpy(), want)  # (NumPy gives -0.0 for (0.0, -0.0), CuPy 0.0)
                mixed = (s[:, None] == 0) & (s == 0) & (np.signbit(s[:, None]) != np.signbit(s))
                keep = ~np.isnan(want) & ~mixed
                np.testing.assert_array_equal(np.signbit(got.numpy())[keep], np.signbit(want)[keep])
                continue
            (same_libm if name in ("atan2", "hypot") else same)(got, want)
