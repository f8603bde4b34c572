"""Positional arrays stay positional through autograd, optimizers, clipping, loss scaling and resharding.

A positional array (``shardarray.array_api``'s ``Array``) that came back named changed meaning silently: ``+``
broadcasts by dim name and ``@`` contracts every matching name, so ``sa.value_and_grad(lambda p: xp.sum(p["a"] @
p["b"]))`` on two 4x4 arrays gave 600.0 where NumPy gives 3280.0.
"""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api._array import Array

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}]


def _params(mesh):
    a = np.arange(16.0).reshape(4, 4)
    b = np.arange(16.0).reshape(4, 4) + 1
    return a, b, {"a": xp.asarray(a, device=mesh), "b": xp.asarray(b, device=mesh)}


@pytest.mark.parametrize("shape", MESHES)
def test_leaves_and_gradients_stay_positional(shape):
    mesh = sa.Mesh(shape)
    a, b, p = _params(mesh)
    kinds = []

    def loss(p):
        kinds.extend(type(v) for v in p.values())
        return xp.sum(p["a"] @ p["b"])

    value, grads = sa.value_and_grad(loss)(p)
    assert kinds == [Array, Array] and type(value) is Array  # the loss, resolved, stays positional too
    assert float(value) == float(np.sum(a @ b)) == 4400.0  # named semantics would contract every matching name
    assert all(type(g) is Array for g in grads.values())
    np.testing.assert_allclose(grads["a"].numpy(), np.ones((4, 4)) @ b.T)
    np.testing.assert_allclose(grads["b"].numpy(), a.T @ np.ones((4, 4)))
    # a broadcasting + stays right-aligned inside the traced function too
    g = sa.grad(lambda p: xp.sum((p["a"] + p["b"][0]) ** 2))(p)
    np.testing.assert_allclose(g["a"].numpy(), 2 * (a + b[0]))
    np.testing.assert_allclose(g["b"].numpy()[0], 2 * (a + b[0]).sum(axis=0))


@pytest.mark.parametrize("opt", [sa.optim.Adam(1e-2), sa.optim.SGD(1e-2, momentum=0.9), sa.optim.SGD(1e-1)])
def test_optimizer_updates_stay_positional(opt):
    mesh = sa.Mesh({"row": 2, "col": 2})
    a, b, p = _params(mesh)
    grads = sa.grad(lambda p: xp.sum(p["a"] @ p["b"]))(p)
    state = opt.init(p)
    new, state = opt.update(p, grads, state)
    new, state = opt.update(new, grads, state)
    assert all(type(v) is Array for v in new.values())
    named = {k: sa.asarray(v.numpy(), dims=("i", "j"), mesh=mesh) for k, v in p.items()}
    named_g = {k: sa.asarray(v.numpy(), dims=("i", "j"), mesh=mesh) for k, v in grads.items()}
    ref_state = opt.init(named)
    ref, ref_state = opt.update(named, named_g, ref_state)
    ref, _ = opt.update(ref, named_g, ref_state)
    for k in p:
        np.testing.assert_allclose(new[k].numpy(), ref[k].numpy(), rtol=1e-12)
    assert (new["a"] @ new["b"]).shape == (4, 4)


def test_clipping_and_loss_scaling_stay_positional():
    mesh = sa.Mesh({"row": 2, "col": 2})
    _, _, p = _params(mesh)
    grads = sa.grad(lambda p: xp.sum(p["a"] @ p["b"]))(p)
    clipped, norm = sa.optim.clip_by_global_norm(grads, 1.0, return_norm=True)
    assert norm > 1.0 and all(type(v) is Array for v in clipped.values())
    unclipped = sa.optim.clip_by_global_norm(grads, 1e9)
    assert all(type(v) is Array for v in unclipped.values())
    scale = sa.optim.DynamicLossScale()
    unscaled, finite = scale.unscale(grads, scale.init())
    assert finite and all(type(v) is Array for v in unscaled.values())
    np.testing.assert_allclose(unscaled["a"].numpy() * scale.init()["scale"], grads["a"].numpy())


@pytest.mark.parametrize("target", [{"d": 2}, {"row": 2, "col": 2}, {"x": 4}])
def test_reshard_keeps_positional(target):
    a = np.arange(12.0).reshape(3, 4)
    q = xp.asarray(a, device=sa.Mesh({"row": 2, "col": 2}))
    r = sa.reshard(q, sa.Mesh(target))
    assert type(r) is Array
    assert (r @ r.mT).shape == (3, 3)
    np.testing.assert_allclose((r @ r.mT).numpy(), a @ a.T)
    # no layout: the namespace's default split on the new mesh, as xp.asarray and checkpoint.load give it
    assert r.layout == xp.asarray(a, device=sa.Mesh(target)).layout
    assert sa.reshard(q, sa.Mesh(target), {}).layout == {}


def test_checkpoints_keep_the_kind(tmp_path):
    """A positional array saved loads positional: by mesh= with the namespace's default split (axis k over mesh
    axis k; never silently replicated), and into a target of either kind as that kind."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(3, 4)
    q = xp.asarray(a, device=mesh)
    w = sa.ones(mesh, {"i": 4}, layout={"i": "col"})
    sa.checkpoint.save(tmp_path / "ck", {"q": q, "w": w})
    for target_mesh in (sa.Mesh({"x": 4}), sa.Mesh({"r": 2, "c": 2}), sa.Mesh({"d": 1})):
        out = sa.checkpoint.load(tmp_path / "ck", mesh=target_mesh)
        assert type(out["q"]) is Array and type(out["w"]) is sa.ShardArray
        axes = target_mesh.axis_names
        assert out["q"].layout == {d: (ax,) for d, ax in zip(out["q"].dims, axes)}  # split, not replicated
        np.testing.assert_array_equal((out["q"] @ out["q"].mT).numpy(), a @ a.T)
    out = sa.checkpoint.load(tmp_path / "ck", target={"q": xp.zeros((3, 4), device=mesh), "w": w})
    assert type(out["q"]) is Array
    np.testing.assert_array_equal(out["q"].numpy(), a)


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("vshape,rows", [((4,), [True, False, True]), ((1, 4), [True, True, False]),
                                         ((1,), [False, True, True]), ((2, 4), [True, False, True])])
def test_boolean_mask_writes_broadcast_as_numpy(shape, vshape, rows):
    """``x[mask] = v`` with a value that broadcasts (right-aligned) to the selected shape, as NumPy writes it."""
    mesh = sa.Mesh(shape)
    a = xp.asarray(np.arange(12.0).reshape(3, 4), device=mesh)
    want = np.arange(12.0).reshape(3, 4)
    mask = np.array(rows)
    v = np.arange(float(np.prod(vshape))).reshape(vshape) + 100
    want[mask] = v
    a[xp.asarray(mask, device=mesh)] = xp.asarray(v, device=mesh)
    np.testing.assert_array_equal(a.numpy(), want)


def test_boolean_mask_write_errors_speak_in_shapes():
    a = xp.asarray(np.arange(8.0).reshape(2, 4), device=sa.Mesh({"row": 2, "col": 2}))
    with pytest.raises(sa.DimensionError, match=r"shape \(5,\) selected.*shape \(3,\)") as info:
        a[a > 2] = xp.asarray(np.arange(3.0), device=a.mesh)
    assert "__v" not in str(info.value)


@pytest.mark.parametrize("shape", MESHES)
def test_numpy_protocols_keep_positional_arrays_positional(shape):
    """np.<ufunc>/np.<function> on positional arrays return positional arrays with NumPy's (positional) meaning:
    matmul contracts by position, broadcasting aligns trailing axes, even where a named array would match dims."""
    mesh = sa.Mesh(shape)
    a_np, b_np = np.arange(16.0).reshape(4, 4), np.arange(16.0, 32.0).reshape(4, 4)
    a, b, row = xp.asarray(a_np, device=mesh), xp.asarray(b_np, device=mesh), xp.asarray(np.arange(4.0), device=mesh)
    cases = {
        "exp": (np.exp(a), np.exp(a_np)),
        "matmul": (np.matmul(a, b), a_np @ b_np),
        "add a row": (np.add(a, row), a_np + np.arange(4.0)),
        "sum over axis 0": (np.sum(a, axis=0), a_np.sum(axis=0)),
        "concatenate": (np.concatenate([a, b]), np.concatenate([a_np, b_np])),
        "transpose": (np.transpose(a), a_np.T),
    }
    for name, (got, want) in cases.items():
        assert isinstance(got, Array), name
        np.testing.assert_allclose(got.numpy(), want, err_msg=name)
    # inside value_and_grad too: the 600-vs-3280 example through NumPy's protocol
    value, grads = sa.value_and_grad(lambda p: np.sum(np.matmul(p["a"], p["b"])))({"a": a, "b": b})
    assert float(value) == float((a_np @ b_np).sum()) and isinstance(grads["a"], Array)


@pytest.mark.parametrize("shape", MESHES)
def test_from_local_of_positional_blocks_is_positional(shape):
    """Blocks given as xp Arrays (a process's local data) make a positional array: x @ x contracts by position."""
    from shardarray.layout import block_bounds

    mesh = sa.Mesh(shape)
    full = np.arange(16.0).reshape(4, 4)
    layout = {"dim0": mesh.axis_names[0]}
    spec = sa.zeros(mesh, {"dim0": 4, "dim1": 4}, "float64", layout=layout).spec
    local = sa.Mesh({"d": 1})
    blocks = {d: xp.asarray(full[r0:r1, c0:c1], device=local)
              for d, ((r0, r1), (c0, c1)) in enumerate(block_bounds(mesh, spec))}
    x = sa.from_local(mesh, blocks, ("dim0", "dim1"), (4, 4), layout=layout)
    assert isinstance(x, Array)
    np.testing.assert_allclose((x @ x).numpy(), full @ full)
    named = sa.from_local(mesh, {d: b.numpy() for d, b in blocks.items()}, ("dim0", "dim1"), (4, 4), layout=layout)
    assert type(named) is sa.ShardArray
