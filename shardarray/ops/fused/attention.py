"""Causal attention as one differentiable op per block (NumPy or CuPy shards): scores, mask, softmax, PV, VJP.

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

The same code runs on CuPy shards through the backend's array module. The
products are ``backend.einsum`` on the blocks as they lie: cuBLAS batched
gemms over (batch, heads) read q, k, v and write o, dq, dk, dv in their
(batch, seq, heads, d_kv) layout, with no transposing copy. With the fused
kernels on, the scale, mask and softmax are one launch of
``causal_softmax_fwd`` and the softmax's backward, scale included, one of
``softmax_bwd`` (``kernels/softmax.cu``); without them, the mask is made on
the device (``tri``) and the passes are CuPy's.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> q = sa.ones(mesh, {"batch": 2, "seq": 3, "heads": 2, "d_kv": 4}, "float64", layout={"heads": "col"})
    >>> kv = q.rename({"seq": "kseq"})
    >>> ready(q, kv, kv), causal_attention(q, kv, kv, 0.5).numpy()[0, :, 0, 0]
    (True, array([1., 1., 1.]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, cast

import numpy as np

from ... import profiler
from ...array import ShardArray
from ...backend import cuda_kernels
from ...core.relayout import resolve_to
from ...core.tape import Context, differentiable, register_vjp
from ...layout import Layout
from . import dispatch as fused
from . import numpy_paths as fused_numpy

Q_DIMS = ("batch", "seq", "heads", "d_kv")
KV_DIMS = ("batch", "kseq", "heads", "d_kv")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def ready(q: ShardArray, k: ShardArray, v: ShardArray) -> bool:
    """Whether the fused op applies: NumPy or CuPy float32/float64 shards, dims as above, seq/kseq/d_kv unsplit,
    same layout, q and k of one shape (seq = kseq > 0), v of their batch, kseq and heads (its d_kv may differ: the
    output has v's)."""
    if not (
        all(isinstance(a, ShardArray) for a in (q, k, v))
        and q.dims == Q_DIMS
        and k.dims == KV_DIMS
        and v.dims == KV_DIMS
    ):
        return False
    qs = q.shape
    return (
        (fused_numpy.is_numpy(q) or _is_cupy(q))
        and q.dtype == k.dtype == v.dtype
        and q.mesh is k.mesh is v.mesh
        and k.shape == qs
        and v.shape[:3] == qs[:3]
        and qs[1] > 0
        and not any(q.spec.of(d) for d in ("seq", "d_kv"))
        and q.spec.axes == k.spec.axes == v.spec.axes
    )


def _is_cupy(x: ShardArray) -> bool:
    """CuPy shards of float32/float64 (``fused_numpy.is_numpy``'s rule: not inside this thread's ``sa.profile()``)."""
    return (
        getattr(x.mesh.backend.xp, "__name__", "") == "cupy"
        and x.dtype in _FLOATS
        and not (profiler.ACTIVE and profiler.profiling())
    )


#: the three products of the op, on blocks as they lie: q, k, v, o and their cotangents are (b, s, h, d), the scores
#: and probabilities (b, h, s, t)
SCORES = "bshk,bthk->bhst"  # q k^T, and dP = g v^T
BY_KEYS = "bhst,bthk->bshk"  # P v, and dq = dS k
BY_QUERIES = "bhst,bshk->bthk"  # dk = dS^T q, and dv = P^T g


class _Kit(NamedTuple):
    """What the blocks of one mesh compute with: the array module, the products, the softmax kernels."""

    xp: Any
    product: Callable[[str, Any, Any], Any]  # one of the equations above: its result (possibly a transposed view)
    kernels: Any  # ``backend.cuda_kernels`` when its softmax kernels run for these shards, else None


def _numpy_product(equation: str, a: Any, b: Any) -> Any:
    """The products as ``np.matmul`` over (b, h) on transposed views of the blocks (NumPy shards)."""
    if equation == SCORES:
        return np.matmul(a.transpose(0, 2, 1, 3), b.transpose(0, 2, 3, 1))
    if equation == BY_KEYS:
        return np.matmul(a, b.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    return np.matmul(a.transpose(0, 1, 3, 2), b.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)


def _kit(x: ShardArray) -> _Kit:
    """The kit of ``x``'s mesh: worked out once per forward call, kept for its VJP (with the probabilities).

    On CuPy the products are the backend's einsum, which reads and writes the (b, s, h, d) blocks in place
    (cuBLAS batched gemms over (b, h), no transposing copy)."""
    xp = x.mesh.backend.xp
    kernels = cuda_kernels if fused.kernels_for(x, "softmax") else None
    if xp is np:
        return _NUMPY if kernels is None else _Kit(np, _numpy_product, kernels)
    return _Kit(xp, x.mesh.backend.einsum, kernels)


_NUMPY = _Kit(np, _numpy_product, None)


def _forward(kit: _Kit, q: Any, k: Any, v: Any, scale: float) -> tuple[Any, Any]:
    """``(o, p)`` of one block: ``o`` (b, s, h, d), ``p`` (b, h, s, t) the probabilities."""
    xp = kit.xp
    s = kit.product(SCORES, q, k)
    if kit.kernels is not None:  # scale, mask and softmax: one launch per block
        s = kit.kernels.causal_softmax_rows(xp, s, scale)
    else:
        s *= scale
        n = s.shape[-1]
        xp.copyto(s, -np.inf, where=_upper(xp, n))
        m = s.max(axis=-1, keepdims=True)
        s -= m
        xp.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
    return xp.ascontiguousarray(kit.product(BY_KEYS, s, v)), s


_UPPER: dict[int, Any] = {}


def _upper(xp: Any, n: int) -> Any:
    """The (n, n) boolean mask of the positions above the diagonal: NumPy's kept per n (read-only); on a device,
    made there (the current device) by one ``tri``."""
    if xp is not np:
        return ~xp.tri(n, n, 0, dtype=bool)
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
        (batch, seq, heads, d_kv), laid out like ``q``, with ``v``'s d_kv. No collectives.
    """
    q, k, v = resolve_to(q), resolve_to(k), resolve_to(v)
    kit = _kit(q)
    o, p = fused.map_rows_multi(q, 2, lambda xp, a, b, c: _forward(kit, a, b, c, scale), k, v)
    spec = q.spec if v.shape[3] == q.shape[3] else Layout(Q_DIMS, q.shape[:3] + v.shape[3:], q.spec.axes)
    return ShardArray(q.mesh, spec, q.dtype, o), (p, kit)


def _backward(kit: _Kit, g: Any, q: Any, k: Any, v: Any, p: Any, scale: float) -> tuple[Any, Any, Any]:
    xp = kit.xp
    dp = kit.product(SCORES, g, v)
    if kit.kernels is not None:  # scale p (dp - sum(dp p)) per row: one launch (p is 0 above the diagonal)
        dp = kit.kernels.softmax_rows_grad(xp, dp, p, scale)
    else:
        dp -= xp.einsum("bhst,bhst->bhs", dp, p)[..., None]
        dp *= p
        dp *= scale
    return (
        xp.ascontiguousarray(kit.product(BY_KEYS, dp, k)),
        xp.ascontiguousarray(kit.product(BY_QUERIES, dp, q)),
        xp.ascontiguousarray(kit.product(BY_QUERIES, p, g)),
    )


@register_vjp("causal_attention")
def _causal_attention_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    q, k, v = ctx.args[:3]
    scale = ctx.args[3] if len(ctx.args) > 3 else ctx.kwargs["scale"]
    g = cast(ShardArray, fused.like(resolve_to(g), q))  # the cotangent has the output's dims: q's
    q = resolve_to(q)
    p, kit = ctx.saved
    dq, dk, dv = fused.map_rows_multi(
        q, 3, lambda xp, a, g, b, c, p: _backward(kit, g, a, b, c, p, scale), g, resolve_to(k), resolve_to(v), p
    )
    grads: list[Any] = [None] * len(ctx.args)
    for i, (x, d) in enumerate(((q, dq), (k, dk), (v, dv))):
        if ctx.needs[i]:
            grads[i] = ShardArray(x.mesh, x.spec, x.dtype, d)
    return grads


__all__ = ["causal_attention"]
