"""The array API's set functions on distributed arrays: ``unique_values``, ``unique_counts``, ``unique_inverse``,
``unique_all``.

All four flatten ``x`` (row-major, as the standard does) and share one
algorithm over the mesh axes that split ``x`` (``p`` devices per group, ``u``
= the distinct values of a device's block):

1. local unique of each block: a sort (a stable argsort where the first
   indices or the inverse are asked), runs of equal values, and per run its
   value, count and first global flat index (the inverse maps each entry to
   its run);
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

Every step runs on the backend's array module (``mesh.backend.xp``: NumPy or
CuPy), in each device's scope; the per-run sums and minima are differences
and picks at run boundaries found by one scatter of the runs' first
positions, so the arrays keep their sizes until the counts are known. **Host reads** (each a
device sync on a GPU), per device: before step 3 the ``p - 1`` cuts of its
uniques and their number ``u`` (``p`` int64: the pieces of the alltoallv),
and after step 5 the ``p`` gathered bucket lengths, with, for the inverse,
the ``p + 1`` bounds of the senders' runs in its bucket (the pieces of step
6). For an unsplit ``x``, one read of ``u``. Replicas that share a block
(emulated meshes) compute and read once.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...array import ShardArray
from ...chunks import group_chunk
from ...core.common import mesh_order, one_dim_arg, require_array
from ...core.relayout import resolve
from ...core.tape import nondifferentiable
from ...errors import BackendError, DTypeError
from ...layout import Layout, block_bounds
from .samplesort import from_bits, key_dtype, lex_order, read_counts, sort_keys, to_bits
from .unique_axis import REPLICATE_MAX, unique_along

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


def _enc(vals: Any) -> list[Any]:
    """Values as int64 columns (``_width`` of them) that ``_dec`` turns back exactly."""
    if vals.dtype.kind == "c":
        return [to_bits(vals.real), to_bits(vals.imag)]
    return [to_bits(vals)]


def _dec(xp: Any, rows: Any, dtype: np.dtype) -> Any:
    """The values in the first ``_width`` columns of the int64 ``rows``."""
    if dtype.kind == "c":
        part = np.finfo(dtype).dtype
        pairs = xp.stack([from_bits(rows[:, 0], part), from_bits(rows[:, 1], part)], axis=-1)
        return pairs.view(dtype).reshape(-1)
    return from_bits(rows[:, 0], dtype)


def _runs(xp: Any, sv: Any, merge_nan: bool) -> tuple[Any, Any]:
    """Run ids of the sorted values ``sv`` (entry ``j`` counts the distinct values before it, int64) and where
    each run starts (a bool per entry).

    NaN != NaN, so each NaN is a run of its own, unless ``merge_nan`` (``np.unique``'s ``equal_nan`` for float
    and complex arrays; NumPy's ``np.unique`` does not merge bfloat16 NaNs), which makes the NaNs one run
    (they sort last, together).
    """
    if len(sv) == 0:
        return xp.zeros(0, dtype=np.int64), xp.zeros(0, dtype=bool)
    step = sv[1:] != sv[:-1]
    if merge_nan:
        step &= ~(xp.isnan(sv[1:]) & xp.isnan(sv[:-1]))
    new = xp.concatenate([xp.ones(1, dtype=bool), step])
    return xp.cumsum(new, dtype=np.int64) - 1, new


def _bounds(xp: Any, runs: Any, new: Any) -> tuple[Any, Any]:
    """For ``j < len(runs)``: where run ``j`` starts and ends in the sorted order (both ``len(runs)`` for the
    ids past the last run: the results keep the input's length, no count is read). One scatter: each run's
    first entry writes its position at its run id; every other entry writes to a spare slot."""
    n = len(runs)
    at = xp.full(n + 1, n, dtype=np.int64)
    at[xp.where(new, runs, n)] = xp.arange(n, dtype=np.int64)
    at[n] = n
    return at[:n], at[1:]


def _flat_index(xp: Any, local: Any, block: tuple[int, ...], start: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """Row-major flat indices in the global ``shape`` of the row-major flat indices ``local`` in a block of shape
    ``block`` (no empty axis) whose first entry sits at ``start``."""
    out = xp.zeros(local.shape, dtype=np.int64)
    rem = local.astype(np.int64)
    stride = 1
    for ax in reversed(range(len(block))):
        out += (rem % block[ax] + start[ax]) * stride
        rem = rem // block[ax]
        stride *= shape[ax]
    return out


class _Local(NamedTuple):
    """A block's sorted uniques, padded to the block's ``size`` rows (row ``j`` is unique ``j`` for ``j < u``)."""

    rows: Any  # (size, fields [+ sender]) int64: value bits, count, first global flat index, sender
    values: Any  # (size,) the unique values, non-decreasing (past u: the last one again)
    u: Any  # (1,) int64 on the device: the number of uniques
    inverse: Any  # the block's indices into its uniques (its shape), or None
    size: int  # the block's number of entries


def _local(
    xp: Any,
    b: Any,
    start: tuple[int, ...],
    shape: tuple[int, ...],
    fields: tuple[str, ...],
    inverse: bool,
    merge_nan: bool,
    sender: int | None,
) -> _Local:
    """The sorted local uniques of block ``b`` with ``fields`` (and a ``sender`` column unless None), on ``xp``;
    values in ``key_dtype`` (bfloat16 as float32, which packs to the same bits)."""
    n = int(b.size)
    width = len(fields) + (sender is not None)
    if n == 0:
        inv = xp.zeros(b.shape, dtype=np.int64) if inverse else None
        return _Local(xp.zeros((0, width), dtype=np.int64), b.reshape(-1), xp.zeros(1, dtype=np.int64), inv, 0)
    flat = sort_keys(b.reshape(-1))
    if "first" in fields or inverse:
        order = xp.argsort(flat, kind="stable")  # stable: a run's first entry is its first occurrence
        sv = flat[order]
    else:  # values (and counts) only: the sorted values are enough (a sort is several times an argsort's speed)
        order, sv = None, xp.sort(flat)
    runs, new = _runs(xp, sv, merge_nan)
    starts, ends = _bounds(xp, runs, new)
    at = xp.minimum(starts, n - 1)
    vals = sv[at]
    cols = _enc(vals)
    if "count" in fields:
        cols.append(ends - starts)
    if order is not None and "first" in fields:
        cols.append(_flat_index(xp, order[at], tuple(b.shape), start, shape))
    if sender is not None:
        cols.append(xp.full(n, sender, dtype=np.int64))
    inv = None
    if order is not None and inverse:
        inv = xp.empty(n, dtype=np.int64)
        inv[order] = runs
        inv = inv.reshape(b.shape)
    return _Local(xp.stack(cols, axis=1), vals, runs[-1:] + 1, inv, n)


def _samples(xp: Any, loc: _Local, w: int, p: int) -> Any:
    """``p - 1`` regular samples of the local uniques: rows (value bits (``w`` words), 1), or all 0 if none."""
    smp = xp.zeros((p - 1, w + 1), dtype=np.int64)
    if loc.size:
        pos = (xp.arange(1, p, dtype=np.int64) * loc.u) // p
        smp[:, :w] = loc.rows[pos, :w]
        smp[:, w] = 1
    return smp


def _complex_below(xp: Any, a: Any, b: Any) -> Any:
    """``a < b`` elementwise in NumPy's sort order of complex values: ``R+Rj < R+nanj < nan+Rj < nan+nanj``
    (``R`` not NaN), each kind by its non-NaN parts (real, then imaginary), as ``np.sort`` orders them.

    Example:
        >>> _complex_below(np, np.array([1 + 1j, complex(1, np.nan)]), np.array([complex(1, np.nan), 2 + 0j]))
        array([ True, False])
    """

    def kind_and_parts(z: Any) -> tuple[Any, Any, Any]:
        re_nan, im_nan = xp.isnan(z.real), xp.isnan(z.imag)
        zero = z.real.dtype.type(0)
        kind = re_nan.astype(np.int8) * 2 + im_nan.astype(np.int8)
        return kind, xp.where(re_nan, zero, z.real), xp.where(im_nan, zero, z.imag)

    (ka, ar, ai), (kb, br, bi) = kind_and_parts(a), kind_and_parts(b)
    return (ka < kb) | ((ka == kb) & ((ar < br) | ((ar == br) & (ai < bi))))


def _search_complex(xp: Any, sorted_values: Any, queries: Any) -> Any:
    """``np.searchsorted(sorted_values, queries, side="left")`` (int64) of complex values, on ``xp``.

    A binary search of all queries at once, ``_complex_below`` deciding each step, in a host-known number
    of steps (no device sync). CuPy's ``searchsorted`` compares complex values with its own ``operator<``
    (``1+nanj < 2+0j``, cupy/_core/include/cupy/complex/arithmetic.h) and places every complex NaN query
    alike, so it misplaces NumPy-sorted values with NaN parts.

    Example:
        >>> s = np.array([1 + 0j, 2 + 0j, complex(1, np.nan), complex(np.nan, 0)])
        >>> _search_complex(np, s, np.array([2 + 1j, complex(0, np.nan), complex(np.nan, -1)])).tolist()
        [2, 2, 3]
    """
    n = int(sorted_values.shape[0])
    lo = xp.zeros(queries.shape, dtype=np.int64)
    hi = xp.full(queries.shape, n, dtype=np.int64)
    for _ in range(n.bit_length()):  # each step at least halves every open interval
        mid = (lo + hi) // 2
        active = lo < hi
        right = active & _complex_below(xp, sorted_values[xp.minimum(mid, n - 1)], queries)
        lo, hi = xp.where(right, mid + 1, lo), xp.where(active & ~right, mid, hi)
    return lo


def _cuts(xp: Any, loc: _Local, gathered: Any, dtype: np.dtype, p: int, merge_nan: bool) -> Any:
    """On the device: the ``p - 1`` cuts of the local uniques at the value splitters, then ``u`` (p int64).

    The splitters are the valid samples (flag 1) sorted by value, every ``k/p``-th of the ``k`` there are.
    With ``merge_nan`` a NaN splitter cuts before the first NaN, so that all NaNs meet (and merge) in the last
    bucket: complex NaNs (``nan-1j < nan+0j``) would otherwise be cut apart. Complex values are searched by
    ``_search_complex`` (NumPy's order), not ``xp.searchsorted``.
    """
    w = _width(dtype)
    vals = _dec(xp, gathered, key_dtype(dtype))
    valid = gathered[:, w] == 1
    order = lex_order(xp, [vals, ~valid])  # the valid samples first, by value
    k = xp.sum(valid.astype(np.int64))
    split = vals[order[(xp.arange(1, p, dtype=np.int64) * k) // p]]
    if dtype.kind == "c":
        found = _search_complex(xp, loc.values, split)
    else:
        found = xp.searchsorted(loc.values, split, side="left").astype(np.int64)
    cuts = xp.minimum(found, loc.u)
    if merge_nan:  # the NaNs sort last: cut at the number of values before them
        before = xp.sum(~xp.isnan(loc.values)).astype(np.int64)
        cuts = xp.where(xp.isnan(split), xp.minimum(before, loc.u), cuts)
    return xp.concatenate([cuts, loc.u])


def _merge(xp: Any, r: Any, dtype: np.dtype, fields: tuple[str, ...], merge_nan: bool) -> tuple[Any, Any, Any]:
    """A bucket's received rows merged: ``(rows, count, rank)``, on the device.

    ``rows`` (``len(r)`` of them, the first ``count`` valid) hold ``fields`` of each distinct value, counts
    summed and first indices the least; ``count`` is a (1,) int64 array; ``rank[i]`` is received row ``i``'s
    row in ``rows``.
    """
    n = int(r.shape[0])
    if n == 0:
        return xp.zeros((0, len(fields)), dtype=np.int64), xp.zeros(1, dtype=np.int64), xp.zeros(0, dtype=np.int64)
    vals = _dec(xp, r, key_dtype(dtype))
    if "first" in fields:  # NaNs (never equal) in order of their first index, as NumPy
        order = lex_order(xp, [r[:, fields.index("first")], vals])
    else:
        order = xp.argsort(vals, kind="stable")
    srows = r[order]
    runs, new = _runs(xp, vals[order], merge_nan)
    starts, ends = _bounds(xp, runs, new)
    at = xp.minimum(starts, n - 1)
    cols = [srows[at, k] for k in range(_width(dtype))]
    if "count" in fields:
        total = xp.concatenate([xp.zeros(1, dtype=np.int64), xp.cumsum(srows[:, fields.index("count")])])
        cols.append(total[ends] - total[starts])
    if "first" in fields:
        cols.append(srows[at, fields.index("first")])  # sorted by (value, first): the run's least
    rank = xp.empty(n, dtype=np.int64)
    rank[order] = runs
    return xp.stack(cols, axis=1), runs[-1:] + 1, rank


def _unique(x: ShardArray, counts: bool, index: bool, inverse: bool, equal_nan: bool = False) -> tuple[Any, ...]:
    """(values, first indices, counts, inverse indices) of the flattened ``x``; None for what is not asked."""
    mesh, dtype = x.mesh, x.dtype
    xp, scope = mesh.backend.xp, mesh.backend.scope
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
    tag = inverse and p > 1  # the bucket exchange says who sent each row
    merge_nan = equal_nan and dtype.kind in "fc"
    # 1. local uniques (replicas sharing a block compute once)
    local: list[Any] = [None] * mesh.size
    done: dict[tuple[Any, ...], _Local] = {}
    for d, s in enumerate(x.shards):
        if s is None:
            continue
        start = tuple(a for a, _ in bounds[d])
        key = (id(s), start, member[d])
        if key not in done:
            with scope(d):
                done[key] = _local(xp, s, start, x.shape, fields, inverse, merge_nan, member[d] if tag else None)
        local[d] = done[key]
    if p == 1:  # nothing to exchange: read u and keep the rows
        counted = read_counts(mesh, [None if loc is None else loc.u for loc in local])
        merged = [None if loc is None else loc.rows[: int(c[0])] for loc, c in zip(local, counted)]
        inv = [None if loc is None else loc.inverse for loc in local]
        return _finish(x, axes, fields, merged, counted, member, p, inv)
    recv = mesh.comm.alltoallv(_buckets(x, axes, local, p, merge_nan), axes, 0)  # 2., 3.
    # 4. merge, 5. the buckets' lengths (read with the senders' bounds, for the inverse)
    rows: list[Any] = [None] * mesh.size
    lengths: list[Any] = [None] * mesh.size
    ranks: list[Any] = [None] * mesh.size
    senders: list[Any] = [None] * mesh.size
    for d, r in enumerate(recv):
        if r is None:
            continue
        with scope(d):
            rows[d], lengths[d], ranks[d] = _merge(xp, r[:, : len(fields)], dtype, fields, merge_nan)
            if tag:
                runs = xp.ascontiguousarray(r[:, -1])  # the senders, in member order
                senders[d] = xp.searchsorted(runs, xp.arange(p + 1, dtype=np.int64), side="left").astype(np.int64)
    all_lengths = mesh.comm.allgather(lengths, axes, 0)
    to_read: list[Any] = [None] * mesh.size
    for d, lens in enumerate(all_lengths):
        if lens is not None:
            with scope(d):
                to_read[d] = xp.concatenate([lens, senders[d]]) if tag else lens
    counted = read_counts(mesh, to_read)
    merged = [None if m is None else m[: int(c[member[d]])] for d, (m, c) in enumerate(zip(rows, counted))]
    back: list[Any] = [None] * mesh.size
    if inverse:  # 6. each unique's global rank back to the device it came from
        for d, rk in enumerate(ranks):
            if rk is not None:
                c = counted[d]
                glob = rk + int(c[: member[d]].sum())
                edges = c[p:].tolist()
                back[d] = [glob[edges[i] : edges[i + 1]] for i in range(p)]
        got = mesh.comm.alltoallv(back, axes, 0)
        for d, loc in enumerate(local):
            if loc is not None:
                with scope(d):
                    back[d] = got[d][loc.inverse] if loc.size else loc.inverse
    return _finish(x, axes, fields, merged, [None if c is None else c[:p] for c in counted], member, p, back)


def _buckets(x: ShardArray, axes: tuple[str, ...], local: list[Any], p: int, merge_nan: bool) -> list[Any]:
    """Steps 2 and 3: the samples' allgather, the splitters, and each device's local uniques cut into ``p``
    buckets (the pieces of the bucket exchange); the cuts are read to the host with ``u``."""
    mesh, dtype = x.mesh, x.dtype
    xp, scope = mesh.backend.xp, mesh.backend.scope
    w = _width(dtype)
    samples: list[Any] = [None] * mesh.size
    memo: dict[tuple[int, ...], Any] = {}  # replicas' shared blocks: shared samples, hence shared cuts
    for d, loc in enumerate(local):
        if loc is not None:
            if (id(loc),) not in memo:
                with scope(d):
                    memo[(id(loc),)] = _samples(xp, loc, w, p)
            samples[d] = memo[(id(loc),)]
    gathered = mesh.comm.allgather(samples, axes, 0)
    cut_arrays: list[Any] = [None] * mesh.size
    for d, loc in enumerate(local):
        if loc is not None and loc.size:
            key = (id(loc), id(gathered[d]))
            if key not in memo:
                with scope(d):
                    memo[key] = _cuts(xp, loc, gathered[d], dtype, p, merge_nan)
            cut_arrays[d] = memo[key]
    cuts = read_counts(mesh, cut_arrays)
    send: list[Any] = [None] * mesh.size
    for d, loc in enumerate(local):
        if loc is not None:
            edges = [0] * (p + 1) if cuts[d] is None else [0, *cuts[d].tolist()]  # an empty block: empty pieces
            send[d] = [loc.rows[edges[i] : edges[i + 1]] for i in range(p)]
    return send


def _finish(
    x: ShardArray,
    axes: tuple[str, ...],
    fields: tuple[str, ...],
    merged: list[Any],
    lengths: list[Any],
    member: dict[int, int],
    p: int,
    inv: list[Any],
) -> tuple[Any, Any, Any, Any]:
    """The result arrays from each device's merged rows and the host lengths of its group's buckets."""
    mesh, dtype, xp = x.mesh, x.dtype, x.mesh.backend.xp
    held = next(c for c in lengths if c is not None)
    total = int(held.sum())
    if p == 1 or total <= REPLICATE_MAX:
        full = merged if p == 1 else mesh.comm.alltoallv([None if m is None else [m] * p for m in merged], axes, 0)
        layout = Layout((DIM,), (total,), ((),))
    else:
        radix = [mesh.axis_size(a) for a in axes]
        out_bounds = [group_chunk(0, total, radix, i) for i in range(p)]
        send: list[Any] = [None] * mesh.size
        for d, m in enumerate(merged):
            if m is None:
                continue
            lo = int(lengths[d][: member[d]].sum())
            hi = lo + len(m)
            send[d] = [
                m[max(lo, a) - lo : min(hi, b) - lo] if max(lo, a) < min(hi, b) else m[:0] for a, b in out_bounds
            ]
        full = mesh.comm.alltoallv(send, axes, 0)
        layout = Layout((DIM,), (total,), (axes,))
    scope = mesh.backend.scope

    def column(name: str) -> ShardArray | None:
        if name not in fields:
            return None
        k = fields.index(name)
        shards: list[Any] = [None] * mesh.size
        for d, f in enumerate(full):
            if f is not None:
                with scope(d):
                    shards[d] = xp.ascontiguousarray(f[:, k])
        return ShardArray(mesh, layout, np.int64, shards)

    vals: list[Any] = [None] * mesh.size
    for d, f in enumerate(full):
        if f is not None:
            with scope(d):
                vals[d] = _dec(xp, f, dtype)
    inv_arr = ShardArray(mesh, x.spec, np.int64, inv) if any(i is not None for i in inv) else None
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
    etc.) keep each NaN distinct. Collectives as ``unique_all``. ``axis`` (a dim name or position) gives the
    distinct slices along that dim, as ``np.unique(x, axis=k)`` (``unique_axis.unique_along``: sorted
    lexicographically, a slice with a NaN distinct from every other whatever ``equal_nan``, as NumPy; the
    index, counts and the 1-D inverse along that dim). A 1-D array's ``axis`` changes nothing (NumPy's rule:
    ``equal_nan`` applies).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([2.0, np.nan, 1.0, np.nan]), dims=("i",), mesh=mesh, layout={"i": "col"})
        >>> [a.numpy() for a in np.unique(x, return_counts=True)]
        [array([ 1.,  2., nan]), array([1, 1, 2])]
    """
    x = _check(ar, "unique")
    dim = None if axis is None else one_dim_arg(x, axis, "unique", "find distinct slices")
    if dim is not None and x.ndim > 1:  # the distinct slices along a dim (unique_axis.py); 1-D: NumPy's flat unique
        v, first, inv, c = unique_along(x, dim, bool(return_index), bool(return_inverse), bool(return_counts))
        extra = [a for a, want in ((first, return_index), (inv, return_inverse), (c, return_counts)) if want]
        return (v, *extra) if extra else v
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
