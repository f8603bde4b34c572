"""Basic indexing along one named dim: one int (``pick``: the dim is dropped) or one slice (``slice_dim``).

These are the pieces ``isel`` and ``x[...]`` are made of (``slicing.py``), and
what ops that select along a dim (flip, diff, the boolean mask's scalar cases)
call directly. Negative ints and slice bounds count from the end as in NumPy;
an int out of range raises ``DimensionError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array import ShardArray
from ...core.common import map_blocks
from ...core.relayout import resolve_to
from ...core.tape import differentiable
from ...errors import ArgumentError, DTypeError, OutOfBoundsError
from ...layout import Layout, block_bounds
from .slice_box import slice_dims


def _index(ndim: int, axis: int, item: Any) -> tuple[Any, ...]:
    """The block index of ``item`` along ``axis``; its trailing Ellipsis keeps a block an array when ``item`` is an
    int that drops its last axis (``b[3]`` of a 1-D NumPy block is a NumPy scalar, which has no ``[...] = v``)."""
    return (slice(None),) * axis + (item,) + (slice(None),) * (ndim - axis - 1) + (Ellipsis,)


def normalize_int(x: ShardArray, dim: str, i: Any) -> int:
    """``i`` as an index in ``[0, n)`` of ``dim`` (negative counts from the end), else ``DimensionError``."""
    n = x.sizes[dim]
    j = int(i)
    if not -n <= j < n:
        raise OutOfBoundsError(
            f"index {j} is out of range for dim {dim!r} of size {n} (array {x.sizes}); use 0..{n - 1} or -{n}..-1"
            if n
            else f"index {j} is out of range for dim {dim!r} of size 0 (array {x.sizes}): "
            f"an empty dim has no entries to pick"
        )
    return j + n if j < 0 else j


def host_ids(arr: np.ndarray) -> np.ndarray:
    """Integer ids given on the host (a list or NumPy array) as int64.

    A uint64 id beyond int64's range is out of range for any dim: it becomes int64's maximum, which the range
    checks refuse, instead of wrapping to a negative id that would count from the end (``2**64 - 1`` was ``-1``,
    the last entry, silently; NumPy raises ``IndexError``).
    """
    if arr.dtype == np.uint64:
        arr = np.minimum(arr, np.uint64(np.iinfo(np.int64).max))
    return arr.astype(np.int64)


def check_host_ids(arr: np.ndarray, n: int, place: str, comm_kind: str, what: str) -> None:
    """Raise ``DimensionError`` for host ids outside ``[-n, n)``, naming the first bad one as given (before ``-n``
    wraps it, as NumPy's message). ``place`` names the indexed axis or dim. Under MPI the processes agree on the
    range in the device-side check instead (one process's ids alone must not raise alone)."""
    if arr.size and comm_kind != "mpi" and (int(arr.min()) < -n or int(arr.max()) >= n):
        bad = int(arr.min()) if int(arr.min()) < -n else int(arr.max())
        raise OutOfBoundsError(
            f"{what}: index {bad} is out of bounds for {place} with size {n} (ids must lie in [-{n}, {n}), negative "
            f"ones counting from the end); clip or remap the ids"
        )


def normalize_slice(x: ShardArray, dim: str, s: slice) -> tuple[int, int, int]:
    """``(start, step, count)`` of slice ``s`` over ``dim`` (NumPy semantics); step 0 raises."""
    for name, v in (("start", s.start), ("stop", s.stop), ("step", s.step)):
        if v is not None and (isinstance(v, (bool, np.bool_)) or not hasattr(v, "__index__")):
            raise DTypeError(f"slice {s} of dim {dim!r}: {name} must be an integer or None; got {v!r}. Use int({v!r})")
    if s.step is not None and int(s.step) == 0:
        raise ArgumentError(
            f"slice {s} of dim {dim!r} (size {x.sizes[dim]}) has step 0; use a step of 1 or more, or a negative step"
        )
    start, stop, step = slice(*(None if v is None else int(v) for v in (s.start, s.stop, s.step))).indices(x.sizes[dim])
    count = len(range(start, stop, step))
    return (start if count else 0), (step if count > 1 else 1), count


@differentiable("slice_dim")
def slice_dim(x: ShardArray, dim: str, start: int, step: int, count: int) -> ShardArray:
    """Entries ``start, start + step, ...`` (``count`` of them) of ``dim``, in the canonical block layout.

    Collectives: none when ``dim`` is unsplit (a local slice of every block);
    else one ``alltoallv`` over the dim's axes in which every device sends at
    most its own block: exactly the selected entries its peers' new blocks need.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(8.0), dims=("i",), mesh=mesh, layout={"i": "row"})
        >>> slice_dim(x, "i", 7, -3, 3).numpy()
        array([7., 4., 1.])
    """
    return slice_dims.__wrapped__(x, [(dim, start, step, count)])


@differentiable("pick")
def pick(x: ShardArray, dim: str, i: int) -> ShardArray:
    """Entry ``i`` (in ``[0, n)``) of ``dim``; the dim is dropped.

    Collectives: none when ``dim`` is unsplit; else one ``broadcast`` over the
    dim's axes from the member whose block holds ``i`` (``elements``: the row,
    the array's block without ``dim``). The result is replicated over those axes.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("i", "j"), mesh=mesh, layout={"i": "row"})
        >>> pick(x, "i", 3).numpy()
        array([6., 7.])
    """
    x = resolve_to(x) if x.pending else x
    mesh, axis, axes = x.mesh, x.dims.index(dim), x.spec.of(dim)
    dims = x.dims[:axis] + x.dims[axis + 1 :]
    layout = Layout(dims, x.shape[:axis] + x.shape[axis + 1 :], x.spec.axes[:axis] + x.spec.axes[axis + 1 :])
    bounds = block_bounds(mesh, x.spec)
    if not axes:
        shards = map_blocks(mesh, x.spec.used_axes, lambda b: b[_index(b.ndim, axis, i)], x.shards)
        return ShardArray(mesh, layout, x.dtype, shards)
    xp = mesh.backend.xp
    root = next(j for j, g in enumerate(_members(mesh, axes)) if bounds[g][axis][0] <= i < bounds[g][axis][1])
    rows: list[Any] = [None] * mesh.size
    for d, b in enumerate(x.shards):
        if b is None:
            continue
        lo, hi = bounds[d][axis]
        if lo <= i < hi:
            rows[d] = b[_index(b.ndim, axis, i - lo)]
        else:
            rows[d] = xp.zeros(b.shape[:axis] + b.shape[axis + 1 :], dtype=x.dtype)
    shards = mesh.comm.broadcast(rows, axes, root)
    return ShardArray(mesh, layout, x.dtype, shards)


def _members(mesh: Any, axes: tuple[str, ...]) -> tuple[int, ...]:
    """The devices of the first group along ``axes`` (member j's block is the same in every group)."""
    return mesh.groups(axes)[0]
