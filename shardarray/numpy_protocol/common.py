"""What both dispatches share: the ufunc names, the table of hooks, values in messages, operand checks.

``HOOKS.lookup(name)`` finds ``sa.<name>`` (the package fills it when it has
imported everything: the top-level namespace sits above this module).
``UFUNC_ALIASES`` maps NumPy's ufunc names to the array API standard's
spelling, which both ``sa`` and ``shardarray.array_api`` use.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..array import OpTable, ShardArray
from ..errors import DTypeError

#: ``lookup`` (the top-level ``shardarray`` function of a name, or None): filled in by the package
HOOKS = OpTable()

# NumPy ufunc name -> the standard's name (``sa`` and ``xp`` spell them so) where they differ
#: ufunc.reduce -> the reduction of the same meaning (both ``sa`` and the namespace spell them so)
UFUNC_REDUCTIONS: dict[str, str] = {
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_and": "all",
    "logical_or": "any",
}

UFUNC_ALIASES: dict[str, str] = {
    "absolute": "abs",
    "true_divide": "divide",
    "conjugate": "conj",
    "power": "pow",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "arctan2": "atan2",
    "invert": "bitwise_invert",
    "bitwise_not": "bitwise_invert",
    "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
    "rint": "round",
    "mod": "remainder",
}


def short(value: Any) -> str:
    """A value for an error message: arrays by type and shape, others by a repr cut to 60 characters."""
    if isinstance(value, (np.ndarray, ShardArray)):
        return f"<{type(value).__name__} of shape {value.shape}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def same(a: Any, b: Any) -> bool:
    """``a == b`` for plain values of one type (False for arrays or values that refuse to compare)."""
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:
        return False


def foreign(values: Any) -> bool:
    """Whether an operand is an array type shardarray does not handle (a CuPy array, a duck array, ...)."""
    for a in values:
        if isinstance(a, (ShardArray, np.ndarray, numbers.Number, np.generic, str, type(None))):
            continue
        if hasattr(a, "__array_ufunc__") or hasattr(a, "__array_function__"):
            return True
    return False


def mixing_error(what: str, a: np.ndarray, i: int | str, ref: Any) -> DTypeError:
    """The error for a NumPy array operand next to a shardarray array, naming the explicit conversion.

    A positional ``ref`` (``shardarray.array_api.Array``) points to ``xp.asarray(array, device=x.device)``;
    a named one to ``sa.asarray(array, dims=(...), mesh=x.mesh)``. Either way the other direction,
    ``np.asarray(x)``, is the explicit gather.
    """
    if getattr(ref, "positional", False):
        fix = "Convert it with xp.asarray(array, device=x.device) (import shardarray.array_api as xp)"
        kind = "an Array"
    else:
        fix = "Wrap it with sa.asarray(array, dims=(...), mesh=x.mesh), naming its dims"
        kind = "ShardArrays"
    return DTypeError(
        f"{what}: operand {i} is a NumPy array of shape {a.shape}; NumPy arrays do not mix with {kind} implicitly "
        f"(that would copy host data onto the mesh, or gather the distributed array). {fix}, or gather the "
        f"distributed array explicitly with np.asarray(x)"
    )


def not_numpys(ufunc: np.ufunc, kind: str) -> DTypeError:
    """The error for a ufunc that is not NumPy's own (``scipy.special.gamma``, ``scipy.special.round``): its name
    says nothing of its meaning (SciPy's ``round`` rounds half away from zero, NumPy's ``rint`` half to even), so
    it is not dispatched by name to the namespace's function of that name."""
    name = ufunc.__name__
    other = "is another function" if hasattr(np, name) else "does not exist"
    return DTypeError(
        f"ufunc {name!r} on {kind}: it is not NumPy's own (numpy.{name} {other}), so it has no counterpart of "
        f"known meaning on a distributed array. With SciPy, set SCIPY_ARRAY_API=1 before importing it (SciPy then "
        f"calls the array's namespace); or apply it to the gathered values explicitly: {name}(x.numpy())"
    )


def loop_key(value: Any) -> Any:
    """An operand as ``ufunc.resolve_dtypes`` takes it: an array's dtype, bool for a Python bool (NumPy's bool is
    not weak), the type of a Python int, float or complex (weak, NEP 50)."""
    if isinstance(value, ShardArray):
        return value.dtype
    if isinstance(value, bool):
        return np.dtype(bool)
    return next((t for t in (int, float, complex) if isinstance(value, t)), value)


def dtype_loop(ufunc: np.ufunc, args: list[Any], dtype: Any, casting: str = "same_kind") -> tuple[np.dtype, ...]:
    """The input dtypes of the loop NumPy runs for ``ufunc(*args, dtype=dtype, casting=casting)``.

    ``dtype=`` fixes the loop's output dtype, as NumPy's ``signature=(None, ..., dtype)`` does, and the operands
    are cast to the loop's inputs under ``casting`` (NumPy's default ``same_kind``): ``np.add(f64, f64,
    dtype=float32)`` adds in float32, ``np.less(f64, f64, dtype=bool)`` compares the float64 values,
    ``np.add(f64, f64, dtype=int8)`` is refused (allowed with ``casting='unsafe'``).

    Raises:
        DTypeError: NumPy has no such loop for these operands (NumPy's TypeError).
    """
    keys = (*map(loop_key, args), *(None,) * ufunc.nout)
    try:
        sig = (None,) * ufunc.nin + (np.dtype(dtype),) * ufunc.nout
        loop = ufunc.resolve_dtypes(keys, signature=sig, casting=casting)  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise DTypeError(
            f"np.{ufunc.__name__}: dtype={np.dtype(dtype)} does not fit these operands under casting={casting!r}: {e}"
        ) from None
    return tuple(loop[: ufunc.nin])


#: NumPy's sums and products that compute in their ufunc's loop for ``out=``'s dtype and the array's
OUT_LOOPS: dict[str, np.ufunc] = {
    **dict.fromkeys(("sum", "nansum", "cumsum", "nancumsum"), np.add),
    **dict.fromkeys(("prod", "nanprod", "cumprod", "nancumprod"), np.multiply),
}


def out_loop(ufunc: np.ufunc, x: np.dtype, out: Any, any_kind: bool = False) -> np.dtype | None:
    """The ``dtype=`` that makes a sum or product (``ufunc`` ``add``/``multiply``, ``reduce`` or ``accumulate``) of
    ``x`` values compute as NumPy's into the positional ``out``: NumPy's loop for ``out``'s dtype and ``x``'s
    (``np.add.reduce(float32_x, out=float64_out)`` sums in float64, ``np.multiply.reduce(int64_x,
    out=float64_out)`` multiplies in float64: no integer wrap), where it is inexact and not ``x``'s own; None
    where the plain computation cast into ``out`` is NumPy's (integer loops wrap alike; bool loops). ``any_kind``:
    the loop whatever it is, ``x``'s own too (``ufunc.reduce``/``accumulate``, which NumPy runs in it with
    ``out=``: ``np.maximum.reduce(bools, initial=2, out=int8)`` is 2, ``np.multiply.accumulate(int8_x,
    out=bools)`` wraps in int8, where the namespace's scan would widen to int64).
    """
    if not isinstance(out, ShardArray) or x.name == "bfloat16" or out.dtype.name == "bfloat16":
        return None
    try:
        loop = np.dtype(ufunc.resolve_dtypes((out.dtype, x, None))[2])
    except (TypeError, ValueError):
        return None
    return loop if any_kind or (loop.kind in "fc" and loop != x) else None
