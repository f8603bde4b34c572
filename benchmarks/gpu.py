"""GPU benchmarks of issue 5, in one run on one GPU (results: benchmarks/results/gpu-<device>.json).

(a) local einsum throughput: ``sa.einsum`` on a 1-device cupy mesh vs ``cupy.matmul``
    vs ``torch.matmul`` at 4096³ and 8192³, float16 and float32;
(b) a transformer training step (d_model 1024, 8 heads × 128, d_ff 4096, seq 512,
    float32) in shardarray on a 1-device cupy mesh, with and without the fused
    kernels, vs the same model in PyTorch eager: tokens/s ratio, and the
    achieved einsum flop rate as a fraction of the measured float32 matmul peak;
(c) the emulated 2×2 mesh on the same GPU (mesh2d layout for the step, SUMMA for
    the 8192³ product) vs the 1-device mesh.

    python benchmarks/gpu.py                 # everything (about 3 minutes on an H100)
    python benchmarks/gpu.py --quick         # smaller sizes, to check that it runs

Times are medians over ``--repeat`` runs after warm-up, between device
synchronisations; flop rates count 2·m·n·k per product.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import shardarray as sa
from shardarray.bench.device import device_name

sys.path.insert(0, str(Path(__file__).parent))
from train_step import shardarray_step, torch_step  # noqa: E402


def timed(fn: Callable[[], Any], sync: Callable[[], None], repeat: int, warmup: int = 2) -> float:
    """Median seconds of ``fn()`` between synchronisations."""
    times = []
    for i in range(warmup + repeat):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def matmul_rows(sizes: list[int], dtypes: list[str], repeat: int) -> list[dict]:
    """(a) and the SUMMA part of (c)."""
    import cupy

    sync = cupy.cuda.Device().synchronize
    try:
        import torch
    except ImportError:
        torch = None
    one = sa.Mesh({"d": 1}, backend="cupy")
    grid = sa.Mesh({"row": 2, "col": 2}, backend="cupy")
    rows = []
    for n in sizes:
        for dtype in dtypes:
            flops = 2.0 * n**3
            x = sa.random.normal(one, {"m": n, "k": n}, seed=1, dtype=dtype)
            w = sa.random.normal(one, {"k": n, "n": n}, seed=2, dtype=dtype)
            a, b = x.shards[0], w.shards[0]
            entry = {"n": n, "dtype": dtype}
            entry["cupy_s"] = timed(lambda: cupy.matmul(a, b), sync, repeat)
            entry["shardarray_s"] = timed(lambda: sa.einsum("m k, k n -> m n", x, w).shards[0], sync, repeat)
            xs = sa.asarray(x.numpy(), ("m", "k"), grid, layout={"m": "row", "k": "col"})
            ws = sa.asarray(w.numpy(), ("k", "n"), grid, layout={"k": "row", "n": "col"})
            entry["summa_2x2_s"] = timed(lambda: sa.einsum("m k, k n -> m n", xs, ws).shards[0], sync, repeat)
            if torch is not None:
                ta = torch.as_tensor(a, device="cuda")
                tb = torch.as_tensor(b, device="cuda")
                entry["torch_s"] = timed(lambda: torch.matmul(ta, tb), torch.cuda.synchronize, repeat)
            for k in [k for k in entry if k.endswith("_s")]:
                entry[k.replace("_s", "_tflops")] = flops / entry[k] / 1e12
            entry["shardarray_vs_cupy"] = entry["cupy_s"] / entry["shardarray_s"]
            if "torch_s" in entry:
                entry["shardarray_vs_torch"] = entry["torch_s"] / entry["shardarray_s"]
            entry["summa_2x2_vs_1_device"] = entry["summa_2x2_s"] / entry["shardarray_s"]
            rows.append(entry)
            print(f"matmul {n}^3 {dtype}: shardarray {entry['shardarray_tflops']:.1f} TFLOP/s, cupy "
                  f"{entry['cupy_tflops']:.1f}, torch {entry.get('torch_tflops', float('nan')):.1f}, "
                  f"emulated 2x2 SUMMA {entry['summa_2x2_tflops']:.1f}")
            del x, w, xs, ws, a, b
            cupy.get_default_memory_pool().free_all_blocks()
    return rows


def step_flops(cfg: sa.nn.TransformerConfig, batch: int) -> float:
    """Einsum flops of one training step (forward + backward), counted on the meta backend."""
    mesh = sa.Mesh({"d": 1}, backend="meta")
    params = sa.nn.init_transformer(cfg, mesh, seed=0, dtype="float32")
    tokens = sa.zeros(mesh, {"batch": batch, "seq": cfg.seq_len}, dtype="int64")
    with sa.profile() as prof:
        sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, tokens, cfg)
    return prof.flops_per_device


def step_rows(cfg: sa.nn.TransformerConfig, batch: int, repeat: int) -> tuple[list[dict], float]:
    """(b) and the training part of (c)."""
    import cupy

    sync = cupy.cuda.Device().synchronize
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), batch, cfg.seq_len, cfg.vocab)
    rows = []
    for label, shape, strategy, kernels in (
        ("shardarray 1 device, fused kernels", {"d": 1}, "replicated", "1"),
        ("shardarray 1 device, CuPy array ops", {"d": 1}, "replicated", "0"),
        ("shardarray emulated 2x2 mesh2d", {"rows": 2, "cols": 2}, "mesh2d", "1"),
    ):
        os.environ["SHARDARRAY_KERNELS"] = kernels
        try:
            r = shardarray_step(cfg, shape, strategy, "cupy", tok, tgt, repeat, sync)
        finally:
            os.environ.pop("SHARDARRAY_KERNELS", None)
        rows.append({"impl": label, "mesh": shape, **r})
        cupy.get_default_memory_pool().free_all_blocks()
    try:
        weights = {k: v.numpy() for k, v in sa.nn.init_transformer(cfg, sa.Mesh({"d": 1}), seed=0).items()}
        r = torch_step(cfg, weights, "cuda", tok, tgt, repeat)
        rows.append({"impl": f"PyTorch {r.pop('version')} eager", **r})
    except ImportError:
        print("PyTorch is not installed: no PyTorch baseline")
    return rows, step_flops(cfg, batch)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes: check that everything runs")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--batch", type=int, default=8, help="sequences per training step")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    if args.quick:
        sizes, cfg, args.repeat = [512], sa.nn.TransformerConfig(
            vocab=256, d_model=128, heads=4, d_kv=32, d_ff=512, n_layers=1, seq_len=64), 2
    else:
        sizes = [4096, 8192]
        cfg = sa.nn.TransformerConfig(vocab=4096, d_model=1024, heads=8, d_kv=128, d_ff=4096,
                                      n_layers=args.layers, seq_len=512)
    device = device_name("cupy")
    mm = matmul_rows(sizes, ["float16", "float32"], args.repeat)
    steps, flops = step_rows(cfg, args.batch, max(3, args.repeat // 2))
    peak32 = max(r["cupy_tflops"] for r in mm if r["dtype"] == "float32") * 1e12
    tokens = args.batch * cfg.seq_len
    torch_row = next((r for r in steps if r["impl"].startswith("PyTorch")), None)
    for r in steps:
        r["tokens_per_s"] = tokens / r["time_s"]
        r["einsum_tflops"] = flops / r["time_s"] / 1e12
        r["fraction_of_matmul_peak"] = flops / r["time_s"] / peak32
        if torch_row:
            r["tokens_per_s_vs_torch"] = r["tokens_per_s"] / torch_row["tokens_per_s"]
        print(f"step {r['impl']}: {1e3 * r['time_s']:.1f} ms, {r['tokens_per_s']:,.0f} tokens/s "
              f"({r.get('tokens_per_s_vs_torch', float('nan')):.2f}x PyTorch), "
              f"{100 * r['fraction_of_matmul_peak']:.0f}% of the float32 matmul peak, first loss {r['first_loss']:.5f}")
    losses = [r["first_loss"] for r in steps]
    same = max(losses) - min(losses) < 1e-3 * abs(losses[0])
    print("first losses agree: the same model on the same data" if same else f"first losses DIFFER: {losses}")
    one = steps[0]
    grid = next(r for r in steps if "2x2" in r["impl"])
    result = {
        "benchmark": "gpu", "device": device, "quick": args.quick,
        "cupy": __import__("cupy").__version__, "numpy": np.__version__, "python": platform.python_version(),
        "matmul": mm,
        "train_step": {"config": {**vars(cfg), "batch": args.batch, "params": sa.nn.param_count(cfg),
                                  "dtype": "float32", "einsum_flops_per_step": flops,
                                  "float32_matmul_peak_tflops": peak32 / 1e12},
                       "rows": steps,
                       "emulated_2x2_vs_1_device": grid["time_s"] / one["time_s"], "same_first_loss": same},
    }
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")
    out = Path(args.json or Path(__file__).parent / "results" / f"gpu-{slug}{'-quick' if args.quick else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
