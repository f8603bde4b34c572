"""The per-device kernels that issue 30's k-means profile made faster, against NumPy.

* ``NumpyBackend.sum``'s fast paths (``sum_leading``: a column sum of a tall C-contiguous block read as long rows;
  ``sum_trailing``: a row sum of short rows by ``np.einsum``): NumPy's dtype and shape, integer and bool sums
  exact (wrapping as NumPy's), float sums within NumPy's own rounding bound, on blocks of every shape the paths
  take (the thresholds lowered so that small blocks take them), and through ``xp.sum`` on meshes with uneven
  and empty blocks.
* ``argmin``/``argmax`` along an unsplit dim: the blocks are searched on the copy pool (``map_blocks(pure=True)``),
  and the indices are NumPy's bit for bit, ties (first index) and NaN (the first NaN wins) included.
* ``apply``'s per-op overhead (the small-op chain): an array and a scalar call the op's block function directly
  (either side), and operands too small for the copy pool never ask for it.

``FUZZ12_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
import shardarray.backend.numpy_backend as nb
import shardarray.comm.parallel as parallel
from shardarray.array import as_kind
from shardarray.core import plans

ENV = "FUZZ12_EXAMPLES"
DTYPES = ("float64", "float32", "float16", "complex128", "int64", "int32", "int8", "uint8", "uint64", "bool")


@contextmanager
def small_paths() -> Iterator[None]:
    """Small blocks take the fast paths (their thresholds are for speed, not for correctness)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nb, "FAST_SUM_MIN", 0)
        mp.setattr(nb, "LEADING_ROW", 16)
        yield


@contextmanager
def on_the_pool() -> Iterator[None]:
    """Blocks of any size run on the copy pool, with two workers."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parallel, "MIN_BYTES", 0)
        mp.setattr(plans, "MIN_BYTES", 0)
        mp.setattr(parallel, "workers", lambda: 2)
        yield


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Values with ties and cancellation; full-range integers half the time (sums that wrap)."""
    dt, n = np.dtype(dtype), math.prod(shape)
    if dt.kind == "b":
        return (rng.integers(0, 2, n) > 0).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = (info.min, info.max) if rng.integers(2) else (0 if dt.kind == "u" else -3, 3)
        return rng.integers(lo, hi, n, endpoint=True, dtype=dt).reshape(shape)
    v = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4 if dt.itemsize > 2 else 1, n)  # (float16: no overflow)
    if dt.kind == "c":
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dt).reshape(shape)


def _check_sum(got: np.ndarray, a: np.ndarray, axis: tuple[int, ...], dtype) -> None:
    """``got`` is ``np.sum(a, axis, dtype)``: the same dtype and shape; exact for integer and bool sums, within
    NumPy's rounding bound (a few hundred ulps of the sum of magnitudes for these sizes) for float sums."""
    ref = np.sum(a, axis=axis, dtype=dtype)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, ref.dtype, got.shape, ref.shape)
    if ref.dtype.kind in "biu":
        assert np.array_equal(got, ref)
        return
    wide = np.complex128 if ref.dtype.kind == "c" else np.float64
    mag = np.sum(np.abs(a.astype(wide)), axis=axis)
    eps = np.finfo(ref.dtype).eps
    finite = np.isfinite(ref)
    assert np.array_equal(finite, np.isfinite(got))
    err = np.abs(got[finite].astype(wide) - ref[finite].astype(wide))
    assert (err <= 256 * eps * mag[finite] + np.finfo(ref.dtype).tiny).all(), err.max()


@st.composite
def blocks(draw):
    """``(a, axis, dtype)``: a C-contiguous block and leading or trailing axes to sum over (some, not all)."""
    nd = draw(st.integers(2, 4))
    shape = tuple(draw(st.sampled_from((1, 2, 3, 5, 8, 16, 33))) for _ in range(nd))
    j = draw(st.integers(1, nd - 1))
    axis = tuple(range(j)) if draw(st.booleans()) else tuple(range(nd - j, nd))
    axis = tuple(draw(st.permutations(axis)))  # (any order: the same axes)
    dt = draw(st.sampled_from(DTYPES))
    wide = "float32" if dt == "float16" else "int64" if dt in ("int8", "bool") else None
    acc = draw(st.sampled_from((None, wide)))
    return _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dt), axis, acc


@fuzz(60, ENV)
@given(case=blocks())
def test_block_sum_fast_paths(case) -> None:
    a, axis, acc = case
    with small_paths():
        got = nb.NumpyBackend().sum(a, axis, acc)
    _check_sum(got, a, axis, acc)


@pytest.mark.parametrize("dtype", DTYPES)
def test_block_sum_full_size(dtype) -> None:
    """The default thresholds, on the k-means shapes: (N, 8) column sums and (N, 16) row sums (odd N: a tail);
    float16 in float32, as ``sa.sum`` asks."""
    rng = np.random.default_rng(3)
    backend = nb.NumpyBackend()
    acc = "float32" if dtype == "float16" else None
    for shape, axis in (((20001, 8), (0,)), ((10001, 16), (1,)), ((4, 2001, 3), (0, 1)), ((7, 3001, 5), (1, 2))):
        a = _values(rng, shape, dtype)
        _check_sum(backend.sum(a, axis, acc), a, axis, acc)


def test_block_sum_takes_the_fast_paths(monkeypatch) -> None:
    """A column sum of a tall block and a row sum of short rows take the fast paths (no per-row ``np.sum``)."""
    calls: list[tuple] = []
    real = np.sum
    monkeypatch.setattr(nb.np, "sum", lambda x, *args, **kw: calls.append(x.shape) or real(x, *args, **kw))
    backend = nb.NumpyBackend()
    a = np.random.default_rng(0).standard_normal((40000, 8))
    backend.sum(a, (0,))
    backend.sum(a, (1,))
    assert (40000, 8) not in calls, calls
    backend.sum(a[:, :3], (0,))  # (not contiguous: NumPy's own)
    assert calls == [(40000, 3)]


@st.composite
def mesh_sums(draw):
    """``(x, a, axis)``: a positional 2-D or 3-D array on a mesh in a random layout, and a leading or trailing
    axis set."""
    mesh = draw(cached_meshes())
    nd = draw(st.integers(2, 3))
    shape = tuple(draw(st.sampled_from((0, 1, 3, 7, 19, 40))) for _ in range(nd))
    dt = draw(st.sampled_from(("float64", "float32", "int64", "int8", "bool", "complex128")))
    a = _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dt)
    dims = tuple(f"d{k}" for k in range(nd))
    x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), xp.Array)
    j = draw(st.integers(1, nd - 1))
    return x, a, tuple(range(j)) if draw(st.booleans()) else tuple(range(nd - j, nd))


@fuzz(40, ENV)
@given(case=mesh_sums())
def test_sum_on_meshes(case) -> None:
    x, a, axis = case
    with small_paths():
        got = xp.sum(x, axis=axis).numpy()
    if a.size == 0 or a.dtype.kind in "biu":
        assert np.array_equal(got, np.sum(a, axis=axis)) and got.dtype == np.sum(a, axis=axis).dtype
    else:
        _check_sum(got, a, axis, None)


# ------------------------------------------------------------------------------------------- arg-searches
@st.composite
def searches(draw):
    """``(x, a, axis)``: values with many ties and some NaN (floats), the searched axis unsplit."""
    mesh = draw(cached_meshes())
    rows, k = draw(st.sampled_from((0, 1, 5, 13, 40))), draw(st.sampled_from((2, 3, 8, 9)))
    dt = draw(st.sampled_from(("float64", "float32", "int64", "int8", "uint8", "bool")))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(0, 3, (rows, k)).astype(dt)
    if a.dtype.kind == "f":
        a[rng.random(a.shape) < draw(st.sampled_from((0.0, 0.1, 0.5)))] = np.nan
    lay = {"i": draw(layouts(mesh, ("i",))).get("i", ())}
    x = as_kind(sa.asarray(a, dims=("i", "k"), mesh=mesh, layout=lay), xp.Array)
    return x, a


@fuzz(40, ENV)
@given(case=searches(), op=st.sampled_from(("argmin", "argmax")))
def test_arg_search_on_the_pool(case, op) -> None:
    """Blocks searched on the copy pool (its thresholds lowered) give NumPy's indices, ties and NaN included."""
    x, a = case
    with on_the_pool():
        got = getattr(xp, op)(x, axis=1).numpy()
    ref = getattr(np, op)(a, axis=1)
    assert got.dtype == ref.dtype and np.array_equal(got, ref), (got, ref)


@pytest.mark.numpy_only("the copy pool runs NumPy shards only")
def test_arg_search_uses_the_pool(monkeypatch) -> None:
    """The local arg-search of big blocks runs on the copy pool, one job per distinct block (replicas once)."""
    jobs: list[int] = []
    real = parallel.run_all

    def spy(js, nbytes, backend):
        jobs.append(len(js))
        return real(js, nbytes, backend)

    monkeypatch.setattr("shardarray.core.common.run_all", spy)
    mesh = cached_mesh({"row": 2, "col": 2})
    a = np.random.default_rng(1).standard_normal((64, 8))
    x = as_kind(sa.asarray(a, dims=("i", "k"), mesh=mesh, layout={"i": "row"}), xp.Array)
    with on_the_pool():
        i = xp.argmin(x, axis=1)
    assert np.array_equal(i.numpy(), np.argmin(a, axis=1))
    assert jobs == [2]  # (two distinct blocks: the col replicas are searched once)


# ------------------------------------------------------------------------------- elementwise per-op overhead
@pytest.mark.parametrize("shape", [(64,), (6, 7)])
def test_scalar_operands_either_side(shape) -> None:
    """An array and a scalar (the operators' block function without the operand template), either side, and
    scalars beyond int64 beside float arrays (NumPy converts them to the array's float dtype)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    a = np.arange(1.0, 1.0 + math.prod(shape)).reshape(shape)
    with sa.default_mesh(mesh):
        x = xp.asarray(a)
        for got, ref in (
            (x - 2.5, a - 2.5),
            (2.5 - x, 2.5 - a),
            (x / 3, a / 3),
            (3 / x, 3 / a),
            (x * 2**70, a * 2**70),
            (2**70 / x, 2**70 / a),
            (2 ** (x / 10), 2 ** (a / 10)),
            (xp.astype(x, xp.int64) - 1, a.astype(np.int64) - 1),
            (7 // xp.astype(x, xp.int64), 7 // a.astype(np.int64)),
        ):
            g = got.numpy()
            assert g.dtype == ref.dtype and np.array_equal(g, ref), (g, ref)


@pytest.mark.numpy_only("the copy pool runs NumPy shards only")
def test_small_elementwise_skips_the_pool(monkeypatch) -> None:
    """Operands too small for the copy pool in any case do not ask for it (no byte count on every call); big ones
    still run on it."""
    seen: list[object] = []
    real = plans.map_classes

    def spy(size, classes, fn, shard_lists, backend=None, **kw):
        seen.append(backend)
        return real(size, classes, fn, shard_lists, backend, **kw)

    monkeypatch.setattr(plans, "map_classes", spy)
    mesh = cached_mesh({"row": 2, "col": 2})
    small = as_kind(sa.asarray(np.arange(64.0), dims=("i",), mesh=mesh, layout={"i": "row"}), xp.Array)
    assert np.array_equal((small * 2).numpy(), np.arange(64.0) * 2)
    assert all(b is None for b in seen)  # (the short path of ``arithmetic.scalar_op`` runs small blocks inline)
    with on_the_pool():
        assert np.array_equal((small * 2).numpy(), np.arange(64.0) * 2)
    assert seen[-1] is mesh.backend
