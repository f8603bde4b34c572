"""File paths given by users: a ``str`` or an ``os.PathLike`` (``pathlib.Path``), else a typed error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ArgumentError


def user_path(path: Any, what: str) -> Path:
    """``path`` as a ``Path``; ``ArgumentError`` naming ``what`` for anything else (None, a number, bytes) and for
    an empty path (``Path("")`` is the current folder, which ``np.save("")`` and ``open("")`` refuse too).

    Example:
        >>> user_path("/tmp/ck", "sa.checkpoint.save")
        PosixPath('/tmp/ck')
    """
    if isinstance(path, str) or (isinstance(path, os.PathLike) and isinstance(os.fspath(path), str)):
        if not os.fspath(path):
            raise ArgumentError(f"{what}: the path is empty; give a file or folder name such as 'run/ckpt'")
        return Path(path)
    raise ArgumentError(
        f"{what}: the path must be a str or a pathlib.Path (os.PathLike of str); got {type(path).__name__} {path!r:.80}"
    )


__all__ = ["user_path"]
