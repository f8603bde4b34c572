"""Regressions found by fuzz round 6 of the planner (``sa.plan`` and ``strategy="auto"``): bad inputs that raised a
raw ``OverflowError``/``TypeError`` from inside the library instead of a ``shardarray.errors`` error.
"""

from __future__ import annotations

import pytest

import shardarray as sa

_CFG = sa.nn.TransformerConfig(vocab=8, d_model=4, heads=2, d_kv=2, d_ff=8, n_layers=1, seq_len=4)
MESHES = [{"x": 2}, {"rows": 2, "cols": 2}, {"r": 3, "c": 2}, {"x": 2, "y": 2, "z": 2}]


def _mlp():
    return sa.plan.mlp_step(batch=4, d_io=4, d_hidden=6, layers=1)


def _layouts(plans):
    return [(p.describe(), p.step_time_s, p.memory_bytes_per_device) for p in plans]


@pytest.mark.parametrize("mesh", MESHES, ids=str)
def test_a_memory_limit_past_the_float_range_is_no_limit(mesh):
    """``float(10**400)`` raised a raw ``OverflowError`` in the limit's check (an int limit of any size is a number)."""
    step = _mlp()
    unlimited = sa.plan.search_layouts(step, mesh, None, top_k=2)
    assert _layouts(sa.plan.search_layouts(step, mesh, 10**400, top_k=2)) == _layouts(unlimited)
    with pytest.raises(sa.errors.ArgumentError, match="memory_limit_bytes"):
        sa.plan.search_layouts(step, mesh, -(10**400))


def test_auto_with_a_limit_past_the_float_range_reports_no_limit():
    """The report divided the limit by 2**30 (``OverflowError``); an infinite limit is none (``inf`` printed before)."""
    for limit in (10**400, float("inf")):
        choice = sa.nn.auto_choice(_CFG, {"x": 2}, 4, memory_limit_bytes=limit)
        assert choice.memory_limit_bytes is None and "no memory limit" in choice.report()
        assert choice.rules == sa.nn.auto_choice(_CFG, {"x": 2}, 4).rules


@pytest.mark.parametrize("mesh", MESHES[:2], ids=str)
@pytest.mark.parametrize("dims", [(1, 2), [["batch"]], ("batch", None)], ids=str)
def test_dims_of_other_things_than_names_are_refused(mesh, dims):
    """Numbers were searched as no dim at all (only the replicated layout), a list item raised ``unhashable type``."""
    with pytest.raises(sa.errors.ArgumentError, match="dims"):
        sa.plan.search_layouts(_mlp(), mesh, dims=dims)
    with pytest.raises(sa.errors.ArgumentError, match="dims"):
        sa.plan.candidates(_mlp(), mesh, dims)


@pytest.mark.parametrize("mesh", MESHES[:2], ids=str)
def test_dims_may_be_any_iterable_of_names(mesh):
    """A generator is read once (the check of its items must not use it up)."""
    want = sa.plan.candidates(_mlp(), mesh, ("batch", "hidden"))
    assert sa.plan.candidates(_mlp(), mesh, (d for d in ("batch", "hidden"))) == want
    assert sa.plan.candidates(_mlp(), mesh, ["hidden", "batch"]) == want


@pytest.mark.parametrize("path", [None, 3, b"rules.json"], ids=str)
def test_rules_files_need_a_path(path):
    """``save_rules(None, ...)``/``load_rules(None)`` raised pathlib's raw ``TypeError``."""
    with pytest.raises(sa.errors.ArgumentError, match="save_rules"):
        sa.nn.save_rules(path, {"batch": "x"})
    with pytest.raises(sa.errors.ArgumentError, match="load_rules"):
        sa.nn.load_rules(path)


# heads 2 and vocab 8 over 4 devices leave some devices empty blocks: the search leaves such splits out, and
# megatron (heads, d_ff, vocab over x) is the fastest layout that fits this limit
_EMPTY_CFG = sa.nn.TransformerConfig(vocab=8, d_model=2, heads=2, d_kv=1, d_ff=8, n_layers=1, seq_len=2)
_EMPTY_LIMIT = 18_764


def test_auto_is_never_slower_than_a_named_strategy_on_its_mesh():
    """``strategy="auto"`` chose ``batch:x`` at 0.432 ms and printed the best named strategy, megatron, at -50.0%."""
    choice = sa.nn.auto_choice(_EMPTY_CFG, {"x": 4}, 32, "h100", _EMPTY_LIMIT)
    named, _ = sa.plan.named_plans(_EMPTY_CFG, 32, {"x": 4}, "h100")
    fitting = [p for p in named if p.memory_bytes_per_device <= _EMPTY_LIMIT]
    assert fitting and choice.best.step_time_s <= min(p.step_time_s for p in fitting)
    assert choice.rules == {"heads": ("x",), "d_ff": ("x",), "vocab": ("x",)}
    assert choice.runner_up is not None and choice.runner_up.step_time_s >= choice.best.step_time_s
    assert "-50.0%" not in choice.report()


def test_bench_plan_auto_chooses_the_named_strategy_the_search_leaves_out():
    from shardarray.bench import cli

    args = ["--vocab", "8", "--d-model", "2", "--heads", "2", "--d-kv", "1", "--d-ff", "8", "--layers", "1"]
    args += ["--seq", "2", "--batch", "32", "--mesh", "x=4", "--hardware", "h100", "--memory", str(_EMPTY_LIMIT)]
    result = cli.run(["plan", *args, "--top", "2", "--quiet"])
    assert result["best"][0]["step_time_s"] <= min(p["step_time_s"] for p in result["named"] if p["fits"])
    assert result["chosen"]["rules"] == {"heads": ["x"], "d_ff": ["x"], "vocab": ["x"]}
    assert result["explain"]["step_time_s"] == result["best"][0]["step_time_s"]
