"""Binary elementwise math, broadcasting by dim name: floor_divide, remainder, atan2, hypot, copysign,
logaddexp, nextafter, ldexp, clip, and maximum/minimum/fmax/fmin of complex values in NumPy's order.

Operands are matched by dim name as in ``ops/elementwise/arithmetic.py`` (a dim missing
from one operand broadcasts; the result has the first array's dims first and
its layout). Each block runs the NumPy (or CuPy) ufunc of the same name, so
results follow NumPy, special values included (``floor_divide(1.0, -inf)`` is
``-1.0``, ``remainder(-0.0, 1.0)`` is ``0.0``, integer division by zero is 0).
No communication, except bringing operands to one layout (a slice, or an
allgather when two operands split the same dim differently) and resolving a
pending sum (an allreduce).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import require_array
from ...core.tape import Context, differentiable, nondifferentiable, register_vjp
from ...dtypes import BFLOAT16, is_bfloat16, promote
from ...errors import DTypeError
from ..cotangent import match
from ..manipulation.structure import astype
from . import arithmetic as ew
from .arithmetic import apply
from .logical import complex_choose, complex_clip, complex_operands

__all__ = [
    "atan2",
    "clip",
    "copysign",
    "floor_divide",
    "fmax",
    "fmin",
    "hypot",
    "ldexp",
    "logaddexp",
    "maximum",
    "minimum",
    "nextafter",
    "remainder",
]


def _ufunc(name: str, ufunc: str, x: Any, y: Any, domain: str | None, device: Any = None) -> ShardArray:
    """``apply`` of the NumPy (or CuPy) ufunc ``ufunc``; ``device(xp, a, b)``, where given, replaces it on other
    array modules than NumPy (where CuPy's ufunc computes another way)."""

    def fn(xp: Any, a: Any, b: Any) -> Any:
        if getattr(xp, "__name__", "") == "numpy":
            with xp.errstate(divide="ignore", invalid="ignore"):  # inf/nan/0 as NumPy gives them, without warnings
                return getattr(xp, ufunc)(a, b)
        if device is not None:
            return device(xp, a, b)
        return getattr(xp, ufunc)(a, b)

    return apply(name, fn, (x, y), domain=domain)


def _float_loop(a: Any, b: Any) -> np.dtype | None:
    """The float dtype NumPy's ``floor_divide``/``remainder`` loop of blocks (or scalars) ``a``, ``b`` runs in on
    NumPy shards (bfloat16 blocks computed in float32, as ``apply`` does there); None for an integer loop or
    MetaArrays."""
    if isinstance(a, MetaArray) or isinstance(b, MetaArray):
        return None
    dts = [v if not hasattr(v, "dtype") else np.float32 if is_bfloat16(v.dtype) else v.dtype for v in (a, b)]
    try:
        dt = np.result_type(*dts)
    except TypeError:  # (no promotion rule: the ufunc itself reports it)
        return None
    return dt if dt.kind == "f" else None


def _loop_operand(xp: Any, v: Any, dt: np.dtype, wide: np.dtype) -> Any:
    """Block or scalar ``v`` as a device array of ``wide``: a scalar first takes the loop dtype ``dt`` on the host
    (a weak Python scalar: ``1e300`` is ``inf`` beside float16), so every step below is an array op."""
    if hasattr(v, "shape") and not isinstance(v, np.generic):
        return v.astype(wide, copy=False)
    with np.errstate(over="ignore"):
        return xp.asarray(np.asarray(v).astype(dt).astype(wide))


def floor_divide_block(xp: Any, a: Any, b: Any) -> Any:
    """NumPy's ``floor_divide`` of blocks (or a block and a scalar) of array module ``xp``: NumPy's ufunc, or
    ``_floor_divide_device`` on CuPy blocks (whose ufunc computes floats another way)."""
    if getattr(xp, "__name__", "") == "numpy":
        return xp.floor_divide(a, b)
    return _floor_divide_device(xp, a, b)


def _floor_divide_device(xp: Any, a: Any, b: Any) -> Any:
    """NumPy's float ``floor_divide`` (``npy_floor_divide``) on device blocks; integers by the backend's ufunc.

    CuPy's float loop is ``floor(a / b)`` (``cupy/_core/include/cupy/carray.cuh``), which rounds the quotient
    first: ``1.0 // 0.1`` is 10 where NumPy gives 9, and ``inf // 2`` is ``inf`` where NumPy gives NaN. NumPy
    divides ``a - fmod(a, b)`` instead, exactly a multiple of ``b`` (see ``_fmod_parts``); float16 runs in float32.
    """
    loop = _float_operands(xp, a, b)
    if loop is None:
        return xp.floor_divide(a, b)
    dt, a, b = loop
    mod, flip = _fmod_parts(xp, a, b)
    div = (a - mod) / b - flip
    q = xp.floor(div)
    q = q + ((div - q) > 0.5)  # snapped to the nearest integer (NaN and inf stay)
    ratio = a / b
    zero_b, zero_div = ~_nonzero(xp, b), ~_nonzero(xp, div)
    q = xp.where(zero_b, ratio, xp.where(zero_div, xp.copysign(0.0, ratio), q))  # ``a / 0``; a zero gets a/b's sign
    return q.astype(dt, copy=False)


def _remainder_device(xp: Any, a: Any, b: Any) -> Any:
    """NumPy's float ``remainder`` (``npy_remainder``: the sign of ``b``) on device blocks; integers by the
    backend's ufunc.

    CuPy's float loop is ``a - floor(a / b) * b``, inexact where ``a / b`` rounds (``1.0 % 0.1`` is 0 or
    ``-5.6e-17`` where NumPy gives ``0.09999999999999995``) and NaN for ``1 % inf`` (NumPy: 1). NumPy corrects
    ``fmod(a, b)``, which is exact.
    """
    loop = _float_operands(xp, a, b)
    if loop is None:
        return xp.remainder(a, b)
    dt, a, b = loop
    mod, flip = _fmod_parts(xp, a, b)
    mod = xp.where(flip, mod + b, mod)
    return xp.where(_nonzero(xp, mod), mod, xp.copysign(0.0, b)).astype(dt, copy=False)  # a zero takes b's sign


def _float_operands(xp: Any, a: Any, b: Any) -> tuple[np.dtype, Any, Any] | None:
    """The float loop's dtype and the operands in its arithmetic dtype (float16 in float32); None for integers."""
    dt = _float_loop(a, b)
    if dt is None:
        return None
    wide = np.dtype(np.float32) if dt.itemsize < 4 else dt
    return dt, _loop_operand(xp, a, dt, wide), _loop_operand(xp, b, dt, wide)


def _fmod_parts(xp: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """``fmod(a, b)`` (exact, with the sign of ``a``) and where its sign differs from ``b``'s, as NumPy's
    ``npy_divmod`` starts: there the remainder becomes ``mod + b`` and the quotient one less.

    The tests for zero and sign are on the bit patterns (``_nonzero``, ``_negative``): CuPy compiles its kernels
    with ``-ftz=true``, so a float32 comparison reads a subnormal remainder (``1e-40 % 1``) as zero.
    """
    mod = xp.fmod(a, b)
    return mod, _nonzero(xp, mod) & (_negative(xp, b) != _negative(xp, mod))


def _bits(xp: Any, v: Any) -> Any:
    """The float block ``v`` (float32 or float64) viewed as signed integers of its size, without a float op (a 0-d
    block stays 0-d: CuPy's ``ascontiguousarray`` would make it 1-d, and a 0-d block is contiguous anyway)."""
    c = v if v.flags.c_contiguous else xp.ascontiguousarray(v)
    return c.view(np.int32 if v.dtype.itemsize == 4 else np.int64)


def _nonzero(xp: Any, v: Any) -> Any:
    """``v != 0`` of a float block on its bits (a subnormal counts, as in NumPy; NaN is nonzero)."""
    mask = (1 << (8 * v.dtype.itemsize - 1)) - 1
    return (_bits(xp, v) & mask) != 0


def _negative(xp: Any, v: Any) -> Any:
    """The sign bit of a float block (``v < 0`` for every nonzero, non-NaN ``v``), on its bits."""
    return _bits(xp, v) < 0


@differentiable("floor_divide", resolve_inputs=True)
def floor_divide(x: Any, y: Any) -> ShardArray:
    """``x // y`` elementwise (NumPy's floor division), broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[7.0, -7.0], [1.0, -0.0]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> (x // 2).numpy(), sa.floor_divide(x, -np.inf).numpy()
        (array([[ 3., -4.],
               [ 0., -0.]]), array([[-1.,  0.],
               [-1.,  0.]]))
    """
    return _ufunc("floor_divide", "floor_divide", x, y, "real_numeric", _floor_divide_device)


@differentiable("remainder", resolve_inputs=True)
def remainder(x: Any, y: Any) -> ShardArray:
    """``x % y`` elementwise, with the sign of ``y`` (NumPy's ``remainder``), broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[7, -7], [1, 0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> (x % 3).numpy(), sa.remainder(x, -3).numpy()
        (array([[1, 2],
               [1, 0]]), array([[-2, -1],
               [-2,  0]]))
    """
    return _ufunc("remainder", "remainder", x, y, "real_numeric", _remainder_device)


@differentiable("atan2", resolve_inputs=True)
def atan2(y: Any, x: Any) -> ShardArray:
    """The angle of the point ``(x, y)`` elementwise (NumPy's ``arctan2(y, x)``), broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> y = sa.asarray(np.array([[1.0, -1.0], [0.0, -0.0]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> np.round(sa.atan2(y, -1.0).numpy() / np.pi, 2)
        array([[ 0.75, -0.75],
               [ 1.  , -1.  ]])
    """
    return _ufunc("atan2", "arctan2", y, x, "real_float")


@differentiable("hypot", resolve_inputs=True)
def hypot(x: Any, y: Any) -> ShardArray:
    """``sqrt(x**2 + y**2)`` elementwise without overflow, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[3.0, 5.0], [1e300, 0.0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.hypot(x, 4.0).numpy()
        array([[5.00000000e+000, 6.40312424e+000],
               [1.00000000e+300, 4.00000000e+000]])
    """
    return _ufunc("hypot", "hypot", x, y, "real_float")


@differentiable("copysign", resolve_inputs=True)
def copysign(x: Any, y: Any) -> ShardArray:
    """The magnitude of ``x`` with the sign (bit) of ``y`` elementwise, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> y = sa.asarray(np.array([[1.0, -0.0], [-2.0, 0.0]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.copysign(3.0, y).numpy()
        array([[ 3., -3.],
               [-3.,  3.]])
    """
    return _ufunc("copysign", "copysign", x, y, "real_float")


@differentiable("ldexp", resolve_inputs=True)
def ldexp(x: Any, n: Any) -> ShardArray:
    """``x * 2**n`` elementwise for an integer ``n``, exactly (the backend's ``ldexp``), broadcasting by dim name.

    The result has NumPy's dtype for ``np.ldexp(x, n)`` (``x``'s float dtype). An exact power-of-two scaling: on
    CUDA, ``x * 2.0 ** n`` through ``pow`` can be an ulp off (and on CuPy a float16/float32 ``x`` is scaled in
    float64, so that a subnormal result is not flushed to zero). Elementwise, no collectives. Differentiable in
    ``x`` (``ldexp(g, n)``); ``n`` is an integer. A bfloat16 ``x`` is scaled in float64 and rounded to bfloat16
    once (NumPy has no bfloat16 loop).

    Raises:
        DTypeError: a complex ``x``, or ``n`` not an integer (or bool) array or Python int.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0.75, -1.0], [3.0, 1.0]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> n = sa.asarray(np.array([3, -2], dtype=np.int32), dims=("b",), mesh=mesh)
        >>> sa.ldexp(x, n).numpy()
        array([[ 6.  , -0.25],
               [24.  ,  0.25]])
    """
    _check_ldexp(x, n)
    if isinstance(x, ShardArray) and is_bfloat16(x.dtype):  # (exact in float64, rounded to bfloat16 once)
        return astype(_ufunc("ldexp", "ldexp", astype(x, np.float64), n, None, device=_ldexp_wide), BFLOAT16)
    return _ufunc("ldexp", "ldexp", x, n, None, device=_ldexp_wide)


def _check_ldexp(x: Any, n: Any) -> None:
    """``x`` real (integers and bools as NumPy casts them: to float16, float32 or float64 by their size); ``n``
    an integer (or bool) array or a Python int."""
    xd = x.dtype if isinstance(x, ShardArray) else np.result_type(x) if isinstance(x, np.generic) else None
    if xd is not None and not (xd.kind in "biuf" or is_bfloat16(xd)):
        raise DTypeError(
            f"ldexp: x must be real; got {xd} (NumPy's ldexp has no loop for it): scale the real and imaginary "
            f"parts apart"
        )
    nd = n.dtype if isinstance(n, ShardArray) else np.result_type(n) if isinstance(n, np.generic) else None
    if (nd is not None and nd.kind not in "biu") or (nd is None and not isinstance(n, (int, np.integer))):
        raise DTypeError(
            f"ldexp: the exponent n must be an integer array or a Python int; got "
            f"{nd if nd is not None else type(n).__name__} (NumPy refuses float exponents too): round and cast "
            f'it first, e.g. n.astype("int32")'
        )


def _ldexp_wide(xp: Any, a: Any, n: Any) -> Any:
    """``ldexp`` off NumPy: float16/float32 through float64, rounded once (CuPy's kernels, built with
    ``-ftz=true``, would flush a float32 result that is subnormal to zero)."""
    dt = getattr(a, "dtype", None)
    if dt is not None and np.dtype(dt).kind == "f" and np.dtype(dt).itemsize < 8:
        return xp.ldexp(a.astype(np.float64), n).astype(dt)
    return xp.ldexp(a, n)


@differentiable("logaddexp", resolve_inputs=True)
def logaddexp(x: Any, y: Any) -> ShardArray:
    """``log(exp(x) + exp(y))`` elementwise without overflow, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0.0, 1000.0], [-np.inf, 1.0]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> np.round(sa.logaddexp(x, 0.0).numpy(), 4)
        array([[6.9310e-01, 1.0000e+03],
               [0.0000e+00, 1.3133e+00]])
    """
    return _ufunc("logaddexp", "logaddexp", x, y, "real_float")


@nondifferentiable("nextafter")
def nextafter(x: Any, y: Any) -> ShardArray:
    """The next floating-point value after ``x`` toward ``y`` elementwise (not differentiable).

    A bfloat16 result steps by a bfloat16 ulp, as ``np.nextafter`` of ml_dtypes' bfloat16 does (bfloat16 math
    on NumPy shards otherwise runs in float32, whose step the rounding to bfloat16 would undo).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 0.0], [2.0, -1.0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> (sa.nextafter(x, np.inf) - x).numpy()[0]
        array([2.22044605e-016, 4.94065646e-324])
    """
    if _bfloat16_result((x, y)):
        return apply("nextafter", _nextafter_bfloat16, (x, y), domain="real_float")
    return _ufunc("nextafter", "nextafter", x, y, "real_float")


def _bfloat16_result(args: tuple[Any, ...]) -> bool:
    """Whether ``apply`` gives the result of ``args`` in bfloat16: the arrays and the NumPy scalar operands (not
    weak: NEP 50) promote to bfloat16 (``apply`` rounds a float32 result of bfloat16 arrays to that dtype). A
    ``np.float32`` or ``np.float16`` scalar beside a bfloat16 array makes the result float32, stepped by a float32
    ulp."""
    arrays = [a.dtype for a in args if isinstance(a, ShardArray)]
    scalars = [a.dtype for a in args if isinstance(a, np.generic)]
    try:
        return bool(arrays) and is_bfloat16(promote(*arrays, *scalars))
    except TypeError:  # (no promotion rule: ``apply`` names the operands)
        return False


def _nextafter_bfloat16(xp: Any, a: Any, b: Any) -> Any:
    """``nextafter`` in bfloat16 steps, as float32 values (``apply`` rounds them to bfloat16, exactly).

    NumPy shards reach the block upcast to float32, where ``nextafter`` would step by a float32 ulp and the
    rounding back to bfloat16 would undo it. A bfloat16 value is a float32 whose low 16 bits are zero, so the
    next one is 2**16 away in the float32 bit pattern (toward or away from zero as in IEEE's nextafter).

    Every test is on the bit patterns, as integers: CuPy compiles its kernels with ``-ftz=true``
    (``cupy/cuda/compiler.py``), so a float32 comparison reads a subnormal as zero, and bfloat16's subnormals
    are float32 subnormals (from ``9.2e-41`` the step up gave ``9.2e-41`` again).
    """
    if isinstance(a, MetaArray) or isinstance(b, MetaArray):
        return xp.nextafter(a, b)
    a, b = _bfloat16_bits(xp, a), _bfloat16_bits(xp, b)
    ka, kb = _ordered(xp, a), _ordered(xp, b)
    away = (kb > ka) == (a > 0)  # a step away from zero: its magnitude's bits go up
    out = a + xp.where(away, xp.int32(1 << 16), xp.int32(-(1 << 16)))
    smallest = xp.where(b < 0, xp.int32(-(2**31) + (1 << 16)), xp.int32(1 << 16))  # 2**-133 with the sign of b
    out = xp.where(ka == 0, smallest, out)
    out = xp.where(ka == kb, b, out)
    nan = ((a & 0x7FFFFFFF) > 0x7F800000) | ((b & 0x7FFFFFFF) > 0x7F800000)
    return xp.where(nan, xp.int32(0x7FC00000), out).view(xp.float32)


def _bfloat16_bits(xp: Any, v: Any) -> Any:
    """``v`` (a block or a scalar) rounded to bfloat16, as the int32 bit pattern of its float32 value, made from
    the bfloat16 bits without a float conversion (a scalar's bits are made on the host and sent as an int32: a
    float64 to float32 conversion in a CuPy kernel flushes subnormals, and a bfloat16 -0.0 sent to an H200 came
    back as +0.0)."""
    if not hasattr(v, "shape") or isinstance(v, np.generic):
        host = np.asarray(v).astype(BFLOAT16).view(np.uint16).astype(np.uint32) << np.uint32(16)
        return xp.asarray(host.view(np.int32))
    return (v.astype(BFLOAT16).view(xp.uint16).astype(xp.uint32) << xp.uint32(16)).view(xp.int32)


def _ordered(xp: Any, bits: Any) -> Any:
    """The int32 bit patterns of float32 values mapped to integers in the order of the values (both zeros to 0)."""
    return xp.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def clip(x: ShardArray, min: Any = None, max: Any = None) -> ShardArray:
    """``x`` limited to ``[min, max]`` elementwise: NumPy's ``clip``, i.e. ``minimum(maximum(x, min), max)``.

    ``min`` and ``max`` are scalars, ShardArrays (broadcast by dim name) or
    None (no bound). As in NumPy, where ``min > max`` the result is ``max``;
    complex values clip in NumPy's order, bit for bit (``logical.complex_clip``: real parts, then imaginary
    parts; a NaN in ``x`` stays, a NaN bound is taken unless ``x`` has a NaN part), one bound alone as NumPy's
    ``maximum``/``minimum`` (NumPy's ``np.clip`` calls them then), differentiable the same way;
    as in NumPy 2, a Python int bound beyond an integer ``x``'s range on the
    side it does not bound is no bound (``clip(uint8_x, -1, 300)`` is ``x``),
    one beyond it on the other side raises ``CastError`` (NumPy: ``OverflowError``).
    The result has ``x``'s dims first and ``x``'s layout. Differentiable in
    ``x`` and in array bounds (the gradient goes to whichever value is taken).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[-2.0, 0.5], [3.0, 1.0]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.clip(x, 0.0, 1.0).numpy()
        array([[0. , 0.5],
               [1. , 1. ]])
    """
    x = require_array(x, "clip")
    if x.dtype.kind in "iu":
        min, max = _beyond_range(min, x.dtype, True), _beyond_range(max, x.dtype, False)
    if min is None and max is None:
        return x
    if complex_operands(x, min, max):
        if min is None:
            return minimum(x, max)
        return maximum(x, min) if max is None else _clip_complex(x, min, max)
    if min is None:
        return _clip_hi(x, max)
    if max is None:
        return _clip_lo(x, min)
    return _clip(x, min, max)


def _beyond_range(bound: Any, dtype: np.dtype, lower: bool) -> Any:
    """A Python int ``bound`` of ``clip`` of an integer array of ``dtype``: None where it bounds nothing (below the
    range for a lower bound, above it for an upper one); other bounds as they are (``apply`` refuses one beyond the
    range on the other side)."""
    if type(bound) is not int:
        return bound
    info = np.iinfo(dtype)
    if (bound < info.min and lower) or (bound > info.max and not lower):
        return None
    return bound


@differentiable("clip", resolve_inputs=True)
def _clip(x: ShardArray, lo: Any, hi: Any) -> ShardArray:
    return apply("clip", lambda xp, a, lo, hi: xp.minimum(xp.maximum(a, lo), hi), (x, lo, hi), domain="real")


@differentiable("clip_lo", resolve_inputs=True)
def _clip_lo(x: ShardArray, lo: Any) -> ShardArray:
    return apply("clip", lambda xp, a, lo: xp.maximum(a, lo), (x, lo), domain="real")


@differentiable("clip_hi", resolve_inputs=True)
def _clip_hi(x: ShardArray, hi: Any) -> ShardArray:
    return apply("clip", lambda xp, a, hi: xp.minimum(a, hi), (x, hi), domain="real")


@differentiable("clip_complex", resolve_inputs=True)
def _clip_complex(x: ShardArray, lo: Any, hi: Any) -> ShardArray:
    return apply("clip", complex_clip, (x, lo, hi))


@register_vjp("clip_complex")
def _clip_complex_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    """The cotangent goes to the value taken (``x``, ``lo`` or ``hi``; ``complex_clip``'s ``taken``)."""
    x, lo, hi = ctx.args

    def share(i: int) -> Any:
        return lambda xp, g, a, lo, hi: g * (complex_clip(xp, a, lo, hi, taken=True) == i).astype(g.dtype)

    return [
        match(apply("d_clip", share(i), (g, x, lo, hi)), v) if need else None
        for i, (v, need) in enumerate(zip((x, lo, hi), ctx.needs))
    ]


# ------------------------------------------------------------------ maximum/minimum/fmax/fmin, complex values too
def maximum(x: Any, y: Any) -> ShardArray:
    """Elementwise maximum, broadcasting by dim name; complex values in NumPy's order, bit for bit.

    Real operands: ``arithmetic.maximum`` (NaN propagates). Complex ones (or a complex scalar): NumPy's complex
    ``np.maximum``, ordering by the real parts, then the imaginary parts: ``x`` where ``x`` has a NaN part or
    ``x >= y``, else ``y``, so a NaN propagates (``x``'s where both have one) and of equal values (``0j``, ``-0j``)
    ``x`` is taken. Differentiable, the cotangent to the value taken (halved between equal values, as the real
    op), in JAX's convention for complex values. Each block where it lives (no collective beyond aligning layouts).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> z = sa.asarray(np.array([[1 + 5j, 2j], [complex(np.nan, 1), 1 - 1j]]), dims=("a", "b"), mesh=mesh,
        ...                layout={"b": "col"})
        >>> maximum(z, 1 + 0j).numpy()
        array([[ 1.+5.j,  1.+0.j],
               [nan+1.j,  1.+0.j]])
    """
    return _choose("maximum", x, y) if complex_operands(x, y) else ew.maximum(x, y)


def minimum(x: Any, y: Any) -> ShardArray:
    """Elementwise minimum, complex values in NumPy's order (``x`` where it has a NaN part or ``x <= y``; see
    ``maximum``)."""
    return _choose("minimum", x, y) if complex_operands(x, y) else ew.minimum(x, y)


def fmax(x: Any, y: Any) -> ShardArray:
    """NumPy's ``fmax`` of complex values (or a complex scalar), broadcasting by dim name: ``x`` where ``y`` has a
    NaN part or ``x >= y`` in NumPy's order, else ``y`` (a NaN only where both have one: ``x``'s). Differentiable
    as ``maximum``. Real operands: ``DTypeError`` (the positional ``fmax`` computes them).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> z = sa.asarray(np.array([complex(np.nan, 1), 2j, 3 + 0j]), dims=("a",), mesh=mesh, layout={"a": "row"})
        >>> fmax(z, 1 + 0j).numpy()
        array([1.+0.j, 1.+0.j, 3.+0.j])
    """
    return _choose("fmax", x, y)


def fmin(x: Any, y: Any) -> ShardArray:
    """NumPy's ``fmin`` of complex values (``x`` where ``y`` has a NaN part or ``x <= y``; see ``fmax``)."""
    return _choose("fmin", x, y)


def _choose(op: str, x: Any, y: Any) -> ShardArray:
    if not complex_operands(x, y):
        dts = [str(a.dtype) for a in (x, y) if isinstance(a, ShardArray)]
        raise DTypeError(
            f"{op}: math_binary.{op} takes complex operands (got {', '.join(dts) or 'scalars'}); for real ones use "
            f"sa.maximum/sa.minimum, or np.{op} / xp.{op} (which ignore NaN)"
        )
    return _CHOOSERS[op](x, y)


def _chooser(op: str) -> Any:
    """The op ``op`` (``maximum``, ...) of complex operands, on the tape as ``{op}_complex`` (its VJP below)."""

    @differentiable(f"{op}_complex")
    def chosen(x: Any, y: Any) -> ShardArray:
        return apply(op, lambda xp, a, b: complex_choose(xp, op, a, b), (x, y))

    @register_vjp(f"{op}_complex")
    def _vjp(ctx: Context, g: ShardArray) -> list[Any]:
        x, y = ctx.args

        def to_x(xp: Any, g: Any, a: Any, b: Any) -> Any:
            return g * complex_choose(xp, op, a, b, weights=True)

        def to_y(xp: Any, g: Any, a: Any, b: Any) -> Any:
            return g * (1 - complex_choose(xp, op, a, b, weights=True))

        return [
            match(apply("d_choose", f, (g, x, y)), v) if need else None
            for f, v, need in zip((to_x, to_y), (x, y), ctx.needs)
        ]

    return chosen


_CHOOSERS = {op: _chooser(op) for op in ("maximum", "minimum", "fmax", "fmin")}
