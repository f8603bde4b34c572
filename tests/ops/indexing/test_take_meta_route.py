"""``take`` with ids split over the looked-up dim's axes routes on the ``meta`` backend too: the planner prices
the path that runs on data (three alltoallvs forward, the counts and two alltoallvs in the VJP), not an allgather
of the ids with a reduce-scatter, with the same collectives and bytes within the uniform model's error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shardarray as sa

MESHES = [{"row": 4}, {"row": 2, "col": 2}, {"p": 3, "q": 2}]


def _log(backend: str, shape: dict[str, int], n: int, m: int) -> tuple[tuple, list]:
    mesh = sa.Mesh(shape, backend=backend)
    ax = mesh.axis_names[0]
    x = sa.random.normal(mesh, {"v": n, "e": 3}, layout={"v": ax})
    if backend == "meta":
        ids = sa.zeros(mesh, {"t": m}, dtype="int64", layout={"t": ax})
    else:
        host = np.random.default_rng(0).integers(0, n, m)
        ids = sa.asarray(host, dims=("t",), mesh=mesh, layout={"t": ax})
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        with sa.comm_log() as log:
            _, g = sa.value_and_grad(lambda w: (sa.take(w, ids, "v") ** 2).sum())(x)
    return (g.dims, g.shape, g.layout), log.records


@pytest.mark.parametrize("shape", MESHES, ids=lambda s: "x".join(map(str, s.values())))
def test_take_on_meta_logs_the_routed_collectives(shape):
    """Ids of 4,096 a device (above ``ROUTE_MIN_IDS``): the same result signature, the same collectives (op, axes,
    dtype) in order, and each one's bytes per device within 10% of random ids' (the counts exactly)."""
    m = 4096 * 4
    real_sig, real = _log("numpy", shape, 37, m)
    meta_sig, meta = _log("meta", shape, 37, m)
    assert meta_sig == real_sig
    assert [(r.op, r.axes, r.dtype) for r in meta] == [(r.op, r.axes, r.dtype) for r in real]
    assert [r.op for r in real].count("alltoall") >= 5  # (routed: the forward's three, the VJP's counts and sends)
    for a, b in zip(meta, real):
        assert a.bytes == pytest.approx(b.bytes, rel=0.1, abs=64), (a, b)
