"""VJPs of sa.linalg.inv, det and solve against float64 central differences (tests/gradcheck.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gradcheck import check_grad

import shardarray as sa

CASES = [
    ({"d": 1}, {}),
    ({"row": 2, "col": 2}, {"b": "row"}),
    ({"row": 2, "col": 2}, {"i": "row", "j": "col"}),  # split matrix: the replicated fallback
    ({"p": 3, "q": 2}, {"b": "p", "j": "q"}),
    ({"x": 2, "y": 2, "z": 2}, {"b": ("x", "y"), "i": "z"}),
]


@pytest.mark.parametrize("shape,lay", CASES)
def test_inv_det_solve_grads(shape, lay):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    B = rng.standard_normal((3, 4, 2))
    a = sa.asarray(A, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    b = sa.asarray(B, dims=("b", "j", "k"), mesh=mesh)
    w = sa.asarray(rng.standard_normal((3, 4, 4)), dims=("b", "i", "j"), mesh=mesh)
    w2 = sa.asarray(rng.standard_normal((3, 4, 2)), dims=("b", "j", "k"), mesh=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        check_grad(lambda p: sa.sum(sa.linalg.inv(p) * w), a)
        check_grad(lambda p: sa.sum(sa.linalg.det(p) ** 2), a, rtol=1e-5)
        check_grad(lambda p: sa.sum(sa.linalg.solve(p["a"], p["b"], b_dims=("j", "k")) * w2), {"a": a, "b": b})
