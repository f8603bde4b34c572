"""Record once, price many (``plan.graph``): a step's op graph priced per rule set against full traces.

``GraphSet.figures(rules)`` prices a rule set from the recorded op graph (each op's memo entry for the
rules of the dims it looks up, the live set replayed for the peak memory), recording a new path when the
rules take one the graph has not seen. These tests hold every figure against a plain full trace
(``evaluate_layout`` without a memo) to 1e-12 on random rule sets of two models on three meshes, and the
search that prices from graphs against brute force and against the search by traces.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import shardarray as sa
from shardarray.hardware import get_profile
from shardarray.plan import ranking, search
from shardarray.plan.graph import GraphMemo, GraphSet

_CFG = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=1, seq_len=8)
MESHES = {"2x2": {"rows": 2, "cols": 2}, "2x4": {"rows": 2, "cols": 4}, "2x2x2": {"x": 2, "y": 2, "z": 2}}
STEPS = {
    "mlp": lambda: sa.plan.mlp_step(batch=8, d_io=8, d_hidden=16, layers=2),
    "transformer1": lambda: sa.plan.transformer_step(_CFG, batch=8),
    "transformer2": lambda: sa.plan.transformer_step(replace(_CFG, n_layers=2), batch=8),
}
PAIRS = [
    ("step_time_s", "step_time_s"),
    ("compute_time_s", "compute_time_s"),
    ("memory_time_s", "memory_time_s"),
    ("comm_time_s", "comm_time_s"),
    ("comm_bytes", "comm_bytes_per_device"),
    ("wire_bytes", "wire_bytes_per_device"),
    ("flops", "flops_per_device"),
    ("memory_bytes", "memory_bytes_per_device"),
]


def _plain(step, mesh, rules):
    try:
        return sa.plan.evaluate_layout(step, mesh, rules)
    except sa.errors.LayoutError:
        return None


@pytest.mark.parametrize("mesh_name", sorted(MESHES))
@pytest.mark.parametrize("step_name", sorted(STEPS))
def test_graph_pricing_matches_the_full_trace(step_name, mesh_name):
    step, mesh = STEPS[step_name](), MESHES[mesh_name]
    rule_sets = search.candidates(step, mesh)
    graphs = GraphSet(step, mesh, get_profile("a100"))
    rng = random.Random(hash((step_name, mesh_name)) % 1000)
    checked = 0
    for rules in [{}, *rng.sample(rule_sets, min(14, len(rule_sets)))]:
        plain = _plain(step, mesh, rules)
        if plain is None:
            with pytest.raises(sa.errors.LayoutError):
                graphs.figures(rules)
            continue
        fig = graphs.figures(rules)
        for mine, theirs in PAIRS:
            assert getattr(fig, mine) == pytest.approx(getattr(plain, theirs), rel=1e-12, abs=1e-300), (rules, mine)
        checked += 1
    assert checked >= 5
    assert graphs.unpriceable is None
    # each path was traced once, and every later rule set of it priced without running the step
    assert graphs.traces == len(graphs.graphs) < checked


def test_a_path_prices_its_other_rule_sets_without_a_trace():
    step, mesh = STEPS["transformer1"](), MESHES["2x4"]
    graphs = GraphSet(step, mesh, get_profile("a100"))
    rule_sets = search.candidates(step, mesh)[:60]
    for rules in rule_sets:
        try:
            graphs.figures(rules)
        except sa.errors.LayoutError:
            pass
    assert graphs.traces <= 12 < len(rule_sets)  # a handful of paths through the Python
    before = graphs.traces
    for rules in rule_sets[:20]:
        graphs.figures(rules)
    assert graphs.traces == before


def test_memoised_steps_read_the_rules_inside_the_ops():
    # transformer_step makes its parameters with layout=None (the creation op reads the mesh's rules, so the
    # graph can follow them); the plans are those of init_transformer's own layouts
    mesh = MESHES["2x4"]
    step = STEPS["transformer1"]()

    def reference(m):
        params = sa.nn.init_transformer(_CFG, m, strategy=None)
        tokens = sa.zeros(m, {"batch": 8, "seq": _CFG.seq_len}, dtype="int32")
        return sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, tokens, _CFG)

    rng = random.Random(5)
    for rules in rng.sample(search.candidates(step, mesh), 6):
        a, b = _plain(step, mesh, rules), _plain(reference, mesh, rules)
        assert (a is None) == (b is None)
        if a is not None:
            assert ranking.cost_key(a) == ranking.cost_key(b), rules


def test_a_step_reading_the_rules_between_ops_is_traced_in_full():
    def step(mesh):  # the layout is computed in Python from the rules: the graph cannot follow it
        layout = {d: mesh.rules[d] for d in ("batch", "io") if d in mesh.rules}
        x = sa.random.normal(mesh, {"batch": 8, "io": 4}, seed=1, layout=layout)
        w = sa.random.normal(mesh, {"io": 4, "hidden": 8}, seed=2)
        return sa.value_and_grad(lambda w: (sa.einsum("batch io, io hidden -> batch hidden", x, w) ** 2).sum())(w)

    mesh = MESHES["2x2"]
    graphs = GraphSet(step, mesh, get_profile("a100"))
    for rules in ({}, {"batch": ("rows",)}, {"io": ("cols",), "hidden": ("rows",)}):
        fig = graphs.figures(rules)
        plain = _plain(step, mesh, rules)
        assert fig.step_time_s == pytest.approx(plain.step_time_s, rel=1e-12)
        assert fig.memory_bytes == plain.memory_bytes_per_device
    assert graphs.unpriceable is not None and not graphs.graphs


def _brute(step, mesh, limit, k, dims):
    plans = []
    for rules in search.candidates(step, mesh, dims):
        plan = _plain(step, mesh, rules)
        if plan is not None and plan.memory_bytes_per_device <= limit:
            plans.append(plan)
    best: dict = {}
    for p in plans:  # equal costs count once, as the one splitting the fewest dims
        key = ranking.cost_key(p)
        if key not in best or ranking.split_size(p) < ranking.split_size(best[key]):
            best[key] = p
    ranked = sorted(best.values(), key=lambda p: (p.step_time_s, p.memory_bytes_per_device))[:k]
    return [(p.describe(), p.step_time_s, p.memory_bytes_per_device) for p in ranked]


_DIMS = ("batch", "seq", "heads", "d_ff", "vocab")


@pytest.mark.parametrize(
    ("step_name", "mesh_name", "limit", "dims"),
    [
        ("mlp", "2x2", None, None),
        ("mlp", "2x2", 8000, None),
        ("mlp", "2x2x2", None, None),
        ("transformer1", "2x2", None, _DIMS),
        ("transformer2", "2x4", None, _DIMS),
    ],
)
def test_graph_search_matches_brute_force(step_name, mesh_name, limit, dims):
    step, mesh = STEPS[step_name](), MESHES[mesh_name]
    k = 4
    got = sa.plan.search_layouts(step, mesh, limit, top_k=k, graph=True, dims=dims)
    want = _brute(step, mesh, limit if limit is not None else float("inf"), k, dims)
    assert [(p.describe(), p.memory_bytes_per_device) for p in got] == [(d, m) for d, _, m in want]
    assert [p.step_time_s for p in got] == pytest.approx([t for _, t, _ in want], rel=1e-12)
    traced = sa.plan.search_layouts(step, mesh, limit, top_k=k, graph=False, dims=dims)
    assert [p.describe() for p in got] == [p.describe() for p in traced]


def test_graph_search_on_many_layers_matches_the_trace_search():
    step = sa.plan.transformer_step(replace(_CFG, n_layers=4), batch=8)
    stats = sa.plan.SearchStats()
    got = sa.plan.search_layouts(step, MESHES["2x4"], top_k=3, graph=True, stats=stats)
    traced = sa.plan.search_layouts(step, MESHES["2x4"], top_k=3, graph=False)
    assert [(p.describe(), p.step_time_s, p.memory_bytes_per_device) for p in got] == [
        (p.describe(), p.step_time_s, p.memory_bytes_per_device) for p in traced
    ]
    assert stats.graph_paths >= 1 and stats.traces == stats.graph_paths


def test_graph_memo_is_an_op_memo():
    assert isinstance(GraphMemo(), sa.plan.memo.OpMemo)
