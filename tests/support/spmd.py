"""Shared pieces of the tests that run inside ``mpiexec -n 4`` (tests/mpi): the same function on an
emulated mesh and on the MPI mesh of the same shape, compared value by value."""

from __future__ import annotations

import os

import numpy as np
import pytest

import shardarray as sa

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
RANK = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
needs_four = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")
SHAPES = [{"row": 2, "col": 2}, {"x": 4}]


def both(shape, fn):
    """``fn`` on the emulated mesh and on the MPI mesh of ``shape``: (emulated result, MPI result)."""
    return fn(sa.Mesh(shape, comm="emulated")), fn(sa.Mesh(shape, comm="mpi"))


def close(a, b):
    """Two sequences of arrays equal element for element."""
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(np.asarray(v), np.asarray(u))
