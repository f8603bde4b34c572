"""``diff``: the n-th forward difference along a named dim, as ``np.diff`` (two slices and a subtract per order).

Each order is ``x[1:] - x[:-1]`` along ``dim``: both slices are
``slice_dim`` moves into the canonical block layout of the shorter dim (on a
split dim, one ``alltoallv`` each over the dim's axes, every device sending at
most its block; on an unsplit dim nothing), after which the subtraction is
local (``not_equal`` for bool, as NumPy). An order beyond the dim's size
leaves it empty, as NumPy does. Differentiable through its parts.
"""

from __future__ import annotations

from typing import Any

from ...array import ShardArray
from ...core.common import int_arg, one_dim_arg, require_array
from ...errors import ArgumentError
from ..elementwise import arithmetic as ew
from ..indexing.basic import slice_dim


def diff(x: ShardArray, dim: Any, n: int = 1) -> ShardArray:
    """The ``n``-th forward difference of ``x`` along ``dim`` (its size shrinks by ``n``, to no less than 0).

    As in NumPy, a bool array's difference is ``x[1:] != x[:-1]``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([1.0, 4.0, 9.0, 16.0, 25.0]), dims=("t",), mesh=mesh, layout={"t": "row"})
        >>> diff(x, "t").numpy(), diff(x, "t", 2).numpy()
        (array([3., 5., 7., 9.]), array([2., 2., 2.]))
    """
    x = require_array(x, "diff")
    dim = one_dim_arg(x, dim, "diff")
    order = int_arg(n, "diff: n (the order)")
    if order < 0:
        raise ArgumentError(f"diff: n (the order) must be an integer >= 0; got {n!r:.80}")
    op = ew.not_equal if x.dtype.kind == "b" else ew.subtract
    for _ in range(min(order, x.sizes[dim])):  # an empty dim stays empty (and keeps its dtype, as in NumPy)
        m = x.sizes[dim] - 1
        x = op(slice_dim(x, dim, 1, 1, m), slice_dim(x, dim, 0, 1, m))
    return x


__all__ = ["diff"]
