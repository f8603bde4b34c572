"""A differential fuzz, against NumPy, of the linear algebra round 12 left out (round 14): ``solve`` with vector and
broadcast right-hand sides (NumPy 2's rule: ``b`` is a vector only when 1-D), ``matrix_power`` of every sign on
integers too, ``vector_norm`` of negative and fractional orders, ``cross``/``outer``/``vecdot``/``tensordot``/
``matmul``, ``multi_dot``, ``cond`` of rectangular matrices, ``trace`` with ``dtype=``, ``pinv``/``matrix_rank`` with
one ``rtol`` per matrix, ``lstsq`` (every ``rcond``, rank-deficient ``a``, ``K = 0``) and NumPy's ``tensorinv`` and
``tensorsolve``, on split stacks (meshes 1, 2x2, 4, 2x2x2, 3x2; uneven and empty blocks; batches of 0), in
float32/float64/complex64/complex128 and int64 (NumPy's result dtypes); their gradients against float64 central
differences on uneven layouts (complex in JAX's convention: the cotangent of ``z = x + iy`` is ``dL/dx - i dL/dy``);
that none of them gathers a split matrix without a ``sa.GatherWarning``; and that the meta backend answers their
shapes and logs their collectives as NumPy shards do.

``FUZZ14_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
Regressions of the bugs it found close the file.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts, random_layout
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.layout import block_bounds

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ14_EXAMPLES"
DTYPES = ("float32", "float64", "complex64", "complex128", "int64")
INF = math.inf


def _pos(a: np.ndarray, mesh, layout) -> xp.Array:
    return as_kind(sa.asarray(a, dims=tuple(f"dim{k}" for k in range(a.ndim)), mesh=mesh, layout=layout), xp.Array)


def _random(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-3, 4, shape).astype(dtype)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _np(x) -> np.ndarray:
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _close(got, expected, tol: float) -> None:
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g, e = _np(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        scale = float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0)) if e.dtype.kind in "fc" else 0.0
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol * (1 + scale))


def _tol(dt: str) -> float:
    return 2e-3 if dt in ("float32", "complex64") else 1e-8


def _wellposed(a: np.ndarray) -> np.ndarray:
    """``a`` plus 4 on its diagonal (integers stay integers): invertible, modestly conditioned."""
    n = a.shape[-1]
    return a + (4 * np.eye(n)).astype(a.dtype)


# ============================================================================ values against NumPy

#: name -> (operand shapes from (batch, m, n, k), square, (x_1, ..., x_j) -> result on either side)
OPS = {
    "solve_vector": ("sq", lambda b, m, n, k: [(*b, m, m), (m,)], lambda s, a, v: s.linalg.solve(a, v)),
    "solve_matrix": ("sq", lambda b, m, n, k: [(*b, m, m), (*b, m, k)], lambda s, a, v: s.linalg.solve(a, v)),
    "solve_bcast": ("sq", lambda b, m, n, k: [(m, m), (2, *b, m, k)], lambda s, a, v: s.linalg.solve(a, v)),
    "solve_bcast1": ("sq", lambda b, m, n, k: [(*b, 1, m, m), (3, m, k)], lambda s, a, v: s.linalg.solve(a, v)),
    "solve_2d_rhs": ("sq", lambda b, m, n, k: [(*b, m, m), (m, k)], lambda s, a, v: s.linalg.solve(a, v)),
    "matrix_power_-3": ("sq", lambda b, m, n, k: [(*b, m, m)], lambda s, a: s.linalg.matrix_power(a, -3)),
    "matrix_power_-1": ("sq", lambda b, m, n, k: [(*b, m, m)], lambda s, a: s.linalg.matrix_power(a, np.int64(-1))),
    "matrix_power_1": ("sq", lambda b, m, n, k: [(*b, m, m)], lambda s, a: s.linalg.matrix_power(a, 1)),
    "matrix_power_5": ("sq", lambda b, m, n, k: [(*b, m, m)], lambda s, a: s.linalg.matrix_power(a, 5)),
    "cross": ("", lambda b, m, n, k: [(*b, m, 3), (m, 3)], lambda s, a, c: s.linalg.cross(a, c)),
    "cross_axis0": ("", lambda b, m, n, k: [(3, m), (3, 1)], lambda s, a, c: s.linalg.cross(a, c, axis=0)),
    "outer": ("", lambda b, m, n, k: [(m,), (n,)], lambda s, a, c: s.linalg.outer(a, c)),
    "vecdot": ("", lambda b, m, n, k: [(*b, m, n), (n,)], lambda s, a, c: s.linalg.vecdot(a, c)),
    "tensordot_1": ("", lambda b, m, n, k: [(*b, m, n), (n, k)], lambda s, a, c: s.linalg.tensordot(a, c, axes=1)),
    "tensordot_0": ("", lambda b, m, n, k: [(m,), (n,)], lambda s, a, c: s.linalg.tensordot(a, c, axes=0)),
    "matmul": ("", lambda b, m, n, k: [(*b, m, n), (n, k)], lambda s, a, c: s.linalg.matmul(a, c)),
    "matmul_vv": ("", lambda b, m, n, k: [(n,), (n,)], lambda s, a, c: s.linalg.matmul(a, c)),
    "trace_dtype": ("", lambda b, m, n, k: [(*b, m, n)], lambda s, a: s.linalg.trace(a, offset=-1, dtype=s.complex128)),
    "diagonal_far": ("", lambda b, m, n, k: [(*b, m, n)], lambda s, a: s.linalg.diagonal(a, offset=a.shape[-1] + 1)),
    "cond_rect_2": ("f", lambda b, m, n, k: [(*b, m + 1, m)], lambda s, a: np.linalg.cond(a, 2)),
    "cond_rect_-2": ("f", lambda b, m, n, k: [(*b, m, m + 2)], lambda s, a: np.linalg.cond(a, -2)),
    "multi_dot_vv": ("", lambda b, m, n, k: [(m,), (m, n), (n,)], lambda s, a, c, d: s.linalg.multi_dot([a, c, d])),
    "multi_dot_4": (
        "",
        lambda b, m, n, k: [(m, n), (n, 3), (3, k), (k, 2)],
        lambda s, a, c, d, e: s.linalg.multi_dot([a, c, d, e]),
    ),
    "lstsq": ("", lambda b, m, n, k: [(m, n), (m, k)], lambda s, a, c: s.linalg.lstsq(a, c)),
    "lstsq_vec_-1": ("", lambda b, m, n, k: [(m, n), (m,)], lambda s, a, c: s.linalg.lstsq(a, c, rcond=-1)),
    "lstsq_0.3": ("", lambda b, m, n, k: [(m, n), (m, k)], lambda s, a, c: s.linalg.lstsq(a, c, rcond=0.3)),
    "tensorinv": ("i", lambda b, m, n, k: [(2, m, 2 * m)], lambda s, a: s.linalg.tensorinv(a, ind=2)),
    "tensorinv_1": ("i", lambda b, m, n, k: [(2 * m, 2, m)], lambda s, a: s.linalg.tensorinv(a, ind=1)),
    "tensorsolve": ("i", lambda b, m, n, k: [(m, 2, 2 * m), (m, 2)], lambda s, a, c: s.linalg.tensorsolve(a, c)),
    "tensorsolve_axes": (
        "i",
        lambda b, m, n, k: [(m, 2, m, 2), (m, 2)],
        lambda s, a, c: s.linalg.tensorsolve(a, c, axes=(2, 1)),
    ),
}
for _o in (0, 1, 2, 0.5, -0.5, -1, -2, INF, -INF):
    OPS[f"vector_norm_{_o}"] = (
        "",
        lambda b, m, n, k: [(*b, m, n)],
        lambda s, a, o=_o: s.linalg.vector_norm(a, ord=o, axis=(0, -1) if a.ndim > 2 else -1, keepdims=True),
    )


def _namespace(name: str, dt: str):
    """``xp`` for the array API's functions, NumPy (its protocols) for NumPy's extras and for integers (the
    standard's LAPACK-based functions refuse them, ``_refuses_integers``)."""
    return np if dt == "int64" or name.startswith(("cond", "multi_dot", "lstsq", "tensor")) else xp


def _refuses_integers(op: str, fn, args) -> None:
    """``xp.linalg.solve`` of integers: ``sa.DTypeError`` (the standard's domain; NumPy's protocols cast them to
    float64, as NumPy does, and so does ``xp.linalg.matrix_power`` with ``n < 0``, checked through ``xp`` here)."""
    if op.startswith("matrix_power_-"):
        _close(fn(xp, *args), fn(np, *(_np(a) for a in args)), 1e-6)
    if op.startswith("solve"):
        with pytest.raises(sa.DTypeError):
            fn(xp, *args)


@st.composite
def cases(draw):
    mesh = draw(meshes())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    batch = draw(st.sampled_from([(), (2,), (0,), (3,)]))
    m, n, k = draw(st.integers(0, 5)), draw(st.integers(0, 5)), draw(st.integers(0, 3))
    return mesh, rng, batch, m, n, k, draw(st.sampled_from(DTYPES))


@fuzz(150, ENV)
@given(cases(), st.sampled_from(sorted(OPS)))
def test_fuzz_linalg_extras_against_numpy(case, op):
    """Each function's value, shape and dtype are NumPy's on the gathered result, for every layout of every operand,
    size (0 included) and dtype (integers: NumPy's float64 where it computes in floating point); where NumPy raises,
    a typed ``sa`` error of the same class."""
    mesh, rng, batch, m, n, k, dt = case
    kind, shapes, fn = OPS[op]
    if kind == "f" and dt == "int64":
        dt = "float64"
    if kind == "i":
        m = max(m, 1)
    values = [_random(rng, s, dt) for s in shapes(batch, m, n, k)]
    if kind == "sq":
        values[0] = _wellposed(values[0])
    elif kind == "i":  # (a reshapes to a square matrix: made invertible there)
        rows = math.prod(values[0].shape) // (2 * m)
        values[0] = (values[0].reshape(-1, rows) + 4 * np.eye(rows, dtype=values[0].dtype)).reshape(values[0].shape)
    args = [_pos(v, mesh, draw_layout(rng, mesh, v.ndim)) for v in values]
    if dt == "int64":
        _refuses_integers(op, fn, args)
    try:
        expected = _quiet(lambda: fn(np, *values))
    except (ValueError, TypeError) as e:
        with pytest.raises(type(e)) as info:
            _quiet(lambda: _np(fn(_namespace(op, dt), *args)))
        assert isinstance(info.value, sa.ShardArrayError), info.value
        return
    got = _quiet(lambda: fn(_namespace(op, dt), *args))
    tol = _tol(dt) * (100 if op.startswith(("matrix_power", "cond", "lstsq", "tensor")) else 1)
    _close(got, expected, tol)


def draw_layout(rng: np.random.Generator, mesh, ndim: int) -> dict:
    return random_layout(rng, mesh, [f"dim{k}" for k in range(ndim)])


# ============================================================================ gradients


def _grad_check(loss, a: np.ndarray, mesh, lay, eps: float = 1e-6, rtol: float = 1e-5) -> None:
    """``sa.value_and_grad`` of ``loss`` at ``a`` (complex: two real parameters, ``re + 1j * im``) against central
    differences along two random directions."""
    cx = a.dtype.kind == "c"

    def params(v):
        return (_pos(v.real.copy(), mesh, lay), _pos(v.imag.copy(), mesh, lay)) if cx else _pos(v, mesh, lay)

    def f(p):
        return loss(p[0] + 1j * p[1]) if cx else loss(p)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.GatherWarning)
        _, g = sa.value_and_grad(f)(params(a))
        g = g[0].numpy() + 1j * g[1].numpy() if cx else g.numpy()
        rng = np.random.default_rng(1)
        for _ in range(2):
            v = rng.standard_normal(a.shape) + (1j * rng.standard_normal(a.shape) if cx else 0)
            up, dn = float(f(params(a + eps * v))), float(f(params(a - eps * v)))
            fd = (up - dn) / (2 * eps)
            an = float(np.sum(g.real * v.real + (g.imag * v.imag if cx else 0)))
            np.testing.assert_allclose(an, fd, rtol=rtol, atol=1e-6 * (1 + abs(up)))


def _re(y):
    return xp.real(y) if y.dtype.kind == "c" else y


def _vec(w):
    """The first column of the first matrix of ``w``: one vector (``solve`` broadcasts it against the stack)."""
    return w[:, 0] if w.ndim == 2 else w[0, :, 0]


#: name -> (input kind, loss of (x, weights)); "tall": m >= n, "square": n x n plus 3 I, "plain": one 2-D matrix
GRAD_OPS = {
    "solve_vector": ("square", lambda x, w: xp.sum(_re(xp.linalg.solve(x, _vec(w)) * _vec(w)))),
    "solve_bcast": ("square", lambda x, w: xp.sum(_re(xp.linalg.solve(x, xp.reshape(w, (1, *w.shape)))))),
    "matrix_power_3": ("square", lambda x, w: xp.sum(_re(xp.linalg.matrix_power(x, 3) * w))),
    "matrix_power_-3": ("square", lambda x, w: xp.sum(_re(xp.linalg.matrix_power(x, -3) * w))),
    "cond_2": ("tall", lambda x, w: xp.sum(np.linalg.cond(x))),
    "cond_inf": ("square", lambda x, w: xp.sum(np.linalg.cond(x, INF))),
    "cond_nuc": ("square", lambda x, w: xp.sum(np.linalg.cond(x, "nuc"))),
    "lstsq": ("plain", lambda x, w: xp.sum(_re(np.linalg.lstsq(x, w[:, 0])[0]))),
    "tensorinv": ("plain_sq", lambda x, w: xp.sum(_re(np.linalg.tensorinv(x, ind=1) * w))),
    "tensorsolve": ("plain_sq", lambda x, w: xp.sum(_re(np.linalg.tensorsolve(x, w[:, 0])))),
    "cross": ("cross", lambda x, w: xp.sum(_re(xp.linalg.cross(x, w) * w))),
    "vecdot": ("tall", lambda x, w: xp.sum(_re(xp.linalg.vecdot(x, w) ** 2))),
    "diagonal": ("tall", lambda x, w: xp.sum(_re(xp.linalg.diagonal(x, offset=-1) ** 2))),
}
for _o in (-1, -2, INF, -INF):
    GRAD_OPS[f"matrix_norm_{_o}"] = ("tall", lambda x, w, o=_o: xp.sum(xp.linalg.matrix_norm(x, ord=o)))
for _o in (1, 0.5, -0.5, -2, INF, -INF):
    GRAD_OPS[f"vector_norm_{_o}"] = ("tall", lambda x, w, o=_o: xp.sum(xp.linalg.vector_norm(x, ord=o, axis=-2)))


@fuzz(60, ENV)
@given(meshes(), st.sampled_from(sorted(GRAD_OPS)), st.booleans(), st.integers(0, 2**32 - 1), st.data())
def test_fuzz_linalg_extras_grads(mesh, op, cx, seed, data):
    """``sa.grad`` of each function against float64 central differences, every operand on a random layout of the
    mesh (uneven blocks), real and complex (``lstsq`` and ``pinv`` of a complex matrix too)."""
    kind, loss = GRAD_OPS[op]
    rng = np.random.default_rng(seed)
    dt = "complex128" if cx else "float64"
    batch = () if kind.startswith("plain") else data.draw(st.sampled_from([(), (2,)]))
    n = data.draw(st.integers(2, 4))
    m = 4 if kind == "cross" else n + data.draw(st.integers(0, 2)) if kind in ("tall", "plain") else n
    n = 3 if kind == "cross" else n
    a = _random(rng, (*batch, m, n), dt)
    if kind in ("square", "plain_sq"):
        a = a + 3 * np.eye(n)
    w = _pos(_random(rng, (*batch, m, n), dt), mesh, data.draw(layouts(mesh, [f"dim{k}" for k in range(a.ndim)])))
    lay = data.draw(layouts(mesh, [f"dim{k}" for k in range(a.ndim)]))
    _grad_check(lambda x: loss(x, w), a, mesh, lay)


# ============================================================================ traffic


def _largest_block(x) -> int:
    return max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(x.mesh, x.spec)), default=0)


def _received(r) -> int:
    """What one device receives in record ``r`` (at most): an allgather its ``n - 1`` peers' shards, an alltoall what
    leaves the device, every other collective its buffer."""
    if r.group_size <= 1 or not r.elements:
        return 0
    if r.op == "allgather":
        return (r.group_size - 1) * r.elements
    if r.op == "alltoall":
        return math.ceil(r.wire_bytes * r.elements / r.bytes)
    return r.elements


#: name -> the call, of ``xp`` or ``np`` (``s``)
TRAFFIC_OPS = {
    **{f"matrix_norm_{o}": (lambda s, a, o=o: s.linalg.matrix_norm(a, ord=o)) for o in ("fro", "nuc", 1, -2, INF)},
    **{f"vector_norm_{o}": (lambda s, a, o=o: s.linalg.vector_norm(a, ord=o, axis=-2)) for o in (0, 3, -INF)},
    "trace": lambda s, a: s.linalg.trace(a, offset=1),
    "diagonal": lambda s, a: s.linalg.diagonal(a, offset=-1),
    "svdvals": lambda s, a: s.linalg.svdvals(a),
    "matrix_rank": lambda s, a: s.linalg.matrix_rank(a),
    "pinv": lambda s, a: s.linalg.pinv(a, rtol=None),
    "cond": lambda s, a: np.linalg.cond(a),
    "lstsq": lambda s, a: np.linalg.lstsq(a[0], a[0, :, 0]) if a.ndim == 3 else np.linalg.lstsq(a, a[:, 0]),
    "cross": lambda s, a: s.linalg.cross(a[..., :3], a[..., 1:4]),
}


@fuzz(30, ENV)
@given(
    st.sampled_from(({"row": 2, "col": 2}, {"p": 3, "q": 2}, {"x": 2, "y": 2, "z": 2})),
    st.sampled_from(sorted(TRAFFIC_OPS)),
    st.integers(0, 2**32 - 1),
    st.data(),
)
def test_fuzz_split_matrix_traffic(shape, op, seed, data):
    """On a split stack (rows, columns, batch over any axes, uneven blocks) no collective moves more than about a
    block of the operand or result, or the ``n x n`` (Gram, R) matrices of the SVD's TSQR, unless the op warned a
    ``sa.GatherWarning``; values NumPy's."""
    mesh = _mesh(shape)
    rng = np.random.default_rng(seed)
    batch = data.draw(st.sampled_from([(), (2,)]))
    m, n = data.draw(st.integers(4, 9)), data.draw(st.integers(4, 9))
    a = _random(rng, (*batch, m, n), data.draw(st.sampled_from(("float64", "complex128"))))
    x = _pos(a, mesh, data.draw(layouts(mesh, [f"dim{k}" for k in range(a.ndim)])))
    with warnings.catch_warnings(record=True) as caught, sa.comm_log() as log:
        warnings.simplefilter("always")
        out = TRAFFIC_OPS[op](xp, x)
        outs = out if isinstance(out, tuple) else (out,)
        values = [_np(o) for o in outs]
    if any(issubclass(w.category, sa.GatherWarning) for w in caught):
        return
    gram = math.prod(batch) * min(m, n) ** 2
    limit = max(2 * max(_largest_block(o) for o in (x, *outs) if hasattr(o, "spec")) + 8, gram)
    assert all(_received(r) <= limit for r in log.records), (limit, log.records)
    _close(tuple(values), _quiet(lambda: TRAFFIC_OPS[op](np, a)), 1e-8)


# ============================================================================ the meta backend

META_OPS = {
    "lstsq": ([(8, 3), (8, 2)], lambda a, b: np.linalg.lstsq(a, b)),
    "cond_2": ([(2, 8, 3)], lambda a: np.linalg.cond(a)),
    "cond_fro": ([(2, 4, 4)], lambda a: np.linalg.cond(a, "fro")),
    "matrix_power_-2": ([(2, 4, 4)], lambda a: xp.linalg.matrix_power(a, -2)),
    "solve_bcast": ([(2, 4, 4), (4, 3)], lambda a, b: xp.linalg.solve(a, b)),
    "solve_vector": ([(2, 4, 4), (4,)], lambda a, b: xp.linalg.solve(a, b)),
    "vector_norm_-1": ([(2, 8, 3)], lambda a: xp.linalg.vector_norm(a, ord=-1, axis=(0, 1))),
    "matrix_norm_-inf": ([(2, 8, 3)], lambda a: xp.linalg.matrix_norm(a, ord=-INF)),
    "matrix_norm_nuc": ([(2, 8, 3)], lambda a: xp.linalg.matrix_norm(a, ord="nuc")),
    "pinv_rtol": ([(2, 8, 3), (2,)], lambda a, r: xp.linalg.pinv(a, rtol=r)),
    "cross": ([(2, 8, 3), (8, 3)], lambda a, b: xp.linalg.cross(a, b)),
    "trace": ([(2, 8, 3)], lambda a: xp.linalg.trace(a, offset=1)),
}


def _described(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [(o.shape, o.dtype, dict(o.layout), o.pending) for o in outs]


@pytest.mark.numpy_only(reason="compares the meta backend with NumPy shards")
@pytest.mark.parametrize("op", sorted(META_OPS))
def test_meta_backend_answers_as_numpy_shards(op):
    """The positional functions and NumPy's extras on a ``meta`` mesh (shapes only): the results' shapes, dtypes,
    layouts and pending sums, and the collectives with their volumes, are those on NumPy shards (the batch split,
    the rows split where the function has a distributed path)."""
    shapes, fn = META_OPS[op]
    rng = np.random.default_rng(0)
    values = [
        _wellposed(_random(rng, s, "float64")) if len(s) > 1 and s[-1] == s[-2] else _random(rng, s, "float64")
        for s in shapes
    ]
    values = [np.abs(v) + 0.1 if v.ndim == 1 and op == "pinv_rtol" else v for v in values]
    results = []
    for backend in ("numpy", "meta"):
        mesh = sa.Mesh({"row": 2, "col": 2}, backend=backend)
        args = []
        for v in values:
            lay = {"dim0": ("row",)} if v.ndim == 3 else {"dim0": ("col",)} if v.shape[0] == 8 else {}
            x = sa.asarray(v, dims=tuple(f"dim{k}" for k in range(v.ndim)), mesh=mesh, layout=lay)
            if backend == "meta":
                x = sa.zeros(mesh, dict(zip(x.dims, v.shape)), dtype=v.dtype, layout=lay)
            args.append(as_kind(x, xp.Array))
        with warnings.catch_warnings(), sa.comm_log() as log:
            warnings.simplefilter("ignore", sa.GatherWarning)
            out = fn(*args)
        results.append((_described(out), [(r.op, r.axes, r.bytes) for r in log.records]))
    assert results[0] == results[1]


# ============================================================================ regressions


@pytest.mark.parametrize("lay", [{}, {"dim0": ("p", "q")}, {"dim0": "q", "dim1": "p"}])
def test_lstsq_negative_rcond_is_machine_precision(lay):
    """Was: ``lstsq(a, b, rcond=-0.5)`` (any negative ``rcond`` but -1) kept the zero singular values of a
    rank-deficient ``a`` (a negative cut-off): ``x`` and the residuals NaN, rank 2; NumPy's LAPACK reads every
    negative ``rcond`` as machine precision."""
    mesh = _mesh({"p": 3, "q": 2})
    a = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [2.0, 0.0]])
    b = np.array([1.0, 2.0, 3.0, 4.0])
    for rcond in (-0.5, -1, -1e-3):
        got = np.linalg.lstsq(_pos(a, mesh, lay), _pos(b, mesh, {}), rcond=rcond)
        _close(tuple(got), np.linalg.lstsq(a, b, rcond=rcond), 1e-12)


@pytest.mark.parametrize("dt", ["float32", "complex64"])
def test_lstsq_of_single_precision_computes_in_double_as_numpy(dt):
    """Was: ``lstsq`` of float32/complex64 computed in single precision with float32's ``eps`` as the default cut-off:
    a rank-1 product rounded to float32 (singular values ``~1e-8`` relative, above float64's ``eps * max(M, N)``, below
    float32's) solved as rank 1, where NumPy (LAPACK in double, ``rcond = eps64 * max(M, N)``) finds rank 3 and its
    large minimum-norm solution."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((3, 1)) * rng.standard_normal((1, 5))).astype(dt)
    b = _random(rng, (3, 2), dt)
    exp = np.linalg.lstsq(a, b)
    for lay in ({}, {"dim0": ("row",)}, {"dim1": ("row", "col")}):
        got = np.linalg.lstsq(_pos(a, _mesh({"row": 2, "col": 2}), lay), _pos(b, _mesh({"row": 2, "col": 2}), {}))
        assert int(_np(got[2])) == int(exp[2]) == 3
        _close(tuple(got), exp, 1e-3)


def test_tensorinv_and_tensorsolve_dispatch():
    """Was: ``np.linalg.tensorinv``/``tensorsolve`` of an ``Array`` raised NumPy's ``TypeError`` ("no implementation
    found"); now NumPy's results (integers in float64), its errors typed (``sa.ArgumentError`` for ``ind <= 0``,
    ``sa.linalg.MatrixShapeError``, a ``LinAlgError``, for shapes that do not make a square matrix), a NumPy operand
    refused with the conversion named."""
    mesh = _mesh({"p": 3, "q": 2})
    rng = np.random.default_rng(2)
    a = (rng.integers(-2, 3, (6, 6)) + 7 * np.eye(6, dtype=np.int64)).reshape(2, 3, 6)  # a 6 x 6 invertible
    x = _pos(a, mesh, {"dim2": ("p",), "dim0": ("q",)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.GatherWarning)
        _close(np.linalg.tensorinv(x, ind=2), np.linalg.tensorinv(a, ind=2), 1e-10)
        b = np.arange(6.0).reshape(2, 3)
        _close(np.linalg.tensorsolve(x, _pos(b, mesh, {})), np.linalg.tensorsolve(a, b), 1e-10)
        a4 = a.reshape(2, 3, 2, 3)
        x4 = _pos(a4, mesh, {"dim3": ("p",)})
        got = np.linalg.tensorsolve(x4, _pos(b, mesh, {"dim1": ("q",)}), axes=(0, 3))
        _close(got, np.linalg.tensorsolve(a4, b, axes=(0, 3)), 1e-10)
    with pytest.raises(sa.ArgumentError):
        np.linalg.tensorinv(x, ind=0)
    with pytest.raises(np.linalg.LinAlgError) as info:
        np.linalg.tensorinv(x, ind=1)
    assert isinstance(info.value, sa.linalg.MatrixShapeError)
    with pytest.raises(sa.linalg.MatrixShapeError):
        np.linalg.tensorsolve(x, x)
    with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
        np.linalg.tensorsolve(x, b)
