"""Cumulative sums, products and running extremes along one dim: local scan, scan of block totals, local fix-up.

Every scan here runs on one skeleton, ``block_scan``, given its local step and its combine. Along an
unsplit dim the scan is local. Along a split dim each device scans its block, then the devices of each
group along the dim's mesh axes exchange their block totals in **one allgather** (one value per device per
index of the other dims: the block with the dim cut to length 1), and each device folds the totals of the
nonempty blocks before its own, along the dim's order (an exclusive scan, done locally on the gathered
totals), and combines that carry with its local scan. Nothing else moves.

``cumsum``/``cumprod`` (``scan``): a local ``xp.cumsum``/``xp.cumprod``; the carry is added (multiplied) to
an integer or bool block; a float or complex block is scanned again from the carry on
(``cum([carry, b0, b1, ...])``), NumPy's left-to-right order within the block, so that an overflow to inf,
an underflow to 0 and complex infinities (``(1+4j) * (-inf+0j)`` is ``-inf-infj``, where the block's own
``1.5 * (-inf+0j)`` first would give NaN parts) come out as NumPy's wherever the carry is NumPy's running
value (for the second nonempty block, exactly; later blocks' carries are sums or products of block totals,
in another order than NumPy's). float16/bfloat16 accumulate in float32 and are rounded once at the end. The
sign of zero is NumPy's: the totals before a block are folded left to right (a sum would start from +0.0),
the first nonempty block adds nothing and an empty block is skipped, so a cumsum of -0.0 stays -0.0. Along
a split dim of size 0 or 1 the scan is local too (the one entry is its own prefix: the values in the
result's dtype; the empty blocks stay empty), and a pending sum whose dtype the scan keeps stays pending (a
scan is linear).

The other associative ufuncs' ``accumulate`` (``np.maximum``/``minimum``/``fmax``/``fmin``: the running
extremes, differentiable; ``logical_*``, ``bitwise_*``) and the running extremes' VJP (a reverse scan of
affine maps) use a local scan of elementwise rounds (``steps``) and their combine for the carry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import map_blocks, map_blocks_multi, new_array, one_dim_arg, require_array
from ...core.relayout import resolve, resolve_to
from ...core.tape import Context, differentiable, nondifferentiable, register_vjp
from ...dtypes import BFLOAT16, accumulation_dtype, is_complex, is_real_float
from ...errors import ArgumentError, DTypeError
from ...layout import block_bounds
from ..cotangent import match
from ..elementwise.logical import complex_choose

Parts = tuple[Any, ...]
#: ``combine(earlier, later)``: the associative step of a scan on parts (tuples of equal-shape blocks)
Combine = Callable[[Parts, Parts], Parts]
#: ``apply(carry, parts, *blocks)``: a device's scanned ``parts`` continued from the ``carry`` of the blocks before
Apply = Callable[..., Parts]


def block_scan(
    x: ShardArray,
    dim: str,
    shard_lists: Sequence[Sequence[Any]],
    local: Callable[..., Parts],
    combine: Combine,
    dtypes: tuple[Any, ...],
    reverse: bool = False,
    apply: Apply | None = None,
) -> tuple[list[Any], list[Any]]:
    """An associative scan along ``dim`` with ``x``'s layout (and pending axes): per device its scanned parts
    and the combined total of the blocks before its own (its *carry*; None for the first nonempty block or
    where the scan is local). Every scan of this module runs on it.

    ``local(*blocks)`` scans one device's blocks (one from each list of ``shard_lists``) along ``dim`` (from
    the end with ``reverse``) into the scan's parts (``dtypes`` theirs). ``combine(earlier, later)`` is
    associative, ``earlier`` first in the scan's order. ``apply(carry, parts, *blocks)`` continues a device's
    scan from its carry (default ``combine(carry, parts)``; the float sums and products scan the block again
    from the carry, NumPy's order).

    Along a split ``dim`` of size > 1, **one allgather per part** over the dim's mesh axes of each block's
    total (its last scanned element: one value per device per index of the other dims); each device folds
    the totals of the nonempty blocks before its own (block lengths are host ints: an empty block adds
    nothing, not even an identity, which a complex ``(1+0j) * (inf+0j)`` would turn into NaN parts) and
    applies that carry. Nothing else moves. Along an unsplit ``dim``, or one of size 0 or 1, the scan is local.

    The fold runs along the dim's order, each total combined on its side (``combine(carry, t)`` forward,
    ``combine(t, carry)`` with ``reverse``): ``((t0 + t1) + t2)`` forward, NumPy's order, and the same sums
    as a forward scan of the totals from the end too (``t3 + (t2 + t1)`` is ``(t1 + t2) + t3`` bit for bit).
    """
    mesh = x.mesh
    i = x.dims.index(dim)
    pre = (slice(None),) * i
    used = x.spec.used_axes.union(x.pending)
    k = len(dtypes)

    def scan_block(*blocks: Any) -> Parts:
        if isinstance(blocks[0], MetaArray):
            return tuple(MetaArray(blocks[0].shape, dt) for dt in dtypes)
        return local(*blocks)

    scanned = map_blocks(mesh, used, scan_block, *shard_lists)
    axes = x.spec.of(dim) if x.sizes[dim] > 1 else ()
    if not axes:
        return list(scanned), [None] * mesh.size
    xp = mesh.backend.xp

    def total(parts: Parts) -> Parts:
        p0 = parts[0]
        shape = p0.shape[:i] + (1,) + p0.shape[i + 1 :]
        if isinstance(p0, MetaArray):
            return tuple(MetaArray(shape, dt) for dt in dtypes)
        if p0.shape[i] == 0:  # (an empty block's entry is never read: the lengths are known)
            return tuple(xp.zeros(shape, dtype=dt) for dt in dtypes)
        at = 0 if reverse else p0.shape[i] - 1
        return tuple(xp.ascontiguousarray(p[pre + (slice(at, at + 1),)]) for p in parts)

    if k == 1:  # (the sums and the extremes: one part, without map_blocks_multi's regrouping)
        totals = [map_blocks(mesh, used, lambda parts: total(parts)[0], scanned)]
    else:
        totals = map_blocks_multi(mesh, used, k, total, scanned)
    gathered = [mesh.comm.allgather(t, axes, dim=i) for t in totals]
    bounds = block_bounds(mesh, x.spec)
    carries: list[Any] = [None] * mesh.size
    combined: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        full = [j for j, d in enumerate(group) if bounds[d][i][1] > bounds[d][i][0]]
        for j, d in enumerate(group):
            parts = scanned[d]
            combined[d] = parts
            if parts is None or isinstance(parts[0], MetaArray):
                continue
            carry = None
            for m in (m for m in full if (m > j if reverse else m < j)):  # (in the dim's order; see above)
                t = tuple(g[d][pre + (slice(m, m + 1),)] for g in gathered)
                carry = t if carry is None else (combine(t, carry) if reverse else combine(carry, t))
            if carry is not None:
                carries[d] = carry
                blocks = tuple(s[d] for s in shard_lists)
                combined[d] = combine(carry, parts) if apply is None else apply(carry, parts, *blocks)
    return combined, carries


def steps(xp: Any, i: int, make: Callable[..., Parts], combine: Combine, reverse: bool = False) -> Callable[..., Parts]:
    """A ``local`` for ``block_scan``: ``make(*blocks)`` (the parts), then their inclusive scan along axis ``i``
    (from the end with ``reverse``) in elementwise rounds of the backend.

    Hillis-Steele: ``ceil(log2(n))`` rounds, each combining every element with the one ``s`` before it
    (``s`` = 1, 2, 4, ...), so only the backend's elementwise ops run (CuPy's ``ufunc.accumulate`` is
    ``add``/``multiply`` only). ``combine(earlier, later)`` must be associative.
    """
    pre = (slice(None),) * i

    def local(*blocks: Any) -> Parts:
        parts = make(*blocks)
        if reverse:
            parts = tuple(xp.flip(p, axis=i) for p in parts)
        n, s = parts[0].shape[i], 1
        while s < n:
            head = tuple(p[pre + (slice(0, n - s),)] for p in parts)
            done = combine(head, tuple(p[pre + (slice(s, n),)] for p in parts))
            parts = tuple(xp.concatenate([p[pre + (slice(0, s),)], c], axis=i) for p, c in zip(parts, done))
            s *= 2
        return tuple(xp.flip(p, axis=i) for p in parts) if reverse else parts

    return local


def scan_dtype(dtype: np.dtype) -> np.dtype:
    """The result dtype of a NumPy cumsum of ``dtype`` (small ints and bool widen to the default int)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc" or dtype.name == "bfloat16":
        return dtype
    return np.cumsum(np.zeros(1, dtype=dtype)).dtype


def sum_identity(dtype: Any) -> Any:
    """The exact additive identity of ``dtype``: -0.0 for float and complex dtypes (keeps a -0.0), else 0.

    Example:
        >>> from shardarray.ops.reduction.scan import sum_identity
        >>> sum_identity(np.float32), sum_identity(np.complex64), sum_identity(np.int64)
        (-0.0, (-0-0j), 0)
    """
    if is_real_float(dtype):
        return -0.0
    return complex(-0.0, -0.0) if is_complex(dtype) else 0


def _one_dim(x: Any, dim: Any, what: str) -> tuple[ShardArray, str]:
    x = require_array(x, f"sa.{what}")
    dim = one_dim_arg(x, dim, what, "scan", none_on_1d=True)
    if x.dtype.kind not in "biufc" and x.dtype.name != "bfloat16":
        raise DTypeError(f"{what}: needs a numeric or bool array; got dtype {x.dtype} (array {x.sizes})")
    return x, dim


def scan(x: ShardArray, dim: str, op: str, reverse: bool = False, dtype: Any = None) -> ShardArray:
    """The inclusive scan (``op`` "sum" or "prod") of ``x`` along ``dim``; ``reverse`` scans from the end.

    ``block_scan`` with a local ``xp.cumsum``/``xp.cumprod`` and an add (multiply) of the carry; a float or
    complex block is scanned again from its carry on (NumPy's order, see the module docstring).

    Collectives: one allgather over ``dim``'s mesh axes of one total per device per other-index (nothing when
    ``dim`` is unsplit or has size 0 or 1: the scan is local, and a sum scan that keeps the dtype keeps a
    pending sum pending).
    """
    out_dtype = np.dtype(dtype) if dtype is not None else scan_dtype(x.dtype)
    wide = accumulation_dtype(out_dtype)
    local_only = not x.spec.of(dim) or x.sizes[dim] <= 1
    # (a sum scan is linear: a pending sum can stay pending where the dtype stays and nothing is rounded twice)
    if not (local_only and op == "sum" and out_dtype == x.dtype and wide is None):
        x = resolve(x, x.spec.axes)
    acc = np.dtype(wide or out_dtype)
    xp = x.mesh.backend.xp
    i = x.dims.index(dim)
    cum = xp.cumsum if op == "sum" else xp.cumprod
    fold = xp.add if op == "sum" else xp.multiply

    def local(s: Any) -> Parts:
        s = s.astype(acc, copy=False)  # (the scan writes a new array)
        if reverse:
            return (xp.flip(cum(xp.flip(s, axis=i), axis=i), axis=i),)
        return (cum(s, axis=i),)

    def combine(earlier: Parts, later: Parts) -> Parts:
        return (fold(earlier[0], later[0]),)

    def carried(carry: Parts, parts: Parts, s: Any) -> Parts:
        """The block ``s`` scanned again from ``carry`` on: ``cum([carry, s0, s1, ...])``, NumPy's order."""
        s, c = s.astype(acc, copy=False), carry[0]
        if reverse:
            z = xp.flip(xp.concatenate([s, c], axis=i), axis=i)
            return (xp.flip(cum(z, axis=i), axis=i)[(slice(None),) * i + (slice(0, s.shape[i]),)],)
        return (cum(xp.concatenate([c, s], axis=i), axis=i)[(slice(None),) * i + (slice(1, None),)],)

    apply = carried if acc.kind in "fc" else None
    scanned, _ = block_scan(x, dim, [x.shards], local, combine, (acc,), reverse=reverse, apply=apply)
    shards = [
        None
        if p is None
        else (MetaArray(p[0].shape, out_dtype) if isinstance(p[0], MetaArray) else p[0].astype(out_dtype, copy=False))
        for p in scanned
    ]
    return new_array(x.mesh, x.dims, x.sizes, dict(zip(x.dims, x.spec.axes)), shards, x.pending, dtype=out_dtype)


@differentiable("cumsum")
def cumsum(x: ShardArray, dim: Any = None, dtype: Any = None) -> ShardArray:
    """Cumulative sum along ``dim`` (NumPy's ``cumsum``: small ints and bool give int64).

    Over a split dim: a local cumsum per block, **one allgather** over the
    dim's mesh axes of each block's total (one element per device per index
    of the other dims), then each device adds the sum of the totals of the
    blocks before its own (a float or complex block is scanned again from
    that sum on, NumPy's order; see the module docstring). Along a dim of size 0 or 1 (split or not) the scan
    is local (the values in the result's dtype) and, where the dtype stays, a
    pending sum stays pending. float16/bfloat16 accumulate in float32. The VJP is
    a reverse cumsum (the same collectives). A 1-D array may leave ``dim`` out.

    Args:
        x: the array.
        dim: the dim to scan (a name or a position).
        dtype: the result dtype (default as NumPy).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(1.0, 7.0).reshape(2, 3), dims=("b", "seq"), mesh=mesh,
        ...                layout={"b": "row", "seq": "col"})
        >>> with sa.comm_log() as log:
        ...     y = sa.cumsum(x, "seq")
        >>> y.numpy(), [(r.op, r.elements) for r in log.records]
        (array([[ 1.,  3.,  6.],
               [ 4.,  9., 15.]]), [('allgather', 1)])
    """
    x, dim = _one_dim(x, dim, "cumsum")
    return scan(x, dim, "sum", dtype=dtype)


@differentiable("cumprod")
def cumprod(x: ShardArray, dim: Any = None, dtype: Any = None) -> ShardArray:
    """Cumulative product along ``dim`` (NumPy's ``cumprod``).

    Collectives as ``cumsum``: one allgather of each block's product over the
    dim's mesh axes, then a local multiply by the product of the earlier
    blocks' totals (a float or complex block scanned again from that product
    on: an overflow to inf stays inf, as NumPy's). The VJP is ``reverse_cumsum(g * y) / x``, exact where
    ``x`` has no zeros (a zero in ``x`` gives NaN/inf gradients there, as the
    formula divides by it).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([1.0, 2.0, 3.0, 4.0]), dims=("seq",), mesh=mesh, layout={"seq": ("row", "col")})
        >>> sa.cumprod(x, "seq").numpy()
        array([ 1.,  2.,  6., 24.])
    """
    x, dim = _one_dim(x, dim, "cumprod")
    return scan(x, dim, "prod", dtype=dtype)


# ------------------------------------------------------------------ the other associative ufuncs' accumulate

#: ``ufunc.accumulate`` of these is ``accumulate``: running extremes (differentiable), truth values and bits (not)
EXTREMES = ("maximum", "minimum", "fmax", "fmin")
LOGICAL = ("logical_and", "logical_or", "logical_xor")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
ACCUMULATES = EXTREMES + LOGICAL + BITWISE


def _ufunc_combine(xp: Any, op: str, dtype: np.dtype) -> Combine:
    """The ufunc ``op`` of the backend on one-part elements (complex extremes in NumPy's order, bit for bit)."""
    if dtype.kind == "c" and op in EXTREMES:  # lexicographic, a NaN part propagating (maximum/minimum)
        return lambda a, b: (complex_choose(xp, op, a[0], b[0]),)
    fn = getattr(xp, op)
    return lambda a, b: (fn(a[0], b[0]),)


def _accumulate(x: ShardArray, dim: str, op: str) -> ShardArray:
    """``np.<op>.accumulate`` of ``x`` along ``dim``, in ``x``'s dtype (bool for the ``logical_*`` ops)."""
    x = resolve(x, x.spec.axes)
    dtype = np.dtype(bool) if op in LOGICAL else x.dtype
    work = np.dtype(np.float32) if dtype == BFLOAT16 else dtype  # (max/min are exact in float32)
    xp = x.mesh.backend.xp
    combine = _ufunc_combine(xp, op, work)

    def make(s: Any) -> Parts:
        if op in LOGICAL:
            return (s.astype(bool, copy=False) if s.dtype == np.bool_ else s != 0,)
        return (s.astype(work, copy=False),)

    local = steps(xp, x.dims.index(dim), make, combine)
    scanned, _ = block_scan(x, dim, [x.shards], local, combine, (work,))
    shards = [
        None
        if p is None
        else (MetaArray(p[0].shape, dtype) if isinstance(p[0], MetaArray) else p[0].astype(dtype, copy=False))
        for p in scanned
    ]
    return new_array(x.mesh, x.dims, x.sizes, dict(zip(x.dims, x.spec.axes)), shards, dtype=dtype)


def _scan_arg(x: Any, dim: Any, op: str, ops: tuple[str, ...], what: str) -> tuple[ShardArray, str]:
    x = require_array(x, f"sa.{what}")
    dim = one_dim_arg(x, dim, what, "scan", none_on_1d=True)
    if op not in ops:
        raise ArgumentError(f"{what}: op must be one of {ops}; got {op!r}")
    kinds = "biu" if op in BITWISE else "biufc"
    if x.dtype.kind not in kinds and not (x.dtype == BFLOAT16 and op not in BITWISE):
        need = "an integer or bool" if op in BITWISE else "a numeric or bool"
        raise DTypeError(
            f"{what}: np.{op}.accumulate needs {need} array; got dtype {x.dtype} (array {x.sizes}), as NumPy has no "
            f"{op} loop for it; cast it first"
        )
    return x, dim


@differentiable("cumulative_extreme", resolve_inputs=True)
def cumulative_extreme(x: ShardArray, dim: Any = None, op: str = "maximum") -> ShardArray:
    """The running maximum (``op`` "maximum", "minimum", "fmax" or "fmin") of ``x`` along ``dim``:
    ``np.maximum.accumulate`` and its kin, in ``x``'s dtype (NumPy's loops; bool, ints, float16/bfloat16,
    complex).

    NaN as NumPy: ``maximum``/``minimum`` propagate it from its first position on, ``fmax``/``fmin`` skip it
    (a NaN only while every value so far is one). Complex values in NumPy's lexicographic order (real part,
    then imaginary part), a value with a NaN part propagating. Of tied values (``0.0`` and ``-0.0``) the one
    the backend's elementwise ``op`` of the running value and the next picks: the sign of a tied zero may differ
    from NumPy's accumulate loops, which themselves differ there between ``maximum`` and ``fmax``.

    Collectives: along a split ``dim`` (size > 1), **one allgather** over the dim's mesh axes of each block's
    last running value (one element per device per index of the other dims), then each device combines the
    values of the nonempty blocks before its own with its local scan; nothing else moves. A local scan takes
    ``ceil(log2(n))`` elementwise rounds of the backend (``block_scan``).

    Gradient: the cotangent of ``y[i]`` goes to the one position ``j <= i`` holding the running value: the
    **last** ``j`` with ``x[j] == y[i]`` (a NaN counting as equal to a NaN), PyTorch's ``cummax`` index
    convention. JAX's ``lax.cummax`` differentiates its ``associative_scan``, whose ``lax.max`` halves a tie at
    each combine, so its split of a tie follows its tree (``[1, 1]``: 0.5 each; the last output of ``[1, 1, 1]``:
    0.25, 0.25, 0.5); that split would change with the block layout here, so one position takes it all. Away
    from ties both agree. The VJP is a reverse segmented sum: along a split ``dim`` two allgathers of one value
    per line (a flag and a partial sum).

    Args:
        x: the array.
        dim: the dim to scan (a name or a position; a 1-D array may leave it out).
        op: "maximum", "minimum", "fmax" or "fmin".

    Example:
        >>> from shardarray.ops.reduction.scan import cumulative_extreme
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([1.0, 3.0, 2.0, 5.0, 4.0]), dims=("t",), mesh=mesh, layout={"t": ("row", "col")})
        >>> with sa.comm_log() as log:
        ...     y = cumulative_extreme(x, "t")
        >>> y.numpy(), [(r.op, r.elements) for r in log.records]
        (array([1., 3., 3., 5., 5.]), [('allgather', 1)])
    """
    x, dim = _scan_arg(x, dim, op, EXTREMES, "cumulative_extreme")
    return _accumulate(x, dim, op)


@nondifferentiable("cumulative_bits")
def cumulative_bits(x: ShardArray, dim: Any = None, op: str = "logical_or") -> ShardArray:
    """``np.<op>.accumulate`` of ``x`` along ``dim`` for the ``logical_*`` (a bool result; a non-bool ``x`` read
    as ``x != 0``, as NumPy's loops read it) and ``bitwise_*`` ops (ints and bools, in ``x``'s dtype).

    Collectives as ``cumulative_extreme``: one allgather of each block's last running value along a split
    ``dim``. No gradient (bool and integer results).

    Example:
        >>> from shardarray.ops.reduction.scan import cumulative_bits
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([0, 0, 2, 0, 1]), dims=("t",), mesh=mesh, layout={"t": "col"})
        >>> cumulative_bits(x, "t", "logical_or").numpy(), cumulative_bits(x, "t", "bitwise_xor").numpy()
        (array([False, False,  True,  True,  True]), array([0, 0, 2, 2, 3]))
    """
    x, dim = _scan_arg(x, dim, op, LOGICAL + BITWISE, "cumulative_bits")
    return _accumulate(x, dim, op)


def accumulate(x: ShardArray, dim: Any, op: str) -> ShardArray:
    """``np.<op>.accumulate`` for the associative ufuncs beyond ``add``/``multiply`` (``ACCUMULATES``): the
    running extremes (``cumulative_extreme``, differentiable) and the running truth values and bits
    (``cumulative_bits``)."""
    if op in EXTREMES:
        return cumulative_extreme(x, dim, op)
    return cumulative_bits(x, dim, op)


@register_vjp("cumulative_extreme")
def _cumulative_extreme_vjp(ctx: Context, g: ShardArray) -> list[Any]:
    """``x̄[k] = Σ ȳ[i]`` over the ``i >= k`` whose running value ``x[k]`` holds (``k`` the last hit up to ``i``).

    A hit is ``x[k] == y[k]`` (a NaN equal to a NaN). With ``z[k]`` the sum of ``ȳ`` from ``k`` up to the next
    hit (0 at a hit), ``z[k] = (0 if hit[k] else ȳ[k] + z[k+1])``: a reverse scan of affine maps ``(a, b)``
    (``a`` = not hit), exact (no differences of sums); ``x̄[k] = hit[k] * (ȳ[k] + z[k+1])``, with ``z`` past a
    block's end its carry from the blocks after it.
    """
    x, y = ctx.args[0], ctx.out
    dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("dim")
    dim = x.dims[0] if dim is None else (dim if isinstance(dim, str) else x.dims[int(dim)])
    g = resolve_to(cast(ShardArray, match(g, y)))
    mesh, xp = x.mesh, x.mesh.backend.xp
    i = x.dims.index(dim)
    pre = (slice(None),) * i
    work = accumulation_dtype(g.dtype) or g.dtype

    def hits(xb: Any, yb: Any) -> Any:
        return (xb == yb) | (xp.isnan(xb) & xp.isnan(yb))

    def make(xb: Any, yb: Any, gb: Any) -> Parts:
        hit = hits(xb, yb)
        return (~hit, xp.where(hit, xp.zeros((), dtype=work), gb.astype(work)))

    def combine(e: Parts, later: Parts) -> Parts:  # later ∘ e: (a_l a_e, a_l b_e + b_l)
        return (later[0] & e[0], xp.where(later[0], e[1] + later[1], later[1]))

    local = steps(xp, i, make, combine, reverse=True)
    shard_lists = [x.shards, y.shards, g.shards]
    scanned, carries = block_scan(x, dim, shard_lists, local, combine, (np.dtype(bool), work), reverse=True)
    shards: list[Any] = [None] * mesh.size
    for d in range(mesh.size):
        parts, xb = scanned[d], x.shards[d]
        if parts is None or isinstance(xb, MetaArray):
            shards[d] = None if parts is None else MetaArray(xb.shape, x.dtype)
            continue
        z = parts[1]
        if z.shape[i] == 0:
            shards[d] = xp.zeros(xb.shape, dtype=x.dtype)
            continue
        after = carries[d][1] if carries[d] is not None else xp.zeros(z.shape[:i] + (1,) + z.shape[i + 1 :], work)
        nxt = xp.concatenate([z[pre + (slice(1, None),)], after.astype(work)], axis=i)
        gb = g.shards[d].astype(work)
        shards[d] = xp.where(hits(xb, y.shards[d]), gb + nxt, xp.zeros((), dtype=work)).astype(x.dtype)
    gx = new_array(mesh, x.dims, x.sizes, dict(zip(x.dims, x.spec.axes)), shards, dtype=x.dtype)
    return [match(gx, x)] + [None] * (len(ctx.args) - 1)


__all__ = ["accumulate", "cumprod", "cumsum", "cumulative_bits", "cumulative_extreme"]
