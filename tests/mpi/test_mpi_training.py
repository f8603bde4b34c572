"""The training example under ``mpiexec -n 4`` reproduces the emulated run's losses bit for bit, and no process
ever makes the global batch (each generates only its block's rows with ``sa.nn.data.pattern_arrays``).

Outside an MPI job (plain pytest) the test launches ``mpiexec -n 4`` itself through ``tests/support/mpi_jobs.py`` (with a
kill timeout) and compares with an emulated run in this process; it skips without mpiexec or mpi4py. Inside a
4-process job (``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_training.py``, as CI runs every test_mpi*.py)
every process runs the same comparison in the job itself.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil

import numpy as np
import pytest
from mpi_jobs import ROOT, mpiexec
from mpi_training_job import run_counting

import shardarray as sa
from shardarray.comm.spmd import check_enabled
from shardarray.layout import block_bounds, make_layout

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
HAVE_MPI = shutil.which("mpiexec") is not None and importlib.util.find_spec("mpi4py") is not None

SMALL = ["--vocab", "16", "--d-model", "16", "--heads", "2", "--d-kv", "8", "--d-ff", "32", "--layers", "1",
         "--seq", "8", "--steps", "4", "--plot", "", "--quiet"]
# (mesh, strategy, batch, eval batch): batch 5 on 2 rows is 3+2; batch 6 on data=4 is 2+2+2+0 (an empty block);
# eval batch 70 is chunks of 64 and 6 rows
CASES = [("rows=2,cols=2", "mesh2d", 5, 70), ("data=4", "data", 6, 9)]


def _argv(mesh: str, strategy: str, batch: int, eval_batch: int) -> list[str]:
    return [*SMALL, "--mesh", mesh, "--strategy", strategy, "--batch", str(batch), "--eval-batch", str(eval_batch)]


def _expected_rows(mesh: str, strategy: str, batch: int) -> list[tuple[int, int]]:
    """Per device (= MPI rank), its block ``[start, stop)`` of a training batch's ``batch`` dim."""
    shape = {k: int(v) for k, v in (kv.split("=") for kv in mesh.split(","))}
    m = sa.Mesh(shape, rules=sa.nn.strategy_rules(strategy, shape), comm="emulated")
    lay = make_layout(m, ("batch", "seq"), (batch, 8))
    return [b[0] for b in block_bounds(m, lay)]


def _check_local_rows(rank: int, calls: list[list[int]], expect: list[tuple[int, int]], batch: int) -> None:
    """Process ``rank`` generated exactly its device's rows of every training batch, never the global batch."""
    train = [c for c in calls if c[0] == 0]  # --seed 0: the training stream; evaluation streams are 10000, 10001
    steps = sorted({c[1] for c in train})
    assert steps == [1, 2, 3, 4], train
    lo, hi = expect[rank]
    for step in steps:
        mine = [(c[2], c[3]) for c in train if c[1] == step]
        assert mine == [(lo, hi)], (rank, step, mine)  # one call for its block (empty blocks too)
        assert sum(b - a for a, b in mine) == hi - lo < batch  # its block only: fewer rows than the batch
    assert max(c[3] - c[2] for c in calls) < max(batch, 64), calls  # no global batch, training or evaluation


def _compare(mpi: dict, emulated: dict) -> None:
    assert (mpi["comm"], emulated["comm"]) == ("mpi", "emulated")
    assert len(mpi["losses"]) == 4
    assert mpi["losses"] == emulated["losses"]  # every float equal, not approximately
    assert mpi["evals"] == emulated["evals"]
    assert mpi["held_out_accuracy"] == emulated["held_out_accuracy"]


@pytest.mark.skipif(WORLD > 1 or not HAVE_MPI, reason="launches mpiexec itself: needs mpiexec and mpi4py "
                                                     "(pip install '.[mpi]'), run outside an MPI job")
@pytest.mark.parametrize("mesh,strategy,batch,eval_batch", CASES)
def test_mpi_training_equals_emulated_and_makes_only_local_rows(tmp_path, mesh, strategy, batch, eval_batch):
    argv = _argv(mesh, strategy, batch, eval_batch)
    out = tmp_path / "job.json"
    proc = mpiexec(4, str(ROOT / "tests" / "support" / "mpi_training_job.py"), str(out), *argv, "--comm", "mpi", timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads((tmp_path / f"job.json.{r}").read_text()) for r in range(4)]
    emulated, emulated_calls = run_counting([*argv, "--comm", "emulated"])
    _compare(json.loads(json.dumps(reports[0]["metrics"])), json.loads(json.dumps(emulated)))
    expect = _expected_rows(mesh, strategy, batch)
    for report in reports:
        _check_local_rows(report["rank"], report["calls"], expect, batch)
    # the emulated process makes every distinct block once (replicas share it): the whole batch, in blocks
    blocks = sorted({(c[2], c[3]) for c in emulated_calls if c[0] == 0 and c[1] == 1})
    assert blocks == sorted(set(expect)) and sum(b - a for a, b in blocks) == batch


@pytest.mark.skipif(WORLD != 4, reason="runs inside mpiexec -n 4")
@pytest.mark.parametrize("mesh,strategy,batch,eval_batch", CASES)
def test_inside_the_job_mpi_training_equals_emulated(mesh, strategy, batch, eval_batch):
    from mpi4py import MPI

    argv = _argv(mesh, strategy, batch, eval_batch)
    mpi, calls = run_counting([*argv, "--comm", "mpi"])
    emulated, _ = run_counting([*argv, "--comm", "emulated"])
    _compare(json.loads(json.dumps(mpi)), json.loads(json.dumps(emulated)))
    _check_local_rows(MPI.COMM_WORLD.Get_rank(), calls, _expected_rows(mesh, strategy, batch), batch)


def test_pattern_arrays_equal_pattern_rows_on_every_mesh():
    """The batch from local rows equals the rows made at once, on meshes with uneven and empty blocks."""
    whole = sa.nn.data.pattern_rows(3, 9, 0, 7, 5, 11)
    for shape, layout in [({"d": 1}, None), ({"row": 2, "col": 2}, {"batch": "row"}), ({"all": 4}, {"batch": "all"}),
                          ({"x": 2, "y": 2, "z": 2}, {"batch": ("x", "y", "z")}),
                          ({"p": 3, "q": 2}, {"batch": "p", "seq": "q"})]:
        comm = "auto" if WORLD == math.prod(shape.values()) else "emulated"  # an MPI mesh inside the job
        tokens, targets = sa.nn.data.pattern_arrays(sa.Mesh(shape, comm=comm), 3, 9, 7, 5, 11, layout=layout)
        assert tokens.dims == ("batch", "seq") and tokens.dtype == np.int64
        np.testing.assert_array_equal(tokens.numpy(), whole[0])
        np.testing.assert_array_equal(targets.numpy(), whole[1])
        with sa.comm_log() as log:
            sa.nn.data.pattern_arrays(sa.Mesh(shape, comm=comm), 3, 9, 7, 5, 11, layout=layout)
        assert check_enabled() or len(log.records) == 0  # no collective: every device makes its own rows
