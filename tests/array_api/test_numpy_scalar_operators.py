"""Operators between positional Arrays and NumPy scalars follow NumPy's ufunc rules (NEP 50: a NumPy scalar is
typed), and a loop NumPy lacks is a typed error, not Python's bare "unsupported operand" TypeError."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

OPERATORS = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
]  # fmt: skip
SCALARS = [np.int8(3), np.int16(2), np.uint8(2), np.float32(2.5), np.complex64(1 - 2j), np.bool_(True)]
DTYPES = ["int8", "int64", "float32", "complex64", "bool"]


@pytest.fixture(params=[{"d": 1}, {"p": 3, "q": 2}], ids=["1", "3x2"])
def mesh(request):
    return sa.Mesh(request.param)


def _numpy(op, a, b):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return op(a, b)
        except TypeError as e:
            return e


@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_with_numpy_scalars_match_numpy(mesh, op, dtype):
    host = np.asarray([1, 2, 3, 4, 5, 7], dtype=dtype)
    x = xp.asarray(host, device=mesh)
    for s in SCALARS:
        for a, b, ha, hb in ((x, s, host, s), (s, x, s, host)):
            want = _numpy(op, ha, hb)
            if isinstance(want, TypeError):
                with pytest.raises(sa.ShardArrayError) as info:
                    op(a, b)
                assert isinstance(info.value, TypeError), (op, dtype, s)
                continue
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                got = op(a, b)
            assert isinstance(got, xp.Array), (op, dtype, s)
            assert got.dtype == want.dtype, (op.__name__, dtype, repr(s), got.dtype, want.dtype)
            np.testing.assert_array_equal(got.numpy(), want)


def test_floor_divide_by_a_complex_numpy_scalar_is_a_typed_error(mesh):
    x = xp.asarray(np.arange(4.0), device=mesh)
    for f in (lambda: x // np.complex64(1j), lambda: np.complex64(1j) // x, lambda: x % np.complex64(1j)):
        with pytest.raises(sa.DTypeError, match="complex"):
            f()


@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_divmod_is_numpys(mesh, dtype):
    host = np.asarray([-7, -3, -1, 0, 2, 5, 9], dtype=dtype)
    x = xp.asarray(host, device=mesh)
    cases = [(x, 3, host, 3), (7, x[4:], 7, host[4:]), (x, np.int8(2), host, np.int8(2))]
    cases.append((x, x[::-1] + 20, host, host[::-1] + 20))
    for a, b, ha, hb in cases:
        q, r = divmod(a, b)
        wq, wr = np.divmod(ha, hb)
        assert (q.dtype, r.dtype) == (wq.dtype, wr.dtype)
        np.testing.assert_array_equal(q.numpy(), wq)
        np.testing.assert_array_equal(r.numpy(), wr)
    with pytest.raises(TypeError):
        divmod(x, "2")
