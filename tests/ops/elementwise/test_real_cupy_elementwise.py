"""Elementwise ops where real CuPy (an H200, CuPy 14.2) computed otherwise than NumPy: float ``//`` and ``%``
(CuPy: ``floor(a / b)``), Python ints beyond int64 beside float arrays (CuPy's ``CScalar`` overflows), integer
``**`` negative integer (CuPy: 0 instead of NumPy's ValueError) and bfloat16 ``nextafter`` at subnormals (CuPy's
``-ftz=true``). On ``--backend=cupy`` the strict stand-in models each of them (tests/support/strict_cupy.py)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

BF16 = np.dtype(ml_dtypes.bfloat16)


def bits_equal(got, want):
    """Equal dtypes and values, signs of zeros included (NaN equal to NaN; bfloat16 compared as float32)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    got, want = (
        got.astype(np.float32) if got.dtype == BF16 else got,
        want.astype(np.float32) if want.dtype == BF16 else want,
    )
    np.testing.assert_array_equal(got, want)
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_float_floor_divide_and_remainder_follow_numpys_divmod(dtype):
    """``1.0 // 0.1`` is 9 (``floor(1.0 / 0.1)`` is 10), ``1.0 % 0.1`` is 0.0999..., ``inf // 2`` NaN, ``1 % inf`` 1,
    a zero quotient or remainder takes NumPy's sign; with array and scalar operands either way round."""
    v = np.array([1.0, -1.0, 0.7, 7.0, -7.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.5, 1e-3]).astype(dtype)
    w = np.array([0.1, -0.1, 2.0, -2.0, np.inf, -np.inf, 0.0, 1e-3]).astype(dtype)
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(v, dims=("a",), mesh=mesh, layout={"a": "row"})
    y = sa.asarray(w, dims=("b",), mesh=mesh, layout={"b": "col"})
    wide = np.float32 if dtype == "bfloat16" else dtype  # (NumPy shards compute bfloat16 in float32, rounded once)
    a, b = v.astype(wide)[:, None], w.astype(wide)[None, :]
    with np.errstate(all="ignore"):
        bits_equal(sa.floor_divide(x, y).numpy(), np.floor_divide(a, b).astype(dtype))
        bits_equal(sa.remainder(x, y).numpy(), np.remainder(a, b).astype(dtype))
        bits_equal((x // 0.1).numpy(), np.floor_divide(v.astype(wide), 0.1).astype(dtype))
        bits_equal((1.0 % x).numpy(), np.remainder(1.0, v.astype(wide)).astype(dtype))


def test_positional_floor_divide_uses_numpys_quotient():
    """The array API namespace's ``//`` (its special cases aside) divides as NumPy: ``1.0 // 0.1`` is 9."""
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        q = xp.asarray(np.array([1.0, 2.0, -1.0, 0.5])) // 0.1
    np.testing.assert_array_equal(q.numpy(), np.floor_divide(np.array([1.0, 2.0, -1.0, 0.5]), 0.1))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
def test_a_python_int_beyond_int64_beside_a_float_array_is_a_float(dtype):
    """NumPy converts a weak Python int to the array's dtype (``2**70`` is ``inf`` in float16); CuPy's kernels
    take no int outside int64/uint64 (an OverflowError, reported as a CastError)."""
    v = np.array([1.0, -2.0, 0.5]).astype(dtype)
    x = sa.asarray(v, dims=("a",), mesh=sa.Mesh({"all": 4}), layout={"a": "all"})
    with np.errstate(over="ignore"):
        for big in (2**70, -(2**64), 2**64):
            np.testing.assert_array_equal((x * big).numpy(), v * big)
            np.testing.assert_array_equal((big - x).numpy(), big - v)


def test_a_python_int_beyond_the_dtype_of_an_integer_array_still_raises():
    x = sa.asarray(np.array([1, 2, 3]), dims=("a",), mesh=sa.Mesh({"all": 4}), layout={"a": "all"})
    with pytest.raises(sa.CastError, match="do not fit"):
        x + 2**70


@pytest.mark.parametrize("exponent", [-1, np.int8(-2), "array"])
def test_integer_to_a_negative_integer_power_raises_a_typed_error(exponent):
    """NumPy's ValueError (CuPy computes 0, or +-1 for a base of +-1), as an ArgumentError naming the dims; a
    non-negative exponent array, a float base or a uint exponent computes."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    i = sa.asarray(np.array([1, -1, 3, 4]), dims=("a",), mesh=mesh, layout={"a": "col"})
    e = (
        sa.asarray(np.array([2, 0, -1, 3]), dims=("a",), mesh=mesh, layout={"a": "row"})
        if exponent == "array"
        else exponent
    )
    with pytest.raises(sa.ArgumentError, match=r"\{'a': 4\}"):
        i**e
    np.testing.assert_array_equal((i ** sa.abs(i)).numpy(), np.array([1, -1, 27, 256]))
    # (CUDA's pow gave 3 ** -1 one ulp above 1/3 on an H200)
    np.testing.assert_allclose((i.astype("float64") ** -1).numpy(), 1.0 / np.array([1, -1, 3, 4]), rtol=4e-16)
    np.testing.assert_array_equal((i ** np.uint8(2)).numpy(), np.array([1, 1, 9, 16]))


def test_bfloat16_nextafter_steps_from_subnormals_and_toward_scalar_targets():
    """The steps test the bit patterns (CuPy flushes float32 subnormals in comparisons), also toward a Python
    scalar target that is itself a bfloat16 subnormal."""
    tiny = 2.0**-133  # the least bfloat16 subnormal
    v = np.array([tiny, -tiny, 2 * tiny, 0.0, -0.0, 1e-38, 1.0], BF16)
    x = sa.asarray(v, dims=("a",), mesh=sa.Mesh({"row": 2, "col": 2}), layout={"a": "row"})
    for target in (np.inf, -np.inf, 0.0, -0.0, 3 * tiny, -tiny):
        got = sa.nextafter(x, target).numpy().astype(np.float32)
        want = np.nextafter(v, np.asarray(target).astype(BF16)).astype(np.float32)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
