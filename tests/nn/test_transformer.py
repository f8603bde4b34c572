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


def setup(strategy, shape, cfg=CFG, dtype="float64", batch=BATCH):
    mesh = sa.Mesh(shape, rules=sa.nn.strategy_rules(strategy, shape))
    # tesseract's weights have layouts of their own (not rules): name the strategy
    params = sa.nn.init_transformer(cfg, mesh, strategy="tesseract" if strategy == "tesseract" else None,
                                    seed=3, dtype=dtype)
    tok, tgt = data(cfg, batch)
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


# sizes that divide into Tesseract's blocks, so every matmul runs as Tesseract
CFG_T = sa.nn.TransformerConfig(vocab=36, d_model=8, heads=2, d_kv=3, d_ff=12, n_layers=2, seq_len=5)
TESSERACT_RUNS = [
    {"row": 2, "col": 2, "dep": 2},
    {"row": 2, "col": 2, "dep": 1},
    {"data": 2, "row": 2, "col": 2, "dep": 1},
]


@pytest.mark.parametrize("shape", TESSERACT_RUNS, ids=str)
def test_tesseract_strategy_equals_the_replicated_model(shape):
    _, params, tokens, targets = setup("replicated", {"x": 1}, CFG_T, batch=8)
    ref_loss, ref_grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, CFG_T)
    mesh, params, tokens, targets = setup("tesseract", shape, CFG_T, batch=8)
    with sa.comm_log() as log:
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, CFG_T)
    np.testing.assert_allclose(float(loss), float(ref_loss), rtol=1e-12)
    for name, g in grads.items():
        assert g.layout == params[name].layout and not g.pending, name
        np.testing.assert_allclose(g.numpy(), ref_grads[name].numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    # Fig. 5's layouts: activations [b/(dq), s, h/q], weights [h/q, 4h/q] replicated over depth
    assert params["layer0.mlp.w_in"].layout == {"d_model": ("row",), "d_ff": ("col",)}
    assert params["layer0.attn.wo"].layout == {"heads": ("row",), "d_model": ("col",)}
    assert tokens.layout["batch"] == tuple(a for a in ("data", "dep", "row") if a in shape)
    # every weight matrix ran as Tesseract: q reduces for dX and q for dW, one dW allreduce over
    # depth (and data) each; besides broadcasts and reduces only allreduces (layer norm and
    # softmax rows, gradients of replicated vectors)
    outer = tuple(a for a in ("data", "dep") if a in shape)
    n_matrices = CFG_T.n_layers * 6 + 1
    assert sum(1 for r in log if r.op == "reduce") == n_matrices * 2 * shape["row"]
    dw_allreduces = sum(1 for r in log if r.op == "allreduce" and r.axes == outer)
    assert dw_allreduces == (n_matrices if mesh.axes_size(outer) > 1 else 0)
    assert {r.op for r in log} == {"broadcast", "reduce", "allreduce"}, log.summary()


def test_tesseract_strategy_stays_correct_when_sizes_do_not_divide():
    # vocab 37 does not split into q=2 equal blocks: the unembedding falls back to allreduce
    _, params, tokens, targets = setup("replicated", {"x": 1})
    ref_loss, ref_grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, CFG)
    _, params, tokens, targets = setup("tesseract", {"row": 2, "col": 2, "dep": 2}, batch=4)
    loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, CFG)
    np.testing.assert_allclose(float(loss), float(ref_loss), rtol=1e-12)
    for name, g in grads.items():
        np.testing.assert_allclose(g.numpy(), ref_grads[name].numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_parameters_are_the_same_global_values_for_every_strategy():
    _, ref, _, _ = setup("replicated", {"x": 1})
    for strategy, shape in RUNS[1:] + [("tesseract", TESSERACT_RUNS[0])]:
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
    ("tesseract", {"row": 2, "col": 2}, "missing ('dep',)"),
    ("tesseract", {"row": 2, "col": 4, "dep": 1}, "row=2, col=4"),
    ("tesseract", {"row": 2, "col": 2, "dep": 4}, "dep=4"),
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


def test_bfloat16_parameters_and_their_plans():
    """``init_transformer(dtype="bfloat16")`` was refused ("parameters need a float dtype": bfloat16's NumPy kind
    is "V"), and so were the planner's named plans and explanations of bfloat16 parameters."""
    cfg = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
    params = sa.nn.init_transformer(cfg, sa.Mesh({"row": 2, "col": 2}), dtype="bfloat16")
    assert all(p.dtype.name == "bfloat16" for p in params.values())
    assert sa.plan.named_plans(cfg, 4, {"row": 2, "col": 2}, dtype="bfloat16")
