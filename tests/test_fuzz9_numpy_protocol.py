"""A differential fuzz, against NumPy, of NumPy's protocol on split positional arrays (round 9): ``np.extract``,
``np.compress`` and ``np.argwhere`` (0-d too); host NumPy arrays as operands of every kind of dispatched function
and ufunc (refused with ``sa.DTypeError`` naming ``xp.asarray``, wherever they stand, nothing gathered); the
``ndarray`` methods (``argmax(keepdims=)``, ``sum(where=)``, ``clip``, ``round``, ``astype(copy=False)``, ``fill``,
``item``, ``tolist``, ``cumsum(dtype=)``, ``nonzero``, ``searchsorted``, ``repeat``, ``squeeze``, ``swapaxes``,
``ravel``/``flatten`` orders, ``T``/``mT``, ``sort``) and the ufunc methods (``reduce`` with ``axis``/``dtype``/
``keepdims``/``initial``/``where``, ``accumulate``, ``outer``, ``at``, ``reduceat``) on random
meshes (1, 2x2, 4, 2x2x2, 3x2) and layouts, uneven and empty blocks. Each case checks values, dtype and shape; that
NumPy's errors are typed ``sa`` errors of NumPy's type here; and that nothing larger than a few elements is
gathered. Regressions of the bugs it found close the file.

``FUZZ9_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import contextlib
import math
import sys
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

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ9_EXAMPLES"
DTYPES = ("float64", "float32", "int64", "int8", "bool")
SIDES = (0, 1, 2, 3, 5, 7)


# --------------------------------------------------------------------------------------------- data


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    n = math.prod(shape)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        return rng.integers(-4, 5, n).astype(dt).reshape(shape)
    v = rng.integers(-4, 5, n) / rng.choice([1, 2, 4], n)
    return v.astype(dt).reshape(shape)


@st.composite
def host_arrays(draw, dtypes=DTYPES, min_dims=0, max_dims=3, min_side=0):
    nd = draw(st.integers(min_dims, max_dims))
    shape = tuple(draw(st.sampled_from([s for s in SIDES if s >= min_side])) for _ in range(nd))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _values(rng, shape, draw(st.sampled_from(dtypes)))


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh``: axis k over mesh axis k (``xp.asarray``) or a random layout."""
    if a.ndim == 0 or (draw(st.booleans()) and 1 not in a.shape[: len(mesh.axis_names)]):
        return xp.asarray(a, device=mesh)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if a.shape[dims.index(d)] != 1}
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


def axis_of(draw, ndim: int, none: bool = False):
    choices = list(range(-ndim, ndim)) + ([None] if none else [])
    if draw(st.integers(0, 15)) == 0:
        choices = [ndim, -ndim - 1]
    return draw(st.sampled_from(choices)) if choices else None


# --------------------------------------------------------------------------------------------- checks


@contextlib.contextmanager
def no_gather(limit: int = 64):
    """No ``x.numpy()``/``np.asarray(x)`` of more than one element, no allgather of more than ``limit`` elements."""
    calls: list[str] = []
    real_numpy, real_array = sa.ShardArray.numpy, sa.ShardArray.__array__

    def counted(self) -> bool:  # (a read of one value, x.item(), and NumPy's TypeError message's repr(x) are none)
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_name in ("__repr__", "array_repr"):
                return False
            frame = frame.f_back
        return self.size > 1

    def numpy(self, *a, **k):
        if counted(self):
            calls.append("numpy")
        return real_numpy(self, *a, **k)

    def array(self, *a, **k):
        if counted(self):
            calls.append("__array__")
        return real_array(self, *a, **k)

    sa.ShardArray.numpy, sa.ShardArray.__array__ = numpy, array
    try:
        with sa.comm_log() as log:
            yield
    finally:
        sa.ShardArray.numpy, sa.ShardArray.__array__ = real_numpy, real_array
    big = [r for r in log.records if r.op == "allgather" and r.elements > limit]
    assert not calls and not big, (calls, big)


def same(got, expected) -> None:
    """``got`` is NumPy's ``expected``: type of container, shape, dtype, values (NaNs equal)."""
    if isinstance(expected, (tuple, list)) and not isinstance(got, sa.ShardArray):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), (type(got), got)
        for g, e in zip(got, expected):
            same(g, e)
        return
    if isinstance(expected, np.ndarray) or isinstance(got, sa.ShardArray):
        assert isinstance(got, xp.Array), type(got)
        g, e = got.numpy(), np.asarray(expected)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-6 if e.dtype == np.float64 else 2e-3, atol=1e-12)
        else:
            np.testing.assert_array_equal(g, e)
        return
    assert type(got) is type(expected) or np.isscalar(got), (type(got), type(expected))
    assert got == expected or (got != got and expected != expected), (got, expected)


DISPATCH_ERRORS = ("no implementation found", "returned NotImplemented")  # (NumPy's TypeError: no counterpart)


def run(np_call, xp_call, gather: int | None = 64, refusal: bool = False) -> None:
    """NumPy's ``np_call()`` against ``xp_call()``: where NumPy raises, a typed ``sa`` error that is an instance
    of NumPy's error type (or NumPy's own TypeError of no dispatch), nothing gathered; else ``same`` (and no
    allgather of more than ``gather`` elements; None: an explicit gather, ``x.tolist()``). ``refusal``: a
    documented gap (no counterpart) may raise NumPy's TypeError of no dispatch where NumPy computes."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = np_call()
    except Exception as e:
        with no_gather(gather), pytest.raises(Exception) as info:
            xp_call()
        err = info.value
        typed = isinstance(err, sa.ShardArrayError) or (
            isinstance(err, TypeError) and any(m in str(err) for m in DISPATCH_ERRORS)
        )
        assert typed, f"NumPy raised {type(e).__name__}: {e}; the library raised an untyped {err!r}"
        if not isinstance(err, sa.ShardArrayError):
            return  # (no counterpart: NumPy's TypeError, whatever NumPy itself raises on these values)
        assert isinstance(err, (type(e), np.exceptions.AxisError, TypeError, ValueError, IndexError)), (e, err)
        wanted = TypeError if isinstance(e, TypeError) else ValueError if isinstance(e, ValueError) else IndexError
        assert isinstance(err, wanted), f"NumPy raised {type(e).__name__}: {e}; the library {type(err).__name__}"
        return
    with warnings.catch_warnings(), no_gather(gather) if gather is not None else contextlib.nullcontext():
        warnings.simplefilter("error", sa.GatherWarning)
        try:
            got = xp_call()
        except TypeError as err:
            if refusal and any(m in str(err) for m in DISPATCH_ERRORS):
                return  # (a documented gap: no counterpart, NumPy's TypeError)
            raise
    same(got, expected)


# --------------------------------------------------------------------------------------------- extract, compress


@given(st.data())
@fuzz(40, ENV)
def test_extract_compress_argwhere(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(max_dims=3))
    x = data.draw(placed(a, mesh))
    kind = data.draw(st.sampled_from(["extract", "compress", "argwhere"]))
    if kind == "argwhere":
        run(lambda: np.argwhere(a), lambda: np.argwhere(x))
        return
    if kind == "extract":
        n = a.size + data.draw(st.sampled_from([0, 0, -1, 1]))
        cond = _values(np.random.default_rng(data.draw(st.integers(0, 99))), (max(n, 0),), "bool")
        cond[a.size :] = cond[a.size :] if a.size else False  # (NumPy: no bounds check with nothing to copy)
        cond = cond.reshape(data.draw(st.sampled_from([cond.shape, (1, *cond.shape)])))
        c = data.draw(st.sampled_from(["array", "list"]))
        xc = data.draw(placed(cond, mesh)) if c == "array" else cond.tolist()
        run(lambda: np.extract(cond, a), lambda: np.extract(xc, x))
        return
    axis = axis_of(data.draw, a.ndim, none=True)
    length = a.size if axis is None or not -a.ndim <= axis < a.ndim else a.shape[axis]
    n = max(length + data.draw(st.sampled_from([0, 0, -1, 2])), 0)
    cond = _values(
        np.random.default_rng(data.draw(st.integers(0, 99))), (n,), data.draw(st.sampled_from(["bool", "int8"]))
    )
    if a.size == 0:  # (NumPy skips the bounds check where there is nothing to copy; the library checks)
        cond[length:] = 0
    xc = data.draw(placed(cond, mesh)) if data.draw(st.booleans()) else cond.tolist()
    run(lambda: np.compress(cond, a, axis=axis), lambda: np.compress(xc, x, axis=axis))


# --------------------------------------------------------------------------------------------- host operands

#: binary ufuncs with a counterpart, by the kind of data they take
UFUNCS_INT = ("gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "floor_divide")
UFUNCS_FLOAT = (
    *("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "fmax", "fmin", "hypot", "arctan2"),
    *("copysign", "heaviside", "fmod", "remainder", "logaddexp", "nextafter", "float_power", "equal", "less"),
    *("greater_equal", "not_equal", "logical_and", "logical_or", "logical_xor"),
)

#: NumPy functions of two operands of one shape (``n`` long, or ``(m, n)``): name -> call(a, b)
PAIRS = {
    "kron": lambda a, b: np.kron(a, b),
    "convolve": lambda a, b: np.convolve(a.ravel(), b.ravel()),
    "linspace": lambda a, b: np.linspace(a, b, 3),
    "linspace_axis": lambda a, b: np.linspace(a, b, 4, axis=-1),
    "dot": lambda a, b: np.dot(a, b if b.ndim == 1 else b.mT),
    "matmul": lambda a, b: np.matmul(a, b if b.ndim == 1 else b.mT),
    "tensordot": lambda a, b: np.tensordot(a, b, axes=a.ndim),
    "inner": lambda a, b: np.inner(a, b),
    "outer": lambda a, b: np.outer(a, b),
    "vdot": lambda a, b: np.vdot(a, b),
    "einsum": lambda a, b: np.einsum("...,...->...", a, b),
    "concatenate": lambda a, b: np.concatenate([a, b]),
    "stack": lambda a, b: np.stack([a, b]),
    "vstack": lambda a, b: np.vstack((a, b)),
    "hstack": lambda a, b: np.hstack([a, b]),
    "append": lambda a, b: np.append(a, b),
    "where": lambda a, b: np.where(np.ones(a.shape, bool) if isinstance(a, np.ndarray) else a > 0, a, b),
    "isclose": lambda a, b: np.isclose(a, b),
    "allclose": lambda a, b: np.allclose(a, b),
    "array_equal": lambda a, b: np.array_equal(a, b),
    "array_equiv": lambda a, b: np.array_equiv(a, b),
    "clip": lambda a, b: np.clip(a, b, None),
    "isin": lambda a, b: np.isin(a, b),
    "searchsorted": lambda a, b: np.searchsorted(a.ravel(), b.ravel()),
    "digitize": lambda a, b: np.digitize(a, b.ravel()),
    "interp": lambda a, b: np.interp(a, b.ravel(), b.ravel()),
    "polyval": lambda a, b: np.polyval(b.ravel(), a) if isinstance(a, np.ndarray) else np.polyval(a.ravel(), b),
    # (host coefficients are host data by design, as xp.polyval's: the host one is x)
    "extract": lambda a, b: np.extract(a, b),
    "compress": lambda a, b: np.compress(a.ravel() if a.ndim else a, b),
    "average": lambda a, b: np.average(a, weights=b),
    "cov": lambda a, b: np.cov(a, b),
    "corrcoef": lambda a, b: np.corrcoef(a, b),
    "histogram": lambda a, b: np.histogram(a, bins=b.ravel()),
    "percentile": lambda a, b: np.percentile(a, b),
    "meshgrid": lambda a, b: np.meshgrid(a, b),
    "broadcast_arrays": lambda a, b: np.broadcast_arrays(a, b),
    "copyto_dst": lambda a, b: np.copyto(*((a, b) if isinstance(a, np.ndarray) else (b, a))),
    "trapezoid": lambda a, b: np.trapezoid(a, b),
    "cross": lambda a, b: np.cross(a, b),
    "take": lambda a, b: np.take(b, a) if isinstance(a, np.ndarray) else np.take(a, b),  # (host ids: NumPy
    # dispatches on the array alone, so a distributed array of ids beside a host array is NumPy's own gather)
    "take_along_axis": lambda a, b: np.take_along_axis(a, b, axis=-1),
    "diff": lambda a, b: np.diff(a, prepend=b),
    "ediff1d": lambda a, b: np.ediff1d(a, to_end=b),
    "full_like": lambda a, b: np.full_like(a, b),
    # (the host one as where=, which NumPy's dispatcher does not look at for a host array)
    "sum_where": lambda a, b: np.sum(b, where=a > 0) if isinstance(a, np.ndarray) else np.sum(a, where=b > 0),
    "ufunc_out": lambda a, b: np.add(a, 1, out=b),
    "linalg.solve": lambda a, b: np.linalg.solve(a, b),
    "linalg.outer": lambda a, b: np.linalg.outer(a.ravel(), b.ravel()),
    "linalg.vecdot": lambda a, b: np.linalg.vecdot(a, b),
    "select": lambda a, b: np.select([a > 0], [b]),
    "bincount": lambda a, b: np.bincount(np.abs(a.ravel()).astype(np.int64), weights=b.ravel()),
    "pad": lambda a, b: (
        np.pad(b, [(1, 1)] * b.ndim, constant_values=a)
        if isinstance(a, np.ndarray)
        else np.pad(a, [(1, 1)] * a.ndim, constant_values=b)
    ),
}


def _refused(call, host_at: int) -> None:
    """``call()`` with the operand ``host_at`` a NumPy array raises the mixing ``DTypeError`` (a TypeError naming
    ``xp.asarray``), gathering nothing."""
    with no_gather(0), pytest.raises(TypeError) as info:
        call()
    err = info.value
    assert isinstance(err, sa.DTypeError), f"{type(err).__name__}: {err}"
    assert ("NumPy array" in str(err) and "xp.asarray" in str(err)) or "out=" in str(err), str(err)


@given(st.data())
@fuzz(60, ENV)
def test_host_numpy_operands_are_refused_everywhere(data):
    """A host NumPy array (1 or more dims) beside a distributed array, as any operand of a dispatched function or
    ufunc (first or not, alone or inside a list): the same typed refusal, never an implicit copy or gather."""
    mesh = data.draw(meshes())
    shape = data.draw(st.sampled_from([(3,), (4,), (2, 3), (3, 3)]))
    kind = data.draw(st.sampled_from(["ufunc", "outer", "function", "function"]))
    ints = kind != "function" and data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    hosts = [_values(rng, shape, "int64" if ints else "float64") + (3 if ints else 0) for _ in range(2)]
    dist = [data.draw(placed(h, mesh)) for h in hosts]
    at = data.draw(st.integers(0, 1))
    ops = [hosts[k] if k == at else dist[k] for k in range(2)]
    if kind in ("ufunc", "outer"):
        name = data.draw(st.sampled_from(UFUNCS_INT if ints else UFUNCS_FLOAT))
        ufunc = getattr(np, name)
        _refused(lambda: ufunc(*ops) if kind == "ufunc" else ufunc.outer(*ops), at)
        return
    name = data.draw(st.sampled_from(sorted(PAIRS)))
    if name == "cross" and shape[-1] != 3:
        return
    _refused(lambda: PAIRS[name](*ops), at)


# --------------------------------------------------------------------------------------------- ndarray methods


def _method_case(draw, a: np.ndarray):
    """(label, call(v)) of an ndarray method with random arguments, ``v`` a copy of the array (NumPy's or ours)."""
    nd = a.ndim
    name = draw(st.sampled_from(METHODS))
    ax = axis_of(draw, nd, none=True)
    kd = draw(st.booleans())
    if name in ("argmax", "argmin"):
        return name, lambda v: getattr(v, name)(axis=ax, keepdims=kd)
    if name in ("sum", "prod", "max", "min", "any", "all"):
        where = draw(st.sampled_from([None, "mask"]))
        kw = {"axis": ax, "keepdims": kd}
        if name in ("max", "min"):
            kw["initial"] = draw(st.sampled_from([None, -1, 2]))
            kw = {k: w for k, w in kw.items() if w is not None}
        if name in ("sum", "prod") and a.dtype != bool:
            kw["dtype"] = draw(st.sampled_from([None, np.float32, np.int64]))
        return name, lambda v: getattr(v, name)(**kw, **({"where": v > 0 if v.dtype != bool else v} if where else {}))
    if name == "clip":
        lo, hi = draw(st.sampled_from([(-1, 2), (None, 1), (0.5, None), (2, -1)]))
        return name, lambda v: v.clip(lo, hi)
    if name == "round":
        d = draw(st.sampled_from([0, 1, -1, 2]))
        return name, lambda v: v.round(d)
    if name == "astype":
        dt = draw(st.sampled_from([a.dtype, np.float32, np.int64, bool]))
        return name, lambda v: (lambda r: (r is v, r))(v.astype(dt, copy=False))
    if name == "fill":
        val = draw(st.sampled_from([1, 0, True, -2]))
        return name, lambda v: (v.fill(val), v)[1]
    if name == "item":
        if a.size == 0:
            return name, lambda v: v.item()
        k = draw(st.integers(-a.size, a.size - 1))
        return name, lambda v: v.item(k)
    if name == "tolist":
        return name, lambda v: v.tolist()
    if name in ("cumsum", "cumprod"):
        dt = draw(st.sampled_from([None, np.float64, np.int64]))
        return name, lambda v: getattr(v, name)(axis=ax, dtype=dt)
    if name == "nonzero":
        return name, lambda v: v.nonzero()
    if name == "searchsorted":
        side = draw(st.sampled_from(["left", "right"]))
        return name, lambda v: v.searchsorted(v[:3], side=side)  # (v sorted: the test sorts it)
    if name == "repeat":
        n = a.size if ax is None or not -nd <= ax < nd else a.shape[ax]
        reps = draw(st.sampled_from([0, 2, "list"]))
        reps = [k % 3 for k in range(n)] if reps == "list" else reps
        return name, lambda v: v.repeat(reps, axis=ax)
    if name == "squeeze":
        return name, lambda v: v.squeeze(axis=ax)
    if name == "swapaxes":
        other = axis_of(draw, nd)
        return name, lambda v: v.swapaxes(ax, other)
    if name in ("ravel", "flatten"):
        order = draw(st.sampled_from(["C", "F", "A", "K"]))
        return name, lambda v: getattr(v, name)(order)
    if name == "reshape":
        shape = draw(
            st.sampled_from([(-1,), (a.size,), (1, -1), (-1, 1), (*reversed(a.shape),), (2, -1), (a.size + 1,)])
        )
        order = draw(st.sampled_from(["C", "A"]))  # (order="F" is refused: tests/test_protocols.py)
        return name, lambda v: v.reshape(shape, order=order)
    if name == "T":
        return name, lambda v: v.T if v.ndim == 2 else v.mT
    if name == "sort":
        return name, lambda v: (v.sort(axis=ax), v)[1]
    raise AssertionError(name)


METHODS = (
    *("argmax", "argmin", "sum", "prod", "max", "min", "any", "all", "clip", "round", "astype", "fill", "item"),
    *("tolist", "cumsum", "cumprod", "nonzero", "searchsorted", "repeat", "squeeze", "swapaxes", "ravel"),
    *("flatten", "T", "sort", "reshape"),
)


@given(st.data())
@fuzz(60, ENV)
def test_ndarray_methods(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(max_dims=3))
    label, call = _method_case(data.draw, a)
    if label == "searchsorted":
        a = np.sort(a, axis=None)
    x = data.draw(placed(a, mesh))
    if label == "round" and a.dtype == bool:
        return  # (NumPy rounds bools to float16, a dtype the library refuses to round into: documented)
    # (x.tolist() is an explicit gather; xp.searchsorted allgathers a small sorted array by design)
    gather = None if label == "tolist" else 10**6 if label == "searchsorted" else 64
    if label in ("argmax", "argmin"):  # (a split axis: each device's (value, index) pairs of the result gathered)
        gather = 64 + 2 * (a.size // max(min(a.shape, default=1), 1))
    run(lambda: call(a.copy()), lambda: call(x), gather=gather)


# --------------------------------------------------------------------------------------------- ufunc methods

REDUCING = ("add", "multiply", "maximum", "minimum", "logical_and", "logical_or", "subtract", "bitwise_or")
OUTER = ("add", "multiply", "maximum", "less", "subtract", "arctan2", "logical_xor", "power")


@given(st.data())
@fuzz(60, ENV)
def test_ufunc_methods(data):
    mesh = data.draw(meshes())
    a = data.draw(host_arrays(max_dims=3))
    method = data.draw(st.sampled_from(["reduce", "reduce", "accumulate", "outer", "at", "reduceat"]))
    x = data.draw(placed(a, mesh))
    if method == "reduce":
        ufunc = getattr(np, data.draw(st.sampled_from(REDUCING)))
        kw = {"axis": data.draw(st.sampled_from([0, -1, None, (0, -1), 1, ()]))}
        if data.draw(st.booleans()):
            kw["keepdims"] = True
        if data.draw(st.booleans()):
            kw["dtype"] = data.draw(st.sampled_from([np.float64, np.float32, np.int64, bool]))
        if data.draw(st.booleans()):
            kw["initial"] = data.draw(st.sampled_from([0, 1, -2, 2.5]))
        where = data.draw(st.booleans())
        run(
            lambda: ufunc.reduce(a, **kw, **({"where": a > 0} if where else {})),
            lambda: ufunc.reduce(x, **kw, **({"where": x > 0} if where else {})),
            refusal=ufunc in (np.subtract, np.bitwise_or),  # (no counterpart: NumPy's TypeError)
        )
    elif method == "accumulate":
        ufunc = getattr(np, data.draw(st.sampled_from(["add", "multiply", "maximum"])))
        axis = axis_of(data.draw, a.ndim, none=True)
        dtype = data.draw(st.sampled_from([None, np.float64, np.int64]))
        run(
            lambda: ufunc.accumulate(a, axis=axis, dtype=dtype),
            lambda: ufunc.accumulate(x, axis=axis, dtype=dtype),
        )
    elif method == "outer":
        ufunc = getattr(np, data.draw(st.sampled_from(OUTER)))
        b = data.draw(host_arrays(max_dims=2))
        y = data.draw(placed(b, mesh))
        run(lambda: ufunc.outer(a, b), lambda: ufunc.outer(x, y))
    elif method == "at":
        ufunc = getattr(np, data.draw(st.sampled_from(["add", "subtract", "maximum"])))
        if a.ndim == 0 or a.shape[0] == 0:
            return
        rng = np.random.default_rng(data.draw(st.integers(0, 99)))
        ids = rng.integers(-a.shape[0], a.shape[0], data.draw(st.integers(0, 6)))
        # (values NumPy's same_kind casting takes into a's dtype: the library's ufunc.at refuses the others, where
        # NumPy's casts unsafely, np.add.at(int8s, i, 2.5): reported)
        fits = [v for v in (1, 2.5, True) if np.can_cast(np.result_type(a.dtype, v), a.dtype, "same_kind")]
        value = data.draw(st.sampled_from(fits))
        host_ids = data.draw(st.booleans())
        xi = ids.tolist() if host_ids else xp.asarray(ids, device=mesh)

        def on_numpy():
            out = a.copy()
            ufunc.at(out, ids, value)
            return out

        def on_mesh():
            ufunc.at(x, xi, value)
            return x

        # (subtract.at refuses a bool value even into numbers: reported; maximum.at dispatches since round 14)
        run(on_numpy, on_mesh, refusal=ufunc is np.subtract and value is True)
    else:
        ufunc = getattr(np, data.draw(st.sampled_from(["add", "maximum", "subtract"])))
        if a.ndim == 0 or a.shape[0] == 0:
            return
        # (add/maximum.reduceat dispatch since round 15; subtract.reduceat has no counterpart: NumPy's TypeError)
        run(
            lambda: ufunc.reduceat(a, [0], axis=0), lambda: ufunc.reduceat(x, [0], axis=0), refusal=ufunc is np.subtract
        )


# --------------------------------------------------------------------------------------------- regressions


def _on_2x2(a) -> xp.Array:
    return xp.asarray(np.asarray(a), device=_mesh({"row": 2, "col": 2}))


def test_regression_extract_compress_argwhere_dispatch():
    """``np.extract``/``np.compress`` had no dispatch, nor ``np.argwhere`` of a 0-d array (NumPy's TypeError)."""
    a = np.arange(15.0).reshape(5, 3) % 4
    x = _on_2x2(a)
    with no_gather():
        got = [np.extract(x > 1, x), np.compress([False, True, True], x, axis=1), np.compress(x[:, 0] > 0, x, axis=0)]
        zero_d = [np.argwhere(x[1, 1]), np.argwhere(x[0, 0]), np.compress([True], x[1, 1])]
    same(got, [np.extract(a > 1, a), np.compress([False, True, True], a, axis=1), np.compress(a[:, 0] > 0, a, axis=0)])
    same(zero_d, [np.argwhere(a[1, 1]), np.argwhere(a[0, 0]), np.compress([True], a[1, 1])])
    with pytest.raises(IndexError):
        np.compress([False] * 5 + [True], x, axis=0)  # (true past the axis: NumPy's IndexError)


def test_regression_host_numpy_arrays_refused_in_first_position():
    """A host NumPy array as the first operand went through: ``np.kron(host, x)``, ``np.convolve(host, x)`` and
    ``np.isin(host, x)`` were computed (an implicit copy onto the mesh, where ``np.kron(x, host)`` was refused),
    ``np.concatenate([host, x])``/``np.tensordot(host, x)`` named another conversion, ``np.einsum`` and
    ``np.copyto(host, x)`` raised NumPy's TypeError of no dispatch, ``np.add(h, 1, out=x)`` named the named API."""
    h = np.ones(3)
    x = _on_2x2([1.0, 2.0, 3.0])
    calls = [
        lambda: np.kron(h, x), lambda: np.convolve(h, x), lambda: np.isin(h, x), lambda: np.concatenate([h, x]),
        lambda: np.tensordot(h, x, axes=1), lambda: np.einsum("i,i->", x, h), lambda: np.copyto(h, x),
        lambda: np.add(h, 1, out=x), lambda: np.stack([h, x]), lambda: np.linalg.outer(h, x),
    ]  # fmt: skip
    for call in calls:
        with no_gather(0), pytest.raises(sa.DTypeError, match=r"NumPy array.*xp\.asarray"):
            call()


def test_regression_copyto_takes_host_source():
    """``np.copyto(x, host)`` is the write ``x[...] = host``, which takes host data; it was refused."""
    x = _on_2x2(np.zeros((2, 3)))
    np.copyto(x, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.numpy(), np.tile([1.0, 2.0, 3.0], (2, 1)))
    with pytest.raises(sa.DTypeError):
        np.copyto(x, np.array([1.5, 2.5, 3.5]).astype(np.complex128))  # (same_kind refuses complex -> float)


def test_regression_ndarray_sort_axis_none_is_numpys_typeerror():
    """``x.sort(axis=None)`` complained about a write's sizes (a DimensionError); NumPy raises TypeError."""
    x = _on_2x2(np.arange(6.0).reshape(2, 3)[::-1].copy())
    with pytest.raises(sa.DTypeError, match="axis=None"):  # (a TypeError)
        x.sort(axis=None)


def test_regression_ravel_fortran_order_and_repeat_counts():
    """``x.ravel("F")``/``x.flatten("F")`` were refused, and ``np.repeat(x, [list of counts], axis)`` too."""
    a = np.arange(15.0).reshape(5, 3)
    x = _on_2x2(a)
    with no_gather():
        got = [x.ravel("F"), x.flatten("F"), np.ravel(x, order="F"), np.repeat(x, [1, 0, 2], axis=1), x.repeat([2])]
    same(got, [a.ravel("F"), a.flatten("F"), np.ravel(a, order="F"), np.repeat(a, [1, 0, 2], axis=1), a.repeat([2])])
    with pytest.raises(ValueError):
        np.repeat(x, [1, 2], axis=1)  # (neither one count nor one per entry: NumPy's ValueError)


def test_regression_swapaxes_none_and_zero_d_axis():
    """``x.swapaxes(None, 0)`` raised an untyped ValueError of tuple unpacking (NumPy: TypeError); axis 0 of a 0-d
    array, which NumPy's legacy functions take (``np.argmax(z, axis=0)``, ``np.sum``, ``np.cumsum``,
    ``z.squeeze(0)``, ``np.take``, ``np.repeat``, ``np.argsort``), was out of bounds."""
    with pytest.raises(sa.DTypeError):
        _on_2x2(np.ones((2, 3))).swapaxes(None, 0)
    z, h = _on_2x2(2.5), np.array(2.5)
    calls = [
        lambda v: np.argmax(v, axis=0), lambda v: np.sum(v, axis=-1), lambda v: np.cumsum(v, axis=0),
        lambda v: v.squeeze(axis=0), lambda v: np.take(v, [0, 0], axis=0), lambda v: np.repeat(v, 2, axis=0),
        lambda v: np.argsort(v, axis=0), lambda v: np.any(v, axis=0), lambda v: np.argmin(v, axis=0, keepdims=True),
    ]  # fmt: skip
    for call in calls:
        same(call(z), call(h))


def test_regression_ufunc_reduce_dtype_rules():
    """``np.logical_and.reduce(x, dtype=float64)`` computed in bool (NumPy has no such loop: TypeError);
    ``np.add.accumulate`` of a 0-d array raised a ValueError (NumPy: TypeError); a masked ``minimum.reduce`` with
    ``dtype=float64`` filled the masked entries with ``initial`` cast to the input's integer dtype (2.5 -> 2)."""
    a = np.array([[0, 3, 1], [4, 0, 2]])
    x = _on_2x2(a)
    with pytest.raises(sa.DTypeError):
        np.logical_and.reduce(x, dtype=np.float64)
    with pytest.raises(sa.DTypeError):
        np.add.accumulate(x[0, 0])
    kw = {"axis": 1, "dtype": np.float64, "initial": 2.5}
    same(np.minimum.reduce(x, where=x > 2, **kw), np.minimum.reduce(a, where=a > 2, **kw))


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}], ids=str)
def test_regression_np_unique_with_axis_of_a_positional_array(shape):
    """``np.unique(x, axis=k)`` of a positional array was refused (``ArgumentError``) while the named form worked:
    it is NumPy's (sorted distinct slices, the returns as asked, positional results), and 1-D arrays take the flat
    path as NumPy does."""
    mesh = sa.Mesh(shape)
    a = np.array([[1, 2], [0, 5], [1, 2], [0, 5], [3, 3]])
    x = xp.asarray(a, device=mesh)
    for axis in (0, 1, -1):
        for kw in ({}, {"return_index": True, "return_inverse": True, "return_counts": True}):
            got, want = np.unique(x, axis=axis, **kw), np.unique(a, axis=axis, **kw)
            got, want = (got, want) if kw else ((got,), (want,))
            for g, w in zip(got, want):
                assert type(g) is xp.Array and g.dims == tuple(f"dim{i}" for i in range(g.ndim))
                np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_array_equal(np.unique(xp.asarray([3, 1, 3], device=mesh), axis=0).numpy(), [1, 3])
    with pytest.raises(sa.OutOfBoundsError):
        np.unique(xp.asarray(5.0, device=mesh), axis=0)


def test_regression_np_average_with_weights_summing_to_zero_raises():
    """``np.average(x, axis=1, weights=w)`` with ``w`` summing to zero returned NaN (``[1, -1]``: -inf); NumPy raises
    ``ZeroDivisionError``: a typed ``ArgumentError`` naming the weights now, one boolean read."""
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
        for w in ([0.0, 0.0], [1.0, -1.0]):
            with pytest.raises(sa.ArgumentError, match="weights sum to zero"):
                np.average(x, axis=1, weights=xp.asarray(w))
        np.testing.assert_array_equal(np.average(x, axis=1, weights=xp.asarray([1.0, 3.0])).numpy(), [1.75, 3.75])


@pytest.mark.parametrize("dtype", ["float64", "int8", "uint8"])
def test_regression_np_subtract_at_with_boolean_values_into_numbers(dtype):
    """``np.subtract.at(x, ids, True)`` into a number array was refused (the refusal of ``bool - bool`` looked at the
    values only): True is 1 of ``x``'s dtype, as NumPy subtracts it (repeated ids every time, uint8 wrapping)."""
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        for ids, value in (([0, 0, 3], True), ([1, 2], np.array([True, False]))):
            x, a = xp.zeros(5, dtype=getattr(xp, dtype)), np.zeros(5, dtype)
            np.subtract.at(x, ids, value)
            np.subtract.at(a, ids, value)
            np.testing.assert_array_equal(x.numpy(), a)
            assert x.dtype == a.dtype
