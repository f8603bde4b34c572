"""Pickling an array of an MPI mesh is refused on every process alike (its blocks live in other processes), with
the way to save it instead; the job goes on. Runs inside ``mpiexec -n 4``."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import shardarray as sa

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4")


def test_an_mpi_array_and_mesh_are_not_pickled():
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    x = sa.asarray(np.arange(8.0), dims=("i",), mesh=mesh, layout={"i": "row"})
    with pytest.raises(sa.BackendError, match=r"sa\.checkpoint\.save"):
        pickle.dumps(x)
    with pytest.raises(sa.MeshError, match="communicators"):
        pickle.dumps(mesh)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(x.numpy())), np.arange(8.0))  # the gather pickles
