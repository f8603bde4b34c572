"""The cupy backend on emulated meshes (every shard on the current GPU); skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from helpers import MESH_SHAPES, rand

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", MESH_SHAPES)
def test_cupy_ops_match_numpy_backend(shape):
    import cupy

    cpu = sa.Mesh(shape)
    gpu = sa.Mesh(shape, backend="cupy")
    axes = gpu.axis_names
    lay_x = {"batch": axes[0]}
    lay_w = {"hidden": axes[-1]} if len(axes) > 1 else {}
    a, b = rand((9, 7)), rand((7, 5), 1)
    results = []
    for mesh in (cpu, gpu):
        x = sa.asarray(a, dims=("batch", "io"), mesh=mesh, layout=lay_x)
        w = sa.asarray(b, dims=("io", "hidden"), mesh=mesh, layout=lay_w)
        h = sa.einsum(x, w)
        y = sa.softmax(sa.gelu(h) * 2.0 + 1.0, "hidden")
        z = y.relayout({"hidden": axes[0]}).sum("batch")
        r = sa.random.normal(mesh, {"i": 6, "j": 5}, seed=4, dtype="float64", layout={"i": axes[-1]})
        results.append((h.numpy(), y.numpy(), z.numpy(), r.numpy(), x.max("io").numpy()))
    assert isinstance(sa.asarray(a, dims=("batch", "io"), mesh=gpu).shards[0], cupy.ndarray)
    for c, g in zip(*results):
        np.testing.assert_allclose(g, c, rtol=1e-10, atol=1e-12)


def test_cupy_comm_log_matches_numpy():
    logs = []
    for backend in ("numpy", "cupy"):
        mesh = sa.Mesh({"row": 2, "col": 2}, backend=backend)
        x = sa.ones(mesh, {"batch": 8, "io": 6}, layout={"batch": "row", "io": "col"})
        with sa.comm_log() as log:
            x.sum("io").numpy()
            x.relayout({"io": "row"})
        logs.append(log.records)
    assert logs[0] == logs[1]
