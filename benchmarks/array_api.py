"""Slicing, reshape, concat and argmax of a split 4096×4096 float32 array, against NumPy on the whole array.

For emulated meshes of 1, 2×2 and 2×2×2 devices (every shard in this process;
the blocks of big exchanges and argmax's local searches are computed on the
copy pool, ``shardarray/comm/parallel.py``, with as many threads as the BLAS
pool shardarray chose: recorded as ``copy_threads``), each op runs on a ShardArray split in 2-D
(axis 0 over the first mesh axis, axis 1 over the second) and NumPy runs the
same op on the whole array, materialising its result as shardarray does
(``np.ascontiguousarray`` of a slice, a copy of a reshape; where no entry changes device, shardarray's
slice is a view, as NumPy's own slicing is, so that row measures only the dispatch). The two are timed
interleaved (A B A B,
after a warm-up), ``--runs`` times per case (the allocator's state left by
earlier cases moves both sides' times by up to a third), and the median of
the runs' ratios is reported with their range, with the traffic per
device from the comm log and the BLAS/OpenMP thread settings.

    python benchmarks/array_api.py [--size 4096] [--repeat 9] [--runs 3] [--json benchmarks/results/array_api-cpu.json --force]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import shardarray as sa

try:  # run as a script (benchmarks/ on sys.path) or imported as benchmarks.array_api
    from _env import default_output, environment, output_path
    from _timing import interleaved
except ImportError:  # pragma: no cover
    from benchmarks._env import default_output, environment, output_path
    from benchmarks._timing import interleaved

MESHES = {"1": {"d": 1}, "2x2": {"row": 2, "col": 2}, "2x2x2": {"row": 2, "col": 2, "dep": 2}}




def cases(x: sa.ShardArray, host: np.ndarray) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    n = host.shape[0]
    return {
        "slice x[1:-1, ::2]": (lambda: x[1:-1, ::2], lambda: np.ascontiguousarray(host[1:-1, ::2])),
        "slice x[n/3:, 3::3] (moves)": (lambda: x[n // 3:, 3::3], lambda: np.ascontiguousarray(host[n // 3:, 3::3])),
        "reshape (n, n) -> (n, 2, n/2)": (
            lambda: sa.split_dim(x, "b", {"b0": 2, "b1": n // 2}),
            lambda: host.reshape(n, 2, n // 2).copy(),
        ),
        "reshape (n, n) -> (2n, n/2)": (
            lambda: sa.merge_dims(sa.split_dim(x, "b", {"b0": 2, "b1": n // 2}), ("a", "b0"), "ab"),
            lambda: host.reshape(2 * n, n // 2).copy(),
        ),
        "concat [x, x] along axis 0": (lambda: sa.concat([x, x], "a"), lambda: np.concatenate([host, host], axis=0)),
        "argmax along axis 1": (lambda: sa.argmax(x, "b"), lambda: np.argmax(host, axis=1)),
    }


def copy_threads() -> int:
    """Threads the emulated meshes' block copies ran on (``comm.parallel.workers``)."""
    from shardarray.comm.parallel import workers

    return workers()


def thread_settings() -> dict[str, Any]:
    env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    try:
        from threadpoolctl import threadpool_info

        pools = [{k: p.get(k) for k in ("internal_api", "num_threads")} for p in threadpool_info()]
    except ImportError:
        pools = "threadpoolctl not installed"
    return {"env": env, "threadpools": pools, "cpu_count": os.cpu_count()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=9, help="interleaved pairs per run (median)")
    p.add_argument("--runs", type=int, default=3, help="runs per case; the median ratio is reported with the range")
    p.add_argument("--json", default=default_output("array_api-cpu"),
                   help="where to write the JSON (default under /tmp; committed results need --force)")
    p.add_argument("--force", action="store_true", help="overwrite a committed result under benchmarks/results/")
    args = p.parse_args(argv)
    out_path = output_path(args.json, args.force)
    env_before = environment()
    host = np.random.default_rng(0).standard_normal((args.size, args.size)).astype(np.float32)
    rows = []
    for name, shape in MESHES.items():
        mesh = sa.Mesh(shape)
        axes = mesh.axis_names
        layout = {"a": axes[0], "b": axes[1]} if len(axes) > 1 else {"a": axes[0]}
        x = sa.asarray(host, dims=("a", "b"), mesh=mesh, layout=layout)
        for op, (ours, theirs) in cases(x, host).items():
            with sa.comm_log() as log:
                out = ours()
            ok = np.array_equal(np.asarray(out), theirs())
            del out
            runs = []
            for _ in range(args.runs):  # the allocator's state after earlier cases moves both times: several runs
                gc.collect()
                runs.append(interleaved(ours, theirs, args.repeat))
            ratios = sorted(a / b for a, b in runs)
            t_sa = statistics.median(a for a, _ in runs)
            t_np = statistics.median(b for _, b in runs)
            ratio = statistics.median(ratios)
            rows.append({
                "op": op, "mesh": name, "devices": mesh.size, "layout": x.layout, "time_s": t_sa, "numpy_s": t_np,
                "ratio_vs_numpy": ratio, "ratio_runs": ratios, "collectives": [(r.op, r.axes) for r in log.records],
                "comm_elements_per_device": log.total("elements"), "correct": bool(ok),
            })
            print(f"{op:30s} {name:6s} {t_sa * 1e3:9.2f} ms  numpy {t_np * 1e3:9.2f} ms  x{ratio:5.2f} "
                  f"({ratios[0]:.2f}-{ratios[-1]:.2f})  moved/device {log.total('elements'):>10.0f}  "
                  f"{'ok' if ok else 'WRONG'}")
    result = {
        "benchmark": "array_api", "size": args.size, "dtype": "float32", "repeat": args.repeat,
        "device": f"CPU ({platform.processor() or platform.machine()}), emulated meshes in one process",
        "numpy": np.__version__, "threads": thread_settings(), "copy_threads": copy_threads(),
        "environment": {"before": env_before, "after": environment()}, "rows": rows,
    }
    out_path.write_text(json.dumps(result, indent=1, default=str))
    print(f"wrote {out_path}")
    return result


if __name__ == "__main__":
    main()
