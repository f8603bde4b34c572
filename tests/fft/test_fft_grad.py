"""VJPs of the FFT family against float64 finite differences (real losses through c2r transforms)."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import shardarray as sa

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"all": 4}, {"p": 3, "q": 2}]


def _setup(shape):
    mesh = sa.Mesh(shape)
    names = mesh.axis_names
    layout = {"a": names[0]} if len(names) == 1 else {"a": names[0], "b": names[1]}
    x = sa.asarray(np.random.default_rng(0).standard_normal((5, 7)), dims=("a", "b"), mesh=mesh, layout=layout)
    w = sa.asarray(np.random.default_rng(1).standard_normal((5, 6)), dims=("a", "b"), mesh=mesh, layout=layout)
    return x, w


LOSSES = {
    # real -> complex (fft of a real input, padded / truncated) -> real: fft and irfft VJPs
    "fft_irfft": lambda x: sa.fft.irfft(sa.fft.fft(x, "a", norm="ortho"), "b", n=6),
    "fft_pad_irfft": lambda x: sa.fft.irfft(sa.fft.fft(x, "b", n=4), "b", n=6, norm="ortho"),
    "ifft_irfft": lambda x: sa.fft.irfft(sa.fft.ifft(x, "b", n=9), "b", n=6, norm="forward"),
    "rfft_irfft": lambda x: sa.fft.irfft(sa.fft.rfft(x, "b", n=5), "b", n=6),
    "ihfft_hfft": lambda x: sa.fft.hfft(sa.fft.ihfft(x, "b", n=8, norm="ortho"), "b", n=6),
    "rfft_hfft": lambda x: sa.fft.hfft(sa.fft.rfft(x, "b", n=11), "b", n=6, norm="forward"),
    "rfftn_irfftn": lambda x: sa.fft.irfftn(sa.fft.rfftn(x, s=(6, 4)), s=(5, 6)),
    "fftn_irfft": lambda x: sa.fft.irfft(sa.fft.fftn(x, ("a", "b"), s=(5, 4)), "b", n=6),
}


@pytest.mark.parametrize("shape", MESHES, ids=lambda s: "x".join(map(str, s.values())))
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_fft_vjp_finite_differences(shape, name):
    x, w = _setup(shape)
    fn = LOSSES[name]

    def loss(p):
        return (fn(p["x"]) * w).sum()

    grads = check_grad(loss, {"x": x})
    assert grads["x"].layout == x.layout and grads["x"].dtype == np.float64


LOSSES_1D = {  # lengths n1·n2 with n1, n2 >= 6: the four-step path on every mesh below (k <= 6)
    "fft_irfft": lambda x: sa.fft.irfft(sa.fft.fft(x, "t", n=36, norm="ortho"), "t", n=42),
    "ifft_irfft": lambda x: sa.fft.irfft(sa.fft.ifft(x, "t", n=48), "t", n=36, norm="forward"),
    "rfft_hfft": lambda x: sa.fft.hfft(sa.fft.rfft(x, "t", n=48), "t", n=36),
    "ihfft_hfft": lambda x: sa.fft.hfft(sa.fft.ihfft(x, "t", n=42, norm="ortho"), "t", n=48, norm="forward"),
}


@pytest.mark.parametrize("shape", [{"all": 4}, {"row": 2, "col": 2}, {"p": 3, "q": 2}],
                         ids=lambda s: "x".join(map(str, s.values())))
@pytest.mark.parametrize("name", sorted(LOSSES_1D))
def test_split_1d_four_step_vjp(shape, name):
    """A split 1-D array: the VJPs are four-step transforms too (alltoalls only, never an allgather)."""
    mesh = sa.Mesh(shape)
    axes = tuple(mesh.axis_names)
    x = sa.asarray(np.random.default_rng(2).standard_normal(40), dims=("t",), mesh=mesh, layout={"t": axes})
    fn = LOSSES_1D[name]
    w = sa.asarray(np.random.default_rng(3).standard_normal(fn(x).shape[0]), dims=("t",), mesh=mesh,
                   layout={"t": axes})

    def loss(p):
        return (fn(p["x"]) * w).sum()

    with sa.comm_log() as log:
        sa.grad(loss)({"x": x})
    ops = [r.op for r in log.records]
    assert "allgather" not in ops and ops.count("alltoall") == 12  # 4 transforms forward and back, 3 each
    grads = check_grad(loss, {"x": x})
    assert grads["x"].layout == x.layout and grads["x"].dtype == np.float64
