"""Gather by integer ids along a named dim (embedding lookups, picking target logits).

``take(x, ids, dim)`` matches dims by name: dims that ``ids`` shares with
``x`` are batch-like (elementwise), the other dims of ``ids`` are new. When
``dim`` is split and the ids are not split over its axes, each device looks
up the ids that fall in its block and puts zeros elsewhere, leaving a sum
pending over ``dim``'s axes (Megatron's vocab-parallel embedding); for float
and complex arrays those zeros are -0.0, the exact additive identity
(``-0.0 + v`` is ``v`` for every ``v``, -0.0 included), so a picked -0.0
stays -0.0. When the ids' own dims are split over ``dim``'s axes too,
requests go to the owners and rows come back (alltoallv,
``take_routed.py``): the result is split like the ids. Ids split over axes
that ``x`` uses (for its other dims, or for ``dim`` where a block of ids is
too small to route) are allgathered over those axes only, keeping the others
(a ``GatherWarning`` past ``route.GATHER_WARN_BYTES``, naming the bytes of the
gather and of the way back). Where they lost axes of ``dim`` (fewer than
``ROUTE_MIN_IDS`` ids a device), each device looks up the gathered ids in its
block and a **reduce-scatter** of the result over those axes (one per axis) gives every
device the rows of its own ids: it receives ``k - 1`` blocks of the result
(``k`` the lost axes' size), never the whole result, and reads nothing on the
host. The result is then split like the ids, as the routed path leaves it, so
its layout does not depend on how many ids there are. (The alternative, a
pending sum over ``dim``'s axes, would be resolved by an allreduce of the whole
gathered result: twice the bytes of the reduce-scatter, ``k`` times the block.)

The ids' range ``[0, size)`` is checked without a device-to-host read per call
(``check_ids``). Ids made by ``sa.asarray`` from host data carry their range
(``host_range``): checked on the host, at once. NumPy shards are on the host
already: checked at once. Ids made on GPUs (CuPy shards: a training stream's
``sa.from_local`` batches, ``argmax``, arithmetic) are checked on the devices:
each block's (min, max) is computed there and queued on the mesh
(``Mesh.defer_check``), with no read; the lookup itself clips every id into
its block, so it stays in bounds whatever the ids hold. The queued ranges are
read together, in one transfer, at the mesh's next read of a value
(``x.numpy()``, ``float(x)``, ``int``, ``bool``, ``item``, ``repr``), which
raises the ``DimensionError`` there (JAX's checks on the device, NumPy's
error). Under MPI (``comm="mpi"``) the check stays immediate and collective
(``host_reduce``), as before: a read of a replicated value is not collective,
so a queue read there could not make every process agree, or would hang one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.classlist import by_value
from ...core.common import common_mesh, map_blocks, merged_axes, mesh_order, new_array, require_ids, union_dims
from ...core.relayout import relayout, to_axes
from ...core.tape import differentiable
from ...errors import DimensionError, DTypeError, OutOfBoundsError
from ...layout import Layout, block_bounds, check_dims, check_sizes
from ...mesh import Mesh
from ..creation.basic import asarray
from ..elementwise.arithmetic import equal
from ..manipulation.structure import astype
from ..reduction.scan import sum_identity
from .route import moved_to
from .take_routed import routed_scatter_add, routed_take

ROUTE_MIN_IDS = 2048
"""Ids per device from which a lookup whose ids are split over ``dim``'s axes is routed to the owners (three
alltoallv and two small host reads of counts) rather than looked up and summed (an allgather of the ids and a
pending sum, no host read; a training step's token lookups): below it the reads' latency outweighs the bytes."""


class _Plan:
    """Dims and layout of one take: shared (batch-like), own (new from ids) and rest (kept from x)."""

    def __init__(self, x: ShardArray, ids: ShardArray, dim: str) -> None:
        _check(x, ids, dim)
        self.dim = dim
        self.shared = tuple(d for d in ids.dims if d in x.dims)
        self.own = tuple(d for d in ids.dims if d not in x.dims)
        self.rest = tuple(d for d in x.dims if d != dim and d not in ids.dims)
        self.out_dims = ids.dims + self.rest
        _, self.sizes = union_dims([x, ids], f"take along {dim!r}")
        split = x.spec.of(dim)
        own_axes = {a for d in self.own for a in ids.spec.of(d)}
        #: the ids' own dims share mesh axes with ``dim``: route requests to the owners (``take_routed.py``)
        # (blocks of fewer than ROUTE_MIN_IDS ids, or than the group has members, stay on the lookup-and-sum
        # path: the counts' host reads would outweigh them)
        self.routed = bool(own_axes.intersection(split)) and _largest_block(ids) >= max(
            x.mesh.axes_size(split), ROUTE_MIN_IDS
        )
        if self.routed:
            self.axes = {d: x.spec.of(d) for d in x.dims}
            taken = set(x.spec.used_axes).difference(split)
            for d in self.own:
                self.axes[d] = tuple(a for a in ids.spec.of(d) if a not in taken)
                taken.update(self.axes[d])
        else:
            self.axes = merged_axes([x, ids], (*x.dims, *self.own))
            # an own dim of the ids that loses its axes to x keeps those x leaves free: the ids are gathered over
            # the shared axes only, not over all of theirs (merged_axes unsplits the dim whole)
            taken = {a for axes in self.axes.values() for a in axes}
            for d in self.own:
                if not self.axes[d] and ids.spec.of(d):
                    self.axes[d] = tuple(a for a in ids.spec.of(d) if a not in taken)
                    taken.update(self.axes[d])
        self.back = None if self.routed else _scatter_back(ids, split, self.axes, self.out_dims)
        self.x_order = (*self.shared, dim, *self.rest)
        self.ids_order = (*self.shared, *self.own)
        local = (*self.shared, *self.own, *self.rest)
        self.out_perm = tuple(local.index(d) for d in self.out_dims)
        self.x_axes = tuple(self.axes[d] for d in x.dims)
        self.ids_axes = tuple(self.axes[d] for d in ids.dims)
        self.out_axes = {d: self.axes[d] for d in self.out_dims}

    def lows(self, x: ShardArray) -> list[int]:
        """Per device, the global index where its block of ``dim`` starts."""
        spec = x.spec.with_axes(self.x_axes)
        i = x.dims.index(self.dim)
        return [b[i][0] for b in block_bounds(x.mesh, spec)]

    def local_ids(self, xp: Any, ids_block: Any, ids_dims: tuple[str, ...], lo: int, n: int) -> tuple[Any, Any]:
        """(S, O) ids relative to this device's block, clipped into it, and the mask of those inside."""
        perm = tuple(ids_dims.index(d) for d in self.ids_order)
        s = math.prod(self.sizes_of(ids_block, ids_dims, self.shared))
        o = math.prod(self.sizes_of(ids_block, ids_dims, self.own))
        rel = xp.transpose(ids_block, perm).reshape(s, o) - lo
        inside = (rel >= 0) & (rel < n)
        return xp.where(inside, rel, 0), inside

    @staticmethod
    def sizes_of(block: Any, dims: tuple[str, ...], which: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(block.shape[dims.index(d)] for d in which)


def _scatter_back(
    ids: ShardArray, split: tuple[str, ...], axes: dict[str, tuple[str, ...]], out_dims: tuple[str, ...]
) -> tuple[tuple[str, ...], ...] | None:
    """The result layout that gives the ids' dims back the axes of ``dim`` (``split``) they lost to the lookup, or
    None where they lost none: the pending sum over ``split`` is then resolved by a reduce-scatter along those
    axes, each device keeping its own ids' rows (the result split like the ids, as the routed path leaves it).

    A dim keeps the ids' order of its axes where its computation axes are among the ids' own (the lost axes are
    put back in place), else the lost axes follow its computation axes.
    """
    lost = {d: tuple(a for a in ids.spec.of(d) if a in split and a not in axes[d]) for d in ids.dims}
    if not any(lost.values()):
        return None
    target = dict(axes)
    for d, gone in lost.items():
        if not gone:
            continue
        have = ids.spec.of(d)
        if set(axes[d]) <= set(have):
            target[d] = tuple(a for a in have if a in axes[d] or a in gone)
        else:
            target[d] = (*axes[d], *gone)
    return tuple(target[d] for d in out_dims)


def _rows_back(plan: _Plan, x: ShardArray, ids: ShardArray) -> str:
    """The warning's words on the rows' way back to ids that lost axes of ``dim`` (``plan.back``): one
    reduce-scatter over those axes, and the bytes a device receives in it (``(k - 1)`` result blocks)."""
    if plan.back is None:
        return ""
    gone = {a for axes in plan.back for a in axes}.difference(a for axes in plan.out_axes.values() for a in axes)
    k = x.mesh.axes_size(tuple(gone))
    spec = Layout(plan.out_dims, tuple(plan.sizes[d] for d in plan.out_dims), plan.back)
    blk = max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(x.mesh, spec)), default=0)
    axes = tuple(a for a in x.mesh.axis_names if a in gone)
    return (
        f" (the rows then come back by a reduce-scatter over {axes}, {(k - 1) * blk * x.dtype.itemsize} bytes "
        f"received per device; below {ROUTE_MIN_IDS} ids a device, requests are not routed)"
    )


def _largest_block(a: ShardArray) -> int:
    """The most elements any device holds of ``a``."""
    return max((math.prod(hi - lo for lo, hi in dev) for dev in block_bounds(a.mesh, a.spec)), default=0)


def _check(x: ShardArray, ids: ShardArray, dim: str) -> None:
    if not isinstance(x, ShardArray) or not isinstance(ids, ShardArray):
        raise DTypeError(
            f"take(x, ids, dim) needs two ShardArrays; got {type(x).__name__} and {type(ids).__name__}; "
            f"wrap arrays with sa.asarray(array, dims=..., mesh=...)"
        )
    if dim not in x.dims:
        raise DimensionError(f"take: dim {dim!r} is not a dim of x; x has dims {x.sizes}: pass one of those")
    if dim in ids.dims:
        raise DimensionError(
            f"take along {dim!r}: ids {ids.sizes} must not have the dim {dim!r} itself; rename it "
            f"(ids.rename({{{dim!r}: 'other'}}))"
        )
    require_ids(ids, f"take along {dim!r}")


def check_ids(ids: ShardArray, n: int, dim: str, op: str = "sa.take", clip: bool = False) -> ShardArray:
    """Check that every id lies in ``[0, n)``: at once where that reads nothing from a device, else on the devices.

    Ids with a ``host_range``, NumPy shards and MPI meshes are checked at once (``_check_range``, which raises).
    Ids on GPUs (CuPy shards, one process) are checked on the devices: the (min, max) of every block is queued
    on the mesh and read with the next value read from it, where ``DimensionError`` is raised (see the module
    docstring). The caller's lookup must then stay in bounds by itself (``take`` clips into each block), or
    pass ``clip=True`` to get the ids clipped into ``[0, n)`` on the devices (for kernels that index with them).

    Args:
        ids: integer ids.
        n: the size of the dim they index.
        dim: its name (for the message).
        op: the public op that indexes (for the message), e.g. ``"sa.take"``.
        clip: return the ids clipped into ``[0, n)`` when the check was queued.

    Returns:
        ``ids``, or with ``clip`` and a queued check, the ids clipped into ``[0, n)`` (the same layout).
    """
    mesh = ids.mesh
    if ids.host_range is not None or not _checks_on_device(mesh):
        _check_range(ids, n, dim)
        return ids
    parts = _block_ranges(ids)  # (none for no ids)
    if parts:
        mesh.defer_check((op, dim, n, ids.dims, ids.shape), _DeferredRange(mesh.backend, op, dim, n, ids.sizes, parts))
    if not clip:
        return ids
    out = map_blocks(mesh, ids.spec.used_axes, lambda b: mesh.backend.xp.clip(b, 0, n - 1), ids.shards)
    return ShardArray(mesh, ids.spec, ids.dtype, out, ids.pending)


def _checks_on_device(mesh: Mesh) -> bool:
    """Whether id ranges are checked on the devices and read later: GPU shards in one process (not NumPy or meta
    shards, not MPI).

    Under MPI a read of a replicated value is local (one process may read alone), so a queue read there could
    not make the processes agree, or would leave one waiting in a collective: the check stays immediate.
    """
    backend = mesh.backend
    return backend.has_data and mesh.comm_kind != "mpi" and getattr(backend.xp, "__name__", "") != "numpy"


def _block_ranges(ids: ShardArray) -> list[tuple[int, Any]]:
    """``(device, [min, max])`` of every distinct non-empty block, each an int64 pair on its own device (no read)."""
    backend = ids.mesh.backend
    xp = backend.xp
    parts = []
    for rep, _ in ids.mesh.replica_classes(ids.spec.used_axes):
        b = ids.shards[rep]
        if b.size:
            with backend.scope(rep):
                pair = xp.stack([xp.min(b), xp.max(b)])
                if pair.dtype == np.uint64:  # beyond int64: out of range all the same, shown as int64's maximum
                    pair = xp.minimum(pair, np.uint64(2**63 - 1))
                parts.append((rep, pair.astype(np.int64, copy=False)))
    return parts


class _DeferredRange:
    """An id range check left on the devices (``Mesh.defer_check``): ``(device, [min, max])`` pairs, no read.

    Later checks of the same op, dim and ids sizes fold in (a training loop's every step); past ``_FOLD``
    pairs, the pairs of each device are reduced to one there, so the queue stays small.
    """

    __slots__ = ("backend", "dim", "n", "op", "parts", "sizes")

    def __init__(self, backend: Any, op: str, dim: str, n: int, sizes: dict[str, int], parts: list) -> None:
        self.backend, self.op, self.dim, self.n, self.sizes, self.parts = backend, op, dim, n, sizes, parts

    def fold(self, other: _DeferredRange) -> None:
        self.parts.extend(other.parts)
        if len(self.parts) > _FOLD:
            xp = self.backend.xp
            by_device: dict[int, list[Any]] = {}
            for d, pair in self.parts:
                by_device.setdefault(d, []).append(pair)
            self.parts = []
            for d, pairs in by_device.items():
                with self.backend.scope(d):
                    both = xp.stack(pairs)
                    self.parts.append((d, xp.stack([xp.min(both[:, 0]), xp.max(both[:, 1])])))

    def verdict(self, values: list[np.ndarray]) -> OutOfBoundsError | None:
        lo = min(int(v[0]) for v in values)
        hi = max(int(v[1]) for v in values)
        if lo >= 0 and hi < self.n:
            return None
        n, dim = self.n, self.dim
        return OutOfBoundsError(
            f"{self.op} along {dim!r} (size {n}): ids {self.sizes} must lie in [0, {n}); found values from {lo} to "
            f"{hi} (ids made on the device are checked there; this was found at the next read of a value); "
            f"{_remedy(n, dim)}"
        )


_FOLD = 16  # pairs a deferred range check holds before it reduces them on their devices


def _check_range(ids: ShardArray, n: int, dim: str) -> None:
    """Raise ``DimensionError`` now unless every id lies in ``[0, n)`` (``check_ids`` without the queue).

    Ids made by ``sa.asarray`` from host data carry their range (``host_range``,
    found on the host where they were made): no device is touched. Otherwise
    each distinct block's (min, max) is computed on its device and the pairs
    are stacked there (on the first block's GPU); the stack then comes to the
    host in one transfer. Under MPI the processes agree on the range
    (``host_reduce``), so they raise together.
    """
    backend = ids.mesh.backend
    if not backend.has_data or ids.size == 0:
        return
    lo, hi = ids.host_range if ids.host_range is not None else _device_range(ids)
    comm = ids.mesh.comm  # under MPI every process must agree (and raise) together
    lo = comm.host_reduce(lo, "min")
    hi = comm.host_reduce(hi, "max")
    if lo < 0 or hi >= n:
        raise OutOfBoundsError(
            f"take along {dim!r} (size {n}): ids {ids.sizes} must lie in [0, {n}); found values from {lo} to {hi}; "
            f"{_remedy(n, dim)}"
        )


def _remedy(n: int, dim: str) -> str:
    """What to do about ids out of ``[0, n)`` (an empty dim has no entry any id could pick)."""
    if n == 0:
        return f"{dim!r} is empty, so only an empty set of ids can index it"
    return f"clip or remap the ids (e.g. ids % {n}), or make {dim!r} larger"


def _device_range(ids: ShardArray) -> tuple[int, int]:
    """(min, max) of ``ids`` over every block, in one device-to-host transfer (``_NO_IDS`` for no ids here)."""
    pairs = _block_ranges(ids)
    if not pairs:
        return _NO_IDS
    host = ids.mesh.backend.read_together(pairs)  # blocks on other GPUs come to the first one's (no host round trip)
    return min(int(h[0]) for h in host), max(int(h[1]) for h in host)


_NO_IDS = (2**63 - 1, -(2**63))  # (min, max) of a process that holds no ids: neutral for the reductions
# (int64 bounds: every process offers host_reduce an int64, as SHARDARRAY_CHECK_SPMD=1 requires)


@differentiable("take")
def take(x: ShardArray, ids: ShardArray, dim: str) -> ShardArray:
    """Pick entries of ``x`` along ``dim`` at integer ``ids``, matching the other dims by name.

    The result has the dims of ``ids`` followed by the remaining dims of
    ``x``. Dims shared by ``x`` and ``ids`` are matched elementwise (like
    ``np.take_along_axis``); the other dims of ``ids`` index (like
    ``np.take``). If ``dim`` is split and the ids are not, the result is
    pending over its axes; ids split over ``dim``'s axes are routed to the
    owners (counts, requests and rows: three alltoallv, each of about the
    device's block of ids) and the result is split like them; below
    ``ROUTE_MIN_IDS`` ids a device they are allgathered over those axes
    instead, looked up on every owner, and the rows come back by one
    reduce-scatter of the result over them (split like the ids all the same).

    Args:
        x: the array to pick from, e.g. an embedding table (vocab, d_model).
        ids: integer ids in ``[0, x.sizes[dim])``, e.g. tokens (batch, seq).
        dim: the dim of ``x`` the ids index.

    Raises:
        DimensionError: ``dim`` is not a dim of ``x``, or an id is out of range.
        DTypeError: ``ids`` is not an integer array.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> table = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("vocab", "d_model"), mesh=mesh,
        ...                    layout={"vocab": "col"})
        >>> tokens = sa.asarray(np.array([[3, 0], [1, 1]]), dims=("batch", "seq"), mesh=mesh, layout={"batch": "row"})
        >>> e = sa.take(table, tokens, "vocab")
        >>> e.dims, e.pending, e.numpy()[0]
        (('batch', 'seq', 'd_model'), ('col',), array([[6., 7.],
               [0., 1.]]))
    """
    plan = _Plan(x, ids, dim)
    mesh = common_mesh([x, ids], "take")
    check_ids(ids, x.sizes[dim], dim)  # on GPUs: queued, read at the next read of a value (the lookup clips)
    x = to_axes(x, plan.x_axes, False)
    ids = moved_to(  # (an axis the ids lose, on any dim, is allgathered)
        f"take along {dim!r}",
        ids,
        plan.ids_axes,
        f"x splits {dim!r} or its other dims over them{_rows_back(plan, x, ids)}; split the ids' new dims over the "
        f"axes of {dim!r} and their shared dims as x's (or over axes x does not use) to avoid it",
    )
    if plan.routed:  # ids split over dim's axes: requests to the owners, rows back
        return routed_take(plan, x, ids)
    xp, backend = mesh.backend.xp, mesh.backend
    lows = plan.lows(x)
    x_perm = tuple(x.dims.index(d) for d in plan.x_order)
    split = bool(x.spec.of(dim))
    fill = sum_identity(x.dtype)  # what a device adds to the pending sum where it holds no id

    def block(lo: int, xb: Any, ib: Any) -> Any:
        xb = xp.transpose(xb, x_perm)
        shared = xb.shape[: len(plan.shared)]
        n = xb.shape[len(plan.shared)]
        rest = xb.shape[len(plan.shared) + 1 :]
        own = plan.sizes_of(ib, ids.dims, plan.own)
        table = xb.reshape(math.prod(shared), n, math.prod(rest))
        rel, inside = plan.local_ids(xp, ib, ids.dims, lo, n)
        if n == 0:
            got = xp.full((table.shape[0], rel.shape[1], table.shape[2]), fill, dtype=x.dtype)
        else:
            got = backend.take_rows(table, rel)
            if split:  # select, never multiply: 0 * inf at a clipped id would be NaN
                got = xp.where(inside[..., None], got, xp.full((), fill, dtype=got.dtype))
        return xp.transpose(got.reshape((*shared, *own, *rest)), plan.out_perm)

    used = {a for axes in plan.axes.values() for a in axes}
    shards = map_blocks(mesh, used, block, by_value(lows), x.shards, ids.shards)  # (devices that agree share a call)
    out = new_array(mesh, plan.out_dims, plan.sizes, plan.out_axes, shards, x.spec.of(dim), dtype=x.dtype)
    # ids that lost axes of dim to the lookup: the rows go back to them by a reduce-scatter of the result (one per axis)
    return out if plan.back is None else to_axes(out, plan.back, False)


def _scatter_rows(xp: Any, backend: Any, ids: Any, values: Any, n: int) -> Any:
    """``backend.scatter_rows`` (a (S, n, R) array with ``values[s, o]`` added at row ``ids[s, o]``).

    On NumPy float shards without ``np.add.at``: the ids are sorted once and the
    rows of each id summed with one ``np.add.reduceat`` (a contiguous pass; the
    embedding gradient's hot path), then written to their distinct rows.
    """
    if getattr(xp, "__name__", "") != "numpy" or values.dtype.kind != "f" or values.dtype.itemsize < 4:
        return backend.scatter_rows(ids, values, n)
    s, o, r = values.shape
    out = np.zeros((s, n, r), dtype=values.dtype)
    if o == 0 or n == 0:
        return out
    for i in range(s):
        order = np.argsort(ids[i], kind="stable")
        sid = ids[i][order]
        starts = np.flatnonzero(np.concatenate(([True], sid[1:] != sid[:-1])))
        out[i, sid[starts]] = np.add.reduceat(values[i][order], starts, axis=0)
    return out


def scatter_add(g: ShardArray, ids: ShardArray, x: ShardArray, dim: str) -> ShardArray:
    """The VJP of ``take`` with respect to ``x``: add ``g`` into zeros shaped like ``x`` at ``ids``.

    The result has ``x``'s dims in the computation layout of the forward
    take, pending over the axes of ids' own dims (they are summed over).
    """
    plan = _Plan(x, ids, dim)
    mesh = x.mesh
    ids = to_axes(ids, plan.ids_axes, False)
    target = tuple(plan.out_axes[d] for d in g.dims)
    if plan.routed:  # the forward routed its requests: route (id, row) pairs to the owners
        g = to_axes(g, target, False)
        return routed_scatter_add(plan, g, ids, x.spec.with_axes(plan.x_axes))
    keep = not set(g.pending).intersection(a for axes in plan.axes.values() for a in axes)
    g = to_axes(g, target, keep)
    xp, backend = mesh.backend.xp, mesh.backend
    spec = x.spec.with_axes(plan.x_axes)
    bounds = block_bounds(mesh, spec)
    i_dim = x.dims.index(dim)
    local = (*plan.shared, *plan.own, *plan.rest)
    g_perm = tuple(g.dims.index(d) for d in local)
    back = tuple(plan.x_order.index(d) for d in x.dims)

    def block(span: tuple[int, int], gb: Any, ib: Any) -> Any:
        lo, hi = span
        n = hi - lo
        gb = xp.transpose(gb, g_perm)
        shared = gb.shape[: len(plan.shared)]
        own = gb.shape[len(plan.shared) : len(plan.shared) + len(plan.own)]
        rest = gb.shape[len(plan.shared) + len(plan.own) :]
        s, r = math.prod(shared), math.prod(rest)
        vals = gb.reshape(s, math.prod(own), r)
        rel, inside = plan.local_ids(xp, ib, ids.dims, lo, n)
        if n == 0 or vals.shape[1] == 0:
            out = xp.zeros((s, n, r), dtype=g.dtype)
        else:
            vals = xp.where(inside[..., None], vals, xp.zeros((), dtype=vals.dtype))  # select: 0 * inf is NaN
            out = _scatter_rows(xp, backend, rel, vals, n)
        return xp.transpose(out.reshape((*shared, n, *rest)), back)

    own_axes = [a for d in plan.own for a in plan.axes[d]]
    pending = set(g.pending).union(own_axes)
    used = spec.used_axes.union(pending)
    spans = by_value([b[i_dim] for b in bounds])  # (devices that agree share a call)
    shards = map_blocks(mesh, used, block, spans, g.shards, ids.shards)
    axes = dict(zip(x.dims, plan.x_axes))
    return new_array(mesh, x.dims, plan.sizes, axes, shards, mesh_order(mesh, pending), dtype=g.dtype)


def one_hot(ids: ShardArray, dim: str, size: int, dtype: Any = "float32", layout: Any = None) -> ShardArray:
    """A one-hot encoding of integer ``ids`` along a new dim ``dim`` of ``size``.

    Args:
        ids: an integer array; ids outside ``[0, size)`` give all-zero rows.
        dim: the name of the new dim (not a dim of ``ids``).
        size: the number of classes, >= 1.
        dtype: the dtype of the result.
        layout: the result's layout (by default ``ids``' layout, ``dim`` unsplit).

    Raises:
        DimensionError: ``size`` is not an integer >= 1, or ``dim`` is a dim of ``ids``.
        DTypeError: ``ids`` is not an integer array.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> ids = sa.asarray(np.array([2, 0]), dims=("batch",), mesh=mesh, layout={"batch": "row"})
        >>> sa.one_hot(ids, "vocab", 3, layout={"batch": "row", "vocab": "col"}).numpy()
        array([[0., 0., 1.],
               [1., 0., 0.]], dtype=float32)
    """

    ids = require_ids(ids, "one_hot")
    (dim,) = check_dims((dim,), what="one_hot's new dim")
    if isinstance(size, bool) or not hasattr(size, "__index__"):
        check_sizes((dim,), (size,), what="one_hot")  # raises: the size must be an integer
    size = int(size)
    if size < 1:
        raise DimensionError(
            f"one_hot: the size of the new dim {dim!r} is {size}; it must be >= 1 (the number of classes)"
        )
    if dim in ids.dims:
        raise DimensionError(
            f"one_hot: the new dim {dim!r} is already a dim of ids {ids.sizes}; name the new dim differently"
        )
    mesh = ids.mesh
    rng = asarray(
        np.arange(size), dims=(dim,), mesh=mesh, layout={dim: layout[dim]} if layout and dim in layout else {}
    )
    out = astype(equal(ids, rng), dtype)
    return out if layout is None else relayout(out, layout)
