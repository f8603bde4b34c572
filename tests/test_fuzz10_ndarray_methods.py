"""A differential fuzz, against NumPy, of the ndarray methods and orders added to positional arrays: ``x.put`` /
``np.put`` (modes, repeats, cyclic values, host and distributed indices and values), ``x.view(dtype)`` (same and
other itemsizes, the split last axis refused), ``np.reshape``/``x.reshape`` with ``order="F"``/``"A"`` and
``np.ravel``/``x.flatten`` orders, on random meshes (1, 2x2, 4, 2x2x2, 3x2) and layouts with uneven and empty
blocks; and ``np.add.at`` of floats into integers (refused on purpose, see ``array_api/_indexing.ufunc_at``).

``FUZZ10_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = ("float64", "float32", "float16", BF16, "int64", "int32", "uint32", "int8", "uint8", "bool", "complex64")
SIDES = (0, 1, 2, 3, 4, 5, 7)


def _values(rng: np.random.Generator, shape: tuple, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    n = math.prod(shape)
    if dt.kind == "b":
        return (rng.integers(0, 2, n) > 0).reshape(shape)
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -5, 6, n).astype(dt).reshape(shape)
    v = rng.integers(-6, 7, n) / rng.choice([1, 2, 4], n)
    if dt.kind == "c":
        v = v + 1j * rng.integers(-3, 4, n)
    return v.astype(dt).reshape(shape)


@st.composite
def host(draw, dtypes=DTYPES, min_dims=0, max_dims=3):
    nd = draw(st.integers(min_dims, max_dims))
    shape = tuple(draw(st.sampled_from(SIDES if nd > 1 else (*SIDES, 8, 12))) for _ in range(nd))
    return _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, draw(st.sampled_from(dtypes)))


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh``: axis k over mesh axis k, a random layout, or dims out of order."""
    if a.ndim >= 2 and draw(st.integers(0, 3)) == 0:
        perm = tuple(draw(st.permutations(range(a.ndim))))
        return xp.permute_dims(draw(placed(np.ascontiguousarray(np.transpose(a, perm)), mesh)), tuple(np.argsort(perm)))
    if a.ndim == 0 or (draw(st.booleans()) and 1 not in a.shape[: len(mesh.axis_names)]):
        return xp.asarray(a, device=mesh)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


def _bytes(a: np.ndarray) -> np.ndarray:
    a = a.copy(order="C")
    return a.view(np.uint8).reshape(*a.shape, a.dtype.itemsize) if a.ndim else a.reshape(1).view(np.uint8)


def _same(got, expected: np.ndarray) -> None:
    assert isinstance(got, xp.Array), type(got)
    g = got.numpy()
    assert g.shape == expected.shape and g.dtype == expected.dtype, (g.shape, g.dtype, expected.shape, expected.dtype)
    assert np.array_equal(_bytes(g), _bytes(expected)), (g, expected)


def _gathers(log, at_most: int) -> list:
    return [r for r in log.records if r.op == "allgather" and r.elements > at_most]


# --------------------------------------------------------------------------------------------- put


@fuzz(50, "FUZZ10_EXAMPLES")
@given(meshes(), st.data())
def test_put_matches_numpy(mesh, data):
    """``x.put``/``np.put``: NumPy's flat positions, modes, last write wins, cyclic values and unsafe casts; a typed
    error where NumPy raises; no gather of ``x``."""
    a = data.draw(host(max_dims=3))
    x = data.draw(placed(a, mesh))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n = max(a.size, 1)
    m = data.draw(st.integers(0, 7))
    ind = rng.integers(-2 * n, 2 * n, m) if data.draw(st.booleans()) else rng.integers(-n, n, m)
    k = data.draw(st.sampled_from([0, 1, 2, m, m + 2]))
    vals = _values(rng, (k,), data.draw(st.sampled_from(("float64", "int64", "bool", "float32"))))
    mode = data.draw(st.sampled_from(("raise", "wrap", "clip")))
    dist_ind, dist_v = data.draw(st.booleans()), data.draw(st.booleans())
    if dist_ind and m and data.draw(st.booleans()):  # (a 2-D index array, flattened as NumPy does)
        ind = np.concatenate([ind, ind[:1]]).reshape(-1, 2) if m % 2 else ind.reshape(2, -1)
    i = xp.asarray(ind, device=mesh) if dist_ind and m else ind.tolist()
    v = xp.asarray(vals, device=mesh) if dist_v and k else vals.tolist() if data.draw(st.booleans()) else vals
    expected = a.copy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.put(expected, ind, vals if isinstance(v, xp.Array) else v, mode=mode)  # (a list: Python scalars)
    except (IndexError, ValueError, TypeError, OverflowError):
        with pytest.raises(sa.ShardArrayError):
            x.put(i, v, mode=mode)
        _same(x, a)  # (nothing written)
        return
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore")
        if data.draw(st.booleans()):
            assert x.put(i, v, mode=mode) is None
        else:
            assert np.put(x, i, v, mode=mode) is None
    _same(x, expected)
    assert not _gathers(log, max(32, 4 * (ind.size + k))), log.records  # (index and value pairs at most)


def test_put_regressions():
    """Fixed cases: repeated positions across blocks (the last wins), a 0-d array, empty values and arrays,
    negative positions of a distributed index array in mode 'raise' (not wrapped per axis), bad modes/indices."""
    for shape in ({"row": 2, "col": 2}, {"p": 3, "q": 2}, {"x": 1}):
        mesh = _mesh(shape)
        a = np.arange(35.0).reshape(5, 7)
        x = xp.asarray(a, device=mesh)
        x.put([34, 0, 34, 8], [1.0, 2.0, 3.0, 4.0])
        np.put(a, [34, 0, 34, 8], [1.0, 2.0, 3.0, 4.0])
        _same(x, a)
        with pytest.raises(sa.OutOfBoundsError, match="size 35"):
            x.put(xp.asarray([-36], device=mesh), 1.0)  # (-36 // 7 is -6: per-axis wrapping would write (-1, 6))
        _same(x, a)
        x.put(xp.asarray([-1, -35], device=mesh), xp.asarray([7.0, 8.0], device=mesh))
        np.put(a, [-1, -35], [7.0, 8.0])
        _same(x, a)
        z = xp.asarray(np.float32(1.0), device=mesh)
        z.put([0, -1], [5.0, 6.0])
        assert float(z) == 6.0
        e = xp.zeros((0, 3), device=mesh)
        e.put([], [1.0])  # (no positions: NumPy's no-op)
        x.put([99], [])  # (no values: NumPy's no-op, positions unchecked)
        for v in ([1.0], []):
            with pytest.raises(sa.OutOfBoundsError, match="empty"):
                e.put([0], v, mode="wrap")
        with pytest.raises(sa.ArgumentError, match="mode"):
            x.put([0], [1.0], mode="bad")
        with pytest.raises(sa.DTypeError, match="integers"):
            x.put([0.0], [1.0])
        i8 = xp.zeros((3,), dtype=xp.int8, device=mesh)
        i8.put([0, 1], [2.7, -1.5])  # (NumPy's put casts unsafely)
        assert i8.tolist() == [2, -1, 0]
        with pytest.raises(sa.DTypeError):
            i8.put([0], [300])  # (NumPy's OverflowError)


# --------------------------------------------------------------------------------------------- view

VIEW_TO = ("float64", "float32", "float16", "int64", "int32", "uint32", "int16", "int8", "uint8", "bool", "complex64")


@fuzz(40, "FUZZ10_EXAMPLES")
@given(meshes(), st.data())
def test_view_matches_numpy(mesh, data):
    """``x.view(dtype)``: NumPy's bytes, per block and without communication; another itemsize with the last axis
    split is a LayoutError naming it; NumPy's refusals are typed errors."""
    a = data.draw(host(max_dims=3))
    x = data.draw(placed(a, mesh))
    dt = np.dtype(data.draw(st.sampled_from(VIEW_TO)))
    try:
        expected = a.copy(order="C").view(dt)
    except (ValueError, TypeError):
        with pytest.raises(sa.ShardArrayError):
            x.view(dt)
        return
    last_split = a.ndim and mesh.axes_size(x.spec.of(x.dims[-1])) > 1
    if dt.itemsize != a.dtype.itemsize and last_split:
        with pytest.raises(sa.LayoutError, match=repr(x.dims[-1])):
            x.view(dt)
        return
    with sa.comm_log() as log:
        got = x.view(dt)
    assert not log.records, log.records
    _same(got, expected)
    if dt.itemsize == a.dtype.itemsize:
        assert got.layout == x.layout


def test_view_regressions():
    """Fixed cases: writes after a view are not seen through it (documented), ``x.view()``, NumPy's refusals."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = xp.asarray(a, device=mesh)
    v, same = x.view(xp.int32), x.view()
    assert isinstance(same, xp.Array) and same is not x and same.dtype == x.dtype
    x[0, 0] = 100.0
    x += 1
    v[1, 1] = 7
    assert np.array_equal(v.numpy()[0], a[0].view(np.int32)) and v.numpy()[1, 1] == 7
    assert np.array_equal(same.numpy(), a) and x.numpy()[1, 1] == a[1, 1] + 1
    with pytest.raises(sa.LayoutError, match="relayout"):
        x.view(np.float16)
    y = x.relayout({x.dims[1]: None})
    assert np.array_equal(y.view(np.float16).numpy(), x.numpy().view(np.float16))
    assert np.array_equal(y.view(np.complex64).numpy(), x.numpy().view(np.complex64))
    with pytest.raises(sa.DimensionError, match="0-d"):
        xp.asarray(np.float32(1), device=mesh).view(np.int8)
    with pytest.raises(sa.DimensionError, match="itemsize"):
        xp.asarray(np.zeros((2, 3), np.float32), device=mesh).relayout({}).view(np.float64)
    with pytest.raises(sa.DTypeError, match=r"np\.asarray"):
        x.view(np.ndarray)
    assert x.view(type=xp.Array).dtype == x.dtype


# --------------------------------------------------------------------------------------------- orders


def _factor(draw, size: int) -> tuple:
    """A random shape of ``size`` elements (one entry -1 at times)."""
    parts, rest = [], size
    for _ in range(draw(st.integers(0, 3))):
        divs = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1, 2]
        d = draw(st.sampled_from(divs))
        parts.append(d)
        rest = rest // d if d else rest
    parts.append(rest if math.prod(parts) else 0 if size == 0 else rest)
    shape = tuple(draw(st.permutations(parts)))
    if math.prod(shape) != size:
        shape = (size,)
    if shape and math.prod(shape) and draw(st.booleans()):
        j = draw(st.integers(0, len(shape) - 1))
        shape = (*shape[:j], -1, *shape[j + 1 :])
    return shape


@fuzz(50, "FUZZ10_EXAMPLES")
@given(meshes(), st.data())
def test_reshape_ravel_orders_match_numpy(mesh, data):
    """``np.reshape``/``x.reshape`` with ``order`` C, F or A, ``np.ravel``/``x.flatten`` with C, F, A, K: NumPy's
    values, no allgather of the array."""
    a = data.draw(host(dtypes=("float64", "int8", "bool", "complex64", BF16), max_dims=3))
    x = data.draw(placed(a, mesh))
    with sa.comm_log() as log:
        if data.draw(st.booleans()):
            order = data.draw(st.sampled_from("CFA"))
            shape = _factor(data.draw, a.size)
            expected = np.reshape(a, shape, order=order)
            got = x.reshape(shape, order=order) if data.draw(st.booleans()) else np.reshape(x, shape, order=order)
        else:
            order = data.draw(st.sampled_from("CFAK"))
            expected = np.ravel(a, order=order)
            got = x.flatten(order) if data.draw(st.booleans()) else np.ravel(x, order=order)
    _same(got, expected)
    assert not _gathers(log, 0), log.records


def test_reshape_order_regressions():
    mesh = _mesh({"p": 3, "q": 2})
    a = np.arange(30.0).reshape(5, 6)
    x = xp.asarray(a, device=mesh)
    for shape in ((6, 5), (3, 10), (30,), (2, 15), (5, 3, 2), 30, (-1, 3)):
        for order in "CFA":
            _same(np.reshape(x, shape, order=order), np.reshape(a, shape, order=order))
    _same(x.reshape(3, 10, order="F"), a.reshape(3, 10, order="F"))
    with pytest.raises(sa.ArgumentError, match="'K'"):
        x.reshape(30, order="K")


# --------------------------------------------------------------------------------------------- ufunc.at


def test_add_at_float_into_int_refused_with_the_reason():
    """Kept refusal (documented in ``ufunc_at``): NumPy truncates every partial sum (per-step unsafe casts)."""
    x = xp.asarray(np.array([1, -3], np.int8), device=_mesh({"row": 2, "col": 2}))
    with pytest.raises(sa.DTypeError, match="truncate every partial sum"):
        np.add.at(x, [0, 0, 1], 0.5)
    assert x.tolist() == [1, -3]
    np.add.at(x, [0, 0, 1], np.int8(2))
    assert x.tolist() == [5, -1]
