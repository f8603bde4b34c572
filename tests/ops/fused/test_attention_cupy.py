"""The fused causal attention on CuPy shards (issue 29 item 3): the same op as on NumPy, through the array module.

Run on the strict CuPy stand-in (``tests/support/strict_cupy.py``: no NumPy call on a device array succeeds, the
softmax kernels run as models of ``kernels/softmax.cu``, the products run on the fake cuBLAS), on one GPU and on
four GPUs with NCCL, with the fused kernels on and off; values and gradients equal the NumPy mesh's.
"""

from __future__ import annotations

import numpy as np
import pytest
from fake_gpu import FakeCupy
from helpers import rand

import shardarray as sa
from shardarray.ops.fused import attention as att

SIZES = (3, 5, 4, 2)  # batch, seq, heads, d_kv
SCALE = 0.6


def _arrays(mesh, layout):
    b, s, h, d = SIZES
    q = sa.asarray(rand((b, s, h, d), 20), dims=att.Q_DIMS, mesh=mesh, layout=layout)
    k, v = (sa.asarray(rand((b, s, h, d), 20 + i), dims=att.KV_DIMS, mesh=mesh, layout=layout) for i in (1, 2))
    probe = sa.asarray(rand((b, s, h, d), 23), dims=att.Q_DIMS, mesh=mesh, layout=layout)
    return {"q": q, "k": k, "v": v}, probe


def _value_and_grads(mesh, layout):
    params, probe = _arrays(mesh, layout)
    assert att.ready(params["q"], params["k"], params["v"])

    def loss(p):
        return (att.causal_attention(p["q"], p["k"], p["v"], SCALE) * probe).sum()

    with sa.comm_log() as log:
        out = att.causal_attention(params["q"], params["k"], params["v"], SCALE)
    assert len(log) == 0, log.summary()  # per block: no collectives
    val, grads = sa.value_and_grad(loss)(params)
    return out, float(val), grads


@pytest.mark.parametrize("kernels", ["1", "0"])
@pytest.mark.parametrize("devices", [None, [0, 1, 2, 3]], ids=["one-gpu", "four-gpus-nccl"])
@pytest.mark.parametrize("layout", [{}, {"batch": "row", "heads": "col"}, {"heads": ("row", "col")}], ids=str)
def test_fused_attention_runs_on_cupy_shards(monkeypatch, kernels, devices, layout):
    monkeypatch.setenv("SHARDARRAY_KERNELS", kernels)
    ref_out, ref_val, ref_grads = _value_and_grads(sa.Mesh({"row": 2, "col": 2}, backend="numpy"), layout)
    gpu = FakeCupy(gpus=4, strict=True).install(monkeypatch)
    import cupy

    mesh = sa.Mesh({"row": 2, "col": 2}, backend="cupy", devices=devices)
    out, val, grads = _value_and_grads(mesh, layout)
    assert all(type(s) is cupy.ndarray for s in out.shards)  # device arrays, never NumPy ones
    assert all(type(s) is cupy.ndarray for g in grads.values() for s in g.shards)
    np.testing.assert_allclose(out.numpy(), ref_out.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(val, ref_val, rtol=1e-12)
    for name in ref_grads:
        np.testing.assert_allclose(grads[name].numpy(), ref_grads[name].numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)
    assert gpu.gemms and all(g["dtype"] == "float64" for g in gpu.gemms)  # the products are cuBLAS gemms
    launched = {x["name"] for x in gpu.launches}
    if kernels == "1":
        # the scale folded into the softmax's backward (the products read the (b, s, h, d) blocks in place)
        assert {"causal_softmax_fwd_f64", "softmax_bwd_f64"} <= launched, launched
    else:
        assert not launched


@pytest.mark.parametrize("kernels", ["1", "0"])
def test_transformer_layer_takes_the_fused_attention_on_cupy(monkeypatch, kernels):
    """``sa.nn`` attention on CuPy float32 shards runs the fused op; loss and gradients equal the array path's."""
    monkeypatch.setenv("SHARDARRAY_KERNELS", kernels)
    FakeCupy(gpus=1, strict=True).install(monkeypatch)
    cfg = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=6)
    shape = {"rows": 2, "cols": 2}
    mesh = sa.Mesh(shape, backend="cupy", rules=sa.nn.strategy_rules("mesh2d", shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy="mesh2d", seed=0)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), 4, cfg.seq_len, cfg.vocab)
    tokens, targets = (sa.asarray(t, dims=("batch", "seq"), mesh=mesh) for t in (tok, tgt))
    step = sa.value_and_grad(sa.nn.transformer_loss)
    calls = []
    real = att.causal_attention
    monkeypatch.setattr(att, "causal_attention", lambda *a: calls.append(1) or real(*a))
    loss, grads = step(params, tokens, targets, cfg)
    assert calls, "the fused attention was not taken on CuPy shards"
    monkeypatch.setattr(att, "ready", lambda *a: False)
    ref_loss, ref = step(params, tokens, targets, cfg)
    np.testing.assert_allclose(float(loss), float(ref_loss), rtol=1e-5)
    for name in ref:
        np.testing.assert_allclose(grads[name].numpy(), ref[name].numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_not_ready_for_16_bit_cupy_shards(monkeypatch):
    """float16/bfloat16 attention keeps the array path (scores widened to float32 there)."""
    FakeCupy(gpus=1, strict=True).install(monkeypatch)
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="cupy")
    params, _ = _arrays(mesh, {"heads": "col"})
    assert att.ready(params["q"], params["k"], params["v"])
    q, k, v = (params[n].astype("float16") for n in "qkv")
    assert not att.ready(q, k, v)
