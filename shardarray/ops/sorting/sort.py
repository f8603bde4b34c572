"""``sort`` and ``argsort`` along one named dim, on every layout.

Which algorithm runs (``p`` = the number of devices splitting ``dim``):

* ``dim`` unsplit (or of size <= 1): a local ``xp.sort`` / stable
  ``xp.argsort`` per block (``xp``: the backend's array module, NumPy or
  CuPy); no communication.
* ``dim`` split and another dim ``o`` can take ``dim``'s mesh axes (its size
  is at least the number of devices over its own axes plus ``dim``'s): a
  **transposition**: one alltoall moves the split from ``dim`` to ``o``, each
  device sorts whole rows locally, one alltoall moves the split back. Each
  device sends about its block twice; the work is perfectly balanced.
* otherwise (a 1-D array, or other dims too small): a **parallel sample
  sort** (``ops/sorting/samplesort.py``): an allgather of ``p - 1`` samples per
  device, one alltoallv of buckets, an allgather of one bucket length per
  device and one rebalancing alltoallv into the canonical ceil-blocks. Other
  (small) dims keep their layout; the rows of each device's block are sorted
  one after another (as many sample sorts as the most rows a device holds).

Results keep ``x``'s layout. Ties keep their original order (the sort is
always stable; ``stable=False`` is allowed, as the array API standard says,
and gives the same result). NaN sorts last, as in NumPy. Complex values sort
in NumPy's order (the array API standard leaves it unspecified):
lexicographic, real part then imaginary part, with
``R+Rj < R+nanj < nan+Rj < nan+nanj`` (``order.py``); ``descending=True``
is the reverse of the ascending order of the reversed array (the array API
standard's stable descending order: equal values keep their original
order, NaN comes first), one extra ``alltoallv`` (a flip) per reversal when
``dim`` is split. ``sort`` is differentiable: its VJP sends the cotangent back
through the permutation (a sort of the cotangent keyed by ``argsort``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.common import map_blocks, one_dim_arg, require_array
from ...core.relayout import resolve, to_axes
from ...core.tape import Context, differentiable, nondifferentiable, register_vjp
from ...errors import ArgumentError, DTypeError
from ...layout import block_bounds
from ..cotangent import match
from ..manipulation.flip import _flip
from ..manipulation.structure import transpose
from . import order as keyorder
from .samplesort import sample_sort


def check_sortable(x: Any, dim: Any, what: str) -> tuple[ShardArray, str]:
    """``(x, dim name)`` after checking that ``x`` is a numeric or bool ShardArray and ``dim`` one of its dims."""
    x = require_array(x, what)
    dim = one_dim_arg(x, dim, what, "sort")
    if x.dtype.kind not in "biufc" and x.dtype.name != "bfloat16":
        raise DTypeError(f"{what}: needs a numeric or bool array; got dtype {x.dtype} (array {x.sizes})")
    return x, dim


def _flag(v: Any, name: str, what: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentError(f"{what}: {name} must be True or False; got {v!r}")
    return bool(v)


def _other_dim(x: ShardArray, dim: str) -> str | None:
    """The largest other dim that can hold ``dim``'s mesh axes on top of its own (None if none can)."""
    axes = x.spec.of(dim)
    best = None
    for d, n in zip(x.dims, x.shape):
        if d == dim or n < x.mesh.axes_size(x.spec.of(d) + axes):
            continue
        if best is None or n > x.sizes[best]:
            best = d
    return best


def _local(x: ShardArray, i: int, payload: Any) -> ShardArray:
    """Sort every block along array axis ``i`` (which is unsplit): values, stable argsort, or payload."""
    mesh, xp = x.mesh, x.mesh.backend.xp
    dtype = x.dtype if payload is None else np.dtype(np.int64) if isinstance(payload, str) else payload.dtype
    axes = x.spec.used_axes

    def run(s: Any, p: Any = None) -> Any:
        if isinstance(s, MetaArray):
            return MetaArray(s.shape, dtype)
        if payload is None:
            return keyorder.sort(xp, s, i).astype(x.dtype, copy=False)
        perm = keyorder.argsort(xp, s, i)
        return perm.astype(np.int64) if isinstance(payload, str) else xp.take_along_axis(p, perm, axis=i)

    if isinstance(payload, ShardArray):
        shards = map_blocks(mesh, axes, run, x.shards, payload.shards)
    else:
        shards = map_blocks(mesh, axes, run, x.shards)
    return ShardArray(mesh, x.spec, dtype, shards)


def _rows(x: ShardArray, dim: str, payload: Any) -> ShardArray:
    """Sample sort of every row of ``dim``, one after another (the other dims keep their layout).

    Every group along ``dim``'s axes sorts its local rows; all run the same number of sample sorts (the most
    rows any device holds), a group out of rows taking part with empty blocks, so that under MPI every
    process issues the same collectives. The rows are views (or copies) of the blocks on the backend's
    array module; nothing goes to the host but the sample sorts' counts.
    """
    mesh, i, n = x.mesh, x.dims.index(dim), x.sizes[dim]
    xp, scope = mesh.backend.xp, mesh.backend.scope
    axes = x.spec.of(dim)
    dtype = x.dtype if payload is None else np.dtype(np.int64) if isinstance(payload, str) else payload.dtype
    bounds = block_bounds(mesh, x.spec)
    local_rows = [int(np.prod([b - a for k, (a, b) in enumerate(dev) if k != i], dtype=np.int64)) for dev in bounds]
    rows = max(local_rows)

    def flat(s: Any, d: int) -> Any:
        """Device ``d``'s block as (rows, its length along ``dim``)."""
        if s is None:
            return None
        with scope(d):
            return xp.moveaxis(s, i, -1).reshape(local_rows[d], s.shape[i])

    def row(a: Any, d: int, r: int) -> Any:
        """Row ``r`` of device ``d``'s flattened block, or an empty row once its rows are done."""
        if a is None:
            return None
        if r < a.shape[0]:
            return a[r]
        with scope(d):
            return xp.zeros(0, dtype=a.dtype)

    def per_block(shards: Sequence[Any], fn: Callable[[Any, int], Any]) -> list[Any]:
        """``fn(block, device)`` once per distinct block: replicas keep sharing one buffer (the sample sort
        computes a shared buffer once)."""
        seen: dict[int, Any] = {}
        out = []
        for d, s in enumerate(shards):
            if s is not None and id(s) not in seen:
                seen[id(s)] = fn(s, d)
            out.append(None if s is None else seen[id(s)])
        return out

    keys = per_block(x.shards, flat)
    pays = per_block(payload.shards, flat) if isinstance(payload, ShardArray) else None
    done: list[list[Any]] = [[] for _ in range(mesh.size)]
    for r in range(rows):
        row_keys = per_block(keys, functools.partial(row, r=r))
        row_pay = payload if pays is None else per_block(pays, functools.partial(row, r=r))
        res = sample_sort(mesh, axes, row_keys, n, row_pay, x.dtype)
        for d, b in enumerate(res):
            if b is not None and r < local_rows[d]:
                done[d].append(b)

    def assemble(s: Any, d: int) -> Any:
        moved = xp.moveaxis(s, i, -1).shape
        with scope(d):
            rows_d = done[d]
            if len(rows_d) == 1:
                stacked = rows_d[0][None]  # one row (a 1-D array): a view, no copy
            else:
                stacked = xp.stack(rows_d) if rows_d else xp.zeros((0, moved[-1]), dtype=dtype)
            return xp.moveaxis(stacked.reshape(moved), -1, i).astype(dtype, copy=False)

    return ShardArray(mesh, x.spec, dtype, per_block(x.shards, assemble))


def ordered(x: ShardArray, dim: str, payload: Any = None) -> ShardArray:
    """The ascending stable order of ``x`` along ``dim``, in ``x``'s layout.

    ``payload`` None gives the sorted values, ``"index"`` the argsort (global
    int64 indices), a ShardArray of ``x``'s dims and sizes that array permuted
    like the values. Chooses local, transposition or sample sort (module docstring).
    """
    x = resolve(x, x.spec.axes)
    if isinstance(payload, ShardArray):
        payload = to_axes(transpose.__wrapped__(payload, x.dims), x.spec.axes, False)
    axes, n, i = x.spec.of(dim), x.sizes[dim], x.dims.index(dim)
    if not axes or n <= 1 or x.mesh.axes_size(axes) == 1 or x.size == 0:
        return _local(x, i, payload)
    other = _other_dim(x, dim)
    if other is None:
        return _rows(x, dim, payload)
    target = tuple(() if d == dim else a + axes if d == other else a for d, a in zip(x.dims, x.spec.axes))
    xt = to_axes(x, target, False)
    pt = to_axes(payload, target, False) if isinstance(payload, ShardArray) else payload
    return to_axes(_local(xt, i, pt), x.spec.axes, False)


def _reverse_index(y: ShardArray, dim: str) -> ShardArray:
    """``n - 1 - flip(y)`` along ``dim``: argsort indices of the reversed array turned into the original's."""
    n = y.sizes[dim]
    f = _flip.__wrapped__(y, dim)
    shards = map_blocks(f.mesh, f.spec.used_axes, lambda s: s if isinstance(s, MetaArray) else (n - 1) - s, f.shards)
    return ShardArray(f.mesh, f.spec, f.dtype, shards)


@differentiable("sort")
def _sort(x: ShardArray, dim: str, descending: bool) -> ShardArray:
    if not descending:
        return ordered(x, dim)
    # as _argsort: the reversed ascending order of the reversed array keeps ties (-0.0, 0.0) in their order
    return _flip.__wrapped__(ordered(_flip.__wrapped__(resolve(x, x.spec.axes), dim), dim), dim)


def _argsort(x: ShardArray, dim: str, descending: bool) -> ShardArray:
    if not descending:
        return ordered(x, dim, "index")
    return _reverse_index(ordered(_flip.__wrapped__(resolve(x, x.spec.axes), dim), dim, "index"), dim)


def sort(x: ShardArray, dim: Any, descending: bool = False, stable: bool = True) -> ShardArray:
    """The values of ``x`` sorted along ``dim`` (NaN last), in ``x``'s layout; ``np.sort(x, axis)``.

    Collectives (``m`` = a device's block): none when ``dim`` is unsplit; a
    transposition (two alltoalls of ``m`` each) when another dim can take
    ``dim``'s mesh axes; else a sample sort over ``dim``'s axes: an allgather
    of ``p - 1`` samples (3 int64 each), one alltoallv of about ``m``, an
    allgather of one int64, one rebalancing alltoallv of about ``m``.
    ``descending=True`` flips the input and the result (two alltoallv of
    ``m`` when ``dim`` is split), so that equal values keep their order.
    Differentiable.

    Args:
        x: a numeric or bool ShardArray (complex values in NumPy's order: real part, then imaginary part,
            NaNs last).
        dim: the dim to sort along (a name or a position).
        descending: largest first (equal values, -0.0 and 0.0 too, keep their order; NaN first).
        stable: accepted for the array API; the sort is always stable.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([3.0, 1.0, 2.0, 0.0, 5.0]), dims=("seq",), mesh=mesh,
        ...                layout={"seq": ("row", "col")})
        >>> with sa.comm_log() as log:
        ...     y = sa.sort(x, "seq")
        >>> y.numpy(), [r.op for r in log.records]
        (array([0., 1., 2., 3., 5.]), ['allgather', 'alltoall', 'allgather', 'alltoall'])
    """
    x, dim = check_sortable(x, dim, "sort")
    _flag(stable, "stable", "sort")
    return _sort(x, dim, _flag(descending, "descending", "sort"))


@nondifferentiable("argsort")
def argsort(x: ShardArray, dim: Any, descending: bool = False, stable: bool = True) -> ShardArray:
    """Global int64 indices that sort ``x`` along ``dim`` (stable), in ``x``'s layout; ``np.argsort``.

    Collectives as ``sort``; the sample sort's bucket exchange carries
    (value, index) pairs (two int64 per entry) and the rebalancing moves the
    indices only. ``descending=True`` flips the input and the result (two
    alltoallv of ``m`` when ``dim`` is split). Not differentiable (integers).

    Args:
        x: a numeric or bool ShardArray (complex values in NumPy's order, see ``sort``).
        dim: the dim to sort along (a name or a position).
        descending: largest first; equal values keep their original order.
        stable: accepted for the array API; the result is always stable.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[3.0, 1.0, 3.0], [0.0, 2.0, 1.0]]), dims=("b", "seq"), mesh=mesh,
        ...                layout={"seq": "col"})
        >>> sa.argsort(x, "seq").numpy()
        array([[1, 0, 2],
               [0, 2, 1]])
    """
    x, dim = check_sortable(x, dim, "argsort")
    _flag(stable, "stable", "argsort")
    return _argsort(x, dim, _flag(descending, "descending", "argsort"))


@register_vjp("sort")
def _sort_vjp(ctx: Context, g: ShardArray) -> list[Any]:

    x, dim, descending = ctx.args
    perm = _argsort(x, dim, descending)
    return [ordered(perm, dim, match(g, x)), None, None]


__all__ = ["argsort", "check_sortable", "ordered", "sort"]
