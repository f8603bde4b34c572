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
