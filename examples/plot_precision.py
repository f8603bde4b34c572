"""One PNG with the loss curves of training runs at several precisions (the README's mixed-precision figure).

    for d in float32 bfloat16 float16; do
        python examples/train_transformer.py --dtype $d --plot '' --json runs/$d.json
    done
    python examples/plot_precision.py runs/float32.json runs/bfloat16.json runs/float16.json -o docs/mixed_precision.png
"""

from __future__ import annotations

import argparse
import json
import numbers
from pathlib import Path
from typing import Any

import numpy as np

from shardarray.bench.args import check_output

#: the fields of ``train_transformer.py --json`` the figure reads
FIELDS = ("losses", "dtype", "held_out_accuracy", "strategy", "mesh", "params")


def smooth(values: list[float], window: int = 20) -> np.ndarray:
    """A trailing mean over ``window`` steps (the progress bar's figure)."""
    c = np.cumsum(np.insert(np.asarray(values, dtype=np.float64), 0, 0.0))
    hi = np.arange(1, len(values) + 1)
    lo = np.maximum(hi - window, 0)
    return (c[hi] - c[lo]) / (hi - lo)


def load_run(path: str) -> dict[str, Any]:
    """The metrics one ``train_transformer.py --json`` run wrote.

    Raises:
        ValueError: the file cannot be read, is no JSON, or lacks a field of ``FIELDS``.
    """
    try:
        run = json.loads(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"{path}: cannot be read ({e.strerror})") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"{path}: not JSON ({e})") from None
    missing = [k for k in FIELDS if k not in run] if isinstance(run, dict) else list(FIELDS)
    losses = run.get("losses") if isinstance(run, dict) else None
    if missing or not isinstance(losses, list) or not all(isinstance(v, numbers.Real) for v in losses):
        raise ValueError(
            f"{path}: not the metrics of train_transformer.py --json "
            f"({'no ' + ', '.join(missing) if missing else 'losses is no list of numbers'})"
        )
    return run


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="JSON metrics written by train_transformer.py --json")
    p.add_argument("-o", "--out", default="mixed_precision.png")
    args = p.parse_args(argv)
    try:
        check_output("--out", args.out, image=True)
        runs = [load_run(path) for path in args.runs]
    except (ValueError, ImportError) as e:
        p.error(str(e))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, diff) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    base = np.asarray(runs[0]["losses"])
    for m in runs:
        losses = np.asarray(m["losses"])
        label = f"{m['dtype']}: held-out accuracy {m['held_out_accuracy']:.1%}"
        if m.get("skipped_steps"):
            label += f" ({m['skipped_steps']} skipped steps)"
        steps = np.arange(1, len(losses) + 1)
        ax.plot(steps, smooth(list(losses)), lw=1.0, label=label)
        n = min(len(losses), len(base))
        diff.plot(steps[:n], losses[:n] - base[:n], lw=0.6, label=f"{m['dtype']} - {runs[0]['dtype']}")
    ax.set_ylabel("training loss, 20-step mean")
    ax.set_yscale("log")
    ax.legend(loc="upper right")
    diff.set_xlabel("step")
    diff.set_ylabel("loss difference (nats)")
    diff.legend(loc="lower right", fontsize=8)
    m = runs[0]
    ax.set_title(f"{m['strategy']} on {m['mesh']}, {m['params']:,} params; float32 parameters and Adam state",
                 fontsize=9)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
