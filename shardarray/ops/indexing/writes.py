"""The one lock of in-place writes (``x[...] = v``, ``x[mask] = v``).

Arrays are immutable except through these writes, which read an array's
blocks, write copies and swap them in. Two threads doing that on one array
would each swap in blocks made from the old ones, and one write would be
lost; holding ``WRITES`` for the whole read-modify-write serializes them
(it is re-entrant: a positional mask write calls the named one). Every other
op makes new arrays and needs no lock.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

WRITES = threading.RLock()

P = ParamSpec("P")
R = TypeVar("R")


def serialized(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run while holding ``WRITES``."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with WRITES:
            return fn(*args, **kwargs)

    return run
