"""In-place writes from several threads all land (issue "Nothing silently wrong, round 2", item 4).

``x[...] = v`` and ``x[mask] = v`` read a ShardArray's blocks, write copies and swap them in. Two threads doing
that on one array used to lose writes (each swapped in blocks made from the old ones); in-place writes now hold
one lock for the read-modify-write, so concurrent writers are serialized and none is lost.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"d": 1}, {"row": 2, "col": 2}]


@pytest.fixture(autouse=True)
def frequent_switches():
    """Switch threads often, so that an unprotected read-modify-write loses a write nearly every run."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


@pytest.mark.parametrize("shape", MESHES)
def test_disjoint_writes_from_threads_all_land(shape):
    mesh = sa.Mesh(shape)
    n, threads = 64, 4
    x = sa.zeros(mesh, {"i": n}, dtype="float64", layout={"i": mesh.axis_names[0]})
    start = threading.Barrier(threads)

    def writer(t: int) -> None:
        start.wait()
        for i in range(t, n, threads):
            x[{"i": i}] = float(i + 1)

    pool = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    np.testing.assert_array_equal(x.numpy(), np.arange(1.0, n + 1))


def test_mask_and_positional_writes_from_threads_all_land():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = xp.zeros((8, 8), device=mesh)
    idx = np.arange(64).reshape(8, 8)
    threads = 4
    start = threading.Barrier(threads)

    def writer(t: int) -> None:
        start.wait()
        for r in range(8):
            mask = xp.asarray((idx % threads == t) & (idx // 8 == r), device=mesh)
            a[mask] = float(t + 1)

    pool = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    np.testing.assert_array_equal(a.numpy(), (idx % threads + 1).astype(float))
