"""The ops behind ShardArray's operators (``//``, ``%``, ``&``, ``|``, ``^``, ``~``, ``<<``, ``>>``, ``abs``, ``@``).

``array.py`` imports this module late (the ops import ``array.py``).
"""

from __future__ import annotations

from typing import Any

from ...array import ShardArray
from ...errors import DTypeError
from ..einsum import einsum
from .arithmetic import abs
from .logical import (
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
)
from .math_binary import floor_divide, remainder

__all__ = [
    "abs",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "floor_divide",
    "matmul",
    "remainder",
]


def matmul(x: Any, y: Any) -> ShardArray:
    """``x @ y``: ``sa.einsum(x, y)``, contracting the dims the two arrays share (by name).

    The collectives are einsum's: none when the contracted dims are not split,
    else the contraction leaves a pending sum over their axes (resolved later
    by one allreduce or reduce-scatter).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("b", "i"), mesh=mesh, layout={"i": "col"})
        >>> w = sa.asarray(np.ones((3, 2)), dims=("i", "h"), mesh=mesh)
        >>> y = x @ w
        >>> y.dims, y.pending, y.numpy()
        (('b', 'h'), ('col',), array([[ 3.,  3.],
               [12., 12.]]))
    """
    for v in (x, y):
        if not isinstance(v, ShardArray):
            raise DTypeError(
                f"@: both operands must be ShardArrays (x @ y is sa.einsum(x, y), contracting shared dims); got "
                f"{type(v).__name__}. Wrap it with sa.asarray(value, dims=..., mesh=...), or multiply by a scalar "
                f"with *"
            )
    return einsum(x, y)
