"""The training example's --save/--resume: a run stopped and resumed reproduces the uninterrupted losses bit for bit."""

from __future__ import annotations

import importlib.util

import pytest
from mpi_jobs import ROOT

SMALL = ["--vocab", "16", "--d-model", "16", "--heads", "2", "--d-kv", "8", "--d-ff", "32", "--layers", "1",
         "--seq", "8", "--batch", "4", "--steps", "10", "--eval-batch", "8", "--plot", "", "--quiet"]


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("train_transformer_ck", ROOT / "examples" / "train_transformer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("mesh,strategy", [("rows=2,cols=2", "mesh2d"), ("row=2,col=2,dep=2", "tesseract")])
def test_stopped_and_resumed_run_reproduces_the_uninterrupted_losses(example, tmp_path, mesh, strategy):
    args = [*SMALL, "--mesh", mesh, "--strategy", strategy]
    whole = example.main(args)
    first = example.main([*args, "--save", str(tmp_path / "run"), "--save-every", "3", "--stop-at", "6"])
    assert len(first["losses"]) == 6
    saved = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert saved == ["ckpt-00000001", "ckpt-00000002"]  # steps 3 and 6
    resumed = example.main([*args, "--resume", str(tmp_path / "run"), "--save", str(tmp_path / "run")])
    assert resumed["losses"] == whole["losses"]  # every float equal: params, Adam state, data stream, schedule
    assert resumed["evals"] == whole["evals"] and resumed["held_out_accuracy"] == whole["held_out_accuracy"]


def test_tokens_per_s_counts_the_steps_run(example, tmp_path):
    """--stop-at and --resume: the throughput is over the steps this call ran, not over --steps."""
    args = [*SMALL, "--mesh", "d=1", "--strategy", "replicated"]
    stopped = example.main([*args, "--save", str(tmp_path / "run"), "--stop-at", "4"])
    assert stopped["steps_run"] == 4 and len(stopped["losses"]) == 4
    resumed = example.main([*args, "--resume", str(tmp_path / "run")])
    assert resumed["steps_run"] == 6 and len(resumed["losses"]) == 10


def test_resume_errors_name_the_flags(example, tmp_path):
    """Resuming past --steps, or with another --dtype, is a clear error (it was a ZeroDivisionError, and a tree
    mismatch that never named --dtype)."""
    args = [*SMALL, "--mesh", "d=1", "--strategy", "replicated"]
    example.main([*args, "--save", str(tmp_path / "run"), "--stop-at", "6"])
    with pytest.raises(SystemExit, match=r"step 6.*--steps is 5.*--steps greater than 6"):
        example.main([*[a if a != "10" else "5" for a in args], "--resume", str(tmp_path / "run")])
    with pytest.raises(SystemExit, match=r"--dtype"):
        example.main([*args, "--dtype", "float16", "--resume", str(tmp_path / "run")])
    with pytest.raises(SystemExit, match=r"--dtype float32.*--dtype float64|--dtype float64.*--dtype float32"):
        example.main([*args, "--dtype", "float64", "--resume", str(tmp_path / "run")])


def test_output_paths_are_checked_before_training(example, tmp_path):
    """An unwritable --json or --plot fails before any step (it was a traceback after training)."""
    base = [a for a in SMALL if a not in ("--plot", "")] + ["--mesh", "d=1", "--strategy", "replicated"]
    (tmp_path / "file").write_text("x")
    for flag, path in (("--json", tmp_path / "file" / "m.json"), ("--json", tmp_path), ("--plot", tmp_path)):
        plot = [] if flag == "--plot" else ["--plot", ""]
        with pytest.raises(SystemExit, match=flag):
            example.main([*base, *plot, flag, str(path)])
