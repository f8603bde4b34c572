"""How the benchmarks time shardarray against a reference: interleaved, A B A B, medians.

``interleaved(ours, ref, repeat, mesh)`` runs each once to warm up, then
alternates them ``repeat`` times, so a machine whose load changes during the
run slows both alike. Under MPI (``mesh`` given) each time is the slowest
process's (one ``host_reduce`` max per timing). ``world_size()`` is the
launcher's process count (1 outside a launcher).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any


def world_size() -> int:
    """Processes in this MPI job (``PMI_SIZE`` / ``OMPI_COMM_WORLD_SIZE``), 1 without a launcher."""
    return int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))


def interleaved(ours: Callable[[], Any], ref: Callable[[], Any], repeat: int, mesh: Any = None) -> tuple[float, float]:
    """Median seconds of ``ours`` and of ``ref``, run A B A B after one warm-up each.

    With ``mesh``, every time is the maximum over the processes of its
    communicator (``mesh.comm.host_reduce``), so MPI runs report the job's time.
    """
    def timed(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        return dt if mesh is None else mesh.comm.host_reduce(dt, "max")

    ours()
    ref()
    a, b = [], []
    for _ in range(repeat):
        a.append(timed(ours))
        b.append(timed(ref))
    return statistics.median(a), statistics.median(b)
