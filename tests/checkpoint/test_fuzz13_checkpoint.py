"""Fuzz round 13 of ``sa.checkpoint``: trees of named and positional arrays (every dtype a checkpoint stores, 0-d and
size-0 arrays, uneven and empty blocks) with optimizer state, saved on one mesh (1, 2x2, 4, 2x2x2, 3x2) and loaded
onto another with other axis names and sizes, by ``mesh=`` and into a target tree; positional arrays stay
positional. Then overwrites that fail half-way (the previous checkpoint still loads, nothing is left behind) and
bad input (a corrupt manifest, a truncated or missing block file, a file or folder that is no checkpoint) giving a ``CheckpointError`` that names the path and says what to do.

``FUZZ13_EXAMPLES=<n>`` runs the fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import json
from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_meshes, fuzz
from helpers import host, layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api import Array
from shardarray.checkpoint import writer
from shardarray.layout import block_bounds

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
ENV = "FUZZ13_EXAMPLES"
DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)


def _values(shape, name, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)
    if dt.kind == "b":
        return np.asarray(rng.random(shape) > 0.5)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.asarray(rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True))
    out = np.asarray(rng.standard_normal(shape)).astype(dt)
    if out.size:
        out.reshape(-1)[0] = rng.choice([np.nan, -np.inf, -0.0])
    return out


@st.composite
def _arrays(draw, mesh):
    """(value, dims, layout, positional) of one random array on ``mesh``."""
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(0 if draw(st.integers(0, 5)) == 0 else 1, 6)) for _ in range(ndim))
    positional = draw(st.booleans())
    dims = tuple(f"dim{k}" for k in range(ndim)) if positional else tuple("abc"[:ndim])
    value = _values(shape, draw(st.sampled_from(DTYPES)), draw(st.integers(0, 2**16)))
    return value, dims, draw(layouts(mesh, dims)), positional


def _place(mesh, value, dims, layout, positional):
    x = sa.asarray(value, dims=dims, mesh=mesh, layout=layout)
    return xp.asarray(x) if positional else x


def _bits(a) -> bytes:
    return np.asarray(a).tobytes()


def _same(got, value, positional, mesh=None, layout=None):
    assert type(got) is (Array if positional else sa.ShardArray)
    assert got.dtype == value.dtype and got.shape == value.shape and _bits(got.numpy()) == _bits(value)
    if mesh is not None:
        assert got.mesh is mesh and got.layout == {d: tuple(a) for d, a in layout.items()}
        for d, bounds in enumerate(block_bounds(mesh, got.spec)):
            assert _bits(host(got.shards[d])) == _bits(value[tuple(slice(s, e) for s, e in bounds)])


@fuzz(30, ENV)
@given(saved_on=cached_meshes(), load_on=cached_meshes(), data=st.data())
def test_fuzz_save_on_one_mesh_load_on_another(tmp_path_factory, saved_on, load_on, data):
    cases = [data.draw(_arrays(saved_on)) for _ in range(data.draw(st.integers(1, 3)))]
    arrays = {f"x{i}": _place(saved_on, *c) for i, c in enumerate(cases)}
    floats = {k: v for k, v in arrays.items() if v.dtype.kind == "f" and v.dtype.itemsize >= 4}
    opt = data.draw(st.sampled_from([None, sa.optim.Adam(1e-2), sa.optim.SGD(1e-2, momentum=0.9)]))
    state = opt.init(floats) if opt is not None and floats else None
    tree = {"params": arrays, "opt": state, "step": 7, "pair": (arrays["x0"], "tag")}
    path = tmp_path_factory.mktemp("ck") / "ck"
    sa.checkpoint.save(path, tree)

    by_mesh = sa.checkpoint.load(path, mesh=load_on)
    assert by_mesh["step"] == 7 and by_mesh["pair"][1] == "tag"
    for i, (value, _, _, positional) in enumerate(cases):
        _same(by_mesh["params"][f"x{i}"], value, positional)
        assert by_mesh["params"][f"x{i}"].mesh is load_on
    _same(by_mesh["pair"][0], cases[0][0], cases[0][3])

    # into a target: the target's kind, dims, layout and dtype, on a mesh of other axis names and sizes
    targets, layouts_of = {}, {}
    for i, (value, dims, _, positional) in enumerate(cases):
        lay = data.draw(layouts(load_on, dims))
        layouts_of[f"x{i}"] = lay
        targets[f"x{i}"] = _place(load_on, np.zeros_like(value), dims, lay, positional)
    target_state = opt.init({k: targets[k] for k in floats}) if state is not None else None
    target = {"params": targets, "opt": target_state, "step": 0, "pair": (targets["x0"], "")}
    loaded = sa.checkpoint.load(path, target)
    assert loaded["step"] == 7 and loaded["pair"][1] == "tag"
    for i, (value, _, _, positional) in enumerate(cases):
        _same(loaded["params"][f"x{i}"], value, positional, load_on, layouts_of[f"x{i}"])
    if state is not None:
        assert loaded["opt"]["step"] == state["step"]
        moments = [k for k in ("m", "v", "velocity") if state.get(k) is not None]
        for k in moments:
            for name, moment in state[k].items():
                _same(loaded["opt"][k][name], moment.numpy(), isinstance(moment, Array))


# ------------------------------------------------------------------------------------------ failures


def _saved(tmp_path, scale=1.0):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(20.0).reshape(5, 4) * scale, dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    return mesh, x, {"w": x, "p": xp.asarray(x), "step": 1}


def _half_written(path, tensors, **kw):
    path.write_bytes(b"partial")
    raise OSError(28, "No space left on device")


def test_an_overwrite_that_fails_half_way_keeps_the_previous_checkpoint_and_leaves_nothing(tmp_path):
    mesh, x, tree = _saved(tmp_path)
    sa.checkpoint.save(tmp_path / "ck", tree)
    sa.checkpoint.save(tmp_path / "run", tree, keep=2)
    for _ in range(2):
        with mock.patch.object(writer, "write_file", _half_written), pytest.raises(sa.CheckpointError, match="space"):
            sa.checkpoint.save(tmp_path / "ck", _saved(tmp_path, 2.0)[2], overwrite=True)
        with mock.patch.object(writer, "write_file", _half_written), pytest.raises(sa.CheckpointError, match="space"):
            sa.checkpoint.save(tmp_path / "run", _saved(tmp_path, 2.0)[2], keep=2)
    # the failed saves left their temporary directories (partial checkpoints) behind for the life of the process
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck", "run"]
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["ckpt-00000001"]
    for where in ("ck", "run"):
        loaded = sa.checkpoint.load(tmp_path / where, mesh=mesh)
        assert np.array_equal(loaded["w"].numpy(), x.numpy()) and type(loaded["p"]) is Array


def test_damaged_checkpoints_are_checkpoint_errors_naming_the_path(tmp_path):
    mesh, _, tree = _saved(tmp_path)
    for name in ("manifest", "truncated", "missing", "flipped"):
        sa.checkpoint.save(tmp_path / name, tree)
    manifest = tmp_path / "manifest" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"step"', '"stop"', 1))
    block = tmp_path / "truncated" / "blocks-00000.safetensors"
    block.write_bytes(block.read_bytes()[:-9])
    (tmp_path / "missing" / "blocks-00000.safetensors").unlink()
    flipped = tmp_path / "flipped" / "blocks-00000.safetensors"
    raw = bytearray(flipped.read_bytes())
    raw[-3] ^= 1
    flipped.write_bytes(bytes(raw))
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "x").write_text("x")
    (tmp_path / "text").write_text("not a checkpoint")
    cases = {
        "manifest": r"manifest\.json fails its checksum",
        "truncated": r"truncated|damaged|ends .* early",
        "missing": r"blocks-00000\.safetensors is missing",
        "flipped": r"fails its checksum .* restore it or use an older checkpoint",
        "folder": r"no manifest\.json",
        "text": r"not a readable safetensors file",
        "absent": r"does not exist; pass the directory sa\.checkpoint\.save wrote",
    }
    for name, pattern in cases.items():
        with pytest.raises(sa.CheckpointError, match=pattern) as e:
            sa.checkpoint.load(tmp_path / name, mesh=mesh)
        assert str(tmp_path / name) in str(e.value)


def test_bad_trees_and_targets_are_refused_naming_the_array(tmp_path):
    mesh, x, tree = _saved(tmp_path)
    sa.checkpoint.save(tmp_path / "ck", tree)
    with pytest.raises(sa.CheckpointError, match=r"exists; pass overwrite=True"):
        sa.checkpoint.save(tmp_path / "ck", tree)
    m32 = sa.Mesh({"p": 3, "q": 2})
    wrong = {"w": sa.zeros(m32, {"a": 5, "b": 3}), "p": xp.zeros((5, 4)), "step": 0}
    with pytest.raises(sa.CheckpointError, match=r"array 'w' was saved with sizes \{'a': 5, 'b': 4\}"):
        sa.checkpoint.load(tmp_path / "ck", wrong)
    ints = {"w": sa.zeros(m32, {"a": 5, "b": 4}, dtype="int32"), "p": xp.zeros((5, 4)), "step": 0}
    with pytest.raises(sa.CheckpointError, match=r"casting='unsafe'"):
        sa.checkpoint.load(tmp_path / "ck", ints)
    # a positional target takes the named array by position; a named target the positional one under its dims
    swapped = {"w": xp.zeros((5, 4)), "p": sa.zeros(m32, {"r": 5, "s": 4}, layout={"s": "p"}), "step": 0}
    loaded = sa.checkpoint.load(tmp_path / "ck", swapped)
    assert type(loaded["w"]) is Array and loaded["p"].dims == ("r", "s") and loaded["p"].layout == {"s": ("p",)}
    assert np.array_equal(loaded["p"].numpy(), x.numpy())
    assert json.loads((tmp_path / "ck" / "manifest.json").read_text())["arrays"]["p"]["kind"] == "positional"


def test_exporting_into_a_folder_and_loading_a_manifest_say_what_to_pass(tmp_path):
    mesh, x, tree = _saved(tmp_path)
    sa.checkpoint.save(tmp_path / "ck", tree)
    (tmp_path / "out").mkdir()
    # was "the output .../out is a folder .../ck; writing there would replace a file of the checkpoint"
    with pytest.raises(sa.CheckpointError, match=r"out is a folder; give the path of the file to write") as e:
        sa.checkpoint.export_safetensors(tmp_path / "ck", tmp_path / "out")
    assert "would replace" not in str(e.value) and str(tmp_path / "out" / "ck.safetensors") in str(e.value)
    with pytest.raises(sa.CheckpointError, match=r"pass the checkpoint's folder .*ck$"):
        sa.checkpoint.load(tmp_path / "ck" / "manifest.json", mesh=mesh)
    out = sa.checkpoint.export_safetensors(tmp_path / "ck", tmp_path / "out" / "ck.safetensors")
    loaded = sa.checkpoint.load(out, mesh=sa.Mesh({"p": 3, "q": 2}))
    assert type(loaded["p"]) is Array and type(loaded["w"]) is sa.ShardArray and loaded["step"] == 1
    assert np.array_equal(loaded["p"].numpy(), x.numpy())
