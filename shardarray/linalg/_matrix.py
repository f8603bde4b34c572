"""Shared machinery of ``sa.linalg``: the matrix dims of an operand, and per-block (batched) local kernels.

A linalg op sees an array as a stack of matrices: two named *matrix dims*
(rows, cols) and any number of *batch dims*. A batch dim keeps its split (each
device factors its own matrices, no communication). Ops without a distributed
algorithm here (Cholesky, LU-based solve/inv/det, eigh) need each matrix whole
on a device: a split matrix dim is then gathered (``relayout``: an allgather
over its axes, the whole matrix per device) and a ``ReplicatedFallbackWarning``
names the size.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..array import ShardArray
from ..backend.meta import MetaArray
from ..callsite import user_stacklevel
from ..core.common import dims_arg, map_blocks_multi, new_array, require_array
from ..core.relayout import relayout
from ..dtypes import is_real_float
from ..errors import DimensionError, DTypeError, GatherWarning, MatrixShapeError
from ..ops.manipulation.structure import transpose
from ._checks import guard, raise_if


class ReplicatedFallbackWarning(GatherWarning):
    """A linalg op gathered a split matrix onto every device of its group (no distributed algorithm for it); a
    ``sa.GatherWarning``, so one filter covers every gathering fallback."""


def float_dtype(x: ShardArray, what: str) -> np.dtype:
    """The floating dtype the op computes in (ints and bools refused: cast with ``astype``)."""
    if is_real_float(x.dtype) and x.dtype.itemsize < 4:
        raise DTypeError(
            f"{what}: {x.dtype} is floating-point, but LAPACK (NumPy's and cuSOLVER's) has no 16-bit routines, and "
            f"NumPy refuses float16 too (array {x.sizes}). Compute in float32: x.astype('float32'), and cast the "
            f"result back if you need 16 bits"
        )
    if x.dtype.kind not in "fc":
        raise DTypeError(
            f"{what}: needs a floating-point array; got dtype {x.dtype} (array {x.sizes}). "
            f"Cast it first, e.g. x.astype('float64')"
        )
    return x.dtype


def matrix_dims(x: Any, dims: Any, what: str, name: str = "x") -> tuple[ShardArray, str, str]:
    """``(x, rows, cols)``: the two matrix dims named by ``dims`` (default: the last two dims)."""
    x = require_array(x, f"sa.linalg.{what}", name)
    if x.ndim < 2:
        raise MatrixShapeError(
            f"sa.linalg.{what}: {name} needs at least 2 dims (a matrix); got dims {x.sizes}. "
            f"Add one with sa.expand_dims"
        )
    if dims is None:
        return x, x.dims[-2], x.dims[-1]
    names = dims_arg(x, dims, f"sa.linalg.{what}")
    if len(names) != 2:
        raise DimensionError(
            f"sa.linalg.{what}: dims must name 2 dims (rows, cols) of {name}; got {dims!r} (its dims are {x.sizes})"
        )
    return x, names[0], names[1]


def require_square(x: ShardArray, rows: str, cols: str, what: str) -> None:
    if x.sizes[rows] != x.sizes[cols]:
        raise MatrixShapeError(
            f"sa.linalg.{what}: needs square matrices; dims {rows!r} ({x.sizes[rows]}) and {cols!r} "
            f"({x.sizes[cols]}) differ. For rectangular matrices use sa.linalg.pinv (least squares: pinv(a) @ b), "
            f"qr or svd"
        )


def gather_matrix(
    x: ShardArray,
    mdims: Sequence[str],
    what: str,
    layout: dict[str, tuple[str, ...]] | None = None,
    reason: str | None = None,
) -> ShardArray:
    """``x`` with the matrix dims ``mdims`` unsplit (batch dims keep ``layout`` or their axes), pending resolved.

    Warns ``ReplicatedFallbackWarning`` (naming the matrix size) when a matrix dim was split and ``x`` holds
    elements (an empty ``x`` moves nothing: no warning).
    """
    split = {d: x.spec.of(d) for d in mdims if x.mesh.axes_size(x.spec.of(d)) > 1}
    if layout is None:
        layout = {d: a for d, a in x.layout.items() if d not in mdims}
    if split and math.prod(x.shape):  # (an empty array: nothing moves, nothing to warn about)
        size = math.prod(x.sizes[d] for d in mdims)
        warnings.warn(
            f"sa.linalg.{what}: the matrix dims {split} are split; "
            f"{reason or 'this op has no distributed algorithm'}, so each "
            f"{'x'.join(str(x.sizes[d]) for d in mdims)} matrix ({size * x.dtype.itemsize} bytes) is gathered "
            f"whole onto the devices (an allgather). Split a batch dim instead to keep it local",
            ReplicatedFallbackWarning,
            stacklevel=user_stacklevel(),
        )
    if x.pending or x.layout != layout:
        x = relayout(x, layout)
    return x


def batch_last(x: ShardArray, mdims: Sequence[str]) -> tuple[ShardArray, tuple[str, ...]]:
    """``x`` transposed so that ``mdims`` come last; returns it and its batch dims."""
    batch = tuple(d for d in x.dims if d not in mdims)
    order = (*batch, *mdims)
    return (transpose(x, order) if order != x.dims else x), batch


def _shapes_of(outs: Sequence[tuple[tuple[str, ...], dict[str, int], Any]], nbatch: int) -> Callable[..., Any]:
    """The meta backend's block function of a ``local_op``: results of the blocks' batch shape and each output's
    trailing sizes and dtype (a factorization's shapes follow from its inputs' alone)."""

    def shapes(*blocks: Any) -> tuple[MetaArray, ...]:
        lead = blocks[0].shape[:nbatch]
        return tuple(MetaArray((*lead, *(sizes[d] for d in tail)), dtype) for tail, sizes, dtype in outs)

    return shapes


def local_op(
    xs: Sequence[ShardArray],
    mdims: Sequence[Sequence[str]],
    fn: Callable[..., tuple[Any, ...]],
    outs: Sequence[tuple[tuple[str, ...], dict[str, int], Any]],
    what: str,
    reason: str | None = None,
    fails: str | None = None,
) -> list[ShardArray]:
    """Run ``fn`` on every device's blocks, the matrix dims whole and last, the batch dims as they are split.

    ``reason`` replaces "no distributed algorithm" in the fallback warning.
    ``xs[0]`` sets the batch layout; the other operands (same batch dims)
    follow it. ``outs``: per result, its trailing (matrix) dims, their sizes and its
    dtype; results have the batch dims of ``xs[0]`` first.

    ``fails``: the op can fail (``_checks``); ``fn`` then returns one more block, a boolean array on the
    device (per matrix: it failed) or False, and NumPy's own ``LinAlgError`` (NumPy shards) is caught on
    the block (``_checks.guard``). After every block ran, ``LinAlgError(fails)``, naming the first failed
    matrix's batch index and device, is raised on every process or on none (``_checks.raise_if``: one read
    for all devices, and under MPI **one host reduction** of one int over the job, so that a bad matrix
    held by one process cannot leave the others waiting at their next collective; none on an emulated mesh).
    """
    first = gather_matrix(xs[0], mdims[0], what, reason=reason)
    first, batch = batch_last(first, mdims[0])
    lay = {d: first.spec.of(d) for d in batch if first.spec.of(d)}
    ready = [first]
    for x, md in zip(xs[1:], mdims[1:]):
        x = gather_matrix(x, md, what, layout=lay)
        x, _ = batch_last(x, md)
        ready.append(x)
    mesh = first.mesh
    sizes = {d: first.sizes[d] for d in batch}
    used = first.spec.used_axes
    if not mesh.backend.has_data:  # shapes only (meta): each result's shape and dtype from ``outs``, no math
        shards = map_blocks_multi(mesh, used, len(outs), _shapes_of(outs, len(batch)), *(r.shards for r in ready))
    elif fails is None:
        shards = map_blocks_multi(mesh, used, len(outs), fn, *(r.shards for r in ready))
    else:
        shards = map_blocks_multi(mesh, used, len(outs) + 1, guard(fn, len(outs)), *(r.shards for r in ready))
        raise_if(mesh, shards.pop(), fails, first, len(batch))
    result = []
    for (tail, tsizes, dtype), sh in zip(outs, shards):
        dims = (*batch, *tail)
        result.append(new_array(mesh, dims, {**sizes, **tsizes}, lay, sh, dtype=np.dtype(dtype)))
    return result
