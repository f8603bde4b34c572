"""The user's line for a warning raised deep inside the library: ``user_stacklevel``."""

from __future__ import annotations

import os
import sys

#: the package's folder: frames of files under it are the library's own
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` called by this function's caller that points the warning at the
    user's line: the first frame outside the package (what Python 3.12's ``skip_file_prefixes`` does), however
    deep inside the library the warning is raised.

    Example:
        >>> import warnings
        >>> def library_function():  # (a function of the package: its frames are skipped)
        ...     warnings.warn("a block is gathered", UserWarning, stacklevel=user_stacklevel())
        >>> user_stacklevel() >= 1
        True
    """
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


__all__ = ["user_stacklevel"]
