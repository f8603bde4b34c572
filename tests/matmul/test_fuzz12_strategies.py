"""A differential fuzz of the distributed matmul strategies (fuzz round 12): SUMMA and Tesseract against NumPy and
against their communication formulas, named einsums of every layout against ``np.einsum``, the positional products,
and the gradients of each strategy.

* ``test_fuzz_summa_and_tesseract``: einsums of the matmul shape (several m, n, k dims, batch dims, either operand
  order, any output order) laid out in SUMMA's pattern on a q×q pair of axes of a mesh (2x2, 2x2x2 with any two axes
  as the grid, 3x3, 1x1, a 2x2 grid under a depth axis of size 3 > q, and under data × depth axes), sizes that divide
  into the blocks or not (uneven and empty blocks). ``auto`` picks Tesseract where A's m dim has a depth axis of size
  ≤ q before ``row``, SUMMA otherwise, and the allreduce algorithm where a size does not divide; a forced
  ``summa``/``tesseract`` raises ``sa.LayoutError`` exactly where its pattern does not hold. Values and gradients
  match NumPy (float64, and complex through real and imaginary parameters), no gather warns, and the comm log is the
  papers' formula: q broadcasts of A's block along the row group and q of B's along the column group forward
  (ab/(qd) + bc/q per device); backward twice the broadcasts, q reduces of each block and dB's allreduce over the
  depth (and data) axes.
* ``test_fuzz_named_einsum``: einsums of 1-3 named operands in random layouts on the test meshes (1, 2x2, 4, 2x2x2,
  3x2), sizes 0, 1, 2, 3, 5, dtypes bool, int8 and uint8 (overflowing as NumPy's), int64, float16, bfloat16, float32,
  float64, complex64 and complex128 mixed, operands with pending sums; the result (resolved by ``.numpy()``, and fed
  pending into a second einsum) is ``np.einsum``'s, dtype included.
* ``test_fuzz_positional_products``: ``xp.matmul``, ``@``, ``xp.tensordot``, ``xp.vecdot``, ``np.einsum`` (repeated
  letters: traces and diagonals; ``...`` broadcasting) and ``np.matmul`` on positional arrays in random layouts.
* ``test_fuzz_einsum_gradients``: ``sa.grad`` of a random two- or three-operand einsum under ``auto`` and
  ``allreduce`` with complex intermediates against float64 central differences (JAX's convention: the cotangent of
  a real parameter is the real part).
* ``test_fuzz_meta_einsum``: on the shape-only meta backend an einsum has the data backends' dtype and each device's
  shard its block's shape.

``FUZZ12_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import string
import warnings

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.dtypes import promote
from shardarray.layout import block_bounds

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ12_EXAMPLES"

#: meshes with a q×q pair of axes (the others hold depth, data or batch layers)
GRIDS = (
    {"row": 2, "col": 2},
    {"x": 2, "y": 2, "z": 2},
    {"r": 3, "c": 3},
    {"u": 1, "v": 1},
    {"e": 3, "f": 2, "g": 2},
    {"a": 2, "b": 1, "c": 2, "d": 2},
)
DTYPES = ("bool", "int8", "uint8", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
LOW = {"float16", "bfloat16", "complex64", "float32"}


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Small integers (exact in every dtype), int8 ones large enough to overflow a sum, complex with an imaginary
    part, bools of both values."""
    v = rng.integers(-4, 5, shape)
    if dtype == "bool":
        return v > 0
    if dtype == "int8":
        return (v * 30).astype(np.int8)
    if dtype == "uint8":
        return (np.abs(v) * 60).astype(np.uint8)
    if dtype == "bfloat16":
        return v.astype(ml_dtypes.bfloat16)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.integers(-4, 5, shape)
    return v.astype(dtype)


def _block(x) -> int:
    """The most elements any device holds of ``x``."""
    return max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(x.mesh, x.spec)), default=0)


def _received(r) -> int:
    """What one device receives in comm record ``r`` (at most) outside relayouts' alltoalls: an allgather its peers'
    shards, any other collective its buffer (as ``tests/test_fuzz9_traffic.py`` counts)."""
    if r.group_size <= 1 or not r.elements:
        return 0
    if r.op == "allgather":
        return (r.group_size - 1) * r.elements
    if r.op == "alltoall":  # (a relayout's record of uneven blocks overcounts: at most the new block, bounded by
        return 0  # test_fuzz9_traffic's relayout rule; a whole operand moves by allgather or broadcast)
    return r.elements


def _letters(*dim_lists) -> dict:
    """A NumPy einsum letter for each dim name."""
    names = sorted({d for dims in dim_lists for d in dims})
    return {d: string.ascii_letters[i] for i, d in enumerate(names)}


def _np_equation(terms, out) -> str:
    letter = _letters(*terms, out)
    return ",".join("".join(letter[d] for d in t) for t in terms) + "->" + "".join(letter[d] for d in out)


def _reference(equation: str, values) -> np.ndarray:
    """``np.einsum``; with a bfloat16 operand (NumPy has no einsum loop for it) computed in float64 or complex128 and
    cast to the promoted dtype (JAX's: bfloat16 with float16 is float32, with int64 float64)."""
    if not any(v.dtype == ml_dtypes.bfloat16 for v in values):
        return np.einsum(equation, *values)
    wide = np.complex128 if any(v.dtype.kind == "c" for v in values) else np.float64
    return np.einsum(equation, *[v.astype(wide) for v in values]).astype(promote(*[v.dtype for v in values]))


def _quiet(fn):
    """``fn()`` with ``sa.GatherWarning`` an error (a strategy or fallback must not gather a whole operand)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        return fn()


def _magnitude(values) -> list:
    """``|values|`` in float64: the reference of these is the scale of a sum's rounding error."""
    return [np.abs(v.astype(np.complex128) if v.dtype.kind == "c" else v.astype(np.float64)) for v in values]


def _close(got: np.ndarray, ref: np.ndarray, low: bool, scale=None) -> None:
    """Equal for bool and integer results (wrapping as NumPy's), else within rounding: relative to ``scale`` (the
    sum of the terms' magnitudes) in float16/bfloat16/float32, where sums in another order differ by ulps of the
    largest partial sum (and may overflow to inf or not: such entries are not compared)."""
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, ref.shape, got.dtype, ref.dtype)
    if got.dtype == bool or got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, ref)
        return
    g, r = got.astype(np.complex128), ref.astype(np.complex128)
    if not low:
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-10)
        return
    scale = np.abs(r) if scale is None else np.asarray(scale, dtype=np.float64)
    finite = (
        scale < float(ml_dtypes.finfo(got.dtype).max) / 4
        if got.dtype.kind == "f" or got.dtype == ml_dtypes.bfloat16
        else scale < 1e30
    )
    assert np.all(np.abs(g - r)[finite] <= 3e-2 * scale[finite] + 3e-2), (got, ref, scale)


# ================================================================================== SUMMA and Tesseract


@st.composite
def summa_cases(draw):
    """An einsum of the matmul shape laid out in SUMMA's pattern (with depth/data/batch axes), sizes even or not."""
    mesh = cached_mesh(draw(st.sampled_from(GRIDS)))
    names = mesh.axis_names
    pairs = [(a, b) for a in names for b in names if a != b and mesh.axis_size(a) == mesh.axis_size(b)]
    row, col = draw(st.sampled_from(pairs))
    rest = draw(st.permutations([a for a in names if a not in (row, col)]))
    q = mesh.axis_size(row)
    roles = {r: [f"{r}{i}" for i in range(draw(st.integers(1 if r != "b" else 0, 2)))] for r in "mnkb"}
    role = draw(st.sampled_from(["depth", "batch", "none"])) if rest else "none"
    role = "none" if role == "batch" and not roles["b"] else role
    outer = tuple(rest[: draw(st.integers(1, len(rest)))]) if role == "depth" else ()
    batch_axes = (rest[0],) if role == "batch" else ()
    even = draw(st.booleans())
    sizes = {}
    for d, parts in ((roles["m"][0], q * mesh.axes_size(outer)), (roles["k"][0], q), (roles["n"][0], q)):
        sizes[d] = parts * draw(st.integers(0, 2)) if even else draw(st.sampled_from([0, 1, 2, 3, 5]))
    for d in roles["m"][1:] + roles["n"][1:] + roles["k"][1:] + roles["b"]:
        sizes[d] = draw(st.sampled_from([0, 1, 2, 3]))
    la = {roles["m"][0]: (*outer, row), roles["k"][0]: (col,)}
    lb = {roles["k"][0]: (row,), roles["n"][0]: (col,)}
    if batch_axes:
        la[roles["b"][0]] = lb[roles["b"][0]] = batch_axes
    da = tuple(draw(st.permutations(roles["b"] + roles["m"] + roles["k"])))
    db = tuple(draw(st.permutations(roles["b"] + roles["k"] + roles["n"])))
    out = tuple(draw(st.permutations(roles["b"] + roles["m"] + roles["n"])))
    dtype = draw(st.sampled_from(["float64", "complex128", "int64", "float32"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = sa.asarray(_values(rng, tuple(sizes[d] for d in da), dtype), dims=da, mesh=mesh, layout=la)
    b = sa.asarray(_values(rng, tuple(sizes[d] for d in db), dtype), dims=db, mesh=mesh, layout=lb)
    split = ((roles["m"][0], q * mesh.axes_size(outer)), (roles["k"][0], q), (roles["n"][0], q))
    divisible = all(sizes[d] % parts == 0 for d, parts in split)
    depth = bool(outer) and mesh.axis_size(outer[-1]) <= q
    return mesh, row, col, outer, a, b, out, draw(st.booleans()), divisible, depth, rng


def _summa_traffic(log, row, col) -> dict:
    ops: dict = {}
    for r in log.records:
        if r.group_size > 1 and r.elements:
            ops[(r.op, r.axes)] = ops.get((r.op, r.axes), 0) + r.elements
    return ops


@fuzz(80, ENV)
@given(summa_cases())
def test_fuzz_summa_and_tesseract(case):
    """SUMMA/Tesseract: selection, values, layouts, forward and backward traffic by the formulas, gradients."""
    mesh, row, col, outer, a, b, out, swap, divisible, depth, rng = case
    ops = (b, a) if swap else (a, b)
    eq = ", ".join(" ".join(o.dims) for o in ops) + " -> " + " ".join(out)
    plan = sa.matmul.select("auto", list(ops), out)
    want = ("tesseract" if depth else "summa") if divisible else None
    assert (plan.name if plan else None) == want, (eq, a.layout, b.layout, a.sizes, b.sizes)
    for algorithm, fits in (("summa", divisible), ("tesseract", divisible and depth)):
        if fits:
            assert sa.matmul.select(algorithm, list(ops), out).name == algorithm
        else:
            with pytest.raises(sa.LayoutError):
                sa.einsum(eq, *ops, algorithm=algorithm)

    with sa.comm_log() as log:
        y = _quiet(lambda: sa.einsum(eq, *ops))
    ref = np.einsum(_np_equation([o.dims for o in ops], out), *[o.numpy() for o in ops])
    _close(y.numpy(), ref, a.dtype.name == "float32")
    if plan is None:  # the allreduce algorithm on sizes that do not divide: no collective moves a whole operand
        cap = 2 * max(_block(a), _block(b), _block(y)) + 8
        assert all(_received(r) <= cap for r in log.records), (cap, log.records)
        return
    q = mesh.axis_size(row)
    assert not y.pending and y.layout == {
        **{d: ax for d, ax in a.layout.items() if d in out},
        **{d: ax for d, ax in b.layout.items() if d in out},
    }
    ba, bb = _block(a), _block(b)
    grid = q > 1
    # forward: q broadcasts of A's block along the row group (over col), q of B's along the column group (over row)
    assert _summa_traffic(log, row, col) == {
        k: v for k, v in {("broadcast", (col,)): q * ba, ("broadcast", (row,)): q * bb}.items() if v and grid
    }
    if a.dtype.kind not in "fc" or a.dtype.name == "float32":
        return
    r = sa.asarray(_values(rng, y.shape, "complex128"), dims=y.dims, mesh=mesh)
    complex_ = a.dtype.kind == "c"
    parts = {"a": a, "b": b}
    if complex_:
        parts = {k: sa.asarray(np.real(v.numpy()), dims=v.dims, mesh=mesh, layout=v.layout) for k, v in parts.items()}
        parts.update(
            {
                k + "i": sa.asarray(np.imag(v.numpy()), dims=v.dims, mesh=mesh, layout=v.layout)
                for k, v in (("a", a), ("b", b))
            }
        )

    def loss(p):
        x, w = (p["a"] + 1j * p["ai"], p["b"] + 1j * p["bi"]) if complex_ else (p["a"], p["b"])
        y = sa.einsum(eq, *((w, x) if swap else (x, w)))
        return sa.real(y * r).sum() if complex_ else (y * sa.real(r)).sum()

    with sa.comm_log() as log:
        g = _quiet(lambda: sa.grad(loss)(parts))
    # L = Re Σ y·r: dA = Re(r·Bᵀ), dA_imag = -Im(r·Bᵀ) (JAX's convention), and the mirror for B
    R = r.numpy() if complex_ else np.real(r.numpy())
    A, B = a.numpy(), b.numpy()
    da = np.einsum(_np_equation([out, b.dims], a.dims), R, B)
    db = np.einsum(_np_equation([a.dims, out], b.dims), A, R)
    for name, x, want in (("a", a, da), ("b", b, db)):
        assert g[name].layout == x.layout and not g[name].pending and g[name].dtype == np.float64
        np.testing.assert_allclose(g[name].numpy(), np.real(want), atol=1e-9)
        if complex_:
            np.testing.assert_allclose(g[name + "i"].numpy(), -np.imag(want), atol=1e-9)
    if complex_ or not grid:
        return
    # backward: dA broadcasts B and reduces A's blocks over col, dB broadcasts A and reduces B's over row, then
    # allreduces dB over the depth (and data) axes; the loss's own sum and cotangent moves are allreduces/other
    traffic = _summa_traffic(log, row, col)
    layers = tuple(x for x in mesh.axis_names if x in outer and mesh.axis_size(x) > 1)
    expected = {
        ("broadcast", (col,)): 2 * q * ba,
        ("broadcast", (row,)): 2 * q * bb,
        ("reduce", (col,)): q * ba,
        ("reduce", (row,)): q * bb,
    }
    expected = {k: v for k, v in expected.items() if v}
    for k, v in expected.items():
        assert traffic.pop(k, 0) == v, (k, v, log.records)
    if layers and ba and bb:  # (an empty A gives a dB of zeros: nothing to sum)
        assert traffic.pop(("allreduce", layers)) == bb
    assert all(k[0] != "broadcast" and k[0] != "reduce" for k in traffic), traffic


# ================================================================================== named einsums


def _pending(mesh, values: np.ndarray, dims, layout, rng):
    """An array of ``values`` whose sum is pending over an axis its layout leaves free (``values`` itself when every
    axis is used, or the dtype is not a float or complex one): a contraction over a helper dim split there."""
    free = [a for a in mesh.axis_names if all(a not in ax for ax in layout.values())]
    if not free or values.dtype.kind not in "fc" or values.dtype.name == "float16":
        return sa.asarray(values, dims=dims, mesh=mesh, layout=layout)
    h = 3 * mesh.axis_size(free[0]) - 1  # (uneven over the axis)
    w = rng.integers(0, 2, h).astype(values.dtype)
    w[0] = 1 - w[1:].sum()  # the helper weights sum to 1: the contraction gives ``values`` back
    u = sa.asarray(
        values[..., None] * np.ones(h, values.dtype), dims=(*dims, "_h"), mesh=mesh, layout={**layout, "_h": free[0]}
    )
    x = sa.einsum(u, sa.asarray(w, dims=("_h",), mesh=mesh, layout={"_h": free[0]}), out=tuple(dims))
    assert x.pending
    return x


@st.composite
def einsum_cases(draw):
    mesh = draw(cached_meshes())
    names = ("a", "b", "c", "d")
    sizes = {d: draw(st.sampled_from([0, 1, 2, 3, 5])) for d in names}
    n = draw(st.integers(1, 3))
    terms = [tuple(draw(st.permutations(names))[: draw(st.integers(1, 3))]) for _ in range(n)]
    used = sorted({d for t in terms for d in t})
    out = tuple(d for d in draw(st.permutations(used)) if draw(st.booleans()))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ops, values = [], []
    for t in terms:
        dtype = draw(st.sampled_from(DTYPES)) if draw(st.booleans()) else "float64"
        v = _values(rng, tuple(sizes[d] for d in t), dtype)
        layout = draw(layouts(mesh, t))
        ops.append(
            _pending(mesh, v, t, layout, rng)
            if draw(st.booleans())
            else sa.asarray(v, dims=t, mesh=mesh, layout=layout)
        )
        values.append(v)
    return mesh, terms, out, ops, values, draw(st.sampled_from(["auto", "allreduce"]))


@fuzz(100, ENV)
@given(einsum_cases())
def test_fuzz_named_einsum(case):
    """Any layouts, pending operands, uneven/empty blocks and mixed dtypes: ``np.einsum``'s value and dtype, by
    ``.numpy()`` (which resolves a pending sum) and through a second einsum that takes the result pending."""
    mesh, terms, out, ops, values, algorithm = case
    eq = ", ".join(" ".join(t) for t in terms) + " -> " + " ".join(out)
    ref = _reference(_np_equation(terms, out), values)
    scale = _reference(_np_equation(terms, out), _magnitude(values))
    low = any(str(v.dtype) in LOW for v in values)
    with sa.comm_log() as log:
        y = _quiet(lambda: sa.einsum(eq, *ops, algorithm=algorithm))
    assert y.dims == out
    # no collective receives more than twice the largest block of the operands and the result (pending operands
    # included: the layout is the cheapest whether an operand is pending or not, so the smaller operand moves)
    # (plus a few entries per device: an allgather's record of uneven blocks counts every shard at the largest's size,
    # a dim of size 1 split 8 ways, say)
    cap = 2 * max(_block(x) for x in (*ops, y)) + 8 * mesh.size
    assert all(_received(r) <= cap for r in log.records), (cap, [(o.layout, o.pending) for o in ops], log.records)
    _close(y.numpy(), ref, low, scale)
    if not out or ref.dtype == bool:
        return
    # the (possibly pending) result into another einsum: a sum over its first dim against ones of its dtype
    ones = sa.asarray(np.ones(ref.shape[0], ref.dtype), dims=out[:1], mesh=mesh)
    z = _quiet(lambda: sa.einsum(y, ones, out=out[1:]))
    _close(
        z.numpy(),
        _reference(_np_equation([out, out[:1]], out[1:]), [ref, np.ones(ref.shape[0], ref.dtype)]),
        low,
        scale.sum(axis=0),
    )


# ================================================================================== positional products

NUMERIC = tuple(d for d in DTYPES if d != "bool")  # (the array API's products take numeric dtypes)

#: (name, shapes from the sizes n, k, m and a batch shape, the call, NumPy's)
PRODUCTS = (
    ("matmul", lambda n, k, m, b: [(*b, n, k), (k, m)], lambda x, y: xp.matmul(x, y), np.matmul),
    ("@ batch", lambda n, k, m, b: [(n, k), (*b, k, m)], lambda x, y: x @ y, np.matmul),
    ("matmul vec", lambda n, k, m, b: [(k,), (*b, k, m)], lambda x, y: xp.matmul(x, y), np.matmul),
    ("np.matmul", lambda n, k, m, b: [(*b, n, k), (k,)], lambda x, y: np.matmul(x, y), np.matmul),
    (
        "tensordot",
        lambda n, k, m, b: [(n, k, m), (k, m, *b)],
        lambda x, y: xp.tensordot(x, y, axes=2),
        lambda x, y: np.tensordot(x, y, axes=2),
    ),
    (
        "tensordot axes",
        lambda n, k, m, b: [(k, n), (m, k)],
        lambda x, y: xp.tensordot(x, y, axes=([0], [1])),
        lambda x, y: np.tensordot(x, y, axes=([0], [1])),
    ),
    ("vecdot", lambda n, k, m, b: [(*b, n, k), (n, k)], lambda x, y: xp.vecdot(x, y), np.vecdot),
    (
        "einsum trace",
        lambda n, k, m, b: [(k, k), (k, m)],
        lambda x, y: np.einsum("ii,ij->j", x, y),
        lambda x, y: np.einsum("ii,ij->j", x, y),
    ),
    (
        "einsum diagonal",
        lambda n, k, m, b: [(n, k, k), (n, k)],
        lambda x, y: np.einsum("ijj,ij->ij", x, y),
        lambda x, y: np.einsum("ijj,ij->ij", x, y),
    ),
    (
        "einsum ellipsis",
        lambda n, k, m, b: [(*b, n, k), (k, m)],
        lambda x, y: np.einsum("...ij,jk", x, y),
        lambda x, y: np.einsum("...ij,jk", x, y),
    ),
    (
        "einsum implicit",
        lambda n, k, m, b: [(n, k), (m, k)],
        lambda x, y: np.einsum("ij,kj", x, y),
        lambda x, y: np.einsum("ij,kj", x, y),
    ),
)


@st.composite
def product_cases(draw):
    mesh = draw(cached_meshes())
    name, shapes, fn, ref = draw(st.sampled_from(PRODUCTS))
    n, k, m = (draw(st.sampled_from([0, 1, 2, 3, 5])) for _ in range(3))
    batch = tuple(draw(st.sampled_from([1, 2, 3])) for _ in range(draw(st.integers(0, 2))))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values, arrays = [], []
    for shape in shapes(n, k, m, batch):
        dtype = draw(st.sampled_from(NUMERIC)) if draw(st.booleans()) else "float64"
        v = _values(rng, shape, dtype)
        dims = tuple(f"dim{i}" for i in range(len(shape)))
        with sa.default_mesh(mesh):
            arrays.append(sa.relayout(xp.asarray(v), draw(layouts(mesh, dims))))
        values.append(v)
    return name, fn, ref, arrays, values


@fuzz(80, ENV)
@given(product_cases())
def test_fuzz_positional_products(case):
    """The positional products in any layout: NumPy's value, shape and dtype (int8 overflowing as NumPy's).

    With a bfloat16 operand the NumPy functions give NumPy's own dtype (``np.matmul``'s loop computes bfloat16 in
    float32) and the array API's the promoted one (bfloat16; NumPy's einsum, which has no bfloat16 loop, too)."""
    name, fn, ref, arrays, values = case
    want = None
    if name.startswith("np."):
        want = np.asarray(ref(*values))
    elif any(v.dtype == ml_dtypes.bfloat16 for v in values):
        wide = np.complex128 if any(v.dtype.kind == "c" for v in values) else np.float64
        want = np.asarray(ref(*[v.astype(wide) for v in values])).astype(promote(*[v.dtype for v in values]))
    else:
        want = np.asarray(ref(*values))
    got = _quiet(lambda: fn(*arrays))
    scale = np.abs(np.asarray(ref(*_magnitude(values))))
    _close(np.asarray(got.numpy()), want, any(str(v.dtype) in LOW for v in values), scale)


# ================================================================================== gradients


@st.composite
def gradient_cases(draw):
    mesh = draw(cached_meshes())
    names = ("a", "b", "c")
    sizes = {d: draw(st.sampled_from([1, 2, 3, 5])) for d in names}
    terms = [tuple(draw(st.permutations(names))[: draw(st.integers(1, 3))]) for _ in range(draw(st.integers(2, 3)))]
    used = sorted({d for t in terms for d in t})
    out = tuple(d for d in draw(st.permutations(used)) if draw(st.booleans()))
    lays = [draw(layouts(mesh, t)) for t in terms]
    complex_ = [draw(st.booleans()) for _ in terms]
    return (
        mesh,
        terms,
        out,
        sizes,
        lays,
        complex_,
        draw(st.sampled_from(["auto", "allreduce"])),
        draw(st.integers(0, 2**32 - 1)),
    )


@fuzz(40, ENV)
@given(gradient_cases())
def test_fuzz_einsum_gradients(case):
    """``sa.grad`` of ``Re Σ einsum(...)·r`` with complex operands built from real parameters (JAX's convention),
    against float64 central differences: each gradient in its parameter's layout, nothing pending."""
    mesh, terms, out, sizes, lays, complex_, algorithm, seed = case
    rng = np.random.default_rng(seed)
    eq = ", ".join(" ".join(t) for t in terms) + " -> " + " ".join(out)
    values = {}
    for i, (t, lay) in enumerate(zip(terms, lays)):
        values[f"re{i}"] = (rng.standard_normal(tuple(sizes[d] for d in t)), t, lay)
        if complex_[i]:
            values[f"im{i}"] = (rng.standard_normal(tuple(sizes[d] for d in t)), t, lay)
    r = rng.standard_normal(tuple(sizes[d] for d in out)) + 1j * rng.standard_normal(tuple(sizes[d] for d in out))
    r = sa.asarray(r, dims=out, mesh=mesh)

    def make(vals):
        return {k: sa.asarray(v, dims=t, mesh=mesh, layout=lay) for k, (v, t, lay) in vals.items()}

    def loss(p):
        ops = [p[f"re{i}"] + 1j * p[f"im{i}"] if complex_[i] else p[f"re{i}"] for i in range(len(terms))]
        return sa.real(sa.einsum(eq, *ops, algorithm=algorithm) * r).sum()

    params = make(values)
    g = _quiet(lambda: sa.grad(loss)(params))
    for k, p in params.items():
        assert g[k].layout == p.layout and g[k].dims == p.dims and not g[k].pending and g[k].dtype == np.float64
    for _ in range(2):
        v = {k: rng.standard_normal(x.shape) for k, (x, _, _) in values.items()}

        def slope(t, v=v):  # (L(t) - L(-t)) / 2t along v
            up = float(loss(make({k: (x + t * v[k], d, lay) for k, (x, d, lay) in values.items()})))
            down = float(loss(make({k: (x - t * v[k], d, lay) for k, (x, d, lay) in values.items()})))
            return (up - down) / (2 * t)

        # L is a polynomial of degree <= 3 along v (multilinear in <= 3 operands): slope(t) = L'(0) + c t², so
        # Richardson's (4 slope(1) - slope(2)) / 3 is L'(0) up to rounding, with no step-size error
        analytic = sum(float(np.sum(g[k].numpy() * v[k])) for k in values)
        np.testing.assert_allclose(analytic, (4 * slope(1) - slope(2)) / 3, rtol=1e-9, atol=1e-8)


# ================================================================================== regressions


def test_a_non_string_algorithm_is_a_dtype_error():
    """``algorithm=np.array(["summa"])`` raised a bare ``TypeError: unhashable type`` (the array passed the
    ``in ALGORITHMS`` check elementwise); a tuple was called an unknown algorithm (a ``LayoutError``)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"m": 4, "k": 4}, layout={"m": "row", "k": "col"})
    w = sa.ones(mesh, {"k": 4, "n": 4}, layout={"k": "row", "n": "col"})
    for algorithm in (np.array(["summa"]), ("summa",), None):
        with pytest.raises(sa.DTypeError, match="algorithm must be a string"):
            sa.einsum(x, w, out=("m", "n"), algorithm=algorithm)


@pytest.mark.parametrize(
    "equation,what",
    [("m k, k n -> -> m", "a second '->'"), ("m k, k n -> m -> n", "a second '->'"), ("m k, k n -> m, n", "a ','")],
)
def test_an_output_with_a_second_arrow_or_a_comma_is_named(equation, what):
    """A second ``->`` or a ``,`` in the output was taken as part of a dim name: the error blamed a dim ``'->'`` or
    ``'m,'`` and suggested renaming it (to ``''`` for ``'->'``)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    x, w = sa.ones(mesh, {"m": 4, "k": 4}), sa.ones(mesh, {"k": 4, "n": 4})
    with pytest.raises(sa.DimensionError, match=f"has {what}.* in its output"):
        sa.einsum(equation, x, w)


# ================================================================================== the meta backend

_META: dict = {}


def _meta_mesh(shape: dict) -> sa.Mesh:
    """The shape-only (``backend="meta"``) mesh of ``shape``, built once."""
    key = tuple(shape.items())
    if key not in _META:
        _META[key] = sa.Mesh(dict(shape), backend="meta")
    return _META[key]


@st.composite
def meta_cases(draw):
    mesh = _meta_mesh(
        draw(
            st.sampled_from(
                [
                    {"d": 1},
                    {"row": 2, "col": 2},
                    {"all": 4},
                    {"x": 2, "y": 2, "z": 2},
                    {"p": 3, "q": 2},
                    {"dep": 2, "row": 2, "col": 2},
                ]
            )
        )
    )
    names = ("a", "b", "c", "d")
    sizes = {d: draw(st.sampled_from([0, 1, 2, 3, 5, 8])) for d in names}
    terms = [tuple(draw(st.permutations(names))[: draw(st.integers(1, 3))]) for _ in range(draw(st.integers(1, 3)))]
    used = sorted({d for t in terms for d in t})
    out = tuple(d for d in draw(st.permutations(used)) if draw(st.booleans()))
    # (bfloat16 with float16 is left out: the meta backend's einsum promotes with np.result_type, which has no
    # common type for them; reported to the backend's owner)
    pool = [d for d in DTYPES if d != draw(st.sampled_from(["float16", "bfloat16"]))]
    ops = []
    for t in terms:
        dtype = draw(st.sampled_from(pool))
        dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
        ops.append(sa.zeros(mesh, {d: sizes[d] for d in t}, dtype=dtype, layout=draw(layouts(mesh, t))))
    return mesh, terms, out, ops, draw(st.sampled_from(["auto", "allreduce", "summa"]))


@fuzz(60, ENV)
@given(meta_cases())
def test_fuzz_meta_einsum(case):
    """On the meta backend (shapes only, what the planner and the benchmarks price) an einsum has the dtype the
    data backends give (``sa``'s promotion) and every device's shard the shape of its block of the result; a forced
    SUMMA that does not fit is the same ``LayoutError``."""
    mesh, terms, out, ops, algorithm = case
    eq = ", ".join(" ".join(t) for t in terms) + " -> " + " ".join(out)
    try:
        y = sa.einsum(eq, *ops, algorithm=algorithm)
    except sa.LayoutError:
        assert algorithm == "summa"
        return
    assert y.dtype == promote(*[o.dtype for o in ops]) and y.dims == out
    for shard, bounds in zip(y.shards, block_bounds(mesh, y.spec)):
        assert tuple(shard.shape) == tuple(hi - lo for lo, hi in bounds) and shard.dtype == y.dtype
    z = y.resolve() if y.pending else y
    assert not z.pending and tuple(z.shards[0].shape) == tuple(hi - lo for lo, hi in block_bounds(mesh, z.spec)[0])


@pytest.mark.parametrize("pending_first", [True, False])
def test_a_pending_operand_does_not_make_the_einsum_gather_the_larger_one(pending_first):
    """With a pending operand the computation layout was ``merged_axes`` (the first operand decides), not the
    cheapest: ``x{m: b}`` pending over ``a`` times ``w{n: b}`` allgathered the whole of a large ``w`` (2000 entries
    per device) where the same product of a resolved ``x`` gathers the small ``x`` (8)."""
    mesh = cached_mesh({"a": 2, "b": 2})
    u = sa.asarray(np.arange(96.0).reshape(4, 4, 6), dims=("m", "k", "h"), mesh=mesh, layout={"m": "b", "h": "a"})
    x = sa.einsum(u, sa.ones(mesh, {"h": 6}, layout={"h": "a"}), out=("m", "k"))
    assert x.pending == ("a",)
    w = sa.asarray(np.arange(4000.0).reshape(4, 1000), dims=("k", "n"), mesh=mesh, layout={"n": "b"})
    with sa.comm_log() as log:
        y = sa.einsum(x, w, out=("m", "n")) if pending_first else sa.einsum(w, x, out=("m", "n"))
    np.testing.assert_allclose(y.numpy(), x.numpy() @ w.numpy())
    assert sum(r.elements for r in log.records) <= 8, log.records


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("ij,j->i", [(2, 3), (1,)]),
        ("ij,j->ij", [(2, 3), (1,)]),
        ("ij,ij->ij", [(1, 3), (2, 1)]),
        ("ij,jk->ik", [(2, 1), (3, 4)]),
    ],
)
def test_np_einsum_broadcasts_a_size_one_letter(eq, shapes):
    """NumPy's einsum broadcasts a letter's size-1 axis against a longer one elsewhere; it was a DimensionError."""
    vals = [np.arange(math.prod(s), dtype=float).reshape(s) + 1 for s in shapes]
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        got = np.einsum(eq, *[xp.asarray(v) for v in vals])
    np.testing.assert_array_equal(np.asarray(got), np.einsum(eq, *vals))


def test_meta_einsum_of_bfloat16_and_float16_promotes_as_numpy_shards():
    """On ``meta`` an einsum of bfloat16 with float16 raised NumPy's ``DTypePromotionError``; float32 as on NumPy
    shards (``sa.dtypes.promote``)."""
    for backend in ("meta", "numpy"):
        mesh = sa.Mesh({"a": 2, "b": 2}, backend=backend)
        x = sa.zeros(mesh, {"i": 4, "j": 3}, dtype="bfloat16", layout={"i": "a"})
        y = sa.zeros(mesh, {"j": 3, "k": 2}, dtype="float16", layout={"k": "b"})
        assert sa.einsum(x, y, out=("i", "k")).dtype == np.float32
