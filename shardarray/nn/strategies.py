"""Named parallelization strategies: Mesh-TF layout rules for the reference transformer.

A strategy is a set of layout rules ``{dim: mesh axes}``; parameters take the
rules restricted to their dims, and the token batch's layout decides how
activations are split. Axis names are a convention; a strategy checks them.

=============  =================  ==================================================
strategy       mesh axes          rules
=============  =================  ==================================================
replicated     any                nothing is split
data           any                batch over every axis
megatron       model [, data]     heads, d_ff, vocab over model; batch over data
mesh2d         rows, cols         batch over rows; heads, d_ff, vocab over cols (§9)
=============  =================  ==================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import LayoutError
from ..mesh import Mesh

STRATEGIES: tuple[str, ...] = ("replicated", "data", "megatron", "mesh2d")

_NEEDS = {"megatron": (("model",), ("data",)), "mesh2d": (("rows", "cols"), ())}


def _axes_of(mesh: Mesh | Mapping[str, int]) -> tuple[str, ...]:
    return mesh.axis_names if isinstance(mesh, Mesh) else tuple(mesh)


def strategy_rules(strategy: str, mesh: Mesh | Mapping[str, int]) -> dict[str, Any]:
    """The layout rules of a named strategy on a mesh (or mesh shape).

    Raises:
        LayoutError: the strategy is unknown or the mesh lacks (or has extra)
            axes it needs, naming them.

    Example:
        >>> sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2})
        {'batch': 'rows', 'heads': 'cols', 'd_ff': 'cols', 'vocab': 'cols'}
        >>> mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2}))
    """
    axes = _axes_of(mesh)
    if strategy not in STRATEGIES:
        raise LayoutError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES} (or None for the mesh's rules)")
    if strategy == "replicated":
        return {}
    if strategy == "data":
        return {"batch": axes} if axes else {}
    required, optional = _NEEDS[strategy]
    missing = [a for a in required if a not in axes]
    extra = [a for a in axes if a not in required + optional]
    if missing or extra:
        raise LayoutError(
            f"strategy {strategy!r} needs mesh axes {required}" + (f" (optionally {optional})" if optional else "")
            + f"; the mesh has axes {axes}"
            + (f", missing {tuple(missing)}" if missing else "")
            + (f", and {tuple(extra)} would only hold copies" if extra else "")
            + f". Build it as sa.Mesh({{{', '.join(repr(a) + ': n' for a in required)}}})"
        )
    if strategy == "megatron":
        rules: dict[str, Any] = {"batch": "data"} if "data" in axes else {}
        return {**rules, "heads": "model", "d_ff": "model", "vocab": "model"}
    return {"batch": "rows", "heads": "cols", "d_ff": "cols", "vocab": "cols"}
