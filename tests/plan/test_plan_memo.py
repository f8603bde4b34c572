"""The layout search's per-op memo (``sa.plan.memo``): plans with it equal plans without it, bit for bit."""

from __future__ import annotations

import pytest

import shardarray as sa
from shardarray.core.tape import OP_MEMO
from shardarray.plan.memo import OpMemo

_CFG = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=2, seq_len=8)
CASES = {
    "transformer_2x2": (lambda: sa.plan.transformer_step(_CFG, batch=4), {"rows": 2, "cols": 2}),
    "transformer_3x2": (lambda: sa.plan.transformer_step(_CFG, batch=6), {"p": 3, "q": 2}),
    "mlp_2x2x2": (lambda: sa.plan.mlp_step(batch=8, d_io=6, d_hidden=10, layers=3), {"x": 2, "y": 2, "z": 2}),
}


def _plan(step, mesh, rules, memo=None):
    try:
        return sa.plan.evaluate_layout(step, mesh, rules, memo=memo)
    except sa.errors.LayoutError:
        return "refused"


@pytest.mark.parametrize("name", sorted(CASES))
def test_memo_plans_equal_plain_plans(name):
    """Every figure and the per-op breakdown agree; the memo is hit (repeated layers, shared dims)."""
    make, mesh = CASES[name]
    step = make()
    rule_sets = sa.plan.search.candidates(step, mesh)
    rule_sets = rule_sets[:: max(1, len(rule_sets) // 25)]
    memo = OpMemo()
    for _ in range(2):  # the second pass replays nearly everything
        for rules in rule_sets:
            plain, memoised = _plan(step, mesh, rules), _plan(step, mesh, rules, memo)
            assert plain == memoised, rules
            if plain != "refused":
                assert plain.ops == memoised.ops, rules
    assert memo.hits > memo.misses > 0


def test_memo_is_inert_outside_a_search():
    """No memo is active outside ``evaluate_layout(..., memo=...)``, and none is left behind."""
    step, mesh = CASES["mlp_2x2x2"][0](), CASES["mlp_2x2x2"][1]
    assert OP_MEMO.get() is None
    memo = OpMemo()
    _plan(step, mesh, {"batch": "x"}, memo)
    assert OP_MEMO.get() is None and memo.misses > 0
    before = (memo.hits, memo.misses, memo.skipped)
    _plan(step, mesh, {"batch": "x"})
    assert (memo.hits, memo.misses, memo.skipped) == before


def test_the_search_uses_the_memo_and_can_do_without():
    """The search replays ops by default; ``memo=False`` runs every op, with the same answer."""
    make, mesh = CASES["transformer_2x2"]
    step = make()
    on, off = sa.plan.SearchStats(), sa.plan.SearchStats()
    best_on = sa.plan.search_layouts(step, mesh, top_k=3, stats=on)
    best_off = sa.plan.search_layouts(step, mesh, top_k=3, stats=off, memo=False)
    assert best_on == best_off
    assert on.memo_hits > on.memo_misses > 0 and off.memo_hits == off.memo_misses == 0


def test_seeds_share_one_entry_on_meta_and_keep_their_values_elsewhere():
    """``normal``'s seed changes values only: under a search (meta) weights that differ only in their seed share one
    memo entry; outside one (and on NumPy shards) the seed still picks the values, and a bad seed is still refused."""
    import numpy as np

    def step(mesh):
        return [sa.random.normal(mesh, {"io": 8, "hidden": 4}, seed=s) for s in (1, 2, 3)]

    memo = OpMemo()
    plan = sa.plan.evaluate_layout(step, {"x": 2, "y": 2}, {"io": "x"}, memo=memo)
    assert (memo.misses, memo.hits) == (1, 2)
    assert plan == sa.plan.evaluate_layout(step, {"x": 2, "y": 2}, {"io": "x"})
    mesh = sa.Mesh({"x": 2, "y": 2})
    a, b = (sa.random.normal(mesh, {"io": 8, "hidden": 4}, seed=s, layout={"io": "x"}).numpy() for s in (1, 2))
    assert not np.array_equal(a, b)
    memo = OpMemo()
    with pytest.raises(sa.errors.DTypeError, match="seed must be an integer"):
        sa.plan.evaluate_layout(
            lambda m: sa.random.normal(m, {"io": 8}, seed=1.5), {"x": 2, "y": 2}, {"io": "x"}, memo=memo
        )
