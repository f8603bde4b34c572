"""``search_layouts``: the best Mesh-TF layout rules for a step, exact under the cost model.

The search (Tofu §4's goal, by branch and bound instead of its recursion):

1. **Discover** the tensors: one trace of ``step`` with no rules gives every
   dim, its size and the dim tuple of every tensor.
2. **Enumerate** the legal rule sets (``plan.space``): each dim unsplit, on
   one axis or on an ordered tuple of axes; no axis twice in a tensor.
3. **Order** them by a cheap proxy (elements per device over all tensors),
   so that good layouts are priced first.
4. **Price** each with ``evaluate_layout`` on the meta backend, stopping a
   trace as soon as its running time passes the k-th best complete time, or
   its live memory passes the limit. Time and peak memory only grow during a
   trace, so a stopped rule set could not have made the top k: the result
   is what pricing every legal rule set in full would give.

Two reductions keep the answer exact and cut the work:

* **Symmetric mesh axes** (``plan.symmetry``): axes of one size whose
  swap leaves every collective's modeled link unchanged (both inside a node,
  say) make rule sets that are renamings of each other cost the same; one
  rule set per orbit is priced, the first in the proxy order, which is the
  one the full search would report (equal costs count once, first found).
* **Memoised sub-steps**: every collective's time is priced once per
  ``(op, axes, group size, wire bytes)`` across all rule sets of a search
  (one cache shared by their clocks), not once per trace.

Tofu's coarsening lives in the tracer: identical blocks (every layer's,
every replica's) are computed once per operand shape on the meta backend.
Layers share their decisions because they share their dim names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ArgumentError, LayoutError
from ..hardware import HardwareProfile, get_profile
from ..profiler import Profile
from .evaluate import check_mesh_shape, check_step, evaluate_layout
from .model import Clock, Plan
from .space import Rules, legal_rule_sets, local_elements
from .symmetry import axis_symmetries, orbit_key
from .steps import Step


class _Stop(BaseException):
    """Raised from the profile hook to end a trace that cannot make the top k (not an error)."""


class SearchStats:
    """What a search did: rule sets enumerated, priced in full, stopped early, refused."""

    def __init__(self) -> None:
        self.legal = self.complete = self.stopped_time = self.stopped_memory = self.refused = 0
        self.symmetric = 0  # rule sets skipped as a renaming of interchangeable axes of one priced

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))

    def __repr__(self) -> str:
        return f"SearchStats({self.as_dict()})"


def discover(step: Step, mesh_shape: Mapping[str, int]) -> Profile:
    """Trace ``step`` once on a meta mesh without rules: its dims, their sizes and its tensors."""
    from ..mesh import Mesh
    from ..profiler import profile

    mesh = Mesh(check_mesh_shape(mesh_shape), backend="meta")
    with profile() as prof:
        step(mesh)
    return prof


def candidates(step: Step, mesh_shape: Mapping[str, int], dims: Any = None) -> list[Rules]:
    """The legal rule sets of ``step`` on ``mesh_shape``, in the order the search prices them.

    Args:
        dims: search only these dims (the others stay unsplit); None: every dim.
    """
    prof = discover(step, mesh_shape)
    sizes = prof.dims if dims is None else {d: prof.dims[d] for d in dims if d in prof.dims}
    tensors = [tuple(d for d in t if d in sizes) for t in prof.tensors]
    out = list(legal_rule_sets(sizes, tensors, mesh_shape))
    out.sort(key=lambda r: local_elements(r, prof.dims, prof.tensors, mesh_shape))
    return out


def search_layouts(
    step: Step,
    mesh_shape: Mapping[str, int],
    memory_limit_bytes: float | None = None,
    hardware: str | HardwareProfile = "a100",
    top_k: int = 5,
    *,
    dims: Any = None,
    prune: bool = True,
    symmetric: bool = True,
    progress: Callable[[int, int], None] | None = None,
    stats: SearchStats | None = None,
) -> list[Plan]:
    """The ``top_k`` layouts of ``step`` with the least modeled step time that fit the memory limit.

    Args:
        step: a function of a mesh, as for ``evaluate_layout`` (its arrays
            follow the mesh's rules).
        mesh_shape: ``{axis: size}``, major axis first.
        memory_limit_bytes: peak live bytes allowed per device (None: no limit).
        hardware: a profile name of ``sa.hardware.PROFILES`` or a profile.
        top_k: how many plans to return.
        dims: search only these dims (the others stay unsplit); None: all.
        prune: stop traces that cannot make the top k (False prices every
            rule set in full: the same answer, slower).
        symmetric: price one rule set per orbit of the mesh's interchangeable
            axes (``plan.symmetry``; False: every rule set, the same answer).
        progress: called as ``progress(done, total)`` after each rule set.
        stats: filled with what the search did.

    Returns:
        Plans sorted best first by ``step_time_s`` (ties: less memory, then
        the proxy order), labelled ``search #1`` ... Rule sets with exactly
        the same costs (a rule on a dim no tensor takes its layout from, say)
        count once, as the one splitting the fewest dims.

    Raises:
        ArgumentError: no legal rule set fits ``memory_limit_bytes``; the message
            gives the least memory any layout needs and its rules.

    Example (Mesh-TF §8's MLP on a 2×2 mesh):
        >>> step = sa.plan.mlp_step(batch=64, d_io=32, d_hidden=128)
        >>> best = sa.plan.search_layouts(step, {"rows": 2, "cols": 2}, top_k=1)[0]
        >>> best.step_time_s <= sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, {"batch": "rows", "hidden": "cols"}).step_time_s
        True
    """
    check_step(step, "search_layouts")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ArgumentError(f"search_layouts needs top_k >= 1; got {top_k!r}")
    if memory_limit_bytes is not None and not memory_limit_bytes > 0:
        raise ArgumentError(
            f"search_layouts: memory_limit_bytes must be positive (bytes per device, e.g. 16 * 2**30); "
            f"got {memory_limit_bytes!r}"
        )
    hw = get_profile(hardware)
    stats = stats if stats is not None else SearchStats()
    rule_sets = candidates(step, mesh_shape, dims)
    stats.legal = len(rule_sets)
    limit = math.inf if memory_limit_bytes is None else float(memory_limit_bytes)
    symmetries = axis_symmetries(check_mesh_shape(mesh_shape), hw) if symmetric else []
    found = _search(step, mesh_shape, rule_sets, hw, limit, top_k, prune, symmetries, progress, stats)
    if not found:
        raise ArgumentError(_no_fit_message(step, mesh_shape, rule_sets, hw, limit))
    ranked = sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[1][1]))[:top_k]
    return [_relabel(plan, f"search #{n}") for n, (_, (plan, _)) in enumerate(ranked, 1)]


def _search(step: Step, mesh_shape: Mapping[str, int], rule_sets: list[Rules], hw: HardwareProfile, limit: float,
            top_k: int, prune: bool, symmetries: list[dict[str, str]],
            progress: Callable[[int, int], None] | None, stats: SearchStats) -> dict[tuple, tuple[Plan, int]]:
    """Branch and bound over ``rule_sets`` in order: ``{costs: (plan, index of the first with them)}``."""
    found: dict[tuple, tuple[Plan, int]] = {}  # distinct costs -> the simplest rule set with them
    cut = [math.inf]  # the k-th best distinct time so far
    cache: dict[tuple, float] = {}  # collective times, shared by every rule set
    seen: set[tuple] = set()  # orbits under the mesh's axis symmetries already priced

    def watch(prof: Profile, clock: Clock) -> None:
        if prof.peak_memory_bytes_per_device > limit:
            stats.stopped_memory += 1
            raise _Stop
        if prune and clock.total(prof) > cut[0]:
            stats.stopped_time += 1
            raise _Stop

    for i, rules in enumerate(rule_sets):
        if progress is not None and i:
            progress(i, len(rule_sets))
        if symmetries:
            key = orbit_key(rules, symmetries)
            if key in seen:
                stats.symmetric += 1
                continue
            seen.add(key)
        try:
            plan = evaluate_layout(step, mesh_shape, rules, hw, watch=watch, cache=cache)
        except _Stop:
            continue
        except LayoutError:
            stats.refused += 1
            continue
        stats.complete += 1
        if plan.memory_bytes_per_device <= limit:
            key = _cost(plan)
            if key not in found or _simpler(plan, found[key][0]):
                found[key] = (plan, found[key][1] if key in found else i)
            times = sorted(k[0] for k in found)
            if len(times) >= top_k:
                cut[0] = times[top_k - 1]
    if progress is not None:
        progress(len(rule_sets), len(rule_sets))
    return found


def _cost(plan: Plan) -> tuple[float, int, float, float]:
    return (plan.step_time_s, plan.memory_bytes_per_device, plan.comm_bytes_per_device, plan.flops_per_device)


def _simpler(a: Plan, b: Plan) -> bool:
    """Of two rule sets with the same costs, keep the one that splits fewer dims over fewer axes."""
    size = lambda p: (len(p.rules), sum(len(x) for x in p.rules.values()))  # noqa: E731
    return size(a) < size(b)


def _relabel(plan: Plan, label: str) -> Plan:
    from dataclasses import replace

    return replace(plan, label=label)


def least_memory(step: Step, mesh_shape: Mapping[str, int], rule_sets: list[Rules],
                 hw: HardwareProfile) -> Plan | None:
    """The rule set with the least peak memory (branch and bound on memory)."""
    least: list[Plan] = []

    def watch(prof: Profile, clock: Clock) -> None:
        if least and prof.peak_memory_bytes_per_device >= least[0].memory_bytes_per_device:
            raise _Stop

    for rules in rule_sets:
        try:
            plan = evaluate_layout(step, mesh_shape, rules, hw, watch=watch)
        except (_Stop, LayoutError):
            continue
        least[:] = [plan]
    return least[0] if least else None


def _no_fit_message(step: Step, mesh_shape: Mapping[str, int], rule_sets: list[Rules],
                    hw: HardwareProfile, limit: float) -> str:
    low = least_memory(step, mesh_shape, rule_sets, hw)
    where = f"on mesh {dict(mesh_shape)}"
    if low is None:
        return f"no legal layout rule set runs {where}: every one of the {len(rule_sets)} was refused"
    return (
        f"no layout fits the memory limit of {limit / 2**30:.3f} GiB per device {where}: of {len(rule_sets)} legal "
        f"rule sets the least memory is {low.memory_bytes_per_device / 2**30:.3f} GiB per device "
        f"({low.describe()}). Raise memory_limit_bytes, use a larger mesh, or shrink the batch or model"
    )
