"""Creation ops: asarray, zeros, ones, full (each device builds only its own block)."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.classlist import ClassList
from ...comm import spmd
from ...core.common import map_blocks
from ...core.relayout import relayout
from ...dtypes import as_dtype, is_bfloat16, scalar_for_write
from ...errors import CastError, DimensionError, DTypeError, MeshError
from ...layout import (
    Layout,
    block_bounds,
    block_shape_classes,
    block_slices,
    check_dims,
    check_sizes,
    dim_bounds,
    make_layout,
)
from ...memo_hook import memoisable
from ...mesh import AxesSpec, Mesh
from ..manipulation.reshard import reshard
from ..manipulation.structure import astype, rename


def _check_mesh(mesh: Any, what: str) -> Mesh:
    if not isinstance(mesh, Mesh):
        hint = f"sa.Mesh({mesh!r})" if isinstance(mesh, Mapping) else 'sa.Mesh({"row": 2, "col": 2})'
        raise MeshError(f"{what} needs a sa.Mesh as mesh; got {type(mesh).__name__} {mesh!r:.80}. Make one with {hint}")
    return mesh


def _sizes_arg(sizes: Any, what: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if not isinstance(sizes, Mapping):
        raise DimensionError(f"{what} takes sizes as a dict {{dim: size}}; got {sizes!r}")
    dims = check_dims(tuple(sizes), what=what)
    return dims, check_sizes(dims, tuple(sizes.values()), what=what)


def from_blocks(
    mesh: Mesh, layout: Layout, dtype: np.dtype, make: Callable[[tuple[tuple[int, int], ...]], Any]
) -> ShardArray:
    """An array whose block on each device is ``make(bounds)`` (once per distinct block)."""
    if not mesh.backend.has_data and mesh.comm_kind != "mpi":  # meta: once per block-shape class
        index, reps = block_shape_classes(mesh, layout)
        blocks = [
            make(tuple(dim_bounds(mesh, n, axes, mesh.device_coords[r]) for n, axes in zip(layout.sizes, layout.axes)))
            for r in reps
        ]
        return ShardArray(mesh, layout, dtype, ClassList(blocks, index))
    bounds = block_bounds(mesh, layout)
    out: list[Any] = [None] * mesh.size
    scope = mesh.backend.device_scope
    for rep, devices in mesh.replica_classes(layout.used_axes):
        if scope is None:
            block = make(bounds[rep])
        else:
            with scope(rep):
                block = make(bounds[rep])
        for d in devices:
            out[d] = block
    return ShardArray(mesh, layout, dtype, out)


@memoisable("full")  # the layout search replays it (shardarray.plan.memo); a no-op elsewhere
def full(
    mesh: Mesh,
    sizes: Mapping[str, int],
    fill_value: Any,
    dtype: Any = None,
    layout: Mapping[str, AxesSpec] | None = None,
) -> ShardArray:
    """An array of ``sizes`` filled with ``fill_value``.

    Args:
        mesh: the mesh.
        sizes: ``{dim: size}`` in dim order.
        fill_value: a scalar.
        dtype: default float32 for floats, else NumPy's dtype of ``fill_value``.
        layout: ``{dim: axes}``; None follows the mesh rules.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.full(mesh, {"batch": 3, "io": 2}, 7.0, layout={"batch": "row"}).numpy()
        array([[7., 7.],
               [7., 7.],
               [7., 7.]], dtype=float32)
    """
    mesh = _check_mesh(mesh, "full")
    try:  # (an argument one process finds bad is an error on every process: ``comm.spmd.raise_agreed``)
        dims, shape = _sizes_arg(sizes, "full")
        if np.ndim(fill_value) != 0:
            raise DTypeError(
                f"full: fill_value must be a scalar; got {type(fill_value).__name__} of shape "
                f"{np.shape(fill_value)}. For an array of values use sa.asarray(values, dims=..., mesh=...)"
            )
        if dtype is None:
            dtype = "float32" if isinstance(fill_value, float) else np.asarray(fill_value).dtype
        dt = as_dtype(dtype)
        lay = make_layout(mesh, dims, shape, layout, what=f"array {dict(zip(dims, shape))}")
        fill = scalar_for_write(fill_value, dt, "full")  # NumPy 2's rule: 300 into int8, NaN into int32 are refused
    except Exception as e:
        mesh.comm.check_spmd("full", {}, None, failure=e)
        raise
    # SPMD: every process, the same array (its fill value too: a per-process value would differ between replicas)
    mesh.comm.check_spmd("full", dict(zip(dims, shape)), dt, layout=lay, values={"fill_value": fill})
    xp = mesh.backend.xp
    return from_blocks(mesh, lay, dt, lambda b: xp.full(tuple(e - s for s, e in b), fill, dtype=dt))


def zeros(mesh: Mesh, sizes: Mapping[str, int], dtype: Any = "float32", layout: Any = None) -> ShardArray:
    """An array of zeros (see ``full``); ``dtype=None`` is the default, float32.

    Example:
        >>> sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"batch": 8, "io": 4}, layout={"batch": "row"}).layout
        {'batch': ('row',)}
    """
    return full(mesh, sizes, 0, "float32" if dtype is None else dtype, layout)


def ones(mesh: Mesh, sizes: Mapping[str, int], dtype: Any = "float32", layout: Any = None) -> ShardArray:
    """An array of ones (see ``full``); ``dtype=None`` is the default, float32."""
    return full(mesh, sizes, 1, "float32" if dtype is None else dtype, layout)


def zeros_like(x: ShardArray) -> ShardArray:
    """Zeros with ``x``'s sizes, dtype and layout (no pending sum, no communication).

    Example:
        >>> x = sa.ones(sa.Mesh({"row": 2, "col": 2}), {"a": 3}, layout={"a": "col"})
        >>> z = sa.ops.creation.basic.zeros_like(x)
        >>> z.layout, z.numpy()
        ({'a': ('col',)}, array([0., 0., 0.], dtype=float32))
    """
    return full(x.mesh, x.sizes, 0, x.dtype, x.layout)


def _from_shardarray(x: ShardArray, dims: Any, mesh: Any, layout: Any, dtype: Any) -> ShardArray:
    """``asarray`` of a ShardArray: rename to ``dims``, then relayout (or ``sa.reshard`` to another mesh), cast."""
    other = None
    if mesh is not None:
        _check_mesh(mesh, "asarray")
        if mesh is not x.mesh and mesh != x.mesh:
            other = mesh
    if dims is not None:
        names = check_dims((dims,) if isinstance(dims, str) else dims, what=f"asarray of {x.sizes}")
        if len(names) != x.ndim:
            raise DimensionError(
                f"asarray: dims {names} name {len(names)} dim(s) but the ShardArray {x.sizes} has {x.ndim}; "
                f"give one name per dim, in order"
            )
        if names != x.dims:
            x = rename(x, dict(zip(x.dims, names)))
    if other is not None:  # another mesh: a resharding copy (layout None: the target mesh's rules)
        out = reshard(x, other, layout)
    else:
        out = x if layout is None else relayout(x, layout)
    return out if dtype is None else astype(out, dtype)


def _numbers(data: Any, dtype: np.dtype | None, what: str) -> np.ndarray:
    """``np.asarray(data)``, refused (``DTypeError``) unless it holds numbers in lists of equal lengths."""
    try:
        raw = np.asarray(data)
    except (TypeError, ValueError) as e:  # nested lists of unequal lengths
        raise DTypeError(
            f"{what}: the data is not an array of numbers ({e}); give numbers (bool, int, float, complex) in "
            f"nested lists of equal lengths"
        ) from None
    numeric = raw.dtype.kind in "biufc" or is_bfloat16(raw.dtype)
    # Python integers beyond int64/uint64 make an object array: numbers all the same when a dtype is given
    if not numeric and not (
        dtype is not None and raw.dtype.kind == "O" and all(isinstance(v, numbers.Number) for v in raw.flat)
    ):
        raise DTypeError(
            f"{what}: the data became a NumPy array of dtype {raw.dtype.name} (shape {raw.shape}); give numbers "
            f"(bool, int, float, complex) in lists of equal lengths, or convert the data first, e.g. "
            f"np.asarray(data, dtype='float32')"
        )
    return raw


def _check_cast(raw: np.ndarray, dtype: np.dtype, what: str) -> None:
    """Refuse the casts of host data that would change values silently (NumPy 2 refuses them for Python data)."""
    if raw.dtype.kind == "c" and dtype.kind != "c":
        raise DTypeError(
            f"{what}: the data is complex ({raw.dtype}, shape {raw.shape}) but dtype {dtype.name} is real, which "
            f"would drop the imaginary part; give a complex dtype, or the real part or magnitude of the data"
        )
    if dtype.kind in "iub" and raw.dtype.kind == "f" and raw.size and not np.isfinite(raw).all():
        bad = raw[~np.isfinite(raw)].flat[0]
        raise CastError(
            f"{what}: the data holds {bad} (shape {raw.shape}), which {dtype} cannot hold (no NaN or inf); make "
            f"the array with a float dtype, or replace the non-finite values first"
        )


def host_array(data: Any, dtype: np.dtype | None, what: str, copy: bool = False) -> np.ndarray:
    """Host data (nested lists, scalars, NumPy arrays, buffers) as a NumPy array of ``dtype`` (None: the data's).

    NumPy's conversion, with its refusals as typed errors and without its silent casts of values that the
    dtype cannot hold (NumPy 2 refuses those for Python data, and casts NumPy arrays with a warning).

    Args:
        data: the data.
        dtype: the dtype (None: NumPy's for the data).
        what: the caller, for messages.
        copy: always copy (else only when needed).

    Raises:
        DTypeError: data that are not numbers (strings, None, objects) or lists of unequal lengths; complex
            data for a real ``dtype`` (as ``astype``).
        CastError: NaN or ±inf for an integer or bool ``dtype``; a Python integer out of ``dtype``'s range.

    Example:
        >>> host_array([[1, 2], [3, 4]], np.dtype("int8"), "asarray").dtype
        dtype('int8')
        >>> host_array([1.0, float("nan")], np.dtype("int32"), "asarray")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        shardarray.errors.CastError: asarray: the data holds nan (shape (2,)), which int32 cannot hold ...
    """
    raw = _numbers(data, dtype, what)
    if dtype is None:
        return np.array(raw, copy=True) if copy else raw
    _check_cast(raw, dtype, what)
    hint = f"give a wider dtype, or values that {dtype} can hold"
    try:
        return np.array(data, dtype=dtype, copy=True) if copy else np.asarray(data, dtype=dtype)
    except OverflowError as e:  # a Python integer out of dtype's range (NumPy 2 refuses it)
        raise CastError(f"{what}: {e}; the data does not fit {dtype}: {hint}") from None
    except TypeError as e:  # an object array of numbers with a complex one, for a real dtype
        raise DTypeError(f"{what}: the data cannot be cast to {dtype} ({e}); {hint}") from None
    except ValueError as e:  # ... with a NaN or inf, for an integer dtype
        raise CastError(f"{what}: the data cannot be cast to {dtype} ({e}); {hint}") from None


def _host_layout(mesh: Mesh, array: Any, dims: Any, layout: Any, dtype: Any) -> tuple[np.ndarray, tuple, Layout]:
    """``asarray``'s checks of host data: the host array, its dims and its layout on ``mesh``."""
    host = host_array(array, None if dtype is None else as_dtype(dtype), "asarray")
    as_dtype(host.dtype)
    if dims is None:
        if host.ndim:
            raise DimensionError(
                f"asarray needs dims=(...) naming the {host.ndim} dims of an array of shape {host.shape}"
            )
        dims = ()
    dims = check_dims(dims, what=f"asarray of shape {host.shape}")
    if len(dims) != host.ndim:
        raise DimensionError(
            f"asarray: dims {dims} name {len(dims)} dim(s) but the array has shape {host.shape} ({host.ndim} dims)"
        )
    return host, dims, make_layout(mesh, dims, host.shape, layout, what=f"array {dict(zip(dims, host.shape))}")


def asarray(
    array: Any,
    dims: Any = None,
    mesh: Mesh | None = None,
    layout: Mapping[str, AxesSpec] | None = None,
    dtype: Any = None,
) -> ShardArray:
    """A ShardArray from a global NumPy-like array: each device keeps its block.

    Args:
        array: array-like, or a ShardArray (relaid out to ``layout``, cast to
            ``dtype``, its dims renamed to ``dims``).
        dims: one name per array dimension.
        mesh: the mesh. For a ShardArray it may be left out (it stays on its
            mesh); another mesh moves it there with ``sa.reshard`` (a copy by
            the block-overlap plan; ``layout=None`` then follows that mesh's rules).
        layout: ``{dim: axis | (axes) | None}``; dims left out are not split;
            None follows the mesh rules.
        dtype: optional cast.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(12.0).reshape(3, 4), dims=("batch", "io"), mesh=mesh,
        ...                layout={"batch": "row", "io": "col"})
        >>> x.shards[3]     # device (row=1, col=1): rows 2:3, cols 2:4
        array([[10., 11.]])
    """
    if isinstance(array, ShardArray):
        return _from_shardarray(array, dims, mesh, layout, dtype)
    mesh = _check_mesh(mesh, "asarray")
    try:  # (an argument one process finds bad is an error on every process: ``comm.spmd.raise_agreed``)
        host, dims, lay = _host_layout(mesh, array, dims, layout, dtype)
    except Exception as e:
        mesh.comm.check_spmd("asarray", {}, None, failure=e)
        raise
    # (the host data: with SHARDARRAY_CHECK_SPMD=1 its digest, as every process must pass the same; a cost per byte)
    data = {"data": spmd.show(host)} if spmd.check_enabled() else None
    mesh.comm.check_spmd("asarray", dict(zip(dims, host.shape)), host.dtype, layout=lay, values=data)
    slices = block_slices(mesh, lay)
    backend = mesh.backend
    # host[(*idx, ...)] is an array even for 0-d data (host[()] would be a NumPy scalar). Shards in host memory
    # (NumPy) are copies: a view would change with the caller's array, and so would a cached id range
    own = backend.xp is np
    shards = map_blocks(
        mesh,
        lay.used_axes,
        # tuple(idx) + (Ellipsis,) is (*idx, ...): mypy reads a starred tuple in [] as 3.11-only syntax
        lambda idx: backend.from_numpy(
            np.array(host[tuple(idx) + (Ellipsis,)], order="C") if own else host[tuple(idx) + (Ellipsis,)]
        ),
        slices,
    )
    out = ShardArray(mesh, lay, host.dtype, shards)
    if host.dtype.kind in "iu" and host.size and backend.has_data:  # ids from the host: their range is free here
        out.host_range = (int(host.min()), int(host.max()))
    return out
