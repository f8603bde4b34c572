"""sa.io.read_npy / write_npy: round trips on every mesh, each device reading only its block (memory map)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import host
from io_cases import MESH_IDS, MESHES, SHAPE_IDS, SHAPES, check_blocks, data, layouts

import shardarray as sa
import shardarray.array_api as xp
import shardarray.io.npy as npy_mod
from shardarray.array_api import Array
from shardarray.layout import block_bounds


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("axes", MESHES, ids=MESH_IDS)
def test_round_trip_on_every_mesh_and_layout(tmp_path, axes, shape):
    mesh = sa.Mesh(axes)
    value = data(shape)
    np.save(tmp_path / "in.npy", value)
    for name, layout in layouts(mesh, len(shape)).items():
        x = sa.io.read_npy(tmp_path / "in.npy", mesh, layout)
        assert isinstance(x, Array), name
        assert x.dims == tuple(f"dim{k}" for k in range(len(shape)))
        check_blocks(x, value, mesh)
        out = sa.io.write_npy(tmp_path / f"out-{name}.npy", x)
        np.testing.assert_array_equal(np.load(out), value)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool", "complex64", "float16"])
def test_dtypes(tmp_path, dtype):
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = data((5, 3), dtype)
    np.save(tmp_path / "a.npy", value)
    x = sa.io.read_npy(tmp_path / "a.npy", mesh, dims=("a", "b"), dtype=dtype)
    assert x.dtype == np.dtype(dtype)
    check_blocks(x, value, mesh)
    sa.io.write_npy(tmp_path / "b.npy", x)
    back = np.load(tmp_path / "b.npy")
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, value)


def test_bfloat16_round_trips_as_numpy_saves_it(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = data((5, 3), "float32").astype("bfloat16")
    np.save(tmp_path / "a.npy", value)  # NumPy writes 2-byte void items
    with pytest.raises(sa.DTypeError, match="dtype='bfloat16'"):
        sa.io.read_npy(tmp_path / "a.npy", mesh)
    x = sa.io.read_npy(tmp_path / "a.npy", mesh, dtype="bfloat16")
    assert x.dtype == np.dtype("bfloat16")
    check_blocks(x, value, mesh)
    sa.io.write_npy(tmp_path / "b.npy", x)
    y = sa.io.read_npy(tmp_path / "b.npy", mesh, dtype="bfloat16")
    np.testing.assert_array_equal(host(y).astype(np.float32), value.astype(np.float32))


def test_big_endian_and_fortran_order_files(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = data((5, 4))
    np.save(tmp_path / "be.npy", value.astype(">f8"))
    np.save(tmp_path / "f.npy", np.asfortranarray(value))
    for f in ("be.npy", "f.npy"):
        x = sa.io.read_npy(tmp_path / f, mesh)
        assert x.dtype == np.float64
        check_blocks(x, value, mesh)


def test_named_result_follows_the_layout_and_the_mesh_rules(tmp_path):
    value = data((6, 4))
    np.save(tmp_path / "a.npy", value)
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.io.read_npy(tmp_path / "a.npy", mesh, dims=("batch", "io"))
    assert type(x) is sa.ShardArray and x.layout == {"batch": ("row",), "io": ("col",)}
    y = sa.io.read_npy(tmp_path / "a.npy", mesh, {"io": ("row", "col")}, dims=("batch", "io"))
    assert y.layout == {"io": ("row", "col")}
    check_blocks(y, value, mesh)
    ruled = sa.Mesh({"row": 2, "col": 2}, rules={"io": "row"})
    z = sa.io.read_npy(tmp_path / "a.npy", ruled, dims=("batch", "io"))
    assert z.layout == {"io": ("row",)}
    check_blocks(z, value, ruled)
    lay = sa.zeros(mesh, {"batch": 6, "io": 4}, layout={"batch": "col"}).spec
    assert sa.io.read_npy(tmp_path / "a.npy", mesh, lay, dims=("batch", "io")).layout == {"batch": ("col",)}


def test_default_mesh_and_positional_ops(tmp_path):
    value = data((6, 4))
    np.save(tmp_path / "a.npy", value)
    x = sa.io.read_npy(tmp_path / "a.npy", None)
    assert x.mesh == sa.get_default_mesh()
    np.testing.assert_allclose(host(xp.sum(x, axis=0)), value.sum(0))


def test_zero_dim_array(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    np.save(tmp_path / "s.npy", np.float64(3.5))
    x = sa.io.read_npy(tmp_path / "s.npy", mesh)
    assert x.shape == () and float(x) == 3.5
    sa.io.write_npy(tmp_path / "t.npy", x)
    assert np.load(tmp_path / "t.npy") == 3.5


class _Recorder:
    """A memory map that records every index it is read with."""

    def __init__(self, mm, keys):
        self._mm, self._keys = mm, keys

    def __getattr__(self, name):
        return getattr(self._mm, name)

    def __getitem__(self, key):
        self._keys.append(key)
        return self._mm[key]


@pytest.mark.parametrize("axes,layout", [({"row": 2, "col": 2}, {0: "row"}), ({"row": 3, "col": 2}, None),
                                         ({"all": 4}, {1: "all"})])
def test_each_block_is_read_once_and_only_its_slice(tmp_path, monkeypatch, axes, layout):
    value = data((7, 5))
    np.save(tmp_path / "a.npy", value)
    keys: list = []
    real = npy_mod.open_memmap
    monkeypatch.setattr(npy_mod, "open_memmap", lambda *a, **k: _Recorder(real(*a, **k), keys))
    mesh = sa.Mesh(axes)
    x = sa.io.read_npy(tmp_path / "a.npy", mesh, layout)
    bounds = block_bounds(mesh, x.spec)
    expect = sorted(bounds[rep] for rep, _ in mesh.replica_classes(x.spec.used_axes))
    assert sorted(tuple((k.start, k.stop) for k in key) for key in keys) == expect  # one read per block, no more
    assert len(set(expect)) == len(set(bounds))  # (replicas share a read)
    check_blocks(x, value, mesh)


def test_write_resolves_a_pending_sum_and_writes_replicas_once(tmp_path, monkeypatch):
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = sa.asarray(data((4, 6)), dims=("m", "k"), mesh=mesh, layout={"k": "col"})
    b = sa.asarray(data((6, 3), seed=1), dims=("k", "n"), mesh=mesh, layout={"k": "col"})
    c = sa.einsum("m k, k n -> m n", a, b)
    assert c.pending
    writes: list = []
    real = npy_mod.open_memmap

    def recording(*args, **kw):
        mm = real(*args, **kw)
        if kw.get("mode") != "r+":
            return mm

        class W(_Recorder):
            def __setitem__(self, key, v):
                writes.append(key)
                mm[key] = v

        return W(mm, [])

    monkeypatch.setattr(npy_mod, "open_memmap", recording)
    sa.io.write_npy(tmp_path / "c.npy", c)
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), host(a) @ host(b))
    assert len(writes) == 1  # replicated over the whole mesh: written once


def test_overwrite(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(data((4, 3)), dims=("a", "b"), mesh=mesh)
    sa.io.write_npy(tmp_path / "x.npy", x)
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):  # sa.ExistingFileError
        sa.io.write_npy(tmp_path / "x.npy", x * 2.0)
    sa.io.write_npy(tmp_path / "x.npy", x * 2.0, overwrite=True)
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), host(x) * 2)
