"""sort, argsort, unique_* and searchsorted under ``mpiexec -n 4`` equal the emulated mesh (values and comm logs).

Runs only inside a 4-process MPI job: ``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi_sort.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from spmd import SHAPES, both, close, needs_four

import shardarray as sa

pytestmark = needs_four


def _data(n, seed):
    rng = np.random.default_rng(seed)  # the same on every process
    a = rng.integers(-5, 6, n).astype(float)
    a[rng.random(n) < 0.1] = np.nan
    a[rng.random(n) < 0.1] = -0.0
    return a


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("n", [0, 3, 37])
def test_sort_argsort_unique_match_emulated(shape, n):
    axes = tuple(shape)

    def run(mesh):
        a = _data(n, n)
        x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": axes})
        m = sa.asarray(np.stack([a, a[::-1]]), dims=("b", "s"), mesh=mesh, layout={"s": axes})
        out = [sa.sort(x, "s").numpy(), sa.argsort(x, "s").numpy(), sa.sort(x, "s", descending=True).numpy(),
               sa.argsort(x, "s", descending=True).numpy(), sa.argsort(m, "s").numpy()]
        out += [r.numpy() for r in sa.unique_all(m)]
        s = sa.sort(x, "s")
        out.append(sa.searchsorted(s, m, side="right").numpy())
        g = sa.grad(lambda x: (sa.sort(x, "s") * sa.sort(x, "s")).sum())(sa.asarray(np.nan_to_num(a), dims=("s",),
                                                                                     mesh=mesh, layout={"s": axes}))
        out.append(g.numpy())
        return out

    emulated, mpi = both(shape, run)
    close(emulated, mpi)
    a = _data(n, n)
    np.testing.assert_array_equal(emulated[0], np.sort(a))
    np.testing.assert_array_equal(emulated[1], np.argsort(a, kind="stable"))


def test_comm_logs_match_emulated():
    def run(mesh):
        x = sa.asarray(_data(101, 1), dims=("s",), mesh=mesh, layout={"s": tuple(mesh.axis_names)})
        with sa.comm_log() as log:
            sa.sort(x, "s")
            sa.argsort(x, "s")
            sa.unique_inverse(x)
        return [(r.op, r.axes, r.elements, r.dtype) for r in log.records]

    emulated, mpi = both({"row": 2, "col": 2}, run)
    assert emulated == mpi


def test_rows_with_uneven_other_dim_match_emulated():
    """b (3) split over row cannot take col too: each col-group sorts its own rows (2 and 1: a group idles)."""
    def run(mesh):
        a = np.stack([_data(11, k) for k in range(3)])
        x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout={"b": "row", "s": "col"})
        return [sa.sort(x, "s").numpy(), sa.argsort(x, "s", descending=True).numpy()]

    emulated, mpi = both({"row": 2, "col": 2}, run)
    close(emulated, mpi)
    a = np.stack([_data(11, k) for k in range(3)])
    np.testing.assert_array_equal(emulated[0], np.sort(a, axis=1))
