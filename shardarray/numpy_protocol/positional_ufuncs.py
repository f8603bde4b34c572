"""NumPy ufuncs on positional arrays (``shardarray.array_api``): derived from the namespace, NumPy's semantics.

``np.<ufunc>(...)`` calls the namespace's function of the same name, or of the
standard's spelling (``np.arcsin`` -> ``xp.asin``, ``common.UFUNC_ALIASES``),
with NumPy's right-aligned broadcasting; ``out=`` writes into a positional
array in place, ``dtype=`` casts the operands first. The methods:

* ``reduce`` of ``add``/``multiply``/``maximum``/``minimum``/``logical_and``/
  ``logical_or`` is ``xp.sum``/``prod``/``max``/``min``/``all``/``any`` (NumPy's
  default ``axis=0``; ``axis=None``, ``keepdims``, ``dtype``, ``initial``, ``out``);
* ``accumulate`` of ``add``/``multiply`` is ``xp.cumulative_sum``/
  ``cumulative_prod`` (``axis=0`` by default, ``dtype``, ``out``); the namespace
  has no running maximum or minimum, so ``np.maximum.accumulate`` raises
  NumPy's TypeError;
* ``outer(a, b)`` is the ufunc on ``a`` reshaped to ``a.shape + (1,) * b.ndim``
  and ``b`` (the broadcast NumPy defines it by).

``np.add.at``/``np.subtract.at`` write into a positional array in place
(``Array.__array_ufunc__``: integer-array keys are routed to the owners of the
rows, repeated indices add every time). A ufunc or method without a
counterpart (``np.fmod``, ``np.maximum.at``, ``reduceat``) returns
NotImplemented: NumPy raises its TypeError, nothing is gathered. The
collectives are those of the namespace function called.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     x = xp.asarray([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    >>> np.asarray(np.maximum.reduce(x, axis=1)), np.asarray(np.add.accumulate(x))[1]
    (array([5., 6.]), array([5., 7., 9.]))
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray
from .common import UFUNC_ALIASES, UFUNC_REDUCTIONS, foreign
from .positional_args import axes_of, host_value, is_neutral, refuse, signature, write_out

# ufunc.accumulate -> the namespace's scan (ufunc.reduce: common.UFUNC_REDUCTIONS)
ACCUMULATE: dict[str, str] = {"add": "cumulative_sum", "multiply": "cumulative_prod"}


def counterpart(ns: Any, name: str) -> Callable[..., Any] | None:
    """The function ``name`` of the namespace module ``ns`` (one of the package's functions; None if absent)."""
    fn = getattr(ns, name, None) if ns is not None and not name.startswith("_") else None
    if fn is None or isinstance(fn, (type, types.ModuleType)) or not callable(fn):
        return None
    return fn if str(getattr(fn, "__module__", "")).startswith("shardarray") else None


def elementwise(xp: Any, name: str) -> Callable[..., Any] | None:
    """The namespace's function for the ufunc ``name`` (by NumPy's name or the standard's spelling)."""
    return counterpart(xp, name) or (counterpart(xp, UFUNC_ALIASES[name]) if name in UFUNC_ALIASES else None)


def array_ufunc(xp: Any, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``Array.__array_ufunc__``: the ufunc or method as the namespace's function, or NotImplemented."""
    name = ufunc.__name__
    what = f"np.{name}" if method == "__call__" else f"np.{name}.{method}"
    if foreign(inputs):
        return NotImplemented
    ref = next((a for a in inputs if isinstance(a, ShardArray)), None)
    fn = elementwise(xp, name)
    if method in ("__call__", "outer"):
        if fn is None or (method == "outer" and len(inputs) != 2):
            return NotImplemented
        out, dtype = kwargs.pop("out", None), kwargs.pop("dtype", None)
        params = signature(fn).parameters
        extra = {k: v for k, v in kwargs.items() if k in params}
        for key, value in kwargs.items():
            if key not in params and not is_neutral(key, value):
                raise refuse(what, key, value)
        args = [host_value(what, a, i, ref) for i, a in enumerate(inputs)]
        if dtype is not None:
            args = [xp.astype(a, dtype) if isinstance(a, ShardArray) else a for a in args]
        if method == "outer":
            a, b = args
            if isinstance(a, ShardArray):
                args[0] = xp.reshape(a, a.shape + (1,) * (b.ndim if isinstance(b, ShardArray) else 0))
        return write_out(out, fn(*args, **extra), what)
    if method not in ("reduce", "accumulate") or len(inputs) != 1 or not isinstance(inputs[0], ShardArray):
        return NotImplemented
    table = UFUNC_REDUCTIONS if method == "reduce" else ACCUMULATE
    target = counterpart(xp, table[name]) if name in table else None
    if target is None:
        return NotImplemented
    return _reduce_or_scan(xp, target, fn, method, inputs[0], what, **kwargs)


def _reduce_or_scan(
    xp: Any,
    target: Callable[..., Any],
    fn: Callable[..., Any] | None,
    method: str,
    x: ShardArray,
    what: str,
    axis: Any = 0,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """``ufunc.reduce`` / ``ufunc.accumulate`` with NumPy's keywords, through the namespace's ``target``."""
    if not is_neutral("where", where):
        raise refuse(what, "where", where)
    params = signature(target).parameters
    kw: dict[str, Any] = {}
    if dtype is not None:
        if "dtype" in params:
            kw["dtype"] = dtype
        else:
            x = xp.astype(x, dtype)
    if method == "accumulate":
        if axis is None or isinstance(axis, (tuple, list)):
            raise refuse(what, "axis", axis)  # NumPy's accumulate takes one axis
        if keepdims or initial is not np._NoValue:
            raise refuse(what, "keepdims" if keepdims else "initial", keepdims if keepdims else initial)
        return write_out(out, target(x, axis=axes_of(axis, x.ndim, what)[0], **kw), what)
    axes = axes_of(axis, x.ndim, what)
    result = target(x, axis=axes, keepdims=bool(keepdims), **kw)
    if initial is not np._NoValue and initial is not None:
        if fn is None:  # pragma: no cover - every reduction's ufunc has a counterpart
            return NotImplemented
        result = fn(result, initial)
    return write_out(out, result, what)
