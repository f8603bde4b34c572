"""In-place operators write into their left operand as NumPy's do; writes never change a recorded gradient.

``x += y`` on a positional array writes the result into ``x`` (every name bound to it sees it, a slice taken
before keeps its value), holding the lock of in-place writes. Inside ``sa.value_and_grad``, where the tape
depends on ``x`` (it is differentiated, a recorded op was given it) or ``y`` is differentiated, the name is
rebound to a new array instead, as in JAX, and the gradient is right. A write in place (``x[...] = v``,
``x[mask] = v``, ``x[ids] = v``, ``out=``) into an array a recorded op was given raises ``TapeError``: its VJP
would otherwise read the new value (before, the gradient came out silently wrong).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m.values())))
def mesh(request):
    return sa.Mesh(request.param)


def test_an_inplace_operator_writes_into_every_name_of_the_array(mesh):
    host = np.arange(15.0).reshape(5, 3)
    a = xp.asarray(host, device=mesh)
    alias, head = a, a[:2]

    def bump(buf):
        buf *= 2.0  # NumPy code that updates its argument

    a += xp.asarray(np.array([1.0, 2.0, 3.0]), device=mesh)
    bump(a)
    want = (host + [1.0, 2.0, 3.0]) * 2.0
    assert alias is a
    np.testing.assert_array_equal(np.asarray(alias), want)
    np.testing.assert_array_equal(np.asarray(head), host[:2])  # taken before: its own blocks
    m = xp.asarray(np.eye(3), device=mesh)
    same_m = m
    m @= xp.asarray(np.full((3, 3), 2.0), device=mesh)
    np.testing.assert_array_equal(np.asarray(same_m), np.full((3, 3), 2.0))


def test_inplace_operators_keep_the_layout_dtype_and_refuse_a_change(mesh):
    a = xp.asarray(np.arange(12, dtype=np.int16).reshape(4, 3), device=mesh)
    layout = a.layout
    a -= 1
    a <<= 2
    assert a.dtype == np.int16 and a.layout == layout
    np.testing.assert_array_equal(np.asarray(a), (np.arange(12, dtype=np.int16).reshape(4, 3) - 1) << 2)
    with pytest.raises(sa.DTypeError, match="int16 to float64"):
        a += 0.5
    np.testing.assert_array_equal(np.asarray(a), (np.arange(12, dtype=np.int16).reshape(4, 3) - 1) << 2)


def test_threads_adding_in_place_lose_no_update():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = xp.asarray(np.zeros((6, 4)), device=mesh)

    def work():
        for _ in range(25):
            a_ref = a
            a_ref += 1.0

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(np.asarray(a), np.full((6, 4), 100.0))


def test_inside_the_gradient_an_inplace_operator_on_a_traced_array_rebinds(mesh):
    w0 = xp.asarray(np.array([1.0, -2.0, 3.0]), device=mesh)

    def loss(w):
        h = xp.zeros(3, device=mesh)
        h += w * 2.0  # h is not traced, the result is: h's name is rebound
        h *= h
        c = xp.ones(3, device=mesh)
        y = w * c
        c += 1.0  # a recorded op was given c: rebound, the recorded product keeps reading the ones
        return xp.sum(h) + xp.sum(y * c)

    value, grad = sa.value_and_grad(loss)(w0)
    w = np.array([1.0, -2.0, 3.0])
    assert float(value) == pytest.approx(np.sum(4 * w * w) + np.sum(w * 2.0))
    np.testing.assert_allclose(np.asarray(grad), 8 * w + 2.0)


@pytest.mark.parametrize("write", ["slice", "mask", "ids", "out"])
def test_writing_into_an_array_a_recorded_op_holds_raises(mesh, write):
    w0 = xp.asarray(np.array([1.0, 2.0, 3.0]), device=mesh)

    def loss(w):
        c = xp.ones(3, device=mesh)
        c[0] = 2.0  # not used by the tape yet: allowed
        y = w * c
        if write == "slice":
            c[...] = 5.0
        elif write == "mask":
            c[c > 1.5] = 5.0
        elif write == "ids":
            c[xp.asarray(np.array([1, 2]), device=mesh)] = 5.0
        else:
            np.exp(xp.ones(3, device=mesh), out=c)
        return xp.sum(y)

    with pytest.raises(sa.TapeError, match="an op recorded for the gradient was given this array"):
        sa.value_and_grad(loss)(w0)
    c = xp.ones(3, device=mesh)
    sa.value_and_grad(lambda w: xp.sum(w * c))(w0)
    c[0] = 7.0  # the tape is released: writes are allowed again
    np.testing.assert_array_equal(np.asarray(c), [7.0, 1.0, 1.0])


def test_named_arrays_are_held_too():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(4.0), dims=("i",), mesh=mesh, layout={"i": "row"})

    def loss(w):
        c = sa.ones(mesh, {"i": 4}, dtype="float64")
        y = (w * c).sum()
        c[{"i": slice(0, 2)}] = 3.0
        return y

    with pytest.raises(sa.TapeError, match="was given this array"):
        sa.value_and_grad(loss)(x)


def test_in_tests_any_element(mesh):
    a = xp.asarray(np.arange(12.0).reshape(4, 3), device=mesh)
    assert 5.0 in a and 11 in a and 12.0 not in a and -1 not in a
    assert (0.0 in xp.asarray(np.zeros((0, 3)), device=mesh)) is False


def test_a_list_operand_is_refused_not_compared_as_false(mesh):
    """``x == [..]`` fell back to Python's identity comparison: False, silently. Lists are host data, refused
    as NumPy arrays are, with the conversion named."""
    a = xp.asarray(np.arange(3.0), device=mesh)
    for expr in (lambda: a == [0.0, 1.0, 2.0], lambda: a != (0, 1, 2), lambda: a + [1, 2, 3], lambda: [1, 2, 3] * a):
        with pytest.raises(sa.DTypeError, match=r"xp.asarray\(value, device=x.device\)"):
            expr()


def test_an_inplace_operator_computes_in_the_targets_layout():
    """``x += y`` is computed where ``x`` lives (its result is written back there): only ``y`` moves, even where
    the traffic-chosen layout of ``x + y`` would be ``y``'s (then the result would move back after)."""
    mesh = sa.Mesh({"a": 2, "b": 2})
    x = sa.relayout(xp.asarray(np.zeros((64, 16)), device=mesh), {"dim1": "a"})
    y = sa.relayout(xp.asarray(np.arange(16.0), device=mesh), {"dim0": ("a", "b")})
    with sa.comm_log() as log:
        x += y
    assert [(r.op, r.elements) for r in log.records] == [("allgather", 4)]
    assert x.layout == {"dim1": ("a",)}
    np.testing.assert_array_equal(x.numpy(), np.zeros((64, 16)) + np.arange(16.0))


def test_inside_the_gradient_an_inplace_operator_updates_every_alias():
    """``a = y; y += p`` inside ``sa.grad`` gives ``a`` the new value, as NumPy (and the same function outside
    the gradient) does, and the gradient flows through it."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    p0 = np.arange(6.0).reshape(3, 2) / 4

    def add(p):
        y = xp.zeros((3, 2), device=mesh)
        a = y
        y += p
        return xp.sum(a * a)

    def scale(p):
        y = p * 1.0
        a = y
        y *= 2
        return xp.sum(a * a)

    p = xp.asarray(p0, device=mesh)
    for f, want, grad in ((add, np.sum(p0 * p0), 2 * p0), (scale, np.sum(4 * p0 * p0), 8 * p0)):
        assert float(f(p)) == pytest.approx(want)
        value, g = sa.value_and_grad(f)(p)
        assert float(value) == pytest.approx(want)
        np.testing.assert_allclose(g.numpy(), grad)
