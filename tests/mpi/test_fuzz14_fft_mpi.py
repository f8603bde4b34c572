"""Bluestein's algorithm (a prime length along a split dim, ``fft/bluestein.py``) under ``mpiexec -n 4`` equals
the emulated mesh: values, gradients and comm logs (nine alltoalls per transform, no allgather).

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_fuzz14_fft_mpi.py``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import shardarray as sa
from shardarray.fft import four_step

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")


def _run(mesh, shape):
    rng = np.random.default_rng(4)  # the same on every process
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    dims = ("b", "t")[-len(shape) :]
    layout = {"t": ("row", "col")}
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=layout)
    old = four_step.GATHER_MAX_BYTES
    four_step.GATHER_MAX_BYTES = 0
    try:
        with sa.comm_log() as log:
            y = sa.fft.fft(x, "t", n=13, norm="ortho")
            r = sa.fft.irfft(x, "t", n=11)
        g = sa.grad(lambda v: (sa.fft.irfft(sa.fft.rfft(v, "t", n=17), "t", n=7) ** 2).sum())(
            sa.asarray(a.real, dims=dims, mesh=mesh, layout=layout)
        )
    finally:
        four_step.GATHER_MAX_BYTES = old
    return [y.numpy(), r.numpy(), g.numpy()], [(rec.op, rec.axes, rec.elements) for rec in log.records], a


@pytest.mark.parametrize("shape", [(11,), (1, 11)], ids=("1d", "short_batch"))
def test_bluestein_matches_emulated(shape):
    emu, emu_log, a = _run(sa.Mesh({"row": 2, "col": 2}, comm="emulated"), shape)
    mpi, mpi_log, _ = _run(sa.Mesh({"row": 2, "col": 2}, comm="mpi"), shape)
    for u, v in zip(emu, mpi):
        np.testing.assert_allclose(v, u, rtol=1e-12, atol=1e-12)
    assert mpi_log == emu_log and [op for op, _, _ in mpi_log] == ["alltoall"] * 18  # two transforms, nine each
    np.testing.assert_allclose(mpi[0], np.fft.fft(a, n=13, axis=-1, norm="ortho"), atol=1e-12)
    np.testing.assert_allclose(mpi[1], np.fft.irfft(a, n=11, axis=-1), atol=1e-12)
