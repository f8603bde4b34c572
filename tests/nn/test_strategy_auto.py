"""``strategy="auto"``: the planner's rules for the reference transformer, end to end on a 2×2 emulated mesh."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import shardarray as sa
from shardarray.bench import cli

CFG = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
SHAPE = {"rows": 2, "cols": 2}
LIMIT = 70_000  # bytes per device: replicated (the best without a limit at this size) does not fit


@pytest.fixture(scope="module")
def choice():
    return sa.nn.auto_choice(CFG, SHAPE, batch=8, memory_limit_bytes=LIMIT)


def test_the_choice_is_no_slower_than_the_best_named_strategy(choice):
    named, _ = sa.plan.named_plans(CFG, 8, SHAPE, "h100")
    fitting = [p for p in named if p.memory_bytes_per_device <= LIMIT]
    assert fitting and choice.best.step_time_s <= min(p.step_time_s for p in fitting)
    assert choice.best.memory_bytes_per_device <= LIMIT and choice.rules  # something is split
    assert choice.runner_up is not None and choice.runner_up.step_time_s >= choice.best.step_time_s
    assert choice.named[0].step_time_s == min(p.step_time_s for p in fitting)


def test_the_report_names_the_choice_and_a_line_to_paste(choice):
    text = choice.report()
    assert "chosen" in text and "next best" in text and f"best named: {choice.named[0].label}" in text
    line = text.splitlines()[-1].split("reuse: ", 1)[1]
    mesh = eval(line, {"sa": sa})  # the pasted line builds the mesh with the chosen rules
    assert mesh.rules == choice.rules


def test_init_transformer_auto_sets_the_rules_and_trains(choice, capsys):
    mesh = sa.Mesh(SHAPE)
    params = sa.nn.init_transformer(CFG, mesh, strategy="auto", batch=8, memory_limit_bytes=LIMIT)
    assert 'strategy="auto"' in capsys.readouterr().out
    assert mesh.rules == choice.rules  # a mesh without rules takes the chosen ones: tokens and activations follow
    for name, dims in sa.nn.param_shapes(CFG).items():
        assert params[name].layout == {d: choice.rules[d] for d in dims if d in choice.rules}
    # the same global values as any other layout
    ref = sa.nn.init_transformer(CFG, sa.Mesh(SHAPE), strategy="replicated")
    np.testing.assert_array_equal(params["layer0.mlp.w_in"].numpy(), ref["layer0.mlp.w_in"].numpy())
    opt = sa.optim.Adam(1e-2)
    state = opt.init(params)
    step = sa.value_and_grad(sa.nn.transformer_loss)
    losses = []
    for s in range(6):
        tokens, targets = sa.nn.data.pattern_arrays(mesh, 0, s, 8, CFG.seq_len, CFG.vocab)
        assert tokens.layout == {d: choice.rules[d] for d in tokens.dims if d in choice.rules}
        loss, grads = step(params, tokens, targets, CFG)
        params, state = opt.update(params, grads, state)
        losses.append(float(loss.numpy()))
    assert losses[-1] < losses[0]


def test_a_mesh_with_its_own_rules_keeps_them(choice, capsys):
    mesh = sa.Mesh(SHAPE, rules={"batch": ("rows", "cols")})
    params = sa.nn.init_transformer(CFG, mesh, strategy="auto", batch=8, memory_limit_bytes=LIMIT)
    assert mesh.rules == {"batch": ("rows", "cols")} and "keeps its own rules" in capsys.readouterr().out
    assert set(params) == set(sa.nn.param_shapes(CFG))


def test_strategy_rules_points_to_auto_rules():
    with pytest.raises(sa.LayoutError, match="auto_rules"):
        sa.nn.strategy_rules("auto", SHAPE)


def test_rules_files_round_trip(tmp_path, choice):
    path = tmp_path / "rules.json"
    sa.nn.save_rules(path, choice.rules, mesh=SHAPE)
    assert sa.nn.load_rules(path) == choice.rules
    assert json.loads(path.read_text())["mesh"] == SHAPE
    with pytest.raises(sa.MissingFileError, match="save_rules"):
        sa.nn.load_rules(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(sa.ArgumentError, match="not a rules file"):
        sa.nn.load_rules(tmp_path / "bad.json")


SMALL = ["--vocab", "32", "--d-model", "16", "--heads", "2", "--d-kv", "8", "--d-ff", "32", "--layers", "1",
         "--seq", "8", "--batch", "8"]


def test_bench_plan_strategy_auto(tmp_path):
    rules_file = tmp_path / "rules.json"
    result = cli.run(["plan", *SMALL, "--mesh", "a=2", "--hardware", "h100", "--top", "2", "--quiet",
                      "--strategy", "auto", "--rules-out", str(rules_file)])
    assert result["strategy"] == "auto" and result["chosen"]["label"] == "search #1"
    assert result["best"][0]["step_time_s"] <= min(p["step_time_s"] for p in result["named"])
    assert sa.nn.load_rules(rules_file) == {d: tuple(a) for d, a in result["chosen"]["rules"].items()}
    groups = result["explain"]["groups"]
    assert sum(g["time_s"] for g in groups) == pytest.approx(result["best"][0]["step_time_s"], rel=1e-9)


def test_bench_plan_named_strategy_skips_the_search():
    result = cli.run(["plan", *SMALL, "--mesh", "rows=2,cols=2", "--quiet", "--strategy", "mesh2d"])
    assert result["best"] == [] and result["chosen"]["label"] == "mesh2d"
    assert result["explain"]["baseline"] is not None


def test_training_example_strategy_auto(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "train_transformer_auto", Path(__file__).parents[2] / "examples" / "train_transformer.py"
    )
    example = importlib.util.module_from_spec(spec)
    sys.modules["train_transformer_auto"] = example
    spec.loader.exec_module(example)
    rules_file = tmp_path / "rules.json"
    args = ["--steps", "4", "--d-model", "16", "--heads", "2", "--d-kv", "8", "--d-ff", "32", "--layers", "1",
            "--vocab", "16", "--seq", "8", "--batch", "8", "--eval-batch", "8", "--plot", "", "--quiet",
            "--mesh", "data=2"]
    metrics = example.main([*args, "--strategy", "auto", "--rules-out", str(rules_file)])
    assert metrics["steps_run"] == 4 and np.isfinite(metrics["final_loss"])
    again = example.main([*args, "--rules", str(rules_file)])  # reused without searching: the same run
    assert again["losses"] == metrics["losses"]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_auto_searches_16_bit_compute(dtype):
    """A bfloat16 model's op graph rebuilt its blocks' dtypes from ``dtype.str``, which is '<V2' for bfloat16:
    the search's first replayed add failed. The 16-bit search picks and reports a layout, as float32's does."""
    cfg = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=4, d_kv=4, d_ff=32, n_layers=1, seq_len=8,
                                  compute_dtype=dtype)
    choice = sa.nn.auto_choice(cfg, SHAPE, batch=8)
    named, _ = sa.plan.named_plans(cfg, 8, SHAPE, "h100")
    assert choice.best.step_time_s <= min(p.step_time_s for p in named)
