"""Fuzz round 13 of ``sa.io``: files that NumPy, zarr-python and h5py write themselves (Fortran order, big-endian
items, Zarr v2 and v3, chunkings that do and do not align with the blocks), read onto meshes 1, 2x2, 4, 2x2x2 and
3x2 with uneven and empty blocks, every supported dtype, 0-d and size-0 arrays, named and positional results;
each compared bit for bit with what the file's own library reads, block by block. Then the writers against the
libraries' readers, and bad input (missing file, wrong shape or dtype, a truncated or damaged file, a directory)
giving a typed error that names the path and says what to do.

``FUZZ13_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_meshes, fuzz
from helpers import host, layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api import Array
from shardarray.layout import block_bounds

zarr = pytest.importorskip("zarr", reason="the [zarr] extra is not installed")
h5py = pytest.importorskip("h5py", reason="the [hdf5] extra is not installed")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's casts of NaN and inf)
ENV = "FUZZ13_EXAMPLES"
DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


def _dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _values(shape: tuple[int, ...], name: str, seed: int) -> np.ndarray:
    """Random data of dtype ``name`` with NaN, inf, -0.0 and the integer extremes among it."""
    rng = np.random.default_rng(seed)
    dt = _dtype(name)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return np.asarray(rng.random(shape) > 0.5)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        out = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
        special = np.array([info.min, info.max, 0], dtype=dt)
    else:
        out = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
        special = np.array([np.nan, np.inf, -np.inf, -0.0])
        if dt.kind == "c":
            out, special = out + 1j * rng.standard_normal(n), special + 1j * special[::-1]
        out, special = out.astype(dt), special.astype(dt)
    k = min(n, int(rng.integers(0, 3)))
    if k:
        out[rng.choice(n, k, replace=False)] = rng.choice(special, k)
    return out.reshape(shape)


@st.composite
def _cases(draw, dtypes=DTYPES):
    """(mesh, value, dims, layout, positional) of one random array: 0-3 dims of 0-7 (0 rarely)."""
    mesh = draw(cached_meshes())
    name = draw(st.sampled_from(dtypes))
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(0 if draw(st.integers(0, 5)) == 0 else 1, 7)) for _ in range(ndim))
    positional = draw(st.booleans())
    dims = tuple(f"dim{k}" for k in range(ndim)) if positional else tuple("abc"[:ndim])
    value = _values(shape, name, draw(st.integers(0, 2**16)))
    return mesh, value, dims, draw(layouts(mesh, dims)), positional


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _check(x, expected: np.ndarray, mesh, dims, layout, positional) -> None:
    """``x`` holds ``expected`` bit for bit in its native-order dtype, on ``layout``, every device its block."""
    native = expected.dtype.newbyteorder("=") if expected.dtype.byteorder == ">" else expected.dtype
    expected = expected.astype(native, order="C")
    assert type(x) is (Array if positional else sa.ShardArray)
    assert x.dtype == native and x.shape == expected.shape and x.dims == dims
    assert x.layout == {d: tuple(a) for d, a in layout.items()}
    assert _bits(x.numpy()) == _bits(expected)
    for d, bounds in enumerate(block_bounds(mesh, x.spec)):
        block = expected[tuple(slice(s, e) for s, e in bounds)]
        assert _bits(host(x.shards[d])) == _bits(block), (d, bounds)


def _read_args(dims, layout, positional, value):
    kw = {"dtype": "bfloat16"} if value.dtype == ml_dtypes.bfloat16 else {}
    lay = {dims.index(d): a for d, a in layout.items()} if positional else layout
    return lay, ({} if positional else {"dims": dims}) | kw


def _chunks(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(draw(st.integers(1, max(n, 1) + 1)) for n in shape)


# ------------------------------------------------------------------------------------------ the readers


@fuzz(40, ENV)
@given(case=_cases(), order=st.sampled_from("CF"), big=st.booleans())
def test_fuzz_read_npy_of_files_np_save_wrote(tmp_path_factory, case, order, big):
    mesh, value, dims, layout, positional = case
    if big and value.dtype.kind not in "bV" and value.dtype.itemsize > 1:
        value = value.astype(value.dtype.newbyteorder(">"))
    value = np.array(value, order=order)  # (np.asfortranarray would make a 0-d array 1-d)
    path = tmp_path_factory.mktemp("npy") / "x.npy"
    np.save(path, value)
    expected = np.load(path)
    if value.dtype == ml_dtypes.bfloat16:  # np.save stores bfloat16 as 2-byte void items
        expected = expected.view(ml_dtypes.bfloat16)
    lay, kw = _read_args(dims, layout, positional, value)
    _check(sa.io.read_npy(path, mesh, lay, shape=value.shape, **kw), expected, mesh, dims, layout, positional)


@fuzz(30, ENV)
@given(case=_cases(tuple(d for d in DTYPES if d != "bfloat16")), data=st.data())
def test_fuzz_read_zarr_of_arrays_zarr_python_wrote(tmp_path_factory, case, data):
    mesh, value, dims, layout, positional = case
    chunks = _chunks(data.draw, value.shape)
    fmt = data.draw(st.sampled_from(["v3", "v3-big", "v2-F"]))
    path = tmp_path_factory.mktemp("zarr") / "x.zarr"
    kw: dict = {"zarr_format": 2, "order": "F"} if fmt == "v2-F" else {}
    if fmt == "v3-big":
        kw["serializer"] = zarr.codecs.BytesCodec(endian="big")
    z = zarr.create_array(store=path, shape=value.shape, chunks=chunks, dtype=value.dtype, **kw)
    z[...] = value
    lay, kw = _read_args(dims, layout, positional, value)
    expected = zarr.open_array(path, mode="r")[...]
    _check(sa.io.read_zarr(path, mesh, lay, **kw), expected, mesh, dims, layout, positional)


@fuzz(30, ENV)
@given(case=_cases(), data=st.data())
def test_fuzz_read_hdf5_of_datasets_h5py_wrote(tmp_path_factory, case, data):
    mesh, value, dims, layout, positional = case
    if data.draw(st.booleans()) and value.dtype.kind not in "bV" and value.dtype.itemsize > 1:
        value = value.astype(value.dtype.newbyteorder(">"))
    chunks = _chunks(data.draw, value.shape) if value.ndim and value.size and data.draw(st.booleans()) else None
    chunks = tuple(min(c, n) for c, n in zip(chunks, value.shape)) if chunks else None
    path = tmp_path_factory.mktemp("h5") / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("g/x", data=value, chunks=chunks)
        f.create_dataset("other", data=np.zeros(3))
    with h5py.File(path, "r") as f:
        expected = f["g/x"][()]
    if value.dtype == ml_dtypes.bfloat16:
        expected = np.asarray(expected).view(ml_dtypes.bfloat16)
    lay, kw = _read_args(dims, layout, positional, value)
    x = sa.io.read_hdf5(path, mesh, lay, dataset="g/x", **kw)
    _check(x, np.asarray(expected), mesh, dims, layout, positional)


# ------------------------------------------------------------------------------------------ the writers


@fuzz(40, ENV)
@given(case=_cases(), fmt=st.sampled_from(["npy", "zarr", "hdf5"]), data=st.data())
def test_fuzz_writers_against_the_libraries_readers(tmp_path_factory, case, fmt, data):
    mesh, value, dims, layout, positional = case
    x = sa.asarray(value, dims=dims, mesh=mesh, layout=layout)
    x = xp.asarray(x) if positional else x
    path = tmp_path_factory.mktemp("w") / f"x.{fmt}"
    if fmt == "npy":
        got = np.load(sa.io.write_npy(path, x))
    elif fmt == "zarr":
        if value.dtype == ml_dtypes.bfloat16:
            with pytest.raises(sa.DTypeError, match="Zarr cannot store dtype bfloat16"):
                sa.io.write_zarr(path, x)
            assert not path.exists()
            return
        chunks = data.draw(st.sampled_from([None, _chunks(data.draw, value.shape)]))
        z = sa.io.write_zarr(path, x, chunks)
        assert z.metadata.dimension_names == (None if positional or not dims else dims)
        got = zarr.open_array(path, mode="r")[...]
    else:
        with h5py.File(sa.io.write_hdf5(path, x, "d/x"), "r") as f:
            got = np.asarray(f["d/x"][()])
    if value.dtype == ml_dtypes.bfloat16:
        got = got.view(ml_dtypes.bfloat16)
    assert got.dtype == value.dtype and got.shape == value.shape and _bits(got) == _bits(value)


# ------------------------------------------------------------------------------------------ bad input


def _npy(tmp_path, value=None):
    path = tmp_path / "x.npy"
    np.save(path, np.arange(24.0).reshape(4, 6) if value is None else value)
    return path


def test_bad_input_to_the_readers_names_the_path_and_what_to_do(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    path = _npy(tmp_path)
    cases = [
        (lambda: sa.io.read_npy(tmp_path / "nope.npy", mesh), sa.MissingFileError, r"no \.npy file at .*nope\.npy"),
        (lambda: sa.io.read_npy(path, mesh, shape=(6, 4)), sa.DimensionError, r"x\.npy holds .* shape \(4, 6\)"),
        (lambda: sa.io.read_npy(path, mesh, dtype="float32"), sa.DTypeError, r"x\.npy .* pass dtype='float64'"),
        (lambda: sa.io.read_npy(tmp_path, mesh), sa.ArgumentError, r"is not a readable \.npy file"),
        (lambda: sa.io.read_npy(path, mesh, dims=("a",)), sa.DimensionError, r"give one name per dim"),
        (lambda: sa.io.read_zarr(tmp_path / "z", mesh), sa.MissingFileError, r"no Zarr array at .*z"),
        (lambda: sa.io.read_hdf5(path, mesh), sa.ArgumentError, r"x\.npy is not a readable HDF5 file"),
        (lambda: sa.io.read_hdf5(tmp_path, mesh), sa.ArgumentError, r"is not a readable HDF5 file"),
    ]
    for call, kind, pattern in cases:
        with pytest.raises(kind, match=pattern):
            call()


def test_truncated_and_damaged_files_are_typed_errors(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    path = _npy(tmp_path, np.arange(100.0))
    with open(path, "r+b") as f:
        f.truncate(300)
    with pytest.raises(sa.ArgumentError, match=r"x\.npy is not a readable \.npy file"):
        sa.io.read_npy(path, mesh)
    h5 = tmp_path / "x.h5"
    with h5py.File(h5, "w") as f:
        f.create_dataset("x", data=np.arange(1000.0))
    h5.write_bytes(h5.read_bytes()[:1500])
    with pytest.raises(sa.ArgumentError, match=r"x\.h5"):
        sa.io.read_hdf5(h5, mesh)
    x = sa.asarray(np.arange(12.0).reshape(4, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    sa.io.write_zarr(tmp_path / "z.zarr", x)
    (tmp_path / "z.zarr" / "zarr.json").write_text("{not json")
    with pytest.raises(sa.ArgumentError, match=r"z\.zarr is not a readable Zarr array"):
        sa.io.read_zarr(tmp_path / "z.zarr", mesh)


def test_writing_to_a_directory_or_over_a_file_is_refused_and_keeps_it(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(12.0).reshape(4, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(sa.ArgumentError, match=r"is a directory, and write_npy replaces only files"):
        sa.io.write_npy(tmp_path, x, overwrite=True)
    with pytest.raises(sa.ArgumentError, match=r"holds files but no Zarr array"):
        sa.io.write_zarr(tmp_path, x, overwrite=True)
    path = _npy(tmp_path)
    with pytest.raises(sa.ExistingFileError, match=r"x\.npy exists; pass overwrite=True"):
        sa.io.write_npy(path, x)
    assert (tmp_path / "keep.txt").read_text() == "mine" and np.load(path).shape == (4, 6)


def _on_disk(path, fmt):
    if fmt == "npy":
        return np.load(path)
    if fmt == "zarr":
        return zarr.open_array(path, mode="r")[...]
    with h5py.File(path, "r") as f:
        return f["data"][()]


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5"])
def test_a_write_that_fails_half_way_leaves_no_partial_array(tmp_path, monkeypatch, fmt):
    """``write_npy``/``write_zarr`` keep the old array (they write a copy and rename it); ``write_hdf5`` replaces a
    dataset in place (a renamed copy would grow the file on every overwrite) and removes the partial one."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    old = sa.asarray(np.arange(24.0).reshape(4, 6), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    write = {"npy": sa.io.write_npy, "zarr": sa.io.write_zarr, "hdf5": sa.io.write_hdf5}[fmt]
    path = tmp_path / f"x.{fmt}"
    write(path, old)
    if fmt == "hdf5":
        with h5py.File(path, "a") as f:
            f["other"] = np.zeros(2)
    x = sa.asarray(np.ones((4, 6)), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    real, calls = mesh.backend.to_numpy, []

    def failing(a):  # the second block cannot be copied to the host (a GPU error, say)
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("device lost")
        return real(a)

    monkeypatch.setattr(mesh.backend, "to_numpy", failing)
    for _ in range(2):
        calls.clear()
        with pytest.raises(RuntimeError, match="device lost"):
            write(path, x, overwrite=True)
        # the old array was deleted before the blocks were written: a zero-filled one was left in its place
        if fmt == "hdf5":
            with h5py.File(path, "r") as f:
                assert sorted(f) == ["other"]
            with pytest.raises(sa.ArgumentError, match=r"has nothing at 'data'; its datasets are \['other'\]"):
                sa.io.read_hdf5(path, mesh, dataset="data")
        else:
            assert np.array_equal(_on_disk(path, fmt), np.arange(24.0).reshape(4, 6))
        assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    calls.clear()
    with pytest.raises(RuntimeError, match="device lost"):
        write(tmp_path / "sub" / f"new.{fmt}", x)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # (nor the folder made for it)
    monkeypatch.undo()
    write(path, x, overwrite=True)
    assert np.array_equal(_on_disk(path, fmt), np.ones((4, 6)))
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_overwriting_an_hdf5_dataset_again_and_again_does_not_grow_the_file(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.ones((64, 64)), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    path = sa.io.write_hdf5(tmp_path / "x.h5", x)
    size = path.stat().st_size
    for k in range(3):
        sa.io.write_hdf5(path, x * float(k), overwrite=True)
    assert path.stat().st_size == size


@pytest.mark.parametrize("fmt", ["npy", "zarr", "hdf5"])
def test_dtype_and_shape_checks_of_the_readers(tmp_path, fmt):
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = np.arange(24.0).reshape(4, 6).astype(">f8")
    path = tmp_path / f"x.{fmt}"
    if fmt == "npy":
        np.save(path, value)
    elif fmt == "zarr":
        z = zarr.create_array(store=path, shape=value.shape, dtype="float64")
        z[...] = value
    else:
        with h5py.File(path, "w") as f:
            f["x"] = value
    read = {"npy": sa.io.read_npy, "zarr": sa.io.read_zarr, "hdf5": sa.io.read_hdf5}[fmt]
    # dtype='>f8' (the file's own dtype) was refused: "holds an array of dtype float64, not the dtype=float64"
    for dtype in (">f8", "<f8", np.float64, value.dtype):
        x = read(path, mesh, dtype=dtype, shape=(4, 6))
        assert x.dtype == np.float64 and np.array_equal(x.numpy(), value)
    with pytest.raises(sa.DTypeError, match=r"holds an array of dtype float64 .* not the dtype=float32 expected"):
        read(path, mesh, dtype=">f4")
    # shape=(4.0, 6) was taken for (4, 6); np.zeros((4.0, 6)) refuses it
    for bad in ((4.0, 6), (True, 6), "46"):
        with pytest.raises(sa.DimensionError, match=r"is not a shape; give a tuple of ints"):
            read(path, mesh, shape=bad)


def test_a_record_dtype_is_named_as_such_not_as_bfloat16(tmp_path):
    path = _npy(tmp_path, np.zeros(3, dtype=[("a", "<i2")]))
    # was "dtype '|V2' (np.save, h5py and sa.io store bfloat16 this way: pass dtype='bfloat16')"
    with pytest.raises(sa.DTypeError, match=r"dtype \[\('a', '<i2'\)\], which shardarray does not support") as e:
        sa.io.read_npy(path, sa.Mesh({"row": 2, "col": 2}))
    assert "bfloat16 this way" not in str(e.value)


@pytest.mark.parametrize("fmt", ["npy", "zarr"])
def test_writing_through_a_symbolic_link_replaces_what_it_points_to(tmp_path, fmt):
    mesh = sa.Mesh({"row": 2, "col": 2})
    write = {"npy": sa.io.write_npy, "zarr": sa.io.write_zarr}[fmt]
    read = {"npy": sa.io.read_npy, "zarr": sa.io.read_zarr}[fmt]
    (tmp_path / "data").mkdir()
    target, link = tmp_path / "data" / f"x.{fmt}", tmp_path / f"link.{fmt}"
    write(target, sa.asarray(np.zeros((4, 3)), dims=("a", "b"), mesh=mesh))
    link.symlink_to(target)
    write(link, sa.asarray(np.ones((4, 3)), dims=("a", "b"), mesh=mesh), overwrite=True)  # as np.save(link, ...)
    assert link.is_symlink() and link.resolve() == target
    assert np.array_equal(read(target, mesh).numpy(), np.ones((4, 3)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", link.name]
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [target.name]


def test_write_zarr_chunks_by_axis_number_as_the_readers_layouts(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = xp.asarray(sa.asarray(np.arange(24.0).reshape(4, 6), dims=("dim0", "dim1"), mesh=mesh, layout={"dim0": "row"}))
    # {0: 2} was refused: "chunks={0: 2} names [0], not dims of the array"; read_zarr(path, mesh, {0: "row"}) works
    assert sa.io.write_zarr(tmp_path / "a.zarr", x, {0: 1}).chunks == (1, 6)
    assert sa.io.write_zarr(tmp_path / "b.zarr", x, {-1: 3}).chunks == (2, 3)
    for bad in ({0: 1, "dim0": 1}, {2: 1}, {True: 1}, {"zz": 1}):
        with pytest.raises(sa.DimensionError, match=r"chunks=.* names"):
            sa.io.write_zarr(tmp_path / "c.zarr", x, bad)
    assert not (tmp_path / "c.zarr").exists()
