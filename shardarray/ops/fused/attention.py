"""Causal attention as one differentiable op per block (NumPy shards): scores, mask, softmax, PV and their VJP.

``causal_attention(q, k, v, scale)`` takes ``q`` (batch, seq, heads, d_kv) and
``k``, ``v`` (batch, kseq, heads, d_kv) laid out alike, with seq, kseq and
d_kv unsplit (batch and heads may be split: attention is per batch entry and
per head, so every block is independent and the op moves no bytes: no
collectives). Per block it makes the scores with one batched gemm, writes
-inf above the diagonal in place (no masked copy, no mask array per call),
normalizes in place (max, exp, sum, divide) and multiplies by V; the
probabilities are saved. The VJP is
``dS = P (dP - sum(dP P))``, ``dq = scale dS k``, ``dk = scale dS^T q``,
``dv = P^T g`` with ``dP = g v^T``: four batched gemms and two passes.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> q = sa.ones(mesh, {"batch": 2, "seq": 3, "heads": 2, "d_kv": 4}, "float64", layout={"heads": "col"})
    >>> kv = q.rename({"seq": "kseq"})
    >>> ready(q, kv, kv), causal_attention(q, kv, kv, 0.5).numpy()[0, :, 0, 0]
    (True, array([1., 1., 1.]))
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...array import ShardArray
from ...core.relayout import resolve_to
from ...core.tape import Context, differentiable, register_vjp
from . import dispatch as fused
from . import numpy_paths as fused_numpy

Q_DIMS = ("batch", "seq", "heads", "d_kv")
KV_DIMS = ("batch", "kseq", "heads", "d_kv")


def ready(q: ShardArray, k: ShardArray, v: ShardArray) -> bool:
    """Whether the fused op applies: NumPy float32/float64 shards, dims as above, seq/kseq/d_kv unsplit, same layout."""
    return (
        all(isinstance(a, ShardArray) for a in (q, k, v))
        and q.dims == Q_DIMS
        and k.dims == KV_DIMS
        and v.dims == KV_DIMS
        and fused_numpy.is_numpy(q)
        and not fused.kernels_for(q, "softmax")
        and q.dtype == k.dtype == v.dtype
        and q.mesh is k.mesh is v.mesh
        and q.sizes["seq"] == k.sizes["kseq"] == v.sizes["kseq"] > 0
        and k.sizes["d_kv"] == q.sizes["d_kv"]
        and not any(q.spec.of(d) for d in ("seq", "d_kv"))
        and q.spec.axes == k.spec.axes == v.spec.axes
    )


def _forward(q: Any, k: Any, v: Any, scale: float) -> tuple[Any, Any]:
    """``(o, p)`` of one block: ``o`` (b, s, h, d), ``p`` (b, h, s, t) the probabilities."""
    qt = q.transpose(0, 2, 1, 3)
    s = np.matmul(qt, k.transpose(0, 2, 3, 1))
    s *= scale
    n = s.shape[-1]
    np.copyto(s, -np.inf, where=_upper(n))
    m = s.max(axis=-1, keepdims=True)
    s -= m
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    o = np.matmul(s, v.transpose(0, 2, 1, 3))
    return np.ascontiguousarray(o.transpose(0, 2, 1, 3)), s


_UPPER: dict[int, Any] = {}


def _upper(n: int) -> Any:
    """The (n, n) boolean mask of the positions above the diagonal (kept per n: read-only)."""
    m = _UPPER.get(n)
    if m is None:
        m = _UPPER[n] = np.triu(np.ones((n, n), dtype=bool), 1)
        m.flags.writeable = False
    return m


@differentiable("causal_attention", resolve_inputs=True, saves=True)
def causal_attention(q: ShardArray, k: ShardArray, v: ShardArray, scale: float) -> Any:
    """``softmax(scale q k^T + causal mask) v`` per batch entry and head, one op per block; see the module docstring.

    Args:
        q: queries (batch, seq, heads, d_kv).
        k: keys (batch, kseq, heads, d_kv), laid out like ``q``.
        v: values (batch, kseq, heads, d_kv), laid out like ``q``.
        scale: the factor of the scores (normally ``1/sqrt(d_kv)``).

    Returns:
        (batch, seq, heads, d_kv), laid out like ``q``. No collectives.
    """
    q, k, v = resolve_to(q), resolve_to(k), resolve_to(v)
    o, p = fused.map_rows_multi(q, 2, lambda xp, a, b, c: _forward(a, b, c, scale), k, v)
    return ShardArray(q.mesh, q.spec, q.dtype, o), p


def _backward(g: Any, q: Any, k: Any, v: Any, p: Any, scale: float) -> tuple[Any, Any, Any]:
    gt = g.transpose(0, 2, 1, 3)  # (b, h, s, d)
    dv = np.matmul(p.transpose(0, 1, 3, 2), gt)  # (b, h, t, d)
    dp = np.matmul(gt, v.transpose(0, 2, 3, 1))  # (b, h, s, t)
    dp -= np.einsum("bhst,bhst->bhs", dp, p)[..., None]
    dp *= p
    dp *= scale
    dq = np.matmul(dp, k.transpose(0, 2, 1, 3))
    dk = np.matmul(dp.transpose(0, 1, 3, 2), q.transpose(0, 2, 1, 3))
    back = (0, 2, 1, 3)
    return (
        np.ascontiguousarray(dq.transpose(back)),
        np.ascontiguousarray(dk.transpose(back)),
        np.ascontiguousarray(dv.transpose(back)),
    )


@register_vjp("causal_attention")
def _causal_attention_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    q, k, v = ctx.args[:3]
    scale = ctx.args[3] if len(ctx.args) > 3 else ctx.kwargs["scale"]
    g = cast(ShardArray, fused.like(resolve_to(g), q))  # the cotangent has the output's dims: q's
    q = resolve_to(q)
    dq, dk, dv = fused.map_rows_multi(
        q, 3, lambda xp, a, g, b, c, p: _backward(g, a, b, c, p, scale), g, resolve_to(k), resolve_to(v), ctx.saved
    )
    grads: list[Any] = [None] * len(ctx.args)
    for i, (x, d) in enumerate(((q, dq), (k, dk), (v, dv))):
        if ctx.needs[i]:
            grads[i] = ShardArray(x.mesh, x.spec, x.dtype, d)
    return grads


__all__ = ["causal_attention"]
