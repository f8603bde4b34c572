"""The breadth of elementwise math and reductions (issue 14) against NumPy on random meshes, layouts and sizes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from gradcheck import check_grad
from helpers import backend_name, layouts, meshes, on_real_cupy, rand, sizes_strategy

FEW = settings(max_examples=6, deadline=None)


@st.composite
def arrays(draw, dims=("a", "b"), min_size=0, max_size=6, dtype=np.float64, low=-3.0, high=3.0):
    """A random array (uneven and empty sizes, random layout) on a random mesh, with its NumPy value."""
    mesh = draw(meshes())
    shape = draw(sizes_strategy(dims, min_size, max_size))
    seed = draw(st.integers(0, 1000))
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "b":
        value = rng.random(shape) < 0.5
    elif np.dtype(dtype).kind in "iu":
        value = rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    else:
        value = rng.uniform(low, high, size=shape).astype(dtype)
    x = sa.asarray(value, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims)))
    return x, value


def same(got, want):
    """Equal values, dtypes and signs of zeros (nan equal to nan)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


#: ops computed by the platform's libm: CUDA's double-precision sin, atan, atan2, hypot, tanh are within 2 ulps of
#: the exact value (CUDA C Programming Guide, "Mathematical Functions"), expm1 and log1p within 1; NumPy's within 1
LIBM = {"sin", "atan", "atan2", "hypot", "tanh", "expm1", "log1p", "logaddexp"}


def same_libm(got, want, maxulp=3):
    """``same``; on CuPy shards finite nonzero values within ``maxulp`` ulps of NumPy's (CUDA's libm differs from
    NumPy's by an ulp or two: ``sin(2.5)``, ``atan2(1e-300, -5e-324)``, ``hypot(1e-300, 1e-300)`` on an H200),
    NaN, infinities and signed zeros still exact."""
    if backend_name() != "cupy":
        return same(got, want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    exact = ~np.isfinite(want) | (want == 0)
    same(got[exact], want[exact])
    np.testing.assert_array_max_ulp(got[~exact], want[~exact], maxulp=maxulp)


def close(got, want, rtol=1e-12):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12, equal_nan=True)


# ------------------------------------------------------------------ unary
UNARY = {  # name: (NumPy function, low, high)
    "sign": (np.sign, -3, 3), "floor": (np.floor, -3, 3), "ceil": (np.ceil, -3, 3), "trunc": (np.trunc, -3, 3),
    "round": (np.round, -3, 3), "square": (np.square, -3, 3), "reciprocal": (np.reciprocal, 0.5, 3),
    "sin": (np.sin, -3, 3), "cos": (np.cos, -3, 3), "tan": (np.tan, -1.5, 1.5), "asin": (np.arcsin, -0.99, 0.99),
    "acos": (np.arccos, -0.99, 0.99), "atan": (np.arctan, -3, 3), "sinh": (np.sinh, -3, 3),
    "cosh": (np.cosh, -3, 3), "asinh": (np.arcsinh, -3, 3), "acosh": (np.arccosh, 1.01, 4),
    "atanh": (np.arctanh, -0.99, 0.99), "expm1": (np.expm1, -3, 3), "log1p": (np.log1p, -0.99, 3),
    "log2": (np.log2, 0.1, 4), "log10": (np.log10, 0.1, 4), "isnan": (np.isnan, -3, 3),
    "isinf": (np.isinf, -3, 3), "isfinite": (np.isfinite, -3, 3), "signbit": (np.signbit, -3, 3),
}


@pytest.mark.parametrize("name", list(UNARY))
@given(data=st.data())
@FEW
def test_unary_matches_numpy(name, data):
    fn, low, high = UNARY[name]
    x, value = data.draw(arrays(low=low, high=high))
    if name in ("round", "floor", "ceil"):  # halves and integers: ties and exact values
        value = np.round(value * 2) / 2
        x = sa.asarray(value, dims=x.dims, mesh=x.mesh, layout=x.layout)
    y = getattr(sa, name)(x)
    assert y.dims == x.dims and y.layout == x.layout
    close(y.numpy(), fn(value))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_rounding_and_square_keep_integer_dtypes(dtype):
    mesh = sa.Mesh({"row": 2, "col": 2})
    v = np.array([[-3, 2, 0], [5, -1, 7]], dtype=dtype)
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"b": "col"})
    for name in ("sign", "floor", "ceil", "trunc", "round", "square"):
        same(getattr(sa, name)(x).numpy(), getattr(np, name)(v))
    y = sa.positive(x)
    assert y is not x and y.shards == x.shards  # a new array on the same blocks: a later write leaves it alone
    assert abs(x).numpy().tolist() == np.abs(v).tolist()


def test_special_values_of_unary_ops():
    mesh = sa.Mesh({"all": 4})
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 1e300, -1e-300])
    x = sa.asarray(v, dims=("a",), mesh=mesh, layout={"a": "all"})
    with np.errstate(all="ignore"):
        for name in ("sign", "round", "floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "signbit", "expm1",
                     "log1p", "sin", "tanh", "atan"):
            check = same_libm if name in LIBM else same
            check(getattr(sa, name)(x).numpy(), getattr(np, {"atan": "arctan"}.get(name, name))(v))


# ------------------------------------------------------------------ binary
BINARY = {
    "floor_divide": (np.floor_divide, -4, 4), "remainder": (np.remainder, -4, 4), "atan2": (np.arctan2, -3, 3),
    "hypot": (np.hypot, -3, 3), "copysign": (np.copysign, -3, 3), "logaddexp": (np.logaddexp, -3, 3),
    "nextafter": (np.nextafter, -3, 3), "maximum": (np.maximum, -3, 3),
}


@pytest.mark.parametrize("name", list(BINARY))
@given(data=st.data())
@FEW
def test_binary_matches_numpy_broadcasting_by_name(name, data):
    fn, low, high = BINARY[name]
    x, xv = data.draw(arrays(("a", "b"), low=low, high=high))
    yv = np.random.default_rng(1).uniform(low, high, size=xv.shape[1])
    y = sa.asarray(yv, dims=("b",), mesh=x.mesh, layout=data.draw(layouts(x.mesh, ("b",))))
    op = getattr(sa, name)
    with np.errstate(all="ignore"):
        close(op(x, y).numpy(), fn(xv, yv[None, :]))
        close(op(y, x).numpy(), fn(yv[:, None], xv.T))  # y's dims first: (b, a)
        close(op(x, 1.5).numpy(), fn(xv, 1.5))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_integer_floor_divide_and_remainder(dtype):
    mesh = sa.Mesh({"p": 3, "q": 2})
    info = np.iinfo(dtype)
    v = np.array([info.min, -7, -1, 0, 1, 7, info.max] if info.min < 0 else [0, 1, 7, info.max], dtype=dtype)
    w = np.array([-3, -1, 0, 1, 3] if info.min < 0 else [0, 1, 3], dtype=dtype)
    x = sa.asarray(v, dims=("a",), mesh=mesh, layout={"a": "p"})
    y = sa.asarray(w, dims=("b",), mesh=mesh, layout={"b": "q"})
    with np.errstate(all="ignore"):
        same((x // y).numpy(), v[:, None] // w[None, :])
        same((x % y).numpy(), v[:, None] % w[None, :])


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-300, -5e-324])


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "atan2", "copysign", "hypot", "logaddexp",
                                  "nextafter"])
def test_binary_special_values_follow_numpy(name):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(SPECIAL, dims=("a",), mesh=mesh, layout={"a": "row"})
    y = sa.asarray(SPECIAL, dims=("b",), mesh=mesh, layout={"b": "col"})
    fn = {"atan2": np.arctan2}.get(name, getattr(np, name, None))
    with np.errstate(all="ignore"):
        check = same_libm if name in LIBM else same
        check(getattr(sa, name)(x, y).numpy(), fn(SPECIAL[:, None], SPECIAL[None, :]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@given(data=st.data())
@FEW
def test_ldexp_is_exact_broadcasting_by_name(dtype, data):
    """``sa.ldexp`` is NumPy's exact scaling (no ``pow``: CUDA's is an ulp off at ``2.0**-4``), on random meshes,
    layouts and uneven sizes, special values and exponents that overflow or go subnormal included."""
    x, xv = data.draw(arrays(("a", "b"), dtype=dtype, low=-1e3, high=1e3))
    xv = xv.copy()
    xv.flat[: min(xv.size, SPECIAL.size)] = SPECIAL[: xv.size]
    x = sa.asarray(xv, dims=("a", "b"), mesh=x.mesh, layout=x.layout)
    nv = np.random.default_rng(2).integers(-1100, 1100, size=xv.shape[1]).astype(np.int32)
    n = sa.asarray(nv, dims=("b",), mesh=x.mesh, layout=data.draw(layouts(x.mesh, ("b",))))
    with np.errstate(all="ignore"):
        same(sa.ldexp(x, n).numpy(), np.ldexp(xv, nv[None, :]))
        same(sa.ldexp(x, -3).numpy(), np.ldexp(xv, -3))


def test_clip_scalars_arrays_and_crossed_bounds():
    mesh = sa.Mesh({"row": 2, "col": 2})
    v = rand((5, 3), 3)
    lo_v, hi_v = rand(3, 4), rand(3, 5)  # some lo > hi: NumPy's result there is hi
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    lo = sa.asarray(lo_v, dims=("b",), mesh=mesh)
    hi = sa.asarray(hi_v, dims=("b",), mesh=mesh, layout={"b": "row"})
    same(sa.clip(x, lo, hi).numpy(), np.clip(v, lo_v, hi_v))
    same(sa.clip(x, -0.5, 0.5).numpy(), np.clip(v, -0.5, 0.5))
    same(sa.clip(x, None, 0.1).numpy(), np.clip(v, None, 0.1))
    same(sa.clip(x, lo).numpy(), np.clip(v, lo_v, None))
    assert sa.clip(x) is x
    iv = np.arange(-3, 3, dtype=np.int32)
    same(sa.clip(sa.asarray(iv, dims=("a",), mesh=mesh, layout={"a": "col"}), 0, 2).numpy(), np.clip(iv, 0, 2))
    assert sa.clip(x, lo, hi).dims == ("a", "b")


# ------------------------------------------------------------------ logical and bitwise
@given(data=st.data())
@FEW
def test_logical_ops(data):
    x, xv = data.draw(arrays(("a", "b"), dtype=np.bool_))
    y = sa.asarray(~xv[::-1] if xv.size else xv, dims=x.dims, mesh=x.mesh, layout=data.draw(layouts(x.mesh, x.dims)))
    yv = y.numpy()
    same(sa.logical_not(x).numpy(), np.logical_not(xv))
    for name in ("logical_and", "logical_or", "logical_xor"):
        same(getattr(sa, name)(x, y).numpy(), getattr(np, name)(xv, yv))
        same(getattr(sa, name)(x, True).numpy(), getattr(np, name)(xv, True))
    same((x & y).numpy(), xv & yv)
    same((~x).numpy(), ~xv)


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8"])
@given(data=st.data())
@FEW
def test_bitwise_ops_and_operators(dtype, data):
    x, xv = data.draw(arrays(("a", "b"), dtype=dtype, low=0 if dtype == "uint8" else -50, high=50))
    s = np.arange(xv.shape[1], dtype=dtype) % 4
    y = sa.asarray(s, dims=("b",), mesh=x.mesh, layout=data.draw(layouts(x.mesh, ("b",))))
    same((x & y).numpy(), xv & s)
    same((x | y).numpy(), xv | s)
    same((x ^ y).numpy(), xv ^ s)
    same((x << y).numpy(), xv << s)
    same((x >> y).numpy(), xv >> s)
    same((~x).numpy(), ~xv)
    same((3 & x).numpy(), 3 & xv)
    same((1 << y).numpy(), np.left_shift(1, s))
    same((5 >> y).numpy(), np.right_shift(5, s))
    same((7 | x).numpy(), 7 | xv)
    same((7 ^ x).numpy(), 7 ^ xv)


def test_operators_and_rebinding_in_place():
    mesh = sa.Mesh({"row": 2, "col": 2})
    v = rand((4, 3), 0)
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    same((x // 0.3).numpy(), v // 0.3)
    same((2.0 // x).numpy(), 2.0 // v)
    same((x % 0.7).numpy(), v % 0.7)
    same((2.0 % x).numpy(), 2.0 % v)
    same(abs(x).numpy(), np.abs(v))
    orig = x
    x += 1.0
    x *= 2.0
    x //= 1.0
    x %= 3.0
    x **= 2.0
    same(x.numpy(), (((v + 1.0) * 2.0) // 1.0 % 3.0) ** 2.0)
    same(orig.numpy(), v)  # immutable: the old array is unchanged; x was rebound
    i = sa.asarray(np.arange(6).reshape(2, 3), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
    i <<= 1
    i |= 1
    i &= 7
    i ^= 2
    i >>= 1
    same(i.numpy(), ((((np.arange(6).reshape(2, 3) << 1) | 1) & 7) ^ 2) >> 1)


def test_matmul_is_einsum_over_shared_dims():
    mesh = sa.Mesh({"row": 2, "col": 2})
    xv, wv = rand((4, 6), 0), rand((6, 5), 1)
    x = sa.asarray(xv, dims=("batch", "io"), mesh=mesh, layout={"batch": "row", "io": "col"})
    w = sa.asarray(wv, dims=("io", "hidden"), mesh=mesh, layout={"io": "col"})
    y = x @ w
    assert y.dims == ("batch", "hidden") and y.pending == ("col",)
    close(y.numpy(), xv @ wv)
    close((w.__rmatmul__(x)).numpy(), xv @ wv)
    with pytest.raises(sa.DTypeError, match="einsum"):
        x @ wv


# ------------------------------------------------------------------ reductions
@given(data=st.data(), reduce=st.sampled_from([None, "a", "b", ("a", "b"), 0]))
@settings(max_examples=25, deadline=None)
def test_prod_all_any_match_numpy(data, reduce):
    x, xv = data.draw(arrays(("a", "b"), low=0.5, high=1.5))
    axis = None if reduce is None else tuple(np.atleast_1d([x.dims.index(d) if isinstance(d, str) else d
                                                            for d in np.atleast_1d(reduce)]))
    close(sa.prod(x, reduce).numpy(), np.asarray(np.prod(xv, axis=axis)))
    b = x > 1.0
    same(sa.all(b, reduce).numpy(), np.asarray(np.all(xv > 1.0, axis=axis)))
    same(sa.any(b, reduce).numpy(), np.asarray(np.any(xv > 1.0, axis=axis)))
    same(x.all(reduce).numpy(), np.asarray(np.all(xv, axis=axis)))


def test_prod_integer_and_float16():
    mesh = sa.Mesh({"x": 2, "y": 2, "z": 2})
    v = np.arange(1, 13, dtype=np.int32).reshape(3, 4) % 5
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"a": "x", "b": ("y", "z")})
    same(x.prod("b").numpy(), v.prod(axis=1))
    same(x.prod().numpy(), np.asarray(v.prod()))
    h = np.full((2, 40), 1.1, dtype=np.float16)
    xh = sa.asarray(h, dims=("a", "b"), mesh=mesh, layout={"b": ("x", "y")})
    # float16 products accumulate in float32 and are rounded once
    same(xh.prod("b").numpy(), h.astype(np.float32).prod(axis=1).astype(np.float16))


def test_prod_over_split_dim_is_one_small_allgather():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((4, 6), 2), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        p = sa.prod(x, "b")
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("allgather", ("col",), 2)]
    assert p.layout == {"a": ("row",)}
    close(p.numpy(), x.numpy().prod(axis=1))


@given(data=st.data(), reduce=st.sampled_from([None, "a", "b", ("b", "a")]), correction=st.sampled_from([0, 1, 2.5]))
@settings(max_examples=25, deadline=None)
def test_var_std_match_numpy(data, reduce, correction):
    x, xv = data.draw(arrays(("a", "b")))
    axis = None if reduce is None else tuple(x.dims.index(d) for d in np.atleast_1d(reduce))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            want_v = np.asarray(np.var(xv, axis=axis, ddof=correction))
            want_s = np.asarray(np.std(xv, axis=axis, ddof=correction))
    np.testing.assert_allclose(sa.var(x, reduce, correction=correction).numpy(), want_v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sa.std(x, reduce, correction=correction).numpy(), want_s, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.var(reduce, ddof=correction).numpy(), want_v, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_var_is_stable_for_large_offsets(dtype):
    mesh = sa.Mesh({"p": 3, "q": 2})
    rng = np.random.default_rng(0)
    v = (1e8 + rng.uniform(-64, 64, size=(3, 1001))).astype(dtype)
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"b": ("p", "q")})
    exact = v.astype(np.float64).var(axis=1, ddof=1)  # the variance of the stored values
    got = sa.var(x, "b", correction=1).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got, exact, rtol=1e-3 if dtype == "float32" else 1e-9)
    np.testing.assert_allclose(sa.std(x, "b").numpy(), np.sqrt(v.astype(np.float64).var(axis=1)),
                               rtol=1e-3 if dtype == "float32" else 1e-9)


def test_var_float16_accumulates_in_float32():
    mesh = sa.Mesh({"all": 4})
    v = np.random.default_rng(1).uniform(100, 101, size=(2, 30)).astype(np.float16)
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"b": "all"})
    got = sa.var(x, "b").numpy()
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, v.astype(np.float64).var(axis=1), rtol=2e-3)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_over_split_dims_is_one_collective(op):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((4, 6), 2), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        out = getattr(sa, op)(x, "b", correction=1)
    # one collective: the 4 partial moments (count, shift, S1, S2) of each of the 2 local output elements
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("allgather", ("col",), 8)]
    close(out.numpy(), getattr(np, op)(x.numpy(), axis=1, ddof=1))
    with sa.comm_log() as log:
        getattr(sa, op)(x, ("a", "b"))
    assert [(r.op, r.axes) for r in log.records] == [("allgather", ("row", "col"))]
    local = x.relayout({"a": "row"})
    with sa.comm_log() as log:
        getattr(sa, op)(local, "b")
    assert log.records == []  # a dim that is not split: no communication


def test_all_any_over_split_dims_are_one_byte_allreduces():
    mesh = sa.Mesh({"row": 2, "col": 2})
    v = rand((4, 6), 2) > 0
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        a, b = sa.all(x, "b"), sa.any(x, "b")
    assert [(r.op, r.axes, r.elements, r.dtype) for r in log.records] == [
        ("allreduce", ("col",), 2, "uint8"), ("allreduce", ("col",), 2, "uint8")]
    same(a.numpy(), v.all(axis=1))
    same(b.numpy(), v.any(axis=1))


def test_reductions_resolve_pending_sums():
    mesh = sa.Mesh({"row": 2, "col": 2})
    xv, wv = rand((4, 6), 0), rand((6, 5), 1)
    x = sa.asarray(xv, dims=("batch", "io"), mesh=mesh, layout={"io": "col"})
    w = sa.asarray(wv, dims=("io", "hidden"), mesh=mesh, layout={"io": "col"})
    y = x @ w
    assert y.pending
    close(sa.var(y, "hidden").numpy(), np.var(xv @ wv, axis=1))
    close(sa.prod(y, "hidden").numpy(), np.prod(xv @ wv, axis=1), rtol=1e-9)
    close(sa.sin(y).numpy(), np.sin(xv @ wv))
    same(sa.any(y > 0, "hidden").numpy(), (xv @ wv > 0).any(axis=1))


# ------------------------------------------------------------------ gradients
@st.composite
def grad_case(draw):
    mesh = draw(meshes())
    shape = draw(sizes_strategy(("a", "b"), 1, 5))
    seed = draw(st.integers(0, 1000))
    x = sa.asarray(rand(shape, seed), dims=("a", "b"), mesh=mesh, layout=draw(layouts(mesh, ("a", "b"))))
    y = sa.asarray(rand(shape[1], seed + 1), dims=("b",), mesh=mesh, layout=draw(layouts(mesh, ("b",))))
    return x, y, seed


def weighted(out, seed):
    r = sa.asarray(rand(out.shape, seed + 7), dims=out.dims, mesh=out.mesh)
    return (out * r).sum()


GRAD_UNARY = {
    "square": sa.square, "reciprocal": lambda x: sa.reciprocal(x * x + 1.0), "sin": sa.sin, "cos": sa.cos,
    "tan": lambda x: sa.tan(x * 0.3), "asin": lambda x: sa.asin(sa.tanh(x) * 0.9),
    "acos": lambda x: sa.acos(sa.tanh(x) * 0.9), "atan": sa.atan, "sinh": sa.sinh, "cosh": sa.cosh,
    "asinh": sa.asinh, "acosh": lambda x: sa.acosh(x * x + 1.5), "atanh": lambda x: sa.atanh(sa.tanh(x) * 0.9),
    "expm1": sa.expm1, "log1p": lambda x: sa.log1p(x * x), "log2": lambda x: sa.log2(x * x + 0.5),
    "log10": lambda x: sa.log10(x * x + 0.5), "abs": lambda x: abs(x),
    "piecewise": lambda x: x * (sa.sign(x) + sa.floor(x) + sa.ceil(x) + sa.trunc(x) + sa.round(x)),
    "prod": lambda x: sa.prod(x, "b"), "prod_all": lambda x: sa.prod(x * 0.7),
    "var": lambda x: sa.var(x, "b", correction=1), "std": lambda x: sa.std(x + sa.asarray(np.array([0.0, 1.0]), dims=("c",), mesh=x.mesh), ("a", "c")) * x,
    "var_all": lambda x: sa.var(x) + x.var("a"),
    "clip": lambda x: sa.clip(x, -0.5, 0.8), "clip_lo": lambda x: sa.clip(x, -0.3), "clip_hi": lambda x: sa.clip(
        x, None, 0.2),
}


@pytest.mark.parametrize("name", list(GRAD_UNARY))
@given(case=grad_case())
@FEW
def test_unary_and_reduction_vjps(name, case):
    x, _, seed = case
    check_grad(lambda p: weighted(GRAD_UNARY[name](p), seed), x)


GRAD_BINARY = {
    "atan2": sa.atan2, "hypot": sa.hypot, "logaddexp": sa.logaddexp, "copysign": sa.copysign,
    "remainder": lambda x, y: sa.remainder(x, y * y + 2.0), "floor_divide": lambda x, y: x * (x // (y * y + 1.0)),
    "clip_arrays": lambda x, y: sa.clip(x, y - 0.5, y + 0.5),
}


@pytest.mark.parametrize("name", list(GRAD_BINARY))
@given(case=grad_case())
@FEW
def test_binary_vjps(name, case):
    x, y, seed = case
    check_grad(lambda p: weighted(GRAD_BINARY[name](p["x"], p["y"]), seed), {"x": x, "y": y})


def test_prod_vjp_with_zeros_is_exact():
    mesh = sa.Mesh({"row": 2, "col": 2})
    v = np.array([[0.0, 2.0, 3.0, 4.0], [0.0, 0.0, 5.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
    x = sa.asarray(v, dims=("a", "b"), mesh=mesh, layout={"b": "col"})
    g = sa.grad(lambda x: sa.prod(x, "b").sum())(x).numpy()
    want = np.array([[24.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [24.0, 12.0, 8.0, 6.0]])
    np.testing.assert_array_equal(g, want)


def test_ldexp_of_bfloat16_stays_bfloat16_and_bad_exponents_are_typed():
    """A bfloat16 ``x`` is scaled in float64 and rounded once to bfloat16 (it came back float64); float exponents
    and complex ``x`` raise ``sa.DTypeError`` naming the fix (NumPy's bare TypeError before); integer ``x`` is
    NumPy's (int8 to float16)."""
    import ml_dtypes

    mesh = sa.Mesh({"row": 2, "col": 2})
    v = np.array([1.5, -0.0, 3e-39, 100.0, -7.0], dtype=ml_dtypes.bfloat16)
    e = np.array([2, 1, -3, 130, -140], dtype=np.int32)
    x = sa.asarray(v, dims=("a",), mesh=mesh, layout={"a": "row"})
    n = sa.asarray(e, dims=("a",), mesh=mesh, layout={"a": "col"})
    got = sa.ldexp(x, n)
    assert got.dtype == ml_dtypes.bfloat16
    with np.errstate(over="ignore"):
        want = np.ldexp(v.astype(np.float64), e).astype(ml_dtypes.bfloat16)
    if on_real_cupy():  # (CuPy's float64 -> bfloat16 cast passes float32 and flushes its subnormals: -ftz)
        want = np.where(np.abs(want.astype(np.float64)) < np.finfo(np.float32).tiny, want * 0, want).astype(want.dtype)
    np.testing.assert_array_equal(got.numpy().view(np.uint16), want.view(np.uint16))  # bit for bit, -0.0 too
    for bad in (2.5, sa.asarray(np.ones(5), dims=("a",), mesh=mesh)):
        with pytest.raises(sa.DTypeError, match="integer"):
            sa.ldexp(x, bad)
    with pytest.raises(sa.DTypeError, match="real"):
        sa.ldexp(sa.asarray(np.ones(5) * 1j, dims=("a",), mesh=mesh), 2)
    small = sa.asarray(np.arange(5, dtype=np.int8), dims=("a",), mesh=mesh)
    np.testing.assert_array_equal(sa.ldexp(small, n).numpy(), np.ldexp(np.arange(5, dtype=np.int8), e))
