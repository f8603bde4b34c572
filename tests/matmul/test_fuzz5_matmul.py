"""Regressions found by differential fuzzing of einsum, relayout and the fused kernels (round 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import shardarray as sa
from shardarray.ops.fused import attention as att

MESHES = [{"x": 1}, {"row": 2, "col": 2}, {"a": 4}, {"row": 2, "col": 2, "dep": 2}, {"row": 3, "col": 2}]


def _attention_reference(q, k, v, scale, g):
    """``(o, dq, dk, dv)`` of causal attention in float64 (the unfused formulas)."""
    s = np.einsum("bshd,bthd->bhst", q, k) * scale
    n = s.shape[-1]
    s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = np.einsum("bshd,bthd->bhst", g, v)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return (
        np.einsum("bhst,bthd->bshd", p, v),
        scale * np.einsum("bhst,bthd->bshd", ds, k),
        scale * np.einsum("bhst,bshd->bthd", ds, q),
        np.einsum("bhst,bshd->bthd", p, g),
    )


@pytest.mark.parametrize("shape", MESHES, ids=str)
def test_fused_attention_takes_the_value_dim_of_v(shape):
    # v's d_kv (5) differs from q's and k's (4): the output has v's, as the unfused path gives; it had q's sizes
    # over blocks of v's width, and the next einsum failed (or a later op read the blocks by the wrong size)
    mesh = sa.Mesh(shape)
    axis = next(iter(shape))
    rng = np.random.default_rng(0)
    b, s, h, dk, dv = 3, 5, 2, 4, 5
    Q, K, V = (rng.standard_normal((b, s, h, d)) for d in (dk, dk, dv))
    G = rng.standard_normal((b, s, h, dv))
    layout = {"batch": axis}
    q = sa.asarray(Q, dims=att.Q_DIMS, mesh=mesh, layout=layout)
    k = sa.asarray(K, dims=att.KV_DIMS, mesh=mesh, layout=layout)
    v = sa.asarray(V, dims=att.KV_DIMS, mesh=mesh, layout=layout)
    g = sa.asarray(G, dims=att.Q_DIMS, mesh=mesh)
    assert att.ready(q, k, v)
    o = att.causal_attention(q, k, v, 0.5)
    assert o.sizes == {"batch": b, "seq": s, "heads": h, "d_kv": dv} and o.layout == q.layout
    want = _attention_reference(Q, K, V, 0.5, G)
    np.testing.assert_allclose(o.numpy(), want[0], rtol=1e-12, atol=1e-12)
    _, grads = sa.value_and_grad(lambda p: (att.causal_attention(*p, 0.5) * g).sum())([q, k, v])
    for got, ref, x in zip(grads, want[1:], (q, k, v)):
        assert got.sizes == x.sizes and got.layout == x.layout
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("shape", MESHES, ids=str)
def test_attention_layer_with_a_wider_value_dim_matches_numpy(shape):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(1)
    b, s, d, h, dk, dv = 2, 3, 6, 2, 4, 5
    X = rng.standard_normal((b, s, d))
    W = {"wq": (d, h, dk), "wk": (d, h, dk), "wv": (d, h, dv), "wo": (h, dv, d)}
    W = {n: rng.standard_normal(sh) for n, sh in W.items()}
    dims = {"wq": ("d_model", "heads", "d_kv"), "wo": ("heads", "d_kv", "d_model")}
    params = {"l." + n: sa.asarray(w, dims=dims.get(n, dims["wq"]), mesh=mesh) for n, w in W.items()}
    x = sa.asarray(X, dims=("batch", "seq", "d_model"), mesh=mesh, layout={"batch": next(iter(shape))})
    q, k, v = (np.einsum("bsd,dhk->bshk", X, W[n]) for n in ("wq", "wk", "wv"))
    o = _attention_reference(q, k, v, 1 / math.sqrt(dk), np.zeros((b, s, h, dv)))[0]
    np.testing.assert_allclose(
        sa.nn.attention(x, params, "l.").numpy(), np.einsum("bshv,hvd->bsd", o, W["wo"]), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("field", ["batch", "heads"])
def test_fused_attention_is_not_ready_for_other_batch_or_heads_sizes(field):
    mesh = sa.Mesh({"row": 2, "col": 2})
    q = sa.ones(mesh, {"batch": 2, "seq": 3, "heads": 2, "d_kv": 4}, "float64", layout={"heads": "col"})
    k = q.rename({"seq": "kseq"})
    other = k.isel({field: slice(0, 1)})
    assert att.ready(q, k, k)
    assert not att.ready(q, other, k) and not att.ready(q, k, other) and not att.ready(q, other, other)


@pytest.mark.parametrize("value", [np.ones(3), 3.0, None, [1.0, 2.0]], ids=["ndarray", "float", "None", "list"])
def test_relayout_of_a_non_array_is_a_typed_error(value):
    with pytest.raises(sa.DTypeError, match="relayout: x must be a ShardArray"):
        sa.relayout(value, {})


def test_a_dim_only_one_operand_has_that_is_empty_gives_zeros_not_nan():
    """``contract2`` summed a dim only one operand has before multiplying: an empty one gave 0 * NaN = NaN where
    np.einsum has no terms (0), on one device and on the devices holding empty blocks of an uneven split."""
    one = sa.Mesh({"d": 1})
    x = sa.asarray(np.full((1, 2), np.nan), dims=("i", "j"), mesh=one)
    y = sa.asarray(np.zeros((1, 0, 2)), dims=("i", "k", "j"), mesh=one)
    np.testing.assert_array_equal(sa.einsum("i j, i k j -> i", x, y).numpy(), [0.0])
    six = sa.Mesh({"k": 6})
    x = sa.asarray(np.array([2.0]), dims=("k",), mesh=six, layout={"k": "k"})
    y = sa.asarray(np.array([np.inf, 1.0]), dims=("n",), mesh=six)
    assert sa.einsum("k, n ->", x, y).numpy() == np.inf


@pytest.mark.parametrize("equation", ["a b -> a", "a b, b, a ->", "a b -> b a"])
def test_bfloat16_einsum_of_one_or_three_operands(equation):
    """One or three bfloat16 operands go through opt-einsum: on CuPy (``cupy.einsum`` has no bfloat16 loops, the
    strict stand-in raised "invalid data type for einsum") they are computed in float32 and rounded once."""
    import ml_dtypes

    mesh = sa.Mesh({"row": 2, "col": 2})
    h = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    ops = {"a b": (h, ("a", "b")), "b": (np.ones(4, np.float32), ("b",)), "a": (np.ones(3, np.float32), ("a",))}
    terms = [t.strip() for t in equation.split("->")[0].split(",")]
    arrays = [sa.asarray(ops[t][0].astype(ml_dtypes.bfloat16), dims=ops[t][1], mesh=mesh) for t in terms]
    out = sa.einsum(equation, *arrays)
    want = np.einsum(equation.replace(" ", ""), *[ops[t][0] for t in terms])
    assert out.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(out.numpy().astype(np.float32), want, rtol=1e-2)
