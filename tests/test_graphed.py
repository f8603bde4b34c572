"""``sa.graphed`` (CUDA graphs of a step) and the device step counter of the optimizers, on any machine.

On NumPy shards ``sa.graphed`` runs the function eagerly: results equal the
function's bit for bit. The capture itself is checked on the CuPy stand-in
(``tests/support/fake_gpu.py``): it runs what a capture enqueues at once and
counts graph launches without replaying them, so the capturing call's results
are compared with eager ones, and the protocol (one capture on a stream of its
own, no host transfer or synchronisation inside, cuBLAS through its own binding,
Adam's scalars read on the device, donated buffers returned, id checks queued
again) is checked on every call. ``tests/backend/test_gpu.py`` replays real
graphs on a GPU against eager steps.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import shardarray as sa
from fake_gpu import FakeCupy
from shardarray.backend import cublas

SMALL = sa.nn.TransformerConfig(vocab=64, d_model=32, heads=2, d_kv=16, d_ff=64, n_layers=1, seq_len=16)
MESHES = [({"d": 1}, "replicated"), ({"rows": 2, "cols": 2}, "mesh2d")]


def _setup(shape, strategy, backend, dtype="float32", batch=2, lr=1e-3):
    cfg = SMALL if dtype == "float32" else dataclasses.replace(SMALL, compute_dtype=dtype)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), batch, cfg.seq_len, cfg.vocab)
    mesh = sa.Mesh(shape, backend=backend, rules=sa.nn.strategy_rules(strategy, shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=0)
    opt = sa.optim.Adam(lr=lr)
    tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
    targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
    vg = sa.value_and_grad(sa.nn.transformer_loss)

    def step(p, s, tokens, targets):
        loss, g = vg(p, tokens, targets, cfg)
        p, s = opt.update(p, g, s)
        return loss, p, s

    return mesh, params, opt, tokens, targets, step


def _host(tree):
    return {k: v.numpy() for k, v in tree.items()}


@pytest.fixture
def gpu(monkeypatch):
    fake = FakeCupy(gpus=1, strict=True).install(monkeypatch)  # (its stand-in of the ctypes binding counts calls)
    return fake, cublas._RAW[0]


# ----------------------------------------------------------------------------- NumPy shards: eager
def test_graphed_runs_eagerly_on_numpy_shards():
    mesh, params, opt, tokens, targets, step = _setup({"rows": 2, "cols": 2}, "mesh2d", "numpy")
    train = sa.graphed(step, donate_argnums=(0, 1))
    pe, se = params, opt.init(params)
    pg, sg = params, opt.init(params)
    for _ in range(3):
        le, pe, se = step(pe, se, tokens, targets)
        lg, pg, sg = train(pg, sg, tokens, targets)
        assert float(lg) == float(le)
    assert train.captures == 0 and train.launches == 0
    assert sg["step"] == 3 and isinstance(sg["step"], int)  # no device counter where nothing is captured
    for k, v in _host(pe).items():
        np.testing.assert_array_equal(_host(pg)[k], v)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"donate_argnums": ("params",)}, "donate_argnums"),
        ({"donate_argnums": (-1,)}, "donate_argnums"),
        ({"donate_argnums": (True,)}, "donate_argnums"),
        ({"warmup": -1}, "warmup"),
        ({"warmup": 1.5}, "warmup"),
    ],
)
def test_graphed_argument_errors(kwargs, match):
    with pytest.raises(sa.ArgumentError, match=match):
        sa.graphed(lambda x: x, **kwargs)
    with pytest.raises(sa.ArgumentError, match="not a function"):
        sa.graphed(3)


# ----------------------------------------------------------------------------- the capture, on the stand-in
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape, strategy", MESHES, ids=["1-device", "2x2"])
def test_graphed_captures_once_and_matches_the_eager_step(gpu, shape, strategy, dtype):
    fake, raw = gpu
    mesh, params, opt, tokens, targets, step = _setup(shape, strategy, "cupy", dtype)
    train = sa.graphed(step, donate_argnums=(0, 1))
    pe, se = params, opt.init(params)
    pg, sg = params, opt.init(params)
    le, pe, se = step(pe, se, tokens, targets)
    lg, pg, sg = train(pg, sg, tokens, targets)  # warm-up: eager
    assert float(lg) == float(le) and train.captures == 0 and not fake.captures
    assert isinstance(sg["step"], sa.ShardArray) and int(sg["step"]) == 1  # a donated int became a device counter
    le, pe, se = step(pe, se, tokens, targets)
    kernels_before = len(fake.launches)
    lg, pg, sg = train(pg, sg, tokens, targets)  # captured (the stand-in ran it while capturing) and launched
    assert train.captures == 1 and len(fake.captures) == 1 and fake.captures[0] != 0  # a stream of its own
    assert mesh.deferred  # the id check of the tokens, queued again for the next read
    assert fake.capturing is None and cublas.CAPTURING == [False]
    assert fake.graph_launches == [0]  # launched on the current (default) stream
    assert raw.captured > 0 and cublas.STATS["captured"] == raw.captured  # every captured product through the binding
    assert any(r["name"].startswith("adam_dev") for r in fake.launches[kernels_before:])
    assert len(fake.allocators) == 1  # the graph's private memory pool
    assert float(lg) == float(le)
    for k, v in _host(pe).items():
        np.testing.assert_array_equal(_host(pg)[k], v)
    assert int(sg["step"]) == 2
    launches = len(fake.launches)
    l3, p3, s3 = train(pg, sg, tokens, targets)  # replayed: the donated buffers come back, nothing is copied in
    assert train.captures == 1 and train.launches == 2 and fake.graph_launches == [0, 0]
    assert len(fake.launches) == launches  # no kernel: neither a copy-in nor a launch outside the graph
    assert all(p3[k] is pg[k] for k in pg) and s3["step"] is sg["step"]
    assert l3 is not lg  # other outputs are copied out, so earlier ones stay valid


def test_graphed_copies_new_arguments_in_and_recaptures_on_new_shapes(gpu):
    fake, _ = gpu
    mesh, params, opt, tokens, targets, step = _setup({"d": 1}, "replicated", "cupy")
    train = sa.graphed(step, donate_argnums=(0, 1), warmup=0)
    p, s = params, opt.init(params)
    loss, p, s = train(p, s, tokens, targets)
    assert train.captures == 1
    other = sa.asarray(np.roll(tokens.numpy(), 1, axis=1), dims=("batch", "seq"), mesh=mesh)
    launches = len(fake.launches)
    loss, p, s = train(p, s, other, targets)  # same signature: the new tokens are copied into the graph's buffer
    assert train.captures == 1 and len(fake.launches) == launches
    bigger = _setup({"d": 1}, "replicated", "cupy", batch=4)
    big_tokens = sa.asarray(bigger[3].numpy(), dims=("batch", "seq"), mesh=mesh)
    big_targets = sa.asarray(bigger[4].numpy(), dims=("batch", "seq"), mesh=mesh)
    train(p, s, big_tokens, big_targets)
    assert train.captures == 2 and len(fake.captures) == 2


def test_graphed_copies_in_its_own_buffers_passed_in_another_order(gpu):
    """Arguments that are the graph's own buffers at other positions (a swap) are copied aside first."""
    fake, _ = gpu
    mesh = sa.Mesh({"d": 1}, backend="cupy")
    x = sa.asarray(np.arange(4.0), dims=("i",), mesh=mesh)
    y = sa.asarray(np.arange(4.0) + 10, dims=("i",), mesh=mesh)
    swap = sa.graphed(lambda a, b: (b, a), donate_argnums=(0, 1), warmup=0)
    a, b = swap(x, y)  # captured: the stand-in ran it, (y, x)
    np.testing.assert_array_equal(a.numpy(), y.numpy())
    statics = list(swap._graph.static)
    before = [s.numpy().copy() for s in statics]
    swap._graph.copy_in([statics[1], statics[0]])  # each position gets the other's buffer: a true swap
    np.testing.assert_array_equal(statics[0].numpy(), before[1])
    np.testing.assert_array_equal(statics[1].numpy(), before[0])
    assert not np.array_equal(before[0], before[1])


def test_graphed_refuses_a_host_read_inside(gpu):
    fake, _ = gpu
    mesh = sa.Mesh({"rows": 2, "cols": 2}, backend="cupy")
    x = sa.ones(mesh, {"i": 8}, layout={"i": "rows"})

    def reads(x):
        return x * float((x * x).sum())

    f = sa.graphed(reads, warmup=0)
    with pytest.raises(sa.GraphError, match="read no value to the host"):
        f(x)
    assert fake.capturing is None and cublas.CAPTURING == [False] and not mesh.deferred
    assert isinstance(sa.GraphError("x"), ValueError)


def test_graphed_runs_eagerly_with_a_warning_across_gpus(monkeypatch):
    FakeCupy(gpus=2, strict=True).install(monkeypatch)
    mesh = sa.Mesh({"d": 2}, backend="cupy", devices=[0, 1])
    x = sa.ones(mesh, {"i": 8}, layout={"i": "d"})
    f = sa.graphed(lambda x: (x * 2).sum())
    with pytest.warns(RuntimeWarning, match="runs eagerly.*several GPUs"):
        assert float(f(x)) == 16.0
    assert float(f(x)) == 16.0 and f.captures == 0  # (warned once)


# ----------------------------------------------------------------------------- the device step counter
@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"row": 3, "col": 2}], ids=str)
@pytest.mark.parametrize("opt", [sa.optim.Adam(lr=1e-2, weight_decay=0.01), sa.optim.SGD(lr=0.1, momentum=0.9)],
                         ids=["adam", "sgd"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_optimizer_step_counted_on_the_device_equals_the_int_step(shape, opt, dtype):
    mesh = sa.Mesh(shape)
    w0 = np.random.default_rng(0).standard_normal((5, 7))
    w = sa.asarray(w0, dims=("a", "b"), mesh=mesh, layout={"b": tuple(shape)[-1]}).astype(dtype)
    p1 = p2 = {"w": w}
    s1, s2 = opt.init(p1), opt.init(p2)
    s2["step"] = sa.asarray(np.int64(0), mesh=mesh)
    for _ in range(3):
        p1, s1 = opt.update(p1, {"w": p1["w"] * 0.5 + 0.1}, s1)
        p2, s2 = opt.update(p2, {"w": p2["w"] * 0.5 + 0.1}, s2)
    want, got = p1["w"].numpy(), p2["w"].numpy()
    if isinstance(opt, sa.optim.Adam) and dtype == "float64" and mesh.backend.name == "cupy":
        # the device step's bias corrections b1**t, b2**t come from CUDA's pow (up to 2 ulp off, CUDA Math API),
        # the int step's from the host's; 1 - b2**t amplifies that ~1000x: ~10 eps in p after 3 steps (an H200)
        np.testing.assert_allclose(got, want, rtol=0, atol=32 * np.finfo(np.float64).eps * np.abs(want).max())
    else:
        np.testing.assert_array_equal(want, got)
    assert s1["step"] == 3 and int(s2["step"]) == 3 and s2["step"].dtype == np.int64


@pytest.mark.parametrize("opt", [sa.optim.Adam(lr=sa.optim.cosine_schedule(0.1, 6, warmup=2), weight_decay=0.05),
                                 sa.optim.SGD(lr=sa.optim.cosine_schedule(0.1, 6, warmup=2), momentum=0.9,
                                              weight_decay=0.05)], ids=["adam", "sgd"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_schedule_runs_on_the_device_step(opt, dtype):
    """cosine_schedule takes the device counter and gives the host schedule's rates, so the updates agree."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    w0 = np.random.default_rng(1).standard_normal((5, 6))
    w = sa.asarray(w0, dims=("a", "b"), mesh=mesh, layout={"b": "col"}).astype(dtype)
    p1 = p2 = {"w": w}
    s1, s2 = opt.init(p1), opt.init(p2)
    s2["step"] = sa.asarray(np.int64(0), mesh=mesh)
    for _ in range(7):  # warm-up, decay and past the end
        p1, s1 = opt.update(p1, {"w": p1["w"] * 0.5 + 0.1}, s1)
        p2, s2 = opt.update(p2, {"w": p2["w"] * 0.5 + 0.1}, s2)
    rtol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(p2["w"].numpy(), p1["w"].numpy(), rtol=rtol, atol=rtol)
    sched = sa.optim.cosine_schedule(0.1, 6, warmup=2)
    for k in range(8):
        assert float(sched(sa.asarray(np.int64(k), mesh=mesh))) == pytest.approx(sched(k), rel=1e-14, abs=1e-17)


def test_device_step_errors():
    mesh = sa.Mesh({"row": 2, "col": 2})
    w = {"w": sa.ones(mesh, {"i": 4}, layout={"i": "col"})}
    import math

    opt = sa.optim.Adam(lr=lambda step: 1e-3 * math.cos(step / 100))  # a host-only schedule
    state = opt.init(w)
    state["step"] = sa.asarray(np.int64(0), mesh=mesh)
    with pytest.raises(sa.ArgumentError, match="did not return a 0-d float array"):
        opt.update(w, w, state)
    state["step"] = sa.asarray(np.float32(0), mesh=mesh)
    with pytest.raises(sa.DTypeError, match="0-d integer array"):
        sa.optim.Adam().update(w, w, state)


def test_adam_kernel_reads_scalars_on_the_device(gpu):
    fake, _ = gpu
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="cupy")
    w = {"w": sa.asarray(np.linspace(-1, 1, 12).reshape(3, 4), dims=("a", "b"), mesh=mesh, layout={"b": "col"})}
    opt = sa.optim.Adam(lr=0.1)
    s_int, s_dev = opt.init(w), opt.init(w)
    s_dev["step"] = sa.asarray(np.int64(4), mesh=mesh)
    s_int["step"] = 4
    before = len(fake.launches)
    p_dev, _ = opt.update(w, w, s_dev)
    names = {r["name"] for r in fake.launches[before:]}
    assert "adam_dev_f64" in names and "adam_f64" not in names
    p_int, _ = opt.update(w, w, s_int)
    np.testing.assert_array_equal(p_dev["w"].numpy(), p_int["w"].numpy())


# ----------------------------------------------------------------------------- the cuBLAS binding
def test_raw_cublas_sets_the_current_stream_then_multiplies(gpu):
    fake, _ = gpu
    calls = []

    class Fn:
        def __init__(self, name, status=0):
            self.name, self.status = name, status

        def __call__(self, *args):
            calls.append((self.name, args))
            return self.status

    class Lib:
        cublasSetStream_v2 = Fn("setStream")
        cublasGemmStridedBatchedEx = Fn("gemm")
        cublasGemmBatchedEx = Fn("batched")

    raw = cublas.RawCublas(Lib())
    import cupy

    with cupy.cuda.Stream(non_blocking=True) as s:
        raw.gemmStridedBatchedEx(1000, 0, 1, 2, 3, 4)
        raw.gemmBatchedEx(1000, 5, 6)
    assert calls == [("setStream", (1000, s.ptr)), ("gemm", (1000, 0, 1, 2, 3, 4)),
                     ("setStream", (1000, s.ptr)), ("batched", (1000, 5, 6))]
    Lib.cublasGemmStridedBatchedEx = Fn("gemm", status=13)
    with pytest.raises(RuntimeError, match="status 13"):
        cublas.RawCublas(Lib()).gemmStridedBatchedEx(1000)


@pytest.mark.parametrize("backend", ["numpy", "cupy"])
def test_graphed_keeps_positional_arrays_positional(gpu, backend):
    """Positional (xp) parameters and gradients stay positional through the capture, the donation and the copy-out."""
    import shardarray.array_api as xp

    mesh = sa.Mesh({"row": 2, "col": 2}, backend=backend)
    rng = np.random.default_rng(0)
    w = xp.asarray(rng.standard_normal((4, 3)), device=mesh)
    x = xp.asarray(rng.standard_normal((5, 4)), device=mesh)
    opt = sa.optim.Adam(lr=0.1)

    def step(w, state, x):
        loss, g = sa.value_and_grad(lambda w: xp.sum((x @ w) ** 2))(w)
        w, state = opt.update(w, g, state)
        return loss, w, state

    train = sa.graphed(step, donate_argnums=(0, 1))
    state = opt.init(w)
    for _ in range(2):
        loss, w, state = train(w, state, x)
        assert type(w) is xp.Array and type(loss) is xp.Array and type(state["m"]) is xp.Array
        assert w.shape == (4, 3)
    assert train.captures == (1 if backend == "cupy" else 0)


@pytest.mark.parametrize("backend", ["numpy", "cupy"])
def test_graphed_takes_keyword_arguments(gpu, backend):
    """Keyword arguments are arguments too (compared, copied in; never donated); the wrapper keeps fn's name."""
    mesh = sa.Mesh({"row": 2, "col": 2}, backend=backend)
    x = sa.asarray(np.arange(8.0), dims=("i",), mesh=mesh, layout={"i": "row"})

    def scaled(x, *, by, shift=0.0):
        """x times by, plus shift, summed."""
        return (x * by + shift).sum()

    f = sa.graphed(scaled, warmup=0)
    assert f.__name__ == "scaled" and f.__doc__ == scaled.__doc__ and f.__wrapped__ is scaled
    assert float(f(x, by=x)) == float((x * x).sum())
    assert float(f(x, by=x, shift=1.0)) == float((x * x).sum()) + 8.0  # another value: captured anew
    assert f.captures == (2 if backend == "cupy" else 0)
