"""Checkpoints under ``mpiexec -n 4``: every process writes its own blocks, process 0 the manifest; load onto other layouts.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_checkpoint.py``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import shardarray as sa

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")


def test_save_on_2x2_writes_each_block_once_and_loads_onto_other_layouts(shared_dir):
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    value = np.arange(9 * 6, dtype=np.float64).reshape(9, 6)
    x = sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    rep = sa.asarray(value[:, 0], dims=("a",), mesh=mesh)  # replicated: written once, by process 0
    s = (x * 2.0).sum("b")  # a pending sum over col, resolved by the save
    with sa.comm_log() as log:
        sa.checkpoint.save(shared_dir / "c", {"x": x, "rep": rep, "s": s, "step": 4})
    assert [(r.op, r.axes) for r in log.records] == [("allreduce", ("col",))]
    m = json.loads((shared_dir / "c" / "manifest.json").read_text())
    assert sorted(b["file"] for b in m["arrays"]["x"]["blocks"]) == [f"blocks-0000{r}.safetensors" for r in range(4)]
    assert [b["file"] for b in m["arrays"]["rep"]["blocks"]] == ["blocks-00000.safetensors"]
    assert sorted(b["file"] for b in m["arrays"]["s"]["blocks"]) == ["blocks-00000.safetensors",
                                                                     "blocks-00002.safetensors"]
    m4 = sa.Mesh({"model": 4}, comm="mpi", rules={"a": "model"})
    with sa.comm_log() as log:
        out = sa.checkpoint.load(shared_dir / "c", {"x": sa.zeros(m4, {"a": 9, "b": 6}, "float64", {"b": "model"}),
                                                    "rep": sa.zeros(m4, {"a": 9}, "float64", {"a": "model"}),
                                                    "s": sa.zeros(m4, {"a": 9}, "float32"), "step": 0})
    assert log.records == []
    assert out["step"] == 4
    np.testing.assert_array_equal(out["x"].numpy(), value)
    np.testing.assert_array_equal(out["rep"].numpy(), value[:, 0])
    np.testing.assert_array_equal(out["s"].numpy(), (value * 2).sum(1).astype(np.float32))
    by_rules = sa.checkpoint.load(shared_dir / "c", mesh=m4)
    assert by_rules["x"].layout == {"a": ("model",)}
    np.testing.assert_array_equal(by_rules["x"].numpy(), value)


def test_a_damaged_block_raises_on_every_process(shared_dir):
    mesh = sa.Mesh({"all": 4}, comm="mpi")
    x = sa.asarray(np.arange(8.0), dims=("a",), mesh=mesh, layout={"a": "all"})
    sa.checkpoint.save(shared_dir / "d", {"x": x})
    mesh.comm.world.Barrier()
    if mesh.process_index == 0:  # corrupt the block process 3 will read
        f = shared_dir / "d" / "blocks-00003.safetensors"
        data = bytearray(f.read_bytes())
        data[-1] ^= 0xFF
        f.write_bytes(bytes(data))
    mesh.comm.world.Barrier()
    with pytest.raises(sa.CheckpointError, match="process 3.*checksum"):
        sa.checkpoint.load(shared_dir / "d", {"x": sa.zeros(mesh, {"a": 8}, "float64", {"a": "all"})})


def test_a_replicated_block_is_checked_by_one_process_and_a_mismatch_fails_all(shared_dir):
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    x = sa.asarray(np.arange(8.0 * 3).reshape(8, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    sa.checkpoint.save(shared_dir / "r", {"x": x})
    target = {"x": sa.zeros(mesh, {"a": 8, "b": 3}, "float64", {"a": "row"})}
    from shardarray.checkpoint import reader

    seen = []
    real = reader.hasher

    def counting(algorithm):
        seen.append(algorithm)
        return real(algorithm)

    reader.hasher = counting
    try:
        np.testing.assert_array_equal(sa.checkpoint.load(shared_dir / "r", target)["x"].numpy(), x.numpy())
    finally:
        reader.hasher = real
    # rows 0-3 are held by devices 0 and 1, rows 4-7 by 2 and 3: processes 0 and 2 check one block each
    counts = mesh.comm.world.allgather(len(seen))
    assert counts == [1, 0, 1, 0]
    mesh.comm.world.Barrier()
    if mesh.process_index == 0:  # corrupt the block of rows 4-7 (written and checked by process 2, read by 3 too)
        f = shared_dir / "r" / "blocks-00002.safetensors"
        data = bytearray(f.read_bytes())
        data[-1] ^= 0xFF
        f.write_bytes(bytes(data))
    mesh.comm.world.Barrier()
    with pytest.raises(sa.CheckpointError, match="process 2.*checksum") as err:
        sa.checkpoint.load(shared_dir / "r", target)
    assert "process 3" not in str(err.value)
