"""NumPy's arguments as the positional dispatch adapts them: neutral keywords, host operands, axes and ``out=``.

``out=`` is honoured the NumPy way when it is a positional array of the
result's shape: the result is written into it in place (``out[...] = result``,
the library's in-place write: shards replaced, replicas kept consistent) and
``out`` is returned, so ``np.sum(x, axis=0, out=o)`` and ``np.exp(x, out=x)``
behave as in NumPy. An ``out`` NumPy array is refused (filling it would be a
silent gather), as is a result dtype that NumPy's ``same_kind`` casting would
refuse.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     x = xp.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    ...     o = xp.zeros((3,))
    >>> np.sum(x, axis=0, out=o) is o, np.asarray(o)
    (True, array([5., 7., 9.]))
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DimensionError, DTypeError, MeshError, OutOfBoundsError
from .common import mixing_error, same, short

#: NumPy keywords and the values that change nothing for a distributed array (besides each keyword's default)
NEUTRAL: dict[str, tuple[Any, ...]] = {
    "out": (None,),
    "dtype": (None,),
    "keepdims": (False,),
    "where": (True,),
    "order": ("C", "K", "A", None),
    "subok": (True, False),
    "casting": ("same_kind",),
    "like": (None,),
    "device": (None, "cpu"),
    "copy": (None, True),
    "mode": ("raise",),
    "signature": (None,),
    "sparse": (False,),
    "hermitian": (False,),
    "compute_uv": (True,),
    "UPLO": ("L",),
    "overwrite_input": (False,),
}


def is_neutral(key: str, value: Any, default: Any = inspect.Parameter.empty) -> bool:
    """Whether passing ``key=value`` to a NumPy function changes nothing here (its default, or a no-op value)."""
    if value is default or value is np._NoValue or same(value, default):
        return True
    return any(value is v or same(value, v) for v in NEUTRAL.get(key, ()))


def refuse(what: str, key: str, value: Any) -> ArgumentError:
    """The error for a NumPy keyword value the distributed array does not honour."""
    return ArgumentError(
        f"{what}: {key}={short(value)} is not supported on distributed arrays; call it without {key}= "
        f"(or gather explicitly with np.asarray(x) and use NumPy)"
    )


def check_neutral(what: str, func: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """Raise ``refuse`` for the first of ``kwargs`` that is not neutral (NumPy's defaults taken from ``func``)."""
    params = signature(func).parameters
    for key, value in kwargs.items():
        default = params[key].default if key in params else inspect.Parameter.empty
        if not is_neutral(key, value, default):
            raise refuse(what, key, value)


_SIGNATURES: dict[Any, inspect.Signature] = {}


def signature(func: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature(func)``, cached (NumPy's functions and the namespace's do not change)."""
    try:
        return _SIGNATURES[func]
    except (KeyError, TypeError):
        pass
    sig = inspect.signature(func)
    try:
        _SIGNATURES[func] = sig
    except TypeError:  # pragma: no cover - an unhashable callable
        pass
    return sig


def host_value(what: str, value: Any, key: int | str, ref: Any) -> Any:
    """An argument as the namespace takes it: NumPy scalars and 0-d arrays become Python scalars; a NumPy array
    of 1 or more dims (also inside a list or tuple) is refused with the explicit conversion named."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value.item()
        raise mixing_error(what, value, key, ref)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) and v.ndim for v in value):
        bad = next(v for v in value if isinstance(v, np.ndarray) and v.ndim)
        raise mixing_error(what, bad, key, ref)
    return value


def host_setting(value: Any) -> Any:
    """A host setting (a shape, axes, widths: not an operand) as the namespace takes it: a NumPy array as (nested)
    tuples of Python values, a NumPy scalar as a Python one, inside lists and tuples too; others as given."""
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else _tuples(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)) and any(isinstance(v, (np.ndarray, np.generic, list, tuple)) for v in value):
        return type(value)(host_setting(v) for v in value)
    return value


def _tuples(value: Any) -> Any:
    """Nested lists (``ndarray.tolist()``) as nested tuples."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def cast_to(xp: Any, value: Any, dtype: Any, casting: str, what: str) -> Any:
    """``value`` (an array or a sequence of arrays) cast to ``dtype``, for a function without ``dtype=``; a cast
    that NumPy's ``casting`` rule forbids (``np.concatenate``'s default ``same_kind``) is a ``DTypeError``."""
    if isinstance(value, (list, tuple)):
        return type(value)(cast_to(xp, v, dtype, casting, what) for v in value)
    if not isinstance(value, ShardArray):
        return value
    if not np.can_cast(value.dtype, dtype, casting):  # type: ignore[arg-type]
        raise DTypeError(
            f"{what}: cannot cast an array of {value.dtype} to dtype={np.dtype(dtype)} under casting={casting!r}, "
            f"as in NumPy; pass casting='unsafe', or cast explicitly with xp.astype"
        )
    return xp.astype(value, dtype)


def axes_of(axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """NumPy's ``axis`` (None: all, an int, a tuple of ints) as sorted non-negative positions; a non-integer is
    a ``DTypeError`` (NumPy's TypeError), an axis out of range an ``OutOfBoundsError``."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in items:
        try:
            k = operator.index(a)
        except TypeError:
            raise DTypeError(  # (NumPy's TypeError: 'float' object cannot be interpreted as an integer)
                f"{what}: axis must be an integer or a tuple of integers; got {axis!r}. Pass int(axis)"
            ) from None
        if not -ndim <= k < ndim:
            raise OutOfBoundsError(f"{what}: axis {k} is out of bounds for array of dimension {ndim}")
        out.append(k % ndim)
    if len(set(out)) != len(out):
        raise DimensionError(f"{what}: axis {axis!r} repeats an axis")
    return tuple(sorted(out))


def write_out(out: Any, result: Any, what: str, casting: str = "same_kind") -> Any:
    """NumPy's ``out=``: ``result`` written in place into the positional array ``out``, which is returned.

    None (or a tuple of Nones) returns ``result``. ``out`` must be a ShardArray of the result's shape on its
    mesh, and the result's dtype must cast to ``out``'s under ``casting`` (NumPy's ``same_kind`` by default); a
    NumPy array is refused (a ``DTypeError``, a TypeError as NumPy raises for an ``out`` it cannot use). A tuple
    ``result`` (``np.divmod``, ``np.modf``: a ufunc of several outputs) takes a tuple ``out`` of one entry per
    output, each an array or None (that output is returned as computed), as NumPy's.
    """
    if out is None or (isinstance(out, tuple) and all(o is None for o in out)):
        return result  # (a named tuple stays one: np.linalg.qr(x).Q)
    if isinstance(result, tuple):
        outs = out if isinstance(out, tuple) else None
        if outs is None or len(outs) != len(result):
            raise DTypeError(  # (NumPy's TypeError: 'out' must be a tuple of arrays / ValueError for its length)
                f"{what}: out= must be a tuple of {len(result)} entries (arrays or None), one per output; got "
                f"{short(out)}"
            )
        return tuple(write_out(o, r, what, casting) for o, r in zip(outs, result))
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ArgumentError(f"{what}: out= must hold one array for a function with one result; got {len(out)}")
        out = out[0]
    if out is None:
        return result
    if not isinstance(out, ShardArray):
        raise DTypeError(
            f"{what}: out= must be a distributed array of the result's shape; got {short(out)}. Writing into a "
            f"NumPy array would gather the result silently: call without out= and gather explicitly with "
            f"np.asarray(result)"
        )
    shape = result.shape if isinstance(result, ShardArray) else ()
    dtype = result.dtype if isinstance(result, ShardArray) else np.result_type(result)
    if out.shape != shape:
        raise DimensionError(f"{what}: out= has shape {out.shape}, the result has shape {shape}")
    if not np.can_cast(dtype, out.dtype, casting):  # type: ignore[arg-type]
        raise DTypeError(
            f"{what}: the result's dtype {dtype} cannot be written into out= of dtype {out.dtype} under NumPy's "
            f"{casting} casting; cast explicitly (xp.astype) or give an out of dtype {dtype}"
            + (" (or casting='unsafe')" if casting != "unsafe" else "")
        )
    if isinstance(result, ShardArray) and result.mesh != out.mesh:
        raise MeshError(
            f"{what}: out= lives on {out.mesh}, the result on {result.mesh}; move one with sa.reshard first"
        )
    out[...] = result
    return out
