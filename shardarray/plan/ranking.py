"""What a layout search keeps and counts: its statistics, the distinct costs found, ties, and its switches.

A search (``plan.search``) reports each distinct cost once, as its simplest rule set (the fewest dims split, then
the fewest axes, then the earliest in the proxy order), whichever order the rule sets were priced in (``keep``).
The constants below are shared by the traced search (``plan.search_traced``) and the graph search
(``plan.search_graphed``); the switches let the benchmark and the tests turn a cut off to time or check the search
without it (the answer is the same).
"""

from __future__ import annotations

from dataclasses import replace

from ..hardware import HardwareProfile
from .graph import Figures
from .model import Plan
from .space import Rules

# A lower-bound trace sums the same terms in another order: allow its last bits to differ.
ROUNDING = 1.0 + 1e-9

# Two figures this close (relative) may be one exact figure extrapolated (``Deferred.cut``); far wider than the
# affine rule's rounding (1e-12), within the cut's margin (``ROUNDING``). ``TINY``: the same, absolute (zeros).
SAME = 1e-10
TINY = 1e-300

# The compute floor (``plan.floor``); the benchmark turns it off to time the search without it.
COMPUTE_FLOOR = True

# The floors under the memory-bound and comm times (``plan.floor``); the benchmark turns them off to time the
# search with the compute floor only.
COMM_FLOOR = True

# The affine rule in the layer count (``step.two_layers``); the benchmark turns it off to time the search without it.
AFFINE_LAYERS = True

# The exact figures of the rule sets the affine rule prices deferred to the end (``search_graphed.Deferred``); the
# benchmark and the tests turn it off to compare (the same answer).
DEFER = True


class TraceStop(BaseException):
    """Raised from the profile hook to end a trace that cannot make the top k (not an error)."""


class SearchStats:
    """What a search did: rule sets enumerated, priced in full, stopped early, refused."""

    def __init__(self) -> None:
        self.legal = self.complete = self.stopped_time = self.stopped_memory = self.refused = 0
        self.symmetric = 0  # rule sets skipped as a renaming of interchangeable axes of one priced
        self.stopped_bound = 0  # rule sets cut by a cheaper trace that costs no more (``step.lower_bound``)
        self.memo_hits = self.memo_misses = 0  # op calls replayed / run and recorded by the op memo (``plan.memo``)
        self.affine_cuts = 0  # of ``stopped_bound``: cut by the two-layer trace's extrapolation (the affine rule)
        self.compute_cuts = 0  # of ``stopped_bound``: cut by the floors alone (``plan.floor``), no walk
        self.memory_cuts = 0  # of ``compute_cuts``: cut only with the floor under the memory-bound time added
        self.comm_cuts = 0  # of ``compute_cuts``: cut only with the floor under the comm time added too
        self.graph_paths = self.traces = 0  # op graphs recorded (``plan.graph``) and the full traces that took
        self.deferred = 0  # rule sets kept with the figures of the affine rule, priced exactly only if they can place
        self.deferred_priced = 0  # of ``deferred``: priced exactly at the end (the others could not make the top k)
        self.full_walks = self.full_traces = 0  # the graph search's pricings of the step itself, and its traces

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))

    def __repr__(self) -> str:
        return f"SearchStats({self.as_dict()})"


def keep(found: dict[tuple, tuple[Plan, int]], simplest: dict[tuple, int], plan: Plan, i: int) -> None:
    """Add rule set ``i``'s ``plan`` to ``found``: each distinct cost once, as its simplest rule set (then the
    earliest), with the first index that had it."""
    key = cost_key(plan)
    if key not in found:
        found[key], simplest[key] = (plan, i), i
    else:
        kept, first = found[key]
        if (split_size(plan), i) < (split_size(kept), simplest[key]):
            kept, simplest[key] = plan, i
        found[key] = (kept, min(first, i))


def plan_of(fig: Figures, rules: Rules, mesh_shape: dict[str, int], hw: HardwareProfile) -> Plan:
    return Plan(
        rules={d: tuple(a) for d, a in rules.items() if a},
        mesh_shape=dict(mesh_shape),
        step_time_s=fig.step_time_s,
        compute_time_s=fig.compute_time_s,
        memory_time_s=fig.memory_time_s,
        comm_time_s=fig.comm_time_s,
        memory_bytes_per_device=int(fig.memory_bytes),
        comm_bytes_per_device=fig.comm_bytes,
        wire_bytes_per_device=fig.wire_bytes,
        flops_per_device=fig.flops,
        hardware=hw.name,
    )


def split_size(plan: Plan) -> tuple[int, int]:
    """How much a rule set splits: dims split, then axes used (of two with equal costs, the smaller is kept)."""
    return len(plan.rules), sum(len(x) for x in plan.rules.values())


def cost_key(plan: Plan) -> tuple[float, int, float, float]:
    return (plan.step_time_s, plan.memory_bytes_per_device, plan.comm_bytes_per_device, plan.flops_per_device)


def relabel(plan: Plan, label: str) -> Plan:
    """``plan`` under another label (``search #1`` ...)."""
    return replace(plan, label=label)
