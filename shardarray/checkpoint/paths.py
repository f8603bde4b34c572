"""File paths given by users: a ``str`` or an ``os.PathLike`` (``pathlib.Path``), else a typed error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ArgumentError


def user_path(path: Any, what: str) -> Path:
    """``path`` as a ``Path``; ``ArgumentError`` naming ``what`` for anything else (None, a number, bytes).

    Example:
        >>> user_path("/tmp/ck", "sa.checkpoint.save")
        PosixPath('/tmp/ck')
    """
    if isinstance(path, str) or (isinstance(path, os.PathLike) and isinstance(os.fspath(path), str)):
        return Path(path)
    raise ArgumentError(
        f"{what}: the path must be a str or a pathlib.Path (os.PathLike of str); got {type(path).__name__} {path!r:.80}"
    )


__all__ = ["user_path"]
