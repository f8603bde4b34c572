"""A differential fuzz, against NumPy on the gathered value, of positional indexing (round 14): ``x[key]``,
``x[key] = v`` and ``np.add.at`` for keys mixing ints (negative, out of range), slices (negative steps, bounds out
of range), ``None``, Ellipsis, integer arrays (host, lists, split positional arrays; broadcast together, separated
by slices: NumPy puts their axes first), boolean masks (full and partial) and 0-d booleans *beside integer arrays*
(NumPy's ids ``[0]``/``[]`` of a new axis of length 1), writes with integer arrays *and* slices, values of other
dtypes (host lists converted as NumPy converts them: out of range is a typed ``sa.CastError``) and repeated
indices (the last write wins, as NumPy's); ``take``, ``take_along_axis`` and ``np.put_along_axis``; on the test
meshes (1, 2x2, 4, 2x2x2, 3x2) with uneven and empty blocks. Each case checks value, dtype and shape, a typed
``sa.ShardArrayError`` where NumPy raises, and that no collective receives more than a few blocks unless the op
warned ``sa.GatherWarning``. Regressions of the bugs this round found close the file.

``FUZZ14_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import random_layout
from hypothesis import given, note
from hypothesis import strategies as st
from test_fuzz11_indexing import _largest, differential, logged, no_big, same

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ14_EXAMPLES"
DTYPES = ("float64", "float32", "int64", "int32", "int8", "uint8", "bool", "complex64")
SIDES = (0, 1, 2, 3, 5, 7)


# --------------------------------------------------------------------------------------------- data


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    v = rng.integers(-3, 4, math.prod(shape))
    if np.dtype(dtype).kind == "u":
        v = np.abs(v)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.integers(-3, 4, v.size)
    return v.astype(dtype).reshape(shape)


def _place(rng: np.random.Generator, a: np.ndarray, mesh, prefix: str = "dim"):
    """``a`` as a positional array on ``mesh`` in a random layout (``xp.asarray``'s own when 0-d)."""
    if a.ndim == 0:
        return xp.asarray(a, device=mesh)
    dims = tuple(f"{prefix}{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=random_layout(rng, mesh, dims)), xp.Array)


def _form(rng: np.random.Generator, a: np.ndarray, mesh):
    """An index array as a host array, a list or a split positional array."""
    c = rng.integers(4)
    if c == 0:
        return _place(rng, a, mesh, "ix")
    return a.tolist() if c == 1 else a


def _key(rng: np.random.Generator, shape: tuple, mesh) -> tuple:
    """A random positional key of ints, slices, None, Ellipsis, integer arrays, masks of 1 or more axes and 0-d
    booleans (anywhere, also beside integer arrays)."""
    nd, parts, k, dots = len(shape), [], 0, False
    while k < nd or (rng.integers(4) == 0 and len(parts) < nd + 2):
        c = int(rng.integers(0, 10))
        if c == 0 and not dots:
            parts.append(Ellipsis)
            dots = True
            k = nd if rng.integers(2) else k + 1
            continue
        if c == 1:
            parts.append(None)
            continue
        if c == 2:
            parts.append([True, False, np.True_, np.False_, np.array(True)][rng.integers(5)])
            continue
        if k >= nd:
            break
        n = shape[k]
        if c in (3, 4):
            lo, hi = (int(rng.integers(-n - 3, n + 4)) if rng.integers(3) else None for _ in range(2))
            parts.append(slice(lo, hi, [None, 1, 2, 3, -1, -2, -3][rng.integers(7)]))
        elif c == 5:
            parts.append(int(rng.integers(-n - (rng.integers(12) == 0), max(n, 1) + (rng.integers(12) == 0))))
        elif c in (6, 7):
            ids_shape = tuple(int(v) for v in rng.integers(0, 4, int(rng.integers(0, 3))))
            ids = rng.integers(-n, max(n, 1), ids_shape) if n else np.zeros(ids_shape, np.int64)
            parts.append(_form(rng, ids.astype(["int64", "int32", "int8"][rng.integers(3)]), mesh))
        else:
            m = int(rng.integers(1, nd - k + 1))
            mask = rng.random(shape[k : k + m]) < [0.0, 0.5, 1.0][rng.integers(3)]
            parts.append(_form(rng, mask, mesh))
            k += m
            continue
        k += 1
    return parts[0] if len(parts) == 1 and rng.integers(3) == 0 else tuple(parts)


def _host(k):
    """A key with its arrays as NumPy's (lists stay lists: NumPy reads ``[]`` and ``[[]]`` as integer ids)."""
    if isinstance(k, tuple):
        return tuple(_host(i) for i in k)
    return k.numpy() if isinstance(k, sa.ShardArray) else k


@st.composite
def cases(draw, max_dims: int = 3):
    """``(mesh, rng, a, x)``: a NumPy array and the same as a positional array in a random layout."""
    mesh = draw(meshes())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = tuple(int(rng.choice(SIDES)) for _ in range(int(rng.integers(0, max_dims + 1))))
    a = _values(rng, shape, str(rng.choice(DTYPES)))
    return mesh, rng, a, _place(rng, a, mesh)


def _value(rng: np.random.Generator, sel: tuple, mesh, dtype: str):
    """``(host, ours)``: a value of a write to a selection of shape ``sel``: a scalar (Python or NumPy), a host
    array or list broadcasting to it (size-1 axes; extra leading ones, which NumPy takes or not by the kind of
    key and this package always drops, are test_fuzz11's), or a split positional array."""
    c = int(rng.integers(5))
    if c == 0:  # (a Python scalar; NumPy's integer scalars out of range: see the report of dtypes.scalar_for_write)
        v = _values(rng, (), dtype)[()].item()
        return v, v
    shape = tuple(1 if rng.integers(4) == 0 else s for s in sel[int(rng.integers(0, len(sel) + 1)) :])
    v = _values(rng, shape, dtype)
    if c == 1:
        return v, _place(rng, v, mesh, "v")
    return (v.tolist(), v.tolist()) if c == 2 and v.size else (v, v)  # (an empty list is float64)


def _copy(x):
    return xp.asarray(x, copy=True)


# =============================================================================================== fuzzers


@fuzz(150, ENV)
@given(cases())
def test_fuzz_getitem(case):
    """``x[key]``: value, dtype, shape, typed errors, traffic."""
    mesh, rng, a, x = case
    key = _key(rng, a.shape, mesh)
    note(repr(key))
    differential(lambda: a[_host(key)], lambda: x[key], [x, key], key)


@fuzz(150, ENV)
@given(cases(), st.sampled_from(("set", "add")))
def test_fuzz_setitem_and_add_at(case, mode):
    """``x[key] = v`` and ``np.add.at(x, key, v)``: values of other dtypes and shapes, repeated indices."""
    mesh, rng, a, x = case
    key = _key(rng, a.shape, mesh)
    note(repr(key))
    hk = _host(key)
    try:
        sel = a[hk].shape
    except (IndexError, ValueError, TypeError):
        sel = ()
    if mode == "add" and a.dtype.kind in "bu":
        return  # (add.at of bools is logical_or; of unsigned ints NumPy wraps -1 silently: test_fuzz11's)
    # (add.at refuses values that do not cast to x's dtype by same_kind, documented: NumPy truncates silently)
    hv, v = _value(rng, sel, mesh, str(rng.choice(DTYPES)) if mode == "set" else a.dtype.name)
    note(f"value {v!r:.200}")
    if np.iscomplexobj(np.asarray(hv)) and a.dtype.kind != "c":
        hv = np.real(hv)  # (a complex value into a real array is a documented DTypeError, NumPy's a warning)
        v = xp.real(v) if isinstance(v, sa.ShardArray) else hv

    def expected():
        b = a.copy()
        if mode == "set":
            b[hk] = hv
        else:  # (the value broadcast first: NumPy 2.4's add.at of a broadcast int8 value adds garbage)
            np.add.at(b, hk, np.broadcast_to(np.asarray(hv), sel).copy())
        return b

    def ours():
        y = _copy(x)
        if mode == "set":
            y[key] = v
        else:
            np.add.at(y, key, v)
        return y

    differential(expected, ours, [x, key, v], (key, mode))


@fuzz(100, ENV)
@given(cases(), st.sampled_from(("take", "np.take", "take_along_axis", "put_along_axis")))
def test_fuzz_take_and_along_axis(case, op):
    """``xp.take``/``np.take`` (indices of any shape, axis None), ``take_along_axis`` and ``np.put_along_axis``
    (indices broadcasting over the other axes, repeated ids: the last write wins)."""
    mesh, rng, a, x = case
    nd = a.ndim
    axis = int(rng.integers(-nd, nd)) if nd else None
    if op in ("take", "np.take"):
        if op == "np.take" and rng.integers(3) == 0:
            axis = None
        n = a.size if axis is None else a.shape[axis]
        shape = (int(rng.integers(0, 4)),) if op == "take" else tuple(int(v) for v in rng.integers(0, 3, 2))
        ids = rng.integers(-n - (rng.integers(8) == 0), max(n, 1), shape)
        i = _place(rng, ids, mesh, "ix")
        if op == "take" and (axis is not None or nd == 1):
            differential(lambda: np.take(a, ids, axis), lambda: xp.take(x, i, axis=axis), [x, i], op)
        elif op == "np.take":
            differential(lambda: np.take(a, ids, axis), lambda: np.take(x, i, axis), [x, i], op)
        return
    if not nd:
        return
    shape = [s if rng.integers(4) else 1 for s in a.shape]
    shape[axis] = int(rng.integers(0, 4))
    n = a.shape[axis]
    ids = rng.integers(-n, n, shape) if n else np.zeros(shape, np.int64)
    i = _place(rng, ids, mesh, "ix")
    if op == "take_along_axis":
        differential(lambda: np.take_along_axis(a, ids, axis), lambda: xp.take_along_axis(x, i, axis=axis), [x, i], op)
        return
    k = axis % nd
    grid = np.broadcast_shapes(a.shape[:k] + (1,) + a.shape[k + 1 :], ids.shape)  # (NumPy's index shape)
    v = _values(rng, tuple(s if rng.integers(3) else 1 for s in grid), "int8")
    hv, ours_v = (v, _place(rng, v, mesh, "v")) if rng.integers(3) else (-2, -2)
    if rng.integers(4) == 0:  # axis None: 1-D ids into the flattened array
        axis, hv, ours_v = None, 3, 3
        ids = rng.integers(-a.size, max(a.size, 1), 4) if a.size else np.zeros(0, np.int64)
        i = _place(rng, ids, mesh, "ix")

    note((a.shape, x.layout, ids.shape, i.layout, axis, np.shape(hv), getattr(ours_v, "layout", None)))

    def expected():
        b = a.copy()
        np.put_along_axis(b, ids, hv, axis)
        return b

    def ours():
        y = _copy(x)
        assert np.put_along_axis(y, i, ours_v, axis) is None
        return y

    differential(expected, ours, [x, i, ours_v], (op, axis))


# =============================================================================================== regressions


def _x(shape, layout=None, dtype="float64", mesh=None):
    a = np.arange(math.prod(shape)).astype(dtype).reshape(shape)
    mesh = mesh or _mesh({"row": 2, "col": 2})
    dims = tuple(f"dim{k}" for k in range(len(shape)))
    return a, as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=layout or {}), xp.Array)


@pytest.mark.parametrize(
    "key",
    [(True, []), ([0, 1], True), ([0, 2], slice(None), True), ([[0], [1]], False), (0, slice(1, None), True, [1])],
)
def test_zero_d_booleans_beside_integer_arrays_index_a_new_axis_as_numpy(key):
    """A 0-d boolean beside integer arrays is NumPy's ids ``[0]`` (True) or ``[]`` (False) of a new axis of length
    1: ``x[True, []]`` of a (5,) array is (0,) in NumPy and was (1, 0) here (a list was not seen as an array and
    the boolean's axis was added on its own); the writes raised ``ArgumentError`` (not supported)."""
    a, x = _x((3, 4, 2), {"dim0": ("row",), "dim1": ("col",)})
    same(x[key], a[key])
    b, y = a.copy(), _copy(x)
    v = np.arange(b[key].size, dtype=float).reshape(b[key].shape) + 100
    b[key], y[key] = v, v
    same(y, b)
    b, y = a.copy(), _copy(x)
    np.add.at(b, key, 1.0)
    np.add.at(y, key, 1.0)
    same(y, b)


@pytest.mark.parametrize(
    "key", [([0, 2, 2], slice(1, 3)), (slice(None, None, -1), [1, 3], 1), ([0, 1], slice(3, 0, -2), [[1], [0]])]
)
def test_integer_arrays_with_slices_write_as_numpy(key):
    """``x[ids, a:b] = v`` raised ``ArgumentError`` (integer arrays with slices other than ':' were not supported
    for writing): the slices' positions are ids too now, broadcast against the arrays; repeated ids keep the
    last value, and ``np.add.at`` adds every one."""
    a, x = _x((3, 4, 2), {"dim0": ("row",), "dim1": ("col",)})
    v = np.arange(a[key].size, dtype=float).reshape(a[key].shape) + 100
    for mode in ("set", "add"):
        b, y = a.copy(), _copy(x)
        if mode == "set":
            b[key], y[key] = v, xp.asarray(v, device=x.mesh)
        else:
            np.add.at(b, key, v)
            np.add.at(y, key, xp.asarray(v, device=x.mesh))
        same(y, b)


def test_a_zero_d_boolean_write_with_an_int_out_of_range_is_a_typed_error():
    """``x[..., 3, True, False, 0] = 1`` of a (2, 7, 0) array raised NumPy's raw IndexError (from the shape
    arithmetic of the selection), not ``sa.OutOfBoundsError``."""
    _, x = _x((2, 7, 0), {"dim0": ("row",)})
    with pytest.raises(sa.OutOfBoundsError):
        x[..., 3, True, False, 0] = 1


def test_integer_arrays_broadcasting_to_nothing_read_no_id():
    """Index arrays that broadcast to an empty shape select nothing, so NumPy checks none of their ids:
    ``x[[0], 2::-1, np.zeros((1, 0), int)]`` of a (0, 3, 5) array is empty; here it raised ``OutOfBoundsError``
    (each array was range-checked before the broadcast). An int beside them is still checked, as in NumPy."""
    a, x = _x((0, 3, 5), {"dim0": ("col",), "dim1": ("row",)})
    key = (np.array([0]), slice(2, None, -1), np.zeros((1, 0), np.int64))
    same(x[key], a[key])
    y = _copy(x)
    y[key] = 1.0
    same(y, a)
    with pytest.raises(sa.OutOfBoundsError):
        x[np.zeros(0, np.int64), :, 5]


def test_a_host_list_value_converts_to_the_dtype_as_numpy():
    """``x[...] = [1, -2]`` into uint8 wrapped -2 to 254 silently; NumPy converts the list to the array's dtype
    and raises OverflowError (here ``sa.CastError``, an OverflowError too); floats in a list truncate."""
    _, x = _x((2,), {"dim0": ("row",)}, "uint8")
    with pytest.raises(OverflowError):
        x[...] = [1, -2]
    with pytest.raises(sa.CastError):
        x[[0, 1]] = [1, 300]
    x[:] = [1.7, 2.2]
    same(x, np.array([1, 2], np.uint8))


def test_np_put_along_axis_dispatches():
    """``np.put_along_axis`` on an Array raised NumPy's TypeError (no implementation found)."""
    a, x = _x((3, 4), {"dim0": ("row",), "dim1": ("col",)})
    ids = np.array([[0, 3], [1, 1], [2, 0]])
    i = xp.asarray(ids, device=x.mesh)
    np.put_along_axis(a, ids, [[7.0], [8.0], [9.0]], 1)
    np.put_along_axis(x, i, [[7.0], [8.0], [9.0]], 1)
    same(x, a)
    with pytest.raises(sa.DTypeError):
        np.put_along_axis(x, ids, 1.0, 1)  # (a NumPy array operand: the explicit conversion named)
    with pytest.raises(sa.DimensionError):
        np.put_along_axis(x, xp.asarray([0, 1], device=x.mesh), 1.0, 1)


def test_a_reversed_read_and_write_move_about_a_block():
    """``x[::-1]`` and ``x[::-1] = v`` of a split axis move at most about a block per device."""
    a, x = _x((40, 3), {"dim0": ("row", "col")})
    got, recs, warned = logged(lambda: x[::-1])
    same(got, a[::-1])
    no_big(recs, warned, [_largest(x)], "x[::-1]")
    y = _copy(x)
    _, recs, warned = logged(lambda: y.__setitem__(slice(None, None, -1), x))
    same(y, a[::-1])
    no_big(recs, warned, [_largest(x)], "x[::-1] = x")


def test_take_reads_no_id_when_a_leading_axis_is_empty():
    """``np.take(x, [5], axis=1)`` of a (0, 3) array is an empty (0, 1) array in NumPy (its loop over the leading
    entries reads no id); here it raised ``OutOfBoundsError``. NumPy checks the ids when the leading axes are not
    empty, even if a trailing one is: so does this package."""
    a, x = _x((0, 3), {"dim1": ("row", "col")})
    same(np.take(x, xp.asarray([5, 1], device=x.mesh), axis=1), np.take(a, [5, 1], axis=1))
    same(xp.take(x, xp.asarray([5], device=x.mesh), axis=1), np.take(a, [5], axis=1))
    _, z = _x((3, 0, 0), {"dim0": ("row",)})
    with pytest.raises(sa.OutOfBoundsError):  # (ids made on a GPU are checked there, found at the next read)
        np.take(z, xp.asarray([0], device=z.mesh), axis=1).numpy()


@pytest.mark.parametrize(
    "key",
    [
        np.zeros((0, 3), bool),
        np.zeros((4, 0), bool),
        np.zeros(0, bool),
        (slice(None), np.zeros(0, bool)),
        (None, [], np.zeros(0, bool)),
    ],
)
def test_a_mask_axis_of_length_zero_matches_any_axis(key):
    """A boolean mask with an axis of length 0 selects nothing and NumPy lets it stand for an axis of any length
    (``x[:, np.zeros(0, bool)]`` of a (4, 3, 2) array is (4, 0, 2)); here it raised ``IndexingError``."""
    a, x = _x((4, 3, 2), {"dim0": ("row",), "dim2": ("col",)})
    same(x[key], a[key])
    b, y = a.copy(), _copy(x)
    b[key], y[key] = 5.0, 5.0
    same(y, b)


def test_a_write_through_differently_laid_out_coordinates_gathers_nothing():
    """``np.put_along_axis`` of ids split over (p, q) along their first axis into an array split over (q, p) along
    the written axis allgathered the ids silently (the coordinates of the open grid were moved to the layout of
    the first one, replicated); they all move to the best kept layout now (an alltoallv, no gather)."""
    mesh = _mesh({"p": 3, "q": 2})
    a, x = _x((3, 5, 5), {"dim2": ("q", "p")}, "int64", mesh)
    ids = np.random.default_rng(0).integers(0, 5, (3, 5, 3))
    i = as_kind(sa.asarray(ids, dims=("i", "j", "k"), mesh=mesh, layout={"i": ("p", "q")}), xp.Array)
    grid = (np.arange(3).reshape(3, 1, 1), np.arange(5).reshape(1, 5, 1))
    _, recs, warned = logged(lambda: x.__setitem__((*grid, i), -2))  # (np.put_along_axis's write)
    a[(*grid, ids)] = -2
    same(x, a)
    assert not warned and not [r for r in recs if r.op == "allgather"], recs
    np.put_along_axis(x, i, 7, -1)
    np.put_along_axis(a, ids, 7, -1)
    same(x, a)


def test_an_empty_selection_by_several_arrays_moves_nothing():
    """Index arrays broadcasting to an empty shape merged the indexed axes of ``x`` first (a relayout of the whole
    array, 61 of its 70 entries received at once on a 2x2x2 mesh); an empty result moves nothing now."""
    a, x = _x((2, 7, 5), {"dim0": ("x",), "dim1": ("y", "z")}, mesh=_mesh({"x": 2, "y": 2, "z": 2}))
    key = ([], [], [[], [], []])
    got, recs, _ = logged(lambda: x[key])
    same(got, a[key])
    assert recs == [], recs


@pytest.mark.parametrize("layout", [{}, {"j": "row", "k": "col"}, {"i": ("col", "row")}])
def test_named_writes_take_ids_beside_ints_and_slices(layout):
    """``x[{"j": ids, "k": slice(4, 0, -2), "i": 1}] = v`` raised ``ArgumentError`` (id arrays together with ints
    or slices were not supported in a named write), though ``x.isel`` reads that selection: an int drops its dim,
    a slice keeps it, and the value is matched by name; repeated ids keep the last value, as NumPy's."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(60.0).reshape(3, 4, 5)
    x = sa.asarray(a, dims=("i", "j", "k"), mesh=mesh, layout=layout)
    ids = sa.asarray(np.array([3, 0, 3]), dims=("q",), mesh=mesh, layout={"q": "col"})
    key = {"j": ids, "k": slice(4, 0, -2), "i": 1}
    assert x.isel(key).sizes == {"q": 3, "k": 2}
    x[key] = -1.0
    a[1][np.ix_([3, 0, 3], [4, 2])] = -1.0
    np.testing.assert_array_equal(x.numpy(), a)
    v = np.arange(6.0).reshape(2, 3)
    x[{**key, "i": -1}] = sa.asarray(v, dims=("k", "q"), mesh=mesh)
    a[2][np.ix_([3, 0, 3], [4, 2])] = v.T
    np.testing.assert_array_equal(x.numpy(), a)
