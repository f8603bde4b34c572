"""Round 15: the one scan skeleton (``ops/reduction/scan.py``), dtype leftovers, the reductions against NumPy.

``cumsum``/``cumprod`` and the other ufuncs' ``accumulate`` now run on one skeleton, ``block_scan`` (a local
scan, one allgather of each block's last value per line, a fold of the carries along the dim's order, a local
combine). Its carry folds only the nonempty blocks before a device's own: the old ``cumsum``/``cumprod`` plan
folded an empty block's identity in too, and a complex ``(1+0j) * (inf+0j)`` is ``inf+nanj``, so a complex
cumprod across an empty block gave NaN parts where NumPy gives ``inf``. The fuzzers hold the scans bit for bit
against NumPy up to the end of the second nonempty block (whose carry is NumPy's running value; later carries
are folds of block totals, another order than NumPy's), close elsewhere, with one allgather per line; they hold
the reductions (``sum/prod/mean/var/std/min/max/argmin/argmax/any/all`` and the nan-functions, axis tuples,
``keepdims``, ``dtype=``, ``ddof``, ``where=``) against NumPy on the gathered values, on meshes 1, 2x2, 4,
2x2x2, 3x2 with uneven and empty blocks.

``FUZZ15_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
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
from shardarray.dtypes import BFLOAT16
from shardarray.layout import block_bounds
from shardarray.ops.reduction.scan import cumulative_extreme

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ15_EXAMPLES"
SIDES = (0, 1, 2, 3, 5, 7)


def _placed(a: np.ndarray, mesh, lay: dict, positional: bool = True):
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout={dims[int(d[3:])]: v for d, v in lay.items()})
    return as_kind(x, xp.Array) if positional else x


# ------------------------------------------------------------------------------------------ scans


@pytest.mark.parametrize(
    ("shape", "layout"),
    [({"row": 2, "col": 2}, ("row", "col")), ({"p": 3, "q": 2}, ("p", "q")), ({"x": 2, "y": 2, "z": 2}, ("x", "z"))],
)
def test_complex_cumprod_carry_skips_empty_blocks(shape, layout):
    """A complex cumprod whose second nonempty block follows an empty one: NumPy's ``inf+nanj``, not NaN parts
    (the old plan multiplied the carry by the empty block's ``1+0j`` first)."""
    mesh = _mesh(shape)
    a = np.array([np.inf + 0j, 2 + 0j])
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": layout})
    bounds = [b[0] for b in block_bounds(mesh, x.spec)]
    assert any(lo == hi for lo, hi in bounds), bounds  # (an empty block among them)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.cumprod(a)
        got = sa.cumprod(x, "t").numpy()
        got_pos = np.cumprod(as_kind(x, xp.Array)).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_pos, want)


def _scan_values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Small values (exact sums), signed zeros, and inf/NaN in the float and complex ones."""
    v = rng.choice([-2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.0], shape)
    kind = np.dtype(dtype).kind
    if kind in "iub":
        v = np.abs(v) if kind in "ub" else v
        return np.round(v).astype(dtype)
    special = rng.random(shape)
    v = np.where(special < 0.05, np.inf, np.where(special > 0.97, np.nan, v))
    if kind == "c":
        return (v + 1j * rng.choice([-1.0, 0.0, 0.5, 1.0], shape)).astype(dtype)
    return v.astype(dtype)


@st.composite
def _scan_case(draw):
    mesh = draw(meshes())
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.sampled_from(SIDES)) for _ in range(ndim))
    lay = draw(layouts(mesh, tuple(f"dim{k}" for k in range(ndim))))
    dtype = draw(st.sampled_from(("float64", "float32", "float16", "complex128", "int64", "int8", "bool")))
    return (
        mesh,
        shape,
        lay,
        dtype,
        draw(st.sampled_from(("sum", "prod"))),
        draw(st.integers(0, ndim - 1)),
        draw(st.integers(0, 2**16)),
    )


@given(_scan_case())
@fuzz(40, ENV)
def test_fuzz_scan_bit_for_bit_through_the_second_nonempty_block(case):
    """NumPy's dtype; NumPy's bits (NaN, inf, signed zeros) up to the end of the second nonempty block along the
    axis, close after it; one allgather of at most one value per line along a split axis of size > 1."""
    mesh, shape, lay, dtype, op, axis, seed = case
    a = _scan_values(np.random.default_rng(seed), shape, dtype)
    x = _placed(a, mesh, lay)
    fn = xp.cumulative_sum if op == "sum" else xp.cumulative_prod
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = (np.cumsum if op == "sum" else np.cumprod)(a, axis=axis)
        with sa.comm_log() as log:
            got = fn(x, axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    g = got.numpy()
    starts = sorted({b[axis] for b in block_bounds(mesh, x.spec) if b[axis][1] > b[axis][0]})
    exact = starts[1][1] if len(starts) > 1 else a.shape[axis]
    exact = 0 if dtype == "float16" else exact  # (float16 accumulates in float32, rounded once: not NumPy's bits)
    head = (slice(None),) * axis + (slice(0, exact),)
    np.testing.assert_array_equal(g[head], want[head])  # (NaN equal to NaN; -0.0 vs 0.0 checked below)
    sign = [np.where(np.isnan(v[head].real), False, np.signbit(v[head].real)) for v in (g, want)]
    np.testing.assert_array_equal(*sign)
    if want.dtype.kind in "fc" and not (op == "prod" and want.dtype.kind == "c"):  # (complex infs: order-bound)
        tol = 1e-2 if want.dtype.itemsize <= 4 else 1e-12
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol, equal_nan=True)
    elif want.dtype.kind not in "fc":
        np.testing.assert_array_equal(g, want)
    split = math.prod(mesh.axis_size(n) for n in x.spec.axes[axis]) > 1 and a.shape[axis] > 1
    assert [r.op for r in log.records] == (["allgather"] if split else []), log.records


def test_reverse_scans_on_the_skeleton_exact_where_the_sums_are():
    """The cumsum VJP (a reverse scan) and the running maximum's VJP on one skeleton: exact where the sums are."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    a = np.arange(1.0, 12.0)
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": ("x", "y", "z")})
    w = sa.asarray(np.arange(11.0) % 4, dims=("t",), mesh=mesh)
    g = sa.grad(lambda v: sa.sum(sa.cumsum(v, "t") * w))(x)
    np.testing.assert_array_equal(g.numpy(), np.cumsum((np.arange(11.0) % 4)[::-1])[::-1])
    m = sa.grad(lambda v: sa.sum(cumulative_extreme(v, "t") * w))(x)
    np.testing.assert_array_equal(m.numpy(), np.arange(11.0) % 4)  # (increasing: each position holds its max)


# ------------------------------------------------------------------------------------------ linalg leftovers


@pytest.mark.parametrize("dtype", ["int64", "int8", "bool", "float16", "float32", "complex64"])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0)])
def test_pinv_of_empty_matrices_keeps_the_dtype(dtype, shape):
    """NumPy's ``pinv`` returns an empty result of ``x``'s own dtype before its dtype checks (int, bool and
    float16 too); before, the namespace's refused them as not LAPACK floats."""
    a = np.zeros(shape, dtype)
    x = xp.asarray(a, device=_mesh({"row": 2, "col": 2}))
    want = np.linalg.pinv(a)
    got = xp.linalg.pinv(x)
    assert got.dtype == want.dtype and got.shape == want.shape


def test_pinv_still_refuses_nonempty_integer_and_half_matrices():
    mesh = _mesh({"row": 2, "col": 2})
    with pytest.raises(sa.DTypeError, match="float64"):
        xp.linalg.pinv(xp.asarray(np.eye(2, dtype=np.int64), device=mesh))
    with pytest.raises(sa.DTypeError, match="16-bit"):
        xp.linalg.pinv(xp.asarray(np.eye(2, dtype=np.float16), device=mesh))


# ------------------------------------------------------------------------------------------ reductions


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "complex128"])
@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "nanmean"])
def test_sum_over_a_split_size_one_dim_starts_from_plus_zero(name, dtype):
    """NumPy's sum (and mean) starts from ``+0.0``: one entry ``-0.0`` gives ``0.0``. Over a split dim of size 1
    the sum was a squeeze alone and kept ``-0.0``, where the same dim unsplit gave ``0.0``."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    a = np.array([[-0.0, 1.5, -0.0]], dtype=np.complex128 if dtype == "complex128" else np.float64)
    for lay in ({"dim0": ("x", "y")}, {"dim0": ("z",), "dim1": ("x",)}, {}):
        x = _placed(a, mesh, lay)
        x = xp.astype(x, BFLOAT16 if dtype == "bfloat16" else getattr(np, dtype))
        got = getattr(np, name)(x, axis=0).numpy()
        want = getattr(np, name)(a.astype(np.float32 if dtype == "bfloat16" else dtype), axis=0)
        np.testing.assert_array_equal(np.signbit(got.real.astype(np.float64)), np.signbit(want.real), err_msg=str(lay))
        np.testing.assert_array_equal(got.astype(want.dtype), want)
    named = sa.asarray(a.real, dims=("b", "t"), mesh=mesh, layout={"b": ("x", "y")})
    assert not np.signbit(sa.sum(named, "b").numpy()).any() and not np.signbit(sa.mean(named, "b").numpy()).any()


REDUCTIONS = (
    "sum prod mean var std min max argmin argmax any all nansum nanprod nanmean nanvar nanstd nanmin nanmax "
    "nanargmin nanargmax"
).split()
MOMENTS = ("var", "std", "nanvar", "nanstd")
WHERE_OK = ("sum", "prod", "mean", "var", "std", "min", "max", "any", "all", *MOMENTS, "nansum", "nanprod")
WHERE_OK = (*WHERE_OK, "nanmean", "nanmin", "nanmax")
RED_DTYPES = ("float64", "float32", "float16", "bfloat16", "int8", "uint8", "uint64", "bool", "complex64")


def _red_values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Halves in [-2, 2] (exact sums), signed zeros, NaN and inf in some float arrays; bfloat16 as float32."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    v = rng.integers(-4, 5, shape) / (1.0 if dtype[0] in "iu" else 2.0)
    v = np.abs(v) if dtype[0] == "u" else v
    if dtype[0] in "fcb" and rng.random() < 0.5:
        sp = rng.random(shape)
        v = np.where(sp < 0.1, np.nan, np.where(sp > 0.95, np.inf, np.where(v == 0, -0.0, v)))
    if dtype.startswith("complex"):
        v = v + 1j * rng.integers(-2, 3, shape)
    return np.asarray(v.astype(np.float32 if dtype == "bfloat16" else dtype))


@st.composite
def _red_case(draw):
    mesh = draw(meshes())
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from((0, 1, 2, 3, 5))) for _ in range(ndim))
    lay = draw(layouts(mesh, tuple(f"dim{k}" for k in range(ndim))))
    dtype, name = draw(st.sampled_from(RED_DTYPES)), draw(st.sampled_from(REDUCTIONS))
    kw: dict = {}
    if name.endswith(("argmin", "argmax")):
        kw["axis"] = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))
    else:
        kw["axis"] = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1), st.permutations(range(ndim)).map(tuple)))
        if isinstance(kw["axis"], tuple):
            kw["axis"] = kw["axis"][: draw(st.integers(1, ndim))]
    kw["keepdims"] = draw(st.booleans())
    if name in ("sum", "prod", "mean", "nansum", "nanprod", "nanmean") and draw(st.booleans()):
        kw["dtype"] = draw(st.sampled_from(("float64", "float32", "int64", "complex128", "uint64")))
    if name in MOMENTS:
        kw["ddof"] = draw(st.sampled_from((0, 1, 0.5, 2)))
    if name in WHERE_OK and draw(st.integers(0, 3)) == 0:
        kw["where"] = True
        if name.endswith(("min", "max")):
            kw["initial"] = 0
    return mesh, shape, lay, dtype, name, kw, draw(st.integers(0, 2**16))


def _known_apart(dtype: str, name: str, kw: dict) -> bool:
    """Deviations left (reported): ``dtype=`` of a complex array to a real one (refused, as sum's: the imaginary
    parts are not dropped); NumPy's ``If a is inexact, then dtype must be inexact`` of the nan-functions; the
    nan-functions' ``where=`` of bfloat16 (NaN not left out: its dtype kind is not "f")."""
    to = kw.get("dtype")
    if to is not None and ((dtype[0] == "c" and to[0] != "c") or (name.startswith("nan") and to[0] in "iu")):
        return True
    return dtype == "bfloat16" and name.startswith("nan") and "where" in kw


@given(_red_case())
@fuzz(50, ENV)
def test_fuzz_reductions_match_numpy(case):
    """The NumPy reductions of positional arrays: NumPy's values (signed zeros too), dtype and shape on the gathered
    result, or NumPy's refusal (an empty ``min``/``argmax``, ``where=`` without ``initial=``...)."""
    mesh, shape, lay, dtype, name, kw, seed = case
    if _known_apart(dtype, name, kw):
        return
    rng = np.random.default_rng(seed)
    a = _red_values(rng, shape, dtype)
    x = _placed(a, mesh, lay)
    x = xp.astype(x, BFLOAT16) if dtype == "bfloat16" else x
    kw_np = dict(kw)
    if "where" in kw:
        kw_np["where"] = rng.random(shape) < 0.6
        kw["where"] = _placed(kw_np["where"], mesh, {})
    fn = getattr(np, name)
    try:
        want = np.asarray(fn(a, **kw_np))
    except (TypeError, ValueError):
        with pytest.raises((TypeError, ValueError)):
            fn(x, **kw)
        return
    got = fn(x, **kw)
    g = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    assert g.shape == want.shape, (g.shape, want.shape)
    if dtype == "bfloat16":  # (NumPy has no bfloat16 loops: float32's values, to bfloat16's precision)
        np.testing.assert_allclose(g.astype(want.dtype), want, rtol=2e-2, atol=2e-2, equal_nan=True)
        return
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    if want.dtype.kind in "fc":
        tol = 1e-12 if want.dtype.itemsize >= 8 and want.dtype != np.complex64 else 2e-3
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol, equal_nan=True)
        parts = (np.real, np.imag) if want.dtype.kind == "c" else (np.real,)
        signs = kw.get("axis") != () and "initial" not in kw  # (axis=() and initial=: tied zeros, reported apart)
        for part in parts if signs else ():
            gp, wp = part(g), part(want)
            np.testing.assert_array_equal(
                np.where(np.isnan(wp), False, np.signbit(gp)), np.where(np.isnan(wp), False, np.signbit(wp))
            )
    else:
        np.testing.assert_array_equal(g, want)
