"""The cupy backend on emulated meshes (every shard on the current GPU); skipped without a GPU.

Tests that can hang (every NCCL test: a rank that never posts leaves its
peers waiting forever) and tests that need NCCL environment variables (NCCL
reads them once per process, e.g. ``NCCL_MULTI_RANK_GPU_ENABLE``) run in a
subprocess with a time limit (``run_isolated``): a hang is a failure, not a
stuck CI job.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shardarray as sa
from helpers import MESH_SHAPES, rand

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).parents[2]
HANG_S = float(os.environ.get("SHARDARRAY_TEST_HANG_S", "100"))  # far above a healthy run (seconds): only a hang reaches it; under the 120 s pytest --timeout of benchmarks/gpu_session.sh, so the hang is reported with its output


def run_isolated(code: str, env: dict[str, str | None] | None = None, timeout: float = HANG_S) -> str:
    """Run ``code`` in a fresh Python (repo and tests/ importable) with ``env`` changes (None: unset).

    Fails the test when it exits non-zero or runs past ``timeout`` (a hang); returns its stdout.
    """
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "tests" / "backend")])}
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=full)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung for {timeout} s (killed); output so far:\n{(e.stdout or b'')[-2000:]!r}\n"
                    f"{(e.stderr or b'')[-3000:]!r}")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


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


# ---------------------------------------------------------------- fused kernels
def _kernel_case(backend, dtype, shape, layout):
    """softmax, gelu, layer norm and cross-entropy forward + backward, and one Adam step, on one mesh."""
    mesh = sa.Mesh(shape, backend=backend)
    x = sa.random.normal(mesh, {"batch": 6, "seq": 5, "d_model": 24}, seed=1, dtype=dtype, layout=layout)
    w = sa.random.normal(mesh, {"d_model": 24, "vocab": 37}, seed=2, dtype=dtype) * 0.3
    gain = sa.random.normal(mesh, {"d_model": 24}, seed=3, dtype=dtype) + 1.0
    bias = sa.random.normal(mesh, {"d_model": 24}, seed=4, dtype=dtype)
    tgt = np.random.default_rng(0).integers(0, 37, size=(6, 5))
    targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh, layout={k: v for k, v in layout.items() if k != "d_model"})

    def f(p):
        h = sa.nn.layer_norm(p["x"], p["gain"], p["bias"])
        logits = sa.einsum("batch seq d_model, d_model vocab -> batch seq vocab", sa.gelu(h), p["w"])
        s = sa.softmax(logits, "vocab")
        return sa.nn.cross_entropy(logits, targets).sum() + (s * s).sum()

    params = {"x": x, "w": w, "gain": gain, "bias": bias}
    loss, grads = sa.value_and_grad(f)(params)
    opt = sa.optim.Adam(1e-2, weight_decay=0.1)
    state = opt.init(params)
    new, state = opt.update(params, grads, state)
    new, state = opt.update(new, grads, state)
    return float(loss), {k: g.numpy() for k, g in grads.items()}, {k: p.numpy() for k, p in new.items()}


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-10), ("float32", 2e-4), ("float16", 3e-2)])
@pytest.mark.parametrize("shape,layout", [({"d": 1}, {}), ({"row": 2, "col": 2}, {"batch": "row", "seq": "col"})])
def test_fused_kernels_match_the_numpy_path(dtype, tol, shape, layout):
    from shardarray.backend import cuda_kernels

    ref = _kernel_case("numpy", dtype, shape, layout)
    got = _kernel_case("cupy", dtype, shape, layout)
    assert not cuda_kernels._BROKEN, cuda_kernels._BROKEN
    # every kernel file ran (the matrix addresses of gemm_pointers.cu serve two-batch-dim products: none here)
    assert {name for name, _ in cuda_kernels._MODULES} >= set(cuda_kernels.SOURCES) - {"gemm_pointers"}
    np.testing.assert_allclose(got[0], ref[0], rtol=tol)
    for k in ref[1]:
        np.testing.assert_allclose(got[1][k].astype(float), ref[1][k].astype(float), rtol=tol, atol=tol, err_msg=k)
        np.testing.assert_allclose(got[2][k].astype(float), ref[2][k].astype(float), rtol=tol, atol=tol, err_msg=k)


def test_kernels_can_be_turned_off(monkeypatch):
    from shardarray.ops.fused import dispatch as fused

    x = sa.zeros(sa.Mesh({"d": 1}, backend="cupy"), {"b": 2, "v": 3})
    assert fused.kernels_for(x, "softmax")
    monkeypatch.setenv("SHARDARRAY_KERNELS", "0")
    assert not fused.kernels_for(x, "softmax")


def test_all_masked_softmax_row_is_nan_like_the_array_path():
    from shardarray.backend import cuda_kernels
    import cupy

    x = cupy.full((2, 5), -cupy.inf, dtype=cupy.float32)
    x[1] = 0.0
    y = cupy.asnumpy(cuda_kernels.softmax_rows(cupy, x))
    assert np.isnan(y[0]).all() and np.allclose(y[1], 0.2)


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-5), ("bfloat16", 2e-2)])
def test_causal_softmax_kernel_matches_the_array_path(dtype, tol, monkeypatch):
    """kernels/softmax.cu's causal_softmax_fwd/bwd against the where + softmax array path, value and gradient."""
    from shardarray.ops.reduction.causal_softmax import causal_softmax

    rng = np.random.default_rng(0)
    s = rng.standard_normal((2, 3, 17, 17))
    g = rng.standard_normal((2, 3, 17, 17))

    def run(kernels: str) -> tuple:
        monkeypatch.setenv("SHARDARRAY_KERNELS", kernels)
        mesh = sa.Mesh({"d": 1}, backend="cupy")
        x = sa.asarray(s, dims=("b", "h", "seq", "kseq"), mesh=mesh).astype(dtype)
        w = sa.asarray(g, dims=("b", "h", "seq", "kseq"), mesh=mesh).astype(dtype)
        p, grad = sa.value_and_grad(lambda x: (causal_softmax(x, 0.3) * w).sum())(x)
        return causal_softmax(x, 0.3).numpy().astype(float), grad.numpy().astype(float)

    got, ref = run("1"), run("0")
    np.testing.assert_allclose(got[0], ref[0], rtol=tol, atol=tol)
    np.testing.assert_allclose(got[1], ref[1], rtol=tol, atol=tol)
    assert np.all(got[0][..., np.triu_indices(17, 1)[0], np.triu_indices(17, 1)[1]] == 0)


@pytest.mark.parametrize("eq,a,b,gemms", [
    ("b h s k, b h t k -> b h s t", (2, 3, 64, 32), (2, 3, 48, 32), (1, 0)),
    ("b s h k, b t h k -> b h s t", (2, 64, 3, 32), (2, 48, 3, 32), (0, 1)),  # b, h don't merge: pointer-batched
    ("m k, k n -> m n", (96, 64), (64, 80), (1, 0)),  # 2-D as well (CuPy's matmul upcasts bfloat16)
    ("k m, k n -> m n", (64, 96), (64, 80), (1, 0)),  # a transposed operand: op T, read in place
])
def test_float16_contractions_use_float32_accumulation(eq, a, b, gemms):
    """Batched float16 products go to cublasGemmStridedBatchedEx, or cublasGemmBatchedEx where the two batch dims
    do not merge (``gemms``: the calls of each), with fp32 compute: close to the float64 product."""
    import cupy

    from shardarray.backend import cublas

    backend = sa.Mesh({"d": 1}, backend="cupy").backend
    rng = np.random.default_rng(0)
    xa, xb = rng.standard_normal(a).astype(np.float16), rng.standard_normal(b).astype(np.float16)
    letters = eq.replace(" ", "")
    before = cublas.STATS["gemm_strided_batched"], cublas.STATS["gemm_batched"]
    got = cupy.asnumpy(backend.einsum(letters, cupy.asarray(xa), cupy.asarray(xb)))
    assert (cublas.STATS["gemm_strided_batched"] - before[0], cublas.STATS["gemm_batched"] - before[1]) == gemms
    want = np.einsum(letters, xa.astype(np.float64), xb.astype(np.float64))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-10), ("bfloat16", 5e-2)])
@pytest.mark.parametrize("eq", ["bshk,bthk->bhst", "bhst,bthk->bshk", "bhst,bshk->bthk", "bshk,bhst->bthk"])
def test_attention_products_in_place_match_numpy(eq, dtype, tol):
    """Products over (batch, heads) of (b, s, h, k) operands: one pointer-batched gemm, operands read in place,
    against NumPy's einsum."""
    import cupy

    from shardarray.backend import cublas

    backend = sa.Mesh({"d": 1}, backend="cupy").backend
    size = {"b": 3, "h": 4, "s": 64, "t": 48, "k": 32}
    lhs, _ = eq.split("->")
    rng = np.random.default_rng(0)
    a, c = (rng.standard_normal([size[x] for x in t]).astype(dtype) for t in lhs.split(","))
    batched, strided = cublas.STATS["gemm_batched"], cublas.STATS["gemm_strided_batched"]
    got = cupy.asnumpy(backend.einsum(eq, cupy.asarray(a), cupy.asarray(c))).astype(np.float64)
    assert cublas.STATS["gemm_batched"] - batched == 1
    assert cublas.STATS["gemm_strided_batched"] == strided
    want = np.einsum(eq, a.astype(np.float64), c.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


VECTOR_SIZES = [0, 1, 7, 8, 9, 4103, (1 << 20) + 5]  # empty, shorter than a chunk, a chunk, tails, a large array


def _views(cupy, host):
    """``host`` on the GPU as an aligned array (eight-element chunks) and as a view one element in (not 16-byte
    aligned: every element one at a time), with the NumPy values each holds."""
    whole = cupy.asarray(np.concatenate([host[:1], host]))
    return [(cupy.asarray(host), host), (whole[1:], host)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_vector_kernels_add_and_cast_exactly_as_numpy(dtype):
    """kernels/elementwise.cu: add_vec equals NumPy's a + b bit for bit (float32 math, one rounding), and the casts
    between float32 and the 16-bit floats equal NumPy's astype, for every tail length and for unaligned views."""
    import cupy

    from shardarray.backend import cuda_kernels

    for n in VECTOR_SIZES:
        a, b = rand(n, seed=1).astype(dtype), rand(n, seed=2).astype(dtype)
        for (da, ha), (db, hb) in zip(_views(cupy, a), _views(cupy, b)):
            got = cupy.asnumpy(cuda_kernels.add(cupy, da, db))
            np.testing.assert_array_equal(got.view(np.uint8), (ha + hb).view(np.uint8), err_msg=f"{dtype} {n}")
        if dtype in ("bfloat16", "float16"):
            x = rand(n, seed=3).astype(np.float32) * 1e3
            x[: min(n, 3)] = [np.inf, -np.inf, 6.5e4][: min(n, 3)]
            for dx, hx in _views(cupy, x):
                narrow = cupy.asnumpy(cuda_kernels.cast(cupy, dx, dtype))
                np.testing.assert_array_equal(narrow.view(np.uint8), hx.astype(dtype).view(np.uint8))
            for dx, hx in _views(cupy, x.astype(dtype)):
                wide = cupy.asnumpy(cuda_kernels.cast(cupy, dx, "float32"))
                np.testing.assert_array_equal(wide, hx.astype(np.float32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("a,b", [((8, 1024), (1, 1024)), ((5, 13), (1, 13)), ((2, 512, 64), (1, 512, 64)),
                                 ((1, 24), (3, 24)), ((3, 7, 16), (16,))])
def test_vector_kernels_add_rows_exactly_as_numpy(dtype, a, b):
    """add_rows (a bias or a positional table repeated along leading axes) equals NumPy's broadcast sum bit for bit,
    chunked (the repeat a multiple of 8) or one element at a time, and on an unaligned view."""
    import cupy

    from shardarray.backend import cuda_kernels

    x, y = rand(a, seed=1).astype(dtype), rand(b, seed=2).astype(dtype)
    want = (x + y).view(np.uint8)
    for dy, hy in _views(cupy, y.reshape(-1)):
        got = cupy.asnumpy(cuda_kernels.add(cupy, cupy.asarray(x), dy.reshape(b)))
        np.testing.assert_array_equal(got.view(np.uint8), want)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12), ("bfloat16", 1e-2)])
def test_vector_kernels_gelu_and_adam_on_tails_and_unaligned_views(dtype, tol):
    """gelu_fwd/bwd and adam take eight elements per thread where aligned: every tail length and an unaligned view
    give NumPy's formula."""
    import cupy

    from shardarray.backend import cuda_kernels

    c = 0.7978845608028654
    for n in VECTOR_SIZES:
        moments = cuda_kernels.moment_dtype(dtype)
        x, g = (rand(n, seed=s).astype(dtype).astype(np.float64) for s in (4, 5))  # the values the GPU holds
        m = rand(n, seed=6).astype(moments).astype(np.float64)
        v = np.abs(rand(n, seed=7)).astype(moments).astype(np.float64)
        t = np.tanh(c * (x + 0.044715 * x**3))
        fwd, bwd = 0.5 * x * (1 + t), g * 0.5 * (1 + t + x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x))
        m2 = 0.9 * m + 0.1 * g
        v2 = 0.999 * v + 0.001 * g * g
        p2 = x * 0.99 - 1e-2 * m2 / (np.sqrt(v2 / 0.5) + 1e-8)
        views = [_views(cupy, a.astype(dt)) for a, dt in ((x, dtype), (g, dtype), (m, moments), (v, moments))]
        for (dx, _), (dg, _), (dm, _), (dv, _) in zip(*views):
            got = cupy.asnumpy(cuda_kernels.gelu(cupy, dx)).astype(np.float64)
            np.testing.assert_allclose(got, fwd, rtol=tol, atol=tol)
            got = cupy.asnumpy(cuda_kernels.gelu_grad(cupy, dg, dx)).astype(np.float64)
            np.testing.assert_allclose(got, bwd, rtol=tol, atol=tol)
            outs = cuda_kernels.adam(cupy, dx, dg, dm, dv, 0.9, 0.999, 1e-2, 0.5, 1e-8, 0.99)
            for out, want in zip(outs, (p2, m2, v2)):
                np.testing.assert_allclose(cupy.asnumpy(out).astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype,tol", [("bfloat16", 5e-2), ("float16", 1e-2), ("float32", 1e-4)])
def test_pointer_batched_gemm_reads_strided_views_of_any_float(dtype, tol):
    """``cublas.matmul_two_batch_dims`` called directly (the step takes it for float32/float64; benchmarks/gpu.py
    times it for 16-bit against the per-slice products): q k^T of (b, s, h, d) views equals NumPy's."""
    import cupy

    from shardarray.backend import cublas

    b, s, h, d = 3, 64, 4, 32
    rng = np.random.default_rng(0)
    q, k = (rng.standard_normal((b, s, h, d)).astype(dtype) for _ in range(2))
    gq, gk = cupy.asarray(q), cupy.asarray(k)
    out = cupy.empty((b, h, s, s), dtype=gq.dtype)
    assert cublas.matmul_two_batch_dims(gq.transpose(0, 2, 1, 3), gk.transpose(0, 2, 3, 1), out)
    want = np.einsum("bshk,bthk->bhst", q.astype(np.float64), k.astype(np.float64))
    got = cupy.asnumpy(out).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_float16_batched_gemm_runs_on_cublas_with_float32_accumulation():
    """K = 1024: the product equals float32 accumulation (within its final rounding), not float16 accumulation.

    The same references and measure as ``test_gpu_host`` (where cuBLAS is the fake); here cuBLAS is real.
    """
    import cupy

    from shardarray.backend import cublas
    from test_gpu_host import accumulation_ulps, f16_references

    backend = sa.Mesh({"d": 1}, backend="cupy").backend
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 16, 1024)).astype(np.float16)
    b = rng.standard_normal((4, 1024, 8)).astype(np.float16)
    before = cublas.STATS["gemm_strided_batched"]
    got = cupy.asnumpy(backend.einsum("bmk,bkn->bmn", cupy.asarray(a), cupy.asarray(b)))
    assert cublas.STATS["gemm_strided_batched"] == before + 1  # the tensor-core path ran
    acc32, acc16 = f16_references(a, b)
    near32, near16 = accumulation_ulps(got, acc32, acc16)
    assert near32 <= 1 and near16 >= 4, (near32, near16)


# ---------------------------------------------------------------- NCCL
def _gpu_count():
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


def _nccl_version():
    from cupy.cuda import nccl

    return nccl.get_version()


def _nccl_case(mesh):
    """Collectives, einsum, relayout and a training step on ``mesh``: the values, for comparison."""
    cfg = sa.nn.TransformerConfig(vocab=37, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), 4, cfg.seq_len, cfg.vocab)
    axes = mesh.axis_names
    x = sa.random.normal(mesh, {"batch": 9, "io": 7}, seed=1, dtype="float64", layout={"batch": axes[0]})
    w = sa.random.normal(mesh, {"io": 7, "hidden": 5}, seed=2, dtype="float64", layout={"io": axes[-1]})
    h = sa.einsum(x, w)
    moved = h.relayout({"hidden": axes[0], "batch": axes[1:] or None})
    out = [h.numpy(), moved.numpy(), x.max("io").numpy()]
    params = sa.nn.init_transformer(cfg, mesh, seed=0, dtype="float64")
    tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
    targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
    loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, cfg)
    out.append(np.array(float(loss)))
    out += [grads[k].numpy() for k in sorted(grads)]
    return out


def _compare_with_emulated(shape, devices, comm=None, rules_strategy="mesh2d"):
    rules = sa.nn.strategy_rules(rules_strategy, shape)
    ref = _nccl_case(sa.Mesh(shape, rules=rules))
    mesh = sa.Mesh(shape, backend="cupy", devices=devices, comm=comm, rules=rules)
    assert mesh.comm_kind == "nccl"
    with sa.comm_log() as log:
        got = _nccl_case(mesh)
    assert len(log) > 0
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-12)


def test_nccl_one_gpu_per_device():
    n = _gpu_count()
    if n < 2:
        pytest.skip(f"NCCL across GPUs needs 2 GPUs; this machine has {n}")
    shape = {"rows": 2, "cols": n // 2} if n >= 4 else {"rows": 1, "cols": 2}
    size = shape["rows"] * shape["cols"]
    run_isolated(f"from test_gpu import _compare_with_emulated; _compare_with_emulated({shape!r}, {list(range(size))!r})")


SEVERAL_RANKS_JOB = """
import shardarray as sa
from test_gpu import _compare_with_emulated
mesh = sa.Mesh({"cols": 2}, backend="cupy", devices=[0, 0], comm="nccl")
assert mesh.backend.stream_ptr(0) != mesh.backend.stream_ptr(1), "two ranks on one GPU share a stream"
_compare_with_emulated({"rows": 1, "cols": 2}, [0, 0], comm="nccl")
"""


def test_nccl_several_ranks_on_one_gpu():
    """NCCL >= 2.30's NCCL_MULTI_RANK_GPU_ENABLE=1: two mesh devices on GPU 0, each rank on its own stream."""
    version = _nccl_version()
    if version < 23000:
        pytest.skip(f"NCCL {version} has no multi-rank-per-GPU mode (needs >= 2.30)")
    run_isolated(SEVERAL_RANKS_JOB, env={"NCCL_MULTI_RANK_GPU_ENABLE": "1"})


WITHOUT_MULTI_RANK_JOB = """
import shardarray as sa
mesh = sa.Mesh({"cols": 2}, backend="cupy", devices=[0, 0], comm="nccl")
x = sa.ones(mesh, {"io": 4}, layout={"io": "cols"})
try:
    value = x.sum().numpy()
except sa.CommError as e:
    assert "NCCL allreduce" in str(e) or "set-up" in str(e), e
    assert "NCCL_MULTI_RANK_GPU_ENABLE" in str(e), e
    print("CommError")
else:
    assert value == 4.0, value
    print("worked")
"""


def test_nccl_error_is_a_comm_error_without_the_multi_rank_mode():
    """Two ranks on one GPU without the experimental mode: a CommError that says what to do (or it works)."""
    out = run_isolated(WITHOUT_MULTI_RANK_JOB, env={"NCCL_MULTI_RANK_GPU_ENABLE": None})
    assert "CommError" in out or "worked" in out


MPI_NCCL_JOB = '''
import os, sys, numpy as np, shardarray as sa
sys.path[:0] = [os.path.join({root!r}, "tests", "support"), os.path.join({root!r}, "tests", "backend")]
from test_gpu import _nccl_case
shape = {{"rows": 1, "cols": 2}}
rules = sa.nn.strategy_rules("mesh2d", shape)
mesh = sa.Mesh(shape, backend="cupy", comm="mpi", rules=rules)
got = _nccl_case(mesh)
ref = _nccl_case(sa.Mesh(shape, rules=rules))
for r, g in zip(ref, got):
    np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-12)
from shardarray.backend import cuda_kernels
gpus = {{gpu for _, gpu in cuda_kernels._MODULES}}
assert gpus <= {{mesh.backend.gpus[0]}}, f"kernels compiled on GPUs {{gpus}}, not only this process's"
print("rank", mesh.process_index, "gpu", mesh.backend.gpus[0], "ok")
'''


def test_nccl_across_processes_bootstrapped_over_mpi(tmp_path):
    """mpiexec -n 2, CuPy shards: NCCL communicators from unique ids broadcast over MPI."""
    import importlib.util
    import shutil

    if shutil.which("mpiexec") is None or importlib.util.find_spec("mpi4py") is None:
        pytest.skip("needs mpiexec and mpi4py (pip install '.[mpi]')")
    from mpi_jobs import AS_ROOT

    env = {"PYTHONPATH": str(ROOT)}
    if _gpu_count() < 2:
        if _nccl_version() < 23000:
            pytest.skip("two processes on one GPU need NCCL >= 2.30 (NCCL_MULTI_RANK_GPU_ENABLE)")
        env["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
    script = tmp_path / "job.py"
    script.write_text(MPI_NCCL_JOB.format(root=str(ROOT)))
    try:
        proc = subprocess.run(["mpiexec", "-n", "2", sys.executable, str(script)], capture_output=True, text=True,
                              timeout=HANG_S, env={**os.environ, **AS_ROOT, **env})
    except subprocess.TimeoutExpired:
        pytest.fail(f"the 2-process NCCL job hung for {HANG_S} s")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.count(" ok") == 2


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("bfloat16", 2e-2)])
@pytest.mark.parametrize("strategy,shape", [("replicated", {"d": 1}), ("mesh2d", {"rows": 2, "cols": 2})])
def test_graphed_training_step_replays_the_eager_steps(strategy, shape, dtype, tol):
    """sa.graphed: a captured step replayed 4 times gives the eager steps' losses and parameters (Adam's step
    counted on the GPU), inputs copied in when new, the token check still raised from a replay."""
    import dataclasses

    cfg = sa.nn.TransformerConfig(vocab=64, d_model=32, heads=2, d_kv=16, d_ff=64, n_layers=2, seq_len=16)
    cfg = cfg if dtype == "float32" else dataclasses.replace(cfg, compute_dtype=dtype)
    mesh = sa.Mesh(shape, backend="cupy", rules=sa.nn.strategy_rules(strategy, shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=0)
    opt = sa.optim.Adam(lr=1e-2)
    vg = sa.value_and_grad(sa.nn.transformer_loss)
    batches = [sa.nn.data.pattern_batch(np.random.default_rng(i), 4, cfg.seq_len, cfg.vocab) for i in range(6)]
    batches = [tuple(sa.asarray(t, dims=("batch", "seq"), mesh=mesh) for t in b) for b in batches]

    def step(p, s, tokens, targets):
        loss, g = vg(p, tokens, targets, cfg)
        p, s = opt.update(p, g, s)
        return loss, p, s

    train = sa.graphed(step, donate_argnums=(0, 1))
    pe, se = params, opt.init(params)
    pg, sg = params, opt.init(params)
    for tokens, targets in batches:
        le, pe, se = step(pe, se, tokens, targets)
        lg, pg, sg = train(pg, sg, tokens, targets)
        assert abs(float(lg) - float(le)) <= tol * abs(float(le))
    assert train.captures == 1 and train.launches == 5 and int(sg["step"]) == 6
    for k in pe:
        np.testing.assert_allclose(pg[k].numpy().astype(np.float64), pe[k].numpy().astype(np.float64),
                                   rtol=50 * tol, atol=50 * tol)
    bad = sa.asarray(np.full((4, cfg.seq_len), cfg.vocab), dims=("batch", "seq"), mesh=mesh)
    loss, pg, sg = train(pg, sg, bad, batches[0][1])  # copied into the graph's token buffer; checked on the GPU
    with pytest.raises(sa.DimensionError, match="must lie in"):
        float(loss)


def test_graphed_host_read_is_a_graph_error_on_the_gpu():
    mesh = sa.Mesh({"rows": 2, "cols": 2}, backend="cupy")
    x = sa.ones(mesh, {"i": 8}, layout={"i": "rows"})
    f = sa.graphed(lambda x: x * float((x * x).sum()), warmup=0)
    with pytest.raises(sa.GraphError, match="read no value to the host"):
        f(x)
    g = sa.graphed(lambda x: (x * 3).sum(), warmup=0)  # a capture after the failed one works
    assert float(g(x)) == 24.0 and float(g(x * 2)) == 48.0 and g.captures == 1
