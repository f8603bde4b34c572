"""How long ``sa.plan.search_layouts`` takes on the planner's three goal cases, before and after its speed-ups.

Cases (a100 profile, float32, 16 GiB per device, top 5):

* ``small_2x4``: the README's small transformer (vocab 512, d_model 64, 8 heads × 16,
  d_ff 256, 2 layers, seq 32), batch 16, on ``{"rows": 2, "cols": 4}``;
* ``0.14B_2x4``: the README's search-results model (16 GiB), batch 32, on ``{"rows": 2, "cols": 4}``
  (not one of the goal cases; it is the slowest case the tests record);
* ``0.14B_2x2x2``: the same model and batch on ``{"a": 2, "b": 2, "c": 2}`` (issue 31's case);
* ``meshtf_6layer_2x2x2``: the Mesh-TF bench model (vocab 32768, d_model 1024, 16 heads × 64,
  d_ff 4096, 6 layers, seq 256), batch 64, on ``{"x": 2, "y": 2, "z": 2}``;
* ``4.9B_8x8x8``: Mesh-TF's 4.9B model (d_ff 262144, 256 heads × 256, 6 layers), batch 256,
  on ``{"x": 8, "y": 8, "z": 8}``.

Each case runs in the modes ``before`` (the proxy order, full traces only, no op memo),
``no_memo`` (the seeds first and the one-layer lower-bound trace: the search of the first round),
``no_affine`` (the same with the per-op memo, ``sa.plan.memo``: the search before issue 31), ``after``
(the same with the affine rule in the layer count: a trace per rule set), ``no_floor`` (the same cuts,
every rule set priced from the step's op graph, ``sa.plan.graph``: recorded once per path through the
Python), ``graph`` (the default search: ``no_floor`` with the compute floor, ``sa.plan.floor``, and a deep
model's paths built from its five-layer twin's, ``sa.plan.deep``; the default pair is no_floor, graph) and
``no_deep`` (``graph`` with every path traced, for the layer series) and ``no_defer`` (``graph`` pricing every rule
set that survives the affine rule exactly at once, not only those that can make the top k:
``search_graphed.Deferred``) and
``no_comm`` (``graph`` with the compute floor only: without the floors under the memory-bound and comm times that
``sa.plan.floor`` adds, ``ComputeFloor.memory`` and ``CommFloor``),
interleaved A B A B over ``--repeat`` rounds (each round runs every case, layer count and mode once, so a drift
in the machine's load hits them alike).
A search that passes ``--budget`` seconds is stopped; its row
gives the rule sets it got through and the wall time projected from that rate (the later rule
sets of the proxy order stop sooner, so the projection is an upper estimate). The best layouts of
the two modes are compared where both finish (layouts and peak memory exactly, step times to 1e-12).

    python benchmarks/planner.py [--cases small_2x4,...] [--modes no_memo,after] [--budget 120]
                                 [--repeat 1] [--layers 1,6,24] [--json PATH] [--force]

JSON (default /tmp/shardarray-bench/planner.json) has the machine's cores, thread settings and
load before and after, and each search's wall and CPU seconds (the CPU time is less disturbed by other tenants
of a shared machine); the medians of each case and mode are printed at the end.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import shardarray as sa

try:
    from _env import default_output, environment, output_path
except ImportError:  # imported as benchmarks.planner
    from benchmarks._env import default_output, environment, output_path

GiB = 2**30
_MODEL = {"vocab": 32768, "d_model": 1024, "n_layers": 6, "seq_len": 256}
CASES = {
    "small_2x4": (
        {"vocab": 512, "d_model": 64, "heads": 8, "d_kv": 16, "d_ff": 256, "n_layers": 2, "seq_len": 32},
        16,
        {"rows": 2, "cols": 4},
    ),
    "0.14B_2x4": ({**_MODEL, "heads": 4, "d_kv": 256, "d_ff": 4096}, 32, {"rows": 2, "cols": 4}),
    "0.14B_2x2x2": ({**_MODEL, "heads": 4, "d_kv": 256, "d_ff": 4096}, 32, {"a": 2, "b": 2, "c": 2}),
    "meshtf_6layer_2x2x2": ({**_MODEL, "heads": 16, "d_kv": 64, "d_ff": 4096}, 64, {"x": 2, "y": 2, "z": 2}),
    "4.9B_8x8x8": ({**_MODEL, "heads": 256, "d_kv": 256, "d_ff": 262144}, 256, {"x": 8, "y": 8, "z": 8}),
}
MODES = {
    "before": {"seeds_first": False, "lower_bound": False, "memo": False, "graph": False},
    "no_memo": {"seeds_first": True, "lower_bound": True, "memo": False, "graph": False},
    "no_affine": {"seeds_first": True, "lower_bound": True, "memo": True, "affine": False, "graph": False},
    "after": {"seeds_first": True, "lower_bound": True, "memo": True, "affine": True, "graph": False},
    "no_floor": {"seeds_first": True, "lower_bound": True, "memo": True, "affine": True, "graph": True, "floor": False},
    "graph": {"seeds_first": True, "lower_bound": True, "memo": True, "affine": True, "graph": True},
    "no_deep": {"seeds_first": True, "lower_bound": True, "memo": True, "affine": True, "graph": True, "deep": False},
    "no_defer": {"seeds_first": True, "lower_bound": True, "memo": True, "affine": True, "graph": True, "defer": False},
    "no_comm": {"seeds_first": True, "lower_bound": True, "memo": True, "affine": True, "graph": True, "comm": False},
}


class _Budget(Exception):
    """The search passed its time budget."""


def _switch(name: str) -> tuple[Any, str] | None:
    """Where a search switch lives: ``plan.ranking.NAME`` (this tree) or ``plan.search._NAME`` (the trees before
    the search was split in three); None in a tree from before the switch."""
    ranking = getattr(sa.plan, "ranking", None)
    if ranking is not None and hasattr(ranking, name):
        return ranking, name
    if hasattr(sa.plan.search, "_" + name):
        return sa.plan.search, "_" + name
    return None


def run_case(name: str, mode: str, budget: float, memory: float, top: int, layers: int | None = None) -> dict:
    """One search of case ``name`` in ``mode``, stopped after ``budget`` seconds (``layers``: override n_layers)."""
    cfg, batch, mesh = CASES[name]
    if layers is not None:
        cfg = {**cfg, "n_layers": layers}
    kwargs = dict(MODES[mode])
    affine = kwargs.pop("affine", False)
    floor = kwargs.pop("floor", True)
    deep_on = kwargs.pop("deep", True)
    defer = kwargs.pop("defer", True)
    comm = kwargs.pop("comm", True)
    if "graph" not in sa.plan.search_layouts.__code__.co_varnames:  # a tree from before the op graph
        kwargs.pop("graph")
    step = sa.plan.transformer_step(sa.nn.TransformerConfig(**cfg), batch)
    stats = sa.plan.SearchStats()
    done = [0, 0]
    t0, c0 = time.perf_counter(), time.process_time()

    def progress(n: int, total: int) -> None:
        done[:] = [n, total]
        if time.perf_counter() - t0 > budget:
            raise _Budget

    row = {
        "case": name,
        "mode": mode,
        "mesh": mesh,
        "config": cfg,
        "batch": batch,
        "budget_s": budget,
        "memory_limit_bytes": memory,
    }
    saved = []  # (module, name, value) of each switch set for this run, put back after
    for name, value in (("AFFINE_LAYERS", affine), ("COMPUTE_FLOOR", floor), ("COMM_FLOOR", comm), ("DEFER", defer)):
        place = _switch(name)
        if place is not None:
            saved.append((*place, getattr(*place)))
            setattr(*place, value)
    deep = getattr(sa.plan, "deep", None)  # None: a tree from before deep paths were built (plan.deep)
    saved_deep = None if deep is None else deep.DEEP
    if deep is not None and not deep_on:
        deep.DEEP = 10**9
    try:
        best = sa.plan.search_layouts(step, mesh, memory, top_k=top, stats=stats, progress=progress, **kwargs)
        row.update(
            finished=True,
            best=[
                {
                    "layout": p.describe(),
                    "step_time_s": p.step_time_s,
                    "memory_bytes_per_device": p.memory_bytes_per_device,
                }
                for p in best
            ],
        )
    except _Budget:
        row.update(finished=False)
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        if deep is not None:
            deep.DEEP = saved_deep
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0  # (less disturbed than the wall time by other tenants of a shared machine)
    row.update(seconds=seconds, cpu_seconds=cpu, rule_sets_done=done[0], legal=stats.legal, stats=stats.as_dict())
    if not row["finished"] and done[0]:
        row["projected_s"] = seconds * done[1] / done[0]
    return row


def _same_best(a: list[dict], b: list[dict]) -> bool:
    """The same layouts in the same order with the same peak memory, step times equal to 1e-12 (a scaled deep model's
    figures, ``sa.plan.repeat``, sum the same terms in another order than a walk of every layer: the last bits
    differ)."""
    return len(a) == len(b) and all(
        x["layout"] == y["layout"]
        and x["memory_bytes_per_device"] == y["memory_bytes_per_device"]
        and abs(x["step_time_s"] - y["step_time_s"]) <= 1e-12 * abs(y["step_time_s"])
        for x, y in zip(a, b)
    )


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--cases", default="small_2x4,meshtf_6layer_2x2x2,4.9B_8x8x8", help=f"comma-separated, of {', '.join(CASES)}"
    )
    ap.add_argument(
        "--modes",
        default="no_floor,graph",
        help="comma-separated, of before, no_memo, no_affine (memo), after (memo and the affine rule), "
        "no_floor (after, priced from op graphs), graph (no_floor with the compute floor), "
        "no_deep (graph, a deep model's paths traced, not built from a shallow twin's), "
        "no_defer (graph, every survivor of the affine rule priced exactly at once), "
        "no_comm (graph with the compute floor only, without the floors under the memory-bound and comm times)",
    )
    ap.add_argument("--layers", default="", help="comma-separated layer counts for each case (default: its own)")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds before a search is stopped (default 120)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds (default 1)")
    ap.add_argument("--memory", type=float, default=16 * GiB, help="bytes per device (default 16 GiB)")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--json", default=default_output("planner"))
    ap.add_argument("--force", action="store_true", help="overwrite a committed result under benchmarks/results/")
    args = ap.parse_args(argv)
    cases, modes = args.cases.split(","), args.modes.split(",")
    for c in cases:
        if c not in CASES:
            ap.error(f"--cases: unknown case {c!r}; pick from {', '.join(CASES)}")
    for m in modes:
        if m not in MODES:
            ap.error(f"--modes: unknown mode {m!r}; pick from {', '.join(MODES)}")
    out = output_path(args.json, args.force)
    result = {"environment": {"before": environment()}, "runs": []}
    counts = [int(n) for n in args.layers.split(",") if n] or [None]
    pairs = [(c, n) for c in cases for n in counts]
    for _ in range(args.repeat):  # each round runs every case, layer count and mode once: drift hits all alike
        for case, layers in pairs:
            label = case if layers is None else f"{case}@{layers}L"
            for mode in modes:  # A B A B
                row = run_case(case, mode, args.budget, args.memory, args.top, layers)
                row["label"] = label
                result["runs"].append(row)
                tail = "" if row["finished"] else f" (stopped; projected {row.get('projected_s', float('nan')):.0f} s)"
                st = row["stats"]
                walks = f"  {st.get('full_walks', 0)} exact walks, {st.get('full_traces', 0)} traces" if st else ""
                took = f"{row['seconds']:8.2f} s ({row['cpu_seconds']:.2f} s CPU)"
                print(
                    f"{label:<26}{mode:<10}{took}  {row['rule_sets_done']}/{row['legal']} rule sets{walks}{tail}",
                    flush=True,
                )
    for label in dict.fromkeys(r["label"] for r in result["runs"]):
        finished = [r for r in result["runs"] if r["label"] == label and r["finished"]]
        if len({m for m in (r["mode"] for r in finished)}) > 1:
            same = all(_same_best(r["best"], finished[0]["best"]) for r in finished)
            print(f"{label}: same best layouts in every mode: {same}")
            result.setdefault("same_best", {})[label] = same
    for label, mode in dict.fromkeys((r["label"], r["mode"]) for r in result["runs"]):
        rows = [r for r in result["runs"] if r["label"] == label and r["mode"] == mode]
        wall, cpu = (sorted(r[k] for r in rows)[len(rows) // 2] for k in ("seconds", "cpu_seconds"))
        print(f"median of {len(rows)}: {label:<26}{mode:<10}{wall:8.2f} s wall, {cpu:.2f} s CPU")
    result["environment"]["after"] = environment()
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
