"""Round-14 fuzz of random numbers and creation functions on every layout.

``sa.random``: for a seed, every device's block equals the same block of the one-device array on the test meshes
(1, 2x2, 4, 2x2x2, 3x2, uneven and empty blocks), calls repeat, the meta backend gives the blocks' shapes, the
moments and bounds are the documented ones (uniform half-open in every float dtype, randint's high exclusive),
draws of other seeds, functions and indices are uncorrelated, and bad arguments are typed errors;
``sa.nn.init_transformer`` gives the same parameters under every strategy's layout. Creation: ``arange``,
``linspace``, ``meshgrid``, ``asarray``/``full`` of scalars, the ``*_like`` functions, ``tril``/``triu`` of any
layout, against NumPy on the gathered value. Regressions of the bugs it found close the file.

``FUZZ14_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import host, layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.layout import block_bounds

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ENV = "FUZZ14_EXAMPLES"
DIMS = ("i", "j", "k")
SIDES = (0, 1, 2, 3, 5, 7)
_META: dict = {}


def _meta(mesh):
    """The meta-backend mesh of ``mesh``'s shape (built once)."""
    key = tuple(mesh.shape.items())
    if key not in _META:
        _META[key] = sa.Mesh(dict(mesh.shape), backend="meta")
    return _META[key]


def _sizes(data, most=3):
    n = data.draw(st.integers(0, most))
    return {d: data.draw(st.sampled_from(SIDES)) for d in DIMS[:n]}


def _bits(a) -> tuple:
    a = np.ascontiguousarray(host(a))
    return a.shape, a.dtype, a.tobytes()


def _blocks_match(x, want: np.ndarray) -> None:
    """Every device's block of ``x`` is ``want``'s block at its global bounds (replicas included)."""
    for d, bounds in enumerate(block_bounds(x.mesh, x.spec)):
        idx = tuple(slice(lo, hi) for lo, hi in bounds)
        assert _bits(x.shards[d]) == _bits(want[idx]), (d, bounds)


# ============================================================================================= sa.random

RANDOM = {
    "uniform": (sa.random.uniform, ("float32", "float64", "float16", "bfloat16"), {"low": -2.0, "high": 3.0}),
    "normal": (sa.random.normal, ("float32", "float64", "float16", "bfloat16"), {"mean": 1.0, "std": 2.0}),
    "randint": (sa.random.randint, ("int64", "int32", "int8", "uint8", "uint64"), {"low": -3, "high": 100}),
}


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_random_blocks_are_the_same_on_every_mesh_and_layout(data):
    mesh = data.draw(meshes())
    sizes = _sizes(data)
    lay = data.draw(layouts(mesh, tuple(sizes)))
    name = data.draw(st.sampled_from(sorted(RANDOM)))
    fn, dtypes, kw = RANDOM[name]
    dt = data.draw(st.sampled_from(dtypes))
    if dt.startswith("u"):
        kw = {"low": 0, "high": 200}
    seed = data.draw(st.sampled_from((0, 1, 7, -1, 2**63, 2**64 - 1)))
    got = fn(mesh, sizes, seed=seed, dtype=dt, layout=lay, **kw)
    want = fn(_mesh({"d": 1}), sizes, seed=seed, dtype=dt, **kw).numpy()
    assert got.layout == lay and got.dtype == want.dtype
    _blocks_match(got, want)
    assert _bits(fn(mesh, sizes, seed=seed, dtype=dt, layout=lay, **kw)) == _bits(want)  # reproducible
    meta = fn(_meta(mesh), sizes, seed=seed, dtype=dt, layout=lay, **kw)
    assert meta.dtype == got.dtype and [s.shape for s in meta.shards] == [s.shape for s in got.shards]


N = 30_000


def test_uniform_moments_and_half_open_bounds_in_every_float_dtype():
    mesh = _mesh({"p": 3, "q": 2})
    for dt in ("float64", "float32", "float16", "bfloat16"):
        for low, high in ((0.0, 1.0), (-2.0, 3.0), (5.0, 2.0)):
            u = sa.random.uniform(mesh, {"i": N}, low, high, seed=11, dtype=dt, layout={"i": ("p", "q")})
            v = u.numpy().astype(np.float64)
            lo, hi = min(low, high), max(low, high)
            assert v.min() >= lo and v.max() <= hi
            assert not (v == high).any(), (dt, low, high)  # half-open: high is never drawn (not even rounded onto)
            span = hi - lo
            assert abs(v.mean() - (low + high) / 2) < 5 * span / math.sqrt(12 * N), (dt, v.mean())
            assert abs(v.var() / (span**2 / 12) - 1) < 0.05, (dt, v.var())


def test_normal_moments():
    x = sa.random.normal(_mesh({"x": 2, "y": 2, "z": 2}), {"i": 150, "j": 200}, 1.5, 2.0, seed=4, dtype="float64")
    z = (x.numpy().ravel() - 1.5) / 2.0
    assert abs(z.mean()) < 5 / math.sqrt(z.size) and abs(z.std() - 1) < 0.02
    assert abs((z**3).mean()) < 0.06 and abs((z**4).mean() - 3) < 0.15
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.01


def test_randint_bounds_are_low_inclusive_high_exclusive_and_uniform():
    mesh = _mesh({"all": 4})
    t = sa.random.randint(mesh, {"i": N}, -3, 7, seed=2, layout={"i": "all"}).numpy()
    counts = np.bincount(t + 3, minlength=10)
    assert t.min() == -3 and t.max() == 6 and counts.size == 10
    chi2 = (((counts - N / 10) ** 2) / (N / 10)).sum()
    assert chi2 < 40, counts  # 9 degrees of freedom: 40 is far in the tail
    u = sa.random.randint(mesh, {"i": 2000}, 5, seed=3, dtype="uint8").numpy()  # high None: [0, low)
    assert u.dtype == np.uint8 and set(np.unique(u)) == set(range(5))


def test_draws_of_other_seeds_functions_and_indices_are_uncorrelated():
    mesh = _mesh({"row": 2, "col": 2})
    draw = {
        "u0": sa.random.uniform(mesh, {"i": N}, seed=0, dtype="float64"),
        "u1": sa.random.uniform(mesh, {"i": N}, seed=1, dtype="float64", layout={"i": "col"}),
        "n0": sa.random.normal(mesh, {"i": N}, seed=0, dtype="float64", layout={"i": ("row", "col")}),
        "r0": sa.random.randint(mesh, {"i": N}, 0, 1000, seed=0).astype("float64"),
    }
    vals = {k: v.numpy() for k, v in draw.items()}
    bound = 5 / math.sqrt(N)
    keys = sorted(vals)
    for a in range(len(keys)):
        for b in range(a + 1, len(keys)):
            for lag in (0, 1, 7):  # (a seed's draw is no shifted copy of another's)
                x, y = vals[keys[a]], vals[keys[b]]
                assert abs(np.corrcoef(x[lag:], y[: N - lag])[0, 1]) < bound, (keys[a], keys[b], lag)
    for k, v in vals.items():  # neighbouring indices
        assert abs(np.corrcoef(v[1:], v[:-1])[0, 1]) < bound, k


M22 = {"row": 2, "col": 2}


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda m: sa.random.uniform(m, {"i": 3}, dtype="int32"), sa.DTypeError, "not a float dtype"),
        (lambda m: sa.random.normal(m, {"i": 3}, dtype="complex64"), sa.DTypeError, "not a float dtype"),
        (lambda m: sa.random.normal(m, {"i": 3}, dtype="float128x"), sa.DTypeError, "unknown dtype"),
        (lambda m: sa.random.randint(m, {"i": 3}, 0, 5, dtype="float32"), sa.DTypeError, "not an integer dtype"),
        (lambda m: sa.random.randint(m, {"i": 3}, 0, 5, dtype="bool"), sa.DTypeError, "not an integer dtype"),
        (lambda m: sa.random.randint(m, {"i": 3}, 5, 2), sa.ArgumentError, "high > low"),
        (lambda m: sa.random.randint(m, {"i": 3}, 0), sa.ArgumentError, "high > low"),
        (lambda m: sa.random.randint(m, {"i": 3}, -1, 5, dtype="uint8"), sa.ArgumentError, "out of bounds for uint8"),
        (lambda m: sa.random.uniform(m, {"i": 3}, 0.0, math.inf), sa.ArgumentError, "finite"),
        (lambda m: sa.random.uniform(m, {"i": 3}, 0.0, 1e6, dtype="float16"), sa.ArgumentError, "overflows float16"),
        (lambda m: sa.random.normal(m, {"i": 3}, std=-1.0), sa.ArgumentError, "std >= 0"),
        (lambda m: sa.random.normal(m, {"i": -1}), sa.DimensionError, "must be >= 0"),
        (lambda m: sa.random.normal(m, {"i": 2.0}), sa.DimensionError, "integer"),
        (lambda m: sa.random.normal(m, [3]), sa.DimensionError, "dict"),
        (lambda m: sa.random.normal(m, {"i": 3}, seed=1.5), sa.DTypeError, "seed must be an integer"),
        (lambda m: sa.random.normal(m, {"i": 3}, seed=2**64), sa.ArgumentError, "64-bit seeds"),
        (lambda m: sa.random.normal(m, {"i": 3}, layout={"i": "nope"}), sa.LayoutError, "nope"),
        (lambda m: sa.random.normal(dict(M22), {"i": 3}), sa.MeshError, "sa.Mesh"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_random_bad_arguments_are_typed_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(_mesh(M22))


STRATEGY_MESHES = [
    ("replicated", {"p": 3, "q": 2}),
    ("data", {"x": 2, "y": 2, "z": 2}),
    ("megatron", {"data": 3, "model": 2}),
    ("megatron", {"model": 4}),
    ("mesh2d", {"rows": 2, "cols": 3}),
    ("tesseract", {"row": 2, "col": 2, "dep": 2}),
]


def test_init_transformer_gives_the_same_parameters_under_every_strategy():
    """The training example compares strategies: their initial parameters are the same global values (uneven
    blocks included: d_model 6 over 4 devices, vocab 13 over 3)."""
    cfg = sa.nn.TransformerConfig(vocab=13, d_model=6, heads=3, d_kv=2, d_ff=10, n_layers=2, seq_len=5)
    for dt in ("float32", "bfloat16"):
        ref = {k: v.numpy() for k, v in sa.nn.init_transformer(cfg, _mesh({"d": 1}), seed=3, dtype=dt).items()}
        for strategy, shape in STRATEGY_MESHES:
            params = sa.nn.init_transformer(cfg, _mesh(shape), strategy=strategy, seed=3, dtype=dt)
            assert sorted(params) == sorted(ref)
            assert strategy in ("replicated", "data") or any(p.layout for p in params.values()), strategy
            for k, p in params.items():
                _blocks_match(p, ref[k])
        other = sa.nn.init_transformer(cfg, _mesh({"d": 1}), seed=4, dtype=dt)
        assert not np.array_equal(other["embed"].numpy(), ref["embed"])


# ============================================================================================= creation


def _positional(data, mesh, host_value):
    """``host_value`` as a positional array of a drawn layout (any dim over any axes, as ``sa.asarray`` makes)."""
    dims = tuple(f"dim{k}" for k in range(host_value.ndim))
    lay = data.draw(layouts(mesh, dims))
    return as_kind(sa.asarray(host_value, dims=dims, mesh=mesh, layout=lay), xp.Array)


STARTS = (0, 1, -3, 0.5, -2.25, 1e-3, 10)
STEPS = (1, 2, -1, -3, 0.1, -0.1, 0.3, 0.4, -0.7, 2.5, 1 / 3)


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_arange_is_numpys(data):
    """Float64 values are NumPy's bit for bit (its second value ``start + step``, then steps of the difference of
    the first two); narrower floats are those values rounded once, integer dtypes truncate them (documented)."""
    mesh = data.draw(meshes())
    start, stop = data.draw(st.sampled_from(STARTS)), data.draw(st.sampled_from(STARTS + (-7.5, 3)))
    step = data.draw(st.sampled_from(STEPS))
    want = np.arange(start, stop, step)
    with sa.default_mesh(mesh):
        got = xp.arange(start, stop, step)
        assert _bits(got) == _bits(want), (start, stop, step, got.numpy(), want)
        dt = data.draw(st.sampled_from(("float32", "float16", "bfloat16", "int64", "int16")))
        if np.dtype(dt).kind == "i":
            expected = np.trunc(want).astype(dt) if want.dtype.kind == "f" else want.astype(dt)
        else:
            expected = want.astype(dt)
        assert _bits(xp.arange(start, stop, step, dtype=dt)) == _bits(expected), dt


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_linspace_is_numpys(data):
    """Python and NumPy-scalar endpoints (NEP 50: an np.float32 endpoint computes in float32), endpoint, num 0/1,
    float, complex, integer (floored, as NumPy 2) and bool dtypes."""
    mesh = data.draw(meshes())
    kind = data.draw(st.sampled_from((int, float, np.float32, np.float64, np.int16)))
    a, b = (kind(data.draw(st.sampled_from((0, -5, 3, 1, 7, -2)))) for _ in range(2))
    num, ep = data.draw(st.sampled_from((0, 1, 2, 4, 5, 9))), data.draw(st.booleans())
    dt = data.draw(st.sampled_from((None, "float32", "float64", "complex64", "int64", "int8", "uint8", "bool")))
    kw = {} if dt is None else {"dtype": dt}
    with sa.default_mesh(mesh):
        if dt == "uint8" and min(a, b) < 0:
            with pytest.raises(sa.CastError, match="does not fit uint8"):
                xp.linspace(a, b, num, endpoint=ep, **kw)
            return
        got = xp.linspace(a, b, num, endpoint=ep, **kw)
        want = np.linspace(a, b, num, endpoint=ep, **kw)
        assert _bits(got) == _bits(want), (a, b, num, ep, dt, got.numpy(), want)


@fuzz(25, ENV)
@given(st.data())
def test_fuzz_like_functions_keep_dtype_layout_and_kind(data):
    """``xp.*_like`` and ``np.*_like`` of a positional array of any layout: its dtype (or the one given), its
    layout, positional; ``np.*_like`` of a named array stays named."""
    mesh = data.draw(meshes())
    shape = tuple(data.draw(st.sampled_from(SIDES)) for _ in range(data.draw(st.integers(0, 3))))
    src = data.draw(st.sampled_from(("int32", "float32", "bool", "complex64", "uint8")))
    h = (np.arange(math.prod(shape)).reshape(shape) % 3).astype(src)
    x = _positional(data, mesh, h)
    named = sa.asarray(h, dims=x.dims, mesh=mesh, layout=x.layout)
    fn = data.draw(st.sampled_from(("zeros_like", "ones_like", "empty_like", "full_like")))
    dt = data.draw(st.sampled_from((None, "float64", "int8")))
    args = (2,) if fn == "full_like" else ()
    kw = {} if dt is None else {"dtype": dt}
    want = getattr(np, fn)(h, *args, **kw)
    for got in (getattr(xp, fn)(x, *args, **kw), getattr(np, fn)(x, *args, **kw)):
        assert isinstance(got, xp.Array) and got.layout == x.layout and got.dtype == want.dtype
        if fn != "empty_like":
            assert _bits(got) == _bits(want)
    got = getattr(np, fn)(named, *args, **kw)
    assert not isinstance(got, xp.Array) and got.layout == named.layout and got.dims == named.dims
    assert got.dtype == want.dtype


@fuzz(25, ENV)
@given(st.data())
def test_fuzz_named_creation_on_any_layout(data):
    """``sa.full``/``zeros``/``ones`` (dtype from the value: float32 for a Python float, else NumPy's) and
    ``sa.asarray`` of host data and of another array (relaid out, renamed, cast) on every layout."""
    mesh = data.draw(meshes())
    sizes = _sizes(data)
    lay = data.draw(layouts(mesh, tuple(sizes)))
    shape = tuple(sizes.values())
    fill = data.draw(st.sampled_from((1.5, 3, True, 2j, np.float32(-0.5), np.int8(-3), 2**63)))
    dt = "float32" if type(fill) is float else np.asarray(fill).dtype
    x = sa.full(mesh, sizes, fill, layout=lay)
    assert x.layout == lay
    _blocks_match(x, np.full(shape, fill, dtype=dt))
    for fn, value in ((sa.zeros, 0), (sa.ones, 1)):
        d = data.draw(st.sampled_from((None, "int16", "bfloat16", "complex64")))
        _blocks_match(fn(mesh, sizes, dtype=d, layout=lay), np.full(shape, value, dtype=np.dtype(d or "float32")))
    h = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    y = sa.asarray(h, dims=tuple(sizes), mesh=mesh, layout=lay)
    _blocks_match(y, h)
    other = data.draw(layouts(mesh, tuple(sizes)))
    names = tuple(d.upper() for d in sizes)
    z = sa.asarray(y, dims=names, layout={n: other[d] for d, n in zip(sizes, names) if d in other}, dtype="float64")
    assert z.dims == names and z.dtype == np.float64
    _blocks_match(z, h.astype(np.float64))


@fuzz(25, ENV)
@given(st.data())
def test_fuzz_tril_triu_of_any_layout(data):
    mesh = data.draw(meshes())
    shape = tuple(data.draw(st.sampled_from(SIDES)) for _ in range(data.draw(st.integers(2, 3))))
    h = np.arange(1, math.prod(shape) + 1).reshape(shape).astype(data.draw(st.sampled_from(("int64", "float32"))))
    x = _positional(data, mesh, h)
    k = data.draw(st.sampled_from((-9, -2, -1, 0, 1, 3, 9)))
    for fn in ("tril", "triu"):
        got = getattr(xp, fn)(x, k=k)
        assert got.layout == x.layout and _bits(got) == _bits(getattr(np, fn)(h, k)), (fn, k)


@fuzz(25, ENV)
@given(st.data())
def test_fuzz_asarray_dtype_and_copy_semantics(data):
    """Nested lists, scalars and NumPy arrays get NumPy 2's dtype; host data is copied; an array is itself unless
    ``copy=True`` or a cast."""
    mesh = data.draw(meshes())
    pick = data.draw(st.sampled_from(("ints", "floats", "mixed", "bools", "complex", "scalar", "numpy", "big")))
    obj = {
        "ints": [[1, 2, 3], [4, 5, 6]],
        "floats": [0.5, -1.5, 2.0, 3.25, 4.0],
        "mixed": [[True, 2], [3.5, 4]],
        "bools": [True, False, True],
        "complex": [1 + 2j, 3.0],
        "scalar": data.draw(st.sampled_from((3, 2.5, True, 1j, np.float32(1.5), np.int8(-3), 2**63))),
        "numpy": np.arange(7, dtype=data.draw(st.sampled_from(("float16", "int16", "uint32", "complex128")))),
        "big": [2**63, 5],
    }[pick]
    want = np.asarray(obj)
    with sa.default_mesh(mesh):
        got = xp.asarray(obj)
        assert _bits(got) == _bits(want), (pick, obj)
        if isinstance(obj, np.ndarray):
            before = obj.copy()
            obj[0] = 99
            assert _bits(got) == _bits(before)  # a copy: the caller's later writes do not reach it
        assert xp.asarray(got) is got
        dup = xp.asarray(got, copy=True)
        assert dup is not got and _bits(dup) == _bits(got) and dup.layout == got.layout
        assert _bits(xp.from_dlpack(want)) == _bits(want)


# ============================================================================================= regressions


def test_arange_float64_is_numpys_bit_for_bit():
    """xp.arange(1, 0, -0.1) computed start + i * step and differed from NumPy's float64 values by an ulp
    (NumPy steps by (start + step) - start); np.arange(..., like=x) dispatches here."""
    with sa.default_mesh(_mesh({"p": 3, "q": 2})):
        for args in ((1, 0, -0.1), (0.5, 3.7, 0.4), (-3, 7, 0.3), (0.1, 2.0, 0.1)):
            want = np.arange(*args)
            assert _bits(xp.arange(*args)) == _bits(want), args
            assert _bits(np.arange(*args, like=xp.ones(1))) == _bits(want), args


def test_arange_uint64_with_a_negative_step_or_values_past_int64():
    """arange of uint64 raised a bare OverflowError for a negative step (np.uint64(-1)) and for a start past
    int64 with values falling below it (start + i * step in int64)."""
    with sa.default_mesh(_mesh({"all": 4})):
        for args in ((2**64 - 1, 2**64 - 6, -1), (2**63 + 1, 2**63 - 3, -1), (2**63 - 2, 2**63 + 3, 2), (5, 0, -2)):
            want = np.arange(*args, dtype=np.uint64)
            assert _bits(xp.arange(*args, dtype="uint64")) == _bits(want), args
        with pytest.raises(sa.CastError, match="does not fit uint64"):
            xp.arange(2, -2, -1, dtype="uint64")


def test_arange_and_linspace_of_an_integer_past_float64_are_argument_errors():
    """A Python integer beyond float64 raised a bare OverflowError (float(start))."""
    with sa.default_mesh(_mesh({"d": 1})):
        with pytest.raises(sa.ArgumentError, match="finite float64"):
            xp.arange(10**400, 10**400 + 3, 0.5)
        with pytest.raises(sa.ArgumentError, match=r"stop=10000000\.\.\.\(401 digits\) is beyond"):
            xp.linspace(0, 10**400, 3)
        assert _bits(xp.linspace(0, 2**70, 3)) == _bits(np.linspace(0.0, float(2**70), 3))


def test_linspace_integer_and_bool_dtypes_are_numpys():
    """xp.linspace refused integer dtypes (DTypeError); NumPy 2 floors the values, and casts to bool."""
    with sa.default_mesh(_mesh({"row": 2, "col": 2})):
        for a, b, num, dt in ((0, 10, 4, "int64"), (-5, 5, 4, "int32"), (-5, 5, 11, "int8"), (0, 1, 3, "bool")):
            assert _bits(xp.linspace(a, b, num, dtype=dt)) == _bits(np.linspace(a, b, num, dtype=dt))
        with pytest.raises(sa.CastError, match="does not fit int8"):
            xp.linspace(0, 1000, 3, dtype="int8")  # NumPy wraps it to [0, -12, -24]
        with pytest.raises(sa.CastError, match="cannot hold"):
            xp.linspace(0, math.inf, 3, dtype="int64")
        with pytest.raises(sa.DTypeError, match="complex"):
            xp.linspace(0, 1j, 3, dtype="int64")


def test_linspace_of_numpy_float32_endpoints_is_float32_as_numpy():
    """A NumPy scalar endpoint keeps its dtype (NEP 50): float32 endpoints computed in float64 gave float64."""
    with sa.default_mesh(_mesh({"p": 3, "q": 2})):
        for a, b in ((np.float32(0), np.float32(1)), (np.float32(-2), 5), (np.complex64(1j), 2)):
            want = np.linspace(a, b, 7)
            assert _bits(xp.linspace(a, b, 7)) == _bits(want), (a, b)


def test_arange_and_linspace_take_bfloat16():
    """bfloat16 (offered by every other creation function) was refused by arange and linspace."""
    with sa.default_mesh(_mesh({"all": 4})):
        got = xp.arange(0, 2, 0.25, dtype="bfloat16")
        assert got.dtype.name == "bfloat16" and _bits(got) == _bits(np.arange(0, 2, 0.25).astype(got.dtype))
        got = xp.linspace(-1, 1, 9, dtype="bfloat16")
        assert got.dtype.name == "bfloat16" and _bits(got) == _bits(np.linspace(-1, 1, 9).astype(got.dtype))


def test_meshgrid_of_several_dtypes_keeps_each():
    """xp.meshgrid (and so np.meshgrid) refused inputs of different dtypes; NumPy keeps each input's dtype."""
    hosts = [np.arange(3), np.arange(2.0), np.arange(4, dtype=np.float32)]
    with sa.default_mesh(_mesh({"x": 2, "y": 2, "z": 2})):
        xs = [xp.asarray(h) for h in hosts]
        for indexing in ("xy", "ij"):
            for got in (xp.meshgrid(*xs, indexing=indexing), np.meshgrid(*xs, indexing=indexing)):
                want = np.meshgrid(*hosts, indexing=indexing)
                assert [_bits(g) for g in got] == [_bits(w) for w in want]


def test_python_integers_past_int64_are_uint64_as_numpy():
    """xp.asarray(2**63) and xp.full(2, 2**63) raised CastError; NumPy 2 gives uint64 (as xp.asarray([2**63]))."""
    with sa.default_mesh(_mesh({"row": 2, "col": 2})):
        assert _bits(xp.asarray(2**63)) == _bits(np.asarray(2**63))
        assert _bits(xp.full(3, 2**64 - 1)) == _bits(np.full(3, 2**64 - 1))
        with pytest.raises(sa.CastError, match="out of range"):
            xp.asarray(2**64)
