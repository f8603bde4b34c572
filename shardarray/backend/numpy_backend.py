"""NumPy shards: the emulated CPU mesh."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Backend


class NumpyBackend(Backend):
    name = "numpy"
    xp = np

    def from_numpy(self, array: np.ndarray) -> np.ndarray:
        array = np.asarray(array)
        # ascontiguousarray would turn a 0-d array into shape (1,)
        return np.array(array) if array.ndim == 0 else np.ascontiguousarray(array)

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)
