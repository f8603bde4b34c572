"""Boolean masks, nonzero, cumsum, top_k and take_along_dim under ``mpiexec -n 4`` equal the emulated mesh.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_scan.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from spmd import SHAPES, both, close, needs_four

import shardarray as sa

pytestmark = needs_four


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_scans_masks_topk_match_emulated(shape):
    axes = tuple(shape)

    def run(mesh):
        rng = np.random.default_rng(0)
        value = rng.integers(-3, 4, (7, 5)).astype(np.float64)
        layout = {"m": axes[0]} if len(axes) == 1 else {"m": axes[0], "k": axes[1]}
        x = sa.asarray(value, dims=("m", "k"), mesh=mesh, layout=layout)
        out = [sa.cumsum(x, "m").numpy(), sa.cumsum(x, "k").numpy(), sa.cumprod(x, "m").numpy()]
        v, i = sa.top_k(x, 3, "k", new_dim="t")
        w, j = sa.top_k(x, 7, "m", new_dim="t")
        out += [v.numpy(), i.numpy(), w.numpy(), j.numpy(), sa.take_along_dim(x, j.rename({"t": "m"}), "m").numpy()]
        out.append(sa.select(x, x > 0).numpy())
        out.append(x[np.array([True, False, True, True, False, False, True])].numpy())
        out += [a.numpy() for a in sa.nonzero(x)]
        out.append(sa.count_nonzero(x, "m").numpy())
        y = sa.asarray(value, dims=("m", "k"), mesh=mesh, layout=layout)
        y[y > 1] = 0.0
        sel = y < 0
        n = int(sa.count_nonzero(sel))
        y[sel] = sa.asarray(np.arange(float(n)), dims=("s",), mesh=mesh, layout={"s": axes[0]})
        out.append(y.numpy())
        g = sa.grad(lambda p: (sa.cumsum(p, "m") * sa.top_k(p, 7, "m", new_dim="m")[0]).sum())(x)
        out.append(g.numpy())
        return out

    close(*both(shape, run))


def test_comm_logs_match_emulated():
    def run(mesh):
        x = sa.asarray(np.arange(48.0).reshape(8, 6) % 5, dims=("m", "k"), mesh=mesh,
                       layout={"m": "row", "k": "col"})
        with sa.comm_log() as log:
            sa.cumsum(x, "k")
            sa.top_k(x, 2, "m", new_dim="t")
            sa.select(x, x > 2)
        return [(r.op, r.axes, r.elements, r.bytes) for r in log]

    emulated, mpi = both({"row": 2, "col": 2}, run)
    assert emulated == mpi
