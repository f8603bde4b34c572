"""Fuzz round 11 of sorting, set routines, searching and FFT on split arrays, against NumPy on the gathered value:
``partition``/``argpartition`` (kth lists, negative kth), ``sa.top_k`` (ties, NaN, ``k = 0`` and ``k = size``),
descending sorts, ``nonzero``/``argwhere``/``flatnonzero``/``count_nonzero``, NumPy's set routines
(``intersect1d`` with indices, ``union1d``, ``setdiff1d``, ``setxor1d``, ``assume_unique``), ``np.unique`` with
``equal_nan``, ``searchsorted`` with ``sorter``; the n-D FFTs with ``s`` (crop, pad, -1, without ``axes``),
repeated and negative axes, every ``norm``, the shifts; and the traffic: sample sort and unique move about a block
(unique: its distinct values), replicas sort once, the FFT of split arrays alltoalls a block per transposition and
warns where a split 1-D transform gathers. Meshes 1, 2x2, 4, 2x2x2, 3x2 with uneven and empty blocks; NumPy shards
and the CuPy stand-in. Regressions of the bugs it found close the file.

``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
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
from shardarray.ops.sorting import order, samplesort

# ruff: noqa: B023 (the lambdas given check() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

ENV = "FUZZ11_EXAMPLES"
BF16 = np.dtype(ml_dtypes.bfloat16)
REAL = ("float64", "float32", "float16", BF16, "int64", "int8", "uint8", "bool")
SIDES = (0, 1, 2, 3, 5, 7)


# --------------------------------------------------------------------------------------------- data


def _values(rng: np.random.Generator, shape: tuple, dtype) -> np.ndarray:
    """Few distinct values (ties), integer extremes, NaN/inf/-0.0 in floats."""
    n, dt = math.prod(shape), np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        v = rng.integers(0 if dt.kind == "u" else -3, 4, n).astype(dt)
        hit = rng.random(n) < 0.2
        v[hit] = rng.choice(np.array([np.iinfo(dt).min, np.iinfo(dt).max], dt), int(hit.sum()))
        return v.reshape(shape)
    v = rng.integers(-3, 4, n) / 2.0
    hit = rng.random(n) < 0.25
    v[hit] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], int(hit.sum()))
    return v.astype(dt).reshape(shape)


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout (dims of size 1 unsplit)."""
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


@st.composite
def case(draw, dtypes=REAL, min_dims=1, max_dims=2, sides=SIDES):
    mesh = draw(meshes())
    shape = tuple(draw(st.sampled_from(sides)) for _ in range(draw(st.integers(min_dims, max_dims))))
    a = _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, draw(st.sampled_from(dtypes)))
    return mesh, a, draw(placed(a, mesh))


def _ref(a: np.ndarray) -> np.ndarray:
    """NumPy's reference input: bfloat16 as float32 (NumPy's sorts give bfloat16 NaN no place)."""
    return a.astype(np.float32) if a.dtype == BF16 else a


def _got(r):
    if isinstance(r, (tuple, list)):
        return [_got(v) for v in r]
    return r.numpy() if hasattr(r, "numpy") else np.asarray(r)


def _same(got, expected, tol: float = 0.0) -> None:
    """Shape, dtype and values (NaN equal to NaN; -0.0 equal to 0.0; within ``tol`` relative to the largest)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, list) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _same(g, e, tol)
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
    if e.dtype == BF16:
        g, e = g.astype(np.float32), e.astype(np.float32)
    if e.dtype.kind in "fc" and tol:
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol * scale)
    else:
        np.testing.assert_array_equal(g, e)


def check(np_call, xp_call, tol: float = 0.0) -> None:
    """NumPy's ``np_call()`` against ``xp_call()`` gathered: a typed ``sa`` error where NumPy raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = np_call()
        except Exception:
            with pytest.raises(sa.ShardArrayError):
                xp_call()
            return
        got = _got(xp_call())
    _same(got, expected, tol)


def _flip_sorted(a: np.ndarray, axis: int) -> np.ndarray:
    """NumPy's stable descending sort (NaN first, ties in input order)."""
    return np.flip(np.sort(np.flip(a, axis), axis=axis, kind="stable"), axis)


def _top_k_ref(a: np.ndarray, k: int, axis: int) -> list[np.ndarray]:
    """``np.argsort(-a, kind="stable")[:k]`` without negation overflow: largest first, ties by index, NaN last."""
    r = np.moveaxis(_ref(a), axis, -1)
    n = r.shape[-1]
    rows = []
    for row in r.reshape(-1, n) if r.size else []:
        u, inv = np.unique(row, return_inverse=True)
        nan = np.isnan(row) if row.dtype.kind == "f" else np.zeros(n, bool)
        rows.append(np.lexsort((np.arange(n), np.where(nan, len(u) + 1, -inv.astype(np.int64))))[:k])
    idx = np.array(rows, dtype=np.int64).reshape(r.shape[:-1] + (k,))
    vals = np.take_along_axis(np.moveaxis(a, axis, -1), idx, -1)
    return [np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)]


# ============================================================================================= sorting


@fuzz(40, ENV)
@given(case(), st.data())
def test_fuzz_partition_top_k_sort_nonzero(c, data):
    _, a, x = c
    ref, axis = _ref(a), data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[axis]

    def back(r):
        return r.astype(BF16) if a.dtype == BF16 and r.dtype == np.float32 else r

    if n:
        ks = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3, unique=True))
        kth = ks if len(ks) > 1 else ks[0]
        at = [k % n for k in ks]
        check(lambda: back(np.take(np.partition(ref, kth, axis=axis), at, axis=axis)),
              lambda: np.take(np.partition(x, kth, axis=axis).numpy(), at, axis=axis))  # fmt: skip
        i = np.argpartition(x, kth, axis=axis).numpy()
        assert i.dtype == np.int64
        got = np.take(np.take_along_axis(ref, i, axis=axis), at, axis=axis)
        assert np.array_equal(got, np.take(np.sort(ref, axis=axis), at, axis=axis), equal_nan=True)
        others = tuple(d for d in range(a.ndim) if d != axis % a.ndim)
        assert np.array_equal(np.sort(i, axis=axis), np.broadcast_to(np.expand_dims(np.arange(n), others), i.shape))
    k = data.draw(st.integers(0, n))
    check(lambda: _top_k_ref(a, k, axis), lambda: sa.top_k(x, k, x.dims[axis]))
    check(lambda: back(_flip_sorted(ref, axis)), lambda: xp.sort(x, axis=axis, descending=True))
    check(lambda: np.argwhere(a), lambda: np.argwhere(x))
    check(lambda: np.flatnonzero(a), lambda: np.flatnonzero(x))
    check(lambda: list(np.nonzero(a)), lambda: xp.nonzero(x))
    check(lambda: np.count_nonzero(a, axis=axis, keepdims=True), lambda: np.count_nonzero(x, axis=axis, keepdims=True))


# ============================================================================================= sets, searching


@fuzz(40, ENV)
@given(case(dtypes=REAL[:3] + REAL[4:]), st.data())
def test_fuzz_set_routines_unique_searchsorted(c, data):
    mesh, a, x = c
    b = _values(
        np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), (data.draw(st.sampled_from(SIDES)),), a.dtype
    )
    y = data.draw(placed(b, mesh))
    au, bu = np.unique(a), np.unique(b)
    xu, yu = data.draw(placed(au, mesh)), data.draw(placed(bu, mesh))
    check(lambda: list(np.intersect1d(a, b, return_indices=True)), lambda: np.intersect1d(x, y, return_indices=True))
    check(lambda: np.intersect1d(au, bu, assume_unique=True), lambda: np.intersect1d(xu, yu, assume_unique=True))
    check(lambda: np.union1d(a, b), lambda: np.union1d(x, y))
    check(lambda: np.setdiff1d(a, b), lambda: np.setdiff1d(x, y))
    check(lambda: np.setdiff1d(au, b, assume_unique=True), lambda: np.setdiff1d(xu, y, assume_unique=True))
    check(lambda: np.setxor1d(a, b), lambda: np.setxor1d(x, y))
    check(lambda: np.setxor1d(au, bu, assume_unique=True), lambda: np.setxor1d(xu, yu, assume_unique=True))
    invert = data.draw(st.booleans())
    check(lambda: np.isin(a, b, invert=invert), lambda: np.isin(x, y, invert=invert))
    en = data.draw(st.booleans())
    check(
        lambda: list(np.unique(a, True, True, True, equal_nan=en)), lambda: np.unique(x, True, True, True, equal_nan=en)
    )
    inv = xp.unique_inverse(x)
    assert inv.inverse_indices.shape == a.shape  # (the array API's shape: x's)
    side = data.draw(st.sampled_from(["left", "right"]))
    flat = a.ravel()
    srt = np.argsort(flat, kind="stable")
    xf, xs = data.draw(placed(flat, mesh)), data.draw(placed(srt, mesh))
    check(lambda: np.searchsorted(flat, b, side=side, sorter=srt), lambda: xp.searchsorted(xf, y, side=side, sorter=xs))
    s = np.sort(flat)
    check(lambda: np.searchsorted(s, a, side=side), lambda: np.searchsorted(data.draw(placed(s, mesh)), x, side=side))


# ============================================================================================= FFT


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_fft_n_d_s_axes_norm(data):
    mesh = data.draw(meshes())
    nd = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.sampled_from((1, 2, 3, 4, 5, 6, 8))) for _ in range(nd))
    dtype = data.draw(st.sampled_from(["float32", "float64", "complex64", "complex128"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.normal(size=shape) + (1j * rng.normal(size=shape) if dtype.startswith("complex") else 0)
    a = a.astype(dtype)
    x = data.draw(placed(a, mesh))
    tol = 2e-3 if dtype in ("float32", "complex64") else 1e-9
    norm = data.draw(st.sampled_from(["backward", "ortho", "forward"]))
    axis = data.draw(st.integers(-nd, nd - 1))
    n = data.draw(st.sampled_from([None, 1, 3, 4, 7]))
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        f = getattr(np.fft, name)
        check(lambda: f(a, n=n, axis=axis, norm=norm), lambda: getattr(xp.fft, name)(x, n=n, axis=axis, norm=norm), tol)
    axes = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3))  # (repeats: NumPy's twice)
    s = data.draw(st.none() | st.lists(st.sampled_from([-1, 1, 2, 3, 5, 8]), min_size=len(axes), max_size=len(axes)))
    if s is not None and len(s) <= nd and data.draw(st.booleans()):
        axes = None  # (NumPy's and JAX's rule: the last len(s) axes)
    for name in ("fftn", "ifftn", "rfftn", "irfftn"):
        f = getattr(np.fft, name)
        check(lambda: f(a, s=s, axes=axes, norm=norm), lambda: f(x, s=s, axes=axes, norm=norm), tol)
        check(lambda: f(a, s=s, axes=axes, norm=norm), lambda: getattr(xp.fft, name)(x, s=s, axes=axes, norm=norm), tol)
    shift = data.draw(st.sampled_from([None, axis, axes]))
    check(lambda: np.fft.fftshift(a, axes=shift), lambda: xp.fft.fftshift(x, axes=shift))
    check(lambda: np.fft.ifftshift(a, axes=shift), lambda: np.fft.ifftshift(x, axes=shift))
    m, d = data.draw(st.integers(1, 9)), data.draw(st.sampled_from([1.0, 0.5, 3.0]))
    check(lambda: np.fft.fftfreq(m, d), lambda: xp.fft.fftfreq(m, d=d, device=mesh), 1e-12)
    check(
        lambda: np.fft.rfftfreq(m, d).astype(np.float32),
        lambda: xp.fft.rfftfreq(m, d=d, dtype=xp.float32, device=mesh),
        1e-6,
    )


# ============================================================================================= traffic


def _received(r) -> int:
    """What one device receives in record ``r`` at most (``test_fuzz9_traffic.received``)."""
    if r.group_size <= 1 or not r.elements:
        return 0
    if r.op == "allgather":
        return (r.group_size - 1) * r.elements
    if r.op == "alltoall":
        return math.ceil(r.wire_bytes * r.elements / r.bytes)
    return r.elements


@pytest.mark.parametrize("layout", [{"i": "row"}, {"i": ("row", "col")}, {"i": ("col", "row")}])
def test_sample_sort_moves_about_a_block_and_replicas_sort_once(layout, monkeypatch):
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(0).normal(size=1001)
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout=layout)
    p = mesh.axes_size(x.spec.of("i"))
    block = -(-a.size // p)
    calls = []
    real = order.seq_sort
    monkeypatch.setattr(order, "seq_sort", lambda *args: calls.append(1) or real(*args))
    with sa.comm_log() as log:
        y = sa.sort(x, "i")
    assert np.array_equal(y.numpy(), np.sort(a))
    assert len(calls) == 2 * p  # (a local sort and a merge per distinct block: replicas on "col" share theirs)
    for r in log.records:
        limit = 3 * (p - 1) * p if r.op == "allgather" else 2 * block  # (splitter samples, counts; the buckets)
        assert _received(r) <= limit, (r, limit)
    assert sum(_received(r) for r in log.records if r.op == "alltoall") <= 2 * block + 64


@pytest.mark.parametrize("kind", ["equal", "two", "sorted", "reversed", "nan", "int8"])
def test_sample_sort_buckets_stay_balanced_on_ties_and_runs(kind):
    mesh = _mesh({"row": 2, "col": 2})
    a = {
        "equal": np.zeros(1000),
        "two": np.repeat([1.0, 0.0], 500),
        "sorted": np.arange(1000.0),
        "reversed": np.arange(1000.0)[::-1].copy(),
        "nan": np.full(1000, np.nan),
        "int8": np.random.default_rng(6).integers(-128, 128, 1000).astype(np.int8),
    }[kind]
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": ("col", "row")})
    with sa.comm_log() as log:
        i = sa.argsort(x, "i")
    assert np.array_equal(i.numpy(), np.argsort(a, kind="stable"))
    assert samplesort.LAST_PEAK["ratio"] <= 1.5, samplesort.LAST_PEAK  # (ties split by position)
    assert all(_received(r) <= 2 * 250 + 16 for r in log.records), log.records  # (values and indices: 2 blocks)


@pytest.mark.parametrize("distinct", [3, 40])
def test_unique_traffic_scales_with_the_distinct_values(distinct):
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(1).integers(0, distinct, 4000).astype(np.float64)
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": ("row", "col")})
    with sa.comm_log() as log:
        r = sa.unique_all(x)
    assert np.array_equal(r.values.numpy(), np.unique(a))
    assert np.array_equal(r.counts.numpy(), np.unique(a, return_counts=True)[1])
    moved = sum(_received(rec) for rec in log.records)
    assert moved <= 8 * distinct * 4 + 64, [(rec.op, rec.elements) for rec in log.records]


@pytest.mark.parametrize("layout", [{"a": "row"}, {"a": "row", "b": "col"}, {"b": ("row", "col")}])
def test_split_fft_alltoalls_a_block_per_transposition(layout):
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(2).normal(size=(8, 12))
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout=layout)
    blk = max(math.prod(hi - lo for lo, hi in b) for b in sa.layout.block_bounds(mesh, x.spec))
    for fn, ref in ((lambda: sa.fft.fftn(x), np.fft.fftn(a)), (lambda: sa.fft.rfftn(x), np.fft.rfftn(a))):
        with sa.comm_log() as log:
            y = fn()
        np.testing.assert_allclose(y.numpy(), ref, atol=1e-9)
        assert {r.op for r in log.records} <= {"alltoall"}, log.records
        assert all(_received(r) <= blk for r in log.records), (log.records, blk)


def test_split_1d_fft_that_factors_takes_three_alltoalls():
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(3).normal(size=1000) + 0j
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": ("row", "col")})
    with sa.comm_log() as log:
        y = sa.fft.fft(x, "i")
    np.testing.assert_allclose(y.numpy(), np.fft.fft(a), atol=1e-9)
    assert [r.op for r in log.records] == ["alltoall"] * 3
    assert all(_received(r) <= 250 for r in log.records)


# ============================================================================================= regressions


def test_top_k_of_zero_is_empty_and_silent():
    """Was: ``ArgumentError`` (k had to be >= 1); ``torch.topk``/``jax.lax.top_k`` give empty results."""
    mesh = _mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(12.0).reshape(3, 4), dims=("b", "v"), mesh=mesh, layout={"b": "row", "v": "col"})
    with sa.comm_log() as log:
        v, i = sa.top_k(x, 0, "v")
    assert v.dims == ("b", "k") and v.shape == (3, 0) and i.shape == (3, 0) and i.dtype == np.int64
    assert log.records == []
    with pytest.raises(sa.ArgumentError, match=r"0\.\.4"):
        sa.top_k(x, 5, "v")


def test_numpy_set_routines_dispatch():
    """Was: ``TypeError: no implementation found for 'numpy.intersect1d'`` (and union1d, setdiff1d, setxor1d)."""
    with sa.default_mesh(_mesh({"row": 2, "col": 2})):
        x, y = xp.asarray([3.0, 1.0, np.nan, 2.0, 1.0, -0.0]), xp.asarray([[1.0, 5.0], [np.nan, 0.0]])
        a, b = x.numpy(), y.numpy()
        _same(_got(np.intersect1d(x, y, return_indices=True)), list(np.intersect1d(a, b, return_indices=True)))
        _same(_got(np.union1d(x, y)), np.union1d(a, b))
        _same(_got(np.setdiff1d(x, y)), np.setdiff1d(a, b))
        _same(_got(np.setxor1d(x, y)), np.setxor1d(a, b))
        _same(_got(np.setdiff1d(x, [1.0, 7.0], assume_unique=True)), np.setdiff1d(a, [1.0, 7.0], assume_unique=True))


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize(
    "kw",
    [
        {"s": (-1, 3), "axes": (0, 1)},
        {"s": (6,)},
        {"axes": (1, 1)},
        {"axes": (0, -2, 1)},
        {"s": (3, 5), "axes": (1, -1)},
    ],
)
def test_fftn_s_minus_one_no_axes_and_repeated_axes_as_numpy(name, kw):
    """Was: ``ArgumentError`` for s=-1 (the standard's "whole axis") and for s without axes (NumPy's and JAX's last
    len(s) axes), ``DimensionError`` for an axis named twice (NumPy transforms it twice)."""
    with sa.default_mesh(_mesh({"row": 2, "col": 2})):
        a = np.random.default_rng(4).normal(size=(4, 6))
        x = xp.asarray(a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            expected = getattr(np.fft, name)(a, **kw)
        _same(getattr(xp.fft, name)(x, **kw).numpy(), expected, 1e-9)
        _same(getattr(np.fft, name)(x, **kw).numpy(), expected, 1e-9)


def test_fftshift_of_an_axis_named_twice_shifts_twice():
    """Was: ``DimensionError`` (NumPy's ``roll`` adds the shifts)."""
    with sa.default_mesh(_mesh({"row": 2, "col": 2})):
        a = np.arange(35.0).reshape(5, 7)
        x = xp.asarray(a)
        _same(xp.fft.fftshift(x, axes=(1, -1, 0)).numpy(), np.fft.fftshift(a, axes=(1, -1, 0)))
        _same(np.fft.ifftshift(x, axes=[0, 0]).numpy(), np.fft.ifftshift(a, axes=[0, 0]))


def test_split_1d_fft_of_a_prime_length_does_not_gather():
    """Was: a silent allgather of the whole array (a prime length has no four-step factors), then a warned one;
    past 64 KiB per device it is Bluestein's algorithm now (round 14): no gather, no warning."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(5).normal(size=20011)
    x = sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": ("row", "col")})
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        with sa.comm_log() as log:
            y = sa.fft.rfft(x, "i")
    assert not any(r.op == "allgather" for r in log.records)
    np.testing.assert_allclose(y.numpy(), np.fft.rfft(a), atol=1e-7)
