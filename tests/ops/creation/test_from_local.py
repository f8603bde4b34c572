"""sa.from_local: arrays from the blocks each device supplies (callable, mapping), checked against the layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from helpers import HYPOTHESIS_SHAPES, host, layouts, sizes_strategy
from shardarray.layout import block_bounds


def _block(value, mesh, layout):
    bounds = block_bounds(mesh, layout)
    return lambda d: value[tuple(slice(lo, hi) for lo, hi in bounds[d])]


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_from_local_matches_asarray(data):
    mesh = sa.Mesh(data.draw(st.sampled_from(HYPOTHESIS_SHAPES)))
    dims = ("i", "j")
    sizes = data.draw(sizes_strategy(dims, 0, 7))
    dtype = data.draw(st.sampled_from(["float64", "int32", "complex128"]))
    value = (np.arange(int(np.prod(sizes))).reshape(sizes) * (1 + 1j if dtype.startswith("c") else 1)).astype(dtype)
    layout = data.draw(layouts(mesh, dims))
    ref = sa.asarray(value, dims=dims, mesh=mesh, layout=layout)
    calls = []
    fn = _block(value, mesh, ref.spec)
    x = sa.from_local(mesh, lambda d: calls.append(d) or fn(d), dims, sizes, layout)
    assert x.layout == ref.layout and x.dtype == value.dtype and x.shape == tuple(sizes)
    np.testing.assert_array_equal(x.numpy(), value)
    assert len(calls) == len(mesh.replica_classes(ref.spec.used_axes))  # once per distinct block
    as_dict = sa.from_local(mesh, {d: fn(d) for d in range(mesh.size)}, dims, dict(zip(dims, sizes)), layout)
    for s, t in zip(as_dict.shards, ref.shards):
        np.testing.assert_array_equal(host(s), host(t))


def test_from_local_copies_and_casts():
    mesh = sa.Mesh({"row": 2, "col": 2})
    blocks = {d: np.full((2, 3), float(d // 2)) for d in range(4)}
    x = sa.from_local(mesh, blocks, ("b", "h"), (4, 3), {"b": "row"}, dtype="float32")
    blocks[0][:] = 7.0  # the caller's buffers stay the caller's
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x.numpy(), np.repeat([[0.0], [1.0]], 2, axis=0).repeat(3, axis=1))


def test_from_local_replicas_checked(monkeypatch):
    mesh = sa.Mesh({"row": 2, "col": 2})
    blocks = {d: np.full((2,), float(d)) for d in range(4)}  # devices 0 and 1 are replicas but differ
    sa.from_local(mesh, blocks, ("b",), (4,), {"b": "row"})  # unchecked by default
    monkeypatch.setenv("SHARDARRAY_CHECK_SPMD", "1")
    with pytest.raises(sa.CommError, match=r"devices 0 .* and 1 .*replicas"):
        sa.from_local(mesh, blocks, ("b",), (4,), {"b": "row"})


def test_from_local_empty_blocks_and_meta():
    mesh = sa.Mesh({"p": 3, "q": 2})
    x = sa.from_local(mesh, lambda d: np.ones((2 if mesh.coords(d)["p"] < 2 else 0, 2)), ("b", "h"), (4, 2),
                      {"b": "p"})
    np.testing.assert_array_equal(x.numpy(), np.ones((4, 2)))
    meta = sa.Mesh({"p": 3, "q": 2}, backend="meta")
    y = sa.from_local(meta, lambda d: np.empty((2, 1)), ("b", "h"), (6, 2), {"b": "p", "h": "q"})
    assert [s.shape for s in y.shards] == [(2, 1)] * 6


def test_pattern_rows_local_batches_agree_with_the_whole_batch():
    mesh = sa.Mesh({"p": 3, "q": 2})
    layout = sa.Layout(("batch", "seq"), (5, 8), (("p",), ()))
    bounds = block_bounds(mesh, layout)
    x = sa.from_local(mesh, lambda d: sa.nn.data.pattern_rows(3, 7, *bounds[d][0], 8, 16)[0], ("batch", "seq"),
                      (5, 8), {"batch": "p"})
    whole, targets = sa.nn.data.pattern_rows(3, 7, 0, 5, 8, 16)
    np.testing.assert_array_equal(x.numpy(), whole)
    assert (whole[:, 1:] == targets[:, :-1]).all() and not (whole == sa.nn.data.pattern_rows(3, 8, 0, 5, 8, 16)[0]).all()
