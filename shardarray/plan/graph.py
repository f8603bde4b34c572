"""Record once, price many: a step traced once per path into an op graph, each rule set priced from it.

A trace of ``step(mesh)`` on the meta backend under the search's memo (``plan.memo.OpMemo``) is a
sequence of top-level op calls (every op, VJP, gradient finish and creation op goes through the memo)
with plain Python between them. ``GraphSet.record`` runs the step once and keeps that sequence: for
each call its op, static arguments and which earlier arrays are its operands (numbered), the arrays it
returns, which arrays die between calls (the live set, for the peak memory), the leaves and wraps made
between calls, and the *guards*: the few places where the Python between the ops reads an array's
layout (``core.tape`` resolving a pending input, the backward pass joining and ordering cotangents by
their pending axes; ``memo_hook.observe``). ``plan.record`` makes that sequence (the recorder and its memo);
this module keeps the paths and walks them.

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
from ..mesh import Mesh
from .evaluate import evaluate_layout
from .events import ALIAS as _ALIAS
from .events import CALL as _CALL
from .events import FREE as _FREE
from .events import GUARD as _GUARD
from .memo import _NEVER, RuleWatch, _Entry, aliases
from .model import MEMORY_TRAFFIC, Clock, flop_rate
from .model import price as price_profile
from .record import (
    _MESH,
    GraphMemo,
    _outcome,
    _Recorder,
    _RecordingProfile,
    _shape,
    _Slot,
    _TopWatch,
    _value,
    with_slots,
)
from .repeat import Notes, Span


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
    #: the bytes of every local block the walk made live, summed (a block freed and made live again counts again):
    #: the live bytes never pass it plus the largest op excursion, and it is affine in a step's layer count like the
    #: other sums (``search``'s deferral bounds a deep step's peak with it); ``inf`` where it is not known (a trace)
    allocated_bytes: float = math.inf


class Stop(BaseException):
    """``GraphSet.price`` passed its time or memory cut (the figures so far only grow; not an error)."""


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
                        shapes.append((b[2], b[3]))  # (the dtype itself: bfloat16's .str is "<V2")
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

        try:
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
        finally:
            visit = None  # type: ignore[assignment]  # (a recursive closure is a cycle: break it, no GC needed)
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
        mem = peak = made_b = 0
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
                sums = (flops, comm_b, wire_b, written, comm_t, run_c, made_b)
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
                            made_b += nbytes
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
                        made_b += nbytes
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
        return self._figures(flops, comm_b, wire_b, written, comm_t, by_dtype, peak, made_b)

    def _figures(
        self,
        flops: float,
        comm_b: float,
        wire_b: float,
        written: float,
        comm_t: float,
        by_dtype: dict[str, float],
        peak: int,
        allocated: float = math.inf,
    ) -> Figures:
        """A walk's figures from its sums: the compute time from the flops of each dtype at its rate, the memory
        time from the bytes written (``allocated``: ``Figures.allocated_bytes``)."""
        rates, hw = self._rates, self.hw
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
            allocated_bytes=allocated,
        )

    def _key_of(self, ev: tuple, opsigs: list) -> tuple:
        sig_of = dict(zip(ev[5], opsigs))
        key = (*with_slots(ev, sig_of.__getitem__), *aliases(list(ev[5])))  # (``OpMemo._key``'s order)
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
        try:
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
        finally:
            # a recursive closure is a cycle (function -> cell -> function) that would keep this run's arrays,
            # mesh and profile for the garbage collector: about a fifth of a small search's time went to it
            build = None  # type: ignore[assignment]
            mesh.constants.clear()  # (the mesh's constants are arrays on the mesh: another cycle, as the run ends)
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
