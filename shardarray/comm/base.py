"""The Communicator interface: the only place collectives happen.

Buffers are passed as a sequence indexed by device id (one entry per device
of the mesh). Groups run along ``axes`` (see ``Mesh.groups``): devices that
share every other coordinate, ordered by their coordinates along ``axes``,
first axis major. Every call appends one record to the active comm logs.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from ..backend.classlist import ClassList
from ..errors import CommError, MeshError
from .log import record


class MeshView(Protocol):
    """What a communicator reads of its mesh: ``sa.Mesh`` is one. (The mesh builds its communicator, so the
    communicators name the mesh by this shape instead of importing it: nothing in ``comm`` imports upward.)"""

    backend: Any
    local_devices: tuple[int, ...]

    @property
    def shape(self) -> dict[str, int]: ...

    @property
    def axis_names(self) -> tuple[str, ...]: ...

    @property
    def size(self) -> int: ...

    def axis_size(self, axis: str) -> int: ...

    def axes_size(self, axes: Iterable[str]) -> int: ...

    def groups(self, axes: Any) -> tuple[tuple[int, ...], ...]: ...

    def group_array(self, axes: Any) -> np.ndarray: ...

    def replica_classes(self, axes: Iterable[str]) -> tuple[tuple[int, tuple[int, ...]], ...]: ...


REDUCE_OPS = ("sum", "max", "min")
_DTYPE_NAMES: dict[Any, str] = {}  # the comm log's dtype strings, by dtype


class Communicator(ABC):
    """Collectives over mesh-axis subgroups."""

    #: every collective first compares the job's header over ``COMM_WORLD`` (``comm.header.exchange_header``): an error
    #: that leaves an op of this mesh on some processes only is told to the others there (``fail_together``). True for
    #: ``MpiCommunicator`` only: an emulated mesh's processes may raise on their own, NCCL's collectives pay no header
    job_header: ClassVar[bool] = False

    def __init__(self, mesh: MeshView) -> None:
        # held weakly: the mesh holds its communicator, and a cycle would leave every mesh that goes out of use
        # (the planner makes one per op it prices) to the garbage collector
        self._mesh = weakref.ref(mesh)

    @property
    def mesh(self) -> MeshView:
        """The mesh this communicator belongs to (it lives as long as the mesh is used)."""
        mesh = self._mesh()
        if mesh is None:
            raise CommError("this communicator's mesh is gone: keep the mesh, and reach its collectives as mesh.comm")
        return mesh

    def _log(self, op: str, axes: tuple[str, ...], shards: Sequence[Any], devices: Sequence[int] | None = None) -> int:
        """Record one collective; returns the group size (1 means nothing to do)."""
        n = self.mesh.axes_size(axes)
        if n > 1:
            candidates: Iterable[Any]
            if isinstance(shards, ClassList):  # meta: one candidate per class, in order of its first device
                index = shards.index if devices is None else shards.index[np.asarray(devices, dtype=np.intp)]
                u, first = np.unique(index, return_index=True)
                candidates = (shards.values[c] for c in u[np.argsort(first, kind="stable")].tolist())
            else:  # a plain loop: the first of the largest buffers, as max() gives
                candidates = shards if devices is None else [shards[d] for d in devices]
            biggest: Any  # None until the loop sees the first candidate (a group of n > 1 has some)
            biggest, most = None, -1
            for s in candidates:
                if s.size > most:
                    biggest, most = s, s.size
            dt = biggest.dtype
            name = _DTYPE_NAMES.get(dt)
            if name is None:  # str(dtype) builds the name from NumPy's type hierarchy: once per dtype
                name = _DTYPE_NAMES[dt] = str(dt)
            record(op, axes, n, int(biggest.size), dt.itemsize, name)
        return n

    def _rooted(self, axes: tuple[str, ...], root: int) -> int:
        """The group size along ``axes`` of a broadcast or reduce to member ``root``, after checking ``root``."""
        n = self.mesh.axes_size(axes)
        if not 0 <= root < n:
            raise MeshError(f"root {root} is outside the groups of size {n} along axes {axes} of mesh {self.mesh}")
        return n

    def assemble(
        self,
        shards: Sequence[Any],
        slices: Sequence[tuple[slice, ...]],
        shape: tuple[int, ...],
        dtype: Any,
        used_axes: Any,
    ) -> np.ndarray:
        """The global NumPy value from the shards (``slices[d]``: device d's block), on every process."""
        backend = self.mesh.backend
        out = np.empty(shape, dtype=dtype)
        for rep, _ in self.mesh.replica_classes(used_axes):
            out[slices[rep]] = backend.to_numpy(shards[rep])
        return out

    def check_spmd(
        self,
        what: str,
        sizes: Mapping[str, int],
        dtype: Any,
        *,
        layout: Any = None,
        values: Mapping[str, Any] | None = None,
        failure: BaseException | None = None,
    ) -> None:
        """Check that every process of an SPMD job makes the same array here (a no-op in one process).

        Under ``comm="mpi"`` the processes compare ``what``, the dim sizes,
        the dtype, ``layout`` (a ``Layout`` or ``{dim: axes}``, when given)
        and ``values`` (the arguments that decide the data, compared by their
        ``repr``: a fill value, a seed and bounds) in one small allgather, always, and each raises ``CommError`` naming
        which processes differ; creation functions call it so that arrays of
        different global sizes or layouts are caught where they are made, not
        at a later collective (or never, when only partial sums of the same
        shape meet). ``failure``, this process's error making the array,
        travels in the same allgather: every process then raises the lowest
        failing process's error (the same class and message), so none goes
        on alone; in one process it is raised as it is.

        Example:
            >>> mesh = sa.Mesh({"row": 2, "col": 2})
            >>> mesh.comm.check_spmd("asarray", {"batch": 8}, "float32")   # one process: nothing to compare
        """
        if failure is not None:
            raise failure

    def host_reduce(self, value: float, op: str) -> float:
        """A Python number reduced over every process of the job (itself on an emulated mesh)."""
        return value

    @abstractmethod
    def allreduce(self, shards: Sequence[Any], axes: tuple[str, ...], op: str = "sum") -> list[Any]:
        """Every device gets the reduction (sum, max or min) of its group's buffers."""

    @abstractmethod
    def allgather(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        """Every device gets its group's buffers concatenated along array axis ``dim``."""

    @abstractmethod
    def reduce_scatter(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int, op: str = "sum") -> list[Any]:
        """Member i of each group gets chunk i (along ``dim``, nested ceil-chunks over ``axes``) of the reduction."""

    @abstractmethod
    def alltoall(self, shards: Sequence[Any], axes: tuple[str, ...], split_dim: int, concat_dim: int) -> list[Any]:
        """Member j sends chunk i of ``split_dim`` to member i; receivers concatenate along ``concat_dim``."""

    @abstractmethod
    def broadcast(self, shards: Sequence[Any], axes: tuple[str, ...], root: int) -> list[Any]:
        """Every device gets the buffer of member ``root`` of its group."""

    @abstractmethod
    def reduce(self, shards: Sequence[Any], axes: tuple[str, ...], root: int, op: str = "sum") -> list[Any]:
        """Member ``root`` of each group gets the reduction; the others keep their buffers."""

    def alltoallv(self, send: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        """Personalized exchange of pieces of any size within each group along ``axes``.

        ``send[d]`` is, for device ``d``, a list with one array per member of
        its group (in member order; possibly empty along ``dim``), all of one
        shape except along array axis ``dim``; ``None`` for a device this
        process does not hold. Member ``i`` gets the pieces the members sent
        it, concatenated in member order along ``dim``. Logged as one
        ``"alltoall"`` record whose ``elements`` is the largest number of
        elements any device sends to the *other* members of its group (the
        piece a device addresses to itself never travels), so the logged
        volume is the real per-device traffic of an uneven exchange.

        Example:
            >>> mesh = sa.Mesh({"row": 2, "col": 2})
            >>> send = [[np.zeros((1, 3)), np.zeros((2, 3))] for _ in range(4)]
            >>> [s.shape for s in mesh.comm.alltoallv(send, ("row",), 0)]
            [(2, 3), (2, 3), (4, 3), (4, 3)]
        """
        raise NotImplementedError(f"{type(self).__name__} has no alltoallv")

    def alltoallv_boxes(
        self,
        send: Sequence[Any],
        axes: tuple[str, ...],
        boxes: Sequence[Any],
        shapes: Sequence[Any],
        dtype: Any,
    ) -> list[Any]:
        """Personalized exchange of N-D pieces that land directly in boxes of the receivers' new blocks.

        ``send[d]`` is, for device ``d``, one list per member ``i`` of its
        group along ``axes`` (member order) of the arrays ``d`` sends ``i``
        (``None`` for a device this process does not hold); ``boxes[d]`` is,
        for ``d`` as receiver, one list per member ``j`` of the index tuples
        (of slices) where ``j``'s arrays go in ``d``'s new block, in the order
        ``j`` sends them, each of its array's shape; ``shapes[d]`` is that
        block's shape. Entries no box covers are zero. Every process computes
        the same plan, so only the arrays' bytes travel. Logged as one
        ``"alltoall"`` record, ``elements`` the most any device sends to the
        *other* members. Devices whose ``send`` lists are the same object
        (replicas along other mesh axes) may share one result.

        This generic form packs each member's arrays into one flat buffer,
        runs ``alltoallv`` on the flat buffers (MPI, NCCL) and unpacks them
        into the boxes; the emulated communicator writes every array straight
        into its box (one copy per entry).

        Example:
            >>> mesh = sa.Mesh({"row": 2, "col": 2})
            >>> send = [[[np.full((1, 2), d + 1.0)], [np.full((1, 2), -d - 1.0)]] for d in range(4)]
            >>> boxes = [[[(slice(0, 1), slice(0, 2))], [(slice(1, 2), slice(1, 3))]] for _ in range(4)]
            >>> mesh.comm.alltoallv_boxes(send, ("row",), boxes, [(2, 3)] * 4, "float64")[0]   # from devices 0, 2
            array([[1., 1., 0.],
                   [0., 3., 3.]])
        """
        xp = self.mesh.backend.xp
        dtype = np.dtype(dtype)

        def flat(parts: Sequence[Any]) -> Any:
            if not parts:
                return xp.zeros((0,), dtype=dtype)
            return xp.concatenate([p.reshape(-1) for p in parts]) if len(parts) > 1 else parts[0].reshape(-1)

        scope = self.mesh.backend.scope
        packed: list[Any] = [None] * len(send)
        for d, s in enumerate(send):
            if s is not None:
                with scope(d):  # each device's buffers on its own GPU
                    packed[d] = [flat(parts) for parts in s]
        recv = self.alltoallv(packed, axes, 0)
        out: list[Any] = [None] * len(send)
        for d, buf in enumerate(recv):
            if buf is None:
                continue
            parts, pos = [], 0
            for box in (box for member in boxes[d] for box in member):
                shape = box_shape(box, shapes[d])
                count = int(np.prod(shape))
                parts.append((box, buf[pos : pos + count].reshape(shape)))
                pos += count
            with scope(d):
                out[d] = fill_block(xp, parts, shapes[d], dtype)
        return out

    def _log_alltoallv(self, send: Sequence[Any], axes: tuple[str, ...], dtype: Any = None) -> int:
        """Record an alltoallv: elements = the most any device sends to other members.

        A piece is an array, or a list of arrays (``alltoallv_boxes``).
        """
        n = self.mesh.axes_size(axes)
        if n > 1:
            most = 0
            for group in self.mesh.groups(axes):
                for pos, d in enumerate(group):
                    pieces = send[d]
                    if pieces is None:
                        continue
                    if dtype is None:
                        dtype = pieces[0].dtype
                    most = max(most, sum(_size(p) for j, p in enumerate(pieces) if j != pos))
            if dtype is not None:
                record("alltoall", axes, n, most, np.dtype(dtype).itemsize, str(np.dtype(dtype)), sent=True)
        return n


def _size(piece: Any) -> int:
    """Elements of an array, or of a list of arrays."""
    return sum(int(p.size) for p in piece) if isinstance(piece, (list, tuple)) else int(piece.size)


def fill_block(xp: Any, parts: Sequence[tuple[Any, Any]], shape: Sequence[int], dtype: Any) -> Any:
    """A new block of ``shape`` with each ``(box, piece)`` of ``parts`` written at its box, zeros elsewhere.

    A block that is exactly one piece at its origin is that piece (no copy;
    a view when the piece is one). Boxes must not overlap.
    """
    shape = tuple(shape)
    if len(parts) == 1:
        box, piece = parts[0]
        if tuple(piece.shape) == shape and all(s.start in (0, None) and s.step in (1, None) for s in box):
            return piece if piece.dtype == dtype else piece.astype(dtype)
    covered = sum(int(piece.size) for _, piece in parts)
    block = (xp.empty if covered == int(np.prod(shape)) else xp.zeros)(shape, dtype=dtype)
    if hasattr(block, "__setitem__"):  # meta shapes: nothing to write
        for box, piece in parts:
            block[box] = piece
    return block


def box_shape(box: Sequence[slice], shape: Sequence[int]) -> tuple[int, ...]:
    """The shape ``array[box]`` has for an array of ``shape`` (``box``: one slice per axis, possibly fewer)."""
    return tuple(len(range(*s.indices(n))) for s, n in zip(box, shape)) + tuple(shape[len(box) :])
