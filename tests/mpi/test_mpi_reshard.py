"""Under ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_reshard.py``: reshard 2x2 -> {"model": 4} -> back, and
from_local with each process's own block. In a plain run the whole file is skipped."""

from __future__ import annotations

import os

import numpy as np
import pytest

import shardarray as sa
from shardarray.layout import block_bounds

SIZE = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(SIZE != 4, reason="run under mpiexec -n 4")


def test_reshard_2x2_to_model_and_back():
    a = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    b = sa.Mesh({"model": 4}, comm="mpi")
    value = (np.arange(35.0).reshape(7, 5) + 1j).astype("complex64")
    x = sa.asarray(value, dims=("batch", "hidden"), mesh=a, layout={"batch": "row", "hidden": "col"})
    with sa.comm_log() as log:
        y = sa.reshard(x, b, {"hidden": "model"})
    rank = b.process_index
    bounds = block_bounds(b, y.spec)[rank]
    np.testing.assert_array_equal(y.shards[rank], value[tuple(slice(lo, hi) for lo, hi in bounds)])
    emulated = sa.reshard(sa.asarray(value, dims=("batch", "hidden"), mesh=sa.Mesh({"row": 2, "col": 2},
                          comm="emulated"), layout=x.layout), sa.Mesh({"model": 4}, comm="emulated"), y.layout)
    assert [(r.op, r.elements) for r in log.records] == [("alltoall", emulated_elements(x, value))]
    back = sa.reshard(y, a, x.layout)
    np.testing.assert_array_equal(back.shards[rank], x.shards[rank])
    np.testing.assert_array_equal(back.numpy(), value)
    assert emulated.layout == y.layout


def emulated_elements(x, value):
    a, b = sa.Mesh({"row": 2, "col": 2}, comm="emulated"), sa.Mesh({"model": 4}, comm="emulated")
    e = sa.asarray(value, dims=x.dims, mesh=a, layout=x.layout)
    with sa.comm_log() as log:
        sa.reshard(e, b, {"hidden": "model"})
    return log.records[0].elements


def test_from_local_own_block():
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    value = np.arange(15.0).reshape(5, 3)
    layout = sa.Layout(("b", "h"), (5, 3), (("row",), ()))
    lo, hi = block_bounds(mesh, layout)[mesh.process_index][0]
    x = sa.from_local(mesh, value[lo:hi], ("b", "h"), (5, 3), {"b": "row"})
    np.testing.assert_array_equal(x.numpy(), value)
    y = sa.from_local(mesh, lambda d: value[lo:hi] if d == mesh.process_index else None, ("b", "h"), (5, 3),
                      {"b": "row"})
    np.testing.assert_array_equal(y.numpy(), value)
