"""``sa.profile()``: per-device flops, communication and peak memory of any code, on any backend.

What is counted, per device (the device holding the largest blocks: device 0,
or this process's device under MPI; ceil-chunking gives device 0 the largest
block of every layout, so its figures are the maximum over the mesh):

* **flops**: the local einsums (``2·m·k·n`` a matmul; dims only one operand
  has are summed first, one flop an element), SUMMA/Tesseract's local steps
  included. Elementwise ops and reductions are not flops here; they show in
  ``written_bytes``.
* **communication**: every collective's ``CommRecord`` (the same as
  ``sa.comm_log()``): ``comm_bytes`` is the buffer each device puts in,
  ``wire_bytes`` what it sends under NCCL's ring algorithms.
* **memory**: the bytes of the distinct shard buffers held by live
  ``ShardArray``s (parameters, inputs, saved activations, gradients and
  pending partial sums); ``peak_memory_bytes_per_device`` is the largest
  such total. An array made before the block counts from the block's start
  once an op inside uses it (the parameters and inputs of a step); arrays the
  block never uses do not count.
  A view (reshape, transpose) counts as its own buffer, a shard shared by two
  arrays once. Raw buffers an op keeps outside a ShardArray are not seen.
* **written_bytes**: the bytes of every new shard buffer an op other than an
  einsum creates (the traffic of memory-bound ops).

Each figure is also broken down by op: the outermost public op running
(``einsum``, ``softmax``, ...), ``<op>.grad`` for its VJP in a backward pass,
``(other)`` outside any op. On the meta backend nothing is allocated, so a
4.9B-parameter model on a 512-device mesh profiles in seconds.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .backend.contract import plan2
from .comm.log import _ACTIVE as _LOGS
from .comm.log import CommLog, CommRecord, ThreadStack
from .errors import DTypeError

# Profiles are per thread: _PROFILES holds this thread's open profiles, _SCOPE its op-name stack.
# ACTIVE counts the profiles open in any thread: a cheap gate the hot paths test before the hooks run.
_PROFILES = ThreadStack("shardarray_profiles")
_SCOPE = ThreadStack("shardarray_profile_scope")
ACTIVE = 0
_COUNT_LOCK = threading.Lock()
OTHER = "(other)"


@dataclass
class OpCost:
    """The totals of one op name (per device)."""

    calls: int = 0
    flops: float = 0.0
    comm_bytes: float = 0.0
    wire_bytes: float = 0.0
    written_bytes: float = 0.0


def einsum_flops(equation: str, shapes: Sequence[tuple[int, ...]]) -> float:
    """Flops of one local einsum: ``2·batch·m·k·n`` for two operands (plus pre-sums), else the element count.

    Example:
        >>> sa.profiler.einsum_flops("mk,kn->mn", [(4, 6), (6, 8)])
        384.0
    """
    if len(shapes) == 2:
        p = plan2(equation, tuple(shapes[0]), tuple(shapes[1]))
        pre = (_prod(shapes[0]) if p.sum_a else 0) + (_prod(shapes[1]) if p.sum_b else 0)
        nb, nl, nk = p.shape_a
        return float(2 * nb * nl * nk * p.shape_b[2] + pre)
    lhs = equation.split("->")[0].split(",")
    size = {c: n for term, shape in zip(lhs, shapes) for c, n in zip(term, shape)}
    return float((len(shapes) - 1 or 1) * _prod(size.values()))


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


class _ProfileLog(CommLog):
    """A profile's comm log: each record also goes to the profile (held weakly: the profile holds its log, and
    a cycle would leave every finished profile to the garbage collector)."""

    def __init__(self, profile: Profile) -> None:
        super().__init__()
        self._profile = weakref.ref(profile)

    def add(self, record: CommRecord) -> None:
        super().add(record)
        profile = self._profile()
        if profile is not None:
            profile._on_record(record)


class Profile:
    """The totals of a ``with sa.profile() as prof:`` block (see the module docstring).

    Attributes:
        flops_per_device: local einsum flops.
        flops_by_dtype: the same, split by the operands' dtype.
        comm_bytes_per_device: bytes put into collectives.
        wire_bytes_per_device: bytes sent on the wire (ring algorithms).
        peak_memory_bytes_per_device: the largest live shard bytes seen.
        written_bytes_per_device: bytes of new buffers made by non-einsum ops.
        ops: ``{op name: OpCost}``, the per-op breakdown.
        records: every collective, in order.
        dims: every dim name seen on an array and its size.
        tensors: the distinct dim tuples of the arrays seen (the planner's legality check).
    """

    def __init__(self, on_update: Callable[[Profile], None] | None = None) -> None:
        self.flops_per_device = 0.0
        self.flops_by_dtype: dict[str, float] = {}
        self.comm_bytes_per_device = 0.0
        self.wire_bytes_per_device = 0.0
        self.written_bytes_per_device = 0.0
        self.memory_bytes = 0  # live now
        self.peak_memory_bytes_per_device = 0
        self.ops: dict[str, OpCost] = {}
        self.dims: dict[str, int] = {}
        self.tensors: set[tuple[str, ...]] = set()
        self._log = _ProfileLog(self)
        self._live: dict[int, list[int]] = {}  # id(shard) -> [arrays holding it, nbytes]
        self._einsum_results: set[int] = set()  # ids of shards local einsums just made
        self._arrays: dict[int, int] = {}  # id(array) -> id(shard), for the arrays tracked and alive
        self._on_update = on_update

    # ------------------------------------------------------------ context
    def __enter__(self) -> Profile:
        global ACTIVE
        _PROFILES.append(self)
        _LOGS.append(self._log)
        with _COUNT_LOCK:
            ACTIVE += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        global ACTIVE
        _PROFILES.remove(self)
        _LOGS.remove(self._log)
        with _COUNT_LOCK:
            ACTIVE -= 1

    @property
    def records(self) -> list[CommRecord]:
        return self._log.records

    # -------------------------------------------------------------- hooks
    def _op_named(self, name: str) -> OpCost:
        cost = self.ops.get(name)
        if cost is None:
            cost = self.ops[name] = OpCost()
        return cost

    def _op(self) -> OpCost:
        scopes = _SCOPE.get()
        return self._op_named(scopes[0] if scopes else OTHER)

    def _changed(self) -> None:
        if self._on_update is not None:
            self._on_update(self)

    def _on_record(self, r: CommRecord) -> None:
        self.comm_bytes_per_device += r.bytes
        self.wire_bytes_per_device += r.wire_bytes
        op = self._op()
        op.comm_bytes += r.bytes
        op.wire_bytes += r.wire_bytes
        self._changed()

    def _on_flops(self, flops: float, dtype: str) -> None:
        self.flops_per_device += flops
        self.flops_by_dtype[dtype] = self.flops_by_dtype.get(dtype, 0.0) + flops
        self._op().flops += flops
        self._changed()

    def _track(self, array: Any, made_here: bool = True) -> None:
        """Count ``array``'s shard: made inside the block, or (``made_here`` False) alive since before it."""
        for d, n in zip(array.dims, array.shape):
            self.dims.setdefault(d, n)
        self.tensors.add(array.dims)
        shard = array.shards[array.mesh.local_device]
        if shard is None:
            return
        key = id(shard)
        self._arrays[id(array)] = key
        weakref.finalize(array, self._release, id(array), key)
        entry = self._live.get(key)
        if entry is not None:
            entry[0] += 1
            return
        nbytes = int(shard.nbytes)
        self._live[key] = [1, nbytes]
        self.memory_bytes += nbytes
        if not made_here:  # it was alive all along: it raises every earlier total, the peak too
            self.peak_memory_bytes_per_device += nbytes
        elif self.memory_bytes > self.peak_memory_bytes_per_device:
            self.peak_memory_bytes_per_device = self.memory_bytes
        if made_here and key not in self._einsum_results:  # an einsum's output is counted as flops, not traffic
            self.written_bytes_per_device += nbytes
            self._op().written_bytes += nbytes
        self._einsum_results.discard(key)
        self._changed()

    def _touch(self, args: Any) -> None:
        """The arguments of an op: arrays made before the block are counted from its start."""
        for a in args:
            if isinstance(a, ARRAY_TYPES) and id(a) not in self._arrays:
                self._track(a, made_here=False)

    def _release(self, array_id: int, key: int) -> None:
        if self._arrays.get(array_id) == key:
            del self._arrays[array_id]
        entry = self._live.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            del self._live[key]
            self.memory_bytes -= entry[1]

    # ------------------------------------------------------------ reports
    def summary(self) -> str:
        """A plain-text table of the per-op breakdown and the totals."""
        head = f"{'op':<22}{'calls':>7}{'GFLOP':>12}{'comm MB':>12}{'wire MB':>12}{'written MB':>12}"
        lines = [head, "-" * len(head)]
        for name, c in sorted(self.ops.items(), key=lambda kv: -kv[1].flops):
            lines.append(
                f"{name:<22}{c.calls:>7}{c.flops / 1e9:>12.3f}{c.comm_bytes / 1e6:>12.3f}"
                f"{c.wire_bytes / 1e6:>12.3f}{c.written_bytes / 1e6:>12.3f}"
            )
        lines.append(
            f"{'total':<29}{self.flops_per_device / 1e9:>12.3f}{self.comm_bytes_per_device / 1e6:>12.3f}"
            f"{self.wire_bytes_per_device / 1e6:>12.3f}{self.written_bytes_per_device / 1e6:>12.3f}"
        )
        lines.append(f"peak memory per device: {self.peak_memory_bytes_per_device / 2**20:.3f} MiB")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"Profile(flops_per_device={self.flops_per_device:.4g}, comm_bytes_per_device="
            f"{self.comm_bytes_per_device:.4g}, peak_memory_bytes_per_device={self.peak_memory_bytes_per_device})"
        )


def profiling() -> bool:
    """Whether this thread has an open ``sa.profile()`` (profiles are per thread; ``ACTIVE`` counts all threads')."""
    return bool(ACTIVE) and bool(_PROFILES.get())


def profile(on_update: Callable[[Profile], None] | None = None) -> Profile:
    """Count per-device flops, communication and peak memory of the code in a ``with`` block.

    Works on every backend; on ``backend="meta"`` nothing is allocated. See the
    ``shardarray.profiler`` module docstring for what is counted.

    Args:
        on_update: called with the profile after every change to a total (the
            planner uses it to stop a trace early); it may raise to abort.

    Example (a 2×2 mesh, the hidden dim split over ``col``):
        >>> mesh = sa.Mesh({"row": 2, "col": 2}, backend="meta")
        >>> x = sa.ones(mesh, {"batch": 8, "io": 16}, layout={"batch": "row"})
        >>> w = sa.ones(mesh, {"io": 16, "hidden": 32}, layout={"hidden": "col"})
        >>> with sa.profile() as prof:
        ...     y = sa.einsum("batch io, io hidden -> batch hidden", x, w)
        >>> prof.flops_per_device, prof.peak_memory_bytes_per_device   # 2·4·16·16; x + w + y blocks
        (2048.0, 1536)
    """
    if on_update is not None and not callable(on_update):
        raise DTypeError(f"sa.profile(on_update=...) takes a function of the profile; got {type(on_update).__name__}")
    return Profile(on_update)


# ------------------------------------------------------------------- hooks
#: the array types an op's arguments are tracked as (``ShardArray``: array.py registers it, being above this module)
ARRAY_TYPES: tuple[type, ...] = ()


def on_array(array: Any) -> None:
    """A ShardArray was made (called by ``ShardArray.__init__`` while a profile is open)."""
    for p in _PROFILES:
        p._track(array)


def touch(arrays: Sequence[Any]) -> None:
    """Arrays about to be shared by a new array: count them from the block's start if made before it."""
    for p in _PROFILES:
        p._touch(arrays)


def einsum_result(shard: Any) -> None:
    """``shard`` (device 0's) is the output of local einsums: not memory-bound traffic."""
    for p in _PROFILES:
        p._einsum_results.add(id(shard))


def on_einsum(equation: str, shards: Sequence[Any]) -> None:
    """A local einsum ran on ``shards`` (device 0's operands)."""
    if not _PROFILES or any(s is None for s in shards):
        return
    flops = einsum_flops(equation, [tuple(s.shape) for s in shards])
    dtype = str(shards[0].dtype)
    for p in _PROFILES:
        p._on_flops(flops, dtype)


@contextmanager
def scope(name: str, args: Sequence[Any] = ()) -> Iterator[None]:
    """Attribute what runs inside to op ``name`` (the outermost scope wins); ``args`` are its operands."""
    if not _SCOPE:
        for p in _PROFILES:
            p._op_named(name).calls += 1
            p._touch(args)
    _SCOPE.append(name)
    try:
        yield
    finally:
        _SCOPE.pop()
