"""A bad matrix in one process's batch block: ``sa.linalg.LinAlgError`` on every process, and the job goes on.

The batch dim is split over the processes, so only the process holding the bad matrix sees its failure; the
processes agree (one host reduction) before raising, so none raises alone and leaves the others waiting at
their next collective. Runs only inside a 4-process MPI job:
``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_linalg_errors.py``.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import shardarray as sa

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")

L = sa.linalg
N, NB, BAD = 4, 8, 5  # 8 matrices over 4 processes: matrix 5 is held by process 2 alone (2 each)


def _spd(seed):
    m = np.random.default_rng(seed).standard_normal((N, N))
    return m @ m.T + N * np.eye(N)


def _batch(bad):
    a = np.stack([_spd(s) for s in range(NB)])
    a[BAD] = bad
    return a


NAN = np.where(np.eye(N) > 0, np.nan, 1.0)
CASES = [
    pytest.param("cholesky", -np.eye(N), lambda x, y: L.cholesky(x), "not positive definite", id="cholesky"),
    pytest.param("inv", np.zeros((N, N)), lambda x, y: L.inv(x), "singular", id="inv"),
    pytest.param("solve", np.zeros((N, N)), lambda x, y: L.solve(x, y, b_dims=("j", "k")), "singular", id="solve"),
    pytest.param("eigh", NAN, lambda x, y: L.eigh(x), "eigenvalues did not converge", id="eigh"),
    pytest.param("eigvalsh", NAN, lambda x, y: L.eigvalsh(x), "eigenvalues did not converge", id="eigvalsh"),
    pytest.param("svd", NAN, lambda x, y: L.svd(x), "SVD did not converge", id="svd"),
    pytest.param("svdvals", NAN, lambda x, y: L.svdvals(x), "SVD did not converge", id="svdvals"),
    pytest.param("svd-full", NAN, lambda x, y: L.svd(x, full_matrices=True), "SVD did not converge", id="svd-local"),
]
LAYOUTS = [
    pytest.param({"x": 4}, {"b": "x"}, 2, id="batch-over-4"),
    # matrix 5 lies in the block of row 1; the processes of row 0 hold no bad matrix
    pytest.param({"row": 2, "col": 2}, {"b": "row"}, 2, id="batch-over-row"),
]


@pytest.mark.parametrize("shape,lay,device", LAYOUTS)
@pytest.mark.parametrize("what,bad,op,match", CASES)
def test_every_process_raises_and_the_job_goes_on(shape, lay, device, what, bad, op, match):
    mesh = sa.Mesh(shape, comm="mpi")
    a = _batch(bad)
    b = np.random.default_rng(1).standard_normal((NB, N, 2))
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    y = sa.asarray(b, dims=("b", "j", "k"), mesh=mesh, layout=lay)
    with pytest.raises(L.LinAlgError, match=match) as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)
            op(x, y)
    assert isinstance(info.value, np.linalg.LinAlgError)
    # the same message on every process, naming the bad matrix and the first device holding it
    assert str(info.value).endswith(f"; the first failed matrix: batch index {{'b': {BAD}}}, on device {device}")
    messages = mesh.comm.world.allgather(str(info.value))
    assert len(set(messages)) == 1, messages
    # and the one an emulated mesh of that shape raises (one process, every device's flags)
    emu = sa.Mesh(shape, comm="emulated")
    with pytest.raises(L.LinAlgError) as local:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)
            op(sa.asarray(a, dims=("b", "i", "j"), mesh=emu, layout=lay), sa.asarray(b, dims=("b", "j", "k"), mesh=emu))
    assert str(local.value) == str(info.value)
    # the processes are in step: a collective right after works, and the good matrices still factor
    assert float(sa.sum(x)) == pytest.approx(a.sum(), nan_ok=True)
    good = sa.asarray(_batch(_spd(99)), dims=("b", "i", "j"), mesh=mesh, layout=lay)
    np.testing.assert_allclose(L.cholesky(good).numpy(), np.linalg.cholesky(_batch(_spd(99))), atol=1e-12)


@pytest.mark.parametrize("comm", ["mpi", "emulated"])
def test_the_agreement_costs_one_host_reduction(monkeypatch, comm):
    """A batched op that can fail adds one host reduction of one int under MPI, whether it fails or not, and no
    collective on the data; on an emulated mesh (one process holds every flag) the host reduction is the
    communicator's no-op."""
    from shardarray.comm.base import Communicator

    mesh = sa.Mesh({"x": 4}, comm=comm)
    if comm == "emulated":
        assert type(mesh.comm).host_reduce is Communicator.host_reduce  # returns its argument: no collective
    calls = []
    real = type(mesh.comm).host_reduce

    def counted(self, value, op):
        calls.append(op)
        return real(self, value, op)

    monkeypatch.setattr(type(mesh.comm), "host_reduce", counted)
    for a in (_batch(_spd(99)), _batch(-np.eye(N))):
        x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"b": "x"})
        del calls[:]
        with sa.comm_log() as log:
            try:
                low = L.cholesky(x)
            except L.LinAlgError:
                low = None
        assert [r.op for r in log.records] == []
        assert calls == ["min"], calls
        if low is not None:
            np.testing.assert_allclose(low.numpy(), np.linalg.cholesky(a), atol=1e-12)
