"""The reference transformer's layers over named dims: layer norm, causal attention, MLP, loss."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..backend import cuda_kernels
from ..core.common import require_ids
from ..core.relayout import resolve_to
from ..core.tape import Context, differentiable, register_vjp
from ..dtypes import accumulation_dtype, check_domain, promote
from ..errors import ArgumentError, DimensionError, DTypeError
from ..ops.cotangent import match
from ..ops.einsum import einsum
from ..ops.elementwise.arithmetic import apply, gelu
from ..ops.fused import attention as attention_fused
from ..ops.fused import dispatch as fused
from ..ops.fused import numpy_paths as fused_numpy
from ..ops.indexing.take import check_ids, take
from ..ops.manipulation.structure import astype, rename
from ..ops.reduction import reduce as reduction
from ..ops.reduction.causal_softmax import causal_softmax
from ..ops.reduction.reduce import max as reduce_max
from ..ops.reduction.softmax import logsumexp

Params = dict[str, ShardArray]


def _need_dims(what: str, name: str, x: Any, dims: tuple[str, ...]) -> None:
    """``DimensionError`` (``DTypeError`` for a non-array) unless ``x`` is a ShardArray with every dim of ``dims``."""
    if not isinstance(x, ShardArray):
        raise DTypeError(
            f"{what}: {name} must be a ShardArray; got {type(x).__name__}; "
            f"wrap it with sa.asarray(array, dims={dims!r}, mesh=...)"
        )
    missing = [d for d in dims if d not in x.dims]
    if missing:
        raise DimensionError(
            f"{what}: {name} must have the dim(s) {missing}, but its dims are {x.dims} ({x.sizes}); "
            f"rename its dims to match (x.rename({{'old': {missing[0]!r}}})) or pass the dim it has"
        )


def _weights(what: str, p: Any, prefix: str, names: tuple[str, ...]) -> list[ShardArray]:
    """``p[prefix + name]`` for each of ``names``.

    Raises:
        DTypeError: ``p`` is not a dict, or a weight is not a ShardArray.
        DimensionError: a weight is missing (the message names it and the prefix).
    """
    if not isinstance(p, Mapping):
        raise DTypeError(
            f"{what}: p must be the dict of parameters {{name: ShardArray}} (as sa.nn.init_transformer makes); got "
            f"{type(p).__name__}"
        )
    missing = [prefix + n for n in names if prefix + n not in p]
    if missing:
        raise DimensionError(
            f"{what}: p has no parameter {missing[0]!r} (prefix {prefix!r} + one of {names}); pass the prefix of "
            f"one layer's weights, e.g. 'layer0.{'attn' if what == 'attention' else 'mlp'}.' for "
            f"sa.nn.init_transformer's parameters"
        )
    out = [p[prefix + n] for n in names]
    for n, w in zip(names, out):
        if not isinstance(w, ShardArray):
            raise DTypeError(f"{what}: p[{prefix + n!r}] must be a ShardArray; got {type(w).__name__}")
    return out


def _check_layer_norm(x: Any, gain: Any, bias: Any, dim: str, eps: Any) -> None:
    _need_dims("layer_norm", "x", x, (dim,))
    check_domain("layer_norm", [x], "real_float")
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
        raise DTypeError(f"layer_norm(eps={eps!r:.60}): eps must be a number >= 0, e.g. 1e-5")
    if not (math.isfinite(eps) and eps >= 0):
        raise ArgumentError(
            f"layer_norm(eps={eps!r}): eps (added to the variance) must be a finite number >= 0, e.g. 1e-5; a "
            f"negative one gives NaN for rows of small variance"
        )
    for name, p in (("gain", gain), ("bias", bias)):
        if isinstance(p, ShardArray):
            extra = [d for d in p.dims if d not in x.dims]
            if extra:
                raise DimensionError(
                    f"layer_norm over {dim!r}: {name} has dims {p.sizes}, and {extra} are not dims of x "
                    f"{x.sizes}; {name} is normally over {dim!r} only ({{{dim!r}: {x.sizes[dim]}}})"
                )
            other = [d for d in p.dims if p.sizes[d] != x.sizes[d]]
            if other:
                raise DimensionError(
                    f"layer_norm over {dim!r}: {name} has sizes {p.sizes} but x has {x.sizes}; dim {other[0]!r} "
                    f"must have size {x.sizes[other[0]]} in both ({name} is normally {{{dim!r}: {x.sizes[dim]}}})"
                )


def _check_loss(what: str, logits: Any, targets: Any, dim: str) -> None:
    _need_dims(what, "logits", logits, (dim,))
    check_domain(what, [logits], "real_float")
    require_ids(targets, what, "targets")
    extra = [d for d in targets.dims if d not in logits.dims or d == dim]
    if extra:
        raise DimensionError(
            f"{what} over {dim!r}: targets {targets.sizes} have the dim(s) {extra}, but they must have the dims of "
            f"logits {logits.sizes} except {dim!r} (one class id per position); rename or drop those dims"
        )


@differentiable("layer_norm", resolve_inputs=True, saves=True)
def layer_norm(x: ShardArray, gain: ShardArray, bias: ShardArray, dim: str = "d_model", eps: float = 1e-5) -> Any:
    """Normalize ``x`` over ``dim`` to zero mean and unit variance, then scale and shift.

    When ``dim`` is split, the two means are sum-allreduces over its axes.
    One differentiable op: its VJP reuses the normalized values and computes
    ``dx = rstd (g' - mean(g') - x_hat mean(g' x_hat))`` with ``g' = g gain``.
    A float16 or bfloat16 ``x`` is normalized in float32 and the result rounded
    once, on every layout and backend (as the fused kernels).

    Raises:
        DimensionError: ``x`` lacks ``dim``, or ``gain``/``bias`` have dims or sizes ``x`` lacks.
        DTypeError: ``x`` is not a real floating-point ShardArray, ``eps`` not a number.
        ArgumentError: ``eps`` is negative or not finite (``eps = 0`` is allowed).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 3.0]]), dims=("batch", "d_model"), mesh=mesh, layout={"d_model": "col"})
        >>> one, zero = sa.ones(mesh, {"d_model": 2}, "float64"), sa.zeros(mesh, {"d_model": 2}, "float64")
        >>> np.round(sa.nn.layer_norm(x, one, zero).numpy(), 4)
        array([[-1.,  1.]])
    """
    _check_layer_norm(x, gain, bias, dim, eps)
    if _fused_layer_norm(x, gain, bias, dim):
        x = resolve_to(x)
        k = _row_kernels(x)
        y, mean, rstd_rows = fused.map_rows_multi(
            x, 3, lambda xp, a, w, b: k.layer_norm_rows(xp, a, w, b, eps), resolve_to(gain), resolve_to(bias)
        )
        return ShardArray(x.mesh, x.spec, x.dtype, y), ("fused", mean, rstd_rows)
    inv_n = fused_numpy.inverse_count(x.sizes[dim])
    wide = accumulation_dtype(x.dtype)  # float16, bfloat16: in float32, rounded once (as the fused kernels)
    xw: Any = x if wide is None else astype(x, wide)
    xc = xw - reduction.mean(xw, dim)
    var = reduction.sum(apply("square", lambda xp, a: a * a, (xc,)), dim)
    rstd = apply("rstd", lambda xp, v: 1.0 / xp.sqrt(v * inv_n + eps), (var,))
    xhat = xc * rstd
    out = apply("scale_shift", lambda xp, h, w, b: h * w + b, (xhat, gain, bias))
    return (out if wide is None else astype(out, _out_dtype(x, gain, bias))), (xhat, rstd)


def _out_dtype(x: ShardArray, gain: Any, bias: Any) -> Any:
    """The dtype of ``layer_norm(x, gain, bias)``: x's promoted with the gain's and bias's (Python numbers are weak)."""
    return promote(*(a.dtype for a in (x, gain, bias) if isinstance(a, ShardArray)))


@register_vjp("layer_norm")
def _layer_norm_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    x, gain, bias = ctx.args[:3]
    dim = ctx.args[3] if len(ctx.args) > 3 else ctx.kwargs.get("dim", "d_model")
    g = resolve_to(g)
    grads: list[Any] = [None] * len(ctx.args)
    if isinstance(ctx.saved[0], str):  # ("fused", mean, rstd)
        _, mean, rstd = ctx.saved
        k = _row_kernels(x)
        dx_rows, gxh = fused.map_rows_multi(
            x,
            2,
            lambda xp, a, g, w, m, r: k.layer_norm_rows_grad(xp, g, a, w, m, r),
            fused.like(g, x),
            resolve_to(gain),
            mean,
            rstd,
        )
        grads[0] = ShardArray(x.mesh, x.spec, x.dtype, dx_rows) if ctx.needs[0] else None
        grads[1] = match(ShardArray(x.mesh, x.spec, x.dtype, gxh), gain) if ctx.needs[1] else None
        grads[2] = match(g, bias) if ctx.needs[2] else None
        return grads
    xhat, rstd = ctx.saved
    if xhat.dtype != g.dtype:  # a 16-bit x normalized in float32: so is its cotangent (the tape rounds the grads)
        g = astype(g, xhat.dtype)
    inv_n = fused_numpy.inverse_count(x.sizes[dim])
    if ctx.needs[1]:
        grads[1] = match(apply("d_gain", lambda xp, g, h: g * h, (g, xhat)), gain)
    if ctx.needs[2]:
        grads[2] = match(g, bias)
    if ctx.needs[0]:
        gh = apply("d_xhat", lambda xp, g, w: g * w, (g, gain))
        m1 = reduction.sum(gh, dim)
        m2 = reduction.sum(apply("d_xhat_h", lambda xp, a, h: a * h, (gh, xhat)), dim)

        def dx(xp: Any, gh: Any, h: Any, r: Any, m1: Any, m2: Any) -> Any:
            out = h * (m2 * inv_n)
            out += m1 * inv_n
            out = gh - out
            out *= r
            return out

        grads[0] = match(apply("d_layer_norm", dx, (gh, xhat, rstd, m1, m2)), x)
    return grads


def _row_kernels(x: ShardArray) -> Any:
    """The fused row launchers for ``x``'s shards: ``ops.fused_numpy`` on NumPy, ``backend.cuda_kernels`` on CuPy."""
    return fused_numpy if fused_numpy.is_numpy(x) else cuda_kernels


def _fused_layer_norm(x: ShardArray, gain: ShardArray, bias: ShardArray, dim: str) -> bool:
    """Whether layer norm runs fused per block: ``dim`` last and unsplit, gain and bias over ``dim`` only.

    On NumPy float32/float64 shards that is ``ops.fused_numpy`` (one mean/variance pass), on CuPy a kernel.
    """
    return (
        fused.rows_ready(x, dim)
        and (fused_numpy.is_numpy(x) or fused.kernels_for(x, "layer_norm"))
        and all(
            isinstance(p, ShardArray) and p.dims == (dim,) and not p.spec.of(dim) and p.dtype == x.dtype
            for p in (gain, bias)
        )
    )


def attention(x: ShardArray, p: Params, prefix: str) -> ShardArray:
    """Causal multi-head self-attention; ``x`` is (batch, seq, d_model).

    On NumPy float32/float64 shards with seq and d_kv unsplit, scores, mask,
    softmax and PV are one op per block with its own VJP
    (``ops.fused_attention.causal_attention``, no collectives); otherwise:

    The scores keep the dims (batch, heads, seq, kseq), so their scaled,
    masked softmax over the last dim, kseq, is one kernel per block on GPUs
    (``ops.causal_softmax``). Scores narrower than float32 (float16,
    bfloat16) are scaled by ``1/sqrt(d_kv)`` and normalized in float32; the
    probabilities return to the scores' dtype for the next einsum.

    Raises:
        DimensionError: ``x`` lacks one of its dims, or ``p`` lacks one of ``prefix + ("wq", "wk", "wv", "wo")``.
        DTypeError: ``x`` or a weight is not a ShardArray, ``p`` not a dict.
    """
    _need_dims("attention", "x", x, ("batch", "seq", "d_model"))
    wq, wk, wv, wo = _weights("attention", p, prefix, ("wq", "wk", "wv", "wo"))
    xk = rename(x, {"seq": "kseq"})
    q = einsum("batch seq d_model, d_model heads d_kv -> batch seq heads d_kv", x, wq)
    k = einsum("batch kseq d_model, d_model heads d_kv -> batch kseq heads d_kv", xk, wk)
    v = einsum("batch kseq d_model, d_model heads d_kv -> batch kseq heads d_kv", xk, wv)
    if attention_fused.ready(q, k, v):  # one op per block, with its own VJP (ops/fused/attention.py)
        o = attention_fused.causal_attention(q, k, v, 1.0 / math.sqrt(wq.sizes["d_kv"]))
        return einsum("batch seq heads d_kv, heads d_kv d_model -> batch seq d_model", o, wo)
    scores = einsum("batch seq heads d_kv, batch kseq heads d_kv -> batch heads seq kseq", q, k)
    probs = causal_softmax(scores, 1.0 / math.sqrt(wq.sizes["d_kv"]))
    o = einsum("batch heads seq kseq, batch kseq heads d_kv -> batch seq heads d_kv", probs, v)
    return einsum("batch seq heads d_kv, heads d_kv d_model -> batch seq d_model", o, wo)


def mlp(x: ShardArray, p: Params, prefix: str) -> ShardArray:
    """``gelu(x·W_in + b_in)·W_out + b_out``; ``x`` is (batch, seq, d_model).

    Raises:
        DimensionError: ``x`` lacks one of its dims, or ``p`` one of ``prefix + ("w_in", "b_in", "w_out", "b_out")``.
        DTypeError: ``x`` or a weight is not a ShardArray, ``p`` not a dict.
    """
    _need_dims("mlp", "x", x, ("batch", "seq", "d_model"))
    w_in, b_in, w_out, b_out = _weights("mlp", p, prefix, ("w_in", "b_in", "w_out", "b_out"))
    h = gelu(einsum("batch seq d_model, d_model d_ff -> batch seq d_ff", x, w_in) + b_in)
    return einsum("batch seq d_ff, d_ff d_model -> batch seq d_model", h, w_out) + b_out


def cross_entropy(logits: ShardArray, targets: ShardArray, dim: str = "vocab") -> ShardArray:
    """Per-position softmax cross-entropy ``logsumexp(logits) - logits[target]``.

    A split ``dim`` is never gathered: the maximum is max-allreduced, the sum of
    exponentials and the target logit sum-allreduced over its axes (Mesh-TF).
    float16 and bfloat16 logits are computed in float32 and rounded once, on
    every backend and path (as the fused kernels do).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> logits = sa.asarray(np.log([[1.0, 1.0, 2.0, 4.0]]), dims=("batch", "vocab"), mesh=mesh,
        ...                     layout={"vocab": "col"})
        >>> targets = sa.asarray(np.array([3]), dims=("batch",), mesh=mesh)
        >>> np.round(sa.nn.cross_entropy(logits, targets).numpy(), 4)     # -log(4/8)
        array([0.6931])
    """
    _check_loss("cross_entropy", logits, targets, dim)
    if _fused_cross_entropy(logits, targets, dim):
        return _cross_entropy_rows(logits, targets, dim)
    if logits.dtype.kind in "fV" and logits.dtype.itemsize == 2:  # float16, bfloat16: in float32, rounded once
        wide = astype(logits, "float32")
        return astype(logsumexp(wide, dim) - take(wide, targets, dim), logits.dtype)
    return logsumexp(logits, dim) - take(logits, targets, dim)


def _fused_cross_entropy(logits: ShardArray, targets: ShardArray, dim: str) -> bool:
    """One kernel per block: ``dim`` last and unsplit, targets over the other dims, laid out alike."""
    return (
        isinstance(targets, ShardArray)
        and fused.rows_ready(logits, dim)
        and (fused_numpy.is_numpy(logits) or fused.kernels_for(logits, "softmax"))
        and targets.dims == logits.dims[:-1]
        and targets.spec.axes == logits.spec.axes[:-1]
        and targets.dtype.kind in "iu"
        and not targets.pending
        and targets.mesh is logits.mesh
    )


@differentiable("cross_entropy_rows", resolve_inputs=True, saves=True)
def _cross_entropy_rows(logits: ShardArray, targets: ShardArray, dim: str) -> Any:
    """``cross_entropy`` as the fused kernel (see ``_fused_cross_entropy``); saves logsumexp per row."""

    logits = resolve_to(logits)
    # the kernel indexes each row by its target unchecked: on GPUs the range is checked there and read with the
    # loss (check_ids), and the targets it gets are clipped into range meanwhile
    targets = check_ids(targets, logits.sizes[dim], dim, "sa.nn.cross_entropy", clip=True)
    loss, lse = fused.map_rows_multi(logits, 2, _row_kernels(logits).cross_entropy_rows, targets)
    return fused.rows_result(logits, loss), lse


@register_vjp("cross_entropy_rows")
def _cross_entropy_rows_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    logits, targets = ctx.args[0], ctx.args[1]
    g = cast(ShardArray, fused.like(resolve_to(g), ctx.out))  # out's cotangent has out's dims: not None
    k = _row_kernels(logits)
    dx = fused.map_rows_multi(
        logits,
        1,
        lambda xp, x, g, t, lse: (k.cross_entropy_rows_grad(xp, g, x, t, lse),),
        g,
        targets,
        ctx.saved,
    )[0]
    return [ShardArray(logits.mesh, logits.spec, logits.dtype, dx), None, None]


def accuracy(logits: ShardArray, targets: ShardArray, dim: str = "vocab") -> ShardArray:
    """Fraction of positions whose target has the largest logit (no gather of ``dim``), a 0-d float64 array.

    A tie for the largest logit counts as a hit (``argmax`` would pick the first of the tied classes); a
    position with a NaN logit is a miss. The hits are counted exactly and divided once by the number of
    positions, so the value is NumPy's ``np.mean(hits)`` bit for bit on every layout (NaN for no positions).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> logits = sa.asarray(np.eye(3)[[0, 1, 2, 1]], dims=("batch", "vocab"), mesh=mesh, layout={"batch": "col"})
        >>> targets = sa.asarray(np.array([0, 1, 2, 0]), dims=("batch",), mesh=mesh, layout={"batch": "col"})
        >>> float(sa.nn.accuracy(logits, targets).numpy())
        0.75
    """
    _check_loss("accuracy", logits, targets, dim)
    hit = take(logits, targets, dim) >= reduce_max(logits, dim)
    # the count's partial sums are exact; resolved before the division (a pending sum divided by the count would
    # divide each device's partial and round each: 0.9999999999999999 for all hits)
    hits = resolve_to(reduction.sum(astype(hit, "float64")))
    return hits / math.prod(hit.shape)


__all__ = ["accuracy", "attention", "cross_entropy", "layer_norm", "mlp"]
