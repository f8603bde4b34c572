"""``take`` with ids split over the axes of the looked-up dim: requests to the owners, rows back (``route.py``).

When the ids' own dims are split over (some of) the mesh axes ``G`` that
split ``x``'s ``dim``, each device keeps its block of ids: it computes each
id's owner (the member of its group along ``G`` holding that row: a search of
the ``p`` block starts, known on every device), and then

* forward (``routed_take``): one alltoallv of the counts (``p - 1`` int64),
  **one alltoallv of the requests** (one int64 per id of its block: the row in
  the owner's block), the owners pick the rows, **one alltoallv of the
  answers** (one row of ``x``'s remaining block per id) back, reordered. The
  result is split like the ids (no pending sum);
* backward (``routed_scatter_add``, the VJP): the same counts, then **one
  alltoallv of (row, cotangent row) pairs** to the owners, which add them
  into zeros shaped like their block (``np.add.at``). Devices holding the same
  ids (replicas along axes of ``G`` the ids do not use) send disjoint shares,
  so every contribution is added once; ids split over axes ``x`` does not use
  leave the result pending over those axes.

Traffic per device is proportional to its block of ids (and of the result),
never to the whole index array. On a ``meta`` mesh (the planner's) the same
collectives run with the counts of ids spread uniformly over the owners' rows
(``route.Route``'s model).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...array import ShardArray
from ...core.common import mesh_order, new_array
from ...layout import Layout, block_bounds
from .route import Route, locate, owner_table


def _rows(plan: Any, xp: Any, ib: Any, ids_dims: tuple[str, ...], n: int) -> tuple[Any, int, int]:
    """The (S*O,) ids of one block in (shared, own) row-major order, clipped into ``[0, n)``; S and O."""
    perm = tuple(ids_dims.index(d) for d in plan.ids_order)
    s = math.prod(plan.sizes_of(ib, ids_dims, plan.shared))
    o = math.prod(plan.sizes_of(ib, ids_dims, plan.own))
    flat = xp.clip(xp.transpose(ib, perm).reshape(-1).astype(np.int64), 0, max(n - 1, 0))
    return flat, s, o


def _requests(
    plan: Any, spec: Layout, ids: ShardArray, keep: Any = None
) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """Per device: the owner member and the row in the owner's (S * n_owner) table of each request, which of
    the device's (S*O) entries they are (``keep``: a per-device selector, or all), and the rows of ``dim`` each
    member of its group owns (``Route``'s model on a meta mesh)."""
    mesh = ids.mesh
    xp, backend = mesh.backend.xp, mesh.backend
    i = spec.dims.index(plan.dim)
    n = spec.sizes[i]
    owner: list[Any] = [None] * mesh.size
    rows: list[Any] = [None] * mesh.size
    picked: list[Any] = [None] * mesh.size
    owned: list[Any] = [None] * mesh.size
    bounds = block_bounds(mesh, spec)
    for d, ib in enumerate(ids.shards):
        if ib is None:
            continue
        with backend.scope(d):
            flat, s, o = _rows(plan, xp, ib, ids.dims, n)
            which = xp.arange(s * o, dtype=np.int64)
            if keep is not None:
                which = keep(d, which)
                flat = flat[which]
            m, rel = locate(mesh, spec, (i,), (flat,), d)
            owned[d] = owner_table(mesh, spec.axes[i], bounds, i, d)[3]  # (each member's block length of ``dim``)
            counts = backend.from_numpy(owned[d])[m]  # (the owner's block length of each request)
            owner[d], rows[d], picked[d] = m, (which // max(o, 1)) * counts + rel, which
    return owner, rows, picked, owned


def _table(block: Any, lead: int) -> Any:
    """``block`` as a 2-D table: its first ``lead`` axes merged into rows, the others into columns (either may be
    empty: ``reshape(-1, 0)`` cannot infer the rows of a block whose trailing axes hold no entries)."""
    return block.reshape(math.prod(block.shape[:lead]), math.prod(block.shape[lead:]))


def routed_take(plan: Any, x: ShardArray, ids: ShardArray) -> ShardArray:
    """``take`` by routing (the module docstring); ``x`` and ``ids`` in the plan's computation layouts."""
    mesh = x.mesh
    xp, backend = mesh.backend.xp, mesh.backend
    axes = x.spec.of(plan.dim)
    x_perm = tuple(x.dims.index(d) for d in plan.x_order)
    if ids.size == 0 or x.sizes[plan.dim] == 0:  # nothing to ask (or no rows: ids must be empty, else clipped)
        return _empty_take(plan, x, ids)
    owner, rows, _, owned = _requests(plan, x.spec, ids)
    route = Route(mesh, axes, owner, owned)
    got = route.send(rows)
    answers: list[Any] = [None] * mesh.size
    for d, r in enumerate(got):
        if r is None:
            continue
        with backend.scope(d):
            xb = xp.transpose(x.shards[d], x_perm)
            answers[d] = _table(xb, len(plan.shared) + 1)[r]
    back = route.back(answers)
    out: list[Any] = [None] * mesh.size
    for d, b in enumerate(back):
        if b is None:
            continue
        ib, xb = ids.shards[d], x.shards[d]
        shared = plan.sizes_of(ib, ids.dims, plan.shared)
        own = plan.sizes_of(ib, ids.dims, plan.own)
        rest = plan.sizes_of(xb, x.dims, plan.rest)
        with backend.scope(d):
            out[d] = xp.transpose(b.reshape((*shared, *own, *rest)), plan.out_perm)
    return new_array(mesh, plan.out_dims, plan.sizes, plan.out_axes, out, (), dtype=x.dtype)


def _empty_take(plan: Any, x: ShardArray, ids: ShardArray) -> ShardArray:
    """The result of a take with no ids (or no rows) on each device: zeros of the right block shapes."""
    mesh = x.mesh
    xp, backend = mesh.backend.xp, mesh.backend
    out: list[Any] = [None] * mesh.size
    for d, ib in enumerate(ids.shards):
        if ib is None:
            continue
        shape = (*(ib.shape[ids.dims.index(dm)] for dm in ids.dims), *plan.sizes_of(x.shards[d], x.dims, plan.rest))
        with backend.scope(d):
            out[d] = xp.zeros(shape, dtype=x.dtype)
    return new_array(mesh, plan.out_dims, plan.sizes, plan.out_axes, out, (), dtype=x.dtype)


def routed_scatter_add(plan: Any, g: ShardArray, ids: ShardArray, spec: Layout) -> ShardArray:
    """The VJP of ``routed_take``: ``g`` added into zeros shaped like ``x`` at ``ids`` (``np.add.at``), by routing.

    ``spec`` is the plan's computation layout of ``x``; ``g`` and ``ids`` are in the plan's layouts (``g``
    resolved). The result is pending over the axes that split the ids but not ``x``.
    """
    mesh = g.mesh
    xp, backend = mesh.backend.xp, mesh.backend
    axes = spec.of(plan.dim)
    ids_axes = {a for ax in ids.spec.axes for a in ax}
    spare = tuple(a for a in axes if a not in ids_axes)  # replicas of one ids block: each sends a share
    reps = mesh.axes_size(spare)

    def keep(d: int, which: Any) -> Any:
        if reps == 1:
            return which
        c = mesh.coords(d)
        r = 0
        for a in spare:
            r = r * mesh.axis_size(a) + c[a]
        return which[which % reps == r]

    if ids.size == 0:
        bounds = block_bounds(mesh, spec)
        zeros = [
            None if gb is None else xp.zeros(tuple(b - a for a, b in bounds[d]), g.dtype)
            for d, gb in enumerate(g.shards)
        ]
        return ShardArray(mesh, spec, g.dtype, zeros)
    owner, rows, picked, owned = _requests(plan, spec, ids, keep)
    local = (*plan.shared, *plan.own, *plan.rest)
    g_perm = tuple(g.dims.index(dm) for dm in local)
    vals: list[Any] = [None] * mesh.size
    for d, gb in enumerate(g.shards):
        if gb is None or picked[d] is None:
            continue
        with backend.scope(d):
            gl = xp.transpose(gb, g_perm)
            vals[d] = _table(gl, len(plan.shared) + len(plan.own))[picked[d]]
    route = Route(mesh, axes, owner, owned)
    got_rows, got_vals = route.send(rows), route.send(vals)
    x_perm = tuple(spec.dims.index(dm) for dm in plan.x_order)
    back = tuple(plan.x_order.index(dm) for dm in spec.dims)
    bounds = block_bounds(mesh, spec)
    out: list[Any] = [None] * mesh.size
    for d, r in enumerate(got_rows):
        if r is None:
            continue
        shape = tuple(bounds[d][k][1] - bounds[d][k][0] for k in x_perm)
        k = math.prod(shape[: len(plan.shared) + 1])
        rest = math.prod(shape[len(plan.shared) + 1 :])
        with backend.scope(d):
            v = got_vals[d].reshape(1, r.shape[0], rest).astype(g.dtype, copy=False)
            block = backend.scatter_rows(r.reshape(1, -1), v, k)[0] if k and rest else xp.zeros((k, rest), g.dtype)
            out[d] = xp.transpose(block.reshape(shape), back)
    pending = ids_axes - spec.used_axes
    return ShardArray(mesh, spec, g.dtype, out, mesh_order(mesh, pending))


__all__ = ["routed_scatter_add", "routed_take"]
