"""Regressions of the communicators found by a differential fuzzer (MPI and NCCL meshes against the emulated one).

* MPI defines no SUM, MAX or MIN of ``C_BOOL``: a boolean ``max``/``min`` over a split dim, or a boolean einsum
  contracting a split dim (its pending sum: an allreduce or a reduce-scatter), raised ``CommError`` ("Invalid
  MPI_Op") under ``comm="mpi"``. Booleans now reduce with ``LOR``/``LAND`` (NumPy's ``True + True`` is ``True``).
* NCCL has no int16 type: every int16/uint16 collective (a relayout, ``numpy()`` of a split array, a sum over a
  split dim) raised ``DTypeError`` on NCCL meshes. They now travel as byte pairs and reduce in int32/uint32.

The MPI tests run inside a 4-process job (``mpiexec -n 4 python -m pytest -q tests/mpi``) and are skipped otherwise;
the one-process NCCL test (fake NCCL) runs outside MPI jobs.
"""

from __future__ import annotations

import fake_nccl
import numpy as np
import pytest
from nccl_meshes import nccl_mesh
from spmd import WORLD

import shardarray as sa

mpi4 = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4 (see .ci/run)")
one_process = pytest.mark.skipif(WORLD > 1, reason="one process drives every device (a mesh is SPMD under mpiexec)")
SHAPES = [{"x": 4}, {"row": 2, "col": 2}]


def _bool_program(mesh):
    """Boolean reductions over a split dim of uneven blocks (7 rows over 4 devices): values and comm log."""
    axes = tuple(mesh.axis_names)
    rng = np.random.default_rng(0)
    a = rng.random((7, 5)) < 0.3
    b = rng.random((7, 3)) < 0.3
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": axes})
    y = sa.asarray(b, dims=("a", "c"), mesh=mesh, layout={"a": axes})
    with sa.comm_log() as log:
        out = [
            sa.max(x, "a"),
            sa.min(x, "a"),
            sa.einsum(x, y, out=("b", "c")),  # a pending boolean sum, resolved by an allreduce
            sa.einsum(x, y, out=("b", "c"), layout={"b": axes}),  # ... by a reduce-scatter
        ]
        values = [np.asarray(o) for o in out]
    want = [a.max(0), a.min(0), np.einsum("ab,ac->bc", a, b), np.einsum("ab,ac->bc", a, b)]
    for v, w in zip(values, want):
        assert v.dtype == np.bool_
        np.testing.assert_array_equal(v, w)
    return values, [(r.op, r.axes, r.elements, r.dtype) for r in log.records]


@mpi4
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_boolean_reductions_over_a_split_dim_under_mpi_equal_the_emulated_mesh(shape):
    emulated, emulated_log = _bool_program(sa.Mesh(shape, comm="emulated", backend="numpy"))
    values, log = _bool_program(sa.Mesh(shape, comm="mpi", backend="numpy"))
    assert {r[0] for r in log} >= {"allreduce", "reduce_scatter"}
    assert log == emulated_log
    for v, e in zip(values, emulated):
        np.testing.assert_array_equal(v, e)


def _int16_program(mesh, dtype):
    """int16/uint16 through every kind of collective: relayouts, a gather, sums (wrapping) and max/min."""
    axes = tuple(mesh.axis_names)
    info = np.iinfo(dtype)
    a = np.random.default_rng(1).integers(info.min, info.max, size=(7, 6), endpoint=True).astype(dtype)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": axes})
    with sa.comm_log() as log:
        s = sa.sum(x, "a")  # promotes to int64/uint64, as NumPy does
        pending = sa.einsum(x, sa.ones(mesh, {"a": 7}, dtype=dtype, layout={"a": axes}), out=("b",))
        out = [
            x.numpy(),
            x.relayout({"b": axes}).numpy(),
            s.numpy(),
            pending.numpy(),  # an int16 allreduce: wraps as NumPy's int16 einsum does
            sa.einsum(x, sa.ones(mesh, {"a": 7}, dtype=dtype), out=("b",), layout={"b": axes}).numpy(),
            sa.max(x, "a").numpy(),
            sa.min(x, "a").numpy(),
            sa.sort(x, "a").numpy(),
        ]
    want = [a, a, a.sum(0), np.einsum("ab,a->b", a, np.ones(7, dtype)), np.einsum("ab,a->b", a, np.ones(7, dtype))]
    want += [a.max(0), a.min(0), np.sort(a, 0)]
    for v, w in zip(out, want):
        assert v.dtype == w.dtype
        np.testing.assert_array_equal(v, w)
    return out, [(r.op, r.axes, r.elements, r.dtype) for r in log.records]


@one_process
@pytest.mark.parametrize("dtype", ["int16", "uint16"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_int16_collectives_on_an_nccl_mesh_equal_the_emulated_mesh(shape, dtype):
    fake_nccl.reset()
    emulated, emulated_log = _int16_program(sa.Mesh(shape, comm="emulated", backend="numpy"), dtype)
    values, log = _int16_program(nccl_mesh(shape), dtype)
    assert not fake_nccl.hangs()
    assert log == emulated_log
    for v, e in zip(values, emulated):
        np.testing.assert_array_equal(v, e)


@mpi4
@pytest.mark.parametrize("dtype", ["int16", "uint16"])
def test_int16_collectives_on_an_nccl_spmd_mesh_equal_the_emulated_mesh(dtype):
    import fake_nccl_mpi
    from mpi4py import MPI

    from shardarray.comm.nccl import NcclCommunicator

    shape = {"row": 2, "col": 2}
    mesh = sa.Mesh(shape, comm="mpi", backend="numpy")
    mesh.comm = NcclCommunicator(mesh, lib=fake_nccl_mpi, world=MPI.COMM_WORLD)
    emulated, emulated_log = _int16_program(sa.Mesh(shape, comm="emulated", backend="numpy"), dtype)
    values, log = _int16_program(mesh, dtype)
    assert log == emulated_log
    for v, e in zip(values, emulated):
        np.testing.assert_array_equal(v, e)


CREATION_ON_ONE = {
    "asarray-dims": lambda m, bad: sa.asarray(np.zeros((8, 3)), dims=("a",) if bad else ("a", "b"), mesh=m),
    "asarray-layout": lambda m, bad: sa.asarray(np.zeros(8), dims=("a",), mesh=m, layout={"a": "nope" if bad else "x"}),
    "full-fill": lambda m, bad: sa.full(m, {"a": 8}, "x" if bad else 1.0),
    "full-dtype": lambda m, bad: sa.zeros(m, {"a": 8}, dtype="nope" if bad else "float32"),
    "uniform-bounds": lambda m, bad: sa.random.uniform(m, {"a": 8}, 0.0, float("inf") if bad else 1.0),
    "randint-dtype": lambda m, bad: sa.random.randint(m, {"a": 8}, 0, 3, dtype="float32" if bad else "int64"),
}


@mpi4
@pytest.mark.parametrize("case", sorted(CREATION_ON_ONE))
def test_a_creation_argument_bad_on_one_process_raises_on_every_process(case):
    """An argument that only process 1 finds bad (dims, layout, fill value, dtype, sample bounds) raised there
    alone: the others waited in the creation check, so a caught error left the job out of step. Every process now
    raises the error of process 1 (one class everywhere), and the job goes on in step."""
    mesh = sa.Mesh({"x": 4}, comm="mpi")
    bad = mesh.process_index == 1
    with pytest.raises(sa.ShardArrayError) as info:
        CREATION_ON_ONE[case](mesh, bad)
    kinds = mesh.comm.world.allgather(type(info.value).__name__)
    assert len(set(kinds)) == 1
    x = sa.asarray(np.arange(8.0), dims=("a",), mesh=mesh, layout={"a": "x"})  # still in step
    np.testing.assert_array_equal(x.numpy(), np.arange(8.0))


@mpi4
def test_a_checkpoint_whose_plain_values_differ_between_processes_is_refused_everywhere(shared_dir):
    """``save(p, {"x": x, "step": 3 or 4})`` with a step that differs on one process was written silently (process 0's
    value won). Every process now raises ``CheckpointError`` naming the key and both values."""
    mesh = sa.Mesh({"x": 4}, comm="mpi")
    x = sa.asarray(np.arange(8.0), dims=("a",), mesh=mesh, layout={"a": "x"})
    step = 4 if mesh.process_index == 1 else 3
    with pytest.raises(sa.CheckpointError, match=r"process 1 .*tree\['step'\]: 3 against 4"):
        sa.checkpoint.save(f"{shared_dir}/ck", {"x": x, "step": step})
    sa.checkpoint.save(f"{shared_dir}/ck", {"x": x, "step": 3})  # the same values: saved, in step
    back = sa.checkpoint.load(f"{shared_dir}/ck", mesh=mesh)
    assert back["step"] == 3
