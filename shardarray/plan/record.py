"""Recording a step's trace into an op graph (``plan.graph``): the events of one trace, without its arrays.

``GraphSet`` traces a step on the meta backend under a ``GraphMemo``, which hands each top-level op call to a
``_Recorder``: the call's op, its static arguments and which earlier arrays are its operands (numbered values), the
arrays it returns, the arrays made between calls (leaf wraps: aliases), the arrays that die (frees, from the
recording profile) and the guards (``memo_hook.observe``: the few places where the Python between the ops reads a
layout). Each event is labelled with its model layer (``memo_hook.layer``, for ``plan.deep``). The event tuples'
kinds are in ``plan.events``; a call event is ``(CALL, name, static parts, slots of the array arguments, the mesh's
constants, operands, results, memo entry, op function, raw args, raw kwargs, call-site cache, constants made,
profile scope)``. A trace whose Python reads the mesh's rules between ops, or makes arrays outside the recorded
ops, fails to record (``_Recorder.bad`` says why) and is priced by full traces instead.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from .. import profiler
from ..array import ShardArray
from ..memo_hook import LAYER
from ..mesh import Mesh
from .events import ALIAS, CALL, FREE, GUARD
from .memo import _NO, OpMemo, RuleWatch, _arg_key, _Entry


class _Slot:
    """An array argument of a recorded call, by value number (the graph keeps no arrays)."""

    __slots__ = ("v",)

    def __init__(self, v: int) -> None:
        self.v = v


_MESH = object()  # a mesh argument of a recorded call (a creation op's)


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
            (CALL, name, tuple(parts), slots, consts, tuple(operands), new, entry, fn, raw, raw_kw, {}, made_v, scope)
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
            self._append((ALIAS, src[0], self._new(array)))
            return
        self.fail("an array made outside the recorded ops")

    def on_release(self, array_id: int) -> None:
        v = self.vid.pop(array_id, None)
        if v is not None and v >= 0:
            self._append((FREE, v))
            sid = self.shards_id.pop(v, None)
            if sid is not None and self.by_shards.get(sid, (None,))[0] == v:
                del self.by_shards[sid]

    def on_guard(self, kind: str, items: tuple) -> None:
        vids = tuple(None if x is None else self._operand(x) if isinstance(x, ShardArray) else -1 for x in items)
        if -1 in vids:
            self.fail("a guard on something other than arrays")
            return
        self._append((GUARD, kind, vids, _outcome(kind, [None if x is None else _sig_of(x) for x in items])))


def _reads(ev: tuple) -> tuple:
    """The value numbers an event reads (numbered ones: a cached resolution is -1)."""
    code = ev[0]
    if code == CALL:
        return ev[5]
    if code == GUARD:
        return tuple(v for v in ev[2] if v is not None)
    return (ev[1],)


def _makes(ev: tuple) -> tuple:
    """The value numbers an event makes."""
    code = ev[0]
    if code == CALL:
        return (*ev[6], *ev[12])
    if code == ALIAS:
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


def with_slots(ev: tuple, value: Callable[[int], Any]) -> tuple:
    """A call event's static parts (``ev[2]``) with each array argument's value number ``v`` replaced by
    ``value(v)`` (a keyword argument's part is ``(name, v)``)."""
    parts = list(ev[2])
    for s in ev[3]:
        p = parts[s]
        parts[s] = (p[0], value(p[1])) if type(p) is tuple else value(p)
    return tuple(parts)


def _value(t: Any) -> Any:
    """A plain value back from its template (``("value", x)``, tuples of them)."""
    if t[0] == "value":
        return t[1]
    if t[0] == "tuple":
        return tuple(_value(y) for y in t[1])
    if t[0] == "list":
        return [_value(y) for y in t[1]]
    raise ValueError(t)
