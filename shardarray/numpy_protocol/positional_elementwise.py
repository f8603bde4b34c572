"""NumPy's elementwise functions composed from the namespace's: ``np.round``, ``np.copy``, ``np.emath``.

Registered in ``positional_compose.COMPOSED``. The choices for distributed arrays:

* ``np.round(x, decimals)`` scales by ``10**decimals`` and rounds half to even, as NumPy does (so the same
  floating-point results); ``np.round`` of bools is NumPy's float16 (``decimals=0`` only);
* ``np.emath``'s functions make a real operand complex where one of its elements is outside the real domain, as
  NumPy's ``_fix_real_lt_zero`` and friends (one replicated bool read, as the result's dtype depends on it).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([0.125, -4.0, 2.5])
    >>> np.asarray(np.round(a, 2)).tolist(), np.asarray(np.emath.sqrt(a)).dtype
    ([0.12, -4.0, 2.5], dtype('complex128'))
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import DTypeError
from .positional_args import host_value, write_out
from .positional_compose import COMPOSED, _no_kwargs, _ref, composed


@composed("round", "around")
def _round(xp: Any, what: str, a: Any, decimals: int = 0, out: Any = None) -> Any:
    d = operator.index(decimals)
    if a.dtype == np.bool_:
        if d != 0:  # NumPy scales float16 bools and cannot write them back into bool (its UFuncTypeError)
            raise DTypeError(f"{what}: bools round with decimals=0 only, as in NumPy; cast first with x.astype")
        return write_out(out, xp.astype(a, np.float16), what)  # NumPy's loop for bools: float16 (0. and 1.)
    if d == 0:
        result = xp.round(a)
    elif np.dtype(a.dtype).kind in "iu" and d > 0:
        result = xp.astype(a, a.dtype, copy=True)
    else:
        scale = 10.0 ** abs(d)
        result = xp.round(a * scale) / scale if d > 0 else xp.round(a / scale) * scale
        if np.dtype(a.dtype).kind in "iu":
            result = xp.astype(result, a.dtype)
    return write_out(out, result, what)


@composed("copy")
def _copy(xp: Any, what: str, a: Any, order: str = "K", subok: bool = False) -> Any:
    _no_kwargs(what, order=order)
    return xp.astype(a, a.dtype, copy=True)


# ------------------------------------------------------------------ np.emath (numpy.lib.scimath)

#: the real dtypes that ``np.emath`` makes complex64 (NumPy's ``_tocomplex``); the others become complex128
_SINGLE_COMPLEX = frozenset({"float32", "int8", "int16", "uint8", "uint16"})


def _emath_operand(xp: Any, what: str, v: Any, i: int, ref: Any, outside: Callable[[Any], Any]) -> Any:
    """NumPy's domain fix of an ``np.emath`` operand: a real one with an element where ``outside`` holds becomes
    complex (``_fix_real_lt_zero`` and friends). The test is one replicated bool read of a distributed operand, as
    the result's dtype depends on it; a host operand stays a NumPy 0-d array (strong, as NumPy's ``asarray``)."""
    v = v if isinstance(v, ShardArray) else _host_operand(what, v, i, ref)
    if v.dtype.kind not in "iuf" or not bool(outside(v).any()):
        return v
    return v.astype(np.complex64 if v.dtype.name in _SINGLE_COMPLEX else np.complex128)


def _host_operand(what: str, v: Any, i: int, ref: Any) -> np.ndarray:
    """A host operand of ``np.emath`` as NumPy's ``asarray`` makes it (a NumPy scalar keeps its dtype; arrays of
    one or more dims are refused, as everywhere: ``xp.asarray`` them)."""
    return np.asarray(v if isinstance(v, np.generic) else host_value(what, v, i, ref))


def _emath(ufunc: np.ufunc, outside: Callable[[Any], Any]) -> Callable[..., Any]:
    def handler(xp: Any, what: str, *args: Any) -> Any:
        ref = _ref(*args)
        return ufunc(*(_emath_operand(xp, what, v, i, ref, outside) for i, v in enumerate(args)))

    return handler


def _negative(v: Any) -> Any:
    return v < 0


def _beyond_one(v: Any) -> Any:
    return abs(v) > 1


for _name, _ufunc, _outside in (
    ("sqrt", np.sqrt, _negative),
    ("log", np.log, _negative),
    ("log2", np.log2, _negative),
    ("log10", np.log10, _negative),
    ("arccos", np.arccos, _beyond_one),
    ("arcsin", np.arcsin, _beyond_one),
    ("arctanh", np.arctanh, _beyond_one),
):
    COMPOSED[("emath", _name)] = _emath(_ufunc, _outside)


@composed("logn", space="emath")
def _emath_logn(xp: Any, what: str, n: Any, x: Any) -> Any:
    """``np.emath.logn(n, x)``: ``log(x) / log(n)`` of the domain-fixed operands, NumPy's definition."""
    ref = _ref(n, x)
    a, b = (_emath_operand(xp, what, v, i, ref, _negative) for i, v in enumerate((n, x)))
    return np.log(b) / np.log(a)


@composed("power", space="emath")
def _emath_power(xp: Any, what: str, x: Any, p: Any) -> Any:
    """``np.emath.power(x, p)``: a negative real ``x`` makes it complex, a negative integer ``p`` float64
    (``p * 1.0``), as NumPy's."""
    ref = _ref(x, p)
    base = _emath_operand(xp, what, x, 0, ref, _negative)
    q = p if isinstance(p, ShardArray) else _host_operand(what, p, 1, ref)
    q = q * 1.0 if q.dtype.kind in "iu" and bool((q < 0).any()) else q
    return np.power(base, q)
