"""Parallel sample sort with regular sampling (PSRS) of a 1-D dim split over mesh axes.

``sample_sort(mesh, axes, blocks, n, payload)`` sorts the 1-D array of ``n``
entries whose canonical ceil-blocks over ``axes`` are ``blocks`` (one per
device, ``None`` for a device this process does not hold) and returns the
blocks, in the same canonical layout, of the sorted keys (``payload=None``),
of the stable argsort (``payload="index"``, global int64 indices), or of a
payload array permuted like the keys (``payload`` = blocks of the same shape).

Every entry has the unique key ``(value, member, position in the member's
locally sorted block)``. With a stable local sort this is exactly the order
``(value, global index)`` (member order is block order), so the result is
stable and deterministic, and runs of equal values are cut between buckets
by position: equal values balance like distinct ones. NaN sorts last, -0.0
and 0.0 are equal (NumPy's order).

Steps and collectives (``p`` = the group size along ``axes``, ``m`` = a
device's block):

1. local sort (``np.sort``; ``np.argsort(kind="stable")`` when a payload
   rides along);
2. **allgather** of ``p - 1`` regular samples per device (3 int64 each:
   value bits, member, position); every device picks the same ``p - 1``
   global splitters;
3. each device cuts its sorted block at the splitters (``searchsorted``);
   **one alltoallv** sends bucket ``i`` to member ``i`` (per-pair counts;
   keys alone, or (key, payload) pairs as two int64 when a payload rides);
4. local merge of the received runs (a stable sort, NumPy's timsort, of the
   concatenation of ``p`` sorted runs: ``O(m log p)``, it finds the runs);
5. **allgather** of one int64 per device (its bucket's length), from which
   each bucket's global offset follows;
6. **one alltoallv** rebalancing the buckets into the canonical ceil-blocks
   (only the result: keys, indices or payload).

Traffic per device: about ``m`` entries in each alltoallv plus ``3(p - 1) + 1``
int64 in the allgathers. Regular sampling bounds every bucket by about
``2 m`` (Shi & Schaeffer 1992); ``LAST_PEAK`` holds the largest bucket of the
last call in units of ``ceil(n / p)`` so tests can check it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from ...chunks import group_chunk
from ...dtypes import wide_dtype
from ...mesh import Mesh

LAST_PEAK: dict[str, float] = {"elements": 0, "block": 0, "ratio": 0.0}
"""The last sample sort's largest bucket (``elements``), the canonical block ``ceil(n/p)`` and their ratio."""


def to_bits(a: np.ndarray) -> np.ndarray:
    """``a`` as int64 words that ``from_bits`` turns back exactly."""
    w = wide_dtype(a.dtype)
    return np.ascontiguousarray(a.astype(w, copy=False)).view(np.int64)


def from_bits(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The values ``to_bits`` packed, in ``dtype``."""
    return np.ascontiguousarray(bits).view(wide_dtype(dtype)).astype(dtype, copy=False)


def _local(block: np.ndarray, payload: Any, offset: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The sorted block and, when a payload rides along, the payload in that order."""
    if payload is None:
        return np.sort(block), None
    perm = np.argsort(block, kind="stable")
    if isinstance(payload, str):
        return block[perm], perm.astype(np.int64) + offset
    return block[perm], payload[perm]


def _samples(a: np.ndarray, member: int, p: int) -> np.ndarray:
    """``p - 1`` regular samples of the sorted block ``a``: rows (value bits, member, position); member -1 if none."""
    out = np.zeros((p - 1, 3), dtype=np.int64)
    m = len(a)
    if m == 0:
        out[:, 1] = -1
        return out
    pos = (np.arange(1, p, dtype=np.int64) * m) // p
    out[:, 0] = to_bits(a[pos])
    out[:, 1] = member
    out[:, 2] = pos
    return out


def _splitters(samples: np.ndarray, dtype: np.dtype, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``p - 1`` global splitters (values, members, positions) from everyone's samples."""
    s = samples[samples[:, 1] >= 0]
    vals = from_bits(s[:, 0].copy(), dtype)
    order = np.lexsort((s[:, 2], s[:, 1], vals))
    k = len(order)
    pick = order[(np.arange(1, p) * k) // p] if k else np.zeros(0, dtype=np.int64)
    return vals[pick], s[pick, 1], s[pick, 2]


def _cuts(a: np.ndarray, member: int, split: tuple[np.ndarray, np.ndarray, np.ndarray], p: int) -> np.ndarray:
    """Bucket boundaries in the sorted block ``a``: entry ``i`` counts the keys below splitter ``i``."""
    vals, members, pos = split
    if len(vals) == 0:  # no samples anywhere in the group: every block is empty
        return np.full(p - 1, len(a), dtype=np.int64)
    left = np.searchsorted(a, vals, side="left")
    right = np.searchsorted(a, vals, side="right")
    c = np.where(members > member, right, np.where(members < member, left, pos))
    return np.maximum.accumulate(c.astype(np.int64))


def _pieces(buf: np.ndarray, cuts: np.ndarray) -> list[np.ndarray]:
    edges = np.concatenate([[0], cuts, [len(buf)]])
    return [buf[edges[i] : edges[i + 1]] for i in range(len(edges) - 1)]


def sample_sort(
    mesh: Mesh,
    axes: tuple[str, ...],
    blocks: Sequence[Any],
    n: int,
    payload: Any = None,
    dtype: Any = None,
) -> list[Any]:
    """Sort a 1-D dim of ``n`` entries split over ``axes`` (canonical blocks); see the module docstring.

    Args:
        mesh: the mesh.
        axes: the mesh axes splitting the dim, major first (the layout's order).
        blocks: per device its 1-D block of keys (``None`` where not held).
        n: the dim's global size.
        payload: ``None`` (return sorted keys), ``"index"`` (return the stable
            argsort as global int64 indices) or per device a 1-D block, the
            same length as the device's keys, permuted with them.
        dtype: the keys' dtype (taken from a held block when None).

    Returns:
        Per device its block of the result in the canonical layout over ``axes``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> blocks = [np.array([3.0, 1.0]), np.array([2.0]), np.array([0.0, 5.0]), np.array([4.0])]  # 6 = 2+1+2+1
        >>> [b.tolist() for b in sample_sort(mesh, ("row", "col"), blocks, 6)]
        [[0.0, 1.0], [2.0], [3.0, 4.0], [5.0]]
    """
    groups = mesh.groups(axes)
    p = len(groups[0])
    radix = [mesh.axis_size(a) for a in axes]
    held = [b for b in blocks if b is not None]
    dtype = np.dtype(dtype if dtype is not None else held[0].dtype)
    pdtype = None
    if payload is not None and not isinstance(payload, str):
        pdtype = next(b for b in payload if b is not None).dtype
    member_of: dict[int, int] = {d: j for g in groups for j, d in enumerate(g)}
    # 1. local sort, 2. samples
    local: list[Any] = [None] * mesh.size
    samples: list[Any] = [None] * mesh.size
    for d, b in enumerate(blocks):
        if b is None:
            continue
        j = member_of[d]
        off = group_chunk(0, n, radix, j)[0]
        local[d] = _local(b, None if payload is None else payload if isinstance(payload, str) else payload[d], off)
        samples[d] = _samples(local[d][0], j, p)
    gathered = mesh.comm.allgather(samples, axes, 0)
    # 3. cut and exchange buckets
    send: list[Any] = [None] * mesh.size
    for d, item in enumerate(local):
        if item is None:
            continue
        a, pl = item
        cuts = _cuts(a, member_of[d], _splitters(gathered[d], dtype, p), p)
        buf = a if pl is None else np.stack([to_bits(a), to_bits(pl)], axis=1)
        send[d] = _pieces(buf, cuts)
    local = [None] * mesh.size  # the sorted blocks are no longer needed
    recv = mesh.comm.alltoallv(send, axes, 0)
    send = [None] * mesh.size
    # 4. merge
    bucket: list[Any] = [None] * mesh.size
    for d, r in enumerate(recv):
        if r is None:
            continue
        if payload is None:
            bucket[d] = np.sort(r, kind="stable")  # timsort merges the p sorted runs in O(m log p)
        else:
            keys = from_bits(r[:, 0].copy(), dtype)
            order = np.argsort(keys, kind="stable")
            bits = r[order, 1]
            # a block payload (not a str): pdtype was taken from it
            bucket[d] = bits if isinstance(payload, str) else from_bits(bits, cast(np.dtype, pdtype))
    recv = [None] * mesh.size
    # 5. bucket offsets
    lengths = [None if b is None else np.array([len(b)], dtype=np.int64) for b in bucket]
    all_lengths = mesh.comm.allgather(lengths, axes, 0)
    held_lengths = next(x for x in all_lengths if x is not None)
    block = -(-n // p) if p else 0
    LAST_PEAK.update(elements=int(held_lengths.max()), block=block, ratio=float(held_lengths.max()) / max(block, 1))
    # 6. rebalance into the canonical blocks
    out_bounds = [group_chunk(0, n, radix, i) for i in range(p)]
    send = [None] * mesh.size
    for d, b in enumerate(bucket):
        if b is None:
            continue
        counts = all_lengths[d]
        lo = int(counts[: member_of[d]].sum())
        hi = lo + len(b)
        pieces = []
        for olo, ohi in out_bounds:
            s, e = max(lo, olo), min(hi, ohi)
            pieces.append(b[s - lo : e - lo] if s < e else b[:0])
        send[d] = pieces
    return list(mesh.comm.alltoallv(send, axes, 0))


__all__ = ["LAST_PEAK", "from_bits", "sample_sort", "to_bits"]
