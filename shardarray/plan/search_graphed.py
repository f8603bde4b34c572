"""The layout search from op graphs: each step recorded once per path, each rule set priced by a walk.

``plan.search``'s default (``graph=True``): the same cuts as the traced search (``plan.search_traced``) on the
same figures, plus the compute, memory-bound and comm floors before any walk (``plan.floor``) and the deferral of
exact figures to the rule sets that can place (``Deferred``). ``tests/plan/test_plan_graph.py`` holds its plans
and figures to the traced search's.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ArgumentError, LayoutError
from ..hardware import HardwareProfile
from . import ranking
from .deep import deep_graphs
from .evaluate import check_mesh_shape
from .fit import no_fit_message
from .floor import compute_floor, layer_floor
from .graph import Figures, GraphSet, Stop
from .model import Plan
from .ranking import ROUNDING, SAME, TINY, SearchStats, keep, plan_of
from .record import GraphMemo
from .space import Rules
from .steps import Step
from .symmetry import orbit_key


def search_graphed(
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
    memo: GraphMemo,
) -> dict[tuple, tuple[Plan, int]]:
    """``search_traced`` with every rule set priced from op graphs (``plan.graph``) instead of traces: the same
    cuts (the one-layer bound with its floor, the affine rule in the layer count, the k-th best time,
    the memory limit) on the same figures, each step (one layer, two, all) recorded once per path."""
    found: dict[tuple, tuple[Plan, int]] = {}
    simplest: dict[tuple, int] = {}
    cut = math.inf
    cache: dict[tuple, float] = {}
    seen: set[tuple] = set()
    shape = check_mesh_shape(mesh_shape)
    full = deep_graphs(step, shape, hw, memo, cache)  # (a deep step's paths built from a shallow twin's: plan.deep)
    compute = compute_floor(step, shape, hw) if prune and ranking.COMPUTE_FLOOR else None
    # what the layers the one-layer step leaves out add at least; with the compute floor, (L - 1) layer floors
    # (each layer's flops group by group, never less than ``layer_floor``'s flops over every device)
    floor = layer_floor(step, mesh_shape, hw) if bound is not None and compute is None else 0.0
    one = GraphSet(bound, shape, hw, memo, cache) if bound is not None else None
    two_step = getattr(step, "two_layers", None) if bound is not None and ranking.AFFINE_LAYERS else None
    layers = getattr(step, "layers", 0) or 0
    two = None
    if two_step is not None and layers > 2 and two_step is not step:
        two = GraphSet(two_step, shape, hw, memo, cache)
    sets = [g for g in (full, one, two) if g is not None]
    # the exact figures deferred to the end for the rule sets the affine rule prices (see ``Deferred``)
    defer = Deferred(top_k, layers) if two is not None and prune and ranking.DEFER else None

    def exact(rules: Rules, i: int, bar: float, c_all: float) -> None:
        """Price ``rules`` from the step's own graphs; keep it in ``found`` unless it passes ``bar`` or the limit."""
        stats.full_walks += 1
        try:
            fig = full.figures(rules, bar * ROUNDING if prune else math.inf, limit, compute=c_all)
        except Stop:
            stats.stopped_time += 1
            return
        if fig.memory_bytes > limit:
            stats.stopped_memory += 1
            return
        if prune and fig.step_time_s > bar:
            stats.stopped_time += 1
            return
        stats.complete += 1
        keep(found, simplest, plan_of(fig, rules, shape, hw), i)

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
        try:
            rest = floor
            c_one = c_layer = c_all = 0.0  # floors under the compute time of one layer's step, a layer, the step
            if compute is not None and cut < math.inf:
                c_all = compute.time(rules)
                if c_all > cut * ROUNDING:
                    stats.stopped_bound += 1
                    stats.compute_cuts += 1
                    continue
                # with the floors under the memory-bound and comm times (the cost model adds the three)
                bar = c_all + (compute.memory(rules) if ranking.COMM_FLOOR else 0.0)
                if bar > cut * ROUNDING or (ranking.COMM_FLOOR and bar + compute.comm(rules) > cut * ROUNDING):
                    stats.stopped_bound += 1
                    stats.compute_cuts += 1
                    if bar > cut * ROUNDING:
                        stats.memory_cuts += 1
                    else:
                        stats.comm_cuts += 1
                    continue
                c_one, c_layer = compute.one(rules), compute.layer(rules)
                rest = (layers - 1) * (compute.layer_all(rules) if ranking.COMM_FLOOR else c_layer)
            if one is not None and (cut < math.inf or defer is not None):
                top = cut * ROUNDING
                try:
                    f1 = one.figures(rules, top - rest, compute=c_one)
                except Stop:
                    stats.stopped_bound += 1
                    continue
                t1 = f1.step_time_s
                if two is not None:
                    f2 = None
                    try:  # t(L) = t1 + (L - 1)(t2 - t1) passes the cut as soon as t2 passes this
                        f2 = two.figures(rules, t1 + (top - t1) / (layers - 1), compute=c_one + c_layer)
                        t2 = f2.step_time_s
                    except Stop:
                        t2 = math.inf
                    if t1 + (layers - 1) * (t2 - t1) > top:
                        stats.stopped_bound += 1
                        stats.affine_cuts += 1
                        continue
                    if defer is not None and f2 is not None and defer.add(f1, f2, limit, i, rules):
                        stats.deferred += 1
                        cut = defer.cut(found, stats)
                        continue
            # (a cut that counts deferred rule sets is their figures' to rounding: an exact time at it is kept)
            exact(rules, i, cut * ROUNDING if defer is not None else cut, c_all)
        except LayoutError:
            stats.refused += 1
            continue
        if defer is not None:
            cut = defer.cut(found, stats)
        else:
            times = sorted(k[0] for k in found)
            if len(times) >= top_k:
                cut = times[top_k - 1]
    if defer is not None:  # the deferred rule sets in their order of time, until the next cannot make the top k
        for n, (t, _, _, i, rules) in enumerate(defer.items):
            times = sorted(k[0] for k in found)
            bar = times[top_k - 1] if len(times) >= top_k else math.inf
            if t > bar * ROUNDING:  # (its exact time is its extrapolation's to rounding: past the k-th)
                stats.stopped_bound += len(defer.items) - n
                stats.affine_cuts += len(defer.items) - n
                break
            stats.deferred_priced += 1
            try:
                exact(rules, i, bar, compute.time(rules) if compute is not None and bar < math.inf else 0.0)
            except LayoutError:
                stats.refused += 1
    if progress is not None:
        progress(len(rule_sets), len(rule_sets))
    stats.graph_paths = sum(len(g.graphs) for g in sets)
    stats.traces = sum(g.traces for g in sets)
    stats.full_traces = full.traces
    if not found:  # the least memory any layout needs, from the same graphs
        raise ArgumentError(no_fit_message(step, mesh_shape, rule_sets, hw, limit, full))
    return found


class Deferred:
    """The rule sets whose exact figures a graph search defers: their figures from the affine rule, and the cut.

    After a rule set's complete one- and two-layer walks, the affine rule gives its step time, comm bytes and flops
    (every summed figure) to rounding: ``t(L) = t1 + (L - 1)(t2 - t1)``. Only the peak memory needs the step's own
    walk (or the deep path's probe and traces, ``plan.deep``). Where the memory limit cannot bind, the rule set is
    kept here instead, priced exactly at the end only if it can make the top k. The limit cannot bind when it is
    infinite, or when a proven bound of the step's peak is within it: the live bytes never pass the bytes made live
    in the whole walk (``Figures.allocated_bytes``, a summed figure, affine too) plus the largest live-memory
    excursion of an op, which is at most the one- or two-layer walk's peak (the deep step runs the same ops).

    The cut (the k-th best distinct time) counts the exact figures found and these: a rule set kept here counts
    unless its time, comm bytes and flops are those of an exact cost or of another one counted to ``SAME``
    (relative), so that two counted never stand for one exact cost; counting fewer can only make the cut looser,
    never wrong. Its time is the exact one's to rounding, which the cut's ``ROUNDING`` margin absorbs. A rule set
    kept here whose time passes the cut is dropped (it is an affine cut). At the end they are priced exactly in
    order of time until the next one's time passes the k-th best exact time; ties are broken as always (``keep``),
    so the answer, and every figure of it, is the search's without deferral.

    Args:
        top_k: the plans the search returns.
        layers: the step's layer count ``L``.
    """

    def __init__(self, top_k: int, layers: int) -> None:
        self.top_k, self.layers = top_k, layers
        self.items: list[tuple[float, float, float, int, Rules]] = []  # (time, comm bytes, flops, index, rules)

    def add(self, one: Figures, two: Figures, limit: float, i: int, rules: Rules) -> bool:
        """Keep rule set ``i`` from its one- and two-layer walks' figures if the memory limit cannot bind."""
        k = self.layers - 1
        if limit < math.inf:
            made = one.allocated_bytes + k * (two.allocated_bytes - one.allocated_bytes)
            if not made + max(one.memory_bytes, two.memory_bytes) <= limit:
                return False
        t = one.step_time_s + k * (two.step_time_s - one.step_time_s)
        comm = one.comm_bytes + k * (two.comm_bytes - one.comm_bytes)
        flops = one.flops + k * (two.flops - one.flops)
        bisect.insort(self.items, (t, comm, flops, i, rules), key=lambda x: (x[0], x[3]))
        return True

    def cut(self, found: Mapping[tuple, Any], stats: SearchStats) -> float:
        """The k-th best distinct time of the exact costs ``found`` and the rule sets kept here (see the class);
        drops the ones kept whose time passes it."""
        exact = sorted((k[0], k[2], k[3]) for k in found)
        times = [e[0] for e in exact]
        counted: list[tuple] = []
        for c in self.items:
            t = c[0]
            lo = bisect.bisect_left(times, t / (1.0 + SAME) - TINY)
            hi = bisect.bisect_right(times, t * (1.0 + SAME) + TINY)
            if any(_same(c, e) for e in exact[lo:hi]):
                continue
            n = len(counted) - 1
            while n >= 0 and counted[n][0] >= t / (1.0 + SAME) - TINY and not _same(c, counted[n]):
                n -= 1
            if n >= 0 and counted[n][0] >= t / (1.0 + SAME) - TINY:
                continue
            counted.append(c)
        every = sorted(times + [c[0] for c in counted])
        bar = every[self.top_k - 1] if len(every) >= self.top_k else math.inf
        n = bisect.bisect_right(self.items, bar * ROUNDING, key=lambda x: x[0])
        if n < len(self.items):
            stats.stopped_bound += len(self.items) - n
            stats.affine_cuts += len(self.items) - n
            del self.items[n:]
        return bar


def _same(a: tuple, b: tuple) -> bool:
    """Whether time, comm bytes and flops (the first three) agree to ``SAME`` (relative)."""
    return all(abs(x - y) <= SAME * max(abs(x), abs(y)) + TINY for x, y in zip(a[:3], b[:3]))
