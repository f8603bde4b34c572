"""Round 13's NumPy-protocol gaps on positional arrays, fuzzed against NumPy on split meshes (1, 2x2, 4, 2x2x2,
3x2; random layouts with uneven and empty blocks):

1. ``np.matvec``/``np.vecmat`` (NumPy 2.2's gufuncs, the vector of ``vecmat`` conjugated), one einsum each;
2. bool operands of ``np.matmul``/``np.dot``/``np.tensordot``/``np.inner``/``np.vecdot``/``np.einsum`` and
   ``np.linalg``'s products: NumPy's bool result (or of ands), the split contraction combined as a logical or;
   mixed dtypes promoted as NumPy's; ``np.tensordot``'s ``axes=(1, 0)``;
3. ufunc methods and keywords (``reduce`` with axis tuples, ``keepdims``, ``initial``, ``where``, ``dtype``;
   ``accumulate``, ``outer``, ``out=``, ``where=``, ``dtype=``/``casting=``) and ndarray methods: each matches
   NumPy on the gathered value or raises NumPy's TypeError / a typed ``sa`` error, never a silent gather.

``FUZZ13_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import contextlib
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

ENV = "FUZZ13_EXAMPLES"


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout."""
    if a.ndim == 0:
        return xp.asarray(a, device=mesh)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), xp.Array)


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Small integers (exact in every dtype), bools about half True, complex with an imaginary part."""
    if dtype == "bool":
        return rng.random(shape) < 0.4
    v = rng.integers(-3, 4, shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.integers(-3, 4, shape)
    return v.astype(dtype)


def _same(got, want) -> None:
    """``got`` (a positional array, gathered) equals NumPy's ``want``: dtype, shape and values."""
    assert isinstance(got, xp.Array), type(got)
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_array_equal(g, w)


@contextlib.contextmanager
def _no_gather():
    """A context in which a gather (``sa.GatherWarning``) fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        yield


# ------------------------------------------------------------------------------------- 1, 2. products

PRODUCT_DTYPES = ("bool", "bool", "int32", "float64", "complex128")


def _product_case(name: str, rng: np.random.Generator, n: int, m: int, k: int):
    """Shapes of the operands of ``name`` with broadcast batch axes (sizes ``n``, ``m``, ``k``; 0 allowed)."""
    batch = [(), (2,), (1,), (3,)][rng.integers(4)]
    other = batch if rng.random() < 0.5 else [(), (1,)][rng.integers(2)] if batch else ()
    if name == "matvec":
        return batch + (n, k), other + (k,)
    if name == "vecmat":
        return batch + (k,), other + (k, m)
    if name == "vecdot":
        return batch + (k,), other + (k,)
    left = batch + (n, k) if rng.random() < 0.8 else (k,)
    right = other + (k, m) if rng.random() < 0.8 else (k,)
    return left, right


@fuzz(25, ENV)
@given(data=st.data(), mesh=meshes())
def test_gufunc_products_as_numpy(data, mesh):
    """``np.matmul``/``matvec``/``vecmat``/``vecdot`` of bools, integers, floats and complex (mixed too)."""
    name = data.draw(st.sampled_from(["matmul", "matvec", "vecmat", "vecdot"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n, m, k = (data.draw(st.sampled_from([0, 1, 2, 3, 5])) for _ in range(3))
    s1, s2 = _product_case(name, rng, n, m, k)
    d1 = data.draw(st.sampled_from(PRODUCT_DTYPES))
    d2 = d1 if data.draw(st.booleans()) else data.draw(st.sampled_from(PRODUCT_DTYPES))
    a, b = _values(rng, s1, d1), _values(rng, s2, d2)
    x, y = data.draw(placed(a, mesh)), data.draw(placed(b, mesh))
    ufunc = getattr(np, name)
    with _no_gather():
        _same(ufunc(x, y), ufunc(a, b))


@fuzz(20, ENV)
@given(data=st.data(), mesh=meshes())
def test_bool_products_as_numpy(data, mesh):
    """``np.dot``/``tensordot``/``inner``/``einsum`` and ``np.linalg``'s products of bools (and a bool with a
    number): NumPy's dtype and values on every layout."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n, m, k = (data.draw(st.sampled_from([0, 1, 2, 3, 6])) for _ in range(3))
    other = data.draw(st.sampled_from(["bool", "bool", "int64", "float32"]))
    a, b = _values(rng, (n, k), "bool"), _values(rng, (k, m), other)
    v = _values(rng, (k,), "bool")
    x, y, u = data.draw(placed(a, mesh)), data.draw(placed(b, mesh)), data.draw(placed(v, mesh))
    with _no_gather():
        _same(np.dot(x, y), np.dot(a, b))
        _same(np.dot(u, y), np.dot(v, b))
        _same(np.dot(x, u), np.dot(a, v))
        _same(np.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1))
        _same(np.tensordot(x, y, axes=(1, 0)), np.tensordot(a, b, axes=(1, 0)))
        _same(np.tensordot(x, x, axes=([0], [0])), np.tensordot(a, a, axes=([0], [0])))
        _same(np.inner(x, u), np.inner(a, v))
        _same(np.einsum("ij,jk->ik", x, y), np.einsum("ij,jk->ik", a, b))
        _same(np.linalg.matmul(x, y), np.linalg.matmul(a, b))
        _same(np.linalg.vecdot(x, u), np.linalg.vecdot(a, v))
        _same(np.linalg.tensordot(u, u, axes=1), np.linalg.tensordot(v, v, axes=1))
        _same(np.linalg.multi_dot([u, x.T, x]), np.linalg.multi_dot([v, a.T, a]))


def test_bool_matmul_of_a_long_split_contraction_is_a_logical_or():
    """256 true products over a contraction split 4 ways: True, not a count that wraps (uint8) or widens."""
    mesh = _mesh({"a": 2, "b": 2})
    a = np.ones((2, 256), bool)
    x = as_kind(sa.asarray(a, dims=("dim0", "dim1"), mesh=mesh, layout={"dim1": ("a", "b")}), xp.Array)
    got = np.matmul(x, x.T)
    assert got.dtype == np.bool_ and np.asarray(got).all()
    got = np.dot(x[0], x[1])
    assert got.dtype == np.bool_ and bool(got) is True


def test_matvec_vecmat_on_split_operands_do_not_gather():
    """``np.matvec``/``np.vecmat`` are one einsum: no allgather of the split matrix; ``vecmat`` conjugates."""
    mesh = _mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(3)
    a = rng.normal(size=(8, 6)) + 1j * rng.normal(size=(8, 6))
    v, w = rng.normal(size=6) + 1j * rng.normal(size=6), rng.normal(size=8) - 1j * rng.normal(size=8)
    x = as_kind(sa.asarray(a, dims=("dim0", "dim1"), mesh=mesh, layout={"dim0": "row", "dim1": "col"}), xp.Array)
    xv = as_kind(sa.asarray(v, dims=("dim0",), mesh=mesh, layout={"dim0": "col"}), xp.Array)
    xw = as_kind(sa.asarray(w, dims=("dim0",), mesh=mesh, layout={"dim0": "row"}), xp.Array)
    with sa.comm_log() as log:
        mv, vm = np.matvec(x, xv), np.vecmat(xw, x)
    assert "allgather" not in [r.op for r in log.records]
    np.testing.assert_allclose(np.asarray(mv), np.matvec(a, v))
    np.testing.assert_allclose(np.asarray(vm), np.vecmat(w, a))
    np.testing.assert_allclose(np.asarray(np.vecmat(xw, x)), np.conj(w) @ a)


@pytest.mark.parametrize("name", ["matmul", "matvec", "vecmat", "vecdot"])
def test_gufunc_products_refuse_as_numpy(name):
    """Too few dims is NumPy's ValueError (a ``DimensionError``); a gufunc method is NumPy's TypeError."""
    x = xp.asarray(np.ones(3), device=_mesh({"a": 2}))
    ufunc = getattr(np, name)
    with pytest.raises(ValueError):
        ufunc(x, 2.0)
    with pytest.raises(TypeError):
        ufunc.outer(x, x)


# ------------------------------------------------------------------------------------- 3. ufunc methods, keywords

SHAPES = [(5,), (3, 4), (0, 3), (4, 1, 3), (2, 0)]


def _outcome(fn):
    """``("ok", value)`` or ``("raise", exception)`` of ``fn()``, NumPy's warnings silenced."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", UserWarning)  # (NumPy's "where used without out")
            warnings.simplefilter("error", sa.GatherWarning)
            return "ok", fn()
    except sa.GatherWarning:
        raise
    except Exception as e:  # (compared with NumPy's below)
        return "raise", e


def _agree(np_fn, sa_fn) -> None:
    """Both give the same value (dtype, shape, entries), or NumPy raises and so does shardarray: a TypeError
    where NumPy's is one (``sa.DTypeError``, NumPy's TypeError of no dispatch), a ValueError for a ValueError
    (``sa.ArgumentError``, ``DimensionError``...; an ``IndexError`` for NumPy's ``AxisError``)."""
    want_kind, want = _outcome(np_fn)
    got_kind, got = _outcome(sa_fn)
    if want_kind == "raise":
        assert got_kind == "raise", f"NumPy raised {want!r}, shardarray gave {got!r}"
        assert isinstance(got, (TypeError, ValueError, IndexError)), repr(got)
        if isinstance(want, TypeError) and not isinstance(want, ValueError):
            assert isinstance(got, TypeError) or "where=" in str(got) or "casting" in str(got), (want, got)
        return
    if got_kind == "raise":  # a typed refusal naming what to do, or NumPy's TypeError of no dispatch
        assert isinstance(got, (sa.ArgumentError, TypeError)), f"NumPy gave {want!r}; shardarray raised {got!r}"
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        _close(got, want)


def _close(got, want) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    if w.dtype.kind in "fc":
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def _axes(rng, ndim):
    """An ``axis`` for ``reduce``: None, an int (negative too), or a tuple."""
    pick = rng.integers(4)
    if pick == 0 or ndim == 0:
        return None
    if pick == 1:
        return int(rng.integers(-ndim, ndim))
    k = int(rng.integers(1, ndim + 1))
    return tuple(int(a) for a in rng.choice(ndim, size=k, replace=False))


REDUCING = [np.add, np.multiply, np.maximum, np.minimum, np.logical_and, np.logical_or]


@fuzz(30, ENV)
@given(data=st.data(), mesh=meshes())
def test_ufunc_reduce_keywords_as_numpy(data, mesh):
    """``ufunc.reduce`` with axis tuples, ``keepdims``, ``initial``, ``where``, ``dtype``, ``out``."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = data.draw(st.sampled_from(SHAPES))
    dtype = data.draw(st.sampled_from(["float64", "int32", "bool", "complex64"]))
    ufunc = data.draw(st.sampled_from(REDUCING))
    a = _values(rng, shape, dtype)
    x = data.draw(placed(a, mesh))
    kw = {"axis": _axes(rng, a.ndim)}
    if rng.random() < 0.5:
        kw["keepdims"] = True
    if rng.random() < 0.4 and dtype != "complex64":
        kw["initial"] = int(rng.integers(-2, 3))
    if rng.random() < 0.3:
        kw["dtype"] = str(rng.choice(["float32", "int64", "bool"]))
    sa_kw = dict(kw)
    if rng.random() < 0.4:
        m = rng.random(shape) < 0.6
        kw["where"], sa_kw["where"] = m, data.draw(placed(m, mesh))
    _agree(lambda: ufunc.reduce(a, **kw), lambda: ufunc.reduce(x, **sa_kw))


@fuzz(25, ENV)
@given(data=st.data(), mesh=meshes())
def test_ufunc_accumulate_and_outer_as_numpy(data, mesh):
    """``ufunc.accumulate`` (axis, ``dtype``, ``out``) and ``ufunc.outer`` (an array, a scalar, ``out``)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = data.draw(st.sampled_from(SHAPES))
    dtype = data.draw(st.sampled_from(["float64", "int32", "bool"]))
    ufunc = data.draw(st.sampled_from([np.add, np.multiply, np.maximum, np.subtract, np.logical_or]))
    a = _values(rng, shape, dtype)
    x = data.draw(placed(a, mesh))
    axis = int(rng.integers(-a.ndim, a.ndim))
    acc_dtype = data.draw(st.sampled_from([None, "float32", "int64"]))
    _agree(
        lambda: ufunc.accumulate(a, axis=axis, dtype=acc_dtype), lambda: ufunc.accumulate(x, axis=axis, dtype=acc_dtype)
    )
    b = _values(rng, shape[-1:], dtype)
    y = data.draw(placed(b, mesh))
    _agree(lambda: ufunc.outer(a, b), lambda: ufunc.outer(x, y))
    _agree(lambda: ufunc.outer(b, 2), lambda: ufunc.outer(y, 2))
    want_kind, want = _outcome(lambda: ufunc.outer(b, b))
    if want_kind == "ok":
        o = data.draw(placed(np.zeros(want.shape, want.dtype), mesh))
        assert ufunc.outer(y, y, out=o) is o
        _close(o, want)


@fuzz(30, ENV)
@given(data=st.data(), mesh=meshes())
def test_ufunc_call_out_where_casting_as_numpy(data, mesh):
    """``ufunc(...)`` with ``out=`` (an array, a tuple, aliasing an input), ``where=``, ``dtype=``, ``casting=``;
    ``np.divmod``/``np.modf`` into a tuple ``out``."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = data.draw(st.sampled_from(SHAPES))
    d1 = data.draw(st.sampled_from(["float64", "float32", "int32", "int64", "bool"]))
    d2 = data.draw(st.sampled_from(["float64", "int64", "int8", "bool"]))
    ufunc = data.draw(st.sampled_from([np.add, np.multiply, np.subtract, np.maximum, np.true_divide, np.less]))
    a, b = _values(rng, shape, d1), _values(rng, shape[1:], d2)
    x, y = data.draw(placed(a, mesh)), data.draw(placed(b, mesh))
    kw: dict = {}
    if rng.random() < 0.4:
        kw["casting"] = str(rng.choice(["no", "equiv", "safe", "same_kind", "unsafe"]))
    if rng.random() < 0.3:
        kw["dtype"] = str(rng.choice(["float32", "int64", "int8", "float64"]))
    out_dtype = data.draw(st.sampled_from([None, "float64", "float32", "int16", "bool"]))
    mask = rng.random(shape) < 0.5 if rng.random() < 0.4 else None
    alias = out_dtype is None and mask is None and rng.random() < 0.5
    if out_dtype is None and not alias:
        if mask is None:
            _agree(lambda: ufunc(a, b, **kw), lambda: ufunc(x, y, **kw))
        return
    if alias:  # out= the first operand: NumPy's in-place ufunc
        a2, x2 = a.copy(), data.draw(placed(a.copy(), mesh))
        _agree(lambda: ufunc(a2, b, out=a2, **kw), lambda: ufunc(x2, y, out=x2, **kw))
        _close(x2, a2)
        return
    start = _values(rng, shape, out_dtype)
    o_np, o_sa = start.copy(), data.draw(placed(start.copy(), mesh))
    np_kw, sa_kw = dict(kw), dict(kw)
    if mask is not None:
        np_kw["where"], sa_kw["where"] = mask, data.draw(placed(mask, mesh))
    tuple_out = rng.random() < 0.5
    _agree(
        lambda: ufunc(a, b, out=(o_np,) if tuple_out else o_np, **np_kw),
        lambda: ufunc(x, y, out=(o_sa,) if tuple_out else o_sa, **sa_kw),
    )
    _close(o_sa, o_np)  # (written, or left as it was where both refused)


@fuzz(15, ENV)
@given(data=st.data(), mesh=meshes())
def test_multiple_output_ufuncs_into_tuple_out(data, mesh):
    """``np.divmod``/``np.modf``/``np.frexp`` with ``out=(o1, o2)`` (one entry may be None) and ``where=``."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = data.draw(st.sampled_from(SHAPES))
    a = _values(rng, shape, "float64") + 0.25
    x = data.draw(placed(a, mesh))
    name = data.draw(st.sampled_from(["divmod", "modf", "frexp"]))
    args_np, args_sa = ((a, 3.0), (x, 3.0)) if name == "divmod" else ((a,), (x,))
    ufunc = getattr(np, name)
    want = ufunc(*args_np)
    starts = [_values(rng, shape, w.dtype) for w in want]
    keep = data.draw(st.sampled_from([(True, True), (True, False), (False, True)]))
    o_np = tuple(s.copy() if k else None for s, k in zip(starts, keep))
    o_sa = tuple(data.draw(placed(s.copy(), mesh)) if k else None for s, k in zip(starts, keep))
    kw_np, kw_sa = {}, {}
    if data.draw(st.booleans()) and all(keep):
        m = rng.random(shape) < 0.5
        kw_np["where"], kw_sa["where"] = m, data.draw(placed(m, mesh))
    got = ufunc(*args_sa, out=o_sa, **kw_sa)
    want = ufunc(*args_np, out=o_np, **kw_np)
    for g, w, o in zip(got, want, o_sa):
        _close(g, w)
        assert o is None or g is o


@fuzz(20, ENV)
@given(data=st.data(), mesh=meshes())
def test_ndarray_methods_as_numpy(data, mesh):
    """NumPy's ndarray methods on positional arrays: ``sum(where=)``, ``clip``, ``round(decimals)``,
    ``cumsum(dtype=)``, ``astype(copy=False, order=)``, ``tolist``, ``item``, ``fill``, ``put``, ``repeat``,
    ``take``; ``np.choose``."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = data.draw(st.sampled_from([(5,), (3, 4), (4, 1, 3), (2, 3)]))
    dtype = data.draw(st.sampled_from(["float64", "int32", "bool", "float32"]))
    a = _values(rng, shape, dtype)
    if dtype.startswith("float"):
        a = a * np.asarray(1.37, a.dtype)
    x = data.draw(placed(a, mesh))
    m = rng.random(shape) < 0.5
    xm = data.draw(placed(m, mesh))
    axis = int(rng.integers(-a.ndim, a.ndim))
    _agree(lambda: a.sum(axis=axis, where=m), lambda: x.sum(axis=axis, where=xm))
    _agree(lambda: a.max(axis=axis, where=m, initial=-5), lambda: x.max(axis=axis, where=xm, initial=-5))
    _agree(lambda: a.clip(-1, 2), lambda: x.clip(-1, 2))
    _agree(lambda: a.clip(min=0), lambda: x.clip(min=0))
    decimals = data.draw(st.sampled_from([0, 1, -1, 2]))
    _agree(lambda: a.round(decimals), lambda: x.round(decimals))
    cdt = data.draw(st.sampled_from([None, "int8", "float32", "int64"]))
    _agree(lambda: a.cumsum(axis=axis, dtype=cdt), lambda: x.cumsum(axis=axis, dtype=cdt))
    assert x.astype(x.dtype, copy=False) is x
    _agree(lambda: a.astype("float32", order="F"), lambda: x.astype("float32", order="F"))
    assert x.tolist() == a.tolist()
    k = int(rng.integers(-a.size, a.size))
    got, want = x.item(k), a.item(k)
    assert type(got) is type(want) and got == want
    a2, x2 = a.copy(), data.draw(placed(a.copy(), mesh))
    a2.fill(3)
    x2.fill(3)
    _close(x2, a2)
    idx = [int(i) for i in rng.integers(-a.size, a.size, 3)]
    vals = _values(rng, (2,), dtype).tolist()
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    a3, x3 = a.copy(), data.draw(placed(a.copy(), mesh))
    _agree(lambda: a3.put(idx + [idx[0]], vals, mode=mode), lambda: x3.put(idx + [idx[0]], vals, mode=mode))
    _close(x3, a3)
    reps = data.draw(st.sampled_from([2, 0, [1, 0, 2]]))
    rep_axis = None if isinstance(reps, int) and rng.random() < 0.3 else axis
    _agree(lambda: a.repeat(reps, axis=rep_axis), lambda: x.repeat(reps, axis=rep_axis))
    _agree(lambda: a.take([0, -1], axis=axis), lambda: x.take([0, -1], axis=axis))
    pick = rng.integers(0, 3, shape)
    p = data.draw(placed(pick, mesh))
    cmode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    _agree(lambda: np.choose(pick, [a, a * 2, 7], mode=cmode), lambda: np.choose(p, [x, x * 2, 7], mode=cmode))


@pytest.mark.filterwarnings("ignore:sa.linalg.inv:UserWarning")  # (matrix_power(b, -1): the inverse's fallback)
def test_regressions_of_round_13():
    """The bugs fixed in this round, each a one-liner against NumPy."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(3, 4) - 5
    x = xp.asarray(a, device=mesh)
    # where= with out= (was refused)
    o_np, o_sa = np.full((3, 4), -1.0), xp.full((3, 4), -1.0, device=mesh)
    m = a > 0
    np.add(a, 1, out=o_np, where=m)
    np.add(x, 1, out=o_sa, where=xp.asarray(m, device=mesh))
    _close(o_sa, o_np)
    # casting= (was refused): unsafe into an int out, and the 'no' rule refused as NumPy's TypeError
    o = xp.zeros((3, 4), dtype=xp.int16, device=mesh)
    np.multiply(x, 1.5, out=o, casting="unsafe")
    _close(o, np.multiply(a, 1.5).astype(np.int16))
    with pytest.raises(TypeError):
        np.add(xp.astype(x, xp.int64), 1.5, casting="no")
    _close(np.add(x, x, dtype=np.int8, casting="unsafe"), np.add(a, a, dtype=np.int8, casting="unsafe"))
    # a tuple out of a ufunc of two outputs (was "one array for a function with one result")
    q, r = xp.zeros((3, 4), device=mesh), xp.zeros((3, 4), device=mesh)
    got = np.divmod(x, 3, out=(q, r))
    assert got[0] is q and got[1] is r
    _close(q, np.divmod(a, 3)[0])
    _close(r, np.divmod(a, 3)[1])
    # bools round to float16 as NumPy's (was refused); astype(order="F") the same values (was refused)
    _close(np.round(x > 0), np.round(a > 0))
    _close(x.astype(np.float32, order="F"), a.astype(np.float32, order="F"))
    # np.choose (was NumPy's TypeError of no dispatch)
    idx = np.array([[0, 1, 2, 1]] * 3)
    _close(np.choose(xp.asarray(idx, device=mesh), [x, -x, 0]), np.choose(idx, [a, -a, 0]))
    # np.tensordot's axes=(1, 0) (was a DimensionError), np.dot of bools and floats (was refused)
    _close(np.tensordot(x, x.T, axes=(1, 0)), np.tensordot(a, a.T, axes=(1, 0)))
    _close(np.dot(x > 0, x.T), np.dot(a > 0, a.T))
    # a reduction or scan into an integer out= (NumPy casts into it unsafely; was a DTypeError)
    o = xp.zeros(4, dtype=xp.int64, device=mesh)
    np.add.reduce(x / 3, axis=0, out=o)
    _close(o, np.add.reduce(a / 3, axis=0, out=np.zeros(4, np.int64)))
    o = xp.zeros((3, 4), dtype=xp.int64, device=mesh)
    np.add.accumulate(x / 3, axis=0, out=o)
    _close(o, np.add.accumulate(a / 3, axis=0, out=np.zeros((3, 4), np.int64)))
    # out= of a larger shape the result broadcasts to (was a DimensionError)
    o = xp.zeros((3, 4), device=mesh)
    np.add(x[0], 1, out=o)
    _close(o, np.add(a[0], 1, out=np.zeros((3, 4))))
    # order= and signature= (were refused)
    _close(np.add(x, x, order="F"), np.add(a, a, order="F"))
    _close(np.add(x, 1, signature=(None, None, "f4")), np.add(a, 1, signature=(None, None, "f4")))
    _close(np.add(x, x, signature="ii->i", casting="unsafe"), np.add(a, a, signature="ii->i", casting="unsafe"))
    with pytest.raises(TypeError):
        np.add(x, x, signature="ii->i")
    # a function's named-tuple result stays one through the out= handling
    assert np.linalg.qr(xp.asarray(a[:, :3], device=_mesh({"d": 1}))).Q.shape == (3, 3)
    # np.linalg.matrix_power of bools (was refused)
    b = np.eye(3, dtype=bool) | np.eye(3, k=1, dtype=bool)
    for n in (0, 1, 2, 5, -1):
        _close(np.linalg.matrix_power(xp.asarray(b, device=mesh), n), np.linalg.matrix_power(b, n))


@pytest.mark.parametrize(
    ("name", "shapes", "kw"),
    [
        ("matmul", [(3, 4, 2), (4, 3, 2)], {"axes": [(0, 1), (0, 1), (1, 2)]}),
        ("matmul", [(3, 4, 2), (4, 3, 2)], {"axes": [(1, 0), (1, 0), (0, 2)]}),
        ("matvec", [(3, 4, 2), (4, 2)], {"axes": [(0, 1), 0, 1]}),
        ("vecmat", [(3, 2), (3, 4, 2)], {"axes": [0, (0, 1), 0]}),
        ("vecdot", [(3, 4, 2), (3, 4, 2)], {"axis": 1}),
        ("vecdot", [(3, 4, 2), (4, 2)], {"axis": -2, "keepdims": True}),
        ("vecdot", [(3, 4, 2), (3, 4, 2)], {"axes": [0, 0, 1], "keepdims": True}),
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "bool"])
def test_gufunc_axes_keywords_as_numpy(name, shapes, kw, dtype):
    """A gufunc's ``axes=`` (each operand's core axes and the output's), ``vecdot``'s ``axis=``/``keepdims=``."""
    mesh = _mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(5)
    arrays = [_values(rng, s, dtype) for s in shapes]
    ufunc = getattr(np, name)
    _same(ufunc(*[xp.asarray(a, device=mesh) for a in arrays], **kw), ufunc(*arrays, **kw))


@fuzz(25, ENV)
@given(data=st.data(), mesh=meshes())
def test_ufunc_at_with_repeated_indices_as_numpy(data, mesh):
    """``np.add.at``/``np.subtract.at`` add at every repeat of an index (integer lists, a tuple of them, a slice
    beside one); ``ufunc.at`` of other ufuncs is NumPy's TypeError, with nothing gathered."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = data.draw(st.sampled_from([(6,), (4, 3), (3, 0)]))
    dtype = data.draw(st.sampled_from(["float64", "int32"]))
    a = _values(rng, shape, dtype)
    x = data.draw(placed(a.copy(), mesh))
    n = shape[0]
    rows = [int(i) for i in rng.integers(-n, n, 5)] if n else []
    if len(shape) == 1 or not rows:
        key = rows
    elif data.draw(st.booleans()):
        key = (rows, [int(j) for j in rng.integers(0, shape[1], len(rows))]) if shape[1] else rows
    else:
        key = (slice(None), [0, 0, shape[1] - 1]) if shape[1] else rows
    ufunc = data.draw(st.sampled_from([np.add, np.subtract, np.multiply, np.maximum]))
    value = int(rng.integers(1, 4))
    b = a.copy()
    want_kind, want = _outcome(lambda: ufunc.at(b, key, value))
    with sa.comm_log() as log:
        got_kind, got = _outcome(lambda: ufunc.at(x, key, value))
    if got_kind == "raise":
        assert isinstance(got, TypeError), repr(got)
        assert "allgather" not in [r.op for r in log.records]
        _close(x, a)  # (untouched)
    else:
        assert want_kind == "ok", repr(want)
        _close(x, b)


def test_einsum_keywords_as_numpy():
    """``np.einsum``'s ``out=``, ``dtype=`` with ``casting=`` (NumPy's default ``'safe'``) and ``order=``."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=mesh)
    o = xp.zeros(4, device=mesh)
    assert np.einsum("ij->j", x, out=o) is o
    _close(o, np.einsum("ij->j", a))
    _close(
        np.einsum("ij->j", x, dtype=np.float32, casting="same_kind"),
        np.einsum("ij->j", a, dtype=np.float32, casting="same_kind"),
    )
    with pytest.raises(TypeError):
        np.einsum("ij->j", x, dtype=np.float32)
    with pytest.raises(TypeError):
        np.einsum("ij->j", x, out=xp.zeros(4, dtype=xp.float32, device=mesh))
    _close(np.einsum("ij,ij->i", x > 3, x > 5, order="F"), np.einsum("ij,ij->i", a > 3, a > 5, order="F"))


def test_choose_method_as_numpy():
    """``x.choose(choices)`` is ``np.choose(x, choices)`` (the method was an AttributeError)."""
    mesh = _mesh({"row": 2, "col": 2})
    i = np.array([[0, 1], [2, 1], [1, 0]])
    ch = [np.ones((3, 2)), np.zeros((3, 2)), np.full((3, 2), 7.0)]
    _close(xp.asarray(i, device=mesh).choose([xp.asarray(c, device=mesh) for c in ch]), i.choose(ch))
