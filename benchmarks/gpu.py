"""GPU benchmarks (issues 20 and 21), in one run on one GPU: results in benchmarks/results/gpu-<device>.json.

(a) Matmul: ``sa.einsum`` on a 1-device CuPy mesh against ``cupy.matmul``
    (cuBLAS) and ``torch.matmul`` at 4096³ and 8192³ in float16, bfloat16
    and float32, and the emulated 2×2 SUMMA of the same product on the same
    GPU. Each figure is the median of ``--repeat`` measurements, each a pair
    of CUDA events around ``--calls`` back-to-back calls on the stream the
    work runs on (one synchronisation per measurement, not per call, so
    host overhead hides behind queued kernels as it does in real use); the
    implementations take turns, one measurement each (A B C A B C ...).
(a'') Attention's scores product on (batch, seq, heads, d_kv) blocks in
    bfloat16 and float32: ``backend.einsum`` as the step runs it, the
    pointer-batched gemm called directly, PyTorch's ``matmul``.
(a') Elementwise: the add, the casts between float32 and bfloat16 and GELU
    on 32M elements (on 4M, the host time of a launch from Python hides the
    kernel's), shardarray's vectorized kernels against CuPy's own
    elementwise kernels and PyTorch's, timed the same way.
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


class Timer:
    """CUDA events of one library (CuPy's or PyTorch's) and the scope the work runs in (its GPU and stream)."""

    def __init__(self, event: Callable[[], Any], elapsed_ms: Callable[[Any, Any], float],
                 scope: Any = None) -> None:
        self.event, self.elapsed_ms, self.scope = event, elapsed_ms, scope or contextlib.nullcontext()

    def seconds(self, fn: Callable[[], Any], calls: int) -> float:
        """Seconds per call of ``fn()``: a pair of events around ``calls`` back-to-back calls, one synchronisation."""
        with self.scope:
            start, end = self.event(), self.event()
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            return self.elapsed_ms(start, end) / 1e3 / calls


def cupy_timer(scope: Any = None) -> Timer:
    """``Timer`` with CuPy's events; ``scope`` makes the GPU and stream the work runs on current."""
    import cupy

    return Timer(cupy.cuda.Event, cupy.cuda.get_elapsed_time, scope)


def torch_timer(torch: Any) -> Timer:
    """``Timer`` with PyTorch's events, on its current stream."""
    return Timer(lambda: torch.cuda.Event(enable_timing=True), lambda a, b: a.elapsed_time(b))


def interleaved(impls: dict[str, tuple[Callable[[], Any], Timer]], calls: int, repeat: int,
                warmup: int = 2) -> dict[str, float]:
    """Median seconds per call of each implementation, measured in turn (A B C A B C ...) so that a change of clock
    or temperature during the run weighs on all of them alike."""
    for fn, timer in impls.values():
        with timer.scope:
            for _ in range(warmup):
                fn()
    times: dict[str, list[float]] = {name: [] for name in impls}
    for _ in range(repeat):
        for name, (fn, timer) in impls.items():
            times[name].append(timer.seconds(fn, calls))
    return {name: statistics.median(t) for name, t in times.items()}


def elementwise_rows(calls: int, repeat: int, n: int = 1 << 25) -> list[dict[str, Any]]:
    """The hot non-matmul ops of a training step on ``n`` elements: shardarray's vectorized kernels
    (``kernels/elementwise.cu``, ``gelu.cu``) against CuPy's own elementwise kernels and PyTorch's, interleaved.
    Reported: microseconds per call and the bytes read and written per second."""
    import cupy

    from shardarray.backend import cuda_kernels

    torch = cuda_torch()
    rows = []
    for dtype in ("float32", "bfloat16"):
        a = sa.random.normal(sa.Mesh({"d": 1}, backend="cupy"), {"n": n}, seed=1).shards[0]
        x, b = a.astype(dtype), (a * 0.5).astype(dtype)
        wide = a.astype(np.float32)
        cases: dict[str, dict[str, Callable[[], Any]]] = {
            "add": {"shardarray": lambda: cuda_kernels.add(cupy, x, b), "cupy": lambda: x + b},
            "gelu": {"shardarray": lambda: cuda_kernels.gelu(cupy, x)},
        }
        moved = {"add": 3 * x.itemsize * n, "gelu": 2 * x.itemsize * n}
        if dtype != "float32":
            cases["cast from float32"] = {"shardarray": lambda: cuda_kernels.cast(cupy, wide, dtype),
                                          "cupy": lambda: wide.astype(dtype)}
            cases["cast to float32"] = {"shardarray": lambda: cuda_kernels.cast(cupy, x, np.float32),
                                        "cupy": lambda: x.astype(np.float32)}
            moved["cast from float32"] = moved["cast to float32"] = (4 + x.itemsize) * n
        if torch is not None:
            tx, tb, tw = as_torch(torch, x), as_torch(torch, b), as_torch(torch, wide)
            cases["add"]["torch"] = lambda: tx + tb
            cases["gelu"]["torch"] = lambda: torch.nn.functional.gelu(tx, approximate="tanh")
            if dtype != "float32":
                cases["cast from float32"]["torch"] = lambda: tw.to(tx.dtype)
                cases["cast to float32"]["torch"] = lambda: tx.float()
        for op, fns in cases.items():
            timers = {name: (fn, torch_timer(torch) if name == "torch" else cupy_timer()) for name, fn in fns.items()}
            secs = interleaved(timers, calls, repeat)
            row: dict[str, Any] = {"op": op, "dtype": dtype, "n": n}
            for name, t in secs.items():
                row[f"{name}_us"] = 1e6 * t
                row[f"{name}_tb_per_s"] = moved[op] / t / 1e12
            rows.append(row)
            print(f"{op} {dtype} n={n}: " + ", ".join(f"{k} {1e6 * t:.1f} us ({moved[op] / t / 1e12:.2f} TB/s)"
                                                    for k, t in secs.items()), flush=True)
    free_pool()
    return rows


def attention_rows(calls: int, repeat: int, b: int = 8, s: int = 512, h: int = 8, d: int = 128) -> list[dict[str, Any]]:
    """Attention's scores product ``b s h d, b t h d -> b h s t`` on q, k in their (batch, seq, heads, d_kv) layout,
    bfloat16 and float32, interleaved: ``backend.einsum`` as the step runs it (16-bit: one strided batched gemm
    per batch index; float32: one ``cublasGemmBatchedEx`` on matrix addresses), the pointer-batched gemm called
    directly (the candidate for 16-bit), and PyTorch's ``matmul`` on the transposed views."""
    import cupy

    from shardarray.backend import cublas

    torch = cuda_torch()
    backend = sa.Mesh({"d": 1}, backend="cupy").backend
    rows = []
    for dtype in ("bfloat16", "float32"):
        q, k = (sa.random.normal(sa.Mesh({"d": 1}, backend="cupy"), {"b": b, "s": s, "h": h, "d": d}, seed=i)
                .astype(dtype).shards[0] for i in (1, 2))
        q4, k4 = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 3, 1)  # (b, h, s, d), (b, h, d, t) views

        def pointers(q4: Any = q4, k4: Any = k4) -> Any:
            out = cupy.empty((b, h, s, s), dtype=q4.dtype)
            if not cublas.matmul_two_batch_dims(q4, k4, out):
                raise RuntimeError("the pointer-batched gemm refused these views")
            return out

        impls: dict[str, tuple[Callable[[], Any], Timer]] = {
            "shardarray": (lambda q=q, k=k: backend.einsum("bshk,bthk->bhst", q, k), cupy_timer()),
            "pointer_batched": (pointers, cupy_timer()),
        }
        if torch is not None:
            tq, tk = as_torch(torch, q), as_torch(torch, k)
            impls["torch"] = (lambda tq=tq, tk=tk: torch.matmul(tq.transpose(1, 2), tk.permute(0, 2, 3, 1)),
                              torch_timer(torch))
        secs = interleaved(impls, calls, repeat)
        flops = 2.0 * b * h * s * s * d
        row: dict[str, Any] = {"op": "bshd,bthd->bhst", "dtype": dtype, "sizes": {"b": b, "s": s, "h": h, "d": d}}
        for name, t in secs.items():
            row[f"{name}_us"], row[f"{name}_tflops"] = 1e6 * t, flops / t / 1e12
        rows.append(row)
        print(f"attention scores {dtype}: " + ", ".join(f"{k} {1e6 * t:.1f} us ({flops / t / 1e12:.0f} TFLOP/s)"
                                                     for k, t in secs.items()), flush=True)
    free_pool()
    return rows


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
            xs = sa.asarray(x.numpy(), ("m", "k"), grid, layout={"m": "row", "k": "col"})
            ws = sa.asarray(w.numpy(), ("k", "n"), grid, layout={"k": "row", "n": "col"})
            impls: dict[str, tuple[Callable[[], Any], Timer]] = {
                "cupy": (lambda: cupy.matmul(a, b), cupy_timer(one.backend.scope(0))),
                "shardarray": (lambda: sa.einsum("m k, k n -> m n", x, w).shards[0], cupy_timer(one.backend.scope(0))),
                "summa_2x2": (lambda: sa.einsum("m k, k n -> m n", xs, ws).shards[0],
                              cupy_timer(grid.backend.scope(0))),
            }
            if torch is not None:
                ta, tb = as_torch(torch, a), as_torch(torch, b)
                impls["torch"] = (lambda: torch.matmul(ta, tb), torch_timer(torch))
            entry: dict[str, Any] = {"n": n, "dtype": dtype}
            entry.update({f"{k}_s": t for k, t in interleaved(impls, calls, repeat).items()})
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
        "timing": {"matmul": f"CUDA events around {args.calls} back-to-back calls, median of {args.repeat}, the "
                             f"implementations interleaved",
                   "elementwise": "as matmul, on 32M elements (4M leave the launch's host time above the kernel's)",
                   "train_step": "interleaved step by step, each ending with the loss read; median of the timed "
                                 "steps after 2 warm-ups"},
        "matmul": mm,
        "elementwise": [],
        "attention_products": [],
        "train_step": train_step,  # one entry per dtype, added as each is measured
    }
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")
    out = Path(args.json or Path(__file__).parent / "results" / f"gpu-{slug}{'-quick' if args.quick else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every measurement: a run cut short keeps what it measured
        out.write_text(json.dumps(result, indent=2))

    matmul_rows(sizes, list(DTYPES), args.calls, args.repeat, on_row=lambda row: (mm.append(row), save()))
    result["elementwise"] = elementwise_rows(args.calls, args.repeat, 1 << 10 if args.quick else 1 << 25)
    save()
    small = {"b": 2, "s": 16, "h": 2, "d": 8} if args.quick else {}
    result["attention_products"] = attention_rows(args.calls, args.repeat, **small)
    save()
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
