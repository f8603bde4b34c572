"""Regressions found by a differential fuzzer of the elementwise functions by dtype (``xp.*``, ``sa.*`` and the
operators, every dtype pair with Python and NumPy scalars, in-place operators, broadcasting over uneven and empty
blocks, on meshes 1, 2x2, 4, 2x2x2, 3x2, on NumPy and CuPy shards, against NumPy on the gathered values; the bug
each test pins is in its docstring)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp

SHAPES = [*MESH_SHAPES, {"p": 3, "q": 2}]
MESHES = pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s.values())))
BF16 = np.dtype(ml_dtypes.bfloat16)


def same_floats(got, ref):
    """Equal values, NaNs and signs of zero (bfloat16 compared as its float32 values)."""
    assert got.dtype == ref.dtype
    got, ref = got.astype(np.float32), ref.astype(np.float32)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(ref[~np.isnan(ref)]))


def floor_divide_std(a, b, dtype):
    """The standard's ``a // b`` in ``dtype``, a Python scalar taken in ``dtype`` first (computed in float64)."""
    a, b = (np.asarray(np.asarray(v).astype(dtype), np.float64) for v in (a, b))
    with np.errstate(all="ignore"):
        q = np.where(np.isinf(a) | np.isinf(b), np.floor(a / b), np.floor_divide(a, b))
    return q.astype(dtype)


@MESHES
def test_bitwise_ops_of_uint64_with_a_signed_integer_raise_a_dtype_error(shape):
    """NumPy 2 promotes uint64 with a signed integer to float64, which bitwise and/or/xor and the shifts are not
    defined for: NumPy's own TypeError ("ufunc 'bitwise_and' not supported for the input types") came out of the
    block, for arrays, a NumPy scalar operand and the in-place operators, named and positional."""
    mesh = sa.Mesh(shape)
    u, i = np.array([1, 2, 2**63, 7, 0], np.uint64), np.array([-1, 2, 3, 4, 5], np.int16)
    with sa.default_mesh(mesh):
        xu, xi = xp.asarray(u), xp.asarray(i)
        for f in (
            lambda: xu & xi,
            lambda: xp.bitwise_or(xi, xu),
            lambda: xu ^ xi[:1],
            lambda: xp.bitwise_left_shift(xu, xi),
            lambda: xi >> xu,
            lambda: xi & np.uint64(3),
            lambda: np.uint64(3) >> xi,
        ):
            with pytest.raises(sa.DTypeError, match="promote to float64"):
                f()
        y = xp.asarray(u)
        with pytest.raises(sa.DTypeError, match="promote to float64"):
            y ^= np.int64(-2)
        with pytest.raises(sa.DTypeError, match="promote to float64"):
            y |= xi
        np.testing.assert_array_equal(y.numpy(), u)  # left as it was
        np.testing.assert_array_equal((xu & 6).numpy(), u & 6)  # a Python int is weak: uint64 stays
        np.testing.assert_array_equal((xu | xp.asarray(u > 1)).numpy(), u | (u > 1))  # bool promotes to uint64
    nu = sa.asarray(u, dims=("a",), mesh=mesh, layout={"a": mesh.axis_names[0]})
    ni = sa.asarray(i[:, None] * np.ones(3, np.int16), dims=("a", "b"), mesh=mesh, layout={"b": mesh.axis_names[-1]})
    for f in (lambda: nu & ni, lambda: sa.bitwise_right_shift(ni, nu), lambda: sa.bitwise_xor(ni, nu)):
        with pytest.raises(sa.DTypeError, match="promote to float64"):
            f()


@MESHES
@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16"])
def test_xp_floor_divide_takes_a_python_scalar_in_the_arrays_dtype(shape, dtype):
    """The standard's special cases of ``xp.floor_divide`` (``±inf // finite`` is ``±inf``, ``finite // ±inf`` a
    signed zero) tested the Python scalar as given, not as the weak scalar the op computes with: ``1e300 // x`` of
    float16 (or float32) ``x`` is ``inf // x``, which gave NaN, and ``x // 2**70`` raised NumPy's TypeError (isinf
    of a Python int beyond int64). On CuPy shards, bfloat16 (NumPy kind "V") skipped the special cases altogether."""
    a = np.array([-3.0, 1.25, 2.0, -0.5, 7.0, np.inf, -np.inf]).astype(dtype)
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        with np.errstate(over="ignore"):
            same_floats((1e300 // x).numpy(), floor_divide_std(1e300, a, dtype))
            same_floats(xp.floor_divide(x, -1e300).numpy(), floor_divide_std(a, -1e300, dtype))
            if dtype != "bfloat16":  # (the CuPy stand-in's bfloat16 loops take no Python int beyond int64)
                same_floats(xp.floor_divide(x, 2**70).numpy(), floor_divide_std(a, 2**70, dtype))
        same_floats((x // 2).numpy(), floor_divide_std(a, 2, dtype))  # inf // 2 is inf, not NaN
        inf = xp.asarray(np.array([np.inf, -np.inf, -np.inf]).astype(dtype))
        same_floats((inf // x[:1]).numpy(), np.array([-np.inf, np.inf, np.inf]).astype(dtype))


@MESHES
def test_nextafter_of_bfloat16_steps_by_a_bfloat16_ulp(shape):
    """bfloat16 math on NumPy shards runs in float32 and is rounded once; for ``nextafter`` that stepped by a
    float32 ulp, which the rounding undid: ``nextafter(x, inf)`` of bfloat16 ``x`` gave ``x`` itself, for every
    finite ``x``."""
    vals = np.array([1.0, 0.0, -0.0, -2.0, 3.0, np.inf, -np.inf, np.nan, 3.3895314e38, 9.18355e-41], BF16)
    targets = np.array([np.inf, -np.inf, 0.0, -0.0, np.nan, 1.0, -1.0], BF16)
    a, b = (g.astype(BF16) for g in np.meshgrid(vals, targets, indexing="ij"))
    mesh = sa.Mesh(shape)
    with sa.default_mesh(mesh):
        same_floats(xp.nextafter(xp.asarray(a), xp.asarray(b)).numpy(), np.nextafter(a, b))
        same_floats(xp.nextafter(xp.asarray(vals), np.inf).numpy(), np.nextafter(vals, np.array(np.inf, BF16)))
        same_floats(xp.nextafter(-1e-50, xp.asarray(vals)).numpy(), np.nextafter(np.array(-0.0, BF16), vals))
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": mesh.axis_names[0]})
    same_floats(sa.nextafter(x, 2.0).numpy(), np.nextafter(a, np.array(2.0, BF16)))
