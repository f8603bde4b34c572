"""A differential fuzz, against NumPy, of ``x[key]``, ``x[key] = v`` and ``np.add.at`` on split arrays, positional
(``shardarray.array_api``) and named (``x[{dim: ...}]``), with what each device receives: keys mixing ints
(negative), slices (negative steps, bounds out of range), ``None``, Ellipsis, integer arrays (host, lists, split
positional arrays, broadcasting together, separated by slices: NumPy moves their axes first), boolean masks of
every rank anywhere in the key (their ``nonzero()`` indices, as NumPy defines them) and 0-d booleans
(``x[True]``, ``x[0, :, False]``: a new axis of length 1 or 0 where NumPy puts it); writes of scalars, host and
split values broadcast to the selection, of other dtypes (NumPy's casts), with repeated indices (the last write
wins, as NumPy leaves ``x[idx] = v``; ``np.add.at`` adds every one); on the test meshes (1, 2x2, 4, 2x2x2, 3x2) with
uneven and empty blocks. Each case checks the value, dtype and shape, a typed ``sa.ShardArrayError`` where NumPy
raises, and that no collective receives more than a few blocks (of the array, the index arrays, the value and the
result) unless the op warned ``sa.GatherWarning`` (the threshold lowered to 0 bytes). Then the traffic of ``take``
with few ids split over the looked-up dim's axes (an allgather of the ids and one reduce-scatter of the result,
never a result-sized allreduce), against the routed path; and the regressions of the bugs this round found.

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
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.layout import block_bounds
from shardarray.ops.indexing import route, take

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ11_EXAMPLES"
DTYPES = ("float64", "float32", "int64", "int32", "uint8", "bool", "complex64")
SIDES = (0, 1, 2, 3, 5)
SLACK, FEW = 3, 16


# --------------------------------------------------------------------------------------------- data


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    n = math.prod(shape)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return (rng.random(n) < 0.5).reshape(shape)
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -9, 10, n).astype(dt).reshape(shape)
    v = rng.integers(-8, 9, n) / 4
    if dt.kind == "c":
        v = v + 1j * rng.integers(-8, 9, n) / 4
    return v.astype(dt).reshape(shape)


@st.composite
def placed(draw, a: np.ndarray, mesh, prefix: str = "dim"):
    """``a`` as a positional array on ``mesh`` in a random layout (a split size-1 axis stays out: broadcasting it
    gathers its one block, by nature)."""
    dims = tuple(f"{prefix}{k}" for k in range(a.ndim))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1} if a.ndim else {}
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


@st.composite
def either(draw, a: np.ndarray, mesh, forms=("host", "xp", "xp", "list")):
    """An index or a value as NumPy takes it: a host array, a split positional array, or a list."""
    form = draw(st.sampled_from(forms))
    if form == "xp":
        return draw(placed(a, mesh, "ix"))
    if form == "list" and a.ndim and a.size:
        return a.tolist()
    return a


def host(k):
    """A key (or value) with its arrays as NumPy's."""
    if isinstance(k, tuple):
        return tuple(host(i) for i in k)
    if isinstance(k, sa.ShardArray):
        return k.numpy()
    if isinstance(k, list):
        return np.asarray(k)
    return k


@st.composite
def slices(draw, n: int):
    start = draw(st.one_of(st.none(), st.integers(-n - 3, n + 3)))
    stop = draw(st.one_of(st.none(), st.integers(-n - 3, n + 3)))
    return slice(start, stop, draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3])))


@st.composite
def keys(draw, mesh, shape: tuple, writes: bool = False):
    """A positional key for an array of ``shape``: per axis an int, a slice, an integer array or a boolean mask
    (of one or two axes), with ``None``, an Ellipsis and 0-d booleans put in between. Writes with integer arrays
    take only ':' slices (other slices are refused there, documented)."""
    kinds, i = [], 0
    while i < len(shape):
        k = draw(st.sampled_from(["int", "slice", "slice", "ids", "mask"]))
        if k == "mask" and i + 1 < len(shape) and draw(st.booleans()):
            kinds.append(("mask", 2))
            i += 2
        else:
            kinds.append((k, 1))
            i += 1
    if draw(st.booleans()):  # leave trailing axes unindexed
        kinds = kinds[: draw(st.integers(0, len(kinds)))]
    arrays = [k for k, _ in kinds if k in ("ids", "mask")]
    bshape = tuple(draw(st.sampled_from([1, 2, 3])) for _ in range(draw(st.integers(0, 2))))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    key, i = [], 0
    for k, width in kinds:
        n = shape[i]
        if k == "int":
            key.append(int(rng.integers(-n, n)) if n else slice(None))
        elif k == "slice":
            key.append(slice(None) if writes and arrays else draw(slices(n)))
        elif k == "ids":
            ids_shape = bshape[draw(st.integers(0, len(bshape))) :] if len(arrays) > 1 else bshape
            ids = rng.integers(-n, n, ids_shape) if n else np.zeros(ids_shape, np.int64)
            if n == 0 and ids.size:
                key.append(slice(None))
            else:
                key.append(draw(either(ids.astype(draw(st.sampled_from(["int64", "int32", "int8"]))), mesh)))
        else:
            m = rng.random(shape[i : i + width]) < draw(st.sampled_from([0.0, 0.5, 1.0]))
            key.append(draw(either(m, mesh, ("host", "xp", "list"))))
        i += width
    for _ in range(draw(st.integers(0, 2))):
        zero_d = [] if arrays else [True, False, np.True_, np.array(False)]  # (with arrays: tests/ops/test_fuzz14_indexing)
        extra = draw(st.sampled_from([None, None, Ellipsis, *zero_d]))
        if extra is Ellipsis and any(k is Ellipsis for k in key):
            continue
        key.insert(draw(st.integers(0, len(key))), extra)
    return tuple(key) if len(key) != 1 or draw(st.booleans()) else key[0]


# --------------------------------------------------------------------------------------------- checks


def _largest(x) -> int:
    return max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(x.mesh, x.spec)), default=0)


def received(r) -> int:
    """What one device receives in record ``r`` (at most): an allgather its peers' shards, an alltoall what leaves
    the device, a reduce-scatter ``(n - 1)/n`` of its buffer, every other collective its buffer."""
    if r.group_size <= 1 or not r.elements:
        return 0
    if r.op == "allgather":
        return (r.group_size - 1) * r.elements
    if r.op in ("alltoall", "reduce_scatter"):
        return math.ceil(r.wire_bytes * r.elements / r.bytes)
    return r.elements


def _arrays(*things) -> list:
    out = []
    for t in things:
        if isinstance(t, tuple):
            out += _arrays(*t)
        elif isinstance(t, sa.ShardArray):
            out.append(t)
    return out


def logged(fn):
    """``(fn(), records, warned)`` with the indexing ops' gather warning threshold lowered to 0 bytes."""
    old = route.GATHER_WARN_BYTES
    route.GATHER_WARN_BYTES = 0
    try:
        with warnings.catch_warnings(record=True) as caught, sa.comm_log() as log:
            warnings.simplefilter("always", sa.GatherWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            out = fn()
    finally:
        route.GATHER_WARN_BYTES = old
    warned = any(issubclass(w.category, sa.GatherWarning) for w in caught)
    return out, [r for r in log.records if r.group_size > 1], warned


def no_big(records, warned: bool, sizes: list[int], what) -> None:
    """No collective receives more than ``SLACK`` times the largest block involved, unless it warned."""
    if warned:
        return
    cap = SLACK * max(sizes, default=0) + FEW
    big = [r for r in records if received(r) > cap]
    assert not big, f"{what!r:.200}: a collective receives more than {SLACK}x a block ({cap}) silently: {big}"


def same(got, expected) -> None:
    g = got.numpy() if isinstance(got, sa.ShardArray) else np.asarray(got)
    e = np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    np.testing.assert_array_equal(g, e)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def differential(np_call, sa_call, involved, what):
    """NumPy's result against shardarray's (a typed ``sa.ShardArrayError`` where NumPy raises), and rule (3)."""
    try:
        expected = _quiet(np_call)
    except (IndexError, ValueError, TypeError, OverflowError) as e:
        with pytest.raises(sa.ShardArrayError):
            got = _quiet(sa_call)
            if isinstance(got, sa.ShardArray):
                got.numpy()
            pytest.fail(f"NumPy raised {type(e).__name__}: {e}; shardarray gave {got!r:.200}")
        return
    got, recs, warned = logged(sa_call)
    same(got, expected)
    no_big(recs, warned, [_largest(a) for a in _arrays(*involved, got)], what)


# =============================================================================================== reads


@fuzz(70, ENV)
@given(st.data())
def test_fuzz_getitem(data):
    """``x[key]`` against NumPy for mixed keys (ints, slices, None, Ellipsis, integer arrays, masks anywhere, 0-d
    booleans), moving at most a few blocks per device."""
    mesh = data.draw(meshes())
    shape = tuple(data.draw(st.sampled_from(SIDES)) for _ in range(data.draw(st.integers(1, 3))))
    a = _values(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), shape, data.draw(st.sampled_from(DTYPES)))
    x = data.draw(placed(a, mesh))
    key = data.draw(keys(mesh, a.shape))
    differential(lambda: a[host(key)], lambda: x[key], (x, key), key)


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_named_getitem(data):
    """``x[{dim: index}]`` by name: ints, slices, 1-D integer arrays (named: their dim replaces the indexed one)
    and 1-D boolean masks along one dim, against NumPy."""
    mesh = data.draw(meshes())
    dims = ("b", "s", "h")[: data.draw(st.integers(1, 3))]
    shape = tuple(data.draw(st.sampled_from(SIDES)) for _ in dims)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = _values(rng, shape, data.draw(st.sampled_from(DTYPES)))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims)))
    d = data.draw(st.sampled_from(dims))
    ax, n = dims.index(d), x.sizes[d]
    kind = data.draw(st.sampled_from(["int", "slice", "ids", "mask"]))
    if kind == "int" and n:
        i = int(rng.integers(-n, n))
        differential(lambda: np.take(a, i, axis=ax), lambda: x[{d: i}], (x,), (d, i))
    elif kind == "ids" and n:
        ids = rng.integers(0, n, data.draw(st.sampled_from([0, 1, 3, 6])))
        s = sa.asarray(ids, dims=("t",), mesh=mesh, layout=data.draw(layouts(mesh, ("t",))))
        y, recs, warned = logged(lambda: x[{d: s}])
        same(y, np.moveaxis(np.take(a, ids, axis=ax), ax, y.dims.index("t")))
        no_big(recs, warned, [_largest(t) for t in (x, s, y)], (d, ids))
    elif kind == "mask":
        m = rng.random(n) < 0.5
        key = sa.asarray(m, dims=(d,), mesh=mesh, layout=data.draw(layouts(mesh, (d,)))) if n else m
        y, recs, warned = logged(lambda: x[{d: key}])
        same(y, np.compress(m, a, axis=ax))
        no_big(recs, warned, [_largest(t) for t in _arrays(x, key, y)], (d, m))
    else:
        sl = data.draw(slices(n))
        differential(lambda: a[(slice(None),) * ax + (sl,)], lambda: x[{d: sl}], (x,), (d, sl))


# =============================================================================================== writes


def _value_for(data, mesh, sel: tuple, dtype: np.dtype):
    """A write's value: a scalar (Python or NumPy, sometimes of another kind), or an array broadcasting to
    ``sel`` (leading and size-1 axes, sometimes of another dtype), host or split."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    vdtype = (
        str(dtype)
        if data.draw(st.integers(0, 2))
        else data.draw(st.sampled_from(["int64", "float64", "bool", "complex128"]))
    )
    if data.draw(st.booleans()):
        v = _values(rng, (), vdtype)[()]
        return v.item() if data.draw(st.booleans()) else v
    k = data.draw(st.integers(0, len(sel)))
    vshape = tuple(1 if data.draw(st.integers(0, 3)) == 0 else s for s in sel[len(sel) - k :])
    if data.draw(st.integers(0, 5)) == 0:
        vshape = (1, *vshape)
    return data.draw(either(_values(rng, vshape, vdtype), mesh, ("host", "xp", "xp")))


def _selection(a: np.ndarray, key) -> tuple | None:
    try:
        return _quiet(lambda: a[host(key)]).shape
    except (IndexError, ValueError, TypeError):
        return None


@fuzz(70, ENV)
@given(st.data())
def test_fuzz_setitem(data):
    """``x[key] = v`` against NumPy: mixed keys, values broadcast to the selection, other dtypes cast as NumPy casts
    (an unsafe cast of a host or split array; a scalar checked: out of range, NaN into integers and complex into
    real raise typed errors), repeated indices (the last write wins)."""
    mesh = data.draw(meshes())
    shape = tuple(data.draw(st.sampled_from(SIDES)) for _ in range(data.draw(st.integers(1, 3))))
    a = _values(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), shape, data.draw(st.sampled_from(DTYPES)))
    x = data.draw(placed(a, mesh))
    key = data.draw(keys(mesh, a.shape, writes=True))
    sel = _selection(a, key)
    v = _value_for(data, mesh, sel if sel is not None else (), a.dtype)
    if np.asarray(host(v)).dtype.kind == "c" and a.dtype.kind != "c" and sel is not None:
        with pytest.raises(sa.DTypeError, match="complex"):  # (NumPy drops the imaginary part: refused, documented)
            x[key] = v
        return

    def np_write():
        e = a.copy()
        hv = host(v)
        if sel == () and np.size(hv) == 1:  # (NumPy 2.4 refuses x[i, j] = [v], not x[..., i, j] = [v]: see setitem)
            hv = np.asarray(hv).reshape(())
        e[host(key)] = hv
        return e

    def sa_write():
        x[key] = v
        return x

    differential(np_write, sa_write, (x, key, v), key)


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_add_at(data):
    """``np.add.at(x, key, v)``: every repeated index adds; masks, None and 0-d booleans in the key as reads take
    them."""
    mesh = data.draw(meshes())
    shape = tuple(data.draw(st.sampled_from(SIDES)) for _ in range(data.draw(st.integers(1, 3))))
    dtype = data.draw(st.sampled_from(("float64", "int64", "int32", "complex64")))
    a = _values(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), shape, dtype)
    x = data.draw(placed(a, mesh))
    key = data.draw(keys(mesh, a.shape, writes=True))
    sel = _selection(a, key)
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    vshape = () if sel is None else sel[len(sel) - data.draw(st.integers(0, len(sel))) :]
    v = _values(rng, vshape, dtype)
    v = data.draw(either(v, mesh, ("host", "xp"))) if v.ndim else v[()]

    def np_add():
        e = a.copy()
        hk = host(key)
        np.add.at(e, hk, np.broadcast_to(host(v), e[hk].shape))  # (NumPy's add.at broadcasts some values wrongly)
        return e

    def sa_add():
        np.add.at(x, key, v)
        return x

    differential(np_add, sa_add, (x, key, v), key)


@fuzz(30, ENV)
@given(st.data())
def test_fuzz_named_setitem(data):
    """``x[{dim: index}] = v`` by name (ints, slices, 1-D masks, integer arrays with repeats: the last write
    wins)."""
    mesh = data.draw(meshes())
    dims = ("b", "s")[: data.draw(st.integers(1, 2))]
    shape = tuple(data.draw(st.sampled_from(SIDES)) for _ in dims)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = _values(rng, shape, data.draw(st.sampled_from(("float64", "int32", "bool"))))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims)))
    d = data.draw(st.sampled_from(dims))
    ax, n = dims.index(d), x.sizes[d]
    kind = data.draw(st.sampled_from(["int", "slice", "ids", "mask"]))
    e = a.copy()
    if kind == "mask":
        m = rng.random(n) < 0.5
        key = (
            sa.asarray(m, dims=(d,), mesh=mesh, layout=data.draw(layouts(mesh, (d,))))
            if data.draw(st.booleans())
            else m
        )
        np_key = (slice(None),) * ax + (m,)
    elif kind == "ids" and n:
        ids = rng.integers(0, n, data.draw(st.sampled_from([1, 4, 7])))
        key = sa.asarray(ids, dims=(d,), mesh=mesh, layout=data.draw(layouts(mesh, (d,))))
        np_key = (slice(None),) * ax + (ids,)
    elif kind == "int" and n:
        key = int(rng.integers(-n, n))
        np_key = (slice(None),) * ax + (key,)
    else:
        key = data.draw(slices(n))
        np_key = (slice(None),) * ax + (key,)
    v = _values(rng, (), str(a.dtype))[()]
    e[np_key] = v

    def write():
        x[{d: key}] = v
        return x

    y, recs, warned = logged(write)
    same(y, e)
    no_big(recs, warned, [_largest(t) for t in _arrays(x, key)], (d, key))


# =============================================================================================== take's traffic


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_take_few_ids_split_like_dim(data):
    """``take`` with fewer than ``ROUTE_MIN_IDS`` ids a device, split over the looked-up dim's axes: one allgather
    of the ids over those axes and one reduce-scatter of the result back (no allreduce of the whole result); the
    result is split like the ids, as routed, and each device receives at most ``k - 1`` blocks of ids and of the
    result (``k`` the lost axes' size): at most ``k - 1`` times what the routed path receives, plus its counts."""
    mesh = data.draw(meshes())
    v = data.draw(st.sampled_from((1, 2, 5, 8)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = _values(rng, (v, data.draw(st.sampled_from((1, 3)))), data.draw(st.sampled_from(("float64", "int64"))))
    x = sa.asarray(a, dims=("v", "e"), mesh=mesh, layout=data.draw(layouts(mesh, ("v", "e"))))
    ids_np = rng.integers(0, v, data.draw(st.sampled_from((0, 1, 3, 7, 12))))
    ids = sa.asarray(ids_np, dims=("t",), mesh=mesh, layout=data.draw(layouts(mesh, ("t",))))
    y, recs, _ = logged(lambda: sa.take(x, ids, "v"))
    same(y, a[ids_np])
    lost = [ax for ax in ids.spec.of("t") if ax in x.spec.of("v")]
    if not lost:
        return
    assert "allreduce" not in {r.op for r in recs if set(r.axes) <= set(lost)}, recs
    kept = tuple(ax for ax in ids.spec.of("t") if ax not in x.spec.of("e"))  # (x's other dims keep theirs)
    assert y.pending == () and y.spec.of("t") == kept, (y.layout, y.pending, ids.layout)
    k = mesh.axes_size(tuple(lost))
    rows = max(_largest(y), 1)
    got = sum(received(r) for r in recs)
    rest = len(x.spec.of("v")) > len(lost)  # (axes of v the ids do not use: an allreduce of the result block)
    assert got <= (k - 1) * (_largest(ids) + rows) + rest * rows + FEW, (recs, x.layout, ids.layout)
    old = take.ROUTE_MIN_IDS
    take.ROUTE_MIN_IDS = 0
    try:
        routed, rrecs, _ = logged(lambda: sa.take(x, ids, "v"))
    finally:
        take.ROUTE_MIN_IDS = old
    same(routed, a[ids_np])
    assert routed.layout == y.layout
    assert got <= (k - 1) * sum(received(r) for r in rrecs) + rest * rows + k * FEW, (recs, rrecs)


def test_take_of_few_split_ids_reduce_scatters_the_result(monkeypatch):
    """Fewer than ROUTE_MIN_IDS ids a device, split over the axes of the looked-up dim, left the result pending over
    them: an allreduce of the whole (gathered) result, 2(p-1)/p of p blocks on the wire, and a warning that named
    only the ids' bytes. Now one reduce-scatter returns each device its own ids' rows (half the bytes), the result
    is split like the ids, and the warning names the reduce-scatter's bytes too."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(64.0 * 3).reshape(64, 3)
    ids_np = np.random.default_rng(0).integers(0, 64, 400)
    x = sa.asarray(a, dims=("v", "e"), mesh=mesh, layout={"v": ("row", "col")})
    ids = sa.asarray(ids_np, dims=("t",), mesh=mesh, layout={"t": ("row", "col")})
    monkeypatch.setattr(route, "GATHER_WARN_BYTES", 0)
    with pytest.warns(sa.GatherWarning, match="reduce-scatter over \\('row', 'col'\\), 7200 bytes"):
        with sa.comm_log() as log:
            y = sa.take(x, ids, "v")
    recs = [r for r in log.records if r.group_size > 1]
    same(y, a[ids_np])
    assert y.layout == {"t": ("row", "col")} and y.pending == ()
    assert [r.op for r in recs] == ["allgather", "reduce_scatter", "reduce_scatter"], recs
    assert sum(r.wire_bytes for r in recs if r.op == "reduce_scatter") == 3 * 100 * 3 * 8
    monkeypatch.setattr(route, "GATHER_WARN_BYTES", 1 << 40)
    g = sa.grad(lambda t: sa.sum(sa.take(t, ids, "v")))(x)  # the VJP takes the cotangent in the new layout
    expected = np.zeros_like(a)
    np.add.at(expected, ids_np, 1.0)
    same(g, expected)


# =============================================================================================== regressions


def _x(mesh, a, lay=None):
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    lay = {"dim0": "row", "dim1": "col"} if lay is None else lay
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout={d: v for d, v in lay.items() if d in dims}), xp.Array)


@pytest.mark.parametrize(
    "key",
    [
        True,
        False,
        (True,),
        (Ellipsis, True),
        (0, True),
        (0, slice(None), True),
        (slice(None), 1, np.False_),
        (True, None, False),
        (None, 1, np.array(True), -1),
    ],
    ids=repr,
)
def test_zero_d_boolean_indices_add_an_axis_where_numpy_does(key):
    """``x[True]``, ``x[0, True]``, ``x[0, :, True]`` (ints and 0-d booleans are advanced indices: their axis stands
    first when they are apart) raised ArgumentError (only ``np.True_`` alone worked); now reads, writes and
    ``np.add.at`` follow NumPy."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(24.0).reshape(2, 3, 4)
    x = _x(mesh, a)
    same(x[key], a[key])
    sel = a[key].shape
    v = np.arange(float(sel[-1])) if sel else 7.0
    e = a.copy()
    e[key] = v
    x[key] = v
    same(x, e)
    np.add.at(e, key, 1.0)
    np.add.at(x, key, 1.0)
    same(x, e)


def test_masks_anywhere_in_the_key_are_their_nonzero_indices():
    """A boolean mask after a slice or an int (``x[:, m]``, ``x[0, m]``), or beside integer arrays, raised
    ArgumentError; it is NumPy's ``nonzero()`` indices in its place (a split mask's by ``sa.nonzero``)."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(24.0).reshape(2, 3, 4)
    m = np.array([True, False, True])
    m2 = np.array([[True, False, False, True], [False, True, True, False], [True, True, False, False]])
    x = _x(mesh, a)
    sm = as_kind(sa.asarray(m2, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"}), xp.Array)
    for key, hkey in [
        ((slice(None), m), (slice(None), m)),
        ((0, m), (0, m)),
        ((np.array([1, 0]), m), None),
        ((Ellipsis, m, 1), None),
        ((1, sm), (1, m2)),
        ((slice(None, None, -1), sm), (slice(None, None, -1), m2)),
    ]:
        hkey = key if hkey is None else hkey
        same(x[key], a[hkey])
    e = a.copy()
    e[:, m2] = -1.0
    x[:, sm] = -1.0
    same(x, e)
    with pytest.raises(sa.DimensionError, match="mask of shape"):
        x[:, np.array([True, False])]


def test_none_with_integer_arrays():
    """``None`` beside integer arrays raised ArgumentError; it adds its axis where NumPy does (a None between the
    arrays separates them, as a slice does: their axes come first)."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(24.0).reshape(2, 3, 4)
    ids = np.array([[1, 0], [-1, 1]])
    for key in [
        (ids, None),
        (None, ids),
        (0, None, ids),
        (ids, None, slice(None), ids),
        (Ellipsis, None, ids),
        (slice(None), ids, None, 1),
    ]:
        x = _x(mesh, a)
        same(x[key], a[key])
        e = a.copy()
        v = np.arange(float(a[key].shape[-1]))
        e[key] = v
        x[key] = v
        same(x, e)
        v = np.arange(float(a[key].shape[0])).reshape((-1,) + (1,) * (len(a[key].shape) - 1))  # (size 1 at None)
        e[key] = v
        x[key] = v
        same(x, e)


def test_getitem_results_are_copies_not_views():
    """A getitem result never aliases its array (value semantics, as JAX; NumPy's basic slicing gives views): a
    write to either does not reach the other, even where the result's blocks started as views of the array's."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(24.0).reshape(2, 3, 4)
    for lay in ({}, {"dim1": "row", "dim2": "col"}):
        x = _x(mesh, a, lay)
        y, z = x[0], x[:, 1:, ::2]
        y[...] = -1.0
        z[0] = -2.0
        same(x, a)
        x[...] = 5.0
        same(y, np.full((3, 4), -1.0))
        assert float(z.numpy()[1, 0, 0]) == a[1, 1, 0]


def test_a_host_value_with_leading_size_one_axes_writes_through_integer_arrays():
    """``x[[0, 1]] = np.ones((1, 1, 2))`` (NumPy drops a value's leading size-1 axes) raised DimensionError from
    ``asarray`` (the host value was named with too few dims); a split value already dropped them."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(6.0).reshape(3, 2)
    for key, v in [([0, 1], np.ones((1, 1, 2, 2))), ((np.array([2, 2]), 1), np.array([[[4.0, 5.0]]]))]:
        x = _x(mesh, a)
        e = a.copy()
        e[key] = v
        x[key] = v
        same(x, e)
        np.add.at(e, key, v.reshape(e[key].shape))  # (NumPy's add.at refuses the leading axes; the library takes them)
        np.add.at(x, key, v)
        same(x, e)
