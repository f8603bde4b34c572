"""tesseract.txt Tables 1 and 2, re-run on the meta backend with the A100 profile.

Each configuration of the paper (parallelization, GPU shape, batch size,
hidden size) runs one transformer MLP block, X [batch·seq, hidden] ->
gelu(X·W1[h, 4h])·W2[4h, h], forward and backward, on a meta mesh: the
comm log gives the real collectives of our Megatron (allreduce), SUMMA
(Optimus) and Tesseract implementations, and the alpha–beta model of the
``a100`` profile (4 GPUs per node, NVLink 200 GB/s, InfiniBand 200 Gb/s per
node, as in §4) turns them and the flops into modeled times. The paper does
not give the sequence length; we use 512 (``--seq``).

Printed next to the paper's measured forward/backward times per batch, with
the ratios the paper discusses: [8,8,1] / [4,4,4], [64] / [4,4,4] and
Optimus [8,8] / [4,4,4]. The paper measured whole transformer layers (more
matmuls, attention, layer norms); compare ratios, not absolute seconds.

    python benchmarks/tesseract_tables.py [--seq 512] [--dtype float16] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from shardarray.bench.matmul import run_row
from shardarray.bench.workload import Problem
from shardarray.hardware import get_profile

# (parallelization, GPU shape, batch, hidden, paper forward s/batch, paper backward s/batch)
TABLE_1 = [
    ("megatron", [4], 12, 3072, 0.1225, 0.4749),
    ("megatron", [16], 12, 3072, 0.1143, 0.4293),
    ("megatron", [64], 12, 3072, 0.1195, 0.5306),
    ("summa", [2, 2], 12, 3072, 0.1676, 0.5019),
    ("summa", [4, 4], 12, 3072, 0.2099, 0.6159),
    ("summa", [8, 8], 12, 3072, 0.1329, 0.3986),
    ("tesseract", [2, 2, 1], 12, 3072, 0.1666, 0.5014),
    ("tesseract", [2, 2, 2], 12, 3072, 0.0999, 0.3002),
    ("tesseract", [4, 4, 1], 12, 3072, 0.1444, 0.4343),
    ("tesseract", [4, 4, 2], 12, 3072, 0.1244, 0.3727),
    ("tesseract", [4, 4, 4], 16, 3072, 0.0869, 0.2636),
    ("tesseract", [8, 8, 1], 12, 3072, 0.1799, 0.5178),
]
TABLE_2 = [
    ("megatron", [4], 60, 2048, 0.0793, 0.2613),
    ("megatron", [16], 60, 4096, 0.2081, 0.5149),
    ("megatron", [64], 30, 8192, 0.4638, 1.0963),
    ("summa", [2, 2], 96, 2048, 0.0827, 0.2445),
    ("summa", [4, 4], 192, 4096, 0.1829, 0.5458),
    ("summa", [8, 8], 384, 8192, 0.1962, 0.5964),
    ("tesseract", [1, 1, 1], 48, 1024, 0.0603, 0.1669),
    ("tesseract", [2, 2, 1], 96, 2048, 0.0867, 0.2557),
    ("tesseract", [2, 2, 2], 192, 2048, 0.0864, 0.2552),
    ("tesseract", [4, 4, 1], 192, 4096, 0.1177, 0.3553),
    ("tesseract", [4, 4, 2], 384, 4096, 0.1173, 0.3521),
    ("tesseract", [4, 4, 4], 768, 4096, 0.1155, 0.3468),
    ("tesseract", [8, 8, 1], 384, 8192, 0.1799, 0.5178),
]
NAMES = {"megatron": "Megatron-LM", "summa": "Optimus (SUMMA)", "tesseract": "Tesseract"}


def mesh_of(algorithm: str, shape: list[int]) -> dict[str, int]:
    """The paper's [q, q, d] as our mesh, depth major and col minor (a row of processors inside a node)."""
    if algorithm == "megatron":
        return {"model": shape[0]}
    if algorithm == "summa":
        return {"row": shape[0], "col": shape[1]}
    return {"dep": shape[2], "row": shape[0], "col": shape[1]}


def run_table(rows: list[tuple], seq: int, dtype: str, hardware: str) -> list[dict]:
    hw = get_profile(hardware)
    out = []
    for algorithm, shape, batch, hidden, fwd, bwd in rows:
        problem = Problem("mlp", {"batch": batch, "seq": seq, "hidden": hidden}, dtype)
        r = run_row(problem, algorithm, mesh_of(algorithm, shape), "meta", hw, repeat=0)
        out.append({
            "parallelization": NAMES[algorithm], "shape": shape, "batch": batch, "hidden": hidden,
            "paper_forward_s": fwd, "paper_backward_s": bwd,
            "model_forward_s": r["modeled_forward_s"], "model_backward_s": r["modeled_backward_s"],
            "comm_bytes_per_device": r["comm_bytes_per_device"],
            "memory_bytes_per_device": r["memory_bytes_per_device"],
        })
    return out


def ratios(rows: list[dict]) -> list[dict]:
    """The paper's comparisons: [8,8,1], [64] and Optimus [8,8] against Tesseract [4,4,4]."""
    def find(par: str, shape: list[int]) -> dict:
        return next(r for r in rows if r["parallelization"] == par and r["shape"] == shape)

    base = find("Tesseract", [4, 4, 4])
    out = []
    for par, shape in (("Tesseract", [8, 8, 1]), ("Megatron-LM", [64]), ("Optimus (SUMMA)", [8, 8])):
        other = find(par, shape)
        out.append({
            "versus": f"{par} {shape} / Tesseract [4,4,4]",
            "paper_forward": other["paper_forward_s"] / base["paper_forward_s"],
            "model_forward": other["model_forward_s"] / base["model_forward_s"],
            "paper_backward": other["paper_backward_s"] / base["paper_backward_s"],
            "model_backward": other["model_backward_s"] / base["model_backward_s"],
            "comm": other["comm_bytes_per_device"] / base["comm_bytes_per_device"],
        })
    return out


def show(title: str, rows: list[dict], rat: list[dict], console: Console) -> None:
    t = Table(title=title, title_justify="left")
    for col in ("parallelization", "shape", "batch", "hidden", "paper fwd s", "model fwd ms", "paper bwd s",
                "model bwd ms", "comm MiB/dev", "mem MiB/dev"):
        t.add_column(col, justify="left" if col in ("parallelization", "shape") else "right")
    for r in rows:
        t.add_row(r["parallelization"], str(r["shape"]), str(r["batch"]), str(r["hidden"]),
                  f"{r['paper_forward_s']:.4f}", f"{r['model_forward_s'] * 1e3:.1f}",
                  f"{r['paper_backward_s']:.4f}", f"{r['model_backward_s'] * 1e3:.1f}",
                  f"{r['comm_bytes_per_device'] / 2**20:,.0f}", f"{r['memory_bytes_per_device'] / 2**20:,.0f}")
    console.print(t)
    t = Table(title=f"{title.split(':')[0]}: ratios (> 1: Tesseract [4,4,4] is faster)", title_justify="left")
    for col in ("comparison", "paper fwd", "model fwd", "paper bwd", "model bwd", "comm"):
        t.add_column(col, justify="left" if col == "comparison" else "right")
    for r in rat:
        t.add_row(r["versus"], f"{r['paper_forward']:.2f}", f"{r['model_forward']:.2f}",
                  f"{r['paper_backward']:.2f}", f"{r['model_backward']:.2f}", f"{r['comm']:.2f}")
    console.print(t)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seq", type=int, default=512, help="sequence length (the paper does not say; default 512)")
    p.add_argument("--dtype", default="float16", choices=("float16", "float32"), help="compute dtype (float16)")
    p.add_argument("--hardware", default="a100", help="hardware profile (default a100, the paper's cluster)")
    p.add_argument("--json", default="benchmarks/results/tesseract_tables-a100-model.json", help="output file")
    args = p.parse_args(argv)
    console = Console(width=max(Console().width, 120))
    result = {"seq": args.seq, "dtype": args.dtype, "hardware": args.hardware,
              "workload": "one MLP block (h -> 4h -> h), forward and backward, on the meta backend"}
    for key, rows, title in (
        ("table_1", TABLE_1, "Table 1 (strong scaling, hidden 3072)"),
        ("table_2", TABLE_2, "Table 2 (weak scaling)"),
    ):
        measured = run_table(rows, args.seq, args.dtype, args.hardware)
        rat = ratios(measured)
        result[key] = {"rows": measured, "ratios": rat}
        show(f"{title}: paper (whole layer, measured) vs our model (MLP block, {args.hardware}, seq {args.seq}, "
             f"{args.dtype})", measured, rat, console)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
