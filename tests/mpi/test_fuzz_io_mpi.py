"""Regressions of sa.io under ``mpiexec -n 4`` found by a differential fuzzer: a failure on one process (a damaged
chunk only it reads, a file-system error on process 0) raises the same typed error on every process, and the job
goes on (the next collective completes) instead of one process raising while the others wait in a collective.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi``.
"""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

import shardarray as sa

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")
VALUE = np.arange(48.0).reshape(8, 6)


def _mesh() -> sa.Mesh:
    return sa.Mesh({"row": 2, "col": 2}, comm="mpi")


def _barrier() -> None:
    from mpi4py import MPI

    MPI.COMM_WORLD.Barrier()


def _still_in_step(mesh: sa.Mesh) -> None:
    """Every process reaches the next collective (it would hang if one had gone on alone)."""
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    assert float(x.sum()) == VALUE.sum()


def test_a_damaged_chunk_one_process_reads_fails_every_process(shared_dir):
    pytest.importorskip("zarr")
    mesh = _mesh()
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    sa.io.write_zarr(shared_dir / "z.zarr", x)  # one chunk per block: chunk (1, 0) is process 2's alone
    if mesh.process_index == 0:
        (shared_dir / "z.zarr" / "c" / "1" / "0").write_bytes(b"garbage")
        with h5py.File(shared_dir / "h.h5", "w") as f:
            f.create_dataset("d", data=VALUE, chunks=(4, 3), compression="gzip")
        with h5py.File(shared_dir / "h.h5", "r") as f:
            info = f["d"].id.get_chunk_info_by_coord((4, 0))
        with open(shared_dir / "h.h5", "r+b") as fh:
            fh.seek(info.byte_offset)
            fh.write(b"\xff" * info.size)
    _barrier()
    # process 2 raised a RuntimeError (zarr) or OSError (h5py) alone, and the others hung in the next collective
    for read, where in [(sa.io.read_zarr, "z.zarr"), (sa.io.read_hdf5, "h.h5")]:
        with pytest.raises(sa.ArgumentError, match=r"reading the block \[\[4, 8\], \[0, 3\]\] of .* failed") as e:
            read(shared_dir / where, mesh)
        assert mesh.process_index == 2 or "failed on process 2" in str(e.value)
        _still_in_step(mesh)


def test_a_file_system_error_on_process_0_is_the_same_error_everywhere(shared_dir):
    mesh = _mesh()
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    if mesh.process_index == 0:
        (shared_dir / "afile").write_text("x")
    _barrier()
    # process 0 raised a raw FileExistsError, the others an ArgumentError: an ``except`` took different branches
    with pytest.raises(sa.ArgumentError, match=r"cannot create .*afile/x.npy \(FileExistsError"):
        sa.io.write_npy(shared_dir / "afile" / "x.npy", x)
    _still_in_step(mesh)
