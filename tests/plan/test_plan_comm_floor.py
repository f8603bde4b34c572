"""The floors under the memory-bound and comm times (``plan.floor``): never above the modeled times, and the
search that cuts on them keeps its answer (brute force, the search without them, deferral on)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import shardarray as sa
from shardarray.hardware import get_profile
from shardarray.plan import ranking
from shardarray.plan.floor import Allreduce, CommFloor, compute_floor
from shardarray.plan.graph import GraphSet
from shardarray.plan.record import GraphMemo

TINY = sa.nn.TransformerConfig(vocab=6, d_model=6, heads=3, d_kv=2, d_ff=9, n_layers=3, seq_len=4)
MESHES = [{"rows": 2, "cols": 2}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}, {"rows": 2, "cols": 4}]
STEPS = {
    "mlp_3layers": lambda: sa.plan.mlp_step(batch=12, d_io=6, d_hidden=12, layers=3),
    "transformer_3layers_uneven": lambda: sa.plan.transformer_step(TINY, batch=6),
    "transformer_1layer": lambda: sa.plan.transformer_step(replace(TINY, n_layers=1), batch=6),
}


@pytest.mark.parametrize(
    "mesh, hw",
    [(m, "a100") for m in MESHES] + [(MESHES[1], "h100")],
    ids=lambda x: "x".join(map(str, x.values())) if isinstance(x, dict) else x,
)
@pytest.mark.parametrize("name", sorted(STEPS))
def test_the_floors_are_below_the_traced_times(name, mesh, hw):
    """Sampled rule sets (uneven splits over 3 included): the memory-bound and comm floors never pass the traced
    memory-bound and comm times; replicated, the memory floor is the time and the comm floor 0."""
    step, profile = STEPS[name](), get_profile(hw)
    floor = compute_floor(step, mesh, profile)
    assert floor is not None and step.forced
    rule_sets = sa.plan.candidates(step, mesh)
    tight = 0
    for rules in [*rule_sets[:: max(1, len(rule_sets) // 9)], {}]:
        plan = sa.plan.evaluate_layout(step, mesh, rules, hardware=profile)
        assert floor.memory(rules) <= plan.memory_time_s * (1 + 1e-12), rules
        assert floor.comm(rules) <= plan.comm_time_s * (1 + 1e-12), rules
        tight += floor.comm(rules) > 0.5 * plan.comm_time_s
        if not rules:
            assert floor.memory(rules) == pytest.approx(plan.memory_time_s, rel=1e-12)
            assert floor.comm(rules) == plan.comm_time_s == 0.0
    assert tight  # (the floor sees most of the comm of some rule sets)


@pytest.mark.parametrize("mesh", MESHES, ids=lambda m: "x".join(map(str, m.values())))
@pytest.mark.parametrize("name", ["mlp_3layers", "transformer_3layers_uneven"])
def test_the_layer_floor_is_below_a_layers_traced_increment(name, mesh):
    """``ComputeFloor.layer_all`` (a layer's compute, memory-bound and comm floors, which the one-layer bound walk
    counts for each layer it leaves out) never passes what one more layer adds to the traced step time, and
    sees its collectives: above the compute floor alone where a layer's allreduces span devices."""
    step, profile = STEPS[name](), get_profile("a100")
    floor = compute_floor(step, mesh, profile)
    assert floor is not None
    rule_sets = sa.plan.candidates(step, mesh)
    more = 0
    for rules in [*rule_sets[:: max(1, len(rule_sets) // 9)], {}]:
        t1, t2 = (
            sa.plan.evaluate_layout(s, mesh, rules, hardware=profile).step_time_s
            for s in (step.lower_bound, step.two_layers)
        )
        assert floor.layer(rules) <= floor.layer_all(rules) <= (t2 - t1) * (1 + 1e-9), rules
        more += floor.layer_all(rules) > floor.layer(rules) * (1 + 1e-9)
    assert more


def test_the_comm_floor_prices_an_allreduce_at_its_least():
    """Data parallel over both axes of 2×2 (inside one node): each of 3 weights' gradients, 2 (n - 1) latencies
    and 2 (n - 1) / n of its bytes at NVLink's bandwidth; a weight split over an axis is summed over the other."""
    hw = get_profile("a100")
    floor = CommFloor([Allreduce(("batch",), ("io", "hidden"), 4096.0, 3)], {"r": 2, "c": 2}, hw)
    n, lat, bw = 4, hw.intra.latency, hw.intra.bandwidth
    assert floor.time({"batch": ("r", "c")}) == pytest.approx(3 * (2 * (n - 1) * lat + 2 * (n - 1) / n * 4096 / bw))
    assert floor.time({"batch": ("r",), "hidden": ("c",)}) == pytest.approx(3 * (2 * lat + 2048 / bw))
    assert floor.time({"hidden": ("r", "c")}) == floor.time({}) == 0.0


@pytest.mark.parametrize(
    "make, mesh, k, brute",
    [
        (lambda: sa.plan.transformer_step(replace(TINY, n_layers=1), batch=6), {"rows": 2, "cols": 2}, 5, True),
        (lambda: sa.plan.mlp_step(batch=64, d_io=16, d_hidden=32, layers=3), {"x": 2, "y": 2, "z": 2}, 4, True),
        (lambda: sa.plan.transformer_step(TINY, batch=6), {"p": 3, "q": 2}, 4, False),
    ],
    ids=["transformer_2x2", "mlp_2x2x2", "transformer_3layers_3x2"],
)
def test_the_search_cuts_on_the_floors_and_keeps_its_answer(make, mesh, k, brute, monkeypatch):
    """The same top k, bit for bit, as the search with the compute floor only (deferral on for the 3-layer
    steps) and, where cheap, as brute force (every rule set priced in full); rule sets are cut by the comm floor."""
    step = make()
    dims = ("batch", "d_model", "heads", "d_ff") if brute and "rows" in mesh else None  # (brute force kept small)
    stats = sa.plan.SearchStats()
    fast = sa.plan.search_layouts(step, mesh, top_k=k, stats=stats, dims=dims)
    monkeypatch.setattr(ranking, "COMM_FLOOR", False)
    plain = sa.plan.SearchStats()
    runs = [fast, sa.plan.search_layouts(step, mesh, top_k=k, stats=plain, dims=dims)]
    if brute:
        runs.append(sa.plan.search_layouts(step, mesh, top_k=k, prune=False, symmetric=False, memo=False, dims=dims))
    rows = [[(p.rules, p.step_time_s, p.memory_bytes_per_device, p.comm_bytes_per_device) for p in ps] for ps in runs]
    assert all(r == rows[0] for r in rows) and len(rows[0]) == k
    assert stats.comm_cuts > 0 and plain.comm_cuts == plain.memory_cuts == 0
    assert stats.compute_cuts == plain.compute_cuts + stats.memory_cuts + stats.comm_cuts


def test_every_rule_set_stays_above_the_declared_allreduces():
    """Every third rule set of a two-layer transformer on 2×2, priced from its op graphs (the traced figures,
    ``test_plan_graph.py``): the comm floor of the step (the sums over every token, the scores' over ``d_kv``, the
    MLP's over ``d_model``, the layer norms' statistics) never passes its comm time, nor a layer's floors what
    one more layer adds."""
    step = sa.plan.transformer_step(replace(TINY, n_layers=2), batch=6)
    mesh, profile = {"rows": 2, "cols": 2}, get_profile("a100")
    floor = compute_floor(step, mesh, profile)
    assert floor is not None
    memo, cache = GraphMemo(), {}
    one, two = (GraphSet(s, mesh, profile, memo, cache) for s in (step.lower_bound, step))
    checked = 0
    for rules in [*sa.plan.candidates(step, mesh)[::3], {}]:
        f1, f2 = one.figures(rules), two.figures(rules)
        assert floor.comm(rules) <= f2.comm_time_s * (1 + 1e-12), rules
        assert floor.layer_all(rules) <= (f2.step_time_s - f1.step_time_s) * (1 + 1e-9), rules
        checked += 1
    assert checked > 100


@pytest.mark.parametrize(
    "rules",
    [{"seq": ("rows",)}, {"d_model": ("rows", "cols")}, {"d_kv": ("cols",)}],
    ids=["gradients_over_seq", "mlp_and_norms_over_d_model", "scores_over_d_kv"],
)
def test_the_comm_floor_sees_the_sums_before_each_nonlinear_op(rules):
    """The sums that a split ``seq``, ``d_model`` or ``d_kv`` forces (the gradients over every token, the MLP's
    first matmul and the layer norms over ``d_model``, the attention scores over ``d_kv``) are in the floor: above
    what the parameters' sums over the batch and the residual stream's give alone, and below the traced comm."""
    step = sa.plan.transformer_step(TINY, batch=6)
    mesh, profile = {"rows": 2, "cols": 2}, get_profile("a100")
    floor = compute_floor(step, mesh, profile)
    assert floor is not None
    older = [Allreduce(("batch",), f.result, f.nbytes, f.count) for f in step.forced if "batch" in f.contracted] + [
        f for f in step.forced if f.contracted in (("heads", "d_kv"), ("d_ff",))
    ]
    plan = sa.plan.evaluate_layout(step, mesh, rules, hardware=profile)
    assert CommFloor(older, mesh, profile).time(rules) < floor.comm(rules) <= plan.comm_time_s * (1 + 1e-12)


def test_the_floors_of_a_mixed_precision_model_count_its_narrower_gradients():
    """float32 parameters computed in bfloat16: the gradients are summed in bfloat16 before they are cast back, so
    their allreduces move half the parameters' bytes (the floor counted float32 bytes and passed what one more
    layer adds under data parallelism: 120.0058 µs of comm against 120.0033 µs traced)."""
    step = sa.plan.transformer_step(replace(TINY, compute_dtype="bfloat16"), batch=6)
    mesh, profile = {"rows": 2, "cols": 2}, get_profile("a100")
    floor = compute_floor(step, mesh, profile)
    assert floor is not None
    for rules in ({"batch": ("rows",)}, {"batch": ("rows", "cols")}, {"batch": ("cols",), "d_ff": ("rows",)}):
        p1, p2, whole = (
            sa.plan.evaluate_layout(s, mesh, rules, hardware=profile) for s in (step.lower_bound, step.two_layers, step)
        )
        assert floor.comm(rules) <= whole.comm_time_s * (1 + 1e-12), rules
        assert floor.layer_all(rules) <= (p2.step_time_s - p1.step_time_s) * (1 + 1e-12), rules
        assert 0 < floor._comm_layer.time(rules) <= (p2.comm_time_s - p1.comm_time_s) * (1 + 1e-12), rules
