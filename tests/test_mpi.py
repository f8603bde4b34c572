"""Multi-process SPMD: ``comm="mpi"`` under ``mpiexec -n 4`` gives the emulated mesh's results.

Runs only inside a 4-process MPI job (``.ci/run`` starts one:
``mpiexec -n 4 python -m pytest -q tests/test_mpi.py``); skipped otherwise.
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
    """``fn(mesh)`` on an emulated mesh and on the MPI mesh of the same shape."""
    return fn(sa.Mesh(shape, **kw)), fn(sa.Mesh(shape, comm="mpi", **kw))


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
            x.relayout({"m": "col", "k": "row"})
        return [(r.op, r.axes, r.elements, r.bytes) for r in log]

    emulated, mpi = both({"row": 2, "col": 2}, run)
    assert emulated == mpi


@pytest.mark.parametrize("algorithm", ["allreduce", "summa"])
def test_einsum_and_its_gradients_match_emulated(algorithm):
    def run(mesh):
        x = sa.random.normal(mesh, {"m": 8, "k": 6}, layout={"m": "row", "k": "col"}, seed=1, dtype="float64")
        w = sa.random.normal(mesh, {"k": 6, "n": 4}, layout={"k": "row", "n": "col"}, seed=2, dtype="float64")
        loss, g = sa.value_and_grad(
            lambda p: sa.tanh(sa.einsum("m k, k n -> m n", p[0], p[1], algorithm=algorithm)).sum())((x, w))
        return [float(loss), g[0].numpy(), g[1].numpy()]

    close(*both({"row": 2, "col": 2}, run))


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

    close(run(sa.Mesh(shape)), run(nccl_spmd(shape)))


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
    close(run(sa.Mesh(shape, rules=rules)), run(nccl_spmd(shape, rules=rules)), rtol=1e-10)
