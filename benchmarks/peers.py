"""The same workloads on NumPy, shardarray (emulated 2x2 and ``mpiexec -n 2``), Dask array, Heat and JAX, interleaved.

Frameworks (each in its own process, or MPI job, started once and kept for the run):

- ``numpy``: one process, NumPy on the whole array (the reference of every ratio);
- ``shardarray-2x2``: one process, ``sa.Mesh({"row": 2, "col": 2})`` emulated, positional
  ``shardarray.array_api`` arrays (axis k split over mesh axis k; tsqr's rows over both axes);
- ``shardarray-mpi``: ``mpiexec -n 2``, ``sa.Mesh({"row": 2}, comm="mpi")``, positional arrays;
- ``dask``: one process, Dask array, threaded scheduler with 2 workers, chunks of half the data (axis 0);
- ``heat``: ``mpiexec -n 2``, Heat arrays with ``split=0`` (torch threads = cores / processes);
- ``jax``: one process, 4 host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=4``), arrays
  sharded along axis 0 with ``jax.sharding`` over the 4 devices, float64 on, workloads jitted.

Workloads (``benchmarks/peers_workloads.py``; sizes are the issue's, ``--quick`` shrinks them,
``--size fft2.n=2048`` overrides one): the 2-D FFT (4096² complex64), the transpose copy (4096² float64,
materialized with the rows split as the input's), tall-skinny QR (2^20 x 32 float64), matmul (4096² and
2048² float64), sort (2^22 float32), unique (2^22 int32 of 2^20 distinct), a k-means step (10^6 x 16,
k = 8), a fused elementwise + reduction (``sum(exp(x) * y + 1)``, 2^24 float64), slicing (``x[1:-1, ::2]``
of 4096² float64, materialized) and a chain of 100 small ops on a 64-element array (reported as µs per op).

How it is timed: the driver starts every framework's worker (``--serve``), then per workload asks each
to build its data and run the workload once (the warm-up, not timed), then runs rounds A B C ... A B C
...: in each round every framework times one call of the workload in turn (inside the worker: no
start-up, no data generation; under MPI after a barrier, the slowest process's time). Every worker runs
with ``OPENBLAS_THREAD_TIMEOUT=20`` (unless set): by default an idle OpenBLAS thread spins for 2^28 cycles
after a call, about 0.1 s, so the framework timed next lost a core to the one timed before it. (A pause
between calls instead would leave the machine idle, and on this VM the first call after idle time runs
up to 1.5x slower: freed memory is handed back to the host and faults again when touched.) Reported: the
median of ``--rounds`` (default 5) per framework and its ratio to NumPy's median, with every round's
time, each worker's thread settings, and the machine's cores, threads and load before and after
(``_env.environment()``). A framework that is not installed is reported as such; a workload a framework
lacks (Dask has no sort) as "not supported"; a failure as its error, and the run goes on.

Install the peers (Heat pulls in PyTorch, about 2.5 GB with its CUDA wheels; mpi4py and the mpich wheel
come with shardarray's ``mpi`` extra):

    pip install "dask[array]" heat jax mpi4py

Run it (the whole run took 14 minutes on 2 shared cores; ``--quick`` about 2; a warm-up over ``--slow``
seconds gets one timed round, a build + warm-up over ``--setup-timeout`` is reported as timed out):

    python benchmarks/peers.py [--rounds 5] [--frameworks numpy dask ...] [--workloads fft2 sort ...]
                               [--quick] [--size sort.n=16777216]
                               [--json benchmarks/results/peers.json --force --md benchmarks/results/peers.md]
    python benchmarks/peers.py --md-from benchmarks/results/peers.json --md PATH   # the table again
    python benchmarks/peers.py --worker shardarray-2x2 --workload fft2 --rounds 3     # one framework alone
    mpiexec -n 2 python benchmarks/peers.py --worker shardarray-mpi --workload fft2 --rounds 3
    python benchmarks/peers.py --worker shardarray-2x2 --workload sort --profile /tmp/prof   # cProfile
    python benchmarks/peers.py --worker dask --workloads fft2 tsqr --quick --rounds 0 --check  # vs NumPy
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import queue
import shlex
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

try:  # run as a script (benchmarks/ on sys.path) or imported as benchmarks.peers
    from _env import default_output, environment, output_path
    from peers_workloads import DESCRIPTION, QUICK, SIZES, Worker
except ImportError:  # pragma: no cover
    from benchmarks._env import default_output, environment, output_path
    from benchmarks.peers_workloads import DESCRIPTION, QUICK, SIZES, Worker

HERE = Path(__file__).resolve().parent
PREFIX = "@@peers "
# framework -> (MPI processes or 0, modules it needs)
FRAMEWORKS: dict[str, tuple[int, tuple[str, ...]]] = {
    "numpy": (0, ("numpy",)),
    "shardarray-2x2": (0, ("shardarray",)),
    "shardarray-mpi": (2, ("shardarray", "mpi4py")),
    "dask": (0, ("dask", "dask.array")),
    "heat": (2, ("heat", "torch", "mpi4py")),
    "jax": (0, ("jax",)),
}
WORKLOADS = list(SIZES)


def missing_modules(framework: str) -> list[str]:
    out = []
    for mod in FRAMEWORKS[framework][1]:
        try:
            if importlib.util.find_spec(mod) is None:
                out.append(mod)
        except (ImportError, ValueError):
            out.append(mod)
    return out


def sizes_for(workload: str, quick: bool, overrides: dict[str, dict[str, int]]) -> dict[str, int]:
    return {**(QUICK if quick else SIZES)[workload], **overrides.get(workload, {})}


def parse_overrides(items: list[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for item in items:
        key, _, value = item.partition("=")
        workload, _, name = key.partition(".")
        out.setdefault(workload, {})[name] = int(value)
    return out


OPENBLAS_THREAD_TIMEOUT = 20  # every worker's, unless set: see ``worker_command``


def worker_command(framework: str) -> tuple[list[str], dict[str, str]]:
    procs = FRAMEWORKS[framework][0]
    cmd = [sys.executable, str(HERE / "peers.py"), "--serve", framework]
    if procs:
        mpiexec = Path(sys.executable).with_name("mpiexec")
        cmd = [str(mpiexec) if mpiexec.exists() else "mpiexec", "-n", str(procs), *cmd]
    env = dict(os.environ)
    # OpenBLAS keeps an idle thread spinning for 2^28 cycles (about 0.1 s) after each call: the framework timed
    # next then ran on one core of two (the -n 2 matmul 2048 took 0.16 s right after another framework's
    # matmul, 0.117 s alone). 2^20 cycles (about 0.4 ms) still spans back-to-back calls inside one framework.
    env.setdefault("OPENBLAS_THREAD_TIMEOUT", str(OPENBLAS_THREAD_TIMEOUT))
    if framework == "jax":
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    return cmd, env


# ---------------------------------------------------------------------------------------- worker side
def serve(framework: str) -> None:
    """Answer the driver's commands, one JSON line each, on stdin (rank 0; MPI ranks get them from rank 0)."""
    mpi = FRAMEWORKS[framework][0] > 0
    worker = Worker(framework, mpi)
    comm = worker.comm

    def reply(msg: dict[str, Any]) -> None:
        if worker.rank == 0:
            print(PREFIX + json.dumps(msg), flush=True)

    def next_command() -> dict[str, Any]:
        if worker.rank == 0:
            line = sys.stdin.readline()
            msg = json.loads(line) if line.strip() else {"cmd": "quit"}
            if comm is not None:
                for r in range(1, comm.Get_size()):
                    comm.send(msg, dest=r, tag=7)
            return msg
        req = comm.irecv(source=0, tag=7)
        while True:  # poll with sleeps: a blocking MPI receive spins a core while the other frameworks run
            done, msg = req.test()
            if done:
                return msg
            time.sleep(0.02)

    reply({"ready": True, "info": worker.info()})
    while True:
        msg = next_command()
        try:
            if msg["cmd"] == "quit":
                reply({"bye": True})
                return
            if msg["cmd"] == "setup":
                reply({"ok": True, **worker.setup(msg["workload"], msg["sizes"]), "info": worker.info()})
            elif msg["cmd"] == "run":
                reply({"ok": True, "seconds": worker.run()})
        except NotImplementedError as e:
            worker.fn = None
            reply({"ok": False, "status": "not supported", "error": str(e)})
        except Exception as e:
            worker.fn = None
            reply({"ok": False, "status": "error", "error": f"{type(e).__name__}: {e}"[:500]})


def standalone(args: argparse.Namespace) -> None:
    """``--worker FW --workload W``: build, warm up and time ``--rounds`` calls in this process (or MPI job)."""
    framework = args.worker
    if framework == "jax":
        os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    worker = Worker(framework, FRAMEWORKS[framework][0] > 0)
    overrides = parse_overrides(args.size)
    for workload in args.workloads or [args.workload]:
        sizes = sizes_for(workload, args.quick, overrides)
        try:
            setup = worker.setup(workload, sizes)
        except Exception as e:
            if worker.rank == 0:
                print(json.dumps({"framework": framework, "workload": workload, "error": f"{type(e).__name__}: {e}"}))
            continue
        prof = None
        if args.profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        if args.check:
            from peers_workloads import check

            assert worker.fn is not None
            verdict = check(workload, sizes, worker.fn())
            if worker.rank == 0:
                print(f"check {framework} {workload}: {verdict}", flush=True)
        times = [worker.run() for _ in range(args.rounds)]
        if prof is not None:
            prof.disable()
            out = Path(args.profile)
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"{framework}-{workload}-rank{worker.rank}.prof"
            prof.dump_stats(str(path))
            if worker.rank == 0:
                import pstats

                pstats.Stats(str(path)).sort_stats("tottime").print_stats(args.top)
        if worker.rank == 0:
            print(
                json.dumps(
                    {
                        "framework": framework,
                        "workload": workload,
                        "sizes": sizes,
                        **setup,
                        "seconds": times,
                        "median": statistics.median(times) if times else None,
                    }
                ),
                flush=True,
            )


# ---------------------------------------------------------------------------------------- driver side
class Client:
    """A worker process seen from the driver: JSON lines in, ``PREFIX`` lines out (others are its chatter)."""

    def __init__(self, framework: str, log_dir: Path) -> None:
        self.framework = framework
        cmd, env = worker_command(framework)
        self.log = open(log_dir / f"{framework}.log", "w")
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            bufsize=1,
            env=env,
            cwd=HERE.parent,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.command = shlex.join(cmd)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(PREFIX):
                self.lines.put(line[len(PREFIX) :])
            else:
                self.log.write(line)
        self.lines.put(None)

    def receive(self, timeout: float) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"{self.framework}: no answer in {timeout:.0f} s") from None
        if line is None:
            raise RuntimeError(f"{self.framework}: worker exited (rc {self.proc.wait()}); see its log")
        return json.loads(line)

    def call(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        return self.receive(timeout)

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.call({"cmd": "quit"}, 30)
                self.proc.wait(30)
        except (TimeoutError, RuntimeError, OSError, subprocess.TimeoutExpired):
            pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)  # our own worker's process group (start_new_session)
            self.proc.wait()
        self.log.close()


def fmt_seconds(s: float) -> str:
    return f"{s:.4f}" if s < 1 else f"{s:.3f}"


def drive(args: argparse.Namespace) -> None:
    overrides = parse_overrides(args.size)
    log_dir = Path(args.logs)
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path = output_path(args.json, args.force) if args.json else None
    env_before = environment()
    started = time.time()
    clients: dict[str, Client | None] = {}
    frameworks: dict[str, dict[str, Any]] = {}
    for fw in args.frameworks:
        miss = missing_modules(fw)
        if miss:
            frameworks[fw] = {"status": "not installed", "missing": miss}
            clients[fw] = None
            continue
        frameworks[fw] = {"status": "started"}
    results: list[dict[str, Any]] = []

    def start(fw: str) -> None:
        try:
            c = Client(fw, log_dir)
            hello = c.receive(args.start_timeout)
            clients[fw] = c
            frameworks[fw].update(status="ok", command=c.command, info=hello.get("info"))
        except (TimeoutError, RuntimeError) as e:
            clients[fw] = None
            frameworks[fw].update(status="failed to start", error=str(e))
            print(f"  {fw}: {e}", flush=True)

    for fw in args.frameworks:
        if frameworks[fw]["status"] == "started":
            start(fw)

    for workload in args.workloads:
        sizes = sizes_for(workload, args.quick, overrides)
        print(f"== {workload} {sizes}", flush=True)
        rows: dict[str, dict[str, Any]] = {}
        active: list[str] = []
        for fw in args.frameworks:
            row: dict[str, Any] = {"workload": workload, "framework": fw, "sizes": sizes, "seconds": []}
            rows[fw] = row
            if frameworks[fw]["status"] == "not installed":
                row["status"] = "not installed"
                continue
            if clients.get(fw) is None and frameworks[fw]["status"] != "not installed":
                start(fw)  # restart one that died on an earlier workload
            c = clients.get(fw)
            if c is None:
                row["status"] = frameworks[fw]["status"]
                continue
            try:
                ans = c.call({"cmd": "setup", "workload": workload, "sizes": sizes}, args.setup_timeout)
            except (TimeoutError, RuntimeError) as e:
                row.update(status="timed out" if isinstance(e, TimeoutError) else "error", error=str(e))
                c.close()
                clients[fw] = None
                continue
            if not ans.get("ok"):
                row.update(status=ans.get("status", "error"), error=ans.get("error"))
                continue
            row.update(status="ok", build_seconds=ans["build_seconds"], warmup_seconds=ans["warmup_seconds"])
            if ans["warmup_seconds"] > args.slow:
                row["note"] = f"slow (warm-up {ans['warmup_seconds']:.1f} s > --slow {args.slow:g} s): one timed round"
            active.append(fw)
        for r in range(args.rounds):
            for fw in list(active):
                if r > 0 and "note" in rows[fw]:
                    continue
                c = clients[fw]
                assert c is not None
                try:
                    ans = c.call({"cmd": "run"}, args.run_timeout)
                except (TimeoutError, RuntimeError) as e:
                    rows[fw].update(status="error", error=f"round {r}: {e}")
                    active.remove(fw)
                    c.close()
                    clients[fw] = None
                    continue
                if not ans.get("ok"):
                    rows[fw].update(status="error", error=ans.get("error"))
                    active.remove(fw)
                    continue
                rows[fw]["seconds"].append(ans["seconds"])
        ref = rows.get("numpy", {})
        ref_median = statistics.median(ref["seconds"]) if ref.get("status") == "ok" and ref["seconds"] else None
        for fw in args.frameworks:
            row = rows[fw]
            if row.get("status") == "ok" and row["seconds"]:
                row["median"] = statistics.median(row["seconds"])
                row["ratio_to_numpy"] = row["median"] / ref_median if ref_median else None
                if workload == "smallops":
                    row["us_per_op"] = row["median"] / (sizes["ops"] * sizes["chains"]) * 1e6
                extra = f" {row['us_per_op']:.1f} us/op" if "us_per_op" in row else ""
                ratio = f" {row['ratio_to_numpy']:.2f}x" if row.get("ratio_to_numpy") else ""
                print(f"  {fw:16} {fmt_seconds(row['median'])} s{ratio}{extra}", flush=True)
            else:
                print(f"  {fw:16} {row.get('status')}: {row.get('error', '')}"[:200], flush=True)
            results.append(row)
        if out_path is not None:  # partial results survive a crash
            write_json(out_path, args, env_before, None, started, frameworks, results)

    for c in clients.values():
        if c is not None:
            c.close()
    env_after = environment()
    if out_path is not None:
        write_json(out_path, args, env_before, env_after, started, frameworks, results)
        print(f"wrote {out_path}")
    if args.md:
        Path(args.md).write_text(markdown(args, env_before, env_after, frameworks, results))
        print(f"wrote {args.md}")


def write_json(
    path: Path,
    args: argparse.Namespace,
    before: dict[str, Any],
    after: dict[str, Any] | None,
    started: float,
    frameworks: dict[str, Any],
    results: list[dict[str, Any]],
) -> None:
    out = {
        "benchmark": "peers",
        "command": shlex.join([sys.executable, *sys.argv]),
        "rounds": args.rounds,
        "quick": args.quick,
        "wall_seconds": time.time() - started,
        "workloads": {w: {"description": DESCRIPTION[w]} for w in args.workloads},
        "note": (
            "rounds interleave the frameworks (A B C ... A B C ...), each timing one call inside its own "
            "process after a warm-up call; MPI times are the slowest process's; ratio = median / NumPy's "
            "median; the machine may be shared (see environment.before/after load)"
        ),
        "environment": {"before": before, "after": after},
        "frameworks": frameworks,
        "results": results,
    }
    path.write_text(json.dumps(out, indent=1))


def markdown(
    args: argparse.Namespace,
    before: dict[str, Any],
    after: dict[str, Any],
    frameworks: dict[str, Any],
    results: list[dict[str, Any]],
) -> str:
    fws = args.frameworks
    lines = [
        "# shardarray against its peers (`benchmarks/peers.py`)",
        "",
        f"Median of {args.rounds} interleaved rounds per cell, seconds, and (×) the ratio to one NumPy process; "
        f"{before['cores_available']} cores; load average before {before['loadavg'][0]:.2f}, "
        f"after {after['loadavg'][0]:.2f}. Sizes in `peers.json` (`results[].sizes`)"
        + (" — **quick sizes**, not the issue's." if args.quick else "."),
        "",
        "| workload | " + " | ".join(fws) + " |",
        "|---|" + "---|" * len(fws),
    ]
    for w in args.workloads:
        cells = []
        for fw in fws:
            row = next((r for r in results if r["workload"] == w and r["framework"] == fw), None)
            if row is None:
                cells.append("")
            elif row.get("status") == "ok" and "median" in row:
                ratio = f" ({row['ratio_to_numpy']:.2f}×)" if row.get("ratio_to_numpy") else ""
                if "us_per_op" in row:
                    cells.append(f"{row['us_per_op']:.1f} µs/op{ratio}")
                else:
                    cells.append(f"{fmt_seconds(row['median'])}{ratio}" + (" †" if "note" in row else ""))
            else:
                cells.append(str(row.get("status")))
        size = ", ".join(f"{k}={v}" for k, v in (next(r for r in results if r["workload"] == w)["sizes"]).items())
        lines.append(f"| {w} ({size}) | " + " | ".join(cells) + " |")
    lines += ["", "† slower than `--slow`: one timed round after the warm-up, not the median of all rounds."]
    lines += ["", "Workloads:", ""]
    lines += [f"- **{w}**: {DESCRIPTION[w]}" for w in args.workloads]
    lines += ["", "Frameworks:", ""]
    for fw in fws:
        info = frameworks[fw]
        detail = {k: v for k, v in (info.get("info") or {}).items() if k not in ("pid", "threadpools")}
        pools = (info.get("info") or {}).get("threadpools") or []
        if pools:
            detail["threadpools"] = {p["internal_api"]: p["num_threads"] for p in pools}
        lines.append(f"- **{fw}**: {info.get('status')} {json.dumps(detail) if detail else info.get('error', '')}")
    lines += ["", "Errors:", ""]
    errs = [r for r in results if r.get("status") not in ("ok", "not installed")]
    lines += [f"- {r['workload']} / {r['framework']}: {r.get('status')}: {r.get('error')}" for r in errs] or ["- none"]
    return "\n".join(lines) + "\n"


def table_from_json(src: Path, dst: Path) -> None:
    """The Markdown table of a (possibly partial) results JSON."""
    data = json.loads(src.read_text())
    workloads = list(dict.fromkeys(r["workload"] for r in data["results"]))
    frameworks = list(data["frameworks"])
    ns = argparse.Namespace(
        frameworks=frameworks, workloads=workloads, rounds=data["rounds"], quick=data.get("quick", False)
    )
    env = data["environment"]
    dst.write_text(markdown(ns, env["before"], env["after"] or env["before"], data["frameworks"], data["results"]))
    print(f"wrote {dst}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frameworks", nargs="*", default=list(FRAMEWORKS), choices=list(FRAMEWORKS))
    ap.add_argument("--workloads", nargs="*", default=None, choices=WORKLOADS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run of a minute or two)")
    ap.add_argument("--size", action="append", default=[], metavar="WORKLOAD.KEY=N", help="override one size")
    ap.add_argument("--json", default=None, help="results JSON (default /tmp/shardarray-bench/peers.json)")
    ap.add_argument("--force", action="store_true", help="overwrite a committed result")
    ap.add_argument("--md", default=None, help="also write the table as Markdown here")
    ap.add_argument("--logs", default="/tmp/shardarray-bench/peers-logs", help="each worker's stderr")
    ap.add_argument("--start-timeout", type=float, default=180)
    ap.add_argument("--setup-timeout", type=float, default=90, help="build + warm-up; past it: timed out")
    ap.add_argument("--slow", type=float, default=10, help="a warm-up longer than this gets one timed round")
    ap.add_argument("--run-timeout", type=float, default=300)
    ap.add_argument("--serve", choices=list(FRAMEWORKS), help=argparse.SUPPRESS)
    ap.add_argument("--worker", choices=list(FRAMEWORKS), help="time one framework in this process / MPI job")
    ap.add_argument("--workload", choices=WORKLOADS, default="fft2", help="with --worker")
    ap.add_argument("--profile", default=None, metavar="DIR", help="with --worker: cProfile the timed calls")
    ap.add_argument("--check", action="store_true", help="with --worker: compare the result with NumPy's")
    ap.add_argument("--top", type=int, default=25, help="with --profile: functions printed")
    ap.add_argument("--md-from", default=None, metavar="JSON", help="only write --md's table from a results JSON")
    args = ap.parse_args()
    if args.md_from:
        table_from_json(Path(args.md_from), Path(args.md or Path(args.md_from).with_suffix(".md")))
    elif args.serve:
        serve(args.serve)
    elif args.worker:
        standalone(args)
    else:
        args.workloads = args.workloads or WORKLOADS
        if args.json is None:
            args.json = default_output("peers")
        drive(args)


if __name__ == "__main__":
    main()
