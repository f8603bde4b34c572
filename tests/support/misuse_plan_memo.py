"""Misuse of the layout search's op memo (``sa.plan.memo``)."""

from __future__ import annotations

from misuse import Case

import shardarray as sa

STEP = sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8)

CASES = [
    Case("plan-memo-not-an-opmemo", lambda: sa.plan.evaluate_layout(STEP, {"rows": 2}, {}, memo={}), sa.DTypeError,
         ("dict", "memo"), ("sa.plan.memo.OpMemo()",)),
]
