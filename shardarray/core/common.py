"""Helpers shared by the ops: operand checks, merged layouts, per-block maps."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..backend.classlist import ClassList, class_ids, intern_index, is_interned
from ..backend.meta import MetaArray
from ..comm.parallel import run_all, usable
from ..errors import ArgumentError, DimensionError, DTypeError, MeshError, OutOfBoundsError
from ..layout import Layout, make_layout
from ..mesh import Mesh
from .kinds import GIVEN


def common_mesh(arrays: Sequence[ShardArray], what: str) -> Mesh:
    """The mesh every operand lives on (``MeshError`` if two differ)."""
    mesh = arrays[0].mesh
    for i, a in enumerate(arrays[1:], 1):
        if a.mesh is not mesh and a.mesh != mesh:
            raise MeshError(
                f"{what}: operand 0 {arrays[0].dims} lives on {mesh} but operand {i} {a.dims} on {a.mesh}; "
                f"move one of them first with sa.reshard(x, mesh, layout) (block to block, no host round trip; "
                f"layout=None follows the target mesh's rules)"
            )
    return mesh


def union_dims(arrays: Sequence[ShardArray], what: str) -> tuple[tuple[str, ...], dict[str, int]]:
    """All dims of the operands in order of first appearance, and their sizes.

    Raises ``DimensionError`` when a dim name has two sizes.
    """
    sizes: dict[str, int] = {}
    owner: dict[str, int] = {}
    for i, a in enumerate(arrays):
        for d, n in zip(a.dims, a.shape):
            if d in sizes and sizes[d] != n:
                raise DimensionError(
                    f"{what}: dim {d!r} has size {sizes[d]} in operand {owner[d]} {arrays[owner[d]].sizes} "
                    f"but size {n} in operand {i} {a.sizes}; same-named dims must have the same size "
                    f"(rename one with .rename({{{d!r}: 'other'}}))"
                )
            if d not in sizes:
                sizes[d] = n
                owner[d] = i
    return tuple(sizes), sizes


def one_dim_arg(x: ShardArray, dim: Any, what: str, verb: str | None = None, *, none_on_1d: bool = False) -> str:
    """Normalize a single-dim argument against ``x``: a dim name or a position (see ``dims_arg``).

    ``None`` and tuples/lists are refused with a ``DimensionError`` naming the
    array's dims; with ``none_on_1d`` (NumPy's ``axis=None`` on a vector),
    ``None`` means the only dim of a 1-D array. ``verb`` names what the op does
    along the dim ("sort", "search", ...) in the messages.
    """
    along = f" to {verb} along" if verb else ""
    if dim is None and none_on_1d:
        if x.ndim != 1:
            raise DimensionError(
                f"{what}: name the dim{along}; the array has dims {x.sizes}. To {verb or 'use'} all elements in "
                f"order, merge them first: x.merge_dims({x.dims}, 'flat')"
            )
        dim = 0
    if dim is None or isinstance(dim, (tuple, list)):
        raise DimensionError(
            f"{what}: name one dim{along} (a name or a position); got {dim!r}. The array's dims are {x.dims} "
            f"({x.sizes})"
        )
    return dims_arg(x, dim, what)[0]


def dims_arg(x: ShardArray, dims: Any, what: str) -> tuple[str, ...]:
    """Normalize a ``dims`` argument against ``x``: None (all), a name, a position, or several of these.

    Positions count ``x``'s dims as NumPy counts axes (negative from the end),
    so ``x.sum(0)`` and ``np.sum(x, axis=0)`` reduce ``x.dims[0]``.
    """
    if not isinstance(x, ShardArray):
        require_array(x, what)
    if dims is None:
        return x.dims
    if isinstance(dims, (str, int, np.integer)):
        dims = (dims,)
    try:
        items = tuple(dims)
    except TypeError:
        raise DimensionError(
            f"{what}: dims must be a dim name, a position, or a tuple of them; got {dims!r}. "
            f"The array's dims are {x.dims}"
        ) from None
    out = []
    for d in items:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (str, int, np.integer)):
            raise DimensionError(
                f"{what}: {d!r} is neither a dim name nor a position; the array's dims are {x.dims} ({x.sizes})"
            )
        if not isinstance(d, str):
            i = int(d)
            if not -x.ndim <= i < x.ndim:
                raise OutOfBoundsError(
                    f"{what}: position {i} is out of range for an array with {x.ndim} dim(s) {x.dims}; "
                    f"use 0..{x.ndim - 1}, -{x.ndim}..-1 or a dim name"
                )
            d = x.dims[i]
        elif d not in x.dims:
            raise DimensionError(
                f"{what}: dim {d!r} is not a dim of the array; its dims are {x.dims} ({x.sizes}): "
                f"pass one of those names or positions"
            )
        out.append(d)
    if len(set(out)) != len(out):
        raise DimensionError(f"{what}: dims {tuple(items)} name the same dim twice (the array's dims are {x.dims})")
    return tuple(out)


def wrap_hint(operands: Any) -> str:
    """How to wrap a foreign operand, for error messages: ``xp.asarray`` when an operand is positional, or the op
    was given positional arrays (``core.kinds.GIVEN``: it runs on named views of them), else ``sa.asarray`` with
    dims."""
    if GIVEN.get() is not None or any(getattr(a, "positional", False) for a in operands if isinstance(a, ShardArray)):
        return "xp.asarray(array, device=mesh) (import shardarray.array_api as xp)"
    return "sa.asarray(array, dims=..., mesh=...)"


def require_array(x: Any, what: str, name: str = "x") -> ShardArray:
    """``x`` if it is a ShardArray, else a ``DTypeError`` saying how to make one."""
    if isinstance(x, ShardArray):
        return x
    shape = getattr(x, "shape", None)
    got = f"{type(x).__name__} of shape {shape}" if shape is not None else f"{type(x).__name__} {x!r:.60}"
    raise DTypeError(
        f"{what}: {name} must be a ShardArray; got a {got}. Make one with "
        f"sa.asarray({name}, dims=(...), mesh=mesh) first"
    )


def int_arg(value: Any, label: str, error: type[Exception] = ArgumentError) -> int:
    """``value`` as an ``int``: a Python or NumPy integer, not a bool, nor a 1-d NumPy array (it has ``__index__``
    too); else ``error("{label} must be an integer; got ...")``.

    Example:
        >>> int_arg(np.int64(3), "roll: shift"), int_arg(-1, "expand_dims: position")
        (3, -1)
    """
    try:
        if not isinstance(value, (bool, np.bool_)):
            return operator.index(value)
    except TypeError:
        pass
    raise error(f"{label} must be an integer; got {value!r:.80}")


def require_ids(ids: Any, what: str, name: str = "ids") -> ShardArray:
    """``ids`` if it is an integer ShardArray (token or class ids), else a ``DTypeError`` saying how to get one."""
    ids = require_array(ids, what, name)
    if ids.dtype.kind not in "iu":
        raise DTypeError(
            f"{what}: {name} {ids.sizes} must be an integer array of ids; got dtype {ids.dtype}; "
            f'cast them with {name}.astype("int64")'
        )
    return ids


def mesh_order(mesh: Mesh, axes: Iterable[str]) -> tuple[str, ...]:
    """``axes`` as a tuple sorted in the mesh's axis order."""
    s = set(axes)
    return tuple(a for a in mesh.axis_names if a in s)


def merged_axes(arrays: Sequence[ShardArray], dims: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The computation layout of an op over ``dims``: first operand that splits a dim wins.

    A dim keeps the axes of the first operand that splits it, unless one of
    those axes already splits an earlier dim; then it stays unsplit and the
    operands are brought to this layout (a slice, or an allgather). Elementwise ops
    and einsums try each operand first and keep the order whose moves cost least
    (``core.leader``).
    """
    taken: set[str] = set()
    out: dict[str, tuple[str, ...]] = {d: () for d in dims}
    for a in arrays:
        for d, axes in zip(a.dims, a.spec.axes):
            if axes and not out[d] and not taken.intersection(axes):
                out[d] = axes
                taken.update(axes)
    return out


def check_rules(mesh: Mesh, dims: tuple[str, ...], sizes: dict[str, int], what: str) -> None:
    """Refuse an output the mesh's rules would split illegally (Mesh-TF §8.5)."""
    if mesh.rules:
        make_layout(mesh, dims, tuple(sizes[d] for d in dims), None, what=what)


def map_blocks(
    mesh: Mesh, axes: Iterable[str], fn: Callable[..., Any], *shard_lists: Sequence[Any], pure: bool = False
) -> list[Any]:
    """Apply ``fn`` to the shards of every device, once per distinct block.

    ``axes`` are the mesh axes the result depends on (its layout and pending
    axes); devices that agree on them compute one block and share it. With
    ``pure`` (``fn`` shares no state: each call reads its own blocks and
    returns a new one), big NumPy blocks in one process are computed on the
    copy pool (``comm.parallel``) at once, as separate devices would; the
    result is the same.
    """
    if not mesh.backend.has_data:  # meta: a ClassList, read as the per-device list is (indexed, iterated)
        return cast(list[Any], _map_meta(mesh, axes, fn, shard_lists))
    classes = mesh.replica_classes(axes)
    if pure and len(classes) > 1 and usable(mesh.backend):
        nbytes = sum(int(getattr(s[rep], "nbytes", 0)) for rep, _ in classes for s in shard_lists)  # array operands
        results = run_all(
            [functools.partial(fn, *(s[rep] for s in shard_lists)) for rep, _ in classes], nbytes, mesh.backend
        )
    else:
        scope = mesh.backend.device_scope
        results = []
        for rep, _ in classes:
            if scope is None:
                results.append(fn(*(s[rep] for s in shard_lists)))
            else:  # one GPU per device: allocate and launch on the device's GPU and stream
                with scope(rep):
                    results.append(fn(*(s[rep] for s in shard_lists)))
    out: list[Any] = [None] * mesh.size
    for (_, devices), r in zip(classes, results):
        if isinstance(r, np.generic):  # NumPy gives scalars for 0-d results: a shard is always an array
            r = np.asarray(r)
        for d in devices:
            out[d] = r
    return out


def map_blocks_multi(
    mesh: Mesh,
    axes: Iterable[str],
    n_out: int,
    fn: Callable[..., tuple[Any, ...]],
    *shard_lists: Sequence[Any],
    pure: bool = False,
) -> list[list[Any]]:
    """``map_blocks`` for a ``fn`` that returns ``n_out`` blocks: one shard list per output (``pure`` as there)."""
    both = map_blocks(mesh, axes, fn, *shard_lists, pure=pure)
    if isinstance(both, ClassList):  # meta: per class
        return [ClassList([r[i] for r in both.values], both.index) for i in range(n_out)]
    return [[None if r is None else r[i] for r in both] for i in range(n_out)]


def _signature(arg: Any) -> Any:
    """What a meta block's result depends on: shapes and dtypes of arrays, the values of the rest."""
    if isinstance(arg, MetaArray):
        return (arg.shape, arg.dtype)
    if isinstance(arg, slice):
        return ("slice", arg.start, arg.stop, arg.step)
    if isinstance(arg, (tuple, list)):
        return tuple(_signature(a) for a in arg)
    return arg


_META_CLASSES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _classes_key(mesh: Mesh) -> tuple:
    """What ``mesh.replica_classes`` depends on: axis names and sizes, whether it is SPMD (and its device), whether
    each device is its own class. Meshes that agree share the class tables below (a layout search makes a meta
    mesh per op it prices)."""
    spmd = mesh.comm_kind == "mpi"
    return (mesh._names, mesh._sizes, spmd, tuple(mesh.local_devices) if spmd else (), mesh.backend.per_device)


def _meta_classes(mesh: Mesh, axes: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(reps, rep_of)`` for ``mesh.replica_classes(axes)``: representatives, and each device's class index."""
    key = (_classes_key(mesh), frozenset(axes))
    hit = _META_CLASSES.get(key)
    if hit is None:
        classes = mesh.replica_classes(axes)
        reps = np.fromiter((r for r, _ in classes), dtype=np.intp, count=len(classes))
        rep_of = np.full(mesh.size, -1, dtype=np.intp)
        for i, (_, devices) in enumerate(classes):
            rep_of[list(devices)] = i
        reps.flags.writeable = rep_of.flags.writeable = False  # shared by every mesh of this key
        if len(_META_CLASSES) > 4096:
            _META_CLASSES.clear()
        hit = _META_CLASSES[key] = (reps, rep_of)
    return hit


def _map_meta(
    mesh: Mesh, axes: Iterable[str], fn: Callable[..., Any], shard_lists: Sequence[Sequence[Any]]
) -> Sequence[Any]:
    """``map_blocks`` on shapes: ``fn`` runs once per distinct operand class, the result is a ``ClassList``.

    Each device's operands are those of its replica class's representative
    (as the per-device loop had them); devices whose operands are the same
    objects share one result, and results are further shared between classes
    whose operands have the same signature (shapes, dtypes, other values).
    The cost is per class: operands that are ``ClassList`` s are combined by
    their class indices (one NumPy pass, memoised per tuple of index arrays),
    never by a Python loop over devices.
    """
    reps, rep_of = _meta_classes(mesh, axes)
    if rep_of.min() < 0:  # SPMD (one local device): the per-device path
        return _map_meta_devices(mesh, reps, rep_of, fn, shard_lists)
    if len(reps) == 1 or not shard_lists:
        return ClassList((fn(*(s[int(reps[0])] for s in shard_lists)),), _zero_index(mesh))
    parts = [class_ids(s) for s in shard_lists]
    try:  # operand classes of one signature merged first: one call per distinct signature of the operands
        parts = [_by_signature(index, values) for index, values in parts]
    except TypeError:  # an operand that cannot be a key: classes by identity, shared where signatures agree
        order, inverse = _operand_classes(mesh, frozenset(axes), parts)
        by_signature: dict[Any, Any] = {}
        results: list[Any] = [None] * len(order)
        for u, d in order:  # in device order, as the per-device loop did
            results[u] = _shared_call(by_signature, fn, [values[index[d]] for index, values in parts])
        return ClassList(results, inverse)
    order, inverse = _operand_classes(mesh, frozenset(axes), parts)
    out: list[Any] = [None] * len(order)
    for u, d in order:  # in device order, as the per-device loop did
        out[u] = fn(*[values[index[d]] for index, values in parts])
    return ClassList(out, inverse)


def _by_signature(index: np.ndarray, values: tuple[Any, ...]) -> tuple[np.ndarray, tuple[Any, ...]]:
    """A shard list's classes with equal ``_signature`` s merged (the first of each kept); unchanged when they all
    differ. Raises TypeError for a signature that cannot be a key."""
    first: dict[Any, int] = {}
    ids = [first.setdefault(_signature(v), i) for i, v in enumerate(values)]
    if len(first) == len(values):
        return index, values
    keep = sorted(first.values())
    pos = {i: n for n, i in enumerate(keep)}
    remap = np.fromiter((pos[i] for i in ids), dtype=np.intp, count=len(ids))
    return intern_index(remap[index]), tuple(values[i] for i in keep)


def _shared_call(by_signature: dict[Any, Any], fn: Callable[..., Any], args: list[Any]) -> Any:
    """``fn(*args)``, or the result of an earlier call whose arguments had the same ``_signature``."""
    key = _signature(args)
    try:
        r = by_signature.get(key)
    except TypeError:  # an argument that cannot be a key: no sharing
        return fn(*args)
    if r is None:
        r = by_signature[key] = fn(*args)
    return r


def _zero_index(mesh: Mesh) -> np.ndarray:
    """Every device in class 0 (one shared read-only array per mesh)."""
    z = mesh.__dict__.get("_meta_zero_index")
    if z is None:
        z = mesh.__dict__["_meta_zero_index"] = intern_index(np.zeros(mesh.size, dtype=np.intp))
    return z


_OPERAND_MEMO: dict[tuple, tuple] = {}


def _operand_classes(
    mesh: Mesh, axes: frozenset, parts: list[tuple[np.ndarray, tuple[Any, ...]]]
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """``(order, inverse)``: per device its result class, and ``(class, first device)`` in device order.

    A device's operand classes are its representative's; classes are the
    distinct combinations. Memoised on the identity of the index arrays.
    """
    key = (_classes_key(mesh), axes, tuple(id(index) for index, _ in parts))
    hit = _OPERAND_MEMO.get(key)
    if hit is not None and all(a is b for a, (b, _) in zip(hit[0], parts)):
        return hit[1], hit[2]
    reps, rep_of = _meta_classes(mesh, axes)
    rep_dev = reps[rep_of]
    combined = np.zeros(mesh.size, dtype=np.int64)
    radix = 1
    for index, values in parts:
        radix *= max(len(values), 1)
        combined = combined * max(len(values), 1) + index[rep_dev]
    if radix >= 2**62:  # too many combinations for one integer key: unique rows
        rows = np.stack([index[rep_dev] for index, _ in parts], axis=1)
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    inverse = intern_index(inverse.reshape(-1).astype(np.intp))
    order = [(u, int(first[u])) for u in np.argsort(first, kind="stable").tolist()]
    if all(is_interned(index) for index, _ in parts):  # only canonical arrays stay alive
        if len(_OPERAND_MEMO) > 2048:
            _OPERAND_MEMO.clear()
        _OPERAND_MEMO[key] = ([index for index, _ in parts], order, inverse)
    return order, inverse


def _map_meta_devices(
    mesh: Mesh, reps: np.ndarray, rep_of: np.ndarray, fn: Callable[..., Any], shard_lists: Sequence[Sequence[Any]]
) -> list[Any]:
    """``_map_meta`` where only some devices are listed (``rep_of`` is -1 for the others)."""
    out: list[Any] = [None] * mesh.size
    by_signature: dict[Any, Any] = {}
    for d in np.flatnonzero(rep_of >= 0).tolist():
        out[d] = _shared_call(by_signature, fn, [s[int(reps[rep_of[d]])] for s in shard_lists])
    return out


def new_array(
    mesh: Mesh,
    dims: tuple[str, ...],
    sizes: dict[str, int],
    axes: dict[str, tuple[str, ...]],
    shards: Sequence[Any],
    pending: Iterable[str] = (),
    dtype: Any = None,
) -> ShardArray:
    """A ShardArray from computed shards (dtype from the first shard if not given)."""
    layout = Layout(dims, tuple(sizes[d] for d in dims), tuple(axes.get(d, ()) for d in dims))
    if dtype is None:
        dtype = shards[mesh.local_device].dtype
    return ShardArray(mesh, layout, dtype, shards, mesh_order(mesh, pending))


def any_pending(values: Sequence[Any]) -> bool:
    """Whether one of ``values`` is a ShardArray with a pending sum (a loop, not a generator: the elementwise ops and
    einsum ask it on every call)."""
    for v in values:
        if isinstance(v, ShardArray) and v.pending:
            return True
    return False


def has_infinity(xp: Any, block: Any) -> Any:
    """``holds_anywhere``'s test for an infinite entry (a 0-d bool on the block's device)."""
    return xp.any(xp.isinf(block))


def holds_anywhere(arrays: Sequence[ShardArray], test: Callable[[Any, Any], Any]) -> bool:
    """Whether ``test(xp, block)`` (a 0-d bool made on the block's device) holds for a block of any of ``arrays``,
    anywhere in the job: each distinct block is tested where it lives, the flags are read in one device-to-host
    read (``Backend.read_together``), and the processes of an MPI job agree by one host reduction, so every
    process takes the same branch. False on the meta backend (no values) and for no arrays.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> y = sa.asarray(np.array([1.0, np.inf]), dims=("j",), mesh=mesh, layout={"j": "row"})
        >>> holds_anywhere([y], lambda xp, b: xp.any(xp.isinf(b)))
        True
    """
    if not arrays:
        return False
    mesh = arrays[0].mesh
    backend = mesh.backend
    if not backend.has_data:
        return False
    xp, parts, seen = backend.xp, [], set()
    for a in arrays:
        shards = a.shards
        for d in mesh.local_devices:
            block = shards[d]
            if block is None or id(block) in seen or block.size == 0:
                continue
            seen.add(id(block))
            with backend.scope(d):
                parts.append((d, xp.reshape(test(xp, block), (1,))))
    found = any(bool(flag[0]) for flag in backend.read_together(parts))
    return mesh.comm.host_reduce(1.0 if found else 0.0, "max") > 0.0
