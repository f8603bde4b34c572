"""The named strategies of ``sa.nn`` priced on any mesh, to set beside the search's layouts.

A named strategy wants particular axis names; here each is mapped onto the
mesh's own axes (in their order, so the placement on nodes is the same):

=============  ======================================================================
data           batch over every axis
megatron       heads, d_ff, vocab over every axis (1-D model parallelism, Megatron)
mesh2d         2 axes: batch over the first; heads, d_ff, vocab over the second (§9)
tesseract      2 axes q×q (depth 1) or 3 axes d×q×q with d ≤ q: the Tesseract strategy
               (weights {input dim: row, output dims: col}, ``nn.param_layout``)
=============  ======================================================================
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import LayoutError
from ..hardware import HardwareProfile
from ..nn.config import TransformerConfig
from .evaluate import check_mesh_shape, evaluate_layout
from .model import Plan
from .steps import transformer_step

_MODEL_DIMS = ("heads", "d_ff", "vocab")


def _rules(name: str, axes: tuple[str, ...]) -> dict[str, tuple[str, ...]] | str:
    """The rules of a named strategy on these axes, or why it does not apply."""
    if name == "data":
        return {"batch": axes}
    if name == "megatron":
        return {d: axes for d in _MODEL_DIMS}
    if name == "mesh2d":
        if len(axes) != 2:
            return f"needs a 2-axis mesh (rows, cols); this one has {len(axes)} axes"
        return {"batch": (axes[0],), **{d: (axes[1],) for d in _MODEL_DIMS}}
    raise AssertionError(name)  # pragma: no cover - the names are this module's own


def _tesseract_mesh(shape: dict[str, int]) -> dict[str, int] | str:
    sizes = list(shape.values())
    if len(sizes) == 2:
        sizes = [1, *sizes]
    if len(sizes) != 3 or sizes[1] != sizes[2] or sizes[0] > sizes[1]:
        return f"needs a q×q or d×q×q mesh with d ≤ q; this one is {shape}"
    return {"dep": sizes[0], "row": sizes[1], "col": sizes[2]}


def named_plans(
    cfg: TransformerConfig,
    batch: int,
    mesh_shape: Mapping[str, int],
    hardware: str | HardwareProfile = "a100",
    dtype: str = "float32",
) -> tuple[list[Plan], dict[str, str]]:
    """Price ``data``, ``megatron``, ``mesh2d`` and ``tesseract`` where they apply to ``mesh_shape``.

    Returns:
        ``(plans, skipped)``: a Plan per strategy that applies (``label`` is its
        name) and ``{name: reason}`` for the others.

    Example (a 2×2 mesh):
        >>> cfg = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=4, d_ff=64, n_layers=1, seq_len=8)
        >>> plans, skipped = sa.plan.named_plans(cfg, 8, {"rows": 2, "cols": 2})
        >>> [p.label for p in plans], skipped
        (['data', 'megatron', 'mesh2d', 'tesseract'], {})
    """
    shape = check_mesh_shape(mesh_shape)
    axes = tuple(a for a, s in shape.items() if s > 1) or tuple(shape)
    plans: list[Plan] = []
    skipped: dict[str, str] = {}
    step = transformer_step(cfg, batch, dtype)
    for name in ("data", "megatron", "mesh2d"):
        rules = _rules(name, axes)
        if isinstance(rules, str):
            skipped[name] = rules
            continue
        try:
            plans.append(evaluate_layout(step, shape, rules, hardware, label=name))
        except LayoutError as e:
            skipped[name] = str(e)
    mesh = _tesseract_mesh(shape)
    if isinstance(mesh, str):
        skipped["tesseract"] = mesh
    else:
        try:
            t_step = transformer_step(cfg, batch, dtype, strategy="tesseract")
            plans.append(evaluate_layout(t_step, mesh, {}, hardware, label="tesseract"))
        except LayoutError as e:
            skipped["tesseract"] = str(e)
    return plans, skipped
