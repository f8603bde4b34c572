"""sa.concat / sa.stack against NumPy on every test mesh and random layouts, their gradients and traffic."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from gradcheck import check_grad
from helpers import MESH_SHAPES, host, layouts, meshes, on_device, rand

SETTINGS = settings(max_examples=40, deadline=None)
DIMS = ("a", "b")


@given(meshes(), st.data())
@SETTINGS
def test_concat_matches_numpy(mesh, data):
    axis = data.draw(st.integers(0, 1))
    other = data.draw(st.integers(0, 6))
    k = data.draw(st.integers(1, 3))
    values, arrays = [], []
    for i in range(k):
        n = data.draw(st.integers(0, 6))
        shape = (n, other) if axis == 0 else (other, n)
        v = rand(shape, seed=i)
        values.append(v)
        arrays.append(sa.asarray(v, dims=DIMS, mesh=mesh, layout=data.draw(layouts(mesh, DIMS))))
    got = sa.concat(arrays, DIMS[axis])
    np.testing.assert_array_equal(got.numpy(), np.concatenate(values, axis=axis))
    assert got.dims == DIMS


@given(meshes(), st.data())
@SETTINGS
def test_stack_matches_numpy(mesh, data):
    shape = (data.draw(st.integers(0, 5)), data.draw(st.integers(0, 5)))
    layout = data.draw(layouts(mesh, DIMS))
    values = [rand(shape, seed=i) for i in range(data.draw(st.integers(1, 3)))]
    arrays = [sa.asarray(v, dims=DIMS, mesh=mesh, layout=layout) for v in values]
    with sa.comm_log() as log:
        got = sa.stack(arrays, "layer")
    assert len(log.records) == 0          # a shared layout: every device stacks its own blocks
    assert got.dims == ("layer", *DIMS) and got.layout == arrays[0].layout
    np.testing.assert_array_equal(got.numpy(), np.stack(values))


def test_concat_matches_dims_by_name():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((3, 4)), dims=DIMS, mesh=mesh, layout={"a": "row"})
    y = sa.asarray(rand((4, 2), seed=1), dims=("b", "a"), mesh=mesh, layout={"b": "col"})
    np.testing.assert_array_equal(sa.concat([x, y], "a").numpy(), np.concatenate([x.numpy(), y.numpy().T]))


def test_concat_traffic():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((4, 6)), dims=DIMS, mesh=mesh, layout={"a": "row", "b": "col"})
    y = sa.asarray(rand((4, 6), seed=1), dims=DIMS, mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        _ = sa.concat([x, y], "a")
    # result rows 0..3 on row 0 (x's rows), 4..7 on row 1 (y's): each device sends one 2 x 3 block of each input
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("alltoall", ("row",), 6)]
    z = sa.asarray(rand((4, 6)), dims=DIMS, mesh=mesh, layout={"b": "col"})
    with sa.comm_log() as log:
        _ = sa.concat([z, z], "a")        # unsplit: local
    assert len(log.records) == 0


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=lambda s: "x".join(map(str, s.values())))
def test_gradients(shape):
    mesh = sa.Mesh(shape)
    axis = mesh.axis_names[0]
    x = sa.asarray(rand((3, 4)), dims=DIMS, mesh=mesh, layout={"a": axis})
    y = sa.asarray(rand((2, 4), seed=1), dims=DIMS, mesh=mesh)
    c = sa.asarray(rand((5, 4), seed=2), dims=DIMS, mesh=mesh, layout={"a": axis})
    s = sa.asarray(rand((2, 3, 4), seed=3), dims=("layer", *DIMS), mesh=mesh)

    def f(params):
        x, y = params
        joined = sa.concat([x, y], "a") * c
        stacked = sa.stack([x, x * x], "layer") * s
        return (joined * joined).sum() + stacked.sum()

    check_grad(f, (x, y))


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}], ids=str)
def test_alltoallv_on_fake_nccl_equals_emulated(shape):
    """The new collective through NcclCommunicator (grouped send/recv, fake_nccl) equals the emulated one."""
    import fake_nccl
    from nccl_meshes import nccl_mesh

    fake_nccl.reset()
    mesh, emu = nccl_mesh(shape), sa.Mesh(shape)  # NumPy shards on the NCCL mesh; the session's on emu
    axes = (mesh.axis_names[0],)
    n = mesh.axes_size(axes)

    def send(m):
        out = []
        for d in range(mesh.size):
            pos = next(g for g in mesh.groups(axes) if d in g).index(d)
            out.append([on_device(m, np.full((2, (pos + j) % 3), 10.0 * d + j), d) for j in range(n)])
        return out

    with sa.comm_log() as log_n:
        got = mesh.comm.alltoallv(send(mesh), axes, 1)
    with sa.comm_log() as log_e:
        want = emu.comm.alltoallv(send(emu), axes, 1)
    assert log_n.records == log_e.records and log_e.records[0].op == "alltoall"
    for d in range(mesh.size):
        np.testing.assert_array_equal(host(got[d]), host(want[d]))
    # and slicing and concat through it
    value = rand((7, 4))
    res = []
    for m in (emu, nccl_mesh(shape)):
        x = sa.asarray(value, dims=DIMS, mesh=m, layout={"a": axes[0]})
        res.append([x[5:0:-2].numpy(), sa.concat([x, x[2:]], "a").numpy()])
    for u, v in zip(*res):
        np.testing.assert_array_equal(u, v)
    hung = fake_nccl.hangs()
    fake_nccl.reset()
    assert not hung
