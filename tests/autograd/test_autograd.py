"""Every VJP against float64 finite differences on random meshes, layouts and uneven sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from gradcheck import check_grad
from helpers import layouts, meshes, rand, sizes_strategy

SETTINGS = settings(max_examples=15, deadline=None)


@st.composite
def two_arrays(draw, x_dims=("a", "b"), y_dims=("b", "c"), min_size=1, max_size=5):
    """Two float64 arrays with random (uneven) sizes and layouts on one random mesh."""
    mesh = draw(meshes())
    dims = tuple(dict.fromkeys(x_dims + y_dims))
    shape = dict(zip(dims, draw(sizes_strategy(dims, min_size, max_size))))
    seed = draw(st.integers(0, 1000))
    x = sa.asarray(rand([shape[d] for d in x_dims], seed), dims=x_dims, mesh=mesh, layout=draw(layouts(mesh, x_dims)))
    y = sa.asarray(rand([shape[d] for d in y_dims], seed + 1), dims=y_dims, mesh=mesh,
                   layout=draw(layouts(mesh, y_dims)))
    return mesh, x, y, seed


def weighted(out, seed):
    """A generic scalar of ``out``: sum(out * r) for a fixed random r (same dims)."""
    r = sa.asarray(rand(out.shape, seed + 7), dims=out.dims, mesh=out.mesh)
    return (out * r).sum()


BINARY = {
    "add": lambda x, y: x + y,
    "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y,
    "divide": lambda x, y: x / (y * y + 1.0),
    "power": lambda x, y: (x * x + 1.0) ** y,
    "maximum": lambda x, y: sa.maximum(x, y),
    "minimum": lambda x, y: sa.minimum(x, y),
    "where": lambda x, y: sa.where(x > 0, x, y),
    "scalars": lambda x, y: 2.0 - x * 3.0 / 4.0 + 1.5 ** y + (y ** 2) / 2.0 - (-x),
}


@pytest.mark.parametrize("name", list(BINARY))
@given(case=two_arrays())
@SETTINGS
def test_binary_vjp_broadcasting_by_name(name, case):
    mesh, x, y, seed = case
    op = BINARY[name]
    # the out has dims (a, b, c): x broadcasts over c and y over a; the gradient sums them back
    check_grad(lambda p: weighted(op(p["x"], p["y"]), seed), {"x": x, "y": y})


UNARY = {
    "exp": lambda x: sa.exp(x),
    "log": lambda x: sa.log(x * x + 0.5),
    "tanh": sa.tanh,
    "sqrt": lambda x: sa.sqrt(x * x + 0.5),
    "relu": sa.relu,
    "gelu": sa.gelu,
    "negative": lambda x: -x,
    "softmax": lambda x: sa.softmax(x, "b"),
    "softmax2": lambda x: sa.softmax(x, ("a", "b")),
    "logsumexp": lambda x: sa.logsumexp(x, "a"),
    "sum": lambda x: x.sum("b") * x.sum("a"),
    "mean": lambda x: x.mean() * x,
    "max": lambda x: x.max("b") * 1.5,
    "min": lambda x: x.min(("a", "b")),
    "transpose": lambda x: x.transpose("b", "a") * x.rename({"a": "a2"}).sum("a2"),
    "astype": lambda x: (x.astype("float32").astype("float64")) * 0 + x.astype("float64"),
    "broadcast_to": lambda x: sa.broadcast_to(x, {"c": 3, "a": x.sizes["a"], "b": x.sizes["b"]}),
}


@pytest.mark.parametrize("name", list(UNARY))
@given(case=two_arrays())
@SETTINGS
def test_unary_and_reduction_vjp(name, case):
    mesh, x, y, seed = case
    check_grad(lambda p: weighted(UNARY[name](p), seed), x)


@given(case=two_arrays(), target=st.data())
@SETTINGS
def test_relayout_vjp_is_the_inverse_relayout(case, target):
    mesh, x, y, seed = case
    lay = target.draw(layouts(mesh, x.dims))
    check_grad(lambda p: weighted(p.relayout(lay) * p.relayout(lay), seed), x)


EINSUMS = [
    "a b, b c -> a c",
    "a b, b c -> c a",
    "a b, b c -> a b c",
    "a b, b c ->",
    "a b, b c -> b",
    "a b, b c -> a",    # c only in y and summed: its gradient is broadcast back
]


@pytest.mark.parametrize("eq", EINSUMS)
@given(case=two_arrays())
@SETTINGS
def test_einsum_vjp_is_an_einsum(eq, case):
    mesh, x, y, seed = case
    check_grad(lambda p: weighted(sa.einsum(eq, p["x"], p["y"]), seed), {"x": x, "y": y})


@given(case=two_arrays(x_dims=("a", "b"), y_dims=("b", "c")), data=st.data())
@SETTINGS
def test_pending_sums_flow_both_ways(case, data):
    """Contracting split dims leaves pending sums; linear ops keep them; gradients are still exact."""
    mesh, x, y, seed = case
    lay = data.draw(layouts(mesh, ("a", "b")))

    def fn(p):
        h = sa.einsum("a b, b c -> a c", p["x"], p["y"])      # pending where b is split
        h = 2.0 * h - h * 0.5                                 # stays pending
        h = sa.einsum("a c, b c -> a b", h, p["y"])           # pending operand in an einsum
        return weighted(sa.tanh(h.resolve()) + h.relayout(lay).sum("b"), seed)

    check_grad(fn, {"x": x, "y": y})


@given(case=two_arrays(x_dims=("vocab", "d"), y_dims=("batch", "seq"), max_size=6), data=st.data())
@SETTINGS
def test_take_vjp_scatters_into_the_table(case, data):
    mesh, table, other, seed = case
    n = table.sizes["vocab"]
    ids_np = np.random.default_rng(seed).integers(0, n, other.shape)
    ids = sa.asarray(ids_np, dims=other.dims, mesh=mesh, layout=data.draw(layouts(mesh, other.dims)))
    got = sa.take(table, ids, "vocab")
    assert got.dims == ("batch", "seq", "d")
    np.testing.assert_allclose(got.numpy(), table.numpy()[ids_np], rtol=1e-12)
    grads = check_grad(lambda t: weighted(sa.take(t, ids, "vocab"), seed), table)
    r = rand(got.shape, seed + 7)
    want = np.zeros(table.shape)
    np.add.at(want, ids_np, r)
    np.testing.assert_allclose(grads.numpy(), want, rtol=1e-12, atol=1e-12)


@given(case=two_arrays(x_dims=("b", "v"), y_dims=("b",), min_size=1, max_size=6), data=st.data())
@SETTINGS
def test_take_along_shared_dims_picks_target_logits(case, data):
    """Shared dims match elementwise: cross-entropy's target logit without gathering the vocab."""
    mesh, logits, other, seed = case
    ids_np = np.random.default_rng(seed).integers(0, logits.sizes["v"], other.shape)
    ids = sa.asarray(ids_np, dims=("b",), mesh=mesh, layout=data.draw(layouts(mesh, ("b",))))
    got = sa.take(logits, ids, "v")
    np.testing.assert_allclose(got.numpy(), logits.numpy()[np.arange(len(ids_np)), ids_np], rtol=1e-12)
    check_grad(lambda x: (sa.logsumexp(x, "v") - sa.take(x, ids, "v")).mean(), logits)


def test_unused_param_gets_zeros_and_tree_structure_is_kept():
    mesh = sa.Mesh({"row": 2, "col": 2})
    w = sa.random.normal(mesh, {"a": 4, "b": 3}, layout={"a": "row"}, dtype="float64")
    u = sa.random.normal(mesh, {"c": 5}, layout={"c": "col"}, seed=1, dtype="float64")
    params = {"w": w, "more": [u, (w,)]}
    loss, grads = sa.value_and_grad(lambda p: (p["w"] * p["more"][1][0]).sum())(params)
    assert set(grads) == {"w", "more"} and isinstance(grads["more"], list) and isinstance(grads["more"][1], tuple)
    np.testing.assert_array_equal(grads["more"][0].numpy(), np.zeros(5))
    assert grads["more"][0].layout == {"c": ("col",)}
    np.testing.assert_allclose(grads["w"].numpy(), w.numpy())
    np.testing.assert_allclose(grads["more"][1][0].numpy(), w.numpy())


def test_has_aux_grad_and_stop_gradient():
    mesh = sa.Mesh({"all": 4})
    w = sa.asarray(np.array([1.0, 2.0, 3.0]), dims=("a",), mesh=mesh, layout={"a": "all"})
    (loss, aux), g = sa.value_and_grad(lambda w: ((w * w).sum(), w.max()), has_aux=True)(w)
    assert float(loss) == 14.0 and float(aux) == 3.0
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0, 6.0])
    g2, aux2 = sa.grad(lambda w: ((w * sa.stop_gradient(w)).sum(), 1), has_aux=True)(w)
    np.testing.assert_allclose(g2.numpy(), [1.0, 2.0, 3.0])
    assert aux2 == 1


def test_misuse_is_explained():
    mesh = sa.Mesh({"all": 4})
    w = sa.ones(mesh, {"a": 4}, dtype="float64")
    with pytest.raises(sa.DimensionError, match="scalar"):
        sa.value_and_grad(lambda w: w * 2)(w)
    with pytest.raises(sa.DTypeError, match="int64"):
        sa.value_and_grad(lambda w: w.sum())(sa.ones(mesh, {"a": 4}, dtype="int64"))
    with pytest.raises(sa.DTypeError, match="str"):
        sa.value_and_grad(lambda w: w["x"].sum())({"x": w, "name": "hello"})
    with pytest.raises(sa.ShardArrayError, match="cannot run inside value_and_grad"):
        sa.value_and_grad(lambda w: sa.value_and_grad(lambda v: v.sum())(w)[0])(w)
    with pytest.raises(sa.DTypeError, match="has_aux"):
        sa.value_and_grad(lambda w: (w.sum(), 1))(w)
    ids = sa.asarray(np.array([0, 5]), dims=("b",), mesh=mesh)
    with pytest.raises(sa.DimensionError, match=r"\[0, 4\).*0 to 5"):
        sa.take(w, ids, "a")
    with pytest.raises(sa.DTypeError, match="integer"):
        sa.take(w, w.rename({"a": "b"}), "a")


@given(case=two_arrays(x_dims=("batch", "d_model"), y_dims=("d_model",), min_size=1, max_size=6))
@SETTINGS
def test_layer_norm_forward_and_vjp(case):
    """The fused layer norm (one op, one VJP) over a split and uneven d_model."""
    mesh, x, gain, seed = case
    bias = sa.asarray(rand(gain.shape, seed + 3), dims=gain.dims, mesh=mesh, layout=gain.layout)
    a, w, b = x.numpy(), gain.numpy(), bias.numpy()
    xc = a - a.mean(1, keepdims=True)
    want = xc / np.sqrt((xc**2).mean(1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(sa.nn.layer_norm(x, gain, bias).numpy(), want, rtol=1e-9, atol=1e-12)
    check_grad(lambda p: weighted(sa.nn.layer_norm(p["x"] * 1.0, p["g"], p["b"]), seed),
               {"x": x, "g": gain, "b": bias}, rtol=1e-5)


@given(case=two_arrays(x_dims=("a", "b"), y_dims=("b", "c"), max_size=5), data=st.data())
@SETTINGS
def test_new_public_ops_against_numpy(case, data):
    """equal / not_equal, broadcast_to and one_hot against NumPy on random layouts."""
    mesh, x, y, seed = case
    a, b = x.numpy(), y.numpy()
    np.testing.assert_array_equal((x == x).numpy(), np.ones(a.shape, bool))
    np.testing.assert_array_equal(sa.equal(x, y).numpy(), a[:, :, None] == b[None])
    np.testing.assert_array_equal((x != y).numpy(), a[:, :, None] != b[None])
    sizes = {"c": 3, **x.sizes}
    lay = data.draw(layouts(mesh, tuple(sizes)))
    got = sa.broadcast_to(x, sizes, layout=lay)
    assert got.dims == ("c", "a", "b") and got.layout == lay
    np.testing.assert_array_equal(got.numpy(), np.broadcast_to(a, (3, *a.shape)))
    ids_np = np.random.default_rng(seed).integers(0, 4, a.shape)
    ids = sa.asarray(ids_np, dims=x.dims, mesh=mesh, layout=x.layout)
    lay = data.draw(layouts(mesh, ("a", "b", "v")))
    hot = sa.one_hot(ids, "v", 4, dtype="float64", layout=lay)
    assert hot.layout == lay and hot.dtype == np.float64
    np.testing.assert_array_equal(hot.numpy(), np.eye(4)[ids_np])


def test_new_public_ops_explain_bad_input():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"a": 4, "b": 3}, layout={"a": "row"})
    with pytest.raises(sa.DimensionError, match=r"'b' \(size 3\)"):
        sa.broadcast_to(x, {"a": 4, "b": 5})
    with pytest.raises(sa.DimensionError, match="'b'"):
        sa.broadcast_to(x, {"a": 4, "c": 3})
    with pytest.raises(sa.DimensionError, match="dict"):
        sa.broadcast_to(x, [4, 3])
    with pytest.raises(sa.LayoutError, match="'row'"):
        sa.broadcast_to(x, {"c": 2, "a": 4, "b": 3}, layout={"c": "row", "a": "row"})
    ids = sa.asarray(np.array([0, 1]), dims=("a",), mesh=mesh)
    with pytest.raises(sa.DimensionError, match="'a' is already a dim"):
        sa.one_hot(ids, "a", 3)
    with pytest.raises(sa.DTypeError, match=r"\['b'\] is a str"):
        sa.tree.tree_flatten({"w": x, "b": "no"})
    with pytest.raises(sa.DTypeError, match="tree 1 has 1 arrays but the first has 2"):
        sa.tree.tree_map(lambda p, q: p, [x, x], [x])


def test_tree_roundtrip_keeps_structure():
    mesh = sa.Mesh({"all": 4})
    x = sa.ones(mesh, {"a": 4}, layout={"a": "all"})
    tree = {"w": x, "more": [x, (x, x)]}
    leaves, treedef = sa.tree.tree_flatten(tree)
    assert len(leaves) == 4
    back = sa.tree.tree_unflatten(treedef, [i * 1.0 for i in range(4)])
    assert back == {"w": 0.0, "more": [1.0, (2.0, 3.0)]}
    doubled = sa.tree.tree_map(lambda p: p * 2, tree)
    np.testing.assert_array_equal(doubled["more"][1][1].numpy(), np.full(4, 2.0))


def test_a_cotangent_takes_its_primals_dtype(monkeypatch):
    """A VJP that returns a wider cotangent (float64 for a float32 input) is cast back on the tape, as in JAX:
    the op before it gets a cotangent of its own output's dtype, so the rest of the backward pass keeps it."""
    from shardarray.core import tape as tape_mod

    @tape_mod.differentiable("test_widening_identity")
    def widening_identity(x):
        return x + 0.0

    @tape_mod.differentiable("test_recording_identity")
    def recording_identity(x):
        return x + 0.0

    seen = []
    monkeypatch.setitem(tape_mod.VJPS, "test_widening_identity", lambda ctx, g: [g.astype("float64")])
    monkeypatch.setitem(tape_mod.VJPS, "test_recording_identity",
                        lambda ctx, g: seen.append((g.dtype, {s.dtype for s in g.shards})) or [g])
    mesh = sa.Mesh({"row": 2, "col": 2})
    for dtype in ("float32", "bfloat16", "float16"):
        seen.clear()
        x = sa.random.normal(mesh, {"a": 5, "b": 3}, seed=0, layout={"a": "row"}).astype(dtype)
        g = sa.grad(lambda p: (widening_identity(recording_identity(p)) * 2.0).astype("float32").sum())(x)
        assert seen == [(x.dtype, {x.dtype})], (dtype, seen)
        assert g.dtype == x.dtype
        np.testing.assert_array_equal(g.numpy().astype(np.float64), np.full((5, 3), 2.0))
