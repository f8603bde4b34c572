"""The ``offset`` diagonal of the matrices of an array, from each device's own block (``xp.linalg.diagonal``/``trace``).

Entry ``t`` of the diagonal is ``x[lo + t, lo + t + offset]`` (``lo = max(0, -offset)``). The device holding
rows ``[r0, r1)`` and columns ``[c0, c1)`` of a matrix holds the entries ``t`` with ``r0 <= lo + t < r1`` and
``c0 <= lo + t + offset < c1``; it takes them from its block by index arithmetic and puts them into a vector of
the diagonal's length, ``-0.0`` elsewhere (``v + -0.0 == v`` for every float ``v``, signed zeros included;
integers and bools get 0). The result is that vector **pending over the matrix dims' axes**: one device per
matrix holds each entry, so the pending sum is the diagonal. It resolves where its value is needed (an allreduce
of the diagonal's length, or a reduce-scatter into a split), and a sum over it stays pending: ``trace`` allreduces
one number per matrix. Traffic is the diagonal's, never the matrix's; no mask is made. Batch dims keep their
split; a pending ``x`` (a product) stays pending too (the diagonal of a sum is the sum of the diagonals).

Differentiable: the VJP puts the cotangent on the diagonal of a zero matrix of ``x``'s layout, each device
writing the entries of its own block (the cotangent's diagonal dim gathered first where it is split: its
length, not a matrix).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..backend.meta import MetaArray
from ..core.common import map_blocks, mesh_order, new_array
from ..core.relayout import permute_dims, relayout, resolve_to
from ..core.tape import Context, differentiable, register_vjp
from ..layout import block_bounds
from ..ops.cotangent import match


def _span(box: tuple[tuple[int, int], ...], r: int, c: int, lo: int, hi: int, offset: int) -> tuple[int, int]:
    """The rows ``[a, b)`` of the diagonal entries in a block (``box``: its bounds; ``r``, ``c``: the matrix dims)."""
    (r0, r1), (c0, c1) = box[r], box[c]
    a, b = max(r0, c0 - offset, lo), min(r1, c1 - offset, hi)
    return a, max(a, b)


def _filler(dtype: np.dtype) -> Any:
    return -0.0 if dtype.kind in "fc" or dtype.name == "bfloat16" else 0


@differentiable("linalg.diagonal")
def diagonal(x: ShardArray, rows: str, cols: str, offset: int, new: str) -> ShardArray:
    """The ``offset`` diagonal of the matrices of ``x`` (matrix dims ``rows``, ``cols``): dims (batch..., new),
    pending over the axes of ``rows`` and ``cols`` (see the module docstring)."""
    m, n = x.sizes[rows], x.sizes[cols]
    lo, hi = max(0, -offset), max(max(0, -offset), min(m, n - offset))
    k = hi - lo
    mesh, xp = x.mesh, x.mesh.backend.xp
    batch = tuple(d for d in x.dims if d not in (rows, cols))
    r, c = x.dims.index(rows), x.dims.index(cols)
    order = tuple(x.dims.index(d) for d in batch)
    lay = {d: x.spec.of(d) for d in batch if x.spec.of(d)}
    pending = mesh_order(mesh, {*x.pending, *x.spec.of(rows), *x.spec.of(cols)})
    sizes = {**{d: x.sizes[d] for d in batch}, new: k}
    used = {*x.spec.used_axes, *x.pending}
    bounds = block_bounds(mesh, x.spec) if mesh.backend.has_data else None
    fill = _filler(x.dtype)

    def block(s: Any, box: Any) -> Any:
        if isinstance(s, MetaArray):  # shapes only
            return MetaArray((*(s.shape[i] for i in order), k), s.dtype)
        s = xp.transpose(s, (*order, r, c))
        out = xp.full((*s.shape[:-2], k), fill, dtype=s.dtype)
        a, b = _span(box, r, c, lo, hi, offset)
        if b > a:
            i = xp.arange(a, b)
            out[..., a - lo : b - lo] = s[..., i - box[r][0], i + offset - box[c][0]]
        return out

    boxes = list(bounds) if bounds is not None else [None] * mesh.size
    shards = map_blocks(mesh, used, block, x.shards, boxes)
    return new_array(mesh, (*batch, new), sizes, lay, shards, pending, dtype=x.dtype)


@register_vjp("linalg.diagonal")
def _diagonal_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    x, rows, cols, offset, new = ctx.args
    m, n = x.sizes[rows], x.sizes[cols]
    lo = max(0, -offset)
    batch = tuple(d for d in x.dims if d not in (rows, cols))
    g = resolve_to(g) if g.pending else g
    g = relayout(g, {d: x.spec.of(d) for d in batch if x.spec.of(d)})  # the diagonal whole, the batch as x's
    g = permute_dims(g, (*batch, new))
    mesh, xp = x.mesh, x.mesh.backend.xp
    r, c = x.dims.index(rows), x.dims.index(cols)
    back = tuple(int(j) for j in np.argsort([x.dims.index(d) for d in (*batch, rows, cols)]))
    bounds = block_bounds(mesh, x.spec)

    def block(v: Any, box: Any) -> Any:
        shape = tuple(b - a for a, b in box)
        z = xp.zeros((*(shape[x.dims.index(d)] for d in batch), shape[r], shape[c]), dtype=v.dtype)
        a, b = _span(box, r, c, lo, min(m, n - offset), offset)
        if b > a:
            i = xp.arange(a, b)
            z[..., i - box[r][0], i + offset - box[c][0]] = v[..., a - lo : b - lo]
        return xp.transpose(z, back)

    shards = map_blocks(mesh, x.spec.used_axes, block, g.shards, list(bounds))
    out = new_array(mesh, x.dims, dict(x.sizes), x.layout, shards, dtype=g.dtype)
    return [match(out, x), None, None, None, None]


__all__ = ["diagonal"]
