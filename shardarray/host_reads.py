"""Whole-array host reads that NumPy's own Python code makes of a split array: they warn ``sa.GatherWarning``.

A NumPy function that shardarray implements dispatches through ``__array_function__``/``__array_ufunc__`` and
keeps its result on the mesh; one that bypasses the protocols (``np.ma.masked_array``, ``np.vectorize``'s call,
``np.polynomial``'s classes) reads its arguments with ``np.asarray``, which gathers each whole array onto this
process, and returns NumPy data. Your own ``np.asarray(x)`` is the explicit gather and stays silent; a read made by
NumPy's own Python code (any ``numpy.*`` module but ``numpy.testing``, whose asserts compare on the host by design)
of a split array of more than ``GATHER_WARN_BYTES`` warns at your line, naming the NumPy function you called and
the bytes, as every gathering fallback of the ops does (``sa.GatherWarning``). NumPy's compiled code
(``np.random.Generator``'s methods) leaves no Python frame to tell it from yours: its reads stay silent.

Example:
    >>> import warnings, numpy as np, shardarray.array_api as xp
    >>> x = xp.asarray(np.arange(16384.0), device=sa.Mesh({"row": 2, "col": 2}))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     m = np.ma.masked_array(x, mask=np.zeros(16384, bool))
    >>> type(m).__name__, [type(w.message).__name__ for w in caught]
    ('MaskedArray', ['GatherWarning'])
"""

from __future__ import annotations

import sys
import warnings
from types import FrameType

from .errors import GatherWarning

#: gathers of at most this many bytes stay silent (a handful of values); larger ones warn (``ops.indexing.route``
#: uses the same threshold per device)
GATHER_WARN_BYTES = 65536


def numpy_caller(depth: int) -> FrameType | None:
    """The frame ``depth`` levels above the caller of this function when it runs NumPy's own Python code (not
    ``numpy.testing``), else None."""
    try:
        frame: FrameType | None = sys._getframe(depth + 1)
    except ValueError:  # (called from C with no Python frame that deep: not NumPy's Python code)
        return None
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    if isinstance(name, str) and name.startswith("numpy.") and not name.startswith("numpy.testing"):
        return frame
    return None


def warn_if_numpy_reads(describe: str, nbytes: int, split: bool) -> None:
    """Warn ``sa.GatherWarning`` when NumPy's own Python code asked for the whole array (``__array__``'s caller's
    caller, two frames up) and it is split over the mesh and larger than ``GATHER_WARN_BYTES``; the warning points
    at the first frame outside NumPy (the user's line)."""
    if not split or nbytes <= GATHER_WARN_BYTES:
        return
    frame = numpy_caller(2)
    if frame is None:
        return
    level, entry = 3, frame  # (the NumPy function you called: the outermost NumPy frame)
    while entry.f_back is not None and str(entry.f_back.f_globals.get("__name__", "")).startswith("numpy."):
        level, entry = level + 1, entry.f_back
    code = entry.f_code
    where = f"{entry.f_globals.get('__name__')}.{getattr(code, 'co_qualname', code.co_name)}"
    warnings.warn(
        f"{where} read {describe} whole to the host with np.asarray ({nbytes} bytes gathered onto this process): "
        f"that NumPy function does not dispatch to shardarray, so its result is NumPy data, not an array on the "
        f"mesh. Use the shardarray counterpart where there is one (masked data: marray.masked_namespace(xp); an "
        f"elementwise Python function: the xp ops it is made of), or read the array yourself with np.asarray(x)",
        GatherWarning,
        stacklevel=level + 1,  # (the frame that called the NumPy function: your line)
    )
