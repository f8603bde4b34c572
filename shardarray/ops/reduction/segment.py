"""Segment reductions along one dim: NumPy's ``ufunc.reduceat`` (CSR row sums, ``np.add.reduceat(v, indptr[:-1])``).

``segment_reduce(x, dim, indices, op)`` is ``np.<op>.reduceat(x, indices, axis)``: entry ``k`` of the result
reduces ``x[indices[k]:indices[k + 1]]`` along ``dim`` where ``indices[k] < indices[k + 1]``, is ``x[indices[k]]``
where not (repeated and decreasing indices), and the last reduces ``x[indices[-1]:]``: every segment is a
nonempty range ``[s_k, e_k)``, and segments may overlap (unsorted indices). The indices are host integers (an
array of them on a mesh is read to the host: ``len(indices)`` int64s, its own size, never ``x``'s).

Along an unsplit dim each device reduces its block locally. Along a split dim the result's dim (``len(indices)``
long) is split over the same mesh axes, in the usual blocks; each device reduces the part of every segment that
falls in its block (a local ``reduceat`` on the clipped ranges), keeps the partials of the segments whose result
it holds, and sends the others to their holders in **one alltoallv** over the dim's mesh axes (one value per
line per partial sent: a segment crossing a block edge sends a partial from each block it touches; a segment
inside one block moves only where the result's blocks place it on another device, which for segments of similar
lengths happens near block edges only). The holders combine a segment's partials in the order of the blocks
(left to right, NumPy's order for a non-commutative rounding). Nothing else moves; the other dims keep their
layout (split or not: no traffic for them). Who sends what is known on the host from the indices and the
block bounds: no counts are exchanged.

Floating-point sums and products of a segment that crosses a block edge round differently from NumPy's, by
design. NumPy reduces a segment as one run (``x[s] + pairwise(x[s+1:e])``: a left-to-right loop under 9
values, eight interleaved accumulators above); no combination of per-block partials reproduces that, and
carrying the running value from block to block would need each block's raw values after the carry, that is
moving every crossing segment whole (a gather of it, for long segments most of ``x``). Measured on random
float32 data over 4 blocks: about a third of the crossing segments' results differ from NumPy's, by at most
one ulp of the sum of the magnitudes, and their error against the exact sum is NumPy's own (0.150 against
0.151 such ulps on average). Segments inside one block, and integer, bool and extreme reductions, are NumPy's
bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import new_array
from ...core.relayout import resolve
from ...core.tape import nondifferentiable
from ...errors import ArgumentError, DTypeError, IndexTypeError, OutOfBoundsError
from ...layout import Layout, block_bounds
from ..elementwise.logical import complex_choose

#: the ufuncs whose ``reduceat`` this module computes (associative: partials combine)
REDUCEATS = frozenset(
    {"add", "multiply", "maximum", "minimum", "fmax", "fmin"}
    | {f"{k}_{op}" for k in ("logical", "bitwise") for op in ("and", "or", "xor")}
)


def pairwise(xp: Any, op: str, dtype: np.dtype) -> Callable[[Any, Any], Any]:
    """The backend's ufunc ``op`` on two blocks (complex extremes in NumPy's lexicographic order, bit for bit)."""
    if np.dtype(dtype).kind == "c" and op in ("maximum", "minimum", "fmax", "fmin"):
        return lambda a, b: complex_choose(xp, op, a, b)
    return getattr(xp, op)


def segments(indices: Any, n: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The ranges ``[s_k, e_k)`` NumPy's ``reduceat`` reduces for host ``indices`` along an axis of length ``n``.

    Raises:
        IndexTypeError: non-integer indices.
        ArgumentError: indices that are not 1-D.
        OutOfBoundsError: an index outside ``[0, n)`` (NumPy's IndexError; negative ones too, as NumPy).

    Example:
        >>> s, e = segments([0, 3, 1, 4], 6, "np.add.reduceat")
        >>> s.tolist(), e.tolist()
        ([0, 3, 1, 4], [3, 4, 4, 6])
    """
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu" and not (idx.size == 0 and idx.dtype.kind == "f"):
        raise IndexTypeError(f"{what}: indices must be integers; got dtype {idx.dtype}; cast them with astype(int)")
    if idx.ndim != 1:
        raise ArgumentError(f"{what}: indices must be 1-D (one start per segment); got shape {idx.shape}")
    if idx.dtype == np.uint64:
        idx = np.minimum(idx, np.uint64(np.iinfo(np.int64).max))
    idx = idx.astype(np.int64)
    bad = idx[(idx < 0) | (idx >= n)]
    if bad.size:
        raise OutOfBoundsError(
            f"{what}: index {int(bad[0])} out of bounds for the reduced axis of size {n} (indices must lie in "
            f"[0, {n}): reduceat takes no negative indices, as NumPy's IndexError says)"
        )
    ends = np.empty_like(idx)
    if idx.size:
        nxt = idx[1:]
        ends[:-1] = np.where(idx[:-1] < nxt, nxt, idx[:-1] + 1)
        ends[-1] = n
    return idx, ends


def reduceat_dtype(op: str, dtype: np.dtype, given: Any, what: str) -> np.dtype:
    """The dtype of NumPy's ``np.<op>.reduceat`` of a ``dtype`` array with ``dtype=given`` (NumPy's rule: int8
    sums widen to int64, the ``logical_*`` give bool); no loop is a ``DTypeError``."""
    try:
        return np.asarray(getattr(np, op).reduceat(np.zeros(1, dtype), [0], dtype=given)).dtype
    except (TypeError, ValueError) as e:
        raise DTypeError(f"{what}: NumPy has no {op} loop for dtype {dtype} (dtype={given}): {e}") from None


def _decomposed(xp: Any, combine: Callable[[Any, Any], Any], block: Any, s: np.ndarray, e: np.ndarray, i: int) -> Any:
    """``combine``'s reduction of ``block`` over each nonempty range ``[s[k], e[k])`` along axis ``i``, with
    elementwise ops only (CuPy has no ``reduceat`` beyond ``add``): level ``j`` holds the reductions of the
    windows of length ``2**j`` (``floor(log2(longest range)) + 1`` levels, each at most the block); a range is
    the windows of its length's binary digits, highest first, combined left to right (NumPy's order for an
    associative op)."""
    pre = (slice(None),) * i
    levels, w, longest = [block], 1, int((e - s).max())
    while 2 * w <= longest:
        lv = levels[-1]
        levels.append(combine(lv[pre + (slice(0, lv.shape[i] - w),)], lv[pre + (slice(w, None),)]))
        w *= 2
    shape = [1] * block.ndim
    shape[i] = len(s)
    length, pos = e - s, s.copy()
    acc: Any = None
    started = np.zeros(len(s), dtype=bool)
    for j in reversed(range(len(levels))):
        has = (length >> j) & 1 == 1
        if not has.any():
            continue
        at = np.where(has, pos, 0)
        piece = xp.take(levels[j], xp.asarray(at, dtype=np.int64), axis=i)
        if acc is None:
            acc = piece
        else:
            both = xp.asarray((has & started).reshape(shape))
            first = xp.asarray((has & ~started).reshape(shape))
            acc = xp.where(both, combine(acc, piece), xp.where(first, piece, acc))
        started |= has
        pos = pos + np.where(has, 1 << j, 0)
    return acc


def _local(backend: Any, op: str, work: np.dtype, block: Any, s: np.ndarray, e: np.ndarray, i: int) -> Any:
    """The reductions of ``block`` (in the loop's dtype ``work``) over the nonempty ranges ``[s, e)`` along ``i``."""
    xp = backend.xp
    if isinstance(block, MetaArray):
        return MetaArray(block.shape[:i] + (len(s),) + block.shape[i + 1 :], work)
    if op.startswith("logical"):
        block = block != 0 if block.dtype != np.bool_ else block
    block = block.astype(work, copy=False)
    if len(s) == 0:
        return xp.zeros(block.shape[:i] + (0,) + block.shape[i + 1 :], dtype=work)
    got = backend.reduceat_rows(block, s, e, op, i)
    if got is not None:
        return got.astype(work, copy=False)
    return _decomposed(xp, pairwise(xp, op, work), block, s, e, i).astype(work, copy=False)


@nondifferentiable("segment_reduce")
def segment_reduce(x: ShardArray, dim: str, indices: tuple[int, ...], op: str = "add", dtype: Any = None) -> ShardArray:
    """``np.<op>.reduceat(x, indices, axis)`` along ``dim`` (see the module docstring), NumPy's semantics.

    The result has ``x``'s dims, ``dim`` of length ``len(indices)`` split over the mesh axes that split ``dim``
    in ``x`` (usual blocks), the other dims laid out as in ``x``. Its dtype is NumPy's (``reduceat_dtype``:
    small integer sums widen, ``dtype=`` picks the loop). Collectives: along a split ``dim``, **one alltoallv**
    over its mesh axes of the partials of the segments a device touches but another holds (the module
    docstring); along an unsplit one, none. A pending sum of ``x`` is resolved first. Not differentiable (a
    recorded input raises ``TapeError``): ``np.add.reduceat``'s VJP (each segment's cotangent summed over the
    segments covering an entry) is not provided; ``xp.cumulative_sum`` differences or a one-hot matmul are.

    Args:
        x: the array.
        dim: the reduced dim.
        indices: the segment starts (host ints, each in ``[0, x.sizes[dim])``).
        op: a ufunc of ``REDUCEATS``.
        dtype: NumPy's ``dtype=`` (the loop's dtype), or None.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(8.0), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> with sa.comm_log() as log:
        ...     y = segment_reduce(x, "i", (0, 3, 6), "add")
        >>> y.numpy(), y.layout, [(r.op, r.elements) for r in log.records]
        (array([ 3., 12., 13.]), {'i': ('row',)}, [('alltoall', 1)])
    """
    what = f"np.{op}.reduceat"
    if op not in REDUCEATS:
        raise ArgumentError(f"{what}: op must be one of {sorted(REDUCEATS)}; got {op!r}")
    n, i = x.sizes[dim], x.dims.index(dim)
    s, e = segments(indices, n, f"{what} (axis {i}, dim {dim!r})")  # (NumPy checks the indices first)
    work = reduceat_dtype(op, x.dtype, dtype, what)
    x = resolve(x, x.spec.axes)
    mesh, backend = x.mesh, x.mesh.backend
    axes = x.spec.of(dim)
    sizes = {**x.sizes, dim: len(s)}
    spec = dict(zip(x.dims, x.spec.axes))
    inb = block_bounds(mesh, x.spec)
    shards: list[Any] = [None] * mesh.size
    if not axes or mesh.axes_size(axes) == 1 or len(s) == 0:
        for d, b in enumerate(x.shards):
            if b is not None:
                with backend.scope(d):
                    shards[d] = _local(backend, op, work, b, s, e, i)
        return new_array(mesh, x.dims, sizes, spec, shards, dtype=work)
    outb = block_bounds(mesh, Layout(x.dims, tuple(sizes[d] for d in x.dims), x.spec.axes))
    _exchange(x, i, axes, op, work, s, e, inb, outb, shards)
    return new_array(mesh, x.dims, sizes, spec, shards, dtype=work)


def _exchange(
    x: ShardArray,
    i: int,
    axes: tuple[str, ...],
    op: str,
    work: np.dtype,
    s: np.ndarray,
    e: np.ndarray,
    inb: Any,
    outb: Any,
    shards: list[Any],
) -> None:
    """The split-dim plan of ``segment_reduce``: local partials, one alltoallv of the ones held elsewhere, the
    holders' left-to-right combine (``shards`` filled per device this process holds)."""
    mesh, backend = x.mesh, x.mesh.backend
    xp, put = backend.xp, backend.from_numpy
    k_all = np.arange(len(s))
    combine = pairwise(xp, op, work)
    send: list[Any] = [None] * mesh.size
    kept: list[Any] = [None] * mesh.size
    plans: dict[int, tuple[int, list[np.ndarray], np.ndarray, list[int]]] = {}
    for group in mesh.groups(axes):
        lo = [inb[d][i][0] for d in group]
        hi = [inb[d][i][1] for d in group]
        holder = np.zeros(len(s), dtype=np.int64)
        for m, d in enumerate(group):
            holder[outb[d][i][0] : outb[d][i][1]] = m
        touched = [k_all[np.maximum(s, lo[m]) < np.minimum(e, hi[m])] for m in range(len(group))]
        for m, d in enumerate(group):
            plans[d] = (m, touched, holder, lo)
            if x.shards[d] is None:
                continue
            ks = touched[m]
            with backend.scope(d):
                part = _local(backend, op, work, x.shards[d], np.maximum(s[ks], lo[m]) - lo[m],
                              np.minimum(e[ks], hi[m]) - lo[m], i)  # fmt: skip
                picks = [np.flatnonzero(holder[ks] == q) for q in range(len(group))]
                if isinstance(part, MetaArray):
                    send[d] = [MetaArray(_at(part.shape, i, len(pk)), work) for pk in picks]
                    continue
                kept[d] = xp.take(part, put(picks[m]), axis=i)
                send[d] = [xp.take(part, put(pk if q != m else pk[:0]), axis=i) for q, pk in enumerate(picks)]
    got = mesh.comm.alltoallv(send, axes, i)
    for d, g in enumerate(got):
        if g is None:
            continue
        a, b = outb[d][i]
        if isinstance(g, MetaArray):
            shards[d] = MetaArray(_at(g.shape, i, b - a), work)
            continue
        m, touched, holder, lo = plans[d]
        with backend.scope(d):
            shards[d] = _combine_held(xp, put, combine, m, a, touched, holder, lo, kept[d], g, i)


def _at(shape: tuple[int, ...], i: int, k: int) -> tuple[int, ...]:
    """``shape`` with axis ``i`` of length ``k``."""
    return shape[:i] + (k,) + shape[i + 1 :]


def _combine_held(
    xp: Any,
    put: Any,
    combine: Callable[[Any, Any], Any],
    q: int,
    a: int,
    touched: list[np.ndarray],
    holder: np.ndarray,
    lo: list[int],
    kept: Any,
    got: Any,
    i: int,
) -> Any:
    """Member ``q``'s result block (segments from ``a`` on): each segment's partials (its own ``kept`` ones and
    the ones received in ``got``, in member order) combined in the order of their blocks along the dim."""
    pre = (slice(None),) * i
    held = [ks[holder[ks] == q] for ks in touched]  # (the pool: every member's pieces for q, member order)
    ks = np.concatenate(held)
    starts = np.concatenate([np.full(len(h), lo[m]) for m, h in enumerate(held)])
    before = sum(len(h) for h in held[:q])  # (q's own piece did not travel: it goes in at its place)
    pool = xp.concatenate([got[pre + (slice(0, before),)], kept, got[pre + (slice(before, None),)]], axis=i)
    order = np.lexsort((starts, ks))  # by segment, then left to right
    ks = ks[order]
    first = np.concatenate([[True], ks[1:] != ks[:-1]]) if len(ks) else np.zeros(0, bool)
    rank = np.arange(len(ks)) - np.flatnonzero(first)[np.cumsum(first) - 1] if len(ks) else np.zeros(0, np.int64)
    out = xp.take(pool, put(order[first]), axis=i)  # (the first partial of each segment, in segment order)
    for r in range(1, int(rank.max()) + 1 if len(rank) else 0):
        at = np.flatnonzero(rank == r)
        rows = put(ks[at] - a)
        out[pre + (rows,)] = combine(xp.take(out, rows, axis=i), xp.take(pool, put(order[at]), axis=i))
    return out
