"""bfloat16 as a first-class dtype: every op family against a float32 NumPy reference at bfloat16 tolerance.

Inputs are bfloat16 (``ml_dtypes``); the reference runs NumPy in float32 on
the same (already rounded) values. On NumPy shards the math runs in float32
and rounds once, so results agree within a few bfloat16 ulps (rtol ~1e-2).
"""

from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fake_nccl
import shardarray as sa
from fake_gpu import FakeCupy
from helpers import MESH_SHAPES, device_blocks, host, layouts, meshes, sizes_strategy
from shardarray.backend import cublas, cuda_kernels
from shardarray.backend.numpy_backend import NumpyBackend
from shardarray.comm.nccl import NcclCommunicator
from shardarray.dtypes import accumulation_dtype, as_dtype, compute_dtype, is_real_float, promote

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.float32
RTOL, ATOL = 2e-2, 2e-2
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


def values(shape, seed=0, scale=1.0):
    """float32 values exactly representable in bfloat16."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(BF16).astype(F32)


def bf(a, dims, mesh, layout=None):
    return sa.asarray(a.astype(BF16), dims=dims, mesh=mesh, layout=layout or {})


def close(got, want, rtol=RTOL, atol=ATOL):
    g = got.numpy() if isinstance(got, sa.ShardArray) else np.asarray(got)
    assert g.dtype == BF16, g.dtype
    np.testing.assert_allclose(g.astype(F32), np.asarray(want, F32), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- dtype rules
def test_dtype_rules():
    assert as_dtype("bfloat16") == BF16 and as_dtype(ml_dtypes.bfloat16) == BF16
    assert is_real_float("bfloat16") and accumulation_dtype("bfloat16") == F32 and compute_dtype("bfloat16") == F32
    assert compute_dtype("float16") is None
    assert promote("bfloat16", "float16") == F32 and promote("bfloat16", "bfloat16") == BF16
    assert promote("bfloat16", "int8") == BF16 and promote("bfloat16", "int64") == np.float64
    mesh = sa.Mesh({"row": 2, "col": 2})
    assert sa.zeros(mesh, {"a": 3}, dtype="bfloat16").dtype == BF16


@pytest.mark.parametrize("shape", MESH_SHAPES)
def test_astype_round_trips(shape):
    mesh = sa.Mesh(shape)
    a = np.random.default_rng(0).standard_normal((5, 3)).astype(F32)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": mesh.axis_names[0]})
    y = x.astype("bfloat16")
    assert y.dtype == BF16
    np.testing.assert_array_equal(y.numpy(), a.astype(BF16))
    np.testing.assert_array_equal(y.astype("float32").numpy(), a.astype(BF16).astype(F32))  # exact widening
    assert y.astype("float32").astype("bfloat16").numpy().tobytes() == y.numpy().tobytes()


# ---------------------------------------------------------------- elementwise and reductions (hypothesis)
@st.composite
def cases(draw):
    mesh = draw(meshes())
    dims = ("a", "b")
    sizes = draw(sizes_strategy(dims, 0, 7))
    lay = draw(layouts(mesh, dims))
    return mesh, dims, sizes, lay


@SETTINGS
@given(cases(), st.integers(0, 2**16))
def test_elementwise(case, seed):
    mesh, dims, sizes, lay = case
    a = values(sizes, seed)
    x = bf(a, dims, mesh, lay)
    close(sa.exp(x), np.exp(a))
    close(sa.tanh(x), np.tanh(a))
    close(x * 0.5 + 1, a * 0.5 + 1)  # a Python float keeps bfloat16 (as NumPy's weak scalars do for float16)
    close(sa.gelu(x), 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3))))
    close(sa.relu(x), np.maximum(a, 0))
    b = values(sizes[1:], seed + 1)
    y = bf(b, ("b",), mesh)
    close(x + y, a + b)
    close(x * y - x, a * b - a)
    assert (x > 0).dtype == np.bool_
    np.testing.assert_array_equal((x > 0).numpy(), a > 0)
    assert (x + sa.asarray(b, dims=("b",), mesh=mesh)).dtype == F32  # bfloat16 with float32 is float32


@SETTINGS
@given(cases(), st.integers(0, 2**16))
def test_reductions(case, seed):
    mesh, dims, sizes, lay = case
    a = values(sizes, seed)
    x = bf(a, dims, mesh, lay)
    for d, axis in (("a", 0), ("b", 1)):
        close(x.sum(d), a.sum(axis), atol=5e-2)
        if a.shape[axis]:
            close(x.mean(d), a.mean(axis))
            close(x.max(d), a.max(axis), rtol=0, atol=0)  # exact
            close(x.min(d), a.min(axis), rtol=0, atol=0)
            np.testing.assert_array_equal(sa.argmax(x, d).numpy(), a.argmax(axis))
            close(sa.softmax(x, d), np.exp(a - a.max(axis, keepdims=True))
                  / np.exp(a - a.max(axis, keepdims=True)).sum(axis, keepdims=True))
            m = a.max(axis, keepdims=True)
            close(sa.logsumexp(x, d), (np.log(np.exp(a - m).sum(axis, keepdims=True)) + m).squeeze(axis))
            close(sa.var(x, d), a.var(axis))
    close(x.sum(), a.sum(), atol=1e-1)


def test_sums_accumulate_in_float32():
    """4096 bfloat16 ones: a bfloat16 accumulator stops at 256; float32 accumulation gives 4096."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"a": 2, "b": 4096}, dtype="bfloat16", layout={"b": "col"})
    np.testing.assert_array_equal(x.sum("b").numpy().astype(F32), [4096, 4096])
    np.testing.assert_array_equal(x.mean("b").numpy().astype(F32), [1, 1])
    assert x.sum("b").dtype == BF16


def test_emulated_reductions_add_in_float32():
    """256 + 1 + 1 in bfloat16, one addition at a time, stays 256 (257 rounds to even); float32 adds to 258."""
    mesh = sa.Mesh({"all": 4})
    shards = device_blocks(mesh, lambda d: np.array([(256, 1, 1, 0)[d]], BF16))
    out = [host(o) for o in mesh.comm.allreduce(shards, ("all",), op="sum")]
    assert all(o.dtype == BF16 and float(o[0]) == 258 for o in out)
    assert float(host(mesh.comm.allreduce(shards, ("all",), op="max")[0])[0]) == 256


# ---------------------------------------------------------------- einsum
def test_backend_einsum_rounds_once():
    """NumPy shards: bfloat16 operands contract in float32 and round once (2 operands and 3)."""
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(BF16) for s in ((2, 3, 40), (2, 40, 5), (5, 4)))
    be = NumpyBackend()
    want = np.einsum("bik,bkj->bij", a.astype(F32), b.astype(F32)).astype(BF16)
    got = be.einsum("bik,bkj->bij", a, b)
    assert got.dtype == BF16 and got.tobytes() == want.tobytes()
    want3 = np.einsum("bik,bkj,jl->bil", a.astype(F32), b.astype(F32), c.astype(F32))
    got3 = be.einsum("bik,bkj,jl->bil", a, b, c)
    assert got3.dtype == BF16
    np.testing.assert_allclose(got3.astype(F32), want3, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", MESH_SHAPES + [{"p": 3, "q": 2}])
@pytest.mark.parametrize("algorithm", ["auto", "summa"])
def test_einsum_split_contracted_dim(shape, algorithm):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names
    if algorithm == "summa" and (len(ax) < 2 or mesh.axis_size(ax[0]) != mesh.axis_size(ax[1])):
        pytest.skip("SUMMA needs a q x q pair of mesh axes")
    # auto: uneven blocks (5, 7, 3 over 2 or 3 devices); SUMMA: equal blocks, as it requires
    a, w = (values((5, 7), 1), values((7, 3), 2)) if algorithm == "auto" else (values((6, 8), 1), values((8, 4), 2))
    x = bf(a, ("b", "k"), mesh, {"b": ax[0], "k": ax[1]} if len(ax) > 1 else {"k": ax[0]})
    wx = bf(w, ("k", "h"), mesh, {"k": ax[0], "h": ax[1]} if len(ax) > 1 else {"k": ax[0]})
    with sa.comm_log() as log:
        y = sa.einsum("b k, k h -> b h", x, wx, algorithm=algorithm)
        close(y, a @ w)
    assert y.dtype == BF16
    for r in log.records:  # bfloat16 payloads: 2 bytes per element
        assert r.bytes == 2 * r.elements and r.dtype == "bfloat16", r


def test_split_sum_allreduces_float32_partials():
    """A bfloat16 sum over a split dim allreduces float32 partial sums (4 bytes each), rounded once after."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = bf(values((4, 6)), ("a", "b"), mesh, {"b": "col"})
    with sa.comm_log() as log:
        s = x.sum("b")
        s.numpy()
    assert [(r.op, r.dtype, r.bytes) for r in log.records] == [("allreduce", "float32", 4 * 4)]


# ---------------------------------------------------------------- nn ops, indexing, structure
@pytest.mark.parametrize("shape", MESH_SHAPES)
def test_layer_norm_and_cross_entropy(shape):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names
    a = values((4, 6), 3)
    x = bf(a, ("batch", "d_model"), mesh, {"d_model": ax[-1]})
    one = sa.ones(mesh, {"d_model": 6}, dtype="bfloat16")
    zero = sa.zeros(mesh, {"d_model": 6}, dtype="bfloat16")
    want = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)
    close(sa.nn.layer_norm(x, one, zero), want, rtol=3e-2, atol=3e-2)
    t = np.array([0, 5, 2, 3])
    targets = sa.asarray(t, dims=("batch",), mesh=mesh)
    loss = sa.nn.cross_entropy(x.rename({"d_model": "vocab"}) if hasattr(x, "rename") else
                               bf(a, ("batch", "vocab"), mesh, {"vocab": ax[-1]}), targets)
    m = a.max(1, keepdims=True)
    ref = (np.log(np.exp(a - m).sum(1)) + m[:, 0]) - a[np.arange(4), t]
    np.testing.assert_allclose(loss.numpy().astype(F32), ref, rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("shape", MESH_SHAPES)
def test_take_one_hot_slicing_concat_reshape_relayout(shape):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names
    a = values((6, 5), 4)
    x = bf(a, ("v", "h"), mesh, {"v": ax[0]})
    ids = sa.asarray(np.array([5, 0, 2]), dims=("t",), mesh=mesh)
    got = sa.take(x, ids, "v")
    assert got.dtype == BF16 and np.array_equal(got.numpy().astype(F32), a[[5, 0, 2]].T if got.dims[0] == "h"
                                                else a[[5, 0, 2]])
    oh = sa.one_hot(ids, "v", 6, dtype="bfloat16")
    assert oh.dtype == BF16 and np.array_equal(oh.numpy().astype(F32).sum(), 3.0)
    s = x.isel(v=slice(1, 5))
    assert s.dtype == BF16 and np.array_equal(s.numpy().astype(F32), a[1:5])
    c = sa.concat([x, x], "v")
    assert c.dtype == BF16 and np.array_equal(c.numpy().astype(F32), np.concatenate([a, a]))
    r = x.split_dim("v", {"v1": 2, "v2": 3})
    assert r.dtype == BF16 and np.array_equal(r.numpy().astype(F32), a.reshape(2, 3, 5))
    moved = sa.relayout(x, {"h": ax[-1]}) if hasattr(sa, "relayout") else x
    assert moved.dtype == BF16 and np.array_equal(moved.numpy().astype(F32), a)


def test_random_normal_and_uniform():
    mesh = sa.Mesh({"row": 2, "col": 2})
    n = sa.random.normal(mesh, {"a": 64, "b": 8}, seed=3, dtype="bfloat16", layout={"a": "row"})
    ref = sa.random.normal(sa.Mesh({"d": 1}), {"a": 64, "b": 8}, seed=3, dtype="float64")
    assert n.dtype == BF16 and n.numpy().tobytes() == ref.numpy().astype(BF16).tobytes()
    u = sa.random.uniform(mesh, {"a": 100000}, seed=1, dtype="bfloat16", layout={"a": "col"}).numpy()
    assert u.dtype == BF16 and float(u.max()) < 1.0 and float(u.min()) >= 0.0  # half-open after rounding


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}])
def test_vjps_give_bfloat16_gradients_close_to_float32(shape):
    mesh = sa.Mesh(shape)
    ax = mesh.axis_names
    a, w = values((4, 6), 5), values((6, 3), 6, 0.5)

    def loss(p):
        h = sa.gelu(sa.einsum("b k, k h -> b h", p["x"], p["w"]))
        return sa.logsumexp(h, "h").sum() + sa.tanh(p["x"]).mean()

    grads = {}
    for dt in ("float32", "bfloat16"):
        p = {"x": sa.asarray(a, dims=("b", "k"), mesh=mesh, layout={"k": ax[-1]}).astype(dt),
             "w": sa.asarray(w, dims=("k", "h"), mesh=mesh, layout={"k": ax[0]}).astype(dt)}
        grads[dt] = sa.grad(loss)(p)
    for name in ("x", "w"):
        g16, g32 = grads["bfloat16"][name], grads["float32"][name]
        assert g16.dtype == BF16 and g16.dims == g32.dims
        np.testing.assert_allclose(g16.numpy().astype(F32), g32.numpy(), rtol=5e-2, atol=5e-2)


# ---------------------------------------------------------------- accounting
def test_profile_counts_bfloat16_at_two_bytes():
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="meta")
    peaks = {}
    for dt in ("float32", "bfloat16"):
        with sa.profile() as prof:
            x = sa.ones(mesh, {"batch": 8, "io": 16}, dtype=dt, layout={"batch": "row", "io": "col"})
            w = sa.ones(mesh, {"io": 16, "hidden": 8}, dtype=dt, layout={"io": "row"})
            sa.einsum("batch io, io hidden -> batch hidden", x, w)
        peaks[dt] = (prof.peak_memory_bytes_per_device, prof.comm_bytes_per_device)
        assert set(prof.flops_by_dtype) == {dt}
    assert peaks["bfloat16"][0] * 2 == peaks["float32"][0]
    assert peaks["bfloat16"][1] * 2 == peaks["float32"][1] > 0


def test_bench_cli_accepts_bfloat16():
    from shardarray.bench.args import FLOAT_DTYPES
    from shardarray.bench import cli

    assert "bfloat16" in FLOAT_DTYPES
    assert "bfloat16" in open(cli.__file__).read() or "FLOAT_DTYPES" in open(cli.__file__).read()


# ---------------------------------------------------------------- GPU code on the host fakes
def test_kernels_have_bfloat16_instantiations():
    """Every fused kernel has a ``_bf16`` version taking bf16_t with float32 math; Adam keeps float32 moments."""
    from fake_gpu import _signatures

    assert cuda_kernels._SUFFIX[BF16] == "bf16"
    for name in cuda_kernels.SOURCES:
        sigs = _signatures(cuda_kernels.source(name))
        casts = {k: sigs.pop(k) for k in cuda_kernels.CASTS.values() if k in sigs}  # one source, one target type
        if name == "elementwise":
            assert [c for c, _ in casts["cast_f32_bf16"]] == ["float", "bf16_t", "index_t"]
            assert [c for c, _ in casts["cast_bf16_f32"]] == ["bf16_t", "float", "index_t"]
        if name == "gemm_pointers":  # addresses for cuBLAS: no float type
            assert list(sigs) == ["batch_pointers"]
            continue
        bf16 = [k for k in sigs if k.endswith("_bf16")]
        assert bf16 and all(any(c == "bf16_t" for c, _ in sigs[k]) for k in bf16), name
        assert {k[:-5] for k in bf16} == {k[:-4] for k in sigs if k.endswith("_f32")}, name
    adam = _signatures(cuda_kernels.source("adam"))["adam_bf16"]
    assert [c for c, _ in adam[:7]] == ["bf16_t", "bf16_t", "float", "float", "bf16_t", "float", "float"]
    assert cuda_kernels.moment_dtype("bfloat16") == F32


def test_cublas_bfloat16_batched_products(monkeypatch):
    """bfloat16 x bfloat16 products, batched and 2-D, call cublasGemmStridedBatchedEx with CUDA_R_16BF and float32
    compute (CuPy's matmul would upcast them to float32)."""
    from fake_gpu import CUBLAS_COMPUTE_32F

    gpu = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    assert cublas.calls_cublas(BF16, BF16, 3, 3) and not cublas.calls_cublas(BF16, np.float16, 3, 3)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 64)).astype(BF16)
    b = rng.standard_normal((2, 64, 5)).astype(BF16)
    got = host(cublas.batched_matmul(cupy.asarray(a), cupy.asarray(b)))
    assert cublas.STATS["gemm_strided_batched"] == 1 and gpu.gemms[0]["compute"] == CUBLAS_COMPUTE_32F
    assert got.dtype == BF16
    want = np.matmul(a.astype(F32), b.astype(F32))
    np.testing.assert_allclose(got.astype(F32), want, rtol=RTOL, atol=5e-2)
    got2 = host(cublas.batched_matmul(cupy.asarray(a[1]), cupy.asarray(b[1])))
    assert cublas.STATS["gemm_strided_batched"] == 2 and gpu.gemms[1]["batch"] == 1 and got2.dtype == BF16
    np.testing.assert_allclose(got2.astype(F32), want[1], rtol=RTOL, atol=5e-2)


class _PerDevice(NumpyBackend):
    per_device = True

    def __init__(self, n):
        self.gpus = tuple(range(n))
        self.device_scope = lambda d: contextlib.nullcontext()

    def stream_ptr(self, device):
        return 0x100 + device  # one stream per rank, as NCCL needs


def test_nccl_moves_bfloat16_as_nccl_bfloat16():
    """NCCL's type constant for bfloat16 is ncclBfloat16 = 9 (nccl.h), also where the library does not export it."""
    fake_nccl.reset()
    try:
        mesh = sa.Mesh({"all": 4}, backend=_PerDevice(4))
        mesh.comm = NcclCommunicator(mesh, lib=fake_nccl)
        assert not hasattr(fake_nccl, "NCCL_BFLOAT16") and mesh.comm._type(BF16, "allreduce") == 9
        shards = [np.array([v, 2 * v], BF16) for v in (1.0, 2.0, 3.0, 4.0)]
        out = mesh.comm.allreduce(shards, ("all",))
        assert all(o.dtype == BF16 and list(o.astype(F32)) == [10.0, 20.0] for o in out)
    finally:
        fake_nccl.reset()
