"""Regressions found by a differential fuzzer of sa.io (random shapes, dtypes, meshes, layouts and files, compared
with NumPy, zarr-python and h5py reading the same files; bad files and paths must give typed errors)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

zarr = pytest.importorskip("zarr", reason="the [zarr] extra (in the test extra) is not installed")

MESH = {"row": 2, "col": 2}


def _x() -> sa.ShardArray:
    return sa.asarray(np.arange(12.0).reshape(4, 3), dims=("a", "b"), mesh=sa.Mesh(MESH), layout={"a": "row"})


def test_write_zarr_overwrite_never_deletes_a_folder_of_other_files(tmp_path):
    # zarr-python's overwrite deletes everything under the path: a folder of the user's files was wiped
    folder = tmp_path / "results"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("keep me")
    (folder / "sub" / "more.txt").write_text("and me")
    with pytest.raises(sa.ArgumentError, match="holds files but no Zarr array.*replaces only a Zarr array"):
        sa.io.write_zarr(folder, _x(), overwrite=True)
    assert (folder / "notes.txt").read_text() == "keep me" and (folder / "sub" / "more.txt").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(sa.ArgumentError, match="is a file, not a Zarr array"):
        sa.io.write_zarr(tmp_path / "file", _x(), overwrite=True)
    assert (tmp_path / "file").read_text() == "x"
    group = zarr.create_group(store=tmp_path / "g.zarr")
    group.create_array("inner", shape=(2,), dtype="f4")
    with pytest.raises(sa.ArgumentError, match="holds files but no Zarr array"):
        sa.io.write_zarr(tmp_path / "g.zarr", _x(), overwrite=True)
    (tmp_path / "empty").mkdir()
    sa.io.write_zarr(tmp_path / "empty", _x(), overwrite=True)  # an empty folder is filled
    sa.io.write_zarr(tmp_path / "empty", _x() * 2.0, overwrite=True)  # an array is replaced
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "empty", mode="r")[...], np.arange(12.0).reshape(4, 3) * 2)


def test_damaged_zarr_metadata_and_chunks_give_argument_errors(tmp_path):
    z = zarr.create_array(store=tmp_path / "a.zarr", shape=(6,), chunks=(2,), dtype="f8")
    z[:] = np.arange(6.0)
    (tmp_path / "a.zarr" / "c" / "1").write_bytes(b"garbage")  # a chunk that does not decode (was RuntimeError)
    with pytest.raises(sa.ArgumentError, match=r"reading the block \[\[0, 3\]\] of .*a.zarr failed \(RuntimeError"):
        sa.io.read_zarr(tmp_path / "a.zarr", sa.Mesh({"x": 2}))
    (tmp_path / "b.zarr").mkdir()
    (tmp_path / "b.zarr" / "zarr.json").write_text("{not json")  # was a raw JSONDecodeError
    with pytest.raises(sa.ArgumentError, match="not a readable Zarr array .*JSONDecodeError.*metadata is damaged"):
        sa.io.read_zarr(tmp_path / "b.zarr", sa.Mesh(MESH))
    (tmp_path / "b.zarr" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "array"}')  # was KeyError
    with pytest.raises(sa.ArgumentError, match="not a readable Zarr array .*KeyError"):
        sa.io.read_zarr(tmp_path / "b.zarr", sa.Mesh(MESH))


def test_hdf5_null_dataspace_and_bad_names_and_chunks_are_typed(tmp_path):
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("null", data=h5py.Empty("f4"))  # was TypeError: 'NoneType' object is not iterable
        f.create_dataset("x", data=np.arange(6.0))
    with pytest.raises(sa.ArgumentError, match=r"\[/null\] holds no array \(an HDF5 null dataspace"):
        sa.io.read_hdf5(tmp_path / "a.h5", sa.Mesh(MESH), dataset="null")
    with pytest.raises(sa.ArgumentError, match="dataset=3 is not a dataset path"):  # was a raw TypeError
        sa.io.read_hdf5(tmp_path / "a.h5", sa.Mesh(MESH), dataset=3)  # type: ignore[arg-type]
    # these were DTypeError "HDF5 cannot store dtype float64": the dtype was never the problem
    with pytest.raises(sa.DimensionError, match=r"chunks=2 for an array of shape \(4, 3\): give one integer"):
        sa.io.write_hdf5(tmp_path / "b.h5", _x(), chunks=2)  # type: ignore[arg-type]
    with pytest.raises(sa.ArgumentError, match="dataset='' is not a dataset path"):
        sa.io.write_hdf5(tmp_path / "b.h5", _x(), "")
    with pytest.raises(sa.ArgumentError, match=r"cannot create dataset 'x/y'.*already exists"):
        sa.io.write_hdf5(tmp_path / "a.h5", _x(), "x/y")


def test_writers_turn_file_system_errors_into_argument_errors(tmp_path):
    (tmp_path / "afile").write_text("x")
    under_a_file = tmp_path / "afile" / "x"
    with pytest.raises(sa.ArgumentError, match=r"write_npy: cannot create .*\(FileExistsError"):
        sa.io.write_npy(under_a_file.with_suffix(".npy"), _x())
    with pytest.raises(sa.ArgumentError, match=r"write_zarr: cannot create a Zarr array at .*\(NotADirectoryError"):
        sa.io.write_zarr(under_a_file.with_suffix(".zarr"), _x())
    with pytest.raises(sa.ArgumentError, match=r"write_hdf5: cannot open .* as an HDF5 file"):
        sa.io.write_hdf5(under_a_file.with_suffix(".h5"), _x())
    (tmp_path / "adir").mkdir()
    with pytest.raises(sa.ArgumentError, match="is a directory, and write_npy replaces only files"):
        sa.io.write_npy(tmp_path / "adir", _x(), overwrite=True)  # was a raw IsADirectoryError


def test_a_positional_array_with_a_pending_sum_is_written_positional(tmp_path):
    mesh = sa.Mesh(MESH)
    a = xp.asarray(sa.asarray(np.arange(12.0).reshape(3, 4), dims=("dim0", "dim1"), mesh=mesh, layout={"dim1": "row"}))
    p = a @ xp.ones(4, device=mesh)  # contracts the split dim: a pending sum over "row"
    assert p.pending and p.positional
    z = sa.io.write_zarr(tmp_path / "p.zarr", p)
    assert z.metadata.dimension_names is None  # was ("dim0",): the resolved array had become named
    np.testing.assert_array_equal(z[...], np.arange(12.0).reshape(3, 4).sum(1))
