"""Optimizers and the main job (examples/train_transformer.py) as a smoke test."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import shardarray as sa
from helpers import backend_name

spec = importlib.util.spec_from_file_location(
    "train_transformer", Path(__file__).parents[2] / "examples" / "train_transformer.py"
)
train_example = importlib.util.module_from_spec(spec)
sys.modules["train_transformer"] = train_example
spec.loader.exec_module(train_example)


def test_adam_learns_a_trivially_predictable_sequence():
    """Tokens 0,1,2,... (next = current + 1 mod vocab): Adam drives the loss towards zero."""
    cfg = sa.nn.TransformerConfig(vocab=8, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
    mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2}))
    params = sa.nn.init_transformer(cfg, mesh, seed=0)
    seqs = (np.arange(4)[:, None] + np.arange(9)[None]) % cfg.vocab
    tokens = sa.asarray(seqs[:, :-1], dims=("batch", "seq"), mesh=mesh)
    targets = sa.asarray(seqs[:, 1:], dims=("batch", "seq"), mesh=mesh)
    opt = sa.optim.Adam(lr=1e-2)
    state = opt.init(params)
    step = sa.value_and_grad(sa.nn.transformer_loss)
    losses = []
    for _ in range(60):
        loss, grads = step(params, tokens, targets, cfg)
        params, state = opt.update(params, grads, state)
        losses.append(float(loss))
    assert losses[0] > 1.5 and losses[-1] < 0.05 * losses[0], losses[::10]
    for name, p in params.items():
        assert state["m"][name].layout == p.layout and state["v"][name].layout == p.layout
    assert float(sa.nn.accuracy(sa.nn.transformer_logits(params, tokens, cfg), targets)) == 1.0


def test_optimizer_updates_match_numpy_formulas():
    mesh = sa.Mesh({"all": 4})
    w0, g0 = np.linspace(-1, 1, 6), np.linspace(2, -3, 6)
    w = sa.asarray(w0, dims=("a",), mesh=mesh, layout={"a": "all"})
    g = sa.asarray(g0, dims=("a",), mesh=mesh, layout={"a": "all"})
    adam = sa.optim.Adam(lr=0.1, b1=0.8, b2=0.9, eps=1e-6, weight_decay=0.01)
    state = adam.init({"w": w})
    p, state = adam.update({"w": w}, {"w": g}, state)
    p, state = adam.update(p, {"w": g}, state)
    m = v = 0.0
    ref = w0.copy()
    for t in (1, 2):
        m = 0.8 * m + 0.2 * g0
        v = 0.9 * v + 0.1 * g0**2
        ref = ref * (1 - 0.1 * 0.01) - 0.1 * (m / (1 - 0.8**t)) / (np.sqrt(v / (1 - 0.9**t)) + 1e-6)
    np.testing.assert_allclose(p["w"].numpy(), ref, rtol=1e-12)
    assert state["step"] == 2 and p["w"].layout == {"a": ("all",)}
    sgd = sa.optim.SGD(lr=0.5, momentum=0.9)
    s = sgd.init([w])
    q, s = sgd.update([w], [g], s)
    q, s = sgd.update(q, [g], s)
    np.testing.assert_allclose(q[0].numpy(), w0 - 0.5 * g0 - 0.5 * (0.9 * g0 + g0), rtol=1e-12)
    with pytest.raises(sa.DTypeError, match="structure"):
        sgd.update([w], {"w": g}, s)


def test_training_example_smoke(tmp_path):
    plot, metrics_file = tmp_path / "curve.png", tmp_path / "metrics.json"
    metrics = train_example.main([
        "--steps", "30", "--d-model", "16", "--heads", "2", "--d-kv", "8", "--d-ff", "32", "--layers", "1",
        "--vocab", "16", "--seq", "12", "--batch", "8", "--eval-batch", "16", "--lr", "1e-2",
        "--plot", str(plot), "--json", str(metrics_file), "--quiet",
    ])
    assert plot.stat().st_size > 1000
    saved = json.loads(metrics_file.read_text())
    assert saved["steps"] == 30 and saved["mesh"] == {"rows": 2, "cols": 2}
    assert metrics["final_loss"] < metrics["first_loss"]
    assert metrics["comm_bytes_per_step_per_device"] > 0
    assert 0.0 <= metrics["held_out_accuracy"] <= 1.0


def test_training_example_refuses_a_mesh_the_strategy_cannot_use():
    with pytest.raises(SystemExit, match="'model'"):
        train_example.main(["--mesh", "rows=2,cols=2", "--strategy", "megatron", "--steps", "1", "--quiet", "--plot", ""])


SMALL = ["--steps", "8", "--d-model", "16", "--heads", "2", "--d-kv", "8", "--d-ff", "32", "--layers", "1",
         "--vocab", "16", "--seq", "12", "--batch", "8", "--eval-batch", "16", "--lr", "1e-2", "--plot", "", "--quiet"]


def test_training_example_graph_flag_gives_the_eager_run():
    """``--graph`` (the step through ``sa.graphed``): on NumPy shards it runs eagerly, so every loss, the accuracy and
    the traffic equal the plain run's; float16's host-side loss scale is refused with it. (On a GPU the replays are
    checked by ``benchmarks/gpu_session.sh main``: the stand-in's graph launches run nothing.)"""
    if backend_name() != "numpy":
        pytest.skip("the replays of a captured graph compute nothing on the CuPy stand-in")
    plain = train_example.main(SMALL)
    graph = train_example.main([*SMALL, "--graph"])
    assert graph["losses"] == plain["losses"] and graph["held_out_accuracy"] == plain["held_out_accuracy"]
    assert graph["comm_bytes_per_step_per_device"] == plain["comm_bytes_per_step_per_device"] > 0
    with pytest.raises(SystemExit, match="--dtype bfloat16"):
        train_example.main([*SMALL, "--graph", "--dtype", "float16"])
