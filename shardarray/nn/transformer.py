"""The reference transformer: parameters under a strategy, logits and loss."""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.common import require_ids
from ..dtypes import as_dtype, is_real_float
from ..errors import ArgumentError, DimensionError, DTypeError, OutOfBoundsError
from ..layout import make_layout
from ..memo_hook import layer
from ..mesh import Mesh
from ..ops.creation import random as rnd
from ..ops.creation.basic import full
from ..ops.einsum import einsum
from ..ops.indexing.take import check_ids, take
from ..ops.manipulation.structure import astype
from ..ops.reduction import reduce as reduction
from .config import TransformerConfig, param_shapes
from .layers import attention, cross_entropy, layer_norm, mlp
from .strategies import AUTO, param_layout, strategy_rules

Params = dict[str, ShardArray]


def _std(name: str, cfg: TransformerConfig) -> float:
    """Initial scale: fan-in for matrices (outputs into the residual stream also by 1/sqrt(2 layers))."""
    sizes = cfg.sizes
    if name in ("embed", "pos"):
        return 0.1
    fan_in = {"wo": sizes["heads"] * sizes["d_kv"], "w_out": sizes["d_ff"]}.get(name.rsplit(".", 1)[-1])
    if fan_in is None:
        fan_in = sizes["d_model"]
    std = 1.0 / math.sqrt(fan_in)
    if name.endswith(("attn.wo", "mlp.w_out")):
        std /= math.sqrt(2.0 * max(cfg.n_layers, 1))
    return std


def init_transformer(
    cfg: TransformerConfig,
    mesh: Mesh,
    strategy: str | None = None,
    seed: int = 0,
    dtype: Any = "float32",
    hardware: Any = "h100",
    memory_limit_bytes: float | None = None,
    batch: int | None = None,
) -> Params:
    """The parameters of the reference transformer, laid out by a strategy.

    Every strategy, mesh and backend gives the same global values for a seed
    (the counter-based RNG), so runs under different layouts are comparable.

    Args:
        cfg: the model's sizes.
        mesh: the mesh.
        strategy: one of ``sa.nn.STRATEGIES``, None to follow the mesh's rules,
            or ``"auto"``: the planner's best rules for this mesh's shape
            (``sa.nn.auto_rules``: searched on the meta backend, printed with
            the next best and the best named strategy). A mesh without rules
            takes the chosen rules (so the tokens and activations follow them);
            a mesh with other rules keeps its own, and only the parameters follow.
        seed: the random seed, an integer in [-2**63, 2**64) (not None: every process and mesh must
            draw the same parameters).
        dtype: parameter dtype, a float dtype.
        hardware: ``"auto"`` only: the hardware profile to model (a name of
            ``sa.hardware.PROFILES`` or a profile).
        memory_limit_bytes: ``"auto"`` only: peak bytes per device allowed (None: no limit).
        batch: ``"auto"`` only: sequences per step to plan for (None: 8 per device).

    Returns:
        A dict ``{name: ShardArray}``; the names are the same for every strategy.

    Raises:
        DTypeError: ``cfg`` is not a ``TransformerConfig``, ``mesh`` not a
            ``sa.Mesh`` (e.g. a dict of axis sizes), ``seed`` not an integer, or
            ``dtype`` not a float dtype.
        LayoutError: an unknown strategy, or a mesh the strategy cannot use.
        ArgumentError: ``"auto"`` finds no layout within ``memory_limit_bytes``; a seed out of range; ``batch``
            or ``memory_limit_bytes`` given with another strategy (they would be ignored).

    Example:
        >>> cfg = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=6)
        >>> params = sa.nn.init_transformer(cfg, sa.Mesh({"rows": 2, "cols": 2}), strategy="mesh2d")
        >>> params["layer0.mlp.w_in"].layout, params["embed"].layout
        ({'d_ff': ('cols',)}, {'vocab': ('cols',)})

    Example (``strategy="auto"`` on a 2×2 mesh: the planner's rules, printed, then set on the mesh):
        >>> mesh = sa.Mesh({"rows": 2, "cols": 2})
        >>> params = sa.nn.init_transformer(cfg, mesh, strategy="auto", batch=8)  # doctest: +SKIP
        >>> mesh.rules  # doctest: +SKIP
    """
    _check_init(cfg, mesh, seed, dtype)
    ignored = [f"{k}={v!r}" for k, v in (("batch", batch), ("memory_limit_bytes", memory_limit_bytes)) if v is not None]
    if strategy != "auto" and ignored:
        raise ArgumentError(
            f"init_transformer(strategy={strategy!r}, {', '.join(ignored)}): batch and memory_limit_bytes are read "
            f"by strategy='auto' (the planner's search) only; drop them, or pass strategy='auto'"
        )
    if strategy == "auto":
        rules = AUTO["choose"](cfg, mesh, batch, hardware, memory_limit_bytes, dtype)
        chosen = {d: mesh.parse_axes(spec, f"layout rule {d!r} -> {spec!r}") for d, spec in rules.items()}
        chosen = {d: axes for d, axes in chosen.items() if axes}
        if not mesh.rules:
            mesh.rules.update(chosen)  # the mesh takes the chosen rules: tokens and activations follow them
        elif mesh.rules != chosen and mesh.process_index == 0:
            print(
                f"note: the mesh keeps its own rules {mesh.rules}; only the parameters follow the chosen ones "
                f"(build the mesh as sa.Mesh({mesh.shape}, rules=...) with the line above)"
            )
        strategy = None
    else:
        rules = dict(mesh.rules) if strategy is None else strategy_rules(strategy, mesh)
    sizes = cfg.sizes
    params: Params = {}
    for name, dims in param_shapes(cfg).items():
        shape = tuple(sizes[d] for d in dims)
        spec = param_layout(strategy, name, dims, rules)
        lay = make_layout(mesh, dims, shape, spec, what=f"parameter {name!r}")
        layout = lay.as_dict()
        shape_map = dict(zip(dims, shape))
        if name.endswith(".gain"):
            params[name] = full(mesh, shape_map, 1.0, dtype=dtype, layout=layout)
        elif name.endswith(("bias", "b_in", "b_out")):
            params[name] = full(mesh, shape_map, 0.0, dtype=dtype, layout=layout)
        else:
            stream = zlib.crc32(name.encode())
            key = (int(seed) * 1_000_003 + stream) % 2**64  # (1_000_003 is odd: distinct seeds, distinct keys)
            w = rnd.normal(mesh, shape_map, seed=key, dtype=dtype, layout=layout)
            params[name] = w * _std(name, cfg)
    return params


def _check_init(cfg: Any, mesh: Any, seed: Any, dtype: Any) -> None:
    if not isinstance(cfg, TransformerConfig):
        raise DTypeError(
            f"init_transformer needs a sa.nn.TransformerConfig; got {type(cfg).__name__} {cfg!r:.60}. "
            f"Make one with sa.nn.TransformerConfig(vocab=..., d_model=..., ...)"
        )
    if not isinstance(mesh, Mesh):
        hint = f"sa.Mesh({dict(mesh)!r})" if isinstance(mesh, Mapping) else "sa.Mesh({'rows': 2, 'cols': 2})"
        raise DTypeError(
            f"init_transformer needs a sa.Mesh as mesh; got {type(mesh).__name__} {mesh!r:.60}. Build it with {hint}"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise DTypeError(
            f"init_transformer(seed={seed!r}): the seed must be an integer such as 0 (the same seed gives the "
            f"same parameters on every mesh and process; there is no random seed)"
        )
    lo, hi = rnd.SEED_RANGE
    if not lo <= int(seed) < hi:
        raise ArgumentError(
            f"init_transformer(seed={seed}): the seed must lie in the 64-bit seeds [-2**63, 2**64) (as "
            f"sa.random's; it would draw what seed % 2**64 draws): pass seed % 2**64"
        )
    dt = as_dtype(dtype)
    if not is_real_float(dt):  # (bfloat16 too: its NumPy kind is "V")
        raise DTypeError(f"init_transformer(dtype={dt.name!r}): parameters need a float dtype such as 'float32'")


def check_params(params: Any, cfg: TransformerConfig) -> None:
    """Raise unless ``params`` are the reference transformer's parameters for ``cfg``.

    Raises:
        DTypeError: ``params`` is not a dict of ShardArrays.
        DimensionError: a parameter is missing, extra, or has other dims or
            sizes than ``cfg`` gives; the message names the first one and the config.

    Example:
        >>> cfg = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=6)
        >>> params = sa.nn.init_transformer(cfg, sa.Mesh({"rows": 2, "cols": 2}), strategy="mesh2d")
        >>> sa.nn.check_params(params, cfg)
    """
    if not isinstance(cfg, TransformerConfig):
        raise DTypeError(f"cfg must be a sa.nn.TransformerConfig; got {type(cfg).__name__} {cfg!r:.60}")
    fix = (
        "build the params for this config with sa.nn.init_transformer(cfg, mesh), or pass the config they "
        "were built with"
    )
    if not isinstance(params, Mapping):
        raise DTypeError(
            f"params must be a dict {{name: ShardArray}} from sa.nn.init_transformer; got {type(params).__name__}"
        )
    sizes = cfg.sizes
    for name, dims in param_shapes(cfg).items():
        if name not in params:
            raise DimensionError(f"params[{name!r}] is missing: the params do not fit the config {cfg!r}; {fix}")
        p = params[name]
        if not isinstance(p, ShardArray):
            raise DTypeError(f"params[{name!r}] is a {type(p).__name__}, not a ShardArray; {fix}")
        want = {d: sizes[d] for d in dims}
        if p.sizes != want:
            raise DimensionError(f"params[{name!r}] has sizes {p.sizes} but the config {cfg!r} gives it {want}; {fix}")
    shapes = param_shapes(cfg)
    for name in params:
        if name not in shapes:
            raise DimensionError(
                f"params[{name!r}] is not in the config {cfg!r} (it has n_layers={cfg.n_layers}); {fix}"
            )


def _check_tokens(tokens: Any, cfg: TransformerConfig, what: str) -> None:
    require_ids(tokens, "transformer_loss", what)
    if set(tokens.dims) != {"batch", "seq"}:
        raise DimensionError(
            f"{what} must have dims ('batch', 'seq'); got {tokens.sizes} (rename them with {what}.rename({{...}}))"
        )
    if tokens.sizes["seq"] != cfg.seq_len:
        raise DimensionError(
            f"{what} has seq {tokens.sizes['seq']} but the model was built for seq_len {cfg.seq_len}: pass "
            f"sequences of exactly {cfg.seq_len} tokens, or build a config with seq_len={tokens.sizes['seq']}"
        )


def _ids_in_vocab(fn: Any, what: str, cfg: TransformerConfig, ids: ShardArray) -> Any:
    """``fn()``, with an out-of-range id error told as ``what``'s.

    Where the range is checked at once (host data, NumPy shards, MPI) the error is raised here and relabelled;
    on GPUs it is checked on the devices and raised at the next value read (the loss), labelled by the op name
    given to ``check_ids``.
    """
    try:
        check_ids(ids, cfg.vocab, "vocab", f"sa.nn.transformer_loss's {what} (the model's vocab {cfg.vocab})")
        return fn()
    except OutOfBoundsError as e:
        if "must lie in" not in str(e):
            raise
        raise OutOfBoundsError(
            f"{what} hold ids outside the model's vocab {cfg.vocab} (ids must lie in [0, {cfg.vocab})): {e}"
        ) from None


def transformer_logits(params: Params, tokens: ShardArray, cfg: TransformerConfig) -> ShardArray:
    """Logits (batch, seq, vocab) of the reference transformer for integer ``tokens`` (batch, seq)."""
    check_params(params, cfg)
    _check_tokens(tokens, cfg, "tokens")
    return _logits(params, tokens, cfg)


def _low(dtype: Any) -> bool:
    """A float narrower than float32 (float16, bfloat16): layer norm, softmax and loss run in float32."""
    return dtype is not None and as_dtype(dtype).itemsize < 4


def _cast(params: Params, dtype: Any) -> Params:
    """The parameters in the compute dtype, cast once per forward pass (the cast's VJP casts gradients back)."""
    if dtype is None:
        return params
    dt, norms = as_dtype(dtype), _low(dtype)  # in 16 bits the layer norms keep their float32 gains and biases
    return {
        k: v if v.dtype == dt or (norms and k.endswith((".gain", ".bias"))) else astype(v, dt)
        for k, v in params.items()
    }


def _norm(x: ShardArray, params: Params, name: str, cfg: TransformerConfig) -> ShardArray:
    """Layer norm ``name``: in float32 with the float32 gain and bias when the model computes in 16 bits."""
    gain, bias = params[name + ".gain"], params[name + ".bias"]
    if not _low(cfg.compute_dtype):
        return layer_norm(x, gain, bias, eps=cfg.eps)
    f32 = "float32"
    y = layer_norm(
        astype(x, f32),
        gain if gain.dtype == f32 else astype(gain, f32),
        bias if bias.dtype == f32 else astype(bias, f32),
        eps=cfg.eps,
    )
    return astype(y, cfg.compute_dtype)


def _logits(params: Params, tokens: ShardArray, cfg: TransformerConfig) -> ShardArray:
    """The logits, with params and tokens already checked (float32 when the model computes in 16 bits)."""
    p = _cast(params, cfg.compute_dtype)
    x = _ids_in_vocab(lambda: take(p["embed"], tokens, "vocab"), "tokens", cfg, tokens) + p["pos"]
    for i in range(cfg.n_layers):
        pre = f"layer{i}."
        with layer(i):  # (a layout search prices a deep model from a shallow one's layers: ``plan.graph``)
            x = x + attention(_norm(x, params, pre + "ln1", cfg), p, pre + "attn.")
            x = x + mlp(_norm(x, params, pre + "ln2", cfg), p, pre + "mlp.")
    x = _norm(x, params, "ln_f", cfg)
    logits = einsum("batch seq d_model, d_model vocab -> batch seq vocab", x, p["unembed"])
    return astype(logits, "float32") if _low(cfg.compute_dtype) else logits


def transformer_loss(params: Params, tokens: ShardArray, targets: ShardArray, cfg: TransformerConfig) -> ShardArray:
    """Mean softmax cross-entropy of the next-token predictions (a 0-d ShardArray).

    The vocab dim of the logits is never gathered, whatever its layout.

    Raises:
        DimensionError: params of another config (the first missing, extra or
            mis-sized one is named), tokens or targets with other dims or a seq
            other than ``cfg.seq_len``, or ids outside [0, vocab).
        DTypeError: tokens or targets that are not integer ShardArrays.

    Example:
        >>> cfg = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=6)
        >>> mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2}))
        >>> params = sa.nn.init_transformer(cfg, mesh, seed=0)
        >>> tokens = sa.asarray(np.arange(24).reshape(4, 6) % 16, dims=("batch", "seq"), mesh=mesh)
        >>> loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, tokens, cfg)
        >>> 2.0 < float(loss) < 3.5, grads["embed"].layout
        (True, {'vocab': ('cols',)})
    """
    check_params(params, cfg)
    _check_tokens(tokens, cfg, "tokens")
    _check_tokens(targets, cfg, "targets")
    if targets.sizes != tokens.sizes:
        raise DimensionError(
            f"targets have sizes {targets.sizes} but tokens have {tokens.sizes}: give one target per token"
        )
    logits = _logits(params, tokens, cfg)
    return reduction.mean(_ids_in_vocab(lambda: cross_entropy(logits, targets), "targets", cfg, targets))


__all__ = ["check_params", "init_transformer", "transformer_logits", "transformer_loss"]
