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
  (``layer_floor``, traced once on one device). A rule set whose one-layer
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
  per rule set as it goes and takes the cheaper (``_Chooser``; the answer is the same).

* **Exact figures only where they can place** (``_Deferred``, the graph search of a step the affine rule applies
  to): after a rule set's complete one- and two-layer walks, the affine rule gives every summed figure (step time,
  comm bytes, flops); only the peak memory needs the step's own walk (a deep step's probe walk and five- and
  six-layer traces). Where the memory limit cannot bind (no limit, or the bytes made live in the whole step plus an
  op's largest excursion, ``Figures.allocated_bytes``, fit it), the rule set is kept with those figures, counted in
  the cut, and priced exactly at the end only if its time can still make the top k. The plans and every figure are
  those of pricing each rule set at once (``_DEFER = False``; ``tests/plan/test_plan_deferred.py``).

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
"""

from __future__ import annotations

import bisect
import gc
import math
import numbers
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..errors import ArgumentError, LayoutError
from ..hardware import HardwareProfile, get_profile
from ..mesh import Mesh
from ..profiler import Profile, profile
from .deep import deep_graphs, shallow_twin
from .evaluate import check_mesh_shape, check_step, evaluate_layout
from .floor import compute_floor, repeats
from .graph import Figures, GraphSet, Stop
from .memo import OpMemo
from .model import Clock, Plan, flop_rate
from .record import GraphMemo
from .space import Rules, legal_rule_sets
from .steps import Step
from .symmetry import axis_symmetries, orbit_key


class _Stop(BaseException):
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
            found = _search_graph(
                step, bound, mesh_shape, rule_sets, order, hw, limit, top_k, prune, symmetries, progress, stats, op_memo
            )
    else:
        found = _search(
            step, bound, mesh_shape, rule_sets, order, hw, limit, top_k, prune, symmetries, progress, stats, op_memo
        )
    if op_memo is not None:
        stats.memo_hits, stats.memo_misses = op_memo.hits, op_memo.misses
    if not found:
        raise ArgumentError(_no_fit_message(step, mesh_shape, rule_sets, hw, limit))
    ranked = sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[1][1]))[:top_k]
    return [_relabel(plan, f"search #{n}") for n, (_, (plan, _)) in enumerate(ranked, 1)]


def _search(
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
            raise _Stop
        if prune and clock.total(prof) > cut[0]:
            stats.stopped_time += 1
            raise _Stop

    floor = layer_floor(step, mesh_shape, hw) if bound is not None else 0.0
    two = getattr(step, "two_layers", None) if bound is not None and _AFFINE_LAYERS else None
    layers = getattr(step, "layers", 0) or 0
    if two is None or layers <= 2 or two is step:
        two = None  # the affine rule needs a two-layer step that is cheaper than the step itself
    one_time = [0.0]  # the one-layer step time of the rule set being priced (the affine rule's intercept)

    def watch_two(prof: Profile, clock: Clock) -> None:
        # t(L) = t(1) + (L - 1) (t(2) - t(1)), and the running t(2) only grows: a lower bound on t(L)
        if one_time[0] + (layers - 1) * (clock.total(prof) - one_time[0]) > cut[0] * _ROUNDING:
            stats.stopped_bound += 1
            stats.affine_cuts += 1
            raise _Stop

    def watch_bound(prof: Profile, clock: Clock) -> None:
        if clock.total(prof) + floor > cut[0] * _ROUNDING:
            stats.stopped_bound += 1
            raise _Stop

    simplest: dict[tuple, int] = {}  # costs -> index of the plan kept
    gain = _BoundGain()
    chain = _Chooser()  # whether the one- and two-layer traces (the affine rule) pay on this search

    def price_one(rules: Rules, affine: bool) -> Plan:
        if bound is not None and cut[0] < math.inf and (affine or gain.worth_it()):
            t0 = time.perf_counter()
            try:
                one = evaluate_layout(bound, mesh_shape, rules, hw, watch=watch_bound, cache=cache, memo=memo)
            except _Stop:
                gain.bound(time.perf_counter() - t0, cut=True)
                raise
            gain.bound(time.perf_counter() - t0, cut=False)
            if affine and two is not None:
                one_time[0] = one.step_time_s
                t2 = evaluate_layout(two, mesh_shape, rules, hw, watch=watch_two, cache=cache, memo=memo)
                if one.step_time_s + (layers - 1) * (t2.step_time_s - one.step_time_s) > cut[0] * _ROUNDING:
                    stats.stopped_bound += 1  # (the watch sees the final totals too; this is a safeguard)
                    stats.affine_cuts += 1
                    raise _Stop
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
        except _Stop:
            continue
        except LayoutError:
            stats.refused += 1
            continue
        finally:
            if timed:
                chain.add(affine, time.perf_counter() - start)
        stats.complete += 1
        if plan.memory_bytes_per_device <= limit:
            _keep(found, simplest, plan, i)
            times = sorted(k[0] for k in found)
            if len(times) >= top_k:
                cut[0] = times[top_k - 1]
    if progress is not None:
        progress(len(rule_sets), len(rule_sets))
    return found


def _search_graph(
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
    """``_search`` with every rule set priced from op graphs (``plan.graph``) instead of traces: the same
    cuts (the one-layer bound with its floor, the affine rule in the layer count, the k-th best time,
    the memory limit) on the same figures, each step (one layer, two, all) recorded once per path."""
    found: dict[tuple, tuple[Plan, int]] = {}
    simplest: dict[tuple, int] = {}
    cut = math.inf
    cache: dict[tuple, float] = {}
    seen: set[tuple] = set()
    shape = check_mesh_shape(mesh_shape)
    full = deep_graphs(step, shape, hw, memo, cache)  # (a deep step's paths built from a shallow twin's: plan.deep)
    compute = compute_floor(step, shape, hw) if prune and _COMPUTE_FLOOR else None
    # what the layers the one-layer step leaves out add at least; with the compute floor, (L - 1) layer floors
    # (each layer's flops group by group, never less than ``layer_floor``'s flops over every device)
    floor = layer_floor(step, mesh_shape, hw) if bound is not None and compute is None else 0.0
    one = GraphSet(bound, shape, hw, memo, cache) if bound is not None else None
    two_step = getattr(step, "two_layers", None) if bound is not None and _AFFINE_LAYERS else None
    layers = getattr(step, "layers", 0) or 0
    two = None
    if two_step is not None and layers > 2 and two_step is not step:
        two = GraphSet(two_step, shape, hw, memo, cache)
    sets = [g for g in (full, one, two) if g is not None]
    # the exact figures deferred to the end for the rule sets the affine rule prices (see ``_Deferred``)
    defer = _Deferred(top_k, layers) if two is not None and prune and _DEFER else None

    def exact(rules: Rules, i: int, bar: float, c_all: float) -> None:
        """Price ``rules`` from the step's own graphs; keep it in ``found`` unless it passes ``bar`` or the limit."""
        stats.full_walks += 1
        try:
            fig = full.figures(rules, bar * _ROUNDING if prune else math.inf, limit, compute=c_all)
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
        _keep(found, simplest, _plan_of(fig, rules, shape, hw), i)

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
                if c_all > cut * _ROUNDING:
                    stats.stopped_bound += 1
                    stats.compute_cuts += 1
                    continue
                # with the floors under the memory-bound and comm times (the cost model adds the three)
                bar = c_all + (compute.memory(rules) if _COMM_FLOOR else 0.0)
                if bar > cut * _ROUNDING or (_COMM_FLOOR and bar + compute.comm(rules) > cut * _ROUNDING):
                    stats.stopped_bound += 1
                    stats.compute_cuts += 1
                    if bar > cut * _ROUNDING:
                        stats.memory_cuts += 1
                    else:
                        stats.comm_cuts += 1
                    continue
                c_one, c_layer = compute.one(rules), compute.layer(rules)
                rest = (layers - 1) * (compute.layer_all(rules) if _COMM_FLOOR else c_layer)
            if one is not None and (cut < math.inf or defer is not None):
                top = cut * _ROUNDING
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
            exact(rules, i, cut * _ROUNDING if defer is not None else cut, c_all)
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
            if t > bar * _ROUNDING:  # (its exact time is its extrapolation's to rounding: past the k-th)
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
        raise ArgumentError(_no_fit_message(step, mesh_shape, rule_sets, hw, limit, full))
    return found


def _keep(found: dict[tuple, tuple[Plan, int]], simplest: dict[tuple, int], plan: Plan, i: int) -> None:
    """Add rule set ``i``'s ``plan`` to ``found``: each distinct cost once, as its simplest rule set (then the
    earliest), with the first index that had it."""
    key = _cost(plan)
    if key not in found:
        found[key], simplest[key] = (plan, i), i
    else:
        kept, first = found[key]
        if (_size(plan), i) < (_size(kept), simplest[key]):
            kept, simplest[key] = plan, i
        found[key] = (kept, min(first, i))


class _Deferred:
    """The rule sets whose exact figures a graph search defers: their figures from the affine rule, and the cut.

    After a rule set's complete one- and two-layer walks, the affine rule gives its step time, comm bytes and flops
    (every summed figure) to rounding: ``t(L) = t1 + (L - 1)(t2 - t1)``. Only the peak memory needs the step's own
    walk (or the deep path's probe and traces, ``plan.deep``). Where the memory limit cannot bind, the rule set is
    kept here instead, priced exactly at the end only if it can make the top k. The limit cannot bind when it is
    infinite, or when a proven bound of the step's peak is within it: the live bytes never pass the bytes made live
    in the whole walk (``Figures.allocated_bytes``, a summed figure, affine too) plus the largest live-memory
    excursion of an op, which is at most the one- or two-layer walk's peak (the deep step runs the same ops).

    The cut (the k-th best distinct time) counts the exact figures found and these: a rule set kept here counts
    unless its time, comm bytes and flops are those of an exact cost or of another one counted to ``_SAME``
    (relative), so that two counted never stand for one exact cost; counting fewer can only make the cut looser,
    never wrong. Its time is the exact one's to rounding, which the cut's ``_ROUNDING`` margin absorbs. A rule set
    kept here whose time passes the cut is dropped (it is an affine cut). At the end they are priced exactly in
    order of time until the next one's time passes the k-th best exact time; ties are broken as always (``_keep``),
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
            lo = bisect.bisect_left(times, t / (1.0 + _SAME) - _TINY)
            hi = bisect.bisect_right(times, t * (1.0 + _SAME) + _TINY)
            if any(_same(c, e) for e in exact[lo:hi]):
                continue
            n = len(counted) - 1
            while n >= 0 and counted[n][0] >= t / (1.0 + _SAME) - _TINY and not _same(c, counted[n]):
                n -= 1
            if n >= 0 and counted[n][0] >= t / (1.0 + _SAME) - _TINY:
                continue
            counted.append(c)
        every = sorted(times + [c[0] for c in counted])
        bar = every[self.top_k - 1] if len(every) >= self.top_k else math.inf
        n = bisect.bisect_right(self.items, bar * _ROUNDING, key=lambda x: x[0])
        if n < len(self.items):
            stats.stopped_bound += len(self.items) - n
            stats.affine_cuts += len(self.items) - n
            del self.items[n:]
        return bar


def _same(a: tuple, b: tuple) -> bool:
    """Whether time, comm bytes and flops (the first three) agree to ``_SAME`` (relative)."""
    return all(abs(x - y) <= _SAME * max(abs(x), abs(y)) + _TINY for x, y in zip(a[:3], b[:3]))


def _plan_of(fig: Figures, rules: Rules, mesh_shape: dict[str, int], hw: HardwareProfile) -> Plan:
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


# A lower-bound trace sums the same terms in another order: allow its last bits to differ.
_ROUNDING = 1.0 + 1e-9

# The compute floor (``plan.floor``); the benchmark turns it off to time the search without it.
_COMPUTE_FLOOR = True

# The floors under the memory-bound and comm times (``plan.floor``); the benchmark turns them off to time the
# search with the compute floor only.
_COMM_FLOOR = True

# The affine rule in the layer count (``step.two_layers``); the benchmark turns it off to time the search without it.
_AFFINE_LAYERS = True

# The exact figures of the rule sets the affine rule prices deferred to the end (``_Deferred``); the benchmark and
# the tests turn it off to compare (the same answer).
_DEFER = True

# Two figures this close (relative) may be one exact figure extrapolated (``_Deferred.cut``); far wider than the
# affine rule's rounding (1e-12), within the cut's margin (``_ROUNDING``). ``_TINY``: the same, absolute (zeros).
_SAME = 1e-10
_TINY = 1e-300


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


def layer_floor(step: Step, mesh_shape: Mapping[str, int], hw: HardwareProfile) -> float:
    """A lower bound on what the layers ``step.lower_bound`` leaves out add to the step time, under any rules.

    ``step`` is ``step.layers`` identical layers and ``step.lower_bound`` the same with one
    (``transformer_step``, ``mlp_step``): the step's time is the bound's plus ``layers - 1`` times one
    layer's. One layer's time is at least its einsums' time, and the device with the largest blocks
    (the one priced) does at least ``1 / devices`` of the layer's flops: the flops of one layer on a
    single device (``step.two_layers`` minus ``step.lower_bound``, traced once each) over the device
    count. 0.0 when ``step`` does not say it repeats.
    """
    repeated = repeats(step)
    if repeated is None:
        return 0.0
    one, two, layers = repeated
    flops = []
    for s in (one, two):
        with profile() as prof:
            s(Mesh({"one": 1}, backend="meta"))
        flops.append(prof.flops_by_dtype)
    devices = math.prod(check_mesh_shape(mesh_shape).values())
    per_layer = sum(max(0.0, f - flops[0].get(d, 0.0)) / flop_rate(hw, d) for d, f in flops[1].items())
    return (layers - 1) * per_layer / devices


def pricing_order(rule_sets: list[Rules]) -> list[int]:
    """Indices of ``rule_sets`` in pricing order: the seeds (at most one dim split), then the rest.

    Pricing the nearly replicated layouts first gives the k-th best time early, so the traces of
    the many rule sets after them stop sooner; within each part the proxy order is kept. The
    part a rule set falls in does not change under axis renaming, so the first rule set of each
    orbit priced is still the first of the proxy order.
    """
    seeds = [i for i, r in enumerate(rule_sets) if len(r) <= 1]
    return seeds + [i for i, r in enumerate(rule_sets) if len(r) > 1]


def _size(plan: Plan) -> tuple[int, int]:
    """How much a rule set splits: dims split, then axes used (of two with equal costs, the smaller is kept)."""
    return len(plan.rules), sum(len(x) for x in plan.rules.values())


def _cost(plan: Plan) -> tuple[float, int, float, float]:
    return (plan.step_time_s, plan.memory_bytes_per_device, plan.comm_bytes_per_device, plan.flops_per_device)


def _relabel(plan: Plan, label: str) -> Plan:
    from dataclasses import replace

    return replace(plan, label=label)


def least_memory(
    step: Step,
    mesh_shape: Mapping[str, int],
    rule_sets: list[Rules],
    hw: HardwareProfile,
    graphs: GraphSet | None = None,
) -> Plan | None:
    """The rule set with the least peak memory (branch and bound on memory).

    Args:
        graphs: the step's op graphs (``plan.graph``): each rule set is then priced by a walk, stopped as soon
            as its live memory passes the least so far, instead of a trace.
    """
    least: list[Plan] = []
    shape = check_mesh_shape(mesh_shape)

    def watch(prof: Profile, clock: Clock) -> None:
        if least and prof.peak_memory_bytes_per_device >= least[0].memory_bytes_per_device:
            raise _Stop

    for rules in rule_sets:
        try:
            if graphs is None:
                plan = evaluate_layout(step, mesh_shape, rules, hw, watch=watch)
            else:
                fig = graphs.figures(rules, limit=least[0].memory_bytes_per_device if least else math.inf)
                if least and fig.memory_bytes >= least[0].memory_bytes_per_device:
                    continue
                plan = _plan_of(fig, rules, shape, hw)
        except (_Stop, Stop, LayoutError):
            continue
        least[:] = [plan]
    return least[0] if least else None


def _no_fit_message(
    step: Step,
    mesh_shape: Mapping[str, int],
    rule_sets: list[Rules],
    hw: HardwareProfile,
    limit: float,
    graphs: GraphSet | None = None,
) -> str:
    low = least_memory(step, mesh_shape, rule_sets, hw, graphs)
    where = f"on mesh {dict(mesh_shape)}"
    if low is None:
        return f"no legal layout rule set runs {where}: every one of the {len(rule_sets)} was refused"
    return (
        f"no layout fits the memory limit of {_bytes(limit)} per device {where}: of {len(rule_sets)} legal "
        f"rule sets the least memory is {_bytes(low.memory_bytes_per_device)} per device "
        f"({low.describe()}). Raise memory_limit_bytes, use a larger mesh, or shrink the batch or model"
    )


def _bytes(n: float) -> str:
    """A byte count exactly and in GiB (``16 bytes (1.49e-08 GiB)``): the limit and the least memory of
    ``_no_fit_message`` side by side, never two different tiny sizes both shown as ``0.000 GiB``."""
    return f"{n:,.0f} bytes ({n / 2**30:.3g} GiB)"
