"""sa.linalg under ``mpiexec -n 4`` equals the emulated mesh: QR/SVD (CholeskyQR2, TSQR behind it), batched inv/solve.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_linalg.py``.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import shardarray as sa

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")

SHAPES = [{"row": 2, "col": 2}, {"x": 4}]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("m", [4, 13, 30])
def test_tsqr_matches_emulated_and_numpy(shape, m):
    a = np.random.default_rng(m).standard_normal((2, m, 4))
    out = []
    for comm in ("emulated", "mpi"):
        mesh = sa.Mesh(shape, comm=comm)
        x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"i": tuple(mesh.axis_names)})
        with sa.comm_log() as log:
            q, r = sa.linalg.qr(x)
        assert [rec.op for rec in log.records] == ["allreduce", "allreduce"]  # CholeskyQR2: two Gram allreduces
        s = sa.linalg.svdvals(x)
        out.append((q.numpy(), r.numpy(), s.numpy()))
    for u, v in zip(*out):
        np.testing.assert_allclose(v, u, atol=1e-12)
    q, r, s = out[1]
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-12)


def test_qr_processes_agree_on_the_tsqr_fallback():
    """One rank-deficient matrix of the batch, held by the processes of row 0 only: CholeskyQR2's Gram check fails
    there, and every process (row 1's too, whose matrices pass) goes on to TSQR together, so none waits alone."""
    a = np.random.default_rng(3).standard_normal((2, 30, 4))
    a[0, :, 3] = a[0, :, 2]
    out = []
    for comm in ("emulated", "mpi"):
        mesh = sa.Mesh({"row": 2, "col": 2}, comm=comm)
        x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"b": "row", "i": "col"})
        with sa.comm_log() as log:
            q, r = sa.linalg.qr(x)
        assert [rec.op for rec in log.records] == ["allreduce", "allreduce", "allgather"]
        out.append((q.numpy(), r.numpy()))
    for u, v in zip(*out):
        np.testing.assert_allclose(v, u, atol=1e-12)
    q, r = out[1]
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(4), (2, 4, 4)), atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_batched_inv_solve_and_fallback(shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((5, 3, 2))
    mesh = sa.Mesh(shape, comm="mpi")
    ax = tuple(mesh.axis_names)
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"b": ax})
    y = sa.asarray(b, dims=("b", "j", "k"), mesh=mesh, layout={"b": ax})
    np.testing.assert_allclose(sa.linalg.inv(x).numpy(), np.linalg.inv(a), atol=1e-12)
    np.testing.assert_allclose(sa.linalg.solve(x, y, b_dims=("j", "k")).numpy(), np.linalg.solve(a, b), atol=1e-12)
    z = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"i": ax})
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = sa.linalg.det(z)
    assert any(issubclass(i.category, sa.linalg.ReplicatedFallbackWarning) for i in w)
    np.testing.assert_allclose(d.numpy(), np.linalg.det(a), rtol=1e-12)


@pytest.mark.parametrize("shape,lay", [({"row": 2, "col": 2}, {"i": "row", "j": "col"}),
                                       ({"row": 2, "col": 2}, {"i": "col", "j": "row"}),
                                       ({"x": 4}, {"i": "x"}), ({"x": 4}, {"j": "x"})])
@pytest.mark.parametrize("n", [5, 12])
def test_cholesky_2d_matches_emulated(shape, lay, n):
    rng = np.random.default_rng(n)
    m = rng.standard_normal((2, n, n))
    a = m @ np.swapaxes(m, -1, -2) + n * np.eye(n)
    rhs = rng.standard_normal((2, n, 3))
    out, ops = [], []
    for comm in ("emulated", "mpi"):
        mesh = sa.Mesh(shape, comm=comm)
        x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
        y = sa.asarray(rhs, dims=("b", "j", "k"), mesh=mesh)
        with warnings.catch_warnings():
            warnings.simplefilter("error", sa.linalg.ReplicatedFallbackWarning)
            with sa.comm_log() as log:
                low = sa.linalg.cholesky(x, panel=2)
            ops.append([(r.op, r.axes, r.elements) for r in log.records])
            sol = sa.linalg.solve(x, y, b_dims=("j", "k"))
            inv = sa.linalg.inv(x)
            logdet = sa.linalg.slogdet(x).logabsdet
        assert low.layout == x.layout
        out.append((low.numpy(), sol.numpy(), inv.numpy(), logdet.numpy()))
    assert ops[0] == ops[1]
    for u, v in zip(*out):
        np.testing.assert_allclose(v, u, atol=1e-12)
    np.testing.assert_allclose(out[1][0], np.linalg.cholesky(a), atol=1e-12)
    np.testing.assert_allclose(out[1][1], np.linalg.solve(a, rhs), atol=1e-12)


def test_cholesky_2d_failure_is_seen_by_every_process():
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    a = np.eye(6)
    a[5, 5] = -1.0  # only the last diagonal block (one process) fails
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    with pytest.raises(sa.linalg.LinAlgError):
        sa.linalg.cholesky(x)
    with pytest.warns(sa.linalg.ReplicatedFallbackWarning):
        d = sa.linalg.det(x)
    np.testing.assert_allclose(d.numpy(), -1.0)
