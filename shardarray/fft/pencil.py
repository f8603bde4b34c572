"""The transposition method: apply a function along one dim by making that dim unsplit first.

``along(x, dim, local, size, dtype)`` runs ``local(block, axis)`` (a NumPy/CuPy
function of a block that holds *all* of ``dim``) on every device. When ``dim``
is split over mesh axes ``A`` (``k`` devices in all), one **alltoall** over
``A`` first moves that split onto a partner dim (another dim, preferably one
with at least one entry per device and no transform pending), the function runs
locally, and one **alltoall** back over ``A`` restores the input's layout with
``dim`` (now of ``size``) in canonical ceil-blocks. Each alltoall sends
``(k-1)/k`` of a device's block (the logged ``elements`` is the most any device
sends to the others). A 2-D/3-D transform on a 2-D mesh is therefore the pencil
decomposition: each dim is transformed while unsplit.

A 1-D array has no partner dim: ``along`` then gathers ``dim`` (one allgather, a ``sa.GatherWarning`` past
``route.GATHER_WARN_BYTES``, over ``A``), runs ``local`` and keeps its own block (no traffic); the c2c FFT
avoids this with the four-step algorithm (``four_step.py``) when ``n`` factors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.common import map_blocks
from ..core.relayout import move_axes, resolve_to
from ..layout import Layout
from ..ops.indexing.route import warn_gather

Local = Callable[[Any, int], Any]


def partner(x: ShardArray, dim: str, avoid: Iterable[str] = ()) -> str | None:
    """The dim that takes ``dim``'s split: at least one entry per device if possible, not in ``avoid``, largest."""
    i = x.dims.index(dim)
    k = x.mesh.axes_size(x.spec.axes[i])
    avoid = set(avoid)
    best, key = None, None
    for j, d in enumerate(x.dims):
        if j == i:
            continue
        per = x.shape[j] // (x.mesh.axes_size(x.spec.axes[j]) * k)
        score = (per >= 1, d not in avoid, per, x.shape[j])
        if key is None or score > key:
            best, key = d, score
    return best


def _run(x: ShardArray, axis: int, local: Local, size: int, dtype: Any) -> ShardArray:
    """``local`` on every block of ``x`` whose ``axis`` is unsplit; the result has ``size`` there."""
    mesh = x.mesh
    xp = mesh.backend.xp
    sizes = tuple(size if j == axis else n for j, n in enumerate(x.shape))
    layout = Layout(x.dims, sizes, x.spec.axes)
    if not mesh.backend.has_data:  # shapes only

        def fn(b: Any) -> Any:
            return xp.zeros(b.shape[:axis] + (size,) + b.shape[axis + 1 :], dtype=dtype)
    else:

        def fn(b: Any) -> Any:
            out = local(b, axis)
            return out if out.dtype == dtype else out.astype(dtype)

    shards = map_blocks(mesh, x.spec.used_axes, fn, x.shards, pure=True)  # distinct big blocks on the copy pool
    return ShardArray(mesh, layout, dtype, shards)


def along(
    x: ShardArray, dim: str, local: Local, size: int, dtype: Any, avoid: Iterable[str] = (), back: bool = True
) -> ShardArray:
    """``local(block, axis)`` along ``dim`` of ``x`` (pending sum resolved); the result keeps ``x``'s layout,
    or with ``back=False`` the layout it was computed in (``dim``'s axes moved onto the partner dim).

    Collectives: none when ``dim`` is unsplit; else two alltoalls over its
    axes (there and back, each ``(k-1)/k`` of a block per device; ``back=False``:
    the first only), or, for a 1-D array, one allgather of ``dim`` over its axes (``sa.GatherWarning`` naming
    the bytes each device receives, past ``route.GATHER_WARN_BYTES``).
    """
    x = resolve_to(x) if x.pending else x
    i = x.dims.index(dim)
    axes = x.spec.axes[i]
    dtype = np.dtype(dtype)
    if not axes or x.mesh.axes_size(axes) == 1:
        return _run(x, i, local, size, dtype)
    p = partner(x, dim, avoid)
    orig = x.spec.axes
    if p is None:  # 1-D: gather the dim, transform, keep the own block
        warn_gather(
            "sa.fft (a 1-D transform of a split array whose length has no two factors >= the devices)",
            x,
            axes,
            "pad to a length with such factors (n=...), or split the array over fewer devices",
            what="the array",
        )
        flat = move_axes(x, tuple(() for _ in orig))
        y = _run(flat, i, local, size, dtype)
        return move_axes(y, orig)
    j = x.dims.index(p)
    target = tuple(() if t == i else orig[j] + axes if t == j else a for t, a in enumerate(orig))
    y = _run(move_axes(x, target), i, local, size, dtype)
    return move_axes(y, orig) if back else y


def resize(xp: Any, b: Any, axis: int, n: int) -> Any:
    """``b`` truncated or zero-padded to ``n`` entries along ``axis`` (a local op on an unsplit axis)."""
    m = b.shape[axis]
    if m == n:
        return b
    if m > n:
        return b[(slice(None),) * axis + (slice(0, n),)]
    shape = b.shape[:axis] + (n - m,) + b.shape[axis + 1 :]
    return xp.concatenate([b, xp.zeros(shape, dtype=b.dtype)], axis=axis)


def splits(x: ShardArray, dim: str) -> int:
    """How many devices split ``dim``."""
    return math.prod(x.mesh.axis_size(a) for a in x.spec.axes[x.dims.index(dim)])


__all__ = ["along", "partner", "resize", "splits"]
