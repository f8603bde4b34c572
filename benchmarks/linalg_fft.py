"""Distributed linear algebra and FFTs against NumPy on the whole array: one section per op.

QR section (``--ops qr``): TSQR of a tall ``2^log2m x n`` float64 matrix whose
rows are split over the devices (emulated meshes of 1 and 4 devices in one
process, or one device per process under ``mpiexec -n P`` with
``comm="mpi"``), timed interleaved with ``numpy.linalg.qr`` of the whole
matrix (A B A B ..., median of ``--repeat``), so a shared machine loads both
alike. Reports the bytes one device sent (comm log) and the bytes it received
against TSQR's formula (one allgather of the ``n x n`` R factors:
``(p - 1) n^2 * 8`` bytes received per device, independent of m), and the
accuracy on a matrix of condition number 1e8: ``||Q^T Q - I||_F`` and
``||QR - A||_F / ||A||_F`` next to NumPy's. JSON to ``--json`` (default
benchmarks/results/linalg_fft-cpu.json; under MPI only rank 0 writes).

Cholesky section (``--ops cholesky``): the 2-D blocked Cholesky of one
``--chol-n`` square SPD float64 matrix split rows x cols on a 2x2 mesh
(emulated, or ``mpiexec -n 4``), panel ``--panel``, interleaved with
``numpy.linalg.cholesky`` of the whole matrix; bytes per device (comm log)
against ``cholesky_formula`` and the residual ``||L L^T - A|| / ||A||``.

    python benchmarks/linalg_fft.py [--log2m 20] [--n 64] [--repeat 3] [--json PATH]
    python benchmarks/linalg_fft.py --ops cholesky [--chol-n 2048] [--panel 256]
    mpiexec -n 4 python benchmarks/linalg_fft.py --json benchmarks/results/linalg_fft-cpu-mpi4.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
from pathlib import Path

import numpy as np

import shardarray as sa

try:  # run as a script (benchmarks/ on sys.path) or imported as benchmarks.linalg_fft
    from _timing import interleaved, world_size
except ImportError:  # pragma: no cover
    from benchmarks._timing import interleaved, world_size

EMULATED = {1: {"d": 1}, 4: {"all": 4}}






def conditioned(m: int, n: int, cond: float, seed: int = 0) -> np.ndarray:
    """An ``m x n`` matrix with singular values logspaced from 1 to ``1/cond``."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((m, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (u * np.logspace(0, -np.log10(cond), n)) @ v.T


# ----------------------------------------------------------------------------------------------- QR (TSQR)
def bench_qr(label: str, mesh: sa.Mesh, a: np.ndarray, repeat: int) -> dict:
    m, n = a.shape
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": tuple(mesh.axis_names)})
    p = mesh.size

    def ours():
        q, r = sa.linalg.qr(x)
        return q.shards[mesh.local_device], r.shards[mesh.local_device]

    t_ours, t_ref = interleaved(ours, lambda: np.linalg.qr(a), repeat, mesh)
    with sa.comm_log() as log:
        q, r = sa.linalg.qr(x)
    sent = int(sum(rec.bytes for rec in log.records))
    received = float(sum(rec.wire_bytes for rec in log.records))
    Q, R = q.numpy(), r.numpy()
    Qn, Rn = np.linalg.qr(a)
    eye = np.eye(n)
    norm_a = np.linalg.norm(a)
    return {
        "section": "qr", "mesh": label, "devices": p, "m": m, "n": n, "seconds": t_ours, "numpy_seconds": t_ref,
        "ratio": t_ours / t_ref, "collectives": [rec.op for rec in log.records],
        "bytes_sent_per_device": sent, "bytes_received_per_device": received,
        "formula_received_bytes": (p - 1) * n * n * 8, "formula_sent_bytes": n * n * 8 if p > 1 else 0,
        "orthogonality": float(np.linalg.norm(Q.T @ Q - eye)), "numpy_orthogonality": float(np.linalg.norm(Qn.T @ Qn - eye)),
        "residual": float(np.linalg.norm(Q @ R - a) / norm_a), "numpy_residual": float(np.linalg.norm(Qn @ Rn - a) / norm_a),
    }


# ------------------------------------------------------------------------------------- Cholesky (2-D blocked)
def cholesky_formula(mesh: sa.Mesh, n: int, raxes: tuple[str, ...], caxes: tuple[str, ...], panel: int) -> int:
    """Elements of the collectives' largest buffers, summed (``CommRecord.elements``): per panel of width ``w``
    a broadcast of ``w²`` over R; but for the last, a broadcast over C of the rows below it in a row block
    ``x w`` and an alltoallv over R of a device's rows matching its column group's columns, to ``p_r - 1``
    members, ``x w``; one allreduce of 1 number at the end."""
    from shardarray.chunks import group_chunk

    pr, pc = mesh.axes_size(raxes), mesh.axes_size(caxes)
    rb = [group_chunk(0, n, [mesh.axis_size(a) for a in raxes], j) for j in range(pr)]
    cb = [group_chunk(0, n, [mesh.axis_size(a) for a in caxes], j) for j in range(pc)]
    cuts = sorted({0, n, *(a for a, _ in rb), *(a for a, _ in cb)})
    total = 1 if pr * pc > 1 else 0
    for lo, hi in itertools.pairwise(cuts):
        for s in range(lo, hi, panel):
            e = min(hi, s + panel)
            w = e - s
            total += w * w if pr > 1 else 0
            if e < n:
                total += w * max(max(0, r1 - max(r0, e)) for r0, r1 in rb) if pc > 1 else 0
                sent = max(len(range(max(c0, e, r0), min(c1, r1))) for r0, r1 in rb for c0, c1 in cb)
                total += w * sent * (pr - 1)
    return total


def bench_cholesky(label: str, mesh: sa.Mesh, a: np.ndarray, panel: int, repeat: int) -> dict:
    n = a.shape[0]
    raxes, caxes = mesh.axis_names[:1], mesh.axis_names[1:]
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": raxes, "j": caxes})

    def ours():
        return sa.linalg.cholesky(x, panel=panel).shards[mesh.local_device]

    t_ours, t_ref = interleaved(ours, lambda: np.linalg.cholesky(a), repeat, mesh)
    with sa.comm_log() as log:
        low = sa.linalg.cholesky(x, panel=panel)
    sent = int(sum(rec.bytes for rec in log.records))
    received = float(sum(rec.wire_bytes for rec in log.records))
    Lo, Ln = low.numpy(), np.linalg.cholesky(a)
    norm_a = np.linalg.norm(a)
    return {
        "section": "cholesky", "mesh": label, "devices": mesh.size, "n": n, "panel": panel, "seconds": t_ours,
        "numpy_seconds": t_ref, "ratio": t_ours / t_ref,
        "collectives": {op: sum(r.op == op for r in log.records) for op in sorted({r.op for r in log.records})},
        "bytes_sent_per_device": sent, "bytes_received_per_device": received,
        "formula_bytes": cholesky_formula(mesh, n, raxes, caxes, panel) * 8, "matrix_bytes": n * n * 8,
        "residual": float(np.linalg.norm(Lo @ Lo.T - a) / norm_a),
        "numpy_residual": float(np.linalg.norm(Ln @ Ln.T - a) / norm_a),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log2m", type=int, default=20)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--cond", type=float, default=1e8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ops", nargs="*", default=["qr"], help="sections to run (qr, cholesky)")
    ap.add_argument("--chol-n", type=int, default=2048, help="the SPD matrix of the cholesky section is n x n")
    ap.add_argument("--panel", type=int, default=256, help="the 2-D Cholesky's panel width")
    ap.add_argument("--json", default="benchmarks/results/linalg_fft-cpu.json")
    args = ap.parse_args()
    procs = world_size()
    rows: list[dict] = []
    if "qr" in args.ops:
        a = conditioned(2 ** args.log2m, args.n, args.cond)
        if procs > 1:
            rows.append(bench_qr(f"mpi-{procs}", sa.Mesh({"x": procs}, comm="mpi"), a, args.repeat))
        else:
            for p, shape in EMULATED.items():
                rows.append(bench_qr(f"emulated-{p}", sa.Mesh(shape), a, args.repeat))
    if "cholesky" in args.ops:
        rng = np.random.default_rng(1)
        m = rng.standard_normal((args.chol_n, args.chol_n))
        spd = m @ m.T + args.chol_n * np.eye(args.chol_n)
        if procs > 1:
            shape = {"row": 2, "col": procs // 2} if procs % 2 == 0 else {"row": procs, "col": 1}
            rows.append(bench_cholesky(f"mpi-{procs}", sa.Mesh(shape, comm="mpi"), spd, args.panel, args.repeat))
        else:
            rows.append(bench_cholesky("emulated-2x2", sa.Mesh({"row": 2, "col": 2}), spd, args.panel, args.repeat))
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    if rank == 0:
        for r in rows:
            print(json.dumps(r))
        out = {"machine": platform.node(), "processor": platform.processor(), "cpus": os.cpu_count(),
               "processes": procs, "args": vars(args), "rows": rows}
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
