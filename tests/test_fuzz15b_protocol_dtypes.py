"""Round 15's follow-ups on the NumPy protocol's reductions, against NumPy on split meshes (1, 2x2, 4, 2x2x2, 3x2;
random layouts with uneven and empty blocks):

1. ``np.var``/``std``/``nanvar``/``nanstd(x, dtype=<complex>)`` of real ``x`` are complex (``inf+nanj`` where a
   slice has no degree of freedom), as NumPy's;
2. ``np.linalg.pinv`` of an empty integer matrix keeps its dtype;
3. the nan-functions' ``where=`` leaves NaN out on bfloat16 too;
4. ``nanmean``/``nanvar``/``nanstd`` of inexact data with an integer or bool ``dtype=`` are NumPy's TypeError (with
   ``where=`` too), ``np.nanvar(ints, dtype=bool)`` is a bool, ``np.nanvar(bools, dtype=float64, ddof=2)`` NumPy's
   ``inf``;
5. ``np.ldexp(2, bools)`` is float64 (the loop NumPy picks), and the other ufuncs with Python scalars agree;
6. ``initial=`` joins the reduction first (``np.max([-0.0], initial=0.0)`` is ``-0.0``), on ``where=`` too, and the
   nan-reductions take ``initial=`` (a NaN one skipped by ``nanmax``/``nanmin``, as NumPy's ``fmax``);
7. a sum, product or mean over no axis (``axis=()``, a 0-d array) applies the identity (``-0.0`` -> ``0.0``,
   ``inf+0j`` -> ``inf+nanj``);
8. ``np.median``'s middle ``-0.0`` gives ``0.0``;
9. complex ``pinv``/``lstsq`` gradients (they were refused);
10. ``out=`` of the reductions takes NumPy's unsafe cast (``np.max(floats, out=ints)``), and ``np.var(ints, out=o)``
    writes into ``o``;

then a fuzz of the protocol's reductions (axis tuples, ``keepdims``, ``dtype=``, ``where=``, ``initial=``, ``out=``,
``ddof=``) against NumPy. ``FUZZ15B_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
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

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ15B_EXAMPLES"
BF16 = np.dtype(ml_dtypes.bfloat16)
MESH_SHAPES = ({"d": 1}, {"a": 2, "b": 2})


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout."""
    if a.ndim == 0:
        return xp.asarray(a, device=mesh)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), xp.Array)


def _split(a: np.ndarray, mesh=None):
    """``a`` on the 2x2 mesh with its first dim split (or replicated when 0-d)."""
    mesh = mesh or _mesh({"a": 2, "b": 2})
    if a.ndim == 0:
        return xp.asarray(a, device=mesh)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout={"dim0": ("a", "b")}), xp.Array)


def _same(got, want, *, tol: float = 0.0, zeros: bool = True) -> None:
    """``got`` (a positional array, gathered) equals NumPy's ``want``: dtype, shape, values (NaN where NaN, in each
    part of a complex value) and, where both are zero, the sign (``zeros``)."""
    assert isinstance(got, xp.Array), type(got)
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    if w.dtype == BF16:
        g, w = g.astype(np.float32), w.astype(np.float32)
    parts = (g.real, w.real, g.imag, w.imag) if w.dtype.kind == "c" else (g, w)
    for gp, wp in zip(parts[::2], parts[1::2]):
        if tol:
            np.testing.assert_allclose(gp, wp, rtol=tol, atol=tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(gp, wp)
        if zeros and wp.dtype.kind == "f":
            both = (gp == 0) & (wp == 0)
            np.testing.assert_array_equal(np.signbit(gp[both]), np.signbit(wp[both]))


# ------------------------------------------------------------------------------------- 1. complex dtype= of moments


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_moments_keep_a_complex_dtype(name, dtype):
    """Old: ``np.var(x, dtype=np.complex128)`` of real ``x`` was float64 (the variance of the complex cast, real)."""
    a = np.array([[1.0, 2.0, np.nan], [3.0, 5.0, 8.0]])
    a = a if name.startswith("nan") else np.nan_to_num(a)
    x, fn = _split(a), getattr(np, name)
    where = np.array([[True, False, True], [True, True, True]])
    tol = 1e-6 if dtype == np.complex64 else 1e-12
    _same(fn(x, dtype=dtype), fn(a, dtype=dtype), tol=tol)
    _same(fn(x, axis=1, dtype=dtype, ddof=1), fn(a, axis=1, dtype=dtype, ddof=1), tol=tol)
    _same(fn(x, axis=0, dtype=dtype, where=_split(where)), fn(a, axis=0, dtype=dtype, where=where), tol=tol)
    # (no degree of freedom: NumPy's complex division by 0 makes the imaginary part NaN)
    _same(fn(x, axis=0, dtype=dtype, ddof=2), fn(a, axis=0, dtype=dtype, ddof=2), tol=tol)
    ints = np.array([[1, 2, 4], [3, 5, 8]])
    _same(fn(_split(ints), axis=1, dtype=dtype, ddof=3), fn(ints, axis=1, dtype=dtype, ddof=3), tol=tol)
    if name.startswith("nan"):
        _same(getattr(xp, name)(x, axis=1, dtype=dtype), fn(a, axis=1, dtype=dtype), tol=tol)


# ------------------------------------------------------------------------------------- 2. pinv of empty integers


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.float32])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 4)])
def test_pinv_of_an_empty_matrix_keeps_its_dtype(dtype, shape):
    """Old: ``np.linalg.pinv`` cast an empty integer matrix to float64 first (``FLOAT_INPUT``); NumPy keeps it."""
    a = np.zeros(shape, dtype=dtype)
    _same(np.linalg.pinv(_split(a)), np.linalg.pinv(a))
    b = np.array([[1, 2], [3, 4], [5, 7]])
    _same(np.linalg.pinv(_split(b)), np.linalg.pinv(b), tol=1e-12)  # (non-empty integers: float64, as before)


# ------------------------------------------------------------------------------------- 3. bfloat16 with where=


@pytest.mark.parametrize("name", ["nanmean", "nanvar", "nanstd", "nansum", "nanprod", "nanmax", "nanmin"])
def test_nan_reductions_with_where_leave_bfloat16_nan_out(name):
    """Old: ``where=`` on bfloat16 kept its NaN (``x.dtype.kind in "fc"`` misses bfloat16). Like ``xp.nanmean`` of
    bfloat16 without ``where=``, NaN is left out (NumPy's own nan-functions cannot tell an ml_dtypes NaN):
    compared with NumPy on float32, rounded to bfloat16."""
    a = np.array([[1.0, np.nan, 3.0, 4.0], [np.nan, 2.0, 6.0, 1.0]], np.float32)
    w = np.array([[True, True, False, True], [True, True, True, False]])
    kw = {"initial": -5.0} if name == "nanmax" else {"initial": 9.0} if name == "nanmin" else {}
    fn = getattr(np, name)
    got = fn(_split(a.astype(BF16)), axis=1, where=_split(w), **kw)
    _same(got, fn(a, axis=1, where=w, **kw).astype(BF16), tol=1e-2)
    assert not np.isnan(np.asarray(got).astype(np.float32)).any()


# ------------------------------------------------------------------------------------- 4. integer dtype= of inexact


@pytest.mark.parametrize("name", ["nanmean", "nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_nan_moments_of_inexact_data_refuse_an_integer_dtype(name, dtype):
    """Old: ``np.nanmean(floats, dtype=np.int64, where=w)`` computed a value; ``np.nanvar(floats, dtype=np.int64)``
    raised ``var``'s message. NumPy's TypeError ("If a is inexact, then dtype must be inexact") either way."""
    a = np.array([[1.0, 2.0], [3.0, np.nan]])
    w = np.array([[True, False], [True, True]])
    with pytest.raises(TypeError):
        getattr(np, name)(a, dtype=dtype, where=w)
    for kw in ({}, {"where": _split(w)}):
        with pytest.raises(sa.DTypeError, match="inexact"):
            getattr(np, name)(_split(a), dtype=dtype, **kw)
    with pytest.raises(sa.DTypeError, match="inexact"):
        getattr(xp, name)(_split(a), dtype=dtype)


def test_nan_moments_of_integers_with_bool_and_float_dtypes():
    """Old: ``np.nanvar(ints, dtype=bool)`` raised (NumPy: a bool, ``np.var``'s); ``np.nanvar(bools, dtype=float64,
    ddof=2)`` over 2 values was NaN where NumPy's ``np.var`` gives inf (no NaN to skip in integers)."""
    ints = np.array([[1, 2, 0, 3], [0, 0, 1, 1]])
    w = np.array([True, True, False, True])
    for name in ("nanvar", "nanstd", "var", "std", "nanmean"):
        fn = getattr(np, name)
        _same(fn(_split(ints), dtype=bool), fn(ints, dtype=bool))
        _same(fn(_split(ints), dtype=bool, where=_split(w)), fn(ints, dtype=bool, where=w))
    bools = np.array([[True, False], [True, True], [False, False]])
    for name in ("nanvar", "nanstd"):
        fn = getattr(np, name)
        _same(fn(_split(bools), axis=1, dtype=np.float64, ddof=2), fn(bools, axis=1, dtype=np.float64, ddof=2))
        _same(fn(_split(bools), axis=1, dtype=np.float32, ddof=1), fn(bools, axis=1, dtype=np.float32, ddof=1))
    # (a 0-d result with keepdims is NumPy's scalar: its square root casts back to an integer dtype)
    _same(np.std(_split(np.array(3.0)), dtype=np.int64, keepdims=True), np.std(np.array(3.0), dtype=np.int64))


# ------------------------------------------------------------------------------------- 5. ufunc loops, Python scalars

SCALAR_UFUNCS = ("ldexp", "float_power", "heaviside", "copysign", "fmax", "nextafter", "arctan2", "power", "add")


@fuzz(40, ENV)
@given(data=st.data(), mesh=meshes())
def test_python_scalars_pick_numpys_loop(data, mesh):
    """Old: ``np.ldexp(2, bools)`` was float16: the bools cast to the loop's int32, then (Python int, int32) picked
    the float16 loop; NumPy's loop for (int, bool) is float64. The others with Python scalars and small dtypes."""
    name = data.draw(st.sampled_from(SCALAR_UFUNCS))
    dtype = data.draw(st.sampled_from(["bool", "int8", "uint8", "int32", "int64", "float16", "float32"]))
    scalar = data.draw(st.sampled_from([2, -3, 2.0, True]))
    a = np.array([1, 0, 3, 2, 1], dtype=dtype)
    first = data.draw(st.booleans())
    fn = getattr(np, name)
    try:
        want = fn(scalar, a) if first else fn(a, scalar)
    except (TypeError, OverflowError, ValueError):  # (no loop; an int out of range; a negative integer power)
        x = data.draw(placed(a, mesh))
        with pytest.raises((TypeError, OverflowError, ValueError)):
            fn(scalar, x) if first else fn(x, scalar)
        return
    x = data.draw(placed(a, mesh))
    _same(fn(scalar, x) if first else fn(x, scalar), want, tol=1e-3 if want.dtype == np.float16 else 1e-6)


def test_ldexp_of_a_python_int_and_bools_is_float64():
    b = np.array([True, False, True])
    _same(np.ldexp(2, _split(b)), np.ldexp(2, b))
    _same(np.ldexp(2, _split(b.astype(np.int8))), np.ldexp(2, b.astype(np.int8)))  # (NumPy: float16 there)


# ------------------------------------------------------------------------------------- 6. initial= first

SIGNED = ([-0.0], [0.0], [-0.0, -0.0, -0.0], [-0.0, 0.0], [np.nan], [1.0, np.nan], [0.0, -0.0], [-0.0, np.nan])


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "nansum", "nanprod", "nanmax", "nanmin"])
def test_initial_joins_first(name):
    """Old: ``np.max(x, initial=0.0)`` of ``[-0.0]`` was ``0.0`` (``fn(result, initial)``; NumPy's loop starts from
    ``initial``: ``-0.0``); a sum from ``initial=-0.0`` of ``-0.0`` entries was ``0.0``; the nan-reductions refused
    ``initial=`` without ``where=``; ``nansum``'s ``where=`` counted its NaN as the ``-0.0`` left out, NumPy's as
    ``+0.0``; ``nanmax`` kept a NaN ``initial``, which NumPy's ``fmax`` skips."""
    fn = getattr(np, name)
    for values in SIGNED:
        a = np.array(values)
        masks = [None, np.arange(a.size) < a.size - 1, np.arange(a.size) > 0]
        for initial in (0.0, -0.0, np.nan, 1.0):
            for w in masks:
                kw = {} if w is None else {"where": w}
                want = fn(a, initial=initial, **kw)
                kw = {} if w is None else {"where": _split(w)}
                # (nanmax/nanmin: NumPy's fmax/fmin order signed zeros as its C library does: values only)
                _same(fn(_split(a), initial=initial, **kw), want, zeros=name not in ("nanmax", "nanmin"))


@pytest.mark.parametrize("ufunc", [np.fmax, np.fmin])
def test_fmax_and_fmin_reduce(ufunc):
    """Old: ``np.fmax.reduce``/``np.fmin.reduce`` of a positional array were NumPy's TypeError (no counterpart).
    Now ``xp.nanmax``/``nanmin`` with NumPy's ``initial=`` (a NaN one skipped), ``where=`` (needs ``initial``) and
    all-NaN slices (NaN, no warning)."""
    nan = np.nan
    a = np.array([[nan, nan, -2.0], [nan, 1.0, nan], [0.0, 1.0, 2.0]])
    w = np.array([[True, True, False], [False, False, True], [True, False, True]])
    for kw in ({}, {"axis": 1}, {"axis": None, "initial": 0.5}, {"initial": nan, "keepdims": True}):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            _same(ufunc.reduce(_split(a), **kw), ufunc.reduce(a, **kw), zeros=False)
    for initial in (nan, 0.5, -1.0):
        got = ufunc.reduce(_split(a), axis=0, initial=initial, where=_split(w))
        _same(got, ufunc.reduce(a, axis=0, initial=initial, where=w), zeros=False)
    _same(
        ufunc.reduce(_split(np.zeros((0, 2))), axis=0, initial=1.0), ufunc.reduce(np.zeros((0, 2)), axis=0, initial=1.0)
    )
    with pytest.raises(ValueError):
        ufunc.reduce(_split(np.zeros((0, 2))), axis=0)


# ------------------------------------------------------------------------------------- 7. no axis reduced

NO_AXIS = ("sum", "prod", "mean", "nansum", "nanprod", "nanmean", "cumsum", "cumprod", "nancumsum", "average")


@pytest.mark.parametrize("name", NO_AXIS)
@pytest.mark.parametrize("value", [-0.0, complex(np.inf, 0.0), complex(-0.0, -0.0), np.float32(-0.0)])
def test_reductions_over_no_axis_apply_the_identity(name, value):
    """Old: ``np.sum(-0.0)`` (a 0-d array) and ``np.sum(x, axis=())`` kept ``-0.0`` (NumPy's sum starts from
    ``+0.0``), ``np.prod(inf+0j)`` was ``inf+0j`` (NumPy multiplies by ``1+0j``: ``inf+nanj``); the scans keep the
    values, as NumPy's."""
    fn = getattr(np, name)
    zero_d = np.array(value)
    _same(fn(_split(zero_d)), fn(zero_d))
    if name in ("cumsum", "cumprod", "nancumsum", "average"):
        return
    a = np.array([value, 1.0, -0.0], dtype=zero_d.dtype)
    _same(fn(_split(a), axis=()), fn(a, axis=()))
    _same(fn(_split(zero_d), axis=()), fn(zero_d, axis=()))
    if name in ("sum", "prod", "mean"):
        _same(getattr(xp, name)(_split(a), axis=()), fn(a, axis=()))


# ------------------------------------------------------------------------------------- 8. median's signed zeros


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_median_of_negative_zeros_is_positive(dtype):
    """Old: a middle ``-0.0`` (or two) gave ``-0.0``; NumPy's median is the ``mean`` of the middle value(s), a sum
    from ``+0.0``."""
    for values in ([-0.0], [-1.0, -0.0, 2.0], [-1.0, -0.0, -0.0, 3.0], [-0.0, -0.0], [-0.0, 0.0], [2.0, -0.0, -4.0]):
        a = np.array(values, dtype=dtype)
        _same(np.median(_split(a)), np.median(a))
        _same(xp.median(_split(a)), np.median(a))
        _same(np.median(_split(a.reshape(1, -1)), axis=1), np.median(a.reshape(1, -1), axis=1))
    _same(np.median(_split(np.array(-0.0, dtype))), np.median(np.array(-0.0, dtype)))


def test_complex_medians_and_nanmeans_with_nan_parts():
    """Old: ``np.median`` of a complex slice holding a NaN part was ``nan+0j`` (NumPy: its last sorted value,
    ``nan-3j``), and ``np.nanmean`` of an empty or all-NaN complex slice ``nan+0j`` (NumPy: ``nan+nanj``, its
    total divided by the count in complex arithmetic)."""
    nan = np.nan
    for values in (
        [2 + 2j, 1j, -2 + 2j, -2 - 3j, nan - 3j],
        [nan + 1j, nan],
        [complex(1, nan), 3, complex(nan, 2)],
        [],
    ):
        a = np.array(values, dtype=complex)
        for fn in (np.median, np.nanmedian, np.nanmean, np.mean):
            _same(fn(_split(a)), fn(a))
    b = np.array([[nan, nan + 1j], [nan, 2 + 1j]])
    _same(np.nanmean(_split(b), axis=0), np.nanmean(b, axis=0))
    _same(np.median(_split(np.zeros((0, 2), complex)), axis=0), np.median(np.zeros((0, 2), complex), axis=0))


# ------------------------------------------------------------------------------------- 9. complex pinv/lstsq VJPs


def _grad_check(loss, a: np.ndarray, mesh, lay, path=None, dtype=np.complex128) -> np.ndarray:
    """``sa.value_and_grad`` of ``loss`` at complex ``a`` (two real parameters, ``re + 1j * im``) against central
    differences along two random directions (``path(rng)``: a direction and the curve it is the tangent of, for a
    rank-deficient ``a`` kept at its rank); returns the gradient ``d/dre + 1j d/dim``."""
    real = np.float32 if dtype == np.complex64 else np.float64
    dims = tuple(f"dim{k}" for k in range(a.ndim))

    def params(v):
        return tuple(
            as_kind(sa.asarray(p.astype(real), dims=dims, mesh=mesh, layout=lay), xp.Array) for p in (v.real, v.imag)
        )

    def f(p):
        return loss(p[0] + 1j * p[1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.GatherWarning)
        _, g = sa.value_and_grad(f)(params(a))
        g = g[0].numpy() + 1j * g[1].numpy()
        if dtype == np.complex64:
            return g
        rng, eps = np.random.default_rng(1), 1e-6
        for _ in range(2):
            if path is None:
                v = rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
                up, dn = float(f(params(a + eps * v))), float(f(params(a - eps * v)))
            else:
                v, at = path(rng)
                up, dn = float(f(params(at(eps)))), float(f(params(at(-eps))))
            fd = (up - dn) / (2 * eps)
            an = float(np.sum(g.real * v.real + g.imag * v.imag))
            np.testing.assert_allclose(an, fd, rtol=1e-6, atol=1e-7 * (1 + abs(up)))
    return g


def _cx(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("mesh_shape", MESH_SHAPES)
@pytest.mark.parametrize("kind", ["tall", "wide", "deficient"])
def test_complex_pinv_and_lstsq_gradients(mesh_shape, kind):
    """Old: the gradient of ``pinv`` (and ``lstsq``, built on it) of a complex matrix was refused (``TapeError``).
    Now: ``Ā = -PᵀGPᵀ + conj[(I - AP)GᵀPPᴴ] + conj[PᴴPGᵀ(I - PA)]`` (JAX's convention), against central
    differences on a row-split matrix; complex64 against complex128's gradient."""
    mesh = _mesh(mesh_shape)
    rng = np.random.default_rng(3)
    path = None
    if kind == "deficient":  # (rank 2 of 6x4; perturbed along (X + tX')(Y + tY'), which keeps the rank)
        x0, y0 = _cx(rng, 6, 2), _cx(rng, 2, 4)
        a = x0 @ y0

        def path(r):
            dx, dy = _cx(r, 6, 2), _cx(r, 2, 4)
            return dx @ y0 + x0 @ dy, lambda t: (x0 + t * dx) @ (y0 + t * dy)

    else:
        a = _cx(rng, 6, 3) if kind == "tall" else _cx(rng, 3, 6)
    lay = {"dim0": tuple(mesh.axis_names)}
    w = xp.asarray(_cx(rng, *a.shape[::-1]), device=mesh)
    b = xp.asarray(_cx(rng, a.shape[0]), device=mesh)

    def pinv_loss(z):
        p = xp.linalg.pinv(z)
        return xp.sum(xp.real(p * w)) + xp.sum(xp.abs(p) ** 2)

    def lstsq_loss(z):
        x = np.linalg.lstsq(z, b)[0]
        return xp.sum(xp.abs(x) ** 2) + xp.sum(xp.imag(x))

    for loss in (pinv_loss, lstsq_loss):
        g = _grad_check(loss, a, mesh, lay, path)
        if loss is pinv_loss:
            g32 = _grad_check(loss, a, mesh, lay, dtype=np.complex64)
            np.testing.assert_allclose(g32, g, rtol=2e-3, atol=2e-3 * np.abs(g).max())


def test_named_pinv_of_a_traced_complex_matrix():
    """``sa.linalg.pinv`` records its closed-form VJP for a complex matrix too (no TapeError)."""
    mesh = _mesh({"a": 2, "b": 2})
    rng = np.random.default_rng(5)
    a = _cx(rng, 5, 3)

    def loss(p):
        z = p["re"] + 1j * p["im"]
        return sa.sum(sa.real(sa.linalg.pinv(z, ("i", "j"))))

    params = {
        k: sa.asarray(v, dims=("i", "j"), mesh=mesh, layout={"i": "a"}) for k, v in (("re", a.real), ("im", a.imag))
    }
    _, g = sa.value_and_grad(loss)(params)
    assert g["re"].dims == ("i", "j") and np.isfinite(g["re"].numpy()).all()


# ------------------------------------------------------------------------------------- 10. out=


def test_reductions_write_into_out_as_numpy():
    """Old: ``np.max(floats, out=ints)`` was refused (same_kind; NumPy's reductions cast into ``out=`` unsafely),
    and ``np.var(ints, out=o)`` cast ``o`` to float64 with the input (``FLOAT_INPUT``): ``o`` was never written."""
    a = np.array([[1.5, -2.5, 3.25], [0.5, 7.0, -1.0]])
    for name in ("max", "min", "sum", "mean", "nansum", "nanmax", "cumsum", "median", "var", "nanmedian"):
        shape = (2, 3) if name == "cumsum" else (3,)
        o, oh, kw = _split(np.zeros(shape, np.int64)), np.zeros(shape, np.int64), {"axis": 0}
        got = getattr(np, name)(_split(a), out=o, **kw)
        getattr(np, name)(a, out=oh, **kw)
        assert got is o
        _same(o, oh)
    ints = np.array([3, 1, 4, 1, 5])
    o = _split(np.zeros((1,), np.int64))
    assert np.var(_split(ints), keepdims=True, out=o) is o
    _same(o, np.var(ints, keepdims=True).astype(np.int64))
    nan_moments = (np.nanstd, np.nanvar, np.nanmean)  # (NumPy: "If a is inexact, then out must be inexact")
    for fn in (np.std, *nan_moments, lambda v, **k: np.percentile(v, 50.0, **k)):  # (their ufuncs' same_kind)
        with pytest.raises(TypeError):
            fn(a, axis=0, out=np.zeros((3,), np.int64))
        with pytest.raises(TypeError):
            fn(_split(a), axis=0, out=_split(np.zeros((3,), np.int64)))


# ------------------------------------------------------------------------------------- the fuzz

FUNCS = (
    "sum prod mean std var min max argmin argmax any all nansum nanprod nanmean nanstd nanvar nanmin nanmax "
    "nanargmin nanargmax ptp average median percentile quantile nanmedian nanpercentile nanquantile count_nonzero "
    "cumsum cumprod nancumsum nancumprod"
).split()
ONE_AXIS = {"argmin", "argmax", "nanargmin", "nanargmax", "cumsum", "cumprod", "nancumsum", "nancumprod"}
DTYPE_KW = {"sum", "prod", "mean", "std", "var", "nansum", "nanprod", "nanmean", "nanstd", "nanvar"}
DTYPE_KW |= {"cumsum", "cumprod", "nancumsum", "nancumprod"}
WHERE_KW = {"sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "nansum", "nanprod", "nanmean"}
WHERE_KW |= {"nanstd", "nanvar", "nanmin", "nanmax"}
INITIAL_KW = {"sum", "prod", "min", "max", "nansum", "nanprod", "nanmin", "nanmax"}
DDOF_KW = {"std", "var", "nanstd", "nanvar"}
NO_KEEPDIMS = {"cumsum", "cumprod", "nancumsum", "nancumprod", "average"}
QUANTILES = {"percentile", "quantile", "nanpercentile", "nanquantile"}
OUT_KW = set(FUNCS) - QUANTILES - {"average", "ptp", "median", "nanmedian", "count_nonzero"}
#: NumPy's signed zeros of ties (extrema) and of the nan-quantiles' masked picks are not compared
SIGN_FREE = {"min", "max", "nanmin", "nanmax", "ptp", "nanquantile", "nanpercentile", "nanmedian"}


def _values(rng, shape, dtype):
    """Small integers, with ``-0.0`` and NaN among floats, an imaginary part for complex."""
    n = math.prod(shape)
    v = rng.integers(-3, 4, n).astype(np.float64)
    if np.dtype(dtype).kind in "fc":
        u = rng.random(n)
        v = np.where(u < 0.1, -0.0, np.where(u < 0.18, np.nan, v))
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.integers(-3, 4, n)
    return (np.abs(v) if np.dtype(dtype).kind == "u" else v).astype(dtype).reshape(shape)


@st.composite
def calls(draw):
    """``(name, array, args, keywords)``: a NumPy reduction and its arguments."""
    name = draw(st.sampled_from(FUNCS))
    dtype = draw(st.sampled_from(["float64", "float32", "int64", "int32", "uint8", "bool", "complex128", "float16"]))
    shape = tuple(draw(st.sampled_from((0, 1, 2, 3, 5))) for _ in range(draw(st.integers(0, 3))))
    a = _values(np.random.default_rng(draw(st.integers(0, 2**16))), shape, dtype)
    ndim, kw = len(shape), {}
    if ndim and draw(st.booleans()):
        if name in ONE_AXIS:
            kw["axis"] = draw(st.integers(-ndim, ndim - 1))
        else:
            axes = draw(st.permutations(range(ndim)))[: draw(st.integers(0, ndim))]
            kw["axis"] = axes[0] if len(axes) == 1 and draw(st.booleans()) else tuple(axes)
    if name not in NO_KEEPDIMS and draw(st.booleans()):
        kw["keepdims"] = True
    if name in DTYPE_KW and draw(st.integers(0, 3)) == 0:
        kw["dtype"] = draw(st.sampled_from(["float64", "float32", "int64", "bool", "int8", "complex128"]))
    if name in WHERE_KW and draw(st.integers(0, 2)) == 0:
        kw["where"] = np.random.default_rng(ndim).random(shape[draw(st.integers(0, ndim)) :]) < 0.6
    if name in INITIAL_KW and draw(st.integers(0, 2)) == 0:
        kw["initial"] = draw(st.sampled_from([0, 1, -2, 0.5, -0.0]))
    if name in DDOF_KW and draw(st.booleans()):
        kw["ddof"] = draw(st.integers(0, 2))
    args = ()
    if name in QUANTILES:
        q = draw(st.sampled_from([0.0, 0.3, 0.5, 1.0, (0.25, 0.75)]))
        scale = 100.0 if "percentile" in name else 1.0
        args = ([v * scale for v in q] if isinstance(q, tuple) else q * scale,)
    if name in OUT_KW and draw(st.integers(0, 4)) == 0:
        kw["out"] = draw(st.sampled_from([None, "float64", "int64", "float32"]))  # (None: the result's dtype)
    return name, a, args, kw


def _skipped(name: str, a: np.ndarray, kw: dict) -> bool:
    """Cases where the library departs from NumPy by design (documented refusals) or NumPy by accident."""
    given = kw.get("dtype")
    if a.dtype.kind == "c" and given is not None and np.dtype(given).kind != "c":
        return True  # (a complex array cast to a real dtype: the library's typed refusal, NumPy's ComplexWarning)
    if (name in QUANTILES or name in ("median", "nanmedian", "average")) and a.size == 0 and "axis" in kw:
        return True  # (NumPy's reshape errors and ZeroDivisionError of empty slices over axis tuples)
    if kw.get("out") and (name in ("std", "nanstd", "var", "nanvar", "mean", "nanmean") or "initial" in kw):
        return True  # (NumPy reduces in out='s dtype where the data casts to it safely; the library casts its result)
    return False


@fuzz(60, ENV)
@given(data=st.data(), mesh=meshes(), call=calls())
def test_fuzz_protocol_reductions(data, mesh, call):
    """``np.<reduction>`` of a positional array against NumPy: dtype, shape, values (NaN placement, and signed zeros
    where NumPy's are determined), ``out=`` written and returned; where NumPy raises, a ValueError/TypeError."""
    name, a, args, kw = call
    if _skipped(name, a, kw):
        return
    fn = getattr(np, name)
    host = {k: v for k, v in kw.items() if k != "out"}
    try:
        if "out" in kw:
            ref = fn(a, *args, **{k: v for k, v in kw.items() if k != "out"})
            host["out"] = np.zeros(np.shape(ref), dtype=kw["out"] or np.asarray(ref).dtype)
            if np.asarray(ref).dtype.kind == "c" and host["out"].dtype.kind != "c":
                return
        want = fn(a, *args, **host)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, IndexError):
        want = None
    x = data.draw(placed(a, mesh))
    dev = dict(kw)
    if "where" in kw:
        dev["where"] = xp.asarray(kw["where"], device=mesh)
    dev.pop("out", None)
    if "out" in host:  # (not where NumPy raised before one was made)
        dev["out"] = xp.asarray(np.zeros_like(host["out"]), device=mesh)
    if want is None:
        with pytest.raises((ValueError, TypeError, OverflowError, IndexError)):
            fn(x, *args, **dev)
        return
    got = fn(x, *args, **dev)
    if "out" in kw:
        assert got is dev["out"]
    w = np.asarray(want)
    precise = max(np.finfo(t).resolution if t.kind in "fc" else 1e-15 for t in (w.dtype, a.dtype))
    tol = 0.0 if w.dtype.kind not in "fc" else 3e-3 if precise > 1e-5 else 2e-5 if precise > 1e-14 else 1e-11
    # (NumPy scans in out='s dtype; a complex product's zero parts take their signs from its order of products)
    products = w.dtype.kind == "c" and "prod" in name
    _same(got, want, tol=tol, zeros=name not in SIGN_FREE and not kw.get("out") and not products)
