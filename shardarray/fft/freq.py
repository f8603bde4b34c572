"""Sample frequencies of the DFT: ``fftfreq`` and ``rfftfreq``, computed per block (no communication)."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DTypeError
from ..layout import block_bounds, make_layout
from ..mesh import AxesSpec, Mesh
from .transforms import check_n


def _freqs(
    mesh: Mesh, size: int, n: int, d: Any, dim: str, dtype: Any, layout: AxesSpec | None, what: str
) -> ShardArray:
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, float, np.integer, np.floating)) or d == 0:
        raise ArgumentError(f"{what}: d (the sample spacing) must be a non-zero real number; got d={d!r}")
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt.kind != "f":
        raise DTypeError(f"{what}: dtype must be a real floating-point dtype; got {dt}. Use dtype='float64'")
    lay = make_layout(mesh, (dim,), (size,), None if layout is None else {dim: layout}, what=f"{what}({n})")
    backend = mesh.backend
    shards: list[Any] = [None] * mesh.size
    bounds = block_bounds(mesh, lay)
    for rep, devices in mesh.replica_classes(lay.used_axes):
        lo, hi = bounds[rep][0]
        k = np.arange(lo, hi, dtype=np.int64)
        if what == "fftfreq":
            k = np.where(k < (n + 1) // 2, k, k - n)
        vals = (k / (n * float(d))).astype(dt)
        block = backend.from_numpy(vals) if backend.has_data else backend.xp.zeros((hi - lo,), dtype=dt)
        for dev in devices:
            shards[dev] = block
    return ShardArray(mesh, lay, dt, shards)


def fftfreq(
    mesh: Mesh, n: int, d: float = 1.0, *, dim: str = "freq", dtype: Any = None, layout: AxesSpec | None = None
) -> ShardArray:
    """The ``n`` DFT sample frequencies ``[0, 1, ..., -1] / (d*n)``, as ``numpy.fft.fftfreq``.

    Each device computes its own block: no communication.

    Args:
        mesh: where the array lives.
        n: the window length.
        d: the sample spacing.
        dim: the name of the one dim.
        dtype: a real floating dtype (default float64).
        layout: mesh axes that split ``dim`` (default: the mesh rules, else unsplit).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.fft.fftfreq(mesh, 4, layout="row").numpy()
        array([ 0.  ,  0.25, -0.5 , -0.25])
    """
    n = cast(int, check_n(n, "fftfreq", type_error=False))  # n: int, so not None
    return _freqs(mesh, n, n, d, dim, dtype, layout, "fftfreq")


def rfftfreq(
    mesh: Mesh, n: int, d: float = 1.0, *, dim: str = "freq", dtype: Any = None, layout: AxesSpec | None = None
) -> ShardArray:
    """The ``n//2 + 1`` non-negative DFT sample frequencies of ``rfft``, as ``numpy.fft.rfftfreq``.

    Each device computes its own block: no communication. Arguments as ``fftfreq``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.fft.rfftfreq(mesh, 4, layout="row").numpy()
        array([0.  , 0.25, 0.5 ])
    """
    n = cast(int, check_n(n, "rfftfreq", type_error=False))  # n: int, so not None
    return _freqs(mesh, n // 2 + 1, n, d, dim, dtype, layout, "rfftfreq")


__all__ = ["fftfreq", "rfftfreq"]
