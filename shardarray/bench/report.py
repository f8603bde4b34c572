"""Printing and plotting benchmark results: a rich table and a matplotlib bar chart."""

from __future__ import annotations

from typing import Any

MiB = 2**20


def mesh_label(shape: dict[str, int]) -> str:
    return "[" + ",".join(str(v) for v in shape.values()) + "]" if shape else "[1]"


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x * 1e3:,.2f}"


def table(result: dict[str, Any]) -> None:
    """Print the rows of a ``matmul`` result as a table."""
    from rich.console import Console
    from rich.table import Table

    hw = result["hardware"]["name"]
    t = Table(
        title=f"{result['problem']['what']} — forward + backward per device; "
        f"backend {result['backend']} on {result['device']}; model: {hw}",
        title_justify="left",
    )
    for col in ("algorithm", "mesh", "comm MiB", "wire MiB", "GFLOP", "mem MiB",
                "model fwd ms", "model bwd ms", "measured ms", "× single"):
        t.add_column(col, justify="left" if col in ("algorithm", "mesh") else "right")
    for r in result["rows"]:
        ratio = r.get("time_vs_single")
        t.add_row(
            r["algorithm"], mesh_label(r["mesh"]),
            f"{r['comm_bytes_per_device'] / MiB:,.2f}", f"{r['wire_bytes_per_device'] / MiB:,.2f}",
            f"{r['flops_per_device'] / 1e9:,.2f}", f"{r['memory_bytes_per_device'] / MiB:,.1f}",
            _ms(r["modeled_forward_s"]), _ms(r["modeled_backward_s"]), _ms(r["time_s"]),
            "—" if ratio is None else f"{ratio:.2f}",
        )
    single = result.get("single")
    if single:
        t.add_row("single", "[1]", "0", "0", f"{single['flops_per_device'] / 1e9:,.2f}", "", "", "",
                  _ms(single["time_s"]), "1.00")
    console = Console(width=max(Console().width, 124))
    console.print(t)
    for s in result.get("skipped", []):
        console.print(f"skipped {s['algorithm']} {mesh_label(s['mesh'])}: {s['reason']}")


def plot(result: dict[str, Any], path: str) -> None:
    """A bar chart of modeled (and measured, where run) times per algorithm and mesh, saved as PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("--plot needs matplotlib: pip install 'shardarray[examples]'") from e
    rows = result["rows"]
    labels = [f"{r['algorithm']}\n{mesh_label(r['mesh'])}" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(rows)), 3.6))
    fwd = [r["modeled_forward_s"] * 1e3 for r in rows]
    bwd = [r["modeled_backward_s"] * 1e3 for r in rows]
    measured = [r["time_s"] for r in rows]
    width = 0.4 if any(m is not None for m in measured) else 0.7
    ax.bar([i - (width / 2 if width < 0.5 else 0) for i in x], fwd, width, label="modeled forward")
    ax.bar([i - (width / 2 if width < 0.5 else 0) for i in x], bwd, width, bottom=fwd, label="modeled backward")
    if width < 0.5:
        ax.bar([i + width / 2 for i in x], [(m or 0) * 1e3 for m in measured], width,
               label=f"measured ({result['backend']})")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_ylabel("ms per forward + backward")
    ax.set_title(f"{result['problem']['what']} ({result['hardware']['name']} model)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
