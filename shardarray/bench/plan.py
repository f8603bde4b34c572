"""``shardarray-bench plan``: search the transformer's layouts on a mesh, beside the named strategies."""

from __future__ import annotations

import argparse
import math
import os
import re
import time
from typing import Any

from ..errors import ArgumentError, LayoutError
from ..hardware import PROFILES, get_profile
from ..nn.config import TransformerConfig, param_count
from ..plan import Plan, SearchStats, named_plans, transformer_step
from ..plan.auto import ranked_layouts, rules_literal, save_rules
from ..plan.explain import Explanation, explain_layout, explain_transformer
from .args import int_at_least, mesh_shape

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
GiB = 2**30


def parse_bytes(text: str) -> float:
    """``"16GiB"`` -> 17179869184.0; also GB, MiB, MB, plain numbers (bytes), with an exponent (``1e3MiB``,
    ``1E-3GiB``); the units in any case."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    size = float(m.group(1)) * _UNITS[m.group(2).lower()] if m and m.group(2).lower() in _UNITS else math.nan
    if not (0 < size < math.inf):
        raise argparse.ArgumentTypeError(f"--memory takes a finite size like 16GiB, 40GB or 512MiB; got {text!r}")
    return size


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help="search the reference transformer's layout rules on a mesh (the planner)",
        description="Trace one training step of the reference transformer on the meta backend under every legal "
        "set of layout rules (branch and bound: exact under the cost model) and print the best ones with their "
        "modeled step time, memory, communication and flops per device, beside the named strategies.",
    )
    for flag, default, what in (
        ("--vocab", 32768, "vocabulary"),
        ("--d-model", 1024, "model width"),
        ("--heads", 16, "attention heads"),
        ("--d-kv", 64, "width per head"),
        ("--d-ff", 4096, "MLP hidden width"),
        ("--layers", 6, "transformer blocks"),
        ("--seq", 256, "sequence length"),
        ("--batch", 64, "sequences per step"),
    ):
        least = 0 if flag == "--layers" else 1
        p.add_argument(flag, type=int_at_least(least), default=default, help=f"{what} (default {default})")
    p.add_argument(
        "--mesh",
        type=mesh_shape,
        default={"rows": 2, "cols": 4},
        help="the mesh, major axis first, e.g. rows=16,cols=32 (default rows=2,cols=4)",
    )
    p.add_argument("--memory", type=parse_bytes, default=None, help="memory limit per device, e.g. 16GiB")
    p.add_argument("--hardware", default="a100", choices=sorted(PROFILES), help="hardware profile (default a100)")
    p.add_argument("--dtype", default="float32", choices=("bfloat16", "float16", "float32"), help="parameter dtype")
    p.add_argument("--top", type=int_at_least(1), default=5, help="how many layouts to print (default 5)")
    p.add_argument(
        "--no-symmetry",
        action="store_true",
        help="price every renaming of interchangeable mesh axes too (the search before symmetry: "
        "the same answer, slower; for timing)",
    )
    p.add_argument(
        "--strategy",
        default="auto",
        choices=("auto", "data", "megatron", "mesh2d", "tesseract"),
        help="auto (default): search the layouts and explain the best; a named strategy: price and explain it "
        "without searching",
    )
    p.add_argument(
        "--rules-out",
        default="",
        help="write the chosen rules to this JSON file (sa.nn.load_rules reads it; the training example's --rules)",
    )
    p.add_argument(
        "--plot",
        default="",
        help="draw the explanation (time per op group, beside the best named strategy) to this PNG (needs matplotlib)",
    )
    p.add_argument("--json", default="", help="write the results to this JSON file")
    p.add_argument("--quiet", action="store_true", help="no table or progress bar")
    p.set_defaults(subparser=p)


def _row(plan: Plan, limit: float | None) -> dict[str, Any]:
    out = plan.to_dict()
    out.pop("ops")
    out["fits"] = limit is None or plan.memory_bytes_per_device <= limit
    return out


def cmd_plan(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    try:
        cfg = TransformerConfig(
            vocab=args.vocab,
            d_model=args.d_model,
            heads=args.heads,
            d_kv=args.d_kv,
            d_ff=args.d_ff,
            n_layers=args.layers,
            seq_len=args.seq,
        )
    except ValueError as e:
        parser.error(str(e))
    hw = get_profile(args.hardware)
    strategy = getattr(args, "strategy", "auto")
    if strategy == "tesseract" and getattr(args, "rules_out", ""):
        raise ArgumentError(
            f"--rules-out {args.rules_out} with --strategy tesseract: tesseract gives each weight its own layout, "
            f"which no rules file holds; train it with the example's --strategy tesseract --mesh row=q,col=q,dep=d"
        )
    plot = getattr(args, "plot", "")
    if plot:
        _import_matplotlib()  # fail before searching, not after
    step = transformer_step(cfg, args.batch, args.dtype)
    stats = SearchStats()
    symmetric = not getattr(args, "no_symmetry", False)
    named, skipped = named_plans(cfg, args.batch, args.mesh, hw, args.dtype)
    fitting = [p for p in named if args.memory is None or p.memory_bytes_per_device <= args.memory]
    t0 = time.perf_counter()
    if strategy != "auto":
        best: list[Plan] = []
    elif args.quiet:
        best = ranked_layouts(step, args.mesh, args.memory, hw, args.top, fitting, stats=stats, symmetric=symmetric)
    else:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("layouts", total=None)
            best = ranked_layouts(
                step,
                args.mesh,
                args.memory,
                hw,
                args.top,
                fitting,
                stats=stats,
                symmetric=symmetric,
                progress=lambda i, n: bar.update(task, completed=i, total=n),
            )
    seconds = time.perf_counter() - t0
    explanation = _explain(cfg, args, hw, strategy, best, named, skipped)
    needs = explanation.plan.memory_bytes_per_device
    if strategy != "auto" and args.memory is not None and needs > args.memory:
        raise ArgumentError(
            f"--strategy {strategy} needs {needs:,.0f} bytes per device on mesh {args.mesh}, over --memory "
            f"{args.memory:,.0f} bytes; raise --memory, or search the layouts that fit with --strategy auto"
        )
    chosen = explanation.plan
    if getattr(args, "rules_out", ""):
        save_rules(
            args.rules_out,
            chosen.rules,
            mesh=dict(chosen.mesh_shape),
            strategy=strategy,
            label=chosen.label,
            hardware=hw.name,
            batch=args.batch,
            step_time_s=chosen.step_time_s,
        )
    result = {
        "benchmark": "plan",
        "model": {
            **{k: getattr(cfg, k) for k in ("vocab", "d_model", "heads", "d_kv", "d_ff", "n_layers", "seq_len")},
            "batch": args.batch,
            "dtype": args.dtype,
            "parameters": param_count(cfg),
        },
        "mesh": args.mesh,
        "hardware": {"name": hw.name, "description": hw.description},
        "memory_limit_bytes": args.memory,
        "search": {"seconds": seconds, "symmetry": symmetric, "cpus": os.cpu_count(), **stats.as_dict()},
        "best": [_row(p, args.memory) for p in best],
        "named": [_row(p, args.memory) for p in named],
        "skipped": skipped,
        "strategy": strategy,
        "chosen": {"label": chosen.label, "rules": {d: list(a) for d, a in chosen.rules.items()}},
        "explain": {
            "label": chosen.label,
            "baseline": None if explanation.baseline is None else explanation.baseline.plan.label,
            "step_time_s": chosen.step_time_s,
            "groups": explanation.rows(),
        },
    }
    if not args.quiet:
        print_plan(result)
        print_explanation(explanation)
    if plot:
        explanation.plot(plot)
        if not args.quiet:
            print(f"explanation plot saved to {plot}")
    return result


def _import_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install matplotlib") from None


def _explain(
    cfg: TransformerConfig,
    args: argparse.Namespace,
    hw: Any,
    strategy: str,
    best: list[Plan],
    named: list[Plan],
    skipped: dict[str, str],
) -> Explanation:
    """The explanation of the chosen layout: the search's best, or the named strategy asked for."""
    if strategy == "auto":
        return explain_transformer(cfg, args.batch, args.mesh, best[0].rules, hw, args.dtype, label=best[0].label)
    mine = next((p for p in named if p.label == strategy), None)
    if mine is None:
        raise LayoutError(f"--strategy {strategy} does not apply to mesh {args.mesh}: {skipped.get(strategy, '')}")
    if strategy != "tesseract":
        return explain_transformer(cfg, args.batch, args.mesh, mine.rules, hw, args.dtype, label=strategy)
    step = transformer_step(cfg, args.batch, args.dtype, strategy="tesseract")
    return explain_layout(step, mine.mesh_shape, {}, hw, label=strategy)


def print_explanation(explanation: Explanation) -> None:
    """Print the explanation table and a line to paste the chosen rules."""
    from rich.console import Console

    console = Console(width=max(Console().width, 160))
    console.print(explanation.table())
    p = explanation.plan
    if p.label != "tesseract":
        console.print(f"reuse: sa.Mesh({p.mesh_shape!r}, rules={rules_literal(p.rules)})", markup=False)


def print_plan(result: dict[str, Any]) -> None:
    """Print a ``plan`` result as a table."""
    from rich.console import Console
    from rich.table import Table

    m, s = result["model"], result["search"]
    t = Table(
        title=f"transformer {m['parameters'] / 1e9:.3g}B params, batch {m['batch']}×{m['seq_len']}, {m['dtype']} "
        f"on mesh {result['mesh']}, {result['hardware']['name']} model — per device",
        title_justify="left",
    )
    for col in (
        "layout",
        "rules",
        "step ms",
        "compute ms",
        "memory-op ms",
        "comm ms",
        "memory GiB",
        "comm MiB",
        "GFLOP",
        "fits",
    ):
        t.add_column(col, justify="left" if col in ("layout", "rules") else "right")
    for row in result["best"] + result["named"]:
        t.add_row(
            row["label"],
            row["layout"],
            f"{row['step_time_s'] * 1e3:,.2f}",
            f"{row['compute_time_s'] * 1e3:,.2f}",
            f"{row['memory_time_s'] * 1e3:,.2f}",
            f"{row['comm_time_s'] * 1e3:,.2f}",
            f"{row['memory_bytes_per_device'] / GiB:,.3f}",
            f"{row['comm_bytes_per_device'] / 2**20:,.1f}",
            f"{row['flops_per_device'] / 1e9:,.1f}",
            "yes" if row["fits"] else "no",
        )
    console = Console(width=max(Console().width, 140))
    console.print(t)
    if result["strategy"] == "auto":  # (a named strategy is priced, not searched)
        console.print(
            f"searched {s['legal']} legal rule sets in {s['seconds']:.1f} s: {s['complete']} priced in full, "
            f"{s['stopped_time']} stopped early on time, {s['stopped_memory']} on memory, {s['refused']} refused, "
            f"{s.get('symmetric', 0)} skipped as renamings of interchangeable mesh axes"
        )
    for name, reason in result["skipped"].items():
        console.print(f"{name}: not applicable — {reason}")
