"""Numerically stable softmax and logsumexp across split dims (Mesh-TF style).

The maximum is max-allreduced, the sum of exponentials sum-allreduced: the
split dim is never gathered.
"""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..autograd.tape import differentiable
from . import elementwise as ew
from . import reduce as red
from ..backend import cuda_kernels
from . import fused


def _shift(x: ShardArray, dims: Any) -> ShardArray:
    m = red.max(x, dims)
    # an all -inf slice has max -inf; shift by 0 there so exp gives 0 (as NumPy's logsumexp)
    return ew.where(m > -float("inf"), m, 0.0) if x.dtype.kind == "f" else m


@differentiable("logsumexp", resolve_inputs=True)
def logsumexp(x: ShardArray, dims: Any = None) -> ShardArray:
    """``log(sum(exp(x)))`` over ``dims``, stable for large values.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0.0, 0.0, 1000.0, 1000.0]]), dims=("b", "v"), mesh=mesh, layout={"v": "col"})
        >>> np.round(sa.logsumexp(x, "v").numpy(), 4)
        array([1000.6931])
    """
    m = _shift(x, dims)
    e = ew.apply("exp_shifted", lambda xp, a, m: xp.exp(a - m), (x, m))
    return ew.log(red.sum(e, dims)) + m


@differentiable("softmax", resolve_inputs=True)
def softmax(x: ShardArray, dims: Any) -> ShardArray:
    """``exp(x) / sum(exp(x))`` over ``dims``: max-allreduce, then sum-allreduce.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0.0, np.log(3.0)]]), dims=("b", "v"), mesh=mesh, layout={"v": "col"})
        >>> sa.softmax(x, "v").numpy()
        array([[0.25, 0.75]])
    """
    if fused.rows_ready(x, fused.single_dim(dims)) and fused.kernels_for(x, "softmax"):
        return fused.map_like(x.resolve(), cuda_kernels.softmax_rows)  # whole rows in every block: one kernel
    e = ew.apply("exp_shifted", lambda xp, a, m: xp.exp(a - m), (x, _shift(x, dims)))
    return ew.apply("normalize", lambda xp, e, s: e / s, (e, red.sum(e, dims)))
