"""NumPy functions on positional arrays (``shardarray.array_api``): derived from the namespace, not listed.

``np.X`` calls ``xp.X`` when the namespace has it (``np.linalg.X`` ->
``xp.linalg.X``, ``np.fft.X`` -> ``xp.fft.X``; a few NumPy spellings map to the
standard's: ``concatenate`` -> ``concat``, ``cumsum`` -> ``cumulative_sum``,
``amax`` -> ``max``, ``fft2`` -> ``fftn``...), so a function the namespace gains
later dispatches as soon as it exists. NumPy's arguments are adapted from the
two signatures: parameters of the same name pass through; NumPy's leading
array parameters (``a``, ``v``, ``arr``...) fill the namespace's positional
ones (``x``, ``x1``, ``x2``) in order; ``ddof`` is ``correction``, ``a_min`` is
``min``; NumPy's default ``axis`` is passed where the namespace's differs.
NumPy's semantics where the standard's differ:

* ``axis=None`` flattens for the functions NumPy flattens for (``argmax``,
  ``cumsum``, ``sort``, ...: ``FLATTEN_ON_NONE``): the array is reshaped to 1-D
  first (a distributed reshape, no gather); with ``keepdims=True`` the result
  has the array's number of dimensions, each of size 1, as NumPy's;
* ``keepdims=True`` is passed on, or kept by re-inserting the reduced axes;
* ``dtype=`` is passed on, or the input is cast first (``np.mean(x, dtype=...)``);
  an integer ``dtype=`` of ``np.mean``/``var``/``std`` is computed as NumPy does:
  sums in that dtype (wrapping), each divided by the count and cast back,
  truncating (``np.mean([200, 100], dtype=np.uint8)`` is 22);
* ``np.var``/``np.std``'s ``mean=`` (NumPy 2) is used as the mean, and a slice
  with no entry (or no degree of freedom) warns NumPy's RuntimeWarning;
* integer and bool input of the functions NumPy computes in floating point
  (``np.mean``, ``np.std``, ``np.var``, ``np.linalg.inv``/``det``/``norm``/..., ``np.fft.fft``
  and the other transforms: ``FLOAT_INPUT``) is cast to float64 first, and
  ``np.clip`` promotes the array with its bounds (``PROMOTES_WITH``:
  ``np.clip(ints, -1.5, 1.5)`` is float64), as NumPy does;
* keywords NumPy takes through ``**kwargs`` (``np.pad``'s ``constant_values=``)
  are passed on when the namespace's function takes them;
* the sums and products (``np.sum``, ``prod``, ``cumsum``, their nan-versions) into an ``out=`` of another
  dtype compute in NumPy's loop for ``out``'s dtype and the array's (``float32`` data into a ``float64`` out
  sums in float64, integers into a float out in float64: ``positional_moments.out_loop``), and ``np.mean``/
  ``var``/``std`` and their nan-versions through ``out`` as NumPy does (``positional_moments``);
* ``out=`` writes into a positional array in place (``positional_args.write_out``), under NumPy's casting:
  ``unsafe`` for the reductions (``np.max(floats, out=ints)``: ``UNSAFE_OUT``), an integer one for the index
  searches, an inexact one for ``nanmean``/``nanvar``/``nanstd`` of inexact data, ``same_kind`` elsewhere
  (``np.std``'s square root, ``np.percentile``); a complex ``dtype=`` of ``np.var``/``std`` gives a complex result;
* ``initial=`` of ``np.sum``/``prod``/``max``/``min`` is the ufunc's ``reduce``
  (``np.add.reduce``...), as NumPy defines them, and so is their ``where=`` (and
  ``np.any``/``np.all``'s); ``where=`` of ``np.mean``/``std``/``var`` and of the
  ``nan*`` reductions is a masked sum over a masked count (a local ``where``,
  the reductions' collectives), with NumPy's dtypes; ``initial=`` of ``np.nansum``/
  ``nanprod``/``nanmax``/``nanmin`` too (a NaN ``initial`` of ``nanmax`` is skipped, as NumPy's ``fmax``);
* ``np.concatenate``'s ``dtype=`` honours its ``casting=`` (``same_kind``);
* keywords with a no-op value (``order="C"``, ``where=True``, ...) are
  accepted; any other value the namespace cannot honour is a typed
  ``sa.ArgumentError`` naming it;
* a host NumPy array of 1 or more dims is refused wherever it stands (the
  first operand too, or inside a list: ``np.kron(host, x)``,
  ``np.concatenate([host, x])``) with the ``sa.DTypeError`` that names
  ``xp.asarray(host, device=x.device)``, as ``np.add(x, host)`` is: the copy
  onto the mesh stays explicit. NumPy scalars and 0-d arrays mix (NEP 50),
  and so do Python lists where the namespace takes host values (indices,
  ``q``, counts); ``np.polyval``'s coefficients may be a NumPy array
  (``HOST_FIRST``), as ``xp.polyval``'s, and ``np.copyto(x, host)`` is the
  write ``x[...] = host``. Host settings are no operands: a NumPy array is
  read as its values for ``np.quantile``'s ``q`` (a NumPy scalar ``q`` keeps
  its dtype, as in NumPy), ``np.fft``'s ``s``/``axes``, shapes, axes and
  widths (``HOST_PARAMS``; an array ``axis`` only where NumPy takes one,
  ``HOST_AXIS``), and ``np.diff``'s NumPy scalar ``prepend``/``append``
  keeps its dtype (``STRONG_SCALARS``);
* ``axis=0`` (or -1, NumPy's default for ``np.argsort``) of a 0-d array is
  NumPy's legacy reading of it as 1-D for ``np.sum``/``argmax``/``cumsum``/
  ``argsort``/``nansum``/``count_nonzero``/... (``ZERO_D_AXIS``; the
  nan-moments of floats only, as NumPy).

NumPy-only names are composed from the namespace's functions
(``positional_compose``: ``np.dot``, ``np.isclose``, ``np.vstack``...). A name
with no counterpart (``np.median``, ``np.linalg.eig``) returns NotImplemented:
NumPy raises its TypeError and nothing is gathered. The collectives of a call
are those of the namespace functions it runs.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     x = xp.asarray([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0], [0.0, 7.0, 1.0]])
    >>> int(np.argmax(x)), np.asarray(np.max(x, axis=1, keepdims=True)).ravel()
    (7, array([5., 6., 7.]))
    >>> type(np.fft.fft(x)).__name__, float(np.cumsum(x)[-1])
    ('Array', 29.0)
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from numbers import Number
from typing import Any

import numpy as np

from ..array import ShardArray
from ..dtypes import as_dtype, is_real_float, promote
from ..errors import ArgumentError, DTypeError
from . import (  # noqa: F401  (register them in COMPOSED)
    positional_compare,
    positional_creation,
    positional_dots,
    positional_elementwise,
    positional_extras,
    positional_indexing,
    positional_reductions,
    positional_shapes,
    positional_writes,
)
from .common import OUT_LOOPS, out_loop
from .positional_args import axes_of, cast_to, host_setting, host_value, is_neutral, refuse, signature, write_out
from .positional_compose import COMPOSED
from .positional_moments import MOMENTS, moment_into_out, through_out, wide_nanvar
from .positional_ufuncs import counterpart, masked_operand, where_mask

P = inspect.Parameter

#: (NumPy's submodule, NumPy's name) -> the namespace's name, where they differ
ALIASES: dict[tuple[str, str], str] = {
    ("", "concatenate"): "concat",
    ("", "cumsum"): "cumulative_sum",
    ("", "cumprod"): "cumulative_prod",
    ("", "amax"): "max",
    ("", "amin"): "min",
    ("fft", "fft2"): "fftn",
    ("fft", "ifft2"): "ifftn",
    ("fft", "rfft2"): "rfftn",
    ("fft", "irfft2"): "irfftn",
}

#: NumPy parameter -> the namespace's parameter of the same meaning
RENAMES: dict[str, str] = {"ddof": "correction", "a_min": "min", "a_max": "max", "reps": "repetitions"}

#: NumPy functions whose ``axis=None`` means "flatten first" (reductions' None means "every axis" in both)
FLATTEN_ON_NONE = frozenset(
    {"argmax", "argmin", "nanargmax", "nanargmin", "cumsum", "cumprod", "nancumsum", "nancumprod"}
    | {"sort", "argsort", "take_along_axis"}
)

#: NumPy functions whose first argument is host data by design (``np.polyval``'s coefficients, a list or a NumPy
#: array, as ``xp.polyval`` takes them); elsewhere a NumPy array of 1 or more dims is refused in any position
HOST_FIRST = frozenset({"polyval"})

#: NumPy functions that take ``axis=0`` (or -1) on a 0-d array, reading it as 1-D (its legacy rule): the
#: reductions reduce the one element, the scans and ``argsort`` give a 1-element array
ZERO_D_AXIS = frozenset(
    {"sum", "prod", "max", "min", "amax", "amin", "any", "all", "argmax", "argmin", "nanargmax", "nanargmin"}
    | {"nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanstd", "nanvar", "count_nonzero"}
    | {"cumsum", "cumprod", "argsort"}
)
#: of ``ZERO_D_AXIS``, those that reduce the one element (``axis=None``) rather than read the 0-d array as 1-D
_ZERO_D_REDUCE = frozenset({"argmax", "argmin", "nanargmax", "nanargmin"})

#: NumPy parameters that are host settings, not operands: a NumPy array there is read as its values, as the
#: namespace takes a list (``np.quantile(x, np.array([.1, .9]))``, ``np.fft.fftn(x, s=np.array([4, 6]))``,
#: ``np.pad(x, np.array([[1, 1], [2, 0]]))``); ``q`` is passed as given (its NumPy dtype sets the result's, as
#: NumPy's: ``np.percentile(float32_x, np.float64(30))`` is float64), the others as (nested) tuples of Python
#: values. NumPy arrays as operands (data) stay refused, and so does an array ``axis`` where NumPy refuses one
#: (``np.sum(x, axis=np.array([0]))`` is NumPy's TypeError): ``axis`` is a setting only for ``HOST_AXIS``.
HOST_PARAMS = frozenset(
    {"q", "s", "axes", "shape", "newshape", "new_shape", "reps", "pad_width", "shift", "source", "destination", "kth"}
)
#: NumPy parameters whose NumPy scalar (or 0-d array) keeps its dtype, as NumPy's promotion does
#: (``np.diff(int8_x, prepend=np.int8(1))`` is int8, not int64 as a Python int would make it)
STRONG_SCALARS = frozenset({"prepend", "append"})
#: NumPy functions that read an array ``axis`` as a sequence of axes (elsewhere it is NumPy's TypeError)
HOST_AXIS = frozenset({"flip", "roll", "quantile", "percentile", "nanquantile", "nanpercentile"})
#: of ``ZERO_D_AXIS``, those NumPy reads so for floating (and complex) data only (of integers it is ``np.mean``'s)
_ZERO_D_FLOATS = frozenset({"nanmean", "nanstd", "nanvar"})

#: NumPy functions that join a sequence of arrays: its scalars are 0-d arrays, as NumPy's ``asanyarray`` makes them
JOINS = frozenset({"stack", "concatenate"})

#: NumPy functions that compute in floating point: integer and bool arrays are cast to float64 first, as NumPy's
#: versions convert them (the namespace's refuse them)
FLOAT_INPUT = frozenset(
    {("", "mean"), ("", "std"), ("", "var")}
    | {("linalg", n) for n in "inv det slogdet solve cholesky qr svd svdvals eig eigvals eigh eigvalsh pinv".split()}
    | {("linalg", "matrix_rank")}
    | {("linalg", n) for n in ("norm", "vector_norm", "matrix_norm")}
    | {("fft", n) for n in "fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fft2 ifft2 rfft2 irfft2".split()}
)

#: NumPy functions whose result dtype is the array's promoted with these arguments' (NEP 50: Python scalars weak),
#: where the namespace's keeps the array's: ``np.clip(ints, -1.5, 1.5)`` is float64
PROMOTES_WITH: dict[str, tuple[str, ...]] = {"clip": ("a_min", "a_max", "min", "max")}


#: NumPy reductions whose ``initial=`` the ufunc's ``reduce`` honours (``positional_ufuncs``): they go through it
REDUCING_UFUNCS: dict[str, np.ufunc] = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "amax": np.maximum,
    "min": np.minimum,
    "amin": np.minimum,
}
#: NumPy reductions whose ``where=`` the ufunc's ``reduce`` honours too (``positional_ufuncs.masked_operand``)
WHERE_UFUNCS: dict[str, np.ufunc] = {**REDUCING_UFUNCS, "any": np.logical_or, "all": np.logical_and}
#: NumPy statistics whose ``where=`` is honoured here: a masked reduction (``_where_statistic``)
WHERE_STATS = frozenset({"mean", "std", "var", "nanmean", "nanstd", "nanvar", "nansum", "nanprod", "nanmax", "nanmin"})
#: NumPy reductions that write into ``out=`` under ``unsafe`` casting, as NumPy's (``np.max(floats, out=ints)``
#: truncates; ``np.std``'s ``sqrt``, ``np.percentile``/``np.ptp`` keep their ufuncs' ``same_kind``)
UNSAFE_OUT = frozenset(
    {"sum", "prod", "max", "min", "amax", "amin", "mean", "var", "any", "all", "cumsum", "cumprod", "median"}
    | {"nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nancumsum", "nancumprod", "nanmedian"}
)
#: NumPy's index searches: an integer ``out=`` (any, the indices cast into it), not a float one
_ARG_OUT = frozenset({"argmax", "argmin", "nanargmax", "nanargmin"})
#: NumPy moments whose integer ``dtype=`` is computed as NumPy does it (``_integer_moment``)
_INTEGER_MOMENTS = frozenset({"mean", "var", "std", "nanmean", "nanvar", "nanstd"})
#: the nan-reductions with ``where=`` as the plain ones on the masked data (NaN left out with the mask)
_NAN_PLAIN: dict[str, Callable[..., Any]] = {"nansum": np.sum, "nanprod": np.prod, "nanmax": np.max, "nanmin": np.min}


#: NumPy submodules whose functions share a name with a main-namespace function of another meaning (their module
#: prefix -> the space they dispatch in): ``np.emath.sqrt`` of a negative number is complex, ``np.char.equal``
#: compares strings; they go to their own handlers (``positional_compose``: ``np.emath``) or raise NumPy's TypeError
OWN_SPACES: dict[str, str] = {
    "numpy.lib.scimath": "emath",
    "numpy.lib._scimath": "emath",
    "numpy.char": "char",
    "numpy._core.defchararray": "char",
    "numpy.strings": "strings",
    "numpy._core.strings": "strings",
    "numpy.rec": "rec",
    "numpy._core.records": "rec",
}


def where_of(func: Callable[..., Any]) -> tuple[str, str]:
    """(NumPy submodule: ``""``, ``"linalg"``, ``"fft"`` or one of ``OWN_SPACES``; the function's name)."""
    module = str(getattr(func, "__module__", "") or "")
    space = "linalg" if module.startswith("numpy.linalg") else "fft" if module.startswith("numpy.fft") else ""
    space = next((v for k, v in OWN_SPACES.items() if module.startswith(k)), space)
    return space, str(getattr(func, "__name__", ""))


def target_of(xp: Any, space: str, name: str) -> Callable[..., Any] | None:
    """The namespace's counterpart of ``np[.space].name`` now (None when there is none)."""
    ns = getattr(xp, space, None) if space else xp
    return counterpart(ns, ALIASES.get((space, name), name))


def array_function(
    xp: Any, func: Callable[..., Any], types_: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``Array.__array_function__``: the NumPy function through the namespace, or NotImplemented (TypeError)."""
    if not all(issubclass(t, (ShardArray, np.ndarray)) for t in types_):
        return NotImplemented
    space, name = where_of(func)
    what = f"np.{space + '.' if space else ''}{name}"
    dtype = kwargs.get("dtype")
    if dtype is not None and not isinstance(dtype, ShardArray):
        try:
            as_dtype(dtype)  # (a dtype shardarray lacks, or no dtype at all: a DTypeError naming the function)
        except DTypeError as err:
            raise DTypeError(f"{what}: dtype= {err}") from None
    if not space and name in ("nanmean", "nanvar", "nanstd"):
        _inexact_out(func, what, args, kwargs)
    if (
        not space
        and name in MOMENTS
        and (through_out(func, name, args, kwargs) or wide_nanvar(func, name, args, kwargs))
    ):
        return moment_into_out(xp, func, name, what, args, kwargs)
    if not space and name in _INTEGER_MOMENTS and _integer_moment_call(func, name, args, kwargs):
        return _integer_moment(xp, func, name, what, args, kwargs)
    if (space, name) in FLOAT_INPUT and not _empty_pinv(space, name, args, kwargs):
        args = tuple(_float_input(xp, a) for a in args)
        kwargs = {k: v if k in ("where", "out") else _float_input(xp, v) for k, v in kwargs.items()}  # (out= in place)
    composed = COMPOSED.get((space, name))
    if composed is not None:
        return composed(xp, what, *args, **kwargs)
    if not space and (name in WHERE_UFUNCS or name in WHERE_STATS):
        bound = signature(func).bind(*args, **kwargs).arguments
        masked = not is_neutral("where", bound.get("where", True))
        masked = masked or not is_neutral("mean", bound.get("mean", np._NoValue))  # (var(mean=): NumPy 2's)
        if name in WHERE_UFUNCS and (masked or (name in REDUCING_UFUNCS and "initial" in bound)):
            return _reduce_with_initial(func, WHERE_UFUNCS[name], args, kwargs)
        if masked or (name in _NAN_PLAIN and "initial" in bound):
            return _where_statistic(xp, func, name, what, args, kwargs)
    target = target_of(xp, space, name)
    if target is None:
        return NotImplemented
    return call_derived(xp, func, target, what, args, kwargs)


def _reduce_with_initial(func: Callable[..., Any], ufunc: np.ufunc, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """``np.sum(x, ..., initial=v)`` (``prod``, ``max``, ``min`` alike) as NumPy defines it: ``np.add.reduce``
    with the same arguments (``axis=None`` by default), which the positional ufunc dispatch runs."""
    given = {k: v for k, v in signature(func).bind(*args, **kw).arguments.items() if v is not np._NoValue}
    x = given.pop(next(iter(signature(func).parameters)))
    if not isinstance(x, ShardArray):
        return NotImplemented
    given.setdefault("axis", None)
    return ufunc.reduce(x, **given)


def _integer_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` (a ``dtype=`` argument, None for none) is an integer or the bool dtype (NumPy's moments
    compute in it alike: ``np.var(ints, dtype=bool)`` is a bool)."""
    try:
        return dtype is not None and np.dtype(dtype).kind in "biu"
    except TypeError:
        return False


def _ddof(given: dict[str, Any], what: str) -> Any:
    """``ddof=`` or NumPy 2's ``correction=`` (one of them) taken out of ``given``; 0 when neither is."""
    ddof = given.pop("ddof", 0)
    if given.get("correction") is not None:
        if ddof != 0:
            raise ArgumentError(f"{what}: give ddof= or correction=, not both (as in NumPy)")
        ddof = given.pop("correction")
    return ddof


def _inexact_out(func: Callable[..., Any], what: str, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """NumPy's TypeError of ``np.nanmean``/``nanvar``/``nanstd`` of inexact data into an integer or bool ``out=``
    ("If a is inexact, then out must be inexact"), a ``DTypeError`` here."""
    bound = signature(func).bind(*args, **kw).arguments
    x, out = bound.get(next(iter(signature(func).parameters))), bound.get("out")
    if not (isinstance(x, ShardArray) and isinstance(out, ShardArray)):
        return
    if (x.dtype.kind == "c" or is_real_float(x.dtype)) and out.dtype.kind in "biu":
        raise DTypeError(
            f"{what}: out= of dtype {out.dtype} for an array of {x.dtype}: the result of inexact values needs an "
            f"inexact out=, as in NumPy; give a float out= or none"
        )


def _integer_moment_call(func: Callable[..., Any], name: str, args: tuple[Any, ...], kw: dict[str, Any]) -> bool:
    """Whether ``np.mean``/``var``/``std`` (or a nan-version on integer or bool data, which NumPy runs as the plain
    one) is given an integer ``dtype=``: computed as NumPy does in ``_integer_moment``."""
    bound = signature(func).bind(*args, **kw).arguments
    x = bound.get(next(iter(signature(func).parameters)))
    if not (_integer_dtype(bound.get("dtype")) and isinstance(x, ShardArray)):
        return False
    return not name.startswith("nan") or x.dtype.kind in "biu"


def _integer_moment(
    xp: Any, func: Callable[..., Any], name: str, what: str, args: tuple[Any, ...], kw: dict[str, Any]
) -> Any:
    """``np.mean``/``var``/``std(x, dtype=<an integer dtype>)`` as NumPy computes them: sums in that dtype (the
    elements cast to it, wrapping as NumPy's ``np.add.reduce(x, dtype=...)``), each true-divided by the count
    (the masked count with ``where=``) and cast back to the dtype, truncating (``np.mean([200, 100],
    dtype=np.uint8)`` is 22; the variance subtracts that truncated mean). ``np.std`` takes the square root of
    a scalar result (truncated too); of an array result NumPy's ``sqrt`` cannot write float64 into the integer
    result, a ``DTypeError`` here (NumPy's UFuncTypeError)."""
    given = {k: v for k, v in signature(func).bind(*args, **kw).arguments.items() if v is not np._NoValue}
    x = given.pop(next(iter(signature(func).parameters)))
    dtype, where = np.dtype(given.pop("dtype")), given.pop("where", True)
    out, keepdims = given.pop("out", None), given.pop("keepdims", False) is True
    axes = axes_of(given.pop("axis", None), x.ndim, what)
    ddof = None if name.endswith("mean") else _ddof(given, what)
    for key, value in given.items():
        if not is_neutral(key, value, None):
            raise refuse(what, key, value)
    total = np.sum(x, axis=axes, dtype=dtype, keepdims=True, where=where)
    if is_neutral("where", where):
        count: Any = math.prod(x.shape[k] for k in axes)
        short = count <= (ddof or 0)
    else:
        count = xp.sum(xp.astype(where_mask(xp, where, x, what), xp.float64), axis=axes, keepdims=True)
        short = bool(xp.any(count <= (ddof or 0)))  # (one replicated bool read)
    mean = xp.astype(xp.astype(total, xp.float64) / count, dtype)
    if ddof is None:
        result = mean
    else:
        rt = promote(x.dtype, dtype)
        d = xp.astype(x, rt) - xp.astype(mean, rt)
        ss = np.sum(d * d, axis=axes, dtype=dtype, keepdims=True, where=where)
        dof = xp.maximum(count - ddof, 0) if isinstance(count, ShardArray) else max(count - ddof, 0)
        result = xp.astype(xp.astype(ss, xp.float64) / dof, dtype)
    if short:
        message = "Mean of empty slice" if ddof is None else "Degrees of freedom <= 0 for slice"
        warnings.warn(message, RuntimeWarning, stacklevel=4)
    if name.endswith("std"):
        if out is not None or (keepdims and x.ndim) or len(axes) < x.ndim:  # (a 0-d keepdims result: a scalar)
            raise DTypeError(
                f"{what}: cannot cast the square root (float64) into dtype={dtype} under same_kind casting, as "
                f"NumPy's ufunc 'sqrt' cannot; give a floating dtype= (or none)"
            )
        result = xp.astype(xp.sqrt(xp.astype(result, xp.float64)), dtype)
    if not keepdims and axes:
        result = xp.squeeze(result, axis=axes)
    return write_out(out, result, what, "unsafe" if name in UNSAFE_OUT else "same_kind")


def _where_statistic(
    xp: Any, func: Callable[..., Any], name: str, what: str, args: tuple[Any, ...], kw: dict[str, Any]
) -> Any:
    """``np.mean``/``std``/``var`` and the nan-reductions with ``where=``, NumPy's way: a masked sum over a
    masked count (the nan-functions leave NaN out with the mask); ``nansum``/``nanmax``... are the plain
    reductions of the data with the left-out entries replaced by the identity (``initial`` for the extrema)."""
    given = {k: v for k, v in signature(func).bind(*args, **kw).arguments.items() if v is not np._NoValue}
    x = given.pop(next(iter(signature(func).parameters)))
    if not isinstance(x, ShardArray):
        return NotImplemented
    mask, mean = where_mask(xp, given.pop("where", True), x, what), given.pop("mean", None)
    inexact = x.dtype.kind == "c" or is_real_float(x.dtype)  # (bfloat16 too: its NaN are left out, as xp.nan*'s)
    if name in ("nansum", "nanprod") and inexact:  # (NumPy's: NaN read as +0.0 or 1, the entries where= skips left out)
        x = xp.where(xp.isnan(x), 0.0 if name == "nansum" else 1.0, x)
    elif name.startswith("nan") and inexact:
        mask = xp.logical_and(mask, xp.logical_not(xp.isnan(x)))
    if name.startswith("nan") and name in _INTEGER_MOMENTS and inexact and _integer_dtype(given.get("dtype")):
        raise DTypeError(
            f"{what}: dtype={np.dtype(given['dtype'])} for an array of {x.dtype}: the mean or variance of inexact "
            f"values needs an inexact dtype, as in NumPy; pass a float dtype, or cast the result with xp.astype"
        )
    if name in _NAN_PLAIN:
        ufunc_name = {"nansum": "add", "nanprod": "multiply", "nanmax": "maximum", "nanmin": "minimum"}[name]
        filled = masked_operand(xp, ufunc_name, x, mask, given.get("initial", np._NoValue), what)
        start = given.get("initial")
        if name in ("nanmax", "nanmin") and isinstance(start, (float, np.floating)) and math.isnan(start):
            # (NumPy's fmax/fmin loop from a NaN initial skips it: NaN only where the slice has no value)
            given["initial"] = -math.inf if name == "nanmax" else math.inf
            result = _NAN_PLAIN[name](filled, **{**given, "out": None})
            seen = xp.any(mask, axis=given.get("axis"), keepdims=bool(given.get("keepdims", False)))
            return write_out(given.get("out"), xp.where(seen, result, math.nan), what, "unsafe")  # (nanmax's)
        return _NAN_PLAIN[name](filled, **given)
    out, keepdims, dtype = given.pop("out", None), bool(given.pop("keepdims", False)), given.pop("dtype", None)
    axes = axes_of(given.pop("axis", None), x.ndim, what)
    ddof = _ddof(given, what)
    for key, value in given.items():
        if not is_neutral(key, value, None):
            raise refuse(what, key, value)
    nan_bad = name.startswith("nan") and inexact  # (NumPy's nanvar of floats: NaN where dof <= 0)
    result = _masked_moment(xp, x, mask, axes, dtype, None if name.endswith("mean") else ddof, nan_bad, mean)
    result = xp.sqrt(result) if name.endswith("std") else result
    if not keepdims and axes:
        result = xp.squeeze(result, axis=axes)
    return write_out(out, result, what, "unsafe" if name in UNSAFE_OUT else "same_kind")


def _masked_moment(
    xp: Any,
    x: ShardArray,
    mask: ShardArray,
    axes: tuple[int, ...],
    dtype: Any,
    ddof: Any,
    nan_bad: bool = False,
    given_mean: Any = None,
) -> Any:
    """The mean (``ddof`` None) or the variance of ``x`` over ``axes`` (kept) where ``mask`` holds, in NumPy's
    dtype: ``dtype``, else float64 for integers and bools, else ``x``'s (float16 computed in float32). A slice
    with no entry (with ``ddof`` or fewer for the variance) warns NumPy's RuntimeWarning ("Mean of empty slice",
    "Degrees of freedom <= 0 for slice"); the mean of an empty slice is NaN, a variance with no degree of
    freedom NumPy's ``ss / 0`` (inf, or NaN where ``ss`` is 0), NaN for the nan-functions (``nan_bad``).
    ``given_mean`` is ``np.var``'s ``mean=`` (NumPy 2's precomputed mean, of the keepdims shape)."""
    want = np.dtype(dtype) if dtype is not None else np.dtype(np.float64) if x.dtype.kind in "biu" else x.dtype
    work = np.dtype(np.float32) if want == np.float16 else want
    x = x if x.dtype == work else xp.astype(x, work)
    count = xp.sum(xp.astype(mask, xp.float64), axis=axes, keepdims=True)
    if bool(xp.any(count <= (0 if ddof is None else ddof))):  # (NumPy's warnings: one replicated bool read)
        message = "Mean of empty slice" if ddof is None else "Degrees of freedom <= 0 for slice"
        warnings.warn(message, RuntimeWarning, stacklevel=5)
    if given_mean is None:
        mean = xp.sum(xp.where(mask, x, 0), axis=axes, keepdims=True) / count
    else:  # (np.var(x, mean=m): NumPy 2's precomputed mean, of the keepdims shape)
        mean = given_mean
    mean = xp.astype(mean, work) if isinstance(mean, ShardArray) and mean.dtype != work else mean
    if ddof is None:
        return mean if mean.dtype == want else xp.astype(mean, want)
    d = xp.where(mask, x - mean, 0)
    sq = xp.real(d) ** 2 + xp.imag(d) ** 2 if d.dtype.kind == "c" else d * d
    ss, dof = xp.sum(sq, axis=axes, keepdims=True), xp.maximum(count - ddof, 0.0)
    var = ss / xp.where(dof > 0, dof, 1.0)  # (a partial sum divided only by nonzero counts: 0 / 0 is not inf / 0)
    over = float("nan") if nan_bad else xp.where(ss > 0, float("inf"), float("nan"))  # (NumPy's ss / 0, nan*'s NaN)
    var = xp.where(dof > 0, var, over)
    real = np.dtype(np.float32) if want.kind == "c" and want.itemsize == 8 else want
    real = np.dtype(np.float64) if real.kind == "c" else real
    if dtype is not None and want.kind == "c":  # (NumPy sums the squared deviations in dtype=: complex stays)
        return _complex_of_real(xp, var, want, nan_bad)
    return var if var.dtype == real else xp.astype(var, real)


def _mapping(np_sig: inspect.Signature, t_sig: inspect.Signature) -> dict[str, str]:
    """NumPy parameter -> namespace parameter: same name, a rename, else the next free positional-only one."""
    tparams = t_sig.parameters
    usable = {n for n, p in tparams.items() if p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD)}
    out: dict[str, str] = {}
    for p in np_sig.parameters.values():
        if p.name in usable:
            out[p.name] = p.name
        elif RENAMES.get(p.name) in usable:
            out[p.name] = RENAMES[p.name]
    free = [n for n, p in tparams.items() if p.kind == P.POSITIONAL_ONLY and n not in out.values()]
    for p in np_sig.parameters.values():
        if p.name in out or p.kind not in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD) or not free:
            continue
        out[p.name] = free.pop(0)
    return out


def call_derived(
    xp: Any, func: Callable[..., Any], target: Callable[..., Any], what: str, args: tuple[Any, ...], kw: dict[str, Any]
) -> Any:
    """``target`` called with NumPy's ``args``/``kw`` adapted (see the module docstring)."""
    np_sig, t_sig = signature(func), signature(target)
    np_params, tparams = np_sig.parameters, t_sig.parameters
    given = dict(np_sig.bind(*args, **kw).arguments)  # NumPy's dispatcher has checked them already
    for p in np_params.values():
        if p.kind == P.VAR_KEYWORD and p.name in given:
            given.update(given.pop(p.name))
    first = next(iter(np_params))
    name = what.rsplit(".", 1)[-1]
    ref = given.get(first)
    if name in PROMOTES_WITH and isinstance(ref, ShardArray):
        given[first] = _promoted(xp, ref, [given.get(k) for k in PROMOTES_WITH[name]])
    out = given.pop("out", None)
    if name in OUT_LOOPS and given.get("dtype") is None and isinstance(given.get(first), ShardArray):
        loop = out_loop(OUT_LOOPS[name], given[first].dtype, out)
        given["dtype"] = loop if loop is not None else given.get("dtype")
    ref = next((v for v in _leaves(given.values()) if isinstance(v, ShardArray)), ref)
    if name in JOINS and isinstance(given.get(first), (list, tuple)) and isinstance(ref, ShardArray):
        given[first] = [_scalar_array(xp, v, ref) for v in given[first]]
    host_ok = name in HOST_FIRST
    given = {k: _host_argument(what, name, k, v, k == first, host_ok, ref) for k, v in given.items()}
    keepdims = bool(given.pop("keepdims")) if "keepdims" in given and "keepdims" not in tparams else False
    sort_kind = given.pop("kind", None) if "kind" not in tparams else None
    if sort_kind is not None and name in ("sort", "argsort") and _stable_kind(sort_kind, given.get("stable"), what):
        given["stable"] = True
    elif sort_kind in ("stable", "mergesort") and "stable" in tparams and given.get("stable") is None:
        given["stable"] = True
    result_dtype = None  # an integer dtype= the namespace's function cannot compute in (np.mean(x, dtype=np.int32))
    if "dtype" in given and "dtype" not in tparams:
        dtype = given.pop("dtype")
        if dtype is not None:
            casting = given.pop("casting", "same_kind") if "casting" in np_params else "unsafe"
            given[first] = cast_to(xp, given.get(first), dtype, casting, what)
            result_dtype = np.dtype(dtype) if np.dtype(dtype).kind in "iubc" else None
    for key in ("axis", "axes"):  # NumPy's default axis where the namespace's differs
        np_param = np_params.get(key)
        if np_param is not None and key not in given and key in tparams and np_param.default is not P.empty:
            if not (np_param.default is tparams[key].default or np_param.default == tparams[key].default):
                given[key] = np_param.default
    x = given.get(first)
    axis_given = given["axis"] if "axis" in given else getattr(np_params.get("axis"), "default", None)
    if (
        isinstance(x, ShardArray)
        and x.ndim == 0
        and name in ZERO_D_AXIS
        and _is_first_axis(axis_given)
        and (name not in _ZERO_D_FLOATS or x.dtype.kind in "fc")
    ):
        if name in FLATTEN_ON_NONE and name not in _ZERO_D_REDUCE:
            given[first], given["axis"] = xp.reshape(x, (1,)), 0  # (NumPy's scan or sort of the 0-d array as 1-D)
        else:
            given["axis"] = None  # (NumPy's reduction of the one element)
    keep_all = False  # axis=None, keepdims=True of a function that flattens: the result gets x's ndim of 1s
    if name in FLATTEN_ON_NONE and "axis" in np_params and isinstance(x, ShardArray):
        axis = given.get("axis", np_params["axis"].default)
        if axis is None:
            given[first] = xp.reshape(x, (-1,)) if x.ndim != 1 else x
            given["axis"] = 0
            keep_all, keepdims = keepdims or bool(given.pop("keepdims", False)), False
    mapping = _mapping(np_sig, t_sig)
    takes_kwargs = any(t.kind == P.VAR_KEYWORD for t in tparams.values())
    values: dict[str, Any] = {}
    var_args: tuple[Any, ...] = ()
    for key, value in given.items():
        if key not in np_params:  # a keyword NumPy's **kwargs took (np.pad's constant_values=): on if taken
            if key in tparams or takes_kwargs:
                values[key] = value
            elif not is_neutral(key, value):
                raise refuse(what, key, value)
            continue
        p = np_params[key]
        if p.kind == P.VAR_POSITIONAL:
            if not any(t.kind == P.VAR_POSITIONAL for t in tparams.values()):
                return NotImplemented
            var_args = tuple(value)
            continue
        t = mapping.get(key)
        if t is None:
            if is_neutral(key, value, p.default):
                continue
            raise refuse(what, key, value)
        if value is None and p.default is None and tparams[t].default not in (None, P.empty):
            continue  # NumPy's None is "the default" (norm=None, stable=None)
        if t in ("shape", "repetitions") and isinstance(value, (int, np.integer)):
            value = (int(value),)
        values[t] = value
    result = target(*_positional(tparams, values, var_args), **values)
    if keepdims and isinstance(result, ShardArray) and isinstance(x, ShardArray):
        axes = axes_of(given.get("axis"), x.ndim, what)
        if result.ndim == x.ndim - len(axes):
            result = xp.expand_dims(result, axis=axes) if axes else result
    if keep_all and isinstance(result, ShardArray) and isinstance(x, ShardArray):
        result = xp.reshape(result, (1,) * x.ndim)
    if result_dtype is not None and isinstance(result, ShardArray) and result.dtype != result_dtype:
        if result_dtype.kind != "c":
            result = xp.astype(result, result_dtype)
        elif result.dtype.kind != "c":  # (np.var(x, dtype=complex): the complex dtype)
            result = _complex_of_real(xp, result, result_dtype)
    if name in _ARG_OUT and isinstance(out, ShardArray):
        if not np.can_cast(out.dtype, np.int64, "safe"):  # (NumPy: out= must cast to intp safely, then any int)
            raise DTypeError(
                f"{what}: out= of dtype {out.dtype} cannot hold the indices (NumPy asks an integer out=, one that "
                f"casts to int64 safely); give an integer out= or none"
            )
        return write_out(out, result, what, "unsafe")
    return write_out(out, result, what, "unsafe" if name in UNSAFE_OUT else "same_kind")


def _complex_of_real(xp: Any, r: ShardArray, dtype: np.dtype, nan_real: bool = False) -> ShardArray:
    """A real variance (or standard deviation) ``r`` in the complex ``dtype``, as NumPy's ``np.var(x,
    dtype=complex)`` gives it: ``r + 0j`` where finite; where not (no degree of freedom, an infinite or NaN
    entry) NumPy's complex division makes the imaginary part NaN (``inf+nanj``, ``nan+nanj``). ``nan_real``:
    a NaN ``r`` is ``nan+0j`` (``np.nanvar`` of floats writes a real NaN where a slice has no degree of freedom)."""
    c = xp.astype(r, dtype)
    ok = xp.logical_or(xp.isfinite(r), xp.isnan(r)) if nan_real else xp.isfinite(r)
    return xp.where(ok, c, c + complex(0.0, math.nan))


def _host_argument(what: str, name: str, key: str, value: Any, first: bool, host_ok: bool, ref: Any) -> Any:
    """NumPy's argument ``key`` as the namespace takes it: the first (an array; host data only for ``HOST_FIRST``),
    a host setting (``HOST_PARAMS``, ``HOST_AXIS``), a NumPy scalar kept (``STRONG_SCALARS``), else ``host_value``
    (NumPy scalars as Python ones, a NumPy array of 1 or more dims refused)."""
    if first:
        return value if host_ok or not _host_array(value) else host_value(what, value, key, ref)
    if key in HOST_PARAMS or (key == "axis" and name in HOST_AXIS):
        return value if key == "q" else host_setting(value)
    if key in STRONG_SCALARS and isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        return value
    return host_value(what, value, key, ref)


def _scalar_array(xp: Any, value: Any, ref: ShardArray) -> Any:
    """A scalar among the arrays ``np.stack``/``np.concatenate`` join as a 0-d array on ``ref``'s mesh, as NumPy's
    ``asanyarray`` makes it: a NumPy scalar or 0-d array keeps its dtype, a Python scalar gets NumPy's default;
    arrays and anything else as given (a host array is refused later, as everywhere)."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return xp.asarray(value, device=ref.mesh)
    if isinstance(value, (bool, int, float, complex)):
        return xp.asarray(np.asarray(value), device=ref.mesh)
    return value


def _positional(tparams: Any, values: dict[str, Any], var_args: tuple[Any, ...]) -> list[Any]:
    """The namespace's positional-only arguments, in order, taken out of ``values`` (defaults fill gaps)."""
    pos: list[Any] = []
    pending: list[Any] = []
    for name, p in tparams.items():
        if p.kind == P.POSITIONAL_ONLY:
            if name in values:
                pos += pending + [values.pop(name)]
                pending = []
            elif p.default is P.empty:
                break  # a required argument NumPy's call did not give: the namespace's own TypeError says so
            else:
                pending.append(p.default)
        elif p.kind == P.VAR_POSITIONAL:
            pos += list(var_args)
    return pos


def _is_first_axis(axis: Any) -> bool:
    """Whether ``axis`` is 0 or -1 (an integer, not a bool): the axis NumPy lets name a 0-d array's one element."""
    return isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and int(axis) in (0, -1)


def _leaves(values: Any) -> Any:
    """``values`` and the items of those that are lists or tuples (one level: ``np.concatenate``'s arrays)."""
    for v in values:
        yield from v if isinstance(v, (list, tuple)) else (v,)


def _host_array(value: Any) -> bool:
    """Whether ``value`` is a NumPy array of 1 or more dims, or a list or tuple holding one: host data that the
    dispatch refuses as an operand wherever it stands (first or not), as ``host_value`` does."""
    return any(isinstance(v, np.ndarray) and v.ndim > 0 for v in _leaves((value,)))


def _empty_pinv(space: str, name: str, args: tuple[Any, ...], kw: dict[str, Any]) -> bool:
    """Whether the call is ``np.linalg.pinv`` of an array whose matrices are empty (a last-two dim of size 0): NumPy
    returns an empty result of the array's own dtype then (integers too), as ``xp.linalg.pinv`` does, so the
    array is not cast to float64 first."""
    x = args[0] if args else kw.get("a")
    return (space, name) == ("linalg", "pinv") and isinstance(x, ShardArray) and x.ndim >= 2 and 0 in x.shape[-2:]


def _float_input(xp: Any, value: Any) -> Any:
    """An integer or bool array as float64 (NumPy's conversion for its floating-point functions); others as given."""
    return xp.astype(value, xp.float64) if isinstance(value, ShardArray) and value.dtype.kind in "iub" else value


def _stable_kind(kind: Any, stable: Any, what: str) -> bool:
    """Whether NumPy's sort ``kind`` asks for a stable sort (``"stable"``, ``"mergesort"``: True; ``"quicksort"``,
    ``"heapsort"``: False; NumPy reads the first letter, any case). An unknown kind, or ``kind`` beside ``stable=``,
    raises ``ArgumentError`` (NumPy's ValueError)."""
    letter = kind[:1].lower() if isinstance(kind, str) else ""
    if letter not in ("q", "h", "s", "m"):
        raise ArgumentError(f"{what}: sort kind must be one of 'quicksort', 'heapsort' or 'stable'; got {kind!r}")
    if stable is not None:
        raise ArgumentError(f"{what}: give kind= or stable=, not both (kind={kind!r}, stable={stable!r}), as NumPy")
    return letter in ("s", "m")


def _promoted(xp: Any, x: ShardArray, others: list[Any]) -> ShardArray:
    """``x`` cast to ``np.result_type`` of its dtype and the arrays and scalars among ``others`` (NEP 50: Python
    scalars weak, NumPy scalars strong); None and other values do not take part."""
    kinds: list[Any] = [getattr(v, "dtype", v) for v in others if isinstance(v, (ShardArray, Number))]
    dtype = np.result_type(x.dtype, *kinds)
    return x if dtype == x.dtype else xp.astype(x, dtype)
