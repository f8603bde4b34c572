"""The processor mesh: named axes, device coordinates and axis groups (data only)."""

from __future__ import annotations

import itertools
import math
import operator
import threading
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from .backend import get_backend
from .backend.cupy_backend import import_cupy, on_devices
from .callsite import user_stacklevel
from .comm.emulated import EmulatedCommunicator
from .comm.mpi import MpiCommunicator, mpi_world
from .comm.nccl import NcclCommunicator
from .errors import LayoutError, MeshError
from .launch import launched_processes
from .threads import on_mesh

AxesSpec = None | str | Iterable[str]
COMMS = (None, "emulated", "nccl", "mpi", "auto")
_WARNED: set[tuple] = set()
#: distinct deferred checks a mesh holds before it reads them without waiting for a read of a value
DEFERRED_LIMIT = 64


def _parse_shape(shape: Any) -> tuple[list[str], list[int]]:
    """Axis names and sizes of a mesh shape (``{axis: size}`` or ``(axis, size)`` pairs); MeshError otherwise."""
    example = "{'row': 2, 'col': 2}"
    if isinstance(shape, str) or (
        isinstance(shape, (list, tuple)) and shape and all(isinstance(a, str) for a in shape)
    ):
        given = [shape] if isinstance(shape, str) else list(shape)
        raise MeshError(
            f"mesh shape {shape!r} names axes without sizes; give {{axis: size}}, e.g. { {a: 2 for a in given} }"
        )
    try:
        pairs = list(shape.items()) if isinstance(shape, Mapping) else list(shape)
    except TypeError:
        raise MeshError(
            f"a mesh shape is {{axis: size}} or a list of (axis, size) pairs, e.g. {example}; got {shape!r}"
        ) from None
    names: list[str] = []
    sizes: list[int] = []
    for item in pairs:
        try:
            name, size = item
        except (TypeError, ValueError):
            raise MeshError(
                f"a mesh shape is {{axis: size}} or a list of (axis, size) pairs, e.g. {example}; "
                f"got item {item!r} in {shape!r}"
            ) from None
        if not isinstance(name, str) or not name:
            raise MeshError(f"mesh axis names must be non-empty strings; got {name!r} in {shape!r}")
        if name in names:
            raise MeshError(f"mesh axis {name!r} appears twice in mesh shape {pairs!r}; axis names must be unique")
        try:
            if isinstance(size, (bool, np.bool_)):
                raise TypeError
            n = operator.index(size)
        except TypeError:
            raise MeshError(
                f"mesh axis {name!r} has size {size!r} ({type(size).__name__}); an axis size is an integer "
                f"number of devices, e.g. {{{name!r}: 2}}"
            ) from None
        if n < 1:
            raise MeshError(f"mesh axis {name!r} has size {n}; every axis size must be an integer >= 1")
        names.append(str(name))  # (a np.str_ name made the mesh's repr and dicts spell np.str_('row'))
        sizes.append(int(n))
    if not names:  # (a mesh of no axes made arrays whose layouts could not be built)
        raise MeshError(f"mesh shape {shape!r} has no axes; give at least one, e.g. {{'d': 1}} for one device")
    if math.prod(sizes) > MAX_DEVICES:
        raise MeshError(
            f"mesh shape {shape!r} has {math.prod(sizes)} devices; a mesh has at most {MAX_DEVICES} (2**24: every "
            f"mesh, the meta backend's included, keeps tables with an entry per device)"
        )
    return names, sizes


#: the most devices a mesh has (a meta mesh of 4096 x 4096 devices takes under a second to make, measured)
MAX_DEVICES = 2**24


def default_comm(launched: int, shape: Mapping[str, int], size: int, backend: Any, gpus: tuple[int, ...] | None) -> str:
    """The communicator a mesh gets when ``comm`` is left out (see ``Mesh``).

    Args:
        launched: how many processes the launcher started (``launch.launched_processes``).
        shape, size: the mesh's shape and device count.
        backend: the backend's name.
        gpus: the ``devices`` argument as GPU ids, or None.

    Example:
        >>> default_comm(1, {"row": 2, "col": 2}, 4, "numpy", None)
        'emulated'
        >>> default_comm(4, {"row": 2, "col": 2}, 4, "numpy", None)   # mpiexec -n 4
        'mpi'
    """
    distinct = gpus is not None and len(set(gpus)) == len(gpus) > 1
    if launched <= 1 or backend == "meta":
        return "nccl" if distinct else "emulated"
    if launched == size:
        return "mpi"
    if distinct:
        raise MeshError(
            f"mesh {dict(shape)} with devices={list(gpus or ())} runs under a launcher that started {launched} "
            f"processes, each of which would drive every GPU; run it as mpiexec -n {size} (one process per GPU) "
            f"or in a single process"
        )
    key = (tuple(shape.items()), launched)
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(
            f"mesh {dict(shape)} has {size} device(s) but the launcher started {launched} processes, so every "
            f"process runs the whole mesh (the same work, the same files, {launched} times). Pass "
            f"comm='emulated' if that is what you want, or run one process per device: mpiexec -n {size}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return "emulated"


def normalize_axes(spec: AxesSpec, context: str = "") -> tuple[str, ...]:
    """Turn a layout value (None, one axis name or a sequence of names) into a tuple."""
    if spec is None:
        return ()
    if isinstance(spec, str):
        return (spec,)
    where = f" ({context})" if context else ""
    try:
        axes = tuple(spec)
    except TypeError:
        raise LayoutError(
            f"a layout value must be None, a mesh axis name or a tuple of axis names; got {spec!r}{where}"
        ) from None
    for a in axes:
        if not isinstance(a, str):
            raise LayoutError(f"mesh axis names are strings; got {a!r} in layout value {spec!r}{where}")
    return axes


class Mesh:
    """A logical n-dimensional mesh of processors with named axes.

    Devices are numbered 0..size-1 in row-major order of their coordinates
    (the first axis is the most significant). A mesh also carries Mesh-TF
    layout *rules*: a global map from tensor dim names to mesh axes that every
    array made without an explicit layout follows, restricted to its dims.

    Args:
        shape: ``{axis: size}`` (ordered) or a sequence of ``(axis, size)`` pairs.
        backend: where shard data lives: ``"numpy"`` (default, emulated CPU
            mesh), ``"cupy"`` (every shard on the current GPU, or one GPU per
            device with ``devices``) or ``"meta"`` (shapes and dtypes only, no data).
        rules: Mesh-TF computation layout ``{dim: axis or (axes, major first)}``.
        comm: ``"emulated"`` (every shard in this process, collectives as
            array arithmetic), ``"nccl"`` (one GPU per device in this
            process, NCCL collectives per axis group, see ``comm.nccl``),
            ``"mpi"`` (SPMD under ``mpiexec -n size``: process ``rank`` owns
            device ``rank`` and only its shard; NumPy shards move with MPI,
            CuPy shards with NCCL bootstrapped over MPI) or ``"auto"``
            (``"mpi"`` when the process was started by an MPI launcher with
            more than one process). The default, None, outside a launcher is
            ``"nccl"`` when ``devices`` names distinct GPUs, else
            ``"emulated"``. Under a launcher that started several processes
            (mpiexec, srun) it is ``"mpi"`` when their count equals the mesh
            size, since an emulated mesh would make every process compute
            the whole mesh and write the same files; with another count it
            stays ``"emulated"`` with a warning (a MeshError with distinct
            GPUs). ``backend="meta"`` meshes (shapes only) stay emulated.
            Pass ``comm="emulated"`` to run a whole mesh in every process on purpose.
        devices: with ``backend="cupy"``, the GPU of every mesh device, in
            device order (``[0, 1, 2, 3]``). Distinct GPUs use NCCL; the same
            GPU for every device keeps the emulated communicator on that GPU;
            ``comm="nccl"`` with a repeated GPU asks NCCL for several ranks on
            one GPU (NCCL >= 2.30 with ``NCCL_MULTI_RANK_GPU_ENABLE=1``).
            Under ``comm="mpi"``, ``devices[rank]`` is this process's GPU
            (default: its local rank modulo the node's GPU count).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2}, rules={"batch": "row"})
        >>> mesh.shape, mesh.size, mesh.coords(3)
        ({'row': 2, 'col': 2}, 4, {'row': 1, 'col': 1})
        >>> mesh.groups("col")   # devices that differ only in their col coordinate
        ((0, 1), (2, 3))

        On a node with four GPUs, ``sa.Mesh({"row": 2, "col": 2}, backend="cupy",
        devices=[0, 1, 2, 3])`` puts each shard on its own GPU and moves data with NCCL.
    """

    def __init__(
        self,
        shape: Mapping[str, int] | Iterable[tuple[str, int]],
        backend: str = "numpy",
        rules: Mapping[str, AxesSpec] | None = None,
        comm: str | None = None,
        devices: Sequence[int] | None = None,
    ) -> None:
        names, sizes = _parse_shape(shape)
        self._names: tuple[str, ...] = tuple(names)
        self._sizes: tuple[int, ...] = tuple(sizes)
        self._index = {a: i for i, a in enumerate(names)}
        if comm not in COMMS:
            raise MeshError(
                f"unknown comm {comm!r} for mesh {self.shape}; choose 'emulated', 'nccl', 'mpi' or 'auto' "
                f"(or leave it out)"
            )
        if rules is not None and not isinstance(rules, Mapping):
            raise MeshError(
                f"rules={rules!r} for mesh {self.shape}: rules is a dict {{dim: axis}} mapping tensor dim names to "
                f"mesh axes, e.g. rules={{'batch': {self._names[0] if self._names else 'axis'!r}}}"
            )
        if comm == "auto":
            comm = "mpi" if launched_processes() > 1 else None
        gpus = self._check_devices(devices, backend, comm)
        if comm is None:
            comm = default_comm(launched_processes(), self.shape, self.size, getattr(backend, "name", backend), gpus)
        self.comm_kind = comm
        self.backend = get_backend(backend)
        self.rules: dict[str, tuple[str, ...]] = {}
        for dim, spec in (rules or {}).items():
            if not isinstance(dim, str):
                raise MeshError(f"rules={rules!r}: the keys of rules are tensor dim names (strings); got {dim!r}")
            axes = self.parse_axes(spec, f"layout rule {dim!r} -> {spec!r}")
            if axes:
                self.rules[dim] = axes
        self.constants: dict[Any, Any] = {}  # constant arrays ops make once per mesh (causal masks)
        # checks computed on the devices and not read yet (see ``defer_check``), by key, oldest first
        self.deferred: dict[Hashable, Any] = {}
        self._deferred_lock = threading.Lock()
        self._groups: dict[tuple[str, ...], tuple[tuple[int, ...], ...]] = {}
        self._classes: dict[frozenset, tuple[tuple[int, tuple[int, ...]], ...]] = {}
        self.local_devices: tuple[int, ...] = tuple(range(self.size))
        if comm == "emulated":
            if gpus is not None:
                self.backend = _cupy_on(gpus)
            self.comm: Any = EmulatedCommunicator(self)
        elif comm == "nccl":
            self.backend = _cupy_on(gpus if gpus is not None else tuple(range(self.size)))
            self.comm = NcclCommunicator(self)
        elif comm == "mpi" and self.backend.name == "cupy":
            world = mpi_world(self)
            self.local_devices = (world.Get_rank(),)
            self.backend = _cupy_on(_spmd_gpus(world, gpus, self.size))
            self.comm = NcclCommunicator(self, world=world)
        elif comm == "mpi":
            self.comm = MpiCommunicator(self)
            self.local_devices = (self.comm.rank,)
        else:  # pragma: no cover - comm was checked against COMMS above
            raise MeshError(f"unknown comm {comm!r} for mesh {shape!r}; choose 'emulated', 'nccl', 'mpi' or 'auto'")
        on_mesh(comm)  # the BLAS pool, once per process (see shardarray/threads.py)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickling: a mesh of this process (``comm="emulated"``) is rebuilt from its shape, backend, rules and
        GPUs; an MPI or NCCL mesh (communicators of a job or of GPUs) raises ``MeshError``: make it again in the
        process that needs it."""
        if self.comm_kind != "emulated":
            raise MeshError(
                f"mesh {self.shape} (comm={self.comm_kind!r}) holds communicators of this job, so it is not pickled; "
                f"make it again where it is needed (sa.Mesh({self.shape}, ...))"
            )
        gpus = getattr(self.backend, "gpus", None)
        return Mesh, (self.shape, self.backend.name, dict(self.rules) or None, "emulated", gpus)

    def _check_devices(self, devices: Sequence[int] | None, backend: Any, comm: str | None) -> tuple[int, ...] | None:
        """``devices`` as a tuple of GPU ids (None when not given); MeshError when it cannot work."""
        name = getattr(backend, "name", backend)
        if comm == "nccl" and name != "cupy":
            raise MeshError(f"comm='nccl' moves GPU shards; mesh {self.shape} needs backend='cupy' (got {name!r})")
        if devices is None:
            return None
        if name != "cupy":
            raise MeshError(
                f"devices={devices!r} places shards on GPUs, which needs backend='cupy' (got {name!r}) "
                f"for mesh {self.shape}"
            )
        try:
            if isinstance(devices, (str, bytes)) or any(isinstance(g, (bool, np.bool_)) for g in devices):
                raise TypeError
            gpus = tuple(operator.index(g) for g in devices)
        except TypeError:
            raise MeshError(
                f"devices={devices!r} for mesh {self.shape}: devices is a list of integer GPU ids, one per mesh "
                f"device, e.g. devices={list(range(self.size))}"
            ) from None
        if any(g < 0 for g in gpus):
            raise MeshError(f"devices={list(gpus)} for mesh {self.shape} has a negative GPU id; GPU ids are >= 0")
        if len(gpus) != self.size:
            raise MeshError(
                f"devices={list(gpus)} lists {len(gpus)} GPU(s) but mesh {self.shape} has {self.size} devices; "
                f"give one GPU id per mesh device, in device order"
            )
        distinct = len(set(gpus))
        if comm == "emulated" and distinct > 1:
            raise MeshError(
                f"comm='emulated' with devices={list(gpus)} would combine shards of different GPUs on one stream; "
                f"use comm='nccl' (or leave comm out) for one GPU per device, or devices={[gpus[0]] * len(gpus)} "
                f"for every device on one GPU"
            )
        if comm is None and 1 < distinct < len(gpus):
            raise MeshError(
                f"devices={list(gpus)} puts several mesh devices on some GPUs and one on others; the emulated "
                f"communicator needs one GPU for all devices and NCCL one GPU per device. Use distinct GPUs, "
                f"one GPU for every device, or comm='nccl' with NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30)"
            )
        return gpus

    # ----------------------------------------------------------------- basics
    @property
    def shape(self) -> dict[str, int]:
        """``{axis: size}`` in axis order."""
        return dict(zip(self._names, self._sizes))

    @property
    def axis_names(self) -> tuple[str, ...]:
        return self._names

    @property
    def size(self) -> int:
        """Number of devices."""
        return math.prod(self._sizes)

    @property
    def ndim(self) -> int:
        return len(self._names)

    def axis_size(self, axis: str) -> int:
        """Size of one mesh axis (raises ``LayoutError`` naming the mesh if unknown)."""
        self.check_axis(axis)
        return self._sizes[self._index[axis]]

    def axes_size(self, axes: AxesSpec) -> int:
        """Product of the sizes of several axes (1 for none; one axis name is that axis); ``LayoutError`` naming
        the mesh for an unknown axis."""
        names: Iterable[str] = (axes,) if isinstance(axes, str) else (axes or ())
        try:
            return math.prod(self._sizes[self._index[a]] for a in names)
        except (KeyError, TypeError):
            for a in normalize_axes(names):
                self.check_axis(a)
            raise

    def parse_axes(self, spec: AxesSpec, context: str) -> tuple[str, ...]:
        """A layout value as a tuple of this mesh's axes; ``LayoutError`` for unknown or repeated axes."""
        if isinstance(spec, (set, frozenset)):  # (its order, the split's major axis, varies between processes)
            raise LayoutError(
                f"{context} gives the mesh axes as a set {spec!r}, which has no order; give a tuple, major axis "
                f"first, e.g. {tuple(sorted(map(str, spec)))!r}"
            )
        axes = normalize_axes(spec, context)
        for a in axes:
            if a not in self._index:
                raise LayoutError(
                    f"{context} names mesh axis {a!r}, which mesh {self} does not have; use one of {self._names}"
                )
        if len(set(axes)) != len(axes):
            raise LayoutError(f"{context} repeats a mesh axis {axes} on mesh {self}")
        return axes

    def check_axis(self, axis: str, context: str = "") -> None:
        """Raise ``LayoutError`` naming the mesh and its axes unless ``axis`` is one of its axis names."""
        if not isinstance(axis, str) or axis not in self._index:
            where = f" in {context}" if context else ""
            raise LayoutError(f"unknown mesh axis {axis!r}{where}; mesh {self} has axes {self._names}")

    # ------------------------------------------------------------ coordinates
    @cached_property
    def device_coords(self) -> tuple[tuple[int, ...], ...]:
        """Coordinates of every device, indexed by device id (row-major)."""
        return tuple(itertools.product(*(range(s) for s in self._sizes)))

    def coords(self, device: int) -> dict[str, int]:
        """``{axis: coordinate}`` of one device."""
        d = _device_index(device, f"coords({device!r})")
        if not 0 <= d < self.size:
            raise MeshError(f"device {device} is not on mesh {self} (devices 0..{self.size - 1})")
        return dict(zip(self._names, self.device_coords[d]))

    def device_at(self, coords: Mapping[str, int]) -> int:
        """Device id at ``{axis: coordinate}`` (every axis must be given)."""
        if not isinstance(coords, Mapping):
            raise MeshError(f"device_at takes {{axis: coordinate}} for mesh {self}; got {coords!r}")
        unknown = [a for a in coords if a not in self._index]
        if unknown:
            raise MeshError(f"device_at: mesh {self} has no axis {unknown[0]!r}; its axes are {self._names}")
        d = 0
        for a, s in zip(self._names, self._sizes):
            if a not in coords:
                raise MeshError(f"device_at needs a coordinate for every axis of mesh {self}; {a!r} is missing")
            c = _device_index(coords[a], f"device_at: coordinate {a}={coords[a]!r}")
            if not 0 <= c < s:
                raise MeshError(f"coordinate {a}={c} is outside mesh {self}")
            d = d * s + c
        return d

    def groups(self, axes: AxesSpec) -> tuple[tuple[int, ...], ...]:
        """Partition of the devices into groups along ``axes``.

        Devices of one group share their coordinates on every other axis; each
        group is ordered by its coordinates along ``axes`` (first axis major).
        The groups are ordered by the first device they hold.
        """
        key = normalize_axes(axes)
        cached = self._groups.get(key)
        if cached is not None:
            return cached
        for a in key:
            self.check_axis(a, "an axis group")
        if len(set(key)) != len(key):
            raise LayoutError(f"axis group {key} repeats an axis on mesh {self}")
        result = tuple(map(tuple, self.group_array(key).tolist()))
        self._groups[key] = result
        return result

    def group_array(self, axes: AxesSpec) -> np.ndarray:
        """``groups(axes)`` as a read-only ``(n_groups, group_size)`` int array (cached; one NumPy transpose).

        Example:
            >>> sa.Mesh({"row": 2, "col": 2}).group_array("col").tolist()
            [[0, 1], [2, 3]]
        """
        key = normalize_axes(axes)
        cache = self.__dict__.setdefault("_group_arrays", {})
        hit = cache.get(key)
        if hit is None:
            for a in key:
                self.check_axis(a, "an axis group")
            if len(set(key)) != len(key):
                raise LayoutError(f"axis group {key} repeats an axis on mesh {self}")
            others = [i for i, a in enumerate(self._names) if a not in key]
            order = others + [self._index[a] for a in key]
            ids = np.arange(self.size, dtype=np.intp).reshape(self._sizes).transpose(order)
            hit = ids.reshape(-1, self.axes_size(key))
            hit = hit[np.argsort(hit[:, 0], kind="stable")]
            hit.flags.writeable = False
            cache[key] = hit
        return hit

    def replica_classes(self, axes: Iterable[str]) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """Devices grouped by their coordinates on ``axes`` only.

        An array whose layout and pending sums use only ``axes`` holds the same
        block on every device of a class, so emulated backends compute a class
        once (``(representative, devices)`` pairs) and share the result. Under
        ``comm="mpi"`` only this process's own device is listed: the ops
        compute the local shard and leave the others' slots empty (None).
        """
        key = frozenset(axes)
        cached = self._classes.get(key)
        if cached is not None:
            return cached
        if self.comm_kind == "mpi":  # SPMD: this process computes its own device only
            (d,) = self.local_devices
            result: tuple[tuple[int, tuple[int, ...]], ...] = ((d, (d,)),)
        elif self.backend.per_device:
            result = tuple((d, (d,)) for d in range(self.size))
        else:
            rest = tuple(a for a in self._names if a not in key)
            result = tuple((g[0], g) for g in self.groups(rest))
        self._classes[key] = result
        return result

    # ------------------------------------------------------- deferred checks
    def defer_check(self, key: Hashable, check: Any) -> None:
        """Queue a check an op computed on the devices, to be read at the next read of a value (``report_deferred``).

        ``check.parts`` is a list of ``(mesh device, 1-D int64 device array)``; ``check.fold(other)`` merges a
        later check of the same ``key`` into it on the devices (no read); ``check.verdict(values)``, given the
        host copies of its parts, returns the exception to raise or None. Nothing is read here, unless the mesh
        already holds ``DEFERRED_LIMIT`` distinct checks: then they are all read now (one transfer), so the
        queue stays small in a program that never reads a value.
        """
        with self._deferred_lock:
            old = self.deferred.get(key)
            if old is None:
                self.deferred[key] = check
            else:
                old.fold(check)
            full = len(self.deferred) > DEFERRED_LIMIT
        if full:
            self.report_deferred()

    def report_deferred(self) -> None:
        """Read every queued check (``defer_check``) in one device-to-host transfer, empty the queue, and raise
        the first failed check's error (its message counts the others). ``ShardArray`` calls it where a value is
        read (``numpy()``, and through it ``float``, ``int``, ``bool``, ``item``, ``repr``)."""
        with self._deferred_lock:
            checks = list(self.deferred.values())
            self.deferred.clear()
        owners = [c for c in checks for _ in c.parts]
        host = self.backend.read_together([part for c in checks for part in c.parts])
        if not host:
            return
        values: dict[int, list[Any]] = {id(c): [] for c in checks}
        for c, h in zip(owners, host):
            values[id(c)].append(h)
        errors = [e for e in (c.verdict(values[id(c)]) for c in checks) if e is not None]
        if len(errors) > 1:
            raise type(errors[0])(f"{errors[0]} ({len(errors) - 1} more check(s) queued since then failed too)")
        if errors:
            raise errors[0]

    # ----------------------------------------------------------------- dunder
    @property
    def process_index(self) -> int:
        """This process's index in an SPMD job (0 on an emulated mesh), as ``jax.process_index()``."""
        return self.comm.rank if self.comm_kind == "mpi" else 0

    @property
    def local_device(self) -> int:
        """A device whose shard this process holds (the first one)."""
        return self.local_devices[0]

    def _key(self) -> tuple:
        return (self._names, self._sizes, self.backend.name, self.comm_kind, self.backend.gpus)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __copy__(self) -> Mesh:
        """A mesh is the devices and their communicator, not data: ``copy.copy`` gives the mesh itself."""
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Mesh:
        """``copy.deepcopy`` of anything holding a mesh (an array, a parameter tree) keeps the same mesh."""
        return self

    def __repr__(self) -> str:
        inner = ", ".join(f"{a!r}: {s}" for a, s in zip(self._names, self._sizes))
        extra = f", backend={self.backend.name!r}" if self.backend.name != "numpy" else ""
        extra += f", devices={list(self.backend.gpus)}" if self.backend.gpus is not None else ""
        extra += f", comm={self.comm_kind!r}" if self.comm_kind != "emulated" else ""
        rules = f", rules={ {k: v if len(v) > 1 else v[0] for k, v in self.rules.items()} }" if self.rules else ""
        return f"Mesh({{{inner}}}{extra}{rules})"


def _device_index(value: Any, what: str) -> int:
    """``value`` as an integer device id or coordinate (NumPy integers too); ``MeshError`` otherwise."""
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise MeshError(f"{what}: a device id or coordinate is an integer; got {type(value).__name__}") from None


def _cupy_on(gpus: tuple[int, ...]) -> Any:
    return on_devices(gpus)


def _spmd_gpus(world: Any, gpus: tuple[int, ...] | None, size: int) -> tuple[int, ...]:
    """Under MPI, every entry is this process's GPU: ``devices[rank]``, else its local rank modulo the GPU count."""
    rank = world.Get_rank()
    if gpus is not None:
        return (gpus[rank],) * size
    from mpi4py import MPI

    node = world.Split_type(MPI.COMM_TYPE_SHARED)  # the processes on this node
    local = node.Get_rank()
    node.Free()
    return (local % import_cupy().cuda.runtime.getDeviceCount(),) * size
