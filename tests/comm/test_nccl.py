"""NcclCommunicator's logic on the host: one NumPy shard per "GPU", NCCL played by ``fake_nccl``.

The same ops run on an emulated mesh and on a mesh whose collectives go
through NcclCommunicator (grouped calls, raw addresses, counts, type
constants, uneven blocks, alltoall from send/recv); their values and comm
logs must agree. The real library is exercised by tests/backend/test_gpu.py.
"""

from __future__ import annotations

import fake_nccl
import numpy as np
import pytest
from fake_gpu import FakeCupy
from nccl_meshes import PerDeviceNumpy, nccl_mesh

import shardarray as sa
from helpers import host, on_device

SHAPES = [{"row": 2, "col": 2}, {"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}]


class StreamPerGpuNumpy(PerDeviceNumpy):
    """The old CupyDevicesBackend policy: one stream per GPU, shared by the mesh devices placed on it."""

    def stream_ptr(self, device: int) -> int:
        return 0x100 + self.gpus[device]


@pytest.fixture(autouse=True)
def _no_hang():
    """Every test starts from a clean fake NCCL and must leave nothing that would hang on a GPU."""
    fake_nccl.reset()
    yield
    hung = fake_nccl.hangs()
    fake_nccl.reset()
    assert not hung, f"these NCCL calls would hang on a real GPU: {hung}"


def shard_lists(mesh, shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        a = rng.standard_normal(s) * 4
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal(s)
        out.append(a.astype(dtype) if dtype != bool else a > 0)
    return out


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int64", bool, "complex64", "complex128"])
def test_collectives_equal_the_emulated_ones(shape, dtype):
    """Every collective, uneven blocks included, equals the emulated communicator's result.

    complex travels as (real, imag) float pairs: NCCL has no complex type.
    """
    mesh = nccl_mesh(shape)
    emu = sa.Mesh(shape)  # the session's backend; the NCCL mesh's shards are NumPy arrays (PerDeviceNumpy)
    axes_list = [(mesh.axis_names[0],), mesh.axis_names[-2:] if mesh.ndim > 1 else mesh.axis_names]
    for axes in axes_list:
        n = mesh.axes_size(axes)
        # uneven along dim 1 per member (allgather), same shape within a group otherwise
        shapes = []
        for d in range(mesh.size):
            group = next(g for g in mesh.groups(axes) if d in g)
            shapes.append((3, 1 + group.index(d) % 3, 2))
        shards = shard_lists(mesh, shapes, dtype)
        same = shard_lists(mesh, [(2, 7, 3)] * mesh.size, dtype, seed=1)
        on_nccl, on_emu = (([on_device(m, s, d) for d, s in enumerate(shards)],
                            [on_device(m, s, d) for d, s in enumerate(same)]) for m in (mesh, emu))
        for name, run in [
            ("allgather", lambda c, s: c.allgather(s[0], axes, dim=1)),
            ("allreduce", lambda c, s: c.allreduce(s[1], axes, "max" if dtype == bool else "sum")),
            ("allreduce_min", lambda c, s: c.allreduce(s[1], axes, "min")),  # skipped for complex
            ("reduce_scatter", lambda c, s: c.reduce_scatter(s[1], axes, dim=1)),
            ("alltoall", lambda c, s: c.alltoall(s[1], axes, split_dim=1, concat_dim=0)),
            ("broadcast", lambda c, s: c.broadcast(s[0], axes, root=n - 1)),
            ("reduce", lambda c, s: c.reduce(s[1], axes, root=n - 1)),
        ]:
            if dtype == bool and name in ("reduce_scatter", "reduce"):
                continue
            if np.dtype(dtype).kind == "c" and name == "allreduce_min":
                continue
            with sa.comm_log() as log_n:
                got = run(mesh.comm, on_nccl)
            with sa.comm_log() as log_e:
                want = [host(w) for w in run(emu.comm, on_emu)]
            assert log_n.records == log_e.records, name
            for d in range(mesh.size):
                assert got[d].shape == want[d].shape and got[d].dtype == want[d].dtype, (name, d)
                tol = 1e-2 if dtype == "float16" else 1e-12
                cast = complex if np.dtype(dtype).kind == "c" else float
                np.testing.assert_allclose(got[d].astype(cast), want[d].astype(cast), rtol=tol, atol=tol,
                                           err_msg=f"{name} over {axes} on device {d}")


def test_communicators_are_made_once_per_axis_group_and_calls_are_grouped():
    mesh = nccl_mesh({"row": 2, "col": 2})
    x = sa.random.normal(mesh, {"batch": 8, "io": 6}, layout={"batch": "row", "io": "col"})
    fake_nccl.STATS.clear()
    for _ in range(3):
        x.sum("io").numpy()
    assert fake_nccl.STATS["initAll"] == 2  # two col groups, made once
    assert fake_nccl.STATS["allReduce"] == 3 * 4  # one call per device per collective
    assert set(mesh.backend.scoped) == set(range(4))  # every device's work ran under its own scope


@pytest.mark.parametrize("shape", SHAPES)
def test_ops_and_relayouts_match_the_emulated_mesh(shape):
    a, b = np.random.default_rng(0).standard_normal((9, 7)), np.random.default_rng(1).standard_normal((7, 5))
    results = []
    for mesh in (sa.Mesh(shape), nccl_mesh(shape)):
        axes = mesh.axis_names
        x = sa.asarray(a, dims=("batch", "io"), mesh=mesh, layout={"batch": axes[0]})
        w = sa.asarray(b, dims=("io", "hidden"), mesh=mesh, layout={"io": axes[-1]} if len(axes) > 1 else {})
        h = sa.einsum(x, w)
        y = sa.softmax(sa.gelu(h), "hidden")
        moved = y.relayout({"hidden": axes[0], "batch": axes[1:] or None})
        back = moved.relayout({"batch": axes})
        ids = sa.asarray(np.array([4, 0, 2, 2, 1, 0, 3, 4, 4]), dims=("batch",), mesh=mesh, layout={"batch": axes[-1]})
        picked = sa.take(h, ids, "hidden")
        results.append([h.numpy(), y.numpy(), moved.numpy(), back.numpy(), picked.numpy(), x.max("io").numpy()])
    for e, n in zip(*results):
        np.testing.assert_allclose(n, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("strategy,shape", [
    ("mesh2d", {"rows": 2, "cols": 2}), ("megatron", {"data": 2, "model": 2}),
    ("tesseract", {"row": 2, "col": 2, "dep": 2}),
])
def test_training_step_matches_the_emulated_mesh(strategy, shape):
    cfg = sa.nn.TransformerConfig(vocab=37, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), 4, cfg.seq_len, cfg.vocab)
    out = []
    for make in (lambda r: sa.Mesh(shape, rules=r), lambda r: nccl_mesh(shape, rules=r)):
        mesh = make(sa.nn.strategy_rules(strategy, shape))
        params = sa.nn.init_transformer(cfg, mesh, seed=0, dtype="float64")
        tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
        targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, cfg)
        opt = sa.optim.Adam(1e-3)
        new, _ = opt.update(params, grads, opt.init(params))
        out.append((float(loss), {k: p.numpy() for k, p in new.items()}))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-12)
    for k in out[0][1]:
        np.testing.assert_allclose(out[1][1][k], out[0][1][k], rtol=1e-10, atol=1e-12, err_msg=k)


def test_nccl_errors_name_the_collective_axes_and_mesh(monkeypatch):
    mesh = nccl_mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"batch": 4, "io": 6}, layout={"io": "col"})

    def broken(*args):
        raise fake_nccl.NcclError("NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error")

    monkeypatch.setattr(fake_nccl.NcclCommunicator, "allReduce", broken)
    with pytest.raises(sa.CommError, match=r"NCCL allreduce over mesh axes \('col',\) of Mesh.*unhandled cuda error"):
        x.sum("io").numpy()
    assert fake_nccl._DEPTH[0] == 0  # groupEnd ran even though a call failed


def test_unsupported_dtype_is_a_dtype_error():
    mesh = nccl_mesh({"row": 2, "col": 2})
    shards = [np.zeros(3, dtype="datetime64[s]")] * 4
    with pytest.raises(sa.DTypeError, match=r"cannot move dtype datetime64\[s\]"):
        mesh.comm.allreduce(shards, ("col",))
    assert not fake_nccl.STATS  # refused before any NCCL call


# ---------------------------------------------------------------- streams (item: ranks on one GPU)
def test_the_fake_refuses_two_ranks_of_one_communicator_on_one_stream():
    """The deadlock of two NCCL ranks on one GPU sharing its stream is visible on the host."""
    mesh = nccl_mesh({"cols": 2}, backend=StreamPerGpuNumpy(2, gpus=(0, 0)))
    x = sa.ones(mesh, {"io": 4}, layout={"io": "cols"})
    with pytest.raises(sa.CommError, match="same stream"):
        x.sum().numpy()


def test_ranks_on_one_gpu_get_their_own_streams(monkeypatch):
    """devices=[0, 0] with comm="nccl": every mesh device has its own stream and buffers (CuPy played by a fake)."""
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    mesh = sa.Mesh({"cols": 2}, backend="cupy", devices=[0, 0], comm="nccl")
    assert mesh.backend.stream_ptr(0) != mesh.backend.stream_ptr(1)
    assert mesh.backend.per_device  # a rank owns its buffers: no block shared between two streams
    x = sa.asarray(np.arange(4.0), dims=("io",), mesh=mesh, layout={"io": "cols"})
    fake_nccl.STATS.clear()
    assert float(x.sum().numpy()) == 6.0  # fake_nccl refuses a shared stream
    assert fake_nccl.STATS["allReduce"] == 2
    assert {s for _, s in gpu.streams_made} >= {mesh.backend.stream_ptr(0), mesh.backend.stream_ptr(1)}


def test_every_shard_on_one_gpu_keeps_one_stream(monkeypatch):
    """The emulated communicator mixes shards of every device: they must stay ordered on one stream."""
    FakeCupy(gpus=2).install(monkeypatch)
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="cupy", devices=[1, 1, 1, 1])
    assert mesh.comm_kind == "emulated"
    assert len({mesh.backend.stream_ptr(d) for d in range(4)}) == 1
    distinct = sa.Mesh({"row": 1, "col": 2}, backend="cupy", devices=[0, 1])
    assert len({distinct.backend.stream_ptr(d) for d in range(2)}) == 2


# ---------------------------------------------------------------- failures inside a group
def test_a_call_failing_inside_a_group_aborts_the_communicators(monkeypatch):
    """Rank 1's call fails after rank 0's was posted: no launched call is left waiting for it."""
    mesh = nccl_mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"batch": 4, "io": 6}, layout={"io": "col"})
    real = fake_nccl.NcclCommunicator.allReduce

    def fails_on_rank_1(self, *args):
        if self.rank == 1:
            raise fake_nccl.NcclError("NCCL_ERROR_INVALID_ARGUMENT: invalid argument")
        return real(self, *args)

    monkeypatch.setattr(fake_nccl.NcclCommunicator, "allReduce", fails_on_rank_1)
    with pytest.raises(sa.CommError, match=r"NCCL allreduce over mesh axes \('col',\).*invalid argument.*aborted"):
        x.sum("io").numpy()
    assert fake_nccl.hangs() == []  # every communicator of the group was aborted
    assert fake_nccl.STATS["abort"] == 4
    assert ("col",) not in mesh.comm._members
    monkeypatch.setattr(fake_nccl.NcclCommunicator, "allReduce", real)
    np.testing.assert_array_equal(x.sum("io").numpy(), np.full(4, 6.0))  # new communicators, made outside a group


def test_mismatched_buffers_are_refused_before_any_call():
    mesh = nccl_mesh({"row": 2, "col": 2})
    fake_nccl.STATS.clear()
    with pytest.raises(sa.DimensionError, match=r"devices \[0, 1\].*\(3,\).*\(4,\)"):
        mesh.comm.allreduce([np.ones(3), np.ones(4), np.ones(3), np.ones(3)], ("col",))
    with pytest.raises(sa.DTypeError, match=r"float64.*float32"):
        mesh.comm.allreduce([np.ones(3), np.ones(3, np.float32), np.ones(3), np.ones(3)], ("col",))
    with pytest.raises(sa.DimensionError, match="reduce_scatter"):
        mesh.comm.reduce_scatter([np.ones((2, 3))] * 3 + [np.ones((2, 4))], ("col",), dim=0)
    with pytest.raises(sa.DimensionError, match="allgather"):
        mesh.comm.allgather([np.ones((2, 3))] * 3 + [np.ones((2, 4))], ("col",), dim=0)
    assert not any(fake_nccl.STATS.values())  # nothing was posted


# ---------------------------------------------------------------- complex
def test_complex_max_and_min_are_refused_before_any_call():
    mesh = nccl_mesh({"row": 2, "col": 2})
    shards = [np.ones(3, dtype=np.complex64)] * 4
    for op in ("max", "min"):
        with pytest.raises(sa.DTypeError, match=f"{op} of complex64.*abs"):
            mesh.comm.allreduce(shards, ("col",), op)
    assert not fake_nccl.STATS["allReduce"]


def test_complex_moves_as_float_pairs():
    mesh = nccl_mesh({"row": 2, "col": 2})
    shards = [np.array([1 + 2j, -3j], dtype=np.complex128) * (d + 1) for d in range(4)]
    seen = []
    real = fake_nccl.NcclCommunicator.allReduce
    fake_nccl.NcclCommunicator.allReduce = lambda self, s, r, n, t, op, st: (seen.append((n, t)), real(self, s, r, n, t, op, st))
    try:
        got = mesh.comm.allreduce(shards, ("col",))
    finally:
        fake_nccl.NcclCommunicator.allReduce = real
    assert set(seen) == {(4, fake_nccl.NCCL_FLOAT64)}
    np.testing.assert_array_equal(got[0], shards[0] + shards[1])
    assert got[0].dtype == np.complex128 and got[0].shape == (2,)
    scalars = mesh.comm.allreduce([np.complex64(1 + 1j)] * 4, ("col",))  # 0-d buffers too
    assert scalars[0].dtype == np.complex64 and complex(scalars[0]) == 2 + 2j


def test_mesh_devices_arguments_are_checked():
    with pytest.raises(sa.MeshError, match="needs backend='cupy'"):
        sa.Mesh({"row": 2, "col": 2}, devices=[0, 1, 2, 3], backend="numpy")
    with pytest.raises(sa.MeshError, match="needs backend='cupy'"):
        sa.Mesh({"row": 2}, comm="nccl", backend="numpy")
    with pytest.raises(sa.MeshError, match="unknown comm 'gloo'"):
        sa.Mesh({"row": 2}, comm="gloo")
