"""shardarray.array_api creation functions, dtypes and the inspection object, against NumPy on split meshes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import host, is_shard

import shardarray as sa
import shardarray.array_api as xp
from shardarray.errors import ArgumentError, DimensionError, DTypeError, MeshError
from shardarray.layout import block_slices

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m):
        yield m


def check(a, expected, dtype=None):
    """``a`` is an Array equal to ``expected``, laid out axis k over mesh axis k, and each block is its slice."""
    expected = np.asarray(expected)
    assert isinstance(a, xp.Array)
    assert a.shape == expected.shape
    assert a.dtype == (expected.dtype if dtype is None else np.dtype(dtype))
    assert a.dims == tuple(f"dim{k}" for k in range(a.ndim))
    assert a.layout == {f"dim{k}": (ax,) for k, ax in zip(range(a.ndim), a.mesh.axis_names)}
    for shard, idx in zip(a.shards, block_slices(a.mesh, a.spec)):
        assert is_shard(shard, a.mesh)  # a NumPy array on NumPy meshes, a CuPy array on CuPy ones
        np.testing.assert_array_equal(host(shard), expected[idx])


# ---------------------------------------------------------------- asarray
@pytest.mark.parametrize("obj", [
    [[1, 2, 3], [4, 5, 6]], [[1.5], [2.5], [3.5]], [True, False, True], 3, 2.5, True, 1j, [],
    np.arange(35.0).reshape(7, 5), np.zeros((0, 3), np.int8), np.arange(24, dtype=np.uint16).reshape(2, 3, 4),
])
def test_asarray_host(mesh, obj):
    check(xp.asarray(obj), np.asarray(obj))


def test_asarray_dtype_and_copy(mesh):
    check(xp.asarray([1, 2, 3], dtype=xp.float32), np.array([1, 2, 3], np.float32))
    check(xp.asarray(5, dtype="uint64"), np.uint64(5))
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    host = np.arange(6.0)
    a = xp.asarray(host, copy=True)
    host[0] = 99.0
    assert a.numpy()[0] == 0.0


def test_asarray_of_arrays_keeps_dims_and_layout(mesh):
    named = sa.asarray(np.arange(12.0).reshape(3, 4), dims=("b", "f"), mesh=mesh, layout={"f": mesh.axis_names[0]})
    a = xp.asarray(named)
    assert isinstance(a, xp.Array) and a.dims == ("b", "f") and a.layout == named.layout
    assert xp.asarray(a) is a and xp.asarray(a, copy=False) is a
    c = xp.asarray(a, copy=True)
    a[0, 0] = -1.0
    assert c.numpy()[0, 0] == 0.0 and a.numpy()[0, 0] == -1.0
    assert xp.asarray(a, dtype=xp.int32).dtype == xp.int32
    with pytest.raises(ValueError, match="copy"):
        xp.asarray(a, dtype=xp.int32, copy=False)
    other = sa.Mesh({"other": 3})
    moved = xp.asarray(a, device=other)  # another mesh: moved there by sa.reshard (the default split)
    assert moved.mesh is other and moved.dims == a.dims and moved.layout == {a.dims[0]: ("other",)}
    np.testing.assert_array_equal(moved.numpy(), a.numpy())
    with pytest.raises(ValueError, match="copy"):  # the standard: copy=False raises where a copy is needed
        xp.asarray(a, device=other, copy=False)


def test_from_dlpack(mesh):
    host = np.arange(10, dtype=np.int32)
    check(xp.from_dlpack(host), host)
    a = xp.asarray([1.0, 2.0])
    assert xp.from_dlpack(a) is a


# ---------------------------------------------------------------- ranges
@pytest.mark.parametrize("args,kw", [
    ((10,), {}), ((1, 10, 2), {}), ((10, 1, -3), {}), ((5, 5), {}), ((0.5, 3.0), {}), ((0, 1, 0.1), {}),
    ((7,), {"dtype": "float32"}), ((2, 13), {"dtype": "uint8"}), ((-1.5, -10.0, -1.25), {}), ((3,), {"dtype": "int16"}),
])
def test_arange(mesh, args, kw):
    check(xp.arange(*args, **kw), np.arange(*args, **kw))


def test_arange_large_uint64(mesh):
    start = 2**63 + 5
    a = xp.arange(start, start + 40, 7, dtype=xp.uint64)
    check(a, np.array(range(start, start + 40, 7), dtype=np.uint64))


@pytest.mark.parametrize("start,stop,num,endpoint", [
    (0.0, 1.0, 5, True), (0.0, 1.0, 5, False), (-3.0, 7.0, 11, True), (2.0, 2.0, 4, True), (1.0, 5.0, 1, True),
    (1.0, 5.0, 0, True), (0.0, 1.0, 13, False), (1 + 1j, 3 - 2j, 7, True),
])
def test_linspace(mesh, start, stop, num, endpoint):
    a = xp.linspace(start, stop, num, endpoint=endpoint)
    check(a, np.linspace(start, stop, num, endpoint=endpoint))
    if endpoint and num > 1:
        assert a.numpy()[-1] == stop


def test_linspace_float32(mesh):
    check(xp.linspace(0, 1, 7, dtype=xp.float32), np.linspace(0, 1, 7).astype(np.float32))


@pytest.mark.parametrize("n,m,k", [(5, None, 0), (5, 7, 2), (6, 3, -1), (4, 4, 10), (0, 3, 0), (3, 5, -2**70)])
def test_eye(mesh, n, m, k):
    check(xp.eye(n, m, k=k), np.eye(n, m, k=k if abs(k) < 100 else 100))
    check(xp.eye(n, m, k=k, dtype=xp.int8), np.eye(n, m, k=k if abs(k) < 100 else 100, dtype=np.int8))


@pytest.mark.parametrize("shape", [(4, 5), (3, 5, 7), (2, 0, 3), (1, 6)])
@pytest.mark.parametrize("k", [0, 1, -2, 9, -9])
def test_tril_triu(mesh, shape, k):
    host = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1
    a = xp.asarray(host)
    check(xp.tril(a, k=k), np.tril(host, k=k))
    check(xp.triu(a, k=k), np.triu(host, k=k))


def test_tril_keeps_nans_and_layout(mesh):
    named = sa.asarray(np.full((4, 6), np.nan), dims=("r", "c"), mesh=mesh, layout={"c": mesh.axis_names[-1]})
    out = xp.tril(named)
    assert out.dims == ("r", "c") and out.layout == named.layout
    np.testing.assert_array_equal(out.numpy(), np.tril(np.full((4, 6), np.nan)))
    with pytest.raises(DimensionError, match="at least 2"):
        xp.triu(xp.arange(3))


# ---------------------------------------------------------------- filled arrays
@pytest.mark.parametrize("shape", [(), 5, (3, 4), (2, 0, 5), (7, 1, 3)])
def test_full_family(mesh, shape):
    check(xp.zeros(shape), np.zeros(shape))
    check(xp.ones(shape, dtype=xp.int8), np.ones(shape, np.int8))
    assert xp.empty(shape).shape == np.empty(shape).shape and xp.empty(shape).dtype == xp.float64
    check(xp.full(shape, 7), np.full(shape, 7, np.int64))
    check(xp.full(shape, 2.5), np.full(shape, 2.5))
    check(xp.full(shape, True), np.full(shape, True))
    check(xp.full(shape, 1 - 2j), np.full(shape, 1 - 2j))
    check(xp.full(shape, 3, dtype=xp.uint32), np.full(shape, 3, np.uint32))


def test_like_keeps_mesh_dims_layout(mesh):
    named = sa.asarray(np.arange(12).reshape(3, 4), dims=("b", "f"), mesh=mesh, layout={"f": mesh.axis_names[0]})
    for fn, value in [(xp.zeros_like, 0), (xp.ones_like, 1), (xp.empty_like, None)]:
        out = fn(named)
        assert out.dims == ("b", "f") and out.layout == named.layout and out.dtype == named.dtype
        if value is not None:
            np.testing.assert_array_equal(out.numpy(), np.full((3, 4), value))
    out = xp.full_like(named, 2.5, dtype=xp.float32)
    assert out.dtype == xp.float32 and out.layout == named.layout
    np.testing.assert_array_equal(out.numpy(), np.full((3, 4), 2.5, np.float32))


def test_shape_errors(mesh):
    with pytest.raises(DimensionError, match="negative"):
        xp.zeros((2, -1))
    with pytest.raises(DimensionError):
        xp.ones((2, 1.5))
    with pytest.raises(MeshError, match="device"):
        xp.zeros(3, device="cpu")


# ---------------------------------------------------------------- meshgrid
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sizes", [(3,), (3, 4), (2, 0, 5), (4, 1, 3)])
def test_meshgrid(mesh, sizes, indexing):
    hosts = [np.arange(n) * (i + 1) for i, n in enumerate(sizes)]
    outs = xp.meshgrid(*[xp.asarray(h) for h in hosts], indexing=indexing)
    assert isinstance(outs, list)
    for o, e in zip(outs, np.meshgrid(*hosts, indexing=indexing)):
        check(o, e)


def test_meshgrid_errors(mesh):
    with pytest.raises(DimensionError, match="1-D"):
        xp.meshgrid(xp.zeros((2, 2)))
    with pytest.raises(ArgumentError, match="indexing"):
        xp.meshgrid(xp.zeros(2), indexing="yx")


# ---------------------------------------------------------------- dtypes
ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128"]


def test_dtype_objects(mesh):
    for name in ALL:
        d = getattr(xp, name)
        assert d == np.dtype(name) and xp.asarray([0], dtype=d).dtype == d and d != None


@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("b", ALL)
def test_result_type_and_can_cast(a, b):
    ka, kb = np.dtype(a).kind, np.dtype(b).kind
    same_kind = (ka == kb == "b") or (ka in "iu" and kb in "iu") or (ka in "fc" and kb in "fc")
    signed_with_uint64 = "uint64" in (a, b) and "i" in (ka, kb)  # not in the standard's table
    if same_kind and not signed_with_uint64:
        assert xp.result_type(a, b) == np.result_type(a, b)
        assert xp.result_type(b, a) == xp.result_type(a, b)
    expected = np.result_type(a, b) == np.dtype(b) and same_kind
    assert xp.can_cast(getattr(xp, a), getattr(xp, b)) == expected


def test_result_type_table():
    pairs = {("int8", "uint8"): "int16", ("int32", "uint32"): "int64", ("int64", "uint16"): "int64",
             ("uint8", "uint64"): "uint64", ("float32", "complex64"): "complex64",
             ("float64", "complex64"): "complex128", ("float32", "float64"): "float64", ("bool", "bool"): "bool"}
    for (a, b), r in pairs.items():
        assert xp.result_type(getattr(xp, a), getattr(xp, b)) == np.dtype(r)
    assert xp.result_type(xp.int8, xp.int16, xp.uint8) == xp.int16


def test_result_type_scalars(mesh):
    assert xp.result_type(xp.int8, 1) == xp.int8
    assert xp.result_type(xp.float32, 1.0, 1) == xp.float32
    assert xp.result_type(xp.float32, 1j) == xp.complex64
    assert xp.result_type(xp.bool, True) == xp.bool
    assert xp.result_type(xp.asarray([1], dtype=xp.uint8), xp.int8) == xp.int16
    # Python scalars alone: NumPy's answer, the default dtype of their highest kind (SciPy's signal._logspace)
    for scalars in [(1, 2.0), (-2, 1, 10.0), (1,), (True,), (True, 2), (1, 2j, 3.0)]:
        assert xp.result_type(*scalars) == np.result_type(*scalars), scalars
    with pytest.raises(DTypeError, match="at least one"):
        xp.result_type()


def test_finfo_iinfo(mesh):
    f = xp.finfo(xp.complex64)
    assert f.bits == 32 and f.dtype == xp.float32 and isinstance(f.eps, float) and f.max == float(np.finfo("f4").max)
    assert xp.finfo(xp.asarray(1.0)).smallest_normal == float(np.finfo("f8").smallest_normal)
    i = xp.iinfo(xp.uint16)
    assert (i.bits, i.min, i.max, i.dtype) == (16, 0, 65535, np.dtype("uint16"))
    with pytest.raises(DTypeError):
        xp.finfo(xp.int8)
    with pytest.raises(DTypeError):
        xp.iinfo(xp.float32)


def test_isdtype():
    assert xp.isdtype(xp.uint8, "integral") and xp.isdtype(xp.int8, "signed integer")
    assert not xp.isdtype(xp.uint8, "signed integer") and xp.isdtype(xp.complex64, "numeric")
    assert not xp.isdtype(xp.bool, "numeric") and xp.isdtype(xp.float32, ("bool", xp.float32))
    assert xp.isdtype(xp.float64, "real floating") and not xp.isdtype(xp.float64, "complex floating")
    with pytest.raises(ArgumentError, match="unknown kind"):
        xp.isdtype(xp.float32, "floating")


def test_astype(mesh):
    a = xp.asarray([[1.5, -2.5], [3.0, 4.0]])
    b = xp.astype(a, xp.int32)
    assert b.dtype == xp.int32 and b.dims == a.dims and b.layout == a.layout
    np.testing.assert_array_equal(b.numpy(), np.array([[1, -2], [3, 4]]))
    assert xp.astype(a, xp.float64, copy=False) is a
    c = xp.astype(a, xp.float64)
    a[0, 0] = 9.0
    assert c is not a and c.numpy()[0, 0] == 1.5
    with pytest.raises(DTypeError, match="imaginary"):
        xp.astype(xp.asarray([1j]), xp.float64)
    other = sa.Mesh({"other": 3})
    d = xp.astype(a, xp.float32, device=other)  # another mesh: moved there (sa.reshard), then cast
    assert d.mesh is other and d.dtype == xp.float32 and d.layout == {"dim0": ("other",)}
    np.testing.assert_array_equal(d.numpy(), a.numpy().astype(np.float32))
    with pytest.raises(MeshError, match="sa.Mesh"):
        xp.astype(a, xp.float32, device="cpu")


def test_to_device_moves_between_meshes_without_the_host(mesh):
    """``x.to_device(other_mesh)`` is ``sa.reshard`` to the namespace's default split there (the array API's
    copy to another device), differentiable; refused only for what is not a mesh."""
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=mesh)
    other = sa.Mesh({"p": 3, "q": 2})
    y = x.to_device(other)
    assert isinstance(y, xp.Array) and y.mesh is other and y.layout == {"dim0": ("p",), "dim1": ("q",)}
    np.testing.assert_array_equal(y.numpy(), a)
    assert x.to_device(mesh) is x
    g = sa.grad(lambda p: xp.sum(p.to_device(other) ** 2))(x)
    assert isinstance(g, xp.Array) and g.mesh is mesh
    np.testing.assert_allclose(g.numpy(), 2 * a)
    with pytest.raises(MeshError, match="sa.Mesh"):
        x.to_device("cpu")


def test_info(mesh):
    info = xp.__array_namespace_info__()
    assert info.default_device() is mesh and info.devices() == [mesh]
    assert info.default_dtypes()["real floating"] == xp.float64 and info.default_dtypes()["indexing"] == xp.int64
    assert set(info.dtypes()) == set(ALL)
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64", "complex128"}
    assert info.capabilities()["max dimensions"] > 0
