"""sa.io.read_hdf5 / write_hdf5: round trips, each device reading its block as one hyperslab."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from helpers import host
from io_cases import MESH_IDS, MESHES, SHAPE_IDS, SHAPES, check_blocks, data, layouts

import shardarray as sa
from shardarray.array_api import Array
from shardarray.layout import block_bounds


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("axes", MESHES, ids=MESH_IDS)
def test_round_trip_on_every_mesh_and_layout(tmp_path, axes, shape):
    mesh = sa.Mesh(axes)
    value = data(shape, "int32")
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("group/x", data=value)
    for name, layout in layouts(mesh, len(shape)).items():
        x = sa.io.read_hdf5(tmp_path / "in.h5", mesh, layout)  # the file's only dataset
        assert isinstance(x, Array), name
        check_blocks(x, value, mesh)
        sa.io.write_hdf5(tmp_path / "out.h5", x, name)
        with h5py.File(tmp_path / "out.h5", "r") as f:
            np.testing.assert_array_equal(f[name][...], value)
        dims = tuple(f"d{k}" for k in range(len(shape)))
        y = sa.io.read_hdf5(tmp_path / "out.h5", mesh, layout, dataset=name, dims=dims)
        assert type(y) is sa.ShardArray
        check_blocks(y, value, mesh)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint64", "bool", "complex64", "float16"])
def test_dtypes(tmp_path, dtype):
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = data((5, 3), dtype)
    x = sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    sa.io.write_hdf5(tmp_path / "x.h5", x, chunks=(2, 2))
    y = sa.io.read_hdf5(tmp_path / "x.h5", mesh, dims=("a", "b"), dtype=dtype, dataset="data")
    assert y.dtype == np.dtype(dtype)
    check_blocks(y, value, mesh)


def test_each_device_reads_one_hyperslab(tmp_path, monkeypatch):
    value = data((7, 5))
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("x", data=value)
    sels: list = []
    real = h5py.Dataset.read_direct

    def recording(self, dest, source_sel=None, dest_sel=None):
        sels.append(tuple((s.start, s.stop) for s in source_sel))
        return real(self, dest, source_sel, dest_sel)

    monkeypatch.setattr(h5py.Dataset, "read_direct", recording)
    mesh = sa.Mesh({"row": 3, "col": 2})
    x = sa.io.read_hdf5(tmp_path / "a.h5", mesh, {0: "row"}, dataset="x")
    check_blocks(x, value, mesh)
    assert sorted(sels) == sorted(set(block_bounds(mesh, x.spec)))  # col replicas read once


def test_scalar_dataset(tmp_path):
    with h5py.File(tmp_path / "s.h5", "w") as f:
        f.create_dataset("s", data=2.5)
    x = sa.io.read_hdf5(tmp_path / "s.h5", sa.Mesh({"row": 2, "col": 2}))
    assert x.shape == () and float(x) == 2.5
    sa.io.write_hdf5(tmp_path / "t.h5", x, "t")
    with h5py.File(tmp_path / "t.h5", "r") as f:
        assert f["t"][()] == 2.5


def test_write_keeps_other_datasets_and_overwrites_on_request(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((4, 3)), dims=("a", "b"), mesh=mesh)
    sa.io.write_hdf5(tmp_path / "f.h5", x, "x")
    sa.io.write_hdf5(tmp_path / "f.h5", x * 2.0, "y")
    with pytest.raises(sa.ExistingFileError, match="already holds 'x'; pass overwrite=True"):
        sa.io.write_hdf5(tmp_path / "f.h5", x, "x")
    sa.io.write_hdf5(tmp_path / "f.h5", x * 3.0, "x", overwrite=True)
    with h5py.File(tmp_path / "f.h5", "r") as f:
        np.testing.assert_array_equal(f["x"][...], host(x) * 3)
        np.testing.assert_array_equal(f["y"][...], host(x) * 2)
    with pytest.raises(sa.ArgumentError, match=r"holds 2 datasets.*pass dataset="):
        sa.io.read_hdf5(tmp_path / "f.h5", mesh)


def test_bfloat16_round_trips_as_opaque_items(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((5, 3), "float32"), dims=("a", "b"), mesh=mesh, layout={"a": "row"}).astype("bfloat16")
    sa.io.write_hdf5(tmp_path / "b.h5", x)
    with pytest.raises(sa.DTypeError, match="dtype='bfloat16'"):
        sa.io.read_hdf5(tmp_path / "b.h5", mesh)
    y = sa.io.read_hdf5(tmp_path / "b.h5", mesh, dtype="bfloat16")
    assert y.dtype == np.dtype("bfloat16")
    check_blocks(y, host(x), mesh)
