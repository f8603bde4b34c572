"""Cumulative sums and products along one named dim: local scan, exclusive scan of block totals, local fix-up.

Along an unsplit dim the scan is local. Along a split dim each device scans
its block, then the devices of each group along the dim's mesh axes exchange
their block totals in **one allgather** (one value per device per index of
the other dims: the block with the dim cut to length 1), and each device
combines the totals of the blocks before its own (an exclusive scan, done
locally on the gathered totals) with its local scan: an add for ``cumsum``, a
multiply for ``cumprod`` (integers and bools); a float or complex block is
scanned again from that prefix on (``cum([prefix, b0, b1, ...])``), NumPy's
left-to-right order within the block, so that an overflow to inf, an
underflow to 0 and complex infinities (``(1+4j) * (-inf+0j)`` is
``-inf-infj``, where the block's own ``1.5 * (-inf+0j)`` first would give NaN
parts) come out as NumPy's wherever the prefix is NumPy's running value (for
the second block, exactly; later blocks' prefixes are products or sums of
block totals, in another order than NumPy's). Nothing else moves. float16/bfloat16 accumulate in
float32 and are rounded once at the end. The sign of zero is NumPy's: the
totals before a block are combined by a scan, not a sum (which starts from
+0.0), the first block adds nothing, and an empty block's total is -0.0 (the
exact additive identity), so a cumsum of -0.0 stays -0.0. Along a split dim
of size 0 or 1 the scan is local too (the one entry is its own prefix: the
values in the result's dtype; the empty blocks stay empty), and a pending sum
whose dtype the scan keeps stays pending (a scan is linear).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import map_blocks, new_array, one_dim_arg, require_array
from ...core.relayout import resolve
from ...core.tape import differentiable
from ...dtypes import accumulation_dtype, is_complex, is_real_float
from ...errors import DTypeError


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
    acc = wide or out_dtype
    mesh, xp = x.mesh, x.mesh.backend.xp
    i = x.dims.index(dim)
    axes = () if local_only else x.spec.of(dim)
    ident = sum_identity(acc) if op == "sum" else 1
    cum = xp.cumsum if op == "sum" else xp.cumprod

    def local(s: Any) -> Any:
        if isinstance(s, MetaArray):
            return MetaArray(s.shape, acc)
        s = s.astype(acc)
        if reverse:
            return xp.flip(cum(xp.flip(s, axis=i), axis=i), axis=i)
        return cum(s, axis=i)

    def carried(s: Any, prefix: Any) -> Any:
        """The scan of the block ``s`` continued from ``prefix`` (the earlier blocks' total, 1 along ``dim``)."""
        s = s.astype(acc)
        if reverse:
            z = xp.flip(xp.concatenate([s, prefix], axis=i), axis=i)
            return xp.flip(cum(z, axis=i), axis=i)[(slice(None),) * i + (slice(0, s.shape[i]),)]
        return cum(xp.concatenate([prefix, s], axis=i), axis=i)[(slice(None),) * i + (slice(1, None),)]

    inexact = np.dtype(acc).kind in "fc"
    used = x.spec.used_axes.union(x.pending)
    scanned = map_blocks(mesh, used, local, x.shards)
    if axes:

        def total(s: Any) -> Any:
            if isinstance(s, MetaArray):
                return MetaArray(s.shape[:i] + (1,) + s.shape[i + 1 :], acc)
            shape = s.shape[:i] + (1,) + s.shape[i + 1 :]
            if s.shape[i] == 0:
                return xp.full(shape, ident, dtype=acc)
            at = 0 if reverse else s.shape[i] - 1
            return xp.ascontiguousarray(s[(slice(None),) * i + (slice(at, at + 1),)])

        totals = map_blocks(mesh, used, total, scanned)
        gathered = mesh.comm.allgather(totals, axes, dim=i)
        members = {d: j for g in mesh.groups(axes) for j, d in enumerate(g)}
        combined: list[Any] = [None] * mesh.size
        for d in range(mesh.size):
            s, g = scanned[d], gathered[d]
            if s is None or isinstance(s, MetaArray):
                combined[d] = s
                continue
            j = members[d]
            idx = (slice(None),) * i
            before = g[idx + (slice(j + 1, None),)] if reverse else g[idx + (slice(0, j),)]
            k = before.shape[i]
            if k == 0:  # the first block: nothing before it
                combined[d] = s
                continue
            # the last of a scan of the totals: a sum starts from +0.0 and would make -0.0 + -0.0 +0.0
            prefix = cum(before, axis=i)[idx + (slice(k - 1, k),)].astype(acc)
            if inexact:  # (the block scanned again from the prefix on: NumPy's left-to-right order)
                combined[d] = carried(x.shards[d], prefix)
            else:
                combined[d] = s + prefix if op == "sum" else s * prefix
        scanned = combined
    shards = [
        s
        if s is None or (isinstance(s, MetaArray) and s.dtype == out_dtype)
        else (MetaArray(s.shape, out_dtype) if isinstance(s, MetaArray) else s.astype(out_dtype, copy=False))
        for s in scanned
    ]
    return new_array(mesh, x.dims, x.sizes, dict(zip(x.dims, x.spec.axes)), shards, x.pending, dtype=out_dtype)


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


__all__ = ["cumprod", "cumsum"]
