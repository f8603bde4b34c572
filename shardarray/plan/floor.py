"""A floor under a step's modeled compute time for any rule set, from one trace on a single device.

An op's einsums are computed once over the whole mesh: every product is done on some device, and a device
does the products of its own blocks. Two devices whose coordinates agree on every mesh axis that the
op's dims are split over (under the rule set) hold the same blocks of all its arrays, so they do the same
products. The op's work is therefore spread over at most ``P`` distinct groups of devices, ``P`` the
product of the sizes of those axes, and the device priced (the one with the largest blocks) does at least
``1 / P`` of the op's single-device flops. Summed over the ops, with each dtype's flop rate::

    compute_time(rules) >= sum over ops of flops_1(op) / P(op's dims, rules) / rate(dtype)

The ops fall into a few groups by the set of dims they touch (a transformer's einsums: five), so the floor
of one rule set is a handful of divisions (``ComputeFloor.time``), and the search cuts every rule set whose
floor passes the k-th best time without tracing or walking it (``plan.search``).

The same trace gives the bytes the memory-bound ops make, by the same groups: the device priced makes at least
``1 / P`` of each op's (``ComputeFloor.memory``, a floor under the memory-bound time). And a step may declare the
allreduces it makes under every rule set (``step.forced``, ``Allreduce``: each weight's gradient summed over the
tokens, and each sum a function that is not linear in it reads: the residual stream's over the attention heads and
the MLP's hidden dim, the scores' over ``d_kv``, the MLP's first matmul's and the layer norms' statistics' over
``d_model``, ``plan.steps``); ``CommFloor`` prices each at
the least the alpha-beta model gives an allreduce along the axes its partial sums span. The cost model adds the
three times (nothing overlaps, ``plan.model``), so the search cuts a rule set whose three floors together pass the
cut; on the 0.14B model on 2×4 that cuts as many rule sets at 96 layers as at one (``docs/guides/planner.md``).

The single-device trace (``dim_flops``) runs the step once on a meta mesh of one device, with a stand-in
for the search's op memo (``core.tape.OP_MEMO``) that notes each top-level op's flops and the dims of its
arrays (operands, results, a VJP's context). A step is floored only when its Python runs the same ops on
every mesh (``step.same_ops``: ``transformer_step``, ``mlp_step``); for a step of identical layers the
flops of ``L`` layers follow from those of one and two by the affine rule (``plan.search``).

Example (Mesh-TF §8's MLP on a 2×2 mesh):
    >>> step = sa.plan.mlp_step(batch=64, d_io=32, d_hidden=128)
    >>> floor = sa.plan.floor.compute_floor(step, {"rows": 2, "cols": 2}, sa.hardware.get_profile("a100"))
    >>> plan = sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, {"batch": "rows", "hidden": "cols"})
    >>> floor.time({"batch": ("rows",), "hidden": ("cols",)}) <= plan.compute_time_s
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import profiler
from ..array import ShardArray
from ..core.tape import OP_MEMO
from ..hardware import HardwareProfile, group_bandwidth
from ..mesh import Mesh
from .model import MEMORY_TRAFFIC, flop_rate

Groups = dict[tuple[frozenset[str], str], float]  # (dims an op touches, dtype) -> its single-device flops


class _DimFlops:
    """A stand-in for the op memo during one trace: each top-level op runs as it is (the ops inside it too),
    and its flops by dtype are added to the group of the dims its arrays have."""

    def __init__(self, prof: profiler.Profile) -> None:
        self.prof = prof
        self.groups: Groups = {}
        self.written: dict[frozenset[str], float] = {}  # dims an op touches -> bytes its memory-bound ops made
        self.near: dict[str, set[str]] = {}  # dim -> dims whose split it may take (an op's new result dims)

    def call(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        return self._run((args, kwargs), lambda: fn(*args, **kwargs))

    def call_vjp(self, name: str, vjp: Callable[..., Any], ctx: Any, g: ShardArray) -> Any:
        return self._run((g, ctx.out, ctx.args, ctx.saved), lambda: vjp(ctx, g))

    def _run(self, arrays: Any, thunk: Callable[[], Any]) -> Any:
        prof = self.prof
        before, written = dict(prof.flops_by_dtype), prof.written_bytes_per_device
        token = OP_MEMO.set(None)  # the ops inside this one count towards it
        try:
            out = thunk()
        finally:
            OP_MEMO.reset(token)
        before_dims, after_dims = _dims(arrays), _dims(out)
        for d in after_dims - before_dims:  # a rename (``kseq`` from ``seq``) may carry an operand dim's split
            self.near.setdefault(d, set()).update(before_dims)
        dims = frozenset(before_dims | after_dims)
        for dt, f in prof.flops_by_dtype.items():
            added = f - before.get(dt, 0.0)
            if added > 0:
                self.groups[(dims, dt)] = self.groups.get((dims, dt), 0.0) + added
        made = prof.written_bytes_per_device - written
        if made > 0:
            self.written[dims] = self.written.get(dims, 0.0) + made
        return out


def _dims(x: Any) -> set[str]:
    """The dims of every array in ``x`` (nested tuples, lists and dicts)."""
    if isinstance(x, ShardArray):
        return set(x.dims)
    if isinstance(x, (tuple, list)):
        return set().union(*(_dims(y) for y in x)) if x else set()
    if isinstance(x, dict):
        return _dims(list(x.values()))
    return set()


def dim_flops(step: Callable[[Mesh], Any]) -> Groups:
    """The einsum flops of ``step`` on one device, by (dims an op's work may be split over, dtype).

    Those dims are the op's arrays' dims and every dim whose split reaches one of them through an op that
    makes new dims from its operands' (a rename: the keys' ``kseq`` is the tokens' ``seq``, split as it is).
    Ops outside the memo's reach (none in ``transformer_step`` and ``mlp_step``) are left out, which only
    lowers the floor.
    """
    return _dim_figures(step)[0]


def _dim_figures(step: Callable[[Mesh], Any]) -> tuple[Groups, Groups]:
    """``dim_flops(step)`` and, from the same trace, the bytes the step's memory-bound ops make on one device
    (the profile's ``written_bytes_per_device``) by the same dims, keyed ``(dims, WRITTEN)``."""
    prof = profiler.Profile()
    hook = _DimFlops(prof)
    token = OP_MEMO.set(hook)
    try:
        with prof:
            step(Mesh({"one": 1}, backend="meta"))
    finally:
        OP_MEMO.reset(token)

    def reached(dims: frozenset[str]) -> frozenset[str]:
        reach = set(dims)
        todo = list(dims)
        while todo:
            for e in hook.near.get(todo.pop(), ()):
                if e not in reach:
                    reach.add(e)
                    todo.append(e)
        return frozenset(reach)

    flops: Groups = {}
    for (dims, dt), f in hook.groups.items():
        key = (reached(dims), dt)
        flops[key] = flops.get(key, 0.0) + f
    written: Groups = {}
    for dims, b in hook.written.items():
        key = (reached(dims), WRITTEN)
        written[key] = written.get(key, 0.0) + b
    return flops, written


WRITTEN = "written"  # the key of a group of bytes made by memory-bound ops (``_dim_figures``)


@dataclass(frozen=True)
class Allreduce:
    """An allreduce that a step makes under every rule set: ``count`` times, each of an array of ``result`` dims
    (``nbytes`` on one device) that is a sum over the ``contracted`` dims (a step declares them as
    ``step.forced``; ``transformer_step`` and ``mlp_step`` do).

    Under rules that split a contracted dim over mesh axes that no dim of ``result`` uses, the array's blocks are
    partial sums over those axes (``o``, of ``n`` devices), and the result's layout (the rules of its dims) holds
    every block whole on each device of a group along ``o``: one allreduce over ``o`` or more axes. The cost
    model prices it at no less than ``2 (n - 1)`` latencies and ``2 (n - 1) / n`` of the block's bytes at the
    best bandwidth of any group along axes that include ``o`` (``CommFloor``).

    Attributes:
        contracted: the dims the array sums over (their axes make the partial sums).
        result: the array's dims.
        nbytes: its bytes on one device.
        count: how many such allreduces the step makes, one after another.
    """

    contracted: tuple[str, ...]
    result: tuple[str, ...]
    nbytes: float
    count: int = 1


class CommFloor:
    """A floor under a step's modeled communication time under any rule set: the allreduces it declares
    (``Allreduce``), each priced at the least the alpha–beta model can give it (``hardware.collective_time``).

    Allreduces of the same dims are summed once (``count`` and bytes), so a rule set's floor is a handful of
    products, whatever the layer count.

    Args:
        forced: the step's allreduces (``step.forced``).
        mesh_shape: ``{axis: size}``.
        hw: the hardware profile (latencies and bandwidths of its links).
    """

    def __init__(self, forced: Sequence[Allreduce], mesh_shape: Mapping[str, int], hw: HardwareProfile) -> None:
        self.mesh_shape = dict(mesh_shape)
        self.hw = hw
        groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[float]] = {}
        for f in forced:
            g = groups.setdefault((tuple(sorted(f.contracted)), tuple(sorted(f.result))), [0.0, 0.0])
            g[0] += f.count
            g[1] += f.count * f.nbytes
        self._groups = sorted((c, r, n, b) for (c, r), (n, b) in groups.items())
        self._links: dict[int, tuple[float, float]] = {}  # axes mask -> ``_link``
        self._mesh: Mesh | None = None
        self._axes = _Axes(mesh_shape)

    def _link(self, mask: int) -> tuple[float, float]:
        """``(least latency, best bandwidth)`` of a collective along the axes of ``mask`` or more
        (``hardware.group_bandwidth``)."""
        link = self._links.get(mask)
        if link is None:
            if self._mesh is None:
                self._mesh = Mesh(self.mesh_shape, backend="meta")
            names = self._axes.names
            seen = [
                group_bandwidth(self._mesh.groups(tuple(a for i, a in enumerate(names) if more >> i & 1)), self.hw)
                for more in range(1 << len(names))
                if more & mask == mask
            ]
            link = self._links[mask] = (min(lat for _, lat in seen), max(bw for bw, _ in seen))
        return link

    def time(self, rules: Mapping[str, Any]) -> float:
        """A floor under the step's communication time under ``rules`` (``{dim: axes}``), in seconds."""
        masks, count = self._axes.masks(rules), self._axes.count
        total = 0.0
        for contracted, result, calls, nbytes in self._groups:
            kept = summed = 0
            for d in result:
                kept |= masks.get(d, 0)
            for d in contracted:
                summed |= masks.get(d, 0)
            summed &= ~kept
            n = count[summed]
            if n <= 1:
                continue
            latency, bandwidth = self._link(summed)
            total += 2 * (n - 1) * (calls * latency + nbytes / count[kept] / n / bandwidth)
        return total


class _Axes:
    """The mesh axes as bits: a rule set's dims as masks of the axes they are split over, and each mask's
    device count (the floors' products of axis sizes, found by indexing)."""

    def __init__(self, mesh_shape: Mapping[str, int]) -> None:
        names = list(mesh_shape)
        self.names = names
        self.bit = {a: 1 << i for i, a in enumerate(names)}
        self.count = [
            math.prod(mesh_shape[a] for i, a in enumerate(names) if m >> i & 1) for m in range(1 << len(names))
        ]

    def masks(self, rules: Mapping[str, Any]) -> dict[str, int]:
        """``{dim: mask of its axes}`` for the split dims of ``rules``."""
        bit = self.bit
        out: dict[str, int] = {}
        for d, axes in rules.items():
            if axes:
                m = 0
                for a in (axes,) if isinstance(axes, str) else axes:
                    m |= bit[a]
                out[d] = m
        return out


class ComputeFloor:
    """Floors under the modeled compute time of a step under a rule set (and so under its step time):
    ``time(rules)`` of the whole step, ``one(rules)`` of its one-layer version and ``layer(rules)`` of one of
    its identical layers (both 0.0 for a step without them).

    Args:
        whole: the step's single-device flops by (dims, dtype) (``dim_flops``).
        one: the same for the one-layer step, or None.
        layer: the same for one layer (the two-layer step's less the one-layer step's), or None.
        mesh_shape: ``{axis: size}``.
        hw: the hardware profile whose flop rates price the flops (and whose memory bandwidth prices ``written``).
        written: the whole step's bytes made by memory-bound ops on one device by ``(dims, WRITTEN)``
            (``_dim_figures``), or None: ``memory(rules)`` is then 0.0.
        forced: the allreduces the step makes under every rule set (``step.forced``): ``comm(rules)``.
        layer_written: the same bytes for one of the identical layers (``layer_all``), or None.
        layer_forced: the allreduces one of the identical layers adds (``layer_all``).
    """

    def __init__(
        self,
        whole: Groups,
        one: Groups | None,
        layer: Groups | None,
        mesh_shape: Mapping[str, int],
        hw: HardwareProfile,
        written: Groups | None = None,
        forced: Sequence[Allreduce] = (),
        layer_written: Groups | None = None,
        layer_forced: Sequence[Allreduce] = (),
    ) -> None:
        self.mesh_shape = dict(mesh_shape)
        self._axes = _Axes(mesh_shape)
        self._comm = CommFloor(forced, mesh_shape, hw)
        self._comm_layer = CommFloor(layer_forced, mesh_shape, hw)
        self._whole, self._one, self._layer, self._written, self._layer_written = (
            self._seconds(g or {}, hw) for g in (whole, one, layer, written, layer_written)
        )

    @staticmethod
    def _seconds(groups: Groups, hw: HardwareProfile) -> list[tuple[tuple[str, ...], float]]:
        out: dict[tuple[str, ...], float] = {}
        for (dims, dt), f in groups.items():
            key = tuple(sorted(dims))
            rate = hw.memory_bandwidth / MEMORY_TRAFFIC if dt == WRITTEN else flop_rate(hw, dt)
            out[key] = out.get(key, 0.0) + f / rate
        return sorted(out.items())

    def _floor(self, groups: list[tuple[tuple[str, ...], float]], rules: Mapping[str, Any]) -> float:
        masks, count = self._axes.masks(rules), self._axes.count
        total = 0.0
        for dims, seconds in groups:
            used = 0
            for d in dims:
                used |= masks.get(d, 0)
            total += seconds / count[used]
        return total

    def time(self, rules: Mapping[str, Any]) -> float:
        """A floor under the step's compute time under ``rules`` (``{dim: axes}``), in seconds."""
        return self._floor(self._whole, rules)

    def memory(self, rules: Mapping[str, Any]) -> float:
        """A floor under the step's memory-bound time under ``rules`` (``model.Clock.memory``), in seconds: as
        for the flops, the device priced makes at least ``1 / P`` of the bytes each op makes on one device."""
        return self._floor(self._written, rules)

    def comm(self, rules: Mapping[str, Any]) -> float:
        """A floor under the step's communication time under ``rules``, in seconds (``CommFloor``)."""
        return self._comm.time(rules)

    def one(self, rules: Mapping[str, Any]) -> float:
        """A floor under the compute time of the one-layer step (``step.lower_bound``) under ``rules``."""
        return self._floor(self._one, rules)

    def layer(self, rules: Mapping[str, Any]) -> float:
        """A floor under the compute time of one of the step's identical layers under ``rules``."""
        return self._floor(self._layer, rules)

    def layer_all(self, rules: Mapping[str, Any]) -> float:
        """A floor under what one of the step's identical layers adds to the step time under ``rules``: its
        compute, memory-bound and communication floors together (the cost model adds the three).

        The search's one-layer bound walk counts the ``L - 1`` layers it leaves out at this much each, so at
        depth it stops as soon as the first layer's figures leave too little room under the cut."""
        return self._floor(self._layer, rules) + self._floor(self._layer_written, rules) + self._comm_layer.time(rules)


def repeats(step: Any) -> tuple[Any, Any, int] | None:
    """``(step.lower_bound, step.two_layers, step.layers)`` of a step of identical layers (``steps._repeat``),
    or None for a step that does not say it repeats (or has one layer)."""
    one, two, layers = (getattr(step, a, None) for a in ("lower_bound", "two_layers", "layers"))
    if one is None or two is None or not layers or layers < 2:
        return None
    return one, two, layers


def compute_floor(step: Any, mesh_shape: Mapping[str, int], hw: HardwareProfile) -> ComputeFloor | None:
    """The ``ComputeFloor`` of ``step`` on ``mesh_shape``, or None for a step that does not say it runs the same
    ops on every mesh (``step.same_ops``). A step of ``L`` identical layers (``step.lower_bound``,
    ``step.two_layers``, ``step.layers``) is traced with one and two layers: ``L`` layers' flops are
    ``one + (L - 1) · (two - one)`` per group."""
    if not getattr(step, "same_ops", False):
        return None
    forced = tuple(getattr(step, "forced", ()))
    repeated = repeats(step)
    if repeated is None:
        flops, written = _dim_figures(step)
        return ComputeFloor(flops, None, None, mesh_shape, hw, written, forced)
    one, two, layers = repeated
    (g1, w1), (g2, w2) = _dim_figures(one), _dim_figures(two)
    layer = _increment(g1, g2)
    whole = {k: g1.get(k, 0.0) + (layers - 1) * f for k, f in layer.items()}
    # (bytes by the affine rule, group by group: a step of identical layers makes the same buffers in each)
    written = {k: max(0.0, w1.get(k, 0.0) + (layers - 1) * (w2.get(k, 0.0) - w1.get(k, 0.0))) for k in w1.keys() | w2}
    layer_written = _increment(w1, w2)
    layer_forced = _forced_increment(getattr(one, "forced", ()), getattr(two, "forced", ()))
    return ComputeFloor(whole, g1, layer, mesh_shape, hw, written, forced, layer_written, layer_forced)


def _forced_increment(one: Sequence[Allreduce], two: Sequence[Allreduce]) -> tuple[Allreduce, ...]:
    """The allreduces one more layer adds: the two-layer step's declared allreduces less the one-layer step's, by
    (contracted, result) dims (calls and bytes; none where the difference is not positive in both)."""
    totals: dict[tuple[tuple[str, ...], tuple[str, ...]], list[float]] = {}
    for sign, forced in ((-1, one), (1, two)):
        for f in forced:
            t = totals.setdefault((tuple(sorted(f.contracted)), tuple(sorted(f.result))), [0.0, 0.0])
            t[0] += sign * f.count
            t[1] += sign * f.count * f.nbytes
    return tuple(Allreduce(c, r, b / n, int(n)) for (c, r), (n, b) in sorted(totals.items()) if n >= 1 and b > 0)


def _increment(g1: Groups, g2: Groups) -> Groups:
    """One more layer's flops, group by group: the two-layer step's less the one-layer step's (never below 0)."""
    return {k: max(0.0, g2.get(k, 0.0) - g1.get(k, 0.0)) for k in set(g1) | set(g2)}


__all__ = ["Allreduce", "CommFloor", "ComputeFloor", "compute_floor", "dim_flops", "repeats"]


def layer_floor(step: Any, mesh_shape: Mapping[str, int], hw: HardwareProfile) -> float:
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
        with profiler.profile() as prof:
            s(Mesh({"one": 1}, backend="meta"))
        flops.append(prof.flops_by_dtype)
    devices = math.prod(mesh_shape.values())  # (a shape the search has checked)
    per_layer = sum(max(0.0, f - flops[0].get(d, 0.0)) / flop_rate(hw, d) for d, f in flops[1].items())
    return (layers - 1) * per_layer / devices
