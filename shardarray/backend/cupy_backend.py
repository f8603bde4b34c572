"""CuPy shards: every shard of an emulated mesh on the current GPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Backend


def import_cupy() -> Any:
    """Import CuPy or raise an ImportError that names the extra to install."""
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError(
            "the 'cupy' backend needs CuPy: pip install 'shardarray[cuda12]' (CUDA 12) "
            "or 'shardarray[cuda13]' (CUDA 13)"
        ) from e
    return cupy


class CupyBackend(Backend):
    name = "cupy"

    def __init__(self) -> None:
        self.xp = import_cupy()

    def from_numpy(self, array: np.ndarray) -> Any:
        array = np.asarray(array)
        return self.xp.asarray(np.array(array) if array.ndim == 0 else np.ascontiguousarray(array))

    def to_numpy(self, array: Any) -> np.ndarray:
        return self.xp.asnumpy(array)
