"""sa.io under ``mpiexec -n 4``: each process reads and writes only its own blocks (.npy, Zarr, HDF5).

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_io.py``
(tests/io/test_io_mpi_job.py runs it so).
"""

from __future__ import annotations

import collections
import os

import numpy as np
import pytest

import shardarray as sa
from shardarray.layout import block_bounds

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")


def _value(shape, dtype="float64"):
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)


def _mine(x, value):
    """This process's shard is its block of ``value``; the whole array is ``value``."""
    (d,) = x.mesh.local_devices
    b = block_bounds(x.mesh, x.spec)[d]
    np.testing.assert_array_equal(np.asarray(x.shards[d]), value[tuple(slice(s, e) for s, e in b)])
    assert all(x.shards[e] is None for e in range(x.mesh.size) if e != d)
    np.testing.assert_array_equal(x.numpy(), value)  # (a collective)


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5"])
def test_write_then_read_onto_other_meshes_and_layouts(shared_dir, fmt):
    import h5py
    import zarr

    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    value = _value((9, 7))
    x = sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    path = shared_dir / f"x.{fmt}"
    write = {"npy": sa.io.write_npy, "zarr": sa.io.write_zarr, "hdf5": sa.io.write_hdf5}[fmt]
    read = {"npy": sa.io.read_npy, "zarr": sa.io.read_zarr, "hdf5": sa.io.read_hdf5}[fmt]
    write(path, x)
    on_disk = {"npy": lambda: np.load(path), "zarr": lambda: zarr.open_array(path, mode="r")[...],
               "hdf5": lambda: h5py.File(path, "r")["data"][...]}[fmt]()
    np.testing.assert_array_equal(on_disk, value)
    if fmt == "zarr":
        assert zarr.open_array(path, mode="r").chunks == (5, 4)
    m4 = sa.Mesh({"model": 4}, comm="mpi")
    y = read(path, m4, {1: "model"})  # uneven: 2, 2, 2, 1 columns
    assert isinstance(y, sa.array_api.Array)
    _mine(y, value)
    z = read(path, mesh, dims=("a", "b"))
    assert type(z) is sa.ShardArray and z.layout == {"a": ("row",), "b": ("col",)}
    _mine(z, value)


def test_empty_blocks_and_replicas(shared_dir):
    mesh = sa.Mesh({"model": 4}, comm="mpi")
    value = _value((3, 5), "float32")
    x = sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": "model"})  # process 3: an empty block
    for fmt, write, read in [("npy", sa.io.write_npy, sa.io.read_npy), ("zarr", sa.io.write_zarr, sa.io.read_zarr),
                             ("h5", sa.io.write_hdf5, sa.io.read_hdf5)]:
        write(shared_dir / f"e.{fmt}", x)
        _mine(read(shared_dir / f"e.{fmt}", mesh, {0: "model"}), value)
        m22 = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
        _mine(read(shared_dir / f"e.{fmt}", m22, {1: "col"}), value)  # row replicas


def test_each_process_reads_only_its_own_chunks(shared_dir):
    import zarr
    from zarr.storage import LocalStore, WrapperStore

    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    value = _value((8, 6))
    x = sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    sa.io.write_zarr(shared_dir / "c.zarr", x, (2, 3))  # two chunks per block
    reads: collections.Counter = collections.Counter()

    class Counting(WrapperStore):
        async def get(self, key, prototype, byte_range=None):
            if key.startswith("c/"):
                reads[key] += 1
            return await self._store.get(key, prototype, byte_range)

    y = sa.io.read_zarr(Counting(LocalStore(shared_dir / "c.zarr", read_only=True)), mesh)
    _mine(y, value)
    r, c = mesh.coords(mesh.process_index)["row"], mesh.coords(mesh.process_index)["col"]
    assert reads == {f"c/{2 * r}/{c}": 1, f"c/{2 * r + 1}/{c}": 1}
    assert zarr.open_array(shared_dir / "c.zarr", mode="r").chunks == (2, 3)


def test_each_process_maps_only_its_npy_block(shared_dir, monkeypatch):
    import shardarray.io.npy as npy_mod

    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    value = _value((7, 6))
    sa.io.write_npy(shared_dir / "m.npy", sa.asarray(value, dims=("a", "b"), mesh=mesh))
    keys: list = []
    real = npy_mod.open_memmap

    class Recorder:
        def __init__(self, mm):
            self._mm = mm

        def __getattr__(self, name):
            return getattr(self._mm, name)

        def __getitem__(self, key):
            keys.append(tuple((k.start, k.stop) for k in key))
            return self._mm[key]

    monkeypatch.setattr(npy_mod, "open_memmap", lambda *a, **k: Recorder(real(*a, **k)))
    y = sa.io.read_npy(shared_dir / "m.npy", mesh)
    assert keys == [block_bounds(mesh, y.spec)[mesh.process_index]]
    _mine(y, value)


def test_errors_raise_on_every_process(shared_dir):
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    x = sa.asarray(_value((8, 6)), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with pytest.raises(sa.LayoutError, match=r"do not tile the blocks.*one's data is lost"):
        sa.io.write_zarr(shared_dir / "bad.zarr", x, (3, 3))
    with pytest.raises(sa.ArgumentError, match=r"no .npy file at"):
        sa.io.read_npy(shared_dir / "missing.npy", mesh)
    sa.io.write_npy(shared_dir / "w.npy", x)
    with pytest.raises(sa.ArgumentError, match="exists; pass overwrite=True"):  # found by process 0, raised on all
        sa.io.write_npy(shared_dir / "w.npy", x)
    sa.io.write_zarr(shared_dir / "w.zarr", x)
    with pytest.raises(sa.ArgumentError, match="exists; pass overwrite=True"):
        sa.io.write_zarr(shared_dir / "w.zarr", x)
    sa.io.write_zarr(shared_dir / "w.zarr", x * 2.0, overwrite=True)
    with pytest.raises(sa.DimensionError, match=r"not the shape=.*expected"):
        sa.io.read_zarr(shared_dir / "w.zarr", mesh, shape=(6, 8))
    np.testing.assert_array_equal(sa.io.read_zarr(shared_dir / "w.zarr", mesh).numpy(), _value((8, 6)) * 2)
