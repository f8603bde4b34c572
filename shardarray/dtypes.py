"""Dtype parsing with clear errors, and the dtype rules the ops share.

Rules (one place for every op):

* **Accumulation.** Sums of floats narrower than 32 bits (float16, bfloat16)
  accumulate in float32 and are rounded once, as NumPy's ``mean`` does:
  ``accumulation_dtype``.
* **bfloat16** (``ml_dtypes.bfloat16`` on NumPy, CuPy's bfloat16 on GPU) is a
  real float everywhere (``is_real_float``); NumPy gives it kind ``"V"``, so
  code asks ``is_real_float`` rather than ``dtype.kind == "f"``. On NumPy the
  math on it runs in float32 and is rounded once (``compute_dtype``):
  ml_dtypes' own loops are 3-40x slower than float32 ones and some (mixed
  bfloat16/float16 promotion) are missing. ``promote`` gives the result
  dtype of mixed operands where NumPy has no rule (bfloat16 with float16 or
  a wide integer: float32).
* **Domains.** An op declares which dtypes it is defined for
  (``check_domain``): ``"inexact"`` ops (exp, log, tanh, sqrt) take real or
  complex floats, ``"real_float"`` ops (gelu, softmax, logsumexp) real floats,
  ``"real"`` ops (max, min, maximum, minimum, relu, ``<``, ``>``) anything
  but complex. Integer and bool arrays are refused by float-only ops (no
  silent promotion to float64 or float16): cast them with ``.astype("float32")``.
  Complex arrays are refused by ordering ops, which the array API leaves
  unspecified for complex numbers. ``"numeric"`` ops (sign, square) refuse
  bool, ``"real_numeric"`` ops (floor_divide, remainder, floor) bool and
  complex; bitwise ops take ``"integer_or_bool"`` (shifts ``"integer"``) and
  logical ops ``"bool"`` arrays only.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from .errors import CastError, DTypeError

#: ``np.dtype("bfloat16")`` (ml_dtypes registers the name with NumPy on import)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

SUPPORTED = (
    "bfloat16",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
)
#: floating dtypes NumPy gives another kind than "f" (ml_dtypes' bfloat16 has kind "V")
_EXTRA_FLOATS = ("bfloat16",)
DOMAINS = ("inexact", "real_float", "real", "numeric", "real_numeric", "integer", "integer_or_bool", "bool")


def as_dtype(dtype: Any) -> np.dtype:
    """``np.dtype(dtype)`` restricted to the dtypes shards support (``SUPPORTED``, bfloat16 included).

    Example:
        >>> as_dtype("bfloat16"), as_dtype(np.float32)
        (dtype(bfloat16), dtype('float32'))
    """
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise DTypeError(f"unknown dtype {dtype!r}; use one of {SUPPORTED}") from None
    if dt.name not in SUPPORTED:
        raise DTypeError(f"dtype {dt.name!r} is not supported by shardarray; use one of {SUPPORTED}")
    return dt


def as_float_dtype(dtype: Any, what: str) -> np.dtype:
    dt = as_dtype(dtype)
    if not is_real_float(dt):
        raise DTypeError(
            f"{what} makes floating-point values; dtype {dt.name!r} is not a float dtype: pass one of "
            f"'bfloat16', 'float16', 'float32' or 'float64'"
        )
    return dt


def is_real_float(dtype: Any) -> bool:
    """A real floating-point dtype (float16/32/64, bfloat16)."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt.name in _EXTRA_FLOATS


def is_complex(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "c"


def is_bfloat16(dtype: Any) -> bool:
    """``dtype`` is bfloat16 (``"bfloat16"``, ``ml_dtypes.bfloat16`` or CuPy's)."""
    return getattr(dtype, "name", None) == "bfloat16" or np.dtype(dtype) == BFLOAT16


def compute_dtype(dtype: Any) -> np.dtype | None:
    """The dtype NumPy-backend math on ``dtype`` runs in when not ``dtype`` itself: float32 for bfloat16.

    Elementwise math, einsums, softmax and norms on bfloat16 blocks upcast to
    float32, compute, and round the result to bfloat16 once.

    Example:
        >>> compute_dtype("bfloat16"), compute_dtype("float16")
        (dtype('float32'), None)
    """
    return np.dtype(np.float32) if np.dtype(dtype) == BFLOAT16 else None


def promote(*dtypes: Any) -> np.dtype:
    """``np.result_type`` of ``dtypes``, with float32 where NumPy has no rule for bfloat16.

    NumPy with ml_dtypes refuses bfloat16 with float16, int16/32/64 and
    uint16/32/64: it promotes as float32 would (float32 with float16 or int16,
    float64 with int32/int64).

    Example:
        >>> promote("bfloat16", "float16"), promote("bfloat16", "int8"), promote("bfloat16", "float64")
        (dtype('float32'), dtype(bfloat16), dtype('float64'))
    """
    dts = [np.dtype(d) for d in dtypes]
    try:
        return np.result_type(*dts)
    except TypeError:  # DTypePromotionError is a TypeError
        if any(d == BFLOAT16 for d in dts):
            rest = [d for d in dts if d != BFLOAT16]
            return np.result_type(np.float32, *rest) if rest else BFLOAT16
        raise


def wide_dtype(dtype: Any) -> np.dtype:
    """The 8-byte dtype that carries every value of the real ``dtype`` exactly: float64 for floats (bfloat16
    included), uint64 for uint64, int64 for the other integers and bool. Used to pack values with int64
    indices into one buffer (argmax's pairs, top_k's candidates, sample sort's keys)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return np.dtype(np.float64)
    if dtype.kind == "u" and dtype.itemsize == 8:
        return np.dtype(np.uint64)
    return np.dtype(np.int64)


def accumulation_dtype(dtype: Any) -> np.dtype | None:
    """The dtype sums of ``dtype`` accumulate in when it is not ``dtype`` itself: float32 for narrow floats.

    Example:
        >>> accumulation_dtype("float16"), accumulation_dtype("bfloat16"), accumulation_dtype("float32")
        (dtype('float32'), dtype('float32'), None)
    """
    dt = np.dtype(dtype)
    if is_real_float(dt) and dt.itemsize < 4:
        return np.dtype(np.float32)
    return None


def _in_domain(dt: np.dtype, domain: str) -> bool:
    if domain == "inexact":
        return is_real_float(dt) or dt.kind == "c"
    if domain == "real_float":
        return is_real_float(dt)
    if domain == "real":
        return dt.kind != "c"
    if domain == "numeric":
        return dt.kind != "b"
    if domain == "real_numeric":
        return dt.kind not in "bc"
    if domain == "integer":
        return dt.kind in "iu"
    if domain == "integer_or_bool":
        return dt.kind in "iub"
    if domain == "bool":
        return dt.kind == "b"
    raise ValueError(f"unknown dtype domain {domain!r}; one of {DOMAINS}")


_KIND_DOMAINS = {
    "numeric": ("numeric (non-bool)", 'cast it first with x.astype("int64") or x.astype("float32")'),
    "real_numeric": (
        "real numeric (integer or real float)",
        'cast a bool array with x.astype("int64"); take sa.real(x) or sa.abs(x) of a complex one',
    ),
    "integer": ("integer", 'cast it first with x.astype("int64") (floats have no bits to shift: use x * 2**k)'),
    "integer_or_bool": (
        "integer or bool",
        'cast it first with x.astype("int64"), or compare floats first (x > 0) for a bool mask',
    ),
    "bool": ("bool", 'make a bool array first with a comparison (x != 0) or x.astype("bool")'),
}


def check_domain(op: str, arrays: Iterable[Any], domain: str | None) -> None:
    """Raise ``DTypeError`` when an array operand of ``op`` has a dtype outside ``domain`` (see the module doc).

    ``arrays`` are the array operands (anything with ``dtype`` and ``sizes``);
    ``domain`` None accepts every dtype.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> ids = sa.asarray(np.array([1, 2]), dims=("b",), mesh=mesh)
        >>> check_domain("exp", [ids], "inexact")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        shardarray.errors.DTypeError: exp: the operand with dims {'b': 2} has dtype int64, but exp is defined for ...
    """
    if domain is None:
        return
    arrays = list(arrays)
    for x in arrays:
        dt = x.dtype
        if _in_domain(dt, domain):
            continue
        if domain in _KIND_DOMAINS:
            raise DTypeError(
                f"{op}: the operand with dims {x.sizes} has dtype {dt.name}, but {op} is defined for "
                f"{_KIND_DOMAINS[domain][0]} arrays only; {_KIND_DOMAINS[domain][1]}"
            )
        if dt.kind == "c":
            raise DTypeError(
                f"{op}: the operand with dims {x.sizes} has complex dtype {dt.name}, but {op} needs ordered values and "
                f"complex numbers have no order (the array API leaves it unspecified); apply {op} to a real "
                f"array: the real part or the magnitude (sa.real(x), sa.abs(x))"
            )
        what = "real floating-point" if domain == "real_float" else "floating-point"
        raise DTypeError(
            f"{op}: the operand with dims {x.sizes} has dtype {dt.name}, but {op} is defined for {what} "
            f'arrays only; cast it first with x.astype("float32") (or "float64")'
        )
    if len(arrays) > 1:
        _check_common(op, arrays, domain)


def _check_common(op: str, arrays: Sequence[Any], domain: str) -> None:
    """Raise ``DTypeError`` when array operands, each in ``domain``, promote to a dtype outside it.

    NumPy 2 promotes uint64 with a signed integer to float64, which the bitwise ops and shifts are not defined
    for (NumPy raises its own ``TypeError`` from inside the block).
    """
    try:
        dt = promote(*(x.dtype for x in arrays))
    except TypeError:  # (no promotion rule: the op's own check names it)
        return
    if _in_domain(dt, domain):
        return
    what = _KIND_DOMAINS[domain][0] if domain in _KIND_DOMAINS else domain.replace("_", " ")
    raise DTypeError(
        f"{op}: the operands {', '.join(f'{x.sizes} {x.dtype}' for x in arrays)} promote to {dt.name} (NumPy 2's "
        f"rule for uint64 with a signed integer), but {op} is defined for {what} values only; cast one of them "
        f'first, e.g. x.astype("int64") or y.astype("uint64")'
    )


def check_scalar_domain(op: str, dtypes: Sequence[np.dtype], scalars: Iterable[Any], domain: str | None) -> None:
    """Raise ``DTypeError`` when a scalar operand of ``op`` takes the operands' common dtype out of ``domain``.

    ``dtypes``: the array operands' dtypes (each already in ``domain``: ``check_domain``); ``scalars``: the other
    operands. A Python scalar is weak (NEP 50): ``int_array & 1.5`` computes in float64, which ``bitwise_and`` is not
    defined for, where NumPy raises its own ``TypeError``. A NumPy scalar promotes by ``promote`` (an
    ``ml_dtypes.bfloat16`` scalar beside an int16 array makes float32, where NumPy has no rule). The ``bool``
    domain is not checked here (the logical ops read a scalar's truth).

    Example:
        >>> check_scalar_domain("bitwise_and", [np.dtype("int64")], [1.5], "integer")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        shardarray.errors.DTypeError: bitwise_and: the scalar operand 1.5 makes the operands float64, ...
    """
    if domain is None or domain == "bool":
        return
    for v in scalars:
        try:
            dt = np.result_type(*dtypes, v) if not isinstance(v, np.generic) else promote(*dtypes, v.dtype)
        except (TypeError, ValueError):
            continue  # (not a number: the op's own check names it)
        if not _in_domain(dt, domain):
            what = _KIND_DOMAINS[domain][0] if domain in _KIND_DOMAINS else domain.replace("_", " ")
            raise DTypeError(
                f"{op}: the scalar operand {v!r} makes the operands {dt.name}, but {op} is defined for {what} "
                f"values only; pass a scalar of the array's kind (e.g. int(v) for an integer array)"
            )


def scalar_for_write(value: Any, dtype: Any, what: str) -> np.ndarray:
    """``value`` (a scalar) as a 0-d array of ``dtype`` for writing into an array of that dtype, NumPy 2's way.

    A value that is not a number (a string; ``None``, which NumPy would write as NaN) is a ``DTypeError``.
    Refused (``CastError``), where NumPy 2 raises and an unchecked cast would store something else silently: a
    Python ``int`` out of an integer dtype's range (300 into int8 would store 44; -1 into uint8, 255), a Python
    ``float`` that truncates out of it (300.0 into uint8, -1.5 into uint8; NumPy floats are cast, as NumPy casts
    them), and NaN or ±inf into an integer (or bool) dtype. A NumPy integer out of range is refused too: NumPy 2
    raises for some (``np.int64(300)`` into int8) and wraps others (``np.int32(-2)`` into uint8 stores 254); one rule
    here, nothing stored silently changed. A complex value into a real dtype is a ``DTypeError``.
    Other values are cast as NumPy casts them (3.7 into an integer dtype is 3).

    Example:
        >>> scalar_for_write(7, "int8", "x[0] = v")
        array(7, dtype=int8)
        >>> scalar_for_write(300, "int8", "x[0] = v")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        shardarray.errors.CastError: x[0] = v: the Python integer 300 is out of range for int8 [-128, 127]; ...
    """
    dt = as_dtype(dtype)
    arr = np.asarray(value)
    if arr.ndim:
        raise DTypeError(f"{what}: expected a scalar value; got an array of shape {arr.shape}")
    if arr.dtype.kind not in "biufcV" and not isinstance(value, numbers.Number):  # a string, None (NaN), an object
        raise DTypeError(f"{what}: v must be a number (or a ShardArray); got {type(value).__name__} {value!r:.60}")
    if arr.dtype.kind == "c" and dt.kind != "c":
        raise DTypeError(
            f"{what}: cannot write the complex value {value!r} into an array of dtype {dt}; write its real part "
            f"(v.real) or its magnitude (abs(v))"
        )
    if dt.kind in "iub":
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and dt.kind in "iu":
            info = np.iinfo(dt)
            if not info.min <= int(value) <= info.max:
                raise CastError(
                    f"{what}: the {'Python' if isinstance(value, int) else 'NumPy'} integer {int(value)} is out of "
                    f"range for {dt} [{info.min}, {info.max}]; "
                    f"write a value in range, or cast the array to a wider dtype first (x.astype('int64'))"
                )
        if arr.dtype.kind == "f" and not np.isfinite(arr):
            raise CastError(
                f"{what}: cannot write {float(arr)} into an array of dtype {dt} (it has no NaN or inf); "
                f"cast the array to a float dtype first (x.astype('float32')), or write a finite value"
            )
        if isinstance(value, float) and not isinstance(value, np.floating) and dt.kind in "iu":
            info = np.iinfo(dt)  # (a Python float truncates to a Python int, range-checked as one: NumPy 2)
            if not info.min <= int(value) <= info.max:
                raise CastError(
                    f"{what}: the Python float {value!r} truncates to {int(value)}, out of range for {dt} "
                    f"[{info.min}, {info.max}]; write a value in range, or cast the array to a wider dtype first "
                    f"(x.astype('int64'))"
                )
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            return arr.astype(dt)
        except OverflowError:  # a Python integer beyond any float (2**1100): NumPy raises OverflowError too
            raise CastError(
                f"{what}: the Python integer {value!r:.40} is too large for {dt}; write a value in range"
            ) from None
