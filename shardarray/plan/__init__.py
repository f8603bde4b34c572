"""The planner: price a step's layout on modeled hardware, and search for the best one.

    sa.plan.evaluate_layout(step, mesh_shape, rules, hardware="a100")   # one layout -> Plan
    sa.plan.search_layouts(step, mesh_shape, memory_limit_bytes=16 * 2**30, top_k=5)

``step(mesh)`` is any function of a mesh that builds its arrays under the
mesh's rules and runs a forward/backward (``transformer_step``,
``mlp_step``). Both run it on the meta backend under ``sa.profile()``; the
cost model is in ``plan.model``, the search space in ``plan.space``, the
search in ``plan.search`` (one rule set per orbit of interchangeable mesh
axes: ``plan.symmetry``; each op priced once per signature: ``plan.memo``;
rule sets priced from the step's op graph: ``plan.graph``, a deep model's
built from a shallow twin's: ``plan.deep``, and priced from a walk of its
seven-layer twin, the repeated layers scaled: ``plan.repeat``).

Example (Mesh-TF §8's MLP on a 2×2 mesh: the hand layout §8.3 against the search):
    >>> step = sa.plan.mlp_step(batch=64, d_io=32, d_hidden=128)
    >>> hand = sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, {"batch": "rows", "hidden": "cols"})
    >>> best = sa.plan.search_layouts(step, {"rows": 2, "cols": 2}, top_k=3)
    >>> len(best), best[0].step_time_s <= hand.step_time_s
    (3, True)
"""

from . import auto as auto  # sa.nn's strategy="auto" and its auto_* names, attached from there
from . import deep, floor, memo, model, repeat, space, symmetry
from .evaluate import evaluate_layout
from .explain import Explanation, GroupCost, explain_layout, explain_transformer
from .model import Plan
from .named import named_plans
from .search import SearchStats, candidates, search_layouts
from .steps import mlp_step, transformer_step

__all__ = [
    "Explanation",
    "GroupCost",
    "Plan",
    "SearchStats",
    "candidates",
    "deep",
    "evaluate_layout",
    "explain_layout",
    "explain_transformer",
    "floor",
    "memo",
    "mlp_step",
    "model",
    "named_plans",
    "repeat",
    "search_layouts",
    "space",
    "symmetry",
    "transformer_step",
]
