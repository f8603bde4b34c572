"""The README's main job beside one CPU-bound process, against the same job on a quiet machine (issue 18 item 1).

Runs ``examples/train_transformer.py --steps N --plot '' --quiet`` as a fresh
process in three conditions, interleaved (quiet, quiet with one BLAS thread,
busy, repeated ``--rounds`` times): *quiet* (nothing else started), *quiet, 1
thread* (``SHARDARRAY_BLAS_THREADS=1``: what the library would pick on a busy
machine) and *busy* (one ``python -c "while True: pass"`` started half a
second before the job and killed after it; the library chooses its threads
itself). Reports each wall time, the medians and busy/quiet; each run's own
BLAS setting (``sa.threads.last_setting()``, printed by the job's ``--json``)
is recorded.

    python benchmarks/busy.py [--steps 100] [--rounds 3] [--json benchmarks/results/busy-cpu.json --force]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:  # run as a script (benchmarks/ on sys.path) or imported as benchmarks.busy
    from _env import default_output, environment, output_path
except ImportError:  # pragma: no cover
    from benchmarks._env import default_output, environment, output_path

ROOT = Path(__file__).resolve().parent.parent
HOG = [sys.executable, "-c", "while True: pass"]


def run_job(steps: int, env: dict[str, str]) -> dict[str, Any]:
    """One fresh run of the main job: wall seconds and the BLAS setting it chose."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "metrics.json"
        cmd = [sys.executable, str(ROOT / "examples" / "train_transformer.py"), "--steps", str(steps), "--plot", "",
               "--quiet", "--json", str(out)]
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        wall = time.perf_counter() - t0
        metrics = json.loads(out.read_text()) if out.exists() else {}
    return {"wall_s": wall, "blas": metrics.get("blas_threads")}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", default=default_output("busy-cpu"), help="where to write the JSON (default under /tmp)")
    p.add_argument("--force", action="store_true", help="overwrite a committed result under benchmarks/results/")
    args = p.parse_args(argv)
    out_path = output_path(args.json, args.force)
    before = environment()
    base = {k: v for k, v in os.environ.items() if k != "SHARDARRAY_BLAS_THREADS"}
    runs: dict[str, list[dict[str, Any]]] = {"quiet": [], "quiet_1_thread": [], "busy": []}
    for _ in range(args.rounds):
        runs["quiet"].append(run_job(args.steps, base))
        runs["quiet_1_thread"].append(run_job(args.steps, {**base, "SHARDARRAY_BLAS_THREADS": "1"}))
        hog = subprocess.Popen(HOG)
        try:
            time.sleep(0.5)
            runs["busy"].append(run_job(args.steps, base))
        finally:
            hog.kill()
            hog.wait()
    med = {k: statistics.median(r["wall_s"] for r in v) for k, v in runs.items()}
    result = {
        "benchmark": "busy", "steps": args.steps, "rounds": args.rounds, "runs": runs, "median_wall_s": med,
        "busy_over_quiet": med["busy"] / med["quiet"],
        "busy_over_quiet_per_round": [b["wall_s"] / q["wall_s"] for b, q in zip(runs["busy"], runs["quiet"])],
        "environment": {"before": before, "after": environment()},
    }
    out_path.write_text(json.dumps(result, indent=1, default=str))
    for k, v in runs.items():
        print(f"{k:15s} " + "  ".join(f"{r['wall_s']:.2f} s" for r in v) + f"   median {med[k]:.2f} s")
    print(f"busy/quiet {result['busy_over_quiet']:.2f}x (per round "
          + ", ".join(f"{x:.2f}" for x in result["busy_over_quiet_per_round"]) + f"); wrote {out_path}")
    return result


if __name__ == "__main__":
    main()
