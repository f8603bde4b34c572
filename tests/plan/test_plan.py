"""The planner: evaluate_layout's model, search_layouts against brute force, the memory limit and the CLI."""

from __future__ import annotations

import itertools
import json
import math

import pytest

import shardarray as sa
from shardarray.bench import run
from shardarray.hardware import get_profile

MESH = {"rows": 2, "cols": 2}
SPLITS = [(), ("rows",), ("cols",), ("rows", "cols"), ("cols", "rows")]


def brute_force(step, sizes, mesh_shape=MESH):
    """Every assignment of every dim to every split (no pruning), priced; illegal ones skipped."""
    dims = sorted(sizes)
    options = [[s for s in SPLITS if math.prod(mesh_shape[a] for a in s) <= sizes[d]] for d in dims]
    plans = []
    for choice in itertools.product(*options):
        rules = {d: s for d, s in zip(dims, choice) if s}
        try:
            plans.append(sa.plan.evaluate_layout(step, mesh_shape, rules))
        except sa.LayoutError:
            continue
    return plans


def distinct_times(plans):
    return sorted({p.step_time_s for p in plans})


def test_plan_adds_up_its_model():
    step = sa.plan.mlp_step(batch=64, d_io=32, d_hidden=128)
    plan = sa.plan.evaluate_layout(step, MESH, {"batch": "rows", "hidden": "cols"}, "h100")
    hw = get_profile("h100")
    assert plan.compute_time_s == pytest.approx(plan.flops_per_device / hw.flop_rate("float32"))
    assert plan.step_time_s == pytest.approx(plan.compute_time_s + plan.memory_time_s + plan.comm_time_s)
    assert plan.comm_time_s > 0 and plan.memory_time_s > 0 and plan.hardware == "h100"
    # 2 layers × (2 forward einsums + 2 weight gradients + 2 input gradients) - the input's own gradient
    b, io, h = 64, 32, 128
    assert plan.flops_per_device == 11 * 2 * (b / 2) * io * (h / 2)
    d = plan.to_dict()
    assert d["rules"] == {"batch": ["rows"], "hidden": ["cols"]} and d["layout"] == "batch:rows hidden:cols"
    json.dumps(d)


def test_mesh_tf_table1_communication_per_layout():
    """Mesh-TF Table 1: data parallel allreduces the weights; model parallel b·d_io per matmul."""
    b, io, h = 64, 32, 128
    step = sa.plan.mlp_step(batch=b, d_io=io, d_hidden=h, layers=1)
    data = sa.plan.evaluate_layout(step, {"all": 4}, {"batch": "all"})
    model = sa.plan.evaluate_layout(step, {"all": 4}, {"hidden": "all"})
    # the gradients of w, bias and v, and the loss's own sum over the batch (1 value)
    assert data.comm_bytes_per_device == 4 * (io * h + h + h * io + 1)
    assert model.comm_bytes_per_device == 4 * (b * io)  # y's allreduce (x needs no gradient: no dx allreduce)


def test_illegal_rules_raise_layout_error():
    step = sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8)
    with pytest.raises(sa.LayoutError) as e:
        sa.plan.evaluate_layout(step, {"all": 2}, {"batch": "all", "hidden": "all"})
    assert "'all'" in str(e.value)
    with pytest.raises(sa.LayoutError):
        sa.plan.evaluate_layout(step, MESH, {"batch": "planes"})
    with pytest.raises(sa.MeshError):
        sa.plan.evaluate_layout(step, [("rows", 2)], {})


def test_search_equals_brute_force_on_the_mlp():
    step = sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8)
    brute = brute_force(step, {"batch": 8, "io": 4, "hidden": 8})
    stats = sa.plan.SearchStats()
    best = sa.plan.search_layouts(step, MESH, top_k=4, stats=stats)
    assert [p.step_time_s for p in best] == distinct_times(brute)[:4]
    assert stats.legal == len(brute) and stats.refused == 0  # the legal set is exactly what runs
    assert stats.stopped_time > 0  # the bound did prune
    full = sa.plan.search_layouts(step, MESH, top_k=4, prune=False)
    assert [(p.rules, p.step_time_s) for p in full] == [(p.rules, p.step_time_s) for p in best]
    assert [p.label for p in best] == ["search #1", "search #2", "search #3", "search #4"]


def test_search_equals_brute_force_on_a_transformer():
    cfg = sa.nn.TransformerConfig(vocab=2, d_model=1, heads=2, d_kv=1, d_ff=2, n_layers=1, seq_len=2)
    step = sa.plan.transformer_step(cfg, batch=2)
    sizes = {"batch": 2, "seq": 2, "kseq": 2, "vocab": 2, "d_model": 1, "heads": 2, "d_kv": 1, "d_ff": 2}
    brute = brute_force(step, sizes)
    best = sa.plan.search_layouts(step, MESH, top_k=3)
    assert [p.step_time_s for p in best] == distinct_times(brute)[:3]
    assert len(sa.plan.candidates(step, MESH)) == len(brute)


def test_search_beats_the_hand_layouts_of_mesh_tf():
    cfg = sa.nn.TransformerConfig(vocab=512, d_model=64, heads=8, d_kv=16, d_ff=256, n_layers=2, seq_len=32)
    step = sa.plan.transformer_step(cfg, batch=16)
    shape = {"rows": 2, "cols": 4}
    best = sa.plan.search_layouts(step, shape, top_k=1)[0]
    named, skipped = sa.plan.named_plans(cfg, 16, shape)
    assert {p.label for p in named} == {"data", "megatron", "mesh2d"} and "tesseract" in skipped
    for hand in named:
        assert best.step_time_s <= hand.step_time_s, hand.label


def test_memory_limit_is_respected_and_an_impossible_one_raises():
    step = sa.plan.mlp_step(batch=32, d_io=16, d_hidden=64)
    free = sa.plan.search_layouts(step, MESH, top_k=50)
    memories = sorted(p.memory_bytes_per_device for p in free)
    limit = memories[len(memories) // 2]
    capped = sa.plan.search_layouts(step, MESH, memory_limit_bytes=limit, top_k=50)
    assert capped and all(p.memory_bytes_per_device <= limit for p in capped)
    assert [p.step_time_s for p in capped] == sorted(p.step_time_s for p in free if p.memory_bytes_per_device <= limit)
    with pytest.raises(ValueError, match="memory") as e:
        sa.plan.search_layouts(step, MESH, memory_limit_bytes=16, top_k=1)
    assert "least memory is" in str(e.value) and "GiB" in str(e.value)
    with pytest.raises(ValueError, match="top_k"):
        sa.plan.search_layouts(step, MESH, top_k=0)


def test_space_legality_matches_what_runs():
    """Rule sets the space leaves out as illegal are exactly those the ops refuse."""
    step = sa.plan.mlp_step(batch=4, d_io=4, d_hidden=4, layers=1)
    legal = {tuple(sorted(r.items())) for r in sa.plan.candidates(step, {"x": 2})}
    for b, i, h in itertools.product([(), ("x",)], repeat=3):
        rules = {d: s for d, s in zip(("batch", "io", "hidden"), (b, i, h)) if s}
        try:
            sa.plan.evaluate_layout(step, {"x": 2}, rules)
            runs = True
        except sa.LayoutError:
            runs = False
        assert runs == (tuple(sorted(rules.items())) in legal), rules


def test_cli_plan_json(tmp_path):
    out = tmp_path / "plan.json"
    result = run(["plan", "--vocab", "256", "--d-model", "32", "--heads", "4", "--d-kv", "8", "--d-ff", "128",
                  "--layers", "1", "--seq", "16", "--batch", "8", "--mesh", "rows=2,cols=2", "--top", "3",
                  "--memory", "2MiB", "--json", str(out), "--quiet"])
    saved = json.loads(out.read_text())
    assert saved == json.loads(json.dumps(result))
    assert saved["mesh"] == MESH and saved["memory_limit_bytes"] == 2 * 2**20
    times = [r["step_time_s"] for r in saved["best"]]
    assert len(times) == 3 and times == sorted(times)
    assert all(r["fits"] and r["memory_bytes_per_device"] <= 2 * 2**20 for r in saved["best"])
    assert {r["label"] for r in saved["named"]} == {"data", "megatron", "mesh2d", "tesseract"}
    for r in saved["named"]:
        assert r["fits"] == (r["memory_bytes_per_device"] <= 2 * 2**20)
        assert r["step_time_s"] >= times[0] or not r["fits"] or r["label"] == "tesseract"
    assert saved["search"]["legal"] >= saved["search"]["complete"] > 0
    assert saved["model"]["parameters"] == sa.nn.param_count(
        sa.nn.TransformerConfig(vocab=256, d_model=32, heads=4, d_kv=8, d_ff=128, n_layers=1, seq_len=16))


def test_cli_plan_bfloat16():
    """``--dtype bfloat16``: the search and the named strategies priced with bfloat16 parameters (it was left out
    while ``init_transformer`` refused bfloat16)."""
    result = run(["plan", "--vocab", "64", "--d-model", "16", "--heads", "2", "--d-kv", "8", "--d-ff", "32",
                  "--layers", "1", "--seq", "8", "--batch", "8", "--mesh", "rows=2,cols=2", "--top", "2",
                  "--dtype", "bfloat16", "--quiet"])
    assert result["model"]["dtype"] == "bfloat16" and result["best"] and result["named"]


def test_cli_plan_rejects_bad_memory(capsys):
    with pytest.raises(SystemExit):
        run(["plan", "--memory", "lots"])
    assert "--memory" in capsys.readouterr().err


def test_mesh_tf_tables_script_runs_table1(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "mesh_tf_tables.py"
    spec = importlib.util.spec_from_file_location("mesh_tf_tables", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "t.json"
    result = mod.main(["--batch", "64", "--io", "32", "--hidden", "128", "--skip-table2", "--json", str(out)])
    rows = {r["layout"]: r for r in result["table1"]["rows"]}
    assert rows['[("hidden", "all")]']["ratio"]["comm"] == 1.0  # b·d_io exactly
    assert all(r["ratio"]["flops"] == 10.0 for r in rows.values())  # 2 flops × (2 forward + 3 backward einsums)
    assert json.loads(out.read_text())["table1"]["b"] == 64


def test_table2_largest_model_profiles_on_the_16x32_mesh():
    """4.9B parameters, mesh2d on 16×32, batch 256×256: parameter bytes per device by hand."""
    cfg = sa.nn.TransformerConfig(vocab=32768, d_model=1024, heads=256, d_kv=256, d_ff=262144, n_layers=6,
                                  seq_len=256)
    shape = {"rows": 16, "cols": 32}
    rules = sa.nn.strategy_rules("mesh2d", shape)
    plan = sa.plan.evaluate_layout(sa.plan.transformer_step(cfg, 256), shape, rules)
    split = {"heads": 32, "d_ff": 32, "vocab": 32}
    params = sum(4 * math.prod(cfg.sizes[d] // split.get(d, 1) for d in dims)
                 for dims in sa.nn.param_shapes(cfg).values())
    assert round(sa.nn.param_count(cfg) / 1e9, 2) == 4.90
    assert 2 * params < plan.memory_bytes_per_device < 20 * params  # parameters, gradients, activations
    tokens = 256 // 16 * 256
    assert plan.flops_per_device > 6 * tokens * sa.nn.param_count(cfg) / 32 * 0.9  # ≈ 6·tokens·params per device
