"""A differential fuzz, against NumPy, of sorting, searching, sets and manipulation on split arrays: the positional
namespace (``xp.sort``/``argsort`` stable and descending, ``searchsorted`` with sides and ``sorter``, the four
``unique_*``, ``argmax``/``argmin`` with ``keepdims``, ``nonzero``, ``where(cond)``, ``count_nonzero``, ``isin``,
``reshape`` with ``-1`` and ``copy=``, ``concat``/``stack`` of differently laid-out operands, ``roll``, ``flip``,
``moveaxis``, ``permute_dims``, ``squeeze``, ``expand_dims``, ``tile``, ``repeat`` with array repeats,
``broadcast_to``/``broadcast_arrays``, ``unstack``) and NumPy's dispatch of the same (``np.sort``/``np.argsort``
kinds, ``np.unique`` with ``return_*`` and ``axis``, ``np.pad`` modes, ``np.split``/``np.array_split``), on random
meshes (1, 2x2, 4, 2x2x2, 3x2) and layouts, uneven and empty blocks, NaN/inf/-0.0, bool/int8/uint8/int64/float16/
float32/float64/complex64/bfloat16 data. Each case checks values bit-exactly where NumPy's order is defined (a
stable sort keeps -0.0 and 0.0 in input order), dtype and shape; that NumPy's errors are typed ``sa`` errors here;
and that nothing larger than a few elements is gathered. Regressions of the bugs it found close the file.

``FUZZ8_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
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
from helpers import backend_name, holds_subnormal32, layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

# ruff: noqa: B023 (the lambdas given run() are called at once, inside the loop that binds their variables)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# --------------------------------------------------------------------------------------------- data

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = ("float64", "float32", "float16", BF16)
INTS = ("int64", "int8", "uint8")
REAL = (*FLOATS, *INTS, "bool")
ALL = (*REAL, "complex64")
SIDES = (0, 1, 2, 3, 4, 5, 7)
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])


def _values(rng: np.random.Generator, shape: tuple, dtype, special: bool, spread: int = 4) -> np.ndarray:
    n = math.prod(shape)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -spread
        v = rng.integers(lo, spread + 1, n).astype(dt)
        if special and n:  # (the extremes: sort keys of every bit pattern)
            hit = rng.random(n) < 0.2
            info = np.iinfo(dt)
            v[hit] = rng.choice(np.array([info.min, info.max, info.min + 1, info.max - 1], dtype=dt), int(hit.sum()))
        return v.reshape(shape)
    if dt.kind == "c":
        re, im = _values(rng, shape, "float32", special, spread), _values(rng, shape, "float32", special, spread)
        out = np.empty(shape, dt)
        out.real, out.imag = re, im
        return out
    v = rng.integers(-spread, spread + 1, n) / rng.choice([1, 2, 4], n)
    noisy = rng.random(n) < 0.3
    v[noisy] = rng.normal(size=int(noisy.sum())) * spread
    if special and n:
        hit = rng.random(n) < 0.25
        v[hit] = rng.choice(SPECIAL, int(hit.sum()))
        info = ml_dtypes.finfo(dt) if dt == BF16 else np.finfo(dt)
        far = np.array([float(info.max), -float(info.max), float(info.smallest_subnormal), -float(info.tiny)])
        hit = rng.random(n) < 0.1
        v[hit] = rng.choice(far, int(hit.sum()))
    return v.astype(dt).reshape(shape)


@st.composite
def shapes(draw, min_dims=0, max_dims=3, min_side=0):
    nd = draw(st.integers(min_dims, max_dims))
    if nd == 1:
        return (draw(st.sampled_from([s for s in (*SIDES, 13, 40, 97) if s >= min_side])),)
    return tuple(draw(st.sampled_from([s for s in SIDES if s >= min_side])) for _ in range(nd))


@st.composite
def host_arrays(draw, dtypes=ALL, shape=None, min_dims=0, max_dims=3, special=None, min_side=0, spread=4):
    """A NumPy array: a shape, a dtype of ``dtypes``, small integers, halves, normals, sometimes NaN/inf/-0.0."""
    if shape is None:
        shape = draw(shapes(min_dims, max_dims, min_side))
    dtype = draw(st.sampled_from(dtypes))
    sp = draw(st.booleans()) if special is None else special
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = _values(rng, tuple(shape), dtype, sp, spread)
    if backend_name() == "cupy" and holds_subnormal32(a):  # (CuPy's -ftz=true reads them as 0: documented)
        tiny = float(np.finfo(np.float32).tiny)
        parts = (a.real, a.imag) if a.dtype.kind == "c" else (a,)
        for p in parts:
            p[np.abs(p.astype(np.float64)) < tiny] = 0
    return a


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh``: axis k over mesh axis k (``xp.asarray``), a random layout, or a
    transposed array's (dims named out of order)."""
    a = np.asarray(a)
    if a.ndim >= 2 and draw(st.integers(0, 3)) == 0:  # (dims named out of order: the result of a transpose)
        perm = tuple(draw(st.permutations(range(a.ndim))))
        x = xp.permute_dims(draw(placed(np.transpose(a, perm), mesh)), tuple(np.argsort(perm)))
        assert x.dtype == a.dtype and x.shape == a.shape
        return x
    if a.ndim == 0 or (draw(st.booleans()) and 1 not in a.shape[: len(mesh.axis_names)]):
        x = xp.asarray(a, device=mesh)
    else:
        dims = tuple(f"dim{k}" for k in range(a.ndim))
        lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
        x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)
    assert x.dtype == a.dtype and x.shape == a.shape
    return x


def axis_of(draw, ndim: int, none: bool = False, bad: bool = True):
    """An axis of an ``ndim``-d array (negative at times, out of range rarely, None where ``none``)."""
    choices = list(range(-ndim, ndim)) if ndim else []
    if none:
        choices.append(None)
    if bad and draw(st.integers(0, 15)) == 0:
        choices = [ndim, -ndim - 1]
    return draw(st.sampled_from(choices)) if choices else None


# --------------------------------------------------------------------------------------------- checks


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "fcV" and a.dtype.itemsize in (2, 4, 8, 16):
        return a.view(np.uint8).reshape(*a.shape, a.dtype.itemsize) if a.ndim else a.view(np.uint8)
    return a


def same(got, expected, exact: bool = True):
    """``got`` (an Array) is NumPy's ``expected``: shape, dtype, values (bit for bit where ``exact``, else equal with
    NaNs equal and -0.0 == 0.0)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), (type(got), got)
        for g, e in zip(got, expected):
            same(g, e, exact)
        return
    assert isinstance(got, xp.Array), type(got)
    g = got.numpy()
    e = np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    if exact and e.dtype.kind in "fcV" and e.dtype.itemsize in (2, 4, 8):
        assert np.array_equal(_bits(g), _bits(e)), (g, e)
    elif e.dtype.kind in "fcV":
        f = np.complex128 if e.dtype.kind == "c" else np.float64
        np.testing.assert_array_equal(g.astype(f), e.astype(f))
    else:
        np.testing.assert_array_equal(g, e)


def _quiet_numpy(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def run(
    np_call, xp_call, exact: bool = True, gather: int = 32, compare=None, lenient: bool = False, refusal: bool = False
):
    """NumPy's ``np_call()`` against ``xp_call()``: a typed ``sa`` error where NumPy raises one (``lenient``: any
    result, an extension), else ``same`` (or ``compare(got, expected)``), and no allgather of more than ``gather``
    elements (sample sort's splitter samples: 3 (p - 1) a device). ``refusal``: a documented limitation (complex
    order, ``np.unique(axis=)``, NumPy's statistic pad modes) may be refused with a typed ``sa`` error."""
    try:
        expected = _quiet_numpy(np_call)
    except Exception as e:
        if lenient:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = xp_call()
        except sa.ShardArrayError:
            return None
        raise AssertionError(f"NumPy raised {type(e).__name__}: {e}; the namespace gave {got!r:.300}") from None
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", sa.GatherWarning)
        try:
            got = xp_call()
        except sa.ShardArrayError:
            if refusal:
                return None
            raise
    big = [r for r in log.records if r.op == "allgather" and r.elements > gather]
    assert not big, big
    if compare is not None:
        compare(got, expected)
    else:
        same(got, expected, exact)
    return got


def raises_typed(xp_call):
    """``xp_call()`` raises a typed ``sa`` error."""
    with pytest.raises(sa.ShardArrayError):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            xp_call()


def independent(got, x, a: np.ndarray) -> None:
    """Writing into ``got`` (the result of a NumPy function that copies) leaves ``x`` (holding ``a``) as it was."""
    if isinstance(got, xp.Array) and got.size:
        got[(0,) * got.ndim] = True if got.dtype == bool else 1
        assert np.array_equal(_bits(x.numpy()), _bits(a)), "a write into the result changed the input"


def _ref(a: np.ndarray) -> np.ndarray:
    """NumPy's reference input: bfloat16 as float32 (ml_dtypes' bfloat16 leaves NumPy's sorts no order for NaN; the
    library orders it as NumPy orders float NaN, last), other dtypes as they are."""
    return a.astype(np.float32) if a.dtype == BF16 else a


def _back(r, dtype):
    """A reference result of ``_ref`` data in ``dtype`` again (bfloat16 values cast back, indices as they are)."""
    if isinstance(r, (tuple, list)):
        return type(r)(_back(v, dtype) for v in r)
    if dtype == BF16 and np.asarray(r).dtype == np.float32:
        return np.asarray(r).astype(BF16)
    return r


# ============================================================================================= sorting


@fuzz(150)
@given(st.data())
def test_fuzz_sort_argsort(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(min_dims=1))
    x = data.draw(placed(a, mesh))
    axis = axis_of(data.draw, a.ndim)
    descending = data.draw(st.booleans())
    stable = data.draw(st.booleans())
    dt, a = a.dtype, _ref(a)  # (complex: NumPy's lexicographic order, NaN parts last)

    def np_sort():
        if descending:
            return _back(np.flip(np.sort(np.flip(a, axis), axis=axis, kind="stable"), axis), dt)
        return _back(np.sort(a, axis=axis, kind="stable"), dt)

    def np_argsort():
        if not descending:
            return np.argsort(a, axis=axis, kind="stable")
        n = a.shape[axis]
        return n - 1 - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)

    run(np_sort, lambda: xp.sort(x, axis=axis, descending=descending, stable=stable), exact=stable)
    if stable:
        run(np_argsort, lambda: xp.argsort(x, axis=axis, descending=descending, stable=True))
    else:

        def cmp(got, expected):
            g = got.numpy()
            assert g.dtype == expected.dtype and g.shape == expected.shape
            same(xp.asarray(np.take_along_axis(a, g, axis)), np.take_along_axis(a, expected, axis), exact=False)

        run(np_argsort, lambda: xp.argsort(x, axis=axis, descending=descending, stable=False), compare=cmp)


@fuzz(120)
@given(st.data())
def test_fuzz_np_sort_kinds(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(dtypes=(*REAL, "complex64")))
    x = data.draw(placed(a, mesh))
    axis = axis_of(data.draw, a.ndim, none=True)
    kind = data.draw(st.sampled_from([None, "stable", "mergesort", "quicksort", "heapsort"]))
    exact = kind in ("stable", "mergesort")
    dt, a = a.dtype, _ref(a)
    run(lambda: _back(np.sort(a, axis=axis, kind=kind), dt), lambda: np.sort(x, axis=axis, kind=kind), exact=exact)
    if exact or a.ndim == 0:  # (NumPy's argsort of a 0-d array, any axis, is [0]: so is the library's)
        run(lambda: np.argsort(a, axis=axis, kind=kind), lambda: np.argsort(x, axis=axis, kind=kind))
    else:
        got = run(
            lambda: np.argsort(a, axis=axis, kind="stable"),
            lambda: np.argsort(x, axis=axis, kind=kind),
            compare=lambda g, e: None,
        )
        if got is not None:
            g = got.numpy()
            flat = a.reshape(-1) if axis is None else a
            same(
                xp.asarray(np.take_along_axis(flat, g, -1 if axis is None else axis)),
                np.sort(a, axis=axis, kind="stable"),
                exact=False,
            )  # (bfloat16: compared in float32)


@fuzz(150)
@given(st.data())
def test_fuzz_searchsorted(data):
    mesh = data.draw(meshes())
    dtypes = ("float64", "float32", "float16", "int64", "int8", "uint8", BF16)
    a = data.draw(host_arrays(dtypes, min_dims=1, max_dims=1))
    dt = a.dtype
    use_sorter = data.draw(st.booleans())
    if use_sorter:
        sorter = np.argsort(_ref(a), kind="stable")
    else:
        a = _back(np.sort(_ref(a), kind="stable"), dt)
    v = data.draw(host_arrays((dt,) if data.draw(st.integers(0, 3)) else dtypes, max_dims=2))
    x = data.draw(placed(a, mesh))
    form = data.draw(st.sampled_from(["xp", "scalar"])) if v.ndim == 0 else "xp"
    vv = data.draw(placed(v, mesh)) if form == "xp" else v.item()
    side = data.draw(st.sampled_from(["left", "right"]))
    kw: dict = {"side": side}
    np_kw: dict = {"side": side}
    if use_sorter:
        kw["sorter"] = data.draw(placed(sorter, mesh))
        np_kw["sorter"] = sorter
    a, v = _ref(a), _ref(v)
    v_np = v if form == "xp" else v.item()
    g = 32 + a.size  # (values split over the sorted array's axes: a small sorted array is allgathered, by design)
    run(lambda: np.searchsorted(a, v_np, **np_kw), lambda: xp.searchsorted(x, vv, **kw), gather=g)
    run(lambda: np.searchsorted(a, v_np, **np_kw), lambda: np.searchsorted(x, vv, **kw), gather=g)


def test_searchsorted_refuses_bad_sides():
    x = xp.asarray(np.arange(5.0), device=_mesh({"all": 4}))
    raises_typed(lambda: xp.searchsorted(x, x, side="middle"))
    raises_typed(lambda: xp.searchsorted(xp.reshape(x[:4], (2, 2)), x))


# ============================================================================================= sets


@fuzz(150)
@given(st.data())
def test_fuzz_unique_api(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(dtypes=ALL))
    x = data.draw(placed(a, mesh))
    fn = data.draw(st.sampled_from(["unique_values", "unique_counts", "unique_inverse", "unique_all"]))

    def np_call():  # (NumPy 2.3+'s unique_* may leave the values unsorted: the library's are sorted, as np.unique)
        v, i, inv, c = np.unique(
            _ref(a).reshape(-1), return_index=True, return_inverse=True, return_counts=True, equal_nan=False
        )
        inv, v = inv.reshape(a.shape), _back(v, a.dtype)
        return {"unique_values": v, "unique_counts": (v, c), "unique_inverse": (v, inv), "unique_all": (v, i, inv, c)}[
            fn
        ]

    def xp_call():
        r = getattr(xp, fn)(x)
        return tuple(r) if isinstance(r, tuple) else r

    def cmp(got, expected):
        if not isinstance(expected, tuple):
            same(got, expected, exact=False)
            return
        assert len(got) == len(expected)
        same(got[0], expected[0], exact=False)
        for g, e in zip(got[1:], expected[1:]):
            same(g, e)

    run(np_call, xp_call, compare=cmp)


@fuzz(150)
@given(st.data())
def test_fuzz_np_unique(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(dtypes=ALL, max_dims=3))
    x = data.draw(placed(a, mesh))
    kw = {k: data.draw(st.booleans()) for k in ("return_index", "return_inverse", "return_counts")}
    if data.draw(st.integers(0, 2)) == 0:
        kw["axis"] = axis_of(data.draw, a.ndim, none=True)
    if data.draw(st.integers(0, 3)) == 0:
        kw["equal_nan"] = data.draw(st.booleans())

    names = [k for k in ("return_index", "return_inverse", "return_counts") if kw[k]]

    def cmp(got, expected):
        if not isinstance(expected, tuple):
            same(got, expected, exact=False)
            return
        assert isinstance(got, tuple) and len(got) == len(expected)
        same(got[0], expected[0], exact=False)
        for name, g, e in zip(names, got[1:], expected[1:]):
            if name != "return_inverse" or kw.get("axis") is not None:
                same(g, e)
                continue
            # (NaNs not equal: which of the equal NaN entries each NaN maps to is NumPy's sort's accident)
            assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
            vals = got[0].numpy()
            same(xp.asarray(vals[g.numpy()]), _back(_ref(expected[0])[e], a.dtype), exact=False)

    gather = 32
    if kw.get("axis") is not None and a.ndim > 1:  # (slices sorted as rows: p - 1 sample rows a device, 2 words more)
        row = math.prod(n for i, n in enumerate(a.shape) if i != kw["axis"] % a.ndim) * (1 + (a.dtype.kind == "c"))
        gather += 3 * (mesh.size - 1) * (row + 2)
    run(lambda: _back(np.unique(_ref(a), **kw), a.dtype), lambda: np.unique(x, **kw), compare=cmp, gather=gather)


@fuzz(150)
@given(st.data())
def test_fuzz_isin(data):
    mesh = data.draw(meshes())
    dtypes = ("float64", "float32", "int64", "int8", "uint8", "bool")
    a = data.draw(host_arrays(dtypes))
    t = data.draw(host_arrays(dtypes, max_dims=2))
    x = data.draw(placed(a, mesh))
    tt = data.draw(st.sampled_from(["xp", "host"]))
    tv = data.draw(placed(t, mesh)) if tt == "xp" else t
    kw = {"invert": data.draw(st.booleans())}
    if data.draw(st.booleans()):
        kw["kind"] = data.draw(st.sampled_from([None, "sort", "table"]))
    if data.draw(st.integers(0, 3)) == 0 and a.dtype == t.dtype:  # (mixed: NumPy's float64 cast may merge ints)
        kw["assume_unique"] = True
        a, t = np.unique(a), np.unique(t)
        x, tv = data.draw(placed(a, mesh)), (data.draw(placed(t, mesh)) if tt == "xp" else t)
    g = 32 + t.size  # (the test elements, small by nature, may be gathered)
    tab = kw.get("kind") == "table"  # (NumPy's table of a wide range of values: out of memory there, fine here)
    run(lambda: np.isin(a, t, **kw), lambda: xp.isin(x, tv, **kw), gather=g, refusal=tab, lenient=tab)
    if tt == "xp":
        run(lambda: np.isin(a, t, **kw), lambda: np.isin(x, tv, **kw), gather=g, refusal=tab, lenient=tab)


# ============================================================================================= searching


@fuzz(150)
@given(st.data())
def test_fuzz_argmax_argmin(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(dtypes=ALL))
    x = data.draw(placed(a, mesh))
    axis = axis_of(data.draw, a.ndim, none=True)
    keepdims = data.draw(st.booleans())
    # (complex: no order here; a 0-d array's axis 0 or -1: NumPy's quirk, refused)
    c, a = a.dtype.kind == "c" or (a.ndim == 0 and axis is not None), _ref(a)
    g = 32 + 2 * (a.size // max(a.shape[axis], 1) if axis is not None and -a.ndim <= axis < a.ndim else 1)
    for name in ("argmax", "argmin"):  # (a split axis: each device's (value, index) pairs of the result gathered)
        fn_np = getattr(np, name)
        run(
            lambda: fn_np(a, axis=axis, keepdims=keepdims),
            lambda: getattr(xp, name)(x, axis=axis, keepdims=keepdims),
            refusal=c,
            gather=g,
        )
        run(
            lambda: fn_np(a, axis=axis, keepdims=keepdims),
            lambda: fn_np(x, axis=axis, keepdims=keepdims),
            refusal=c,
            gather=g,
        )


@fuzz(150)
@given(st.data())
def test_fuzz_nonzero_where_count(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(dtypes=ALL))
    x = data.draw(placed(a, mesh))
    run(lambda: np.nonzero(a), lambda: xp.nonzero(x), gather=1 << 30)
    run(lambda: np.nonzero(a), lambda: np.nonzero(x), gather=1 << 30)
    run(lambda: np.where(a), lambda: np.where(x), gather=1 << 30)
    axis = axis_of(data.draw, a.ndim, none=True)
    if data.draw(st.booleans()) and a.ndim:
        axis = tuple(sorted({data.draw(st.integers(0, a.ndim - 1)) for _ in range(2)}))
    keepdims = data.draw(st.booleans())
    q = a.ndim == 0 and axis is not None  # (NumPy's count of a 0-d array along axis 0 or -1: a quirk, refused)
    run(
        lambda: np.asarray(np.count_nonzero(a, axis=axis, keepdims=keepdims)),
        lambda: xp.count_nonzero(x, axis=axis, keepdims=keepdims),
        refusal=q,
    )
    got = run(
        lambda: np.count_nonzero(a, axis=axis, keepdims=keepdims),
        lambda: np.count_nonzero(x, axis=axis, keepdims=keepdims),
        compare=lambda g, e: None,
        refusal=q,
    )
    if got is not None:
        e = np.count_nonzero(a, axis=axis, keepdims=keepdims)
        g = got.numpy() if isinstance(got, xp.Array) else np.asarray(got)
        assert np.array_equal(g, e) and g.shape == np.shape(e), (g, e)


# ============================================================================================= manipulation


@fuzz(150)
@given(st.data())
def test_fuzz_reshape(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    n = a.size
    divisors = [d for d in range(1, n + 1) if n % d == 0] or [0]
    if n == 0:
        shape = tuple(data.draw(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=3)))
        if 0 not in shape and data.draw(st.booleans()):
            shape = (*shape, 0)
    else:
        d = data.draw(st.sampled_from(divisors))
        rest = n // d
        d2 = data.draw(st.sampled_from([e for e in range(1, rest + 1) if rest % e == 0]))
        shape = data.draw(st.sampled_from([(n,), (d, rest), (d, d2, rest // d2), (rest // d2, 1, d2, d), (1, n)]))
    if shape and data.draw(st.integers(0, 2)) == 0:
        k = data.draw(st.integers(0, len(shape) - 1))
        shape = (*shape[:k], -1, *shape[k + 1 :])
    if data.draw(st.integers(0, 10)) == 0:
        shape = (*shape, 2)
    copy = data.draw(st.sampled_from([None, True, False]))
    # (copy=False: a view where no data moves, else a typed error, as the standard's ValueError)
    order = data.draw(st.sampled_from(["C", "F", "A"]))
    run(
        lambda: np.reshape(a, shape, order=order),
        lambda: np.reshape(x, shape, order=order),
        gather=1 << 30,
        refusal=order != "C",
    )
    got = run(
        lambda: np.reshape(a, shape), lambda: xp.reshape(x, shape, copy=copy), gather=1 << 30, refusal=copy is False
    )
    if got is not None and copy and got.size:  # (a copy: writing it leaves x as it was)
        got[(0,) * got.ndim] = 1 if got.dtype != bool else not got.numpy().reshape(-1)[0]
        assert np.array_equal(_bits(x.numpy()), _bits(a))


@fuzz(150)
@given(st.data())
def test_fuzz_concat_stack(data):
    mesh = data.draw(meshes())
    nd = data.draw(st.integers(1, 3))
    base = list(data.draw(shapes(nd, nd)))
    dt = data.draw(st.sampled_from(ALL))
    k = data.draw(st.integers(1, 3))
    axis = axis_of(data.draw, nd, none=True)
    hosts = []
    for _ in range(k):
        s = list(base)
        if axis is not None and -nd <= axis < nd and data.draw(st.booleans()):
            s[axis] = data.draw(st.sampled_from(SIDES))
        dti = dt if data.draw(st.integers(0, 3)) else data.draw(st.sampled_from(("float64", "int64", "float32")))
        hosts.append(data.draw(host_arrays((dti,), shape=tuple(s))))
    xs = [data.draw(placed(h, mesh)) for h in hosts]
    got = run(
        lambda: np.concatenate(hosts, axis=axis),
        lambda: xp.concat(xs, axis=axis),
        gather=1 << 30,
        lenient=len({h.dtype for h in hosts}) > 1 and BF16 in {h.dtype for h in hosts},
    )
    if k == 1:
        independent(got, xs[0], hosts[0])
    run(
        lambda: np.concatenate(hosts, axis=axis),
        lambda: np.concatenate(xs, axis=axis),
        gather=1 << 30,
        lenient=len({h.dtype for h in hosts}) > 1 and BF16 in {h.dtype for h in hosts},
    )
    if len({h.shape for h in hosts}) == 1:
        sax = axis_of(data.draw, nd + 1)
        run(
            lambda: np.stack(hosts, axis=sax),
            lambda: xp.stack(xs, axis=sax),
            gather=1 << 30,
            lenient=len({h.dtype for h in hosts}) > 1 and BF16 in {h.dtype for h in hosts},
        )
        run(
            lambda: np.stack(hosts, axis=sax),
            lambda: np.stack(xs, axis=sax),
            gather=1 << 30,
            lenient=len({h.dtype for h in hosts}) > 1 and BF16 in {h.dtype for h in hosts},
        )


@fuzz(150)
@given(st.data())
def test_fuzz_roll_flip_moveaxis(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays())
    x = data.draw(placed(a, mesh))
    nd = a.ndim
    if nd and data.draw(st.booleans()):
        axes = tuple(data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3)))
        shift = tuple(data.draw(st.integers(-9, 9)) for _ in axes)
        if data.draw(st.booleans()):
            shift = shift[0]
    else:
        axes = axis_of(data.draw, nd, none=True)
        shift = data.draw(st.integers(-9, 9))
        if data.draw(st.booleans()):  # (NumPy broadcasts: the shifts of one axis, or of the flat array, add up)
            shift = tuple(data.draw(st.lists(st.integers(-9, 9), min_size=1, max_size=3)))
    independent(run(lambda: np.roll(a, shift, axis=axes), lambda: xp.roll(x, shift, axis=axes), gather=1 << 30), x, a)
    run(lambda: np.roll(a, shift, axis=axes), lambda: np.roll(x, shift, axis=axes), gather=1 << 30)
    faxis = axis_of(data.draw, nd, none=True)
    if nd >= 2 and data.draw(st.booleans()):
        faxis = tuple(data.draw(st.permutations(range(nd)))[:2])
    run(lambda: np.flip(a, axis=faxis), lambda: xp.flip(x, axis=faxis), gather=1 << 30)
    run(lambda: np.flip(a, axis=faxis), lambda: np.flip(x, axis=faxis), gather=1 << 30)
    if nd:
        k = data.draw(st.integers(1, nd))
        src = tuple(data.draw(st.permutations(range(nd)))[:k])
        dst = tuple(data.draw(st.permutations(range(-nd, 0)))[:k])
        if data.draw(st.integers(0, 8)) == 0:
            dst = (nd, *dst[1:])
        run(lambda: np.moveaxis(a, src, dst), lambda: xp.moveaxis(x, src, dst), gather=1 << 30)
        run(lambda: np.moveaxis(a, src, dst), lambda: np.moveaxis(x, src, dst), gather=1 << 30)
        perm = tuple(data.draw(st.permutations(range(nd))))
        if data.draw(st.integers(0, 8)) == 0:
            perm = perm[:-1]
        run(lambda: np.transpose(a, perm), lambda: xp.permute_dims(x, perm), gather=1 << 30)
        run(lambda: np.transpose(a, perm), lambda: np.transpose(x, perm), gather=1 << 30)


@fuzz(150)
@given(st.data())
def test_fuzz_squeeze_expand_tile_repeat(data):
    mesh = data.draw(meshes())
    shape = tuple(data.draw(st.sampled_from([1, 1, 2, 3, 0, 5])) for _ in range(data.draw(st.integers(0, 3))))
    a = data.draw(host_arrays(shape=shape))
    x = data.draw(placed(a, mesh))
    nd = a.ndim
    ones = [i for i, s in enumerate(shape) if s == 1]
    if ones or nd:
        sq = data.draw(
            st.sampled_from(
                [
                    tuple(ones),
                    *[(i,) for i in ones],
                    *[(i - nd,) for i in ones],
                    *([(data.draw(st.integers(0, nd - 1)),)] if nd else []),
                ]
            )
        )
        run(lambda: np.squeeze(a, axis=sq), lambda: xp.squeeze(x, axis=sq), gather=1 << 30)
        run(lambda: np.squeeze(a, axis=sq), lambda: np.squeeze(x, axis=sq), gather=1 << 30)
    run(lambda: np.squeeze(a), lambda: np.squeeze(x), gather=1 << 30)
    ex = data.draw(st.sampled_from([0, -1, nd, -nd - 1, (0, 1), (0, -1), nd + 2]))
    run(lambda: np.expand_dims(a, ex), lambda: xp.expand_dims(x, axis=ex), gather=1 << 30)
    reps = tuple(data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(0, 4))))
    independent(run(lambda: np.tile(a, reps), lambda: xp.tile(x, reps), gather=1 << 30), x, a)
    run(lambda: np.tile(a, reps), lambda: np.tile(x, reps), gather=1 << 30)
    axis = axis_of(data.draw, nd, none=True)
    n = a.size if axis is None else (a.shape[axis] if -nd <= axis < nd else 1)
    form = data.draw(st.sampled_from(["int", "xp", "host", "one"]))
    if form == "int":
        reps_ = data.draw(st.integers(0, 3))
        reps_np: object = reps_
    else:
        r = np.asarray(
            data.draw(
                st.lists(st.integers(0, 3), min_size=1 if form == "one" else n, max_size=1 if form == "one" else n)
            ),
            dtype=np.int64,
        )
        if data.draw(st.integers(0, 10)) == 0 and r.size:
            r[0] = -1
        reps_np = r
        reps_ = data.draw(placed(r, mesh)) if form != "host" else r
    # (host repeats: NumPy arrays do not mix with Arrays; a 0-d array's axis 0: NumPy's quirk, refused here)
    # (a negative count for no elements: NumPy repeats nothing, the library refuses the count)
    refused = form == "host" or (nd == 0 and axis is not None) or (form != "int" and (np.asarray(reps_np) < 0).any())
    run(
        lambda: np.repeat(a, reps_np, axis=axis),
        lambda: xp.repeat(x, reps_, axis=axis),
        gather=1 << 30,
        refusal=refused,
    )
    got = run(
        lambda: np.repeat(a, reps_np, axis=axis),
        lambda: np.repeat(x, reps_, axis=axis),
        gather=1 << 30,
        refusal=refused,
    )
    independent(got, x, a)


@fuzz(150)
@given(st.data())
def test_fuzz_broadcast_unstack(data):
    mesh = data.draw(meshes())
    shape = tuple(data.draw(st.sampled_from([1, 2, 3, 0])) for _ in range(data.draw(st.integers(0, 3))))
    a = data.draw(host_arrays(shape=shape))
    x = data.draw(placed(a, mesh))
    lead = tuple(data.draw(st.sampled_from([1, 2, 3])) for _ in range(data.draw(st.integers(0, 2))))
    target = lead + tuple(s if s != 1 else data.draw(st.sampled_from([1, 2, 4, 0])) for s in shape)
    if data.draw(st.integers(0, 8)) == 0 and target:
        target = (*target[:-1], target[-1] + 1)
    run(lambda: np.broadcast_to(a, target), lambda: xp.broadcast_to(x, target), gather=1 << 30)
    run(lambda: np.broadcast_to(a, target), lambda: np.broadcast_to(x, target), gather=1 << 30)
    b = data.draw(host_arrays(shape=target[len(target) - data.draw(st.integers(0, len(target))) :]))
    y = data.draw(placed(b, mesh))
    run(lambda: list(np.broadcast_arrays(a, b)), lambda: list(xp.broadcast_arrays(x, y)), gather=1 << 30)
    if a.ndim:
        ax = axis_of(data.draw, a.ndim)
        run(lambda: tuple(np.moveaxis(a, ax, 0)), lambda: xp.unstack(x, axis=ax), gather=1 << 30)


@fuzz(150)
@given(st.data())
def test_fuzz_np_pad(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(dtypes=REAL + ("complex64",), max_dims=3))
    x = data.draw(placed(a, mesh))
    mode = data.draw(
        st.sampled_from(
            [
                "constant",
                "edge",
                "reflect",
                "symmetric",
                "wrap",
                "linear_ramp",
                "maximum",
                "minimum",
                "mean",
                "median",
                "empty",
            ]
        )
    )
    form = data.draw(st.sampled_from(["int", "pair", "per"]))
    if form == "int":
        pw: object = data.draw(st.integers(0, 5))
    elif form == "pair":
        pw = (data.draw(st.integers(0, 5)), data.draw(st.integers(0, 5)))
    else:
        pw = tuple((data.draw(st.integers(0, 5)), data.draw(st.integers(0, 5))) for _ in range(a.ndim))
    kw: dict = {}
    if mode == "constant" and data.draw(st.booleans()):
        kw["constant_values"] = data.draw(st.sampled_from([0, 1, 2.5, -1, (1, 2)]))
    if mode in ("reflect", "symmetric") and data.draw(st.booleans()):
        kw["reflect_type"] = "odd"
    if mode in ("maximum", "minimum", "mean", "median") and data.draw(st.booleans()):
        kw["stat_length"] = data.draw(st.integers(1, 3))
    if mode == "linear_ramp" and data.draw(st.booleans()):
        kw["end_values"] = data.draw(st.sampled_from([1, -2, (1, 3)]))
    exact = mode not in ("mean", "median", "linear_ramp") and not (a.dtype.kind in "fc" and "reflect_type" in kw)

    def cmp(got, expected):
        if mode == "empty":  # (padding undefined: the core only)
            assert got.shape == expected.shape and got.dtype == expected.dtype
            return
        if exact:
            same(got, expected)
        else:
            g = got.numpy()
            assert g.shape == expected.shape and g.dtype == expected.dtype
            f = np.complex128 if g.dtype.kind == "c" else np.float64
            tol = 1e-2 if (g.dtype.itemsize // 2 if g.dtype.kind == "c" else g.dtype.itemsize) <= 4 else 1e-9
            np.testing.assert_allclose(g.astype(f), expected.astype(f), rtol=tol, atol=tol)

    limited = mode in ("linear_ramp", "maximum", "minimum", "mean", "median") or "reflect_type" in kw
    run(
        lambda: np.pad(a, pw, mode=mode, **kw),
        lambda: np.pad(x, pw, mode=mode, **kw),
        compare=cmp,
        gather=1 << 30,
        lenient=a.dtype == BF16,
        refusal=limited,
    )
    got = run(
        lambda: np.pad(a, pw, mode=mode, **kw),
        lambda: xp.pad(x, pw, mode=mode, **kw),
        compare=cmp,
        gather=1 << 30,
        lenient=a.dtype == BF16,
        refusal=limited,
    )
    independent(got, x, a)


@fuzz(150)
@given(st.data())
def test_fuzz_np_split(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(min_dims=1))
    x = data.draw(placed(a, mesh))
    axis = axis_of(data.draw, a.ndim)
    n = a.shape[axis] if -a.ndim <= axis < a.ndim else 1
    if data.draw(st.booleans()):
        sections: object = data.draw(st.integers(1, 5))
    else:
        sections = sorted(data.draw(st.lists(st.integers(-2, n + 2), max_size=4)))
        if data.draw(st.booleans()):
            sections = list(reversed(sections))
    fn = data.draw(st.sampled_from(["split", "array_split"]))
    run(
        lambda: getattr(np, fn)(a, sections, axis=axis), lambda: getattr(np, fn)(x, sections, axis=axis), gather=1 << 30
    )


# ============================================================================================= regressions


def _on(a, shape=None):
    return xp.asarray(np.asarray(a), device=_mesh(shape or {"row": 2, "col": 2}))


@pytest.mark.parametrize("shape", [(4,), (2, 2)])
def test_reshape_to_its_own_shape_with_copy_true_copies(shape):
    """Bug: ``xp.reshape(x, x.shape, copy=True)`` returned ``x`` itself, so a write into the "copy" changed ``x``."""
    a = np.arange(4.0).reshape(shape)
    x = _on(a)
    y = xp.reshape(x, shape, copy=True)
    y[(0,) * len(shape)] = 99.0
    np.testing.assert_array_equal(x.numpy(), a)
    z = xp.reshape(x, shape)  # (copy=None: a view, as NumPy's)
    assert z.shape == shape


@pytest.mark.parametrize(
    ("shift", "axis"), [((1, 2), None), ((1, -4), None), ((1, 2), 1), ((3, -1, 2), -1), ((2,), None)]
)
def test_roll_adds_up_the_shifts_of_one_axis_as_numpy(shift, axis):
    """Bug: ``xp.roll``/``np.roll`` refused a tuple of shifts with ``axis=None`` or one axis; NumPy broadcasts
    ``shift`` against ``axis`` and rolls each axis by the sum of its shifts."""
    a = np.arange(12.0).reshape(3, 4)
    x = _on(a)
    same(xp.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis))
    same(np.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis))
    with pytest.raises(sa.DimensionError):
        xp.roll(x, (1, 2, 3), axis=(0, 1))


@pytest.mark.parametrize("axis", [None, 0])
def test_repeat_once_copies(axis):
    """Bug: ``xp.repeat(x, 1)`` (and ``np.repeat``, a count array ``[1]``) returned ``x`` itself, so a write into
    the result changed ``x``; NumPy's repeat always copies."""
    a = np.arange(4.0)
    for call in (
        lambda x: xp.repeat(x, 1, axis=axis),
        lambda x: np.repeat(x, 1, axis=axis),
        lambda x: xp.repeat(x, _on(np.array([1])), axis=axis),
    ):
        x = _on(a)
        y = call(x)
        same(y, a)
        y[0] = 99.0
        np.testing.assert_array_equal(x.numpy(), a)


def test_broadcast_arrays_refuses_operands_on_two_meshes():
    """Bug: ``xp.broadcast_arrays`` of arrays on two meshes gave each broadcast on its own mesh, where every other
    op of several operands (concat, stack, searchsorted, ...) raises ``sa.MeshError``."""
    x = _on(np.arange(4.0))
    y = _on(np.arange(8.0).reshape(2, 4), {"all": 4})
    with pytest.raises(sa.MeshError):
        xp.broadcast_arrays(x, y)
    a, b = xp.broadcast_arrays(x, _on(np.ones((2, 1))))
    same(a, np.broadcast_to(np.arange(4.0), (2, 4)))
    same(b, np.ones((2, 4)))
