"""Which global box each local device reads, and which distinct blocks this process writes.

The block math is the layout's (``layout.block_bounds``: ceil-chunks, trailing
blocks smaller or empty) and the checkpoint's (``checkpoint.blocks``: each
distinct block written once, by the process of its lowest device); this
module only applies it to files. A read builds one block per replica class
this process holds (every class on an emulated mesh, its own device's under
MPI), so replicas share one read; a write hands each process the distinct
non-empty blocks it owns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..array_api._array import wrap
from ..checkpoint.blocks import Block, distinct_blocks, process_of
from ..core.relayout import resolve_to
from ..default_mesh import get_default_mesh
from ..errors import ArgumentError, BackendError, DimensionError, LayoutError, MeshError, ShardArrayError
from ..layout import Layout, block_bounds, check_dims, make_layout
from ..mesh import Mesh
from ..ops.creation.basic import from_blocks
from . import checks

Bounds = tuple[tuple[int, int], ...]


def default(mesh: Any, what: str) -> Mesh:
    """``mesh``, or the default mesh when None."""
    if mesh is None:
        return get_default_mesh()
    if not isinstance(mesh, Mesh):
        raise MeshError(
            f"{what} needs a sa.Mesh (or None for the default mesh); got {type(mesh).__name__} {mesh!r:.80}. "
            f'Make one with sa.Mesh({{"row": 2, "col": 2}})'
        )
    return mesh


def target(
    mesh: Mesh, shape: tuple[int, ...], dims: Sequence[str] | None, layout: Any, what: str
) -> tuple[Layout, bool]:
    """The layout of an array of ``shape`` read onto ``mesh``, and whether the result is positional (no ``dims``).

    ``layout`` is None (the default split: axis ``k`` over mesh axis ``k``, as
    the array API's creation functions do; named dims that the mesh's rules
    map follow the rules instead), a ``Layout``, or a dict ``{dim: axes}``
    whose keys are dim names or, for positional results, axis numbers.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> lay, positional = target(mesh, (5, 4), None, None, "read")
        >>> lay.as_dict(), positional
        ({'dim0': ('row',), 'dim1': ('col',)}, True)
        >>> target(mesh, (5, 4), ("a", "b"), {"b": "row"}, "read")[0].as_dict()
        {'b': ('row',)}
    """
    positional = dims is None
    names = tuple(f"dim{k}" for k in range(len(shape))) if dims is None else check_dims(dims, what=what)
    if len(names) != len(shape):
        raise DimensionError(
            f"{what}: dims={tuple(names)} name {len(names)} dim(s) but the file's array has shape {shape} "
            f"({len(shape)} dim(s)); give one name per dim, or leave dims out for a positional array"
        )
    spec: Any = layout
    if layout is None:
        ruled = not positional and any(d in mesh.rules for d in names)
        spec = None if ruled else dict(zip(names, mesh.axis_names))
    elif isinstance(layout, Mapping):
        spec = {}
        given: dict[Any, Any] = {}  # dim name -> the key that named it
        for key, axes in layout.items():
            dim = _dim_of(key, names, layout, what)
            if dim in given:
                raise LayoutError(
                    f"{what}: layout {dict(layout)} names dim {dim!r} twice (as {given[dim]!r} and {key!r}), so one "
                    f"of its entries would be dropped; give each dim once (dims {names}, axis numbers "
                    f"0..{len(names) - 1})"
                )
            given[dim] = key
            spec[dim] = axes
    return make_layout(mesh, names, shape, spec, what=f"{what} array {dict(zip(names, shape))}"), positional


def _dim_of(key: Any, names: tuple[str, ...], layout: Mapping[Any, Any], what: str) -> Any:
    """The dim a layout key names: an axis number (an int or NumPy integer, negative from the end) becomes its
    dim name; any other key is returned as it is (``make_layout`` refuses one that names no dim)."""
    if not isinstance(key, (int, np.integer)) or isinstance(key, (bool, np.bool_)):
        return key
    if not -len(names) <= key < len(names):
        raise LayoutError(
            f"{what}: layout {dict(layout)} names axis {key}, but the array has {len(names)} dim(s) "
            f"{names}; use axis numbers 0..{len(names) - 1} or dim names"
        )
    return names[int(key)]


def build(
    mesh: Mesh,
    layout: Layout,
    dtype: np.dtype,
    positional: bool,
    read: Callable[[Bounds], np.ndarray],
    what: str,
    where: Any = None,
) -> ShardArray:
    """The array whose block on each device is ``read(bounds)`` (NumPy, moved onto the mesh's backend).

    ``read`` is called once per distinct block this process holds (replicas
    share it); a meta mesh reads nothing (shapes only). Every block is read
    before any is placed, and under MPI the processes then agree on the
    outcome (``checks.together``): a block that cannot be read (a damaged
    chunk) raises on every process, never on one alone while the others go
    on into a collective. A failure of the file's library (not one of
    ``sa``'s errors) becomes an ``ArgumentError`` naming ``where`` and the block.
    Each block then moves onto its device inside the device's scope (CuPy shards land on their GPU).
    """
    backend = mesh.backend
    mesh.comm.check_spmd(what, dict(zip(layout.dims, layout.sizes)), dtype, layout=layout)
    boxes = local_boxes(mesh, layout) if backend.has_data else []

    def read_all() -> dict[Bounds, np.ndarray]:
        host: dict[Bounds, np.ndarray] = {}
        for bounds in boxes:
            if bounds in host:  # (a per-device backend lists every replica)
                continue
            try:
                host[bounds] = read(bounds)
            except (ShardArrayError, MemoryError):
                raise
            except Exception as e:  # whatever the file's library raises on damaged data (a chunk of shape 0 in a
                # Zarr array's metadata: ZeroDivisionError), never a bare error of that library
                raise ArgumentError(
                    f"{what}: reading the block {[list(b) for b in bounds]} of {where} failed "
                    f"({type(e).__name__}: {e}); the file is damaged or unreadable"
                ) from e
        return host

    host = checks.together(checks.job(mesh), read_all, what)
    if backend.has_data:

        def make(bounds: Bounds) -> Any:
            return backend.from_numpy(host[bounds])

    else:

        def make(bounds: Bounds) -> Any:
            return backend.xp.full(tuple(e - s for s, e in bounds), 0, dtype=dtype)

    out = from_blocks(mesh, layout, dtype, make)
    return wrap(out) if positional else out


def local_boxes(mesh: Mesh, layout: Layout) -> list[Bounds]:
    """The global boxes this process reads: one per replica class it holds (what ``build`` calls ``read`` with).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> lay = make_layout(mesh, ("a", "b"), (3, 4), {"a": "row"})
        >>> local_boxes(mesh, lay)     # the col replicas read once
        [((0, 2), (0, 4)), ((2, 3), (0, 4))]
    """
    bounds = block_bounds(mesh, layout)
    return [bounds[rep] for rep, _ in mesh.replica_classes(layout.used_axes)]


def slices(bounds: Bounds) -> tuple[slice, ...]:
    return tuple(slice(s, e) for s, e in bounds)


def shape_of(bounds: Bounds) -> tuple[int, ...]:
    return tuple(e - s for s, e in bounds)


def writable(x: Any, what: str) -> ShardArray:
    """``x`` ready to write: a ShardArray with data, its pending sum resolved (an allreduce, as ``x.resolve()``),
    of ``x``'s kind (a positional array stays positional)."""
    if not isinstance(x, ShardArray):
        raise BackendError(
            f"{what} writes a ShardArray (or a shardarray.array_api Array); got {type(x).__name__} {x!r:.60}. "
            f"Make one with sa.asarray(data, dims=..., mesh=...) or xp.asarray(data)"
        )
    if not x.mesh.backend.has_data:
        raise BackendError(
            f"{what}: the array {x.sizes} lives on the {x.mesh.backend.name!r} backend, which holds no values to "
            f"write; write arrays of a numpy or cupy mesh"
        )
    return like_kind(resolve_to(x), x) if x.pending else x  # a positional array stays positional


def my_blocks(x: ShardArray, rank: int) -> list[tuple[Block, np.ndarray]]:
    """The distinct non-empty blocks of ``x`` process ``rank`` writes, each with its host (NumPy) copy.

    Example:
        >>> x = sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"a": 3, "b": 4}, layout={"a": "row"})
        >>> [(b.offset, h.shape) for b, h in my_blocks(x, 0)]    # replicas written once
        [((0, 0), (2, 4)), ((2, 0), (1, 4))]
    """
    backend = x.mesh.backend
    return [(b, backend.to_numpy(x.shards[b.writer])) for b in distinct_blocks(x) if process_of(x, b.writer) == rank]


def tiling_chunks(x: ShardArray) -> tuple[int, ...]:
    """Per dim, the largest chunk size that tiles every block of ``x``: the block size of a dim split over one
    axis (ceil-chunks), the gcd of the block starts for nested splits, the whole dim when unsplit (>= 1).

    Example:
        >>> x = sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"a": 9, "b": 4}, layout={"a": "row", "b": "col"})
        >>> tiling_chunks(x)
        (5, 2)
    """
    out = []
    bounds = block_bounds(x.mesh, x.spec)
    for k, n in enumerate(x.shape):
        c = 0
        for dev in bounds:
            s, e = dev[k]
            if 0 < s < n and e > s:
                c = math.gcd(c, s)
        out.append(max(c or n, 1))
    return tuple(out)


def untiled(x: ShardArray, chunks: Sequence[int]) -> tuple[int, int, int] | None:
    """``(dim index, block start, chunk)`` of the first block start that is not on a chunk boundary, or None."""
    for dev in block_bounds(x.mesh, x.spec):
        for k, ((s, e), c) in enumerate(zip(dev, chunks)):
            if e > s and s % c:
                return k, s, c
    return None
