"""``np.unique(x, axis=k)``: the distinct slices of ``x`` along one dim, on split arrays, with no gather.

NumPy's semantics (``numpy.unique`` with ``axis``): the slices along ``dim`` (each a row of the other dims'
values, row-major in ``x``'s dim order) are sorted lexicographically (first value most significant; each
value in NumPy's sort order: NaN last, complex values by real then imaginary part), equal slices merge, and
NaN never equals NaN (NumPy compares the rows as structured values there: ``equal_nan`` has no effect with an
axis, and a slice holding a NaN is distinct from every other). -0.0 and 0.0 are equal. The first index,
inverse (1-D, ``x``'s length along ``dim``) and counts are NumPy's.

Algorithm (``p`` = the devices of a group along the mesh axes of ``x``, ``m`` = a device's slices):

1. **relayout**: the mesh axes splitting other dims move onto ``dim`` (one alltoall), so each device holds
   whole slices: a canonical block of ``dim`` over all of ``x``'s axes, read as rows;
2. a **row sample sort** over those axes (``samplesort.py`` with 2-D keys: lexicographic, stable), the
   global slice index riding along: an allgather of ``p - 1`` sample rows per device, two alltoallv of about
   ``m`` rows, an allgather of one int64 per device;
3. run starts: each row against the one before it (the previous device's last row: **one allgather** of
   one row per device), then **one allgather** of two int64 per device (its number of distinct slices and
   where its first one starts) gives every run's global rank, first index and length;
4. **one alltoallv** placing the distinct slices (with their first index and count) into the result:
   replicated when it holds at most ``REPLICATE_MAX`` values, else split in canonical blocks of
   ``dim`` over the same axes;
5. the inverse (when asked): **one more sample sort** of (index, rank) pairs keyed by index, which puts the
   ranks in ``x``'s order along ``dim``, split over the same axes.

Nothing is gathered whole; host reads are small (flags, counts and cuts). An unsplit ``x`` runs the same
steps locally with no communication.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...array import ShardArray
from ...chunks import group_chunk
from ...core.common import mesh_order, new_array
from ...core.relayout import to_axes
from . import order
from .samplesort import read_counts, sample_sort

REPLICATE_MAX = 65536
"""Unique results with at most this many values are replicated on every device; larger ones are split."""


def _rows(xp: Any, s: Any, i: int) -> Any:
    """Block ``s`` as rows: its slices along array axis ``i``, each flattened row-major."""
    moved = xp.moveaxis(s, i, 0)
    return moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))


def _differs(xp: Any, a: Any, b: Any) -> Any:
    """Per row: ``a`` and ``b`` (rows of one shape) differ in some column (NaN differs from everything)."""
    return xp.any(a != b, axis=1)


def unique_along(
    x: ShardArray, dim: str, return_index: bool, return_inverse: bool, return_counts: bool
) -> tuple[ShardArray, ShardArray | None, ShardArray | None, ShardArray | None]:
    """``np.unique(x, axis)`` along the named ``dim`` of the resolved, data-holding ``x``: see the module docstring.

    Returns ``(values, index, inverse, counts)``, the ones not asked for None. ``values`` has ``x``'s dims
    with ``dim`` of the number of distinct slices; ``index`` and ``counts`` are 1-D along that ``dim``;
    ``inverse`` is 1-D along ``dim`` of ``x``'s length.
    """
    mesh, dtype = x.mesh, x.dtype
    xp, scope = mesh.backend.xp, mesh.backend.scope
    i, n = x.dims.index(dim), x.sizes[dim]
    axes = mesh_order(mesh, list(x.spec.used_axes))
    xr = to_axes(x, tuple(axes if d == dim else () for d in x.dims), False)
    other = tuple(x.shape[k] for k in range(x.ndim) if k != i)
    cols = math.prod(other)
    split = bool(axes) and mesh.axes_size(axes) > 1
    groups = mesh.groups(axes) if split else [[d] for d in range(mesh.size)]
    member = {d: j for g in groups for j, d in enumerate(g)}
    p = len(groups[0])
    radix = [mesh.axis_size(a) for a in axes] if split else [1]
    lows = [group_chunk(0, n, radix, j)[0] for j in range(p)]

    rows: list[Any] = [None] * mesh.size
    index: list[Any] = [None] * mesh.size
    seen: dict[Any, tuple[Any, Any]] = {}
    for d, s in enumerate(xr.shards):
        if s is not None:
            if (id(s), member[d]) not in seen:  # (replicas share their rows, as they share the block)
                with scope(d):
                    r = _rows(xp, s, i)
                    seen[id(s), member[d]] = (r, xp.arange(lows[member[d]], lows[member[d]] + len(r), dtype=np.int64))
            rows[d], index[d] = seen[id(s), member[d]]
    if split:
        pairs = sample_sort(mesh, axes, rows, n, index, dtype, keep=True)
    else:
        pairs = [None] * mesh.size
        for d, r in enumerate(rows):
            if r is not None:
                with scope(d):
                    perm = order.seq_argsort(xp, r)
                    pairs[d] = (r[perm], index[d][perm])

    # 3. run starts, ranks, first indices and lengths
    width = order.width(order.key_dtype(dtype)) * cols
    last: list[Any] = [None] * mesh.size
    for d, pr in enumerate(pairs):
        if pr is not None:
            with scope(d):
                flag = xp.full((1, 1), 1 if len(pr[0]) else 0, dtype=np.int64)
                tail = order.words(xp, order.sort_keys(pr[0][-1:])) if len(pr[0]) else xp.zeros((1, width), np.int64)
                last[d] = xp.concatenate([flag, tail], axis=1)
    lasts = mesh.comm.allgather(last, axes, 0) if split else last
    host_flags = read_counts(mesh, [None if g is None else g[:, 0] for g in lasts])
    new: list[Any] = [None] * mesh.size
    info: list[Any] = [None] * mesh.size
    for d, pr in enumerate(pairs):
        if pr is None:
            continue
        j = member[d]
        before = [k for k in range(j) if host_flags[d][k]]
        with scope(d):
            keys = order.sort_keys(pr[0])
            m = len(keys)
            nw = xp.ones(m, dtype=bool)
            if m > 1:
                nw[1:] = _differs(xp, keys[1:], keys[:-1])
            if m and before:
                prev = order.from_words(xp, lasts[d][before[-1] : before[-1] + 1, 1:], keys.dtype, cols)
                nw[:1] = _differs(xp, keys[:1], prev)
            new[d] = nw
            first = xp.argmax(xp.concatenate([nw, xp.ones(1, dtype=bool)]))  # (m if no run starts here)
            info[d] = xp.stack([xp.sum(nw.astype(np.int64)), first.astype(np.int64)])[None]
    infos = mesh.comm.allgather(info, axes, 0) if split else info
    host_info = read_counts(mesh, infos)

    out: list[Any] = [None] * mesh.size
    ranks: list[Any] = [None] * mesh.size
    held = next(h for h in host_info if h is not None)
    total = int(held[:, 0].sum())
    for d, pr in enumerate(pairs):
        if pr is None:
            continue
        j, h = member[d], host_info[d]
        u0 = int(h[:j, 0].sum())
        later = [lows[k] + int(h[k, 1]) for k in range(j + 1, p) if h[k, 0]]
        end = later[0] if later else n
        with scope(d):
            nw = new[d]
            ranks[d] = u0 - 1 + xp.cumsum(nw.astype(np.int64))
            at = xp.nonzero(nw)[0].astype(np.int64)
            starts = at + lows[j]
            counts = xp.concatenate([starts[1:], xp.full(1, end, dtype=np.int64)])[: len(at)] - starts
            vals = order.words(xp, pr[0][at])
            out[d] = xp.concatenate([vals, pr[1][at][:, None], counts[:, None]], axis=1)

    # 4. the distinct slices into the result
    replicate = not split or total * max(cols, 1) <= REPLICATE_MAX
    if not split:
        full = out
    elif replicate:
        full = mesh.comm.alltoallv([None if o is None else [o] * p for o in out], axes, 0)
    else:
        bounds = [group_chunk(0, total, radix, k) for k in range(p)]
        send: list[Any] = [None] * mesh.size
        for d, o in enumerate(out):
            if o is not None:
                lo = int(host_info[d][: member[d], 0].sum())
                hi = lo + len(o)
                send[d] = [
                    o[max(lo, a) - lo : min(hi, b) - lo] if max(lo, a) < min(hi, b) else o[:0] for a, b in bounds
                ]
        full = mesh.comm.alltoallv(send, axes, 0)
    res_axes = () if replicate else tuple(axes)
    dims = x.dims
    sizes = {**x.sizes, dim: total}
    vals_sh: list[Any] = [None] * mesh.size
    idx_sh: list[Any] = [None] * mesh.size
    cnt_sh: list[Any] = [None] * mesh.size
    for d, f in enumerate(full):
        if f is not None:
            with scope(d):
                r = order.from_words(xp, f[:, :width], dtype, cols).astype(dtype, copy=False)
                blk = r.reshape((r.shape[0], *other))
                vals_sh[d] = xp.moveaxis(blk, 0, i)
                idx_sh[d] = xp.ascontiguousarray(f[:, width])
                cnt_sh[d] = xp.ascontiguousarray(f[:, width + 1])
    layout = {d: (res_axes if d == dim else ()) for d in dims}
    values = new_array(mesh, dims, sizes, layout, vals_sh, dtype=dtype)
    one = {dim: total}

    def flat(sh: list[Any]) -> ShardArray:
        return new_array(mesh, (dim,), one, {dim: res_axes}, sh, dtype=np.dtype(np.int64))

    inverse = None
    if return_inverse:  # 5. the ranks in x's order: sorted by their slice index
        if split:
            firsts = [None if pr is None else pr[1] for pr in pairs]
            inv = sample_sort(mesh, axes, firsts, n, ranks, np.dtype(np.int64))
        else:
            inv = [None] * mesh.size
            for d, pr in enumerate(pairs):
                if pr is not None:
                    with scope(d):
                        inv[d] = xp.empty(n, dtype=np.int64)
                        inv[d][pr[1]] = ranks[d]
        inverse = new_array(mesh, (dim,), {dim: n}, {dim: tuple(axes) if split else ()}, inv, dtype=np.dtype(np.int64))
    return (
        values,
        flat(idx_sh) if return_index else None,
        inverse,
        flat(cnt_sh) if return_counts else None,
    )


__all__ = ["REPLICATE_MAX", "unique_along"]
