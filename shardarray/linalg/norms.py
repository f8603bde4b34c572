"""``sa.linalg.vector_norm`` / ``matrix_norm`` over named dims: local partial sums, then the reductions' collectives.

A norm over split dims is a distributed reduction: each device reduces its
block (``sum |x|^p``, ``max |x|``, ...), then **one allreduce** over the split
dims' axes of the partial results (output-sized, not input-sized). The 2-norm,
``-2`` and nuclear norm of matrices come from ``svdvals`` (TSQR: one
allgather of ``n x n`` R factors over the row axes).
"""

from __future__ import annotations

import math
from typing import Any

from ..array import ShardArray
from ..core.common import dims_arg, require_array
from ..errors import ArgumentError
from ..ops.elementwise.arithmetic import abs as _abs
from ..ops.elementwise.arithmetic import sqrt as _sqrt
from ..ops.manipulation.structure import astype
from ..ops.reduction.reduce import max as _max
from ..ops.reduction.reduce import min as _min
from ..ops.reduction.reduce import sum as _sum
from ._matrix import float_dtype, matrix_dims
from .svd import fresh_dim, svdvals


def _max0(a: ShardArray, dims: Any) -> ShardArray:
    """The max of the non-negative ``a`` over ``dims``, 0 where they are empty (NumPy's norms: ``initial=0``)."""
    names = (dims,) if isinstance(dims, str) else tuple(dims)
    return _max(a, dims) if all(a.sizes[d] for d in names) else _sum(a, dims)


def vector_norm(x: ShardArray, dims: Any = None, *, ord: float = 2) -> ShardArray:
    """The ``ord``-norm over ``dims`` (default all): ``(sum |x|^ord)^(1/ord)``; ``inf``/``-inf``: max/min ``|x|``;
    ``0``: the count of non-zeros. Real result. Collectives: those of the sum/max over split dims (one allreduce).
    Over empty ``dims``: 0 for ``ord`` 0, ``inf`` and the positive orders, ``inf`` for the negative orders and for
    ``-inf`` (``min``'s identity over nothing, as the named reductions and ``jax.lax.reduce_min`` give it; NumPy
    raises for ``-inf``, and so does the positional ``xp.linalg.vector_norm``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([3.0, 4.0, 0.0, 0.0]), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> float(sa.linalg.vector_norm(x))
        5.0
    """
    x = require_array(x, "sa.linalg.vector_norm")
    names = dims_arg(x, dims, "sa.linalg.vector_norm")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise ArgumentError(f"sa.linalg.vector_norm: ord must be a number or ±inf; got {ord!r}")
    a = _abs(x)
    if x.dtype.kind not in "fc":
        a = astype(a, "float64")
    if ord == math.inf:
        return _max0(a, names)
    if ord == -math.inf:
        return _min(a, names)
    if ord == 0:
        return _sum(astype(a != 0, a.dtype), names)
    if ord == 1:
        return _sum(a, names)
    if ord == 2:
        return _sqrt(_sum(a * a, names))
    return _sum(a**ord, names) ** (1.0 / ord)


def matrix_norm(x: ShardArray, dims: Any = None, *, ord: Any = "fro") -> ShardArray:
    """Matrix norm over ``dims`` (rows, cols; default the last two): ``"fro"``, ``"nuc"``, ``1``, ``-1``, ``2``,
    ``-2``, ``inf``, ``-inf``. Collectives: fro/1/inf: sums and max over split dims (allreduces of output-sized
    partials); 2/-2/nuc: ``svdvals`` (TSQR). Of empty matrices ``-1``/``-inf``/``-2`` take ``min``'s identity
    over an empty extent (``inf``), as the named reductions do, where NumPy raises (``xp.linalg.matrix_norm`` does).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 4)), dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
        >>> float(sa.linalg.matrix_norm(x)), float(sa.linalg.matrix_norm(x, ord=1))
        (4.0, 4.0)
    """
    x, rows, cols = matrix_dims(x, dims, "matrix_norm")
    if ord == "fro":
        return vector_norm(x, (rows, cols), ord=2)
    if ord in ("nuc", 2, -2):
        float_dtype(x, "sa.linalg.matrix_norm")
        k = fresh_dim(x, "_norm_k")
        s = svdvals(x, (rows, cols), new=k)
        if ord == "nuc":
            return _sum(s, k)
        return _max0(s, k) if ord == 2 else _min(s, k)
    if ord in (1, -1, math.inf, -math.inf):
        a = _abs(x)
        if x.dtype.kind not in "fc":  # NumPy computes the norms of integers in float64
            a = astype(a, "float64")
        inner, outer = (rows, cols) if ord in (1, -1) else (cols, rows)
        col = _sum(a, inner)
        return _max0(col, outer) if ord > 0 else _min(col, outer)
    raise ArgumentError(f"sa.linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf; got {ord!r}")
