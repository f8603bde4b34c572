"""Every ``sa.fft`` transform runs on the ``meta`` backend as on NumPy shards: the same result dims, shapes, dtypes
and layouts, and the same collectives with the same volumes (it raised "the meta backend has no function 'fft'",
so a model with FFTs could not be profiled)."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa

CASES = {
    "fft": lambda a: sa.fft.fft(a["c"], "b"),
    "fft_split_dim": lambda a: sa.fft.fft(a["c"], "a"),
    "ifft_n": lambda a: sa.fft.ifft(a["c"], "b", n=9),
    "rfft": lambda a: sa.fft.rfft(a["r"], "b"),
    "irfft": lambda a: sa.fft.irfft(a["c"], "b"),
    "hfft_n": lambda a: sa.fft.hfft(a["c"], "a", n=10),
    "ihfft": lambda a: sa.fft.ihfft(a["r"], "a"),
    "fftn": lambda a: sa.fft.fftn(a["c"], ("a", "b")),
    "rfftn": lambda a: sa.fft.rfftn(a["r"], ("a", "b")),
    "irfftn": lambda a: sa.fft.irfftn(a["c"], ("a", "b")),
    "fft_1d_split": lambda a: sa.fft.fft(a["c1"], "t"),
    "rfft_1d_split": lambda a: sa.fft.rfft(a["r1"], "t"),
    "irfft_1d_split": lambda a: sa.fft.irfft(a["c1"], "t"),
    "fftshift": lambda a: sa.fft.fftshift(a["c"], "a"),
}
SPECS = {"c": ({"a": 8, "b": 6}, {"a": "row"}, "complex"), "r": ({"a": 8, "b": 6}, {"a": "row"}, "real"),
         "c1": ({"t": 16}, {"t": ("row", "col")}, "complex"), "r1": ({"t": 16}, {"t": ("row", "col")}, "real")}


def _run(backend, op, precision):
    mesh = sa.Mesh({"row": 2, "col": 2}, backend=backend)
    dtypes = {"complex": {"single": "complex64", "double": "complex128"}[precision],
              "real": {"single": "float32", "double": "float64"}[precision]}
    arrays = {}
    for key, (sizes, layout, kind) in SPECS.items():
        if backend == "meta":
            arrays[key] = sa.zeros(mesh, sizes, dtype=dtypes[kind], layout=layout)
        else:
            v = np.random.default_rng(0).standard_normal(tuple(sizes.values())).astype(dtypes[kind])
            arrays[key] = sa.asarray(v, dims=tuple(sizes), mesh=mesh, layout=layout)
    with sa.comm_log() as log:
        out = op(arrays)
    return (out.dims, out.shape, out.dtype, dict(out.layout)), [(r.op, r.axes, r.bytes) for r in log.records]


@pytest.mark.numpy_only(reason="compares the meta backend with NumPy shards")
@pytest.mark.parametrize("precision", ["single", "double"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fft_runs_on_meta_as_on_numpy(name, precision):
    assert _run("meta", CASES[name], precision) == _run("numpy", CASES[name], precision)
