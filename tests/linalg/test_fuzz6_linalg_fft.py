"""Regressions of the sixth linalg/fft fuzzing round: gradients through complex matrices.

A real loss of a complex matrix built from real parameters (``z = re + 1j * im``) reaches the linalg VJPs with
a complex cotangent, in JAX's convention (``dL/dx - i dL/dy``, as every VJP of the library). ``inv``, ``det``
and ``solve`` conjugated their formulas (the imaginary part's gradient came out wrong, silently); ``eigvalsh``
and ``svdvals`` missed the conjugate; the real-only formulas (``cholesky``, ``qr``) gave wrong values where they
now raise a ``DTypeError``.
"""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api._array import wrap

MESHES = [
    ({"d": 1}, {}),
    ({"row": 2, "col": 2}, {"dim1": "row"}),
    ({"p": 3, "q": 2}, {"dim0": "p", "dim2": "q"}),
    ({"x": 2, "y": 2, "z": 2}, {"dim1": ("x", "y"), "dim2": "z"}),
]


def _pos(a, mesh, layout):
    return wrap(sa.asarray(a, dims=("dim0", "dim1", "dim2"), mesh=mesh, layout=layout))


def _matrix(rng, kind):
    a = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    if kind == "hermitian":
        return (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    if kind == "spd":
        return a @ np.conj(np.swapaxes(a, -1, -2)) + 4 * np.eye(4)
    return a + 3 * np.eye(4)


OPS = {
    "det": ("general", lambda z, m: xp.linalg.det(z)),
    "inv": ("general", lambda z, m: xp.linalg.inv(z)),
    "solve": ("general", lambda z, m: xp.linalg.solve(z, xp.asarray(np.arange(8.0).reshape(4, 2), device=m))),
    "slogdet": ("general", lambda z, m: xp.linalg.slogdet(z).logabsdet),
    "eigvalsh": ("hermitian", lambda z, m: xp.linalg.eigvalsh(z)),
    "svdvals": ("general", lambda z, m: xp.linalg.svdvals(z)),
}


def _loss(op, mesh, w):
    def loss(p):
        y = OPS[op][1](p["re"] + p["im"] * 1j, mesh)
        return xp.sum(xp.real(y) * w[0] + xp.imag(y) * w[1]) if y.dtype.kind == "c" else xp.sum(y * w[0])

    return loss


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("shape, layout", MESHES)
def test_gradients_through_complex_matrices_match_finite_differences(op, shape, layout):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(6)
    a = _matrix(rng, OPS[op][0])
    params = {"re": _pos(a.real.copy(), mesh, layout), "im": _pos(a.imag.copy(), mesh, layout)}
    out_shape = OPS[op][1](params["re"] + params["im"] * 1j, mesh).shape
    w = [xp.asarray(rng.standard_normal(out_shape), device=mesh) for _ in range(2)]
    loss = _loss(op, mesh, w)
    _, grads = sa.value_and_grad(loss)(params)
    eps = 1e-6
    for _ in range(2):
        v = {k: rng.standard_normal(a.shape) for k in params}
        if OPS[op][0] == "hermitian":  # eigvalsh reads one triangle: move along Hermitian directions only
            v = {k: (d + np.swapaxes(d, -1, -2) * (1 if k == "re" else -1)) / 2 for k, d in v.items()}
        moved = [{k: _pos(params[k].numpy() + s * eps * v[k], mesh, layout) for k in params} for s in (1, -1)]
        fd = (float(loss(moved[0])) - float(loss(moved[1]))) / (2 * eps)
        analytic = sum(float(np.sum(grads[k].numpy() * v[k])) for k in params)
        np.testing.assert_allclose(analytic, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op", ["svd"])  # (pinv's complex gradient exists since round 15)
@pytest.mark.parametrize("shape, layout", MESHES[:2])
def test_real_only_gradients_refuse_a_complex_matrix(op, shape, layout):
    """The singular vectors' and ``pinv``'s VJPs take real matrices only: a complex one is a typed refusal, never a
    silently wrong gradient (``cholesky``, ``qr`` and ``eigh`` have complex VJPs since fuzz round 12)."""
    mesh = sa.Mesh(shape)
    a = _matrix(np.random.default_rng(7), "spd")
    params = {"re": _pos(a.real.copy(), mesh, layout), "im": _pos(a.imag.copy(), mesh, layout)}

    def loss(p):
        z = p["re"] + p["im"] * 1j
        y = xp.linalg.svd(z).U if op == "svd" else xp.linalg.pinv(z)
        return xp.sum(xp.real(y))

    with pytest.raises((sa.errors.DTypeError, sa.errors.TapeError)):
        sa.value_and_grad(loss)(params)
