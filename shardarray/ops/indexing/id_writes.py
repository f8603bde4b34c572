"""Writes at integer ids, in place: ``x[idx] = v`` (last write wins) and ``np.add.at``-style adds.

``write_at(x, dims, coords, v, mode)`` writes ``v`` at the entries of ``x``
whose coordinates along ``dims`` are ``coords`` (integer arrays of one shape,
the index shape ``B``); ``v`` has the dims ``B`` followed by ``x``'s other
dims (or is a scalar). The (row, value) pairs travel to the devices owning
the rows (``route.py``): one alltoallv of counts (``p - 1`` int64), **one
alltoallv of the rows** (one int64 per index entry of a device's block, plus
its global position for ``"set"``) and **one alltoallv of the values** (one
row of ``x``'s other dims per entry), over the mesh axes of ``dims``. The
owners then write in their blocks: ``"set"`` keeps, for each row written
several times, the value of the last index entry (NumPy's order), ``"add"``
adds every one (``np.add.at``), ``"maximum"``/``"minimum"`` keep the largest or smallest of the row and every
value written to it (``np.maximum.at``); any other ufunc name applies that ufunc once per pair, NumPy's
unbuffered ``np.<op>.at`` (``Backend.apply_at``; ``v=None`` for a unary one, ``np.negative.at``). Where the
result depends on the order of a row's pairs (``ordered``: every float op but the extremes and the truth values,
and the non-commutative ones), the pairs' global positions in the index travel too (one int64 each, as for
``"set"``) and each owner applies its pairs in that order: NumPy's key order. Devices holding the same index block
(replicas along those axes) send disjoint shares, so each pair is sent once.

The index arrays may stay split over the axes of ``dims`` only; split over
other axes (``x`` replicated there, so every replica needs every write, or
axes of ``x``'s other dims) they are allgathered over those axes first, with
a ``GatherWarning`` naming the bytes (``route.warn_gather``). Not differentiable: writing into an
array being recorded raises ``TapeError``.

On a meta mesh (no values) the same alltoallvs run, in the same order and dtypes, with sizes modeled for ids
spread uniformly over ``x``'s rows (``_modeled``); the counts' alltoallv is exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import holds_anywhere
from ...core.relayout import resolve_to
from ...core.tape import refuse_write
from ...dtypes import scalar_for_write
from ...errors import ArgumentError
from ...layout import block_bounds
from ..manipulation.structure import astype, transpose
from ..sorting.samplesort import lex_order
from .route import Route, locate, moved_to
from .writes import serialized

#: ufuncs whose repeated application at one row gives the same result in any order, on integers and bools
_ORDER_FREE_INTS = frozenset(
    {"add", "multiply", "maximum", "minimum", "fmax", "fmin", "gcd", "lcm"}
    | {f"{k}_{op}" for k in ("logical", "bitwise") for op in ("and", "or", "xor")}
)
#: ... and on floats and complex values (exact whatever the order: extremes and truth values)
_ORDER_FREE = frozenset({"maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or", "logical_xor"})


def value_dtype(mode: str, dtype: Any) -> np.dtype:
    """The dtype the values of a write in ``mode`` into an array of ``dtype`` travel and apply in: the array's,
    but int64 for ``np.ldexp.at`` (its exponents: NumPy's loops take a float and an integer, none two floats)."""
    return np.dtype(np.int64) if mode == "ldexp" else np.dtype(dtype)


def ordered(mode: str, dtype: Any) -> bool:
    """Whether ``write_at``'s ``mode`` must apply a row's pairs in key order (their result depends on it).

    Example:
        >>> ordered("multiply", np.float64), ordered("multiply", np.int64), ordered("add", np.float32)
        (True, False, True)
    """
    if mode == "set" or mode in _ORDER_FREE:  # (float sums too: NumPy adds a row's repeats in key order)
        return False
    return not (np.dtype(dtype).kind in "biu" and mode in _ORDER_FREE_INTS)


def _global_positions(xp: Any, backend: Any, bounds: Any, shape: Sequence[int]) -> Any:
    """The row-major global position of every entry of a block (``bounds``: its (start, stop) per dim)."""
    pos = xp.zeros(tuple(b - a for a, b in bounds), dtype=np.int64)
    stride = 1
    for k in reversed(range(len(shape))):
        a, b = bounds[k]
        idx = xp.arange(a, b, dtype=np.int64).reshape([-1 if i == k else 1 for i in range(len(shape))])
        pos = pos + idx * stride
        stride *= shape[k]
    return pos.reshape(-1)


@serialized
def write_at(x: ShardArray, dims: Sequence[str], coords: Sequence[ShardArray], v: Any, mode: str = "set") -> None:
    """Write (``"set"``) or add (``"add"``) ``v`` at ``x[coords]`` along ``dims``, in place (module docstring).

    Args:
        x: the array written into; its shards are replaced.
        dims: the dims of ``x`` the coordinates index.
        coords: one integer array per dim of ``dims``, all of the same dims and sizes, each in range.
        v: a scalar, or a ShardArray with the coords' dims followed by ``x``'s other dims (any order).
        mode: ``"set"``, ``"add"``, ``"maximum"``, ``"minimum"``, or the name of another ufunc of the backend
            (applied per pair, in key order where it matters: ``ordered``); ``v`` None for a unary one.

    Raises:
        ArgumentError: ``"power"`` of a signed integer array with a negative value (NumPy's ValueError), on every
            process before anything moves or is written.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.zeros(mesh, {"i": 5}, dtype="float64", layout={"i": "row"})
        >>> ids = sa.asarray(np.array([4, 0, 4]), dims=("k",), mesh=mesh, layout={"k": "row"})
        >>> write_at(x, ("i",), (ids,), 1.0, "add")
        >>> x.numpy()
        array([1., 0., 0., 0., 2.])
    """
    refuse_write(x, "x[idx] = v", "build it with sa.where or sa.take")
    if x.pending:
        r = resolve_to(x)
        x.shards, x.pending = r.shards, ()
    mesh = x.mesh
    backend, xp = mesh.backend, mesh.backend.xp
    dims = tuple(dims)
    pos = tuple(x.dims.index(d) for d in dims)
    rest = tuple(d for d in x.dims if d not in dims)
    group = tuple(a for d in dims for a in x.spec.of(d))
    bdims = coords[0].dims
    coords = [c if c.dims == bdims else transpose.__wrapped__(c, bdims) for c in coords]
    # (the coordinates' common layout: the one keeping most of x's axes of ``dims``; the others move to it, and
    # an axis any of them loses is an allgather, announced: the coordinates may be laid out differently)
    keep = max(
        (tuple(tuple(a for a in ax if a in group) for ax in c.spec.axes) for c in coords),
        key=lambda k: sum(len(ax) for ax in k),
    )
    advice = (
        "x is not split over them (every replica needs every write) or splits its other dims there; split the "
        "indices like the dims they index to avoid it"
    )
    coords = [moved_to("x[idx] = v", c, keep, advice) for c in coords]
    unary = v is None
    scalar = not isinstance(v, ShardArray)
    keyed = mode == "set" or ordered(mode, x.dtype)  # (the pairs' global positions travel)
    vdt = value_dtype(mode, x.dtype)
    if unary:
        sv = None
    elif scalar:
        sv = scalar_for_write(v, vdt, f"x[idx] = v (the {x.dtype} array {x.sizes})")
    else:
        v = transpose.__wrapped__(v, (*bdims, *rest))
        v = astype(v, vdt) if v.dtype != vdt else v
        v = moved_to(
            "x[idx] = v",
            v,
            (*keep, *(x.spec.of(d) for d in rest)),
            "x is not split over them (every replica needs every value) or splits its other dims there; split "
            "the values like the indices and x's other dims to avoid it",
            "the value",
        )
    if coords[0].size == 0:
        return
    _refuse_negative_powers(x, mode, sv if scalar else v)
    spare = tuple(a for a in group if a not in coords[0].spec.used_axes)
    reps = mesh.axes_size(spare)
    if not backend.has_data:
        _modeled(x, pos, group, coords[0], spare, keyed, None if scalar else v)
        return
    cbounds = block_bounds(mesh, coords[0].spec)
    owner: list[Any] = [None] * mesh.size
    rows: list[Any] = [None] * mesh.size
    gpos: list[Any] = [None] * mesh.size
    vals: list[Any] = [None] * mesh.size
    for d in range(mesh.size):
        if coords[0].shards[d] is None:
            continue
        with backend.scope(d):
            cs = [xp.clip(c.shards[d].reshape(-1).astype(np.int64), 0, x.sizes[dm] - 1) for c, dm in zip(coords, dims)]
            which = xp.arange(cs[0].shape[0], dtype=np.int64)
            if reps > 1:
                co = mesh.coords(d)
                share = 0
                for a in spare:
                    share = share * mesh.axis_size(a) + co[a]
                which = which[which % reps == share]
                cs = [c[which] for c in cs]
            owner[d], rows[d] = locate(mesh, x.spec, pos, cs, d)
            if keyed:
                gpos[d] = _global_positions(xp, backend, cbounds[d], coords[0].shape)[which]
            if not scalar:
                vb = v.shards[d]
                vals[d] = vb.reshape(math.prod(vb.shape[: len(bdims)]), math.prod(vb.shape[len(bdims) :]))[which]
    route = Route(mesh, group, owner)
    got_rows = route.send(rows)
    got_pos = route.send(gpos) if keyed else [None] * mesh.size
    got_vals: list[Any] = [None] * mesh.size if scalar else route.send(vals)
    perm = (*pos, *(x.dims.index(d) for d in rest))
    back = tuple(perm.index(i) for i in range(x.ndim))
    out = list(x.shards)
    for d, r in enumerate(got_rows):
        if r is None:
            continue
        with backend.scope(d):
            xb = xp.transpose(x.shards[d], perm)
            shape = xb.shape
            n = math.prod(shape[: len(dims)])
            table = xp.array(xb.reshape(n, math.prod(shape[len(dims) :])), copy=True)
            if r.shape[0] and table.size:
                val: Any = got_vals[d]
                if scalar and not unary:
                    val = xp.full((r.shape[0], table.shape[1]), sv, dtype=vdt)
                if mode == "set":
                    order = lex_order(xp, [got_pos[d], r])
                    rs = r[order]
                    last = xp.concatenate([rs[1:] != rs[:-1], xp.ones((1,), dtype=bool)])
                    table[rs[last]] = val[order][last]
                elif mode == "add" and not keyed:  # (integers: the sum of a row's repeats, any order)
                    table = table + backend.scatter_rows(r.reshape(1, -1), val.reshape(1, *val.shape), n)[0]
                elif mode in ("maximum", "minimum"):
                    table = backend.extreme_at(table, r, val, mode)
                else:  # (in key order where it matters: the pairs arrive grouped by sender)
                    order = xp.argsort(got_pos[d], kind="stable") if keyed else None
                    if order is not None:
                        r, val = r[order], None if val is None else val[order]
                    table = backend.apply_at(table, r, val, mode)
            out[d] = xp.transpose(table.reshape(shape), back)
    x.shards = tuple(out)
    x.host_range = None
    x._resolved = None


def _refuse_negative_powers(x: ShardArray, mode: str, v: Any) -> None:
    """Raise ``ArgumentError`` for ``np.power.at`` of a signed integer array with a negative value, on every
    process alike and before anything is written (NumPy's ValueError; the owners would raise it alone after the
    exchange, and an MPI job would go on with some processes failed). A host value is read where it is; an array
    of values is checked where each block lives, one flag per device (``holds_anywhere``: one host reduction under
    MPI), only for this op and dtype."""
    if mode != "power" or x.dtype.kind != "i" or v is None:
        return
    if isinstance(v, ShardArray):
        negative = holds_anywhere([v], _has_negative)
    else:
        negative = bool(np.asarray(v) < 0)
    if negative:
        raise ArgumentError(
            f"np.power.at: integers to negative integer powers are not allowed (the {x.dtype} array of shape "
            f"{x.shape} was given a negative exponent, as NumPy refuses); cast the array to a float dtype first"
        )


def _has_negative(xp: Any, block: Any) -> Any:
    return xp.any(block < 0)


def _modeled(
    x: ShardArray,
    pos: tuple[int, ...],
    group: tuple[str, ...],
    ids: ShardArray,
    spare: tuple[str, ...],
    keyed: bool,
    v: Any,
) -> None:
    """The routing of ``write_at`` on a meta mesh (no values): the real path's alltoallvs, in its order and dtypes,
    with modeled sizes.

    How many entries go to each owner depends on the ids' values; the model takes them uniform over ``x``'s rows:
    each device sends its share of its index block (``1/reps`` of it where replicas split the work) to the members
    of its group in proportion to the rows each member owns (an owner of an empty block gets nothing). Skewed ids
    (all in one block) send more to one owner; the model is the typical cost, not a bound.
    """
    mesh = x.mesh
    p = mesh.axes_size(group)
    if p == 1:
        return
    bounds = block_bounds(mesh, x.spec)
    reps = mesh.axes_size(spare)
    total = math.prod(x.shape[i] for i in pos)
    counts: list[Any] = [None] * mesh.size
    sizes: list[list[int]] = [[] for _ in range(mesh.size)]
    for g in mesh.groups(group):
        rows = [math.prod(bounds[m][i][1] - bounds[m][i][0] for i in pos) for m in g]
        cum = [sum(rows[:i]) for i in range(p + 1)]
        for d in g:
            if ids.shards[d] is None:
                continue
            k = int(ids.shards[d].size)
            if reps > 1:
                share = 0
                for a in spare:
                    share = share * mesh.axis_size(a) + mesh.coords(d)[a]
                k = len(range(share, k, reps))
            sizes[d] = [k * cum[i + 1] // max(total, 1) - k * cum[i] // max(total, 1) for i in range(p)]
            counts[d] = [MetaArray((1,), np.int64) for _ in range(p)]
    mesh.comm.alltoallv(counts, group, 0)
    held = [d for d in range(mesh.size) if counts[d] is not None]

    def send(shape: tuple[int, ...], dtype: Any) -> None:
        pieces: list[Any] = [None] * mesh.size
        for d in held:
            pieces[d] = [MetaArray((c, *shape), dtype) for c in sizes[d]]
        mesh.comm.alltoallv(pieces, group, 0)

    send((), np.int64)  # the rows in the owners' blocks
    if keyed:
        send((), np.int64)  # the global positions (the last write wins; the order of ordered ufuncs)
    if v is not None:
        vb = next(b for b in v.shards if b is not None)
        send((math.prod(vb.shape[ids.ndim :]),), x.dtype)


__all__ = ["write_at"]
