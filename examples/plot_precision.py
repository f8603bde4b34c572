"""One PNG with the loss curves of training runs at several precisions (the README's mixed-precision figure).

    for d in float32 bfloat16 float16; do
        python examples/train_transformer.py --dtype $d --plot '' --json runs/$d.json
    done
    python examples/plot_precision.py runs/float32.json runs/bfloat16.json runs/float16.json -o docs/mixed_precision.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def smooth(values: list[float], window: int = 20) -> np.ndarray:
    """A trailing mean over ``window`` steps (the progress bar's figure)."""
    c = np.cumsum(np.insert(np.asarray(values, dtype=np.float64), 0, 0.0))
    hi = np.arange(1, len(values) + 1)
    lo = np.maximum(hi - window, 0)
    return (c[hi] - c[lo]) / (hi - lo)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="JSON metrics written by train_transformer.py --json")
    p.add_argument("-o", "--out", default="mixed_precision.png")
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for path in args.runs:
        m = json.loads(Path(path).read_text())
        losses = m["losses"]
        label = f"{m['dtype']}: held-out accuracy {m['held_out_accuracy']:.1%}"
        if m.get("skipped_steps"):
            label += f" ({m['skipped_steps']} skipped steps)"
        ax.plot(np.arange(1, len(losses) + 1), smooth(losses), lw=1.0, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss, 20-step mean (nats)")
    ax.set_yscale("log")
    ax.legend(loc="upper right")
    ax.set_title(f"{m['strategy']} on {m['mesh']}, {m['params']:,} params: float32 parameters and Adam state, "
                 f"compute in the dtype shown", fontsize=8)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
