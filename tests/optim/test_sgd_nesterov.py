"""SGD(nesterov=True) against PyTorch's formula (v = mu v + g; p -= lr (g + mu v)), on every mesh and dtype."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from helpers import MESH_SHAPES


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-13), ("float32", 1e-6), ("bfloat16", 1e-6)])
def test_nesterov_steps_follow_the_formula(shape, dtype, tol):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(0)
    w0, grads = rng.standard_normal((5, 3)), [rng.standard_normal((5, 3)) for _ in range(3)]
    axis = tuple(shape)[0]
    w = {"w": sa.asarray(w0, dims=("a", "b"), mesh=mesh, layout={"a": axis}).astype(dtype)}
    opt = sa.optim.SGD(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
    state = opt.init(w)
    p = np.asarray(w["w"].numpy(), np.float64)  # the float32 master copy of bfloat16 starts from the rounded values
    v = np.zeros_like(p)
    for g in grads:
        gd = sa.asarray(g, dims=("a", "b"), mesh=mesh, layout={"a": axis}).astype(dtype)
        w, state = opt.update(w, {"w": gd}, state)
        gh = np.asarray(gd.numpy(), np.float64)
        v = 0.9 * v + gh
        p = p * (1 - 0.1 * 0.01) - 0.1 * (gh + 0.9 * v)
    got = state["master"]["['w']"].numpy() if dtype == "bfloat16" else w["w"].numpy()  # (keyed by key path)
    np.testing.assert_allclose(np.asarray(got, np.float64), p, rtol=tol, atol=tol)


def test_nesterov_differs_from_heavy_ball_and_needs_momentum():
    mesh = sa.Mesh({"d": 1})
    w = {"w": sa.ones(mesh, {"i": 3}, dtype="float64")}
    g = {"w": sa.ones(mesh, {"i": 3}, dtype="float64")}
    plain, nest = sa.optim.SGD(0.1, momentum=0.5), sa.optim.SGD(0.1, momentum=0.5, nesterov=True)
    a, _ = plain.update(w, g, plain.init(w))
    b, _ = nest.update(w, g, nest.init(w))
    np.testing.assert_allclose(a["w"].numpy(), 0.9)  # 1 - 0.1 * v, v = 1
    np.testing.assert_allclose(b["w"].numpy(), 0.85)  # 1 - 0.1 * (g + 0.5 v)
    with pytest.raises(sa.ArgumentError, match="needs a momentum"):
        sa.optim.SGD(0.1, nesterov=True)
    with pytest.raises(sa.ArgumentError, match="True or False"):
        sa.optim.SGD(0.1, momentum=0.9, nesterov="yes")
