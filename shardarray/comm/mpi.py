"""The MPI Communicator: SPMD, one process per mesh device (``sa.Mesh(shape, comm="mpi")``).

Run a script under ``mpiexec -n <mesh size>`` (or ``srun``): process ``rank``
owns device ``rank`` of the mesh and holds only that shard; the shard lists the
ops pass around have ``None`` for the other devices. Each axis group is an
``MPI.Comm.Split`` of ``COMM_WORLD`` made once and cached, with members ranked
by their position along the axes, so ``root`` means the same member as on an
emulated mesh. Data moves with buffer-based calls (``Allreduce``,
``Allgatherv``, ``Reduce_scatter``, ``Alltoallv``, ``Bcast``, ``Reduce``) on
contiguous NumPy buffers; only small shape tuples travel pickled. float16 is
reduced in float32 (MPI has no half-precision sum).

An uncaught exception on any rank aborts the whole job (``MPI.COMM_WORLD.Abort``)
instead of leaving the other ranks waiting in a collective.

Shards must be NumPy arrays (``backend="numpy"``); GPU shards across processes
go through NCCL (``NcclCommunicator``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import BackendError, MeshError
from ..layout import group_chunk
from .base import REDUCE_OPS, Communicator
from .log import _ACTIVE, record


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "sa.Mesh(..., comm='mpi') needs mpi4py and an MPI library: pip install 'shardarray[mpi]' "
            "(mpi4py and the mpich wheel), then run the script under mpiexec -n <mesh size>"
        ) from e
    return MPI


_HOOKED = False


def _abort_on_uncaught_exception(MPI: Any) -> None:
    """Make an uncaught exception on one rank end the job instead of hanging the others."""
    global _HOOKED
    if _HOOKED:
        return
    previous = sys.excepthook

    def hook(kind: Any, value: Any, tb: Any) -> None:
        previous(kind, value, tb)
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

    sys.excepthook = hook
    _HOOKED = True


def gather_blocks(
    world: Any, local: np.ndarray, slices: Sequence[tuple[slice, ...]], shape: tuple[int, ...], dtype: Any
) -> np.ndarray:
    """The global array on every rank from each rank's block (``slices[rank]``), with one Allgatherv."""
    local = np.ascontiguousarray(local, dtype=dtype)
    counts = [int(np.prod([len(range(*s.indices(n))) for s, n in zip(sl, shape)])) for sl in slices]
    flat = np.empty(sum(counts), dtype=dtype)
    world.Allgatherv(local.reshape(-1).view(np.uint8), [flat.view(np.uint8), [c * flat.itemsize for c in counts]])
    out = np.empty(shape, dtype=dtype)
    start = 0
    for sl, c in zip(slices, counts):
        out[sl] = flat[start:start + c].reshape(out[sl].shape)
        start += c
    return out


def mpi_world(mesh: Any) -> Any:
    """``MPI.COMM_WORLD`` after checking that the job has one process per mesh device.

    Also makes an uncaught exception on any rank abort the whole job.
    """
    MPI = _mpi()
    world = MPI.COMM_WORLD
    if world.Get_size() != mesh.size:
        raise MeshError(
            f"a mesh with comm='mpi' needs one process per device: mesh {mesh.shape} has {mesh.size} devices but "
            f"the job has {world.Get_size()} process(es); run it as mpiexec -n {mesh.size} python <script>"
        )
    _abort_on_uncaught_exception(MPI)
    return world


def log_spmd(world: Any, op: str, axes: tuple[str, ...], n: int, local: Any) -> None:
    """Record one collective of an SPMD job: the largest buffer over every process (the critical path)."""
    if n > 1 and _ACTIVE:
        size = int(world.allreduce(int(local.size), op=_mpi().MAX))
        record(op, axes, n, size, local.dtype.itemsize, str(local.dtype))


def reduce_op(op: str) -> Any:
    """The MPI reduction for ``op`` (sum, max or min)."""
    MPI = _mpi()
    ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
    if op not in ops:
        raise ValueError(f"unknown reduction {op!r}; one of {REDUCE_OPS}")
    return ops[op]


class MpiCommunicator(Communicator):
    """Collectives over MPI sub-communicators, one per axis group (see the module docstring)."""

    def __init__(self, mesh: Any) -> None:
        super().__init__(mesh)
        self.world = mpi_world(mesh)
        self.rank = self.world.Get_rank()
        if mesh.backend.name != "numpy":
            raise BackendError(
                f"comm='mpi' moves NumPy shards; got backend {mesh.backend.name!r}. "
                f"Use backend='numpy' (GPU shards across processes use NCCL)"
            )
        self._subs: dict[tuple[str, ...], tuple[Any, int]] = {}

    # ---------------------------------------------------------------- helpers
    def _sub(self, axes: tuple[str, ...]) -> tuple[Any, int]:
        """``(communicator of this rank's group along axes, this rank's position in it)``."""
        found = self._subs.get(axes)
        if found is None:
            for color, group in enumerate(self.mesh.groups(axes)):
                if self.rank in group:
                    pos = group.index(self.rank)
                    found = (self.world.Split(color, pos), pos)
                    break
            self._subs[axes] = found
        return found  # type: ignore[return-value]

    _op = staticmethod(reduce_op)

    def _log(self, op: str, axes: tuple[str, ...], shards: Sequence[Any], devices: Sequence[int] | None = None) -> int:
        n = self.mesh.axes_size(axes)
        log_spmd(self.world, op, axes, n, shards[self.rank])
        return n

    def _out(self, value: Any) -> list[Any]:
        out: list[Any] = [None] * self.mesh.size
        out[self.rank] = value
        return out

    @staticmethod
    def _wide(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x, dtype=np.float32 if x.dtype == np.float16 else x.dtype)

    # ------------------------------------------------------------ collectives
    def host_reduce(self, value: float, op: str) -> float:
        return self.world.allreduce(value, op=self._op(op))

    def assemble(
        self, shards: Sequence[Any], slices: Sequence[tuple[slice, ...]], shape: tuple[int, ...], dtype: Any,
        used_axes: Any,
    ) -> np.ndarray:
        return gather_blocks(self.world, shards[self.rank], slices, shape, dtype)

    def allreduce(self, shards: Sequence[Any], axes: tuple[str, ...], op: str = "sum") -> list[Any]:
        n = self._log("allreduce", axes, shards)
        if n == 1:
            return list(shards)
        sub, _ = self._sub(axes)
        x = shards[self.rank]
        send = self._wide(x)
        recv = np.empty_like(send)
        sub.Allreduce(send, recv, op=self._op(op))
        return self._out(recv.astype(x.dtype, copy=False))

    def allgather(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        n = self._log("allgather", axes, shards)
        if n == 1:
            return list(shards)
        sub, _ = self._sub(axes)
        x = shards[self.rank]
        front = np.ascontiguousarray(np.moveaxis(x, dim, 0))
        lengths = sub.allgather(front.shape[0])
        rest = int(np.prod(front.shape[1:]))
        recv = np.empty((sum(lengths),) + front.shape[1:], dtype=x.dtype)
        sub.Allgatherv(front.view(np.uint8).reshape(-1),
                       [recv.view(np.uint8).reshape(-1), [n_ * rest * x.itemsize for n_ in lengths]])
        return self._out(np.moveaxis(recv, 0, dim))

    def reduce_scatter(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int, op: str = "sum") -> list[Any]:
        n = self._log("reduce_scatter", axes, shards)
        if n == 1:
            return list(shards)
        sub, pos = self._sub(axes)
        x = shards[self.rank]
        front = self._wide(np.moveaxis(x, dim, 0))
        radix = [self.mesh.axis_size(a) for a in axes]
        size, rest = front.shape[0], int(np.prod(front.shape[1:]))
        bounds = [group_chunk(0, size, radix, i) for i in range(n)]
        recv = np.empty((bounds[pos][1] - bounds[pos][0],) + front.shape[1:], dtype=front.dtype)
        sub.Reduce_scatter(front.reshape(-1), recv.reshape(-1), [(hi - lo) * rest for lo, hi in bounds],
                           op=self._op(op))
        return self._out(np.moveaxis(recv.astype(x.dtype, copy=False), 0, dim))

    def alltoall(self, shards: Sequence[Any], axes: tuple[str, ...], split_dim: int, concat_dim: int) -> list[Any]:
        n = self._log("alltoall", axes, shards)
        if n == 1:
            return list(shards)
        sub, _ = self._sub(axes)
        x = shards[self.rank]
        radix = [self.mesh.axis_size(a) for a in axes]
        pieces = [np.ascontiguousarray(x[(slice(None),) * split_dim + (slice(*group_chunk(0, x.shape[split_dim],
                  radix, i)),)]) for i in range(n)]
        shapes = sub.alltoall([p.shape for p in pieces])
        send = np.concatenate([p.reshape(-1) for p in pieces]) if pieces else np.empty(0, x.dtype)
        recv_counts = [int(np.prod(s)) for s in shapes]
        recv = np.empty(sum(recv_counts), dtype=x.dtype)
        send_bytes = [p.size * x.itemsize for p in pieces]
        recv_bytes = [c * x.itemsize for c in recv_counts]
        sub.Alltoallv([send.view(np.uint8), send_bytes], [recv.view(np.uint8), recv_bytes])
        parts, start = [], 0
        for s, c in zip(shapes, recv_counts):
            parts.append(recv[start:start + c].reshape(s))
            start += c
        return self._out(np.concatenate(parts, axis=concat_dim))

    def broadcast(self, shards: Sequence[Any], axes: tuple[str, ...], root: int) -> list[Any]:
        n = self.mesh.axes_size(axes)
        self._check_root(root, axes, n)
        self._log("broadcast", axes, shards)
        if n == 1:
            return list(shards)
        sub, pos = self._sub(axes)
        x = shards[self.rank]
        shape, dtype = sub.bcast((x.shape, x.dtype.str) if pos == root else None, root=root)
        buf = np.ascontiguousarray(x) if pos == root else np.empty(shape, dtype=np.dtype(dtype))
        sub.Bcast(buf.view(np.uint8).reshape(-1), root=root)
        return self._out(buf)

    def reduce(self, shards: Sequence[Any], axes: tuple[str, ...], root: int, op: str = "sum") -> list[Any]:
        n = self.mesh.axes_size(axes)
        self._check_root(root, axes, n)
        self._log("reduce", axes, shards)
        if n == 1:
            return list(shards)
        sub, pos = self._sub(axes)
        x = shards[self.rank]
        send = self._wide(x)
        recv = np.empty_like(send) if pos == root else None
        sub.Reduce(send, recv, op=self._op(op), root=root)
        return self._out(recv.astype(x.dtype, copy=False) if pos == root else x)
