"""A sweep of the kind contract: positional in, positional out, for every public callable that takes arrays.

DESIGN.md ("The op mechanism"): an array is *named* (``ShardArray``) or *positional* (``shardarray.array_api``'s
``Array``); a function or method given a positional array returns positional arrays (also inside tuples, named
tuples, dicts, pytrees, optimizer states, gradients and checkpoint loads). A positional array that comes back
named changes meaning silently: ``+`` then broadcasts by dim name and ``@`` contracts every matching name.

Each case below calls one public callable with positional arrays (``xp.asarray`` on a 2x2 mesh) and, where the
callable takes one main array, once more with a **pending** sum (``a @ b`` contracting a dim split over "row":
``p.pending == ("row",)``), then checks that every array in the result is an ``xp.Array`` (and the gathered
values against NumPy where cheap). The op mechanism gives every declared op this property by construction
(``shardarray.core.kinds``); this sweep holds it for the whole public surface.
``test_the_sweep_covers_every_public_callable`` keeps the table complete: a new public function, method or
operator must be added to ``CASES`` or to ``EXCLUDED`` with a reason.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import operator
import pickle
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api._array import Array

MESH = {"row": 2, "col": 2}
A_NP = (np.arange(16.0).reshape(4, 4) + 1) / 20  # in (0, 1): every unary math function is defined on it
B_NP = (np.arange(16.0).reshape(4, 4)[::-1] + 1) / 80
SPD_NP = A_NP @ A_NP.T + 4 * np.eye(4)
INT_NP = np.array([[3, 0, 1, 1], [2, 3, 0, 2], [1, 1, 3, 0], [0, 2, 2, 3]])
IDS_NP = np.array([3, 0, 1, 1])


class Env:
    """The arrays of one test: positional, on a 2x2 mesh (made fresh per test: some cases write in place)."""

    def __init__(self) -> None:
        self.mesh = mesh = sa.Mesh(MESH)
        self.A = xp.asarray(A_NP, device=mesh)  # {dim0: row, dim1: col}
        self.B = xp.asarray(B_NP, device=mesh)
        self.V = xp.asarray(A_NP[0], device=mesh)  # 1-D, dim0
        self.SPD = xp.asarray(SPD_NP, device=mesh)
        self.INT = xp.asarray(INT_NP, device=mesh)
        self.IDS = xp.asarray(IDS_NP, device=mesh)
        self.MASK = xp.asarray(A_NP > 0.4, device=mesh)
        self.C = xp.asarray(A_NP + 1j * B_NP, device=mesh)
        self.GAIN = xp.asarray(sa.asarray(np.ones(4), dims=("dim1",), mesh=mesh))  # positional, dim "dim1"
        self.BK = xp.asarray(sa.asarray(B_NP, dims=("dim1", "k"), mesh=mesh))  # positional, dims ("dim1", "k")

    def pending(self) -> Array:
        """``A' @ B`` with A' split over "row" along the contracted dim: a positional array with a pending sum."""
        a = sa.reshard(self.A, self.mesh, {"dim1": "row"})
        p = a @ self.B
        assert type(p) is Array and p.pending == ("row",), (type(p), p.pending)
        return p


VARIANTS = {"plain": lambda e: e.A, "pending": lambda e: e.pending()}


@dataclasses.dataclass
class Case:
    covers: tuple[str, ...]  # the public names this case covers (see test_the_sweep_covers_every_public_callable)
    fn: Callable[[Env, Any], Any]  # (env, x) -> result; x the main positional array (plain or pending)
    ref: Callable[[np.ndarray], Any] | None = None  # NumPy's result(s) on x's value
    variants: tuple[str, ...] = ("plain", "pending")
    label: str = ""


CASES: list[Case] = []


def case(covers: str | tuple[str, ...], fn: Callable[..., Any], ref: Any = None,
         variants: Any = ("plain", "pending"), label: str = "") -> None:
    CASES.append(Case((covers,) if isinstance(covers, str) else tuple(covers), fn, ref, tuple(variants), label))


# ---- elementwise, unary (float)
UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp", "expm1",
         "floor", "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "negative", "positive",
         "reciprocal", "relu", "round", "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh",
         "trunc", "gelu", "stop_gradient"]
NP_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
           "atanh": "arctanh", "gelu": None, "relu": None, "stop_gradient": None}
for _n in UNARY:
    _np_fn = getattr(np, NP_NAME.get(_n, _n)) if NP_NAME.get(_n, _n) else None
    case(f"sa.{_n}", (lambda f: lambda e, x: f(x))(getattr(sa, _n)),
         (lambda g: (lambda v: g(v)) if g else None)(_np_fn))
for _n in ("conj", "real", "imag"):  # of a complex array (of a real one conj and real return it unchanged)
    case(f"sa.{_n}", (lambda f: lambda e, x: f(e.C))(getattr(sa, _n)),
         (lambda g: lambda v: g(A_NP + 1j * B_NP))(getattr(np, _n)), variants=("plain",))
case("sa.logical_not", lambda e, x: sa.logical_not(e.MASK), lambda v: ~(A_NP > 0.4), variants=("plain",))
case("sa.bitwise_invert", lambda e, x: sa.bitwise_invert(e.INT), lambda v: ~INT_NP, variants=("plain",))

# ---- elementwise, binary (x and the second operand both positional, same shape)
BINARY_FLOAT = {"atan2": np.arctan2, "copysign": np.copysign, "equal": np.equal, "floor_divide": np.floor_divide,
                "greater": np.greater, "greater_equal": np.greater_equal, "hypot": np.hypot,
                "less": np.less, "less_equal": np.less_equal, "logaddexp": np.logaddexp, "maximum": np.maximum,
                "minimum": np.minimum, "nextafter": np.nextafter, "not_equal": np.not_equal,
                "remainder": np.remainder}
for _n, _g in BINARY_FLOAT.items():
    case(f"sa.{_n}", (lambda f: lambda e, x: f(x, e.B))(getattr(sa, _n)), (lambda g: lambda v: g(v, B_NP))(_g))
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
           "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift}
for _n, _g in BITWISE.items():
    case(f"sa.{_n}", (lambda f: lambda e, x: f(e.INT, e.INT))(getattr(sa, _n)),
         (lambda g: lambda v: g(INT_NP, INT_NP))(_g), variants=("plain",))
for _n in ("logical_and", "logical_or", "logical_xor"):
    case(f"sa.{_n}", (lambda f: lambda e, x: f(e.MASK, ~e.MASK))(getattr(sa, _n)),
         (lambda g: lambda v: g(A_NP > 0.4, ~(A_NP > 0.4)))(getattr(np, _n)), variants=("plain",))
case("sa.ldexp", lambda e, x: sa.ldexp(x, e.INT), lambda v: np.ldexp(v, INT_NP))
case("sa.where", lambda e, x: sa.where(e.MASK, x, 0.0), lambda v: np.where(A_NP > 0.4, v, 0.0))
case("sa.clip", lambda e, x: sa.clip(x, 0.1, 0.3), lambda v: np.clip(v, 0.1, 0.3))

# ---- reductions: over one dim and over all
REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod, "std": np.std,
          "var": np.var, "all": np.all, "any": np.any, "nansum": np.nansum, "nanmean": np.nanmean,
          "nanmax": np.nanmax, "nanmin": np.nanmin, "nanprod": np.nanprod, "nanstd": np.nanstd,
          "nanvar": np.nanvar, "count_nonzero": np.count_nonzero}
for _n, _g in REDUCE.items():
    case(f"sa.{_n}", (lambda f: lambda e, x: f(x, "dim1"))(getattr(sa, _n)), (lambda g: lambda v: g(v, axis=1))(_g),
         label="dim1")
    case(f"sa.{_n}", (lambda f: lambda e, x: f(x))(getattr(sa, _n)), (lambda g: lambda v: g(v))(_g), label="all")
case("sa.logsumexp", lambda e, x: sa.logsumexp(x, "dim1"), lambda v: np.log(np.exp(v).sum(1)))
case("sa.softmax", lambda e, x: sa.softmax(x, "dim1"), lambda v: np.exp(v) / np.exp(v).sum(1, keepdims=True))
case("sa.argmax", lambda e, x: sa.argmax(x, "dim1"), lambda v: np.argmax(v, 1))
case("sa.argmin", lambda e, x: sa.argmin(x, "dim0"), lambda v: np.argmin(v, 0))
case("sa.cumsum", lambda e, x: sa.cumsum(x, "dim1"), lambda v: np.cumsum(v, 1))
case("sa.cumprod", lambda e, x: sa.cumprod(x, "dim0"), lambda v: np.cumprod(v, 0))

# ---- einsum, relayout, resharding, creation from arrays
case("sa.einsum", lambda e, x: sa.einsum("dim0 dim1, dim1 k -> dim0 k", x, e.BK), lambda v: v @ B_NP)
case("sa.einsum", lambda e, x: sa.einsum(x, x, out=("dim0",)), lambda v: (v * v).sum(1), label="implicit")
case("sa.relayout", lambda e, x: sa.relayout(x, {"dim0": "col"}), lambda v: v)
case("sa.reshard", lambda e, x: sa.reshard(x, sa.Mesh({"x": 4})), lambda v: v)
case("Array.__reduce__", lambda e, x: pickle.loads(pickle.dumps(x)), lambda v: v)  # pickling
case("sa.asarray", lambda e, x: sa.asarray(x), lambda v: v, label="no dims")
case("sa.asarray", lambda e, x: sa.asarray(x, layout={"dim1": "row"}), lambda v: v, label="no dims, a layout")
case("sa.asarray", lambda e, x: sa.asarray(x, mesh=sa.Mesh({"x": 4})), lambda v: v, label="no dims, another mesh")
case("sa.asarray", lambda e, x: sa.asarray(x, dtype="float32"), lambda v: v.astype("float32"),
     label="no dims, a dtype")
case("sa.broadcast_to", lambda e, x: sa.broadcast_to(x, {"new": 2, "dim0": 4, "dim1": 4}),
     lambda v: np.broadcast_to(v, (2, 4, 4)))
case("sa.from_local", lambda e, x: sa.from_local(
    e.mesh, lambda d: xp.asarray(A_NP, device=sa.Mesh({"d": 1})), ("dim0", "dim1"), (4, 4), layout={}),
     lambda v: A_NP, variants=("plain",))

# ---- manipulation
case("sa.isel", lambda e, x: sa.isel(x, dim0=slice(1, 3), dim1=2), lambda v: v[1:3, 2])
case("sa.concat", lambda e, x: sa.concat([x, e.B], "dim0"), lambda v: np.concatenate([v, B_NP]))
case("sa.stack", lambda e, x: sa.stack([x, e.B], "new"), lambda v: np.stack([v, B_NP]))
case("sa.split_dim", lambda e, x: sa.split_dim(x, "dim1", {"a": 2, "b": 2}), lambda v: v.reshape(4, 2, 2))
case("sa.merge_dims", lambda e, x: sa.merge_dims(x, ("dim0", "dim1"), "m"), lambda v: v.reshape(16))
case("sa.expand_dims", lambda e, x: sa.expand_dims(x, "new", 1), lambda v: v[:, None])
case("sa.squeeze", lambda e, x: sa.squeeze(sa.expand_dims(x, "new", 0), "new"), lambda v: v)
case("sa.diff", lambda e, x: sa.diff(x, "dim1"), lambda v: np.diff(v, axis=1))
case("sa.flip", lambda e, x: sa.flip(x, "dim0"), lambda v: v[::-1])
case("sa.pad", lambda e, x: sa.pad(x, "dim0", 1, 2), lambda v: np.pad(v, ((1, 2), (0, 0))))
case("sa.roll", lambda e, x: sa.roll(x, "dim1", 1), lambda v: np.roll(v, 1, 1))
case("sa.repeat", lambda e, x: sa.repeat(sa.reshard(x, e.mesh, {}), 2, "dim1"), lambda v: np.repeat(v, 2, 1))
case("sa.tile", lambda e, x: sa.tile(sa.reshard(x, e.mesh, {}), {"dim1": 2}), lambda v: np.tile(v, (1, 2)),
     label="of a replicated array")

# ---- indexing, search, sorting, sets
case("sa.take", lambda e, x: sa.take(x, e.IDS.rename({"dim0": "i"}), "dim0"), lambda v: v[IDS_NP])
case("sa.take_along_dim", lambda e, x: sa.take_along_dim(x, e.INT, "dim1"),
     lambda v: np.take_along_axis(v, INT_NP, 1))
case("sa.one_hot", lambda e, x: sa.one_hot(e.IDS, "dim1", 4), lambda v: np.eye(4, dtype="float32")[IDS_NP],
     variants=("plain",))
case("sa.select", lambda e, x: sa.select(x, e.MASK), lambda v: v[A_NP > 0.4])


def _mask_assign(e: Env, x: Any) -> Any:
    sa.mask_assign(x, e.MASK, 0.0)
    return x


case("sa.mask_assign", _mask_assign, lambda v: np.where(A_NP > 0.4, 0.0, v), variants=("plain",),
     label="x stays positional")
case("sa.nonzero", lambda e, x: sa.nonzero(e.MASK), lambda v: np.nonzero(A_NP > 0.4), variants=("plain",))
case("sa.top_k", lambda e, x: sa.top_k(x, 2, "dim1"),
     lambda v: (-np.sort(-v, 1)[:, :2], np.argsort(-v, 1, kind="stable")[:, :2]))
case("sa.sort", lambda e, x: sa.sort(x, "dim1"), lambda v: np.sort(v, 1))
case("sa.argsort", lambda e, x: sa.argsort(x, "dim0"), lambda v: np.argsort(v, 0, kind="stable"))
case("sa.searchsorted", lambda e, x: sa.searchsorted(e.V, x), lambda v: np.searchsorted(A_NP[0], v))
case("sa.unique", lambda e, x: sa.unique(e.INT, return_index=True, return_inverse=True, return_counts=True),
     lambda v: np.unique(INT_NP, return_index=True, return_inverse=True, return_counts=True), variants=("plain",))
case("sa.unique_all", lambda e, x: sa.unique_all(e.INT), lambda v: None, variants=("plain",))
case("sa.unique_counts", lambda e, x: sa.unique_counts(e.INT), lambda v: np.unique(INT_NP, return_counts=True),
     variants=("plain",))
case("sa.unique_inverse", lambda e, x: sa.unique_inverse(e.INT), lambda v: None, variants=("plain",))
case("sa.unique_values", lambda e, x: sa.unique_values(e.INT), lambda v: np.unique(INT_NP), variants=("plain",))

# ---- autograd and graphs (positional params; the function itself uses the xp namespace)
case("sa.grad", lambda e, x: sa.grad(lambda p: xp.sum(p["a"] * p["b"]))({"a": x, "b": e.B}),
     lambda v: {"a": B_NP, "b": v})
case("sa.value_and_grad", lambda e, x: sa.value_and_grad(lambda p: xp.sum(p[0] * p[1]))([x, e.B]),
     lambda v: ((v * B_NP).sum(), [B_NP, v]))
case("sa.value_and_grad", lambda e, x: sa.value_and_grad(lambda p: (xp.sum(p * p), {"aux": p * 2}),
                                                         has_aux=True)(x),
     lambda v: (((v * v).sum(), {"aux": 2 * v}), 2 * v), label="has_aux")


def _vjp(e: Env, x: Any) -> Any:
    y, pullback = sa.vjp(lambda p: p["a"] * p["a"], {"a": x})
    return y, pullback(xp.ones((4, 4), dtype=xp.float64, device=e.mesh))


case("sa.vjp", _vjp, lambda v: (v * v, {"a": 2 * v}))
case("sa.graphed", lambda e, x: sa.graphed(lambda a, b: {"s": a * b, "t": (a @ b, a.T)})(x, e.B),
     lambda v: {"s": v * B_NP, "t": (v @ B_NP, v.T)})

# ---- linalg (square positional matrices; dims default to the last two)
case("linalg.cholesky", lambda e, x: sa.linalg.cholesky(e.SPD), lambda v: np.linalg.cholesky(SPD_NP),
     variants=("plain",))
case("linalg.det", lambda e, x: sa.linalg.det(x), lambda v: np.linalg.det(v))
# (on SPD: A and A'B have rank 2, so their slogdet is rounding noise, and the GPU's noise differed from NumPy's)
case("linalg.slogdet", lambda e, x: sa.linalg.slogdet(e.SPD), lambda v: tuple(np.linalg.slogdet(SPD_NP)),
     variants=("plain",))
case("linalg.inv", lambda e, x: sa.linalg.inv(e.SPD), lambda v: np.linalg.inv(SPD_NP), variants=("plain",))
case("linalg.pinv", lambda e, x: sa.linalg.pinv(x), lambda v: np.linalg.pinv(v))
case("linalg.solve", lambda e, x: sa.linalg.solve(e.SPD, x), lambda v: np.linalg.solve(SPD_NP, v))
case("linalg.eigh", lambda e, x: sa.linalg.eigh(e.SPD), lambda v: (np.linalg.eigvalsh(SPD_NP), None),
     variants=("plain",))
case("linalg.eigvalsh", lambda e, x: sa.linalg.eigvalsh(e.SPD), lambda v: np.linalg.eigvalsh(SPD_NP),
     variants=("plain",))
# (eig's order is LAPACK's or cuSOLVER's: the real spectrum of SPD, sorted along the eigenvalue dim)
case("linalg.eig", lambda e, x: sa.sort(sa.real(sa.linalg.eig(e.SPD).eigenvalues), "dim1_k"),
     lambda v: np.linalg.eigvalsh(SPD_NP), variants=("plain",))
case("linalg.eigvals", lambda e, x: sa.sort(sa.real(sa.linalg.eigvals(e.SPD)), "dim1_k"),
     lambda v: np.linalg.eigvalsh(SPD_NP), variants=("plain",))
case("linalg.qr", lambda e, x: sa.linalg.qr(x), lambda v: None)
case("linalg.svd", lambda e, x: sa.linalg.svd(x), lambda v: (None, np.linalg.svd(v, compute_uv=False), None))
case("linalg.svdvals", lambda e, x: sa.linalg.svdvals(x), lambda v: np.linalg.svd(v, compute_uv=False))
case("linalg.matrix_norm", lambda e, x: sa.linalg.matrix_norm(x), lambda v: np.linalg.norm(v))
case("linalg.matrix_rank", lambda e, x: sa.linalg.matrix_rank(e.SPD), lambda v: 4, variants=("plain",))
case("linalg.vector_norm", lambda e, x: sa.linalg.vector_norm(x, "dim1"), lambda v: np.linalg.norm(v, axis=1))

# ---- fft (along positional dims by name)
for _n in ("fft", "ifft", "rfft", "ihfft"):
    case(f"fft.{_n}", (lambda f: lambda e, x: f(x, "dim1"))(getattr(sa.fft, _n)),
         (lambda g: lambda v: g(v, axis=1))(getattr(np.fft, _n)))
for _n in ("irfft", "hfft"):
    case(f"fft.{_n}", (lambda f: lambda e, x: f(e.C, "dim1"))(getattr(sa.fft, _n)),
         (lambda g: lambda v: g(A_NP + 1j * B_NP, axis=1))(getattr(np.fft, _n)), variants=("plain",))
for _n in ("fftn", "ifftn", "rfftn"):
    case(f"fft.{_n}", (lambda f: lambda e, x: f(x))(getattr(sa.fft, _n)),
         (lambda g: lambda v: g(v))(getattr(np.fft, _n)))
case("fft.irfftn", lambda e, x: sa.fft.irfftn(e.C), lambda v: np.fft.irfftn(A_NP + 1j * B_NP), variants=("plain",))
case("fft.fftshift", lambda e, x: sa.fft.fftshift(x), lambda v: np.fft.fftshift(v))
case("fft.ifftshift", lambda e, x: sa.fft.ifftshift(x), lambda v: np.fft.ifftshift(v))

# ---- nn functions that take arrays along a dim argument (the others are the named reference model)
case("nn.cross_entropy", lambda e, x: sa.nn.cross_entropy(x, e.IDS, "dim1"),
     lambda v: np.log(np.exp(v).sum(1)) - v[np.arange(4), IDS_NP])  # per example
case("nn.accuracy", lambda e, x: sa.nn.accuracy(x, e.IDS, "dim1"), lambda v: np.mean(np.argmax(v, 1) == IDS_NP))
case("nn.layer_norm", lambda e, x: sa.nn.layer_norm(x, e.GAIN, e.GAIN * 0, "dim1"),
     lambda v: (v - v.mean(1, keepdims=True)) / np.sqrt(v.var(1, keepdims=True) + 1e-5))

# ---- optimizers, clipping, loss scaling (positional params; float64 and float32 with master copies)


def _opt(opt: Any, dtype: Any = None) -> Callable[[Env, Any], Any]:
    def run(e: Env, x: Any) -> Any:
        p = {"a": x if dtype is None else x.astype(dtype), "b": e.B if dtype is None else e.B.astype(dtype)}
        g = sa.grad(lambda p: xp.sum(p["a"] * p["b"]))(p)
        state = opt.init(p)
        new, state = opt.update(p, g, state)
        return new, state, opt.init(p)

    return run


case(("optim.Adam.init", "optim.Adam.update"), _opt(sa.optim.Adam(1e-2, weight_decay=0.1)), label="float64")
case(("optim.Adam.init", "optim.Adam.update"), _opt(sa.optim.Adam(1e-2), xp.float32), label="float32: master copies")
case(("optim.SGD.init", "optim.SGD.update"), _opt(sa.optim.SGD(1e-2, momentum=0.9)), label="float64")
case(("optim.SGD.init", "optim.SGD.update"), _opt(sa.optim.SGD(1e-2, momentum=0.9, weight_decay=0.1), xp.float32),
     label="float32: master copies")
case("optim.clip_by_global_norm", lambda e, x: sa.optim.clip_by_global_norm({"a": x, "b": e.B}, 0.1,
                                                                           return_norm=True),
     lambda v: None)


def _loss_scale(e: Env, x: Any) -> Any:
    ls = sa.optim.DynamicLossScale(init_scale=4.0)
    st = ls.init()
    loss, grads = ls.value_and_grad(lambda p: xp.sum(p["a"] * p["b"]))(st, {"a": x, "b": e.B})
    scaled = ls.scale(xp.sum(x), st)
    unscaled, finite = ls.unscale(grads, st)
    opt = sa.optim.Adam(1e-2)
    params, opt_state, st2 = ls.apply(opt, {"a": x, "b": e.B}, grads, opt.init({"a": x, "b": e.B}), st,
                                      max_norm=1.0)
    return {"loss": loss, "grads": grads, "scaled": scaled, "unscaled": unscaled, "params": params,
            "opt_state": opt_state, "state": st, "adjusted": ls.adjust(st2, finite)}


case(tuple(f"optim.DynamicLossScale.{m}" for m in ("value_and_grad", "init", "scale", "unscale", "apply", "adjust")),
     _loss_scale)

# ---- checkpoints and files (written from positional arrays, read back without dims)


def _checkpoint(e: Env, x: Any, tmp: Any) -> Any:
    tree = {"x": x, "nested": [e.B, {"t": (e.V, 3)}], "state": sa.optim.Adam().init({"w": e.B})}
    sa.checkpoint.save(tmp / "ck", tree)
    by_mesh = sa.checkpoint.load(tmp / "ck", mesh=sa.Mesh({"r": 2, "c": 2}))
    by_target = sa.checkpoint.load(tmp / "ck", target=tree)
    exported = sa.checkpoint.load(sa.checkpoint.export_safetensors(tmp / "ck", tmp / "ck.safetensors"), mesh=e.mesh)
    return by_mesh, by_target, exported


case(("checkpoint.save", "checkpoint.load", "checkpoint.export_safetensors"), _checkpoint)


def _files(e: Env, x: Any, tmp: Any) -> Any:
    pytest.importorskip("zarr")  # the [zarr] extra (a GPU machine may lack it)
    pytest.importorskip("h5py")
    sa.io.write_npy(tmp / "x.npy", x)
    sa.io.write_zarr(tmp / "x.zarr", x)
    sa.io.write_hdf5(tmp / "x.h5", x)
    return [sa.io.read_npy(tmp / "x.npy", e.mesh), sa.io.read_zarr(tmp / "x.zarr", e.mesh),
            sa.io.read_hdf5(tmp / "x.h5", e.mesh)]


case(tuple(f"io.{n}" for n in ("read_npy", "write_npy", "read_zarr", "write_zarr", "read_hdf5", "write_hdf5")), _files,
     lambda v: [v, v, v])

# ---- tree utilities (the leaves are passed through)


def _trees(e: Env, x: Any) -> Any:
    tree = {"a": x, "b": [e.B, (e.V,)]}
    leaves, treedef = sa.tree.tree_flatten(tree)
    return (sa.tree.tree_map(lambda v: v * 2, tree), sa.tree.tree_unflatten(treedef, leaves),
            sa.tree.tree_leaves_like(tree, tree))


case(("tree.tree_map", "tree.tree_flatten", "tree.tree_unflatten", "tree.tree_leaves_like"), _trees)

# ---- methods, properties and operators of an Array (inherited from ShardArray or its own)
METHOD_CALLS: dict[str, tuple[Callable[[Env, Any], Any], Any]] = {
    "relayout": (lambda e, x: x.relayout({"dim0": "col"}), lambda v: v),
    "resolve": (lambda e, x: x.resolve(), lambda v: v),
    "rename": (lambda e, x: x.rename({"dim0": "i"}), lambda v: v),
    "isel": (lambda e, x: x.isel(dim0=slice(0, 2)), lambda v: v[:2]),
    "split_dim": (lambda e, x: x.split_dim("dim1", {"a": 2, "b": 2}), lambda v: v.reshape(4, 2, 2)),
    "merge_dims": (lambda e, x: x.merge_dims(("dim0", "dim1"), "m"), lambda v: v.reshape(16)),
    "expand_dims": (lambda e, x: x.expand_dims("new", 0), lambda v: v[None]),
    "transpose": (lambda e, x: x.transpose(), lambda v: v.T),
    "astype": (lambda e, x: x.astype(xp.float32), lambda v: v.astype("float32")),
    "squeeze": (lambda e, x: x[None].squeeze(0), lambda v: v),
    "T": (lambda e, x: x.T, lambda v: v.T),
    "mT": (lambda e, x: x.mT, lambda v: v.T),
    "flat": (lambda e, x: x.flat[1:6:2], lambda v: v.flat[1:6:2]),
    "real": (lambda e, x: x.real, lambda v: v),
    "imag": (lambda e, x: x.imag, lambda v: 0 * v),
    "copy": (lambda e, x: x.copy(), lambda v: v),
    "conj": (lambda e, x: x.conj(), lambda v: v),
    "conjugate": (lambda e, x: x.conjugate(), lambda v: v),
    "clip": (lambda e, x: x.clip(0.1, 0.3), lambda v: v.clip(0.1, 0.3)),
    "round": (lambda e, x: x.round(1), lambda v: v.round(1)),
    "repeat": (lambda e, x: x.repeat(2, axis=0), lambda v: v.repeat(2, 0)),
    "take": (lambda e, x: x.take(e.IDS, axis=0), lambda v: v.take(IDS_NP, 0)),
    "choose": (
        lambda e, x: (x > 0.2).astype(xp.int64).choose([x, x * 2]),
        lambda v: (v > 0.2).astype(np.int64).choose([v, v * 2]),
    ),
    "nonzero": (lambda e, x: (x > 0.3).nonzero(), lambda v: (v > 0.3).nonzero()),
    "searchsorted": (lambda e, x: e.V.searchsorted(x), lambda v: A_NP[0].searchsorted(v)),
    "diagonal": (lambda e, x: x.diagonal(), lambda v: v.diagonal()),
    "trace": (lambda e, x: x.trace(), lambda v: v.trace()),
    "swapaxes": (lambda e, x: x.swapaxes(0, 1), lambda v: v.swapaxes(0, 1)),
    "argsort": (lambda e, x: x.argsort(axis=1), lambda v: v.argsort(1, kind="stable")),
    "sort": (lambda e, x: (x.copy(), x.copy().sort(axis=1))[0], lambda v: np.sort(v, 1)),
    "resize": (lambda e, x: (y := x.copy(), y.resize((2, 3)), y)[2], lambda v: np.resize(v.ravel(), (2, 3))),
    "partition": (lambda e, x: (y := x.copy(), y.partition(1, axis=1), y[:, 1])[2], lambda v: np.sort(v, 1)[:, 1]),
    "argpartition": (
        lambda e, x: xp.take_along_axis(x, x.argpartition(1, axis=1), axis=1)[:, 1],
        lambda v: np.sort(v, 1)[:, 1],
    ),
    "compress": (lambda e, x: x.compress([True, False, True], axis=1), lambda v: v.compress([True, False, True], 1)),
    "dot": (lambda e, x: x.dot(e.B), lambda v: v.dot(B_NP)),
    "ravel": (lambda e, x: x.ravel(), lambda v: v.ravel()),
    "flatten": (lambda e, x: x.flatten(), lambda v: v.flatten()),
    "reshape": (lambda e, x: x.reshape(2, 8), lambda v: v.reshape(2, 8)),
    "cumsum": (lambda e, x: x.cumsum(axis=1), lambda v: v.cumsum(1)),
    "cumprod": (lambda e, x: x.cumprod(axis=0), lambda v: v.cumprod(0)),
    "argmax": (lambda e, x: x.argmax(axis=1), lambda v: v.argmax(1)),
    "argmin": (lambda e, x: x.argmin(), lambda v: v.argmin()),
    "to_device": (lambda e, x: x.to_device(e.mesh), lambda v: v),
    "__iter__": (lambda e, x: list(x), lambda v: list(v)),
    "__round__": (lambda e, x: round(x, 1), lambda v: np.round(v, 1)),
    "__copy__": (lambda e, x: copy.copy(x), lambda v: v),
    "__deepcopy__": (lambda e, x: copy.deepcopy(x), lambda v: v),
    "__getitem__": (lambda e, x: (x[1:, ::2], x[{"dim0": 1}], x[e.MASK]),
                    lambda v: (v[1:, ::2], v[1], v[A_NP > 0.4])),
    "__matmul__": (lambda e, x: x @ e.B, lambda v: v @ B_NP),
    "__rmatmul__": (lambda e, x: e.B.__rmatmul__(x), lambda v: v @ B_NP),
    "__divmod__": (lambda e, x: divmod(x, e.B), lambda v: divmod(v, B_NP)),
    "__rdivmod__": (lambda e, x: divmod(0.5, x), lambda v: divmod(0.5, v)),
    "__abs__": (lambda e, x: abs(x), lambda v: abs(v)),
    "__neg__": (lambda e, x: -x, lambda v: -v),
    "__pos__": (lambda e, x: +x, lambda v: v),
    "__invert__": (lambda e, x: ~e.INT, lambda v: ~INT_NP),
    "__array_ufunc__": (lambda e, x: np.exp(x), lambda v: np.exp(v)),
    "__array_function__": (lambda e, x: np.concatenate([x, e.B]), lambda v: np.concatenate([v, B_NP])),
}
for _m in ("sum", "mean", "max", "min", "prod", "std", "var", "all", "any"):
    METHOD_CALLS[_m] = ((lambda m: lambda e, x: getattr(x, m)(axis=1))(_m),
                        (lambda m: lambda v: getattr(v, m)(axis=1))(_m))
FLOAT_OPS = ("add", "sub", "mul", "truediv", "pow", "floordiv", "mod")
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")
INT_OPS = ("and", "or", "xor", "lshift", "rshift")
_BINOP = {o: getattr(operator, o, None) or getattr(operator, f"{o}_") for o in (*FLOAT_OPS, *COMPARISONS, *INT_OPS)}
_BINOP["matmul"] = operator.matmul


def _named_b(e: Env) -> sa.ShardArray:
    return sa.asarray(B_NP, dims=("i", "j"), mesh=e.mesh)  # a named operand: an Array's operator is positional


for _o in (*FLOAT_OPS, *COMPARISONS):
    _f = _BINOP[_o]
    METHOD_CALLS[f"__{_o}__"] = ((lambda f: lambda e, x: (f(x, e.B), f(x, 0.5), f(x, _named_b(e))))(_f),
                                 (lambda f: lambda v: (f(v, B_NP), f(v, 0.5), f(v, B_NP)))(_f))
    if _o in FLOAT_OPS:
        METHOD_CALLS[f"__r{_o}__"] = ((lambda f: lambda e, x: (f(0.5, x), f(_named_b(e), x)))(_f),
                                      (lambda f: lambda v: (f(0.5, v), f(B_NP, v)))(_f))
for _o in INT_OPS:
    _f = _BINOP[_o]
    METHOD_CALLS[f"__{_o}__"] = ((lambda f: lambda e, x: f(e.INT, e.INT))(_f),
                                 (lambda f: lambda v: f(INT_NP, INT_NP))(_f))
    METHOD_CALLS[f"__r{_o}__"] = ((lambda f: lambda e, x: f(1, e.INT))(_f), (lambda f: lambda v: f(1, INT_NP))(_f))
for _o in (*FLOAT_OPS, "matmul", *INT_OPS):
    _f, _i = _BINOP[_o], getattr(operator, f"i{_o}")
    if _o in INT_OPS:  # y = e.INT.copy(); y <op>= e.INT
        METHOD_CALLS[f"__i{_o}__"] = ((lambda i: lambda e, x: i(e.INT.copy(), e.INT))(_i),
                                      (lambda f: lambda v: f(INT_NP, INT_NP))(_f))
    else:  # y = x.copy(); y <op>= e.B
        METHOD_CALLS[f"__i{_o}__"] = ((lambda i: lambda e, x: i(x.copy(), e.B))(_i),
                                      (lambda f: lambda v: f(v, B_NP))(_f))


def _setitem(e: Env, x: Any) -> Any:
    x[0] = 0.0
    x[{"dim1": 1}] = 1.0
    return x


def _set_ref(v: np.ndarray) -> np.ndarray:
    v = v.copy()
    v[0] = 0.0
    v[:, 1] = 1.0
    return v


def _fill(e: Env, x: Any) -> Any:
    y = x.copy()
    y.fill(2.0)
    return y


def _put(e, x):
    y = x.copy()
    y.put([0, 5, 5, -1], [7.0, 8.0, 9.0])
    return y


def _put_ref(v):
    v = v.copy()
    np.put(v, [0, 5, 5, -1], [7.0, 8.0, 9.0])
    return v


METHOD_CALLS["put"] = (_put, _put_ref)
METHOD_CALLS["view"] = (lambda e, x: x.view(np.int64), lambda v: v.view(np.int64))
METHOD_CALLS["__setitem__"] = (_setitem, _set_ref)
METHOD_CALLS["fill"] = (_fill, lambda v: np.full_like(v, 2.0))

_INT_ONLY = {"__invert__"} | {f"__{p}{o}__" for o in ("and", "or", "xor", "lshift", "rshift") for p in ("", "r", "i")}
for _m, (_fn, _ref) in METHOD_CALLS.items():
    case(f"Array.{_m}", _fn, _ref, variants=("plain",) if _m in _INT_ONLY else ("plain", "pending"))

# ---- public names deliberately not swept (no array argument, named by purpose, or no array result)
EXCLUDED: dict[str, str] = {
    # creation from a mesh and sizes (no array argument): named by purpose; xp.zeros & co. make positional ones
    **{f"sa.{n}": "creation from a mesh and sizes: no array argument; named by purpose (xp.* makes positional)"
       for n in ("zeros", "ones", "full")},
    **{f"random.{n}": "creation from a mesh and sizes: no array argument; named by purpose" for n in
       ("normal", "uniform", "randint")},
    "fft.fftfreq": "creation from a mesh and n: no array argument (xp.fft.fftfreq makes a positional one)",
    "fft.rfftfreq": "creation from a mesh and n: no array argument (xp.fft.rfftfreq makes a positional one)",
    # no array result
    "sa.show": "returns a str (the block map)",
    "sa.comm_log": "context manager of comm records: no arrays",
    "sa.profile": "context manager of op costs: no arrays",
    "sa.default_mesh": "sets the default mesh: no arrays",
    "sa.get_default_mesh": "returns a Mesh",
    "sa.set_default_mesh": "sets the default mesh: no arrays",
    "optim.global_norm": "returns a Python float",
    "optim.cosine_schedule": "a learning-rate schedule: numbers only",
    "optim.moment_dtype": "a dtype rule: no arrays",
    # classes: their array-taking methods are swept (optim.*.init/update...), the rest hold no arrays
    "sa.ShardArray": "the named class itself; its members are swept as Array.<member>",
    "sa.Mesh": "a mesh: no arrays", "sa.Layout": "a layout: no arrays", "sa.CommLog": "comm records: no arrays",
    "sa.CommRecord": "a comm record: no arrays", "sa.Profile": "op costs: no arrays",
    "optim.SGD": "the class; init/update swept", "optim.Adam": "the class; init/update swept",
    "optim.DynamicLossScale": "the class; its methods swept",
    "linalg.EigResult": "a result type (its fields are checked through eig)",
    "linalg.EighResult": "a result type (its fields are checked through eigh)",
    "linalg.QRResult": "a result type (its fields are checked through qr)",
    "linalg.SVDResult": "a result type (its fields are checked through svd)",
    "linalg.SlogdetResult": "a result type (its fields are checked through slogdet)",
    # the named reference transformer: defined on named dims (vocab, d_model, heads...) and named broadcasting;
    # positional params would change its meaning (an Array's + and @ are positional)
    **{f"nn.{n}": "the named reference model: takes/makes arrays with its own dim names by design" for n in
       ("attention", "mlp", "init_transformer", "transformer_logits", "transformer_loss", "check_params")},
    **{f"nn.{n}": "configuration, rules or counts: no arrays" for n in
       ("TransformerConfig", "AutoChoice", "auto_choice", "auto_rules", "load_rules", "save_rules", "param_count",
        "param_layout", "param_shapes", "strategy_rules")},
    "tree.tree_paths": "returns path strings",
    # the planner works on the meta backend over named steps; it takes no user arrays
    **{f"plan.{n}": "the layout planner: named steps and plans, no user arrays" for n in
       ("Explanation", "GroupCost", "Plan", "SearchStats", "candidates", "evaluate_layout", "explain_layout",
        "explain_transformer", "mlp_step", "named_plans", "search_layouts", "transformer_step")},
    "matmul.SummaPlan": "an algorithm plan: no arrays",
    "matmul.select": "returns an algorithm plan (takes arrays only to read their layouts)",
    # host reads (explicit conversions out of the array types)
    "Array.numpy": "the gathered host value (np.ndarray)", "Array.item": "a Python scalar",
    "Array.tolist": "Python lists", "Array.__array__": "the gathered host value (np.ndarray)",
    "Array.__dlpack__": "a DLPack capsule", "Array.__dlpack_device__": "a (type, id) pair",
    "Array.__bool__": "a Python bool", "Array.__float__": "a Python float", "Array.__int__": "a Python int",
    "Array.__index__": "a Python int", "Array.__complex__": "a Python complex", "Array.__len__": "an int",
    "Array.__contains__": "a Python bool", "Array.__format__": "a str", "Array.__repr__": "a str",
    "Array.__array_namespace__": "the namespace module", "Array.__array_priority__": "a number",
    # attributes and internals that are not derived arrays
    **{f"Array.{n}": "metadata, not an array" for n in
       ("dims", "dtype", "layout", "mesh", "device", "ndim", "shape", "size", "sizes", "spec", "pending",
        "positional", "nbytes_per_device", "host_range", "itemsize", "nbytes")},
    "Array.shards": "the raw per-device blocks (backend arrays), by design not ShardArrays",
    **{f"Array.{n}": "Python object machinery" for n in
       ("__init__", "__slots__", "__weakref__", "__module__", "__doc__", "__init_subclass__", "__subclasshook__")},
}
SWEPT_MODULES = ("linalg", "fft", "nn", "optim", "random", "checkpoint", "io", "plan", "tree", "matmul")
EXCLUDED_MODULES = {
    "hardware": "hardware profiles and cost formulas: no arrays",
    "profiler": "op-cost accounting: no arrays returned",
    "threads": "BLAS thread settings: no arrays",
}
EXCLUDED_NAMESPACES = {
    "shardarray.array_api": "the positional namespace itself (every function wraps its result: array_api/_array.wrap; "
                            "tests/array_api test it); its Array's members are swept here as Array.<member>",
}
#: calls whose purpose is a named result (documented here; the callables themselves are swept above)
CONVERSIONS = {
    "sa.asarray(x, dims=...)": "names the dims: the explicit conversion to a named array (xp.asarray(named) is the "
                               "converse); sa.asarray(x) without dims is swept and must keep the kind",
}


def _public_names() -> set[str]:
    names = set()
    for n in sa.__all__:
        obj = getattr(sa, n)
        if isinstance(obj, types.ModuleType):
            continue
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue  # the error classes
        names.add(f"sa.{n}")
    for mod in SWEPT_MODULES:
        m = getattr(sa, mod)
        for n in m.__all__:
            obj = getattr(m, n)
            if (isinstance(obj, type) and issubclass(obj, BaseException)) or not callable(obj):
                continue  # error classes; constants (STRATEGIES, FORMAT, ALGORITHMS...)
            names.add(f"{mod}.{n}")
            if isinstance(obj, type) and mod == "optim":
                names |= {f"{mod}.{n}.{k}" for k, v in vars(obj).items() if callable(v) and not k.startswith("_")}
    for n in dir(Array):
        if n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
            continue  # private
        if getattr(Array, n, None) is getattr(object, n, None) and n not in ("__eq__", "__ne__", "__lt__", "__le__",
                                                                           "__gt__", "__ge__"):
            continue  # object's own (not overridden)
        names.add(f"Array.{n}")
    return names


def _arrays(out: Any, path: str = "out") -> list[tuple[str, Any]]:
    """Every ShardArray inside ``out`` (tuples, named tuples, lists, dicts, dataclasses), with its path."""
    if isinstance(out, sa.ShardArray):
        return [(path, out)]
    if isinstance(out, dict):
        return [a for k, v in out.items() for a in _arrays(v, f"{path}[{k!r}]")]
    if isinstance(out, (tuple, list)):
        return [a for i, v in enumerate(out) for a in _arrays(v, f"{path}[{i}]")]
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        return [a for f in dataclasses.fields(out) for a in _arrays(getattr(out, f.name), f"{path}.{f.name}")]
    return []


def _params() -> list[Any]:
    out = []
    for c in CASES:
        for v in c.variants:
            cid = c.covers[0] + (f"[{c.label}]" if c.label else "") + f"-{v}"
            out.append(pytest.param(c, v, id=cid))
    return out


def _check_values(got: Any, want: Any, where: str) -> None:
    if want is None:
        return
    if isinstance(want, dict):
        for k in want:
            _check_values(got[k], want[k], f"{where}[{k!r}]")
        return
    if isinstance(want, (tuple, list)) and not isinstance(got, sa.ShardArray):
        assert len(got) >= len(want), where
        for i, w in enumerate(want):
            _check_values(got[i], w, f"{where}[{i}]")
        return
    value = got.numpy() if isinstance(got, sa.ShardArray) else got
    np.testing.assert_allclose(np.asarray(value), np.asarray(want), rtol=1e-6, atol=1e-12, equal_nan=True,
                               err_msg=where)


@pytest.mark.parametrize("c,variant", _params())
def test_positional_in_positional_out(c: Case, variant: str, tmp_path: Any) -> None:
    make = VARIANTS[variant]
    e = Env()
    with sa.default_mesh(e.mesh), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        x = make(e)
        x_np = make(e).numpy()  # the value of another such array (x's own resolution is left to the callable)
        args = (e, x, tmp_path) if len(inspect.signature(c.fn).parameters) == 3 else (e, x)
        out = c.fn(*args)
        found = _arrays(out)
        assert found, f"{c.covers[0]} returned no arrays: {type(out).__name__}"
        named = [f"{path}: {type(a).__name__} dims={a.dims}" for path, a in found if not isinstance(a, Array)]
        if named:
            pytest.fail(f"{c.covers[0]} returned named arrays for a positional input: {named}", pytrace=False)
        if c.ref is not None:
            _check_values(out, c.ref(x_np), c.covers[0])


def test_the_sweep_covers_every_public_callable() -> None:
    """Every public callable is in CASES or EXCLUDED (with a reason), and neither names one that is gone."""
    public = _public_names()
    covered = {name for c in CASES for name in c.covers}
    excluded = set(EXCLUDED)
    missing = sorted(public - covered - excluded)
    assert not missing, f"public callables neither swept (CASES) nor excluded (EXCLUDED, with a reason): {missing}"
    stale = sorted((covered | excluded) - public)
    assert not stale, f"CASES/EXCLUDED name callables that are no longer public: {stale}"
    assert not covered & excluded, sorted(covered & excluded)
    assert all(EXCLUDED.values())
    modules = {n for n in sa.__all__ if isinstance(getattr(sa, n), types.ModuleType)}
    assert modules == set(SWEPT_MODULES) | set(EXCLUDED_MODULES), modules ^ (set(SWEPT_MODULES) | set(EXCLUDED_MODULES))
