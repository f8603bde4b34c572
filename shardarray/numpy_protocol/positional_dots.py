"""NumPy's products, ``np.einsum`` and ``np.choose`` on positional arrays, composed from the namespace.

``np.dot``/``vdot``/``inner``/``outer``/``tensordot``/``einsum`` and ``np.linalg``'s ``matmul``, ``tensordot``,
``vecdot``, ``multi_dot`` and ``matrix_power`` with NumPy's semantics: operands of mixed dtypes promoted as
NumPy's, bools as NumPy's or of ands (``positional_products``: one einsum of bools whose split contraction is
combined as a logical or), NumPy's ``tensordot`` axes (``axes=(1, 0)``), ``np.einsum``'s ``out=``/``dtype=``/
``casting=``/``order=``. ``np.choose`` picks along a stacked axis (no gather). Registered in
``positional_compose.COMPOSED`` (imported by ``positional_functions``).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[True, False], [False, False]])
    ...     i = xp.asarray([[0, 1], [1, 0]])
    >>> np.asarray(np.dot(a, a)).tolist(), np.asarray(np.choose(i, [a, ~a])).tolist()
    ([[True, False], [False, False]], [[True, True], [True, False]])
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DimensionError, DTypeError, OutOfBoundsError
from . import positional_products as products
from .common import mixing_error, short
from .named_functions import einsum_by_letters
from .positional_args import cast_to, host_setting, write_out
from .positional_compose import _arrays, _ref, composed


@composed("dot")
def _dot(xp: Any, what: str, a: Any, b: Any, out: Any = None) -> Any:
    x, y = _arrays(xp, what, [a, b])
    if x.ndim == 0 or y.ndim == 0:
        result = xp.multiply(x, y)
    elif x.ndim <= 2 and y.ndim <= 2:
        result = products.matmul(xp, what, x, y)
    else:
        result = products.tensordot(xp, what, x, y, ([x.ndim - 1], [max(y.ndim - 2, 0)]))
    return write_out(out, result, what)


@composed("vdot")
def _vdot(xp: Any, what: str, a: Any, b: Any) -> Any:
    x, y = (xp.reshape(v, (-1,)) for v in _arrays(xp, what, [a, b]))
    if np.dtype(x.dtype).kind == "c":
        x = xp.conj(x)
    if x.dtype == np.bool_ and y.dtype == np.bool_:
        return xp.any(xp.logical_and(x, y))  # NumPy's dot of bools: or of ands
    products = x * y
    return xp.sum(products, dtype=products.dtype)  # the operands' dtype, as NumPy's (no widening of integers)


@composed("inner")
def _inner(xp: Any, what: str, a: Any, b: Any) -> Any:
    x, y = _arrays(xp, what, [a, b])
    if x.ndim == 0 or y.ndim == 0:
        return xp.multiply(x, y)
    return products.tensordot(xp, what, x, y, ([x.ndim - 1], [y.ndim - 1]))


@composed("tensordot")
@composed("tensordot", space="linalg")
def _tensordot(xp: Any, what: str, a: Any, b: Any, axes: Any = 2) -> Any:
    x, y = _arrays(xp, what, [a, b])
    return products.tensordot(xp, what, x, y, host_setting(axes))  # (NumPy arrays of axes: their values)


@composed("matmul", space="linalg")
def _linalg_matmul(xp: Any, what: str, x1: Any, x2: Any) -> Any:
    return products.matmul(xp, what, *_arrays(xp, what, [x1, x2]))


@composed("matrix_power", space="linalg")
def _matrix_power(xp: Any, what: str, a: Any, n: Any) -> Any:
    """NumPy's ``matrix_power``; of bools (the namespace's takes numbers) by squaring with NumPy's bool
    ``matmul`` (or of ands; ``n=0`` the bool identity), a negative ``n`` the float64 inverse's, as NumPy's."""
    (x,) = _arrays(xp, what, [a])
    if x.dtype != np.bool_:
        return xp.linalg.matrix_power(x, n)
    k = operator.index(n)
    if k < 0:
        return xp.linalg.matrix_power(xp.astype(x, xp.float64), k)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise DimensionError(f"{what}: needs square matrices in the last two axes; got shape {x.shape}")
    result = xp.broadcast_to(xp.eye(x.shape[-1], dtype=xp.bool, device=x.mesh), x.shape)
    square = x
    while k:
        if k & 1:
            result = products.matmul(xp, what, result, square)
        k >>= 1
        if k:
            square = products.matmul(xp, what, square, square)
    return result


@composed("vecdot", space="linalg")
def _linalg_vecdot(xp: Any, what: str, x1: Any, x2: Any, axis: Any = -1) -> Any:
    x, y = _arrays(xp, what, [x1, x2])
    return products.vecdot(xp, what, x, y, axis=axis)


@composed("outer")
def _outer(xp: Any, what: str, a: Any, b: Any, out: Any = None) -> Any:
    x, y = _arrays(xp, what, [a, b])
    return write_out(out, xp.multiply(xp.reshape(x, (-1, 1)), xp.reshape(y, (1, -1))), what)


@composed("multi_dot", space="linalg")
def _multi_dot(xp: Any, what: str, arrays: Any, *, out: Any = None) -> Any:
    matmul = functools.partial(products.matmul, xp, what)
    return write_out(out, functools.reduce(matmul, _arrays(xp, what, list(arrays))), what)


@composed("einsum")
def _einsum(xp: Any, what: str, *operands: Any, **kwargs: Any) -> Any:
    """NumPy's ``einsum`` (``positional_products``: bools as NumPy's or of ands) with its ``out=``, ``dtype=``
    (the operands cast to it under ``casting``, NumPy's default ``'safe'``), ``casting=`` and ``order=`` (a
    memory order: the values are the same, accepted)."""
    ref = _ref(*operands)
    for i, v in enumerate(operands):
        if isinstance(v, np.ndarray) and v.ndim:
            raise mixing_error(what, v, i, ref)  # (as every other function: not NumPy's TypeError of no dispatch)
    out, dtype = kwargs.pop("out", None), kwargs.pop("dtype", None)
    casting = kwargs.pop("casting", "safe")
    if kwargs.pop("order", "K") not in ("K", "C", "F", "A"):
        raise ArgumentError(f"{what}: order must be one of 'K', 'C', 'F', 'A' (a memory order)")
    if dtype is not None and operands and isinstance(operands[0], str):
        operands = (operands[0], *(cast_to(xp, v, dtype, casting, what) for v in operands[1:]))
    result = einsum_by_letters(None, what, *operands, **kwargs)
    return write_out(out, result, what, casting)


@composed("choose")
def _choose(xp: Any, what: str, a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    """NumPy's ``choose``: entry ``i`` of ``choices[a[i]]``, the index array and the choices broadcast together.

    The choices are stacked along a new leading axis and ``a`` picks along it (``take_along_axis``): each device
    reads its own block of every choice, nothing gathered. ``mode='raise'`` checks the indices (one replicated
    bool read; out of ``[0, n)``: ``OutOfBoundsError``, NumPy's ValueError), ``'wrap'`` takes them modulo ``n``,
    ``'clip'`` clips them into range.
    """
    if not isinstance(choices, (list, tuple)) or not choices:
        raise ArgumentError(f"{what}: choices must be a non-empty list or tuple of arrays; got {short(choices)}")
    idx, *picks = _arrays(xp, what, [a, *choices])
    if idx.dtype.kind not in "iub":
        raise DTypeError(
            f"{what}: the index array must be of integers, as NumPy's (cast it with x.astype); got {idx.dtype}"
        )
    n = len(picks)
    weak = [c.dtype if isinstance(c, (ShardArray, np.generic, np.ndarray)) else c for c in choices]
    dtype = np.result_type(*weak)  # (Python scalars weak, as NumPy's choose converts them)
    shape = np.broadcast_shapes(idx.shape, *[p.shape for p in picks])
    idx = xp.broadcast_to(xp.astype(idx, xp.int64) if idx.dtype != np.int64 else idx, shape)
    if mode in ("wrap",):
        idx = idx % n
    elif mode == "clip":
        idx = xp.clip(idx, 0, n - 1)
    elif mode == "raise":
        if bool(xp.any((idx < 0) | (idx >= n))):  # (one replicated bool read)
            raise OutOfBoundsError(
                f"{what}: an index is out of range for {n} choices (NumPy's ValueError); "
                f"pass mode='wrap' or mode='clip'"
            )
    else:
        raise ArgumentError(f"{what}: mode must be 'raise', 'wrap' or 'clip'; got {mode!r}")
    stacked = xp.stack([xp.broadcast_to(xp.astype(p, dtype) if p.dtype != dtype else p, shape) for p in picks])
    picked = xp.take_along_axis(stacked, xp.expand_dims(idx, axis=0), axis=0)
    return write_out(out, xp.squeeze(picked, axis=0), what)
