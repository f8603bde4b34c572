"""Layouts: which tensor dims are split over which mesh axes (data only).

A layout maps every dim of a tensor to a tuple of mesh axes, major first
(``()`` means the dim is not split). It is validated when made: unknown dims
or axes, and a mesh axis used by two dims of one tensor (Mesh-TF §8.5) raise
``LayoutError``.

Uneven sizes use nested ceil-chunking: a dim of size n split over one axis of
size k gets blocks of ceil(n/k), trailing blocks smaller or empty; a dim split
over axes (a, b) is chunked over a first and each a-block again over b. For
sizes that divide evenly this is the usual flat split; for uneven ones it
keeps every Mesh-TF transition exact (splitting further is a local slice,
dropping the minor axis is an allgather).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .backend.classlist import intern_index
from .chunks import nested_chunk
from .errors import DimensionError, LayoutError
from .mesh import AxesSpec

if TYPE_CHECKING:
    from .mesh import Mesh


@dataclass(frozen=True)
class Layout:
    """The layout of one tensor: ``axes[i]`` are the mesh axes splitting ``dims[i]``."""

    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    axes: tuple[tuple[str, ...], ...]

    def __hash__(self) -> int:
        """The hash of ``(dims, sizes, axes)``, computed once (layouts key the ops' dispatch plans)."""
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.dims, self.sizes, self.axes))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict[str, Any]:
        """The fields only: string hashes differ between processes, so the cached hash is not pickled."""
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def as_dict(self) -> dict[str, tuple[str, ...]]:
        """``{dim: axes}`` for split dims only."""
        return {d: a for d, a in zip(self.dims, self.axes) if a}

    def of(self, dim: str) -> tuple[str, ...]:
        return self.axes[self.dims.index(dim)]

    @property
    def used_axes(self) -> frozenset[str]:
        return frozenset(a for axes in self.axes for a in axes)

    def with_axes(self, axes: Sequence[tuple[str, ...]]) -> Layout:
        return Layout(self.dims, self.sizes, tuple(axes))


def check_dims(dims: Any, what: str = "array") -> tuple[str, ...]:
    """Validate a sequence of dim names (strings, no duplicates)."""
    if isinstance(dims, str):
        dims = (dims,)
    try:  # (np.str_ names as Python str: reprs, layout keys and equality with the names users type)
        dims = tuple(str(d) if isinstance(d, np.str_) else d for d in dims)
    except TypeError:
        raise DimensionError(f"dims of {what} must be a sequence of names; got {dims!r}") from None
    for d in dims:
        if not isinstance(d, str) or not d:
            raise DimensionError(f"dim names must be non-empty strings; got {d!r} in dims {dims} of {what}")
        if any(c.isspace() or c == "," for c in d) or "->" in d:
            raise DimensionError(
                f"dim name {d!r} in dims {dims} of {what} holds a space, ',' or '->', which einsum equations use "
                f"as separators; use a name like {'_'.join(d.replace('->', ' ').replace(',', ' ').split())!r}"
            )
    if len(set(dims)) != len(dims):
        dup = sorted({d for d in dims if dims.count(d) > 1})
        raise DimensionError(
            f"dims {dims} of {what} repeat {dup}; a tensor may not have two dims of one name (Mesh-TF §4). "
            f"Rename one of them"
        )
    return dims


#: the largest size of a dim (NumPy's index type: int64)
_MAX_SIZE = 2**63 - 1


def check_sizes(dims: tuple[str, ...], sizes: Sequence[Any], what: str = "array") -> tuple[int, ...]:
    out = []
    for d, n in zip(dims, sizes):
        if isinstance(n, bool) or (not isinstance(n, (int,)) and not hasattr(n, "__index__")):
            raise DimensionError(f"size of dim {d!r} of {what} must be an integer; got {n!r}")
        n = int(n)
        if n < 0:
            raise DimensionError(f"size of dim {d!r} of {what} is {n}; sizes must be >= 0")
        if n > _MAX_SIZE:
            raise DimensionError(f"size of dim {d!r} of {what} is {n}; sizes must fit an int64 (at most 2**63 - 1)")
        out.append(n)
    if len(out) > 1 and math.prod(out) > _MAX_SIZE:  # (NumPy's limit too, on every backend, the meta one included)
        raise DimensionError(
            f"{what} of sizes {dict(zip(dims, out))} has {math.prod(out)} elements; an array has at most 2**63 - 1"
        )
    return tuple(out)


def _fmt_spec(spec: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in spec.items()) + "}"


def make_layout(
    mesh: Mesh,
    dims: tuple[str, ...],
    sizes: tuple[int, ...],
    spec: Mapping[str, AxesSpec] | Layout | None = None,
    what: str = "array",
) -> Layout:
    """Build and validate the layout of a tensor.

    Args:
        mesh: the mesh the tensor lives on.
        dims: the tensor's dim names.
        sizes: the tensor's global sizes.
        spec: ``{dim: axis | (axes) | None}``; dims left out are not split.
            ``None`` takes the mesh's rules restricted to ``dims``.
        what: how to name the tensor in error messages.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> make_layout(mesh, ("batch", "io"), (8, 4), {"batch": "row"}).as_dict()
        {'batch': ('row',)}
    """
    if isinstance(spec, Layout):
        if spec.dims != dims:
            raise LayoutError(
                f"a Layout for dims {spec.dims} was given to {what} with dims {dims}; give a Layout of these dims "
                f"or a dict {{dim: axis}}"
            )
        spec = dict(zip(spec.dims, spec.axes))
    from_rules = spec is None
    if from_rules:
        spec = {d: mesh.rules[d] for d in dims if d in mesh.rules}
    if not isinstance(spec, Mapping):
        raise LayoutError(f"a layout is a dict {{dim: axis or (axes) or None}}; got {spec!r} for {what}")
    per_dim: dict[str, tuple[str, ...]] = {}
    for dim, value in spec.items():
        if dim not in dims:
            raise LayoutError(
                f"layout {_fmt_spec(spec)} names dim {dim!r}, which {what} with dims {dims} does not have; "
                f"name only the array's dims {dims}"
            )
        try:
            per_dim[dim] = mesh.parse_axes(value, "")
        except LayoutError:  # the message with its context, built only when it is raised
            per_dim[dim] = mesh.parse_axes(value, f"layout {_fmt_spec(spec)} of {what}, for dim {dim!r},")
    owner: dict[str, str] = {}
    for dim in dims:
        for a in per_dim.get(dim, ()):
            if a in owner:
                source = f"mesh rules {_fmt_spec(mesh.rules)}" if from_rules else f"layout {_fmt_spec(spec)}"
                raise LayoutError(
                    f"{source} splits both dim {owner[a]!r} and dim {dim!r} of {what} "
                    f"(dims {dims}, sizes {dict(zip(dims, sizes))}) over mesh axis {a!r} of mesh {mesh}; "
                    f"a mesh axis may split at most one dim of a tensor (Mesh-TF §8.5). "
                    f"Map one of the two dims to another axis or to None"
                )
            owner[a] = dim
    return Layout(dims, sizes, tuple(per_dim.get(d, ()) for d in dims))


def dim_bounds(mesh: Mesh, n: int, axes: Iterable[str], coords: tuple[int, ...]) -> tuple[int, int]:
    """Global ``[start, stop)`` of a dim of size ``n`` split over ``axes`` at device ``coords``."""
    axes = tuple(axes)
    names = mesh.axis_names
    return nested_chunk(0, n, (mesh.axis_size(a) for a in axes), (coords[names.index(a)] for a in axes))


_BOUNDS: dict[tuple, tuple] = {}


def block_bounds(mesh: Mesh, layout: Layout) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per device, the global ``(start, stop)`` of its block in every dim (cached)."""
    key = (mesh._key(), layout.sizes, layout.axes)
    out = _BOUNDS.get(key)
    if out is None:
        per_dim = [tuple(zip(lo.tolist(), hi.tolist())) for lo, hi in _bound_arrays(mesh, layout)]
        out = tuple(zip(*per_dim)) if per_dim else ((),) * mesh.size
        if len(_BOUNDS) > 4096:
            _BOUNDS.clear()
        _BOUNDS[key] = out
    return out


def block_slices(mesh: Mesh, layout: Layout) -> tuple[tuple[slice, ...], ...]:
    """Per device, the slices of the global array that make its block."""
    return tuple(tuple(slice(a, b) for a, b in dev) for dev in block_bounds(mesh, layout))


_SHAPE_CLASSES: dict[tuple, tuple] = {}


def block_shape_classes(mesh: Mesh, layout: Layout) -> tuple[np.ndarray, list[int]]:
    """``(index, reps)``: per device the class of its block shape, and each class's first device (cached).

    Computed with NumPy over the device coordinates (the same nested ceil
    chunks as ``block_bounds``), never a Python loop over devices: the meta
    backend builds one block per shape class.
    """
    key = (mesh._key(), layout.sizes, layout.axes)
    hit = _SHAPE_CLASSES.get(key)
    if hit is not None:
        return hit

    if not layout.sizes:
        hit = (intern_index(np.zeros(mesh.size, dtype=np.intp)), [0])
        _SHAPE_CLASSES[key] = hit
        return hit
    shapes = [hi - lo for lo, hi in _bound_arrays(mesh, layout)]
    _, first, inverse = np.unique(np.stack(shapes, axis=1), axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    index = intern_index(rank[inverse.reshape(-1)])
    hit = (index, first[order].tolist())
    if len(_SHAPE_CLASSES) > 4096:
        _SHAPE_CLASSES.clear()
    _SHAPE_CLASSES[key] = hit
    return hit


def _bound_arrays(mesh: Mesh, layout: Layout) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per dim, every device's ``(start, stop)`` as two int arrays: ``dim_bounds`` vectorised over devices."""
    coords = np.indices(tuple(mesh.axis_size(a) for a in mesh.axis_names)).reshape(mesh.ndim, -1)
    names = mesh.axis_names
    out = []
    for n, axes in zip(layout.sizes, layout.axes):
        lo = np.zeros(mesh.size, dtype=np.int64)
        hi = np.full(mesh.size, n, dtype=np.int64)
        for a in axes:
            c = -(-(hi - lo) // mesh.axis_size(a))
            lo = np.minimum(hi, lo + coords[names.index(a)] * c)
            hi = np.minimum(hi, lo + c)
        out.append((lo, hi))
    return out
