"""Named-level elementwise ops whose special values follow the array API standard where NumPy's differ.

The named ops (``shardarray.ops``) follow NumPy, special values included. The
standard asks for other results in a few cases; the positional namespace uses
these variants, which run on the same elementwise engine (``ops.elementwise.arithmetic.apply``:
broadcasting by dim name, one pass over each block where it lives, no
communication beyond aligning layouts):

- ``floor_divide`` of floats: ``±inf // finite`` is ``±inf`` (NumPy: NaN) and
  ``finite // ±inf`` is ``floor(x1 / x2)``, a signed zero (``1.0 // -inf`` is
  ``-0.0``; NumPy and Python: ``-1.0``).
- ``expm1`` of complex values with an infinite or NaN part, and of zeros, is
  ``exp(z) - 1`` (NumPy's complex ``expm1`` gives NaN there, and ``-0+0j`` for
  ``-0+0j`` where the standard asks for ``+0+0j``).
- ``tanh`` of complex values with an infinite real part and a finite
  imaginary part ``b`` is ``±1 + copysign(0, b)j`` (NumPy's sign of that zero
  follows ``sin(2b)``).

Each is an op of its own on the tape (``floor_divide_std``, ``expm1_std``,
``tanh_std``) with the VJP of its NumPy counterpart: zero for the piecewise
constant ``floor_divide``, ``g exp(z)`` and ``g (1 - tanh(z)^2)`` (JAX's
convention for complex ``z``, as every VJP of the library).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..backend.meta import MetaArray
from ..core.tape import differentiable
from ..dtypes import is_real_float
from ..ops.elementwise import arithmetic as ew
from ..ops.elementwise import math_unary
from ..ops.elementwise.arithmetic import apply
from ..ops.elementwise.math_binary import floor_divide_block


def _is_numpy(xp: Any) -> bool:
    return getattr(xp, "__name__", "") == "numpy"


def _floor_divide_block(xp: Any, a: Any, b: Any) -> Any:
    q = floor_divide_block(xp, a, b)  # NumPy's (CuPy's float loop computes floor(a / b))
    if not is_real_float(q.dtype):
        return q
    a, b = _in_dtype(xp, a, q.dtype), _in_dtype(xp, b, q.dtype)
    fix = xp.logical_or(xp.isinf(a), xp.isinf(b))
    if isinstance(fix, (np.ndarray, np.bool_)) and not fix.any():
        return q
    return xp.where(fix, xp.floor(xp.divide(a, b)), q)


def _in_dtype(xp: Any, v: Any, dtype: Any) -> Any:
    """A Python scalar operand as the 0-d array it is in the op (weak: of the result's dtype, so ``1e300`` is
    ``inf`` beside float16, and ``2**70`` a float); arrays and NumPy scalars as they are."""
    if isinstance(v, (bool, int, float)):
        return xp.asarray(v, dtype=dtype)
    return v


def _expm1_block(xp: Any, z: Any) -> Any:
    r = xp.expm1(z)
    bad = xp.logical_or(xp.logical_not(xp.isfinite(z)), xp.equal(z, 0))  # zeros: +0 for a -0 real part
    if isinstance(bad, (np.ndarray, np.bool_)) and not bad.any():
        return r
    return xp.where(bad, xp.subtract(xp.exp(z), 1), r)


def _tanh_block(xp: Any, z: Any) -> Any:
    r = xp.tanh(z)
    if isinstance(z, MetaArray):
        return r
    re, im = z.real, z.imag
    fix = xp.logical_and(xp.isinf(re), xp.isfinite(im))
    if not fix.any():
        return r
    r = xp.array(r, copy=True)
    r.real[fix] = xp.copysign(1.0, re[fix])
    r.imag[fix] = xp.copysign(0.0, im[fix])
    return r


def _quiet(block: Any) -> Any:
    """``block`` run without NumPy's floating-point warnings (inf and NaN are results here, not accidents)."""

    def run(xp: Any, *args: Any) -> Any:
        if _is_numpy(xp):
            with np.errstate(all="ignore"):
                return block(xp, *args)
        return block(xp, *args)

    return run


_FLOOR_DIVIDE = _quiet(_floor_divide_block)
_EXPM1 = _quiet(_expm1_block)
_TANH = _quiet(_tanh_block)


@differentiable("floor_divide_std", resolve_inputs=True)
def floor_divide(x: Any, y: Any) -> ShardArray:
    """``x // y`` broadcasting by dim name, with the standard's special values (see the module docstring)."""
    return apply("floor_divide", _FLOOR_DIVIDE, (x, y), domain="real_numeric")


@differentiable("expm1_std", resolve_inputs=True)
def _expm1_complex(x: ShardArray) -> ShardArray:
    return apply("expm1", _EXPM1, (x,), domain="inexact")


def expm1(x: ShardArray) -> ShardArray:
    """``exp(x) - 1``; complex arrays get the standard's special values (see the module docstring)."""
    if isinstance(x, ShardArray) and x.dtype.kind == "c":
        return _expm1_complex(x)
    return math_unary.expm1(x)


@differentiable("tanh_std", resolve_inputs=True)
def _tanh_complex(x: ShardArray) -> ShardArray:
    return apply("tanh", _TANH, (x,), domain="inexact")


def tanh(x: ShardArray) -> ShardArray:
    """The hyperbolic tangent; complex arrays get the standard's special values (see the module docstring)."""
    if isinstance(x, ShardArray) and x.dtype.kind == "c":
        return _tanh_complex(x)
    return ew.tanh(x)
