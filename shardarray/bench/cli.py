"""The ``shardarray-bench`` command line (also ``python -m shardarray.bench``).

shardarray-bench matmul --backend meta --devices 64 --batch 16 --seq 512 --hidden 3072
shardarray-bench matmul --backend numpy --mesh dep=2,row=2,col=2 --m 1024 --k 1024 --n 1024
shardarray-bench matmul --backend cupy --devices 4 --m 8192 --k 8192 --n 8192 --dtype float16 --json out.json
shardarray-bench plan --mesh rows=16,cols=32 --d-ff 262144 --heads 256 --d-kv 256 --batch 256 --memory 16GiB
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from pathlib import Path
from typing import Any

from ..errors import ShardArrayError
from ..hardware import PROFILES, get_profile
from . import matmul as bench_matmul
from . import plan as bench_plan
from .args import FLOAT_DTYPES, check_output, int_at_least, mesh_shape
from .device import device_name
from .report import plot, table
from .workload import ALGORITHMS, Problem, algorithm_of, meshes

#: the shapes of the meshes ``workload.meshes`` enumerates, in words
MESH_RULE = {"summa": "row = col", "tesseract": "row = col and dep ≤ row"}


def parse_algorithms(text: str) -> list[str]:
    names = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in names if a not in ALGORITHMS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"--algorithms takes a comma list of {ALGORITHMS}; got {text!r}")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shardarray-bench", description="Benchmarks of shardarray.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "matmul",
        help="distributed matmul algorithms (Megatron 1-D, SUMMA, Tesseract), forward and backward",
        description="Run Megatron (allreduce), SUMMA and Tesseract on every legal mesh of --devices devices (or "
        "on --mesh), forward and backward; report communication, flops and memory per device, measured time "
        "(numpy/cupy) and an alpha-beta model's time on --hardware. Mesh axes are listed major to minor: the "
        "last one varies fastest over GPU ids and stays inside a node.",
    )
    p.add_argument(
        "--backend",
        choices=("numpy", "cupy", "meta"),
        default="meta",
        help="where shards live (meta: shapes only, no time measured; default)",
    )
    p.add_argument(
        "--algorithms",
        type=parse_algorithms,
        default=list(ALGORITHMS),
        help="comma list of megatron,summa,tesseract (default all)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--devices", type=int_at_least(1), default=None, help="enumerate every legal mesh of P devices (default 4)"
    )
    where.add_argument(
        "--mesh", type=mesh_shape, default=None, help="one mesh: model=P, row=q,col=q or dep=d,row=q,col=q"
    )
    for name in ("m", "k", "n"):
        p.add_argument(
            f"--{name}", type=int_at_least(1), default=None, help=f"matmul size {name} (Y[m,n] = X[m,k]·W[k,n])"
        )
    p.add_argument("--batch", type=int_at_least(1), default=None, help="MLP block: batch size")
    p.add_argument("--seq", type=int_at_least(1), default=None, help="MLP block: sequence length")
    p.add_argument("--hidden", type=int_at_least(1), default=None, help="MLP block: hidden size (d_ff = 4·hidden)")
    p.add_argument(
        "--dtype",
        default="float32",
        choices=FLOAT_DTYPES,
        help="operand dtype; bfloat16 contracts in float32 on NumPy (rounded once), on tensor cores on GPUs",
    )
    p.add_argument(
        "--hardware",
        default="a100",
        choices=sorted(PROFILES),
        help="profile for modeled_time_s (default a100: the Tesseract paper's 4-GPU nodes)",
    )
    p.add_argument("--repeat", type=int_at_least(1), default=3, help="timed runs per row (median), after one warm-up")
    p.add_argument("--no-single", action="store_true", help="skip the single-device xp.matmul reference")
    p.add_argument("--json", default="", help="write the results to this JSON file")
    p.add_argument("--plot", default="", help="write a PNG bar chart of the times to this file")
    p.add_argument("--quiet", action="store_true", help="no table or progress bar")
    p.set_defaults(subparser=p)
    bench_plan.add_parser(sub)
    return parser


def problem_of(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Problem:
    mm = [args.m, args.k, args.n]
    mlp = [args.batch, args.seq, args.hidden]
    if any(v is not None for v in mm) and any(v is not None for v in mlp):
        parser.error("give either --m --k --n (one matmul) or --batch --seq --hidden (an MLP block), not both")
    if any(v is not None for v in mlp):
        if None in mlp:
            parser.error("the MLP block needs all of --batch, --seq and --hidden")
        return Problem("mlp", {"batch": args.batch, "seq": args.seq, "hidden": args.hidden}, args.dtype)
    m, k, n = (v if v is not None else 1024 for v in mm)
    return Problem("matmul", {"m": m, "k": k, "n": n}, args.dtype)


def sweep(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[tuple[str, dict[str, int]]]:
    if args.mesh is not None:
        try:
            algorithm = algorithm_of(args.mesh)
        except ValueError as e:
            parser.error(str(e))
        if algorithm not in args.algorithms:
            parser.error(f"--mesh {args.mesh} is a {algorithm} mesh, but --algorithms is {args.algorithms}")
        if args.mesh not in meshes(algorithm, math.prod(args.mesh.values())):
            parser.error(f"--mesh {args.mesh} is no {algorithm} mesh: it needs {MESH_RULE[algorithm]}")
        return [(algorithm, args.mesh)]
    devices = args.devices if args.devices is not None else 4
    if devices < 1:
        parser.error(f"--devices must be >= 1; got {devices}")
    plan = [(a, shape) for a in args.algorithms for shape in meshes(a, devices)]
    if not plan:
        parser.error(f"no mesh of {devices} devices fits {args.algorithms} (summa needs q², tesseract q²·d with d ≤ q)")
    return plan


def cmd_matmul(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    problem = problem_of(args, parser)
    plan = sweep(args, parser)
    device = device_name(args.backend)  # --backend cupy without CuPy fails here, before any work
    hw = get_profile(args.hardware)
    if args.quiet:
        out = bench_matmul.run(problem, plan, args.backend, hw, args.repeat, baseline=not args.no_single)
    else:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("matmul", total=len(plan))
            out = bench_matmul.run(
                problem,
                plan,
                args.backend,
                hw,
                args.repeat,
                progress=lambda i, label: bar.update(task, description=label, completed=i),
                baseline=not args.no_single,
            )
    result = {
        "benchmark": "matmul",
        "problem": {"kind": problem.kind, **problem.sizes, "dtype": problem.dtype, "what": problem.describe()},
        "backend": args.backend,
        "device": device,
        "hardware": {"name": hw.name, "description": hw.description},
        "python": platform.python_version(),
        **out,
    }
    if not args.quiet:
        table(result)
    if args.plot:
        plot(result, args.plot)
    return result


def write_json(result: dict[str, Any], path: str) -> None:
    if path:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(result, indent=1))
        except OSError as e:
            raise OSError(f"cannot write --json {path!r}: {e.strerror or e}") from None


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse ``--json``, ``--plot`` and ``--rules-out`` paths that cannot be written before the benchmark runs."""
    check_output("--json", args.json)
    check_output("--plot", args.plot, image=True)
    check_output("--rules-out", getattr(args, "rules_out", ""))


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Run one ``shardarray-bench`` command line; returns its result dict (also written with ``--json``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    check_outputs(args)
    command = {"matmul": cmd_matmul, "plan": bench_plan.cmd_plan}[args.command]  # argparse refuses others
    result = command(args, args.subparser)  # its errors name the subcommand: "shardarray-bench matmul: error"
    write_json(result, args.json)
    return result


def main(argv: list[str] | None = None) -> int:
    """The ``shardarray-bench`` console script: exit status 0 on success.

    Bad arguments exit with argparse's status 2; a missing extra (CuPy for
    ``--backend cupy``, matplotlib for ``--plot``), a shardarray error or a
    file that cannot be written print one line and exit with status 1.
    """
    try:
        run(sys.argv[1:] if argv is None else argv)
    except (ImportError, ShardArrayError, OSError) as e:
        print(f"shardarray-bench: error: {e}", file=sys.stderr)
        return 1
    return 0
