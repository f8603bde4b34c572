"""Linear algebra of the array API's main namespace: ``matmul``, ``matrix_transpose``, ``tensordot``, ``vecdot``.

Each product is **one named einsum**: the operands are renamed so that the
contracted axes share one name and broadcast batch axes share names (size-1
batch axes that broadcast are squeezed), then ``sa.einsum`` runs with its
algorithm choice (the layout-driven allreduce contraction, SUMMA or
Tesseract where the operands' layouts follow their patterns). A contracted
split axis leaves a pending sum, resolved when the value is needed.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, SupportsIndex, TypeVar, cast

from ..array import ShardArray
from ..errors import DimensionError, DTypeError
from ..ops.einsum import einsum
from ..ops.elementwise.arithmetic import conj
from ..ops.manipulation.dims import squeeze
from ..ops.manipulation.structure import rename, transpose
from ._align import align, axis_dim, broadcast_shape, fresh
from ._array import HOOKS, Array, wrap

_A = TypeVar("_A")  # the argument's own type: the check returns it unchanged


def _numeric(x: _A, what: str) -> _A:
    """``x`` itself, once it is an array of a numeric or boolean dtype (bool products are NumPy's: the or of ands,
    a bool result; the standard leaves them out, NumPy and this namespace take them)."""
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what}: expects arrays; got {type(x).__name__}. Make one with xp.asarray(...)")
    if x.dtype.kind not in "biufc" and x.dtype.name != "bfloat16":
        raise DTypeError(f"{what}: needs numeric arrays; got dtype {x.dtype} (shape {x.shape}). Cast with xp.astype")
    return x


def _named(x: ShardArray, names: Sequence[str], drop: Sequence[str]) -> ShardArray:
    """``x`` with its dims renamed to ``names`` (positionally) and the size-1 dims ``drop`` squeezed."""
    if tuple(names) != x.dims:
        x = rename(x, dict(zip(x.dims, names)))
    return squeeze(x, tuple(drop)) if drop else x


def matmul(x1: Array, x2: Array, /) -> Array:
    """The matrix product ``x1 @ x2`` with the standard's semantics, as one named einsum.

    ``(..., n, k) @ (..., k, m) -> (..., n, m)``; batch axes broadcast
    (NumPy's rules); a 1-D ``x1`` is a row vector and a 1-D ``x2`` a column
    vector, their axis removed from the result. The two ``k`` axes are renamed
    to one name and the einsum's algorithm applies: the result keeps the dims
    of the operand with more axes (``x1`` on ties), and a split ``k`` leaves
    a pending sum.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray(np.arange(24.0).reshape(4, 6))   # dim0 over row, dim1 over col
        ...     b = xp.ones((6, 4))                              # SUMMA's pattern: the einsum picks it
        ...     with sa.comm_log() as log:
        ...         c = a @ b
        >>> c.shape, c.layout, c.pending, [r.op for r in log.records]
        ((4, 4), {'dim0': ('row',), 'dim1': ('col',)}, (), ['broadcast', 'broadcast', 'broadcast', 'broadcast'])
        >>> c.numpy()[0]
        array([15., 15., 15., 15.])
    """
    x1, x2 = _numeric(x1, "matmul"), _numeric(x2, "matmul")
    if x1.ndim == 0 or x2.ndim == 0:
        raise DimensionError(
            f"matmul: operands must have at least 1 dimension; got shapes {x1.shape} and {x2.shape}. "
            f"Multiply by a scalar with x1 * x2"
        )
    k1, k2 = x1.shape[-1], x2.shape[-2] if x2.ndim > 1 else x2.shape[0]
    if k1 != k2:
        raise DimensionError(
            f"matmul: the contracted axes differ in size: shapes {x1.shape} @ {x2.shape} contract {k1} with {k2} "
            f"(the last axis of x1 with the {'second-to-last' if x2.ndim > 1 else 'only'} axis of x2)"
        )
    b1 = x1.shape[:-2] if x1.ndim > 1 else ()
    b2 = x2.shape[:-2] if x2.ndim > 1 else ()
    batch = broadcast_shape([b1, b2], "matmul (batch axes)")
    nb = len(batch)
    taken = (*x1.dims, *x2.dims)
    bn = fresh(taken, nb, "_mmb")
    k, n, m = fresh(taken, 3, "_mm")

    def names(shape: tuple[int, ...], tail: list[str]) -> tuple[list[str], list[str]]:
        own = bn[nb - len(shape) :]
        drop = [d for d, s, full in zip(own, shape, batch[nb - len(shape) :]) if s == 1 and full != 1]
        return own + tail, drop

    names1, drop1 = names(b1, [n, k] if x1.ndim > 1 else [k])
    names2, drop2 = names(b2, [k, m] if x2.ndim > 1 else [k])
    a1, a2 = _named(x1, names1, drop1), _named(x2, names2, drop2)
    out = bn + ([n] if x1.ndim > 1 else []) + ([m] if x2.ndim > 1 else [])
    result = einsum(a1, a2, out=tuple(out))
    lead = x1 if x1.ndim >= x2.ndim else x2
    return wrap(rename(result, dict(zip(out, lead.dims[: len(out)]))) if out else result)


def matrix_transpose(x: Array, /) -> Array:
    """``x`` with its last two axes swapped (a local transpose; the layout follows the dims)."""
    if not isinstance(x, ShardArray):
        raise DTypeError(f"matrix_transpose: expects an array; got {type(x).__name__}")
    if x.ndim < 2:
        raise DimensionError(f"matrix_transpose needs at least 2 dimensions; got shape {x.shape}")
    d = x.dims
    return wrap(transpose(x, (*d[:-2], d[-1], d[-2])))


def _axes_list(x: ShardArray, axes: Any, what: str) -> list[str]:
    try:
        items = list(axes)
    except TypeError:
        raise DimensionError(f"{what}: axes must be an int or a pair of sequences of ints; got {axes!r}") from None
    dims = [axis_dim(x, a, what) for a in items]
    if len(set(dims)) != len(dims):
        raise DimensionError(f"{what}: axes {items!r} repeat an axis of the array of shape {x.shape}")
    return dims


def tensordot(x1: Array, x2: Array, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """The tensor contraction of ``x1`` and ``x2`` over ``axes``, as one named einsum.

    ``axes=N`` contracts the last ``N`` axes of ``x1`` with the first ``N`` of
    ``x2``; ``axes=(x1_axes, x2_axes)`` names them. The result has the
    remaining axes of ``x1`` then those of ``x2``, named ``dim0, dim1, ...``.
    Contracted axes must have equal sizes (they do not broadcast).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.reshape(xp.arange(24.0), (2, 3, 4))
        ...     b = xp.reshape(xp.arange(12.0), (3, 4))
        ...     xp.tensordot(a, b).numpy()
        array([ 506., 1298.])
    """
    x1, x2 = _numeric(x1, "tensordot"), _numeric(x2, "tensordot")
    if isinstance(axes, bool):
        raise DimensionError(f"tensordot: axes must be an int or a pair of sequences; got {axes!r}")
    if isinstance(axes, int) or hasattr(axes, "__index__"):
        n_ax = operator.index(cast(SupportsIndex, axes))  # an int, or an object with __index__
        if n_ax < 0 or n_ax > x1.ndim or n_ax > x2.ndim:
            raise DimensionError(
                f"tensordot: axes={n_ax} must be between 0 and the operands' ranks (shapes {x1.shape}, {x2.shape})"
            )
        c1, c2 = list(x1.dims[x1.ndim - n_ax :]), list(x2.dims[:n_ax])
    else:
        try:
            ax1, ax2 = axes
        except (TypeError, ValueError):
            raise DimensionError(f"tensordot: axes must be an int or a pair (x1_axes, x2_axes); got {axes!r}") from None
        c1, c2 = _axes_list(x1, ax1, "tensordot"), _axes_list(x2, ax2, "tensordot")
        if len(c1) != len(c2):
            raise DimensionError(f"tensordot: axes {axes!r} name {len(c1)} axes of x1 but {len(c2)} of x2")
    for d1, d2 in zip(c1, c2):
        if x1.sizes[d1] != x2.sizes[d2]:
            raise DimensionError(
                f"tensordot: contracted axes differ in size: axis {x1.dims.index(d1)} of x1 (shape {x1.shape}) has "
                f"{x1.sizes[d1]}, axis {x2.dims.index(d2)} of x2 (shape {x2.shape}) has {x2.sizes[d2]}"
            )
    taken = (*x1.dims, *x2.dims)
    cn = fresh(taken, len(c1), "_tdk")
    r1 = [d for d in x1.dims if d not in c1]
    r2 = [d for d in x2.dims if d not in c2]
    o1, o2 = fresh(taken, len(r1), "_tda"), fresh(taken, len(r2), "_tdb")
    map1 = {**dict(zip(c1, cn)), **dict(zip(r1, o1))}
    map2 = {**dict(zip(c2, cn)), **dict(zip(r2, o2))}
    a1, a2 = rename(x1, map1), rename(x2, map2)
    out = o1 + o2
    result = einsum(a1, a2, out=tuple(out))
    return wrap(rename(result, dict(zip(out, fresh((), len(out))))) if out else result)


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The dot product ``sum(conj(x1) * x2)`` along ``axis``, broadcasting the other axes, as one named einsum.

    ``axis`` counts from the end in the broadcast shape (the standard's
    negative axes; a non-negative axis counts in the broadcast shape too).
    """
    x1, x2 = _numeric(x1, "vecdot"), _numeric(x2, "vecdot")
    if x1.ndim == 0 or x2.ndim == 0:
        raise DimensionError(f"vecdot: operands must have at least 1 dimension; got shapes {x1.shape}, {x2.shape}")
    try:
        ax = operator.index(axis)
    except TypeError:
        raise DTypeError(f"vecdot: axis must be an integer (a TypeError, as NumPy's); got {axis!r}") from None
    nd = max(x1.ndim, x2.ndim)
    if ax >= 0:
        ax -= nd
    if not -min(x1.ndim, x2.ndim) <= ax <= -1:
        raise DimensionError(
            f"vecdot: axis {axis} must be in [-{min(x1.ndim, x2.ndim)}, -1] for shapes {x1.shape} and {x2.shape}"
        )
    if x1.shape[ax] != x2.shape[ax]:
        raise DimensionError(
            f"vecdot: the contracted axis {axis} has size {x1.shape[ax]} in x1 (shape {x1.shape}) and "
            f"{x2.shape[ax]} in x2 (shape {x2.shape}); it must be the same (it does not broadcast)"
        )
    (a1, a2), dims, _ = align([x1, x2], "vecdot")
    kd = dims[nd + ax]
    if x1.dtype.kind == "c":
        a1 = conj(a1)
    out = tuple(d for d in dims if d != kd)
    return wrap(einsum(a1, a2, out=out))


__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


HOOKS.matmul = matmul  # Array.__matmul__/__rmatmul__/__imatmul__ call it (named ShardArrays accepted too)
