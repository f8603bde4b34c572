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
