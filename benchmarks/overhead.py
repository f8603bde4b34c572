"""Dispatch overhead and large-einsum efficiency of emulated meshes on the CPU.

Times ``sa.einsum`` (plus the resolution of any pending sum) on emulated
meshes of 1, 2×2 and 2×2×2 devices against one ``numpy.matmul`` of the whole
problem, for a small problem (per-op dispatch overhead) and a large one
(2048³ by default), and an elementwise add for the per-op overhead of the
simplest op. Prints a table of ratios and writes JSON (with the machine's cores,
thread settings and load before/after) to --json: by default
/tmp/shardarray-bench/overhead-cpu.json; an existing file under
benchmarks/results/ is only overwritten with --force.

    python benchmarks/overhead.py [--large 2048] [--repeat 5] [--json PATH] [--force]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import shardarray as sa

try:
    from _env import default_output, environment, output_path
except ImportError:  # imported as benchmarks.overhead
    from benchmarks._env import default_output, environment, output_path

MESHES = {
    "1": ({"d": 1}, {}),
    "2x2": ({"row": 2, "col": 2}, {"m": "row", "n": "col"}),
    "2x2x2": ({"row": 2, "col": 2, "dep": 2}, {"m": "row", "n": "col", "k": "dep"}),
}


def best_time(fn, repeat: int, number: int = 1) -> float:
    """Median over ``repeat`` runs of the mean time of ``number`` calls (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def matmul_case(mesh_name: str, size: int, dtype: str, repeat: int, number: int) -> dict:
    shape, rules = MESHES[mesh_name]
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(dtype)
    b = rng.standard_normal((size, size)).astype(dtype)
    x = sa.asarray(a, dims=("m", "k"), mesh=mesh, layout={d: rules[d] for d in ("m", "k") if d in rules})
    w = sa.asarray(b, dims=("k", "n"), mesh=mesh, layout={d: rules[d] for d in ("k", "n") if d in rules})

    def run() -> sa.ShardArray:
        return sa.einsum(x, w, out=("m", "n")).resolve()

    t_sa = best_time(run, repeat, number)
    t_np = best_time(lambda: np.matmul(a, b), repeat, number)
    ok = np.allclose(run().numpy(), a @ b, rtol=1e-3, atol=1e-3 * size**0.5)
    with sa.comm_log() as log:
        run()
    return {
        "op": "einsum m k, k n -> m n",
        "size": size,
        "dtype": dtype,
        "mesh": shape,
        "devices": mesh.size,
        "time_s": t_sa,
        "numpy_matmul_s": t_np,
        "ratio_vs_numpy": t_sa / t_np,
        "overhead_per_shard_us": max(0.0, t_sa - t_np) / mesh.size * 1e6,
        "comm_elements_per_device": log.total("elements"),
        "correct": bool(ok),
    }


def add_case(mesh_name: str, repeat: int, number: int) -> dict:
    shape, rules = MESHES[mesh_name]
    mesh = sa.Mesh(shape)
    a = np.ones((8, 8), np.float32)
    lay = {d: rules[d] for d in ("m", "n") if d in rules}
    x = sa.asarray(a, dims=("m", "n"), mesh=mesh, layout=lay)
    t_sa = best_time(lambda: x + x, repeat, number)
    t_np = best_time(lambda: a + a, repeat, number)
    return {
        "op": "x + x", "size": 8, "dtype": "float32", "mesh": shape, "devices": mesh.size,
        "time_s": t_sa, "numpy_s": t_np, "ratio_vs_numpy": t_sa / t_np,
        "overhead_per_shard_us": max(0.0, t_sa - t_np) / mesh.size * 1e6, "correct": True,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", type=int, default=2048, help="size of the large square matmul")
    parser.add_argument("--small", type=int, default=8, help="size of the small square matmul")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=default_output("overhead-cpu"),
                        help="where to write the JSON (default under /tmp; committed results need --force)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file under benchmarks/results/")
    args = parser.parse_args(argv)
    out = output_path(args.json, args.force)
    sa.Mesh({"d": 1})  # applies the BLAS thread setting before the environment is recorded
    before = environment()
    rows = []
    for name in MESHES:
        rows.append(matmul_case(name, args.small, "float32", args.repeat, 200))
        rows.append(add_case(name, args.repeat, 500))
        rows.append(matmul_case(name, args.large, "float32", args.repeat, 1))
    head = f"{'op':<26}{'size':>6}{'mesh':>8}{'time':>12}{'numpy':>12}{'ratio':>8}{'overhead/shard':>16}{'comm el/dev':>13}"
    print(head)
    print("-" * len(head))
    for r in rows:
        mesh = "x".join(str(s) for s in r["mesh"].values())
        base = r.get("numpy_matmul_s", r.get("numpy_s"))
        print(
            f"{r['op']:<26}{r['size']:>6}{mesh:>8}{r['time_s'] * 1e6:>10.1f}us{base * 1e6:>10.1f}us"
            f"{r['ratio_vs_numpy']:>8.2f}{r['overhead_per_shard_us']:>14.1f}us{r.get('comm_elements_per_device', 0):>13.0f}"
        )
    result = {
        "benchmark": "overhead",
        "device": f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "shardarray": sa.__version__,
        "rows": rows,
        "environment": {"before": before, "after": environment()},
    }
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {args.json}")
    return result


if __name__ == "__main__":
    main()
