"""Every op against NumPy on the gathered value: random meshes, layouts and (uneven) sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from helpers import MESH_SHAPES, host, layouts, meshes, rand, sizes_strategy

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def array_case(draw, dims=("a", "b", "c"), min_size=0, max_size=7):
    mesh = draw(meshes())
    shape = draw(sizes_strategy(dims, min_size, max_size))
    lay = draw(layouts(mesh, dims))
    seed = draw(st.integers(0, 1000))
    return mesh, dims, shape, lay, seed


def sharded(case, scale=1.0):
    """The NumPy value of a drawn case and the same value as a ShardArray."""
    mesh, dims, shape, lay, seed = case
    a = rand(shape, seed) * scale
    return a, sa.asarray(a, dims=dims, mesh=mesh, layout=lay)


@given(array_case())
@SETTINGS
def test_asarray_roundtrip_and_blocks(case):
    mesh, dims, shape, lay, seed = case
    a, x = sharded(case)
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(np.asarray(x), a)
    assert x.layout == lay
    # every device holds exactly its nested-ceil block
    for d in range(mesh.size):
        assert x.shards[d].shape == tuple(e - s for s, e in sa.layout.block_bounds(mesh, x.spec)[d])


@given(array_case(), st.data())
@SETTINGS
def test_relayout_any_to_any(case, data):
    mesh, dims, shape, lay, seed = case
    a, x = sharded(case)
    target = data.draw(layouts(mesh, dims))
    y = x.relayout(target)
    assert y.layout == target
    np.testing.assert_array_equal(y.numpy(), a)
    ref = sa.asarray(a, dims=dims, mesh=mesh, layout=target)
    for d in range(mesh.size):
        np.testing.assert_array_equal(host(y.shards[d]), host(ref.shards[d]))


@given(array_case(dims=("a", "b")), st.data())
@SETTINGS
def test_binary_broadcast_by_name(case, data):
    mesh, dims, shape, lay, seed = case
    a, x = sharded(case)
    # y has dims (c, a): a is shared, b missing (broadcasts), c new
    c = data.draw(st.integers(0, 5))
    b = rand((c, shape[0]), seed + 1)
    y = sa.asarray(b, dims=("c", "a"), mesh=mesh, layout=data.draw(layouts(mesh, ("c", "a"))))
    expect_x = a[:, :, None]              # result dims (a, b, c)
    expect_y = b.T[:, None, :]
    for op in (np.add, np.subtract, np.multiply, np.maximum, np.minimum):
        name = {np.add: "__add__", np.subtract: "__sub__", np.multiply: "__mul__"}.get(op)
        got = getattr(x, name)(y) if name else getattr(sa, op.__name__)(x, y)
        assert got.dims == ("a", "b", "c")
        np.testing.assert_allclose(got.numpy(), op(expect_x, expect_y), rtol=1e-12)
    got = x / (y * y + 1.0)
    np.testing.assert_allclose(got.numpy(), expect_x / (expect_y**2 + 1.0), rtol=1e-12)
    got = (x > y)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got.numpy(), expect_x > expect_y)


@given(array_case(dims=("a", "b")))
@SETTINGS
def test_scalars_unary_and_where(case):
    mesh, dims, shape, lay, seed = case
    a, x = sharded(case)
    close = lambda got, want: np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)  # noqa: E731
    close(x * 2.0, a * 2.0)
    close(3.0 - x, 3.0 - a)
    close(1.0 / (x * x + 1.0), 1.0 / (a * a + 1.0))
    close(x**2, a**2)
    close(2.0**x, 2.0**a)
    close(-x, -a)
    close(sa.exp(x), np.exp(a))
    close(sa.log(x * x + 1.0), np.log(a * a + 1.0))
    close(sa.tanh(x), np.tanh(a))
    close(sa.sqrt(x * x), np.abs(a))
    close(sa.relu(x), np.maximum(a, 0))
    g = 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3)))
    close(sa.gelu(x), g)
    close(sa.where(x > 0.5, x, -1.0), np.where(a > 0.5, a, -1.0))
    close(sa.maximum(x, 0.25), np.maximum(a, 0.25))


@given(array_case(), st.data())
@SETTINGS
def test_reductions(case, data):
    mesh, dims, shape, lay, seed = case
    a, x = sharded(case)
    red = data.draw(st.lists(st.sampled_from(dims), unique=True, max_size=3))
    axis = tuple(dims.index(d) for d in red)
    arg = red[0] if len(red) == 1 and data.draw(st.booleans()) else tuple(red)
    np.testing.assert_allclose(x.sum(arg).numpy(), a.sum(axis=axis), rtol=1e-10, atol=1e-12)
    if all(shape[i] > 0 for i in axis):
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(x.mean(arg).numpy(), a.mean(axis=axis), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(x.max(arg).numpy(), a.max(axis=axis))
        np.testing.assert_array_equal(sa.min(x, arg).numpy(), a.min(axis=axis))


def test_reduce_all_dims_gives_scalar():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((5, 3), 3)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    s = x.sum()
    assert s.dims == () and s.pending == ("row", "col")
    assert float(s) == pytest.approx(a.sum())
    assert x.max().item() == a.max()
    assert sa.mean(x).item() == pytest.approx(a.mean())


@given(array_case(min_size=1), st.data())
@SETTINGS
def test_softmax_logsumexp(case, data):
    mesh, dims, shape, lay, seed = case
    a, x = sharded(case, 30.0)
    d = data.draw(st.sampled_from(dims))
    i = dims.index(d)
    m = a.max(axis=i, keepdims=True)
    lse = np.log(np.exp(a - m).sum(axis=i, keepdims=True)) + m
    np.testing.assert_allclose(sa.logsumexp(x, d).numpy(), lse.squeeze(i), rtol=1e-10)
    np.testing.assert_allclose(sa.softmax(x, d).numpy(), np.exp(a - lse), rtol=1e-10, atol=1e-300)


def test_softmax_split_dim_uses_max_then_sum_allreduce():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((4, 10)), dims=("batch", "vocab"), mesh=mesh, layout={"batch": "row", "vocab": "col"})
    with sa.comm_log() as log:
        sa.softmax(x, "vocab")
    assert [(r.op, r.axes, r.elements) for r in log.records] == [
        ("allreduce", ("col",), 2),
        ("allreduce", ("col",), 2),
    ]


@st.composite
def einsum_case(draw):
    mesh = draw(meshes())
    names = ["i", "j", "k", "l"]
    size = {n: draw(st.integers(0, 6)) for n in names}
    n_ops = draw(st.integers(1, 3))
    ops = []
    for _ in range(n_ops):
        dims = tuple(draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=3)))
        ops.append(dims)
    all_dims = list(dict.fromkeys(d for o in ops for d in o))
    out = tuple(draw(st.lists(st.sampled_from(all_dims), unique=True, max_size=len(all_dims))))
    lays = [draw(layouts(mesh, o)) for o in ops]
    return mesh, size, ops, out, lays


@given(einsum_case(), st.booleans())
@settings(max_examples=60, deadline=None)
def test_einsum_against_numpy(case, spelled):
    mesh, size, ops, out, lays = case
    arrays = [rand(tuple(size[d] for d in o), seed=i) for i, o in enumerate(ops)]
    xs = [sa.asarray(a, dims=o, mesh=mesh, layout=lay) for a, o, lay in zip(arrays, ops, lays)]
    if spelled:
        eq = ", ".join(" ".join(o) for o in ops) + " -> " + " ".join(out)
        y = sa.einsum(eq, *xs)
    else:
        y = sa.einsum(*xs, out=out)
    assert y.dims == out
    np_eq = ",".join("".join(o) for o in ops) + "->" + "".join(out)
    np.testing.assert_allclose(y.numpy(), np.einsum(np_eq, *arrays), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", MESH_SHAPES)
def test_einsum_implicit_output_and_chain(shape):
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    a, b, c = rand((5, 7)), rand((7, 3), 1), rand((3, 6), 2)
    x = sa.asarray(a, dims=("m", "k"), mesh=mesh, layout={"k": axes[-1]})
    w = sa.asarray(b, dims=("k", "n"), mesh=mesh, layout={"n": axes[0]})
    v = sa.asarray(c, dims=("n", "p"), mesh=mesh)
    y = sa.einsum(x, w)          # shared k is contracted
    assert y.dims == ("m", "n")
    z = sa.einsum(y, v)          # a pending operand times an unpending one stays pending
    np.testing.assert_allclose(z.numpy(), a @ b @ c, rtol=1e-10)


def test_integer_token_ids():
    mesh = sa.Mesh({"row": 2, "col": 2})
    t = np.arange(24, dtype=np.int32).reshape(4, 6) % 7
    x = sa.asarray(t, dims=("batch", "seq"), mesh=mesh, layout={"batch": "row", "seq": "col"})
    assert x.dtype == np.int32
    np.testing.assert_array_equal((x + 1).numpy(), t + 1)
    np.testing.assert_array_equal(x.max("seq").numpy(), t.max(axis=1))
    np.testing.assert_array_equal(x.sum("seq").numpy(), t.sum(axis=1))
    np.testing.assert_array_equal(x.astype("float32").numpy(), t.astype(np.float32))


@given(array_case(dims=("a", "b", "c")), st.data())
@SETTINGS
def test_rename_transpose_astype(case, data):
    mesh, dims, shape, lay, seed = case
    a, x = sharded(case)
    perm = data.draw(st.permutations(dims))
    t = x.transpose(*perm)
    assert t.dims == tuple(perm)
    np.testing.assert_array_equal(t.numpy(), np.transpose(a, [dims.index(d) for d in perm]))
    np.testing.assert_array_equal(x.transpose().numpy(), a.T)
    r = x.rename({"a": "z"})
    assert r.dims == ("z", "b", "c") and r.layout == {("z" if k == "a" else k): v for k, v in lay.items()}
    np.testing.assert_array_equal(r.numpy(), a)
    f = x.astype("float32")
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.numpy(), a.astype(np.float32))


@given(array_case(dims=("a", "b"), min_size=1))
@SETTINGS
def test_creation(case):
    mesh, dims, shape, lay, _ = case
    sizes = dict(zip(dims, shape))
    np.testing.assert_array_equal(sa.zeros(mesh, sizes, layout=lay).numpy(), np.zeros(shape, np.float32))
    np.testing.assert_array_equal(sa.ones(mesh, sizes, dtype="float64", layout=lay).numpy(), np.ones(shape))
    f = sa.full(mesh, sizes, 3, layout=lay)
    assert f.dtype == np.asarray(3).dtype
    np.testing.assert_array_equal(f.numpy(), np.full(shape, 3))


def test_rules_restricted_per_tensor():
    mesh = sa.Mesh({"rows": 2, "cols": 2}, rules={"batch": "rows", "hidden": "cols"})
    x = sa.zeros(mesh, {"batch": 4, "io": 3})
    w = sa.zeros(mesh, {"io": 3, "hidden": 8})
    assert x.layout == {"batch": ("rows",)} and w.layout == {"hidden": ("cols",)}
    assert sa.einsum(x, w).layout == {"batch": ("rows",), "hidden": ("cols",)}
    # an explicit layout overrides the rules; dims left out are not split
    assert sa.zeros(mesh, {"batch": 4, "io": 3}, layout={"io": "cols"}).layout == {"io": ("cols",)}
