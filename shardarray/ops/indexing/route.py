"""Requests to the owners of rows, answers back: the alltoall routing of ``take``, ``searchsorted`` and writes.

A device holds some requests (row ids of an array split over the mesh axes
``axes``) and needs something from each row's owner, the member of its group
along ``axes`` that holds the row. ``Route`` sorts each device's requests by
owner (a stable argsort on the device), then:

1. **one alltoallv of the counts** (one int64 per member: what each member
   will receive from each other one);
2. ``send``: **one alltoallv** of any payload per request (ids, values),
   each device sending each request to its owner only;
3. ``back``: **one alltoallv** of the owners' answers (one per received
   request, any trailing shape), which arrive in the order the requests left
   and are put back in request order.

Traffic per device: ``p - 1`` counts, then at most its own requests (and
answers) -- proportional to its block, never to the whole array. The host
reads only the counts (``p + 1`` cuts and ``p`` received counts per device).
Every step runs on the backend's array module (NumPy or CuPy) in each
device's scope.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...callsite import user_stacklevel
from ...core.relayout import to_axes
from ...errors import GatherWarning
from ...layout import block_bounds
from ...mesh import Mesh


def _read(mesh: Mesh, arrays: Sequence[Any]) -> list[Any]:
    """Small int arrays of the devices (``None`` where not held) as int64 host arrays, in **one** device-to-host
    read (``Backend.read_together``); an array several devices share (replicas) is read once."""
    first: dict[int, int] = {}
    parts: list[tuple[int, Any]] = []
    for d, a in enumerate(arrays):
        if a is not None and id(a) not in first:
            first[id(a)] = len(parts)
            parts.append((d, a.reshape(-1)))
    host = mesh.backend.read_together(parts)
    return [None if a is None else host[first[id(a)]].astype(np.int64) for a in arrays]


class Route:
    """The requests of every device sorted by owner, and the counts each member sends and receives.

    Args:
        mesh: the mesh.
        axes: the mesh axes of the groups (the axes that split the owned array).
        owner: per device, a 1-D int array of the owner member (``0 .. p-1``) of each request, or ``None`` for
            a device this process does not hold.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> dev = mesh.backend.from_numpy  # blocks on the mesh's backend (NumPy or CuPy)
        >>> owner = [dev(np.array(o, dtype=np.int64)) for o in ([1, 0, 1], [0], [], [1])]
        >>> r = Route(mesh, ("row",), owner)
        >>> rows = [dev(np.array(v, dtype=np.int64)) for v in ([10, 11, 12], [20], [], [30])]
        >>> [mesh.backend.to_numpy(x).tolist() for x in r.send(rows)]
        [[11], [20], [10, 12], [30]]
    """

    def __init__(self, mesh: Mesh, axes: tuple[str, ...], owner: Sequence[Any]) -> None:
        self.mesh, self.axes = mesh, axes
        self.p = p = mesh.axes_size(axes)
        xp, scope = mesh.backend.xp, mesh.backend.scope
        self.order: list[Any] = [None] * mesh.size
        cuts: list[Any] = [None] * mesh.size
        for d, o in enumerate(owner):
            if o is None:
                continue
            with scope(d):
                order = xp.argsort(o, kind="stable")
                self.order[d] = order
                cuts[d] = xp.searchsorted(o[order], xp.arange(p + 1, dtype=o.dtype), side="left")
        self.cuts = _read(mesh, cuts)
        counts: list[Any] = [None] * mesh.size
        for d, c in enumerate(self.cuts):
            if c is not None:
                with scope(d):
                    diff = mesh.backend.from_numpy(np.diff(c).astype(np.int64))
                    counts[d] = [diff[i : i + 1] for i in range(p)]
        got = mesh.comm.alltoallv(counts, axes, 0) if p > 1 else [None if c is None else c[0] for c in counts]
        self.recv = _read(mesh, got)

    def send(self, payload: Sequence[Any]) -> list[Any]:
        """Each device's ``payload`` rows (one per request, in request order) at their owners: per device the
        rows it received, concatenated in member order (one alltoallv)."""
        mesh = self.mesh
        pieces: list[Any] = [None] * mesh.size
        for d, pl in enumerate(payload):
            if pl is None or self.order[d] is None:
                continue
            with mesh.backend.scope(d):
                sorted_rows = pl[self.order[d]]
                c = self.cuts[d].tolist()
                pieces[d] = [sorted_rows[c[i] : c[i + 1]] for i in range(self.p)]
        if self.p == 1:
            return [None if s is None else s[0] for s in pieces]
        return mesh.comm.alltoallv(pieces, self.axes, 0)

    def back(self, answers: Sequence[Any]) -> list[Any]:
        """The owners' ``answers`` (one row per received request, in received order) back at the devices that
        asked, in their request order (one alltoallv)."""
        mesh, xp = self.mesh, self.mesh.backend.xp
        pieces: list[Any] = [None] * mesh.size
        for d, a in enumerate(answers):
            if a is None or self.recv[d] is None:
                continue
            edges = np.concatenate([[0], np.cumsum(self.recv[d])]).tolist()
            pieces[d] = [a[edges[i] : edges[i + 1]] for i in range(self.p)]
        got = (
            [None if s is None else s[0] for s in pieces] if self.p == 1 else mesh.comm.alltoallv(pieces, self.axes, 0)
        )
        out: list[Any] = [None] * mesh.size
        for d, g in enumerate(got):
            if g is None or self.order[d] is None:
                continue
            with mesh.backend.scope(d):
                r = xp.empty_like(g)
                r[self.order[d]] = g
                out[d] = r
        return out


def owner_table(mesh: Mesh, axes: tuple[str, ...], bounds: Sequence[Any], dim: int, device: int) -> tuple[Any, ...]:
    """For ``device``'s group along ``axes``: the starts of its members' non-empty blocks of ``dim`` (ascending)
    with those members, and every member's block start and length (host NumPy int64 arrays).

    ``bounds`` is ``block_bounds`` of the owned array's layout. A row id ``i`` in ``[0, n)`` belongs to member
    ``who[searchsorted(starts, i, "right") - 1]``.
    """
    group = next(g for g in mesh.groups(axes) if device in g) if axes else (device,)
    lo = np.array([bounds[m][dim][0] for m in group], dtype=np.int64)
    hi = np.array([bounds[m][dim][1] for m in group], dtype=np.int64)
    full = np.flatnonzero(hi > lo)
    full = full[np.argsort(lo[full], kind="stable")]
    return lo[full], full.astype(np.int64), lo, hi - lo


def locate(mesh: Mesh, spec: Any, dims: Sequence[int], coords: Sequence[Any], device: int) -> tuple[Any, Any]:
    """The owner member and the row inside its block of each request, for ``device``'s requests.

    ``coords[k]`` (1-D int64 device arrays of one length, each in ``[0, n_k)``) index the dims at positions
    ``dims`` of an array of layout ``spec``; the group runs along the concatenation of those dims' axes (first
    dim major, as ``Mesh.groups`` orders members). The row is the row-major position in the owner's block of
    those dims. Runs on ``device``'s array module, in its scope (the caller's).
    """
    backend = mesh.backend
    xp = backend.xp
    bounds = block_bounds(mesh, spec)
    member = None
    row = None
    for k, i in enumerate(dims):
        axes = spec.axes[i]
        starts, who, lo, ln = owner_table(mesh, axes, bounds, i, device)
        c = coords[k]
        if len(starts) > 1:
            m = backend.from_numpy(who)[xp.searchsorted(backend.from_numpy(starts), c, side="right") - 1]
        else:
            m = xp.full(c.shape, int(who[0]) if len(who) else 0, dtype=np.int64)
        rel = c - backend.from_numpy(lo)[m]
        n_k = backend.from_numpy(ln)[m]
        size = mesh.axes_size(axes)
        member = m if member is None else member * size + m
        row = rel if row is None else row * n_k + rel
    return member, row


#: gathers of at most this many bytes per device stay silent (a handful of indices); larger ones warn
GATHER_WARN_BYTES = 65536


def warn_gather(op: str, arr: Any, axes: Sequence[str], advice: str, what: str = "the index array") -> None:
    """Warn with ``sa.GatherWarning`` that ``op`` allgathers the split array ``arr`` (``what``: its role) over mesh
    ``axes``, naming the bytes each device receives, when they exceed ``GATHER_WARN_BYTES``; the warning points at
    the user's line (``callsite.user_stacklevel``)."""
    k = arr.mesh.axes_size(axes)
    nbytes = (k - 1) * -(-arr.size // max(k, 1)) * arr.dtype.itemsize
    if k > 1 and nbytes > GATHER_WARN_BYTES:
        warnings.warn(
            f"{op}: {what} {arr.sizes} is allgathered over mesh axes {tuple(axes)}, {nbytes} bytes "
            f"received per device: {advice}",
            GatherWarning,
            stacklevel=user_stacklevel(),
        )


def moved_to(op: str, arr: Any, target: Sequence[tuple[str, ...]], advice: str, what: str = "the index array") -> Any:
    """``arr`` brought to the per-dim mesh axes ``target`` (``to_axes``, a pending sum resolved), warning
    (``warn_gather``) where that allgathers it: over the axes ``arr`` uses and ``target`` does not."""
    kept = {a for axes in target for a in axes}
    lost = sorted(arr.spec.used_axes.difference(kept), key=arr.mesh.axis_names.index)
    warn_gather(op, arr, lost, advice, what)
    return to_axes(arr, target, False)


__all__ = ["GATHER_WARN_BYTES", "Route", "locate", "moved_to", "owner_table", "warn_gather"]
