"""Neural-network pieces: the reference transformer, its strategies and layers.

Example (the 2×2 ``mesh2d`` strategy of Mesh-TF §9):
    >>> cfg = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
    >>> mesh = sa.Mesh({"rows": 2, "cols": 2})
    >>> params = sa.nn.init_transformer(cfg, mesh, strategy="mesh2d", seed=0, dtype="float32")
    >>> sorted(params)[:3]
    ['embed', 'layer0.attn.wk', 'layer0.attn.wo']

``auto_choice``, ``auto_rules``, ``save_rules``, ``load_rules`` and ``AutoChoice`` (``strategy="auto"``) are the
planner's (``shardarray.plan.auto``), attached here when ``shardarray`` is imported.
"""

from . import data
from .config import TransformerConfig, param_count, param_shapes
from .layers import accuracy, attention, cross_entropy, layer_norm, mlp
from .strategies import STRATEGIES, param_layout, strategy_rules
from .transformer import check_params, init_transformer, transformer_logits, transformer_loss

__all__ = [
    "STRATEGIES",
    "AutoChoice",
    "TransformerConfig",
    "accuracy",
    "attention",
    "auto_choice",
    "auto_rules",
    "check_params",
    "cross_entropy",
    "data",
    "init_transformer",
    "layer_norm",
    "load_rules",
    "mlp",
    "param_count",
    "param_layout",
    "param_shapes",
    "save_rules",
    "strategy_rules",
    "transformer_logits",
    "transformer_loss",
]
