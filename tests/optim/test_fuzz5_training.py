"""Regressions found by differential fuzzing of training: optimizers, layers and gradients against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import like_kind

SHAPES = MESH_SHAPES + [{"p": 3, "q": 2}]
OPTIMIZERS = [
    sa.optim.SGD(lr=0.1, weight_decay=0.1),
    sa.optim.SGD(lr=0.1, momentum=0.9),
    sa.optim.Adam(lr=0.1, weight_decay=0.1),
]


def _split_all(mesh):
    """A layout of dims (i, j) using every mesh axis: i over the first axis, j over the others."""
    axes = mesh.axis_names
    return {"i": axes[0], "j": axes[1:]} if len(axes) > 1 else {"i": axes[0]}


def _expected(opt, p, g):
    """One step of ``opt`` from a fresh state, in float64 NumPy."""
    if isinstance(opt, sa.optim.SGD):
        return p * (1 - opt.lr * opt.weight_decay) - opt.lr * g
    m_hat, v_hat = g, g * g  # first step: the bias corrections cancel (1 - b)
    return p * (1 - opt.lr * opt.weight_decay) - opt.lr * m_hat / (np.sqrt(v_hat) + opt.eps)


@pytest.mark.parametrize("opt", OPTIMIZERS, ids=repr)
@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
@pytest.mark.parametrize("positional", [False, True], ids=["named", "positional"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_update_keeps_the_params_layout_when_grads_have_another(shape, positional, dtype, opt):
    # a replicated parameter and a gradient split over every axis (uneven blocks): the new parameter and the state
    # stay replicated like the parameter (an elementwise update would take the gradient's split)
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(0)
    pv, gv = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    kind = xp.asarray(np.zeros(1), device=mesh) if positional else None
    p = like_kind(sa.asarray(pv, dims=("i", "j"), mesh=mesh).astype(dtype), kind)
    g = like_kind(sa.asarray(gv, dims=("i", "j"), mesh=mesh, layout=_split_all(mesh)).astype(dtype), kind)
    state = opt.init({"w": p})
    new, state = opt.update({"w": p}, {"w": g}, state)
    moments = [state[k]["w"] for k in ("m", "v", "velocity") if state.get(k)]
    for out in (new["w"], *moments, *(state["master"] or {}).values()):
        assert out.layout == p.layout == {} and type(out) is type(p), (out.layout, type(out))
    rtol = 1e-12 if dtype == "float64" else 2e-2
    want = _expected(opt, np.asarray(p.astype("float64")), np.asarray(g.astype("float64")))
    np.testing.assert_allclose(np.asarray(new["w"].astype("float64")), want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("opt", OPTIMIZERS, ids=repr)
def test_update_refuses_grads_on_another_mesh(opt):
    mesh, other = sa.Mesh({"x": 2}), sa.Mesh({"y": 2})
    p = sa.asarray(np.ones(4), dims=("i",), mesh=mesh)
    g = sa.asarray(np.ones(4), dims=("i",), mesh=other, layout={"i": "y"})
    with pytest.raises(sa.MeshError, match=r"grads\['w'\] lives on"):
        opt.update({"w": p}, {"w": g}, opt.init({"w": p}))


@pytest.mark.parametrize("make", [sa.optim.Adam, lambda **kw: sa.optim.SGD(momentum=0.5, **kw)], ids=["Adam", "SGD"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_moments_of_a_float64_master_are_float64_from_the_start(shape, make):
    # master_dtype="float64": a float32 parameter is updated through a float64 copy, so its moments are float64
    # (the update's arithmetic): at init already, not float32 at init and float64 after the first step
    mesh = sa.Mesh(shape)
    p = {"w": sa.asarray(np.linspace(-1, 1, 7), dims=("i",), mesh=mesh, layout={"i": mesh.axis_names[0]}).astype("f4")}
    opt = make(lr=0.1, master_dtype="float64")
    state = opt.init(p)
    keys = [k for k in ("m", "v", "velocity") if k in state]
    before = [state[k]["w"].dtype for k in keys]
    p, state = opt.update(p, p, state)
    assert before == [state[k]["w"].dtype for k in keys] == [np.dtype("float64")] * len(keys)
    assert p["w"].dtype == np.float32 and state["master"]["['w']"].dtype == np.float64


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_std_gradient_is_zero_not_nan_where_std_is_zero(shape):
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    x = sa.asarray(np.array([[1.0, 2.0, 5.0], [3.0, 3.0, 3.0]]), dims=("i", "j"), mesh=mesh, layout={"j": axes[-1]})
    # std over a size-1 dim is 0 for every x: its gradient is exactly 0; a constant row's std is at a kink: 0
    g = sa.grad(lambda x: sa.sum(sa.std(x, "k") * 2.0) + sa.sum(x * 3.0))(x.expand_dims("k"))
    np.testing.assert_array_equal(g.numpy(), np.full((1, 2, 3), 3.0))
    g = sa.grad(lambda x: sa.sum(sa.std(x, "j")))(x)
    row = np.array([1.0, 2.0, 5.0])
    want = np.stack([(row - row.mean()) / (3 * row.std()), np.zeros(3)])
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_layer_norm_refuses_a_gain_of_another_size(shape):
    mesh = sa.Mesh(shape)
    x = sa.asarray(np.ones((2, 3)), dims=("batch", "d_model"), mesh=mesh)
    ok = sa.ones(mesh, {"d_model": 3}, "float64")
    for gain, bias in ((sa.ones(mesh, {"d_model": 4}, "float64"), ok), (ok, sa.zeros(mesh, {"d_model": 2}, "float64"))):
        with pytest.raises(sa.DimensionError, match="d_model"):
            sa.nn.layer_norm(x, gain, bias)
