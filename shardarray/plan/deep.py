"""A deep model's op graph from a shallow one's: the paths of an ``L``-layer step built from its five-layer twin.

A step of identical layers (``transformer_step``, ``mlp_step``) runs the code of each layer (its parameters'
creation, its forward pass) as that layer (``memo_hook.layer``); the tape runs each VJP, and frees each saved
context, as the layer that recorded it. The recorder of ``plan.graph`` labels every event with the running layer,
else with the one layer of the values it reads (a leaf wrap, a gradient's finish, the final norm, a free between
the layers' code). A five-layer path then reads as runs of one label each: layers 0 to 4 in ascending order (the
parameters, their wraps, the forward pass, the gradients' finish) or descending (the backward pass), with
unlabeled stretches between.

``layered(events, labels, vlabel, L)`` builds the ``L``-layer path from a five-layer one: the runs of layers 0 and
1 once, layer 2's run once per layer from 2 to ``L - 3`` (in its run's order), layers 3 and 4's runs once as
layers ``L - 2`` and ``L - 1``; each event reads the values of the layer at the same distance from its own as in
the five-layer path, a middle layer's value standing for the same value of another middle layer (layers 1 to 3
make the same values in the same order). It refuses (None) where that is ambiguous.

``LayeredGraphSet`` records a rule set's path by tracing the five- and six-layer steps, and keeps the five-layer
trace only when the six-layer path built from it is, event for event, the traced one (up to the frees after the
last op, which change no figure and follow the garbage collector). It prices a rule set by walking the seven-layer
path built from it (the probe: three copies of the middle layer) and scaling its figures to ``L`` layers
(``plan.repeat``, where the probe's copies show that every copy repeats the last); the ``L``-layer paths are built
and walked only where a probe does not scale. Why the built path is then
the traced one for every ``L``: the layers run the same Python on operands of the same signatures (their dims
share names, so the rules give them the same layouts), so a middle layer's events follow from its neighbours'
signatures; the check shows that one more middle layer adds exactly one more copy, and the walk
(``GraphSet._walk``) still checks every guard and result structure on the way, moving to a traced path where one
differs. The figures are the full trace's (``tests/plan/test_plan_deep.py``: to 1e-12, the peak memory exactly),
while a search of a 96-layer model traces five- and six-layer steps and walks seven-layer paths only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..hardware import HardwareProfile
from ..mesh import Mesh
from .events import ALIAS, CALL, FREE, GUARD
from .graph import Figures, GraphSet, Stop
from .record import GraphMemo, _Slot, with_slots
from .repeat import PROBE_COPIES, Notes, Span


def _zones(labels: list[int | None]) -> list[tuple[int | None, int, int, int]]:
    """A five-layer path's events as zones ``(layer, direction, start, stop)``: the runs of one label (``layer``
    None: unlabeled); for layer 2's runs, ``direction`` +1 where the layers ascend around the run (layer 1's run
    before it, or layer 3's after it), -1 where they descend (the other way round), 0 where neither."""
    runs: list[tuple[int | None, int, int]] = []
    start = 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            runs.append((labels[start], start, i))
            start = i
    zones = []
    for n, (lab, a, b) in enumerate(runs):
        before = next((r[0] for r in reversed(runs[:n]) if r[0] is not None), None)
        after = next((r[0] for r in runs[n + 1 :] if r[0] is not None), None)
        d = 0
        if lab == 2:
            d = 1 if before == 1 or (before != 3 and after == 3) else -1 if before == 3 or after == 1 else 0
        zones.append((lab, d, a, b))
    return zones


def layered(
    events: list[tuple],
    labels: list[int | None],
    vlabel: Mapping[int, int | None],
    layers: int,
    spans: list[Span] | None = None,
) -> list[tuple] | None:
    """The ``layers``-layer path built from a five-layer path's ``events`` (see the module docstring); None where
    the five-layer path cannot be read that way.

    Args:
        events: the five-layer path (``_Recorder.events``).
        labels: each event's layer (``_Recorder.labels``).
        vlabel: each value's layer, the label of the event that made it (``_Recorder.vlabel``).
        layers: the layer count of the path to build, at least five.
        spans: if given, filled with the built path's runs of repeated copies (``plan.repeat.Span``: one per run of
            the middle layer, ``layers - 4`` copies each).
    """
    if layers < TEMPLATE or any(lab is not None and not 0 <= lab < TEMPLATE for lab in labels):
        return None
    last = layers - 1
    made_by: dict[int, list[int]] = {lab: [] for lab in range(TEMPLATE)}  # label -> the values it makes, in order
    for ev, lab in zip(events, labels):
        if lab is not None:
            code = ev[0]
            made_by[lab].extend((*ev[6], *ev[12]) if code == CALL else (ev[2],) if code == ALIAS else ())
    if not len(made_by[1]) == len(made_by[2]) == len(made_by[3]):
        return None  # the middle layers do not make the same values: not identical layers
    index = {v: j for lab in _MIDDLE for j, v in enumerate(made_by[lab])}
    out: list[tuple] = []
    made: dict[tuple[int, int | None], int] = {}  # (five-layer value, layer of its instance) -> new value number
    fresh = [0]

    def label_of(t: int) -> int:  # the template's label layer ``t`` of the built path is an instance of
        return 0 if t == 0 else 1 if t == 1 else 4 if t == last else 3 if t == last - 1 else 2

    def where(label: int | None) -> int | None:  # the one layer a label stands for (None: several)
        return None if label is None else {0: 0, 1: 1, 3: last - 1, 4: last}.get(label)

    def value(v: int, a: int | None, x: int | None) -> int:
        """The value an event of label ``a`` run as layer ``x`` reads for five-layer value ``v``."""
        if v < 0:
            return v
        b = vlabel.get(v)
        if b is None:
            got = made.get((v, None))
        else:
            t = where(b) if a is None or x is None else x + (b - a)
            if t is None or not 0 <= t <= last:
                raise _Ambiguous
            want = label_of(t)
            if want != b:  # the same value of another middle layer
                if want not in _MIDDLE or b not in _MIDDLE:
                    raise _Ambiguous
                v = made_by[want][index[v]]
            got = made.get((v, t))
        if got is None:
            raise _Ambiguous
        return got

    def new(v: int, x: int | None) -> int:
        n = made[(v, x)] = fresh[0]
        fresh[0] += 1
        return n

    def emit(ev: tuple, a: int | None, x: int | None) -> None:
        code = ev[0]
        if code == CALL:
            got = {v: value(v, a, x) for v in ev[5]}
            raw = tuple(_Slot(got[r.v]) if type(r) is _Slot else r for r in ev[9])
            raw_kw = {k: _Slot(got[r.v]) if type(r) is _Slot else r for k, r in ev[10].items()}
            out.append(
                (
                    CALL,
                    ev[1],
                    with_slots(ev, got.__getitem__),
                    ev[3],
                    ev[4],
                    tuple(got[v] for v in ev[5]),
                    tuple(new(v, x) for v in ev[6]),
                    ev[7],
                    ev[8],
                    raw,
                    raw_kw,
                    ev[11],  # the call site's cache: keyed by operand signatures, the same for every instance
                    tuple(new(v, x) for v in ev[12]),
                    ev[13],
                )
            )
        elif code == FREE:
            out.append((FREE, value(ev[1], a, x)))
        elif code == ALIAS:
            src = value(ev[1], a, x)
            out.append((ALIAS, src, new(ev[2], x)))
        else:
            out.append((GUARD, ev[1], tuple(None if v is None else value(v, a, x) for v in ev[2]), ev[3]))

    try:
        for zone, d, start, stop in _zones(labels):
            if zone == 2 and d == 0:
                return None
            if zone == 2:  # the middle layer's run, once per layer from 2 to L - 3, in the run's order
                copies = range(2, last - 1) if d > 0 else range(last - 2, 1, -1)
                if spans is not None and stop > start:
                    spans.append(Span(len(out), stop - start, len(copies)))
            else:  # layer 0's, 1's, 3's (as L - 2), 4's (as L - 1) or unlabeled events, once
                copies = range(1)
            for k in copies:
                x = k if zone == 2 else where(zone)
                for i in range(start, stop):
                    emit(events[i], zone, x)
    except _Ambiguous:
        return None
    return out


#: the layers of the step a deep step's paths are built from: layers 0 and 1, the middle layer 2 (the one
#: repeated), 3 and 4 (as layers L - 2 and L - 1); layers 1 to 3 are identical middle layers
TEMPLATE = 5
_MIDDLE = (1, 2, 3)


class _Ambiguous(Exception):
    """A five-layer value an event of the built path cannot be mapped to (``layered`` returns None)."""


def canonical(events: list[tuple]) -> list[tuple]:
    """What two paths must agree on to be the same path: every event with its values numbered in order of making."""
    num: dict[int, int] = {}

    def n(v: int | None) -> Any:
        if v is None or v < 0:
            return v
        return num.get(v, ("?", v))

    def make(v: int) -> int:
        num[v] = len(num)
        return num[v]

    out: list[tuple] = []
    for ev in events:
        code = ev[0]
        if code == CALL:
            out.append(
                (
                    CALL,
                    ev[1],
                    with_slots(ev, n),
                    ev[3],
                    ev[4],
                    tuple(n(v) for v in ev[5]),
                    tuple(make(v) for v in ev[6]),
                    id(ev[7]),
                    tuple(make(v) for v in ev[12]),
                )
            )
        elif code == FREE:
            out.append((FREE, n(ev[1])))
        elif code == ALIAS:
            out.append((ALIAS, n(ev[1]), make(ev[2])))
        else:
            out.append((GUARD, ev[1], tuple(n(v) for v in ev[2]), ev[3]))
    return out


def _settled(events: list[tuple]) -> list[tuple]:
    """A path up to its last op call or wrap: the frees after them change no figure, and their order follows
    the garbage collector's (arrays of reference cycles die when it runs, which depends on the process's past)."""
    n = len(events)
    while n and events[n - 1][0] in (FREE, GUARD):
        n -= 1
    return events[:n]


class LayeredGraphSet(GraphSet):
    """``GraphSet`` of an ``L``-layer step whose paths are built from its five-layer twin's (``layered``), each
    checked against the six-layer twin's traced path; where a check fails, the step itself is traced. A rule set is
    priced from the seven-layer path built the same way (``probe``), scaled (``plan.repeat``); the ``L``-layer
    paths are built, and walked, where that does not scale.

    Args:
        step: the ``L``-layer step (``step.with_layers(n)`` makes its ``n``-layer twin).
        layers: ``L``.
    """

    def __init__(
        self,
        step: Callable[[Mesh], Any],
        layers: int,
        mesh_shape: Mapping[str, int],
        hw: HardwareProfile,
        memo: GraphMemo | None = None,
        cache: dict | None = None,
    ) -> None:
        super().__init__(step, mesh_shape, hw, memo, cache)
        with_layers = step.with_layers  # type: ignore[attr-defined]
        self.template, self.check, self.layers = with_layers(TEMPLATE), with_layers(TEMPLATE + 1), layers
        self.built = 0  # paths built from a five-layer trace
        self.refused: str | None = None  # why the last path could not be built (the step itself was traced then)
        # the paths built with three copies of each repeated run, walked instead of the deep ones (``plan.repeat``)
        self.probe = GraphSet(with_layers(PROBE), mesh_shape, hw, self.memo, self.cache, tables=self)
        self.graphs = self.probe.graphs  # the paths recorded: one probe path per five-layer trace, and full traces
        self._pending: list[tuple] = []  # five-layer traces whose ``L``-layer paths are not built yet
        self._traced_any = False  # a path of the step itself was traced (a check failed)
        self.probed = 0  # rule sets priced from the probe

    def record(self, rules: Mapping[str, Any]) -> tuple[Any, Any]:
        """Keep the rule set's five-layer trace and its probe path, when the six-layer path built from it is the
        traced one: ``(None, None)`` then. Otherwise trace the step itself (``GraphSet.record``)."""
        rec, _, _ = self._trace(self.template, rules)
        if rec.bad is None:
            six = layered(rec.events, rec.labels, rec.vlabel, TEMPLATE + 1)
            if six is None:
                self.refused = "the five-layer path does not read as identical layers"
            else:
                check, _, _ = self._trace(self.check, rules)
                if check.bad is None and canonical(_settled(six)) == canonical(_settled(check.events)):
                    spans: list[Span] = []
                    probe = layered(rec.events, rec.labels, rec.vlabel, PROBE, spans)
                    if probe is not None:
                        self.probe._spans[len(self.probe._paths)] = spans
                        self.probe._add_path(probe)  # (listed in ``graphs``, which is the probe's list)
                        self._pending.append((rec.events, rec.labels, rec.vlabel))
                        self.built += 1
                        return None, None
                self.refused = "the six-layer path built from the five-layer one is not the traced one"
        self._traced_any = True
        return self._record_step(rules)

    def _build_pending(self) -> None:
        """Build the ``L``-layer paths of the five-layer traces kept so far (a walk of them is needed)."""
        for events, labels, vlabel in self._pending:
            path = layered(events, labels, vlabel, self.layers)
            if path is not None:  # (it is: the probe path of the same trace was built)
                self._add_path(path, listed=False)
        self._pending.clear()

    def price(
        self, rules: Mapping[str, Any], cut: float = math.inf, limit: float = math.inf, compute: float = 0.0
    ) -> Figures | None:
        """``GraphSet.price`` from the probe path where it scales (``plan.repeat``), else from the deep path."""
        probe = self.probe
        if probe._paths:
            current = probe._rules_of(rules)
            notes = Notes(probe._spans.get(probe._last, []), probe._paths[probe._last])
            fig = probe._walk(probe._last, current, probe.mesh, cut, math.inf, compute, notes)
            if fig is not None:
                probe._last = probe._taken
                got = notes.scale(self.layers - PROBE, _sums(fig), fig.flops_by_dtype)
                if got is not None:
                    self.probed += 1
                    return self._scaled(got, cut, limit)
            elif not self._traced_any:
                return None  # (no recorded path is theirs: ``figures`` records one)
        self._build_pending()
        return super().price(rules, cut, limit, compute)

    def _scaled(self, got: tuple, cut: float, limit: float) -> Figures:
        """The deep path's figures from ``Notes.scale``; ``Stop`` past the cut or the memory limit."""
        (flops, comm_b, wire_b, written, comm_t, _, allocated), by_dtype, peak = got
        fig = self._figures(flops, comm_b, wire_b, written, comm_t, by_dtype, peak, allocated)
        if peak > limit or fig.step_time_s > cut:
            raise Stop
        return fig


def _sums(fig: Figures) -> tuple[float, ...]:
    """A walk's summed figures in the order ``GraphSet._walk`` notes them (``_scaled`` takes the compute time from
    the scaled flops by dtype, as a walk does)."""
    return (
        fig.flops,
        fig.comm_bytes,
        fig.wire_bytes,
        fig.written_bytes,
        fig.comm_time_s,
        fig.compute_time_s,
        fig.allocated_bytes,
    )


#: the layer count of the probe paths: layers 0 and 1, three copies of the middle layer, the last two layers
PROBE = TEMPLATE - 1 + PROBE_COPIES


def deep_graphs(
    step: Callable[[Mesh], Any],
    mesh_shape: Mapping[str, int],
    hw: HardwareProfile,
    memo: GraphMemo | None = None,
    cache: dict | None = None,
) -> GraphSet:
    """The graph set a search prices ``step`` from: a ``LayeredGraphSet`` for a step of at least ``DEEP`` identical
    layers that can make its shallower twins (``step.with_layers``), else a ``GraphSet``."""
    if _built(step):
        return LayeredGraphSet(step, step.layers, mesh_shape, hw, memo, cache)  # type: ignore[attr-defined]
    return GraphSet(step, mesh_shape, hw, memo, cache)


def _built(step: Callable[[Mesh], Any]) -> bool:
    """Whether a search builds ``step``'s paths: at least ``DEEP`` identical layers, shallower twins at hand."""
    return (getattr(step, "layers", 0) or 0) >= DEEP and callable(getattr(step, "with_layers", None))


def shallow_twin(step: Callable[[Mesh], Any]) -> Callable[[Mesh], Any]:
    """A step with the dims and the distinct tensor dims of ``step`` (what ``search.discover`` reads), cheaper to
    trace: the two-layer twin of a step of more than two identical layers (``step.two_layers``: the layers past
    the second run the second's code on tensors of the same dims, so they add no dim or tensor shape of their own;
    ``tests/plan/test_plan_deep.py`` checks the dims and tensors against the step's own at 3, 6 and 13 layers),
    else ``step`` itself."""
    two = getattr(step, "two_layers", None)
    return two if two is not None and callable(two) and (getattr(step, "layers", 0) or 0) > 2 else step


#: the least layer count whose paths are built (tracing the five- and six-layer twins, 11 layers, costs less)
DEEP = 12
