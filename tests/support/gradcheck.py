"""Finite-difference gradient checks (float64, random directions)."""

from __future__ import annotations

import numpy as np

import shardarray as sa
from shardarray.array import like_kind


def perturb(params, direction, eps):
    """``params + eps * direction`` (direction: one NumPy array per leaf), in the same layouts."""
    leaves, treedef = sa.tree.tree_flatten(params)
    moved = [like_kind(sa.asarray(p.numpy() + eps * v, dims=p.dims, mesh=p.mesh, layout=p.layout), p)
             for p, v in zip(leaves, direction)]  # positional parameters stay positional
    return sa.tree.tree_unflatten(treedef, moved)


def check_grad(fn, params, *args, seed=0, eps=1e-6, rtol=1e-6, atol=1e-9, directions=2):
    """Compare ``value_and_grad(fn)`` with central differences along random directions.

    Also checks that every gradient has its parameter's dims, layout and dtype
    and no pending sum. Returns the gradients.
    """
    loss, grads = sa.value_and_grad(fn)(params, *args)
    np.testing.assert_allclose(float(loss), float(fn(params, *args)), rtol=1e-12, atol=1e-12)
    p_leaves, _ = sa.tree.tree_flatten(params)
    g_leaves, _ = sa.tree.tree_flatten(grads)
    for p, g in zip(p_leaves, g_leaves):
        assert g.dims == p.dims and g.layout == p.layout and g.dtype == p.dtype and not g.pending, (g, p)
    rng = np.random.default_rng(seed)
    for _ in range(directions):
        v_leaves = [rng.standard_normal(p.shape) for p in p_leaves]
        up = float(fn(perturb(params, v_leaves, eps), *args))
        down = float(fn(perturb(params, v_leaves, -eps), *args))
        fd = (up - down) / (2 * eps)
        analytic = sum(float(np.sum(g.numpy() * v)) for g, v in zip(g_leaves, v_leaves))
        # central differences lose about ulp·|f|/eps to cancellation: a large f allows a larger error
        rounding = 4 * np.finfo(np.float64).eps * max(abs(up), abs(down)) / eps
        np.testing.assert_allclose(analytic, fd, rtol=rtol, atol=atol + rounding)
    return grads
