"""An MPI job (4 processes, one device each) for tests/optim/test_optim_mixed.py: clipping and the loss scale agree."""

from __future__ import annotations

import math
import sys

import numpy as np

import shardarray as sa


def main() -> None:
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((5, 3)), rng.standard_normal(7), rng.standard_normal(2)
    grads = {
        "a": sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"}).astype("float32"),
        "b": sa.asarray(b, dims=("k",), mesh=mesh, layout={"k": "col"}).astype(sys.argv[1]),
        "c": sa.asarray(c, dims=("m",), mesh=mesh).astype("float32"),
    }
    want = math.sqrt(sum(float(np.sum(g.numpy().astype(np.float64) ** 2)) for g in grads.values()))
    with sa.comm_log() as log:
        clipped, norm = sa.optim.clip_by_global_norm(grads, 1.0, return_norm=True)
    assert abs(norm - want) < 1e-5 * want, (norm, want)
    assert [r.op for r in log.records] == ["allreduce"], log.records
    np.testing.assert_allclose(clipped["a"].numpy(), grads["a"].numpy() / want, rtol=1e-5)
    bad_b = b.copy()
    bad_b[6] = np.inf   # on the last col block only: every process must skip
    bad = dict(grads, b=sa.asarray(bad_b, dims=("k",), mesh=mesh, layout={"k": "col"}).astype(sys.argv[1]))
    scaler, opt = sa.optim.DynamicLossScale(init_scale=4.0), sa.optim.SGD(lr=0.1)
    params, state = grads, opt.init(grads)
    _, finite = scaler.unscale(bad, scaler.init())
    p2, _, ls = scaler.apply(opt, params, bad, state, scaler.init(), max_norm=1.0)
    assert not finite and ls["scale"] == 2.0 and p2 is params
    print(f"rank {mesh.process_index}: OK")


if __name__ == "__main__":
    main()
