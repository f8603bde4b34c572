"""sa.take's id range on GPUs (issue 29 item 3): checked on the device, reported at the next read of a value.

Ids made on the device (arithmetic, ``sa.from_local`` batches) are not read per call: each block's (min, max) is
queued on the mesh and read, all together in one transfer, where a value is next read (``x.numpy()``,
``float(x)``...), which raises ``sa.DimensionError`` there, once. Host-made ids (``host_range``), NumPy shards and
MPI meshes keep the immediate check. Device-to-host reads are counted on the fake GPU (``tests/support/fake_gpu``;
the strict stand-in under ``--backend=cupy``): ``.get()``, ``cupy.asnumpy`` and the scalar conversions.
"""

from __future__ import annotations

import numpy as np
import pytest
from fake_gpu import FakeCupy

import shardarray as sa
from shardarray import mesh as mesh_module
from shardarray.ops.indexing import take as take_module

READS = ("get", "__bool__", "__float__", "__int__", "__index__", "item", "tolist")


def count_reads(monkeypatch, gpu) -> list[str]:
    """Install counters of every device-to-host read of ``gpu``'s arrays (a read inside a read counts once)."""
    import cupy

    reads: list[str] = []
    depth = [0]

    def counted(name, real):
        def read(*args, **kwargs):
            depth[0] += 1
            try:
                return real(*args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    reads.append(name)

        return read

    cls = cupy.ndarray
    for name in READS:
        real = getattr(cls, name, None)
        if real is not None:
            monkeypatch.setattr(cls, name, counted(name, real))
    monkeypatch.setattr(cupy, "asnumpy", counted("asnumpy", cupy.asnumpy))
    return reads


def _gpu_mesh(monkeypatch, devices=None, gpus=4):
    gpu = FakeCupy(gpus=gpus).install(monkeypatch)
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="cupy", devices=devices)
    return gpu, mesh


def _table(mesh, vocab=8, split=True):
    return sa.asarray(np.arange(2.0 * vocab).reshape(vocab, 2), dims=("vocab", "d"), mesh=mesh,
                      layout={"vocab": "col"} if split else {})


def _device_ids(mesh, values):
    """Ids made on the device: no host range (as ``sa.from_local`` batches, ``argmax`` or arithmetic give)."""
    ids = sa.asarray(np.asarray(values), dims=("b", "s"), mesh=mesh, layout={"b": "row"}) * 1
    assert ids.host_range is None
    return ids


IDS = np.array([[1, 2, 0], [3, 7, 5]])


@pytest.mark.parametrize("devices", [None, [0, 1, 2, 3]], ids=["one-gpu", "four-gpus-nccl"])
@pytest.mark.parametrize("split", [True, False], ids=["vocab-split", "vocab-whole"])
def test_takes_of_device_ids_read_nothing_until_a_value_is_read(monkeypatch, devices, split):
    gpu, mesh = _gpu_mesh(monkeypatch, devices)
    table = _table(mesh, split=split)
    ids = _device_ids(mesh, IDS)
    reads = count_reads(monkeypatch, gpu)
    outs = [sa.take(table, ids, "vocab") for _ in range(40)]
    assert reads == []  # 40 takes: no device-to-host copy
    assert len(mesh.deferred) == 1  # one op, dim and ids shape: folded into one check, kept small on the device
    (check,) = mesh.deferred.values()
    assert len(check.parts) <= take_module._FOLD + mesh.size
    np.testing.assert_array_equal(outs[-1].numpy(), np.arange(16.0).reshape(8, 2)[IDS])
    assert mesh.deferred == {}
    assert 1 <= len(reads) <= 1 + mesh.size  # the queued ranges (one transfer) and the value's blocks
    reads.clear()
    sa.take(table, ids, "vocab")
    mesh.report_deferred()
    assert len(reads) == 1  # the queue alone: one transfer, whatever the number of blocks and GPUs


@pytest.mark.parametrize("read", ["numpy", "float", "int", "bool", "item", "repr"])
def test_an_out_of_range_id_raises_at_the_next_read_once(monkeypatch, read):
    _, mesh = _gpu_mesh(monkeypatch)
    table = _table(mesh)
    bad = _device_ids(mesh, IDS + 3)  # ids up to 10 for a vocab of 8
    e = sa.take(table, bad, "vocab")  # no error yet: nothing was read
    loss = e.sum()
    assert mesh.deferred
    reads = {"numpy": lambda: loss.numpy(), "float": lambda: float(loss), "int": lambda: int(loss),
             "bool": lambda: bool(loss), "item": lambda: loss.item(), "repr": lambda: repr(loss)}
    with pytest.raises(sa.DimensionError) as info:
        reads[read]()
    message = str(info.value)
    for words in ("sa.take along 'vocab' (size 8)", "{'b': 2, 's': 3}", "[0, 8)", "found values from 3 to 10",
                  "next read of a value"):
        assert words in message, message
    assert mesh.deferred == {}
    reads[read]()  # raised once: the queue was emptied
    good = sa.take(table, _device_ids(mesh, IDS), "vocab")
    np.testing.assert_array_equal(good.numpy(), np.arange(16.0).reshape(8, 2)[IDS])


def test_a_bad_take_among_many_is_found_and_named(monkeypatch):
    _, mesh = _gpu_mesh(monkeypatch, [0, 1, 2, 3])
    table = _table(mesh)
    good = _device_ids(mesh, IDS)
    for i in range(30):  # folded on the devices past _FOLD pairs
        sa.take(table, _device_ids(mesh, IDS - 1) if i == 17 else good, "vocab")
    ones = sa.take(_table(mesh, vocab=4), _device_ids(mesh, IDS[:, :1] + 4), "vocab")  # another check: too large
    with pytest.raises(sa.DimensionError, match=r"found values from -1 to 7.*1 more check\(s\)"):
        ones.numpy()
    assert ones.numpy().shape == (2, 1, 2)


def test_the_queue_is_read_when_it_holds_too_many_checks(monkeypatch):
    """A program that never reads a value keeps a bounded queue: past DEFERRED_LIMIT distinct checks it is read."""
    gpu, mesh = _gpu_mesh(monkeypatch)
    monkeypatch.setattr(mesh_module, "DEFERRED_LIMIT", 3)
    reads = count_reads(monkeypatch, gpu)
    table = _table(mesh, vocab=16)
    for n in range(1, 4):  # three shapes of ids: three checks
        sa.take(table, _device_ids(mesh, np.ones((2, n), int)), "vocab")
    assert reads == [] and len(mesh.deferred) == 3
    sa.take(table, _device_ids(mesh, np.ones((2, 4), int)), "vocab")
    assert reads == ["asnumpy"] or reads == ["get"]
    assert mesh.deferred == {}


def test_clip_gives_ids_a_kernel_can_index_with(monkeypatch):
    _, mesh = _gpu_mesh(monkeypatch)
    ids = _device_ids(mesh, IDS + 3)
    clipped = take_module.check_ids(ids, 8, "vocab", op="sa.nn.cross_entropy", clip=True)
    assert clipped.layout == ids.layout and clipped.dtype == ids.dtype
    assert take_module.check_ids(ids, 8, "vocab") is ids  # without clip: the ids themselves
    with pytest.raises(sa.DimensionError, match=r"sa\.nn\.cross_entropy along 'vocab' \(size 8\)"):
        clipped.numpy()
    np.testing.assert_array_equal(clipped.numpy(), np.clip(IDS + 3, 0, 7))


def test_host_made_ids_are_checked_at_once_without_a_read(monkeypatch):
    gpu, mesh = _gpu_mesh(monkeypatch)
    table = _table(mesh)
    reads = count_reads(monkeypatch, gpu)
    ids = sa.asarray(IDS + 3, dims=("b", "s"), mesh=mesh)
    assert ids.host_range == (3, 10)
    with pytest.raises(sa.DimensionError, match=r"take along 'vocab' \(size 8\).*from 3 to 10"):
        sa.take(table, ids, "vocab")
    assert reads == [] and mesh.deferred == {}


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"d": 1}])
def test_numpy_shards_keep_the_immediate_check(shape):
    mesh = sa.Mesh(shape, backend="numpy")
    table = _table(mesh) if "row" in shape else sa.asarray(np.arange(16.0).reshape(8, 2), dims=("vocab", "d"),
                                                           mesh=mesh)
    bad = sa.asarray(IDS + 3, dims=("b", "s"), mesh=mesh) * 1
    assert bad.host_range is None
    with pytest.raises(sa.DimensionError, match=r"^take along 'vocab' \(size 8\).*found values from 3 to 10"):
        sa.take(table, bad, "vocab")
    assert mesh.deferred == {}


def test_mpi_meshes_keep_the_immediate_check(monkeypatch):
    """Under comm="mpi" a replicated value is read by one process alone: a queue read there could not agree."""
    _, mesh = _gpu_mesh(monkeypatch)
    assert take_module._checks_on_device(mesh)
    one = sa.Mesh({"d": 1}, backend="cupy")
    monkeypatch.setattr(one, "comm_kind", "mpi")
    assert not take_module._checks_on_device(one)
    table = sa.asarray(np.arange(16.0).reshape(8, 2), dims=("vocab", "d"), mesh=one)
    bad = sa.asarray(IDS + 3, dims=("b", "s"), mesh=one) * 1
    with pytest.raises(sa.DimensionError, match=r"^take along 'vocab' \(size 8\).*found values from 3 to 10"):
        sa.take(table, bad, "vocab")
    assert one.deferred == {}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the lenient fake runs no kernels: their outputs are garbage
@pytest.mark.parametrize("shape, strategy", [({"d": 1}, "replicated"), ({"rows": 2, "cols": 2}, "mesh2d")])
def test_the_readme_training_step_reads_only_at_the_loss(monkeypatch, shape, strategy):
    """The README example's step on CuPy: batches from ``pattern_arrays`` (``sa.from_local``: ids made per device,
    no host range). Before: two reads inside every step (the embedding's tokens, the cross-entropy's targets);
    now none, and the loss read brings the queued ranges with it."""
    monkeypatch.setenv("SHARDARRAY_KERNELS", "0")  # (the fused cross-entropy kernel checks its targets itself)
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    reads = count_reads(monkeypatch, gpu)
    cfg = sa.nn.TransformerConfig(vocab=64, d_model=32, heads=2, d_kv=16, d_ff=64, n_layers=1, seq_len=16)
    mesh = sa.Mesh(shape, backend="cupy", rules=sa.nn.strategy_rules(strategy, shape))
    params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=0)
    opt = sa.optim.Adam(1e-3)
    state = opt.init(params)
    step = sa.value_and_grad(sa.nn.transformer_loss)
    for s in range(1, 4):
        tokens, targets = sa.nn.data.pattern_arrays(mesh, 0, s, 4, cfg.seq_len, cfg.vocab)
        assert tokens.host_range is None and targets.host_range is None
        reads.clear()
        loss, grads = step(params, tokens, targets, cfg)
        params, state = opt.update(params, grads, state)
        assert reads == [] and mesh.deferred
        float(loss)
        assert len(reads) == 2 and mesh.deferred == {}  # the queued ranges, then the loss
    bad = targets + cfg.vocab
    with pytest.raises(sa.DimensionError, match=r"sa\.take along 'vocab' \(size 64\)"):
        float(sa.nn.transformer_loss(params, tokens, bad, cfg))
