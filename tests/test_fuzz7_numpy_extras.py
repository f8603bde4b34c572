"""A differential fuzz, against NumPy, of the positional namespace's NumPy extras (``_numpy_counts``,
``_numpy_shapes``, ``_numpy_math``): random meshes (1, 2x2, 4, 2x2x2, 3x2) and layouts, uneven and empty sizes,
0-d arrays, NaN/inf/-0.0, integer/bool/float32/float64/complex dtypes and NumPy's less common arguments; each case
checks values, dtype and shape (partitions by their sorted pieces), that NumPy's errors are errors here, and that
nothing larger than a few elements is gathered. Regressions of the bugs it found close the file.

``FUZZ7_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz as _fuzz
from helpers import layouts, on_real_cupy
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

# ruff: noqa: B023 (the lambdas given run() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's and the backend's, on NaN and inf)


def fuzz(n: int):
    """The settings of a fuzzer: ``n`` examples (``FUZZ7_EXAMPLES`` overrides), no deadline."""
    return _fuzz(n, "FUZZ7_EXAMPLES")


# --------------------------------------------------------------------------------------------- data

FLOATS = ("float64", "float32")
INTS = ("int64", "int32", "int8", "uint8")
REAL = (*FLOATS, *INTS, "bool")
ALL = (*REAL, "complex128", "complex64")
SIDES = (0, 1, 2, 3, 4, 5, 7)
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
        return (draw(st.sampled_from([s for s in (*SIDES, 13) if s >= min_side])),)
    return tuple(draw(st.sampled_from([s for s in SIDES if s >= min_side])) for _ in range(nd))


@st.composite
def host_arrays(draw, dtypes=ALL, shape=None, min_dims=0, max_dims=3, special=None, min_side=0, spread=4):
    """A NumPy array: a shape, a dtype of ``dtypes``, values of small integers, halves, normals and (sometimes,
    or as ``special`` says) NaN, inf and signed zeros."""
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
        # (a dim of length 1 split over devices: xp.reshape gathers it whole, outside these functions)
        lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
        x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)
    assert x.dtype == a.dtype and x.shape == a.shape
    return x


@st.composite
def either(draw, a: np.ndarray, mesh, forms=("host", "xp", "list")):
    """``a`` as NumPy accepts secondary arguments: host array, a positional array, or a Python list."""
    form = draw(st.sampled_from(forms))
    if form == "xp":
        return draw(placed(a, mesh))
    if form == "list" and np.asarray(a.tolist()).dtype == a.dtype:  # (a list NumPy reads as the same array)
        return a.tolist()
    return a


# --------------------------------------------------------------------------------------------- checks


def _tol(dtype) -> float:
    dt = np.dtype(dtype)
    return 1e-4 if dt in (np.float32, np.complex64, np.float16) else 1e-10


def same(got, expected, approx: bool = False, rtol: float | None = None):
    """``got`` (an Array) is NumPy's ``expected``: type, shape, dtype, values (NaN equal; ``approx`` to ``rtol``)."""
    assert type(got) is xp.Array, type(got)
    g = got.numpy()
    e = np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    if approx and e.dtype.kind in "fc":
        tol = _tol(e.dtype) if rtol is None else rtol
        for part in (np.real, np.imag) if e.dtype.kind == "c" else (np.asarray,):  # (complex infinities: apart)
            np.testing.assert_allclose(part(g), part(e), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(g, e)


def _quiet_numpy(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def run(np_call, xp_call, approx: bool = False, rtol: float | None = None, gather: int = 8, compare=None,
        lenient: bool = False):
    """NumPy's ``np_call()`` against ``xp_call()``: an error where NumPy raises one (unless ``lenient``: a
    deliberate extension), else ``same`` (or ``compare(got, expected)``), and no ``allgather`` of more than
    ``gather`` elements."""
    try:
        expected = _quiet_numpy(np_call)
    except Exception as e:
        if lenient:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = xp_call()
        except Exception:
            return None
        raise AssertionError(f"NumPy raised {type(e).__name__}: {e}; the namespace gave {got!r:.300}") from None
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", sa.GatherWarning)
        got = xp_call()
    big = [r for r in log.records if r.op == "allgather" and r.elements > gather]
    assert not big, big
    if compare is not None:
        compare(got, expected)
    elif isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e, approx, rtol)
    else:
        same(got, expected, approx, rtol)
    return got


# =============================================================================================== counts


@fuzz(150)
@given(st.data())
def test_fuzz_bincount(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("int64", "int32", "uint8", "int8", "bool"), min_dims=1, max_dims=1, special=False))
    if data.draw(st.integers(0, 5)):
        a = np.abs(a)
    if a.size and data.draw(st.booleans()):
        a = (a * data.draw(st.sampled_from([1, 3, 7]))).astype(a.dtype) if a.dtype != bool else a
    x = data.draw(placed(a, mesh))
    kw = {}
    if data.draw(st.booleans()):
        kw["minlength"] = data.draw(st.integers(0, 12))
    if data.draw(st.booleans()):
        w = data.draw(host_arrays(("float64", "float32", "int64", "int32", "bool"), shape=a.shape, special=False))
        kw["weights"] = data.draw(either(w, mesh))
    np_kw = {k: (v.numpy() if isinstance(v, xp.Array) else v) for k, v in kw.items()}
    run(lambda: np.bincount(a, **np_kw), lambda: xp.bincount(x, **kw), approx=True)


@fuzz(120)
@given(st.data())
def test_fuzz_corrcoef(data):
    mesh = data.draw(meshes())
    dtypes = ("float64", "float32", "int64", "int32", "complex128")
    a = data.draw(host_arrays(dtypes, min_dims=1, max_dims=2, min_side=1, special=data.draw(st.integers(0, 5)) == 0))
    x = data.draw(placed(a, mesh))
    kw = {}
    if data.draw(st.booleans()):
        kw["rowvar"] = False
    if data.draw(st.integers(0, 3)) == 0:
        kw["dtype"] = data.draw(st.sampled_from(["float64", "float32"]))
    y = yh = None
    if data.draw(st.booleans()):
        yshape = a.shape if data.draw(st.integers(0, 3)) else a.shape[::-1]
        yh = data.draw(host_arrays(dtypes, shape=yshape, special=False))
        y = data.draw(placed(yh, mesh))
    args = () if y is None else (y,)
    np_args = () if yh is None else (yh,)
    dt = np.result_type(a.dtype, np.float64) if "dtype" not in kw else np.dtype(kw["dtype"])
    rtol = 1e-3 if np.dtype(dt) in (np.float32, np.complex64) else 1e-8
    if "dtype" in kw and (a.dtype.kind == "c" or (yh is not None and yh.dtype.kind == "c")):
        with pytest.raises(sa.DTypeError):  # (deliberate: astype refuses to drop imaginary parts)
            xp.corrcoef(x, *args, **kw)
        return
    # (cov's product of the deviations gathers a block of them when the variables are split: cov's, not corrcoef's)
    run(lambda: np.corrcoef(a, *np_args, **kw), lambda: xp.corrcoef(x, *args, **kw), approx=True, rtol=rtol,
        gather=max(8, a.size + (0 if yh is None else yh.size)))


@fuzz(150)
@given(st.data())
def test_fuzz_digitize(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(REAL))
    x = data.draw(placed(a, mesh))
    b = np.sort(data.draw(host_arrays(("float64", "int64", "float32", "int32"), min_dims=1, max_dims=1, special=False)))
    if data.draw(st.booleans()):
        b = b[::-1].copy()
    if data.draw(st.integers(0, 9)) == 0 and b.size > 2:
        b[0], b[-1] = b[-1], b[0]  # (not monotonic, unless all equal)
    bins = data.draw(either(b, mesh))
    right = data.draw(st.booleans())
    gather = 4 * mesh.size + b.size + a.size  # (an array of bins: searched where it lies, a block of traffic)
    run(lambda: np.digitize(a, b, right=right), lambda: xp.digitize(x, bins, right=right), gather=gather)


@fuzz(200)
@given(st.data())
def test_fuzz_histogram(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(REAL, special=data.draw(st.integers(0, 3)) == 0))
    x = data.draw(placed(a, mesh))
    kw: dict = {}
    np_kw: dict = {}
    form = data.draw(st.sampled_from(["default", "int", "edges"]))
    if form == "int":
        kw["bins"] = np_kw["bins"] = data.draw(st.integers(1, 9))
    elif form == "edges":
        e = np.sort(data.draw(host_arrays(("float64", "int64", "float32"), min_dims=1, max_dims=1, special=False)))
        kw["bins"] = data.draw(either(e, mesh))
        np_kw["bins"] = e
    if data.draw(st.integers(0, 2)) == 0:
        lo = data.draw(st.integers(-5, 3))
        r = (lo, lo + data.draw(st.sampled_from([0, 0.5, 1, 4])))
        kw["range"] = np_kw["range"] = r
    if data.draw(st.booleans()):
        kw["density"] = np_kw["density"] = True
    if data.draw(st.booleans()):
        w = data.draw(host_arrays(("float64", "float32", "int64", "int32", "bool", "complex128"), shape=a.shape,
                                  special=False))
        kw["weights"] = data.draw(either(w, mesh, ("host", "xp")))
        np_kw["weights"] = w
    w = np_kw.get("weights")
    rtol = 1e-5 if w is not None and w.dtype == np.float32 else None  # (float32 sums in another order)
    # (lenient: bool weights with edges, where NumPy's cumsum fails, count as ints)
    run(lambda: np.histogram(a, **np_kw), lambda: xp.histogram(x, **kw), approx=True, rtol=rtol, gather=32,
        lenient=w is not None and w.dtype == bool)


@fuzz(200)
@given(st.data())
def test_fuzz_isin(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(ALL))
    t = data.draw(host_arrays(ALL, max_dims=2))
    kw: dict = {}
    if data.draw(st.booleans()):
        kw["invert"] = True
    if data.draw(st.integers(0, 3)) == 0:
        kw["assume_unique"] = True
        a = np.random.default_rng(a.size).permutation(np.unique(a))
        t = np.unique(t)
    if data.draw(st.integers(0, 3)) == 0:
        kw["kind"] = data.draw(st.sampled_from(["sort", "table"]))
    x = data.draw(placed(a, mesh))
    tests = data.draw(either(t, mesh))
    # (an array test set: sorted by the sample sort, whose splitters and counts are a few per device; a small
    # one is then replicated, one allgather of it)
    run(lambda: np.isin(a, t, **kw), lambda: xp.isin(x, tests, **kw), gather=4 * mesh.size + t.size)


@fuzz(200)
@given(st.data())
def test_fuzz_interp(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64", "int32"), special=data.draw(st.booleans())))
    x = data.draw(placed(a, mesh))
    pts = np.sort(data.draw(host_arrays(("float64", "int64", "float32"), min_dims=1, max_dims=1, min_side=1,
                                        special=False)))
    if data.draw(st.booleans()):
        pts = np.unique(pts)
    fp = data.draw(host_arrays(("float64", "float32", "int64", "complex128"), shape=pts.shape,
                               special=data.draw(st.integers(0, 4)) == 0))
    kw: dict = {}
    if data.draw(st.booleans()):
        kw["left"] = data.draw(st.sampled_from([-7.5, 0.0, np.nan, 2]))
    if data.draw(st.booleans()):
        kw["right"] = data.draw(st.sampled_from([9.25, -1, np.inf]))
    if data.draw(st.integers(0, 3)) == 0:
        kw["period"] = data.draw(st.sampled_from([360, 2 * np.pi, -3.0, 1.5]))
        # (points equal modulo the period: NumPy's unstable argsort picks their order, so no one answer)
        keep = np.unique(np.remainder(pts, abs(kw["period"])), return_index=True)[1]
        pts, fp = pts[np.sort(keep)], fp[np.sort(keep)]
    p_arg = data.draw(either(pts, mesh))
    f_arg = data.draw(either(fp, mesh))
    run(lambda: np.interp(a, pts, fp, **kw), lambda: xp.interp(x, p_arg, f_arg, **kw), approx=True, rtol=1e-9,
        gather=4 * mesh.size + a.size)  # (arrays of points: read where they lie, a block of traffic; the sort)


METHODS = (
    "linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf", "averaged_inverted_cdf",
    "closest_observation", "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased", "normal_unbiased",
)


PICKING = ("lower", "higher", "nearest", "inverted_cdf", "closest_observation")


@st.composite
def axes_of(draw, ndim, allow_none=True, allow_tuple=True):
    opts = ["int"] + (["none"] if allow_none else []) + (["tuple"] if allow_tuple and ndim else [])
    kind = draw(st.sampled_from(opts))
    if kind == "none" or ndim == 0:
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    ks = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(k - ndim if draw(st.booleans()) else k for k in ks)


@pytest.mark.parametrize("nan", [False, True], ids=["percentile", "nanpercentile"])
@fuzz(120)
@given(data=st.data())
def test_fuzz_percentile(nan, data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64", "int32", "bool"), special=data.draw(st.booleans())))
    x = data.draw(placed(a, mesh))
    q = data.draw(st.one_of(st.sampled_from([0, 50, 100, 12.5, 99.9, 33]),
                            st.lists(st.sampled_from([0, 5, 50, 62.5, 100]), min_size=0, max_size=3).map(np.array)))
    axis = data.draw(axes_of(a.ndim))
    kw: dict = {"axis": axis}
    if data.draw(st.booleans()):
        kw["keepdims"] = True
    kw["method"] = data.draw(st.sampled_from(METHODS))
    if kw["method"] not in PICKING and a.dtype.kind == "f" and np.isinf(a).any():
        # (NumPy's lerp gives NaN between two equal infinities or at t = 0 next to one; quantile (another module's)
        # gives the infinity: reported, not fuzzed here)
        a = np.where(np.isinf(a), np.sign(a) * 1e30, a).astype(a.dtype)
        x = data.draw(placed(a, mesh))
    np_kw = dict(kw)
    if kw["method"] == "inverted_cdf" and data.draw(st.booleans()) and a.dtype != bool:
        w = np.abs(data.draw(host_arrays(("float64", "int64"), shape=a.shape, special=False))) + 0.5
        np_kw["weights"] = w
        kw["weights"] = data.draw(either(w, mesh, ("host", "xp")))
    np_f, xp_f = (np.nanpercentile, xp.nanpercentile) if nan else (np.percentile, xp.percentile)
    if "weights" in kw:
        with pytest.raises(sa.ArgumentError):  # (deliberate, documented by quantile: no weights)
            xp_f(x, q, **kw)
        return
    # (lenient: bool data with an interpolating method, which NumPy refuses, gives floats as quantile's do)
    if nan and a.dtype == np.float32 and np.isnan(a).any():
        q = 50  # (NumPy's all-NaN slices keep float32 for an array q, else float64: a quirk of its NaN path)
    rtol = 1e-6 if a.dtype == np.float32 else None  # (NumPy's nanpercentile of float32 rounds through float32)
    run(lambda: np_f(a, q, **np_kw), lambda: xp_f(x, q, **kw), approx=True, rtol=rtol, gather=64,
        lenient=a.dtype == bool)


# =============================================================================================== shapes


def _pieces_compare(a, kth, axis):
    """A valid partition of ``a`` around ``kth`` along ``axis``: each piece between consecutive kths holds the
    sorted array's piece (as a multiset)."""
    ref = np.sort(a, axis=axis)
    n = ref.shape[axis]
    ks = sorted({int(k) % n for k in np.atleast_1d(kth)}) if n else []
    bounds = [0, *[b for k in ks for b in (k, k + 1)], n]

    def compare(got_sorted_values):
        g = np.moveaxis(got_sorted_values, axis, -1)
        r = np.moveaxis(ref, axis, -1)
        for lo, hi in itertools.pairwise(bounds):
            np.testing.assert_array_equal(np.sort(g[..., lo:hi], axis=-1), r[..., lo:hi])

    return compare


@pytest.mark.parametrize("arg", [False, True], ids=["partition", "argpartition"])
@fuzz(120)
@given(data=st.data())
def test_fuzz_partition(arg, data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(REAL + ("complex128",), min_dims=0, max_dims=3))
    x = data.draw(placed(a, mesh))
    axis = data.draw(st.sampled_from([-1, None] + list(range(-a.ndim, a.ndim))))
    n = a.size if axis is None else (a.shape[axis] if a.ndim else 0)
    if n:
        kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
    else:
        kth = data.draw(st.sampled_from([0, []]))

    if arg:

        def compare(got, expected):
            assert type(got) is xp.Array
            g = got.numpy()
            assert g.shape == expected.shape and g.dtype == expected.dtype, (g.shape, g.dtype, expected.dtype)
            src = a.reshape(-1) if axis is None or a.ndim == 0 else a  # (NumPy: a 0-d array as one entry)
            ax = 0 if axis is None or a.ndim == 0 else axis
            np.testing.assert_array_equal(np.sort(g, axis=ax), np.sort(expected, axis=ax))  # (a permutation)
            _pieces_compare(src, kth, ax)(np.take_along_axis(src, g, axis=ax))

        run(lambda: np.argpartition(a, kth, axis=axis), lambda: xp.argpartition(x, kth, axis=axis), compare=compare,
            gather=64)
    else:

        def compare(got, expected):
            assert type(got) is xp.Array
            g = got.numpy()
            assert g.shape == expected.shape and g.dtype == expected.dtype, (g.shape, g.dtype, expected.dtype)
            _pieces_compare(a.reshape(-1) if axis is None else a, kth, 0 if axis is None else axis)(g)

        run(lambda: np.partition(a, kth, axis=axis), lambda: xp.partition(x, kth, axis=axis), compare=compare,
            gather=64)


@st.composite
def positions(draw, n, allow_mask=True):
    kind = draw(st.sampled_from(["int", "slice", "list", "array"] + (["mask"] if allow_mask else [])))
    lim = max(n, 1) + 1
    if kind == "int":
        return draw(st.integers(-lim, lim))
    if kind == "slice":
        opt = st.one_of(st.none(), st.integers(-lim - 1, lim + 1))
        step = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])))
        return slice(draw(opt), draw(opt), step)
    if kind == "mask":
        return np.random.default_rng(draw(st.integers(0, 99))).random(n) < 0.5
    vals = draw(st.lists(st.integers(-lim, lim), max_size=4))
    return vals if kind == "list" else np.array(vals, dtype=np.int64)


@fuzz(200)
@given(st.data())
def test_fuzz_delete(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(ALL))
    x = data.draw(placed(a, mesh))
    axis = data.draw(st.sampled_from([None] + list(range(-a.ndim, a.ndim))))
    n = a.size if axis is None else a.shape[axis]
    obj = data.draw(positions(n))
    flat = axis is None and a.ndim > 1  # (flattening is xp.reshape's, which may allgather blocks)
    run(lambda: np.delete(a, obj, axis=axis), lambda: xp.delete(x, obj, axis=axis), gather=a.size if flat else 8)


@fuzz(250)
@given(st.data())
def test_fuzz_insert(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "int64", "int32", "bool", "complex128", "float32"), max_dims=3))
    x = data.draw(placed(a, mesh))
    axis = data.draw(st.sampled_from([None] + list(range(-a.ndim, a.ndim))))
    n = a.size if axis is None else a.shape[axis]
    obj = data.draw(positions(n, allow_mask=False))
    m = np.size(np.arange(n + 1)[obj]) if isinstance(obj, slice) else np.size(obj)
    rest = a.shape[axis + 1:] if axis is not None and axis >= 0 else (a.shape[axis:][1:] if axis is not None else ())
    vshape = data.draw(st.sampled_from([(), (1,), (m,), (2,), (m, *rest), (1, m), rest, (*rest, m)]))
    v = data.draw(host_arrays(("float64", "int64", "bool", "complex128"), shape=vshape, special=False))
    values = data.draw(either(v, mesh, ("host", "xp", "list"))) if v.ndim else v.item()
    if v.dtype.kind == "c" and a.dtype.kind not in "cb":  # (deliberate: astype refuses to drop imaginary parts)
        with pytest.raises((sa.DTypeError, sa.DimensionError)):
            xp.insert(x, obj, values, axis=axis)
        return
    try:
        run(lambda: np.insert(a, obj, v, axis=axis), lambda: xp.insert(x, obj, values, axis=axis),
            gather=a.size + v.size)  # (concat's aligning of values laid out otherwise may move blocks)
    except sa.DimensionError as e:  # (deliberate, documented: NumPy repeats an axis of length 1 to fill them)
        assert "in one place" in str(e) and n == 1, e


@fuzz(150)
@given(st.data())
def test_fuzz_ediff1d(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64", "int32", "uint8", "complex128", "bool")))
    x = data.draw(placed(a, mesh))
    kw, np_kw = {}, {}
    for name in ("to_begin", "to_end"):
        if data.draw(st.booleans()):
            v = data.draw(host_arrays(("float64", "int64", "int32", "uint8"), max_dims=1, special=False))
            kw[name] = data.draw(either(v, mesh)) if v.ndim else (v.item() if data.draw(st.booleans()) else v)
            np_kw[name] = v
    # (flattening several dims is xp.reshape's, which may allgather blocks: documented)
    run(lambda: np.ediff1d(a, **np_kw), lambda: xp.ediff1d(x, **kw), gather=8 if a.ndim <= 1 else a.size)


@fuzz(150)
@given(st.data())
def test_fuzz_lexsort(data):
    mesh = data.draw(meshes())
    shape = data.draw(shapes(1, 2))
    nk = data.draw(st.integers(1, 3))
    keys = [data.draw(host_arrays(("float64", "int64", "int32", "bool", "uint8"), shape=shape, spread=2))
            for _ in range(nk)]
    axis = data.draw(st.sampled_from(list(range(-len(shape), len(shape)))))
    if data.draw(st.booleans()) and len({k.dtype for k in keys}) == 1:
        stacked = np.stack(keys)
        xk = data.draw(placed(stacked, mesh))
        run(lambda: np.lexsort(stacked, axis=axis), lambda: xp.lexsort(xk, axis=axis), gather=64)
    else:
        xks = tuple(data.draw(placed(k, mesh)) for k in keys)
        run(lambda: np.lexsort(tuple(keys), axis=axis), lambda: xp.lexsort(xks, axis=axis), gather=64)


@fuzz(150)
@given(st.data())
def test_fuzz_resize(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(ALL))
    x = data.draw(placed(a, mesh))
    new = data.draw(st.one_of(st.integers(0, 20), st.lists(st.integers(0, 6), max_size=3).map(tuple)))
    run(lambda: np.resize(a, new), lambda: xp.resize(x, new), gather=8 if a.ndim <= 1 else a.size)  # (reshape's)


@fuzz(150)
@given(st.data())
def test_fuzz_rot90(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(ALL, min_dims=2, max_dims=3))
    x = data.draw(placed(a, mesh))
    k = data.draw(st.integers(-6, 6))
    axes = tuple(data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=2, max_size=2)))
    run(lambda: np.rot90(a, k, axes), lambda: xp.rot90(x, k, axes))


@fuzz(150)
@given(st.data())
def test_fuzz_select(data):
    mesh = data.draw(meshes())
    shape = data.draw(shapes(0, 2))
    nc = data.draw(st.integers(1, 3))
    conds, xconds = [], []
    for _ in range(nc):
        cs = shape if data.draw(st.integers(0, 3)) else shape[1:]
        c = data.draw(host_arrays(("bool",), shape=cs))
        conds.append(c)
        xconds.append(data.draw(placed(c, mesh)))
    choices, xchoices = [], []
    for _ in range(nc):
        if data.draw(st.integers(0, 3)) == 0:
            v = data.draw(st.sampled_from([3, 2.5, -1, 1j, True]))
            choices.append(v)
            xchoices.append(v)
        else:
            cs = shape if data.draw(st.integers(0, 3)) else shape[1:]
            c = data.draw(host_arrays(("float64", "float32", "int64", "int32", "int8", "bool", "complex128"), shape=cs))
            choices.append(c)
            xchoices.append(data.draw(placed(c, mesh)))
    default = data.draw(st.sampled_from([0, 7, -2.5, np.nan]))
    # (aligning layouts, documented, may move blocks of the operands)
    run(lambda: np.select(conds, choices, default), lambda: xp.select(xconds, xchoices, default),
        gather=max(8, math.prod(shape)))


@fuzz(150)
@given(st.data())
def test_fuzz_trapezoid(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64", "int32", "complex128", "bool"), min_dims=1))
    y = data.draw(placed(a, mesh))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    kw, np_kw = {}, {}
    form = data.draw(st.sampled_from(["none", "dx", "x1", "xfull"]))
    if form == "dx":
        kw["dx"] = np_kw["dx"] = data.draw(st.sampled_from([0.5, 2, -1.0, 3]))
    elif form == "x1":
        s = np.sort(data.draw(host_arrays(("float64", "int64", "float32"), shape=(a.shape[axis],), special=False)))
        np_kw["x"] = s
        kw["x"] = data.draw(either(s, mesh))
    elif form == "xfull":
        s = data.draw(host_arrays(("float64", "int64"), shape=a.shape, special=False))
        np_kw["x"] = s
        kw["x"] = data.draw(either(s, mesh, ("host", "xp")))
    run(lambda: np.trapezoid(a, axis=axis, **np_kw), lambda: xp.trapezoid(y, axis=axis, **kw), approx=True)


@fuzz(150)
@given(st.data())
def test_fuzz_trim_zeros(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "int64", "bool", "complex128", "float32"), min_dims=1, max_dims=3))
    rng = np.random.default_rng(a.size)
    a = np.where(rng.random(a.shape) < 0.6, np.zeros((), a.dtype), a)
    x = data.draw(placed(a, mesh))
    trim = data.draw(st.sampled_from(["fb", "f", "b", "bf", "FB", "", "F"]))
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1),
                               st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=1, max_size=2, unique=True)))
    if axis is None and a.ndim > 1 and data.draw(st.booleans()):
        run(lambda: np.trim_zeros(a, trim), lambda: xp.trim_zeros(x, trim))
    else:
        run(lambda: np.trim_zeros(a, trim, axis=axis), lambda: xp.trim_zeros(x, trim, axis=axis))


@fuzz(150)
@given(st.data())
def test_fuzz_unwrap(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64", "int32"), min_dims=1, spread=12))
    x = data.draw(placed(a, mesh))
    kw = {"axis": data.draw(st.integers(-a.ndim, a.ndim - 1))}
    if data.draw(st.booleans()):
        kw["discont"] = data.draw(st.sampled_from([0.5, 1, 4.0, 10]))
    if data.draw(st.booleans()):
        kw["period"] = data.draw(st.sampled_from([4, 5, 2.5, 360, 6.0]))
    row = a.size // max(1, a.shape[kw["axis"]])  # (the scan along a split axis exchanges a row per device)
    run(lambda: np.unwrap(a, **kw), lambda: xp.unwrap(x, **kw), approx=True, rtol=1e-6, gather=max(8, row))


@fuzz(120)
@given(st.data())
def test_fuzz_vander(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(("float64", "float32", "int64", "int32", "int8", "uint8", "bool", "complex128"),
                              min_dims=1, max_dims=1))
    x = data.draw(placed(a, mesh))
    kw = {}
    if data.draw(st.booleans()):
        kw["N"] = data.draw(st.integers(0, 6))
    if data.draw(st.booleans()):
        kw["increasing"] = True
    if on_real_cupy() and a.dtype.kind == "c" and not np.isfinite(a).all():
        return  # (complex products with infinite parts: CuPy's complex multiply treats them otherwise than NumPy's)
    run(lambda: np.vander(a, **kw), lambda: xp.vander(x, **kw), approx=True)


# =============================================================================================== math


@fuzz(150)
@given(st.data())
def test_fuzz_convolve(data):
    mesh = data.draw(meshes())
    dt = ("float64", "float32", "int64", "int32", "int8", "bool", "complex128")
    a = data.draw(host_arrays(dt, max_dims=1, special=data.draw(st.integers(0, 4)) == 0))
    v = data.draw(host_arrays(dt, max_dims=1, special=False))
    mode = data.draw(st.sampled_from(["full", "same", "valid"]))
    if "c" in (a.dtype.kind, v.dtype.kind) and a.dtype.kind in "fc":
        # (complex products with infinities: NaN or not by the order NumPy's inner loop takes, so not compared)
        a = np.where(np.isfinite(a), a, np.zeros((), a.dtype)).astype(a.dtype)
    forms = data.draw(st.sampled_from(["xx", "xh", "hx"]))
    xa = data.draw(placed(a, mesh)) if forms[0] == "x" else a
    xv = data.draw(placed(v, mesh)) if forms[1] == "x" else v
    run(lambda: np.convolve(a, v, mode), lambda: xp.convolve(xa, xv, mode), approx=True)


@fuzz(150)
@given(st.data())
def test_fuzz_diag(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(ALL, min_dims=1, max_dims=2))
    x = data.draw(placed(a, mesh))
    k = data.draw(st.integers(-8, 8))
    run(lambda: np.diag(a, k), lambda: xp.diag(x, k))


@fuzz(150)
@given(st.data())
def test_fuzz_exp2_sinc(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(ALL))
    x = data.draw(placed(a, mesh))
    # (the tolerance of the result's dtype: an integer input's float32 result is a float32 libm value, and CUDA's
    # libm differs from NumPy's by an ulp or two)
    run(lambda: np.exp2(a), lambda: xp.exp2(x), approx=True)
    run(lambda: np.sinc(a), lambda: xp.sinc(x), approx=True)


@fuzz(150)
@given(st.data())
def test_fuzz_heaviside(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(REAL))
    x = data.draw(placed(a, mesh))
    if data.draw(st.booleans()):
        h2 = data.draw(st.sampled_from([0.5, 0, 1, np.nan, True, -2.0]))
        x2 = h2
    else:
        h2 = data.draw(host_arrays(REAL, shape=a.shape[data.draw(st.integers(0, a.ndim)):]))
        x2 = data.draw(placed(h2, mesh))
    # (an array x2 laid out otherwise: where's aligning, documented, may move blocks of the operands)
    run(lambda: np.heaviside(a, h2), lambda: xp.heaviside(x, x2), gather=max(8, a.size))


@fuzz(150)
@given(st.data())
def test_fuzz_kron(data):
    mesh = data.draw(meshes())
    dt = ("float64", "float32", "int64", "int32", "int8", "bool", "complex128")
    a = data.draw(host_arrays(dt, max_dims=3, special=False))
    b = data.draw(host_arrays(dt, max_dims=3, special=False))
    forms = data.draw(st.sampled_from(["xx", "xh", "hx"]))
    xa = data.draw(placed(a, mesh)) if forms[0] == "x" else a
    xb = data.draw(placed(b, mesh)) if forms[1] == "x" else b
    # (host operands are placed as xp.asarray places them; their reshape may gather them, host data anyway)
    # (merging a split axis, xp.reshape may allgather an operand's blocks along a mesh axis, as documented)
    run(lambda: np.kron(a, b), lambda: xp.kron(xa, xb), approx=True, gather=max(8, a.size, b.size))


@fuzz(150)
@given(st.data())
def test_fuzz_nan_to_num(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(ALL, special=True))
    kw = {}
    for name in ("nan", "posinf", "neginf"):
        if data.draw(st.booleans()):
            kw[name] = data.draw(st.sampled_from([0.0, -1.5, 7, 1e300, np.inf, np.nan]))
    copy = data.draw(st.booleans())
    x = data.draw(placed(a, mesh))
    h = a.copy()

    def ours():
        out = xp.nan_to_num(x, copy=copy, **kw)
        if not copy:
            assert out is x
        return out

    run(lambda: np.nan_to_num(h, copy=copy, **kw), ours)


@fuzz(150)
@given(st.data())
def test_fuzz_polyval(data):
    mesh = data.draw(meshes())
    dt = ("float64", "float32", "int64", "int32", "int8", "bool", "complex128")
    p = data.draw(host_arrays(dt, min_dims=1, max_dims=1, special=False))
    a = data.draw(host_arrays(dt))
    form = data.draw(st.sampled_from(["host p", "list p", "xp p", "xp p, scalar x"]))
    if form == "xp p, scalar x":
        xv = data.draw(st.sampled_from([2, 0.5, -1.5, 1j]))
        run(lambda: np.polyval(p, xv), lambda: xp.polyval(data.draw(placed(p, mesh)), xv), approx=True)
        return
    x = data.draw(placed(a, mesh))
    pa = data.draw(placed(p, mesh)) if form == "xp p" else (p.tolist() if form == "list p" else p)
    np_p = pa if isinstance(pa, list) else p
    run(lambda: np.polyval(np_p, a), lambda: xp.polyval(pa, x), approx=True)


# =============================================================================================== regressions


MESH_2x2 = {"row": 2, "col": 2}


def _on(a, shape=MESH_2x2):
    return xp.asarray(np.asarray(a), device=_mesh(shape))


@pytest.mark.parametrize(
    ("values", "obj", "inserted"),
    [
        ([1.0], [0, -2], 5.0),  # (-2 + 1 = -1: counted again from the result's end, as NumPy's fancy index)
        ([1.0, 2.0, 3.0], [0, -5], [5.0, 6.0]),
        ([1.0, 2.0, 3.0], [-1, -4], [7.0, 8.0]),
        ([1.0, 2.0, 3.0], [1], [7.0, 8.0]),  # (one position as a list: every value goes there)
        ([1.0, 2.0, 3.0], slice(1, 2), [7.0, 8.0]),
        ([1.0, 2.0, 3.0, 4.0, 5.0], [3, 1, 1], [7.0, 8.0, 9.0]),
    ],
)
def test_insert_places_values_as_numpy(values, obj, inserted):
    """``insert`` refused a negative position below ``-n`` among several (NumPy counts it again from the result's
    end), and a one-position list or slice took one value where NumPy inserts all the values given."""
    a = np.array(values)
    got = xp.insert(_on(a), obj, inserted)
    same(got, np.insert(a, obj, inserted))


def test_insert_refuses_positions_numpy_refuses():
    """Positions that put two values in one place (NumPy: a ValueError) are a DimensionError."""
    a = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        np.insert(a, [-7, 0], [7.0, 8.0])
    with pytest.raises(sa.DimensionError):
        xp.insert(_on(a), [-7, 0], [7.0, 8.0])


@pytest.mark.parametrize("n", [0, 1])
def test_trapezoid_of_fewer_than_two_points_has_numpys_dtype(n):
    """Fewer than two points cast integer or bool ``y`` to float64 before the (empty) sum, so float32 ``x`` gave
    float64; NumPy's formula gives the terms' dtype (float32)."""
    y = np.ones(n, dtype=bool)
    x = np.arange(n, dtype=np.float32)
    same(xp.trapezoid(_on(y), x), np.trapezoid(y, x))
    same(xp.trapezoid(_on(y.astype(np.int32)), _on(x)), np.trapezoid(y.astype(np.int32), x))


def test_trim_zeros_refuses_what_numpy_refuses():
    """``trim=""`` (or ``"ff"``) and a repeated axis were accepted; NumPy raises ValueError for both."""
    x = _on(np.array([0.0, 1.0, 0.0]))
    for trim in ("", "ff", "fbf"):
        with pytest.raises(ValueError):
            np.trim_zeros(np.zeros(3), trim)
        with pytest.raises(sa.ArgumentError):
            xp.trim_zeros(x, trim)
    with pytest.raises(sa.DimensionError):
        xp.trim_zeros(x, axis=[0, -1])
    same(xp.trim_zeros(x, "FB"), np.trim_zeros(np.array([0.0, 1.0, 0.0]), "FB"))


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_exp2_of_complex_infinities_is_cexp(dtype):
    """``exp2`` of a complex with an infinite real part and a nonzero imaginary one gave ``inf+nanj`` (complex pow);
    NumPy's is C99 cexp of ``(re ln 2, im ln 2)``: ``2**re (cos t + i sin t)``, e.g. ``-inf+infj`` for
    ``inf+3.1j``."""
    inf, nan = np.inf, np.nan
    a = np.array([complex(r, i) for r in (inf, -inf, nan, 1.5) for i in (inf, nan, 0.0, 3.1, -2.0)], dtype=dtype)
    g, e = xp.exp2(_on(a)).numpy(), np.exp2(a)
    assert g.dtype == e.dtype
    np.testing.assert_allclose(g.real, e.real, rtol=1e-5)
    np.testing.assert_allclose(g.imag, e.imag, rtol=1e-5)


def test_histogram_of_a_0d_array_with_weights_and_of_no_edges():
    """A 0-d ``a`` with 0-d ``weights`` raised DimensionError (``a`` was made 1-D, the weights not); edges ``[]``
    raised reading the first edge, where NumPy gives empty counts."""
    a, w = np.array(2.5), np.array(3.0)
    run(lambda: np.histogram(a, bins=3, weights=w), lambda: xp.histogram(_on(a), bins=3, weights=_on(w)))
    run(lambda: np.histogram(a, bins=3, weights=w), lambda: xp.histogram(_on(a), bins=3, weights=w))
    a = np.array([1.0, np.nan])
    run(lambda: np.histogram(a, bins=np.array([])), lambda: xp.histogram(_on(a), bins=np.array([])))
    run(lambda: np.histogram(a, bins=[], density=True), lambda: xp.histogram(_on(a), bins=[], density=True))


def test_isin_table_refuses_floats_as_numpy():
    """``kind="table"`` with floats gave a result; NumPy's table is for integers and bools only (ValueError)."""
    x = _on(np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        np.isin(np.array([1.0, 2.0]), [1.0], kind="table")
    with pytest.raises(sa.ArgumentError):
        xp.isin(x, [1.0], kind="table")
    same(xp.isin(_on(np.array([1, 2])), [2, 5], kind="table"), np.array([False, True]))


@pytest.mark.parametrize("fn", ["percentile", "nanpercentile"])
def test_percentile_of_no_percentiles(fn):
    """An empty ``q`` raised (``stack`` of no results); NumPy gives an empty leading axis."""
    a = np.arange(12.0).reshape(3, 4)
    x = _on(a)
    for kw in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"method": "lower"}):
        run(lambda: getattr(np, fn)(a, np.array([]), **kw), lambda: getattr(xp, fn)(x, np.array([]), **kw), gather=64)
    e = np.zeros(0)
    run(lambda: getattr(np, fn)(e, []), lambda: getattr(xp, fn)(_on(e), []))


def test_nanpercentile_of_no_data_is_numpys_nanmean():
    """``nanpercentile`` of an empty array raised DimensionError; NumPy gives ``nanmean(a, axis)``: NaN, float64
    for integers, whatever ``q``."""
    for shape, kw in [((0,), {}), ((0, 3), {"axis": 0}), ((0, 3), {"axis": 1}), ((2, 0), {"axis": None})]:
        for dtype in ("float32", "int64"):
            a = np.zeros(shape, dtype=dtype)
            for q in (50, [10, 90]):
                run(lambda: np.nanpercentile(a, q, **kw), lambda: xp.nanpercentile(_on(a), q, **kw))


def test_partition_of_an_empty_axis_and_argpartition_of_0d():
    """``kth`` was checked against an empty axis (NumPy checks none), and ``argpartition`` refused a 0-d array
    (NumPy: ``[0]``)."""
    a = np.zeros((0, 3))
    for f in ("partition", "argpartition"):
        run(lambda: getattr(np, f)(a, 0, axis=0), lambda: getattr(xp, f)(_on(a), 0, axis=0))
        run(lambda: getattr(np, f)(a, [1, 5], axis=0), lambda: getattr(xp, f)(_on(a), [1, 5], axis=0))
    run(lambda: np.argpartition(np.array(2.5), 0), lambda: xp.argpartition(_on(2.5), 0))


def test_nan_to_num_replaces_by_the_input_masks():
    """``nan=inf`` made NaN an infinity that the next step replaced by the largest float; NumPy finds NaN and the
    infinities in the input, so a NaN becomes ``nan`` as given."""
    a = np.array([np.nan, np.inf, -np.inf, 1.0])
    for kw in ({"nan": np.inf}, {"nan": -np.inf, "posinf": np.nan}, {"nan": np.inf, "neginf": np.inf}):
        run(lambda: np.nan_to_num(a, **kw), lambda: xp.nan_to_num(_on(a), **kw))
        c = a + 1j * a[::-1]
        run(lambda: np.nan_to_num(c, **kw), lambda: xp.nan_to_num(_on(c), **kw))
