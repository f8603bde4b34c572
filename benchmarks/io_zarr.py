"""Zarr read throughput under MPI: ``sa.io.read_zarr`` vs each process reading its block with zarr-python.

A float32 array of ``--size`` GiB (shape ``(rows, 4096)``, rows split over
the processes, chunks of ``--chunk-mib`` MiB that tile the blocks) is written
once with ``sa.io.write_zarr`` (each process its own chunks; the write time is
reported too). Then, ``--repeat`` times, interleaved (A B A B ...):

* A: ``sa.io.read_zarr(path, mesh, {0: "all"})`` — a positional array, each
  process reading its block onto its device;
* B: each process opens the array with ``zarr.open_array`` and reads the same
  block, ``arr[lo:hi]`` (the direct zarr-python baseline).

Each timed step starts after a barrier and ends when the slowest process is
done (the max of the processes' times); the aggregate throughput is the array's
bytes over that time. Medians are reported, with every repeat's time, the
ratio of the throughputs (A / B; the goal is >= 0.8) and the machine's cores,
threads and load before and after (``benchmarks/_env.py``). The data are
normal random numbers (zstd, zarr's default codec, barely compresses them).

    mpiexec -n 4 python benchmarks/io_zarr.py --size 4           # the issue's 4 GiB
    mpiexec -n 4 python benchmarks/io_zarr.py --size 1 --json benchmarks/results/io_zarr.json --force

Results go to ``--json`` (default /tmp/shardarray-bench/io_zarr.json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _env import default_output, environment, output_path

import shardarray as sa
from shardarray.layout import block_bounds, make_layout

GIB = 1 << 30
MIB = 1 << 20
COLS = 4096


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=float, default=4.0, help="array size in GiB (float32; default 4)")
    p.add_argument("--chunk-mib", type=float, default=64.0, help="chunk size in MiB (rounded to tile the blocks)")
    p.add_argument("--repeat", type=int, default=3, help="timed reads of each kind (interleaved)")
    p.add_argument("--dir", default=None, help="where the Zarr array goes (default: a temporary directory)")
    p.add_argument("--json", default=default_output("io_zarr"))
    p.add_argument("--force", action="store_true", help="overwrite a committed result under benchmarks/results/")
    return p


def main() -> None:
    args = build_parser().parse_args()
    from mpi4py import MPI

    from shardarray.checkpoint.procs import Procs, _wait

    world = MPI.COMM_WORLD
    n = world.Get_size()
    procs = Procs(world)
    out = output_path(args.json, args.force) if world.Get_rank() == 0 else None
    env_before = environment()

    def barrier() -> None:
        _wait(world.Ibarrier())  # sleeps between tests: no busy-polling on an oversubscribed machine

    def timed(fn):
        barrier()
        t0 = time.perf_counter()
        result = fn()
        dt = time.perf_counter() - t0
        return result, world.allreduce(dt, op=MPI.MAX)

    rows_per_chunk = max(1, int(args.chunk_mib * MIB) // (COLS * 4))
    rows = max(n * rows_per_chunk, int(args.size * GIB) // (COLS * 4) // (n * rows_per_chunk) * (n * rows_per_chunk))
    shape = (rows, COLS)
    nbytes = rows * COLS * 4
    mesh = sa.Mesh({"all": n}, comm="mpi" if n > 1 else None)
    base = Path(procs.bcast(args.dir or tempfile.mkdtemp(prefix="io_zarr-")))
    path = base / "x.zarr"

    def block(device: int) -> np.ndarray:  # normal numbers made in float32 in place (1 GiB, no temporaries)
        (lo_, hi_), _ = block_bounds(mesh, spec)[device]
        return np.random.default_rng(device).standard_normal((hi_ - lo_, COLS), dtype=np.float32)

    spec = make_layout(mesh, ("r", "c"), (rows, COLS), {"r": "all"})
    x = sa.from_local(mesh, block, ("r", "c"), (rows, COLS), {"r": "all"})
    z, write_s = timed(lambda arr=x: sa.io.write_zarr(path, arr, (rows_per_chunk, COLS), overwrite=True))
    del x
    chunks = z.chunks
    (d,) = mesh.local_devices
    (lo, hi), _ = block_bounds(mesh, spec)[d]

    import zarr

    def ours():
        return sa.io.read_zarr(path, mesh, {0: "all"})

    def direct():
        return zarr.open_array(path, mode="r")[lo:hi]

    times: dict[str, list[float]] = {"sa.io.read_zarr": [], "zarr-python": []}
    for i in range(args.repeat):  # each result is freed before the next step (memory, and the page cache, alike)
        a, ta = timed(ours)
        sample = np.asarray(a.shards[d])[::997].copy()
        del a
        b, tb = timed(direct)
        if i == 0:
            assert np.array_equal(sample, b[::997]), "sa.io.read_zarr read other values than zarr-python"
        del b
        times["sa.io.read_zarr"].append(ta)
        times["zarr-python"].append(tb)
    env_after = environment()
    if world.Get_rank() == 0:
        med = {k: statistics.median(v) for k, v in times.items()}
        result = {
            "benchmark": "io_zarr",
            "processes": n,
            "array": {"shape": list(shape), "dtype": "float32", "bytes": nbytes, "gib": nbytes / GIB,
                      "chunks": list(chunks), "codec": "zarr v3 default (zstd)", "blocks": f"rows split {n} ways"},
            "write_seconds": write_s,
            "write_throughput_gib_s": nbytes / GIB / write_s,
            "seconds_each_repeat": times,
            "median_seconds": med,
            "aggregate_throughput_gib_s": {k: nbytes / GIB / v for k, v in med.items()},
            "ratio_throughput_sa_over_zarr": med["zarr-python"] / med["sa.io.read_zarr"],
            "goal": "ratio >= 0.8",
            "order": "interleaved: sa.io.read_zarr then zarr-python, each repeat, each result freed before the next "
                     "step; barrier before each step, time of the slowest process",
            "environment": {"before": env_before, "after": env_after},
        }
        assert out is not None
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({k: result[k] for k in ("array", "median_seconds", "aggregate_throughput_gib_s",
                                                 "ratio_throughput_sa_over_zarr")}, indent=1))
        print(f"wrote {out}")
    barrier()
    if world.Get_rank() == 0 and args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
