"""``fftshift`` / ``ifftshift``: the zero frequency moved to the centre and back, as rolls along dims."""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..core.common import require_array
from ..ops.manipulation.flip import roll
from ..ops.manipulation.structure import copy
from .transforms import distinct_dims


def _shift(x: Any, dims: Any, sign: int, what: str) -> ShardArray:
    x = require_array(x, what)
    out = x
    for d in distinct_dims(x, dims, what):
        n = out.sizes[d]
        if n > 1:
            out = roll(out, d, sign * (n // 2))
    return copy(x) if out is x else out  # a new array, never x itself (writes to it must not reach x)


def fftshift(x: ShardArray, dims: Any = None) -> ShardArray:
    """``x`` rolled by ``n//2`` along each of ``dims`` (default all): zero frequency at the centre.

    Collectives: per split dim one ``alltoallv`` over its axes (``sa.roll``:
    each device sends at most its block); none for unsplit dims. Differentiable.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.fft.fftshift(sa.fft.fftfreq(mesh, 5, layout="row")).numpy()
        array([-0.4, -0.2,  0. ,  0.2,  0.4])
    """
    return _shift(x, dims, 1, "fftshift")


def ifftshift(x: ShardArray, dims: Any = None) -> ShardArray:
    """The inverse of ``fftshift``: ``x`` rolled by ``-(n//2)`` along each of ``dims``. Collectives as ``fftshift``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.fft.ifftshift(sa.fft.fftshift(sa.fft.fftfreq(mesh, 5, layout="row"))).numpy()
        array([ 0. ,  0.2,  0.4, -0.4, -0.2])
    """
    return _shift(x, dims, -1, "ifftshift")


__all__ = ["fftshift", "ifftshift"]
