"""argparse types shared by ``shardarray-bench`` and the example scripts: a mesh shape and bounded numbers.

Each raises ``argparse.ArgumentTypeError``, so argparse prints one line naming the flag and exits 2.

Example:
    >>> mesh_shape("rows=2,cols=2"), int_at_least(1)("4"), float_at_least(0.0)("0.5")
    ({'rows': 2, 'cols': 2}, 4, 0.5)
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

#: the ``--dtype`` choices of ``shardarray-bench`` and the examples (bfloat16: ml_dtypes on NumPy, CuPy >= 14 on GPU)
FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float64")


def mesh_shape(text: str) -> dict[str, int]:
    """``"rows=2,cols=2"`` -> ``{"rows": 2, "cols": 2}`` (sizes >= 1, names unique)."""
    shape: dict[str, int] = {}
    for part in text.split(","):
        name, eq, size = part.partition("=")
        name, size = name.strip(), size.strip()
        if not eq or not name or not size.isdigit() or int(size) < 1 or name in shape:
            raise argparse.ArgumentTypeError(
                f"takes unique axis=size pairs with sizes >= 1 like rows=2,cols=2; got {text!r}"
            )
        shape[name] = int(size)
    return shape


def int_at_least(least: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"takes an integer >= {least}; got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be >= {least}; got {value}")
        return value

    return parse


def float_at_least(least: float) -> Callable[[str], float]:
    """An argparse type: a finite number >= ``least``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"takes a number >= {least:g}; got {text!r}") from None
        if not math.isfinite(value) or value < least:
            raise argparse.ArgumentTypeError(f"must be a finite number >= {least:g}; got {text}")
        return value

    return parse
