"""A differential fuzz, against NumPy, of ``xp.linalg`` on split arrays (round 9): non-finite input, the diagonal's
traffic, empty split matrices, products, norms and dtypes.

* **Non-finite input never reaches an iterative LAPACK routine.** NumPy's own ``svd`` (``gesdd``) loops forever on
  some matrices holding inf (``np.linalg.svd(a)`` of a 6x3 matrix with ``a[0, 0] = inf``), so the expectation of a
  matrix holding inf is never computed by NumPy's ``svd``: it is NumPy's documented answer of ``svdvals`` (NaN), and
  NaN factors for ``svd`` (``_checks.finite_only``). A matrix holding NaN raises ``sa.linalg.LinAlgError`` ("SVD did
  not converge"), as NumPy's. ``lstsq`` raises on both (NumPy's "SVD did not converge in Linear Least Squares");
  ``eig``/``eigvals`` on both (NumPy refuses them); ``eigh``/``eigvalsh`` on NaN or inf in the lower triangle (the
  one read; NumPy's verdict there depends on the position, see ``_checks``). The value sits in one block of a matrix
  split over rows, columns or both, on a 2x2 or 3x2 mesh; the other matrices of a stack keep NumPy's values.
* **The diagonal moves the diagonal**: ``xp.linalg.diagonal``/``trace``, ``np.diagonal``/``np.trace`` of split
  matrices (any offset, batch dims, uneven and empty blocks, every dtype) give NumPy's values bit for bit, and no
  comm record moves more than the diagonal (``trace``: one number per matrix).
* **Empty split matrices** warn nothing (nothing moves) and give NumPy's shape and dtype on the input's mesh.
* Products (``matmul`` with 1-D operands and broadcast batches, ``vecdot``, ``tensordot``, ``outer``, ``cross``),
  ``matrix_power`` (negative powers, integer input: float64 as NumPy), norms of every ``ord`` (integer and bool
  input: float64), ``solve`` with broadcast batches, ``cholesky(upper=True)``, ``eigvalsh``, ``slogdet`` of singular
  matrices, 1x1 and 0-size matrices, batch dims split over mesh axes. float16 is refused (``sa.DTypeError``, a
  ``TypeError`` as NumPy's), as is a bool ``matmul`` (the namespace's documented domain).

``FUZZ9_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
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
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's and the backend's, on NaN and inf)

ENV = "FUZZ9_EXAMPLES"
DTYPES = ("float32", "float64", "complex64", "complex128")
SPLIT_MESHES = ({"row": 2, "col": 2}, {"p": 3, "q": 2})


def _pos(a: np.ndarray, mesh, layout) -> xp.Array:
    return as_kind(sa.asarray(a, dims=tuple(f"dim{k}" for k in range(a.ndim)), mesh=mesh, layout=layout), xp.Array)


def _random(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _tol(dt, n: int, factor: float = 1.0) -> float:
    return 64 * max(1, n) * float(np.finfo(np.dtype(dt)).eps) * factor


def close(g, e, tol: float, scale: float | None = None):
    e = np.asarray(e)
    fin = np.isfinite(e)
    if scale is None:
        scale = float(np.max(np.abs(e[fin]), initial=0.0))
    np.testing.assert_allclose(g, e, rtol=tol, atol=tol * (1 + scale))


def same_meta(got, expected) -> np.ndarray:
    assert type(got) is xp.Array, type(got)
    g, e = got.numpy(), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
    return g


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _strict(fn, fallback: bool = False):
    """``fn()`` with every ``GatherWarning`` an error (but the documented replicated fallback where allowed) and its
    comm log: ``(result, records)``."""
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", sa.GatherWarning)
        if fallback:
            warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        out = fn()
    return out, log.records


# ============================================================================ non-finite input before LAPACK

#: layouts that split the matrix dims of a (batch..., m, n) array over a two-axis mesh: rows, cols, both, and
#: the batch with the rows
MATRIX_SPLITS = ("rows", "cols", "both", "rows2", "cols2", "batch_rows")


def _split_layout(how: str, axes: tuple[str, str], ndim: int) -> dict:
    r, c = f"dim{ndim - 2}", f"dim{ndim - 1}"
    if how == "batch_rows" and ndim > 2:
        return {"dim0": axes[0], r: axes[1]}
    return {
        "rows": {r: axes[0]},
        "cols": {c: axes[1]},
        "both": {r: axes[0], c: axes[1]},
        "rows2": {r: axes},
        "cols2": {c: axes},
    }.get(how, {r: axes})


@st.composite
def spoiled(draw, square: bool = False):
    """``(mesh, a, x, bad, nan)``: a stack of matrices, split over a 2x2 or 3x2 mesh, with inf, -inf and/or NaN in
    one or two matrices (one block each); ``bad``/``nan``: per matrix, whether it holds a non-finite value / NaN."""
    mesh = _mesh(draw(st.sampled_from(SPLIT_MESHES)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m, n = draw(st.sampled_from([(6, 3), (3, 6), (4, 4), (7, 2), (2, 7), (5, 5), (1, 4), (9, 4)]))
    if square:
        m = n = max(m, n) if draw(st.booleans()) else min(m, n)
    batch = draw(st.sampled_from([(), (), (2,), (3,)]))
    dt = draw(st.sampled_from(DTYPES))
    a = _random(rng, (*batch, m, n), dt)
    values = draw(st.lists(st.sampled_from(["inf", "-inf", "nan", "infj"]), min_size=1, max_size=2))
    for v in values:
        at = tuple(int(rng.integers(s)) for s in a.shape)
        a[at] = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}.get(v, complex(0, np.inf) if dt[0] == "c" else np.inf)
    x = _pos(a, mesh, _split_layout(draw(st.sampled_from(MATRIX_SPLITS)), mesh.axis_names, a.ndim))
    bad = ~np.all(np.isfinite(a), axis=(-2, -1))
    nan = np.any(np.isnan(a), axis=(-2, -1))
    return mesh, a, x, bad, nan


def _clean(a: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """``a`` with its matrices holding inf or NaN zeroed: what NumPy may be asked about (its svd can hang on them)."""
    return np.where(bad[..., None, None], 0, a).astype(a.dtype)


def _expect_nan_where_bad(got: np.ndarray, expected: np.ndarray, bad: np.ndarray, tol: float):
    """Matrices flagged ``bad`` all NaN, the others NumPy's (``expected``, from the cleaned stack)."""
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, expected.shape, got.dtype)
    assert np.all(np.isnan(got[bad])), got[bad]
    close(got[~bad], expected[~bad], tol)


SVD_FAMILY = ("svd", "svd_full", "svdvals", "pinv", "matrix_rank", "norm_2", "norm_-2", "norm_nuc", "cond")


@fuzz(60, ENV)
@given(spoiled(), st.sampled_from(SVD_FAMILY))
def test_fuzz_svd_family_of_non_finite_matrices(case, op):
    """NaN raises ``LinAlgError``; inf gives NaN (rank 0, ``cond`` inf): never a hang, never a gather."""
    _, a, x, bad, nan = case
    m, n = a.shape[-2:]
    full = op == "svd_full"
    call = {
        "svd": lambda: xp.linalg.svd(x, full_matrices=False),
        "svd_full": lambda: xp.linalg.svd(x, full_matrices=True),
        "svdvals": lambda: xp.linalg.svdvals(x),
        "pinv": lambda: xp.linalg.pinv(x),
        "matrix_rank": lambda: xp.linalg.matrix_rank(x),
        "norm_2": lambda: xp.linalg.matrix_norm(x, ord=2),
        "norm_-2": lambda: xp.linalg.matrix_norm(x, ord=-2),
        "norm_nuc": lambda: xp.linalg.matrix_norm(x, ord="nuc"),
        "cond": lambda: xp.linalg.cond(x),
    }[op]
    if nan.any():
        with pytest.raises(sa.linalg.LinAlgError, match="did not converge"):
            _quiet(call)
        return
    got, records = _strict(call, fallback=full and m != n)
    k = max(m, n)
    assert not [r for r in records if r.op == "allgather" and r.elements > 2 * max(1, a[..., 0, 0].size) * k * k]
    c = _clean(a, bad)
    t = _tol(a.dtype, k, 10)
    if op.startswith("svd"):
        got = got if isinstance(got, tuple) else (got,)
        expected = np.linalg.svd(c, full_matrices=full) if op != "svdvals" else (np.linalg.svd(c, compute_uv=False),)
        s = got[1] if len(got) == 3 else got[0]
        es = expected[1] if len(expected) == 3 else expected[0]
        _expect_nan_where_bad(s.numpy(), es, bad, t)
        if len(got) == 3:
            for g, e in zip(got, expected):
                g = same_meta(g, e)
                assert np.all(np.isnan(g[bad]))
        return
    e = {
        "pinv": lambda: np.linalg.pinv(c),
        "matrix_rank": lambda: np.linalg.matrix_rank(c),
        "norm_2": lambda: np.linalg.matrix_norm(c, ord=2),
        "norm_-2": lambda: np.linalg.matrix_norm(c, ord=-2),
        "norm_nuc": lambda: np.linalg.matrix_norm(c, ord="nuc"),
        "cond": lambda: _quiet(lambda: np.linalg.cond(c)),
    }[op]()
    g = same_meta(got, e)
    if op == "matrix_rank":
        np.testing.assert_array_equal(g, np.where(bad, 0, e))
    elif op == "cond":
        assert np.all(np.isinf(g[bad]))
        ok = ~bad & np.isfinite(e) & (np.abs(e) < 1e6)
        close(g[ok], e[ok], t, 1.0)
    else:
        _expect_nan_where_bad(g, e, bad, t)


@fuzz(50, ENV)
@given(spoiled(square=True), st.sampled_from(["eigh", "eigvalsh", "eig", "eigvals", "lstsq"]))
def test_fuzz_eig_and_lstsq_of_non_finite_matrices(case, op):
    """``eig``/``eigvals`` and ``lstsq`` raise on any NaN or inf (as NumPy); ``eigh``/``eigvalsh`` on those in the
    lower triangle, and give NumPy's values where only the upper triangle (never read) holds them."""
    mesh, a, x, _bad, _ = case
    if op == "lstsq":
        if a.ndim != 2:
            return
        b = np.ones(a.shape[0], dtype=a.dtype)
        with pytest.raises(sa.linalg.LinAlgError, match="did not converge"):
            _quiet(lambda: xp.linalg.lstsq(x, xp.asarray(b, device=mesh)))
        return
    read = np.tril(np.ones(a.shape[-2:], dtype=bool)) if op in ("eigh", "eigvalsh") else np.ones(a.shape[-2:], bool)
    raising = ~np.all(np.isfinite(a) | ~read, axis=(-2, -1))
    call = getattr(xp.linalg, op)
    if raising.any():
        with pytest.raises(sa.linalg.LinAlgError, match="did not converge"):
            _quiet(lambda: call(x))
        return
    got, _ = _strict(lambda: call(x), fallback=True)
    w = got if op in ("eigvalsh", "eigvals") else got[0]
    e = getattr(np.linalg, op)(a)
    e = e if op in ("eigvalsh", "eigvals") else e[0]
    if op.startswith("eig") and not op.startswith("eigh") and op != "eigvalsh":  # (LAPACK's order, complex)
        close(np.sort_complex(w.numpy()), np.sort_complex(e), _tol(a.dtype, a.shape[-1], 100))
        return
    close(same_meta(w, e), e, _tol(a.dtype, a.shape[-1]))


# ====================================================================================== diagonal and trace


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_diagonal_and_trace_move_only_the_diagonal(data):
    mesh = data.draw(meshes())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = (*data.draw(st.sampled_from([(), (), (2,), (0,), (3, 1)])), *data.draw(st.sampled_from(
        [(5, 4), (4, 7), (1, 1), (0, 3), (6, 6), (2, 9), (9, 2)])))  # fmt: skip
    dt = data.draw(st.sampled_from(["float64", "float32", "complex64", "int32", "int8", "bool", "uint16"]))
    a = _random(rng, shape, "float64") * 5
    a = (a > 0) if dt == "bool" else a.astype(dt)
    if a.dtype.kind == "f" and a.size:
        a.flat[0] = -0.0  # (the sign of zero kept)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    x = _pos(a, mesh, data.draw(layouts(mesh, dims)))
    offset = data.draw(st.integers(-4, 4))
    nmat = math.prod(shape[:-2])
    k = np.linalg.diagonal(a, offset=offset).shape[-1]
    (d, t), records = _strict(lambda: (xp.linalg.diagonal(x, offset=offset), xp.linalg.trace(x, offset=offset)))
    ed, et = np.linalg.diagonal(a, offset=offset), np.linalg.trace(a, offset=offset)
    g = same_meta(d, ed)
    np.testing.assert_array_equal(g, ed)
    assert np.array_equal(np.signbit(g), np.signbit(ed)) if g.dtype.kind == "f" else True
    close(same_meta(t, et), et, _tol("float32", k) if et.dtype.kind in "fc" else 0)
    gt = t.numpy()  # (resolved: the pending sum's allreduce of one number per matrix)
    assert not [r for r in records if r.op == "allgather"]
    assert all(r.elements <= max(nmat * k, 1) for r in records), (records, nmat, k)
    if a.ndim == 3 and data.draw(st.booleans()):  # NumPy's own functions, other axes: the same path
        np.testing.assert_array_equal(np.asarray(np.diagonal(x, offset, 2, 0)), np.diagonal(a, offset, 2, 0))
        np.testing.assert_array_equal(np.asarray(np.trace(x, offset, 0, 1)), np.trace(a, offset, 0, 1))
    del gt


# ========================================================================================= empty matrices

EMPTY_OPS = {
    "svd": lambda x: xp.linalg.svd(x),
    "svdvals": lambda x: xp.linalg.svdvals(x),
    "qr": lambda x: xp.linalg.qr(x),
    "pinv": lambda x: xp.linalg.pinv(x),
    "matrix_rank": lambda x: xp.linalg.matrix_rank(x),
    "norm_2": lambda x: xp.linalg.matrix_norm(x, ord=2),
    "cholesky": lambda x: xp.linalg.cholesky(x, upper=True),
    "inv": lambda x: xp.linalg.inv(x),
    "det": lambda x: xp.linalg.det(x),
    "slogdet": lambda x: tuple(xp.linalg.slogdet(x)),
    "eigh": lambda x: tuple(xp.linalg.eigh(x)),
    "eigvalsh": lambda x: xp.linalg.eigvalsh(x),
    "eigvals": lambda x: xp.linalg.eigvals(x),
    "solve": lambda x: xp.linalg.solve(x, x),
    "diagonal": lambda x: xp.linalg.diagonal(x),
}
NP_EMPTY = {
    "svd": lambda a: tuple(np.linalg.svd(a)),
    "svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
    "qr": lambda a: tuple(np.linalg.qr(a)),
    "norm_2": lambda a: np.linalg.matrix_norm(a, ord=2),
    "cholesky": lambda a: np.linalg.cholesky(a, upper=True),
    "slogdet": lambda a: tuple(np.linalg.slogdet(a)),
    "eigh": lambda a: tuple(np.linalg.eigh(a)),
    "eigvals": lambda a: np.linalg.eigvals(a).astype(np.result_type(a.dtype, np.complex64)),
    "solve": lambda a: np.linalg.solve(a, a),
    "diagonal": lambda a: np.linalg.diagonal(a),
}
SQUARE_ONLY = {"cholesky", "inv", "det", "slogdet", "eigh", "eigvalsh", "eigvals", "solve"}


@pytest.mark.parametrize("op", sorted(EMPTY_OPS))
@pytest.mark.parametrize("shape", [(0, 0), (3, 0), (0, 4), (2, 0, 0), (0, 3, 3), (0, 2, 5)])
@pytest.mark.parametrize("how", ["both", "rows2"])
def test_empty_split_matrices_warn_nothing(op, shape, how):
    """An empty matrix (or an empty stack) split over the mesh: the replicated fallback warned a gather of 0
    bytes (``GatherWarning``) though nothing moves; now no warning, NumPy's shape and dtype, on the input's mesh."""
    if op in SQUARE_ONLY and shape[-1] != shape[-2]:
        return
    mesh = _mesh({"p": 3, "q": 2})
    a = np.zeros(shape, dtype=np.float32)
    x = _pos(a, mesh, _split_layout(how, mesh.axis_names, a.ndim))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = EMPTY_OPS[op](x)
    expected = NP_EMPTY.get(op, lambda a: getattr(np.linalg, op)(a))(a)
    for g, e in zip(
        got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)
    ):
        assert g.mesh is mesh
        same_meta(g, e)


# ================================================================================ products, norms, dtypes

INT_DTYPES = ("int8", "int32", "int64", "uint8")


def _values(rng, shape, dt):
    if dt == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dt).kind in "iu":
        return rng.integers(0 if dt[0] == "u" else -3, 4, shape).astype(dt)
    return _random(rng, shape, dt)


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_products_with_broadcast_batches(data):
    mesh = data.draw(meshes())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dt = data.draw(st.sampled_from(("float64", "complex64", "int32", "int8", "float32")))
    b1, b2 = data.draw(
        st.sampled_from([((), ()), ((2,), ()), ((1,), (3,)), ((2, 1), (3,)), ((0,), (1,)), ((3,), (3,))])
    )
    n, k, m = (data.draw(st.sampled_from([0, 1, 3, 4])) for _ in range(3))
    one = data.draw(st.sampled_from(["", "left", "right"]))
    s1 = (k,) if one == "left" else (*b1, n, k)
    s2 = (k,) if one == "right" else (*b2, k, m)
    a1, a2 = _values(rng, s1, dt), _values(rng, s2, dt)
    x1 = _pos(a1, mesh, data.draw(layouts(mesh, tuple(f"dim{i}" for i in range(a1.ndim)))))
    x2 = _pos(a2, mesh, data.draw(layouts(mesh, tuple(f"dim{i}" for i in range(a2.ndim)))))
    t = _tol(dt if dt[0] in "fc" else "float64", k + 1)
    got = _quiet(lambda: xp.linalg.matmul(x1, x2))
    e = np.matmul(a1, a2)
    close(same_meta(got, e), e, t)
    # vecdot over the last axis of operands broadcast against each other
    v1, v2 = _values(rng, (*b1, 4), dt), _values(rng, (*b2, 4), dt)
    y1 = _pos(v1, mesh, data.draw(layouts(mesh, tuple(f"dim{i}" for i in range(v1.ndim)))))
    y2 = _pos(v2, mesh, data.draw(layouts(mesh, tuple(f"dim{i}" for i in range(v2.ndim)))))
    e = np.linalg.vecdot(v1, v2)
    close(same_meta(_quiet(lambda: xp.linalg.vecdot(y1, y2)), e), e, t)
    # cross along a chosen axis of size 3, broadcasting
    c1, c2 = _values(rng, (*b1, 3, 2), dt), _values(rng, (3, 2), dt)
    z1, z2 = _pos(c1, mesh, data.draw(layouts(mesh, tuple(f"dim{i}" for i in range(c1.ndim))))), _pos(c2, mesh, {})
    if dt[0] != "u":
        e = np.linalg.cross(c1, c2, axis=-2)
        close(same_meta(_quiet(lambda: xp.linalg.cross(z1, z2, axis=-2)), e), e, t)
    # tensordot (int and pair axes) and outer
    e = np.linalg.tensordot(c1, c2, axes=2)
    close(same_meta(_quiet(lambda: xp.linalg.tensordot(z1, z2, axes=2)), e), e, t)
    e = np.linalg.tensordot(c1, c2, axes=([-1], [1]))
    close(same_meta(_quiet(lambda: xp.linalg.tensordot(z1, z2, axes=([-1], [1]))), e), e, t)
    o1, o2 = _values(rng, (n,), dt), _values(rng, (m + 1,), dt)
    w1, w2 = _pos(o1, mesh, data.draw(layouts(mesh, ("dim0",)))), _pos(o2, mesh, data.draw(layouts(mesh, ("dim0",))))
    e = np.linalg.outer(o1, o2)
    np.testing.assert_array_equal(same_meta(_quiet(lambda: xp.linalg.outer(w1, w2)), e), e)


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_matrix_power_and_norms(data):
    mesh = data.draw(meshes())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dt = data.draw(st.sampled_from(("float64", "complex128", "float32", *INT_DTYPES, "bool")))
    batch = data.draw(st.sampled_from([(), (2,), (0,), (3,)]))
    n = data.draw(st.sampled_from([0, 1, 2, 4, 5]))
    a = _values(rng, (*batch, n, n), dt)
    if dt != "bool" and n:
        a = a + (3 * np.eye(n)).astype(a.dtype)  # (invertible for the negative powers)
    dims = tuple(f"dim{i}" for i in range(a.ndim))
    x = _pos(a, mesh, data.draw(layouts(mesh, dims)))
    p = data.draw(st.integers(-2, 4))
    # (bool matrices too: NumPy's bool matmul, the or of ands, since round 13)
    try:
        out = _quiet(lambda: np.linalg.matrix_power(a, p))
    except np.linalg.LinAlgError:  # (a singular matrix, negative power)
        with pytest.raises(sa.linalg.LinAlgError):
            _quiet(lambda: xp.linalg.matrix_power(x, p))
    else:
        got = _quiet(lambda: xp.linalg.matrix_power(x, p))
        cond = float(np.max(_quiet(lambda: np.linalg.cond(a)), initial=1.0)) if p < 0 and a.size else 1.0
        close(same_meta(got, out), out, _tol("float32" if dt in ("float32",) else "float64", n, 1e3 * cond))
    if dt == "bool":
        return
    ords = ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]
    ord_ = data.draw(st.sampled_from(ords))
    keep = data.draw(st.booleans())
    svd = ord_ in (2, -2, "nuc")
    if n == 0 and ord_ in (-1, -2, -math.inf):
        return  # (NumPy: a min over nothing raises, as here; a different message)
    e = _quiet(lambda: np.linalg.matrix_norm(a, ord=ord_, keepdims=keep))
    if svd and a.dtype.kind in "iu":  # (the SVD's norms of integers: float64 in NumPy; xp.linalg refuses them)
        with pytest.raises(sa.DTypeError):
            xp.linalg.matrix_norm(x, ord=ord_)
    else:
        g = _quiet(lambda: xp.linalg.matrix_norm(x, ord=ord_, keepdims=keep))
        close(same_meta(g, e), e, _tol(e.dtype if e.dtype.kind == "f" else "float64", n + 1))
    ord_ = data.draw(st.sampled_from([2, 1, 0, 3, -1, 0.5, math.inf, -math.inf]))
    axis = data.draw(st.sampled_from([None, -1, (-2, -1), 0]))
    if a.size == 0 and ord_ in (-1, -math.inf, 0.5):
        return
    e = _quiet(lambda: np.linalg.vector_norm(a, ord=ord_, axis=axis, keepdims=keep))
    g = _quiet(lambda: xp.linalg.vector_norm(x, ord=ord_, axis=axis, keepdims=keep))
    close(same_meta(g, e), e, _tol(e.dtype if e.dtype.kind == "f" else "float64", a.size + 1))


@fuzz(60, ENV)
@given(st.data())
def test_fuzz_solve_cholesky_eigvalsh_slogdet(data):
    mesh = data.draw(meshes())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dt = data.draw(st.sampled_from(DTYPES))
    n = data.draw(st.sampled_from([0, 1, 2, 3, 5]))
    ba, bb = data.draw(st.sampled_from([((), ()), ((2,), ()), ((1,), (3,)), ((2, 1), (3,)), ((), (2,)), ((3,), (3,))]))
    g = _random(rng, (*ba, n, n), dt)
    spd = (g @ np.conj(np.swapaxes(g, -1, -2)) + n * np.eye(n)).astype(dt)
    x = _pos(spd, mesh, data.draw(layouts(mesh, tuple(f"dim{i}" for i in range(spd.ndim)))))
    vec = data.draw(st.booleans()) and not bb
    rhs = _random(rng, (n,) if vec else (*bb, n, 2), dt)
    y = _pos(rhs, mesh, data.draw(layouts(mesh, tuple(f"dim{i}" for i in range(rhs.ndim)))))
    t = _tol(dt, n, 10 * n + 10)
    e = np.linalg.solve(spd, rhs)
    close(same_meta(_quiet(lambda: xp.linalg.solve(x, y)), e), e, t)
    e = np.linalg.cholesky(spd, upper=True)
    close(same_meta(_quiet(lambda: xp.linalg.cholesky(x, upper=True)), e), e, t)
    e = np.linalg.eigvalsh(spd)
    close(same_meta(_quiet(lambda: xp.linalg.eigvalsh(x)), e), e, t)
    # slogdet of singular matrices: sign 0, logabsdet -inf, as NumPy
    sing = spd.copy()
    if n > 1:
        sing[..., :, 1] = sing[..., :, 0]
    elif n == 1:
        sing[...] = 0
    z = _pos(sing, mesh, data.draw(layouts(mesh, tuple(f"dim{i}" for i in range(sing.ndim)))))
    s, la = _quiet(lambda: xp.linalg.slogdet(z))
    es, el = np.linalg.slogdet(sing)
    gs, gl = same_meta(s, es), same_meta(la, el)
    zero = es == 0
    np.testing.assert_array_equal(gs[zero], 0)
    np.testing.assert_array_equal(gl[zero], -np.inf)


@pytest.mark.parametrize("op", ["det", "inv", "svdvals", "qr", "cholesky", "eigvalsh", "matrix_power", "matrix_norm"])
def test_float16_is_refused_as_numpy_refuses_it(op):
    """NumPy's LAPACK functions refuse float16 (``TypeError``: "array type float16 is unsupported in linalg"); so do
    these (``sa.DTypeError``, a ``TypeError``), naming float32 as the way out."""
    a = np.eye(3, dtype=np.float16)
    x = _pos(a, _mesh({"p": 3, "q": 2}), {"dim0": "p"})
    call = {
        "matrix_power": lambda: xp.linalg.matrix_power(x, -1),
        "matrix_norm": lambda: xp.linalg.matrix_norm(x, ord=2),
    }.get(op, lambda: getattr(xp.linalg, op)(x))
    np_call = {
        "matrix_power": lambda: np.linalg.matrix_power(a, -1),
        "matrix_norm": lambda: np.linalg.matrix_norm(a, ord=2),
        "svdvals": lambda: np.linalg.svd(a),
    }.get(op, lambda: getattr(np.linalg, op)(a))
    with pytest.raises(TypeError):
        np_call()
    with pytest.raises(sa.DTypeError, match="float32"):
        call()


# ========================================================================================= regressions


@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (4, 4)])
@pytest.mark.parametrize("layout", [{"dim0": "p", "dim1": "q"}, {"dim0": ("p", "q")}, {}])
def test_svd_of_a_matrix_holding_inf_returns_nan(shape, layout):
    """``xp.linalg.svd`` (``full_matrices=True``, the standard's default) of a non-square matrix holding inf handed it
    to LAPACK's ``gesdd`` through the replicated fallback, which loops forever on it (NumPy's ``svd`` of the same
    matrix never returns); a tall or square one raised "SVD did not converge" where NumPy's ``svdvals`` gives NaN.
    Now NaN factors, NumPy's ``svdvals`` answer, with no LAPACK call on the inf."""
    a = np.arange(1.0, 1.0 + math.prod(shape)).reshape(shape)
    a[0, 0] = np.inf
    x = _pos(a, _mesh({"p": 3, "q": 2}), layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.linalg.ReplicatedFallbackWarning)
        u, s, vh = xp.linalg.svd(x)
    assert u.shape == (shape[0], shape[0]) and vh.shape == (shape[1], shape[1])
    assert np.all(np.isnan(s.numpy())) and np.all(np.isnan(u.numpy())) and np.all(np.isnan(vh.numpy()))
    np.testing.assert_array_equal(xp.linalg.svdvals(x).numpy(), np.linalg.svd(a, compute_uv=False))  # all NaN
    assert int(xp.linalg.matrix_rank(x)) == np.linalg.matrix_rank(a) == 0
    assert float(xp.linalg.cond(x)) == np.linalg.cond(a) == np.inf


def test_lstsq_of_a_matrix_holding_inf_raises():
    """``lstsq`` of a matrix holding inf returned NaN (``x``, ``s``) and rank 0; NumPy's raises "SVD did not converge
    in Linear Least Squares" (where its ``gelsd`` returns at all)."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(6, 2)
    a[5, 1] = np.inf
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.lstsq(a, np.ones(6))
    with pytest.raises(sa.linalg.LinAlgError, match="Linear Least Squares"):
        xp.linalg.lstsq(_pos(a, mesh, {"dim0": ("row", "col")}), xp.asarray(np.ones(6), device=mesh))


@pytest.mark.parametrize("op", ["eig", "eigh"])
def test_eig_of_non_finite_matrices_raises_without_lapack(op, monkeypatch):
    """``eig``/``eigh`` handed matrices holding inf or NaN to LAPACK (``geev``, ``syevd``: iterative; cuSOLVER's do not
    refuse them as NumPy's ``eig`` does) before raising; now LAPACK sees zeros in their place."""
    mesh = _mesh({"p": 3, "q": 2})
    a = np.stack([np.eye(3), np.eye(3)])
    a[1, 2, 0] = np.inf
    seen = []
    bxp = mesh.backend.xp  # (NumPy, or CuPy under --backend=cupy)
    real = getattr(bxp.linalg, op)

    def spy(m, *args, **kw):
        seen.append(bool(bxp.all(bxp.isfinite(m))))
        return real(m, *args, **kw)

    monkeypatch.setattr(bxp.linalg, op, spy)
    with pytest.raises(sa.linalg.LinAlgError):
        _quiet(lambda: getattr(xp.linalg, op)(_pos(a, mesh, {"dim1": "p"})))
    assert seen and all(seen)


@pytest.mark.parametrize(
    "layout", [{"dim0": "row", "dim2": "col"}, {"dim1": "col", "dim2": "row"}, {"dim2": ("row", "col")}]
)
def test_diagonal_of_a_split_matrix_moves_no_matrix(layout):
    """``xp.linalg.diagonal``/``trace`` multiplied the matrix by an ``eye`` mask made in the default layout and
    summed its rows: the mask was moved to ``x``'s layout (an allgather or alltoall of a 32x64 block per device
    here) and ``diagonal`` allreduced whole row sums; now each device takes its diagonal entries, ``diagonal``
    allreduces the diagonal and ``trace`` one number per matrix."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(2 * 64 * 64.0).reshape(2, 64, 64)
    x = _pos(a, mesh, layout)
    with sa.comm_log() as log:
        t = xp.linalg.trace(x).numpy()
    assert [r.op for r in log.records] == ["allreduce"] and log.records[0].elements <= 2, log.records
    np.testing.assert_array_equal(t, np.trace(a, axis1=1, axis2=2))
    with sa.comm_log() as log:
        d = xp.linalg.diagonal(x, offset=3).numpy()
    assert [r.op for r in log.records] == ["allreduce"] and log.records[0].elements <= 2 * 61, log.records
    np.testing.assert_array_equal(d, np.linalg.diagonal(a, offset=3))


@pytest.mark.parametrize("op", ["cond", "lstsq", "matrix_power"])
@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8"])
def test_integer_input_of_numpy_extras_is_float64(op, dtype):
    """``cond``, ``lstsq`` (NumPy extras) and ``matrix_power`` with ``n < 0`` refused integer and bool matrices
    (``DTypeError``) where NumPy's compute in float64 (``np.linalg.cond(ints)`` through the protocol too)."""
    mesh = _mesh({"p": 3, "q": 2})
    a = (np.eye(3) * 2 + np.triu(np.ones((3, 3)), 1)).astype(dtype)
    x = _pos(a, mesh, {"dim0": "p", "dim1": "q"})
    call = {
        "cond": (lambda m: np.linalg.cond(m), lambda m: xp.linalg.cond(m)),
        "lstsq": (lambda m: np.linalg.lstsq(m, np.ones(3))[0], lambda m: xp.linalg.lstsq(m, np.ones(3))[0]),
        "matrix_power": (lambda m: np.linalg.matrix_power(m, -2), lambda m: xp.linalg.matrix_power(m, -2)),
    }[op]
    e = call[0](a)
    got = _quiet(lambda: call[1](x))
    close(same_meta(got, e), e, 1e-12)


def test_matrix_power_takes_numpy_integers():
    """``matrix_power(x, np.int64(2))`` was refused ("n must be an int"); NumPy takes any integer."""
    a = np.arange(9.0).reshape(3, 3)
    got = xp.linalg.matrix_power(_pos(a, _mesh({"row": 2, "col": 2}), {"dim0": "row"}), np.int64(2))
    np.testing.assert_array_equal(got.numpy(), np.linalg.matrix_power(a, 2))
