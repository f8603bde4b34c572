"""The processes that take part in a save or load: one (emulated meshes) or an MPI job (``comm="mpi"``).

Checkpoint files are written and read by processes, not devices: under MPI
process ``rank`` owns mesh device ``rank``; on an emulated mesh the one
process owns every device. Only small metadata crosses processes here (JSON
strings of checksums and error messages, sent as raw bytes with MPI's buffer
calls, never pickled); array data never moves between processes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..array import ShardArray
from ..comm import spmd
from ..errors import CheckpointError

_BYTES = SimpleNamespace(dtype=np.dtype(np.uint8))  # what spmd.enter compares of a metadata collective


class Procs:
    """``rank``/``size`` of the job and the few host-level collectives save and load need.

    Example:
        >>> p = Procs(None)          # one process (emulated mesh)
        >>> p.rank, p.size, p.allgather("x")
        (0, 1, ['x'])
    """

    def __init__(self, world: Any) -> None:
        self.world = world
        self.rank = 0 if world is None else world.Get_rank()
        self.size = 1 if world is None else world.Get_size()

    def barrier(self) -> None:
        if self.world is not None:
            spmd.enter(self.world, "checkpoint barrier", (), _BYTES)
            _wait(self.world.Ibarrier())

    def allgather(self, text: str) -> list[str]:
        """Every process's ``text``, in rank order (two MPI buffer allgathers: lengths, then bytes).

        Counted as one collective of the job (``comm.spmd.enter``), like every collective of the meshes: a
        process that never joins it (it exited, or only process 0 called ``save``) ends the job with a message
        naming it instead of leaving the others waiting forever.
        """
        if self.world is None:
            return [text]
        spmd.enter(self.world, "checkpoint metadata allgather", (), _BYTES)
        data = np.frombuffer(text.encode(), dtype=np.uint8)
        counts = np.zeros(self.size, dtype=np.int64)
        _wait(self.world.Iallgather(np.array([data.size], dtype=np.int64), counts))
        out = np.empty(int(counts.sum()), dtype=np.uint8)
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
        _wait(self.world.Iallgatherv(data, [out, counts.tolist(), displs.tolist(), _mpi_byte()]))
        return [out[int(o) : int(o) + int(n)].tobytes().decode() for o, n in zip(displs, counts)]

    def bcast(self, text: str) -> str:
        """Process 0's ``text`` on every process."""
        return self.allgather(text if self.rank == 0 else "")[0]

    def agree(self, error: str | None) -> None:
        """Raise ``CheckpointError`` on every process if any process had an error (so no process waits forever)."""
        if self.world is None:
            if error:
                raise CheckpointError(error)
            return
        errors = self.allgather(error or "")
        bad = [(r, e) for r, e in enumerate(errors) if e]
        if bad:
            raise CheckpointError("; ".join(f"process {r}: {e}" for r, e in bad))


def _wait(request: Any) -> None:
    """Wait for a non-blocking MPI request, sleeping between tests instead of spinning.

    A process that reaches a save's or load's barrier first would otherwise
    busy-poll (MPICH's default) and take CPU from the processes still
    reading or writing when there are more processes than cores; the sleeps
    (0.2 ms) add at most that much to each of the few metadata collectives.
    """
    while not request.Test():
        time.sleep(2e-4)


def _mpi_byte() -> Any:
    from mpi4py import MPI

    return MPI.BYTE


def procs_of(arrays: Iterable[ShardArray]) -> Procs:
    """The job of the arrays' meshes: MPI's world if any mesh is ``comm="mpi"``, else this process alone."""
    for x in arrays:
        world = getattr(x.mesh.comm, "world", None)
        if x.mesh.comm_kind == "mpi" and world is not None:
            return Procs(world)
    return Procs(None)
