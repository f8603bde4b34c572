"""Launching SPMD jobs: a failing rank ends the job, and the same script runs emulated and under mpiexec."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mpi_jobs import JobHung, mpiexec

INSIDE_MPI = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0"))) > 1
pytestmark = pytest.mark.skipif(
    INSIDE_MPI or shutil.which("mpiexec") is None or importlib.util.find_spec("mpi4py") is None,
    reason="needs mpiexec and mpi4py (pip install '.[mpi]'), run outside an MPI job",
)
ROOT = Path(__file__).parents[2]


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



def test_a_replicated_value_converts_on_one_process_alone(tmp_path):
    """``if mesh.process_index == 0: print(float(loss))`` needs no other process (no communication)."""
    script = tmp_path / "print0.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, shardarray as sa
        mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
        x = sa.asarray(np.arange(8.0), dims=("m",), mesh=mesh, layout={"m": ("row", "col")})
        loss = (x * x).mean()            # a sum over a split dim, resolved here: every process joins
        loss = loss + 0.0                # replicated, no pending sum
        if mesh.process_index == 0:
            print(f"loss {float(loss)} {loss.numpy().shape}", flush=True)
        print(f"total {float(x.sum())}", flush=True)   # a collective again: every process must still be in step
    """))
    proc = mpiexec(4, str(script), timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("loss 17.5 ()") == 1 and proc.stdout.count("28.0") == 4, proc.stdout


def test_run_job_kills_every_process_of_a_hung_job(tmp_path):
    """The time limit of ``mpi_jobs.run_job`` leaves no rank or proxy behind."""
    marker = tmp_path / "hang.py"
    marker.write_text("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(600)\n")
    with pytest.raises(JobHung) as info:
        mpiexec(2, str(marker), timeout=6)
    pids = [int(w) for w in str(info.value).split("stdout:")[1].split("stderr:")[0].split() if w.isdigit()]
    assert pids, str(info.value)  # the ranks had started

    def alive(pid):
        try:
            return b"hang.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    for _ in range(100):  # SIGKILL is sent; give the kernel up to 10 s to finish them
        if not any(alive(p) for p in pids):
            break
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)], f"processes of {pids} outlived their job"

