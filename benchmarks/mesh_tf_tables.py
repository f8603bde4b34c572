"""Mesh-TF Tables 1 and 2 from the profiler, side by side with the paper (mesh-tensorflow.txt §8.6, §9.1).

Table 1: the two-layer network of §8 (``sa.plan.mlp_step``, one layer) under
each layout of the table, one training step on the meta backend: flops,
communication (values put into collectives) and peak memory per processor
from ``sa.profile()``, against the table's formulas with the sizes
substituted. The table drops constant factors and lower-order terms, so the
ratios are the constants (e.g. a training step is 3 einsum passes).

Table 2: every language model of the table (d_model 1024, d_kv 256, vocab
32768, 6 layers), one training step with batch 256 × 256 tokens under
``mesh2d`` on the 16×32 mesh of §9.1: parameter count against the paper's,
per-device parameter and peak memory, and the modeled step time.

    python benchmarks/mesh_tf_tables.py [--json benchmarks/results/mesh_tf_tables.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import shardarray as sa

# (layout, mesh, rules, computation, communication, memory) of Table 1
TABLE1 = [
    ("[]", {"all": 8}, {}, "b*d_io*d_h", "0", "b*d_io + b*d_h + d_io*d_h"),
    ('[("batch", "all")]', {"all": 8}, {"batch": "all"}, "b*d_io*d_h/n", "d_io*d_h",
     "b/n*d_io + b/n*d_h + d_io*d_h"),
    ('[("hidden", "all")]', {"all": 8}, {"hidden": "all"}, "b*d_io*d_h/n", "d_io*b",
     "b*d_io + b*d_h/n + d_io*d_h/n"),
    ('[("batch", "rows"), ("hidden", "cols")]', {"rows": 2, "cols": 4}, {"batch": "rows", "hidden": "cols"},
     "b*d_io*d_h/(r*c)", "d_io*(b/r + d_h/c)", "b/r*d_io + b/r*d_h/c + d_io*d_h/c"),
    ('[("batch", "rows"), ("hidden", "cols"), ("io", "planes")]', {"rows": 2, "cols": 2, "planes": 2},
     {"batch": "rows", "hidden": "cols", "io": "planes"}, "b*d_io*d_h/(r*c*p)",
     "b/r*d_io/p + b/r*d_h/c + d_io/p*d_h/c", "b/r*d_io/p + b/r*d_h/c + d_io/p*d_h/c"),
]

# (d_ff, heads, parameters in billions) of Table 2; the paper prints 65516 for 65536
TABLE2 = [(4096, 4, 0.14), (8192, 8, 0.22), (16384, 16, 0.37), (32768, 32, 0.67), (65536, 64, 1.28),
          (131072, 128, 2.48), (262144, 256, 4.90)]


def table1(b: int, d_io: int, d_h: int, itemsize: int = 4) -> list[dict]:
    rows = []
    for name, mesh, rules, comp, comm, mem in TABLE1:
        step = sa.plan.mlp_step(batch=b, d_io=d_io, d_hidden=d_h, layers=1)
        plan = sa.plan.evaluate_layout(step, mesh, rules)
        env = {"b": b, "d_io": d_io, "d_h": d_h, "n": mesh.get("all", 1), "r": mesh.get("rows", 1),
               "c": mesh.get("cols", 1), "p": mesh.get("planes", 1)}
        paper = {k: float(eval(f, {}, env)) for k, f in (("flops", comp), ("comm", comm), ("memory", mem))}
        ours = {"flops": plan.flops_per_device, "comm": plan.comm_bytes_per_device / itemsize,
                "memory": plan.memory_bytes_per_device / itemsize}
        rows.append({
            "layout": name, "mesh": mesh, "formulas": {"flops": comp, "comm": comm, "memory": mem},
            "paper": paper, "profiler": ours,
            "ratio": {k: (ours[k] / paper[k] if paper[k] else None) for k in paper},
        })
    return rows


def table2(hardware: str = "a100") -> list[dict]:
    rows = []
    shape = {"rows": 16, "cols": 32}
    rules = sa.nn.strategy_rules("mesh2d", shape)
    for d_ff, heads, billions in TABLE2:
        cfg = sa.nn.TransformerConfig(vocab=32768, d_model=1024, heads=heads, d_kv=256, d_ff=d_ff, n_layers=6,
                                      seq_len=256)
        mesh = sa.Mesh(shape, backend="meta", rules=rules)
        with sa.profile() as prof:
            params = sa.nn.init_transformer(cfg, mesh, dtype="float32")
        param_bytes = prof.memory_bytes
        del params
        t0 = time.perf_counter()
        plan = sa.plan.evaluate_layout(sa.plan.transformer_step(cfg, 256), shape, rules, hardware, label="mesh2d")
        rows.append({
            "d_ff": d_ff, "heads": heads, "paper_parameters_billions": billions,
            "parameters_billions": sa.nn.param_count(cfg) / 1e9,
            "parameter_bytes_per_device": param_bytes,
            "peak_memory_bytes_per_device": plan.memory_bytes_per_device,
            "comm_bytes_per_device": plan.comm_bytes_per_device,
            "flops_per_device": plan.flops_per_device,
            "modeled_step_time_s": plan.step_time_s,
            "profile_seconds": time.perf_counter() - t0,
        })
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--io", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--hardware", default="a100")
    parser.add_argument("--skip-table2", action="store_true", help="Table 1 only (fast)")
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    result = {
        "benchmark": "mesh_tf_tables", "python": platform.python_version(), "backend": "meta",
        "table1": {"b": args.batch, "d_io": args.io, "d_h": args.hidden, "dtype": "float32",
                   "rows": table1(args.batch, args.io, args.hidden)},
    }
    if not args.skip_table2:
        result["table2"] = {"mesh": {"rows": 16, "cols": 32}, "strategy": "mesh2d", "batch": 256, "seq": 256,
                            "dtype": "float32", "hardware": args.hardware, "rows": table2(args.hardware)}
    show(result)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result


def show(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    t1 = result["table1"]
    t = Table(title=f"Mesh-TF Table 1 (b={t1['b']}, d_io={t1['d_io']}, d_h={t1['d_h']}): per processor, one "
              "training step; profiler / formula", title_justify="left")
    for col in ("layout", "mesh", "comm formula", "comm", "×", "memory formula", "memory", "×", "flops ×"):
        t.add_column(col)
    for r in t1["rows"]:
        ratio = r["ratio"]
        fmt = lambda x: "—" if x is None else f"{x:.2f}"  # noqa: E731
        t.add_row(r["layout"], "×".join(map(str, r["mesh"].values())), r["formulas"]["comm"],
                  f"{r['profiler']['comm']:,.0f}", fmt(ratio["comm"]), r["formulas"]["memory"],
                  f"{r['profiler']['memory']:,.0f}", fmt(ratio["memory"]), fmt(ratio["flops"]))
    console.print(t)
    if "table2" not in result:
        return
    t = Table(title="Mesh-TF Table 2 on the 16×32 mesh (mesh2d, batch 256×256, float32): per device",
              title_justify="left")
    for col in ("d_ff", "heads", "params (paper)", "params (ours)", "param MiB", "peak GiB", "comm MiB",
                "modeled step s", "profiled in s"):
        t.add_column(col, justify="right")
    for r in result["table2"]["rows"]:
        t.add_row(str(r["d_ff"]), str(r["heads"]), f"{r['paper_parameters_billions']:.2f}B",
                  f"{r['parameters_billions']:.2f}B", f"{r['parameter_bytes_per_device'] / 2**20:,.1f}",
                  f"{r['peak_memory_bytes_per_device'] / 2**30:,.2f}", f"{r['comm_bytes_per_device'] / 2**20:,.1f}",
                  f"{r['modeled_step_time_s']:.3f}", f"{r['profile_seconds']:.2f}")
    console.print(t)


if __name__ == "__main__":
    main()
