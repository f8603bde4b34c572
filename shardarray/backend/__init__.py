"""Where shard data lives: ``numpy`` (CPU), ``cupy`` (GPU) or ``meta`` (shapes only).

A backend exposes ``xp``, a NumPy-compatible namespace the ops call
(``xp.exp``, ``xp.sum``, ``xp.concatenate`` ...), plus the few things that
differ between array libraries: moving data from and to NumPy, the per-shard
einsum and the counter-based random block.
"""

from __future__ import annotations

from ..errors import MeshError
from .base import Backend
from .cupy_backend import CupyBackend
from .meta import MetaBackend
from .numpy_backend import NumpyBackend

#: the backends by name (CuPy itself is imported when the first ``cupy`` backend is made)
_CLASSES: dict[str, type[Backend]] = {"numpy": NumpyBackend, "cupy": CupyBackend, "meta": MetaBackend}
_BACKENDS: dict[str, Backend] = {}


def get_backend(name: str | Backend) -> Backend:
    """Return the backend called ``name`` (``"numpy"``, ``"cupy"`` or ``"meta"``)."""
    if isinstance(name, Backend):
        return name
    if name in _BACKENDS:
        return _BACKENDS[name]
    cls = _CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise MeshError(f"unknown backend {name!r}; choose 'numpy', 'cupy' or 'meta'")
    _BACKENDS[name] = cls()
    return _BACKENDS[name]


__all__ = ["Backend", "get_backend"]
