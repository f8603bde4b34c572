"""A differential fuzz, against NumPy on the gathered value, of manipulation and creation (round 11): on random
meshes (1, 2x2, 4, 2x2x2, 3x2) and layouts with uneven and empty blocks, the positional namespace and NumPy's
dispatch of ``reshape`` (-1, 0-size, ``copy=``), ``flatten``/``ravel``, ``moveaxis``/``permute_dims``/``swapaxes``,
``squeeze``/``expand_dims``, ``broadcast_to``/``broadcast_arrays``, ``flip``, ``roll`` (shift tuples, axis None),
``tile``, ``repeat`` (array counts, axis None), ``concat``/``stack``/``hstack``/``vstack``/``dstack``/
``column_stack``/``block`` of mixed dtypes (NumPy 2 promotion) and layouts, ``split``/``array_split``/``unstack``,
``atleast_*d``, ``tril``/``triu``, ``rot90``, ``trim_zeros``, ``resize``, and the creation functions (``arange``,
``linspace``, ``eye``, ``tri``, ``identity``, ``meshgrid``, ``full``/``full_like``, ``*_like`` keeping the layout,
``asarray(copy=)``). Each case checks value, dtype and shape, that NumPy's errors are typed ``sa`` errors here, and
that no collective receives more than a small constant times the largest block of the operands and the result
unless the op warned ``sa.GatherWarning``. The traffic fuzz checks the block-sized algorithms of ``roll``/``flip``/
``pad``/``repeat`` along a split dim (one ``alltoallv``, no gather). Regressions of the bugs it found close the file.

``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from gradcheck import check_grad
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz9_traffic import block, logged, received

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.layout import block_bounds

# ruff: noqa: B023 (the lambdas given run() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ11_EXAMPLES"
DTYPES = ("float64", "float32", "int64", "int32", "int8", "uint8", "bool", "complex64")
SIDES = (0, 1, 2, 3, 5, 7)
#: a collective may receive this many times the largest block of the operands and the result, plus a few elements
SLACK = 2
FEW = 8


# --------------------------------------------------------------------------------------------- data


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Small integers (exact in every dtype; zeros often, for trim_zeros), complex with an imaginary part."""
    n = math.prod(shape)
    v = rng.integers(-3, 4, n)
    if np.dtype(dtype).kind == "u":
        v = np.abs(v)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.integers(-3, 4, n)
    return v.astype(dtype).reshape(shape)


@st.composite
def host(draw, shape=None, min_dims=0, max_dims=3, dtypes=DTYPES):
    if shape is None:
        shape = tuple(draw(st.sampled_from(SIDES)) for _ in range(draw(st.integers(min_dims, max_dims))))
    return _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, draw(st.sampled_from(dtypes)))


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout (``xp.asarray``'s own when 0-d)."""
    if a.ndim == 0:
        return xp.asarray(a, device=mesh)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), xp.Array)


@st.composite
def pair(draw, mesh, **kw):
    a = draw(host(**kw))
    return draw(placed(a, mesh)), a


def axis_of(draw, ndim: int, none: bool = False):
    """An axis of an ``ndim``-d array (negative at times, out of range rarely, None where ``none``)."""
    choices = list(range(-ndim, ndim)) + ([None] if none else [])
    if draw(st.integers(0, 15)) == 0:
        choices = [ndim, -ndim - 1]
    return draw(st.sampled_from(choices))


# --------------------------------------------------------------------------------------------- checks


def _blocks(v) -> list[int]:
    if isinstance(v, (list, tuple)):
        return [b for item in v for b in _blocks(item)]
    return [block(v)] if isinstance(v, sa.ShardArray) else []


def _size_one_axes(inputs) -> set:
    """The mesh axes splitting a size-1 dim of an input: ``squeeze`` unsplits such a dim (its documented
    allgather over them, replicating the one device's block that holds it), exempt from the block bound."""
    return {a for x in inputs for d, own in zip(x.dims, x.spec.axes) if x.sizes[d] == 1 for a in own}


def _same(got, expected) -> None:
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(expected), (type(got), got)
        for g, e in zip(got, expected):
            _same(g, e)
        return
    assert isinstance(got, xp.Array), type(got)
    g, e = got.numpy(), np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    np.testing.assert_array_equal(g, e)


def run(np_call, xp_call, *inputs, refusal: bool = False):
    """NumPy's ``np_call()`` against ``xp_call()``: a typed ``sa`` error where NumPy raises, else the same value,
    dtype and shape; and no collective receiving more than ``SLACK`` times the largest block of ``inputs`` and the
    result unless the op warned ``sa.GatherWarning``. ``refusal``: a documented limitation may be a typed error."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = np_call()
    except Exception as e:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = xp_call()
        except sa.ShardArrayError:
            return None
        raise AssertionError(f"NumPy raised {type(e).__name__}: {e}; the namespace gave {got!r:.300}") from None
    try:
        got, records, warned = logged(xp_call)
    except sa.ShardArrayError:
        if refusal:
            return None
        raise
    _same(got, expected)
    if not warned:
        cap = SLACK * max(_blocks(list(inputs)) + _blocks(got) + [0]) + FEW
        ones = _size_one_axes(inputs)
        big = [r for r in records if received(r) > cap and not set(r.axes) <= ones]
        assert not big, f"a collective receives more than {SLACK}x a block ({cap}) without a GatherWarning: {big}"
    return got


# ============================================================================================= shapes


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_reshape_and_axes(data):
    """reshape (-1, 0-size, copy=), flatten/ravel, moveaxis/swapaxes/permute_dims, squeeze/expand_dims."""
    mesh = data.draw(meshes())
    x, a = data.draw(pair(mesh))
    nd = a.ndim
    op = data.draw(st.sampled_from(("reshape", "ravel", "moveaxis", "permute", "squeeze", "expand")))
    if op == "reshape":
        shape = data.draw(st.sampled_from([(-1,), (a.size,), (1, -1), (-1, 1), (0, -1), (2, -1), (-1, 3), (-1, -1)]))
        copy = data.draw(st.sampled_from((None, True, False)))
        y = run(lambda: np.reshape(a, shape, copy=copy), lambda: xp.reshape(x, shape, copy=copy), x)
        if y is not None and copy is False and y.size:  # (copy=False: a view; NumPy's never copies)
            assert np.array_equal(y.numpy().ravel(), a.ravel())
    elif op == "ravel":
        order = data.draw(st.sampled_from(("C", "F")))
        run(lambda: np.ravel(a, order=order), lambda: np.ravel(x, order=order), x)
        run(lambda: a.flatten(), lambda: x.flatten(), x)
    elif op == "moveaxis" and nd:
        s, d = axis_of(data.draw, nd), axis_of(data.draw, nd)
        run(lambda: np.moveaxis(a, s, d), lambda: xp.moveaxis(x, s, d), x)
        run(lambda: np.swapaxes(a, s, d), lambda: np.swapaxes(x, s, d), x)
    elif op == "permute":
        perm = tuple(data.draw(st.permutations(range(nd))))
        run(lambda: np.transpose(a, perm), lambda: xp.permute_dims(x, perm), x)
    elif op == "squeeze" and nd:
        ones = tuple(k - nd * data.draw(st.booleans()) for k in range(nd) if a.shape[k] == 1)
        run(lambda: np.squeeze(a, ones), lambda: xp.squeeze(x, ones), x)
        run(lambda: np.squeeze(a, axis_of(data.draw, nd)), lambda: xp.squeeze(x, axis_of(data.draw, nd)), x)
    else:
        e = data.draw(st.integers(-nd - 2, nd + 1))
        run(lambda: np.expand_dims(a, e), lambda: xp.expand_dims(x, axis=e), x)
        run(lambda: np.expand_dims(a, (0, -1)), lambda: xp.expand_dims(x, axis=(0, -1)), x)


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_flip_roll_tile_repeat(data):
    """flip (None, tuple, negative), roll (shift tuples, axis None: NumPy flattens), tile, repeat (ints, arrays of
    counts, axis None), split/array_split/unstack."""
    mesh = data.draw(meshes())
    x, a = data.draw(pair(mesh))
    nd = a.ndim
    op = data.draw(st.sampled_from(("flip", "roll", "tile", "repeat", "split")))
    if op == "flip":
        ax = data.draw(st.sampled_from([None, *range(-nd, nd), tuple(sorted({0, nd - 1})) if nd else None]))
        run(lambda: np.flip(a, ax), lambda: xp.flip(x, axis=ax), x)
    elif op == "roll":
        shift = data.draw(st.integers(-9, 9))
        run(lambda: np.roll(a, shift), lambda: xp.roll(x, shift), x)
        if nd:
            axes = tuple(data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3)))
            shifts = tuple(data.draw(st.integers(-9, 9)) for _ in axes)
            run(lambda: np.roll(a, shifts, axes), lambda: np.roll(x, shifts, axes), x)
            run(lambda: np.roll(a, shifts[0], axes), lambda: xp.roll(x, shifts[0], axis=axes), x)
    elif op == "tile":
        reps = tuple(data.draw(st.lists(st.integers(0, 3), max_size=4)))
        run(lambda: np.tile(a, reps), lambda: xp.tile(x, reps), x)
        run(lambda: np.tile(a, reps), lambda: np.tile(x, reps), x)
    elif op == "repeat":
        r = data.draw(st.integers(0, 3))
        ax = axis_of(data.draw, nd, none=True) if nd else None
        run(lambda: np.repeat(a, r, ax), lambda: xp.repeat(x, r, axis=ax), x)
        if ax is not None and -nd <= ax < nd:
            counts = np.random.default_rng(r).integers(0, 3, a.shape[ax])
            c = xp.asarray(counts, device=mesh)
            run(lambda: np.repeat(a, counts, ax), lambda: xp.repeat(x, c, axis=ax), x)
    elif nd:
        ax = axis_of(data.draw, nd)
        k = data.draw(st.integers(1, 4))
        run(lambda: np.array_split(a, k, ax), lambda: np.array_split(x, k, ax), x)
        run(lambda: np.split(a, k, ax), lambda: np.split(x, k, ax), x)
        run(lambda: np.split(a, [1, -2], ax), lambda: np.split(x, [1, -2], ax), x)
        run(lambda: tuple(np.moveaxis(a, ax, 0)), lambda: xp.unstack(x, axis=ax), x)


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_join(data):
    """concat/stack/hstack/vstack/dstack/column_stack/block of operands of mixed dtypes (NumPy 2 promotion) and
    layouts."""
    mesh = data.draw(meshes())
    a = data.draw(host(max_dims=2))
    sh = list(a.shape)
    x = data.draw(placed(a, mesh))
    b = data.draw(host(shape=tuple(sh)))
    y = data.draw(placed(b, mesh))
    op = data.draw(st.sampled_from(("concat", "stack", "hvd", "block")))
    if op == "concat" and a.ndim:
        k = axis_of(data.draw, a.ndim, none=True)
        if k is not None and -a.ndim <= k < a.ndim:
            sh[k] = data.draw(st.sampled_from(SIDES))
        c = data.draw(host(shape=tuple(sh)))
        z = data.draw(placed(c, mesh))
        run(lambda: np.concatenate([a, c], axis=k), lambda: xp.concat([x, z], axis=k), x, z)
        run(lambda: np.concatenate([a, c, a], axis=k), lambda: np.concatenate([x, z, x], axis=k), x, z)
    elif op == "stack":
        k = data.draw(st.integers(-a.ndim - 2, a.ndim + 1))
        run(lambda: np.stack([a, b], k), lambda: xp.stack([x, y], axis=k), x, y)
    elif op == "hvd":
        for f in (np.hstack, np.vstack, np.dstack, np.column_stack):
            run(lambda: f([a, b]), lambda: f([x, y]), x, y)
    elif a.ndim == 2:
        c = data.draw(host(shape=(a.shape[0], data.draw(st.sampled_from(SIDES)))))
        z = data.draw(placed(c, mesh))
        run(lambda: np.block([[a, c], [b, c]]), lambda: np.block([[x, z], [y, z]]), x, y, z)
        run(lambda: np.block([a, c]), lambda: np.block([x, z]), x, z)
        run(lambda: np.block([[[a]], [[b]]]), lambda: np.block([[[x]], [[y]]]), x, y)
    else:
        run(lambda: np.block([a, b, np.int16(3), 1.5]), lambda: np.block([x, y, np.int16(3), 1.5]), x, y)
        run(lambda: np.block(a), lambda: np.block(x), x)


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_shape_extras(data):
    """broadcast_to/broadcast_arrays, atleast_*d, tril/triu (offsets, stacks), rot90, trim_zeros, resize."""
    mesh = data.draw(meshes())
    x, a = data.draw(pair(mesh))
    nd = a.ndim
    op = data.draw(st.sampled_from(("broadcast", "atleast", "tri", "rot90", "trim", "resize")))
    if op == "broadcast":
        shape = tuple(data.draw(st.lists(st.sampled_from((1, 2, 3)), max_size=2))) + a.shape
        run(lambda: np.broadcast_to(a, shape), lambda: xp.broadcast_to(x, shape), x)
        b = data.draw(host(shape=tuple(1 if data.draw(st.booleans()) else n for n in a.shape)))
        y = data.draw(placed(b, mesh))
        run(lambda: np.broadcast_arrays(a, b), lambda: xp.broadcast_arrays(x, y), x, y)
    elif op == "atleast":
        for f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
            run(lambda: f(a), lambda: f(x), x)
            run(lambda: f(a, a), lambda: f(x, x), x)
    elif op == "tri" and nd >= 2:
        k = data.draw(st.integers(-8, 8))
        run(lambda: np.tril(a, k), lambda: xp.tril(x, k=k), x)
        run(lambda: np.triu(a, k), lambda: np.triu(x, k), x)
    elif op == "rot90" and nd >= 2:
        k = data.draw(st.integers(-5, 5))
        axes = (axis_of(data.draw, nd), axis_of(data.draw, nd))
        run(lambda: np.rot90(a, k, axes), lambda: np.rot90(x, k, axes), x)
    elif op == "trim" and nd:
        z = a.copy()
        z[(slice(0, data.draw(st.integers(0, a.shape[0]))),)] = 0
        xz = data.draw(placed(z, mesh))
        trim = data.draw(st.sampled_from(("f", "b", "fb", "bf", "F", "B")))
        ax = data.draw(st.sampled_from([None, *range(-nd, nd)])) if nd > 1 else None
        run(lambda: np.trim_zeros(z, trim, axis=ax), lambda: np.trim_zeros(xz, trim, axis=ax), xz)
    else:
        shape = tuple(data.draw(st.lists(st.integers(0, 6), max_size=3)))
        run(lambda: np.resize(a, shape), lambda: np.resize(x, shape), x)


# ============================================================================================= creation


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_creation(data):
    """arange (float and negative steps), linspace (endpoint, num 0/1), eye/tri/identity (k, non-square), meshgrid
    (ij/xy), full/full_like dtype inference, *_like keeping the layout, asarray(copy=)."""
    mesh = data.draw(meshes())
    op = data.draw(st.sampled_from(("arange", "linspace", "eye", "meshgrid", "full", "like")))
    with sa.default_mesh(mesh):
        if op == "arange":
            start, stop = data.draw(st.integers(-6, 6)), data.draw(st.integers(-6, 6))
            step = data.draw(st.sampled_from((1, 2, -1, -3, 0.5, -0.25, 1.5)))
            run(lambda: np.arange(start, stop, step), lambda: xp.arange(start, stop, step))
            run(lambda: np.arange(start / 2, stop, step), lambda: xp.arange(start / 2, stop, step))
        elif op == "linspace":
            a, b = data.draw(st.sampled_from((0, -2.5, 3))), data.draw(st.sampled_from((1, -4, 3, 1e3)))
            num, ep = data.draw(st.sampled_from((0, 1, 2, 5, 9))), data.draw(st.booleans())
            dt = data.draw(st.sampled_from((None, "float32", "complex128")))
            kw = {} if dt is None else {"dtype": dt}
            run(lambda: np.linspace(a, b, num, endpoint=ep, **kw), lambda: xp.linspace(a, b, num, endpoint=ep, **kw))
        elif op == "eye":
            n, m, k = (
                data.draw(st.integers(0, 6)),
                data.draw(st.sampled_from((None, 0, 2, 7))),
                data.draw(st.integers(-8, 8)),
            )
            dt = data.draw(st.sampled_from((None, "int64", "bool", "float32")))
            like = xp.ones(1)
            run(lambda: np.eye(n, m, k, dtype=dt or float), lambda: xp.eye(n, m, k=k, dtype=dt))
            run(lambda: np.tri(n, m, k, dtype=dt or float), lambda: np.tri(n, m, k, dtype=dt or float, like=like))
            run(lambda: np.identity(n, dtype=dt or float), lambda: np.identity(n, dtype=dt or float, like=like))
        elif op == "meshgrid":
            sides = data.draw(st.lists(st.sampled_from(SIDES), min_size=1, max_size=3))
            arrs = [np.arange(s, dtype=np.float64) + i for i, s in enumerate(sides)]
            xs = [xp.asarray(v) for v in arrs]
            ind = data.draw(st.sampled_from(("xy", "ij")))
            run(lambda: np.meshgrid(*arrs, indexing=ind), lambda: xp.meshgrid(*xs, indexing=ind), *xs)
            run(
                lambda: np.meshgrid(*arrs, indexing=ind, sparse=True),
                lambda: np.meshgrid(*xs, indexing=ind, sparse=True),
                *xs,
                refusal=True,  # (sparse=True: a documented refusal of the NumPy dispatch)
            )
        elif op == "full":
            v = data.draw(st.sampled_from((1, -1, 1.5, True, 2j, np.float32(2), np.int8(3), np.float16(1))))
            dt = data.draw(st.sampled_from((None, "float32", "int64", "complex64")))
            a = np.ones((3, 2), np.int32)
            x = xp.asarray(a)
            run(lambda: np.full((3, 2), v, dtype=dt), lambda: xp.full((3, 2), v, dtype=dt), refusal=True)
            run(lambda: np.full_like(a, v, dtype=dt), lambda: xp.full_like(x, v, dtype=dt), x, refusal=True)
        else:
            x, a = data.draw(pair(mesh, min_dims=1))
            for f in (xp.zeros_like, xp.ones_like, xp.empty_like, np.zeros_like, np.ones_like):
                y = f(x)
                assert y.shape == x.shape and y.dtype == x.dtype and y.layout == x.layout, (f, y.layout, x.layout)
            assert xp.asarray(x, copy=False) is x
            y = xp.asarray(x, copy=True)
            assert y.layout == x.layout
            if y.size:
                y[(0,) * y.ndim] = 1 if a.dtype != bool else not a.flat[0]
                np.testing.assert_array_equal(x.numpy(), a)
            if x.dtype != xp.float32:
                with pytest.raises(ValueError):
                    xp.asarray(x, dtype=xp.float32, copy=False)


# ============================================================================================= traffic


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_split_dim_traffic(data):
    """roll/flip/pad/repeat along a split dim (named): one ``alltoallv`` over its axes in which a device receives
    at most its output block (roll: only the wrapped slab), never an allgather; nothing along an unsplit dim."""
    mesh = data.draw(meshes())
    sizes = {"i": data.draw(st.sampled_from(SIDES + (13,))), "j": data.draw(st.sampled_from((1, 3)))}
    a = _values(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), (sizes["i"], sizes["j"]), "float64")
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout=data.draw(layouts(mesh, ("i", "j"))))
    n = sizes["i"]
    op = data.draw(st.sampled_from(("roll", "flip", "pad", "repeat")))
    if op == "roll":
        s = data.draw(st.integers(-2 * n - 1, 2 * n + 1))
        y, recs, warned = logged(lambda: sa.roll(x, "i", s))
        expected = np.roll(a, s, 0)
    elif op == "flip":
        y, recs, warned = logged(lambda: sa.flip(x, "i"))
        expected = np.flip(a, 0)
    elif op == "pad":
        before, after = data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))
        y, recs, warned = logged(lambda: sa.pad(x, "i", before, after))
        expected = np.pad(a, [(before, after), (0, 0)])
    else:
        r = data.draw(st.integers(0, 3))
        y, recs, warned = logged(lambda: as_kind(xp.repeat(as_kind(x, xp.Array), r, axis=0), sa.ShardArray))
        expected = np.repeat(a, r, 0)
    np.testing.assert_array_equal(y.numpy(), expected)
    assert not warned
    assert all(r.op == "alltoall" for r in recs), recs
    if not x.spec.of("i"):
        assert recs == [], recs
        return
    assert len(recs) <= 1, recs
    copies = r if op == "repeat" else 1  # (repeat: a device sends each entry of its block r times at most)
    assert sum(received(rec) for rec in recs) <= max(block(y), copies * block(x)), (recs, x.layout)
    if op == "roll" and recs:  # (the wrapped part only: at most min(s, n - s) rows of the dim)
        s = s % n
        rows = max((hi - lo for _, (lo, hi) in block_bounds(x.mesh, x.spec)), default=0)
        assert recs[0].elements <= rows * min(s, n - s), (recs, s, n)


# ============================================================================================= regressions


@pytest.mark.parametrize("r", [0, 1, 2, 3])
@pytest.mark.parametrize("layout", [{"i": ("c", "b")}, {"i": "c", "j": "b"}])
def test_repeat_of_a_split_axis_moves_at_most_a_block(r, layout):
    """xp.repeat along a split axis (and axis=None of a split array) was a broadcast and a merge_dims that
    moved two blocks, or allgathered the whole axis when no dim could park its axes (axis=None of a 7x7 array over
    (c, b): 49 -> 98 entries, 3 x 26 received a device for a block of 25); it is one alltoallv of at most the
    output block now."""
    mesh = _mesh({"a": 2, "b": 2, "c": 2})
    a = np.arange(49, dtype=np.int32).reshape(7, 7)
    x = as_kind(sa.asarray(a, dims=("i", "j"), mesh=mesh, layout=layout), xp.Array)
    for axis in (0, None):
        y, recs, warned = logged(lambda: xp.repeat(x, r, axis=axis))
        np.testing.assert_array_equal(y.numpy(), np.repeat(a, r, axis=axis))
        assert not warned and not [rec for rec in recs if rec.op == "allgather"], recs
        if axis == 0:
            assert y.layout == x.layout and sum(received(rec) for rec in recs) <= block(y), recs


def test_tile_of_a_short_split_axis_sends_about_a_block():
    """xp.tile of an axis shorter than its device count (2 entries over 6 devices) by many copies was a
    concatenation in which the two devices holding entries sent every copy (about 100 entries for blocks of 40);
    it allgathers the 2 entries and builds the copies where they belong now."""
    mesh = _mesh({"p": 3, "q": 2})
    a = np.array([2.0, 1.0])
    x = as_kind(sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": ("p", "q")}), xp.Array)
    y, recs, warned = logged(lambda: xp.tile(x, (120,)))
    np.testing.assert_array_equal(y.numpy(), np.tile(a, 120))
    assert y.layout == x.layout and not warned
    assert max((received(rec) for rec in recs), default=0) <= block(y), recs


def test_tile_with_a_zero_count_moves_nothing():
    """xp.tile with a count of 0 tiled the split axes first (an alltoallv of the locally tiled blocks) and emptied
    the result last; an empty result moves nothing now."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    a = np.arange(10.0).reshape(2, 5)
    x = as_kind(sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "y", "j": "z"}), xp.Array)
    y, recs, _ = logged(lambda: xp.tile(x, (2, 3, 2, 0)))
    _same(y, np.tile(a, (2, 3, 2, 0)))
    assert recs == [], recs


def test_linspace_with_a_complex_dtype_computes_as_numpy():
    """xp.linspace of real endpoints into a complex dtype computed in complex128 (an ulp off NumPy's float64
    arithmetic, which casts at the end); it computes in float64 now."""
    with sa.default_mesh(_mesh({"row": 2, "col": 2})):
        for dt in ("complex128", "complex64"):
            got = xp.linspace(-2.5, 1, 5, endpoint=False, dtype=dt).numpy()
            expected = np.linspace(-2.5, 1, 5, endpoint=False, dtype=dt)
            assert got.dtype == expected.dtype and np.array_equal(got, expected), (got, expected)


def test_repeat_of_a_split_axis_is_differentiable():
    """The new split-axis repeat (``repeat_split``) has a VJP: the sum of the strided slices."""
    mesh = _mesh({"row": 2, "col": 2})
    p = sa.asarray(
        np.random.default_rng(0).standard_normal((5, 3)), dims=("i", "j"), mesh=mesh, layout={"i": ("row", "col")}
    )
    w = np.random.default_rng(1).standard_normal((15, 3))

    def loss(q):
        y = xp.repeat(as_kind(q, xp.Array), 3, axis=0)
        return xp.sum(y * xp.asarray(w, device=mesh))

    check_grad(loss, p)


def test_np_block_dispatches():
    """np.block of Arrays had no implementation (TypeError); it is concat of the nested lists now, with NumPy's
    errors for lists of different depths."""
    mesh = _mesh({"row": 2, "col": 2})
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 1), np.int32)
    x, y = xp.asarray(a, device=mesh), xp.asarray(b, device=mesh)
    z = xp.zeros((1, 3), device=mesh)
    _same(np.block([[x, y], [z, 7]]), np.block([[a, b], [np.zeros((1, 3)), 7]]))
    with pytest.raises(sa.DimensionError, match="depth"):
        np.block([x, [y]])
    with pytest.raises(sa.DTypeError, match="tuple"):
        np.block([[x], (y,)])


def test_np_tri_and_identity_dispatch_on_like():
    """np.tri(..., like=x) and np.identity(n, like=x) had no counterpart (TypeError); xp.tri/xp.identity now."""
    mesh = _mesh({"p": 3, "q": 2})
    like = xp.ones(1, device=mesh)
    for n, m, k in [(4, None, 0), (3, 5, -1), (5, 2, 2), (0, 3, 0)]:
        _same(np.tri(n, m, k, like=like), np.tri(n, m, k))
        _same(np.tri(n, m, k, dtype=int, like=like), np.tri(n, m, k, dtype=int))
    _same(np.identity(4, like=like), np.identity(4))
