"""The meta backend: shapes, dtypes and comm volumes of huge arrays, no data."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa


def test_huge_einsum_and_relayout_on_512_devices():
    mesh = sa.Mesh({"rows": 16, "cols": 32}, backend="meta", rules={"batch": "rows", "d_ff": "cols"})
    # a 4096 x 65536 x 65536 problem: 1 TiB per weight in float32 if it held data
    x = sa.zeros(mesh, {"batch": 65536, "d_model": 65536})
    w = sa.random.normal(mesh, {"d_model": 65536, "d_ff": 1_000_003}, seed=0)
    with sa.comm_log() as log:
        h = sa.einsum(x, w, out=("batch", "d_ff"))
        y = sa.einsum(h, w.rename({"d_model": "out"}), out=("batch", "out"))
        y = y.relayout({"batch": "rows", "out": "cols"})
        s = sa.softmax(h, "d_ff")
    assert h.shape == (65536, 1_000_003) and h.layout == {"batch": ("rows",), "d_ff": ("cols",)}
    assert h.shards[0].shape == (4096, 31251) and h.shards[-1].shape == (4096, 1_000_003 - 31 * 31251)
    assert y.pending == () and y.layout == {"batch": ("rows",), "out": ("cols",)}
    assert s.shards[0].dtype == np.float32
    # the pending sum of y over cols becomes a reduce-scatter into out/cols
    rs = [r for r in log.records if r.op == "reduce_scatter"]
    assert len(rs) == 1 and rs[0].elements == 4096 * 65536 and rs[0].group_size == 32
    with pytest.raises(sa.BackendError):
        y.numpy()


def test_meta_ops_track_dtype_and_shape():
    mesh = sa.Mesh({"a": 2, "b": 2}, backend="meta")
    x = sa.ones(mesh, {"i": 5, "j": 3}, dtype="float16", layout={"i": "a"})
    t = sa.random.randint(mesh, {"i": 5}, 0, 9, layout={"i": "a"})
    assert (x * 2.0).dtype == np.float16
    assert (x + t).dtype == np.result_type(np.float16, np.int64)
    assert sa.exp(x.astype("float64")).dtype == np.float64
    assert x.max("i").shards[0].shape == (3,)
    assert x.transpose().shards[0].shape == (3, 3)
    assert x.relayout({"j": "a"}).shards[3].shape == (5, 1)
    assert (x > 0).dtype == np.bool_
    assert sa.where(x > 0, x, 0.0).shards[0].shape == (3, 3)
