"""sa.checkpoint: save from any layout, load onto any other (meshes, dtypes, backends), export, run dirs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import namedtuple

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as stnp
from helpers import layouts, meshes, rand, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.checkpoint.commit import new_token

CFG = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=4)


def _same(a, b):
    """Bit-exact equality of two NumPy arrays (NaNs included)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip_any_layout_to_any_other_is_bit_exact_and_moves_nothing(tmp_path_factory, data):
    src, dst = data.draw(meshes()), data.draw(meshes())
    dims = ("a", "b")
    shape = data.draw(sizes_strategy(dims, 0, 7))
    value = rand(shape, seed=1, dtype=np.float32)
    x = sa.asarray(value, dims=dims, mesh=src, layout=data.draw(layouts(src, dims)))
    y_layout = data.draw(layouts(dst, dims))
    path = tmp_path_factory.mktemp("ck") / "c"
    with sa.comm_log() as log:
        sa.checkpoint.save(path, {"x": x, "n": 3})
        out = sa.checkpoint.load(path, {"x": sa.zeros(dst, dict(zip(dims, shape)), layout=y_layout), "n": 0})
    assert log.records == []  # no pending sum: no collective at all, each device reads its own bytes
    assert out["n"] == 3 and out["x"].mesh == dst and out["x"].layout == {d: tuple(a) for d, a in y_layout.items()}
    _same(out["x"].numpy(), value)
    # each distinct non-empty block of the saved layout is stored once: the blocks tile the array
    m = json.loads((path / "manifest.json").read_text())
    blocks = m["arrays"]["x"]["blocks"]
    assert sum(int(np.prod(b["shape"])) for b in blocks) == value.size
    distinct = {tuple(map(tuple, bb)) for bb in sa.layout.block_bounds(src, x.spec) if all(e > s for s, e in bb)}
    assert len(blocks) == len(distinct)


def test_pending_sum_is_resolved_by_one_allreduce_before_saving(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = sa.asarray(rand((4, 6)), dims=("b", "k"), mesh=mesh, layout={"k": "col"})
    s = a.sum("k")
    assert s.pending == ("col",)
    with sa.comm_log() as log:
        sa.checkpoint.save(tmp_path / "c", {"s": s})
    assert [(r.op, r.axes) for r in log.records] == [("allreduce", ("col",))]
    got = sa.checkpoint.load(tmp_path / "c", mesh=mesh)["s"].numpy()
    np.testing.assert_allclose(got, rand((4, 6)).sum(1))


def _model(mesh, strategy, seed=0):
    params = sa.nn.init_transformer(CFG, mesh, strategy=strategy, seed=seed)
    opt = sa.optim.Adam(1e-2)
    state = opt.init(params)
    tok = np.random.default_rng(0).integers(0, CFG.vocab, (4, CFG.seq_len))
    t = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
    _, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, t, t, CFG)
    params, state = opt.update(params, grads, state)
    return {"params": params, "opt": state}


def _assert_tree_equal(a, b):
    fa, _ = sa.tree.tree_flatten(a, plain=True)
    fb, _ = sa.tree.tree_flatten(b, plain=True)
    assert len(fa) == len(fb)
    for u, v in zip(fa, fb):
        if isinstance(u, sa.ShardArray):
            _same(u.numpy(), v.numpy())
        else:
            assert u == v


@pytest.mark.parametrize("strategy", sa.nn.STRATEGIES)
def test_every_strategy_round_trips_params_and_adam_state(tmp_path, strategy):
    shape = {"row": 2, "col": 2, "dep": 2} if strategy == "tesseract" else (
        {"model": 4} if strategy == "megatron" else {"rows": 2, "cols": 2})
    mesh = sa.Mesh(shape, rules=sa.nn.strategy_rules(strategy, shape))
    tree = _model(mesh, strategy)
    assert tree["opt"]["step"] == 1
    sa.checkpoint.save(tmp_path / "c", tree)
    back = sa.checkpoint.load(tmp_path / "c", tree)
    _assert_tree_equal(tree, back)
    for p, q in zip(sa.tree.tree_flatten(tree["params"])[0], sa.tree.tree_flatten(back["params"])[0]):
        assert p.layout == q.layout and p.mesh == q.mesh


def test_mesh2d_to_megatron_by_rules_then_to_tesseract_by_target(tmp_path):
    s2 = {"rows": 2, "cols": 2}
    tree = _model(sa.Mesh(s2, rules=sa.nn.strategy_rules("mesh2d", s2)), "mesh2d")
    sa.checkpoint.save(tmp_path / "a", tree)
    mega = sa.Mesh({"model": 4}, rules=sa.nn.strategy_rules("megatron", {"model": 4}))
    on4 = sa.checkpoint.load(tmp_path / "a", mesh=mega)  # no target tree: the mesh's rules by dim name
    _assert_tree_equal(tree, on4)
    w = on4["params"]["layer0.mlp.w_in"]
    assert w.layout == {"d_ff": ("model",)}
    sa.checkpoint.save(tmp_path / "b", on4)
    t3 = {"row": 2, "col": 2, "dep": 2}
    target = _model(sa.Mesh(t3, rules=sa.nn.strategy_rules("tesseract", t3)), "tesseract", seed=5)
    on8 = sa.checkpoint.load(tmp_path / "b", target)
    _assert_tree_equal(tree, on8)
    assert on8["params"]["layer0.mlp.w_in"].layout == target["params"]["layer0.mlp.w_in"].layout


def test_float32_loads_into_bfloat16_targets_by_casting(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = rand((5, 3), dtype=np.float32)
    sa.checkpoint.save(tmp_path / "c", {"w": sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": "row"})})
    out = sa.checkpoint.load(tmp_path / "c", {"w": sa.zeros(sa.Mesh({"all": 4}), {"a": 5, "b": 3}, dtype="bfloat16",
                                                            layout={"b": "all"})})
    assert out["w"].dtype == np.dtype(ml_dtypes.bfloat16)
    _same(out["w"].numpy(), value.astype(ml_dtypes.bfloat16))
    # bfloat16 saves and loads bit-exactly too
    sa.checkpoint.save(tmp_path / "d", out)
    _same(sa.checkpoint.load(tmp_path / "d", mesh=mesh)["w"].numpy(), value.astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "int8", "uint64", "bool"])
def test_dtypes_round_trip(tmp_path, dtype):
    mesh = sa.Mesh({"p": 3, "q": 2})
    value = (rand((7, 2), seed=3) * 50).astype(dtype)
    sa.checkpoint.save(tmp_path / "c", [sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": ("q", "p")})])
    _same(sa.checkpoint.load(tmp_path / "c", mesh=sa.Mesh({"d": 1}))[0].numpy(), value)


def test_meta_target_checks_sizes_without_reading(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    sa.checkpoint.save(tmp_path / "c", {"w": sa.ones(mesh, {"a": 6, "b": 4}, layout={"a": "row"})})
    meta = sa.Mesh({"x": 2, "y": 2, "z": 2}, backend="meta")
    out = sa.checkpoint.load(tmp_path / "c", {"w": sa.zeros(meta, {"a": 6, "b": 4}, layout={"a": ("x", "y")})})
    assert out["w"].mesh.backend.name == "meta" and out["w"].nbytes_per_device == 2 * 4 * 4
    with pytest.raises(sa.CheckpointError, match="'w'.*sizes"):
        sa.checkpoint.load(tmp_path / "c", {"w": sa.zeros(meta, {"a": 5, "b": 4})})
    with pytest.raises(sa.CheckpointError, match="meta"):
        sa.checkpoint.save(tmp_path / "m", {"w": out["w"]})


def test_containers_and_plain_values_round_trip(tmp_path):
    Pair = namedtuple("Pair", "left right")
    mesh = sa.Mesh({"all": 4})
    x = sa.asarray(np.arange(6.0), dims=("a",), mesh=mesh, layout={"a": "all"})
    tree = {"pair": Pair(x, [1, 2.5, "s", None, True, np.int64(4)]), 3: (x * 2, {"inf": float("inf")})}
    sa.checkpoint.save(tmp_path / "c", tree)
    with_target = sa.checkpoint.load(tmp_path / "c", tree)
    assert isinstance(with_target["pair"], Pair)
    assert with_target["pair"].right == [1, 2.5, "s", None, True, 4] and with_target[3][1] == {"inf": float("inf")}
    by_rules = sa.checkpoint.load(tmp_path / "c", mesh=mesh)
    assert set(by_rules["pair"]) == {"left", "right"}  # namedtuples come back as dicts without a target
    _same(by_rules[3][0].numpy(), np.arange(6.0) * 2)


def test_load_reads_only_the_overlapping_region_of_each_saved_block(tmp_path, monkeypatch):
    from shardarray.checkpoint import reader

    mesh = sa.Mesh({"row": 2, "col": 2})
    sa.checkpoint.save(tmp_path / "c", {"w": sa.asarray(rand((8, 8)), dims=("a", "b"), mesh=mesh,
                                                        layout={"a": "row", "b": "col"})})
    read = []
    real = reader._Files.get

    class Counting:
        def __init__(self, f):
            self.f = f

        def get_slice(self, k):
            inner = self.f.get_slice(k)

            class S:
                def __getitem__(self, idx):
                    out = inner[idx]
                    read.append(out.size)
                    return out

                def __getattr__(self, name):
                    return getattr(inner, name)
            return S()

        def get_tensor(self, k):
            out = self.f.get_tensor(k)
            read.append(out.size)
            return out

        def __getattr__(self, name):
            return getattr(self.f, name)

    monkeypatch.setattr(reader._Files, "get", lambda self, n, b: Counting(real(self, n, b)))
    sa.checkpoint.load(tmp_path / "c", mesh=sa.Mesh({"x": 4}, rules={"a": "x"}), verify=False)
    # 4 target row blocks of 2x8, each from two saved 4x4 blocks: 2x4 elements per read, 64 in all
    assert sorted(read) == [8] * 8


def test_keep_retains_the_newest_checkpoints_of_a_run(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    run = tmp_path / "run"
    for step in range(1, 6):
        sa.checkpoint.save(run, {"w": sa.full(mesh, {"a": 3}, float(step)), "step": step}, keep=2)
    assert sorted(p.name for p in run.iterdir()) == ["ckpt-00000004", "ckpt-00000005"]
    out = sa.checkpoint.load(run, mesh=mesh)  # a run directory loads its newest checkpoint
    assert out["step"] == 5 and out["w"].numpy().tolist() == [5.0] * 3


def test_overwrite_replaces_atomically_and_cleans_leftovers(tmp_path):
    mesh = sa.Mesh({"d": 1})
    path = tmp_path / "c"
    sa.checkpoint.save(path, {"v": 1})
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = new_token().split("-")[0] + f"-{int(gone.stdout)}-0"
    (tmp_path / f".c.tmp-{dead}").mkdir()  # a crashed save's temporary directory: its process is gone
    live = tmp_path / f".c.tmp-{new_token()}"
    live.mkdir()  # a save of the same path still running (this process): kept
    with pytest.raises(sa.CheckpointError, match="exists.*overwrite=True"):
        sa.checkpoint.save(path, {"v": 2})
    sa.checkpoint.save(path, {"v": 2, "w": sa.ones(mesh, {"a": 2})}, overwrite=True)
    assert sa.checkpoint.load(path, mesh=mesh)["v"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "c"]


def test_export_is_one_plain_file_that_load_reads_back(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    w, b = rand((5, 3), dtype=np.float32), np.arange(4, dtype=np.int64)
    tree = {"params": {"w": sa.asarray(w, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"}),
                       "b": [sa.asarray(b, dims=("c",), mesh=mesh, layout={"c": ("col", "row")})]}, "step": 9}
    sa.checkpoint.save(tmp_path / "c", tree)
    f = sa.checkpoint.export_safetensors(tmp_path / "c", tmp_path / "model.safetensors")
    plain = stnp.load_file(str(f))
    assert sorted(plain) == ["params/b/0", "params/w"]
    _same(plain["params/w"], w)
    _same(plain["params/b/0"], b)
    back = sa.checkpoint.load(f, mesh=sa.Mesh({"all": 4}, rules={"a": "all"}))  # dims kept in the metadata
    assert back["step"] == 9 and back["params"]["w"].layout == {"a": ("all",)}
    _same(back["params"]["w"].numpy(), w)


def test_weights_from_elsewhere_load_into_a_target(tmp_path):
    w = rand((6, 4), dtype=np.float32)
    stnp.save_file({"encoder/w": w}, str(tmp_path / "foreign.safetensors"))
    mesh = sa.Mesh({"row": 2, "col": 2})
    target = {"encoder": {"w": sa.zeros(mesh, {"in": 6, "out": 4}, layout={"in": "row", "out": "col"})}}
    out = sa.checkpoint.load(tmp_path / "foreign.safetensors", target)
    _same(out["encoder"]["w"].numpy(), w)
    with pytest.raises(sa.CheckpointError, match="no dim names.*target"):
        sa.checkpoint.load(tmp_path / "foreign.safetensors", mesh=mesh)


def test_tree_map_walks_plain_leaves_like_the_optimizer_step():
    mesh = sa.Mesh({"row": 2, "col": 2})
    params = {"w": sa.ones(mesh, {"a": 4}, layout={"a": "row"})}
    state = sa.optim.Adam(1e-3).init(params)
    doubled = sa.tree.tree_map(lambda v: v * 2, {**state, "name": "adam", "none": None})
    assert doubled["step"] == 0 and doubled["name"] == "adamadam" and doubled["none"] is None
    np.testing.assert_array_equal(doubled["m"]["w"].numpy(), np.zeros(4, np.float32))
    pairs = sa.tree.tree_map(lambda a, b: (a, b), {"s": 1, "x": 2.0}, {"x": 3.0, "s": 4})
    assert pairs == {"s": (1, 4), "x": (2.0, 3.0)}
    with pytest.raises(sa.DTypeError, match=r"tree 1\['s'\]"):
        sa.tree.tree_map(lambda a, b: a, {"s": 1}, {"s": params["w"]})


@pytest.mark.parametrize("blocks, sizes, why", [
    ([((0, 0), (3, 2)), ((3, 0), (2, 2)), ((0, 2), (3, 1)), ((3, 2), (2, 1))], [5, 3], None),  # uneven 2x2 grid
    ([((0,), (2,)), ((3,), (2,))], [5], "gap at 2"),
    ([((0,), (3,)), ((2,), (3,))], [5], "overlap at 2"),
    ([((0,), (2,)), ((0,), (3,))], [5], "different lengths"),
    ([((0, 0), (2, 2)), ((2, 2), (2, 2)), ((0, 0), (2, 2)), ((2, 2), (2, 2))], [4, 4], "grid"),  # twice, two missing
    ([((0, 0), (2, 4)), ((2, 0), (2, 4))], [4, 5], "end at 4, not at the size 5"),
])
def test_manifest_blocks_must_tile_their_array_as_a_grid(blocks, sizes, why):
    from shardarray.checkpoint.manifest import _grid_gap

    got = _grid_gap([{"offset": list(o), "shape": list(s)} for o, s in blocks], sizes)
    assert got is None if why is None else why in got


def test_concurrent_saves_of_one_path_do_not_delete_each_other(tmp_path):
    """Two saves racing to one path: each keeps its own temporary folder (a save cleans only leftovers of
    processes that are gone), both commit, and the checkpoint is one of the two, complete."""
    import threading

    mesh = sa.Mesh({"d": 1})
    path = tmp_path / "c"
    errors = []

    def saver(v: int) -> None:
        try:
            for _ in range(10):
                sa.checkpoint.save(path, {"v": v, "w": sa.full(mesh, {"a": 64}, float(v))}, overwrite=True)
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the two saves' steps finely
    try:
        pool = [threading.Thread(target=saver, args=(v,)) for v in (1, 2)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    finally:
        sys.setswitchinterval(old_interval)
    assert errors == []
    out = sa.checkpoint.load(path, mesh=mesh)
    assert out["v"] in (1, 2) and out["w"].numpy().tolist() == [float(out["v"])] * 64
    assert [p.name for p in tmp_path.iterdir()] == ["c"]
