"""Checkpoint throughput: sa.checkpoint.save/load of the reference transformer's params + Adam state vs np.save/np.load.

The tree is the transformer (``mesh2d`` on a 2×2 mesh) at a d_model that gives
about ``--size`` MiB of parameters plus Adam moments (float32). The baseline
writes the *same bytes* (each distinct block once) with ``np.save`` into one
``.npy`` file per block, in a new directory each time (removing the previous
one, as an overwriting checkpoint save does: a checkpoint is never written
over the previous one's files, and on this file system reading a newly
created file back costs several times more than reading a rewritten one),
and reads them with ``np.load``; both sides fsync their files, both read
files they have just written (each load right
after its own save: on a machine with proactive reclaim, e.g. DAMON's
``pageout`` scheme, page-cache pages a few seconds old go back to disk, so
reading an older file would measure the disk). Runs are interleaved: each repeat runs
the checkpoint group (save, load, load without checksums) and the NumPy
group (np.save, np.load) and then an unsynced np.save; the two groups swap
places every repeat, so each follows the unsynced np.save equally often
(whichever does runs slower: this machine still pays for that 1 GiB of
writeback); before
each timed step ``os.sync()``, untimed, flushes the dirty pages a previous
step left. Medians are reported, and every repeat's time
(``seconds_each_repeat``); the unsynced np.save (no fsync, so not durable)
and ``load(..., verify=False)`` are shown too.
Peak extra memory is the rise of the process's peak RSS (``VmHWM`` in
/proc/self/status, reset through /proc/self/clear_refs) above its RSS before
the call, less the loaded tree itself for loads; compared with the largest
block a device holds.

    python benchmarks/checkpoint.py                     # ~1 GiB, emulated 2x2 mesh
    python benchmarks/checkpoint.py --size 256          # ~256 MiB
    mpiexec -n 4 python benchmarks/checkpoint.py --size 256   # one process per device, a shared directory

Results go to ``--json`` (default benchmarks/results/checkpoint-cpu.json), one
section per mode ("emulated" or "mpi-<n>").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import shardarray as sa
from shardarray.checkpoint.blocks import distinct_blocks, process_of
from shardarray.layout import block_bounds

MIB = 1 << 20


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=float, default=1024, help="MiB of params + Adam state (default 1024)")
    p.add_argument("--repeats", type=int, default=6,
                   help="interleaved repetitions, the two groups alternating first (median reported; even is balanced)")
    p.add_argument("--dir", default="", help="where to write (default: a temporary directory under /tmp)")
    p.add_argument("--json", default="benchmarks/results/checkpoint-cpu.json")
    return p


def config_for(mib: float) -> sa.nn.TransformerConfig:
    """The reference transformer (4 layers, d_ff = 4 d_model) whose params + 2 Adam moments are closest to ``mib``."""
    best = None
    for d in range(64, 8192, 64):
        cfg = sa.nn.TransformerConfig(vocab=4096, d_model=d, heads=8, d_kv=d // 8, d_ff=4 * d, n_layers=4, seq_len=64)
        err = abs(sa.nn.param_count(cfg) * 12 / MIB - mib)
        if best is None or err < best[0]:
            best = (err, cfg)
    return best[1]


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        pass


def measured(fn: Any) -> tuple[float, int, Any]:
    """``(seconds, peak RSS rise in bytes, result)`` of ``fn()``."""
    _reset_peak()
    before = _status("VmRSS")
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    return dt, max(0, _status("VmHWM") - before), out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    shape = {"rows": 2, "cols": 2}
    mesh = sa.Mesh(shape, rules=sa.nn.strategy_rules("mesh2d", shape))
    procs = sa.checkpoint.procs.procs_of([sa.zeros(mesh, {"a": 1})])
    rank = procs.rank
    cfg = config_for(args.size)
    params = sa.nn.init_transformer(cfg, mesh, strategy="mesh2d", seed=0)
    state = sa.optim.Adam(1e-3).init(params)
    state["m"] = sa.tree.tree_map(lambda x: x + 1.0, params)  # non-zero moments: nothing special about the bytes
    tree = {"params": params, "opt": state}
    leaves, _ = sa.tree.tree_flatten({"p": params, "m": state["m"], "v": state["v"]})
    # the same bytes as the checkpoint: each process saves the distinct blocks it writes, and loads every
    # distinct block its devices hold (under MPI that includes replicas another process wrote)
    mine = [(f"{i}-{b.key_suffix}", x.mesh.backend.to_numpy(x.shards[b.writer]))
            for i, x in enumerate(leaves) for b in distinct_blocks(x) if process_of(x, b.writer) == rank]
    held = [f"{i}-{','.join(str(lo) for lo, _ in block_bounds(x.mesh, x.spec)[rep])}"
            for i, x in enumerate(leaves) for rep, _ in x.mesh.replica_classes(x.spec.used_axes)
            if x.shards[rep].size]
    held_bytes = sum(x.shards[rep].nbytes for x in leaves for rep, _ in x.mesh.replica_classes(x.spec.used_axes))
    nbytes = sum(a.nbytes for _, a in mine)
    total_bytes = sum(int(t) for t in procs.allgather(str(nbytes)))
    total_held = sum(int(t) for t in procs.allgather(str(held_bytes)))
    largest_block = max(a.nbytes for _, a in mine) if mine else 0
    root = Path(procs.bcast(args.dir or tempfile.mkdtemp(prefix="ckbench")))
    base = root / "np"
    base.mkdir(parents=True, exist_ok=True)

    saves = {"n": 0, "dir": None}

    def np_save(sync: bool = True) -> None:
        # new files in a new directory each time, as every checkpoint is (an atomic save never overwrites the
        # previous one's files); the previous directory is removed, as an overwriting save removes the old one
        new = base / f"np-{saves['n']}"
        new.mkdir(exist_ok=True)
        for k, a in mine:
            with open(new / f"{k}.npy", "wb") as f:
                np.save(f, a)
                if sync:
                    f.flush()
                    os.fsync(f.fileno())
        procs.barrier()
        old, saves["dir"] = saves["dir"], new
        saves["n"] += 1
        if old is not None and rank == 0:
            shutil.rmtree(old, ignore_errors=True)

    def np_load() -> list[np.ndarray]:
        out = [np.load(saves["dir"] / f"{k}.npy") for k in held]
        procs.barrier()
        return out

    def ck_save() -> None:
        sa.checkpoint.save(root / "ck", tree, overwrite=True)

    def ck_load(verify: bool = True) -> Any:
        return sa.checkpoint.load(root / "ck", tree, verify=verify)

    ck_group = (("save", ck_save), ("load", ck_load), ("load_noverify", lambda: ck_load(False)))
    np_group = (("np_save", np_save), ("np_load", np_load))
    nosync = (("np_save_nosync", lambda: np_save(False)),)
    rows: dict[str, list[tuple[float, int]]] = {name: [] for g in (ck_group, np_group, nosync) for name, _ in g}
    for r in range(args.repeats):
        # each load right after its own save: both read files just written (this machine kind runs DAMON's
        # proactive reclaim, which pages out page-cache pages a few seconds old at up to 128 MiB/s, so a file
        # written three steps earlier is partly read from disk). The checkpoint and np groups swap places every
        # repeat, so each comes first, right after the previous repeat's unsynced np.save, equally often: that
        # position is measurably slower (the 1 GiB of writeback, flushed by the untimed os.sync, still costs the
        # next save and load: 1.0-1.8 s against 0.5-1.0 s for the same load in the other position)
        order = (ck_group, np_group, nosync) if r % 2 == 0 else (np_group, ck_group, nosync)
        for name, fn in (step for g in order for step in g):
            os.sync()  # untimed: the previous step's dirty pages (an unsynced np.save's) are not flushed on our clock
            procs.barrier()
            dt, peak, out = measured(fn)
            if "load" in name:
                peak = max(0, peak - held_bytes)  # the loaded values are the result, not overhead
            del out
            rows[name].append((dt, peak))
    med = {k: statistics.median(t for t, _ in v) for k, v in rows.items()}
    peak = {k: max(p for _, p in v) for k, v in rows.items()}
    mbs = {k: (total_held if "load" in k else total_bytes) / MIB / med[k] for k in med}
    peaks = [json.loads(t) for t in procs.allgather(json.dumps(peak))]
    result = {
        "mode": "emulated" if procs.size == 1 else f"mpi-{procs.size}", "mesh": shape, "processes": procs.size,
        "config": {"d_model": cfg.d_model, "d_ff": cfg.d_ff, "layers": cfg.n_layers, "vocab": cfg.vocab},
        "params": sa.nn.param_count(cfg), "bytes_written": total_bytes, "bytes_read": total_held,
        "repeats": args.repeats, "checksum": "gridsum (verified by load by default; see checkpoint.stfile.GridSum)",
        "seconds": med, "seconds_each_repeat": {k: [round(t, 3) for t, _ in v] for k, v in rows.items()},
        "MB_per_s": mbs,
        "ratio_vs_numpy": {"save": mbs["save"] / mbs["np_save"], "save_vs_nosync": mbs["save"] / mbs["np_save_nosync"],
                           "load": mbs["load"] / mbs["np_load"], "load_noverify": mbs["load_noverify"] / mbs["np_load"]},
        "peak_extra_bytes_per_process": peaks, "largest_block_bytes": largest_block,
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "note": "shared 2-core machine; runs interleaved"},
    }
    if rank == 0:
        print(f"{result['mode']}: {total_bytes / MIB:.0f} MiB (d_model {cfg.d_model}); "
              f"save {mbs['save']:.0f} MB/s vs np.save {mbs['np_save']:.0f} MB/s ({result['ratio_vs_numpy']['save']:.2f}x), "
              f"unsynced np.save {mbs['np_save_nosync']:.0f} MB/s ({result['ratio_vs_numpy']['save_vs_nosync']:.2f}x); "
              f"load {mbs['load']:.0f} MB/s vs np.load {mbs['np_load']:.0f} MB/s "
              f"({result['ratio_vs_numpy']['load']:.2f}x; {result['ratio_vs_numpy']['load_noverify']:.2f}x with verify=False); "
              f"peak extra MiB save/load "
              f"{max(p['save'] for p in peaks) / MIB:.1f}/{max(p['load'] for p in peaks) / MIB:.1f} "
              f"(largest block {largest_block / MIB:.1f} MiB)")
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        doc = json.loads(out.read_text()) if out.exists() else {}
        doc[result["mode"]] = result
        out.write_text(json.dumps(doc, indent=2))
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    procs.barrier()
    return result


if __name__ == "__main__":
    main()
