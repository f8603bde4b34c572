"""The namespace's shape, sorting and construction extras (rot90, delete, insert, ediff1d, resize, trim_zeros, vander,
select, unwrap, trapezoid, lexsort, partition, argpartition, linalg.cond) against NumPy on every test mesh, uneven
and empty sizes, several dtypes, NaN and inf; no gather; typed errors; NumPy's protocol sends ``np.<func>`` here."""

import warnings

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
MESHES = [*MESH_SHAPES, {"p": 3, "q": 2}]
IDS = ["x".join(str(v) for v in m.values()) for m in MESHES]
DTYPES = ("float64", "float32", "int64", "int32")


@pytest.fixture(params=MESHES, ids=IDS)
def mesh(request):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m), warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        yield m


def _same(got, expected, exact=True, rtol=1e-12):
    assert type(got) is xp.Array, type(got)
    g = got.numpy()
    e = np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    if exact:
        np.testing.assert_array_equal(g, e)
    else:
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol)


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) * 4).astype(dtype)


def _no_gather(log):
    assert not [r for r in log.records if r.op == "allgather"], log.records


def test_rot90(mesh):
    for shape in ((5, 3), (3, 4, 2), (0, 3)):
        a = _data(shape, "float64")
        x = xp.asarray(a, device=mesh)
        for k in (-1, 0, 1, 2, 3, 5):
            for axes in ((0, 1), (1, 0), (-1, 0)):
                _same(xp.rot90(x, k, axes), np.rot90(a, k, axes))
    a = _data((5, 3), "int32")
    _same(np.rot90(xp.asarray(a, device=mesh)), np.rot90(a))
    x = xp.asarray(a, device=mesh)
    with pytest.raises(sa.DimensionError):
        xp.rot90(x, 1, (0, 0))
    with pytest.raises(sa.ArgumentError):
        xp.rot90(x, 1, (0, 1, 2))
    with pytest.raises(sa.DimensionError):
        xp.rot90(xp.asarray([1.0, 2.0], device=mesh))


def test_delete_and_insert(mesh):
    for shape in ((7, 3), (5,), (2, 5)):
        for dtype in ("float64", "int32"):
            a = _data(shape, dtype)
            x = xp.asarray(a, device=mesh)
            axes = [None, *range(a.ndim), -1]
            for axis in axes:
                n = a.size if axis is None else a.shape[axis]
                objs = [0, -1, slice(1, None, 2), [0, n - 1], [], np.arange(n) % 2 == 0, [1, 1, -1]]
                for obj in objs:
                    _same(xp.delete(x, obj, axis), np.delete(a, obj, axis))
                for obj, vals in ((1, 9), (0, [7, 8]), (n, 5.5), ([1], [[3]]), ([2, 0, 2], [1, 2, 3]),
                                  (slice(0, 2), -1), ([-1], 4), ([], 1)):
                    try:
                        want = np.insert(a, obj, vals, axis)
                    except ValueError:
                        with pytest.raises(ValueError):
                            xp.insert(x, obj, vals, axis)
                        continue
                    _same(xp.insert(x, obj, vals, axis), want)
    a = _data((5, 3), "float64")
    x = xp.asarray(a, device=mesh)
    with sa.comm_log() as log:
        _same(np.delete(x, [1, 2], axis=0), np.delete(a, [1, 2], axis=0))
        _same(np.insert(x, 2, xp.asarray([1.0, 2.0, 3.0], device=mesh), axis=0),
              np.insert(a, 2, [1.0, 2.0, 3.0], axis=0))
    _no_gather(log)
    with pytest.raises(sa.DimensionError):
        xp.delete(x, 9, axis=0)
    with pytest.raises(sa.DimensionError):
        xp.insert(x, 9, 1.0, axis=0)
    with pytest.raises(sa.DimensionError):
        xp.delete(x, [True, False], axis=0)
    with pytest.raises(sa.ArgumentError):
        xp.delete(x, xp.asarray([1], device=mesh), axis=0)
    with pytest.raises(sa.DTypeError):
        xp.delete(x, [0.5], axis=0)
    with pytest.raises(sa.DimensionError):
        xp.delete(x, 0, axis=2)


def test_ediff1d(mesh):
    for n in (0, 1, 2, 7):
        for dtype in DTYPES:
            a = _data((n,), dtype)
            x = xp.asarray(a, device=mesh)
            _same(xp.ediff1d(x), np.ediff1d(a))
            _same(xp.ediff1d(x, to_end=[1, 2], to_begin=-3), np.ediff1d(a, to_end=[1, 2], to_begin=-3))
    a = np.array([[1.0, np.inf], [np.nan, 2.0]])
    _same(np.ediff1d(xp.asarray(a, device=mesh)), np.ediff1d(a))
    with pytest.raises(sa.DTypeError):
        xp.ediff1d(xp.asarray([1, 2], device=mesh), to_begin=0.5)
    with pytest.raises(sa.DTypeError):
        xp.ediff1d(xp.asarray([True, False], device=mesh))


def test_resize(mesh):
    for shape in ((5, 3), (7,), (0,)):
        for dtype in ("float64", "int32", "bool"):
            a = _data(shape, "float64").astype(dtype)
            x = xp.asarray(a, device=mesh)
            for new in (4, (2, 7), (3, 5), (0, 3), (16,), 1):
                _same(xp.resize(x, new), np.resize(a, new))
    with pytest.raises(sa.ArgumentError):
        xp.resize(xp.asarray([1.0], device=mesh), (-1, 2))


def test_trim_zeros(mesh):
    cases = [[0, 0, 1, 2, 0, 3, 0, 0], [1, 0, 2], [0, 0, 0], [], [0, 0, 5]]
    for c in cases:
        for dtype in ("float64", "int32"):
            a = np.array(c, dtype=dtype)
            x = xp.asarray(a, device=mesh)
            for trim in ("fb", "f", "b", "BF"):
                _same(xp.trim_zeros(x, trim), np.trim_zeros(a, trim))
    a = np.zeros((5, 6))
    a[1:3, 2:5] = 1.0
    x = xp.asarray(a, device=mesh)
    for axis in (None, 0, 1, -1):
        _same(np.trim_zeros(x, axis=axis), np.trim_zeros(a, axis=axis))
    _same(xp.trim_zeros(xp.asarray([0.0, np.nan, 0.0], device=mesh)), np.trim_zeros(np.array([0.0, np.nan, 0.0])))
    with pytest.raises(sa.ArgumentError):
        xp.trim_zeros(x, "x")


def test_vander(mesh):
    for n in (0, 1, 5):
        for dtype in (*DTYPES, "bool"):
            a = _data((n,), "float64").astype(dtype) if dtype != "bool" else np.arange(n) % 2 == 0
            x = xp.asarray(a, device=mesh)
            for N in (None, 0, 1, 4):
                for inc in (False, True):
                    _same(xp.vander(x, N, inc), np.vander(a, N, inc), exact=dtype not in ("float64", "float32"),
                          rtol=1e-12)
    _same(np.vander(xp.asarray([np.inf, 0.0], device=mesh)), np.vander(np.array([np.inf, 0.0])))
    with pytest.raises(sa.DimensionError):
        xp.vander(xp.asarray([[1.0]], device=mesh))
    with pytest.raises(sa.ArgumentError):
        xp.vander(xp.asarray([1.0], device=mesh), -1)


def test_select(mesh):
    for shape in ((5, 3), (7,), (0,)):
        for dtype in DTYPES:
            a = _data(shape, dtype)
            x = xp.asarray(a, device=mesh)
            conds, xc = [a < 0, a > 2], [x < 0, x > 2]
            _same(xp.select(xc, [x, x * 2]), np.select(conds, [a, a * 2]))
            _same(np.select(xc, [x, 1.5], default=np.nan), np.select(conds, [a, 1.5], default=np.nan))
    a = _data((5, 3), "float32")
    x = xp.asarray(a, device=mesh)
    _same(xp.select([x > 0], [x], default=xp.asarray(a[0], device=mesh)), np.select([a > 0], [a], default=a[0]))
    with pytest.raises(sa.DTypeError):
        xp.select([x], [x])
    with pytest.raises(sa.ArgumentError):
        xp.select([x > 0], [])
    with pytest.raises(sa.ArgumentError):
        xp.select([], [])


def test_unwrap(mesh):
    rng = np.random.default_rng(3)
    for shape in ((9,), (5, 7), (1,), (0,)):
        a = np.cumsum(rng.uniform(-4, 4, shape), axis=-1)
        for dtype in ("float64", "float32"):
            b = a.astype(dtype)
            x = xp.asarray(b, device=mesh)
            for axis in range(b.ndim):
                for kw in ({}, {"discont": 4.0}, {"period": 5.0}, {"period": 360}):
                    _same(xp.unwrap(x, axis=axis, **kw), np.unwrap(b, axis=axis, **kw), exact=False,
                          rtol=1e-5 if dtype == "float32" else 1e-12)
    b = np.array([0, 250, 500, 10, 700], dtype=np.int64)
    _same(xp.unwrap(xp.asarray(b, device=mesh), period=360), np.unwrap(b, period=360))
    b = np.array([0.0, np.nan, 7.0, np.inf])
    _same(np.unwrap(xp.asarray(b, device=mesh)), np.unwrap(b), exact=False)


def test_trapezoid(mesh):
    for shape in ((7,), (5, 3), (1, 4), (0, 3)):
        for dtype in DTYPES:
            a = _data(shape, dtype)
            y = xp.asarray(a, device=mesh)
            for axis in range(a.ndim):
                pts = np.cumsum(np.arange(1.0, a.shape[axis] + 1))
                _same(xp.trapezoid(y, axis=axis), np.trapezoid(a, axis=axis), exact=False)
                _same(xp.trapezoid(y, dx=0.5, axis=axis), np.trapezoid(a, dx=0.5, axis=axis), exact=False)
                _same(np.trapezoid(y, pts.tolist(), axis=axis), np.trapezoid(a, pts, axis=axis), exact=False)
                _same(xp.trapezoid(y, xp.asarray(pts, device=mesh), axis=axis), np.trapezoid(a, pts, axis=axis),
                      exact=False)
            full = np.cumsum(np.ones(shape), axis=-1)
            _same(xp.trapezoid(y, xp.asarray(full, device=mesh)), np.trapezoid(a, full), exact=False)
    a = np.array([1.0, np.inf, np.nan])
    _same(xp.trapezoid(xp.asarray(a, device=mesh)), np.trapezoid(a), exact=False)
    with pytest.raises(sa.DimensionError):
        xp.trapezoid(xp.asarray([1.0, 2.0], device=mesh), [1.0, 2.0, 3.0])


def test_lexsort(mesh):
    rng = np.random.default_rng(5)
    for n in (0, 1, 9):
        k1, k2 = rng.integers(0, 3, n), rng.integers(0, 3, n).astype("float64")
        k2[: n // 3] = np.nan
        k3 = rng.integers(0, 2, n).astype("int32")
        keys = [xp.asarray(k, device=mesh) for k in (k1, k2, k3)]
        _same(xp.lexsort(keys), np.lexsort((k1, k2, k3)))
        _same(np.lexsort(tuple(keys[:2])), np.lexsort((k1, k2)))
    a = rng.integers(0, 3, (3, 5, 4))
    _same(xp.lexsort(xp.asarray(a, device=mesh), axis=0), np.lexsort(a, axis=0))
    _same(xp.lexsort(xp.asarray(a, device=mesh)), np.lexsort(a))
    with pytest.raises(sa.DimensionError):
        xp.lexsort([xp.asarray([1, 2], device=mesh), xp.asarray([1, 2, 3], device=mesh)])
    with pytest.raises(sa.DTypeError):
        xp.lexsort([])
    with pytest.raises(sa.DTypeError, match="at least one key"):  # (an untyped IndexError before)
        np.lexsort(xp.zeros((0, 3), device=mesh))


def _is_partition(got, a, kth, axis):
    """Each kth entry in its sorted place, the others on the right side of it, the same entries."""
    srt = np.sort(a, axis=axis)
    np.testing.assert_array_equal(np.sort(got, axis=axis), srt)
    for k in np.atleast_1d(kth):
        kk = k % a.shape[axis]
        at = np.take(got, [kk], axis=axis)
        np.testing.assert_array_equal(at, np.take(srt, [kk], axis=axis))
        before, after = np.take(got, range(kk), axis=axis), np.take(got, range(kk + 1, a.shape[axis]), axis=axis)
        assert np.all(before <= at) and np.all(after >= at)


def test_partition_and_argpartition(mesh):
    for shape in ((9,), (5, 4), (3, 1)):
        for dtype in DTYPES:
            a = _data(shape, dtype)
            x = xp.asarray(a, device=mesh)
            for axis in range(a.ndim):
                for kth in (0, -1, [0, shape[axis] - 1]):
                    p = xp.partition(x, kth, axis=axis)
                    assert type(p) is xp.Array and p.dtype == x.dtype
                    _is_partition(p.numpy(), a, kth, axis)
                    i = np.argpartition(x, kth, axis=axis)
                    assert type(i) is xp.Array and i.dtype == xp.int64
                    _is_partition(np.take_along_axis(a, i.numpy(), axis=axis), a, kth, axis)
    a = np.array([3.0, np.nan, -np.inf, 1.0])
    _same(xp.partition(xp.asarray(a, device=mesh), 1), np.partition(a, 1))
    _same(xp.partition(xp.asarray(a, device=mesh), 1, axis=None), np.partition(a, 1, axis=None))
    with pytest.raises(sa.DimensionError):
        xp.partition(xp.asarray(a, device=mesh), 4)
    with pytest.raises(sa.DTypeError):
        xp.argpartition(xp.asarray(a, device=mesh), 1.5)


def test_cond(mesh):
    rng = np.random.default_rng(7)
    for shape in ((4, 4), (5, 3), (2, 3, 3)):
        a = rng.normal(size=shape) + 2 * np.eye(shape[-2], shape[-1])
        x = xp.asarray(a, device=mesh)
        for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
            if p not in (None, 2, -2) and shape[-1] != shape[-2]:
                with pytest.raises(sa.DimensionError):
                    xp.linalg.cond(x, p)
                continue
            with warnings.catch_warnings():  # (inv of a split matrix gathers it, warning: inherited)
                warnings.simplefilter("ignore" if p not in (None, 2, -2) else "error", sa.GatherWarning)
                _same(xp.linalg.cond(x, p), np.linalg.cond(a, p), exact=False, rtol=1e-9)
    a = np.array([[1.0, 0.0], [0.0, 0.0]])
    _same(xp.linalg.cond(xp.asarray(a, device=mesh)), np.linalg.cond(a))
    a = np.array([[1.0, np.nan], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.GatherWarning)
        _same(np.linalg.cond(xp.asarray(a, device=mesh), 1), np.asarray(np.linalg.cond(a, 1)), exact=False)
    with pytest.raises(np.linalg.LinAlgError):  # (the SVD of a matrix holding NaN)
        xp.linalg.cond(xp.asarray(a, device=mesh))
    a = np.eye(3, dtype=np.float32) * 2
    _same(xp.linalg.cond(xp.asarray(a, device=mesh)), np.asarray(np.linalg.cond(a)), exact=False, rtol=1e-6)
    with pytest.raises(np.linalg.LinAlgError):  # (NumPy: "cond is not defined on empty arrays")
        xp.linalg.cond(xp.asarray(np.zeros((0, 0)), device=mesh))
    with pytest.raises(sa.ArgumentError):
        xp.linalg.cond(xp.asarray(np.eye(2), device=mesh), 3)
