"""Every public name of ``sa``, ``sa.linalg``, ``sa.fft``, ``sa.nn``, ``xp``, ``xp.linalg`` and ``xp.fft``, classified.

The names come from the modules' ``__all__``, minus those ``test_op_registry_gradients.py`` already checks. Each
remaining name is in exactly one class (a new public name fails ``test_every_public_name_is_classified`` until it
is put in one):

- ``DIFFERENTIABLE``: takes floating arrays and has a gradient. ``sa.value_and_grad`` is checked against float64
  central differences (``gradcheck.check_grad``) on a 1-device, a 2x2 and a 2x2x2 mesh, with sizes that do not
  divide evenly (5, 3, ...) and, where the op allows, dims split over the mesh axes. The loss weights every
  floating output by a fixed random array (``(op(x) * w).sum()``; complex outputs ``real(op(x) * w)`` with a
  complex ``w``), so every output element matters. Piecewise-constant float results (``round``, ``sign``,
  ``accuracy``, ...) are here too: their derivative is 0 almost everywhere, and the check confirms both sides are 0.
- ``NONDIFFERENTIABLE``: integer/bool results, or no gradient rule. A floating input being differentiated either
  raises ``sa.TapeError`` naming the op (floating results without a rule), or the op's integer/bool result is
  usable in a loss with no error and the loss's gradient is still right (integer inputs only: a floating input is
  refused with ``sa.DTypeError``; ``stop_gradient``: the gradient is exactly 0).
- ``NO_ARRAY_INPUT``: creation functions, mesh/config helpers, classes, constants, context managers, modules, each
  with a one-line reason.

``VARIANTS`` holds further cases of differentiable ops (complex inputs, imaginary parts of the FFTs, asymmetric
steps of split positive-definite solves): each was a wrong gradient, a silent zero or a missing rule, found here
and fixed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import test_op_registry_gradients as registry
from gradcheck import check_grad

import shardarray as sa
import shardarray.array_api as xp

MESHES = {"1": {"d": 1}, "2x2": {"row": 2, "col": 2}, "2x2x2": {"dep": 2, "row": 2, "col": 2}}
if registry.NCCL_2X2 in registry.MESHES:  # --backend=cupy: also four GPUs with NCCL's collectives
    MESHES[registry.NCCL_2X2] = registry.NCCL_2X2
SPACES = {"sa": sa, "sa.linalg": sa.linalg, "sa.fft": sa.fft, "sa.nn": sa.nn, "xp": xp, "xp.linalg": xp.linalg,
          "xp.fft": xp.fft}
PUBLIC = {f"{label}.{name}" for label, mod in SPACES.items() for name in mod.__all__}

#: checked by test_op_registry_gradients.py: its UNARY/BINARY/REDUCE/NANREDUCE lists (by name), and the functions
#: its STRUCTURAL and POSITIONAL losses call by name (x.relayout, ``@`` and creation helpers do not count)
COVERED = {f"sa.{n}" for n in registry.UNARY + registry.BINARY + registry.REDUCE + registry.NANREDUCE} & PUBLIC
COVERED |= {f"sa.{n}" for n in (
    "concat", "stack", "isel", "flip", "roll", "pad", "diff", "tile", "repeat", "split_dim", "merge_dims",
    "expand_dims", "squeeze", "broadcast_to", "where", "cumsum", "cumprod", "sort", "top_k", "take_along_dim",
    "softmax", "logsumexp", "einsum", "take")} | {"sa.nn.layer_norm"}
COVERED |= {f"xp.{n}" for n in (
    "reshape", "permute_dims", "tensordot", "vecdot", "concat", "stack", "expand_dims", "squeeze", "flip", "roll",
    "take", "where", "clip", "sum", "mean", "std", "var", "max", "min", "cumulative_sum", "sort", "logaddexp")}
COVERED |= {"xp.linalg.vector_norm", "xp.linalg.matrix_norm"}

# --------------------------------------------------------------------------------------------------- inputs


def _values(shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def _split(mesh, dims):
    """A layout splitting the first dims over the mesh axes (unevenly for the sizes used here)."""
    axes = mesh.axis_names
    if not dims:
        return {}
    if len(axes) == 1 or len(dims) == 1:
        return {dims[0]: axes}
    if len(axes) == 2:
        return {dims[0]: axes[0], dims[1]: axes[1]}
    return {dims[0]: axes[:2], dims[1]: axes[2]}


def _arr(mesh, sizes, lo=-2.0, hi=2.0, seed=0, layout="split", values=None):
    """A named float64 array of ``sizes`` (``{dim: n}``), split by ``_split`` unless ``layout`` is given."""
    dims = tuple(sizes)
    if values is None:
        values = _values(tuple(sizes.values()), lo, hi, seed)
    return sa.asarray(values, dims=dims, mesh=mesh, layout=_split(mesh, dims) if layout == "split" else layout)


def _pos(mesh, shape, lo=-2.0, hi=2.0, seed=0, values=None):
    """A positional float64 array (axis k split over mesh axis k)."""
    return xp.asarray(_values(shape, lo, hi, seed) if values is None else values, device=mesh)


def _spd(n, seed=0):
    m = np.random.default_rng(seed).standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _nonsingular(n, seed=0):
    return 3.0 * np.eye(n) + 0.5 * np.random.default_rng(seed).standard_normal((n, n))


def _cplx(x, y):
    """A complex array from two real parameters (named or positional), ``x + 1j*y``."""
    return x.astype("complex128") + y.astype("complex128") * 1j


def _z(p):
    return _cplx(p["x"], p["y"])


def _ints(mesh, values):
    return xp.asarray(np.asarray(values), device=mesh)


def _floats(out):
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    return [y for y in items if isinstance(y, sa.ShardArray) and y.dtype.kind in "fc"]


def _weights(y, seed):
    rng = np.random.default_rng(seed)
    vals = rng.standard_normal(y.shape)
    if y.dtype.kind == "c":
        vals = vals + 1j * rng.standard_normal(y.shape)
    if y.positional:
        return xp.asarray(vals, device=y.mesh)
    return sa.asarray(vals, dims=y.dims, mesh=y.mesh)


def _weighted_sum(y, w):
    z = y * w
    if z.dtype.kind == "c":
        z = sa.real(z)
    return xp.sum(z) if z.positional else z.sum()


def _weighted_loss(op, params):
    """``sum_k (op(p)[k] * w_k).sum()`` over the floating outputs, ``w_k`` fixed random arrays of their dims."""
    outs = _floats(op(params))
    assert outs, "the op gave no floating output"
    ws = [_weights(y, 100 + k) for k, y in enumerate(outs)]

    def loss(p):
        total = None
        for y, w in zip(_floats(op(p)), ws):
            s = _weighted_sum(y, w)
            total = s if total is None else total + s
        return total

    return loss


# ------------------------------------------------------------------------------------------ DIFFERENTIABLE
#: name -> case(mesh) -> [(op, params), ...] (variants); op(params) gives an array or a tuple of arrays
DIFFERENTIABLE = {}
#: more variants of DIFFERENTIABLE ops (complex inputs, imaginary parts) that once were bugs: id -> (op name, case)
VARIANTS = {}


def case(*names):
    def deco(fn):
        for name in names:
            assert name not in DIFFERENTIABLE, name
            DIFFERENTIABLE[name] = fn
        return fn

    return deco


def _ab(mesh, lo=-2.0, hi=2.0, seed=0, layout="split"):
    return _arr(mesh, {"a": 5, "b": 3}, lo, hi, seed, layout)


# --- sa: the top-level ops not covered by the registry test


@case("sa.asarray")
def _(m):
    x = _ab(m)
    other = sa.Mesh({"x": 3})
    return [(lambda p: sa.asarray(p), x),
            (lambda p: sa.asarray(p, dims=("c", "d"), layout={"d": m.axis_names[0]}), x),
            (lambda p: sa.asarray(p, dtype="complex128"), x),
            (lambda p: sa.asarray(p, mesh=other, layout={"a": "x"}), x)]


@case("sa.clip")
def _(m):
    params = {"x": _ab(m), "lo": _arr(m, {"b": 3}, -1.0, 0.0, seed=1)}
    return [(lambda p: sa.clip(p, -0.5, 0.7), _ab(m)), (lambda p: sa.clip(p, max=0.3), _ab(m)),
            (lambda p: sa.clip(p["x"], p["lo"], 0.7), params)]


@case("sa.ldexp")
def _(m):
    n = sa.asarray(np.array([3, -2, 0], dtype=np.int32), dims=("b",), mesh=m)  # (an integer exponent: no gradient)
    return [(lambda p: sa.ldexp(p, n), _ab(m)), (lambda p: sa.ldexp(p * 2.0, 5), _ab(m))]


def _xy(m):
    return {"x": _ab(m, seed=1), "y": _ab(m, seed=2)}


@case("sa.conj")
def _(m):
    return [(lambda p: sa.conj(_cplx(p["x"], p["y"]) * (0.5 - 2j)), _xy(m)), (sa.conj, _ab(m))]


@case("sa.real")
def _(m):
    return [(lambda p: sa.real(_cplx(p["x"], p["y"]) * (0.5 - 2j)), _xy(m)), (sa.real, _ab(m))]


@case("sa.imag")
def _(m):
    return [(lambda p: sa.imag(_cplx(p["x"], p["y"]) * (0.5 - 2j)), _xy(m)),
            (lambda p: sa.imag(p) + p, _ab(m))]  # the imaginary part of a real array: 0, gradient 0


@case("sa.relayout")
def _(m):
    axes = m.axis_names
    return [(lambda p: sa.relayout(p, {"b": axes[0]}), _ab(m)), (lambda p: sa.relayout(p, {}), _ab(m)),
            (lambda p: sa.relayout(p * p, {"a": axes}), _ab(m, layout={}))]


@case("sa.reshard")
def _(m):
    return [(lambda p: sa.reshard(p, sa.Mesh({"x": 3}), {"a": "x"}), _ab(m)),
            (lambda p: sa.reshard(p, sa.Mesh({"u": 2, "v": 2}), {"b": "u", "a": "v"}), _ab(m))]


@case("sa.select")
def _(m):
    x = _ab(m)
    mask = x.numpy() > 0.1
    m2 = sa.asarray(mask, dims=("a", "b"), mesh=m, layout=x.layout)
    m1 = sa.asarray(mask[:, 0], dims=("a",), mesh=m)
    return [(lambda p: sa.select(p, m2), x), (lambda p: sa.select(p, m1, "k"), x)]


# --- sa.linalg (matrix dims i, j; split in 2-D)


def _mat(m, values, dims=("i", "j"), layout="split"):
    sizes = dict(zip(dims, values.shape))
    return _arr(m, sizes, values=values, layout=layout)


@case("sa.linalg.cholesky")
def _(m):
    a = _mat(m, _spd(5))
    return [(lambda p: sa.linalg.cholesky(p, ("i", "j")), a),
            (lambda p: sa.linalg.cholesky(p, ("i", "j"), upper=True), a)]


def _half_sym(p):
    """``(p + p^T) / 2``: keeps solve, inv, det and slogdet of a split matrix on their Hermitian positive-definite
    path (2-D Cholesky) under finite differences; the asymmetric steps, which leave it for the general path, are
    the "split SPD, asymmetric step" entries of VARIANTS."""
    return (p + p.rename({"i": "j", "j": "i"})) * 0.5


@case("sa.linalg.det")
def _(m):
    batched = _arr(m, {"n": 2, "i": 3, "j": 3}, values=np.stack([_nonsingular(3, 1), _nonsingular(3, 2)]),
                   layout={"n": m.axis_names[0]})
    return [(lambda p: sa.linalg.det(p, ("i", "j")), _mat(m, _nonsingular(5))),
            (lambda p: sa.linalg.det(p, ("i", "j")), batched),
            (lambda p: sa.linalg.det(_half_sym(p), ("i", "j")), _mat(m, _spd(5) / 5.0))]


def _sym(p):
    return p + p.rename({"i": "j", "j": "i"})


def _eig_input(m):
    d = sa.asarray(np.diag(np.arange(1.0, 6.0)), dims=("i", "j"), mesh=m)
    b = _mat(m, 0.1 * np.random.default_rng(3).standard_normal((5, 5)))
    return d, b


@case("sa.linalg.eigh")
def _(m):
    d, b = _eig_input(m)

    def op(p):
        r = sa.linalg.eigh(d + _sym(p), ("i", "j"))
        return r.eigenvalues, r.eigenvectors ** 2  # squares: eigenvector signs are arbitrary

    return [(op, b)]


@case("sa.linalg.eig")
def _(m):
    d, b = _eig_input(m)  # (distinct real eigenvalues near 1..5: LAPACK's order holds under the perturbations)

    def op(p, c=1.0):
        w, v = sa.linalg.eig(d + p * c, ("i", "j"))
        return sa.real(w), sa.imag(w), sa.real(v * sa.conj(v))  # |v|²: each eigenvector's phase is arbitrary

    return [(op, b), (lambda p: op(p, 1.0 + 0.5j), b)]


@case("sa.linalg.eigvals")
def _(m):
    d, b = _eig_input(m)
    return [(lambda p: sa.real(sa.linalg.eigvals(d + p, ("i", "j"))), b),
            (lambda p: sa.imag(sa.linalg.eigvals(d + p * (1.0 - 2.0j), ("i", "j"))), b)]


@case("sa.linalg.eigvalsh")
def _(m):
    d, b = _eig_input(m)
    return [(lambda p: sa.linalg.eigvalsh(d + _sym(p), ("i", "j")), b)]


@case("sa.linalg.inv")
def _(m):
    return [(lambda p: sa.linalg.inv(p, ("i", "j")), _mat(m, _nonsingular(5))),
            (lambda p: sa.linalg.inv(_half_sym(p), ("i", "j")), _mat(m, _spd(5)))]


@case("sa.linalg.matrix_norm")
def _(m):
    x = _mat(m, _values((5, 3), seed=4))
    return [(lambda p, o=o: sa.linalg.matrix_norm(p, ("i", "j"), ord=o), x)
            for o in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf)]


@case("sa.linalg.pinv")
def _(m):
    return [(lambda p: sa.linalg.pinv(p, ("i", "j")), _mat(m, _values((5, 3), seed=5)))]


@case("sa.linalg.qr")
def _(m):
    def op(p):
        q, r = sa.linalg.qr(p, ("i", "j"))
        return q, r

    return [(op, _mat(m, _values((5, 3), seed=6))),
            (op, _mat(m, _values((5, 3), seed=6), layout={"i": m.axis_names}))]  # TSQR over all the devices


@case("sa.linalg.slogdet")
def _(m):
    return [(lambda p: tuple(sa.linalg.slogdet(p, ("i", "j"))), _mat(m, _nonsingular(5))),
            (lambda p: tuple(sa.linalg.slogdet(_half_sym(p), ("i", "j"))), _mat(m, _spd(5)))]


@case("sa.linalg.solve")
def _(m):
    params = {"a": _mat(m, _nonsingular(5)), "b": _arr(m, {"j": 5, "k": 3}, seed=7)}
    spd = {"a": _mat(m, _spd(5)), "b": _arr(m, {"j": 5, "k": 3}, seed=7)}  # the distributed Cholesky path
    return [(lambda p: sa.linalg.solve(p["a"], p["b"], ("i", "j")), params),
            (lambda p: sa.linalg.solve(_half_sym(p["a"]), p["b"], ("i", "j")), spd)]


@case("sa.linalg.svd")
def _(m):
    def op(p):
        r = sa.linalg.svd(p, ("i", "j"))
        return r.U ** 2, r.S, r.Vh ** 2

    return [(op, _mat(m, _values((5, 3), seed=8)))]


@case("sa.linalg.svdvals")
def _(m):
    return [(lambda p: sa.linalg.svdvals(p, ("i", "j")), _mat(m, _values((5, 3), seed=8)))]


@case("sa.linalg.vector_norm")
def _(m):
    x = _ab(m)
    return ([(lambda p, o=o: sa.linalg.vector_norm(p, ord=o), x) for o in (2, 1, 3, 0.5, np.inf, -np.inf, 0)]
            + [(lambda p: sa.linalg.vector_norm(p, "a"), x), (lambda p: sa.linalg.vector_norm(p, ("b",), ord=1), x)])


# --- sa.nn (a small float64 transformer; batch split, heads/d_ff/vocab split over the last axis)

CFG = sa.nn.TransformerConfig(vocab=7, d_model=6, heads=2, d_kv=3, d_ff=5, n_layers=1, seq_len=5)


def _nn_mesh(m):
    axes = m.axis_names
    rules = {"batch": axes[:-1], "heads": axes[-1], "d_ff": axes[-1], "vocab": axes[-1]} if len(axes) > 1 else {
        "batch": axes}
    return sa.Mesh(dict(zip(axes, (m.axis_size(a) for a in axes))), rules=rules)


def _nn(m):
    nm = _nn_mesh(m)
    params = sa.nn.init_transformer(CFG, nm, dtype="float64", seed=0)
    rng = np.random.default_rng(0)
    tokens = sa.asarray(rng.integers(0, CFG.vocab, (3, CFG.seq_len)), dims=("batch", "seq"), mesh=nm)
    targets = sa.asarray(rng.integers(0, CFG.vocab, (3, CFG.seq_len)), dims=("batch", "seq"), mesh=nm)
    x = sa.asarray(rng.standard_normal((3, CFG.seq_len, CFG.d_model)), dims=("batch", "seq", "d_model"), mesh=nm)
    return nm, params, tokens, targets, x


@case("sa.nn.attention")
def _(m):
    nm, params, _, _, x = _nn(m)
    sub = {k: v for k, v in params.items() if k.startswith("layer0.attn.")}
    seq_split = x.relayout({"seq": nm.axis_names[-1]})  # seq split: the unfused path
    return [(lambda p: sa.nn.attention(p["x"], p, "layer0.attn."), {**sub, "x": x}),
            (lambda p: sa.nn.attention(p["x"], p, "layer0.attn."), {**sub, "x": seq_split})]


@case("sa.nn.mlp")
def _(m):
    _, params, _, _, x = _nn(m)
    sub = {k: v for k, v in params.items() if k.startswith("layer0.mlp.")}
    return [(lambda p: sa.nn.mlp(p["x"], p, "layer0.mlp."), {**sub, "x": x})]


def _logits(m, layout):
    nm = _nn_mesh(m)
    rng = np.random.default_rng(1)
    logits = sa.asarray(rng.standard_normal((3, 5, 7)), dims=("batch", "seq", "vocab"), mesh=nm, layout=layout)
    targets = sa.asarray(rng.integers(0, 7, (3, 5)), dims=("batch", "seq"), mesh=nm,
                         layout={k: v for k, v in layout.items() if k != "vocab"})
    return logits, targets


@case("sa.nn.cross_entropy")
def _(m):
    axes = m.axis_names
    split_vocab, t1 = _logits(m, {"batch": axes[0], "vocab": axes[-1]} if len(axes) > 1 else {"vocab": axes})
    fused, t2 = _logits(m, {"batch": axes[0]})  # vocab last and unsplit: the fused rows kernel
    return [(lambda p: sa.nn.cross_entropy(p, t1), split_vocab), (lambda p: sa.nn.cross_entropy(p, t2), fused)]


@case("sa.nn.accuracy")
def _(m):  # a fraction of argmax hits: piecewise constant, derivative 0 (both sides must say so)
    axes = m.axis_names
    logits, t = _logits(m, {"batch": axes[0], "vocab": axes[-1]} if len(axes) > 1 else {"vocab": axes})
    return [(lambda p: sa.nn.accuracy(p, t) + (p * p).sum(), logits)]


@case("sa.nn.transformer_logits")
def _(m):
    _, params, tokens, _, _ = _nn(m)
    return [(lambda p: sa.nn.transformer_logits(p, tokens, CFG), params)]


@case("sa.nn.transformer_loss")
def _(m):
    _, params, tokens, targets, _ = _nn(m)
    return [(lambda p: sa.nn.transformer_loss(p, tokens, targets, CFG), params)]


# --- xp: elementwise (5, 3) positional arrays; binary ops also broadcast a (3,) operand

XP_UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp", "expm1", "floor",
            "log", "log1p", "log2", "log10", "negative", "positive", "reciprocal", "round", "sign", "sin", "sinh",
            "sqrt", "square", "tan", "tanh", "trunc"]
XP_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "atan2", "hypot", "copysign",
             "remainder", "floor_divide"]
POSITIVE_BINARY = {"pow", "divide", "remainder", "floor_divide", "atan2", "hypot"}


REAL_ONLY = {"ceil", "floor", "round", "trunc", "maximum", "minimum", "atan2", "hypot", "copysign", "remainder",
             "floor_divide"}


def _pz(m, shape=(5, 3), seeds=(1, 2)):
    """Two real parameters of a complex operand in 0.3 < re, im < 0.8: clear of every branch cut and pole."""
    return {"x": _pos(m, shape, 0.3, 0.8, seed=seeds[0]), "y": _pos(m, shape, 0.3, 0.8, seed=seeds[1])}


def _xp_unary(name):
    def build(m):
        lo, hi = registry.DOMAIN.get(name, (-2.0, 2.0))
        op = getattr(xp, name)
        variants = [(op, _pos(m, (5, 3), lo, hi))]
        if name not in REAL_ONLY:  # complex in, complex (abs: real) out
            variants.append((lambda p: op(_z(p)), _pz(m)))
        return variants

    return build


def _xp_binary(name):
    def build(m):
        lo, hi = (0.5, 2.0) if name in POSITIVE_BINARY else (-2.0, 2.0)
        op = getattr(xp, name)
        same = {"x": _pos(m, (5, 3), lo, hi, seed=1), "y": _pos(m, (5, 3), lo, hi, seed=2)}
        bcast = {"x": _pos(m, (5, 3), lo, hi, seed=1), "y": _pos(m, (3,), lo, hi, seed=3)}
        variants = [(lambda p: op(p["x"], p["y"]), same), (lambda p: op(p["x"], p["y"]), bcast),
                    (lambda p: op(p["y"], p["x"]), bcast)]
        if name not in REAL_ONLY:
            params = {"u": _pz(m), "v": _pz(m, (3,), (3, 4))}
            variants.append((lambda p: op(_z(p["u"]), _z(p["v"])), params))
        return variants

    return build


for _n in XP_UNARY:
    DIFFERENTIABLE[f"xp.{_n}"] = _xp_unary(_n)


for _n in XP_BINARY:
    DIFFERENTIABLE[f"xp.{_n}"] = _xp_binary(_n)


def _pxy(m, shape=(5, 3)):
    return {"x": _pos(m, shape, seed=1), "y": _pos(m, shape, seed=2)}


@case("xp.conj")
def _(m):
    return [(lambda p: xp.conj(_cplx(p["x"], p["y"]) * (0.5 - 2j)), _pxy(m)), (xp.conj, _pos(m, (5, 3)))]


@case("xp.real")
def _(m):
    return [(lambda p: xp.real(_cplx(p["x"], p["y"]) * (0.5 - 2j)), _pxy(m)), (xp.real, _pos(m, (5, 3)))]


@case("xp.imag")
def _(m):
    return [(lambda p: xp.imag(_cplx(p["x"], p["y"]) * (0.5 - 2j)), _pxy(m)),
            (lambda p: xp.imag(p) + p, _pos(m, (5, 3)))]


# --- xp: creation from arrays, copies, casts


@case("xp.asarray")
def _(m):
    x = _pos(m, (5, 3))
    return [(lambda p: xp.asarray(p), x), (lambda p: xp.asarray(p, copy=True), x),
            (lambda p: xp.asarray(p, dtype=xp.complex128), x), (lambda p: xp.asarray(p * p, device=m), x)]


@case("xp.astype")
def _(m):
    x = _pos(m, (5, 3))
    return [(lambda p: xp.astype(p, xp.float64), x), (lambda p: xp.astype(p, xp.complex128) * (1 - 2j), x),
            (lambda p: xp.astype(p, xp.float64, copy=False), x)]


@case("xp.from_dlpack")
def _(m):
    return [(lambda p: xp.from_dlpack(p), _pos(m, (5, 3))), (lambda p: xp.from_dlpack(p, copy=True), _pos(m, (5, 3)))]


# values are not read: the result is a constant; ``empty_like``'s contents are undefined, so only its shape is used
DIFFERENTIABLE["xp.empty_like"] = lambda m: [(lambda p: xp.where(xp.isnan(xp.empty_like(p)), p, p), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.full_like"] = lambda m: [(lambda p: p * xp.full_like(p, 1.5), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.ones_like"] = lambda m: [(lambda p: p * xp.ones_like(p) - xp.ones_like(p), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.zeros_like"] = lambda m: [(lambda p: p * p + xp.zeros_like(p), _pos(m, (5, 3)))]


DIFFERENTIABLE["xp.tril"] = lambda m: [(lambda p, k=k: xp.tril(p, k=k), _pos(m, (5, 3))) for k in (0, 1, -2)]
DIFFERENTIABLE["xp.triu"] = lambda m: [(lambda p, k=k: xp.triu(p, k=k), _pos(m, (5, 3))) for k in (0, 1, -2)]
DIFFERENTIABLE["xp.block"] = lambda m: [(lambda p: xp.block([[p, 2 * p], [p * p, p]]), _pos(m, (5, 3)))]


@case("xp.meshgrid")
def _(m):
    params = {"x": _pos(m, (3,), seed=1), "y": _pos(m, (5,), seed=2)}
    return [(lambda p: tuple(xp.meshgrid(p["x"], p["y"])), params),
            (lambda p: tuple(xp.meshgrid(p["x"], p["y"], indexing="ij")), params)]


# --- xp: indexing, products, manipulation, reductions, scans


@case("xp.take_along_axis")
def _(m):
    x = _pos(m, (5, 3))
    i1 = _ints(m, np.argsort(x.numpy(), axis=1))
    i0 = _ints(m, np.array([[4, 0, 2], [1, 1, 3]]))
    return [(lambda p: xp.take_along_axis(p, i1, axis=1), x), (lambda p: xp.take_along_axis(p, i0, axis=0), x)]


def _matmul(fn):
    def build(m):
        return [(lambda p: fn(p["a"], p["b"]), {"a": _pos(m, (5, 3), seed=1), "b": _pos(m, (3, 4), seed=2)}),
                (lambda p: fn(p["a"], p["b"]), {"a": _pos(m, (2, 5, 3), seed=1), "b": _pos(m, (3,), seed=2)}),
                (lambda p: fn(p["a"], p["b"]), {"a": _pos(m, (3,), seed=1), "b": _pos(m, (2, 3, 5), seed=2)})]

    return build


DIFFERENTIABLE["xp.matmul"] = _matmul(xp.matmul)
DIFFERENTIABLE["xp.linalg.matmul"] = _matmul(xp.linalg.matmul)


DIFFERENTIABLE["xp.matrix_transpose"] = lambda m: [(xp.matrix_transpose, _pos(m, (2, 5, 3)))]
DIFFERENTIABLE["xp.linalg.matrix_transpose"] = lambda m: [(xp.linalg.matrix_transpose, _pos(m, (5, 3)))]


@case("xp.broadcast_arrays")
def _(m):
    params = {"x": _pos(m, (5, 3), seed=1), "y": _pos(m, (3,), seed=2), "z": _pos(m, (5, 1), seed=3)}
    return [(lambda p: tuple(xp.broadcast_arrays(p["x"], p["y"], p["z"])), params)]


@case("xp.broadcast_to")
def _(m):
    return [(lambda p: xp.broadcast_to(p, (4, 5, 3)), _pos(m, (3,))),
            (lambda p: xp.broadcast_to(p, (5, 3)), _pos(m, (5, 1))),
            (lambda p: xp.broadcast_to(p, (2, 5, 3)), _pos(m, (5, 3)))]


@case("xp.moveaxis")
def _(m):
    x = _pos(m, (2, 5, 3))
    return [(lambda p: xp.moveaxis(p, 0, -1), x), (lambda p: xp.moveaxis(p, (0, 1), (2, 0)), x)]


@case("xp.repeat")
def _(m):
    x = _pos(m, (5, 3))
    reps = _ints(m, np.array([2, 0, 1, 3, 1]))
    return [(lambda p: xp.repeat(p, 2, axis=1), x), (lambda p: xp.repeat(p, 3, axis=0), x),
            (lambda p: xp.repeat(p, 2), x), (lambda p: xp.repeat(p, reps, axis=0), x)]


@case("xp.tile")
def _(m):
    x = _pos(m, (5, 3))
    return [(lambda p: xp.tile(p, (2, 1)), x), (lambda p: xp.tile(p, (1, 3)), x), (lambda p: xp.tile(p, (2, 1, 2)), x)]


@case("xp.unstack")
def _(m):
    x = _pos(m, (5, 3))
    return [(lambda p: xp.unstack(p, axis=0), x), (lambda p: xp.unstack(p, axis=1), x)]


@case("xp.diff")
def _(m):
    x = _pos(m, (5, 3))
    params = {"x": x, "pre": _pos(m, (1, 3), seed=1), "app": _pos(m, (2, 3), seed=2)}
    return [(lambda p: xp.diff(p, axis=0), x), (lambda p: xp.diff(p, axis=1, n=2), x),
            (lambda p: xp.diff(p["x"], axis=0, prepend=p["pre"], append=p["app"]), params)]


@case("xp.prod")
def _(m):
    x = _pos(m, (5, 3), 0.5, 2.0)
    return [(lambda p: xp.prod(p, axis=0), x), (lambda p: xp.prod(p, axis=1, keepdims=True), x),
            (lambda p: xp.prod(p), x)]


@case("xp.cumulative_prod")
def _(m):
    x = _pos(m, (5, 3), 0.5, 2.0)
    return [(lambda p: xp.cumulative_prod(p, axis=0), x), (lambda p: xp.cumulative_prod(p, axis=1), x),
            (lambda p: xp.cumulative_prod(p, axis=0, include_initial=True), x)]


# --- xp.linalg (positional matrices, split over the mesh axes)


@case("xp.linalg.cholesky")
def _(m):
    a = _pos(m, None, values=_spd(5))
    return [(lambda p: xp.linalg.cholesky(p), a), (lambda p: xp.linalg.cholesky(p, upper=True), a)]


@case("xp.linalg.cross")
def _(m):
    return [(lambda p: xp.linalg.cross(p["x"], p["y"]), _pxy(m)),
            (lambda p: xp.linalg.cross(p["x"], p["y"], axis=0), _pxy(m, (3, 5)))]


def _xp_half_sym(p):
    """``(p + p^T) / 2``: see ``_half_sym`` (the split Hermitian positive-definite path)."""
    return (p + xp.matrix_transpose(p)) * 0.5


@case("xp.linalg.det")
def _(m):
    batched = _pos(m, None, values=np.stack([_nonsingular(3, 1), _nonsingular(3, 2)]))
    return [(xp.linalg.det, _pos(m, None, values=_nonsingular(5))), (xp.linalg.det, batched),
            (lambda p: xp.linalg.det(_xp_half_sym(p)), _pos(m, None, values=_spd(5) / 5.0))]


@case("xp.linalg.diagonal")
def _(m):
    x = _pos(m, (5, 3))
    return [(lambda p: xp.linalg.diagonal(p), x), (lambda p: xp.linalg.diagonal(p, offset=1), x),
            (lambda p: xp.linalg.diagonal(p, offset=-2), _pos(m, (2, 5, 3)))]


def _xp_eig_input(m):
    d = xp.asarray(np.diag(np.arange(1.0, 6.0)), device=m)
    b = _pos(m, None, values=0.1 * np.random.default_rng(3).standard_normal((5, 5)))
    return d, b


@case("xp.linalg.eigh")
def _(m):
    d, b = _xp_eig_input(m)

    def op(p):
        r = xp.linalg.eigh(d + p + xp.matrix_transpose(p))
        return r.eigenvalues, r.eigenvectors ** 2

    return [(op, b)]


@case("xp.linalg.eig")
def _(m):
    d, b = _xp_eig_input(m)

    def op(p):
        w, v = xp.linalg.eig(d + p)
        return xp.real(w), xp.real(v * xp.conj(v))

    return [(op, b)]


@case("xp.linalg.eigvals")
def _(m):
    d, b = _xp_eig_input(m)
    return [(lambda p: xp.real(xp.linalg.eigvals(d + p)), b)]


@case("xp.linalg.eigvalsh")
def _(m):
    d, b = _xp_eig_input(m)
    return [(lambda p: xp.linalg.eigvalsh(d + p + xp.matrix_transpose(p)), b)]


@case("xp.linalg.inv")
def _(m):
    return [(xp.linalg.inv, _pos(m, None, values=_nonsingular(5))),
            (lambda p: xp.linalg.inv(_xp_half_sym(p)), _pos(m, None, values=_spd(5)))]


@case("xp.linalg.matrix_power")
def _(m):
    a = _pos(m, None, values=_nonsingular(5) / 3.0)
    return [(lambda p, n=n: xp.linalg.matrix_power(p, n), a) for n in (0, 1, 3, -2)]


@case("xp.linalg.outer")
def _(m):
    return [(lambda p: xp.linalg.outer(p["x"], p["y"]), {"x": _pos(m, (5,), seed=1), "y": _pos(m, (3,), seed=2)})]


@case("xp.linalg.lstsq")
def _(m):  # the solution x = pinv(a) b of a full-rank tall system (residuals, rank and s as svdvals')
    return [(lambda p: xp.linalg.lstsq(p["a"], p["b"])[0], {"a": _pos(m, (5, 3), seed=5), "b": _pos(m, (5, 2), seed=6)}),
            (lambda p: xp.linalg.lstsq(p["a"], p["b"])[1], {"a": _pos(m, (5, 3), seed=5), "b": _pos(m, (5,), seed=7)})]


@case("xp.linalg.pinv")
def _(m):
    return [(xp.linalg.pinv, _pos(m, (5, 3), seed=5)), (xp.linalg.pinv, _pos(m, (3, 5), seed=5))]


@case("xp.linalg.qr")
def _(m):
    return [(lambda p: tuple(xp.linalg.qr(p)), _pos(m, (5, 3), seed=6))]


@case("xp.linalg.slogdet")
def _(m):
    return [(lambda p: tuple(xp.linalg.slogdet(p)), _pos(m, None, values=_nonsingular(5))),
            (lambda p: tuple(xp.linalg.slogdet(_xp_half_sym(p))), _pos(m, None, values=_spd(5)))]


@case("xp.linalg.solve")
def _(m):
    params = {"a": _pos(m, None, values=_nonsingular(5)), "b": _pos(m, (5, 3), seed=7)}
    vec = {"a": _pos(m, None, values=_nonsingular(5)), "b": _pos(m, (5,), seed=7)}
    spd = {"a": _pos(m, None, values=_spd(5)), "b": _pos(m, (5, 3), seed=7)}
    return [(lambda p: xp.linalg.solve(p["a"], p["b"]), params), (lambda p: xp.linalg.solve(p["a"], p["b"]), vec),
            (lambda p: xp.linalg.solve(_xp_half_sym(p["a"]), p["b"]), spd)]


@case("xp.linalg.svd")
def _(m):
    def op(p, full=False):
        r = xp.linalg.svd(p, full_matrices=full)
        return r.U ** 2, r.S, r.Vh ** 2

    return [(op, _pos(m, (5, 3), seed=8)), (op, _pos(m, (3, 5), seed=8)),
            (lambda p: op(p, full=True), _pos(m, (4, 4), seed=8))]  # the default (full) on a square matrix


@case("xp.linalg.svdvals")
def _(m):
    return [(xp.linalg.svdvals, _pos(m, (5, 3), seed=8)), (xp.linalg.svdvals, _pos(m, (2, 3, 5), seed=8))]


@case("xp.linalg.tensordot")
def _(m):
    return [(lambda p: xp.linalg.tensordot(p["a"], p["b"], axes=([1], [0])),
             {"a": _pos(m, (5, 3), seed=1), "b": _pos(m, (3, 4), seed=2)}),
            (lambda p: xp.linalg.tensordot(p["a"], p["b"], axes=2),
             {"a": _pos(m, (2, 5, 3), seed=1), "b": _pos(m, (5, 3), seed=2)})]


@case("xp.linalg.trace")
def _(m):
    x = _pos(m, (5, 3))
    return [(xp.linalg.trace, x), (lambda p: xp.linalg.trace(p, offset=1), x),
            (lambda p: xp.linalg.trace(p, offset=-1), _pos(m, (2, 5, 3)))]


@case("xp.linalg.vecdot")
def _(m):
    return [(lambda p: xp.linalg.vecdot(p["x"], p["y"]), _pxy(m)),
            (lambda p: xp.linalg.vecdot(p["x"], p["y"], axis=0), _pxy(m))]


# --- split Hermitian positive-definite matrices, moved off-symmetric by the finite differences (the general path
# must take them: the Cholesky path reads one triangle; see _half_sym)

_SPD_CASES = {
    "sa.linalg.solve": lambda m: (lambda p: sa.linalg.solve(p["a"], p["b"], ("i", "j")),
                                  {"a": _mat(m, _spd(5)), "b": _arr(m, {"j": 5, "k": 3}, seed=7)}),
    "sa.linalg.inv": lambda m: (lambda p: sa.linalg.inv(p, ("i", "j")), _mat(m, _spd(5))),
    "sa.linalg.det": lambda m: (lambda p: sa.linalg.det(p, ("i", "j")), _mat(m, _spd(5))),
    "sa.linalg.slogdet": lambda m: (lambda p: tuple(sa.linalg.slogdet(p, ("i", "j"))), _mat(m, _spd(5))),
    "xp.linalg.solve": lambda m: (lambda p: xp.linalg.solve(p["a"], p["b"]),
                                  {"a": _pos(m, None, values=_spd(5)), "b": _pos(m, (5, 3), seed=7)}),
    "xp.linalg.inv": lambda m: (xp.linalg.inv, _pos(m, None, values=_spd(5))),
    "xp.linalg.det": lambda m: (xp.linalg.det, _pos(m, None, values=_spd(5))),
    "xp.linalg.slogdet": lambda m: (lambda p: tuple(xp.linalg.slogdet(p)), _pos(m, None, values=_spd(5))),
}
for _n, _build in _SPD_CASES.items():
    # (wrong until the Hermitian test's tolerance became the probe's rounding, not 4 sqrt(eps))
    VARIANTS[f"{_n}: split SPD, asymmetric step"] = (_n, _build)


# --- sa.fft and xp.fft (x: 5x6, split; 1-D: 12 entries split over every axis, the four-step path)
#
# Besides the checks through real parts, the VARIANTS read an imaginary part of a transform's output or
# differentiate an imaginary part of its input: the transforms' VJPs follow JAX's convention, as
# real/imag/astype/multiply do (test_no_silent_gradients.py).


class _FFT:
    """One transform of ``sa.fft`` (named: dims a, b / t) or ``xp.fft`` (positional: axes), called by axis."""

    def __init__(self, label, name):
        self.named = label == "sa"
        self.fn = getattr(sa.fft if self.named else xp.fft, name)

    def arr(self, m, shape, seed=0):
        if self.named:
            return _arr(m, dict(zip(("a", "b") if len(shape) == 2 else ("t",), shape)), seed=seed)
        return _pos(m, shape, seed=seed)

    def pair(self, m, shape):
        return {"x": self.arr(m, shape, 1), "y": self.arr(m, shape, 2)}

    def one(self, x, ax, **kw):
        return self.fn(x, x.dims[ax], **kw) if self.named else self.fn(x, axis=ax, **kw)

    def many(self, x, axes=None, **kw):
        if self.named:
            return self.fn(x, None if axes is None else tuple(x.dims[a] for a in axes), **kw)
        return self.fn(x, axes=axes, **kw)

    def real(self, y):
        return sa.real(y) if self.named else xp.real(y)

    def imag(self, y):
        return sa.imag(y) if self.named else xp.imag(y)


def _c(p):
    return p.astype("complex128")


def _fft_cases(label, name):
    """``(good, bugs)``: a builder of the variants that read real parts only, and builders of those reading
    imaginary parts (``{what: case}``). A spec is ``(op, shape)`` of one real parameter, or ``(op, shape, True)``
    of two (``x + 1j*y``)."""
    t = _FFT(label, name)
    if name in ("fft", "ifft"):
        good = [(lambda p: t.real(t.one(p, 1)), (5, 6)), (lambda p: t.real(t.one(p, 0, n=7, norm="forward")), (5, 6)),
                (lambda p: t.real(t.one(_c(p), 1, n=4, norm="ortho")), (5, 6)), (lambda p: t.real(t.one(p, 0)), (12,))]
        bugs = {"complex in and out": (lambda p: t.one(_z(p), 1), (5, 6), True),
                "imag of the output": (lambda p: t.imag(t.one(p, 1)), (5, 6)),
                "1-D four-step, complex": (lambda p: t.one(_z(p), 0), (12,), True)}
    elif name in ("rfft", "ihfft"):
        good = [(lambda p: t.real(t.one(p, 1)), (5, 6)), (lambda p: t.real(t.one(p, 0)), (5, 6)),
                (lambda p: t.real(t.one(p, 1, n=8, norm="ortho")), (5, 6)), (lambda p: t.real(t.one(p, 0)), (12,))]
        bugs = {"imag of the output": (lambda p: t.imag(t.one(p, 1)), (5, 6))}
    elif name in ("irfft", "hfft"):  # a half spectrum of 4 entries: n = 6 or 7
        good = [(lambda p: t.one(_c(p), 1, n=6), (5, 4)), (lambda p: t.one(_c(p), 1, n=7, norm="ortho"), (5, 4)),
                (lambda p: t.one(_c(p), 0), (5, 3)), (lambda p: t.one(_c(p), 0, n=12), (7,))]
        bugs = {"imag of the input": (lambda p: t.one(_z(p), 1, n=6), (5, 4), True)}
    elif name in ("fftn", "ifftn", "fft2", "ifft2"):
        good = [(lambda p: t.real(t.many(p)), (5, 6)), (lambda p: t.real(t.many(p, (1, 0), norm="ortho")), (5, 6)),
                (lambda p: t.real(t.many(_c(p), (0, 1), s=(4, 7))), (5, 6))]
        bugs = {"complex in and out": (lambda p: t.many(_z(p)), (5, 6), True)}
    elif name in ("rfftn", "rfft2"):
        good = [(lambda p: t.real(t.many(p)), (5, 6)),
                (lambda p: t.real(t.many(p, (0, 1), s=(4, 7), norm="ortho")), (5, 6))]
        bugs = {"imag of the output": (lambda p: t.imag(t.many(p)), (5, 6))}
    elif name in ("irfftn", "irfft2"):
        good = [(lambda p: t.many(_c(p), s=(5, 6)), (5, 4)), (lambda p: t.many(_c(p), s=(5, 7), norm="ortho"), (5, 4))]
        bugs = {"imag of the input": (lambda p: t.many(_z(p), s=(5, 6)), (5, 4), True)}
    else:  # fftshift, ifftshift: real in, real out
        good = [(lambda p: t.many(p), (5, 6)), (lambda p: t.many(p, (0,)), (5, 6)), (lambda p: t.many(p), (7,))]
        bugs = {}

    def params(m, shape, pair=False):
        return t.pair(m, shape) if pair else t.arr(m, shape)

    def build_good(m):
        return [(op, params(m, *rest)) for op, *rest in good]

    def bug_case(op, *rest):
        return lambda m: (op, params(m, *rest))

    return build_good, {what: bug_case(*spec) for what, spec in bugs.items()}


for _label in ("sa", "xp"):
    for _n in ("fft", "ifft", "rfft", "ihfft", "irfft", "hfft", "fftn", "ifftn", "rfftn", "irfftn", "fftshift",
               "ifftshift"):
        _good, _bugs = _fft_cases(_label, _n)
        DIFFERENTIABLE[f"{_label}.fft.{_n}"] = _good
        for _what, _build in _bugs.items():
            # (wrong until the FFT VJPs took JAX's convention)
            VARIANTS[f"{_label}.fft.{_n}: {_what}"] = (f"{_label}.fft.{_n}", _build)
for _n in ("fft2", "ifft2", "rfft2", "irfft2"):  # NumPy's 2-D forms (xp only): the n-D cases over 2-D inputs
    DIFFERENTIABLE[f"xp.fft.{_n}"] = _fft_cases("xp", _n)[0]


# ---------------------------------------------------------------------------------------- NONDIFFERENTIABLE
#: name -> (kind, case): "usable" (integer/bool results: case(mesh) -> (op, params), op(params) the op's results),
#: "int_input" (integer operands only: case(mesh) -> (op, params, refused) with refused(p) giving it a float),
#: "raises" (floating results without a rule: case(mesh) -> (op, params, match)), "custom" (a test of its own)
NONDIFFERENTIABLE = {}


def _shared_nondiff(label, name):
    """The comparisons, logical, unique and bitwise ops that ``sa`` and ``xp`` both have."""
    f = getattr(SPACES[label], name)

    def x(m):
        return _ab(m) if label == "sa" else _pos(m, (5, 3))

    if name in ("equal", "greater", "greater_equal", "less", "less_equal", "not_equal"):
        return "usable", lambda m: (lambda p: (f(p, 0.1), f(p, p * 0.5)), x(m))
    if name == "logical_not":
        return "usable", lambda m: (lambda p: f(p > 0.1), x(m))
    if name.startswith("logical_"):
        return "usable", lambda m: (lambda p: f(p > 0.1, p < 1.0), x(m))
    if name.startswith("unique_"):
        return "raises", lambda m: (f, x(m), rf"sa\.{name} is not differentiable.*sa\.stop_gradient")
    if name == "bitwise_invert":
        return "int_input", lambda m: (lambda p: f((p > 0).astype("int64")), x(m), f)
    assert name.startswith("bitwise_"), name
    return "int_input", lambda m: (lambda p: f((p > 0).astype("int64") + 1, (p > 1.0).astype("int64")), x(m),
                                   lambda p: f(p, p))


for _label in ("sa", "xp"):
    for _n in ("equal", "greater", "greater_equal", "less", "less_equal", "not_equal", "logical_and", "logical_or",
               "logical_xor", "logical_not", "unique_values", "unique_counts", "unique_inverse", "unique_all",
               "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
               "bitwise_invert"):
        NONDIFFERENTIABLE[f"{_label}.{_n}"] = _shared_nondiff(_label, _n)

# sa: named reductions, sorting, searching, masks
NONDIFFERENTIABLE.update({
    "sa.all": ("usable", lambda m: (lambda p: (sa.all(p > -1.9, "b"), sa.all(p > 0)), _ab(m))),
    "sa.any": ("usable", lambda m: (lambda p: (sa.any(p > 1.0, "a"), sa.any(p > 0)), _ab(m))),
    "sa.argmax": ("usable", lambda m: (lambda p: (sa.argmax(p, "b"), sa.argmax(p, "a"),
                                                   sa.argmax(p.merge_dims(("a", "b"), "f"), "f")), _ab(m))),
    "sa.argmin": ("usable", lambda m: (lambda p: (sa.argmin(p, "b"), sa.argmin(p, "a"),
                                                   sa.argmin(p.merge_dims(("b", "a"), "f"), "f")), _ab(m))),
    "sa.argsort": ("usable", lambda m: (lambda p: (sa.argsort(p, "a"), sa.argsort(p, "b", descending=True)), _ab(m))),
    "sa.count_nonzero": ("usable", lambda m: (lambda p: (sa.count_nonzero(p > 0), sa.count_nonzero(p > 0, "a")),
                                              _ab(m))),
    "sa.nonzero": ("usable", lambda m: (lambda p: sa.nonzero(p > 0.1), _ab(m))),
    "sa.searchsorted": ("usable", lambda m: (lambda p: (sa.searchsorted(sa.sort(sa.isel(p, {"b": 0}), "a"), p),
                                                         sa.searchsorted(sa.sort(sa.isel(p, {"b": 1}), "a"), p,
                                                                         side="right")), _ab(m))),
    "sa.linalg.matrix_rank": ("usable", lambda m: (lambda p: sa.linalg.matrix_rank(p, ("a", "b")), _ab(m))),
    "sa.unique": ("raises", lambda m: (lambda p: sa.unique(p), _ab(m), r"sa\.unique is not differentiable")),
    "sa.mask_assign": ("raises", lambda m: (lambda p: _mask_assign(p), _ab(m),
                                            r"x\[mask\] = v .*writes in place are not differentiable")),
    "sa.one_hot": ("int_input", lambda m: (lambda p: sa.one_hot(sa.argmax(p, "b"), "k", 4), _ab(m),
                                           lambda p: sa.one_hot(p, "k", 4))),
    "sa.show": ("custom", None),
    "sa.stop_gradient": ("custom", None),
    "sa.nn.check_params": ("custom", None),
})

# xp: positional reductions, sorting, searching, float classification
NONDIFFERENTIABLE.update({
    "xp.all": ("usable", lambda m: (lambda p: (xp.all(p > -1.9, axis=1), xp.all(p > 0)), _pos(m, (5, 3)))),
    "xp.any": ("usable", lambda m: (lambda p: (xp.any(p > 1.0, axis=0), xp.any(p > 0)), _pos(m, (5, 3)))),
    "xp.argmax": ("usable", lambda m: (lambda p: (xp.argmax(p, axis=1), xp.argmax(p, axis=0, keepdims=True),
                                                   xp.argmax(p)), _pos(m, (5, 3)))),
    "xp.argmin": ("usable", lambda m: (lambda p: (xp.argmin(p, axis=1), xp.argmin(p)), _pos(m, (5, 3)))),
    "xp.argsort": ("usable", lambda m: (lambda p: (xp.argsort(p, axis=0), xp.argsort(p, descending=True)),
                                        _pos(m, (5, 3)))),
    "xp.count_nonzero": ("usable", lambda m: (lambda p: (xp.count_nonzero(p > 0), xp.count_nonzero(p > 0, axis=0)),
                                              _pos(m, (5, 3)))),
    "xp.nonzero": ("usable", lambda m: (lambda p: xp.nonzero(p > 0.1), _pos(m, (5, 3)))),
    "xp.searchsorted": ("usable", lambda m: (lambda p: xp.searchsorted(xp.sort(p[:, 0]), p[:, 1]), _pos(m, (5, 3)))),
    "xp.isfinite": ("usable", lambda m: (xp.isfinite, _pos(m, (5, 3)))),
    "xp.isinf": ("usable", lambda m: (xp.isinf, _pos(m, (5, 3)))),
    "xp.isnan": ("usable", lambda m: (xp.isnan, _pos(m, (5, 3)))),
    "xp.signbit": ("usable", lambda m: (xp.signbit, _pos(m, (5, 3)))),
    "xp.linalg.matrix_rank": ("usable", lambda m: (xp.linalg.matrix_rank, _pos(m, (5, 3)))),
    "xp.nextafter": ("raises", lambda m: (lambda p: xp.nextafter(p, 0.0), _pos(m, (5, 3)),
                                          r"sa\.nextafter is not differentiable")),
    "xp.spacing": ("raises", lambda m: (xp.spacing, _pos(m, (5, 3)), r"sa\.nextafter is not differentiable")),
})


# xp's NumPy extras beyond the standard (xarray & co. call them on duck arrays): NaN at fixed entries, whose
# gradient is zero, every other entry's as NumPy's nan-function treats it
_NAN_AT = np.zeros((5, 3), dtype=bool)
_NAN_AT[0, 0] = _NAN_AT[2, 1] = _NAN_AT[4, 2] = True


def _nanify(p):
    return xp.where(xp.asarray(_NAN_AT, device=p.mesh), xp.nan, p)


for _name, _calls in {
    "nansum": (lambda p: xp.nansum(p, axis=0), lambda p: xp.nansum(p)),
    "nanprod": (lambda p: xp.nanprod(p, axis=1),),
    "nanmean": (lambda p: xp.nanmean(p, axis=0), lambda p: xp.nanmean(p, axis=1, keepdims=True)),
    "nanvar": (lambda p: xp.nanvar(p, axis=0), lambda p: xp.nanvar(p, ddof=1)),
    "nanstd": (lambda p: xp.nanstd(p, axis=1),),
    "nanmax": (lambda p: xp.nanmax(p, axis=0), lambda p: xp.nanmax(p)),
    "nanmin": (lambda p: xp.nanmin(p, axis=1),),
    "nancumsum": (lambda p: xp.nancumsum(p, axis=0), lambda p: xp.nancumsum(p)),
    "nancumprod": (lambda p: xp.nancumprod(p, axis=1),),
    "nanquantile": (lambda p: xp.nanquantile(p, 0.3, axis=0),),
    "nanmedian": (lambda p: xp.nanmedian(p, axis=1),),
}.items():
    DIFFERENTIABLE[f"xp.{_name}"] = lambda m, calls=_calls: [
        (lambda p, c=c: c(_nanify(p)), _pos(m, (5, 3), seed=7)) for c in calls]
DIFFERENTIABLE["xp.quantile"] = lambda m: [
    (lambda p, q=q, meth=meth: xp.quantile(p, q, axis=0, method=meth), _pos(m, (5, 3), seed=7))
    for q, meth in ((0.3, "linear"), (0.5, "midpoint"), (0.9, "nearest"))]
DIFFERENTIABLE["xp.cumsum"] = lambda m: [(lambda p: xp.cumsum(p, axis=0), _pos(m, (5, 3))),
                                         (lambda p: xp.cumsum(p), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.cumprod"] = lambda m: [(lambda p: xp.cumprod(p, axis=1), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.cov"] = lambda m: [(lambda p: xp.cov(p), _pos(m, (3, 5))),
                                      (lambda p: xp.cov(p, rowvar=False, aweights=np.arange(1.0, 4.0)),
                                       _pos(m, (3, 5)))]
DIFFERENTIABLE["xp.gradient"] = lambda m: [(lambda p: xp.gradient(p, axis=0), _pos(m, (5, 3))),
                                           (lambda p: xp.gradient(p, np.array([0.0, 0.5, 1.5]), axis=1, edge_order=2),
                                            _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.median"] = lambda m: [(lambda p: xp.median(p, axis=0), _pos(m, (5, 3), seed=7)),
                                         (lambda p: xp.median(p), _pos(m, (5, 3), seed=7))]
DIFFERENTIABLE["xp.pad"] = lambda m: [
    (lambda p, kw=kw: xp.pad(p, ((1, 2), (2, 0)), **kw), _pos(m, (5, 3)))
    for kw in ({}, {"mode": "edge"}, {"mode": "reflect"}, {"mode": "symmetric"}, {"mode": "wrap"},
               {"constant_values": 1.5})]
DIFFERENTIABLE["xp.sliding_window_view"] = lambda m: [
    (lambda p: xp.sliding_window_view(p, 2, axis=0), _pos(m, (5, 3))),
    (lambda p: xp.sliding_window_view(p, (2, 2)), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.transpose"] = lambda m: [(lambda p: xp.transpose(p), _pos(m, (5, 3))),
                                            (lambda p: xp.transpose(p, (1, 0)), _pos(m, (5, 3)))]
NONDIFFERENTIABLE.update({
    "xp.nanargmax": ("usable", lambda m: (lambda p: (xp.nanargmax(_nanify(p), axis=1), xp.nanargmax(_nanify(p))),
                                          _pos(m, (5, 3)))),
    "xp.nanargmin": ("usable", lambda m: (lambda p: xp.nanargmin(_nanify(p), axis=0), _pos(m, (5, 3)))),
})


def _mask_assign(p):
    q = p * 1.0
    mask = sa.asarray(np.arange(15).reshape(5, 3) % 2 == 0, dims=("a", "b"), mesh=p.mesh)
    sa.mask_assign(q, mask, 0.0)
    return q


# ------------------------------------------------------------------------------------------- NO_ARRAY_INPUT
_ERRORS = ("ArgumentError", "BackendError", "CastError", "CheckpointError", "CommError", "DTypeError",
           "DimensionError", "DivisionByZeroError", "ExistingFileError", "ExportError", "LayoutError", "MeshError", "MissingFileError", "ShardArrayError",
           "TapeError")
NO_ARRAY_INPUT = {f"sa.{n}": "class: an exception type" for n in _ERRORS}
NO_ARRAY_INPUT.update({f"sa.{n}": "module" for n in (
    "checkpoint", "fft", "hardware", "io", "linalg", "matmul", "nn", "optim", "plan", "profiler", "random",
    "threads", "tree")})
NO_ARRAY_INPUT.update({
    "sa.CommLog": "class: the comm log's record list",
    "sa.CommRecord": "class: one comm log record",
    "sa.Layout": "class: a layout description",
    "sa.Mesh": "class: the device mesh",
    "sa.Profile": "class: a profile's result",
    "sa.ShardArray": "class: the array type itself",
    "sa.comm_log": "context manager recording collectives",
    "sa.default_mesh": "context manager setting the default mesh",
    "sa.profile": "context manager/profiler: takes a callback, no array",
    "sa.get_default_mesh": "mesh config helper",
    "sa.set_default_mesh": "mesh config helper",
    "sa.from_local": "creation: an array from process-local (NumPy) blocks",
    "sa.full": "creation: (mesh, sizes, fill value)",
    "sa.ones": "creation: (mesh, sizes)",
    "sa.zeros": "creation: (mesh, sizes)",
    "sa.grad": "autograd transform: takes a function",
    "sa.value_and_grad": "autograd transform: takes a function",
    "sa.vjp": "autograd transform: takes a function",
    "sa.graphed": "function transform: takes a function (captured as a CUDA graph)",
    "sa.linalg.EigResult": "class: a result tuple",
    "sa.linalg.EighResult": "class: a result tuple",
    "sa.linalg.QRResult": "class: a result tuple",
    "sa.linalg.SVDResult": "class: a result tuple",
    "sa.linalg.SlogdetResult": "class: a result tuple",
    "sa.linalg.LinAlgError": "class: an exception type",
    "sa.linalg.MatrixShapeError": "class: an exception type",
    "sa.linalg.ReplicatedFallbackWarning": "class: a warning type",
    "sa.GatherWarning": "class: a warning type",
    "sa.CopyWriteWarning": "class: a warning type",
    "sa.GraphError": "class: an exception type",
    "sa.OutOfBoundsError": "class: an exception type",
    "sa.IndexingError": "class: an exception type",
    "sa.IndexTypeError": "class: an exception type",
    "xp.lib": "module: NumPy's lib namespace on duck arrays (stride_tricks.sliding_window_view)",
    "sa.fft.fftfreq": "creation: (mesh, n) sample frequencies",
    "sa.fft.rfftfreq": "creation: (mesh, n) sample frequencies",
    "sa.nn.STRATEGIES": "constant: the strategy names",
    "sa.nn.AutoChoice": "class: strategy='auto''s search result",
    "sa.nn.auto_choice": "planner helper: searches rules for a config and mesh shape",
    "sa.nn.auto_rules": "planner helper: searches rules for a config and mesh shape",
    "sa.nn.load_rules": "file helper: reads a rules JSON file",
    "sa.nn.save_rules": "file helper: writes a rules JSON file",
    "sa.nn.TransformerConfig": "class: the model config",
    "sa.nn.data": "module: the synthetic task",
    "sa.nn.init_transformer": "creation: parameters from (config, mesh, seed)",
    "sa.nn.param_count": "config helper: takes a config",
    "sa.nn.param_layout": "config helper: a layout from names and rules",
    "sa.nn.param_shapes": "config helper: takes a config",
    "sa.nn.strategy_rules": "mesh config helper: layout rules of a strategy",
    "xp.Array": "class: the positional array type",
    "xp.__array_api_version__": "constant: the standard's version string",
    "xp.__array_namespace_info__": "inspection helper: the namespace's devices and dtypes",
    "xp.linalg": "module",
    "xp.arange": "creation: from scalars",
    "xp.empty": "creation: from a shape",
    "xp.eye": "creation: from a shape",
    "xp.identity": "creation: from a shape",
    "xp.tri": "creation: from a shape",
    "xp.indices": "creation: a grid of indices from a shape",
    "xp.full": "creation: from a shape and a scalar",
    "xp.linspace": "creation: from scalars",
    "xp.logspace": "creation: from scalars",
    "xp.ones": "creation: from a shape",
    "xp.zeros": "creation: from a shape",
    "xp.can_cast": "dtype helper: dtypes in, bool out",
    "xp.finfo": "dtype helper: dtype in, limits out",
    "xp.iinfo": "dtype helper: dtype in, limits out",
    "xp.isdtype": "dtype helper: dtype in, bool out",
    "xp.result_type": "dtype helper: reads only dtypes, returns a dtype",
    "xp.fft.fftfreq": "creation: (n, d) sample frequencies",
    "xp.fft.rfftfreq": "creation: (n, d) sample frequencies",
})
NO_ARRAY_INPUT.update({f"xp.{n}": "constant: a Python float (or None)" for n in ("e", "pi", "inf", "nan", "newaxis")})
NO_ARRAY_INPUT.update({f"xp.{n}": "dtype object" for n in (
    "bool", "complex64", "complex128", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64")})


# xp's NumPy math and polynomial extras (_numpy_math): heaviside's step has gradient 0 in x1 and flows to x2 at 0
DIFFERENTIABLE["xp.exp2"] = lambda m: [(xp.exp2, _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.heaviside"] = lambda m: [(lambda p: xp.heaviside(p, 0.5), _pos(m, (5, 3))),
                                            (lambda p: xp.heaviside(xp.round(p), p), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.sinc"] = lambda m: [(xp.sinc, _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.nan_to_num"] = lambda m: [(lambda p: xp.nan_to_num(_nanify(p), nan=1.5), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.polyval"] = lambda m: [(lambda p: xp.polyval([1.0, -2.0, 0.5], p), _pos(m, (5, 3))),
                                          (lambda p: xp.polyval(p[:, 0], p[:3, 1]), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.kron"] = lambda m: [(lambda p: xp.kron(p, p[:2, :2]), _pos(m, (5, 3))),
                                       (lambda p: xp.kron(p[:, 0], p[:2, 1]), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.correlate"] = lambda m: [(lambda p, md=md: xp.correlate(p[:, 0], p[:3, 1], mode=md), _pos(m, (5, 3)))
                                            for md in ("valid", "same", "full")]
DIFFERENTIABLE["xp.cross"] = lambda m: [(lambda p: xp.cross(p[:, 0:3], p[0, 0:3]), _pos(m, (5, 3))),
                                        (lambda p: xp.cross(p[0:3, :], p[0:3, 1:2], axisa=0, axisb=0), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.diag"] = lambda m: [(lambda p: xp.diag(p, 1), _pos(m, (5, 3))),
                                       (lambda p: xp.diag(p[:, 0], -2), _pos(m, (5, 3)))]
DIFFERENTIABLE["xp.convolve"] = lambda m: [(lambda p, md=md: xp.convolve(p[:, 0], p[:3, 1], mode=md), _pos(m, (5, 3)))
                                           for md in ("full", "same", "valid")]

# xp's counts and bins (_numpy_counts.py): sums of weights, interpolants, percentiles, correlations; int/bool results
_IDS7 = np.array([0, 3, 1, 3, 0, 2, 5])
DIFFERENTIABLE["xp.bincount"] = lambda m: [(lambda p: xp.bincount(xp.asarray(_IDS7, device=p.mesh), weights=p),
                                            _pos(m, (7,)))]
DIFFERENTIABLE["xp.histogram"] = lambda m: [
    (lambda p: xp.histogram(xp.asarray(_values((5, 3), seed=3), device=p.mesh), bins=3, weights=p), _pos(m, (5, 3))),
    (lambda p: xp.histogram(p, bins=4)[1], _pos(m, (5, 3)))]  # (the edges move with the data's min and max)
DIFFERENTIABLE["xp.histogramdd"] = lambda m: [
    (lambda p: xp.histogramdd(xp.asarray(_values((5, 2), seed=3), device=p.mesh), bins=[3, 2], weights=p)[0],
     _pos(m, (5,))),
    (lambda p: xp.histogramdd(p, bins=[3, 2])[1][1], _pos(m, (5, 2)))]  # (the edges move with the data's extremes)
DIFFERENTIABLE["xp.histogram2d"] = lambda m: [
    (lambda p: xp.histogram2d(p[:, 0], p[:, 1], bins=2, weights=p[:, 0] * p[:, 1])[0], _pos(m, (6, 2))),
    (lambda p: xp.histogram2d(p[:, 0], p[:, 1], bins=3)[1], _pos(m, (6, 2)))]
DIFFERENTIABLE["xp.interp"] = lambda m: [
    (lambda p: xp.interp(p, [-1.5, -0.3, 0.4, 1.7], [1.0, -2.0, 0.5, 3.0]), _pos(m, (5, 3))),
    (lambda p: xp.interp(xp.asarray(np.linspace(-0.9, 0.9, 5), device=p.mesh), np.linspace(-2.0, 2.0, 7), p),
     _pos(m, (7,)))]
DIFFERENTIABLE["xp.percentile"] = lambda m: [(lambda p: xp.percentile(p, 30, axis=0), _pos(m, (5, 3), seed=7)),
                                             (lambda p: xp.percentile(p, [20, 70]), _pos(m, (5, 3), seed=7))]
DIFFERENTIABLE["xp.nanpercentile"] = lambda m: [(lambda p: xp.nanpercentile(_nanify(p), 30, axis=0),
                                                 _pos(m, (5, 3), seed=7))]
DIFFERENTIABLE["xp.corrcoef"] = lambda m: [(lambda p: xp.corrcoef(p), _pos(m, (3, 5))),
                                           (lambda p: xp.corrcoef(p, rowvar=False), _pos(m, (5, 3)))]
NONDIFFERENTIABLE.update({
    "xp.digitize": ("usable", lambda m: (lambda p: (xp.digitize(p, [-1.0, 0.0, 1.0]),
                                                    xp.digitize(p, [1.0, 0.0], right=True)), _pos(m, (5, 3)))),
    "xp.isin": ("usable", lambda m: (lambda p: (xp.isin(p > 0, [True]), xp.isin(p, p[0])), _pos(m, (5, 3)))),
})
# NumPy's set routines are built on unique: a traced input is refused there, naming it
NONDIFFERENTIABLE.update({
    f"xp.{n}": ("raises", (lambda n: lambda m: (lambda p: getattr(xp, n)(p, p[0]), _pos(m, (5, 3)),
                                                r"sa\.unique is not differentiable"))(n))
    for n in ("intersect1d", "setdiff1d", "setxor1d", "union1d")
})


# xp's shape, sorting and construction extras (_numpy_shapes.py) and linalg.cond; lexsort/argpartition give ints
_EDGE0 = np.array([0.0, 1.0, 1.0, 1.0, 0.0])
DIFFERENTIABLE.update({
    "xp.rot90": lambda m: [(lambda p: xp.rot90(p), _pos(m, (5, 3))), (lambda p: xp.rot90(p, 3, (1, 0)), _pos(m, (5, 3))),
                           (lambda p: xp.rot90(p, 2), _pos(m, (5, 3))), (lambda p: xp.rot90(p, 0), _pos(m, (5, 3)))],
    "xp.delete": lambda m: [(lambda p: xp.delete(p, [0, 3], axis=0), _pos(m, (5, 3))),
                            (lambda p: xp.delete(p, slice(1, None, 3)), _pos(m, (5, 3)))],
    "xp.insert": lambda m: [(lambda p: xp.insert(p, 1, p[:, 0], axis=1), _pos(m, (5, 3))),
                            (lambda p: xp.insert(p[:, 0], [4, 1, 1], p[:3, 1]), _pos(m, (5, 3)))],
    "xp.ediff1d": lambda m: [(lambda p: xp.ediff1d(p, to_begin=p[0, :2], to_end=1.0), _pos(m, (5, 3)))],
    "xp.resize": lambda m: [(lambda p: xp.resize(p, (4, 5)), _pos(m, (5, 3)))],
    "xp.trim_zeros": lambda m: [(lambda p: xp.trim_zeros(p[:, 0] * xp.asarray(_EDGE0, device=p.mesh)),
                                 _pos(m, (5, 3)))],
    "xp.vander": lambda m: [(lambda p: xp.vander(p[:, 0], 4), _pos(m, (5, 3))),
                            (lambda p: xp.vander(p[:, 1], increasing=True), _pos(m, (5, 3)))],
    "xp.select": lambda m: [(lambda p: xp.select([p > 0.5, p < -1.0], [p, p * 2.0], default=p * 3.0),
                             _pos(m, (5, 3)))],
    "xp.unwrap": lambda m: [(lambda p: xp.unwrap(p * 3.0, axis=0), _pos(m, (5, 3))),
                            (lambda p: xp.unwrap(p, period=2.0), _pos(m, (5, 3)))],
    "xp.trapezoid": lambda m: [(lambda p: xp.trapezoid(p, axis=0), _pos(m, (5, 3))),
                               (lambda p: xp.trapezoid(p[:, 0], p[:, 1]), _pos(m, (5, 3)))],
    "xp.partition": lambda m: [(lambda p: xp.partition(p, 1, axis=0), _pos(m, (5, 3))),
                               (lambda p: xp.partition(p, [0, 2], axis=None), _pos(m, (5, 3)))],
    "xp.linalg.cond": lambda m: [(lambda p: xp.linalg.cond(p), _pos(m, (4, 4), values=_nonsingular(4))),
                                 (lambda p: xp.linalg.cond(p, "fro"), _pos(m, (4, 4), values=_nonsingular(4)))],
})
NONDIFFERENTIABLE.update({
    "xp.lexsort": ("usable", lambda m: (lambda p: xp.lexsort((p[:, 0], p[:, 1] > 0)), _pos(m, (5, 3)))),
    "xp.argpartition": ("usable", lambda m: (lambda p: xp.argpartition(p, 1, axis=0), _pos(m, (5, 3)))),
})


# xp's NumPy elementwise extras (_numpy_ufuncs.py): fmod/divmod/modf/fix piecewise, frexp's mantissa 2**-e; int/bool
DIFFERENTIABLE.update({
    "xp.fmod": lambda m: [(lambda p: xp.fmod(p, 0.7), _pos(m, (5, 3))),
                          (lambda p: xp.fmod(p * 3.0, p + 2.5), _pos(m, (5, 3)))],
    "xp.divmod": lambda m: [(lambda p: xp.divmod(p, 0.7), _pos(m, (5, 3))),
                            (lambda p: xp.divmod(p * 3.0, p + 2.5), _pos(m, (5, 3)))],
    "xp.modf": lambda m: [(lambda p: xp.modf(p * 3.0), _pos(m, (5, 3)))],
    "xp.fix": lambda m: [(lambda p: xp.fix(p * 3.0), _pos(m, (5, 3)))],
    "xp.float_power": lambda m: [(lambda p: xp.float_power(p + 2.5, p), _pos(m, (5, 3)))],
    "xp.cbrt": lambda m: [(xp.cbrt, _pos(m, (5, 3)))],
    "xp.fmax": lambda m: [(lambda p: xp.fmax(p, xp.flip(p, axis=0)), _pos(m, (5, 3)))],
    "xp.fmin": lambda m: [(lambda p: xp.fmin(p, 0.5), _pos(m, (5, 3)))],
    "xp.logaddexp2": lambda m: [(lambda p: xp.logaddexp2(p, p * 0.5 + 1.0), _pos(m, (5, 3)))],
    "xp.fabs": lambda m: [(xp.fabs, _pos(m, (5, 3)))],
    "xp.deg2rad": lambda m: [(xp.deg2rad, _pos(m, (5, 3)))],
    "xp.radians": lambda m: [(xp.radians, _pos(m, (5, 3)))],
    "xp.rad2deg": lambda m: [(xp.rad2deg, _pos(m, (5, 3)))],
    "xp.degrees": lambda m: [(xp.degrees, _pos(m, (5, 3)))],
    "xp.frexp": lambda m: [(lambda p: xp.frexp(p * 5.0), _pos(m, (5, 3)))],
    "xp.ldexp": lambda m: [(lambda p: xp.ldexp(p, 3), _pos(m, (5, 3))),
                           (lambda p: xp.ldexp(p, xp.astype(p > 0, xp.int64) - 2), _pos(m, (5, 3)))],
    "xp.angle": lambda m: [(lambda p: xp.angle(p[:, 0] + 1j * p[:, 1], deg=True), _pos(m, (5, 3))),
                           (xp.angle, _pos(m, (5, 3)))],
    "xp.real_if_close": lambda m: [(lambda p: xp.real_if_close(p + 0j), _pos(m, (5, 3))),
                                   (lambda p: xp.real_if_close(p + 1j * p), _pos(m, (5, 3)))],
    "xp.i0": lambda m: [(lambda p: xp.i0(p * 6.0), _pos(m, (5, 3)))],
})
NONDIFFERENTIABLE.update({
    "xp.packbits": ("int_input", lambda m: (lambda p: xp.packbits(p > 0, axis=0), _pos(m, (5, 3)),
                                            lambda p: xp.packbits(p))),
    "xp.unpackbits": ("int_input", lambda m: (lambda p: xp.unpackbits(xp.astype(xp.abs(p) * 60, xp.uint8), axis=1),
                                              _pos(m, (5, 3)), lambda p: xp.unpackbits(p))),
    "xp.gcd": ("int_input", lambda m: (lambda p: xp.gcd(xp.astype(p * 10, xp.int64), 6), _pos(m, (5, 3)),
                                       lambda p: xp.gcd(p, p))),
    "xp.lcm": ("int_input", lambda m: (lambda p: xp.lcm(xp.astype(p * 10, xp.int64), 4), _pos(m, (5, 3)),
                                       lambda p: xp.lcm(p, 2))),
    "xp.isposinf": ("usable", lambda m: (lambda p: xp.isposinf(p / (p > 0)), _pos(m, (5, 3)))),
    "xp.isneginf": ("usable", lambda m: (lambda p: xp.isneginf(p / (p > 0)), _pos(m, (5, 3)))),
    "xp.isreal": ("usable", lambda m: (lambda p: (xp.isreal(p), xp.isreal(p + 1j * (p > 0))), _pos(m, (5, 3)))),
    "xp.iscomplex": ("usable", lambda m: (lambda p: (xp.iscomplex(p), xp.iscomplex(p + 1j * (p > 0))),
                                          _pos(m, (5, 3)))),
})


def _params(names):
    out = []
    for name in names:
        for mid in MESHES:
            out.append(pytest.param(name, mid, id=f"{name}-{mid}"))
    return out


# -------------------------------------------------------------------------------------------------- tests


def test_every_public_name_is_classified():
    """The three classes are exactly the public names not covered by test_op_registry_gradients.py, no overlap."""
    classes = {"DIFFERENTIABLE": set(DIFFERENTIABLE), "NONDIFFERENTIABLE": set(NONDIFFERENTIABLE),
               "NO_ARRAY_INPUT": set(NO_ARRAY_INPUT)}
    assert COVERED <= PUBLIC, sorted(COVERED - PUBLIC)
    expected = PUBLIC - COVERED
    union = set().union(*classes.values())
    assert not expected - union, f"unclassified public names: {sorted(expected - union)}"
    assert not union - expected, f"classified but not public (or already covered): {sorted(union - expected)}"
    names = list(classes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not classes[a] & classes[b], (a, b, sorted(classes[a] & classes[b]))
    for name, _ in VARIANTS.values():  # a variant is a case of a differentiable op
        assert name in DIFFERENTIABLE, name
    for name in NO_ARRAY_INPUT:
        label, _, attr = name.rpartition(".")
        assert hasattr(SPACES[label], attr), name


@pytest.mark.parametrize("variant,mesh_id", [pytest.param(v, mid, id=f"{v.replace(': ', '/').replace(' ', '_')}-{mid}")
                                              for v in sorted(VARIANTS) for mid in MESHES])
def test_gradient_variants(variant, mesh_id):
    """Complex inputs and imaginary parts of the FFTs (the VJPs follow JAX's convention, as real/imag/conj do),
    complex inputs of the array API's special-value ops, and asymmetric steps of split positive-definite solves."""
    name, build = VARIANTS[variant]
    assert name in DIFFERENTIABLE
    op, params = build(registry.make_mesh(MESHES[mesh_id]))
    with warnings.catch_warnings():  # a split matrix that is not Hermitian: the general, replicated path
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        check_grad(_weighted_loss(op, params), params, rtol=1e-5, atol=1e-7, directions=2)


@pytest.mark.parametrize("name,mesh_id", _params(sorted(DIFFERENTIABLE)))
def test_differentiable(name, mesh_id):
    mesh = registry.make_mesh(MESHES[mesh_id])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        for k, (op, params) in enumerate(DIFFERENTIABLE[name](mesh)):
            loss = _weighted_loss(op, params)
            check_grad(loss, params, seed=k, rtol=1e-5, atol=1e-7, directions=2)


def _int_results(out):
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    arrays = [y for y in items if isinstance(y, sa.ShardArray)]
    assert arrays and all(y.dtype.kind in "biu" for y in arrays), [y.dtype for y in arrays]
    return arrays


def _usable_loss(op, params, seed=0):
    """``(p * w0).sum() + sum_k (float(result_k) * w_k).sum()``: the results are constants (no gradient)."""
    first = params if isinstance(params, sa.ShardArray) else next(iter(params.values()))
    w0 = _weights(first, seed)
    ws = [_weights(y.astype("float64"), seed + 1 + k) for k, y in enumerate(_int_results(op(params)))]

    def loss(p):
        x = p if isinstance(p, sa.ShardArray) else next(iter(p.values()))
        total = _weighted_sum(x, w0)
        for y, w in zip(_int_results(op(p)), ws):
            total = total + _weighted_sum(y.astype("float64"), w)
        return total

    return loss, w0


@pytest.mark.parametrize("name,mesh_id", _params(sorted(n for n, (k, _) in NONDIFFERENTIABLE.items() if k != "custom")))
def test_nondifferentiable(name, mesh_id):
    mesh = registry.make_mesh(MESHES[mesh_id])
    kind, build = NONDIFFERENTIABLE[name]
    if kind == "usable":
        op, params = build(mesh)
        loss, w0 = _usable_loss(op, params)
        g = check_grad(loss, params, directions=1)
        np.testing.assert_allclose(np.asarray(g.numpy()), np.asarray(w0.numpy()), rtol=1e-12, atol=1e-12)
    elif kind == "int_input":
        op, params, refused = build(mesh)
        loss, w0 = _usable_loss(op, params) if _is_int_out(op(params)) else _float_const_loss(op, params)
        g = check_grad(loss, params, directions=1)
        np.testing.assert_allclose(np.asarray(g.numpy()), np.asarray(w0.numpy()), rtol=1e-12, atol=1e-12)
        with pytest.raises(sa.DTypeError):  # a floating operand is refused, never silently truncated
            sa.grad(lambda p: _total(refused(p)))(params)
    else:
        op, params, match = build(mesh)
        with pytest.raises(sa.TapeError, match=match):
            sa.grad(lambda p: _total(op(p)))(params)
        g = sa.grad(lambda p: _total(op(sa.stop_gradient(p))) * 0.0 + _total(p))(params)  # the way out works
        np.testing.assert_array_equal(np.asarray(g.numpy()), np.ones(params.shape))


def _is_int_out(out):
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    return all(y.dtype.kind in "biu" for y in items if isinstance(y, sa.ShardArray))


def _float_const_loss(op, params):
    """A floating result computed from integer operands only (one_hot of argmax): a constant in the loss."""
    w0 = _weights(params, 0)
    y0 = op(params)
    w = _weights(y0, 1)
    return (lambda p: _weighted_sum(p, w0) + _weighted_sum(op(p), w)), w0


def _total(out):
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    total = None
    for y in items:
        if isinstance(y, sa.ShardArray):
            y = y.astype("float64") if y.dtype.kind in "biu" else (sa.real(y) if y.dtype.kind == "c" else y)
            s = xp.sum(y) if y.positional else y.sum()
            total = s if total is None else total + s
    return total


@pytest.mark.parametrize("mesh_id", list(MESHES))
def test_stop_gradient_blocks_the_gradient(mesh_id):
    """stop_gradient: the value passes, the gradient is exactly 0 (declared; finite differences would say 1)."""
    mesh = registry.make_mesh(MESHES[mesh_id])
    x = _ab(mesh)
    w = _weights(x, 1)
    loss, g = sa.value_and_grad(lambda p: (sa.stop_gradient(p) * w).sum() + (p * p).sum())(x)
    np.testing.assert_allclose(float(loss), float((x * w).sum() + (x * x).sum()), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy(), rtol=1e-12)
    assert g.layout == x.layout


@pytest.mark.parametrize("mesh_id", list(MESHES))
def test_show_and_check_params_on_traced_arrays(mesh_id):
    """sa.show (a string) and sa.nn.check_params (None) read no values: usable inside value_and_grad."""
    mesh = registry.make_mesh(MESHES[mesh_id])
    x = _ab(mesh)
    w = _weights(x, 1)

    def loss(p):
        assert isinstance(sa.show(p), str)
        return (p * w).sum()

    g = check_grad(loss, x, directions=1)
    np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    _, params, _, _, _ = _nn(mesh)

    def nn_loss(p):
        assert sa.nn.check_params(p, CFG) is None
        return sum((v * v).sum() for v in p.values())

    check_grad(nn_loss, params, directions=1)
    with pytest.raises(sa.DimensionError):
        sa.grad(lambda p: (sa.nn.check_params({k: v for k, v in p.items() if k != "embed"}, CFG), p["pos"].sum())[1])(
            params)
