"""ops/manipulation/flip.py: flip, roll and pad of one named dim against NumPy, their comm logs and their VJPs."""

import numpy as np
import pytest

import shardarray as sa
from shardarray.errors import ArgumentError, DimensionError
from shardarray.ops.manipulation.flip import flip, pad, roll

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"x": 3, "y": 2}]


def _x(mesh_axes, shape=(7, 5)):
    mesh = sa.Mesh(mesh_axes)
    names = list(mesh_axes)
    layout = {"i": names[0], "j": names[1]} if len(names) > 1 else {"i": names[0]}
    data = np.arange(float(np.prod(shape))).reshape(shape)
    return sa.asarray(data, dims=("i", "j"), mesh=mesh, layout=layout), data


@pytest.mark.parametrize("axes", MESHES)
@pytest.mark.parametrize("shape", [(7, 5), (1, 4), (0, 3), (2, 9)])
def test_flip_roll_pad_match_numpy(axes, shape):
    x, data = _x(axes, shape)
    for k, d in enumerate(("i", "j")):
        np.testing.assert_array_equal(flip(x, d).numpy(), np.flip(data, k))
        for s in (0, 1, -3, 11):
            np.testing.assert_array_equal(roll(x, d, s).numpy(), np.roll(data, s, k))
        widths = [(0, 0), (0, 0)]
        widths[k] = (2, 3)
        np.testing.assert_array_equal(pad(x, d, 2, 3).numpy(), np.pad(data, widths))
    assert flip(x, "i").layout == x.layout


def test_comm_log_split_and_unsplit():
    x, _ = _x({"row": 2, "col": 2}, (8, 6))
    for op, args in ((flip, ()), (roll, (3,)), (pad, (1, 2))):
        with sa.comm_log() as log:
            op(x, "i", *args)
        assert [(r.op, r.axes) for r in log.records] == [("alltoall", ("row",))]
        assert log.records[0].elements <= 4 * 6 // 2  # at most a block
        y = x.relayout({"i": None, "j": "col"})
        with sa.comm_log() as log:
            op(y, "i", *args)
        assert log.records == []


def test_vjps():
    x, _ = _x({"row": 2, "col": 2}, (6, 4))
    w = sa.asarray(np.random.default_rng(0).normal(size=(6, 4)), dims=("i", "j"), mesh=x.mesh, layout={"i": "row"})
    g = sa.grad(lambda x: (flip(x, "i") * w).sum())(x)
    np.testing.assert_allclose(g.numpy(), np.flip(w.numpy(), 0))
    g = sa.grad(lambda x: (roll(x, "i", 2) * w).sum())(x)
    np.testing.assert_allclose(g.numpy(), np.roll(w.numpy(), -2, 0))
    wp = sa.asarray(np.arange(9 * 4.0).reshape(9, 4), dims=("i", "j"), mesh=x.mesh, layout={"i": "row"})
    g = sa.grad(lambda x: (pad(x, "i", 1, 2) * wp).sum())(x)
    np.testing.assert_allclose(g.numpy(), wp.numpy()[1:7])


def test_errors():
    x, _ = _x({"row": 2, "col": 2})
    with pytest.raises(DimensionError):
        flip(x, "k")
    with pytest.raises(ArgumentError):
        roll(x, "i", 1.5)
    with pytest.raises(ArgumentError):
        pad(x, "i", -1, 0)
