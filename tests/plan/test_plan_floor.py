"""The compute floor (``plan.floor``): never above the modeled compute time, and the search keeps its answer."""

from __future__ import annotations

from dataclasses import replace

import pytest

import shardarray as sa
from shardarray.hardware import get_profile
from shardarray.plan import ranking
from shardarray.plan.floor import compute_floor, dim_flops
from shardarray.plan.graph import GraphSet, Stop

HW = get_profile("a100")
UNEVEN = sa.nn.TransformerConfig(vocab=6, d_model=6, heads=3, d_kv=2, d_ff=9, n_layers=3, seq_len=4)
MESHES = [{"rows": 2, "cols": 2}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}]
STEPS = {
    "mlp_3layers": lambda: sa.plan.mlp_step(batch=12, d_io=6, d_hidden=12, layers=3),
    "transformer_3layers_uneven": lambda: sa.plan.transformer_step(UNEVEN, batch=6),
    "transformer_1layer": lambda: sa.plan.transformer_step(replace(UNEVEN, n_layers=1), batch=6),
}


def _sample(rule_sets: list, n: int = 40) -> list:
    return rule_sets[:: max(1, len(rule_sets) // n)]


@pytest.mark.parametrize("mesh", MESHES, ids=lambda m: "x".join(map(str, m.values())))
@pytest.mark.parametrize("name", sorted(STEPS))
def test_the_floor_is_below_the_compute_time_of_every_part(name, mesh):
    """Whole step, one-layer step and one layer: the floor never passes the traced compute time (uneven
    splits over 3 included)."""
    step = STEPS[name]()
    floor = compute_floor(step, mesh, HW)
    assert floor is not None
    parts = (step.lower_bound, step.two_layers) if hasattr(step, "lower_bound") else None
    for rules in [*_sample(sa.plan.candidates(step, mesh)), {}]:
        whole = sa.plan.evaluate_layout(step, mesh, rules)
        assert 0 < floor.time(rules) <= whole.compute_time_s * (1 + 1e-12), rules
        if not rules:  # replicated: every device runs every einsum whole, the floor is the compute time
            assert floor.time(rules) == pytest.approx(whole.compute_time_s, rel=1e-12)
        if parts is None:
            assert floor.one(rules) == floor.layer(rules) == 0.0
            continue
        one, two = (sa.plan.evaluate_layout(s, mesh, rules) for s in parts)
        assert floor.one(rules) <= one.compute_time_s * (1 + 1e-12), rules
        assert floor.layer(rules) <= (two.compute_time_s - one.compute_time_s) * (1 + 1e-9), rules


@pytest.mark.parametrize("name", sorted(STEPS))
def test_the_groups_hold_every_flop_of_the_single_device_trace(name):
    step = STEPS[name]()
    with sa.profile() as prof:
        step(sa.Mesh({"one": 1}, backend="meta"))
    groups = dim_flops(step)
    assert sum(groups.values()) == pytest.approx(prof.flops_per_device, rel=1e-12)
    assert all(dims for dims, _ in groups)  # every op with flops touches some dim


def test_a_step_that_does_not_say_it_runs_the_same_ops_gets_no_floor():
    def step(mesh):
        return sa.plan.mlp_step(batch=4, d_io=2, d_hidden=4, layers=1)(mesh)

    assert compute_floor(step, {"rows": 2, "cols": 2}, HW) is None


BIG = sa.nn.TransformerConfig(vocab=900, d_model=300, heads=6, d_kv=50, d_ff=1200, n_layers=3, seq_len=60)


@pytest.mark.parametrize(
    "make, mesh, k, brute",
    [
        (lambda: sa.plan.mlp_step(batch=4096, d_io=1024, d_hidden=4096, layers=3), {"x": 2, "y": 2, "z": 2}, 6, True),
        (lambda: sa.plan.transformer_step(BIG, batch=30), {"p": 3, "q": 2}, 4, False),
    ],
    ids=["mlp_2x2x2", "transformer_3x2"],
)
def test_the_search_cuts_on_the_floor_and_keeps_its_answer(make, mesh, k, brute, monkeypatch):
    """The same top k as the search without the floor (and, for the MLP, as brute force: every rule set
    priced in full), with rule sets cut by the floor alone; sizes where compute weighs, uneven over 3."""
    step = make()
    stats = sa.plan.SearchStats()
    fast = sa.plan.search_layouts(step, mesh, top_k=k, stats=stats)
    monkeypatch.setattr(ranking, "COMPUTE_FLOOR", False)
    runs = [fast, sa.plan.search_layouts(step, mesh, top_k=k)]
    if brute:
        runs.append(sa.plan.search_layouts(step, mesh, top_k=k, prune=False, symmetric=False, memo=False))
    rows = [[(p.rules, p.step_time_s, p.memory_bytes_per_device, p.comm_bytes_per_device) for p in ps] for ps in runs]
    assert all(r == rows[0] for r in rows) and len(rows[0]) == k
    assert 0 < stats.compute_cuts <= stats.stopped_bound


def test_a_walk_with_a_compute_floor_gives_the_same_figures_and_stops_no_later():
    """``GraphSet.figures(..., compute=floor)``: the figures of a walk that ends are the same; a cut between
    the running time and the final time stops the walk with the floor as without it."""
    mesh = {"x": 2, "y": 2, "z": 2}
    step = sa.plan.mlp_step(batch=16, d_io=8, d_hidden=16, layers=3)
    floor = compute_floor(step, mesh, HW)
    plain, floored = GraphSet(step, mesh, HW), GraphSet(step, mesh, HW)
    for rules in _sample(sa.plan.candidates(step, mesh), 20):
        a = plain.figures(rules)
        b = floored.figures(rules, compute=floor.time(rules))
        assert a == b
        for gs, c in ((plain, 0.0), (floored, floor.time(rules))):
            with pytest.raises(Stop):
                gs.figures(rules, cut=a.step_time_s * (1 - 1e-6), compute=c)
