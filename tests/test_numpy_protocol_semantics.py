"""NumPy's semantics of the positional dispatch, case by case, against NumPy 2 (a differential test's findings).

Each case runs a NumPy call on host arrays and the same call on ``shardarray.array_api`` arrays split over a
2x2 mesh and an uneven 3x2 (or 4) mesh, with shapes that split unevenly, and compares values, dtype and
shape; the calls gather nothing (``_no_gather``: a 0-d read is allowed). Bad input raises a typed ``sa`` error.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"row": 2, "col": 2}, {"x": 3, "y": 2}, {"x": 4}]


@pytest.fixture(params=MESHES, ids=lambda s: "x".join(map(str, s.values())))
def mesh(request):
    return sa.Mesh(request.param)


@contextlib.contextmanager
def _no_gather():
    """Fail on any gather of an array of more than one element (reading a 0-d count is not a gather)."""
    real_numpy, real_array = sa.ShardArray.numpy, sa.ShardArray.__array__

    def guard(real):
        def call(self, *a, **k):
            if self.size > 1:
                raise AssertionError(f"a ShardArray of shape {self.shape} was gathered")
            return real(self, *a, **k)

        return call

    sa.ShardArray.numpy, sa.ShardArray.__array__ = guard(real_numpy), guard(real_array)
    try:
        yield
    finally:
        sa.ShardArray.numpy, sa.ShardArray.__array__ = real_numpy, real_array


def _to_xp(value, mesh):
    if isinstance(value, np.ndarray) and value.ndim:
        return xp.asarray(value, device=mesh)
    return value


def _same(got, want, label=""):
    """``got`` (Arrays) equals NumPy's ``want``: values (NaN equal), dtype and shape."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), label
        for g, w in zip(got, want):
            _same(g, w, label)
        return
    assert isinstance(got, xp.Array), f"{label}: {type(got).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    assert (g.dtype, g.shape) == (w.dtype, w.shape), f"{label}: {g.dtype} {g.shape} vs NumPy's {w.dtype} {w.shape}"
    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-12, equal_nan=True, err_msg=label)


def _check(mesh, fn, *args, label="", **kwargs):
    """``fn`` on NumPy's arguments and on the same arguments as Arrays on ``mesh``: same result (or both raise)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = fn(*args, **kwargs)
        with _no_gather():
            got = fn(*(_to_xp(a, mesh) for a in args), **kwargs)
    _same(got, want, label or getattr(fn, "__name__", ""))


INTS = np.array([[1, 0, 3], [2, 5, 1], [0, 1, 1], [4, 2, 2], [1, 1, 0]])  # (5, 3): uneven on every mesh


# ------------------------------------------------------------------ 1. NumPy's loop dtypes for ufuncs

UFUNCS = ["sqrt", "exp", "log", "sin", "log1p", "expm1", "arcsin", "rint", "floor", "ceil", "trunc", "square",
          "negative", "absolute", "logical_not", "isnan", "arctan2", "hypot", "logaddexp", "copysign", "nextafter",
          "logical_and", "logical_or", "logical_xor", "remainder", "floor_divide", "add", "multiply", "divide",
          "power", "maximum", "equal", "less", "bitwise_and"]
DTYPES = ["bool", "int8", "int16", "int64", "uint8", "float16", "float32", "float64"]


@pytest.mark.parametrize("name", UFUNCS)
def test_ufuncs_convert_integer_and_bool_operands_as_numpy(mesh, name):
    ufunc = getattr(np, name)
    for dtype in DTYPES:
        h = INTS.astype(dtype) if name != "arcsin" else (INTS % 2).astype(dtype)
        args = [h, h[::-1].copy()][: ufunc.nin]
        try:
            with np.errstate(all="ignore"):
                ufunc(*args)
        except TypeError:  # NumPy has no loop (np.negative of bools, np.bitwise_and of floats)
            continue
        _check(mesh, ufunc, *args, label=f"np.{name}({dtype})")


def test_ufunc_scalars_and_outer_use_numpys_loop(mesh):
    b = INTS.astype(bool)
    _check(mesh, np.add, INTS.astype(np.int8), 2.5, label="int8 + weak float")
    _check(mesh, np.add, INTS.astype(np.int8), 2, label="int8 + weak int stays int8")
    _check(mesh, np.add, INTS.astype(np.float32), 2.5, label="float32 + weak float stays float32")
    _check(mesh, np.logical_and, INTS, 2, label="logical_and of ints and an int")
    _check(mesh, np.logical_or, b, 0.0, label="logical_or of bools and a float")
    _check(mesh, np.hypot.outer, INTS[:, 0].copy(), INTS[0].copy(), label="hypot.outer of ints")
    _check(mesh, np.sqrt, INTS, dtype=np.float32, label="sqrt(ints, dtype=float32)")


def test_ufunc_out_keeps_numpys_casting(mesh):
    x = xp.asarray(INTS, device=mesh)
    out = xp.zeros(INTS.shape, dtype=xp.float32, device=mesh)
    assert np.sqrt(x, out=out) is out
    np.testing.assert_allclose(np.asarray(out), np.sqrt(INTS).astype(np.float32))
    with pytest.raises(sa.DTypeError, match="same_kind"):
        np.sqrt(x, out=x)  # float64 into int64: NumPy refuses too


NAMES_TO_FLOAT = [(np.std, ()), (np.var, ()), (np.linalg.inv, ()), (np.linalg.det, ()), (np.linalg.norm, ()),
                  (np.linalg.solve, ("b",)), (np.linalg.eigvalsh, ()), (np.linalg.matrix_rank, ()),
                  (np.fft.fft, ()), (np.fft.rfft, ()), (np.fft.fft2, ())]


@pytest.mark.parametrize(("func", "extra"), NAMES_TO_FLOAT, ids=lambda f: getattr(f, "__name__", ""))
def test_functions_that_compute_in_float_convert_integer_and_bool_input(mesh, func, extra):
    square = np.array([[4, 1, 0, 1, 0], [1, 5, 1, 0, 0], [0, 1, 6, 1, 1], [1, 0, 1, 7, 0], [0, 0, 1, 0, 8]])
    for dtype in ("int64", "int8", "bool"):
        a = (square if dtype != "bool" else np.eye(5, dtype=int) + np.eye(5, k=1, dtype=int)).astype(dtype)
        args = [a] + [a[:, :2].copy() for _ in extra]
        _check(mesh, func, *args, label=f"{func.__name__}({dtype})")


# ------------------------------------------------------------------ 2. np.clip promotes with its bounds


def test_clip_promotes_with_its_bounds(mesh):
    v = np.array([-3, 0, 2, 5, -1, 4, 7])
    _check(mesh, np.clip, v, -1.5, 1.5, label="clip(ints, floats)")
    _check(mesh, np.clip, v.astype(np.int8), np.float32(-1.5), 3, label="clip(int8, float32 scalar)")
    _check(mesh, np.clip, v.astype(np.int8), -1, 3, label="clip(int8, ints) stays int8")
    _check(mesh, np.clip, v.astype(np.float32), -1.5, None, label="clip(float32, float) stays float32")
    _check(mesh, lambda a: a.clip(min=-0.5), v, label="x.clip(min=float)")


# ------------------------------------------------------------------ 3. NumPy scalars and 0-d arrays keep their dtype


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int64", "float32", "float64"])
def test_numpy_scalars_and_0d_arrays_are_strongly_typed(mesh, dtype):
    h = INTS.astype(dtype)
    scalars = [np.int64(2), np.int8(3), np.float32(2.5), np.float64(0.1), np.bool_(True), np.array(2.0),
               np.array(3, dtype=np.int16), 2, 2.5, True]
    for s in scalars:
        for label, fn in [("np.add", lambda a, s=s: np.add(a, s)), ("np.add reflected", lambda a, s=s: np.add(s, a)),
                          ("np.subtract", lambda a, s=s: np.subtract(a, s)), ("a * s", lambda a, s=s: a * s),
                          ("s - a", lambda a, s=s: s - a), ("a == s", lambda a, s=s: a == s),
                          ("np.maximum", lambda a, s=s: np.maximum(a, s))]:
            try:
                with np.errstate(all="ignore"):
                    fn(h)
            except TypeError:  # NumPy refuses (bool - bool)
                continue
            _check(mesh, fn, h, label=f"{label} of {dtype} and {s!r}")


def test_numpy_scalars_as_non_operands_stay_plain_values(mesh):
    h = INTS.astype(np.float32)
    _check(mesh, lambda a: np.sum(a, axis=np.int64(1)), h, label="axis=np.int64(1)")
    _check(mesh, lambda a: np.round(a / 3, decimals=np.int64(2)), h, label="round(decimals=np.int64)")
    _check(mesh, lambda a: np.maximum.reduce(a, axis=0, initial=np.float64(9)), h, label="reduce(initial=np.float64)")
    _check(mesh, lambda a: np.add.reduce(a, axis=np.int8(0)), h, label="reduce(axis=np.int8)")


def test_inplace_operators_with_numpy_scalars_keep_the_dtype(mesh):
    for dtype, s in (("int8", np.int64(2)), ("float32", np.float64(0.5)), ("float32", np.array(3))):
        want = INTS.astype(dtype)
        want += s
        x = xp.asarray(INTS.astype(dtype), device=mesh)
        x += s
        _same(x, want, f"{dtype} += {s!r}")
    x = xp.asarray(INTS, device=mesh)
    with pytest.raises(sa.DTypeError):
        x += np.float32(0.5)  # NumPy's same_kind casting refuses float32 into int64


# ------------------------------------------------------------------ 4., 5. dtype= and keepdims=


def test_integer_dtype_is_the_result_dtype(mesh):
    _check(mesh, lambda a: np.mean(a, dtype=np.int32), INTS - 2, label="mean(dtype=int32)")
    _check(mesh, lambda a: np.mean(a, axis=0, dtype=np.int32), INTS - 2, label="mean(axis=0, dtype=int32)")
    _check(mesh, lambda a: np.mean(a, dtype=np.float32), INTS, label="mean(dtype=float32)")
    _check(mesh, lambda a: a.mean(axis=1, dtype=np.int64), INTS, label="x.mean(dtype=int64)")


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
def test_flattening_reductions_keep_every_axis_with_keepdims(mesh, name):
    h = np.random.default_rng(0).permutation(30).reshape(5, 3, 2).astype(float)
    func = getattr(np, name)
    _check(mesh, lambda a: func(a, axis=None, keepdims=True), h, label=f"{name}(axis=None, keepdims=True)")
    _check(mesh, lambda a: func(a, keepdims=True), h[:, :, 0].copy(), label=f"{name}(keepdims=True) 2-D")
    _check(mesh, lambda a: func(a, axis=1, keepdims=True), h, label=f"{name}(axis=1, keepdims=True)")
    if name in ("argmax", "argmin"):
        _check(mesh, lambda a: getattr(a, name)(keepdims=True), h, label=f"x.{name}(keepdims=True)")


# ------------------------------------------------------------------ 6. np.unique merges NaNs


UNIQUE_CASES = [
    np.array([np.nan, 1, np.nan]),
    np.array([[np.nan, 2.0, 1.0, np.nan, 2.0], [0.0, np.nan, 5.0, 1.0, np.nan]]),
    np.array([np.nan, np.nan, np.nan], dtype=np.float32),
    np.array([complex(np.nan, 1), 1 + 0j, complex(1, np.nan), complex(np.nan, 1), complex(np.nan, np.nan)]),
    np.array([3.0, 1.0, 3.0]),
    np.array([3, 1, 3, 2]),
]


@pytest.mark.parametrize("equal_nan", [True, False])
@pytest.mark.parametrize("flags", [(False,) * 3, (True,) * 3, (True, False, True), (False, True, False)])
def test_unique_merges_nans_unless_equal_nan_is_false(mesh, equal_nan, flags):
    for h in UNIQUE_CASES:
        _check(mesh, lambda a: np.unique(a, *flags, equal_nan=equal_nan), h, label=f"unique({h}, {flags})")


# ------------------------------------------------------------------ 7. split at negative indices


def test_split_counts_negative_indices_from_the_end(mesh):
    x9 = np.arange(9.0)
    _check(mesh, lambda a: np.split(a, [-2]), x9, label="split [-2]")
    _check(mesh, lambda a: np.array_split(a, [-7, 5, -20, 30]), x9, label="array_split mixed")
    _check(mesh, lambda a: np.split(a, [1, -1], axis=1), np.arange(35.0).reshape(5, 7), label="split axis=1")
    _check(mesh, lambda a: np.hsplit(a, [-3]), np.arange(35.0).reshape(5, 7), label="hsplit [-3]")


# ------------------------------------------------------------------ 8. np.add.at: casting and boolean masks


def test_add_at_refuses_values_it_would_truncate(mesh):
    x = xp.asarray([1, 2, 3, 4, 5], device=mesh)
    for value in (0.6, np.float32(0.5), xp.asarray([0.5, 0.5, 0.5], device=mesh)):
        with pytest.raises(sa.DTypeError, match=r"same_kind.*cast the values to int64"):
            np.add.at(x, [0, 0, 1], value)
    with pytest.raises(sa.DTypeError, match="same_kind"):
        np.subtract.at(x, [1], 1.5)
    assert np.asarray(x).tolist() == [1, 2, 3, 4, 5]  # nothing written
    b = xp.asarray([True, False, True], device=mesh)
    with pytest.raises(sa.DTypeError):
        np.add.at(b, [0], 1)  # int64 into bool


def test_add_at_with_values_that_cast(mesh):
    for dtype, value in (("int64", 2), ("int8", np.int64(3)), ("float32", 0.5), ("float32", np.float64(0.25))):
        want = np.arange(7).astype(dtype)
        np.add.at(want, [0, 0, 5, -1], value)
        x = xp.asarray(np.arange(7).astype(dtype), device=mesh)
        np.add.at(x, [0, 0, 5, -1], value)
        _same(x, want, f"add.at {dtype} {value!r}")


def test_add_at_takes_a_boolean_mask(mesh):
    h = np.arange(15.0).reshape(5, 3)
    for mask in (h % 2 == 0, np.array([True, False, False, True, True])):
        for as_array in (True, False):
            want = h.copy()
            np.add.at(want, mask, 1.0)
            x = xp.asarray(h, device=mesh)
            np.add.at(x, xp.asarray(mask, device=mesh) if as_array else mask, 1.0)
            _same(x, want, f"add.at mask {mask.shape}")
    with pytest.raises(sa.DimensionError, match="does not match"):
        np.add.at(xp.asarray(h, device=mesh), np.array([True, False]), 1.0)


# ------------------------------------------------------------------ 9., 10. np.asarray(copy=False), astype(casting=)


def test_asarray_without_a_copy_is_refused(mesh):
    x = xp.asarray(np.arange(15.0).reshape(5, 3), device=mesh)
    with pytest.raises(ValueError, match=r"distributed.*copy \(a gather\).*np.asarray\(x\) or copy=None") as info:
        np.asarray(x, copy=False)
    assert isinstance(info.value, sa.ShardArrayError)
    np.testing.assert_array_equal(np.asarray(x, copy=True), np.asarray(x))
    assert np.asarray(x, dtype=np.float32).dtype == np.float32


def test_astype_honours_casting(mesh):
    x = xp.asarray(np.arange(15.0).reshape(5, 3) / 2, device=mesh)
    for casting in ("no", "equiv", "safe", "same_kind"):
        with pytest.raises(sa.DTypeError, match=f"float64 to int32 under casting='{casting}'"):
            x.astype(np.int32, casting=casting)
    _check(mesh, lambda a: a.astype(np.int32, casting="unsafe"), np.arange(15.0).reshape(5, 3) / 2)
    _check(mesh, lambda a: a.astype(np.float32, casting="same_kind"), np.arange(15.0).reshape(5, 3))
    _check(mesh, lambda a: a.astype(np.float64, casting="safe"), np.arange(15).reshape(5, 3))


# ------------------------------------------------------------------ 11. keywords through NumPy's **kwargs


def test_keywords_numpy_takes_through_kwargs_are_passed_on(mesh):
    h = np.arange(15.0).reshape(5, 3)
    _check(mesh, lambda a: np.pad(a, 1, constant_values=7), h, label="pad constant_values")
    _check(mesh, lambda a: np.pad(a, (2, 1), mode="constant", constant_values=((1, 2), (3, 4))), h)
    _check(mesh, lambda a: np.pad(a, 2, mode="reflect", reflect_type="even"), h, label="pad reflect_type")
    x = xp.asarray(h, device=mesh)
    _check(mesh, lambda a: np.pad(a, 2, mode="reflect", reflect_type="odd"), h, label="pad reflect_type odd")
    with pytest.raises(sa.ArgumentError, match="reflect_type"):
        np.pad(x, 1, mode="reflect", reflect_type="sideways")
    with pytest.raises(sa.ArgumentError, match="constant_values"):
        np.pad(x, 1, mode="edge", constant_values=3)  # NumPy refuses it for this mode too
    with pytest.raises(sa.ArgumentError, match="casting"):
        np.clip(x, 0, 1, casting="unsafe")  # a ufunc keyword through np.clip's **kwargs, not honoured


# ------------------------------------------------------------------ 12., 13. np.where and np.take


def test_where_takes_any_condition(mesh):
    _check(mesh, lambda c: np.where(c, 1.0, 0.0), INTS - 1, label="int condition")
    _check(mesh, lambda c: np.where(c, 1, 0), (INTS - 1) * 0.5, label="float condition")
    _check(mesh, lambda c: np.where(c, c, -1), INTS.astype(bool), label="bool condition")
    h = np.arange(15.0).reshape(5, 3)
    _check(mesh, lambda a: np.where(1, a, 0.0), h, label="Python int condition")
    _check(mesh, lambda a: np.where(np.False_, a, -a), h, label="NumPy bool condition")


def test_take_with_scalar_and_nd_indices(mesh):
    h = np.arange(35.0).reshape(5, 7)
    cases = [(4, None), (-1, 0), ([[0, 1], [2, 3]], 1), ([[0, 1], [2, 3]], None), ([[4], [0]], 0), ([3, 0], -1),
             ([], 0), (2, 1)]
    for indices, axis in cases:
        _check(mesh, lambda a, i=indices, k=axis: np.take(a, i, axis=k), h, label=f"take({indices}, axis={axis})")
    _check(mesh, lambda a: a.take([[1, 2]], axis=0), h, label="x.take 2-D indices")
    x = xp.asarray(h, device=mesh)
    ids = xp.asarray([[6, 0], [1, 2]], device=mesh)
    _same(np.take(x, ids, axis=1), np.take(h, [[6, 0], [1, 2]], axis=1), "take with Array indices")
    with pytest.raises(sa.ArgumentError, match="mode"):
        np.take(x, [9], axis=1, mode="wrap")


# ------------------------------------------------------------------ 14. reduce with initial


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum, np.add, np.multiply])
def test_reduce_with_initial(mesh, ufunc):
    for shape in ((2, 0), (0, 3), (0, 0), (5, 3)):
        for dtype in ("float64", "int32", "float32"):
            h = (np.arange(np.prod(shape)).reshape(shape) - 5).astype(dtype)
            for axis in (0, 1, None, (0, 1)):
                for keepdims in (False, True):
                    _check(mesh, lambda a, k=axis, kd=keepdims: ufunc.reduce(a, axis=k, initial=10, keepdims=kd), h,
                           label=f"{ufunc.__name__}.reduce {shape} {dtype} axis={axis} keepdims={keepdims}")
    for initial in (10.5, np.float64(2.5), np.int8(-3), True):  # cast to the result's dtype, as NumPy does
        for dtype in ("int64", "float32", "int8"):
            h = (np.arange(15).reshape(5, 3) - 5).astype(dtype)
            _check(mesh, lambda a, i=initial: ufunc.reduce(a, axis=0, initial=i), h, label=f"initial={initial!r}")
    with pytest.raises(sa.DimensionError, match="empty"):
        np.maximum.reduce(xp.zeros((0, 3), device=mesh), axis=0)  # no initial: NumPy raises too


# ------------------------------------------------------------------ np.linspace with array endpoints

LINSPACE = [{}, {"num": 5}, {"num": 1}, {"num": 0}, {"num": 4, "endpoint": False}, {"num": 4, "axis": 1},
            {"num": 4, "axis": -1}, {"num": 3, "dtype": np.int64}, {"num": 4, "dtype": np.float32}]


@pytest.mark.parametrize("kw", LINSPACE, ids=str)
def test_linspace_with_array_endpoints_is_numpys(mesh, kw):
    """Each device computes its endpoints' samples along a new, unsplit axis: NumPy's values exactly, no gather."""
    a = np.arange(15.0).reshape(5, 3) / 7
    b = a * 2 - 1
    b[0] = a[0]  # a zero step in one pair: NumPy's ``i / div * delta`` arithmetic for every pair then
    for start, stop in ((a, b), (a[1], b[1]), (a, 3), (-2, b[:, 0]), (a.astype(np.float32), 10)):
        _check(mesh, np.linspace, start, stop, **kw)
    _check(mesh, lambda s, e: np.linspace(s, e, 4, retstep=True)[1], a, b, label="retstep")
    _check(mesh, lambda s, e: np.linspace(s, e, 6, retstep=True)[0], a + 1, b, label="retstep values")


def test_linspace_bad_input_is_typed(mesh):
    x = xp.asarray(np.ones(4), device=mesh)
    with pytest.raises(sa.DimensionError, match="non-negative"):
        np.linspace(x, 2 * x, -1)
    with pytest.raises(sa.DTypeError, match="integer"):
        np.linspace(x, 2 * x, 2.5)
    with pytest.raises(sa.DTypeError, match="NumPy array"):
        np.linspace(x, np.ones(4), 3)
