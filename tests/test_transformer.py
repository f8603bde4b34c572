"""The reference transformer: gradients, strategies, Mesh-TF Table 2 parameter counts."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from gradcheck import check_grad

CFG = sa.nn.TransformerConfig(vocab=37, d_model=8, heads=2, d_kv=3, d_ff=10, n_layers=2, seq_len=5)
BATCH = 4

# (strategy, mesh shape): every layout family the issue names
RUNS = [
    ("replicated", {"x": 1}),
    ("data", {"data": 4}),
    ("megatron", {"model": 2}),
    ("megatron", {"data": 2, "model": 2}),
    ("mesh2d", {"rows": 2, "cols": 2}),
    ("data", {"a": 2, "b": 2, "c": 2}),
]


def data(cfg=CFG, batch=BATCH, seed=0):
    rng = np.random.default_rng(seed)
    seqs = rng.integers(0, cfg.vocab, (batch, cfg.seq_len + 1))
    return seqs[:, :-1], seqs[:, 1:]


def setup(strategy, shape, cfg=CFG, dtype="float64"):
    mesh = sa.Mesh(shape, rules=sa.nn.strategy_rules(strategy, shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy=None, seed=3, dtype=dtype)
    tok, tgt = data(cfg)
    tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
    targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
    return mesh, params, tokens, targets


def test_transformer_gradient_matches_finite_differences():
    _, params, tokens, targets = setup("mesh2d", {"rows": 2, "cols": 2})
    check_grad(sa.nn.transformer_loss, params, tokens, targets, CFG, directions=3, rtol=1e-5)


def reference():
    _, params, tokens, targets = setup("replicated", {"x": 1})
    return sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, CFG)


@pytest.mark.parametrize("strategy,shape", RUNS, ids=lambda v: str(v))
def test_loss_and_gradients_identical_across_strategies(strategy, shape):
    ref_loss, ref_grads = reference()
    mesh, params, tokens, targets = setup(strategy, shape)
    with sa.comm_log() as log:
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, CFG)
    np.testing.assert_allclose(float(loss), float(ref_loss), rtol=1e-12)
    assert set(grads) == set(ref_grads)
    for name, g in grads.items():
        assert g.layout == params[name].layout, name
        np.testing.assert_allclose(g.numpy(), ref_grads[name].numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    if mesh.size > 1:
        assert len(log) > 0
    # only allreduces; where the vocab is split it is never gathered: every buffer is
    # smaller than this device's block of the logits
    assert {r.op for r in log} <= {"allreduce"}, log.summary()
    if strategy in ("megatron", "mesh2d"):
        local_logits = tokens.nbytes_per_device // tokens.dtype.itemsize * -(-CFG.vocab // 2)
        assert all(r.elements < local_logits for r in log), log.summary()


def test_parameters_are_the_same_global_values_for_every_strategy():
    _, ref, _, _ = setup("replicated", {"x": 1})
    for strategy, shape in RUNS[1:]:
        _, params, _, _ = setup(strategy, shape)
        assert list(params) == list(ref)
        for name in ref:
            np.testing.assert_array_equal(params[name].numpy(), ref[name].numpy())


def test_strategy_layouts():
    _, p, _, _ = setup("mesh2d", {"rows": 2, "cols": 2})
    assert p["layer0.attn.wq"].layout == {"heads": ("cols",)}
    assert p["layer0.mlp.w_in"].layout == {"d_ff": ("cols",)}
    assert p["unembed"].layout == {"vocab": ("cols",)}
    assert p["pos"].layout == {}
    _, p, tokens, _ = setup("data", {"data": 4})
    assert all(not v.layout for v in p.values()) and tokens.layout == {"batch": ("data",)}
    mesh = sa.Mesh({"data": 2, "model": 2})
    p = sa.nn.init_transformer(CFG, mesh, strategy="megatron")
    assert p["layer1.attn.wo"].layout == {"heads": ("model",)}


@pytest.mark.parametrize("strategy,shape,needle", [
    ("megatron", {"rows": 2, "cols": 2}, "'model'"),
    ("mesh2d", {"model": 4}, "('rows', 'cols')"),
    ("mesh2d", {"rows": 2, "cols": 2, "z": 2}, "'z'"),
    ("tensor", {"x": 2}, "unknown strategy"),
])
def test_strategy_checks_the_mesh(strategy, shape, needle):
    with pytest.raises(sa.LayoutError) as e:
        sa.nn.init_transformer(CFG, sa.Mesh(shape), strategy=strategy)
    assert needle in str(e.value)


@pytest.mark.parametrize("d_ff,heads,billions", [
    (4096, 4, 0.14), (8192, 8, 0.22), (16384, 16, 0.37), (32768, 32, 0.67),
    (65536, 64, 1.28), (131072, 128, 2.48), (262144, 256, 4.90),
])
def test_param_count_reproduces_mesh_tf_table_2(d_ff, heads, billions):
    cfg = sa.nn.TransformerConfig(vocab=32768, d_model=1024, heads=heads, d_kv=256, d_ff=d_ff, n_layers=6, seq_len=256)
    assert round(sa.nn.param_count(cfg) / 1e9, 2) == billions
    # and the count equals the sizes of the parameters actually built (on the meta backend)
    if d_ff == 4096:
        params = sa.nn.init_transformer(cfg, sa.Mesh({"rows": 2, "cols": 2}, backend="meta"), strategy="mesh2d")
        assert sum(p.size for p in params.values()) == sa.nn.param_count(cfg)


def test_bad_tokens_are_explained():
    mesh, params, tokens, targets = setup("replicated", {"x": 1})
    with pytest.raises(sa.DimensionError, match="seq_len 5"):
        sa.nn.transformer_loss(params, sa.asarray(np.zeros((2, 3), int), dims=("batch", "seq"), mesh=mesh), targets, CFG)
    with pytest.raises(sa.DTypeError, match="integer"):
        sa.nn.transformer_loss(params, targets.astype("float64"), targets, CFG)
