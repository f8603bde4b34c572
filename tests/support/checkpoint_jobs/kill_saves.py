"""Kill saving processes with SIGKILL at random moments, then load: always a complete old or new checkpoint.

Usage: python kill_saves.py DIR KILLS SEED. Imports shardarray once, then forks a
saver per round (fast), kills it after a random delay and loads in this
process. Prints one JSON line: {"rounds": [...], "leftovers": [...]}.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import numpy as np

import shardarray as sa


def main() -> None:
    root, kills, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    mesh = sa.Mesh({"row": 2, "col": 2})
    fixed, run = root / "fixed", root / "run"

    def tree(k: int) -> dict:
        return {"w": sa.full(mesh, {"a": 64, "b": 512}, float(k), layout={"a": "row", "b": "col"}),
                "v": [sa.full(mesh, {"c": 4000}, k, dtype="int64", layout={"c": "col"})], "k": k}

    def check(path: Path) -> int:
        t = sa.checkpoint.load(path, mesh=mesh)
        k = t["k"]
        assert np.all(t["w"].numpy() == float(k)) and np.all(t["v"][0].numpy() == k), (path, k)
        return k

    sa.checkpoint.save(fixed, tree(0))
    sa.checkpoint.save(run, tree(0), keep=2)
    rng = random.Random(seed)
    rounds = []
    for i in range(kills):
        pid = os.fork()
        if pid == 0:  # the saver: overwrite the fixed path and append to the run, forever
            k = 100_000 * (i + 1)
            while True:
                k += 1
                sa.checkpoint.save(fixed, tree(k), overwrite=True)
                sa.checkpoint.save(run, tree(k), keep=2)
        time.sleep(rng.uniform(0.02, 0.3))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        interrupted = sum(p.name.startswith(".") for p in [*root.iterdir(), *run.iterdir()])  # mid-save kills
        rounds.append([check(fixed), check(run), interrupted])
        # a partial directory never sits under the final names
        assert all((p / "manifest.json").is_file() for p in [fixed, *run.glob("ckpt-*")])
    sa.checkpoint.save(fixed, tree(1), overwrite=True)  # the next save cleans what the killed ones left
    sa.checkpoint.save(run, tree(1), keep=2)
    leftovers = [p.name for p in [*root.iterdir(), *run.iterdir()] if p.name.startswith(".")]
    print(json.dumps({"rounds": rounds, "leftovers": leftovers, "final": [check(fixed), check(run)]}))


if __name__ == "__main__":
    main()
