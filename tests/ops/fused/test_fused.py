"""The fused NumPy paths (issue 18 item 2): layer norm, cross-entropy, causal attention, the embedding gradient.

Each is checked against NumPy on the gathered value, against the unfused
array path (the fused condition patched off) on split layouts, its VJP
against float64 central differences, and its communication via the comm log.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad
from helpers import HYPOTHESIS_SHAPES, rand
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.nn import layers
from shardarray.ops.fused import attention as att
from shardarray.ops.fused import numpy_paths as fused_numpy
from shardarray.ops.indexing.take import _scatter_rows

FAST = settings(max_examples=12, deadline=None)


def _layout(mesh: sa.Mesh, dims: tuple[str, ...], data) -> dict:
    """Each mesh axis on one of ``dims`` or none (drawn)."""
    out: dict[str, tuple[str, ...]] = {}
    for a in mesh.axis_names:
        d = data.draw(st.sampled_from([None, *dims]))
        if d is not None:
            out[d] = out.get(d, ()) + (a,)
    return out


def _np_layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


# ------------------------------------------------------------------ layer norm
@FAST
@given(st.sampled_from(HYPOTHESIS_SHAPES), st.integers(0, 7), st.integers(1, 6), st.data())
def test_layer_norm_matches_numpy_and_unfused(shape, nb, nd, data):
    mesh = sa.Mesh(shape)
    layout = _layout(mesh, ("b", "d_model"), data)
    xs = rand((nb, nd), 1)
    w, bias = rand((nd,), 2), rand((nd,), 3)
    x = sa.asarray(xs, dims=("b", "d_model"), mesh=mesh, layout=layout)
    gw = sa.asarray(w, dims=("d_model",), mesh=mesh)
    gb = sa.asarray(bias, dims=("d_model",), mesh=mesh)
    fused_taken = layers._fused_layer_norm(x, gw, gb, "d_model")
    assert fused_taken == (not layout.get("d_model"))
    with sa.comm_log() as log:
        y = sa.nn.layer_norm(x, gw, gb)
        got = y.numpy()
    np.testing.assert_allclose(got, _np_layer_norm(xs, w, bias), rtol=1e-10, atol=1e-10)
    if fused_taken:
        assert all(r.op != "allreduce" for r in log), log.summary()


def test_layer_norm_grad_fused_equals_unfused(monkeypatch):
    mesh = sa.Mesh({"row": 2, "col": 2})
    params = {
        "x": sa.asarray(rand((5, 3, 6), 4), dims=("b", "s", "d_model"), mesh=mesh, layout={"b": "row", "s": "col"}),
        "w": sa.asarray(rand((6,), 5), dims=("d_model",), mesh=mesh),
        "c": sa.asarray(rand((6,), 6), dims=("d_model",), mesh=mesh),
    }
    probe = sa.asarray(rand((5, 3, 6), 7), dims=("b", "s", "d_model"), mesh=mesh)

    def loss(p):
        return (sa.nn.layer_norm(p["x"], p["w"], p["c"]) * probe).sum()

    assert layers._fused_layer_norm(params["x"], params["w"], params["c"], "d_model")
    grads = check_grad(loss, params)
    monkeypatch.setattr(layers, "_fused_layer_norm", lambda *a: False)
    ref = sa.grad(loss)(params)
    for k in params:
        np.testing.assert_allclose(grads[k].numpy(), ref[k].numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}])
def test_layer_norm_of_one_row(shape):
    """A 1-D input (a block of one row: NumPy's reductions give scalars there) forward and backward."""
    mesh = sa.Mesh(shape)
    params = {n: sa.asarray(rand((6,), k), dims=("d_model",), mesh=mesh) for n, k in (("x", 1), ("w", 2), ("c", 3))}
    probe = sa.asarray(rand((6,), 4), dims=("d_model",), mesh=mesh)
    xs, w, bias = (params[n].numpy() for n in ("x", "w", "c"))
    assert layers._fused_layer_norm(params["x"], params["w"], params["c"], "d_model")
    y = sa.nn.layer_norm(params["x"], params["w"], params["c"])
    np.testing.assert_allclose(y.numpy(), _np_layer_norm(xs, w, bias), rtol=1e-10, atol=1e-10)
    check_grad(lambda p: (sa.nn.layer_norm(p["x"], p["w"], p["c"]) * probe).sum(), params)


def test_layer_norm_rows_float32_matches_float64():
    x = rand((4, 9, 32), 8)
    w, b = rand((32,), 9), rand((32,), 10)
    y32, _, _ = fused_numpy.layer_norm_rows(np, x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), 1e-5)
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32, _np_layer_norm(x, w, b), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ cross-entropy
def _np_xent(logits, t):
    m = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(-1)) + m[..., 0]
    return lse - np.take_along_axis(logits, t[..., None], -1)[..., 0]


@FAST
@given(st.sampled_from(HYPOTHESIS_SHAPES), st.integers(0, 6), st.integers(1, 7), st.data())
def test_cross_entropy_matches_numpy(shape, nb, nv, data):
    mesh = sa.Mesh(shape)
    layout = _layout(mesh, ("b", "vocab"), data)
    xs = rand((nb, nv), 11)
    ts = np.random.default_rng(12).integers(0, nv, nb)
    logits = sa.asarray(xs, dims=("b", "vocab"), mesh=mesh, layout=layout)
    targets = sa.asarray(ts, dims=("b",), mesh=mesh, layout={"b": layout["b"]} if "b" in layout else {})
    fused_taken = layers._fused_cross_entropy(logits, targets, "vocab")
    assert fused_taken == (not layout.get("vocab"))
    with sa.comm_log() as log:
        got = sa.nn.cross_entropy(logits, targets).numpy()
    np.testing.assert_allclose(got, _np_xent(xs, ts), rtol=1e-10, atol=1e-10)
    if fused_taken:
        assert len(log) == 0 or all(r.op != "allreduce" for r in log), log.summary()


@pytest.mark.parametrize("layout", [{"b": "row"}, {"b": ("row", "col")}, {"b": "row", "vocab": "col"}])
def test_cross_entropy_grad_fused_equals_unfused(monkeypatch, layout):
    mesh = sa.Mesh({"row": 2, "col": 2})
    ts = sa.asarray(np.array([0, 3, 4, 1, 1]), dims=("b",), mesh=mesh, layout={"b": layout["b"]})
    params = {"x": sa.asarray(rand((5, 5), 13), dims=("b", "vocab"), mesh=mesh, layout=layout)}
    w = sa.asarray(rand((5,), 14), dims=("b",), mesh=mesh)

    def loss(p):
        return (sa.nn.cross_entropy(p["x"], ts) * w).sum()

    grads = check_grad(loss, params)
    monkeypatch.setattr(layers, "_fused_cross_entropy", lambda *a: False)
    ref = sa.grad(loss)(params)
    np.testing.assert_allclose(grads["x"].numpy(), ref["x"].numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_rows_non_finite_like_scipy():
    x = np.array([[-np.inf, -np.inf, 0.0], [1e300, 1.0, 2.0]])
    loss, lse = fused_numpy.cross_entropy_rows(np, x, np.array([2, 0]))
    np.testing.assert_allclose(loss, [0.0, 0.0])
    np.testing.assert_allclose(lse, [0.0, 1e300])


# ------------------------------------------------------------------ causal attention
def _np_attention(q, k, v, scale):
    s = np.einsum("bshd,bthd->bhst", q, k) * scale
    n = s.shape[-1]
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhst,bthd->bshd", p, v)


def _qkv(mesh, layout, sizes, seed):
    b, s, h, d = sizes
    q = sa.asarray(rand((b, s, h, d), seed), dims=att.Q_DIMS, mesh=mesh, layout=layout)
    k, v = (sa.asarray(rand((b, s, h, d), seed + i), dims=att.KV_DIMS, mesh=mesh, layout=layout) for i in (1, 2))
    return q, k, v


@FAST
@given(st.sampled_from(HYPOTHESIS_SHAPES), st.tuples(st.integers(0, 4), st.integers(1, 5), st.integers(0, 4),
                                                     st.integers(1, 3)), st.data())
def test_attention_matches_numpy(shape, sizes, data):
    mesh = sa.Mesh(shape)
    layout = _layout(mesh, ("batch", "heads"), data)
    q, k, v = _qkv(mesh, layout, sizes, 20)
    assert att.ready(q, k, v)
    with sa.comm_log() as log:
        got = att.causal_attention(q, k, v, 0.7).numpy()
    assert len(log) == 0, log.summary()
    np.testing.assert_allclose(got, _np_attention(q.numpy(), k.numpy(), v.numpy(), 0.7), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layout", [{}, {"batch": "row", "heads": "col"}, {"heads": ("row", "col")}])
def test_attention_grad(layout):
    mesh = sa.Mesh({"row": 2, "col": 2})
    q, k, v = _qkv(mesh, layout, (3, 4, 4, 2), 30)
    probe = sa.asarray(rand((3, 4, 4, 2), 33), dims=att.Q_DIMS, mesh=mesh)

    def loss(p):
        return (att.causal_attention(p["q"], p["k"], p["v"], 0.6) * probe).sum()

    check_grad(loss, {"q": q, "k": k, "v": v})


def test_attention_layer_fused_equals_unfused(monkeypatch):
    """The whole attention layer (projections included) on the mesh2d layout: values and gradients."""
    mesh = sa.Mesh({"rows": 2, "cols": 2})
    d, h, dk = 6, 4, 3
    x = sa.asarray(rand((4, 5, d), 40), dims=("batch", "seq", "d_model"), mesh=mesh, layout={"batch": "rows"})
    params = {f"a.{n}": sa.asarray(rand((d, h, dk), 41 + i) / math.sqrt(d), dims=("d_model", "heads", "d_kv"),
                                   mesh=mesh, layout={"heads": "cols"}) for i, n in enumerate(("wq", "wk", "wv"))}
    params["a.wo"] = sa.asarray(rand((h, dk, d), 45), dims=("heads", "d_kv", "d_model"), mesh=mesh,
                                layout={"heads": "cols"})
    probe = sa.asarray(rand((4, 5, d), 46), dims=("batch", "seq", "d_model"), mesh=mesh)

    def loss(p):
        return (layers.attention(x, p, "a.") * probe).sum()

    calls = []
    real = att.causal_attention
    monkeypatch.setattr(att, "causal_attention", lambda *a: calls.append(1) or real(*a))
    val, grads = sa.value_and_grad(loss)(params)
    assert calls, "the fused attention was not taken on the mesh2d layout"
    monkeypatch.setattr(att, "ready", lambda *a: False)
    val2, ref = sa.value_and_grad(loss)(params)
    np.testing.assert_allclose(float(val), float(val2), rtol=1e-12)
    for n in params:
        np.testing.assert_allclose(grads[n].numpy(), ref[n].numpy(), rtol=1e-9, atol=1e-12)


def test_attention_not_ready_when_seq_split():
    mesh = sa.Mesh({"row": 2, "col": 2})
    q, k, v = _qkv(mesh, {"d_kv": "col"}, (2, 3, 2, 4), 50)
    assert not att.ready(q, k, v)


# ------------------------------------------------------------------ embedding gradient
@pytest.mark.parametrize("s,o,n,r", [(1, 50, 7, 3), (3, 20, 4, 2), (2, 0, 5, 3), (1, 9, 1, 0)])
def test_scatter_rows_matches_add_at(s, o, n, r):
    rng = np.random.default_rng(60)
    ids = rng.integers(0, n, (s, o))
    vals = rng.standard_normal((s, o, r))
    ref = np.zeros((s, n, r))
    for i in range(s):
        np.add.at(ref[i], ids[i], vals[i])
    got = _scatter_rows(np, sa.Mesh({"d": 1}).backend, ids, vals, n)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@FAST
@given(st.sampled_from(HYPOTHESIS_SHAPES), st.integers(1, 6), st.integers(0, 9), st.data())
def test_embedding_grad_matches_numpy(shape, nv, nt, data):
    mesh = sa.Mesh(shape)
    layout = _layout(mesh, ("vocab", "d"), data)
    table = sa.asarray(rand((nv, 3), 70), dims=("vocab", "d"), mesh=mesh, layout=layout)
    ids_np = np.random.default_rng(71).integers(0, nv, nt)
    ids = sa.asarray(ids_np, dims=("t",), mesh=mesh)
    probe = rand((nt, 3), 72)
    w = sa.asarray(probe, dims=("t", "d"), mesh=mesh)
    g = sa.grad(lambda tb: (sa.take(tb, ids, "vocab") * w).sum())(table)
    ref = np.zeros((nv, 3))
    np.add.at(ref, ids_np, probe)
    np.testing.assert_allclose(g.numpy(), ref, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ Adam
@pytest.mark.parametrize("dtype,wd", [("float32", 0.0), ("float64", 0.1)])
def test_adam_fused_equals_array_path(monkeypatch, dtype, wd):
    from shardarray.optim import adam as adam_mod

    mesh = sa.Mesh({"row": 2, "col": 2})
    params = {"w": sa.asarray(rand((5, 3), 80, dtype), dims=("a", "b"), mesh=mesh, layout={"a": "row"}),
              "e": sa.asarray(rand((0, 2), 81, dtype), dims=("c", "b"), mesh=mesh, layout={"c": "col"})}
    grads = {"w": sa.asarray(rand((5, 3), 82, dtype), dims=("a", "b"), mesh=mesh, layout={"b": "col"}),
             "e": sa.asarray(rand((0, 2), 83, dtype), dims=("c", "b"), mesh=mesh)}
    opt = sa.optim.Adam(lr=1e-2, weight_decay=wd)
    results = []
    for fused_on in (True, False):
        if not fused_on:
            monkeypatch.setattr(adam_mod, "_fused", lambda *a: False)
        else:
            assert adam_mod._fused(params["w"], *(opt.init(params)[k]["w"] for k in ("m", "v")))
        p, state = params, opt.init(params)
        for _ in range(3):
            p, state = opt.update(p, grads, state)
        results.append((p, state))
    (p1, s1), (p2, s2) = results

    def same(a, b):
        if mesh.backend.name == "numpy":  # the fused NumPy path does the array path's operations in its order
            np.testing.assert_array_equal(a, b)
        else:  # a CUDA kernel evaluates (and on a GPU contracts to FMAs) in its own order: a few ulps apart
            np.testing.assert_array_max_ulp(a, b, maxulp=4)

    for k, p0 in params.items():
        assert p1[k].layout == p0.layout and p1[k].dtype == p0.dtype
        same(p1[k].numpy(), p2[k].numpy())
        same(s1["m"][k].numpy(), s2["m"][k].numpy())
        same(s1["v"][k].numpy(), s2["v"][k].numpy())


def test_profile_records_the_array_path():
    """Inside this thread's sa.profile() the fused NumPy paths step aside (sa.plan models the array path)."""
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="numpy")  # the fused NumPy paths take NumPy shards only
    x = sa.asarray(rand((4, 6), 90), dims=("b", "d_model"), mesh=mesh, layout={"b": "row"})
    assert fused_numpy.is_numpy(x)
    with sa.profile() as prof:
        assert not fused_numpy.is_numpy(x)
        sa.nn.layer_norm(x, sa.ones(mesh, {"d_model": 6}, "float64"), sa.zeros(mesh, {"d_model": 6}, "float64"))
    assert "layer_norm" in prof.ops
    assert fused_numpy.is_numpy(x)
