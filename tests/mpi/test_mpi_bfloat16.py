"""bfloat16 under ``mpiexec -n 4`` equals the emulated mesh: 16-bit payloads, float32 reductions.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_bfloat16.py``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from spmd import RANK, SHAPES, both, needs_four

import shardarray as sa

pytestmark = needs_four

BF16 = np.dtype(ml_dtypes.bfloat16)


def same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        u, v = np.asarray(u), np.asarray(v)
        assert u.dtype == v.dtype, (u.dtype, v.dtype)
        assert u.shape == v.shape and u.tobytes() == v.tobytes()  # bit for bit


def test_collectives_move_and_reduce_bfloat16():
    """Allreduce (sum, max, min) in float32 rounded once; allgather, broadcast, alltoall as 2-byte payloads."""

    def run(mesh):
        emulated = mesh.comm.__class__.__name__ == "EmulatedCommunicator"
        values = [np.array([256.0, 1.5 * d, -d, 1.0], dtype=BF16) for d in range(4)]
        values[1][0] = 1.0
        values[2][0] = 1.0
        values[3][0] = 0.0  # 256 + 1 + 1 + 0: 256 in bfloat16 one addition at a time, 258 in float32
        shards = list(values) if emulated else [values[d] if d == RANK else None for d in range(4)]
        out = []
        for op in ("sum", "max", "min"):
            out.append(mesh.comm.allreduce(shards, ("x",), op=op))
        out.append(mesh.comm.allgather(shards, ("x",), 0))
        out.append(mesh.comm.broadcast(shards, ("x",), 2))
        out.append(mesh.comm.alltoall(shards, ("x",), 0, 0))
        out.append(mesh.comm.reduce_scatter(shards, ("x",), 0))
        return [o[RANK] for o in out]  # this process's device of the MPI mesh, on both

    emulated, mpi = both({"x": 4}, run)
    same(emulated, mpi)
    assert float(mpi[0][0]) == 258.0 and mpi[0].dtype == BF16


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_ops_in_bfloat16_match_emulated(shape):
    axes = tuple(shape)

    def run(mesh):
        rng = np.random.default_rng(0)
        a = rng.standard_normal((6, 10)).astype(BF16)
        w = rng.standard_normal((10, 5)).astype(BF16)
        lay_a = {"m": axes[0]} if len(axes) == 1 else {"m": axes[0], "k": axes[1]}
        lay_w = {"k": axes[0]} if len(axes) == 1 else {"k": axes[0], "n": axes[1]}
        x = sa.asarray(a, dims=("m", "k"), mesh=mesh, layout=lay_a)
        y = sa.asarray(w, dims=("k", "n"), mesh=mesh, layout=lay_w)
        out = [sa.einsum("m k, k n -> m n", x, y).numpy(), x.sum("k").numpy(), x.sum().numpy(),
               x.max("m").numpy(), sa.softmax(x, "k").numpy(), sa.argmax(x, "k").numpy(),
               x.astype("float32").numpy(), sa.gelu(x).numpy()]
        g = sa.grad(lambda p: sa.logsumexp(sa.einsum("m k, k n -> m n", p, y), "n").sum())(x)
        out.append(g.numpy())
        return out

    emulated, mpi = both(shape, run)
    same(emulated, mpi)
    assert mpi[0].dtype == BF16 and mpi[-1].dtype == BF16
