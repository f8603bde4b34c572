"""The search's memo replays whole VJPs (``OpMemo.call_vjp``): plans equal plain traces, bit for bit.

A self-check over >= 40 rule sets spread over the space of the README's small transformer on 2×4 and
a 3-layer MLP on 2×2×2 (and a few of the Mesh-TF 6-layer model): every figure of the plan and the
per-op breakdown equal a trace without the memo, on a cold memo and on a warm one.
"""

from __future__ import annotations

import random

import pytest

import shardarray as sa
from shardarray.core.tape import OP_MEMO
from shardarray.plan.memo import OpMemo

_SMALL = sa.nn.TransformerConfig(vocab=512, d_model=64, heads=8, d_kv=16, d_ff=256, n_layers=2, seq_len=32)
_MESHTF = sa.nn.TransformerConfig(vocab=32768, d_model=1024, heads=16, d_kv=64, d_ff=4096, n_layers=6, seq_len=256)
CASES = {
    "small_2x4": (lambda: sa.plan.transformer_step(_SMALL, batch=16), {"rows": 2, "cols": 4}, 40),
    "mlp3_2x2x2": (lambda: sa.plan.mlp_step(batch=8, d_io=6, d_hidden=10, layers=3), {"x": 2, "y": 2, "z": 2}, 40),
    "meshtf_6layer_2x2x2": (lambda: sa.plan.transformer_step(_MESHTF, batch=64), {"x": 2, "y": 2, "z": 2}, 3),
}


def _plan(step, mesh, rules, memo=None):
    try:
        return sa.plan.evaluate_layout(step, mesh, rules, memo=memo)
    except sa.errors.LayoutError:
        return "refused"


def _vjp_entries(memo: OpMemo) -> int:
    return sum(len(v) for k, v in memo._entries.items() if k[0].startswith("vjp:"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_vjp_memo_plans_equal_plain_plans(name):
    make, mesh, count = CASES[name]
    step = make()
    rule_sets = sa.plan.search.candidates(step, mesh)
    picked = random.Random(18).sample(rule_sets, min(count, len(rule_sets)))
    memo = OpMemo()
    for _ in range(2):  # cold, then warm (the second pass replays the VJPs recorded in the first)
        for rules in picked:
            plain, memoised = _plan(step, mesh, rules), _plan(step, mesh, rules, memo)
            assert plain == memoised, rules
            if plain != "refused":
                assert plain.ops == memoised.ops, rules
    assert _vjp_entries(memo) > 0 and memo.hits > memo.misses
    assert OP_MEMO.get() is None


def test_vjp_memo_replays_the_backward_pass():
    """On a warm memo a trace replays its VJPs: repeating a rule set records (almost) nothing new.

    (A few calls of the first traces, where ops run for real, can be keyed unlike the same calls when
    replayed, so a warm trace may still record a handful; the cold trace records every call.)
    """
    make, mesh, _ = CASES["mlp3_2x2x2"]
    step = make()
    memo = OpMemo()
    first = _plan(step, mesh, {"batch": "x", "hidden": "y"}, memo)
    cold, entries = memo.misses, _vjp_entries(memo)
    _plan(step, mesh, {"batch": "x", "hidden": "y"}, memo)
    misses, hits = memo.misses, memo.hits
    again = _plan(step, mesh, {"batch": "x", "hidden": "y"}, memo)
    assert first == again and first.ops == again.ops
    assert entries > 0 and (memo.misses - misses) * 4 <= cold and memo.hits - hits >= 3 * cold // 4


def test_backward_outside_a_search_does_not_touch_a_memo():
    """``value_and_grad`` under a plain profile (no search) runs its VJPs as they are: same figures."""
    step, mesh = CASES["mlp3_2x2x2"][0](), CASES["mlp3_2x2x2"][1]
    a = _plan(step, mesh, {"batch": "x"})
    b = _plan(step, mesh, {"batch": "x"})
    assert a == b and a.ops == b.ops and OP_MEMO.get() is None
