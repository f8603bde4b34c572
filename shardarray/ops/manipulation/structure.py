"""Ops that change names, order, dtype or repetition but not values: rename, transpose, astype, broadcast_to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...array import ShardArray
from ...backend import cuda_kernels
from ...core.common import map_blocks, require_array
from ...core.relayout import permute_dims, resolve, to_axes
from ...core.tape import differentiable, keeps_kind
from ...dtypes import as_dtype
from ...errors import DimensionError, DTypeError
from ...layout import Layout, block_bounds, check_dims, check_sizes, make_layout
from ...mesh import AxesSpec


@differentiable("rename")
def rename(x: ShardArray, names: Mapping[str, str]) -> ShardArray:
    """``x`` with dims renamed ``{old: new}`` (no data moves; a pending sum stays)."""
    if not isinstance(names, Mapping):
        raise DimensionError(f"rename takes a dict {{old: new}}; got {names!r}")
    for old in names:
        if old not in x.dims:
            raise DimensionError(f"rename: dim {old!r} is not a dim of the array; its dims are {x.dims}")
    dims = check_dims(tuple(names.get(d, d) for d in x.dims), what=f"rename {dict(names)} of array {x.dims}")
    return ShardArray(x.mesh, Layout(dims, x.shape, x.spec.axes), x.dtype, x.shards, x.pending)


@differentiable("transpose")
def transpose(x: ShardArray, dims: tuple[str, ...]) -> ShardArray:
    """``x`` with its dims in the order ``dims`` (reversed when empty)."""
    if dims.__class__ is tuple:  # already in this order (the VJPs' and fused paths' common case): nothing to do
        try:
            if dims == x._layout.dims:
                return x
        except ValueError:  # (a NumPy array among the dims: refused below)
            pass
    if not isinstance(dims, (tuple, list)):
        raise DimensionError(f"transpose: give the dims in their new order, a tuple of names; got {dims!r:.80}")
    if len(dims) == 1 and not isinstance(dims[0], str):
        dims = dims[0] if isinstance(dims[0], (tuple, list)) else _names(dims[0])
    if not all(isinstance(d, str) for d in dims):  # (before ==: a NumPy array among them cannot be compared)
        raise DimensionError(f"transpose: name the dims (strings) in their new order, from {x.dims}; got {dims!r:.80}")
    if tuple(dims) == x.dims:
        return x
    if not dims:
        dims = tuple(reversed(x.dims))
    return permute_dims(x, tuple(dims))


def _names(dims: Any) -> tuple[Any, ...]:
    """An iterable of dim names (``x.transpose(reversed(x.dims))``) as a tuple."""
    try:
        return tuple(dims)
    except TypeError:
        raise DimensionError(f"transpose: name the dims (strings) in their new order; got {dims!r:.80}") from None


@differentiable("astype")
def astype(x: ShardArray, dtype: Any) -> ShardArray:
    """``x`` cast to ``dtype`` on every shard (a pending sum is resolved first).

    A complex array is not cast to a real dtype (which would drop the
    imaginary part): take ``sa.real(x)`` or ``abs(x)`` first. To bool it is
    the standard's cast (and NumPy's): ``0 + 0j`` is False, every other value
    True (the imaginary part counts).
    """
    dt = as_dtype(dtype)
    if dt == x.dtype:
        return x
    if x.dtype.kind == "c" and dt.kind not in "cb":
        raise DTypeError(
            f"astype: casting the complex array with dims {x.sizes} ({x.dtype}) to {dt.name} would drop its "
            f"imaginary part; take the real part or the magnitude first (sa.real(x), "
            f"sa.abs(x))"
        )
    x = resolve(x, x.spec.axes)
    xp = x.mesh.backend.xp  # CuPy blocks cast between float32 and 16-bit floats by one vectorized kernel
    shards = map_blocks(x.mesh, x.spec.used_axes, lambda s: cuda_kernels.cast(xp, s, dt), x.shards, pure=True)
    return ShardArray(x.mesh, x.spec, dt, shards)


@differentiable("broadcast_to")
def broadcast_to(
    x: ShardArray, sizes: Mapping[str, int], layout: Mapping[str, AxesSpec] | Layout | None = None
) -> ShardArray:
    """``x`` repeated along new dims: the result has the dims of ``sizes``, in that order.

    Every dim of ``x`` must be in ``sizes`` with the same size. No data moves
    for dims that keep their axes: each device builds its block from its own
    shard (a view where the backend allows). A pending sum stays pending.

    Args:
        x: the array.
        sizes: ``{dim: size}`` of the result (a superset of ``x``'s dims).
        layout: the result's layout; by default ``x``'s dims keep their axes
            and the new dims are not split.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> b = sa.asarray(np.array([1.0, 2.0]), dims=("hidden",), mesh=mesh, layout={"hidden": "col"})
        >>> y = sa.broadcast_to(b, {"batch": 4, "hidden": 2}, layout={"batch": "row", "hidden": "col"})
        >>> y.layout, y.numpy()[:, 1]
        ({'batch': ('row',), 'hidden': ('col',)}, array([2., 2., 2., 2.]))
    """
    x = require_array(x, "broadcast_to")
    if not isinstance(sizes, Mapping):
        raise DimensionError(f"broadcast_to takes sizes as a dict {{dim: size}}; got {sizes!r}")
    dims = check_dims(tuple(sizes), what="broadcast_to")
    shape = check_sizes(dims, tuple(sizes.values()), what="broadcast_to")
    for d, n in zip(x.dims, x.shape):
        if d not in sizes or sizes[d] != n:
            raise DimensionError(
                f"broadcast_to {dict(sizes)}: the array's dim {d!r} (size {n}) must appear with the same size; "
                f"the array has dims {x.sizes}"
            )
    spec = make_layout(x.mesh, dims, shape, x.layout if layout is None else layout, what=f"broadcast_to {dict(sizes)}")
    return expand(x, spec)


def expand(x: ShardArray, spec: Layout) -> ShardArray:
    """``x`` broadcast to the dims, sizes and axes of ``spec`` (internal; see ``broadcast_to``).

    A new size-1 dim that ``spec`` splits is added unsplit first (local) and moved with the rest: where ``x``
    splits another dim over its axes (the cotangent of ``squeeze``, which moved them there), that is one
    alltoall to the devices holding the entry, the inverse of the squeeze's move, not an allgather.
    """
    ones = tuple(d for d, n, axes in zip(spec.dims, spec.sizes, spec.axes) if n == 1 and axes and d not in x.dims)
    if ones:
        x = _append_ones(x, ones)
    keep = not set(x.pending).intersection(spec.used_axes)
    x = to_axes(x, tuple(spec.of(d) for d in x.dims), keep)
    if x.dims == spec.dims:
        return x
    xp = x.mesh.backend.xp
    perm = tuple(x.dims.index(d) for d in spec.dims if d in x.dims)
    new = tuple(i for i, d in enumerate(spec.dims) if d not in x.dims)
    bounds = block_bounds(x.mesh, spec)
    out: list[Any] = [None] * x.mesh.size
    scope = x.mesh.backend.scope
    for rep, devices in x.mesh.replica_classes(spec.used_axes.union(x.pending)):
        shape = tuple(e - s for s, e in bounds[rep])
        with scope(rep):
            block = xp.broadcast_to(xp.expand_dims(xp.transpose(x.shards[rep], perm), new), shape)
        for d in devices:
            out[d] = block
    return ShardArray(x.mesh, spec, x.dtype, out, x.pending)


def _append_ones(x: ShardArray, dims: tuple[str, ...]) -> ShardArray:
    """``x`` with unsplit size-1 ``dims`` appended (local: a view of each block)."""
    spec = Layout(x.dims + dims, x.shape + (1,) * len(dims), x.spec.axes + ((),) * len(dims))
    xp = x.mesh.backend.xp
    new = tuple(range(x.ndim, x.ndim + len(dims)))
    shards = map_blocks(x.mesh, spec.used_axes.union(x.pending), lambda s: xp.expand_dims(s, new), x.shards)
    return ShardArray(x.mesh, spec, x.dtype, shards, x.pending)


@differentiable("copy")
def copy(x: ShardArray) -> ShardArray:
    """A copy of ``x``: every shard copied (same dims, layout, dtype and pending sum); its gradient passes through.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([1.0, 2.0]), dims=("io",), mesh=mesh, layout={"io": "col"})
        >>> y = copy(x)
        >>> y.numpy(), y.shards[0] is x.shards[0]
        (array([1., 2.]), False)
    """
    shards = x.shards
    if x.mesh.backend.has_data:
        shards = map_blocks(x.mesh, x.spec.used_axes | frozenset(x.pending), lambda s: s.copy(), shards)
    out = ShardArray(x.mesh, x.spec, x.dtype, shards, x.pending)
    out.host_range = x.host_range
    return out


@keeps_kind
def stop_gradient(x: ShardArray) -> ShardArray:
    """The same values, treated as a constant by ``value_and_grad`` (no gradient flows through).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w = sa.asarray(np.array([1.0, 2.0]), dims=("io",), mesh=mesh, layout={"io": "col"})
        >>> sa.grad(lambda w: (w * sa.stop_gradient(w)).sum())(w).numpy()
        array([1., 2.])
    """
    x = require_array(x, "sa.stop_gradient")
    return ShardArray(x.mesh, x.spec, x.dtype, x._shards, x.pending)  # _shards: leaving the tape is the point
