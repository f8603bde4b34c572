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
and 0.0 are equal (NumPy's order); complex values take NumPy's order too (``order.py``: lexicographic, NaNs
last), their keys and payloads traveling as int64 words (two per complex value).

Steps and collectives (``p`` = the group size along ``axes``, ``m`` = a
device's block):

1. local sort (``stable_sort``: the array module's sort, equal floats that
   differ put back in input order; ``xp.argsort(kind="stable")`` when a
   payload rides along);
2. **allgather** of ``p - 1`` regular samples per device (3 int64 each:
   member, position, value bits; 4 for complex values); every device picks the same ``p - 1``
   global splitters (a stable multi-key sort of the ``p (p - 1)`` samples);
3. each device cuts its sorted block at the splitters (``searchsorted``);
   **one alltoallv** sends bucket ``i`` to member ``i`` (per-pair counts;
   keys alone, or (key, payload) pairs as two int64 when a payload rides);
4. local merge of the received runs: keys alone, ``stable_sort`` of the
   concatenation (NumPy's SIMD quicksort, faster on the runs than its
   timsort's merge); with a payload, a stable argsort (timsort finds the
   ``p`` runs: ``O(m log p)``);
5. **allgather** of one int64 per device (its bucket's length), from which
   each bucket's global offset follows;
6. **one alltoallv** rebalancing the buckets into the canonical ceil-blocks
   (only the result: keys, indices or payload).

Everything runs on the backend's array module (``mesh.backend.xp``: NumPy or
CuPy), each device's work in its device scope; bfloat16 keys are sorted and
searched as float32 (``key_dtype``: exact, and CuPy's sorts have no bfloat16)
but travel as bfloat16. **Host reads** (each a device
sync on a GPU), per device and per call, only what the exchanges need: the
``p - 1`` bucket cuts of step 3 (to cut the block into the alltoallv's
pieces) and the ``p`` bucket lengths gathered in step 5 (to cut the bucket
into the rebalancing pieces): ``2p - 1`` int64 in two reads. The splitters
never leave the device.

Traffic per device: about ``m`` entries in each alltoallv plus ``3(p - 1) + 1``
int64 in the allgathers. Regular sampling bounds every bucket by about
``2 m`` (Shi & Schaeffer 1992); ``LAST_PEAK`` holds the largest bucket of the
last call in units of ``ceil(n / p)`` so tests can check it.

On a meta mesh (``backend="meta"``: shapes only) the same four collectives are issued, in the same order, with
the same dtypes and the same sizes where they do not depend on the values (both allgathers). The two alltoallvs'
sizes do depend on them; meta logs the planner's model of data in random order (``_modeled``): every device cuts
its block into ``p`` equal pieces (sizes differing by at most one, the expected cuts of random data: regular
sampling puts the splitters near the global ``p``-quantiles), so bucket ``i`` receives the ``i``-th piece of every
block; the rebalancing then moves the buckets into the canonical blocks exactly as the real path does for those
lengths. Sorted or constant data send less (down to nothing beyond neighbours' overlaps), skewed data up to the
``2 m`` bound: the model is the typical cost, not a bound.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from ...backend.meta import MetaArray
from ...chunks import group_chunk
from ...comm.parallel import run_all, usable
from ...mesh import Mesh
from . import order
from .order import from_bits, from_words, key_dtype, lex_order, sort_keys, stable_sort, to_bits, width, words

LAST_PEAK: dict[str, float] = {"elements": 0, "block": 0, "ratio": 0.0}
"""The last sample sort's largest bucket (``elements``), the canonical block ``ceil(n/p)`` and their ratio."""


def read_counts(mesh: Mesh, arrays: Sequence[Any]) -> list[Any]:
    """Small int arrays of the devices (``None`` where not held) read to the host as int64 NumPy arrays.

    The one way the sorting ops move data to the host: ``mesh.backend.to_numpy``, each read a device sync
    on a GPU, explicit and only of counts and cuts. An array several devices share (an emulated
    collective's result, replicas) is read once.

    Example:
        >>> mesh = sa.Mesh({"row": 2})
        >>> read_counts(mesh, [mesh.backend.xp.arange(2), None])
        [array([0, 1]), None]
    """
    seen: dict[int, np.ndarray] = {}
    out: list[Any] = [None] * len(arrays)
    for d, a in enumerate(arrays):
        if a is None:
            continue
        if id(a) not in seen:
            seen[id(a)] = mesh.backend.to_numpy(a).astype(np.int64)
        out[d] = seen[id(a)]
    return out


def _once(mesh: Mesh, keys: Sequence[Any], fn: Any, nbytes: int = 0) -> list[Any]:
    """``fn(d)`` for every device ``d`` whose ``keys[d]`` is not None, computed once per distinct key.

    Devices that hold the very same buffers (an emulated mesh's replicas along the other axes) give equal keys
    and share one result, as the emulated communicator shares a collective's: the replicas' work is done once.
    Distinct NumPy blocks of one process run on the copy pool at once (``comm.parallel``: sorts and searches
    release the GIL) when they are big (``nbytes`` in all); on GPUs each runs in its device's scope.
    """
    scope = mesh.backend.scope
    first: dict[Any, int] = {}
    for d, k in enumerate(keys):
        if k is not None and k not in first:
            first[k] = d

    def job(d: int) -> Any:
        with scope(d):
            return fn(d)

    reps = list(first.values())
    if len(reps) > 1 and usable(mesh.backend):
        results = run_all([functools.partial(job, d) for d in reps], nbytes, mesh.backend)
    else:
        results = [job(d) for d in reps]
    done = dict(zip(first, results))
    return [None if k is None else done[k] for k in keys]


def _local(xp: Any, block: Any, payload: Any, offset: int) -> tuple[Any, Any]:
    """The sorted block and, when a payload rides along, the payload in that order."""
    if payload is None:
        return order.seq_sort(xp, block), None
    perm = order.seq_argsort(xp, block)
    if isinstance(payload, str):
        return block[perm], perm.astype(np.int64) + offset
    return block[perm], payload[perm]


def _samples(xp: Any, a: Any, member: int, p: int) -> Any:
    """``p - 1`` regular samples of the sorted block ``a``: rows (member, position, value words); member -1 if
    none."""
    cols = a.shape[1] if a.ndim == 2 else 1
    out = xp.zeros((p - 1, 2 + width(a.dtype) * cols), dtype=np.int64)
    m = len(a)
    if m == 0:
        out[:, 0] = -1
        return out
    pos = (xp.arange(1, p, dtype=np.int64) * m) // p
    out[:, 0] = member
    out[:, 1] = pos
    out[:, 2:] = words(xp, a[pos])
    return out


def _splitters(xp: Any, samples: Any, dtype: np.dtype, p: int, cols: int | None) -> tuple[Any, Any, Any]:
    """The ``p - 1`` global splitters (values, members, positions) from everyone's samples, on the device.

    The valid samples (member >= 0) sorted by (value, member, position) come first, the others after them;
    splitter ``i`` is valid sample ``i k / p`` of the ``k`` valid ones. If there is none (every block of the
    group is empty) the splitters are invalid rows, which cut nothing (``_cuts`` of an empty block is 0).
    Values are ordered by ``order.order_keys`` (NumPy's order, complex values too).
    """
    members, pos = samples[:, 0], samples[:, 1]
    vals = from_words(xp, samples[:, 2:], dtype, cols)
    valid = members >= 0
    by = lex_order(xp, [pos, members, *order.seq_keys(xp, vals), ~valid])
    k = xp.sum(valid.astype(np.int64))
    pick = by[(xp.arange(1, p, dtype=np.int64) * k) // p]
    return vals[pick], members[pick], pos[pick]


def _cuts(xp: Any, a: Any, member: int, split: tuple[Any, Any, Any]) -> Any:
    """Bucket boundaries in the sorted block ``a`` (on the device): entry ``i`` counts the keys below splitter ``i``
    in the order (value, member, position)."""
    vals, members, pos = split
    left = order.searchsorted(xp, a, vals, side="left")
    right = order.searchsorted(xp, a, vals, side="right")
    return xp.where(members > member, right, xp.where(members < member, left, pos))


def _pieces(buf: Any, cuts: np.ndarray) -> list[Any]:
    """``buf`` cut at the host ``cuts`` into ``len(cuts) + 1`` consecutive pieces."""
    edges = [0, *cuts.tolist(), len(buf)]
    return [buf[edges[i] : edges[i + 1]] for i in range(len(edges) - 1)]


def sample_sort(
    mesh: Mesh,
    axes: tuple[str, ...],
    blocks: Sequence[Any],
    n: int,
    payload: Any = None,
    dtype: Any = None,
    keep: bool = False,
) -> list[Any]:
    """Sort a 1-D dim of ``n`` entries split over ``axes`` (canonical blocks); see the module docstring.

    Device work stays on the backend's array module; each device reads two small arrays to the host (the
    ``p - 1`` cuts of its block, the ``p`` bucket lengths of its group), the counts its exchanges need.

    Args:
        mesh: the mesh.
        axes: the mesh axes splitting the dim, major first (the layout's order).
        blocks: per device its 1-D block of keys (``None`` where not held), arrays of ``mesh.backend.xp``.
        n: the dim's global size.
        payload: ``None`` (return sorted keys), ``"index"`` (return the stable
            argsort as global int64 indices) or per device a 1-D block, the
            same length as the device's keys, permuted with them.
        dtype: the keys' dtype (taken from a held block when None).
        keep: with a payload, return per device the pair (sorted keys, payload) of its block.

    Keys may be 1-D blocks of values or 2-D blocks of rows (``(length, columns)``, the same number of columns on
    every device), which sort lexicographically (``order.seq_keys``): ``np.unique(..., axis=)``'s order.

    Returns:
        Per device its block of the result in the canonical layout over ``axes``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> host = [np.array([3.0, 1.0]), np.array([2.0]), np.array([0.0, 5.0]), np.array([4.0])]  # 6 = 2+1+2+1
        >>> blocks = [mesh.backend.from_numpy(b) for b in host]
        >>> [mesh.backend.to_numpy(b).tolist() for b in sample_sort(mesh, ("row", "col"), blocks, 6)]
        [[0.0, 1.0], [2.0], [3.0, 4.0], [5.0]]
    """
    if not mesh.backend.has_data:
        return _modeled(mesh, axes, blocks, n, payload, dtype, keep)
    xp, scope = mesh.backend.xp, mesh.backend.scope
    groups = mesh.groups(axes)
    p = len(groups[0])
    radix = [mesh.axis_size(a) for a in axes]
    held = [b for b in blocks if b is not None]
    dtype = np.dtype(dtype if dtype is not None else held[0].dtype)
    kdtype = key_dtype(dtype)  # keys are sorted and searched in it; they travel in dtype
    cols = held[0].shape[1] if held[0].ndim == 2 else None  # rows of keys: compared lexicographically
    pdtype = None
    if payload is not None and not isinstance(payload, str):
        pdtype = np.dtype(next(b for b in payload if b is not None).dtype)
    member_of: dict[int, int] = {d: j for g in groups for j, d in enumerate(g)}
    nbytes = sum(int(getattr(b, "nbytes", 0)) for b in held)

    # 1. local sort, 2. samples (replicas, the same buffer on devices of one member, computed once)
    def sort_block(d: int) -> tuple[Any, Any]:
        j = member_of[d]
        pl = payload if payload is None or isinstance(payload, str) else payload[d]
        item = _local(xp, sort_keys(blocks[d]), pl, group_chunk(0, n, radix, j)[0])
        return item, _samples(xp, item[0], j, p)

    pay_id = (lambda d: None) if payload is None or isinstance(payload, str) else (lambda d: id(payload[d]))
    sorted_ = _once(
        mesh,
        [None if b is None else (id(b), pay_id(d), member_of[d]) for d, b in enumerate(blocks)],
        sort_block,
        nbytes,
    )
    local = [None if r is None else r[0] for r in sorted_]
    gathered = mesh.comm.allgather([None if r is None else r[1] for r in sorted_], axes, 0)
    sorted_ = []

    # 3. cut (one host read of the p - 1 cuts per device) and exchange buckets
    def cut(d: int) -> list[Any]:
        a, pl = cast(tuple[Any, Any], local[d])
        cuts_dev = _cuts(xp, a, member_of[d], _splitters(xp, gathered[d], kdtype, p, cols))
        cuts = np.maximum.accumulate(read_counts(mesh, [cuts_dev])[0])  # host: the piece sizes
        buf = a.astype(dtype, copy=False) if pl is None else xp.concatenate([words(xp, a), words(xp, pl)], axis=1)
        return _pieces(buf, cuts)

    send = _once(
        mesh, [None if a is None else (id(a), id(gathered[d]), member_of[d]) for d, a in enumerate(local)], cut, nbytes
    )
    local = [None] * mesh.size  # the sorted blocks are no longer needed
    recv = mesh.comm.alltoallv(send, axes, 0)
    send = [None] * mesh.size

    # 4. merge
    def merge(d: int) -> Any:
        r = recv[d]
        if payload is None:  # the p sorted runs, in device order, sorted again with the array module's own sort:
            # NumPy's SIMD quicksort (x86-simd-sort, Highway) outruns its timsort's merge of the runs (2^21 float32
            # in 2 runs: 7.5 ms against 10.9 on an AVX-512 CPU), and ``stable_sort`` puts equal floats that differ
            # (-0.0 and 0.0, NaNs) back in the input's order: the runs come in device order, each in its own
            return order.seq_sort(xp, r).astype(dtype, copy=False)
        w = width(kdtype) * (1 if cols is None else cols)
        by = order.seq_argsort(xp, from_words(xp, r[:, :w], kdtype, cols))
        if keep:  # the (key, payload) words: decoded after the rebalancing
            return r[by]
        bits = r[:, w:][by]
        return bits[:, 0] if pdtype is None else from_words(xp, bits, pdtype)

    bucket = _once(mesh, [None if r is None else id(r) for r in recv], merge, nbytes)
    recv = [None] * mesh.size
    # 5. bucket offsets (one host read of the group's p lengths per device)
    lengths: list[Any] = [None] * mesh.size
    for d, b in enumerate(bucket):
        if b is not None:
            with scope(d):
                lengths[d] = xp.full(1, len(b), dtype=np.int64)
    host_lengths = read_counts(mesh, mesh.comm.allgather(lengths, axes, 0))
    held_lengths = next(x for x in host_lengths if x is not None)
    block = -(-n // p) if p else 0
    LAST_PEAK.update(elements=int(held_lengths.max()), block=block, ratio=float(held_lengths.max()) / max(block, 1))
    # 6. rebalance into the canonical blocks
    out_bounds = [group_chunk(0, n, radix, i) for i in range(p)]

    def rebalance(d: int) -> list[Any]:
        b = bucket[d]
        lo = int(host_lengths[d][: member_of[d]].sum())
        hi = lo + len(b)
        pieces = []
        for olo, ohi in out_bounds:
            s, e = max(lo, olo), min(hi, ohi)
            pieces.append(b[s - lo : e - lo] if s < e else b[:0])
        return pieces

    send = _once(mesh, [None if b is None else (id(b), member_of[d]) for d, b in enumerate(bucket)], rebalance)
    out = list(mesh.comm.alltoallv(send, axes, 0))
    if not keep:
        return out
    w = width(kdtype) * (1 if cols is None else cols)

    def unpack(d: int) -> tuple[Any, Any]:
        r = out[d]
        keys = from_words(xp, r[:, :w], kdtype, cols).astype(dtype, copy=False)
        return keys, r[:, w] if pdtype is None else from_words(xp, r[:, w:], pdtype)

    return _once(mesh, [None if r is None else id(r) for r in out], unpack)


def _modeled(
    mesh: Mesh, axes: tuple[str, ...], blocks: Sequence[Any], n: int, payload: Any, dtype: Any, keep: bool
) -> list[Any]:
    """``sample_sort`` on meta blocks: the real path's collectives, its value-dependent sizes modeled (module
    docstring: every block cut into ``p`` equal pieces); the result blocks are the canonical ones."""
    groups = mesh.groups(axes)
    p = len(groups[0])
    radix = [mesh.axis_size(a) for a in axes]
    held = [b for b in blocks if b is not None]
    dtype = np.dtype(dtype if dtype is not None else held[0].dtype)
    cols = held[0].shape[1] if held[0].ndim == 2 else None
    row = () if cols is None else (cols,)
    kw = width(key_dtype(dtype)) * (1 if cols is None else cols)  # int64 words of a key
    pdtype = None
    if payload is not None and not isinstance(payload, str):
        pdtype = np.dtype(next(b for b in payload if b is not None).dtype)
    pw = 0 if payload is None else 1 if pdtype is None else width(pdtype)
    member_of: dict[int, int] = {d: j for g in groups for j, d in enumerate(g)}
    # 2. samples: (member, position, value words) rows
    mesh.comm.allgather([None if b is None else MetaArray((p - 1, 2 + kw), np.int64) for b in blocks], axes, 0)

    # 3. the buckets: keys alone, or (key, payload) words
    def piece(k: int) -> MetaArray:
        return MetaArray((k, *row), dtype) if payload is None else MetaArray((k, kw + pw), np.int64)

    def cuts(m: int) -> list[MetaArray]:
        return [piece(m * (i + 1) // p - m * i // p) for i in range(p)]

    recv = mesh.comm.alltoallv([None if b is None else cuts(b.shape[0]) for b in blocks], axes, 0)
    # 5. the bucket lengths
    mesh.comm.allgather([None if r is None else MetaArray((1,), np.int64) for r in recv], axes, 0)
    length = {d: r.shape[0] for d, r in enumerate(recv) if r is not None}
    block = -(-n // p) if p else 0
    peak = max(length.values(), default=0)
    LAST_PEAK.update(elements=peak, block=block, ratio=float(peak) / max(block, 1))
    # 6. rebalance into the canonical blocks
    out_bounds = [group_chunk(0, n, radix, i) for i in range(p)]

    def bucket(k: int) -> MetaArray:  # (what travels: the (key, payload) words, the keys, or the payload)
        if keep:
            return MetaArray((k, kw + pw), np.int64)
        return MetaArray((k, *row), dtype) if payload is None else MetaArray((k,), pdtype or np.int64)

    group_of = {d: g for g in groups for d in g}
    send: list[Any] = [None] * mesh.size
    for d in length:
        g = group_of[d]
        lo = sum(length[e] for e in g[: member_of[d]])
        hi = lo + length[d]
        send[d] = [bucket(max(0, min(hi, ohi) - max(lo, olo))) for olo, ohi in out_bounds]
    out = list(mesh.comm.alltoallv(send, axes, 0))
    if not keep:
        return out
    pay = np.dtype(np.int64) if pdtype is None else pdtype
    return [None if r is None else (MetaArray((r.shape[0], *row), dtype), MetaArray((r.shape[0],), pay)) for r in out]


__all__ = [
    "LAST_PEAK",
    "from_bits",
    "key_dtype",
    "lex_order",
    "read_counts",
    "sample_sort",
    "sort_keys",
    "stable_sort",
    "to_bits",
]
