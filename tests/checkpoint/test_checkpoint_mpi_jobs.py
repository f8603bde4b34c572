"""A checkpoint saved by an ``mpiexec -n 4`` job loads in one process and under ``mpiexec -n 2`` (issue 16, item 3).

Also runs tests/mpi/test_mpi_checkpoint.py under ``mpiexec -n 4`` (the in-job save and load).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from mpi_jobs import ROOT, mpiexec

import shardarray as sa

pytestmark = pytest.mark.skipif(shutil.which("mpiexec") is None, reason="needs mpiexec")
JOB = str(ROOT / "tests" / "support" / "checkpoint_jobs" / "mpi_save_load.py")
CFG = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=4)


def test_saved_by_4_processes_loads_in_one_process_and_under_2(tmp_path):
    save = mpiexec(4, JOB, "save", str(tmp_path / "c"), timeout=120)
    assert save.returncode == 0, save.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        "blocks-00000.safetensors", "blocks-00001.safetensors", "blocks-00002.safetensors", "manifest.json"]
    # one process, an emulated 2x2x2 mesh: by rules and into a target
    mesh = sa.Mesh({"x": 2, "y": 2, "z": 2}, rules={"heads": "x", "d_ff": ("y", "z"), "vocab": "z"})
    out = sa.checkpoint.load(tmp_path / "c", mesh=mesh)
    ref = sa.nn.init_transformer(CFG, sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.strategy_rules(
        "mesh2d", {"rows": 2, "cols": 2})), strategy=None, seed=3)
    for k, v in ref.items():
        np.testing.assert_array_equal(out["params"][k].numpy(), v.numpy())
    assert out["params"]["layer0.mlp.w_in"].layout == {"d_ff": ("y", "z")}
    assert out["step"] == 7 and out["x"].numpy().shape == (7, 5)
    two = mpiexec(2, JOB, "load", str(tmp_path / "c"), "2", timeout=120)
    assert two.returncode == 0 and two.stdout.count("OK") == 2, two.stderr[-3000:]


def test_mpi_checkpoint_tests_pass_under_mpiexec_4():
    job = mpiexec(4, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider", str(ROOT / "tests" / "mpi" / "test_mpi_checkpoint.py"),
                  timeout=180, cwd=ROOT)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-2000:]
    assert "3 passed" in job.stdout
