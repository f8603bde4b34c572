"""``core.kinds``: every declared op runs on named views of positional arrays and returns their kind.

The sweep of the whole public surface is ``tests/test_positional_kind_sweep.py``; these tests hold what a view
must carry back to the array it was made from (a pending sum's resolution, the tape's note that a recorded op
was given it) and that an op's code means the same for either kind.
"""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp


@pytest.fixture
def mesh():
    m = sa.Mesh({"row": 2, "col": 2})
    with sa.default_mesh(m):
        yield m


def _pending(mesh):
    a = sa.reshard(xp.asarray(np.arange(16.0).reshape(4, 4) / 10), mesh, {"dim1": "row"})
    p = a @ xp.asarray(np.ones((4, 4)))
    assert p.pending == ("row",)
    return p


def test_a_named_op_keeps_the_kind_and_the_meaning(mesh):
    x = np.arange(12.0).reshape(3, 4)
    a = xp.asarray(x)
    g = xp.asarray(np.full(4, 2.0)).rename({"dim0": "dim1"})  # the gain has the normalised dim
    y = sa.nn.layer_norm(a, g, g * 0.0, "dim1")  # its code broadcasts by name: a view keeps that meaning
    want = 2 * (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    assert isinstance(y, xp.Array)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    q, r = sa.linalg.qr(a.mT)
    assert isinstance(q, xp.Array) and isinstance(r, xp.Array)


def test_a_resolution_on_a_view_is_the_arrays(mesh):
    p = _pending(mesh)
    with sa.comm_log() as log:
        sa.exp(p)
        sa.sin(p)
        p.resolve()
    assert [r.op for r in log] == ["allreduce"]  # resolved once, for all three


def test_a_write_into_a_positional_array_a_recorded_op_was_given_is_refused(mesh):
    c = xp.asarray(np.array([1.0, 2.0, 3.0]))

    def f(w):
        y = sa.maximum(w, c)  # the op is given a named view of c; its VJP reads c
        c[...] = 5.0
        return sa.sum(y)

    with pytest.raises(sa.TapeError, match="recorded"):
        sa.value_and_grad(f)(xp.asarray(np.ones(3)))


def test_messages_name_the_positional_namespace(mesh):
    with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
        sa.maximum(xp.asarray([1.0, 2.0]), np.ones(2))


def test_one_array_given_twice_is_one_view(mesh):
    p = _pending(mesh)
    with sa.comm_log() as log:
        y = sa.maximum(p, p)  # (a nonlinear op: it resolves its pending operands)
    assert [r.op for r in log] == ["allreduce"]  # one resolution for both operands
    assert isinstance(y, xp.Array)


def test_the_zero_gradient_of_an_unused_positional_parameter_is_positional(mesh):
    a, b = xp.asarray(np.ones((4, 4))), xp.asarray(np.ones((4, 4)))
    _, g = sa.value_and_grad(lambda p: xp.sum(p["a"]))({"a": a, "b": b})
    assert isinstance(g["a"], xp.Array) and isinstance(g["b"], xp.Array)
    np.testing.assert_array_equal(g["b"].numpy(), np.zeros((4, 4)))
    assert isinstance(sa.optim.clip_by_global_norm(g, 1.0)["b"], xp.Array)
