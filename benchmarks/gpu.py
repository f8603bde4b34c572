"""GPU benchmarks (issues 20 and 21), in one run on one GPU: results in benchmarks/results/gpu-<device>.json.

(a) Matmul: ``sa.einsum`` on a 1-device CuPy mesh against ``cupy.matmul``
    (cuBLAS) and ``torch.matmul`` at 4096³ and 8192³ in float16, bfloat16
    and float32, and the emulated 2×2 SUMMA of the same product on the same
    GPU. Each figure is the median of ``--repeat`` measurements, each a pair
    of CUDA events around ``--calls`` back-to-back calls on the stream the
    work runs on (one synchronisation per measurement, not per call, so
    host overhead hides behind queued kernels as it does in real use).
(b) The training step (d_model 1024, 8×128 heads, d_ff 4096, seq 512,
    batch 8, 4 layers, float32 parameters and Adam), in float32 and with
    bfloat16 compute: shardarray on 1 device with the fused kernels and
    without (``SHARDARRAY_KERNELS=0``: CuPy array ops), the emulated 2×2
    mesh (mesh2d) on the same GPU, PyTorch eager (``torch.autocast`` for
    bfloat16) and, with ``--compile``, ``torch.compile``. The steps
    interleave (A B C A B C ...); each ends with the loss read, the one
    device-to-host synchronisation a step has. Reported: tokens/s, the ratio
    to PyTorch eager in the same dtype, and the einsum flops per second as a
    fraction of the measured cuBLAS peak of the compute dtype (from (a)).

    python benchmarks/gpu.py                 # everything (about 5 minutes on an H100)
    python benchmarks/gpu.py --compile       # also torch.compile (compiles for a minute or two)
    python benchmarks/gpu.py --quick         # small sizes: check that everything runs

Flop rates count 2·m·n·k per product; a step's einsum flops are counted on
the ``meta`` backend (``sa.profile``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import re
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import shardarray as sa
from shardarray.bench.device import device_name

sys.path.insert(0, str(Path(__file__).parent))
from train_step import Runner, shardarray_runner, torch_runner  # noqa: E402

DTYPES = ("float16", "bfloat16", "float32")


def cuda_torch() -> Any:
    """PyTorch when it can use the GPU, else None (the PyTorch rows are then left out, and the JSON says why)."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def as_torch(torch: Any, a: Any) -> Any:
    """A CuPy array as a PyTorch tensor on the same memory. bfloat16 goes through its bits: CuPy's bfloat16 is
    ml_dtypes', which ``torch.as_tensor`` sees as ``numpy.void`` ("can't convert np.ndarray of type numpy.void")."""
    if a.dtype.name == "bfloat16":
        return torch.as_tensor(a.view("uint16"), device="cuda").view(torch.bfloat16)
    return torch.as_tensor(a, device="cuda")


def free_pool() -> None:
    import cupy

    pool = getattr(cupy, "get_default_memory_pool", None)
    if pool is not None:
        pool().free_all_blocks()


def _timed_calls(fn: Callable[[], Any], event: Callable[[], Any], elapsed_ms: Callable[[Any, Any], float],
                 calls: int, repeat: int, warmup: int = 2) -> float:
    """Median seconds per call of ``fn()``: a pair of ``event()``s around ``calls`` back-to-back calls, ``repeat``
    times (one synchronisation per pair)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start, end = event(), event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(elapsed_ms(start, end) / 1e3 / calls)
    return statistics.median(times)


def event_seconds(fn: Callable[[], Any], scope: Any, calls: int, repeat: int) -> float:
    """``_timed_calls`` with CuPy's events; ``scope`` makes the GPU and stream the work runs on current, so the
    events are recorded on that stream."""
    import cupy

    with scope:
        return _timed_calls(fn, cupy.cuda.Event, cupy.cuda.get_elapsed_time, calls, repeat)


def torch_event_seconds(torch: Any, fn: Callable[[], Any], calls: int, repeat: int) -> float:
    """``_timed_calls`` with PyTorch's events, on its current stream."""
    return _timed_calls(fn, lambda: torch.cuda.Event(enable_timing=True), lambda a, b: a.elapsed_time(b),
                        calls, repeat)


def matmul_rows(sizes: list[int], dtypes: list[str], calls: int, repeat: int,
                on_row: Callable[[dict[str, Any]], None] = lambda row: None) -> list[dict[str, Any]]:
    """(a): one row per size and dtype, seconds and TFLOP/s of each implementation and the ratios.

    ``on_row`` is called with each row as soon as it is measured (``main`` writes the JSON there, so a run cut
    short by a time limit keeps every measurement it made)."""
    import cupy

    torch = cuda_torch()
    one = sa.Mesh({"d": 1}, backend="cupy")
    grid = sa.Mesh({"row": 2, "col": 2}, backend="cupy")
    rows = []
    for n in sizes:
        for dtype in dtypes:
            x = sa.random.normal(one, {"m": n, "k": n}, seed=1).astype(dtype)
            w = sa.random.normal(one, {"k": n, "n": n}, seed=2).astype(dtype)
            a, b = x.shards[0], w.shards[0]
            entry: dict[str, Any] = {"n": n, "dtype": dtype}
            entry["cupy_s"] = event_seconds(lambda: cupy.matmul(a, b), one.backend.scope(0), calls, repeat)
            entry["shardarray_s"] = event_seconds(lambda: sa.einsum("m k, k n -> m n", x, w).shards[0],
                                                  one.backend.scope(0), calls, repeat)
            xs = sa.asarray(x.numpy(), ("m", "k"), grid, layout={"m": "row", "k": "col"})
            ws = sa.asarray(w.numpy(), ("k", "n"), grid, layout={"k": "row", "n": "col"})
            entry["summa_2x2_s"] = event_seconds(lambda: sa.einsum("m k, k n -> m n", xs, ws).shards[0],
                                                 grid.backend.scope(0), calls, repeat)
            if torch is not None:
                ta, tb = as_torch(torch, a), as_torch(torch, b)
                entry["torch_s"] = torch_event_seconds(torch, lambda: torch.matmul(ta, tb), calls, repeat)
            for k in [k for k in entry if k.endswith("_s")]:
                entry[k[:-2] + "_tflops"] = 2.0 * n**3 / entry[k] / 1e12
            entry["shardarray_vs_cupy"] = entry["cupy_s"] / entry["shardarray_s"]
            if "torch_s" in entry:
                entry["shardarray_vs_torch"] = entry["torch_s"] / entry["shardarray_s"]
            entry["summa_2x2_vs_cupy"] = entry["summa_2x2_s"] / entry["cupy_s"]
            rows.append(entry)
            on_row(entry)
            print(f"matmul {n}^3 {dtype}: shardarray {entry['shardarray_tflops']:.1f} TFLOP/s "
                  f"({entry['shardarray_vs_cupy']:.3f}x cupy.matmul {entry['cupy_tflops']:.1f}), torch "
                  f"{entry.get('torch_tflops', float('nan')):.1f}, emulated 2x2 SUMMA {entry['summa_2x2_tflops']:.1f} "
                  f"({entry['summa_2x2_vs_cupy']:.2f}x the time of one cupy.matmul)", flush=True)
            del x, w, xs, ws, a, b
            free_pool()
    return rows


def step_flops(cfg: sa.nn.TransformerConfig, batch: int) -> float:
    """Einsum flops of one training step (forward + backward), counted on the meta backend."""
    mesh = sa.Mesh({"d": 1}, backend="meta")
    params = sa.nn.init_transformer(cfg, mesh, seed=0, dtype="float32")
    tokens = sa.zeros(mesh, {"batch": batch, "seq": cfg.seq_len}, dtype="int64")
    with sa.profile() as prof:
        sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, tokens, cfg)
    return prof.flops_per_device


@contextlib.contextmanager
def kernels(on: bool) -> Iterator[None]:
    """``SHARDARRAY_KERNELS`` for the duration of one step (the fused kernels are chosen per call)."""
    old = os.environ.get("SHARDARRAY_KERNELS")
    os.environ["SHARDARRAY_KERNELS"] = "1" if on else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SHARDARRAY_KERNELS", None)
        else:
            os.environ["SHARDARRAY_KERNELS"] = old


def with_kernels(runner: Runner, on: bool) -> Runner:
    step = runner.step

    def run() -> float:
        with kernels(on):
            return step()

    runner.step = run
    return runner


def step_rows(cfg: sa.nn.TransformerConfig, dtype: str, batch: int, repeat: int,
              compile: bool) -> tuple[list[dict[str, Any]], str]:
    """(b) in one compute dtype: the rows, interleaved step by step, and why PyTorch is missing (or "")."""
    import cupy

    sync = cupy.cuda.Device().synchronize
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), batch, cfg.seq_len, cfg.vocab)
    c = cfg if dtype == "float32" else dataclasses.replace(cfg, compute_dtype=dtype)
    runners = [
        with_kernels(shardarray_runner(f"shardarray 1 device, fused kernels, {dtype}", c, {"d": 1}, "replicated",
                                       "cupy", tok, tgt, sync), True),
        with_kernels(shardarray_runner(f"shardarray 1 device, CuPy array ops, {dtype}", c, {"d": 1}, "replicated",
                                       "cupy", tok, tgt, sync), False),
        with_kernels(shardarray_runner(f"shardarray emulated 2x2 mesh2d, fused kernels, {dtype}", c,
                                       {"rows": 2, "cols": 2}, "mesh2d", "cupy", tok, tgt, sync), True),
        with_kernels(shardarray_runner(f"shardarray 1 device, fused kernels, CUDA graph, {dtype}", c, {"d": 1},
                                       "replicated", "cupy", tok, tgt, sync, graphed=True), True),
        with_kernels(shardarray_runner(f"shardarray emulated 2x2 mesh2d, fused kernels, CUDA graph, {dtype}", c,
                                       {"rows": 2, "cols": 2}, "mesh2d", "cupy", tok, tgt, sync, graphed=True),
                     True),
    ]
    torch, why = cuda_torch(), ""
    if torch is None:
        why = "PyTorch is not installed or has no CUDA here"
    else:
        weights = {k: v.numpy() for k, v in sa.nn.init_transformer(cfg, sa.Mesh({"d": 1}), seed=0).items()}
        autocast = None if dtype == "float32" else dtype
        runners.append(torch_runner(cfg, weights, "cuda", tok, tgt, autocast))
        if compile:
            try:
                runners.append(torch_runner(cfg, weights, "cuda", tok, tgt, autocast, compile=True))
                runners[-1].run(timed=False)  # compiles here, outside the interleaved loop
            except Exception as e:  # torch.compile needs a compiler toolchain; report, do not fail the run
                runners.pop()
                why = f"torch.compile failed: {type(e).__name__}: {e}"[:300]
    for i in range(repeat + 2):
        for r in runners:  # interleaved: A B C A B C ...
            r.run(timed=i >= 2)
    rows = [r.row() for r in runners]
    for r in rows:
        r.pop("torch", None)
    free_pool()
    return rows, why


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes: check that everything runs")
    p.add_argument("--repeat", type=int, default=10, help="measurements per matmul; timed steps per implementation")
    p.add_argument("--calls", type=int, default=10, help="back-to-back matmuls between two CUDA events")
    p.add_argument("--batch", type=int, default=8, help="sequences per training step")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--compile", action="store_true", help="also time torch.compile's step")
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    if args.quick:
        sizes, args.repeat, args.calls = [128], 3, 2
        cfg = sa.nn.TransformerConfig(vocab=64, d_model=32, heads=2, d_kv=16, d_ff=64, n_layers=1, seq_len=16)
        args.batch = 2
    else:
        sizes = [4096, 8192]
        cfg = sa.nn.TransformerConfig(vocab=4096, d_model=1024, heads=8, d_kv=128, d_ff=4096,
                                      n_layers=args.layers, seq_len=512)
    device = device_name("cupy")
    torch = cuda_torch()
    flops = step_flops(cfg, args.batch)
    tokens = args.batch * cfg.seq_len
    mm: list[dict[str, Any]] = []
    train_step: dict[str, Any] = {"config": {**vars(cfg), "batch": args.batch, "params": sa.nn.param_count(cfg),
                                             "parameters": "float32", "einsum_flops_per_step": flops}}
    result = {
        "benchmark": "gpu", "device": device, "quick": args.quick,
        "cupy": __import__("cupy").__version__, "torch": torch.__version__ if torch else None,
        "numpy": np.__version__, "python": platform.python_version(),
        "timing": {"matmul": f"CUDA events around {args.calls} back-to-back calls, median of {args.repeat}",
                   "train_step": "interleaved step by step, each ending with the loss read; median of the timed "
                                 "steps after 2 warm-ups"},
        "matmul": mm,
        "train_step": train_step,  # one entry per dtype, added as each is measured
    }
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")
    out = Path(args.json or Path(__file__).parent / "results" / f"gpu-{slug}{'-quick' if args.quick else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every measurement: a run cut short keeps what it measured
        out.write_text(json.dumps(result, indent=2))

    matmul_rows(sizes, list(DTYPES), args.calls, args.repeat, on_row=lambda row: (mm.append(row), save()))
    peak = {d: max(r["cupy_tflops"] for r in mm if r["dtype"] == d) * 1e12 for d in DTYPES}
    for dtype in ("float32", "bfloat16"):
        rows, why = step_rows(cfg, dtype, args.batch, max(5, args.repeat), args.compile)
        eager = next((r for r in rows if "eager" in r["impl"]), None)
        one = rows[0]
        for r in rows:
            r["tokens_per_s"] = tokens / r["time_s"]
            r["einsum_tflops"] = flops / r["time_s"] / 1e12
            r["fraction_of_matmul_peak"] = flops / r["time_s"] / peak[dtype]
            if eager:
                r["tokens_per_s_vs_torch_eager"] = eager["time_s"] / r["time_s"]
            # against the 1-device step run the same way (eager or CUDA graph)
            base = next((o for o in rows if "1 device" in o["impl"] and "graph" in o["impl"]), one)
            r["time_vs_1_device"] = r["time_s"] / (base if "graph" in r["impl"] else one)["time_s"]
            print(f"step {r['impl']}: {1e3 * r['time_s']:.1f} ms, {r['tokens_per_s']:,.0f} tokens/s "
                  f"({r.get('tokens_per_s_vs_torch_eager', float('nan')):.2f}x PyTorch eager), "
                  f"{100 * r['fraction_of_matmul_peak']:.0f}% of the {dtype} matmul peak, "
                  f"first loss {r['first_loss']:.5f}", flush=True)
        losses = [r["first_loss"] for r in rows]
        tol = 1e-3 if dtype == "float32" else 2.0**-6  # bfloat16 compute: equal to its rounding
        same = max(losses) - min(losses) < tol * abs(losses[0])
        print(f"{dtype}: first losses agree" if same else f"{dtype}: first losses DIFFER: {losses}")
        train_step[dtype] = {"rows": rows, "same_first_loss": same, "matmul_peak_tflops": peak[dtype] / 1e12,
                             "missing": why}
        save()
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
