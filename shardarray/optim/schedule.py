"""Learning-rate schedules: ``step -> lr`` callables (the step counts from 1)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError
from ..ops.elementwise.arithmetic import minimum, where
from ..ops.elementwise.math_unary import cos
from .common import _in_range


def cosine_schedule(peak: float, total_steps: int, warmup: int = 0, final: float = 0.0) -> Callable[[Any], Any]:
    """Linear warm-up to ``peak`` over ``warmup`` steps, then cosine decay to ``final`` at ``total_steps``.

    The schedule takes an int step, or a 0-d integer array (a step counted on the devices, as under
    ``sa.graphed``): it then returns a 0-d float64 array computed there.

    Raises:
        ArgumentError: ``peak`` or ``final`` negative or not finite,
            ``total_steps`` < 1, ``warmup`` < 0 or ``warmup`` > ``total_steps`` (a warm-up longer than the run).

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
    if warmup > total_steps:  # (the peak would never be reached: a warm-up meant for a longer run)
        raise ArgumentError(
            f"cosine_schedule(total_steps={total_steps}, warmup={warmup}): the warm-up is longer than the run, so the "
            f"rate would never reach its peak {peak}; pass warmup <= total_steps (e.g. warmup=min(warmup, total_steps))"
        )

    def lr(step: Any) -> Any:
        if isinstance(step, ShardArray):  # a step counted on the device (sa.graphed): the same formula there
            s = step.astype("float64")
            t = minimum((s - warmup) / max(1, total_steps - warmup), 1.0)
            decay = final + 0.5 * (peak - final) * (1.0 + cos(math.pi * t))
            return where(s < warmup, peak * s / warmup, decay) if warmup else decay
        if warmup and step < warmup:
            return peak * step / warmup
        t = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return final + 0.5 * (peak - final) * (1.0 + math.cos(math.pi * t))

    return lr
