"""A differential fuzz under MPI (``sa.Mesh(..., comm="mpi")``, one device per process) of the positional namespace's
NumPy extras and of the functions that read values on the host, against NumPy on the gathered values.

Covered: ``_numpy_counts`` (bincount, digitize, histogram, isin, interp, percentile/quantile and their nan forms,
cov, corrcoef), ``_numpy_histdd`` (histogramdd, histogram2d), ``_numpy_shapes`` (insert, delete, resize, trim_zeros,
rot90, partition/argpartition, lexsort, select, vander, unwrap, trapezoid, ediff1d), ``_numpy_math`` and
``_numpy_ufuncs`` (exp2, heaviside, sinc, nan_to_num, polyval, kron, diag, convolve, fmod, divmod, modf, frexp,
ldexp, gcd, lcm, real_if_close, i0, fmax/fmin), ``np.linspace`` with array endpoints, ``sa.linalg.eig``/``eigvals``
and ``np.<name>(x)`` dispatch of these. Meshes of the job's size ({"row": 4} and {"row": 2, "col": 2} under
``-n 4``, {"row": 3} under ``-n 3``, {"row": 2} under ``-n 2``), random layouts, uneven and empty blocks, NaN/inf,
int/float32/float64/bool/complex dtypes.

Each case checks, on every process: values, dtype and shape against NumPy; that every process got the same answer
(a digest of the gathered result); that an error (NumPy raises, or bad input) is the same typed ``sa`` exception on
EVERY process (never raw, never on some processes only: the others would wait in their next collective); and that
nothing larger than a few elements is allgathered (``sa.comm_log()``). Every process draws the same hypothesis
examples (``derandomize``, no database, no shrinking: a shrink that timed out on one process only would leave the
others waiting), and every check is decided collectively, so all processes fail together. A case that hangs ends
the job after ``mpi_fuzzing.HANG_S`` seconds with every thread's traceback (``faulthandler``),
instead of waiting forever.

No process ever ended otherwise than the others, hung, or gathered a large block. The bugs it found, each the same
on every process (NumPy's answer was missing everywhere), are fixed; their regressions close the file:

* ``quantile``/``nanquantile`` of an empty 1-D ``q``: ``DimensionError`` from ``stack`` (NumPy: an empty axis);
* ``nanquantile`` of no data: ``DimensionError`` (NumPy: ``nanmean``'s NaN);
* ``quantile`` with integer ``q`` arrays, NumPy ints or lists of ints: float64 for float32 data (NumPy keeps it);
* ``trim_zeros`` of a 0-d array: ``DimensionError`` (NumPy 2.2+ returns it);
* ``polyval`` with complex coefficients at an infinite ``x``: NaN + NaN j (NumPy's ``0 * inf`` is in ``x``'s dtype);
* ``partition``/``argpartition`` of an empty array with an out-of-range ``kth``: ``OutOfBoundsError`` (NumPy
  checks no kth of an empty array).

``FUZZ8_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples. Outside an MPI job of 2 or more processes the file is
skipped. Regressions of the bugs it found close the file.
"""

from __future__ import annotations

import itertools
import math
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

# ruff: noqa: B023 (the lambdas given run() are called at once, inside the loop that binds their variables)

pytestmark = [
    pytest.mark.skipif(WORLD < 2, reason="needs an MPI job of 2 or more processes (mpiexec -n 4, see .ci/run)"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning"),
]


def fuzz(n: int):
    """A fuzzer's settings: ``n`` examples (``FUZZ8_EXAMPLES`` overrides), the same on every process."""
    return mpi_fuzz(n, "FUZZ8_EXAMPLES")


FLOATS = ("float64", "float32")
INTS = ("int64", "int32", "int8", "uint8")
REAL = (*FLOATS, *INTS, "bool")
ALL = (*REAL, "complex128", "complex64")
SIDES = (0, 1, 2, 3, 5, 7)
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])


def _values(rng: np.random.Generator, shape: tuple, dtype: str, special: bool, spread: int = 4) -> np.ndarray:
    n = math.prod(shape)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -spread
        return rng.integers(lo, spread + 1, n).astype(dt).reshape(shape)
    if dt.kind == "c":
        part = "float64" if dt == np.complex128 else "float32"
        re, im = _values(rng, shape, part, special, spread), _values(rng, shape, part, special, spread)
        return np.asarray(re + 1j * im.astype(dt)).astype(dt).reshape(shape)
    v = rng.integers(-spread, spread + 1, n) / rng.choice([1, 2, 4], n)
    noisy = rng.random(n) < 0.3
    v[noisy] = rng.normal(size=int(noisy.sum())) * spread
    if special and n:
        hit = rng.random(n) < 0.2
        v[hit] = rng.choice(SPECIAL, int(hit.sum()))
    return v.astype(dt).reshape(shape)


@st.composite
def shapes(draw, min_dims=0, max_dims=3, min_side=0):
    nd = draw(st.integers(min_dims, max_dims))
    if nd == 1:
        return (draw(st.sampled_from([s for s in (*SIDES, 9, 13) if s >= min_side])),)
    return tuple(draw(st.sampled_from([s for s in SIDES if s >= min_side])) for _ in range(nd))


@st.composite
def host_arrays(draw, dtypes=ALL, shape=None, min_dims=0, max_dims=3, special=None, min_side=0, spread=4):
    """A NumPy array: a shape, a dtype of ``dtypes``, small integers, halves, normals and sometimes NaN/inf/-0.0."""
    if shape is None:
        shape = draw(shapes(min_dims, max_dims, min_side))
    dtype = draw(st.sampled_from(dtypes))
    sp = draw(st.booleans()) if special is None else special
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _values(rng, tuple(shape), dtype, sp, spread)


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh``: axis k over mesh axis k (``xp.asarray``) or a random layout."""
    a = np.asarray(a)
    if a.ndim == 0 or (draw(st.booleans()) and 1 not in a.shape[: len(mesh.axis_names)]):
        x = xp.asarray(a, device=mesh)
    else:
        dims = tuple(f"dim{k}" for k in range(a.ndim))
        lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
        x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)
    return x


@st.composite
def either(draw, a: np.ndarray, mesh, forms=("host", "xp", "list")):
    """``a`` as NumPy accepts secondary arguments: a host array, a positional array, or a Python list."""
    form = draw(st.sampled_from(forms))
    if form == "xp":
        return draw(placed(a, mesh))
    if form == "list" and np.asarray(a.tolist()).dtype == a.dtype:
        return a.tolist()
    return a


# --------------------------------------------------------------------------------------------- checks


def _tol(dtype) -> float:
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64, np.float16) else 1e-9


def _same(g, e, approx: bool, rtol: float | None) -> None:
    g, e = np.asarray(g), np.asarray(e)
    assert g.shape == e.shape, f"shape {g.shape}, NumPy {e.shape}"
    assert g.dtype == e.dtype, f"dtype {g.dtype}, NumPy {e.dtype}"
    if approx and e.dtype.kind in "fc":
        tol = _tol(e.dtype) if rtol is None else rtol
        for part in (np.real, np.imag) if e.dtype.kind == "c" else (np.asarray,):
            np.testing.assert_allclose(part(g), part(e), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(g, e)


def _outcome(fn):
    """``(result, None)`` or ``(None, error)`` of ``fn()``, warnings quiet, with the comm log of the call."""
    with warnings.catch_warnings(), np.errstate(all="ignore"), sa.comm_log() as log:
        warnings.simplefilter("ignore")
        try:
            return fn(), None, log.records
        except Exception as e:  # (judged below, collectively)
            return None, e, log.records


def run(np_call, xp_call, approx=False, rtol=None, gather=8, compare=None, lenient=False, raises=(), label=""):
    """NumPy's ``np_call()`` against ``xp_call()`` on every process of the job.

    Every process must end the same way: the same result (digest of the gathered values), or the same typed
    ``sa`` error (NumPy raised, or the error is one of ``raises``: a deliberate refusal); ``lenient`` accepts a
    result where NumPy raises (a deliberate extension). No ``allgather`` of more than ``gather`` elements.
    ``label`` starts the messages.
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
        if np_error is None and not isinstance(error, raises):
            agree(label + f"NumPy gave a result; the namespace raised {kind}: {error!r:.300}")
        return None
    if np_error is not None and not lenient:
        agree(label + f"NumPy raised {type(np_error).__name__}: {np_error}; the namespace gave a result")
    big = [(r.op, r.axes, r.elements) for r in records if r.op == "allgather" and r.elements > gather]
    values = _quiet(lambda: _gathered(got))
    digests = _world().allgather(_digest(values))
    message = None if len(set(digests)) == 1 else "the processes got different results"
    if message is None and big:
        message = f"allgathers of more than {gather} elements: {big}"
    if message is None and np_error is None:
        try:
            if compare is not None:
                compare(got, values, expected)
            elif isinstance(expected, tuple):
                assert isinstance(values, tuple) and len(values) == len(expected), "not NumPy's tuple"
                for g, e in zip(values, expected):
                    _same(g, e, approx, rtol)
            else:
                _same(values, expected, approx, rtol)
        except AssertionError as e:
            message = str(e)[:2000]
    agree(None if message is None else label + message)
    return got


def host(v):
    """NumPy's form of an argument (an Array's gathered values)."""
    return v.numpy() if isinstance(v, xp.Array) else v


# =============================================================================================== counts


@fuzz(14)
@given(st.data())
def test_fuzz_bincount(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("int64", "int32", "uint8", "int8", "bool"), min_dims=1, max_dims=1, special=False))
    if data.draw(st.integers(0, 4)):
        a = np.abs(a)
    x = data.draw(placed(a, mesh))
    kw = {}
    if data.draw(st.booleans()):
        kw["minlength"] = data.draw(st.sampled_from([0, 3, 12, -1]))
    if data.draw(st.booleans()):
        w = data.draw(host_arrays(("float64", "float32", "int64", "bool"), shape=a.shape, special=False))
        kw["weights"] = data.draw(either(w, mesh))
    np_kw = {k: host(v) for k, v in kw.items()}
    run(lambda: np.bincount(a, **np_kw), lambda: xp.bincount(x, **kw), approx=True)


@fuzz(12)
@given(st.data())
def test_fuzz_digitize(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(REAL))
    x = data.draw(placed(a, mesh))
    b = np.sort(data.draw(host_arrays(("float64", "int64", "float32"), min_dims=1, max_dims=1, special=False)))
    if data.draw(st.booleans()):
        b = b[::-1].copy()
    if data.draw(st.integers(0, 4)) == 0 and b.size > 2:
        b[0], b[-1] = b[-1], b[0]  # (not monotonic, unless all equal)
    bins = data.draw(either(b, mesh))
    right = data.draw(st.booleans())
    run(
        lambda: np.digitize(a, b, right=right),
        lambda: xp.digitize(x, bins, right=right),
        gather=4 * mesh.size + b.size + a.size,
    )


@fuzz(16)
@given(st.data())
def test_fuzz_histogram(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(REAL, special=data.draw(st.integers(0, 2)) == 0))
    x = data.draw(placed(a, mesh))
    kw: dict = {}
    form = data.draw(st.sampled_from(["default", "int", "edges", "bad"]))
    if form == "int":
        kw["bins"] = data.draw(st.integers(1, 9))
    elif form == "edges":
        e = np.sort(data.draw(host_arrays(("float64", "int64", "float32"), min_dims=1, max_dims=1, special=False)))
        kw["bins"] = data.draw(either(e, mesh))
    elif form == "bad":
        kw["bins"] = data.draw(st.sampled_from([0, -2, "auto", 2.5, [[1.0, 2.0]], [3.0, 1.0, 2.0]]))
    if data.draw(st.integers(0, 2)) == 0:
        lo = data.draw(st.integers(-5, 3))
        kw["range"] = (lo, lo + data.draw(st.sampled_from([0, 0.5, 4, -1, np.inf])))
    if data.draw(st.booleans()):
        kw["density"] = True
    if data.draw(st.booleans()):
        w = data.draw(host_arrays(("float64", "float32", "int64", "complex128"), shape=a.shape, special=False))
        kw["weights"] = data.draw(either(w, mesh, ("host", "xp")))
    np_kw = {k: host(v) for k, v in kw.items()}
    w = np_kw.get("weights")
    rtol = 1e-5 if w is not None and w.dtype == np.float32 else None
    run(lambda: np.histogram(a, **np_kw), lambda: xp.histogram(x, **kw), approx=True, rtol=rtol, gather=32)


@fuzz(12)
@given(st.data())
def test_fuzz_isin(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(REAL + ("complex128",)))
    t = data.draw(host_arrays(REAL, max_dims=2))
    kw: dict = {}
    if data.draw(st.booleans()):
        kw["invert"] = True
    if data.draw(st.integers(0, 3)) == 0:
        kw["kind"] = data.draw(st.sampled_from(["sort", "table", "hash"]))
    x = data.draw(placed(a, mesh))
    tests = data.draw(either(t, mesh))
    run(
        lambda: np.isin(a, t, **kw),
        lambda: xp.isin(x, tests, **kw),
        gather=4 * mesh.size + t.size,
    )


@fuzz(12)
@given(st.data())
def test_fuzz_interp(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64"), special=data.draw(st.booleans())))
    x = data.draw(placed(a, mesh))
    pts = np.unique(data.draw(host_arrays(("float64", "int64"), min_dims=1, max_dims=1, special=False)))
    fp = data.draw(host_arrays(("float64", "float32", "complex128"), shape=pts.shape, special=False))
    kw: dict = {}
    if data.draw(st.booleans()):
        kw["left"] = data.draw(st.sampled_from([-7.5, np.nan, 2]))
    if data.draw(st.booleans()):
        kw["right"] = data.draw(st.sampled_from([9.25, np.inf]))
    if data.draw(st.integers(0, 3)) == 0:
        kw["period"] = data.draw(st.sampled_from([360, -3.0, 0]))
        keep = np.sort(np.unique(np.remainder(pts, abs(kw["period"]) or 1), return_index=True)[1])
        pts, fp = pts[keep], fp[keep]
    p_arg, f_arg = data.draw(either(pts, mesh)), data.draw(either(fp, mesh))
    run(
        lambda: np.interp(a, pts, fp, **kw),
        lambda: xp.interp(x, p_arg, f_arg, **kw),
        approx=True,
        gather=4 * mesh.size + a.size,
    )


METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf", "hazen", "median_unbiased")


@pytest.mark.parametrize("name", ["percentile", "quantile", "nanpercentile", "nanquantile"])
@fuzz(8)
@given(data=st.data())
def test_fuzz_percentile(name, data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64", "int32"), special=data.draw(st.booleans())))
    if a.dtype.kind == "f":
        a = np.where(np.isinf(a), np.sign(a) * 1e30, a).astype(a.dtype)  # (NumPy's lerp of infinities: NaN)
    x = data.draw(placed(a, mesh))
    scale = 100 if "percentile" in name else 1
    q = data.draw(
        st.one_of(
            st.sampled_from([0, 50, 100, 12.5, 101, -1]),
            st.lists(st.sampled_from([0, 5, 50, 100]), max_size=3).map(np.array),
        )
    )
    q = q / scale if scale == 1 else q
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim)]))
    kw: dict = {"axis": axis, "method": data.draw(st.sampled_from(METHODS))}
    if data.draw(st.booleans()):
        kw["keepdims"] = True
    np_f, xp_f = getattr(np, name), getattr(xp, name)
    if name.startswith("nan") and a.dtype == np.float32 and np.isnan(a).any():
        q = 50 / (100 / scale)  # (NumPy's all-NaN slices keep float32 for an array q, else float64: a quirk)
    run(
        lambda: np_f(a, q, **kw),
        lambda: xp_f(x, q, **kw),
        approx=True,
        rtol=1e-5 if a.dtype == np.float32 else None,
        gather=64,
    )


@pytest.mark.parametrize("name", ["cov", "corrcoef"])
@fuzz(10)
@given(data=st.data())
def test_fuzz_cov_corrcoef(name, data):
    mesh = data.draw(meshes())
    dtypes = ("float64", "float32", "int64", "complex128")
    a = data.draw(host_arrays(dtypes, min_dims=1, max_dims=2, min_side=1, special=data.draw(st.integers(0, 4)) == 0))
    x = data.draw(placed(a, mesh))
    kw: dict = {}
    if data.draw(st.booleans()):
        kw["rowvar"] = False
    y = yh = None
    if data.draw(st.integers(0, 2)) == 0:
        yh = data.draw(
            host_arrays(("float64", "int64"), shape=a.shape if data.draw(st.integers(0, 3)) else (3,), special=False)
        )
        y = data.draw(placed(yh, mesh))
    if name == "cov" and data.draw(st.booleans()):
        kw["ddof"] = data.draw(st.sampled_from([0, 1, 2, 5]))
    args, np_args = (() if y is None else (y,)), (() if yh is None else (yh,))
    dt = np.result_type(a.dtype, np.float64)
    run(
        lambda: getattr(np, name)(a, *np_args, **kw),
        lambda: getattr(xp, name)(x, *args, **kw),
        approx=True,
        rtol=1e-3 if dt == np.float32 else 1e-8,
        gather=max(8, a.size + (0 if yh is None else yh.size)),
    )


@pytest.mark.parametrize("two", [False, True], ids=["histogramdd", "histogram2d"])
@fuzz(10)
@given(data=st.data())
def test_fuzz_histogramdd(two, data):
    mesh = data.draw(meshes())
    n = data.draw(st.sampled_from([0, 1, 3, 5, 9]))
    d = 2 if two else data.draw(st.integers(1, 3))
    cols = [
        data.draw(host_arrays(("float64", "float32", "int64"), shape=(n,), special=data.draw(st.booleans())))
        for _ in range(d)
    ]
    xcols = [data.draw(placed(c, mesh)) for c in cols]
    kw: dict = {}
    form = data.draw(st.sampled_from(["count", "counts", "edges"]))
    if form == "count":
        kw["bins"] = data.draw(st.sampled_from([1, 3, 5, 0]))
    elif form == "counts":
        kw["bins"] = [data.draw(st.integers(1, 4)) for _ in range(d)]
    else:
        es = [
            np.sort(data.draw(host_arrays(("float64",), min_dims=1, max_dims=1, min_side=1, special=False)))
            for _ in range(d)
        ]
        kw["bins"] = [data.draw(either(e, mesh, ("host", "xp"))) for e in es]
    if data.draw(st.booleans()):
        kw["range"] = [(-2.0, data.draw(st.sampled_from([3.0, -3.0, np.inf])))] * d
    if data.draw(st.booleans()):
        kw["density"] = True
    if data.draw(st.booleans()):
        w = data.draw(host_arrays(("float64", "int64"), shape=(n,), special=False))
        kw["weights"] = data.draw(either(w, mesh, ("host", "xp")))
    np_kw = {k: ([host(b) for b in v] if k == "bins" and isinstance(v, list) else host(v)) for k, v in kw.items()}
    if two:
        run(lambda: np.histogram2d(*cols, **np_kw), lambda: xp.histogram2d(*xcols, **kw), approx=True, gather=32)
    else:
        run(
            lambda: np.histogramdd(cols, **np_kw),
            lambda: xp.histogramdd(xcols, **kw),
            approx=True,
            gather=32,
            compare=_hist_dd_compare,
        )


def _hist_dd_compare(got, values, expected):
    hist, edges = values
    _same(hist, expected[0], True, None)
    assert len(edges) == len(expected[1])
    for g, e in zip(edges, expected[1]):
        _same(g, e, True, None)


# =============================================================================================== shapes


@st.composite
def positions(draw, n, allow_mask=True):
    kind = draw(st.sampled_from(["int", "slice", "list", "array"] + (["mask"] if allow_mask else [])))
    lim = max(n, 1) + 1
    if kind == "int":
        return draw(st.integers(-lim, lim))
    if kind == "slice":
        opt = st.one_of(st.none(), st.integers(-lim - 1, lim + 1))
        return slice(draw(opt), draw(opt), draw(st.sampled_from([None, 1, 2, -1])))
    if kind == "mask":
        return np.random.default_rng(draw(st.integers(0, 99))).random(n) < 0.5
    vals = draw(st.lists(st.integers(-lim, lim), max_size=4))
    return vals if kind == "list" else np.array(vals, dtype=np.int64)


@fuzz(12)
@given(st.data())
def test_fuzz_delete_insert(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "int64", "bool", "complex128", "float32"), max_dims=2))
    x = data.draw(placed(a, mesh))
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim), a.ndim]))
    n = a.size if axis is None or axis == a.ndim else a.shape[axis]
    flat = axis is None and a.ndim > 1
    if data.draw(st.booleans()):
        obj = data.draw(positions(n))
        run(lambda: np.delete(a, obj, axis=axis), lambda: xp.delete(x, obj, axis=axis), gather=a.size if flat else 8)
        return
    obj = data.draw(positions(n, allow_mask=False))
    v = data.draw(
        host_arrays(("float64", "int64", "bool"), shape=data.draw(st.sampled_from([(), (1,), (2,)])), special=False)
    )
    values = data.draw(either(v, mesh)) if v.ndim else v.item()
    try:
        run(
            lambda: np.insert(a, obj, v, axis=axis),
            lambda: xp.insert(x, obj, values, axis=axis),
            gather=a.size + v.size,
        )
    except AssertionError as e:  # (deliberate, documented: NumPy repeats an axis of length 1 to fill the places)
        if "in one place" not in str(e) or n != 1:
            raise


@fuzz(14)
@given(st.data())
def test_fuzz_resize_rot90_trim_ediff1d(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(ALL, max_dims=3))
    x = data.draw(placed(a, mesh))
    name = data.draw(st.sampled_from(["resize", "rot90", "trim_zeros", "ediff1d"]))
    if name == "resize":
        new = data.draw(st.one_of(st.integers(-1, 20), st.lists(st.integers(0, 6), max_size=3).map(tuple)))
        run(lambda: np.resize(a, new), lambda: xp.resize(x, new), gather=8 if a.ndim <= 1 else a.size)
    elif name == "rot90":
        k = data.draw(st.integers(-5, 5))
        axes = tuple(data.draw(st.lists(st.integers(-3, 2), min_size=2, max_size=2)))
        run(lambda: np.rot90(a, k, axes), lambda: xp.rot90(x, k, axes))
    elif name == "trim_zeros":
        z = np.where(np.random.default_rng(a.size).random(a.shape) < 0.6, np.zeros((), a.dtype), a)
        xz = data.draw(placed(z, mesh))
        trim = data.draw(st.sampled_from(["fb", "f", "b", "B", "x"]))
        axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim - 1, a.ndim)))
        run(
            lambda: np.trim_zeros(z, trim, axis=axis), lambda: xp.trim_zeros(xz, trim, axis=axis), gather=max(8, a.size)
        )
    else:
        v = data.draw(host_arrays(("float64", "int64", "uint8"), max_dims=1, special=False))
        kw = {"to_begin": data.draw(either(v, mesh))} if data.draw(st.booleans()) else {}
        np_kw = {k: host(t) for k, t in kw.items()}
        run(lambda: np.ediff1d(a, **np_kw), lambda: xp.ediff1d(x, **kw), gather=8 if a.ndim <= 1 else a.size)


def _partition_compare(a, kth, axis, arg):
    def compare(got, values, expected):
        g = np.asarray(values)
        assert g.shape == expected.shape and g.dtype == expected.dtype, (g.shape, g.dtype, expected.dtype)
        src = a.reshape(-1) if axis is None or a.ndim == 0 else a
        ax = 0 if axis is None or a.ndim == 0 else axis
        if arg:
            np.testing.assert_array_equal(np.sort(g, axis=ax), np.sort(expected, axis=ax))
            g = np.take_along_axis(src, g, axis=ax)
        ref = np.sort(src, axis=ax)
        n = ref.shape[ax]
        ks = sorted({int(k) % n for k in np.atleast_1d(kth)}) if n else []
        bounds = [0, *[b for k in ks for b in (k, k + 1)], n]
        gm, rm = np.moveaxis(g, ax, -1), np.moveaxis(ref, ax, -1)
        for lo, hi in itertools.pairwise(bounds):
            np.testing.assert_array_equal(np.sort(gm[..., lo:hi], axis=-1), rm[..., lo:hi])

    return compare


@pytest.mark.parametrize("arg", [False, True], ids=["partition", "argpartition"])
@fuzz(8)
@given(data=st.data())
def test_fuzz_partition(arg, data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(REAL, max_dims=2))
    x = data.draw(placed(a, mesh))
    axis = data.draw(st.sampled_from([-1, None, *range(-a.ndim, a.ndim)]))
    n = a.size if axis is None else (a.shape[axis] if a.ndim else 0)
    lim = max(n, 1)
    kth = data.draw(st.one_of(st.integers(-lim - 1, lim), st.lists(st.integers(-lim, lim - 1), max_size=3)))
    np_f, xp_f = (np.argpartition, xp.argpartition) if arg else (np.partition, xp.partition)
    run(
        lambda: np_f(a, kth, axis=axis),
        lambda: xp_f(x, kth, axis=axis),
        gather=64,
        compare=_partition_compare(a, kth, axis, arg),
    )


@fuzz(10)
@given(st.data())
def test_fuzz_lexsort_select(data):
    mesh = data.draw(meshes())
    shape = data.draw(shapes(1, 2))
    if data.draw(st.booleans()):
        keys = [data.draw(host_arrays(("float64", "int64", "bool"), shape=shape, spread=2)) for _ in range(2)]
        xks = tuple(data.draw(placed(k, mesh)) for k in keys)
        axis = data.draw(st.sampled_from([-1, 0, len(shape)]))
        run(lambda: np.lexsort(tuple(keys), axis=axis), lambda: xp.lexsort(xks, axis=axis), gather=64)
        return
    conds = [data.draw(host_arrays(("bool",), shape=shape)) for _ in range(2)]
    choices = [data.draw(host_arrays(("float64", "int64", "complex128"), shape=shape)) for _ in range(2)]
    xc = [data.draw(placed(c, mesh)) for c in conds]
    xch = [data.draw(placed(c, mesh)) for c in choices]
    if data.draw(st.integers(0, 4)) == 0:
        xch, choices = xch[:1], choices[:1]  # (NumPy: lists of different lengths)
    default = data.draw(st.sampled_from([0, -2.5, np.nan]))
    run(
        lambda: np.select(conds, choices, default), lambda: xp.select(xc, xch, default), gather=max(8, math.prod(shape))
    )


@fuzz(14)
@given(st.data())
def test_fuzz_vander_unwrap_trapezoid(data):
    mesh = data.draw(meshes())
    name = data.draw(st.sampled_from(["vander", "unwrap", "trapezoid"]))
    if name == "vander":
        a = data.draw(host_arrays(("float64", "int64", "bool", "complex128"), min_dims=1, max_dims=2))
        x = data.draw(placed(a, mesh))
        kw = {"N": data.draw(st.sampled_from([None, 0, 3, -1])), "increasing": data.draw(st.booleans())}
        run(lambda: np.vander(a, **kw), lambda: xp.vander(x, **kw), approx=True)
        return
    a = data.draw(host_arrays(("float64", "float32", "int64"), min_dims=1, max_dims=2, spread=12))
    x = data.draw(placed(a, mesh))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    row = a.size // max(1, a.shape[axis])
    if name == "unwrap":
        kw = {"axis": axis, "period": data.draw(st.sampled_from([2 * np.pi, 5, 360.0]))}
        run(lambda: np.unwrap(a, **kw), lambda: xp.unwrap(x, **kw), approx=True, rtol=1e-5, gather=max(8, row))
        return
    kw, np_kw = {}, {}
    form = data.draw(st.sampled_from(["none", "dx", "x"]))
    if form == "dx":
        kw["dx"] = np_kw["dx"] = data.draw(st.sampled_from([0.5, -1.0]))
    elif form == "x":
        s = np.sort(data.draw(host_arrays(("float64", "int64"), shape=(a.shape[axis],), special=False)))
        np_kw["x"], kw["x"] = s, data.draw(either(s, mesh))
    run(
        lambda: np.trapezoid(a, axis=axis, **np_kw),
        lambda: xp.trapezoid(x, axis=axis, **kw),
        approx=True,
        rtol=1e-4,
        gather=max(8, row),
    )


# =============================================================================================== math, ufuncs

_UNARY = {
    "exp2": (REAL + ("complex128",)),
    "sinc": ("float64", "float32", "int64", "complex128"),
    "nan_to_num": ALL,
    "i0": ("float64", "float32", "int64"),
    "real_if_close": ("complex128", "complex64", "float64"),
    "modf": ("float64", "float32", "int64"),
    "frexp": ("float64", "float32"),
}
_BINARY = {
    "heaviside": ("float64", "float32", "int64"),
    "fmod": ("float64", "float32", "int64", "int32"),
    "divmod": ("float64", "int64", "int8"),
    "gcd": ("int64", "int32", "int8", "uint8"),
    "lcm": ("int64", "int32", "uint8"),
    "fmax": REAL,
    "fmin": REAL,
    "ldexp": ("float64", "float32"),
    "kron": ("float64", "int64", "complex128", "bool"),
    "convolve": ("float64", "int64", "complex128"),
}


@fuzz(24)
@given(st.data())
def test_fuzz_elementwise(data):
    mesh = data.draw(meshes())
    name = data.draw(st.sampled_from(sorted(_UNARY) + sorted(_BINARY)))
    dtypes = _UNARY.get(name) or _BINARY[name]
    max_dims = 1 if name == "convolve" else 2
    a = data.draw(host_arrays(dtypes, max_dims=max_dims, special=data.draw(st.booleans())))
    if name == "real_if_close" and a.dtype.kind == "c" and data.draw(st.booleans()):
        a = a.real.astype(a.dtype) + (1e-18j if a.dtype == np.complex128 else 0j)
    x = data.draw(placed(a, mesh))
    kw: dict = {}
    if name == "nan_to_num" and data.draw(st.booleans()):
        kw = {"nan": -1.0, "posinf": 9.0, "neginf": data.draw(st.sampled_from([None, -9.0]))}
    if name in _UNARY:
        run(
            lambda: getattr(np, name)(a, **kw),
            lambda: getattr(xp, name)(x, **kw),
            approx=True,
            rtol=1e-6,
            label=f"{name}: ",
        )
        return
    bdt = ("int64", "int32") if name == "ldexp" else dtypes
    shape = a.shape if data.draw(st.integers(0, 3)) else a.shape[1:]
    if name in ("kron", "convolve"):
        shape = data.draw(shapes(1 if name == "convolve" else 0, max_dims))
    b = data.draw(host_arrays(bdt, shape=shape, special=data.draw(st.booleans())))
    other = data.draw(placed(b, mesh)) if b.ndim else b.item()  # (host arrays: refused, documented)
    if name == "convolve":
        kw["mode"] = data.draw(st.sampled_from(["full", "same", "valid"]))
        a2 = np.where(np.isfinite(a), a, 0).astype(a.dtype) if a.dtype.kind in "fc" else a
        x2 = data.draw(placed(a2, mesh))
        b2 = np.where(np.isfinite(b), b, 0).astype(b.dtype) if b.dtype.kind in "fc" else b
        o2 = data.draw(either(b2, mesh, ("host", "xp")))
        run(
            lambda: np.convolve(a2, b2, **kw),
            lambda: xp.convolve(x2, o2, **kw),
            approx=True,
            rtol=1e-6,
            gather=max(8, a.size + b.size),
            label="convolve: ",
        )
        return
    if name == "kron" and (a.dtype.kind == "c" or b.dtype.kind == "c"):
        a, b = (np.where(np.isfinite(v), v, 0).astype(v.dtype) if v.dtype.kind in "fc" else v for v in (a, b))
        x, other = data.draw(placed(a, mesh)), (data.draw(placed(b, mesh)) if b.ndim else b.item())
    run(
        lambda: getattr(np, name)(a, host(other)),
        lambda: getattr(xp, name)(x, other),
        approx=True,
        rtol=1e-6,
        gather=max(8, a.size + np.size(b)) if name == "kron" else 8,
        label=f"{name}: ",
    )


@fuzz(10)
@given(st.data())
def test_fuzz_polyval_diag(data):
    mesh = data.draw(meshes())
    if data.draw(st.booleans()):
        c = data.draw(host_arrays(("float64", "int64", "complex128"), min_dims=1, max_dims=1, special=False))
        v = data.draw(host_arrays(("float64", "int64", "float32"), max_dims=2, special=data.draw(st.booleans())))
        coef = data.draw(either(c, mesh))
        xv = data.draw(placed(v, mesh))
        run(lambda: np.polyval(c, v), lambda: xp.polyval(coef, xv), approx=True, rtol=1e-5)
        return
    a = data.draw(host_arrays(("float64", "int64", "bool", "complex128"), max_dims=3, min_dims=0))
    x = data.draw(placed(a, mesh))
    k = data.draw(st.integers(-3, 3))
    run(lambda: np.diag(a, k), lambda: xp.diag(x, k), gather=max(8, a.size))


# =============================================================================================== linspace


@fuzz(12)
@given(st.data())
def test_fuzz_linspace_array_endpoints(data):
    mesh = data.draw(meshes())
    shape = data.draw(shapes(0, 2))
    start = data.draw(host_arrays(("float64", "float32", "int64"), shape=shape))
    stop = data.draw(
        host_arrays(("float64", "float32", "int64"), shape=shape[1:] if data.draw(st.booleans()) else shape)
    )
    xs = data.draw(placed(start, mesh))
    xe = data.draw(placed(stop, mesh))  # (a NumPy array does not mix with an Array: refused, documented)
    num = data.draw(st.sampled_from([0, 1, 2, 5, -1]))
    kw = {
        "endpoint": data.draw(st.booleans()),
        "retstep": data.draw(st.booleans()),
        "axis": data.draw(st.integers(-start.ndim - 1, start.ndim)),
    }
    if data.draw(st.integers(0, 3)) == 0:
        kw["dtype"] = data.draw(st.sampled_from(["float32", "float64"]))

    def compare(got, values, expected):
        if kw["retstep"]:
            values, expected = values[0], expected[0]  # (the step: checked as a value below)
            gstep = got[1]
            assert np.asarray(gstep.numpy() if isinstance(gstep, xp.Array) else gstep).shape == np.shape(
                np.asarray(_quiet(lambda: np.linspace(start, stop, num, **kw))[1])
            )
        _same(values, expected, True, 1e-6)

    run(
        lambda: np.linspace(start, stop, num, **kw),
        lambda: np.linspace(xs, xe, num, **kw),
        compare=compare,
        gather=max(8, start.size + stop.size),
    )


# =============================================================================================== eig


@fuzz(10)
@given(st.data())
def test_fuzz_eig(data):
    mesh = data.draw(meshes())
    n = data.draw(st.sampled_from([0, 1, 2, 3, 4]))
    b = data.draw(st.sampled_from([1, 2, 3, 5]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    a = rng.standard_normal((b, n, n)) + np.eye(n) * np.arange(n) * 3  # (eigenvalues apart: a stable order)
    if data.draw(st.booleans()):
        a = a.astype(data.draw(st.sampled_from(["float32", "complex128"])))
    bad = data.draw(st.integers(0, 3)) == 0 and n > 0
    if bad:  # (one matrix, on one process's block only, holds NaN or inf)
        a[data.draw(st.integers(0, b - 1)), 0, n - 1] = data.draw(st.sampled_from([np.nan, np.inf]))
    lay = data.draw(layouts(mesh, ("b", "i", "j")))
    lay = {d: v for d, v in lay.items() if {"b": b, "i": n, "j": n}[d] > 1}
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    vectors = data.draw(st.booleans())

    def call():
        if vectors:
            w, v = sa.linalg.eig(x, ("i", "j"))
            return w.relayout({}), v.relayout({})
        return sa.linalg.eigvals(x, ("i", "j")).relayout({})

    def compare(got, values, expected):
        w = values[0] if vectors else values
        want = np.linalg.eigvals(a)
        assert w.dtype == np.result_type(a.dtype.type(0) * 1j).type(0).dtype or w.dtype.kind == "c", w.dtype
        np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(want.astype(w.dtype)), rtol=1e-3, atol=1e-3)
        if vectors:
            v = values[1]
            np.testing.assert_allclose(a @ v, v * w[:, None, :], rtol=1e-3, atol=1e-3)

    # (a split matrix: the documented replicated fallback gathers it; the relayouts above gather the results)
    run(
        lambda: None if not bad else np.linalg.eigvals(np.full((1, 1), np.nan)),
        call,
        compare=compare,
        gather=a.size + b * n,
        raises=(sa.linalg.LinAlgError,) if bad else (),
    )


# =============================================================================================== bad values


def _split(a: np.ndarray, mesh) -> xp.Array:
    """``a`` (1-D) split over every mesh axis: each process holds its own block (uneven, maybe empty)."""
    return as_kind(sa.asarray(a, dims=("dim0",), mesh=mesh, layout={"dim0": tuple(mesh.axis_names)}), xp.Array)


_BAD = (
    "bincount",
    "digitize",
    "histogram_edges",
    "histogram_nan",
    "searchsorted_interp",
    "percentile_q",
    "quantile_q",
    "histogramdd_edges",
    "linspace_num",
    "real_if_close",
    "isin_kind",
)


@fuzz(24)
@given(st.data())
def test_fuzz_a_bad_value_on_one_process_raises_everywhere(data):
    mesh = data.draw(meshes())
    name = data.draw(st.sampled_from(_BAD))
    n = data.draw(st.sampled_from([1, 2, 3, 5, 9, 13]))
    at = data.draw(st.integers(0, n - 1))  # (the one bad entry: on one process's block only)
    bad = data.draw(st.booleans())
    good = np.arange(n, dtype=np.float64)
    if name == "bincount":
        a = np.arange(n, dtype=np.int64)
        a[at] = -1 if bad else a[at]
        x = _split(a, mesh)
        run(lambda: np.bincount(a), lambda: xp.bincount(x))
    elif name in ("digitize", "histogram_edges", "searchsorted_interp", "histogramdd_edges"):
        e = good.copy()
        e[at] = (np.nan if name == "histogram_edges" and data.draw(st.booleans()) else -5.0) if bad else e[at]
        if bad and n > 1 and at == 0:
            e[at] = n + 1.0
        ex = _split(e, mesh)
        v = np.array([0.5, 2.0, -1.0, 7.5])
        xv = xp.asarray(v, device=mesh)
        if name == "digitize":
            run(lambda: np.digitize(v, e), lambda: xp.digitize(xv, ex), gather=4 * mesh.size + 2 * n)
        elif name == "histogram_edges":
            run(lambda: np.histogram(v, e), lambda: xp.histogram(xv, ex), gather=4 * mesh.size + 2 * n)
        elif name == "histogramdd_edges":
            run(
                lambda: np.histogramdd([v], [e]),
                lambda: xp.histogramdd([xv], [ex]),
                gather=4 * mesh.size + 2 * n,
                compare=_hist_dd_compare,
            )
        else:  # (NumPy does not check xp's order: only a well-defined answer is compared)
            if not bad:
                run(
                    lambda: np.interp(v, e, e * 2),
                    lambda: xp.interp(xv, ex, ex * 2),
                    approx=True,
                    gather=4 * mesh.size + 2 * n,
                )
    elif name == "histogram_nan":
        a = good.copy()
        a[at] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf])) if bad else a[at]
        x = _split(a, mesh)
        run(lambda: np.histogram(a), lambda: xp.histogram(x), approx=True, gather=32)
    elif name in ("percentile_q", "quantile_q"):
        scale = 100 if name == "percentile_q" else 1
        q = np.linspace(0, scale, n)
        q[at] = (scale * 1.5 if data.draw(st.booleans()) else -0.5) if bad else q[at]
        xq = _split(q, mesh)
        a = np.arange(7.0)
        x = xp.asarray(a, device=mesh)
        f = "percentile" if scale == 100 else "quantile"
        run(lambda: getattr(np, f)(a, q), lambda: getattr(xp, f)(x, xq), approx=True, gather=2 * n + 64)
    elif name == "linspace_num":
        num = data.draw(st.sampled_from([-1, 0, 3])) if bad else 3
        s0 = _split(good, mesh)
        run(lambda: np.linspace(good, good + 1, num), lambda: np.linspace(s0, s0 + 1, num), approx=True, gather=2 * n)
    elif name == "real_if_close":
        z = good + 0j
        z[at] += 1e-3j if bad else 0
        x = _split(z, mesh)
        run(lambda: np.real_if_close(z), lambda: xp.real_if_close(x))
    else:
        a = np.arange(n, dtype=np.int64)
        t = np.arange(3, dtype=np.float64 if bad else np.int64)
        x = _split(a, mesh)
        run(
            lambda: np.isin(a, t, kind="table"),
            lambda: xp.isin(x, _split(t, mesh), kind="table"),
            gather=4 * mesh.size + 3,
        )


# =============================================================================================== host reads

_READS = (
    "allclose",
    "array_equal",
    "array_equiv",
    "unique",
    "unique_all",
    "count_nonzero",
    "nonzero",
    "flatnonzero",
    "argwhere",
    "mask",
    "tolist",
    "item",
    "argmax",
    "where1",
    "isclose_any",
)


@fuzz(30)
@given(st.data())
def test_fuzz_functions_that_read_values_on_the_host(data):
    mesh = data.draw(meshes())
    name = data.draw(st.sampled_from(_READS))
    a = data.draw(
        host_arrays(
            ("float64", "float32", "int64", "bool", "complex128"),
            max_dims=2,
            special=data.draw(st.booleans()),
            spread=2,
        )
    )
    x = data.draw(placed(a, mesh))
    gather = max(8, 2 * a.size + 4 * mesh.size)  # (data-dependent lengths: the selected entries travel)
    if name in ("allclose", "array_equal", "array_equiv", "isclose_any"):
        b = a.copy()
        if b.size and data.draw(st.booleans()):
            b.flat[data.draw(st.integers(0, b.size - 1))] = 1 if b.dtype != bool else not b.flat[0]
        y = data.draw(placed(b, mesh))
        if name == "isclose_any":
            run(lambda: bool(np.any(np.isclose(a, b))), lambda: bool(np.any(np.isclose(x, y))), gather=gather)
        else:
            kw = (
                {"equal_nan": True}
                if name != "array_equiv" and a.dtype.kind in "fc" and data.draw(st.booleans())
                else {}
            )
            run(lambda: getattr(np, name)(a, b, **kw), lambda: getattr(np, name)(x, y, **kw), gather=gather)
    elif name == "unique":
        run(lambda: np.unique(a), lambda: np.unique(x), gather=gather)
    elif name == "unique_all":
        if a.dtype.kind == "c":
            return
        run(
            lambda: np.unique(a, return_counts=True, return_inverse=True),
            lambda: np.unique(x, return_counts=True, return_inverse=True),
            gather=gather,
        )
    elif name == "count_nonzero":
        run(lambda: np.count_nonzero(a), lambda: int(np.count_nonzero(x)), gather=gather)
    elif name in ("nonzero", "argwhere", "flatnonzero"):
        if a.ndim == 0 and name in ("nonzero", "argwhere"):  # (deliberate refusals: a 0-d array has no indices)
            return
        run(lambda: getattr(np, name)(a), lambda: getattr(np, name)(x), gather=gather)
    elif name == "mask":
        m = np.random.default_rng(a.size).random(a.shape) < 0.5
        xm = data.draw(placed(m, mesh))
        run(lambda: a[m], lambda: x[xm], gather=gather)
    elif name == "tolist":
        run(
            lambda: np.asarray(a.tolist(), dtype=a.dtype), lambda: np.asarray(x.tolist(), dtype=a.dtype), gather=1 << 30
        )
    elif name == "item":
        run(lambda: a.item(), lambda: x.item(), gather=1 << 30)  # (one entry: NumPy's error unless size 1)
    elif name == "argmax":
        if a.dtype.kind == "c":
            return
        run(lambda: int(np.argmax(a)), lambda: int(np.argmax(x)), gather=gather)
    else:
        run(lambda: np.where(a), lambda: np.where(x), gather=gather) if a.ndim else None


# =============================================================================================== np.<name>(x)

_DISPATCH = (
    ("bincount", lambda a: (np.abs(a).astype(np.int64).reshape(-1),)),
    ("histogram", lambda a: (a.reshape(-1),)),
    ("percentile", lambda a: (a, 30)),
    ("nanquantile", lambda a: (a, 0.5)),
    ("isin", lambda a: (a, [0, 1, 2])),
    ("rot90", lambda a: (a,)),
    ("resize", lambda a: (a, (3, 2))),
    ("trim_zeros", lambda a: (a.reshape(-1),)),
    ("ediff1d", lambda a: (a.reshape(-1),)),
    ("vander", lambda a: (a.reshape(-1), 3)),
    ("exp2", lambda a: (a,)),
    ("sinc", lambda a: (a,)),
    ("nan_to_num", lambda a: (a,)),
    ("i0", lambda a: (a,)),
    ("fmax", lambda a: (a, 1.5)),
    ("heaviside", lambda a: (a, 0.5)),
    ("modf", lambda a: (a,)),
    ("frexp", lambda a: (a,)),
    ("diag", lambda a: (a,)),
    ("kron", lambda a: (a, [[1.0], [2.0]])),
    ("cov", lambda a: (a,)),
    ("corrcoef", lambda a: (a,)),
    ("unwrap", lambda a: (a,)),
    ("trapezoid", lambda a: (a,)),
)


@fuzz(16)
@given(st.data())
def test_fuzz_numpy_dispatch(data):
    mesh = data.draw(meshes())
    name, make = data.draw(st.sampled_from(_DISPATCH))
    a = data.draw(
        host_arrays(("float64", "float32"), shape=data.draw(shapes(2, 2, min_side=1)), special=data.draw(st.booleans()))
    )
    if name in ("percentile", "nanquantile"):  # (NumPy's lerp of infinities: NaN; deliberate, see xp.quantile)
        a = np.where(np.isinf(a), np.sign(a) * 1e30, a).astype(a.dtype)
    args = make(a)
    xargs = (data.draw(placed(args[0], mesh)), *args[1:])

    def compare(got, values, expected):
        assert isinstance(got, (xp.Array, tuple)), type(got)
        for g, e in zip(values, expected) if isinstance(expected, tuple) else ((values, expected),):
            _same(g, e, True, 1e-5)

    run(
        lambda: getattr(np, name)(*args),
        lambda: getattr(np, name)(*xargs),
        compare=compare,
        gather=max(8, a.size),
        label=f"np.{name}: ",
    )


# =============================================================================================== regressions


def _row_mesh() -> sa.Mesh:
    return _mesh(_SHAPES[0])


def _rows(a, mesh) -> xp.Array:
    """``a`` with its first axis split over every mesh axis (uneven blocks)."""
    a = np.asarray(a)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout={dims[0]: tuple(mesh.axis_names)}), xp.Array)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_of_an_empty_list_of_quantiles_is_numpys_empty_axis(name):
    """Bug: ``xp.quantile``/``xp.nanquantile`` with an empty 1-D ``q`` raised ``DimensionError`` from ``stack`` (no
    quantiles to stack), where NumPy returns an empty leading axis (``percentile`` already handled it). Now one
    quantile's result sliced to none: NumPy's shape and dtype on every process."""
    mesh = _row_mesh()
    a = np.arange(21.0, dtype=np.float32).reshape(7, 3)
    for q in (np.array([]), [], np.array([], dtype=np.int64)):
        for axis in (None, 0, 1):
            run(
                lambda: getattr(np, name)(a, q, axis=axis),
                lambda: getattr(xp, name)(_rows(a, mesh), q, axis=axis),
                gather=64,
            )


def test_nanquantile_of_no_data_is_numpys_nan():
    """Bug: ``xp.nanquantile`` of an empty array raised ``DimensionError`` ("it has no quantiles"), where NumPy
    returns ``nanmean``'s NaN (of the reduced shape, whatever ``q``), as ``xp.nanpercentile`` already did."""
    mesh = _row_mesh()
    for shape, axis in (((0, 3), None), ((0, 3), 0), ((0, 3), 1), ((5, 0), 1)):
        a = np.zeros(shape)
        run(
            lambda: np.nanquantile(a, 0.5, axis=axis), lambda: xp.nanquantile(_rows(a, mesh), 0.5, axis=axis), gather=64
        )


def test_quantile_with_integer_quantiles_keeps_numpys_dtype():
    """Bug: ``xp.quantile(float32 data, q, method="linear")`` gave float64 for integer ``q`` given as a NumPy array,
    a NumPy integer or a list of ints (only a Python int kept float32), where NumPy keeps float32 (integer
    quantiles, 0 or 1, pick the extreme values)."""
    mesh = _row_mesh()
    a = np.array([3.0, -1.0, 7.5, 2.0, 0.5], dtype=np.float32)
    for q in (np.array([0, 1]), np.int64(1), [0, 1], np.array([1], dtype=np.int32), 0):
        run(lambda: np.quantile(a, q), lambda: xp.quantile(_rows(a, mesh), q), gather=64)


def test_trim_zeros_of_a_0d_array_is_the_array():
    """Bug: ``xp.trim_zeros`` of a 0-d array raised ``DimensionError``; NumPy 2.2+ returns it unchanged (an axis
    given is still out of bounds, ``sa.OutOfBoundsError`` on every process)."""
    mesh = _row_mesh()
    for v in (0.0, 2.5):
        a = np.array(v)
        run(lambda: np.trim_zeros(a), lambda: xp.trim_zeros(xp.asarray(a, device=mesh)))
        run(lambda: np.trim_zeros(a, axis=0), lambda: xp.trim_zeros(xp.asarray(a, device=mesh), axis=0))


def test_polyval_of_complex_coefficients_at_infinity_is_numpys():
    """Bug: ``xp.polyval`` cast ``x`` to the result's complex dtype before Horner's first step ``0 * x``, so
    ``0 * inf`` gave NaN + NaN j and ``polyval([1 + 1j], inf)`` NaN + NaN j, where NumPy computes that step in
    ``x``'s own dtype (NaN) and gives NaN + 1j. The first step is now in ``x``'s dtype."""
    mesh = _row_mesh()
    a = np.array([np.inf, 1.0, -np.inf, np.nan, -0.0, 2.0, 3.0], dtype=np.float32)
    for p in ([1 + 1j], [1 + 1j, 2.0], [2.0, 3j, 1.0]):
        run(lambda: np.polyval(p, a), lambda: xp.polyval(p, _rows(a, mesh)))
        pa = np.asarray(p)
        run(lambda: np.polyval(pa, a), lambda: xp.polyval(xp.asarray(pa, device=mesh), _rows(a, mesh)))


@pytest.mark.parametrize("name", ["partition", "argpartition"])
def test_partition_of_an_empty_array_checks_no_kth(name):
    """Bug: ``xp.partition``/``xp.argpartition`` of an empty array raised ``OutOfBoundsError`` for a ``kth`` beyond
    a non-empty axis (shape (2, 0), axis 0, kth 2); NumPy checks no kth of an empty array and returns it."""
    mesh = _row_mesh()
    a = np.zeros((2, 0))
    for kth in (2, -3, [0, 5]):
        run(lambda: getattr(np, name)(a, kth, axis=0), lambda: getattr(xp, name)(_rows(a, mesh), kth, axis=0))
    b = np.zeros((2, 1))  # (not empty: still out of bounds, on every process)
    run(lambda: getattr(np, name)(b, 2, axis=0), lambda: getattr(xp, name)(_rows(b, mesh), 2, axis=0))
