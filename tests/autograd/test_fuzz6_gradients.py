"""Regressions found by the sixth fuzzing round of the gradients (random op compositions against finite differences)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp

SHAPES = MESH_SHAPES + [{"p": 3, "q": 2}]


def _split(mesh, ndim):
    """A layout of a positional array over every mesh axis: dim0 over the first axis, dim1 over the others."""
    axes = mesh.axis_names
    layout = {"dim0": axes[0]}
    if ndim > 1 and len(axes) > 1:
        layout["dim1"] = axes[1:]
    return layout


OUTPUTS = {  # outputs whose internal dim names are not the cotangent's (dim0, dim1, ...)
    "matrix_transpose": lambda p: xp.matrix_transpose(p),  # ("dim1", "dim0") with a square p: a silent transpose
    "sum_axis0": lambda p: xp.sum(p, axis=0),
    "slice_newaxis": lambda p: p[1:, None] * 2.0,
    "reshape": lambda p: xp.reshape(xp.sin(p), (5, 3)),
}


@pytest.mark.parametrize("out", OUTPUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_vjp_matches_a_positional_cotangent_by_position(shape, out):
    """``sa.vjp`` of a positional output takes a positional cotangent of the output's shape, matched by position as
    NumPy's arrays are (it matched the internal dim names: a DimensionError, or, for a transposed square output, the
    cotangent silently transposed). The pullback equals the gradient of ``sum(f(p) * cotangent)``."""
    mesh = sa.Mesh(shape)
    fn = OUTPUTS[out]
    n = 5 if out == "matrix_transpose" else 3
    rng = np.random.default_rng(0)
    with sa.default_mesh(mesh):
        p = xp.asarray(rng.standard_normal((n, 5)))
        p = sa.relayout(p, _split(mesh, 2))
        assert type(p) is xp.Array and p.layout
        y, pullback = sa.vjp(fn, p)
        cotangent = xp.asarray(rng.standard_normal(y.shape))
        g = pullback(cotangent)
        expected = sa.grad(lambda q: xp.sum(fn(q) * cotangent))(p)
    assert type(g) is xp.Array and g.layout == p.layout
    np.testing.assert_allclose(np.asarray(g.numpy()), np.asarray(expected.numpy()), rtol=1e-12, atol=1e-12)


def test_vjp_refuses_a_positional_cotangent_of_another_shape():
    mesh = sa.Mesh({"row": 2, "col": 2})
    with sa.default_mesh(mesh):
        _, pullback = sa.vjp(lambda p: xp.matrix_transpose(p), xp.ones((2, 3)))
        with pytest.raises(sa.DimensionError, match=r"the output's shape \(3, 2\); got shape \(2, 3\)"):
            pullback(xp.ones((2, 3)))


@pytest.mark.parametrize("positional", [False, True], ids=["named", "positional"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_power_gradients_at_a_zero_base(shape, positional):
    """``x ** 0`` is constant and ``0 ** y`` is 0 for every ``y > 0``: their gradients at a zero base are 0, as
    JAX's (they were NaN: ``0 * 0^-1`` and ``0 * log 0``), so a polynomial ``sum(x ** arange(n))`` has its finite
    gradient at ``x = 0``. Elsewhere the gradients are unchanged (``b x^(b-1)``, ``x^y log x``)."""
    mesh = sa.Mesh(shape)
    base = np.array([0.0, 0.0, 0.5, 1.5, 2.0, 0.0, 3.0])
    exps = np.array([0.0, 1.0, 2.0, 3.0, 0.5, 2.5, 0.0])
    layout = {"i": mesh.axis_names[0]}
    x = sa.asarray(base, dims=("i",), mesh=mesh, layout=layout)
    y = sa.asarray(exps, dims=("i",), mesh=mesh, layout=layout)
    k = sa.asarray(np.arange(4.0), dims=("k",), mesh=mesh)
    if positional:
        x, y = xp.asarray(x), xp.asarray(y)
        with sa.default_mesh(mesh):
            poly = sa.grad(lambda p: xp.sum(p[:, None] ** xp.arange(4.0)))(x)
    else:
        poly = sa.grad(lambda p: (p**k).sum())(x)
    np.testing.assert_allclose(poly.numpy(), 1 + 2 * base + 3 * base**2, rtol=1e-12)
    gx, gy = sa.grad(lambda p: (p[0] ** p[1]).sum() + (p[0] ** 0.0).sum())((x, y))
    with np.errstate(divide="ignore", invalid="ignore"):
        expect_x = np.where(exps == 0, 0.0, exps * base ** (exps - 1))
        expect_y = np.where(base == 0, 0.0, base**exps * np.log(np.where(base == 0, 1.0, base)))
    np.testing.assert_allclose(gx.numpy(), expect_x, rtol=1e-12)
    np.testing.assert_allclose(gy.numpy(), expect_y, rtol=1e-12)
    assert type(gx) is type(x) and type(gy) is type(y)
