"""``__array_namespace_info__()``: what this namespace supports; its devices are meshes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_mesh import get_default_mesh
from ..dtypes import SUPPORTED


class Info:
    """The inspection object of the standard (``capabilities``, ``default_device``, ``dtypes``, ...).

    Example:
        >>> import shardarray.array_api as xp
        >>> xp.__array_namespace_info__().default_dtypes()["real floating"]
        dtype('float64')
    """

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes come with part 2 of the array API work."""
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self) -> Any:
        """The default mesh (``sa.get_default_mesh()``)."""
        return get_default_mesh()

    def devices(self) -> list[Any]:
        """The meshes this process can use by default: the default mesh."""
        return [get_default_mesh()]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        return {
            "real floating": np.dtype("float64"),
            "complex floating": np.dtype("complex128"),
            "integral": np.dtype("int64"),
            "indexing": np.dtype("int64"),
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        """The supported dtypes, optionally of a kind (``"bool"``, ``"signed integer"``, ..., or a tuple of kinds)."""
        from ._dtypes import isdtype

        out = {n: np.dtype(n) for n in SUPPORTED if n != "float16"}
        if kind is None:
            return out
        return {n: d for n, d in out.items() if isdtype(d, kind)}


def __array_namespace_info__() -> Info:  # noqa: N807 - the standard's name
    """The namespace's inspection object (see ``Info``)."""
    return Info()
