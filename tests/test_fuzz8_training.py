"""A differential fuzz of the training stack on split meshes (1, 2x2, 4, 2x2x2, 3x2) and random layouts.

* ``sa.value_and_grad`` / ``sa.grad`` / ``sa.vjp`` of random compositions of differentiable ops (elementwise,
  reductions, einsum, transposes and reshapes, slicing gets and concatenation, ``where``, softmax/logsumexp,
  layer norm), of named and positional (``shardarray.array_api``) parameters in nested dict/list/tuple trees, in
  float64/float32/float16/bfloat16, against float64 central finite differences of a NumPy reference of the same
  composition on the gathered values; each gradient keeps its parameter's kind, dims, layout and dtype. Ops
  without a gradient raise ``sa.TapeError`` on a traced input.
* ``sa.optim`` (SGD with momentum/Nesterov/weight decay, Adam/AdamW, ``clip_by_global_norm``, ``DynamicLossScale``,
  master copies of 16-bit parameters, ``cosine_schedule``) against a NumPy implementation of the documented update
  for several steps; states keep kinds and layouts; bad input gives typed errors.
* ``sa.nn``: layer norm, attention and the tiny transformer's gradients against finite differences, and the same
  loss on several meshes and strategies for the same parameters.

Every case checks that nothing larger than a few elements is gathered (``sa.comm_log``). Regressions of the bugs
the fuzz found close the file.

``FUZZ8_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

FLOATS = ("float64", "float32", "float16", "bfloat16")


def _np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _tol(dtype) -> float:
    """The relative tolerance of a gradient computed in ``dtype`` against a float64 reference."""
    return {"float64": 1e-6, "float32": 2e-3, "float16": 6e-2, "bfloat16": 2.5e-1}[np.dtype(dtype).name]


def _f64(x) -> np.ndarray:
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x).astype(np.float64)


@st.composite
def named(draw, mesh, sizes: dict, dtype: str, scale: float = 1.0, seed_name: str = ""):
    """A named array of ``sizes`` on ``mesh`` in a random layout, random normal values (rounded to ``dtype``)."""
    dims = tuple(sizes)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = (rng.standard_normal(tuple(sizes.values())) * scale).astype(_np_dtype(dtype))
    lay = draw(layouts(mesh, dims))
    return sa.asarray(a, dims=dims, mesh=mesh, layout=lay)


def _no_big_gather(log, limit: int = 8):
    """No ``allgather`` of more than ``limit`` elements per device."""
    big = [r for r in log.records if r.op == "allgather" and r.elements > limit]
    assert not big, big


def _gathered(log) -> int:
    """The elements every ``allgather`` of ``log`` assembled (its whole result: a shard times the group)."""
    return sum(r.elements * r.group_size for r in log.records if r.op == "allgather")


def _bounded_gathers(log, leaves, factor: int = 3):
    """Gathers no more than ``factor`` times the parameters' elements: returning a gradient to a replicated
    parameter's layout gathers it (as the forward pass had to), but nothing gathers beyond that scale."""
    limit = factor * sum(math.prod(x.shape) for x in leaves) + 64
    assert _gathered(log) <= limit, (_gathered(log), limit, log.records)


def _fd_grads(np_fn, values: list[np.ndarray], eps: float = 1e-6) -> list[np.ndarray]:
    """Central finite differences of ``np_fn(values)`` (float64) with respect to every element of every value."""
    out = []
    for k, v in enumerate(values):
        g = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            up = [w.copy() for w in values]
            down = [w.copy() for w in values]
            up[k][idx] += eps
            down[k][idx] -= eps
            g[idx] = (np_fn(up) - np_fn(down)) / (2 * eps)
        out.append(g)
    return out


def _check_like(g, p):
    """``g`` has ``p``'s kind, dims, sizes, layout and dtype, and no pending sum."""
    assert type(g) is type(p), (type(g), type(p))
    assert g.dims == p.dims and g.shape == p.shape, (g.sizes, p.sizes)
    assert g.layout == p.layout, (g.layout, p.layout)
    assert g.dtype == p.dtype, (g.dtype, p.dtype)
    assert not g.pending


def _close(got, expected, dtype, what=""):
    got, expected = _f64(got), np.asarray(expected, dtype=np.float64)
    tol = _tol(dtype)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale, err_msg=what)


# ================================================================================ gradients: named parameters

# each stage maps h (dims i, j) to an array of dims i, j; (sa version, NumPy version on (i, j)-ordered values)
# P: the parameters {"a": (i, j), "mats": [b (j, k), (b2 (k, j),)], "norm": {"g": (j,), "c": (i,)}}


def _np_softmax(h, axis):
    e = np.exp(h - h.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_lse(h, axis):
    m = h.max(axis=axis, keepdims=True)
    return m + np.log(np.exp(h - m).sum(axis=axis, keepdims=True))


def _np_layer_norm(h, g, c, axis, eps=1e-5):
    mu = h.mean(axis=axis, keepdims=True)
    var = ((h - mu) ** 2).mean(axis=axis, keepdims=True)
    return (h - mu) / np.sqrt(var + eps) * g + c


def _roll_sa(h, dim):
    n = h.sizes[dim]
    if n < 2:
        return h * 1.0
    return sa.concat([h.isel({dim: slice(1, None)}), h.isel({dim: slice(0, 1)})], dim)


NAMED_STAGES = {
    "sin": (lambda h, P: sa.sin(h), lambda h, P: np.sin(h)),
    "tanh": (lambda h, P: sa.tanh(h * 0.5), lambda h, P: np.tanh(h * 0.5)),
    "square": (lambda h, P: h * h * 0.25, lambda h, P: h * h * 0.25),
    "exp": (lambda h, P: sa.exp(h * 0.3), lambda h, P: np.exp(h * 0.3)),
    "ratio": (lambda h, P: h / (h * h + 1.0), lambda h, P: h / (h * h + 1.0)),
    "sqrt": (lambda h, P: sa.sqrt(h * h + 1.0), lambda h, P: np.sqrt(h * h + 1.0)),
    "softmax_i": (lambda h, P: sa.softmax(h, "i"), lambda h, P: _np_softmax(h, 0)),
    "softmax_j": (lambda h, P: sa.softmax(h, "j"), lambda h, P: _np_softmax(h, 1)),
    "lse_i": (lambda h, P: h - sa.logsumexp(h, "i"), lambda h, P: h - _np_lse(h, 0)),
    "lse_ij": (lambda h, P: h * sa.logsumexp(h * 0.5) * 0.1, lambda h, P: h * _np_lse((h * 0.5).ravel(), 0) * 0.1),
    "mean_j": (lambda h, P: h - h.mean("j"), lambda h, P: h - h.mean(axis=1, keepdims=True)),
    "sum_i": (lambda h, P: h * h.sum("i") * 0.2, lambda h, P: h * h.sum(axis=0, keepdims=True) * 0.2),
    "var_i": (lambda h, P: h * sa.var(h, "i"), lambda h, P: h * h.var(axis=0, keepdims=True)),
    "bias_c": (lambda h, P: h + P["norm"]["c"], lambda h, P: h + P["norm"]["c"][:, None]),
    "scale_g": (lambda h, P: h * P["norm"]["g"], lambda h, P: h * P["norm"]["g"][None, :]),
    "einsum": (
        lambda h, P: sa.einsum("i j, j k, k j -> i j", h, P["mats"][0], P["mats"][1][0]) * 0.3,
        lambda h, P: np.einsum("ij,jk,kj->ij", h, P["mats"][0], P["mats"][1][0]) * 0.3,
    ),
    "matmul": (
        lambda h, P: sa.einsum(h @ P["mats"][0], P["mats"][1][0], out=("i", "j")) * 0.3,
        lambda h, P: (h @ P["mats"][0] @ P["mats"][1][0]) * 0.3,
    ),
    "where": (
        lambda h, P: sa.where(h > 0.1, h, h * 0.3 + P["norm"]["c"]),
        lambda h, P: np.where(h > 0.1, h, h * 0.3 + P["norm"]["c"][:, None]),
    ),
    "maximum": (lambda h, P: sa.maximum(h, P["norm"]["g"] * 0.5), lambda h, P: np.maximum(h, P["norm"]["g"] * 0.5)),
    "layer_norm": (
        lambda h, P: sa.nn.layer_norm(h, P["norm"]["g"], P["norm"]["c"] * 0.0 + 0.1, dim="j"),
        lambda h, P: _np_layer_norm(h, P["norm"]["g"][None, :], 0.1, 1),
    ),
    "transpose": (lambda h, P: h.transpose("j", "i") * 1.5, lambda h, P: h * 1.5),
    "roll_i": (lambda h, P: _roll_sa(h, "i"), lambda h, P: np.roll(h, -1, axis=0)),
    "roll_j": (lambda h, P: _roll_sa(h, "j"), lambda h, P: np.roll(h, -1, axis=1)),
    "relayout": (lambda h, P: sa.relayout(h, {}) * 1.0, lambda h, P: h),
}


def _named_loss_sa(stages, P):
    h = P["a"]
    for s in stages:
        h = NAMED_STAGES[s][0](h, P)
    return (sa.sin(h) + h * h * 0.1).sum()


def _named_loss_np(stages, P):
    h = P["a"]
    for s in stages:
        h = NAMED_STAGES[s][1](h, P)
    return float((np.sin(h) + h * h * 0.1).sum())


@fuzz(120)
@given(st.data())
def test_fuzz_named_gradients_match_finite_differences(data):
    mesh = data.draw(meshes())
    dtype = data.draw(st.sampled_from(FLOATS))
    i, j, k = (data.draw(st.integers(1, 5)) for _ in range(3))
    low = np.dtype(_np_dtype(dtype)).itemsize < 4
    stages = data.draw(st.lists(st.sampled_from(sorted(NAMED_STAGES)), min_size=1, max_size=2 if low else 4))
    P = {
        "a": data.draw(named(mesh, {"i": i, "j": j}, dtype)),
        "mats": [
            data.draw(named(mesh, {"j": j, "k": k}, dtype, 0.5)),
            (data.draw(named(mesh, {"k": k, "j": j}, dtype, 0.5)),),
        ],
        "norm": {"g": data.draw(named(mesh, {"j": j}, dtype)), "c": data.draw(named(mesh, {"i": i}, dtype))},
    }
    leaves, treedef = sa.tree.tree_flatten(P)
    values = [_f64(x) for x in leaves]

    def np_fn(vals):
        return _named_loss_np(stages, sa.tree.tree_unflatten(treedef, vals))

    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("error", sa.GatherWarning)
        loss, grads = sa.value_and_grad(lambda p: _named_loss_sa(stages, p))(P)
    _bounded_gathers(log, leaves, 2 * (len(stages) + 1))
    assert loss.dims == () and loss.dtype == leaves[0].dtype
    g_leaves, g_def = sa.tree.tree_flatten(grads)
    assert g_def == treedef
    expected = _fd_grads(np_fn, values)
    # (central differences with step 1e-6 are off by about 1e-16 |loss| / 1e-6 from rounding: a chain such as
    # h * var(h) three times reaches |loss| ~ 1e15, where that is beyond the gradient's tolerance; skip those)
    rounding = 1e-9 * abs(np_fn(values))
    for g, p, e in zip(g_leaves, leaves, expected):
        _check_like(g, p)
        if "maximum" in stages or "where" in stages:  # (a kink within eps of a value: skip)
            continue
        if rounding > _tol(dtype) * max(1.0, float(np.max(np.abs(e), initial=0.0))):
            continue
        _close(g, e, dtype, f"{stages} {dtype} {mesh.shape}")
    np.testing.assert_allclose(float(loss), np_fn(values), rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)


# =========================================================================== gradients: positional parameters

# each stage maps h (a 2-D positional array) to a 2-D array, as its NumPy twin does; Q = (A (m, n), [B (n, n)],
# {"v": (n,)}) as positional arrays (sa) or float64 NumPy arrays


def _pv(h, Q):
    return Q[2]["v"] if h.shape[-1] == Q[2]["v"].shape[0] else 0.5


POSITIONAL_STAGES = {
    "sin": (lambda h, Q: xp.sin(h), lambda h, Q: np.sin(h)),
    "tanh": (lambda h, Q: xp.tanh(h), lambda h, Q: np.tanh(h)),
    "exp": (lambda h, Q: xp.exp(h * 0.3), lambda h, Q: np.exp(h * 0.3)),
    "log1p": (lambda h, Q: xp.log1p(h * h), lambda h, Q: np.log1p(h * h)),
    "matmul": (
        lambda h, Q: h @ Q[1][0] * 0.5 if h.shape[-1] == Q[1][0].shape[0] else h,
        lambda h, Q: h @ Q[1][0] * 0.5 if h.shape[-1] == Q[1][0].shape[0] else h,
    ),
    "bias": (lambda h, Q: h + _pv(h, Q), lambda h, Q: h + _pv(h, Q)),
    "center": (
        lambda h, Q: h - xp.mean(h, axis=-1, keepdims=True),
        lambda h, Q: h - h.mean(axis=-1, keepdims=True),
    ),
    "sum0": (
        lambda h, Q: h * xp.sum(h, axis=0, keepdims=True) * 0.2,
        lambda h, Q: h * h.sum(axis=0, keepdims=True) * 0.2,
    ),
    "prod1": (
        lambda h, Q: h + xp.prod(xp.tanh(h), axis=1, keepdims=True),
        lambda h, Q: h + np.prod(np.tanh(h), axis=1, keepdims=True),
    ),
    "std0": (
        lambda h, Q: h * xp.std(h, axis=0, keepdims=True),
        lambda h, Q: h * h.std(axis=0, keepdims=True),
    ),
    "reshape_t": (
        lambda h, Q: xp.reshape(h, (h.shape[1], h.shape[0])),
        lambda h, Q: np.reshape(h, (h.shape[1], h.shape[0])),
    ),
    "flatten": (
        lambda h, Q: xp.reshape(h, (1, -1)) * 1.0,
        lambda h, Q: np.reshape(h, (1, -1)) * 1.0,
    ),
    "mT": (lambda h, Q: h.mT * 1.0, lambda h, Q: h.T * 1.0),
    "permute": (lambda h, Q: xp.permute_dims(h, (1, 0)) + 1.0, lambda h, Q: h.T + 1.0),
    "slice": (
        lambda h, Q: h[1:, ::2] if h.shape[0] > 1 else h,
        lambda h, Q: h[1:, ::2] if h.shape[0] > 1 else h,
    ),
    "reverse": (lambda h, Q: h[::-1, :], lambda h, Q: h[::-1, :]),
    "row": (lambda h, Q: h[-1:, :] * h, lambda h, Q: h[-1:, :] * h),
    "flip": (lambda h, Q: xp.flip(h, axis=1), lambda h, Q: np.flip(h, axis=1)),
    "where": (lambda h, Q: xp.where(h > 0.1, h, 0.3 * h), lambda h, Q: np.where(h > 0.1, h, 0.3 * h)),
    "concat": (lambda h, Q: xp.concat([h, h * 2.0], axis=0), lambda h, Q: np.concatenate([h, h * 2.0], axis=0)),
    "stack": (lambda h, Q: xp.stack([h, xp.sin(h)], axis=0)[1], lambda h, Q: np.sin(h)),
    "expand": (
        lambda h, Q: xp.squeeze(xp.expand_dims(h, axis=1), axis=1) * 2.0,
        lambda h, Q: h * 2.0,
    ),
    "cumsum": (lambda h, Q: xp.cumulative_sum(h, axis=1) * 0.5, lambda h, Q: np.cumsum(h, axis=1) * 0.5),
    "softmax": (
        lambda h, Q: (
            xp.exp(h - xp.max(h, axis=1, keepdims=True))
            / xp.sum(xp.exp(h - xp.max(h, axis=1, keepdims=True)), axis=1, keepdims=True)
        ),
        lambda h, Q: _np_softmax(h, 1),
    ),
    "logaddexp": (lambda h, Q: xp.logaddexp(h, h * 0.5), lambda h, Q: np.logaddexp(h, h * 0.5)),
    "broadcast": (
        lambda h, Q: xp.broadcast_to(h[:1, :], h.shape) + h,
        lambda h, Q: np.broadcast_to(h[:1, :], h.shape) + h,
    ),
    "clip": (lambda h, Q: xp.clip(h, -1.0, 1.0) + h * 0.1, lambda h, Q: np.clip(h, -1.0, 1.0) + h * 0.1),
    "square": (lambda h, Q: xp.square(h) * 0.3, lambda h, Q: np.square(h) * 0.3),
    "divide": (lambda h, Q: h / (1.0 + h * h), lambda h, Q: h / (1.0 + h * h)),
}
_KINKS = {"where", "clip", "softmax"}  # (softmax: the max's kink cancels, but its tie may not)


@st.composite
def positional(draw, mesh, shape, dtype: str, scale: float = 1.0):
    """A positional array of ``shape`` on ``mesh`` in a random layout (or ``xp.asarray``'s default)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = (rng.standard_normal(shape) * scale).astype(_np_dtype(dtype))
    dims = tuple(f"dim{k}" for k in range(len(shape)))
    if draw(st.booleans()):
        x = xp.asarray(a, device=mesh)
    else:
        lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if shape[dims.index(d)] != 1}
        x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)
    assert type(x) is xp.Array
    return x


def _pos_loss(h, mod):
    return mod.sum(mod.sin(h) + h * h * 0.1)


@fuzz(80)
@given(st.data())
def test_fuzz_positional_gradients_match_finite_differences(data):
    mesh = data.draw(meshes())
    dtype = data.draw(st.sampled_from(FLOATS))
    m, n = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    low = np.dtype(_np_dtype(dtype)).itemsize < 4
    stages = data.draw(st.lists(st.sampled_from(sorted(POSITIONAL_STAGES)), min_size=1, max_size=2 if low else 4))
    Q = (
        data.draw(positional(mesh, (m, n), dtype)),
        [data.draw(positional(mesh, (n, n), dtype, 0.5))],
        {"v": data.draw(positional(mesh, (n,), dtype))},
    )
    leaves, treedef = sa.tree.tree_flatten(Q)
    values = [_f64(x) for x in leaves]

    def sa_fn(q):
        h = q[0]
        for s in stages:
            h = POSITIONAL_STAGES[s][0](h, q)
        return _pos_loss(h, xp)

    def np_fn(vals):
        q = sa.tree.tree_unflatten(treedef, vals)
        h = q[0]
        for s in stages:
            h = POSITIONAL_STAGES[s][1](h, q)
        return float(_pos_loss(h, np))

    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("error", sa.GatherWarning)
        loss, grads = sa.value_and_grad(sa_fn)(Q)
    _bounded_gathers(log, leaves, 2 * (len(stages) + 1))
    assert type(loss) is xp.Array and loss.shape == () and loss.dtype == leaves[0].dtype
    g_leaves, g_def = sa.tree.tree_flatten(grads)
    assert g_def == treedef and isinstance(grads, tuple) and isinstance(grads[1], list)
    expected = _fd_grads(np_fn, values)
    for g, p, e in zip(g_leaves, leaves, expected):
        _check_like(g, p)
        if not _KINKS & set(stages):
            _close(g, e, dtype, f"{stages} {dtype} {mesh.shape}")
    np.testing.assert_allclose(float(loss), np_fn(values), rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)

    # sa.vjp of the composition (a positional output): a positional cotangent pulled back, against the
    # differences of sum(h * cotangent); and sa.grad(has_aux=True) gives value_and_grad's gradients
    def body(q):
        h = q[0]
        for s in stages:
            h = POSITIONAL_STAGES[s][0](h, q)
        return h

    out, pullback = sa.vjp(body, Q)
    ct = np.random.default_rng(len(stages)).standard_normal(out.shape).astype(_np_dtype(dtype))
    pulled = pullback(xp.asarray(ct, device=mesh))

    def np_ct(vals):
        q = sa.tree.tree_unflatten(treedef, vals)
        h = q[0]
        for s in stages:
            h = POSITIONAL_STAGES[s][1](h, q)
        return float((h * ct.astype(np.float64)).sum())

    aux_grads, aux = sa.grad(lambda q: (sa_fn(q), {"n": len(stages)}), has_aux=True)(Q)
    assert aux == {"n": len(stages)}
    flat = zip(sa.tree.tree_flatten(pulled)[0], sa.tree.tree_flatten(aux_grads)[0], g_leaves, leaves)
    for (g, a, plain, p), e in zip(flat, _fd_grads(np_ct, values)):
        _check_like(g, p)
        np.testing.assert_array_equal(_f64(a), _f64(plain))
        if not _KINKS & set(stages):
            _close(g, e, dtype, f"vjp {stages} {dtype} {mesh.shape}")


NOT_DIFFERENTIABLE = {
    "unique_values": lambda p: sa.unique_values(p).sum(),
    "nextafter": lambda p: sa.nextafter(p, p * 2.0).sum(),
    "xp.unique_values": lambda p: xp.sum(xp.unique_values(as_kind(p, xp.Array))),
    "setitem": lambda p: (lambda y: (y.__setitem__((0, 0), 5.0), y.sum())[1])(p * 1.0),
}


@fuzz(12)
@given(st.data())
def test_fuzz_ops_without_gradients_raise_on_traced_inputs(data):
    """An op without a gradient reached by a traced input raises ``sa.TapeError`` (never a silent zero); the same
    op on the untraced array runs."""
    mesh = data.draw(meshes())
    x = data.draw(named(mesh, {"i": data.draw(st.integers(1, 5)), "j": data.draw(st.integers(1, 5))}, "float64"))
    name = data.draw(st.sampled_from(sorted(NOT_DIFFERENTIABLE)))
    fn = NOT_DIFFERENTIABLE[name]
    fn(x)
    with pytest.raises(sa.TapeError):
        sa.grad(fn)(x)
    assert float(sa.grad(lambda p: (p * p).sum())(x).sum()) == pytest.approx(float(2 * x.sum()))  # (the tape is clean)


# =================================================================================================== sa.optim


def _np_cosine(peak, total, warmup, final, step):
    if warmup and step < warmup:
        return peak * step / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return final + 0.5 * (peak - final) * (1.0 + math.cos(math.pi * t))


class _Reference:
    """The documented update of ``opt`` in float64 NumPy, on the gathered values, one list of leaves."""

    def __init__(self, opt, values):
        self.opt, self.step = opt, 0
        self.p = [v.copy() for v in values]
        self.m = [np.zeros_like(v) for v in values]
        self.v = [np.zeros_like(v) for v in values]

    def lr(self):
        lr = self.opt.lr
        return lr(self.step) if callable(lr) else lr

    def update(self, grads):
        self.step += 1
        o, lr, t = self.opt, self.lr(), self.step
        for k, g in enumerate(grads):
            if isinstance(o, sa.optim.SGD):
                d = g
                if o.momentum:
                    self.v[k] = o.momentum * self.v[k] + g
                    d = g + o.momentum * self.v[k] if o.nesterov else self.v[k]
                self.p[k] = self.p[k] * (1.0 - lr * o.weight_decay) - lr * d
            else:
                self.m[k] = o.b1 * self.m[k] + (1 - o.b1) * g
                self.v[k] = o.b2 * self.v[k] + (1 - o.b2) * g * g
                m_hat = self.m[k] / (1 - o.b1**t)
                v_hat = self.v[k] / (1 - o.b2**t)
                self.p[k] = self.p[k] * (1.0 - lr * o.weight_decay) - lr * m_hat / (np.sqrt(v_hat) + o.eps)


@st.composite
def optimizers(draw):
    lr = draw(st.sampled_from([0.1, 0.01, 0.0, "cosine"]))
    if lr == "cosine":
        total = draw(st.integers(1, 6))
        lr = sa.optim.cosine_schedule(0.1, total, draw(st.integers(0, min(3, total))), draw(st.sampled_from([0.0, 0.01])))
    wd = draw(st.sampled_from([0.0, 0.0, 0.1]))
    master = draw(st.sampled_from(["float32", "float32", None, "float64"]))
    if draw(st.booleans()):
        mu = draw(st.sampled_from([0.0, 0.5, 0.9]))
        nesterov = bool(mu) and draw(st.booleans())
        return sa.optim.SGD(lr=lr, momentum=mu, weight_decay=wd, nesterov=nesterov, master_dtype=master)
    return sa.optim.Adam(
        lr=lr,
        b1=draw(st.sampled_from([0.9, 0.0, 0.5])),
        b2=draw(st.sampled_from([0.999, 0.9])),
        eps=draw(st.sampled_from([1e-8, 1e-3])),
        weight_decay=wd,
        master_dtype=master,
    )


@st.composite
def param_trees(draw, mesh, dtype):
    """A nested tree of named and positional parameters of ``dtype`` (one leaf sometimes float32)."""
    i, j = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    a = draw(named(mesh, {"i": i, "j": j}, dtype))
    b = draw(positional(mesh, (j,), dtype))
    c = draw(positional(mesh, (i, j), draw(st.sampled_from([dtype, "float32"]))))
    d = draw(named(mesh, {"k": draw(st.integers(1, 4))}, dtype))
    return {"layer": [a, (b, c)], "bias": d}


def _rounded(values, leaves):
    """``values`` rounded to the leaves' dtypes (the gradients the optimizer sees), as float64."""
    return [v.astype(np.dtype(x.dtype)).astype(np.float64) for v, x in zip(values, leaves)]


@fuzz(80)
@given(st.data())
def test_fuzz_optimizers_match_a_numpy_reference(data):
    mesh = data.draw(meshes())
    dtype = data.draw(st.sampled_from(FLOATS))
    opt = data.draw(optimizers())
    params = data.draw(param_trees(mesh, dtype))
    leaves, treedef = sa.tree.tree_flatten(params)
    ref = _Reference(opt, [_f64(x) for x in leaves])
    state = opt.init(params)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    for _ in range(data.draw(st.integers(1, 4))):
        gl = []
        for x in leaves:  # a gradient of each parameter's kind, in a random layout (the update relays it out)
            g = rng.standard_normal(x.shape).astype(np.dtype(x.dtype))
            lay = data.draw(layouts(mesh, x.dims))
            lay = {d: v for d, v in lay.items() if x.sizes[d] != 1}
            gl.append(as_kind(sa.asarray(g, dims=x.dims, mesh=mesh, layout=lay), type(x)))
        grads = sa.tree.tree_unflatten(treedef, gl)
        with sa.comm_log() as log:
            params, state = opt.update(params, grads, state)
        _bounded_gathers(log, leaves, 2)
        ref.update(_rounded([_f64(g) for g in gl], leaves))
        new_leaves, new_def = sa.tree.tree_flatten(params)
        assert new_def == treedef
        for new, old, e in zip(new_leaves, leaves, ref.p):
            _check_like(new, old)
            _close(new, e, old.dtype, f"{opt} {mesh.shape}")
    assert state["step"] == ref.step
    for name in ("m", "v", "velocity"):
        if state.get(name) is not None:
            for mom, x in zip(sa.tree.tree_flatten(state[name])[0], leaves):
                assert type(mom) is type(x) and mom.layout == x.layout and mom.dims == x.dims


@fuzz(60)
@given(st.data())
def test_fuzz_clipping_and_loss_scaling_match_numpy(data):
    mesh = data.draw(meshes())
    dtype = data.draw(st.sampled_from(FLOATS))
    grads = data.draw(param_trees(mesh, dtype))
    leaves, treedef = sa.tree.tree_flatten(grads)
    values = [_f64(x) for x in leaves]
    norm = math.sqrt(sum(float((v * v).sum()) for v in values))
    max_norm = data.draw(st.sampled_from([0.0, 0.5, 1.0, 100.0]))
    with sa.comm_log() as log:
        clipped, got_norm = sa.optim.clip_by_global_norm(grads, max_norm, return_norm=True)
    assert [r.op for r in log.records] in ([], ["allreduce"]), log.records
    np.testing.assert_allclose(got_norm, norm, rtol=1e-12)
    factor = min(1.0, max_norm / norm) if norm else 1.0
    for c, x, v in zip(sa.tree.tree_flatten(clipped)[0], leaves, values):
        _check_like(c, x)
        _close(c, v * factor, x.dtype)

    # a float16 loss scale: scaled gradients in, unscaled (and clipped) gradients to the optimizer, overflow skips
    scaler = sa.optim.DynamicLossScale(init_scale=data.draw(st.sampled_from([1.0, 8.0, 1024.0])), growth_interval=2)
    ls = scaler.init()
    opt = sa.optim.SGD(lr=0.5)
    params = sa.tree.tree_unflatten(treedef, [x * 0.0 + 1.0 for x in leaves])
    state = opt.init(params)
    ref = [np.ones_like(v) for v in values]
    clip = data.draw(st.sampled_from([None, 1.0]))
    for _ in range(3):
        overflow = data.draw(st.booleans())
        s = ls["scale"]
        scaled = [(v * s).astype(np.dtype(x.dtype)) for v, x in zip(values, leaves)]
        if overflow:
            scaled[0] = scaled[0].copy()
            scaled[0].flat[0] = np.inf
        g = sa.tree.tree_unflatten(
            treedef,
            [as_kind(sa.asarray(a, dims=x.dims, mesh=mesh, layout=x.layout), type(x)) for a, x in zip(scaled, leaves)],
        )
        with sa.comm_log() as log:
            params, state, new_ls = scaler.apply(opt, params, g, state, ls, max_norm=clip)
        assert sum(r.op == "allreduce" for r in log.records) <= 2, log.records
        finite = all(np.isfinite(a.astype(np.float64) / s).all() for a in scaled)
        assert new_ls["finite"] == finite
        if finite:
            un = [a.astype(np.float64) / s for a in scaled]
            n = math.sqrt(sum(float((u * u).sum()) for u in un))
            f = min(1.0, clip / n) if clip is not None and n > 0 else 1.0
            ref = [r - 0.5 * u * f for r, u in zip(ref, un)]
            assert new_ls["scale"] == (s * 2 if ls["good_steps"] + 1 >= 2 else s)
        else:
            assert new_ls["scale"] == max(1.0, s / 2) and new_ls["skipped"] == ls["skipped"] + 1
        ls = new_ls
        for p, x, r in zip(sa.tree.tree_flatten(params)[0], leaves, ref):
            _check_like(p, x)
            _close(p, r, x.dtype)


# ====================================================================================================== sa.nn

NN_MESHES = [
    ("replicated", {"d": 1}),
    ("data", {"p": 3, "q": 2}),
    ("megatron", {"model": 2, "data": 2}),
    ("megatron", {"model": 4}),
    ("mesh2d", {"rows": 2, "cols": 2}),
    ("mesh2d", {"rows": 3, "cols": 2}),
    ("tesseract", {"row": 2, "col": 2, "dep": 2}),
    ("tesseract", {"row": 2, "col": 2, "dep": 1}),
]
_NN_MESHES: dict = {}


def _nn_mesh(strategy: str, shape: dict) -> sa.Mesh:
    key = (strategy, tuple(shape.items()))
    if key not in _NN_MESHES:
        _NN_MESHES[key] = sa.Mesh(dict(shape), rules=sa.nn.strategy_rules(strategy, shape))
    return _NN_MESHES[key]


@st.composite
def configs(draw):
    return sa.nn.TransformerConfig(
        vocab=draw(st.integers(2, 9)),
        d_model=draw(st.integers(2, 6)),
        heads=draw(st.integers(1, 3)),
        d_kv=draw(st.integers(1, 3)),
        d_ff=draw(st.integers(1, 6)),
        n_layers=draw(st.integers(0, 2)),
        seq_len=draw(st.integers(1, 5)),
    )


def _transformer_case(cfg, strategy, shape, tokens, targets, seed):
    """Loss and gradients (float64) of the transformer on ``strategy``'s mesh, or None where it cannot be laid out."""
    mesh = _nn_mesh(strategy, shape)
    try:
        params = sa.nn.init_transformer(cfg, mesh, strategy=strategy, seed=seed, dtype="float64")
        tok = sa.asarray(tokens, dims=("batch", "seq"), mesh=mesh)
        tgt = sa.asarray(targets, dims=("batch", "seq"), mesh=mesh)
        with sa.comm_log() as log:
            loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tok, tgt, cfg)
    except sa.LayoutError:  # (Tesseract and SUMMA need sizes divisible by the mesh)
        return None
    _bounded_gathers(log, list(params.values()), 4 * (cfg.n_layers + 2))
    for name, g in grads.items():
        _check_like(g, params[name])
    return params, float(loss), {k: g.numpy() for k, g in grads.items()}


@fuzz(20)
@given(st.data())
def test_fuzz_transformer_loss_and_gradients_agree_across_meshes_and_strategies(data):
    cfg = data.draw(configs())
    batch = data.draw(st.integers(1, 6))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    tokens = rng.integers(0, cfg.vocab, (batch, cfg.seq_len))
    targets = rng.integers(0, cfg.vocab, (batch, cfg.seq_len))
    seed = data.draw(st.integers(0, 100))
    params, loss, grads = _transformer_case(cfg, "replicated", {"d": 1}, tokens, targets, seed)

    # the reference's gradient against central differences along two random directions (float64)
    tok = sa.asarray(tokens, dims=("batch", "seq"), mesh=params["embed"].mesh)
    tgt = sa.asarray(targets, dims=("batch", "seq"), mesh=params["embed"].mesh)

    def along(v, h):  # the central difference along v with step h
        moved = [
            {k: sa.asarray(p.numpy() + s * h * v[k], dims=p.dims, mesh=p.mesh) for k, p in params.items()}
            for s in (1, -1)
        ]
        return (
            float(sa.nn.transformer_loss(moved[0], tok, tgt, cfg))
            - float(sa.nn.transformer_loss(moved[1], tok, tgt, cfg))
        ) / (2 * h)

    for _ in range(2):
        v = {k: rng.standard_normal(p.shape) for k, p in params.items()}
        # Richardson's extrapolation: a layer norm of inputs of tiny variance curves strongly (an O(h^2) error of 1e-4)
        fd = (4 * along(v, 1e-6) - along(v, 2e-6)) / 3
        analytic = sum(float((grads[k] * v[k]).sum()) for k in params)
        np.testing.assert_allclose(analytic, fd, rtol=1e-5, atol=1e-6)

    for strategy, shape in data.draw(
        st.lists(st.sampled_from(NN_MESHES[1:]), min_size=1, max_size=2, unique_by=lambda c: c[0] + str(c[1]))
    ):
        case = _transformer_case(cfg, strategy, shape, tokens, targets, seed)
        if case is None:
            continue
        other, other_loss, other_grads = case
        for k in params:  # the same seed gives the same values on every mesh and layout
            np.testing.assert_array_equal(other[k].numpy(), params[k].numpy())
        np.testing.assert_allclose(other_loss, loss, rtol=1e-12, atol=1e-12, err_msg=strategy)
        for k in grads:
            np.testing.assert_allclose(other_grads[k], grads[k], rtol=1e-9, atol=1e-12, err_msg=f"{strategy} {k}")


# ================================================================================= regressions of the bugs found


@pytest.mark.parametrize(
    "make", [lambda: sa.optim.SGD(0.1, momentum=0.9), lambda: sa.optim.Adam(0.1)], ids=["sgd", "adam"]
)
@pytest.mark.parametrize("bad", ["complex64", "int32", "bool"])
def test_optimizers_refuse_gradients_that_are_not_real_floats(make, bad):
    """Bug: ``opt.update`` took a complex gradient and dropped its imaginary part (a NumPy ComplexWarning at most),
    and took integer and bool gradients as if they were ones. Now a ``DTypeError`` names the leaf and the fix."""
    mesh = _mesh({"row": 2, "col": 2})
    params = {"w": sa.ones(mesh, {"i": 4, "j": 3}, layout={"i": "row"}), "b": xp.ones((3,), device=mesh)}
    opt = make()
    state = opt.init(params)
    grads = {"w": sa.ones(mesh, {"i": 4, "j": 3}, dtype=bad), "b": xp.ones((3,), device=mesh)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(sa.DTypeError, match=rf"grads\['w'\] has dtype {bad}.*real floating-point.*astype"):
            opt.update(params, grads, state)


@pytest.mark.parametrize("which", ["moment", "master"])
@pytest.mark.parametrize("bad", ["complex64", "int32"])
def test_optimizers_refuse_a_state_whose_moments_or_master_copies_are_not_real_floats(which, bad):
    """Bug: a state whose moment or master copy was complex or integer (damaged, or edited by hand) was used: the
    imaginary part silently dropped, the values truncated. Now a ``DTypeError`` names the entry and says to make
    the state with ``opt.init``."""
    mesh = _mesh({"row": 2, "col": 2})
    w = sa.ones(mesh, {"i": 4, "j": 3}, dtype="float16", layout={"j": "col"})
    opt = sa.optim.Adam(0.1)
    state = opt.init({"w": w})
    bad_leaf = sa.zeros(mesh, {"i": 4, "j": 3}, dtype=bad, layout={"j": "col"})
    if which == "moment":
        state = {**state, "m": {"w": bad_leaf}}
        where = r"state\['m'\]\['w'\]"
    else:
        state = {**state, "master": {"['w']": bad_leaf}}
        where = r"state\['master'\]\[\"\['w'\]\"\]"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(sa.DTypeError, match=where + rf" has dtype {bad}.*opt.init\(params\)"):
            opt.update({"w": w}, {"w": w}, state)


@pytest.mark.parametrize("dtype", ["int32", "int8", "bool"])
def test_clipping_and_loss_scaling_refuse_integer_gradients(dtype):
    """Bug: ``clip_by_global_norm`` and ``DynamicLossScale.unscale``/``apply`` scaled integer gradients in their
    dtype: ``clip_by_global_norm({"g": [2, 2, 2] (int32)}, 1.0)`` gave ``[0, 0, 0]`` without a word. Now a
    ``DTypeError`` names the leaf; ``global_norm`` (nothing scaled) still takes them."""
    mesh = _mesh({"all": 4})
    grads = {"a": sa.full(mesh, {"i": 3}, 1.0), "g": sa.full(mesh, {"i": 3}, 2, dtype=dtype, layout={"i": "all"})}
    assert sa.optim.global_norm(grads) == pytest.approx(math.sqrt(3 + 3 * (1 if dtype == "bool" else 4)))
    with pytest.raises(sa.DTypeError, match=rf"clip_by_global_norm: grads\['g'\] has dtype {dtype}.*truncate"):
        sa.optim.clip_by_global_norm(grads, 1.0)
    scaler = sa.optim.DynamicLossScale(init_scale=4.0)
    with pytest.raises(sa.DTypeError, match=rf"unscale: grads\['g'\] has dtype {dtype}"):
        scaler.unscale(grads, scaler.init())
    params = {k: sa.full(mesh, {"i": 3}, 1.0) for k in grads}
    opt = sa.optim.SGD(0.1)
    with pytest.raises(sa.DTypeError, match=rf"apply: grads\['g'\] has dtype {dtype}"):
        scaler.apply(opt, params, grads, opt.init(params), scaler.init(), max_norm=1.0)
