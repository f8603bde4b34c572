"""sort, argsort, unique and cumsum of 2^24 float32 values on a split dim, against NumPy on the whole array.

Emulated meshes of 1, 4 and 8 devices in one process, or, under
``mpiexec -n P``, one device per process (``comm="mpi"``). Every op is timed
interleaved with the NumPy reference of the whole array (``np.sort``,
``np.argsort(kind="stable")``, ``np.unique``, ``np.cumsum``) in the same run
(A B A B ..., median of ``--repeat``), so a shared machine loads both alike.
Reports the ratio (shardarray / NumPy) and the bytes each device sent (the
comm log's ``bytes`` summed over the op's collectives) against the ideal of
about one block (``n/p`` values). Writes JSON to ``--json`` (default
benchmarks/results/sort-cpu.json; under MPI only rank 0 writes).

    python benchmarks/sort.py [--log2n 24] [--repeat 3] [--json PATH]
    mpiexec -n 2 python benchmarks/sort.py --json benchmarks/results/sort-cpu-mpi2.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

import numpy as np

import shardarray as sa

try:  # run as a script (benchmarks/ on sys.path) or imported as benchmarks.sort
    from _timing import interleaved, world_size
except ImportError:  # pragma: no cover
    from benchmarks._timing import interleaved, world_size

EMULATED = {1: {"d": 1}, 4: {"all": 4}, 8: {"x": 2, "y": 2, "z": 2}}






def sent_bytes(fn) -> int:
    """Bytes one device puts into collectives while ``fn`` runs (the comm log, summed)."""
    with sa.comm_log() as log:
        fn()
    return int(sum(r.bytes for r in log.records))


def bench_mesh(label: str, mesh: sa.Mesh, a: np.ndarray, repeat: int) -> list[dict]:
    axes = tuple(mesh.axis_names)
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": axes})
    block = -(-a.size // mesh.size) * a.dtype.itemsize

    def done(y):
        return y.shards[mesh.local_device]  # force nothing lazy; shards are computed eagerly

    ops = {
        "sort": (lambda: done(sa.sort(x, "s")), lambda: np.sort(a)),
        "argsort": (lambda: done(sa.argsort(x, "s")), lambda: np.argsort(a, kind="stable")),
        "unique": (lambda: done(sa.unique_values(x)), lambda: np.unique(a)),
    }
    if hasattr(sa, "cumsum"):
        ops["cumsum"] = (lambda: done(sa.cumsum(x, "s")), lambda: np.cumsum(a))
    rows = []
    for name, (ours, ref) in ops.items():
        t_ours, t_ref = interleaved(ours, ref, repeat, mesh)
        sent = sent_bytes(ours)
        rows.append({"mesh": label, "devices": mesh.size, "op": name, "seconds": t_ours, "numpy_seconds": t_ref,
                     "ratio": t_ours / t_ref, "bytes_sent_per_device": sent, "block_bytes": block,
                     "sent_over_block": sent / block})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--devices", type=int, nargs="*", default=[1, 4, 8], help="emulated mesh sizes")
    parser.add_argument("--json", default="benchmarks/results/sort-cpu.json")
    args = parser.parse_args()
    n = 1 << args.log2n
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    procs = world_size()
    rows = []
    if procs > 1:
        mesh = sa.Mesh({"x": procs}, comm="mpi")
        rows += bench_mesh(f"mpi-{procs}", mesh, a, args.repeat)
        rank = mesh.process_index
    else:
        for p in args.devices:
            rows += bench_mesh(f"emulated-{p}", sa.Mesh(EMULATED[p]), a, args.repeat)
        rank = 0
    if rank != 0:
        return
    print(f"{'mesh':12} {'op':8} {'ours s':>8} {'numpy s':>8} {'ratio':>6} {'sent/block':>10}")
    for r in rows:
        print(f"{r['mesh']:12} {r['op']:8} {r['seconds']:8.3f} {r['numpy_seconds']:8.3f} {r['ratio']:6.2f} "
              f"{r['sent_over_block']:10.2f}")
    out = {"n": n, "dtype": "float32", "repeat": args.repeat, "processes": procs,
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "numpy": np.__version__,
                       "load_avg": os.getloadavg()},
           "note": "ratios interleave shardarray and NumPy runs (A B A B) on a machine others may share",
           "results": rows}
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
