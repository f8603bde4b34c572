"""Regressions found by differential fuzzing of the training seams (round 6): layers, configs, optimizers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa

SHAPES = MESH_SHAPES + [{"p": 3, "q": 2}]
# deviations of 300: their squares (9e4) overflow float16, whose largest value is 65504
X = np.array([[0.0, 300.0, -300.0, 10.0, 7.0], [1.0, 2.0, 3.0, 4.5, -1.0], [5.0, 5.0, 5.0, 5.0, 5.0]])
GAIN = np.array([1.0, 2.0, 0.5, -1.0, 3.0])
BIAS = np.array([0.0, 0.25, -0.5, 1.0, 2.0])
COT = np.array([[1.0, -2.0, 0.5, 3.0, 1.0], [1.0, 1.0, -1.0, 2.0, 0.5], [0.5, -0.5, 2.0, 1.0, -1.0]])
LOW = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _layouts(mesh):
    """d_model unsplit (the fused row path where it exists) and split over every mesh axis (uneven blocks)."""
    axes = mesh.axis_names
    return [{"batch": axes[0]}, {"d_model": axes}]


def _reference(dtype):
    """Layer norm and its VJP of the 16-bit inputs, in float64, rounded once to ``dtype``."""
    x, w, b, c = (np.asarray(a).astype(LOW[dtype]).astype(np.float64) for a in (X, GAIN, BIAS, COT))
    xc = x - x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5)
    xhat = xc * rstd
    gh = c * w
    dx = rstd * (gh - gh.mean(-1, keepdims=True) - xhat * (gh * xhat).mean(-1, keepdims=True))
    return (xhat * w + b, dx, (c * xhat).sum(0), c.sum(0))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_layer_norm_of_16_bit_inputs_computes_in_float32_on_every_layout(shape, dtype):
    # float16 x normalized in float16 overflowed its squared deviations (rstd 0: the row came out as the bias,
    # silently) where the fused kernel and other layouts computed in float32; now every path computes in float32
    # and rounds once, so the values do not depend on the layout or backend
    mesh = sa.Mesh(shape)
    want_y, want_dx, want_dw, want_db = _reference(dtype)
    w = sa.asarray(GAIN, dims=("d_model",), mesh=mesh).astype(dtype)
    b = sa.asarray(BIAS, dims=("d_model",), mesh=mesh).astype(dtype)
    outs = []
    for layout in _layouts(mesh):
        x = sa.asarray(X, dims=("batch", "d_model"), mesh=mesh, layout=layout).astype(dtype)
        c = sa.asarray(COT, dims=("batch", "d_model"), mesh=mesh, layout=layout).astype(dtype)
        y = sa.nn.layer_norm(x, w, b)
        assert y.dtype == np.dtype(LOW[dtype]) and y.layout == x.layout
        dx, dw, db = sa.grad(lambda t, c=c: sa.sum((sa.nn.layer_norm(*t) * c).astype("float64")))((x, w, b))
        assert (dx.dtype, dw.dtype, db.dtype) == (y.dtype,) * 3
        got = [np.asarray(a.numpy(), dtype=np.float64) for a in (y, dx, dw, db)]
        tol = 1e-2 if dtype == "bfloat16" else 2e-3
        for g, want in zip(got, (want_y, want_dx, want_dw, want_db)):
            np.testing.assert_allclose(g, want, rtol=tol, atol=tol * (1 + np.abs(want).max()))
        outs.append(got[0])
    np.testing.assert_array_equal(outs[0], outs[1])  # the value is rounded once from float32 on every layout


def test_layer_norm_of_16_bit_inputs_keeps_numpy_promotion_with_wider_gains():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(X, dims=("batch", "d_model"), mesh=mesh, layout={"d_model": "col"}).astype("float16")
    w32 = sa.asarray(GAIN, dims=("d_model",), mesh=mesh).astype("float32")
    b16 = sa.asarray(BIAS, dims=("d_model",), mesh=mesh).astype("float16")
    y = sa.nn.layer_norm(x, w32, b16)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), _reference("float16")[0], rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_transformer_config_takes_numpy_integers(shape):
    # sizes computed from data are NumPy integers (vocab = tokens.max() + 1): they were refused as "not a positive
    # integer"; they are taken and stored as Python ints, as init_transformer's seed and the schedules take them
    tokens = np.arange(12).reshape(3, 4) % 7
    cfg = sa.nn.TransformerConfig(
        vocab=tokens.max() + 1,
        d_model=np.int32(4),
        heads=np.int64(2),
        d_kv=2,
        d_ff=4,
        n_layers=np.uint8(1),
        seq_len=tokens.shape[1],
        eps=np.float32(1e-5),
    )
    assert all(type(getattr(cfg, f)) is int for f in ("vocab", "d_model", "heads", "n_layers"))
    assert type(cfg.eps) is float and cfg == sa.nn.TransformerConfig(
        vocab=7, d_model=4, heads=2, d_kv=2, d_ff=4, n_layers=1, seq_len=4, eps=float(np.float32(1e-5))
    )
    mesh = sa.Mesh(shape)
    params = sa.nn.init_transformer(cfg, mesh, seed=np.int64(1))
    t = sa.asarray(tokens, dims=("batch", "seq"), mesh=mesh)
    assert np.isfinite(float(sa.nn.transformer_loss(params, t, t, cfg)))
    for bad, field in ((np.int64(0), "vocab"), (np.float64(4.0), "d_model"), (np.int8(-1), "n_layers")):
        with pytest.raises(sa.DimensionError, match=rf"TransformerConfig\.{field}"):
            sa.nn.TransformerConfig(**{field: bad})
    with pytest.raises(sa.ArgumentError, match=r"TransformerConfig\.eps"):
        sa.nn.TransformerConfig(eps=np.float32("nan"))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_loss_scale_apply_with_max_norm_takes_finite_float64_gradients_beyond_1e154(shape):
    # their float64 squares overflow: apply(max_norm=...) took the infinite squared norm for an overflow, skipped
    # the step and backed off the scale, where clip_by_global_norm then update (its documented pieces) applied it
    mesh = sa.Mesh(shape)
    layout = {"i": mesh.axis_names[-1]}
    w = {"w": sa.ones(mesh, {"i": 5}, "float64", layout=layout), "b": sa.ones(mesh, {"j": 2}, "float64")}
    g = {"w": sa.full(mesh, {"i": 5}, 1e160, "float64", layout=layout), "b": sa.full(mesh, {"j": 2}, -3e159, "float64")}
    scaler, opt = sa.optim.DynamicLossScale(init_scale=2.0), sa.optim.SGD(lr=0.5)
    ls = scaler.init()
    with sa.comm_log() as log:
        new, _, ls = scaler.apply(opt, w, g, opt.init(w), ls, max_norm=1.0)
    assert ls["finite"] and ls["skipped"] == 0 and ls["scale"] == 2.0
    want, _ = opt.update(w, sa.optim.clip_by_global_norm(scaler.unscale(g, scaler.init())[0], 1.0), opt.init(w))
    for k in w:
        np.testing.assert_allclose(new[k].numpy(), want[k].numpy(), rtol=1e-12)
    assert len(log) <= (3 if mesh.size > 1 else 0)  # the squares, then the largest magnitude and the scaled squares
    for bad in (np.inf, np.nan):
        g["b"] = sa.full(mesh, {"j": 2}, bad, "float64")
        same, _, ls = scaler.apply(opt, w, g, opt.init(w), scaler.init(), max_norm=1.0)
        assert not ls["finite"] and ls["scale"] == 1.0 and same is w
