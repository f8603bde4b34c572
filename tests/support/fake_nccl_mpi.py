"""A stand-in for ``cupy.cuda.nccl`` across MPI processes: NCCL's calls carried out with mpi4py on host memory.

For NcclCommunicator's SPMD mode (one device per process, communicators from a
unique id broadcast over MPI) under ``mpiexec``. ``NcclCommunicator(n, id, rank)``
is collective over the whole job, as every process makes its group's
communicator at the same point: it splits COMM_WORLD by the id. Calls are
queued between groupStart and groupEnd and then run in order; send/recv are
nonblocking MPI messages completed together.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
from mpi4py import MPI

from fake_nccl import (NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64, NCCL_INT8, NCCL_INT32, NCCL_INT64,  # noqa: F401
                       NCCL_MAX, NCCL_MIN, NCCL_SUM, NCCL_UINT8, NCCL_UINT32, NCCL_UINT64, NcclError, _view)

available = True
_OPS = {NCCL_SUM: MPI.SUM, NCCL_MAX: MPI.MAX, NCCL_MIN: MPI.MIN}
_DEPTH = [0]
_QUEUE: list[tuple[Any, str, tuple]] = []
_IDS = [0]


def get_unique_id() -> tuple:
    _IDS[0] += 1
    return tuple(f"{MPI.COMM_WORLD.Get_rank()}:{_IDS[0]}".encode().ljust(128, b"\0"))


def groupStart() -> None:
    _DEPTH[0] += 1


def groupEnd() -> None:
    _DEPTH[0] -= 1
    if _DEPTH[0] == 0:
        queue = list(_QUEUE)
        _QUEUE.clear()
        requests = []
        for comm, kind, args in queue:
            requests += comm.run(kind, args)
        MPI.Request.Waitall(requests)


def _wide(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) if a.dtype == np.float16 else a


class NcclCommunicator:
    def __init__(self, ndev: int, uid: tuple, rank: int) -> None:
        color = zlib.crc32(bytes(b & 0xFF for b in uid)) & 0x7FFFFFFF
        self.mpi = MPI.COMM_WORLD.Split(color, rank)
        if self.mpi.Get_size() != ndev or self.mpi.Get_rank() != rank:
            raise NcclError(f"communicator of {self.mpi.Get_size()} ranks, expected {ndev}")

    def abort(self) -> None:
        """``ncclCommAbort``: this process stops using the communicator (peers are not told, as with NCCL)."""
        self.aborted = True

    def _post(self, kind: str, *args: Any) -> None:
        if getattr(self, "aborted", False):
            raise NcclError("a call on an aborted communicator; make a new one")
        if _DEPTH[0] == 0:
            MPI.Request.Waitall(self.run(kind, args))
        else:
            _QUEUE.append((self, kind, args))

    def run(self, kind: str, args: tuple) -> list:
        c = self.mpi
        if kind == "allReduce":
            s, r, n, t, op = args
            out = _wide(_view(s, n, t)).copy()
            c.Allreduce(MPI.IN_PLACE, out, op=_OPS[op])
            _view(r, n, t)[:] = out
        elif kind == "allGather":
            s, r, n, t = args
            c.Allgather(_view(s, n, t).copy(), _view(r, n * c.Get_size(), t))
        elif kind == "reduceScatter":
            s, r, n, t, op = args
            out = _wide(_view(s, n * c.Get_size(), t)).copy()
            c.Allreduce(MPI.IN_PLACE, out, op=_OPS[op])
            _view(r, n, t)[:] = out[c.Get_rank() * n:(c.Get_rank() + 1) * n]
        elif kind == "broadcast":
            s, r, n, t, root = args
            buf = _view(s, n, t).copy() if c.Get_rank() == root else np.empty_like(_view(r, n, t))
            c.Bcast(buf, root=root)
            _view(r, n, t)[:] = buf
        elif kind == "reduce":
            s, r, n, t, op, root = args
            out = _wide(_view(s, n, t)).copy()
            c.Allreduce(MPI.IN_PLACE, out, op=_OPS[op])
            if c.Get_rank() == root:
                _view(r, n, t)[:] = out
        elif kind == "send":
            b, n, t, peer = args
            return [c.Isend(_view(b, n, t).copy(), dest=peer)]
        elif kind == "recv":
            b, n, t, peer = args
            return [c.Irecv(_view(b, n, t), source=peer)]
        return []

    def allReduce(self, s, r, n, t, op, stream): self._post("allReduce", s, r, n, t, op)
    def allGather(self, s, r, n, t, stream): self._post("allGather", s, r, n, t)
    def reduceScatter(self, s, r, n, t, op, stream): self._post("reduceScatter", s, r, n, t, op)
    def broadcast(self, s, r, n, t, root, stream): self._post("broadcast", s, r, n, t, root)
    def reduce(self, s, r, n, t, op, root, stream): self._post("reduce", s, r, n, t, op, root)
    def send(self, b, n, t, peer, stream): self._post("send", b, n, t, peer)
    def recv(self, b, n, t, peer, stream): self._post("recv", b, n, t, peer)
