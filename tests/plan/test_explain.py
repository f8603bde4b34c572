"""``sa.plan.explain_*``: the per-op-group table adds up to the plan's totals."""

from __future__ import annotations

import pytest

import shardarray as sa

CFG = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
SHAPE = {"rows": 2, "cols": 2}


@pytest.fixture(scope="module")
def ex():
    return sa.plan.explain_transformer(CFG, 8, SHAPE, {"batch": "rows", "d_ff": "cols"}, "h100", label="mine")


def test_rows_add_up_to_the_plan(ex):
    p = ex.plan
    assert sum(g.time_s for g in ex.groups) == pytest.approx(p.step_time_s, rel=1e-12)
    assert sum(g.compute_time_s for g in ex.groups) == pytest.approx(p.compute_time_s, rel=1e-12)
    assert sum(g.memory_time_s for g in ex.groups) == pytest.approx(p.memory_time_s, rel=1e-12)
    assert sum(g.comm_time_s for g in ex.groups) == pytest.approx(p.comm_time_s, rel=1e-12)
    assert sum(g.flops for g in ex.groups) == pytest.approx(p.flops_per_device, rel=1e-12)
    assert sum(g.comm_bytes for g in ex.groups) == pytest.approx(p.comm_bytes_per_device, rel=1e-12)
    assert sum(g.calls for g in ex.groups) == sum(c["calls"] for c in p.ops.values())
    # the plan is evaluate_layout's
    same = sa.plan.evaluate_layout(sa.plan.transformer_step(CFG, 8), SHAPE, {"batch": "rows", "d_ff": "cols"}, "h100")
    assert same.step_time_s == p.step_time_s


def test_groups_and_collectives(ex):
    names = [g.name for g in ex.groups]
    assert {"einsum forward", "einsum backward", "softmax", "embedding"} <= set(names)
    assert ex.group("einsum forward").flops > 0 and ex.group("softmax").flops == 0
    assert any("(cols)" in k or "(rows)" in k for g in ex.groups for k in g.collectives)
    assert sum(sum(g.collectives.values()) for g in ex.groups) > 0


def test_deltas_against_the_best_named_strategy(ex):
    base = ex.baseline
    assert base is not None and base.plan.label in ("data", "megatron", "mesh2d", "tesseract")
    deltas = [r["delta_s"] for r in ex.rows()]
    assert sum(deltas) == pytest.approx(ex.plan.step_time_s - base.plan.step_time_s, rel=1e-9, abs=1e-15)


def test_the_table_prints(ex):
    text = ex.text()
    assert "einsum backward" in text and "total" in text and "Δ ms" in text and ex.baseline.plan.label in text


def test_explain_layout_on_the_mlp():
    step = sa.plan.mlp_step(batch=64, d_io=32, d_hidden=128)
    e = sa.plan.explain_layout(step, SHAPE, {"batch": "rows", "hidden": "cols"})
    assert e.baseline is None and e.delta_s("einsum forward") is None
    assert e.group("einsum forward").flops + e.group("einsum backward").flops == e.plan.flops_per_device


def test_plot(tmp_path, ex):
    pytest.importorskip("matplotlib")
    ex.plot(str(tmp_path / "ex.png"))
    assert (tmp_path / "ex.png").stat().st_size > 1000
