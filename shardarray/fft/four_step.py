"""The four-step (Bailey) FFT along a split dim: three alltoalls of about one block each, no gather.

It serves a split 1-D array (no other dim can take the split) and a dim whose other dims are too short to take
it evenly (``applies``): every other dim is then a batch that stays where it is (each block is viewed as rows
``(entries, batch)``; the index maps below act on the entries). For one column:

A length ``n = n1·n2`` DFT along a dim split over mesh axes ``A`` (``k``
devices, canonical nested ceil-blocks) is computed as

1. **alltoall 1** (``flat -> columns``): view the input as ``a[j1, j2] =
   x[j1·n2 + j2]`` and give member ``i`` the columns ``j2`` of its ceil-block
   of ``n2`` (all ``n1`` rows). Truncation/zero-padding of the input to ``n``
   is folded in (entries ``>= n`` are not sent, missing ones are zeros).
2. local: FFT along ``j1`` (length ``n1``), then the twiddles
   ``exp(∓2πi·k1·j2/n)`` from global indices (times the ``norm`` scale).
3. **alltoall 2** (``columns -> rows``): member ``i`` gets the rows ``k1`` of
   its ceil-block of ``n1`` (all ``n2`` columns).
4. local: FFT along ``j2`` (length ``n2``): ``c[k1, k2] = X[k1 + n1·k2]``.
5. **alltoall 3** (``rows -> flat``): the output index ``k = k1 + n1·k2``
   (``merge_dims((k2, k1))``) into the canonical ceil-blocks of the output
   size; a truncated output (rfft's ``n//2 + 1``) is folded in.

Each alltoall is one ``Communicator.alltoallv`` over ``A``; a device sends at
most its own block (``(k-1)/k`` of it when ``k²`` divides ``n``), so the whole
transform sends about ``3·(k-1)/k`` blocks per device: 3 alltoalls (the
transposition method on a 2-D array costs 2, but a 1-D array has no other dim
to take the split; the old fallback was one allgather of ``(k-1)`` blocks).
``n1`` and ``n2`` are the divisor pair nearest ``√n`` with both ``>= k``
(preferring multiples of ``k``: even blocks); a prime ``n`` or one too small
to factor that way has no such pair: Bluestein's algorithm (``bluestein.py``)
computes it with three four-step transforms of a length ``m >= 2n - 1`` that
factors, or (at most ``GATHER_MAX_BYTES`` per device) the gather fallback.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..chunks import group_chunk
from ..layout import Layout
from .pencil import crowding, partner

CROWDED = 1.5
"""The transposition method's crowding (``pencil.crowding``) above which a factorable length takes the four-step
algorithm: the transposition's two alltoalls then move more than the four-step's three (each at most a block)."""

Pre = Callable[[Any, int], Any]
"""``pre(block, start)``: a local map of an input block whose first entry has global index ``start``."""


@functools.lru_cache(maxsize=256)
def factor(n: int, k: int) -> tuple[int, int] | None:
    """``(n1, n2)`` with ``n1·n2 = n``, both ``>= k``, nearest ``√n`` (multiples of ``k`` first); None if none."""
    best, key = None, None
    for d in range(k, math.isqrt(n) + 1):
        if n % d or n // d < k:
            continue
        for n1 in {d, n // d}:
            score = ((n1 % k != 0) + ((n // n1) % k != 0), abs(math.log(n1) - math.log(n // n1)), -n1)
            if key is None or score < key:
                best, key = (n1, n // n1), score
    return best


def scale(n: int, norm: str, inverse: bool) -> float:
    """The normalisation factor of a length-``n`` transform (the sub-transforms are unscaled)."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") != inverse else 1.0


def _chunks(n: int, radix: tuple[int, ...]) -> list[tuple[int, int]]:
    return [group_chunk(0, n, radix, i) for i in range(math.prod(radix))]


def _grid(rows: tuple[int, int], cols: tuple[int, int], ncols: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-major ``(r, c)`` with ``r`` in ``rows``, ``c`` in ``cols`` and ``lo <= r·ncols + c < hi`` (ascending)."""
    if hi <= lo or cols[1] <= cols[0] or rows[1] <= rows[0]:
        e = np.zeros(0, np.int64)
        return e, e
    r0, r1 = max(rows[0], lo // ncols), min(rows[1], (hi - 1) // ncols + 1)
    if r1 <= r0:
        e = np.zeros(0, np.int64)
        return e, e
    r, c = np.meshgrid(np.arange(r0, r1, dtype=np.int64), np.arange(*cols, dtype=np.int64), indexing="ij")
    f = r * ncols + c
    keep = (f >= lo) & (f < hi)
    return r[keep], c[keep]


@functools.lru_cache(maxsize=32)
def _plan(m: int, lim: int, n1: int, n2: int, size: int, keep: int, radix: tuple[int, ...]) -> dict[str, Any]:
    """Index maps of alltoalls 1 and 3 (per member: what it sends whom, where received pieces go)."""
    k = math.prod(radix)
    flat_in, c1, c2, flat_out = _chunks(m, radix), _chunks(n1, radix), _chunks(n2, radix), _chunks(size, radix)
    send1, recv1, send3, recv3 = [], [], [], []
    for j in range(k):
        a, b = flat_in[j]
        out, into = [], []
        for i in range(k):
            r, c = _grid((0, n1), c2[i], n2, a, min(b, lim))  # j's flat entries in i's columns
            out.append(r * n2 + c - a)
            r, c = _grid((0, n1), c2[j], n2, *flat_in[i][:1], min(flat_in[i][1], lim))
            into.append(r * (c2[j][1] - c2[j][0]) + c - c2[j][0])  # where i's entries land in j's columns
        send1.append(out)
        recv1.append(np.concatenate(into))
        out, into = [], []
        for i in range(k):
            k2, k1 = _grid((0, n2), c1[j], n1, flat_out[i][0], min(flat_out[i][1], keep))  # j's rows -> i's flat
            out.append((k1 - c1[j][0]) * n2 + k2)
            k2, k1 = _grid((0, n2), c1[i], n1, flat_out[j][0], min(flat_out[j][1], keep))  # i's rows -> j's flat
            into.append(k2 * n1 + k1 - flat_out[j][0])
        send3.append(out)
        recv3.append(np.concatenate(into))
    return {"c1": c1, "c2": c2, "flat_out": flat_out, "send1": send1, "recv1": recv1, "send3": send3, "recv3": recv3}


def _alltoallv(x: Any, axes: tuple[str, ...], make: Callable[[int, Any], list[Any]]) -> list[Any]:
    """One alltoallv of 2-D (entries, batch) pieces over ``axes``: ``make(member, block)`` gives a member's pieces,
    joined along the entries."""
    mesh = x.mesh
    send: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        for j, d in enumerate(group):
            if x.shards[d] is not None:
                send[d] = make(j, x.shards[d])
    return mesh.comm.alltoallv(send, axes, 0)


def four_step(
    x: ShardArray,
    dim: str,
    n: int,
    inverse: bool,
    norm: str,
    size: int,
    keep: int | None = None,
    lim: int | None = None,
    pre: Pre | None = None,
    dtype: Any = np.complex128,
    weights: Callable[[np.ndarray], np.ndarray] | None = None,
) -> ShardArray:
    """The length-``n`` DFT along the split dim ``dim`` of ``x`` (inverse: the IDFT), as ``size`` entries there.

    Input entries ``>= min(n, lim)`` are ignored (zero-padding/truncation to
    ``n`` is folded into alltoall 1); output entry ``t < min(n, keep, size)``
    is ``X[t]``, the rest zeros (folded into alltoall 3). ``pre`` maps input
    blocks locally first (Hermitian weights; ``dim`` first). ``weights(j)``:
    factors of the input entries from their global indices ``j`` (an int64
    array), applied after alltoall 1, so entries travel in ``x``'s dtype (a
    real input stays real on the wire; Bluestein's chirp). ``dtype``: the
    complex dtype. Every other dim is a batch: its blocks stay where they are
    (the groups of ``dim``'s axes hold the same batch block). The result has
    ``x``'s layout, ``dim`` of ``size`` in canonical ceil-blocks.

    Collectives: three alltoalls (``alltoallv``) over ``dim``'s axes, each
    sending at most a device's block; none other.
    """
    mesh = x.mesh
    xp, data = mesh.backend.xp, mesh.backend.has_data
    fft = mesh.backend.fft if data else None  # (meta shards: shapes only, nothing to transform)
    i_dim = x.dims.index(dim)
    axes = x.spec.axes[i_dim]
    radix = tuple(mesh.axis_size(a) for a in axes)
    m = x.shape[i_dim]
    n1, n2 = cast("tuple[int, int]", factor(n, math.prod(radix)))  # callers check applies(): n factors
    lim = min(m, n, m if lim is None else lim)
    keep = min(n, size, size if keep is None else keep)
    P = _plan(m, lim, n1, n2, size, keep, radix)
    c1, c2, flat_out = P["c1"], P["c2"], P["flat_out"]
    dtype = np.dtype(dtype)
    flat_in = _chunks(m, radix)
    sign = 1.0 if inverse else -1.0
    sub = "ifft" if inverse else "fft"
    sub_norm = "forward" if inverse else "backward"  # both unscaled

    def take(b: Any, idx: np.ndarray) -> Any:
        if not data:
            return xp.zeros((idx.size, b.shape[1]), dtype=b.dtype)
        return b[xp.asarray(idx)] if idx.size else b[:0]

    def make1(j: int, b: Any) -> list[Any]:
        if pre is not None and data:
            b = pre(b, flat_in[j][0])
        return [take(b, idx) for idx in P["send1"][j]]

    rows_in = _Blocks(mesh, [None if b is None else _rows(xp, b, i_dim) for b in x.shards])
    recv = _alltoallv(rows_in, axes, make1)

    def stage2(i: int, buf: Any) -> Any:
        w = c2[i][1] - c2[i][0]
        cols = xp.zeros((n1 * w, buf.shape[1]), dtype=dtype)
        if data and buf.size:
            cols[xp.asarray(P["recv1"][i])] = buf
        cols = cols.reshape(n1, w, buf.shape[1])
        if weights is not None and data and cols.size:
            j = np.arange(n1, dtype=np.int64)[:, None] * n2 + np.arange(*c2[i], dtype=np.int64)[None, :]
            cols = cols * xp.asarray(weights(j).astype(dtype)[:, :, None])
        if data and cols.size:
            cols = getattr(fft, sub)(cols, axis=0, norm=sub_norm).astype(dtype, copy=False)
            k1 = np.arange(n1, dtype=np.int64)[:, None, None]
            j2 = np.arange(*c2[i], dtype=np.int64)[None, :, None]
            tw = np.exp((sign * 2j * np.pi / n) * ((k1 * j2) % n)) * scale(n, norm, inverse)
            cols = cols * xp.asarray(tw.astype(dtype))
        return cols

    mid = _shards(mesh, axes, recv, stage2)

    def make2(j: int, b: Any) -> list[Any]:
        return [b[lo:hi].reshape((hi - lo) * b.shape[1], b.shape[2]) for lo, hi in c1]

    recv = _alltoallv(_Blocks(mesh, mid), axes, make2)

    def stage3(i: int, buf: Any) -> Any:
        h, batch = c1[i][1] - c1[i][0], buf.shape[1]
        parts, pos = [], 0
        for lo, hi in c2:
            parts.append(buf[pos : pos + h * (hi - lo)].reshape(h, hi - lo, batch))
            pos += h * (hi - lo)
        rows = xp.concatenate(parts, axis=1) if parts else xp.zeros((h, 0, batch), dtype=dtype)
        if data and rows.size:
            rows = getattr(fft, sub)(rows, axis=1, norm=sub_norm).astype(dtype, copy=False)
        return rows.reshape(h * n2, batch)

    rows = _shards(mesh, axes, recv, stage3)
    recv = _alltoallv(_Blocks(mesh, rows), axes, lambda j, b: [take(b, idx) for idx in P["send3"][j]])

    def place(i: int, buf: Any) -> Any:
        out = xp.zeros((flat_out[i][1] - flat_out[i][0], buf.shape[1]), dtype=dtype)
        if data and buf.size:
            out[xp.asarray(P["recv3"][i])] = buf
        return out

    flat = _shards(mesh, axes, recv, place)
    shards = [None if b is None else _unrows(xp, b, x.shards[d].shape, i_dim) for d, b in enumerate(flat)]
    return ShardArray(mesh, Layout(x.dims, _resized(x.shape, i_dim, size), x.spec.axes), dtype, shards)


def _rows(xp: Any, b: Any, axis: int) -> Any:
    """The block ``b`` with ``axis`` first, as a 2-D (entries, batch) array."""
    t = xp.moveaxis(b, axis, 0) if axis else b
    return t.reshape(t.shape[0], math.prod(t.shape[1:]))


def _unrows(xp: Any, r: Any, like: tuple[int, ...], axis: int) -> Any:
    """The 2-D ``r`` (entries, batch) back in the shape of a block like ``like`` (``axis`` of ``r.shape[0]``)."""
    t = r.reshape((r.shape[0],) + like[:axis] + like[axis + 1 :])
    return xp.moveaxis(t, 0, axis) if axis else t


def _resized(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    return shape[:axis] + (size,) + shape[axis + 1 :]


def _shards(mesh: Any, axes: tuple[str, ...], recv: list[Any], fn: Callable[[int, Any], Any]) -> list[Any]:
    out: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        for i, d in enumerate(group):
            if recv[d] is not None:
                out[d] = fn(i, recv[d])
    return out


class _Blocks:
    """Just the shards (``_alltoallv`` needs ``mesh`` and ``shards``)."""

    def __init__(self, mesh: Any, shards: list[Any]) -> None:
        self.mesh, self.shards = mesh, shards


GATHER_MAX_BYTES = 65536
"""The most bytes a device may hold in the fallback of a length with no four-step factors (``gather_bytes``) for
the fallback to be kept; past it Bluestein's algorithm runs (``bluestein.py``). 64 KiB, the library's gather
warning threshold (``route.GATHER_WARN_BYTES``' default): below it the fallback's one collective moves fewer
bytes than Bluestein's nine alltoalls on fewer than about a dozen devices; past it, memory per device matters."""


def gather_bytes(x: ShardArray, dim: str, n: int, onto: str | None) -> int:
    """The most bytes a device holds in the fallback for a length-``n`` transform along ``dim`` (the allgather of
    a 1-D array: the whole transform; the transposition onto a short partner dim ``onto``: its share of the
    batch)."""
    i = x.dims.index(dim)
    width = max(n, x.shape[i])
    batch = math.prod(s for j, s in enumerate(x.shape) if j != i)
    share = 1.0
    if onto is not None:
        j = x.dims.index(onto)
        p = x.shape[j]
        devices = x.mesh.axes_size(x.spec.axes[j]) * x.mesh.axes_size(x.spec.axes[i])
        share = math.ceil(p / devices) / p if p else 0.0
    itemsize = 8 if np.dtype(x.dtype) in (np.float16, np.float32, np.complex64) else 16
    return int(width * batch * share * itemsize)


def applies(x: ShardArray, dim: str, n: int, avoid: tuple[str, ...] = ()) -> bool:
    """Whether a transform of length ``n`` along ``dim`` of ``x`` runs here (``split1d``: the four-step algorithm,
    or Bluestein's for a length it cannot factor) instead of the transposition method or the gather: ``dim``
    split (``k`` devices) and no other dim takes the split evenly enough for the transposition (``pencil.crowding``
    above ``CROWDED``: a 1-D array, or every other dim shorter than its devices times ``k``, where the
    transposition would pile the array on a few devices). A length ``n = n1·n2`` with both factors ``>= k`` takes
    the four-step; any other takes Bluestein when the fallback is a gather (a 1-D array, or crowding of 2 or more:
    a device holding two even shares or more) holding more than ``GATHER_MAX_BYTES`` on a device."""
    i = x.dims.index(dim)
    k = x.mesh.axes_size(x.spec.axes[i])
    if k <= 1:
        return False
    crowd = crowding(x, dim, avoid)
    if crowd <= CROWDED:
        return False
    if factor(n, k) is not None:
        return True
    return crowd >= 2 and gather_bytes(x, dim, n, partner(x, dim, avoid)) > GATHER_MAX_BYTES


def per_block(x: ShardArray, dim: str, fn: Callable[[Any, int], Any], dtype: Any) -> ShardArray:
    """``fn(block, start)`` on every block of ``x`` (``dim`` moved first; ``start``: the global offset of the
    block's first entry along ``dim``)."""
    mesh, i = x.mesh, x.dims.index(dim)
    axes = x.spec.axes[i]
    starts = _chunks(x.shape[i], tuple(mesh.axis_size(a) for a in axes))
    xp = mesh.backend.xp
    out: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        for j, d in enumerate(group):
            b = x.shards[d]
            if b is None:
                continue
            if not mesh.backend.has_data:
                out[d] = b.astype(dtype)
                continue
            t = xp.moveaxis(fn(xp.moveaxis(b, i, 0), starts[j][0]), 0, i)
            out[d] = t if t.dtype == dtype else t.astype(dtype)
    return ShardArray(mesh, x.spec, dtype, out)


__all__ = ["CROWDED", "GATHER_MAX_BYTES", "applies", "factor", "four_step", "gather_bytes", "per_block", "scale"]
