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

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backend.meta import MetaArray
from ...callsite import user_stacklevel
from ...chunks import group_chunk
from ...core.relayout import to_axes
from ...errors import GatherWarning
from ...host_reads import GATHER_WARN_BYTES  # (per device: a handful of indices stays silent)
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

    On a ``meta`` mesh (no values, ``has_data`` false) the owners are not known: the counts follow a model, each
    device's requests spread over the members of its group in proportion to the rows each one owns (``rows``;
    equal shares without it), the typical cost of ids uniform over the rows (skewed ids send more to one owner).
    The same collectives run, in the same order and dtypes, so the comm log has the data path's shape.

    Args:
        mesh: the mesh.
        axes: the mesh axes of the groups (the axes that split the owned array).
        owner: per device, a 1-D int array of the owner member (``0 .. p-1``) of each request, or ``None`` for
            a device this process does not hold.
        rows: on a meta mesh, per device the rows each member of its group owns (the model above); ignored where
            the mesh has data.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> dev = mesh.backend.from_numpy  # blocks on the mesh's backend (NumPy or CuPy)
        >>> owner = [dev(np.array(o, dtype=np.int64)) for o in ([1, 0, 1], [0], [], [1])]
        >>> r = Route(mesh, ("row",), owner)
        >>> rows = [dev(np.array(v, dtype=np.int64)) for v in ([10, 11, 12], [20], [], [30])]
        >>> [mesh.backend.to_numpy(x).tolist() for x in r.send(rows)]
        [[11], [20], [10, 12], [30]]
    """

    def __init__(
        self, mesh: Mesh, axes: tuple[str, ...], owner: Sequence[Any], rows: Sequence[Any] | None = None
    ) -> None:
        self.mesh, self.axes = mesh, axes
        self.p = p = mesh.axes_size(axes)
        xp, scope = mesh.backend.xp, mesh.backend.scope
        if not mesh.backend.has_data:
            self._modeled(owner, rows)
            return
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

    def _modeled(self, owner: Sequence[Any], rows: Sequence[Any] | None) -> None:
        """The counts of a meta mesh (the class docstring's model): each device's requests in proportion to the rows
        its group's members own, the counts' alltoallv logged, every member's received counts from the model."""
        mesh, p = self.mesh, self.p
        self.order = list(owner)  # (a meta array per device: ``send`` picks rows of its shape)
        self.cuts = [None] * mesh.size
        for d, o in enumerate(owner):
            if o is None:
                continue
            k = int(o.shape[0])
            share = [1] * p if rows is None else [int(r) for r in rows[d]]
            total = sum(share)
            cum = np.cumsum([0, *share])
            self.cuts[d] = cum * k // total if total else np.zeros(p + 1, dtype=np.int64)
        counts = [None if c is None else [MetaArray((1,), np.int64) for _ in range(p)] for c in self.cuts]
        if p > 1:
            mesh.comm.alltoallv(counts, self.axes, 0)
        self.recv = [None] * mesh.size
        for group in mesh.groups(self.axes):
            sent = [np.zeros(p, dtype=np.int64) if self.cuts[d] is None else np.diff(self.cuts[d]) for d in group]
            for j, d in enumerate(group):
                if self.cuts[d] is not None:
                    self.recv[d] = np.array([s[j] for s in sent], dtype=np.int64)

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


class RowMajor:
    """The leading ``m`` dims of an array of layout ``spec`` in their row-major order, chunked evenly over the mesh
    axes that split them (``axes``; the other dims' axes are others), and back: the flattening of ``x[mask]``.

    A device holds a box of the leading dims (a range per dim, the layout ``spec``); its box is a set of runs of
    the row-major order of those dims, interleaved with its group's others. ``flat`` sends each element to the
    member that owns its row-major position in the canonical chunks of ``0 .. N`` (``N`` the product of the
    leading sizes, nested ceil-blocks over ``axes``, as ``chunks.group_chunk``): **one alltoallv** over ``axes``
    where each device sends at most its block and receives at most its chunk (``ceil(N / p)`` rows of its other
    dims' block). ``box`` is the same exchange backwards. The cuts are host arithmetic on the layout (``O(m)``
    per pair of members, nothing read from a device); the receiver puts the pieces in row-major order with a
    stable argsort of each position's source member, on the backend's array module.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(8.0).reshape(2, 4), dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
        >>> r = RowMajor(mesh, x.spec, 2)
        >>> [mesh.backend.to_numpy(b).tolist() for b in r.flat(x.shards)]
        [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]
    """

    def __init__(self, mesh: Mesh, spec: Any, m: int) -> None:
        self.mesh, self.m = mesh, m
        self.sizes = tuple(spec.sizes[:m])
        self.axes = tuple(a for axes in spec.axes[:m] for a in axes)
        self.p = mesh.axes_size(self.axes)
        self.total = math.prod(self.sizes)
        bounds = block_bounds(mesh, spec)
        groups = mesh.groups(self.axes) if self.axes else tuple((d,) for d in range(mesh.size))
        group = groups[0]
        self.member = {d: j for g in groups for j, d in enumerate(g)}
        self.boxes = [tuple(bounds[d][:m]) for d in group]
        radix = [mesh.axis_size(a) for a in self.axes]
        self.chunks = [group_chunk(0, self.total, radix, j) for j in range(self.p)]
        # per dim: its share of the member index (weight) and the block ends of its sub-members
        self.weight: list[int] = []
        self.ends: list[Any] = []
        w = 1
        for t in reversed(range(m)):
            r = mesh.axes_size(spec.axes[t])
            self.weight.insert(0, w)
            self.ends.insert(0, np.array([self.boxes[k * w][t][1] for k in range(r)], dtype=np.int64))
            w *= r
        # cnt[s][j]: how many of member s's box elements fall in member j's chunk
        self.cnt = [[self._before(box, hi) - self._before(box, lo) for lo, hi in self.chunks] for box in self.boxes]

    def _before(self, box: Sequence[tuple[int, int]], b: int) -> int:
        """How many elements of ``box`` precede row-major position ``b`` (a lexicographic count)."""
        extents = [hi - lo for lo, hi in box]
        if b >= self.total:
            return math.prod(extents)
        c: list[int] = []
        for n in reversed(self.sizes):
            c.insert(0, b % n)
            b //= n
        out = 0
        for t, (lo, hi) in enumerate(box):
            out += (min(max(c[t], lo), hi) - lo) * math.prod(extents[t + 1 :])
            if not lo <= c[t] < hi:
                break
        return out

    def _order(self, j: int) -> Any:
        """The positions of member ``j``'s chunk sorted (stably) by the member whose box holds them, on the
        current device."""
        backend = self.mesh.backend
        xp = backend.xp
        lo, hi = self.chunks[j]
        q = xp.arange(lo, hi, dtype=np.int64)
        if hi == lo:
            return q
        src = xp.zeros(q.shape, dtype=np.int64)
        for t in reversed(range(self.m)):
            c = q % self.sizes[t]
            q = q // self.sizes[t]
            if len(self.ends[t]) > 1:
                src = src + xp.searchsorted(backend.from_numpy(self.ends[t]), c, side="right") * self.weight[t]
        return xp.argsort(src, kind="stable")

    def flat(self, blocks: Sequence[Any]) -> list[Any]:
        """Blocks of the box layout (leading dims a box, other dims kept) as blocks of shape ``(chunk, *other)``:
        each device's chunk of the row-major order (one alltoallv over the leading dims' axes)."""
        mesh, xp = self.mesh, self.mesh.backend.xp
        send: list[Any] = [None] * mesh.size
        for d, b in enumerate(blocks):
            if b is None:
                continue
            s = self.member[d]
            with mesh.backend.scope(d):
                rows = b.reshape((math.prod(b.shape[: self.m]),) + tuple(b.shape[self.m :]))
                cuts = np.concatenate([[0], np.cumsum(self.cnt[s])]).tolist()
                send[d] = [rows[cuts[j] : cuts[j + 1]] for j in range(self.p)]
        if self.p == 1:
            return [None if s is None else s[0] for s in send]
        got = mesh.comm.alltoallv(send, self.axes, 0)
        out: list[Any] = [None] * mesh.size
        for d, g in enumerate(got):
            if g is None or isinstance(g, MetaArray):
                out[d] = g
                continue
            with mesh.backend.scope(d):
                r = xp.empty_like(g)
                r[self._order(self.member[d])] = g
                out[d] = r
        return out

    def box(self, blocks: Sequence[Any]) -> list[Any]:
        """``flat`` backwards: blocks of shape ``(chunk, *other)`` as the box layout's blocks (one alltoallv)."""
        mesh = self.mesh
        send: list[Any] = [None] * mesh.size
        for d, b in enumerate(blocks):
            if b is None:
                continue
            j = self.member[d]
            with mesh.backend.scope(d):
                rows = b if isinstance(b, MetaArray) or self.p == 1 else b[self._order(j)]
                cuts = np.concatenate([[0], np.cumsum([c[j] for c in self.cnt])]).tolist()
                send[d] = [rows[cuts[s] : cuts[s + 1]] for s in range(self.p)]
        got = [None if s is None else s[0] for s in send] if self.p == 1 else mesh.comm.alltoallv(send, self.axes, 0)
        out: list[Any] = [None] * mesh.size
        for d, g in enumerate(got):
            if g is not None:
                box = self.boxes[self.member[d]]
                out[d] = g.reshape(tuple(hi - lo for lo, hi in box) + tuple(g.shape[1:]))
        return out


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


__all__ = ["GATHER_WARN_BYTES", "Route", "RowMajor", "locate", "moved_to", "owner_table", "warn_gather"]
