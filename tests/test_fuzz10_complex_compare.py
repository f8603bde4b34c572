"""A differential fuzz, against NumPy, of the elementwise orderings of complex values in NumPy's order: ``less``,
``less_equal``, ``greater``, ``greater_equal``, ``maximum``, ``minimum``, ``fmax``, ``fmin`` and ``clip``, bit for
bit (NaN payloads, signed zeros), positionally (``xp.*``) and through NumPy's dispatch (``np.*``), on meshes 1, 2x2,
4, 2x2x2, 3x2 with random layouts (uneven and empty blocks) and broadcasting between operands laid out differently;
complex64/complex128 beside real arrays and Python scalars; parts with NaN, inf, -0.0 and float32 subnormals (which
CuPy's kernels would flush to zero). The gradients of ``maximum``/``minimum``/``fmax``/``clip`` of complex values
against finite differences.

NumPy's order: lexicographic (real part, then imaginary part); a comparison with a NaN part is False; ``maximum``
propagates a NaN (the first operand's where both have one), ``fmax`` ignores it. ``FUZZ10_EXAMPLES=<n>`` runs every
fuzzer with ``n`` examples.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from fuzzing import cached_meshes, fuzz
from gradcheck import check_grad
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.ops.elementwise import logical as lg
from shardarray.ops.elementwise import math_binary as mb

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

PARTS = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.0, 1.5e-40, 3e-40])
SIDES = (0, 1, 2, 3, 5)
DTYPES = ("complex128", "complex64", "float64", "float32", "int32", "bool")
COMPARE = ("less", "less_equal", "greater", "greater_equal")
CHOOSE = ("maximum", "minimum", "fmax", "fmin")


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Values drawn from few parts (ties), NaN, inf, -0.0 and subnormals among them, in either part."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.random(n).reshape(shape) < 0.5
    if dtype == "int32":
        return rng.integers(-2, 3, n).astype(dtype).reshape(shape)
    out = np.empty(n, dtype)
    with np.errstate(invalid="ignore"):
        out.real = rng.choice(PARTS, n)
        if out.dtype.kind == "c":
            out.imag = rng.choice(PARTS, n)
    return out.reshape(shape)


def _scalar(rng: np.random.Generator, dtype: str) -> object:
    """A Python scalar of the kind of ``dtype`` (complex, float, int or bool)."""
    v = _values(rng, (1,), dtype)[0]
    return {"c": complex, "f": float, "i": int, "b": bool}[np.dtype(dtype).kind](v)


@st.composite
def operands(draw, count: int = 2):
    """``count`` operands on one mesh, one complex at least: the first an array, the others arrays (broadcasting
    right-aligned, size-1 axes, each laid out at random) or Python scalars. Returns (host values, positional)."""
    mesh = draw(cached_meshes())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = tuple(draw(st.sampled_from(SIDES)) for _ in range(draw(st.integers(1, 2))))
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in range(count)]
    if not any(d.startswith("complex") for d in dtypes):
        dtypes[draw(st.integers(0, count - 1))] = draw(st.sampled_from(DTYPES[:2]))
    hosts, arrays = [], []
    for k, dtype in enumerate(dtypes):
        if k and draw(st.integers(0, 3)) == 0:
            v = _scalar(rng, dtype)
            hosts.append(v)
            arrays.append(v)
            continue
        sub = shape[draw(st.integers(0, len(shape) - 1)) :] if k else shape
        sub = tuple(1 if draw(st.integers(0, 4)) == 0 else s for s in sub) if k else sub
        a = _values(rng, sub, dtype)
        dims = tuple(f"dim{j}" for j in range(len(sub)))
        lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if sub[dims.index(d)] > 1}
        hosts.append(a)
        arrays.append(as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array))
    return hosts, arrays


def same_bits(got, expected) -> None:
    g, e = np.asarray(got.numpy()), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
    assert np.ascontiguousarray(g).tobytes() == np.ascontiguousarray(e).tobytes(), (g, e)


@fuzz(40, "FUZZ10_EXAMPLES")
@given(operands(), st.sampled_from(COMPARE))
def test_compare_complex(case, op):
    """``xp.less`` ... and ``np.less`` ... of complex operands are NumPy's, complex64 subnormals included."""
    (a, b), (x, y) = case
    expected = getattr(np, op)(a, b)
    same_bits(getattr(xp, op)(x, y), expected)
    same_bits(getattr(np, op)(x, y), expected)
    same_bits(getattr(xp, op)(y, x) if isinstance(y, xp.Array) else getattr(np, op)(y, x), getattr(np, op)(b, a))
    sym = {"less": operator.lt, "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge}[op]
    same_bits(sym(x, y), expected)
    same_bits(sym(y, x), getattr(np, op)(b, a))


@fuzz(40, "FUZZ10_EXAMPLES")
@given(operands(), st.sampled_from(CHOOSE))
def test_maximum_minimum_fmax_fmin_complex(case, op):
    """``maximum``/``minimum`` (NaN propagates, the first where both have one) and ``fmax``/``fmin`` (NaN ignored)
    of complex operands: NumPy's values bit for bit, in NumPy's dtype, positionally and through ``np.*``."""
    (a, b), (x, y) = case
    expected = getattr(np, op)(a, b)
    same_bits(getattr(xp, op)(x, y), expected)
    same_bits(getattr(np, op)(x, y), expected)


@pytest.mark.parametrize("op", [*COMPARE, "maximum", "minimum"])
def test_named_orderings_and_operators_of_complex_values(op):
    """``sa.less`` ..., ``sa.maximum``/``sa.minimum``, the named operators and ``np.less`` ... of named arrays order
    complex values as NumPy, broadcasting by dim name between operands laid out differently."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(5)
    a, b = _values(rng, (5, 3), "complex128"), _values(rng, (3,), "complex64")
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    y = sa.asarray(b, dims=("j",), mesh=mesh, layout={"j": "row"})
    expected = getattr(np, op)(a, b)
    same_bits(getattr(sa, op)(x, y), expected)
    same_bits(getattr(np, op)(x, y), expected)
    same_bits(getattr(sa, op)(x, 0.5 - 1j), getattr(np, op)(a, 0.5 - 1j))
    if op in COMPARE:
        sym = {"less": operator.lt, "less_equal": operator.le, "greater": operator.gt}.get(op, operator.ge)
        same_bits(sym(x, y), expected)
        same_bits(sym(x, 1.0), getattr(np, op)(a, 1.0))


@fuzz(40, "FUZZ10_EXAMPLES")
@given(operands(count=3), st.sampled_from(["both", "min", "max"]))
def test_clip_complex(case, bounds):
    """``np.clip`` (NumPy's clip loop; one bound alone: ``maximum``/``minimum``, as NumPy), ``xp.clip`` (in ``x``'s
    dtype) and the named ``sa.clip`` of complex values, bit for bit."""
    (a, lo, hi), (x, xlo, xhi) = case
    if bounds == "min":
        hi = xhi = None
    elif bounds == "max":
        lo = xlo = None
    expected = np.clip(a, lo, hi)
    same_bits(np.clip(x, xlo, xhi), expected)
    if x.dtype.kind == "c" or expected.dtype.kind != "c":
        same_bits(xp.clip(x, xlo, xhi), expected.astype(a.dtype))
    if not any(isinstance(v, xp.Array) and v.ndim != x.ndim for v in (xlo, xhi)):  # (named: the same dim names)
        named = [as_kind(v, sa.ShardArray) if isinstance(v, xp.Array) else v for v in (x, xlo, xhi)]
        if all(not isinstance(v, sa.ShardArray) or v.shape == x.shape for v in named):
            same_bits(sa.clip(*named), expected)


@pytest.mark.parametrize("op", COMPARE)
def test_named_compare_complex_broadcasts_by_name(op):
    """The named orderings (``logical.less`` ...) broadcast complex operands by dim name, laid out differently."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(3)
    a, b = _values(rng, (5, 3), "complex64"), _values(rng, (3,), "complex128")
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    y = sa.asarray(b, dims=("j",), mesh=mesh, layout={"j": "row"})
    same_bits(getattr(lg, op)(x, y), getattr(np, op)(a, b))
    same_bits(getattr(lg, op)(y, x), getattr(np, op)(b[:, None], a.T))  # (y's dims first)
    same_bits(getattr(lg, op)(x, 1.0), getattr(np, op)(a, 1.0))


@pytest.mark.parametrize("op", ["maximum", "minimum", "fmax", "fmin", "clip", "clip_lo"])
@pytest.mark.parametrize("layout", [{}, {"j": ("row", "col")}, {"i": "row", "j": "col"}], ids=str)
def test_gradients_of_complex_maximum_and_clip(op, layout):
    """The cotangent of a complex ``maximum``/``minimum``/``fmax``/``fmin``/``clip`` goes to the value taken:
    checked against finite differences of a real parameter (JAX's convention for complex values)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(11)
    p = sa.asarray(rng.standard_normal((3, 8)), dims=("i", "j"), mesh=mesh, layout=layout)
    c = sa.asarray(rng.standard_normal(8) + 1j * rng.standard_normal(8), dims=("j",), mesh=mesh)
    d = sa.asarray(rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8)), dims=("i", "j"), mesh=mesh)
    w = sa.asarray(rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8)), dims=("i", "j"), mesh=mesh)

    def loss(p):
        z = p * c
        if op == "clip":
            out = sa.clip(z, d - 0.5, p * (1 + 1j) + 0.5)
        elif op == "clip_lo":
            out = sa.clip(z, d)
        else:
            out = getattr(mb, op)(z, p * d)
        return sa.real(out * w).sum()

    check_grad(loss, p)


def test_complex_orderings_on_the_edges():
    """-0.0 and 0.0 are equal (the first operand is taken), a NaN part makes every ordering False, inf orders."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.array([-0.0 - 0.0j, complex(np.inf, 1), complex(1, np.nan), complex(np.nan, 0), 1 + 1e-40j], "complex64")
    b = np.array([0j, complex(np.inf, 0), 1 + 0j, complex(np.nan, 1), 1 + 0j], "complex64")
    x = as_kind(sa.asarray(a, dims=("v",), mesh=mesh, layout={"v": "col"}), xp.Array)
    y = as_kind(sa.asarray(b, dims=("v",), mesh=mesh, layout={"v": "row"}), xp.Array)
    np.testing.assert_array_equal(xp.greater(x, y).numpy(), [False, True, False, False, True])
    np.testing.assert_array_equal(xp.less_equal(x, y).numpy(), [True, False, False, False, False])
    same_bits(xp.maximum(x, y), np.maximum(a, b))
    same_bits(xp.minimum(y, x), np.minimum(b, a))
    same_bits(np.fmin(x, y), np.fmin(a, b))


def test_fmax_of_real_operands_is_refused_by_the_complex_op():
    """``math_binary.fmax`` is the complex op (the positional ``fmax`` computes real ones): a typed refusal."""
    mesh = sa.Mesh({"row": 2})
    x = sa.asarray(np.array([1.0, 2.0]), dims=("v",), mesh=mesh)
    with pytest.raises(sa.DTypeError, match=r"fmax.*float64"):
        mb.fmax(x, 1.0)
