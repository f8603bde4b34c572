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

from ...array import ShardArray
from ...core.common import require_array
from ...core.tape import differentiable, nondifferentiable
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

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 0.0], [2.0, -1.0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> (sa.nextafter(x, np.inf) - x).numpy()[0]
        array([2.22044605e-016, 4.94065646e-324])
    """
    return _ufunc("nextafter", "nextafter", x, y, "real_float")


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
