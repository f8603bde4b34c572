"""The reference transformer: parameters under a strategy, logits and loss."""

from __future__ import annotations

import math
import zlib
from typing import Any

from ..array import ShardArray
from ..errors import DimensionError, DTypeError
from ..layout import make_layout
from ..mesh import Mesh
from ..ops import random as rnd
from ..ops.creation import full
from ..ops.einsum import einsum
from ..ops.indexing import take
from .config import TransformerConfig, param_shapes
from .layers import attention, cross_entropy, layer_norm, mlp
from .strategies import param_layout, strategy_rules

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
    cfg: TransformerConfig, mesh: Mesh, strategy: str | None = None, seed: int = 0, dtype: Any = "float32"
) -> Params:
    """The parameters of the reference transformer, laid out by a strategy.

    Every strategy, mesh and backend gives the same global values for a seed
    (the counter-based RNG), so runs under different layouts are comparable.

    Args:
        cfg: the model's sizes.
        mesh: the mesh.
        strategy: one of ``sa.nn.STRATEGIES``, or None to follow the mesh's rules.
        seed: the random seed.
        dtype: parameter dtype.

    Returns:
        A dict ``{name: ShardArray}``; the names are the same for every strategy.

    Example:
        >>> cfg = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=6)
        >>> params = sa.nn.init_transformer(cfg, sa.Mesh({"rows": 2, "cols": 2}), strategy="mesh2d")
        >>> params["layer0.mlp.w_in"].layout, params["embed"].layout
        ({'d_ff': ('cols',)}, {'vocab': ('cols',)})
    """
    if not isinstance(cfg, TransformerConfig):
        raise DTypeError(f"init_transformer needs a sa.nn.TransformerConfig; got {type(cfg).__name__}")
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
            w = rnd.normal(mesh, shape_map, seed=seed * 1_000_003 + stream, dtype=dtype, layout=layout)
            params[name] = w * _std(name, cfg)
    return params


def _check_tokens(tokens: ShardArray, cfg: TransformerConfig, what: str) -> None:
    if not isinstance(tokens, ShardArray) or tokens.dtype.kind not in "iu":
        raise DTypeError(f"{what} must be an integer ShardArray with dims ('batch', 'seq')")
    if set(tokens.dims) != {"batch", "seq"}:
        raise DimensionError(f"{what} must have dims ('batch', 'seq'); got {tokens.sizes}")
    if tokens.sizes["seq"] != cfg.seq_len:
        raise DimensionError(
            f"{what} has seq {tokens.sizes['seq']} but the model was built for seq_len {cfg.seq_len}"
        )


def transformer_logits(params: Params, tokens: ShardArray, cfg: TransformerConfig) -> ShardArray:
    """Logits (batch, seq, vocab) of the reference transformer for integer ``tokens`` (batch, seq)."""
    _check_tokens(tokens, cfg, "tokens")
    x = take(params["embed"], tokens, "vocab") + params["pos"]
    for i in range(cfg.n_layers):
        p = f"layer{i}."
        x = x + attention(layer_norm(x, params[p + "ln1.gain"], params[p + "ln1.bias"], eps=cfg.eps), params, p + "attn.")
        x = x + mlp(layer_norm(x, params[p + "ln2.gain"], params[p + "ln2.bias"], eps=cfg.eps), params, p + "mlp.")
    x = layer_norm(x, params["ln_f.gain"], params["ln_f.bias"], eps=cfg.eps)
    return einsum("batch seq d_model, d_model vocab -> batch seq vocab", x, params["unembed"])


def transformer_loss(params: Params, tokens: ShardArray, targets: ShardArray, cfg: TransformerConfig) -> ShardArray:
    """Mean softmax cross-entropy of the next-token predictions (a 0-d ShardArray).

    The vocab dim of the logits is never gathered, whatever its layout.

    Example:
        >>> cfg = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=6)
        >>> mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2}))
        >>> params = sa.nn.init_transformer(cfg, mesh, seed=0)
        >>> tokens = sa.asarray(np.arange(24).reshape(4, 6) % 16, dims=("batch", "seq"), mesh=mesh)
        >>> loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, tokens, cfg)
        >>> 2.0 < float(loss) < 3.5, grads["embed"].layout
        (True, {'vocab': ('cols',)})
    """
    _check_tokens(targets, cfg, "targets")
    return cross_entropy(transformer_logits(params, tokens, cfg), targets).mean()


__all__ = ["init_transformer", "transformer_logits", "transformer_loss"]
