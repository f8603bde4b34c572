"""``__array_namespace_info__()``: what this namespace supports; its devices are meshes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_mesh import get_default_mesh
from ..errors import MeshError
from ..mesh import Mesh
from . import _dtypes as _d
from ._dtypes import DTYPES, isdtype


def _check_device(device: Any, what: str) -> None:
    if device is not None and not isinstance(device, Mesh):
        raise MeshError(f"{what}: device must be a sa.Mesh or None; got {type(device).__name__} {device!r:.80}")


class Info:
    """The inspection object of the standard (``capabilities``, ``default_device``, ``dtypes``, ...).

    Devices are meshes: every mesh supports every dtype of the standard.

    Example:
        >>> import shardarray.array_api as xp
        >>> xp.__array_namespace_info__().default_dtypes()["real floating"] == xp.float64
        True
    """

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing (``x[mask]``, ``x[mask] = v``) and data-dependent shapes (``nonzero``,
        ``unique_*``) are supported on split arrays: their results are placed by an exclusive scan of counts.

        Example:
            >>> import shardarray.array_api as xp
            >>> caps = xp.__array_namespace_info__().capabilities()
            >>> caps["boolean indexing"], caps["data-dependent shapes"]
            (True, True)
        """
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Mesh:
        """The default mesh (``sa.get_default_mesh()``)."""
        return get_default_mesh()

    def devices(self) -> list[Mesh]:
        """The meshes this process can use by default: the default mesh."""
        return [get_default_mesh()]

    def default_dtypes(self, *, device: Any = None) -> dict[str, Any]:
        """float64, complex128 and int64 (also the indexing dtype), on every mesh, as ``np.dtype`` objects (what
        ``x.dtype`` holds: a dict keyed by them finds ``x.dtype``, as with NumPy's own info)."""
        _check_device(device, "default_dtypes")
        return {
            "real floating": np.dtype(_d.float64),
            "complex floating": np.dtype(_d.complex128),
            "integral": np.dtype(_d.int64),
            "indexing": np.dtype(_d.int64),
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, Any]:
        """The standard's dtypes by name, optionally of a kind (``"bool"``, ``"signed integer"``, ..., or a tuple), as
        ``np.dtype`` objects (see ``default_dtypes``)."""
        _check_device(device, "dtypes")
        return {n: np.dtype(t) for n, t in DTYPES.items() if kind is None or isdtype(t, kind)}


def __array_namespace_info__() -> Info:
    """The namespace's inspection object (see ``Info``)."""
    return Info()
