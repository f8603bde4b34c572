"""``evaluate_layout``: run a step once under some layout rules and price it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core.tape import OP_MEMO
from ..errors import DTypeError, MeshError
from ..hardware import HardwareProfile, get_profile
from ..mesh import AxesSpec, Mesh
from ..mesh import _parse_shape as parse_shape
from ..profiler import Profile, profile
from .memo import OpMemo, RuleWatch
from .model import Clock, Plan, price
from .steps import Step


def normalize_rules(rules: Mapping[str, AxesSpec] | None, mesh: Mesh) -> dict[str, tuple[str, ...]]:
    """Rules as ``{dim: tuple of axes}`` without the unsplit dims (``LayoutError`` for unknown axes)."""
    out = {}
    for dim, spec in (rules or {}).items():
        axes = mesh.parse_axes(spec, f"layout rule {dim!r} -> {spec!r}")
        if axes:
            out[dim] = axes
    return out


def check_step(step: Any, what: str) -> None:
    """A step is a function of the mesh (``sa.plan.transformer_step(...)``, ``sa.plan.mlp_step(...)``)."""
    if not callable(step):
        raise DTypeError(
            f"{what}: step must be a function step(mesh) that runs one training step, e.g. "
            f"sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8); got {type(step).__name__} {step!r:.60}"
        )


def check_mesh_shape(mesh_shape: Any) -> dict[str, int]:
    """The mesh shape as a dict ``{axis: size}`` with at least one axis, its names non-empty strings and its sizes
    integers >= 1 (``MeshError`` otherwise, as ``sa.Mesh`` checks them). A one-device mesh is ``{"x": 1}``."""
    if not isinstance(mesh_shape, Mapping) or not mesh_shape:
        raise MeshError(
            f"the planner takes the mesh as {{axis: size}} with at least one axis, e.g. {{'rows': 2, 'cols': 4}} "
            f"(one device: {{'x': 1}}); got {mesh_shape!r}"
        )
    names, sizes = parse_shape(mesh_shape)  # (a size of 0 made a batch of 0 "per device" before Mesh saw it)
    return dict(zip(names, sizes))


def evaluate_layout(
    step: Step,
    mesh_shape: Mapping[str, int],
    rules: Mapping[str, AxesSpec] | None,
    hardware: str | HardwareProfile = "a100",
    *,
    backend: str = "meta",
    label: str = "",
    watch: Callable[[Profile, Clock], None] | None = None,
    cache: dict[tuple, float] | None = None,
    memo: OpMemo | None = None,
) -> Plan:
    """Run ``step(mesh)`` once on a mesh with layout ``rules`` and model its cost (see ``plan.model``).

    Args:
        step: any function of a mesh that builds its parameters and inputs
            under the mesh's rules (e.g. ``init_transformer(..., strategy=None)``)
            and runs a forward/backward; ``sa.plan.transformer_step`` is one.
        mesh_shape: ``{axis: size}``, major axis first (the last axis varies
            fastest over device ids and stays inside a node).
        rules: Mesh-TF layout rules ``{dim: axis or (axes, major first)}``.
        hardware: a profile name of ``sa.hardware.PROFILES`` or a profile.
        backend: ``"meta"`` (default: shapes only, no memory) or a real
            backend, to profile a run that computes values.
        label: a name kept in the plan.
        watch: called after every change to the totals (the search stops
            traces early through it).
        cache: collective times shared across calls on the same mesh shape
            and hardware (the search passes one dict to every rule set).
        memo: an ``OpMemo`` shared across calls on the same mesh shape (meta
            backend): ops are run once per operand signature and the rules
            of the dims they look up, and replayed after (``plan.memo``; the
            plan is the same as without it).

    Returns:
        The ``Plan``: rules, modeled ``step_time_s`` and its parts, memory,
        communication and flops per device.

    Raises:
        LayoutError: the rules split some tensor of the step illegally (an axis
            twice, Mesh-TF §8.5) or name an unknown axis.

    Example (the 2-layer MLP of Mesh-TF §8 on a 2×2 mesh, layout §8.3):
        >>> step = sa.plan.mlp_step(batch=64, d_io=32, d_hidden=128)
        >>> plan = sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, {"batch": "rows", "hidden": "cols"})
        >>> plan.rules, plan.flops_per_device == 11 * (2 * 32 * 32 * 64)   # 4 einsums forward, 7 backward (no dx)
        ({'batch': ('rows',), 'hidden': ('cols',)}, True)
    """
    hw = get_profile(hardware)
    check_step(step, "evaluate_layout")
    if memo is not None and not isinstance(memo, OpMemo):
        raise DTypeError(
            f"evaluate_layout: memo must be a sa.plan.memo.OpMemo() shared by the calls of one search, or None; "
            f"got {type(memo).__name__} {memo!r:.60}"
        )
    mesh = Mesh(check_mesh_shape(mesh_shape), backend=backend, rules=rules)
    clean = normalize_rules(rules, mesh)
    clock = Clock(mesh, hw, cache)
    on_update = None if watch is None else (lambda prof: watch(prof, clock))
    if memo is None or backend != "meta":
        with profile(on_update) as prof:
            step(mesh)
    else:
        memo.bind(mesh)
        mesh.rules = RuleWatch(mesh.rules)
        token = OP_MEMO.set(memo)
        try:
            with profile(on_update) as prof:
                step(mesh)
        finally:
            OP_MEMO.reset(token)
    return price(prof, mesh, hw, clean, label, cache)
