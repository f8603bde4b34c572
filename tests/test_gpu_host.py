"""The CuPy backend's host-side logic on any machine: CuPy and cuBLAS played by ``tests/fake_gpu.py``.

What a real GPU would get wrong silently (a host ``alpha`` read as a device
address, a float16 product accumulated in float16, the cuBLAS path never
taken) is checked here on the fake; ``tests/test_gpu.py`` runs the same
paths on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from fake_gpu import CUBLAS_COMPUTE_32F, FakeCupy
from shardarray.backend import cublas
from shardarray.backend.contract import contract2


def f16_references(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a @ b`` of float16 (B, M, K), (B, K, N) operands accumulated in float32 and in float16, rounded to float16."""
    acc32 = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    acc16 = np.zeros(a.shape[:2] + b.shape[2:], np.float16)
    for k in range(a.shape[2]):  # one rounded float16 addition per k, as a float16 accumulator does
        acc16 = (acc16 + (a[:, :, k, None].astype(np.float32) * b[:, None, k].astype(np.float32))
                 .astype(np.float16)).astype(np.float16)
    return acc32, acc16


def test_tensor_core_dispatch():
    """Only float16 x float16 batched (3-D) products go to cublasGemmStridedBatchedEx."""
    f16, f32 = np.dtype(np.float16), np.dtype(np.float32)
    assert cublas.takes_tensor_cores(f16, f16, 3, 3)
    assert not cublas.takes_tensor_cores(f16, f32, 3, 3)
    assert not cublas.takes_tensor_cores(f32, f32, 3, 3)
    assert not cublas.takes_tensor_cores(f16, f16, 2, 2)


def test_float16_batched_products_accumulate_in_float32(monkeypatch):
    """The cuBLAS call runs (on the fake, column-major as cuBLAS reads it) and matches float32 accumulation.

    K = 1024 products of magnitude ~1 sum to ~32 in float16, where one ulp is
    0.03: float16 accumulation drifts by many ulps, float32 accumulation stays
    within the final rounding.
    """
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 1024)).astype(np.float16)
    b = rng.standard_normal((2, 1024, 5)).astype(np.float16)
    got = np.asarray(cublas.batched_matmul(cupy.asarray(a), cupy.asarray(b)))
    assert cublas.STATS["gemm_strided_batched"] == 1 and gpu.gemms[0]["compute"] == CUBLAS_COMPUTE_32F
    assert gpu.gemms[0]["batch"] == 2 and (gpu.gemms[0]["m"], gpu.gemms[0]["n"], gpu.gemms[0]["k"]) == (5, 3, 1024)
    acc32, acc16 = f16_references(a, b)
    assert got.dtype == np.float16
    ulps = accumulation_ulps(got, acc32, acc16)
    assert ulps[0] <= 1  # float32 accumulation: the sums agree up to their final rounding
    assert ulps[1] >= 4  # float16 accumulation: many ulps away, so the check above can tell them apart


def accumulation_ulps(got: np.ndarray, acc32: np.ndarray, acc16: np.ndarray) -> tuple[float, float]:
    """The largest distances from the float32- and float16-accumulated products, in float16 ulps of the largest entry.

    (Per-entry ulps would overstate the float32 sums' order-dependent
    differences on entries that cancel to nearly zero.)
    """
    ulp = float(np.spacing(np.abs(acc32).max()))
    return (float(np.max(np.abs(got.astype(np.float64) - acc32) / ulp)),
            float(np.max(np.abs(got.astype(np.float64) - acc16) / ulp)))


def test_pointer_mode_is_set_once_per_handle(monkeypatch):
    gpu = FakeCupy(gpus=2).install(monkeypatch)
    import cupy

    x = cupy.asarray(np.ones((2, 3, 4), np.float16))
    for device in (0, 1):
        with cupy.cuda.Device(device):
            for _ in range(3):
                cublas.batched_matmul(x, x.transpose(0, 2, 1).copy())
    assert cublas.STATS["gemm_strided_batched"] == 6
    assert len(gpu.pointer_mode_sets) <= 2  # once per GPU's handle, not twice per call
    assert all(gpu.pointer_modes[h] == 0 for h in (1000, 1001))


def test_other_products_take_cupy_matmul(monkeypatch):
    FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    a, b = np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)
    np.testing.assert_array_equal(cublas.batched_matmul(cupy.asarray(a), cupy.asarray(b)), a @ b)
    empty = cublas.batched_matmul(cupy.asarray(np.ones((2, 3, 0), np.float16)), cupy.asarray(np.ones((2, 0, 5), np.float16)))
    np.testing.assert_array_equal(empty, np.zeros((2, 3, 5)))
    assert cublas.STATS["gemm_strided_batched"] == 0


def test_attention_contraction_reaches_cublas(monkeypatch):
    """CupyBackend.einsum sends a float16 contraction with a batch dim > 1 to cuBLAS; batch 1 is one 2-D matmul."""
    FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    backend = sa.Mesh({"d": 1}, backend="cupy").backend
    rng = np.random.default_rng(1)
    q, k = (rng.standard_normal((2, 3, 8, 16)).astype(np.float16) for _ in range(2))
    got = backend.einsum("bhsk,bhtk->bhst", cupy.asarray(q), cupy.asarray(k))
    assert cublas.STATS["gemm_strided_batched"] == 1
    want = np.einsum("bhsk,bhtk->bhst", q.astype(np.float32), k.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-3)
    contract2(cupy, "bsk,btk->bst", cupy.asarray(q[:1, 0]), cupy.asarray(k[:1, 0]), matmul=cublas.batched_matmul)
    assert cublas.STATS["gemm_strided_batched"] == 1  # batch 1: cupy.matmul's 2-D gemmEx


def test_devices_backend_streams(monkeypatch):
    """One stream per GPU for shared shards; one per mesh device for NCCL ranks; to_numpy waits for all of a GPU's."""
    gpu = FakeCupy(gpus=2).install(monkeypatch)
    from shardarray.backend.cupy_backend import on_devices

    shared = on_devices((0, 0, 1, 1))
    ranks = shared.as_ranks()
    assert ranks is on_devices((0, 0, 1, 1), ranks=True) and ranks.as_ranks() is ranks
    assert len({shared.stream_ptr(d) for d in range(4)}) == 2 and not shared.ranks
    assert len({ranks.stream_ptr(d) for d in range(4)}) == 4 and ranks.per_device
    with ranks.scope(1):
        assert gpu.current() == (0, ranks.stream_ptr(1))
        import cupy

        x = cupy.asarray(np.arange(3.0))
    assert gpu.current() == (0, 0)
    gpu.synchronized.clear()
    np.testing.assert_array_equal(ranks.to_numpy(x), np.arange(3.0))
    assert ranks.stream_ptr(1) in gpu.synchronized
    with pytest.raises(sa.MeshError, match=r"GPU\(s\) \[5\].*2 GPU"):
        on_devices((0, 5))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the fake runs no kernels: their outputs are garbage
@pytest.mark.parametrize("shape, strategy, compute", [({"d": 1}, "replicated", None), ({"d": 1}, "replicated",
                         "bfloat16"), ({"rows": 2, "cols": 2}, "mesh2d", None)])
def test_a_training_step_reads_nothing_back_before_the_loss(monkeypatch, shape, strategy, compute):
    """Issue 21: no device-to-host copy or synchronisation inside a step; the loss read is the only one.

    Counted on the fake: stream and device synchronisations, ``.get()`` and
    ``cupy.asnumpy``, and the conversions that read a device value on the
    host (``bool``, ``float``, ``int``, ``item``, ``tolist``).
    """
    from fake_gpu import FakeArray

    gpu = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    reads: list[str] = []
    for name in ("get", "__bool__", "__float__", "__int__", "__index__", "item", "tolist"):
        def counted(self, *args, _name=name, _orig=getattr(FakeArray, name), **kwargs):
            if type(self) is FakeArray:
                reads.append(_name)
            return _orig(self, *args, **kwargs)

        monkeypatch.setattr(FakeArray, name, counted)
    asnumpy = cupy.asnumpy
    monkeypatch.setattr(cupy, "asnumpy", lambda a, stream=None: (reads.append("asnumpy"), asnumpy(a))[1])
    cfg = sa.nn.TransformerConfig(vocab=64, d_model=32, heads=2, d_kv=16, d_ff=64, n_layers=1, seq_len=16,
                                  compute_dtype=compute)
    mesh = sa.Mesh(shape, backend="cupy", rules=sa.nn.strategy_rules(strategy, shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=0)
    opt = sa.optim.Adam(1e-3)
    state = opt.init(params)
    tok, tgt = sa.nn.data.pattern_batch(0, 2, 16, 64)
    tokens, targets = (sa.asarray(a, dims=("batch", "seq"), mesh=mesh) for a in (tok, tgt))
    step = sa.value_and_grad(sa.nn.transformer_loss)
    for _ in range(2):  # the second step: caches (plans, kernels, memo) warm
        reads.clear()
        gpu.synchronized.clear()
        loss, grads = step(params, tokens, targets, cfg)
        params, state = opt.update(params, grads, state)
        assert reads == [] and gpu.synchronized == []
        float(loss)
        assert len(reads) >= 1  # the loss read is seen, so the counting works
