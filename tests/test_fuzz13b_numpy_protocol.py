"""Round 13's NumPy-protocol follow-ups on positional arrays, against NumPy on split meshes (1, 2x2, 4, 2x2x2,
3x2; random layouts with uneven and empty blocks):

1. host settings given as NumPy arrays: ``np.quantile``/``percentile`` (and the nan-versions) ``q``, with a NumPy
   scalar ``q`` setting the dtype (``np.percentile(float32_x, np.float64(30))`` is float64); ``np.fft``'s
   ``s``/``axes``; shapes, axes and widths (``np.pad``, ``np.tile``, ``np.reshape``, ``np.roll``...); a NumPy array
   where NumPy refuses one (``np.sum(x, axis=np.array([0]))``) or as data stays refused;
2. 0-d arrays and NumPy's default ``axis=-1`` (``np.argsort``), the nan-reductions, ``np.ptp`` and
   ``np.count_nonzero`` with ``axis=0``/``-1``, ``np.diff(x, n=0)``;
3. ``np.average``'s zero sum of 1-D weights of an empty array (NumPy's ZeroDivisionError);
4. ``xp.diff`` of bfloat16 with a Python int ``prepend``/``append`` (weak), ``xp.concat``/``stack`` of dtypes
   without a common one (a typed error);
5. ``xp.linalg.matrix_power`` of bools; ``xp.logaddexp2``/``np.logaddexp2`` (NumPy's formula, its dtypes).

``FUZZ13B_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import contextlib
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

ENV = "FUZZ13B_EXAMPLES"
BF16 = np.dtype(ml_dtypes.bfloat16)


@st.composite
def placed(draw, a: np.ndarray, mesh):
    """``a`` as a positional array on ``mesh`` in a random layout."""
    if a.ndim == 0:
        return xp.asarray(a, device=mesh)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))), xp.Array)


def _same(got, want, *, close: bool = False) -> None:
    """``got`` (a positional array, gathered) equals NumPy's ``want``: dtype, shape and values."""
    assert isinstance(got, xp.Array), type(got)
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    if close:
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(g, w)


@contextlib.contextmanager
def _no_gather():
    """A context in which a gather (``sa.GatherWarning``) fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        yield


# ------------------------------------------------------------------------------------- 1. host settings

QUANTILES = ("quantile", "percentile", "nanquantile", "nanpercentile")


@fuzz(50, ENV)
@given(data=st.data(), mesh=meshes())
def test_numpy_array_q_as_numpy(data, mesh):
    """``q`` as a NumPy array (1-D, 2-D, float32, ``np.linspace``) or a NumPy scalar: NumPy's values and dtype."""
    name = data.draw(st.sampled_from(QUANTILES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    dtype = data.draw(st.sampled_from(["float64", "float32", "int64"]))
    shape = data.draw(st.sampled_from([(7,), (3, 4), (2, 5)]))
    a = rng.integers(-20, 20, shape).astype(dtype)
    scale = 100.0 if name.endswith("percentile") else 1.0
    kind = data.draw(st.sampled_from(["1d", "2d", "f32", "linspace", "f64scalar", "f32scalar", "0d"]))
    q = {
        "1d": np.array([0.1, 0.7]) * scale,
        "2d": np.array([[0.0, 0.25], [0.5, 1.0]]) * scale,
        "f32": (np.array([0.3, 0.9]) * scale).astype(np.float32),
        "linspace": np.linspace(0, scale, 5),
        "f64scalar": np.float64(0.3 * scale),
        "f32scalar": np.float32(0.3 * scale),
        "0d": np.array(0.6 * scale),
    }[kind]
    axis = data.draw(st.sampled_from([None, 0, -1]))
    keepdims = data.draw(st.booleans())
    x = data.draw(placed(a, mesh))
    fn = getattr(np, name)
    with _no_gather():
        _same(fn(x, q, axis=axis, keepdims=keepdims), fn(a, q, axis=axis, keepdims=keepdims), close=True)


def test_numpy_scalar_q_keeps_its_dtype():
    """Old: ``np.percentile(float32_x, np.float64(30))`` was float32 (the scalar made a weak Python float)."""
    with sa.default_mesh(_mesh({"a": 2, "b": 2})):
        x = xp.asarray(np.arange(10.0, dtype=np.float32))
        h = np.arange(10.0, dtype=np.float32)
        for fn in (np.percentile, np.nanpercentile):
            _same(fn(x, np.float64(30)), fn(h, np.float64(30)))
            _same(fn(x, 30.0), fn(h, 30.0))
        _same(np.quantile(x, np.array([0.1, 0.7])), np.quantile(h, np.array([0.1, 0.7])))


FFT_CASES = (
    ("fftn", {"s": np.array([4, 6]), "axes": np.array([0, 1])}),
    ("fftn", {"axes": np.array([0, 1])}),
    ("fftn", {"s": np.array([3, 8]), "axes": np.array([1, 0])}),
    ("ifftn", {"axes": np.array([1])}),
    ("rfftn", {"s": np.array([3, 4]), "axes": np.array([0, 1])}),
    ("fft2", {"axes": np.array([1, 0])}),
    ("rfft2", {"s": np.array([4, 4]), "axes": np.array([-2, -1])}),
    ("fft", {"n": np.int64(5)}),
    ("fftshift", {"axes": np.array([0])}),
)


@fuzz(40, ENV)
@given(data=st.data(), mesh=meshes())
def test_fft_host_s_and_axes_as_numpy(data, mesh):
    """``s=``/``axes=`` of ``np.fft``'s transforms as NumPy arrays (old: refused as NumPy operands)."""
    name, kw = data.draw(st.sampled_from(FFT_CASES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a = rng.standard_normal(data.draw(st.sampled_from([(4, 6), (3, 5), (5, 4)])))
    x = data.draw(placed(a, mesh))
    fn = getattr(np.fft, name)
    with _no_gather():
        got, want = fn(x, **kw), fn(a, **kw)
    assert np.asarray(got).dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)


SETTINGS = (
    lambda m, v: m.pad(v, np.array([[1, 1], [2, 0]])),
    lambda m, v: m.pad(v, np.array([1, 2]), mode="edge"),
    lambda m, v: m.tile(v, np.array([2, 1])),
    lambda m, v: m.reshape(v, np.array([6, 4])),
    lambda m, v: m.reshape(v, np.array(-1)),
    lambda m, v: m.transpose(v, np.array([1, 0])),
    lambda m, v: m.broadcast_to(v, np.array([2, 4, 6])),
    lambda m, v: m.roll(v, np.array([1, -2]), axis=(0, 1)),
    lambda m, v: m.roll(v, 1, axis=np.array([0, 1])),
    lambda m, v: m.flip(v, axis=np.array([0])),
    lambda m, v: m.moveaxis(v, np.array([0]), np.array([1])),
    lambda m, v: m.rot90(v, axes=np.array([0, 1])),
    lambda m, v: m.resize(v, np.array([3, 5])),
    lambda m, v: m.partition(v, np.array([1, 2]), axis=0),
    lambda m, v: m.tensordot(v, v, axes=np.array([[0, 1], [0, 1]])),
    lambda m, v: m.quantile(v, 0.5, axis=np.array([0, 1])),
)


@fuzz(50, ENV)
@given(data=st.data(), mesh=meshes())
def test_host_settings_as_numpy_arrays(data, mesh):
    """Shapes, axes, widths and repetitions as NumPy arrays: their values, as NumPy reads them (old: refused)."""
    case = data.draw(st.sampled_from(SETTINGS))
    a = np.random.default_rng(data.draw(st.integers(0, 2**16))).integers(-9, 9, (4, 6)).astype(np.float64)
    x = data.draw(placed(a, mesh))
    with _no_gather():
        _same(case(np, x), case(np, a))


def test_numpy_arrays_stay_refused_where_numpy_refuses_or_as_data():
    """An array ``axis`` where NumPy refuses one is a TypeError still; data operands name the explicit copy."""
    with sa.default_mesh(_mesh({"a": 2, "b": 2})):
        x = xp.asarray(np.arange(24.0).reshape(4, 6))
        for call in (
            lambda: np.sum(x, axis=np.array([0, 1])),
            lambda: np.cumsum(x, axis=np.array([0])),
            lambda: np.fft.fft(x, n=np.array([4])),
        ):
            with pytest.raises(TypeError):
                call()
        with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
            np.add(x, np.ones(6))


# ------------------------------------------------------------------------------------- 2. 0-d arrays

ZERO_D = (
    lambda m, z: m.argsort(z),
    lambda m, z: m.argsort(z, kind="stable"),
    lambda m, z: m.argsort(z, axis=0),
    lambda m, z: m.nansum(z, axis=0),
    lambda m, z: m.nanprod(z, axis=-1, keepdims=True),
    lambda m, z: m.nanmax(z, axis=0),
    lambda m, z: m.nanmin(z, axis=-1),
    lambda m, z: m.count_nonzero(z, axis=0),
    lambda m, z: m.ptp(z, axis=-1),
    lambda m, z: m.diff(z, n=0),
    lambda m, z: m.cumsum(z),
    lambda m, z: m.argmax(z, axis=-1),
)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
@pytest.mark.parametrize("case", range(len(ZERO_D)))
def test_zero_d_axis_as_numpy(case, dtype):
    """NumPy reads ``axis=0``/``-1`` (``np.argsort``'s default ``-1`` too) of a 0-d array as its one element
    (old: ``np.argsort(0-d)`` a DimensionError, the nan-reductions, ``ptp`` and ``count_nonzero`` out of bounds,
    ``np.diff(0-d, n=0)`` a DimensionError)."""
    call = ZERO_D[case]
    h = np.array(3, dtype=dtype)
    try:
        want = call(np, h)
    except TypeError:  # (np.ptp of bools: NumPy's subtract refuses them)
        with pytest.raises(TypeError):
            call(np, xp.asarray(h, device=_mesh({"a": 4})))
        return
    _same(call(np, xp.asarray(h, device=_mesh({"a": 4}))), want)


@pytest.mark.parametrize("name", ["nanmean", "nanstd", "nanvar"])
def test_zero_d_axis_of_the_nan_moments(name):
    """``np.nanmean``/``nanstd``/``nanvar(0-d, axis=0)``: NumPy's value for floats, its AxisError (an
    ``IndexError`` and ``ValueError``) for integers, which it runs as ``np.mean``."""
    mesh = _mesh({"a": 2, "b": 2})
    fn = getattr(np, name)
    _same(fn(xp.asarray(np.array(3.0), device=mesh), axis=0), fn(np.array(3.0), axis=0))
    with pytest.raises(IndexError):
        fn(xp.asarray(np.array(3), device=mesh), axis=-1)
    with pytest.raises((IndexError, ValueError)):
        np.sort(xp.asarray(np.array(3.0), device=mesh))  # (NumPy's AxisError: sort has no legacy 0-d reading)


# ------------------------------------------------------------------------------------- 3. np.average


@pytest.mark.parametrize(
    ("shape", "axis", "weights"),
    [((0, 1), -1, [0.0]), ((0, 3), 1, [1.0, -1.0, 0.0]), ((3, 0), 1, []), ((0, 2), 0, [])],
)
def test_average_zero_weight_sum_of_an_empty_array_raises(shape, axis, weights):
    """Old: an empty array with 1-D weights summing to 0 returned an empty array; NumPy raises ZeroDivisionError
    (it sums the 1-D weights, not their broadcast)."""
    with pytest.raises(ZeroDivisionError):
        np.average(np.ones(shape), axis=axis, weights=np.array(weights))
    with sa.default_mesh(_mesh({"a": 2, "b": 2})):
        x, w = xp.asarray(np.ones(shape)), xp.asarray(np.array(weights, dtype=np.float64))
        with pytest.raises(sa.ArgumentError, match="sum to zero"):
            np.average(x, axis=axis, weights=w)


def test_average_with_1d_weights_still_as_numpy():
    with sa.default_mesh(_mesh({"a": 2, "b": 2})):
        a, w = np.arange(12.0).reshape(4, 3), np.array([1.0, 2.0, 3.0])
        got, total = np.average(xp.asarray(a), axis=1, weights=xp.asarray(w), returned=True)
        want, want_total = np.average(a, axis=1, weights=w, returned=True)
        _same(got, want, close=True)
        _same(total, want_total)


# ------------------------------------------------------------------------------------- 4. bfloat16 joins


@pytest.mark.parametrize("end", ["prepend", "append"])
@pytest.mark.parametrize("value", [1, -3, True, 2.5])
def test_diff_bfloat16_with_python_scalars(end, value):
    """Old: ``xp.diff(bf16_x, prepend=1)`` raised NumPy's bare DTypePromotionError (int64 with bfloat16); a
    Python int is weak there (bfloat16), a float has NumPy's dtype (float64) as before."""
    with sa.default_mesh(_mesh({"a": 4})):
        h = np.array([[1.0, 2.0, 4.0], [8.0, 0.5, -1.0]], dtype=BF16)
        x = xp.asarray(h)
        got = xp.diff(x, **{end: value})
        ref = h.astype(np.float32)
        want = np.diff(ref, **{end: value})
        dtype = np.dtype(np.float64) if isinstance(value, float) else BF16
        assert got.dtype == dtype
        np.testing.assert_array_equal(np.asarray(got).astype(np.float32), want.astype(dtype).astype(np.float32))


def test_bfloat16_joins_without_a_common_dtype_are_typed():
    with sa.default_mesh(_mesh({"a": 2, "b": 2})):
        x, i = xp.astype(xp.asarray([1.0, 2.0, 3.0]), BF16), xp.asarray([1, 2, 3])
        for call in (
            lambda: xp.concat([x, i]),
            lambda: xp.stack([x, i]),
            lambda: np.concatenate([x, i]),
            lambda: xp.diff(x, prepend=np.int64(1)),
        ):
            with pytest.raises(sa.DTypeError, match="common dtype"):
                call()


# ------------------------------------------------------------------------------------- 5. bools, logaddexp2


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_xp_matrix_power_of_bools(n):
    """``xp.linalg.matrix_power`` of bool matrices: NumPy's bool result (the or of ands), stacks too."""
    rng = np.random.default_rng(n)
    a = rng.random((3, 4, 4)) < 0.35
    with sa.default_mesh(_mesh({"a": 2, "b": 2})):
        _same(xp.linalg.matrix_power(xp.asarray(a), n), np.linalg.matrix_power(a, n))


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 1000.0, -1000.0, 0.5])


@fuzz(50, ENV)
@given(data=st.data(), mesh=meshes())
def test_logaddexp2_as_numpy(data, mesh):
    """``np.logaddexp2`` (old: NumPy's TypeError) and ``xp.logaddexp2``: NumPy's dtype, its special values
    (equal infinities, NaN), values within 2 ulps of ``max(|x1|, |x2|, 1)``; a Python scalar operand is weak."""
    dtype = data.draw(st.sampled_from(["float64", "float32", "float16", "int8", "int64", "bool"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n = data.draw(st.sampled_from([0, 1, 5, 12]))
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):  # (1e300 is inf in float32 and float16)
            a = np.concatenate([rng.standard_normal(n) * 20, SPECIAL[rng.integers(0, len(SPECIAL), 4)]]).astype(dtype)
            b = np.concatenate([a[:n] + rng.standard_normal(n) * 2, SPECIAL[rng.integers(0, len(SPECIAL), 4)]])
            b = b.astype(dtype)
    else:
        a, b = (
            rng.integers(0 if dtype == "bool" else -5, 2 if dtype == "bool" else 5, n + 4).astype(dtype)
            for _ in range(2)
        )
    x, y = data.draw(placed(a, mesh)), data.draw(placed(b, mesh))
    other = data.draw(st.sampled_from(["array", "int", "float"]))
    yy, bb = (y, b) if other == "array" else (2, 2) if other == "int" else (1.5, 1.5)
    with np.errstate(all="ignore"):
        want = np.logaddexp2(a, bb)
    with _no_gather():
        got = np.logaddexp2(x, yy)
        also = xp.logaddexp2(x, yy)
    g = np.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape
    np.testing.assert_array_equal(g, np.asarray(also))
    scale = np.fmax(np.fmax(np.abs(a), np.abs(np.asarray(bb))).astype(np.float64), 1.0)
    with np.errstate(all="ignore"):  # (an infinite operand, a finite result: exactly the other operand)
        tol = np.nan_to_num(2 * np.spacing(scale.astype(want.dtype)).astype(np.float64), nan=0.0)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(g[~finite], want[~finite])
    assert np.all(np.abs(g[finite].astype(np.float64) - want[finite].astype(np.float64)) <= tol[finite])


def test_logaddexp2_dtypes_and_gradient():
    mesh = _mesh({"a": 2, "b": 2})
    with sa.default_mesh(mesh):
        f32 = xp.asarray(np.array([1.0, 2.0], np.float32))
        assert xp.logaddexp2(f32, np.float64(1.0)).dtype == np.float64  # (a NumPy scalar is not weak)
        assert xp.logaddexp2(f32, 1).dtype == np.float32
        assert np.logaddexp2(xp.astype(f32, BF16), 1.0).dtype == np.float32  # (NumPy's loop: ml_dtypes')
        _same(xp.logaddexp2(xp.astype(f32, BF16), xp.astype(f32, BF16)), np.logaddexp2(*[np.array([1, 2], BF16)] * 2))
        with pytest.raises(sa.DTypeError, match="logaddexp2"):
            np.logaddexp2(xp.asarray([1j]), 1.0)
        a, b = np.array([1.0, 2.0, 3.0, -np.inf]), np.array([1.0, 0.0, 5.0, -np.inf])
        ga, gb = sa.grad(lambda t: xp.sum(xp.logaddexp2(t[0], t[1])))((xp.asarray(a), xp.asarray(b)))
        with np.errstate(invalid="ignore"):
            want = np.where(a == b, 0.5, 2.0**a / (2.0**a + 2.0**b))
        np.testing.assert_allclose(np.asarray(ga), want)
        np.testing.assert_allclose(np.asarray(gb), 1 - want)


@pytest.mark.parametrize("end", ["prepend", "append"])
@pytest.mark.parametrize(
    ("dtype", "value"),
    [("int8", np.int8(1)), ("float16", np.float32(1.5)), ("int8", np.array(3, np.int16)), ("int8", 1)],
)
def test_np_diff_numpy_scalar_ends_keep_their_dtype(end, dtype, value):
    """Old: ``np.diff(int8_x, prepend=np.int8(1))`` was int64 (the NumPy scalar made a Python int)."""
    a = np.array([[1, 4, 2], [0, 3, 3]], dtype=dtype)
    with sa.default_mesh(_mesh({"a": 2, "b": 2})):
        _same(np.diff(xp.asarray(a), **{end: value}), np.diff(a, **{end: value}))


SPACING_VALUES = np.array(
    [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, -3.5, 2.0**-1022, 65504, -6e-8, 1e-5, 0.1, -0.3]
)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "int8", "int64", "bool"])
@pytest.mark.parametrize("name", ["fabs", "spacing"])
def test_fabs_and_spacing_as_numpy(name, dtype):
    """``np.fabs``/``np.spacing`` (old: NumPy's TypeError, no counterpart) and ``xp.fabs``/``xp.spacing``: NumPy's
    dtype and values bit for bit (float16's step up, ml_dtypes' bfloat16 -0.0 stepping down), on a split axis."""
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    with np.errstate(all="ignore"):
        a = SPACING_VALUES.astype(dt) if dt.kind in "fV" or dt == BF16 else np.array([0, 1, -3, 5, 1, 0]).astype(dt)
        want = getattr(np, name)(a)
    mesh = _mesh({"a": 3, "b": 2})
    x = as_kind(sa.asarray(a, dims=("dim0",), mesh=mesh, layout={"dim0": ("a", "b")}), xp.Array)
    with np.errstate(over="ignore"):  # (spacing of float16's largest number: inf, with NumPy's warning)
        results = (getattr(np, name)(x), getattr(xp, name)(x))
    for got in results:
        g = np.asarray(got)
        assert g.dtype == want.dtype
        np.testing.assert_array_equal(g.astype(np.float64), want.astype(np.float64))  # (bfloat16's NaN: as float)
        real = ~np.isnan(want.astype(np.float64))
        np.testing.assert_array_equal(np.signbit(g.astype(np.float64))[real], np.signbit(want.astype(np.float64))[real])


def test_fabs_and_spacing_refuse_complex_and_fabs_differentiates():
    with sa.default_mesh(_mesh({"a": 2, "b": 2})):
        for fn in (np.fabs, np.spacing, xp.fabs, xp.spacing):
            with pytest.raises(sa.DTypeError, match="no such loop"):
                fn(xp.asarray([1j, 2.0]))
        g = sa.grad(lambda t: xp.sum(xp.fabs(t)))(xp.asarray([-1.0, 2.0, -0.5]))
        np.testing.assert_array_equal(np.asarray(g), [-1.0, 1.0, -1.0])


def test_result_type_agrees_with_the_ops_and_types_its_refusals():
    """``xp.result_type(bfloat16, int64)``: NumPy's bare ``DTypePromotionError`` once, then a ``sa.DTypeError``; now
    float64, the dtype ``bf16 + int64`` has always had (round 14); a dtype shardarray lacks is a ``sa.DTypeError``
    (a ``TypeError``) naming it."""
    assert xp.result_type("bfloat16", xp.int64) == xp.float64
    with pytest.raises(sa.DTypeError, match="datetime64"):
        xp.result_type("datetime64[s]", xp.int64)
