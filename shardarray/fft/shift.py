"""``fftshift`` / ``ifftshift``: the zero frequency moved to the centre and back, as rolls along dims."""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..errors import DimensionError
from ..ops.common import dims_arg, require_array
from ..ops.flip import roll


def _shift(x: Any, dims: Any, sign: int, what: str) -> ShardArray:
    x = require_array(x, what)
    raw = dims if isinstance(dims, (tuple, list)) else (dims,)
    if dims is not None and len(set(raw)) != len(raw):
        raise DimensionError(f"{what}: dims {tuple(raw)} repeat a dim; name each dim once")
    names = x.dims if dims is None else dims_arg(x, tuple(raw), what)
    if len(set(names)) != len(names):
        raise DimensionError(f"{what}: dims {tuple(raw)} name a dim twice ({names}); name each dim once")
    for d in names:
        n = x.sizes[d]
        if n > 1:
            x = roll(x, d, sign * (n // 2))
    return x


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
