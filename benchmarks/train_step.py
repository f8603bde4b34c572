"""One training step of the reference transformer: shardarray vs PyTorch eager, same model, same data.

A step is forward + backward + Adam update. shardarray runs on a 1-device
mesh and on an emulated 2×2 mesh (``mesh2d``: batch over rows; heads, d_ff
and vocab over cols) with NumPy shards (``--backend numpy``, the default) or
CuPy shards (``--backend cupy``); PyTorch runs the same model eagerly
(``nn.functional`` ops, ``scaled_dot_product_attention``, ``torch.optim.Adam``)
on the CPU or, with ``--backend cupy``, on the GPU. Both start from the same
weights and the first losses are compared, so the two do the same work.
All implementations are timed interleaved, step by step (A B C A B C ...),
after 2 warm-up steps each, and the median of ``--repeat`` (≥ 5) steps is
reported, so a busy machine slows them alike. Threads are pinned equally:
``--threads N`` (default 1) sets NumPy's BLAS pool (threadpoolctl, and
``SHARDARRAY_BLAS_THREADS``) and ``torch.set_num_threads`` to N; the JSON
records ``_env.environment()`` (cores, BLAS pools, load) before and after.
Prints a table of times and ratios and writes JSON (default under /tmp; a
committed file in benchmarks/results/ is only overwritten with ``--force``).

    python benchmarks/train_step.py                      # CPU, d_model 256, 1 thread each
    python benchmarks/train_step.py --json benchmarks/results/train_step-cpu.json --force
    python benchmarks/train_step.py --dtype bfloat16     # bfloat16 compute vs float32, interleaved
    python benchmarks/train_step.py --backend cupy --d-model 1024 --heads 8 --d-kv 128 --d-ff 4096 --seq 512
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any

import numpy as np

import shardarray as sa
from shardarray.bench.device import device_name

try:  # run as a script (benchmarks/ on sys.path) or as a module
    from _env import default_output, environment, output_path
except ImportError:  # pragma: no cover
    from benchmarks._env import default_output, environment, output_path


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="numpy", choices=("numpy", "cupy"))
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--d-kv", type=int, default=32)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--repeat", type=int, default=5, help="timed steps (median reported, at least 5) after 2 warm-ups")
    p.add_argument("--threads", type=int, default=1, help="CPU threads for NumPy's BLAS and for PyTorch alike")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                   help="compute dtype of shardarray's model (float32 parameters); other than float32, each mesh "
                        "also runs float32, interleaved step by step, and the table gives the ratio")
    p.add_argument("--json", default="", help="output file (default /tmp/shardarray-bench/train_step-<device>.json)")
    p.add_argument("--force", action="store_true", help="overwrite a committed file in benchmarks/results/")
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch (baseline: shardarray on 1 device)")
    return p


# ----------------------------------------------------------------------------- shardarray
class Runner:
    """One implementation's training step, timed one step at a time (so several interleave)."""

    def __init__(self, impl: str, step: Any, sync: Any, extra: dict | None = None) -> None:
        self.impl, self.step, self.sync, self.extra = impl, step, sync, extra or {}
        self.times: list[float] = []
        self.first_loss: float | None = None

    def run(self, timed: bool) -> None:
        self.sync()
        t0 = time.perf_counter()
        value = self.step()
        self.sync()
        if timed:
            self.times.append(time.perf_counter() - t0)
        if self.first_loss is None:
            self.first_loss = value

    def row(self) -> dict:
        return {"impl": self.impl, **self.extra, "time_s": statistics.median(self.times),
                "times_s": self.times, "first_loss": self.first_loss}


def shardarray_runner(impl: str, cfg: sa.nn.TransformerConfig, shape: dict, strategy: str, backend: str,
                      tok: np.ndarray, tgt: np.ndarray, sync: Any, graphed: bool = False) -> Runner:
    """shardarray's step; ``graphed``: the step (loss, gradients, Adam) under ``sa.graphed``, parameters and
    optimizer state donated (captured as a CUDA graph on CuPy shards of one GPU at the second step)."""
    mesh = sa.Mesh(shape, backend=backend, rules=sa.nn.strategy_rules(strategy, shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=0, dtype="float32")
    opt = sa.optim.Adam(lr=1e-4)
    box = {"params": params, "state": opt.init(params), "comm": 0.0}
    vg = sa.value_and_grad(sa.nn.transformer_loss)
    tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
    targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
    runner = Runner(impl, lambda: 0.0, sync, {"mesh": shape})
    if graphed:

        def train(p: Any, s: Any) -> Any:
            loss, grads = vg(p, tokens, targets, cfg)
            return (loss, *opt.update(p, grads, s))

        captured = sa.graphed(train, donate_argnums=(0, 1))

        def graph_step() -> float:
            loss, box["params"], box["state"] = captured(box["params"], box["state"])
            return float(loss)

        runner.step = graph_step
        return runner

    def step() -> float:
        with sa.comm_log() as log:
            loss, grads = vg(box["params"], tokens, targets, cfg)
            box["params"], box["state"] = opt.update(box["params"], grads, box["state"])
            value = float(loss)
        runner.extra["comm_bytes_per_device"] = log.total("bytes")
        return value

    runner.step = step
    return runner


# ----------------------------------------------------------------------------- PyTorch
def torch_runner(cfg: sa.nn.TransformerConfig, weights: dict[str, np.ndarray], device: str, tok: np.ndarray,
                 tgt: np.ndarray, autocast: str | None = None, compile: bool = False) -> Runner:
    """The same model in PyTorch eager: float32 parameters and Adam; ``autocast="bfloat16"`` (or "float16")
    computes under ``torch.autocast`` (as shardarray's ``compute_dtype``); ``compile`` wraps the loss in
    ``torch.compile``."""
    import contextlib

    import torch
    import torch.nn.functional as F

    p = {k: torch.tensor(v, device=device, requires_grad=True) for k, v in weights.items()}
    opt = torch.optim.Adam(list(p.values()), lr=1e-4)
    tokens = torch.tensor(tok, device=device)
    targets = torch.tensor(tgt, device=device)
    d, h, k = cfg.d_model, cfg.heads, cfg.d_kv

    def loss_fn() -> Any:
        b, s = tokens.shape
        x = F.embedding(tokens, p["embed"]) + p["pos"]
        for i in range(cfg.n_layers):
            pre = f"layer{i}."
            y = F.layer_norm(x, (d,), p[pre + "ln1.gain"], p[pre + "ln1.bias"], cfg.eps)
            q, kk, v = (
                (y @ p[pre + f"attn.{n}"].reshape(d, h * k)).reshape(b, s, h, k).transpose(1, 2)
                for n in ("wq", "wk", "wv")
            )
            o = F.scaled_dot_product_attention(q, kk, v, is_causal=True)
            x = x + o.transpose(1, 2).reshape(b, s, h * k) @ p[pre + "attn.wo"].reshape(h * k, d)
            y = F.layer_norm(x, (d,), p[pre + "ln2.gain"], p[pre + "ln2.bias"], cfg.eps)
            y = F.gelu(y @ p[pre + "mlp.w_in"] + p[pre + "mlp.b_in"], approximate="tanh")
            x = x + y @ p[pre + "mlp.w_out"] + p[pre + "mlp.b_out"]
        x = F.layer_norm(x, (d,), p["ln_f.gain"], p["ln_f.bias"], cfg.eps)
        logits = x @ p["unembed"]
        return F.cross_entropy(logits.reshape(-1, cfg.vocab), targets.reshape(-1))

    forward = torch.compile(loss_fn) if compile else loss_fn

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        ctx = torch.autocast(device, dtype=getattr(torch, autocast)) if autocast else contextlib.nullcontext()
        with ctx:
            loss = forward()
        loss.backward()
        opt.step()
        return loss.item()

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    label = f"PyTorch {'torch.compile' if compile else 'eager'} ({device}{', autocast ' + autocast if autocast else ''})"
    return Runner(label, step, sync, {"torch": torch.__version__})


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.repeat < 5:
        raise SystemExit(f"--repeat {args.repeat}: the median needs at least 5 timed steps")
    if args.threads < 1:
        raise SystemExit(f"--threads {args.threads}: pass a thread count >= 1 (the same for NumPy and PyTorch)")
    out = output_path(args.json or default_output(
        f"train_step-{'gpu' if args.backend == 'cupy' else 'cpu'}{'' if args.dtype == 'float32' else '-' + args.dtype}"
    ), args.force)
    import os

    from threadpoolctl import threadpool_limits

    os.environ["SHARDARRAY_BLAS_THREADS"] = str(args.threads)  # the first mesh keeps this pool size
    env_before = environment()
    cfg = sa.nn.TransformerConfig(vocab=args.vocab, d_model=args.d_model, heads=args.heads, d_kv=args.d_kv,
                                  d_ff=args.d_ff, n_layers=args.layers, seq_len=args.seq)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), args.batch, cfg.seq_len, cfg.vocab)
    sync: Any = lambda: None
    if args.backend == "cupy":
        import cupy

        sync = cupy.cuda.Device().synchronize
    import dataclasses

    runners: list[Runner] = []
    for label, shape, strategy in (("1 device", {"d": 1}, "replicated"), ("2x2 mesh2d", {"rows": 2, "cols": 2}, "mesh2d")):
        impl = f"shardarray {label} ({args.backend})"
        if args.dtype == "float32":
            runners.append(shardarray_runner(impl, cfg, shape, strategy, args.backend, tok, tgt, sync))
            continue
        c16 = dataclasses.replace(cfg, compute_dtype=args.dtype)
        runners.append(shardarray_runner(impl + " float32", cfg, shape, strategy, args.backend, tok, tgt, sync))
        runners.append(shardarray_runner(f"{impl} {args.dtype}", c16, shape, strategy, args.backend, tok, tgt, sync))
    torch_info = None
    if not args.no_torch:
        try:
            import torch

            torch.set_num_threads(args.threads)
            weights = {k: v.numpy() for k, v in sa.nn.init_transformer(cfg, sa.Mesh({"d": 1}), seed=0).items()}
            runners.append(torch_runner(cfg, weights, "cuda" if args.backend == "cupy" else "cpu", tok, tgt))
            torch_info = {"version": torch.__version__, "num_threads": torch.get_num_threads()}
        except ImportError:
            print("PyTorch is not installed (pip install 'shardarray[bench]'): no PyTorch baseline")
    with threadpool_limits(limits=args.threads):  # every pool (NumPy's BLAS, PyTorch's OpenMP) at --threads
        env_during = environment()
        for i in range(args.repeat + 2):
            for r in runners:  # interleaved: A B C A B C ...
                r.run(timed=i >= 2)
    env_after = environment()
    rows = [r.row() for r in runners]
    for r in rows[:]:
        r.pop("torch", None)
    for i in range(1, len(rows)):
        if args.dtype != "float32" and rows[i]["impl"].endswith(args.dtype):
            rows[i]["ratio_vs_float32"] = rows[i]["time_s"] / rows[i - 1]["time_s"]
    tokens = args.batch * args.seq
    base = rows[-1]["time_s"] if torch_info else rows[0]["time_s"]
    for r in rows:
        r["tokens_per_s"] = tokens / r["time_s"]
        r["ratio_vs_baseline"] = r["time_s"] / base
    result = {
        "benchmark": "train_step",
        "device": device_name(args.backend),
        "backend": args.backend,
        "dtype": args.dtype,
        "threads": args.threads,
        "interleaved": "step by step (A B C A B C), median of the timed steps after 2 warm-ups each",
        "config": {**vars(cfg), "batch": args.batch, "params": sa.nn.param_count(cfg), "repeat": args.repeat},
        "baseline": rows[-1]["impl"] if torch_info else rows[0]["impl"],
        "numpy": np.__version__,
        "torch": torch_info,
        "python": platform.python_version(),
        "environment": {"before": env_before, "during": env_during, "after": env_after},
        "rows": rows,
    }
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"one training step (fwd+bwd+Adam), {sa.nn.param_count(cfg):,} params, {tokens} tokens, "
                        f"{args.dtype}, {args.threads} thread(s) each, on {result['device']}", title_justify="left")
    for col in ("implementation", "time/step", "tokens/s", "× baseline", "first loss", "comm/device"):
        table.add_column(col, justify="left" if col == "implementation" else "right")
    for r in rows:
        comm = r.get("comm_bytes_per_device")
        table.add_row(r["impl"], f"{1e3 * r['time_s']:.1f} ms", f"{r['tokens_per_s']:,.0f}",
                      f"{r['ratio_vs_baseline']:.2f}", f"{r['first_loss']:.5f}",
                      "-" if comm is None else f"{comm / 2**20:.2f} MiB")
    Console(width=120).print(table)
    print(f"load average before {env_before['loadavg']}, after {env_after['loadavg']} "
          f"({env_before['cores_available']} cores); times interleaved step by step")
    for r in rows:
        if "ratio_vs_float32" in r:
            print(f"{r['impl']}: {r['ratio_vs_float32']:.2f}x the float32 step time (interleaved A B A B)")
    losses = [r["first_loss"] for r in rows]
    tol = 1e-3 if args.dtype == "float32" else 2.0**-8  # 16-bit compute: equal to its rounding
    same = max(losses) - min(losses) < tol * abs(losses[0])
    print("first losses agree: the same model on the same data" if same else f"first losses DIFFER: {losses}")
    result["same_first_loss"] = same
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
