"""Learning-rate schedules: ``step -> lr`` callables (the step counts from 1)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..errors import ArgumentError
from .common import _in_range


def cosine_schedule(peak: float, total_steps: int, warmup: int = 0, final: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up to ``peak`` over ``warmup`` steps, then cosine decay to ``final`` at ``total_steps``.

    Raises:
        ArgumentError: ``peak`` or ``final`` negative or not finite,
            ``total_steps`` < 1 or ``warmup`` < 0.

    Example:
        >>> lr = sa.optim.cosine_schedule(1e-3, 100, warmup=10)
        >>> lr(5), lr(10), round(lr(100), 12)
        (0.0005, 0.001, 0.0)
    """
    _in_range("cosine_schedule", "peak", peak, 0.0, None, "[0, inf) (peak >= 0, finite)")
    _in_range("cosine_schedule", "final", final, 0.0, None, "[0, inf) (final >= 0, finite)")
    for name, value, least in (("total_steps", total_steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ArgumentError(f"cosine_schedule({name}={value!r}): {name} must be an integer >= {least}")

    def lr(step: int) -> float:
        if warmup and step < warmup:
            return peak * step / warmup
        t = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return final + 0.5 * (peak - final) * (1.0 + math.cos(math.pi * t))

    return lr
