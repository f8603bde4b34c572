"""``search_layouts``: the best Mesh-TF layout rules for a step, exact under the cost model.

The search (Tofu §4's goal, by branch and bound instead of its recursion):

1. **Discover** the tensors: one trace of ``step`` with no rules gives every
   dim, its size and the dim tuple of every tensor (of a step of more than two
   identical layers, the trace of its two-layer twin: ``deep.shallow_twin``).
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

Two more cut the traces without changing the answer:

* **Seeds first** (``pricing_order``): the rule sets splitting at most one dim
  are priced before the rest, so the k-th best time (the cut) is tight from
  the start and the later traces stop sooner. Ties are broken by the proxy
  order whatever the pricing order (equal costs: the simplest rule set, then
  the earliest), so the result is the proxy-order search's.
* **A one-layer lower bound** (``step.lower_bound``, set by ``transformer_step``
  and ``mlp_step`` for more than one layer): the same step with one layer runs a
  subset of the step's ops, so under any rules it costs no more; and every
  further layer costs at least its einsums' flops over the device count
  (``plan.floor.layer_floor``, traced once on one device). A rule set whose one-layer
  trace plus that floor passes the cut is cut without its full trace. The
  search measures whether this pays (share cut × a full trace's wall time
  against the bound trace's) and stops tracing the bound where it does not.

* **The affine rule in the layer count** (``step.two_layers``, ``step.layers`` > 2): the
  layers are identical and share their dim names, so every summed figure of the step is affine
  in the layer count: ``t(L) = t(1) + (L - 1) · (t(2) - t(1))`` (each op's time, flops, bytes and
  collectives repeat per layer; ``tests/plan/test_plan_affine.py`` checks the step time, its parts,
  comm and wire bytes and flops of the extrapolation against full traces to 1e-12). Peak memory is
  a maximum, not a sum: the extrapolation is only a lower bound of it, so nothing is cut on it. After a complete
  one-layer trace the two-layer trace is run, stopped as soon as
  ``t(1) + (L - 1) · (running two-layer time - t(1))`` passes the cut (the running time only
  grows), and a rule set whose extrapolated time passes the cut is cut without its full trace.
  Only rule sets that could make the top k are traced in full, so their figures are bit for bit
  those of the full trace. Where the full trace's own early stop is already cheap (the cut falls
  early in the trace), the two short traces do not pay: the search measures both ways' wall time
  per rule set as it goes and takes the cheaper (``search_traced._Chooser``; the answer is the same).

* **Exact figures only where they can place** (``search_graphed.Deferred``, the graph search of a step the affine
  rule applies to): after a rule set's complete one- and two-layer walks, the affine rule gives every summed figure
  (step time, comm bytes, flops); only the peak memory needs the step's own walk (a deep step's probe walk and five-
  and six-layer traces). Where the memory limit cannot bind (no limit, or the bytes made live in the whole step plus
  an op's largest excursion, ``Figures.allocated_bytes``, fit it), the rule set is kept with those figures, counted
  in the cut, and priced exactly at the end only if its time can still make the top k. The plans and every figure
  are those of pricing each rule set at once (``ranking.DEFER = False``; ``tests/plan/test_plan_deferred.py``).

And one cuts most rule sets before any trace or walk:

* **The compute floor** (``plan.floor``; the graph search, the default, of steps that run the same ops on
  every mesh: ``transformer_step``, ``mlp_step``): an op's einsums are spread over at most the devices its
  dims are split over, so the device priced runs at least the op's single-device flops over that count.
  Summed over a few groups of ops (by the dims they touch), from one single-device trace, it is a floor
  under the rule set's compute time, found in a handful of divisions: a rule set whose floor passes the
  cut is cut. The floors of one layer and of the one-layer step also tighten the bound walks (the layers
  left out add at least ``L - 1`` layer floors, and a walk counts its compute time as at least its floor
  from the start). ``tests/plan/test_plan_floor.py`` checks the floor against traced compute times on
  2×2, 2×2×2 and uneven 3×2 meshes and the search against brute force.
* **The floors under the memory-bound and comm times** (``plan.floor``: ``ComputeFloor.memory``, and
  ``CommFloor`` from the allreduces a step declares it makes under every rule set, ``step.forced``): the
  cost model adds compute, memory-bound and comm times, so a rule set whose three floors together pass the
  cut is cut too (``SearchStats.memory_cuts``, ``comm_cuts``). Those floors see the collectives that decide
  the cuts of latency-bound and deep steps (``tests/plan/test_plan_comm_floor.py``: below traced times,
  and the same plans as brute force and as the search without them). A layer's three floors together
  (``ComputeFloor.layer_all``: its flops, its bytes and the allreduces one more layer declares) are what the
  one-layer bound walk counts for each of the ``L - 1`` layers it leaves out.

And one makes each trace cheaper without changing it:

* **A per-op memo** (``plan.memo.OpMemo``, one per search): an op runs once per
  (op, static arguments, operand signatures, rules of the dims it looks up);
  later calls, in later layers, the backward pass or other rule sets that agree
  on those dims, get fresh meta arrays of the recorded signatures and replay the
  recorded flops, collectives, bytes written and live-memory excursion, so every
  figure is bit for bit the one of running the op (``memo=False`` turns it off).
  Each VJP of the backward pass is memoised as one op (``OpMemo.call_vjp``).

And one prices most rule sets without a trace at all:

* **Record once, price many** (``plan.graph``, ``graph=True``, the default): each step (the one- and
  two-layer steps of the bounds too) is traced once per *path* through its Python into an op graph
  (each op, its static arguments, which arrays it takes and makes, when arrays die, the places where the
  Python reads a layout); a rule set is priced by walking the graph on array signatures, each op's
  figures from the memo entry for the rules of the dims it looks up (an op not seen with those is run
  alone on meta arrays). The figures are the full trace's (``tests/plan/test_plan_graph.py``, to 1e-12),
  so every cut above applies unchanged; a rule set that takes a path not recorded yet is traced once.
* **A deep model from its shallow twins** (``plan.deep``, ``plan.repeat``; at least 12 identical layers): its
  paths are built from its five-layer twin's (checked against the six-layer twin's), and a rule set is priced
  by walking the seven-layer path built the same way and scaling it: where the repeated layers' second and
  third copies start from the same walk state, every later copy repeats them, so the summed figures scale by
  the copies added and the peak is placed exactly (``tests/plan/test_plan_deep.py``, to 1e-12). A 96-layer
  search costs about what a six-layer one does.

Tofu's coarsening lives in the tracer: identical blocks (every layer's,
every replica's) are computed once per operand shape on the meta backend.
Layers share their decisions because they share their dim names.

Where each part lives: this module enumerates and orders the rule sets and takes one of two searches with the
same cuts and the same answer, ``plan.search_graphed`` (the default: op graphs walked) or ``plan.search_traced``
(``graph=False``: a trace per rule set, the reference); ``plan.ranking`` keeps the distinct costs found (ties: the
simplest rule set) and holds the switches the benchmark turns off; ``plan.fit`` finds the least memory any layout
needs when none fits the limit.
"""

from __future__ import annotations

import gc
import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..errors import ArgumentError
from ..hardware import HardwareProfile, get_profile
from ..mesh import Mesh
from ..profiler import Profile, profile
from .deep import shallow_twin
from .evaluate import check_mesh_shape, check_step
from .fit import no_fit_message
from .memo import OpMemo
from .model import Plan
from .ranking import SearchStats, relabel
from .record import GraphMemo
from .search_graphed import search_graphed
from .search_traced import search_traced
from .space import Rules, legal_rule_sets
from .steps import Step
from .symmetry import axis_symmetries

__all__ = ["SearchStats", "candidates", "check_memory_limit", "discover", "pricing_order", "search_layouts"]


def discover(step: Step, mesh_shape: Mapping[str, int]) -> Profile:
    """Trace ``step`` once on a meta mesh without rules: its dims, their sizes and its tensors."""

    mesh = Mesh(check_mesh_shape(mesh_shape), backend="meta")
    with profile() as prof:
        step(mesh)
    return prof


def candidates(step: Step, mesh_shape: Mapping[str, int], dims: Any = None) -> list[Rules]:
    """The legal rule sets of ``step`` on ``mesh_shape``, in the order the search prices them.

    Args:
        dims: search only these dims (the others stay unsplit); None: every dim.
    """
    dims = _dim_names(dims)
    prof = discover(shallow_twin(step), mesh_shape)  # (a deep step's dims and tensors are its shallow twin's)
    sizes = prof.dims if dims is None else {d: prof.dims[d] for d in dims if d in prof.dims}
    tensors = [tuple(d for d in t if d in sizes) for t in prof.tensors]
    out = list(legal_rule_sets(sizes, tensors, mesh_shape))
    out.sort(key=_proxy(prof.dims, prof.tensors, mesh_shape))
    return out


def _dim_names(dims: Any) -> tuple[str, ...] | None:
    """``dims`` as a tuple of dim names (None: every dim); ``ArgumentError`` for anything else."""
    names = None if dims is None or isinstance(dims, str) or not isinstance(dims, Iterable) else tuple(dims)
    if dims is not None and (names is None or not all(isinstance(d, str) for d in names)):
        raise ArgumentError(f"dims takes a tuple of dim names, e.g. dims=('batch', 'heads'), or None; got {dims!r}")
    return names


def check_memory_limit(memory_limit_bytes: Any, what: str) -> float:
    """The limit in bytes as a float (``inf``: None, ``inf`` or an integer past the float range: no limit).

    Raises:
        ArgumentError: ``memory_limit_bytes`` is not None nor a positive number of bytes.
    """
    limit = memory_limit_bytes
    if limit is None:
        return math.inf
    if isinstance(limit, bool) or not isinstance(limit, numbers.Real) or not _real(limit) > 0:
        raise ArgumentError(
            f"{what}: memory_limit_bytes must be a positive number (bytes per device, e.g. 16 * 2**30) or None; "
            f"got {limit!r}"
        )
    return _real(limit)


def _real(x: Any) -> float:
    """``float(x)``, an integer past the float range as an infinity of its sign (``float`` raises ``OverflowError``)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _proxy(sizes: Mapping[str, int], tensors: Any, mesh_shape: Mapping[str, int]) -> Callable[[Rules], float]:
    """``space.local_elements`` as a sort key, the same arithmetic (each axis tuple's device count once)."""
    tensors = list(tensors)
    split: dict[tuple[str, ...], int] = {(): 1}

    names = {d for dims in tensors for d in dims}

    def key(rules: Rules) -> float:
        part: dict[str, float] = {}  # each dim's size over its device count, once per rule set (the same quotients)
        for d in names:
            axes = rules.get(d, ())
            k = split.get(axes)
            if k is None:
                k = split[axes] = math.prod(mesh_shape[a] for a in axes)
            part[d] = sizes[d] / k
        total = 0.0
        for dims in tensors:
            n = 1.0
            for d in dims:
                n *= part[d]
            total += n
        return total

    return key


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
    seeds_first: bool = True,
    lower_bound: bool = True,
    memo: bool = True,
    progress: Callable[[int, int], None] | None = None,
    stats: SearchStats | None = None,
    graph: bool = True,
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
        seeds_first: price the rule sets splitting at most one dim first, to
            set a tight cut early (``pricing_order``; False: the proxy order,
            the same answer).
        lower_bound: when ``step`` has a ``lower_bound`` step (the same step
            with one layer: ``transformer_step``, ``mlp_step``), trace it first
            and skip the full trace when it already passes the cut (False:
            full traces only, the same answer).
        memo: run each op once per operand signature and the rules of the
            dims it looks up, and replay its results and profile events after
            (``plan.memo``; False: every op runs, the same answer).
        progress: called as ``progress(done, total)`` after each rule set.
        stats: filled with what the search did.
        graph: price rule sets from the step's op graph (``plan.graph``: the step traced once per path
            through its Python, then each rule set priced from the recorded ops and the memo, without
            running the step; needs ``memo``). False: a trace per rule set, the same answer.

    Returns:
        Plans sorted best first by ``step_time_s`` (ties: less memory, then
        the proxy order), labelled ``search #1`` ... Rule sets with exactly
        the same costs (a rule on a dim no tensor takes its layout from, say)
        count once, as the one splitting the fewest dims.

    Raises:
        ArgumentError: no legal rule set fits ``memory_limit_bytes``; the message
            gives the least memory any layout needs and its rules. Also a
            ``top_k``, ``memory_limit_bytes`` or ``dims`` of the wrong kind.
        MeshError: ``mesh_shape`` is not a mapping with at least one axis.

    Example (Mesh-TF §8's MLP on a 2×2 mesh):
        >>> step = sa.plan.mlp_step(batch=64, d_io=32, d_hidden=128)
        >>> best = sa.plan.search_layouts(step, {"rows": 2, "cols": 2}, top_k=1)[0]
        >>> megatron = sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, {"batch": "rows", "hidden": "cols"})
        >>> best.step_time_s <= megatron.step_time_s
        True
    """
    check_step(step, "search_layouts")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ArgumentError(f"search_layouts needs top_k >= 1; got {top_k!r}")
    limit = check_memory_limit(memory_limit_bytes, "search_layouts")
    hw = get_profile(hardware)
    stats = stats if stats is not None else SearchStats()
    rule_sets = candidates(step, mesh_shape, dims)
    stats.legal = len(rule_sets)
    symmetries = axis_symmetries(check_mesh_shape(mesh_shape), hw) if symmetric else []
    bound = getattr(step, "lower_bound", None) if prune and lower_bound else None
    order = pricing_order(rule_sets) if prune and seeds_first else list(range(len(rule_sets)))
    op_memo = (GraphMemo() if graph else OpMemo()) if memo else None
    if isinstance(op_memo, GraphMemo):
        with _collector_paused():
            found = search_graphed(
                step, bound, mesh_shape, rule_sets, order, hw, limit, top_k, prune, symmetries, progress, stats, op_memo
            )
    else:
        found = search_traced(
            step, bound, mesh_shape, rule_sets, order, hw, limit, top_k, prune, symmetries, progress, stats, op_memo
        )
    if op_memo is not None:
        stats.memo_hits, stats.memo_misses = op_memo.hits, op_memo.misses
    if not found:
        raise ArgumentError(no_fit_message(step, mesh_shape, rule_sets, hw, limit))
    ranked = sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[1][1]))[:top_k]
    return [relabel(plan, f"search #{n}") for n, (_, (plan, _)) in enumerate(ranked, 1)]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a graph search runs, as it was before afterwards.

    A search allocates millions of small objects (its graphs' tables, the memo's entries, each priced op's
    arrays), so the collector ran a full pass over the growing tables about 8 times in a search of the README's
    small model: a fifth of its time (0.88 against 0.68 s, this machine). The search leaves almost no cycles to
    collect (1,085 objects in the Mesh-TF model's search of 32,047 rule sets, measured; ``tests/plan/
    test_plan_garbage.py`` holds smaller searches under 1,000), so nothing piles up meanwhile; reference counting
    frees the rest as it goes.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def pricing_order(rule_sets: list[Rules]) -> list[int]:
    """Indices of ``rule_sets`` in pricing order: the seeds (at most one dim split), then the rest.

    Pricing the nearly replicated layouts first gives the k-th best time early, so the traces of
    the many rule sets after them stop sooner; within each part the proxy order is kept. The
    part a rule set falls in does not change under axis renaming, so the first rule set of each
    orbit priced is still the first of the proxy order.
    """
    seeds = [i for i, r in enumerate(rule_sets) if len(r) <= 1]
    return seeds + [i for i, r in enumerate(rule_sets) if len(r) > 1]
