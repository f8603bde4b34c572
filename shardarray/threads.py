"""How many BLAS threads each process uses, set once per process at its first mesh.

NumPy's OpenBLAS starts one thread per core and its idle threads *spin*: on a
machine where another process is busy, a 2-thread matmul waits for a core that
never comes (the README's main job ran 7.8× slower beside one busy process).
shardarray therefore sets the BLAS pool (through ``threadpoolctl``) when the
first ``sa.Mesh`` of a process is made:

* ``SHARDARRAY_BLAS_THREADS=N`` (N ≥ 1): exactly N threads, nothing else asked.
  ``SHARDARRAY_BLAS_THREADS=keep`` (or ``0``): shardarray never touches the pool.
* ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` or
  ``BLIS_NUM_THREADS`` set: the user chose; shardarray keeps the pool as is.
  (These must be set *before* NumPy is imported; a library cannot set them
  afterwards, so shardarray sets the pool with threadpoolctl instead.)
* otherwise: the cores this process may run on (``os.sched_getaffinity``),
  divided by the processes of the job on this node under an MPI launcher
  (``MPI_LOCALNRANKS``/``OMPI_COMM_WORLD_LOCAL_SIZE``, else
  ``COMM_WORLD.Split_type(COMM_TYPE_SHARED)`` for a ``comm="mpi"`` mesh), less
  the cores other processes keep busy now (the fewest runnable tasks other
  than this process in a few samples of ``/proc/loadavg``, 10 ms in all),
  at least 1. An oversubscribed node
  (more local ranks than cores) or a busy machine gets 1 thread.
* shardarray only ever *lowers* the pool: a smaller pool set earlier with
  ``threadpoolctl.threadpool_limits`` is kept, and one set later wins.

``sa.threads.configure_blas()`` re-applies the rule (e.g. after the load
changed); ``sa.threads.last_setting()`` says what was chosen and why.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ArgumentError
from .launch import env_count, launched_processes

ENV = "SHARDARRAY_BLAS_THREADS"
USER_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
# node-local process counts that MPI launchers export (MPICH/Hydra, Open MPI); no MPI import needed
_LOCAL_VARIABLES = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")
# a BLAS pool size is a C int
_MAX_THREADS = 2**31 - 1

__all__ = ["BlasSetting", "blas_threads", "configure_blas", "last_setting", "local_ranks", "machine_load"]


@dataclass(frozen=True)
class BlasSetting:
    """What shardarray decided for the BLAS pool of this process.

    Attributes:
        threads: the pool size chosen; None when shardarray leaves the pool alone.
        reason: why, in words (the override, the user's variable, or cores/ranks/load).
        cores: cores available to the process (affinity).
        local_ranks: processes of the job on this node (1 outside MPI).
        load: the busy-core estimate used (other processes).
    """

    threads: int | None
    reason: str
    cores: int
    local_ranks: int
    load: float


def available_cores() -> int:
    """Cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` where that is missing)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def machine_load(samples: int = 5, interval_s: float = 0.002) -> float:
    """Cores kept busy by *other* processes now: the fewest runnable tasks, less this one, over a few samples.

    ``/proc/loadavg``'s runnable count is read ``samples`` times ``interval_s``
    apart and the minimum taken (a process that keeps a core busy is runnable
    in every sample; a kernel thread that wakes for a moment is not), less one
    for this process. The 1-minute load average is not used: it lags by a
    minute, so it still counts a job that just ended, and it counts this
    process's own work before its first mesh (a benchmark that ran a while
    would see itself as another busy process). Without ``/proc``, the load
    average is the fallback.
    """
    counts = []
    try:
        for k in range(max(1, samples)):
            if k:
                time.sleep(interval_s)
            with open("/proc/loadavg") as f:
                counts.append(int(f.read().split()[3].split("/")[0]))
        return float(max(0, min(counts) - 1))
    except (OSError, IndexError, ValueError):
        try:
            return float(os.getloadavg()[0])
        except (AttributeError, OSError):  # pragma: no cover - no load information at all
            return 0.0


def local_ranks(env: Mapping[str, str] | None = None, world: Any = None) -> int:
    """Processes of this job on this node: 1 outside an MPI launcher.

    Read from the launcher's environment when it exports the count, else from
    ``world.Split_type(COMM_TYPE_SHARED)`` when ``world`` (an MPI communicator
    every process passes at once, e.g. by making a ``comm="mpi"`` mesh) is given.
    """

    env = os.environ if env is None else env
    for name in _LOCAL_VARIABLES:
        n = env_count(env.get(name))
        if n is not None:
            return n
    if world is not None:
        MPI = sys.modules.get("mpi4py.MPI")
        kind = getattr(MPI, "COMM_TYPE_SHARED", 0)
        node = world.Split_type(kind)
        try:
            return max(1, int(node.Get_size()))
        finally:
            free = getattr(node, "Free", None)
            if free is not None:
                free()
    return launched_processes(env)  # no node-local count: assume every process of the job shares this node


def blas_threads(
    env: Mapping[str, str] | None = None,
    cores: int | None = None,
    ranks: int = 1,
    load: float | None = None,
) -> BlasSetting:
    """The BLAS pool size for this process under the rule of the module docstring (applies nothing).

    Args:
        env: the environment (``os.environ`` when None).
        cores: cores available to the process (affinity when None).
        ranks: processes of the job on this node.
        load: cores kept busy by other processes (``machine_load()`` when None).

    Returns:
        The ``BlasSetting``; ``threads`` is None when the pool is to be left alone.

    Raises:
        ArgumentError: ``SHARDARRAY_BLAS_THREADS`` is neither a positive integer nor ``keep``/``0``.

    Example (a 2×2 emulated mesh in one process on a quiet 4-core machine):
        >>> sa.threads.blas_threads(env={}, cores=4, ranks=1, load=0.0).threads
        4
    """
    env = os.environ if env is None else env
    cores = available_cores() if cores is None else max(1, int(cores))
    ranks = max(1, int(ranks))
    raw = env.get(ENV, "").strip()
    if raw:
        count = int(raw) if raw.isascii() and raw.isdigit() else None  # (int("²") fails, but "²".isdigit())
        if raw.lower() == "keep" or count == 0:
            return BlasSetting(None, f"{ENV}={raw}: pool left as it is", cores, ranks, 0.0)
        if count is None or count > _MAX_THREADS:
            raise ArgumentError(
                f"{ENV}={raw!r} is not a thread count; set it to a positive integer up to {_MAX_THREADS} "
                f"(e.g. {ENV}=1) or to 'keep' to leave the BLAS pool alone"
            )
        return BlasSetting(count, f"{ENV}={raw}", cores, ranks, 0.0)
    for name in USER_VARIABLES:
        if env.get(name, "").strip():
            return BlasSetting(None, f"{name}={env[name]} set by the user: pool left as it is", cores, ranks, 0.0)
    load = machine_load() if load is None else float(load)
    share = cores // ranks
    if share < 1:
        return BlasSetting(1, f"{ranks} local ranks on {cores} cores (oversubscribed)", cores, ranks, load)
    free = cores - load
    n = max(1, min(share, math.floor(free + 0.5)))
    return BlasSetting(n, f"{cores} cores / {ranks} local rank(s), load {load:.2f}", cores, ranks, load)


_STATE: dict[str, Any] = {"applied": False, "setting": None}


def last_setting() -> BlasSetting | None:
    """The setting applied last in this process (None before the first mesh)."""
    return _STATE["setting"]


def configure_blas(world: Any = None) -> BlasSetting:
    """Choose the BLAS pool size (``blas_threads``) and apply it with threadpoolctl, never raising the pool.

    Args:
        world: an MPI communicator every process of the job passes at once
            (for ``Split_type``); None outside ``comm="mpi"``.

    Returns:
        The ``BlasSetting`` applied (``threads`` is what the pool was set to).

    Example (on a 2×2 mesh the first ``sa.Mesh`` calls this; call it again after the load changed):
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.threads.configure_blas().threads >= 1
        True
    """
    setting = blas_threads(ranks=local_ranks(world=world))
    if setting.threads is not None:
        from threadpoolctl import threadpool_info, threadpool_limits

        pools = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        forced = bool(os.environ.get(ENV, "").strip())
        n = setting.threads if forced or not pools else min(setting.threads, min(pools))
        if pools and (forced or n < min(pools) or n != max(pools)):
            threadpool_limits(limits=n, user_api="blas")
        setting = BlasSetting(n, setting.reason, setting.cores, setting.local_ranks, setting.load)
    _STATE["setting"] = setting
    _STATE["applied"] = True
    return setting


def on_mesh(comm: str | None) -> None:
    """Called by every ``sa.Mesh``: applies ``configure_blas`` once per process (the first mesh)."""
    if _STATE["applied"]:
        return
    world = None
    if comm == "mpi" and not any(env_count(os.environ.get(v)) for v in _LOCAL_VARIABLES):
        MPI = sys.modules.get("mpi4py.MPI")
        world = getattr(MPI, "COMM_WORLD", None) if MPI is not None else None
    configure_blas(world)
