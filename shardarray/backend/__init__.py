"""Where shard data lives: ``numpy`` (CPU), ``cupy`` (GPU) or ``meta`` (shapes only).

A backend exposes ``xp``, a NumPy-compatible namespace the ops call
(``xp.exp``, ``xp.sum``, ``xp.concatenate`` ...), plus the few things that
differ between array libraries: moving data from and to NumPy, the per-shard
einsum and the counter-based random block.
"""

from __future__ import annotations

from .base import Backend

_BACKENDS: dict[str, Backend] = {}


def get_backend(name: str | Backend) -> Backend:
    """Return the backend called ``name`` (``"numpy"``, ``"cupy"`` or ``"meta"``)."""
    from ..errors import MeshError

    if isinstance(name, Backend):
        return name
    if name in _BACKENDS:
        return _BACKENDS[name]
    cls: type[Backend]
    if name == "numpy":
        from .numpy_backend import NumpyBackend as cls
    elif name == "cupy":
        from .cupy_backend import CupyBackend as cls
    elif name == "meta":
        from .meta import MetaBackend as cls
    else:
        raise MeshError(f"unknown backend {name!r}; choose 'numpy', 'cupy' or 'meta'")
    _BACKENDS[name] = cls()
    return _BACKENDS[name]


__all__ = ["Backend", "get_backend"]
