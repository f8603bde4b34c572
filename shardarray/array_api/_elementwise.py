"""Elementwise functions of the array API standard (2024.12), positional, on split arrays.

Every function here is the named elementwise op of the same meaning
(``shardarray.ops``) after NumPy's right-aligned broadcasting by position
(``_array.elementwise``: operands are renamed so that axes at the same
right-aligned position share a dim name, size-1 axes that broadcast are
dropped). No data moves beyond what the named op does: each block is computed
where it lives; operands split differently are first brought to one layout
(a local slice, or an allgather along the mesh axis that differs); a pending
sum is resolved (an allreduce).

Type promotion, Python scalars (``int``, ``float``, ``complex``, ``bool``, in
either position of a binary function: they take the array's dtype, as the
standard says) and special values (NaN, infinities, signed zeros) follow NumPy,
which implements the standard's rules, except where the standard asks for
other values: ``floor_divide`` with infinite operands, and complex ``expm1``
and ``tanh`` of non-finite values, follow the standard (``_ew_special``).
Dtypes outside a function's domain (``exp`` of an integer array, ``bitwise_and``
of floats, ...) raise a ``DTypeError`` naming the function and the dtype; the
logical functions take numbers as their truth (``x != 0``), as NumPy does.

Example (2×2 mesh):
    >>> import shardarray as sa, shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])   # dim0 over row, dim1 over col
    ...     b = xp.abs(a) + xp.asarray([10.0, 20.0, 30.0])           # broadcasts along axis 0
    ...     xp.where(a > 0, b, 0.0).numpy()
    array([[11.,  0., 33.],
           [ 0., 25.,  0.]])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import CastError, DTypeError
from ..ops.elementwise import arithmetic as ew
from ..ops.elementwise import logical as lg
from ..ops.elementwise import math_binary as mb
from ..ops.elementwise import math_unary as mu
from ..ops.manipulation.structure import astype
from . import _ew_special as special
from ._array import Array, elementwise, wrap
from ._searching import nonzero

__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "clip",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "expm1",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "real",
    "reciprocal",
    "remainder",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "trunc",
    "where",
]

_SCALARS = (bool, int, float, complex, np.generic)

# the standard's scalar unions, spelled out (a Python int is accepted where a float is, and so on)
_Real = int | float
_Numeric = int | float | complex
_AnyScalar = int | float | complex | bool
_IntOrBool = int | bool
_RealOrNone = int | float | None


def _check(value: Any, what: str, name: str) -> None:
    """Refuse an operand that is neither an array nor a scalar (a list, a NumPy array, None)."""
    if not isinstance(value, (ShardArray, *_SCALARS)):
        raise DTypeError(
            f"{what}: {name} must be an array or a Python scalar (int, float, complex, bool); got "
            f"{type(value).__name__}. Make an array with xp.asarray(...)"
        )


def _unary(fn: Callable[[ShardArray], ShardArray], x: Any, what: str) -> Array:
    """``fn(x)`` as an ``Array`` (``x`` must be an array)."""
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what}: x must be an array; got {type(x).__name__}. Make one with xp.asarray(...)")
    return elementwise(fn, x, what=what)


def _binary(fn: Callable[[Any, Any], ShardArray], x1: Any, x2: Any, what: str) -> Array:
    """``fn(x1, x2)`` with positional broadcasting; one of the two may be a Python scalar."""
    _check(x1, what, "x1")
    _check(x2, what, "x2")
    if not isinstance(x1, ShardArray) and not isinstance(x2, ShardArray):
        raise DTypeError(
            f"{what}: at least one of x1, x2 must be an array; got {type(x1).__name__} and {type(x2).__name__}"
        )
    return elementwise(fn, x1, x2, what=what)


def add(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 + x2``, broadcasting right-aligned by position (as NumPy).

    Each block is added where it lives; operands split differently are first
    brought to the layout of the operand with the most axes.

    Example (2×2 mesh):
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1, 2, 3], [4, 5, 6]], dtype=xp.int8)
        ...     c = xp.add(a, xp.asarray([10, 20, 30], dtype=xp.int16))
        ...     c.dtype, c.numpy()
        (dtype('int16'), array([[11, 22, 33],
               [14, 25, 36]], dtype=int16))
    """
    return _binary(ew.add, x1, x2, "add")


def clip(
    x: Array,
    /,
    min: Array | _RealOrNone = None,
    max: Array | _RealOrNone = None,
) -> Array:
    """``x`` clamped to ``[min, max]`` elementwise; the result has ``x``'s dtype.

    ``min`` and ``max`` are arrays (broadcast with ``x`` by position), Python
    scalars or None (no bound). NaN in any of them gives NaN; where
    ``min > max`` the result is ``max`` (as NumPy; the standard leaves it
    unspecified). Complex values clip in NumPy's order, bit for bit (``math_binary.clip``: real parts, then
    imaginary parts; the standard leaves them unspecified).

    Scalar bounds of an integer ``x`` are read as bounds on integers (the
    standard keeps ``x``'s dtype; NumPy's ``np.clip`` promotes instead): a
    bound beyond the dtype's range on the side it does not bound is no bound
    (``clip(uint8_x, -1, 300)`` is ``x``, as NumPy 2 gives it), one beyond it
    on the other side raises ``CastError`` (NumPy: ``OverflowError``); a
    float bound rounds inward (``min=0.5`` is ``min=1``, ``max=2.5`` is
    ``max=2``, ``±inf`` on its own side is no bound), and NaN, which no integer
    holds, raises ``CastError``.

    Example (2×2 mesh):
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[-2.0, 0.5], [3.0, 1.0]])
        ...     xp.clip(a, 0, xp.asarray([1.0, 0.25])).numpy()
        array([[0.  , 0.25],
               [1.  , 0.25]])
    """
    if not isinstance(x, ShardArray):
        raise DTypeError(f"clip: x must be an array; got {type(x).__name__}. Make one with xp.asarray(...)")
    for bound, name in ((min, "min"), (max, "max")):
        if bound is not None:
            _check(bound, "clip", name)
    if x.dtype.kind in "iu":
        min, max = _int_bound(min, x.dtype, "min"), _int_bound(max, x.dtype, "max")
    if min is None and max is None:  # a new array, as NumPy's (x itself would share later writes)
        return wrap(x.__copy__())
    out = elementwise(mb.clip, x, min, max, what="clip")
    return out if out.dtype == x.dtype else wrap(astype(out, x.dtype))


def _int_bound(bound: Any, dtype: np.dtype, name: str) -> Any:
    """A scalar bound ``name`` (``"min"``/``"max"``) of ``clip`` of an integer array of ``dtype`` as an integer in its
    range, or None for no bound (see ``clip``); arrays and None as they are."""
    if bound is None or isinstance(bound, (ShardArray, bool, np.bool_, complex, np.complexfloating)):
        return bound
    value = bound.item() if isinstance(bound, np.generic) else bound
    lower = name == "min"
    if isinstance(value, float):
        if math.isnan(value):
            raise CastError(
                f"clip: {name}={bound!r} has no value in the integer dtype {dtype} of x (NumPy's np.clip would make "
                f"the result float64 and all NaN); cast x to a float dtype first (xp.astype(x, xp.float64))"
            )
        if math.isinf(value):
            if (value < 0) == lower:
                return None
            raise CastError(
                f"clip: {name}={bound!r} leaves no {dtype} value in range; give a finite bound, or cast x to a "
                f"float dtype first (xp.astype(x, xp.float64))"
            )
        value = math.ceil(value) if lower else math.floor(value)
    info = np.iinfo(dtype)
    if info.min <= value <= info.max:
        return value
    if (value < info.min) == lower:
        return None  # (below the range for a lower bound, above it for an upper one: it bounds nothing)
    raise CastError(
        f"clip: {name}={bound!r} is out of range for x's dtype {dtype} [{info.min}, {info.max}], so every result "
        f"would be out of range too; give a bound in range, or cast x to a wider dtype first (xp.astype(x, xp.int64))"
    )


def where(
    condition: Array,
    x1: Array | _AnyScalar | None = None,
    x2: Array | _AnyScalar | None = None,
    /,
) -> Array | tuple[Array, ...]:
    """``x1`` where ``condition`` is true, else ``x2``; the three broadcast right-aligned by position.

    The result dtype is the promotion of ``x1`` and ``x2`` (a Python scalar
    takes the other's dtype). Each block is selected where it lives.
    ``where(condition)`` alone is ``nonzero(condition)``, as NumPy's (scikit-learn's ``roc_curve`` calls it).

    Example (2×2 mesh):
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1.0, -2.0], [-3.0, 4.0]])
        ...     xp.where(a > 0, a, xp.asarray([0.0, 100.0])).numpy()
        array([[  1., 100.],
               [  0.,   4.]])
    """
    if not isinstance(condition, ShardArray):
        raise DTypeError(
            f"where: condition must be a bool array; got {type(condition).__name__}. Make one with a comparison "
            f"(x > 0) or xp.asarray(mask, dtype=xp.bool)"
        )
    if x1 is None and x2 is None:
        return nonzero(condition)
    _check(x1, "where", "x1")
    _check(x2, "where", "x2")
    return elementwise(ew.where, condition, x1, x2, what="where")


def abs(x: Array, /) -> Array:
    """The absolute value (the magnitude, a real array, of a complex one)."""
    return _unary(ew.abs, x, "abs")


def acos(x: Array, /) -> Array:
    """The inverse cosine (floating-point arrays)."""
    return _unary(mu.acos, x, "acos")


def acosh(x: Array, /) -> Array:
    """The inverse hyperbolic cosine (floating-point arrays)."""
    return _unary(mu.acosh, x, "acosh")


def asin(x: Array, /) -> Array:
    """The inverse sine (floating-point arrays)."""
    return _unary(mu.asin, x, "asin")


def asinh(x: Array, /) -> Array:
    """The inverse hyperbolic sine (floating-point arrays)."""
    return _unary(mu.asinh, x, "asinh")


def atan(x: Array, /) -> Array:
    """The inverse tangent (floating-point arrays)."""
    return _unary(mu.atan, x, "atan")


def atanh(x: Array, /) -> Array:
    """The inverse hyperbolic tangent (floating-point arrays)."""
    return _unary(mu.atanh, x, "atanh")


def bitwise_invert(x: Array, /) -> Array:
    """``~x`` of an integer or bool array."""
    return _unary(lg.bitwise_invert, x, "bitwise_invert")


def ceil(x: Array, /) -> Array:
    """The ceiling (real numeric arrays; integers come back unchanged)."""
    return _unary(mu.ceil, x, "ceil")


def conj(x: Array, /) -> Array:
    """The complex conjugate (of a real array, a new array of the same values, as NumPy's; of a bool array a bool
    array, as JAX's ``conj``: NumPy's ufunc has no bool loop and gives int8, the standard defines numeric dtypes)."""
    out = _unary(ew.conj, x, "conj")
    return wrap(out.__copy__()) if out is x else out


def cos(x: Array, /) -> Array:
    """The cosine (floating-point arrays)."""
    return _unary(mu.cos, x, "cos")


def cosh(x: Array, /) -> Array:
    """The hyperbolic cosine (floating-point arrays)."""
    return _unary(mu.cosh, x, "cosh")


def exp(x: Array, /) -> Array:
    """``e**x`` (floating-point arrays)."""
    return _unary(ew.exp, x, "exp")


def expm1(x: Array, /) -> Array:
    """``exp(x) - 1``, accurate for small ``x`` (floating-point arrays)."""
    return _unary(special.expm1, x, "expm1")


def floor(x: Array, /) -> Array:
    """The floor (real numeric arrays; integers come back unchanged)."""
    return _unary(mu.floor, x, "floor")


def imag(x: Array, /) -> Array:
    """The imaginary part of a complex array (a real array of the matching precision)."""
    return _unary(ew.imag, x, "imag")


def isfinite(x: Array, /) -> Array:
    """Whether each element is finite (a bool array)."""
    return _unary(mu.isfinite, x, "isfinite")


def isinf(x: Array, /) -> Array:
    """Whether each element is ``+inf`` or ``-inf`` (a bool array)."""
    return _unary(mu.isinf, x, "isinf")


def isnan(x: Array, /) -> Array:
    """Whether each element is NaN (a bool array)."""
    return _unary(mu.isnan, x, "isnan")


def log(x: Array, /) -> Array:
    """The natural logarithm (floating-point arrays)."""
    return _unary(ew.log, x, "log")


def log1p(x: Array, /) -> Array:
    """``log(1 + x)``, accurate for small ``x`` (floating-point arrays)."""
    return _unary(mu.log1p, x, "log1p")


def log2(x: Array, /) -> Array:
    """The base-2 logarithm (floating-point arrays)."""
    return _unary(mu.log2, x, "log2")


def log10(x: Array, /) -> Array:
    """The base-10 logarithm (floating-point arrays)."""
    return _unary(mu.log10, x, "log10")


def _truth(x: Any) -> Any:
    """``x`` as the logical functions take it: a bool array or bool, or the truth (``x != 0``) of a numeric array or
    Python number, as NumPy's ``logical_*`` (the standard asks for bools; scikit-learn's ``roc_curve`` passes the
    float differences of counts, and a NaN is true, as in NumPy)."""
    if isinstance(x, ShardArray):
        return x if x.dtype.kind == "b" else x != 0
    if isinstance(x, (int, float, complex)) and not isinstance(x, bool):
        return bool(x)
    return x


def logical_not(x: Array, /) -> Array:
    """``not x`` of a bool array, or ``x == 0`` of a numeric one (as NumPy)."""
    return _unary(lg.logical_not, _truth(x), "logical_not")


def negative(x: Array, /) -> Array:
    """``-x`` (numeric arrays)."""
    return _unary(ew.negative, x, "negative")


def positive(x: Array, /) -> Array:
    """``+x`` (numeric arrays): a new array of ``x``'s value (it shares the blocks: nothing is copied)."""
    return _unary(mu.positive, x, "positive")


def real(x: Array, /) -> Array:
    """The real part of a complex array (a real array of the matching precision)."""
    return _unary(ew.real, x, "real")


def reciprocal(x: Array, /) -> Array:
    """``1 / x`` (floating-point arrays)."""
    return _unary(mu.reciprocal, x, "reciprocal")


def round(x: Array, /) -> Array:
    """Rounding to the nearest integer, halves to even (complex: each part; integers unchanged)."""
    return _unary(mu.round, x, "round")


def sign(x: Array, /) -> Array:
    """The sign: -1, 0 or 1 (``x / |x|`` for complex; NaN stays NaN)."""
    return _unary(mu.sign, x, "sign")


def signbit(x: Array, /) -> Array:
    """Whether the sign bit is set (true for ``-0.0``; real arrays; a bool array)."""
    return _unary(mu.signbit, x, "signbit")


def sin(x: Array, /) -> Array:
    """The sine (floating-point arrays)."""
    return _unary(mu.sin, x, "sin")


def sinh(x: Array, /) -> Array:
    """The hyperbolic sine (floating-point arrays)."""
    return _unary(mu.sinh, x, "sinh")


def square(x: Array, /) -> Array:
    """``x * x`` (numeric arrays)."""
    return _unary(mu.square, x, "square")


def sqrt(x: Array, /) -> Array:
    """The principal square root (floating-point arrays)."""
    return _unary(ew.sqrt, x, "sqrt")


def tan(x: Array, /) -> Array:
    """The tangent (floating-point arrays)."""
    return _unary(mu.tan, x, "tan")


def tanh(x: Array, /) -> Array:
    """The hyperbolic tangent (floating-point arrays)."""
    return _unary(special.tanh, x, "tanh")


def trunc(x: Array, /) -> Array:
    """Rounding toward zero (real numeric arrays; integers come back unchanged)."""
    return _unary(mu.trunc, x, "trunc")


def atan2(x1: Array | _Real, x2: Array | _Real, /) -> Array:
    """The angle of the point ``(x2, x1)`` in radians (real floating-point)."""
    return _binary(mb.atan2, x1, x2, "atan2")


def bitwise_and(x1: Array | _IntOrBool, x2: Array | _IntOrBool, /) -> Array:
    """``x1 & x2`` of integer or bool arrays."""
    return _binary(lg.bitwise_and, x1, x2, "bitwise_and")


def bitwise_left_shift(x1: Array | int, x2: Array | int, /) -> Array:
    """``x1 << x2`` of integer arrays (``x2`` non-negative)."""
    return _binary(lg.bitwise_left_shift, x1, x2, "bitwise_left_shift")


def bitwise_or(x1: Array | _IntOrBool, x2: Array | _IntOrBool, /) -> Array:
    """``x1 | x2`` of integer or bool arrays."""
    return _binary(lg.bitwise_or, x1, x2, "bitwise_or")


def bitwise_right_shift(x1: Array | int, x2: Array | int, /) -> Array:
    """``x1 >> x2`` (arithmetic) of integer arrays."""
    return _binary(lg.bitwise_right_shift, x1, x2, "bitwise_right_shift")


def bitwise_xor(x1: Array | _IntOrBool, x2: Array | _IntOrBool, /) -> Array:
    """``x1 ^ x2`` of integer or bool arrays."""
    return _binary(lg.bitwise_xor, x1, x2, "bitwise_xor")


def copysign(x1: Array | _Real, x2: Array | _Real, /) -> Array:
    """The magnitude of ``x1`` with the sign bit of ``x2`` (real floating-point)."""
    return _binary(mb.copysign, x1, x2, "copysign")


def divide(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 / x2`` (true division; integer arrays give float64 as in NumPy)."""
    return _binary(ew.divide, x1, x2, "divide")


def equal(x1: Array | _AnyScalar, x2: Array | _AnyScalar, /) -> Array:
    """``x1 == x2`` (a bool array)."""
    return _binary(ew.equal, x1, x2, "equal")


def floor_divide(x1: Array | _Real, x2: Array | _Real, /) -> Array:
    """``x1 // x2``, ``floor(x1 / x2)`` (real numbers; ``±inf // finite`` is ``±inf``, ``finite // ±inf`` ±0)."""
    return _binary(special.floor_divide, x1, x2, "floor_divide")


def greater(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 > x2`` (a bool array); complex values in NumPy's order (real parts, then imaginary parts; a NaN part
    gives False: ``logical.greater``)."""
    return _binary(lg.greater, x1, x2, "greater")


def greater_equal(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 >= x2`` (a bool array); complex values in NumPy's order (real parts, then imaginary parts; a NaN part
    gives False: ``logical.greater_equal``)."""
    return _binary(lg.greater_equal, x1, x2, "greater_equal")


def hypot(x1: Array | _Real, x2: Array | _Real, /) -> Array:
    """``sqrt(x1**2 + x2**2)`` without overflow (real floating-point)."""
    return _binary(mb.hypot, x1, x2, "hypot")


def less(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 < x2`` (a bool array); complex values in NumPy's order (real parts, then imaginary parts; a NaN part
    gives False: ``logical.less``)."""
    return _binary(lg.less, x1, x2, "less")


def less_equal(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 <= x2`` (a bool array); complex values in NumPy's order (real parts, then imaginary parts; a NaN part
    gives False: ``logical.less_equal``)."""
    return _binary(lg.less_equal, x1, x2, "less_equal")


def logaddexp(x1: Array | _Real, x2: Array | _Real, /) -> Array:
    """``log(exp(x1) + exp(x2))`` without overflow (real floating-point)."""
    return _binary(mb.logaddexp, x1, x2, "logaddexp")


def logical_and(x1: Array | _AnyScalar, x2: Array | _AnyScalar, /) -> Array:
    """``x1 and x2`` of bool arrays, or of the truth of numbers (``x != 0``, as NumPy; see ``_truth``)."""
    return _binary(lg.logical_and, _truth(x1), _truth(x2), "logical_and")


def logical_or(x1: Array | _AnyScalar, x2: Array | _AnyScalar, /) -> Array:
    """``x1 or x2`` of bool arrays, or of the truth of numbers (``x != 0``, as NumPy; see ``_truth``)."""
    return _binary(lg.logical_or, _truth(x1), _truth(x2), "logical_or")


def logical_xor(x1: Array | _AnyScalar, x2: Array | _AnyScalar, /) -> Array:
    """``x1 != x2`` of bool arrays, or of the truth of numbers (``x != 0``, as NumPy; see ``_truth``)."""
    return _binary(lg.logical_xor, _truth(x1), _truth(x2), "logical_xor")


def maximum(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """The larger of ``x1`` and ``x2`` (NaN propagates); complex values in NumPy's order, as ``np.maximum``
    (``math_binary.maximum``; the standard leaves them unspecified)."""
    return _binary(mb.maximum, x1, x2, "maximum")


def minimum(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """The smaller of ``x1`` and ``x2`` (NaN propagates); complex values in NumPy's order, as ``np.minimum``
    (``math_binary.minimum``; the standard leaves them unspecified)."""
    return _binary(mb.minimum, x1, x2, "minimum")


def multiply(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 * x2``."""
    return _binary(ew.multiply, x1, x2, "multiply")


def nextafter(x1: Array | _Real, x2: Array | _Real, /) -> Array:
    """The next representable value after ``x1`` toward ``x2`` (real floating-point)."""
    return _binary(mb.nextafter, x1, x2, "nextafter")


def not_equal(x1: Array | _AnyScalar, x2: Array | _AnyScalar, /) -> Array:
    """``x1 != x2`` (a bool array)."""
    return _binary(ew.not_equal, x1, x2, "not_equal")


def pow(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 ** x2`` (an integer base needs a non-negative integer exponent).

    A Python scalar exponent follows NumPy's ``**`` (``x ** 0.5`` is ``sqrt``: NaN at ``-inf``; ``z ** -1`` of a
    complex ``z`` its reciprocal), an array or NumPy scalar exponent ``power``'s special values (``(-inf) ** 0.5``
    is inf), on every layout and backend; a bool base to an int power is int64 (NumPy's ``bool_x ** 2`` is int8).
    """
    return _binary(ew.power, x1, x2, "pow")


def remainder(x1: Array | _Real, x2: Array | _Real, /) -> Array:
    """``x1 % x2`` with the sign of ``x2`` (NumPy's remainder; real numeric)."""
    return _binary(mb.remainder, x1, x2, "remainder")


def subtract(x1: Array | _Numeric, x2: Array | _Numeric, /) -> Array:
    """``x1 - x2``."""
    return _binary(ew.subtract, x1, x2, "subtract")
