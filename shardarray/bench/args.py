"""argparse types shared by ``shardarray-bench`` and the example scripts: a mesh shape and bounded numbers.

Each raises ``argparse.ArgumentTypeError``, so argparse prints one line naming the flag and exits 2.
``check_output`` refuses an output file that cannot be written before the work, not after it.

Example:
    >>> mesh_shape("rows=2,cols=2"), int_at_least(1)("4"), float_at_least(0.0)("0.5")
    ({'rows': 2, 'cols': 2}, 4, 0.5)
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

from ..errors import ArgumentError

#: the ``--dtype`` choices of ``shardarray-bench`` and the examples (bfloat16: ml_dtypes on NumPy, CuPy >= 14 on GPU)
FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float64")


def mesh_shape(text: str) -> dict[str, int]:
    """``"rows=2,cols=2"`` -> ``{"rows": 2, "cols": 2}`` (sizes >= 1, names unique)."""
    shape: dict[str, int] = {}
    for part in text.split(","):
        name, eq, size = part.partition("=")
        name, size = name.strip(), size.strip()
        if not eq or not name or not (size.isascii() and size.isdigit()) or int(size) < 1 or name in shape:
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


def check_output(flag: str, path: str, image: bool = False) -> None:
    """Refuse an output path that cannot be written, before the work rather than after it (its folder is made).

    Args:
        flag: the option that names the path, for the message (e.g. ``"--json"``).
        path: the file to write; ``""`` (nothing asked for) passes.
        image: a matplotlib figure: the suffix must name a format matplotlib writes (``.png``, ``.pdf``, ``.svg``).

    Raises:
        ArgumentError: the folder cannot be made, the path is a folder or is not writable, or an image's suffix
            is no format matplotlib writes (matplotlib would add ``.png`` to a name without one).
        ImportError: an image without matplotlib installed.
    """
    if not path:
        return
    p = Path(path)
    if p.is_dir():
        raise ArgumentError(f"{flag} {path}: that is a folder; give a file path, e.g. {p / 'out'}")
    if image:
        formats = _image_formats()
        if p.suffix.lower().lstrip(".") not in formats:
            what = f"matplotlib writes no {p.suffix} files" if p.suffix else "no suffix names the image format"
            raise ArgumentError(
                f"{flag} {path}: {what}; end the name with one of {', '.join('.' + f for f in formats)}"
            )
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ArgumentError(f"{flag} {path}: its folder cannot be made ({e.strerror}); give a writable path") from None
    if not os.access(p.parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ArgumentError(f"{flag} {path}: not writable here; give a writable path")


def _image_formats() -> list[str]:
    """The file formats ``Figure.savefig`` writes (``png``, ``pdf``, ``svg``, ...)."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'shardarray[examples]'") from None
    return sorted(FigureCanvasBase.get_supported_filetypes())
