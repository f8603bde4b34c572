"""A path that is not a str or os.PathLike (None, a number, bytes) is a typed ArgumentError naming the function,
in every function of sa.checkpoint and sa.io that takes one (it was pathlib's raw TypeError, and write_zarr(None, x)
made an in-memory Zarr store first)."""

from __future__ import annotations

from pathlib import Path

import pytest

import shardarray as sa

BAD = [None, 3, b"/tmp/x"]


@pytest.fixture
def x() -> sa.ShardArray:
    return sa.ones(sa.Mesh({"row": 2}), {"a": 4}, layout={"a": "row"})


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_checkpoint_paths(bad: object, x: sa.ShardArray, tmp_path: Path) -> None:
    with pytest.raises(sa.ArgumentError, match=r"sa\.checkpoint\.save: the path must be a str"):
        sa.checkpoint.save(bad, {"x": x})  # type: ignore[arg-type]
    with pytest.raises(sa.ArgumentError, match=r"sa\.checkpoint\.load: the path must be a str"):
        sa.checkpoint.load(bad)  # type: ignore[arg-type]
    with pytest.raises(sa.ArgumentError, match=r"export_safetensors: the path must be a str"):
        sa.checkpoint.export_safetensors(bad, tmp_path / "out.safetensors")  # type: ignore[arg-type]
    sa.checkpoint.save(tmp_path / "ck", {"x": x})
    with pytest.raises(sa.ArgumentError, match=r"export_safetensors: file: the path must be a str"):
        sa.checkpoint.export_safetensors(tmp_path / "ck", bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_io_paths(bad: object, x: sa.ShardArray) -> None:
    mesh = x.mesh
    with pytest.raises(sa.ArgumentError, match=r"sa\.io\.read_npy: the path must be a str"):
        sa.io.read_npy(bad, mesh)  # type: ignore[arg-type]
    with pytest.raises(sa.ArgumentError, match=r"sa\.io\.write_npy: the path must be a str"):
        sa.io.write_npy(bad, x)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_hdf5_paths(bad: object, x: sa.ShardArray) -> None:
    pytest.importorskip("h5py")
    with pytest.raises(sa.ArgumentError, match=r"sa\.io\.read_hdf5: the path must be a str"):
        sa.io.read_hdf5(bad, x.mesh, dataset="d")  # type: ignore[arg-type]
    with pytest.raises(sa.ArgumentError, match=r"sa\.io\.write_hdf5: the path must be a str"):
        sa.io.write_hdf5(bad, x, dataset="d")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_zarr_paths(bad: object, x: sa.ShardArray) -> None:
    pytest.importorskip("zarr")
    with pytest.raises(sa.ArgumentError, match=r"sa\.io\.read_zarr: the path must be a str"):
        sa.io.read_zarr(bad, x.mesh)
    with pytest.raises(sa.ArgumentError, match=r"sa\.io\.write_zarr: the path must be a str"):
        sa.io.write_zarr(bad, x)
