"""Reductions and single-element reads under ``mpiexec -n 4``, against the emulated mesh and NumPy.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_reductions.py``.
Found by an MPI fuzzer: MPI's MAX and MIN dropped a NaN depending on the order the operands met in, so
``max`` of ``[nan, 2, 3, 4]`` split over two processes was 4.0 on one and NaN on the other; and a broadcast of a
0-d block (``x[5]``, ``isel``, ``median``) failed on every process with NumPy's ``ValueError``.
"""

from __future__ import annotations

import numpy as np
import pytest
from spmd import SHAPES, both, close, needs_four

import shardarray as sa
import shardarray.array_api as xp

pytestmark = needs_four


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("at", [0, 5, 11])
def test_max_and_min_carry_nan_on_every_process(shape, dtype, at):
    host = np.arange(24.0).reshape(12, 2)
    host[at, 1] = np.nan

    def run(mesh):
        x = sa.asarray(host.astype(dtype), dims=("i", "j"), mesh=mesh, layout={"i": mesh.axis_names})
        return [x.max("i").astype("float64").numpy(), x.min("i").astype("float64").numpy(),
                np.asarray(x.max().astype("float64").numpy())]

    emulated, mpi = both(shape, run)
    close(emulated, mpi)
    with np.errstate(invalid="ignore"):  # (NumPy's bfloat16 maximum says so of a NaN)
        np.testing.assert_array_equal(mpi[0], np.max(host.astype(dtype), axis=0).astype(np.float64))
    assert np.isnan(mpi[2])
    values = sa.Mesh(shape, comm="mpi").comm.world.allgather(mpi[2].tobytes())
    assert len(set(values)) == 1  # the same bits on every process


@pytest.mark.parametrize("shape", SHAPES)
def test_host_reduce_carries_nan(shape):
    comm = sa.Mesh(shape, comm="mpi").comm
    rank = comm.world.Get_rank()
    for op in ("max", "min"):
        got = comm.host_reduce(float("nan") if rank == 2 else float(rank), op)
        assert np.isnan(got)
        assert comm.host_reduce(float(rank), op) == (3.0 if op == "max" else 0.0)


@pytest.mark.parametrize("shape", SHAPES)
def test_single_elements_of_a_split_array(shape):
    host = np.arange(9.0) * 1.5

    def run(mesh):
        with sa.default_mesh(mesh):
            a = xp.asarray(host)
            return [a[5].numpy(), a[-1].numpy(), xp.median(a).numpy(), xp.quantile(a, 0.3).numpy(),
                    sa.asarray(host, dims=("i",), mesh=mesh, layout={"i": mesh.axis_names}).isel(i=4).numpy()]

    emulated, mpi = both(shape, run)
    close(emulated, mpi)
    np.testing.assert_array_equal(mpi[:2], [host[5], host[-1]])
    assert float(mpi[2]) == np.median(host) and float(mpi[4]) == host[4]


def test_a_mesh_per_step_does_not_run_out_of_communicators():
    """Each mesh split its own sub-communicators, never freed (freeing is collective): a program that made a
    mesh per step failed after about 2,000 with MPI's "Too many communicators". Meshes with the same groups
    share them now."""
    for _ in range(2100):
        mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
        x = sa.asarray(np.arange(16.0).reshape(4, 4), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
        got = x.relayout({"a": "col"}).numpy()
    np.testing.assert_array_equal(got, np.arange(16.0).reshape(4, 4))
