"""The planner's speed-ups keep its answer: the seeds-first order and the one-layer lower-bound trace."""

from __future__ import annotations

from dataclasses import replace

import pytest

import shardarray as sa
from shardarray.hardware import get_profile
from shardarray.plan.floor import layer_floor
from shardarray.plan.search import pricing_order
from shardarray.plan.search_traced import _BoundGain

TINY2 = sa.nn.TransformerConfig(vocab=2, d_model=1, heads=2, d_kv=1, d_ff=2, n_layers=2, seq_len=2)
CASES = {
    "tiny_transformer_2layers_2x2": (lambda: sa.plan.transformer_step(TINY2, batch=2), {"rows": 2, "cols": 2}, None, 3),
    "mlp_3layers_2x2x2": (lambda: sa.plan.mlp_step(batch=16, d_io=8, d_hidden=16, layers=3),
                          {"x": 2, "y": 2, "z": 2}, None, 6),
    "mlp_2layers_2x2_memory_limit": (lambda: sa.plan.mlp_step(batch=16, d_io=8, d_hidden=16),
                                     {"rows": 2, "cols": 2}, 10000, 2),
}


def _rows(plans):
    return [(p.rules, p.step_time_s, p.memory_bytes_per_device, p.comm_bytes_per_device) for p in plans]


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_search_equals_brute_force(name, monkeypatch):
    """Every rule set priced in full, in the proxy order, no symmetry: the reference answer.

    The bound trace runs for every rule set here (the search drops it where it does not pay)."""
    make, mesh, limit, k = CASES[name]
    step = make()
    brute = sa.plan.search_layouts(step, mesh, limit, top_k=k, prune=False, symmetric=False, memo=False)
    stats = sa.plan.SearchStats()
    with monkeypatch.context() as m:
        m.setattr(_BoundGain, "worth_it", lambda self: True)
        fast = sa.plan.search_layouts(step, mesh, limit, top_k=k, stats=stats)
    assert _rows(fast) == _rows(brute) and len(fast) == k
    knob_sets = ({"seeds_first": False}, {"lower_bound": False}, {"memo": False}) if name.startswith("mlp") else ()
    for knobs in knob_sets:
        assert _rows(sa.plan.search_layouts(step, mesh, limit, top_k=k, **knobs)) == _rows(brute), knobs
    assert stats.stopped_bound > 0  # the bound trace did cut rule sets
    total = stats.complete + stats.stopped_time + stats.stopped_memory + stats.stopped_bound + stats.symmetric
    assert total + stats.refused == stats.legal


def test_the_bound_step_costs_no_more_and_layers_add_up():
    """The one-layer step is a lower bound of the L-layer one; each layer adds the same time and memory."""
    mesh = {"rows": 2, "cols": 2}
    steps = [sa.plan.transformer_step(replace(TINY2, n_layers=n), batch=2) for n in (1, 2, 3)]
    assert steps[2].lower_bound is not None and not hasattr(steps[0], "lower_bound")
    rule_sets = sa.plan.candidates(steps[2], mesh)
    for rules in rule_sets[:: max(1, len(rule_sets) // 12)]:
        one, two, three = (sa.plan.evaluate_layout(s, mesh, rules) for s in steps)
        bound = sa.plan.evaluate_layout(steps[2].lower_bound, mesh, rules)
        assert bound == one and bound.step_time_s <= three.step_time_s
        assert three.step_time_s - two.step_time_s == pytest.approx(two.step_time_s - one.step_time_s, rel=1e-9)
        assert three.memory_bytes_per_device - two.memory_bytes_per_device >= 0


@pytest.mark.parametrize("mesh", [{"rows": 2, "cols": 2}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}])
def test_one_layer_plus_the_layer_floor_is_a_lower_bound(mesh):
    """The bound trace plus ``layer_floor`` never passes the full step's time, on uneven splits too."""
    step = sa.plan.mlp_step(batch=12, d_io=6, d_hidden=12, layers=3)
    floor = layer_floor(step, mesh, get_profile("a100"))
    assert floor > 0
    for rules in sa.plan.candidates(step, mesh):
        full = sa.plan.evaluate_layout(step, mesh, rules)
        bound = sa.plan.evaluate_layout(step.lower_bound, mesh, rules)
        assert bound.step_time_s + floor <= full.step_time_s * (1 + 1e-12), rules


def test_mlp_bound_is_the_one_layer_step():
    step = sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8, layers=2)
    rules = {"batch": "rows", "hidden": "cols"}
    single = sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8, layers=1)
    one = sa.plan.evaluate_layout(single, {"rows": 2, "cols": 2}, rules)
    assert sa.plan.evaluate_layout(step.lower_bound, {"rows": 2, "cols": 2}, rules) == one
    assert one.step_time_s < sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, rules).step_time_s


def test_pricing_order_puts_the_seeds_first_and_keeps_the_proxy_order():
    rule_sets = [{"a": ("x",), "b": ("y",)}, {"a": ("x",)}, {}, {"b": ("x", "y")}, {"a": ("y",), "c": ("x",)}]
    assert pricing_order(rule_sets) == [1, 2, 3, 0, 4]
    assert pricing_order([]) == []


def test_the_bound_trace_is_dropped_where_it_does_not_pay():
    gain = _BoundGain()
    for _ in range(16):
        assert gain.worth_it()
        gain.bound(0.01, cut=False)
    for _ in range(4):
        gain.full(0.05)
    assert not gain.worth_it()  # it never cut: tracing it only costs time
    for _ in range(16):
        gain.bound(0.01, cut=True)
    assert gain.worth_it()  # half its traces cut a 5× dearer one


def test_the_layer_floor_bounds_a_transformer_on_every_sampled_layout():
    cfg = sa.nn.TransformerConfig(vocab=6, d_model=4, heads=2, d_kv=2, d_ff=6, n_layers=3, seq_len=4)
    step, mesh = sa.plan.transformer_step(cfg, batch=6), {"rows": 2, "cols": 2}
    floor = layer_floor(step, mesh, get_profile("a100"))
    assert floor > 0
    rule_sets = sa.plan.candidates(step, mesh)
    for rules in rule_sets[:: max(1, len(rule_sets) // 16)]:
        full = sa.plan.evaluate_layout(step, mesh, rules)
        bound = sa.plan.evaluate_layout(step.lower_bound, mesh, rules)
        assert bound.step_time_s + floor <= full.step_time_s * (1 + 1e-12), rules
