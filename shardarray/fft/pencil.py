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

A partner dim shorter than its devices piles the array on a few devices: the transforms take the four-step
algorithm there instead when ``n`` factors, or Bluestein's (``bluestein.py``) when it does not and a device
would hold more than ``four_step.GATHER_MAX_BYTES`` (``four_step.applies``); else ``along`` warns
``sa.GatherWarning`` past ``route.GATHER_WARN_BYTES`` when a device would receive two even shares or more.

A 1-D array has no partner dim: ``along`` then gathers the leading entries ``local`` reads (one allgather of
at most ``dim``, a ``sa.GatherWarning`` past ``route.GATHER_WARN_BYTES``, over ``A``), runs ``local`` and keeps
its own block (no traffic); the FFTs avoid this with the four-step algorithm (``four_step.py``) when ``n``
factors, and with Bluestein's past ``four_step.GATHER_MAX_BYTES`` when it does not (a prime).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..array import ShardArray
from ..callsite import user_stacklevel
from ..core.common import map_blocks
from ..core.relayout import move_axes, resolve_to
from ..errors import GatherWarning
from ..layout import Layout, block_bounds
from ..ops.indexing import route

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


def crowding(x: ShardArray, dim: str, avoid: Iterable[str] = ()) -> float:
    """How unevenly the transposition method spreads ``x`` when ``dim``'s split moves onto its partner dim: the
    partner's largest block over its even share (``ceil(p/K)·K/p`` for ``p`` entries over ``K`` devices: 1 when
    ``K`` divides ``p``, ``K`` for ``p = 1``, where one device would receive the whole array). ``inf`` for a
    1-D array (no partner), 1 for an empty array (nothing moves)."""
    p = partner(x, dim, avoid)
    return math.inf if p is None else _crowding(x, dim, p)


def _crowding(x: ShardArray, dim: str, p: str) -> float:
    size = x.sizes[p]
    if not x.size:
        return 1.0
    k = x.mesh.axes_size(x.spec.axes[x.dims.index(p)]) * splits(x, dim)
    return math.ceil(size / k) * k / size


def _warn_crowded(x: ShardArray, dim: str, p: str, target: tuple[tuple[str, ...], ...]) -> None:
    """``sa.GatherWarning`` when the transposition piles at least two even shares of ``x`` on a device (a partner
    dim shorter than half its devices) and that exceeds ``route.GATHER_WARN_BYTES``: a partial gather."""
    if _crowding(x, dim, p) < 2:
        return
    most = max(math.prod(hi - lo for lo, hi in b) for b in block_bounds(x.mesh, Layout(x.dims, x.shape, target)))
    nbytes = most * x.dtype.itemsize
    if nbytes > route.GATHER_WARN_BYTES:
        warnings.warn(
            f"sa.fft: a transform along the split dim {dim!r} of {x.sizes} moves the split onto dim {p!r} "
            f"({x.sizes[p]} entries for {x.mesh.axes_size(target[x.dims.index(p)])} devices): a device receives "
            f"up to {nbytes} of the array's {x.size * x.dtype.itemsize} bytes. Transform a length with two "
            f"factors >= the devices of {dim!r} (n=...; the four-step algorithm), or split {dim!r} over fewer devices",
            GatherWarning,
            stacklevel=user_stacklevel(),
        )


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
    x: ShardArray,
    dim: str,
    local: Local,
    size: int,
    dtype: Any,
    avoid: Iterable[str] = (),
    back: bool = True,
    need: int | None = None,
) -> ShardArray:
    """``local(block, axis)`` along ``dim`` of ``x`` (pending sum resolved); the result keeps ``x``'s layout,
    or with ``back=False`` the layout it was computed in (``dim``'s axes moved onto the partner dim). ``need``:
    how many leading entries of ``dim`` ``local`` reads (None: all; a transform cropped to ``n``).

    Collectives: none when ``dim`` is unsplit; else two alltoalls over its
    axes (there and back, each ``(k-1)/k`` of a block per device; ``back=False``:
    the first only), or, for a 1-D array, one allgather of the ``need`` leading entries over its axes
    (``sa.GatherWarning`` naming the bytes each device receives, past ``route.GATHER_WARN_BYTES``).
    """
    x = resolve_to(x) if x.pending else x
    i = x.dims.index(dim)
    axes = x.spec.axes[i]
    dtype = np.dtype(dtype)
    if not axes or x.mesh.axes_size(axes) == 1:
        return _run(x, i, local, size, dtype)
    p = partner(x, dim, avoid)
    orig = x.spec.axes
    if p is None:  # 1-D: gather the entries ``local`` reads, transform, keep the own block
        return _gathered(x, axes, local, size, dtype, x.shape[0] if need is None else min(need, x.shape[0]))
    j = x.dims.index(p)
    target = tuple(() if t == i else orig[j] + axes if t == j else a for t, a in enumerate(orig))
    _warn_crowded(x, dim, p, target)
    y = _run(move_axes(x, target), i, local, size, dtype)
    return move_axes(y, orig) if back else y


def _gathered(x: ShardArray, axes: tuple[str, ...], local: Local, size: int, dtype: Any, need: int) -> ShardArray:
    """The 1-D fallback: one allgather of the first ``need`` entries of ``x`` over ``axes`` (each device sends
    what its block holds of them), ``local`` on them, each device keeping its own block of the result."""
    mesh = x.mesh
    k = mesh.axes_size(axes)
    nbytes = (k - 1) * -(-need // k) * x.dtype.itemsize
    if nbytes > route.GATHER_WARN_BYTES:
        warnings.warn(
            f"sa.fft: a 1-D transform of the split array {x.sizes} whose length has no two factors >= its {k} "
            f"devices allgathers its first {need} entries over mesh axes {tuple(axes)}, {nbytes} bytes received "
            f"per device: pad to a length with such factors (n=...), or split the array over fewer devices",
            GatherWarning,
            stacklevel=user_stacklevel(),
        )
    bounds = block_bounds(mesh, x.spec)
    pieces = [
        None if b is None else b[: max(0, min(bounds[d][0][1], need) - bounds[d][0][0])] for d, b in enumerate(x.shards)
    ]
    whole = mesh.comm.allgather(pieces, axes, 0)
    flat = ShardArray(mesh, Layout(x.dims, (need,), ((),)), x.dtype, whole)
    return move_axes(_run(flat, 0, local, size, dtype), x.spec.axes)


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


__all__ = ["along", "crowding", "partner", "resize", "splits"]
