"""A walk over NumPy's public API on positional arrays (issue 30, item 1).

Every function of ``np``, ``np.linalg`` and ``np.fft`` that takes part in
``__array_function__``, and every ufunc of ``np`` with its methods
(``__call__``, ``reduce``, ``accumulate``, ``outer``, ``reduceat``, ``at``), is
called on ``shardarray.array_api`` arrays on a 2x2 mesh (both axes split,
uneven blocks: 5 rows over 2 devices, 3 columns over 2). Each entry either

* **dispatches**: the result is a positional ``Array`` (or the plain value NumPy
  returns: a bool, a shape, ...) equal to NumPy's on the gathered input, or
* **raises TypeError** (NumPy's, for an entry without a counterpart) with no
  gather: no ``allgather`` in the comm log and no ``numpy()``/``__array__``.

Arguments come from each function's signature: required parameters get a
value by their name (``a``/``x``/``arr``... an array, ``axis`` 0, ``shape`` a
compatible shape, ...), trying a 2-D, a 1-D, a square and an integer array in
turn until NumPy itself accepts them. An entry is skipped, with its reason in
``SKIPPED`` or in the skip message, when no generated arguments are accepted by
NumPy (data-dependent arguments such as ``np.choose``'s index array, callables
such as ``np.apply_along_axis``'s, or names this generator does not know).
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

DISPATCHER = type(np.sum)
MESH_SHAPE = {"row": 2, "col": 2}

#: entries whose arguments cannot be generated from the signature, and why
SKIPPED: dict[str, str] = {
    "apply_along_axis": "takes a Python callable",
    "apply_over_axes": "takes a Python callable",
    "piecewise": "takes a list of callables",
    "vectorize": "takes a Python callable",
    "frompyfunc": "takes a Python callable",
    "einsum_path": "returns a contraction plan (strings), not arrays",
    "choose": "needs an integer index array selecting among choices",
    "select": "needs lists of conditions and choices of one shape",
    "put": "writes in place at data-dependent indices into a NumPy array",
    "place": "writes in place at a mask into a NumPy array",
    "putmask": "writes in place at a mask into a NumPy array",
    "put_along_axis": "writes in place at data-dependent indices",
    "fill_diagonal": "writes in place into its argument",
    "copyto": "writes in place; checked in tests/test_protocols.py",
    "shares_memory": "asks about NumPy buffers",
    "may_share_memory": "asks about NumPy buffers",
    "save": "writes a file",
    "savez": "writes a file",
    "savez_compressed": "writes a file",
    "savetxt": "writes a file",
    "array2string": "formats a NumPy array",
    "array_repr": "formats a NumPy array",
    "array_str": "formats a NumPy array",
    "printoptions": "a context manager",
}

#: per-function argument values where the name alone does not say enough
OVERRIDES: dict[str, dict[str, Callable[[np.ndarray], Any]]] = {
    "broadcast_to": {"shape": lambda a: (2, *a.shape)},
    "reshape": {"shape": lambda a: (a.size,)},
    "resize": {"new_shape": lambda a: (a.size,)},
    "split": {"indices_or_sections": lambda a: [2]},
    "array_split": {"indices_or_sections": lambda a: 2},
    "hsplit": {"indices_or_sections": lambda a: [1]},
    "vsplit": {"indices_or_sections": lambda a: [2]},
    "dsplit": {"indices_or_sections": lambda a: [1]},
    "insert": {"obj": lambda a: 1, "values": lambda a: 0.5},
    "delete": {"obj": lambda a: 1},
    "pad": {"pad_width": lambda a: 1},
    "einsum": {},
    "tile": {"reps": lambda a: 2},
    "take": {"indices": lambda a: [0, 2, 1]},
    "take_along_axis": {"indices": lambda a: np.argsort(a, axis=-1)},
    # searchsorted of an unsorted array is undefined (NumPy's binary search and CuPy's kernel, which returns len(a)
    # for a value above a[-1], answer differently): search a sorted one
    "searchsorted": {"a": lambda a: np.sort(a, axis=None), "v": lambda a: np.array([0.3, 0.6])},
    "matrix_power": {"n": lambda a: 2},
    "tensorsolve": {},
}

#: results whose sign or order is a convention (decompositions): compared by absolute value
BY_ABS = {"linalg.qr", "linalg.svd", "linalg.eigh", "linalg.eig"}
#: results whose values are unspecified (uninitialised memory): compared by shape and dtype
SHAPE_ONLY = {"empty_like"}


def _mesh():
    return sa.Mesh(MESH_SHAPE)


def _candidates(space: str) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    two = rng.uniform(0.1, 0.9, (5, 3))
    one = rng.uniform(0.1, 0.9, 7)
    m = rng.uniform(0.1, 0.9, (5, 5))
    square = m @ m.T + 5 * np.eye(5)  # symmetric positive definite, for linalg
    ints = np.array([3, 1, 2, 3, 0, 4, 1])
    return [square, two, one, ints] if space == "linalg" else [two, one, square, ints]


ARRAY_NAMES = {"a", "x", "x1", "x2", "ar", "ar1", "ar2", "arr", "m", "y", "b", "v", "array", "ary", "A", "B", "val",
               "prototype", "a1", "a2", "c", "p", "u", "w", "dst", "src", "x0", "from_", "element", "test_elements",
               "arys", "args", "xi", "arrays_and_dtypes", "operands"}
SEQ_NAMES = {"arrays", "tup", "xs", "seq"}


def _value(func_name: str, name: str, base: np.ndarray, others: list[np.ndarray]) -> Any:
    """A NumPy value for the required parameter ``name`` (the walk turns arrays into Arrays), or raise LookupError."""
    override = OVERRIDES.get(func_name, {})
    if name in override:
        return override[name](base)
    if name in ARRAY_NAMES:
        return others.pop(0) if others else base
    if name in SEQ_NAMES:
        return [base, base + 1]
    if name in ("condition", "mask", "condlist"):
        return base > base.mean()
    fixed = {"axis": 0, "source": 0, "destination": -1, "axis1": 0, "axis2": -1, "repeats": 2, "reps": 2,
             "shift": 1, "n": 2, "k": 1, "q": 0.5, "fill_value": 7.0, "dtype": "float32", "N": 3, "to": "float64",
             "indices": [0, 1], "decimals": 1, "shape": base.shape, "newshape": base.shape, "values": 0.5,
             "subscripts": "ij->ji", "kth": 1, "deg": 1, "bins": 3, "ind": [0, 1], "obj": 1, "ord": 2}
    if name in fixed:
        return fixed[name]
    raise LookupError(name)


def _required(func: Callable[..., Any]) -> list[inspect.Parameter]:
    params = inspect.signature(func).parameters.values()
    return [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _to_xp(value: Any, mesh: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return xp.asarray(value, device=mesh)
    if isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
        return [xp.asarray(v, device=mesh) for v in value]
    return value


@contextlib.contextmanager
def _counting_gathers(counter: list[str]):
    real_numpy, real_array = sa.ShardArray.numpy, sa.ShardArray.__array__

    def from_repr() -> bool:  # NumPy's TypeError message shows repr(x): small arrays print their values
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_name in ("__repr__", "array_repr"):
                return True
            frame = frame.f_back
        return False

    def numpy(self, *a, **k):
        if not from_repr():
            counter.append("numpy")
        return real_numpy(self, *a, **k)

    def array(self, *a, **k):
        if not from_repr():
            counter.append("__array__")
        return real_array(self, *a, **k)

    sa.ShardArray.numpy, sa.ShardArray.__array__ = numpy, array
    try:
        yield
    finally:
        sa.ShardArray.numpy, sa.ShardArray.__array__ = real_numpy, real_array


def _compare(got: Any, want: Any, label: str, by_abs: bool) -> None:
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{label}: {type(got)} vs {type(want)}"
        for g, w in zip(got, want):
            _compare(g, w, label, by_abs)
        return
    if isinstance(want, np.ndarray) or (isinstance(got, sa.ShardArray) and isinstance(want, np.generic)):
        assert isinstance(got, xp.Array), f"{label}: returned {type(got).__name__}, not a positional Array"
        g = np.asarray(got)
        w = np.asarray(want)
        assert g.shape == w.shape, f"{label}: shape {g.shape} vs NumPy's {w.shape}"
        if label.removeprefix("np.") in SHAPE_ONLY:
            assert g.dtype == w.dtype, f"{label}: dtype {g.dtype} vs NumPy's {w.dtype}"
        elif w.dtype.kind in "fc" or g.dtype.kind in "fc":
            g, w = (np.abs(g), np.abs(w)) if by_abs else (g, w)
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=label)
        else:
            np.testing.assert_array_equal(g, w, err_msg=label)
        return
    assert not isinstance(got, sa.ShardArray) or got.ndim == 0, f"{label}: {type(got)} for NumPy's {type(want)}"
    g = got.item() if isinstance(got, sa.ShardArray) else got
    if isinstance(want, (float, complex, np.floating, np.complexfloating)):
        np.testing.assert_allclose(g, want, rtol=1e-6, err_msg=label)
    else:
        assert g == want, f"{label}: {g!r} vs NumPy's {want!r}"


def _run(label: str, call_np: Callable[[], Any], call_sa: Callable[[], Any], by_abs: bool = False) -> str:
    """Run one entry: "dispatch", "typeerror"; raises AssertionError for a wrong result or a gather."""
    gathers: list[str] = []
    with sa.comm_log() as log, _counting_gathers(gathers):
        try:
            got = call_sa()
        except TypeError as e:
            moved = [r.op for r in log.records if r.op == "allgather"]
            assert not gathers and not moved, f"{label}: TypeError ({e}) after a gather: {gathers or moved}"
            return "typeerror"
    _compare(got, call_np(), label, by_abs)
    return "dispatch"


# ------------------------------------------------------------------ the entries


def _functions() -> list[tuple[str, str, Callable[..., Any]]]:
    """Each dispatched function once, by its own name where the module has it (concatenate, not concat)."""
    out, seen = [], set()
    for space, mod in (("", np), ("linalg", np.linalg), ("fft", np.fft)):
        for name in sorted(dir(mod)):
            f = getattr(mod, name)
            if name.startswith("_") or not isinstance(f, DISPATCHER) or id(f) in seen:
                continue
            seen.add(id(f))
            own = f.__name__ if getattr(mod, f.__name__, None) is f else name
            out.append((space, own, f))
    return out


def _ufuncs() -> list[tuple[str, np.ufunc]]:
    out, seen = [], set()
    for name in sorted(dir(np)):
        f = getattr(np, name)
        if isinstance(f, np.ufunc) and id(f) not in seen:
            seen.add(id(f))
            out.append((name, f))
    return out


FUNCTIONS = _functions()
UFUNCS = _ufuncs()
UFUNC_METHODS = ("__call__", "reduce", "accumulate", "outer", "reduceat", "at")
#: (name, ufunc, method): NumPy defines reduce/accumulate/outer/reduceat for binary ufuncs with one output only
UFUNC_ENTRIES = [(n, u, m) for n, u in UFUNCS for m in UFUNC_METHODS
                 if m in ("__call__", "at") or (u.nin == 2 and u.nout == 1 and u.signature is None)]


def _function_entry(space: str, name: str, func: Callable[..., Any]) -> tuple[str, str]:
    """(outcome, detail): outcome "dispatch", "typeerror" or "skip"."""
    label = f"np.{space + '.' if space else ''}{name}"
    if name in SKIPPED:
        return "skip", SKIPPED[name]
    mesh = _mesh()
    reasons = []
    for base in _candidates(space):
        others = [base, base * 0.5 + 0.2]
        try:
            values = [_value(name, p.name, base, others) for p in _required(func)]
        except LookupError as e:
            return "skip", f"no generic value for the required parameter {e.args[0]!r}"
        if not any(isinstance(v, np.ndarray) or (isinstance(v, list) and v and isinstance(v[0], np.ndarray))
                   for v in values):
            values = [base, *values[1:]] if values else [base]
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                func(*values)
        except Exception as e:  # noqa: BLE001 - NumPy refuses these arguments: try the next array
            reasons.append(f"{type(e).__name__}")
            continue
        sa_values = [_to_xp(v, mesh) for v in values]

        def call_np(values=values):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return func(*values)

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return _run(label, call_np, lambda: func(*sa_values), by_abs=label.removeprefix("np.") in BY_ABS), ""
    return "skip", f"NumPy refuses every generated argument set ({', '.join(reasons)})"


def _ufunc_entry(name: str, ufunc: np.ufunc, method: str) -> tuple[str, str]:
    label = f"np.{name}.{method}" if method != "__call__" else f"np.{name}"
    mesh = _mesh()
    rng = np.random.default_rng(1)
    tries = [rng.uniform(0.1, 0.9, (5, 3)), rng.integers(1, 6, (5, 3)), rng.integers(0, 2, (5, 3)).astype(bool)]
    for base in tries:
        other = base[::-1].copy()
        if method == "__call__":
            values = [base, other][: ufunc.nin]
        elif method in ("reduce", "accumulate"):
            values = [base]
        elif method == "outer":
            values = [base[:, 0].copy(), other[0].copy()]
        elif method == "reduceat":
            values = [base, [0, 2]]
        else:  # at
            values = [base.copy(), [0, 2]] + ([other[0]] if ufunc.nin == 2 else [])
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                getattr(ufunc, method)(*[v.copy() if isinstance(v, np.ndarray) else v for v in values])
        except Exception:  # noqa: BLE001 - NumPy refuses this dtype or method: try the next
            continue
        sa_values = [_to_xp(v, mesh) for v in values]

        def call_np(values=values):
            out = getattr(ufunc, method)(*values)
            return values[0] if method == "at" else out  # ufunc.at writes into its first operand

        def call_sa():
            out = getattr(ufunc, method)(*sa_values)
            return sa_values[0] if method == "at" else out

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return _run(label, call_np, call_sa), ""
    return "skip", "NumPy refuses the method for float, int and bool arrays"


# ------------------------------------------------------------------ tests

#: entry -> outcome, filled by the tests below (the summary computes what a -k selection left out)
OUTCOMES: dict[str, str] = {}


@pytest.mark.parametrize(("space", "name", "func"), FUNCTIONS, ids=[f"{s}.{n}" if s else n for s, n, _ in FUNCTIONS])
def test_numpy_function_dispatches_or_raises_typeerror(space, name, func):
    outcome, detail = _function_entry(space, name, func)
    OUTCOMES[f"{space + '.' if space else ''}{name}"] = outcome
    if outcome == "skip":
        pytest.skip(detail)


@pytest.mark.parametrize(("name", "ufunc", "method"), UFUNC_ENTRIES, ids=[f"{n}.{m}" for n, _, m in UFUNC_ENTRIES])
def test_numpy_ufunc_dispatches_or_raises_typeerror(name, ufunc, method):
    outcome, detail = _ufunc_entry(name, ufunc, method)
    OUTCOMES[name if method == "__call__" else f"{name}.{method}"] = outcome
    if outcome == "skip":
        pytest.skip(detail)


#: what the issue names and an experienced NumPy user expects to work: these must dispatch (not TypeError)
MUST_DISPATCH = {
    "reshape", "tensordot", "isclose", "allclose", "outer", "dot", "vstack", "hstack", "column_stack", "ravel",
    "argmax", "argmin", "max", "sum", "mean", "std", "var", "cumsum", "concatenate", "stack", "transpose", "where",
    "clip", "sort", "argsort", "array_equal", "squeeze", "expand_dims", "moveaxis", "linalg.inv", "linalg.norm",
    "linalg.solve", "linalg.det", "linalg.cholesky", "linalg.qr", "linalg.svd", "linalg.eigh", "fft.fft",
    "fft.ifft", "fft.rfft", "fft.fft2", "fft.fftn", "fft.fftshift", "exp", "add", "maximum", "add.reduce",
    "maximum.reduce", "add.accumulate", "multiply.accumulate", "multiply.outer", "shape", "ndim", "size",
    "add.reduceat", "maximum.reduceat", "multiply.at", "divide.at", "negative.at", "bitwise_or.at",
}


def test_walk_summary():
    """Counts of the walk (printed with -s) and the names that must dispatch."""
    outcome_of = dict(OUTCOMES)
    for space, name, func in FUNCTIONS:
        key = f"{space + '.' if space else ''}{name}"
        if key not in outcome_of:
            outcome_of[key] = _function_entry(space, name, func)[0]
    for name, ufunc, method in UFUNC_ENTRIES:
        key = name if method == "__call__" else f"{name}.{method}"
        if key not in outcome_of:
            outcome_of[key] = _ufunc_entry(name, ufunc, method)[0]
    counts = {k: sum(v == k for v in outcome_of.values()) for k in ("dispatch", "typeerror", "skip")}
    print(f"\nNumPy API walk on a 2x2 mesh: {counts}")
    missing = sorted(n for n in MUST_DISPATCH if outcome_of.get(n) != "dispatch")
    assert not missing, f"these must dispatch: {[(n, outcome_of.get(n)) for n in missing]}"
    assert outcome_of["maximum.accumulate"] == "dispatch"
    assert counts["dispatch"] >= 200
