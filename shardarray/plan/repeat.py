"""A deep model priced from a walk of its seven-layer twin: the repeated layers' figures scaled, their peak placed.

A path built by ``plan.deep`` repeats the middle layer's runs: the parameters' creation, the forward pass, the
backward pass and the gradients' finish each hold ``L - 4`` copies of one run of events, one per layer (``Span``).
``LayeredGraphSet`` also builds the seven-layer path (three copies of each run: the probe) and walks it instead of
the ``L``-layer one. The walk notes (``Notes``), at each copy's start and each run's end, the live bytes, the
figures so far and the peak of the live bytes since the last note; at the second and third copy's start it reads
the state of every value the copy touches (``Reader``: signature number, blocks' tokens and how many arrays hold
each, cached resolution), in names that make two copies comparable.

Where the second and third copies of every run start from the same state, the walk of every later copy would too:
the walk of a copy reads nothing but that state, so it takes the same memo entries, guards and paths and makes the
same change, which leaves the next copy the same state again (its inputs are the copy before it's outputs, the
same layer's values of earlier runs, and values no copy changes, or the states would differ). Then every summed
figure of the ``L``-layer path is the probe's plus ``L - 7`` times the third copy's, and its peak live memory is the
largest of the probe's stretches between notes, each moved by what the added copies before it leave live (the
copies of one run rise by the same bytes each, so their largest is the first or the last). ``Notes.scale`` gives
those figures; where a state differs, or the walk moved to another path, it gives None and the ``L``-layer path is
walked instead. ``tests/plan/test_plan_deep.py`` holds both against full traces (to 1e-12, the peak exactly);
``tests/plan/test_plan_repeat.py`` places the peak on a walk made by hand.
"""

from __future__ import annotations

from typing import Any

from .events import ALIAS, CALL, FREE

#: the copies of each repeated run in the probe path: the first reads a layer the run does not repeat, the second
#: and third are compared
PROBE_COPIES = 3


class Span:
    """``count`` copies of ``period`` events from event ``start`` of a built path (``plan.deep.layered``)."""

    __slots__ = ("count", "period", "start")

    def __init__(self, start: int, period: int, count: int) -> None:
        self.start, self.period, self.count = start, period, count

    def values(self, events: list[tuple], j: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The distinct values copy ``j``'s events read, make or free, in order of first use, and where each use
        falls in that order (two copies with the same second part use their values the same way)."""
        order: dict[int, int] = {}
        uses: list[int] = []
        a = self.start + j * self.period
        for ev in events[a : a + self.period]:
            code = ev[0]
            if code == CALL:
                vs: Any = (*ev[5], *ev[6], *ev[12])
            elif code == FREE:
                vs = (ev[1],)
            elif code == ALIAS:
                vs = (ev[1], ev[2])
            else:
                vs = ev[2]
            for v in vs:
                if v is not None:
                    uses.append(order.setdefault(v, len(order)))
        return tuple(order), tuple(uses)


def read_state(values: tuple[int, ...], sid: dict, toks: dict, res: dict, live: dict) -> tuple:
    """The walk's state of ``values`` in comparable names: each value's signature number, its blocks' tokens (named
    in the order met) and its cached resolution (a value of ``values`` by place, another one by the order met, its
    own state read after), then how many arrays hold each token named."""
    place = {v: n for n, v in enumerate(values)}
    tokens: dict[Any, int] = {}
    others: dict[int, int] = {}
    todo = list(values)
    states: list[tuple] = []
    n = 0
    while n < len(todo):
        v = todo[n]
        n += 1
        s = sid.get(v)
        if s is None:
            states.append(())
            continue
        names = tuple(None if t is None else tokens.setdefault(t, len(tokens)) for t in toks[v])
        r = res.get(v)
        where: Any = None
        if r is not None:
            where = place.get(r)
            if where is None:
                o = others.get(r)
                if o is None:
                    o = others[r] = len(others)
                    todo.append(r)
                where = ("other", o)
        states.append((s, names, where))
    return tuple(states), tuple(live.get(t, 0) for t in tokens)


class Notes:
    """What a walk of a probe path notes (``GraphSet._walk(notes=...)``) to price the path with more copies."""

    def __init__(self, spans: list[Span], events: list[tuple]) -> None:
        self.spans, self.events = spans, events
        marks: dict[int, list[tuple[int, int]]] = {}
        for n, s in enumerate(spans):
            for j in range(s.count + 1):  # each copy's start, and the run's end (j == count)
                marks.setdefault(s.start + j * s.period, []).append((n, j))
        for got in marks.values():
            got.sort(key=lambda nj: nj[1] < spans[nj[0]].count)  # (a run's end before the next one's start)
        self.marks = marks
        self.order = sorted(marks)
        self.stretches: list[tuple[Any, int]] = []  # (what the stretch is, its peak of live bytes)
        self.tag: Any = "start"
        self.at: dict[tuple[int, int], tuple] = {}  # (run, copy) -> (live bytes, sums, flops by dtype) at its start
        self.state: dict[tuple[int, int], tuple] = {}  # (run, copy) -> its values' state (copies 1 and 2)
        self.moved = False  # the walk moved to another path: the notes do not describe one path

    def first_after(self, i: int) -> int:
        """The first mark after event ``i`` (-1: none)."""
        for k in self.order:
            if k > i:
                return k
        return -1

    def mark(
        self, i: int, mem: int, peak: int, sums: tuple, by_dtype: dict, sid: dict, toks: dict, res: dict, live: dict
    ) -> int:
        """Note the stretch that ends at event ``i`` and what starts there; returns the peak to start from."""
        self.stretches.append((self.tag, peak))
        for k, (n, j) in enumerate(self.marks[i]):
            if k:  # (two marks at one event: the stretch between them is empty, its level the live bytes now)
                self.stretches.append((self.tag, mem))
            span = self.spans[n]
            self.at[(n, j)] = (mem, sums, dict(by_dtype))
            if j == span.count:
                self.tag = ("after", n)
                continue
            self.tag = (n, j)
            if j in (1, 2):
                values, uses = span.values(self.events, j)
                self.state[(n, j)] = (uses, read_state(values, sid, toks, res, live))
        return mem

    def end(self, peak: int) -> None:
        """The walk's end: note the last stretch."""
        self.stretches.append((self.tag, peak))

    def scale(self, extra: int, sums: tuple, by_dtype: dict) -> Any:
        """The figures of the path with ``extra`` more copies of every run, from the probe walk's (``sums``: flops,
        comm bytes, wire bytes, bytes written, comm time, compute time, bytes allocated; ``by_dtype``: flops by dtype):
        ``(sums, by_dtype, peak)``, or None where a run's second and third copies start from different states (or
        the walk moved to another path)."""
        if self.moved or any(s.count != PROBE_COPIES for s in self.spans):
            return None
        grew = []
        add = [0.0] * len(sums)
        dt_add: dict[str, float] = {}
        for n in range(len(self.spans)):
            if self.state.get((n, 1)) != self.state.get((n, 2)) or (n, 1) not in self.state:
                return None
            (m1, s1, _), (m2, s2, d2), (m3, s3, d3) = self.at[(n, 1)], self.at[(n, 2)], self.at[(n, 3)]
            if m3 - m2 != m2 - m1 or any(
                abs((c - b) - (b - a)) > 1e-9 * max(1.0, abs(c)) for a, b, c in zip(s1, s2, s3)
            ):
                return None  # (the same states make the same change: a safeguard)
            grew.append(m3 - m2)
            for k in range(len(sums)):
                add[k] += s3[k] - s2[k]
            for d, f in d3.items():
                if f != d2.get(d, 0.0):
                    dt_add[d] = dt_add.get(d, 0.0) + f - d2.get(d, 0.0)
        peak = 0
        done = 0  # the live bytes each added copy of the runs ended so far leaves
        for tag, top in self.stretches:
            if tag == "start":
                slope = 0
            elif tag[0] == "after":
                slope = done = done + grew[tag[1]]
            else:
                n, j = tag
                slope = done + (grew[n] if j == PROBE_COPIES - 1 else 0)  # the last copy stands for the last of L
            peak = max(peak, top + extra * slope)
        out_sums = tuple(a + extra * b for a, b in zip(sums, add))
        out_dt = dict(by_dtype)
        for d, f in dt_add.items():
            out_dt[d] = out_dt.get(d, 0.0) + extra * f
        return out_sums, out_dt, peak

    def switch(self, spans: list[Span], events: list[tuple], i: int) -> None:
        """The walk moved at event ``i`` to another path (``spans``, ``events``) that shares every event before it:
        the notes go on there if the runs met so far are the same runs there."""
        new = Notes(spans, events)
        before = [(k, self.marks[k]) for k in self.order if k < i]
        if (
            before != [(k, new.marks[k]) for k in new.order if k < i]
            or any(
                (a.start, a.period, a.count) != (b.start, b.period, b.count)
                for a, b in zip(self.spans, spans)
                if a.start < i
            )
            or len(spans) < sum(1 for s in self.spans if s.start < i)
        ):
            self.moved = True
        self.spans, self.events, self.marks, self.order = new.spans, new.events, new.marks, new.order
