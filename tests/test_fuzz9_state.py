"""State across sessions, fuzzed against NumPy: checkpoints saved on one mesh, layout, kind (named or positional)
and backend and loaded on another, in another dtype (``casting=``); training resumed from a checkpoint (Adam
and SGD moments, step counts, float32 master copies of float16/bfloat16 parameters, the dynamic loss scale)
giving parameters bit-identical to training without the interruption; and the statistics extras (``average``
with weights, ``cov``/``corrcoef`` with ``ddof``/``bias``/``rowvar`` and weights, ``histogram``/``histogram2d``/
``bincount`` with weights, ``nanmean``/``nanvar``/``nanstd`` with ``ddof`` and all-NaN slices, ``ptp``,
``median`` of even, odd and empty slices, every ``quantile`` method, infinities included) on split arrays:
values, dtypes, NumPy's RuntimeWarnings and errors. Meshes 1, 2x2, 4, 2x2x2 and 3x2 with uneven and empty
blocks. Regressions of the bugs this round found open the file.

``FUZZ9_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import sys
import warnings

import ml_dtypes
import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import HYPOTHESIS_SHAPES, layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api import Array

ENV = "FUZZ9_EXAMPLES"
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")  # (unsafe casts)
BF16 = np.dtype(ml_dtypes.bfloat16)
INF = np.inf
METHODS = (
    "linear",
    "lower",
    "higher",
    "midpoint",
    "nearest",
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "median_unbiased",
    "normal_unbiased",
)


def bits(a) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def same_bits(got, want, zeros_signed: bool = True) -> None:
    """``got`` is NumPy's ``want``: dtype, shape and every bit (NaN payloads aside; signed zeros unless told)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if not zeros_signed:
        got, want = got + got.dtype.type(0), want + want.dtype.type(0)
    nan = np.isnan(want) if want.dtype.kind == "f" else np.zeros(want.shape, bool)
    assert np.array_equal(np.isnan(got) if got.dtype.kind == "f" else nan, nan), (got, want)
    assert bits(np.where(nan, 0, got)) == bits(np.where(nan, 0, want)), (got, want)


def warned(fn):
    """``(result, the messages of the RuntimeWarnings it raised)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, {str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)}


# ================================================================================= regressions of the bugs found


def test_named_checkpoint_loads_into_positional_target_by_position(tmp_path):
    """Bug: weights saved from named arrays (dims ``('batch', 'model')``) did not load into positional targets of
    the same shape (dims ``dim0, dim1``): a CheckpointError about the dims. Now a positional target takes them by
    position, as NumPy's ``np.load`` of an ``.npz``, and stays positional; a named target takes a positional save
    under its own dims; between named arrays the names must still agree; a shape that differs names both."""
    mesh = cached_mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(3, 4)
    w = sa.asarray(a, dims=("batch", "model"), mesh=mesh, layout={"batch": "row", "model": "col"})
    sa.checkpoint.save(tmp_path / "named", {"w": w, "step": 3})
    got = sa.checkpoint.load(tmp_path / "named", {"w": xp.zeros((3, 4), device=mesh), "step": 0})
    assert type(got["w"]) is Array and got["w"].dims == ("dim0", "dim1") and got["step"] == 3
    same_bits(got["w"].numpy(), a)
    sa.checkpoint.save(tmp_path / "pos", {"w": xp.asarray(a, device=mesh)})
    other = sa.zeros(cached_mesh({"all": 4}), {"i": 3, "j": 4}, dtype="float64", layout={"j": "all"})
    back = sa.checkpoint.load(tmp_path / "pos", {"w": other})
    assert type(back["w"]) is sa.ShardArray and back["w"].dims == ("i", "j") and back["w"].layout == {"j": ("all",)}
    same_bits(back["w"].numpy(), a)
    with pytest.raises(sa.CheckpointError, match=r"saved with dims \('batch', 'model'\).*\('i', 'j'\)"):
        sa.checkpoint.load(tmp_path / "named", {"w": other, "step": 0})
    with pytest.raises(sa.CheckpointError, match=r"'w'.*\{'batch': 3, 'model': 4\}.*\{'dim0': 4, 'dim1': 3\}"):
        sa.checkpoint.load(tmp_path / "named", {"w": xp.zeros((4, 3), device=mesh), "step": 0})


def test_partial_tree_loads_from_an_exported_file(tmp_path):
    """Bug: ``load`` of an ``export_safetensors`` file into a partial target (the params of a checkpoint that
    also holds the optimizer state) raised "an extra saved entry", though the docstring says such a file may hold
    more. Now the target's arrays are read by tree path and its plain values come from the export."""
    mesh = cached_mesh({"row": 2, "col": 2})
    w = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
    sa.checkpoint.save(tmp_path / "ck", {"params": {"w": w, "step": 5}, "opt": {"m": w * 2.0}})
    file = sa.checkpoint.export_safetensors(tmp_path / "ck", tmp_path / "all.safetensors")
    got = sa.checkpoint.load(file, {"params": {"w": xp.zeros((2, 3), device=mesh), "step": 0}})
    assert got["params"]["step"] == 5 and type(got["params"]["w"]) is Array
    same_bits(got["params"]["w"].numpy(), np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("bad", ["float16", "bfloat16", "float64"])
@pytest.mark.parametrize(
    "make", [lambda: sa.optim.Adam(1e-3), lambda: sa.optim.SGD(0.1, momentum=0.9)], ids=["adam", "sgd"]
)
def test_master_copy_of_another_dtype_is_refused(make, bad):
    """Bug: a master copy narrower than ``master_dtype`` in the state (a checkpoint loaded into a float16 target
    casts float32 -> float16 under ``same_kind``) was silently widened back to float32 by ``update``, its lost
    precision hidden; a float64 one silently rounded. Now ``DTypeError`` names the entry, both dtypes and the fix."""
    mesh = cached_mesh({"row": 2, "col": 2})
    w = {"w": sa.full(mesh, {"i": 4, "j": 3}, 0.5, dtype="float16", layout={"i": "row"})}
    opt = make()
    state = opt.init(w)
    state["master"] = {k: v.astype(bad) for k, v in state["master"].items()}
    with pytest.raises(sa.DTypeError, match=rf"state\['master'\]\[\"\['w'\]\"\] has dtype {bad}.*float32.*opt.init"):
        opt.update(w, w, state)


QUANTILE_CASES = [  # (rows of one length: one call per length)
    [[-0.0]],
    [[-INF, INF], [INF, INF], [-INF, -INF], [1.0, INF], [-INF, 1.0], [-0.0, 1.0], [-0.0, -0.0]],
    [[1.0, 2.0, INF], [1.0, INF, INF], [-INF, -INF, 1.0]],
    [[1.0, np.nan, INF, INF]],
    [[3.0, -0.0, 2.0, INF, -INF, 5.0]],
]


@pytest.mark.parametrize("shape", [{"p": 3, "q": 2}], ids=str)  # (uneven blocks; the fuzzer takes other meshes)
def test_quantiles_with_infinities_are_numpys_bit_for_bit(shape):
    """Bug: a quantile between two infinities, or at weight 0 next to one, or past the end of a slice ending in
    one, gave the infinity (``quantile([-inf, inf], 0.5)``: -inf with ``interpolated_inverted_cdf``,
    ``quantile([inf, inf], 1.0)``: inf) where NumPy's interpolation gives NaN; ``-0.0`` came back ``+0.0`` or the
    other way round. Now every method gives NumPy's bits (nanquantile: signed zeros aside, a masked sum)."""
    mesh = cached_mesh(shape)
    for rows in QUANTILE_CASES:
        for dt in ("float64", "float32"):
            a = np.array(rows, dtype=dt)
            x = xp.asarray(sa.asarray(a, dims=("dim0", "dim1"), mesh=mesh, layout={"dim1": mesh.axis_names}))
            for q in (0.5, 1, np.array([0.0, 0.25, 0.5, 1.0]), np.array([0.3, 1.0], np.float32)):
                for method in METHODS:
                    with np.errstate(invalid="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        same_bits(
                            xp.quantile(x, q, axis=1, method=method).numpy(), np.quantile(a, q, axis=1, method=method)
                        )
                        same_bits(
                            xp.nanquantile(x, q, axis=1, method=method).numpy(),
                            np.nanquantile(a, q, axis=1, method=method),
                            zeros_signed=False,
                        )


@pytest.mark.parametrize("fn", ["median", "nanmedian"])
def test_median_of_an_empty_slice_is_nan_with_numpys_warning(fn):
    """Bug: ``xp.median`` of an empty slice raised DimensionError; NumPy gives NaN (float64 for integers) with
    ``RuntimeWarning: Mean of empty slice``."""
    mesh = cached_mesh({"row": 2, "col": 2})
    for shape, axis, dt in [
        ((0, 3), 0, "float64"),
        ((0, 3), None, "float32"),
        ((2, 0), 1, "int32"),
        ((0,), None, "f8"),
    ]:
        a = np.zeros(shape, dt)
        got, msgs = warned(lambda a=a, axis=axis: getattr(xp, fn)(xp.asarray(a, device=mesh), axis=axis))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = getattr(np, fn)(a, axis=axis)
        same_bits(got.numpy(), want)
        assert "Mean of empty slice" in msgs, msgs


@pytest.mark.parametrize("fn", ["nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanmedian", "nanquantile"])
def test_nan_reductions_warn_on_an_all_nan_slice_as_numpy(fn):
    """Bug: an all-NaN slice gave NaN silently; NumPy warns (``Mean of empty slice``, ``Degrees of freedom <= 0
    for slice.``, ``All-NaN slice encountered``). Now the same RuntimeWarning, and none without such a slice."""
    mesh = cached_mesh({"p": 3, "q": 2})
    a = np.arange(15.0).reshape(5, 3)
    a[:, 1] = np.nan
    x = xp.asarray(a, device=mesh)
    args = (0.5,) if fn == "nanquantile" else ()
    for axis in (0, 1):
        got, msgs = warned(lambda axis=axis: getattr(xp, fn)(x, *args, axis=axis))
        want, np_msgs = warned(lambda axis=axis: getattr(np, fn)(a, *args, axis=axis))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)  # (sums: another order)
        assert got.dtype == want.dtype and msgs == np_msgs, (axis, msgs, np_msgs)


def test_var_and_mean_warn_without_degrees_of_freedom():
    """Bug: ``var``/``std`` with ``ddof >= N`` and ``mean``/``nanvar`` of empty slices gave inf/NaN silently
    (``nanvar`` of integers NaN where NumPy's is inf). Now NumPy's values and RuntimeWarnings."""
    mesh = cached_mesh({"all": 4})
    a = np.arange(15).reshape(5, 3)
    x = xp.asarray(a, device=mesh)
    for fn, msg in [
        (lambda m, v: m.var(v, axis=0, ddof=5), "Degrees of freedom <= 0 for slice"),
        (lambda m, v: m.std(v.astype(m.float32), axis=1, ddof=3), "Degrees of freedom <= 0 for slice"),
        (lambda m, v: m.nanvar(v, axis=0, ddof=5), "Degrees of freedom <= 0 for slice"),
        (lambda m, v: m.mean(v[:0].astype(m.float64), axis=0), "Mean of empty slice"),
    ]:
        got, msgs = warned(lambda fn=fn: fn(xp, x))
        want, _ = warned(lambda fn=fn: fn(np, a))
        same_bits(got.numpy(), want)
        assert msg in msgs, msgs


def test_cov_with_weights_summing_to_zero_raises_and_warns_without_freedom():
    """Bug: ``cov`` with weights summing to zero returned NaN (NumPy: ZeroDivisionError), and a weighted ``cov``
    without degrees of freedom left gave inf silently (NumPy warns). Now an ArgumentError naming the weights,
    and NumPy's warning."""
    mesh = cached_mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(3, 4) ** 1.5
    x = xp.asarray(a, device=mesh)
    with pytest.raises(sa.ArgumentError, match=r"cov: the weights \(aweights\) of the 4 observations sum to zero"):
        xp.cov(x, aweights=xp.zeros(4, device=mesh))
    fw = np.array([1, 0, 0, 0])
    got, msgs = warned(lambda: xp.cov(x, fweights=xp.asarray(fw, device=mesh)))
    want, np_msgs = warned(lambda: np.cov(a, fweights=fw))
    np.testing.assert_array_equal(got.numpy(), want)
    assert "Degrees of freedom <= 0 for slice" in msgs and "Degrees of freedom <= 0 for slice" in np_msgs


# ============================================================================================ checkpoints

CK_DTYPES = ("bool", "int8", "int32", "int64", "uint16", "float16", "bfloat16", "float32", "float64")  # (no complex)


def _dtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def _values(shape, dtype: np.dtype, rng) -> np.ndarray:
    n = int(np.prod(shape))
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(dtype)
    out = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
    special = np.array([np.nan, np.inf, -np.inf, -0.0])
    k = min(n, int(rng.integers(0, 3)))
    if k:
        out[rng.choice(n, k, replace=False)] = special[rng.integers(0, 4, k)]
    if dtype.kind == "c":
        out = out + 1j * rng.standard_normal(n)
    with np.errstate(all="ignore"):
        return out.astype(dtype).reshape(shape)


def _target_dtype(draw, saved: np.dtype) -> tuple[np.dtype, str]:
    """A target dtype and the ``casting`` that allows it (``unsafe`` for a lower kind)."""
    name = draw(st.sampled_from(CK_DTYPES))
    dt = _dtype(name)
    rank = {"b": 0, "u": 1, "i": 2, "f": 3, "V": 3, "c": 4}
    return dt, "unsafe" if rank[dt.kind] < rank[saved.kind] else draw(st.sampled_from(["same_kind", "unsafe"]))


@st.composite
def saved_arrays(draw):
    """(host value, dims when named or None when positional, layout on the save mesh) of one array."""
    ndim = draw(st.integers(0, 3))
    shape = tuple(
        draw(st.integers(0, 6)) if draw(st.integers(0, 6)) == 0 else draw(st.integers(1, 6)) for _ in range(ndim)
    )
    dtype = _dtype(draw(st.sampled_from(CK_DTYPES)))
    value = _values(shape, dtype, np.random.default_rng(draw(st.integers(0, 2**16))))
    return value, (None if draw(st.booleans()) else tuple("abc"[:ndim]))


_NUMPY_MESHES: dict = {}


def _numpy_mesh(shape: dict) -> sa.Mesh:
    """A NumPy-backed mesh (another backend than the session's under ``--backend=cupy``), built once per shape."""
    key = tuple(shape.items())
    if key not in _NUMPY_MESHES:
        _NUMPY_MESHES[key] = sa.Mesh(dict(shape), backend="numpy")
    return _NUMPY_MESHES[key]


def _place(mesh, value, dims, layout):
    if dims is None:
        positional = tuple(f"dim{k}" for k in range(value.ndim))
        return xp.asarray(sa.asarray(value, dims=positional, mesh=mesh, layout=layout))
    return sa.asarray(value, dims=dims, mesh=mesh, layout=layout)


@fuzz(30, ENV)
@given(data=st.data())
def test_fuzz_checkpoint_reshards_across_meshes_kinds_and_dtypes(data, tmp_path_factory):
    """Save a tree of named and positional arrays on one mesh and layout; load it into a target on another mesh
    (the session's backend or NumPy's), another layout, of either kind (a positional target loads by position) and
    another dtype (``casting``): every array is NumPy's ``astype`` of the saved value, bit for bit, of the
    target's kind, dims, layout and dtype; a partial target raises a CheckpointError naming what is missing."""
    tmp = tmp_path_factory.mktemp("ck")
    src = data.draw(cached_meshes())
    arrays = data.draw(st.lists(saved_arrays(), min_size=1, max_size=3))
    tree = {"params": {}, "step": data.draw(st.integers(0, 10**6)), "note": "run"}
    for k, (value, dims) in enumerate(arrays):
        lay_dims = dims if dims is not None else tuple(f"dim{i}" for i in range(value.ndim))
        tree["params"][f"w{k}"] = _place(src, value, dims, data.draw(layouts(src, lay_dims)))
    sa.checkpoint.save(tmp / "ck", tree)
    shape = data.draw(st.sampled_from(HYPOTHESIS_SHAPES))
    dst = cached_mesh(shape) if data.draw(st.booleans()) else _numpy_mesh(shape)
    target, expect, casting = {"params": {}, "step": 0, "note": ""}, {}, "same_kind"
    for k, (value, dims) in enumerate(arrays):
        dt, cast = _target_dtype(data.draw, value.dtype)
        casting = "unsafe" if cast == "unsafe" else casting
        positional = dims is None or data.draw(st.booleans())  # (a named save may load positional, by position)
        tdims = tuple(f"dim{i}" for i in range(value.ndim)) if positional else dims
        lay = data.draw(layouts(dst, tdims))
        zeros = sa.zeros(dst, dict(zip(tdims, value.shape)), dtype=dt, layout=lay)
        target["params"][f"w{k}"] = xp.asarray(zeros) if positional else zeros
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expect[f"w{k}"] = (value.astype(dt), tdims, lay, positional)
    got = sa.checkpoint.load(tmp / "ck", target, casting=casting)
    assert got["step"] == tree["step"] and got["note"] == "run"
    for name, (want, tdims, lay, positional) in expect.items():
        y = got["params"][name]
        assert type(y) is (Array if positional else sa.ShardArray) and y.mesh is dst and y.dims == tdims
        assert y.layout == {d: tuple(a) for d, a in lay.items() if a}
        same_bits(y.numpy(), want)
    partial = {"params": dict(list(target["params"].items())[1:]), "step": 0, "note": ""}
    with pytest.raises(sa.CheckpointError, match=r"\['params'\]\['w0'\].*extra saved entry"):
        sa.checkpoint.load(tmp / "ck", partial)
    # an exported file may hold more than the target: a partial tree loads from it, by the target's tree paths
    file = sa.checkpoint.export_safetensors(tmp / "ck", tmp / "all.safetensors")
    some = sa.checkpoint.load(file, {"params": {"w0": target["params"]["w0"]}}, casting=casting)
    want, tdims, lay, positional = expect["w0"]
    assert type(some["params"]["w0"]) is (Array if positional else sa.ShardArray)
    same_bits(some["params"]["w0"].numpy(), want)


# ================================================================================== resumed training


def _grads(params: dict, t: int, blowup: bool) -> dict:
    """A gradient that depends on the parameters elementwise only (the same bits on every layout)."""
    out = {}
    for k, p in params.items():
        g = sa.sin(p * 3.0 + float(t)) * 0.01
        out[k] = g * 1e6 if blowup else g  # (float16: inf, a skipped step)
    return out


def _train(opt, scaler, params, state, ls, steps, blowup_at):
    for t in steps:
        g = _grads(params, t, t == blowup_at)
        if scaler is None:
            params, state = opt.update(params, g, state)
        else:
            g = {k: v * ls["scale"] for k, v in g.items()}
            params, state, ls = scaler.apply(opt, params, g, state, ls)
    return params, state, ls


@fuzz(25, ENV)
@given(data=st.data())
def test_fuzz_training_resumed_from_a_checkpoint_is_bit_identical(data, tmp_path_factory):
    """Train ``k`` steps; or train ``j``, save parameters, optimizer state and loss-scale state, load them onto
    another mesh and layout (targets made by ``opt.init`` there) and train the rest: the parameters, moments,
    master copies, step counts and loss scale are the same bits."""
    tmp = tmp_path_factory.mktemp("resume")
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32", "float64"]))
    use_adam = data.draw(st.booleans())
    momentum = data.draw(st.sampled_from([0.0, 0.9]))
    opt = (
        sa.optim.Adam(1e-2, weight_decay=data.draw(st.sampled_from([0.0, 0.01])))
        if use_adam
        else (sa.optim.SGD(0.05, momentum=momentum, nesterov=momentum > 0 and data.draw(st.booleans())))
    )
    scaler = sa.optim.DynamicLossScale(init_scale=2.0**8, growth_interval=2) if data.draw(st.booleans()) else None
    k = data.draw(st.integers(2, 5))
    j = data.draw(st.integers(1, k - 1))
    blowup = data.draw(st.one_of(st.none(), st.integers(0, k - 1))) if scaler is not None else None
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    host = {"w": rng.standard_normal((data.draw(st.integers(1, 6)), 3)), "b": rng.standard_normal(4)}
    m1 = data.draw(cached_meshes())
    m2 = data.draw(cached_meshes())

    def make(mesh, dims_w, lay_w, lay_b):
        w = sa.asarray(host["w"], dims=dims_w, mesh=mesh, layout=lay_w).astype(_dtype(dtype))
        b = xp.asarray(sa.asarray(host["b"], dims=("dim0",), mesh=mesh, layout=lay_b)).astype(_dtype(dtype))
        return {"w": w, "b": b}

    p1 = make(m1, ("i", "o"), data.draw(layouts(m1, ("i", "o"))), data.draw(layouts(m1, ("dim0",))))
    s1, ls1 = opt.init(p1), None if scaler is None else scaler.init()
    full_p, full_s, full_ls = _train(opt, scaler, p1, s1, ls1, range(k), blowup)
    half_p, half_s, half_ls = _train(opt, scaler, p1, s1, ls1, range(j), blowup)
    sa.checkpoint.save(tmp / "ck", {"params": half_p, "opt": half_s, "scale": half_ls})
    p2 = make(m2, ("i", "o"), data.draw(layouts(m2, ("i", "o"))), data.draw(layouts(m2, ("dim0",))))
    target = {"params": p2, "opt": opt.init(p2), "scale": None if scaler is None else scaler.init()}
    back = sa.checkpoint.load(tmp / "ck", target)
    assert back["opt"]["step"] == half_s["step"] and back["scale"] == half_ls
    res_p, res_s, res_ls = _train(opt, scaler, back["params"], back["opt"], back["scale"], range(j, k), blowup)
    assert res_ls == full_ls and res_s["step"] == full_s["step"]
    for name in ("w", "b"):
        assert res_p[name].mesh is m2 and type(res_p[name]) is type(p1[name])
        same_bits(res_p[name].numpy(), full_p[name].numpy())
    for key in [k for k in full_s if k != "step"]:
        a, b = sa.tree.tree_flatten(full_s[key] or {})[0], sa.tree.tree_flatten(res_s[key] or {})[0]
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same_bits(y.numpy(), x.numpy())


# ================================================================================== statistics extras


@st.composite
def stat_arrays(draw, min_dims=1, max_dims=2, nan=True):
    """(mesh, host array, placed positional array) with NaN, uneven and empty blocks."""
    mesh = draw(cached_meshes())
    ndim = draw(st.integers(min_dims, max_dims))
    shape = tuple(
        draw(st.integers(0, 6)) if draw(st.integers(0, 8)) == 0 else draw(st.integers(1, 7)) for _ in range(ndim)
    )
    dt = draw(st.sampled_from(["float64", "float32", "int64"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = (rng.standard_normal(shape) * 4).astype(dt)
    if nan and dt != "int64" and a.size and draw(st.booleans()):
        a.flat[rng.choice(a.size, int(rng.integers(1, a.size + 1)), replace=False)] = np.nan
        if a.ndim == 2 and draw(st.booleans()):
            a[:, 0] = np.nan  # (an all-NaN slice)
    dims = tuple(f"dim{k}" for k in range(ndim))
    return mesh, a, xp.asarray(sa.asarray(a, dims=dims, mesh=mesh, layout=draw(layouts(mesh, dims))))


def _compare(np_fn, xp_fn, exact: bool, rtol: float = 1e-9):
    """The same values (bit for bit when ``exact``), dtype, RuntimeWarning messages and error kind as NumPy."""
    try:
        want, np_msgs = warned(np_fn)
    except (ValueError, TypeError, IndexError, ZeroDivisionError) as e:
        with pytest.raises((sa.ShardArrayError, type(e))):
            xp_fn()
        return
    got, msgs = warned(xp_fn)
    wants = want if isinstance(want, tuple) else (want,)
    gots = tuple(got) if isinstance(got, tuple) else (got,)
    for g, w in zip(gots, wants):
        g = np.asarray(g.numpy() if hasattr(g, "numpy") else g)
        w = np.asarray(w)
        if exact:
            same_bits(g, w)
        else:
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12, equal_nan=True)
    keep = {
        "Mean of empty slice",
        "Degrees of freedom <= 0 for slice",
        "Degrees of freedom <= 0 for slice.",
        "All-NaN slice encountered",
    }
    assert msgs & keep == np_msgs & keep, (msgs, np_msgs)


@fuzz(60, ENV)
@given(data=st.data())
def test_fuzz_nan_statistics(data):
    """NaN-skipping and plain reductions, with ``ddof``, empty and all-NaN slices: values, dtypes, warnings."""
    _, a, x = data.draw(stat_arrays())
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim)]))
    fn = data.draw(
        st.sampled_from(
            ["nanmean", "nanvar", "nanstd", "nanmedian", "nanmax", "nanmin", "ptp", "median", "mean", "var"]
        )
    )
    kw = {"axis": axis}
    if fn in ("nanvar", "nanstd", "var"):
        kw["ddof"] = data.draw(st.integers(0, 4))
    if fn in ("nanmax", "nanmin") and (a.size == 0 or (axis is not None and a.shape[axis] == 0)):
        with pytest.raises(sa.DimensionError):
            getattr(xp, fn)(x, **kw)
        return
    rtol = 2e-6 if a.dtype == np.float32 else 1e-9
    exact = fn in ("nanmedian", "nanmax", "nanmin", "ptp", "median")
    xp_fn = (lambda: np.ptp(x, **kw)) if fn == "ptp" else (lambda: getattr(xp, fn)(x, **kw))
    if fn == "var":
        xp_fn = lambda: xp.var(x, axis=axis, correction=kw["ddof"])  # noqa: E731
    _compare(lambda: getattr(np, fn)(a, **kw), xp_fn, exact, rtol)


@fuzz(60, ENV)
@given(data=st.data())
def test_fuzz_quantile_methods_with_infinities(data):
    """Every method of ``quantile``/``nanquantile``/``percentile`` on split arrays holding infinities, NaN and
    signed zeros: NumPy's bits (nanquantile: signed zeros aside) and its all-NaN warning."""
    mesh, a, x = data.draw(stat_arrays(nan=True))
    if a.dtype.kind == "f" and a.size:
        rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
        k = int(rng.integers(0, a.size + 1))
        a.flat[rng.choice(a.size, k, replace=False)] = rng.choice([INF, -INF, -0.0, 0.0, 1.0], k)
        x = xp.asarray(sa.asarray(a, dims=x.dims, mesh=mesh, layout=x.layout))
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim)]))
    if (axis is None and a.size == 0) or (axis is not None and a.shape[axis] == 0):
        return  # (NumPy: IndexError or an empty result; covered by the shape fuzzers)
    method = data.draw(st.sampled_from(METHODS))
    q = data.draw(st.sampled_from([0.0, 0.5, 1.0, 0.3, 1, [0.0, 0.25, 1.0]]))
    fn = data.draw(st.sampled_from(["quantile", "nanquantile"]))
    if a.dtype.kind == "i" and method not in ("lower", "higher", "nearest", "inverted_cdf", "closest_observation"):
        return  # (integers interpolate in float64 from their float64 values: not NumPy's integer subtraction)
    with np.errstate(invalid="ignore"):
        want, np_msgs = warned(lambda: getattr(np, fn)(a, q, axis=axis, method=method))
    got, msgs = warned(lambda: getattr(xp, fn)(x, q, axis=axis, method=method))
    if fn == "nanquantile" and a.dtype == np.float32 and np.isnan(a).any() and not np.isscalar(q):
        want = want.astype(got.dtype)  # (NumPy's all-NaN path keeps float32 for a q list: a quirk, not matched)
    same_bits(got.numpy(), want, zeros_signed=fn == "quantile")
    assert ("All-NaN slice encountered" in msgs) == ("All-NaN slice encountered" in np_msgs)


@fuzz(50, ENV)
@given(data=st.data())
def test_fuzz_weighted_statistics(data):
    """``average`` with weights (and ``returned``), ``cov``/``corrcoef`` (``ddof``, ``bias``, ``rowvar``,
    ``fweights``/``aweights``), ``histogram``/``histogram2d``/``bincount`` with weights."""
    mesh, a, x = data.draw(stat_arrays(min_dims=2, max_dims=2, nan=False))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a = a.astype(np.float64)
    x = xp.astype(x, xp.float64)
    fn = data.draw(st.sampled_from(["average", "cov", "corrcoef", "histogram", "histogram2d", "bincount"]))
    n_obs = a.shape[1]
    if fn == "average":
        axis = data.draw(st.sampled_from([None, 0, 1]))
        w = rng.random(a.shape if axis is None else a.shape[axis]) + data.draw(st.sampled_from([0.0, 0.5]))
        returned = data.draw(st.booleans())
        if w.sum() == 0:
            return  # (NumPy's ZeroDivisionError: the protocol's average, reported)
        _compare(
            lambda: np.average(a, axis=axis, weights=w, returned=returned),
            lambda: np.average(x, axis=axis, weights=xp.asarray(w, device=mesh), returned=returned),
            False,
        )
    elif fn in ("cov", "corrcoef"):
        rowvar = data.draw(st.booleans())
        if fn == "corrcoef":
            _compare(lambda: np.corrcoef(a, rowvar=rowvar), lambda: xp.corrcoef(x, rowvar=rowvar), False, 1e-8)
            return
        n = n_obs if rowvar else a.shape[0]
        kw = {"rowvar": rowvar, "bias": data.draw(st.booleans()), "ddof": data.draw(st.sampled_from([None, 0, 1, 2]))}
        xkw = dict(kw)
        if data.draw(st.booleans()):
            fw = rng.integers(0, 4, n)
            kw["fweights"], xkw["fweights"] = fw, xp.asarray(fw, device=mesh)
        if data.draw(st.booleans()):
            aw = rng.random(n).round(1)
            kw["aweights"], xkw["aweights"] = aw, xp.asarray(aw, device=mesh)
        with np.errstate(all="ignore"):
            _compare(lambda: np.cov(a, **kw), lambda: xp.cov(x, **xkw), False, 1e-8)
    elif fn == "histogram":
        v = a.ravel()
        w = np.abs(rng.standard_normal(v.shape))
        bins = data.draw(st.integers(1, 5))
        dens = data.draw(st.booleans())
        flat = xp.reshape(x, (-1,))
        _compare(
            lambda: np.histogram(v, bins=bins, weights=w, density=dens),
            lambda: xp.histogram(flat, bins=bins, weights=xp.asarray(w, device=mesh), density=dens),
            False,
        )
    elif fn == "histogram2d":
        if a.shape[0] < 2:
            return
        w = np.abs(rng.standard_normal(n_obs))
        _compare(
            lambda: np.histogram2d(a[0], a[1], bins=3, weights=w),
            lambda: xp.histogram2d(x[0], x[1], bins=3, weights=xp.asarray(w, device=mesh)),
            False,
        )
    else:
        iv = (np.abs(a.ravel()) * 2).astype(np.int64)
        w = a.ravel()
        minlength = data.draw(st.integers(0, 8))
        _compare(
            lambda: np.bincount(iv, weights=w, minlength=minlength),
            lambda: xp.bincount(xp.asarray(iv, device=mesh), weights=xp.reshape(x, (-1,)), minlength=minlength),
            False,
        )



def _warned_here(got, line: int) -> None:
    """Every warning in ``got`` the library raises names this file at ``line`` (NumPy's floating-point warnings,
    "divide by zero encountered in ...", name the line that ran the ufunc, inside the library, as in NumPy)."""
    ours = [w for w in got if "encountered in" not in str(w.message)]
    assert ours and {(w.filename, w.lineno) for w in ours} == {(__file__, line)}, [(w.filename, w.lineno) for w in ours]


def test_statistics_warnings_point_at_the_users_line():
    """NumPy's RuntimeWarnings raised deep in the library (all-NaN slices, no degrees of freedom) name the user's
    line (``callsite.user_stacklevel``), whichever path called them: ``xp`` or NumPy's dispatch."""
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.asarray(np.full((4, 3), np.nan))
        with pytest.warns(RuntimeWarning) as got:
            xp.nanmean(x, axis=0)
        _warned_here(got, sys._getframe().f_lineno - 1)
        with pytest.warns(RuntimeWarning) as got:
            np.nanmean(x, axis=0)
        _warned_here(got, sys._getframe().f_lineno - 1)
        with pytest.warns(RuntimeWarning) as got:
            np.nanmax(x, axis=0)
        _warned_here(got, sys._getframe().f_lineno - 1)
        with pytest.warns(RuntimeWarning) as got:
            xp.var(x[:1], axis=0, correction=1)
        _warned_here(got, sys._getframe().f_lineno - 1)
        with pytest.warns(RuntimeWarning) as got:
            np.cov(xp.asarray(np.ones((2, 1))))
        _warned_here(got, sys._getframe().f_lineno - 1)
