"""``xp.matmul``/``@``, ``xp.tensordot`` and ``xp.vecdot`` of bool arrays as NumPy's: the or of ands, a bool result
(a split contraction's partial results combine by a logical or), and bool with float promoted."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}, {"a": 2, "b": 2, "c": 2}], ids=str)
def test_bool_products_as_numpy(shape):
    rng = np.random.default_rng(0)
    a, b, f = rng.random((5, 7)) < 0.2, rng.random((7, 3)) < 0.2, rng.random((7, 3))
    with sa.default_mesh(sa.Mesh(shape)):
        A, B, F = xp.asarray(a), xp.asarray(b), xp.asarray(f)
        cases = [
            (A @ B, a @ b),
            (xp.matmul(A, F), a @ f),
            (xp.matmul(A[0], B), a[0] @ b),
            (xp.tensordot(A, B, axes=1), np.tensordot(a, b, 1)),
            (xp.vecdot(A, A), np.vecdot(a, a)),
        ]
    for got, want in cases:
        g = got.numpy()
        assert g.dtype == want.dtype
        np.testing.assert_array_equal(g, want)
