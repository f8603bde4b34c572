"""Numerically stable softmax and logsumexp across split dims (Mesh-TF style).

The maximum is max-allreduced, the sum of exponentials sum-allreduced: the
split dim is never gathered.

Non-finite values follow ``scipy.special``: ``logsumexp`` of a slice holding
+inf is +inf, of an all -inf slice -inf, with a NaN NaN (the shift by the
maximum is replaced by 0 where the maximum is not finite); ``softmax`` gives
0 at -inf entries, and NaN for a whole slice holding +inf or NaN or only -inf.
Both need real floating-point arrays (``DTypeError`` otherwise). bfloat16
inputs are computed in float32 (the maximum, the exponentials and their sum)
and the result is rounded to bfloat16 once; the collectives then carry
float32 values (4 bytes per reduced element).

Split dims of size 1 move nothing (``reduce.size_one``): when every split
reduced dim has size 1, ``logsumexp`` is the local one over the other dims
followed by a ``squeeze`` of them (one alltoall; over those dims alone, the
value itself), and ``softmax`` is the local one over the other dims (over
those dims alone: 1 at every finite entry, NaN at +-inf and NaN entries, as
``scipy.special.softmax`` of one element gives), with no collective at all.
"""

from __future__ import annotations

from typing import Any

from ...array import ShardArray
from ...backend import cuda_kernels
from ...core.common import dims_arg
from ...core.relayout import resolve_to
from ...core.tape import differentiable
from ...dtypes import check_domain, compute_dtype
from ..elementwise import arithmetic as ew
from ..fused import dispatch as fused
from ..manipulation.dims import squeeze
from ..manipulation.structure import astype
from . import reduce as red


def _shift(x: ShardArray, dims: Any) -> ShardArray:
    """The maximum over ``dims``, 0 where it is -inf (an all -inf slice: exp gives 0, as SciPy's softmax)."""
    m = red.max(x, dims)
    return ew.apply("shift", lambda xp, m: xp.where(xp.equal(m, -float("inf")), 0, m), (m,))


def _finite_shift(x: ShardArray, dims: Any) -> ShardArray:
    """The maximum over ``dims``, 0 where it is not finite (+-inf, NaN), as ``scipy.special.logsumexp``."""
    m = red.max(x, dims)
    return ew.apply("finite_shift", lambda xp, m: xp.where(xp.isfinite(m), m, 0), (m,))


@differentiable("logsumexp", resolve_inputs=True)
def logsumexp(x: ShardArray, dims: Any = None) -> ShardArray:
    """``log(sum(exp(x)))`` over ``dims``, stable for large values: a max-allreduce and a sum-allreduce over split
    dims (over split dims that all have size 1: one alltoall, a ``squeeze``; see the module doc).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0.0, 0.0, 1000.0, 1000.0]]), dims=("b", "v"), mesh=mesh, layout={"v": "col"})
        >>> np.round(sa.logsumexp(x, "v").numpy(), 4)
        array([1000.6931])
    """
    names = dims_arg(x, dims, "logsumexp")
    check_domain("logsumexp", [x], "real_float")
    picked = red.size_one(x, names)
    if picked is not None:  # split size-1 dims: local, then a squeeze (one alltoall)
        return squeeze(logsumexp.__wrapped__(x, picked[1]), picked[0])
    wide = compute_dtype(x.dtype)
    if wide is not None:
        return astype(logsumexp.__wrapped__(astype(x, wide), dims), x.dtype)
    m = _finite_shift(x, dims)
    e = ew.apply("exp_shifted", lambda xp, a, m: xp.exp(a - m), (x, m))
    return ew.log(red.sum(e, dims)) + m


@differentiable("softmax", resolve_inputs=True)
def softmax(x: ShardArray, dims: Any) -> ShardArray:
    """``exp(x) / sum(exp(x))`` over ``dims``: max-allreduce, then sum-allreduce (over split size-1 dims: nothing,
    see the module doc).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0.0, np.log(3.0)]]), dims=("b", "v"), mesh=mesh, layout={"v": "col"})
        >>> sa.softmax(x, "v").numpy()
        array([[0.25, 0.75]])
    """
    names = dims_arg(x, dims, "softmax")
    check_domain("softmax", [x], "real_float")
    picked = red.size_one(x, names)
    if picked is not None:  # split size-1 dims: the softmax over the others, local (no collective)
        return softmax.__wrapped__(x, picked[1])
    wide = compute_dtype(x.dtype)
    if wide is not None and not fused.kernels_for(x, "softmax"):
        return astype(softmax.__wrapped__(astype(x, wide), dims), x.dtype)
    if fused.rows_ready(x, fused.single_dim(dims)) and fused.kernels_for(x, "softmax"):
        return fused.map_like(resolve_to(x), cuda_kernels.softmax_rows)  # whole rows in every block: one kernel
    e = ew.apply("exp_shifted", lambda xp, a, m: xp.exp(a - m), (x, _shift(x, dims)))
    return ew.apply("normalize", lambda xp, e, s: e / s, (e, red.sum(e, dims)))
