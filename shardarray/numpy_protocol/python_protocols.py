"""Python's protocols on ShardArrays that NumPy users lean on: ``iter(x)`` and ``round(x, n)``.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.asarray(np.array([[0.25, 1.5], [2.0, 3.75]]), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
    >>> [r.dims for r in x], np.asarray(round(x, 1))[1]
    ([('io',), ('io',)], array([2. , 3.8]))
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, ZeroDimError
from ..ops.manipulation.structure import astype
from .common import HOOKS


def iterate(x: ShardArray) -> Any:
    """``iter(x)``: ``x[{dim: i}]`` for each index ``i`` of the first dim (a generator; each step indexes once)."""
    if not x.dims:
        raise ZeroDimError(
            f"iteration over a 0-d ShardArray ({x.dtype}) is undefined: it has no dims. Use x.item() or float(x)"
        )
    if not hasattr(type(x), "__getitem__"):
        raise ArgumentError(
            f"iterating over the first dim {x.dims[0]!r} of {x._describe()} needs indexing (x[{{dim: i}}]), "
            f"which this version of shardarray lacks; gather explicitly with np.asarray(x) and iterate over that"
        )
    dim, n = x.dims[0], x.shape[0]
    return (x[{dim: i}] for i in range(n))


def round_array(x: ShardArray, ndigits: int | None) -> ShardArray:
    """``round(x, ndigits)`` via ``sa.round`` (with ``decimals=`` when it takes it, else by scaling by 10**ndigits);
    integers stay integers of their dtype, as in NumPy."""
    fn = HOOKS.lookup("round")
    if fn is None:
        raise ArgumentError(
            f"round() of {x._describe()} needs sa.round, which this version of shardarray lacks; "
            f"gather explicitly with np.round(np.asarray(x))"
        )
    if ndigits is None or x.dtype == np.bool_:
        return fn(x)  # (bools: sa.round refuses them, as NumPy does for ndigits != 0)
    try:
        nd = operator.index(ndigits)
    except TypeError:
        raise ArgumentError(f"round(x, ndigits): ndigits must be an integer; got {ndigits!r}") from None
    try:
        params: Mapping[str, inspect.Parameter] = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover
        params = {}
    if "decimals" in params:
        return fn(x, decimals=nd)
    if x.dtype.kind in "iu":  # NumPy keeps integers integers: 15 -> 20 at ndigits=-1 (half to even)
        return fn(x) if nd >= 0 else astype(fn(x / 10.0**-nd) * 10**-nd, x.dtype)
    scale = 10.0**nd
    return fn(x * scale) / scale
