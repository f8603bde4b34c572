"""Round 14: ``accumulate`` of the associative ufuncs beyond add/multiply (``ops/reduction/scan.py``).

``np.maximum/minimum/fmax/fmin/logical_and/logical_or/logical_xor/bitwise_and/bitwise_or/bitwise_xor.accumulate``
raised NumPy's TypeError ("no running maximum"). Now each is the split scan: a local scan per block, one allgather
of each block's last running value over the dim's mesh axes (one value per device per line), a local combine. The
fuzzers hold it against NumPy on the gathered value (meshes 1, 2x2, 4, 2x2x2, 3x2; uneven and empty blocks; NaN,
inf and ties; bool, ints, float16, complex; positional and named; ``dtype=``, ``out=``, any ``axis``), check the
comm log (one allgather of at most one value per line per device, none along an unsplit dim), the gradients
against float64 central differences, the documented tie rule (the last position holding the running value), and
the meta backend's shapes and log.

``FUZZ14_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from gradcheck import check_grad
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.dtypes import BFLOAT16
from shardarray.layout import block_bounds
from shardarray.ops.reduction.scan import cumulative_extreme

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ14_EXAMPLES"
EXTREMES = ("maximum", "minimum", "fmax", "fmin")
UFUNCS = EXTREMES + ("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor")
DTYPES = ("float64", "float32", "float16", "int8", "uint16", "int64", "bool", "complex64")
SIDES = (0, 1, 2, 3, 5, 7)


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Small integers (many ties), floats with NaN and +-inf sprinkled in, complex with NaN parts."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    v = rng.integers(-3, 4, shape).astype(np.float64)
    kind = np.dtype(dtype).kind
    if kind in "fc":
        special = rng.random(shape)
        v = np.where(special < 0.08, np.nan, np.where(special > 0.94, np.inf * np.sign(v + 0.5), v))
    if kind == "c":
        im = rng.integers(-3, 4, shape).astype(np.float64)
        im = np.where(rng.random(shape) < 0.05, np.nan, im)
        return (v + 1j * im).astype(dtype) if v.size else np.zeros(shape, dtype)
    if kind == "u":
        v = np.abs(v)
    return v.astype(dtype)


def _placed(a: np.ndarray, mesh, lay: dict, positional: bool):
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout={dims[int(d[3:])]: v for d, v in lay.items()})
    return as_kind(x, xp.Array) if positional else x


def _line_count(mesh, x, k: int) -> int:
    """The most lines (entries of the other dims) any device's block of ``x`` holds along axis ``k``."""
    return max(
        (math.prod(hi - lo for j, (lo, hi) in enumerate(b) if j != k) for b in block_bounds(mesh, x.spec)), default=0
    )


def _check_log(mesh, x, k: int, log) -> None:
    """One allgather of at most one value per line per device along a split axis of size > 1, else nothing."""
    axes = x.spec.axes[k]
    split = math.prod(mesh.axis_size(a) for a in axes) > 1 and x.shape[k] > 1
    ops = [r.op for r in log.records]
    assert ops == (["allgather"] if split else []), ops
    if split:
        rec = log.records[0]
        assert rec.axes == tuple(axes) and rec.elements <= max(_line_count(mesh, x, k), 1), (rec, x.spec)


@st.composite
def _case(draw):
    mesh = draw(meshes())
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(SIDES)) for _ in range(ndim))
    dims = tuple(f"dim{k}" for k in range(ndim))
    lay = draw(layouts(mesh, dims))
    dtype = draw(st.sampled_from(DTYPES))
    name = draw(st.sampled_from(UFUNCS))
    axis = draw(st.integers(-ndim, ndim - 1))
    return mesh, shape, lay, dtype, name, axis, draw(st.integers(0, 2**16)), draw(st.booleans())


@given(_case())
@fuzz(60, ENV)
def test_fuzz_accumulate_matches_numpy_and_gathers_one_value_per_line(case):
    """Values, dtype and layout as NumPy's on the gathered result; one allgather of one value per line."""
    mesh, shape, lay, dtype, name, axis, seed, positional = case
    a = _values(np.random.default_rng(seed), shape, dtype)
    x = _placed(a, mesh, lay, positional)
    ufunc = getattr(np, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = ufunc.accumulate(a, axis=axis)
    except TypeError:  # (bitwise ufuncs of floats: NumPy has no loop; the library's is a typed TypeError)
        with pytest.raises(TypeError):
            ufunc.accumulate(x, axis=axis)
        return
    with sa.comm_log() as log:
        got = ufunc.accumulate(x, axis=axis)
    assert type(got) is type(x) and got.layout == x.layout and got.dtype == want.dtype, (got, want.dtype)
    np.testing.assert_array_equal(got.numpy(), want)
    _check_log(mesh, x, axis % a.ndim, log)


@given(_case())
@fuzz(30, ENV)
def test_fuzz_accumulate_dtype_and_out_as_numpy(case):
    """``dtype=`` (the operand cast to the loop first) and ``out=`` on positional arrays, NumPy's refusals typed."""
    mesh, shape, lay, dtype, name, axis, seed, _ = case
    a = _values(np.random.default_rng(seed), shape, dtype)
    a = np.where(np.isfinite(a), a, 1).astype(a.dtype) if a.dtype.kind in "fc" else a  # (finite casts)
    x = _placed(a, mesh, lay, True)
    ufunc = getattr(np, name)
    to = np.random.default_rng(seed).choice(["float32", "int64", "bool", "int16"])
    try:
        want = ufunc.accumulate(a, axis=axis, dtype=to)
    except TypeError:  # (logical_* in bool only, bitwise_* of floats)
        with pytest.raises(TypeError):
            ufunc.accumulate(x, axis=axis, dtype=to)
        return
    if a.dtype.kind == "c" and np.dtype(to).kind != "c":  # (NumPy drops the imaginary parts; the library refuses)
        with pytest.raises(sa.DTypeError, match="imaginary"):
            ufunc.accumulate(x, axis=axis, dtype=to)
        return
    got = ufunc.accumulate(x, axis=axis, dtype=to)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)
    out = xp.asarray(np.zeros(want.shape, np.float64), device=mesh)
    assert ufunc.accumulate(x, axis=axis, dtype=to, out=out) is out
    np.testing.assert_array_equal(out.numpy(), ufunc.accumulate(a, axis=axis, dtype=to, out=np.zeros(want.shape)))


def test_accumulate_keeps_numpys_refusals():
    """A 0-d operand, ``where=``/``initial=``/axis tuples, and a 1-D ``axis=None``: as NumPy."""
    x = xp.asarray([3.0, 1.0, 4.0, 1.0, 5.0], device=_mesh({"row": 2, "col": 2}))
    np.testing.assert_array_equal(np.maximum.accumulate(x, axis=None).numpy(), [3, 3, 4, 4, 5])
    with pytest.raises(TypeError):
        np.maximum.accumulate(xp.asarray(2.0, device=x.mesh))
    with pytest.raises((TypeError, ValueError)):
        np.maximum.accumulate(x, axis=(0,))
    with pytest.raises(sa.OutOfBoundsError):
        np.minimum.accumulate(x, axis=1)
    with pytest.raises(TypeError):
        np.logical_or.accumulate(x, dtype=np.int64)
    named = sa.asarray(np.ones((2, 3)), dims=("a", "b"), mesh=x.mesh)
    with pytest.raises(TypeError):
        np.logical_xor.accumulate(named, axis=1, dtype=np.float64)
    with pytest.raises(TypeError):
        np.bitwise_or.accumulate(named, axis=1)


@pytest.mark.parametrize("name", ["maximum", "fmin", "logical_and", "logical_xor"])
def test_bfloat16_accumulate_as_float32_rounded(name):
    """bfloat16 (which NumPy's loops do not all take): the float32 result, exact for extremes, in bfloat16."""
    mesh = _mesh({"p": 3, "q": 2})
    a = np.array([[1.5, np.nan, -2.0, 0.0, 3.0, 3.0, -np.inf], [0.0, 2.5, 2.5, np.inf, -1.0, 0.0, 1.0]])
    x = sa.asarray(a, dims=("b", "t"), mesh=mesh, layout={"t": ("p", "q")}).astype("bfloat16")
    got = getattr(np, name).accumulate(x, axis=1)
    want = getattr(np, name).accumulate(a.astype(np.float32), axis=1)
    assert got.dtype == (np.bool_ if name.startswith("logical") else BFLOAT16)
    np.testing.assert_array_equal(got.numpy().astype(want.dtype), want)


# ------------------------------------------------------------------------------------------ gradients

GRAD_MESHES = ({"d": 1}, {"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}, {"p": 3, "q": 2})


@pytest.mark.parametrize("shape", GRAD_MESHES, ids=lambda s: "x".join(map(str, s.values())))
@pytest.mark.parametrize("op", EXTREMES)
def test_running_extreme_gradient_matches_finite_differences(shape, op):
    """Distinct values (no ties): float64 central differences, named along a split dim of uneven blocks, and
    positional along the other axis; complex values through their real and imaginary parts."""
    mesh = _mesh(shape)
    rng = np.random.default_rng(3)
    a = rng.permutation(35).reshape(5, 7) / 7.0
    axes = mesh.axis_names
    lay = {"t": axes} if len(axes) < 3 else {"t": axes[1:], "b": axes[:1]}
    x = sa.asarray(a, dims=("b", "t"), mesh=mesh, layout=lay)
    w = sa.asarray(rng.standard_normal((5, 7)), dims=("b", "t"), mesh=mesh)
    ufunc = getattr(np, op)
    check_grad(lambda p: (ufunc.accumulate(p, axis=1) * w).sum(), x)
    px, pw = as_kind(x, xp.Array), as_kind(w, xp.Array)
    check_grad(lambda p: xp.sum(ufunc.accumulate(p, axis=-2) * pw), px)
    im = sa.asarray(rng.permutation(35).reshape(5, 7) / 5.0, dims=("b", "t"), mesh=mesh, layout=lay)
    cw = sa.asarray(rng.standard_normal((5, 7)) + 1j * rng.standard_normal((5, 7)), dims=("b", "t"), mesh=mesh)
    check_grad(lambda p: sa.real(cumulative_extreme(p[0] + 1j * p[1], "t", op) * cw).sum(), (x, im))


@pytest.mark.parametrize("shape", GRAD_MESHES, ids=lambda s: "x".join(map(str, s.values())))
def test_running_extreme_gradient_of_ties_goes_to_the_last_holder(shape):
    """``y[i]``'s cotangent goes to the last ``j <= i`` with ``x[j] == y[i]`` (a tie across blocks too), on every
    layout; a backward pass moves at most two values per line per device."""
    mesh = _mesh(shape)
    a = np.array([1.0, 1.0, 1.0, 0.0, 2.0, 2.0, -1.0, 2.0, 3.0])
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": mesh.axis_names})
    w = np.arange(1.0, 10.0)
    ws = sa.asarray(w, dims=("t",), mesh=mesh)
    with sa.comm_log() as log:
        g = sa.grad(lambda p: (np.maximum.accumulate(p) * ws).sum())(x)
    # holders: y0..y2 -> 0, 1, 2; y3 -> 2; y4 -> 4; y5, y6 -> 5; y7 -> 7; y8 -> 8
    np.testing.assert_array_equal(g.numpy(), [1, 2, 3 + 4, 0, 5, 6 + 7, 0, 8, 9])
    assert {r.op for r in log.records} <= {"allgather", "allreduce"}
    assert all(r.elements <= 2 for r in log.records if r.op == "allgather"), log.records
    gm = sa.grad(lambda p: (np.fmin.accumulate(-p) * ws).sum())(x)
    np.testing.assert_array_equal(gm.numpy(), -g.numpy())


def _holder_gradient(a: np.ndarray, w: np.ndarray, op: str, axis: int) -> np.ndarray:
    """The documented rule in NumPy: ``w[i]`` to the last ``j <= i`` with ``a[j] == y[i]`` (NaN equal to NaN)."""
    y = getattr(np, op).accumulate(a, axis=axis)
    am, ym, wm = (np.moveaxis(v, axis, -1) for v in (a, y, w))
    g = np.zeros_like(am)
    for line in np.ndindex(am.shape[:-1]):
        for i in range(am.shape[-1]):
            same = (am[line][: i + 1] == ym[line][i]) | (np.isnan(am[line][: i + 1]) & np.isnan(ym[line][i]))
            g[line][np.flatnonzero(same)[-1]] += wm[line][i]
    return np.moveaxis(g, -1, axis)


@given(_case())
@fuzz(30, ENV)
def test_fuzz_running_extreme_gradient_follows_the_holder_rule(case):
    """Small integers (many ties, across blocks too), NaN and inf, uneven and empty blocks, any layout: the
    gradient is the holder rule's, exactly, and in the parameter's layout."""
    mesh, shape, lay, _, name, axis, seed, positional = case
    op = EXTREMES[UFUNCS.index(name) % 4]
    rng = np.random.default_rng(seed)
    a, w = _values(rng, shape, "float64"), rng.integers(-3, 4, shape).astype(np.float64)
    x, ws = _placed(a, mesh, lay, positional), _placed(w, mesh, {}, positional)
    g = sa.grad(lambda p: (getattr(np, op).accumulate(p, axis=axis) * ws).sum())(x)
    assert type(g) is type(x) and g.layout == x.layout
    np.testing.assert_array_equal(g.numpy(), _holder_gradient(a, w, op, axis % a.ndim))


def test_logical_and_bitwise_accumulate_are_not_differentiable():
    """Bool and integer results: usable inside a loss (no gradient through them), never a silent float."""
    mesh = _mesh({"row": 2, "col": 2})
    x = sa.asarray(np.array([0.5, -1.0, 0.0, 2.0, 3.0]), dims=("t",), mesh=mesh, layout={"t": "col"})
    g = sa.grad(lambda p: sa.where(np.logical_or.accumulate(p < 0), p, 2 * p).sum())(x)
    np.testing.assert_array_equal(g.numpy(), [2, 1, 1, 1, 1])


# ------------------------------------------------------------------------------------------ meta backend


@pytest.mark.numpy_only(reason="compares the meta backend with NumPy shards")
@pytest.mark.parametrize("shape", GRAD_MESHES[1:], ids=lambda s: "x".join(map(str, s.values())))
@pytest.mark.parametrize("name", ["maximum", "fmin", "logical_xor", "bitwise_or"])
def test_accumulate_on_meta_matches_numpy_shards(shape, name):
    """Block shapes, dtype, layout and the comm log of the meta backend are NumPy shards' (uneven blocks)."""

    def traced(backend):
        mesh = sa.Mesh(dict(shape), backend=backend)
        a = (np.arange(5 * 7).reshape(5, 7) % 4).astype(np.int32)
        axes = mesh.axis_names
        x = sa.asarray(a, dims=("b", "t"), mesh=mesh, layout={"t": axes[1:], "b": axes[:1]})
        with sa.comm_log() as log:
            y = getattr(np, name).accumulate(x, axis=1)
        blocks = tuple(None if s is None else (tuple(s.shape), np.dtype(s.dtype)) for s in y.shards)
        return (y.dims, y.shape, y.dtype, y.layout, blocks), [
            (r.op, r.axes, r.group_size, r.elements, r.bytes, r.dtype) for r in log.records
        ]

    assert traced("meta") == traced("numpy")
