"""A checkpoint save or load that fails on one process of an ``mpiexec -n 4`` job raises CheckpointError on every
process, naming the process and why, and the job goes on (a resume-or-start-fresh ``try``/``except`` takes the same
branch everywhere); a failure of one process alone used to leave the others waiting in a collective forever.

Inside a 4-process job (``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_checkpoint_failures.py``) every test
runs in the job; outside one (plain pytest) a test launches that job through ``tests/support/mpi_jobs.py``, whose
time limit ends a hung job. Paths missing or unwritable on one node (a node-local disk) are given to one process
only, or its file calls are made to fail there.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from mpi_jobs import ROOT, mpiexec

import shardarray as sa
from shardarray.checkpoint import reader, writer
from shardarray.comm import spmd

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
HAVE_MPI = shutil.which("mpiexec") is not None and importlib.util.find_spec("mpi4py") is not None
in_job = pytest.mark.skipif(WORLD != 4, reason="runs inside mpiexec -n 4")
VALUE = np.arange(35.0).reshape(7, 5)


def _mesh() -> sa.Mesh:
    return sa.Mesh({"row": 2, "col": 2}, comm="mpi")


def _tree(mesh: sa.Mesh, sizes: tuple[int, int] = (7, 5)) -> dict:
    return {"w": sa.zeros(mesh, {"a": sizes[0], "b": sizes[1]}, "float64", {"a": "row", "b": "col"}), "step": 0,
            "p": sa.array_api.asarray(np.zeros(6), device=mesh)}


def _saved(shared_dir: Path, mesh: sa.Mesh) -> Path:
    tree = {"w": sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"}), "step": 7,
            "p": sa.array_api.asarray(np.arange(6.0), device=mesh)}
    return sa.checkpoint.save(shared_dir / "ck", tree)


def _fails_everywhere(call, *failed: tuple[int, str]) -> str:
    """``call()`` raises CheckpointError on this process, naming exactly the processes ``failed`` (with why)."""
    with pytest.raises(sa.CheckpointError) as err:
        call()
    message = str(err.value)
    for rank, why in failed:
        assert re.search(f"process {rank}: .*{why}", message), message
    assert sorted(map(int, re.findall(r"process (\d+): ", message))) == sorted(r for r, _ in failed), message
    return message


@in_job
def test_a_path_missing_on_one_process_fails_every_load_and_a_fresh_start_runs(shared_dir):
    mesh = _mesh()
    path = _saved(shared_dir, mesh)
    rank = mesh.process_index
    tree = _tree(mesh)
    mine = path.with_name("missing") if rank == 1 else path  # a node whose local disk lacks the checkpoint
    try:  # the resume-or-start-fresh loop of a training script
        tree = sa.checkpoint.load(mine, tree)
        resumed = True
    except sa.CheckpointError as e:
        assert re.fullmatch(r"process 1: checkpoint \S+missing does not exist; .*", str(e)), str(e)
        resumed = False
    assert not resumed
    w = tree["w"] + 1.0  # a fresh start: collectives that every process joins
    assert float(w.sum()) == 35.0
    out = sa.checkpoint.load(path, tree)  # a retry on every process pairs with the others' retry
    np.testing.assert_array_equal(out["w"].numpy(), VALUE)
    assert out["step"] == 7


@in_job
@pytest.mark.parametrize("case, failed", [
    ("tree", [(2, r"differs from the saved tree at target\['step'\]")]),
    ("shape", [(3, r"array 'w' was saved with sizes \{'a': 7, 'b': 5\} but the target has sizes \{'a': 7, 'b': 4\}")]),
    ("two", [(0, "missing does not exist"), (3, "was saved with sizes")]),
    ("layout", [(1, "LayoutError: mesh rules .* splits both dim 'a' and dim 'b'")]),
    ("block-file", [(2, "block file .* is missing")]),
])
def test_a_check_failing_on_some_processes_fails_the_load_on_every_process(shared_dir, monkeypatch, case, failed):
    mesh = _mesh()
    path = _saved(shared_dir, mesh)
    rank = mesh.process_index
    tree, narrow, kwargs = _tree(mesh), _tree(mesh, (7, 4)), {}  # every process makes the same arrays (SPMD)
    if case == "tree" and rank == 2:
        del tree["step"]
    if case in ("shape", "two") and rank == 3:
        tree = narrow
    if case == "two" and rank == 0:
        path = path.with_name("missing")
    if case == "layout":  # by the mesh's rules; process 1's rules split two dims over one axis
        rules = {"a": "row", "b": "row" if rank == 1 else "col"}
        tree, kwargs = None, {"mesh": sa.Mesh({"row": 2, "col": 2}, comm="mpi", rules=rules)}
    if case == "block-file" and rank == 2:  # as on a node whose copy of the checkpoint lacks a file

        def missing(self, name, entry):
            raise sa.CheckpointError(f"checkpoint {path}: array {name!r}: block file blocks-00001.safetensors is "
                                     f"missing; the checkpoint is incomplete")

        monkeypatch.setattr(reader._Files, "check", missing)
    _fails_everywhere(lambda: sa.checkpoint.load(path, tree, **kwargs), *failed)
    monkeypatch.undo()
    out = sa.checkpoint.load(_saved(shared_dir / "again", mesh), _tree(mesh))  # the job goes on
    np.testing.assert_array_equal(out["w"].numpy(), VALUE)


@in_job
def test_a_load_agrees_with_one_allgather(shared_dir):
    """The checks and reads of a load are local; the error agreement is its only collective."""
    mesh = _mesh()
    path = _saved(shared_dir, mesh)
    for kwargs in ({"target": _tree(mesh)}, {"mesh": mesh}):
        before = spmd._State.seq
        out = sa.checkpoint.load(path, **kwargs)
        assert spmd._State.seq - before == 1
        np.testing.assert_array_equal(out["w"].numpy(), VALUE)


@in_job
@pytest.mark.parametrize("case, failed", [
    ("leaf", [(1, r"tree\['f'\] is")]),
    ("path", [(3, "cannot check the path .*PermissionError")]),
    ("write", [(2, "writing .*blocks-00002.safetensors failed: .*Permission denied")]),
])
def test_a_save_failing_on_one_process_fails_on_every_process(shared_dir, monkeypatch, case, failed):
    mesh = _mesh()
    rank = mesh.process_index
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    tree = {"w": x, "s": (x * 2.0).sum("b"), "step": 3}  # "s": a pending sum, resolved by an allreduce
    if case == "leaf" and rank == 1:
        tree["f"] = open
    if case == "path" and rank == 3:  # a folder on the path this node may not search

        def refused(path, keep):
            raise PermissionError(13, "Permission denied", str(path.parent))

        monkeypatch.setattr(writer, "_refuse_non_checkpoint", refused)
    if case == "write" and rank == 2:  # a directory this node may not write into

        def unwritable(path, tensors, **kwargs):
            raise PermissionError(13, "Permission denied", str(path))

        monkeypatch.setattr(writer, "write_file", unwritable)
    path = shared_dir / "ck"
    _fails_everywhere(lambda: sa.checkpoint.save(path, tree), *failed)
    assert not path.exists()  # nothing committed
    monkeypatch.undo()
    tree.pop("f", None)
    sa.checkpoint.save(path, tree)  # the job goes on: a save on every process now works
    out = sa.checkpoint.load(path, {"w": sa.zeros(mesh, {"a": 7, "b": 5}, "float64", {"a": "row"}),
                                    "s": sa.zeros(mesh, {"a": 7}, "float64"), "step": 0})
    np.testing.assert_array_equal(out["s"].numpy(), (VALUE * 2).sum(1))


@pytest.mark.skipif(WORLD > 1 or not HAVE_MPI, reason="launches mpiexec itself: needs mpiexec and mpi4py, run "
                                                     "outside an MPI job")
def test_the_failures_above_end_in_errors_not_hangs_under_mpiexec_4():
    job = mpiexec(4, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider", __file__, timeout=240, cwd=ROOT)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-2000:]
    assert re.search(r"\b10 passed\b", job.stdout), job.stdout[-2000:]
