"""The reference transformer's layers over named dims: layer norm, causal attention, MLP, loss."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..array import ShardArray
from ..mesh import Mesh
from ..ops.creation import asarray
from ..ops.einsum import einsum
from ..autograd.common import match
from ..autograd.tape import Context, differentiable, register_vjp
from ..ops.elementwise import apply, gelu, where
from ..ops.indexing import take
from ..ops.reduce import max as reduce_max
from ..ops.softmax import logsumexp, softmax

Params = dict[str, ShardArray]


@differentiable("layer_norm", resolve_inputs=True, saves=True)
def layer_norm(x: ShardArray, gain: ShardArray, bias: ShardArray, dim: str = "d_model", eps: float = 1e-5) -> Any:
    """Normalize ``x`` over ``dim`` to zero mean and unit variance, then scale and shift.

    When ``dim`` is split, the two means are sum-allreduces over its axes.
    One differentiable op: its VJP reuses the normalized values and computes
    ``dx = rstd (g' - mean(g') - x_hat mean(g' x_hat))`` with ``g' = g gain``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 3.0]]), dims=("batch", "d_model"), mesh=mesh, layout={"d_model": "col"})
        >>> one, zero = sa.ones(mesh, {"d_model": 2}, "float64"), sa.zeros(mesh, {"d_model": 2}, "float64")
        >>> np.round(sa.nn.layer_norm(x, one, zero).numpy(), 4)
        array([[-1.,  1.]])
    """
    n = x.sizes[dim]
    xc = x - x.mean(dim)
    var = apply("square", lambda xp, a: a * a, (xc,)).sum(dim)
    rstd = apply("rstd", lambda xp, v: 1.0 / xp.sqrt(v * (1.0 / n) + eps), (var,))
    xhat = xc * rstd
    return apply("scale_shift", lambda xp, h, w, b: h * w + b, (xhat, gain, bias)), (xhat, rstd)


@register_vjp("layer_norm")
def _layer_norm_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    x, gain, bias = ctx.args[:3]
    dim = ctx.args[3] if len(ctx.args) > 3 else ctx.kwargs.get("dim", "d_model")
    xhat, rstd = ctx.saved
    g = g.resolve()
    n = x.sizes[dim]
    grads: list[Any] = [None] * len(ctx.args)
    if ctx.needs[1]:
        grads[1] = match(apply("d_gain", lambda xp, g, h: g * h, (g, xhat)), gain)
    if ctx.needs[2]:
        grads[2] = match(g, bias)
    if ctx.needs[0]:
        gh = apply("d_xhat", lambda xp, g, w: g * w, (g, gain))
        m1 = gh.sum(dim)
        m2 = apply("d_xhat_h", lambda xp, a, h: a * h, (gh, xhat)).sum(dim)

        def dx(xp: Any, gh: Any, h: Any, r: Any, m1: Any, m2: Any) -> Any:
            out = h * (m2 * (1.0 / n))
            out += m1 * (1.0 / n)
            out = gh - out
            out *= r
            return out

        grads[0] = match(apply("d_layer_norm", dx, (gh, xhat, rstd, m1, m2)), x)
    return grads


def _causal(mesh: Mesh, n: int) -> ShardArray:
    """The causal mask (seq, kseq), made once per mesh object (not per equal mesh: a fresh mesh starts afresh)."""
    key = ("causal", n)
    if key not in mesh.constants:
        mesh.constants[key] = asarray(np.tril(np.ones((n, n), dtype=bool)), dims=("seq", "kseq"), mesh=mesh, layout={})
    return mesh.constants[key]


def attention(x: ShardArray, p: Params, prefix: str) -> ShardArray:
    """Causal multi-head self-attention; ``x`` is (batch, seq, d_model)."""
    wq, wk, wv, wo = (p[prefix + n] for n in ("wq", "wk", "wv", "wo"))
    xk = x.rename({"seq": "kseq"})
    q = einsum("batch seq d_model, d_model heads d_kv -> batch seq heads d_kv", x, wq)
    k = einsum("batch kseq d_model, d_model heads d_kv -> batch kseq heads d_kv", xk, wk)
    v = einsum("batch kseq d_model, d_model heads d_kv -> batch kseq heads d_kv", xk, wv)
    q = q * (1.0 / math.sqrt(wq.sizes["d_kv"]))
    scores = einsum("batch seq heads d_kv, batch kseq heads d_kv -> batch heads seq kseq", q, k)
    scores = where(_causal(x.mesh, x.sizes["seq"]), scores, -np.inf)
    probs = softmax(scores, "kseq")
    o = einsum("batch heads seq kseq, batch kseq heads d_kv -> batch seq heads d_kv", probs, v)
    return einsum("batch seq heads d_kv, heads d_kv d_model -> batch seq d_model", o, wo)


def mlp(x: ShardArray, p: Params, prefix: str) -> ShardArray:
    """``gelu(x·W_in + b_in)·W_out + b_out``; ``x`` is (batch, seq, d_model)."""
    h = gelu(einsum("batch seq d_model, d_model d_ff -> batch seq d_ff", x, p[prefix + "w_in"]) + p[prefix + "b_in"])
    return einsum("batch seq d_ff, d_ff d_model -> batch seq d_model", h, p[prefix + "w_out"]) + p[prefix + "b_out"]


def cross_entropy(logits: ShardArray, targets: ShardArray, dim: str = "vocab") -> ShardArray:
    """Per-position softmax cross-entropy ``logsumexp(logits) - logits[target]``.

    A split ``dim`` is never gathered: the maximum is max-allreduced, the sum of
    exponentials and the target logit sum-allreduced over its axes (Mesh-TF).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> logits = sa.asarray(np.log([[1.0, 1.0, 2.0, 4.0]]), dims=("batch", "vocab"), mesh=mesh,
        ...                     layout={"vocab": "col"})
        >>> targets = sa.asarray(np.array([3]), dims=("batch",), mesh=mesh)
        >>> np.round(sa.nn.cross_entropy(logits, targets).numpy(), 4)     # -log(4/8)
        array([0.6931])
    """
    return logsumexp(logits, dim) - take(logits, targets, dim)


def accuracy(logits: ShardArray, targets: ShardArray, dim: str = "vocab") -> ShardArray:
    """Fraction of positions whose target has the largest logit (no gather of ``dim``)."""
    hit = take(logits, targets, dim) >= reduce_max(logits, dim)
    return hit.astype("float64").mean()


__all__ = ["layer_norm", "attention", "mlp", "cross_entropy", "accuracy"]
