"""Binary elementwise math, broadcasting by dim name: floor_divide, remainder, atan2, hypot, copysign,
logaddexp, nextafter, and clip.

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
from ...core.tape import differentiable, nondifferentiable
from ...dtypes import BFLOAT16, is_bfloat16, promote
from .arithmetic import apply

__all__ = ["atan2", "clip", "copysign", "floor_divide", "hypot", "logaddexp", "nextafter", "remainder"]


def _ufunc(name: str, ufunc: str, x: Any, y: Any, domain: str | None) -> ShardArray:
    def fn(xp: Any, a: Any, b: Any) -> Any:
        if getattr(xp, "__name__", "") == "numpy":
            with xp.errstate(divide="ignore", invalid="ignore"):  # inf/nan/0 as NumPy gives them, without warnings
                return getattr(xp, ufunc)(a, b)
        return getattr(xp, ufunc)(a, b)

    return apply(name, fn, (x, y), domain=domain)


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
    return _ufunc("floor_divide", "floor_divide", x, y, "real_numeric")


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
    return _ufunc("remainder", "remainder", x, y, "real_numeric")


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
    """Whether ``apply`` gives the result of ``args`` in bfloat16: the arrays promote to bfloat16 and no NumPy
    scalar operand takes it beyond float32 (``apply`` rounds a float32 result of bfloat16 arrays to bfloat16)."""
    arrays = [a.dtype for a in args if isinstance(a, ShardArray)]
    scalars = [a.dtype for a in args if isinstance(a, np.generic)]
    try:
        return bool(arrays) and is_bfloat16(promote(*arrays)) and promote(np.float32, *scalars) == np.float32
    except TypeError:  # (no promotion rule: ``apply`` names the operands)
        return False


def _nextafter_bfloat16(xp: Any, a: Any, b: Any) -> Any:
    """``nextafter`` in bfloat16 steps, as float32 values (``apply`` rounds them to bfloat16, exactly).

    NumPy shards reach the block upcast to float32, where ``nextafter`` would step by a float32 ulp and the
    rounding back to bfloat16 would undo it. A bfloat16 value is a float32 whose low 16 bits are zero, so the
    next one is 2**16 away in the float32 bit pattern (toward or away from zero as in IEEE's nextafter).
    """
    if isinstance(a, MetaArray) or isinstance(b, MetaArray):
        return xp.nextafter(a, b)
    a, b = _bfloat16_values(xp, a), _bfloat16_values(xp, b)
    away = (b > a) == (a > 0)  # a step away from zero: its magnitude's bits go up
    out = (a.view(xp.int32) + xp.where(away, 1 << 16, -(1 << 16)).astype(xp.int32)).view(xp.float32)
    out = xp.where(a == 0, xp.copysign(xp.asarray(2.0**-133, dtype=xp.float32), b), out)  # the smallest subnormal
    out = xp.where(a == b, b, out)
    return xp.where(xp.isnan(a) | xp.isnan(b), xp.asarray(xp.nan, dtype=xp.float32), out)


def _bfloat16_values(xp: Any, v: Any) -> Any:
    """``v`` (a block or a scalar) rounded to bfloat16, as a float32 array."""
    return xp.asarray(v).astype(BFLOAT16).astype(xp.float32)


def clip(x: ShardArray, min: Any = None, max: Any = None) -> ShardArray:
    """``x`` limited to ``[min, max]`` elementwise: NumPy's ``clip``, i.e. ``minimum(maximum(x, min), max)``.

    ``min`` and ``max`` are scalars, ShardArrays (broadcast by dim name) or
    None (no bound). As in NumPy, where ``min > max`` the result is ``max``.
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
    if min is None and max is None:
        return x
    if min is None:
        return _clip_hi(x, max)
    if max is None:
        return _clip_lo(x, min)
    return _clip(x, min, max)


@differentiable("clip", resolve_inputs=True)
def _clip(x: ShardArray, lo: Any, hi: Any) -> ShardArray:
    return apply("clip", lambda xp, a, lo, hi: xp.minimum(xp.maximum(a, lo), hi), (x, lo, hi), domain="real")


@differentiable("clip_lo", resolve_inputs=True)
def _clip_lo(x: ShardArray, lo: Any) -> ShardArray:
    return apply("clip", lambda xp, a, lo: xp.maximum(a, lo), (x, lo), domain="real")


@differentiable("clip_hi", resolve_inputs=True)
def _clip_hi(x: ShardArray, hi: Any) -> ShardArray:
    return apply("clip", lambda xp, a, hi: xp.minimum(a, hi), (x, hi), domain="real")
