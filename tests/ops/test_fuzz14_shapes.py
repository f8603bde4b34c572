"""A differential fuzz, against NumPy on the gathered value, of shape manipulation (round 14): *chains* of reshape
(-1, to and from 0-d and size 0), permute_dims/moveaxis/swapaxes/``.mT``, expand_dims/squeeze; flip and roll of
several axes (negative and huge shifts), tile, repeat (counts as NumPy arrays and lists too), broadcast_to/
broadcast_arrays, ``pad`` in every mode NumPy has, concat/stack/hstack/vstack/dstack/column_stack of several
operands of mixed dtypes and layouts, split/array_split/unstack; on the test meshes (1, 2x2, 4, 2x2x2, 3x2) with
uneven and empty blocks, through ``xp`` and NumPy's dispatch. Each case checks value, dtype and shape, that the
result stays positional, a typed ``sa`` error where NumPy raises, that no collective receives more than a small
constant times the largest block unless the op warned ``sa.GatherWarning``, and that the meta backend answers the
same shapes and dtypes (a meta mesh of the same shape and layout). Regressions of the bugs it found close the file.

``FUZZ14_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import fuzz
from hypothesis import given, note
from hypothesis import strategies as st
from test_fuzz9_traffic import block, logged, received
from test_fuzz11_manipulation import _blocks, _same, _size_one_axes
from test_fuzz14_indexing import _place, cases

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

# ruff: noqa: B023 (the lambdas given run() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ14_EXAMPLES"
PAD_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum", "reflect", "symmetric", "wrap")


#: a collective may receive this many times the largest block of the operands and the result, plus a few
#: elements from each device of its group (a reduction's candidates, counts)
SLACK, FEW = 2, 4


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def run(np_call, xp_call, *inputs, close: bool = False, traffic: bool = True):
    """NumPy's ``np_call()`` against ``xp_call()``: a typed ``sa`` error where NumPy raises, else the same value,
    dtype and shape, positional; no collective receiving more than ``SLACK`` times the largest block of ``inputs``
    and the result (plus ``FEW`` elements a device of its group) unless the op warned ``sa.GatherWarning``.
    ``close``: the values within a float tolerance (a mean computed in another order); ``traffic=False``: no
    bound (a sort's splitters, ``O(p)`` entries a device: the sort's own tests bound it)."""
    try:
        expected = _quiet(np_call)
    except Exception as e:
        with pytest.raises(sa.ShardArrayError):
            got = _quiet(xp_call)
            pytest.fail(f"NumPy raised {type(e).__name__}: {e}; the namespace gave {got!r:.300}")
        return None
    got, records, warned = logged(xp_call)
    if close:
        assert isinstance(got, xp.Array) and (got.shape, got.dtype) == (expected.shape, expected.dtype)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    else:
        _same(got, expected)
    if traffic and not warned:
        cap = SLACK * max(_blocks(list(inputs)) + _blocks(got) + [0])
        ones = _size_one_axes(inputs)
        big = [r for r in records if received(r) > cap + FEW * r.group_size and not set(r.axes) <= ones]
        assert not big, f"a collective receives more than {SLACK}x a block ({cap}) without a GatherWarning: {big}"
    return got


_META: dict = {}


def _meta_like(x):
    """A meta array of ``x``'s shape, dtype and layout on a meta mesh of ``x``'s mesh shape."""
    key = tuple(x.mesh.shape.items())
    if key not in _META:
        _META[key] = sa.Mesh(dict(x.mesh.shape), backend="meta")
    return as_kind(sa.zeros(_META[key], x.sizes, x.dtype, x.layout), xp.Array)


def _meta_same(fn, a, x) -> None:
    """``fn`` of a meta twin of ``x`` has NumPy's shape and dtype (where NumPy answers)."""
    try:
        want = fn(np, a)
    except (ValueError, TypeError, IndexError):
        return
    got = fn(xp, _meta_like(x))
    assert (got.shape, got.dtype) == (want.shape, want.dtype), (got.shape, got.dtype, want.shape, want.dtype)


def _axis(rng: np.random.Generator, nd: int) -> int:
    """An axis of an ``nd``-d array (negative at times, out of range rarely)."""
    if rng.integers(12) == 0:
        return [nd, -nd - 1][rng.integers(2)]
    return int(rng.integers(-nd, nd)) if nd else 0


def _step(rng: np.random.Generator, shape: tuple):
    """A random shape step for an array of ``shape``: (name, argument)."""
    nd, n = len(shape), math.prod(shape)
    kind = ["reshape", "reshape", "permute", "moveaxis", "swapaxes", "expand", "squeeze", "mT"][rng.integers(8)]
    if kind == "reshape":
        divs = [d for d in range(1, n + 1) if n % d == 0]
        opts = [(-1,), (n,), (1, -1), (-1, 1), (), (0, -1), (2, -1)]
        if divs:
            d = int(rng.choice(divs))
            opts += [(d, -1), (-1, d), (d, 1, -1), (1, d, n // d)]
        if n == 0:
            opts += [(0, 3), (3, 0, -1), (2, 0)]
        return kind, opts[rng.integers(len(opts))]
    if kind == "permute":
        return kind, tuple(int(v) for v in rng.permutation(nd))
    if kind in ("moveaxis", "swapaxes"):
        return kind, (_axis(rng, nd), _axis(rng, nd))
    if kind == "expand":
        return kind, int(rng.integers(-nd - 1, nd + 1))
    if kind == "squeeze":
        ones = tuple(k - nd * int(rng.integers(2)) for k in range(nd) if shape[k] == 1)
        return kind, ones if rng.integers(4) else _axis(rng, nd)
    return kind, None


def _apply(m, v, step):
    kind, arg = step
    if kind == "reshape":
        return m.reshape(v, arg)
    if kind == "permute":
        return m.permute_dims(v, arg) if m is xp else np.transpose(v, arg)
    if kind == "moveaxis":
        return m.moveaxis(v, *arg)
    if kind == "swapaxes":
        return np.swapaxes(v, *arg)
    if kind == "expand":
        return m.expand_dims(v, axis=arg) if m is xp else np.expand_dims(v, arg)
    if kind == "squeeze":
        return m.squeeze(v, arg) if m is xp else np.squeeze(v, arg)
    return v.mT


def _chain(m, v, steps):
    for s in steps:
        v = _apply(m, v, s)
    return v


# =============================================================================================== fuzzers


@fuzz(100, ENV)
@given(cases())
def test_fuzz_shape_chains(case):
    """Chains of 1 to 4 reshapes and axis moves, through ``xp`` and NumPy's dispatch, and on the meta backend."""
    _, rng, a, x = case
    steps, cur = [], a
    for _ in range(int(rng.integers(1, 5))):
        steps.append(_step(rng, cur.shape))
        try:
            cur = _apply(np, cur, steps[-1])
        except (ValueError, TypeError, IndexError):
            break
    note(repr(steps))
    run(lambda: _chain(np, a, steps), lambda: _chain(xp, x, steps), x)
    run(lambda: _chain(np, a, steps), lambda: _chain(np, x, steps), x)
    _meta_same(lambda m, v: _chain(m, v, steps), a, x)


@fuzz(100, ENV)
@given(cases(), st.sampled_from(("flip", "roll", "tile", "repeat", "broadcast")))
def test_fuzz_flip_roll_tile_repeat_broadcast(case, op):
    """flip and roll of several axes (negative and huge shifts; the named ``sa.roll``/``sa.flip`` too), tile,
    repeat (counts an int, an array, a NumPy array or a list), broadcast_to/broadcast_arrays; meta shapes."""
    mesh, rng, a, x = case
    nd = a.ndim
    if op == "flip":
        axis = None if not nd or rng.integers(3) == 0 else tuple(sorted({_axis(rng, nd) % max(nd, 1) for _ in "ab"}))
        run(lambda: np.flip(a, axis), lambda: xp.flip(x, axis=axis), x)
        _meta_same(lambda m, v: m.flip(v, axis=axis) if m is xp else np.flip(v, axis), a, x)
    elif op == "roll":
        huge = [-1, 1, -7, 2, 0, 5, 10**9 + 3, -(10**12) - 1]
        axes = tuple(int(v) for v in rng.integers(-nd, nd, int(rng.integers(1, 4)))) if nd else None
        shift = tuple(int(rng.choice(huge)) for _ in axes) if axes and rng.integers(2) else int(rng.choice(huge))
        note((shift, axes))
        run(lambda: np.roll(a, shift, axes), lambda: xp.roll(x, shift=shift, axis=axes), x)
        _meta_same(lambda m, v: m.roll(v, shift, axis=axes), a, x)
        if nd:
            named, k = as_kind(x, sa.ShardArray), int(rng.integers(nd))
            s = int(rng.choice(huge))
            y, _, _ = logged(lambda: sa.roll(named, named.dims[k], s))
            np.testing.assert_array_equal(y.numpy(), np.roll(a, s, k))
            np.testing.assert_array_equal(sa.flip(named, named.dims[k]).numpy(), np.flip(a, k))
    elif op == "tile":
        reps = tuple(int(v) for v in rng.integers(0, 3, int(rng.integers(0, 4))))
        run(lambda: np.tile(a, reps), lambda: xp.tile(x, reps), x)
        _meta_same(lambda m, v: m.tile(v, reps), a, x)
    elif op == "repeat":
        axis = None if not nd or rng.integers(3) == 0 else _axis(rng, nd)
        n = a.size if axis is None else (a.shape[axis] if -nd <= axis < nd else 1)
        counts = rng.integers(0, 3, n)
        r = [int(rng.integers(0, 3)), counts, counts.tolist(), xp.asarray(counts, device=mesh)][rng.integers(4)]
        run(lambda: np.repeat(a, counts if not isinstance(r, int) else r, axis), lambda: xp.repeat(x, r, axis=axis), x)
        if isinstance(r, int):
            _meta_same(lambda m, v: m.repeat(v, r, axis=axis), a, x)
    else:
        shape = tuple(int(v) for v in rng.choice([1, 2, 3, 0], int(rng.integers(0, 2))))
        shape += tuple(s if rng.integers(3) else (3 if s == 1 else s) for s in a.shape)
        run(lambda: np.broadcast_to(a, shape), lambda: xp.broadcast_to(x, shape), x)
        _meta_same(lambda m, v: m.broadcast_to(v, shape), a, x)
        b = rng.integers(-3, 4, shape).astype(np.float32)
        y = _place(rng, b, mesh, "y")
        run(lambda: np.broadcast_arrays(a, b), lambda: xp.broadcast_arrays(x, y), x, y)
        run(lambda: np.broadcast_arrays(a, b), lambda: np.broadcast_arrays(x, y), x, y)


@fuzz(100, ENV)
@given(cases(), st.sampled_from(PAD_MODES))
def test_fuzz_pad(case, mode):
    """``pad`` in every mode NumPy has (widths wider than the axis, per-axis pairs, the modes' keywords), through
    ``xp.pad`` and ``np.pad``; meta shapes."""
    _, rng, a, x = case
    if not a.ndim or (mode in ("maximum", "minimum") and a.dtype.kind == "c"):
        return  # (complex maximum/minimum: reported, _numpy_extras' _stat_row fills masked entries with True)
    w = [tuple(int(v) for v in rng.integers(0, 9, 2)) for _ in range(a.ndim)]
    width = w if rng.integers(3) else int(rng.integers(0, 4))
    kw = {}
    if mode == "constant" and rng.integers(2):
        low = 0 if a.dtype.kind in "ub" else -2  # (-2 into uint8: a CastError here, NumPy wraps; reported)
        kw["constant_values"] = int(rng.integers(low, 3)) if rng.integers(2) else (1, 2)
    if mode in ("reflect", "symmetric") and rng.integers(2) and a.dtype != bool:  # (bool: reported, not ours)
        kw["reflect_type"] = "odd"
    if mode in ("maximum", "minimum", "mean", "median") and rng.integers(2):
        kw["stat_length"] = int(rng.integers(1, 4))
    if mode == "linear_ramp" and rng.integers(2):
        kw["end_values"] = (int(rng.integers(-3, 3)), 5)
    note((width, kw))
    close = mode in ("mean", "linear_ramp") and a.dtype.kind in "fc"  # (a float mean may differ in the last bit)
    sort = mode == "median"  # (a sample sort of the edge slab: its splitters are O(p) a device)
    run(
        lambda: np.pad(a, width, mode, **kw),
        lambda: xp.pad(x, width, mode=mode, **kw),
        x,
        close=close,
        traffic=not sort,
    )
    run(lambda: np.pad(a, width, mode, **kw), lambda: np.pad(x, width, mode, **kw), x, close=close, traffic=not sort)
    if mode in ("constant", "edge", "wrap", "reflect", "symmetric") and not kw:
        _meta_same(lambda m, v: m.pad(v, width, mode=mode) if m is xp else np.pad(v, width, mode), a, x)


@fuzz(100, ENV)
@given(cases(max_dims=2), st.integers(1, 3))
def test_fuzz_join_and_split(case, count):
    """concat/stack/hstack/vstack/dstack/column_stack of several operands (mixed dtypes and layouts, one size
    differing along the axis), split/array_split (counts and indices, negative and past the end), unstack."""
    mesh, rng, a, x = case
    nd = a.ndim
    axis = _axis(rng, max(nd, 1))
    hosts, arrays = [a], [x]
    for _ in range(count):
        shape = list(a.shape)
        if nd and -nd <= axis < nd and rng.integers(2):
            shape[axis] = int(rng.choice((0, 1, 2, 3, 5)))
        b = rng.integers(-3, 4, shape).astype(["float32", "int8", "bool", "complex64", "int64"][rng.integers(5)])
        hosts.append(b)
        arrays.append(_place(rng, b, mesh, "y"))
    note(([h.shape for h in hosts], [h.dtype for h in hosts], axis))
    run(lambda: np.concatenate(hosts, axis), lambda: xp.concat(arrays, axis=axis), *arrays)
    run(lambda: np.concatenate(hosts, None), lambda: xp.concat(arrays, axis=None), *arrays)
    run(lambda: np.stack(hosts, axis), lambda: xp.stack(arrays, axis=axis), *arrays)
    for f in (np.hstack, np.vstack, np.dstack, np.column_stack):
        run(lambda: f(hosts), lambda: f(arrays), *arrays)
    if nd:
        ids = sorted(int(v) for v in rng.integers(-8, 9, int(rng.integers(0, 4))))
        for ind in (count + 1, ids):
            run(lambda: np.split(a, ind, axis), lambda: np.split(x, ind, axis), x)
            run(lambda: np.array_split(a, ind, axis), lambda: np.array_split(x, ind, axis), x)
        run(lambda: np.unstack(a, axis=axis), lambda: xp.unstack(x, axis=axis), x)


# =============================================================================================== traffic


@pytest.mark.parametrize("shift", [1, -3, 10**9 + 7, -(10**12)])
def test_roll_and_reverse_of_split_axes_move_about_a_block(shift):
    """``xp.roll`` of two split axes and ``x[::-1]`` move at most about a block per device (no gather)."""
    mesh = _mesh({"a": 2, "b": 2, "c": 2})
    a = np.arange(13 * 6 * 2, dtype=np.float64).reshape(13, 6, 2)
    x = as_kind(sa.asarray(a, dims=("i", "j", "k"), mesh=mesh, layout={"i": ("a", "b"), "j": "c"}), xp.Array)
    for fn, want in ((lambda: xp.roll(x, (shift, shift), axis=(0, 1)), np.roll(a, (shift, shift), (0, 1))),
                     (lambda: x[::-1, ::-2], a[::-1, ::-2])):  # fmt: skip
        y, recs, warned = logged(fn)
        np.testing.assert_array_equal(y.numpy(), want)
        assert isinstance(y, xp.Array) and not warned
        assert max((received(r) for r in recs), default=0) <= 2 * block(x), recs


# =============================================================================================== regressions


@pytest.mark.parametrize("counts", [np.array([1, 0, 2]), [2, 1, 0], (0, 0, 3)])
def test_repeat_takes_host_counts_as_numpy(counts):
    """``xp.repeat(x, np.array([1, 0, 2]), axis=1)`` raised ``ArgumentError`` (repeats must be an integer): an
    array of counts was taken only as a shardarray array; a NumPy array, list or tuple of counts is read as
    NumPy reads it now (they are host values already)."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(6).reshape(2, 3)
    x = as_kind(sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"j": "col"}), xp.Array)
    y = xp.repeat(x, counts, axis=1)
    assert isinstance(y, xp.Array)
    np.testing.assert_array_equal(y.numpy(), np.repeat(a, counts, axis=1))
    with pytest.raises(sa.DimensionError):
        xp.repeat(x, [1, 2], axis=1)
    with pytest.raises(sa.ArgumentError):
        xp.repeat(x, [1, -1, 0], axis=1)


def test_unstack_of_a_split_size_one_axis():
    """``xp.unstack`` of a size-1 axis split over a mesh axis raised ``LayoutError`` (the axis freed by the slice
    was given to the largest remaining axis, which the slice had given it already)."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    a = np.arange(7).reshape(7, 1)
    x = as_kind(sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"j": "x"}), xp.Array)
    (y,) = xp.unstack(x, axis=-1)
    np.testing.assert_array_equal(y.numpy(), a[:, 0])


def test_squeeze_of_a_zero_d_array_takes_axis_zero_as_numpy():
    """``np.squeeze(x, 0)`` of a 0-d array is the array in NumPy (its legacy reading of a 0-d array's axis); here
    it raised ``OutOfBoundsError``. A tuple, or another axis, is out of bounds, as in NumPy."""
    x = xp.asarray(np.float32(3.0), device=_mesh({"row": 2, "col": 2}))
    for axis in (0, -1):
        y = xp.squeeze(x, axis)
        assert isinstance(y, xp.Array) and y.shape == () and float(np.squeeze(x, axis)) == 3.0
    for axis in ((0,), 1):
        with pytest.raises(sa.OutOfBoundsError):
            xp.squeeze(x, axis)
