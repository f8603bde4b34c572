"""Where a GPU training step spends its time: the top kernels, launches and host syncs per step (issue 33).

Profiles the training step of ``benchmarks/gpu.py`` (d_model 1024, 8×128
heads, d_ff 4096, seq 512, batch 8, 4 layers) for shardarray on a 1-device
CuPy mesh (fused kernels) and for the same model in PyTorch eager, in one
compute dtype, with the PyTorch profiler. CUPTI traces every kernel of the
process, so CuPy's and shardarray's own kernels show beside PyTorch's. For
each implementation it prints the top kernels by GPU time, and per step the
kernel launches, device-to-host copies and synchronising runtime calls.

    python benchmarks/gpu_profile.py --dtype bfloat16 --steps 2
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

import shardarray as sa

sys.path.insert(0, str(Path(__file__).parent))
from train_step import Runner, shardarray_runner, torch_runner

GEMM_MARKS = ("gemm", "nvjet", "xmma", "cutlass")  # cuBLAS's matrix-product kernels on Hopper and before


def is_gemm(kernel: str) -> bool:
    """Whether a kernel name is one of cuBLAS's matrix products (the einsums' share of a step)."""
    low = kernel.lower()
    return any(m in low for m in GEMM_MARKS)


def matmul_peak(dtype: str, n: int = 8192, calls: int = 10) -> float:
    """The measured cuBLAS throughput (flop/s) of ``cupy.matmul`` at n³ in dtype: the peak the fractions are of."""
    import cupy

    # random operands, as benchmarks/gpu.py's: constant ones draw less power and run ~25% faster on an H200
    a = sa.random.normal(sa.Mesh({"d": 1}, backend="cupy"), {"m": n, "k": n}, seed=1).astype(dtype).shards[0]
    cupy.matmul(a, a)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    best = float("inf")
    for _ in range(3):
        start.record()
        for _ in range(calls):
            cupy.matmul(a, a)
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3 / calls)
    return 2.0 * n**3 / best


SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cuStreamSynchronize", "cuCtxSynchronize", "cuMemcpyDtoH", "cuEventSynchronize")


def summarize(prof: Any, steps: int, top: int) -> dict[str, Any]:
    """Kernel time by name, launches, device-to-host copies and sync calls per step, from the profiler's events."""
    kernel_us: dict[str, float] = defaultdict(float)
    kernel_n: Counter[str] = Counter()
    runtime: Counter[str] = Counter()
    d2h = 0
    for ev in prof.events():
        name = ev.name
        dev = getattr(ev, "device_type", None)
        on_gpu = dev is not None and str(dev).endswith("CUDA") and not getattr(ev, "is_user_annotation", False)
        if on_gpu and "#" in name:  # a user annotation's span on the GPU timeline (Optimizer.step#Adam.step)
            continue
        if on_gpu:
            if "Memcpy DtoH" in name or "Memcpy Device -> Host" in name or "DtoH" in name:
                d2h += 1
            elif "Memcpy" in name or "Memset" in name:
                pass
            else:
                kernel_us[name] += getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0.0)
                kernel_n[name] += 1
        elif name.startswith(("cuda", "cu")) and any(s in name for s in SYNC_CALLS):
            runtime[name] += 1
    total = sum(kernel_us.values())
    gemm_us = sum(us for n, us in kernel_us.items() if is_gemm(n))
    ranked = sorted(kernel_us.items(), key=lambda kv: -kv[1])[:top]
    return {
        "gpu_kernel_ms_per_step": total / 1e3 / steps,
        "kernel_launches_per_step": sum(kernel_n.values()) / steps,
        "gemm_kernel_ms_per_step": gemm_us / 1e3 / steps,
        "gemm_launches_per_step": sum(c for n, c in kernel_n.items() if is_gemm(n)) / steps,
        "device_to_host_copies_per_step": d2h / steps,
        "sync_calls_per_step": {k: v / steps for k, v in runtime.items()},
        "top_kernels": [{"name": n[:120], "ms_per_step": us / 1e3 / steps, "share": us / total if total else 0.0,
                         "calls_per_step": kernel_n[n] / steps} for n, us in ranked],
    }


def profile(runner: Runner, steps: int, top: int) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile

    for _ in range(2):
        runner.run(timed=False)
    with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            runner.run(timed=True)
        torch.cuda.synchronize()
    out = summarize(prof, steps, top)
    out["impl"] = runner.impl
    out["wall_ms_per_step"] = 1e3 * sum(runner.times) / len(runner.times)
    return out


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16", "float16"))
    p.add_argument("--steps", type=int, default=2, help="profiled steps (after 2 warm-ups)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--mesh", default="1", choices=("1", "2x2"), help="shardarray's mesh: 1 device or the emulated "
                   "2x2 mesh2d on the one GPU (PyTorch is profiled on one device either way)")
    p.add_argument("--host", action="store_true", help="also the host side: cProfile of 2 shardarray steps, the top "
                   "functions by own time")
    p.add_argument("--quick", action="store_true", help="a tiny model: check that it runs")
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    import cupy

    if args.quick:
        cfg = sa.nn.TransformerConfig(vocab=64, d_model=32, heads=2, d_kv=16, d_ff=64, n_layers=1, seq_len=16)
        args.batch = 2
    else:
        cfg = sa.nn.TransformerConfig(vocab=4096, d_model=1024, heads=8, d_kv=128, d_ff=4096,
                                      n_layers=args.layers, seq_len=512)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), args.batch, cfg.seq_len, cfg.vocab)
    c = cfg if args.dtype == "float32" else dataclasses.replace(cfg, compute_dtype=args.dtype)
    sync = cupy.cuda.Device().synchronize
    weights = {k: v.numpy() for k, v in sa.nn.init_transformer(cfg, sa.Mesh({"d": 1}), seed=0).items()}
    shape, strategy = ({"d": 1}, "replicated") if args.mesh == "1" else ({"rows": 2, "cols": 2}, "mesh2d")
    runners = [
        shardarray_runner(f"shardarray {args.mesh} device(s) ({strategy}), fused kernels, {args.dtype}", c, shape,
                          strategy, "cupy", tok, tgt, sync),
        shardarray_runner(f"shardarray {args.mesh} device(s) ({strategy}), fused kernels, CUDA graph, {args.dtype}",
                          c, shape, strategy, "cupy", tok, tgt, sync, graphed=True),
        torch_runner(cfg, weights, "cuda", tok, tgt, None if args.dtype == "float32" else args.dtype),
    ]
    from gpu import step_flops

    flops, peak = step_flops(cfg, args.batch), matmul_peak(args.dtype)
    print(f"{flops / 1e12:.2f} TFLOP of einsums per step; measured {args.dtype} matmul peak "
          f"{peak / 1e12:.0f} TFLOP/s (cupy.matmul 8192^3)")
    results = []
    for r in runners:
        res = profile(r, args.steps, args.top)
        # the goal "60% of the matmul peak in the step's einsums": the einsums' flops over the time cuBLAS's
        # gemm kernels ran, beside the whole step's fraction (its flops over the wall time: model flops utilisation)
        res["einsum_tflop_per_step"] = flops / 1e12
        res["matmul_peak_tflops"] = peak / 1e12
        res["fraction_of_peak_in_gemm_kernels"] = flops / (res["gemm_kernel_ms_per_step"] / 1e3) / peak
        res["fraction_of_peak_over_step"] = flops / (res["wall_ms_per_step"] / 1e3) / peak
        results.append(res)
        print(f"\n== {res['impl']}: {res['wall_ms_per_step']:.1f} ms wall, {res['gpu_kernel_ms_per_step']:.1f} ms of "
              f"kernels, {res['kernel_launches_per_step']:.0f} launches, "
              f"{res['device_to_host_copies_per_step']:.1f} device-to-host copies per step; "
              f"sync calls per step {res['sync_calls_per_step']}; gemm kernels {res['gemm_kernel_ms_per_step']:.2f} "
              f"ms in {res['gemm_launches_per_step']:.0f} launches: the einsums at "
              f"{100 * res['fraction_of_peak_in_gemm_kernels']:.0f}% of the matmul peak "
              f"({100 * res['fraction_of_peak_over_step']:.0f}% over the whole step)")
        for k in res["top_kernels"]:
            print(f"  {k['ms_per_step']:8.2f} ms {100 * k['share']:5.1f}% x{k['calls_per_step']:5.0f}  {k['name']}")
    if args.host:
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2):
            runners[0].run(timed=False)
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        print(f"\n== host side of 2 steps of {runners[0].impl} (cProfile, own time):")
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:6000])
    if args.json:
        import json

        from shardarray.bench.device import device_name

        out = {"device": device_name("cupy"), "dtype": args.dtype, "mesh": args.mesh, "layers": args.layers,
               "batch": args.batch, "runs": results}
        Path(args.json).write_text(json.dumps(out, indent=2))
    return results


if __name__ == "__main__":
    main()
