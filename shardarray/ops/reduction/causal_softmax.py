"""The causal softmax of attention scores: scale, mask above the diagonal and softmax as one op.

``causal_softmax(scores, scale)`` takes scores (..., seq, kseq) with
``seq == kseq`` and gives ``softmax(scale * scores + mask, "kseq")``, the
mask being -inf where the key comes after the query. Scores narrower than
float32 (float16, bfloat16) are scaled and normalized in float32; the
probabilities have the scores' dtype. The VJP is
``dx = scale * p * (g - sum(g * p, kseq))``.

On CuPy shards with seq and kseq unsplit and kseq last, each block is one
kernel launch forward and one backward (``kernels/softmax.cu``:
``causal_softmax_fwd``/``causal_softmax_bwd``), with no collectives and no
mask, scaled or widened copy of the scores in memory. Otherwise the op runs
the array path: a where with the (seq, kseq) mask, then ``softmax``, whose
max and sum are allreduces over the mesh axes kseq is split on.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> s = sa.zeros(mesh, {"heads": 2, "seq": 3, "kseq": 3}, "float64", layout={"heads": "col"})
    >>> causal_softmax(s, 0.5).numpy()[0]
    array([[1.        , 0.        , 0.        ],
           [0.5       , 0.5       , 0.        ],
           [0.33333333, 0.33333333, 0.33333333]])
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...array import ShardArray
from ...backend import cuda_kernels
from ...core.relayout import resolve_to
from ...core.tape import Context, differentiable, register_vjp
from ...dtypes import check_domain, compute_dtype
from ...errors import DimensionError
from ...mesh import Mesh
from ..cotangent import match
from ..creation.basic import asarray
from ..elementwise import arithmetic as ew
from ..fused import dispatch as fused
from ..manipulation.structure import astype
from . import reduce as red
from .softmax import softmax


def causal_mask(mesh: Mesh, n: int, dims: tuple[str, str] = ("seq", "kseq")) -> ShardArray:
    """The (query, key) boolean mask of the visible keys (key <= query), replicated; made once per mesh object."""
    key = ("causal", n, dims)
    if key not in mesh.constants:
        mesh.constants[key] = asarray(np.tril(np.ones((n, n), dtype=bool)), dims=dims, mesh=mesh, layout={})
    return mesh.constants[key]


def _kernel_ready(x: ShardArray, dims: tuple[str, str]) -> bool:
    """CuPy shards with the fused softmax kernels on; (query, key) the last two dims, both unsplit."""
    return x.dims[-2:] == dims and not x.spec.of(dims[0]) and not x.spec.of(dims[1]) and fused.kernels_for(x, "softmax")


def _check(scores: ShardArray, dims: tuple[str, str]) -> None:
    if not isinstance(dims, tuple) or len(dims) != 2 or not all(isinstance(d, str) for d in dims):
        raise DimensionError(f"causal_softmax: dims must be (query dim, key dim), two names; got {dims!r}")
    missing = [d for d in dims if d not in scores.dims]
    if missing:
        raise DimensionError(
            f"causal_softmax: the scores {scores.dims} lack the dim(s) {missing}; name the query "
            f"and key dims with dims=(query, key)"
        )
    q, k = (scores.sizes[d] for d in dims)
    if q != k:
        raise DimensionError(
            f"causal_softmax: the causal mask needs as many queries as keys; {dims[0]} has {q} and {dims[1]} has {k}"
        )


def _probabilities(scores: ShardArray, scale: float, dims: tuple[str, str]) -> ShardArray:
    """The array path: the probabilities in float32 for scores narrower than float32, else in their dtype."""
    wide = compute_dtype(scores.dtype)
    x = astype(scores, wide) if wide is not None else scores
    return softmax(ew.where(causal_mask(scores.mesh, scores.sizes[dims[0]], dims), x * scale, -np.inf), dims[1])


@differentiable("causal_softmax", resolve_inputs=True)
def causal_softmax(scores: ShardArray, scale: float = 1.0, dims: tuple[str, str] = ("seq", "kseq")) -> ShardArray:
    """``softmax(scale * scores + causal mask)`` over the key dim; see the module docstring.

    Args:
        scores: the attention scores, with a query and a key dim of equal size.
        scale: the factor of the scores (normally ``1/sqrt(d_kv)``).
        dims: the (query, key) dims.

    Returns:
        The probabilities, with the scores' dims, layout and dtype. A row sums
        to 1 over the keys it sees (key <= query); the others are 0.

    Raises:
        DimensionError: a dim is missing, or the two sizes differ.
        DTypeError: the scores are not real floats.
    """
    _check(scores, dims)
    check_domain("causal_softmax", [scores], "real_float")
    if _kernel_ready(scores, dims):
        return fused.map_like(resolve_to(scores), lambda xp, s: cuda_kernels.causal_softmax_rows(xp, s, scale))
    return astype(_probabilities(scores, scale, dims), scores.dtype)


@register_vjp("causal_softmax")
def _causal_softmax_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    """``dx = scale p (g - sum(g p))``; for 16-bit scores ``p`` is recomputed in float32 (as the kernel does),
    not the probabilities rounded to 16 bits."""
    x, p = ctx.args[0], ctx.out
    scale = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("scale", 1.0)
    dims = ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("dims", ("seq", "kseq"))
    g = resolve_to(g)
    grads: list[Any] = [None] * len(ctx.args)
    if _kernel_ready(x, dims):
        xr = resolve_to(x)
        grads[0] = match(
            fused.map_like(
                xr,
                lambda xp, x, g: cuda_kernels.causal_softmax_rows_grad(xp, g, x, scale),
                cast(ShardArray, fused.like(g, xr)),  # the cotangent has the output's dims: x's
            ),
            x,
        )
        return grads
    wide = compute_dtype(p.dtype)
    if wide is not None:
        g, p = astype(g, wide), _probabilities(x, scale, dims)
    s = red.sum.__wrapped__(ew.apply("d_causal_softmax_gp", lambda xp, g, p: g * p, (g, p)), dims[1])

    def dx(xp: Any, g: Any, p: Any, s: Any) -> Any:
        out = g - s
        out *= p
        out *= scale
        return out

    grads[0] = match(astype(ew.apply("d_causal_softmax", dx, (g, p, resolve_to(s))), x.dtype), x)
    return grads


__all__ = ["causal_mask", "causal_softmax"]
