"""Regressions found by a differential fuzzer of checkpoints (random trees of named and positional arrays, scalars
and optimizer states saved on one mesh and loaded on another, exported, corrupted)."""

from __future__ import annotations

import numpy as np

import shardarray as sa
import shardarray.array_api as xp


def _pending_positional(mesh: sa.Mesh) -> sa.ShardArray:
    a = xp.asarray(sa.asarray(np.arange(12.0).reshape(3, 4), dims=("dim0", "dim1"), mesh=mesh, layout={"dim1": "row"}))
    p = a @ xp.ones(4, device=mesh)  # contracts the split dim: a pending sum over "row"
    assert p.pending and type(p) is xp.Array
    return p


def test_a_positional_array_with_a_pending_sum_loads_positional(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    sa.checkpoint.save(tmp_path / "ck", {"p": _pending_positional(mesh)})
    got = sa.checkpoint.load(tmp_path / "ck", mesh=mesh)["p"]
    assert type(got) is xp.Array  # was a named ShardArray: resolving the sum before saving dropped the kind
    np.testing.assert_array_equal(got.numpy(), np.arange(12.0).reshape(3, 4).sum(1))


def test_an_exported_file_keeps_positional_arrays_positional(tmp_path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = np.arange(12.0).reshape(3, 4)
    tree = {"a": xp.asarray(value, device=mesh), "w": sa.asarray(value, dims=("x", "y"), mesh=mesh)}
    sa.checkpoint.save(tmp_path / "ck", tree)
    out = sa.checkpoint.export_safetensors(tmp_path / "ck", tmp_path / "ck.safetensors")
    got = sa.checkpoint.load(out, mesh=mesh)
    # was a named ShardArray, replicated: the file did not say which arrays are positional
    assert type(got["a"]) is xp.Array and got["a"].layout == {"dim0": ("row",), "dim1": ("col",)}
    assert type(got["w"]) is sa.ShardArray
    for k in tree:
        np.testing.assert_array_equal(got[k].numpy(), value)
