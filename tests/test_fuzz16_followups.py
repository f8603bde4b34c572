"""Round 16 follow-ups: what the outside checks found in files no helper owned, with their regression tests.

* Every public function of ``sa``, ``xp`` and their ``linalg``/``fft``/``random`` namespaces, and ``x[...]``/``x[...] =
  v`` of both kinds, is an op boundary of an MPI job (``core.tape.boundaries``): an argument check that fails on some
  processes only reaches the others as a ``CommError`` (the jobs: ``tests/mpi/test_fuzz15_mpi.py``). Checked here by
  construction: each such function carries the op mark, but for the ones that take the program's functions or only
  manage state.
* ``x.itemsize`` and ``x.nbytes`` (the Python Data Science Handbook's 02.02): NumPy's figures, global, no gather.
* ``np.arange(..., dtype=complex, like=x)`` makes NumPy's complex values (was a ``DTypeError``).
"""

from __future__ import annotations

import types

import ml_dtypes
import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.core import tape

NOT_BOUNDARIES = {
    # take the program's own functions (their repr differs between processes) or only manage state
    "comm_log", "default_mesh", "get_default_mesh", "grad", "profile", "set_default_mesh", "value_and_grad", "vjp",
    # make an array from per-process arguments, and agree over the job themselves first (check_spmd)
    "asarray", "from_local", "full", "ones", "zeros",
}  # fmt: skip


def _functions(module):
    return [(module.__name__, n) for n in module.__all__ if isinstance(getattr(module, n), types.FunctionType)]


@pytest.mark.parametrize("module", [sa, xp, xp.linalg, xp.fft, sa.linalg, sa.fft, sa.random], ids=lambda m: m.__name__)
def test_every_public_function_is_an_op_boundary(module):
    """A function added to a namespace later is a boundary without anyone remembering to mark it."""
    unmarked = [
        name
        for _, name in _functions(module)
        if not vars(getattr(module, name)).get(tape._OP_MARK) and not (module is sa and name in NOT_BOUNDARIES)
    ]
    assert not unmarked, f"{module.__name__}: not op boundaries: {unmarked}"


def test_indexing_of_both_kinds_is_an_op_boundary():
    for fn in (sa.ShardArray.__getitem__, sa.ShardArray.__setitem__, xp.Array.__getitem__, xp.Array.__setitem__):
        assert vars(fn).get(tape._OP_MARK) or vars(getattr(sa.array.OPS, fn.__name__.strip("_"))).get(tape._OP_MARK)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint16", "complex64", "bool", "bfloat16"])
@pytest.mark.parametrize("shape", [(0,), (5,), (3, 7)])
def test_itemsize_and_nbytes_are_numpys(dtype, shape):
    mesh = sa.Mesh({"row": 2, "col": 2})
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    host = np.zeros(shape, dtype=dt)
    x = xp.asarray(host, device=mesh)
    assert (x.itemsize, x.nbytes) == (host.itemsize, host.nbytes)
    n = sa.asarray(host, dims=tuple(f"d{i}" for i in range(len(shape))), mesh=mesh)
    assert (n.itemsize, n.nbytes) == (host.itemsize, host.nbytes)
    with sa.comm_log() as log:
        x.nbytes, n.itemsize  # noqa: B018
    assert not log.records


@pytest.mark.parametrize("args", [(3,), (1, 10, 3), (0.5, 3.7, 0.4), (5, 1, -1), (2, 2)])
@pytest.mark.parametrize("dtype", [complex, np.complex64])
def test_arange_of_a_complex_dtype_is_numpys(args, dtype):
    like = xp.asarray(np.arange(4.0), device=sa.Mesh({"row": 2, "col": 2}))
    got, want = np.arange(*args, dtype=dtype, like=like), np.arange(*args, dtype=dtype)
    assert isinstance(got, xp.Array) and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-7 if dtype is np.complex64 else 0, atol=0)


# ============================================================ writes into a basic index's copy (round 16)
# Three outside checks met the same silent loss: NumPy's basic index is a view, so a write into it changes the array
# it was read from (Rougier's exercise 88 ``Z[1:-1, 1:-1][mask] = 1``, the Handbook's ``out=y[::2]``, scikit-learn's
# GaussianMixture adding ``reg_covar`` to ``covariances[k, :, :]``); here it is a copy, and the write was lost. Now a
# written copy freed unread warns ``sa.CopyWriteWarning`` (``shardarray.copies``); a copy read after the write (the
# program wanted the copy: array-api-extra's ``at(c)[i].set(v)``, SciPy's ``stats.mode``) does not.


def _z():
    return xp.asarray(np.zeros((6, 5)), device=sa.Mesh({"row": 2, "col": 2}))


LOST = {
    "mask": lambda z: z[1:-1, 1:-1].__setitem__(xp.asarray(np.eye(4, 3, dtype=bool), device=z.mesh), 1.0),
    "row": lambda z: z[1:3].__setitem__(0, 5.0),
    "ellipsis": lambda z: z[..., 0].__setitem__(slice(None), 5.0),
    "newaxis": lambda z: z[None, 2].__setitem__((0, 1), 5.0),
    "out": lambda z: np.multiply(z[:3], 2.0, out=z[::2]),
    "add_at": lambda z: np.add.at(z[0:3], [0, 0], 1.0),
    "flat": lambda z: z[:, 1].flat.__setitem__(slice(None, None, 2), 7.0),
    "copyto": lambda z: np.copyto(z[1:2], 3.0),
    "sort": lambda z: z[2].sort(),
    "iadd": lambda z: z[1:3].__iadd__(1.0),
}


@pytest.mark.parametrize("write", LOST.values(), ids=LOST)
def test_a_write_into_a_basic_index_copy_freed_unread_warns(write):
    z = _z()
    with pytest.warns(sa.CopyWriteWarning, match=r"write into x\[.*\] \(a copy of shape .*was lost.*\.copy\(\)"):
        write(z)  # (the copy is freed here, unread)
    assert not z.numpy().any()  # (as before: the write changed only the copy)


def test_a_copy_read_after_its_write_does_not_warn(recwarn):
    z = _z()
    z[1:3] += 10.0  # getitem, in-place add into the copy, setitem back (which reads it): as NumPy
    z[:, 1] *= 2.0
    c = z[..., 0]  # array-api-extra's at(c)[mask].set(0) (SciPy's stats.mode): the copy is what the program uses
    c[xp.isnan(c)] = 0.0
    got = c.numpy()
    y = z[1:3]
    y[0] = -1.0
    y[1] = -2.0  # (two writes, one read after: nothing lost)
    assert y.numpy()[1, 0] == -2.0
    w = z[[0, 5]]  # an integer-array index: NumPy's result is a copy too, never watched
    w[0] = 4.0
    del w
    want = np.zeros((6, 5))
    want[1:3] += 10.0
    want[:, 1] *= 2.0
    np.testing.assert_array_equal(z.numpy(), want)
    np.testing.assert_array_equal(got, want[:, 0])
    assert not [w for w in recwarn if issubclass(w.category, sa.CopyWriteWarning)]


def test_a_written_copy_costs_nothing_once_read():
    """Only the blocks of a copy written and not read since are watched (a tuple subclass); the first read gives the
    copy a plain tuple again, and the copy's class never changes."""
    z = _z()
    y = z[0:2]
    y[0] = 1.0
    assert type(y) is xp.Array and type(y._shards) is not tuple
    y.numpy()
    assert type(y) is xp.Array and type(y._shards) is tuple


# ============================================================ the Scientific Python Lectures' gaps (round 16)


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"row": 3, "col": 2}, {"d": 4}], ids=str)
def test_a_tuple_or_range_inside_an_index_is_a_list_of_ids(shape):
    a = np.arange(42).reshape(6, 7)
    x = xp.asarray(a, device=sa.Mesh(shape))
    np.testing.assert_array_equal(x[(0, 1, 2, 3, 4), (1, 2, 3, 4, 5)].numpy(), a[(0, 1, 2, 3, 4), (1, 2, 3, 4, 5)])
    np.testing.assert_array_equal(x[range(5), range(1, 6)].numpy(), a[range(5), range(1, 6)])
    np.testing.assert_array_equal(x[1:3, range(0, 7, 3)].numpy(), a[1:3, range(0, 7, 3)])
    assert int(x[(1, 2)]) == a[(1, 2)]  # (the key itself a tuple: two ints)
    x[range(5), range(5)] = -1
    b = a.copy()
    b[range(5), range(5)] = -1
    np.testing.assert_array_equal(x.numpy(), b)


@pytest.mark.parametrize("new", [(8,), (2, 3), (0,), 5, (3, 4)], ids=str)
def test_resize_in_place_as_numpy(new):
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=mesh)
    x.resize(new)
    want = np.arange(12.0).reshape(3, 4).copy()
    want.resize(new, refcheck=False)
    assert x.shape == want.shape and type(x) is xp.Array
    np.testing.assert_array_equal(x.numpy(), want)


@pytest.mark.parametrize(
    "p", [[3.0, 2, -1], [1.0, 0, 1], [0, 0, 1.0, -3, 2, 0, 0], [5.0], [0.0, 0], [1.0, -6, 11, -6], [2, 0, 0]]
)
def test_roots_as_numpy(p):
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        got = np.roots(xp.asarray(np.array(p)))
    want = np.roots(np.array(p))
    assert isinstance(got, xp.Array) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.sort_complex(got.numpy()), np.sort_complex(want), atol=1e-12)


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"row": 3, "col": 2}], ids=str)
def test_copyto_where_as_numpy(shape):
    """``np.copyto(dst, src, where=mask)`` was refused (``where=`` not supported): From Python to NumPy's notes."""
    a = np.arange(12.0).reshape(3, 4)
    m = a % 3 == 0
    mesh = sa.Mesh(shape)
    for src, where in [(-1.0, m), (np.full((3, 4), 7.0), m), (np.arange(4.0), m), (5, [True, False, True, False])]:
        d, want = xp.asarray(a, device=mesh), a.copy()
        np.copyto(d, src, where=where)
        np.copyto(want, src, where=where)
        np.testing.assert_array_equal(d.numpy(), want)
    d = xp.asarray(a, device=mesh)
    np.copyto(d, xp.asarray(-a, device=mesh), where=xp.asarray(m, device=mesh))
    np.testing.assert_array_equal(d.numpy(), np.where(m, -a, a))
    with pytest.raises(sa.DTypeError, match="where= must be booleans"):
        np.copyto(d, 1.0, where=xp.asarray(a, device=mesh))


def test_shape_setter_and_correlate_as_numpy():
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.asarray(np.arange(12.0).reshape(3, 4))
        x.shape = 12
        assert x.shape == (12,) and type(x) is xp.Array
        x.shape = (2, -1)
        np.testing.assert_array_equal(x.numpy(), np.arange(12.0).reshape(2, 6))
        with pytest.raises(sa.DimensionError):
            x.shape = (5, 5)
        a, v = np.arange(9.0), np.array([1.0, 2.0, 3.0j])
        for mode in ("valid", "same", "full"):
            np.testing.assert_allclose(
                np.correlate(xp.asarray(a), xp.asarray(v), mode).numpy(), np.correlate(a, v, mode)
            )


def test_np_take_takes_host_integer_indices_as_getitem_does():
    """``np.take(x, np.array([0, 5]))`` was refused (NumPy data mixed in) while ``x[np.array([0, 2])]`` took it."""
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=sa.Mesh({"row": 2, "col": 2}))
    np.testing.assert_array_equal(np.take(x, np.array([0, 5, 7])).numpy(), np.take(a, np.array([0, 5, 7])))
    np.testing.assert_array_equal(np.take(x, np.array([[0, 2]]), axis=1).numpy(), np.take(a, np.array([[0, 2]]), 1))
    with pytest.raises(sa.DTypeError):
        np.take(x, np.array([0.5]))


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"row": 3, "col": 2}, {"d": 4}], ids=str)
def test_putmask_and_place_as_numpy(shape):
    """``np.putmask`` and ``np.place`` had no implementation (From Python to NumPy's notes); values repeat."""
    mesh = sa.Mesh(shape)
    a = np.arange(15.0).reshape(3, 5)
    m = a % 3 == 1
    for vals in ([-1.0, -2.0], -5.0, np.arange(100.0), np.arange(15.0).reshape(3, 5) * 10):
        for fn in (np.putmask, np.place):
            x, want = xp.asarray(a, device=mesh), a.copy()
            fn(x, m, vals)
            fn(want, m, vals)
            np.testing.assert_array_equal(x.numpy(), want)
    x = xp.asarray(a, device=mesh)
    np.putmask(x, xp.asarray(m, device=mesh), xp.asarray(-a, device=mesh))
    np.testing.assert_array_equal(x.numpy(), np.where(m, -a, a))
    with pytest.raises(sa.ArgumentError, match="empty"):
        np.place(xp.asarray(a, device=mesh), m, [])
