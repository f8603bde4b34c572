"""The dispatch floor of the README main job: Python overhead per training step.

The main job (``examples/train_transformer.py`` defaults: 2x2 mesh2d, vocab 64,
d_model 64, heads 4, d_kv 16, d_ff 256, 2 layers, seq 32, batch 32, Adam) is
timed against the *floor*: the same step with every size 4 (same mesh,
strategy, layers), where the arithmetic is negligible and what is left is the
library's Python. ``floor / step`` is the dispatch overhead.

    python benchmarks/dispatch_floor.py                 # interleaved A B A B timing, medians
    python benchmarks/dispatch_floor.py --profile tottime   # cProfile of 20 floor steps
    python benchmarks/dispatch_floor.py --record ref.json   # losses + comm logs (bit-exact reference)
    python benchmarks/dispatch_floor.py --check ref.json    # compare against a recorded reference

Timings depend on the load of the machine; the call counts (``calls_per_step``)
do not.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import shardarray as sa

MAIN = {"vocab": 64, "d_model": 64, "heads": 4, "d_kv": 16, "d_ff": 256, "seq_len": 32, "batch": 32}
FLOOR = {"vocab": 4, "d_model": 4, "heads": 4, "d_kv": 4, "d_ff": 4, "seq_len": 4, "batch": 4}


def make_step(sizes: dict[str, int], layers: int = 2) -> Callable[[], Any]:
    """One Adam training step of the reference transformer on a 2x2 mesh2d mesh, as a closure."""
    sizes = dict(sizes)
    batch = sizes.pop("batch")
    cfg = sa.nn.TransformerConfig(n_layers=layers, **sizes)
    shape = {"rows": 2, "cols": 2}
    mesh = sa.Mesh(shape, rules=sa.nn.strategy_rules("mesh2d", shape))
    params = sa.nn.init_transformer(cfg, mesh, seed=0)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), batch, cfg.seq_len, cfg.vocab)
    tok = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
    tgt = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
    opt = sa.optim.Adam(lr=1e-3)
    box = [params, opt.init(params)]

    def step() -> Any:
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(box[0], tok, tgt, cfg)
        box[0], box[1] = opt.update(box[0], grads, box[1])
        return loss

    return step


def calls_per_step(step: Callable[[], Any], steps: int = 5) -> float:
    """Python function calls per step (cProfile's total, load-independent)."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    return pstats.Stats(prof).total_calls / steps  # type: ignore[attr-defined]


def interleaved(repeats: int = 9, warmup: int = 3) -> dict[str, Any]:
    """Median step times of the floor and the main job, timed A B A B."""
    floor, main = make_step(FLOOR), make_step(MAIN)
    for _ in range(warmup):
        floor()
        main()
    tf: list[float] = []
    tm: list[float] = []
    for _ in range(repeats):
        t = time.perf_counter()
        floor()
        tf.append(time.perf_counter() - t)
        t = time.perf_counter()
        main()
        tm.append(time.perf_counter() - t)
    f, m = statistics.median(tf), statistics.median(tm)
    return {"floor_ms": f * 1e3, "step_ms": m * 1e3, "ratio": f / m, "repeats": repeats,
            "calls_per_step_main": calls_per_step(main), "calls_per_step_floor": calls_per_step(floor)}


def record(steps: int = 20) -> dict[str, Any]:
    """Losses (exact float64 hex) and the comm log of ``steps`` steps, main job and floor."""
    out: dict[str, Any] = {}
    for name, sizes in (("main", MAIN), ("floor", FLOOR)):
        step = make_step(sizes)
        with sa.comm_log() as log:
            losses = [float(np.asarray(step().numpy())).hex() for _ in range(steps)]
        out[name] = {"losses": losses,
                     "comm": [[r.op, list(r.axes), r.group_size, r.elements, r.bytes, r.dtype] for r in log.records]}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--profile", default="", help="cProfile 20 floor steps, sorted by this key (tottime, cumtime)")
    p.add_argument("--lines", type=int, default=45)
    p.add_argument("--record", default="", help="write losses and comm logs to this JSON file")
    p.add_argument("--check", default="", help="compare losses and comm logs with this JSON file")
    a = p.parse_args()
    if a.record:
        with open(a.record, "w") as f:
            json.dump(record(), f)
        print(f"recorded {a.record}")
        return
    if a.check:
        with open(a.check) as f:
            ref = json.load(f)
        now = json.loads(json.dumps(record()))
        for name in ref:
            same_l = ref[name]["losses"] == now[name]["losses"]
            same_c = ref[name]["comm"] == now[name]["comm"]
            print(f"{name}: losses {'identical' if same_l else 'DIFFER'}, "
                  f"comm log {'identical' if same_c else 'DIFFERS'} ({len(now[name]['comm'])} records)")
        return
    if a.profile:
        step = make_step(FLOOR)
        for _ in range(3):
            step()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            step()
        prof.disable()
        pstats.Stats(prof).sort_stats(a.profile).print_stats(a.lines)
        return
    print(json.dumps(interleaved(a.repeats), indent=1))


if __name__ == "__main__":
    main()
