"""A traced array passed by keyword to a differentiable op is an input of its node, as by position (it was left out
of the node's parents: ``add(a, y=b)`` gave ``b`` a zero gradient, silently, and ``maximum(a, y=b)`` raised a raw
unpacking error inside the VJP)."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from shardarray.ops.elementwise.arithmetic import add

MESHES = [{"r": 2, "c": 2}, {"all": 4}, {"r": 3, "c": 2}]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request: pytest.FixtureRequest) -> sa.Mesh:
    return sa.Mesh(request.param)


CASES = {
    "add": (lambda a, b: add(a, b), lambda a, b: add(a, y=b), lambda a, b: add(x=a, y=b)),
    "maximum": (lambda a, b: sa.maximum(a, b), lambda a, b: sa.maximum(a, y=b)),
    "where": (
        lambda a, b: sa.where(a > 2, a, b),
        lambda a, b: sa.where(a > 2, a, y=b),
        lambda a, b: sa.where(cond=a > 2, x=a, y=b),
    ),
    "hypot": (lambda a, b: sa.hypot(a, b), lambda a, b: sa.hypot(a, y=b)),
    "einsum_out": (lambda a, b: sa.einsum("i, i ->", a, b), lambda a, b: sa.einsum("i, i ->", a, b, out=None)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_keyword_inputs_get_their_gradients(mesh: sa.Mesh, case: str) -> None:
    axis = mesh.axis_names[0]
    a = sa.asarray(np.array([1.0, 5.0, 3.0, -2.0, 0.5]), dims=("i",), mesh=mesh, layout={"i": axis})
    b = sa.asarray(np.array([2.0, 4.0, 6.0, 1.0, -1.0]), dims=("i",), mesh=mesh)
    calls = CASES[case]
    ref = sa.grad(lambda p: calls[0](p[0], p[1]).sum())((a, b))
    for call in calls[1:]:
        got = sa.grad(lambda p, call=call: call(p[0], p[1]).sum())((a, b))
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g.numpy(), r.numpy())
        assert np.abs(got[1].numpy()).sum() > 0
