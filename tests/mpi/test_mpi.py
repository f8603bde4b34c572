"""Multi-process SPMD: ``comm="mpi"`` under ``mpiexec -n 4`` gives the emulated mesh's results.

Runs only inside a 4-process MPI job (``.ci/run`` starts one:
``mpiexec -n 4 python -m pytest -q tests/mpi/test_mpi.py``); skipped otherwise.
Every rank runs every test and compares with the same computation on an
emulated mesh in its own process.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import shardarray as sa

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
pytestmark = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4 (see .ci/run)")

SHAPES = [{"row": 2, "col": 2}, {"x": 4}]


def both(shape, fn, **kw):
    """``fn(mesh)`` on an emulated mesh and on the MPI mesh of the same shape.

    The emulated mesh says ``comm="emulated"``: under a launcher, a mesh of the
    job's size with the default comm is an MPI mesh.
    """
    return fn(sa.Mesh(shape, comm="emulated", **kw)), fn(sa.Mesh(shape, comm="mpi", **kw))


def close(a, b, rtol=1e-12):
    for u, v in zip(a, b):
        np.testing.assert_allclose(np.asarray(v), np.asarray(u), rtol=rtol, atol=1e-12)


def test_mesh_owns_one_device_per_process():
    from mpi4py import MPI

    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    assert mesh.local_devices == (MPI.COMM_WORLD.Get_rank(),)
    x = sa.ones(mesh, {"m": 4, "n": 4}, layout={"m": "row"})
    assert sum(s is not None for s in x.shards) == 1
    with pytest.raises(sa.MeshError, match="mpiexec -n 8"):
        sa.Mesh({"a": 2, "b": 4}, comm="mpi")


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_collectives_and_relayouts_match_emulated(shape):
    axes = tuple(shape)
    last = axes[-1]

    def run(mesh):
        x = sa.random.normal(mesh, {"m": 7, "k": 5}, layout={"m": axes[0]}, seed=1, dtype="float64")
        s = x.sum("m")  # pending over axes[0]
        out = [x.numpy(), s.numpy(), s.relayout({"k": axes[0]}).numpy()]  # allreduce; reduce-scatter
        out.append(x.relayout({"m": None, "k": axes[0]}).numpy())  # alltoall
        out.append(x.relayout({}).numpy())  # allgather
        out.append(sa.softmax(x, "m").numpy())
        out.append(x.max("m").numpy())
        return out

    close(*both(shape, run))

    def half(mesh):  # MPI sums float16 in float32 (one rounding), the emulated mesh in float16
        x = sa.random.normal(mesh, {"m": 7, "k": 5}, layout={"m": axes[0]}, seed=1, dtype="float16")
        return [x.sum("m").relayout({"k": last}).numpy().astype(np.float64)]

    close(*both(shape, half), rtol=2e-3)


def test_comm_logs_match_emulated():
    def run(mesh):
        x = sa.random.normal(mesh, {"m": 8, "k": 6}, layout={"m": "row", "k": "col"}, seed=1)
        with sa.comm_log() as log:
            x.sum("k").numpy()
            y = x.relayout({"m": "col", "k": "row"})  # an axis swap: one exchange over (row, col)
        return [(r.op, r.axes, r.elements, r.bytes) for r in log], [y.numpy()] + [
            np.asarray(b) for b in y.shards if b is not None
        ]

    (emulated, values_e), (mpi, values_m) = both({"row": 2, "col": 2}, run)
    assert emulated == mpi
    assert emulated[-1][:2] == ("alltoall", ("row", "col"))
    np.testing.assert_array_equal(values_m[0], values_e[0])
    rank = sa.Mesh({"row": 2, "col": 2}, comm="mpi").local_device
    np.testing.assert_array_equal(values_m[1], values_e[1 + rank])  # this process's block is its device's


@pytest.mark.parametrize("algorithm", ["allreduce", "summa"])
def test_einsum_and_its_gradients_match_emulated(algorithm):
    def run(mesh):
        x = sa.random.normal(mesh, {"m": 8, "k": 6}, layout={"m": "row", "k": "col"}, seed=1, dtype="float64")
        w = sa.random.normal(mesh, {"k": 6, "n": 4}, layout={"k": "row", "n": "col"}, seed=2, dtype="float64")
        loss, g = sa.value_and_grad(
            lambda p: sa.tanh(sa.einsum("m k, k n -> m n", p[0], p[1], algorithm=algorithm)).sum())((x, w))
        return [float(loss), g[0].numpy(), g[1].numpy()]

    close(*both({"row": 2, "col": 2}, run))


def test_default_comm_under_the_launcher_is_mpi_when_the_sizes_match():
    assert sa.Mesh({"row": 2, "col": 2}).comm_kind == "mpi"
    assert sa.Mesh({"row": 2, "col": 2}, backend="meta").comm_kind == "emulated"
    assert sa.Mesh({"row": 2, "col": 2}, comm="emulated").comm_kind == "emulated"
    with pytest.warns(UserWarning, match="comm='emulated'"):
        sa.Mesh({"x": 2})  # 2 devices, 4 processes: every process runs the whole mesh


# shapes with 0-d results, empty blocks (2 rows over 4 devices) and uneven ones (7 over 2 or 4)
EDGE_SIZES = [{"m": 2, "k": 3}, {"m": 7, "k": 1}, {"m": 0, "k": 3}, {"m": 1, "k": 0}]


@pytest.mark.parametrize("shape", SHAPES + [{"x": 2, "y": 2}], ids=str)
@pytest.mark.parametrize("sizes", EDGE_SIZES, ids=str)
def test_shapes_survive_every_collective(shape, sizes):
    """0-d results, empty and uneven blocks keep the emulated shard shapes under MPI."""
    axes = tuple(shape)

    def run(mesh):
        x = sa.random.normal(mesh, sizes, layout={"m": axes[0]}, seed=4, dtype="float64")
        total = x.sum(("m", "k"))  # 0-d, pending over axes[0]
        out = [total, total - x.mean(), x - x.mean(), x - total, x.max(("m", "k")) if x.size else total,
               x.relayout({}), x.relayout({"m": None, "k": axes[0]}), x.sum("m").relayout({"k": axes[0]}),
               x.relayout({"m": axes})]
        shapes = [[None if s is None else s.shape for s in o.resolve().shards] for o in out]
        return shapes, [o.numpy() for o in out]

    (emu_shapes, emu), (mpi_shapes, mpi) = both(shape, run)
    rank = sa.Mesh(shape, comm="mpi").process_index
    assert [s[rank] for s in mpi_shapes] == [s[rank] for s in emu_shapes]
    for u, v in zip(emu, mpi):
        assert u.shape == v.shape
    close(emu, mpi)


@pytest.mark.parametrize("shape,batch_axes", [({"all": 4}, "all"), ({"row": 2, "col": 2}, ("row", "col"))], ids=str)
def test_data_parallel_linear_regression_matches_emulated(shape, batch_axes):
    """A few SGD steps with a scalar bias and ``x - x.mean()``: the batch split over all 4 devices."""
    rng = np.random.default_rng(0)
    feats, target = rng.normal(size=(10, 3)), rng.normal(size=10)  # 10 rows over 4 devices: uneven blocks

    def run(mesh):
        x = sa.asarray(feats, dims=("batch", "f"), mesh=mesh, layout={"batch": batch_axes})
        y = sa.asarray(target, dims=("batch",), mesh=mesh, layout={"batch": batch_axes})
        x = x - x.mean()
        y = (y - y.mean()) / sa.sqrt(((y - y.mean()) ** 2).mean())
        params = {"w": sa.zeros(mesh, {"f": 3}, dtype="float64"),
                  "b": sa.asarray(np.float64(0.5), dims=(), mesh=mesh)}

        def loss_fn(p, x, y):
            return ((sa.einsum(x, p["w"], out=("batch",)) + p["b"] - y) ** 2).mean()

        losses = []
        for _ in range(4):
            g = sa.grad(loss_fn)(params, x, y)
            params = {k: params[k] - 0.1 * g[k] for k in params}
            losses.append(float(loss_fn(params, x, y)))
        return [np.array(losses), params["w"].numpy(), params["b"].numpy()]

    emulated, mpi = both(shape, run)
    assert mpi[2].shape == ()
    close(emulated, mpi)


def test_replicated_conversions_need_no_communication():
    """``float(loss)`` of a replicated array is the local shard: no collective is entered (or counted)."""
    from shardarray.comm import spmd

    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    x = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("m", "k"), mesh=mesh)
    before = spmd._State.seq
    assert x.numpy().tolist() == np.arange(6.0).reshape(2, 3).tolist() and float(x.sum()) == 15.0
    assert spmd._State.seq == before
    y = x.relayout({"m": "row"})
    assert y.numpy().tolist() == x.numpy().tolist() and spmd._State.seq == before + 1  # split: a collective


def test_spmd_check_names_the_processes_that_differ(monkeypatch):
    """With SHARDARRAY_CHECK_SPMD=1 every process raises the same CommError (so they stay in step)."""
    monkeypatch.setenv("SHARDARRAY_CHECK_SPMD", "1")
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    rank = mesh.process_index
    mesh.comm.check_spmd("asarray", {"m": 8, "k": 2}, "float32")  # the same everywhere: fine
    with pytest.raises(sa.CommError, match=r"processes 0, 1, 3: #\d+ asarray of dims \('m', 'k'\) \(float32\) of a "
                                           r"global \(8, 2\); process 2: .*\(12, 2\)"):
        mesh.comm.check_spmd("asarray", {"m": 12 if rank == 2 else 8, "k": 2}, "float32")
    with pytest.raises(sa.CommError, match=r"#\d+ full of dims \('m', 'k'\) \(float32\) of a global \(5, 4\)"):
        sa.ones(mesh, {"m": 5 if rank == 1 else 4, "k": 4}, layout={"k": "col"})  # caught where it is made
    x = sa.ones(mesh, {"m": 5, "k": 4}, layout={"k": "col"})
    x = x[{"m": slice(0, 4)}] if rank != 1 else x  # other sizes made after creation (a local slice)
    with pytest.raises(sa.CommError, match=r"block shapes within group \(0, 1\).*allreduce over axes \('col',\)"):
        x.sum("k").resolve()
    y = sa.ones(mesh, {"m": 4, "k": 4}, layout={"k": "col"})
    with pytest.raises(sa.CommError, match=r"processes 0, 1, 2: #\d+ allreduce.*; process 3: #\d+ allgather"):
        (y.relayout({}) if rank == 3 else y.sum("k").resolve())
    monkeypatch.delenv("SHARDARRAY_CHECK_SPMD")
    assert float(y.sum()) == 16.0  # still in step


def test_take_range_error_is_raised_on_every_rank():
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    table = sa.ones(mesh, {"vocab": 8, "d": 2}, layout={"vocab": "col"})
    ids = np.zeros((4, 3), dtype=np.int64)
    ids[3, 2] = 9  # only the rank holding batch rows 2..3 sees it
    tokens = sa.asarray(ids, dims=("batch", "seq"), mesh=mesh, layout={"batch": "row"})
    with pytest.raises(sa.DimensionError, match="from 0 to 9"):
        sa.take(table, tokens, "vocab")


@pytest.mark.parametrize("strategy,shape", [("mesh2d", {"rows": 2, "cols": 2}),
                                            ("megatron", {"data": 2, "model": 2}),
                                            ("data", {"data": 4})])
def test_transformer_training_step_matches_emulated(strategy, shape):
    cfg = sa.nn.TransformerConfig(vocab=36, d_model=8, heads=2, d_kv=3, d_ff=12, n_layers=2, seq_len=5)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), 8, cfg.seq_len, cfg.vocab)

    def run(mesh):
        params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=3, dtype="float64")
        tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
        targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
        opt = sa.optim.Adam(lr=1e-2)
        state = opt.init(params)
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, cfg)
        params, state = opt.update(params, grads, state)
        after = sa.nn.transformer_loss(params, tokens, targets, cfg)
        return [float(loss), float(after)] + [grads[k].numpy() for k in sorted(grads)]

    rules = sa.nn.strategy_rules(strategy, shape)
    close(*both(shape, run, rules=rules), rtol=1e-10)


# ------------------------------------------------- NcclCommunicator's SPMD mode
def nccl_spmd(shape, **kw):
    """A comm="mpi" mesh whose collectives go through NcclCommunicator in SPMD mode.

    NCCL is played by ``fake_nccl_mpi`` (NCCL's calls carried out with MPI on
    host buffers), so the set-up (unique ids broadcast over each axis group),
    the shape exchanges and the grouped calls run as on GPUs across processes.
    """
    from mpi4py import MPI

    import fake_nccl_mpi
    from shardarray.comm.nccl import NcclCommunicator

    mesh = sa.Mesh(shape, comm="mpi", **kw)
    mesh.comm = NcclCommunicator(mesh, lib=fake_nccl_mpi, world=MPI.COMM_WORLD)
    return mesh


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_nccl_spmd_collectives_match_emulated(shape):
    axes = tuple(shape)

    def run(mesh):
        x = sa.random.normal(mesh, {"m": 7, "k": 5}, layout={"m": axes[0]}, seed=1, dtype="float64")
        s = x.sum("m")
        out = [x.numpy(), s.numpy(), s.relayout({"k": axes[0]}).numpy()]
        out.append(x.relayout({"m": None, "k": axes[0]}).numpy())
        out.append(x.relayout({}).numpy())
        out.append(sa.softmax(x, "m").numpy())
        out.append((x > 0).relayout({}).numpy())  # bool travels as uint8
        return out

    close(run(sa.Mesh(shape, comm="emulated")), run(nccl_spmd(shape)))


@pytest.mark.parametrize("strategy,shape", [("mesh2d", {"rows": 2, "cols": 2}), ("data", {"data": 4})])
def test_nccl_spmd_training_step_matches_emulated(strategy, shape):
    cfg = sa.nn.TransformerConfig(vocab=36, d_model=8, heads=2, d_kv=3, d_ff=12, n_layers=1, seq_len=5)
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), 8, cfg.seq_len, cfg.vocab)

    def run(mesh):
        params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=3, dtype="float64")
        tokens = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
        targets = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
        loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, cfg)
        return [float(loss)] + [grads[k].numpy() for k in sorted(grads)]

    rules = sa.nn.strategy_rules(strategy, shape)
    close(run(sa.Mesh(shape, rules=rules, comm="emulated")), run(nccl_spmd(shape, rules=rules)), rtol=1e-10)


@pytest.mark.parametrize("version,env", [(22809, None), (23000, None), (23000, "0")])
def test_ranks_sharing_a_gpu_get_one_clear_error_everywhere(monkeypatch, version, env):
    """Four processes on one GPU with an NCCL that cannot share it: every rank raises the same CommError naming the
    GPU, the NCCL version and the fix, before NCCL's set-up (on the H200 NCCL 2.28.9 said only "invalid usage")."""
    import fake_nccl_mpi
    from shardarray.comm.nccl import NcclCommunicator
    from shardarray.errors import CommError

    monkeypatch.setattr(fake_nccl_mpi, "get_version", lambda: version, raising=False)
    monkeypatch.setattr(NcclCommunicator, "_gpu_of", lambda self, d: "node0/00000000:00:06.0")
    if env is None:
        monkeypatch.delenv("NCCL_MULTI_RANK_GPU_ENABLE", raising=False)
    else:
        monkeypatch.setenv("NCCL_MULTI_RANK_GPU_ENABLE", env)
    mesh = nccl_spmd({"row": 2, "col": 2})
    x = sa.random.normal(mesh, {"m": 8}, layout={"m": "row"}, seed=1, dtype="float64")
    with pytest.raises(CommError, match=r"share GPU\(s\) node0/00000000:00:06.0") as info:
        x.sum("m").numpy()
    assert ("NCCL >= 2.30" if version < 23000 else "NCCL_MULTI_RANK_GPU_ENABLE=1") in str(info.value)
    assert f"this NCCL is {version // 10000}.{version // 100 % 100}.{version % 100}" in str(info.value)


def test_ranks_sharing_a_gpu_go_ahead_where_nccl_can_share_it(monkeypatch):
    import fake_nccl_mpi
    from shardarray.comm.nccl import NcclCommunicator

    monkeypatch.setattr(fake_nccl_mpi, "get_version", lambda: 23000, raising=False)
    monkeypatch.setattr(NcclCommunicator, "_gpu_of", lambda self, d: "node0/00000000:00:06.0")
    monkeypatch.setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1")
    mesh = nccl_spmd({"row": 2, "col": 2})
    x = sa.random.normal(mesh, {"m": 8}, layout={"m": "row"}, seed=1, dtype="float64")
    np.testing.assert_allclose(x.sum("m").numpy(), x.numpy().sum())
