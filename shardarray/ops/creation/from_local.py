"""``from_local``: an array from the blocks each process (or each emulated device) supplies, with no global copy.

The anchors are JAX's ``make_array_from_process_local_data`` /
``make_array_from_callback`` and DTensor's ``from_local``: nobody builds the
global array; every device's block comes from where it lives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...array import ShardArray, as_kind
from ...backend.meta import MetaArray
from ...comm.job import check_enabled
from ...comm.mpi import _mpi
from ...dtypes import as_dtype
from ...errors import ArgumentError, CommError, DimensionError, DTypeError, MeshError
from ...layout import Layout, block_bounds, check_dims, check_sizes, make_layout
from ...mesh import AxesSpec, Mesh

if TYPE_CHECKING:
    from typing_extensions import Buffer

BlockSource = Callable[[int], Any] | Mapping[int, Any] | Any


def _sizes(dims: tuple[str, ...], sizes: Any) -> tuple[int, ...]:
    if isinstance(sizes, Mapping):
        if tuple(sizes) != dims:
            raise DimensionError(
                f"from_local: sizes {dict(sizes)} name dims {tuple(sizes)} but dims={dims}; give one size per dim, "
                f"in the order of dims (a tuple, or a dict with exactly these keys)"
            )
        sizes = tuple(sizes.values())
    try:
        sizes = tuple(sizes)
    except TypeError:
        raise DimensionError(f"from_local: sizes must be one integer per dim of {dims}; got {sizes!r}") from None
    if len(sizes) != len(dims):
        raise DimensionError(
            f"from_local: dims {dims} name {len(dims)} dim(s) but sizes {sizes} give {len(sizes)}; give one global "
            f"size per dim"
        )
    return check_sizes(dims, sizes, what="from_local")


def _block_of(block: BlockSource, mesh: Mesh, device: int) -> Any:
    """The block supplied for ``device``: a callable's result, a mapping's entry, or the array itself."""
    if callable(block) and not hasattr(block, "shape"):
        return block(device)
    if isinstance(block, Mapping):
        if device not in block:
            raise ArgumentError(
                f"from_local: the mapping of blocks has no entry for device {device} {mesh.coords(device)} of mesh "
                f"{mesh} (keys: {sorted(block)!r:.80}); give every device's block, keyed by flat device index "
                f"0..{mesh.size - 1}, or pass a callable device -> block"
            )
        return block[device]
    if len(mesh.local_devices) > 1:
        raise ArgumentError(
            f"from_local: one array was given but this process holds {len(mesh.local_devices)} devices of mesh "
            f"{mesh}; on an emulated mesh pass a callable device -> block (or a dict {{device: block}})"
        )
    return block


def _digest(host: np.ndarray) -> bytes:
    flat = cast("Buffer", np.ascontiguousarray(host).view(np.uint8).reshape(-1))  # NumPy types __buffer__ on 3.12+
    return hashlib.blake2b(flat, digest_size=16).digest()


def _check_replicas(mesh: Mesh, layout: Layout, hosts: dict[int, np.ndarray]) -> None:
    """``SHARDARRAY_CHECK_SPMD=1``: the devices of a replica class supplied equal blocks (digests compared)."""
    digests = {d: _digest(h) for d, h in hosts.items()}
    if mesh.comm_kind == "mpi":
        every = _mpi().COMM_WORLD.allgather(digests[mesh.local_device])
        digests = dict(enumerate(every))
    bounds = block_bounds(mesh, layout)
    seen: dict[tuple, int] = {}
    for d in sorted(digests):
        first = seen.setdefault(bounds[d], d)
        if digests[first] != digests[d]:
            raise CommError(
                f"from_local: devices {first} {mesh.coords(first)} and {d} {mesh.coords(d)} of mesh {mesh} hold "
                f"replicas of the same block {bounds[d]} (layout {layout.as_dict()}) but supplied different values; "
                f"every replica along the unsplit mesh axes must supply the same block"
            )


def _blocks(
    mesh: Mesh,
    block: BlockSource,
    dims: Sequence[str],
    sizes: Sequence[int] | Mapping[str, int],
    layout: Mapping[str, AxesSpec] | Layout | None,
    dtype: Any,
) -> tuple[tuple[str, ...], tuple[int, ...], Layout, dict[int, Any], np.dtype, bool, set[type[ShardArray]]]:
    """This process's side of ``from_local``, before the processes compare notes: the dims, the global shape,
    the layout, the blocks by device (each checked against its block in the layout), their dtype, whether a
    block serves a whole replica class, and the array types of blocks given as ShardArrays. Raises the errors
    ``from_local`` documents; communicates nothing."""
    dims = check_dims(dims, what="from_local")
    shape = _sizes(dims, sizes)
    lay = make_layout(mesh, dims, shape, layout, what=f"from_local array {dict(zip(dims, shape))}")
    bounds = block_bounds(mesh, lay)
    backend = mesh.backend
    want = None if dtype is None else as_dtype(dtype)
    xp_type = type(backend.xp.empty(0)) if backend.has_data else None
    shared = not backend.per_device and mesh.comm_kind != "mpi"
    by_class = shared and callable(block) and not hasattr(block, "shape")
    devices = [rep for rep, _ in mesh.replica_classes(lay.used_axes)] if by_class else list(mesh.local_devices)
    raw: dict[int, Any] = {}
    kinds: set[type[ShardArray]] = set()  # the array types of blocks given as ShardArrays (xp Arrays: positional)
    for d in devices:
        b = _block_of(block, mesh, d)
        if isinstance(b, ShardArray):
            kinds.add(type(b))
        if xp_type is None and hasattr(b, "shape") and hasattr(b, "dtype") and not isinstance(b, np.ndarray):
            b = MetaArray(b.shape, want if want is not None else b.dtype)  # meta: shapes only
        elif xp_type is None or not isinstance(b, xp_type):
            b = np.asarray(b, dtype=want)
        elif want is not None:
            b = b.astype(want, copy=False)
        expect = tuple(hi - lo for lo, hi in bounds[d])
        if tuple(b.shape) != expect:
            bad = next((i for i, (g, e) in enumerate(zip(b.shape, expect)) if g != e), None)
            which = f"dim {dims[bad]!r}" if bad is not None else f"the number of dims ({b.ndim} vs {len(expect)})"
            who = f" (process {mesh.process_index})" if mesh.comm_kind == "mpi" else ""
            raise DimensionError(
                f"from_local: device {d} {mesh.coords(d)}{who} of mesh {mesh} supplied a block of shape "
                f"{tuple(b.shape)}, but its block of the array {dict(zip(dims, shape))} with layout "
                f"{lay.as_dict()} has shape {expect} ({which} differs: global rows "
                f"{dict(zip(dims, bounds[d]))}); give each device exactly its block"
            )
        raw[d] = b
    dtypes = {np.dtype(b.dtype) for b in raw.values()}
    if len(dtypes) > 1:
        raise DTypeError(
            f"from_local: the blocks have different dtypes {sorted(map(str, dtypes))} on mesh {mesh}; give them one "
            f"dtype or pass dtype=..."
        )
    dt = as_dtype(want if want is not None else dtypes.pop() if dtypes else np.float64)
    return dims, shape, lay, raw, dt, by_class, kinds


def from_local(
    mesh: Mesh,
    block: BlockSource,
    dims: Sequence[str],
    sizes: Sequence[int] | Mapping[str, int],
    layout: Mapping[str, AxesSpec] | Layout | None = None,
    dtype: Any = None,
) -> ShardArray:
    """A ShardArray of global ``sizes`` from blocks supplied where they live; no process makes the global array.

    ``block`` is one of:

    * a callable ``block(device) -> array``, called once for every device this
      process holds (all of them on an emulated mesh, its own under MPI) with
      the flat device index (``mesh.coords(device)`` gives its coordinates); on
      an emulated NumPy mesh it is called once per replica class and replicas
      share the result. The same code then runs emulated and under MPI.
    * a dict ``{device: array}`` with an entry for every device this process holds.
    * an array: under MPI (``comm="mpi"``) the block of this process's device,
      as JAX's ``make_array_from_process_local_data`` and DTensor's ``from_local``.

    Blocks that are positional arrays (``shardarray.array_api``'s ``Array``, e.g.
    made on a process's own one-device mesh) give a positional result: the kind
    of the blocks is kept, as everywhere (named blocks or NumPy data: named).

    Each block must have exactly the shape of the device's block in
    ``layout`` (ceil-chunks, trailing ones smaller or empty). Devices that
    differ only along mesh axes that split no dim hold replicas: each must
    supply the same values (with ``SHARDARRAY_CHECK_SPMD=1`` this is checked by
    comparing digests of the replicas' blocks; under MPI that is one small
    allgather).

    Collectives: none on an emulated mesh. In a multi-process job
    (``comm="mpi"``) one small allgather, always: the creation check, which
    compares every process's global sizes, dtype and layout (a difference
    raises ``CommError`` on every process) and carries each process's own
    error, so a block of the wrong shape (or any other error before it) on
    one process raises the same error on every process, naming the device
    (and process) and the expected and given shapes, instead of leaving the
    others to fail or wait in their next collective. With
    ``SHARDARRAY_CHECK_SPMD=1``, also one allgather of 16-byte digests of
    the replicas' blocks.

    Args:
        mesh: the mesh.
        block: the callable, mapping or array above (NumPy arrays or the
            mesh backend's arrays; NumPy blocks move to the backend).
        dims: the global array's dim names.
        sizes: its global sizes, one per dim (or ``{dim: size}`` in dims order).
        layout: ``{dim: axis | (axes) | None}``; None follows the mesh rules.
        dtype: cast the blocks to this dtype (default: the blocks' dtype, which must agree).

    Raises:
        DimensionError: a block's shape differs from its device's block in the layout
            (the message names the dim, the expected and given shapes and the device).
        DTypeError: blocks of different dtypes. ArgumentError: a device without a block.
        CommError: replicas that differ (with ``SHARDARRAY_CHECK_SPMD=1``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> def rows(device):            # the block of device (row=r, col=c) of a (5, 2) array split on row
        ...     r = mesh.coords(device)["row"]
        ...     return np.arange(10.0).reshape(5, 2)[3 * r:3 * r + 3]
        >>> x = sa.from_local(mesh, rows, ("batch", "io"), (5, 2), {"batch": "row"})
        >>> x.shards[3]
        array([[6., 7.],
               [8., 9.]])
    """
    if not isinstance(mesh, Mesh):
        raise MeshError(
            f"from_local needs a sa.Mesh as mesh; got {type(mesh).__name__} {mesh!r:.80}. "
            f"Make one with sa.Mesh({{'row': 2, 'col': 2}})"
        )
    try:
        dims, shape, lay, raw, dt, by_class, kinds = _blocks(mesh, block, dims, sizes, layout, dtype)
    except Exception as e:  # every process raises it (or the lowest failing process's), none goes on alone
        mesh.comm.check_spmd("from_local", {}, None, failure=e)
        raise  # pragma: no cover - check_spmd raised
    mesh.comm.check_spmd("from_local", dict(zip(dims, shape)), dt, layout=lay)
    backend = mesh.backend

    if check_enabled() and backend.has_data:
        _check_replicas(
            mesh,
            lay,
            {d: backend.to_numpy(b) if not isinstance(b, np.ndarray) else b.astype(dt) for d, b in raw.items()},
        )
    shards: list[Any] = [None] * mesh.size
    scope = backend.device_scope
    classes = dict(mesh.replica_classes(lay.used_axes)) if by_class else {}
    for d, b in raw.items():
        if isinstance(b, MetaArray):
            out: Any = MetaArray(b.shape, dt)
        elif isinstance(b, np.ndarray):  # a copy on the backend: the caller may reuse its buffer
            b = np.array(b, dtype=dt, copy=True)
            if scope is None:
                out = backend.from_numpy(b)
            else:
                with scope(d):
                    out = backend.from_numpy(b)
        else:
            out = b
        for t in classes.get(d, (d,)):
            shards[t] = out
    made = ShardArray(mesh, lay, dt, shards)
    kind = kinds.pop() if len(kinds) == 1 else None
    return as_kind(made, kind) if kind is not None and kind.positional else made


__all__ = ["from_local"]
