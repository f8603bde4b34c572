"""The main job: train the reference transformer on an emulated mesh (CPU by default).

Trains a small GPT-style decoder on the synthetic ``patterns`` task (shipped
with the package, see ``sa.nn.data``) under a parallelization strategy:
every parameter, activation and gradient is split over the mesh by the
strategy's layout rules and every collective is logged. A progress bar shows
the loss, tokens/s and bytes communicated per device and step; at the end it
prints held-out accuracy and saves a loss-curve PNG.

    python examples/train_transformer.py                                 # 2x2 mesh2d, NumPy shards
    python examples/train_transformer.py --mesh model=4 --strategy megatron
    python examples/train_transformer.py --mesh data=2,model=2 --strategy megatron --steps 300
    python examples/train_transformer.py --mesh row=2,col=2,dep=2 --strategy tesseract
    python examples/train_transformer.py --mesh rows=2,cols=2 --strategy auto --rules-out rules.json
    python examples/train_transformer.py --mesh rows=2,cols=2 --rules rules.json   # reuse, no search
    python examples/train_transformer.py --backend cupy --d-model 256 --layers 4   # every shard on the GPU
    mpiexec -n 4 python examples/train_transformer.py     # the same, one process per device (MPI SPMD)
    python examples/train_transformer.py --save runs/a --stop-at 400   # checkpoints in runs/a; stop at step 400
    python examples/train_transformer.py --resume runs/a --save runs/a # the same losses as one uninterrupted run
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

import shardarray as sa
from shardarray.bench.args import check_output, float_at_least, int_at_least, mesh_shape


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mesh", type=mesh_shape, default={"rows": 2, "cols": 2}, help="mesh shape (default rows=2,cols=2)")
    p.add_argument("--strategy", default=None, choices=(*sa.nn.STRATEGIES, "auto"),
                   help="layout strategy (default mesh2d); auto: the planner's best rules for this mesh, printed")
    p.add_argument("--hardware", default=None, choices=sorted(sa.hardware.PROFILES),
                   help="--strategy auto only: the hardware profile to model (default h100)")
    p.add_argument("--rules", default="", help="train with the layout rules of this JSON file (sa.nn.save_rules, "
                   "--rules-out, shardarray-bench plan --rules-out) instead of a strategy")
    p.add_argument("--rules-out", default="", help="write the rules trained with to this JSON file")
    p.add_argument("--backend", default="numpy", choices=("numpy", "cupy"), help="where shards live")
    p.add_argument("--comm", default="auto", choices=("auto", "emulated", "mpi"),
                   help="emulated mesh, or one process per device under mpiexec (auto: mpi when launched by mpiexec)")
    positive = int_at_least(1)
    p.add_argument("--vocab", type=positive, default=64)
    p.add_argument("--d-model", type=positive, default=64)
    p.add_argument("--heads", type=positive, default=4)
    p.add_argument("--d-kv", type=positive, default=16)
    p.add_argument("--d-ff", type=positive, default=256)
    p.add_argument("--layers", type=int_at_least(0), default=2)
    p.add_argument("--seq", type=positive, default=32, help="sequence length")
    p.add_argument("--batch", type=positive, default=32, help="sequences per step (>= 1)")
    p.add_argument("--steps", type=positive, default=800, help="training steps (>= 1)")
    p.add_argument("--lr", type=float_at_least(0.0), default=3e-3, help="peak learning rate (Adam, cosine schedule)")
    p.add_argument("--weight-decay", type=float_at_least(0.0), default=0.0)
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16", "float64"),
                   help="compute dtype; bfloat16/float16 keep float32 parameters and Adam state (float16 adds a "
                        "dynamic loss scale)")
    p.add_argument("--graph", action="store_true", help="capture the training step once as a CUDA graph and replay "
                   "it (sa.graphed; CuPy shards on one GPU: far fewer launches from Python; elsewhere it runs "
                   "eagerly with the same results)")
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.add_argument("--eval-batch", type=positive, default=256, help="held-out sequences for the final accuracy (>= 1)")
    p.add_argument("--plot", default="loss_curve.png", help="where to save the loss curve ('' to skip)")
    p.add_argument("--json", default="", help="also write the metrics to this JSON file")
    p.add_argument("--quiet", action="store_true", help="no progress bar (the summary is still printed)")
    p.add_argument("--save", default="", help="checkpoint run directory: save every --save-every steps and at the end")
    p.add_argument("--save-every", type=positive, default=100, help="steps between checkpoints (default 100)")
    p.add_argument("--keep", type=positive, default=2, help="checkpoints of the run to keep (default 2)")
    p.add_argument("--resume", default="", help="resume from this checkpoint (a run directory: its newest)")
    p.add_argument("--stop-at", type=int_at_least(0), default=0,
                   help="stop after this step (saved first with --save), as if interrupted; 0: run to --steps")
    return p


def _import_plotting() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError(
            "saving the loss curve needs matplotlib: pip install 'shardarray[examples]' (or pass --plot '')"
        ) from e
    return plt


def save_plot(path: str, losses: list[float], evals: list[tuple[int, float]], title: str, chance: float) -> None:
    plt = _import_plotting()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(np.arange(1, len(losses) + 1), losses, lw=0.8, color="tab:blue", label="training loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_yscale("log")
    if evals:
        ax2 = ax.twinx()
        ax2.plot(*zip(*evals), "o-", color="tab:green", label="held-out accuracy")
        ax2.axhline(chance, ls=":", color="gray", label="chance")
        ax2.set_ylim(0, 1)
        ax2.set_ylabel("accuracy")
        ax2.legend(loc="center right")
    ax.legend(loc="upper right")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _compute_dtype(dtype: str) -> str | None:
    """The model's compute dtype for ``--dtype``: the 16-bit ones compute in 16 bits, the others in the params'
    dtype."""
    return dtype if dtype in ("bfloat16", "float16") else None


def _param_dtype(dtype: str) -> str:
    """Parameters stay float32 under mixed precision (float64 runs keep float64)."""
    return "float64" if dtype == "float64" else "float32"


def policy(dtype: str) -> str:
    """The precision policy ``--dtype`` selects, in words."""
    if _compute_dtype(dtype) is None:
        return f"precision: {dtype} everywhere"
    extra = "; dynamic loss scale (init 2^15, halved on overflow, doubled after 2000 good steps)" \
        if dtype == "float16" else ""
    return (f"precision: {dtype} einsums and activations; float32 parameters, gradients and Adam moments; "
            f"layer norm, softmax and loss in float32{extra}")


def evaluate(params: dict, cfg: sa.nn.TransformerConfig, mesh: sa.Mesh, seed: int, n: int) -> float:
    """Held-out next-token accuracy on ``n`` sequences of stream ``seed`` (chunk ``i``, of at most 64, is its
    batch ``i``); like training batches, each device makes only the rows of its block (``pattern_arrays``)."""
    hits, total = 0.0, 0
    for i, lo in enumerate(range(0, n, 64)):
        rows = min(64, n - lo)
        tokens, targets = sa.nn.data.pattern_arrays(mesh, seed, i, rows, cfg.seq_len, cfg.vocab)
        acc = float(sa.nn.accuracy(sa.nn.transformer_logits(params, tokens, cfg), targets))
        hits += acc * rows * cfg.seq_len
        total += rows * cfg.seq_len
    return hits / total


def save_checkpoint(run: str, keep: int, step: int, params: dict, state: dict, scale_state: Any,
                    data_seed: int, history: tuple[list, list, list], dtype: str = "float32") -> None:
    """Save everything a bit-exact resume needs: params, optimizer and loss-scale state, the data stream (its
    seed; its position is ``step``: batch ``s`` is a function of ``(seed, s)`` alone) and the history so far
    (JSON strings: Python floats round-trip exactly), into run dir ``run``."""
    losses, comm, evals = history
    sa.checkpoint.save(run, {"params": params, "opt": state, "scale": scale_state, "step": step,
                             "data": json.dumps({"stream": "patterns", "seed": data_seed, "next_step": step + 1,
                                                 "dtype": dtype}),
                             "history": json.dumps({"losses": losses, "comm": comm, "evals": evals})}, keep=keep)


def resume(path: str, params: dict, state: dict, scale_state: Any,
           history: tuple[list, list, list], dtype: str = "float32") -> tuple[dict, dict, Any, int, int]:
    """Load a ``save_checkpoint`` into the layouts of ``params``/``state`` (any mesh or strategy); restores
    ``history`` in place; returns ``(params, state, scale_state, first step to run, data stream seed)``."""
    target = {"params": params, "opt": state, "scale": scale_state, "step": 0, "data": "", "history": ""}
    try:
        tree = sa.checkpoint.load(path, target)
    except sa.CheckpointError as e:  # name the flags that change the saved tree, as far as the message tells
        if not Path(path).exists():
            raise sa.CheckpointError(f"--resume {path}: {e}") from None
        hint = ("another --dtype changes the loss-scale state: resume with the --dtype of the run that saved it"
                if "scale" in str(e) else "resume with the model flags of the run that saved it (--d-model, "
                "--layers, --heads, ...), and check the path")
        raise sa.CheckpointError(f"{e} (--resume {path} with --dtype {dtype}: {hint})") from None
    data = json.loads(tree["data"])
    saved_dtype = data.get("dtype", dtype)
    if saved_dtype != dtype:
        raise sa.ArgumentError(f"--resume {path}: the run was saved with --dtype {saved_dtype}, this one has "
                               f"--dtype {dtype}; resume with --dtype {saved_dtype}")
    saved = json.loads(tree["history"])
    for into, key in zip(history, ("losses", "comm", "evals")):
        into.extend(tuple(v) if key == "evals" else v for v in saved[key])
    return tree["params"], tree["opt"], tree["scale"], data["next_step"], data["seed"]


def check_flags(args: argparse.Namespace) -> None:
    """Refuse flags that another flag would silently override, then fill in the defaults.

    ``--rules`` replaces the strategy (an explicit ``--strategy`` beside it is refused), ``--hardware`` is only
    read by ``--strategy auto``, ``--stop-at`` must fall inside ``--steps``, and ``--rules-out`` cannot hold
    tesseract's layout (it gives each weight its own; no rules file does).
    """
    if args.rules and args.strategy is not None:
        raise sa.ArgumentError(f"--rules {args.rules} and --strategy {args.strategy} both choose the layout: "
                               f"give one of them (--rules trains with the file's rules)")
    if args.hardware is not None and args.strategy != "auto":
        raise sa.ArgumentError(f"--hardware {args.hardware} is only read by --strategy auto (the planner's cost "
                               f"model); drop it, or add --strategy auto")
    if args.stop_at > args.steps:
        raise sa.ArgumentError(f"--stop-at {args.stop_at} is past --steps {args.steps}: the run would never stop "
                               f"there; pass --stop-at at most {args.steps} (0: run to --steps)")
    args.strategy = args.strategy or ("rules" if args.rules else "mesh2d")
    args.hardware = args.hardware or "h100"
    if args.rules_out and args.strategy == "tesseract":
        raise sa.ArgumentError("--rules-out with --strategy tesseract: tesseract gives each weight its own layout, "
                               "which no rules file holds; train it again with --strategy tesseract instead")


def layout_rules(args: argparse.Namespace, cfg: sa.nn.TransformerConfig) -> tuple[dict, str | None]:
    """The layout rules to train with and the strategy for ``init_transformer`` (None: the rules), from
    ``--rules``, ``--strategy`` and ``--mesh``; the errors name the flags."""
    if args.rules:
        return rules_file(args.rules, args.mesh, cfg), None
    if args.strategy == "auto":  # searched on the meta backend for this mesh shape, printed; then trained as the mesh's
        return sa.nn.auto_rules(cfg, args.mesh, args.batch, args.hardware, dtype=_param_dtype(args.dtype)), None
    try:
        return sa.nn.strategy_rules(args.strategy, args.mesh), args.strategy
    except sa.LayoutError as e:
        raise sa.LayoutError(f"--strategy {args.strategy} does not fit --mesh {_mesh_text(args.mesh)}: {e} (on the "
                             f"command line: --mesh {_EXAMPLE_MESH.get(args.strategy, 'd=4')}; or --strategy auto "
                             f"for any mesh)") from None


def rules_file(path: str, mesh: dict, cfg: sa.nn.TransformerConfig) -> dict:
    """The rules of ``--rules path``, refused unless they split dims of the model over axes of ``--mesh`` (a
    misspelt dim would train unsplit without a word) and hold rules at all (a tesseract plan has none)."""
    if not Path(path).is_file():
        raise sa.MissingFileError(f"--rules {path}: no such file; write one with --rules-out (or shardarray-bench "
                                  f"plan --rules-out)")
    try:
        rules = sa.nn.load_rules(path)
    except sa.ArgumentError as e:
        raise sa.ArgumentError(f"--rules {path}: {e}") from None
    body = json.loads(Path(path).read_text())
    if body.get("strategy") == "tesseract":
        raise sa.ArgumentError(f"--rules {path} holds a tesseract plan, which has no layout rules: train it with "
                               f"--strategy tesseract --mesh row=q,col=q,dep=d")
    dims = {"batch", *cfg.sizes}
    unknown = sorted(d for d in rules if d not in dims)
    if unknown:
        raise sa.ArgumentError(f"--rules {path} splits {unknown}, which the model has no dim of (its dims: "
                               f"{sorted(dims)}); fix the file's dim names")
    missing = sorted({a for axes in rules.values() for a in axes} - set(mesh))
    if missing:
        made_for = body.get("mesh")
        hint = f" (the file was made for --mesh {_mesh_text(made_for)})" if isinstance(made_for, dict) else ""
        raise sa.ArgumentError(f"--rules {path} splits over mesh axes {missing}, which --mesh {_mesh_text(mesh)} "
                               f"does not have; pass a --mesh with those axes{hint}")
    return rules


def _mesh_text(shape: dict) -> str:
    """A mesh shape as ``--mesh`` spells it: ``rows=2,cols=2``."""
    return ",".join(f"{a}={n}" for a, n in shape.items())


#: a mesh each named strategy trains on, for the messages
_EXAMPLE_MESH = {"megatron": "model=4 or data=2,model=2", "mesh2d": "rows=2,cols=2", "tesseract": "row=2,col=2,dep=2"}


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Run the training; returns the metrics (also printed)."""
    cfg = sa.nn.TransformerConfig(
        vocab=args.vocab, d_model=args.d_model, heads=args.heads, d_kv=args.d_kv, d_ff=args.d_ff,
        n_layers=args.layers, seq_len=args.seq, compute_dtype=_compute_dtype(args.dtype),
    )
    check_flags(args)
    check_output("--rules-out", args.rules_out)  # before the search and the training, not after them
    rules, strategy = layout_rules(args, cfg)
    if args.rules_out:
        sa.nn.save_rules(args.rules_out, rules, mesh=args.mesh, strategy=args.strategy, batch=args.batch)
    mesh = sa.Mesh(args.mesh, backend=args.backend, rules=rules, comm=args.comm)
    root = mesh.process_index == 0  # under mpiexec every process trains; one reports
    if args.plot:
        _import_plotting()  # fail before training, not after
    if root:  # fail before training, not after
        check_output("--plot", args.plot, image=True)
        check_output("--json", args.json)
    params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=args.seed, dtype=_param_dtype(args.dtype))
    opt = sa.optim.Adam(sa.optim.cosine_schedule(args.lr, args.steps, warmup=min(50, args.steps // 10)),
                        weight_decay=args.weight_decay)
    state = opt.init(params)
    step_fn = sa.value_and_grad(sa.nn.transformer_loss)
    if args.graph and args.dtype == "float16":
        raise sa.ArgumentError("--graph with --dtype float16: the dynamic loss scale decides on the host whether a "
                               "step is skipped; use --dtype bfloat16 (no loss scale) with --graph")

    def graph_step(params: dict, state: dict, tokens: Any, targets: Any) -> tuple[Any, dict, dict]:
        loss, grads = step_fn(params, tokens, targets, cfg)
        params, state = opt.update(params, grads, state)
        return loss, params, state

    graphed = sa.graphed(graph_step, donate_argnums=(0, 1)) if args.graph else None
    graph_comm = 0.0  # the most traffic a --graph step logged (its eager and captured runs)
    scaler = sa.optim.DynamicLossScale() if args.dtype == "float16" else None
    scale_state = scaler.init() if scaler else None
    data_seed = args.seed  # batch s of the training stream is pattern_arrays(mesh, data_seed, s, ...)
    eval_rng_seed = 10_000 + args.seed
    chance = 1.0 / cfg.vocab

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(quiet=not root)
    console.print(
        f"[bold]shardarray[/] training a {sa.nn.param_count(cfg):,}-parameter transformer "
        f"(d_model {cfg.d_model}, {cfg.n_layers} layers, {cfg.heads} heads, vocab {cfg.vocab}, seq {cfg.seq_len})\n"
        f"mesh {mesh.shape} ({args.backend}), strategy {args.strategy!r}: rules {rules or '{} (replicated)'}; "
        f"batch {args.batch} x {cfg.seq_len} tokens, {args.steps} steps of Adam\n{policy(args.dtype)}"
    )
    losses: list[float] = []
    comm_per_step: list[float] = []
    evals: list[tuple[int, float]] = []
    tokens_per_step = args.batch * cfg.seq_len
    eval_every = max(1, args.steps // 8)
    columns = (
        TextColumn("[progress.description]{task.description}"), BarColumn(bar_width=20),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]}"), TextColumn("{task.fields[tps]} tok/s"),
        TextColumn("comm {task.fields[comm]}/step"), TimeElapsedColumn(),
    )
    first = 1  # the first step to run; after the checkpoint's step with --resume
    if args.resume:
        params, state, scale_state, first, data_seed = resume(args.resume, params, state, scale_state,
                                                              (losses, comm_per_step, evals), args.dtype)
        if first > args.steps:
            raise sa.ArgumentError(f"--resume {args.resume}: the checkpoint is at step {first - 1}, and --steps is "
                                   f"{args.steps}: nothing is left to run; pass --steps greater than {first - 1}")
        if data_seed != args.seed:  # the data stream is the saved one; the held-out set would be --seed's
            raise sa.ArgumentError(f"--resume {args.resume}: the run was saved with --seed {data_seed}, this one has "
                                   f"--seed {args.seed}; resume with --seed {data_seed}")
        if 0 < args.stop_at < first:
            raise sa.ArgumentError(f"--resume {args.resume}: the checkpoint is at step {first - 1}, and --stop-at "
                                   f"{args.stop_at} is not after it; pass --stop-at greater than {first - 1} (or 0)")
    else:
        evals.append((0, evaluate(params, cfg, mesh, eval_rng_seed, 64)))
    start = time.perf_counter()
    train_time = 0.0
    ran = 0  # steps run by this call (--stop-at ends early, --resume starts late)
    with Progress(*columns, console=console, transient=False, disable=args.quiet or not root) as bar:
        task = bar.add_task("training", total=args.steps, completed=first - 1, loss="-", tps="-", comm="-")
        for step in range(first, args.steps + 1):
            # each device makes only its block's rows (no process holds the global batch), the same bits
            # emulated and under MPI, whatever the mesh
            tokens, targets = sa.nn.data.pattern_arrays(mesh, data_seed, step, args.batch, cfg.seq_len, cfg.vocab)
            t0 = time.perf_counter()
            with sa.comm_log() as log:
                if graphed is not None:
                    loss, params, state = graphed(params, state, tokens, targets)
                elif scaler is None:
                    loss, grads = step_fn(params, tokens, targets, cfg)
                    params, state = opt.update(params, grads, state)
                else:  # float16: scaled loss, unscaled grads, a skipped step on overflow
                    scaled = scaler.value_and_grad(sa.nn.transformer_loss)
                    loss, grads = scaled(scale_state, params, tokens, targets, cfg)
                    params, state, scale_state = scaler.apply(opt, params, grads, state, scale_state)
                loss_value = float(loss)
            dt = time.perf_counter() - t0
            train_time += dt
            ran += 1
            if not math.isfinite(loss_value):
                raise FloatingPointError(f"the loss became {loss_value} at step {step}; lower --lr")
            losses.append(loss_value)
            step_bytes = log.total("bytes")
            if graphed is not None:  # a replayed graph logs no collectives: the captured step's traffic stands in
                graph_comm = step_bytes = max(graph_comm, step_bytes)
            comm_per_step.append(step_bytes)
            if step % eval_every == 0 or step == args.steps:
                evals.append((step, evaluate(params, cfg, mesh, eval_rng_seed, 64)))
            bar.update(task, advance=1, loss=f"{np.mean(losses[-20:]):.3f}",
                       tps=f"{tokens_per_step / dt:,.0f}", comm=_fmt_bytes(comm_per_step[-1]))
            if args.save and (step % args.save_every == 0 or step in (args.steps, args.stop_at)):
                save_checkpoint(args.save, args.keep, step, params, state, scale_state, data_seed,
                                (losses, comm_per_step, evals), args.dtype)
            if step == args.stop_at:
                break
    accuracy = evaluate(params, cfg, mesh, eval_rng_seed + 1, args.eval_batch)
    metrics = {
        "mesh": mesh.shape, "strategy": args.strategy, "backend": args.backend, "comm": mesh.comm_kind,
        "params": sa.nn.param_count(cfg),
        "steps": args.steps, "first_loss": losses[0], "final_loss": float(np.mean(losses[-20:])),
        "held_out_accuracy": accuracy, "chance": chance,
        "steps_run": ran, "tokens_per_s": tokens_per_step * ran / train_time, "wall_s": time.perf_counter() - start,
        "comm_bytes_per_step_per_device": float(np.mean(comm_per_step)), "evals": evals,
        "dtype": args.dtype, "losses": losses,
        "skipped_steps": scale_state["skipped"] if scale_state else 0,
        "blas_threads": None if sa.threads.last_setting() is None else vars(sa.threads.last_setting()),
    }
    console.print(
        f"loss {metrics['first_loss']:.3f} -> {metrics['final_loss']:.3f}; held-out next-token accuracy "
        f"[bold]{accuracy:.1%}[/] (chance {chance:.1%}, best possible about 90%); "
        f"{metrics['tokens_per_s']:,.0f} tokens/s; {_fmt_bytes(metrics['comm_bytes_per_step_per_device'])} "
        f"communicated per device and step; {metrics['wall_s']:.0f} s"
    )
    if args.plot and root:
        title = f"{args.strategy} on {mesh.shape}: {sa.nn.param_count(cfg):,} params, held-out accuracy {accuracy:.1%}"
        save_plot(args.plot, losses, evals, title, chance)
        console.print(f"loss curve saved to {args.plot}")
    if args.json and root:
        Path(args.json).write_text(json.dumps(metrics, indent=2))
    return metrics


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    try:
        return train(args)
    except (sa.ShardArrayError, ImportError, FloatingPointError) as e:  # a mesh the strategy cannot use, no CuPy
        raise SystemExit(f"error: {e}") from None


if __name__ == "__main__":
    main()
