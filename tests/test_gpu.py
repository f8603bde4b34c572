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


@pytest.mark.parametrize("strategy,shape", [("replicated", {"d": 1}), ("mesh2d", {"rows": 2, "cols": 2})])
def test_cupy_training_step_matches_numpy(strategy, shape):
    """value_and_grad and an Adam step of the transformer on cupy shards equal the NumPy backend's."""
    cfg = sa.nn.TransformerConfig(vocab=37, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=2, seq_len=8)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), 4, cfg.seq_len, cfg.vocab)
    out = []
    for backend in ("numpy", "cupy"):
        mesh = sa.Mesh(shape, backend=backend, rules=sa.nn.strategy_rules(strategy, shape))
        params = sa.nn.init_transformer(cfg, mesh, seed=0, dtype="float64")
        tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
        targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, cfg)
        opt = sa.optim.Adam(1e-3)
        new, _ = opt.update(params, grads, opt.init(params))
        out.append((float(loss), {k: g.numpy() for k, g in grads.items()}, {k: p.numpy() for k, p in new.items()}))
    (l0, g0, p0), (l1, g1, p1) = out
    np.testing.assert_allclose(l1, l0, rtol=1e-10)
    for k in g0:
        np.testing.assert_allclose(g1[k], g0[k], rtol=1e-8, atol=1e-12, err_msg=k)
        np.testing.assert_allclose(p1[k], p0[k], rtol=1e-8, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_summa_and_tesseract_on_cupy_match_numpy(shape, dtype):
    import cupy

    outs = []
    for backend in ("numpy", "cupy"):
        mesh = sa.Mesh(shape, backend=backend)
        rows = ("dep", "row") if "dep" in shape else "row"
        x = sa.random.normal(mesh, {"m": 64, "k": 32}, layout={"m": rows, "k": "col"}, seed=1, dtype=dtype)
        w = sa.random.normal(mesh, {"k": 32, "n": 48}, layout={"k": "row", "n": "col"}, seed=2, dtype=dtype)
        ct = sa.random.normal(mesh, {"m": 64, "n": 48}, layout={"m": rows, "n": "col"}, seed=3, dtype=dtype)
        y, pull = sa.vjp(lambda p: sa.einsum("m k, k n -> m n", p[0], p[1]), (x, w))
        dx, dw = pull(ct)
        if backend == "cupy":
            assert isinstance(y.shards[0], cupy.ndarray)
        outs.append([a.numpy().astype(np.float64) for a in (y, dx, dw)])
    tol = 2e-2 if dtype == "float16" else 1e-5
    for c, g in zip(*outs):
        np.testing.assert_allclose(g, c, rtol=tol, atol=tol)


def test_bench_matmul_runs_on_cupy(tmp_path):
    from shardarray.bench import run

    result = run(["matmul", "--backend", "cupy", "--devices", "4", "--m", "256", "--k", "256", "--n", "256",
                  "--repeat", "1", "--quiet", "--json", str(tmp_path / "r.json")])
    assert result["device"] and all(r["time_s"] > 0 for r in result["rows"])
    assert result["single"]["what"].startswith("cupy")
