"""2-D FFT of an N x N complex64 array split over a 2x2 mesh ({a: row, b: col}) against numpy.fft.fft2.

Timed interleaved in one run (A B A B ..., median of ``--repeat``), so a
shared machine loads both alike. Checks the result against NumPy and the
traffic against the formula: each split dim costs two alltoalls over its
2-device mesh axis (there and back), each device putting in its whole block
``B = (N/2)^2 * 8`` bytes and sending ``(k-1)/k * B = B/2`` of it, so the
2-D FFT sends ``4 * B/2 = 2B = N^2 * 4`` bytes per device (``wire_bytes``).
Writes JSON to ``--json`` (default benchmarks/results/fft-cpu.json).

    python benchmarks/fft.py [--n 4096] [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np

import shardarray as sa

try:  # run as a script (benchmarks/ on sys.path) or imported as benchmarks.fft
    from _timing import interleaved
except ImportError:  # pragma: no cover
    from benchmarks._timing import interleaved


def fft_section(n: int, repeat: int) -> dict:
    """Time, traffic and error of ``sa.fft.fftn`` on an n x n complex64 array on a 2x2 mesh vs ``np.fft.fft2``."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    t_ours, t_ref = interleaved(lambda: sa.fft.fftn(x), lambda: np.fft.fft2(a), repeat)
    with sa.comm_log() as log:
        y = sa.fft.fftn(x)
    want = np.fft.fft2(a)
    err = float(np.max(np.abs(y.numpy() - want)) / np.max(np.abs(want)))
    block = ((n + 1) // 2) ** 2 * 8
    sent = sum(r.wire_bytes for r in log.records)
    return {
        "n": n, "dtype": str(y.dtype), "mesh": "2x2 emulated", "sa_s": t_ours,
        "numpy_fft2_s": t_ref, "ratio": t_ours / t_ref,
        "collectives": [r.op for r in log.records], "wire_bytes_per_device": sent,
        "formula_bytes_per_device": 2 * block, "max_rel_error": err,
    }


def fft1d_section(n: int, repeat: int) -> dict:
    """1-D FFT of n complex64 split over 4 emulated devices (four-step: 3 alltoalls) vs ``np.fft.fft``.

    Formula: each alltoall sends the entries whose owner changes; with 4² | n that is (k-1)/k = 3/4 of a
    device's block of n/4 entries, so 3 · 3/4 · n/4 · 8 bytes per device put in (``bytes``).
    """
    mesh = sa.Mesh({"all": 4})
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": "all"})
    t_ours, t_ref = interleaved(lambda: sa.fft.fft(x, "t"), lambda: np.fft.fft(a), repeat)  # warms the index plans
    with sa.comm_log() as log:
        y = sa.fft.fft(x, "t")
    want = np.fft.fft(a)
    err = float(np.max(np.abs(y.numpy() - want)) / np.max(np.abs(want)))
    return {
        "n": n, "dtype": str(y.dtype), "mesh": "all=4 emulated", "sa_s": t_ours,
        "numpy_fft_s": t_ref, "ratio": t_ours / t_ref,
        "collectives": [r.op for r in log.records], "bytes_per_device": sum(r.bytes for r in log.records),
        "formula_bytes_per_device": 3 * (3 * (n // 4) // 4) * 8, "max_rel_error": err,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--n1d", type=int, default=2 ** 22, help="1-D FFT length (a multiple of 16)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", default="benchmarks/results/fft-cpu.json")
    args = p.parse_args()
    res = fft_section(args.n, args.repeat)
    res["machine"] = platform.processor() or platform.machine()
    res["fft1d"] = fft1d_section(args.n1d, args.repeat)
    print(json.dumps(res, indent=1))
    assert res["wire_bytes_per_device"] == res["formula_bytes_per_device"], res
    assert res["max_rel_error"] < 1e-5, res
    assert res["fft1d"]["bytes_per_device"] == res["fft1d"]["formula_bytes_per_device"], res["fft1d"]
    assert res["fft1d"]["collectives"] == ["alltoall"] * 3 and res["fft1d"]["max_rel_error"] < 1e-5, res["fft1d"]
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
