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
from collections.abc import Callable, Mapping
from typing import Any

from .. import profiler
from ..array import ShardArray
from ..core.tape import OP_MEMO
from ..hardware import HardwareProfile
from ..mesh import Mesh
from .model import flop_rate

Groups = dict[tuple[frozenset[str], str], float]  # (dims an op touches, dtype) -> its single-device flops


class _DimFlops:
    """A stand-in for the op memo during one trace: each top-level op runs as it is (the ops inside it too),
    and its flops by dtype are added to the group of the dims its arrays have."""

    def __init__(self, prof: profiler.Profile) -> None:
        self.prof = prof
        self.groups: Groups = {}
        self.near: dict[str, set[str]] = {}  # dim -> dims whose split it may take (an op's new result dims)

    def call(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        return self._run((args, kwargs), lambda: fn(*args, **kwargs))

    def call_vjp(self, name: str, vjp: Callable[..., Any], ctx: Any, g: ShardArray) -> Any:
        return self._run((g, ctx.out, ctx.args, ctx.saved), lambda: vjp(ctx, g))

    def _run(self, arrays: Any, thunk: Callable[[], Any]) -> Any:
        prof = self.prof
        before = dict(prof.flops_by_dtype)
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
    prof = profiler.Profile()
    hook = _DimFlops(prof)
    token = OP_MEMO.set(hook)
    try:
        with prof:
            step(Mesh({"one": 1}, backend="meta"))
    finally:
        OP_MEMO.reset(token)
    out: Groups = {}
    for (dims, dt), f in hook.groups.items():
        reach = set(dims)
        todo = list(dims)
        while todo:
            for e in hook.near.get(todo.pop(), ()):
                if e not in reach:
                    reach.add(e)
                    todo.append(e)
        key = (frozenset(reach), dt)
        out[key] = out.get(key, 0.0) + f
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
        hw: the hardware profile whose flop rates price the flops.
    """

    def __init__(
        self,
        whole: Groups,
        one: Groups | None,
        layer: Groups | None,
        mesh_shape: Mapping[str, int],
        hw: HardwareProfile,
    ) -> None:
        self.mesh_shape = dict(mesh_shape)
        self._whole, self._one, self._layer = (self._seconds(g or {}, hw) for g in (whole, one, layer))

    @staticmethod
    def _seconds(groups: Groups, hw: HardwareProfile) -> list[tuple[tuple[str, ...], float]]:
        out: dict[tuple[str, ...], float] = {}
        for (dims, dt), f in groups.items():
            key = tuple(sorted(dims))
            out[key] = out.get(key, 0.0) + f / flop_rate(hw, dt)
        return sorted(out.items())

    def _floor(self, groups: list[tuple[tuple[str, ...], float]], rules: Mapping[str, Any]) -> float:
        shape = self.mesh_shape
        total = 0.0
        for dims, seconds in groups:
            used: set[str] = set()
            for d in dims:
                axes = rules.get(d)
                if axes:
                    used.update((axes,) if isinstance(axes, str) else axes)
            total += seconds / math.prod(shape[a] for a in used)
        return total

    def time(self, rules: Mapping[str, Any]) -> float:
        """A floor under the step's compute time under ``rules`` (``{dim: axes}``), in seconds."""
        return self._floor(self._whole, rules)

    def one(self, rules: Mapping[str, Any]) -> float:
        """A floor under the compute time of the one-layer step (``step.lower_bound``) under ``rules``."""
        return self._floor(self._one, rules)

    def layer(self, rules: Mapping[str, Any]) -> float:
        """A floor under the compute time of one of the step's identical layers under ``rules``."""
        return self._floor(self._layer, rules)


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
    repeated = repeats(step)
    if repeated is None:
        return ComputeFloor(dim_flops(step), None, None, mesh_shape, hw)
    one, two, layers = repeated
    g1, g2 = dim_flops(one), dim_flops(two)
    layer = {k: max(0.0, g2.get(k, 0.0) - g1.get(k, 0.0)) for k in set(g1) | set(g2)}
    whole = {k: g1.get(k, 0.0) + (layers - 1) * f for k, f in layer.items()}
    return ComputeFloor(whole, g1, layer, mesh_shape, hw)


__all__ = ["ComputeFloor", "compute_floor", "dim_flops", "repeats"]
