"""A differential fuzz under MPI (``sa.Mesh(..., comm="mpi")``, one device per process) of NumPy's complex order
on split arrays and of ``np.unique(x, axis=k)``, against NumPy on the gathered values.

Covered: ``sort``/``argsort`` (stable, descending), ``partition``/``argpartition``, ``argmax``/``argmin``,
``max``/``min``, ``searchsorted`` and ``top_k`` of complex64/complex128 data (NaN and inf in either part, -0.0,
many ties); ``np.unique(x, axis=k)`` / ``sa.unique(x, axis=dim)`` (values, first indices, inverse, counts) of real
and complex data. Meshes of the job's size ({"row": 4} and {"row": 2, "col": 2} under ``-n 4``, {"row": 3} under
``-n 3``, {"row": 2} under ``-n 2``), the split axis 0..12 long (uneven blocks, processes holding nothing) or a
random layout, positionally and through NumPy's dispatch.

Each case checks, on every process: values (bit for bit where NumPy's answer is unique), dtype and shape against
NumPy; that every process got the same answer (a digest of the gathered result); that an error is the same typed
``sa`` exception on EVERY process; and (``sa.comm_log()``) that nothing larger than a few elements per process is
allgathered, except where the op's docstring says so (``max``/``min`` of complex values over split dims: one
complex value per output element per device; ``unique`` along an axis: a few rows per device). Every process draws
the same hypothesis examples (``derandomize``, no database, no shrinking) and every check is decided collectively,
so all processes fail together; a case that hangs ends the job after ``mpi_fuzzing.HANG_S`` seconds with every thread's
traceback (``faulthandler``).

``np.unique(x, axis=k)`` is fuzzed on named arrays (``np.unique`` of a positional array still refuses ``axis=``:
``numpy_protocol/positional_reductions.py``'s ``_unique``), its positional form through ``unique_along_axis``; results
above ``REPLICATE_MAX`` values (split, not replicated) are reached by lowering it.

No process ever ended otherwise than the others or hung. The bug it found (the same on every process; also on the
emulated communicator), fixed, has its regression at the end of the file:

* ``max``/``min`` of complex values over split dims: the first candidate in the mesh's order won, not NumPy's first
  in the array's order (another NaN, ``nan+1j`` for ``nan+2j``, or another zero sign), where a multi-dim reduction's
  first extreme lay in a later block or a dim's layout ran its mesh axes against the mesh's order.

``FUZZ9_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples. Outside an MPI job of 2 or more processes the file is
skipped.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st
from mpi_fuzzing import SHAPES as _SHAPES
from mpi_fuzzing import agree, meshes, mpi_fuzz, no_hang  # noqa: F401  (no_hang: an autouse fixture)
from mpi_fuzzing import digest as _digest
from mpi_fuzzing import gathered as _gathered
from mpi_fuzzing import mpi_mesh as _mesh
from mpi_fuzzing import quiet as _quiet
from mpi_fuzzing import world as _world
from spmd import WORLD

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.array_api._set import unique_along_axis
from shardarray.ops.sorting import unique_axis

# ruff: noqa: B023 (the lambdas given run() are called at once, inside the loop that binds their variables)

pytestmark = [
    pytest.mark.skipif(WORLD < 2, reason="needs an MPI job of 2 or more processes (mpiexec -n 4, see .ci/run)"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning"),
]


def fuzz(n: int):
    """A fuzzer's settings: ``n`` examples (``FUZZ9_EXAMPLES`` overrides), the same on every process."""
    return mpi_fuzz(n, "FUZZ9_EXAMPLES")


PARTS = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.0, 0.5])
LONG = tuple(range(13))  # (the split axis: 0..12, so some processes hold nothing)
SIDES = (0, 1, 2, 3, 5)
COMPLEX = ("complex128", "complex64")
REAL = ("float64", "float32", "int64", "int8", "bool")


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Few distinct values (ties); complex parts and floats with NaN/inf/-0.0 (in either part) most of the time."""
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        return rng.integers(-1, 2, n).astype(dt).reshape(shape)
    pool = PARTS if rng.random() < 0.7 else PARTS[3:]
    if dt.kind == "f":
        return rng.choice(pool, n).astype(dt).reshape(shape)
    out = np.empty(n, dt)
    out.real = rng.choice(pool, n)
    out.imag = rng.choice(pool, n)
    if n and rng.random() < 0.3:  # a NaN of another sign: stable sorts keep them in input order
        out.real[rng.integers(n)] = -np.nan
    return out.reshape(shape)


@st.composite
def cases(draw, dtypes=COMPLEX, min_dims=1, max_dims=2, min_side=0):
    """``(a, x, axis)``: a NumPy array, it on a mesh of the job's size, and an axis of it (the long one, 0..12,
    often split over every mesh axis: uneven and empty blocks)."""
    mesh = draw(meshes())
    nd = draw(st.integers(min_dims, max_dims))
    axis = draw(st.integers(0, nd - 1))
    shape = tuple(
        draw(st.sampled_from([s for s in (LONG if k == axis else SIDES) if s >= min_side])) for k in range(nd)
    )
    dtype = draw(st.sampled_from(dtypes))
    a = _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dtype)
    dims = tuple(f"dim{k}" for k in range(nd))
    if draw(st.booleans()):
        lay = {dims[axis]: tuple(mesh.axis_names)}
    else:
        lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if shape[dims.index(d)] != 1}
    x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)
    return a, x, axis


# --------------------------------------------------------------------------------------------- checks


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def _same(g, e, exact: bool = True) -> None:
    """``g`` is NumPy's ``e``: shape, dtype and values (``exact``: bit for bit, NaN payloads and -0.0 too)."""
    g, e = np.asarray(g), np.asarray(e)
    assert g.shape == e.shape, f"shape {g.shape}, NumPy {e.shape}"
    assert g.dtype == e.dtype, f"dtype {g.dtype}, NumPy {e.dtype}"
    if exact:
        assert np.array_equal(_bits(g), _bits(e)), f"not NumPy's bits:\n{g!r}\nNumPy:\n{e!r}"
    else:
        np.testing.assert_array_equal(g, e)


def _outcome(fn):
    """``(result, None)`` or ``(None, error)`` of ``fn()``, GatherWarning an error, with the comm log of the call."""
    with warnings.catch_warnings(), np.errstate(all="ignore"), sa.comm_log() as log:
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", sa.GatherWarning)
        try:
            return fn(), None, log.records
        except Exception as e:  # (judged below, collectively)
            return None, e, log.records


def run(np_call, xp_call, gather=8, compare=None, exact=True, label=""):
    """NumPy's ``np_call()`` against ``xp_call()`` on every process of the job.

    Every process must end the same way: the same result (digest of the gathered values) or the same typed ``sa``
    error where NumPy raises too. No ``allgather`` of more than ``gather`` elements per device. ``compare(values,
    expected)`` replaces the comparison (where NumPy's answer is one of several). ``label`` starts the messages.
    """
    try:
        expected, np_error = _quiet(np_call), None
    except Exception as e:
        expected, np_error = None, e
    got, error, records = _outcome(xp_call)
    kind = None if error is None else f"{type(error).__module__}.{type(error).__name__}"
    kinds = _world().allgather(kind)
    if len(set(kinds)) != 1:
        agree(label + f"ended as {kind}: {error!r:.300}; the processes ended as {kinds}")
    if error is not None:
        if not isinstance(error, sa.ShardArrayError):
            agree(label + f"raised a raw {kind}: {error!r:.300}")
        if np_error is None:
            agree(label + f"NumPy gave a result; the namespace raised {kind}: {error!r:.300}")
        return None
    if np_error is not None:
        agree(label + f"NumPy raised {type(np_error).__name__}: {np_error}; the namespace gave a result")
    big = [(r.op, r.axes, r.elements) for r in records if r.op == "allgather" and r.elements > gather]
    values = _quiet(lambda: _gathered(got))
    digests = _world().allgather(_digest(values))
    message = None if len(set(digests)) == 1 else "the processes got different results"
    if message is None and big:
        message = f"allgathers of more than {gather} elements: {big}"
    if message is None:
        try:
            if compare is not None:
                compare(values, expected)
            elif isinstance(expected, tuple):
                assert isinstance(values, tuple) and len(values) == len(expected), "not NumPy's tuple"
                for g, e in zip(values, expected):
                    _same(g, e, exact)
            else:
                _same(values, expected, exact)
        except AssertionError as e:
            message = str(e)[:2000]
    agree(None if message is None else label + message)
    return got


def _small(a: np.ndarray, axis: int | None) -> int:
    """The allgather allowance of a sorting op: a few elements (two words each) per line along ``axis``."""
    lines = 1 if axis is None else a.size // max(1, a.shape[axis])
    return max(16, 8 * lines)


# =============================================================================================== sorting


@fuzz(30)
@given(cases(), st.data())
def test_fuzz_sort_argsort_complex(case, data):
    a, x, axis = case
    axis = data.draw(st.sampled_from([axis, axis - a.ndim, -1]))
    desc = data.draw(st.booleans())
    if desc:  # the array API's stable descending order: the reversed ascending order of the reversed array
        flip = np.flip(a, axis)
        want = np.flip(np.sort(flip, axis=axis, kind="stable"), axis)
        want_i = a.shape[axis] - 1 - np.flip(np.argsort(flip, axis=axis, kind="stable"), axis)
    else:
        want, want_i = np.sort(a, axis=axis, kind="stable"), np.argsort(a, axis=axis, kind="stable")
    limit = _small(a, axis) * WORLD
    run(lambda: want, lambda: xp.sort(x, axis=axis, descending=desc), gather=limit, label="sort: ")
    run(lambda: want_i, lambda: xp.argsort(x, axis=axis, descending=desc), gather=limit, label="argsort: ")
    if not desc:
        run(lambda: want, lambda: np.sort(x, axis=axis), gather=limit, label="np.sort: ")
        run(lambda: want_i, lambda: np.argsort(x, axis=axis, kind="stable"), gather=limit, label="np.argsort: ")


def _partition_compare(a, kth, axis, arg):
    def compare(values, expected):
        g = np.asarray(values)
        assert g.shape == expected.shape and g.dtype == expected.dtype, (g.shape, g.dtype, expected.dtype)
        src = a.reshape(-1) if axis is None else a
        ax = 0 if axis is None else axis
        if arg:
            np.testing.assert_array_equal(np.sort(g, axis=ax), np.sort(expected, axis=ax))
            g = np.take_along_axis(src, g, axis=ax)
        ref = np.sort(src, axis=ax)
        n = ref.shape[ax]
        ks = sorted({int(k) % n for k in np.atleast_1d(kth)}) if n else []
        bounds = [0, *[b for k in ks for b in (k, k + 1)], n]
        gm, rm = np.moveaxis(g, ax, -1), np.moveaxis(ref, ax, -1)
        for lo, hi in itertools.pairwise(bounds):  # (each piece: NumPy's values, in any order)
            np.testing.assert_array_equal(np.sort(gm[..., lo:hi], axis=-1), rm[..., lo:hi])

    return compare


@pytest.mark.parametrize("arg", [False, True], ids=["partition", "argpartition"])
@fuzz(14)
@given(case=cases(), data=st.data())
def test_fuzz_partition_complex(arg, case, data):
    a, x, axis = case
    axis = data.draw(st.sampled_from([axis, -1, None]))
    n = a.size if axis is None else a.shape[axis]
    lim = max(n, 1)
    kth = data.draw(st.one_of(st.integers(-lim, lim - 1), st.lists(st.integers(-lim, lim - 1), max_size=3)))
    np_f, xp_f = (np.argpartition, xp.argpartition) if arg else (np.partition, xp.partition)
    run(
        lambda: np_f(a, kth, axis=axis),
        lambda: xp_f(x, kth, axis=axis),
        gather=max(64, _small(a, axis) * WORLD),
        compare=_partition_compare(a, kth, axis, arg),
    )


@fuzz(30)
@given(cases(min_side=1), st.data())
def test_fuzz_argmax_argmin_max_min_complex(case, data):
    a, x, axis = case
    axis = data.draw(st.sampled_from([axis, axis - a.ndim, None]))
    keep = data.draw(st.booleans())
    out = 1 if axis is None else a.size // a.shape[axis]
    # (the flat argmax of a 2-D array, array_api/_statistical.py's _flat_search, refuses complex values)
    names = ("max", "min") if axis is None and a.ndim > 1 else ("argmax", "argmin", "max", "min")
    for name in names:
        run(
            lambda: getattr(np, name)(a, axis=axis, keepdims=keep),
            lambda: getattr(xp, name)(x, axis=axis, keepdims=keep),
            gather=max(8, 3 * out),  # (one complex per output element per device; arg: 3 int64, their docstrings)
            label=f"{name}: ",
        )
    name = data.draw(st.sampled_from(names))
    run(lambda: getattr(np, name)(a, axis=axis), lambda: getattr(np, name)(x, axis=axis), gather=max(8, 3 * out))


@fuzz(25)
@given(cases(max_dims=1), st.data())
def test_fuzz_searchsorted_complex(case, data):
    a, x, _ = case
    mesh = x.mesh
    s = np.sort(a)
    lay = data.draw(layouts(mesh, ("i",)))
    sx = as_kind(sa.asarray(s, dims=("i",), mesh=mesh, layout=lay if len(s) > 1 else {}), xp.Array)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n = data.draw(st.sampled_from([0, 1, 5, 12]))
    real = data.draw(st.booleans())
    v = rng.choice(PARTS, n) if real else _values(rng, (n,), data.draw(st.sampled_from(COMPLEX)))
    vlay = data.draw(layouts(mesh, ("q",)))
    vx = as_kind(sa.asarray(v, dims=("q",), mesh=mesh, layout=vlay if n > 1 else {}), xp.Array)
    side = data.draw(st.sampled_from(["left", "right"]))
    lim = max(16, 4 * n + 8)
    run(lambda: np.searchsorted(s, v, side=side), lambda: xp.searchsorted(sx, vx, side=side), gather=lim)
    run(lambda: np.searchsorted(s, v, side=side), lambda: np.searchsorted(sx, vx, side=side), gather=lim)
    if a.size > 1:  # (unsorted, with the permutation that sorts it)
        perm = np.argsort(a, kind="stable")
        ax, px = (as_kind(sa.asarray(t, dims=("i",), mesh=mesh, layout=lay), xp.Array) for t in (a, perm))
        run(
            lambda: np.searchsorted(a, v, side=side, sorter=perm),
            lambda: xp.searchsorted(ax, vx, side=side, sorter=px),
            gather=lim,
            label="sorter: ",
        )
    if s.size:  # a real sorted array searched for complex values: both in their common complex type
        r = np.sort(s.real)
        rx = as_kind(sa.asarray(r, dims=("i",), mesh=mesh, layout=lay if len(r) > 1 else {}), xp.Array)
        run(lambda: np.searchsorted(r, v, side=side), lambda: xp.searchsorted(rx, vx, side=side), gather=lim)


@fuzz(25)
@given(cases(min_side=1), st.data())
def test_fuzz_top_k_complex(case, data):
    a, x, axis = case
    k = data.draw(st.integers(1, a.shape[axis]))
    want_i = np.take(np.argsort(-a, axis=axis, kind="stable"), range(k), axis=axis)
    want = (np.take_along_axis(a, want_i, axis=axis), want_i)
    lines = a.size // a.shape[axis]
    run(lambda: want, lambda: sa.top_k(x, k, x.dims[axis], new_dim="top"), gather=max(16, 4 * k * lines))


# =============================================================================================== unique(axis=)


def _unique_compare(values, expected):
    """NumPy's distinct slices (-0.0 and 0.0 slices merge, NumPy keeps either: compared as values), first indices,
    inverse and counts (int64, 1-D: compared exactly)."""
    got, want = (values, expected) if isinstance(expected, tuple) else ((values,), (expected,))
    assert isinstance(got, tuple) and len(got) == len(want), "not NumPy's tuple"
    _same(got[0], want[0], exact=False)
    for g, w in zip(got[1:], want[1:]):
        _same(g, w)


@fuzz(40)
@given(cases(dtypes=(*COMPLEX, *REAL), min_dims=2, max_dims=3), st.data())
def test_fuzz_unique_along_axis(case, data):
    a, x, axis = case
    axis = data.draw(st.sampled_from([axis, axis - a.ndim, *range(a.ndim)]))
    flags = [data.draw(st.booleans()) for _ in range(3)]
    kw = dict(zip(("return_index", "return_inverse", "return_counts"), flags))
    cols = int(np.prod([n for k, n in enumerate(a.shape) if k != axis % a.ndim]))
    lim = 2 * (2 * cols + 3) * max(WORLD, 4)  # (sample rows, one row and two int64 per device: the docstring)
    want = lambda: np.unique(a, axis=axis, **kw)  # noqa: E731
    form = data.draw(st.sampled_from(["np", "sa", "xp"]))
    small = data.draw(st.sampled_from([unique_axis.REPLICATE_MAX, 0, 6]))  # (below: a split result)
    kept, unique_axis.REPLICATE_MAX = unique_axis.REPLICATE_MAX, small
    try:
        if form == "np":  # (NumPy's dispatch on a named array; on a positional one, see the module docstring)
            named = as_kind(x, sa.ShardArray)
            run(want, lambda: np.unique(named, axis=axis, **kw), gather=lim, compare=_unique_compare)
        elif form == "sa":
            dim = x.dims[axis]
            run(want, lambda: sa.unique(x, **kw, axis=dim), gather=lim, compare=_unique_compare)
        else:
            run(want, lambda: unique_along_axis(x, axis, *flags), gather=lim, compare=_unique_compare)
    finally:
        unique_axis.REPLICATE_MAX = kept


# =============================================================================================== regressions


def _split(a: np.ndarray, lay: dict) -> xp.Array:
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=_mesh(_SHAPES[-1]), layout=lay), xp.Array)


@pytest.mark.parametrize("name", ["max", "min"])
def test_complex_max_min_is_numpys_first_extreme(name):
    """Bug: ``xp.max``/``xp.min`` of complex values over split dims picked, among the devices' partial extremes,
    the first in the mesh's order, not in the array's: where the reduction's first NaN (or first of equal extremes,
    -0.0 parts included) lay in a later block of a multi-dim reduction, or the dim's layout ran its mesh axes out of
    the mesh's order, the result was another NaN (``nan+1j`` for NumPy's ``nan+2j``) or another zero's sign. Each
    device now sends its candidate's row-major position along (one int64 more per output element) and the first
    one wins, NumPy's answer bit for bit."""
    nan = complex(np.nan, 0)
    cases = [  # (a 2-D array split along its columns: row-major, a later block's value comes first)
        np.array([[0, 0, 0, 0, 0, nan + 2j], [nan + 1j, 0, 0, 0, 0, 0]]),
        np.array([[1, 1, 1, 1, 1, complex(2, -0.0)], [complex(2, 0.0), 1, 1, 1, 1, 1]]),
        np.array([[1, 1, 1, 1, 1, complex(-2, 0.0)], [complex(-2, -0.0), 1, 1, 1, 1, 1]]),
    ]
    for a in cases:
        for dtype in COMPLEX:
            b = a.astype(dtype)
            x = _split(b, {"dim1": tuple(_mesh(_SHAPES[-1]).axis_names)})
            run(lambda: getattr(np, name)(b), lambda: getattr(xp, name)(x), label="flat: ")
            run(lambda: getattr(np, name)(b, axis=1), lambda: getattr(xp, name)(x, axis=1), label="axis 1: ")
    if WORLD == 4:  # (a dim split over (col, row): its blocks in another order than the mesh's)
        a = np.array([0, 0, nan + 1j, nan + 1j, nan + 2j, complex(0, -0.0), 0, 0])
        x = _split(a, {"dim0": ("col", "row")})
        run(lambda: getattr(np, name)(a), lambda: getattr(xp, name)(x), label="(col, row): ")
