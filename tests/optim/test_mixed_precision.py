"""Mixed-precision transformer: float32 parameters, 16-bit einsums and activations, float32 loss.

Stated tolerances (``EPS``: the dtype's machine epsilon, 2^-8 for bfloat16, 2^-11 for float16): across the
five strategies and against the float32 model, the loss agrees to ``EPS / 4`` relative and every parameter's
gradient to ``10 EPS`` in relative L2 norm (measured: bfloat16 1e-4 and 2.2e-2, float16 4e-5 and 2.8e-3).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shardarray as sa

CFG = sa.nn.TransformerConfig(vocab=37, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=2, seq_len=8)
RUNS = [
    ("replicated", {"x": 1}),
    ("data", {"data": 4}),
    ("megatron", {"data": 2, "model": 2}),
    ("mesh2d", {"rows": 2, "cols": 2}),
    ("tesseract", {"row": 2, "col": 2, "dep": 2}),
]
EPS = {"bfloat16": 2.0**-8, "float16": 2.0**-11}
LOW = list(EPS)


def run(strategy, shape, compute_dtype, comm=False):
    cfg = dataclasses.replace(CFG, compute_dtype=compute_dtype)
    mesh = sa.Mesh(shape, rules=sa.nn.strategy_rules(strategy, shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy="tesseract" if strategy == "tesseract" else None, seed=3)
    seqs = np.random.default_rng(0).integers(0, cfg.vocab, (8, cfg.seq_len + 1))
    tokens = sa.asarray(seqs[:, :-1], dims=("batch", "seq"), mesh=mesh)
    targets = sa.asarray(seqs[:, 1:], dims=("batch", "seq"), mesh=mesh)
    with sa.comm_log() as log:
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, cfg)
    return params, loss, grads, log


def rel_errors(grads, ref):
    out = {}
    for k, g in grads.items():
        a, b = g.numpy().astype(np.float64), ref[k].numpy().astype(np.float64)
        out[k] = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
    return out


_CACHE: dict = {}


def reference(compute_dtype):
    if compute_dtype not in _CACHE:
        _CACHE[compute_dtype] = run("replicated", {"x": 1}, compute_dtype)
    return _CACHE[compute_dtype]


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("strategy,shape", RUNS[1:], ids=lambda v: str(v))
def test_strategies_agree_to_low_precision_rounding(dtype, strategy, shape):
    _, ref_loss, ref_grads, _ = reference(dtype)
    params, loss, grads, _ = run(strategy, shape, dtype)
    assert loss.dtype == np.float32
    assert float(loss) == pytest.approx(float(ref_loss), rel=EPS[dtype] / 4)
    for k, g in grads.items():   # gradients: the parameters' float32, in the parameters' layouts
        assert g.dtype == np.float32 and g.layout == params[k].layout, k
    worst = max(rel_errors(grads, ref_grads).items(), key=lambda kv: kv[1])
    assert worst[1] <= 10 * EPS[dtype], worst


@pytest.mark.parametrize("dtype", LOW)
def test_low_precision_model_agrees_with_float32(dtype):
    _, loss32, grads32, _ = reference(None)
    _, loss, grads, _ = reference(dtype)
    assert float(loss) == pytest.approx(float(loss32), rel=EPS[dtype] / 4)
    worst = max(rel_errors(grads, grads32).items(), key=lambda kv: kv[1])
    assert worst[1] <= 10 * EPS[dtype], worst
    # and it is really computed in 16 bits: it differs from the float32 model by more than float32 rounding
    assert max(rel_errors(grads, grads32).values()) > 1e-5


@pytest.mark.parametrize("dtype", LOW)
def test_activations_travel_in_16_bits(dtype):
    """The activations' collectives carry 16-bit payloads: about half the float32 model's bytes."""
    *_, log32 = run("mesh2d", {"rows": 2, "cols": 2}, None)
    *_, log16 = run("mesh2d", {"rows": 2, "cols": 2}, dtype)
    assert any(r.dtype == dtype for r in log16.records)
    assert log16.total("bytes") < 0.6 * log32.total("bytes")


def test_logits_and_loss_are_float32_and_parameters_stay_float32():
    cfg = dataclasses.replace(CFG, compute_dtype="bfloat16")
    mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2}))
    params = sa.nn.init_transformer(cfg, mesh, seed=0)
    assert {p.dtype for p in params.values()} == {np.dtype(np.float32)}
    tokens = sa.asarray(np.arange(16).reshape(2, 8) % 37, dims=("batch", "seq"), mesh=mesh)
    assert sa.nn.transformer_logits(params, tokens, cfg).dtype == np.float32


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_training_example_runs_the_policy(dtype, tmp_path):
    out = tmp_path / "m.json"
    cmd = [sys.executable, str(Path(__file__).parents[2] / "examples" / "train_transformer.py"), "--dtype", dtype,
           "--steps", "3", "--d-model", "16", "--d-ff", "32", "--layers", "1", "--seq", "8", "--batch", "4",
           "--vocab", "16", "--eval-batch", "8", "--plot", "", "--quiet", "--json", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    assert f"precision: {dtype} einsums and activations; float32 parameters" in text
    assert ("dynamic loss scale" in text) == (dtype == "float16")
    import json

    metrics = json.loads(out.read_text())
    assert metrics["dtype"] == dtype and len(metrics["losses"]) == 3 and metrics["skipped_steps"] == 0
