"""The ``meta`` backend answers shapes and logs the same traffic as NumPy shards (fuzz round 13).

Ops that refused on meta although their result shapes do not depend on the values now answer, with exactly the
NumPy shards' dims, sizes, dtype, layout, pending sums, block shapes and comm log (collective, axes, group,
elements, bytes, dtype), on the meshes 2x2, 2x2x2 and 3x2 (uneven and empty blocks). A check of the input read
to the host (``bool`` of a flag) is skipped on meta after the collectives that compute it (``backend.meta.truth``);
a branch on the data takes a documented model (array bins increasing, coordinates non-uniform, ``lstsq``'s ``a``
of full rank and finite, ``percentile``'s array ``q`` interior).

Found here and fixed:

* ``histogram`` (bins a number without ``range``, or an array of edges), ``histogram2d``/``histogramdd``,
  ``digitize`` with array or host bins, ``gradient`` with coordinates, ``linalg.lstsq``, ``gcd``/``lcm``,
  ``nanargmax``/``nanargmin`` and ``percentile`` with an array ``q`` raised ``BackendError`` on meta;
* ``digitize`` with decreasing unsigned bins (``uint8 [3, 2, 1]``) took them as increasing (their differences
  wrapped around): wrong bins on every backend; NumPy compares neighbours;
* ``gcd``/``lcm`` ran Euclid's algorithm on the whole array with one allreduce and host read per step (traffic
  that grew with the values): now the array module's ufunc on each block, with no communication (and ``lcm``
  of int8 values whose multiple overflows now wraps as NumPy's: ``|a // g * b|`` had the other sign);
* ``gradient`` with host coordinates compared their steps on the devices (an allreduce): now on the host;
* the sample sort (``samplesort.py``) and writes at integer ids (``id_writes.py``) logged nothing on meta: they
  log the NumPy path's collectives in order, with its dtypes, the data-independent ones (allgathers, counts)
  exactly and the value-dependent alltoallv sizes by the documented model (ids and values in random order).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fuzzing import fuzz
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.chunks import group_chunk
from shardarray.ops.sorting.samplesort import sample_sort

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
NUMPY_ONLY = pytest.mark.numpy_only(reason="compares the meta backend with NumPy shards (CuPy shards change neither)")

SHAPES = ({"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}, {"p": 3, "q": 2})
_MESHES: dict = {}


def _mesh(shape: dict, backend: str) -> sa.Mesh:
    key = (tuple(shape.items()), backend)
    if key not in _MESHES:
        _MESHES[key] = sa.Mesh(dict(shape), backend=backend)
    return _MESHES[key]


def _values(shape, dtype, seed=0):
    r = np.random.default_rng(seed).uniform(0.5, 2.0, shape)
    if dtype == "bool":
        return r > 1.0
    if np.dtype(dtype).kind == "c":
        return (r + 1j * r[::-1]).astype(dtype)
    return (r * 3).astype(dtype)


def _pos(m, shape=(5, 3), dtype="float64", seed=0, layout=None):
    """A positional array; ``layout(mesh)`` (by position: ``{0: axes, ...}``) or the default one."""
    host = _values(shape, dtype, seed)
    if layout is None:
        return xp.asarray(host, device=m)
    dims = tuple(f"dim{k}" for k in range(len(shape)))
    named = sa.asarray(host, dims=dims, mesh=m, layout={dims[k]: v for k, v in layout(m).items()})
    return xp.asarray(named)


def _dev(m, host):
    return xp.asarray(np.asarray(host), device=m)


def _sig(y):
    """What meta must reproduce: dims, sizes, dtype, layout, pending axes and every device's block shape/dtype."""
    if isinstance(y, sa.ShardArray):
        blocks = tuple(None if s is None else (tuple(s.shape), np.dtype(s.dtype)) for s in y.shards)
        return (y.dims, y.shape, y.dtype, y.layout, tuple(y.pending), blocks)
    if isinstance(y, (tuple, list)):
        return tuple(_sig(v) for v in y)
    return type(y).__name__


def _traced(op, shape, backend):
    """``(signature of op's result, comm log)``; a typed error must be the same on both."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with sa.comm_log() as log:
            try:
                out = _sig(op(_mesh(shape, backend)))
            except sa.ShardArrayError as e:
                out = ("raises", type(e).__name__)
    return out, [(r.op, r.axes, r.group_size, r.elements, r.bytes, r.dtype) for r in log.records]


def _last(m):
    return {0: m.axis_names[-1]}


def _both(m):
    return {1: m.axis_names[0], 0: m.axis_names[1:]}


_EDGES = np.array([0.0, 1.0, 2.5, 4.0, 6.5])
_COORDS = np.array([0.0, 1.0, 3.0, 4.0, 7.0, 9.0])

#: name -> op(mesh): refused on meta before, the same answer and comm log as NumPy shards now
OPS = {
    "histogram bins=4 range": lambda m: xp.histogram(_pos(m, (7,)), bins=4, range=(0, 6)),
    "histogram bins=4": lambda m: xp.histogram(_pos(m, (7,)), bins=4),
    "histogram bins=3 float32 2-D": lambda m: xp.histogram(_pos(m, (4, 3), "float32", layout=_both), bins=3),
    "histogram int32 data": lambda m: xp.histogram(_pos(m, (7,), "int32"), bins=3),
    "histogram array edges": lambda m: xp.histogram(_pos(m, (7,)), bins=_dev(m, _EDGES)),
    "histogram array edges density": lambda m: xp.histogram(_pos(m, (7,)), bins=_dev(m, _EDGES), density=True),
    "histogram weights density": lambda m: xp.histogram(
        _pos(m, (7,)), bins=3, density=True, weights=_pos(m, (7,), seed=2)
    ),
    "histogram2d": lambda m: xp.histogram2d(_pos(m, (7,)), _pos(m, (7,), seed=1), bins=[_dev(m, _EDGES), 3]),
    "histogramdd weights": lambda m: xp.histogramdd(_pos(m, (7, 2)), bins=2, weights=_pos(m, (7,), seed=3)),
    "digitize array bins": lambda m: xp.digitize(_pos(m, (7,)), _dev(m, _EDGES)),
    "digitize array bins right": lambda m: xp.digitize(_pos(m, (4, 3), layout=_both), _dev(m, _EDGES), right=True),
    "digitize host bins decreasing": lambda m: xp.digitize(_pos(m, (7,)), _EDGES[::-1].copy()),
    "gradient array coords": lambda m: xp.gradient(_pos(m, (6,)), _dev(m, _COORDS)),
    "gradient host coords": lambda m: xp.gradient(_pos(m, (6, 4), layout=_both), _COORDS, axis=0),
    "gradient host uniform edge_order=2": lambda m: xp.gradient(_pos(m, (6,)), np.arange(6.0) * 2, edge_order=2),
    "gradient two axes": lambda m: xp.gradient(_pos(m, (6, 4)), _dev(m, _COORDS), np.array([0.0, 1, 2, 4])),
    "lstsq": lambda m: xp.linalg.lstsq(_pos(m, (6, 3)), _pos(m, (6, 2), seed=1)),
    "lstsq 1-D b": lambda m: xp.linalg.lstsq(_pos(m, (6, 3)), _pos(m, (6,), seed=1)),
    "lstsq wide float32": lambda m: xp.linalg.lstsq(_pos(m, (3, 6), "float32"), _pos(m, (3,), "float32", seed=1)),
    "gcd": lambda m: xp.gcd(_pos(m, dtype="int32"), _pos(m, dtype="int32", seed=1)),
    "gcd broadcast": lambda m: xp.gcd(_pos(m, dtype="int64", layout=_both), _pos(m, (3,), "int64", seed=1)),
    "lcm scalar": lambda m: xp.lcm(_pos(m, dtype="int16"), 6),
    "nanargmax": lambda m: xp.nanargmax(_pos(m), axis=0),
    "nanargmin keepdims": lambda m: xp.nanargmin(_pos(m, dtype="float32", layout=_both), axis=1, keepdims=True),
    "nanargmax all": lambda m: xp.nanargmax(_pos(m)),
    "nanargmin complex": lambda m: xp.nanargmin(_pos(m, dtype="complex64"), axis=0),
    "percentile array q": lambda m: xp.percentile(  # (along an unsplit axis: a split one sorts, sort.py)
        _pos(m, layout=lambda m: {1: m.axis_names[0]}), _pos(m, (3,), seed=1) * 10, axis=0
    ),
    "nanpercentile 0-d q": lambda m: xp.nanpercentile(_pos(m, layout=_last), _pos(m, (), "int32"), axis=1),
}


def _cases(table):
    return [
        pytest.param(name, SHAPES[k % len(SHAPES)], id=f"{name}-{k % len(SHAPES)}")
        for k, name in enumerate(sorted(table))
    ]


@NUMPY_ONLY
@pytest.mark.parametrize("name,shape", _cases(OPS))
def test_an_op_on_meta_matches_numpy_shards(name, shape):
    numpy = _traced(OPS[name], shape, "numpy")
    assert numpy[0][0] != "raises"
    assert _traced(OPS[name], shape, "meta") == numpy


#: ops whose result depends on the values: a typed BackendError on meta, naming the op
DATA_DEPENDENT = {
    "real_if_close": lambda m: xp.real_if_close(_pos(m, dtype="complex64")),
    "bincount": lambda m: xp.bincount(_pos(m, (7,), "int32")),
}


@NUMPY_ONLY
@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_a_data_dependent_result_raises_backend_error_on_meta(name):
    DATA_DEPENDENT[name](_mesh(SHAPES[0], "numpy"))
    with pytest.raises(sa.BackendError, match=name):
        DATA_DEPENDENT[name](_mesh(SHAPES[0], "meta"))


# ------------------------------------------------------------------------- value-routed: modeled sizes


def _seq(log):
    """The collectives in order without their value-dependent sizes: (op, axes, group, dtype)."""
    return [(r[0], r[1], r[2], r[5]) for r in log]


def _exact(log):
    """The records whose sizes do not depend on the values: allgathers (samples, lengths)."""
    return [r for r in log if r[0] == "allgather"]


def _sorted(shape, backend, axes, n, dtype, payload, keep, cols, seed=0):
    """``sample_sort`` of ``n`` random keys (rows of ``cols`` keys) on the canonical blocks over ``axes``."""
    m = _mesh(shape, backend)
    radix = [m.axis_size(a) for a in axes]
    member = {d: j for g in m.groups(axes) for j, d in enumerate(g)}
    host = np.random.default_rng(seed).normal(size=(n,) + (() if cols is None else (cols,))) * 10
    host = host.astype("float32").astype(dtype) if dtype == "bfloat16" else host.astype(dtype)
    blocks, pays = [], []
    for d in range(m.size):
        lo, hi = group_chunk(0, n, radix, member[d])
        blocks.append(m.backend.from_numpy(host[lo:hi]))
        pays.append(m.backend.from_numpy(np.arange(lo, hi, dtype=np.float32)))
    with sa.comm_log() as log:
        out = sample_sort(m, axes, blocks, n, pays if payload == "array" else payload, host.dtype, keep)

    def sig(b):
        return tuple(sig(v) for v in b) if isinstance(b, tuple) else (tuple(b.shape), np.dtype(b.dtype))

    return [sig(b) for b in out], [(r.op, r.axes, r.group_size, r.elements, r.bytes, r.dtype) for r in log.records]


_SORTS = [
    ("float32", None, False, None),
    ("int8", "index", False, None),
    ("complex64", "array", False, None),
    ("bfloat16", "index", True, None),
    ("float64", None, False, 2),
    ("float64", "index", True, 3),
]
_GROUPS = [(SHAPES[0], ("row",)), (SHAPES[1], ("dep", "row")), (SHAPES[2], ("p",)), (SHAPES[2], ("p", "q"))]


@NUMPY_ONLY
@pytest.mark.parametrize("n", [0, 1, 5, 23])
@pytest.mark.parametrize("kind", _SORTS, ids=lambda k: "-".join(map(str, k)))
def test_sample_sort_on_meta_logs_numpys_collectives(kind, n):
    """The same blocks out, the same collectives in the same order and dtypes, the allgathers exact."""
    shape, axes = _GROUPS[(n + _SORTS.index(kind)) % len(_GROUPS)]
    meta = _sorted(shape, "meta", axes, n, *kind)
    numpy = _sorted(shape, "numpy", axes, n, *kind)
    assert meta[0] == numpy[0]
    assert _seq(meta[1]) == _seq(numpy[1]) and len(meta[1]) == 4
    assert _exact(meta[1]) == _exact(numpy[1])


@NUMPY_ONLY
@pytest.mark.parametrize("shape,axes", _GROUPS)
def test_sample_sort_model_prices_random_keys(shape, axes):
    """The modeled bucket exchange is what random keys send: within 30% of the most a device sends."""
    meta = _sorted(shape, "meta", axes, 1200, "float64", None, False, None)[1]
    numpy = _sorted(shape, "numpy", axes, 1200, "float64", None, False, None, seed=3)[1]
    modeled, real = meta[1][3], numpy[1][3]
    assert 0.7 * real <= modeled <= 1.3 * real


def _set_ids(fn):
    def run(m):
        a = _pos(m, (6, 3), layout=_both)
        fn(a, m)
        return a

    return run


#: writes at integer ids: the same result, the same collectives, the counts' exchange exact
WRITES = {
    "x[ids] = scalar": _set_ids(lambda a, m: a.__setitem__(np.array([0, 3, 5, 3]), 2.0)),
    "x[ids] = array": _set_ids(lambda a, m: a.__setitem__(np.array([1, 4]), _pos(m, (2, 3), seed=2))),
    "x[:, ids] = array": _set_ids(lambda a, m: a.__setitem__((slice(None), np.array([2, 0])), _pos(m, (6, 2)))),
    "x[ids, ids] = device scalar": _set_ids(lambda a, m: a.__setitem__((np.array([5, 0]), np.array([1, 2])), 7.0)),
    "add.at": _set_ids(lambda a, m: np.add.at(a, np.array([0, 0, 4]), 1.5)),
}


@NUMPY_ONLY
@pytest.mark.parametrize("name,shape", _cases(WRITES))
def test_writes_at_ids_on_meta_log_numpys_collectives(name, shape):
    meta, numpy = _traced(WRITES[name], shape, "meta"), _traced(WRITES[name], shape, "numpy")
    assert meta[0] == numpy[0]
    assert _seq(meta[1]) == _seq(numpy[1])
    counts = [i for i, r in enumerate(numpy[1]) if r[0] == "alltoall" and r[3] == r[2] - 1 and r[5] == "int64"]
    assert counts and meta[1][counts[0]] == numpy[1][counts[0]]


# -------------------------------------------------------------------------------------- fixed behaviour


@pytest.mark.parametrize("host", [True, False])
def test_digitize_decreasing_unsigned_bins_as_numpy(host):
    """Unsigned bins' differences wrapped around: decreasing ones were taken as increasing."""
    m = sa.Mesh({"row": 2, "col": 2})
    bins = np.array([9, 6, 3, 1], dtype=np.uint8)
    x = np.array([0.5, 1.0, 2.0, 3.5, 6.0, 8.0, 9.5])
    got = xp.digitize(_dev(m, x), bins if host else _dev(m, bins))
    np.testing.assert_array_equal(got.numpy(), np.digitize(x, bins))
    with pytest.raises(sa.ArgumentError, match="monotonically"):
        xp.digitize(_dev(m, x), np.array([1, 3, 2], dtype=np.uint8) if host else _dev(m, np.array([1, 3, 2], "u1")))


@NUMPY_ONLY
def test_gcd_and_lcm_are_local_and_as_numpy():
    """No collective for operands of one layout (Euclid's steps each allreduced a flag before)."""
    m = sa.Mesh({"p": 3, "q": 2})
    a = np.array([[12, -18, 0, 7], [2**62, -(2**63), 0, 35]], dtype=np.int64)
    b = np.array([[8, 27, 0, -21], [6, 0, 5, 14]], dtype=np.int64)
    with sa.comm_log() as log:
        g, lc = xp.gcd(_dev(m, a), _dev(m, b)), xp.lcm(_dev(m, a[:, :3]), 6)
    assert log.records == []
    np.testing.assert_array_equal(g.numpy(), np.gcd(a, b))
    np.testing.assert_array_equal(lc.numpy(), np.lcm(a[:, :3], 6))


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64"])
def test_gcd_and_lcm_follow_numpy(dtype):
    m = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    a = rng.integers(max(info.min, -1000), min(info.max, 1000), (5, 3)).astype(dtype)
    b = rng.integers(max(info.min, -1000), min(info.max, 1000), (3,)).astype(dtype)
    for fn in ("gcd", "lcm"):
        got = getattr(xp, fn)(_dev(m, a), _dev(m, b)).numpy()
        want = getattr(np, fn)(a, b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------------------- fuzz

#: (name, op(x, y) on two float arrays of one shape) whose traffic does not depend on the values
_FUZZ_OPS = [
    ("histogram", lambda x, y: xp.histogram(x, bins=3)),
    ("histogram range weights", lambda x, y: xp.histogram(x, bins=2, range=(0, 5), weights=y)),
    ("digitize", lambda x, y: xp.digitize(x, _EDGES)),
    ("gradient", lambda x, y: xp.gradient(x, axis=0) if x.shape[0] > 1 else x),
    ("nanargmax", lambda x, y: xp.nanargmax(x, axis=0) if x.shape[0] else x),
    ("nanargmin", lambda x, y: xp.nanargmin(x, axis=-1) if x.shape[-1] else x),
    ("nansum", lambda x, y: xp.nansum(x, axis=1)),
    ("nanmean", lambda x, y: xp.nanmean(x, axis=0)),
    ("nancumsum", lambda x, y: xp.nancumsum(x, axis=0)),
    ("gcd", lambda x, y: xp.gcd(xp.astype(x, xp.int32), xp.astype(y, xp.int32))),
    ("lcm", lambda x, y: xp.lcm(xp.astype(x, xp.int64), 4)),
    ("fmax", lambda x, y: xp.fmax(x, y)),
    ("cbrt", lambda x, y: xp.cbrt(x)),
    ("ldexp", lambda x, y: xp.ldexp(x, xp.astype(y, xp.int32))),
    ("divmod", lambda x, y: xp.divmod(x, y)),
    ("cov", lambda x, y: xp.cov(x)),
    ("corrcoef", lambda x, y: xp.corrcoef(x, y)),
    ("interp", lambda x, y: xp.interp(x, _EDGES, _EDGES**2)),
    ("isin host", lambda x, y: xp.isin(x, [1.0, 2.0])),
    ("matrix_rank", lambda x, y: xp.linalg.matrix_rank(x)),
    ("pinv", lambda x, y: xp.linalg.pinv(x)),
    ("lstsq", lambda x, y: xp.linalg.lstsq(x, y)),
    ("vector_norm", lambda x, y: xp.linalg.vector_norm(x, axis=0)),
    ("matmul", lambda x, y: xp.matmul(x, xp.matrix_transpose(y))),
]
_SIZES = st.tuples(st.integers(1, 7), st.integers(1, 5))


@st.composite
def _layouts(draw, ndim=2):
    """A layout by position: each mesh axis used by at most one dim, any order."""
    shape = draw(st.sampled_from(SHAPES))
    axes = list(shape)
    order = draw(st.permutations(axes))
    cut = sorted(draw(st.lists(st.integers(0, len(axes)), min_size=ndim, max_size=ndim)))
    chosen = [tuple(order[a:b]) for a, b in zip([0, *cut], cut)]
    return shape, {k: chosen[k] for k in range(ndim) if chosen[k]}


@NUMPY_ONLY
@fuzz(40, "FUZZ13_META_EXAMPLES")
@given(st.sampled_from(range(len(_FUZZ_OPS))), _SIZES, _layouts(), st.sampled_from(["float64", "float32"]))
def test_fuzz_meta_matches_numpy_shards(pick, sizes, shape_layout, dtype):
    """A sample of NumPy-extra ops on random sizes (empty blocks when a dim is shorter than its axes) and layouts:
    the meta answer and comm log are NumPy shards' exactly, or both raise the same typed error."""
    name, fn = _FUZZ_OPS[pick]
    shape, layout = shape_layout

    def op(m):
        x = _pos(m, sizes, dtype, layout=lambda _: layout)
        y = _pos(m, sizes, dtype, seed=1, layout=lambda _: layout)
        return fn(x, y)

    assert _traced(op, shape, "meta") == _traced(op, shape, "numpy"), name


_SORT_OPS = {
    "sort": lambda m: xp.sort(_pos(m, (7, 3), "float32"), axis=0),
    "argsort int8": lambda m: xp.argsort(_pos(m, (7, 3), "int8"), axis=0),
    "named sort": lambda m: sa.sort(
        sa.asarray(
            np.arange(15.0)[::-1].reshape(5, 3),
            dims=("a", "b"),
            mesh=m,
            layout={"a": m.axis_names[:-1], "b": m.axis_names[-1]},
        ),
        "a",
    ),
    "median": lambda m: xp.median(_pos(m), axis=0),
    "isin": lambda m: xp.isin(_pos(m, (7,), "int32"), xp.asarray(np.array([1, 2, 5]), device=m)),
    "top_k": lambda m: sa.top_k(
        sa.asarray(np.arange(21.0).reshape(7, 3), dims=("a", "b"), mesh=m, layout={"a": m.axis_names[0]}), 2, "a"
    ),
    "cov aweights": lambda m: xp.cov(_pos(m, (3, 7)), aweights=xp.asarray(np.arange(1.0, 8.0), device=m)),
    "cov fweights": lambda m: xp.cov(_pos(m, (3, 7)), fweights=xp.asarray(np.arange(1, 8), device=m)),
}


@pytest.mark.parametrize("name", sorted(_SORT_OPS))
@pytest.mark.parametrize("k", range(len(SHAPES)))
def test_sorting_and_weighted_cov_on_meta(name, k):
    """Sorts along a split axis (and what sorts: median, isin, top_k) run the sample sort on meta too, logging NumPy
    shards' collectives (they returned unsorted shapes with no traffic); cov with weights answers on meta."""
    a, b = _traced(_SORT_OPS[name], SHAPES[k], "meta"), _traced(_SORT_OPS[name], SHAPES[k], "numpy")
    assert a[0] == b[0] and _seq(a[1]) == _seq(b[1]) and _exact(a[1]) == _exact(b[1])
