"""``strategy="auto"``: the planner's best layout rules for the reference transformer on a mesh.

``auto_choice`` runs ``sa.plan.search_layouts`` on the meta backend with the
model's training step (``sa.plan.transformer_step``) for a mesh shape, a
hardware profile and a memory limit, and prices the named strategies beside
it (``sa.plan.named_plans``). The search is exact under the cost model and
deterministic: equal modeled costs go to the rule set splitting the fewest
dims, then to the first in the planner's proxy order, so the same inputs give
the same rules on every run and machine.

It lives with the planner, which it runs, and is attached from here to ``sa.nn`` (``auto_choice``, ``auto_rules``,
``save_rules``, ``load_rules``, ``AutoChoice``) and to ``init_transformer``'s ``strategy="auto"`` (the hook
``nn.strategies.AUTO``), so the model's package imports nothing of the planner above it.

``init_transformer(cfg, mesh, strategy="auto")`` uses it (the search result is
kept for the process, per model, mesh shape, batch, hardware and limit);
``auto_rules`` gives the rules for building the mesh yourself; ``save_rules``
and ``load_rules`` keep them in a small JSON file, to reuse without searching.

Example (a 2×2 mesh):
    >>> cfg = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
    >>> rules = sa.nn.auto_rules(cfg, {"rows": 2, "cols": 2}, batch=8, verbose=False)
    >>> mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=rules)
    >>> params = sa.nn.init_transformer(cfg, mesh)        # strategy=None: the mesh's (searched) rules
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import nn
from ..checkpoint.paths import user_path
from ..dtypes import as_dtype
from ..errors import ArgumentError, DTypeError, MissingFileError
from ..hardware import HardwareProfile, get_profile
from ..mesh import Mesh
from ..nn.config import TransformerConfig
from ..nn.strategies import AUTO
from .evaluate import check_mesh_shape
from .model import Plan
from .named import named_plans
from .search import check_memory_limit, search_layouts
from .steps import Step, transformer_step

#: the hardware profile ``strategy="auto"`` models when none is given (DESIGN.md, public API third round)
DEFAULT_HARDWARE = "h100"
#: sequences per device the search assumes when no batch is given
BATCH_PER_DEVICE = 8


@dataclass(frozen=True)
class AutoChoice:
    """The result of ``auto_choice``: the chosen rules, the runner-up and the named strategies, all modeled.

    Attributes:
        rules: the chosen Mesh-TF rules ``{dim: (mesh axes, major first)}``.
        best: the chosen layout's ``sa.plan.Plan``.
        runner_up: the next best searched layout (None if the search found one only).
        named: the named strategies that apply to the mesh, best first.
        batch: the batch the step was priced with.
        memory_limit_bytes: the limit the search kept to (None: none).
    """

    rules: dict[str, tuple[str, ...]]
    best: Plan
    runner_up: Plan | None
    named: tuple[Plan, ...]
    batch: int
    memory_limit_bytes: float | None

    def paste(self) -> str:
        """A line to paste instead of searching again: the mesh with the chosen rules."""
        return f"sa.Mesh({self.best.mesh_shape!r}, rules={rules_literal(self.rules)})"

    def report(self) -> str:
        """The short printed block: chosen rules, next best and best named strategy, modeled times, a line to paste."""
        limit = "no memory limit" if self.memory_limit_bytes is None else f"≤ {_mib(self.memory_limit_bytes)}/device"
        best_t = self.best.step_time_s
        lines = [
            f'strategy="auto": mesh {self.best.mesh_shape}, {self.best.hardware} model, batch {self.batch}, {limit}'
        ]

        def row(what: str, plan: Plan) -> str:
            extra = "" if plan is self.best else f" ({_relative(plan.step_time_s, best_t)})"
            return (
                f"  {what:<24} {plan.describe():<36} step {plan.step_time_s * 1e3:.4g} ms{extra}, "
                f"comm {plan.comm_time_s * 1e3:.3g} ms, {_mib(plan.memory_bytes_per_device)}/device"
            )

        lines.append(row("chosen", self.best))
        if self.runner_up is not None:
            lines.append(row("next best", self.runner_up))
        if self.named:
            lines.append(row(f"best named: {self.named[0].label}", self.named[0]))
        lines.append(f"  reuse: {self.paste()}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the rules (lists of axes), the mesh, batch, hardware, limit and modeled step times."""
        return {
            "rules": {d: list(a) for d, a in self.rules.items()},
            "mesh": dict(self.best.mesh_shape),
            "batch": self.batch,
            "hardware": self.best.hardware,
            "memory_limit_bytes": self.memory_limit_bytes,
            "step_time_s": self.best.step_time_s,
            "runner_up": None if self.runner_up is None else _plan_dict(self.runner_up),
            "named": {p.label: p.step_time_s for p in self.named},
        }


def _mib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def _plan_dict(plan: Plan) -> dict[str, Any]:
    out = plan.to_dict()
    out.pop("ops")
    return out


def _relative(t: float, base: float) -> str:
    if base > 0:
        return f"{(t / base - 1) * 100:+.1f}%"
    return "+0%" if t == base else "+inf%"


def rules_literal(rules: Mapping[str, Any]) -> str:
    """Rules as a Python literal: one axis as a string, several as a tuple (``{'batch': 'rows'}``)."""
    items = []
    for d, axes in rules.items():
        axes = (axes,) if isinstance(axes, str) else tuple(axes)
        items.append(f"{d!r}: {axes[0]!r}" if len(axes) == 1 else f"{d!r}: {axes!r}")
    return "{" + ", ".join(items) + "}"


_CACHE: dict[tuple, AutoChoice] = {}


def auto_choice(
    cfg: TransformerConfig,
    mesh_shape: Mesh | Mapping[str, int],
    batch: int | None = None,
    hardware: str | HardwareProfile = DEFAULT_HARDWARE,
    memory_limit_bytes: float | None = None,
    *,
    dtype: Any = "float32",
    top_k: int = 2,
) -> AutoChoice:
    """Search the reference transformer's layout rules for a mesh shape; see ``auto_rules``.

    Returns:
        An ``AutoChoice``: ``rules``, the ``best`` plan, the ``runner_up`` and
        the priced ``named`` strategies (best first); ``report()`` is the printed block.

    Example (a 2×2 mesh):
        >>> cfg = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
        >>> choice = sa.nn.auto_choice(cfg, {"rows": 2, "cols": 2}, batch=8)
        >>> choice.best.step_time_s <= choice.named[0].step_time_s
        True
    """
    if not isinstance(cfg, TransformerConfig):
        raise DTypeError(f"auto_choice needs a sa.nn.TransformerConfig; got {type(cfg).__name__} {cfg!r:.60}")
    shape = mesh_shape.shape if isinstance(mesh_shape, Mesh) else check_mesh_shape(mesh_shape)
    if batch is None:
        batch = BATCH_PER_DEVICE * math.prod(shape.values())
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ArgumentError(f"strategy 'auto' needs a positive integer batch (sequences per step); got {batch!r}")
    if check_memory_limit(memory_limit_bytes, "strategy 'auto'") == math.inf:
        memory_limit_bytes = None  # (no limit: inf, or an integer past the float range)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ArgumentError(f"auto_choice needs top_k >= 1; got {top_k!r}")
    hw = get_profile(hardware)
    dt = as_dtype(dtype).name
    key = (cfg, tuple(shape.items()), batch, hardware, memory_limit_bytes, dt, top_k)
    hit = _CACHE.get(key) if isinstance(hardware, str) else None
    if hit is not None:
        return hit
    named, _ = named_plans(cfg, batch, shape, hw, dt)
    if memory_limit_bytes is not None:
        named = [p for p in named if p.memory_bytes_per_device <= memory_limit_bytes]
    best = ranked_layouts(transformer_step(cfg, batch, dt), shape, memory_limit_bytes, hw, top_k, named)
    choice = AutoChoice(
        rules=dict(best[0].rules),
        best=best[0],
        runner_up=best[1] if len(best) > 1 else None,
        named=tuple(sorted(named, key=lambda p: p.step_time_s)),
        batch=batch,
        memory_limit_bytes=memory_limit_bytes,
    )
    if isinstance(hardware, str):
        _CACHE[key] = choice
    return choice


def ranked_layouts(
    step: Step,
    shape: dict[str, int],
    memory_limit_bytes: float | None,
    hw: HardwareProfile,
    top_k: int,
    named: list[Plan],
    **search_options: Any,
) -> list[Plan]:
    """The searched layouts and the fitting named strategies' rule sets on ``shape``, best first (ties: searched).

    The search leaves out splits that give a device an empty block (``plan.space``); a named strategy may have one
    (``heads`` over more devices than heads) and be faster, or the only layout that fits, so ``strategy="auto"``
    ranks them too and is never slower than a named strategy with rules on this mesh (tesseract has its own mesh).

    Args:
        named: the named strategies' plans that fit the limit (``named_plans``).
        **search_options: passed to ``search_layouts`` (``stats``, ``progress``, ``symmetric``).

    Raises:
        ArgumentError: no searched layout and no named strategy fits ``memory_limit_bytes``.
    """
    ruled = [p for p in named if dict(p.mesh_shape) == shape]
    try:
        found = search_layouts(step, shape, memory_limit_bytes, hw, top_k, **search_options)
    except ArgumentError:
        if not ruled:
            raise
        found = []
    seen = [p.rules for p in found]
    extra = [p for p in ruled if p.rules not in seen]
    return sorted([*found, *extra], key=lambda p: (p.step_time_s, p.memory_bytes_per_device))[:top_k]


def auto_rules(
    cfg: TransformerConfig,
    mesh_shape: Mesh | Mapping[str, int],
    batch: int | None = None,
    hardware: str | HardwareProfile = DEFAULT_HARDWARE,
    memory_limit_bytes: float | None = None,
    *,
    dtype: Any = "float32",
    verbose: bool = True,
) -> dict[str, tuple[str, ...]]:
    """The planner's best layout rules for training the reference transformer on a mesh (``strategy="auto"``).

    Searches every legal rule set with ``sa.plan.search_layouts`` on the meta
    backend (nothing is allocated) for one training step of ``cfg`` and prints
    the chosen rules and the next best with their modeled step times, the best
    named strategy beside them, and a line to paste to skip the search next
    time. Ties go to the simplest rule set, so the result is reproducible. The named strategies with rules on this
    mesh are ranked beside the searched layouts (``ranked_layouts``), so the choice is never slower than one of them.

    Args:
        cfg: the model's sizes.
        mesh_shape: ``{axis: size}``, major axis first, or a ``sa.Mesh`` (its shape).
        batch: sequences per step; None: 8 per device.
        hardware: a profile name of ``sa.hardware.PROFILES`` or a profile (default ``"h100"``).
        memory_limit_bytes: peak bytes per device the layout must fit in (None: no limit).
        dtype: the parameters' dtype.
        verbose: print the block.

    Returns:
        ``{dim: (mesh axes, major first)}``, for ``sa.Mesh(mesh_shape, rules=...)``.

    Raises:
        ArgumentError: no layout fits ``memory_limit_bytes`` (the message gives
            the least memory any layout needs), or a bad batch.

    Example (a 2×2 mesh; then train on a mesh with these rules):
        >>> cfg = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
        >>> rules = sa.nn.auto_rules(cfg, {"rows": 2, "cols": 2}, batch=8, verbose=False)
        >>> mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=rules)
        >>> params = sa.nn.init_transformer(cfg, mesh)
    """
    choice = auto_choice(cfg, mesh_shape, batch, hardware, memory_limit_bytes, dtype=dtype)
    if verbose:
        print(choice.report())
    return dict(choice.rules)


def _choose(
    cfg: TransformerConfig,
    mesh: Mesh,
    batch: int | None,
    hardware: str | HardwareProfile,
    memory_limit_bytes: float | None,
    dtype: Any,
) -> dict[str, tuple[str, ...]]:
    # under MPI every process searches (the same, deterministic choice) and process 0 prints it
    verbose = mesh.process_index == 0
    return auto_rules(cfg, mesh, batch, hardware, memory_limit_bytes, dtype=dtype, verbose=verbose)


AUTO["choose"] = _choose


def save_rules(path: str | Path, rules: Mapping[str, Any], **context: Any) -> None:
    """Write layout rules to a small JSON file (``{"rules": {dim: [axes]}, ...context}``) for ``load_rules``.

    Args:
        path: the file to write.
        rules: ``{dim: axis or axes}``, e.g. from ``auto_rules`` (None: unsplit).
        **context: JSON-ready facts kept beside them (mesh, batch, hardware, ...).

    Raises:
        ArgumentError: a rule is not a dim name mapped to axis names, or the context is not JSON-ready.

    Example (a 2×2 mesh):
        >>> path = getfixture("tmp_path") / "rules.json"
        >>> sa.nn.save_rules(path, {"batch": "rows", "d_ff": ("cols",)}, mesh={"rows": 2, "cols": 2})
        >>> sa.nn.load_rules(path)
        {'batch': ('rows',), 'd_ff': ('cols',)}
    """
    target = user_path(path, "sa.nn.save_rules")
    if not isinstance(rules, Mapping):
        raise ArgumentError(f"save_rules takes rules as {{dim: axis or axes}}, e.g. {{'batch': 'rows'}}; got {rules!r}")
    out: dict[str, list[str]] = {}
    for d, axes in rules.items():
        names = _axis_names(axes)
        if not isinstance(d, str) or names is None:
            raise ArgumentError(
                f"save_rules: a rule maps a dim name to a mesh axis name or a tuple of them, e.g. {{'batch': 'rows'}}; "
                f"got {d!r}: {axes!r}"
            )
        out[d] = names
    try:
        text = json.dumps({"rules": out, **context}, indent=1)
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"save_rules: the context kept beside the rules must be JSON-ready ({e})") from None
    target.write_text(text + "\n")


def _axis_names(axes: Any) -> list[str] | None:
    """A rule's value as a list of axis names (None: unsplit, ``[]``), or None when it is not one."""
    if axes is None:
        return []
    names = [axes] if isinstance(axes, str) else list(axes) if isinstance(axes, (tuple, list)) else None
    return names if names is not None and all(isinstance(a, str) for a in names) else None


def load_rules(path: str | Path) -> dict[str, tuple[str, ...]]:
    """The rules of a ``save_rules`` file, ``{dim: (mesh axes, ...)}``, for ``sa.Mesh(shape, rules=...)``.

    Raises:
        MissingFileError: no such file.
        ArgumentError: the file is not a rules file.

    Example (a 2×2 mesh):
        >>> path = getfixture("tmp_path") / "rules.json"
        >>> sa.nn.save_rules(path, {"batch": "rows"})
        >>> mesh = sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.load_rules(path))
    """
    p = user_path(path, "sa.nn.load_rules")
    if not p.is_file():
        raise MissingFileError(f"no rules file at {str(p)!r}; write one with sa.nn.save_rules(path, rules)")
    try:
        body = json.loads(p.read_text())
        rules = body["rules"]
        out = {str(d): tuple(str(a) for a in ([axes] if isinstance(axes, str) else axes)) for d, axes in rules.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ArgumentError(
            f'{str(p)!r} is not a rules file ({e}); it holds JSON like {{"rules": {{"batch": ["rows"]}}}}'
        ) from None
    return out


for _public in (AutoChoice, auto_choice, auto_rules, load_rules, save_rules):  # sa.nn's names, attached from above
    setattr(nn, _public.__name__, _public)
