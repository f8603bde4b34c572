"""Optimizer and mixed-precision numerics at the edges: norms that overflow their dtype's squares, loss scales whose
reciprocal overflows 16 bits, finiteness judged on what reaches the parameters."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}]


def _grads(mesh, value, dtype, n=7):
    axes = mesh.axis_names
    return {"w": sa.full(mesh, {"i": n}, value, dtype=dtype, layout={"i": axes[-1]}),
            "b": sa.full(mesh, {"j": 3}, value, dtype=dtype)}


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("value,dtype", [(1e20, "float32"), (3e38, "float32"), (1e200, "float64"),
                                         (1e300, "float64"), (6e4, "float16"), (1e30, "bfloat16"), (0.5, "float32")])
def test_global_norm_does_not_overflow(shape, value, dtype):
    """The norm of finite gradients is finite and right, whatever their magnitude (float32 squares overflow from
    about 1e19, float64 ones from 1e154); clipping then brings them to max_norm."""
    mesh = sa.Mesh(shape)
    g = _grads(mesh, value, dtype)
    v = float(np.asarray(sa.full(mesh, {"i": 1}, value, dtype=dtype).numpy()).astype(np.float64)[0])
    want = abs(v) * np.sqrt(10)
    norm = sa.optim.global_norm(g)
    assert np.isfinite(norm)
    np.testing.assert_allclose(norm, want, rtol=1e-6)
    clipped, n2 = sa.optim.clip_by_global_norm(g, 1.0, return_norm=True)
    assert n2 == norm
    got = np.sqrt(sum(float(np.sum(x.numpy().astype(np.float64) ** 2)) for x in clipped.values()))
    np.testing.assert_allclose(got, min(1.0, want), rtol=2e-2 if dtype in ("float16", "bfloat16") else 1e-6)


def test_non_finite_gradients_give_a_non_finite_norm_and_pass_unchanged():
    mesh = sa.Mesh({"row": 2, "col": 2})
    for bad in (np.inf, np.nan):
        g = _grads(mesh, 1.0, "float32")
        values = g["w"].numpy()
        values[3] = bad
        g["w"] = sa.asarray(values, dims=("i",), mesh=mesh, layout=g["w"].layout)
        clipped, norm = sa.optim.clip_by_global_norm(g, 1.0, return_norm=True)
        assert not np.isfinite(norm)
        np.testing.assert_array_equal(clipped["w"].numpy(), values)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_small_loss_scale_with_16_bit_gradients(dtype):
    """A loss scale below 1/65504 makes 1/scale overflow float16: the unscaling is done in float32, and a
    gradient that overflows its 16 bits only once unscaled skips the step instead of making NaN parameters."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    scaler = sa.optim.DynamicLossScale(init_scale=1e-6, min_scale=1e-9)
    state = scaler.init()
    params = {"w": sa.ones(mesh, {"i": 4}, dtype=dtype, layout={"i": "col"})}
    opt = sa.optim.SGD(0.1)
    opt_state = opt.init(params)
    small = {"w": sa.full(mesh, {"i": 4}, 1e-4, dtype=dtype, layout={"i": "col"})}
    unscaled, finite = scaler.unscale(small, state)
    assert finite
    np.testing.assert_allclose(unscaled["w"].numpy().astype(np.float64), 1e-4 / 1e-6, rtol=1e-2)
    overflowing = {"w": sa.full(mesh, {"i": 4}, 1.0, dtype=dtype, layout={"i": "col"})}  # 1e6 once unscaled
    _, finite = scaler.unscale(overflowing, state)
    assert finite == (dtype == "bfloat16")  # 1e6 fits bfloat16's range, not float16's
    new, _, state2 = scaler.apply(opt, params, overflowing, opt_state, state)
    assert np.isfinite(new["w"].numpy().astype(np.float64)).all()
    if dtype == "float16":
        assert state2["finite"] is False and state2["skipped"] == 1
        np.testing.assert_array_equal(new["w"].numpy(), params["w"].numpy())
    for max_norm in (1.0, 1e9):
        new, _, st = scaler.apply(opt, params, overflowing, opt_state, state, max_norm=max_norm)
        assert np.isfinite(new["w"].numpy().astype(np.float64)).all()
        assert st["finite"] is (max_norm == 1.0 or dtype == "bfloat16")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adam_updates_a_0d_parameter(dtype):
    """A scalar parameter (a 0-d block): the fused NumPy Adam got NumPy scalars from its products and crashed."""
    mesh = sa.Mesh({"x": 1})
    w = {"s": sa.full(mesh, {}, 1.0, dtype)}
    opt = sa.optim.Adam(1e-2)
    w2, _ = opt.update(w, {"s": sa.full(mesh, {}, 0.5, dtype)}, opt.init(w))
    assert w2["s"].dtype == np.dtype(dtype)
    np.testing.assert_allclose(float(w2["s"].numpy()), 1.0 - 1e-2, rtol=1e-6)


@pytest.mark.parametrize("opt", [sa.optim.Adam(1e-2), sa.optim.SGD(1e-2, momentum=0.9)], ids=["adam", "sgd"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_optimizer_state_of_positional_params_is_positional(opt, dtype):
    """Moments, velocities and float32 master copies of positional parameters are positional from init on
    (a named master made ``master @ master`` contract every dim by name: a scalar)."""
    import shardarray.array_api as xp

    mesh = sa.Mesh({"row": 2, "col": 2})
    w = {"w": xp.asarray(np.eye(3), device=mesh).astype(dtype)}
    def arrays(tree):
        if isinstance(tree, dict):
            return [a for v in tree.values() for a in arrays(v)]
        if isinstance(tree, (list, tuple)):
            return [a for v in tree for a in arrays(v)]
        return [tree] if isinstance(tree, sa.ShardArray) and tree.ndim else []

    state = opt.init(w)
    assert arrays(state) and all(type(x) is xp.Array for x in arrays(state)), [type(x) for x in arrays(state)]
    w2, state = opt.update(w, {"w": xp.ones((3, 3), device=mesh).astype(dtype)}, state)
    assert all(type(x) is xp.Array for x in arrays(state)) and type(w2["w"]) is xp.Array
    if dtype == "bfloat16":
        master = next(iter(state["master"].values()))
        assert (master @ master).shape == (3, 3)


def test_complex_gradients_count_their_magnitude_and_complex_params_are_updated():
    mesh = sa.Mesh({"row": 2, "col": 2})
    z = np.array([1j, 1j, 3 + 4j, 1e200 + 1e200j])
    g = {"z": sa.asarray(z[:3], dims=("a",), mesh=mesh, layout={"a": "row"})}
    assert sa.optim.global_norm(g) == pytest.approx(np.linalg.norm(z[:3]), rel=1e-15)  # |1j| was 0
    big = {"z": sa.asarray(z[3:], dims=("a",), mesh=mesh)}
    assert sa.optim.global_norm(big) == pytest.approx(np.sqrt(2) * 1e200, rel=1e-15)  # the scaled path
    clipped = sa.optim.clip_by_global_norm(g, 1.0)
    assert sa.optim.global_norm(clipped) == pytest.approx(1.0, rel=1e-12)
    for opt in (sa.optim.Adam(1e-2), sa.optim.SGD(1e-2)):  # (PyTorch's: the parts as two real parameters)
        new, _ = opt.update(g, g, opt.init(g))
        assert new["z"].dtype == np.complex128
