"""shardarray.array_api manipulation and indexing functions (and x[...] / x[...] = v) against NumPy."""

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.errors import ArgumentError, DimensionError

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m):
        yield m


def arr(shape, dtype=np.float64):
    data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return xp.asarray(data), data


def eq(a, b):
    assert a.shape == np.shape(b), (a.shape, np.shape(b))
    np.testing.assert_array_equal(a.numpy(), b)


@pytest.mark.parametrize("src,dst", [((24,), (4, 6)), ((4, 6), (2, 12)), ((4, 6), (6, 4)), ((4, 6), (24,)),
                                     ((2, 3, 4), (6, 4)), ((2, 3, 4), (2, 12)), ((4, 6), (1, 4, 1, 6, 1)),
                                     ((1, 5, 1), (5,)), ((5,), (-1, 1)), ((0, 3), (3, 0)), ((), (1, 1)),
                                     ((7, 3), (3, 7)), ((4, 6), (3, 8))])
def test_reshape(mesh, src, dst):
    a, n = arr(src)
    eq(xp.reshape(a, dst), n.reshape(dst))


def test_reshape_keeps_leading_split():
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        a = xp.reshape(xp.arange(24.0), (4, 6))
        with sa.comm_log() as log:
            b = xp.reshape(a, (2, 2, 6))
        assert log.records == [] and b.layout == {b.dims[0]: ("row",)}
    with pytest.raises(DimensionError):
        xp.reshape(a, (5, 5))


def test_flip_roll(mesh):
    a, n = arr((5, 4))
    eq(xp.flip(a), np.flip(n))
    eq(xp.flip(a, axis=-1), np.flip(n, -1))
    eq(xp.roll(a, 3), np.roll(n, 3))
    eq(xp.roll(a, (1, -2), axis=(0, 1)), np.roll(n, (1, -2), axis=(0, 1)))
    eq(xp.roll(a, 7, axis=0), np.roll(n, 7, axis=0))


def test_concat_stack_unstack(mesh):
    a, n = arr((3, 4))
    b, m = arr((2, 4))
    eq(xp.concat((a, b)), np.concatenate((n, m)))
    eq(xp.concat([a, a], axis=-1), np.concatenate([n, n], axis=-1))
    eq(xp.concat([a, b], axis=None), np.concatenate([n, m], axis=None))
    c = xp.asarray(np.ones((3, 4), dtype=np.int32))
    assert xp.concat([a, c], axis=1).dtype == np.float64
    for ax in (0, 1, 2, -1):
        eq(xp.stack([a, a + 1], axis=ax), np.stack([n, n + 1], axis=ax))
    parts = xp.unstack(a, axis=1)
    assert len(parts) == 4
    eq(parts[2], n[:, 2])
    with pytest.raises(DimensionError):
        xp.concat([a, xp.ones((3, 5))])


def test_axes(mesh):
    a, n = arr((2, 3, 4))
    eq(xp.permute_dims(a, (2, 0, 1)), np.transpose(n, (2, 0, 1)))
    eq(xp.moveaxis(a, 0, -1), np.moveaxis(n, 0, -1))
    eq(xp.moveaxis(a, (0, 1), (2, 0)), np.moveaxis(n, (0, 1), (2, 0)))
    eq(xp.expand_dims(a, axis=1), np.expand_dims(n, 1))
    eq(xp.expand_dims(a, axis=-1), np.expand_dims(n, -1))
    with pytest.raises(IndexError):
        xp.expand_dims(a, axis=5)
    b = xp.reshape(a, (2, 1, 3, 4, 1))
    eq(xp.squeeze(b, axis=(1, -1)), n)
    with pytest.raises(ValueError):
        xp.squeeze(b, axis=0)


def test_broadcast(mesh):
    a, n = arr((3, 1))
    eq(xp.broadcast_to(a, (2, 3, 4)), np.broadcast_to(n, (2, 3, 4)))
    x, y = xp.broadcast_arrays(a, xp.asarray(np.arange(4.0)))
    eq(x, np.broadcast_to(n, (3, 4)))
    eq(y, np.broadcast_to(np.arange(4.0), (3, 4)))
    with pytest.raises(DimensionError):
        xp.broadcast_to(a, (3, 2, 2))


def test_repeat_tile(mesh):
    a, n = arr((4, 3))
    for r in (0, 1, 3):
        eq(xp.repeat(a, r, axis=0), np.repeat(n, r, axis=0))
        eq(xp.repeat(a, r, axis=1), np.repeat(n, r, axis=1))
    eq(xp.repeat(a, 2), np.repeat(n, 2))
    eq(xp.repeat(a, xp.asarray([2, 0, 1, 3]), axis=0), np.repeat(n, [2, 0, 1, 3], axis=0))
    for reps in ((2, 3), (2,), (2, 1, 2), (0, 1)):
        eq(xp.tile(a, reps), np.tile(n, reps))


def test_take(mesh):
    a, n = arr((5, 4))
    eq(xp.take(a, xp.asarray([4, 0, -1, 2]), axis=0), np.take(n, [4, 0, -1, 2], axis=0))
    eq(xp.take(a, xp.asarray([3, 3]), axis=-1), np.take(n, [3, 3], axis=-1))
    v, vn = arr((6,))
    eq(xp.take(v, xp.asarray([5, 1])), vn[[5, 1]])
    assert not xp.take(a, xp.asarray([1]), axis=0).pending
    ids = np.array([[0, 4, 1, 1], [2, 2, 0, 3]])
    eq(xp.take_along_axis(a, xp.asarray(ids), axis=0), np.take_along_axis(n, ids, 0))
    ids = np.array([[0, -1], [3, 2], [1, 1], [0, 0], [2, 3]])
    eq(xp.take_along_axis(a, xp.asarray(ids)), np.take_along_axis(n, ids, -1))
    with pytest.raises(DimensionError):  # raised by take, or on GPUs by the next value read (the ids' range is
        xp.take(a, xp.asarray([5]), axis=0).numpy()  # checked on the devices there: sa.take's docstring)


def test_getitem(mesh):
    a, n = arr((5, 4, 3))
    for key in [(1,), (slice(1, 4), 2), (Ellipsis, -1), (None, 0, Ellipsis, None), (slice(None, None, -2),),
                (slice(4, 0, -3), slice(None), 1), (2, 3, 1), (), (slice(7, 9),)]:
        eq(a[key], n[key])
    eq(a[xp.asarray(3)], n[3])
    eq(a[:, xp.asarray([3, 0])], n[:, [3, 0]])
    i, j = np.array([[0], [4]]), np.array([1, 2, 0])
    eq(a[xp.asarray(i), xp.asarray(j)], n[i, j])
    eq(a[xp.asarray(i), 1, xp.asarray(j)], n[i, 1, j])
    eq(a[xp.asarray(j), :, 0], n[j, :, 0])
    eq(a[xp.asarray(n > 3)], n[n > 3])  # boolean masks: ops/indexing/mask.py (tests/ops/indexing/test_mask.py)


def test_setitem(mesh):
    a, n = arr((5, 4))
    a[1:4:2, -1] = -1.0
    n[1:4:2, -1] = -1.0
    a[0] = xp.asarray(np.arange(4.0) * 10)
    n[0] = np.arange(4.0) * 10
    a[..., 1] = xp.asarray(np.ones((1, 5)))
    n[..., 1] = 1
    a[xp.asarray(2), 2] = 9.0
    n[2, 2] = 9.0
    eq(a, n)


def test_diff(mesh):
    a, n = arr((4, 5))
    n = n**2
    a = a * a
    for ax in (0, 1, -1):
        for k in (0, 1, 2, 3):
            eq(xp.diff(a, axis=ax, n=k), np.diff(n, k, axis=ax))
    p = np.ones((4, 2))
    eq(xp.diff(a, prepend=xp.asarray(p), append=xp.asarray(3 * p), n=2), np.diff(n, 2, prepend=p, append=3 * p))


def test_merge_moves_axes_by_one_alltoall():
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        a = xp.asarray(np.arange(48.0).reshape(8, 6))
        assert a.layout == {"dim0": ("row",), "dim1": ("col",)}
        with sa.comm_log() as log:
            b = xp.reshape(a, (48,))
        assert [r.op for r in log.records] == ["alltoall"]
        assert b.layout == {b.dims[0]: ("row", "col")}
        np.testing.assert_array_equal(b.numpy(), np.arange(48.0))
        with sa.comm_log() as log:
            xp.repeat(a, 3, axis=0)
            xp.stack([a, a], axis=1)
        assert log.records == []


@pytest.mark.parametrize("src,dst", [((5, 3), (15,)), ((5, 3), (3, 5)), ((8, 6), (6, 8)), ((7,), (7, 1))])
def test_reshape_never_gathers(src, dst):
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        a, n = arr(src)
        with sa.comm_log() as log:
            b = xp.reshape(a, dst)
        assert "allgather" not in {r.op for r in log.records}
        eq(b, n.reshape(dst))
        assert all(r.elements <= a.size for r in log.records)


def test_gradients(mesh):
    a, _ = arr((5, 3))
    w = xp.asarray(np.arange(15.0).reshape(3, 5))
    g = sa.grad(lambda t: (xp.reshape(t, (3, 5)) * w).sum())(a)
    np.testing.assert_array_equal(g.numpy(), np.arange(15.0).reshape(5, 3))
    g = sa.grad(lambda t: xp.take(t, xp.asarray([4, 4, 0]), axis=0).sum())(a)
    np.testing.assert_array_equal(g.numpy()[:, 0], [1, 0, 0, 0, 2])
    g = sa.grad(lambda t: (xp.flip(t[1:4, ::-1], axis=0) * 2).sum())(a)
    np.testing.assert_array_equal(g.numpy()[:, 0], [0, 2, 2, 2, 0])
