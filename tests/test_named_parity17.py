"""NumPy's functions and ufunc methods on named ShardArrays: parity with the positional side (round 17).

Before round 17 a named array answered only the NumPy names of the named tables: ``np.fmax``, ``np.gcd``,
``np.bitwise_count``, ``np.bitwise_or.reduce``, ``np.multiply.outer``, ``np.add.reduceat``, ``np.median``,
``np.isclose``, ``np.fft.rfft``, ``np.linalg.inv``... raised NumPy's bare TypeError ("no implementation found",
"returned NotImplemented"), ``np.logical_and`` of floats a DTypeError where NumPy reads truth values, and
``np.tile(x, 2)`` an ``sa.tile`` error about dicts. Those with a named meaning (axis ``k`` is the ``k``-th dim,
operands aligned by name, result dims kept) now run through the positional dispatch (``named_bridge``); the others
raise ``sa.DTypeError`` (a TypeError) naming ``xp.asarray(x)`` and the ``sa`` function. Each case compares the
gathered value with NumPy's on meshes 1, 2x2 and 3x2 (uneven blocks) and checks that nothing is gathered.
"""

from __future__ import annotations

import numpy as np
import pytest
from fuzzing import cached_mesh, fuzz
from fuzzing import cached_meshes as meshes
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

MESHES = [{"x": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}]


def _named(values, dims, mesh):
    axes = list(mesh.axis_names)
    layout = {d: a for d, a in zip(dims, axes) if mesh.shape[a] > 1}
    return sa.asarray(values, dims=dims, mesh=mesh, layout=layout)


def _gathers(monkeypatch):
    """Count the gathers of any ShardArray (``numpy()`` and ``__array__``) made inside the call under test."""
    count = []
    real_numpy, real_array = sa.ShardArray.numpy, sa.ShardArray.__array__
    monkeypatch.setattr(sa.ShardArray, "numpy", lambda self, *a, **k: count.append(1) or real_numpy(self, *a, **k))
    monkeypatch.setattr(sa.ShardArray, "__array__", lambda self, *a, **k: count.append(1) or real_array(self, *a, **k))
    return count


def _check(got, want, dims):
    assert isinstance(got, sa.ShardArray) and type(got) is sa.ShardArray, type(got)
    assert got.dims == dims, (got.dims, dims)
    g = got.numpy()
    assert g.shape == np.shape(want) and g.dtype == np.asarray(want).dtype, (g.shape, g.dtype, np.shape(want))
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.fixture(params=MESHES, ids=lambda s: "x".join(map(str, s.values())))
def mesh(request):
    return cached_mesh(request.param)


RNG = np.random.default_rng(17)
A = RNG.uniform(-2, 2, (5, 3))
B = RNG.uniform(-2, 2, (3, 5))
INTS = RNG.integers(0, 40, (5, 3))


@pytest.mark.parametrize("ufunc", [np.fmax, np.fmin, np.fmod, np.heaviside, np.logaddexp2, np.float_power])
def test_binary_ufunc_aligned_by_name(mesh, ufunc, monkeypatch):
    """Was NumPy's bare TypeError ('returned NotImplemented'): operands in other dim orders align by name."""
    x, y = _named(A, ("a", "b"), mesh), _named(B, ("b", "a"), mesh)
    y1 = _named(B[:, 0], ("b",), mesh)
    gathers = _gathers(monkeypatch)
    out, out1 = ufunc(x, y), ufunc(y1, x)
    assert not gathers
    _check(out, ufunc(A, B.T), ("a", "b"))
    _check(out1, ufunc(B[:, 0][:, None], A.T), ("b", "a"))  # (the first operand's dims first, as y1 + x)


@pytest.mark.parametrize("ufunc", [np.cbrt, np.exp2, np.fabs, np.deg2rad, np.rad2deg, np.spacing])
def test_unary_ufunc(mesh, ufunc):
    _check(ufunc(_named(A, ("a", "b"), mesh)), ufunc(A), ("a", "b"))


def test_integer_ufuncs(mesh):
    x, y = _named(INTS, ("a", "b"), mesh), _named(INTS[::-1].T.copy(), ("b", "a"), mesh)
    _check(np.gcd(x, y), np.gcd(INTS, INTS[::-1]), ("a", "b"))
    _check(np.lcm(x, 3), np.lcm(INTS, 3), ("a", "b"))
    _check(np.bitwise_count(x), np.bitwise_count(INTS), ("a", "b"))
    q, r = np.divmod(x, 7)
    _check(q, INTS // 7, ("a", "b"))
    _check(r, INTS % 7, ("a", "b"))


def test_logical_ufuncs_of_numbers(mesh):
    """Was a DTypeError ('logical_and is defined for bool arrays only'): NumPy reads the operands' truth."""
    a = np.where(A > 0, A, 0.0)
    x, y = _named(a, ("a", "b"), mesh), _named(INTS.T.copy() % 2, ("b", "a"), mesh)
    for f in (np.logical_and, np.logical_or, np.logical_xor):
        _check(f(x, y), f(a, INTS % 2), ("a", "b"))
    _check(np.logical_not(x), np.logical_not(a), ("a", "b"))
    b = x > 0
    _check(np.logical_and(b, b), a > 0, ("a", "b"))  # (bools: sa.logical_and, as before)


def test_ufunc_reduce_and_reduceat(mesh, monkeypatch):
    """Was NumPy's bare TypeError: ``reduce`` of the other ufuncs, ``reduceat``, along the dims by position."""
    x, f = _named(INTS, ("a", "b"), mesh), _named(A, ("a", "b"), mesh)
    gathers = _gathers(monkeypatch)
    outs = [np.bitwise_or.reduce(x, axis=0), np.bitwise_xor.reduce(x, axis=1), np.fmax.reduce(f, axis=0),
            np.logical_xor.reduce(x > 20, axis=1), np.add.reduceat(f, [0, 2], axis=0),
            np.maximum.reduceat(x, [0, 1], axis=1), np.bitwise_and.reduce(x, axis=None)]  # fmt: skip
    assert not gathers
    _check(outs[0], np.bitwise_or.reduce(INTS, axis=0), ("b",))
    _check(outs[1], np.bitwise_xor.reduce(INTS, axis=1), ("a",))
    _check(outs[2], np.fmax.reduce(A, axis=0), ("b",))
    _check(outs[3], np.logical_xor.reduce(INTS > 20, axis=1), ("a",))
    _check(outs[4], np.add.reduceat(A, [0, 2], axis=0), ("a", "b"))
    _check(outs[5], np.maximum.reduceat(INTS, [0, 1], axis=1), ("a", "b"))
    assert int(outs[6]) == np.bitwise_and.reduce(INTS, axis=None)


def test_ufunc_reduce_where_aligned(mesh):
    x = _named(A, ("a", "b"), mesh)
    mask = _named((A > 0).T.copy(), ("b", "a"), mesh)
    got = np.fmax.reduce(x, axis=0, where=mask, initial=-np.inf)
    _check(got, np.fmax.reduce(A, axis=0, where=A > 0, initial=-np.inf), ("b",))


def test_ufunc_outer(mesh):
    x, y = _named(A[:, 0], ("a",), mesh), _named(B[:, 1], ("b",), mesh)
    _check(np.multiply.outer(x, y), np.multiply.outer(A[:, 0], B[:, 1]), ("a", "b"))
    _check(np.subtract.outer(y, x), np.subtract.outer(B[:, 1], A[:, 0]), ("b", "a"))
    with pytest.raises(sa.DimensionError, match="share the dims"):
        np.add.outer(x, x)


def test_functions_along_axes(mesh, monkeypatch):
    """Was NumPy's bare TypeError ('no implementation found'): functions whose result keeps its dims."""
    x, y = _named(A, ("a", "b"), mesh), _named(A.T.copy(), ("b", "a"), mesh)  # (y: x's values, dims swapped)
    gathers = _gathers(monkeypatch)
    outs = {
        "median": np.median(x, axis=0), "ptp": np.ptp(x, axis=1), "percentile": np.percentile(x, 30, axis=0),
        "nancumsum": np.nancumsum(x, axis=1), "isclose": np.isclose(x, y), "rfft": np.fft.rfft(x, axis=0),
        "fftshift": np.fft.fftshift(x, axes=1),
        "nan_to_num": np.nan_to_num(x / 0.0), "average": np.average(x, axis=0),
    }  # fmt: skip
    assert not gathers
    outs["nanargmax"] = np.nanargmax(x, axis=1)  # (reads one 0-d flag: whether a row is all NaN, NumPy's error)
    with np.errstate(all="ignore"):
        _check(outs["nan_to_num"], np.nan_to_num(A / 0.0), ("a", "b"))
    _check(outs["median"], np.median(A, axis=0), ("b",))
    _check(outs["ptp"], np.ptp(A, axis=1), ("a",))
    _check(outs["percentile"], np.percentile(A, 30, axis=0), ("b",))
    _check(outs["nancumsum"], np.nancumsum(A, axis=1), ("a", "b"))
    _check(outs["isclose"], np.ones((5, 3), bool), ("a", "b"))
    _check(outs["rfft"], np.fft.rfft(A, axis=0), ("a", "b"))
    _check(outs["fftshift"], np.fft.fftshift(A, axes=1), ("a", "b"))
    _check(outs["nanargmax"], np.nanargmax(A, axis=1), ("a",))
    _check(outs["average"], np.average(A, axis=0), ("b",))
    assert bool(np.allclose(x, y)) and not bool(np.allclose(x, y + 1))
    assert bool(np.array_equal(x, y)) and not bool(np.array_equal(x, x + 1))


def test_linalg_and_cross_keep_dims(mesh):
    m = A[:3] @ A[:3].T + 3 * np.eye(3)
    x = _named(m, ("i", "j"), mesh)
    _check(np.linalg.inv(x), np.linalg.inv(m), ("i", "j"))
    _check(np.linalg.cholesky(x), np.linalg.cholesky(m), ("i", "j"))
    r = _named(A, ("a", "b"), mesh)
    _check(np.linalg.pinv(r), np.linalg.pinv(A), ("b", "a"))
    np.testing.assert_allclose(float(np.linalg.det(x)), np.linalg.det(m))
    v, w = _named(A, ("a", "v"), mesh), _named(B, ("v", "a"), mesh)
    _check(np.cross(v, w), np.cross(A, B.T), ("a", "v"))


def test_trace_triangles_transpose_broadcast(mesh):
    """Was NumPy's bare TypeError: results keep their dims (``np.trace`` drops its two; ``matrix_transpose`` swaps
    the last two; ``broadcast_arrays`` gives each the dims of all, in ``x + y``'s order)."""
    v = RNG.uniform(-1, 1, (2, 3, 4))
    x = _named(v, ("a", "b", "c"), mesh)
    _check(np.trace(x), np.trace(v), ("c",))
    _check(np.trace(x, axis1=1, axis2=-1), np.trace(v, axis1=1, axis2=2), ("a",))
    _check(np.linalg.trace(x), np.linalg.trace(v), ("a",))
    _check(np.triu(x, 1), np.triu(v, 1), ("a", "b", "c"))
    _check(np.tril(x), np.tril(v), ("a", "b", "c"))
    _check(np.matrix_transpose(x), np.matrix_transpose(v), ("a", "c", "b"))
    w = _named(v[0, 0], ("c",), mesh)
    p, q = np.broadcast_arrays(w, x)
    _check(p, np.broadcast_to(v[0, 0][:, None, None], (4, 2, 3)), ("c", "a", "b"))
    _check(q, v.transpose(2, 0, 1), ("c", "a", "b"))


def test_memory_and_indices(mesh):
    x = _named(INTS, ("a", "b"), mesh)
    assert np.may_share_memory(x, x) and np.shares_memory(x, x)
    assert not np.may_share_memory(x, x + 1)
    small = _named(INTS[:, 0].astype(np.int8), ("a",), mesh)
    assert np.result_type(x, small) == np.result_type(INTS, INTS[:, 0].astype(np.int8))
    assert np.result_type(small, np.float32) == np.float32 and np.can_cast(small, np.int16)
    assert not np.can_cast(x, np.int8)
    rows, cols = np.unravel_index(x, (8, 5))
    _check(rows, np.unravel_index(INTS, (8, 5))[0], ("a", "b"))
    _check(cols, np.unravel_index(INTS, (8, 5))[1], ("a", "b"))


def test_tile_and_broadcast_to(mesh):
    """Was ``sa.tile``'s 'reps is a dict' and ``sa.broadcast_to``'s 'takes sizes as a dict' for NumPy's ints."""
    x = _named(A, ("a", "b"), mesh)
    _check(np.tile(x, 2), np.tile(A, 2), ("a", "b"))
    _check(np.tile(x, (2, 1)), np.tile(A, (2, 1)), ("a", "b"))
    assert np.broadcast_to(x, (5, 3)) is x
    for call in (lambda: np.tile(x, (2, 1, 1)), lambda: np.broadcast_to(x, (2, 5, 3))):
        with pytest.raises(sa.DTypeError, match=r"sa\.(tile|broadcast_to)") as info:
            call()
        assert isinstance(info.value, TypeError) and "xp.asarray(x)" in str(info.value)


REFUSED = [
    lambda x: np.reshape(x, (15,)), lambda x: np.ravel(x), lambda x: np.hstack([x, x]), lambda x: np.dot(x, x),
    lambda x: np.histogram_bin_edges(x, 3), lambda x: np.roots(x), lambda x: np.put(x, [0, 1], 1.0),
    lambda x: np.vecdot(x, x), lambda x: np.correlate(x, x), lambda x: np.apply_along_axis(np.sum, 0, x),
    lambda x: np.percentile(x, [10, 90], axis=0), lambda x: np.logspace(x, x + 1, 3), lambda x: np.median(x),
    lambda x: np.linalg.eigvalsh(x), lambda x: np.subtract.accumulate(x, axis=0),
]  # fmt: skip


@pytest.mark.parametrize("call", REFUSED, ids=range(len(REFUSED)))
def test_refusals_name_the_positional_view(mesh, call, monkeypatch):
    """Was NumPy's bare TypeError: now a ``sa.DTypeError`` (a TypeError) naming ``xp.asarray(x)`` (or, where the
    positional side lacks it too, ``np.subtract.accumulate``, the gathered copy), nothing gathered (``np.median(x)``
    of every axis: a 0-d result, computed through the bridge)."""
    x = _named(A[:3, :3].copy(), ("a", "b"), mesh)
    gathers = _gathers(monkeypatch)
    try:
        out = call(x)
    except sa.DTypeError as e:
        assert ("xp.asarray(x)" in str(e) or "x.numpy()" in str(e)) and "('a', 'b')" in str(e), str(e)
        assert not gathers
        return
    assert call is REFUSED[12] and out.ndim == 0  # np.median(x) (axis=None) reduces every dim: no new axes


def test_writes_in_place(mesh):
    """Was NumPy's bare TypeError: ``np.copyto(where=)``, ``np.putmask``, ``np.place`` and ``ufunc.at`` write the
    named array in place (its named operands aligned by name; host values and indices by position, as NumPy's)."""
    v = A.copy()
    x, y = _named(v.copy(), ("a", "b"), mesh), _named(-v.T.copy(), ("b", "a"), mesh)
    cases = [
        (lambda t: np.copyto(t, y, where=y < -0.5), lambda w: np.copyto(w, -v, where=-v < -0.5)),
        (lambda t: np.copyto(t, 3.0), lambda w: np.copyto(w, 3.0)),
        (lambda t: np.putmask(t, t > 0.3, [-1.0, -2.0]), lambda w: np.putmask(w, w > 0.3, [-1.0, -2.0])),
        (lambda t: np.place(t, t > 0.3, [-1.0, -2.0, -3.0]), lambda w: np.place(w, w > 0.3, [-1.0, -2.0, -3.0])),
        (lambda t: np.add.at(t, [0, 0, 4], 1.0), lambda w: np.add.at(w, [0, 0, 4], 1.0)),
        (lambda t: np.negative.at(t, ([1, 2], [0, 2])), lambda w: np.negative.at(w, ([1, 2], [0, 2]))),
        (lambda t: np.maximum.at(t, [3], y.isel(a=0)), lambda w: np.maximum.at(w, [3], -v[0])),
    ]
    for write, write_np in cases:
        t, w = _named(v.copy(), ("a", "b"), mesh), v.copy()
        assert write(t) is None
        write_np(w)
        _check(t, w, ("a", "b"))
    with pytest.raises(sa.DimensionError, match="among"):
        np.copyto(x[{"b": 0}], y)


def test_flattening_axis_none_refused(mesh):
    x = _named(A, ("a", "b"), mesh)
    with pytest.raises(sa.ArgumentError, match="merge_dims"):
        np.nancumsum(x)
    _check(np.nancumsum(_named(A[:, 0], ("a",), mesh)), np.nancumsum(A[:, 0]), ("a",))


@fuzz(30, "FUZZ17_EXAMPLES")
@given(data=st.data(), mesh=meshes())
def test_fuzz_bridged_ufuncs(data, mesh):
    """Random layouts and dim orders: bridged binary ufuncs and reduces against NumPy on the gathered values."""
    rows, cols = data.draw(st.integers(0, 5)), data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a, b = rng.integers(-9, 9, (rows, cols)), rng.integers(1, 9, (cols, rows))
    x = sa.asarray(a, dims=("r", "c"), mesh=mesh, layout=data.draw(layouts(mesh, ("r", "c"))))
    y = sa.asarray(b, dims=("c", "r"), mesh=mesh, layout=data.draw(layouts(mesh, ("c", "r"))))
    ufunc = data.draw(st.sampled_from([np.fmax, np.gcd, np.fmod, np.heaviside, np.logical_xor, np.bitwise_or]))
    with np.errstate(all="ignore"):
        want = ufunc(a, b.T)
        _check(ufunc(x, y), want, ("r", "c"))
        axis = data.draw(st.sampled_from([0, 1]))
        red = data.draw(st.sampled_from([np.bitwise_xor, np.fmin, np.bitwise_and]))
        if red is not np.fmin or (rows, cols)[axis]:  # (fmin of an empty axis: NumPy's ValueError)
            _check(red.reduce(x, axis=axis), red.reduce(a, axis=axis), (("c",), ("r",))[axis])
