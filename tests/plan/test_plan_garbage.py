"""A layout search leaves almost no reference cycles, so it can run with the cyclic garbage collector paused.

``search_layouts`` pauses the collector during a graph search (``plan.search._collector_paused``): it used to
spend a fifth of a small search walking the search's own growing tables. That is only safe while the search
makes next to no cyclic garbage (each priced op's closure, mesh and profile freed by reference counting), which
these tests hold it to, on a transformer deep enough to price from its built paths (``plan.deep``).
"""

from __future__ import annotations

import gc

import pytest

import shardarray as sa

CFG = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=2, seq_len=8)
DEEP = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=13, seq_len=8)


def _cyclic_garbage(cfg: sa.nn.TransformerConfig, shape: dict[str, int]) -> int:
    step = sa.plan.transformer_step(cfg, 8)
    sa.plan.search_layouts(step, shape, top_k=2)  # (once first: what a process makes once is not the search's)
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        sa.plan.search_layouts(step, shape, top_k=2)
        gc.collect()
        return len(gc.garbage)
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()


@pytest.mark.parametrize(("cfg", "shape"), [(CFG, {"rows": 2, "cols": 4}), (DEEP, {"a": 2, "b": 2})])
def test_a_search_leaves_almost_no_cycles(cfg, shape):
    # 125 and 282 objects on 2026-11-27; 3,094 and 8,204 before the tree walks stopped being closures that call
    # themselves, and 63,940 in a search of the README's small model before the priced ops' closures did
    assert _cyclic_garbage(cfg, shape) < 1000


def test_the_collector_is_as_it_was_after_a_search():
    step = sa.plan.transformer_step(CFG, 8)
    assert gc.isenabled()
    sa.plan.search_layouts(step, {"rows": 2, "cols": 2}, top_k=1)
    assert gc.isenabled()
    gc.disable()
    try:
        sa.plan.search_layouts(step, {"rows": 2, "cols": 2}, top_k=1)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_comes_back_when_a_search_raises():
    step = sa.plan.transformer_step(CFG, 8)
    with pytest.raises(sa.ArgumentError):
        sa.plan.search_layouts(step, {"rows": 2, "cols": 2}, memory_limit_bytes=1, top_k=1)
    assert gc.isenabled()
