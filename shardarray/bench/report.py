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
    for col in (
        "algorithm",
        "mesh",
        "comm MiB",
        "wire MiB",
        "GFLOP",
        "mem MiB",
        "model fwd ms",
        "model bwd ms",
        "measured ms",
        "× single",
    ):
        t.add_column(col, justify="left" if col in ("algorithm", "mesh") else "right")
    for r in result["rows"]:
        ratio = r.get("time_vs_single")
        t.add_row(
            r["algorithm"],
            mesh_label(r["mesh"]),
            f"{r['comm_bytes_per_device'] / MiB:,.2f}",
            f"{r['wire_bytes_per_device'] / MiB:,.2f}",
            f"{r['flops_per_device'] / 1e9:,.2f}",
            f"{r['memory_bytes_per_device'] / MiB:,.1f}",
            _ms(r["modeled_forward_s"]),
            _ms(r["modeled_backward_s"]),
            _ms(r["time_s"]),
            "—" if ratio is None else f"{ratio:.2f}",
        )
    single = result.get("single")
    if single:
        t.add_row(
            "single",
            "[1]",
            "0",
            "0",
            f"{single['flops_per_device'] / 1e9:,.2f}",
            "",
            "",
            "",
            _ms(single["time_s"]),
            "1.00",
        )
    console = Console(width=max(Console().width, 124))
    console.print(t)
    for s in result.get("skipped", []):
        console.print(f"skipped {s['algorithm']} {mesh_label(s['mesh'])}: {s['reason']}")


def plot(result: dict[str, Any], path: str) -> None:
    """Modeled and measured times per algorithm and mesh, saved as PNG, on separate axes.

    The left panel stacks the alpha-beta model's forward and backward times on
    the hardware model (``--hardware``); the right panel, when the run was
    timed (numpy/cupy), shows the measured times with the single-device
    ``xp.matmul`` reference as a line, so neither scale hides the other
    (modeled GPU times are milliseconds, measured CPU times can be seconds).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("--plot needs matplotlib: pip install 'shardarray[examples]'") from e
    rows = result["rows"]
    labels = [f"{r['algorithm']}\n{mesh_label(r['mesh'])}" for r in rows]
    x = list(range(len(rows)))
    measured = [r["time_s"] for r in rows]
    timed = any(m is not None for m in measured)
    width = max(5.0, 1.1 * len(rows))
    fig, axes = plt.subplots(1, 2 if timed else 1, figsize=(2 * width if timed else width, 3.8), squeeze=False)
    ax = axes[0][0]
    fwd = [r["modeled_forward_s"] * 1e3 for r in rows]
    bwd = [r["modeled_backward_s"] * 1e3 for r in rows]
    ax.bar(x, fwd, 0.7, label="modeled forward")
    ax.bar(x, bwd, 0.7, bottom=fwd, label="modeled backward")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("modeled ms per forward + backward")
    ax.set_title(f"model: {result['hardware']['name']}", fontsize=9)
    ax.legend(fontsize=8)
    if timed:
        ax = axes[0][1]
        ax.bar(
            x,
            [(m or 0) * 1e3 for m in measured],
            0.7,
            color="tab:green",
            label=f"measured ({result['backend']} on {result.get('device', '?')})",
        )
        single = result.get("single")
        if single:
            ax.axhline(
                single["time_s"] * 1e3, color="black", linestyle="--", linewidth=1, label="single device (xp.matmul)"
            )
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylabel("measured ms per forward + backward")
        ax.set_title("measured", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(result["problem"]["what"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
