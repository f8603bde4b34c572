"""The planner's scaled search: the best layouts recorded before it (tests/plan/plan_scale_baseline.json),
mesh-axis symmetry, and the collective-time cache shared across rule sets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import shardarray as sa
from shardarray.plan.symmetry import axis_symmetries, orbit_key

BASELINE = json.loads((Path(__file__).parent / "plan_scale_baseline.json").read_text())

STEPS = {
    "mlp_8_4_8_2x2": lambda: sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8),
    "mlp_32_16_64_2x2x2": lambda: sa.plan.mlp_step(batch=32, d_io=16, d_hidden=64, layers=3),
    "tiny_transformer_2x2": lambda: sa.plan.transformer_step(
        sa.nn.TransformerConfig(vocab=2, d_model=1, heads=2, d_kv=1, d_ff=2, n_layers=1, seq_len=2), batch=2),
    "small_transformer_2x4": lambda: sa.plan.transformer_step(
        sa.nn.TransformerConfig(vocab=512, d_model=64, heads=8, d_kv=16, d_ff=256, n_layers=2, seq_len=32), batch=16),
    "bench_0.14B_2x4": lambda: sa.plan.transformer_step(
        sa.nn.TransformerConfig(vocab=32768, d_model=1024, heads=4, d_kv=256, d_ff=4096, n_layers=6, seq_len=256),
        batch=32),
}
FAST = ["mlp_8_4_8_2x2", "mlp_32_16_64_2x2x2", "tiny_transformer_2x2"]
SLOW = os.environ.get("SHARDARRAY_PLAN_SLOW") == "1"  # the 2×4 searches take 10-30 s each on 2 cores


def _rows(plans):
    return [{"rules": {d: list(a) for d, a in p.rules.items()}, "step_time_s": p.step_time_s,
             "memory_bytes_per_device": p.memory_bytes_per_device} for p in plans]


def _search(name, **kw):
    case = BASELINE[name]
    return sa.plan.search_layouts(STEPS[name](), case["mesh"], case["memory_limit_bytes"], top_k=case["top_k"], **kw)


@pytest.mark.parametrize("name", FAST + [pytest.param(n, marks=pytest.mark.skipif(not SLOW, reason="set SHARDARRAY_PLAN_SLOW=1"))
                                         for n in ("small_transformer_2x4", "bench_0.14B_2x4")])
def test_search_gives_the_recorded_best_layouts(name):
    """The layouts and costs the search gave before symmetry and the shared cache, recorded as a fixture."""
    assert _rows(_search(name)) == BASELINE[name]["best"]


@pytest.mark.parametrize("name", ["small_transformer_2x4", "bench_0.14B_2x4"])
def test_recorded_best_layouts_still_price_the_same(name):
    """The cheap half of the slow cases: each recorded layout prices to its recorded time and memory."""
    case = BASELINE[name]
    for row in case["best"]:
        plan = sa.plan.evaluate_layout(STEPS[name](), case["mesh"], row["rules"])
        assert (plan.step_time_s, plan.memory_bytes_per_device) == (row["step_time_s"], row["memory_bytes_per_device"])


def test_symmetry_prices_fewer_and_finds_the_same():
    step = STEPS["mlp_32_16_64_2x2x2"]()
    mesh = {"x": 2, "y": 2, "z": 2}
    on, off = sa.plan.SearchStats(), sa.plan.SearchStats()
    fast = sa.plan.search_layouts(step, mesh, top_k=40, stats=on)
    full = sa.plan.search_layouts(step, mesh, top_k=40, symmetric=False, prune=False, stats=off)
    assert _rows(fast) == _rows(full) and len(fast) == 40
    assert on.symmetric > 0 and off.symmetric == 0
    assert on.complete + on.stopped_time + on.stopped_bound + on.symmetric == on.legal == off.complete


def test_axis_symmetries_follow_the_nodes():
    # a100 nodes hold 4 GPUs: on 2×2×2 the major axis x crosses nodes, y and z stay inside one
    assert axis_symmetries({"x": 2, "y": 2, "z": 2}, "a100") == [{"x": "x", "y": "y", "z": "z"},
                                                                   {"x": "x", "y": "z", "z": "y"}]
    assert len(axis_symmetries({"rows": 2, "cols": 2}, "a100")) == 2  # one node: the two axes swap
    assert axis_symmetries({"rows": 2, "cols": 4}, "a100") == [{"rows": "rows", "cols": "cols"}]  # sizes differ
    assert axis_symmetries({"a": 2, "one": 1, "b": 2}, "a100") == [{"a": "a", "b": "b"}, {"a": "b", "b": "a"}]


def test_orbit_key_identifies_renamings_only():
    sym = axis_symmetries({"x": 2, "y": 2, "z": 2}, "a100")
    assert orbit_key({"batch": ("y",), "d_ff": ("z", "x")}, sym) == orbit_key({"batch": ("z",), "d_ff": ("y", "x")}, sym)
    assert orbit_key({"batch": ("x",)}, sym) != orbit_key({"batch": ("y",)}, sym)
    assert orbit_key({"batch": ("y", "z")}, sym) != orbit_key({"batch": ("z", "y"), "io": ("y",)}, sym)


def test_a_shared_collective_cache_prices_the_same():
    step = sa.plan.mlp_step(batch=16, d_io=8, d_hidden=16)
    mesh = {"rows": 2, "cols": 2}
    cache: dict = {}
    for rules in ({"batch": "rows", "hidden": "cols"}, {"hidden": ("rows", "cols")}, {"batch": "rows", "hidden": "cols"}):
        alone = sa.plan.evaluate_layout(step, mesh, rules)
        shared = sa.plan.evaluate_layout(step, mesh, rules, cache=cache)
        assert alone == shared and alone.comm_time_s > 0
    assert cache  # the collectives were priced into it


def test_cli_times_the_search_with_and_without_symmetry():
    from shardarray.bench import run

    argv = ["plan", "--vocab", "2", "--d-model", "1", "--heads", "2", "--d-kv", "1", "--d-ff", "2", "--layers", "1",
            "--seq", "2", "--batch", "2", "--mesh", "rows=2,cols=2", "--top", "3", "--quiet"]
    on, off = run(argv), run(argv + ["--no-symmetry"])
    assert on["best"] == off["best"] and len(on["best"]) == 3
    assert on["search"]["symmetry"] is True and on["search"]["symmetric"] > 0 and on["search"]["cpus"] >= 1
    assert off["search"]["symmetry"] is False and off["search"]["symmetric"] == 0
