"""``shardarray.array_api``: the Python array API standard (2024.12) on distributed arrays.

Positional, NumPy-style scripting over shardarray's named ops::

    import shardarray as sa, shardarray.array_api as xp
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        a = xp.reshape(xp.arange(24.0), (4, 6))        # axis k split over mesh axis k: a 2-D split
        b = xp.sum(a[1:, ::2] * 2, axis=0)

Arrays this namespace creates have dims ``dim0, dim1, ...``; axis ``k`` is split
over mesh axis ``k`` where both exist (``device=`` a Mesh, else the default
mesh: ``sa.default_mesh``, ``sa.set_default_mesh``, ``SHARDARRAY_MESH``, else
one device). Results are ``Array``s (ShardArrays with positional operators);
ShardArrays from the named API are accepted as they are (axis ``i`` is their
``i``-th dim). Every function works on split dims with a distributed
algorithm (its collectives are those of the named op it maps to; see each
op's docstring), never by gathering. Sorting, set functions, cumulative sums,
``nonzero``, ``searchsorted`` and boolean masks come with part 2; the ``linalg``
and ``fft`` extensions with part 3.
"""

from __future__ import annotations

from typing import Any

from ..array import OPS as _ops_table
from ..core.tape import boundaries as _boundaries
from ..errors import ArgumentError
from . import fft, linalg  # noqa: F401  (the extensions: xp.fft, xp.linalg)
from ._array import HOOKS as _HOOKS
from ._array import Array, _view_of
from ._creation import *  # noqa: F403
from ._creation import __all__ as _creation_all
from ._dtypes import *  # noqa: F403
from ._dtypes import __all__ as _dtypes_all
from ._elementwise import *  # noqa: F403
from ._elementwise import __all__ as _elementwise_all
from ._indexing import *  # noqa: F403
from ._indexing import __all__ as _indexing_all
from ._info import __array_namespace_info__
from ._linalg import *  # noqa: F403
from ._linalg import __all__ as _linalg_all
from ._manipulation import *  # noqa: F403
from ._manipulation import __all__ as _manipulation_all
from ._nanfuncs import *  # noqa: F403  (NumPy extras beyond the standard)
from ._nanfuncs import __all__ as _nanfuncs_all
from ._numpy_calculus import *  # noqa: F403  (NumPy extras beyond the standard)
from ._numpy_calculus import __all__ as _numpy_calculus_all
from ._numpy_counts import *  # noqa: F403  (NumPy extras beyond the standard)
from ._numpy_counts import __all__ as _numpy_counts_all
from ._numpy_extras import *  # noqa: F403  (NumPy extras beyond the standard)
from ._numpy_extras import __all__ as _numpy_extras_all
from ._numpy_histdd import *  # noqa: F403  (NumPy extras beyond the standard)
from ._numpy_histdd import __all__ as _numpy_histdd_all
from ._numpy_math import *  # noqa: F403  (NumPy extras beyond the standard)
from ._numpy_math import __all__ as _numpy_math_all
from ._numpy_shapes import *  # noqa: F403  (NumPy extras beyond the standard)
from ._numpy_shapes import __all__ as _numpy_shapes_all
from ._numpy_stats import *  # noqa: F403  (NumPy extras beyond the standard)
from ._numpy_stats import __all__ as _numpy_stats_all
from ._numpy_ufuncs import *  # noqa: F403  (NumPy extras beyond the standard)
from ._numpy_ufuncs import __all__ as _numpy_ufuncs_all
from ._quantile import *  # noqa: F403  (NumPy's quantiles)
from ._quantile import __all__ as _quantile_all
from ._scans import *  # noqa: F403
from ._scans import __all__ as _scans_all
from ._searching import *  # noqa: F403
from ._searching import __all__ as _searching_all
from ._set import *  # noqa: F403
from ._set import __all__ as _set_all
from ._sorting import *  # noqa: F403
from ._sorting import __all__ as _sorting_all
from ._statistical import *  # noqa: F403
from ._statistical import __all__ as _statistical_all

__array_api_version__ = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None


def namespace(api_version: str | None = None) -> Any:
    """This module, for ``x.__array_namespace__(api_version=...)`` (versions 2021.12 to 2024.12)."""
    import sys

    if api_version is not None and api_version not in _VERSIONS:
        raise ArgumentError(
            f"shardarray.array_api implements the array API standard {__array_api_version__} "
            f"(and the earlier {_VERSIONS[:-1]}); got api_version={api_version!r}"
        )
    return sys.modules[__name__]


__all__ = [
    "Array",
    "__array_api_version__",
    "__array_namespace_info__",
    "e",
    "pi",
    "inf",
    "nan",
    "newaxis",
    *_creation_all,
    *_dtypes_all,
    *_elementwise_all,
    *_indexing_all,
    *_linalg_all,
    *_manipulation_all,
    *_statistical_all,
    *_scans_all,
    *_searching_all,
    *_sorting_all,
    *_set_all,
    *_nanfuncs_all,
    *_numpy_extras_all,
    *_quantile_all,
    *_numpy_stats_all,
    *_numpy_calculus_all,
    *_numpy_counts_all,
    *_numpy_histdd_all,
    *_numpy_math_all,
    *_numpy_shapes_all,
    *_numpy_ufuncs_all,
    "linalg",
]

# Every function of the namespace is an op boundary of an MPI job (``core.tape.boundary``): many check their
# arguments before they call an op (``xp.reshape``'s shape, ``xp.sum``'s axis), and an error they raise on some
# processes only then reaches the others as a ``CommError`` naming it, instead of leaving them in a collective.
# Outside a job of several processes the wrapper costs one attribute lookup.
_boundaries(globals(), __all__)

# NumPy's reshape, transpose, squeeze... give views of x: their results here are copies, tagged as the methods' are
# (``_array._view_of``), so a write into one that is freed unread warns ``sa.CopyWriteWarning`` (SciPy's
# ``fr, fl = xp.reshape(fj, (2, -1))``, then writes into ``fr`` that NumPy carries into ``fj``)
for _name in ("reshape", "permute_dims", "squeeze", "moveaxis", "matrix_transpose", "expand_dims", "flip"):
    globals()[_name] = _view_of(globals()[_name], f"xp.{_name}(x, ...)")

# ShardArray.__array_namespace__ calls this (shardarray/array.py's table of ops filled in from above)
_ops_table.array_namespace = namespace
_HOOKS.namespace = namespace  # Array.__array_namespace__/__array_ufunc__ and xp.linalg's helpers call it
