"""Record once, price many: a step traced once per path into an op graph, each rule set priced from it.

A trace of ``step(mesh)`` on the meta backend under the search's memo (``plan.memo.OpMemo``) is a
sequence of top-level op calls (every op, VJP, gradient finish and creation op goes through the memo)
with plain Python between them. ``GraphSet.record`` runs the step once and keeps that sequence: for
each call its op, static arguments and which earlier arrays are its operands (numbered), the arrays it
returns, which arrays die between calls (the live set, for the peak memory), the leaves and wraps made
between calls, and the *guards*: the few places where the Python between the ops reads an array's
layout (``core.tape`` resolving a pending input, the backward pass joining and ordering cotangents by
their pending axes; ``memo_hook.observe``).

``GraphSet.price(rules)`` walks the sequence on array *signatures* only: each call's key is its
recorded static part with the operands' current signatures; its memo entry for the rules of the dims
it looks up gives the results' signatures, flops, collectives, bytes written and live-memory
excursion; an entry not seen yet is made by running that one op on fresh meta arrays of the operands'
signatures (``_run_one``). Flops, collectives, bytes and the live set go in the trace's order, so every
figure is the full trace's (``tests/plan/test_plan_graph.py``: step time and its parts, comm and wire
bytes, flops and peak memory to 1e-12). Where a guard or a call's result structure goes another way
than the recorded path, the walk moves to a recorded path that shares everything before that point
and goes that way there, with its state as it is (paths share their common start, caches included);
a rule set whose path is not recorded yet is traced once (``figures``), which adds it. The paths are
few (a handful to a few dozen per step and mesh). A step whose Python reads the mesh's rules between
its ops (a layout computed outside the ops) cannot be followed: every rule set of it is traced in full
(``unpriceable`` says why); ``transformer_step`` and ``mlp_step`` leave the rules to the ops.
"""

from __future__ import annotations

import functools
import math
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .. import profiler
from ..array import ShardArray
from ..backend.classlist import ClassList
from ..backend.meta import MetaArray
from ..core.tape import OP_MEMO
from ..hardware import HardwareProfile, collective_time
from ..memo_hook import LAYER
from ..mesh import Mesh
from .evaluate import evaluate_layout
from .events import ALIAS as _ALIAS
from .events import CALL as _CALL
from .events import FREE as _FREE
from .events import GUARD as _GUARD
from .memo import _NEVER, _NO, OpMemo, RuleWatch, _arg_key, _Entry
from .model import MEMORY_TRAFFIC, Clock, flop_rate
from .model import price as price_profile
from .repeat import Notes, Span


class _Slot:
    """An array argument of a recorded call, by value number (the graph keeps no arrays)."""

    __slots__ = ("v",)

    def __init__(self, v: int) -> None:
        self.v = v


_MESH = object()  # a mesh argument of a recorded call (a creation op's)


@dataclass(slots=True)
class Figures:
    """The summed figures of one rule set priced from a graph (the ``Plan`` fields the search reads)."""

    step_time_s: float
    compute_time_s: float
    memory_time_s: float
    comm_time_s: float
    memory_bytes: int
    comm_bytes: float
    wire_bytes: float
    flops: float
    flops_by_dtype: dict[str, float]
    written_bytes: float


class Stop(BaseException):
    """``GraphSet.price`` passed its time or memory cut (the figures so far only grow; not an error)."""


class _RecordingProfile(profiler.Profile):
    """The profile of the recording trace: it tells the graph about arrays made and freed at top level."""

    def __init__(self, graph: _Recorder) -> None:
        super().__init__()
        self.graph: _Recorder | None = graph

    def _track(self, array: Any, made_here: bool = True) -> None:
        super()._track(array, made_here)
        if self.graph is not None:
            self.graph.on_track(array, made_here)

    def _release(self, array_id: int, key: int) -> None:
        if self.graph is not None:
            self.graph.on_release(array_id)
        super()._release(array_id, key)


class _TopWatch(RuleWatch):
    """The recording mesh's rules: a lookup by Python between the ops (not inside one) is a path the
    graph cannot follow (a static argument computed from the rules): the recording fails, and the
    search traces every rule set of that step in full."""

    rec: _Recorder | None = None

    def _top(self) -> None:
        rec = self.rec
        if self.seen is None and rec is not None and not rec.depth:
            rec.fail("the step reads the mesh's rules between its ops")

    def __contains__(self, dim: object) -> bool:
        self._top()
        return RuleWatch.__contains__(self, dim)

    def __getitem__(self, dim: str) -> tuple[str, ...]:
        self._top()
        return RuleWatch.__getitem__(self, dim)

    def get(self, dim: str, default: Any = None) -> Any:
        self._top()
        return RuleWatch.get(self, dim, default)

    def _all(self) -> None:
        self._top()
        RuleWatch._all(self)


class GraphMemo(OpMemo):
    """An ``OpMemo`` that also records the top-level calls of a trace into a graph while ``rec`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.rec: _Recorder | None = None

    def call(self, name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
        rec = self.rec
        if rec is None or rec.depth:
            return super().call(name, fn, args, kwargs)
        pre = rec.before_call(name, args, kwargs)
        rec.depth += 1
        try:
            result = super().call(name, fn, args, kwargs)
        finally:
            rec.depth -= 1
        rec.after_call(pre, fn, args, kwargs, self.last_entry, result)
        return result

    def observe(self, kind: str, items: tuple) -> None:
        """A guard: Python between the ops branches on these arrays' layouts (``memo_hook.observe``)."""
        rec = self.rec
        if rec is not None and not rec.depth:
            rec.on_guard(kind, items)


class _Recorder:
    """The state of one recording trace."""

    def __init__(self, mesh: Mesh) -> None:
        self.mesh = mesh
        self.depth = 0
        self.events: list[tuple] = []
        self.vid: dict[int, int] = {}  # id(array) -> value number, for the arrays alive at top level
        self.by_shards: dict[int, tuple] = {}  # id(shards) -> (value number, layout, pending, dtype), no arrays kept
        self.shards_id: dict[int, int] = {}
        self.n = 0
        self.bad: str | None = None
        self.start: list[tuple] = []  # (vid, signature parts) of arrays first seen as operands
        self.labels: list[int | None] = []  # per event, the model layer it belongs to (``_label``)
        self.vlabel: dict[int, int | None] = {}  # value number -> the label of the event that made it

    def _append(self, ev: tuple) -> None:
        """Keep an event with its layer label: the running layer (``memo_hook.layer``), else the one layer of the
        values it reads, if they agree (a leaf wrap, a gradient's finish or a free between the layers' code)."""
        label = LAYER.get()
        if label is None:
            found = {self.vlabel.get(v) for v in _reads(ev)}
            found.discard(None)
            label = found.pop() if len(found) == 1 else None
        for v in _makes(ev):
            self.vlabel[v] = label
        self.events.append(ev)
        self.labels.append(label)

    def fail(self, why: str) -> None:
        if self.bad is None:  # the first reason, with where the step was (the search then traces in full)
            self.bad = why + "\n" + "".join(traceback.format_stack(limit=8)[:-2])

    def _new(self, a: ShardArray) -> int:
        v = self.n
        self.n += 1
        self.vid[id(a)] = v
        self.by_shards[id(a._shards)] = (v, a._layout, a.pending, a.dtype)
        self.shards_id[v] = id(a._shards)
        return v

    def _operand(self, a: ShardArray) -> int:
        v = self.vid.get(id(a))
        if v is None:
            self.fail(f"an operand made outside the recorded ops ({a.dims})")
            v = self._new(a)
        return v

    def before_call(self, name: str, args: tuple, kwargs: dict) -> Any:
        parts: list[Any] = [name]
        slots: list[int] = []
        for a in args:
            if type(a) is ShardArray:
                slots.append(len(parts))
                parts.append(self._operand(a))
            else:
                k = _arg_key(a)
                if k is _NO:
                    self.fail(f"{name}: an argument the memo cannot key")
                parts.append(k)
        for n in sorted(kwargs):
            a = kwargs[n]
            if isinstance(a, ShardArray):
                slots.append(len(parts))
                parts.append((n, self._operand(a)))
            else:
                parts.append((n, _arg_key(a)))
        consts = tuple(self.mesh.constants)
        operands = [self._operand(a) for a in (*args, *kwargs.values()) if isinstance(a, ShardArray)]
        raw = tuple(_raw(a, self) for a in args)
        raw_kw = {k: _raw(a, self) for k, a in kwargs.items()}
        scopes = profiler._SCOPE.get()
        return (name, parts, tuple(slots), consts, operands, raw, raw_kw, scopes[0] if scopes else None)

    def after_call(self, pre: Any, fn: Any, args: tuple, kwargs: dict, entry: _Entry | None, result: Any) -> None:
        name, parts, slots, consts, operands, raw, raw_kw, scope = pre
        if entry is None:
            self.fail(f"{name}: a call the memo runs as it is")
            return
        arrays = [a for a in (*args, *kwargs.values()) if isinstance(a, ShardArray)]
        _, cached_t, made_t = entry.template[1]
        cached = []
        for c in cached_t[1]:
            r = arrays[c[1][0][1]]._resolved
            cached.append((c[1][0][1], r[0], r[1]))
        made = tuple((_value(c[1][0]), self.mesh.constants[_value(c[1][0])]) for c in made_t[1])
        objs: dict[int, Any] = {}
        result_t = entry.template[1][0]
        _collect(result_t, result, objs)
        new = tuple(self._new(objs[n]) for n in sorted(objs))  # the results, in their template's numbering
        seen = set(objs)
        _collect(cached_t, cached, objs)
        for n in set(objs) - seen:  # cached resolutions: not numbered (a path's shape does not depend on them);
            self.vid[id(objs[n])] = -1  # they die with their array, or when another replaces them
        seen = set(objs)
        _collect(made_t, made, objs)
        made_v = tuple(self._new(objs[n]) for n in sorted(set(objs) - seen))
        self._append(
            (_CALL, name, tuple(parts), slots, consts, tuple(operands), new, entry, fn, raw, raw_kw, {}, made_v, scope)
        )

    def on_track(self, array: Any, made_here: bool) -> None:
        if self.depth:
            return
        if not made_here:
            self.fail("an array made before the trace")
            return
        if type(array) is not ShardArray:
            self.fail("an array of another kind")
            return
        src = self.by_shards.get(id(array._shards))  # a new array at top level: a leaf or a wrap of an array's blocks
        if src is not None and src[1:] == (array._layout, array.pending, array.dtype):
            self._append((_ALIAS, src[0], self._new(array)))
            return
        self.fail("an array made outside the recorded ops")

    def on_release(self, array_id: int) -> None:
        v = self.vid.pop(array_id, None)
        if v is not None and v >= 0:
            self._append((_FREE, v))
            sid = self.shards_id.pop(v, None)
            if sid is not None and self.by_shards.get(sid, (None,))[0] == v:
                del self.by_shards[sid]

    def on_guard(self, kind: str, items: tuple) -> None:
        vids = tuple(None if x is None else self._operand(x) if isinstance(x, ShardArray) else -1 for x in items)
        if -1 in vids:
            self.fail("a guard on something other than arrays")
            return
        self._append((_GUARD, kind, vids, _outcome(kind, [None if x is None else _sig_of(x) for x in items])))


def _reads(ev: tuple) -> tuple:
    """The value numbers an event reads (numbered ones: a cached resolution is -1)."""
    code = ev[0]
    if code == _CALL:
        return ev[5]
    if code == _GUARD:
        return tuple(v for v in ev[2] if v is not None)
    return (ev[1],)


def _makes(ev: tuple) -> tuple:
    """The value numbers an event makes."""
    code = ev[0]
    if code == _CALL:
        return (*ev[6], *ev[12])
    if code == _ALIAS:
        return (ev[2],)
    return ()


def _raw(a: Any, rec: _Recorder) -> Any:
    if isinstance(a, ShardArray):
        return _Slot(rec._operand(a))
    if isinstance(a, Mesh):
        return _MESH
    return a


def _sig_of(a: ShardArray) -> tuple:
    """The parts of an array's signature a guard reads: (layout, pending, dtype)."""
    return (a._layout, a.pending, a.dtype)


def _outcome(kind: str, sigs: list[Any]) -> tuple:
    """What the Python at a guard decides from the arrays' signatures (``(layout, pending, dtype)`` each)."""
    if kind == "resolve":  # core.tape: a differentiable op resolving its pending inputs first
        return tuple(bool(s[1]) for s in sigs)
    if kind == "arrive":  # core.tape.backward: a cotangent joins the one with the same pending axes, if any
        last = sigs[-1][1]
        return (next((j for j, s in enumerate(sigs[:-1]) if s[1] == last), -1),)
    if kind == "pop":  # core.tape.backward: contributions summed in the order of their pending axes' count
        if len(sigs) == 1:
            return ()
        return tuple(sorted(range(len(sigs)), key=lambda i: len(sigs[i][1])))
    raise ValueError(f"unknown guard {kind!r}")


def _collect(t: Any, x: Any, objs: dict[int, Any]) -> None:
    """The arrays of a call's result by their number in its template (``plan.memo._walk``)."""
    kind = t[0]
    if kind == "array":
        objs.setdefault(t[1], x)
    elif kind in ("tuple", "list"):
        for y, z in zip(t[1], x):
            _collect(y, z, objs)
    elif kind == "dict":
        for (_, y), z in zip(t[1], x.values()):
            _collect(y, z, objs)


def _shape(t: Any) -> Any:
    """A template without its arrays' details: what the Python after the call can see of its structure."""
    kind = t[0]
    if kind == "array":
        return ("array", t[1])
    if kind in ("tuple", "list"):
        return (kind, tuple(_shape(y) for y in t[1]))
    if kind == "dict":
        return ("dict", tuple((k, _shape(v)) for k, v in t[1]))
    return t


#: a graph set's signature numbers and what is cached by them (``GraphSet(tables=...)`` shares them)
_TABLES = ("_compiled", "_index", "_local", "_rates", "_comp", "_sid", "_sigs", "_loc", "_guard", "_base", "_outcomes")


class GraphSet:
    """The graphs of one step on one mesh shape and hardware, sharing one memo; prices any rule set.

    ``price(rules)`` walks each recorded path whose guards the rules pass; a rule set that takes a path
    not recorded yet is traced once in full (``record``), which adds its path.
    """

    def __init__(
        self,
        step: Callable[[Mesh], Any],
        mesh_shape: Mapping[str, int],
        hw: HardwareProfile,
        memo: GraphMemo | None = None,
        cache: dict | None = None,
        tables: GraphSet | None = None,
    ) -> None:
        """``tables``: a graph set of the same mesh shape whose signature numbers (and what is cached by them) this
        one shares: paths built from one trace share their call sites' caches, which hold those numbers
        (``plan.deep``'s probe paths)."""
        self.step = step
        self.mesh_shape = dict(mesh_shape)
        self.hw = hw
        self.memo = memo if memo is not None else GraphMemo()
        self.cache: dict[tuple, float] = cache if cache is not None else {}
        self.graphs: list[list[tuple]] = []
        self.mesh = Mesh(self.mesh_shape, backend="meta")
        self.local = self.mesh.local_device
        self.traces = 0  # full traces run (one per path)
        self.unpriceable: str | None = None  # why a trace could not be recorded (then every rule set is traced)
        self._compiled: dict[int, tuple] = {}
        self._index: dict[bytes, np.ndarray] = {}
        self._local: dict[tuple, tuple[int, int]] = {}
        self._rates: dict[str, float] = {}
        self._tok = 0
        self._paths: list[list[tuple]] = []  # the recorded paths, by number
        self._keys: list[list[Any]] = []  # their events' keys (``_ev_key``)
        self._lcp: list[dict[int, int]] = []  # path -> {other path: events they share from the start}
        self._last = self._taken = 0  # the path the last rule set took (the next walk starts there)
        self._comp: dict[tuple, tuple] = {}  # (id(entry), operand signature numbers) -> ``_compile``
        self._sid: dict[tuple, int] = {}  # signature -> its number
        self._sigs: list[tuple] = []  # number -> signature
        self._loc: list[tuple[int, int]] = []  # number -> (local block's class, its bytes)
        self._guard: list[tuple] = []  # number -> (layout, pending, dtype), what the guards read
        self._base: list[int] = []  # number -> the number of the signature without its cached resolution
        self._outcomes: dict[tuple, tuple] = {}  # (guard kind, its arrays' signature numbers) -> ``_outcome``
        self._spans: dict[int, list[Span]] = {}  # path -> its runs of repeated copies (``plan.repeat``), if built
        if tables is not None:
            for name in _TABLES:
                setattr(self, name, getattr(tables, name))

    # ---------------------------------------------------------------- recording
    def record(self, rules: Mapping[str, Any]) -> tuple[profiler.Profile | None, Mesh | None]:
        """Trace the step once under ``rules`` (memoised), keep its path; returns the profile and mesh (None, None:
        a path kept without running the step, ``plan.deep``)."""
        return self._record_step(rules)

    def _record_step(self, rules: Mapping[str, Any]) -> tuple[profiler.Profile, Mesh]:
        """``record`` by tracing the step itself."""
        rec, prof, mesh = self._trace(self.step, rules)
        if rec.bad is None:
            self._add_path(rec.events)
        elif self.unpriceable is None:
            self.unpriceable = rec.bad
        return prof, mesh

    def _trace(self, step: Callable[[Mesh], Any], rules: Mapping[str, Any]) -> tuple[_Recorder, profiler.Profile, Mesh]:
        """Trace ``step`` once under ``rules`` (memoised): its recorder (events, or why it failed), profile, mesh."""
        memo = self.memo
        mesh = Mesh(self.mesh_shape, backend="meta", rules=rules)
        rec = _Recorder(mesh)
        memo.bind(mesh)
        watch = _TopWatch(mesh.rules)
        watch.rec = rec
        mesh.rules = watch
        memo.rec = rec
        prof = _RecordingProfile(rec)
        token = OP_MEMO.set(memo)
        self.traces += 1
        try:
            with prof:
                step(mesh)
        finally:
            OP_MEMO.reset(token)
            memo.rec = None
            prof.graph = None
            watch.rec = None
            rec.by_shards.clear()
        return rec, prof, mesh

    # ---------------------------------------------------------------- pricing
    def figures(
        self, rules: Mapping[str, Any], cut: float = math.inf, limit: float = math.inf, compute: float = 0.0
    ) -> Figures:
        """``price``, recording the rule set's path first when it is new (one full trace)."""
        if self.unpriceable is not None:  # a step the graph cannot follow: a memoised trace, stopped at the cuts
            return self._traced(rules, cut, limit)
        out = self.price(rules, cut, limit, compute) if self.graphs else None
        if out is None:
            traced = self.record(rules)
            out = self.price(rules, cut, limit, compute) if self.unpriceable is None else None
            if out is None and traced[0] is None:  # a path built without running the step (``plan.deep``), not theirs
                traced = self._record_step(rules)
                out = self.price(rules, cut, limit, compute) if self.unpriceable is None else None
            if out is None:  # a path the graph cannot follow: the trace's own figures (a trace of the step, by now)
                prof, mesh = cast("tuple[profiler.Profile, Mesh]", traced)
                plan = price_profile(prof, mesh, self.hw, dict(mesh.rules), "", self.cache)
                out = Figures(
                    step_time_s=plan.step_time_s,
                    compute_time_s=plan.compute_time_s,
                    memory_time_s=plan.memory_time_s,
                    comm_time_s=plan.comm_time_s,
                    memory_bytes=plan.memory_bytes_per_device,
                    comm_bytes=plan.comm_bytes_per_device,
                    wire_bytes=plan.wire_bytes_per_device,
                    flops=plan.flops_per_device,
                    flops_by_dtype=dict(prof.flops_by_dtype),
                    written_bytes=prof.written_bytes_per_device,
                )
                if out.memory_bytes > limit or out.step_time_s > cut:
                    raise Stop
        return out

    def _traced(self, rules: Mapping[str, Any], cut: float, limit: float) -> Figures:
        def watch(prof: profiler.Profile, clock: Clock) -> None:
            if prof.peak_memory_bytes_per_device > limit or clock.total(prof) > cut:
                raise Stop

        self.traces += 1
        plan = evaluate_layout(
            self.step, self.mesh_shape, rules, self.hw, watch=watch, cache=self.cache, memo=self.memo
        )
        return Figures(
            step_time_s=plan.step_time_s,
            compute_time_s=plan.compute_time_s,
            memory_time_s=plan.memory_time_s,
            comm_time_s=plan.comm_time_s,
            memory_bytes=plan.memory_bytes_per_device,
            comm_bytes=plan.comm_bytes_per_device,
            wire_bytes=plan.wire_bytes_per_device,
            flops=plan.flops_per_device,
            flops_by_dtype={},
            written_bytes=plan.memory_time_s * self.hw.memory_bandwidth / MEMORY_TRAFFIC,
        )

    def price(
        self, rules: Mapping[str, Any], cut: float = math.inf, limit: float = math.inf, compute: float = 0.0
    ) -> Figures | None:
        """The figures of ``rules`` from a recorded path, or None when no recorded path is theirs.

        Raises ``Stop`` once the running time passes ``cut`` or the live memory ``limit``, and
        ``LayoutError`` for rules that split some tensor illegally. ``compute``: a floor under the step's
        compute time under ``rules`` (``plan.floor``); the running time counts the compute time as at least
        that from the start (the rest of it is still to come), so the walk stops sooner, with the same figures.
        """
        current = self._rules_of(rules)
        if not self._paths:
            return None
        out = self._walk(self._last, current, self.mesh, cut, limit, compute)
        if out is None:
            return None
        self._last = self._taken
        return out

    def _rules_of(self, rules: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
        """``Mesh(mesh_shape, rules=rules).rules`` (each value a tuple of axes, unsplit dims left out, the same
        errors) without building a mesh per rule set."""
        out: dict[str, tuple[str, ...]] = {}
        parse = self.mesh.parse_axes
        for dim, spec in rules.items():
            if not isinstance(dim, str):
                return Mesh(self.mesh_shape, backend="meta", rules=rules).rules  # (its error)
            axes = parse(spec, f"layout rule {dim!r} -> {spec!r}")
            if axes:
                out[dim] = axes
        return out

    def _shape_is(self, shape: Any, ev: tuple) -> bool:
        return ev[0] == _CALL and self._entry_info(ev[7])[1] == shape

    def _branch(self, pid: int, i: int, test: Callable[[tuple], bool]) -> int:
        """A recorded path that shares ``pid``'s first ``i`` events and differs at event ``i`` (-1: none).

        A rule set whose trace follows ``pid`` up to event ``i`` and not at it follows such a path if any
        path is its own: the walk goes on there with its state as it is."""
        for q, n in self._lcp[pid].items():
            if n == i and test(self._paths[q][i]):
                return q
        return -1

    def _add_path(self, events: list[tuple], listed: bool = True) -> None:
        """Keep a recorded path; events it shares with the one it has most in common with are that one's
        (their caches too). ``listed``: add it to ``graphs`` too (the paths recorded)."""
        keys = [_ev_key(ev) for ev in events]
        pid = len(self._paths)
        lcp: dict[int, int] = {}
        best, most = -1, -1
        for q, other in enumerate(self._keys):
            n = 0
            for a, b in zip(keys, other):
                if a != b:
                    break
                n += 1
            lcp[q] = n
            self._lcp[q][pid] = n
            if n > most:
                best, most = q, n
        if best >= 0:
            events[:most] = self._paths[best][:most]
        self._lcp.append(lcp)
        self._paths.append(events)
        self._keys.append(keys)
        if listed:
            self.graphs.append(events)

    def _entry_info(self, entry: _Entry) -> tuple:
        info = self._compiled.get(id(entry))
        if info is None:
            result_t, cached_t, made_t = entry.template[1]
            comm = []
            for r in entry.records:
                key = (r.op, r.axes, r.group_size, r.wire_bytes)
                t = self.cache.get(key)
                if t is None:
                    t = self.cache[key] = collective_time(r, self.mesh.groups(r.axes), self.hw)
                comm.append((t, r.bytes, r.wire_bytes))
            info = self._compiled[id(entry)] = (
                entry,
                (_shape(entry.template[1][0]), tuple(_value(c[1][0]) for c in entry.template[1][2][1])),
                tuple(entry.flops),
                tuple(comm),
                entry.written,
                entry.excursion,
                result_t,
                cached_t,
                made_t,
                _count(entry.template),
            )
        return info

    def _local_of(self, skey: tuple) -> tuple[int, int]:
        """(position of the local block among the classes, its bytes) of a shards key."""
        out = self._local.get(skey)
        if out is None:
            index = self._index[skey[2]]
            pos = int(index[self.local])
            shape, dt = skey[1][pos] if skey[1][pos] is not None else ((), None)
            nbytes = 0 if dt is None else math.prod(shape) * np.dtype(dt).itemsize
            out = self._local[skey] = (pos, nbytes)
        return out

    def _intern(self, sig: tuple) -> int:
        n = self._sid.get(sig)
        if n is None:
            n = self._sid[sig] = len(self._sigs)
            self._sigs.append(sig)
            base = sig if len(sig) == 5 else sig[:5]
            self._loc.append(self._local_of(base[4]))
            self._guard.append((base[1], base[2], base[3]))
            self._base.append(n if len(sig) == 5 else self._intern(base))
        return n

    def _compile(self, entry: _Entry, opsids: tuple) -> tuple:
        """What a call with this entry and these operand signatures does to the walk's state."""
        info = self._entry_info(entry)
        ok = True
        _, _, fl, cm, wr, exc, result_t, cached_t, made_t, count = info
        recipes: list[Any] = [None] * count
        sigs = self._sigs

        def visit(t: Any) -> None:
            kind = t[0]
            if kind == "array":
                _, n, layout, dtype, pending, index, blocks, _, plain = t
                shapes: list[Any] = []
                rb: list[Any] = []
                for b in blocks:
                    if b is None:
                        shapes.append(None)
                        rb.append(None)
                    elif b[0] == "op":
                        shapes.append(sigs[opsids[b[1]]][4][1][b[2]])
                        rb.append((0, b[1], b[2]))
                    else:
                        shapes.append((b[2], b[3].str))
                        rb.append((1, b[1]))
                ib = index.tobytes()
                if ib not in self._index:
                    self._index[ib] = index
                sid = self._intern(("A", layout, pending, dtype, ("C" if plain else "T", tuple(shapes), ib)))
                recipes[n] = (sid, tuple(rb))
            elif kind in ("tuple", "list"):
                for y in t[1]:
                    visit(y)
            elif kind == "dict":
                for _, y in t[1]:
                    visit(y)

        visit(result_t)
        cached = []
        for c in cached_t[1]:
            visit(c[1][2])
            i, target, n = c[1][0][1], _value(c[1][1]), c[1][2][1]
            base = self._base[opsids[i]]
            full = self._intern((*sigs[base], ("R", target, sigs[recipes[n][0]])))
            cached.append((i, target, n, full))
        made = []
        for c in made_t[1]:
            visit(c[1][1])
            made.append((_value(c[1][0]), c[1][1][1]))
        if any(r is None for r in recipes):
            ok = False  # ("same"/"again" only reach arrays numbered here)
        n_cached = len(recipes) - _count(result_t) - len(made)
        return (ok, fl, cm, wr, exc, tuple(recipes), tuple(cached), tuple(made), n_cached)

    def _walk(
        self, pid: int, rules: dict, mesh: Mesh, cut: float, limit: float, floor: float, notes: Notes | None = None
    ) -> Figures | None:
        memo = self.memo
        entries_of = memo._entries
        sigs, loc, guard_sig, base_of = self._sigs, self._loc, self._guard, self._base
        guards = self._outcomes
        sid: dict[int, int] = {}  # vid -> signature id (with its cached resolution, if any)
        res: dict[int, int] = {}  # vid -> the vid of its cached resolution
        toks: dict[int, tuple] = {}  # vid -> block tokens, one per class
        live: dict[Any, int] = {}  # local block token -> arrays holding it
        consts: dict[Any, int] = {}
        picked: dict[int, _Entry] = {}  # call site (``c``) -> its entry under these rules, once found
        mem = peak = 0
        flops = comm_b = wire_b = written = comm_t = run_c = 0.0
        by_dtype: dict[str, float] = {}
        rates = self._rates
        hw = self.hw
        mem_rate = MEMORY_TRAFFIC / hw.memory_bandwidth
        items = tuple(dict.items(rules))
        rget = rules.get
        stop = cut
        fresh = 1
        tok_n = self._tok
        paths = self._paths
        events = paths[pid]
        mark_at = -1 if notes is None else notes.first_after(-1)
        i = -1
        while True:
            i += 1
            if i == mark_at:  # a copy of a repeated run starts, or a run ends (``plan.repeat``: a probe path)
                sums = (flops, comm_b, wire_b, written, comm_t, run_c)
                peak = notes.mark(i, mem, peak, sums, by_dtype, sid, toks, res, live)  # type: ignore[union-attr]
                mark_at = notes.first_after(i)  # type: ignore[union-attr]
            if i == len(events):
                break
            ev = events[i]
            code = ev[0]
            if code == _CALL:
                operands = ev[5]
                opsids = tuple([sid[v] for v in operands])
                site = ev[11]
                c = site.get(opsids)
                if c is None:
                    key = self._key_of(ev, [sigs[x] for x in opsids])
                    c = site[opsids] = [key, {}, entries_of.get(key), {}, 0]
                found = c[2]
                if found is None:
                    found = c[2] = entries_of.get(c[0])
                entry = picked.get(id(c))  # (the copies of one event in a built path: ``plan.deep``)
                if entry is None and found is not None and found is not _NEVER:
                    entry = _first_entry(c, found, items, rget)
                    if entry is not None:
                        picked[id(c)] = entry
                if entry is None:
                    if found is _NEVER:  # (a call no path can replay)
                        return None
                    entry = self._run_one(c[0], ev[8], ev[9], ev[10], ev[13], sid, res, toks, consts, rules)
                    if entry is None:
                        return None
                    picked[id(c)] = entry
                comp = c[1].get(id(entry))
                if comp is None:
                    comp = self._comp.get((id(entry), opsids))
                    if comp is None:
                        comp = self._comp[(id(entry), opsids)] = self._compile(entry, opsids)
                    if self._entry_info(entry)[1] != self._entry_info(ev[7])[1]:
                        comp = (False, *comp[1:])
                    c[1][id(entry)] = comp
                ok, fl, cm, wr, exc, recipes, cached, made, n_cached = comp
                if not ok:  # another structure of results: the path that branches here, if one was recorded
                    shape = self._entry_info(entry)[1]
                    pid = self._branch(pid, i, functools.partial(self._shape_is, shape))
                    if pid < 0:
                        return None
                    events = paths[pid]
                    if notes is not None:
                        notes.switch(self._spans.get(pid, []), events, i)
                        mark_at = notes.first_after(i - 1)
                    i -= 1
                    continue
                if mem + exc > peak:
                    peak = mem + exc
                for f, dt, _ in fl:
                    flops += f
                    by_dtype[dt] = by_dtype.get(dt, 0.0) + f
                    r = rates.get(dt)
                    if r is None:
                        r = rates[dt] = flop_rate(hw, dt)
                    run_c += f / r
                for t, b, w in cm:
                    comm_t += t
                    comm_b += b
                    wire_b += w
                written += wr
                new = ev[6]
                if n_cached or made:  # cached resolutions are numbered apart (below 0), then the constants
                    new = (*new, *range(-fresh - n_cached, -fresh), *ev[12])
                    fresh += n_cached
                made_toks: dict[int, int] = {}
                for n, (rsid, rb) in enumerate(recipes):
                    v = new[n]
                    tk: list[Any] = []
                    for b in rb:
                        if b is None:
                            tk.append(None)
                        elif b[0] == 0:
                            tk.append(toks[operands[b[1]]][b[2]])
                        else:
                            t_ = made_toks.get(b[1])
                            if t_ is None:
                                tok_n += 1
                                t_ = made_toks[b[1]] = tok_n
                            tk.append(t_)
                    sid[v] = rsid
                    toks[v] = tuple(tk)
                for oi, _target, n, full in cached:
                    o = operands[oi]
                    old = res.get(o)
                    res[o] = new[n]
                    sid[o] = full
                    if old is not None and old < 0 and old != new[n]:  # (one array twice: x * x)
                        mem = _drop(old, sid, res, toks, live, loc, mem)
                for k, n in made:
                    consts[k] = new[n]
                for n in range(len(recipes)):
                    v = new[n]
                    pos, nbytes = loc[sid[v]]
                    tok = toks[v][pos]
                    if tok is not None:
                        held = live.get(tok)
                        if held is None:
                            live[tok] = 1
                            mem += nbytes
                            if mem > peak:
                                peak = mem
                        else:
                            live[tok] = held + 1
                if peak > limit:
                    raise Stop
                if (run_c if run_c > floor else floor) + mem_rate * written + comm_t > stop:
                    raise Stop
            elif code == _FREE:
                mem = _drop(ev[1], sid, res, toks, live, loc, mem)
            elif code == _ALIAS:
                src, v = ev[1], ev[2]
                sid[v], toks[v] = base_of[sid[src]], toks[src]
                pos, nbytes = loc[sid[v]]
                tok = toks[v][pos]
                if tok is not None:
                    held = live.get(tok)
                    if held is None:
                        live[tok] = 1
                        mem += nbytes
                        if mem > peak:
                            peak = mem
                    else:
                        live[tok] = held + 1
            else:
                _, kind, vids, outcome = ev
                gk = (kind, tuple([-1 if v is None else sid[v] for v in vids]))  # what it reads: signature numbers
                seen = guards.get(gk)
                if seen is None:
                    seen = guards[gk] = _outcome(kind, [None if v is None else guard_sig[sid[v]] for v in vids])
                if seen != outcome:  # the Python goes another way here: the path that does, if one was recorded
                    pid = self._branch(pid, i, functools.partial(_guard_is, seen))
                    if pid < 0:
                        return None
                    events = paths[pid]
                    if notes is not None:
                        notes.switch(self._spans.get(pid, []), events, i)
                        mark_at = notes.first_after(i - 1)
                    i -= 1
                    continue
        if notes is not None:
            notes.end(peak)
        self._tok = tok_n
        self._taken = pid
        for dt in by_dtype:
            if dt not in rates:
                rates[dt] = flop_rate(hw, dt)
        compute = sum(f / rates[d] for d, f in by_dtype.items())
        memory = MEMORY_TRAFFIC * written / hw.memory_bandwidth
        return Figures(
            step_time_s=compute + memory + comm_t,
            compute_time_s=compute,
            memory_time_s=memory,
            comm_time_s=comm_t,
            memory_bytes=peak,
            comm_bytes=comm_b,
            wire_bytes=wire_b,
            flops=flops,
            flops_by_dtype=by_dtype,
            written_bytes=written,
        )

    def _key_of(self, ev: tuple, opsigs: list) -> tuple:
        sig_of = dict(zip(ev[5], opsigs))
        key = with_slots(ev, sig_of.__getitem__)
        return (*key, ("constants", ev[4])) if ev[4] else key

    def _run_one(
        self,
        key: tuple,
        fn: Any,
        raw: tuple,
        raw_kw: dict,
        scope: str | None,
        sid: dict,
        res: dict,
        toks: dict,
        consts: dict,
        rules: dict,
    ) -> _Entry | None:
        """Run one op on fresh meta arrays of its operands' signatures: its memo entry under ``rules``."""
        mesh = Mesh(self.mesh_shape, backend="meta", rules=dict(rules))
        watch = RuleWatch(mesh.rules)
        mesh.rules = watch
        blocks: dict[Any, Any] = {}
        built: dict[int, ShardArray] = {}
        sigs, base_of = self._sigs, self._base

        def build(v: int) -> ShardArray:
            a = built.get(v)
            if a is not None:
                return a
            _, layout, pending, dtype, skey = sigs[base_of[sid[v]]]
            values: list[Any] = []
            for tok, sh in zip(toks[v], skey[1]):
                if sh is None:
                    values.append(None)
                    continue
                m = blocks.get(tok)
                if m is None:
                    m = blocks[tok] = MetaArray.__new__(MetaArray)
                    m.shape, m.dtype = sh[0], np.dtype(sh[1])
                values.append(m)
            index = self._index[skey[2]]
            shards = ClassList(values, index) if skey[0] == "C" else tuple([values[i] for i in index])
            a = built[v] = ShardArray._trusted(mesh, layout, dtype, shards, pending)
            r = res.get(v)
            if r is not None:
                target = sigs[sid[v]][5][1]
                a._resolved = (target, build(r))
            return a

        prof = profiler.Profile()
        with prof:
            for k, v in consts.items():
                mesh.constants[k] = build(v)
            args = tuple(build(x.v) if type(x) is _Slot else mesh if x is _MESH else x for x in raw)
            kw = {k: build(x.v) if type(x) is _Slot else mesh if x is _MESH else x for k, x in raw_kw.items()}
            got = self.memo._entries.get(key)
            before = 0 if got is None or got is _NEVER else len(got)
            if scope is None:
                self.memo._record(key, fn, args, kw, prof, mesh, watch)
            else:
                with profiler.scope(scope):  # as in the trace (the memo keeps the op names of its events)
                    self.memo._record(key, fn, args, kw, prof, mesh, watch)
        found = self.memo._entries.get(key)
        if found is _NEVER or found is None or len(found) == before:
            return None
        return found[-1]


def _first_entry(site: list, found: list, items: tuple, rget: Callable[[str], Any]) -> _Entry | None:
    """The first of ``found`` (a key's memo entries) whose rules are the walk's (``OpMemo.call``'s scan), by an
    index kept in ``site`` (a call site's cache: ``site[3]`` the entries grouped by the dims they consulted,
    ``{their rules: first position}``, ``site[4]`` how many are indexed): the least position over the groups."""
    groups = site[3]
    if site[4] != len(found):
        for pos in range(site[4], len(found)):
            e = found[pos]
            g = groups.get(e.consulted)
            if g is None:
                g = groups[e.consulted] = {}
            g.setdefault(e.rules, pos)
        site[4] = len(found)
    best = -1
    for cons, g in groups.items():
        p = g.get(items if cons is None else tuple([rget(d) for d in cons]))
        if p is not None and (best < 0 or p < best):
            best = p
    return found[best] if best >= 0 else None


def with_slots(ev: tuple, value: Callable[[int], Any]) -> tuple:
    """A call event's static parts (``ev[2]``) with each array argument's value number ``v`` replaced by
    ``value(v)`` (a keyword argument's part is ``(name, v)``)."""
    parts = list(ev[2])
    for s in ev[3]:
        p = parts[s]
        parts[s] = (p[0], value(p[1])) if type(p) is tuple else value(p)
    return tuple(parts)


def _guard_is(outcome: tuple, ev: tuple) -> bool:
    return ev[0] == _GUARD and ev[3] == outcome


def _ev_key(ev: tuple) -> Any:
    """What two paths must agree on to share an event."""
    if ev[0] == _CALL:
        t = ev[7].template[1]
        return (ev[:7], _shape(t[0]), tuple(_value(c[1][0]) for c in t[2][1]))
    return ev


def _drop(v: int, sid: dict, res: dict, toks: dict, live: dict, loc: list, mem: int) -> int:
    """An array dies: its local block too when no other array holds it; the live bytes after."""
    s = sid.pop(v, None)
    if s is None:
        return mem
    pos, nbytes = loc[s]
    tok = toks.pop(v)[pos]
    if tok is not None:
        held = live.get(tok)
        if held is not None:
            if held == 1:
                del live[tok]
                mem -= nbytes
            else:
                live[tok] = held - 1
    r = res.pop(v, None)
    if r is not None and r < 0:  # its cached resolution, one this path's trace did not make, dies with it
        mem = _drop(r, sid, res, toks, live, loc, mem)
    return mem


def _count(t: Any) -> int:
    """How many distinct arrays a template makes."""
    kind = t[0]
    if kind == "array":
        return t[1] + 1
    if kind in ("tuple", "list"):
        return max((_count(y) for y in t[1]), default=0)
    if kind == "dict":
        return max((_count(y) for _, y in t[1]), default=0)
    return 0


def _value(t: Any) -> Any:
    """A plain value back from its template (``("value", x)``, tuples of them)."""
    if t[0] == "value":
        return t[1]
    if t[0] == "tuple":
        return tuple(_value(y) for y in t[1])
    if t[0] == "list":
        return [_value(y) for y in t[1]]
    raise ValueError(t)
