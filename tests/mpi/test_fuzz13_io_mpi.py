"""Fuzz round 13 of files and checkpoints under ``mpiexec -n 4``: each process reads only its own blocks (a
checkpoint loaded onto a mesh of other axis names, an HDF5 dataset), positional arrays stay positional, and a
failure on one process (a save that fails half-way there, a write to a path only one process has) raises on every
process, keeps the previous checkpoint and leaves nothing behind; the job goes on (the next collective completes).

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api import Array
from shardarray.checkpoint import reader, writer
from shardarray.io import blocks as io_blocks
from shardarray.layout import block_bounds

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")
VALUE = np.arange(63.0).reshape(9, 7)


def _barrier() -> None:
    from mpi4py import MPI

    MPI.COMM_WORLD.Barrier()


def _still_in_step(mesh: sa.Mesh) -> None:
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    assert float(x.sum()) == VALUE.sum()


def _spy(monkeypatch, module, name, seen):
    real = getattr(module, name)

    def spy(*args):
        seen.append(next(a for a in args if isinstance(a, tuple)))  # the region read
        return real(*args)

    monkeypatch.setattr(module, name, spy)


def test_a_load_onto_other_axis_names_reads_only_this_process_block(shared_dir, monkeypatch):
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    sa.checkpoint.save(shared_dir / "ck", {"w": x, "p": xp.asarray(x), "step": 2})
    m4 = sa.Mesh({"model": 4}, comm="mpi")
    seen: list = []
    _spy(monkeypatch, reader, "_read_block", seen)
    p = xp.asarray(sa.zeros(m4, {"dim0": 9, "dim1": 7}, layout={"dim0": "model"}))
    target = {"w": sa.zeros(m4, {"a": 9, "b": 7}, layout={"b": "model"}), "p": p, "step": 0}
    out = sa.checkpoint.load(shared_dir / "ck", target)
    rank = m4.process_index
    assert seen == [block_bounds(m4, out["w"].spec)[rank], block_bounds(m4, out["p"].spec)[rank]]
    assert type(out["p"]) is Array and out["step"] == 2
    np.testing.assert_array_equal(out["p"].numpy(), VALUE)
    by_mesh = sa.checkpoint.load(shared_dir / "ck", mesh=m4)
    assert type(by_mesh["p"]) is Array and type(by_mesh["w"]) is sa.ShardArray


def test_an_hdf5_read_reads_only_this_process_block(shared_dir, monkeypatch):
    import h5py

    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    if mesh.process_index == 0:
        with h5py.File(shared_dir / "x.h5", "w") as f:
            f.create_dataset("x", data=VALUE.astype(">f4"), chunks=(2, 3))
    _barrier()
    seen: list = []
    real = io_blocks.build

    def build(mesh, layout, dtype, positional, read, *rest):
        return real(mesh, layout, dtype, positional, lambda b: seen.append(b) or read(b), *rest)

    monkeypatch.setattr(io_blocks, "build", build)
    y = sa.io.read_hdf5(shared_dir / "x.h5", mesh, {1: ("row", "col")})
    assert seen == [block_bounds(mesh, y.spec)[mesh.process_index]] and y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), VALUE)


def test_a_save_failing_half_way_on_one_process_keeps_the_previous_and_leaves_nothing(shared_dir, monkeypatch):
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    path = shared_dir / "ck"
    sa.checkpoint.save(path, {"w": x})
    if mesh.process_index == 2:

        def half(p, tensors, **kw):
            p.write_bytes(b"partial")
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(writer, "write_file", half)
    with pytest.raises(sa.CheckpointError, match=r"process 2: .*No space left"):
        sa.checkpoint.save(path, {"w": x * 2.0}, overwrite=True)
    _barrier()
    # the failed save's temporary directory (the other processes' blocks) was left behind
    assert sorted(p.name for p in shared_dir.iterdir()) == ["ck"]
    np.testing.assert_array_equal(sa.checkpoint.load(path, mesh=mesh)["w"].numpy(), VALUE)
    _still_in_step(mesh)


def test_a_write_to_a_path_only_one_process_can_reach_fails_on_every_process(shared_dir):
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    path = shared_dir / ("x.npy" if mesh.process_index != 1 else "elsewhere/x.npy")
    with pytest.raises(sa.ArgumentError, match=r"process 1 cannot open .*elsewhere/x\.npy"):
        sa.io.write_npy(path, x)
    _still_in_step(mesh)


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5"])
def test_a_file_write_failing_on_one_process_leaves_no_partial_array(shared_dir, monkeypatch, fmt):
    """The old .npy and Zarr arrays are kept (a copy is written and renamed); the HDF5 dataset, replaced in
    place, is removed rather than left with zeros where process 2's block should be."""
    import h5py
    import zarr

    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    x = sa.asarray(VALUE, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    write = {"npy": sa.io.write_npy, "zarr": sa.io.write_zarr, "hdf5": sa.io.write_hdf5}[fmt]
    path = shared_dir / f"x.{fmt}"
    write(path, x)
    if mesh.process_index == 2:

        def lost(a):
            raise RuntimeError("device lost")

        monkeypatch.setattr(mesh.backend, "to_numpy", lost)
    with pytest.raises(sa.ArgumentError, match=r"RuntimeError.*device lost"):
        write(path, x * 2.0, overwrite=True)
    monkeypatch.undo()
    _barrier()
    # the old file (array, dataset) was replaced by a half-written one: process 2's block was zeros
    assert sorted(p.name for p in shared_dir.iterdir()) == [path.name]
    if fmt == "hdf5":
        with h5py.File(path, "r") as f:
            assert list(f) == []
    else:
        on_disk = np.load(path) if fmt == "npy" else zarr.open_array(path, mode="r")[...]
        np.testing.assert_array_equal(on_disk, VALUE)
    _still_in_step(mesh)


DTYPES = ("bool", "int8", "uint16", "int32", "uint64", "float16", "bfloat16", "float32", "float64", "complex64")


def _random_layout(rng, mesh, dims):
    per: dict = {d: [] for d in dims}
    for a in rng.permutation(list(mesh.axis_names)):
        c = rng.integers(len(dims) + 1)
        if c < len(dims):
            per[dims[c]].append(str(a))
    return {d: tuple(v) for d, v in per.items() if v}


@pytest.mark.parametrize("seed", range(8))
def test_fuzz_files_and_checkpoints_written_on_one_layout_read_on_another(shared_dir, seed):
    import ml_dtypes

    rng = np.random.default_rng(seed)  # the same draws on every process
    meshes = [sa.Mesh({"row": 2, "col": 2}, comm="mpi"), sa.Mesh({"all": 4}, comm="mpi")]
    name = DTYPES[rng.integers(len(DTYPES))]
    dtype = np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)
    shape = tuple(int(n) for n in rng.integers(0, 6, rng.integers(0, 4)))
    value = (rng.standard_normal(shape) * 50).astype(dtype)
    dims = tuple("abc"[: len(shape)])
    src, dst = meshes[rng.integers(2)], meshes[rng.integers(2)]
    positional = bool(rng.integers(2))
    x = sa.asarray(value, dims=dims, mesh=src, layout=_random_layout(rng, src, dims))
    x = xp.asarray(x) if positional else x
    lay = _random_layout(rng, dst, dims)
    kw = {"dtype": "bfloat16"} if name == "bfloat16" else {}
    formats = ["npy", "hdf5"] + ([] if name == "bfloat16" else ["zarr"])
    for fmt in formats:
        path = shared_dir / f"x{seed}.{fmt}"
        {"npy": sa.io.write_npy, "zarr": sa.io.write_zarr, "hdf5": sa.io.write_hdf5}[fmt](path, x)
        read = {"npy": sa.io.read_npy, "zarr": sa.io.read_zarr, "hdf5": sa.io.read_hdf5}[fmt]
        y = read(path, dst, lay, dims=dims, **kw)
        assert y.layout == lay and y.dtype == dtype
        np.testing.assert_array_equal(y.numpy(), value)
    if name != "complex64":  # (safetensors stores no complex numbers: refused with a CheckpointError)
        sa.checkpoint.save(shared_dir / f"ck{seed}", {"x": x, "step": seed})
        out = sa.checkpoint.load(shared_dir / f"ck{seed}", mesh=dst)
        assert type(out["x"]) is (Array if positional else sa.ShardArray) and out["step"] == seed
        np.testing.assert_array_equal(out["x"].numpy(), value)
    assert not [p for p in shared_dir.iterdir() if p.name.startswith(".")]
