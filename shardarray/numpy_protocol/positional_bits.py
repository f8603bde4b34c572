"""NumPy's bit-level ufuncs the positional namespace lacks, composed: ``np.bitwise_count`` and the ``reduce`` of
``bitwise_and``/``bitwise_or``/``bitwise_xor``/``logical_xor``.

``positional_ufuncs`` calls ``COMPOSED_UFUNCS`` where the namespace has no function of the ufunc's name, with the
operands already cast to NumPy's loop (``np.bitwise_count`` of bools runs its int8 loop; elementwise ops of the
namespace: no collective); ``np.bitwise_count.at`` writes through the same ``ufunc.at`` path as every other
ufunc. ``SEGMENT_REDUCTIONS`` are the ``ufunc.reduce`` targets of the ufuncs the namespace has no reduction
for: each reduced axis is one segment of ``ops.reduction.segment.segment_reduce`` (NumPy's ``reduceat`` with
the one start 0: along a split axis one alltoallv of the blocks' partials, then a broadcast of the result from
its holder, result-sized; no gather), an empty axis NumPy's identity (``bitwise_and``'s all ones).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     v = xp.asarray([0, 7, -1, 255], dtype=xp.int16)
    >>> np.asarray(np.bitwise_count(v))
    array([0, 3, 1, 8], dtype=uint8)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import DTypeError
from ..ops.reduction.segment import reduceat_dtype, segment_reduce

#: the 64-bit masks of the SWAR population count (pairs, nibbles, bytes) and its byte-summing multiplier
_M1, _M2, _M4, _H01 = 0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x0101010101010101


def bitwise_count(x: Any, /) -> Any:
    """``np.bitwise_count(x)``: the number of 1-bits in the absolute value of each integer (NumPy's definition:
    ``bitwise_count(-1)`` is 1; the least ``int64`` has one bit, ``2**63``), as ``uint8``.

    Computed in ``uint64`` by the SWAR population count (shifts, masks, one wrapping multiply), elementwise.

    Raises:
        DTypeError: a non-integer array (NumPy's TypeError: no loop for floating or complex values).
    """
    if not isinstance(x, ShardArray) or x.dtype.kind not in "iu":
        kind = x.dtype if isinstance(x, ShardArray) else type(x).__name__
        raise DTypeError(f"np.bitwise_count: counts the bits of integers only (NumPy's TypeError); got {kind}")
    xp = x.__array_namespace__()
    v = xp.abs(xp.astype(x, xp.int64)) if x.dtype.kind == "i" else x  # (abs of the least int64: itself, 2**63)
    v = xp.astype(v, xp.uint64)
    v = v - ((v >> 1) & _M1)
    v = (v & _M2) + ((v >> 2) & _M2)
    v = (v + (v >> 4)) & _M4
    return xp.astype((v * _H01) >> 56, xp.uint8)


#: ufunc name -> its composition, where the positional namespace has no function of that name
COMPOSED_UFUNCS: dict[str, Callable[..., Any]] = {"bitwise_count": bitwise_count}


def identity(op: str, dtype: np.dtype) -> Any:
    """NumPy's identity of the reduction ``op`` in ``dtype``: all ones for ``bitwise_and`` (-1, the largest unsigned
    integer, True), zero (False) for ``bitwise_or``/``bitwise_xor``/``logical_xor``."""
    if op != "bitwise_and":
        return False if dtype == np.bool_ else 0
    return True if dtype == np.bool_ else int(np.iinfo(dtype).max) if dtype.kind == "u" else -1


def _segment_target(op: str) -> Callable[..., Any]:
    """``ufunc.reduce``'s target for ``op``: ``target(x, axis=axes, keepdims=...)`` (positional in and out)."""

    def target(x: Any, axis: tuple[int, ...], keepdims: bool = False) -> Any:
        xp = x.__array_namespace__()
        if op == "logical_xor" and x.dtype != np.bool_:
            x = xp.not_equal(x, 0)  # (NumPy's logical loops read a value as x != 0)
        reduceat_dtype(op, x.dtype, None, f"np.{op}.reduce")  # (no loop for the dtype: NumPy's TypeError, typed)
        if any(x.shape[k] == 0 for k in axis):  # (nothing to reduce: NumPy's identity)
            shape = tuple(1 if k in axis else n for k, n in enumerate(x.shape) if keepdims or k not in axis)
            return xp.full(shape, identity(op, x.dtype), dtype=x.dtype, device=x.mesh)
        for k in sorted(axis, reverse=True):  # (the later axes first: the earlier keep their positions)
            x = segment_reduce(x, x.dims[k], (0,), op)
            x = x if keepdims else xp.squeeze(x, axis=k)
        return x

    target.__name__ = f"{op}_reduce"
    return target


#: ufunc.reduce of the ufuncs without a namespace reduction -> its target (built once: ``signature`` caches it)
SEGMENT_REDUCTIONS: dict[str, Callable[..., Any]] = {
    op: _segment_target(op) for op in ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor")
}
