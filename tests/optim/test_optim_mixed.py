"""Mixed-precision optimizer pieces: global-norm clipping, dynamic loss scale, float32 master weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import layouts, meshes, rand, sizes_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa

LOW = ["float16", "bfloat16"]


def _grad_tree(draw, mesh, n, dtype="float32"):
    """A dict of ``n`` random arrays of 1 or 2 dims, random sizes (empty included) and random layouts."""
    tree, ref = {}, {}
    for i in range(n):
        dims = ("a", "b")[: draw(st.integers(1, 2))]
        shape = draw(sizes_strategy(dims, 0, 6))
        lay = draw(layouts(mesh, dims))
        value = rand(shape, seed=i + 7 * n) * 3.0
        tree[f"g{i}"] = sa.asarray(value.astype(dtype), dims=dims, mesh=mesh, layout=lay)
        ref[f"g{i}"] = tree[f"g{i}"].numpy().astype(np.float64)
    return tree, ref


@settings(max_examples=25, deadline=None)
@given(st.data(), meshes(), st.integers(1, 5), st.sampled_from([0.5, 4.0, 1e6]))
def test_clip_by_global_norm_against_numpy_with_one_allreduce(data, mesh, n, max_norm):
    grads, ref = _grad_tree(data.draw, mesh, n)
    norm_ref = math.sqrt(sum(float(np.sum(v * v)) for v in ref.values()))
    with sa.comm_log() as log:
        clipped, norm = sa.optim.clip_by_global_norm(grads, max_norm, return_norm=True)
    assert norm == pytest.approx(norm_ref, rel=1e-5, abs=1e-6)
    # the one collective: a single float64 summed over every mesh axis, whatever the layouts and the count
    records = list(log.records)
    if mesh.size > 1:
        one = ("allreduce", set(mesh.axis_names), 1, "float64")
        # (a norm under 1e-146, zero gradients included, reads the largest magnitude too: squares may underflow)
        assert [(r.op, set(r.axes), r.elements, r.dtype) for r in records] == [one] * (1 if norm_ref >= 1e-146 else 2)
    else:
        assert records == []
    factor = min(1.0, max_norm / norm_ref) if norm_ref > 0 else 1.0
    for k, v in ref.items():
        out = clipped[k]
        assert out.dtype == grads[k].dtype and out.layout == grads[k].layout
        np.testing.assert_allclose(out.numpy(), v * factor, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", LOW)
def test_clip_low_precision_grads_keep_their_dtype(dtype):
    mesh = sa.Mesh({"row": 2, "col": 2})
    g = {"w": sa.full(mesh, {"i": 5, "j": 3}, 2.0, dtype=dtype, layout={"i": "row", "j": "col"}),
         "b": sa.full(mesh, {"j": 3}, 1.0, dtype=dtype)}
    clipped, norm = sa.optim.clip_by_global_norm(g, 1.0, return_norm=True)
    assert norm == pytest.approx(math.sqrt(15 * 4 + 3))
    assert clipped["w"].dtype == np.dtype(dtype) if dtype == "float16" else str(clipped["w"].dtype) == dtype
    np.testing.assert_allclose(clipped["w"].numpy().astype(np.float64), 2.0 / norm, rtol=1e-2)


def test_global_norm_counts_replicas_once_and_resolves_pending():
    mesh = sa.Mesh({"p": 3, "q": 2})
    x = sa.asarray(np.arange(6.0).reshape(3, 2), dims=("a", "b"), mesh=mesh, layout={"a": "p"})
    pending = sa.einsum("a b -> b", x)   # a pending sum over p
    assert pending.pending
    ref = np.arange(6.0).reshape(3, 2)
    want = math.sqrt(float(np.sum(ref**2) + np.sum(ref.sum(0) ** 2)))
    assert sa.optim.global_norm({"x": x, "s": pending}) == pytest.approx(want)


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}])
def test_loss_scale_skips_and_halves_on_overflow_with_one_flag_allreduce(shape):
    mesh = sa.Mesh(shape)
    axis = mesh.axis_names[-1]
    w = {"w": sa.ones(mesh, {"i": 4}, layout={"i": axis}), "b": sa.ones(mesh, {"j": 3})}
    scaler, opt = sa.optim.DynamicLossScale(init_scale=64.0, growth_interval=3), sa.optim.SGD(lr=0.5)
    ls, st_ = scaler.init(), opt.init(w)
    bad_values = np.array([1.0, np.nan, 1.0, 1.0])
    bad = {"w": sa.asarray(bad_values, dims=("i",), mesh=mesh, layout={"i": axis}).astype("float32"),
           "b": sa.ones(mesh, {"j": 3})}
    with sa.comm_log() as log:
        _unscaled, finite = scaler.unscale(bad, ls)
    assert not finite
    assert [(r.op, r.elements) for r in log.records] == ([("allreduce", 1)] if mesh.size > 1 else [])
    assert log.records[0].dtype == "float64" if mesh.size > 1 else True
    new_w, new_st, ls2 = scaler.apply(opt, w, bad, st_, ls)
    assert new_w is w and new_st is st_          # skipped: params and optimizer state unchanged
    assert ls2 == {"scale": 32.0, "good_steps": 0, "skipped": 1, "finite": False}
    # the inf sits on one device only: every device still agrees to skip
    inf = {"w": sa.asarray(np.array([1.0, 1.0, 1.0, np.inf], "float32"), dims=("i",), mesh=mesh,
                           layout={"i": axis}), "b": sa.ones(mesh, {"j": 3})}
    assert scaler.apply(opt, w, inf, st_, ls2, max_norm=1.0)[2]["scale"] == 16.0


def test_loss_scale_grows_after_growth_interval_and_respects_bounds():
    mesh = sa.Mesh({"row": 2, "col": 2})
    w = {"w": sa.ones(mesh, {"i": 4}, layout={"i": "col"})}
    scaler = sa.optim.DynamicLossScale(init_scale=4.0, growth_interval=3, factor=2.0, min_scale=2.0, max_scale=8.0)
    opt = sa.optim.SGD(lr=0.1)
    ls, st_ = scaler.init(), opt.init(w)
    scales = []
    for _ in range(7):
        g = {"w": sa.full(mesh, {"i": 4}, ls["scale"], layout={"i": "col"})}   # scaled grads of 1.0
        w, st_, ls = scaler.apply(opt, w, g, st_, ls)
        scales.append(ls["scale"])
    assert scales == [4.0, 4.0, 8.0, 8.0, 8.0, 8.0, 8.0]   # grows after 3 good steps, capped at max_scale
    np.testing.assert_allclose(w["w"].numpy(), 1.0 - 7 * 0.1, rtol=1e-6)   # every step applied unscaled grads
    for _ in range(3):
        ls = scaler.adjust(ls, False)
    assert ls["scale"] == 2.0 and ls["skipped"] == 3     # halved, not below min_scale


def test_loss_scale_value_and_grad_and_clip_in_one_allreduce():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(rand((4, 3)), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"}).astype("float32")
    w = {"w": sa.asarray(rand((3,), 1), dims=("b",), mesh=mesh, layout={"b": "col"}).astype("float32")}

    def loss_fn(p, x):
        return (sa.einsum("a b, b -> a", x, p["w"]) ** 2).mean()

    loss_ref, g_ref = sa.value_and_grad(loss_fn)(w, x)
    scaler = sa.optim.DynamicLossScale(init_scale=2.0**10)
    ls = scaler.init()
    loss, g = scaler.value_and_grad(loss_fn)(ls, w, x)
    assert float(loss) == pytest.approx(float(loss_ref), rel=1e-6)
    np.testing.assert_allclose(g["w"].numpy(), g_ref["w"].numpy() * 2.0**10, rtol=1e-5)
    opt = sa.optim.SGD(lr=1.0)
    norm = float(np.linalg.norm(g_ref["w"].numpy()))
    with sa.comm_log() as log:
        w2, _, ls2 = scaler.apply(opt, w, g, opt.init(w), ls, max_norm=norm / 2)
    assert [r.op for r in log.records] == ["allreduce"] and log.records[0].elements == 1
    np.testing.assert_allclose(w2["w"].numpy(), w["w"].numpy() - g_ref["w"].numpy() / 2, rtol=1e-5, atol=1e-6)
    assert ls2["finite"] and ls2["good_steps"] == 1


def _numpy_adam(p32, grads, steps, lr, b1=0.9, b2=0.999, eps=1e-8, dtype=np.float16):
    """A float32 NumPy AdamW with a master copy: the reference for the low-precision parameter."""
    master, m, v = p32.astype(np.float32), np.zeros_like(p32, np.float32), np.zeros_like(p32, np.float32)
    for t in range(1, steps + 1):
        g = grads[t - 1].astype(np.float32)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        master = master - (lr / (1 - b1**t)) * m / (np.sqrt(v / (1 - b2**t)) + eps)
    return master


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}])
def test_adam_master_weights_match_a_float32_reference(dtype, shape):
    """Tiny updates: the master copy accumulates them, while rounding to the 16-bit parameter alone loses them."""
    mesh = sa.Mesh(shape)
    axis = mesh.axis_names[0]
    start = np.linspace(1.0, 2.0, 5)
    grads = [rand((5,), s) for s in range(6)]
    lr = 1e-4   # below half an ulp of float16/bfloat16 at 1..2: a plain low-precision update would not move
    params = {"w": sa.asarray(start, dims=("i",), mesh=mesh, layout={"i": axis}).astype(dtype)}
    ref = _numpy_adam(params["w"].numpy().astype(np.float32), grads, 6, lr)
    opt = sa.optim.Adam(lr=lr)
    state = opt.init(params)
    assert set(state["master"]) == {"['w']"} and state["master"]["['w']"].dtype == np.float32
    p = params
    for g in grads:
        p, state = opt.update(p, {"w": sa.asarray(g, dims=("i",), mesh=mesh, layout={"i": axis}).astype(dtype)},
                              state)
    master = state["master"]["['w']"]
    assert master.layout == params["w"].layout and str(p["w"].dtype) == dtype
    # the gradients were rounded to dtype before the update: the reference rounds them the same way
    ref = _numpy_adam(params["w"].numpy().astype(np.float32),
                      [sa.asarray(g, dims=("i",), mesh=mesh).astype(dtype).numpy().astype(np.float32) for g in grads],
                      6, lr)
    np.testing.assert_allclose(master.numpy(), ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(p["w"].numpy(), ref.astype(p["w"].numpy().dtype))
    assert np.any(master.numpy() != params["w"].numpy().astype(np.float32))   # the master moved
    # without a master copy the same tiny steps are lost to rounding
    opt0 = sa.optim.Adam(lr=lr, master_dtype=None)
    p0, s0 = params, opt0.init(params)
    assert s0["master"] is None
    for g in grads:
        p0, s0 = opt0.update(p0, {"w": sa.asarray(g, dims=("i",), mesh=mesh, layout={"i": axis}).astype(dtype)}, s0)
    np.testing.assert_array_equal(p0["w"].numpy(), params["w"].numpy())


def test_sgd_master_weights_and_float32_params_have_no_copy():
    mesh = sa.Mesh({"row": 2, "col": 2})
    w32 = {"a": sa.ones(mesh, {"i": 3}, layout={"i": "row"})}
    assert sa.optim.Adam().init(w32)["master"] is None and sa.optim.SGD().init(w32)["master"] is None
    w16 = {"a": sa.ones(mesh, {"i": 3}, dtype="float16", layout={"i": "row"})}
    opt = sa.optim.SGD(lr=1e-4, momentum=0.5)
    p, s = w16, opt.init(w16)
    for _ in range(4):
        p, s = opt.update(p, {"a": sa.ones(mesh, {"i": 3}, dtype="float16", layout={"i": "row"})}, s)
    v, ref = 0.0, 1.0
    for _ in range(4):
        v = 0.5 * v + 1.0
        ref = np.float32(ref - np.float32(1e-4) * np.float32(v))
    np.testing.assert_allclose(s["master"]["['a']"].numpy(), ref, rtol=1e-6)
    assert p["a"].dtype == np.float16


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_clip_and_loss_scale_under_mpi(dtype):
    from pathlib import Path

    from mpi_jobs import mpiexec

    job = mpiexec(4, str(Path(__file__).parents[1] / "support" / "mixed_mpi_job.py"), dtype, timeout=120)
    assert job.returncode == 0, job.stderr[-3000:] + job.stdout[-2000:]
    assert job.stdout.count(": OK") == 4


def test_clip_by_global_norm_returns_the_grads_as_in_the_design():
    mesh = sa.Mesh({"row": 2, "col": 2})
    g = {"w": sa.full(mesh, {"i": 4}, 3.0, layout={"i": ("row", "col")})}
    clipped = sa.optim.clip_by_global_norm(g, 1.0)          # DESIGN.md: grads = clip_by_global_norm(grads, 1.0)
    assert set(clipped) == {"w"}
    np.testing.assert_allclose(clipped["w"].numpy(), 0.5)
