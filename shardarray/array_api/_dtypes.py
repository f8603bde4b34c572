"""The standard's dtypes and data type functions (``astype``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``, ...).

The dtype objects are NumPy's scalar types (``xp.float32`` is ``np.float32``),
as in NumPy's own namespace, so ``x.dtype == xp.float32`` holds for every array
(and, unlike ``np.dtype("float64")``, no dtype object equals ``None``). Every
function here accepts them, ``np.dtype`` objects and dtype names alike, and
returns ``np.dtype`` objects (``result_type``, ``finfo(...).dtype``). Type promotion follows the
standard's table for the combinations it specifies (NumPy 2 agrees with it
there); mixed kinds, which the standard leaves to the implementation, follow
NumPy 2 (``int64`` with ``float32`` gives ``float64``). Python scalars are
weak, as in the 2024.12 standard: ``result_type(xp.int8, 1)`` is ``int8``.

bfloat16 (``ml_dtypes.bfloat16``, which the namespace's arrays may hold) is a real
floating dtype here as in every op: ``result_type`` promotes it as the ops do
(``shardarray.dtypes.promote``: with float16 or a 16-bit integer float32, with a
32/64-bit integer float64, where NumPy has no rule), a Python ``float`` keeps it
and a ``complex`` makes complex64; ``can_cast``, ``finfo`` and ``isdtype`` (``"real
floating"``) treat it as the float it is.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from ..array import ShardArray
from ..dtypes import as_dtype, is_real_float, promote
from ..errors import ArgumentError, DTypeError, MeshError
from ..mesh import Mesh
from ..ops.manipulation import structure
from ..ops.manipulation.reshard import reshard
from ._array import wrap
from ._creation import _copy

# NumPy's scalar types, as NumPy's own namespace has them: ``xp.float32 == x.dtype`` holds, and unlike a
# ``np.dtype`` instance (``np.dtype("float64") == None`` is True) none of them equals None.
bool = np.bool_
int8 = np.int8
int16 = np.int16
int32 = np.int32
int64 = np.int64
uint8 = np.uint8
uint16 = np.uint16
uint32 = np.uint32
uint64 = np.uint64
float32 = np.float32
float64 = np.float64
#: NumPy's half precision (an extension: the standard has no float16). A real floating dtype everywhere
#: (``isdtype(float16, "real floating")``, ``finfo``, promotion as NumPy's), but not among the standard's dtypes
#: that ``__array_namespace_info__().dtypes()`` lists, as NumPy's own info object leaves it out too.
float16 = np.float16
complex64 = np.complex64
complex128 = np.complex128

#: the standard's dtypes, by name
DTYPES: dict[str, type] = {
    np.dtype(d).name: d
    for d in (bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, complex64, complex128)
}
#: the standard's dtype kinds (``isdtype``), each with its test of a dtype
_KINDS: dict[str, Callable[[np.dtype], builtins.bool]] = {
    "bool": lambda dt: dt.kind == "b",
    "signed integer": lambda dt: dt.kind == "i",
    "unsigned integer": lambda dt: dt.kind == "u",
    "integral": lambda dt: dt.kind in "iu",
    "real floating": is_real_float,
    "complex floating": lambda dt: dt.kind == "c",
    "numeric": lambda dt: dt.kind in "iuc" or is_real_float(dt),
}


def _dtype_of(x: Any, what: str) -> np.dtype:
    """The dtype of an array, or ``x`` itself as a dtype (a NumPy dtype, scalar type or name)."""
    if isinstance(x, ShardArray):
        return x.dtype
    if isinstance(x, np.ndarray):
        return x.dtype
    if isinstance(x, (builtins.bool, int, float, complex)) and not isinstance(x, np.generic):
        raise DTypeError(f"{what} takes a dtype or an array; got the Python scalar {x!r}")
    try:
        return as_dtype(x)
    except DTypeError as err:
        raise DTypeError(f"{what}: {err}") from None


def astype(x: ShardArray, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> ShardArray:
    """``x`` cast to ``dtype`` on every shard (no communication; a pending sum is resolved first).

    Args:
        x: the array.
        dtype: the target dtype (``xp.float32``, ``"int64"``, ...).
        copy: False returns ``x`` itself when it already has ``dtype``.
        device: the mesh of the result: another one moves ``x`` there first (``sa.reshard``, as
            ``x.to_device(device)``).

    A complex array is not cast to a real dtype (the standard forbids it): take
    ``xp.real(x)`` or ``xp.abs(x)`` first.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.astype(xp.asarray([[1.5, 2.5]]), xp.int32).dtype
        dtype('int32')
    """
    if not isinstance(x, ShardArray):
        raise DTypeError(f"astype takes an array; got {type(x).__name__}. Make one first with xp.asarray")
    if device is not None and device is not x.mesh and device != x.mesh:
        if not isinstance(device, Mesh):
            raise MeshError(f"astype: device must be a sa.Mesh; got {type(device).__name__} {device!r:.80}")
        return astype(wrap(reshard(x, device)), dtype, copy=False)  # (reshard copies: x.to_device's move)
    if not isinstance(copy, (builtins.bool, np.bool_)):
        raise ArgumentError(f"astype: copy must be True or False; got {copy!r}")
    dt = _dtype_of(dtype, "astype")
    if dt == x.dtype:
        return _copy(x) if copy else wrap(x)
    return wrap(structure.astype(x, dt))


_PROMOTE_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether ``from_`` (a dtype or an array) promotes to ``to`` by the standard's type promotion rules.

    Only casts within a kind are promotions (``int8`` to ``int16``, ``uint8``
    to ``int16``, ``float32`` to ``complex64``, ``bfloat16`` to ``float32``); ``int64`` to ``float64`` is
    not (``astype`` still does it), nor is ``float16`` to ``bfloat16`` or back (they promote to float32).

    Example:
        >>> import shardarray.array_api as xp
        >>> xp.can_cast(xp.int8, xp.int16), xp.can_cast(xp.int64, xp.float64)
        (True, False)
    """
    f, t = _dtype_of(from_, "can_cast"), _dtype_of(to, "can_cast")
    if f == t:
        return True
    if (f.kind == "b") != (t.kind == "b") or (f.kind in "iu") != (t.kind in "iu"):
        return False
    return promote(f, t) == t


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a floating-point dtype (the standard's ``finfo_object``)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:
    """Machine limits of an integer dtype (the standard's ``iinfo_object``)."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type: Any, /) -> finfo_object:
    """Machine limits of a floating-point dtype (of a complex dtype: of its real part).

    Example:
        >>> import shardarray.array_api as xp
        >>> xp.finfo(xp.complex64).bits, xp.finfo(xp.float64).eps
        (32, 2.220446049250313e-16)
    """
    dt = _dtype_of(type, "finfo")
    if dt.kind != "c" and not is_real_float(dt):
        raise DTypeError(f"finfo takes a floating-point dtype; got {dt.name} (use xp.iinfo for integer dtypes)")
    fi = ml_dtypes.finfo(dt)  # (NumPy's finfo, and bfloat16's, which NumPy's refuses)
    return finfo_object(
        int(fi.bits), float(fi.eps), float(fi.max), float(fi.min), float(fi.smallest_normal), np.dtype(fi.dtype)
    )


def iinfo(type: Any, /) -> iinfo_object:
    """Machine limits of an integer dtype.

    Example:
        >>> import shardarray.array_api as xp
        >>> xp.iinfo(xp.uint8).max, xp.iinfo(xp.int16).min
        (255, -32768)
    """
    dt = _dtype_of(type, "iinfo")
    if dt.kind not in "iu":
        raise DTypeError(f"iinfo takes an integer dtype; got {dt.name} (use xp.finfo for floating-point dtypes)")
    ii = np.iinfo(dt)
    return iinfo_object(int(ii.bits), int(ii.max), int(ii.min), dt)


def _is_kind(dt: np.dtype, kind: Any) -> builtins.bool:
    if isinstance(kind, str):
        test = _KINDS.get(kind)
        if test is None:
            raise ArgumentError(f"isdtype: unknown kind {kind!r}; use a dtype or one of {tuple(_KINDS)}")
        return test(dt)
    return dt == _dtype_of(kind, "isdtype")


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Whether ``dtype`` is of ``kind``: a kind name (``"integral"``, ``"real floating"``, ...), a dtype, or a tuple.

    Example:
        >>> import shardarray.array_api as xp
        >>> xp.isdtype(xp.uint8, "integral"), xp.isdtype(xp.float32, ("bool", "complex floating"))
        (True, False)
    """
    if isinstance(dtype, ShardArray):
        raise DTypeError("isdtype takes a dtype, not an array; pass x.dtype")
    dt = _dtype_of(dtype, "isdtype")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return builtins.any(_is_kind(dt, k) for k in kinds)


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype the standard's type promotion gives ``arrays_and_dtypes`` (arrays, dtypes and Python scalars).

    Python scalars are weak: they take the dtype of the arrays (a ``float``
    with an integer array gives the default float, as NumPy does; a
    ``complex`` with ``float32`` gives ``complex64``). Python scalars alone
    (the standard asks for an array or a dtype) give NumPy's answer, the
    default dtype of their highest kind: ``result_type(-2, 1, 10.0)`` is
    float64, ``result_type(1)`` int64, ``result_type(True)`` bool.

    Example:
        >>> import shardarray.array_api as xp
        >>> xp.result_type(xp.int8, xp.uint8), xp.result_type(xp.float32, 1.0), xp.result_type(xp.float32, 1j)
        (dtype('int16'), dtype('float32'), dtype('complex64'))
    """
    dtypes: list[np.dtype] = []
    scalars: list[Any] = []
    for a in arrays_and_dtypes:
        if isinstance(a, (builtins.bool, int, float, complex)) and not isinstance(a, np.generic):
            scalars.append(a)
        else:
            dtypes.append(_dtype_of(a, "result_type"))
    if not dtypes:
        if not scalars:
            raise DTypeError("result_type needs at least one array, dtype or Python scalar; got none")
        first = scalars[0]
        kind = builtins.bool if isinstance(first, builtins.bool) else int if isinstance(first, int) else type(first)
        dtypes = [np.dtype({builtins.bool: np.bool_, int: int64, float: float64, complex: np.complex128}[kind])]
    try:
        out = promote(*dtypes)
    except TypeError:  # (NumPy's DTypePromotionError: no common dtype)
        raise DTypeError(
            f"result_type: the dtypes {', '.join(str(d) for d in dtypes)} have no common dtype; cast one of them "
            f"first (xp.astype)"
        ) from None
    for s in scalars:
        out = _weak(out, s)
    return out


def _weak(dt: np.dtype, s: Any) -> np.dtype:
    """``dt`` combined with the Python scalar ``s`` (NumPy 2's weak scalars; bfloat16 as the ops treat it: a
    ``float`` keeps it, a ``complex`` makes complex64)."""
    if isinstance(s, builtins.bool):
        return dt
    if isinstance(s, int):
        return dt if dt.kind != "b" else np.dtype(int64)
    if isinstance(s, float):
        return dt if dt.kind == "c" or is_real_float(dt) else np.dtype(float64)
    if dt.kind == "c":
        return dt
    if is_real_float(dt):
        return promote(dt, np.complex64)
    return np.dtype(complex128)


__all__ = [
    "astype",
    "bool",
    "can_cast",
    "complex64",
    "complex128",
    "finfo",
    "float16",
    "float32",
    "float64",
    "iinfo",
    "int8",
    "int16",
    "int32",
    "int64",
    "isdtype",
    "result_type",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]
