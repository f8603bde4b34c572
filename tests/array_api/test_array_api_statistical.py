"""shardarray.array_api: statistical, utility, searching and main-namespace linear algebra, against NumPy."""

import numpy as np
import pytest

import shardarray as sa
from shardarray.array_api import _linalg as la
from shardarray.array_api import _statistical as st
from shardarray.array_api._array import Array, wrap
from shardarray.errors import DimensionError, DTypeError

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request):
    return sa.Mesh(request.param)


def arr(mesh, a):
    """``a`` as the namespace makes arrays: dims dim0, dim1, ...; axis k over mesh axis k."""
    a = np.asarray(a)
    names = tuple(f"dim{i}" for i in range(a.ndim))
    axes = list(mesh.axis_names)
    return wrap(sa.asarray(a, dims=names, mesh=mesh, layout={n: axes[i] for i, n in enumerate(names[: len(axes)])}))


RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3, 4))


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "count_nonzero"])
def test_reductions_match_numpy(mesh, name, axis, keepdims):
    a = X if name not in ("all", "any", "count_nonzero") else (X > 0.3)
    out = getattr(st, name)(arr(mesh, a), axis=axis, keepdims=keepdims)
    ref = np.count_nonzero(a, axis=axis, keepdims=keepdims) if name == "count_nonzero" else \
        getattr(np, name)(a, axis=axis, keepdims=keepdims)
    assert isinstance(out, Array)
    assert out.shape == np.shape(ref)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_keepdims_keeps_names(mesh):
    x = arr(mesh, X)
    assert st.sum(x, axis=(0, 2), keepdims=True).dims == x.dims
    assert st.argmax(x, axis=1, keepdims=True).dims == x.dims


def test_correction(mesh):
    x = arr(mesh, X)
    np.testing.assert_allclose(st.var(x, axis=0, correction=1).numpy(), np.var(X, axis=0, ddof=1))
    np.testing.assert_allclose(st.std(x, axis=(1, 2), correction=2.5).numpy(), np.std(X, axis=(1, 2), ddof=2.5))


@pytest.mark.parametrize("dtype,expected", [("int8", "int64"), ("uint8", "uint64"), ("int64", "int64"),
                                            ("float32", "float32"), ("complex64", "complex64"), ("bool", "int64")])
def test_sum_prod_default_accumulator(mesh, dtype, expected):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    for name in ("sum", "prod"):
        out = getattr(st, name)(arr(mesh, a), axis=1)
        assert out.dtype == np.dtype(expected), name
        np.testing.assert_array_equal(out.numpy(), getattr(np, name)(a, axis=1, dtype=expected))


def test_sum_prod_dtype_argument(mesh):
    a = np.arange(1, 13, dtype=np.int8).reshape(3, 4)
    out = st.sum(arr(mesh, a), axis=0, dtype="int16")
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out.numpy(), a.sum(axis=0, dtype=np.int16))
    out = st.prod(arr(mesh, a.astype(np.float32)), dtype="float64")
    assert out.dtype == np.float64 and out.shape == ()
    assert float(out.numpy()) == pytest.approx(float(np.prod(a.astype(np.float64))))
    assert st.sum(arr(mesh, np.array(3, dtype=np.int8))).dtype == np.int64  # 0-D: no axes, still the accumulator


def test_empty_reductions(mesh):
    e = arr(mesh, np.zeros((0, 3)))
    np.testing.assert_array_equal(st.sum(e, axis=0).numpy(), np.zeros(3))
    np.testing.assert_array_equal(st.prod(e, axis=0).numpy(), np.ones(3))
    assert np.isnan(st.mean(e).numpy())
    assert st.sum(e, axis=1).shape == (0,)
    assert st.all(e).numpy() and not st.any(e).numpy()
    assert st.count_nonzero(e).numpy() == 0
    with pytest.raises(DimensionError, match="empty"):
        st.max(e, axis=0)
    with pytest.raises(DimensionError, match="empty"):
        st.argmin(e)
    assert st.max(e, axis=1).shape == (0,)  # reducing a non-empty axis of an empty array is fine


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5), (1, 1), (4, 1, 3)])
@pytest.mark.parametrize("dtype", ["float64", "int16", "bool", "uint8"])
def test_argmax_argmin(mesh, shape, dtype):
    a = RNG.integers(0, 3, shape).astype(dtype)
    if dtype == "float64" and a.size > 2:
        a.flat[2] = a.flat[-1] = np.nan
    for name in ("argmax", "argmin"):
        fn, ref = getattr(st, name), getattr(np, name)
        for axis in [None, *range(-len(shape), len(shape))]:
            for keepdims in (False, True):
                out = fn(arr(mesh, a), axis=axis, keepdims=keepdims)
                expected = ref(a, axis=axis, keepdims=keepdims)
                assert out.dtype == np.int64 and out.shape == np.shape(expected)
                np.testing.assert_array_equal(out.numpy(), expected)


def test_argmax_flat_moves_no_data():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = RNG.standard_normal((6, 10))
    with sa.comm_log() as log:
        out = st.argmax(arr(mesh, a))
    assert int(out.numpy()) == np.argmax(a)
    assert {r.op for r in log.records} == {"allreduce"}


def test_argmax_0d_and_errors(mesh):
    assert int(st.argmax(arr(mesh, np.array(4.0))).numpy()) == 0
    c = np.array([[1, 2 - 1j, 2 + 1j], [2 + 1j, 0, 2]], dtype=complex)  # (NumPy's lexicographic order, first extreme)
    assert int(st.argmax(arr(mesh, c)).numpy()) == np.argmax(c) == 2
    with pytest.raises(DimensionError):
        st.sum(arr(mesh, X), axis=3)
    with pytest.raises(DimensionError):
        st.sum(arr(mesh, X), axis=(0, 0))


@pytest.mark.parametrize("s1,s2", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 4, 2)), ((3, 0), (0, 2)),
                                   ((2, 3, 4), (4,)), ((5,), (2, 5, 3)), ((1, 1), (1, 1))])
def test_matmul(mesh, s1, s2):
    a, b = RNG.standard_normal(s1), RNG.standard_normal(s2)
    out = la.matmul(arr(mesh, a), arr(mesh, b))
    assert isinstance(out, Array) and out.shape == (a @ b).shape
    np.testing.assert_allclose(out.numpy(), a @ b, atol=1e-12)
    np.testing.assert_allclose((arr(mesh, a) @ arr(mesh, b)).numpy(), a @ b, atol=1e-12)


def test_matmul_dtypes_and_errors(mesh):
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    b = np.arange(6, dtype=np.int16).reshape(3, 2)
    out = la.matmul(arr(mesh, a), arr(mesh, b))
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out.numpy(), a @ b)
    c = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    np.testing.assert_allclose(la.matmul(arr(mesh, c), arr(mesh, c.T)).numpy(), c @ c.T)
    with pytest.raises(DimensionError, match="contracted"):
        la.matmul(arr(mesh, np.ones((2, 3))), arr(mesh, np.ones((2, 3))))
    with pytest.raises(DimensionError, match="broadcast"):
        la.matmul(arr(mesh, np.ones((2, 2, 3))), arr(mesh, np.ones((3, 3, 2))))
    with pytest.raises(DimensionError):
        la.matmul(arr(mesh, np.array(1.0)), arr(mesh, np.ones(3)))
    b = la.matmul(arr(mesh, np.ones((2, 2), bool)), arr(mesh, np.ones((2, 2), bool)))  # (NumPy's: the or of ands)
    assert b.dtype == np.bool_ and b.numpy().all()


def test_matrix_transpose(mesh):
    a = RNG.standard_normal((2, 3, 4))
    out = la.matrix_transpose(arr(mesh, a))
    np.testing.assert_array_equal(out.numpy(), np.swapaxes(a, -1, -2))
    with pytest.raises(DimensionError):
        la.matrix_transpose(arr(mesh, np.ones(3)))


@pytest.mark.parametrize("axes,s2", [(2, (4, 5, 2)), (1, (5, 2)), (0, (2, 3)), (([1], [0]), (4, 2)),
                                     (((0, 2), (1, 0)), (5, 3, 2)), (([-1], [-1]), (2, 5))])
def test_tensordot(mesh, axes, s2):
    a, b = RNG.standard_normal((3, 4, 5)), RNG.standard_normal(s2)
    out = la.tensordot(arr(mesh, a), arr(mesh, b), axes=axes)
    np.testing.assert_allclose(out.numpy(), np.tensordot(a, b, axes=axes), atol=1e-12)
    with pytest.raises(DimensionError):
        la.tensordot(arr(mesh, a), arr(mesh, RNG.standard_normal((3, 3))), axes=1)


@pytest.mark.parametrize("s1,s2,axis", [((3, 4), (4,), -1), ((2, 3, 4), (3, 4), -2), ((5,), (5,), -1),
                                        ((1, 4), (3, 4), -1), ((2, 1, 3), (4, 3), -1)])
def test_vecdot(mesh, s1, s2, axis):
    a = RNG.standard_normal(s1) + 1j * RNG.standard_normal(s1)
    b = RNG.standard_normal(s2) + 1j * RNG.standard_normal(s2)
    out = la.vecdot(arr(mesh, a), arr(mesh, b), axis=axis)
    np.testing.assert_allclose(out.numpy(), np.vecdot(a, b, axis=axis), atol=1e-12)
    r = la.vecdot(arr(mesh, a.real), arr(mesh, b.real), axis=axis)
    np.testing.assert_allclose(r.numpy(), np.vecdot(a.real, b.real, axis=axis), atol=1e-12)


def test_vecdot_errors(mesh):
    with pytest.raises(DimensionError, match="does not broadcast"):
        la.vecdot(arr(mesh, np.ones((2, 3))), arr(mesh, np.ones((2, 1))))
    with pytest.raises(DimensionError):
        la.vecdot(arr(mesh, np.ones((2, 3))), arr(mesh, np.ones(3)), axis=-2)


def test_count_nonzero_dtypes(mesh):
    c = np.array([[0, 1j, 0], [2 + 0j, 0, np.nan]], dtype=np.complex128)
    out = st.count_nonzero(arr(mesh, c), axis=1)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), np.count_nonzero(c, axis=1))
    assert int(st.count_nonzero(arr(mesh, np.array(3.0))).numpy()) == 1
