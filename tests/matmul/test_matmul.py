"""SUMMA and Tesseract: results, gradients, communication volumes, auto-selection and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from gradcheck import check_grad

SUMMA_MESHES = [{"row": 2, "col": 2}, {"row": 3, "col": 3}]
TESSERACT_MESHES = [
    {"row": 2, "col": 2, "dep": 1},
    {"row": 2, "col": 2, "dep": 2},
    {"row": 3, "col": 3, "dep": 2},
    {"row": 3, "col": 3, "dep": 3},
]
ALL = [("summa", s) for s in SUMMA_MESHES] + [("tesseract", s) for s in TESSERACT_MESHES]


def layouts(shape):
    m = ("dep", "row") if "dep" in shape else "row"
    return {"m": m, "k": "col"}, {"k": "row", "n": "col"}


def operands(shape, a=36, b=12, c=18, dtype="float64"):
    mesh = sa.Mesh(shape)
    la, lb = layouts(shape)
    x = sa.random.normal(mesh, {"m": a, "k": b}, layout=la, seed=1, dtype=dtype)
    w = sa.random.normal(mesh, {"k": b, "n": c}, layout=lb, seed=2, dtype=dtype)
    return mesh, x, w


@pytest.mark.parametrize("algorithm,shape", ALL, ids=lambda v: str(v))
def test_result_and_both_gradients_match_numpy(algorithm, shape):
    mesh, x, w = operands(shape)
    r = sa.random.normal(mesh, {"m": 36, "n": 18}, seed=3, dtype="float64")  # a different cotangent per row

    def loss(p):
        y = sa.einsum("m k, k n -> m n", p["x"], p["w"], algorithm=algorithm)
        return (y * r).sum()

    y = sa.einsum("m k, k n -> m n", x, w, algorithm=algorithm)
    X, W, R = x.numpy(), w.numpy(), r.numpy()
    np.testing.assert_allclose(y.numpy(), X @ W, rtol=1e-12)
    assert y.layout == {"m": x.layout["m"], "n": ("col",)} and not y.pending
    _, g = sa.value_and_grad(loss)({"x": x, "w": w})
    # dW sums over every row of X: each depth layer holds different rows, so this needs the allreduce over dep
    np.testing.assert_allclose(g["x"].numpy(), R @ W.T, rtol=1e-12)
    np.testing.assert_allclose(g["w"].numpy(), X.T @ R, rtol=1e-12)
    assert g["x"].layout == x.layout and g["w"].layout == w.layout
    assert not g["x"].pending and not g["w"].pending


@pytest.mark.parametrize("algorithm,shape", ALL, ids=lambda v: str(v))
def test_broadcast_and_reduce_volumes_match_the_formulas(algorithm, shape):
    a, b, c = 36, 12, 18
    mesh, x, w = operands(shape, a, b, c)
    q, d = shape["row"], shape.get("dep", 1)
    with sa.comm_log() as fwd:
        sa.einsum("m k, k n -> m n", x, w, algorithm=algorithm)
    assert {r.op for r in fwd} == {"broadcast"} and len(fwd) == 2 * q
    assert fwd.total() == a * b / (q * d) + b * c / q  # DESIGN.md: ab/(qd) + bc/q per device

    with sa.comm_log() as log:
        _, g = sa.value_and_grad(lambda p: sa.einsum("m k, k n -> m n", *p, algorithm=algorithm).sum())((x, w))
    ops = {}
    for r in log:
        ops.setdefault((r.op, r.axes), 0)
        ops[(r.op, r.axes)] += r.elements
    # forward ab/(qd) + bc/q broadcast; dA broadcasts B (bc/q) and reduces [a/qd, b/q] blocks; dB the mirror
    assert ops.pop(("broadcast", ("col",))) == 2 * a * b / (q * d)
    assert ops.pop(("broadcast", ("row",))) == 2 * b * c / q
    assert ops.pop(("reduce", ("col",))) == a * b / (q * d)
    assert ops.pop(("reduce", ("row",))) == b * c / q
    if d > 1:
        assert ops.pop(("allreduce", ("dep",))) == b * c / q**2  # dB over depth
    ops.pop(("allreduce", tuple(shape)), None)  # the .sum() of the loss
    assert not ops, ops


def test_depth_layers_see_different_data_and_db_is_summed_over_them():
    # the same B in each layer, disjoint rows of A: dB is right only with the allreduce over dep
    mesh, x, w = operands({"row": 2, "col": 2, "dep": 2}, a=8, b=4, c=6)
    X = np.zeros((8, 4))
    X[4:] = 1.0  # depth layer 0 holds rows 0..3 (zeros), layer 1 rows 4..7 (ones)
    x = sa.asarray(X, dims=("m", "k"), mesh=mesh, layout={"m": ("dep", "row"), "k": "col"})
    _, g = sa.value_and_grad(lambda w: sa.einsum("m k, k n -> m n", x, w, algorithm="tesseract").sum())(w)
    np.testing.assert_allclose(g.numpy(), X.T @ np.ones((8, 6)))
    assert g.numpy().max() == 4.0


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2, "dep": 2}, {"data": 2, "row": 2, "col": 2, "dep": 1}])
def test_several_dims_per_role_and_batch_dims(shape):
    # attention's output projection: contracted (heads, d_kv), free (batch, seq) and (d_model), a data axis
    mesh = sa.Mesh(shape)
    m_axes = tuple(a for a in ("data", "dep", "row") if a in shape)
    o = sa.random.normal(mesh, {"batch": 8, "seq": 3, "heads": 4, "d_kv": 2},
                         layout={"batch": m_axes, "heads": "col"}, seed=1, dtype="float64")
    wo = sa.random.normal(mesh, {"heads": 4, "d_kv": 2, "d_model": 6}, layout={"heads": "row", "d_model": "col"},
                          seed=2, dtype="float64")
    eq = "batch seq heads d_kv, heads d_kv d_model -> batch seq d_model"
    assert sa.matmul.select("auto", [o, wo], ("batch", "seq", "d_model")).name == "tesseract"
    y = sa.einsum(eq, o, wo)
    np.testing.assert_allclose(y.numpy(), np.einsum("bshk,hkd->bsd", o.numpy(), wo.numpy()))
    check_grad(lambda p: (sa.einsum(eq, p["o"], p["wo"]) ** 2).sum(), {"o": o, "wo": wo})

    # batch dims split alike over an axis outside the grid: g m k, g k n
    mesh = sa.Mesh({"g": 2, "row": 2, "col": 2})
    a = sa.random.normal(mesh, {"g": 4, "m": 4, "k": 6}, layout={"g": "g", "m": "row", "k": "col"}, seed=3)
    b = sa.random.normal(mesh, {"g": 4, "k": 6, "n": 4}, layout={"g": "g", "k": "row", "n": "col"}, seed=4)
    plan = sa.matmul.select("auto", [a, b], ("g", "m", "n"))
    assert plan.name == "summa"
    np.testing.assert_allclose(sa.einsum("g m k, g k n -> g m n", a, b).numpy(),
                               np.einsum("gmk,gkn->gmn", a.numpy(), b.numpy()), rtol=1e-5)


def test_operand_order_and_pending_operand():
    mesh, x, w = operands({"row": 2, "col": 2})
    y = sa.einsum("k n, m k -> n m", w, x)  # B first, output transposed
    np.testing.assert_allclose(y.numpy(), (x.numpy() @ w.numpy()).T, rtol=1e-12)
    assert sa.matmul.select("auto", [w, x], ("n", "m")).name == "summa"
    # a pending A is resolved in its own layout before SUMMA runs
    u = sa.random.normal(mesh, {"m": 36, "j": 4}, layout={"m": "row"}, seed=5, dtype="float64")
    v = sa.random.normal(mesh, {"j": 4, "k": 12}, layout={"k": "col"}, seed=6, dtype="float64")
    xp = sa.einsum("m j, j k -> m k", u, v) * 1.0
    assert xp.layout == {"m": ("row",), "k": ("col",)}
    y = sa.einsum("m k, k n -> m n", xp, w, algorithm="summa")
    np.testing.assert_allclose(y.numpy(), u.numpy() @ v.numpy() @ w.numpy(), rtol=1e-10)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_low_precision_and_meta_backend(dtype):
    mesh, x, w = operands({"row": 2, "col": 2, "dep": 2}, dtype=dtype)
    y = sa.einsum("m k, k n -> m n", x, w)
    ref = x.numpy().astype(np.float64) @ w.numpy().astype(np.float64)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.numpy(), ref, rtol=2e-2 if dtype == "float16" else 1e-5, atol=5e-2)
    meta = sa.Mesh({"row": 4, "col": 4, "dep": 4}, backend="meta")
    a = sa.zeros(meta, {"m": 4096, "k": 1024}, dtype=dtype, layout={"m": ("dep", "row"), "k": "col"})
    b = sa.zeros(meta, {"k": 1024, "n": 4096}, dtype=dtype, layout={"k": "row", "n": "col"})
    with sa.comm_log() as log:
        c = sa.einsum("m k, k n -> m n", a, b)
    assert c.shards[0].shape == (4096 // 16, 4096 // 4)
    assert log.total() == 4096 * 1024 / 16 + 1024 * 4096 / 4


def test_auto_picks_by_layout():
    def pick(shape, la, lb, a=8, b=8, c=8):
        mesh = sa.Mesh(shape)
        x = sa.zeros(mesh, {"m": a, "k": b}, layout=la)
        w = sa.zeros(mesh, {"k": b, "n": c}, layout=lb)
        plan = sa.matmul.select("auto", [x, w], ("m", "n"))
        return "allreduce" if plan is None else plan.name

    grid = {"row": 2, "col": 2}
    assert pick(grid, {"m": "row", "k": "col"}, {"k": "row", "n": "col"}) == "summa"
    assert pick({"r": 2, "c": 2}, {"m": "r", "k": "c"}, {"k": "r", "n": "c"}) == "summa"  # any axis names
    cube = {"row": 2, "col": 2, "dep": 2}
    assert pick(cube, {"m": ("dep", "row"), "k": "col"}, {"k": "row", "n": "col"}) == "tesseract"
    assert pick({"row": 2, "col": 2, "dep": 4}, {"m": ("dep", "row"), "k": "col"}, {"k": "row", "n": "col"}) == "summa"
    # Megatron / Mesh-TF layouts, a k split the same way in both, replicated operands, uneven sizes
    assert pick({"model": 4}, {}, {"n": "model"}) == "allreduce"
    assert pick(grid, {"m": "row", "k": "col"}, {"k": "col"}) == "allreduce"
    assert pick(grid, {}, {}) == "allreduce"
    assert pick(grid, {"m": "row", "k": "col"}, {"k": "row", "n": "col"}, c=7) == "allreduce"
    assert pick(cube, {"m": ("dep", "row"), "k": "col"}, {"k": "row", "n": "col"}, a=6) == "allreduce"


def test_auto_falls_back_and_stays_correct_on_uneven_sizes():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.random.normal(mesh, {"m": 5, "k": 7}, layout={"m": "row", "k": "col"}, seed=1, dtype="float64")
    w = sa.random.normal(mesh, {"k": 7, "n": 3}, layout={"k": "row", "n": "col"}, seed=2, dtype="float64")
    np.testing.assert_allclose(sa.einsum(x, w, out=("m", "n")).numpy(), x.numpy() @ w.numpy(), rtol=1e-12)


def _refusal(shape, la, lb, algorithm, a=8, b=8, c=8):
    mesh = sa.Mesh(shape)
    x = sa.zeros(mesh, {"m": a, "k": b}, layout=la)
    w = sa.zeros(mesh, {"k": b, "n": c}, layout=lb)
    with pytest.raises(sa.LayoutError) as info:
        sa.einsum("m k, k n -> m n", x, w, algorithm=algorithm)
    return str(info.value)


def test_refusals_name_the_expected_layouts():
    msg = _refusal({"model": 4}, {}, {"n": "model"}, "summa")
    assert "{'m': 'row', 'k': 'col'}" in msg and "{'k': 'row', 'n': 'col'}" in msg and "got A" in msg
    msg = _refusal({"row": 2, "col": 3}, {"m": "row", "k": "col"}, {"k": "row", "n": "col"}, "summa", b=6, c=6)
    assert "square" in msg and "'row' (2)" in msg and "'col' (3)" in msg
    msg = _refusal({"row": 2, "col": 2, "dep": 4}, {"m": ("dep", "row"), "k": "col"}, {"k": "row", "n": "col"},
                   "tesseract")
    assert "d=4 > q=2" in msg and "('dep', 'row')" in msg
    msg = _refusal({"row": 2, "col": 2}, {"m": "row", "k": "col"}, {"k": "row", "n": "col"}, "tesseract")
    assert "depth axis" in msg
    msg = _refusal({"row": 2, "col": 2}, {"m": "row", "k": "col"}, {"k": "row", "n": "col"}, "summa", b=7)
    assert "dim 'k' of size 7" in msg and "2 equal blocks" in msg and "allreduce" in msg
    msg = _refusal({"row": 2, "col": 2, "dep": 2}, {"m": ("dep", "row"), "k": "col"}, {"k": "row", "n": "col"},
                   "tesseract", a=6)
    assert "dim 'm' of size 6" in msg and "('dep', 'row')" in msg
    msg = _refusal({"row": 2, "col": 2, "dep": 2}, {"m": ("dep", "row"), "k": "col"},
                   {"k": "row", "n": "col"}, "cannon")
    assert "unknown einsum algorithm 'cannon'" in msg
    # B split over a depth axis is not Tesseract's B (it must be replicated over dep)
    mesh = sa.Mesh({"row": 2, "col": 2, "dep": 2})
    x = sa.zeros(mesh, {"g": 2, "m": 8, "k": 8}, layout={"m": ("dep", "row"), "k": "col"})
    w = sa.zeros(mesh, {"g": 2, "k": 8, "n": 8}, layout={"g": "dep", "k": "row", "n": "col"})
    with pytest.raises(sa.LayoutError, match="batch dim 'g'"):
        sa.einsum("g m k, g k n -> g m n", x, w, algorithm="tesseract")
    # three operands, or a dim summed without being contracted, are not matmuls
    with pytest.raises(sa.LayoutError, match="not a matmul"):
        sa.einsum("m k, k n -> n", sa.zeros(mesh, {"m": 8, "k": 8}), sa.zeros(mesh, {"k": 8, "n": 8}),
                  algorithm="summa")
