"""NumPy's products on positional arrays where NumPy's rules go past the namespace's: bools, ``matvec``/``vecmat``.

* **bool operands** of ``np.matmul``/``np.dot``/``np.tensordot``/``np.inner``/
  ``np.vecdot``/``np.matvec``/``np.vecmat`` (and ``np.linalg``'s ``matmul``,
  ``tensordot``, ``vecdot``, ``multi_dot``) give NumPy's bool result, the
  logical or of ands (the namespace's products take numeric arrays only). They
  run as one named einsum of the bool operands: each device contracts its
  blocks in bool (an ``or`` of ``and``s), and a split contracted axis leaves a
  pending sum of bools, which every communicator combines as a logical or (a
  max): no widening, no count that could overflow, no change of dtype.
* **mixed dtypes** of ``np.dot``/``np.tensordot``/``np.inner`` are promoted as
  NumPy promotes them (``np.dot(bools, floats)`` is float64; bfloat16 by the
  library's rules), the ufuncs' operands cast to the loop NumPy picks
  (``ufunc.resolve_dtypes``, ``dtype=`` included).
* ``np.matvec(A, v)`` (``(..., m, n), (..., n) -> (..., m)``) and
  ``np.vecmat(v, A)`` (``(..., n), (..., n, m) -> (..., m)``, the vector
  conjugated, as NumPy's) are one einsum each (``...ij,...j->...i``,
  ``...j,...jk->...k``), batch axes broadcast as NumPy's: on split operands, with
  the einsum's algorithm and collectives (a split ``n`` leaves a pending sum),
  nothing gathered.
* ``np.tensordot``'s ``axes`` in every form NumPy takes (an int, a pair of ints,
  a pair of sequences).

The gufuncs take NumPy's ``out=``, ``dtype=``, ``axes=`` (and ``vecdot``'s
``axis=`` and ``keepdims=``); their methods (``np.matmul.outer``, ``reduce``...)
raise NumPy's TypeError.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[True, False, False], [False, False, True]])
    ...     v = xp.asarray([False, False, True])
    >>> np.asarray(np.matvec(a, v)), np.asarray(np.matmul(a, a.T)).tolist()
    (array([False,  True]), [[True, False], [False, True]])
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array import ShardArray
from ..dtypes import promote
from ..errors import ArgumentError, DimensionError, DTypeError
from .named_functions import einsum_by_letters
from .positional_args import axes_of, is_neutral, refuse, write_out

#: NumPy's gufuncs of products: name -> the number of core dims of each operand (``None``: 1 or 2, matmul's ``?``)
GUFUNCS: dict[str, tuple[int | None, int | None]] = {
    "matmul": (None, None),
    "matvec": (2, 1),
    "vecmat": (1, 2),
    "vecdot": (1, 1),
}


def _core_check(what: str, name: str, signature: str, args: Sequence[Any]) -> None:
    """NumPy's ValueError (a ``DimensionError``) for an operand with fewer dims than the gufunc's core; a Python
    list or tuple operand (host data, which NumPy would convert) raises ``sa.DTypeError``, as ``np.dot``'s."""
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)):
            raise DTypeError(
                f"{what}: operand {i} is a Python {type(a).__name__} ({len(a)} items): host data does not mix with "
                f"an Array implicitly (that would copy it onto the mesh), as CuPy and JAX refuse it too. Convert it "
                f"with xp.asarray(values, device=x.device) (import shardarray.array_api as xp)"
            )
    for i, (a, need) in enumerate(zip(args, GUFUNCS[name])):
        nd = a.ndim if isinstance(a, ShardArray) else 0
        if nd < (need or 1):
            raise DimensionError(
                f"{what}: input operand {i} does not have enough dimensions (has {nd}, the gufunc core with "
                f"signature {signature} requires {need or 1}), as NumPy's ValueError"
            )


def _spec(name: str, nd1: int, nd2: int) -> str:
    """The einsum subscripts of the gufunc ``name`` for operands of ``nd1`` and ``nd2`` dims."""
    if name == "matvec":
        return "...ij,...j->...i"
    if name == "vecmat":
        return "...j,...jk->...k"
    if name == "vecdot":
        return "...j,...j->..."
    left, right = ("...ij" if nd1 > 1 else "j"), ("...jk" if nd2 > 1 else "j")
    return f"{left},{right}->...{'i' if nd1 > 1 else ''}{'k' if nd2 > 1 else ''}"


def contract(xp: Any, what: str, name: str, x1: ShardArray, x2: ShardArray) -> Any:
    """The gufunc ``name`` (``matmul``, ``matvec``, ``vecmat``, ``vecdot``) of two arrays of one dtype, NumPy's
    semantics: bools as one einsum of bools (or of ands), ``matmul``/``vecdot`` of numbers by the namespace's
    functions, ``matvec``/``vecmat`` as one einsum (``vecmat``'s vector conjugated, as ``vecdot``'s)."""
    if x1.dtype != np.bool_:
        if name == "matmul":
            return xp.matmul(x1, x2)
        if name == "vecdot":
            return xp.vecdot(x1, x2, axis=-1)
        if name == "vecmat" and x1.dtype.kind == "c":
            x1 = xp.conj(x1)
    return einsum_by_letters(None, what, _spec(name, x1.ndim, x2.ndim), x1, x2)


def call_gufunc(xp: Any, ufunc: np.ufunc, what: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``np.matmul``/``matvec``/``vecmat``/``vecdot(x1, x2, out=, dtype=, axis=)`` on operands already typed and
    checked (``positional_ufuncs``: NumPy scalars as 0-d arrays, host arrays refused) and cast to NumPy's loop.

    ``out=`` writes into a positional array; ``axes=`` names each operand's core axes and the output's (moved
    last, then the result's moved there), ``axis=`` (``vecdot``) each operand's one core axis, and
    ``keepdims=True`` (``vecdot``) keeps the contracted axis with size 1, as NumPy's.
    """
    name = ufunc.__name__
    out, axes = kwargs.pop("out", None), kwargs.pop("axes", None)
    axis = kwargs.pop("axis", None) if name == "vecdot" else None
    keepdims = bool(kwargs.pop("keepdims", False)) if name == "vecdot" else False
    for key, value in kwargs.items():
        if not is_neutral(key, value):
            raise refuse(what, key, value)
    _core_check(what, name, str(ufunc.signature), args)
    x1, x2 = args
    if axis is not None:
        if axes is not None:
            raise ArgumentError(f"{what}: give axes= or axis=, not both (as NumPy)")
        axes = [(axis,), (axis,)] + ([(axis,)] if keepdims else [])
    if keepdims:  # (vecdot: the contracted axis kept, of size 1, where axes= puts the output's, else last)
        axes = axes if axes is not None else [-1, -1, -1]
        if len(axes) == 2:
            axes = [*axes, -1]
        keep = _core_axes(what, axes[2], max(x1.ndim, x2.ndim), 1)[0]
        result = call_gufunc(xp, ufunc, what, [x1, x2], {"axes": list(axes[:2])})
        return write_out(out, xp.expand_dims(result, axis=keep), what)
    if x1.dtype != x2.dtype:  # (a loop NumPy has for two dtypes: none of these gufuncs has one; kept safe)
        dt = promote(x1.dtype, x2.dtype)
        x1, x2 = xp.astype(x1, dt), xp.astype(x2, dt)
    if axes is None:
        return write_out(out, contract(xp, what, name, x1, x2), what)
    c1, c2 = (n or (2 if a.ndim > 1 else 1) for n, a in zip(GUFUNCS[name], (x1, x2)))
    co = {"matmul": (c1 == 2) + (c2 == 2), "vecdot": 0}.get(name, 1)
    if not isinstance(axes, (list, tuple)) or len(axes) not in (2, 3) or (len(axes) == 2 and co):
        raise ArgumentError(
            f"{what}: axes= must be a list of one entry per operand and output (the output's may be left out when "
            f"it has no core dims); got {axes!r}"
        )
    x1 = xp.moveaxis(x1, _core_axes(what, axes[0], x1.ndim, c1), tuple(range(-c1, 0)))
    x2 = xp.moveaxis(x2, _core_axes(what, axes[1], x2.ndim, c2), tuple(range(-c2, 0)))
    result = contract(xp, what, name, x1, x2)
    if co and len(axes) == 3:
        result = xp.moveaxis(result, tuple(range(-co, 0)), _core_axes(what, axes[2], result.ndim, co))
    return write_out(out, result, what)


def _core_axes(what: str, entry: Any, ndim: int, count: int) -> tuple[int, ...]:
    """One entry of a gufunc's ``axes=`` (an int for one core dim, or a tuple): ``count`` axes of an operand of
    ``ndim`` dims, in the order given, as non-negative positions."""
    items = entry if isinstance(entry, (list, tuple)) else (entry,)
    if len(items) != count:
        raise ArgumentError(f"{what}: axes= entry {entry!r} must name {count} core axes")
    got = tuple(axes_of(a, ndim, what)[0] for a in items)
    if len(set(got)) != len(got):
        raise ArgumentError(f"{what}: axes= entry {entry!r} repeats an axis")
    return got


def _common(xp: Any, x: ShardArray, y: ShardArray) -> tuple[ShardArray, ShardArray]:
    """``x`` and ``y`` cast to their promoted dtype (NumPy's ``dot``/``tensordot`` promote their operands)."""
    if x.dtype == y.dtype:
        return x, y
    dt = promote(x.dtype, y.dtype)
    return (x if x.dtype == dt else xp.astype(x, dt)), (y if y.dtype == dt else xp.astype(y, dt))


def matmul(xp: Any, what: str, x: ShardArray, y: ShardArray) -> Any:
    """NumPy's ``matmul`` of two arrays of any dtypes (promoted; bools as or of ands)."""
    x, y = _common(xp, x, y)
    if x.ndim == 0 or y.ndim == 0:
        _core_check(what, "matmul", "(n?,k),(k,m?)->(n?,m?)", (x, y))
    return contract(xp, what, "matmul", x, y)


def tensordot_axes(what: str, x: ShardArray, y: ShardArray, axes: Any) -> tuple[list[int], list[int]]:
    """NumPy's ``tensordot`` ``axes`` (an int ``N``: the last ``N`` of ``x`` with the first ``N`` of ``y``; a
    pair of ints or of sequences) as two lists of non-negative axes."""
    try:
        n = operator.index(axes)
    except TypeError:
        n = None
    if n is not None and not isinstance(axes, bool):
        if not 0 <= n <= min(x.ndim, y.ndim):
            raise DimensionError(f"{what}: axes={n} must be between 0 and the operands' ranks ({x.ndim}, {y.ndim})")
        return list(range(x.ndim - n, x.ndim)), list(range(n))
    try:
        a_axes, b_axes = axes
    except (TypeError, ValueError):
        raise DimensionError(f"{what}: axes must be an int or a pair (a_axes, b_axes); got {axes!r}") from None
    a_list = list(a_axes) if isinstance(a_axes, (list, tuple)) else [a_axes]
    b_list = list(b_axes) if isinstance(b_axes, (list, tuple)) else [b_axes]
    if len(a_list) != len(b_list):
        raise DimensionError(f"{what}: axes {axes!r} name {len(a_list)} axes of a but {len(b_list)} of b")
    ka = [axes_of(a, x.ndim, what)[0] for a in a_list]
    kb = [axes_of(b, y.ndim, what)[0] for b in b_list]
    for i, j in zip(ka, kb):
        if x.shape[i] != y.shape[j]:
            raise DimensionError(
                f"{what}: shape-mismatch for sum: axis {i} of a (shape {x.shape}) has {x.shape[i]}, axis {j} of b "
                f"(shape {y.shape}) has {y.shape[j]}"
            )
    return ka, kb


def tensordot(xp: Any, what: str, x: ShardArray, y: ShardArray, axes: Any = 2) -> Any:
    """NumPy's ``tensordot`` of two arrays of any dtypes (promoted; bools as one einsum of bools)."""
    ka, kb = tensordot_axes(what, x, y, axes)
    x, y = _common(xp, x, y)
    if x.dtype != np.bool_:
        return xp.tensordot(x, y, axes=(ka, kb))
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    tx = [next(letters) for _ in range(x.ndim)]
    ty = [next(letters) for _ in range(y.ndim)]
    for i, j in zip(ka, kb):
        ty[j] = tx[i]
    out = [c for k, c in enumerate(tx) if k not in ka] + [c for k, c in enumerate(ty) if k not in kb]
    return einsum_by_letters(None, what, f"{''.join(tx)},{''.join(ty)}->{''.join(out)}", x, y)


def vecdot(xp: Any, what: str, x: ShardArray, y: ShardArray, axis: Any = -1) -> Any:
    """NumPy's ``linalg.vecdot``: ``axis`` of the broadcast operands (promoted; bools as one einsum of bools)."""
    x, y = _common(xp, x, y)
    if x.dtype != np.bool_:
        return xp.vecdot(x, y, axis=axis)
    nd = max(x.ndim, y.ndim)
    k = axes_of(axis, nd, what)[0] - nd  # (counted from the end, in the broadcast shape)
    if -k > min(x.ndim, y.ndim):
        raise DimensionError(f"{what}: axis {axis} is out of bounds for the operands' shapes {x.shape}, {y.shape}")
    x, y = xp.moveaxis(x, k, -1), xp.moveaxis(y, k, -1)
    return einsum_by_letters(None, what, "...j,...j->...", x, y)
