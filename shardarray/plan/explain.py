"""Explain a layout's modeled cost: compute, communication and memory per op group, against a baseline.

``explain_layout`` traces a step once under some rules (as ``evaluate_layout``)
and splits the ``Plan``'s totals by what ``sa.profile()`` already records per
op (calls, flops, comm bytes, bytes written: ``Plan.ops``), plus, per op, the
collectives it issued (kind and mesh axes) priced as the plan prices them. The
ops are gathered into groups (einsum forward / backward, softmax, embedding,
layer norm, loss, elementwise, relayout, optimizer, ...); the groups' times
add up to the plan's ``step_time_s`` (compute + memory-bound ops + comm), and
their flops, comm bytes and bytes written to the plan's.

``explain_transformer`` does this for the reference transformer and sets the
best named strategy (``named_plans``) beside it: the table's last column is
each group's time minus the same group's under that strategy.

Example (a 2×2 mesh):
    >>> cfg = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
    >>> ex = sa.plan.explain_transformer(cfg, 8, {"rows": 2, "cols": 2}, {"batch": "rows", "seq": "cols"})
    >>> abs(sum(g.time_s for g in ex.groups) - ex.plan.step_time_s) < 1e-12
    True
    >>> print(ex)                                         # doctest: +SKIP
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..comm.log import CommRecord
from ..errors import LayoutError
from ..hardware import HardwareProfile, collective_time, get_profile
from ..mesh import AxesSpec, Mesh
from ..nn.config import TransformerConfig
from ..profiler import _SCOPE, OTHER, Profile
from .evaluate import check_mesh_shape, evaluate_layout
from .model import MEMORY_TRAFFIC, Clock, Plan
from .named import named_plans
from .steps import Step, transformer_step

#: op name (without ``.grad``) -> group; ops not listed are "elementwise" (forward or backward)
_GROUP_OF = {
    "einsum": "einsum",
    "causal_softmax": "softmax",
    "softmax": "softmax",
    "take": "embedding",
    "layer_norm": "layer norm",
    "logsumexp": "loss",
    "cross_entropy": "loss",
    "gelu": "activation",
    "relu": "activation",
    "relayout": "relayout",
    "rename": "relayout",
}
_OPTIMIZER_PREFIXES = ("adam", "sgd", "optim")
#: the order of the table's rows
GROUP_ORDER = (
    "einsum forward",
    "einsum backward",
    "softmax",
    "embedding",
    "layer norm",
    "activation",
    "loss",
    "elementwise forward",
    "elementwise backward",
    "relayout",
    "optimizer",
    OTHER,
)


def group_of(op: str) -> str:
    """The group of a profiler op name: ``"einsum.grad"`` -> ``"einsum backward"``, ``"take"`` -> ``"embedding"``."""
    if op == OTHER:
        return OTHER
    base, grad = (op[: -len(".grad")], True) if op.endswith(".grad") else (op, False)
    if base.startswith(_OPTIMIZER_PREFIXES):
        return "optimizer"
    group = _GROUP_OF.get(base)
    if group is None:
        group = "elementwise"
    if group in ("einsum", "elementwise"):
        group += " backward" if grad else " forward"
    return group


@dataclass(frozen=True)
class GroupCost:
    """One op group's share of a plan, per device.

    Attributes:
        name: the group ("einsum forward", "softmax", ...).
        ops: the profiler op names in it.
        calls: op calls.
        flops: local einsum flops.
        compute_time_s: the flops' modeled time.
        memory_time_s: the memory-bound time of the bytes it wrote.
        comm_time_s: its collectives' modeled time.
        comm_bytes: bytes it put into collectives.
        written_bytes: bytes of the new buffers it made (not einsum outputs).
        collectives: ``{"allreduce(cols)": count, ...}``.
    """

    name: str
    ops: tuple[str, ...]
    calls: int
    flops: float
    compute_time_s: float
    memory_time_s: float
    comm_time_s: float
    comm_bytes: float
    written_bytes: float
    collectives: dict[str, int] = field(default_factory=dict)

    @property
    def time_s(self) -> float:
        """compute + memory-bound + comm."""
        return self.compute_time_s + self.memory_time_s + self.comm_time_s

    def describe_collectives(self) -> str:
        """``"allreduce(cols)×4, allgather(rows)×2"`` (most frequent first)."""
        items = sorted(self.collectives.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{k}×{n}" for k, n in items) or "-"


@dataclass(frozen=True)
class Explanation:
    """A plan split by op group, with an optional baseline (the best named strategy) to compare each group with.

    Attributes:
        plan: the explained ``Plan``.
        groups: its ``GroupCost`` rows, in ``GROUP_ORDER``.
        baseline: the baseline's explanation, or None.
    """

    plan: Plan
    groups: tuple[GroupCost, ...]
    baseline: Explanation | None = None

    def group(self, name: str) -> GroupCost | None:
        """The row of a group, or None if no op of it ran."""
        return next((g for g in self.groups if g.name == name), None)

    def delta_s(self, name: str) -> float | None:
        """This group's time minus the baseline's same group (None without a baseline)."""
        if self.baseline is None:
            return None
        mine, theirs = self.group(name), self.baseline.group(name)
        return (mine.time_s if mine else 0.0) - (theirs.time_s if theirs else 0.0)

    def rows(self) -> list[dict[str, Any]]:
        """JSON-ready rows, one per group and the baseline-only groups, in table order."""
        names = [g.name for g in self.groups]
        if self.baseline is not None:
            names += [g.name for g in self.baseline.groups if g.name not in names]
        names.sort(key=lambda n: GROUP_ORDER.index(n) if n in GROUP_ORDER else len(GROUP_ORDER))
        out = []
        for n in names:
            g = self.group(n) or GroupCost(n, (), 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            out.append(
                {
                    "group": n,
                    "ops": list(g.ops),
                    "calls": g.calls,
                    "flops": g.flops,
                    "compute_time_s": g.compute_time_s,
                    "memory_time_s": g.memory_time_s,
                    "comm_time_s": g.comm_time_s,
                    "time_s": g.time_s,
                    "comm_bytes": g.comm_bytes,
                    "written_bytes": g.written_bytes,
                    "collectives": dict(g.collectives),
                    "delta_s": self.delta_s(n),
                }
            )
        return out

    def table(self) -> Any:
        """A ``rich.table.Table`` of the rows and the totals (print it with ``rich.print``)."""
        from rich.table import Table

        p = self.plan
        base = self.baseline
        title = f"{p.label or 'layout'} ({p.describe()}) on mesh {p.mesh_shape}, {p.hardware} model — per device"
        if base is not None:
            title += f"; Δ: against {base.plan.label or 'baseline'} ({base.plan.describe()})"
        t = Table(title=title, title_justify="left")
        cols = ["group", "calls", "GFLOP", "compute ms", "memory-op ms", "written MiB", "comm ms", "comm MiB"]
        cols += ["collectives (axes)", "total ms"] + (["Δ ms"] if base is not None else [])
        for c in cols:
            t.add_column(c, justify="left" if c in ("group", "collectives (axes)") else "right", overflow="fold")
        for r in self.rows():
            delta = [] if base is None else [_signed_ms(r["delta_s"])]
            t.add_row(
                r["group"],
                str(r["calls"]),
                f"{r['flops'] / 1e9:.4g}",
                _ms(r["compute_time_s"]),
                _ms(r["memory_time_s"]),
                f"{r['written_bytes'] / 2**20:.4g}",
                _ms(r["comm_time_s"]),
                f"{r['comm_bytes'] / 2**20:.4g}",
                ", ".join(f"{k}×{n}" for k, n in sorted(r["collectives"].items(), key=lambda kv: (-kv[1], kv[0])))
                or "-",
                _ms(r["time_s"]),
                *delta,
            )
        delta = [] if base is None else [_signed_ms(p.step_time_s - base.plan.step_time_s)]
        t.add_section()
        t.add_row(
            "total",
            str(sum(g.calls for g in self.groups)),
            f"{p.flops_per_device / 1e9:.4g}",
            _ms(p.compute_time_s),
            _ms(p.memory_time_s),
            f"{sum(g.written_bytes for g in self.groups) / 2**20:.4g}",
            _ms(p.comm_time_s),
            f"{p.comm_bytes_per_device / 2**20:.4g}",
            f"peak memory {p.memory_bytes_per_device / 2**20:.4g} MiB",
            _ms(p.step_time_s),
            *delta,
        )
        return t

    def text(self, width: int = 160) -> str:
        """The table as plain text (no colours)."""
        from rich.console import Console

        buf = io.StringIO()
        Console(file=buf, width=width, color_system=None, force_terminal=False).print(self.table())
        return buf.getvalue()

    def __str__(self) -> str:
        return self.text()

    def plot(self, path: str) -> None:
        """Save a bar chart of each group's compute / memory-op / comm time (beside the baseline's) to ``path``.

        Raises:
            ImportError: matplotlib is not installed (``pip install matplotlib``).
        """
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("plotting the explanation needs matplotlib: pip install matplotlib") from None
        rows = self.rows()
        names = [r["group"] for r in rows]
        fig, ax = plt.subplots(figsize=(10, 0.45 * len(names) + 1.5))
        sides = [(self, 0.0, "")] if self.baseline is None else [(self, -0.2, ""), (self.baseline, 0.2, "//")]
        height = 0.8 / len(sides)
        colors = {"compute": "tab:blue", "memory-op": "tab:orange", "comm": "tab:red"}
        for ex, off, hatch in sides:
            left = [0.0] * len(names)
            for part, key in (("compute", "compute_time_s"), ("memory-op", "memory_time_s"), ("comm", "comm_time_s")):
                vals = []
                for n in names:
                    g = ex.group(n)
                    vals.append(getattr(g, key) * 1e3 if g else 0.0)
                label = f"{part} ({ex.plan.label or 'layout'})"
                ys = [i + off for i in range(len(names))]
                ax.barh(ys, vals, height, left=left, color=colors[part], hatch=hatch, label=label, edgecolor="white")
                left = [a + b for a, b in zip(left, vals)]
        ax.set_yticks(range(len(names)), names)
        ax.invert_yaxis()
        ax.set_xlabel("modeled ms per step (per device)")
        ax.set_title(f"{self.plan.label or 'layout'} ({self.plan.describe()}) on {self.plan.mesh_shape}", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g}"


def _signed_ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e3:+.4g}"


def explain_layout(
    step: Step,
    mesh_shape: Mapping[str, int],
    rules: Mapping[str, AxesSpec] | None,
    hardware: str | HardwareProfile = "a100",
    *,
    label: str = "",
    baseline: Explanation | None = None,
) -> Explanation:
    """Price ``step`` under ``rules`` (as ``evaluate_layout``) and split the plan by op group.

    Args:
        step: a function of a mesh (``sa.plan.transformer_step(...)``).
        mesh_shape: ``{axis: size}``, major axis first.
        rules: the layout rules ``{dim: axis or axes}``.
        hardware: a profile name of ``sa.hardware.PROFILES`` or a profile.
        label: the plan's name.
        baseline: another explanation to compare each group with.

    Returns:
        An ``Explanation``; ``print(it)`` shows the table, ``it.plot(path)`` draws it.

    Example (Mesh-TF §8's MLP on a 2×2 mesh):
        >>> step = sa.plan.mlp_step(batch=64, d_io=32, d_hidden=128)
        >>> ex = sa.plan.explain_layout(step, {"rows": 2, "cols": 2}, {"batch": "rows", "hidden": "cols"})
        >>> ex.group("einsum forward").flops + ex.group("einsum backward").flops == ex.plan.flops_per_device
        True
    """
    hw = get_profile(hardware)
    shape = check_mesh_shape(mesh_shape)
    by_op: dict[str, list[CommRecord]] = {}
    seen = [0]

    def watch(prof: Profile, clock: Clock) -> None:  # after every change: new records belong to the running op
        records = prof.records
        if len(records) > seen[0]:
            scopes = _SCOPE.get()
            by_op.setdefault(scopes[0] if scopes else OTHER, []).extend(records[seen[0] :])
            seen[0] = len(records)

    plan = evaluate_layout(step, shape, rules, hw, label=label, watch=watch)
    groups_of = Mesh(shape, backend="meta").groups
    rate = plan.compute_time_s / plan.flops_per_device if plan.flops_per_device else 0.0
    acc: dict[str, dict[str, Any]] = {}
    for op in sorted(set(plan.ops) | set(by_op)):
        cost = plan.ops.get(op, {})
        g = acc.setdefault(group_of(op), {"ops": [], "calls": 0, "flops": 0.0, "comm_s": 0.0, "comm": 0.0, "w": 0.0})
        g["ops"].append(op)
        g["calls"] += int(cost.get("calls", 0))
        g["flops"] += cost.get("flops", 0.0)
        g["comm"] += cost.get("comm_bytes", 0.0)
        g["w"] += cost.get("written_bytes", 0.0)
        colls = g.setdefault("colls", {})
        for r in by_op.get(op, ()):
            g["comm_s"] += collective_time(r, groups_of(r.axes), hw)
            key = f"{r.op}({','.join(r.axes)})"
            colls[key] = colls.get(key, 0) + 1
    groups = [
        GroupCost(
            name=name,
            ops=tuple(g["ops"]),
            calls=g["calls"],
            flops=g["flops"],
            compute_time_s=g["flops"] * rate,
            memory_time_s=MEMORY_TRAFFIC * g["w"] / hw.memory_bandwidth,
            comm_time_s=g["comm_s"],
            comm_bytes=g["comm"],
            written_bytes=g["w"],
            collectives=g.get("colls", {}),
        )
        for name, g in acc.items()
    ]
    groups.sort(key=lambda g: GROUP_ORDER.index(g.name) if g.name in GROUP_ORDER else len(GROUP_ORDER))
    return Explanation(plan=plan, groups=tuple(groups), baseline=baseline)


def explain_transformer(
    cfg: TransformerConfig,
    batch: int,
    mesh_shape: Mapping[str, int],
    rules: Mapping[str, AxesSpec] | None,
    hardware: str | HardwareProfile = "a100",
    dtype: str = "float32",
    *,
    label: str = "",
    against_named: bool = True,
) -> Explanation:
    """``explain_layout`` for the reference transformer's training step, beside the best named strategy.

    Args:
        cfg, batch, dtype: the model and step, as for ``sa.plan.transformer_step``.
        mesh_shape: ``{axis: size}``, major axis first.
        rules: the layout rules to explain (e.g. ``search_layouts(...)[0].rules``).
        hardware: a profile name or a profile.
        label: the plan's name.
        against_named: compare with the named strategy of least modeled time
            that applies to the mesh (``named_plans``).

    Example (a 2×2 mesh):
        >>> cfg = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
        >>> ex = sa.plan.explain_transformer(cfg, 8, {"rows": 2, "cols": 2}, {"batch": "rows"}, label="mine")
        >>> ex.baseline.plan.label in ("data", "megatron", "mesh2d", "tesseract")
        True

    Raises:
        LayoutError: a rule names a dim the model does not have (a typo would explain the unsplit layout).
    """
    if isinstance(rules, Mapping) and isinstance(cfg, TransformerConfig):
        dims = {"batch", *cfg.sizes}
        unknown = sorted(str(d) for d in rules if d not in dims)
        if unknown:
            raise LayoutError(
                f"explain_transformer: the rules split {unknown}, which the transformer has no dim of; its dims are "
                f"{sorted(dims)}"
            )
    hw = get_profile(hardware)
    base = None
    if against_named:
        named, _ = named_plans(cfg, batch, mesh_shape, hw, dtype)
        if named:
            best = min(named, key=lambda p: p.step_time_s)
            strategy = "tesseract" if best.label == "tesseract" else None
            step = transformer_step(cfg, batch, dtype, strategy=strategy)
            base = explain_layout(step, best.mesh_shape, best.rules, hw, label=best.label)
    return explain_layout(transformer_step(cfg, batch, dtype), mesh_shape, rules, hw, label=label, baseline=base)
