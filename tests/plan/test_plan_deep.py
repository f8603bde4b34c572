"""A deep model's op graph built from a shallow twin's (``plan.deep``), held against full traces.

``LayeredGraphSet`` builds an ``L``-layer step's paths from its five-layer twin's traced path (the middle layer
repeated), kept only where the six-layer path built the same way is the traced one. These tests hold every figure
of the built paths against a plain full trace of the deep step to 1e-12 (peak memory exactly), check that the paths
were built rather than traced, that a step whose layers are not labelled falls back to tracing itself with the
same figures, and that a search of a deep model gives the same plans with and without building.
"""

from __future__ import annotations

import contextlib
import random
import zlib
from dataclasses import replace

import pytest

import shardarray as sa
from shardarray.hardware import get_profile
from shardarray.memo_hook import layer
from shardarray.plan import deep, search
from shardarray.plan.deep import LayeredGraphSet, _settled, canonical, layered
from shardarray.plan.graph import GraphSet
from shardarray.plan.repeat import Notes

_CFG = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=13, seq_len=8)
STEPS = {
    "mlp14": lambda: sa.plan.mlp_step(batch=8, d_io=8, d_hidden=16, layers=14),
    "transformer13": lambda: sa.plan.transformer_step(_CFG, batch=8),
}
MESHES = {"2x2": {"rows": 2, "cols": 2}, "2x2x2": {"x": 2, "y": 2, "z": 2}}
PAIRS = [
    ("step_time_s", "step_time_s"),
    ("compute_time_s", "compute_time_s"),
    ("memory_time_s", "memory_time_s"),
    ("comm_time_s", "comm_time_s"),
    ("comm_bytes", "comm_bytes_per_device"),
    ("wire_bytes", "wire_bytes_per_device"),
    ("flops", "flops_per_device"),
]


def _plain(step, mesh, rules):
    try:
        return sa.plan.evaluate_layout(step, mesh, rules)
    except sa.errors.LayoutError:
        return None


@pytest.mark.parametrize("mesh_name", sorted(MESHES))
@pytest.mark.parametrize("step_name", sorted(STEPS))
def test_built_paths_price_like_the_full_trace(step_name, mesh_name):
    step, mesh = STEPS[step_name](), MESHES[mesh_name]
    graphs = deep.deep_graphs(step, mesh, get_profile("a100"))
    assert isinstance(graphs, LayeredGraphSet)
    rng = random.Random(zlib.crc32(f"{step_name} {mesh_name}".encode()))
    rule_sets = search.candidates(step, mesh)
    checked = 0
    for rules in [{}, *rng.sample(rule_sets, min(8, len(rule_sets)))]:
        plain = _plain(step, mesh, rules)
        if plain is None:
            with pytest.raises(sa.errors.LayoutError):
                graphs.figures(rules)
            continue
        fig = graphs.figures(rules)
        for mine, theirs in PAIRS:
            assert getattr(fig, mine) == pytest.approx(getattr(plain, theirs), rel=1e-12, abs=1e-300), (rules, mine)
        assert fig.memory_bytes == plain.memory_bytes_per_device, rules
        checked += 1
    assert checked >= 4
    assert graphs.built == len(graphs.graphs) >= 1, graphs.refused  # every path built, none traced in full
    assert graphs.probed == checked  # every rule set priced from the seven-layer probe, scaled (``plan.repeat``)


@pytest.mark.parametrize("step_name", sorted(STEPS))
def test_the_built_path_is_the_traced_one(step_name):
    """Event for event (values renumbered in order of making) up to the last op call, for depths the check does not
    use (the frees after it follow the garbage collector, even between two traces of one step)."""
    make = STEPS[step_name]().with_layers
    graphs = GraphSet(make(5), {"rows": 2, "cols": 2}, get_profile("a100"))
    rules = {"batch": "rows"}
    rec, _, _ = graphs._trace(make(5), rules)
    for n in (5, 7, 9):
        traced, _, _ = graphs._trace(make(n), rules)
        built = layered(rec.events, rec.labels, rec.vlabel, n)
        assert canonical(_settled(built)) == canonical(_settled(traced.events)), n


def _chain(n, labelled):
    """A step of ``n`` einsum layers that says it repeats (``layers``, ``with_layers``); ``labelled``: each layer runs
    as itself (``memo_hook.layer``) and its weight is scaled by ``1 / n``, a static argument of the depth."""

    def step(mesh):
        def as_layer(i):
            return layer(i) if labelled else contextlib.nullcontext()

        x = sa.random.normal(mesh, {"batch": 8, "io": 8}, seed=1)
        ws = []
        for i in range(n):
            with as_layer(i):
                w = sa.random.normal(mesh, {"io": 8, "io2": 8}, seed=i)
                ws.append(w * (1.0 / n) if labelled else w)

        def loss(ws):
            y = x
            for i, w in enumerate(ws):
                with as_layer(i):
                    y = sa.einsum("batch io, io io2 -> batch io2", y, w).rename({"io2": "io"})
            return (y * y).sum()

        return sa.value_and_grad(loss)(ws)

    step.layers, step.with_layers = n, lambda m: _chain(m, labelled)
    return step


def _traced_itself(step, rules):
    """The step's graph set after pricing ``rules``: nothing built, the figures the full trace's."""
    mesh = {"rows": 2, "cols": 2}
    graphs = deep.deep_graphs(step, mesh, get_profile("a100"))
    fig, plain = graphs.figures(rules), _plain(step, mesh, rules)
    assert graphs.built == 0 and graphs.refused
    assert fig.step_time_s == pytest.approx(plain.step_time_s, rel=1e-12)
    assert fig.memory_bytes == plain.memory_bytes_per_device
    return graphs


def test_a_step_without_layer_labels_is_traced_itself():
    """A step that says it repeats but does not mark its layers: nothing is built, the figures are the trace's."""
    _traced_itself(_chain(13, labelled=False), {"batch": "rows"})


def test_layers_that_differ_are_not_built():
    """Layers labelled as such whose code differs with the depth (a static argument of the layer count): the check
    against the six-layer trace refuses the build, and the step itself is traced."""
    graphs = _traced_itself(_chain(12, labelled=True), {"io": "cols"})
    assert "not the traced one" in graphs.refused


def test_a_deep_search_gives_the_plans_of_the_search_that_traces_it(monkeypatch):
    step, mesh = sa.plan.transformer_step(replace(_CFG, n_layers=12), batch=8), {"rows": 2, "cols": 2}
    built = sa.plan.search_layouts(step, mesh, top_k=3)
    monkeypatch.setattr(deep, "DEEP", 10**9)
    traced = sa.plan.search_layouts(step, mesh, top_k=3)
    assert [p.rules for p in built] == [p.rules for p in traced]
    for a, b in zip(built, traced):
        assert a.step_time_s == pytest.approx(b.step_time_s, rel=1e-12)
        assert a.memory_bytes_per_device == b.memory_bytes_per_device


def test_a_probe_that_does_not_scale_falls_back_to_the_deep_path(monkeypatch):
    """Where the probe's copies do not read alike (``Notes.scale`` gives None), the ``L``-layer paths are built then
    and walked: the same figures as the full trace."""
    monkeypatch.setattr(Notes, "scale", lambda self, *a, **k: None)
    step, mesh = STEPS["transformer13"](), MESHES["2x2"]
    graphs = deep.deep_graphs(step, mesh, get_profile("a100"))
    for rules in ({}, {"batch": "rows"}, {"heads": "cols", "batch": "rows"}):
        fig, plain = graphs.figures(rules), _plain(step, mesh, rules)
        for mine, theirs in PAIRS:
            assert getattr(fig, mine) == pytest.approx(getattr(plain, theirs), rel=1e-12, abs=1e-300), (rules, mine)
        assert fig.memory_bytes == plain.memory_bytes_per_device, rules
    assert graphs.probed == 0 and graphs.built >= 1
    assert len(graphs._paths) == graphs.built and not graphs._pending  # (built from the kept five-layer traces)


def test_copies_that_start_from_different_states_are_not_scaled():
    """``Notes.scale`` gives figures only where every run's second and third copies start from the same state, and
    the walk stayed on one path."""
    step, mesh = STEPS["mlp14"](), MESHES["2x2"]
    graphs = deep.deep_graphs(step, mesh, get_profile("a100"))
    graphs.figures({"batch": "rows"})  # (records the probe path)
    probe = graphs.probe
    pid = probe._last

    def walked():
        notes = Notes(probe._spans[pid], probe._paths[pid])
        fig = probe._walk(pid, probe._rules_of({"batch": "rows"}), probe.mesh, float("inf"), float("inf"), 0.0, notes)
        return notes, fig

    notes, fig = walked()
    assert len(notes.spans) >= 2 and all(s.count == 3 for s in notes.spans)
    sums = deep._sums(fig)
    same = notes.scale(0, sums, fig.flops_by_dtype)
    assert same is not None and same[2] == fig_peak(graphs, step, mesh)  # no copy added: the probe's own peak
    assert notes.scale(5, sums, fig.flops_by_dtype) is not None
    uses, state = notes.state[(0, 2)]
    notes.state[(0, 2)] = (uses, (state[0][:-1], state[1]))
    assert notes.scale(5, sums, fig.flops_by_dtype) is None
    notes, fig = walked()
    notes.moved = True
    assert notes.scale(5, sums, fig.flops_by_dtype) is None


def fig_peak(graphs, step, mesh):
    """The peak live bytes of the probe's own step (seven layers), from its full trace."""
    return _plain(step.with_layers(deep.PROBE), mesh, {"batch": "rows"}).memory_bytes_per_device


def test_a_deep_search_under_a_memory_limit_gives_the_plans_of_the_search_that_traces_it(monkeypatch):
    """A limit that the faster layouts pass: the scaled peak (``plan.repeat``) cuts the same rule sets as the walk of
    every layer does."""
    step, mesh = sa.plan.transformer_step(replace(_CFG, n_layers=12), batch=8), {"rows": 2, "cols": 2}
    limit = 1_300_000  # (the replicated layout needs about 1.5 MB per device, the most split ones about 0.9 MB)
    built = sa.plan.search_layouts(step, mesh, memory_limit_bytes=limit, top_k=3)
    monkeypatch.setattr(deep, "DEEP", 10**9)
    traced = sa.plan.search_layouts(step, mesh, memory_limit_bytes=limit, top_k=3)
    assert [p.rules for p in built] == [p.rules for p in traced]
    assert all(p.memory_bytes_per_device <= limit for p in built)
    assert built[0].rules  # (not the replicated layout: it does not fit)
    for a, b in zip(built, traced):
        assert a.step_time_s == pytest.approx(b.step_time_s, rel=1e-12)
        assert a.memory_bytes_per_device == b.memory_bytes_per_device


@pytest.mark.parametrize(
    "make",
    [
        lambda n: sa.plan.transformer_step(replace(_CFG, n_layers=n), batch=8),
        lambda n: sa.plan.mlp_step(batch=8, d_io=8, d_hidden=16, layers=n),
    ],
    ids=["transformer", "mlp"],
)
def test_the_shallow_twin_has_the_dims_and_tensors_of_the_step(make):
    """``search.candidates`` discovers a step of more than two identical layers from its two-layer twin: the same
    dims, sizes and distinct tensor dims as the step's own trace, so the same rule sets in the same order."""
    mesh = {"rows": 2, "cols": 2}
    for n in (3, 6, 13):
        step = make(n)
        twin = deep.shallow_twin(step)
        assert twin is step.two_layers
        own, got = search.discover(step, mesh), search.discover(twin, mesh)
        assert own.dims == got.dims and own.tensors == got.tensors
    for n in (1, 2):  # (a step of one or two layers is its own twin)
        step = make(n)
        assert deep.shallow_twin(step) is step
