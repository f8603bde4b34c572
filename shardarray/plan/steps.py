"""Ready-made steps for the planner: ``step(mesh)`` builds its arrays under the mesh's rules, runs forward/backward."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..autograd.api import value_and_grad
from ..dtypes import as_dtype, is_real_float
from ..errors import DimensionError, DTypeError, LayoutError
from ..memo_hook import layer
from ..mesh import Mesh
from ..nn.config import TransformerConfig, param_shapes
from ..nn.strategies import STRATEGIES, strategy_rules
from ..nn.transformer import _std, init_transformer, transformer_loss
from ..ops.creation import random as rnd
from ..ops.creation.basic import full, zeros
from ..ops.einsum import einsum
from ..ops.elementwise.arithmetic import relu
from ..ops.reduction import reduce as reduction
from .floor import Allreduce

Step = Callable[[Mesh], Any]


def transformer_step(cfg: TransformerConfig, batch: int, dtype: str = "float32", strategy: str | None = None) -> Step:
    """One training step of the reference transformer (loss and every gradient) as ``step(mesh)``.

    The parameters follow the mesh's rules (``strategy=None``, what the search
    varies) or a named strategy; the tokens (batch, seq) follow the same.

    Example (a 2×2 mesh, Mesh-TF's mesh2d rules):
        >>> cfg = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=64, n_layers=1, seq_len=8)
        >>> step = sa.plan.transformer_step(cfg, batch=8)
        >>> rules = sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2})
        >>> plan = sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, rules)
        >>> plan.flops_per_device > 0, plan.rules["d_ff"]
        (True, ('cols',))

    Raises:
        DTypeError: ``cfg`` is not a ``TransformerConfig`` or ``dtype`` not a float dtype.
        DimensionError: ``batch`` is not a positive integer.
        LayoutError: ``strategy`` is neither None nor one of ``sa.nn.STRATEGIES``.
    """
    if not isinstance(cfg, TransformerConfig):
        raise DTypeError(f"transformer_step needs a sa.nn.TransformerConfig; got {type(cfg).__name__} {cfg!r:.60}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise DimensionError(f"transformer_step needs a positive integer batch; got {batch!r}")
    _check_step_args(dtype, strategy)

    def step(mesh: Mesh) -> Any:
        params = init_transformer(cfg, mesh, strategy=strategy, dtype=dtype) if strategy else _params(cfg, mesh, dtype)
        layout = None
        if strategy is not None:
            layout = {d: a for d, a in strategy_rules(strategy, mesh).items() if d in ("batch", "seq")}
        tokens = zeros(mesh, {"batch": batch, "seq": cfg.seq_len}, dtype="int32", layout=layout)
        return value_and_grad(transformer_loss)(params, tokens, tokens, cfg)

    step.same_ops = True  # type: ignore[attr-defined]  # the same ops on every mesh: ``plan.floor``
    if strategy is None:  # (the parameters and tokens follow the rules)
        step.forced = _transformer_allreduces(cfg, batch, dtype)  # type: ignore[attr-defined]  # plan.floor
    if cfg.n_layers > 1:  # the same step with one and two layers: see ``plan.floor.layer_floor``
        one = transformer_step(replace(cfg, n_layers=1), batch, dtype, strategy)
        two = step if cfg.n_layers == 2 else transformer_step(replace(cfg, n_layers=2), batch, dtype, strategy)
        _repeat(step, one, two, cfg.n_layers)
        if strategy is None:  # (layers labelled: ``plan.deep``)
            step.with_layers = lambda n: transformer_step(replace(cfg, n_layers=n), batch, dtype)  # type: ignore[attr-defined]
    return step


def _check_step_args(dtype: Any, strategy: Any) -> None:
    """Refuse a dtype or strategy ``transformer_step`` cannot build, when it is made rather than when it runs
    (inside the search, after a strategy of ``"auto"`` had started a search of its own)."""
    if strategy is not None and (not isinstance(strategy, str) or strategy not in STRATEGIES):
        raise LayoutError(
            f"transformer_step(strategy={strategy!r}): give one of {STRATEGIES}, or None for the mesh's rules (what "
            f"the search varies; sa.plan.search_layouts is strategy 'auto')"
        )
    dt = as_dtype(dtype)
    if not is_real_float(dt):
        raise DTypeError(f"transformer_step(dtype={dt.name!r}): the parameters need a float dtype such as 'float32'")


def _params(cfg: TransformerConfig, mesh: Mesh, dtype: str) -> dict[str, Any]:
    """``init_transformer(cfg, mesh, strategy=None, dtype=dtype)``: the same ops on arrays of the same dims, each made
    with ``layout=None`` so that the creation op itself reads the mesh's rules (inside the planner's memo,
    ``plan.graph``), not the Python around it (``tests/plan/test_plan_graph.py`` checks both give the same plans).

    Each layer's parameters are made as that layer (``memo_hook.layer``), with the scales of a one-layer model: the
    output projections' ``1 / sqrt(2 layers)`` would make every depth's layers differ in a static argument, where
    only values (which the meta backend has none of) differ; so a deep model's layers are the same ops as a shallow
    one's (``plan.deep``).
    """
    sizes = cfg.sizes
    scales = replace(cfg, n_layers=1)
    params: dict[str, Any] = {}
    for name, dims in param_shapes(cfg).items():
        shape_map = {d: sizes[d] for d in dims}
        with layer(_layer_of(name)):  # (a layer's parameters are part of it: see ``plan.graph``)
            if name.endswith(".gain"):
                params[name] = full(mesh, shape_map, 1.0, dtype=dtype)
            elif name.endswith(("bias", "b_in", "b_out")):
                params[name] = full(mesh, shape_map, 0.0, dtype=dtype)
            else:
                w = rnd.normal(mesh, shape_map, seed=zlib.crc32(name.encode()), dtype=dtype)
                params[name] = w * _std(name, scales)
    return params


def _layer_of(name: str) -> int | None:
    """The layer a parameter of ``param_shapes`` belongs to (``layer3.attn.wq`` -> 3), None for the others."""
    head = name.split(".", 1)[0]
    return int(head[5:]) if head.startswith("layer") and head[5:].isdigit() else None


def mlp_step(batch: int, d_io: int, d_hidden: int, layers: int = 2, dtype: str = "float32") -> Step:
    """Mesh-TF §8's network, ``layers`` times: ``y = relu(x·w + bias)·v`` per layer, loss = sum of y².

    Dims: ``batch``, ``io``, ``hidden`` (the names Mesh-TF's Table 1 layouts use).

    Example (data parallel on a 2×2 mesh):
        >>> step = sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8)
        >>> plan = sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, {"batch": ("rows", "cols")})
        >>> plan.comm_bytes_per_device > 0   # the weight gradients are allreduced
        True
    """

    for name, value in (("batch", batch), ("d_io", d_io), ("d_hidden", d_hidden), ("layers", layers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DimensionError(f"mlp_step needs a positive integer {name}; got {name}={value!r}")

    def step(mesh: Mesh) -> Any:
        params = {}
        for i in range(layers):
            with layer(i):  # (what a layout search reads: ``plan.graph``)
                params[f"w{i}"] = rnd.normal(mesh, {"io": d_io, "hidden": d_hidden}, seed=3 * i, dtype=dtype)
                params[f"bias{i}"] = zeros(mesh, {"hidden": d_hidden}, dtype=dtype)
                params[f"v{i}"] = rnd.normal(mesh, {"hidden": d_hidden, "io": d_io}, seed=3 * i + 1, dtype=dtype)
        x = rnd.normal(mesh, {"batch": batch, "io": d_io}, seed=99, dtype=dtype)

        def loss(p: dict) -> Any:
            y = x
            for i in range(layers):
                with layer(i):
                    h = relu(einsum("batch io, io hidden -> batch hidden", y, p[f"w{i}"]) + p[f"bias{i}"])
                    y = einsum("batch hidden, hidden io -> batch io", h, p[f"v{i}"])
            return reduction.sum(y * y)

        return value_and_grad(loss)(params)

    step.same_ops = True  # type: ignore[attr-defined]  # the same ops on every mesh: ``plan.floor``
    size = as_dtype(dtype).itemsize
    step.forced = tuple(  # type: ignore[attr-defined]  # each weight's gradient sums over the batch: ``plan.floor``
        Allreduce(("batch",), dims, n * size, layers)
        for dims, n in (
            (("io", "hidden"), d_io * d_hidden),
            (("hidden",), d_hidden),
            (("hidden", "io"), d_hidden * d_io),
        )
    )
    if layers > 1:  # the same step with one and two layers: see ``plan.floor.layer_floor``
        two = step if layers == 2 else mlp_step(batch, d_io, d_hidden, 2, dtype)
        _repeat(step, mlp_step(batch, d_io, d_hidden, 1, dtype), two, layers)
        step.with_layers = lambda n: mlp_step(batch, d_io, d_hidden, n, dtype)  # type: ignore[attr-defined]  # plan.deep
    return step


def _transformer_allreduces(cfg: TransformerConfig, batch: int, dtype: str) -> tuple[Allreduce, ...]:
    """The allreduces ``transformer_step`` makes under every rule set (``plan.floor.Allreduce``).

    An einsum contracts each device's blocks and leaves the sum over the mesh axes of its split contracted dims
    pending (``ops.einsum``); a sum must be complete before a function that is not linear in it reads it, and the
    result then holds its dims' layout, whole on every device along the summed axes that its dims do not use (an
    allreduce, or collectives that cost at least as much under the alpha-beta model, ``floor.CommFloor``):

    * Each parameter's gradient is a sum over every token (``batch`` and ``seq``; ``pos``, which has ``seq``, over
      the batch; the keys' and values' projections, whose tokens carry ``kseq``, over the batch only), resolved
      as the backward pass ends: one allreduce each, of the parameter's dims.
    * Each layer's forward pass sums the attention's output projection over ``heads`` and ``d_kv`` and the MLP's
      second matmul over ``d_ff`` into the residual stream (``batch``, ``seq``, ``d_model``). The next layer
      norm squares it (not linear), so each sum is complete before it: one allreduce per layer for each, one
      after the other.
    * Each layer's attention scores (``batch``, ``heads``, ``seq``, ``kseq``) sum over ``d_kv`` before the softmax,
      and its MLP's first matmul (``batch``, ``seq``, ``d_ff``) over ``d_model`` before the GELU.
    * Each layer norm (two per layer and the final one) sums over ``d_model`` for its statistics: at least one
      allreduce of a (``batch``, ``seq``) array.

    The backward pass sums over the same dims too, but its cotangents are linear in what they sum, so this floor
    does not count on when they are resolved. Every array is counted in the narrower of ``dtype`` and the config's
    compute dtype: in mixed precision the gradients are summed in the compute dtype before they are cast back.
    ``tests/plan/test_plan_comm_floor.py`` holds the floor under the traced comm times of every (third) rule set of
    small models on 2×2 and of sampled ones on 3×2, 2×2×2 and 2×4, mixed precision included.
    """
    size = as_dtype(dtype).itemsize
    act = size if cfg.compute_dtype is None else min(size, as_dtype(cfg.compute_dtype).itemsize)
    sizes = cfg.sizes
    out = [
        Allreduce(_tokens_of(name, dims), dims, act * float(math.prod(sizes[d] for d in dims)))
        for name, dims in param_shapes(cfg).items()
    ]
    tokens = batch * cfg.seq_len
    residual = ("batch", "seq", "d_model")
    stream = float(tokens * cfg.d_model * act)
    layers = cfg.n_layers
    out.append(Allreduce(("heads", "d_kv"), residual, stream, layers))
    out.append(Allreduce(("d_ff",), residual, stream, layers))
    out.append(
        Allreduce(("d_kv",), ("batch", "heads", "seq", "kseq"), float(tokens * cfg.heads * cfg.seq_len * act), layers)
    )
    out.append(Allreduce(("d_model",), ("batch", "seq", "d_ff"), float(tokens * cfg.d_ff * act), layers))
    out.append(Allreduce(("d_model",), ("batch", "seq"), float(tokens * act), 2 * layers + 1))
    return tuple(out)


def _tokens_of(name: str, dims: tuple[str, ...]) -> tuple[str, ...]:
    """The dims parameter ``name``'s gradient sums over: every token (``batch``, ``seq``), but over the batch only for
    a parameter with ``seq`` (``pos``) and for the keys' and values' projections (their tokens carry ``kseq``)."""
    if "seq" in dims or name.endswith(("attn.wk", "attn.wv")):
        return ("batch",)
    return ("batch", "seq")


def _repeat(step: Any, one: Step, two: Step, layers: int) -> None:
    """Mark ``step`` as ``layers`` identical layers: ``one``/``two`` are the same step with one/two of them.

    The search reads these (``plan.search``): ``step.lower_bound`` runs a subset of ``step``'s ops, so
    it costs no more under any rules; ``step.two_layers`` minus ``step.lower_bound`` is one layer.
    """
    step.lower_bound, step.two_layers, step.layers = one, two, layers
