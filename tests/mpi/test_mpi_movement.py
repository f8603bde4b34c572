"""Slicing, setitem, concat and the alltoallv collective under ``mpiexec -n 4`` equal the emulated mesh.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_movement.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from spmd import SHAPES, both, close, needs_four

import shardarray as sa

pytestmark = needs_four


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_slicing_concat_setitem_match_emulated(shape):
    axes = tuple(shape)

    def run(mesh):
        value = np.arange(7.0 * 5).reshape(7, 5)
        layout = {"m": axes[0]} if len(axes) == 1 else {"m": axes[0], "k": axes[1]}
        x = sa.asarray(value, dims=("m", "k"), mesh=mesh, layout=layout)
        out = [x[1:6].numpy(), x[::-2, 3:].numpy(), x[5].numpy(), x[:, -1].numpy(), x[[6, 0, 2]].numpy()]
        out.append(sa.concat([x, x[2:]], "m").numpy())
        out.append(sa.concat([x, x[:, :2]], "k").numpy())
        out.append(sa.stack([x, 2 * x], "layer").numpy())
        y = sa.asarray(value, dims=("m", "k"), mesh=mesh, layout=layout)
        y[1:6:2, ::-1] = sa.asarray(-np.ones((3, 5)), dims=("p", "q"), mesh=mesh, layout={"p": axes[-1]})
        y[0] = 9.0
        out.append(y.numpy())
        g = sa.grad(lambda p: (p[5:0:-2] * p[5:0:-2]).sum() + p[3].sum())(x)
        out.append(g.numpy())
        return out

    close(*both(shape, run))


def test_comm_logs_match_emulated():
    def run(mesh):
        x = sa.asarray(np.arange(48.0).reshape(8, 6), dims=("m", "k"), mesh=mesh, layout={"m": "row", "k": "col"})
        with sa.comm_log() as log:
            x[:4]
            x[:, ::-1]
            x[5]
            sa.concat([x, x[3:]], "m")
        return [(r.op, r.axes, r.elements, r.bytes) for r in log]

    emulated, mpi = both({"row": 2, "col": 2}, run)
    assert emulated == mpi
    assert ("alltoall", ("row",), 6, 48) in mpi


def _send(mesh):
    """Pieces of uneven sizes (member j of a row group sends member i ``j + i`` rows)."""
    send = []
    for d in range(mesh.size):
        pos = mesh.coords(d)["row"]
        send.append([np.full((pos + i, 2), 10.0 * d + i) for i in range(2)])
    return send


def test_alltoallv_collective_matches_emulated():
    emu = sa.Mesh({"row": 2, "col": 2}, comm="emulated")
    want = emu.comm.alltoallv(_send(emu), ("row",), 0)
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    me = mesh.local_device
    send = [s if d == me else None for d, s in enumerate(_send(mesh))]
    with sa.comm_log() as log:
        got = mesh.comm.alltoallv(send, ("row",), 0)
    np.testing.assert_array_equal(got[me], want[me])
    assert [(r.op, r.elements) for r in log] == [("alltoall", 2)]  # one row of 2 to the peer
