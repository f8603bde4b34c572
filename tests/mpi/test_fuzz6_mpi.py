"""Regressions of the communicators found by the sixth MPI fuzzing round (one process failing or out of step).

* NCCL's SPMD set-up: the first member of each axis group makes the group's unique id and broadcasts it. When
  ``get_unique_id`` raised there, that process raised it raw and the other members waited in the broadcast
  forever. The failure is now broadcast in the id's place, and every member raises one ``CommError``.
* The job-wide checks (``comm.spmd.enter``: array creation, ``numpy()``) allgather over ``COMM_WORLD``. A process
  out of step, in a collective of the program's own on ``COMM_WORLD`` where the others check (after an error caught
  on that process only), sent them a payload of another shape: they raised NumPy-free but raw ``ValueError``s
  (tuple unpacking) from inside the check. They now raise ``CommError`` naming the process out of step.

Run inside a 4-process job (``mpiexec -n 4 python -m pytest -q tests/mpi``); skipped otherwise.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from spmd import WORLD

import shardarray as sa

pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4 (see .ci/run)")
SHAPES = [{"x": 4}, {"row": 2, "col": 2}]


def _failing_nccl(rank: int) -> types.ModuleType:
    """``fake_nccl_mpi`` whose ``get_unique_id`` raises on the job's process ``rank``."""
    import fake_nccl_mpi
    from mpi4py import MPI

    lib = types.ModuleType("failing_nccl")
    lib.__dict__.update({k: v for k, v in vars(fake_nccl_mpi).items() if not k.startswith("__")})

    def get_unique_id() -> tuple:
        if MPI.COMM_WORLD.Get_rank() == rank:
            raise RuntimeError("NCCL error: unhandled system error (no network interface)")
        return fake_nccl_mpi.get_unique_id()

    lib.get_unique_id = get_unique_id  # type: ignore[attr-defined]
    return lib


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_nccl_unique_id_failure_on_one_process_raises_comm_error_on_every_member(shape):
    from mpi4py import MPI

    from shardarray.comm.nccl import NcclCommunicator

    mesh = sa.Mesh(shape, comm="mpi", backend="numpy")
    mesh.comm = NcclCommunicator(mesh, lib=_failing_nccl(0), world=MPI.COMM_WORLD)
    axes = tuple(shape)
    x = sa.asarray(np.arange(16.0).reshape(8, 2), dims=("a", "b"), mesh=mesh, layout={"a": axes})
    with pytest.raises(sa.CommError, match="get_unique_id") as info:
        x.relayout({"b": axes})  # an alltoall over every axis (one group): the first collective makes the communicators
    assert "no network interface" in str(info.value) and "Several ranks on one GPU" not in str(info.value)
    mesh.comm = NcclCommunicator(mesh, lib=_failing_nccl(-1), world=MPI.COMM_WORLD)  # a working NCCL again
    np.testing.assert_array_equal(x.relayout({"b": axes}).numpy(), np.arange(16.0).reshape(8, 2))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_process_out_of_step_in_its_own_world_collective_gives_comm_error(shape):
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    mesh = sa.Mesh(shape, comm="mpi", backend="numpy")
    if world.Get_rank() == 0:  # the program's own allgather, where the others check an array they make
        seen = world.allgather(("ok", "", ""))
        assert len(seen) == 4
    else:
        with pytest.raises(sa.CommError, match=r"process\(es\) \[0\].*out of step"):
            sa.asarray(np.zeros(4), dims=("a",), mesh=mesh)
    from shardarray.comm import spmd

    spmd._State.seq = world.allreduce(spmd._State.seq, op=MPI.MAX)  # process 0 skipped the check: count it too
    x = sa.asarray(np.arange(8.0), dims=("a",), mesh=mesh, layout={"a": tuple(shape)})  # in step again
    assert float(x.sum()) == 28.0
