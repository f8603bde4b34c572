"""``argmax`` / ``argmin`` over one named dim: local search, then one allgather of (value, index) pairs.

Each device finds the extreme of its block and turns the block's position
into a global index (its offset along the dim). Over a split dim the devices
of each group then exchange one (value, index) pair per output element in
**one allgather** over the dim's axes (the pair packed into one int64 buffer:
the value as float64 or int64 bits, the index), and every device picks the
winner: the first NaN if any (NumPy's rule), else the extreme value with the
smallest index (first occurrence). Where the candidates lie in index order (no
block of the dim is empty, and the dim's axes are in the mesh's order, as the
allgather's members are) the winner is NumPy's own arg-search over them;
otherwise the least index among the extremes. Complex values follow NumPy: lexicographic order (real part, then
imaginary part), the first value with a NaN in either part wins (``complex_hits``); their pairs are three int64
(the parts' float64 bits, the index). Along an unsplit dim each distinct block is searched once (replicas share
it), big NumPy blocks of an emulated mesh at once on the copy pool (``comm.parallel``), as separate devices would;
the search is NumPy's own (a loop over a short axis's columns, tried for k-means' (N, 8) distances, is 3-6x slower
in NumPy calls). Results are int64 and not differentiable. Along a dim of size 1 (split or not) the result is
zeros, made locally: no collective, no resolution of a pending sum.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import map_blocks, mesh_order, new_array, one_dim_arg, require_array
from ...core.relayout import resolve
from ...core.tape import nondifferentiable
from ...dtypes import wide_dtype
from ...errors import DimensionError, DTypeError
from ...layout import block_bounds


def _arg_extreme(xp: Any, s: Any, axis: int, op: str) -> Any:
    """``xp.argmax`` / ``xp.argmin`` of ``s`` along ``axis`` with NumPy's rule for NaNs: the first NaN wins.

    NumPy's own functions follow it. CuPy's reductions keep either NaN when two meet (``my_argmax_float`` in
    cupy/_core/_routines_statistics.pyx returns its left operand, and the reduction tree's left operand is not
    always the lower index): a float row with NaNs takes the first True of ``isnan`` instead (a bool argmax
    keeps the least index on ties, on every array module).

    Example:
        >>> int(_arg_extreme(np, np.array([2.0, np.nan, 0.0, np.nan]), 0, "argmin"))
        1
    """
    if s.dtype.kind == "c" and xp is not np:  # (NumPy's own complex arg-search is the reference)
        return xp.argmax(complex_hits(xp, s, axis, op), axis=axis)
    pos = (xp.argmax if op == "argmax" else xp.argmin)(s, axis=axis)
    if xp is np or (s.dtype.kind != "f" and s.dtype.name != "bfloat16"):
        return pos
    nan = xp.isnan(s)
    return xp.where(xp.any(nan, axis=axis), xp.argmax(nan, axis=axis), pos)


def complex_hits(xp: Any, s: Any, axis: int, op: str) -> Any:
    """Where the complex ``s`` reaches its ``argmax``/``argmin`` along ``axis``, NumPy's way (a bool mask).

    NumPy orders complex values lexicographically (real part, then imaginary part) and lets a NaN in either
    part win (``np.argmax``/``np.argmin`` give the first such value). The mask marks, per row, every value with
    a NaN part if the row has one, else every value equal (both parts) to the lexicographic extreme; its first
    True is NumPy's answer. Real reductions only, on every array module.

    Example:
        >>> complex_hits(np, np.array([1 + 2j, 0 + 9j, 1 + 2j]), 0, "argmax").tolist()
        [True, False, True]
    """
    re, im = s.real, s.imag
    nan = xp.isnan(re) | xp.isnan(im)
    red = xp.max if op == "argmax" else xp.min
    fill = re.dtype.type(-np.inf if op == "argmax" else np.inf)
    re_c = xp.where(nan, fill, re)
    on = ~nan & (re_c == red(re_c, axis=axis, keepdims=True))
    im_c = xp.where(on, im, fill)
    hit = on & (im_c == red(im_c, axis=axis, keepdims=True))
    return xp.where(xp.any(nan, axis=axis, keepdims=True), nan, hit)


def _first(x: ShardArray, dim: str) -> ShardArray:
    """The arg-search of ``x`` along its size-1 ``dim``: zeros (the one entry wins, a NaN too, as in NumPy), made
    locally with no collective and no resolution of a pending sum; the result is replicated over ``dim``'s axes
    (every device knows the answer)."""
    mesh, xp = x.mesh, x.mesh.backend.xp
    i = x.dims.index(dim)
    keep = tuple(d for d in x.dims if d != dim)
    out_axes = {d: a for d, a in zip(x.dims, x.spec.axes) if d != dim}

    def zeros(s: Any) -> Any:
        shape = s.shape[:i] + s.shape[i + 1 :]
        return MetaArray(shape, np.int64) if isinstance(s, MetaArray) else xp.zeros(shape, dtype=np.int64)

    shards = map_blocks(mesh, x.spec.used_axes.union(x.pending), zeros, x.shards)
    return new_array(mesh, keep, x.sizes, out_axes, shards, dtype=np.dtype(np.int64))


def _search(x: ShardArray, dim: Any, op: str) -> ShardArray:
    x = require_array(x, f"sa.{op}")
    dim = one_dim_arg(x, dim, op, "search", none_on_1d=True)
    if x.dtype.kind not in "biufc" and x.dtype.name != "bfloat16":
        raise DTypeError(f"{op}: needs a numeric or bool array; got dtype {x.dtype} (array {x.sizes})")
    if x.sizes[dim] == 0:
        raise DimensionError(
            f"{op}: dim {dim!r} of the array {x.sizes} is empty (size 0); an empty sequence has no {op} (as in NumPy)"
        )
    if x.sizes[dim] == 1:
        return _first(x, dim)
    x = resolve(x, x.spec.axes)
    i = x.dims.index(dim)
    axes = x.spec.of(dim)
    keep = tuple(d for d in x.dims if d != dim)
    out_axes = {d: a for d, a in zip(x.dims, x.spec.axes) if d != dim}
    mesh, xp = x.mesh, x.mesh.backend.xp
    offsets = [b[i][0] for b in block_bounds(mesh, x.spec)]
    if not axes:

        def local(s: Any) -> Any:
            if isinstance(s, MetaArray):
                return MetaArray(s.shape[:i] + s.shape[i + 1 :], np.int64)
            return _arg_extreme(xp, s, i, op).astype(np.int64, copy=False)  # (intp already: no copy)

        shards = map_blocks(mesh, x.spec.used_axes, local, x.shards, pure=True)  # (big blocks: on the copy pool)
        return new_array(mesh, keep, x.sizes, out_axes, shards, dtype=np.dtype(np.int64))

    cplx = x.dtype.kind == "c"
    wide, big = np.dtype(np.complex128) if cplx else wide_dtype(x.dtype), x.sizes[dim]
    worst: Any
    if cplx:
        worst = complex(-np.inf, -np.inf) if op == "argmax" else complex(np.inf, np.inf)
    elif x.dtype.kind == "b":
        worst = 0 if op == "argmax" else 1
    elif wide.kind == "f":
        worst = -np.inf if op == "argmax" else np.inf
    else:
        info = np.iinfo(x.dtype)
        worst = info.min if op == "argmax" else info.max

    # local pairs, packed as int64 (value bits, global index), shape (..., 1 at i, ..., 2)
    def pair(off: int, s: Any) -> Any:
        if isinstance(s, MetaArray):
            return MetaArray(s.shape[:i] + (1,) + s.shape[i + 1 :] + (3 if cplx else 2,), np.int64)
        shape = s.shape[:i] + (1,) + s.shape[i + 1 :]
        if s.shape[i] == 0:
            val = xp.full(shape, worst, dtype=wide)
            idx = xp.full(shape, big, dtype=np.int64)
        else:
            pos = _arg_extreme(xp, s, i, op)
            if i == s.ndim - 1 and s.flags.c_contiguous:  # the winners by flat index: cheaper than take_along_axis
                flat = s.reshape(-1)[xp.arange(pos.size) * s.shape[i] + pos.reshape(-1)]
                val = flat.reshape(shape).astype(wide)
            else:
                val = xp.take_along_axis(s, xp.expand_dims(pos, i), axis=i).astype(wide)
            idx = xp.expand_dims(pos, i).astype(np.int64, copy=False) + off
        if cplx:  # (value parts as float64 bits, index): 3 int64
            parts = [xp.ascontiguousarray(val.real).view(np.int64), xp.ascontiguousarray(val.imag).view(np.int64)]
            return xp.stack([*parts, idx], axis=-1)
        return xp.stack([xp.ascontiguousarray(val).view(np.int64), idx], axis=-1)

    pairs = map_blocks(mesh, x.spec.used_axes, pair, offsets, x.shards, pure=True)
    group = mesh_order(mesh, axes)
    gathered = mesh.comm.allgather(pairs, group, dim=i)

    bounds = block_bounds(mesh, x.spec)
    # the candidates lie in index order when the group's member order (the mesh's order of the axes) is the dim's
    # (its layout's, major first) and no block is empty; otherwise the winner is picked by its index
    in_order = tuple(group) == tuple(axes) and not any(b[i][0] == b[i][1] for b in bounds)

    def pick(g: Any) -> Any:
        if isinstance(g, MetaArray):
            return MetaArray(g.shape[:i] + g.shape[i + 1 : -1], np.int64)
        if cplx:
            idx = g[..., 2]
            parts = [xp.ascontiguousarray(g[..., k]).view(np.float64) for k in (0, 1)]
            vals = xp.stack(parts, axis=-1).view(np.complex128)[..., 0]
            return xp.min(xp.where(complex_hits(xp, vals, i, op), idx, np.iinfo(np.int64).max), axis=i)
        vals = xp.ascontiguousarray(g[..., 0]).view(wide)
        idx = g[..., 1]
        if in_order:  # the first extreme (or first NaN) among the candidates wins, as in NumPy
            win = _arg_extreme(xp, vals, i, op)
            return xp.take_along_axis(idx, xp.expand_dims(win, i), axis=i).squeeze(i)
        if wide.kind == "f":
            nan = xp.isnan(vals)
            clean = xp.where(nan, worst, vals)
        else:
            nan, clean = None, vals
        best = (xp.max if op == "argmax" else xp.min)(clean, axis=i, keepdims=True)
        cand = clean == best
        if nan is not None:
            any_nan = xp.any(nan, axis=i, keepdims=True)
            cand = xp.where(any_nan, nan, cand)
        return xp.min(xp.where(cand, idx, np.iinfo(np.int64).max), axis=i)

    shards = map_blocks(mesh, _used(mesh, out_axes), pick, gathered)
    return new_array(mesh, keep, x.sizes, out_axes, shards, dtype=np.dtype(np.int64))


def complex_extreme(x: ShardArray, dims: tuple[str, ...], op: str) -> ShardArray:
    """``max``/``min`` (``op``) of the complex ``x`` over ``dims`` (non-empty), as ``np.max``/``np.min``.

    NumPy's ``maximum``/``minimum`` of complex values compare lexicographically (real part, then imaginary part)
    and propagate a value with a NaN in either part; the result is the first such value in ``x``'s (row-major)
    order, as NumPy's reduction keeps it: the first value with a NaN part, else the first extreme (the sign of a
    zero part, or which NaN, is NumPy's). Each device picks its block's first extreme over the reduced axes
    (``complex(-inf, -inf)`` for ``max`` over an empty block, ``complex(inf, inf)`` for ``min``: the identities
    of the order); over split dims **one allgather** over their mesh axes of one (value, flat index) triple of
    int64 per output element per device (the parts' float64 bits and the value's row-major position among the
    reduced dims: an allreduce has no complex max, NCCL's has none), then each device picks the first of them.
    """
    x = resolve(x, x.spec.axes)
    mesh, xp = x.mesh, x.mesh.backend.xp
    index = tuple(sorted(x.dims.index(d) for d in dims))  # (row-major: NumPy's order of the reduced values)
    keep = tuple(d for d in x.dims if d not in dims)
    out_axes = {d: a for d, a in zip(x.dims, x.spec.axes) if d not in dims}
    worst = complex(-np.inf, -np.inf) if op == "max" else complex(np.inf, np.inf)
    arg = "argmax" if op == "max" else "argmin"

    def flat(s: Any, axes: tuple[int, ...]) -> tuple[Any, Any, tuple[int, ...]]:
        """``s``'s values along ``axes`` as a last axis (row-major), the first extreme's position, the shape."""
        shape = tuple(n for k, n in enumerate(s.shape) if k not in axes)
        moved = xp.moveaxis(s, axes, tuple(range(s.ndim - len(axes), s.ndim)))
        f = moved.reshape(shape + (math.prod(s.shape[k] for k in axes),))
        return f, xp.argmax(complex_hits(xp, f, -1, arg), axis=-1), shape

    def pick(s: Any) -> Any:
        shape = tuple(n for k, n in enumerate(s.shape) if k not in index)
        if isinstance(s, MetaArray):
            return MetaArray(shape, x.dtype)
        if any(s.shape[k] == 0 for k in index):
            return xp.full(shape, worst, dtype=x.dtype)
        f, pos, _ = flat(s, index)
        return xp.take_along_axis(f, xp.expand_dims(pos, -1), axis=-1)[..., 0]

    red_axes = mesh_order(mesh, [a for d in dims for a in x.spec.of(d)])
    if not red_axes:
        shards = map_blocks(mesh, x.spec.used_axes, pick, x.shards)
        return new_array(mesh, keep, x.sizes, out_axes, shards, dtype=x.dtype)
    sizes = tuple(x.shape[k] for k in index)
    lows = [tuple(b[k][0] for k in index) for b in block_bounds(mesh, x.spec)]

    def triple(low: tuple[int, ...], s: Any) -> Any:
        shape = tuple(n for k, n in enumerate(s.shape) if k not in index)
        if isinstance(s, MetaArray):
            return MetaArray((1, *shape, 3), np.int64)
        if any(s.shape[k] == 0 for k in index):
            val = xp.full(shape, worst, dtype=np.complex128)
            at = xp.full(shape, math.prod(sizes), dtype=np.int64)
        else:
            f, pos, _ = flat(s, index)
            val = xp.take_along_axis(f, xp.expand_dims(pos, -1), axis=-1)[..., 0].astype(np.complex128)
            at = xp.zeros(shape, dtype=np.int64)
            for n, lo, loc in zip(sizes, low, xp.unravel_index(pos, tuple(s.shape[k] for k in index))):
                at = at * n + (loc.astype(np.int64) + lo)
        v = val.reshape(-1)  # (1-D: a 0-d result's parts viewed too)
        parts = [xp.ascontiguousarray(v.real).view(np.int64), xp.ascontiguousarray(v.imag).view(np.int64)]
        return xp.stack([*parts, at.reshape(-1)], axis=-1).reshape((1, *shape, 3))

    def choose(g: Any) -> Any:
        if isinstance(g, MetaArray):
            return MetaArray(g.shape[1:-1], x.dtype)
        vals = xp.stack([xp.ascontiguousarray(g[..., k]).view(np.float64) for k in (0, 1)], axis=-1)
        vals = vals.view(np.complex128)[..., 0]
        at = xp.where(complex_hits(xp, vals, 0, arg), g[..., 2], np.iinfo(np.int64).max)
        win = xp.argmin(at, axis=0)  # (the first of the extremes in x's order)
        return xp.take_along_axis(vals, win[None], axis=0)[0].astype(x.dtype)

    triples = map_blocks(mesh, x.spec.used_axes, triple, lows, x.shards, pure=True)
    shards = map_blocks(mesh, _used(mesh, out_axes), choose, mesh.comm.allgather(triples, red_axes, 0))
    return new_array(mesh, keep, x.sizes, out_axes, shards, dtype=x.dtype)


def _used(mesh: Any, axes: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    return mesh_order(mesh, [a for v in axes.values() for a in v])


@nondifferentiable("argmax")
def argmax(x: ShardArray, dim: Any = None) -> ShardArray:
    """Index of the largest value along ``dim`` (int64), the first one on ties; NaN counts as largest (NumPy).

    Over a split dim: a local argmax per block (its offset makes the index
    global), then **one allgather** over the dim's axes of one (value, index)
    pair per output element (16 bytes each), and a local pick. Along a dim of
    size 1 (split or not) the result is zeros, made locally: no collective,
    and a pending sum is not resolved. A 1-D array may leave ``dim`` out.
    Bool arrays work as in NumPy; complex ones in NumPy's order (lexicographic,
    the first value with a NaN part wins; 24-byte triples in the allgather).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 5.0, 5.0], [7.0, 0.0, 2.0]]), dims=("batch", "vocab"), mesh=mesh,
        ...                layout={"vocab": "col"})
        >>> with sa.comm_log() as log:
        ...     i = sa.argmax(x, "vocab")
        >>> i.numpy(), [r.op for r in log.records]
        (array([1, 0]), ['allgather'])
    """
    return _search(x, dim, "argmax")


@nondifferentiable("argmin")
def argmin(x: ShardArray, dim: Any = None) -> ShardArray:
    """Index of the smallest value along ``dim`` (int64), the first one on ties; NaN counts as smallest (NumPy).

    Collectives as ``argmax``: one allgather of (value, index) pairs over a split dim's axes (none along a dim of
    size 1).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([3, 1, 4, 1, 5]), dims=("seq",), mesh=mesh, layout={"seq": ("row", "col")})
        >>> int(sa.argmin(x, "seq").numpy())
        1
    """
    return _search(x, dim, "argmin")


__all__ = ["argmax", "argmin", "complex_extreme", "complex_hits"]
