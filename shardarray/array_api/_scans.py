"""Cumulative sums and products of the array API standard (2024.12) over the named ``sa.cumsum``/``sa.cumprod``.

Collectives as the named ops: along a split axis, one allgather of one block
total per device per index of the other axes, then a local add (multiply);
``include_initial=True`` adds one concat along the axis (one alltoallv when
it is split, each device sending at most its block).
"""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..dtypes import as_dtype
from ..errors import DimensionError, DTypeError, OutOfBoundsError
from ..ops.creation.basic import full
from ..ops.manipulation.concat import concat
from ..ops.manipulation.dims import expand_dims
from ..ops.reduction.scan import cumprod, cumsum, scan_dtype
from ._align import axis_dim, fresh
from ._array import Array, wrap


def _cumulative(x: Any, axis: int | None, dtype: Any, include_initial: bool, op: str) -> Array:
    what = f"cumulative_{op}"
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what}: x must be an array; got {type(x).__name__}")
    if x.ndim == 0:  # NumPy's reading (the standard leaves it unspecified): a 0-d x is the 1-D array of its value
        if axis is not None and axis not in (0, -1):
            raise OutOfBoundsError(f"{what}: axis {axis!r} is out of bounds for a 0-d x (read as shape (1,))")
        x, axis = expand_dims(x, fresh((), 1)[0], 0), 0
    if axis is None:
        if x.ndim != 1:
            raise DimensionError(f"{what}: axis is required for an array of {x.ndim} dimensions (shape {x.shape})")
        axis = 0
    dim = axis_dim(x, axis, what)
    out_dtype = as_dtype(dtype) if dtype is not None else scan_dtype(x.dtype)
    if x.dtype.kind == "c" and out_dtype.kind != "c":  # (as sum's dtype=: the imaginary parts are not dropped)
        raise DTypeError(
            f"{what}: dtype={out_dtype.name} would drop the imaginary parts of a {x.dtype.name} x; take "
            f"xp.real(x) first, or a complex dtype"
        )
    y = (cumsum if op == "sum" else cumprod)(x, dim, dtype=out_dtype)
    if include_initial:
        sizes = dict(x.sizes, **{dim: 1})
        layout = {d: a for d, a in x.layout.items() if d != dim}
        init = full(x.mesh, sizes, 0 if op == "sum" else 1, dtype=out_dtype, layout=layout)
        y = concat([init, y], dim)
    return wrap(y)


def cumulative_sum(
    x: ShardArray, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Array:
    """Cumulative sum along ``axis`` (optional for 1-D ``x``); ``include_initial`` prepends a zero.

    A 0-d ``x`` is read as NumPy reads it: the 1-D array of its one value (``axis`` None, 0 or -1).

    Along a split axis: a local scan, one allgather of the block totals over
    the axis's mesh axes, a local add (``sa.cumsum``). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.cumulative_sum(xp.asarray([1, 2, 3, 4]), include_initial=True).numpy()
        array([ 0,  1,  3,  6, 10])
    """
    return _cumulative(x, axis, dtype, include_initial, "sum")


def cumulative_prod(
    x: ShardArray, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Array:
    """Cumulative product along ``axis`` (optional for 1-D ``x``); ``include_initial`` prepends a one.

    Collectives as ``cumulative_sum`` (an allgather of block products).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.cumulative_prod(xp.asarray([1.0, 2.0, 3.0, 4.0])).numpy()
        array([ 1.,  2.,  6., 24.])
    """
    return _cumulative(x, axis, dtype, include_initial, "prod")


__all__ = ["cumulative_prod", "cumulative_sum"]
