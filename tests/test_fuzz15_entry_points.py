"""The user-facing entry points fuzzed like a new user (round 15): the main job, ``shardarray-bench`` and ``sa.nn``.

Found by the round-15 fuzzer of the command lines and their Python entry points; each was silent or a stray error:

- the training example ignored flags that others overrode: ``--strategy`` beside ``--rules``, ``--hardware``
  without ``--strategy auto``, ``--stop-at`` past ``--steps`` (or, resumed, not after the checkpoint's step), and a
  resumed run's ``--seed`` (its held-out set changed while the data stream stayed the saved one);
- a ``--rules`` file splitting a dim the model lacks trained replicated without a word; one naming axes the mesh
  lacks, a bad file and a strategy that does not fit ``--mesh`` named no flag; ``--rules-out`` with tesseract (in
  the example and in ``shardarray-bench plan``) wrote rules that train another layout;
- ``shardarray-bench plan --strategy NAME --memory M`` exited 0 when the strategy needs more than M, printed
  "searched 0 legal rule sets" for a strategy it never searched, and refused ``--memory 1E3MiB`` (not ``1e3MiB``);
- ``sa.nn.auto_rules(cfg, {"rows": 0})`` blamed the batch, ``sa.nn.strategy_rules("data", {"rows": 0})`` gave
  rules and ``strategy_rules("data", None)`` a TypeError; ``sa.plan.transformer_step`` took a bad dtype or strategy
  (``"auto"`` started a search when priced); ``sa.plan.explain_transformer`` explained a misspelt dim's rule as the
  unsplit layout; ``sa.nn.init_transformer(strategy="mesh2d", batch=8)`` ignored the auto-only arguments;
- an empty path (``sa.nn.save_rules("", ...)``, ``sa.checkpoint.save("", ...)``) meant the current folder.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shardarray as sa
from shardarray.bench import cli
from shardarray.bench.plan import parse_bytes

ROOT = Path(__file__).parents[1]
TINY = [
    "--vocab",
    "16",
    "--d-model",
    "16",
    "--heads",
    "2",
    "--d-kv",
    "8",
    "--d-ff",
    "32",
    "--layers",
    "1",
    "--seq",
    "8",
    "--batch",
    "8",
    "--steps",
    "3",
    "--eval-batch",
    "8",
    "--plot",
    "",
    "--quiet",
]
PLAN = [
    "plan",
    "--vocab",
    "32",
    "--d-model",
    "16",
    "--heads",
    "2",
    "--d-kv",
    "8",
    "--d-ff",
    "32",
    "--layers",
    "1",
    "--seq",
    "8",
    "--batch",
    "8",
    "--mesh",
    "rows=2,cols=2",
    "--quiet",
]
CFG = sa.nn.TransformerConfig(vocab=16, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("fuzz15_train", ROOT / "examples" / "train_transformer.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _refused(example, argv, *needles):
    with pytest.raises(SystemExit) as e:
        example.main(argv)
    text = str(e.value.code)
    assert text.startswith("error: ") and "\n" not in text, text
    for needle in needles:
        assert needle in text, (needle, text)


def test_train_refuses_flags_that_another_overrides(example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sa.nn.save_rules("r.json", {"batch": "rows"}, mesh={"rows": 2, "cols": 2})
    _refused(example, [*TINY, "--rules", "r.json", "--strategy", "megatron"], "--rules r.json", "--strategy megatron")
    _refused(example, [*TINY, "--rules", "r.json", "--strategy", "mesh2d"], "--strategy mesh2d")
    _refused(example, [*TINY, "--hardware", "a100"], "--hardware a100", "--strategy auto")
    _refused(example, [*TINY, "--stop-at", "5"], "--stop-at 5", "--steps 3")
    _refused(
        example,
        [*TINY, "--mesh", "row=2,col=2,dep=1", "--strategy", "tesseract", "--rules-out", "t.json"],
        "--rules-out",
        "tesseract",
    )
    assert not (tmp_path / "t.json").exists()
    ok = example.main([*TINY, "--rules", "r.json"])  # alone, each still runs
    assert ok["strategy"] == "rules" and ok["steps_run"] == 3


def test_train_rules_files_are_checked_against_the_model_and_the_mesh(example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sa.nn.save_rules("typo.json", {"btch": "rows"})
    _refused(example, [*TINY, "--rules", "typo.json"], "--rules typo.json", "'btch'", "'batch'")
    sa.nn.save_rules("other.json", {"batch": "data"}, mesh={"data": 4})
    _refused(
        example,
        [*TINY, "--rules", "other.json"],
        "--rules other.json",
        "'data'",
        "--mesh rows=2,cols=2",
        "made for --mesh data=4",
    )
    (tmp_path / "bad.json").write_text("{nope")
    _refused(example, [*TINY, "--rules", "bad.json"], "--rules bad.json", "not a rules file")
    _refused(example, [*TINY, "--rules", "missing.json"], "--rules missing.json", "no such file")
    tess = tmp_path / "tess.json"
    assert cli.main([*PLAN, "--strategy", "tesseract", "--rules-out", str(tess)]) == 1 and not tess.exists()
    sa.nn.save_rules(tess, {}, strategy="tesseract")  # (such a file, as the old plan --rules-out wrote)
    _refused(example, [*TINY, "--rules", str(tess)], "tesseract plan", "--strategy tesseract")


def test_train_strategy_that_does_not_fit_the_mesh_names_the_flags(example):
    _refused(example, [*TINY, "--mesh", "model=4"], "--strategy mesh2d", "--mesh model=4", "--mesh rows=2,cols=2")
    _refused(example, [*TINY, "--mesh", "rows=2,cols=2", "--strategy", "megatron"], "--mesh model=4")


def test_resume_refuses_another_seed_and_an_early_stop_and_continues_on_any_layout(example, tmp_path):
    run = str(tmp_path / "run")
    args = [*TINY, "--steps", "5"]
    whole = example.main(args)
    example.main([*args, "--save", run, "--stop-at", "2"])
    _refused(example, [*args, "--resume", run, "--seed", "3"], "--seed 0", "--seed 3")
    _refused(example, [*args, "--resume", run, "--stop-at", "2"], "--stop-at 2", "step 2")
    _refused(example, [*args, "--resume", str(tmp_path / "none")], f"--resume {tmp_path / 'none'}")
    resumed = example.main([*args, "--resume", run])
    assert resumed["losses"] == whole["losses"] and resumed["held_out_accuracy"] == whole["held_out_accuracy"]
    for layout in (["--mesh", "model=4", "--strategy", "megatron"], ["--mesh", "d=1", "--strategy", "auto"]):
        other = example.main([*args, *layout, "--resume", run])
        np.testing.assert_allclose(other["losses"], whole["losses"], rtol=1e-5)


def test_bench_plan_named_strategy_over_memory_fails_and_is_not_called_searched(capsys):
    assert cli.main([*PLAN, "--strategy", "mesh2d", "--memory", "1KiB"]) == 1
    err = capsys.readouterr().err
    assert "--strategy mesh2d needs" in err and "--memory 1,024 bytes" in err and "--strategy auto" in err
    assert cli.main([p for p in PLAN if p != "--quiet"] + ["--strategy", "mesh2d", "--memory", "1GiB"]) == 0
    assert "searched" not in capsys.readouterr().out


def test_memory_sizes_take_exponents_in_either_case():
    assert parse_bytes("1E3MiB") == parse_bytes("1e3MiB") == 1000 * 2**20
    assert parse_bytes("1e-3GiB") == pytest.approx(2**30 / 1000) and parse_bytes("2E+1kb") == 2e4


def test_python_entry_points_check_their_arguments():
    with pytest.raises(sa.MeshError, match="'rows' has size 0"):
        sa.nn.auto_rules(CFG, {"rows": 0}, verbose=False)
    with pytest.raises(sa.MeshError, match="'rows' has size 0"):
        sa.nn.strategy_rules("data", {"rows": 0})
    with pytest.raises(sa.MeshError, match=r"strategy_rules takes a sa\.Mesh"):
        sa.nn.strategy_rules("data", None)
    with pytest.raises(sa.LayoutError, match="strategy='auto'"):
        sa.plan.transformer_step(CFG, batch=8, strategy="auto")
    with pytest.raises(sa.DTypeError, match="int8"):
        sa.plan.transformer_step(CFG, batch=8, dtype="int8")
    with pytest.raises(sa.LayoutError, match="'btch'"):
        sa.plan.explain_transformer(CFG, 8, {"rows": 2, "cols": 2}, {"btch": "rows"})
    with pytest.raises(sa.ArgumentError, match="batch=8"):
        sa.nn.init_transformer(CFG, sa.Mesh({"rows": 2, "cols": 2}), strategy="mesh2d", batch=8)
    with pytest.raises(sa.ArgumentError, match="memory_limit_bytes"):
        sa.nn.init_transformer(CFG, sa.Mesh({"d": 1}), memory_limit_bytes=2**30)


@pytest.mark.parametrize(
    "call",
    [
        lambda: sa.nn.save_rules("", {"batch": "rows"}),
        lambda: sa.checkpoint.save("", {"x": sa.zeros(sa.Mesh({"d": 1}), {"a": 2})}),
    ],
)
def test_an_empty_path_is_refused_by_name(call, tmp_path, monkeypatch):
    """``""`` was the current folder: save_rules raised IsADirectoryError, checkpoint.save spoke of checkpoint '.'."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sa.ArgumentError, match="the path is empty"):
        call()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv,status,needles",
    [
        ([str(ROOT / "examples" / "train_transformer.py"), *TINY, "--mesh", "model=4"], 1, ("--strategy mesh2d",)),
        ([str(ROOT / "examples" / "train_transformer.py"), *TINY, "--mesh", "rows=2,cols=x"], 2, ("--mesh",)),
        (["-m", "shardarray.bench", *PLAN, "--strategy", "megatron", "--memory", "1KiB"], 1, ("--memory",)),
    ],
)
def test_command_lines_end_with_one_line_and_a_status(tmp_path, argv, status, needles):
    done = subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and all(n in done.stderr for n in needles), done.stderr


def test_bench_plan_rules_out_of_a_search_reproduces(tmp_path):
    out = tmp_path / "rules.json"
    first = cli.run([*PLAN, "--rules-out", str(out)])
    body = json.loads(out.read_text())
    assert sa.nn.load_rules(out) == {d: tuple(a) for d, a in first["chosen"]["rules"].items()}
    assert body["mesh"] == {"rows": 2, "cols": 2} and cli.run(PLAN)["chosen"] == first["chosen"]
