"""Launching SPMD jobs: a failing rank ends the job, and the same script runs emulated and under mpiexec."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

INSIDE_MPI = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0"))) > 1
pytestmark = pytest.mark.skipif(
    INSIDE_MPI or shutil.which("mpiexec") is None or importlib.util.find_spec("mpi4py") is None,
    reason="needs mpiexec and mpi4py (pip install '.[mpi]'), run outside an MPI job",
)
ROOT = Path(__file__).parents[1]


def mpiexec(n, *args, timeout=240):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(["mpiexec", "-n", str(n), sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_a_rank_that_raises_ends_the_job_with_an_error(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent("""
        import shardarray as sa
        mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
        x = sa.ones(mesh, {"m": 4, "k": 4}, layout={"k": "col"})
        if mesh.process_index == 1:
            raise RuntimeError("rank 1 fails on purpose")
        x.sum("k").numpy()   # the others wait in an allreduce that rank 1 never joins
    """))
    proc = mpiexec(4, str(script), timeout=120)
    assert proc.returncode != 0
    assert "rank 1 fails on purpose" in proc.stderr


def test_the_training_example_runs_unchanged_under_mpiexec(tmp_path):
    argv = ["--steps", "3", "--batch", "8", "--eval-batch", "8", "--quiet", "--plot", ""]
    example = str(ROOT / "examples" / "train_transformer.py")
    proc = mpiexec(4, example, *argv, "--json", str(tmp_path / "mpi.json"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    emulated = subprocess.run([sys.executable, example, *argv, "--json", str(tmp_path / "emu.json")],
                              capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert emulated.returncode == 0, emulated.stderr[-2000:]
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("mpi.json", "emu.json"))
    assert (a["comm"], b["comm"]) == ("mpi", "emulated")
    assert a["final_loss"] == pytest.approx(b["final_loss"], rel=1e-6)
    assert a["held_out_accuracy"] == b["held_out_accuracy"]

