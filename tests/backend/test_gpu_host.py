"""The CuPy backend's host-side logic on any machine: CuPy and cuBLAS played by ``tests/support/fake_gpu.py``.

What a real GPU would get wrong silently (a host ``alpha`` read as a device
address, a float16 product accumulated in float16, the cuBLAS path never
taken) is checked here on the fake; ``tests/backend/test_gpu.py`` runs the same
paths on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from fake_gpu import CUBLAS_COMPUTE_32F, FakeCupy
from shardarray.backend import cublas
from shardarray.backend.contract import contract2
from helpers import EINSUM_EQUATIONS as EQUATIONS
from helpers import host
from helpers import ref_contract as _ref_contract


def f16_references(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a @ b`` of float16 (B, M, K), (B, K, N) operands accumulated in float32 and in float16, rounded to float16."""
    acc32 = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    acc16 = np.zeros(a.shape[:2] + b.shape[2:], np.float16)
    for k in range(a.shape[2]):  # one rounded float16 addition per k, as a float16 accumulator does
        acc16 = (acc16 + (a[:, :, k, None].astype(np.float32) * b[:, None, k].astype(np.float32))
                 .astype(np.float16)).astype(np.float16)
    return acc32, acc16


def test_cublas_dispatch():
    """Products of one real floating dtype, 2-D or 3-D, go to cublasGemmStridedBatchedEx; others to cupy.matmul."""
    f16, f32, f64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
    assert cublas.calls_cublas(f16, f16, 3, 3) and cublas.calls_cublas(f16, f16, 2, 2)
    assert cublas.calls_cublas(f32, f32, 3, 3) and cublas.calls_cublas(f64, f64, 2, 2)
    assert not cublas.calls_cublas(f16, f32, 3, 3)
    assert not cublas.calls_cublas(np.complex64, np.complex64, 2, 2)
    assert not cublas.calls_cublas(np.int32, np.int32, 2, 2)
    assert not cublas.calls_cublas(f32, f32, 3, 2)


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
    got = host(cublas.batched_matmul(cupy.asarray(a), cupy.asarray(b)))
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

    a, b = np.ones((2, 3, 4), np.complex64), np.ones((2, 4, 5), np.complex64)
    np.testing.assert_array_equal(host(cublas.batched_matmul(cupy.asarray(a), cupy.asarray(b))), a @ b)
    ai, bi = np.ones((3, 4), np.int64), np.ones((4, 5), np.int64)
    np.testing.assert_array_equal(host(cublas.batched_matmul(cupy.asarray(ai), cupy.asarray(bi))), ai @ bi)
    empty = cublas.batched_matmul(cupy.asarray(np.ones((2, 3, 0), np.float16)), cupy.asarray(np.ones((2, 0, 5), np.float16)))
    np.testing.assert_array_equal(host(empty), np.zeros((2, 3, 5)))
    assert cublas.STATS["gemm_strided_batched"] == 0


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-5), ("bfloat16", 3e-2), ("float16", 3e-3)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("batch", [0, 1, 3])
def test_transposed_operands_are_read_in_place(monkeypatch, dtype, tol, ta, tb, batch):
    """A transposed (column-major) operand goes to cuBLAS as op T with its own leading dimension, not copied.

    Every float dtype, 2-D (batch 0) and 3-D, on the fake cuBLAS, which reads the raw addresses column-major as
    cuBLAS does: a wrong op, leading dimension or batch stride gives a wrong product.
    """
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    rng = np.random.default_rng(batch)
    lead = (batch,) if batch else ()

    def operand(rows, cols, transposed):
        if transposed:  # stored (cols, rows), viewed (rows, cols): column-major
            x = rng.standard_normal(lead + (cols, rows)).astype(dtype)
            return x, cupy.asarray(x).swapaxes(-1, -2)
        x = rng.standard_normal(lead + (rows, cols)).astype(dtype)
        return x, cupy.asarray(x)

    (a_host, a), (b_host, b) = operand(5, 7, ta), operand(7, 4, tb)
    copies = []
    real = cupy.ascontiguousarray
    monkeypatch.setattr(cupy, "ascontiguousarray", lambda x, *k: copies.append(x.shape) or real(x, *k))
    got = host(cublas.batched_matmul(a, b)).astype(np.float64)  # .get() of a strict CuPy array
    want = np.swapaxes(a_host, -1, -2) if ta else a_host
    want = want.astype(np.float64) @ (np.swapaxes(b_host, -1, -2) if tb else b_host).astype(np.float64)
    assert copies == [] and cublas.STATS["gemm_strided_batched"] == 1 and len(gpu.gemms) == 1
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 4)


def test_strided_operands_are_made_contiguous(monkeypatch):
    """A view cuBLAS cannot read in place (every other column) is copied first, then multiplied right."""
    FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    x = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)
    y = np.ones((2, 4, 2), np.float32)
    got = cublas.batched_matmul(cupy.asarray(x)[:, :, ::2], cupy.asarray(y))
    np.testing.assert_array_equal(host(got), x[:, :, ::2] @ y)
    assert cublas.STATS["gemm_strided_batched"] == 1


@settings(max_examples=60, deadline=None)
@given(eq=st.sampled_from(EQUATIONS), dtype=st.sampled_from(["float32", "float64", "bfloat16"]), data=st.data())
def test_cupy_contractions_equal_einsum(eq, dtype, data):
    """CupyBackend.einsum (contract2 + cuBLAS, on the fake) equals NumPy's einsum, empty dims included."""
    from shardarray.backend.cupy_backend import CupyBackend

    with pytest.MonkeyPatch.context() as m:  # a fresh fake per example
        FakeCupy(gpus=1).install(m)
        import cupy

        lhs, out = eq.split("->")
        ta, tb = lhs.split(",")
        size = {c: data.draw(st.integers(0, 3)) for c in sorted(set(ta + tb))}
        rng = np.random.default_rng(0)
        a = rng.standard_normal([size[c] for c in ta]).astype(dtype)
        b = rng.standard_normal([size[c] for c in tb]).astype(dtype)
        got = CupyBackend().einsum(eq, cupy.asarray(a), cupy.asarray(b))
        assert got.shape == tuple(size[c] for c in out) and got.dtype == a.dtype
        tol = 3e-2 if dtype == "bfloat16" else 1e-5
        np.testing.assert_allclose(host(got).astype(np.float64), _ref_contract(eq, a, b), rtol=tol, atol=tol)


def test_attention_contraction_reaches_cublas(monkeypatch):
    """CupyBackend.einsum sends a float16 contraction with a batch dim to cuBLAS; batch 1 is one 2-D product."""
    FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    backend = sa.Mesh({"d": 1}, backend="cupy").backend
    rng = np.random.default_rng(1)
    q, k = (rng.standard_normal((2, 3, 8, 16)).astype(np.float16) for _ in range(2))
    got = backend.einsum("bhsk,bhtk->bhst", cupy.asarray(q), cupy.asarray(k))
    assert cublas.STATS["gemm_strided_batched"] == 1
    want = np.einsum("bhsk,bhtk->bhst", q.astype(np.float32), k.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(host(got), want, rtol=2e-3, atol=2e-3)
    contract2(cupy, "bsk,btk->bst", cupy.asarray(q[:1, 0]), cupy.asarray(k[:1, 0]), matmul=cublas.batched_matmul)
    assert cublas.STATS["gemm_strided_batched"] == 2  # batch 1: one 2-D product, on cuBLAS as well


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("eq", ["bshk,bthk->bhst", "bhst,bthk->bshk", "bhst,bshk->bthk", "bshk,bhst->bthk"])
@pytest.mark.parametrize("b, h", [(2, 5), (5, 2), (3, 3)])
def test_attention_products_read_heads_in_place(monkeypatch, eq, dtype, b, h):
    """Batch dims b and h that do not merge in place (q, k, v are (b, s, h, k)): one strided batched product per
    index of the shorter of them, operands read and the output slice written in place (no transposing copy)."""
    fake = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    size = {"b": b, "h": h, "s": 4, "t": 6, "k": 3}
    lhs, out = eq.split("->")
    rng = np.random.default_rng(0)
    a, c = (rng.standard_normal([size[x] for x in t]).astype(dtype) for t in lhs.split(","))
    got = contract2(cupy, eq, cupy.asarray(a), cupy.asarray(c), matmul=cublas.batched_matmul)
    if dtype == "float32":  # without matmul2: a copy and one product (cuBLAS's float32 slices are slow)
        assert [g["batch"] for g in fake.gemms] == [b * h]
    else:
        assert [g["batch"] for g in fake.gemms] == [max(b, h)] * min(b, h)
    tol = 1e-5 if dtype == "float32" else 3e-2
    np.testing.assert_allclose(host(got).astype(np.float64), _ref_contract(eq, a, c), rtol=tol, atol=tol)
    assert got.shape == tuple(size[x] for x in out)
    assert got.flags.c_contiguous or dtype == "float32"  # (written in place; float32's copy path may give a view)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("eq", ["bshk,bthk->bhst", "bhst,bthk->bshk", "bhst,bshk->bthk", "bshk,bhst->bthk"])
def test_attention_products_are_one_pointer_batched_gemm(monkeypatch, eq, dtype, strict):
    """CupyBackend.einsum over batch dims that do not merge in place: one cublasGemmBatchedEx on matrix addresses
    computed on the device (kernels/gemm_pointers.cu), operands read and the output written in place, in every
    float dtype (without the kernels 16-bit operands take one strided product per slice:
    test_attention_products_read_heads_in_place)."""
    fake = FakeCupy(gpus=1, strict=strict).install(monkeypatch)
    import cupy

    from shardarray.backend.cupy_backend import CupyBackend

    size = {"b": 3, "h": 2, "s": 4, "t": 5, "k": 3}
    lhs, out = eq.split("->")
    rng = np.random.default_rng(0)
    a, c = (rng.standard_normal([size[x] for x in t]).astype(dtype) for t in lhs.split(","))
    got = CupyBackend().einsum(eq, cupy.asarray(a), cupy.asarray(c))
    assert [(g["batch"], g.get("pointers")) for g in fake.gemms] == [(6, True)]
    assert [r["name"] for r in fake.launches] == ["batch_pointers"] and cublas.STATS["gemm_batched"] == 1
    tol = {"float64": 1e-12, "float32": 1e-5, "float16": 3e-2, "bfloat16": 3e-2}[dtype]
    np.testing.assert_allclose(host(got).astype(np.float64), _ref_contract(eq, a, c), rtol=tol, atol=tol)
    assert got.shape == tuple(size[x] for x in out) and got.flags.c_contiguous


def test_attention_products_without_kernels_take_slices_or_copies(monkeypatch):
    monkeypatch.setenv("SHARDARRAY_KERNELS", "0")
    fake = FakeCupy(gpus=1, strict=True).install(monkeypatch)
    import cupy

    from shardarray.backend.cupy_backend import CupyBackend

    rng = np.random.default_rng(0)
    q, k = (rng.standard_normal((3, 4, 2, 5)).astype(np.float16) for _ in range(2))
    got = CupyBackend().einsum("bshk,bthk->bhst", cupy.asarray(q), cupy.asarray(k))
    assert [g["batch"] for g in fake.gemms] == [3, 3] and not fake.launches  # one per head, no kernel
    np.testing.assert_allclose(host(got).astype(np.float64), _ref_contract("bshk,bthk->bhst", q, k), rtol=3e-2,
                               atol=3e-2)


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
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    # the installed fake's array type: fake_gpu.FakeArray, or strict_cupy.ndarray under --backend=cupy
    device_array = type(cupy.asarray(0))
    reads: list[str] = []
    for name in ("get", "__bool__", "__float__", "__int__", "__index__", "item", "tolist"):
        if not hasattr(device_array, name):  # (the strict stand-in defines no __index__)
            continue

        def counted(self, *args, _name=name, _orig=getattr(device_array, name), **kwargs):
            if type(self) is device_array:
                reads.append(_name)
            return _orig(self, *args, **kwargs)

        monkeypatch.setattr(device_array, name, counted)
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


@pytest.mark.parametrize("kernels", ["1", "0"])
def test_bfloat16_training_step_runs_every_product_in_bfloat16(monkeypatch, kernels):
    """compute_dtype="bfloat16" on CuPy shards: every product of the step (forward and backward) is a bfloat16
    cuBLAS gemm. On an H200 most of them ran in float32: ``q * (1/sqrt(d_kv))`` and ``where(mask, scores, -inf)``
    made float32 (float64 here) shards out of bfloat16 ones, as CuPy promotes bfloat16 with a Python float.

    With the fused kernels (which the fake launches but does not run) only the dtypes are checked; without them
    the loss and gradients equal the NumPy backend's.
    """
    monkeypatch.setenv("SHARDARRAY_KERNELS", kernels)
    cfg = sa.nn.TransformerConfig(vocab=32, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8,
                                  compute_dtype="bfloat16")
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), 2, cfg.seq_len, cfg.vocab)

    def step(backend):
        mesh = sa.Mesh({"d": 1}, backend=backend)
        params = sa.nn.init_transformer(cfg, mesh, seed=0, dtype="float32")
        tokens, targets = (sa.asarray(t, dims=("batch", "seq"), mesh=mesh) for t in (tok, tgt))
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, cfg)
        assert all(g.dtype == np.float32 for g in grads.values())
        return float(loss), {k: g.numpy() for k, g in grads.items()}

    ref = step("numpy")
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    fallback = []
    real = cupy.matmul
    monkeypatch.setattr(cupy, "matmul", lambda a, b: fallback.append((a.dtype, b.dtype)) or real(a, b))
    got = step("cupy")
    assert fallback == [] and len(gpu.gemms) >= 16, fallback
    products = [g["dtype"] for g in gpu.gemms if g["n"] > 1]  # n == 1: a float32 sum as a product with ones
    assert set(products) == {"bfloat16"}, products
    if kernels == "0":
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-2)
        for k in ref[1]:
            np.testing.assert_allclose(got[1][k], ref[1][k], rtol=0.1, atol=1e-2, err_msg=k)


def test_bfloat16_with_python_scalars_stays_bfloat16_on_cupy(monkeypatch):
    """An array's dtype is its shards' dtype: bfloat16 with a Python float stays bfloat16 (the array API's rule),
    where CuPy would compute float32 or float64."""
    FakeCupy(gpus=1).install(monkeypatch)
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="cupy")
    x = sa.random.normal(mesh, {"a": 5, "b": 3}, seed=0, layout={"a": "row"}).astype("bfloat16")
    for y in (x * 0.125, 0.5 + x, x / 3.0, sa.where(x > 0, x, -np.inf), sa.where(x > 0, 1.5, x), x ** 2.0):
        assert y.dtype == x.dtype and {s.dtype for s in y.shards} == {x.dtype}, (y.dtype, {s.dtype for s in y.shards})
    np.testing.assert_allclose((x * 0.125).numpy().astype(np.float64), x.numpy().astype(np.float64) * 0.125)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_leading_axis_sums_are_one_cublas_product(monkeypatch, dtype):
    """CupyBackend.sum over the leading axes of a contiguous float block is ones @ x on cuBLAS; other sums (trailing
    axes, a strided block, a wider accumulator, integers) are cupy.sum's."""
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    from shardarray.backend.cupy_backend import CupyBackend

    backend = CupyBackend()
    x = np.random.default_rng(0).standard_normal((4, 3, 5)).astype(dtype)
    d = cupy.asarray(x)
    tol = 3e-2 if dtype in ("bfloat16", "float16") else 1e-6
    for axis in [(0,), (0, 1), (1, 0)]:
        got = backend.sum(d, axis)
        assert got.dtype == x.dtype and got.shape == x.sum(axis=axis).shape
        np.testing.assert_allclose(host(got).astype(float), x.astype(float).sum(axis=axis), rtol=tol, atol=tol)
    assert len(gpu.gemms) == 3 and all(g["n"] == 1 for g in gpu.gemms)
    wider = "float32" if dtype == "float64" else "float64"  # an accumulator other than x's dtype
    for axis, y, acc in [((2,), d, None), ((0,), d[:, :, ::2], None), ((0,), d, wider), ((0, 1, 2), d, None)]:
        got = backend.sum(y, axis, acc)
        want = host(y).astype(float).sum(axis=axis)
        np.testing.assert_allclose(host(got).astype(float), want, rtol=tol, atol=tol)
    assert len(gpu.gemms) == 3
    ints = cupy.asarray(np.arange(12).reshape(4, 3))
    assert host(backend.sum(ints, (0,))).tolist() == [18, 22, 26] and len(gpu.gemms) == 3
    if dtype in ("float16", "bfloat16"):  # a float32 sum of 16-bit values: the product writes float32 accumulators
        got = backend.sum(d, (0, 1), "float32")
        assert got.dtype == np.float32 and len(gpu.gemms) == 4 and gpu.gemms[-1]["out_dtype"] == "float32"
        np.testing.assert_allclose(host(got), x.astype(np.float32).sum(axis=(0, 1)), rtol=1e-6, atol=1e-6)


def test_array_op_vjps_stay_bfloat16_on_cupy(monkeypatch):
    """Gradients through the array-op GELU (no fused kernels) have bfloat16 shards: its forward and VJP compute with
    Python-float constants, which CuPy would widen to float32."""
    monkeypatch.setenv("SHARDARRAY_KERNELS", "0")
    FakeCupy(gpus=1).install(monkeypatch)
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="cupy")
    x = sa.random.normal(mesh, {"a": 6, "b": 4}, seed=1, layout={"a": "row", "b": "col"}).astype("bfloat16")
    w = sa.random.normal(mesh, {"b": 4, "c": 3}, seed=2, layout={"b": "col"}).astype("bfloat16")
    grads = sa.grad(lambda p: sa.einsum("a b, b c -> a c", sa.gelu(p["x"]), p["w"]).astype("float32").sum())(
        {"x": x, "w": w})
    for k, g in grads.items():
        assert g.dtype == x.dtype and {s.dtype for s in g.shards} == {x.dtype}, (k, {s.dtype for s in g.shards})


def test_fused_elementwise_kernels_keep_a_0d_shape(monkeypatch):
    """CuPy's ``ascontiguousarray`` makes a 0-d array 1-d (the strict stand-in does too): the fused kernels' outputs
    were shape (1,) for a 0-d input, and gathering such a shard into a 0-d array failed (found on an H200 through
    Adam's 0-d parameter)."""
    FakeCupy(gpus=1, strict=True).install(monkeypatch)
    mesh = sa.Mesh({"d": 1}, backend="cupy")
    x = sa.full(mesh, {}, 0.5, "float32")
    y, g = sa.gelu(x), sa.grad(lambda x: sa.gelu(x).sum())(x)
    assert y.shards[0].shape == () and g.shards[0].shape == ()
    want = 0.5 * 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (0.5 + 0.044715 * 0.5**3)))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    w = {"s": x}
    opt = sa.optim.Adam(1e-2)
    w2, state = opt.update(w, {"s": sa.full(mesh, {}, 0.5, "float32")}, opt.init(w))
    assert w2["s"].shards[0].shape == () and state["m"]["s"].shards[0].shape == ()
    np.testing.assert_allclose(w2["s"].numpy(), 0.49, rtol=1e-6)
