"""The array API's set functions on distributed arrays: ``unique_values``, ``unique_counts``, ``unique_inverse``,
``unique_all``.

All four flatten ``x`` (row-major, as the standard does) and share one
algorithm over the mesh axes that split ``x`` (``p`` devices per group, ``u``
= the distinct values of a device's block):

1. local ``np.unique`` of each block (values, counts, first index, inverse);
2. **allgather** of ``p - 1`` regular samples of the local uniques (2 int64
   each); every device picks the same ``p - 1`` value splitters;
3. **one alltoallv**: each device sends the uniques of bucket ``i`` to member
   ``i``: rows of int64, the value bits and, only where asked, the count,
   the first global flat index (also for the inverse of floats: it orders
   the NaNs) and the sender (1 int64 per unique for ``unique_values``, 2 for
   ``unique_counts``, 2 or 3 for ``unique_inverse``, 4 for ``unique_all``);
   a value goes to one bucket from every device (cuts by value), so
   duplicates meet on one device;
4. each bucket merges its rows (sort, sum counts, min first index);
5. **allgather** of one int64 per device: the buckets' lengths give each
   bucket's global offset and the number of unique values ``T``;
6. ``unique_inverse``/``unique_all`` only: **one alltoallv** returning each
   device's uniques' global ranks (``u`` int64), from which the inverse
   indices follow locally, in ``x``'s layout;
7. the result: if ``T <= REPLICATE_MAX`` (65536) the buckets are gathered
   onto every device (one alltoallv in which each device sends its bucket to
   every member: ``(p - 1)·T/p`` rows) and the result is **replicated**;
   otherwise one alltoallv rebalances the buckets into the canonical 1-D
   ceil-block layout of the new dim ``"unique"`` split over ``x``'s axes
   (about ``T/p`` rows per device).

Each NaN is distinct (the standard): NaNs never merge, and all of them go to
the last buckets. An unsplit ``x`` gives a replicated result with no
communication. The result's dim is named ``"unique"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, cast

import numpy as np

from ...array import ShardArray
from ...chunks import group_chunk
from ...core.common import mesh_order, require_array
from ...core.relayout import resolve
from ...core.tape import nondifferentiable
from ...errors import ArgumentError, BackendError, DTypeError
from ...layout import Layout, block_bounds
from .samplesort import from_bits, to_bits

REPLICATE_MAX = 65536
"""Results with at most this many unique values are replicated on every device; larger ones are split."""

DIM = "unique"


class UniqueAllResult(NamedTuple):
    values: ShardArray
    indices: ShardArray
    inverse_indices: ShardArray
    counts: ShardArray


class UniqueCountsResult(NamedTuple):
    values: ShardArray
    counts: ShardArray


class UniqueInverseResult(NamedTuple):
    values: ShardArray
    inverse_indices: ShardArray


def _check(x: Any, what: str) -> ShardArray:
    x = require_array(x, what)
    if x.dtype.kind not in "biufc" and x.dtype.name != "bfloat16":
        raise DTypeError(f"{what}: needs a numeric or bool array; got dtype {x.dtype} (array {x.sizes})")
    if not x.mesh.backend.has_data:
        raise BackendError(
            f"{what}: the number of unique values depends on the data, which the meta backend does not hold "
            f"(array {x.sizes}); run it on a NumPy or CuPy mesh"
        )
    return resolve(x, x.spec.axes)


def _width(dtype: np.dtype) -> int:
    """int64 words per value: 2 for complex (real and imaginary parts), else 1."""
    return 2 if dtype.kind == "c" else 1


def _enc(vals: np.ndarray) -> list[np.ndarray]:
    """Values as int64 columns (``_width`` of them) that ``_dec`` turns back exactly."""
    if vals.dtype.kind == "c":
        return [to_bits(np.ascontiguousarray(vals.real)), to_bits(np.ascontiguousarray(vals.imag))]
    return [to_bits(vals)]


def _dec(rows: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The values in the first ``_width`` columns of ``rows``."""
    if dtype.kind == "c":
        part = np.finfo(dtype).dtype
        out = np.empty(len(rows), dtype=dtype)
        out.real = from_bits(rows[:, 0].copy(), part)
        out.imag = from_bits(rows[:, 1].copy(), part)
        return out
    return from_bits(rows[:, 0].copy(), dtype)


def _local(
    b: np.ndarray,
    start: tuple[int, ...],
    shape: tuple[int, ...],
    fields: tuple[str, ...],
    inverse: bool,
    equal_nan: bool,
) -> tuple[Any, ...]:
    """Sorted local uniques of block ``b``: rows of ``fields`` (value bits, count, first global flat index) and
    the inverse (None unless asked); NumPy computes only what is asked."""
    flat = np.asarray(b).reshape(-1)
    res = cast(Callable[..., Any], np.unique)(  # NumPy's overloads take only literal flags
        flat,
        return_index="first" in fields,
        return_inverse=inverse,
        return_counts="count" in fields,
        equal_nan=equal_nan,
    )
    res = res if isinstance(res, tuple) else (res,)
    vals, k = res[0], 1
    cols = _enc(vals)
    first = inv = counts = None
    if "first" in fields:
        first, k = res[k], k + 1
    if inverse:
        inv, k = np.asarray(res[k]).reshape(b.shape), k + 1
    if "count" in fields:
        counts = res[k]
        cols.append(counts.astype(np.int64))
    if first is not None:
        if len(shape) and len(first):
            first = np.ravel_multi_index(tuple(c + s for c, s in zip(np.unravel_index(first, b.shape), start)), shape)
        cols.append(np.asarray(first, dtype=np.int64))
    return vals, np.stack(cols, axis=1), inv


def _merge(
    rows: np.ndarray, dtype: np.dtype, fields: tuple[str, ...], equal_nan: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Merged bucket rows (``fields``) and each received row's rank in the bucket."""
    vals = _dec(rows, dtype)
    if "first" in fields:  # NaNs (never equal) in order of their first index, as NumPy
        order = np.lexsort((rows[:, fields.index("first")], vals))
    else:
        order = np.argsort(vals, kind="stable")
    sv = vals[order]
    new = np.ones(len(sv), dtype=bool)
    new[1:] = sv[1:] != sv[:-1]  # NaN != NaN: each NaN starts its own group
    if equal_nan and sv.dtype.kind == "f":
        new[1:] &= ~(np.isnan(sv[1:]) & np.isnan(sv[:-1]))
    starts = np.flatnonzero(new)
    rank = np.empty(len(sv), dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    if len(sv) == 0:
        return np.zeros((0, len(fields)), dtype=np.int64), rank
    cols = [rows[order[starts], k] for k in range(_width(dtype))]
    if "count" in fields:
        cols.append(np.add.reduceat(rows[order, fields.index("count")], starts))
    if "first" in fields:
        cols.append(np.minimum.reduceat(rows[order, fields.index("first")], starts))
    return np.stack(cols, axis=1), rank


def _unique(x: ShardArray, counts: bool, index: bool, inverse: bool, equal_nan: bool = False) -> tuple[Any, ...]:
    """(values, first indices, counts, inverse indices) of the flattened ``x``; None for what is not asked."""
    mesh, dtype = x.mesh, x.dtype
    # the inverse of float data needs the first indices too: they order the NaNs (each distinct) as NumPy does
    index = index or (inverse and (dtype.kind == "f" or dtype.name == "bfloat16"))
    fields = (
        ("value",)
        + (("imag",) if dtype.kind == "c" else ())
        + (("count",) if counts else ())
        + (("first",) if index else ())
    )
    axes = mesh_order(mesh, x.spec.used_axes)
    bounds = block_bounds(mesh, x.spec)
    groups = mesh.groups(axes)
    p = len(groups[0])
    member = {d: j for g in groups for j, d in enumerate(g)}
    local: list[Any] = [None] * mesh.size
    for d, s in enumerate(x.shards):
        if s is not None:
            local[d] = _local(
                mesh.backend.to_numpy(s), tuple(a for a, _ in bounds[d]), x.shape, fields, inverse, equal_nan
            )
    if p == 1:
        merged: list[Any] = [None if item is None else item[1] for item in local]
        ranks: list[Any] = [None if item is None else np.arange(len(item[1]), dtype=np.int64) for item in local]
        return _finish(x, axes, fields, merged, ranks, local, p, member, inverse, replicated=True)
    samples: list[Any] = [None] * mesh.size
    for d, item in enumerate(local):
        if item is None:
            continue
        vals, rows, _ = item
        w = _width(dtype)
        smp = np.zeros((p - 1, w + 1), dtype=np.int64)
        if len(vals):
            smp[:, :w] = rows[(np.arange(1, p) * len(vals)) // p, :w]
            smp[:, w] = 1
        samples[d] = smp
    gathered = mesh.comm.allgather(samples, axes, 0)
    send: list[Any] = [None] * mesh.size
    for d, item in enumerate(local):
        if item is None:
            continue
        vals, rows, _ = item
        g = gathered[d]
        split = np.sort(_dec(g[g[:, -1] == 1], dtype))
        inner = (
            np.searchsorted(vals, split[(np.arange(1, p) * len(split)) // p], side="left")
            if len(split)
            else np.full(p - 1, len(vals))
        )
        cuts = np.concatenate([[0], inner, [len(vals)]])
        tagged = np.concatenate([rows, np.full((len(rows), 1), member[d], dtype=np.int64)], axis=1) if inverse else rows
        send[d] = [tagged[cuts[i] : cuts[i + 1]] for i in range(p)]
    recv = mesh.comm.alltoallv(send, axes, 0)
    merged = [None] * mesh.size
    ranks = [None] * mesh.size
    senders: list[Any] = [None] * mesh.size
    for d, r in enumerate(recv):
        if r is not None:
            merged[d], ranks[d] = _merge(r[:, : len(fields)], dtype, fields, equal_nan)
            senders[d] = r[:, -1] if inverse else None
    return _finish(x, axes, fields, merged, ranks, local, p, member, inverse, senders=senders)


def _finish(
    x: ShardArray,
    axes: tuple[str, ...],
    fields: tuple[str, ...],
    merged: list[Any],
    ranks: list[Any],
    local: list[Any],
    p: int,
    member: dict[int, int],
    inverse: bool,
    replicated: bool = False,
    senders: list[Any] | None = None,
) -> tuple[Any, Any, Any, Any]:
    mesh, dtype = x.mesh, x.dtype
    if p > 1:
        lengths = mesh.comm.allgather(
            [None if m is None else np.array([len(m)], dtype=np.int64) for m in merged], axes, 0
        )
    else:
        lengths = [None if m is None else np.array([len(m)], dtype=np.int64) for m in merged]
    held = next(i for i, v in enumerate(lengths) if v is not None)
    total = int(lengths[held].sum())
    offsets = [None if lengths[d] is None else int(lengths[d][: member[d]].sum()) for d in range(mesh.size)]
    inv_arr = None
    if inverse:
        if p > 1:
            back: list[Any] = [None] * mesh.size
            sent = cast(list[Any], senders)  # p > 1: the exchange passes who sent each row
            for d, rk in enumerate(ranks):
                if rk is not None:
                    glob = rk + offsets[d]
                    bounds = np.concatenate([[0], np.cumsum(np.bincount(sent[d], minlength=p))])
                    back[d] = [glob[bounds[i] : bounds[i + 1]] for i in range(p)]
            got = mesh.comm.alltoallv(back, axes, 0)
        else:
            got = ranks
        inv_shards = [None if item is None else got[d][item[2]].astype(np.int64) for d, item in enumerate(local)]
        inv_shards = [None if s is None else mesh.backend.xp.asarray(s) for s in inv_shards]
        inv_arr = ShardArray(mesh, x.spec, np.int64, inv_shards)
    if replicated or p == 1 or total <= REPLICATE_MAX:
        if p > 1:
            full = mesh.comm.alltoallv([None if m is None else [m] * p for m in merged], axes, 0)
        else:
            full = merged
        layout = Layout((DIM,), (total,), ((),))
    else:
        radix = [mesh.axis_size(a) for a in axes]
        out_bounds = [group_chunk(0, total, radix, i) for i in range(p)]
        send: list[Any] = [None] * mesh.size
        for d, m in enumerate(merged):
            if m is None:
                continue
            lo = cast(int, offsets[d])  # m held: its length was gathered
            hi = lo + len(m)
            send[d] = [
                m[max(lo, a) - lo : min(hi, b) - lo] if max(lo, a) < min(hi, b) else m[:0] for a, b in out_bounds
            ]
        full = mesh.comm.alltoallv(send, axes, 0)
        layout = Layout((DIM,), (total,), (axes,))

    def column(name: str) -> ShardArray | None:
        if name not in fields:
            return None
        k = fields.index(name)
        return ShardArray(mesh, layout, np.int64, [None if f is None else np.ascontiguousarray(f[:, k]) for f in full])

    vals = [None if f is None else _dec(f, dtype) for f in full]
    return ShardArray(mesh, layout, dtype, vals), column("first"), column("count"), inv_arr


@nondifferentiable("unique_values")
def unique_values(x: ShardArray) -> ShardArray:
    """The sorted distinct values of ``x`` (flattened), each NaN distinct; 1-D with dim ``"unique"``.

    Collectives over the axes that split ``x`` (``p`` per group): an
    allgather of ``p - 1`` samples, one alltoallv of the local uniques (1
    int64 each), an allgather of one int64, and one alltoallv placing the
    result: replicated when it has at most ``REPLICATE_MAX`` (65536) values,
    else split in the canonical layout over ``x``'s axes. No communication if ``x`` is unsplit.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[3, 1, 3], [1, 2, 3]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> with sa.comm_log() as log:
        ...     u = sa.unique_values(x)
        >>> u.numpy(), u.layout, [r.op for r in log.records]
        (array([1, 2, 3]), {}, ['allgather', 'alltoall', 'allgather', 'alltoall'])
    """
    x = _check(x, "unique_values")
    return _unique(x, False, False, False)[0]


@nondifferentiable("unique_counts")
def unique_counts(x: ShardArray) -> UniqueCountsResult:
    """``(values, counts)`` of the distinct values of ``x`` (flattened); collectives as ``unique_values``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([3, 1, 3, 3]), dims=("i",), mesh=mesh, layout={"i": ("row", "col")})
        >>> [a.numpy() for a in sa.unique_counts(x)]
        [array([1, 3]), array([1, 3])]
    """
    x = _check(x, "unique_counts")
    v, _, c, _ = _unique(x, True, False, False)
    return UniqueCountsResult(v, c)


@nondifferentiable("unique_inverse")
def unique_inverse(x: ShardArray) -> UniqueInverseResult:
    """``(values, inverse_indices)``: ``values[inverse_indices]`` is ``x``; the inverse keeps ``x``'s dims and layout.

    Collectives as ``unique_values`` plus one alltoallv returning each device's
    local uniques' global positions (one int64 per local unique).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([3, 1, 3, 2]), dims=("i",), mesh=mesh, layout={"i": "col"})
        >>> [a.numpy() for a in sa.unique_inverse(x)]
        [array([1, 2, 3]), array([2, 0, 2, 1])]
    """
    x = _check(x, "unique_inverse")
    v, _, _, inv = _unique(x, False, False, True)
    return UniqueInverseResult(v, inv)


@nondifferentiable("unique_all")
def unique_all(x: ShardArray) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``; ``indices`` are first occurrences in the flattened ``x``.

    Collectives as ``unique_inverse``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([3, 1, 3, 2]), dims=("i",), mesh=mesh, layout={"i": "col"})
        >>> [a.numpy() for a in sa.unique_all(x)]
        [array([1, 2, 3]), array([1, 3, 0]), array([2, 0, 2, 1]), array([1, 1, 2])]
    """
    x = _check(x, "unique_all")
    v, first, c, inv = _unique(x, True, True, True)
    return UniqueAllResult(v, first, inv, c)


@nondifferentiable("unique")
def unique(
    ar: ShardArray,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: Any = None,
    *,
    equal_nan: bool = True,
) -> Any:
    """NumPy's ``np.unique`` (so that ``np.unique(x)`` works on a ShardArray): the flattened array's sorted
    distinct values and, as asked, first indices, inverse (``x``'s shape, as NumPy 2) and counts.

    NumPy's default ``equal_nan=True`` makes all NaNs one value; the array API functions (``unique_values``
    etc.) keep each NaN distinct. Collectives as ``unique_all``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([2.0, np.nan, 1.0, np.nan]), dims=("i",), mesh=mesh, layout={"i": "col"})
        >>> [a.numpy() for a in np.unique(x, return_counts=True)]
        [array([ 1.,  2., nan]), array([1, 1, 2])]
    """
    if axis is not None:
        raise ArgumentError(
            f"unique: axis={axis!r} (unique rows or columns) is not supported; unique works on the flattened "
            f"array (axis=None)"
        )
    x = _check(ar, "unique")
    v, first, c, inv = _unique(x, bool(return_counts), bool(return_index), bool(return_inverse), bool(equal_nan))
    extra = [a for a, want in ((first, return_index), (inv, return_inverse), (c, return_counts)) if want]
    return (v, *extra) if extra else v


__all__ = [
    "REPLICATE_MAX",
    "UniqueAllResult",
    "UniqueCountsResult",
    "UniqueInverseResult",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]
