"""A differential fuzz, against NumPy, of indexing on split arrays, positional (``shardarray.array_api``) and named
(``sa.*``): ``x[int_array]``, ``x[bool_mask]``, mixed basic and advanced keys (slices, ``None``, Ellipsis, negative
ints, several integer arrays broadcasting, 0-d arrays), ``x[idx] = v`` (scalar and array values, repeated indices:
the last write wins, as NumPy's ``x[idx] = v`` leaves it and the library's docstrings promise), ``np.add.at``,
``xp.take``, ``xp.take_along_axis``, ``xp.searchsorted`` (split values, both sides, ``sorter``) and their named
forms (``sa.take``, ``x.isel``, ``sa.take_along_dim``, ``sa.select``, ``x[{dim: ids}] = v``), on random meshes
(1, 2x2, 4, 2x2x2, 3x2), with the data and the index arrays in random layouts, uneven and empty blocks,
int/bool/float32/float64/complex dtypes. Each case checks values, dtype and shape; that an index NumPy refuses
(out of bounds) is a typed ``sa.ShardArrayError`` here, never wrong data; and that every allgather of more than a
few elements is announced by a ``sa.GatherWarning`` (the warning threshold is lowered to 0 bytes for the check).
The gradients of the differentiable reads (take, take_along_axis, integer and boolean indexing) are compared with
NumPy's scatter-add of the cotangent (``np.add.at``). Regressions of the bugs it found close the file.

``FUZZ8_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import HYPOTHESIS_SHAPES, layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.ops.indexing import route

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# --------------------------------------------------------------------------------------------- data

DTYPES = ("float64", "float32", "int64", "int32", "uint8", "bool", "complex128", "complex64")
ID_DTYPES = ("int64", "int32", "int8", "uint8", "int16")
SIDES = (0, 1, 2, 3, 5, 7)


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    n = math.prod(shape)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return (rng.random(n) < 0.5).reshape(shape)
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -9, 10, n).astype(dt).reshape(shape)
    if dt.kind == "c":
        return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dt).reshape(shape)
    return rng.normal(size=n).astype(dt).reshape(shape)


@st.composite
def shapes(draw, min_dims=1, max_dims=3, min_side=0):
    nd = draw(st.integers(min_dims, max_dims))
    return tuple(draw(st.sampled_from([s for s in SIDES if s >= min_side])) for _ in range(nd))


@st.composite
def host_arrays(draw, dtypes=DTYPES, shape=None, min_dims=1, max_dims=3, min_side=0):
    if shape is None:
        shape = draw(shapes(min_dims, max_dims, min_side))
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _values(rng, tuple(shape), dtype)


@st.composite
def placed(draw, a: np.ndarray, mesh, dims=None):
    """``a`` as a positional array on ``mesh`` (``dims`` names its axes), in a random layout."""
    a = np.asarray(a)
    dims = tuple(f"dim{k}" for k in range(a.ndim)) if dims is None else tuple(dims)
    if a.ndim == 0 or draw(st.integers(0, 4)) == 0:
        lay = {}
    else:  # (a dim of length 1 split over devices: broadcasting it gathers its one block, by nature)
        lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
    x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)
    assert x.dtype == a.dtype and x.shape == a.shape
    return x


@st.composite
def either(draw, a: np.ndarray, mesh, forms=("host", "xp", "xp", "list")):
    """An index or value as NumPy accepts it: a host array, a positional array (random layout) or a list."""
    form = draw(st.sampled_from(forms))
    if form == "xp":
        return draw(placed(a, mesh, tuple(f"ix{k}" for k in range(np.ndim(a)))))
    if form == "list" and np.ndim(a) and a.size and np.asarray(a.tolist()).dtype.kind == a.dtype.kind:
        return a.tolist()
    return a


@st.composite
def ids_for(draw, n: int, shape: tuple, oob: bool = False, repeat: bool = True):
    """Integer ids of ``shape`` into a dim of size ``n`` (negative ones too); with ``oob`` one is out of range."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = math.prod(shape)
    dtype = np.dtype(draw(st.sampled_from(ID_DTYPES)))
    if n == 0:
        ids = np.zeros(size, dtype=np.int64)
    else:
        lo = -n if dtype.kind == "i" else 0
        hi = min(n - 1, np.iinfo(dtype).max)
        lo = max(lo, np.iinfo(dtype).min)
        ids = rng.integers(lo, hi + 1, size) if repeat else rng.permutation(np.arange(lo, hi + 1))[:size]
    if (oob or n == 0) and size:
        bad = [n, n + 3] + ([-n - 1] if dtype.kind == "i" else [])
        ids[rng.integers(size)] = bad[rng.integers(len(bad))]
    ids = np.asarray(ids)
    if ids.size and (ids.max() > np.iinfo(dtype).max or ids.min() < np.iinfo(dtype).min):
        dtype = np.dtype(np.int64)
    return ids.astype(dtype).reshape(shape)


# --------------------------------------------------------------------------------------------- checks


def _tol(dtype) -> float:
    return 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def same(got, expected, kind=xp.Array, approx: bool = False):
    """``got`` (an array of ``kind``) is NumPy's ``expected``: type, shape, dtype and values."""
    assert type(got) is kind, type(got)
    g = got.numpy()
    e = np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    if approx and e.dtype.kind in "fc":
        np.testing.assert_allclose(g, e, rtol=_tol(e.dtype), atol=_tol(e.dtype))
    else:
        np.testing.assert_array_equal(g, e)


class Gathers:
    """Every allgather of more than ``small`` elements must come with a ``sa.GatherWarning`` (the threshold of
    ``route.warn_gather`` lowered to 0 bytes, so that the small index gathers of a fuzz case announce themselves)."""

    def __init__(self, small: int = 8) -> None:
        self.small = small

    def __enter__(self):
        self._old = route.GATHER_WARN_BYTES
        route.GATHER_WARN_BYTES = 0
        self._warn = warnings.catch_warnings(record=True)
        self.warned = self._warn.__enter__()
        warnings.simplefilter("always", sa.GatherWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        self._log = sa.comm_log()
        self.log = self._log.__enter__()
        return self

    def __exit__(self, *exc):
        self._log.__exit__(*exc)
        self._warn.__exit__(*exc)
        route.GATHER_WARN_BYTES = self._old
        if exc[0] is None:
            big = [r for r in self.log.records if r.op == "allgather" and r.elements > self.small]
            gw = [w for w in self.warned if issubclass(w.category, sa.GatherWarning)]
            assert not big or gw, f"a silent allgather: {big}"
        return False


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def run(np_call, sa_call, kind=xp.Array, approx=False, compare=None, small: int = 8, oob: bool = False):
    """NumPy's ``np_call()`` against ``sa_call()``: a typed ``sa.ShardArrayError`` where NumPy raises (or, with
    ``oob``, where an id is out of range: NumPy checks none when the result is empty), else the same result
    (``compare(got, expected)`` if given); no silent allgather of more than ``small`` elements."""
    try:
        expected = _quiet(np_call)
        if oob and not getattr(expected, "size", 1):  # NumPy reads nothing: an error here is as good
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = sa_call()
                    if isinstance(got, sa.ShardArray):
                        got.numpy()  # (a check queued on the devices raises at the next read)
            except sa.ShardArrayError:
                return None
        elif oob:
            raise AssertionError("NumPy read an id out of range")
    except (IndexError, ValueError, TypeError) as e:
        with pytest.raises(sa.ShardArrayError):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = sa_call()
                if isinstance(got, sa.ShardArray):
                    got.numpy()  # (a check queued on the devices raises at the next read)
            pytest.fail(f"NumPy raised {type(e).__name__}: {e}; shardarray gave {got!r:.300}")
        return None
    with Gathers(small):
        got = sa_call()
    if compare is not None:
        compare(got, expected)
    elif isinstance(expected, tuple):
        for g, e in zip(got, expected, strict=True):
            same(g, e, kind, approx)
    else:
        same(got, expected, kind, approx)
    return got


def out_of_range(ids, n: int) -> bool:
    """Whether integer ``ids`` (host, list or array) hold an id outside ``[-n, n)``."""
    ids = host_key(ids)
    return bool(ids.size) and (int(ids.min()) < -n or int(ids.max()) >= n)


def key_oob(shape: tuple, key) -> bool:
    """Whether an integer array of ``key`` (no ``None``; ints, slices, arrays, one Ellipsis) is out of range."""
    key = key if isinstance(key, tuple) else (key,)
    if Ellipsis in [k for k in key if not isinstance(k, (np.ndarray, list, sa.ShardArray))]:
        at = next(i for i, k in enumerate(key) if k is Ellipsis and not isinstance(k, (np.ndarray, list)))
        key = key[:at] + (slice(None),) * (len(shape) - len(key) + 1) + key[at + 1 :]
    return any(
        isinstance(k, (np.ndarray, list, sa.ShardArray)) and host_key(k).dtype.kind in "iu" and out_of_range(k, n)
        for k, n in zip(key, shape)
    )


def host_key(key):
    """A key with its arrays as NumPy's."""
    if isinstance(key, tuple):
        return tuple(host_key(k) for k in key)
    if isinstance(key, sa.ShardArray):
        return key.numpy()
    if isinstance(key, list):
        return np.asarray(key)
    return key


# =============================================================================================== reads


@st.composite
def slices(draw, n: int):
    start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    step = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])))
    return slice(start, stop, step)


@st.composite
def broadcast_shapes(draw, count: int):
    """``count`` index shapes that broadcast together (sizes 0..3, 0 to 2 dims; size 1 stretches)."""
    nd = draw(st.integers(0, 2))
    full = tuple(draw(st.sampled_from([0, 1, 2, 3, 3])) for _ in range(nd))
    out = []
    for _ in range(count):
        k = draw(st.integers(0, nd))
        out.append(tuple(1 if draw(st.integers(0, 3)) == 0 else s for s in full[nd - k :]))
    return out


@st.composite
def adv_keys(draw, mesh, shape: tuple, writes: bool = False):
    """A key of ints, slices, Ellipsis and integer arrays (at least one) for an array of ``shape``; ``None`` and
    slices other than ':' only for reads (writes refuse them with ``ArgumentError``)."""
    nd = len(shape)
    kinds = [draw(st.sampled_from(["arr", "arr", "int", "slice"])) for _ in range(nd)]
    if "arr" not in kinds:
        kinds[draw(st.integers(0, nd - 1))] = "arr"
    n_arr = kinds.count("arr")
    bshapes = iter(draw(broadcast_shapes(n_arr)))
    oob = draw(st.integers(0, 9)) == 0
    key = []
    for i, (k, n) in enumerate(zip(kinds, shape)):
        if k == "arr":
            ids = draw(ids_for(n, next(bshapes), oob=oob and i == kinds.index("arr")))
            key.append(draw(either(ids, mesh)))
        elif k == "int":
            if n == 0:
                key.append(slice(None))
            else:
                key.append(draw(st.integers(-n, n - 1)))
        else:
            key.append(slice(None) if writes else draw(slices(n)))
    # leave trailing ':' out, or fold a run of ':' into an Ellipsis
    if draw(st.booleans()):
        while key and isinstance(key[-1], slice) and key[-1] == slice(None):
            key.pop()
    if draw(st.integers(0, 2)) == 0:
        full = [j for j, k in enumerate(key) if isinstance(k, slice) and k == slice(None)]
        if full:
            j = draw(st.sampled_from(full))
            key[j] = Ellipsis
        else:
            key.insert(draw(st.integers(0, len(key))), Ellipsis)
    return tuple(key) if len(key) != 1 or draw(st.booleans()) else key[0]


@fuzz(150)
@given(st.data())
def test_fuzz_getitem_integer_arrays(data):
    """``x[key]`` with integer arrays (host, lists, split positional arrays), ints, slices, Ellipsis."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    key = data.draw(adv_keys(mesh, a.shape))
    run(lambda: a[host_key(key)], lambda: x[key], oob=key_oob(a.shape, key))


@fuzz(96)
@given(st.data())
def test_fuzz_getitem_basic(data):
    """``x[key]`` of ints (negative, out of range), slices, ``None``, Ellipsis and 0-d integer arrays."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    key = []
    for n in a.shape:
        k = data.draw(st.sampled_from(["int", "slice", "none", "zero_d"]))
        if k == "slice":
            key.append(data.draw(slices(n)))
        elif k == "none":
            key.extend([None, data.draw(slices(n))])
        else:
            i = data.draw(st.integers(-n - 1, n)) if data.draw(st.integers(0, 5)) == 0 else None
            i = data.draw(st.integers(-n, n - 1)) if i is None and n else (i if i is not None else 0)
            key.append(i if k == "int" else data.draw(either(np.array(i), mesh, ("host", "xp"))))
    if data.draw(st.booleans()):
        key.insert(data.draw(st.integers(0, len(key))), Ellipsis)
    run(lambda: a[host_key(tuple(key))], lambda: x[tuple(key)])


def test_none_with_integer_arrays_adds_the_axis_where_numpy_does():
    """``None`` together with integer arrays (refused until round 11) adds its axis where NumPy puts it."""
    a = np.arange(12.0).reshape(3, 4)
    with sa.default_mesh(_mesh({"row": 2, "col": 2})):
        x = xp.asarray(a)
        np.testing.assert_array_equal(x[None, [0, 2]].numpy(), a[None, [0, 2]])


@st.composite
def masks(draw, mesh, shape: tuple):
    k = draw(st.integers(1, len(shape)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = rng.random(shape[:k]) < draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    return m, draw(either(m, mesh, ("host", "xp", "xp")))


@fuzz(112)
@given(st.data())
def test_fuzz_getitem_boolean_masks(data):
    """``x[mask]``, ``x[mask, ...]``, ``x[mask, basic...]`` with the mask over the leading axes, split or host."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    m, mask = data.draw(masks(mesh, a.shape))
    form = data.draw(st.sampled_from(["whole", "ellipsis", "basic"]))
    if form == "whole":
        key = mask
    elif form == "ellipsis":
        key = (mask, Ellipsis)
    else:
        rest = a.shape[m.ndim :]
        if not rest:
            key = (mask, Ellipsis)
        else:
            n = rest[0]
            b = data.draw(slices(n)) if data.draw(st.booleans()) or not n else data.draw(st.integers(-n, n - 1))
            key = (mask, b)
    run(lambda: a[host_key(key)], lambda: x[key])


# =============================================================================================== writes


@fuzz(140)
@given(st.data())
def test_fuzz_setitem_integer_arrays(data):
    """``x[key] = v`` with integer arrays (repeated ids: the last write wins), ints and ':'; ``v`` a scalar, a host
    array or a split positional array broadcast to the selection."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    key = data.draw(adv_keys(mesh, a.shape, writes=True))
    hk = host_key(key)
    try:
        sel = a[hk].shape
    except IndexError:
        sel = None
    if sel is None or data.draw(st.booleans()):
        v = _values(np.random.default_rng(data.draw(st.integers(0, 99))), (), str(a.dtype))[()]
        v = v.item() if data.draw(st.booleans()) else v
    else:
        k = data.draw(st.integers(0, len(sel)))
        vshape = tuple(1 if data.draw(st.integers(0, 3)) == 0 else s for s in sel[len(sel) - k :])
        v = _values(np.random.default_rng(data.draw(st.integers(0, 99))), vshape, str(a.dtype))
        v = data.draw(either(v, mesh, ("host", "xp", "xp")))

    def np_write():
        e = a.copy()
        e[hk] = host_key(v)
        return e

    def sa_write():
        x[key] = v
        return x

    run(np_write, sa_write, oob=key_oob(a.shape, key))


@fuzz(80)
@given(st.data())
def test_fuzz_setitem_basic(data):
    """``x[key] = v`` for keys of ints, slices (any step), ``None`` and Ellipsis; ``v`` a scalar, a host array or a
    split positional array broadcast to the selection."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    key = []
    for n in a.shape:
        k = data.draw(st.sampled_from(["int", "slice", "slice", "none"]))
        if k == "int" and n:
            key.append(data.draw(st.integers(-n, n - 1)))
        elif k == "none":
            key.extend([None, data.draw(slices(n))])
        else:
            key.append(data.draw(slices(n)))
    if data.draw(st.booleans()):
        key.insert(data.draw(st.integers(0, len(key))), Ellipsis)
    key = tuple(key)
    sel = a[key].shape
    if data.draw(st.booleans()):
        v = _values(np.random.default_rng(data.draw(st.integers(0, 99))), (), str(a.dtype))[()]
    else:
        k = data.draw(st.integers(0, len(sel)))
        vshape = tuple(1 if data.draw(st.integers(0, 3)) == 0 else s for s in sel[len(sel) - k :])
        v = _values(np.random.default_rng(data.draw(st.integers(0, 99))), vshape, str(a.dtype))
        v = data.draw(either(v, mesh, ("host", "xp", "xp")))

    def np_write():
        e = a.copy()
        e[key] = host_key(v)
        return e

    def sa_write():
        x[key] = v
        return x

    run(np_write, sa_write)


@fuzz(80)
@given(st.data())
def test_fuzz_setitem_boolean_masks(data):
    """``x[mask] = v`` (mask over the leading axes), ``v`` a scalar or an array of the selection's shape."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    m, mask = data.draw(masks(mesh, a.shape))
    sel = a[m].shape
    if data.draw(st.booleans()):
        v = _values(np.random.default_rng(data.draw(st.integers(0, 99))), (), str(a.dtype))[()]
    else:
        k = data.draw(st.integers(0, len(sel)))
        vshape = tuple(1 if data.draw(st.integers(0, 3)) == 0 else s for s in sel[len(sel) - k :])
        v = _values(np.random.default_rng(data.draw(st.integers(0, 99))), vshape, str(a.dtype))
        v = data.draw(either(v, mesh, ("host", "xp")))

    def np_write():
        e = a.copy()
        e[m] = host_key(v)
        return e

    def sa_write():
        x[mask] = v
        return x

    run(np_write, sa_write)


@fuzz(80)
@given(st.data())
def test_fuzz_add_at(data):
    """``np.add.at(x, key, v)``: every repeated index adds (integer arrays and ints; or a leading mask)."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64", "int32", "complex128")))
    x = data.draw(placed(a, mesh))
    if data.draw(st.integers(0, 3)):
        key = data.draw(adv_keys(mesh, a.shape, writes=True))
    else:
        key = data.draw(masks(mesh, a.shape))[1]
    hk = host_key(key)
    try:
        sel = a[hk].shape
    except IndexError:
        sel = ()
    vshape = sel[len(sel) - data.draw(st.integers(0, len(sel))) :]
    v = _values(np.random.default_rng(data.draw(st.integers(0, 99))), vshape, str(a.dtype))
    v = data.draw(either(v, mesh, ("host", "xp"))) if v.ndim else v[()]

    def np_add():
        e = a.copy()
        # (NumPy 2.4's add.at broadcasts a value against a 2-D index wrongly: broadcast it first)
        np.add.at(e, hk, np.broadcast_to(host_key(v), e[hk].shape))
        return e

    def sa_add():
        np.add.at(x, key, v)
        return x

    run(np_add, sa_add, approx=True, oob=key_oob(a.shape, key))


# ================================================================================= take, along, search


@fuzz(96)
@given(st.data())
def test_fuzz_take(data):
    """``xp.take(x, ids, axis=)`` with split 1-D ids (also ``axis=None`` on 1-D ``x``)."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[axis]
    ids = data.draw(ids_for(n, (data.draw(st.sampled_from(SIDES)),), oob=data.draw(st.integers(0, 9)) == 0))
    ix = data.draw(either(ids, mesh, ("host", "xp", "xp")))
    oob = out_of_range(ids, n)
    if a.ndim == 1 and data.draw(st.booleans()):
        run(lambda: np.take(a, ids), lambda: xp.take(x, ix), oob=oob)
    else:
        run(lambda: np.take(a, ids, axis=axis), lambda: xp.take(x, ix, axis=axis), oob=oob)


@fuzz(96)
@given(st.data())
def test_fuzz_take_along_axis(data):
    """``xp.take_along_axis`` with split ids broadcasting against ``x`` on the other axes."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    shape = list(a.shape)
    shape[axis] = data.draw(st.sampled_from(SIDES))
    shape = [1 if (i != axis % a.ndim and data.draw(st.integers(0, 3)) == 0) else s for i, s in enumerate(shape)]
    ids = data.draw(ids_for(a.shape[axis], tuple(shape), oob=data.draw(st.integers(0, 9)) == 0))
    ids = ids.astype(np.int64) if ids.dtype.kind == "u" else ids
    ix = data.draw(placed(ids, mesh, tuple(f"ix{k}" for k in range(ids.ndim))))
    run(
        lambda: np.take_along_axis(a, ids, axis=axis),
        lambda: xp.take_along_axis(x, ix, axis=axis),
        oob=out_of_range(ids, a.shape[axis]),
    )


@fuzz(96)
@given(st.data())
def test_fuzz_searchsorted(data):
    """``xp.searchsorted`` of split values (any shape) in a split sorted array, both sides, with ``sorter``."""
    mesh = data.draw(meshes())
    dtype = data.draw(st.sampled_from(("float64", "float32", "int64", "int32", "uint8", "bool")))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    s = np.sort(_values(rng, (data.draw(st.sampled_from((*SIDES, 13))),), dtype))
    vals = _values(rng, data.draw(shapes(0, 2)), dtype)
    if s.size and vals.size and data.draw(st.booleans()):  # ties with the sorted values
        vals.reshape(-1)[: max(1, vals.size // 2)] = rng.choice(s, max(1, vals.size // 2))
    side = data.draw(st.sampled_from(["left", "right"]))
    kw = {}
    if data.draw(st.integers(0, 3)) == 0:
        perm = rng.permutation(s.size)
        s = s[perm]
        kw["sorter"] = np.argsort(s, kind="stable")
    sx = data.draw(placed(s, mesh))
    vx = data.draw(placed(vals, mesh, tuple(f"v{k}" for k in range(vals.ndim))))
    xkw = {k: data.draw(placed(v, mesh, ("so",))) for k, v in kw.items()}
    run(lambda: np.searchsorted(s, vals, side=side, **kw), lambda: xp.searchsorted(sx, vx, side=side, **xkw))


# ================================================================================================ named


@fuzz(80)
@given(st.data())
def test_fuzz_named_take_and_isel(data):
    """``sa.take(x, ids, dim)`` (ids with new dims and dims shared with ``x``) and ``x.isel(dim=ids)``."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(min_dims=1, max_dims=3))
    dims = tuple(f"d{k}" for k in range(a.ndim))
    x = as_kind(data.draw(placed(a, mesh, dims)), sa.ShardArray)
    k = data.draw(st.integers(0, a.ndim - 1))
    n = a.shape[k]
    if data.draw(st.booleans()):  # new dims only: np.take
        ishape = tuple(data.draw(st.sampled_from(SIDES)) for _ in range(data.draw(st.integers(1, 2))))
        ids = data.draw(ids_for(n, ishape, oob=data.draw(st.integers(0, 9)) == 0))
        oob = out_of_range(ids, n)
        idims = tuple(f"n{j}" for j in range(ids.ndim))
        ix = as_kind(data.draw(placed(ids, mesh, idims)), sa.ShardArray)
        # (sa.take takes ids in [0, n) only, as documented; x.isel counts negative ones from the end)
        pos = as_kind(data.draw(placed(np.where(ids < 0, ids + n, ids), mesh, idims)), sa.ShardArray)
        rest = tuple(d for j, d in enumerate(dims) if j != k)

        def check(got, e):
            assert type(got) is sa.ShardArray and got.dims == (*idims, *rest), got.dims
            same(got, np.moveaxis(e, range(k, k + ids.ndim), range(ids.ndim)), sa.ShardArray)

        run(lambda: np.take(a, ids, axis=k), lambda: sa.take(x, pos, dims[k]), compare=check, oob=oob)
        if ids.ndim == 1:
            run(
                lambda: np.take(a, ids, axis=k),
                lambda: x.isel({dims[k]: ix}).transpose(*dims[:k], "n0", *dims[k + 1 :]),
                sa.ShardArray,
                oob=oob,
            )
    else:  # shared dims (elementwise) plus dim k: np.take_along_axis
        ishape = list(a.shape)
        ishape[k] = data.draw(st.sampled_from(SIDES))
        ids = data.draw(ids_for(n, tuple(ishape), oob=data.draw(st.integers(0, 9)) == 0)).astype(np.int64)
        ix = as_kind(data.draw(placed(ids, mesh, dims)), sa.ShardArray)
        run(
            lambda: np.take_along_axis(a, ids, axis=k),
            lambda: sa.take_along_dim(x, ix, dims[k]),
            sa.ShardArray,
            oob=out_of_range(ids, n),
        )


@fuzz(64)
@given(st.data())
def test_fuzz_named_select_and_writes(data):
    """``sa.select(x, mask)`` with a mask over some named dims, ``x[{d: mask}]``-style writes and
    ``x[{d: ids}] = v`` (scalar and named array values)."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(min_dims=1, max_dims=3))
    dims = tuple(f"d{k}" for k in range(a.ndim))
    x = as_kind(data.draw(placed(a, mesh, dims)), sa.ShardArray)
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    k = data.draw(st.integers(1, a.ndim))
    m = rng.random(a.shape[:k]) < 0.5
    mx = as_kind(data.draw(placed(m, mesh, dims[:k])), sa.ShardArray)
    run(lambda: a[m], lambda: sa.select(x, mx), sa.ShardArray)
    j = data.draw(st.integers(0, a.ndim - 1))
    n = a.shape[j]
    ids = data.draw(ids_for(n, (data.draw(st.sampled_from(SIDES)),), oob=data.draw(st.integers(0, 9)) == 0))
    ix = as_kind(data.draw(placed(ids, mesh, ("w",))), sa.ShardArray)
    key = (slice(None),) * j + (ids,)
    if data.draw(st.booleans()):
        v = _values(rng, (), str(a.dtype))[()]
        vx = v
    else:
        vshape = (len(ids), *(s for i, s in enumerate(a.shape) if i != j))
        v = _values(rng, vshape, str(a.dtype))
        vdims = ("w", *(d for i, d in enumerate(dims) if i != j))
        vx = as_kind(data.draw(placed(v, mesh, vdims)), sa.ShardArray)
        v = np.moveaxis(v, 0, j)

    def np_write():
        e = a.copy()
        e[key] = v
        return e

    def sa_write():
        x[{dims[j]: ix}] = vx
        return x

    run(np_write, sa_write, sa.ShardArray, oob=out_of_range(ids, n))


# ============================================================================================= gradients


def _cot(rng, shape, dtype):
    return _values(rng, shape, dtype)


def _along(ix, axis):
    def fn(p):
        return xp.take_along_axis(p, ix, axis=axis)

    return fn


@fuzz(64)
@given(st.data())
def test_fuzz_gradients_of_reads(data):
    """The gradient of ``sum(f(x) * c)`` for ``f`` = ``x[ids...]``, ``x[mask]``, ``xp.take``, ``take_along_axis``
    is NumPy's scatter-add of ``c`` (``np.add.at(zeros_like(x), key, c)``)."""
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32"), min_dims=1, max_dims=3))
    x = data.draw(placed(a, mesh))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    op = data.draw(st.sampled_from(["getitem", "mask", "take", "along"]))
    if op == "getitem":
        key = data.draw(adv_keys(mesh, a.shape, writes=True))
        hk = host_key(key)
        if key_oob(a.shape, key):
            return
        fn, np_key = (lambda p: p[key]), hk
    elif op == "mask":
        m, mask = data.draw(masks(mesh, a.shape))
        fn, np_key = (lambda p: p[mask]), m
    elif op == "take":
        axis = data.draw(st.integers(0, a.ndim - 1))
        ids = data.draw(ids_for(a.shape[axis], (data.draw(st.sampled_from(SIDES)),)))
        if out_of_range(ids, a.shape[axis]):
            return
        ix = data.draw(either(ids, mesh, ("host", "xp")))
        fn, np_key = (lambda p: xp.take(p, ix, axis=axis)), (slice(None),) * axis + (ids,)
    else:
        axis = data.draw(st.integers(0, a.ndim - 1))
        shape = list(a.shape)
        shape[axis] = data.draw(st.sampled_from(SIDES))
        ids = data.draw(ids_for(a.shape[axis], tuple(shape))).astype(np.int64)
        if out_of_range(ids, a.shape[axis]):
            return
        ix = data.draw(placed(ids, mesh, tuple(f"ix{k}" for k in range(ids.ndim))))
        fn = _along(ix, axis)
        grids = list(np.indices(ids.shape, sparse=True))
        grids[axis] = ids
        np_key = tuple(grids)
    out_shape = a[np_key].shape
    c = _cot(rng, out_shape, str(a.dtype))
    cx = data.draw(placed(c, mesh, tuple(f"c{k}" for k in range(c.ndim))))
    expected = np.zeros_like(a)
    np.add.at(expected, np_key, c)
    # (the gradient comes back in x's layout, the cotangent to the forward's: replicated, they come whole)
    with Gathers(max(8, x.size, c.size)):
        g = sa.grad(lambda p: xp.sum(fn(p) * cx))(x)
    same(g, expected, xp.Array, approx=True)


# ============================================================================================= regressions

MESHES = HYPOTHESIS_SHAPES  # 1, 2x2, 4, 2x2x2 and the uneven 3x2


def _split_like(a: np.ndarray, mesh, dims, layout) -> xp.Array:
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=layout), xp.Array)


@pytest.mark.parametrize("shape", MESHES, ids=str)
@pytest.mark.parametrize("value", [np.array([10.0, 20.0]), [10.0, 20.0], np.zeros(0)])
def test_add_at_with_basic_keys_takes_a_host_array_value(shape, value):
    """``np.add.at(x, (1,), v)`` (a key of ints and slices) with ``v`` a NumPy array or a list raised DTypeError
    ('NumPy arrays do not mix with an Array implicitly'): the basic-key path added the host value to an Array
    without bringing it onto the mesh, as ``x[key] = v`` and the integer-array path do."""
    mesh = _mesh(shape)
    a = np.arange(6.0).reshape(3, 2)
    key = (1, slice(0, 0)) if np.size(value) == 0 else (1,)
    x = _split_like(a, mesh, ("dim0", "dim1"), {"dim0": mesh.axis_names[0]})
    np.add.at(x, key, value)
    np.add.at(a, key, np.asarray(value))
    same(x, a)


def _records(fn):
    with sa.comm_log() as log:
        fn()
    return [(r.op, r.dtype, r.elements) for r in log.records]


@pytest.mark.parametrize("shape", MESHES[1:], ids=str)
@pytest.mark.parametrize("value", [7.0, np.float64(7.0)])
def test_a_mask_write_into_a_replicated_array_moves_the_mask_not_the_array(shape, value):
    """``x[mask] = scalar`` with ``x`` replicated over the axes that split the mask computed ``where`` in the
    mask's layout and swapped it back into ``x``'s: an allgather of ``x``'s data (float64, a block of ``x`` per
    device). The mask (bool, only the mask dims) now comes to ``x``'s layout instead."""
    mesh = _mesh(shape)
    a = np.arange(36.0).reshape(6, 6)
    m = (a[:, 0] % 12) == 0
    x = _split_like(a, mesh, ("dim0", "dim1"), {})
    mask = _split_like(m, mesh, ("m0",), {"m0": mesh.axis_names})

    def write():
        x[mask] = value

    recs = _records(write)
    assert all(dt == "bool" for op, dt, _ in recs if op == "allgather"), recs
    a[m] = value
    same(x, a)


@pytest.mark.parametrize("shape", MESHES[1:], ids=str)
def test_a_mask_read_of_a_replicated_array_slices_it_like_the_mask(shape):
    """``x[mask]`` with ``x`` replicated and the mask split allgathered the whole mask over its axes; ``x`` is
    sliced like the mask there instead (a local slice), so only the counts travel besides the selection."""
    mesh = _mesh(shape)
    a = np.arange(48.0).reshape(8, 6)
    m = a % 3 == 1
    x = _split_like(a, mesh, ("dim0", "dim1"), {})
    mask = _split_like(m, mesh, ("m0", "m1"), {"m0": mesh.axis_names[0], "m1": mesh.axis_names[1:]})
    with sa.comm_log() as log:
        got = x[mask]
    assert not [r for r in log.records if r.op == "allgather" and r.dtype == "bool"], log.records
    same(got, a[m])
    assert got.layout  # (split like the mask: nothing was gathered)


@pytest.mark.parametrize("shape", MESHES[1:], ids=str)
def test_take_along_axis_warns_when_it_gathers_ids_of_a_shared_dim(shape, monkeypatch):
    """``xp.take_along_axis`` (``sa.take`` with ids sharing dims with ``x``) allgathered ids split over the axes
    that split the indexed axis without a ``GatherWarning``, however large: only the ids' new dims were
    considered. Every axis the ids lose is announced now (the threshold lowered to 0 bytes here)."""
    monkeypatch.setattr(route, "GATHER_WARN_BYTES", 0)
    mesh = _mesh(shape)
    ax = mesh.axis_names[0]
    a = np.arange(40.0).reshape(8, 5)
    ids = np.random.default_rng(0).integers(-5, 5, (8, 5))
    x = _split_like(a, mesh, ("dim0", "dim1"), {"dim1": ax})
    ix = _split_like(ids, mesh, ("i0", "i1"), {"i0": ax})
    with pytest.warns(sa.GatherWarning, match="take along"):
        got = xp.take_along_axis(x, ix, axis=1)
    same(got, np.take_along_axis(a, ids, axis=1))


@pytest.mark.parametrize("shape", MESHES[1:], ids=str)
@pytest.mark.parametrize("form", ["slice", "ids", "mask"])
def test_a_split_value_written_into_a_replicated_array_warns(shape, form, monkeypatch):
    """``x[key] = v`` with ``x`` replicated over the axes that split the value ``v`` allgathers ``v`` (every
    replica writes every value): by slices, integer arrays and masks, silently however large. It warns now."""
    monkeypatch.setattr(route, "GATHER_WARN_BYTES", 0)
    mesh = _mesh(shape)
    a = np.zeros((7, 4))
    key = {"slice": slice(1, 6), "ids": np.array([1, 2, 3, 4, 5]), "mask": (np.arange(7) % 7) % 6 != 0}[form]
    v = np.arange(20.0).reshape(5, 4)
    x = _split_like(a, mesh, ("dim0", "dim1"), {})
    vx = _split_like(v, mesh, ("v0", "v1"), {"v0": mesh.axis_names})
    with pytest.warns(sa.GatherWarning, match="the value"):
        x[key] = vx
    a[key] = v
    same(x, a)
