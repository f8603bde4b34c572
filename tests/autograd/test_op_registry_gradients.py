"""Every elementwise and reduction op of ``sa``: a gradient that matches float64 finite differences, or a declared
absence of one (integer/bool results carry none; float results raise ``TapeError``) — never a silent zero.

The ops are enumerated from the modules' ``__all__`` (so a new op is covered or the test names it as
unclassified), each on a 1-device, a 2x2 and a 2x2x2 mesh with uneven blocks.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

from helpers import backend_name

import shardarray as sa
from shardarray.core.tape import NONDIFFERENTIABLE, VJPS
from shardarray.ops.elementwise import arithmetic as elementwise
from shardarray.ops.elementwise import math_binary
from shardarray.ops.elementwise import math_unary
from shardarray.ops.reduction import nanreduce
from shardarray.ops.reduction import reduce

#: under --backend=cupy also a 2x2 mesh on four GPUs, one per device, whose collectives are NCCL's (the fake NCCL
#: on the CuPy stand-in), so every public op is run on CuPy shards on a 1-device, a 2x2 and a 4-GPU NCCL mesh
NCCL_2X2 = "2x2-nccl"
MESHES: list = [{"d": 1}, {"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}] + (
    [NCCL_2X2] if backend_name() == "cupy" else []
)


def make_mesh(shape):
    """``sa.Mesh(shape)``, or for ``NCCL_2X2`` the four-GPU NCCL mesh (skipped on a machine with fewer GPUs)."""
    if shape == NCCL_2X2:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 4:
            pytest.skip("the 4-GPU NCCL mesh needs four GPUs (the stand-in has eight)")
        return sa.Mesh({"row": 2, "col": 2}, backend="cupy", devices=[0, 1, 2, 3], comm="nccl")
    return sa.Mesh(shape)
SHAPE = (5, 3)  # uneven over 2 and 4 devices

#: input range per op where the derivative exists (away from kinks and domain edges)
DOMAIN = {"acosh": (1.2, 3.0), "asin": (-0.8, 0.8), "acos": (-0.8, 0.8), "atanh": (-0.8, 0.8),
          "log": (0.3, 3.0), "log2": (0.3, 3.0), "log10": (0.3, 3.0), "log1p": (-0.5, 2.0), "sqrt": (0.3, 3.0),
          "reciprocal": (0.5, 2.0), "tan": (-1.0, 1.0)}
#: float results with derivative 0 almost everywhere (registered VJPs give that zero)
STEP = {"sign", "floor", "ceil", "trunc", "round"}
#: ops whose results are bool (or int): no gradient, usable in a loss
BOOL = {"isnan", "isinf", "isfinite", "signbit"}

UNARY = [n for n in math_unary.__all__]
UNARY += [n for n in ("exp", "log", "sqrt", "tanh", "sigmoid", "gelu", "relu", "abs", "negative", "square")
          if hasattr(elementwise, n) and n not in UNARY]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "atan2", "hypot", "copysign",
          "logaddexp", "remainder", "floor_divide", "nextafter"]
REDUCE = ["sum", "mean", "prod", "max", "min", "var", "std", "logsumexp"]
NANREDUCE = list(nanreduce.__all__)


def _module_of(name):
    for mod in (math_unary, elementwise, math_binary, reduce, nanreduce):
        if hasattr(mod, name):
            return getattr(mod, name)
    return getattr(sa, name)


def _x(mesh, lo=-2.0, hi=2.0, seed=0):
    axes = mesh.axis_names
    layout = {"a": axes[0], "b": axes[1]} if len(axes) > 1 else {}
    values = np.random.default_rng(seed).uniform(lo, hi, SHAPE)
    return sa.asarray(values, dims=("a", "b"), mesh=mesh, layout=layout)


def _weights(mesh, seed=9):
    return sa.asarray(np.random.default_rng(seed).standard_normal(SHAPE), dims=("a", "b"), mesh=mesh)


def test_every_listed_op_is_classified():
    """Each op is a recorded primitive (a VJP is registered), declared without a gradient, or composed of those."""
    for name in UNARY + BINARY:
        op = _module_of(name)
        assert callable(op), name
        primitive = getattr(op, "__wrapped__", None) is not None
        assert name in VJPS or name in NONDIFFERENTIABLE or not primitive or name in STEP, name


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_gradients(shape, name):
    mesh = make_mesh(shape)
    op = _module_of(name)
    x = _x(mesh, *DOMAIN.get(name, (-2.0, 2.0)))
    w = _weights(mesh)
    if name in BOOL:
        g = sa.grad(lambda p: (sa.where(op(p), 0.0, p) * w).sum())(x)  # no gradient through the test itself
        np.testing.assert_allclose(g.numpy(), np.where(op(x).numpy(), 0.0, w.numpy()))
        return
    if name in STEP:
        g = sa.grad(lambda p: (op(p) * w).sum())(x)
        np.testing.assert_array_equal(g.numpy(), np.zeros(SHAPE))
        return
    check_grad(lambda p: (op(p) * w).sum(), x, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_gradients(shape, name):
    mesh = make_mesh(shape)
    op = _module_of(name)
    lo, hi = (0.5, 2.0) if name in ("power", "divide", "remainder", "floor_divide", "atan2", "hypot") else (-2.0, 2.0)
    params = {"x": _x(mesh, lo, hi, seed=1), "y": _x(mesh, lo, hi, seed=2)}
    w = _weights(mesh)
    if name == "nextafter":
        with pytest.raises(sa.TapeError, match="nextafter is not differentiable"):
            sa.grad(lambda p: (op(p["x"], p["y"]) * w).sum())(params)
        return
    if name == "floor_divide":  # integer-valued: derivative 0 almost everywhere
        g = sa.grad(lambda p: (op(p["x"], p["y"]) * w).sum())(params)
        assert all(np.array_equal(v.numpy(), np.zeros(SHAPE)) for v in g.values())
        return
    check_grad(lambda p: (op(p["x"], p["y"]) * w).sum(), params, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("name", REDUCE + NANREDUCE)
def test_reduction_gradients(shape, name):
    """Over a split dim, over all dims; the nan-reductions with a NaN in the input (its gradient is 0)."""
    mesh = make_mesh(shape)
    op = _module_of(name)
    x = _x(mesh, 0.5, 2.0)
    if name.startswith("nan"):
        values = x.numpy()
        values[1, 2] = np.nan
        x = sa.asarray(values, dims=x.dims, mesh=mesh, layout=x.layout)
    w = sa.asarray(np.random.default_rng(3).standard_normal(SHAPE[1]), dims=("b",), mesh=mesh)
    for dims in ("a", None):
        def loss(p, dims=dims):
            y = op(p, dims)
            return (y * w).sum() if dims == "a" else y

        if name.startswith("nan"):
            g = sa.grad(loss)(x).numpy()
            assert g[1, 2] == 0.0 and np.isfinite(g).all()
            continue
        check_grad(loss, x, rtol=1e-5, atol=1e-7)


def _ab(mesh, seed=0, shape=(5, 6)):
    axes = mesh.axis_names
    layout = {"a": axes[0], "b": axes[1]} if len(axes) > 1 else {}
    return sa.asarray(np.random.default_rng(seed).standard_normal(shape), dims=("a", "b"), mesh=mesh, layout=layout)


#: manipulation, indexing, scans, sorting and the nn functions: a loss of one array ``p`` (dims a=5, b=6), each
#: weighted by a fixed random array of the result's dims so every output element matters
STRUCTURAL = {
    "concat": lambda p: sa.concat([p, p * 2.0], "a"),
    "stack": lambda p: sa.stack([p, p * p], "s"),
    "isel-slice": lambda p: sa.isel(p, {"a": slice(1, 4), "b": slice(None, None, 2)}),
    "isel-int": lambda p: sa.isel(p, {"b": 3}),
    "flip": lambda p: sa.flip(p, "b"),
    "roll": lambda p: sa.roll(p, "a", 2),
    "pad": lambda p: sa.pad(p, {"b": (1, 2)}),
    "diff": lambda p: sa.diff(p, "b"),
    "tile": lambda p: sa.tile(p.relayout({}), {"a": 2}),  # along a split dim it is refused (LayoutError)
    "repeat": lambda p: sa.repeat(p.relayout({}), 2, "b"),
    "split-merge": lambda p: sa.merge_dims(sa.split_dim(p, "b", {"b1": 2, "b2": 3}), ("b2", "b1"), "b"),
    "expand-squeeze": lambda p: sa.squeeze(sa.expand_dims(p * 3.0, "n", 0), "n"),
    "transpose": lambda p: p.transpose("b", "a"),
    "relayout": lambda p: p.relayout({"b": p.mesh.axis_names[0]}) if p.mesh.size > 1 else p,
    "broadcast_to": lambda p: sa.broadcast_to(p, {"c": 3, "a": 5, "b": 6}),
    "where": lambda p: sa.where(p > 0.1, p * p, -p),
    "cumsum": lambda p: sa.cumsum(p, "b"),
    "cumprod": lambda p: sa.cumprod(p, "a"),
    "sort": lambda p: sa.sort(p, "b"),
    "top_k": lambda p: sa.top_k(p, 3, "b")[0],
    "take_along_dim": lambda p: sa.take_along_dim(p, sa.argsort(p, "b"), "b"),
    "softmax": lambda p: sa.softmax(p, "b"),
    "logsumexp": lambda p: sa.logsumexp(p, "b"),
    "einsum": lambda p: sa.einsum("a b, b c -> a c", p, sa.broadcast_to(p.sum("a"), {"b": 6, "c": 2})),
    "take": lambda p: sa.take(p, sa.asarray(np.array([4, 0, 2, 2]), dims=("n",), mesh=p.mesh), "a"),
    "layer_norm": lambda p: sa.nn.layer_norm(p, sa.ones(p.mesh, {"b": 6}, dtype="float64") * 1.5,
                                             sa.zeros(p.mesh, {"b": 6}, dtype="float64"), dim="b"),
}


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_structural_op_gradients(shape, name):
    mesh = make_mesh(shape)
    op = STRUCTURAL[name]
    x = _ab(mesh)
    y = op(x)
    w = sa.asarray(np.random.default_rng(7).standard_normal(y.shape), dims=y.dims, mesh=mesh)
    check_grad(lambda p: (op(p) * w).sum(), x, rtol=1e-5, atol=1e-7)


#: the array API namespace (positional arrays): a loss of one (5, 6) array
POSITIONAL = {
    "reshape": lambda xp, p: xp.reshape(p, (3, 10)),
    "permute_dims": lambda xp, p: xp.permute_dims(p, (1, 0)),
    "matmul": lambda xp, p: p @ p.mT,
    "tensordot": lambda xp, p: xp.tensordot(p, p, axes=([1], [1])),
    "vecdot": lambda xp, p: xp.vecdot(p, p * 2.0),
    "concat": lambda xp, p: xp.concat([p, p[:2]], axis=0),
    "stack": lambda xp, p: xp.stack([p, -p], axis=1),
    "expand-squeeze": lambda xp, p: xp.squeeze(xp.expand_dims(p, axis=0), axis=0),
    "flip": lambda xp, p: xp.flip(p, axis=1),
    "roll": lambda xp, p: xp.roll(p, 2, axis=0),
    "take": lambda xp, p: xp.take(p, xp.asarray(np.array([4, 1, 1]), device=p.mesh), axis=0),
    "getitem": lambda xp, p: p[1:4, ::2],
    "where": lambda xp, p: xp.where(p > 0, p * p, p),
    "clip": lambda xp, p: xp.clip(p, -0.5, 0.5),
    "sum-mean": lambda xp, p: xp.sum(p, axis=1) + xp.mean(p, axis=1),
    "std-var": lambda xp, p: xp.std(p, axis=0) + xp.var(p, axis=0, correction=1),
    "max-min": lambda xp, p: xp.max(p, axis=1) - xp.min(p, axis=1),
    "cumulative_sum": lambda xp, p: xp.cumulative_sum(p, axis=1),
    "sort": lambda xp, p: xp.sort(p, axis=1),
    "broadcast": lambda xp, p: p + xp.ones((4, 1, 1), device=p.mesh),
    "linalg-norm": lambda xp, p: xp.linalg.vector_norm(p, axis=1) + xp.linalg.matrix_norm(p),
    "logaddexp": lambda xp, p: xp.logaddexp(p, p * 0.5),
}


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("name", sorted(POSITIONAL))
def test_positional_op_gradients(shape, name):
    import shardarray.array_api as xp

    mesh = make_mesh(shape)
    op = POSITIONAL[name]
    x = xp.asarray(np.random.default_rng(0).standard_normal((5, 6)), device=mesh)
    y = op(xp, x)
    w = xp.asarray(np.random.default_rng(7).standard_normal(y.shape), device=mesh)
    g = check_grad(lambda p: xp.sum(op(xp, p) * w), x, rtol=1e-5, atol=1e-7)
    assert g.positional
