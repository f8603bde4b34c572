"""The graph search's deferral (``plan.search_graphed.Deferred``): exact figures only for the rule sets that can place.

After a rule set's one- and two-layer walks the affine rule in the layer count gives its step time, comm bytes and
flops; where the memory limit cannot bind (no limit, or the bytes made live in the whole step plus an op's largest
excursion fit it: ``Figures.allocated_bytes``), the search keeps the rule set with those figures and prices it
exactly at the end only if it can make the top k. These tests hold the search with deferral against the search
without it (``plan.ranking.DEFER``) plan for plan, every figure bit for bit, on shallow and deep models, four meshes,
limits that bind and that do not, and top-k cuts through ties; against brute force on small cases; the memory
bound against the traced peak on random rule sets; and the cut's counting of deferred rule sets by hand.
"""

from __future__ import annotations

import math
import random
import zlib
from dataclasses import replace

import pytest

import shardarray as sa
from shardarray.hardware import get_profile
from shardarray.plan import deep, ranking, search, search_graphed
from shardarray.plan.graph import Figures, GraphSet

_CFG = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=1, seq_len=8)
CASES = {
    "transformer3_2x2": (
        lambda n: sa.plan.transformer_step(replace(_CFG, n_layers=n), batch=4),
        3,
        {"rows": 2, "cols": 2},
    ),
    "transformer4_3x2": (lambda n: sa.plan.transformer_step(replace(_CFG, n_layers=n), batch=6), 4, {"p": 3, "q": 2}),
    "mlp5_2x2x2": (lambda n: sa.plan.mlp_step(batch=8, d_io=6, d_hidden=10, layers=n), 5, {"x": 2, "y": 2, "z": 2}),
    "transformer12_2x2": (
        lambda n: sa.plan.transformer_step(replace(_CFG, n_layers=n), batch=8),
        12,
        {"rows": 2, "cols": 2},
    ),
}
DIMS = ("batch", "heads", "d_ff", "vocab", "hidden", "io")  # (a subset keeps the searches and brute force quick)
RUNS = (("none", 1), ("loose", 5), ("binding", 2), ("binding", 5))


def _search(step, mesh, limit, k, defer, monkeypatch, **kw):
    monkeypatch.setattr(ranking, "DEFER", defer)
    stats = sa.plan.SearchStats()
    plans = sa.plan.search_layouts(step, mesh, limit, top_k=k, dims=DIMS, stats=stats, **kw)
    total = stats.complete + stats.stopped_time + stats.stopped_memory + stats.stopped_bound + stats.symmetric
    assert total + stats.refused == stats.legal  # (each deferred rule set ends once: priced, cut or refused)
    assert stats.deferred_priced <= stats.deferred <= stats.legal
    return plans, stats


def _limits(step, mesh):
    """No limit, a finite limit that cannot bind, and one that binds (half the top plans' peaks fit)."""
    top = sa.plan.search_layouts(step, mesh, top_k=6, dims=DIMS)
    peaks = sorted(p.memory_bytes_per_device for p in top)
    return {"none": None, "loose": 2**40, "binding": peaks[len(peaks) // 2]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_deferral_gives_the_search_without_it(name, monkeypatch):
    make, layers, mesh = CASES[name]
    step = make(layers)
    limits = _limits(step, mesh)
    deferred_any = False
    for what, k in RUNS:
        off, off_stats = _search(step, mesh, limits[what], k, False, monkeypatch)
        on, on_stats = _search(step, mesh, limits[what], k, True, monkeypatch)
        assert on == off, (what, k)  # the same plans, labels and every figure, bit for bit
        assert off_stats.deferred == 0
        if what != "binding":
            deferred_any |= on_stats.deferred > on_stats.deferred_priced
            assert on_stats.full_walks < off_stats.full_walks, (what, k)
    assert deferred_any  # (some rule set never needed its exact figures)


def test_deferral_breaks_ties_as_the_search_without_it(monkeypatch):
    """Without the axis symmetry, renamings of a rule set over a 2x2 mesh's interchangeable axes cost exactly the
    same: deferred, they count once in the cut, and the plan kept for a cost is the simplest, then the earliest, as
    without deferral, for every k (also the answer of the search with the symmetry)."""
    make, layers, mesh = CASES["transformer3_2x2"]
    step = make(layers)
    for k in (1, 4):
        off, _ = _search(step, mesh, None, k, False, monkeypatch, symmetric=False)
        on, stats = _search(step, mesh, None, k, True, monkeypatch, symmetric=False)
        assert on == off, k
        assert stats.symmetric == 0 and stats.deferred > 0
        assert on == _search(step, mesh, None, k, True, monkeypatch)[0]


@pytest.mark.parametrize("name", ["transformer3_2x2", "mlp5_2x2x2"])
def test_deferral_equals_brute_force(name, monkeypatch):
    make, layers, mesh = CASES[name]
    step = make(layers)
    limits = _limits(step, mesh)
    for limit in (None, limits["binding"]):
        fast, stats = _search(step, mesh, limit, 5, True, monkeypatch)
        full = sa.plan.search_layouts(step, mesh, limit, top_k=5, dims=DIMS, prune=False, symmetric=False)
        assert fast == full
        assert limit is not None or stats.deferred > 0


def _allocated_bound(step, mesh, rules, hw, sets):
    one, two = (sets[s].figures(rules) for s in ("one", "two"))
    made = one.allocated_bytes + (step.layers - 1) * (two.allocated_bytes - one.allocated_bytes)
    return made + max(one.memory_bytes, two.memory_bytes), made


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_allocated_bound_holds_the_traced_peak(name):
    """Bytes made live (affine in the layer count) plus the one- and two-layer peaks bound the step's traced peak;
    the extrapolated bytes made are the step's own walk's (to 1e-12)."""
    make, layers, mesh = CASES[name]
    step, hw = make(layers), get_profile("a100")
    sets = {"one": GraphSet(step.lower_bound, mesh, hw), "two": GraphSet(step.two_layers, mesh, hw)}
    full = deep.deep_graphs(step, mesh, hw)
    rng = random.Random(zlib.crc32(name.encode()))
    rule_sets = search.candidates(step, mesh)
    checked = 0
    for rules in [{}, *rng.sample(rule_sets, min(7, len(rule_sets)))]:
        try:
            traced = sa.plan.evaluate_layout(step, mesh, rules)
        except sa.errors.LayoutError:
            continue
        bound, made = _allocated_bound(step, mesh, rules, hw, sets)
        assert bound >= traced.memory_bytes_per_device, rules
        fig = full.figures(rules)
        assert fig.memory_bytes == traced.memory_bytes_per_device
        assert fig.allocated_bytes == pytest.approx(made, rel=1e-12), rules
        assert fig.allocated_bytes + max(0, fig.memory_bytes) >= fig.memory_bytes
        checked += 1
    assert checked >= 5


def test_a_built_deep_path_sums_the_bytes_made_as_the_traced_one():
    """``plan.deep`` scales the bytes made from its probe walk like the other sums: the plain walk's, to 1e-12."""
    make, layers, mesh = CASES["transformer12_2x2"]
    step, hw = make(layers), get_profile("a100")
    built = deep.deep_graphs(step, mesh, hw)
    assert isinstance(built, deep.LayeredGraphSet)
    plain = GraphSet(step, mesh, hw)
    rng = random.Random(12)
    rule_sets = search.candidates(step, mesh)
    for rules in [{}, *rng.sample(rule_sets, 4)]:
        try:
            a = built.figures(rules)
        except sa.errors.LayoutError:
            continue
        b = plain.figures(rules)
        assert a.allocated_bytes == pytest.approx(b.allocated_bytes, rel=1e-12), rules
        assert a.memory_bytes == b.memory_bytes
    assert built.probed > 0


def _fig(t, comm=5.0, flops=7.0, peak=10, made=100.0):
    return Figures(t, t, 0.0, 0.0, peak, comm, comm, flops, {"float32": flops}, 0.0, made)


def test_the_cut_counts_a_deferred_cost_once():
    """Deferred rule sets of one cost (to rounding), or of an exact cost found, count once in the cut: counting
    them twice would make it tighter than the k-th best distinct exact time."""
    stats = search.SearchStats()
    d = search_graphed.Deferred(top_k=3, layers=3)
    found = {(1.0, 10, 5.0, 7.0): None}
    assert d.add(_fig(2.0), _fig(2.0), math.inf, 0, {})
    assert d.add(_fig(2.0 * (1 + 1e-14)), _fig(2.0 * (1 + 1e-14)), math.inf, 1, {})  # (one cost, rounded apart)
    assert d.add(_fig(1.0 + 1e-15), _fig(1.0 + 1e-15), math.inf, 2, {})  # (the exact cost found)
    assert d.cut(found, stats) == math.inf  # two distinct costs so far: 1.0 and 2.0
    assert d.add(_fig(2.0, comm=6.0), _fig(2.0, comm=6.0), math.inf, 3, {})  # (another cost of the same time)
    assert d.add(_fig(5.0), _fig(5.0), math.inf, 4, {})
    assert d.cut(found, stats) == 2.0
    assert [c[3] for c in d.items] == [2, 0, 3, 1]  # (5.0 passed the cut: dropped as an affine cut)
    assert stats.stopped_bound == stats.affine_cuts == 1


def test_a_finite_limit_defers_only_where_the_allocated_bound_fits():
    """The bytes made (``L - 1`` times the second layer's more) plus the larger walk peak must fit the limit."""
    d = search_graphed.Deferred(top_k=1, layers=4)
    one, two = _fig(1.0, peak=30, made=100.0), _fig(2.0, peak=40, made=150.0)  # bound: 100 + 3 * 50 + 40 = 290
    assert not d.add(one, two, 289.0, 0, {})
    assert d.add(one, two, 290.0, 1, {})
    assert d.items[0][:3] == (4.0, 5.0, 7.0)
    unknown = _fig(1.0, made=math.inf)  # (figures from a trace: no bytes made known)
    assert not d.add(unknown, unknown, 1e30, 2, {}) and d.add(unknown, unknown, math.inf, 3, {})
