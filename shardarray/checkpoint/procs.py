"""The processes that take part in a save or load: one (emulated meshes) or an MPI job (``comm="mpi"``).

Checkpoint files are written and read by processes, not devices: under MPI
process ``rank`` owns mesh device ``rank``; on an emulated mesh the one
process owns every device. Only small metadata crosses processes here (JSON
strings of checksums and error messages, sent as raw bytes with MPI's buffer
calls, never pickled); array data never moves between processes.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..array import ShardArray
from ..comm import spmd
from ..errors import CheckpointError
from ..mesh import Mesh

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
            spmd.leave()  # (the watchdog: no longer waiting in a collective)

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
        spmd.leave()  # (the watchdog: no longer waiting in a collective)
        return [out[int(o) : int(o) + int(n)].tobytes().decode() for o, n in zip(displs, counts)]

    def bcast(self, text: str) -> str:
        """Process 0's ``text`` on every process."""
        return self.allgather(text if self.rank == 0 else "")[0]

    def agree(self, error: str | BaseException | None, text: str = "") -> list[str]:
        """Every process's ``text`` (in rank order), or ``CheckpointError`` on every process if any had an error.

        One allgather carries the error flags and ``text`` together, so a check folded into a metadata exchange
        costs no extra collective. Every process raises the same error, naming each process that failed and
        why (the one that failed raises it from its own exception), so none goes on to wait forever in a
        collective the others skip. With one process an exception is re-raised as it is.

        Args:
            error: this process's failure: a message, an exception, or None.
            text: this process's metadata, returned from every process when none failed.
        """
        if self.world is None:
            if isinstance(error, BaseException):
                raise error
            if error:
                raise CheckpointError(error)
            return [text]
        said = [json.loads(s) for s in self.allgather(json.dumps([_message(error), text]))]
        bad = [(r, e) for r, (e, _) in enumerate(said) if e]
        if bad:
            cause = error if isinstance(error, BaseException) else None
            raise CheckpointError("; ".join(f"process {r}: {e}" for r, e in bad)) from cause
        return [t for _, t in said]


def _message(error: str | BaseException | None) -> str:
    """``error`` as one line of ``agree``'s message; an exception other than ``CheckpointError`` names its type."""
    if error is None or isinstance(error, str):
        return error or ""
    if isinstance(error, CheckpointError):
        return str(error) or "CheckpointError"
    return f"{type(error).__name__}: {error}"


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


def procs_in(*trees: Any) -> Procs:
    """The job of the first ``comm="mpi"`` mesh, or array's mesh, found in ``trees`` (dicts, lists, tuples), else
    this process alone.

    Looks through any tree without raising, so save and load know their processes before they check
    anything and can agree on the outcome of every check (a tree they refuse is walked here too).
    """
    todo, seen = list(trees), set()
    while todo:
        node = todo.pop()
        mesh = node.mesh if isinstance(node, ShardArray) else node
        if isinstance(mesh, Mesh) and mesh.comm_kind == "mpi" and getattr(mesh.comm, "world", None) is not None:
            return Procs(mesh.comm.world)
        if isinstance(node, (dict, list, tuple)) and id(node) not in seen:  # ``seen``: a tree that holds itself
            seen.add(id(node))
            todo.extend(node.values() if isinstance(node, dict) else node)
    return Procs(None)
