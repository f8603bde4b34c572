"""sa.io.read_zarr / write_zarr: round trips, chunk-aligned reads (counted with a wrapper store), writes by block."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from helpers import host
from io_cases import MESH_IDS, MESHES, SHAPE_IDS, SHAPES, check_blocks, data, layouts

import shardarray as sa
from shardarray.array_api import Array
from shardarray.io import zarr_io
from shardarray.io.blocks import tiling_chunks

zarr = pytest.importorskip("zarr", reason="the [zarr] extra (in the test extra) is not installed")
LocalStore, WrapperStore = zarr.storage.LocalStore, zarr.storage.WrapperStore


class CountingStore(WrapperStore):
    """A store that counts the chunk keys read (``c/...``)."""

    def __init__(self, store):
        super().__init__(store)
        self.reads: collections.Counter = collections.Counter()

    async def get(self, key, prototype, byte_range=None):
        if key.startswith("c/") or "/c/" in key:
            self.reads[key] += 1
        return await self._store.get(key, prototype, byte_range)


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("axes", MESHES, ids=MESH_IDS)
def test_round_trip_on_every_mesh_and_layout(tmp_path, axes, shape):
    mesh = sa.Mesh(axes)
    value = data(shape, "float32")
    z = zarr.create_array(store=tmp_path / "in.zarr", shape=shape, chunks=tuple(max(1, n // 2) for n in shape),
                          dtype="float32")
    z[...] = value
    for name, layout in layouts(mesh, len(shape)).items():
        x = sa.io.read_zarr(tmp_path / "in.zarr", mesh, layout)
        assert isinstance(x, Array), name
        check_blocks(x, value, mesh)
        out = sa.io.write_zarr(tmp_path / f"out-{name}.zarr", x)
        assert out.chunks == tiling_chunks(x)
        np.testing.assert_array_equal(zarr.open_array(tmp_path / f"out-{name}.zarr", mode="r")[...], value)
        y = sa.io.read_zarr(tmp_path / f"out-{name}.zarr", mesh, layout, dims=tuple(f"d{k}" for k in range(len(shape))))
        assert type(y) is sa.ShardArray
        check_blocks(y, value, mesh)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "int64", "uint32", "bool", "complex128", "float16"])
def test_dtypes(tmp_path, dtype):
    mesh = sa.Mesh({"row": 3, "col": 2})
    value = data((7, 5), dtype)
    x = sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    sa.io.write_zarr(tmp_path / "x.zarr", x)
    y = sa.io.read_zarr(tmp_path / "x.zarr", mesh, dims=("a", "b"), dtype=dtype, shape=(7, 5))
    assert y.dtype == np.dtype(dtype)
    check_blocks(y, value, mesh)


def test_named_arrays_record_their_dims(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((5, 4)), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
    z = sa.io.write_zarr(tmp_path / "x.zarr", x)
    assert z.metadata.dimension_names == ("batch", "io")
    p = sa.io.write_zarr(tmp_path / "p.zarr", sa.io.read_zarr(tmp_path / "x.zarr", mesh))
    assert p.metadata.dimension_names is None  # positional: no names


@pytest.mark.parametrize("axes,layout,shape,chunks", [
    ({"row": 2, "col": 2}, None, (6, 4), (3, 2)),          # a chunk per block
    ({"row": 2, "col": 2}, {0: "row"}, (6, 4), (3, 2)),    # two chunks per block, col replicas share the read
    ({"row": 3, "col": 2}, None, (7, 5), (3, 3)),          # uneven: trailing blocks smaller
    ({"all": 4}, {0: "all"}, (3, 4), (1, 4)),              # an empty block reads nothing
    ({"row": 2, "col": 2}, None, (8, 8), (2, 2)),          # four chunks per block
])
def test_each_chunk_is_read_once_when_chunks_tile_the_blocks(tmp_path, axes, layout, shape, chunks):
    value = data(shape)
    z = zarr.create_array(store=tmp_path / "a.zarr", shape=shape, chunks=chunks, dtype="float64")
    z[...] = value
    store = CountingStore(LocalStore(tmp_path / "a.zarr", read_only=True))
    mesh = sa.Mesh(axes)
    x = sa.io.read_zarr(store, mesh, layout)
    check_blocks(x, value, mesh)
    grid = [-(-n // c) for n, c in zip(shape, chunks)]
    every = {"c/" + "/".join(map(str, i)) for i in np.ndindex(*grid)}
    assert set(store.reads) == every and set(store.reads.values()) == {1}


def test_a_chunk_that_straddles_blocks_is_read_by_each(tmp_path):
    value = data((6, 4))
    z = zarr.create_array(store=tmp_path / "a.zarr", shape=(6, 4), chunks=(6, 4), dtype="float64")
    z[...] = value
    store = CountingStore(LocalStore(tmp_path / "a.zarr", read_only=True))
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.io.read_zarr(store, mesh)
    check_blocks(x, value, mesh)
    assert store.reads == {"c/0/0": 4}  # one chunk, four distinct blocks


def test_write_writes_each_chunk_once_by_its_block(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((9, 6)), dims=("a", "b"), mesh=mesh, layout={"a": "row"})  # col replicas
    writes: collections.Counter = collections.Counter()

    class Counting(WrapperStore):
        async def set(self, key, value):
            writes[key] += 1
            return await self._store.set(key, value)

        async def get(self, key, prototype, byte_range=None):
            assert not key.startswith("c/"), f"a write by block reads no chunk ({key})"
            return await self._store.get(key, prototype, byte_range)

    sa.io.write_zarr(Counting(LocalStore(tmp_path / "x.zarr")), x)
    assert {k: n for k, n in writes.items() if k.startswith("c/")} == {"c/0/0": 1, "c/1/0": 1}
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "x.zarr", mode="r")[...], host(x))


def test_user_chunks(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((8, 6)), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    assert sa.io.write_zarr(tmp_path / "a.zarr", x, (2, 3)).chunks == (2, 3)
    assert sa.io.write_zarr(tmp_path / "b.zarr", x, {"a": 1}).chunks == (1, 3)
    assert sa.io.write_zarr(tmp_path / "c.zarr", x, 5).chunks == (5, 5)  # one process: any chunks
    for name in "abc":
        np.testing.assert_array_equal(zarr.open_array(tmp_path / f"{name}.zarr", mode="r")[...], host(x))


def test_chunks_that_do_not_tile_the_blocks_are_refused_with_several_processes():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((8, 6)), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    assert zarr_io._chunks(x, (4, 3), 4, "p", "w") == (4, 3)
    assert zarr_io._chunks(x, (2, 1), 4, "p", "w") == (2, 1)
    with pytest.raises(sa.LayoutError, match=r"dim 'a' starts at 4, inside a chunk of 3.*one's data is lost"):
        zarr_io._chunks(x, (3, 3), 4, "p", "w")
    assert zarr_io._chunks(x, (3, 3), 1, "p", "w") == (3, 3)


def test_default_chunks_tile_nested_uneven_blocks(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((10, 3)), dims=("a", "b"), mesh=mesh, layout={"a": ("row", "col")})  # blocks 3, 2, 3, 2
    z = sa.io.write_zarr(tmp_path / "x.zarr", x)
    assert z.chunks == (1, 3)
    x12 = sa.asarray(data((12, 3)), dims=("a", "b"), mesh=mesh, layout={"a": ("row", "col")})  # blocks of 3
    assert sa.io.write_zarr(tmp_path / "y.zarr", x12).chunks == (3, 3)


def test_overwrite_and_bfloat16(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((4, 3)), dims=("a", "b"), mesh=mesh)
    sa.io.write_zarr(tmp_path / "x.zarr", x)
    with pytest.raises(sa.ArgumentError, match="exists; pass overwrite=True"):
        sa.io.write_zarr(tmp_path / "x.zarr", x)
    sa.io.write_zarr(tmp_path / "x.zarr", x * 2.0, overwrite=True)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "x.zarr", mode="r")[...], host(x) * 2)
    with pytest.raises(sa.DTypeError, match=r"Zarr cannot store dtype bfloat16.*write_npy"):
        sa.io.write_zarr(tmp_path / "b.zarr", x.astype("bfloat16"))


def test_zarr_v2_arrays_read(tmp_path):
    value = data((5, 4))
    z = zarr.create_array(store=tmp_path / "v2.zarr", shape=(5, 4), chunks=(3, 2), dtype="float64", zarr_format=2)
    z[...] = value
    mesh = sa.Mesh({"row": 2, "col": 2})
    check_blocks(sa.io.read_zarr(tmp_path / "v2.zarr", mesh), value, mesh)
