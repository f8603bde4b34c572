"""NumPy's elementwise ufuncs and functions beyond the array API standard: ``fmod``, ``divmod``, ``modf``,
``float_power``, ``cbrt``, ``deg2rad``/``radians``, ``rad2deg``/``degrees``, ``frexp``, ``ldexp``, ``gcd``, ``lcm``,
``fix``, ``angle``, ``isposinf``, ``isneginf``, ``isreal``, ``iscomplex``, ``real_if_close``, ``i0``, ``fmax`` and
``fmin``.

Each takes NumPy's arguments and gives NumPy's result (the dtypes of NumPy's ufunc loops: ``cbrt`` of integers is
float64, ``frexp``'s exponent int32), composed of the namespace's own elementwise functions, whose collectives and
gradients it inherits (``gcd``/``lcm`` are the array module's ufuncs on each block): all are local but
``real_if_close`` (one allreduce and a host read); none gathers a split axis. ``np.fmod``, ``np.divmod``, ... (ufuncs,
``__array_ufunc__``) and ``np.fix``, ``np.angle``, ... (``__array_function__``) dispatch here by name. float16 and
float32 are computed in float64 where rounding or CuPy's flush-to-zero of float32 subnormals would differ from NumPy.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..core.tape import nondifferentiable
from ..dtypes import compute_dtype
from ..errors import DTypeError
from ..ops.elementwise import math_binary as mb
from ..ops.elementwise.arithmetic import apply
from ._align import no_out
from ._array import Array, elementwise
from ._creation import asarray, zeros_like
from ._dtypes import astype, finfo
from ._elementwise import (
    abs,
    atan2,
    copysign,
    exp,
    floor,
    greater,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    log2,
    logical_and,
    logical_not,
    logical_or,
    multiply,
    not_equal,
    pow,
    real,
    remainder,
    signbit,
    sqrt,
    trunc,
)
from ._elementwise import where as _where
from ._numpy_math import _loop_dtype, _strong
from ._statistical import _check
from ._statistical import all as _all

__all__ = [
    "angle",
    "cbrt",
    "deg2rad",
    "degrees",
    "divmod",
    "fix",
    "float_power",
    "fmax",
    "fmin",
    "fmod",
    "frexp",
    "gcd",
    "i0",
    "iscomplex",
    "isneginf",
    "isposinf",
    "isreal",
    "lcm",
    "ldexp",
    "modf",
    "rad2deg",
    "radians",
    "real_if_close",
]

_WIDE = ("float16", "float32")  # computed in float64 and rounded once, as NumPy's loops round


def where(condition: Array, x1: Any, x2: Any) -> Array:
    """The namespace's three-argument ``where`` (one array)."""
    return cast(Array, _where(condition, x1, x2))


def _astype(x: Any, dtype: Any) -> Array:
    return cast(Array, astype(x, dtype)) if x.dtype != np.dtype(dtype) else cast(Array, x)


def _unary(x: Any, ufunc: np.ufunc, what: str) -> Array:
    """``x`` checked and cast to the input dtype of NumPy's loop of ``ufunc`` for it."""
    x = _check(x, what)
    try:
        dt = ufunc.resolve_dtypes((x.dtype, *(None,) * ufunc.nout))[0]
    except TypeError as e:
        if x.dtype.name == "bfloat16":  # (no NumPy loop: computed as it is)
            return x
        raise DTypeError(f"{what}: not defined for {x.dtype} (as in NumPy): {e}") from None
    return _astype(x, dt)


def _binary(x1: Any, x2: Any, ufunc: np.ufunc, what: str) -> tuple[Array, Array]:
    """The operands of a binary ``ufunc``, cast to the input dtypes of NumPy's loop (Python scalars weak, NumPy
    scalars and 0-d NumPy arrays strong, as NEP 50 types them: ``fmax(float32_array, np.float64(1))`` is float64)
    and made arrays on the array operand's mesh (0-d for a scalar), not yet broadcast."""
    ref = x1 if isinstance(x1, ShardArray) else x2 if isinstance(x2, ShardArray) else None
    if ref is None:
        raise DTypeError(
            f"{what}: expects an array operand; got {type(x1).__name__} and {type(x2).__name__}. "
            f"Make one with xp.asarray(...)"
        )
    x1, x2 = (_strong(v, ref) for v in (x1, x2))
    keys = [a.dtype if isinstance(a, ShardArray) else a for a in (x1, x2)]
    try:
        loop = ufunc.resolve_dtypes(
            (*[np.dtype(bool) if isinstance(k, bool) else _key(k) for k in keys], *(None,) * ufunc.nout)
        )
    except TypeError as e:
        _loop_dtype(ufunc, [x1, x2], what)  # (a typed error naming the operands)
        raise DTypeError(f"{what}: not defined for these operands (as in NumPy): {e}") from None
    out = []
    for a, dt in zip((x1, x2), loop[:2]):
        out.append(_astype(a, dt) if isinstance(a, ShardArray) else asarray(a, dtype=dt, device=ref.mesh))
    return out[0], out[1]


def _key(k: Any) -> Any:
    """A dtype, or the type of a Python number (weak), as ``ufunc.resolve_dtypes`` takes it."""
    if isinstance(k, np.dtype):
        return k
    for t in (int, float, complex):
        if isinstance(k, t):
            return t
    raise DTypeError(f"expects arrays or Python numbers; got {type(k).__name__}")


def _wide(x: Array) -> Array:
    """float16/float32 ``x`` as float64 (NumPy's result is the exact value rounded once)."""
    return _astype(x, np.float64) if x.dtype.name in _WIDE else x


# ------------------------------------------------------------------------------------------- NaN-ignoring extrema


def fmax(x1: Any, x2: Any, /) -> Array:
    """The larger of ``x1`` and ``x2`` ignoring NaN, as ``np.fmax``: where one is NaN the other, NaN only where both
    are (``maximum`` propagates NaN). Of two equal values (``-0.0`` and ``0.0``) it gives ``x1``; NumPy's vector
    loops give either, by the element's position.

    Real, boolean (``logical_or``) and complex operands: complex values in NumPy's order (real parts, then
    imaginary parts), bit for bit: ``x1`` where ``x2`` has a NaN part or ``x1 >= x2``, else ``x2``
    (``math_binary.fmax``). Elementwise, no collectives. Differentiable: the gradient goes to the operand taken.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fmax(xp.asarray([1.0, xp.nan, 3.0, xp.nan]), xp.asarray([2.0, 5.0, xp.nan, xp.nan])).numpy()
        array([ 2.,  5.,  3., nan])
    """
    return _extremum(x1, x2, np.fmax, "fmax")


def fmin(x1: Any, x2: Any, /) -> Array:
    """The smaller of ``x1`` and ``x2`` ignoring NaN, as ``np.fmin`` (see ``fmax``: the same rules, reversed).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fmin(xp.asarray([1.0, xp.nan, 3.0]), 2.0).numpy()
        array([1., 2., 2.])
    """
    return _extremum(x1, x2, np.fmin, "fmin")


def _extremum(x1: Any, x2: Any, ufunc: np.ufunc, what: str) -> Array:
    """``x2`` where it wins (larger for ``fmax``, smaller for ``fmin``) or ``x1`` is NaN, else ``x1``."""
    a, b = _binary(x1, x2, ufunc, what)
    if a.dtype.kind == "c":  # NumPy's order, bit for bit (math_binary.fmax)
        return elementwise(mb.fmax if ufunc is np.fmax else mb.fmin, a, b, what=what)
    if a.dtype == np.bool_:
        return logical_or(a, b) if ufunc is np.fmax else logical_and(a, b)
    wins = greater(b, a) if ufunc is np.fmax else less(b, a)
    if a.dtype.kind in "iu":
        return where(wins, b, a)
    return where(logical_or(wins, isnan(a)), b, a)


# ------------------------------------------------------------------------------------------- division


def fmod(x1: Any, x2: Any, /) -> Array:
    """The C remainder of ``x1 / x2``, with the sign of ``x1``, as ``np.fmod`` (NumPy's loop dtypes).

    Floats: ``remainder(|x1|, |x2|)`` (NumPy's exact fmod-based remainder, also on CuPy) with ``x1``'s sign;
    integers: ``remainder`` moved to ``x1``'s sign (0 for a zero divisor, as NumPy). Elementwise, no collectives.
    Differentiable (piecewise: 1 in ``x1``, ``-trunc(x1 / x2)`` in ``x2``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fmod(xp.asarray([-5.0, 5.0, -0.5]), 3.0).numpy()
        array([-2. ,  2. , -0.5])
    """
    a, b = _binary(x1, x2, np.fmod, "fmod")
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        mb = abs(b)
        return where(signbit(a), -remainder(-a, mb), remainder(a, mb))
    r = remainder(a, b)
    moved = logical_and(not_equal(r, 0), not_equal(r < 0, a < 0))
    return where(moved, r - b, r)


def divmod(x1: Any, x2: Any, /) -> tuple[Array, Array]:
    """``(floor_divide(x1, x2), remainder(x1, x2))``, as ``np.divmod`` (NumPy's loop dtypes).

    NumPy's quotient (``sa.floor_divide``: ``npy_floor_divide``, also on CuPy; ``inf // 3`` is NaN and
    ``-1.0 // inf`` is -1, where the namespace's ``floor_divide`` keeps the standard's infinities) and the namespace's
    ``remainder`` (NumPy's fmod-based one). Elementwise, no collectives. Differentiable (the quotient is piecewise
    constant, the remainder piecewise linear).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     q, r = xp.divmod(xp.asarray([7.0, -7.0]), 2.0)
        >>> q.numpy(), r.numpy()
        (array([ 3., -4.]), array([1., 1.]))
    """
    a, b = _binary(x1, x2, np.divmod, "divmod")
    return elementwise(mb.floor_divide, a, b, what="divmod"), remainder(a, b)


def modf(x: Any, /) -> tuple[Array, Array]:
    """The fractional and integral parts of ``x``, both with its sign, as ``np.modf`` (integers give float64).

    ``trunc(x)`` and ``x - trunc(x)`` (exact), the sign copied from ``x`` (``modf(-2.0)`` is ``(-0.0, -2.0)``,
    ``modf(inf)`` ``(0.0, inf)``). Elementwise, no collectives. Differentiable (1 for the fractional part, 0 for
    the integral part).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     f, i = xp.modf(xp.asarray([2.5, -1.25]))
        >>> f.numpy(), i.numpy()
        (array([ 0.5 , -0.25]), array([ 2., -1.]))
    """
    x = _unary(x, np.modf, "modf")
    i = trunc(x)
    frac = where(isinf(x), 0.0, x - i)
    return copysign(frac, x), i


# ------------------------------------------------------------------------------------------- powers


def float_power(x1: Any, x2: Any, /) -> Array:
    """``x1 ** x2`` in float64 (complex128 for complex operands), as ``np.float_power``.

    ``pow`` of the operands cast to NumPy's loop dtype. Elementwise, no collectives. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.float_power(xp.asarray([4, 9]), 0.5).numpy()
        array([2., 3.])
    """
    a, b = _binary(x1, x2, np.float_power, "float_power")
    return pow(a, b)


def cbrt(x: Any, /) -> Array:
    """The real cube root of ``x``, as ``np.cbrt`` (integers give float64; complex refused, as NumPy).

    ``|x| ** (1/3)`` refined by one Newton step (float64; float16/float32 computed in float64 and rounded once),
    the sign copied from ``x``; 0, infinities and NaN pass through. Elementwise, no collectives. Differentiable
    (``1 / (3 cbrt(x)**2)``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.cbrt(xp.asarray([27.0, -8.0, 0.0])).numpy()
        array([ 3., -2.,  0.])
    """
    x = _unary(x, np.cbrt, "cbrt")
    w = _wide(x)
    ok = logical_and(isfinite(w), not_equal(w, 0))
    ax = where(ok, abs(w), 1.0)
    if w.dtype == np.float64:  # (scaled so that y**3 neither overflows nor loses digits as a subnormal)
        tiny, huge = ax < 2.0**-900, ax > 2.0**900
        ax = where(tiny, ax * 2.0**600, where(huge, ax * 2.0**-600, ax))
    y = pow(ax, 1.0 / 3.0)
    y = y - (y * y * y - ax) / (3.0 * y * y)
    if w.dtype == np.float64:
        y = where(tiny, y * 2.0**-200, where(huge, y * 2.0**200, y))
    return _astype(where(ok, copysign(y, w), w), x.dtype)


def frexp(x: Any, /) -> tuple[Array, Array]:
    """The mantissa in ``[0.5, 1)`` (with ``x``'s sign) and the int32 exponent of ``x = m * 2**e``, as ``np.frexp``.

    ``e = floor(log2|x|) + 1`` corrected by one step either way, ``m = ldexp(x, -e)`` (the exact power-of-two
    scaling ``sa.ldexp``; computed in float64, subnormals too); 0, infinities and NaN give ``(x, 0)``.
    Elementwise, no collectives. Differentiable in the mantissa (``2**-e``); the exponent is piecewise constant.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     m, e = xp.frexp(xp.asarray([8.0, -3.0, 0.0]))
        >>> m.numpy(), e.numpy()
        (array([ 0.5 , -0.75,  0.  ]), array([4, 2, 0], dtype=int32))
    """
    x = _unary(x, np.frexp, "frexp")
    w = _wide(x)
    ok = logical_and(isfinite(w), not_equal(w, 0))
    safe = where(ok, w, 1.0)
    e = floor(log2(abs(safe))) + 1.0
    m = _ldexp(safe, -e)
    up, down = abs(m) >= 1.0, abs(m) < 0.5
    m = where(up, m * 0.5, where(down, m * 2.0, m))
    e = where(up, e + 1.0, where(down, e - 1.0, e))
    return _astype(where(ok, m, w), x.dtype), _astype(where(ok, e, 0.0), np.int32)


def ldexp(x1: Any, x2: Any, /) -> Array:
    """``x1 * 2**x2`` for an integer ``x2``, as ``np.ldexp`` (NumPy's loop dtypes: a float ``x2`` is refused).

    The exact power-of-two scaling ``sa.ldexp`` in float64 (float16/float32 rounded once from it, so a subnormal
    result is not flushed); 0, infinities and NaN pass through. Elementwise, no collectives. Differentiable in
    ``x1`` (``2**x2``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.ldexp(xp.asarray([0.75, -1.0]), xp.asarray([3, -2])).numpy()
        array([ 6.  , -0.25])
    """
    a, n = _binary(x1, x2, np.ldexp, "ldexp")
    e = _astype(n, np.float64)  # (clipped to +-2300 before int32: beyond it every result is 0 or inf anyway)
    return _astype(_ldexp(_wide(a), where(e > 2300.0, 2300.0, where(e < -2300.0, -2300.0, e))), a.dtype)


def _ldexp(x: Array, e: Array) -> Array:
    """``x * 2**e`` exactly (``sa.ldexp``) for float64 ``x`` and an integral float64 ``e`` within +-2300."""
    return elementwise(mb.ldexp, x, _astype(e, np.int32), what="ldexp")


# ------------------------------------------------------------------------------------------- integers


def _gcd_block(xp: Any, a: Any, b: Any) -> Any:
    return xp.gcd(a, b)


def _lcm_block(xp: Any, a: Any, b: Any) -> Any:
    return xp.lcm(a, b)


@nondifferentiable("gcd")
def _gcd(a: ShardArray, b: ShardArray) -> ShardArray:
    return apply("gcd", _gcd_block, (a, b), domain="integer")


@nondifferentiable("lcm")
def _lcm(a: ShardArray, b: ShardArray) -> ShardArray:
    return apply("lcm", _lcm_block, (a, b), domain="integer")


def gcd(x1: Any, x2: Any, /) -> Array:
    """The greatest common divisor of ``|x1|`` and ``|x2|`` (``gcd(0, 0) = 0``), as ``np.gcd`` (integers only).

    The array module's ``gcd`` on each block (NumPy's or CuPy's ufunc): no communication beyond aligning the
    operands' layouts, and none that depends on the values (an earlier elementwise Euclid's algorithm read
    one flag per step, so its traffic grew with the data and a meta mesh could not run it). Integer result: not
    differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.gcd(xp.asarray([12, -18, 0, 7]), 8).numpy()
        array([4, 2, 8, 1])
    """
    a, b = _binary(x1, x2, np.gcd, "gcd")
    return elementwise(_gcd, a, b, what="gcd")


def lcm(x1: Any, x2: Any, /) -> Array:
    """The least common multiple of ``|x1|`` and ``|x2|`` (0 where either is 0), as ``np.lcm`` (integers only).

    The array module's ``lcm`` on each block, as ``gcd``: no communication beyond aligning layouts. Integer
    result: not differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.lcm(xp.asarray([4, -6, 0]), 6).numpy()
        array([12,  6,  0])
    """
    a, b = _binary(x1, x2, np.lcm, "lcm")
    return elementwise(_lcm, a, b, what="lcm")


# ------------------------------------------------------------------------------------------- rounding, angles


def fix(x: Any, out: None = None) -> Array:
    """``x`` rounded toward zero, as ``np.fix`` (floats keep their dtype; integers and bools are returned as a
    copy, as NumPy's ``fix`` of them).

    ``trunc``. Elementwise, no collectives. Differentiable (0 almost everywhere). ``out=`` is refused
    (distributed arrays: assign the result).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fix(xp.asarray([2.7, -2.7, 0.5])).numpy()
        array([ 2., -2.,  0.])
    """
    x = _check(x, "fix")
    no_out(out, "fix")
    if x.dtype.kind == "c":
        raise DTypeError(f"fix: not defined for complex arrays (as in NumPy); got {x.dtype}. Round xp.real(x)")
    if x.dtype.kind in "biu":
        return cast(Array, astype(x, x.dtype, copy=True))
    return trunc(x)


def _to_degrees(x: Any, factor: tuple[float, float], ufunc: np.ufunc, what: str) -> Array:
    """``x * factor`` in NumPy's loop dtype; ``factor`` is ``(numerator, denominator)``, divided in that dtype as
    NumPy's loops do (float32: ``180.0f / NPY_PIf``, one ulp from ``180 / pi`` rounded; float16 computed in
    float32 and rounded once)."""
    x = _unary(x, ufunc, what)
    if x.dtype in (np.float16, np.float32):
        f = float(np.float32(factor[0]) / np.float32(factor[1]))
        if x.dtype == np.float16:
            return _astype(multiply(_astype(x, np.float32), f), np.float16)
        return multiply(x, f)
    return multiply(x, factor[0] / factor[1])


def deg2rad(x: Any, /) -> Array:
    """Degrees to radians, ``x * (pi / 180)``, as ``np.deg2rad`` (integers give float64).

    Elementwise, no collectives. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.deg2rad(xp.asarray([180.0, 90.0])).numpy()
        array([3.14159265, 1.57079633])
    """
    return _to_degrees(x, (math.pi, 180.0), np.deg2rad, "deg2rad")


def radians(x: Any, /) -> Array:
    """Degrees to radians, as ``np.radians`` (``deg2rad``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.radians(xp.asarray([180.0])).numpy()
        array([3.14159265])
    """
    return _to_degrees(x, (math.pi, 180.0), np.radians, "radians")


def rad2deg(x: Any, /) -> Array:
    """Radians to degrees, ``x * (180 / pi)``, as ``np.rad2deg`` (integers give float64).

    Elementwise, no collectives. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.rad2deg(xp.asarray([xp.pi, -xp.pi / 2])).numpy()
        array([180., -90.])
    """
    return _to_degrees(x, (180.0, math.pi), np.rad2deg, "rad2deg")


def degrees(x: Any, /) -> Array:
    """Radians to degrees, as ``np.degrees`` (``rad2deg``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.degrees(xp.asarray([xp.pi])).numpy()
        array([180.])
    """
    return _to_degrees(x, (180.0, math.pi), np.degrees, "degrees")


def angle(z: Any, deg: bool = False) -> Array:
    """The argument of ``z``, ``atan2(imag(z), real(z))``, in radians (degrees with ``deg=True``), as ``np.angle``.

    Real arrays give 0 or pi (integers NumPy's ``arctan2`` dtype: int64 float64, int8 float16). Elementwise, no
    collectives. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.angle(xp.asarray([1j, -1.0 + 0j, 1.0 + 1j]), deg=True).numpy()
        array([ 90., 180.,  45.])
    """
    z = _check(z, "angle")
    if z.dtype.kind == "c":
        a = atan2(imag(z), real(z))
    else:
        if z.dtype.kind in "biu":  # (NumPy's arctan2 loop of 0 and z: int8 and bool give float16)
            z = _astype(z, np.arctan2.resolve_dtypes((int, z.dtype, None))[1])
        a = atan2(zeros_like(z), z)
    return cast(Array, a * (180.0 / math.pi)) if deg else a


# ------------------------------------------------------------------------------------------- classification


def _real_only(x: Any, what: str) -> Array:
    x = _check(x, what)
    if x.dtype.kind == "c":
        raise DTypeError(f"{what}: not defined for complex arrays (as in NumPy); got {x.dtype}. Test xp.real(x)")
    return x


def _infinite(x: Array, negative: bool, out: None, what: str) -> Array:
    no_out(out, what)
    if x.dtype.kind in "biu":
        return zeros_like(x, dtype=np.bool_)
    sign = signbit(x)
    return logical_and(isinf(x), sign if negative else logical_not(sign))


def isposinf(x: Any, out: None = None) -> Array:
    """Where ``x`` is +inf, as ``np.isposinf`` (bool; integers all False, complex refused as NumPy).

    Elementwise, no collectives; a bool result (not differentiable). ``out=`` is refused.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.isposinf(xp.asarray([xp.inf, -xp.inf, 1.0])).numpy()
        array([ True, False, False])
    """
    return _infinite(_real_only(x, "isposinf"), False, out, "isposinf")


def isneginf(x: Any, out: None = None) -> Array:
    """Where ``x`` is -inf, as ``np.isneginf`` (bool; integers all False, complex refused as NumPy).

    Elementwise, no collectives; a bool result (not differentiable). ``out=`` is refused.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.isneginf(xp.asarray([xp.inf, -xp.inf, 1.0])).numpy()
        array([False,  True, False])
    """
    return _infinite(_real_only(x, "isneginf"), True, out, "isneginf")


def isreal(x: Any) -> Array:
    """Where ``x`` has no imaginary part (``imag(x) == 0``; real dtypes all True), as ``np.isreal``.

    Elementwise, no collectives; a bool result (not differentiable).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.isreal(xp.asarray([1.0 + 0j, 1j])).numpy()
        array([ True, False])
    """
    x = _check(x, "isreal")
    if x.dtype.kind == "c":
        return cast(Array, imag(x) == 0)
    return logical_not(zeros_like(x, dtype=np.bool_))


def iscomplex(x: Any) -> Array:
    """Where ``x`` has a nonzero imaginary part (real dtypes all False), as ``np.iscomplex``.

    Elementwise, no collectives; a bool result (not differentiable).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.iscomplex(xp.asarray([1.0 + 0j, 1j])).numpy()
        array([False,  True])
    """
    x = _check(x, "iscomplex")
    if x.dtype.kind == "c":
        return cast(Array, imag(x) != 0)
    return zeros_like(x, dtype=np.bool_)


def real_if_close(a: Any, tol: float = 100) -> Array:
    """``real(a)`` if every imaginary part of a complex ``a`` is below ``tol`` (in machine epsilons of ``a``'s
    dtype when ``tol > 1``), else ``a`` itself, as ``np.real_if_close``.

    The result's dtype depends on the data: one allreduce (``all``) and a host read. Differentiable (``real`` or
    the identity).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.real_if_close(xp.asarray([2.0 + 1e-16j, -1.0 + 0j])).numpy()
        array([ 2., -1.])
    """
    a = _check(a, "real_if_close")
    if not isinstance(tol, (int, float, np.integer, np.floating)) or isinstance(tol, bool):
        raise DTypeError(f"real_if_close: tol must be a real number; got {type(tol).__name__}")
    if a.dtype.kind != "c":
        return cast(Array, a)
    limit = float(tol) * float(finfo(a.dtype).eps) if tol > 1 else float(tol)
    if bool(_all(abs(imag(a)) < limit)):
        return real(a)
    return cast(Array, a)


# ------------------------------------------------------------------------------------------- Bessel

# Chebyshev coefficients of exp(-x) I0(x) on [0, 8] and of exp(-x) sqrt(x) I0(x) on (8, inf) (Cephes, as NumPy's)
_I0A = (
    -4.41534164647933937950e-18,
    3.33079451882223809783e-17,
    -2.43127984654795469359e-16,
    1.71539128555513303061e-15,
    -1.16853328779934516808e-14,
    7.67618549860493561688e-14,
    -4.85644678311192946090e-13,
    2.95505266312963983461e-12,
    -1.72682629144155570723e-11,
    9.67580903537323691224e-11,
    -5.18979560163526290666e-10,
    2.65982372468238665035e-9,
    -1.30002500998624804212e-8,
    6.04699502254191894932e-8,
    -2.67079385394061173391e-7,
    1.11738753912010371815e-6,
    -4.41673835845875056359e-6,
    1.64484480707288970893e-5,
    -5.75419501008210370398e-5,
    1.88502885095841655729e-4,
    -5.76375574538582365885e-4,
    1.63947561694133579842e-3,
    -4.32430999505057594430e-3,
    1.05464603945949983183e-2,
    -2.37374148058994688156e-2,
    4.93052842396707084878e-2,
    -9.49010970480476444210e-2,
    1.71620901522208775349e-1,
    -3.04682672343198398683e-1,
    6.76795274409476084995e-1,
)
_I0B = (
    -7.23318048787475395456e-18,
    -4.83050448594418207126e-18,
    4.46562142029675999901e-17,
    3.46122286769746109310e-17,
    -2.82762398051658348494e-16,
    -3.42548561967721913462e-16,
    1.77256013305652638360e-15,
    3.81168066935262242075e-15,
    -9.55484669882830764870e-15,
    -4.15056934728722208663e-14,
    1.54008621752140982691e-14,
    3.85277838274214270114e-13,
    7.18012445138366623367e-13,
    -1.79417853150680611778e-12,
    -1.32158118404477131188e-11,
    -3.14991652796324136454e-11,
    1.18891471078464383424e-11,
    4.94060238822496958910e-10,
    3.39623202570838634515e-9,
    2.26666899049817806459e-8,
    2.04891858946906374183e-7,
    2.89137052083475648297e-6,
    6.88975834691682398426e-5,
    3.36911647825569408990e-3,
    8.04490411014108831608e-1,
)


def _chbevl(x: Array, coefs: tuple[float, ...]) -> Array:
    """Clenshaw's sum of the Chebyshev series ``coefs`` at ``x`` (Cephes' ``chbevl``, as NumPy's)."""
    b0: Any = coefs[0]
    b1: Any = 0.0
    b2: Any = 0.0
    for c in coefs[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return cast(Array, (b0 - b2) * 0.5)


def i0(x: Any) -> Array:
    """The modified Bessel function of the first kind, order 0, as ``np.i0`` (integers give float64, complex
    refused as NumPy).

    NumPy's Cephes Chebyshev expansions of ``exp(-|x|) I0(x)`` (``|x| <= 8`` and above), in ``x``'s dtype
    (bfloat16: in float32, rounded once, ``dtypes.compute_dtype``; NumPy with ml_dtypes gives float64 there).
    Elementwise, no collectives. Differentiable (``I1(x)``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.i0(xp.asarray([0.0, 1.0, -2.0])).numpy().round(6)
        array([1.      , 1.266066, 2.279585])
    """
    x = _check(x, "i0")
    if x.dtype.kind == "c":
        raise DTypeError(f"i0: not supported for complex values (as in NumPy); got {x.dtype}")
    wide = compute_dtype(x.dtype)
    if wide is not None:
        return _astype(i0(_astype(x, wide)), x.dtype)
    if x.dtype.kind in "biu":
        x = _astype(x, np.float64)
    ax = abs(x)
    small = ax <= 8.0
    xs = where(small, ax, 0.0)  # (each branch sees safe values: no NaN in the other's gradient)
    xl = where(small, 9.0, ax)
    lo = exp(xs) * _chbevl(xs * 0.5 - 2.0, _I0A)
    hi = exp(xl) * _chbevl(32.0 / xl - 2.0, _I0B) / sqrt(xl)
    return where(isnan(x), x, where(small, lo, hi))
