"""Round 14's running extremes, truth values and bits (``ufunc.accumulate``) under ``mpiexec -n 4``: the values,
the gradients and the comm log equal the emulated mesh's.

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_fuzz14_scan_mpi.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from spmd import SHAPES, both, close, needs_four

import shardarray as sa

pytestmark = needs_four


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_accumulate_and_its_gradient_match_emulated(shape):
    axes = tuple(shape)

    def run(mesh):
        rng = np.random.default_rng(0)
        ints = rng.integers(-3, 4, (7, 5))
        value = ints.astype(np.float64)
        value[2, 1] = np.nan
        layout = {"m": axes} if len(axes) == 1 else {"m": axes[0], "k": axes[1]}
        x = sa.asarray(value, dims=("m", "k"), mesh=mesh, layout=layout)
        n = sa.asarray(ints[:, :3], dims=("m", "k"), mesh=mesh, layout=layout)
        with sa.comm_log() as log:
            out = [np.maximum.accumulate(x, axis=0).numpy(), np.fmin.accumulate(x, axis=1).numpy()]
            out += [np.logical_xor.accumulate(x, axis=0).numpy(), np.bitwise_or.accumulate(n, axis=0).numpy()]
            w = sa.asarray(rng.standard_normal((7, 5)), dims=("m", "k"), mesh=mesh)
            out.append(sa.grad(lambda p: (np.minimum.accumulate(p, axis=0) * w).sum())(x).numpy())
        return out, [(r.op, r.axes, r.elements, r.bytes) for r in log.records]

    (emulated, elog), (mpi, mlog) = both(shape, run)
    close(emulated, mpi)
    assert elog == mlog and "allgather" in {r[0] for r in elog}
