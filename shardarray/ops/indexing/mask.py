"""Boolean masks: ``sa.select(x, mask)`` (``x[mask]``) and ``x[mask] = v``, placed by an exclusive scan of counts.

``mask`` has some of ``x``'s dims (the *mask dims*, by name; positionally the
leading ones). The selected elements come out in row-major order of the mask
dims along one new dim whose size is the global count, in the canonical
ceil-block layout over the mask dims' mesh axes; ``x``'s other dims keep their
layout. Steps over split mask dims:

1. Unless each device's block of the mask dims is one run of their row-major
   order already (no mask dim split, or one split after mask dims of size 1
   only, the mask dims after it unsplit), the row-major order of the ``N``
   mask positions is chunked evenly over the mask axes (``route.RowMajor``):
   **one alltoallv** of ``x``'s block and one of the mask's, each device
   sending at most its block and receiving at most ``ceil(N / p)`` rows (of
   its block of the other dims; ``p`` devices along the mask axes), whatever
   the mask dims' sizes. The chunks run in member order along the mask axes,
   so the row-major order is the device order.
2. Each device selects locally and counts; **one allgather** of one int64
   per device over the mask axes gives every device the exclusive scan of
   the counts, i.e. where its elements go.
3. **One alltoallv** over the mask axes sends each element to the device
   that owns its output position (each device sends at most what it
   selected).

``x[mask] = v`` runs the same plan backwards: a scalar ``v`` is a local
``where`` (no communication); a ``v`` of the selected length travels from
its canonical blocks to the devices that hold the selected positions (one
allgather of counts, one alltoallv), then a local write and, when step 1
chunked the rows, one alltoallv of the chunks back to ``x``'s blocks (each
device receiving its block).

Traffic per device, all told: about two of its blocks (``x``'s and the
mask's, or a ``ceil(N / p)``-row chunk of them) and its share of the
selection, never a whole array or another device's rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...chunks import group_chunk
from ...core.common import common_mesh, map_blocks, require_array
from ...core.relayout import resolve_to, to_axes
from ...core.tape import Context, differentiable, refuse_write, register_vjp
from ...dtypes import scalar_for_write
from ...errors import BackendError, DimensionError, DTypeError, IndexingError
from ...layout import Layout
from ..creation.basic import asarray, zeros, zeros_like
from ..elementwise import arithmetic as ew
from ..manipulation.dims import expand_dims
from ..manipulation.structure import astype, broadcast_to, rename, transpose
from .basic import pick, slice_dim
from .route import RowMajor, moved_to
from .writes import serialized, swap_in, typed_host_value


def _as_mask(x: ShardArray, mask: Any, what: str) -> ShardArray:
    """``mask`` as a bool ShardArray on ``x``'s mesh (a NumPy bool array names ``x``'s leading dims)."""

    if not isinstance(mask, ShardArray):
        arr = np.asarray(mask)
        if arr.dtype.kind != "b":
            raise DTypeError(f"{what}: the mask must be boolean; got dtype {arr.dtype}; compare first, e.g. x > 0")
        if arr.ndim > x.ndim:
            raise DimensionError(f"{what}: a mask of shape {arr.shape} has more dims than the array {x.sizes}")
        mask = asarray(arr, dims=x.dims[: arr.ndim], mesh=x.mesh)
    if mask.dtype.kind != "b":
        raise DTypeError(
            f"{what}: the mask {mask.sizes} must be boolean; got dtype {mask.dtype}; compare first, e.g. mask = x > 0"
        )
    common_mesh([x, mask], what)
    for d in mask.dims:
        if d not in x.dims:
            raise DimensionError(
                f"{what}: mask dim {d!r} ({mask.sizes}) is not a dim of the array {x.sizes}; "
                f"a mask names some of the array's dims"
            )
        if mask.sizes[d] != x.sizes[d]:
            raise DimensionError(
                f"{what}: dim {d!r} has size {mask.sizes[d]} in the mask but {x.sizes[d]} in the "
                f"array {x.sizes}; the sizes must match"
            )
    if mask.ndim == 0:
        raise DimensionError(
            f"{what}: a 0-d mask selects nothing by dim; give a mask with some of the dims "
            f"{x.dims}, or use sa.where(mask, x, 0)"
        )
    return resolve_to(mask) if mask.pending else mask


class _Plan:
    """``x`` and the mask brought to one layout: mask dims first, each device a contiguous run of their row-major
    order, the runs in member order along the mask axes.

    With ``adopt`` (a read: ``x`` keeps no layout), a mask dim that ``x`` leaves unsplit takes the mask's axes
    where ``x`` uses none of them: ``x`` is sliced there locally instead of the mask being allgathered. A write
    keeps ``x``'s layout: the mask comes to it (an allgather of the mask over axes ``x`` is replicated on,
    announced by ``route.moved_to``).

    ``xf`` and ``mf`` are the blocks of that layout: per device ``(rows, *other dims' block)`` and ``(rows,)``.
    Where ``x``'s blocks are such runs already (no mask dim split, or one split after mask dims of size 1 only and
    before unsplit ones) they are ``x``'s blocks reshaped; else ``route.RowMajor`` chunks the row-major order
    evenly over the mask axes (one alltoallv of ``x``'s block and one of the mask's), so that no device receives
    more than ``ceil(N / p)`` rows whatever the mask dims' sizes (moving the axes onto one mask dim crowded the
    rows on a few devices where that dim is shorter than the group).
    """

    def __init__(self, x: ShardArray, mask: ShardArray, adopt: bool = False) -> None:

        self.mesh = x.mesh
        self.mdims = mask.dims
        self.rest = tuple(d for d in x.dims if d not in mask.dims)
        x = resolve_to(x) if x.pending else x
        xt = transpose.__wrapped__(x, self.mdims + self.rest) if x.dims != self.mdims + self.rest else x
        if adopt:
            xt = _adopt_mask_axes(xt, mask)
        self.x = xt
        self.m = m = len(self.mdims)
        self.axes = tuple(a for d in self.mdims for a in xt.spec.of(d))
        self.mask = moved_to(
            "x[mask]",
            mask,
            xt.spec.axes[:m],
            "x is replicated over them (every replica needs the whole mask) or splits its other dims there; "
            "split the mask like the dims it covers to avoid it",
            "the mask",
        )
        split = [i for i, d in enumerate(self.mdims) if xt.spec.of(d)]
        runs = len(split) <= 1 and all(xt.sizes[d] == 1 for d in self.mdims[: split[0] if split else 0])
        self.flatten = None if runs else RowMajor(self.mesh, xt.spec, m)
        self.radix = [self.mesh.axis_size(a) for a in self.axes]
        self.members = {d: j for g in self.mesh.groups(self.axes) for j, d in enumerate(g)}
        if self.flatten is None:
            self.xf = [None if b is None else b.reshape((math.prod(b.shape[:m]),) + b.shape[m:]) for b in xt.shards]
            self.mf = [None if b is None else b.reshape(-1) for b in self.mask.shards]
        else:
            self.xf = self.flatten.flat(xt.shards)
            self.mf = self.flatten.flat(self.mask.shards)

    def boxes(self, blocks: list[Any]) -> list[Any]:
        """Blocks of ``xf``'s shape back in ``x``'s (mask dims first) layout."""
        if self.flatten is not None:
            return self.flatten.box(blocks)
        return [None if b is None else b.reshape(xb.shape) for b, xb in zip(blocks, self.x.shards)]

    def counts(self) -> tuple[list[Any], list[Any]]:
        """Per device its count and the exclusive scan of counts (one allgather over the mask axes)."""
        mesh, xp = self.mesh, self.mesh.backend.xp

        def count(mb: Any) -> Any:
            if isinstance(mb, MetaArray):
                return MetaArray((1,), np.int64)
            return xp.reshape(xp.asarray(xp.count_nonzero(mb), dtype=np.int64), (1,))  # (on the device: no sync)

        c = map_blocks(mesh, self.axes, count, self.mf)
        g = mesh.comm.allgather(c, self.axes, 0) if self.axes else c
        return c, g

    def total(self, g: list[Any]) -> int:
        first = next(b for b in g if b is not None)
        return int(first.sum()) if not isinstance(first, MetaArray) else 0


def _refuse_meta(x: ShardArray, mask: ShardArray, what: str) -> None:
    """On the ``meta`` backend (shapes only) a mask's count is unknown: ``BackendError``, never a guessed length."""
    if not x.mesh.backend.has_data:
        raise BackendError(
            f"{what}: how many elements the mask {mask.sizes} selects of the array {x.sizes} depends on the mask's "
            f"values, which the meta backend does not hold; run it on a NumPy or CuPy mesh (a scalar write, "
            f"x[mask] = 0.0, keeps the shape and runs on meta)"
        )


def _adopt_mask_axes(x: ShardArray, mask: ShardArray) -> ShardArray:
    """``x`` (mask dims first) with each mask dim that it leaves unsplit split like the mask's, over the axes ``x``
    does not use (a local slice of every block: no communication)."""
    taken = set(x.spec.used_axes)
    axes = list(x.spec.axes)
    for i, d in enumerate(mask.dims):
        own = mask.spec.of(d)
        if not axes[i] and own and not taken.intersection(own):
            axes[i] = own
            taken.update(own)
    return to_axes(x, tuple(axes), False) if tuple(axes) != x.spec.axes else x


def select(x: ShardArray, mask: Any, new_dim: str | None = None) -> ShardArray:
    """The elements of ``x`` where ``mask`` is True (``x[mask]``), along one new dim of the global count.

    ``mask`` (bool) has some of ``x``'s dims, same sizes (a NumPy bool array
    names ``x``'s leading dims). The result has the new dim first (named
    ``new_dim``; default: the mask's dim when it has one, else the mask dims
    joined by ``_``), then ``x``'s other dims. The new dim is in the canonical
    ceil-block layout over the mask dims' mesh axes (``x``'s; where ``x``
    leaves a mask dim unsplit, the mask's axes that ``x`` does not use: ``x``
    is sliced there locally, the mask never gathered).

    Collectives (see the module docstring): where the mask dims' blocks are
    not runs of their row-major order (two split mask dims, or a split one
    after a mask dim longer than 1), one alltoallv of ``x``'s block and one of
    the mask's to even chunks of that order (each device receives at most
    ``ceil(N / p)`` rows of its other dims' block, ``N`` the mask's size, ``p``
    the devices along the mask axes); one allgather of one int64 per device
    (the counts); one alltoallv of the selected elements (each device sends at
    most its chunk's selection, receives at most its block of the result).
    Nothing when the mask dims are unsplit.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(8.0), dims=("i",), mesh=mesh, layout={"i": ("row", "col")})
        >>> with sa.comm_log() as log:
        ...     y = sa.select(x, x > 4.5)
        >>> y.numpy(), y.layout, [r.op for r in log.records]
        (array([5., 6., 7.]), {'i': ('row', 'col')}, ['allgather', 'alltoall'])
    """
    x = require_array(x, "sa.select")
    mask = _as_mask(x, mask, "select")
    if new_dim is None:
        new_dim = mask.dims[0] if mask.ndim == 1 else "_".join(mask.dims)
    return _select(x, mask, new_dim)


@differentiable("select")
def _select(x: ShardArray, mask: ShardArray, new_dim: str) -> ShardArray:
    """``select`` of a checked bool ``mask``; its VJP writes the cotangent back at the selected positions."""
    _refuse_meta(x, mask, "select (x[mask])")
    p = _Plan(x, mask, adopt=True)
    if new_dim in p.rest:
        raise DimensionError(f"select: new_dim {new_dim!r} is already one of the kept dims {p.rest}; pass another")
    mesh = p.mesh
    _, g = p.counts()
    total = p.total(g)
    rest_shape = tuple(x.sizes[d] for d in p.rest)

    def local(xb: Any, mb: Any) -> Any:
        if isinstance(xb, MetaArray):
            return MetaArray((0,) + xb.shape[1:], x.dtype)
        return xb[mb]

    picked = map_blocks(mesh, p.x.spec.used_axes, local, p.xf, p.mf)
    n = math.prod(p.radix) if p.radix else 1
    out_blocks = [group_chunk(0, total, p.radix, i) for i in range(n)]
    send: list[Any] = [None] * mesh.size
    for d in range(mesh.size):
        s = picked[d]
        if s is None:
            continue
        if isinstance(s, MetaArray):
            send[d] = [s] * n
            continue
        j = p.members[d]
        off = int(g[d][:j].sum()) if p.axes else 0
        pieces = []
        for lo, hi in out_blocks:
            a, b = max(lo, off) - off, min(hi, off + s.shape[0]) - off
            pieces.append(s[max(a, 0) : max(b, max(a, 0))])
        send[d] = pieces
    if n > 1:
        shards = mesh.comm.alltoallv(send, p.axes, 0)
    else:
        shards = [None if s is None else s[0] for s in send]
    dims = (new_dim,) + p.rest
    axes = (p.axes,) + tuple(p.x.spec.of(d) for d in p.rest)
    layout = Layout(dims, (total,) + rest_shape, axes)
    return ShardArray(mesh, layout, x.dtype, shards)


@serialized
def mask_assign(x: ShardArray, mask: Any, v: Any) -> None:
    """``x[mask] = v`` in place: ``v`` a scalar, or an array of the selected length (as ``select`` returns).

    A scalar is a local ``where`` (no communication once the mask is in
    ``x``'s layout). An array ``v`` is brought to ``select``'s output layout
    and travels backwards along ``select``'s plan: one allgather of counts,
    one alltoallv (each device receives at most its own selection), a local
    write, and, where ``select``'s plan chunked the row-major order (one
    alltoallv each of ``x``'s block and of the mask's, at most
    ``ceil(N / p)`` rows received), one alltoallv of the chunks back (each
    device receives at most its block of ``x``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(6.0), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> sa.mask_assign(x, x > 3.5, 0.0)
        >>> x.numpy()
        array([0., 1., 2., 3., 0., 0.])
    """

    x = require_array(x, "x[mask] = v")
    refuse_write(x, "x[mask] = v", "build it with sa.where(mask, v, x)")
    mask = _in_layout_of(x, _as_mask(x, mask, "x[mask] = v"))
    if not isinstance(v, ShardArray):
        arr = np.asarray(v)
        if arr.ndim == 0:
            arr = scalar_for_write(v, x.dtype, f"x[mask] = v (the {x.dtype} array {x.sizes})")
            swap_in(x, ew.where(mask, asarray(arr, dims=(), mesh=x.mesh), x))
            return
        v = asarray(arr, dims=tuple(f"__v{i}" for i in range(arr.ndim)), mesh=x.mesh)
        positional = True
    else:
        common_mesh([x, v], "x[mask] = v")
        positional = False
    if v.ndim == 0:
        swap_in(x, ew.where(mask, v.astype(x.dtype), x))
        return
    _refuse_meta(x, mask, "x[mask] = v (v an array)")
    v = astype(v, x.dtype)  # a complex v into a real x raises, as x[ids] = v and x[a:b] = v do (NumPy drops .imag)
    p = _Plan(x, mask)
    mesh = p.mesh
    _, g = p.counts()
    total = p.total(g)
    rest_shape = tuple(x.sizes[d] for d in p.rest)
    want = (total,) + rest_shape
    extra = tuple(d for d in v.dims if d not in p.rest)
    positional = positional or all(d.startswith("__v") for d in v.dims)  # x[mask] = v by position
    if not positional and len(extra) == 1 and v.ndim == len(want):
        if v.sizes[extra[0]] != total or tuple(v.sizes[d] for d in p.rest) != rest_shape:
            raise DimensionError(
                f"x[mask] = v: the mask selects {total} element(s) of the array {x.sizes}; "
                f"v {v.sizes} must have {total} entries along {extra[0]!r} and the kept dims "
                f"{dict(zip(p.rest, rest_shape))}"
            )
        v = rename(transpose.__wrapped__(v, extra + p.rest), {extra[0]: "__sel"})
    elif v.shape == want:
        v = rename(v, dict(zip(v.dims, ("__sel",) + p.rest)))
    elif (positional or all(d.startswith("__v") for d in v.dims)) and _broadcasts(v.shape, want):
        v = _broadcast_positional(v, ("__sel",) + p.rest, want)  # NumPy's rule: right-aligned, size 1 stretches
    else:
        raise DimensionError(
            f"x[mask] = v: the mask selects {total} element(s) of the array {x.sizes} (shape "
            f"{want} selected); v has shape {v.shape}, which does not broadcast to it; give a "
            f"scalar or a value of shape {want}"
        )
    v = resolve_to(v) if v.pending else v
    v = moved_to(
        "x[mask] = v",
        v,
        (p.axes,) + tuple(p.x.spec.of(d) for d in p.rest),
        "x is replicated over them (every replica needs every value) or splits its other dims there; split the "
        "value like the selection (x[mask]'s layout) to avoid it",
        "the value",
    )
    n = math.prod(p.radix) if p.radix else 1
    src_blocks = [group_chunk(0, total, p.radix, i) for i in range(n)]
    send: list[Any] = [None] * mesh.size
    for group in mesh.groups(p.axes):
        offs = None
        for j, d in enumerate(group):
            vb = v.shards[d]
            if vb is None:
                continue
            if isinstance(vb, MetaArray):
                send[d] = [vb] * n
                continue
            if offs is None:
                gd = g[d]
                offs = [int(gd[:i].sum()) for i in range(n + 1)] if p.axes else [0, int(gd[0])]
            lo, hi = src_blocks[j]
            pieces = []
            for i in range(n):
                a, b = max(lo, offs[i]), min(hi, offs[i + 1])
                pieces.append(vb[max(a - lo, 0) : max(b - lo, max(a - lo, 0))].astype(x.dtype))
            send[d] = pieces
    recv = mesh.comm.alltoallv(send, p.axes, 0) if n > 1 else [None if s is None else s[0] for s in send]

    def write(xb: Any, mb: Any, vb: Any) -> Any:
        if isinstance(xb, MetaArray):
            return xb
        out = xb.copy()
        out[mb] = vb
        return out

    shards = p.boxes(map_blocks(mesh, p.x.spec.used_axes, write, p.xf, p.mf, recv))
    swap_in(x, ShardArray(mesh, p.x.spec, x.dtype, shards))


def _in_layout_of(x: ShardArray, mask: ShardArray) -> ShardArray:
    """The mask of a write into ``x`` in ``x``'s layout of the mask dims: ``x`` keeps its layout, so the mask
    moves (an allgather of the mask over axes ``x`` is replicated on, announced by ``route.moved_to``), never
    ``x`` (a ``where`` in the mask's layout allgathered ``x`` back into its own)."""
    target = tuple(x.spec.of(d) for d in mask.dims)
    if target == mask.spec.axes:
        return mask
    return moved_to(
        "x[mask] = v",
        mask,
        target,
        "x is replicated over them (every replica needs the whole mask) or splits its other dims there; split "
        "the mask like the dims it covers to avoid it",
        "the mask",
    )


def _positional_mask(x: ShardArray, mask: Any, what: str) -> ShardArray:
    """A positional mask (ShardArray or NumPy bool) naming ``x``'s leading dims by position. An axis of length 0
    of the mask matches any (NumPy's rule: such a mask selects nothing); it is then all False over the axes it
    covers, laid out like them."""
    shape = tuple(mask.shape)
    if len(shape) > x.ndim or any(m not in (n, 0) for m, n in zip(shape, x.shape)):
        raise IndexingError(
            f"{what}: a boolean mask of shape {shape} must match the leading axes of the array of shape {x.shape}"
            f" (an axis of length 0 matches any)"
        )
    if shape != x.shape[: len(shape)]:  # (a mask with an axis of length 0: it selects nothing)
        if getattr(mask, "dtype", np.dtype(bool)).kind != "b":
            raise DTypeError(f"{what}: the mask must be boolean; got dtype {mask.dtype}")
        covered = x.dims[: len(shape)]
        sizes = {d: x.sizes[d] for d in covered}
        return zeros(x.mesh, sizes, np.bool_, {d: a for d, a in x.layout.items() if d in covered})
    if isinstance(mask, ShardArray):
        if mask.dtype.kind != "b":
            raise DTypeError(f"{what}: the mask must be boolean; got dtype {mask.dtype}")

        names = dict(zip(mask.dims, x.dims[: mask.ndim]))
        if any(k != v for k, v in names.items()):
            tmp = {d: f"__m{i}" for i, d in enumerate(mask.dims)}
            mask = rename(rename(mask, tmp), {f"__m{i}": x.dims[i] for i in range(mask.ndim)})
        return mask
    return _as_mask(x, np.asarray(mask), what)


def bool_key(key: Any) -> Any:
    """The boolean mask of a positional key ``mask``, ``(mask,)`` or ``(mask, ...)``, else None."""
    if isinstance(key, tuple):
        if (len(key) == 2 and key[1] is Ellipsis) or len(key) == 1:
            key = key[0]
        else:
            return None
    if isinstance(key, (ShardArray, np.ndarray, np.bool_)) and np.dtype(key.dtype).kind == "b":
        return key
    return None


def bool_lead(key: Any) -> tuple[Any, tuple[Any, ...]] | None:
    """``(mask, rest)`` for a positional key ``(mask, *rest)`` whose first index is a boolean mask of at least one
    axis and whose others are basic indices (slices, ints, Ellipsis, None), not ``(mask,)`` or ``(mask, ...)``
    (``bool_key``); else None. ``x[mask, *rest]`` is then ``x[mask][:, *rest]``, as in NumPy (scikit-learn's
    ``X[y == k, :]``)."""
    if not isinstance(key, tuple) or len(key) < 2 or bool_key(key) is not None:
        return None
    mask, rest = key[0], key[1:]
    if not (isinstance(mask, (ShardArray, np.ndarray)) and mask.dtype.kind == "b" and mask.ndim >= 1):
        return None
    basic = (slice, int, np.integer, type(Ellipsis), type(None))
    if not all(isinstance(k, basic) and not isinstance(k, (bool, np.bool_)) for k in rest):
        return None
    return mask, rest


def getitem_mask(x: ShardArray, mask: Any) -> ShardArray:
    """``x[mask]`` by position (NumPy): the mask covers the leading axes; see ``select`` for the traffic."""
    if np.ndim(mask) == 0:  # NumPy: a new leading axis of length 1 (True) or 0 (False)
        name = "__mask0"
        while name in x.dims:
            name += "_"
        out = expand_dims(x, name, 0)
        return slice_dim(out, name, 0, 1, 1 if bool(mask) else 0)
    return select(x, _positional_mask(x, mask, "x[mask]"))


def _broadcasts(have: tuple[int, ...], want: tuple[int, ...]) -> bool:
    """Whether a value of shape ``have`` broadcasts to ``want`` (NumPy's rule for writes, right-aligned: leading
    size-1 axes beyond ``want``'s are allowed)."""
    lead = have[: max(len(have) - len(want), 0)]
    return all(a == 1 for a in lead) and all(a in (1, b) for a, b in zip(have[::-1], want[::-1]))


def _broadcast_positional(v: ShardArray, names: tuple[str, ...], want: tuple[int, ...]) -> ShardArray:
    """``v`` broadcast by position to ``want``, its dims named ``names`` (size-1 dims stretched, missing ones
    added in front; leading size-1 dims beyond ``want`` dropped): a local repeat of each device's block, no
    communication."""
    for d in v.dims[: max(v.ndim - len(want), 0)]:
        v = pick(v, d, 0)
    aligned = names[len(want) - v.ndim :]
    keep = {d: n for d, n, size, full in zip(v.dims, aligned, v.shape, want[len(want) - v.ndim :]) if size == full}
    drop = {d: 0 for d in v.dims if d not in keep}
    for d in drop:  # a size-1 dim that broadcasts: its one entry
        v = pick(v, d, 0)
    v = rename(v, keep)
    return broadcast_to(v, dict(zip(names, want)))


def setitem_mask(x: ShardArray, mask: Any, v: Any, whole: bool = False) -> None:
    """``x[mask] = v`` by position: ``v`` a scalar or of the selected shape; see ``mask_assign``.

    ``whole``: the key is the mask alone (``x[mask]``, not ``x[mask, ...]``). A mask over every axis then takes a
    scalar or a 1-d ``v`` only, as NumPy's boolean assignment does (a leading size-1 axis is refused there, though
    it broadcasts after ``...``).
    """
    v = typed_host_value(x, v, "x[mask] = v")
    ndim = v.ndim if isinstance(v, ShardArray) else np.ndim(v)
    if whole and np.ndim(mask) == x.ndim and ndim > 1:
        raise DimensionError(
            f"x[mask] = v: a boolean mask over every axis of the array of shape {x.shape} takes a scalar or a 1-d "
            f"value (as NumPy's boolean assignment); got {ndim} dimensions; flatten v first (v.reshape(-1))"
        )
    if np.ndim(mask) == 0:  # x[True] = v writes everything, x[False] = v nothing (v broadcasts right-aligned)
        _write_all(x, bool(mask), v)
        return
    if isinstance(v, ShardArray) and v.ndim:
        v = rename(v, {d: f"__v{i}" for i, d in enumerate(v.dims)})
        mask_assign(x, _positional_mask(x, mask, "x[mask] = v"), v)
        return
    mask_assign(x, _positional_mask(x, mask, "x[mask] = v"), v)


def _write_all(x: ShardArray, everything: bool, v: Any) -> None:
    """``x[mask] = v`` for a 0-d ``mask``: ``v`` (broadcast right-aligned) into every entry, or none.

    A host ``v`` is checked as every write checks it (a scalar by ``scalar_for_write``, whether anything is
    written or not, as NumPy converts it first): ``300`` into int8, NaN into an integer array, a complex value into
    a real one or ``None`` raise typed errors, not NumPy's raw ones (or a NaN for ``None``).
    """
    if not isinstance(v, ShardArray):
        arr = np.asarray(v)
        if arr.ndim == 0:
            arr = scalar_for_write(v, x.dtype, f"x[mask] = v (the {x.dtype} array {x.sizes})")
        v = asarray(arr, dims=tuple(f"__v{i}" for i in range(arr.ndim)), mesh=x.mesh)
    common_mesh([x, v], "x[mask] = v")
    if not everything:
        return
    if not _broadcasts(v.shape, (1, *x.shape)):  # the selection has a new leading axis of length 1
        raise DimensionError(f"x[mask] = v: v of shape {v.shape} does not broadcast to the array's shape {x.shape}")
    v = rename(v, {d: f"__w{i}" for i, d in enumerate(v.dims)})
    swap_in(x, _broadcast_positional(v.astype(x.dtype), x.dims, x.shape))  # size-1 axes stretch, as NumPy's


def select_along(x: ShardArray, dim: str, mask: Any) -> ShardArray:
    """``x.isel({dim: mask})`` for a 1-D boolean mask along ``dim``: the dim keeps its name and place."""

    if isinstance(mask, ShardArray):
        if mask.ndim > 1 and all(d in x.dims for d in mask.dims):  # x[mask] by name: the mask's own dims
            return select(x, mask)
        if mask.ndim != 1:
            raise DimensionError(f"isel: a boolean mask for dim {dim!r} must be 1-D; got {mask.sizes}")
        mask = rename(mask, {mask.dims[0]: dim}) if mask.dims[0] != dim else mask
    else:
        arr = np.asarray(mask)
        if arr.ndim != 1 or arr.shape[0] != x.sizes[dim]:
            raise DimensionError(
                f"isel: a boolean mask for dim {dim!r} (size {x.sizes[dim]}) must be 1-D of "
                f"that length; got shape {arr.shape}"
            )

        mask = asarray(arr, dims=(dim,), mesh=x.mesh)
    out = select(x, mask, new_dim=dim)
    return transpose(out, x.dims)


__all__ = ["bool_key", "getitem_mask", "mask_assign", "select", "select_along", "setitem_mask"]


@register_vjp("select")
def _select_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    """Zeros in ``x``'s layout with ``g`` written at the selected positions: ``select``'s plan run backwards
    (``mask_assign``: one allgather of counts, one alltoallv)."""
    x, mask = ctx.args[0], ctx.args[1]
    dx = zeros_like(x)
    mask_assign(dx, mask, g)
    return [dx, None, None]
