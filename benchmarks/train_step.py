"""One training step of the reference transformer: shardarray vs PyTorch eager, same model, same data.

A step is forward + backward + Adam update. shardarray runs on a 1-device
mesh and on an emulated 2×2 mesh (``mesh2d``: batch over rows; heads, d_ff
and vocab over cols) with NumPy shards (``--backend numpy``, the default) or
CuPy shards (``--backend cupy``); PyTorch runs the same model eagerly
(``nn.functional`` ops, ``scaled_dot_product_attention``, ``torch.optim.Adam``)
on the CPU or, with ``--backend cupy``, on the GPU. Both start from the same
weights and the first losses are compared, so the two do the same work.
Prints a table of times and ratios and writes JSON to benchmarks/results/.

    python benchmarks/train_step.py                      # CPU, d_model 256
    python benchmarks/train_step.py --dtype bfloat16     # bfloat16 compute vs float32, interleaved
    python benchmarks/train_step.py --backend cupy --d-model 1024 --heads 8 --d-kv 128 --d-ff 4096 --seq 512
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import shardarray as sa
from shardarray.bench.device import device_name


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
    p.add_argument("--repeat", type=int, default=5, help="timed steps (median reported) after 2 warm-up steps")
    p.add_argument("--threads", type=int, default=0, help="CPU threads for PyTorch (0: PyTorch's default)")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                   help="compute dtype of shardarray's model (float32 parameters); other than float32, each mesh "
                        "also runs float32, interleaved step by step, and the table gives the ratio")
    p.add_argument("--json", default="", help="output file (default benchmarks/results/train_step-<device>.json)")
    return p


# ----------------------------------------------------------------------------- shardarray
def shardarray_step(cfg: sa.nn.TransformerConfig, shape: dict, strategy: str, backend: str, tok: np.ndarray,
                    tgt: np.ndarray, repeat: int, sync: Any) -> dict:
    mesh = sa.Mesh(shape, backend=backend, rules=sa.nn.strategy_rules(strategy, shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=0, dtype="float32")
    opt = sa.optim.Adam(lr=1e-4)
    state = opt.init(params)
    vg = sa.value_and_grad(sa.nn.transformer_loss)
    tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
    targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
    first_loss = None
    times = []
    comm = 0.0
    for i in range(repeat + 2):
        sync()
        t0 = time.perf_counter()
        with sa.comm_log() as log:
            loss, grads = vg(params, tokens, targets, cfg)
            params, state = opt.update(params, grads, state)
            value = float(loss)
        sync()
        if i >= 2:
            times.append(time.perf_counter() - t0)
        if first_loss is None:
            first_loss = value
        comm = log.total("bytes")
    return {"time_s": statistics.median(times), "first_loss": first_loss, "comm_bytes_per_device": comm}


def shardarray_pair(cfg: sa.nn.TransformerConfig, dtype: str, shape: dict, strategy: str, backend: str,
                    tok: np.ndarray, tgt: np.ndarray, repeat: int, sync: Any) -> tuple[dict, dict]:
    """The step with float32 compute and with ``dtype`` compute, timed alternately (A B A B) for a fair ratio."""
    import dataclasses

    runs = []
    for cd in (None, dtype):
        c = dataclasses.replace(cfg, compute_dtype=cd)
        mesh = sa.Mesh(shape, backend=backend, rules=sa.nn.strategy_rules(strategy, shape))
        params = sa.nn.init_transformer(c, mesh, strategy=strategy, seed=0, dtype="float32")
        opt = sa.optim.Adam(lr=1e-4)
        runs.append({"cfg": c, "params": params, "opt": opt, "state": opt.init(params),
                     "tokens": sa.asarray(tok, dims=("batch", "seq"), mesh=mesh),
                     "targets": sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh),
                     "times": [], "first_loss": None, "comm": 0.0})
    vg = sa.value_and_grad(sa.nn.transformer_loss)
    for i in range(repeat + 2):
        for r in runs:
            sync()
            t0 = time.perf_counter()
            with sa.comm_log() as log:
                loss, grads = vg(r["params"], r["tokens"], r["targets"], r["cfg"])
                r["params"], r["state"] = r["opt"].update(r["params"], grads, r["state"])
                value = float(loss)
            sync()
            if i >= 2:
                r["times"].append(time.perf_counter() - t0)
            r["first_loss"] = value if r["first_loss"] is None else r["first_loss"]
            r["comm"] = log.total("bytes")
    out = tuple({"time_s": statistics.median(r["times"]), "first_loss": r["first_loss"],
                 "comm_bytes_per_device": r["comm"]} for r in runs)
    out[1]["ratio_vs_float32"] = out[1]["time_s"] / out[0]["time_s"]
    return out


# ----------------------------------------------------------------------------- PyTorch
def torch_step(cfg: sa.nn.TransformerConfig, weights: dict[str, np.ndarray], device: str, tok: np.ndarray,
               tgt: np.ndarray, repeat: int) -> dict:
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

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    first_loss = None
    times = []
    for i in range(repeat + 2):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        opt.step()
        value = loss.item()
        sync()
        if i >= 2:
            times.append(time.perf_counter() - t0)
        if first_loss is None:
            first_loss = value
    return {"time_s": statistics.median(times), "first_loss": first_loss, "version": torch.__version__}


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    cfg = sa.nn.TransformerConfig(vocab=args.vocab, d_model=args.d_model, heads=args.heads, d_kv=args.d_kv,
                                  d_ff=args.d_ff, n_layers=args.layers, seq_len=args.seq)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), args.batch, cfg.seq_len, cfg.vocab)
    sync: Any = lambda: None  # noqa: E731
    if args.backend == "cupy":
        import cupy

        sync = cupy.cuda.Device().synchronize
    rows: list[dict] = []
    for label, shape, strategy in (("1 device", {"d": 1}, "replicated"), ("2x2 mesh2d", {"rows": 2, "cols": 2}, "mesh2d")):
        if args.dtype == "float32":
            r = shardarray_step(cfg, shape, strategy, args.backend, tok, tgt, args.repeat, sync)
            rows.append({"impl": f"shardarray {label} ({args.backend})", "mesh": shape, **r})
            continue
        r32, r16 = shardarray_pair(cfg, args.dtype, shape, strategy, args.backend, tok, tgt, args.repeat, sync)
        rows.append({"impl": f"shardarray {label} ({args.backend}) float32", "mesh": shape, **r32})
        rows.append({"impl": f"shardarray {label} ({args.backend}) {args.dtype}", "mesh": shape, **r16})
    weights = {k: v.numpy() for k, v in sa.nn.init_transformer(cfg, sa.Mesh({"d": 1}), seed=0).items()}
    torch_info = None
    try:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        device = "cuda" if args.backend == "cupy" else "cpu"
        r = torch_step(cfg, weights, device, tok, tgt, args.repeat)
        torch_info = r.pop("version")
        rows.append({"impl": f"PyTorch eager ({device})", **r})
    except ImportError:
        print("PyTorch is not installed (pip install 'shardarray[bench]'): no PyTorch baseline")
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
        "config": {**vars(cfg), "batch": args.batch, "params": sa.nn.param_count(cfg)},
        "baseline": rows[-1]["impl"] if torch_info else rows[0]["impl"],
        "numpy": np.__version__,
        "torch": torch_info,
        "python": platform.python_version(),
        "rows": rows,
    }
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"one training step (fwd+bwd+Adam), {sa.nn.param_count(cfg):,} params, "
                        f"{tokens} tokens, {args.dtype}, on {result['device']}", title_justify="left")
    for col in ("implementation", "time/step", "tokens/s", "× baseline", "first loss", "comm/device"):
        table.add_column(col, justify="left" if col == "implementation" else "right")
    for r in rows:
        comm = r.get("comm_bytes_per_device")
        table.add_row(r["impl"], f"{1e3 * r['time_s']:.1f} ms", f"{r['tokens_per_s']:,.0f}",
                      f"{r['ratio_vs_baseline']:.2f}", f"{r['first_loss']:.5f}",
                      "-" if comm is None else f"{comm / 2**20:.2f} MiB")
    Console(width=120).print(table)
    for r in rows:
        if "ratio_vs_float32" in r:
            print(f"{r['impl']}: {r['ratio_vs_float32']:.2f}x the float32 step time (interleaved A B A B)")
    losses = [r["first_loss"] for r in rows]
    tol = 1e-3 if args.dtype == "float32" else 2.0**-8  # 16-bit compute: equal to its rounding
    same = max(losses) - min(losses) < tol * abs(losses[0])
    print("first losses agree: the same model on the same data" if same else f"first losses DIFFER: {losses}")
    result["same_first_loss"] = same
    out = Path(args.json or Path(__file__).parent / "results" / f"train_step-{'gpu' if args.backend == 'cupy' else 'cpu'}"
                                           f"{'' if args.dtype == 'float32' else '-' + args.dtype}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
