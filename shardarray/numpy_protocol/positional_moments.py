"""NumPy's moments computed in NumPy's own steps: ``np.mean``/``var``/``std`` and their nan-versions.

NumPy computes these *through* ``out``: the numerator (the sum for a mean, the sum of squared deviations for a
variance) is summed in NumPy's ``add`` loop for ``out``'s dtype and the values' (``dtype=`` where given, or the
float64 the moments of integers pass), cast into ``out``, then divided there by the count (an ``intp``: the
division runs in NumPy's loop for ``out``'s dtype and an integer, float64 for float16, float32 and integer outs)
and cast back into ``out``; ``std`` takes the square root in ``out``'s dtype. So ``np.mean(int_x, axis=0,
out=int8_out)`` wraps the sum into int8 before dividing, and a float16 ``out`` rounds the float32 sum to float16
first. ``positional_functions`` sends a call here when ``out=`` is a positional array whose dtype differs from the
one the numerator is summed in (``numerator_dtype``) or from the plain result's (``through_out``); else the plain
result, cast into ``out``, is the same. ``np.nanvar``/``nanstd`` with a ``dtype=`` other than the data's come
here without ``out=`` too (``wide_nanvar``), and so do two calls whose plain result is not NumPy's:

* the spreads and the nan-mean of float16 data (``np.var``/``std``/``nanvar``/``nanstd``/``nanmean``,
  ``dtype=`` None or float16; ``half_moment``): NumPy computes them in float16 (its float16 sums, each
  accumulated in float32 and rounded to float16 once, its float16 mean, deviations and squares, the square
  root of the float16 variance), so a deviation beyond 256 squares to inf: ``np.var`` and ``np.std`` of
  ``np.float16([60000, -60000])`` are inf, ``np.nanmean(np.float16([6e4, 6e4]))`` too. The protocol follows
  NumPy there (``np.std(x)`` is ``np.std(x.numpy())``, the float16 rounding steps included); the array API's
  ``xp.var``/``xp.std``/``xp.nanmean`` keep their float32 computation (JAX's choice: ``xp.std`` of those two is
  60000), and ``np.mean`` of float16 is computed in float32 by NumPy too;
* the mean of integers and bools (``np.mean``/``nanmean``, ``dtype=`` None or a float; ``integer_mean``):
  NumPy's float64 sum divided once by the count: the float64 total is resolved (one allreduce, as reading the
  mean would do) and then divided, never each device's partial sum (an ulp or so away). A float64 sum of int64
  values cannot overflow, and is exact, as NumPy's, while it stays below 2**53 in magnitude.

The steps follow NumPy's ``_methods._mean``/``_var`` and ``nanfunctions.nanmean``/``_nanvar`` in order, with the
namespace's functions: the collectives are their sums (the numerator, the count, the mean), each resolved before
it is divided.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import DTypeError
from .positional_args import axes_of, is_neutral, refuse, signature, write_out
from .positional_ufuncs import masked_operand, where_mask

#: the moments computed through ``out=`` (``mean`` the plain mean, the others the spreads)
MOMENTS = frozenset({"mean", "var", "std", "nanmean", "nanvar", "nanstd"})
#: the moments NumPy computes in float16 for float16 data (``np.mean`` passes ``dtype=float32`` itself)
_HALF = frozenset({"var", "std", "nanvar", "nanstd", "nanmean"})


def _inexact(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def add_loop(out: np.dtype, x: np.dtype) -> np.dtype | None:
    """The dtype NumPy's ``add.reduce`` of ``x`` values into an ``out=`` of dtype ``out`` computes in, ``dtype=``
    not given: its loop for the two (``float32`` data into a ``float64`` out sums in float64, ``int32`` into
    ``float32`` in float64); None where NumPy has no loop (the plain path's error then)."""
    try:
        return np.dtype(np.add.resolve_dtypes((np.dtype(out), np.dtype(x), None))[2])
    except (TypeError, ValueError):
        return None


def numerator_dtype(name: str, x: np.dtype, dtype: Any, out: np.dtype) -> np.dtype | None:
    """The dtype NumPy sums a moment's numerator in before it casts it into ``out=``: ``dtype=``, the float64 (or
    float32, for ``np.mean`` of float16) NumPy's moments pass as ``dtype=`` themselves, else ``add_loop`` of
    ``out`` and the summed values (the squared moduli of complex values are real). None for a call left to the
    plain path (a complex or integer ``dtype=``: NumPy's other rules, ``_integer_moment``)."""
    if dtype is not None:  # (a complex one: only nanvar's, whose deviations are the data's dtype, see wide_nanvar)
        wide = np.dtype(dtype).kind == "c" and name in ("nanvar", "nanstd")
        return None if np.dtype(dtype).kind in "biu" or (np.dtype(dtype).kind == "c" and not wide) else np.dtype(dtype)
    if x.kind in "biu":
        return np.dtype(np.float64)
    if name == "mean" and x == np.float16:  # (np.mean of float16 sums in float32; np.nanmean through out=)
        return np.dtype(np.float32)
    if name.endswith(("var", "std")) and x.kind == "c":
        x = np.dtype(np.float32) if x.itemsize == 8 else np.dtype(np.float64)
    return add_loop(out, x)


def through_out(func: Any, name: str, args: tuple[Any, ...], kw: dict[str, Any]) -> bool:
    """Whether ``moment_into_out`` computes the call, NumPy's steps: a positional ``out=`` whose dtype is not the
    numerator's (``numerator_dtype``) or not the plain result's (the two differ for ``np.mean`` of float16: a
    float32 sum, a float16 mean), a spread or nan-mean of float16 data (``half_moment``) or a mean of integers
    (``integer_mean``)."""
    bound = signature(func).bind(*args, **kw).arguments
    x, out = bound.get(next(iter(signature(func).parameters))), bound.get("out")
    if not isinstance(x, ShardArray) or x.dtype.name == "bfloat16":
        return False
    dtype = bound.get("dtype")
    if half_moment(name, x.dtype, dtype) or integer_mean(name, x.dtype, dtype):
        return True
    if not isinstance(out, ShardArray):
        return False
    want = numerator_dtype(name, x.dtype, dtype, out.dtype)
    if want is None:
        return False
    result = np.dtype(dtype) if dtype is not None else np.dtype(np.float64) if x.dtype.kind in "biu" else x.dtype
    if name.endswith(("var", "std")) and result.kind == "c":
        result = np.dtype(np.float32) if result.itemsize == 8 else np.dtype(np.float64)
    return out.dtype != want or out.dtype != result


def half_moment(name: str, x: np.dtype, dtype: Any) -> bool:
    """Whether ``np.<name>`` of ``x`` data is a moment NumPy computes in float16 (module docstring): a spread or
    ``nanmean`` of float16 data, ``dtype=`` None or float16 (``np.mean`` sums float16 in float32)."""
    return name in _HALF and x == np.float16 and (dtype is None or np.dtype(dtype) == np.float16)


def integer_mean(name: str, x: np.dtype, dtype: Any) -> bool:
    """Whether ``np.<name>`` of ``x`` data is a mean of integers or bools summed in a float dtype (float64, or a
    real float ``dtype=``), which NumPy divides once, after the sum (module docstring)."""
    if name not in ("mean", "nanmean") or x.kind not in "biu":
        return False
    return dtype is None or (np.dtype(dtype).kind == "f" and np.dtype(dtype).name != "bfloat16")


def wide_nanvar(func: Any, name: str, args: tuple[Any, ...], kw: dict[str, Any]) -> bool:
    """Whether the call is ``np.nanvar``/``nanstd`` of inexact data with a ``dtype=`` other than the data's:
    NumPy subtracts the mean into the data's own array (``np.subtract(arr, avg, out=arr)``), so the deviations
    and their squares are rounded to the data's dtype (float16 data, ``dtype=float32``: float16 squares) before
    the sum in ``dtype``; ``moment_into_out`` computes it so (``np.var`` keeps the deviations in ``dtype``)."""
    if name not in ("nanvar", "nanstd"):
        return False
    bound = signature(func).bind(*args, **kw).arguments
    x, dtype = bound.get(next(iter(signature(func).parameters))), bound.get("dtype")
    if not isinstance(x, ShardArray) or dtype is None or x.dtype.name == "bfloat16" or not _inexact(x.dtype):
        return False
    want = np.dtype(dtype)  # (complex data into a real dtype: left to the plain path's refusal)
    return want.kind in ("fc" if x.dtype.kind != "c" else "c") and want != x.dtype


def moment_into_out(xp: Any, func: Any, name: str, what: str, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """``np.<name>(x, ..., out=out)`` computed through ``out``'s dtype, as NumPy does (module docstring)."""
    given = {k: v for k, v in signature(func).bind(*args, **kw).arguments.items() if v is not np._NoValue}
    x, out = given.pop(next(iter(signature(func).parameters))), given.pop("out", None)
    dtype, where, mean = given.pop("dtype", None), given.pop("where", True), given.pop("mean", None)
    keepdims = given.pop("keepdims", False) is True
    axes = axes_of(given.pop("axis", None), x.ndim, what)
    ddof = given.pop("ddof", 0)
    if given.get("correction") is not None:
        ddof = given.pop("correction")
    for key, value in given.items():
        if not is_neutral(key, value, None):
            raise refuse(what, key, value)
    nan = name.startswith("nan") and _inexact(x.dtype)  # (integers: NumPy's nan-function is the plain one)
    plain = np.dtype(dtype) if dtype is not None else x.dtype  # (no out=: the result's own dtype, as NumPy's)
    summed = numerator_dtype(name, x.dtype, dtype, out.dtype if out is not None else plain)
    into = out.dtype if out is not None else summed if summed is not None else x.dtype
    base = name[3:] if name.startswith("nan") else name
    if base == "std" and into.kind in "biu":
        raise DTypeError(
            f"{what}: cannot write the square root into out= of dtype {into} (NumPy's ufunc 'sqrt' refuses the "
            f"float into integers under same_kind); give a floating out="
        )
    where_m = where_mask(xp, where, x, what) if not is_neutral("where", where) else None
    count: Any = math.prod(x.shape[k] for k in axes)
    if nan:  # (NumPy's _replace_nan: NaN read as +0.0, counted out)
        valid = xp.logical_not(xp.isnan(x))
        x = xp.where(valid, x, xp.zeros((), dtype=x.dtype, device=x.mesh))
        counted = valid if where_m is None else xp.logical_and(valid, where_m)
        count = xp.sum(xp.astype(counted, xp.int64), axis=axes, keepdims=True)
    elif where_m is not None:
        count = xp.sum(xp.astype(where_m, xp.int64), axis=axes, keepdims=True)
    if x.dtype.kind in "biu":
        x = xp.astype(x, xp.float64)
    if base == "mean":
        result = _divide(xp, _sum(xp, x, where_m, axes, summed), count, into)
        _warn(xp, count, "Mean of empty slice")
    else:
        avg = mean if mean is not None else _divide(xp, _sum(xp, x, where_m, axes, dtype), count)
        d = x - avg
        if nan:  # (NumPy subtracts into the data's own array, then zeroes the NaN slots)
            d = xp.real(d) if d.dtype.kind == "c" and x.dtype.kind != "c" else d  # (a complex mean's 0j dropped)
            d = xp.where(counted, xp.astype(d, x.dtype) if d.dtype != x.dtype else d, 0)
        sq = xp.real(d) * xp.real(d) + xp.imag(d) * xp.imag(d) if d.dtype.kind == "c" else d * d
        dof = count - ddof
        if not nan:  # (NumPy's var divides by max(N - ddof, 0); its nanvar by N - ddof, NaN where <= 0 after)
            dof = xp.maximum(dof, 0) if isinstance(dof, ShardArray) else max(dof, 0)
        result = _divide(xp, _sum(xp, sq, where_m, axes, summed), dof, into)
        _warn(xp, count - ddof, "Degrees of freedom <= 0 for slice" + ("." if nan else ""))
        if nan and isinstance(dof, ShardArray):
            result = xp.where(dof <= 0, math.nan, result)
        if base == "std":
            result = xp.sqrt(result)
    if not keepdims and axes:
        result = xp.squeeze(result, axis=axes)
    return write_out(out, result, what, "unsafe")


def _sum(xp: Any, v: ShardArray, mask: Any, axes: tuple[int, ...], dtype: Any) -> ShardArray:
    """NumPy's ``add.reduce`` of ``v`` over ``axes`` (kept) in ``dtype`` (None: ``v``'s), the entries ``mask``
    leaves out skipped (``-0.0`` in their place: a sum of ``-0.0`` stays ``-0.0``)."""
    into = v.dtype if dtype is None else np.dtype(dtype)
    if into.kind == "c" and v.dtype.kind != "c":  # (real values in a complex loop: its real parts, summed alone)
        return xp.astype(_sum(xp, v, mask, axes, np.float32 if into.itemsize == 8 else np.float64), into)
    v = v if v.dtype == into else xp.astype(v, into)
    if mask is not None:
        v = masked_operand(xp, "add", v, mask, np._NoValue, "sum")
    total = xp.sum(v, axis=axes, keepdims=True)
    return total.resolve() if total.pending else total  # (arithmetic on a pending sum would round each partial)


def _divide(xp: Any, num: ShardArray, count: Any, into: np.dtype | None = None) -> ShardArray:
    """NumPy's ``true_divide(num, count, out=..., casting='unsafe')``: ``num`` cast into ``into`` (None: its own
    dtype), divided by the ``intp`` count in NumPy's loop for the two, the quotient cast back."""
    into = num.dtype if into is None else np.dtype(into)
    num = num if num.dtype == into else xp.astype(num, into)
    loop = np.true_divide.resolve_dtypes((into, np.dtype(np.intp), None))[0]
    if isinstance(count, ShardArray):
        q = xp.astype(num, loop) / xp.astype(count, loop)
    else:
        q = xp.astype(num, loop) / xp.asarray(count, dtype=loop, device=num.mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (a NaN into integers: NumPy's cast is silent here)
        return q if q.dtype == into else xp.astype(q, into)


def _warn(xp: Any, left: Any, message: str) -> None:
    """NumPy's RuntimeWarning where a slice has no values (degrees of freedom) ``left`` (one replicated bool read)."""
    if bool(xp.any(left <= 0)) if isinstance(left, ShardArray) else left <= 0:
        warnings.warn(message, RuntimeWarning, stacklevel=5)
