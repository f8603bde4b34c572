"""The Communicator interface: the only place collectives happen.

Buffers are passed as a sequence indexed by device id (one entry per device
of the mesh). Groups run along ``axes`` (see ``Mesh.groups``): devices that
share every other coordinate, ordered by their coordinates along ``axes``,
first axis major. Every call appends one record to the active comm logs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MeshError
from .log import record

if TYPE_CHECKING:
    from ..mesh import Mesh

REDUCE_OPS = ("sum", "max", "min")


class Communicator(ABC):
    """Collectives over mesh-axis subgroups."""

    def __init__(self, mesh: Mesh) -> None:
        self.mesh = mesh

    def _log(self, op: str, axes: tuple[str, ...], shards: Sequence[Any], devices: Sequence[int] | None = None) -> int:
        """Record one collective; returns the group size (1 means nothing to do)."""
        n = self.mesh.axes_size(axes)
        if n > 1:
            ids = range(len(shards)) if devices is None else devices
            biggest = max((shards[d] for d in ids), key=lambda s: s.size)
            record(op, axes, n, int(biggest.size), biggest.dtype.itemsize, str(biggest.dtype))
        return n

    def _check_root(self, root: int, axes: tuple[str, ...], n: int) -> None:
        if not 0 <= root < n:
            raise MeshError(f"root {root} is outside the groups of size {n} along axes {axes} of mesh {self.mesh}")

    def assemble(
        self, shards: Sequence[Any], slices: Sequence[tuple[slice, ...]], shape: tuple[int, ...], dtype: Any,
        used_axes: Any,
    ) -> np.ndarray:
        """The global NumPy value from the shards (``slices[d]``: device d's block), on every process."""
        backend = self.mesh.backend
        out = np.empty(shape, dtype=dtype)
        for rep, _ in self.mesh.replica_classes(used_axes):
            out[slices[rep]] = backend.to_numpy(shards[rep])
        return out

    def check_spmd(self, what: str, sizes: Mapping[str, int], dtype: Any) -> None:
        """Check that every process of an SPMD job makes the same array here (a no-op in one process).

        Under ``comm="mpi"`` with ``SHARDARRAY_CHECK_SPMD=1`` the processes
        compare ``what``, the dim sizes and the dtype, and each raises
        ``CommError`` naming which processes differ; creation functions call
        it so that arrays of different global sizes are caught where they are
        made, not at a later collective (or never, when only partial sums of
        the same shape meet).

        Example:
            >>> mesh = sa.Mesh({"row": 2, "col": 2})
            >>> mesh.comm.check_spmd("asarray", {"batch": 8}, "float32")   # one process: nothing to compare
        """
        return None

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

    def _log_alltoallv(self, send: Sequence[Any], axes: tuple[str, ...]) -> int:
        """Record an alltoallv: elements = the most any device sends to other members."""
        n = self.mesh.axes_size(axes)
        if n > 1:
            most, dtype = 0, None
            for group in self.mesh.groups(axes):
                for pos, d in enumerate(group):
                    pieces = send[d]
                    if pieces is None:
                        continue
                    dtype = pieces[0].dtype if dtype is None else dtype
                    most = max(most, sum(int(p.size) for j, p in enumerate(pieces) if j != pos))
            if dtype is not None:
                record("alltoall", axes, n, most, np.dtype(dtype).itemsize, str(np.dtype(dtype)))
        return n
