"""The FFT under ``mpiexec -n 4`` equals the emulated mesh (values and comm logs).

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_fft.py``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import shardarray as sa

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")


def _run(mesh):
    rng = np.random.default_rng(0)  # the same on every process
    a = rng.standard_normal((7, 10)) + 1j * rng.standard_normal((7, 10))
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        y = sa.fft.fftn(x, s=(8, 9), norm="ortho")
        r = sa.fft.irfft(y, "a", n=6)
    recs = [(rec.op, rec.axes, rec.elements) for rec in log.records]
    g = sa.grad(lambda x: (sa.fft.irfft(sa.fft.fft(x, "a"), "b", n=5) ** 2).sum())(
        sa.asarray(a.real, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"}))
    return [y.numpy(), r.numpy(), g.numpy()], recs, a


def test_fft2_matches_emulated():
    shape = {"row": 2, "col": 2}
    emu, emu_log, a = _run(sa.Mesh(shape, comm="emulated"))
    mpi, mpi_log, _ = _run(sa.Mesh(shape, comm="mpi"))
    for u, v in zip(emu, mpi):
        np.testing.assert_allclose(v, u, rtol=1e-12, atol=1e-12)
    assert mpi_log == emu_log
    np.testing.assert_allclose(mpi[0], np.fft.fftn(a, s=(8, 9), axes=(0, 1), norm="ortho"), atol=1e-12)


def _run_1d(mesh):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(70) + 1j * rng.standard_normal(70)  # uneven blocks; n = 64 and 72 factor on 4
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": ("row", "col")})
    with sa.comm_log() as log:
        y = sa.fft.fft(x, "t", n=64, norm="ortho")
        r = sa.fft.irfft(sa.fft.ifft(x, "t", n=72), "t", n=64)
    g = sa.grad(lambda v: (sa.fft.irfft(sa.fft.fft(v, "t", n=64), "t", n=72) ** 2).sum())(
        sa.asarray(a.real, dims=("t",), mesh=mesh, layout={"t": ("row", "col")}))
    return [y.numpy(), r.numpy(), g.numpy()], [(rec.op, rec.axes, rec.elements) for rec in log.records], a


def test_split_1d_four_step_matches_emulated():
    shape = {"row": 2, "col": 2}
    emu, emu_log, a = _run_1d(sa.Mesh(shape, comm="emulated"))
    mpi, mpi_log, _ = _run_1d(sa.Mesh(shape, comm="mpi"))
    for u, v in zip(emu, mpi):
        np.testing.assert_allclose(v, u, rtol=1e-12, atol=1e-12)
    assert mpi_log == emu_log and [op for op, _, _ in mpi_log] == ["alltoall"] * 9  # three transforms, three each
    np.testing.assert_allclose(mpi[0], np.fft.fft(a, n=64, norm="ortho"), atol=1e-12)


def test_positional_fftn_matches_emulated():
    """xp.fft.fftn (one alltoall per split axis, the split left on the partner axis) under MPI: the emulated
    mesh's values, blocks, layout and comm log."""
    import shardarray.array_api as xp

    a = np.random.default_rng(2).standard_normal((9, 6)) + 0.5j
    out = []
    for comm in ("emulated", "mpi"):
        mesh = sa.Mesh({"row": 2, "col": 2}, comm=comm)
        x = xp.asarray(a, device=mesh)
        with sa.comm_log() as log:
            y = xp.fft.fftn(x)
        out.append((np.asarray(y), y.layout, [(r.op, r.axes, r.elements) for r in log.records], y.shards))
    (ve, le, loge, she), (vm, lm, logm, shm) = out
    np.testing.assert_allclose(vm, ve, atol=1e-12)
    np.testing.assert_allclose(vm, np.fft.fftn(a), atol=1e-12)
    assert lm == le and logm == loge and [op for op, _, _ in logm] == ["alltoall", "alltoall"]
    rank = sa.Mesh({"row": 2, "col": 2}, comm="mpi").local_device
    np.testing.assert_allclose(shm[rank], she[rank], atol=1e-12)
