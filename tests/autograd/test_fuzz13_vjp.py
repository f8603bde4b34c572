"""The thirteenth fuzzing round, of the VJPs: gradients against float64 central differences on uneven layouts.

For random ops, sizes (0 to 7: uneven and empty blocks, size-1 dims) and layouts on the meshes 2x2, 3x2 and 2x2x2:

1. every op ``test_op_registry_all.py`` lists as differentiable (it checks each on fixed layouts of a 1-device, a
   2x2 and a 2x2x2 mesh) with every parameter moved to a random layout, the 3x2 mesh included;
2. positional (``xp``) arrays through reductions (``axis`` tuples, negative axes, ``keepdims``, ``axis=None``),
   scans, sorts, norms, quantiles, nan-reductions, shape ops, broadcasting binary ops and indexing, with complex
   intermediates where the op takes them: the gradient is a positional ``Array`` of exactly the parameter's shape,
   dims order, layout and dtype (never named, never transposed);
3. named arrays of different dims broadcast against each other in a binary op, then a reduction, scan or shape
   op, through ``sa.grad`` or ``sa.vjp`` (its cotangent in a random layout);
4. every op the registry lists as not differentiable, on random layouts: a floating result of a traced input raises
   ``sa.TapeError`` naming the op, integer/bool results are usable constants (never a silent zero gradient);
5. the conventions, on layouts with empty blocks: ties (JAX's: a ``max`` reduction shares the cotangent equally,
   ``maximum`` gives each side half, ``sort`` follows the stable order and ``top_k`` the lower index; ``clip``
   gives it all to ``x`` at a bound, as PyTorch's ``clamp``), ``where``, ``has_aux`` with trees of positional and
   named leaves, integer and complex parameters (refused with ``sa.DTypeError``, as ``jax.grad`` refuses integer
   ones; integers pass as later arguments), and in-place writes (``x += v`` is differentiable; ``x[idx] = v`` on a
   traced array is refused with ``sa.TapeError``, as JAX's immutable arrays refuse it).

Complex values follow JAX's convention (``shardarray/autograd/api.py``: a complex value's cotangent is
``dL/dx - i dL/dy`` for ``z = x + iy``; parameters are real), checked through real losses of complex intermediates.

``FUZZ13_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import test_op_registry_all as registry_all
from fuzzing import cached_mesh, fuzz
from gradcheck import check_grad
from helpers import random_layout
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import like_kind

pytestmark = pytest.mark.filterwarnings(
    "ignore::RuntimeWarning",
    "ignore::shardarray.errors.GatherWarning",
    "ignore::shardarray.linalg.ReplicatedFallbackWarning",
)

ENV = "FUZZ13_EXAMPLES"
EPS = 1e-6
MESHES = ({"row": 2, "col": 2}, {"p": 3, "q": 2}, {"dep": 2, "row": 2, "col": 2})
SIDES = (0, 1, 1, 2, 3, 5, 7)


# --------------------------------------------------------------------------------------------- checks


def _relaid(params, rng: np.random.Generator):
    """Every leaf of ``params`` moved to a random layout of its own mesh, of its own kind."""
    leaves, treedef = sa.tree.tree_flatten(params)
    moved = [like_kind(sa.relayout(p, random_layout(rng, p.mesh, p.dims)), p) for p in leaves]
    return sa.tree.tree_unflatten(treedef, moved)


def _outputs(out) -> list:
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    return [y for y in items if isinstance(y, sa.ShardArray) and y.dtype.kind in "fc"]


def _weights(ys, rng: np.random.Generator) -> list:
    ws = []
    for y in ys:
        v = rng.standard_normal(y.shape)
        if y.dtype.kind == "c":
            v = v + 1j * rng.standard_normal(y.shape)
        ws.append(xp.asarray(v, device=y.mesh) if y.positional else sa.asarray(v, dims=y.dims, mesh=y.mesh))
    return ws


def _weighted_loss(op, ws):
    """``sum_k real(sum(op(p)[k] * w_k))`` over the floating outputs of ``op``."""

    def loss(p):
        total = None
        for y, w in zip(_outputs(op(p)), ws):
            z = y * w
            z = sa.real(z) if z.dtype.kind == "c" else z
            s = xp.sum(z) if z.positional else z.sum()
            total = s if total is None else total + s
        return total

    return loss


def _fd_check(loss, make, values: list, grads: list, rng: np.random.Generator, what: str) -> None:
    """The gradients along a random direction against central differences of ``loss`` (``make``: the parameters'
    values -> the parameters in their layouts). A loss that is NaN (a mean over no entries) checks nothing."""
    direction = [rng.standard_normal(v.shape) for v in values]
    up = float(loss(make([v + EPS * d for v, d in zip(values, direction)])))
    down = float(loss(make([v - EPS * d for v, d in zip(values, direction)])))
    if not all(v.size for v in values) or math.isnan(up) or math.isnan(down):
        return
    fd = (up - down) / (2 * EPS)
    analytic = sum(float(np.sum(np.asarray(g.numpy()) * d)) for g, d in zip(grads, direction))
    rounding = 8 * np.finfo(np.float64).eps * max(abs(up), abs(down)) / EPS
    np.testing.assert_allclose(analytic, fd, rtol=1e-5, atol=1e-7 + rounding, err_msg=what)


def _draw_shape(rng: np.random.Generator, max_dims: int = 3) -> tuple:
    return tuple(int(s) for s in rng.choice(SIDES, int(rng.integers(0, max_dims + 1))))


# ------------------------------------------------------------------------ 1. the registry on random layouts


@fuzz(30, ENV)
@given(st.sampled_from(sorted(registry_all.DIFFERENTIABLE)), st.sampled_from(MESHES), st.integers(0, 2**16))
def test_registry_ops_on_random_layouts(name, shape, seed):
    """Each differentiable op of the registry, its parameters moved to random layouts (uneven, some blocks empty
    on the 3x2 and 2x2x2 meshes): central differences, and each gradient in its parameter's dims, layout, dtype."""
    mesh = cached_mesh(shape)
    rng = np.random.default_rng(seed)
    for k, (op, params) in enumerate(registry_all.DIFFERENTIABLE[name](mesh)):
        params = _relaid(params, rng)
        check_grad(registry_all._weighted_loss(op, params), params, seed=k, rtol=1e-5, atol=1e-7, directions=1)


# ------------------------------------------------------------------ 2. positional arrays: axes and broadcasting


def _axis(rng, nd):
    a = int(rng.integers(nd))
    return a - nd if rng.random() < 0.5 else a


def _axes(rng, nd):
    """None, one axis or a tuple of them (possibly empty), each negative or not."""
    c = rng.random()
    if c < 0.15 or (not nd and c < 0.5):
        return None
    if c < 0.5:
        return _axis(rng, nd)
    picked = sorted(rng.choice(nd, int(rng.integers(0, nd + 1)), replace=False).tolist())
    return tuple(a - nd if rng.random() < 0.5 else a for a in picked)


def _reduced(shape, axis):
    axes = range(len(shape)) if axis is None else [axis] if isinstance(axis, int) else axis
    return [shape[a] for a in axes]


def _cplx(p):
    """A complex array whose real and imaginary parts both move with ``p``."""
    z = p.astype("complex128")
    return z * (1 + 0.5j) + z * z * 0.25j


def _reduction(name, needs_entries=False, complex_too=False):
    def build(shape, rng):
        axis, keepdims = _axes(rng, len(shape)), bool(rng.random() < 0.5)
        if needs_entries and 0 in _reduced(shape, axis):
            return None
        kw = {"axis": axis, "keepdims": keepdims}
        if name in ("var", "std") and rng.random() < 0.5:
            kw["correction"] = 1
        fn = getattr(xp, name)
        if complex_too and rng.random() < 0.5:
            return f"{name}(complex, {kw})", lambda p: fn(_cplx(p), **kw)
        return f"{name}({kw})", lambda p: fn(p, **kw)

    return build


def _nan_reduction(name):
    def build(shape, rng):
        axis = _axis(rng, len(shape)) if rng.random() < 0.8 else None
        if name in ("nanmax", "nanmedian") and 0 in shape:
            return None
        kw = {"axis": axis, "keepdims": bool(rng.random() < 0.5)}
        fn = getattr(xp, name)
        return f"{name}({kw})", lambda p: fn(xp.where(xp.abs(p) > 1.2, xp.nan, p), **kw)

    return build


def _scan(shape, rng):
    axis, initial = _axis(rng, len(shape)), bool(rng.random() < 0.5)
    fn = xp.cumulative_sum if rng.random() < 0.5 else xp.cumulative_prod
    return f"{fn.__name__}({axis}, {initial})", lambda p: fn(p, axis=axis, include_initial=initial)


def _sort(shape, rng):
    axis, descending = _axis(rng, len(shape)), bool(rng.random() < 0.5)
    return f"sort({axis}, {descending})", lambda p: xp.sort(p, axis=axis, descending=descending)


def _vector_norm(shape, rng):
    axis, keepdims = _axes(rng, len(shape)), bool(rng.random() < 0.5)
    ord_ = [2, 1, 3, math.inf, -math.inf][int(rng.integers(5))]
    if ord_ == -math.inf and 0 in _reduced(shape, axis):
        return None
    return f"vector_norm({axis}, {ord_}, {keepdims})", lambda p: xp.linalg.vector_norm(
        _cplx(p) if ord_ == 1 else p, axis=axis, ord=ord_, keepdims=keepdims
    )


def _matrix_norm(shape, rng):
    if len(shape) < 2 or 0 in shape:
        return None
    ord_, keepdims = ["fro", "nuc", 1, -1, 2, math.inf][int(rng.integers(6))], bool(rng.random() < 0.5)
    return f"matrix_norm({ord_}, {keepdims})", lambda p: xp.linalg.matrix_norm(p, ord=ord_, keepdims=keepdims)


def _quantile(shape, rng):
    if 0 in shape:
        return None
    axis = _axis(rng, len(shape)) if rng.random() < 0.8 else None
    method = ["linear", "midpoint", "nearest", "lower", "higher"][int(rng.integers(5))]
    q = [0.3, [0.2, 0.9]][int(rng.integers(2))]
    keepdims = bool(rng.random() < 0.5)
    return f"quantile({q}, {axis}, {method})", lambda p: xp.quantile(p, q, axis=axis, keepdims=keepdims, method=method)


def _expand_squeeze(shape, rng):
    nd = len(shape)
    ones = tuple(i - nd if rng.random() < 0.5 else i for i, s in enumerate(shape) if s == 1)
    left = nd - len(ones)  # the dims the squeeze leaves
    axis = int(rng.integers(-left - 1, left + 1))
    return f"expand_dims({axis}), squeeze({ones})", lambda p: xp.expand_dims(xp.squeeze(p, axis=ones), axis=axis)


def _moveaxis(shape, rng):
    src, dst = _axis(rng, len(shape)), _axis(rng, len(shape))
    return f"moveaxis({src}, {dst})", lambda p: xp.moveaxis(p, src, dst) * 1.5


def _reshape(shape, rng):
    n = math.prod(shape)
    options = [(n,), (-1,), (1, n), (n, 1, 1)] + ([(2, -1)] if n and n % 2 == 0 else [])
    new = options[int(rng.integers(len(options)))]
    return f"reshape{new}", lambda p: xp.reshape(p, new) * 1.5


def _concat_stack(shape, rng):
    axis, new = _axis(rng, len(shape)), int(rng.integers(-len(shape) - 1, len(shape) + 1))
    return f"concat({axis}), stack({new})", lambda p: xp.stack(
        [xp.concat([p, p * p], axis=axis), xp.concat([xp.sin(p), p], axis=axis)], axis=new
    )


def _broadcast_to(shape, rng):
    lead = tuple(int(s) for s in rng.integers(1, 3, int(rng.integers(0, 3))))
    target = lead + tuple(3 if s == 1 and rng.random() < 0.5 else s for s in shape)
    return f"broadcast_to{target}", lambda p: xp.broadcast_to(p, target)


def _binary(name):
    """``op(p, q)`` or ``op(q, p)``, ``q`` made from ``p`` with a suffix of its shape, some sides cut to 1."""

    def build(shape, rng):
        nd = len(shape)
        sub = tuple(1 if rng.random() < 0.4 else s for s in shape[nd - int(rng.integers(0, nd + 1)) :])
        first, fn = bool(rng.random() < 0.5), getattr(xp, name)

        def op(p):
            q = xp.sum(p, axis=tuple(range(nd - len(sub))))  # the trailing dims
            q = xp.sum(q, axis=tuple(i for i, s in enumerate(sub) if s == 1), keepdims=True) * 0.5 + 1.7
            p = xp.abs(p) + 0.5 if name == "pow" else p
            return fn(p, q) if first else fn(q, p)

        return f"{name}(other={sub}, first={first})", op

    return build


def _take(shape, rng):
    if 0 in shape:
        return None
    axis = _axis(rng, len(shape))
    idx = rng.integers(-shape[axis], shape[axis], int(rng.integers(0, 5)))
    return f"take({idx.tolist()}, {axis})", lambda p: xp.take(p, xp.asarray(idx, device=p.mesh), axis=axis)


def _getitem(shape, rng):
    key: list = []
    for s in shape:
        c = rng.random()
        if c < 0.3 and s:
            key.append(int(rng.integers(-s, s)))
        elif c < 0.6:
            start = int(rng.integers(-s - 1, s + 1)) if rng.random() < 0.5 else None
            key.append(slice(start, None, int(rng.choice([1, 2, -1, -2]))))
        elif c < 0.7:
            key += [None, slice(None)]
        else:
            key.append(slice(None))
    key_t = tuple(key)
    return f"p[{key_t}]", lambda p: p[key_t] * 1.5


def _fancy(shape, rng):
    if 0 in shape:
        return None
    i = rng.integers(-shape[0], shape[0], int(rng.integers(1, 5)))
    if len(shape) > 1 and rng.random() < 0.5:
        j = rng.integers(-shape[1], shape[1], len(i))
        return f"p[{i.tolist()}, {j.tolist()}]", lambda p: p[xp.asarray(i, device=p.mesh), xp.asarray(j, device=p.mesh)]
    return f"p[{i.tolist()}] and p[p > 0.1]", lambda p: (p[xp.asarray(i, device=p.mesh)], p[p > 0.1] ** 2)


def _tile_repeat(shape, rng):
    reps = tuple(int(r) for r in rng.integers(1, 3, int(rng.integers(1, len(shape) + 2))))
    axis, times = (_axis(rng, len(shape)) if rng.random() < 0.8 else None), int(rng.integers(0, 3))
    return f"tile({reps}), repeat({times}, {axis})", lambda p: (xp.tile(p, reps), xp.repeat(p, times, axis=axis))


def _pad_diff(shape, rng):
    widths = tuple((int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in shape)
    mode = "constant" if 0 in shape else ["constant", "edge", "symmetric", "wrap"][int(rng.integers(4))]
    axis, n = _axis(rng, len(shape)), int(rng.integers(0, 3))
    return f"pad({widths}, {mode}), diff({n}, {axis})", lambda p: (
        xp.pad(p, widths, mode=mode),
        xp.diff(p, n=n, axis=axis),
    )


def _softmax_top_k(shape, rng):
    dim = f"dim{int(rng.integers(len(shape)))}"
    k = int(rng.integers(1, shape[int(dim[3:])] + 1)) if shape[int(dim[3:])] else 0
    if not k:
        return f"softmax({dim})", lambda p: sa.softmax(p, dim)
    return f"softmax, logsumexp, top_k({k}) over {dim}", lambda p: (
        sa.softmax(p, dim),
        sa.logsumexp(p, dim),
        sa.top_k(p, k, dim)[0],
    )


def _vecdot_matmul(shape, rng):
    axis = _axis(rng, len(shape))
    if len(shape) < 2:
        return f"vecdot({axis})", lambda p: xp.vecdot(p, xp.cos(p), axis=axis)
    return f"vecdot({axis}), p @ p.mT", lambda p: (xp.vecdot(p, xp.cos(p), axis=axis), p @ p.mT)


def _unary(name):
    def build(shape, rng):
        fn = getattr(xp, name)
        if rng.random() < 0.5:
            return f"{name}(complex)", lambda p: fn(_cplx(p) * 0.3 + 0.5)
        return name, lambda p: fn(xp.abs(p) * 0.3 + 0.4)

    return build


#: name -> build(shape, rng) -> (description, op of a positional array) or None (not defined at that shape)
POSITIONAL = {
    "sum": _reduction("sum", complex_too=True),
    "mean": _reduction("mean", complex_too=True),
    "prod": _reduction("prod", complex_too=True),
    "max": _reduction("max", needs_entries=True),
    "min": _reduction("min", needs_entries=True),
    "var": _reduction("var", complex_too=True),
    "std": _reduction("std"),
    "nansum": _nan_reduction("nansum"),
    "nanmean": _nan_reduction("nanmean"),
    "nanvar": _nan_reduction("nanvar"),
    "nanmax": _nan_reduction("nanmax"),
    "nanprod": _nan_reduction("nanprod"),
    "nanmedian": _nan_reduction("nanmedian"),
    "scan": _scan,
    "sort": _sort,
    "vector_norm": _vector_norm,
    "matrix_norm": _matrix_norm,
    "quantile": _quantile,
    "expand_squeeze": _expand_squeeze,
    "moveaxis": _moveaxis,
    "reshape": _reshape,
    "concat_stack": _concat_stack,
    "broadcast_to": _broadcast_to,
    "add": _binary("add"),
    "multiply": _binary("multiply"),
    "divide": _binary("divide"),
    "maximum": _binary("maximum"),
    "pow": _binary("pow"),
    "atan2": _binary("atan2"),
    "hypot": _binary("hypot"),
    "logaddexp": _binary("logaddexp"),
    "take": _take,
    "getitem": _getitem,
    "fancy": _fancy,
    "tile_repeat": _tile_repeat,
    "pad_diff": _pad_diff,
    "softmax_top_k": _softmax_top_k,
    "vecdot_matmul": _vecdot_matmul,
    "exp": _unary("exp"),
    "log": _unary("log"),
    "sqrt": _unary("sqrt"),
    "tanh": _unary("tanh"),
    "reciprocal": _unary("reciprocal"),
}
#: ops defined only on arrays with at least one dim
NEEDS_DIMS = set(
    "scan sort moveaxis tile_repeat concat_stack take fancy pad_diff softmax_top_k vecdot_matmul nansum nanmean "
    "nanvar nanmax nanprod nanmedian quantile".split()
)


def _positional(mesh, values, layout):
    with sa.default_mesh(mesh):
        return sa.relayout(xp.asarray(values), layout)


def _distinct(rng, shape):
    """Values about 3/n apart (no ties), of either sign, in [-1.5, 1.5]."""
    n = math.prod(shape)
    return ((rng.permutation(n) - n / 2 + rng.uniform(-0.1, 0.1, n)) * (3.0 / max(n, 1))).reshape(shape)


@fuzz(60, ENV)
@given(st.sampled_from(sorted(POSITIONAL)), st.sampled_from(MESHES), st.integers(0, 2**16))
def test_positional_gradients_over_axes_keepdims_and_broadcasting(name, shape, seed):
    """A positional parameter of a random shape (sides 0 to 7, 0 to 3 dims) and layout: central differences, and the
    gradient a positional ``Array`` of the parameter's shape, dims order, layout and dtype."""
    mesh, rng = cached_mesh(shape), np.random.default_rng(seed)
    size = _draw_shape(rng)
    if name in NEEDS_DIMS and not size:
        size = (int(rng.choice(SIDES[1:])),)
    built = POSITIONAL[name](size, rng)
    if built is None:
        return
    what, op = built
    values = _distinct(rng, size)
    layout = random_layout(rng, mesh, tuple(f"dim{i}" for i in range(len(size))))
    p = _positional(mesh, values, layout)
    what = f"{what} of shape {size}, layout {layout} on {dict(shape)}"
    with sa.default_mesh(mesh):
        loss = _weighted_loss(op, _weights(_outputs(op(p)), rng))
        g = sa.grad(loss)(p)
        assert type(g) is xp.Array, (what, type(g))
        assert g.shape == p.shape and g.dims == p.dims and g.layout == p.layout and g.dtype == p.dtype, what
        _fd_check(loss, lambda v: _positional(mesh, v[0], layout), [values], [g], rng, what)


# ---------------------------------------------------------------- 3. named arrays broadcast against each other


def _einsum(x, y, rng):
    dims = tuple(dict.fromkeys(x.dims + y.dims))
    out = " ".join(d for d in dims if rng.random() < 0.5)
    return sa.einsum(f"{' '.join(x.dims)}, {' '.join(y.dims)} -> {out}", x, y)


#: binary ops of two named arrays (their dims differ: the result has the union)
NAMED_BINARY = {
    "add": lambda x, y, r: x + y * 2.0,
    "multiply": lambda x, y, r: x * y,
    "divide": lambda x, y, r: x / (y * y + 1.0),
    "maximum": lambda x, y, r: sa.maximum(x, y),
    "power": lambda x, y, r: (x * x + 0.5) ** y,
    "hypot": lambda x, y, r: sa.hypot(x, y),
    "where": lambda x, y, r: sa.where(x > 0, x * y, y),
    "clip": lambda x, y, r: sa.clip(x, y - 0.5, y + 0.5),
    "complex": lambda x, y, r: sa.real(_cplx(x) * sa.conj(_cplx(y))) + sa.abs(_cplx(x) + 2.0 * _cplx(y) + 0.1j),
    "einsum": _einsum,
}


def _some(rng, dims):
    return tuple(d for d in dims if rng.random() < 0.6) or None


def _one(rng, dims):
    return dims[int(rng.integers(len(dims)))]


#: ops of the binary op's result (one dim at least)
NAMED_THEN = {
    "sum": lambda z, r: z.sum(_some(r, z.dims)),
    "mean": lambda z, r: sa.mean(z, _some(r, z.dims)),
    "max": lambda z, r: sa.max(z, _some(r, z.dims)),
    "logsumexp": lambda z, r: sa.logsumexp(z, _some(r, z.dims)),
    "var": lambda z, r: sa.var(z, _some(r, z.dims), correction=0.5),
    "softmax": lambda z, r: sa.softmax(z, _some(r, z.dims) or z.dims[:1]),
    "cumsum": lambda z, r: sa.cumsum(z, _one(r, z.dims)),
    "sort": lambda z, r: sa.sort(z, _one(r, z.dims), descending=bool(r.random() < 0.5)),
    "roll": lambda z, r: sa.roll(z, _one(r, z.dims), int(r.integers(-3, 4))),
    "transpose": lambda z, r: z.transpose(*r.permutation(list(z.dims)).tolist()),
    "relayout": lambda z, r: sa.relayout(z, random_layout(r, z.mesh, z.dims)),
    "pad_isel": lambda z, r: sa.isel(sa.pad(z, {z.dims[0]: (1, 2)}), {z.dims[-1]: slice(None, None, -2)}),
    "merge_concat": lambda z, r: sa.concat([sa.merge_dims(z, z.dims, "m"), sa.merge_dims(z, z.dims, "m") * 2.0], "m"),
    "stack_broadcast": lambda z, r: sa.broadcast_to(sa.stack([z, z * 0.5], "s"), {"n": 2, "s": 2, **z.sizes}),
}


@fuzz(40, ENV)
@given(
    st.sampled_from(sorted(NAMED_BINARY)),
    st.sampled_from(sorted(NAMED_THEN)),
    st.sampled_from(MESHES),
    st.integers(0, 2**16),
)
def test_named_gradients_of_broadcast_operands(binary, then, shape, seed):
    """Named ``x`` and ``y`` with different dims (a subset of a, b, c each) in random layouts, a binary op (the
    result has the union of their dims) then another op: ``sa.grad`` (or ``sa.vjp`` with the cotangent in a random
    layout) against central differences, each gradient in its parameter's dims and layout, nothing pending."""
    mesh, rng = cached_mesh(shape), np.random.default_rng(seed)
    sizes = {d: int(rng.choice(SIDES)) for d in "abc"}
    dx = tuple(rng.permutation([d for d in "abc" if rng.random() < 0.6]).tolist()) or ("a",)
    dy = tuple(rng.permutation([d for d in "abc" if rng.random() < 0.6]).tolist())
    lx, ly = random_layout(rng, mesh, dx), random_layout(rng, mesh, dy)
    values = [rng.uniform(-2, 2, [sizes[d] for d in dx]), rng.uniform(-2, 2, [sizes[d] for d in dy])]
    op_seed, use_vjp = int(rng.integers(2**30)), bool(rng.random() < 0.3)
    what = f"{binary} then {then}: x {dx} {lx}, y {dy} {ly}, sizes {sizes} on {dict(shape)}, vjp={use_vjp}"

    def make(v):
        return {
            "x": sa.asarray(v[0], dims=dx, mesh=mesh, layout=lx),
            "y": sa.asarray(v[1], dims=dy, mesh=mesh, layout=ly),
        }

    def op(p):
        r = np.random.default_rng(op_seed)
        z = NAMED_BINARY[binary](p["x"], p["y"], r)
        return NAMED_THEN[then](z, r) if z.dims else z

    params = make(values)
    (w,) = _weights(_outputs(op(params)), rng)
    loss = _weighted_loss(op, [w])
    if use_vjp:
        _, pullback = sa.vjp(op, params)
        grads = pullback(sa.relayout(w, random_layout(rng, mesh, w.dims)))
    else:
        grads = sa.grad(loss)(params)
    for k in "xy":
        g, p = grads[k], params[k]
        assert type(g) is sa.ShardArray and g.dims == p.dims and g.layout == p.layout and not g.pending, (what, k)
    _fd_check(loss, make, values, [grads["x"], grads["y"]], rng, what)


# ------------------------------------------------------------- 4. ops without a gradient, on random layouts


@fuzz(40, ENV)
@given(
    st.sampled_from(sorted(n for n, (k, _) in registry_all.NONDIFFERENTIABLE.items() if k != "custom")),
    st.sampled_from(MESHES),
    st.integers(0, 2**16),
)
def test_nondifferentiable_ops_on_random_layouts(name, shape, seed):
    """An op without a gradient given a traced input in a random layout: a floating result raises ``sa.TapeError``
    naming the op (and ``sa.stop_gradient`` is the way out); integer/bool results are constants of the loss, whose
    gradient is still exact; integer-only ops refuse a floating operand with ``sa.DTypeError``."""
    mesh, rng = cached_mesh(shape), np.random.default_rng(seed)
    kind, build = registry_all.NONDIFFERENTIABLE[name]
    op, params, *rest = build(mesh)
    params = _relaid(params, rng)
    if kind == "raises":
        with pytest.raises(sa.TapeError, match=rest[0]):
            sa.grad(lambda p: registry_all._total(op(p)))(params)
        g = sa.grad(lambda p: registry_all._total(op(sa.stop_gradient(p))) * 0.0 + registry_all._total(p))(params)
        np.testing.assert_array_equal(np.asarray(g.numpy()), np.ones(params.shape))
        return
    if kind == "usable" or registry_all._is_int_out(op(params)):
        loss, w0 = registry_all._usable_loss(op, params)
    else:
        loss, w0 = registry_all._float_const_loss(op, params)
    g = check_grad(loss, params, directions=1)
    np.testing.assert_allclose(np.asarray(g.numpy()), np.asarray(w0.numpy()), rtol=1e-12, atol=1e-12)
    if kind == "int_input":
        with pytest.raises(sa.DTypeError):
            sa.grad(lambda p: registry_all._total(rest[0](p)))(params)


# ----------------------------------------------------------------------------------------- 5. conventions

#: 7 entries: split over 2x2x2 one block is empty, over 3x2 the blocks are uneven
TIES = np.array([1.0, 0.0, 1.0, 2.0, 1.0, 0.0, 2.0])
WEIGHTS = np.arange(1.0, 8.0)
CONVENTION_MESHES = [{"d": 1}, {"p": 3, "q": 2}, {"dep": 2, "row": 2, "col": 2}]


def _split_vector(mesh, values, positional):
    if positional:
        return _positional(mesh, values, {"dim0": mesh.axis_names})
    return sa.asarray(values, dims=("i",), mesh=mesh, layout={"i": mesh.axis_names})


@pytest.mark.parametrize("positional", [False, True], ids=["named", "positional"])
@pytest.mark.parametrize("shape", CONVENTION_MESHES, ids=str)
def test_conventions_at_ties_with_empty_blocks(shape, positional):
    """At ties, as ``sa.value_and_grad`` documents (JAX's conventions; ``clip`` as PyTorch's ``clamp``): the sort
    VJP follows the stable order (descending too: equal entries keep their order), ``top_k`` takes the lower index,
    a ``max`` reduction shares the cotangent equally among its maxima, ``maximum`` gives each side half,
    ``maximum(p, p)`` the whole to ``p``, ``clip`` all of it to ``x`` at a bound, ``where`` to the branch taken,
    ``abs`` 0 at 0 (PyTorch's; JAX's real ``abs`` takes 1); the same on one device and on split layouts with empty
    blocks."""
    mesh = cached_mesh(shape)
    x = _split_vector(mesh, TIES, positional)
    dim = x.dims[0]
    with sa.default_mesh(mesh):
        w = _split_vector(mesh, WEIGHTS, positional)
        wk = xp.asarray(WEIGHTS[:3]) if positional else sa.asarray(WEIGHTS[:3], dims=("k",), mesh=mesh)
        order = np.argsort(TIES, kind="stable")
        desc = np.argsort(-TIES, kind="stable")
        cases = {
            "sort": (lambda p: sa.sort(p, dim) * w, np.zeros(7)),
            "sort descending": (lambda p: sa.sort(p, dim, descending=True) * w, np.zeros(7)),
            "top_k": (lambda p: sa.top_k(p, 3, dim)[0] * wk, np.array([3.0, 0, 0, 1, 0, 0, 2])),
            "max": (lambda p: sa.max(p), np.array([0, 0, 0, 0.5, 0, 0, 0.5])),
            "maximum": (lambda p: sa.maximum(p, 1.0), np.array([0.5, 0, 0.5, 1, 0.5, 0, 1])),
            "maximum(p, p)": (lambda p: sa.maximum(p, p), np.ones(7)),
            "minimum": (lambda p: sa.minimum(p, 0.0), np.array([0, 0.5, 0, 0, 0, 0.5, 0])),
            "clip": (lambda p: sa.clip(p, 0.0, 1.0), np.array([1.0, 1, 1, 0, 1, 1, 0])),
            "where": (lambda p: sa.where(p > 0.5, p * 3.0, p * 0.0), np.array([3.0, 0, 3, 3, 3, 0, 3])),
            "abs": (lambda p: sa.abs(p - 1.0), np.array([0.0, -1, 0, 1, 0, -1, 1])),
        }
        cases["sort"][1][order] = WEIGHTS
        cases["sort descending"][1][desc] = WEIGHTS
        for name, (op, expected) in cases.items():
            g = sa.grad(lambda p, op=op: registry_all._total(op(p)))(x)
            assert type(g) is type(x) and g.layout == x.layout, name
            np.testing.assert_allclose(np.asarray(g.numpy()), expected, rtol=1e-12, atol=0, err_msg=name)


@pytest.mark.parametrize("shape", CONVENTION_MESHES[1:], ids=str)
def test_has_aux_with_a_tree_of_positional_and_named_leaves(shape):
    """``value_and_grad(has_aux=True)`` of a nested tree (dict of list of tuple) of positional and named leaves in
    uneven layouts, with an integer array as a later argument: each gradient of its leaf's kind, shape, layout and
    dtype, equal to the one-device gradient; the aux comes back as the function returned it."""
    rng = np.random.default_rng(4)
    a, n, h, ids = rng.standard_normal((5, 3)), rng.standard_normal(7), rng.standard_normal(3), np.array([4, 0, 4])

    def tree(mesh, split):
        with sa.default_mesh(mesh):
            pa = _positional(mesh, a, {"dim0": mesh.axis_names} if split else {})
            pn = sa.asarray(n, dims=("i",), mesh=mesh, layout={"i": mesh.axis_names[::-1]} if split else {})
            return {"w": [pa, (pn, xp.astype(xp.asarray(h), xp.float32))]}

    def loss(t, idx):
        pa, (pn, ph) = t["w"]
        rows = xp.take(pa, idx, axis=0)
        value = xp.sum(xp.tanh(rows) * ph.astype(xp.float64)) * (pn**2).mean() + sa.logsumexp(pn, "i")
        return value, {"rows": rows, "count": xp.sum(idx)}

    mesh = cached_mesh(shape)
    params = tree(mesh, True)
    with sa.default_mesh(mesh):
        (value, aux), grads = sa.value_and_grad(loss, has_aux=True)(params, xp.asarray(ids))
    assert type(aux["rows"]) is xp.Array and aux["rows"].shape == (3, 3) and int(aux["count"]) == 8
    one = cached_mesh({"d": 1})
    with sa.default_mesh(one):
        expected = sa.grad(lambda t: loss(t, xp.asarray(ids))[0])(tree(one, False))
    flat, _ = sa.tree.tree_flatten(grads)
    for g, p, e in zip(flat, sa.tree.tree_flatten(params)[0], sa.tree.tree_flatten(expected)[0]):
        assert type(g) is type(p) and g.shape == p.shape and g.layout == p.layout and g.dtype == p.dtype, (g, p)
        np.testing.assert_allclose(np.asarray(g.numpy(), dtype=np.float64), e.numpy(), rtol=1e-6, atol=1e-6)
    with sa.default_mesh(one):
        np.testing.assert_allclose(float(value), float(loss(tree(one, False), xp.asarray(ids))[0]), rtol=1e-12)


def test_integer_and_complex_parameters_are_refused():
    """As ``jax.grad`` (a ``TypeError`` for integer inputs; ``allow_int`` aside): an integer or complex leaf is
    refused with ``sa.DTypeError`` (a ``TypeError``) naming it, anywhere in the tree; integers pass as later
    arguments, and a parameter the loss does not reach gets a zero gradient of its kind and layout."""
    mesh = cached_mesh({"p": 3, "q": 2})
    with sa.default_mesh(mesh):
        x = _positional(mesh, np.arange(5.0), {"dim0": ("q", "p")})
        ints = xp.asarray(np.arange(5))
        for bad in (ints, {"x": x, "k": ints}, [x, xp.astype(x, xp.complex128)]):
            with pytest.raises(sa.DTypeError, match=r"parameter [01] "):
                sa.grad(lambda t: xp.sum(x))(bad)
        g = sa.grad(lambda t, k: xp.sum(t * xp.astype(k, xp.float64)))(x, ints)
        np.testing.assert_array_equal(g.numpy(), np.arange(5.0))
        unused = sa.grad(lambda t: xp.sum(t["x"]))({"x": x, "y": x * 2.0})
        assert type(unused["y"]) is xp.Array and unused["y"].layout == x.layout
        np.testing.assert_array_equal(unused["y"].numpy(), np.zeros(5))


def test_in_place_writes_inside_the_gradient():
    """``x op= v`` is differentiable and every name bound to ``x`` sees the new value, as in NumPy (a parameter's
    own name is rebound, as JAX's arrays always are); ``x[idx] = v`` into a traced array, or of a traced value
    into a constant (``np.copyto``, NumPy's ``out=`` too), is refused with ``sa.TapeError`` (no silent zero
    gradient: build it with ``where``)."""
    mesh = cached_mesh({"dep": 2, "row": 2, "col": 2})
    values = np.arange(1.0, 8.0)
    with sa.default_mesh(mesh):
        x = _positional(mesh, values, {"dim0": mesh.axis_names})

        def aliased(p):
            q = p * 1.0
            alias = q
            alias += p * p
            alias *= 0.5
            return xp.sum(q * q)

        value, g = sa.value_and_grad(aliased)(x)
        expected = 0.5 * (values + values**2)
        np.testing.assert_allclose(float(value), float(np.sum(expected**2)), rtol=1e-12)
        np.testing.assert_allclose(g.numpy(), 2 * expected * 0.5 * (1 + 2 * values), rtol=1e-12)

        def write_traced(p):
            q = p * 1.0
            q[xp.asarray([0, 6])] = 0.0
            return xp.sum(q)

        def write_into_constant(p):
            c = xp.zeros(7)
            c[1:3] = p[:2]
            return xp.sum(c)

        def mask_write(p):
            q = p * 1.0
            q[q > 3.0] = 0.0
            return xp.sum(q)

        def numpy_out(p):  # NumPy's out= is a write into the output array
            c = xp.zeros(7)
            np.add(p, 1.0, out=c)
            return xp.sum(c)

        def numpy_copyto(p):
            c = xp.zeros(7)
            np.copyto(c, p)
            return xp.sum(c)

        for fn in (write_traced, write_into_constant, mask_write, numpy_out, numpy_copyto):
            with pytest.raises(sa.TapeError, match=r"inside sa\.value_and_grad|no gradient rule"):
                sa.grad(fn)(x)
        g = sa.grad(lambda p: xp.sum(xp.where(p > 3.0, 0.0, p)))(x)  # the way that is differentiable
        np.testing.assert_array_equal(g.numpy(), (values <= 3.0).astype(float))


@pytest.mark.parametrize("shape", CONVENTION_MESHES[1:], ids=str)
def test_the_cases_of_differentiable_ops_without_a_rule_are_refused(shape):
    """``svd`` is differentiable for real matrices (thin, or full of a square one; ``pinv`` for complex ones
    too); a complex matrix, and ``full_matrices=True`` of a non-square one (JAX and PyTorch refuse it too),
    raise ``sa.TapeError``, never a silent zero gradient; ``sa.stop_gradient`` is the way out. ``abs``/``sign``
    at 0 and ``std`` of a constant slice take 0 (``sa.value_and_grad``'s documented choices)."""
    mesh = cached_mesh(shape)
    values = np.random.default_rng(2).standard_normal((4, 3))
    named = sa.asarray(values, dims=("i", "j"), mesh=mesh, layout={"i": mesh.axis_names[:1], "j": mesh.axis_names[1:]})
    with sa.default_mesh(mesh):
        pos = _positional(mesh, values, {"dim0": mesh.axis_names})
        refused = [
            (named, lambda p: sa.real(sa.linalg.svd(p * (1 + 1j), ("i", "j")).U).sum()),
            (named, lambda p: sa.linalg.svd(p, ("i", "j"), full_matrices=True).U.sum()),
            (pos, lambda p: xp.sum(xp.linalg.svd(p)[0])),  # the standard's default: full_matrices=True
            (pos, lambda p: xp.sum(np.linalg.svd(p)[1])),
        ]
        for k, (x, loss) in enumerate(refused):
            with pytest.raises(sa.TapeError, match="no gradient rule"):
                sa.grad(loss)(x)
            g = sa.grad(lambda p, loss=loss: loss(sa.stop_gradient(p)) * 0.0 + registry_all._total(p))(x)
            np.testing.assert_array_equal(np.asarray(g.numpy()), np.ones(x.shape), err_msg=str(k))
        zero = _positional(mesh, np.zeros((4, 3)), {"dim1": mesh.axis_names})
        for loss in (lambda p: xp.sum(xp.abs(p)), lambda p: xp.sum(xp.sign(p)), lambda p: xp.sum(xp.std(p, axis=0))):
            np.testing.assert_array_equal(sa.grad(loss)(zero).numpy(), np.zeros((4, 3)))


def test_nanstd_and_complex_std_have_zero_gradient_where_the_spread_is_zero():
    """As real ``std`` (PyTorch's choice): 0 where the spread is 0 (a constant column, one non-NaN entry), not the
    ``0 * inf`` NaN of ``sqrt``'s derivative; elsewhere as before (against float64 finite differences)."""
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        a = xp.asarray(np.array([[1.0, np.nan, 4.0], [2.0, 3.0, 4.0]]))
        g = sa.grad(lambda p: xp.sum(xp.nanstd(p, axis=0)))(a).numpy()
        np.testing.assert_allclose(g, [[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]])
        b = np.array([[1.0, 2.0, 4.0], [2.0, 5.0, 4.0]])
        g = sa.grad(lambda p: xp.sum(xp.std(p * (1 + 2j), axis=0)))(xp.asarray(b)).numpy()
        assert np.isfinite(g).all()
        eps, fd = 1e-6, np.zeros_like(b)
        for idx in np.ndindex(b.shape):
            e = np.zeros_like(b)
            e[idx] = eps
            fd[idx] = (np.std((b + e) * (1 + 2j), axis=0).sum() - np.std((b - e) * (1 + 2j), axis=0).sum()) / (2 * eps)
        fd[:, 2] = 0.0  # (the constant column: 0 by the convention, the one-sided derivatives are +-sqrt(5)/2)
        np.testing.assert_allclose(g, fd, atol=1e-6)
