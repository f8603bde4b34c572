"""The reference transformer's hyper-parameters and parameter count."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError, DimensionError, DTypeError


@dataclass(frozen=True)
class TransformerConfig:
    """A GPT-style decoder (DESIGN.md, the reference model).

    Attributes:
        vocab: vocabulary size.
        d_model: width of the residual stream.
        heads: attention heads.
        d_kv: width of each head's queries, keys and values.
        d_ff: hidden width of the MLP.
        n_layers: transformer blocks.
        seq_len: sequence length (the learned position table has this many rows).
        eps: layer-norm epsilon.
        compute_dtype: the dtype of the einsums and activations (mixed precision), or
            None (the default) to compute in the parameters' dtype. With
            ``"bfloat16"`` or ``"float16"`` the parameters stay in their own dtype
            (float32): they are cast once per step where the model uses them, and
            the cast's VJP casts the gradients back, so gradients and optimizer
            state keep the parameters' dtype. Layer norm, the attention softmax and
            the loss (logits' softmax cross-entropy) compute in float32.

    Example:
        >>> cfg = sa.nn.TransformerConfig(vocab=256, d_model=64, heads=4, d_kv=16, d_ff=256, n_layers=2, seq_len=32)
        >>> sa.nn.param_count(cfg)
        134400
    """

    vocab: int = 256
    d_model: int = 64
    heads: int = 4
    d_kv: int = 16
    d_ff: int = 256
    n_layers: int = 2
    seq_len: int = 32
    eps: float = 1e-5
    compute_dtype: str | None = None

    def __post_init__(self) -> None:
        for name in ("vocab", "d_model", "heads", "d_kv", "d_ff", "seq_len", "n_layers"):
            v, least = getattr(self, name), 0 if name == "n_layers" else 1
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
                kind = "an integer >= 0" if least == 0 else "a positive integer (>= 1)"
                raise DimensionError(f"TransformerConfig.{name} must be {kind}; got {name}={v!r}")
            object.__setattr__(self, name, int(v))  # a NumPy integer (a size computed from data) as a Python int
        eps = self.eps
        number = not isinstance(eps, bool) and isinstance(eps, (int, float, np.integer, np.floating))
        if not (number and math.isfinite(eps) and eps > 0):
            raise ArgumentError(
                f"TransformerConfig.eps (the layer-norm epsilon) must be a finite number > 0, e.g. 1e-5; "
                f"got eps={eps!r}"
            )
        object.__setattr__(self, "eps", float(eps))

        if self.compute_dtype is not None:
            _check_compute_dtype(self.compute_dtype)

    @property
    def sizes(self) -> dict[str, int]:
        """The size of every named dim of the model (``seq`` and ``kseq`` are the sequence)."""
        return {
            "vocab": self.vocab,
            "d_model": self.d_model,
            "heads": self.heads,
            "d_kv": self.d_kv,
            "d_ff": self.d_ff,
            "seq": self.seq_len,
            "kseq": self.seq_len,
        }


COMPUTE_DTYPES = ("bfloat16", "float16", "float32", "float64")


def _check_compute_dtype(value: object) -> None:
    """``DTypeError`` unless ``value`` names a float dtype the model can compute in."""
    if not isinstance(value, str) or value not in COMPUTE_DTYPES:
        raise DTypeError(
            f"TransformerConfig.compute_dtype must be None or one of {COMPUTE_DTYPES} (a string); got "
            f"compute_dtype={value!r}. Use compute_dtype='bfloat16' for mixed precision with float32 parameters"
        )


def param_shapes(cfg: TransformerConfig) -> dict[str, tuple[str, ...]]:
    """Every parameter's name and dims, in a fixed order (the same for every strategy)."""
    shapes: dict[str, tuple[str, ...]] = {"embed": ("vocab", "d_model"), "pos": ("seq", "d_model")}
    for i in range(cfg.n_layers):
        p = f"layer{i}."
        shapes.update(
            {
                p + "ln1.gain": ("d_model",),
                p + "ln1.bias": ("d_model",),
                p + "attn.wq": ("d_model", "heads", "d_kv"),
                p + "attn.wk": ("d_model", "heads", "d_kv"),
                p + "attn.wv": ("d_model", "heads", "d_kv"),
                p + "attn.wo": ("heads", "d_kv", "d_model"),
                p + "ln2.gain": ("d_model",),
                p + "ln2.bias": ("d_model",),
                p + "mlp.w_in": ("d_model", "d_ff"),
                p + "mlp.b_in": ("d_ff",),
                p + "mlp.w_out": ("d_ff", "d_model"),
                p + "mlp.b_out": ("d_model",),
            }
        )
    shapes.update({"ln_f.gain": ("d_model",), "ln_f.bias": ("d_model",), "unembed": ("d_model", "vocab")})
    return shapes


def param_count(cfg: TransformerConfig) -> int:
    """The number of parameters of the reference transformer.

    With vocab 32768, d_model 1024, d_kv 256 and 6 layers this gives Mesh-TF
    Table 2's counts (0.14B for d_ff 4096 and 4 heads ... 4.90B for d_ff 262144
    and 256 heads).

    Example:
        >>> cfg = sa.nn.TransformerConfig(vocab=32768, d_model=1024, heads=4, d_kv=256, d_ff=4096, n_layers=6,
        ...                               seq_len=256)
        >>> round(sa.nn.param_count(cfg) / 1e9, 2)
        0.14
    """
    sizes = cfg.sizes
    return sum(math.prod(sizes[d] for d in dims) for dims in param_shapes(cfg).values())
