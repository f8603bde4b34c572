"""``top_k``: the k largest values along a named dim and their global indices, along a new dim of size k.

Order: as ``np.argsort(-x, kind="stable")`` would give: largest first, equal
values by increasing index, NaN last (complex values: NumPy's order,
lexicographic by real then imaginary part, values with a NaN part last; a
complex block is argsorted whole rather than partitioned, and its candidates
travel as three int64: the parts' float64 bits and the index). Over a split dim each device sorts its
block (stable) and keeps its first ``k`` candidates (fewer if its block is
shorter: the rest are padding marked by index ``n``); the groups along the
dim's mesh axes exchange these in **one allgather** of ``k`` (value, index)
pairs per device per index of the other dims (packed into int64, 16 bytes a
pair), and every device picks the final ``k`` locally. The local step is a
partition (O(block)) plus a sort of the ``k`` candidates only. The new dim is not
split (k is small); the other dims keep their layout. Everything runs on the
backend's array module (NumPy or CuPy); nothing is read to the host.

Under MPI every process must pass the same ``k``: over a split dim the
exchange's header compares it (``comm.spmd.note``), so processes that pass
different ones raise ``sa.CommError`` naming each one's ``k``, where each
would otherwise have kept its own number of candidates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...comm.notes import note
from ...core.common import map_blocks, mesh_order, new_array, one_dim_arg, require_array
from ...core.relayout import resolve
from ...core.tape import differentiable, keeps_kind
from ...dtypes import wide_dtype
from ...errors import ArgumentError, DimensionError, DTypeError
from ...layout import block_bounds
from .order import lex_order, order_keys

_MAGNITUDE = 0x7FFF_FFFF_FFFF_FFFF  # every bit of an int64 but the sign


def _key(xp: Any, v: Any) -> Any:
    """A sort key whose ascending order is the descending order of ``v`` (NaN last; no integer overflow).

    Floats become int64 (``-v`` with -0.0 made 0.0 and every NaN one positive NaN, its bits with the
    magnitude bits of negative numbers flipped): integer comparisons give the order NumPy's sort gives
    floats, with no NaN for ``partition`` (whose CuPy kernel compares with ``<``) to misplace.
    """
    if v.dtype.kind == "f" or v.dtype.name == "bfloat16":
        neg = -v.astype(np.float64)
        neg = xp.where(neg == 0, 0.0, neg)
        bits = xp.where(xp.isnan(neg), np.nan, neg).view(np.int64)
        return bits ^ ((bits >> 63) & _MAGNITUDE)
    if v.dtype.kind == "b":
        return ~v
    return ~v.astype(wide_dtype(v.dtype))


def _complex_keys(xp: Any, v: Any) -> list[Any]:
    """Keys (least significant first) whose lexicographic ascending order is ``np.argsort(-v)``'s for complex
    ``v``: values without a NaN part first, then ``R+nanj``, ``nan+Rj``, ``nan+nanj`` (``order.order_keys``'s
    kinds, which negation keeps), each kind by its non-NaN parts descending."""
    im, re, kind = order_keys(xp, v)
    return [-im, -re, kind]


def _keys(xp: Any, v: Any) -> list[Any]:
    return _complex_keys(xp, v) if v.dtype.kind == "c" else [_key(xp, v)]


def _order(xp: Any, vals: Any, idx: Any, axis: int) -> Any:
    """Positions sorting along ``axis`` by (padding last, value descending with NaN last, index ascending)."""
    pad = idx < 0
    return lex_order(xp, [xp.where(pad, 0, idx), *_keys(xp, vals), pad], axis=axis)


def _local_top(xp: Any, key: Any, m: int, axis: int) -> Any:
    """Positions of the ``m`` smallest keys along ``axis`` in (key, index) order: ``np.argpartition``-style.

    A partition finds the m-th key ``t``; the candidates are the keys below ``t`` and the first keys equal to
    ``t`` (by index) up to ``m``; a stable bool sort pulls them out in index order, and only those ``m`` are
    sorted. ``key`` is ``_key``'s (no NaN).
    """
    n = key.shape[axis]
    head = (slice(None),) * axis
    if m == n or m == 0:
        return xp.argsort(key, axis=axis, kind="stable")[head + (slice(0, m),)]
    t = xp.partition(key, m - 1, axis=axis)[head + (slice(m - 1, m),)]
    less, equal = key < t, key == t
    room = m - xp.sum(less, axis=axis, keepdims=True)
    sel = less | (equal & (xp.cumsum(equal, axis=axis) <= room))
    cand = xp.argsort(~sel, axis=axis, kind="stable")[head + (slice(0, m),)]
    inner = xp.argsort(xp.take_along_axis(key, cand, axis=axis), axis=axis, kind="stable")
    return xp.take_along_axis(cand, inner, axis=axis)


def _check(x: Any, k: Any, dim: Any, new_dim: Any) -> tuple[ShardArray, int, str, str]:
    x = require_array(x, "sa.top_k")
    dim = one_dim_arg(x, dim, "top_k", "search", none_on_1d=True)
    if x.dtype.kind not in "biufc" and x.dtype.name != "bfloat16":
        raise DTypeError(f"top_k: needs a numeric or bool array; got dtype {x.dtype} (array {x.sizes})")
    n = x.sizes[dim]
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or not 0 <= int(k) <= n:
        raise ArgumentError(
            f"top_k: k={k!r} must be an int in 0..{n} (the size of dim {dim!r} of the array "
            f"{x.sizes}); pass a k in 1..{n} (k=0 gives empty results)"
        )
    if not isinstance(new_dim, str) or not new_dim:
        raise DimensionError(f"top_k: new_dim must be a dim name (str); got {new_dim!r}")
    if new_dim in x.dims and new_dim != dim:
        raise DimensionError(
            f"top_k: new_dim {new_dim!r} is already a dim of the array {x.sizes}; pass another "
            f"name, e.g. new_dim='{dim}_top'"
        )
    return x, int(k), dim, new_dim


def _compute(x: ShardArray, k: int, dim: str, new_dim: str) -> tuple[ShardArray, ShardArray]:
    x = resolve(x, x.spec.axes)
    mesh, xp = x.mesh, x.mesh.backend.xp
    i = x.dims.index(dim)
    axes = x.spec.of(dim) if k else ()  # (k = 0: empty results, nothing to exchange)
    dims = tuple(new_dim if d == dim else d for d in x.dims)
    sizes = {(new_dim if d == dim else d): (k if d == dim else n) for d, n in x.sizes.items()}
    out_axes = {(new_dim if d == dim else d): (() if d == dim else a) for d, a in zip(x.dims, x.spec.axes)}
    used = mesh_order(mesh, [a for v in out_axes.values() for a in v])
    offsets = [b[i][0] for b in block_bounds(mesh, x.spec)]

    def cut(s: Any, m: int) -> tuple[slice, ...]:
        return (slice(None),) * i + (slice(0, m),)

    def local(item: Any) -> Any:
        off, s = item
        if isinstance(s, MetaArray):
            shape = s.shape[:i] + (k,) + s.shape[i + 1 :]
            return MetaArray(shape, x.dtype), MetaArray(shape, np.int64)
        idx = xp.broadcast_to(xp.arange(s.shape[i], dtype=np.int64).reshape((-1,) + (1,) * (s.ndim - i - 1)), s.shape)
        m = min(k, s.shape[i])
        if s.dtype.kind == "c":  # (several keys: a stable lexicographic argsort of the block, its first m)
            order = lex_order(xp, _complex_keys(xp, s), axis=i)[cut(s, m)]
        else:
            order = _local_top(xp, _key(xp, s), m, i)
        vals = xp.take_along_axis(s, order, axis=i)
        ids = xp.take_along_axis(idx, order, axis=i) + off
        if m < k:  # pad to k candidates, padding marked by index -1
            shape = s.shape[:i] + (k - m,) + s.shape[i + 1 :]
            vals = xp.concatenate([vals, xp.zeros(shape, dtype=s.dtype)], axis=i)
            ids = xp.concatenate([ids, xp.full(shape, -1, dtype=np.int64)], axis=i)
        return vals, ids

    pairs = map_blocks(mesh, x.spec.used_axes, local, list(zip(offsets, x.shards)))
    if axes:
        cplx = x.dtype.kind == "c"
        wide = np.dtype(np.complex128) if cplx else wide_dtype(x.dtype)

        def pack(p: Any) -> Any:
            v, ids = p
            if isinstance(v, MetaArray):
                return MetaArray(v.shape + (3 if cplx else 2,), np.int64)
            v = v.astype(wide)
            parts = (v.real, v.imag) if cplx else (v,)
            return xp.stack([*(xp.ascontiguousarray(q).view(np.int64) for q in parts), ids], axis=-1)

        packed = map_blocks(mesh, x.spec.used_axes, pack, pairs)
        gathered = mesh.comm.allgather(packed, axes, dim=i)

        def pick(g: Any) -> Any:
            if isinstance(g, MetaArray):
                shape = g.shape[:i] + (k,) + g.shape[i + 1 : -1]
                return MetaArray(shape, x.dtype), MetaArray(shape, np.int64)
            if cplx:
                parts = [xp.ascontiguousarray(g[..., q]).view(np.float64) for q in (0, 1)]
                vals = xp.stack(parts, axis=-1).view(np.complex128)[..., 0]
            else:
                vals = xp.ascontiguousarray(g[..., 0]).view(wide)
            ids = g[..., -1]
            order = _order(xp, vals, ids, i)[cut(vals, k)]
            return (xp.take_along_axis(vals, order, axis=i).astype(x.dtype), xp.take_along_axis(ids, order, axis=i))

        pairs = map_blocks(mesh, used, pick, gathered)
    values = [None if p is None else p[0] for p in pairs]
    indices = [None if p is None else p[1] for p in pairs]
    return (
        new_array(mesh, dims, sizes, out_axes, values, dtype=x.dtype),
        new_array(mesh, dims, sizes, out_axes, indices, dtype=np.dtype(np.int64)),
    )


@differentiable("top_k")
def _top_k_values(x: ShardArray, k: int, dim: str, new_dim: str, box: list) -> ShardArray:
    """The values of ``top_k``; its indices go into ``box`` (the VJP scatters through them)."""
    values, indices = _compute(x, k, dim, new_dim)
    box.append(indices)
    return values


@keeps_kind
def top_k(x: ShardArray, k: int, dim: Any = None, new_dim: str = "k") -> tuple[ShardArray, ShardArray]:
    """The ``k`` largest values along ``dim`` and their global indices (int64), along a new dim ``new_dim``.

    Order as ``np.argsort(-x, kind="stable")[:k]``: largest first, ties by
    increasing index, NaN last. The result has ``x``'s dims with ``dim``
    replaced (in place) by ``new_dim`` (default ``"k"``) of size ``k``, not
    split; the other dims keep their layout.

    Collectives: none along an unsplit dim. Along a split dim, **one
    allgather** over its mesh axes of ``k`` (value, index) pairs per device
    per index of the other dims (16 bytes a pair), after a local partition;
    each device then picks the final ``k``. Differentiable in the values: the
    VJP scatters the cotangent through the indices (no communication).

    Args:
        x: a numeric or bool array (complex values in NumPy's order, see the module docstring).
        k: how many, 0 <= k <= the size of ``dim`` (``k = 0`` gives empty results with no communication, as
            ``torch.topk``/``jax.lax.top_k`` do).
        dim: the dim to search (optional for a 1-D array).
        new_dim: the name of the result's dim of size ``k``.

    Returns:
        ``(values, indices)``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[3.0, 9.0, 1.0, 9.0], [0.0, 2.0, 8.0, 5.0]]), dims=("b", "vocab"),
        ...                mesh=mesh, layout={"b": "row", "vocab": "col"})
        >>> with sa.comm_log() as log:
        ...     v, i = sa.top_k(x, 2, "vocab")
        >>> v.numpy(), i.numpy(), v.dims, [(r.op, r.elements) for r in log.records]
        (array([[9., 9.],
               [8., 5.]]), array([[1, 3],
               [2, 3]]), ('b', 'k'), [('allgather', 4)])
    """
    x, k, dim, new_dim = _check(x, k, dim, new_dim)
    # every process must pass the same k (each would keep its own number of candidates, and the exchange would
    # silently mix them): compared in the exchange's header, always, when one follows (a split dim), and with
    # SHARDARRAY_CHECK_SPMD=1 at the next collective otherwise
    exchanges = k > 0 and x.mesh.axes_size(x.spec.of(dim)) > 1
    note(x.mesh, "top_k", agree=exchanges, k=k, dim=dim, new_dim=new_dim)
    box: list = []
    values = _top_k_values(x, k, dim, new_dim, box)
    return values, box[0]


__all__ = ["top_k"]
