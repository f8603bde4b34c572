"""An emulated mesh's per-device copies on several cores: big block fills run on a small thread pool.

An emulated mesh does every device's work in one process, one device after
the other. The copies a collective makes (each receiver's new block filled
from the pieces it gets) release the GIL in NumPy, so the blocks of
different devices can be filled at once, as real devices would (JAX's CPU
devices run in parallel threads too). The pool has as many threads as the
BLAS pool shardarray chose for the process (``sa.threads.last_setting()``:
the cores available, one on a busy or oversubscribed machine, and serial
when the user set the BLAS threads themselves), and only calls that copy at
least ``MIN_BYTES`` use it: a small block costs less than a thread hand-off.
Results are identical either way (each job writes its own new block).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import threads

MIN_BYTES = 8 << 20
"""Copies smaller than this (in all) run serially."""

_POOL: dict[str, Any] = {"size": 0, "pool": None}
_LOCK = threading.Lock()


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool there when one is needed."""
    global _LOCK
    _POOL["size"], _POOL["pool"] = 0, None
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def workers() -> int:
    """Threads for block copies: the BLAS pool size shardarray chose (1 when it chose none)."""
    setting = threads.last_setting()
    return setting.threads if setting is not None and setting.threads else 1


def _pool(n: int) -> ThreadPoolExecutor:
    with _LOCK:
        if _POOL["size"] != n:
            if _POOL["pool"] is not None:
                _POOL["pool"].shutdown(wait=False)
            _POOL["pool"] = ThreadPoolExecutor(n, thread_name_prefix="shardarray-copy")
            _POOL["size"] = n
        return _POOL["pool"]


def usable(backend: Any) -> bool:
    """Whether ``backend``'s blocks can be filled on the pool: NumPy shards in one process and more than one thread."""
    return backend.name == "numpy" and backend.device_scope is None and workers() > 1


def run_all(jobs: Sequence[Callable[[], Any]], nbytes: int, backend: Any) -> list[Any]:
    """``[job() for job in jobs]``, on the copy pool when ``backend`` allows it (``usable``), there are several
    jobs and ``nbytes`` is large.

    Example:
        >>> run_all([lambda: 1, lambda: 2], nbytes=0, backend=sa.Mesh({"d": 2}).backend)
        [1, 2]
    """
    if (
        len(jobs) <= 1
        or nbytes < MIN_BYTES
        or threading.current_thread().name.startswith("shardarray-copy")
        or not usable(backend)
    ):
        return [job() for job in jobs]
    return list(_pool(workers()).map(lambda job: job(), jobs))


__all__ = ["MIN_BYTES", "run_all", "usable", "workers"]
