"""NumPy ufuncs on named ShardArrays: ``np.exp(x)`` is ``sa.exp(x)``, ``np.add.reduce(x, axis=0)`` is ``sa.sum``.

A ufunc maps by its name to the ``shardarray`` function of that name (or its
standard spelling, ``common.UFUNC_ALIASES``), else to the ShardArray operator
(``np.add`` -> ``x + y``). ``reduce`` of ``add``/``multiply``/``maximum``/
``minimum``/``logical_and``/``logical_or`` is ``sa.sum``/``prod``/``max``/``min``/
``all``/``any``; ``accumulate`` of ``add``/``multiply`` is ``sa.cumsum``/``cumprod``,
of ``maximum``/``minimum``/``fmax``/``fmin`` and the ``logical_*``/``bitwise_*``
ufuncs the running value of ``ops.reduction.scan.accumulate`` (NumPy's dtypes;
the running extremes differentiable). Positional axes are dims: axis ``k`` of
``x`` is ``x.dims[k]``. The other ufuncs and methods (``np.fmax``, ``np.gcd``,
``np.bitwise_count``, ``np.logical_and`` of numbers, ``np.bitwise_or.reduce``,
``np.multiply.outer``, ``np.add.reduceat``, ``np.add.at``...) run through the
positional dispatch with their operands aligned by dim name
(``named_bridge.call_ufunc``); a gufunc without an ``sa`` function (``np.vecdot``,
``np.matvec``: core axes by position) and a method the positional side lacks
raise ``sa.DTypeError`` naming ``xp.asarray(x)``.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
    >>> np.add.reduce(x, axis=0).dims, np.asarray(np.add.accumulate(x, axis=1))[0]
    (('io',), array([0., 1.]))
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.common import dims_arg
from ..errors import ArgumentError, DTypeError
from ..ops.manipulation.structure import astype
from ..ops.reduction.scan import ACCUMULATES, LOGICAL, accumulate
from .common import HOOKS, UFUNC_ALIASES, UFUNC_REDUCTIONS, dtype_loop, foreign, mixing_error, not_numpys, same, short
from .named_bridge import call_ufunc, refusal

# NumPy ufunc name -> (ShardArray method, reflected method): the operators, used when ``shardarray`` has no function
UFUNC_OPERATORS: dict[str, tuple[str, str | None]] = {
    "add": ("__add__", "__radd__"),
    "subtract": ("__sub__", "__rsub__"),
    "multiply": ("__mul__", "__rmul__"),
    "divide": ("__truediv__", "__rtruediv__"),
    "true_divide": ("__truediv__", "__rtruediv__"),
    "floor_divide": ("__floordiv__", "__rfloordiv__"),
    "remainder": ("__mod__", "__rmod__"),
    "power": ("__pow__", "__rpow__"),
    "matmul": ("__matmul__", "__rmatmul__"),
    "bitwise_and": ("__and__", "__rand__"),
    "bitwise_or": ("__or__", "__ror__"),
    "bitwise_xor": ("__xor__", "__rxor__"),
    "left_shift": ("__lshift__", "__rlshift__"),
    "right_shift": ("__rshift__", "__rrshift__"),
    "greater": ("__gt__", "__lt__"),
    "greater_equal": ("__ge__", "__le__"),
    "less": ("__lt__", "__gt__"),
    "less_equal": ("__le__", "__ge__"),
    "equal": ("__eq__", "__eq__"),
    "not_equal": ("__ne__", "__ne__"),
    "negative": ("__neg__", None),
    "positive": ("__pos__", None),
    "absolute": ("__abs__", None),
    "invert": ("__invert__", None),
}

#: the ufuncs whose ``sa`` function takes bools only (NumPy's take any dtype: their truth values)
LOGICAL_UFUNCS = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})

#: why a gufunc (``np.vecdot``, ``np.matvec``...) without an ``sa`` function is refused on named arrays
GUFUNC_WHY = "its core axes are positions (the last ones); contract dims by name with sa.einsum or x @ y"

#: ufuncs whose ``sa`` counterpart keeps a dtype NumPy's loop converts (``sa.round`` keeps integers, ``np.rint``
#: gives floats; ``np.conjugate`` of bools is int8): their operand is cast to the loop's dtype first
LOOP_DTYPE = frozenset({"rint", "conjugate"})

# ufunc.accumulate -> the shardarray scan (the other associative ufuncs: scan.ACCUMULATES, scan.accumulate)
UFUNC_ACCUMULATIONS: dict[str, str] = {"add": "cumsum", "multiply": "cumprod"}

_NEUTRAL: dict[str, Any] = {
    "where": True,
    "casting": "same_kind",
    "order": "K",
    "subok": True,
    "signature": None,
    "axis": None,
    "keepdims": False,
    "initial": np._NoValue,
}


def _operand(a: Any, what: str, i: int, ref: Any) -> Any:
    """A ufunc operand as shardarray takes it: 0-d NumPy arrays become scalars; other NumPy arrays are refused."""
    if isinstance(a, np.ndarray):
        if a.ndim == 0:
            return a[()]
        raise mixing_error(what, a, i, ref)
    return a


def check_ufunc_kwargs(what: str, kwargs: dict[str, Any]) -> Any:
    """Refuse ``out=`` and other keywords shardarray does not honour; returns ``dtype`` (or None)."""
    out = kwargs.pop("out", None)
    if out is not None and any(o is not None for o in (out if isinstance(out, tuple) else (out,))):
        raise DTypeError(
            f"{what}: out= is not supported on named ShardArrays (they are immutable); use the returned array, "
            f"e.g. y = {what}(x) instead of {what}(x, out=y)"
        )
    dtype = kwargs.pop("dtype", None)
    for key, value in kwargs.items():
        if key in _NEUTRAL and (value is _NEUTRAL[key] or same(value, _NEUTRAL[key])):
            continue
        raise ArgumentError(
            f"{what}: the keyword {key}={short(value)} is not supported on ShardArrays; call it without {key}= "
            f"(or gather explicitly with np.asarray(x) and use NumPy)"
        )
    return dtype


def array_ufunc(ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``ShardArray.__array_ufunc__``: the ufunc as a shardarray op, or NotImplemented (NumPy raises TypeError)."""
    name = ufunc.__name__
    what = f"np.{name}" if method == "__call__" else f"np.{name}.{method}"
    if foreign(inputs):
        return NotImplemented
    if getattr(np, name, None) is not ufunc:
        raise not_numpys(ufunc, "a ShardArray")
    ref = next((a for a in inputs if isinstance(a, ShardArray)), None)
    if method == "__call__":
        fn = HOOKS.lookup(name) or (HOOKS.lookup(UFUNC_ALIASES[name]) if name in UFUNC_ALIASES else None)
        if ufunc.signature is not None and fn is None and name not in UFUNC_OPERATORS:
            raise refusal(what, name, ref.dims if ref is not None else None, GUFUNC_WHY)
        if (fn is None and name not in UFUNC_OPERATORS) or (name in LOGICAL_UFUNCS and _not_all_bool(inputs)):
            return call_ufunc(ufunc, method, inputs, kwargs)  # (NumPy's loop by position, dims aligned by name)
        dtype = check_ufunc_kwargs(what, dict(kwargs))
        args = [_operand(a, what, i, ref) for i, a in enumerate(inputs)]
        if dtype is not None:  # (NumPy's loop for that output dtype: np.less(x, y, dtype=bool) compares x and y)
            loop = dtype_loop(ufunc, args, dtype)
            args = [astype(a, dt) if isinstance(a, ShardArray) and a.dtype != dt else a for a, dt in zip(args, loop)]
        elif name in LOOP_DTYPE:
            args = [_in_loop_dtype(ufunc, a) for a in args]
        if fn is not None:
            return fn(*args)
        return _by_operator(name, args)
    if method in ("reduce", "accumulate"):
        table = UFUNC_REDUCTIONS if method == "reduce" else UFUNC_ACCUMULATIONS
        fn = HOOKS.lookup(table[name]) if name in table else None
        if method == "accumulate" and name in ACCUMULATES:  # (the running extremes, truth values and bits)
            fn = functools.partial(accumulate, op=name)
        if fn is None or len(inputs) != 1 or not isinstance(inputs[0], ShardArray):
            return call_ufunc(ufunc, method, inputs, kwargs)
        kw = dict(kwargs)
        axis = kw.pop("axis", 0)
        dtype = check_ufunc_kwargs(what, kw)
        if method == "accumulate" and name in LOGICAL and dtype is not None and np.dtype(dtype) != np.bool_:
            raise DTypeError(
                f"{what}: dtype={np.dtype(dtype)} has no loop: NumPy's {name} computes in bool only; omit dtype="
            )
        x = inputs[0] if dtype is None else astype(inputs[0], dtype)  # (NumPy's loop of dtype= reads x cast)
        if method == "accumulate":
            return fn(x, one_dim(x, axis, what))
        return fn(x, dims_of(x, axis, what))
    return call_ufunc(ufunc, method, inputs, kwargs)  # (outer, reduceat; at is refused there)


def _not_all_bool(inputs: tuple[Any, ...]) -> bool:
    """Whether an operand of a ``logical_*`` ufunc is not bool (NumPy reads its truth: ``sa.logical_and`` takes
    bools only, so the call runs through the positional dispatch, NumPy's loop)."""
    return any(not (isinstance(a, ShardArray) and a.dtype == np.bool_) for a in inputs)


def _in_loop_dtype(ufunc: np.ufunc, a: Any) -> Any:
    """A one-operand ufunc's operand cast to the input dtype of NumPy's loop for it (``np.rint`` of int32: float64)."""
    if not isinstance(a, ShardArray):
        return a
    dt = ufunc.resolve_dtypes((a.dtype, None))[0]
    return a if dt == a.dtype else astype(a, dt)


def _by_operator(name: str, args: list[Any]) -> Any:
    method, reflected = UFUNC_OPERATORS[name]
    if len(args) == 1:
        fn = getattr(type(args[0]), method, None)
        return NotImplemented if fn is None else fn(args[0])
    x, y = args
    if isinstance(x, ShardArray) and hasattr(ShardArray, method):
        out = getattr(x, method)(y)
        if out is not NotImplemented:
            return out
    if isinstance(y, ShardArray) and reflected is not None and hasattr(ShardArray, reflected):
        return getattr(y, reflected)(x)
    return NotImplemented


# ------------------------------------------------------------------ axes -> dims


def dims_of(x: ShardArray, axis: Any, what: str) -> tuple[str, ...] | None:
    """NumPy's ``axis`` (None, an int or a tuple of ints) as dim names of ``x`` (None: every dim)."""
    if axis is None:
        return None
    return dims_arg(x, axis, what)


def one_dim(x: ShardArray, axis: Any, what: str) -> str:
    """One dim for an op along a single axis; ``axis=None`` (NumPy: flatten first) only for a 1-d array."""
    if axis is None:
        if x.ndim == 1:
            return x.dims[0]
        raise ArgumentError(
            f"{what}: axis=None flattens the array in NumPy, which a named array with dims {x.dims} "
            f"({x.sizes}) does not do implicitly; give axis= (0..{x.ndim - 1}) or a dim name, or merge the dims "
            f"first with x.merge_dims({x.dims}, 'flat') (positional arrays, shardarray.array_api, flatten as NumPy)"
        )
    if isinstance(axis, (tuple, list)):
        raise ArgumentError(f"{what}: axis must be one axis here; got {axis!r}. The array's dims are {x.dims}")
    return dims_arg(x, axis, what)[0]
