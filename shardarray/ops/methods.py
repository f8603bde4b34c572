"""The ops behind ``ShardArray``'s methods and operators, put into its table (``array.OPS``) from above.

``shardarray/array.py`` holds the data type and imports nothing above the
ground floor; its methods (``x.sum()``, ``x + y``, ``x[...]``, ``repr(x)``)
each call one entry of ``OPS``. This module fills the entries with the ops
(JAX attaches its array methods the same way, from the numpy layer, to keep
the array type free of import cycles). ``shardarray.numpy_protocol`` and
``shardarray.array_api`` fill their own hooks (``array_ufunc``,
``array_function``, ``iterate``, ``round_array``; ``array_namespace``).

Example:
    >>> from shardarray.array import OPS
    >>> OPS.sum is sa.sum, OPS.getitem is sa.ops.indexing.slicing.getitem
    (True, True)
"""

from __future__ import annotations

import functools
from typing import Any

from ..array import OPS, ShardArray
from ..core import relayout
from ..core.tape import boundary
from . import show
from .elementwise import arithmetic as elementwise
from .elementwise import logical, math_unary, operators, short_path
from .indexing import setitem, slicing
from .manipulation import dims, reshape, structure
from .reduction import reduce, search


@boundary
def _setitem(x: ShardArray, key: Any, value: Any) -> None:
    """``x[key] = value``: the key parsed as ``x[key]`` parses it, then the in-place write."""
    items, _ = slicing.parse_key(x, key)
    setitem.setitem(x, items, value)


def _operator(op: Any) -> Any:
    """``op`` as a named array's operator: an untraced plain named array (``type(x) is ShardArray``) with a Python
    scalar, or two of one layout, take the op's short path (``short_path.binary``: the same plan, checks, errors and
    blocks, without the op mechanism's wrapper), everything else ``op`` itself (a positional array has its own
    operators, and a mix of the two is ``op``'s to refuse). A partial, so the operator adds no Python call of its
    own (a training step's call count is bounded: tests/core/test_dispatch_floor.py)."""
    return functools.partial(short_path.binary, op, cls=ShardArray, otherwise=op)


def _negative(x: ShardArray) -> ShardArray:
    """``-x``: the short path of an untraced plain named array, else ``arithmetic.negative``."""
    out = short_path.arrays_op(elementwise.negative, (x,), ShardArray) if type(x) is ShardArray else None
    return elementwise.negative(x) if out is None else out


_TABLE: dict[str, Any] = {
    # relayout and structure
    "relayout": relayout.relayout,
    "resolve_to": relayout.resolve_to,
    "rename": structure.rename,
    "transpose": structure.transpose,
    "astype": structure.astype,
    # reductions
    **{name: getattr(reduce, name) for name in ("sum", "mean", "max", "min", "prod", "var", "std", "all", "any")},
    # arithmetic and comparison operators
    **{
        name: _operator(getattr(elementwise, name))
        for name in ("add", "subtract", "multiply", "divide", "power", "equal", "not_equal")
    },
    "negative": _negative,
    **{name: getattr(logical, name) for name in ("greater", "greater_equal", "less", "less_equal")},
    **{
        name: getattr(operators, name)
        for name in ("floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift")
        + ("bitwise_right_shift", "bitwise_invert", "abs", "matmul")
    },
    "positive": math_unary.positive,
    # indexing and manipulation
    "isel": slicing.isel,
    "getitem": slicing.getitem,
    "setitem": _setitem,
    "split_dim": reshape.split_dim,
    "merge_dims": reshape.merge_dims,
    "squeeze": dims.squeeze,
    "expand_dims": dims.expand_dims,
    "argmax": search.argmax,
    "argmin": search.argmin,
    # printing
    "array_repr": show.array_repr,
}

for _name, _op in _TABLE.items():
    setattr(OPS, _name, _op)

__all__: list[str] = []
