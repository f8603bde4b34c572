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
tesseract      row, col, dep      batch over (data, dep, row); weights {input dim: row,
               [, data]           output dims: col} (``param_layout``)
=============  =================  ==================================================

Tesseract (tesseract.txt §3.2, Fig. 5) is not a set of Mesh-TF rules: d_model
is split over ``col`` in the activations but over ``row`` in the weights that
contract it. ``strategy_rules("tesseract", mesh)`` holds only the batch (for
the tokens); ``param_layout`` gives each parameter its own layout, so build
them with ``init_transformer(..., strategy="tesseract")``; the activations'
layouts {batch: (dep, row), d_model / heads / d_ff / vocab: col} follow.
The matmuls then fit the Tesseract pattern and run as Tesseract (SUMMA in each
depth layer); activations are [b/(d·q), s, h/q] per device, weights [h/q, 4h/q]
replicated over depth, heads split over ``col``, layer norm allreduces over
the row of processors, biases are replicated over rows (their gradients are
allreduced). An optional ``data`` axis adds data parallelism (Fig. 6); the
embedding table keeps its vocab unsplit so that lookups stay local.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import LayoutError, MeshError
from ..mesh import Mesh
from ..mesh import _parse_shape as parse_shape

STRATEGIES: tuple[str, ...] = ("replicated", "data", "megatron", "mesh2d", "tesseract")

#: ``strategy="auto"`` of ``init_transformer``: ``AUTO["choose"](cfg, mesh, batch, hardware, memory_limit_bytes,
#: dtype)`` returns the searched rules. Filled by ``plan.auto`` (the planner sits above this package).
AUTO: dict[str, Callable[..., dict[str, tuple[str, ...]]]] = {}

_NEEDS = {
    "megatron": (("model",), ("data",)),
    "mesh2d": (("rows", "cols"), ()),
    "tesseract": (("row", "col", "dep"), ("data",)),
}

# the dim of each weight that its matmul contracts with the activations: split over ``row``
_TESSERACT_INPUT = {
    "wq": "d_model",
    "wk": "d_model",
    "wv": "d_model",
    "wo": "heads",
    "w_in": "d_model",
    "w_out": "d_ff",
    "unembed": "d_model",
}


def _axes_of(mesh: Mesh | Mapping[str, int]) -> tuple[str, ...]:
    """The axis names of a mesh or mesh shape (``MeshError`` for anything else, or a size < 1, as ``sa.Mesh``)."""
    if isinstance(mesh, Mesh):
        return mesh.axis_names
    if not isinstance(mesh, Mapping):
        raise MeshError(
            f"strategy_rules takes a sa.Mesh or a mesh shape {{axis: size}}, e.g. {{'rows': 2, 'cols': 2}}; got "
            f"{type(mesh).__name__} {mesh!r:.60}"
        )
    return tuple(parse_shape(mesh)[0])


def strategy_rules(strategy: str, mesh: Mesh | Mapping[str, int]) -> dict[str, Any]:
    """The layout rules of a named strategy on a mesh (or mesh shape).

    Raises:
        LayoutError: the strategy is unknown or the mesh lacks (or has extra)
            axes it needs, naming them.
        MeshError: ``mesh`` is neither a ``sa.Mesh`` nor a mesh shape ``{axis: size}`` with sizes >= 1.

    Example:
        >>> sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2})
        {'batch': 'rows', 'heads': 'cols', 'd_ff': 'cols', 'vocab': 'cols'}
        >>> mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2}))
    """
    axes = _axes_of(mesh)
    if strategy == "auto":
        raise LayoutError(
            "strategy 'auto' searches the layout for a model, and strategy_rules has no model: use "
            "sa.nn.auto_rules(cfg, mesh_shape, batch) for the rules (then sa.Mesh(mesh_shape, rules=rules)), or "
            "sa.nn.init_transformer(cfg, mesh, strategy='auto')"
        )
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        close = difflib.get_close_matches(strategy, STRATEGIES, n=1) if isinstance(strategy, str) else []
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        raise LayoutError(
            f"unknown strategy {strategy!r}{guess}; choose one of {STRATEGIES} (or None for the mesh's rules; "
            f"'auto' for the planner's choice: sa.nn.auto_rules)"
        )
    if strategy == "replicated":
        return {}
    if strategy == "data":
        return {"batch": axes} if axes else {}
    required, optional = _NEEDS[strategy]
    missing = [a for a in required if a not in axes]
    extra = [a for a in axes if a not in required + optional]
    if missing or extra:
        raise LayoutError(
            f"strategy {strategy!r} needs mesh axes {required}"
            + (f" (optionally {optional})" if optional else "")
            + f"; the mesh has axes {axes}"
            + (f", missing {tuple(missing)}" if missing else "")
            + (f", and {tuple(extra)} would only hold copies" if extra else "")
            + f". Build it as sa.Mesh({{{', '.join(repr(a) + ': n' for a in required)}}})"
        )
    if strategy == "megatron":
        rules: dict[str, Any] = {"batch": "data"} if "data" in axes else {}
        return {**rules, "heads": "model", "d_ff": "model", "vocab": "model"}
    if strategy == "tesseract":
        _check_tesseract(mesh)
        return {"batch": tuple(a for a in ("data", "dep", "row") if a in axes)}
    return {"batch": "rows", "heads": "cols", "d_ff": "cols", "vocab": "cols"}


def _check_tesseract(mesh: Mesh | Mapping[str, int]) -> None:
    shape = mesh.shape if isinstance(mesh, Mesh) else dict(zip(*parse_shape(mesh)))
    q, c, d = shape["row"], shape["col"], shape["dep"]
    if q != c or d > q:
        raise LayoutError(
            f"strategy 'tesseract' needs a q×q×d mesh with row = col = q and 1 ≤ dep = d ≤ q; "
            f"the mesh has row={q}, col={c}, dep={d}. Build it as e.g. sa.Mesh({{'row': 2, 'col': 2, 'dep': 2}})"
        )


def param_layout(strategy: str | None, name: str, dims: tuple[str, ...], rules: Mapping[str, Any]) -> dict[str, Any]:
    """The layout of parameter ``name`` (dims ``dims``) under a strategy whose rules are ``rules``.

    Mesh-TF strategies (and None: the mesh's rules) restrict the rules to the
    parameter's dims; ``tesseract`` splits a weight's input dim over ``row``
    and its output dims over ``col`` (see the module docstring).

    Raises:
        LayoutError: an unknown strategy (a misspelt one gave the rules' layout without a word).

    Example:
        >>> rules = sa.nn.strategy_rules("tesseract", {"row": 2, "col": 2, "dep": 2})
        >>> sa.nn.param_layout("tesseract", "layer0.mlp.w_in", ("d_model", "d_ff"), rules)
        {'d_model': 'row', 'd_ff': 'col'}
    """
    if strategy is not None and strategy not in STRATEGIES:
        close = difflib.get_close_matches(strategy, STRATEGIES, n=1) if isinstance(strategy, str) else []
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        raise LayoutError(
            f"param_layout: unknown strategy {strategy!r}{guess}; choose one of {STRATEGIES}, or None for the "
            f"mesh's rules ('auto': pass the rules sa.nn.auto_rules gives with strategy=None)"
        )
    if strategy != "tesseract":
        return {d: rules[d] for d in dims if d in rules}
    spec = {d: "col" for d in dims if d in ("d_model", "heads", "d_ff", "vocab")}
    leaf = name.rsplit(".", 1)[-1]
    if leaf in _TESSERACT_INPUT:
        spec[_TESSERACT_INPUT[leaf]] = "row"
    if name == "embed":
        del spec["vocab"]
    return spec
