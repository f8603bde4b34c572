"""The graph walk's shortcuts (``plan.graph``) against what they replace.

``GraphSet._rules_of`` normalises a rule set as ``Mesh(shape, rules=...)`` does (same dict, same errors) without
a mesh per rule set; ``graph._first_entry`` finds a call's memo entry by an index where the memo scans its
entries (the same entry: the first whose rules are the walk's). Figures against full traces and the search
against brute force: ``test_plan_graph.py``.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import shardarray as sa
from shardarray.hardware import get_profile
from shardarray.plan import graph, search
from shardarray.plan.graph import GraphSet
from shardarray.plan.memo import _NEVER

_CFG = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=2, seq_len=8)
MESH = {"x": 2, "y": 2, "z": 2}


def test_rules_of_is_the_meshs_normalisation():
    step = sa.plan.transformer_step(_CFG, batch=8)
    graphs = GraphSet(step, MESH, get_profile("a100"))
    odd = [{"batch": "x"}, {"batch": ["y", "x"]}, {"batch": (), "seq": None}, {"d_ff": ("z",), "heads": "x"}]
    for rules in [*search.candidates(step, MESH)[:200], *odd]:
        want = sa.Mesh(MESH, backend="meta", rules=rules).rules
        got = graphs._rules_of(rules)
        assert got == want and list(got) == list(want)
    for bad, err in (({"batch": "w"}, sa.errors.LayoutError), ({"batch": ("x", "x")}, sa.errors.LayoutError)):
        with pytest.raises(err):
            sa.Mesh(MESH, backend="meta", rules=bad)
        with pytest.raises(err):
            graphs._rules_of(bad)
    with pytest.raises(sa.errors.MeshError):
        graphs._rules_of({1: "x"})


def _scan(found, items, rget):
    for e in found:
        cur = items if e.consulted is None else tuple(rget(d) for d in e.consulted)
        if cur == e.rules:
            return e
    return None


def test_first_entry_is_the_memos_scan():
    step = sa.plan.transformer_step(replace(_CFG, n_layers=1), batch=8)
    graphs = GraphSet(step, MESH, get_profile("a100"))
    rule_sets = search.candidates(step, MESH)
    rng = random.Random(3)
    priced = rng.sample(rule_sets, 40)
    for rules in priced:
        try:
            graphs.figures(rules)
        except sa.errors.LayoutError:
            pass
    sites = [c for path in graphs.graphs for ev in path if ev[0] == graph._CALL for c in ev[11].values()]
    sites = [c for c in sites if c[2] is not None and c[2] is not _NEVER]
    assert sites and max(len(c[2]) for c in sites) > 1  # keys with several entries, so the index has work
    checked = 0
    for rules in [*priced, *rng.sample(rule_sets, 40)]:
        norm = graphs._rules_of(rules)
        items = tuple(dict.items(norm))
        for c in sites:
            fresh = [c[0], {}, c[2], {}, 0]  # an index built from nothing, and the walk's own (built as it went)
            want = _scan(c[2], items, norm.get)
            assert graph._first_entry(fresh, c[2], items, norm.get) is want
            assert graph._first_entry(c, c[2], items, norm.get) is want
            checked += want is not None
    assert checked > 0
