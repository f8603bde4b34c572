"""The affine rule in the layer count (``plan.search``): one- and two-layer traces price an L-layer step.

Every summed figure of a step of L identical layers is ``f(1) + (L - 1) * (f(2) - f(1))``. The search
cuts rule sets on that extrapolation of the step time; these tests hold it against the full trace on random
rule sets of two models and four meshes (step time and its parts, comm and wire bytes, flops, to 1e-12),
and the search that uses it against brute force. Peak memory is a maximum over the trace, not a sum: the
extrapolation never exceeds it (a maximum of affine functions is convex) and often equals it, so the search
does not cut on it (the plans it reports come from full traces).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import shardarray as sa
from shardarray.plan import ranking, search, search_traced
from shardarray.plan.memo import OpMemo

_CFG = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=1, seq_len=8)
FIELDS = ("step_time_s", "compute_time_s", "memory_time_s", "comm_time_s", "comm_bytes_per_device",
          "wire_bytes_per_device", "flops_per_device")
CASES = {
    "transformer_2x2": (lambda n: sa.plan.transformer_step(replace(_CFG, n_layers=n), batch=4), {"rows": 2, "cols": 2}),
    "transformer_3x2": (lambda n: sa.plan.transformer_step(replace(_CFG, n_layers=n), batch=6), {"p": 3, "q": 2}),
    "transformer_2x2x2": (lambda n: sa.plan.transformer_step(replace(_CFG, n_layers=n), batch=8),
                          {"x": 2, "y": 2, "z": 2}),
    "mlp_2x2x2": (lambda n: sa.plan.mlp_step(batch=8, d_io=6, d_hidden=10, layers=n), {"x": 2, "y": 2, "z": 2}),
}


def _price(step, mesh, rules, memo):
    try:
        return sa.plan.evaluate_layout(step, mesh, rules, memo=memo)
    except sa.errors.LayoutError:
        return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_and_two_layers_extrapolate_to_the_full_trace(name):
    make, mesh = CASES[name]
    steps = {n: make(n) for n in (1, 2, 3, 5)}
    assert steps[5].lower_bound is not None and steps[5].two_layers is not None and steps[5].layers == 5
    rule_sets = search.candidates(steps[5], mesh)
    rng = random.Random(31)
    memo = OpMemo()
    checked = 0
    for rules in rng.sample(rule_sets, min(12, len(rule_sets))):
        plans = {n: _price(s, mesh, rules, memo) for n, s in steps.items()}
        if plans[5] is None:
            assert all(p is None for p in plans.values()), rules  # the same dims: refused at any depth
            continue
        for n in (3, 5):
            for f in FIELDS:
                one, two, full = (getattr(plans[k], f) for k in (1, 2, n))
                assert one + (n - 1) * (two - one) == pytest.approx(full, rel=1e-12, abs=1e-300), (rules, n, f)
            one, two, full = (plans[k].memory_bytes_per_device for k in (1, 2, n))
            assert one + (n - 1) * (two - one) <= full, (rules, n)
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize("name", ["transformer_2x2", "mlp_2x2x2"])
def test_the_affine_search_equals_brute_force(name, monkeypatch):
    """The affine rule on every rule set (the search's ``_Chooser`` picks it only where it pays)."""
    monkeypatch.setattr(search_traced._Chooser, "pick", lambda self: True)
    make, mesh = CASES[name]
    step = make(3)
    dims = ("batch", "heads", "d_ff", "vocab", "d_model", "hidden", "io")  # a subset keeps brute force quick
    stats = sa.plan.SearchStats()
    fast = sa.plan.search_layouts(step, mesh, top_k=5, dims=dims, stats=stats)
    full = sa.plan.search_layouts(step, mesh, top_k=5, dims=dims, prune=False, symmetric=False)  # the memo is exact
    assert fast == full
    assert stats.affine_cuts > 0 and stats.affine_cuts <= stats.stopped_bound
    assert stats.complete + stats.stopped_time + stats.stopped_bound + stats.symmetric + stats.refused == stats.legal


def test_the_affine_rule_can_be_turned_off_with_the_same_answer(monkeypatch):
    make, mesh = CASES["transformer_2x2"]
    step = make(3)
    dims = ("batch", "heads", "d_ff", "seq")
    on = sa.plan.search_layouts(step, mesh, top_k=4, dims=dims)
    monkeypatch.setattr(ranking, "AFFINE_LAYERS", False)
    off_stats = sa.plan.SearchStats()
    off = sa.plan.search_layouts(step, mesh, top_k=4, dims=dims, stats=off_stats)
    assert on == off and off_stats.affine_cuts == 0
