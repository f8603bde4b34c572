"""The layout search by traces: each rule set's step run on the meta backend, stopped at the cuts.

``plan.search`` takes this path with ``graph=False`` (the graph search, ``plan.search_graphed``, is the default
and gives the same answer); it is the reference the graph search is checked against. The cuts are the ones the
``plan.search`` docstring lists: the k-th best time, the memory limit, the one-layer bound trace (while it pays:
``_BoundGain``) and the affine rule in the layer count (while it pays: ``_Chooser``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

from ..errors import LayoutError
from ..hardware import HardwareProfile
from ..profiler import Profile
from . import ranking
from .evaluate import evaluate_layout
from .floor import layer_floor
from .memo import OpMemo
from .model import Clock, Plan
from .ranking import ROUNDING, SearchStats, TraceStop, keep
from .space import Rules
from .steps import Step
from .symmetry import orbit_key


def search_traced(
    step: Step,
    bound: Step | None,
    mesh_shape: Mapping[str, int],
    rule_sets: list[Rules],
    order: list[int],
    hw: HardwareProfile,
    limit: float,
    top_k: int,
    prune: bool,
    symmetries: list[dict[str, str]],
    progress: Callable[[int, int], None] | None,
    stats: SearchStats,
    memo: OpMemo | None = None,
) -> dict[tuple, tuple[Plan, int]]:
    """Branch and bound over ``rule_sets``: ``{costs: (plan, index of the first with them in rule_sets)}``.

    ``bound``: a step costing no more than ``step`` under any rules (its one-layer version), traced
    first; passing the cut there cuts the rule set without its full trace. The rule sets are priced
    in ``order`` (``pricing_order``: the seeds first, to set a tight cut early); ties keep the
    meaning of the proxy order: each distinct cost is reported as its simplest rule set, and equal
    simplicity goes to the earlier index, whatever order they were priced in.
    """
    found: dict[tuple, tuple[Plan, int]] = {}  # distinct costs -> (simplest rule set with them, first index)
    cut = [math.inf]  # the k-th best distinct time so far
    cache: dict[tuple, float] = {}  # collective times, shared by every rule set
    seen: set[tuple] = set()  # orbits under the mesh's axis symmetries already priced

    def watch(prof: Profile, clock: Clock) -> None:
        if prof.peak_memory_bytes_per_device > limit:
            stats.stopped_memory += 1
            raise TraceStop
        if prune and clock.total(prof) > cut[0]:
            stats.stopped_time += 1
            raise TraceStop

    floor = layer_floor(step, mesh_shape, hw) if bound is not None else 0.0
    two = getattr(step, "two_layers", None) if bound is not None and ranking.AFFINE_LAYERS else None
    layers = getattr(step, "layers", 0) or 0
    if two is None or layers <= 2 or two is step:
        two = None  # the affine rule needs a two-layer step that is cheaper than the step itself
    one_time = [0.0]  # the one-layer step time of the rule set being priced (the affine rule's intercept)

    def watch_two(prof: Profile, clock: Clock) -> None:
        # t(L) = t(1) + (L - 1) (t(2) - t(1)), and the running t(2) only grows: a lower bound on t(L)
        if one_time[0] + (layers - 1) * (clock.total(prof) - one_time[0]) > cut[0] * ROUNDING:
            stats.stopped_bound += 1
            stats.affine_cuts += 1
            raise TraceStop

    def watch_bound(prof: Profile, clock: Clock) -> None:
        if clock.total(prof) + floor > cut[0] * ROUNDING:
            stats.stopped_bound += 1
            raise TraceStop

    simplest: dict[tuple, int] = {}  # costs -> index of the plan kept
    gain = _BoundGain()
    chain = _Chooser()  # whether the one- and two-layer traces (the affine rule) pay on this search

    def price_one(rules: Rules, affine: bool) -> Plan:
        if bound is not None and cut[0] < math.inf and (affine or gain.worth_it()):
            t0 = time.perf_counter()
            try:
                one = evaluate_layout(bound, mesh_shape, rules, hw, watch=watch_bound, cache=cache, memo=memo)
            except TraceStop:
                gain.bound(time.perf_counter() - t0, cut=True)
                raise
            gain.bound(time.perf_counter() - t0, cut=False)
            if affine and two is not None:
                one_time[0] = one.step_time_s
                t2 = evaluate_layout(two, mesh_shape, rules, hw, watch=watch_two, cache=cache, memo=memo)
                if one.step_time_s + (layers - 1) * (t2.step_time_s - one.step_time_s) > cut[0] * ROUNDING:
                    stats.stopped_bound += 1  # (the watch sees the final totals too; this is a safeguard)
                    stats.affine_cuts += 1
                    raise TraceStop
        t0 = time.perf_counter()
        try:
            return evaluate_layout(step, mesh_shape, rules, hw, watch=watch, cache=cache, memo=memo)
        finally:
            gain.full(time.perf_counter() - t0)

    for n, i in enumerate(order):
        rules = rule_sets[i]
        if progress is not None and n:
            progress(n, len(rule_sets))
        if symmetries:
            key = orbit_key(rules, symmetries)
            if key in seen:
                stats.symmetric += 1
                continue
            seen.add(key)
        timed = two is not None and cut[0] < math.inf
        affine = timed and chain.pick()
        start = time.perf_counter()
        try:
            plan = price_one(rules, affine)
        except TraceStop:
            continue
        except LayoutError:
            stats.refused += 1
            continue
        finally:
            if timed:
                chain.add(affine, time.perf_counter() - start)
        stats.complete += 1
        if plan.memory_bytes_per_device <= limit:
            keep(found, simplest, plan, i)
            times = sorted(k[0] for k in found)
            if len(times) >= top_k:
                cut[0] = times[top_k - 1]
    if progress is not None:
        progress(len(rule_sets), len(rule_sets))
    return found


class _BoundGain:
    """Whether the bound trace pays: the share of rule sets it cuts times a full trace's mean wall time
    against its own (measured as the search goes; the answer is the same either way, only the time differs)."""

    def __init__(self) -> None:
        self.tries = self.cuts = self.fulls = 0
        self.bound_s = self.full_s = 0.0

    def worth_it(self) -> bool:
        if self.tries < 16 or self.fulls < 4 or self.fulls % 64 == 0:  # measure first, look again now and then
            return True
        return self.cuts / self.tries * self.full_s / self.fulls > self.bound_s / self.tries

    def bound(self, seconds: float, cut: bool) -> None:
        self.tries, self.cuts, self.bound_s = self.tries + 1, self.cuts + cut, self.bound_s + seconds

    def full(self, seconds: float) -> None:
        self.fulls, self.full_s = self.fulls + 1, self.full_s + seconds


class _Chooser:
    """Whether to price a rule set through the affine rule (one- and two-layer traces first) or by its full
    trace alone, stopped at the cut: the mean wall time per rule set of each, measured as the search goes
    (both at first, then the cheaper, trying the other now and then). The answer is the same either way."""

    def __init__(self) -> None:
        self.n = [0, 0]
        self.s = [0.0, 0.0]
        self.calls = 0

    def pick(self) -> bool:
        self.calls += 1
        n, s = self.n, self.s
        if n[0] < 8 or n[1] < 8:
            return n[1] <= n[0]
        if self.calls % 32 == 0:  # look at the other again now and then: the later rule sets stop sooner
            return not s[1] / n[1] <= s[0] / n[0]
        return s[1] / n[1] <= s[0] / n[0]

    def add(self, affine: bool, seconds: float) -> None:
        self.n[affine] += 1
        self.s[affine] += seconds
