"""Regressions found by the sixth differential fuzzing round of checkpoints and ``sa.io`` (random trees saved on one
mesh and backend and loaded onto another, exports, run directories, random arrays written and read back)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import safetensors.numpy

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"x": 1}, {"row": 2, "col": 2}, {"x": 4}, {"row": 2, "col": 2, "dep": 2}, {"row": 3, "col": 2}]
IDS = ["1", "2x2", "4", "2x2x2", "3x2"]


def _x(shape: dict[str, int], dtype: str = "float64") -> sa.ShardArray:
    mesh = sa.Mesh(shape)
    value = np.arange(12.0).reshape(3, 4).astype(dtype)
    return sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": mesh.axis_names[0]})


@pytest.mark.parametrize("shape", MESHES, ids=IDS)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_write_zarr_keeps_signed_zeros_of_complex_arrays(tmp_path, shape, dtype):
    zarr = pytest.importorskip("zarr", reason="the [zarr] extra is not installed")
    mesh = sa.Mesh(shape)
    value = np.array([complex(-0.0, 0.0), 1 + 2j, complex(0.0, -0.0), complex(-0.0, -0.0), 3j], dtype)
    x = sa.asarray(value, dims=("t",), mesh=mesh, layout={"t": tuple(mesh.axis_names)})
    for positional, path in [(False, tmp_path / "x.zarr"), (True, tmp_path / "p.zarr")]:
        sa.io.write_zarr(path, xp.asarray(x) if positional else x, chunks=1)
        # a chunk equal to the fill value 0j was skipped by zarr (it compares complex chunks with ==): -0.0 became 0.0
        stored = zarr.open_array(path, mode="r")[...]
        got = sa.io.read_zarr(path, mesh).numpy()
        for a in (stored, got):
            assert a.tobytes() == value.tobytes()
            np.testing.assert_array_equal(np.signbit(a.real), np.signbit(value.real))
            np.testing.assert_array_equal(np.signbit(a.imag), np.signbit(value.imag))


@pytest.mark.parametrize("shape", MESHES, ids=IDS)
def test_export_refuses_an_array_named_like_the_safetensors_metadata(tmp_path, shape):
    x = _x(shape)
    sa.checkpoint.save(tmp_path / "ck", {"__metadata__": x, "step": 3})
    # the export wrote the tensor over the file's "__metadata__" header entry: a file nothing could read
    with pytest.raises(sa.CheckpointError, match=r"named '__metadata__'.*reserves for the file's metadata"):
        sa.checkpoint.export_safetensors(tmp_path / "ck", tmp_path / "out.safetensors")
    assert not (tmp_path / "out.safetensors").exists()
    got = sa.checkpoint.load(tmp_path / "ck", mesh=x.mesh)  # the checkpoint itself is fine
    np.testing.assert_array_equal(got["__metadata__"].numpy(), x.numpy())
    sa.checkpoint.save(tmp_path / "ok", {"meta": x, "w": {"__metadata__": x}})  # a nested key is a longer name
    out = sa.checkpoint.export_safetensors(tmp_path / "ok", tmp_path / "ok.safetensors")
    assert sorted(safetensors.numpy.load_file(out)) == ["meta", "w/__metadata__"]


@pytest.mark.parametrize("shape", MESHES, ids=IDS)
def test_keep_refuses_a_checkpoint_directory(tmp_path, shape):
    x = _x(shape)
    sa.checkpoint.save(tmp_path / "ck", {"w": x, "step": 1})
    # was saved as ck/ckpt-00000001 inside the checkpoint, and load(ck) went on returning step 1 without a word
    with pytest.raises(sa.CheckpointError, match=r"keep=2 saves numbered checkpoints into a run directory.*holds "):
        sa.checkpoint.save(tmp_path / "ck", {"w": x * 2.0, "step": 2}, keep=2)
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["blocks-00000.safetensors", "manifest.json"]
    sa.checkpoint.save(tmp_path / "run", {"w": x, "step": 1}, keep=2)  # a run directory takes keep= as before
    sa.checkpoint.save(tmp_path / "run", {"w": x * 2.0, "step": 2}, keep=2)
    got = sa.checkpoint.load(tmp_path / "run", {"w": x, "step": 0})
    assert got["step"] == 2
    np.testing.assert_array_equal(got["w"].numpy(), x.numpy() * 2.0)


@pytest.mark.parametrize("shape", MESHES, ids=IDS)
def test_a_defaultdict_or_ordered_dict_target_loads_into_its_own_type(tmp_path, shape):
    x = _x(shape, "float32")
    sa.checkpoint.save(tmp_path / "ck", {"w": x, "opt": {"m": x + 1.0}})
    target = collections.defaultdict(list, {"w": sa.zeros(x.mesh, x.sizes), "opt": collections.OrderedDict(m=x)})
    got = sa.checkpoint.load(tmp_path / "ck", target)  # was a raw TypeError: defaultdict(<generator>)
    assert type(got) is collections.defaultdict and got.default_factory is list
    assert type(got["opt"]) is collections.OrderedDict
    np.testing.assert_array_equal(got["w"].numpy(), x.numpy())
    np.testing.assert_array_equal(got["opt"]["m"].numpy(), x.numpy() + 1.0)
    assert list(target["w"].numpy().ravel()) == [0.0] * 12  # the target is left as it was
