"""A per-op memo for the layout search: an op priced once per operand signature, replayed after.

On the meta backend an op's results (their dims, sizes, layout axes, pending
axes, dtype and which blocks they share with the operands) and what the
profiler sees of it (local einsum flops, collective records, bytes written,
the live-memory excursion while it runs) depend only on the op, its static
arguments, its operands' signatures, the mesh shape and the mesh's layout rules
*for the dims the op looks up*. ``OpMemo`` keeps them for one search: the first
call of a signature runs the op with a recorder attached (the dims whose rules
it consults are recorded too, through ``RuleWatch``); a later call with the same
signature and the same rules for those dims makes fresh meta arrays with the
recorded signatures and replays the recorded events into the open profile, in
the same order, so every total the cost model reads comes out bit for bit the
same. Repeated layers, the backward pass of repeated layers, and rule sets that
agree on an op's dims skip the op's body. The backward pass's VJPs go through it as
whole ops too (``OpMemo.call_vjp``, called by ``core.tape.backward`` while a
memo is active): a VJP's context is its operands and static arguments, so a
replayed VJP skips its body (its elementwise helpers, broadcasts, scatters) at once.

The constants the mesh has made so far (``Mesh.constants``: causal masks) are part of the key: the call
that makes one is not replayable (it keeps the mask past its return), the later calls are.

An op whose call cannot be keyed (an array inside a container argument, an
unhashable static argument), that has a side effect the replay would miss
(caching a resolution on an operand, keeping buffers alive past its return,
counting an array made before the profile) or whose results are not plain
arrays is run as it is, every time. The memo is inert outside
``evaluate_layout(..., memo=...)`` (a context variable, ``core.tape.OP_MEMO``).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .. import profiler
from ..array import ShardArray
from ..backend.classlist import ClassList
from ..backend.meta import MetaArray
from ..comm.log import _ACTIVE as _LOGS
from ..comm.log import CommLog, CommRecord
from ..core.tape import OP_MEMO, Context
from ..mesh import Mesh

_NO = object()  # a call that is not memoised
_NEVER: list = []  # ``OpMemo._entries`` value of a key whose calls always run as they are (never appended to)


class RuleWatch(dict):
    """A mesh's rules dict that records which dims are looked up while ``seen`` is a set."""

    seen: set | None = None
    everything = False

    def __contains__(self, dim: object) -> bool:
        if self.seen is not None:
            self.seen.add(dim)
        return dict.__contains__(self, dim)

    def __getitem__(self, dim: str) -> tuple[str, ...]:
        if self.seen is not None:
            self.seen.add(dim)
        return dict.__getitem__(self, dim)

    def get(self, dim: str, default: Any = None) -> Any:
        if self.seen is not None:
            self.seen.add(dim)
        return dict.get(self, dim, default)

    def _all(self) -> None:
        if self.seen is not None:
            self.everything = True

    def __iter__(self) -> Any:
        self._all()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self._all()
        return dict.keys(self)

    def items(self) -> Any:
        self._all()
        return dict.items(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)

    def copy(self) -> dict:
        self._all()
        return dict(dict.items(self))


class _Recorder:
    """Pushed on the profile stack (after the search's profile) while an op runs for the first time."""

    def __init__(self, outer: profiler.Profile) -> None:
        self.outer = outer
        self.flops: list[tuple[float, str, str]] = []  # (flops, dtype, the op name they count under)
        self.calls: list[str] = []  # op scopes opened at the top while it ran (an op called outside any)
        self.peak = outer.memory_bytes
        self.last_peak = outer.peak_memory_bytes_per_device
        self.bad = False
        self._einsum_results: set[int] = set()

    def _track(self, array: Any, made_here: bool = True) -> None:
        if not made_here:
            self.bad = True
        self.peak = max(self.peak, self.outer.memory_bytes)
        self.last_peak = self.outer.peak_memory_bytes_per_device

    def _touch(self, args: Any) -> None:
        # the profile before this one counted an array made before it (it raises the earlier peak): not replayable
        if self.outer.peak_memory_bytes_per_device != self.last_peak:
            self.bad = True

    def _on_flops(self, flops: float, dtype: str) -> None:
        self.flops.append((flops, dtype, _scope()))

    def _op_named(self, name: str) -> Any:
        # a scope opened inside the op while none was open (an op called outside every op, like a gradient's
        # finish): its calls are replayed under its name
        self.calls.append(name)
        return profiler.OpCost()


def _scope() -> str:
    """The op name the profile counts an event under now (``Profile._op``)."""
    scopes = profiler._SCOPE.get()
    return scopes[0] if scopes else profiler.OTHER


class _RecordLog(CommLog):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def add(self, record: CommRecord) -> None:
        self.records.append(record)
        self.names.append(_scope())


class _Entry:
    """One recorded call: its rules, its results' template and its profile events."""

    __slots__ = (
        "calls",
        "consulted",
        "excursion",
        "flops",
        "names",
        "records",
        "rules",
        "template",
        "written",
        "written_by",
    )

    def __init__(
        self,
        consulted: tuple[str, ...] | None,
        rules: tuple,
        template: Any,
        flops: list,
        records: list,
        excursion: int,
        written: float,
        names: list[str] | None = None,
        calls: list[str] | None = None,
        written_by: tuple = (),
    ) -> None:
        self.consulted, self.rules, self.template = consulted, rules, template
        self.flops, self.records, self.excursion, self.written = flops, records, excursion, written
        self.names = names if names is not None else [profiler.OTHER] * len(records)  # op name of each record
        self.calls = calls or []  # op scopes opened at the top inside the call, counted again on replay
        self.written_by = written_by  # ((op name, bytes written under it), ...)


class OpMemo:
    """The memo of one search (one mesh shape, meta backend). ``hits``/``misses``/``skipped`` count calls."""

    def __init__(self) -> None:
        self._entries: dict[tuple, list[_Entry]] = {}  # key -> entries, or ``_NEVER``: always run as it is
        self.hits = self.misses = self.skipped = 0
        self.mesh_shape: tuple | None = None
        self.last_entry: _Entry | None = None  # the entry the last call replayed or recorded (None: it ran as it is)
        self.never: dict[str, int] = {}  # op name -> which check of ``_record`` made its last key unreplayable
        self._shard_keys: dict[int, tuple] = {}  # id(shards) -> (shards, key), for one trace

    def bind(self, mesh: Mesh) -> None:
        """Use the memo on ``mesh``: a memo holds one mesh shape, and starts afresh on another."""
        self._shard_keys.clear()  # per trace: it holds the blocks it keys, so their ids stay theirs
        shape = tuple(mesh.shape.items())
        if shape != self.mesh_shape:
            self._entries.clear()
            self.mesh_shape = shape

    # ------------------------------------------------------------------ keys
    def _key(self, name: str, args: tuple, kwargs: dict) -> tuple | None:
        parts: list[Any] = [name]
        for a in args:
            k = self._array_key(a) if type(a) is ShardArray else _arg_key(a)
            if k is _NO:
                return None
            parts.append(k)
        for n in sorted(kwargs):
            k = _arg_key(kwargs[n])
            if k is _NO:
                return None
            parts.append((n, k))
        arrays = [id(a) for a in (*args, *kwargs.values()) if isinstance(a, ShardArray)]
        return (*parts, *aliases(arrays))  # hashed once, by the lookup in ``call`` (a TypeError there: not memoised)

    def _array_key(self, a: ShardArray) -> Any:
        if a.host_range is not None:
            return _NO
        hit = self._shard_keys.get(id(a.shards))
        if hit is None or hit[0] is not a.shards:
            hit = self._shard_keys[id(a.shards)] = (a.shards, _shards_key(a.shards))
        if a._resolved is not None:
            return _resolved_key(a, ("A", a._layout, a.pending, a.dtype, hit[1]), self._array_key)
        return ("A", a._layout, a.pending, a.dtype, hit[1])

    # ------------------------------------------------------------------ call
    def call(self, name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
        """``fn(*args, **kwargs)``, or its recorded result replayed."""
        profs = profiler._PROFILES.get()
        mesh = None
        for a in (*args, *kwargs.values()):
            if isinstance(a, ShardArray):
                mesh = a.mesh
                break
            if isinstance(a, Mesh) and mesh is None:
                mesh = a  # a creation op: every array of the trace is on this mesh
        rules = None if mesh is None else mesh.__dict__.get("rules")
        key = None
        if (
            len(profs) == 1
            and isinstance(rules, RuleWatch)
            and rules.seen is None
            and mesh is not None
            and getattr(mesh.backend, "name", None) == "meta"
        ):
            key = self._key(name, args, kwargs)
            if key is not None and mesh.constants:
                # the constants made so far (causal masks): an op that makes one keeps it past its return and is
                # not replayable, the same op once it exists is (a mesh's constants only grow, within a trace)
                key = (*key, ("constants", tuple(mesh.constants)))
        entries = None
        if key is not None:
            try:
                entries = self._entries.get(key, ())
            except TypeError:  # an unhashable static argument
                key = None
        if key is None or entries is _NEVER:
            self.skipped += 1
            self.last_entry = None
            return _plain(fn, args, kwargs)
        # keyed: the rules are a RuleWatch, so the mesh is set, and the lookup gave the entries
        mesh, rules, entries = cast(Mesh, mesh), cast(RuleWatch, rules), cast("list[_Entry] | tuple[()]", entries)
        current: tuple[Any, ...]
        for entry in entries:
            if entry.consulted is None:
                current = tuple(dict.items(rules))
            else:
                current = tuple(dict.get(rules, d) for d in entry.consulted)
            if current == entry.rules:
                self.hits += 1
                self.last_entry = entry
                return self._replay(entry, profs[0], mesh, args, kwargs)
        self.misses += 1
        self.last_entry = None
        return self._record(key, fn, args, kwargs, profs[0], mesh, rules)

    def call_vjp(self, name: str, vjp: Any, ctx: Any, g: ShardArray) -> Any:
        """``vjp(ctx, g)`` (the backward pass of op ``name``, ``core.tape.backward``), or its recorded result.

        The context is passed flat, as operands (``g``, ``ctx.out``, ``ctx.args``, the arrays or static values
        of ``ctx.saved``) and static arguments, so a VJP is keyed and replayed like an op (``vjp:<name>``);
        a context the memo cannot key (an array inside a container argument, say) runs as it is.
        """
        saved = ctx.saved
        if saved is None or isinstance(saved, ShardArray):
            shape: Any = ("one",)
            items: tuple = (saved,)
        elif type(saved) in (tuple, list):
            shape, items = (type(saved).__name__, len(saved)), tuple(saved)
        else:
            shape, items = ("one",), (saved,)
        n = len(ctx.args)
        flat = (g, ctx.out, *ctx.args, *items)
        ids = [id(x) if isinstance(x, ShardArray) else -1 for x in flat]
        alias = tuple([ids.index(i) if i != -1 else -1 for i in ids])  # operands that are one array (``x * x``)
        spec = (n, shape, ctx.needs, alias)
        return self.call(f"vjp:{name}", _VjpCall(vjp, ctx.needs, n, shape), (*flat, spec), ctx.kwargs)

    def _record(
        self, key: tuple, fn: Any, args: tuple, kwargs: dict, prof: profiler.Profile, mesh: Mesh, rules: RuleWatch
    ) -> Any:
        operands = [a for a in (*args, *kwargs.values()) if isinstance(a, ShardArray)]
        before = [(a._resolved, a.pending) for a in operands]
        rec, log = _Recorder(prof), _RecordLog()
        m0, w0 = prof.memory_bytes, prof.written_bytes_per_device
        by0 = {n: c.written_bytes for n, c in prof.ops.items()}
        constants = dict(mesh.constants)
        rules.seen, rules.everything = set(), False
        profiler._PROFILES.append(rec)
        _LOGS.append(log)
        token = OP_MEMO.set(None)  # ops inside this one run as they are
        try:
            result = fn(*args, **kwargs)
        finally:
            OP_MEMO.reset(token)
            _LOGS.remove(log)
            profiler._PROFILES.remove(rec)
            seen, everything = rules.seen, rules.everything
            rules.seen, rules.everything = None, False
        if rec.bad or any(a.pending != b[1] for a, b in zip(operands, before)):
            self._entries[key] = _NEVER
            self.never[key[0]] = 0
            return result
        # a pending operand resolved inside the op keeps its reduction (``relayout.resolve``): replayed too
        cached = tuple((i, a._resolved) for i, a in enumerate(operands) if a._resolved is not before[i][0])
        if any(not (isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], ShardArray)) for _, r in cached):
            self._entries[key] = _NEVER
            self.never[key[0]] = 1
            return result
        # a constant the op made for the mesh (a causal mask) stays alive past its return: replayed too
        made = tuple((k, v) for k, v in mesh.constants.items() if constants.get(k) is not v)
        if any(k in constants or not isinstance(v, ShardArray) for k, v in made):
            self._entries[key] = _NEVER
            self.never[key[0]] = 2
            return result
        both = (result, tuple((i, r[0], r[1]) for i, r in cached), made)
        template = _template(both, operands, mesh)
        if template is _NO or prof.memory_bytes - m0 != _new_bytes(both, operands, mesh):
            self._entries[key] = _NEVER
            self.never[key[0]] = 3
            return result
        current: tuple[Any, ...]
        if everything:
            consulted, current = None, tuple(dict.items(rules))
        else:
            consulted = tuple(sorted(seen, key=str))
            current = tuple(dict.get(rules, d) for d in consulted)
        written_by = tuple(
            (n, c.written_bytes - by0.get(n, 0.0)) for n, c in prof.ops.items() if c.written_bytes != by0.get(n, 0.0)
        )
        entry = _Entry(
            consulted,
            current,
            template,
            rec.flops,
            log.records,
            rec.peak - m0,
            prof.written_bytes_per_device - w0,
            log.names,
            rec.calls,
            written_by,
        )
        self._entries.setdefault(key, []).append(entry)
        self.last_entry = entry
        return result

    def _replay(self, entry: _Entry, prof: profiler.Profile, mesh: Mesh, args: tuple, kwargs: dict) -> Any:
        """The recorded events in order; the profile's watcher sees the totals once, after them all (time and
        memory only grow, so a trace it stops is stopped as it would have been, a little later)."""
        watcher, prof._on_update = prof._on_update, None
        try:
            result = self._events(entry, prof, mesh, args, kwargs)
        finally:
            prof._on_update = watcher
        prof._changed()
        return result

    def _events(self, entry: _Entry, prof: profiler.Profile, mesh: Mesh, args: tuple, kwargs: dict) -> Any:
        top = prof.memory_bytes + entry.excursion
        prof.peak_memory_bytes_per_device = max(prof.peak_memory_bytes_per_device, top)
        for flops, dtype, name in entry.flops:  # Profile._on_flops, under the op name recorded
            prof.flops_per_device += flops
            prof.flops_by_dtype[dtype] = prof.flops_by_dtype.get(dtype, 0.0) + flops
            prof._op_named(name).flops += flops
        own = prof._log
        for r, name in zip(entry.records, entry.names):
            for lg in _LOGS:
                if lg is own:  # Profile._on_record, under the op name recorded
                    own.records.append(r)
                    prof.comm_bytes_per_device += r.bytes
                    prof.wire_bytes_per_device += r.wire_bytes
                    op = prof._op_named(name)
                    op.comm_bytes += r.bytes
                    op.wire_bytes += r.wire_bytes
                else:
                    lg.add(r)
        for name in entry.calls:
            prof._op_named(name).calls += 1
        operands = [a for a in (*args, *kwargs.values()) if isinstance(a, ShardArray)]
        result_t, cached_t, made_t = entry.template[1]  # the template of (result, cached resolutions, constants)
        if result_t[0] == "array" and not cached_t[1] and not made_t[1]:  # the common case: one new array
            result = _build_array(result_t, operands, mesh, prof, {})
            if entry.written:
                prof.written_bytes_per_device += entry.written
                for name, w in entry.written_by:
                    prof._op_named(name).written_bytes += w
            return result
        state: dict = {}
        result = _build(result_t, operands, mesh, prof, state)
        if cached_t[1]:
            for i, target, array in _build(cached_t, operands, mesh, prof, state):
                operands[i]._resolved = (target, array)
        if made_t[1]:
            for k, array in _build(made_t, operands, mesh, prof, state):
                mesh.constants[k] = array
        if entry.written:
            prof.written_bytes_per_device += entry.written
            for name, w in entry.written_by:
                prof._op_named(name).written_bytes += w
        return result


class _VjpCall:
    """A VJP called on a flat context (``OpMemo.call_vjp``): rebuilds the ``Context`` and calls it."""

    __slots__ = ("n", "needs", "shape", "vjp")

    def __init__(self, vjp: Any, needs: tuple, n: int, shape: Any) -> None:
        self.vjp, self.needs, self.n, self.shape = vjp, needs, n, shape

    def __call__(self, g: ShardArray, out: ShardArray, /, *rest: Any, **kwargs: Any) -> Any:  # any kwarg names

        args, items = rest[: self.n], rest[self.n : -1]
        saved = items[0] if self.shape == ("one",) else (tuple(items) if self.shape[0] == "tuple" else list(items))
        return self.vjp(Context(tuple(args), kwargs, out, self.needs, saved), g)


def _plain(fn: Any, args: tuple, kwargs: dict) -> Any:
    token = OP_MEMO.set(None)
    try:
        return fn(*args, **kwargs)
    finally:
        OP_MEMO.reset(token)


def aliases(operands: list) -> tuple:
    """The part of a call's key that says which of its array operands are one array (``y * y``), from their
    identities (ids, or a recorded call's value numbers, ``plan.graph``): ``()`` when they are distinct.

    Such a call resolves a pending operand once for both (the resolution is cached on the array), where one on two
    arrays of the same signature resolves each: their events differ, so their keys do.
    """
    if len(set(operands)) == len(operands):
        return ()
    return (("alias", tuple([operands.index(v) for v in operands])),)


_SIMPLE = frozenset((bool, int, float, str, bytes, type(None)))


def _arg_key(a: Any) -> Any:
    """A hashable stand-in for an argument (``_NO``: cannot be keyed)."""
    if isinstance(a, ShardArray):
        if a.host_range is not None:
            return _NO
        if a._resolved is not None:
            return _resolved_key(a, ("A", a._layout, a.pending, a.dtype, _shards_key(a.shards)), _arg_key)
        return ("A", a._layout, a.pending, a.dtype, _shards_key(a.shards))
    t = type(a)
    if t in _SIMPLE:  # the usual static arguments: the same key as the isinstance test below gives them
        return (t.__name__, a)
    if a is None or isinstance(a, (bool, int, float, str, bytes, np.dtype, type)):
        return (type(a).__name__, a)
    if isinstance(a, (tuple, list)):
        out = [type(a).__name__]
        for x in a:
            k = _arg_key(x)
            if k is _NO or isinstance(x, ShardArray):
                return _NO
            out.append(k)
        return tuple(out)
    if isinstance(a, dict):
        items = []
        for n, x in a.items():
            k = _arg_key(x)
            if k is _NO or isinstance(x, ShardArray) or not isinstance(n, (str, int)):
                return _NO
            items.append((n, k))
        return ("dict", tuple(items))  # in order: a shape map's order is its array's dims order
    if isinstance(a, Mesh):
        return ("mesh",)  # one mesh shape per memo (``OpMemo.bind``); its rules are watched
    if (
        callable(a)
        and getattr(a, "__module__", "").startswith("shardarray")
        and hasattr(a, "__qualname__")
        and "<locals>" not in a.__qualname__
        and "<lambda>" not in a.__qualname__
    ):
        return ("fn", a.__module__, a.__qualname__)
    try:
        if (
            type(a).__hash__ is not None
            and getattr(type(a), "__dataclass_params__", None) is not None
            and type(a).__dataclass_params__.frozen
        ):
            hash(a)
            return ("dc", type(a).__qualname__, a)
    except TypeError:
        return _NO
    return _NO


def _resolved_key(a: ShardArray, base: tuple, key: Any) -> Any:
    """The key of a pending array whose reduction is cached (``relayout.resolve``): its own and the cache's.

    An op that reuses the cached reduction is keyed apart from one that would run it. One whose results
    share the cached reduction's blocks is not replayable (its live memory does not grow by those blocks,
    ``OpMemo._record`` checks) and runs as it is; the VJPs that only carry such an array (``ctx.out`` of an
    einsum whose sum a consumer reduced) are replayed.
    """
    target, array = a._resolved
    inner = key(array) if type(array) is ShardArray and array._resolved is None else _NO
    if inner is _NO or not isinstance(target, tuple):
        return _NO
    return (*base, ("R", target, inner))


def _classes(shards: Any) -> tuple[tuple, np.ndarray]:
    """The distinct blocks of ``shards`` and each device's position among them (a ``ClassList`` or a tuple)."""
    if type(shards) is ClassList:
        return shards.values, shards.index
    pos: dict[int, int] = {}
    values: list[Any] = []
    index = np.empty(len(shards), dtype=np.intp)
    for d, v in enumerate(shards):
        n = pos.get(id(v))
        if n is None:
            n = pos[id(v)] = len(values)
            values.append(v)
        index[d] = n
    return tuple(values), index


def _shards_key(shards: Any) -> Any:
    """The blocks' shapes and dtypes and which devices share one (the layout fixes them; this is cheap)."""
    if type(shards) is tuple and shards:  # per-device blocks (some meta paths): keyed by their classes
        values, index = _classes(shards)
        if all(type(v) is MetaArray for v in values):
            return ("T", tuple((v.shape, v.dtype) for v in values), index.tobytes())
        return _NO
    if type(shards) is ClassList:
        return (
            "C",
            tuple(None if v is None else (v.shape, v.dtype) if type(v) is MetaArray else _NO for v in shards.values),
            shards.index.tobytes(),
        )
    return _NO


# ------------------------------------------------------------------ results
def _template(result: Any, operands: list[ShardArray], mesh: Mesh) -> Any:
    """The structure of ``result`` with each array as a recipe (``_NO`` when it is not plain).

    Plain functions, no closures: a recursive closure is a reference cycle that would keep the operands
    alive until the next garbage collection, and change the live memory the profile sees.
    """
    where: dict[int, tuple] = {}  # id(block) -> ("op", operand, position): blocks shared with operands
    for i, a in enumerate(operands):
        if type(a.shards) is not ClassList and type(a.shards) is not tuple:
            return _NO
        for j, v in enumerate(_classes(a.shards)[0]):
            where.setdefault(id(v), ("op", i, j))
    try:
        return _walk(result, operands, mesh, where, {}, {})
    except _Unplain:
        return _NO


def _walk(x: Any, operands: list[ShardArray], mesh: Mesh, where: dict, made: dict, arrays: dict) -> Any:
    if isinstance(x, ShardArray):
        for i, a in enumerate(operands):
            if x is a:
                return ("same", i)
        plain = type(x.shards) is ClassList
        if (
            x.mesh is not mesh
            or not (plain or (type(x.shards) is tuple and len(x.shards) == mesh.size))
            or x._resolved is not None
            or x.host_range is not None
            or x._node is not None
            or type(x) is not ShardArray
        ):
            raise _Unplain
        n = arrays.get(id(x))
        if n is not None:
            return ("again", n)
        arrays[id(x)] = len(arrays)
        blocks: list[Any] = []
        values, index = _classes(x.shards)
        for v in values:
            if v is None:
                blocks.append(None)
            elif id(v) in where:
                blocks.append(where[id(v)])
            elif type(v) is MetaArray:
                blocks.append(("new", made.setdefault(id(v), len(made)), v.shape, v.dtype))
            else:
                raise _Unplain
        local = blocks[index[mesh.local_device]]  # made by the op: its bytes written go with the op's
        fresh = local is not None and local[0] == "new"
        return ("array", arrays[id(x)], x._layout, x.dtype, x.pending, index, tuple(blocks), fresh, plain)
    if isinstance(x, (tuple, list)):
        return (
            "tuple" if isinstance(x, tuple) else "list",
            tuple(_walk(y, operands, mesh, where, made, arrays) for y in x),
        )
    if isinstance(x, dict):
        return ("dict", tuple((k, _walk(v, operands, mesh, where, made, arrays)) for k, v in x.items()))
    if x is None or isinstance(x, (bool, int, float, str, np.dtype)):
        return ("value", x)
    raise _Unplain


class _Unplain(Exception):
    pass


def _new_bytes(result: Any, operands: list[ShardArray], mesh: Mesh) -> int:
    """Bytes of the distinct local blocks of ``result`` that are not an operand's (what it adds to live memory)."""
    seen = {id(a.shards[mesh.local_device]) for a in operands}
    stack, total = [result], 0
    while stack:
        x = stack.pop()
        if isinstance(x, ShardArray):
            s = x.shards[mesh.local_device]
            if s is not None and id(s) not in seen:
                seen.add(id(s))
                total += int(s.nbytes)
        elif isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    return total


def _build(t: Any, operands: list[ShardArray], mesh: Mesh, prof: profiler.Profile, state: dict) -> Any:
    """A fresh result from a template: new meta blocks where the op made them, the operands' where it shared."""
    kind = t[0]
    if kind == "array":
        made = state.get("blocks")
        if made is None:
            made = state["blocks"] = {}
        arr = _build_array(t, operands, mesh, prof, made)
        arrays = state.get("arrays")
        if arrays is None:
            arrays = state["arrays"] = {}
        arrays[t[1]] = arr
        return arr
    if kind == "same":
        return operands[t[1]]
    if kind == "again":
        return state["arrays"][t[1]]
    if kind == "tuple":
        return tuple([_build(y, operands, mesh, prof, state) for y in t[1]])
    if kind == "list":
        return [_build(y, operands, mesh, prof, state) for y in t[1]]
    if kind == "dict":
        return {k: _build(v, operands, mesh, prof, state) for k, v in t[1]}
    return t[1]


def _build_array(t: tuple, operands: list[ShardArray], mesh: Mesh, prof: profiler.Profile, made: dict) -> ShardArray:
    """One array of a template (``made``: the new blocks of this call so far, by their number in the template)."""
    _, _, layout, dtype, pending, index, blocks, fresh, plain = t
    values: list[Any] = []
    for b in blocks:
        if b is None:
            values.append(None)
        elif b[0] == "op":
            values.append(_classes(operands[b[1]].shards)[0][b[2]])
        else:
            v = made.get(b[1])
            if v is None:
                v = made[b[1]] = MetaArray.__new__(MetaArray)
                v.shape, v.dtype = b[2], b[3]
            values.append(v)
    local = values[index[mesh.local_device]]
    if fresh:  # its bytes written are replayed with the op's (the profile drops the mark as it counts it)
        prof._einsum_results.add(id(local))
    shards = ClassList(values, index) if plain else tuple([values[i] for i in index])
    arr = ShardArray._trusted(mesh, layout, dtype, shards, pending)
    if fresh:
        prof._einsum_results.discard(id(local))  # already live (a second array on a block made here)
    return arr
