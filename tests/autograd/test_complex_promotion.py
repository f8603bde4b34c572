"""A real parameter that meets complex values (promoted in ``*``, ``einsum``, ``+``): its gradient is the real part
of the complex cotangent (as ``jax.grad`` and PyTorch give), checked against float64 finite differences.

Before, the complex cotangent reached the end of ``value_and_grad`` and its cast to the parameter's real dtype was
refused ("would drop its imaginary part")."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES

import shardarray as sa

LOSSES = {
    "einsum": lambda b, c: sa.real(sa.einsum(b, c, out=("i",))).sum(),
    "multiply": lambda b, c: sa.real(b * c).sum(),
    "imag-of-square": lambda b, c: sa.imag(b * c * c).sum(),
    "add-then-abs": lambda b, c: sa.abs(b + c).sum(),
}


def _numeric(f, hb, wrap):
    g, eps = np.zeros_like(hb), 1e-6
    for idx in np.ndindex(hb.shape):
        up, down = hb.copy(), hb.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (float(f(wrap(up))) - float(f(wrap(down)))) / (2 * eps)
    return g


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=lambda s: "x".join(map(str, s.values())))
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_a_real_parameter_gets_the_real_part_of_a_complex_cotangent(shape, name):
    mesh = sa.Mesh(shape)
    axes = list(shape)
    rng = np.random.default_rng(3)
    hb, hc = rng.random((5, 3)), rng.random(3) + 1j * rng.random(3)
    layout = {"i": axes[0]} if len(axes) < 2 else {"i": axes[0], "j": axes[1]}

    def wrap(h):
        return sa.asarray(h, dims=("i", "j"), mesh=mesh, layout=layout)

    c = sa.asarray(hc, dims=("j",), mesh=mesh, layout={"j": axes[-1]})
    f = LOSSES[name]
    _, g = sa.value_and_grad(lambda b: f(b, c))(wrap(hb))
    assert g.dtype == np.float64 and g.layout == wrap(hb).layout
    np.testing.assert_allclose(g.numpy(), _numeric(lambda b: f(b, c), hb, wrap), atol=1e-7)
