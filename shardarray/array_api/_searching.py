"""``nonzero`` of the array API standard, over the named ``sa.nonzero``.

(``take_along_axis`` lives in ``_indexing.py``; ``where`` in ``_elementwise.py``; ``argmax``/``argmin`` with
the manipulation functions; ``count_nonzero``, a reduction, in ``_statistical.py``.) ``nonzero`` places its
data-dependent result by an exclusive scan of counts (one allgather of one int per device, one alltoallv).
"""

from __future__ import annotations

from ..array import ShardArray
from ..errors import DTypeError
from ..ops.indexing.nonzero import nonzero as _nonzero
from ._array import Array, wrap


def nonzero(x: ShardArray, /) -> tuple[Array, ...]:
    """Indices of the nonzero elements, one 1-D int64 array per axis (row-major order), as ``np.nonzero``.

    Each result is split over the mesh axes that split ``x`` (canonical blocks of the count).
    Collectives: see ``sa.nonzero``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     [i.numpy() for i in xp.nonzero(xp.asarray([[0, 1], [2, 0]]))]
        [array([0, 1]), array([1, 0])]
    """
    if not isinstance(x, ShardArray):
        raise DTypeError(f"nonzero: x must be an array; got {type(x).__name__}")
    return tuple(wrap(i) for i in _nonzero(x))


__all__ = ["nonzero"]  # (count_nonzero is a reduction: _statistical.py)
