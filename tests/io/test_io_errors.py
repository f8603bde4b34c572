"""Bad input to sa.io gives typed errors naming the path, shape, dtype and what to do."""

from __future__ import annotations

import sys

import h5py
import numpy as np
import pytest

from io_cases import data

import shardarray as sa

zarr = pytest.importorskip("zarr", reason="the [zarr] extra (in the test extra) is not installed")

MESH = {"row": 2, "col": 2}


def _files(tmp_path):
    value = data((5, 4), "float32")
    np.save(tmp_path / "a.npy", value)
    zarr.create_array(store=tmp_path / "a.zarr", shape=(5, 4), chunks=(3, 2), dtype="float32")[...] = value
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("x", data=value)
    return {
        "npy": lambda **kw: sa.io.read_npy(tmp_path / "a.npy", sa.Mesh(MESH), **kw),
        "zarr": lambda **kw: sa.io.read_zarr(tmp_path / "a.zarr", sa.Mesh(MESH), **kw),
        "hdf5": lambda **kw: sa.io.read_hdf5(tmp_path / "a.h5", sa.Mesh(MESH), **kw),
    }


READERS = {"npy": sa.io.read_npy, "zarr": sa.io.read_zarr, "hdf5": sa.io.read_hdf5}


@pytest.mark.parametrize("fmt,name", [("npy", "nope.npy"), ("zarr", "nope.zarr"), ("hdf5", "nope.h5")])
def test_a_missing_file(tmp_path, fmt, name):
    with pytest.raises(sa.ArgumentError, match=f"no .* at {tmp_path / name}.*check the path") as e:
        READERS[fmt](tmp_path / name, sa.Mesh(MESH))
    assert isinstance(e.value, ValueError)
    assert isinstance(e.value, sa.MissingFileError) and isinstance(e.value, FileNotFoundError)  # except OSError works


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5"])
def test_a_shape_other_than_the_expected_one(tmp_path, fmt):
    read = _files(tmp_path)[fmt]
    with pytest.raises(sa.DimensionError, match=r"holds an array of shape \(5, 4\).*not the shape=\(4, 5\) expected"):
        read(shape=(4, 5))
    assert read(shape=(5, 4)).shape == (5, 4)


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5"])
def test_a_dtype_other_than_the_expected_one(tmp_path, fmt):
    read = _files(tmp_path)[fmt]
    with pytest.raises(sa.DTypeError, match=r"holds an array of dtype float32 \(shape \(5, 4\)\), not the "
                                            r"dtype=float64 expected.*astype\('float64'\)") as e:
        read(dtype="float64")
    assert isinstance(e.value, TypeError)
    with pytest.raises(sa.DTypeError, match="unknown dtype"):
        read(dtype="nonsense")


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5"])
def test_dims_and_layouts_that_do_not_fit(tmp_path, fmt):
    read = _files(tmp_path)[fmt]
    with pytest.raises(sa.DimensionError, match=r"dims=\('a',\) name 1 dim\(s\) but the file's array has shape"):
        read(dims=("a",))
    with pytest.raises(sa.LayoutError, match="names axis 2, but the array has 2 dim"):
        read(layout={2: "row"})
    with pytest.raises(sa.LayoutError, match="depth"):
        read(layout={0: "depth"})
    with pytest.raises(sa.LayoutError, match="names dim 'c'"):
        read(dims=("a", "b"), layout={"c": "row"})


def test_not_a_mesh(tmp_path):
    read = _files(tmp_path)
    with pytest.raises(sa.MeshError, match=r"needs a sa.Mesh"):
        sa.io.read_npy(tmp_path / "a.npy", {"row": 2})
    assert read["npy"]().shape == (5, 4)


def test_files_of_another_kind(tmp_path):
    (tmp_path / "t.npy").write_text("not an npy file")
    (tmp_path / "t.h5").write_text("not an hdf5 file")
    with pytest.raises(sa.ArgumentError, match=r"t.npy is not a readable .npy file"):
        sa.io.read_npy(tmp_path / "t.npy", sa.Mesh(MESH))
    with pytest.raises(sa.ArgumentError, match=r"t.h5 is not a readable HDF5 file"):
        sa.io.read_hdf5(tmp_path / "t.h5", sa.Mesh(MESH))
    with pytest.raises(sa.ArgumentError, match=r"no Zarr array at"):
        sa.io.read_zarr(tmp_path / "t.npy", sa.Mesh(MESH))


def test_a_zarr_group_lists_its_arrays(tmp_path):
    g = zarr.open_group(tmp_path / "g.zarr", mode="w")
    g.create_array("weights", shape=(3,), dtype="f4")
    with pytest.raises(sa.ArgumentError, match=r"holds a Zarr group with arrays \['weights'\]"):
        sa.io.read_zarr(tmp_path / "g.zarr", sa.Mesh(MESH))
    assert sa.io.read_zarr(tmp_path / "g.zarr" / "weights", sa.Mesh(MESH)).shape == (3,)


def test_hdf5_datasets_that_are_missing_or_groups(tmp_path):
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("g/x", data=np.zeros(3))
        f.create_dataset("y", data=np.zeros(3))
    with pytest.raises(sa.ArgumentError, match=r"has nothing at 'z'; its datasets are \['g/x', 'y'\]"):
        sa.io.read_hdf5(tmp_path / "f.h5", sa.Mesh(MESH), dataset="z")
    with pytest.raises(sa.ArgumentError, match=r"has a group at 'g'"):
        sa.io.read_hdf5(tmp_path / "f.h5", sa.Mesh(MESH), dataset="g")
    assert sa.io.read_hdf5(tmp_path / "f.h5", sa.Mesh(MESH), dataset="g/x").shape == (3,)


def test_dtypes_shardarray_does_not_hold(tmp_path):
    np.save(tmp_path / "s.npy", np.array(["a", "b"]))
    np.save(tmp_path / "t.npy", np.zeros(3, dtype="datetime64[s]"))
    for f in ("s.npy", "t.npy"):
        with pytest.raises(sa.DTypeError, match=f"{f} holds an array of shape.*not support"):
            sa.io.read_npy(tmp_path / f, sa.Mesh(MESH))


def test_writing_what_is_not_an_array_with_values(tmp_path):
    with pytest.raises(sa.BackendError, match=r"writes a ShardArray.*xp.asarray"):
        sa.io.write_npy(tmp_path / "x.npy", np.zeros(3))
    meta = sa.zeros(sa.Mesh(MESH, backend="meta"), {"a": 4})
    for write in (sa.io.write_npy, sa.io.write_zarr, sa.io.write_hdf5):
        with pytest.raises(sa.BackendError, match="'meta' backend, which holds no values"):
            write(tmp_path / "m", meta)


def test_bad_zarr_chunks(tmp_path):
    x = sa.asarray(data((4, 3)), dims=("a", "b"), mesh=sa.Mesh(MESH))
    for chunks in [(0, 1), (2,), (2, 1.5), "big", (True, 1)]:
        with pytest.raises(sa.DimensionError, match="give one integer >= 1 per dim"):
            sa.io.write_zarr(tmp_path / "x.zarr", x, chunks)
    with pytest.raises(sa.DimensionError, match=r"names \['c'\], not dims"):
        sa.io.write_zarr(tmp_path / "x.zarr", x, {"c": 2})


def test_meta_meshes_read_shapes_only(tmp_path):
    _files(tmp_path)
    meta = sa.Mesh(MESH, backend="meta")
    for x in (sa.io.read_npy(tmp_path / "a.npy", meta), sa.io.read_zarr(tmp_path / "a.zarr", meta),
              sa.io.read_hdf5(tmp_path / "a.h5", meta)):
        assert x.shape == (5, 4) and x.dtype == np.float32 and x.mesh.backend.name == "meta"


@pytest.mark.parametrize("module,extra,call", [
    ("zarr", "zarr", lambda p: sa.io.read_zarr(p / "a.zarr", sa.Mesh(MESH))),
    ("zarr", "zarr", lambda p: sa.io.write_zarr(p / "b.zarr", sa.zeros(sa.Mesh(MESH), {"a": 2}))),
    ("h5py", "hdf5", lambda p: sa.io.read_hdf5(p / "a.h5", sa.Mesh(MESH))),
    ("h5py", "hdf5", lambda p: sa.io.write_hdf5(p / "b.h5", sa.zeros(sa.Mesh(MESH), {"a": 2}))),
])
def test_a_missing_extra_names_it(tmp_path, monkeypatch, module, extra, call):
    monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(ImportError, match=rf"pip install 'shardarray\[{extra}\]'"):
        call(tmp_path)
