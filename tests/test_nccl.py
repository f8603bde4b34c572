"""NcclCommunicator's logic on the host: one NumPy shard per "GPU", NCCL played by ``fake_nccl``.

The same ops run on an emulated mesh and on a mesh whose collectives go
through NcclCommunicator (grouped calls, raw addresses, counts, type
constants, uneven blocks, alltoall from send/recv); their values and comm
logs must agree. The real library is exercised by tests/test_gpu.py.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import fake_nccl
import shardarray as sa
from shardarray.backend.numpy_backend import NumpyBackend
from shardarray.comm.nccl import NcclCommunicator

SHAPES = [{"row": 2, "col": 2}, {"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}]


class PerDeviceNumpy(NumpyBackend):
    """NumPy shards that never share a buffer between devices, as GPUs would not."""

    per_device = True

    def __init__(self, n: int) -> None:
        self.gpus = tuple(range(n))
        self.scoped: list[int] = []

        def scope(d: int):
            self.scoped.append(d)
            return contextlib.nullcontext()

        self.device_scope = scope


def nccl_mesh(shape, rules=None):
    n = int(np.prod(list(shape.values())))
    mesh = sa.Mesh(shape, backend=PerDeviceNumpy(n), rules=rules)
    mesh.comm = NcclCommunicator(mesh, lib=fake_nccl)
    return mesh


def shard_lists(mesh, shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        a = rng.standard_normal(s) * 4
        out.append(a.astype(dtype) if dtype != bool else a > 0)
    return out


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int64", bool])
def test_collectives_equal_the_emulated_ones(shape, dtype):
    """Every collective, uneven blocks included, equals the emulated communicator's result."""
    mesh = nccl_mesh(shape)
    emu = sa.Mesh(shape)
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
        for name, run in [
            ("allgather", lambda c, s: c.allgather(shards, axes, dim=1)),
            ("allreduce", lambda c, s: c.allreduce(same, axes, "max" if dtype == bool else "sum")),
            ("allreduce_min", lambda c, s: c.allreduce(same, axes, "min")),
            ("reduce_scatter", lambda c, s: c.reduce_scatter(same, axes, dim=1)),
            ("alltoall", lambda c, s: c.alltoall(same, axes, split_dim=1, concat_dim=0)),
            ("broadcast", lambda c, s: c.broadcast(shards, axes, root=n - 1)),
            ("reduce", lambda c, s: c.reduce(same, axes, root=n - 1)),
        ]:
            if dtype == bool and name in ("reduce_scatter", "reduce"):
                continue
            with sa.comm_log() as log_n:
                got = run(mesh.comm, None)
            with sa.comm_log() as log_e:
                want = run(emu.comm, None)
            assert log_n.records == log_e.records, name
            for d in range(mesh.size):
                assert got[d].shape == want[d].shape and got[d].dtype == want[d].dtype, (name, d)
                tol = 1e-2 if dtype == "float16" else 1e-12
                np.testing.assert_allclose(got[d].astype(float), want[d].astype(float), rtol=tol, atol=tol,
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
    shards = [np.ones(3, dtype=np.complex128)] * 4
    with pytest.raises(sa.DTypeError, match="cannot move dtype complex128"):
        mesh.comm.allreduce(shards, ("col",))


def test_mesh_devices_arguments_are_checked():
    with pytest.raises(sa.MeshError, match="needs backend='cupy'"):
        sa.Mesh({"row": 2, "col": 2}, devices=[0, 1, 2, 3])
    with pytest.raises(sa.MeshError, match="needs backend='cupy'"):
        sa.Mesh({"row": 2}, comm="nccl")
    with pytest.raises(sa.MeshError, match="unknown comm 'gloo'"):
        sa.Mesh({"row": 2}, comm="gloo")
